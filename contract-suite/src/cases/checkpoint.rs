//! Clause `checkpoint`, for components that declare checkpoints: identities
//! are constructed without allocating; every answer names the incarnation
//! asked about; a suspend captures once per operation, with the source's
//! identity, and stops the source; observe-only never acts; resume makes
//! the target from exactly the snapshot; resume-compute never cold-starts a
//! stopped incarnation; kill-compute and delete-snapshot remove exactly one
//! thing. The component's answers are judged by the same rules the host
//! polices them with.

use super::{Runner, Verdict, actions, ensure};
use crate::fixtures::Engine;
use crate::harness::{Harness, INSTALLATION};
use crate::profile::Class;
use crate::report::Level;
use sandbox_host::capability::microsandbox::names::VmNames;
use sandbox_host::police;
use sandbox_host::provider::CheckpointProvider;
use sandbox_host::testing::NativeRequest;
use sandbox_host::types::{
    Compute, ComputeStatus, Error, Reference, ResumeRequest, SnapshotIdentity, SuspendRequest,
};
use std::sync::Mutex;

/// What the cases learn, in order.
#[derive(Default)]
struct Learned {
    source: Option<Compute>,
    snapshot: Option<SnapshotIdentity>,
    /// The native requests of the first suspend.
    suspending: Vec<NativeRequest>,
    resumed: Option<Compute>,
}

impl Learned {
    /// The source and the snapshot suspending it captured.
    fn captured(&self) -> Option<(Compute, SnapshotIdentity)> {
        self.source.clone().zip(self.snapshot.clone())
    }

