//! Guest SDK for `oac:sandbox-provider` components.
//!
//! An adapter is a Rust type implementing the traits of [`guest`] for the
//! operations it supports, exported with [`export_provider!`], which also
//! names every group it does not support with a reason: the SDK answers
//! those (`unsupported`, before any of the adapter's code runs) and builds
//! the declaration from the same list. Compile it with
//! `cargo build --target wasm32-wasip2`. Every call runs in a fresh
//! instance; the host brokers everything native through the capability
//! clients of [`capability`].
//!
//! A complete minimal adapter (it is `plugins/minimal`, built by
//! `cargo xtask build-plugins` in CI and loaded by the host's tests):
//!
//! ```text
#![doc = include_str!("../../plugins/minimal/src/lib.rs")]
//! ```
//!
//! `plugins/` in this repository holds complete adapters built this way.
//!
//! Beyond the capability clients, the SDK carries what every direct
//! adapter needs: [`bootstrap`] (the daemon's bootstrap and ready records),
//! [`configuration`] (a JSON configuration adapter from its
//! rules), [`ownership`] (the four labels, written and checked),
//! [`settlement`] (Create's receipts recipe under the evidence rule),
//! [`status`] (a vendor's HTTP status into the contract's codes), [`poll`]
//! (waiting within the budget), and, natively, [`testing`] (a mock host
//! for unit tests).

pub mod bootstrap;
pub mod capability;
pub mod configuration;
mod export;
pub mod guest;
pub mod ownership;
pub mod poll;
pub mod settlement;
pub mod status;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;

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
pub use export::{Decisions as __Decisions, declarations as __declarations};
#[doc(hidden)]
pub use oac_contract as __contract;

/// Contract version this SDK implements; stamped into every component.
pub const CONTRACT_VERSION: &str = oac_contract::VERSION;

/// Value types of the contract.
pub mod types {
    pub use crate::__bindings::exports::oac::sandbox_provider::configuration_adapter::{
        Configuration, ConfigurationRequirements, Credential, CredentialField, Requirement,
        StoredConfiguration,
    };
    pub use crate::__bindings::exports::oac::sandbox_provider::declarations::{
        OperationDeclaration, Support,
    };
    pub use crate::__bindings::exports::oac::sandbox_provider::readiness::Diagnostic;
    pub use crate::__bindings::oac::sandbox_provider::types::{
        Bootstrap, Command, CommandResult, Compute, ComputeState, ComputeStatus, Error, Failure,
        Info, LifecycleState, NetworkAccess, Reference, ResumeRequest, Sample, SnapshotIdentity,
        SuspendRequest, Target, UnsupportedOperation,
    };

    impl Credential {
        /// The length in bytes of field `name`, when the credential has it.
        /// A credential is a handle: the host holds its value, checked
        /// against the fields the kind's registration declares.
        pub fn length(&self, name: &str) -> Option<u32> {
            self.fields
                .iter()
                .find(|field| field.name == name)
                .map(|field| field.length)
        }
    }

    impl Info {
        /// Confirmed absence of the allocation's compute; `settled` only
        /// where the Create answered settled (the host checks the claim).
        pub fn absent(reference: Reference, settled: bool) -> Self {
            Info {
                reference,
                provider_id: None,
                state: LifecycleState::Absent,
                bootstrap_complete: false,
                create_settled: settled,
            }
        }
    }

    impl CommandResult {
        /// A finished command's result, or `command-unconfirmed` when a
        /// stream exceeds the contract's output bound: more output than the
        /// bound is an unknown outcome, never a truncated success.
        pub fn bounded(exit_code: i32, stdout: Vec<u8>, stderr: Vec<u8>) -> Result<Self, Error> {
            let bound = oac_contract::bounds::MAX_OUTPUT_BYTES as usize;
            if stdout.len() > bound || stderr.len() > bound {
                return Err(Error::CommandUnconfirmed);
            }
            Ok(CommandResult {
                exit_code,
                stdout,
                stderr,
            })
        }
    }

    impl Failure {
        /// `error` with the evidence `info`.
        pub fn with(error: Error, info: Info) -> Self {
            Failure {
                error,
                info: Some(info),
            }
        }
    }

    impl From<Error> for Failure {
        /// A failure without settlement evidence.
        fn from(error: Error) -> Self {
            Failure { error, info: None }
        }
    }
}

/// Bounds of the contract, as enforced by the host.
pub mod bounds {
    pub use oac_contract::bounds::*;
}

/// A vendor endpoint in a configuration (API URL and sandbox domain): the
/// rule the host applies to its HTTP allowlist, for the adapter's own
/// validation.
pub mod endpoint {
    pub use oac_contract::endpoint::*;
}

/// Everything an adapter usually needs.
pub mod prelude {
    pub use crate::capability::{context, docker, http, log, microsandbox, receipts};
    pub use crate::configuration::{JsonConfiguration, JsonConfigured};
    pub use crate::export_provider;
    pub use crate::guest::*;
    pub use crate::ownership::{LabelKeys, Ownership};
    pub use crate::settlement::{self, Ended, Prior};
    pub use crate::status::Status;
    pub use crate::types::*;
}
