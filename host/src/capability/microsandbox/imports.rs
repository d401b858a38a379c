//! The component's `microsandbox` imports. Each function names an
//! allocation of the call and an incarnation by its generation; the host
//! derives the names, checks what the runtime has under them (ownership
//! labels, native id, ancestry, the VM policy) and only then sends the
//! change, guarded so the helper re-checks it on the handle it acts on.
//! Every helper call crosses the boundary (shown to the hook, never sent
//! after the deadline, never retried) and runs to its end.

use super::helper::HelperFailure;
use super::names::VmNames;
use super::policy::RUNTIME_USER;
use super::readiness::{self, HELPER_UNAVAILABLE, Readiness};
use super::{Broker, VmAction};
use crate::bindings::oac::sandbox_provider::microsandbox::{self as wit, VmError};
use crate::bindings::oac::sandbox_provider::types::Reference as WitReference;
use crate::capability::Call;
use crate::capability::boundary::{Action, Crossing, Decided, Effect, ImportCall};
use crate::capability::docker::request::{MAX_EXEC_ARGS, is_container_path};
use crate::capability::scope::{INSTALLATION_LABEL, ownership_labels};
use base64::Engine as _;
use oac_contract::bounds::{MAX_OUTPUT_BYTES, MAX_STDIN_BYTES};
use oac_helper_protocol::{
    ErrorCode, ExecCommand, Guard, Metrics, Operation, Outcome, Snapshot, Vm, VmStatus,
};
use oac_provider_api::types::Reference;
use std::collections::BTreeMap;

/// The host's bootstrap label: `pending` from create until the component
/// marks the bootstrap done, then `complete`. Root exec only while pending.
pub const BOOTSTRAP_LABEL: &str = "io.oac.bootstrap";
/// [`BOOTSTRAP_LABEL`] before the bootstrap is done.
pub const BOOTSTRAP_PENDING: &str = "pending";
/// [`BOOTSTRAP_LABEL`] once it is done.
pub const BOOTSTRAP_COMPLETE: &str = "complete";
/// A snapshot's suspend operation.
pub const OPERATION_LABEL: &str = "io.oac.operation";
/// The native id of a snapshot's source.
pub const SOURCE_ID_LABEL: &str = "io.oac.source_id";
/// The generation of a snapshot's source.
pub const SOURCE_GENERATION_LABEL: &str = "io.oac.source_generation";

/// What a `microsandbox` import sees of its call.
pub(crate) struct View<'a> {
    pub(crate) call: &'a Call,
}

linked_through_view!(Microsandbox, wit);

/// [`crate::capability::refused`] for the microsandbox policy.
fn refused(rule: &'static str, error: VmError) -> VmError {
    crate::capability::refused("microsandbox", rule, error)
}

/// One function's reach: the kind's broker and the allocation it names,
/// with that allocation's names and ownership labels.
struct Owned {
    broker: Broker,
    names: VmNames,
    labels: BTreeMap<String, String>,
}

impl Owned {
    /// Whether `labels` carry all four of the allocation's.
    fn labels_ours(&self, labels: &BTreeMap<String, String>) -> bool {
        self.labels
            .iter()
            .all(|(key, value)| labels.get(key) == Some(value))
    }

    /// Whether `labels` carry none of the ownership labels (a restored VM
    /// before the host labels it).
    fn unlabelled(&self, labels: &BTreeMap<String, String>) -> bool {
        self.labels.keys().all(|key| !labels.contains_key(key))
    }

    /// What the component sees of `vm`.
    fn state(&self, vm: &Vm) -> wit::VmState {
        wit::VmState {
            id: vm.id.clone(),
            name: vm.name.clone(),
            status: status(vm.status),
            bootstrap_complete: vm.labels.get(BOOTSTRAP_LABEL).map(String::as_str)
                == Some(BOOTSTRAP_COMPLETE),
            snapshot_parent: vm.snapshot_parent.clone(),
            conforms: self.broker.policy.conforms(vm),
        }
    }

    /// Whether `record` is what this allocation's names make of it.
    fn fits(&self, record: &wit::VmSnapshot) -> bool {
        self.names.snapshot_reference(&record.operation_id).as_ref()
            == Some(&record.native_reference)
            && record.source_name == self.names.vm(record.source_generation)
    }

