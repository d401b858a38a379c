//! Core's side of the transport: a kind served by a node, behind the same
//! [`SandboxProvider`] interface as a kind loaded in-process.
//!
//! The proxy checks its declaration before sending anything, so an
//! unsupported operation costs no request. Batch observation, selection
//! discovery and credential verification are never forwarded: they are
//! declared unsupported with `node_*` reasons. Anything that is not the
//! node's complete answer (lost connection, expired budget, bad frame, a
//! refusal other than `invalid`) is `unconfirmed` (`command_unconfirmed`
//! for commands, `observation_unavailable` for observations), and nothing
//! is ever sent twice.
//!
//! A failed mutation keeps its info only when it is settlement evidence for
//! the exact reference asked about: `create_settled`, the same reference,
//! and either settled absence with no provider id, or a provider id for
//! compute that is present. Anything else is dropped, so a confused or
//! compromised node cannot hand Core evidence about another allocation.

use super::client::{NodeClient, TransportError};
use super::reasons;
use super::wire::{self, Call, Outcome, Value};
use crate::bindings::exports::oac::sandbox_provider::selection_discoverer::SelectionOption;
use crate::bindings::oac::sandbox_provider::types::{
    Compute, ComputeState, ResumeRequest, Sample, SnapshotIdentity, SuspendRequest, Target,
};
use crate::bindings::{
    Bootstrap, Command, CommandResult, Error, Failure, Info, LifecycleState, Reference,
    UnsupportedOperation,
};
use crate::budget::Budget;
use crate::declaration::{
    self, CHECKPOINT_INTERFACE, CHECKPOINT_OPERATIONS, Decision, Declaration, DeclarationError,
    Inventory, Operation, REQUIRED,
};
use crate::host::{police_command, police_read};
use crate::provider::{CheckpointProvider, SandboxProvider};

/// Why a proxy could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The node did not list its kinds.
    #[error("the node did not list its kinds: {0}")]
    Transport(#[from] TransportError),
    /// The node does not serve the kind.
    #[error("the node does not serve kind `{0}`")]
    UnknownKind(String),
    /// The node's declaration of the kind breaks the contract.
    #[error("the node's declaration of `{kind}` breaks the contract: {why}")]
    Declaration {
        /// The kind.
        kind: String,
        /// Which rule.
        why: DeclarationError,
    },
}

/// A kind served by a node.
pub struct RemoteProvider {
    client: NodeClient,
    kind: String,
    declaration: Declaration,
}

/// What came back for one forwarded operation, before it is shaped.
enum Answer {
    /// The operation's value.
    Value(Value),
    /// A fixed error code, with the info the node attached.
    Failed(Error, Option<wire::Info>),
    /// No answer that proves anything.
    Unknown,
}

/// True when `info` is settlement evidence about exactly `allocation`.
pub fn is_settlement_evidence(info: &Info, allocation: &Reference) -> bool {
    let bound = info.reference == *allocation && info.create_settled;
    let consistent = match (info.state, &info.provider_id) {
        (LifecycleState::Absent, None) => true,
        (LifecycleState::Absent, Some(_)) | (_, None) => false,
        (_, Some(_)) => true,
    };
    bound && consistent
}

/// An operation a node never forwards, with the reason the proxy gives.
type NotForwarded = (&'static str, &'static str);
const BATCH: NotForwarded = ("observe-batch", reasons::BATCH);
const DISCOVERY: NotForwarded = ("discover-selection", reasons::DISCOVERY);
const VERIFICATION: NotForwarded = ("verify-credential", reasons::VERIFICATION);
const NOT_FORWARDED: [NotForwarded; 3] = [BATCH, DISCOVERY, VERIFICATION];

/// The operations a node forwards, as an inventory the contract's
/// declaration rules can be checked against.
fn forwarded_inventory() -> Inventory {
    let operations = |names: &[&str], interface: &str| {
        names
            .iter()
            .map(|name| Operation {
                name: name.to_string(),
                interface: interface.to_string(),
                fallible: true,
            })
            .collect::<Vec<_>>()
    };
    Inventory(
        [
            operations(&REQUIRED, "sandbox-provider"),
            operations(&["observe"], "observation-source"),
            operations(&CHECKPOINT_OPERATIONS, CHECKPOINT_INTERFACE),
        ]
        .concat(),
    )
}

