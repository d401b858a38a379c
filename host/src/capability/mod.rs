//! Capabilities the host implements for components. A component reaches
//! nothing native except through these, and only what its registration
//! grants: an ungranted capability answers `denied` before any I/O.

pub mod boundary;
mod context;
pub mod docker;
pub mod http;
pub(crate) mod log;
pub mod receipts;
pub(crate) mod scope;

pub(crate) use docker::keep_pools_on_this_thread as keep_engine_pools_on_this_thread;
pub use log::REDACTED;

use std::sync::Arc;
use std::time::Instant;

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
    pub docker: Option<docker::DockerBroker>,
    /// The HTTP broker (its allowlist may be empty).
    pub http: http::HttpBroker,
    /// The receipt store, when granted.
    pub receipts: Option<receipts::ReceiptsBroker>,
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
    /// capability the host's container policy decides the network, so a
    /// bootstrap asking for another is refused before anything runs; a
    /// vendor reached over HTTP applies the request itself.
    pub(crate) fn enforces(&self, access: oac_provider_api::types::NetworkAccess) -> bool {
        self.docker
            .as_ref()
            .is_none_or(|docker| docker.policy().enforces(access))
    }
}

/// What one call holds of its kind's capabilities: the allocations it
/// serves and what it may do to them, its deadline, the secrets no log or
/// request may carry, and each capability's per-call state. Every
/// capability import is implemented on it; the store's data
/// (`state::CallState`) holds one and hands it to the linker.
pub(crate) struct CallCapabilities {
    pub(crate) deadline: Instant,
    pub(crate) scope: scope::CallScope,
    pub(crate) capabilities: SharedCapabilities,
    /// Values of this call's input that no log may carry (the daemon
    /// credential of a Create, a configuration's credential).
    pub(crate) secrets: Vec<String>,
    /// The call's `wasi:http` hooks (policy, the call's credential).
    pub(crate) http: http::CallHttp,
    /// Events this call has logged (see [`log::LOG_QUOTA`]).
    pub(crate) logged: u32,
    /// What finds the call's secrets, built when first needed (every secret
    /// of a call is known before its component runs).
    call_secrets: Option<oac_provider_api::secrets::Secrets>,
    /// Containers this call has proven its own (inspected once per call).
    pub(crate) proven: docker::ProvenContainers,
    /// What this call made that nothing has run in yet (uploads go only
    /// there).
    pub(crate) fresh: docker::Fresh,
    /// The call's native requests in flight (they run to their end).
    pub(crate) in_flight: boundary::InFlight,
}

impl CallCapabilities {
    /// What a call serving `scope`, to end by `deadline`, holds.
    pub(crate) fn new(
        capabilities: SharedCapabilities,
        scope: scope::CallScope,
        deadline: Instant,
    ) -> Self {
        let in_flight = boundary::InFlight::default();
        Self {
            deadline,
            http: http::CallHttp::new(
                capabilities.clone(),
                deadline,
                scope.access(),
                in_flight.clone(),
            ),
            scope,
            capabilities,
            secrets: Vec::new(),
            logged: 0,
            call_secrets: None,
            proven: Default::default(),
            fresh: Default::default(),
            in_flight,
        }
    }

    /// What finds every secret of this call: the kind's credential, a
    /// candidate credential, the Create's daemon credential, a
    /// configuration's credential.
    pub(crate) fn secrets(&mut self) -> &oac_provider_api::secrets::Secrets {
        self.call_secrets.get_or_insert_with(|| {
            let kind = self.capabilities.credential();
            oac_provider_api::secrets::Secrets::new(
                kind.as_deref()
                    .into_iter()
                    .chain(self.http.credential())
                    .chain(self.secrets.iter().map(String::as_str)),
            )
        })
    }
}

/// Links every capability import (and the shared `types` interface), one
/// capability at a time, each by its own module, reaching the call's
/// capabilities through `get`.
pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut wasmtime::component::Linker<T>,
    get: fn(&mut T) -> &mut CallCapabilities,
) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    crate::bindings::oac::sandbox_provider::types::add_to_linker::<T, HasSelf<CallCapabilities>>(
        linker, get,
    )?;
    context::add_to_linker(linker, get)?;
    docker::imports::add_to_linker(linker, get)?;
    log::add_to_linker(linker, get)?;
    receipts::add_to_linker(linker, get)
}

impl crate::bindings::oac::sandbox_provider::types::Host for CallCapabilities {}

/// Shared handle to a kind's capabilities.
pub(crate) type SharedCapabilities = Arc<Capabilities>;
