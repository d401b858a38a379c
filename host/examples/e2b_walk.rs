//! One allocation through the E2B kind, the way Core runs a direct kind in
//! its own process: the kind loaded from the registry with its API key and
//! receipts in a state directory; then selection discovery (the pinned
//! build's id and resources), Create, GetInfo, RunCommand with stdin,
//! Renew and Kill, each printed as it answers, and a listing of the
//! allocation's sandboxes (outside the component) proving absence. Every
//! step is checked: the walk exits non-zero at the first unexpected answer.
//!
//! Without arguments past the plugins directory it runs against the fake
//! E2B (`oac-fixtures`, on its test network), which is what CI does. With
//! `--real` it runs against E2B itself: `E2B_API_KEY` (the team's key) and
//! `E2B_TEMPLATE` (`<template>:<build UUID>`, the runtime template of
//! `plugins/e2b/template/`) from the environment; it makes one billed
//! sandbox and kills it.
//!
//! `scripts/e2b-walk.sh` builds the components and runs this.

use anyhow::{Context, Result, bail, ensure};
use oac_fixtures::e2b_api::{self, FakeE2b};
use sandbox_host::host::Connect;
use sandbox_host::provider::SandboxProvider;
use sandbox_host::testing::TestNetwork;
use sandbox_host::types::{
    Bootstrap, Command, Configuration, LifecycleState, NetworkAccess, Reference,
};
use sandbox_host::{Budget, Host, NodeBinding, ReceiptStore, Runtime, registry};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where the walk runs: E2B's API, its key, the template, and for the
/// fake its test network.
struct Target {
    api_url: String,
    domain: String,
    key: String,
    template: String,
    network: Option<TestNetwork>,
    _fake: Option<FakeE2b>,
}

async fn target(real: bool) -> Result<Target> {
    if real {
        let variable =
            |name: &str| std::env::var(name).with_context(|| format!("{name} is not set"));
        return Ok(Target {
            api_url: "https://api.e2b.app".into(),
            domain: "e2b.app".into(),
            key: variable("E2B_API_KEY")?,
            template: variable("E2B_TEMPLATE")?,
            network: None,
            _fake: None,
        });
    }
    // On the engine `OAC_DOCKER_SOCKET` names the sandbox is a container
    // and the commands run for real; without one they are simulated.
    let fake = match std::env::var("OAC_DOCKER_SOCKET") {
        Ok(socket) => {
            println!("the fake E2B runs its sandboxes on the engine at {socket}");
            FakeE2b::start_backed(&socket)
                .await
                .context("starting the fake E2B on the engine")?
        }
        Err(_) => {
            println!("the fake E2B simulates commands (OAC_DOCKER_SOCKET is not set)");
            FakeE2b::start().await.context("starting the fake E2B")?
        }
    };
    Ok(Target {
        api_url: e2b_api::API_URL.into(),
        domain: e2b_api::DOMAIN.into(),
        key: e2b_api::API_KEY.into(),
        template: format!("{}:{}", e2b_api::TEMPLATE, e2b_api::BUILD),
        network: Some(TestNetwork {
            root_certificate_pem: fake.ca_pem().as_bytes().to_vec(),
            address: fake.address(),
        }),
        _fake: Some(fake),
    })
}

/// The sandboxes E2B lists under this installation and allocation, read
/// with the key directly (not through the component).
async fn listed(target: &Target, installation: &str, allocation: &str) -> Result<usize> {
    let mut client = reqwest::Client::builder();
    if let Some(network) = &target.network {
        let certificate = reqwest::Certificate::from_pem(&network.root_certificate_pem)?;
        let host = target.api_url.trim_start_matches("https://");
        client = client
            .tls_certs_only([certificate])
            .resolve(host, network.address);
    }
    // E2B's filter: `k=v&k=v`, encoded as one parameter (the values here
    // need no escaping of their own).
    let filter = format!("oac_installationid={installation}&oac_allocationid={allocation}");
    let filter: String = url::form_urlencoded::byte_serialize(filter.as_bytes()).collect();
    let url = format!(
        "{}/v2/sandboxes?state=running,paused&metadata={filter}",
        target.api_url
    );
    let response = client
        .build()?
        .get(url)
        .header("x-api-key", &target.key)
        .send()
        .await?;
    ensure!(
        response.status().is_success(),
        "listing: {}",
        response.status()
    );
    let sandboxes: Vec<serde_json::Value> = serde_json::from_slice(&response.bytes().await?)?;
    Ok(sandboxes.len())
}