/// The proxy's declaration of `kind` from the node's: the forwarded
/// operations as the node declares them, checked by the same rules as a
/// component's declaration, and the operations a node never forwards as
/// unsupported.
fn proxy_declaration(
    kind: &str,
    served: &wire::KindDeclaration,
) -> Result<Declaration, ProxyError> {
    let inventory = forwarded_inventory();
    let entries: Vec<(String, Decision)> = inventory
        .0
        .iter()
        .filter_map(|operation| {
            let decision = match served.operations.get(&operation.name)? {
                wire::Support::Supported => Decision::Supported,
                wire::Support::Unsupported(reason) => Decision::Unsupported(reason.clone()),
            };
            Some((operation.name.clone(), decision))
        })
        .collect();
    let Declaration(mut decisions) = declaration::validate_declaration(&inventory, &entries)
        .map_err(|why| ProxyError::Declaration {
            kind: kind.to_string(),
            why,
        })?;
    for (operation, reason) in NOT_FORWARDED {
        decisions.insert(operation.into(), Decision::Unsupported(reason.into()));
    }
    Ok(Declaration(decisions))
}

/// The answer to an operation a node never forwards.
fn not_forwarded((operation, reason): NotForwarded) -> Error {
    Error::Unsupported(UnsupportedOperation {
        operation: operation.to_string(),
        reason: reason.to_string(),
    })
}

/// The value the operation expects, or `unknown` for anything else.
fn expect<T>(
    answer: Answer,
    unknown: Error,
    pick: impl FnOnce(Value) -> Option<T>,
) -> Result<T, Error> {
    match answer {
        Answer::Value(value) => pick(value).ok_or(unknown),
        Answer::Failed(error, _) => Err(error),
        Answer::Unknown => Err(unknown),
    }
}

fn info(value: Value) -> Option<Info> {
    match value {
        Value::Info(info) => Some(info.into()),
        _ => None,
    }
}

fn compute(value: Value) -> Option<Compute> {
    match value {
        Value::Compute(compute) => Some(compute.into()),
        _ => None,
    }
}

fn compute_state(value: Value) -> Option<ComputeState> {
    match value {
        Value::ComputeState(state) => Some(state.into()),
        _ => None,
    }
}

fn command_result(value: Value) -> Option<CommandResult> {
    match value {
        Value::CommandResult(result) => Some(result.into()),
        _ => None,
    }
}

fn done(value: Value) -> Option<()> {
    matches!(value, Value::Done).then_some(())
}

/// A mutation's answer: a foreign success is unknown; a failure keeps only
/// exact-reference settlement evidence.
#[allow(clippy::result_large_err)] // `Failure` is the contract's shape
fn mutation(answer: Answer, allocation: &Reference) -> Result<Info, Failure> {
    match answer {
        Answer::Failed(error, attached) => Err(Failure {
            error,
            info: attached
                .map(Info::from)
                .filter(|info| is_settlement_evidence(info, allocation)),
        }),
        other => police_read(expect(other, Error::ComputeUnconfirmed, info), allocation)
            .map_err(Failure::from),
    }
}

impl RemoteProvider {
    /// Asks the node for `kind`'s declaration and checks it: the required
    /// five supported, checkpoint all or nothing, reasons well-formed.
    pub async fn connect(
        client: NodeClient,
        kind: &str,
        budget: Budget,
    ) -> Result<Self, ProxyError> {
        let listed = client.kinds(budget).await?;
        let served = listed
            .kinds
            .get(kind)
            .ok_or_else(|| ProxyError::UnknownKind(kind.to_string()))?;
        Ok(Self {
            client,
            kind: kind.to_string(),
            declaration: proxy_declaration(kind, served)?,
        })
    }

    /// The served kind's name.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// `unsupported(operation, reason)` when declared so: no request is sent.
    fn check(&self, operation: &str) -> Result<(), Error> {
        match self.declaration.decision(operation) {
            Some(Decision::Supported) => Ok(()),
            Some(Decision::Unsupported(reason)) => Err(Error::Unsupported(UnsupportedOperation {
                operation: operation.to_string(),
                reason: reason.clone(),
            })),
            None => Err(Error::Invalid),
        }
    }

    /// Sends one call, once.
    async fn forward(&self, call: Call, budget: Budget) -> Answer {
        match self.client.call(&self.kind, budget, call).await {
            Ok(Outcome::Ok(value)) => Answer::Value(value),
            Ok(Outcome::Error { error, info }) => match error.to_error() {
                // `unsupported` from an operation declared supported
                // contradicts the declaration: the outcome is unknown.
                Some(Error::Unsupported(_)) | None => Answer::Unknown,
                Some(error) => Answer::Failed(error, info),
            },
            Err(TransportError::Refused("invalid")) => Answer::Failed(Error::Invalid, None),
            Err(_) => Answer::Unknown,
        }
    }

    /// Checks the declaration, then forwards.
    async fn checked(&self, operation: &str, call: Call, budget: Budget) -> Result<Answer, Error> {
        self.check(operation)?;
        Ok(self.forward(call, budget).await)
    }
}

