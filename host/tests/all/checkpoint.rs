//! Checkpoints through exact incarnations (contract 0.2): the steerable
//! component in its checkpoint mode against the fake vendor API, in
//! process and through a node. A walk through suspend and resume; answers
//! that name another incarnation, lose provenance or claim a capture this
//! operation did not make are refused on both paths; checkpoint input the
//! contract refuses is `invalid` before any request.

use crate::support::*;
use oac_fixtures::vendor_api::FakeVendor;
use sandbox_host::provider::{CheckpointProvider, SandboxProvider};
use sandbox_host::types::{
    Bootstrap, Command, Compute, ComputeState, ComputeStatus, Error, NetworkAccess, Reference,
    ResumeRequest, SnapshotIdentity, SuspendRequest,
};
use sandbox_host::{Budget, Host, Registration};
use serde_json::json;
use std::sync::Arc;

fn budget() -> Budget {
    Budget::from_millis(10_000).expect("budget")
}

fn reference() -> Reference {
    Reference::new("tenant", "env", "alloc")
}

fn bootstrap() -> Bootstrap {
    Bootstrap {
        reference: reference(),
        session_id: "session".into(),
        device_id: "device".into(),
        core_url: "https://core.example".into(),
        daemon_credential: "credential".into(),
        harness: "harness".into(),
        network_access: NetworkAccess::Enabled,
        allowed_domains: vec![],
    }
}

/// A checkpointing steerable kind `kind` against `vendor`, steered further
/// by `extra` (`lie`, `cold_start`).
async fn load(vendor: &FakeVendor, kinds: &[(&str, serde_json::Value)]) -> Arc<Host> {
    let table: Vec<Registration> = kinds
        .iter()
        .map(|(kind, _)| Registration {
            grants: http_grants(&vendor.origin()),
            ..steerable(kind)
        })
        .collect();
    let bindings = kinds
        .iter()
        .map(|(kind, extra)| {
            let mut steering = json!({
                "declaration": "checkpoint",
                "action": "vendor",
                "url": vendor.origin(),
            });
            if let (Some(steering), Some(extra)) = (steering.as_object_mut(), extra.as_object()) {
                steering.extend(extra.clone());
            }
            (kind.to_string(), binding(None, steering))
        })
        .collect();
    Arc::new(TestHost::table(&table, &bindings).loaded().await)
}

/// A fresh fake vendor, and the kind `checkpointing` steered no further
/// against it.
async fn checkpointing() -> (FakeVendor, Arc<Host>) {
    let vendor = FakeVendor::start().await.expect("vendor");
    let host = load(&vendor, &[("checkpointing", json!({}))]).await;
    (vendor, host)
}

/// Suspends `source` as operation `op-1`.
fn suspend_request(
    source: &Compute,
    observe_only: bool,
    known: Option<SnapshotIdentity>,
) -> SuspendRequest {
    SuspendRequest {
        reference: reference(),
        operation_id: "op-1".into(),
        source: source.clone(),
        snapshot: known,
        observe_only,
    }
}

fn resume_request(
    snapshot: &SnapshotIdentity,
    target: &Compute,
    observe_only: bool,
) -> ResumeRequest {
    ResumeRequest {
        reference: reference(),
        operation_id: "op-2".into(),
        snapshot: snapshot.clone(),
        target: target.clone(),
        observe_only,
    }
}

