//! Grants, ownership and declarations are enforced by the host before any
//! request reaches the engine; a foreign resource is never mutated. The
//! engine here is a recording fake, so "no request" is checked literally.
//! (`hostile.rs` attacks each container-policy rule.)

use crate::support::*;
use sandbox_host::capability::docker::names::AllocationNames;
use sandbox_host::registry::Grants;
use sandbox_host::types::Error;
use sandbox_host::{Budget, Host};
use serde_json::json;

async fn steered(engine: &FakeEngine, action: &str) -> Host {
    steered_with(engine, json!({ "action": action, "volume": "oac-victim" })).await
}

async fn steered_with(engine: &FakeEngine, configuration: serde_json::Value) -> Host {
    TestHost::one(
        steerable("steerable"),
        binding(Some(engine.socket.clone()), configuration),
    )
    .loaded()
    .await
}

async fn outcome_of(
    configuration: serde_json::Value,
) -> (Result<sandbox_host::types::Info, Error>, Vec<String>) {
    let engine = FakeEngine::start().await;
    engine.seed_foreign_volume("oac-victim");
    let host = steered_with(&engine, configuration).await;
    let answer = host
        .kind("steerable")
        .expect("a loaded kind")
        .get_info(reference(), Budget::from_millis(5_000).expect("budget"))
        .await;
    (answer, engine.recorded())
}

async fn outcome(action: &str) -> (Result<sandbox_host::types::Info, Error>, Vec<String>) {
    outcome_of(json!({ "action": action, "volume": "oac-victim" })).await
}

#[tokio::test]
async fn a_foreign_volume_is_inspected_but_never_removed() {
    let (answer, recorded) = outcome("volume-remove").await;
    assert_eq!(answer, Err(Error::Ownership));
    assert_eq!(recorded, vec!["GET /volumes/oac-victim".to_string()]);
}

/// The host's names for this file's allocation.
fn names() -> AllocationNames {
    AllocationNames::of(
        INSTALLATION,
        &reference(),
        &sandbox_host::registry::Policy::default().volume_roles,
    )
}

#[tokio::test]
async fn a_container_may_not_mount_a_foreign_volume() {
    // A volume that is not the allocation's is never asked for.
    let (answer, recorded) = outcome_of(json!({
        "action": "container-create",
        "mounts": [{ "volume": "oac-victim", "target": "/data" }],
    }))
    .await;
    assert_eq!(answer, Err(Error::Invalid));
    assert!(recorded.is_empty(), "{recorded:?}");
    // A foreign volume planted under the allocation's own name is seen
    // for what it is: inspected, never mounted.
    let home = names().volumes[0].1.clone();
    let engine = FakeEngine::start().await;
    engine.seed_foreign_volume(&home);
    let host = steered_with(
        &engine,
        json!({ "action": "container-create", "mounts": [{ "volume": "@home", "target": "/data" }] }),
    )
    .await;
    let answer = host
        .kind("steerable")
        .expect("a loaded kind")
        .get_info(reference(), Budget::from_millis(5_000).expect("budget"))
        .await;
    assert_eq!(answer, Err(Error::Ownership));
    assert_eq!(
        engine.recorded(),
        vec![format!("GET /volumes/{home}")],
        "no create request"
    );
}

#[tokio::test]
async fn a_well_formed_spec_reaches_the_engine_once() {
    let (answer, recorded) = outcome("container-create").await;
    assert_eq!(
        answer,
        Err(Error::NotFound),
        "the policy's image is not on the fake engine"
    );
    assert_eq!(recorded, vec!["POST /containers/create".to_string()]);
}

#[tokio::test]
async fn every_engine_request_names_the_pinned_api_version() {
    let engine = FakeEngine::start().await;
    let host = steered_with(&engine, json!({ "action": "container-create" })).await;
    let _ = host
        .kind("steerable")
        .expect("a loaded kind")
        .get_info(reference(), Budget::from_millis(5_000).expect("budget"))
        .await;
    let raw = engine.raw_requests();
    // The construction check asks the unversioned /version (an older engine
    // refuses versioned paths); everything after it names v1.45.
    assert_eq!(raw.first().map(String::as_str), Some("/version"));
    assert_eq!(
        raw[1..].to_vec(),
        vec![format!(
            "/v1.45/containers/create?name={}",
            names().container
        )]
    );
}

#[tokio::test]
async fn an_ungranted_capability_is_denied_without_io() {
    let engine = FakeEngine::start().await;
    let registration = sandbox_host::Registration {
        grants: Grants::default(),
        ..steerable("nodocker")
    };
    let host = TestHost::one(registration, binding(None, json!({ "action": "version" })))
        .loaded()
        .await;
    let answer = host
        .kind("nodocker")
        .expect("a loaded kind")
        .get_info(reference(), Budget::from_millis(5_000).expect("budget"))
        .await;
    assert_eq!(answer, Err(Error::Invalid));
    assert!(engine.recorded().is_empty());
}

