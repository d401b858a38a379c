//! The capability boundary's observation point. Every native request a
//! capability is about to send is shown to the node binding's hook, which
//! may record it and may inject one fault. The contract suite uses this to
//! exercise any vendor's adapter without knowing its API: it sees the
//! requests, not the vendor's wire format.

use std::fmt;

/// One native request a capability is about to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeRequest {
    /// The capability, e.g. `docker`.
    pub capability: &'static str,
    /// What the request does, e.g. `container-create`, `volume-remove`.
    pub action: &'static str,
    /// The resource it names (container id or name, volume, image), or empty.
    pub target: String,
    /// The host sends this on its own account, not as part of what the
    /// component asked for: the removal of a container it just created
    /// that failed verification against the container policy.
    pub host_cleanup: bool,
}

impl fmt::Display for NativeRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.capability, self.action, self.target)
    }
}

impl NativeRequest {
    /// True for requests that delete something (cleanup).
    pub fn is_removal(&self) -> bool {
        self.action.ends_with("-remove")
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
    /// The response shows the resource labelled for another installation.
    ForeignOwnership,
    /// A removal fails (`failed`) without being sent; other requests pass.
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

    /// Called when the component calls a capability function, before the
    /// host's policy decides anything: an attempt the host refuses (e.g.
    /// removing a foreign volume) is still the component's attempt.
    fn on_call(&self, capability: &'static str, function: &'static str, target: &str) {
        let _ = (capability, function, target);
    }
}
