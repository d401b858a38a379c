//! A loaded, validated kind: the provider Core calls in this process. Each
//! operation checks the declaration (an unsupported operation is answered
//! here, before any instance or native I/O), runs in a fresh instance whose
//! capabilities reach only the operation's allocations, and has its answer
//! policed by the same rules as an answer from a node ([`police`]).

use crate::bindings::oac::sandbox_provider::types as wit;
use crate::call::{self, Aborted};
use crate::capability::SharedCapabilities;
use crate::capability::scope::CallScope;
use crate::credential::{Checked, Handed, Unfit};
use crate::declaration::{Declaration, Inventory};
use crate::exports::{Exports, Prepared};
use crate::registry::{Mode, Registration};
use crate::state::CallState;
use crate::turns::Turns;
use oac_contract::Operation;
use oac_contract::bounds::MAX_BATCH_TARGETS;
use oac_provider_api::Budget;
use oac_provider_api::police::Evidence;
use oac_provider_api::provider::{CheckpointProvider, ConfigurationProvider, SandboxProvider};
use oac_provider_api::secrets::{Secrets, Shown};
use oac_provider_api::types::*;
use oac_provider_api::{input, police};
use std::sync::Arc;
use tokio::sync::Semaphore;
use wasmtime::Store;

/// Whether a kind's answers are policed. Only the contract suite turns
/// policing off, to judge what a component itself answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policing {
    /// Production: the declaration is answered by the host, answers are policed.
    Enforced,
    /// Conformance testing: every operation reaches the component, and its
    /// answers come back as it gave them. Budgets, limits and capability
    /// policy still apply.
    Off,
}

/// One loaded, validated kind.
pub struct Kind {
    /// Its registry row.
    pub registration: Registration,
    /// SHA-256 of its component.
    pub digest: String,
    /// Operations derived from the component's exports.
    pub inventory: Inventory,
    /// The validated declaration.
    pub declaration: Declaration,
    pub(crate) pre: Prepared,
    pub(crate) capabilities: SharedCapabilities,
    pub(crate) permits: Arc<Semaphore>,
    pub(crate) turns: Arc<Turns>,
    /// The call fence: every call holds it shared until it ends; replacing
    /// the credential takes it exclusively.
    pub(crate) fence: Arc<tokio::sync::RwLock<()>>,
    pub(crate) policing: Policing,
    /// The host's settlement records (kinds with a store).
    pub(crate) settlements: Option<crate::settlement::Settlements>,
}

fn on(allocation: &Reference) -> CallScope {
    CallScope::changing(allocation.clone())
}

/// One call's work, given the fresh instance and its store: what
/// [`Kind::run`] runs.
pub(crate) trait InstanceCall<R>:
    for<'a> FnOnce(&'a Exports, &'a mut Store<CallState>) -> CallFuture<'a, R> + Send + 'static
{
}

impl<R, C> InstanceCall<R> for C where
    C: for<'a> FnOnce(&'a Exports, &'a mut Store<CallState>) -> CallFuture<'a, R> + Send + 'static
{
}

/// A future that runs to its end even when its caller stops waiting: it is
/// polled in the caller's task (no hand-over while the caller waits), and
/// when dropped unfinished it goes on in a task of its own. A caller that
/// leaves ends its wait, never the call (a half-run Create or command
/// helps nobody, and the reference's turn stays held until it ends).
pub(crate) struct RunsToEnd<T: Send + 'static> {
    work: Option<std::pin::Pin<Box<dyn Future<Output = T> + Send>>>,
}

impl<T: Send + 'static> RunsToEnd<T> {
    pub(crate) fn new(work: impl Future<Output = T> + Send + 'static) -> Self {
        Self {
            work: Some(Box::pin(work)),
        }
    }
}

impl<T: Send + 'static> Future for RunsToEnd<T> {
    type Output = T;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<T> {
        let this = self.get_mut();
        let Some(work) = this.work.as_mut() else {
            return std::task::Poll::Pending;
        };
        let polled = work.as_mut().poll(context);
        if polled.is_ready() {
            this.work = None;
        }
        polled
    }
}

impl<T: Send + 'static> Drop for RunsToEnd<T> {
    fn drop(&mut self) {
        // Outside a runtime (its shutdown) there is nowhere to go on.
        if let (Some(work), Ok(runtime)) = (self.work.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(work);
        }
    }
}

/// What a call does with the component's answer while it still holds its
/// allocation's turn (the host's settlement record of a Create).
pub(crate) type Then<R> =
    Box<dyn FnOnce(&R) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// One call's work in an instance: it borrows the instance and its store,
/// and owns everything else, so it can run in its own task.
pub(crate) type CallFuture<'a, R> =
    std::pin::Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 'a>>;

