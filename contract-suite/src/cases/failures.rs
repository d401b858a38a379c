//! Clause `failure-matrix`: for create, get-info, renew and kill, a fault
//! at each native request of the legitimate sequence (failure before
//! dispatch, lost response, caller cancelled after dispatch, foreign
//! ownership) makes the operation fail — never `unsupported`, never with
//! invented settlement or a foreign reference — and the requests made are
//! exactly the legitimate sequence up to the fault: no replay, no fallback,
//! no implicit cleanup. Kill with failing cleanup fails and retries nothing.

use super::{Runner, Verdict, actions, ensure};
use crate::harness::{Harness, Mutation};
use crate::profile::{Class, Classifier};
use crate::recorder::{Matching, Plan};
use crate::report::Level;
use sandbox_host::testing::{Fault, NativeRequest};
use sandbox_host::types::{Error, Failure, Info, Reference};
use std::collections::HashMap;

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

pub(super) fn fault_name(fault: Fault) -> &'static str {
    match fault {
        Fault::FailBeforeDispatch => "transport-failure",
        Fault::LoseResponse => "lost-response",
        Fault::CancelAfterDispatch => "cancelled-after-dispatch",
        Fault::ForeignOwnership => "foreign-ownership",
        Fault::FailCleanup => "cleanup-failure",
    }
}

/// The same requests in the same order: equal actions, and targets equal
/// up to a consistent renaming of their `/`-separated parts (two
/// allocations have different names and ids, but a request sent to the
/// same resource twice stays so).
pub(super) fn same(left: &[NativeRequest], right: &[NativeRequest]) -> bool {
    let mut forward: HashMap<&str, &str> = HashMap::new();
    let mut backward: HashMap<&str, &str> = HashMap::new();
    left.len() == right.len()
        && left.iter().zip(right).all(|(a, b)| {
            let (parts_a, parts_b): (Vec<&str>, Vec<&str>) =
                (a.target.split('/').collect(), b.target.split('/').collect());
            a.action == b.action
                && parts_a.len() == parts_b.len()
                && parts_a.iter().zip(&parts_b).all(|(x, y)| {
                    *forward.entry(x).or_insert(y) == *y && *backward.entry(y).or_insert(x) == *x
                })
        })
}

/// Vendor mutations (commands aside) sent more than once with the same
/// action and target in one operation: a replay within the sequence.
fn repeated(h: &Harness, requests: &[NativeRequest]) -> Vec<String> {
    let mut seen: Vec<&NativeRequest> = Vec::new();
    let mut twice = Vec::new();
    for request in requests {
        let class = h.class(request);
        let command = matches!(class, Class::Exec | Class::ExecInput);
        if !class.is_mutation() || command || !Classifier::is_vendor(request) {
            continue;
        }
        if seen
            .iter()
            .any(|r| r.action == request.action && r.target == request.target)
        {
            twice.push(format!("{} {}", request.action, request.target));
        }
        seen.push(request);
    }
    twice
}

/// The legitimate sequence sends each vendor mutation once ([`repeated`]).
pub(super) fn each_mutation_once(h: &Harness, legitimate: &[NativeRequest]) -> Verdict {
    let twice = repeated(h, legitimate);
    ensure(twice.is_empty(), || {
        format!("sent again: {twice:?} in {:?}", actions(legitimate))
    })
}

/// After a fault at native request `k`, the requests are the legitimate
/// ones up to it; later ones count when `counts` (the vendor's). After a
/// foreign owner is seen, no counted mutation follows (the host's cleanup
/// of what failed verification aside).
pub(super) fn only_legitimate(
    h: &Harness,
    fault: Fault,
    k: usize,
    requests: &[NativeRequest],
    expected: &[NativeRequest],
    counts: impl Fn(&NativeRequest) -> bool,
) -> Verdict {
    if fault == Fault::ForeignOwnership {
        let after: Vec<&NativeRequest> = requests
            .iter()
            .skip(k)
            .filter(|r| h.is_mutation(r) && !r.host_cleanup && counts(r))
            .collect();
        ensure(
            requests.len() >= k && same(&requests[..k], expected),
            || format!("requests {:?}", actions(requests)),
        )?;
        return ensure(after.is_empty(), || {
            format!(
                "mutated after seeing a foreign resource: {:?}",
                actions(requests)
            )
        });
    }
    let sent: Vec<NativeRequest> = requests
        .iter()
        .enumerate()
        .filter(|(index, request)| *index < k || counts(request))
        .map(|(_, request)| request.clone())
        .collect();
    ensure(same(&sent, expected), || {
        format!(
            "requests {:?}, legitimate {:?}",
            actions(requests),
            actions(expected)
        )
    })
}

/// The cells of the matrix over a legitimate sequence, in order: each
/// fault at each request it applies to (a fault and the request's index).
/// A cancellation only after a mutation or the first request; a foreign
/// owner only where an answer showed a resource as this installation's.
pub(super) fn cells(
    h: &Harness,
    legitimate: &[NativeRequest],
    shown: &[bool],
) -> Vec<(Fault, usize)> {
    let faults = [
        Fault::FailBeforeDispatch,
        Fault::LoseResponse,
        Fault::CancelAfterDispatch,
        Fault::ForeignOwnership,
    ];
    faults
        .into_iter()
        .flat_map(|fault| {
            legitimate
                .iter()
                .enumerate()
                .filter(move |(index, request)| match fault {
                    Fault::ForeignOwnership => shown[*index],
                    Fault::CancelAfterDispatch => h.is_mutation(request) || *index == 0,
                    _ => true,
                })
                .map(move |(index, _)| (fault, index))
        })
        .collect()
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
        let h = runner.harness;
        let (legitimate, shown): (Vec<NativeRequest>, Vec<bool>) =
            match baseline(h, operation).await {
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
        let sentence = format!(
            "Without faults, {} sends each vendor mutation once (commands aside): none twice to the same target.",
            operation.name()
        );
        runner
            .case(
                format!("failure.{}.each-mutation-once", operation.name()),
                "failure-matrix",
                Level::Must,
                sentence,
                async |h| each_mutation_once(h, &legitimate),
            )
            .await;
        for (fault, index) in cells(h, &legitimate, &shown) {
            let request = &legitimate[index];
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
                    let reference =
                        h.allocation(&format!("{}-{}-{k}", operation.name(), fault_name(fault)));
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
                    // A receipt is host-local bookkeeping, no vendor effect:
                    // after the fault a component may record what it learnt.
                    only_legitimate(h, fault, k, &requests, expected, Classifier::is_vendor)
                })
                .await;
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
                // The engine answers a failed removal; over HTTP a removal
                // may be any method, so it is failed before dispatch.
                let fault = match h.engine.socket() {
                    Some(_) => Fault::FailCleanup,
                    None => Fault::FailBeforeDispatch,
                };
                let plan = Plan {
                    matching: Matching::Class(Class::Removal),
                    nth: 0,
                    fault,
                };
                let (answer, requests) = h
                    .with_fault(Some(plan), async || h.kill(&reference).await)
                    .await;
                h.cleanup(&reference).await;
                judge(&answer, &reference)?;
                let removals: Vec<String> = requests
                    .iter()
                    .filter(|r| h.class(r) == Class::Removal)
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
