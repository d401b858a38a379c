//! The node configuration `sandbox-host serve` starts from (TOML): where to
//! listen, the bearer token, the installation, and each served kind's
//! native binding. It is validated completely before anything starts, and
//! errors name the field, never its value.

use crate::binding::{self, NodeBinding};
use crate::capability::docker::policy::{ContainerPolicy, PolicyError, PolicySettings};
use crate::capability::microsandbox::{
    self,
    policy::{VmPolicy, VmPolicyError, VmPolicySettings},
    readiness::RuntimePin,
};
use crate::registry::{self, Registration, RegistrationError, Registry, RegistryFileError};
pub use crate::transport::listen::{DEFAULT_REQUEST_BODY_BUDGET_MIB, Listen, ListenError, Token};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Logging of the node.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Logging {
    /// A tracing filter, e.g. `info` (default `warn`).
    pub level: Option<String>,
    /// Write JSON lines instead of text.
    #[serde(default)]
    pub json: bool,
}

/// One served kind.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KindSection {
    /// The Docker Engine socket, for kinds granted Docker.
    pub docker_socket: Option<PathBuf>,
    /// The container policy, for kinds granted Docker: every isolation
    /// setting of every container (the component decides none of them).
    pub container_policy: Option<PolicySettings>,
    /// The VM policy, for kinds granted microsandbox: every setting that
    /// isolates or sizes a VM (the component decides none of them).
    pub vm_policy: Option<VmPolicySettings>,
    /// The kind's native configuration (the component's own).
    #[serde(default)]
    pub configuration: toml::Table,
    /// Configuration keys whose value is a file's contents (e.g.
    /// `banner = "/etc/oac/banner.txt"`).
    #[serde(default)]
    pub configuration_files: BTreeMap<String, PathBuf>,
    /// A direct kind's vendor credential, from a file private to its owner.
    pub credential_file: Option<PathBuf>,
}

/// The node's microsandbox installation (`[microsandbox]`), given to the
/// kinds granted microsandbox: the helper the host runs for every VM
/// operation and the runtime it drives, as `scripts/microsandbox-runtime.sh`
/// installs it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MicrosandboxSection {
    /// The helper executable (`oac-microsandbox-helper`), absolute.
    pub helper: PathBuf,
    /// The runtime's home (`MSB_HOME`), absolute; private to the node.
    pub home: PathBuf,
    /// The `msb` executable (`MSB_PATH`), absolute.
    pub msb: PathBuf,
    /// The `libkrunfw` library (`MSB_LIBKRUNFW_PATH`), absolute.
    pub libkrunfw: PathBuf,
    /// The SHA-256 `msb` must have, lowercase hex (default: that of the
    /// release the helper links), so that VMs run only on the runtime the
    /// operator pinned.
    pub msb_sha256: Option<String>,
}

impl MicrosandboxSection {
    /// The binding it gives a kind granted microsandbox, checked (paths
    /// absolute, the digest 64 lowercase hex digits); without a VM policy,
    /// which is each kind's own.
    pub fn binding(&self) -> Result<microsandbox::Binding, ConfigError> {
        let text = |path: &Path| path.to_string_lossy().into_owned();
        let binding = microsandbox::Binding {
            helper: Some(self.helper.clone()),
            runtime: Some(oac_helper_protocol::Runtime {
                home: text(&self.home),
                msb: text(&self.msb),
                libkrunfw: text(&self.libkrunfw),
            }),
            pin: RuntimePin {
                sha256: self
                    .msb_sha256
                    .clone()
                    .unwrap_or_else(|| RuntimePin::default().sha256),
                ..RuntimePin::default()
            },
            policy: None,
        };
        match binding::microsandbox_misfit(&binding) {
            Some(field) => Err(ConfigError::Microsandbox(field)),
            None => Ok(binding),
        }
    }
}

/// The file as written.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct File {
    listen: Listen,
    token_file: PathBuf,
    installation: String,
    plugins: PathBuf,
    #[serde(default = "default_in_flight")]
    max_in_flight: u32,
    #[serde(default = "default_memory_budget")]
    memory_budget_mib: u64,
    #[serde(default = "default_request_body_budget")]
    request_body_budget_mib: u64,
    #[serde(default)]
    log: Logging,
    state_dir: Option<PathBuf>,
    compile_cache: Option<PathBuf>,
    #[serde(default)]
    kinds: BTreeMap<String, KindSection>,
    registry: Option<PathBuf>,
    node_id: Option<String>,
    microsandbox: Option<MicrosandboxSection>,
}

fn default_in_flight() -> u32 {
    64
}

/// What the served kinds' instances may take at once, at most (MiB).
pub const DEFAULT_MEMORY_BUDGET_MIB: u64 = 16 << 10;

fn default_memory_budget() -> u64 {
    DEFAULT_MEMORY_BUDGET_MIB
}

fn default_request_body_budget() -> u64 {
    DEFAULT_REQUEST_BODY_BUDGET_MIB
}