impl SandboxProvider for RemoteProvider {
    type Checkpoint<'a>
        = RemoteCheckpoint<'a>
    where
        Self: 'a;

    fn declaration(&self) -> &Declaration {
        &self.declaration
    }

    fn checkpoint(&self) -> Option<RemoteCheckpoint<'_>> {
        let supported = self.declaration.decision("initial") == Some(&Decision::Supported);
        supported.then_some(RemoteCheckpoint { provider: self })
    }

    async fn create(&self, request: Bootstrap, budget: Budget) -> Result<Info, Failure> {
        let allocation = request.reference.clone();
        let answer = self
            .checked("create", Call::Create(request.into()), budget)
            .await?;
        mutation(answer, &allocation)
    }

    async fn get_info(&self, allocation: Reference, budget: Budget) -> Result<Info, Error> {
        let call = Call::GetInfo(allocation.clone().into());
        let answer = self.checked("get-info", call, budget).await?;
        police_read(expect(answer, Error::ComputeUnconfirmed, info), &allocation)
    }

    async fn renew(&self, allocation: Reference, budget: Budget) -> Result<Info, Failure> {
        let call = Call::Renew(allocation.clone().into());
        let answer = self.checked("renew", call, budget).await?;
        mutation(answer, &allocation)
    }

    async fn kill(&self, allocation: Reference, budget: Budget) -> Result<Info, Failure> {
        let call = Call::Kill(allocation.clone().into());
        let answer = self.checked("kill", call, budget).await?;
        mutation(answer, &allocation)
    }

    async fn run_command(
        &self,
        allocation: Reference,
        request: Command,
        budget: Budget,
    ) -> Result<CommandResult, Error> {
        let call = Call::RunCommand(wire::OnAllocation {
            reference: allocation.into(),
            request: request.into(),
        });
        let answer = self.checked("run-command", call, budget).await?;
        police_command(expect(answer, Error::CommandUnconfirmed, command_result))
    }

    async fn observe(&self, target: Target, budget: Budget) -> Result<Sample, Error> {
        let answer = self
            .checked("observe", Call::Observe(target.into()), budget)
            .await?;
        let unavailable = Error::ObservationUnavailable;
        match expect(answer, unavailable.clone(), |value| match value {
            Value::Sample(sample) => Some(Sample::from(sample)),
            _ => None,
        }) {
            Err(Error::ComputeUnconfirmed) => Err(unavailable),
            other => other,
        }
    }

    async fn observe_batch(
        &self,
        _targets: Vec<Target>,
        _budget: Budget,
    ) -> Result<Vec<Result<Sample, Error>>, Error> {
        Err(not_forwarded(BATCH))
    }

    async fn discover_selection(&self, _budget: Budget) -> Result<Vec<SelectionOption>, Error> {
        Err(not_forwarded(DISCOVERY))
    }

    async fn verify_credential(&self, _credential: String, _budget: Budget) -> Result<(), Error> {
        Err(not_forwarded(VERIFICATION))
    }
}

/// The checkpoint operations of a served kind that declares them.
pub struct RemoteCheckpoint<'a> {
    provider: &'a RemoteProvider,
}

impl RemoteCheckpoint<'_> {
    async fn send(&self, operation: &str, call: Call, budget: Budget) -> Result<Answer, Error> {
        self.provider.checked(operation, call, budget).await
    }
}

