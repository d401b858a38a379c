//! One allocation through the E2B kind, the way Core runs a direct kind in
//! its own process, against the fake E2B (`oac-fixtures`): the kind loaded
//! from the registry with its API key, receipts in a state directory and
//! the fixture's test network; then Create, GetInfo, RunCommand with
//! stdin, Renew and Kill, each printed as it answers.
//!
//! `scripts/e2b-walk.sh` builds the components and runs this.

use anyhow::{Context, Result};
use oac_fixtures::e2b_api::{self, FakeE2b};
use sandbox_host::host::Connect;
use sandbox_host::provider::SandboxProvider;
use sandbox_host::testing::TestNetwork;
use sandbox_host::types::{Bootstrap, Command, NetworkAccess, Reference};
use sandbox_host::{Budget, Host, NodeBinding, ReceiptStore, Runtime, registry};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[tokio::main]
async fn main() -> Result<()> {
    let plugins = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/plugins"));
    let fake = FakeE2b::start().await.context("starting the fake E2B")?;
    let state = tempfile::tempdir().context("a state directory")?;
    let binding = NodeBinding {
        installation_id: "e2b-walk".into(),
        configuration: serde_json::json!({
            "template": format!("{}:{}", e2b_api::TEMPLATE, e2b_api::BUILD),
            "api_url": e2b_api::API_URL,
            "domain": e2b_api::DOMAIN,
            "cpu_count": e2b_api::BUILD_RESOURCES.0,
            "memory_mb": e2b_api::BUILD_RESOURCES.1,
        }),
        credential: Some(serde_json::json!({"api_key": e2b_api::API_KEY}).to_string()),
        receipts: Some(ReceiptStore::open(state.path())?),
        http_test_network: Some(TestNetwork {
            root_certificate_pem: fake.ca_pem().as_bytes().to_vec(),
            address: fake.address(),
        }),
        ..NodeBinding::default()
    };
    let table: Vec<_> = registry::builtin()
        .into_iter()
        .filter(|row| row.kind == "e2b")
        .collect();
    let host = Host::load(
        Runtime::new()?,
        &table,
        &plugins,
        &BTreeMap::from([("e2b".to_string(), binding)]),
        Connect::Capabilities,
    )
    .await
    .context("loading the e2b kind (run `cargo xtask build-plugins` first)")?;
    let kind = host
        .kind("e2b")
        .map_err(|_| anyhow::anyhow!("no e2b kind"))?;
    let budget = Budget::from_millis(30_000)?;
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
    println!("create:      {:?}", kind.create(bootstrap, budget).await);
    println!(
        "get-info:    {:?}",
        kind.get_info(reference.clone(), budget).await
    );
    let command = Command {
        args: vec!["cat".into()],
        directory: None,
        stdin: Some(b"hello through envd\n".to_vec()),
    };
    let ran = kind.run_command(reference.clone(), command, budget).await;
    println!(
        "run-command: {:?}",
        ran.map(|result| (
            String::from_utf8_lossy(&result.stdout).into_owned(),
            result.exit_code
        ))
    );
    println!(
        "renew:       {:?}",
        kind.renew(reference.clone(), budget).await
    );
    println!(
        "kill:        {:?}",
        kind.kill(reference.clone(), budget).await
    );
    println!("get-info:    {:?}", kind.get_info(reference, budget).await);
    println!("E2B requests: {:#?}", fake.requests());
    Ok(())
}
