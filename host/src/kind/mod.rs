//! A loaded, validated kind: the provider Core calls in this process. Each
//! operation checks the declaration (an unsupported operation is answered
//! here, before any instance or native I/O), runs in a fresh instance whose
//! capabilities reach only the operation's allocations, and has its answer
//! policed by the same rules as an answer from a node ([`police`]).

use crate::bindings::oac::sandbox_provider::types as wit;
use crate::call::{self, Aborted};
use crate::capability::scope::CallScope;
use crate::capability::{CallInput, SharedCapabilities};
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

mod checkpoint;
mod configuration;
mod runs_to_end;
mod sandbox;

pub(crate) use runs_to_end::RunsToEnd;

/// Whether a kind's answers are policed. Only the contract suite turns
/// policing off, to judge what a component itself answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policing {
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
    /// with it. A credential that does not fit the kind's shape is
    /// `invalid` and changes nothing; so is one a kind that verifies
    /// credentials (`verify-credential` supported) does not verify, within
    /// its default budget, against its configuration: a bad rotation never
    /// locks Core out of live allocations. Verification that gives no
    /// answer changes nothing either (its error is returned).
    pub async fn replace_credential(&self, credential: Option<String>) -> Result<(), Error> {
        if !self.fits(credential.as_deref())
            || (self.registration.mode == Mode::Nodes && credential.is_some())
        {
            return Err(Error::Invalid);
        }
        if let Some(candidate) = &credential
            && self.declaration.supports(Operation::VerifyCredential)
        {
            use crate::provider::SandboxProvider as _;
            let candidate = crate::types::Configuration {
                public: self.capabilities.configuration.clone(),
                credential: Some(candidate.clone()),
            };
            let budget = Budget::from_millis(self.registration.policy.default_budget_ms)
                .unwrap_or(Budget::MAX);
            self.verify_credential(candidate, Vec::new(), budget)
                .await?;
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
        operation: Operation,
        input: CallInput,
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
            let turn = match input.scope.turn() {
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
        // What the capabilities log of the call (a policy's refusals) names
        // its kind and operation.
        let span = tracing::warn_span!("call", kind = %self.registration.kind, operation = operation.name());
        let running = RunsToEnd::new(tracing::Instrument::instrument(
            async move {
                let held = (fenced, turn, permit);
                let outcome = call::run(
                    &pre,
                    capabilities,
                    input,
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
            },
            span,
        ));
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
        input: impl Into<CallInput>,
        budget: Budget,
        call: C,
    ) -> Result<R, Error>
    where
        R: Send + 'static,
        C: InstanceCall<R>,
    {
        self.invoke_valid(operation, input, true, budget, call)
            .await
    }

    /// [`Self::invoke`] for an operation whose input has more than
    /// references to check: `valid` false is `invalid`, after the
    /// declaration (an unsupported operation says so whatever its input).
    async fn invoke_valid<R, C>(
        &self,
        operation: Operation,
        input: impl Into<CallInput>,
        valid: bool,
        budget: Budget,
        call: C,
    ) -> Result<R, Error>
    where
        R: Send + 'static,
        C: InstanceCall<R>,
    {
        let input = input.into();
        self.admit(operation, &input.scope, valid)?;
        // Observations prove nothing about a Create and may change nothing,
        // so they need not wait for one (and a batch would otherwise wait
        // for up to 100 turns): only a changing call takes a turn.
        self.run(operation, input, budget, call, None)
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
        U: From<T> + Shown + Clone + PartialEq,
        F: From<E> + From<Error> + Shown + Clone + PartialEq,
    {
        let component = match raw {
            Err(host) => return Err(host.into()),
            Ok(component) => component.map(U::from).map_err(F::from),
        };
        match self.policing {
            Policing::Enforced => {
                // Kept only to say so when policing changes the answer
                // (e.g. drops a failure's info that proves nothing).
                let given = tracing::enabled!(tracing::Level::DEBUG).then(|| component.clone());
                let answer = policed(component);
                if given.is_some_and(|given| given != answer) {
                    tracing::debug!(
                        kind = %self.registration.kind,
                        operation = operation.name(),
                        rule = ?police::rule(operation),
                        event = "answer_rewritten",
                        "the component's answer was not accepted as given"
                    );
                }
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
    fn plain<T, U: From<T> + Shown + Clone + PartialEq>(
        &self,
        operation: Operation,
        raw: Result<Result<T, wit::Error>, Error>,
    ) -> Result<U, Error> {
        debug_assert!(matches!(
            police::rule(operation),
            police::Rule::Plain | police::Rule::Shown
        ));
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
