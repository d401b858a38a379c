//! Capabilities the host implements for components. A component reaches
//! nothing native except through these, and only what its registration
//! grants: an ungranted capability answers `denied` before any I/O.
//!
//! Each capability is one unit in a module of its own (`receipts` is the
//! plainest): its grant, what a node binds to it, its broker (built once
//! per kind), its per-call state, the view its imports are implemented on
//! (with its `HasData` marker) and its `add_to_linker`. This module lists
//! each of them once: in [`Grants`], [`Capabilities`], [`CallCapabilities`],
//! [`Action`] and [`add_to_linker`].

/// Declares a capability's `HasData` marker, which links its imports to
/// its `View<'a>`, and its `add_to_linker(linker, get)`, which reaches each
/// call's view through `get`: the same two items in every capability.
macro_rules! linked_through_view {
    ($marker:ident, $($interface:ident)::+) => {
        /// The `HasData` marker that links the imports to a [`View`].
        pub(crate) struct $marker;

        impl wasmtime::component::HasData for $marker {
            type Data<'a> = View<'a>;
        }

        /// Links the capability's imports, reaching each call's [`View`]
        /// through `get`.
        pub(crate) fn add_to_linker<T: Send + 'static>(
            linker: &mut wasmtime::component::Linker<T>,
            get: fn(&mut T) -> View<'_>,
        ) -> wasmtime::Result<()> {
            $($interface)::+::add_to_linker::<T, $marker>(linker, get)
        }
    };
}

pub(crate) mod boundary;
mod context;
pub mod docker;
pub mod http;
pub(crate) mod log;
pub mod microsandbox;
pub mod receipts;
pub(crate) mod scope;

pub(crate) use docker::keep_pools_on_this_thread as keep_engine_pools_on_this_thread;
pub use log::REDACTED;

use boundary::InFlight;
use oac_provider_api::secrets::Secrets;
use scope::CallScope;
use std::sync::Arc;
use std::time::Instant;

/// What a registry row grants, one field per capability. It is the
/// registry's type (Core's side reads it too); each capability names its
/// own part as its `Grant`.
pub use oac_provider_api::registry::Grants;

/// Logs one request a capability's policy refused (nothing was sent) as a
/// WARN line: the capability and the rule, in the call's span (kind,
/// operation); never a target, name, header or value. Returns `error`, the
/// answer the component gets.
pub(crate) fn refused<E>(capability: &'static str, rule: &'static str, error: E) -> E {
    tracing::warn!(
        capability,
        rule,
        event = "request_refused",
        "a request was refused by the capability's policy"
    );
    error
}

/// What a native request does, by capability: what the boundary's hook
/// sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A Docker Engine request.
    Docker(docker::DockerAction),
    /// An HTTP request to an allowed origin.
    Http(http::HttpAction),
    /// A read or durable write of the call's receipts.
    Receipts(receipts::ReceiptAction),
    /// A microsandbox helper operation.
    Microsandbox(microsandbox::VmAction),
}

