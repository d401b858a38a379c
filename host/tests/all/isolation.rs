//! Grants, ownership and declarations are enforced by the host before any
//! request reaches the engine; a foreign resource is never mutated. The
//! engine here is a recording fake, so "no request" is checked literally.
//! (`hostile.rs` attacks each container-policy rule.)

use crate::support::*;
use sandbox_host::Host;
use sandbox_host::capability::docker::names::AllocationNames;
use sandbox_host::registry::Grants;
use sandbox_host::types::{Error, Info};
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

/// GetInfo of the loaded kind `kind`: what its steering made of it.
async fn get_info(host: &Host, kind: &str) -> Result<Info, Error> {
    host.kind(kind)
        .expect("a loaded kind")
        .get_info(reference(), budget(5_000))
        .await
}

async fn outcome_of(configuration: serde_json::Value) -> (Result<Info, Error>, Vec<String>) {
    let engine = FakeEngine::start().await;
    engine.seed_foreign_volume("oac-victim");
    let host = steered_with(&engine, configuration).await;
    let answer = get_info(&host, "steerable").await;
    (answer, engine.recorded())
}

async fn outcome(action: &str) -> (Result<Info, Error>, Vec<String>) {
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
    assert_eq!(get_info(&host, "steerable").await, Err(Error::Ownership));
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
    let _ = get_info(&host, "steerable").await;
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
    assert_eq!(get_info(&host, "nodocker").await, Err(Error::Invalid));
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
    let budget = budget(5_000);
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
    let kind = host.kind("steerable").expect("a loaded kind");
    let suspend = SuspendRequest {
        reference: reference(),
        operation_id: "op-1".into(),
        source: compute.clone(),
        snapshot: None,
        observe_only: false,
    };
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
    let target = Target {
        reference: reference(),
        provider_id: None,
    };
    let candidate = Configuration {
        public: "{}".into(),
        credential: Some("secret".into()),
    };
    let checkpoint = "steerable_has_no_checkpoints";
    let observation = "steerable_has_no_observation";
    for (operation, reason, answer) in [
        (
            "initial",
            checkpoint,
            kind.initial(reference(), budget).await.map(drop),
        ),
        (
            "new-compute",
            checkpoint,
            kind.new_compute(reference(), 1, None, budget)
                .await
                .map(drop),
        ),
        (
            "suspend",
            checkpoint,
            kind.suspend(suspend, budget).await.map(drop),
        ),
        (
            "kill-compute",
            checkpoint,
            kind.kill_compute(reference(), compute, budget).await,
        ),
        (
            "delete-snapshot",
            checkpoint,
            kind.delete_snapshot(reference(), snapshot, budget).await,
        ),
        (
            "observe",
            observation,
            kind.observe(target.clone(), budget).await.map(drop),
        ),
        (
            "observe-batch",
            observation,
            kind.observe_batch(vec![target], budget).await.map(drop),
        ),
        (
            "discover-selection",
            observation,
            kind.discover_selection(Configuration::without_credential("{}"), budget)
                .await
                .map(drop),
        ),
        (
            "verify-credential",
            observation,
            kind.verify_credential(candidate, vec![reference()], budget)
                .await,
        ),
    ] {
        assert_eq!(answer, unsupported(operation, reason), "{operation}");
    }
    assert!(
        engine.recorded().is_empty(),
        "no native request: {:?}",
        engine.recorded()
    );
    // A supported operation of the same kind does reach the engine.
    assert_eq!(get_info(&host, "steerable").await, Err(Error::Ownership));
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
    assert_eq!(
        host.kind("steerable")
            .expect("a loaded kind")
            .observe_batch(targets, budget(5_000))
            .await
            .map(|_| ()),
        Err(Error::Invalid)
    );
}
