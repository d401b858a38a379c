//! The capability boundary: the one place every native request of every
//! capability crosses. Each request is shown to the node binding's hook
//! (which may record it and inject one fault), never sent once the call's
//! deadline has passed, bounded by that deadline, and never retried. The
//! contract suite uses the hook to exercise any vendor's adapter without
//! knowing its API: it sees typed requests, not the vendor's wire format.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) use super::Action;

/// One native request a capability is about to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeRequest {
    /// What the request does.
    pub action: Action,
    /// The resource it names (container id or name, volume, image, an
    /// upload's `container:directory`, a URL's path and query), or empty.
    pub target: String,
    /// The host sends this on its own account, not as part of what the
    /// component asked for: the removal of a container it just created
    /// that failed verification against the container policy.
    pub host_cleanup: bool,
}

impl fmt::Display for NativeRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}",
            self.action.capability(),
            self.action.name(),
            self.target
        )
    }
}

impl NativeRequest {
    /// True for requests that delete something (cleanup).
    pub fn is_removal(&self) -> bool {
        self.action.is_removal()
    }
}

/// A fault injected into one native request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The request is never sent; the component sees `unavailable`.
    FailBeforeDispatch,
    /// The request is sent and takes effect; its response is lost
    /// (`unconfirmed`).
    LoseResponse,
    /// The request is sent and takes effect; then the caller's budget runs
    /// out while waiting, so the whole operation is cancelled.
    CancelAfterDispatch,
    /// The response shows the resource as another installation's.
    ForeignOwnership,
    /// A removal fails without being sent; other requests pass.
    FailCleanup,
}

/// Sees every native request of a node binding; may inject one fault each.
pub trait NativeHook: Send + Sync + fmt::Debug {
    /// Called before each request is sent.
    fn on_request(&self, request: &NativeRequest) -> Option<Fault>;

    /// Called when the native side answered a dispatched request (before
    /// any injected fault changes what the component sees): `succeeded` is
    /// false for error statuses and transport failures.
    fn on_response(&self, request: &NativeRequest, succeeded: bool) {
        let _ = (request, succeeded);
    }

    /// Called when the native side answered a dispatched request and its
    /// answer shows a resource as this installation's (what an injected
    /// [`Fault::ForeignOwnership`] turns into someone else's).
    fn on_ownership_shown(&self, request: &NativeRequest) {
        let _ = request;
    }

    /// Called when the component calls a capability function, before the
    /// host's policy decides anything: an attempt the host refuses (e.g.
    /// removing a foreign volume) is still the component's attempt.
    fn on_call(&self, call: &ImportCall<'_>) {
        let _ = call;
    }
}

/// What a capability function would do to native state, as the component
/// asked (whether or not the host then allows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Only reads.
    Reads,
    /// Creates a resource (a container, a volume).
    Creates,
    /// Removes one (a container, a volume, a record; an HTTP `DELETE`).
    Removes,
    /// Changes native state otherwise: starts, runs, uploads, writes.
    Changes,
}

/// A capability function the component called, shown to the hook before
/// any policy decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImportCall<'a> {
    /// The capability: `docker`, `http` or `receipts`.
    pub capability: &'static str,
    /// The function as the WIT names it (`container-remove`, `put`), or
    /// `send` for HTTP.
    pub function: &'static str,
    /// The resource it names (container, volume, record key, URL), or empty.
    pub target: &'a str,
    /// What it would do.
    pub effect: Effect,
}

/// A request shown to the hook, with the fault it chose.
#[derive(Clone)]
pub(crate) struct Decided {
    pub(crate) request: NativeRequest,
    pub(crate) fault: Option<Fault>,
}

impl Decided {
    /// True when the response must show the resource as someone else's.
    pub(crate) fn shows_foreign(&self) -> bool {
        self.fault == Some(Fault::ForeignOwnership)
    }
}

/// How a request ended without its native answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Crossing<E> {
    /// It was never sent (the deadline had passed, or an injected failure).
    NotSent,
    /// A removal failed without being sent (injected cleanup failure).
    CleanupFailed,
    /// It may have taken effect; its answer was lost or cut off.
    Lost,
    /// The native side answered with this error.
    Native(E),
}

/// The native requests of one call still in flight (or a capability's
/// native processes, such as microsandbox helpers). A request the
/// component sent may act whether or not anyone waits for its answer, so
/// when a call's budget ends the host keeps the call (and its allocation's
/// turn) until none is left ([`crate::call`]).
#[derive(Clone, Debug, Default)]
pub struct InFlight(Arc<Requests>);

#[derive(Debug, Default)]
struct Requests {
    count: std::sync::atomic::AtomicUsize,
    idle: tokio::sync::Notify,
}

/// One request in flight, counted until dropped.
pub(crate) struct Flying(InFlight);

