//! What Core accepts from a provider as an answer, the same whether the
//! kind ran in this process or on a node: an answer that claims another
//! allocation, evidence the operation cannot have, `unsupported` from an
//! operation declared supported, or output over the bound is not evidence,
//! and becomes the operation's unknown outcome. A failed mutation keeps its
//! info only when that info is settlement evidence for the exact reference
//! asked about, from an operation that may claim settlement.

use crate::types::{
    CommandResult, Compute, ComputeState, ComputeStatus, Error, Failure, Info, LifecycleState,
    Reference, ResumeRequest, Sample, SnapshotIdentity, SuspendRequest,
};
use oac_contract::Operation;
use oac_contract::bounds::MAX_OUTPUT_BYTES;

/// The error an unknown outcome of `operation` is reported as.
pub fn unknown(operation: Operation) -> Error {
    Error::unknown(operation.unknown())
}

/// The rule an operation's answer is policed by, on both sides of a node.
/// [`rule`] is an exhaustive match, so an operation added to the contract
/// does not compile until its rule is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// [`mutation`]: the lifecycle's changes.
    Mutation,
    /// [`read`]: `get-info`.
    Read,
    /// [`command`]: a command's result.
    Command,
    /// [`constructed`]: a new compute.
    Constructed,
    /// [`compute_state`]: a compute's state.
    ComputeState,
    /// [`suspended`].
    Suspended,
    /// [`resumed`].
    Resumed,
    /// [`thawed`].
    Thawed,
    /// [`observation`].
    Observation,
    /// [`batch`].
    Batch,
    /// [`answer`]: carries no evidence, so only `unsupported` is checked.
    Plain,
    /// [`answer`], and an answer Core shows and logs carries none of the
    /// call's credentials ([`crate::secrets`]).
    Shown,
    /// Checked by its type alone: the component's requirements (validated
    /// against its declaration at load) and a probe's diagnostics.
    Typed,
}

/// The rule `operation`'s answer is policed by.
pub fn rule(operation: Operation) -> Rule {
    use Operation::*;
    match operation {
        Create | Renew | Kill => Rule::Mutation,
        GetInfo => Rule::Read,
        RunCommand | RunCommandCompute => Rule::Command,
        Initial | NewCompute => Rule::Constructed,
        GetCompute => Rule::ComputeState,
        Suspend => Rule::Suspended,
        Resume => Rule::Resumed,
        ResumeCompute => Rule::Thawed,
        Observe => Rule::Observation,
        ObserveBatch => Rule::Batch,
        KillCompute | DeleteSnapshot | VerifyCredential | Equal | DiscoverConfiguration => {
            Rule::Plain
        }
        DiscoverSelection | DecodeInput | Encode | Decode | Normalize | ResolveChange
        | WithCredential => Rule::Shown,
        Requirements | Probe => Rule::Typed,
    }
}

/// What a Create settled to, as the host recorded it from that Create's own
/// policed answer.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Settled {
    /// Settled absence: the Create was refused before any native effect.
    Absent,
    /// The Create ended with this native compute.
    Present(String),
}

/// What a settlement claim of an answer rests on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// Nothing but the answer itself: only Create's own answer may claim
    /// `create-settled` (it is the original Create, and when it answers it
    /// has ended).
    Answer,
    /// The host's own durable record of what a Create of the allocation
    /// settled to: GetInfo, Renew and Kill may claim settlement too, as
    /// long as what they claim agrees with it. Nothing a component wrote
    /// (its receipts) is such a record.
    Recorded(Settled),
}

/// Whether `info`, an answer of `operation` resting on `evidence`, may
/// claim `create-settled`. An observation or a Kill alone cannot know that
/// a Create it did not run can no longer change resources; with the host's
/// record of that Create's settled answer it can, and then it must agree
/// with the record: the recorded compute (or none, once it is gone), or
/// settled absence where the record says absence.
pub fn may_claim_settlement(operation: Operation, evidence: &Evidence, info: &Info) -> bool {
    let observes = matches!(
        operation,
        Operation::GetInfo | Operation::Renew | Operation::Kill
    );
    operation == Operation::Create
        || match evidence {
            Evidence::Recorded(settled) if observes => agrees(info, settled),
            _ => false,
        }
}