/// The walk, on one provider: Create makes generation 0; suspend captures
/// it once (observe-only answers the same capture); resume makes
/// generation 1 from it (once); resume-compute never cold-starts the
/// stopped source; each incarnation and the snapshot are deleted exactly.
async fn walk(provider: &impl SandboxProvider, vendor: &FakeVendor, path: &str) {
    let checkpoint = provider.checkpoint().expect("checkpoint declared");
    provider
        .create(bootstrap(), budget())
        .await
        .expect("create");
    let initial = checkpoint
        .initial(reference(), budget())
        .await
        .expect("initial");
    assert_eq!((initial.generation, initial.id.as_str()), (0, ""), "{path}");
    let running = checkpoint
        .get_compute(reference(), initial.clone(), budget())
        .await
        .expect("get-compute");
    assert_eq!(running.status, ComputeStatus::Running, "{path}");
    let source = running.compute;
    assert!(!source.id.is_empty(), "{path}: the id is filled in");

    let suspended = checkpoint
        .suspend(suspend_request(&source, false, None), budget())
        .await
        .expect("suspend");
    let snapshot = suspended.snapshot.clone().expect("a capture");
    assert_eq!(
        (suspended.status, suspended.source_stopped),
        (ComputeStatus::Suspended, true),
        "{path}"
    );
    assert_eq!(
        (
            snapshot.operation_id.as_str(),
            snapshot.source_id.as_str(),
            snapshot.source_generation
        ),
        ("op-1", source.id.as_str(), 0),
        "{path}"
    );
    let observed = checkpoint
        .suspend(
            suspend_request(&source, true, Some(snapshot.clone())),
            budget(),
        )
        .await
        .expect("observe-only suspend");
    assert_eq!(
        observed.snapshot.as_ref(),
        Some(&snapshot),
        "{path}: the same capture"
    );
    assert_eq!(vendor.snapshots().len(), 1, "{path}: captured once");

    let target = checkpoint
        .new_compute(reference(), 1, Some(snapshot.clone()), budget())
        .await
        .expect("new-compute");
    assert_eq!(target.restored_from.as_ref(), Some(&snapshot), "{path}");
    let resumed = checkpoint
        .resume(resume_request(&snapshot, &target, false), budget())
        .await
        .expect("resume");
    assert_eq!(resumed.status, ComputeStatus::Running, "{path}");
    assert_eq!(
        resumed.compute.restored_from.as_ref(),
        Some(&snapshot),
        "{path}"
    );
    let again = checkpoint
        .resume(resume_request(&snapshot, &target, true), budget())
        .await
        .expect("observe-only resume");
    assert_eq!(again.compute.id, resumed.compute.id, "{path}: made once");

    let refused = checkpoint
        .resume_compute(reference(), source.clone(), budget())
        .await;
    assert!(refused.is_err(), "{path}: {refused:?}");
    let g0 = vendor
        .sandboxes()
        .into_iter()
        .find(|sandbox| sandbox.id == source.id)
        .expect("the source remains");
    assert_eq!(g0.status, "stopped", "{path}: never cold-started");

    let echoed = checkpoint
        .run_command_compute(
            reference(),
            resumed.compute.clone(),
            Command {
                args: vec!["cat".into()],
                directory: None,
                stdin: Some(b"in g1".to_vec()),
            },
            budget(),
        )
        .await
        .expect("run-command-compute");
    assert_eq!(echoed.stdout, b"in g1");
    checkpoint
        .kill_compute(reference(), resumed.compute, budget())
        .await
        .expect("kill g1");
    checkpoint
        .delete_snapshot(reference(), snapshot, budget())
        .await
        .expect("delete the snapshot");
    checkpoint
        .kill_compute(reference(), source, budget())
        .await
        .expect("kill g0");
    assert!(vendor.sandboxes().is_empty(), "{path}");
    assert!(vendor.snapshots().is_empty(), "{path}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspend_and_resume_work_through_exact_incarnations_on_both_paths() {
    let (vendor, host) = checkpointing().await;
    walk(
        host.kind("checkpointing").expect("kind"),
        &vendor,
        "in-process",
    )
    .await;
    let (vendor, host) = checkpointing().await;
    let served = TestNode::builder(host).start().await;
    walk(
        &served.proxy("checkpointing").await,
        &vendor,
        "through the node",
    )
    .await;
}

/// Each lie, on both paths: the host (or Core's proxy) refuses the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_about_another_incarnation_or_capture_are_refused_on_both_paths() {
    let vendor = FakeVendor::start().await.expect("vendor");
    let lies = ["operation", "source", "not-stopped", "name", "provenance"];
    let kinds: Vec<(String, serde_json::Value)> = lies
        .iter()
        .map(|lie| (format!("lie-{lie}"), json!({ "lie": lie })))
        .collect();
    let kinds: Vec<(&str, serde_json::Value)> =
        kinds.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let host = load(&vendor, &kinds).await;
    let served = TestNode::builder(host.clone()).start().await;
    for lie in lies {
        let kind = format!("lie-{lie}");
        let local = host.kind(&kind).expect("kind");
        let remote = served.proxy(&kind).await;
        let reference = Reference {
            allocation_id: format!("alloc-{lie}"),
            ..reference()
        };
        local
            .create(
                Bootstrap {
                    reference: reference.clone(),
                    ..bootstrap()
                },
                budget(),
            )
            .await
            .expect("create");
        let initial = Compute {
            generation: 0,
            name: format!("{}-g0", reference.allocation_id),
            id: String::new(),
            restored_from: None,
        };
        let source_id = vendor
            .sandboxes()
            .into_iter()
            .find(|s| s.metadata["allocation"] == reference.allocation_id.as_str())
            .expect("made")
            .id;
        let source = Compute {
            id: source_id.clone(),
            ..initial.clone()
        };
        let suspend = SuspendRequest {
            reference: reference.clone(),
            ..suspend_request(&source, false, None)
        };
        type Answer = Result<ComputeState, Error>;
        let (local_answer, remote_answer): (Answer, Answer) = match lie {
            "name" => (
                local
                    .checkpoint()
                    .expect("c")
                    .get_compute(reference.clone(), initial.clone(), budget())
                    .await,
                remote
                    .checkpoint()
                    .expect("c")
                    .get_compute(reference.clone(), initial.clone(), budget())
                    .await,
            ),
            "provenance" => {
                let snapshot = SnapshotIdentity {
                    reference: reference.clone(),
                    id: "snap-x".into(),
                    digest: "d".into(),
                    checkpoint_id: "snap-x".into(),
                    checkpoint_root: "/".into(),
                    operation_id: "op-1".into(),
                    source_generation: 0,
                    source_name: initial.name.clone(),
                    source_id: source_id.clone(),
                };
                let on = |answer: Result<Compute, Error>| {
                    answer.map(|compute| ComputeState {
                        compute,
                        status: ComputeStatus::Absent,
                        bootstrap_complete: false,
                        snapshot: None,
                        source_stopped: false,
                    })
                };
                (
                    on(local
                        .checkpoint()
                        .expect("c")
                        .new_compute(reference.clone(), 1, Some(snapshot.clone()), budget())
                        .await),
                    on(remote
                        .checkpoint()
                        .expect("c")
                        .new_compute(reference.clone(), 1, Some(snapshot), budget())
                        .await),
                )
            }
            _ => {
                let local_answer = local
                    .checkpoint()
                    .expect("c")
                    .suspend(suspend.clone(), budget())
                    .await;
                // The capture exists now; asking again answers it again.
                let remote_answer = remote
                    .checkpoint()
                    .expect("c")
                    .suspend(suspend, budget())
                    .await;
                (local_answer, remote_answer)
            }
        };
        let expected = match lie {
            "name" | "provenance" => Error::Ownership,
            _ => Error::ComputeUnconfirmed,
        };
        assert_eq!(local_answer, Err(expected.clone()), "{lie}: in-process");
        assert_eq!(remote_answer, Err(expected), "{lie}: through the node");
    }
}