impl Drop for Flying {
    fn drop(&mut self) {
        let requests = &(self.0).0;
        if requests
            .count
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel)
            == 1
        {
            requests.idle.notify_waiters();
        }
    }
}

impl InFlight {
    pub(crate) fn enter(&self) -> Flying {
        self.0
            .count
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Flying(self.clone())
    }

    /// How many are in flight now.
    pub fn running(&self) -> usize {
        self.0.count.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Returns once none is in flight.
    pub async fn idle(&self) {
        loop {
            let notified = self.0.idle.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.0.count.load(std::sync::atomic::Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// The boundary of one node binding: its hook.
#[derive(Clone, Default)]
pub(crate) struct Boundary {
    hook: Option<Arc<dyn NativeHook>>,
}

impl Boundary {
    /// The boundary of a binding with `hook` (none in production).
    pub(crate) fn new(hook: Option<Arc<dyn NativeHook>>) -> Self {
        Self { hook }
    }

    /// Shows the hook a call the component made.
    pub(crate) fn note_call(&self, call: ImportCall<'_>) {
        if let Some(hook) = &self.hook {
            hook.on_call(&call);
        }
    }

    /// Tells the hook the answer to `decided` showed a resource as this
    /// installation's.
    pub(crate) fn ownership_shown(&self, decided: &Decided) {
        if let Some(hook) = &self.hook {
            hook.on_ownership_shown(&decided.request);
        }
    }

    /// Shows the request to the hook, which may choose a fault for it.
    pub(crate) fn decide(&self, action: Action, target: &str, host_cleanup: bool) -> Decided {
        let request = NativeRequest {
            action,
            target: target.to_string(),
            host_cleanup,
        };
        let fault = self
            .hook
            .as_ref()
            .and_then(|hook| hook.on_request(&request));
        Decided { request, fault }
    }

    /// Sends one request within `deadline`, applying the decided fault. A
    /// request is never sent once the deadline has passed; one in flight
    /// then runs to its end (the engine or vendor may act on it whether or
    /// not anyone waits, so the call keeps its allocation's turn until it
    /// has: see [`crate::call`]) and is reported lost. Nothing is retried.
    pub(crate) async fn dispatch<T, E>(
        &self,
        decided: &Decided,
        deadline: Instant,
        in_flight: &InFlight,
        sending: impl Future<Output = Result<T, E>>,
    ) -> Result<T, Crossing<E>> {
        self.dispatch_judged(decided, deadline, in_flight, sending, |_| true)
            .await
    }

    /// [`Self::dispatch`] for a native side whose answers may be errors
    /// (an HTTP error status): `succeeded` tells the hook which are not.
    pub(crate) async fn dispatch_judged<T, E>(
        &self,
        decided: &Decided,
        deadline: Instant,
        in_flight: &InFlight,
        sending: impl Future<Output = Result<T, E>>,
        succeeded: impl FnOnce(&T) -> bool,
    ) -> Result<T, Crossing<E>> {
        if Instant::now() >= deadline || decided.fault == Some(Fault::FailBeforeDispatch) {
            return Err(Crossing::NotSent);
        }
        if decided.request.is_removal() && decided.fault == Some(Fault::FailCleanup) {
            return Err(Crossing::CleanupFailed);
        }
        let outcome = {
            let _flying = in_flight.enter();
            sending.await
        };
        if let Some(hook) = &self.hook {
            hook.on_response(&decided.request, outcome.as_ref().is_ok_and(succeeded));
        }
        match decided.fault {
            Some(Fault::LoseResponse) => return Err(Crossing::Lost),
            Some(Fault::CancelAfterDispatch) => {
                tokio::time::sleep_until(deadline.into()).await;
                return Err(Crossing::Lost);
            }
            _ => {}
        }
        if Instant::now() >= deadline {
            return Err(Crossing::Lost);
        }
        outcome.map_err(Crossing::Native)
    }
}

/// How long native work in flight at a call's deadline is waited for: as
/// long again as the call's budget, at least [`MIN_OVERRUN`] and at most
/// the longest budget. A request still unanswered by then is taken for
/// hung (an engine or vendor that never answers); the host gives up on it
/// and says so in its log.
pub(crate) fn overrun_bound(budget: Duration) -> Duration {
    let longest = Duration::from_millis(u64::from(oac_contract::bounds::MAX_BUDGET_MS));
    budget.clamp(MIN_OVERRUN, longest)
}

/// The shortest wait for native work in flight at a deadline.
pub(crate) const MIN_OVERRUN: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::docker::DockerAction;
    use crate::capability::http::HttpAction;
    use std::sync::Mutex;
    use std::time::Duration;

    #[derive(Debug, Default)]
    struct Inject(Mutex<Option<Fault>>);

    impl NativeHook for Inject {
        fn on_request(&self, _: &NativeRequest) -> Option<Fault> {
            *self.0.lock().expect("lock")
        }
    }

    fn boundary(fault: Option<Fault>) -> Boundary {
        Boundary::new(Some(Arc::new(Inject(Mutex::new(fault)))))
    }

    async fn send(fault: Option<Fault>, action: Action) -> (Result<u8, Crossing<()>>, bool) {
        let sent = std::sync::atomic::AtomicBool::new(false);
        let boundary = boundary(fault);
        let decided = boundary.decide(action, "x", false);
        let deadline = Instant::now() + Duration::from_millis(50);
        let outcome = boundary
            .dispatch(&decided, deadline, &InFlight::default(), async {
                sent.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok::<u8, ()>(7)
            })
            .await;
        (outcome, sent.load(std::sync::atomic::Ordering::SeqCst))
    }

    #[tokio::test]
    async fn each_fault_acts_the_same_for_every_capability() {
        let post = Action::Http(HttpAction::Post);
        let create = Action::Docker(DockerAction::VolumeCreate);
        for action in [post, create] {
            assert_eq!(send(None, action).await, (Ok(7), true));
            assert_eq!(
                send(Some(Fault::FailBeforeDispatch), action).await,
                (Err(Crossing::NotSent), false)
            );
            assert_eq!(
                send(Some(Fault::LoseResponse), action).await,
                (Err(Crossing::Lost), true)
            );
            assert_eq!(
                send(Some(Fault::CancelAfterDispatch), action).await,
                (Err(Crossing::Lost), true)
            );
        }
        for removal in [
            Action::Http(HttpAction::Delete),
            Action::Docker(DockerAction::VolumeRemove),
        ] {
            assert_eq!(
                send(Some(Fault::FailCleanup), removal).await,
                (Err(Crossing::CleanupFailed), false)
            );
        }
        assert_eq!(send(Some(Fault::FailCleanup), post).await, (Ok(7), true));
    }

    #[tokio::test]
    async fn a_request_in_flight_at_the_deadline_runs_to_its_end_and_is_lost() {
        let boundary = boundary(None);
        let decided = boundary.decide(Action::Docker(DockerAction::ContainerCreate), "x", false);
        let finished = std::sync::atomic::AtomicBool::new(false);
        let deadline = Instant::now() + Duration::from_millis(20);
        let in_flight = InFlight::default();
        let outcome = boundary
            .dispatch(&decided, deadline, &in_flight, async {
                tokio::time::sleep(Duration::from_millis(60)).await;
                finished.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok::<u8, ()>(7)
            })
            .await;
        assert_eq!(outcome, Err(Crossing::Lost));
        assert!(
            finished.load(std::sync::atomic::Ordering::SeqCst),
            "ran to its end"
        );
        in_flight.idle().await;
    }

    #[tokio::test]
    async fn idle_waits_for_the_last_request_in_flight() {
        let in_flight = InFlight::default();
        in_flight.idle().await;
        let flying = in_flight.enter();
        let second = in_flight.enter();
        let waiting = tokio::spawn({
            let in_flight = in_flight.clone();
            async move { in_flight.idle().await }
        });
        drop(flying);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "one still in flight");
        drop(second);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("idle")
            .expect("joined");
    }

    #[test]
    fn actions_name_their_capability_and_kind() {
        assert_eq!(Action::Docker(DockerAction::ExecStart).name(), "exec-start");
        assert_eq!(Action::Http(HttpAction::Delete).to_string(), "http-delete");
        assert!(Action::Http(HttpAction::Get).is_read());
        assert!(!Action::Http(HttpAction::Post).is_read());
        assert!(Action::Docker(DockerAction::ContainerStats).is_read());
        assert!(Action::Docker(DockerAction::ContainerRemove).is_removal());
        use crate::capability::microsandbox::VmAction;
        let remove = Action::Microsandbox(VmAction::KillRemove);
        assert_eq!(
            (remove.capability(), remove.name()),
            ("microsandbox", "vm-kill-remove")
        );
        assert!(remove.is_removal() && !remove.is_read());
        assert!(Action::Microsandbox(VmAction::Get).is_read());
        assert!(Action::Microsandbox(VmAction::RemoveSnapshot).is_removal());
        assert!(!Action::Microsandbox(VmAction::Restore).is_read());
    }

    #[test]
    fn native_work_is_waited_for_as_long_again_as_the_budget_within_bounds() {
        assert_eq!(
            overrun_bound(Duration::from_secs(5)),
            Duration::from_secs(5)
        );
        assert_eq!(overrun_bound(Duration::from_millis(10)), MIN_OVERRUN);
        assert_eq!(
            overrun_bound(Duration::from_secs(600)),
            Duration::from_secs(120)
        );
    }
}
