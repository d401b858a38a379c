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
//! Core's side does not take a kind from the node: its mode, grants and
//! declaration come from Core's own copy of the registry, and a node whose
//! registry digest differs is refused ([`wire::REGISTRY_MISMATCH`]).
//!
//! Answers are policed as in process, by the same evidence rule: a
//! `create_settled` claim of GetInfo, Renew or Kill stands only on the
//! host's settlement record, which the node sends with the answer
//! ([`wire::OnRecord`]) and the proxy believes only for a kind whose
//! registration keeps records. A failed mutation keeps its info only when
//! it is settlement evidence for the exact reference asked about, so a
//! confused or compromised node cannot hand Core evidence about another
//! allocation. Every rewrite of an answer is logged with its rule.

use crate::budget::Budget;
use crate::client::{NodeClient, TransportError};
use crate::declaration::{self, Decision, Declaration, DeclarationError, Inventory};
use crate::police::{self, Evidence};
use crate::provider::{CheckpointProvider, SandboxProvider};
use crate::registry::{Registration, Registry};
use crate::types::{
    Bootstrap, Command, CommandResult, Compute, ComputeState, Configuration, Diagnostic, Error,
    Failure, Info, Reference, ResumeRequest, Sample, SnapshotIdentity, SuspendRequest, Target,
};
use crate::wire::{self, Call, Outcome, Value, reasons};
use oac_contract::Operation;

/// Why a proxy could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The node did not list its kinds.
    #[error("the node did not list its kinds: {0}")]
    Transport(#[from] TransportError),
    /// The node does not serve the kind.
    #[error("the node does not serve kind `{0}`")]
    UnknownKind(String),
    /// Core's registry has no such kind.
    #[error("`{0}` is not a kind of this registry")]
    Unregistered(String),
    /// The node's registry is not Core's
    /// ([`wire::REGISTRY_MISMATCH`]): the two would disagree on what a
    /// kind is, so nothing is sent to it.
    #[error(
        "registry_mismatch: node `{node}` serves registry {theirs}, this side holds {ours}; give both the same registry file"
    )]
    RegistryMismatch {
        /// The node's identity as it reports it.
        node: String,
        /// The node's digest.
        theirs: String,
        /// Core's digest.
        ours: String,
    },
    /// The node declares the kind otherwise than Core's registry pins.
    #[error("the node declares `{0}` otherwise than the registry pins")]
    NotAsPinned(String),
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
    /// Whether the kind's registration keeps settlement records (Core's
    /// copy of the registry says so, not the node).
    keeps_records: bool,
}

/// What came back for one forwarded operation, before it is shaped.
enum Answer {
    /// The operation's value.
    Value(Value),
    /// A fixed error code, with the info the node attached and the
    /// settlement record it says the info rests on.
    Failed(Error, Option<Info>, Option<police::Settled>),
    /// No answer that proves anything.
    Unknown,
}

