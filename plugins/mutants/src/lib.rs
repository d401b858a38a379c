//! Broken variants of the Docker adapter, one per feature. Each reuses the
//! real adapter's source and breaks one rule of the contract, so the
//! contract suite's tests can show the suite catches it:
//! - `retry-create`: replays Create after an unconfirmed failure;
//! - `delete-foreign`: Kill deletes by name, without checking labels;
//! - `invent-settlement`: a failed Create claims settlement and bootstrap;
//! - `io-before-unsupported`: batch observation touches the engine before
//!   answering unsupported;
//! - `leak-secret`: Create logs the daemon credential;
//! - `settle-on-observation`: GetInfo and Kill claim `create-settled`.
//!
//! Built without a feature it is the unmodified adapter.

#[path = "../../docker/src/archive.rs"]
mod archive;
#[path = "../../docker/src/config.rs"]
mod config;
#[path = "../../docker/src/identity.rs"]
mod identity;
#[path = "../../docker/src/provider.rs"]
mod provider;
#[path = "../../docker/src/spec.rs"]
mod spec;

use oac_provider_sdk::__bindings::exports::oac::sandbox_provider as exports;
use oac_provider_sdk::__contract::Operation;
use oac_provider_sdk::prelude::*;
use provider::DockerProvider as Real;

/// The adapter with one rule broken. It speaks the raw contract (the
/// generated export traits) rather than through `export_provider!`, because
/// the SDK makes some of these mistakes impossible to write.
struct Mutant;

const NO_CHECKPOINT: &str = "docker_does_not_support_checkpoints";
const NO_BATCH: &str = "docker_observes_one_allocation_at_a_time";
const NO_CATALOG: &str = "node_configuration_has_no_catalog";
const NO_CREDENTIAL: &str = "credentials_not_required";

fn unsupported(operation: Operation, reason: &str) -> Error {
    Error::Unsupported(UnsupportedOperation {
        operation: operation.name().into(),
        reason: reason.into(),
    })
}

impl exports::sandbox_provider::Guest for Mutant {
    fn create(request: Bootstrap) -> Result<Info, Failure> {
        #[cfg(feature = "leak-secret")]
        log::emit(
            log::Level::Info,
            "bootstrap_received",
            &[("credential".into(), request.daemon_credential.clone())],
        );
        let answer = Real::create(request.clone());
        #[cfg(feature = "retry-create")]
        let answer = match answer {
            Err(Failure {
                error: Error::ComputeUnconfirmed,
                ..
            }) => Real::create(request.clone()),
            other => other,
        };
        #[cfg(feature = "invent-settlement")]
        let answer = answer.map_err(|failure| Failure {
            error: failure.error,
            info: Some(Info {
                reference: request.reference.clone(),
                provider_id: None,
                state: LifecycleState::Running,
                bootstrap_complete: true,
                create_settled: true,
            }),
        });
        answer
    }
    fn get_info(allocation: Reference) -> Result<Info, Error> {
        let answer = Real::get_info(allocation);
        #[cfg(feature = "settle-on-observation")]
        let answer = answer.map(|info| Info {
            create_settled: true,
            ..info
        });
        answer
    }
    fn renew(allocation: Reference) -> Result<Info, Failure> {
        Real::renew(allocation)
    }
    fn kill(allocation: Reference) -> Result<Info, Failure> {
        #[cfg(feature = "delete-foreign")]
        {
            if let Ok(names) = identity::Identity::of(&allocation) {
                let _ = docker::container_remove(&names.container, true);
                let _ = docker::volume_remove(&names.home);
                let _ = docker::volume_remove(&names.environment);
            }
        }
        let answer = Real::kill(allocation);
        #[cfg(feature = "settle-on-observation")]
        let answer = answer.map(|info| Info {
            create_settled: true,
            ..info
        });
        answer
    }
    fn run_command(allocation: Reference, request: Command) -> Result<CommandResult, Error> {
        Real::run_command(allocation, request)
    }
}