impl Kind {
    /// The kind's name.
    pub fn name(&self) -> &str {
        &self.registration.kind
    }

    /// Replaces the kind's credential behind the call fence: new calls wait,
    /// calls in flight (also those whose caller left) run to their end
    /// untouched, then the credential changes and the waiting calls run
    /// with it. Core verifies a candidate (`verify-credential`) first. A
    /// credential that does not fit the kind's shape is `invalid` and
    /// changes nothing.
    pub async fn replace_credential(&self, credential: Option<String>) -> Result<(), Error> {
        if !self.fits(credential.as_deref())
            || (self.registration.mode == Mode::Nodes && credential.is_some())
        {
            return Err(Error::Invalid);
        }
        let _exclusive = self.fence.write().await;
        self.capabilities.replace_credential(credential);
        tracing::info!(kind = %self.registration.kind, "credential replaced");
        Ok(())
    }

    /// One call in a fresh instance, bounded by `budget`. A call that may
    /// change its allocation first waits for its reference's turn
    /// ([`Turns`], [`CallScope::turn`]); one that gives up waiting has not
    /// run. The call then holds the turn, the call fence and the
    /// concurrency permit until it ends — `then`, given the component's
    /// answer, included — and runs to its end even if its caller leaves
    /// ([`RunsToEnd`]) or its budget ends with native work in flight.
    async fn run<R, C>(
        &self,
        scope: CallScope,
        budget: Budget,
        call: C,
        then: Option<Then<R>>,
    ) -> Result<R, Aborted>
    where
        R: Send + 'static,
        C: InstanceCall<R>,
    {
        let deadline = budget.deadline_from_now();
        let waited = async {
            let fenced = self.fence.clone().read_owned().await;
            let turn = match scope.turn() {
                Some(reference) => Some(self.turns.take(reference).await),
                None => None,
            };
            let permit = self.permits.clone().acquire_owned().await;
            (fenced, turn, permit)
        };
        let (fenced, turn, permit) = tokio::time::timeout_at(deadline.into(), waited)
            .await
            .map_err(|_| Aborted::Expired)?;
        let permit = permit.map_err(|_| Aborted::Unavailable)?;
        let pre = self.pre.clone();
        let capabilities = self.capabilities.clone();
        let policy = self.registration.policy.clone();
        // The caller's answer comes at the deadline; the call itself goes on
        // holding the turn until its native work in flight has ended
        // ([`call`]).
        let running = RunsToEnd::new(async move {
            let held = (fenced, turn, permit);
            let outcome = call::run(
                &pre,
                capabilities,
                scope,
                &policy,
                deadline,
                async move |provider, store| call(provider, store).await,
            )
            .await;
            let then = match (&outcome, then) {
                (Ok(answer), Some(then)) => Some(then(answer)),
                _ => None,
            };
            if let Some(then) = then {
                then.await;
            }
            drop(held);
            outcome
        });
        let outcome = tokio::time::timeout_at(deadline.into(), running)
            .await
            .unwrap_or(Err(Aborted::Expired));
        if let Err(aborted) = &outcome {
            tracing::warn!(kind = %self.registration.kind, outcome = aborted.code(), "call aborted");
        }
        outcome
    }

    /// The common path of every operation: the declaration (an unsupported
    /// operation is answered here, before any instance or I/O), the
    /// references of `scope` (one that is not [valid](input::reference) is
    /// `invalid`, before any instance), one call in a fresh instance
    /// serving `scope` — in its reference's turn unless it only observes —
    /// and the operation's unknown outcome when the call ends without the
    /// component's answer.
    async fn invoke<R, C>(
        &self,
        operation: Operation,
        scope: CallScope,
        budget: Budget,
        call: C,
    ) -> Result<R, Error>
    where
        R: Send + 'static,
        C: InstanceCall<R>,
    {
        self.invoke_valid(operation, scope, true, budget, call)
            .await
    }

    /// [`Self::invoke`] for an operation whose input has more than
    /// references to check: `valid` false is `invalid`, after the
    /// declaration (an unsupported operation says so whatever its input).
    async fn invoke_valid<R, C>(
        &self,
        operation: Operation,
        scope: CallScope,
        valid: bool,
        budget: Budget,
        call: C,
    ) -> Result<R, Error>
    where
        R: Send + 'static,
        C: InstanceCall<R>,
    {
        self.admit(operation, &scope, valid)?;
        // Observations prove nothing about a Create and may change nothing,
        // so they need not wait for one (and a batch would otherwise wait
        // for up to 100 turns): only a changing call takes a turn.
        self.run(scope, budget, call, None)
            .await
            .map_err(|_| police::unknown(operation))
    }

