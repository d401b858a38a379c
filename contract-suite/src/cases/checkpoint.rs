//! Clause `checkpoint`, for components that declare checkpoints: identities
//! are constructed without allocating; every answer names the incarnation
//! asked about; a suspend captures once per operation, with the source's
//! identity, and stops the source; observe-only never acts; resume makes
//! the target from exactly the snapshot; resume-compute never cold-starts a
//! stopped incarnation; kill-compute and delete-snapshot remove exactly one
//! thing. The component's answers are judged by the same rules the host
//! polices them with.

use super::{Runner, actions, ensure};
use crate::report::Level;
use sandbox_host::police;
use sandbox_host::provider::CheckpointProvider;
use sandbox_host::types::{
    Compute, ComputeStatus, Error, Reference, ResumeRequest, SnapshotIdentity, SuspendRequest,
};
use std::sync::Mutex;

/// What the cases learn, in order.
#[derive(Default)]
struct Learned {
    source: Option<Compute>,
    snapshot: Option<SnapshotIdentity>,
    resumed: Option<Compute>,
}

fn placeholder_snapshot(reference: &Reference) -> SnapshotIdentity {
    SnapshotIdentity {
        reference: reference.clone(),
        id: "suite-snapshot".into(),
        digest: "suite-digest".into(),
        checkpoint_id: "suite-checkpoint".into(),
        checkpoint_root: "suite-root".into(),
        operation_id: "suite-earlier".into(),
        source_generation: 0,
        source_name: "suite-source".into(),
        source_id: "suite-source-id".into(),
    }
}

