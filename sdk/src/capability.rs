//! Typed clients for the host's capabilities. Every call is brokered by the
//! host, which may deny it before any I/O (see the WIT docs).

/// Call context: installation, native configuration, remaining budget.
pub mod context {
    pub use crate::__bindings::oac::sandbox_provider::context::*;
}

/// Structured logging into the host.
pub mod log {
    pub use crate::__bindings::oac::sandbox_provider::log::*;
}

/// Outbound HTTP to allowlisted origins, over `wasi:http`.
pub mod http;

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
    pub use crate::__bindings::oac::sandbox_provider::receipts::*;
}