impl exports::checkpoint_provider::Guest for Mutant {
    fn initial(_: Reference) -> Result<Compute, Error> {
        Err(unsupported(Operation::Initial, NO_CHECKPOINT))
    }
    fn new_compute(_: Reference, _: u64, _: Option<SnapshotIdentity>) -> Result<Compute, Error> {
        Err(unsupported(Operation::NewCompute, NO_CHECKPOINT))
    }
    fn get_compute(_: Reference, _: Compute) -> Result<ComputeState, Error> {
        Err(unsupported(Operation::GetCompute, NO_CHECKPOINT))
    }
    fn suspend(_: SuspendRequest) -> Result<ComputeState, Error> {
        Err(unsupported(Operation::Suspend, NO_CHECKPOINT))
    }
    fn resume(_: ResumeRequest) -> Result<ComputeState, Error> {
        Err(unsupported(Operation::Resume, NO_CHECKPOINT))
    }
    fn resume_compute(_: Reference, _: Compute) -> Result<ComputeState, Error> {
        Err(unsupported(Operation::ResumeCompute, NO_CHECKPOINT))
    }
    fn kill_compute(_: Reference, _: Compute) -> Result<(), Error> {
        Err(unsupported(Operation::KillCompute, NO_CHECKPOINT))
    }
    fn delete_snapshot(_: Reference, _: SnapshotIdentity) -> Result<(), Error> {
        Err(unsupported(Operation::DeleteSnapshot, NO_CHECKPOINT))
    }
    fn run_command_compute(_: Reference, _: Compute, _: Command) -> Result<CommandResult, Error> {
        Err(unsupported(Operation::RunCommandCompute, NO_CHECKPOINT))
    }
}

impl exports::observation_source::Guest for Mutant {
    fn observe(of: Target) -> Result<Sample, Error> {
        Real::observe(of)
    }
}

impl exports::batch_observation_source::Guest for Mutant {
    fn observe_batch(_: Vec<Target>) -> Result<Vec<Result<Sample, Error>>, Error> {
        #[cfg(feature = "io-before-unsupported")]
        let _ = docker::version();
        Err(unsupported(Operation::ObserveBatch, NO_BATCH))
    }
}

impl exports::selection_discoverer::Guest for Mutant {
    fn discover_selection(_: String) -> Result<String, Error> {
        Err(unsupported(Operation::DiscoverSelection, NO_CATALOG))
    }
}

impl exports::credential_verifier::Guest for Mutant {
    fn verify_credential(_: String, _: Vec<Reference>) -> Result<(), Error> {
        Err(unsupported(Operation::VerifyCredential, NO_CREDENTIAL))
    }
}

impl exports::configuration_adapter::Guest for Mutant {
    fn requirements() -> ConfigurationRequirements {
        ConfigurationRequirements {
            credential: Requirement::NotRequired,
            public_origin: Requirement::NotRequired,
            configuration_discovery: false,
        }
    }
    fn decode_input(
        public: String,
        credential: Option<Credential>,
    ) -> Result<Configuration, Error> {
        Real::decode_input(public, credential)
    }
    fn encode(configuration: Configuration) -> Result<StoredConfiguration, Error> {
        Real::encode(configuration)
    }
    fn decode(stored: StoredConfiguration) -> Result<Configuration, Error> {
        Real::decode(stored)
    }
    fn normalize(configuration: Configuration) -> Result<Configuration, Error> {
        Real::normalize(configuration)
    }
    fn resolve_change(
        next: Configuration,
        previous: Configuration,
    ) -> Result<Configuration, Error> {
        Real::resolve_change(next, previous)
    }
    fn equal(left: Configuration, right: Configuration) -> Result<bool, Error> {
        Real::equal(left, right)
    }
    fn with_credential(_: Configuration, _: Credential) -> Result<Configuration, Error> {
        Err(unsupported(Operation::WithCredential, NO_CREDENTIAL))
    }
    fn discover_configuration(_: String) -> Result<Vec<String>, Error> {
        Err(unsupported(Operation::DiscoverConfiguration, NO_CATALOG))
    }
}

impl exports::readiness::Guest for Mutant {
    fn probe() -> Vec<Diagnostic> {
        Real::probe()
    }
}

impl exports::declarations::Guest for Mutant {
    fn operations() -> Vec<OperationDeclaration> {
        oac_provider_sdk::__declarations(&oac_provider_sdk::__Decisions {
            checkpoint: Some(NO_CHECKPOINT),
            observe: None,
            observe_batch: Some(NO_BATCH),
            discover_selection: Some(NO_CATALOG),
            verify_credential: Some(NO_CREDENTIAL),
            configuration: None,
            with_credential: Some(NO_CREDENTIAL),
            discover_configuration: Some(NO_CATALOG),
        })
    }
}

oac_provider_sdk::__bindings::__export_provider_world!(
    Mutant with_types_in oac_provider_sdk::__bindings
);

#[unsafe(link_section = "oac:contract-version")]
#[used]
static CONTRACT_VERSION: [u8; oac_provider_sdk::__contract::VERSION.len()] =
    oac_provider_sdk::__contract::VERSION_STAMP;