    /// What is checked before any instance: the declaration (unsupported
    /// says so whatever the input), then `valid` and the scope's references.
    fn admit(&self, operation: Operation, scope: &CallScope, valid: bool) -> Result<(), Error> {
        if self.policing == Policing::Enforced {
            self.declaration.check(operation)?;
        }
        if !(valid && scope.references().iter().all(input::reference)) {
            return Err(Error::Invalid);
        }
        Ok(())
    }

    /// The answer of a call: the host's own (unsupported before any call,
    /// or the unknown outcome of a call that ended without an answer) as it
    /// is; the component's converted to the interface's types and then
    /// `policed`, unless policing is off. An answer that shows the kind's
    /// credential anywhere Core keeps, shows or logs is the operation's
    /// unknown outcome.
    fn finish<T, E, U, F>(
        &self,
        operation: Operation,
        raw: Result<Result<T, E>, Error>,
        policed: impl FnOnce(Result<U, F>) -> Result<U, F>,
    ) -> Result<U, F>
    where
        U: From<T> + Shown,
        F: From<E> + From<Error> + Shown,
    {
        let component = match raw {
            Err(host) => return Err(host.into()),
            Ok(component) => component.map(U::from).map_err(F::from),
        };
        match self.policing {
            Policing::Enforced => {
                let answer = policed(component);
                if self.capabilities.secrets().found_in_any(answer.shown()) {
                    tracing::warn!(kind = %self.registration.kind, event = "credential_in_answer", "answer refused");
                    return Err(police::unknown(operation).into());
                }
                answer
            }
            Policing::Off => component,
        }
    }

    /// [`Self::finish`] for a plain operation: `unsupported` from an
    /// operation declared supported is its unknown outcome.
    fn plain<T, U: From<T> + Shown>(
        &self,
        operation: Operation,
        raw: Result<Result<T, wit::Error>, Error>,
    ) -> Result<U, Error> {
        self.finish(operation, raw, |answer| police::answer(operation, answer))
    }
}

impl Kind {
    /// What a later call's `create-settled` claim about `allocation` may
    /// rest on: the host's record of what a Create of it settled to
    /// ([`Evidence::Recorded`]), or nothing but the answer. (The contract
    /// suite judges a component's claims against it.)
    pub async fn settlement_evidence(&self, allocation: &Reference) -> Evidence {
        self.recorded(allocation).await
    }

    /// The host's record of what a Create of `allocation` settled to, read
    /// when awaited (in the call, so in its turn: after any Create before
    /// it has recorded its answer).
    fn recorded(&self, allocation: &Reference) -> impl Future<Output = Evidence> + Send + 'static {
        let settlements = self.settlements.clone();
        let allocation = allocation.clone();
        async move {
            match settlements {
                Some(settlements) => settlements.evidence(&allocation).await,
                None => Evidence::Answer,
            }
        }
    }

    /// The step of a Create that records, in its turn, what its policed
    /// answer settled (none for a kind without a store).
    fn record_settlement(
        &self,
        allocation: &Reference,
    ) -> Option<Then<Result<wit::Info, wit::Failure>>> {
        let settlements = self.settlements.clone()?;
        let allocation = allocation.clone();
        Some(Box::new(move |answer: &Result<wit::Info, wit::Failure>| {
            let answer: Result<Info, Failure> =
                answer.clone().map(Info::from).map_err(Failure::from);
            Box::pin(async move {
                let policed =
                    police::mutation(Operation::Create, answer, &allocation, &Evidence::Answer);
                if let Some(settled) = police::settled_by(&policed) {
                    settlements.record(&allocation, &settled).await;
                }
            })
        }))
    }
}

/// A call's answer and what its settlement claim may rest on (a call that
/// ended without an answer claims nothing).
fn with_evidence<T>(raw: Result<(T, Evidence), Error>) -> (Result<T, Error>, Evidence) {
    match raw {
        Ok((answer, evidence)) => (Ok(answer), evidence),
        Err(error) => (Err(error), Evidence::Answer),
    }
}

#[allow(clippy::result_large_err)] // `Failure` is the contract's shape
impl SandboxProvider for Kind {
    type Checkpoint<'a> = &'a Kind;

    fn declaration(&self) -> &Declaration {
        &self.declaration
    }

    fn checkpoint(&self) -> Option<&Kind> {
        self.declaration.supports_checkpoint().then_some(self)
    }