/// Whether `info`'s claim agrees with what was recorded.
fn agrees(info: &Info, settled: &Settled) -> bool {
    match settled {
        Settled::Absent => info.state == LifecycleState::Absent && info.provider_id.is_none(),
        Settled::Present(id) => info
            .provider_id
            .as_deref()
            .is_none_or(|answered| answered == id),
    }
}

/// What a Create's policed answer settles, for the host's record: its
/// success's compute, or the settled info of its failure. `None` when the
/// answer claims no settlement.
pub fn settled_by(answer: &Result<Info, Failure>) -> Option<Settled> {
    let info = match answer {
        Ok(info) => info,
        Err(failure) => failure.info.as_ref()?,
    };
    if !info.create_settled {
        return None;
    }
    Some(match &info.provider_id {
        Some(id) => Settled::Present(id.clone()),
        None => Settled::Absent,
    })
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
pub fn is_consistent_success(
    operation: Operation,
    info: &Info,
    allocation: &Reference,
    evidence: &Evidence,
) -> bool {
    if info.reference != *allocation
        || (info.create_settled && !may_claim_settlement(operation, evidence, info))
    {
        return false;
    }
    match (operation, info.state) {
        // A settled Kill is an exact settled-absence receipt.
        (Operation::Kill, state) => {
            state == LifecycleState::Absent && (!info.create_settled || info.provider_id.is_none())
        }
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
pub fn read(
    answer: Result<Info, Error>,
    allocation: &Reference,
    evidence: &Evidence,
) -> Result<Info, Error> {
    match self::answer(Operation::GetInfo, answer) {
        Ok(info) if !is_consistent_success(Operation::GetInfo, &info, allocation, evidence) => {
            Err(Error::ComputeUnconfirmed)
        }
        other => other,
    }
}

/// `create`, `renew`, `kill`: a success that is not
/// [consistent](is_consistent_success) is unknown; a failure keeps only
/// exact-reference settlement evidence, and only where the operation may
/// claim it ([`may_claim_settlement`]).
#[allow(clippy::result_large_err)] // `Failure` is the contract's shape
pub fn mutation(
    operation: Operation,
    answer: Result<Info, Failure>,
    allocation: &Reference,
    evidence: &Evidence,
) -> Result<Info, Failure> {
    match answer {
        Ok(info) if !is_consistent_success(operation, &info, allocation, evidence) => {
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
                may_claim_settlement(operation, evidence, info)
                    && is_settlement_evidence(info, allocation)
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

/// True when `answered` is the incarnation `asked` names: the same
/// generation and name, the same native id when `asked` has one, and
/// identical provenance.
pub fn is_same_incarnation(answered: &Compute, asked: &Compute) -> bool {
    answered.generation == asked.generation
        && answered.name == asked.name
        && (asked.id.is_empty() || answered.id == asked.id)
        && answered.restored_from == asked.restored_from
}

/// `initial` and `new-compute`: the identity constructed must be of the
/// asked generation and provenance, else `ownership`.
pub fn constructed(
    operation: Operation,
    answer: Result<Compute, Error>,
    generation: u64,
    restored_from: Option<&SnapshotIdentity>,
) -> Result<Compute, Error> {
    match self::answer(operation, answer) {
        Ok(compute)
            if compute.generation != generation
                || compute.restored_from.as_ref() != restored_from =>
        {
            Err(Error::Ownership)
        }
        other => other,
    }
}

/// An observation of `asked` (get-compute, resume-compute, and the compute
/// of a suspend or resume): another incarnation is `ownership`.
pub fn compute_state(
    operation: Operation,
    answer: Result<ComputeState, Error>,
    asked: &Compute,
) -> Result<ComputeState, Error> {
    match self::answer(operation, answer) {
        Ok(state) if !is_same_incarnation(&state.compute, asked) => Err(Error::Ownership),
        other => other,
    }
}

/// True when `snapshot` is what suspending `state.compute` for `request`
/// captures: this allocation's, carrying the request's operation id and
/// the source's exact identity.
fn captured_by(snapshot: &SnapshotIdentity, request: &SuspendRequest, source: &Compute) -> bool {
    snapshot.reference == request.reference
        && snapshot.operation_id == request.operation_id
        && snapshot.source_generation == source.generation
        && snapshot.source_name == source.name
        && snapshot.source_id == source.id
        && !source.id.is_empty()
}

/// `suspend`: the source incarnation (else `ownership`), stopped, status
/// `suspended`, with a snapshot [captured by](captured_by) this request —
/// under observe-only, the very snapshot Core already holds, if any. Only
/// observe-only may answer the source without a snapshot, and only while
/// it runs or is paused with its bootstrap complete (the rollback path).
/// Anything else is `unconfirmed`.
pub fn suspended(
    answer: Result<ComputeState, Error>,
    request: &SuspendRequest,
) -> Result<ComputeState, Error> {
    let state = compute_state(Operation::Suspend, answer, &request.source)?;
    let holds = match &state.snapshot {
        Some(snapshot) => {
            captured_by(snapshot, request, &state.compute)
                && state.source_stopped
                && state.status == ComputeStatus::Suspended
                && (!request.observe_only
                    || request
                        .snapshot
                        .as_ref()
                        .is_none_or(|known| known == snapshot))
        }
        None => {
            request.observe_only
                && matches!(state.status, ComputeStatus::Running | ComputeStatus::Paused)
                && state.bootstrap_complete
                && !state.source_stopped
        }
    };
    if holds {
        Ok(state)
    } else {
        Err(Error::ComputeUnconfirmed)
    }
}

/// `resume`: the target incarnation, restored from exactly the request's
/// snapshot (else `ownership`), existing (a native id) and neither
/// suspended nor absent (else `unconfirmed`).
pub fn resumed(
    answer: Result<ComputeState, Error>,
    request: &ResumeRequest,
) -> Result<ComputeState, Error> {
    let state = compute_state(Operation::Resume, answer, &request.target)?;
    if state.compute.restored_from.as_ref() != Some(&request.snapshot) {
        return Err(Error::Ownership);
    }
    let exists = !state.compute.id.is_empty()
        && !matches!(
            state.status,
            ComputeStatus::Suspended | ComputeStatus::Absent
        );
    if exists {
        Ok(state)
    } else {
        Err(Error::ComputeUnconfirmed)
    }
}

/// `resume-compute`: the same resident incarnation, running again, with no
/// snapshot and not stopped — a thaw, never a restore.
pub fn thawed(answer: Result<ComputeState, Error>, asked: &Compute) -> Result<ComputeState, Error> {
    let state = compute_state(Operation::ResumeCompute, answer, asked)?;
    let thawed =
        state.status == ComputeStatus::Running && state.snapshot.is_none() && !state.source_stopped;
    if thawed {
        Ok(state)
    } else {
        Err(Error::ComputeUnconfirmed)
    }
}

/// A configuration answer keeps the credential apart: none of `secrets`
/// (the credentials the call carried) appears in `shown`, the texts Core
/// may show, index or log (a public object, metadata).
pub fn keeps_secrets_apart<'a>(
    shown: impl IntoIterator<Item = &'a str>,
    secrets: &[String],
) -> bool {
    let secrets: Vec<&String> = secrets.iter().filter(|s| !s.is_empty()).collect();
    shown
        .into_iter()
        .all(|text| !secrets.iter().any(|secret| text.contains(secret.as_str())))
}

/// Observations prove nothing either way: anything unknown is
/// `observation-unavailable`.
/// An answer carrying figures that no observation can have (a NaN, an
/// infinity, a negative CPU time) is no observation either.
pub fn observation<T: Plausible>(answer: Result<T, Error>) -> Result<T, Error> {
    match answer {
        Err(Error::Unsupported(_) | Error::ComputeUnconfirmed) => {
            Err(Error::ObservationUnavailable)
        }
        Ok(observed) if !observed.plausible() => Err(Error::ObservationUnavailable),
        other => other,
    }
}

/// What an observation's figures must be to be believed.
pub trait Plausible {
    /// True when every figure is one the observed thing can have.
    fn plausible(&self) -> bool;
}

impl Plausible for Sample {
    /// Every figure finite and not negative; an absent CPU time is allowed
    /// (the system reports none), a made-up one is not checked further.
    fn plausible(&self) -> bool {
        let count = |figure: f64| figure.is_finite() && figure >= 0.0;
        self.cpu_seconds.is_none_or(count) && count(self.cpus)
    }
}

/// A batch observation must answer once per target, in order, and each
/// target's answer is an observation like any other.
pub fn batch<T: Plausible>(
    answer: Result<Vec<Result<T, Error>>, Error>,
    targets: usize,
) -> Result<Vec<Result<T, Error>>, Error> {
    match answer {
        Err(Error::Unsupported(_) | Error::ComputeUnconfirmed) => {
            Err(Error::ObservationUnavailable)
        }
        Ok(samples) if samples.len() != targets => Err(Error::ObservationUnavailable),
        Ok(samples) => Ok(samples.into_iter().map(observation).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lifecycle_is_policed_for_evidence_and_configuration_for_leaks() {
        use Operation::*;
        for (operation, expected) in [
            (Create, Rule::Mutation),
            (Renew, Rule::Mutation),
            (Kill, Rule::Mutation),
            (GetInfo, Rule::Read),
            (RunCommand, Rule::Command),
            (Observe, Rule::Observation),
            (ObserveBatch, Rule::Batch),
            (Encode, Rule::Shown),
            (DiscoverSelection, Rule::Shown),
        ] {
            assert_eq!(rule(operation), expected, "{operation:?}");
        }
    }

    fn reference(allocation: &str) -> Reference {
        Reference::new("t", "e", allocation)
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
            mutation(Operation::Create, Err(failure), &own, &Evidence::Answer)
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
            read(Ok(running.clone()), &reference("a"), &Evidence::Answer),
            Err(Error::ComputeUnconfirmed)
        );
        assert_eq!(
            mutation(
                Operation::Renew,
                Ok(running),
                &reference("a"),
                &Evidence::Answer
            ),
            Err(Error::ComputeUnconfirmed.into())
        );
    }

    #[test]
    fn only_create_may_claim_settlement() {
        let own = reference("a");
        let running = |settled| info("a", LifecycleState::Running, Some("id"), settled);
        assert_eq!(
            mutation(
                Operation::Create,
                Ok(running(true)),
                &own,
                &Evidence::Answer
            ),
            Ok(running(true))
        );
        assert_eq!(
            read(Ok(running(false)), &own, &Evidence::Answer),
            Ok(running(false))
        );
        assert_eq!(
            read(Ok(running(true)), &own, &Evidence::Answer),
            Err(Error::ComputeUnconfirmed)
        );
        for operation in [Operation::Renew, Operation::Kill] {
            let settled_absence = info("a", LifecycleState::Absent, None, true);
            assert_eq!(
                mutation(
                    operation,
                    Ok(settled_absence.clone()),
                    &own,
                    &Evidence::Answer
                ),
                Err(Error::ComputeUnconfirmed.into()),
                "{operation:?}"
            );
            let failure = Failure {
                error: Error::ComputeUnconfirmed,
                info: Some(settled_absence),
            };
            assert_eq!(
                mutation(operation, Err(failure), &own, &Evidence::Answer),
                Err(Error::ComputeUnconfirmed.into()),
                "{operation:?}"
            );
        }
    }

    #[test]
    fn the_hosts_record_lets_get_info_renew_and_kill_claim_what_it_says() {
        let own = reference("a");
        let settled_absence = info("a", LifecycleState::Absent, None, true);
        let running = info("a", LifecycleState::Running, Some("id"), true);
        let absent = Evidence::Recorded(Settled::Absent);
        let present = Evidence::Recorded(Settled::Present("id".into()));
        assert_eq!(
            read(Ok(settled_absence.clone()), &own, &absent),
            Ok(settled_absence.clone())
        );
        assert_eq!(
            read(Ok(running.clone()), &own, &present),
            Ok(running.clone())
        );
        assert_eq!(
            mutation(Operation::Renew, Ok(running.clone()), &own, &present),
            Ok(running.clone())
        );
        // Once the recorded compute is gone, settled absence agrees too.
        for evidence in [&absent, &present] {
            assert_eq!(
                mutation(Operation::Kill, Ok(settled_absence.clone()), &own, evidence),
                Ok(settled_absence.clone())
            );
        }
        let failure = Failure {
            error: Error::NotFound,
            info: Some(settled_absence.clone()),
        };
        assert_eq!(
            mutation(Operation::Kill, Err(failure.clone()), &own, &absent),
            Err(failure)
        );
        // A claim the record contradicts is unknown: other compute, or
        // compute where the record says the Create made none.
        let other = info("a", LifecycleState::Running, Some("other"), true);
        assert_eq!(
            read(Ok(other), &own, &present),
            Err(Error::ComputeUnconfirmed)
        );
        assert_eq!(
            read(Ok(running.clone()), &own, &absent),
            Err(Error::ComputeUnconfirmed)
        );
        // Still exact: a settled Kill names nothing, and another
        // allocation's answer is no evidence.
        let settled_with_id = info("a", LifecycleState::Absent, Some("id"), true);
        assert_eq!(
            mutation(Operation::Kill, Ok(settled_with_id), &own, &present),
            Err(Error::ComputeUnconfirmed.into())
        );
        assert_eq!(
            read(Ok(settled_absence.clone()), &reference("b"), &absent),
            Err(Error::ComputeUnconfirmed)
        );
        for operation in [Operation::Observe, Operation::RunCommand] {
            assert!(!may_claim_settlement(operation, &absent, &settled_absence));
        }
    }

    #[test]
    fn a_creates_settled_answer_is_what_the_host_records() {
        let running = info("a", LifecycleState::Running, Some("id"), true);
        assert_eq!(
            settled_by(&Ok(running)),
            Some(Settled::Present("id".into()))
        );
        let refused = Failure {
            error: Error::Invalid,
            info: Some(info("a", LifecycleState::Absent, None, true)),
        };
        assert_eq!(settled_by(&Err(refused)), Some(Settled::Absent));
        let unsettled = info("a", LifecycleState::Pending, Some("id"), false);
        assert_eq!(settled_by(&Ok(unsettled)), None);
        assert_eq!(settled_by(&Err(Error::ComputeUnconfirmed.into())), None);
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
                read(Ok(bad.clone()), &own, &Evidence::Answer),
                Err(Error::ComputeUnconfirmed),
                "{bad:?}"
            );
        }
        let receipt = info("a", LifecycleState::Absent, None, true);
        assert_eq!(
            mutation(
                Operation::Create,
                Ok(receipt.clone()),
                &own,
                &Evidence::Answer
            ),
            Ok(receipt)
        );
        // Kill's success is absence, proved or not; never present compute.
        let gone = info("a", LifecycleState::Absent, None, false);
        assert_eq!(
            mutation(Operation::Kill, Ok(gone.clone()), &own, &Evidence::Answer),
            Ok(gone)
        );
        let removed = info("a", LifecycleState::Absent, Some("id"), false);
        assert_eq!(
            mutation(
                Operation::Kill,
                Ok(removed.clone()),
                &own,
                &Evidence::Answer
            ),
            Ok(removed)
        );
        assert_eq!(
            mutation(
                Operation::Kill,
                Ok(info("a", LifecycleState::Running, Some("id"), false)),
                &own,
                &Evidence::Answer
            ),
            Err(Error::ComputeUnconfirmed.into())
        );
    }

    #[test]
    fn unsupported_from_a_supported_operation_is_unknown() {
        let unsupported = || Error::unsupported("get-info", "x");
        assert_eq!(
            read(Err(unsupported()), &reference("a"), &Evidence::Answer),
            Err(Error::ComputeUnconfirmed)
        );
        assert_eq!(command(Err(unsupported())), Err(Error::CommandUnconfirmed));
        assert_eq!(
            observation::<i32>(Err(unsupported())),
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

    fn snapshot(operation: &str, source: &Compute) -> SnapshotIdentity {
        SnapshotIdentity {
            reference: reference("a"),
            id: "snap-1".into(),
            digest: "sha256:1".into(),
            checkpoint_id: "snap-1".into(),
            checkpoint_root: "/checkpoints".into(),
            operation_id: operation.into(),
            source_generation: source.generation,
            source_name: source.name.clone(),
            source_id: source.id.clone(),
        }
    }

    fn compute(generation: u64, id: &str) -> Compute {
        Compute {
            generation,
            name: format!("a-g{generation}"),
            id: id.into(),
            restored_from: None,
        }
    }

    fn state(
        compute: Compute,
        status: ComputeStatus,
        snapshot: Option<SnapshotIdentity>,
    ) -> ComputeState {
        ComputeState {
            source_stopped: matches!(status, ComputeStatus::Suspended | ComputeStatus::Stopped),
            bootstrap_complete: status == ComputeStatus::Running,
            compute,
            status,
            snapshot,
        }
    }

    fn suspend_request(observe_only: bool, known: Option<SnapshotIdentity>) -> SuspendRequest {
        SuspendRequest {
            reference: reference("a"),
            operation_id: "op-1".into(),
            source: compute(0, "id-0"),
            snapshot: known,
            observe_only,
        }
    }

    #[test]
    fn a_compute_answer_must_be_the_incarnation_asked_about() {
        let asked = compute(0, "");
        let filled = compute(0, "id-0");
        let running = |c| Ok(state(c, ComputeStatus::Running, None));
        assert!(compute_state(Operation::GetCompute, running(filled.clone()), &asked).is_ok());
        let other_name = Compute {
            name: "b-g0".into(),
            ..filled.clone()
        };
        let other_generation = compute(1, "id-0");
        let other_provenance = Compute {
            restored_from: Some(snapshot("op", &filled)),
            ..filled.clone()
        };
        for other in [other_name, other_generation, other_provenance] {
            assert_eq!(
                compute_state(Operation::GetCompute, running(other.clone()), &asked),
                Err(Error::Ownership),
                "{other:?}"
            );
        }
        assert_eq!(
            compute_state(Operation::GetCompute, running(compute(0, "id-9")), &filled),
            Err(Error::Ownership),
            "another native id"
        );
        assert_eq!(
            constructed(Operation::NewCompute, Ok(compute(2, "")), 1, None),
            Err(Error::Ownership)
        );
        let from = snapshot("op", &filled);
        assert_eq!(
            constructed(Operation::NewCompute, Ok(compute(1, "")), 1, Some(&from)),
            Err(Error::Ownership),
            "provenance dropped"
        );
    }

    #[test]
    fn a_suspend_returns_this_operations_capture_of_the_source_stopped() {
        let source = compute(0, "id-0");
        let good = snapshot("op-1", &source);
        let suspended_with = |snapshot| {
            Ok(state(
                source.clone(),
                ComputeStatus::Suspended,
                Some(snapshot),
            ))
        };
        assert!(suspended(suspended_with(good.clone()), &suspend_request(false, None)).is_ok());
        let lies = [
            SnapshotIdentity {
                operation_id: "op-2".into(),
                ..good.clone()
            },
            SnapshotIdentity {
                source_id: "id-9".into(),
                ..good.clone()
            },
            SnapshotIdentity {
                source_generation: 1,
                ..good.clone()
            },
            SnapshotIdentity {
                source_name: "x".into(),
                ..good.clone()
            },
            SnapshotIdentity {
                reference: reference("b"),
                ..good.clone()
            },
        ];
        for lie in lies {
            assert_eq!(
                suspended(suspended_with(lie.clone()), &suspend_request(false, None)),
                Err(Error::ComputeUnconfirmed),
                "{lie:?}"
            );
        }
        let not_stopped = ComputeState {
            source_stopped: false,
            ..state(source.clone(), ComputeStatus::Suspended, Some(good.clone()))
        };
        assert_eq!(
            suspended(Ok(not_stopped), &suspend_request(false, None)),
            Err(Error::ComputeUnconfirmed)
        );
        // Observe-only: never a new capture; the rollback path only while
        // the source still runs with its bootstrap complete.
        let other_capture = SnapshotIdentity {
            id: "snap-2".into(),
            ..good.clone()
        };
        assert_eq!(
            suspended(
                suspended_with(other_capture),
                &suspend_request(true, Some(good.clone()))
            ),
            Err(Error::ComputeUnconfirmed)
        );
        assert!(
            suspended(
                suspended_with(good.clone()),
                &suspend_request(true, Some(good))
            )
            .is_ok()
        );
        let rollback = Ok(state(source.clone(), ComputeStatus::Running, None));
        assert!(suspended(rollback.clone(), &suspend_request(true, None)).is_ok());
        assert_eq!(
            suspended(rollback, &suspend_request(false, None)),
            Err(Error::ComputeUnconfirmed),
            "an acting suspend must capture"
        );
        assert_eq!(
            suspended(
                Ok(state(source, ComputeStatus::Stopped, None)),
                &suspend_request(true, None)
            ),
            Err(Error::ComputeUnconfirmed),
            "a stopped source without a snapshot is no rollback"
        );
    }

    #[test]
    fn a_resume_makes_the_target_from_exactly_that_snapshot_and_a_thaw_is_no_restore() {
        let source = compute(0, "id-0");
        let from = snapshot("op-1", &source);
        let target = Compute {
            restored_from: Some(from.clone()),
            ..compute(1, "")
        };
        let request = ResumeRequest {
            reference: reference("a"),
            operation_id: "op-2".into(),
            snapshot: from.clone(),
            target: target.clone(),
            observe_only: false,
        };
        let made = Compute {
            id: "id-1".into(),
            ..target.clone()
        };
        assert!(
            resumed(
                Ok(state(made.clone(), ComputeStatus::Running, None)),
                &request
            )
            .is_ok()
        );
        let cold = Compute {
            restored_from: None,
            ..made.clone()
        };
        assert_eq!(
            resumed(Ok(state(cold, ComputeStatus::Running, None)), &request),
            Err(Error::Ownership)
        );
        let unmade = state(target, ComputeStatus::Running, None);
        assert_eq!(
            resumed(Ok(unmade), &request),
            Err(Error::ComputeUnconfirmed)
        );
        assert!(
            thawed(
                Ok(state(source.clone(), ComputeStatus::Running, None)),
                &source
            )
            .is_ok()
        );
        assert_eq!(
            thawed(
                Ok(state(source.clone(), ComputeStatus::Suspended, Some(from))),
                &source
            ),
            Err(Error::ComputeUnconfirmed)
        );
    }

    #[test]
    fn a_configuration_keeps_its_credential_apart() {
        let secrets = ["s3cret".to_string(), String::new()];
        assert!(keeps_secrets_apart(
            ["{}", r#"{"template":"base"}"#],
            &secrets
        ));
        assert!(!keeps_secrets_apart(
            ["{}", r#"{"key":"s3cret"}"#],
            &secrets
        ));
    }

    impl Plausible for i32 {
        fn plausible(&self) -> bool {
            *self >= 0
        }
    }

    fn sample(cpu_seconds: Option<f64>, cpus: f64) -> Sample {
        Sample {
            cpu_seconds,
            memory_bytes: 1,
            memory_limit_bytes: 0,
            cpus,
            started_at: None,
        }
    }

    #[test]
    fn a_sample_with_impossible_figures_is_no_observation() {
        for (cpu_seconds, cpus, believed) in [
            (Some(1.5), 2.0, true),
            (None, 2.0, true),
            (Some(0.0), 0.0, true),
            (Some(f64::NAN), 2.0, false),
            (Some(-1.0), 2.0, false),
            (Some(f64::INFINITY), 2.0, false),
            (None, f64::NAN, false),
            (None, -2.0, false),
        ] {
            let answer = observation(Ok(sample(cpu_seconds, cpus)));
            assert_eq!(
                answer.is_ok(),
                believed,
                "cpu {cpu_seconds:?}, cpus {cpus}: {answer:?}"
            );
        }
        assert_eq!(
            batch(Ok(vec![Ok(sample(Some(-1.0), 1.0))]), 1),
            Ok(vec![Err(Error::ObservationUnavailable)])
        );
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
