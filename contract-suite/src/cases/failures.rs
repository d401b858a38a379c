//! Clause `failure-matrix`: for create, get-info, renew and kill, a fault
//! at each native request of the legitimate sequence (failure before
//! dispatch, lost response, caller cancelled after dispatch, foreign
//! ownership) makes the operation fail — never `unsupported`, never with
//! invented settlement or a foreign reference — and the requests made are
//! exactly the legitimate sequence up to the fault: no replay, no fallback,
//! no implicit cleanup. Kill with failing cleanup fails and retries nothing.

use super::{Runner, Verdict, actions, ensure, is_mutation};
use crate::harness::{Harness, Mutation};
use crate::recorder::{Matching, Plan};
use crate::report::Level;
use sandbox_host::testing::{Fault, NativeRequest};
use sandbox_host::types::{Error, Failure, Info, Reference};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operation {
    Create,
    GetInfo,
    Renew,
    Kill,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Operation::Create => "create",
            Operation::GetInfo => "get-info",
            Operation::Renew => "renew",
            Operation::Kill => "kill",
        }
    }

    /// Runs the operation; a read's answer is shaped like a mutation's.
    async fn call(self, h: &Harness, reference: &Reference) -> Mutation {
        match self {
            Operation::Create => h.create(reference).await,
            Operation::GetInfo => h.get_info(reference).await.map_err(Failure::from),
            Operation::Renew => h.renew(reference).await,
            Operation::Kill => h.kill(reference).await,
        }
    }
}

fn fault_name(fault: Fault) -> &'static str {
    match fault {
        Fault::FailBeforeDispatch => "transport-failure",
        Fault::LoseResponse => "lost-response",
        Fault::CancelAfterDispatch => "cancelled-after-dispatch",
        Fault::ForeignOwnership => "foreign-ownership",
        Fault::FailCleanup => "cleanup-failure",
    }
}

/// Same actions in the same order (two allocations have different names).
fn same(left: &[NativeRequest], right: &[NativeRequest]) -> bool {
    left.len() == right.len() && left.iter().zip(right).all(|(a, b)| a.action == b.action)
}

/// The checks every faulted operation must pass.
fn judge(answer: &Mutation, reference: &Reference) -> Verdict {
    match answer {
        Ok(info) => Err(format!("reported success: {info:?}")),
        Err(Failure { error, info }) => {
            ensure(!matches!(error, Error::Unsupported(_)), || {
                format!("answered {error:?}")
            })?;
            match info {
                None => Ok(()),
                Some(info) => {
                    ensure(info.reference == *reference, || {
                        format!("foreign reference in {info:?}")
                    })?;
                    ensure(!info.create_settled && !info.bootstrap_complete, || {
                        format!("invented settlement {info:?}")
                    })
                }
            }
        }
    }
}

/// The legitimate sequence of `operation` on a fresh (or created) allocation.
/// Each request comes with whether its answer showed a resource as this
/// installation's (where a foreign-ownership fault has something to act on).
async fn baseline(h: &Harness, operation: Operation) -> Result<Vec<(NativeRequest, bool)>, String> {
    let reference = h.allocation(&format!("baseline-{}", operation.name()));
    if operation != Operation::Create {
        h.create(&reference)
            .await
            .map_err(|f| format!("setup create: {f:?}"))?;
    }
    let mark = h.recorder.mark();
    let (answer, requests) = h
        .with_fault(None, async || operation.call(h, &reference).await)
        .await;
    let shown = h.recorder.shown_since(mark);
    h.cleanup(&reference).await;
    match answer {
        Ok(Info { .. }) => Ok(requests.into_iter().zip(shown).collect()),
        other => Err(format!("{} without faults: {other:?}", operation.name())),
    }
}