    async fn create(&self, request: Bootstrap, budget: Budget) -> Result<Info, Failure> {
        if !input::bootstrap(&request) || !self.capabilities.enforces(request.network_access) {
            return Err(Error::Invalid.into());
        }
        let allocation = request.reference.clone();
        let credential = request.daemon_credential.clone();
        let daemon_credential = Secrets::new([credential.as_str()]);
        let input = request.into();
        let scope = on(&allocation);
        self.admit(Operation::Create, &scope, true)?;
        let raw = self
            .run(
                scope,
                budget,
                move |p, s| {
                    Box::pin(async move {
                        s.data_mut().call.secrets.push(credential);
                        p.sandbox_provider(&mut *s)?.call_create(s, &input).await
                    })
                },
                self.record_settlement(&allocation),
            )
            .await
            .map_err(|_| police::unknown(Operation::Create));
        let answer = self.finish(Operation::Create, raw, |a| {
            police::mutation(Operation::Create, a, &allocation, &Evidence::Answer)
        });
        // The daemon credential goes into the compute, never back to Core.
        if self.policing == Policing::Enforced && daemon_credential.found_in_any(answer.shown()) {
            tracing::warn!(kind = %self.registration.kind, event = "credential_in_answer", "answer refused");
            return Err(police::unknown(Operation::Create).into());
        }
        answer
    }

    async fn get_info(&self, allocation: Reference, budget: Budget) -> Result<Info, Error> {
        let input = allocation.clone().into();
        let recorded = self.recorded(&allocation);
        let raw = self
            .invoke(Operation::GetInfo, on(&allocation), budget, move |p, s| {
                Box::pin(async move {
                    let answer = p
                        .sandbox_provider(&mut *s)?
                        .call_get_info(&mut *s, &input)
                        .await?;
                    Ok((answer, recorded.await))
                })
            })
            .await;
        let (raw, evidence) = with_evidence(raw);
        self.finish(Operation::GetInfo, raw, |a| {
            police::read(a, &allocation, &evidence)
        })
    }

    async fn renew(&self, allocation: Reference, budget: Budget) -> Result<Info, Failure> {
        let input = allocation.clone().into();
        let recorded = self.recorded(&allocation);
        let raw = self
            .invoke(Operation::Renew, on(&allocation), budget, move |p, s| {
                Box::pin(async move {
                    let answer = p
                        .sandbox_provider(&mut *s)?
                        .call_renew(&mut *s, &input)
                        .await?;
                    Ok((answer, recorded.await))
                })
            })
            .await;
        let (raw, evidence) = with_evidence(raw);
        self.finish(Operation::Renew, raw, |a| {
            police::mutation(Operation::Renew, a, &allocation, &evidence)
        })
    }

    async fn kill(&self, allocation: Reference, budget: Budget) -> Result<Info, Failure> {
        let input = allocation.clone().into();
        let recorded = self.recorded(&allocation);
        let checked = self.policing == Policing::Enforced;
        let raw = self
            .invoke(Operation::Kill, on(&allocation), budget, move |p, s| {
                Box::pin(async move {
                    let answer = p
                        .sandbox_provider(&mut *s)?
                        .call_kill(&mut *s, &input)
                        .await?;
                    // Absence is checked where the host can see: anything
                    // of the allocation left makes the answer unknown.
                    let claims_absence = matches!(&answer, Ok(info)
                        if info.state == wit::LifecycleState::Absent);
                    let left = s.data().call.allocation_left();
                    if checked && claims_absence && left.await {
                        let kind = &s.data().call.capabilities.kind;
                        tracing::warn!(%kind, event = "kill_left_resources", "absence refused");
                        let unknown = wit::Failure {
                            error: wit::Error::ComputeUnconfirmed,
                            info: None,
                        };
                        return Ok((Err(unknown), Evidence::Answer));
                    }
                    Ok((answer, recorded.await))
                })
            })
            .await;
        let (raw, evidence) = with_evidence(raw);
        self.finish(Operation::Kill, raw, |a| {
            police::mutation(Operation::Kill, a, &allocation, &evidence)
        })
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
        let (on_allocation, input) = (allocation.clone().into(), request.into());
        let raw = self
            .invoke(
                Operation::RunCommand,
                on(&allocation),
                budget,
                move |p, s| {
                    Box::pin(async move {
                        p.sandbox_provider(&mut *s)?
                            .call_run_command(s, &on_allocation, &input)
                            .await
                    })
                },
            )
            .await;
        self.finish(Operation::RunCommand, raw, police::command)
    }

    async fn observe(&self, target: Target, budget: Budget) -> Result<Sample, Error> {
        let scope = CallScope::reading(vec![target.reference.clone()]);
        let input = target.into();
        let raw = self
            .invoke(Operation::Observe, scope, budget, move |p, s| {
                Box::pin(
                    async move { p.observation_source(&mut *s)?.call_observe(s, &input).await },
                )
            })
            .await;
        self.finish(Operation::Observe, raw, police::observation)
    }