    /// The snapshot group and member of `record`'s operation.
    fn address(&self, operation_id: &str) -> Result<(String, String), VmError> {
        let member = VmNames::snapshot_member(operation_id)
            .ok_or_else(|| refused("operation_id", VmError::Invalid))?;
        Ok((self.names.snapshot_group(), member))
    }

    /// The record of `artifact`, when it is this allocation's, full,
    /// verified and addressed as its operation's: `ownership` when its
    /// labels are not the allocation's, `failed` when it is not a full,
    /// verified snapshot.
    fn record(&self, artifact: &Snapshot) -> Result<wit::VmSnapshot, VmError> {
        if !self.labels_ours(&artifact.labels) {
            return Err(refused("snapshot_not_owned", VmError::Ownership));
        }
        let label = |key: &str| artifact.labels.get(key).cloned().unwrap_or_default();
        let operation_id = label(OPERATION_LABEL);
        let source_generation = label(SOURCE_GENERATION_LABEL).parse::<u64>();
        let (group, member) = self.address(&operation_id)?;
        let (Ok(source_generation), true) = (
            source_generation,
            artifact.group == group && artifact.member == member,
        ) else {
            return Err(refused("snapshot_not_owned", VmError::Ownership));
        };
        let Some(verified) = artifact.verified.as_ref().filter(|verified| {
            artifact.full && verified.digest == artifact.digest && !artifact.digest.is_empty()
        }) else {
            return Err(refused("snapshot_not_verified", VmError::Failed));
        };
        Ok(wit::VmSnapshot {
            native_reference: format!("{group}:{member}"),
            id: artifact.id.clone(),
            digest: artifact.digest.clone(),
            checkpoint_id: verified.checkpoint_id.clone(),
            checkpoint_root: verified.checkpoint_root.clone(),
            operation_id,
            source_generation,
            source_name: self.names.vm(source_generation),
            source_id: label(SOURCE_ID_LABEL),
        })
    }

    /// A guard for `vm` as resolved: its id and, when it carries them, the
    /// allocation's labels.
    fn guard(&self, resolved: &Resolved) -> Guard {
        Guard {
            name: resolved.vm.name.clone(),
            id: resolved.vm.id.clone(),
            labels: if resolved.labelled {
                self.labels.clone()
            } else {
                BTreeMap::new()
            },
        }
    }
}

/// How an incarnation may be named.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lookup {
    /// Exactly: a restored incarnation with its ancestry.
    Exact,
    /// For a read: a restored incarnation may be named by its generation
    /// alone (an observation does not know its snapshot).
    Read,
}

/// A VM found under an incarnation's derived name and checked.
struct Resolved {
    vm: Vm,
    /// It carries the allocation's labels (a restored VM the host has not
    /// labelled yet does not; its ancestry proved it).
    labelled: bool,
}

fn status(status: VmStatus) -> wit::VmStatus {
    match status {
        VmStatus::Starting => wit::VmStatus::Starting,
        VmStatus::Running => wit::VmStatus::Running,
        VmStatus::Draining => wit::VmStatus::Draining,
        VmStatus::Paused => wit::VmStatus::Paused,
        VmStatus::Stopped => wit::VmStatus::Stopped,
        VmStatus::Crashed => wit::VmStatus::Crashed,
    }
}

/// `labels` as the boundary's decision shows them: under a
/// foreign-ownership fault, another installation's.
fn as_shown(decided: &Decided, labels: &mut BTreeMap<String, String>) {
    if decided.shows_foreign() {
        labels.insert(INSTALLATION_LABEL.into(), "another-installation".into());
    }
}

/// The component's error for a helper's fixed code.
fn from_code(code: ErrorCode) -> VmError {
    match code {
        ErrorCode::Invalid => VmError::Invalid,
        ErrorCode::NotFound => VmError::NotFound,
        ErrorCode::Exists => VmError::Exists,
        ErrorCode::Replaced => VmError::Ownership,
        ErrorCode::Failed => VmError::Failed,
        ErrorCode::NoVirtualisation => VmError::NotReady,
        ErrorCode::CommandUnconfirmed => VmError::CommandUnconfirmed,
        ErrorCode::Unconfirmed => VmError::Unconfirmed,
    }
}