pub(super) async fn run(runner: &mut Runner<'_>) {
    let h = runner.harness;
    if !h.declaration().0.supports_checkpoint() {
        return;
    }
    let reference = h.allocation("checkpoint");
    let learned: Mutex<Learned> = Mutex::default();
    let (r, learned) = (&reference, &learned);
    let learn = || learned.lock().unwrap_or_else(|p| p.into_inner());
    let suspend = |observe_only: bool, source: Compute, known| SuspendRequest {
        reference: r.clone(),
        operation_id: "suite-suspend-1".into(),
        source,
        snapshot: known,
        observe_only,
    };
    runner
        .case(
            "checkpoint.construct",
            "checkpoint",
            Level::Must,
            "initial and new-compute construct the asked identities (generation, provenance) without any native request.",
            async |h| {
                let from = placeholder_snapshot(r);
                let ((initial, next), requests) = h
                    .with_fault(None, async || {
                        let checkpoint = h.kind();
                        (
                            checkpoint.initial(r.clone(), h.budget()).await,
                            checkpoint
                                .new_compute(r.clone(), 1, Some(from.clone()), h.budget())
                                .await,
                        )
                    })
                    .await;
                ensure(requests.is_empty(), || format!("requests {:?}", actions(&requests)))?;
                police::constructed(sandbox_host::contract::Operation::Initial, initial, 0, None)
                    .map_err(|e| format!("initial {e:?}"))?;
                police::constructed(
                    sandbox_host::contract::Operation::NewCompute,
                    next,
                    1,
                    Some(&from),
                )
                .map(drop)
                .map_err(|e| format!("new-compute {e:?}"))
            },
        )
        .await;
    runner
        .case(
            "checkpoint.get-compute",
            "checkpoint",
            Level::Must,
            "After Create, get-compute of the initial incarnation answers that incarnation, running, with its native id.",
            async |h| {
                h.create(r).await.map_err(|f| format!("create {f:?}"))?;
                let checkpoint = h.kind();
                let initial = checkpoint
                    .initial(r.clone(), h.budget())
                    .await
                    .map_err(|e| format!("initial {e:?}"))?;
                let answer = checkpoint.get_compute(r.clone(), initial.clone(), h.budget()).await;
                let state = police::compute_state(
                    sandbox_host::contract::Operation::GetCompute,
                    answer,
                    &initial,
                )
                .map_err(|e| format!("{e:?}"))?;
                ensure(
                    state.status == ComputeStatus::Running && !state.compute.id.is_empty(),
                    || format!("state {state:?}"),
                )?;
                learn().source = Some(state.compute);
                Ok(())
            },
        )
        .await;
    runner
        .case(
            "checkpoint.suspend",
            "checkpoint",
            Level::Must,
            "suspend answers the source, stopped and suspended, with a snapshot carrying the request's operation id and the source's identity.",
            async |h| {
                let source = learn().source.clone().ok_or("no source incarnation")?;
                let request = suspend(false, source, None);
                let answer = h.kind().suspend(request.clone(), h.budget()).await;
                let state = police::suspended(answer.clone(), &request)
                    .map_err(|_| format!("{answer:?}"))?;
                learn().snapshot = state.snapshot;
                Ok(())
            },
        )
        .await;
    runner
        .case(
            "checkpoint.suspend-observe-only",
            "checkpoint",
            Level::Must,
            "An observe-only suspend answers the capture its operation made and changes nothing.",
            async |h| {
                let (source, known) = {
                    let learned = learn();
                    (learned.source.clone(), learned.snapshot.clone())
                };
                let (source, known) = source.zip(known).ok_or("no capture to observe")?;
                let request = suspend(true, source, Some(known.clone()));
                let (answer, requests) = h
                    .with_fault(None, async || {
                        h.kind().suspend(request.clone(), h.budget()).await
                    })
                    .await;
                let mutations: Vec<_> = requests.into_iter().filter(|r| h.is_mutation(r)).collect();
                ensure(mutations.is_empty(), || {
                    format!("acted: {:?}", actions(&mutations))
                })?;
                let state = police::suspended(answer.clone(), &request)
                    .map_err(|_| format!("{answer:?}"))?;
                ensure(state.snapshot.as_ref() == Some(&known), || {
                    format!("{state:?}")
                })
            },
        )
        .await;
    runner
        .case(
            "checkpoint.resume-compute-never-cold-starts",
            "checkpoint",
            Level::Must,
            "resume-compute of a stopped (suspended) incarnation fails and changes nothing: it only thaws a paused one, never cold-starts.",
            async |h| {
                let source = learn().source.clone().ok_or("no source incarnation")?;
                let (answer, requests) = h
                    .with_fault(None, async || {
                        h.kind().resume_compute(r.clone(), source.clone(), h.budget()).await
                    })
                    .await;
                let mutations: Vec<_> = requests.into_iter().filter(|r| h.is_mutation(r)).collect();
                ensure(answer.is_err() && mutations.is_empty(), || {
                    format!("{answer:?}, requests {:?}", actions(&mutations))
                })
            },
        )
        .await;
    runner
        .case(
            "checkpoint.resume",
            "checkpoint",
            Level::Must,
            "resume makes the target incarnation from exactly the snapshot (provenance kept), existing and not suspended.",
            async |h| {
                let snapshot = learn().snapshot.clone().ok_or("no snapshot")?;
                let checkpoint = h.kind();
                let target = checkpoint
                    .new_compute(r.clone(), 1, Some(snapshot.clone()), h.budget())
                    .await
                    .map_err(|e| format!("new-compute {e:?}"))?;
                let request = ResumeRequest {
                    reference: r.clone(),
                    operation_id: "suite-resume-1".into(),
                    snapshot,
                    target,
                    observe_only: false,
                };
                let answer = checkpoint.resume(request.clone(), h.budget()).await;
                let state =
                    police::resumed(answer.clone(), &request).map_err(|_| format!("{answer:?}"))?;
                learn().resumed = Some(state.compute);
                Ok(())
            },
        )
        .await;
    runner
        .case(
            "checkpoint.resume-observe-only",
            "checkpoint",
            Level::Must,
            "An observe-only resume answers the incarnation its operation made and changes nothing.",
            async |h| {
                let (snapshot, resumed) = {
                    let learned = learn();
                    (learned.snapshot.clone(), learned.resumed.clone())
                };
                let (snapshot, resumed) = snapshot.zip(resumed).ok_or("nothing resumed")?;
                let request = ResumeRequest {
                    reference: r.clone(),
                    operation_id: "suite-resume-1".into(),
                    snapshot,
                    target: Compute {
                        id: String::new(),
                        ..resumed.clone()
                    },
                    observe_only: true,
                };
                let (answer, requests) = h
                    .with_fault(None, async || h.kind().resume(request.clone(), h.budget()).await)
                    .await;
                let mutations: Vec<_> = requests.into_iter().filter(|r| h.is_mutation(r)).collect();
                ensure(mutations.is_empty(), || format!("acted: {:?}", actions(&mutations)))?;
                let state =
                    police::resumed(answer.clone(), &request).map_err(|_| format!("{answer:?}"))?;
                ensure(state.compute.id == resumed.id, || format!("{state:?}"))
            },
        )
        .await;
    runner
        .case(
            "checkpoint.kill-compute",
            "checkpoint",
            Level::Must,
            "kill-compute removes exactly the named incarnation (one removal); it is then not found.",
            async |h| {
                let resumed = learn().resumed.clone().ok_or("nothing resumed")?;
                let (answer, requests) = h
                    .with_fault(None, async || {
                        h.kind().kill_compute(r.clone(), resumed.clone(), h.budget()).await
                    })
                    .await;
                let removals = requests.iter().filter(|r| r.is_removal()).count();
                ensure(answer.is_ok() && removals == 1, || {
                    format!("{answer:?}, requests {:?}", actions(&requests))
                })?;
                let after = h.kind().get_compute(r.clone(), resumed, h.budget()).await;
                ensure(matches!(after, Err(Error::NotFound)), || format!("after {after:?}"))
            },
        )
        .await;
    runner
        .case(
            "checkpoint.delete-snapshot",
            "checkpoint",
            Level::Must,
            "delete-snapshot removes exactly the named snapshot (one removal).",
            async |h| {
                let snapshot = learn().snapshot.clone().ok_or("no snapshot")?;
                let (answer, requests) = h
                    .with_fault(None, async || {
                        h.kind()
                            .delete_snapshot(r.clone(), snapshot, h.budget())
                            .await
                    })
                    .await;
                let removals = requests.iter().filter(|r| r.is_removal()).count();
                ensure(answer.is_ok() && removals == 1, || {
                    format!("{answer:?}, requests {:?}", actions(&requests))
                })
            },
        )
        .await;
    let source = learn().source.clone();
    if let Some(source) = source {
        let _ = h.kind().kill_compute(r.clone(), source, h.budget()).await;
    }
    h.cleanup(r).await;
}
