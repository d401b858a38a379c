//! The failure matrix of the checkpoint operations, part of clause
//! `checkpoint`: for get-compute, run-command-compute, suspend, resume,
//! resume-compute, kill-compute and delete-snapshot (initial and
//! new-compute send nothing), a fault at each native request of the legitimate
//! sequence (failure before dispatch, lost response, caller cancelled
//! after dispatch, foreign ownership) makes the operation fail — never
//! `unsupported`, never a success it cannot know — and the requests made
//! are exactly the legitimate sequence up to the fault: nothing replayed,
//! no fallback (no recapture, no second restore, no cold start).

use super::failures::{cells, each_mutation_once, fault_name, only_legitimate};
use super::{Runner, Verdict};
use crate::harness::Harness;
use crate::profile::Classifier;
use crate::recorder::{Matching, Plan};
use crate::report::Level;
use sandbox_host::police;
use sandbox_host::provider::CheckpointProvider;
use sandbox_host::testing::{Fault, NativeRequest};
use sandbox_host::types::{
    Command, Compute, Error, Reference, ResumeRequest, SnapshotIdentity, SuspendRequest,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operation {
    GetCompute,
    RunCommandCompute,
    Suspend,
    Resume,
    ResumeCompute,
    KillCompute,
    DeleteSnapshot,
}

impl Operation {
    const ALL: [Operation; 7] = [
        Operation::GetCompute,
        Operation::RunCommandCompute,
        Operation::Suspend,
        Operation::Resume,
        Operation::ResumeCompute,
        Operation::KillCompute,
        Operation::DeleteSnapshot,
    ];

    fn name(self) -> &'static str {
        match self {
            Operation::GetCompute => "get-compute",
            Operation::RunCommandCompute => "run-command-compute",
            Operation::Suspend => "suspend",
            Operation::Resume => "resume",
            Operation::ResumeCompute => "resume-compute",
            Operation::KillCompute => "kill-compute",
            Operation::DeleteSnapshot => "delete-snapshot",
        }
    }

    /// Whether the operation needs a snapshot before it runs.
    fn needs_snapshot(self) -> bool {
        matches!(self, Operation::Resume | Operation::DeleteSnapshot)
    }
}

/// What an operation acts on: the first incarnation and, once suspended,
/// its snapshot.
struct Made {
    reference: Reference,
    source: Compute,
    snapshot: Option<SnapshotIdentity>,
}

fn suspend_request(made: &Made, observe_only: bool) -> SuspendRequest {
    SuspendRequest {
        reference: made.reference.clone(),
        operation_id: "suite-fault-suspend".into(),
        source: made.source.clone(),
        snapshot: None,
        observe_only,
    }
}

/// Creates an allocation and, for operations that need one, suspends it.
async fn make(h: &Harness, operation: Operation, label: &str) -> Result<Made, String> {
    let reference = h.allocation(label);
    h.create(&reference)
        .await
        .map_err(|f| format!("setup create: {f:?}"))?;
    let checkpoint = h.kind();
    let initial = checkpoint
        .initial(reference.clone(), h.budget())
        .await
        .map_err(|e| format!("setup initial: {e:?}"))?;
    let source = checkpoint
        .get_compute(reference.clone(), initial, h.budget())
        .await
        .map_err(|e| format!("setup get-compute: {e:?}"))?
        .compute;
    let mut made = Made {
        reference,
        source,
        snapshot: None,
    };
    if operation.needs_snapshot() {
        let request = suspend_request(&made, false);
        let answer = checkpoint.suspend(request.clone(), h.budget()).await;
        made.snapshot = police::suspended(answer.clone(), &request)
            .map_err(|_| format!("setup suspend: {answer:?}"))?
            .snapshot;
    }
    Ok(made)
}

/// The target of the resume.
async fn target(h: &Harness, made: &Made) -> Result<Compute, Error> {
    h.kind()
        .new_compute(made.reference.clone(), 1, made.snapshot.clone(), h.budget())
        .await
}

/// Runs the operation; `Ok` when it answered a success.
async fn call(h: &Harness, operation: Operation, made: &Made) -> Result<(), String> {
    let checkpoint = h.kind();
    let (reference, budget) = (made.reference.clone(), h.budget());
    let answer = match operation {
        Operation::GetCompute => {
            let answer = checkpoint
                .get_compute(reference, made.source.clone(), budget)
                .await;
            police::compute_state(
                sandbox_host::contract::Operation::GetCompute,
                answer,
                &made.source,
            )
            .map(drop)
        }
        Operation::RunCommandCompute => {
            let command = Command {
                args: vec!["echo".into(), "checkpoint".into()],
                directory: None,
                stdin: None,
            };
            match checkpoint
                .run_command_compute(reference, made.source.clone(), command, budget)
                .await
            {
                Ok(result) if result.exit_code == 0 => Ok(()),
                Ok(result) => return Err(format!("exit {}", result.exit_code)),
                Err(error) => Err(error),
            }
        }
        Operation::Suspend => {
            let request = suspend_request(made, false);
            let answer = checkpoint.suspend(request.clone(), budget).await;
            police::suspended(answer, &request).map(drop)
        }
        Operation::Resume => {
            let snapshot = made.snapshot.clone().ok_or("no snapshot")?;
            let target = target(h, made)
                .await
                .map_err(|e| format!("new-compute {e:?}"))?;
            let request = ResumeRequest {
                reference,
                operation_id: "suite-fault-resume".into(),
                snapshot,
                target,
                observe_only: false,
            };
            let answer = checkpoint.resume(request.clone(), budget).await;
            police::resumed(answer, &request).map(drop)
        }
        Operation::ResumeCompute => {
            let answer = checkpoint
                .resume_compute(reference, made.source.clone(), budget)
                .await;
            police::thawed(answer, &made.source).map(drop)
        }
        Operation::KillCompute => {
            checkpoint
                .kill_compute(reference, made.source.clone(), budget)
                .await
        }
        Operation::DeleteSnapshot => {
            let snapshot = made.snapshot.clone().ok_or("no snapshot")?;
            checkpoint
                .delete_snapshot(reference, snapshot, budget)
                .await
        }
    };
    match answer {
        Ok(()) => Ok(()),
        Err(Error::Unsupported(_)) => Err("unsupported".into()),
        Err(error) => Err(format!("{error:?}")),
    }
}

