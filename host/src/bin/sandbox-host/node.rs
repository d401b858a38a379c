//! What the node supplies to each kind when the host runs in this process
//! (`validate`, `describe`, `probe`, `call`): the plugin directory, the
//! installation, the engine socket, the container policy, the microsandbox
//! runtime and VM policy, configurations.

use anyhow::{Context, Result};
use clap::Args;
use sandbox_host::capability::docker::policy::{ContainerPolicy, PolicySettings};
use sandbox_host::capability::microsandbox::{
    self,
    policy::{VmPolicy, VmPolicySettings},
};
use sandbox_host::host::Connect;
use sandbox_host::node_config::{MicrosandboxSection, decode_toml};
use sandbox_host::{Host, NodeBinding, Runtime, registry};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where components are and what the node supplies to each kind.
#[derive(Args)]
pub(crate) struct NodeArgs {
    /// Directory of staged components (`cargo xtask build-plugins` output).
    #[arg(long, default_value = "target/plugins")]
    plugins: PathBuf,
    /// Installation id: the value of every `io.oac.installation` label.
    #[arg(long, default_value = "default")]
    installation: String,
    /// Docker Engine Unix socket for kinds granted Docker (never DOCKER_HOST).
    #[arg(long, default_value = "/var/run/docker.sock")]
    docker_socket: PathBuf,
    /// The container policy of kinds granted Docker: a TOML file with the
    /// keys of a node configuration's `[kinds.<kind>.container_policy]`
    /// (image, network, seccomp_profile, cpus, memory_mib, pids_limit,
    /// nested_sandbox). Needed by commands that reach the engine.
    #[arg(long, value_name = "FILE")]
    container_policy: Option<PathBuf>,
    /// The microsandbox helper and runtime of kinds granted microsandbox: a
    /// TOML file with the keys of a node configuration's `[microsandbox]`
    /// (helper, home, msb, libkrunfw, msb_sha256).
    #[arg(long, value_name = "FILE")]
    microsandbox: Option<PathBuf>,
    /// The VM policy of kinds granted microsandbox: a TOML file with the
    /// keys of a node configuration's `[kinds.<kind>.vm_policy]` (image,
    /// cpus, memory_mib, root_disk_mib, environment_disk_mib, network,
    /// guest_profile). Needed, with `--microsandbox`, by commands that run
    /// VMs.
    #[arg(long, value_name = "FILE")]
    vm_policy: Option<PathBuf>,
    /// The operator's registry file (TOML): the kinds it adds to the
    /// built-in ones, each with its component's pinned SHA-256 and
    /// declaration (docs/operating.md).
    #[arg(long, value_name = "FILE")]
    registry: Option<PathBuf>,
    /// Load only this kind (repeatable; default: every registered kind).
    #[arg(long = "kind", value_name = "KIND")]
    kinds: Vec<String>,
    /// Directory of the durable receipt store, for kinds granted receipts
    /// (created private to its owner; one process holds it at a time).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// A direct kind's vendor credential: `KIND=FILE`, a file private to its
    /// owner (repeatable; never the credential itself on the command line).
    #[arg(long = "credential-file", value_name = "KIND=FILE")]
    credential_files: Vec<String>,
    /// A kind's own configuration as a JSON object: `KIND=JSON`, or
    /// `KIND=@FILE` to read it from a file (repeatable).
    #[arg(long = "configuration", value_name = "KIND=JSON")]
    configurations: Vec<String>,
}

impl NodeArgs {
    /// Reads `--container-policy`; relative paths in it are relative to the
    /// working directory.
    fn container_policy(&self) -> Result<Option<ContainerPolicy>> {
        let Some(path) = &self.container_policy else {
            return Ok(None);
        };
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let settings: PolicySettings = decode_toml(&text)
            .map_err(|message| anyhow::anyhow!("{}: {message}", path.display()))?;
        Ok(Some(ContainerPolicy::load(&settings)?))
    }

    /// Reads `--microsandbox` and `--vm-policy` into the binding given to
    /// every kind granted microsandbox.
    fn microsandbox(&self) -> Result<microsandbox::Binding> {
        fn read<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> Result<T> {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            decode_toml(&text).map_err(|message| anyhow::anyhow!("{}: {message}", path.display()))
        }
        let mut binding = match &self.microsandbox {
            Some(path) => read::<MicrosandboxSection>(path)?
                .binding()
                .with_context(|| format!("--microsandbox {}", path.display()))?,
            None => microsandbox::Binding::default(),
        };
        if let Some(path) = &self.vm_policy {
            let settings: VmPolicySettings = read(path)?;
            binding.policy = Some(
                VmPolicy::new(settings)
                    .with_context(|| format!("--vm-policy {}", path.display()))?,
            );
        }
        Ok(binding)
    }

