//! [`crate::export_provider!`]: the adapter's written decisions become the
//! component's exports, its declaration and its `unsupported` answers, all
//! from the one list in the macro invocation.

use crate::types::{OperationDeclaration, Support};
use oac_contract::{Interface, Operation};

/// Exports `$provider` as the component's provider and stamps the contract
/// version into the component.
///
/// Every group of optional operations is named, in this order, with either
/// `supported` (the adapter implements that group's trait from
/// [`crate::guest`]) or a reason code (`^[a-z][a-z0-9_]{0,95}$`, checked at
/// compile time): the component then answers each of the group's operations
/// `unsupported(operation, reason)` without running any code of the
/// adapter, and declares them so. The required operations
/// ([`crate::guest::Sandbox`]) and the readiness probe
/// ([`crate::guest::Readiness`]) are always implemented; the configuration
/// requirements are static and written here (each `Required` or
/// `NotRequired`; their configuration discovery follows
/// `discover_configuration`, so the two cannot disagree). A `nodes` kind
/// writes `credential: NotRequired` and a reason for `verify_credential`,
/// `with_credential` and `discover_configuration` (the host refuses it at
/// load otherwise). `observe_batch: supported`
/// needs `observe: supported` (checked at compile time, as the host checks
/// at load).
///
/// ```text
/// export_provider!(MyProvider {
///     requirements: { credential: Required, public_origin: NotRequired },
///     checkpoint: "vendor_has_no_snapshots",
///     observe: supported,
///     observe_batch: "vendor_observes_one_sandbox_at_a_time",
///     discover_selection: supported,
///     verify_credential: supported,
///     configuration: supported,
///     with_credential: supported,
///     discover_configuration: "vendor_has_no_catalog",
/// });
/// ```
///
/// What the compiler holds the adapter to (each block below is compiled by
/// `cargo test` in the SDK). Every group written with a valid reason
/// compiles:
///
/// ```no_run
/// # use oac_provider_sdk::prelude::*;
/// # struct Minimal;
/// # impl Sandbox for Minimal {
/// #     fn create(_: Bootstrap) -> Result<Info, Failure> { Err(Error::Invalid.into()) }
/// #     fn get_info(_: Reference) -> Result<Info, Error> { Err(Error::NotFound) }
/// #     fn renew(_: Reference) -> Result<Info, Failure> { Err(Error::NotFound.into()) }
/// #     fn kill(_: Reference) -> Result<Info, Failure> { Err(Error::NotFound.into()) }
/// #     fn run_command(_: Reference, _: Command) -> Result<CommandResult, Error> {
/// #         Err(Error::NotFound)
/// #     }
/// # }
/// # impl Readiness for Minimal { fn probe() -> Vec<Diagnostic> { Vec::new() } }
/// export_provider!(Minimal {
///     requirements: { credential: NotRequired, public_origin: NotRequired },
///     checkpoint: "no_snapshots",
///     observe: "no_metrics",
///     observe_batch: "no_metrics",
///     discover_selection: "no_catalog",
///     verify_credential: "no_credentials",
///     configuration: "no_configuration",
///     with_credential: "no_credentials",
///     discover_configuration: "no_catalog",
/// });
/// # fn main() {}
/// ```
///
/// A reason that is not a reason code does not:
///
/// ```compile_fail
/// # use oac_provider_sdk::prelude::*;
/// # struct Minimal;
/// # impl Sandbox for Minimal {
/// #     fn create(_: Bootstrap) -> Result<Info, Failure> { Err(Error::Invalid.into()) }
/// #     fn get_info(_: Reference) -> Result<Info, Error> { Err(Error::NotFound) }
/// #     fn renew(_: Reference) -> Result<Info, Failure> { Err(Error::NotFound.into()) }
/// #     fn kill(_: Reference) -> Result<Info, Failure> { Err(Error::NotFound.into()) }
/// #     fn run_command(_: Reference, _: Command) -> Result<CommandResult, Error> {
/// #         Err(Error::NotFound)
/// #     }
/// # }
/// # impl Readiness for Minimal { fn probe() -> Vec<Diagnostic> { Vec::new() } }
/// export_provider!(Minimal {
///     requirements: { credential: NotRequired, public_origin: NotRequired },
///     checkpoint: "no_snapshots",
///     observe: "No metrics here",
///     observe_batch: "no_metrics",
///     discover_selection: "no_catalog",
///     verify_credential: "no_credentials",
///     configuration: "no_configuration",
///     with_credential: "no_credentials",
///     discover_configuration: "no_catalog",
/// });
/// # fn main() {}
/// ```
///
/// Nor does leaving a group out (here `checkpoint`): every decision is
/// written down.
///
/// ```compile_fail
/// # use oac_provider_sdk::prelude::*;
/// # struct Minimal;
/// # impl Sandbox for Minimal {
/// #     fn create(_: Bootstrap) -> Result<Info, Failure> { Err(Error::Invalid.into()) }
/// #     fn get_info(_: Reference) -> Result<Info, Error> { Err(Error::NotFound) }
/// #     fn renew(_: Reference) -> Result<Info, Failure> { Err(Error::NotFound.into()) }
/// #     fn kill(_: Reference) -> Result<Info, Failure> { Err(Error::NotFound.into()) }
/// #     fn run_command(_: Reference, _: Command) -> Result<CommandResult, Error> {
/// #         Err(Error::NotFound)
/// #     }
/// # }
/// # impl Readiness for Minimal { fn probe() -> Vec<Diagnostic> { Vec::new() } }
/// export_provider!(Minimal {
///     requirements: { credential: NotRequired, public_origin: NotRequired },
///     observe: "no_metrics",
///     observe_batch: "no_metrics",
///     discover_selection: "no_catalog",
///     verify_credential: "no_credentials",
///     configuration: "no_configuration",
///     with_credential: "no_credentials",
///     discover_configuration: "no_catalog",
/// });
/// # fn main() {}
/// ```
///
/// Nor does `supported` for a group whose trait the adapter does not
/// implement (here [`crate::guest::Observe`]).
///
/// ```compile_fail
/// # use oac_provider_sdk::prelude::*;
/// # struct Minimal;
/// # impl Sandbox for Minimal {
/// #     fn create(_: Bootstrap) -> Result<Info, Failure> { Err(Error::Invalid.into()) }
/// #     fn get_info(_: Reference) -> Result<Info, Error> { Err(Error::NotFound) }
/// #     fn renew(_: Reference) -> Result<Info, Failure> { Err(Error::NotFound.into()) }
/// #     fn kill(_: Reference) -> Result<Info, Failure> { Err(Error::NotFound.into()) }
/// #     fn run_command(_: Reference, _: Command) -> Result<CommandResult, Error> {
/// #         Err(Error::NotFound)
/// #     }
/// # }
/// # impl Readiness for Minimal { fn probe() -> Vec<Diagnostic> { Vec::new() } }
/// export_provider!(Minimal {
///     requirements: { credential: NotRequired, public_origin: NotRequired },
///     checkpoint: "no_snapshots",
///     observe: supported,
///     observe_batch: "no_metrics",
///     discover_selection: "no_catalog",
///     verify_credential: "no_credentials",
///     configuration: "no_configuration",
///     with_credential: "no_credentials",
///     discover_configuration: "no_catalog",
/// });
/// # fn main() {}
/// ```
///
/// Nor does batch observation without single observation.
///
/// ```compile_fail
/// # use oac_provider_sdk::prelude::*;
/// # struct Minimal;
/// # impl Sandbox for Minimal {
/// #     fn create(_: Bootstrap) -> Result<Info, Failure> { Err(Error::Invalid.into()) }
/// #     fn get_info(_: Reference) -> Result<Info, Error> { Err(Error::NotFound) }
/// #     fn renew(_: Reference) -> Result<Info, Failure> { Err(Error::NotFound.into()) }
/// #     fn kill(_: Reference) -> Result<Info, Failure> { Err(Error::NotFound.into()) }
/// #     fn run_command(_: Reference, _: Command) -> Result<CommandResult, Error> {
/// #         Err(Error::NotFound)
/// #     }
/// # }
/// # impl Readiness for Minimal { fn probe() -> Vec<Diagnostic> { Vec::new() } }
/// # impl ObserveBatch for Minimal {
/// #     fn observe_batch(_: Vec<Target>) -> Result<Vec<Result<Sample, Error>>, Error> {
/// #         Ok(Vec::new())
/// #     }
/// # }
/// export_provider!(Minimal {
///     requirements: { credential: NotRequired, public_origin: NotRequired },
///     checkpoint: "no_snapshots",
///     observe: "no_metrics",
///     observe_batch: supported,
///     discover_selection: "no_catalog",
///     verify_credential: "no_credentials",
///     configuration: "no_configuration",
///     with_credential: "no_credentials",
///     discover_configuration: "no_catalog",
/// });
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! export_provider {
    ($provider:ty {
        requirements: { credential: $credential:ident, public_origin: $origin:ident $(,)? },
        checkpoint: $checkpoint:tt,
        observe: $observe:tt,
        observe_batch: $batch:tt,
        discover_selection: $selection:tt,
        verify_credential: $verify:tt,
        configuration: $configuration:tt,
        with_credential: $credential_group:tt,
        discover_configuration: $discovery:tt $(,)?
    }) => {
        const _: () = assert!(
            !$crate::__supported!($batch) || $crate::__supported!($observe),
            "observe_batch: supported needs observe: supported"
        );
        const _: () = {
            use $crate::__bindings::exports::oac::sandbox_provider as exports;
            use $crate::guest;
            use $crate::types::*;

            /// The component's exports, answering for the adapter.
            pub struct OacExports;

            impl exports::sandbox_provider::Guest for OacExports {
                fn create(request: Bootstrap) -> Result<Info, Failure> {
                    <$provider as guest::Sandbox>::create(request)
                }
                fn get_info(allocation: Reference) -> Result<Info, Error> {
                    <$provider as guest::Sandbox>::get_info(allocation)
                }
                fn renew(allocation: Reference) -> Result<Info, Failure> {
                    <$provider as guest::Sandbox>::renew(allocation)
                }
                fn kill(allocation: Reference) -> Result<Info, Failure> {
                    <$provider as guest::Sandbox>::kill(allocation)
                }
                fn run_command(
                    allocation: Reference,
                    request: Command,
                ) -> Result<CommandResult, Error> {
                    <$provider as guest::Sandbox>::run_command(allocation, request)
                }
            }

            impl exports::readiness::Guest for OacExports {
                fn probe() -> Vec<Diagnostic> {
                    <$provider as guest::Readiness>::probe()
                }
            }

            impl exports::checkpoint_provider::Guest for OacExports {
                fn initial(_allocation: Reference) -> Result<Compute, Error> {
                    $crate::__answer!(
                        $checkpoint,
                        Initial,
                        <$provider as guest::Checkpoint>::initial(_allocation)
                    )
                }
                fn new_compute(
                    _allocation: Reference,
                    _generation: u64,
                    _restored_from: Option<SnapshotIdentity>,
                ) -> Result<Compute, Error> {
                    $crate::__answer!(
                        $checkpoint,
                        NewCompute,
                        <$provider as guest::Checkpoint>::new_compute(
                            _allocation,
                            _generation,
                            _restored_from
                        )
                    )
                }
                fn get_compute(
                    _allocation: Reference,
                    _incarnation: Compute,
                ) -> Result<ComputeState, Error> {
                    $crate::__answer!(
                        $checkpoint,
                        GetCompute,
                        <$provider as guest::Checkpoint>::get_compute(_allocation, _incarnation)
                    )
                }
                fn suspend(_request: SuspendRequest) -> Result<ComputeState, Error> {
                    $crate::__answer!(
                        $checkpoint,
                        Suspend,
                        <$provider as guest::Checkpoint>::suspend(_request)
                    )
                }
                fn resume(_request: ResumeRequest) -> Result<ComputeState, Error> {
                    $crate::__answer!(
                        $checkpoint,
                        Resume,
                        <$provider as guest::Checkpoint>::resume(_request)
                    )
                }
                fn resume_compute(
                    _allocation: Reference,
                    _incarnation: Compute,
                ) -> Result<ComputeState, Error> {
                    $crate::__answer!(
                        $checkpoint,
                        ResumeCompute,
                        <$provider as guest::Checkpoint>::resume_compute(_allocation, _incarnation)
                    )
                }
                fn kill_compute(
                    _allocation: Reference,
                    _incarnation: Compute,
                ) -> Result<(), Error> {
                    $crate::__answer!(
                        $checkpoint,
                        KillCompute,
                        <$provider as guest::Checkpoint>::kill_compute(_allocation, _incarnation)
                    )
                }
                fn delete_snapshot(
                    _allocation: Reference,
                    _snapshot: SnapshotIdentity,
                ) -> Result<(), Error> {
                    $crate::__answer!(
                        $checkpoint,
                        DeleteSnapshot,
                        <$provider as guest::Checkpoint>::delete_snapshot(_allocation, _snapshot)
                    )
                }
                fn run_command_compute(
                    _allocation: Reference,
                    _incarnation: Compute,
                    _request: Command,
                ) -> Result<CommandResult, Error> {
                    $crate::__answer!(
                        $checkpoint,
                        RunCommandCompute,
                        <$provider as guest::Checkpoint>::run_command_compute(
                            _allocation,
                            _incarnation,
                            _request
                        )
                    )
                }
            }

            impl exports::observation_source::Guest for OacExports {
                fn observe(_of: Target) -> Result<Sample, Error> {
                    $crate::__answer!(
                        $observe,
                        Observe,
                        <$provider as guest::Observe>::observe(_of)
                    )
                }
            }

            impl exports::batch_observation_source::Guest for OacExports {
                fn observe_batch(
                    _targets: Vec<Target>,
                ) -> Result<Vec<Result<Sample, Error>>, Error> {
                    $crate::__answer!(
                        $batch,
                        ObserveBatch,
                        <$provider as guest::ObserveBatch>::observe_batch(_targets)
                    )
                }
            }

            impl exports::selection_discoverer::Guest for OacExports {
                fn discover_selection(_candidate: String) -> Result<String, Error> {
                    $crate::__answer!(
                        $selection,
                        DiscoverSelection,
                        <$provider as guest::DiscoverSelection>::discover_selection(_candidate)
                    )
                }
            }

            impl exports::credential_verifier::Guest for OacExports {
                fn verify_credential(
                    _candidate: String,
                    _references: Vec<Reference>,
                ) -> Result<(), Error> {
                    $crate::__answer!(
                        $verify,
                        VerifyCredential,
                        <$provider as guest::VerifyCredential>::verify_credential(
                            _candidate,
                            _references
                        )
                    )
                }
            }

            impl exports::configuration_adapter::Guest for OacExports {
                fn requirements() -> ConfigurationRequirements {
                    ConfigurationRequirements {
                        credential: Requirement::$credential,
                        public_origin: Requirement::$origin,
                        configuration_discovery: Option::<&str>::is_none(&$crate::__decision!(
                            $discovery
                        )),
                    }
                }
                fn decode_input(
                    _public: String,
                    _credential: Option<Credential>,
                ) -> Result<Configuration, Error> {
                    $crate::__answer!(
                        $configuration,
                        DecodeInput,
                        <$provider as guest::ConfigurationAdapter>::decode_input(
                            _public,
                            _credential
                        )
                    )
                }
                fn encode(_configuration: Configuration) -> Result<StoredConfiguration, Error> {
                    $crate::__answer!(
                        $configuration,
                        Encode,
                        <$provider as guest::ConfigurationAdapter>::encode(_configuration)
                    )
                }
                fn decode(_stored: StoredConfiguration) -> Result<Configuration, Error> {
                    $crate::__answer!(
                        $configuration,
                        Decode,
                        <$provider as guest::ConfigurationAdapter>::decode(_stored)
                    )
                }
                fn normalize(_configuration: Configuration) -> Result<Configuration, Error> {
                    $crate::__answer!(
                        $configuration,
                        Normalize,
                        <$provider as guest::ConfigurationAdapter>::normalize(_configuration)
                    )
                }
                fn resolve_change(
                    _next: Configuration,
                    _previous: Configuration,
                ) -> Result<Configuration, Error> {
                    $crate::__answer!(
                        $configuration,
                        ResolveChange,
                        <$provider as guest::ConfigurationAdapter>::resolve_change(
                            _next, _previous
                        )
                    )
                }
                fn equal(_left: Configuration, _right: Configuration) -> Result<bool, Error> {
                    $crate::__answer!(
                        $configuration,
                        Equal,
                        <$provider as guest::ConfigurationAdapter>::equal(_left, _right)
                    )
                }
                fn with_credential(
                    _owner: Configuration,
                    _candidate: Credential,
                ) -> Result<Configuration, Error> {
                    $crate::__answer!(
                        $credential_group,
                        WithCredential,
                        <$provider as guest::WithCredential>::with_credential(_owner, _candidate)
                    )
                }
                fn discover_configuration(_query: String) -> Result<Vec<String>, Error> {
                    $crate::__answer!(
                        $discovery,
                        DiscoverConfiguration,
                        <$provider as guest::DiscoverConfiguration>::discover_configuration(_query)
                    )
                }
            }

            impl exports::declarations::Guest for OacExports {
                fn operations() -> Vec<OperationDeclaration> {
                    $crate::__declarations(&$crate::__Decisions {
                        checkpoint: $crate::__decision!($checkpoint),
                        observe: $crate::__decision!($observe),
                        observe_batch: $crate::__decision!($batch),
                        discover_selection: $crate::__decision!($selection),
                        verify_credential: $crate::__decision!($verify),
                        configuration: $crate::__decision!($configuration),
                        with_credential: $crate::__decision!($credential_group),
                        discover_configuration: $crate::__decision!($discovery),
                    })
                }
            }

            $crate::__bindings::__export_provider_world!(
                OacExports with_types_in $crate::__bindings
            );
        };

        #[unsafe(link_section = "oac:contract-version")]
        #[used]
        static __OAC_CONTRACT_VERSION: [u8; $crate::__contract::VERSION.len()] =
            $crate::__contract::VERSION_STAMP;
    };
}

