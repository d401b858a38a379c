//! What Core accepts from a provider as an answer, the same whether the
//! kind ran in this process or on a node: an answer that claims another
//! allocation, evidence the operation cannot have, `unsupported` from an
//! operation declared supported, or output over the bound is not evidence,
//! and becomes the operation's unknown outcome. A failed mutation keeps its
//! info only when that info is settlement evidence for the exact reference
//! asked about, from an operation that may claim settlement.

use crate::types::{CommandResult, Error, Failure, Info, LifecycleState, Reference};
use oac_contract::Operation;
use oac_contract::bounds::MAX_OUTPUT_BYTES;

/// The error an unknown outcome of `operation` is reported as.
pub fn unknown(operation: Operation) -> Error {
    Error::unknown(operation.unknown())
}

/// Whether an answer of `operation` may claim `create-settled`. In contract
/// 0.2 only Create's own answer can: it is the original Create, and when it
/// answers it has ended. An observation (GetInfo, Renew) or a Kill cannot
/// know that a Create it did not run can no longer change resources.
pub fn may_claim_settlement(operation: Operation) -> bool {
    operation == Operation::Create
}

/// True when `info` is settlement evidence about exactly `allocation`:
/// bound to it, `create_settled`, and either settled absence with no
/// provider id, or a provider id for compute that is present.
pub fn is_settlement_evidence(info: &Info, allocation: &Reference) -> bool {
    let bound = info.reference == *allocation && info.create_settled;
    bound && names_its_compute(info)
}

/// A present state names a native id; an absent one names none.
fn names_its_compute(info: &Info) -> bool {
    match (info.state, &info.provider_id) {
        (LifecycleState::Absent, None) => true,
        (LifecycleState::Absent, Some(_)) | (_, None) => false,
        (_, Some(_)) => true,
    }
}

/// True when `info` may be the success of `operation` about `allocation`:
/// bound to it, claiming settlement only where the operation may, and
/// - Kill: confirmed absence (it names the removed compute or nothing);
/// - otherwise: present compute with its native id, or an exact
///   settled-absence receipt.
pub fn is_consistent_success(operation: Operation, info: &Info, allocation: &Reference) -> bool {
    if info.reference != *allocation || (info.create_settled && !may_claim_settlement(operation)) {
        return false;
    }
    match (operation, info.state) {
        (Operation::Kill, state) => state == LifecycleState::Absent,
        (_, LifecycleState::Absent) => info.create_settled && info.provider_id.is_none(),
        _ => names_its_compute(info),
    }
}

/// `unsupported` from an operation declared supported contradicts the
/// declaration: the outcome is unknown.
pub fn answer<T>(operation: Operation, answer: Result<T, Error>) -> Result<T, Error> {
    match answer {
        Err(Error::Unsupported(_)) => Err(unknown(operation)),
        other => other,
    }
}

/// `get-info`: a success that is not [consistent](is_consistent_success)
/// (another allocation's, claiming settlement, present without an id) is
/// unknown.
pub fn read(answer: Result<Info, Error>, allocation: &Reference) -> Result<Info, Error> {
    match self::answer(Operation::GetInfo, answer) {
        Ok(info) if !is_consistent_success(Operation::GetInfo, &info, allocation) => {
            Err(Error::ComputeUnconfirmed)
        }
        other => other,
    }
}

/// `create`, `renew`, `kill`: a success that is not
/// [consistent](is_consistent_success) is unknown; a failure keeps only
/// exact-reference settlement evidence, and only from Create.
#[allow(clippy::result_large_err)] // `Failure` is the contract's shape
pub fn mutation(
    operation: Operation,
    answer: Result<Info, Failure>,
    allocation: &Reference,
) -> Result<Info, Failure> {
    match answer {
        Ok(info) if !is_consistent_success(operation, &info, allocation) => {
            Err(Error::ComputeUnconfirmed.into())
        }
        Ok(info) => Ok(info),
        Err(Failure {
            error: Error::Unsupported(_),
            ..
        }) => Err(Error::ComputeUnconfirmed.into()),
        Err(Failure { error, info }) => Err(Failure {
            error,
            info: info.filter(|info| {
                may_claim_settlement(operation) && is_settlement_evidence(info, allocation)
            }),
        }),
    }
}