pub(super) async fn run(runner: &mut Runner<'_>) {
    for operation in [
        Operation::Create,
        Operation::GetInfo,
        Operation::Renew,
        Operation::Kill,
    ] {
        let (legitimate, shown): (Vec<NativeRequest>, Vec<bool>) =
            match baseline(runner.harness, operation).await {
                Ok(requests) => requests.into_iter().unzip(),
                Err(observed) => {
                    let id = format!("failure.{}.baseline", operation.name());
                    runner.failed(
                        &id,
                        "failure-matrix",
                        "The operation succeeds without faults.",
                        observed,
                    );
                    continue;
                }
            };
        for fault in [
            Fault::FailBeforeDispatch,
            Fault::LoseResponse,
            Fault::CancelAfterDispatch,
            Fault::ForeignOwnership,
        ] {
            for (index, request) in legitimate.iter().enumerate() {
                let applies = match fault {
                    // Only a resource that exists can appear foreign.
                    Fault::ForeignOwnership => shown[index],
                    Fault::CancelAfterDispatch => is_mutation(request) || index == 0,
                    _ => true,
                };
                if !applies {
                    continue;
                }
                let k = index + 1;
                let id = format!("failure.{}.{}.{k}", operation.name(), fault_name(fault));
                let sentence = format!(
                    "With {} at native request {k} ({}), {} fails without unsupported, settlement or foreign reference, and sends only the legitimate requests up to it.",
                    fault_name(fault),
                    request.action,
                    operation.name()
                );
                let expected = &legitimate[..k];
                runner
                    .case(id, "failure-matrix", Level::Must, sentence, async |h| {
                        let reference = h.allocation(&format!(
                            "{}-{}-{k}",
                            operation.name(),
                            fault_name(fault)
                        ));
                        if operation != Operation::Create {
                            setup(h, &reference).await?;
                        }
                        let plan = Plan {
                            matching: Matching::Any,
                            nth: k,
                            fault,
                        };
                        let (answer, requests) = h
                            .with_fault(Some(plan), async || operation.call(h, &reference).await)
                            .await;
                        h.cleanup(&reference).await;
                        judge(&answer, &reference)?;
                        if fault == Fault::ForeignOwnership {
                            // The host removing a container it just created
                            // that failed verification is not the component's
                            // mutation, and never touches the foreign resource.
                            let after: Vec<&NativeRequest> = requests
                                .iter()
                                .skip(k)
                                .filter(|r| is_mutation(r) && !r.host_cleanup)
                                .collect();
                            ensure(
                                requests.len() >= k && same(&requests[..k], expected),
                                || format!("requests {:?}", actions(&requests)),
                            )?;
                            ensure(after.is_empty(), || {
                                format!(
                                    "mutated after seeing a foreign resource: {:?}",
                                    actions(&requests)
                                )
                            })
                        } else {
                            // After the fault a component may record what it
                            // learnt in its own receipts (host-local, no
                            // vendor effect); it sends nothing else.
                            let sent: Vec<NativeRequest> = requests
                                .iter()
                                .enumerate()
                                .filter(|(index, request)| {
                                    *index < k || request.action.capability() != "receipts"
                                })
                                .map(|(_, request)| request.clone())
                                .collect();
                            ensure(same(&sent, expected), || {
                                format!(
                                    "requests {:?}, legitimate {:?}",
                                    actions(&requests),
                                    actions(expected)
                                )
                            })
                        }
                    })
                    .await;
            }
        }
    }
    runner
        .case(
            "failure.kill.cleanup-failure",
            "failure-matrix",
            Level::Must,
            "When cleanup fails, Kill fails and retries no removal.",
            async |h| {
                let reference = h.allocation("kill-cleanup");
                setup(h, &reference).await?;
                let plan = Plan {
                    matching: Matching::Removals,
                    nth: 0,
                    fault: Fault::FailCleanup,
                };
                let (answer, requests) = h
                    .with_fault(Some(plan), async || h.kill(&reference).await)
                    .await;
                h.cleanup(&reference).await;
                judge(&answer, &reference)?;
                let removals: Vec<String> = requests
                    .iter()
                    .filter(|r| r.is_removal())
                    .map(|r| r.target.clone())
                    .collect();
                let mut unique = removals.clone();
                unique.sort();
                unique.dedup();
                ensure(unique.len() == removals.len(), || {
                    format!("removal retried: {removals:?}")
                })
            },
        )
        .await;
}

/// Creates `reference` without faults, for the operations that need it.
async fn setup(h: &Harness, reference: &Reference) -> Verdict {
    match h.create(reference).await {
        Ok(_) => Ok(()),
        other => Err(format!("setup create failed: {other:?}")),
    }
}
