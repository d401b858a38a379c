//! Guest SDK for `oac:sandbox-provider` components.
//!
//! A provider is a Rust type implementing one trait per exported interface
//! (no trait has default bodies: every operation's decision is written by
//! the adapter), exported with [`export_provider!`], and compiled with
//! `cargo build --target wasm32-wasip2`.
//!
//! A complete minimal adapter (it is `plugins/minimal`, built by
//! `cargo xtask build-plugins` and loaded by the host's tests):
//!
//! ```text
#![doc = include_str!("../../plugins/minimal/src/lib.rs")]
//! ```
//!
//! `plugins/` in this repository holds complete adapters built this way.

mod adapter;
pub mod capability;
pub mod declaration;

/// Generated bindings. Not part of the public API: use the re-exports.
#[doc(hidden)]
pub mod __bindings {
    wit_bindgen::generate!({
        world: "provider",
        path: "../wit",
        pub_export_macro: true,
        export_macro_name: "__export_provider_world",
        default_bindings_module: "oac_provider_sdk::__bindings",
        generate_all,
        additional_derives: [PartialEq],
    });
}

#[doc(hidden)]
pub use adapter::Adapter as __Adapter;

/// Contract version this SDK implements; stamped into every component.
pub const CONTRACT_VERSION: &str = "0.1.0";

/// Value types of the contract.
pub mod types {
    pub use crate::__bindings::exports::oac::sandbox_provider::configuration_adapter::{
        ConfigurationRequirements, Requirement,
    };
    pub use crate::__bindings::exports::oac::sandbox_provider::declarations::{
        OperationDeclaration, Support,
    };
    pub use crate::__bindings::exports::oac::sandbox_provider::readiness::Diagnostic;
    pub use crate::__bindings::exports::oac::sandbox_provider::selection_discoverer::SelectionOption;
    pub use crate::__bindings::oac::sandbox_provider::types::{
        Bootstrap, Command, CommandResult, Compute, ComputeState, Error, Failure, Info,
        LifecycleState, NetworkAccess, Reference, ResumeRequest, Sample, SnapshotIdentity,
        SuspendRequest, Target, UnsupportedOperation,
    };

    impl From<Error> for Failure {
        /// A failure without settlement evidence.
        fn from(error: Error) -> Self {
            Failure { error, info: None }
        }
    }
}

/// Bounds of the contract, as enforced by the host.
pub mod bounds {
    /// Maximum bytes per command output stream.
    pub const MAX_OUTPUT_BYTES: u32 = 1024 * 1024;
    /// Maximum command stdin bytes.
    pub const MAX_STDIN_BYTES: u64 = 50 * 1024 * 1024 + 32;
    /// Maximum targets in one batch observation.
    pub const MAX_BATCH_TARGETS: usize = 100;
}

/// The traits an adapter implements, one per exported interface.
pub mod traits;

/// Everything an adapter usually needs.
pub mod prelude {
    pub use crate::capability::{context, docker, http, log};
    pub use crate::declaration::{
        CHECKPOINT_OPERATIONS, OPTIONAL_OPERATIONS, READINESS_OPERATIONS, REQUIRED_OPERATIONS,
        Unsupported, supported, unsupported,
    };
    pub use crate::traits::*;
    pub use crate::types::*;
}

/// Export a type implementing every trait in [`traits`] as the component's
/// provider, and stamp the contract version into the component.
#[macro_export]
macro_rules! export_provider {
    ($provider:ty) => {
        type __OacProviderAdapter = $crate::__Adapter<$provider>;
        $crate::__bindings::__export_provider_world!(
            __OacProviderAdapter with_types_in $crate::__bindings
        );
        #[unsafe(link_section = "oac:contract-version")]
        #[used]
        static __OAC_CONTRACT_VERSION: [u8; 5] = *b"0.1.0";
    };
}