/// `run-command`, `run-command-compute`: output over the bound is never a
/// (truncated) success, and an unknown compute outcome is an unknown
/// command outcome.
pub fn command(answer: Result<CommandResult, Error>) -> Result<CommandResult, Error> {
    let limit = MAX_OUTPUT_BYTES as usize;
    match answer {
        Ok(result) if result.stdout.len() > limit || result.stderr.len() > limit => {
            Err(Error::CommandUnconfirmed)
        }
        Err(Error::Unsupported(_) | Error::ComputeUnconfirmed) => Err(Error::CommandUnconfirmed),
        other => other,
    }
}

/// Observations prove nothing either way: anything unknown is
/// `observation-unavailable`.
pub fn observation<T>(answer: Result<T, Error>) -> Result<T, Error> {
    match answer {
        Err(Error::Unsupported(_) | Error::ComputeUnconfirmed) => {
            Err(Error::ObservationUnavailable)
        }
        other => other,
    }
}

/// A batch observation must answer once per target, in order, and each
/// target's answer is an observation like any other.
pub fn batch<T>(
    answer: Result<Vec<Result<T, Error>>, Error>,
    targets: usize,
) -> Result<Vec<Result<T, Error>>, Error> {
    match observation(answer) {
        Ok(samples) if samples.len() != targets => Err(Error::ObservationUnavailable),
        Ok(samples) => Ok(samples.into_iter().map(observation).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(allocation: &str) -> Reference {
        Reference {
            tenant_id: "t".into(),
            environment_id: "e".into(),
            allocation_id: allocation.into(),
        }
    }

    fn info(allocation: &str, state: LifecycleState, id: Option<&str>, settled: bool) -> Info {
        Info {
            reference: reference(allocation),
            provider_id: id.map(Into::into),
            state,
            bootstrap_complete: false,
            create_settled: settled,
        }
    }

    #[test]
    fn only_exact_reference_settlement_evidence_is_kept() {
        let own = reference("a");
        let kept = |info: Info| {
            let failure = Failure {
                error: Error::Exists,
                info: Some(info.clone()),
            };
            mutation(Operation::Create, Err(failure), &own)
                .expect_err("a failure")
                .info
                .is_some()
        };
        assert!(kept(info("a", LifecycleState::Absent, None, true)));
        assert!(kept(info("a", LifecycleState::Running, Some("id"), true)));
        assert!(
            !kept(info("b", LifecycleState::Absent, None, true)),
            "foreign"
        );
        assert!(
            !kept(info("a", LifecycleState::Absent, None, false)),
            "unsettled"
        );
        assert!(
            !kept(info("a", LifecycleState::Absent, Some("id"), true)),
            "absent with an id"
        );
        assert!(
            !kept(info("a", LifecycleState::Running, None, true)),
            "present without an id"
        );
    }

    #[test]
    fn answers_about_another_allocation_are_not_evidence() {
        let running = info("b", LifecycleState::Running, Some("id"), true);
        assert_eq!(
            read(Ok(running.clone()), &reference("a")),
            Err(Error::ComputeUnconfirmed)
        );
        assert_eq!(
            mutation(Operation::Renew, Ok(running), &reference("a")),
            Err(Error::ComputeUnconfirmed.into())
        );
    }

    #[test]
    fn only_create_may_claim_settlement() {
        let own = reference("a");
        let running = |settled| info("a", LifecycleState::Running, Some("id"), settled);
        assert_eq!(
            mutation(Operation::Create, Ok(running(true)), &own),
            Ok(running(true))
        );
        assert_eq!(read(Ok(running(false)), &own), Ok(running(false)));
        assert_eq!(
            read(Ok(running(true)), &own),
            Err(Error::ComputeUnconfirmed)
        );
        for operation in [Operation::Renew, Operation::Kill] {
            let settled_absence = info("a", LifecycleState::Absent, None, true);
            assert_eq!(
                mutation(operation, Ok(settled_absence.clone()), &own),
                Err(Error::ComputeUnconfirmed.into()),
                "{operation:?}"
            );
            let failure = Failure {
                error: Error::ComputeUnconfirmed,
                info: Some(settled_absence),
            };
            assert_eq!(
                mutation(operation, Err(failure), &own),
                Err(Error::ComputeUnconfirmed.into()),
                "{operation:?}"
            );
        }
    }

    #[test]
    fn a_successful_info_names_its_compute() {
        let own = reference("a");
        // Present compute without an id, or absence that is not a receipt.
        for bad in [
            info("a", LifecycleState::Running, None, false),
            info("a", LifecycleState::Paused, None, false),
            info("a", LifecycleState::Absent, None, false),
            info("a", LifecycleState::Absent, Some("id"), false),
        ] {
            assert_eq!(
                read(Ok(bad.clone()), &own),
                Err(Error::ComputeUnconfirmed),
                "{bad:?}"
            );
        }
        let receipt = info("a", LifecycleState::Absent, None, true);
        assert_eq!(
            mutation(Operation::Create, Ok(receipt.clone()), &own),
            Ok(receipt)
        );
        // Kill's success is absence, proved or not; never present compute.
        let gone = info("a", LifecycleState::Absent, None, false);
        assert_eq!(mutation(Operation::Kill, Ok(gone.clone()), &own), Ok(gone));
        let removed = info("a", LifecycleState::Absent, Some("id"), false);
        assert_eq!(
            mutation(Operation::Kill, Ok(removed.clone()), &own),
            Ok(removed)
        );
        assert_eq!(
            mutation(
                Operation::Kill,
                Ok(info("a", LifecycleState::Running, Some("id"), false)),
                &own
            ),
            Err(Error::ComputeUnconfirmed.into())
        );
    }

    #[test]
    fn unsupported_from_a_supported_operation_is_unknown() {
        let unsupported = || Error::unsupported("get-info", "x");
        assert_eq!(
            read(Err(unsupported()), &reference("a")),
            Err(Error::ComputeUnconfirmed)
        );
        assert_eq!(command(Err(unsupported())), Err(Error::CommandUnconfirmed));
        assert_eq!(
            observation::<()>(Err(unsupported())),
            Err(Error::ObservationUnavailable)
        );
        assert_eq!(
            answer::<()>(Operation::Suspend, Err(unsupported())),
            Err(Error::ComputeUnconfirmed)
        );
    }

    #[test]
    fn oversized_output_is_never_success() {
        let result = |len| CommandResult {
            stdout: vec![0; len],
            stderr: vec![],
            exit_code: 3,
        };
        let limit = MAX_OUTPUT_BYTES as usize;
        assert_eq!(
            command(Ok(result(limit + 1))),
            Err(Error::CommandUnconfirmed)
        );
        assert_eq!(command(Ok(result(limit))), Ok(result(limit)));
    }

    #[test]
    fn a_batch_must_answer_each_target() {
        assert_eq!(
            batch(Ok(vec![Ok(1), Ok(2)]), 3),
            Err(Error::ObservationUnavailable)
        );
        assert_eq!(batch(Ok(vec![Ok(1), Ok(2)]), 2), Ok(vec![Ok(1), Ok(2)]));
    }

    #[test]
    fn each_target_of_a_batch_is_policed_as_an_observation() {
        let lie = Error::Unsupported(crate::types::UnsupportedOperation {
            operation: "observe-batch".into(),
            reason: "free text from a vendor".into(),
        });
        let answers = vec![
            Err(lie),
            Err(Error::ComputeUnconfirmed),
            Err(Error::NotFound),
            Ok(7),
        ];
        assert_eq!(
            batch(Ok(answers), 4),
            Ok(vec![
                Err(Error::ObservationUnavailable),
                Err(Error::ObservationUnavailable),
                Err(Error::NotFound),
                Ok(7),
            ])
        );
    }
}