/// A validated node configuration.
#[derive(Debug)]
pub struct NodeConfig {
    /// Where to listen.
    pub listen: Listen,
    /// The bearer token clients must present.
    pub token: Token,
    /// Directory of staged components.
    pub plugins: PathBuf,
    /// Operations allowed in flight on this node.
    pub max_in_flight: u32,
    /// Bytes of request bodies the node holds at once; a request that
    /// would pass it is refused `busy` before its body is read.
    pub request_body_budget: usize,
    /// Logging.
    pub log: Logging,
    /// Where compiled components are kept between starts, if anywhere.
    pub compile_cache: Option<crate::compile_cache::CompileCache>,
    /// The whole registry: the built-in rows and the operator's file's.
    pub registry: Registry,
    /// The node's identity, reported to Core beside the registry digest.
    pub node_id: String,
    /// The served kinds' registry rows.
    pub registrations: Vec<Registration>,
    /// Their bindings.
    pub bindings: BTreeMap<String, NodeBinding>,
}

/// Why the configuration is refused. Keys are named (a misspelt one must be
/// found); values are never echoed.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read the configuration file {0}")]
    Read(PathBuf),
    /// The TOML is malformed or has unknown or mistyped fields.
    #[error("the configuration file is not valid: {0}")]
    Syntax(String),
    /// `listen` breaks a rule.
    #[error(transparent)]
    Listen(#[from] ListenError),
    /// `listen.tls` cannot be served.
    #[error(transparent)]
    Tls(#[from] crate::transport::tls::TlsError),
    /// The token file is unreadable, empty, or readable by others.
    #[error("token_file: {0}")]
    Token(&'static str),
    /// A field is out of range.
    #[error("{0}: out of range")]
    Range(&'static str),
    /// A kind is not in this host's registry.
    #[error(
        "kinds: `{kind}` is not a registered kind (registered: {known}); an operator adds a kind as a row of the registry file `registry` names (docs/operating.md)"
    )]
    UnknownKind {
        /// The kind asked for.
        kind: String,
        /// The registered kinds, comma-separated.
        known: String,
    },
    /// The operator's registry file is refused.
    #[error("registry: {0}")]
    Registry(#[from] RegistryFileError),
    /// `node_id` is malformed.
    #[error("node_id: 1 to 64 characters of [A-Za-z0-9._-]")]
    NodeId,
    /// No kind is served.
    #[error("kinds: at least one kind must be served")]
    NoKinds,
    /// A `configuration_files` entry cannot be read.
    #[error("kinds.{kind}.configuration_files.{key}: cannot read the file")]
    ConfigurationFile {
        /// The kind.
        kind: String,
        /// The key.
        key: String,
    },
    /// A kind's container policy is refused.
    #[error("kinds.{kind}.{error}")]
    Policy {
        /// The kind.
        kind: String,
        /// The field.
        error: PolicyError,
    },
    /// A kind's VM policy is refused.
    #[error("kinds.{kind}.{error}")]
    VmPolicy {
        /// The kind.
        kind: String,
        /// The field.
        error: VmPolicyError,
    },
    /// `[microsandbox]` is refused: the field.
    #[error("{0}: {rule}", rule = microsandbox_rule(.0))]
    Microsandbox(&'static str),
    /// A kind's binding breaks the registry's rules.
    #[error(transparent)]
    Binding(#[from] RegistrationError),
    /// A kind's credential file is refused.
    #[error("kinds.{kind}.credential_file: {reason}")]
    Credential {
        /// The kind.
        kind: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A direct kind carries Core's vendor credential: it is served on a
    /// local socket only.
    #[error("kinds.{0}: a direct kind is served on `listen.unix` only")]
    DirectOverTcp(String),
    /// The served kinds' calls could take more memory than the node's
    /// budget: Σ min(max_concurrent_calls, max_in_flight) × (max_memory_bytes
    /// plus, for a Docker kind, the largest archive upload, and for a kind
    /// that sends HTTP, the request bytes a call may hold) passes
    /// `memory_budget_mib` at this kind.
    #[error(
        "kinds.{kind}: with it the kinds' calls may take {needed_mib} MiB at once \
         (concurrent calls × (memory limit + an upload or held request bodies)), over memory_budget_mib = {budget_mib}"
    )]
    MemoryBudget {
        /// The kind at which the sum passes the budget.
        kind: String,
        /// The sum up to and including that kind, MiB.
        needed_mib: u64,
        /// The budget, MiB.
        budget_mib: u64,
    },
    /// The receipt store in `state_dir` cannot be opened.
    #[error("state_dir: {0}")]
    Receipts(#[from] crate::capability::receipts::ReceiptStoreError),
    /// `compile_cache` is unusable.
    #[error(transparent)]
    CompileCache(#[from] crate::compile_cache::CacheError),
}

/// What a `[microsandbox]` field must be.
fn microsandbox_rule(field: &str) -> &'static str {
    if field.ends_with("msb_sha256") {
        "64 lowercase hex digits"
    } else {
        "an absolute path"
    }
}

impl Token {
    /// Reads a token file: private to its owner (mode 600), at least 16
    /// characters after trimming.
    pub fn read(path: &Path) -> Result<Self, ConfigError> {
        read_token(path)
    }
}

/// Reads a secret file: private to its owner (no group or other access),
/// trimmed. The error says what is wrong, never what the file holds.
fn read_private(path: &Path) -> Result<String, &'static str> {
    use std::os::unix::fs::PermissionsExt;
    let metadata = std::fs::metadata(path).map_err(|_| "cannot be read")?;
    if metadata.permissions().mode() & 0o077 != 0 {
        return Err("must not be readable by group or others (chmod 600)");
    }
    if metadata.len() > MAX_CREDENTIAL_FILE_BYTES {
        return Err("is too large");
    }
    let text = std::fs::read_to_string(path).map_err(|_| "cannot be read")?;
    Ok(text.trim().to_string())
}

/// Largest token or credential file, bytes.
pub const MAX_CREDENTIAL_FILE_BYTES: u64 = 16 * 1024;

fn read_token(path: &Path) -> Result<Token, ConfigError> {
    let token = read_private(path).map_err(ConfigError::Token)?;
    if token.len() < 16 {
        return Err(ConfigError::Token(
            "must hold a token of at least 16 characters",
        ));
    }
    Ok(Token(token))
}

/// Reads a direct kind's credential file (Core's vendor credential, e.g.
/// E2B's `{"api_key": "…"}`): private to its owner, not empty. The
/// credential never comes from a command-line argument.
pub fn read_credential(path: &Path) -> Result<String, &'static str> {
    let credential = read_private(path)?;
    if credential.is_empty() {
        return Err("is empty");
    }
    Ok(credential)
}

/// Decodes TOML into `T`; an error names where, never the value found (a
/// file may hold values that must not reach a log). The registry's.
pub use oac_provider_api::registry::decode_toml;

impl NodeConfig {
    /// Reads and validates the file at `path` against `table` (the
    /// built-in rows) and the operator's registry file it names.
    pub fn load(path: &Path, table: &[Registration]) -> Result<Self, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|_| ConfigError::Read(path.to_path_buf()))?;
        Self::parse(&text, table)
    }

    /// Validates configuration text against `table` (the built-in rows)
    /// and the operator's registry file it names.
    pub fn parse(text: &str, table: &[Registration]) -> Result<Self, ConfigError> {
        let file: File = decode_toml(text).map_err(ConfigError::Syntax)?;
        let registry = Registry::extended(table.to_vec(), file.registry.as_deref())?;
        let table = registry.rows();
        let node_id = file
            .node_id
            .clone()
            .unwrap_or_else(|| file.installation.clone());
        let id_ok = (1..=64).contains(&node_id.len())
            && node_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !id_ok {
            return Err(ConfigError::NodeId);
        }
        file.listen.check()?;
        if let Some(files) = &file.listen.tls {
            crate::transport::tls::server_config(files)?;
        }
        if !(1..=4096).contains(&file.max_in_flight) {
            return Err(ConfigError::Range("max_in_flight"));
        }
        if !(64..=1 << 20).contains(&file.memory_budget_mib) {
            return Err(ConfigError::Range("memory_budget_mib"));
        }
        // At least one request of the largest size fits.
        let smallest_body_budget = crate::transport::wire::MAX_REQUEST_BYTES.div_ceil(1 << 20);
        if !(smallest_body_budget as u64..=1 << 16).contains(&file.request_body_budget_mib) {
            return Err(ConfigError::Range("request_body_budget_mib"));
        }
        if file.kinds.is_empty() {
            return Err(ConfigError::NoKinds);
        }
        let token = read_token(&file.token_file)?;
        let compile_cache = file
            .compile_cache
            .as_deref()
            .map(crate::compile_cache::CompileCache::open)
            .transpose()?;
        let granted = |kind: &String| {
            table
                .iter()
                .any(|row| &row.kind == kind && row.grants.receipts)
        };
        // Opened once, for the kinds granted receipts; a served kind that
        // needs it without `state_dir` is refused below.
        let receipts = match &file.state_dir {
            Some(dir) if file.kinds.keys().any(granted) => {
                Some(crate::capability::receipts::ReceiptStore::open(dir)?)
            }
            _ => None,
        };
        // Checked whether or not a served kind is granted microsandbox.
        let node_microsandbox = file
            .microsandbox
            .as_ref()
            .map(MicrosandboxSection::binding)
            .transpose()?
            .unwrap_or_default();
        let mut registrations = Vec::new();
        let mut bindings = BTreeMap::new();
        let mut memory_mib = 0u64;
        for (kind, section) in file.kinds {
            let registration = table.iter().find(|row| row.kind == kind).ok_or_else(|| {
                ConfigError::UnknownKind {
                    kind: kind.clone(),
                    known: registry.kinds().collect::<Vec<_>>().join(", "),
                }
            })?;
            let policy = &registration.policy;
            let concurrent = policy.max_concurrent_calls.min(file.max_in_flight);
            // A call of a Docker kind may hold one archive upload in the
            // host besides its instance (the engine is sent slices of it).
            let upload = if registration.grants.docker {
                crate::capability::docker::MAX_ARCHIVE_BYTES as u64
            } else {
                0
            };
            // A call of a kind that sends HTTP may hold request body bytes.
            let grants = &registration.grants;
            let bodies = if grants.http_origins.is_empty() && grants.http_endpoint.is_none() {
                0
            } else {
                crate::capability::http::MAX_HELD_REQUEST_BYTES_PER_CALL as u64
            };
            let per_call = policy.max_memory_bytes as u64 + upload + bodies;
            memory_mib += u64::from(concurrent) * per_call.div_ceil(1 << 20);
            if memory_mib > file.memory_budget_mib {
                return Err(ConfigError::MemoryBudget {
                    kind,
                    needed_mib: memory_mib,
                    budget_mib: file.memory_budget_mib,
                });
            }
            let mut configuration = serde_json::to_value(&section.configuration)
                .map_err(|_| ConfigError::Syntax(format!("kinds.{kind}.configuration")))?;
            for (key, file) in &section.configuration_files {
                let contents =
                    std::fs::read_to_string(file).map_err(|_| ConfigError::ConfigurationFile {
                        kind: kind.clone(),
                        key: key.clone(),
                    })?;
                if let Some(object) = configuration.as_object_mut() {
                    object.insert(key.clone(), serde_json::Value::String(contents));
                }
            }
            let container_policy = section
                .container_policy
                .as_ref()
                .map(ContainerPolicy::load)
                .transpose()
                .map_err(|error| ConfigError::Policy {
                    kind: kind.clone(),
                    error,
                })?;
            let vm_policy = section
                .vm_policy
                .clone()
                .map(VmPolicy::new)
                .transpose()
                .map_err(|error| ConfigError::VmPolicy {
                    kind: kind.clone(),
                    error,
                })?;
            let direct = registration.mode == registry::Mode::Direct;
            if direct && file.listen.tcp.is_some() {
                return Err(ConfigError::DirectOverTcp(kind));
            }
            let credential = match &section.credential_file {
                Some(_) if !direct => {
                    return Err(ConfigError::Credential {
                        kind,
                        reason: "only a direct kind takes a credential",
                    });
                }
                Some(path) => {
                    Some(
                        read_credential(path).map_err(|reason| ConfigError::Credential {
                            kind: kind.clone(),
                            reason,
                        })?,
                    )
                }
                None => None,
            };
            let binding = NodeBinding::builder(registration, &file.installation)
                .docker(section.docker_socket, container_policy)
                .node_microsandbox(&node_microsandbox)
                .vm_policy(vm_policy)
                .node_receipts(receipts.as_ref())
                .configuration(configuration)
                .credential(credential)
                .build()?;
            binding::require_native(registration, &binding)?;
            registrations.push(registration.clone());
            bindings.insert(kind, binding);
        }
        Ok(Self {
            listen: file.listen,
            token,
            plugins: file.plugins,
            max_in_flight: file.max_in_flight,
            request_body_budget: (file.request_body_budget_mib << 20) as usize,
            log: file.log,
            compile_cache,
            registrations,
            bindings,
            node_id,
            registry,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    struct Files {
        dir: tempfile::TempDir,
    }

    impl Files {
        fn new() -> Self {
            let dir = tempfile::tempdir().expect("tempdir");
            let token = dir.path().join("token");
            std::fs::write(&token, "0123456789abcdef0123\n").expect("token");
            std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600))
                .expect("chmod");
            std::fs::write(
                dir.path().join("seccomp.json"),
                "{\"defaultAction\":\"SCMP_ACT_ERRNO\"}",
            )
            .expect("seccomp");
            Self { dir }
        }

        fn config(&self, tail: &str) -> String {
            let dir = self.dir.path().display();
            let tail = tail.replace("SECCOMP", &format!("{dir}/seccomp.json"));
            format!(
                r#"
token_file = "{dir}/token"
installation = "inst-1"
plugins = "/usr/lib/oac/plugins"
[listen]
unix = "{dir}/node.sock"
{tail}
"#
            )
        }
    }

    /// Why `text` is refused, as the operator reads it.
    fn refusal(text: &str, table: &[Registration]) -> String {
        NodeConfig::parse(text, table)
            .expect_err("refused")
            .to_string()
    }

    const DOCKER: &str = r#"
[kinds.docker]
docker_socket = "/run/docker.sock"
[kinds.docker.container_policy]
image = "sha256:0000000000000000000000000000000000000000000000000000000000000001"
network = "none"
seccomp_profile = "SECCOMP"
cpus = 1.5
memory_mib = 512
[kinds.docker.configuration]
extra_hosts = ["core.internal:10.0.0.1"]
"#;

    #[test]
    fn a_complete_configuration_loads_with_its_policy_and_file_values() {
        let files = Files::new();
        let banner = files.dir.path().join("banner.txt");
        std::fs::write(&banner, "welcome").expect("banner");
        let tail = format!(
            "{DOCKER}[kinds.docker.configuration_files]\nbanner = \"{}\"\n",
            banner.display()
        );
        let config = NodeConfig::parse(&files.config(&tail), &registry::builtin()).expect("valid");
        assert_eq!(config.token.expose(), "0123456789abcdef0123");
        assert!(
            !format!("{config:?}").contains("0123456789abcdef0123"),
            "Debug hides the token"
        );
        assert_eq!(config.max_in_flight, 64);
        let binding = &config.bindings["docker"];
        assert_eq!(binding.installation_id, "inst-1");
        assert_eq!(
            binding.configuration["extra_hosts"][0],
            "core.internal:10.0.0.1"
        );
        assert_eq!(binding.configuration["banner"], "welcome");
        let policy = binding.docker.policy.as_ref().expect("policy");
        assert_eq!(
            policy.image(),
            "sha256:0000000000000000000000000000000000000000000000000000000000000001"
        );
        assert_eq!(config.registrations.len(), 1);
    }

    #[test]
    fn a_direct_kind_takes_its_credential_from_a_private_file_and_keeps_receipts() {
        let files = Files::new();
        let dir = files.dir.path();
        let credential = dir.join("vendor.key");
        std::fs::write(&credential, "{\"api_key\":\"secret-1\"}\n").expect("credential");
        std::fs::set_permissions(&credential, std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
        let state = dir.join("state");
        let direct = format!(
            "[kinds.steerable-direct]\ncredential_file = \"{}\"\n",
            credential.display()
        );
        let with_state = |text: String| {
            text.replace(
                "[listen]",
                &format!("state_dir = \"{}\"\n[listen]", state.display()),
            )
        };
        let mut table = registry::builtin();
        table.push(crate::testing::steerable_direct_row());
        let config = NodeConfig::parse(&with_state(files.config(&direct)), &table).expect("valid");
        let binding = &config.bindings["steerable-direct"];
        assert_eq!(
            binding.credential.as_deref(),
            Some("{\"api_key\":\"secret-1\"}")
        );
        assert!(
            binding.receipts.is_some(),
            "granted receipts, given a store"
        );
        assert!(
            !format!("{config:?}").contains("secret-1"),
            "Debug never shows the credential"
        );
        drop(config);

        assert!(
            refusal(&files.config(&direct), &table).contains("needs a receipt store: `state_dir`"),
            "a kind granted receipts needs state_dir"
        );
        let over_tcp = with_state(files.config(&direct)).replace(
            &format!("unix = \"{}/node.sock\"", dir.display()),
            "tcp = \"127.0.0.1:7400\"",
        );
        assert_eq!(
            refusal(&over_tcp, &table),
            "kinds.steerable-direct: a direct kind is served on `listen.unix` only"
        );
        std::fs::set_permissions(&credential, std::fs::Permissions::from_mode(0o644))
            .expect("chmod");
        let shared = refusal(&with_state(files.config(&direct)), &table);
        assert!(
            shared.starts_with("kinds.steerable-direct.credential_file: must not be readable"),
            "{shared}"
        );
        assert!(!shared.contains("secret-1"));
        std::fs::set_permissions(&credential, std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
        let on_a_node_kind = DOCKER.replace(
            "docker_socket = \"/run/docker.sock\"\n",
            &format!(
                "docker_socket = \"/run/docker.sock\"\ncredential_file = \"{}\"\n",
                credential.display()
            ),
        );
        assert_eq!(
            refusal(&files.config(&on_a_node_kind), &table),
            "kinds.docker.credential_file: only a direct kind takes a credential"
        );
    }

    /// The README's E2B example, as an operator writes it.
    #[test]
    fn the_e2b_kind_is_configured_as_the_readme_shows() {
        let files = Files::new();
        let dir = files.dir.path();
        let key = dir.join("e2b.key");
        std::fs::write(&key, "{\"api_key\":\"e2b_0123\"}").expect("key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let section = format!(
            r#"[kinds.e2b]
credential_file = "{}"
[kinds.e2b.configuration]
template = "oac-runtime:2c5d9a1e-8b3f-4c6d-9e7f-0a1b2c3d4e5f"
api_url = ""
domain = ""
cpu_count = 2
memory_mb = 1024
"#,
            key.display()
        );
        let text = files.config(&section).replace(
            "[listen]",
            &format!("state_dir = \"{}/state\"\n[listen]", dir.display()),
        );
        let config = NodeConfig::parse(&text, &registry::builtin()).expect("valid");
        let binding = &config.bindings["e2b"];
        assert!(binding.receipts.is_some());
        assert_eq!(binding.configuration["cpu_count"], 2);
        let grant = config.registrations[0]
            .grants
            .http_endpoint
            .as_ref()
            .expect("an endpoint grant");
        assert_eq!(
            grant.resolve(&binding.configuration).map_err(|e| e.field()),
            Ok(("https://api.e2b.app".into(), "e2b.app".into()))
        );
        // 64 concurrent calls of 64 MiB, each of which may hold 4 MiB of
        // request bodies (the receipt store is opened by one node at once).
        drop(config);
        let tight = text.replace("plugins =", "memory_budget_mib = 4351\nplugins =");
        let refused = refusal(&tight, &registry::builtin());
        assert!(
            refused.contains("kinds.e2b:") && refused.contains("4352 MiB"),
            "{refused}"
        );
    }

    #[test]
    fn a_kind_granted_docker_needs_a_valid_container_policy() {
        let files = Files::new();
        let table = registry::builtin();
        let refused = |text: String| refusal(&text, &table);
        let without = files.config(
            "[kinds.docker]\ndocker_socket = \"/run/docker.sock\"\n[kinds.docker.configuration]\n",
        );
        assert!(refused(without).contains("container_policy"));
        for (from, to, field) in [
            ("network = \"none\"", "network = \"host\"", "network"),
            ("cpus = 1.5", "cpus = 0.0", "cpus"),
            (
                "memory_mib = 512",
                "memory_mib = 512\npids_limit = 0",
                "pids_limit",
            ),
            (
                "memory_mib = 512",
                "memory_mib = 512\npids_limit = 129",
                "pids_limit",
            ),
            (
                "image = \"sha256:0000",
                "image = \"busybox@sha256:0000",
                "ok",
            ),
        ] {
            let text = files.config(&DOCKER.replace(from, to));
            match field {
                "ok" => assert!(NodeConfig::parse(&text, &table).is_ok(), "{to}"),
                field => assert!(
                    refused(text).contains(&format!("container_policy.{field}")),
                    "{to}"
                ),
            }
        }
        let unpinned = files.config(&DOCKER.replace(
            "sha256:0000000000000000000000000000000000000000000000000000000000000001",
            "busybox:latest",
        ));
        assert!(refused(unpinned).contains("container_policy.image"));
        let missing = files.config(&DOCKER.replace("SECCOMP", "/nonexistent/seccomp.json"));
        assert!(refused(missing).contains("container_policy.seccomp_profile"));
        std::fs::write(
            files.dir.path().join("seccomp.json"),
            r#"{"defaultAction":"SCMP_ACT_ALLOW"}"#,
        )
        .expect("allow-all profile");
        assert!(refused(files.config(DOCKER)).contains("container_policy.seccomp_profile"));
    }

    const MICROSANDBOX: &str = r#"
[microsandbox]
helper = "/usr/lib/oac/oac-microsandbox-helper"
home = "/opt/oac/microsandbox/home"
msb = "/opt/oac/microsandbox/bin/msb"
libkrunfw = "/opt/oac/microsandbox/lib/libkrunfw.so.5.6.1"
[kinds.vm.vm_policy]
image = "registry.example/oac-runtime:1@sha256:0000000000000000000000000000000000000000000000000000000000000001"
cpus = 2
memory_mib = 2048
root_disk_mib = 4096
environment_disk_mib = 1024
network = "none"
"#;

    /// The built-in rows and `vm`, a node kind granted microsandbox.
    fn with_a_vm_kind() -> Vec<Registration> {
        let mut table = registry::builtin();
        table.push(Registration {
            kind: "vm".into(),
            grants: registry::Grants {
                microsandbox: true,
                ..Default::default()
            },
            ..crate::testing::steerable_row()
        });
        table
    }

    #[test]
    fn a_kind_granted_microsandbox_gets_the_nodes_runtime_and_its_vm_policy() {
        let files = Files::new();
        let table = with_a_vm_kind();
        let config = NodeConfig::parse(&files.config(MICROSANDBOX), &table).expect("valid");
        let binding = &config.bindings["vm"].microsandbox;
        assert_eq!(
            binding.helper.as_deref(),
            Some(Path::new("/usr/lib/oac/oac-microsandbox-helper"))
        );
        let runtime = binding.runtime.as_ref().expect("runtime");
        assert_eq!(runtime.home, "/opt/oac/microsandbox/home");
        assert_eq!(runtime.msb, "/opt/oac/microsandbox/bin/msb");
        assert_eq!(
            runtime.libkrunfw,
            "/opt/oac/microsandbox/lib/libkrunfw.so.5.6.1"
        );
        assert_eq!(binding.pin, RuntimePin::default());
        let policy = binding.policy.as_ref().expect("policy");
        assert_eq!(policy.settings().cpus, 2);
        drop(config);

        // Another digest, pinned by the operator.
        let digest = "ab".repeat(32);
        let pinned = MICROSANDBOX.replace(
            "[kinds.vm.vm_policy]",
            &format!("msb_sha256 = \"{digest}\"\n[kinds.vm.vm_policy]"),
        );
        let config = NodeConfig::parse(&files.config(&pinned), &table).expect("valid");
        assert_eq!(config.bindings["vm"].microsandbox.pin.sha256, digest);
        drop(config);

        // A kind not granted microsandbox is given nothing of it.
        let beside = format!("{MICROSANDBOX}{DOCKER}");
        let config = NodeConfig::parse(&files.config(&beside), &table).expect("valid");
        let docker = &config.bindings["docker"].microsandbox;
        assert!(docker.helper.is_none() && docker.runtime.is_none() && docker.policy.is_none());
    }

    #[test]
    fn a_microsandbox_binding_is_refused_by_the_field_never_its_value() {
        let files = Files::new();
        let table = with_a_vm_kind();
        let refused = |tail: String| refusal(&files.config(&tail), &table);

        let unpinned = refused(MICROSANDBOX.replace(
            "registry.example/oac-runtime:1@sha256:0000000000000000000000000000000000000000000000000000000000000001",
            "hunter2:latest",
        ));
        assert!(unpinned.contains("kinds.vm.vm_policy.image"), "{unpinned}");
        assert!(!unpinned.contains("hunter2"), "{unpinned}");
        let small = refused(MICROSANDBOX.replace("memory_mib = 2048", "memory_mib = 16"));
        assert!(small.contains("kinds.vm.vm_policy.memory_mib"), "{small}");
        let unknown = refused(MICROSANDBOX.replace("cpus = 2", "cpus = 2\nprivileged = true"));
        assert!(unknown.contains("`privileged`"), "{unknown}");

        let relative = refused(MICROSANDBOX.replace(
            "helper = \"/usr/lib/oac/oac-microsandbox-helper\"",
            "helper = \"hunter2\"",
        ));
        assert!(relative.starts_with("microsandbox.helper:"), "{relative}");
        assert!(!relative.contains("hunter2"), "{relative}");
        let home = refused(
            MICROSANDBOX.replace("home = \"/opt/oac/microsandbox/home\"", "home = \"home\""),
        );
        assert!(home.starts_with("microsandbox.home:"), "{home}");
        let digest = refused(MICROSANDBOX.replace(
            "[kinds.vm.vm_policy]",
            &format!("msb_sha256 = \"{}\"\n[kinds.vm.vm_policy]", "AB".repeat(32)),
        ));
        assert!(digest.starts_with("microsandbox.msb_sha256:"), "{digest}");
        let stray = refused(MICROSANDBOX.replace("msb =", "msb_version = \"0.7.12\"\nmsb ="));
        assert!(stray.contains("`msb_version`"), "{stray}");

        // A VM policy for a kind not granted microsandbox.
        let ungranted = refused(format!(
            "{DOCKER}[kinds.docker.vm_policy]\n{}",
            MICROSANDBOX
                .split_once("[kinds.vm.vm_policy]\n")
                .expect("policy")
                .1
        ));
        assert!(
            ungranted.contains("`docker`") && ungranted.contains("vm_policy"),
            "{ungranted}"
        );

        // A kind granted microsandbox needs `[microsandbox]` and its policy.
        let without = MICROSANDBOX
            .split_once("[kinds.vm.vm_policy]")
            .expect("policy")
            .1;
        let no_section = refused(format!("[kinds.vm.vm_policy]{without}"));
        assert!(
            no_section.contains("`vm` needs") && no_section.contains("`[microsandbox]`"),
            "{no_section}"
        );
        let no_policy = refused(format!(
            "{}[kinds.vm]\n",
            MICROSANDBOX
                .split_once("[kinds.vm.vm_policy]")
                .expect("policy")
                .0
        ));
        assert!(
            no_policy.contains("`vm` needs") && no_policy.contains("[kinds.<kind>.vm_policy]"),
            "{no_policy}"
        );
    }

    #[test]
    fn each_problem_is_named_without_echoing_values() {
        let files = Files::new();
        let table = registry::builtin();
        let refused = |text: String| refusal(&text, &table);
        let unknown = files
            .config(DOCKER)
            .replace("plugins =", "secret_field = \"hunter2\"\nplugins =");
        let refusal = refused(unknown);
        assert!(refusal.contains("not valid"), "{refusal}");
        // Keys are named, so that a misspelt one can be found; values never.
        assert!(refusal.contains("`secret_field`"), "{refusal}");
        assert!(!refusal.contains("hunter2"), "{refusal}");
        assert!(refused(files.config("")).contains("at least one kind"));
        assert!(
            refused(files.config("[kinds.nope]\n")).contains("`nope` is not a registered kind")
        );
        assert!(refused(files.config("[kinds.docker]\n")).contains("docker_socket"));
        let both = files
            .config(DOCKER)
            .replace("[listen]\n", "[listen]\ntcp = \"127.0.0.1:7400\"\n");
        assert!(refused(both).contains("exactly one"));
        let in_flight = files
            .config(DOCKER)
            .replace("plugins =", "max_in_flight = 0\nplugins =");
        assert!(refused(in_flight).contains("max_in_flight"));
        let mistyped = files
            .config(DOCKER)
            .replace("plugins =", "max_in_flight = \"hunter2\"\nplugins =");
        let refusal = refused(mistyped);
        assert!(refusal.contains("`max_in_flight`: expected"), "{refusal}");
        assert!(!refusal.contains("hunter2"), "{refusal}");
        let nested = DOCKER.replace(
            "memory_mib = 512",
            "memory_mib = 512\npids_limit = \"hunter2\"",
        );
        let refusal = refused(files.config(&nested));
        assert!(refusal.contains("container_policy.pids_limit"), "{refusal}");
        assert!(!refusal.contains("hunter2"), "{refusal}");
        let broken = files
            .config(DOCKER)
            .replace("plugins =", "plugins = \"hunter2");
        let refusal = refused(broken);
        assert!(refusal.contains("line "), "{refusal}");
        assert!(!refusal.contains("hunter2"), "{refusal}");
        let missing =
            format!("{DOCKER}[kinds.docker.configuration_files]\nbanner = \"/nonexistent\"\n");
        assert!(refused(files.config(&missing)).contains("configuration_files.banner"));
    }

    #[test]
    fn tcp_is_plain_only_on_loopback_and_tls_files_are_checked_at_load() {
        let files = Files::new();
        let table = registry::builtin();
        let dir = files.dir.path().display().to_string();
        let on_tcp = |listen: &str| {
            files.config(DOCKER).replace(
                &format!("[listen]\nunix = \"{dir}/node.sock\"\n"),
                &format!("[listen]\n{listen}\n"),
            )
        };
        let loopback = NodeConfig::parse(&on_tcp("tcp = \"127.0.0.1:7400\""), &table);
        assert!(loopback.is_ok(), "{loopback:?}");
        let everywhere = on_tcp("tcp = \"0.0.0.0:7400\"");
        assert!(refusal(&everywhere, &table).contains("insecure_plain_tcp = true"));
        let mapped = on_tcp("tcp = \"[::ffff:10.0.0.1]:7400\"");
        assert!(refusal(&mapped, &table).contains("plain TCP"));
        let allowed = on_tcp("tcp = \"0.0.0.0:7400\"\ninsecure_plain_tcp = true");
        assert!(NodeConfig::parse(&allowed, &table).is_ok());
        let per_peer = on_tcp("tcp = \"127.0.0.1:7400\"\nmax_connections_per_peer = 0");
        assert!(refusal(&per_peer, &table).contains("max_connections_per_peer"));

        // TLS material: read and checked when the file is loaded.
        let tls = |key_mode: u32, key: &str| {
            let certificate = files.dir.path().join("node.crt");
            let key_path = files.dir.path().join("node.key");
            std::fs::write(
                &certificate,
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            )
            .expect("write");
            std::fs::write(&key_path, key).expect("write");
            std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(key_mode))
                .expect("chmod");
            on_tcp(&format!(
                "tcp = \"0.0.0.0:7400\"\n[listen.tls]\ncertificate = \"{}\"\nkey = \"{}\"",
                certificate.display(),
                key_path.display()
            ))
        };
        let exposed = refusal(&tls(0o644, "hunter2"), &table);
        assert!(
            exposed.contains("listen.tls.key") && exposed.contains("chmod 600"),
            "{exposed}"
        );
        let garbage = refusal(&tls(0o600, "hunter2"), &table);
        assert!(garbage.contains("listen.tls."), "{garbage}");
        assert!(!garbage.contains("hunter2"), "{garbage}");
        let on_unix = files.config(DOCKER).replace(
            "[listen]\n",
            "[listen.tls]\ncertificate = \"/c\"\nkey = \"/k\"\n[listen]\n",
        );
        assert!(refusal(&on_unix, &table).contains("TLS is served on `tcp` only"));
    }

    #[test]
    fn the_kinds_instances_must_fit_the_memory_budget() {
        let files = Files::new();
        let table = registry::builtin();
        // The docker kind: 64 concurrent calls of 64 MiB, each of which
        // may hold a 48 MiB upload.
        let config = NodeConfig::parse(&files.config(DOCKER), &table).expect("fits the default");
        assert_eq!(config.request_body_budget, 1 << 30);
        let tight = files
            .config(DOCKER)
            .replace("plugins =", "memory_budget_mib = 7167\nplugins =");
        let refused = refusal(&tight, &table);
        assert!(
            refused.contains("kinds.docker:") && refused.contains("7168 MiB"),
            "{refused}"
        );
        // Fewer calls in flight on the node, fewer instances at once.
        let fewer = files.config(DOCKER).replace(
            "plugins =",
            "memory_budget_mib = 1792\nmax_in_flight = 16\nplugins =",
        );
        assert!(NodeConfig::parse(&fewer, &table).is_ok());
        let bodies = files
            .config(DOCKER)
            .replace("plugins =", "request_body_budget_mib = 71\nplugins =");
        assert!(refusal(&bodies, &table).contains("request_body_budget_mib"));
        let bodies = files
            .config(DOCKER)
            .replace("plugins =", "request_body_budget_mib = 72\nplugins =");
        let config = NodeConfig::parse(&bodies, &table).expect("one frame fits");
        assert_eq!(config.request_body_budget, 72 << 20);
    }

    #[test]
    fn the_token_must_be_private_and_long_enough() {
        let files = Files::new();
        let token = files.dir.path().join("token");
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let error =
            NodeConfig::parse(&files.config(DOCKER), &registry::builtin()).expect_err("refused");
        assert!(error.to_string().contains("chmod 600"));
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::fs::write(&token, "short").expect("write");
        let error =
            NodeConfig::parse(&files.config(DOCKER), &registry::builtin()).expect_err("refused");
        assert!(error.to_string().contains("at least 16"));
    }
}