    /// The binding of every row of `table` (`registry` says which kinds
    /// are direct).
    fn bindings(
        &self,
        registry: &registry::Registry,
        table: &[registry::Registration],
    ) -> Result<BTreeMap<String, NodeBinding>> {
        let policy = self.container_policy()?;
        let microsandbox = self.microsandbox()?;
        let mut configurations = BTreeMap::new();
        for entry in &self.configurations {
            let (kind, text) = entry
                .split_once('=')
                .context("--configuration takes KIND=JSON")?;
            let text = match text.strip_prefix('@') {
                Some(path) => std::fs::read_to_string(path).with_context(|| {
                    format!("reading the configuration of `{kind}` from {path}")
                })?,
                None => text.to_string(),
            };
            let value: Value = serde_json::from_str(&text)
                .with_context(|| format!("--configuration for `{kind}` is not JSON"))?;
            configurations.insert(kind.to_string(), value);
        }
        let mut credentials = BTreeMap::new();
        for entry in &self.credential_files {
            let (kind, path) = entry
                .split_once('=')
                .context("--credential-file takes KIND=FILE")?;
            let direct = registry
                .get(kind)
                .is_some_and(|row| row.mode == registry::Mode::Direct);
            if !direct {
                anyhow::bail!("--credential-file: `{kind}` is not a direct kind");
            }
            let credential = sandbox_host::node_config::read_credential(path.as_ref())
                .map_err(|reason| anyhow::anyhow!("--credential-file for `{kind}`: {reason}"))?;
            credentials.insert(kind.to_string(), credential);
        }
        let receipts = self
            .state_dir
            .as_deref()
            .map(sandbox_host::ReceiptStore::open)
            .transpose()?;
        table
            .iter()
            .map(|registration| {
                let binding = NodeBinding::builder(registration, &self.installation)
                    .node_docker(&self.docker_socket, policy.as_ref())
                    .node_microsandbox(&microsandbox)
                    .node_receipts(receipts.as_ref())
                    .configuration(
                        configurations
                            .remove(&registration.kind)
                            .unwrap_or_else(|| json!({})),
                    )
                    .credential(credentials.remove(&registration.kind))
                    .build()?;
                Ok((registration.kind.clone(), binding))
            })
            .collect()
    }

    /// The rows of `registry` to load: `--kind` (or `only`), else every row.
    fn table(
        &self,
        registry: &registry::Registry,
        only: Option<&str>,
    ) -> Result<Vec<registry::Registration>> {
        let wanted: Vec<&str> = match only {
            Some(kind) => vec![kind],
            None => self.kinds.iter().map(String::as_str).collect(),
        };
        let table = registry.rows();
        if let Some(unknown) = wanted
            .iter()
            .find(|kind| !table.iter().any(|row| row.kind == **kind))
        {
            let known: Vec<&str> = table.iter().map(|row| row.kind.as_str()).collect();
            anyhow::bail!(
                "`{unknown}` is not a registered kind (registered: {}); an operator adds a kind \
                 as a row of a registry file given with --registry (docs/operating.md)",
                known.join(", ")
            );
        }
        Ok(table
            .iter()
            .filter(|row| wanted.is_empty() || wanted.contains(&row.kind.as_str()))
            .cloned()
            .collect())
    }

    /// Loads the registered kinds (every one, those of `--kind`, or
    /// `only`) from the built-in rows and those of `--registry`, connecting
    /// their capabilities or not, and refuses what the kinds given a
    /// configuration or a credential are given if it can never work
    /// ([`Host::check_configured`]; a kind given nothing is only described
    /// or validated).
    pub(crate) async fn load(&self, connect: Connect, only: Option<&str>) -> Result<Host> {
        let runtime = Runtime::new().context("creating the WebAssembly engine")?;
        let registry = registry::Registry::extended(registry::builtin(), self.registry.as_deref())?;
        let table = self.table(&registry, only)?;
        let bindings = self.bindings(&registry, &table)?;
        let host = Host::load(runtime, &table, &self.plugins, &bindings, connect).await?;
        let given: BTreeMap<String, NodeBinding> = bindings
            .into_iter()
            .filter(|(kind, _)| {
                let named = |entry: &String| entry.split_once('=').is_some_and(|(k, _)| k == kind);
                self.configurations.iter().any(named) || self.credential_files.iter().any(named)
            })
            .collect();
        host.check_configured(&given).await?;
        Ok(host)
    }
}