/// Checkpoint input the contract refuses is `invalid` before any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoint_input_outside_the_contract_is_invalid_before_any_request() {
    let (vendor, host) = checkpointing().await;
    let checkpoint = host
        .kind("checkpointing")
        .expect("kind")
        .checkpoint()
        .expect("declared");
    let source = Compute {
        generation: 0,
        name: "alloc-g0".into(),
        id: "sbx-1".into(),
        restored_from: None,
    };
    let snapshot = SnapshotIdentity {
        reference: reference(),
        id: "snap-1".into(),
        digest: "d".into(),
        checkpoint_id: "snap-1".into(),
        checkpoint_root: "/".into(),
        operation_id: "op-1".into(),
        source_generation: 0,
        source_name: "alloc-g0".into(),
        source_id: "sbx-1".into(),
    };
    let foreign = SnapshotIdentity {
        reference: Reference {
            tenant_id: "other".into(),
            ..reference()
        },
        ..snapshot.clone()
    };
    let target = Compute {
        generation: 1,
        name: "alloc-g1".into(),
        id: String::new(),
        restored_from: Some(snapshot.clone()),
    };
    let suspends = [
        (
            "operation id",
            SuspendRequest {
                operation_id: "op 1".into(),
                ..suspend_request(&source, false, None)
            },
        ),
        (
            "source without id",
            suspend_request(
                &Compute {
                    id: String::new(),
                    ..source.clone()
                },
                false,
                None,
            ),
        ),
        (
            "known snapshot of another operation",
            suspend_request(
                &source,
                true,
                Some(SnapshotIdentity {
                    operation_id: "op-9".into(),
                    ..snapshot.clone()
                }),
            ),
        ),
        (
            "foreign snapshot",
            suspend_request(&source, true, Some(foreign.clone())),
        ),
    ];
    for (name, request) in suspends {
        assert_eq!(
            checkpoint.suspend(request, budget()).await,
            Err(Error::Invalid),
            "{name}"
        );
    }
    let resumes = [
        (
            "target not from the snapshot",
            resume_request(
                &snapshot,
                &Compute {
                    restored_from: None,
                    ..target.clone()
                },
                false,
            ),
        ),
        (
            "foreign snapshot",
            resume_request(
                &foreign,
                &Compute {
                    restored_from: Some(foreign.clone()),
                    ..target.clone()
                },
                false,
            ),
        ),
        (
            "operation id",
            ResumeRequest {
                operation_id: String::new(),
                ..resume_request(&snapshot, &target, false)
            },
        ),
    ];
    for (name, request) in resumes {
        assert_eq!(
            checkpoint.resume(request, budget()).await,
            Err(Error::Invalid),
            "{name}"
        );
    }
    let unmade = Compute {
        id: String::new(),
        ..source.clone()
    };
    assert_eq!(
        checkpoint
            .resume_compute(reference(), unmade.clone(), budget())
            .await,
        Err(Error::Invalid)
    );
    assert_eq!(
        checkpoint.kill_compute(reference(), unmade, budget()).await,
        Err(Error::Invalid)
    );
    assert_eq!(
        checkpoint
            .delete_snapshot(reference(), foreign.clone(), budget())
            .await,
        Err(Error::Invalid)
    );
    assert_eq!(
        checkpoint
            .new_compute(reference(), 1, Some(foreign), budget())
            .await,
        Err(Error::Invalid)
    );
    for (name, bad) in [("no args", Vec::new()), ("nul", vec!["a\0".to_string()])] {
        let command = sandbox_host::types::Command {
            args: bad,
            directory: None,
            stdin: None,
        };
        assert_eq!(
            checkpoint
                .run_command_compute(reference(), source.clone(), command, budget())
                .await,
            Err(Error::Invalid),
            "run-command-compute: {name}"
        );
    }
    assert_eq!(vendor.requests(), Vec::<String>::new());
}