/// The component's error for a helper call that ended without an answer.
fn from_crossing(crossing: Crossing<HelperFailure>) -> VmError {
    match crossing {
        Crossing::NotSent
        | Crossing::CleanupFailed
        | Crossing::Native(HelperFailure::NotStarted) => VmError::Unavailable,
        Crossing::Lost | Crossing::Native(HelperFailure::Unconfirmed) => VmError::Unconfirmed,
    }
}

/// The outcome of a helper call, or the error it means.
fn answered(outcome: Result<Outcome, Crossing<HelperFailure>>) -> Result<Outcome, VmError> {
    match outcome {
        Ok(Outcome::Error { code }) => Err(from_code(code)),
        Ok(outcome) => Ok(outcome),
        Err(crossing) => Err(from_crossing(crossing)),
    }
}

/// An answer of another shape than the operation's: the helper is not
/// speaking the protocol, so what it did is unknown.
fn unexpected<T>() -> Result<T, VmError> {
    Err(VmError::Unconfirmed)
}

impl View<'_> {
    /// The kind's broker, after showing the hook the function the component
    /// called (before any policy decision): a pure call reaches nothing,
    /// and a call that may only read changes nothing.
    fn broker(
        &self,
        function: &'static str,
        target: &str,
        effect: Effect,
    ) -> Result<Broker, VmError> {
        let broker = self
            .call
            .capabilities
            .microsandbox
            .clone()
            .ok_or_else(|| refused("not_granted", VmError::Denied))?;
        broker.boundary.note_call(ImportCall {
            capability: "microsandbox",
            function,
            target,
            effect,
        });
        let scope = &self.call.scope;
        if !scope.may_reach() {
            return Err(refused("pure_call_reaches_nothing", VmError::Denied));
        }
        if effect != Effect::Reads && !scope.may_change() {
            return Err(refused("reading_call_changes_nothing", VmError::Denied));
        }
        Ok(broker)
    }

    /// [`Self::broker`] for a function on `allocation`, which must be one
    /// of the call's.
    fn owned(
        &self,
        function: &'static str,
        allocation: WitReference,
        effect: Effect,
    ) -> Result<Owned, VmError> {
        let reference: Reference = allocation.into();
        let installation = &self.call.capabilities.installation_id;
        let names = VmNames::of(installation, &reference);
        let broker = self.broker(function, &names.vm(0), effect)?;
        if !self.call.scope.references().contains(&reference) {
            return Err(refused("not_the_calls_allocation", VmError::Ownership));
        }
        Ok(Owned {
            broker,
            names,
            labels: ownership_labels(installation, &reference)
                .into_iter()
                .collect(),
        })
    }

    /// Runs one helper operation across the boundary, within the call's
    /// deadline; the helper is counted in the call's helpers until it
    /// exits.
    async fn send(
        &self,
        broker: &Broker,
        operation: Operation,
        target: &str,
        host_cleanup: bool,
    ) -> (Decided, Result<Outcome, Crossing<HelperFailure>>) {
        let decided = broker.boundary.decide(
            Action::Microsandbox(VmAction::of(&operation)),
            target,
            host_cleanup,
        );
        let call = self.call;
        let sending = broker.helper.call(operation, call.deadline, &call.helpers);
        let outcome = broker
            .boundary
            .dispatch_judged(
                &decided,
                call.deadline,
                &call.in_flight,
                sending,
                |outcome| !matches!(outcome, Outcome::Error { .. }),
            )
            .await;
        (decided, outcome)
    }

    /// Probes the node and judges it (a helper that cannot tell makes the
    /// node not ready); the judgement is remembered for creates and
    /// restores.
    async fn judge(&self, broker: &Broker) -> Readiness {
        let (_, outcome) = self.send(broker, Operation::Probe, "", false).await;
        let readiness = match answered(outcome) {
            Ok(Outcome::Probe { probe }) => readiness::judge(&probe, &broker.pin),
            _ => Readiness::not(HELPER_UNAVAILABLE),
        };
        broker.learn_readiness(&readiness);
        readiness
    }

    /// Whether a VM may be booted: the last judgement when recent, else a
    /// new probe. A node known not ready answers `not-ready` with nothing
    /// sent.
    async fn ready(&self, broker: &Broker) -> Result<(), VmError> {
        let readiness = match broker.known_readiness() {
            Some(known) => known,
            None => self.judge(broker).await,
        };
        if readiness.is_ready() {
            Ok(())
        } else {
            Err(refused("node_not_ready", VmError::NotReady))
        }
    }

    /// The VM of `target`, checked: the one under its derived name, with
    /// the id the component names, this allocation's (its labels, or, for a
    /// restored incarnation the host has not labelled yet, an ancestry in a
    /// snapshot that is), and with exactly the ancestry `target` claims.
    /// A read may name a restored incarnation without its ancestry; the VM
    /// must then carry the allocation's labels.
    async fn resolve(
        &self,
        owned: &Owned,
        target: &wit::Incarnation,
        lookup: Lookup,
    ) -> Result<Resolved, VmError> {
        let by_labels = target.restored_from.is_none() && target.generation > 0;
        match (&target.restored_from, target.generation) {
            (None, 0) => {}
            (None, _) if lookup == Lookup::Read => {}
            (Some(record), generation)
                if generation > record.source_generation && owned.fits(record) => {}
            _ => return Err(refused("incarnation", VmError::Invalid)),
        }
        let name = owned.names.vm(target.generation);
        let (decided, outcome) = self
            .send(
                &owned.broker,
                Operation::Get { name: name.clone() },
                &name,
                false,
            )
            .await;
        let Outcome::Vm { mut vm } = answered(outcome)? else {
            return unexpected();
        };
        as_shown(&decided, &mut vm.labels);
        let labelled = owned.labels_ours(&vm.labels);
        let ancestry = match (&target.restored_from, &vm.snapshot_parent) {
            (None, _) if by_labels => labelled,
            (None, None) => labelled,
            (Some(record), Some(parent)) if *parent == record.id => {
                labelled
                    || (owned.unlabelled(&vm.labels) && self.artifact(owned, record).await.is_ok())
            }
            _ => false,
        };
        let id_named = target.id.as_ref().is_none_or(|id| *id == vm.id);
        if !(ancestry && id_named && vm.name == name) {
            return Err(refused("vm_not_owned", VmError::Ownership));
        }
        owned.broker.boundary.ownership_shown(&decided);
        Ok(Resolved { vm, labelled })
    }

    /// The snapshot artifact of `record`, checked to be exactly it and this
    /// allocation's.
    async fn artifact(&self, owned: &Owned, record: &wit::VmSnapshot) -> Result<Snapshot, VmError> {
        let artifact = self.find(owned, &record.operation_id).await?;
        if owned.record(&artifact)? != *record {
            return Err(refused("snapshot_not_named", VmError::Ownership));
        }
        Ok(artifact)
    }

    /// The snapshot of suspend `operation_id`, as the runtime has it.
    async fn find(&self, owned: &Owned, operation_id: &str) -> Result<Snapshot, VmError> {
        let (group, member) = owned.address(operation_id)?;
        let target = format!("{group}:{member}");
        let (decided, outcome) = self
            .send(
                &owned.broker,
                Operation::GetSnapshot { group, member },
                &target,
                false,
            )
            .await;
        let Outcome::Snapshot { mut snapshot } = answered(outcome)? else {
            return unexpected();
        };
        as_shown(&decided, &mut snapshot.labels);
        if owned.labels_ours(&snapshot.labels) {
            owned.broker.boundary.ownership_shown(&decided);
        }
        Ok(snapshot)
    }

    /// Removes a VM the host just made that does not carry the policy (on
    /// the host's own account; its outcome changes nothing of the answer).
    async fn discard(&self, owned: &Owned, vm: &Vm) {
        let guard = Guard {
            name: vm.name.clone(),
            id: vm.id.clone(),
            labels: BTreeMap::new(),
        };
        let _ = self
            .send(
                &owned.broker,
                Operation::KillRemove { guard },
                &vm.name,
                true,
            )
            .await;
    }

    /// Sends a change to a resolved VM and expects `Done` or the VM back.
    async fn change(&self, owned: &Owned, operation: Operation) -> Result<Option<Vm>, VmError> {
        let target = match &operation {
            Operation::Relabel { guard, .. }
            | Operation::Pause { guard }
            | Operation::Resume { guard }
            | Operation::KillRemove { guard } => guard.name.clone(),
            _ => String::new(),
        };
        let (_, outcome) = self.send(&owned.broker, operation, &target, false).await;
        match answered(outcome)? {
            Outcome::Done => Ok(None),
            Outcome::Vm { vm } => Ok(Some(vm)),
            _ => unexpected(),
        }
    }

    /// A resolved VM that carries the policy, for a function that uses it.
    async fn usable(&self, owned: &Owned, target: &wit::Incarnation) -> Result<Resolved, VmError> {
        let resolved = self.resolve(owned, target, Lookup::Exact).await?;
        if !owned.broker.policy.conforms(&resolved.vm) {
            return Err(refused("vm_policy_not_carried", VmError::Invalid));
        }
        Ok(resolved)
    }
}

