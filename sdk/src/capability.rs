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

/// Outbound HTTP to allowlisted origins.
pub mod http {
    pub use crate::__bindings::oac::sandbox_provider::http::*;

    impl Request {
        /// A request with no headers, body or credential.
        pub fn new(method: Method, url: impl Into<String>) -> Self {
            Request {
                method,
                url: url.into(),
                headers: Vec::new(),
                body: Vec::new(),
                credential: None,
            }
        }
    }
}

/// The Docker Engine subset.
pub mod docker {
    pub use crate::__bindings::oac::sandbox_provider::docker::*;

    impl ContainerSpec {
        /// A spec with nothing granted: no mounts, capabilities, devices or
        /// namespaces shared, and no limits. Set fields to build on it.
        pub fn new(name: impl Into<String>, image: impl Into<String>) -> Self {
            ContainerSpec {
                name: name.into(),
                image: image.into(),
                labels: Vec::new(),
                cmd: Vec::new(),
                env: Vec::new(),
                user: None,
                working_dir: None,
                read_only_rootfs: false,
                cap_drop: Vec::new(),
                cap_add: Vec::new(),
                security_opt: Vec::new(),
                privileged: false,
                devices: Vec::new(),
                network_mode: None,
                pid_mode: None,
                ipc_mode: None,
                extra_hosts: Vec::new(),
                nano_cpus: 0,
                memory_bytes: 0,
                pids_limit: 0,
                tmpfs: Vec::new(),
                mounts: Vec::new(),
                masked_paths: None,
                readonly_paths: None,
                init: false,
            }
        }
    }

    impl Mount {
        /// A named volume mounted read-write at `target`.
        pub fn volume(source: impl Into<String>, target: impl Into<String>) -> Self {
            Mount {
                kind: MountKind::Volume,
                source: source.into(),
                target: target.into(),
                read_only: false,
                subpath: None,
            }
        }
    }
}