/// One operation's answer: the adapter's call when the group is supported;
/// `unsupported(operation, reason)` otherwise (the call is never compiled).
#[doc(hidden)]
#[macro_export]
macro_rules! __answer {
    (supported, $operation:ident, $call:expr) => {
        $call
    };
    ($reason:literal, $operation:ident, $call:expr) => {{
        const _: () = assert!(
            $crate::__contract::is_valid_reason($reason),
            "a reason code matches ^[a-z][a-z0-9_]{{0,95}}$"
        );
        Err($crate::types::Error::Unsupported(
            $crate::types::UnsupportedOperation {
                operation: $crate::__contract::Operation::$operation.name().into(),
                reason: $reason.into(),
            },
        ))
    }};
}

/// Whether a group is decided `supported`.
#[doc(hidden)]
#[macro_export]
macro_rules! __supported {
    (supported) => {
        true
    };
    ($reason:literal) => {
        false
    };
}

/// A group's decision: `supported` or its reason.
#[doc(hidden)]
#[macro_export]
macro_rules! __decision {
    (supported) => {
        None
    };
    ($reason:literal) => {
        Some($reason)
    };
}

/// Every group of optional operations, each decided: `None` supported,
/// `Some(reason)` unsupported. A struct, so no group can be left out.
#[doc(hidden)]
pub struct Decisions<'a> {
    pub checkpoint: Option<&'a str>,
    pub observe: Option<&'a str>,
    pub observe_batch: Option<&'a str>,
    pub discover_selection: Option<&'a str>,
    pub verify_credential: Option<&'a str>,
    pub configuration: Option<&'a str>,
    pub with_credential: Option<&'a str>,
    pub discover_configuration: Option<&'a str>,
}