    async fn observe_batch(
        &self,
        targets: Vec<Target>,
        budget: Budget,
    ) -> Result<Vec<Result<Sample, Error>>, Error> {
        if targets.len() > MAX_BATCH_TARGETS {
            return Err(Error::Invalid);
        }
        let count = targets.len();
        let scope = CallScope::reading(targets.iter().map(|t| t.reference.clone()).collect());
        let input: Vec<_> = targets.into_iter().map(Into::into).collect();
        let raw = self
            .invoke(Operation::ObserveBatch, scope, budget, move |p, s| {
                Box::pin(async move {
                    p.batch_observation_source(&mut *s)?
                        .call_observe_batch(s, &input)
                        .await
                })
            })
            .await;
        let raw = raw.map(|answer| {
            answer.map(|samples| {
                samples
                    .into_iter()
                    .map(|sample| sample.map(Sample::from).map_err(Error::from))
                    .collect::<Vec<_>>()
            })
        });
        self.finish(Operation::ObserveBatch, raw, |samples| {
            police::batch(samples, count)
        })
    }

    async fn discover_selection(
        &self,
        candidate: Configuration,
        budget: Budget,
    ) -> Result<Configuration, Error> {
        let operation = Operation::DiscoverSelection;
        let secrets = credentials([&candidate]);
        let valid = self.fits(candidate.credential.as_deref());
        let Configuration { public, credential } = candidate;
        // Read-only: a scope of no allocation that may only read.
        let read_only = CallScope::node_read();
        let raw = self
            .invoke_valid(operation, read_only, valid, budget, move |p, s| {
                Box::pin(async move {
                    // The candidate's credential goes to the vendor in this
                    // call's HTTP requests, never into the component.
                    s.data_mut().call.secrets.extend(credential.clone());
                    s.data_mut().call.http.use_candidate(credential.clone());
                    let resolved = p
                        .selection_discoverer(&mut *s)?
                        .call_discover_selection(s, &public)
                        .await?;
                    Ok(resolved.map(|public| Configuration { public, credential }))
                })
            })
            .await;
        // Policed as a configuration answer: its public object is shown.
        self.shown(operation, raw, &secrets)
    }

    async fn verify_credential(
        &self,
        candidate: Configuration,
        references: Vec<Reference>,
        budget: Budget,
    ) -> Result<(), Error> {
        let operation = Operation::VerifyCredential;
        let valid =
            references.len() <= MAX_BATCH_TARGETS && self.fits(candidate.credential.as_deref());
        let Configuration { public, credential } = candidate;
        // Read-only, reaching only the given allocations.
        let scope = CallScope::reading(references.clone());
        let references: Vec<wit::Reference> = references.into_iter().map(Into::into).collect();
        let raw = self
            .invoke_valid(operation, scope, valid, budget, move |p, s| {
                Box::pin(async move {
                    s.data_mut().call.secrets.extend(credential.clone());
                    s.data_mut().call.http.use_candidate(credential);
                    p.credential_verifier(&mut *s)?
                        .call_verify_credential(s, &public, &references)
                        .await
                })
            })
            .await;
        self.plain(operation, raw)
    }

    async fn probe(&self, budget: Budget) -> Result<Vec<Diagnostic>, Error> {
        let found = self
            .invoke(
                Operation::Probe,
                CallScope::node_read(),
                budget,
                move |p, s| Box::pin(async move { p.readiness(&mut *s)?.call_probe(s).await }),
            )
            .await?;
        Ok(found.into_iter().map(Into::into).collect())
    }
}

/// Calls one checkpoint export: `$call` is the export's function, given
/// the store and borrowed arguments.
macro_rules! checkpoint_call {
    ($call:ident ( $($arg:ident),* )) => {
        move |p: &Exports, s: &mut Store<CallState>| -> CallFuture<'_, _> {
            Box::pin(async move {
                p.checkpoint_provider(&mut *s)?
                    .$call(s, $(&$arg),*)
                    .await
            })
        }
    };
}

impl CheckpointProvider for Kind {
    async fn initial(&self, allocation: Reference, budget: Budget) -> Result<Compute, Error> {
        let operation = Operation::Initial;
        let input: wit::Reference = allocation.clone().into();
        let raw = self
            .invoke(
                operation,
                on(&allocation),
                budget,
                checkpoint_call!(call_initial(input)),
            )
            .await;
        self.finish(operation, raw, |a| {
            police::constructed(operation, a, 0, None)
        })
    }