impl CheckpointProvider for RemoteCheckpoint<'_> {
    async fn initial(&self, allocation: Reference, budget: Budget) -> Result<Compute, Error> {
        let answer = self
            .send("initial", Call::Initial(allocation.into()), budget)
            .await?;
        expect(answer, Error::ComputeUnconfirmed, compute)
    }

    async fn new_compute(
        &self,
        allocation: Reference,
        generation: u64,
        budget: Budget,
    ) -> Result<Compute, Error> {
        let call = Call::NewCompute(wire::NewCompute {
            reference: allocation.into(),
            generation,
        });
        let answer = self.send("new-compute", call, budget).await?;
        expect(answer, Error::ComputeUnconfirmed, compute)
    }

    async fn get_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        let call = Call::GetCompute(wire::OnCompute {
            reference: allocation.into(),
            compute: incarnation.into(),
        });
        let answer = self.send("get-compute", call, budget).await?;
        expect(answer, Error::ComputeUnconfirmed, compute_state)
    }

    async fn suspend(
        &self,
        request: SuspendRequest,
        budget: Budget,
    ) -> Result<SnapshotIdentity, Error> {
        let answer = self
            .send("suspend", Call::Suspend(request.into()), budget)
            .await?;
        expect(answer, Error::ComputeUnconfirmed, |value| match value {
            Value::Snapshot(snapshot) => Some(snapshot.into()),
            _ => None,
        })
    }

    async fn resume(&self, request: ResumeRequest, budget: Budget) -> Result<Compute, Error> {
        let answer = self
            .send("resume", Call::Resume(request.into()), budget)
            .await?;
        expect(answer, Error::ComputeUnconfirmed, compute)
    }

    async fn resume_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        let call = Call::ResumeCompute(wire::OnCompute {
            reference: allocation.into(),
            compute: incarnation.into(),
        });
        let answer = self.send("resume-compute", call, budget).await?;
        expect(answer, Error::ComputeUnconfirmed, compute_state)
    }

    async fn kill_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<(), Error> {
        let call = Call::KillCompute(wire::OnCompute {
            reference: allocation.into(),
            compute: incarnation.into(),
        });
        let answer = self.send("kill-compute", call, budget).await?;
        expect(answer, Error::ComputeUnconfirmed, done)
    }

    async fn delete_snapshot(
        &self,
        allocation: Reference,
        snapshot: SnapshotIdentity,
        budget: Budget,
    ) -> Result<(), Error> {
        let call = Call::DeleteSnapshot(wire::OnSnapshot {
            reference: allocation.into(),
            snapshot: snapshot.into(),
        });
        let answer = self.send("delete-snapshot", call, budget).await?;
        expect(answer, Error::ComputeUnconfirmed, done)
    }

    async fn run_command_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        request: Command,
        budget: Budget,
    ) -> Result<CommandResult, Error> {
        let call = Call::RunCommandCompute(wire::CommandOnCompute {
            reference: allocation.into(),
            compute: incarnation.into(),
            request: request.into(),
        });
        let answer = self.send("run-command-compute", call, budget).await?;
        police_command(expect(answer, Error::CommandUnconfirmed, command_result))
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

    fn served(decide: impl Fn(&str) -> wire::Support) -> wire::KindDeclaration {
        let operations = REQUIRED
            .iter()
            .chain(&["observe"])
            .chain(&CHECKPOINT_OPERATIONS)
            .map(|operation| (operation.to_string(), decide(operation)))
            .collect();
        wire::KindDeclaration { operations }
    }

    #[test]
    fn the_nodes_declaration_must_follow_the_contract() {
        let none = || wire::Support::Unsupported("none".into());
        let plain = served(|op| {
            if CHECKPOINT_OPERATIONS.contains(&op) {
                none()
            } else {
                wire::Support::Supported
            }
        });
        let declared = proxy_declaration("k", &plain).expect("valid");
        for (operation, reason) in NOT_FORWARDED {
            assert_eq!(
                declared.decision(operation),
                Some(&Decision::Unsupported(reason.into()))
            );
        }
        assert!(proxy_declaration("k", &served(|_| wire::Support::Supported)).is_ok());
        let refused = |declaration: wire::KindDeclaration| {
            proxy_declaration("k", &declaration)
                .expect_err("refused")
                .to_string()
        };
        let required_off = served(|op| {
            if op == "kill" {
                none()
            } else {
                wire::Support::Supported
            }
        });
        assert!(refused(required_off).contains("`kill` is declared unsupported"));
        let partial = served(|op| {
            if op == "suspend" {
                none()
            } else {
                wire::Support::Supported
            }
        });
        assert!(refused(partial).contains("all together"));
        let bad_reason = served(|op| {
            if op == "observe" {
                wire::Support::Unsupported("Not Valid".into())
            } else {
                wire::Support::Supported
            }
        });
        assert!(refused(bad_reason).contains("`observe` has a reason"));
        let mut missing = plain.clone();
        missing.operations.remove("renew");
        assert!(refused(missing).contains("`renew` is not declared"));
    }

    #[test]
    fn only_exact_reference_settlement_evidence_is_kept() {
        let own = reference("a");
        let evidence = |i: Info| is_settlement_evidence(&i, &own);
        assert!(evidence(info("a", LifecycleState::Absent, None, true)));
        assert!(evidence(info(
            "a",
            LifecycleState::Running,
            Some("id"),
            true
        )));
        assert!(
            !evidence(info("b", LifecycleState::Absent, None, true)),
            "foreign"
        );
        assert!(
            !evidence(info("a", LifecycleState::Absent, None, false)),
            "unsettled"
        );
        assert!(
            !evidence(info("a", LifecycleState::Absent, Some("id"), true)),
            "absent with an id"
        );
        assert!(
            !evidence(info("a", LifecycleState::Running, None, true)),
            "present without an id"
        );
    }
}