/// Checks a command against the contract's bounds.
fn check_exec(command: &wit::VmExec) -> Result<(), VmError> {
    let args_ok = !command.args.is_empty()
        && command.args.len() <= MAX_EXEC_ARGS
        && command.args.iter().all(|arg| !arg.contains('\0'));
    let dir_ok = command.working_dir.as_deref().is_none_or(is_container_path);
    let stdin_ok = command
        .stdin
        .as_ref()
        .is_none_or(|stdin| stdin.len() <= MAX_STDIN_BYTES);
    let limit_ok = command.output_limit_bytes <= MAX_OUTPUT_BYTES;
    match (args_ok, dir_ok, stdin_ok, limit_ok) {
        (false, ..) => Err(refused("exec_args", VmError::Invalid)),
        (_, false, ..) => Err(refused("exec_working_dir", VmError::Invalid)),
        (_, _, false, _) => Err(refused("exec_stdin", VmError::Invalid)),
        (.., false) => Err(refused("exec_output_limit", VmError::Invalid)),
        _ => Ok(()),
    }
}

/// A command's output as the helper sent it, within `limit` per stream.
fn output(
    output: oac_helper_protocol::ExecOutput,
    limit: u32,
) -> Result<wit::VmExecOutput, VmError> {
    let engine = base64::engine::general_purpose::STANDARD;
    let (Ok(stdout), Ok(stderr)) = (
        engine.decode(&output.stdout_base64),
        engine.decode(&output.stderr_base64),
    ) else {
        return Err(VmError::CommandUnconfirmed);
    };
    let limit = limit as usize;
    if stdout.len() > limit || stderr.len() > limit {
        return Err(VmError::CommandUnconfirmed);
    }
    Ok(wit::VmExecOutput {
        stdout,
        stderr,
        exit_code: output.exit_code,
    })
}

