//! The suite's hook at the capability boundary: it records every native
//! request and injects the planned fault into the k-th matching one.

use crate::profile::{Class, Classifier};
use sandbox_host::testing::{Effect, Fault, ImportCall, NativeHook, NativeRequest};
use std::sync::{Arc, Mutex};

/// Which requests a plan counts.
#[derive(Clone, Copy, Debug)]
pub enum Matching {
    /// Every request.
    Any,
    /// Requests of this class.
    Class(Class),
}

impl Matching {
    pub(crate) fn matches(self, class: Class) -> bool {
        match self {
            Matching::Any => true,
            Matching::Class(wanted) => class == wanted,
        }
    }
}

/// A fault for the `nth` (1-based) request that `matching` counts, or for
/// every such request when `nth` is 0.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Which requests count.
    pub matching: Matching,
    /// 1-based position among counted requests; 0 = all of them.
    pub nth: usize,
    /// The fault.
    pub fault: Fault,
}

/// A capability function the component called (before any policy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The capability, e.g. `docker`.
    pub capability: &'static str,
    /// The function, e.g. `volume-remove`.
    pub function: &'static str,
    /// The resource it named.
    pub target: String,
    /// What it would do.
    pub effect: Effect,
}

#[derive(Debug, Default)]
struct State {
    log: Vec<NativeRequest>,
    /// Whether each logged request's answer showed a resource as this
    /// installation's.
    shown: Vec<bool>,
    calls: Vec<Call>,
    plan: Option<Plan>,
    counted: usize,
    /// Whether any request of class create succeeded.
    created: bool,
}

/// Records requests; injects at most the armed plan.
#[derive(Debug)]
pub struct Recorder {
    state: Mutex<State>,
    classifier: Arc<Classifier>,
}

impl Recorder {
    /// A recorder that classifies requests with `classifier`.
    pub fn new(classifier: Arc<Classifier>) -> Self {
        Self {
            state: Mutex::default(),
            classifier,
        }
    }

    /// True once the native side confirmed a request of class create: the
    /// run made something that could be left behind.
    pub fn created_something(&self) -> bool {
        self.state().created
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A position in both logs, for [`Recorder::since`].
    pub fn mark(&self) -> (usize, usize) {
        let state = self.state();
        (state.log.len(), state.calls.len())
    }

    /// Requests and calls recorded after `mark`.
    pub fn since(&self, mark: (usize, usize)) -> (Vec<NativeRequest>, Vec<Call>) {
        let state = self.state();
        let requests = state
            .log
            .get(mark.0..)
            .map(<[_]>::to_vec)
            .unwrap_or_default();
        let calls = state
            .calls
            .get(mark.1..)
            .map(<[_]>::to_vec)
            .unwrap_or_default();
        (requests, calls)
    }

    /// For each request after `mark`, whether its answer showed a resource
    /// as this installation's (so a foreign-ownership fault can act on it).
    pub fn shown_since(&self, mark: (usize, usize)) -> Vec<bool> {
        self.state()
            .shown
            .get(mark.0..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }

    /// Arms a plan (replacing any other); counting starts now.
    pub fn arm(&self, plan: Plan) {
        let mut state = self.state();
        state.plan = Some(plan);
        state.counted = 0;
    }

    /// Removes the plan.
    pub fn disarm(&self) {
        self.state().plan = None;
    }
}

/// The host's readiness probe of a microsandbox node: the host sends it on
/// its own whenever its judgement is over a minute old, so whether an
/// operation's sequence holds one depends on the clock, not on the
/// component. It only reads; the suite neither records nor faults it.
const READINESS_PROBE: &str = "vm-probe";

impl NativeHook for Recorder {
    fn on_request(&self, request: &NativeRequest) -> Option<Fault> {
        if request.action.name() == READINESS_PROBE {
            return None;
        }
        let class = self.classifier.class(request);
        let mut state = self.state();
        state.log.push(request.clone());
        state.shown.push(false);
        let plan = state.plan.filter(|plan| plan.matching.matches(class))?;
        state.counted += 1;
        (plan.nth == 0 || plan.nth == state.counted).then_some(plan.fault)
    }

    fn on_response(&self, request: &NativeRequest, succeeded: bool) {
        if succeeded && self.classifier.class(request) == Class::Create {
            self.state().created = true;
        }
    }

    fn on_ownership_shown(&self, request: &NativeRequest) {
        let mut state = self.state();
        let latest = (0..state.log.len())
            .rev()
            .find(|&i| state.log[i] == *request);
        if let Some(index) = latest {
            state.shown[index] = true;
        }
    }

    fn on_call(&self, call: &ImportCall<'_>) {
        self.state().calls.push(Call {
            capability: call.capability,
            function: call.function,
            target: call.target.to_string(),
            effect: call.effect,
        });
    }
}