    /// The snapshot and the incarnation resumed from it.
    fn restored(&self) -> Option<(SnapshotIdentity, Compute)> {
        self.snapshot.clone().zip(self.resumed.clone())
    }
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
                let (answer, requests) = h
                    .with_fault(None, async || {
                        h.kind().suspend(request.clone(), h.budget()).await
                    })
                    .await;
                learn().suspending = requests;
                let state = police::suspended(answer.clone(), &request)
                    .map_err(|_| format!("{answer:?}"))?;
                learn().snapshot = state.snapshot;
                Ok(())
            },
        )
        .await;
    runner
        .case(
            "checkpoint.suspend-stops-the-source-at-its-capture",
            "checkpoint",
            Level::Must,
            "After a suspend's capture (its last create-class request) the source runs nothing more: every later request only reads or removes (a kill, never a resume or a graceful stop that lets it run on).",
            async |h| {
                let requests = learn().suspending.clone();
                let capture = requests
                    .iter()
                    .rposition(|r| h.class(r) == Class::Create)
                    .unwrap_or(requests.len());
                let after: Vec<_> = requests[capture..]
                    .iter()
                    .skip(1)
                    .filter(|r| !matches!(h.class(r), Class::Read | Class::Removal))
                    .cloned()
                    .collect();
                ensure(after.is_empty(), || {
                    format!("after the capture: {:?}, in {:?}", actions(&after), actions(&requests))
                })
            },
        )
        .await;
    for (id, sentence, observe_only) in [
        (
            "checkpoint.suspend-observe-only",
            "An observe-only suspend answers the capture its operation made and changes nothing.",
            true,
        ),
        (
            "checkpoint.suspend-again-never-recaptures",
            "A suspend asked again (not observe-only) with the snapshot Core holds answers that snapshot and changes nothing: an artifact its operation captured is observed, never captured again.",
            false,
        ),
    ] {
        runner
            .case(id, "checkpoint", Level::Must, sentence, async |h| {
                let (source, known) = learn().captured().ok_or("no capture to ask about")?;
                let request = suspend(observe_only, source, Some(known.clone()));
                let (answer, requests) = h
                    .with_fault(None, async || {
                        h.kind().suspend(request.clone(), h.budget()).await
                    })
                    .await;
                let mutations: Vec<_> = requests.into_iter().filter(|r| h.is_mutation(r)).collect();
                ensure(mutations.is_empty(), || {
                    format!("acted: {:?}, answered {answer:?}", actions(&mutations))
                })?;
                let state = police::suspended(answer.clone(), &request)
                    .map_err(|_| format!("{answer:?}"))?;
                ensure(state.snapshot.as_ref() == Some(&known), || {
                    format!("{state:?}")
                })
            })
            .await;
    }
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
                refused_unchanged(h, &answer, requests)
            },
        )
        .await;
    runner
        .case(
            "checkpoint.resume-observe-only-never-restores",
            "checkpoint",
            Level::Must,
            "An observe-only resume of a target that was never made answers an error and changes nothing: it never restores.",
            async |h| {
                let snapshot = learn().snapshot.clone().ok_or("no snapshot")?;
                let request = resume_into(h, r, 1, snapshot, true).await?;
                let (answer, requests) = h
                    .with_fault(None, async || h.kind().resume(request.clone(), h.budget()).await)
                    .await;
                refused_unchanged(h, &answer, requests)
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
                let request = resume_into(h, r, 1, snapshot, false).await?;
                let answer = h.kind().resume(request.clone(), h.budget()).await;
                let state =
                    police::resumed(answer.clone(), &request).map_err(|_| format!("{answer:?}"))?;
                learn().resumed = Some(state.compute);
                Ok(())
            },
        )
        .await;
    for (id, sentence, observe_only) in [
        (
            "checkpoint.resume-observe-only",
            "An observe-only resume answers the incarnation its operation made and changes nothing.",
            true,
        ),
        (
            "checkpoint.resume-again-adopts-its-own",
            "A resume asked again (not observe-only) answers the incarnation its operation made, adopted, and creates nothing.",
            false,
        ),
    ] {
        runner
            .case(id, "checkpoint", Level::Must, sentence, async |h| {
                let (snapshot, resumed) = learn().restored().ok_or("nothing resumed")?;
                let request = ResumeRequest {
                    reference: r.clone(),
                    operation_id: "suite-resume-1".into(),
                    snapshot,
                    target: Compute {
                        id: String::new(),
                        ..resumed.clone()
                    },
                    observe_only,
                };
                let (answer, requests) = h
                    .with_fault(None, async || {
                        h.kind().resume(request.clone(), h.budget()).await
                    })
                    .await;
                // Observe-only changes nothing; asked again, a resume may
                // finish its own (label what it restored) but makes nothing.
                let acted: Vec<_> = requests
                    .into_iter()
                    .filter(|r| match observe_only {
                        true => h.is_mutation(r),
                        false => h.class(r) == Class::Create,
                    })
                    .collect();
                ensure(acted.is_empty(), || format!("acted: {:?}", actions(&acted)))?;
                let state =
                    police::resumed(answer.clone(), &request).map_err(|_| format!("{answer:?}"))?;
                ensure(state.compute.id == resumed.id, || format!("{state:?}"))
            })
            .await;
    }
    native_cases(runner, r, learned).await;
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
                removed_once(&answer, &requests)?;
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
            "delete-snapshot removes exactly the named snapshot (one removal): another snapshot of the allocation, captured by another suspend, is still there.",
            async |h| {
                let snapshot = learn().snapshot.clone().ok_or("no snapshot")?;
                // Another snapshot: the first one resumed into generation
                // 2, suspended by another operation.
                let checkpoint = h.kind();
                let resume = resume_into(h, r, 2, snapshot.clone(), false).await?;
                let answer = checkpoint.resume(resume.clone(), h.budget()).await;
                let other_source = police::resumed(answer.clone(), &resume)
                    .map_err(|_| format!("setup resume {answer:?}"))?
                    .compute;
                let other = SuspendRequest {
                    reference: r.clone(),
                    operation_id: "suite-suspend-2".into(),
                    source: other_source,
                    snapshot: None,
                    observe_only: false,
                };
                let answer = checkpoint.suspend(other.clone(), h.budget()).await;
                let kept = police::suspended(answer.clone(), &other)
                    .map_err(|_| format!("setup suspend {answer:?}"))?
                    .snapshot
                    .ok_or("setup suspend captured nothing")?;
                let (answer, requests) = h
                    .with_fault(None, async || {
                        h.kind()
                            .delete_snapshot(r.clone(), snapshot, h.budget())
                            .await
                    })
                    .await;
                removed_once(&answer, &requests)?;
                let still = SuspendRequest {
                    snapshot: Some(kept.clone()),
                    observe_only: true,
                    ..other
                };
                let answer = checkpoint.suspend(still.clone(), h.budget()).await;
                let _ = checkpoint.delete_snapshot(r.clone(), kept.clone(), h.budget()).await;
                let state = police::suspended(answer.clone(), &still)
                    .map_err(|_| format!("the other snapshot: {answer:?}"))?;
                ensure(state.snapshot.as_ref() == Some(&kept), || {
                    format!("the other snapshot: {state:?}")
                })
            },
        )
        .await;
    let source = learn().source.clone();
    if let Some(source) = source {
        let _ = h.kind().kill_compute(r.clone(), source, h.budget()).await;
    }
    h.cleanup(r).await;
    super::checkpoint_faults::run(runner).await;
}

/// A resume of `snapshot` into a new incarnation of `generation`, made by
/// that generation's own operation.
async fn resume_into(
    h: &Harness,
    r: &Reference,
    generation: u64,
    snapshot: SnapshotIdentity,
    observe_only: bool,
) -> Result<ResumeRequest, String> {
    let target = h
        .kind()
        .new_compute(r.clone(), generation, Some(snapshot.clone()), h.budget())
        .await
        .map_err(|e| format!("new-compute {e:?}"))?;
    Ok(ResumeRequest {
        reference: r.clone(),
        operation_id: format!("suite-resume-{generation}"),
        snapshot,
        target,
        observe_only,
    })
}