fn metrics(vm: &Vm, sample: Metrics) -> wit::VmMetrics {
    wit::VmMetrics {
        id: vm.id.clone(),
        name: vm.name.clone(),
        observed_at_ms: sample.observed_at_ms,
        uptime_ms: sample.uptime_ms,
        vcpu_time_ns: sample.vcpu_time_ns,
        memory_bytes: sample.memory_bytes,
        memory_limit_bytes: sample.memory_limit_bytes,
        vcpus: u32::from(vm.cpus),
    }
}

impl wit::Host for View<'_> {
    async fn name(&mut self, allocation: WitReference, generation: u64) -> Result<String, VmError> {
        let owned = self.owned("name", allocation, Effect::Reads)?;
        Ok(owned.names.vm(generation))
    }

    async fn probe(&mut self) -> Result<wit::Readiness, VmError> {
        let broker = self.broker("probe", "", Effect::Reads)?;
        let readiness = self.judge(&broker).await;
        Ok(wit::Readiness {
            ready: readiness.is_ready(),
            reason: readiness.reason.map(str::to_string),
        })
    }

    async fn create(&mut self, allocation: WitReference) -> Result<wit::VmState, VmError> {
        let owned = self.owned("create", allocation, Effect::Creates)?;
        self.ready(&owned.broker).await?;
        let name = owned.names.vm(0);
        let mut labels = owned.labels.clone();
        labels.insert(BOOTSTRAP_LABEL.into(), BOOTSTRAP_PENDING.into());
        let spec = owned.broker.policy.spec(&name, labels);
        let (decided, outcome) = self
            .send(&owned.broker, Operation::Create { spec }, &name, false)
            .await;
        let mut vm = match answered(outcome) {
            Ok(Outcome::Vm { vm }) => vm,
            Ok(_) => return unexpected(),
            Err(VmError::NotReady) => {
                owned
                    .broker
                    .learn_readiness(&Readiness::not("no_cpu_virtualisation"));
                return Err(VmError::NotReady);
            }
            Err(error) => return Err(error),
        };
        as_shown(&decided, &mut vm.labels);
        if !owned.labels_ours(&vm.labels) {
            return Err(refused("vm_not_owned", VmError::Ownership));
        }
        if vm.name != name || vm.snapshot_parent.is_some() {
            return unexpected();
        }
        owned.broker.boundary.ownership_shown(&decided);
        if !owned.broker.policy.conforms(&vm) {
            self.discard(&owned, &vm).await;
            return Err(refused("vm_policy_not_applied", VmError::Invalid));
        }
        Ok(owned.state(&vm))
    }

    async fn inspect(
        &mut self,
        allocation: WitReference,
        target: wit::Incarnation,
    ) -> Result<wit::VmState, VmError> {
        let owned = self.owned("inspect", allocation, Effect::Reads)?;
        let resolved = self.resolve(&owned, &target, Lookup::Read).await?;
        Ok(owned.state(&resolved.vm))
    }

    async fn exec(
        &mut self,
        allocation: WitReference,
        target: wit::Incarnation,
        command: wit::VmExec,
    ) -> Result<wit::VmExecOutput, VmError> {
        let owned = self.owned("exec", allocation, Effect::Changes)?;
        check_exec(&command)?;
        if self
            .call
            .carries_secret(command.args.iter().chain(&command.working_dir))
        {
            return Err(refused("secret_outside_stdin", VmError::Invalid));
        }
        let resolved = self.usable(&owned, &target).await?;
        let pending = resolved.labelled
            && resolved.vm.labels.get(BOOTSTRAP_LABEL).map(String::as_str)
                == Some(BOOTSTRAP_PENDING);
        if command.as_root && !pending {
            return Err(refused("root_after_bootstrap", VmError::Denied));
        }
        let mut guard = owned.guard(&resolved);
        if command.as_root {
            // The helper checks the label again on the handle it runs in.
            guard
                .labels
                .insert(BOOTSTRAP_LABEL.into(), BOOTSTRAP_PENDING.into());
        }
        let limit = command.output_limit_bytes;
        let engine = base64::engine::general_purpose::STANDARD;
        let operation = Operation::Exec {
            guard,
            command: ExecCommand {
                args: command.args,
                working_dir: command.working_dir,
                user: if command.as_root { "0:0" } else { RUNTIME_USER }.into(),
                stdin_base64: command.stdin.map(|stdin| engine.encode(stdin)),
                output_limit_bytes: limit,
            },
        };
        let (_, outcome) = self
            .send(&owned.broker, operation, &resolved.vm.name, false)
            .await;
        match answered(outcome) {
            Ok(Outcome::Exec { output: answer }) => output(answer, limit),
            // No exit was observed: whatever it did is unknown.
            Ok(_) | Err(VmError::Unconfirmed) => Err(VmError::CommandUnconfirmed),
            Err(error) => Err(error),
        }
    }

    async fn mark_bootstrapped(
        &mut self,
        allocation: WitReference,
        target: wit::Incarnation,
    ) -> Result<(), VmError> {
        let owned = self.owned("mark-bootstrapped", allocation, Effect::Changes)?;
        let resolved = self.resolve(&owned, &target, Lookup::Exact).await?;
        let labels = BTreeMap::from([(BOOTSTRAP_LABEL.into(), BOOTSTRAP_COMPLETE.into())]);
        let guard = owned.guard(&resolved);
        self.change(&owned, Operation::Relabel { guard, labels })
            .await
            .map(drop)
    }

    async fn pause(
        &mut self,
        allocation: WitReference,
        target: wit::Incarnation,
    ) -> Result<(), VmError> {
        let owned = self.owned("pause", allocation, Effect::Changes)?;
        let resolved = self.usable(&owned, &target).await?;
        let guard = owned.guard(&resolved);
        self.change(&owned, Operation::Pause { guard })
            .await
            .map(drop)
    }

    async fn resume(
        &mut self,
        allocation: WitReference,
        target: wit::Incarnation,
    ) -> Result<wit::VmState, VmError> {
        let owned = self.owned("resume", allocation, Effect::Changes)?;
        let resolved = self.usable(&owned, &target).await?;
        let guard = owned.guard(&resolved);
        match self.change(&owned, Operation::Resume { guard }).await? {
            Some(vm) if vm.id == resolved.vm.id => Ok(owned.state(&vm)),
            _ => unexpected(),
        }
    }

    async fn remove(
        &mut self,
        allocation: WitReference,
        target: wit::Incarnation,
    ) -> Result<(), VmError> {
        let owned = self.owned("remove", allocation, Effect::Removes)?;
        let resolved = match self.resolve(&owned, &target, Lookup::Exact).await {
            Err(VmError::NotFound) => return Ok(()),
            other => other?,
        };
        let guard = owned.guard(&resolved);
        match self.change(&owned, Operation::KillRemove { guard }).await {
            Ok(_) | Err(VmError::NotFound) => Ok(()),
            Err(error) => Err(error),
        }
    }

    async fn capture(
        &mut self,
        allocation: WitReference,
        source: wit::Incarnation,
        operation_id: String,
    ) -> Result<wit::VmSnapshot, VmError> {
        let owned = self.owned("capture", allocation, Effect::Creates)?;
        let (group, member) = owned.address(&operation_id)?;
        let resolved = self.usable(&owned, &source).await?;
        let complete =
            resolved.vm.labels.get(BOOTSTRAP_LABEL).map(String::as_str) == Some(BOOTSTRAP_COMPLETE);
        if !(resolved.labelled && complete) {
            return Err(refused("bootstrap_not_complete", VmError::Invalid));
        }
        let mut labels = owned.labels.clone();
        labels.insert(OPERATION_LABEL.into(), operation_id);
        labels.insert(SOURCE_ID_LABEL.into(), resolved.vm.id.clone());
        labels.insert(
            SOURCE_GENERATION_LABEL.into(),
            source.generation.to_string(),
        );
        let target = format!("{group}:{member}");
        let operation = Operation::Capture {
            guard: owned.guard(&resolved),
            group,
            member,
            labels: labels.clone(),
        };
        let (decided, outcome) = self.send(&owned.broker, operation, &target, false).await;
        let Outcome::Snapshot { mut snapshot } = answered(outcome)? else {
            return unexpected();
        };
        as_shown(&decided, &mut snapshot.labels);
        if !owned.labels_ours(&snapshot.labels) {
            return Err(refused("snapshot_not_owned", VmError::Ownership));
        }
        if snapshot.labels != labels {
            return unexpected();
        }
        owned.broker.boundary.ownership_shown(&decided);
        owned.record(&snapshot)
    }

    async fn find_snapshot(
        &mut self,
        allocation: WitReference,
        source: wit::Incarnation,
        operation_id: String,
    ) -> Result<wit::VmSnapshot, VmError> {
        let owned = self.owned("find-snapshot", allocation, Effect::Reads)?;
        let artifact = self.find(&owned, &operation_id).await?;
        let record = owned.record(&artifact)?;
        let from_source = record.operation_id == operation_id
            && record.source_generation == source.generation
            && source.id.as_ref().is_none_or(|id| *id == record.source_id);
        if !from_source {
            return Err(refused("snapshot_of_another_source", VmError::Ownership));
        }
        Ok(record)
    }

    async fn restore(
        &mut self,
        allocation: WitReference,
        target: wit::Incarnation,
    ) -> Result<wit::VmState, VmError> {
        let owned = self.owned("restore", allocation, Effect::Creates)?;
        let record = match &target.restored_from {
            Some(record) if target.generation > record.source_generation && owned.fits(record) => {
                record.clone()
            }
            _ => return Err(refused("incarnation", VmError::Invalid)),
        };
        // An incarnation already restored is adopted when it is this one.
        match self.resolve(&owned, &target, Lookup::Exact).await {
            Err(VmError::NotFound) => {}
            Err(error) => return Err(error),
            Ok(resolved) => return self.adopt(&owned, resolved).await,
        }
        self.ready(&owned.broker).await?;
        let artifact = self.artifact(&owned, &record).await?;
        let name = owned.names.vm(target.generation);
        let operation = Operation::Restore {
            group: artifact.group,
            member: artifact.member,
            snapshot_id: artifact.id,
            name: name.clone(),
            network: owned.broker.policy.network(),
        };
        let (_, outcome) = self.send(&owned.broker, operation, &name, false).await;
        let vm = match answered(outcome)? {
            Outcome::Vm { vm } => vm,
            _ => return unexpected(),
        };
        if vm.name != name || vm.snapshot_parent.as_ref() != Some(&record.id) {
            return unexpected();
        }
        self.adopt(
            &owned,
            Resolved {
                vm,
                labelled: false,
            },
        )
        .await
    }

    async fn delete_snapshot(
        &mut self,
        allocation: WitReference,
        snapshot: wit::VmSnapshot,
    ) -> Result<(), VmError> {
        let owned = self.owned("delete-snapshot", allocation, Effect::Removes)?;
        if !owned.fits(&snapshot) {
            return Err(refused("snapshot", VmError::Invalid));
        }
        let (group, member) = owned.address(&snapshot.operation_id)?;
        match self.artifact(&owned, &snapshot).await {
            Ok(_) => {}
            Err(VmError::NotFound) => return Ok(()),
            // An artifact that no longer verifies is still removed, by its
            // native id under the allocation's own name.
            Err(VmError::Failed) => {}
            Err(error) => return Err(error),
        }
        let target = format!("{group}:{member}");
        let operation = Operation::RemoveSnapshot {
            group,
            member,
            snapshot_id: snapshot.id,
        };
        let (_, outcome) = self.send(&owned.broker, operation, &target, false).await;
        match answered(outcome) {
            Ok(Outcome::Done) | Err(VmError::NotFound) => Ok(()),
            Ok(_) => unexpected(),
            Err(error) => Err(error),
        }
    }

    async fn metrics(
        &mut self,
        allocation: WitReference,
        target: wit::Incarnation,
    ) -> Result<wit::VmMetrics, VmError> {
        let owned = self.owned("metrics", allocation, Effect::Reads)?;
        let resolved = self.resolve(&owned, &target, Lookup::Read).await?;
        let guard = owned.guard(&resolved);
        let name = guard.name.clone();
        let (_, outcome) = self
            .send(&owned.broker, Operation::Metrics { guard }, &name, false)
            .await;
        match answered(outcome)? {
            Outcome::Metrics { metrics: sample } => Ok(metrics(&resolved.vm, sample)),
            _ => unexpected(),
        }
    }
}

impl View<'_> {
    /// Takes a restored VM as the incarnation: it must carry the policy
    /// (else, if the host has not labelled it yet, it is removed and the
    /// answer is `invalid`); an unlabelled one gets the allocation's labels
    /// and a completed bootstrap (its snapshot was captured from a
    /// completed incarnation).
    async fn adopt(&self, owned: &Owned, resolved: Resolved) -> Result<wit::VmState, VmError> {
        let mut vm = resolved.vm;
        if !owned.broker.policy.conforms(&vm) {
            if !resolved.labelled {
                self.discard(owned, &vm).await;
            }
            return Err(refused("vm_policy_not_applied", VmError::Invalid));
        }
        if !resolved.labelled {
            let mut labels = owned.labels.clone();
            labels.insert(BOOTSTRAP_LABEL.into(), BOOTSTRAP_COMPLETE.into());
            let guard = Guard {
                name: vm.name.clone(),
                id: vm.id.clone(),
                labels: BTreeMap::new(),
            };
            self.change(
                owned,
                Operation::Relabel {
                    guard,
                    labels: labels.clone(),
                },
            )
            .await?;
            vm.labels.extend(labels);
        }
        Ok(owned.state(&vm))
    }
}