impl Action {
    /// The capability the request belongs to.
    pub fn capability(self) -> &'static str {
        match self {
            Action::Docker(_) => "docker",
            Action::Http(_) => "http",
            Action::Receipts(_) => "receipts",
            Action::Microsandbox(_) => "microsandbox",
        }
    }

    /// A stable name, e.g. `container-create` or `http-post`.
    pub fn name(self) -> &'static str {
        match self {
            Action::Docker(action) => action.name(),
            Action::Http(action) => action.name(),
            Action::Receipts(action) => action.name(),
            Action::Microsandbox(action) => action.name(),
        }
    }

    /// True for requests that only read native state.
    pub fn is_read(self) -> bool {
        match self {
            Action::Docker(action) => action.is_read(),
            Action::Http(action) => action == http::HttpAction::Get,
            Action::Receipts(action) => action.is_read(),
            Action::Microsandbox(action) => action.is_read(),
        }
    }

    /// True for requests that delete something (cleanup).
    pub fn is_removal(self) -> bool {
        match self {
            Action::Docker(action) => action.is_removal(),
            Action::Http(action) => action == http::HttpAction::Delete,
            Action::Receipts(_) => false,
            Action::Microsandbox(action) => action.is_removal(),
        }
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a kind's capabilities cannot be built on what its node supplies.
#[derive(Debug)]
pub(crate) enum Unbuilt {
    /// The configuration names an endpoint the rule refuses (the field).
    Endpoint(&'static str),
    /// The HTTP client could not be created (TLS setup).
    Http,
}

/// What one kind's components may reach, built once per node binding.
pub(crate) struct Capabilities {
    /// The kind these serve.
    pub kind: String,
    /// The installation id given to the component and used in ownership checks.
    pub installation_id: String,
    /// The kind's native configuration as JSON text (the component's own;
    /// the container policy is the Docker broker's).
    pub configuration: String,
    /// The Docker broker, when granted.
    pub docker: Option<docker::Broker>,
    /// The HTTP broker (its allowlist may be empty).
    pub http: http::Broker,
    /// The receipt store, when granted.
    pub receipts: Option<receipts::Broker>,
    /// The microVM broker, when granted.
    pub microsandbox: Option<microsandbox::Broker>,
    /// The credential, kept host-side for the HTTP capability, and what
    /// finds it in a request, an answer or a log line; replaced only under
    /// the kind's call fence.
    pub credential: std::sync::RwLock<HeldCredential>,
}

/// A kind's credential and the matcher that finds it (built once per
/// credential, not per call).
#[derive(Clone, Default)]
pub(crate) struct HeldCredential {
    pub(crate) text: Option<String>,
    pub(crate) secrets: Arc<oac_provider_api::secrets::Secrets>,
}

impl HeldCredential {
    pub(crate) fn new(text: Option<String>) -> Self {
        let secrets = oac_provider_api::secrets::Secrets::new(text.as_deref());
        Self {
            text,
            secrets: Arc::new(secrets),
        }
    }
}

impl Capabilities {
    fn held(&self) -> HeldCredential {
        self.credential
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The kind's current credential.
    pub(crate) fn credential(&self) -> Option<String> {
        self.held().text
    }

    /// What finds the kind's current credential.
    pub(crate) fn secrets(&self) -> Arc<oac_provider_api::secrets::Secrets> {
        self.held().secrets
    }

    /// Replaces the kind's credential (under the call fence: no call runs).
    pub(crate) fn replace_credential(&self, credential: Option<String>) {
        *self
            .credential
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = HeldCredential::new(credential);
    }

    /// Whether the kind's compute gets exactly `access`. Under the Docker
    /// or microsandbox capability the host's policy decides the network, so a
    /// bootstrap asking for another is refused before anything runs; a
    /// vendor reached over HTTP applies the request itself.
    pub(crate) fn enforces(&self, access: oac_provider_api::types::NetworkAccess) -> bool {
        self.docker
            .as_ref()
            .is_none_or(|docker| docker.policy().enforces(access))
            && self
                .microsandbox
                .as_ref()
                .is_none_or(|microsandbox| microsandbox.enforces(access))
    }
}

/// Which credential a call's HTTP requests carry.
#[derive(Clone, Debug, Default)]
pub(crate) enum CallCredential {
    /// The kind's.
    #[default]
    Kind,
    /// A candidate's, in place of the kind's (selection discovery,
    /// credential verification).
    Candidate(Option<String>),
}

/// What one call's input gives its capabilities, fixed before its
/// component runs: the allocations it serves and what it may do to them,
/// the values of its input no log or request may carry (a Create's daemon
/// credential, a configuration's credentials), and the credential its
/// HTTP requests carry.
#[derive(Clone, Debug)]
pub(crate) struct CallInput {
    pub(crate) scope: CallScope,
    pub(crate) secrets: Vec<String>,
    pub(crate) credential: CallCredential,
}

impl From<CallScope> for CallInput {
    fn from(scope: CallScope) -> Self {
        Self {
            scope,
            secrets: Vec::new(),
            credential: CallCredential::Kind,
        }
    }
}

impl CallInput {
    /// This input, whose `secrets` no log or request may carry.
    pub(crate) fn keeping(mut self, secrets: impl IntoIterator<Item = String>) -> Self {
        self.secrets.extend(secrets);
        self
    }

    /// This input, whose HTTP requests carry `candidate` instead of the
    /// kind's credential (which is kept out of them as a secret).
    pub(crate) fn carrying(mut self, candidate: Option<String>) -> Self {
        self.secrets.extend(candidate.clone());
        self.credential = CallCredential::Candidate(candidate);
        self
    }
}

/// What every capability of one call shares: the kind's capabilities, the
/// allocations the call serves and what it may do, its deadline, its
/// native requests in flight (they run to their end) and what finds every
/// secret of the call.
pub(crate) struct Call {
    pub(crate) capabilities: SharedCapabilities,
    pub(crate) scope: CallScope,
    pub(crate) deadline: Instant,
    pub(crate) in_flight: InFlight,
    /// The call's helper processes (microsandbox): never killed, and
    /// waited for without bound, so the allocation's turn is held until the
    /// last one exits ([`crate::call`]).
    pub(crate) helpers: InFlight,
    /// The input's secrets ([`CallInput`], a candidate credential among
    /// them); with the kind's credential, what [`Call::secrets`] finds.
    input_secrets: Vec<String>,
    secrets: std::sync::OnceLock<Arc<Secrets>>,
}

impl Call {
    /// Whether any of `texts` carries a secret of the call (confidential
    /// input travels only in stdin, never in arguments or names).
    pub(crate) fn carries_secret<'a>(&self, texts: impl IntoIterator<Item = &'a String>) -> bool {
        let secrets = self.secrets();
        !secrets.is_empty()
            && texts
                .into_iter()
                .any(|text| secrets.found_in(text.as_bytes()))
    }

    /// What finds every secret of the call: the kind's credential and the
    /// input's secrets. Built when first needed (most calls log nothing
    /// and pass no command), and shared with the kind when the input has
    /// none.
    pub(crate) fn secrets(&self) -> &Secrets {
        self.secrets.get_or_init(|| {
            if self.input_secrets.is_empty() {
                return self.capabilities.secrets();
            }
            let kind = self.capabilities.credential();
            Arc::new(Secrets::new(
                kind.as_deref()
                    .into_iter()
                    .chain(self.input_secrets.iter().map(String::as_str)),
            ))
        })
    }
}

/// What one call holds of its kind's capabilities: what they share
/// ([`Call`]) and each capability's per-call state. The store's data
/// (`state::CallState`) holds one and lends each import its capability's
/// view.
pub(crate) struct CallCapabilities {
    pub(crate) call: Call,
    pub(crate) docker: docker::State,
    /// The call's `wasi:http` hooks.
    pub(crate) http: http::State,
    pub(crate) log: log::State,
}

impl CallCapabilities {
    /// What a call given `input`, to end by `deadline`, holds.
    pub(crate) fn new(
        capabilities: SharedCapabilities,
        input: CallInput,
        deadline: Instant,
    ) -> Self {
        let CallInput {
            scope,
            secrets,
            credential,
        } = input;
        let in_flight = InFlight::default();
        Self {
            http: http::State::new(
                capabilities.clone(),
                deadline,
                scope.access(),
                in_flight.clone(),
                &credential,
            ),
            docker: Default::default(),
            log: Default::default(),
            call: Call {
                capabilities,
                scope,
                deadline,
                in_flight,
                helpers: InFlight::default(),
                input_secrets: secrets,
                secrets: std::sync::OnceLock::new(),
            },
        }
    }

    fn context(&mut self) -> context::View<'_> {
        context::View { call: &self.call }
    }

    fn docker(&mut self) -> docker::View<'_> {
        docker::View {
            call: &self.call,
            state: &mut self.docker,
        }
    }

    fn log(&mut self) -> log::View<'_> {
        log::View {
            call: &self.call,
            state: &mut self.log,
        }
    }

    fn receipts(&mut self) -> receipts::View<'_> {
        receipts::View { call: &self.call }
    }

    fn microsandbox(&mut self) -> microsandbox::View<'_> {
        microsandbox::View { call: &self.call }
    }
}