/// `answer` is an error and `requests` changed nothing.
fn refused_unchanged<T: std::fmt::Debug>(
    h: &Harness,
    answer: &Result<T, Error>,
    requests: Vec<NativeRequest>,
) -> Verdict {
    let mutations: Vec<_> = requests.into_iter().filter(|r| h.is_mutation(r)).collect();
    ensure(answer.is_err() && mutations.is_empty(), || {
        format!("{answer:?}, requests {:?}", actions(&mutations))
    })
}

/// `answer` is a success and `requests` removed exactly one thing.
fn removed_once(answer: &Result<(), Error>, requests: &[NativeRequest]) -> Verdict {
    let removals = requests.iter().filter(|r| r.is_removal()).count();
    ensure(answer.is_ok() && removals == 1, || {
        format!("{answer:?}, requests {:?}", actions(requests))
    })
}

/// Cases that need the native side's own state (the fake microsandbox
/// runtime): an existing target of another ancestry is never adopted, and
/// resources that drifted from the node's policy still answer
/// observations. Elsewhere they are recorded as not run.
async fn native_cases(runner: &mut Runner<'_>, r: &Reference, learned: &Mutex<Learned>) {
    const ANCESTRY: (&str, &str) = (
        "checkpoint.resume-adopts-only-its-ancestry",
        "A resume whose target name holds an incarnation of the allocation restored from another snapshot answers an error and neither changes nor removes it.",
    );
    const DRIFT: (&str, &str) = (
        "checkpoint.drift-does-not-block-observation",
        "An incarnation whose resources drifted from the node's policy is still observed (get-compute answers it, not bootstrapped); killing it and deleting its snapshot are not blocked.",
    );
    let h = runner.harness;
    let Engine::Microsandbox(vms) = &h.engine else {
        for (id, sentence) in [ANCESTRY, DRIFT] {
            let why = "the native side cannot be seeded or changed here".to_string();
            runner.not_run(id, "checkpoint", Level::Must, sentence, why);
        }
        return;
    };
    let learn = || learned.lock().unwrap_or_else(|p| p.into_inner());
    let names = VmNames::of(INSTALLATION, r);
    runner
        .case(
            ANCESTRY.0,
            "checkpoint",
            Level::Must,
            ANCESTRY.1,
            async |h| {
                let snapshot = learn().snapshot.clone().ok_or("no snapshot")?;
                let name = names.vm(3);
                use sandbox_host::contract::labels;
                let labels = [
                    (labels::INSTALLATION, INSTALLATION),
                    (labels::TENANT, r.tenant_id.as_str()),
                    (labels::ENVIRONMENT, r.environment_id.as_str()),
                    (labels::ALLOCATION, r.allocation_id.as_str()),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
                vms.runtime
                    .seed_vm(&name, labels)
                    .and_then(|()| {
                        vms.runtime.drift(&name, |vm| {
                            vm.snapshot_parent = Some("snap_of_another_suspend".into())
                        })
                    })
                    .map_err(|e| format!("seeding: {e}"))?;
                let before = vms
                    .runtime
                    .state()
                    .map_err(|e| e.to_string())?
                    .vms
                    .get(&name)
                    .cloned();
                let checkpoint = h.kind();
                let request = resume_into(h, r, 3, snapshot, false).await?;
                let (answer, requests) = h
                    .with_fault(None, async || {
                        checkpoint.resume(request.clone(), h.budget()).await
                    })
                    .await;
                let after = vms
                    .runtime
                    .state()
                    .map_err(|e| e.to_string())?
                    .vms
                    .get(&name)
                    .cloned();
                let _ = vms.runtime.change(|state| {
                    state.vms.remove(&name);
                });
                refused_unchanged(h, &answer, requests)?;
                ensure(after == before, || "the other incarnation changed".into())
            },
        )
        .await;
    runner
        .case(DRIFT.0, "checkpoint", Level::Must, DRIFT.1, async |h| {
            let resumed = learn().resumed.clone().ok_or("nothing resumed")?;
            vms.runtime
                .drift(&resumed.name, |vm| vm.memory_mib += 256)
                .map_err(|e| format!("drifting: {e}"))?;
            let answer = h
                .kind()
                .get_compute(r.clone(), resumed.clone(), h.budget())
                .await;
            let state = police::compute_state(
                sandbox_host::contract::Operation::GetCompute,
                answer.clone(),
                &resumed,
            )
            .map_err(|_| format!("{answer:?}"))?;
            ensure(!state.bootstrap_complete, || format!("{state:?}"))
        })
        .await;
}
