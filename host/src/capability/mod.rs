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

/// Links every capability import (and the shared `types` interface), one
/// capability at a time, each by its own module.
pub(crate) fn add_to_linker(
    linker: &mut wasmtime::component::Linker<crate::state::CallState>,
) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    crate::bindings::oac::sandbox_provider::types::add_to_linker::<
        crate::state::CallState,
        HasSelf<crate::state::CallState>,
    >(linker, |state| state)?;
    context::add_to_linker(linker)?;
    docker::imports::add_to_linker(linker)?;
    log::add_to_linker(linker)?;
    receipts::add_to_linker(linker)
}

impl crate::bindings::oac::sandbox_provider::types::Host for crate::state::CallState {}

/// Shared handle to a kind's capabilities.
pub(crate) type SharedCapabilities = Arc<Capabilities>;