    async fn new_compute(
        &self,
        allocation: Reference,
        generation: u64,
        restored_from: Option<SnapshotIdentity>,
        budget: Budget,
    ) -> Result<Compute, Error> {
        let operation = Operation::NewCompute;
        let valid = restored_from
            .as_ref()
            .is_none_or(|from| input::snapshot(from, &allocation));
        let input: wit::Reference = allocation.clone().into();
        let from: Option<wit::SnapshotIdentity> = restored_from.clone().map(Into::into);
        let raw = self
            .invoke_valid(
                operation,
                on(&allocation),
                valid,
                budget,
                move |p: &Exports, s: &mut Store<CallState>| -> CallFuture<'_, _> {
                    Box::pin(async move {
                        p.checkpoint_provider(&mut *s)?
                            .call_new_compute(s, &input, generation, from.as_ref())
                            .await
                    })
                },
            )
            .await;
        self.finish(operation, raw, |a| {
            police::constructed(operation, a, generation, restored_from.as_ref())
        })
    }

    async fn get_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        let operation = Operation::GetCompute;
        let valid = input::compute(&incarnation, &allocation);
        let (input, compute): (wit::Reference, wit::Compute) =
            (allocation.clone().into(), incarnation.clone().into());
        let raw = self
            .invoke_valid(
                operation,
                on(&allocation),
                valid,
                budget,
                checkpoint_call!(call_get_compute(input, compute)),
            )
            .await;
        self.finish(operation, raw, |a| {
            police::compute_state(operation, a, &incarnation)
        })
    }

    async fn suspend(
        &self,
        request: SuspendRequest,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        let operation = Operation::Suspend;
        let valid = input::suspend(&request);
        let scope = on(&request.reference);
        let input: wit::SuspendRequest = request.clone().into();
        let raw = self
            .invoke_valid(
                operation,
                scope,
                valid,
                budget,
                checkpoint_call!(call_suspend(input)),
            )
            .await;
        self.finish(operation, raw, |a| police::suspended(a, &request))
    }

    async fn resume(&self, request: ResumeRequest, budget: Budget) -> Result<ComputeState, Error> {
        let operation = Operation::Resume;
        let valid = input::resume(&request);
        let scope = on(&request.reference);
        let input: wit::ResumeRequest = request.clone().into();
        let raw = self
            .invoke_valid(
                operation,
                scope,
                valid,
                budget,
                checkpoint_call!(call_resume(input)),
            )
            .await;
        self.finish(operation, raw, |a| police::resumed(a, &request))
    }

    async fn resume_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        let operation = Operation::ResumeCompute;
        let valid = input::existing_compute(&incarnation, &allocation);
        let (input, compute): (wit::Reference, wit::Compute) =
            (allocation.clone().into(), incarnation.clone().into());
        let raw = self
            .invoke_valid(
                operation,
                on(&allocation),
                valid,
                budget,
                checkpoint_call!(call_resume_compute(input, compute)),
            )
            .await;
        self.finish(operation, raw, |a| police::thawed(a, &incarnation))
    }

    async fn kill_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<(), Error> {
        let operation = Operation::KillCompute;
        let valid = input::existing_compute(&incarnation, &allocation);
        let (input, compute): (wit::Reference, wit::Compute) =
            (allocation.clone().into(), incarnation.into());
        let raw = self
            .invoke_valid(
                operation,
                on(&allocation),
                valid,
                budget,
                checkpoint_call!(call_kill_compute(input, compute)),
            )
            .await;
        self.plain(operation, raw)
    }

    async fn delete_snapshot(
        &self,
        allocation: Reference,
        snapshot: SnapshotIdentity,
        budget: Budget,
    ) -> Result<(), Error> {
        let operation = Operation::DeleteSnapshot;
        let valid = input::snapshot(&snapshot, &allocation);
        let (input, snapshot): (wit::Reference, wit::SnapshotIdentity) =
            (allocation.clone().into(), snapshot.into());
        let raw = self
            .invoke_valid(
                operation,
                on(&allocation),
                valid,
                budget,
                checkpoint_call!(call_delete_snapshot(input, snapshot)),
            )
            .await;
        self.plain(operation, raw)
    }

    async fn run_command_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        request: Command,
        budget: Budget,
    ) -> Result<CommandResult, Error> {
        let valid = input::existing_compute(&incarnation, &allocation) && input::command(&request);
        let (input, compute, command): (wit::Reference, wit::Compute, wit::Command) = (
            allocation.clone().into(),
            incarnation.into(),
            request.into(),
        );
        let raw = self
            .invoke_valid(
                Operation::RunCommandCompute,
                on(&allocation),
                valid,
                budget,
                checkpoint_call!(call_run_command_compute(input, compute, command)),
            )
            .await;
        self.finish(Operation::RunCommandCompute, raw, police::command)
    }
}

