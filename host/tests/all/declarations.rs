//! Declaration validation against a real component: each rejection rule,
//! and a valid declaration.

use sandbox_host::contract::Operation;

use crate::support::*;
use sandbox_host::HostError;
use sandbox_host::declaration::{Decision, DeclarationError};
use sandbox_host::host::Connect;
use sandbox_host::loader::LoadError;
use sandbox_host::registry::{Grants, Mode};
use serde_json::json;

async fn load_declaring(declaration: &str, mode: Mode) -> Result<sandbox_host::Host, HostError> {
    let mut registration = steerable("steerable");
    registration.mode = mode;
    let socket = (mode == Mode::Nodes).then(|| "/nonexistent/engine.sock".into());
    if mode == Mode::Direct {
        registration.grants = Grants::default();
    }
    TestHost::one(
        registration,
        binding(socket, json!({ "declaration": declaration })),
    )
    .load(Connect::Offline)
    .await
}

/// The steerable component declaring `declaration` as a node kind, which
/// must load.
async fn accepted(declaration: &str) -> sandbox_host::Host {
    load_declaring(declaration, Mode::Nodes)
        .await
        .unwrap_or_else(|error| panic!("{declaration}: {error}"))
}

async fn rejection(declaration: &str, mode: Mode) -> DeclarationError {
    match load_declaring(declaration, mode).await {
        Err(HostError::Load(LoadError::Declaration { error, .. })) => error,
        Err(other) => panic!("{declaration}: unexpected error {other}"),
        Ok(_) => panic!("{declaration}: declaration was accepted"),
    }
}

#[tokio::test]
async fn a_valid_declaration_is_accepted_and_names_every_exported_operation() {
    let host = accepted("valid").await;
    let kind = host.kind("steerable").expect("kind");
    assert_eq!(
        kind.inventory.0.len(),
        28,
        "inventory derived from the exports"
    );
    for operation in &kind.inventory.0 {
        assert!(
            kind.declaration.decision(*operation).is_some(),
            "{} declared",
            operation.name()
        );
    }
    assert_eq!(
        kind.declaration.decision(Operation::Create),
        Some(&Decision::Supported)
    );
    assert_eq!(
        kind.declaration.decision(Operation::Suspend),
        Some(&Decision::Unsupported(
            "steerable_has_no_checkpoints".into()
        ))
    );
    let requirements = kind
        .inventory
        .0
        .iter()
        .find(|op| **op == Operation::Requirements)
        .expect("requirements");
    assert!(!requirements.fallible(), "requirements cannot fail");
}

#[tokio::test]
async fn full_checkpoint_support_is_accepted_for_a_nodes_kind() {
    let host = accepted("checkpoint").await;
    assert!(
        host.kind("steerable")
            .expect("kind")
            .declaration
            .supports_checkpoint()
    );
}

/// One test per rule: the steerable component declaring `declaration` as
/// a kind of `mode` is refused for that rule.
macro_rules! rejected {
    ($($test:ident: $declaration:literal in $mode:ident => $error:expr;)*) => {$(
        #[tokio::test]
        async fn $test() {
            assert_eq!(rejection($declaration, Mode::$mode).await, $error);
        }
    )*};
}

rejected! {
    a_missing_operation_is_rejected: "missing-op" in Nodes
        => DeclarationError::Missing("kill-compute".into());
    an_unknown_operation_is_rejected: "unknown-op" in Nodes => DeclarationError::Unknown;
    a_duplicate_entry_is_rejected: "duplicate" in Nodes
        => DeclarationError::Duplicate("get-info".into());
    a_required_operation_declared_unsupported_is_rejected: "required-unsupported" in Nodes
        => DeclarationError::RequiredUnsupported("renew".into());
    an_infallible_operation_declared_unsupported_is_rejected: "infallible-unsupported" in Nodes
        => DeclarationError::InfallibleUnsupported("requirements".into());
    partial_checkpoint_support_is_rejected: "partial-checkpoint" in Nodes
        => DeclarationError::PartialCheckpoint;
    checkpoint_support_in_direct_mode_is_rejected: "checkpoint" in Direct
        => DeclarationError::CheckpointNotNodes;
    batch_observation_without_observe_is_rejected: "batch-without-observe" in Nodes
        => DeclarationError::BatchWithoutObserve;
    an_invalid_reason_code_is_rejected: "invalid-reason" in Nodes
        => DeclarationError::InvalidReason("observe".into());
}

#[tokio::test]
async fn a_declaration_call_that_never_returns_fails_loading_within_the_budget() {
    let mut registration = steerable("steerable");
    registration.policy.default_budget_ms = 300;
    let started = std::time::Instant::now();
    let outcome = TestHost::one(
        registration,
        binding(Some("/x.sock".into()), json!({ "declaration": "loop" })),
    )
    .load(Connect::Offline)
    .await;
    assert!(matches!(
        outcome,
        Err(HostError::Load(LoadError::DeclarationCall { .. }))
    ));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[tokio::test]
async fn the_sdk_documented_minimal_adapter_loads_and_answers() {
    let registration = sandbox_host::Registration {
        kind: "minimal".into(),
        mode: Mode::Direct,
        component: "minimal.wasm".into(),
        grants: Grants::default(),
        ..steerable("minimal")
    };
    let host = TestHost::one(registration, binding(None, json!({})))
        .load(Connect::Offline)
        .await
        .expect("minimal adapter loads");
    let kind = host.kind("minimal").expect("kind");
    assert_eq!(
        kind.declaration.decision(Operation::Observe),
        Some(&Decision::Unsupported("minimal_has_no_observation".into()))
    );
    assert!(!kind.declaration.supports_checkpoint());
    let (allocation, budget) = (reference(), budget(5_000));
    let kind = host.kind("minimal").expect("a loaded kind");
    assert_eq!(
        kind.get_info(allocation.clone(), budget).await,
        Err(sandbox_host::types::Error::NotFound),
        "an observation of nothing is not-found, never absence"
    );
    let killed = kind.kill(allocation.clone(), budget).await.expect("kill");
    assert_eq!(killed.reference, allocation);
    assert_eq!(killed.state, sandbox_host::types::LifecycleState::Absent);
    assert!(!killed.create_settled, "a Kill alone settles nothing");
}

#[tokio::test]
async fn the_bench_one_request_component_makes_exactly_one_version_request() {
    let engine = oac_fixtures::docker_engine::FakeDockerEngine::start()
        .await
        .expect("fake engine");
    let registration = sandbox_host::Registration {
        kind: "one-request".into(),
        component: "one_request.wasm".into(),
        ..steerable("one-request")
    };
    let binding = binding(Some(engine.socket().to_path_buf()), json!({}));
    let host = TestHost::one(registration, binding).loaded().await;
    engine.report_api_version("1.47");
    engine.clear_requests();
    let kind = host.kind("one-request").expect("a loaded kind");
    let (allocation, budget) = (reference(), budget(5_000));
    let info = kind
        .get_info(allocation.clone(), budget)
        .await
        .expect("get-info");
    assert_eq!(info.provider_id.as_deref(), Some("1.47"));
    assert!(!info.create_settled, "an observation settles nothing");
    assert_eq!(engine.requests(), ["GET /version"]);
    assert_eq!(
        kind.declaration.decision(Operation::Observe),
        Some(&Decision::Unsupported(
            "bench_component_has_no_observation".into()
        ))
    );
}