/// An operation a node never forwards, with the reason the proxy gives.
type NotForwarded = (Operation, &'static str);
const BATCH: NotForwarded = (Operation::ObserveBatch, reasons::BATCH);
const DISCOVERY: NotForwarded = (Operation::DiscoverSelection, reasons::DISCOVERY);
const VERIFICATION: NotForwarded = (Operation::VerifyCredential, reasons::VERIFICATION);
const NOT_FORWARDED: [NotForwarded; 3] = [BATCH, DISCOVERY, VERIFICATION];

/// The proxy's declaration of `kind` from the node's: the forwarded
/// operations as the node declares them, checked by the same rules as a
/// component's declaration, and the operations a node never forwards as
/// unsupported.
fn proxy_declaration(
    kind: &str,
    served: &wire::KindDeclaration,
) -> Result<Declaration, ProxyError> {
    let forwarded: Vec<Operation> = Operation::forwarded_operations().collect();
    let entries: Vec<(String, Decision)> = forwarded
        .iter()
        .filter_map(|operation| {
            let decision = match served.operations.get(operation.name())? {
                wire::Support::Supported => Decision::Supported,
                wire::Support::Unsupported(reason) => Decision::Unsupported(reason.clone()),
            };
            Some((operation.name().to_string(), decision))
        })
        .collect();
    let Declaration(mut decisions) =
        declaration::validate_declaration(&Inventory(forwarded), &entries).map_err(|why| {
            ProxyError::Declaration {
                kind: kind.to_string(),
                why,
            }
        })?;
    for (operation, reason) in NOT_FORWARDED {
        decisions.insert(operation, Decision::Unsupported(reason.into()));
    }
    Ok(Declaration(decisions))
}

/// The answer to an operation a node never forwards.
fn not_forwarded((operation, reason): NotForwarded) -> Error {
    Error::unsupported(operation.name(), reason)
}

/// The value the operation expects, or `unknown` for anything else.
fn expect<T>(
    answer: Answer,
    unknown: Error,
    pick: impl FnOnce(Value) -> Option<T>,
) -> Result<T, Error> {
    match answer {
        Answer::Value(value) => pick(value).ok_or(unknown),
        Answer::Failed(error, ..) => Err(error),
        Answer::Unknown => Err(unknown),
    }
}

fn info(value: Value) -> Option<Info> {
    match value {
        Value::Info(info) => Some(info),
        Value::InfoOnRecord(on_record) => Some(on_record.info),
        _ => None,
    }
}

fn compute(value: Value) -> Option<Compute> {
    match value {
        Value::Compute(compute) => Some(compute),
        _ => None,
    }
}

fn compute_state(value: Value) -> Option<ComputeState> {
    match value {
        Value::ComputeState(state) => Some(*state),
        _ => None,
    }
}

fn command_result(value: Value) -> Option<CommandResult> {
    match value {
        Value::CommandResult(result) => Some(result),
        _ => None,
    }
}

fn done(value: Value) -> Option<()> {
    matches!(value, Value::Done).then_some(())
}

/// The proxy's declaration of `kind`: the forwarded operations as Core's
/// registry pins them (and as the node must declare them too), or, for a
/// row that pins none (tables tests build), as the node declares them; the
/// operations a node never forwards are unsupported.
fn declaration_of(
    row: &Registration,
    served: &wire::KindDeclaration,
) -> Result<Declaration, ProxyError> {
    let from_node = proxy_declaration(&row.kind, served)?;
    if row.unsupported.is_none() {
        return Ok(from_node);
    }
    let pinned: Vec<(String, Decision)> = Operation::forwarded_operations()
        .filter_map(|operation| Some((operation.name().to_string(), row.pinned(operation)?)))
        .collect();
    let served_pinned = wire::KindDeclaration {
        operations: pinned
            .iter()
            .map(|(name, decision)| {
                let support = match decision {
                    Decision::Supported => wire::Support::Supported,
                    Decision::Unsupported(reason) => wire::Support::Unsupported(reason.clone()),
                };
                (name.clone(), support)
            })
            .collect(),
    };
    let ours = proxy_declaration(&row.kind, &served_pinned)?;
    if ours != from_node {
        return Err(ProxyError::NotAsPinned(row.kind.clone()));
    }
    Ok(ours)
}

/// What an answer's settlement claim rests on: the record the node sent,
/// when the kind's registration keeps records; else nothing but the answer.
fn evidence(keeps_records: bool, record: Option<police::Settled>) -> Evidence {
    match record {
        Some(record) if keeps_records => Evidence::Recorded(record),
        _ => Evidence::Answer,
    }
}

/// The record an answer says its claim rests on.
fn record_of(answer: &Answer) -> Option<police::Settled> {
    match answer {
        Answer::Value(Value::InfoOnRecord(on_record)) => Some(on_record.record.clone()),
        Answer::Failed(_, _, record) => record.clone(),
        _ => None,
    }
}

/// Logs when policing changed what the node answered, naming the rule.
fn log_rewrite<T: PartialEq>(kind: &str, operation: Operation, before: &T, after: &T, rule: &str) {
    if before != after {
        tracing::warn!(
            kind,
            operation = operation.name(),
            rule,
            event = "answer_rewritten",
            "the node's answer was not accepted as given"
        );
    }
}

impl RemoteProvider {
    /// Connects to `kind` on the node: refused unless the node holds the
    /// same registry as `registry` (Core's own copy), serves the kind, and
    /// declares it as the registry pins (the required five supported,
    /// checkpoint all or nothing, reasons well-formed).
    pub async fn connect(
        client: NodeClient,
        registry: &Registry,
        kind: &str,
        budget: Budget,
    ) -> Result<Self, ProxyError> {
        let listed = client.kinds(budget).await?;
        let ours = registry.digest();
        if listed.registry != ours {
            return Err(ProxyError::RegistryMismatch {
                node: listed.node,
                theirs: listed.registry,
                ours,
            });
        }
        let row = registry
            .get(kind)
            .ok_or_else(|| ProxyError::Unregistered(kind.to_string()))?;
        let served = listed
            .kinds
            .get(kind)
            .ok_or_else(|| ProxyError::UnknownKind(kind.to_string()))?;
        Ok(Self {
            client,
            kind: kind.to_string(),
            declaration: declaration_of(row, served)?,
            keeps_records: row.keeps_settlement_records(),
        })
    }

    /// A mutation's answer, policed like an in-process kind's, on the
    /// evidence the node sent if the registry lets the kind have it.
    #[allow(clippy::result_large_err)] // `Failure` is the contract's shape
    fn mutation(
        &self,
        operation: Operation,
        answer: Answer,
        allocation: &Reference,
    ) -> Result<Info, Failure> {
        let evidence = evidence(self.keeps_records, record_of(&answer));
        let answer = match answer {
            Answer::Failed(error, info, _) => Err(Failure { error, info }),
            other => expect(other, Error::ComputeUnconfirmed, info).map_err(Failure::from),
        };
        let policed = police::mutation(operation, answer.clone(), allocation, &evidence);
        log_rewrite(&self.kind, operation, &answer, &policed, "mutation");
        policed
    }

    /// The served kind's name.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Sends one call, once.
    async fn forward(&self, call: Call, budget: Budget) -> Answer {
        match self.client.call(&self.kind, budget, call).await {
            Ok(Outcome::Ok(value)) => Answer::Value(value),
            Ok(Outcome::Error {
                error,
                info,
                record,
            }) => match error {
                // `unsupported` from an operation declared supported
                // contradicts the declaration: the outcome is unknown.
                Error::Unsupported(_) => Answer::Unknown,
                error => Answer::Failed(error, info, record),
            },
            Err(TransportError::Refused("invalid")) => Answer::Failed(Error::Invalid, None, None),
            Err(_) => Answer::Unknown,
        }
    }

    /// Checks the declaration (no request for an unsupported operation),
    /// then forwards.
    async fn checked(&self, call: Call, budget: Budget) -> Result<Answer, Error> {
        self.declaration.check(call.operation())?;
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
        self.declaration
            .supports_checkpoint()
            .then_some(RemoteCheckpoint { provider: self })
    }

    async fn create(&self, request: Bootstrap, budget: Budget) -> Result<Info, Failure> {
        let allocation = request.reference.clone();
        let answer = self.checked(Call::Create(request), budget).await?;
        self.mutation(Operation::Create, answer, &allocation)
    }

    async fn get_info(&self, allocation: Reference, budget: Budget) -> Result<Info, Error> {
        let call = Call::GetInfo(allocation.clone());
        let answer = self.checked(call, budget).await?;
        let evidence = evidence(self.keeps_records, record_of(&answer));
        let answer = expect(answer, Error::ComputeUnconfirmed, info);
        let policed = police::read(answer.clone(), &allocation, &evidence);
        log_rewrite(&self.kind, Operation::GetInfo, &answer, &policed, "read");
        policed
    }

    async fn renew(&self, allocation: Reference, budget: Budget) -> Result<Info, Failure> {
        let call = Call::Renew(allocation.clone());
        let answer = self.checked(call, budget).await?;
        self.mutation(Operation::Renew, answer, &allocation)
    }

    async fn kill(&self, allocation: Reference, budget: Budget) -> Result<Info, Failure> {
        let call = Call::Kill(allocation.clone());
        let answer = self.checked(call, budget).await?;
        self.mutation(Operation::Kill, answer, &allocation)
    }

    async fn run_command(
        &self,
        allocation: Reference,
        request: Command,
        budget: Budget,
    ) -> Result<CommandResult, Error> {
        if !request.is_valid() {
            return Err(Error::Invalid);
        }
        let call = Call::RunCommand(wire::OnAllocation {
            reference: allocation,
            request,
        });
        let answer = self.checked(call, budget).await?;
        police::command(expect(answer, Error::CommandUnconfirmed, command_result))
    }

    async fn observe(&self, target: Target, budget: Budget) -> Result<Sample, Error> {
        let answer = self.checked(Call::Observe(target), budget).await?;
        let unavailable = Error::ObservationUnavailable;
        police::observation(expect(answer, unavailable, |value| match value {
            Value::Sample(sample) => Some(sample),
            _ => None,
        }))
    }

    async fn observe_batch(
        &self,
        _targets: Vec<Target>,
        _budget: Budget,
    ) -> Result<Vec<Result<Sample, Error>>, Error> {
        Err(not_forwarded(BATCH))
    }

    async fn discover_selection(
        &self,
        _candidate: Configuration,
        _budget: Budget,
    ) -> Result<Configuration, Error> {
        Err(not_forwarded(DISCOVERY))
    }

    async fn verify_credential(
        &self,
        _candidate: Configuration,
        _references: Vec<Reference>,
        _budget: Budget,
    ) -> Result<(), Error> {
        Err(not_forwarded(VERIFICATION))
    }

    /// The kind's diagnostics from the node's `/health`.
    async fn probe(&self, budget: Budget) -> Result<Vec<Diagnostic>, Error> {
        let health = self
            .client
            .health(budget)
            .await
            .map_err(|_| Error::ObservationUnavailable)?;
        health
            .kinds
            .get(&self.kind)
            .cloned()
            .ok_or(Error::ObservationUnavailable)
    }
}

/// The checkpoint operations of a served kind that declares them.
pub struct RemoteCheckpoint<'a> {
    provider: &'a RemoteProvider,
}