#[tokio::test]
async fn native_error_text_never_reaches_the_caller() {
    let (answer, _) = outcome("container-create").await;
    let shown = format!("{answer:?}");
    assert!(
        !shown.contains(oac_fixtures::docker_engine::NATIVE_ERROR_CANARY),
        "{shown}"
    );
}

#[tokio::test]
async fn declared_unsupported_operations_are_answered_before_any_io() {
    use sandbox_host::types::UnsupportedOperation;
    use sandbox_host::types::{Compute, Configuration, SnapshotIdentity, SuspendRequest, Target};
    let engine = FakeEngine::start().await;
    engine.seed_foreign_volume("oac-victim");
    let host = steered(&engine, "volume-inspect").await;
    let budget = Budget::from_millis(5_000).expect("budget");
    let compute = Compute {
        generation: 0,
        name: "c".into(),
        id: "i".into(),
        restored_from: None,
    };
    let unsupported = |operation: &str, reason: &str| {
        Err::<(), _>(Error::Unsupported(UnsupportedOperation {
            operation: operation.into(),
            reason: reason.into(),
        }))
    };
    let checkpoint = "steerable_has_no_checkpoints";
    let observation = "steerable_has_no_observation";
    assert_eq!(
        host.kind("steerable")
            .expect("a loaded kind")
            .initial(reference(), budget)
            .await
            .map(|_| ()),
        unsupported("initial", checkpoint)
    );
    assert_eq!(
        host.kind("steerable")
            .expect("a loaded kind")
            .new_compute(reference(), 1, None, budget)
            .await
            .map(|_| ()),
        unsupported("new-compute", checkpoint)
    );
    assert_eq!(
        host.kind("steerable")
            .expect("a loaded kind")
            .suspend(
                SuspendRequest {
                    reference: reference(),
                    operation_id: "op-1".into(),
                    source: compute.clone(),
                    snapshot: None,
                    observe_only: false
                },
                budget
            )
            .await
            .map(|_| ()),
        unsupported("suspend", checkpoint)
    );
    assert_eq!(
        host.kind("steerable")
            .expect("a loaded kind")
            .kill_compute(reference(), compute.clone(), budget)
            .await,
        unsupported("kill-compute", checkpoint)
    );
    let snapshot = SnapshotIdentity {
        reference: reference(),
        id: "i".into(),
        digest: "d".into(),
        checkpoint_id: "i".into(),
        checkpoint_root: "/".into(),
        operation_id: "op-1".into(),
        source_generation: 0,
        source_name: "c".into(),
        source_id: "i".into(),
    };
    assert_eq!(
        host.kind("steerable")
            .expect("a loaded kind")
            .delete_snapshot(reference(), snapshot, budget)
            .await,
        unsupported("delete-snapshot", checkpoint)
    );
    let target = Target {
        reference: reference(),
        provider_id: None,
    };
    assert_eq!(
        host.kind("steerable")
            .expect("a loaded kind")
            .observe(target.clone(), budget)
            .await
            .map(|_| ()),
        unsupported("observe", observation)
    );
    assert_eq!(
        host.kind("steerable")
            .expect("a loaded kind")
            .observe_batch(vec![target], budget)
            .await
            .map(|_| ()),
        unsupported("observe-batch", observation)
    );
    assert_eq!(
        host.kind("steerable")
            .expect("a loaded kind")
            .discover_selection(Configuration::without_credential("{}"), budget)
            .await
            .map(|_| ()),
        unsupported("discover-selection", observation)
    );
    assert_eq!(
        host.kind("steerable")
            .expect("a loaded kind")
            .verify_credential(
                Configuration {
                    public: "{}".into(),
                    credential: Some("secret".into()),
                },
                vec![reference()],
                budget,
            )
            .await,
        unsupported("verify-credential", observation)
    );
    assert!(
        engine.recorded().is_empty(),
        "no native request: {:?}",
        engine.recorded()
    );
    // A supported operation of the same kind does reach the engine.
    assert_eq!(
        host.kind("steerable")
            .expect("a loaded kind")
            .get_info(reference(), budget)
            .await,
        Err(Error::Ownership)
    );
    assert_eq!(
        engine.recorded(),
        vec!["GET /volumes/oac-victim".to_string()]
    );
}

#[tokio::test]
async fn a_batch_over_one_hundred_targets_is_invalid() {
    use sandbox_host::types::Target;
    let engine = FakeEngine::start().await;
    let host = steered(&engine, "none").await;
    let targets = vec![
        Target {
            reference: reference(),
            provider_id: None
        };
        101
    ];
    let budget = Budget::from_millis(5_000).expect("budget");
    assert_eq!(
        host.kind("steerable")
            .expect("a loaded kind")
            .observe_batch(targets, budget)
            .await
            .map(|_| ()),
        Err(Error::Invalid)
    );
}