#[tokio::main]
async fn main() -> Result<()> {
    let mut arguments = std::env::args().skip(1);
    let plugins = arguments
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/plugins"));
    let real = arguments.next().as_deref() == Some("--real");
    let target = target(real).await?;
    let state = tempfile::tempdir().context("a state directory")?;
    let installation = "e2b-walk";
    let credential = serde_json::json!({"api_key": target.key}).to_string();
    let budget = Budget::from_millis(60_000)?;
    let table: Vec<_> = registry::builtin()
        .into_iter()
        .filter(|row| row.kind == "e2b")
        .collect();
    let binding = |configuration: serde_json::Value| -> Result<NodeBinding> {
        Ok(NodeBinding {
            installation_id: installation.into(),
            configuration,
            credential: Some(credential.clone()),
            receipts: Some(ReceiptStore::open(state.path())?),
            microsandbox: Default::default(),
            http_test_network: target.network.clone(),
            ..NodeBinding::default()
        })
    };
    let load = async |binding: NodeBinding| -> Result<Host> {
        let bindings = BTreeMap::from([("e2b".to_string(), binding)]);
        Host::load(
            Runtime::new()?,
            &table,
            &plugins,
            &bindings,
            Connect::Capabilities,
        )
        .await
        .context("loading the e2b kind (run `cargo xtask build-plugins` first)")
    };
    let written = serde_json::json!({
        "template": target.template,
        "api_url": target.api_url,
        "domain": target.domain,
    });
    // Selection discovery: the build's resources and the template's id.
    let discovering = load(binding(written.clone())?).await?;
    let kind = discovering
        .kind("e2b")
        .map_err(|_| anyhow::anyhow!("no e2b kind"))?;
    let candidate = Configuration {
        public: written.to_string(),
        credential: Some(credential.clone()),
    };
    let discovered = kind.discover_selection(candidate, budget).await;
    println!("discover:    {discovered:?}");
    let discovered = discovered.map_err(|error| anyhow::anyhow!("discovery: {error:?}"))?;
    drop(discovering);
    let configuration: serde_json::Value = serde_json::from_str(&discovered.public)?;
    let host = load(binding(configuration)?).await?;
    let kind = host
        .kind("e2b")
        .map_err(|_| anyhow::anyhow!("no e2b kind"))?;
    let reference = Reference {
        tenant_id: "tenant-1".into(),
        environment_id: "env-1".into(),
        allocation_id: "alloc-1".into(),
    };
    let bootstrap = Bootstrap {
        reference: reference.clone(),
        session_id: "session-1".into(),
        device_id: "device-1".into(),
        core_url: "https://core.example".into(),
        daemon_credential: "walk-daemon-credential".into(),
        harness: "harness-a".into(),
        network_access: NetworkAccess::Enabled,
        allowed_domains: Vec::new(),
    };
    let created = kind.create(bootstrap, budget).await;
    println!("create:      {created:?}");
    let running =
        |state: LifecycleState, settled: bool| state == LifecycleState::Running && settled;
    match &created {
        Ok(info) if running(info.state, info.create_settled) && info.bootstrap_complete => {}
        _ => bail!("create did not end running and bootstrapped"),
    }
    let info = kind.get_info(reference.clone(), budget).await;
    println!("get-info:    {info:?}");
    ensure!(
        matches!(&info, Ok(info) if running(info.state, info.create_settled)),
        "get-info"
    );
    let command = Command {
        args: vec!["cat".into()],
        directory: None,
        stdin: Some(b"hello through envd\n".to_vec()),
    };
    let ran = kind
        .run_command(reference.clone(), command, budget)
        .await
        .map(|result| {
            (
                String::from_utf8_lossy(&result.stdout).into_owned(),
                result.exit_code,
            )
        });
    println!("run-command: {ran:?}");
    ensure!(
        matches!(&ran, Ok((out, 0)) if out == "hello through envd\n"),
        "run-command"
    );
    let renewed = kind.renew(reference.clone(), budget).await;
    println!("renew:       {renewed:?}");
    ensure!(renewed.is_ok(), "renew");
    let killed = kind.kill(reference.clone(), budget).await;
    println!("kill:        {killed:?}");
    ensure!(
        matches!(&killed, Ok(info) if info.state == LifecycleState::Absent),
        "kill"
    );
    let info = kind.get_info(reference.clone(), budget).await;
    println!("get-info:    {info:?}");
    ensure!(
        matches!(&info, Ok(info) if info.state == LifecycleState::Absent),
        "get-info after kill"
    );
    let left = listed(&target, installation, &reference.allocation_id).await?;
    println!("listed:      {left} sandboxes of this allocation");
    ensure!(left == 0, "the listing shows the allocation's sandbox");
    if let Some(fake) = &target._fake {
        println!("E2B requests: {:#?}", fake.requests());
    }
    Ok(())
}