/// Calls one configuration-adapter export. The call holds no credential
/// value (only handles), but the values are kept out of its log lines all
/// the same.
macro_rules! adapter_call {
    ($secrets:expr, $call:ident ( $($arg:expr),* )) => {{
        let secrets: Vec<String> = $secrets;
        move |p: &Exports, s: &mut Store<CallState>| -> CallFuture<'_, _> {
            Box::pin(async move {
                s.data_mut().call.secrets.extend(secrets);
                p.configuration_adapter(&mut *s)?
                    .$call(s, $($arg),*)
                    .await
            })
        }
    }};
}

impl Kind {
    /// A `nodes` kind's configuration is the node's file: its public object
    /// is always `{}` and it takes no credential.
    fn node_rule(&self, configuration: &Configuration) -> bool {
        self.registration.mode != Mode::Nodes
            || (configuration.credential.is_none()
                && matches!(
                    serde_json::from_str::<serde_json::Value>(&configuration.public),
                    Ok(serde_json::Value::Object(map)) if map.is_empty()
                ))
    }

    /// Whether a candidate credential fits the kind's declared shape.
    fn fits(&self, credential: Option<&str>) -> bool {
        credential
            .is_none_or(|text| Checked::parse(&self.registration.credential_fields, text).is_some())
    }

    /// [`Self::plain`] for an adapter answer of `operation`, which Core may
    /// show and log: its handles turned back into the credentials `handed`
    /// out (any other handle is the unknown outcome), and an answer that
    /// carries any of them, in any obvious encoding, in its public or
    /// metadata text not accepted.
    fn configured<T, U: Shown>(
        &self,
        operation: Operation,
        raw: Result<Result<T, wit::Error>, Error>,
        handed: &Handed<'_>,
        back: impl FnOnce(T) -> Result<U, Unfit>,
    ) -> Result<U, Error> {
        let raw = match raw {
            Ok(Ok(answer)) => match back(answer) {
                Ok(answer) => Ok(Ok(answer)),
                Err(Unfit) => {
                    tracing::warn!(kind = %self.registration.kind, event = "credential_handle_unknown", "answer refused");
                    return Err(police::unknown(operation));
                }
            },
            Ok(Err(error)) => Ok(Err(error)),
            Err(error) => Err(error),
        };
        self.shown(operation, raw, &handed.values())
    }

    /// [`Self::plain`] for an answer Core may show and log: one carrying
    /// any of `secrets`, in any obvious encoding, is not accepted.
    fn shown<T, U: From<T> + Shown>(
        &self,
        operation: Operation,
        raw: Result<Result<T, wit::Error>, Error>,
        secrets: &[String],
    ) -> Result<U, Error> {
        let answer: U = self.plain(operation, raw)?;
        let secrets = Secrets::new(secrets.iter().map(String::as_str));
        if self.policing == Policing::Enforced && secrets.found_in_any(answer.shown()) {
            tracing::warn!(kind = %self.registration.kind, event = "credential_in_public_answer", "answer refused");
            return Err(police::unknown(operation));
        }
        Ok(answer)
    }

    /// The answer to configuration input that cannot be called with: a
    /// credential that does not fit the kind's shape, or a `nodes` kind's
    /// configuration that is not the node's rule. Unsupported still says
    /// so first, whatever the input.
    fn unfit<T>(&self, operation: Operation) -> Result<T, Error> {
        self.admit(operation, &CallScope::pure(), false)?;
        Err(Error::Invalid)
    }

    /// Handles for the credentials of one configuration call.
    fn handed(&self) -> Handed<'_> {
        Handed::new(&self.registration.credential_fields)
    }
}

/// The credentials of `configurations`, to redact.
fn credentials<'a>(configurations: impl IntoIterator<Item = &'a Configuration>) -> Vec<String> {
    configurations
        .into_iter()
        .filter_map(|c| c.credential.clone())
        .collect()
}

impl ConfigurationProvider for Kind {
    async fn requirements(&self, budget: Budget) -> Result<ConfigurationRequirements, Error> {
        let found = self
            .invoke(
                Operation::Requirements,
                CallScope::pure(),
                budget,
                move |p, s| {
                    Box::pin(
                        async move { p.configuration_adapter(&mut *s)?.call_requirements(s).await },
                    )
                },
            )
            .await?;
        Ok(found.into())
    }

    async fn decode_input(
        &self,
        public: String,
        credential: Option<String>,
        budget: Budget,
    ) -> Result<Configuration, Error> {
        let operation = Operation::DecodeInput;
        let input = Configuration { public, credential };
        let secrets = credentials([&input]);
        let mut handed = self.handed();
        let (Ok(given), true) = (handed.configuration(&input), self.node_rule(&input)) else {
            return self.unfit(operation);
        };
        let raw = self
            .invoke(
                operation,
                CallScope::pure(),
                budget,
                adapter_call!(
                    secrets,
                    call_decode_input(&given.public, given.credential.as_ref())
                ),
            )
            .await;
        self.configured(operation, raw, &handed, |a| handed.back(a))
    }