impl RemoteCheckpoint<'_> {
    async fn send(&self, call: Call, budget: Budget) -> Result<Answer, Error> {
        self.provider.checked(call, budget).await
    }
}

impl CheckpointProvider for RemoteCheckpoint<'_> {
    async fn initial(&self, allocation: Reference, budget: Budget) -> Result<Compute, Error> {
        let answer = self.send(Call::Initial(allocation), budget).await?;
        let answer = expect(answer, Error::ComputeUnconfirmed, compute);
        police::constructed(Operation::Initial, answer, 0, None)
    }

    async fn new_compute(
        &self,
        allocation: Reference,
        generation: u64,
        restored_from: Option<SnapshotIdentity>,
        budget: Budget,
    ) -> Result<Compute, Error> {
        let call = Call::NewCompute(wire::NewCompute {
            reference: allocation,
            generation,
            restored_from: restored_from.clone(),
        });
        let answer = self.send(call, budget).await?;
        let answer = expect(answer, Error::ComputeUnconfirmed, compute);
        police::constructed(
            Operation::NewCompute,
            answer,
            generation,
            restored_from.as_ref(),
        )
    }

    async fn get_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        let call = Call::GetCompute(wire::OnCompute {
            reference: allocation,
            compute: incarnation.clone(),
        });
        let answer = self.send(call, budget).await?;
        let answer = expect(answer, Error::ComputeUnconfirmed, compute_state);
        police::compute_state(Operation::GetCompute, answer, &incarnation)
    }

    async fn suspend(
        &self,
        request: SuspendRequest,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        let answer = self.send(Call::Suspend(request.clone()), budget).await?;
        police::suspended(
            expect(answer, Error::ComputeUnconfirmed, compute_state),
            &request,
        )
    }

    async fn resume(&self, request: ResumeRequest, budget: Budget) -> Result<ComputeState, Error> {
        let answer = self.send(Call::Resume(request.clone()), budget).await?;
        police::resumed(
            expect(answer, Error::ComputeUnconfirmed, compute_state),
            &request,
        )
    }

    async fn resume_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        let call = Call::ResumeCompute(wire::OnCompute {
            reference: allocation,
            compute: incarnation.clone(),
        });
        let answer = self.send(call, budget).await?;
        police::thawed(
            expect(answer, Error::ComputeUnconfirmed, compute_state),
            &incarnation,
        )
    }

    async fn kill_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<(), Error> {
        let call = Call::KillCompute(wire::OnCompute {
            reference: allocation,
            compute: incarnation,
        });
        let answer = self.send(call, budget).await?;
        expect(answer, Error::ComputeUnconfirmed, done)
    }

    async fn delete_snapshot(
        &self,
        allocation: Reference,
        snapshot: SnapshotIdentity,
        budget: Budget,
    ) -> Result<(), Error> {
        let call = Call::DeleteSnapshot(wire::OnSnapshot {
            reference: allocation,
            snapshot,
        });
        let answer = self.send(call, budget).await?;
        expect(answer, Error::ComputeUnconfirmed, done)
    }

    async fn run_command_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        request: Command,
        budget: Budget,
    ) -> Result<CommandResult, Error> {
        if !request.is_valid() {
            return Err(Error::Invalid);
        }
        let call = Call::RunCommandCompute(wire::CommandOnCompute {
            reference: allocation,
            compute: incarnation,
            request,
        });
        let answer = self.send(call, budget).await?;
        police::command(expect(answer, Error::CommandUnconfirmed, command_result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oac_contract::Interface;

    fn served(decide: impl Fn(Operation) -> wire::Support) -> wire::KindDeclaration {
        let operations = Operation::forwarded_operations()
            .map(|operation| (operation.name().to_string(), decide(operation)))
            .collect();
        wire::KindDeclaration { operations }
    }

    fn checkpoint(operation: Operation) -> bool {
        operation.interface() == Interface::CheckpointProvider
    }

    /// A node's record counts only where Core's registry row keeps
    /// records; then the claim must still agree with it.
    #[test]
    fn a_record_is_believed_only_for_a_kind_that_keeps_records() {
        let settled = police::Settled::Present("id-1".into());
        assert_eq!(
            evidence(true, Some(settled.clone())),
            Evidence::Recorded(settled.clone())
        );
        assert_eq!(evidence(false, Some(settled.clone())), Evidence::Answer);
        assert_eq!(evidence(true, None), Evidence::Answer);
        let allocation = crate::types::Reference::new("t", "e", "a");
        let claim = Info {
            reference: allocation.clone(),
            provider_id: Some("id-1".into()),
            state: crate::types::LifecycleState::Running,
            bootstrap_complete: true,
            create_settled: true,
        };
        let on_record = |keeps| {
            let answer = Answer::Value(Value::InfoOnRecord(wire::OnRecord {
                info: claim.clone(),
                record: settled.clone(),
            }));
            let evidence = evidence(keeps, record_of(&answer));
            police::read(
                expect(answer, Error::ComputeUnconfirmed, info),
                &allocation,
                &evidence,
            )
        };
        assert_eq!(on_record(true), Ok(claim.clone()));
        assert_eq!(on_record(false), Err(Error::ComputeUnconfirmed));
    }

    /// With a row that pins its declaration, Core's copy decides; a node
    /// that declares the kind otherwise is refused.
    #[test]
    fn a_pinned_row_decides_the_declaration() {
        let row = crate::registry::builtin()
            .into_iter()
            .find(|row| row.kind == "docker")
            .expect("docker");
        let as_pinned = served(|op| match row.pinned(op) {
            Some(Decision::Unsupported(reason)) => wire::Support::Unsupported(reason),
            _ => wire::Support::Supported,
        });
        let declared = declaration_of(&row, &as_pinned).expect("as pinned");
        assert!(declared.supports(Operation::Observe));
        assert!(!declared.supports_checkpoint());
        let widened = served(|_| wire::Support::Supported);
        assert!(matches!(
            declaration_of(&row, &widened),
            Err(ProxyError::NotAsPinned(kind)) if kind == "docker"
        ));
    }

    #[test]
    fn the_nodes_declaration_must_follow_the_contract() {
        let none = || wire::Support::Unsupported("none".into());
        let plain = served(|op| {
            if checkpoint(op) {
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
            if op == Operation::Kill {
                none()
            } else {
                wire::Support::Supported
            }
        });
        assert!(refused(required_off).contains("`kill` is declared unsupported"));
        let partial = served(|op| {
            if op == Operation::Suspend {
                none()
            } else {
                wire::Support::Supported
            }
        });
        assert!(refused(partial).contains("all together"));
        let bad_reason = served(|op| {
            if op == Operation::Observe {
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
}
