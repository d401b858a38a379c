//! Typed clients for the host's capabilities. Every call is brokered by the
//! host, which may deny it before any I/O (see the WIT docs). Compiled for
//! anything but Wasm (an adapter's unit tests), `context`, `log`,
//! `receipts` and `http` reach the mock of [`crate::testing`] instead.

/// Call context: installation, native configuration, remaining budget.
pub mod context {
    #[cfg(target_arch = "wasm32")]
    use crate::__bindings::oac::sandbox_provider::context as imp;
    #[cfg(not(target_arch = "wasm32"))]
    use crate::testing::context as imp;

    /// The installation (Core deployment) the call runs for: the first of
    /// the four ownership labels.
    pub fn installation_id() -> String {
        imp::installation_id()
    }

    /// The kind's configuration, as JSON text.
    pub fn configuration() -> String {
        imp::configuration()
    }

    /// Milliseconds left of the call's budget.
    pub fn remaining_budget_ms() -> u32 {
        imp::remaining_budget_ms()
    }
}

/// Structured logging into the host.
pub mod log {
    pub use crate::__bindings::oac::sandbox_provider::log::Level;

    /// Logs `event` with `fields` (the host redacts credentials it knows,
    /// and bounds what it keeps).
    pub fn emit(severity: Level, event: &str, fields: &[(String, String)]) {
        #[cfg(target_arch = "wasm32")]
        crate::__bindings::oac::sandbox_provider::log::emit(severity, event, fields);
        #[cfg(not(target_arch = "wasm32"))]
        crate::testing::log::emit(severity, event, fields);
    }
}

/// Outbound HTTP to allowlisted origins, over `wasi:http`.
pub mod http;

/// microVMs through the host's microsandbox helper: the component names an
/// allocation of its call and an incarnation by its generation, never a VM
/// (see `wit/microsandbox.wit`).
pub mod microsandbox {
    pub use crate::__bindings::oac::sandbox_provider::microsandbox::*;
}

/// The Docker Engine subset. The host owns every container's isolation
/// (user, capabilities, seccomp, read-only root, masks, network, image,
/// limits) and every name: a spec carries only the adapter's own decisions,
/// a container or volume is created only under the allocation's names
/// (`names`), and the host labels and checks every resource for the call's
/// allocation.
pub mod docker {
    pub use crate::__bindings::oac::sandbox_provider::docker::*;

    impl ContainerSpec {
        /// A container named `name` (the allocation's, from `names`) that
        /// runs the image's default command, with no environment, mounts or
        /// extra hosts. Set fields to build on it.
        pub fn new(name: impl Into<String>) -> Self {
            ContainerSpec {
                name: name.into(),
                cmd: Vec::new(),
                env: Vec::new(),
                working_dir: None,
                mounts: Vec::new(),
                extra_hosts: Vec::new(),
            }
        }
    }

    impl VolumeMount {
        /// The root of `volume` mounted read-write at `target`.
        pub fn new(volume: impl Into<String>, target: impl Into<String>) -> Self {
            VolumeMount {
                volume: volume.into(),
                target: target.into(),
                subpath: None,
                read_only: false,
            }
        }

        /// Mounts the subdirectory `subpath` of the volume instead of its root.
        pub fn subpath(self, subpath: impl Into<String>) -> Self {
            VolumeMount {
                subpath: Some(subpath.into()),
                ..self
            }
        }
    }
}

/// Small durable records of the call's own allocation: write one before the
/// native effect it describes; the host fsyncs it before `put` returns.
pub mod receipts {
    #[cfg(target_arch = "wasm32")]
    use crate::__bindings::oac::sandbox_provider::receipts as imp;
    pub use crate::__bindings::oac::sandbox_provider::receipts::ReceiptsError;
    #[cfg(not(target_arch = "wasm32"))]
    use crate::testing::receipts as imp;

    /// The record `key` of the call's allocation, if there is one.
    pub fn get(key: &str) -> Result<Option<Vec<u8>>, ReceiptsError> {
        imp::get(key)
    }

    /// Writes (or replaces) the record `key`; durable when it returns `Ok`.
    pub fn put(key: &str, value: &[u8]) -> Result<(), ReceiptsError> {
        imp::put(key, value)
    }

    /// Removes the record `key` (absent is fine); durable when it returns
    /// `Ok`.
    pub fn remove(key: &str) -> Result<(), ReceiptsError> {
        imp::remove(key)
    }
}