    async fn encode(
        &self,
        configuration: Configuration,
        budget: Budget,
    ) -> Result<StoredConfiguration, Error> {
        let operation = Operation::Encode;
        let secrets = credentials([&configuration]);
        let mut handed = self.handed();
        let (Ok(given), true) = (
            handed.configuration(&configuration),
            self.node_rule(&configuration),
        ) else {
            return self.unfit(operation);
        };
        let raw = self
            .invoke(
                operation,
                CallScope::pure(),
                budget,
                adapter_call!(secrets, call_encode(&given)),
            )
            .await;
        self.configured(operation, raw, &handed, |a| handed.back_stored(a))
    }

    async fn decode(
        &self,
        stored: StoredConfiguration,
        budget: Budget,
    ) -> Result<Configuration, Error> {
        let operation = Operation::Decode;
        let secrets: Vec<String> = stored
            .secret
            .iter()
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
            .collect();
        let mut handed = self.handed();
        let Ok(given) = handed.stored(&stored) else {
            return self.unfit(operation);
        };
        let raw = self
            .invoke(
                operation,
                CallScope::pure(),
                budget,
                adapter_call!(secrets, call_decode(&given)),
            )
            .await;
        self.configured(operation, raw, &handed, |a| handed.back(a))
    }

    async fn normalize(
        &self,
        configuration: Configuration,
        budget: Budget,
    ) -> Result<Configuration, Error> {
        let operation = Operation::Normalize;
        let secrets = credentials([&configuration]);
        let mut handed = self.handed();
        let (Ok(given), true) = (
            handed.configuration(&configuration),
            self.node_rule(&configuration),
        ) else {
            return self.unfit(operation);
        };
        let raw = self
            .invoke(
                operation,
                CallScope::pure(),
                budget,
                adapter_call!(secrets, call_normalize(&given)),
            )
            .await;
        self.configured(operation, raw, &handed, |a| handed.back(a))
    }

    async fn resolve_change(
        &self,
        next: Configuration,
        previous: Configuration,
        budget: Budget,
    ) -> Result<Configuration, Error> {
        let operation = Operation::ResolveChange;
        let secrets = credentials([&next, &previous]);
        let mut handed = self.handed();
        let (Ok(given_next), Ok(given_previous), true) = (
            handed.configuration(&next),
            handed.configuration(&previous),
            self.node_rule(&next) && self.node_rule(&previous),
        ) else {
            return self.unfit(operation);
        };
        let raw = self
            .invoke(
                operation,
                CallScope::pure(),
                budget,
                adapter_call!(secrets, call_resolve_change(&given_next, &given_previous)),
            )
            .await;
        self.configured(operation, raw, &handed, |a| handed.back(a))
    }

    async fn equal(
        &self,
        left: Configuration,
        right: Configuration,
        budget: Budget,
    ) -> Result<bool, Error> {
        let operation = Operation::Equal;
        let secrets = credentials([&left, &right]);
        let mut handed = self.handed();
        let (Ok(given_left), Ok(given_right), true) = (
            handed.configuration(&left),
            handed.configuration(&right),
            self.node_rule(&left) && self.node_rule(&right),
        ) else {
            return self.unfit(operation);
        };
        let raw = self
            .invoke(
                operation,
                CallScope::pure(),
                budget,
                adapter_call!(secrets, call_equal(&given_left, &given_right)),
            )
            .await;
        self.plain(operation, raw)
    }

    async fn with_credential(
        &self,
        owner: Configuration,
        candidate: String,
        budget: Budget,
    ) -> Result<Configuration, Error> {
        let operation = Operation::WithCredential;
        let mut secrets = credentials([&owner]);
        secrets.push(candidate.clone());
        let mut handed = self.handed();
        let (Ok(given_owner), Ok(given_candidate)) =
            (handed.configuration(&owner), handed.hand(&candidate))
        else {
            return self.unfit(operation);
        };
        let raw = self
            .invoke(
                operation,
                CallScope::pure(),
                budget,
                adapter_call!(
                    secrets,
                    call_with_credential(&given_owner, &given_candidate)
                ),
            )
            .await;
        self.configured(operation, raw, &handed, |a| handed.back(a))
    }

    async fn discover_configuration(
        &self,
        query: String,
        budget: Budget,
    ) -> Result<Vec<String>, Error> {
        let operation = Operation::DiscoverConfiguration;
        let raw = self
            .invoke(
                operation,
                CallScope::node_read(),
                budget,
                adapter_call!(Vec::new(), call_discover_configuration(&query)),
            )
            .await;
        self.plain(operation, raw)
    }
}