/// Removes whatever the operation's setup and run may have left.
async fn clean(h: &Harness, made: &Made) {
    let checkpoint = h.kind();
    let (reference, budget) = (made.reference.clone(), h.budget());
    // Kill names an incarnation by its native id: find the target's first.
    if made.snapshot.is_some()
        && let Ok(target) = target(h, made).await
        && let Ok(found) = checkpoint
            .get_compute(reference.clone(), target, budget)
            .await
    {
        let _ = checkpoint
            .kill_compute(reference.clone(), found.compute, budget)
            .await;
    }
    let _ = checkpoint
        .kill_compute(reference.clone(), made.source.clone(), budget)
        .await;
    if let Some(snapshot) = &made.snapshot {
        let _ = checkpoint
            .delete_snapshot(reference.clone(), snapshot.clone(), budget)
            .await;
    }
    // A suspend under a fault may have captured without answering.
    let captured = SuspendRequest {
        observe_only: true,
        ..suspend_request(made, true)
    };
    if let Ok(state) = checkpoint.suspend(captured, budget).await
        && let Some(snapshot) = state.snapshot
    {
        let _ = checkpoint
            .delete_snapshot(reference, snapshot, budget)
            .await;
    }
    h.cleanup(&made.reference).await;
}

/// The legitimate sequence, with whether each answer showed a resource as
/// this installation's.
async fn baseline(h: &Harness, operation: Operation) -> Result<Vec<(NativeRequest, bool)>, String> {
    let made = make(
        h,
        operation,
        &format!("checkpoint-baseline-{}", operation.name()),
    )
    .await?;
    let mark = h.recorder.mark();
    let (answer, requests) = h
        .with_fault(None, async || call(h, operation, &made).await)
        .await;
    let shown = h.recorder.shown_since(mark);
    clean(h, &made).await;
    answer.map_err(|observed| format!("{} without faults: {observed}", operation.name()))?;
    Ok(requests.into_iter().zip(shown).collect())
}

pub(super) async fn run(runner: &mut Runner<'_>) {
    for operation in Operation::ALL {
        let h = runner.harness;
        let (legitimate, shown): (Vec<NativeRequest>, Vec<bool>) =
            match baseline(h, operation).await {
                Ok(requests) => requests.into_iter().unzip(),
                Err(observed) => {
                    let id = format!("checkpoint.failure.{}.baseline", operation.name());
                    runner.failed(
                        &id,
                        "checkpoint",
                        "The operation succeeds without faults.",
                        observed,
                    );
                    continue;
                }
            };
        runner
            .case(
                format!("checkpoint.failure.{}.each-mutation-once", operation.name()),
                "checkpoint",
                Level::Must,
                format!(
                    "Without faults, {} sends each mutation once (commands aside).",
                    operation.name()
                ),
                async |h| each_mutation_once(h, &legitimate),
            )
            .await;
        for (fault, index) in cells(h, &legitimate, &shown) {
            let request = &legitimate[index];
            let k = index + 1;
            let id = format!(
                "checkpoint.failure.{}.{}.{k}",
                operation.name(),
                fault_name(fault)
            );
            let sentence = format!(
                "With {} at native request {k} ({}), {} fails without unsupported and sends only the legitimate requests up to it.",
                fault_name(fault),
                request.action,
                operation.name()
            );
            let expected = &legitimate[..k];
            runner
                .case(id, "checkpoint", Level::Must, sentence, async |h| {
                    faulted(h, operation, fault, k, expected).await
                })
                .await;
        }
    }
}

/// One cell of the matrix.
async fn faulted(
    h: &Harness,
    operation: Operation,
    fault: Fault,
    k: usize,
    expected: &[NativeRequest],
) -> Verdict {
    let label = format!("checkpoint-{}-{}-{k}", operation.name(), fault_name(fault));
    let made = make(h, operation, &label).await?;
    let plan = Plan {
        matching: Matching::Any,
        nth: k,
        fault,
    };
    let (answer, requests) = h
        .with_fault(Some(plan), async || call(h, operation, &made).await)
        .await;
    clean(h, &made).await;
    match answer {
        Ok(()) => return Err("reported success".into()),
        Err(observed) if observed == "unsupported" => return Err(observed),
        Err(_) => {}
    }
    only_legitimate(h, fault, k, &requests, expected, |request| {
        Classifier::is_vendor(request) && !request.host_cleanup
    })
}