/// Store data that holds a call's capabilities.
pub(crate) trait HoldsCapabilities: Send + 'static {
    /// The call's capabilities.
    fn capabilities(&mut self) -> &mut CallCapabilities;
}

/// Links every capability import (and the shared `types` interface), each
/// by its own module, onto the view of it the call's capabilities lend.
/// (`wasi:http` is linked with WASI, by the store's data.)
pub(crate) fn add_to_linker<T: HoldsCapabilities>(
    linker: &mut wasmtime::component::Linker<T>,
) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    crate::bindings::oac::sandbox_provider::types::add_to_linker::<T, HasSelf<CallCapabilities>>(
        linker,
        T::capabilities,
    )?;
    context::add_to_linker(linker, |t: &mut T| t.capabilities().context())?;
    docker::add_to_linker(linker, |t: &mut T| t.capabilities().docker())?;
    log::add_to_linker(linker, |t: &mut T| t.capabilities().log())?;
    microsandbox::add_to_linker(linker, |t: &mut T| t.capabilities().microsandbox())?;
    receipts::add_to_linker(linker, |t: &mut T| t.capabilities().receipts())
}

impl crate::bindings::oac::sandbox_provider::types::Host for CallCapabilities {}

/// Shared handle to a kind's capabilities.
pub(crate) type SharedCapabilities = Arc<Capabilities>;