impl Decisions<'_> {
    /// The reason `operation` is unsupported, if its group is; the
    /// operations of no group (the required five, `requirements`, `probe`)
    /// are always supported.
    fn reason(&self, operation: Operation) -> Option<&str> {
        use Operation::*;
        match operation {
            _ if operation.interface() == Interface::CheckpointProvider => self.checkpoint,
            Observe => self.observe,
            ObserveBatch => self.observe_batch,
            DiscoverSelection => self.discover_selection,
            VerifyCredential => self.verify_credential,
            DecodeInput | Encode | Decode | Normalize | ResolveChange | Equal => self.configuration,
            WithCredential => self.with_credential,
            DiscoverConfiguration => self.discover_configuration,
            _ => None,
        }
    }
}

/// The declaration: every operation of the contract exactly once, as its
/// group is decided.
#[doc(hidden)]
pub fn declarations(decisions: &Decisions) -> Vec<OperationDeclaration> {
    Operation::ALL
        .iter()
        .map(|operation| OperationDeclaration {
            operation: operation.name().into(),
            support: match decisions.reason(*operation) {
                Some(reason) => Support::Unsupported(reason.into()),
                None => Support::Supported,
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_is_declared_once_by_its_group() {
        let declared = declarations(&Decisions {
            checkpoint: Some("no_checkpoints"),
            observe: None,
            observe_batch: Some("no_batch"),
            discover_selection: None,
            verify_credential: None,
            configuration: Some("no_configuration"),
            with_credential: None,
            discover_configuration: None,
        });
        assert_eq!(declared.len(), Operation::ALL.len());
        let support = |name: &str| {
            declared
                .iter()
                .find(|entry| entry.operation == name)
                .map(|entry| entry.support.clone())
        };
        assert_eq!(support("create"), Some(Support::Supported));
        assert_eq!(support("probe"), Some(Support::Supported));
        assert_eq!(support("requirements"), Some(Support::Supported));
        assert_eq!(support("observe"), Some(Support::Supported));
        assert_eq!(
            support("observe-batch"),
            Some(Support::Unsupported("no_batch".into()))
        );
        assert_eq!(
            support("run-command-compute"),
            Some(Support::Unsupported("no_checkpoints".into()))
        );
        assert_eq!(
            support("equal"),
            Some(Support::Unsupported("no_configuration".into()))
        );
    }
}
