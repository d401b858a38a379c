//! Host-side bindings of the `oac:sandbox-provider` world.

#![allow(missing_docs)]

wasmtime::component::bindgen!({
    world: "provider",
    path: "../wit",
    imports: { default: async },
    exports: { default: async },
    additional_derives: [PartialEq, serde::Serialize, serde::Deserialize],
});

pub use exports::oac::sandbox_provider::declarations::{OperationDeclaration, Support};
pub use oac::sandbox_provider::types::{
    Bootstrap, Command, CommandResult, Error, Failure, Info, LifecycleState, NetworkAccess,
    Reference, UnsupportedOperation,
};

impl Error {
    /// The fixed wire code of this error, as the node transport and the CLI print it.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Invalid => "invalid",
            Error::Ownership => "ownership",
            Error::Exists => "exists",
            Error::NotFound => "not_found",
            Error::ComputeUnconfirmed => "unconfirmed",
            Error::CommandUnconfirmed => "command_unconfirmed",
            Error::Unsupported(_) => "unsupported",
            Error::ObservationUnavailable => "observation_unavailable",
            Error::RuntimeNotRunning => "runtime_not_running",
        }
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure { error, info: None }
    }
}
