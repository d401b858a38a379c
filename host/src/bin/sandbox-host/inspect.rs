//! `validate`, `describe` and `probe`: the builtin kinds, loaded in this
//! process, checked, described and probed.

use crate::node::NodeArgs;
use anyhow::Result;
use sandbox_host::Budget;
use sandbox_host::host::Connect;
use sandbox_host::provider::{ConfigurationProvider, SandboxProvider};
use serde_json::{Value, json};

/// Loads every kind offline and reports each one's inventory and digest.
pub(crate) async fn validate(node: NodeArgs) -> Result<bool> {
    let host = node.load(Connect::Offline, None).await?;
    for kind in host.kinds() {
        println!(
            "{}: ok ({} operations declared, sha256 {})",
            kind.name(),
            kind.inventory.0.len(),
            kind.digest
        );
    }
    Ok(true)
}

/// Prints each kind's registration, digest, inventory, declaration,
/// configuration requirements and node artifacts as JSON.
pub(crate) async fn describe(node: NodeArgs) -> Result<bool> {
    let host = node.load(Connect::Offline, None).await?;
    let budget = Budget::from_millis(10_000)?;
    let mut kinds = Vec::new();
    for kind in host.kinds() {
        let requirements = kind.requirements(budget).await.ok();
        let inventory: Vec<Value> = kind
            .inventory
            .0
            .iter()
            .map(|operation| {
                json!({
                    "name": operation.name(),
                    "interface": operation.interface().name(),
                    "fallible": operation.fallible(),
                })
            })
            .collect();
        kinds.push(json!({
            "registration": kind.registration,
            "sha256": kind.digest,
            "inventory": inventory,
            "declaration": kind.declaration.by_name(),
            "requirements": requirements,
            "artifacts": kind.registration.node_artifacts,
        }));
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({ "kinds": kinds }))?
    );
    Ok(true)
}

/// Runs each kind's readiness probe against this node's capabilities and
/// prints the diagnostics; not ready is exit status 1.
pub(crate) async fn probe(node: NodeArgs) -> Result<bool> {
    let host = node.load(Connect::Capabilities, None).await?;
    let budget = Budget::from_millis(30_000)?;
    let mut report = serde_json::Map::new();
    let mut ready = true;
    for kind in host.kinds() {
        let diagnostics = match kind.probe(budget).await {
            Ok(found) => found.iter().map(|d| json!(d)).collect::<Vec<_>>(),
            Err(error) => vec![json!(error.code())],
        };
        ready &= diagnostics.is_empty();
        report.insert(kind.name().to_string(), json!(diagnostics));
    }
    println!("{}", serde_json::to_string_pretty(&Value::Object(report))?);
    Ok(ready)
}
