//! Broken variants of the Docker adapter, one per feature. Each reuses the
//! real adapter's source and breaks one rule of the contract, so the
//! contract suite's tests can show the suite catches it:
//! - `retry-create`: replays Create after an unconfirmed failure;
//! - `delete-foreign`: Kill deletes by name, without checking labels;
//! - `invent-settlement`: a failed Create claims settlement and bootstrap;
//! - `io-before-unsupported`: batch observation touches the engine before
//!   answering unsupported;
//! - `leak-secret`: Create logs the daemon credential.
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

use oac_provider_sdk::prelude::*;
use provider::DockerProvider as Real;

struct Mutant;

impl SandboxProvider for Mutant {
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
        Real::get_info(allocation)
    }
    fn renew(allocation: Reference) -> Result<Info, Failure> {
        Real::renew(allocation)
    }
    fn kill(allocation: Reference) -> Result<Info, Failure> {
        #[cfg(feature = "delete-foreign")]
        {
            let names = identity::Identity::of(&context::installation_id(), &allocation);
            let _ = docker::container_remove(&names.container, true);
            let _ = docker::volume_remove(&names.home);
            let _ = docker::volume_remove(&names.environment);
        }
        Real::kill(allocation)
    }
    fn run_command(allocation: Reference, request: Command) -> Result<CommandResult, Error> {
        Real::run_command(allocation, request)
    }
}

impl CheckpointProvider for Mutant {
    fn initial(allocation: Reference) -> Result<Compute, Error> {
        Real::initial(allocation)
    }
    fn new_compute(allocation: Reference, generation: u64) -> Result<Compute, Error> {
        Real::new_compute(allocation, generation)
    }
    fn get_compute(allocation: Reference, incarnation: Compute) -> Result<ComputeState, Error> {
        Real::get_compute(allocation, incarnation)
    }
    fn suspend(request: SuspendRequest) -> Result<SnapshotIdentity, Error> {
        Real::suspend(request)
    }
    fn resume(request: ResumeRequest) -> Result<Compute, Error> {
        Real::resume(request)
    }
    fn resume_compute(allocation: Reference, incarnation: Compute) -> Result<ComputeState, Error> {
        Real::resume_compute(allocation, incarnation)
    }
    fn kill_compute(allocation: Reference, incarnation: Compute) -> Result<(), Error> {
        Real::kill_compute(allocation, incarnation)
    }
    fn delete_snapshot(allocation: Reference, snapshot: SnapshotIdentity) -> Result<(), Error> {
        Real::delete_snapshot(allocation, snapshot)
    }
    fn run_command_compute(
        allocation: Reference,
        incarnation: Compute,
        request: Command,
    ) -> Result<CommandResult, Error> {
        Real::run_command_compute(allocation, incarnation, request)
    }
}

impl ObservationSource for Mutant {
    fn observe(of: Target) -> Result<Sample, Error> {
        Real::observe(of)
    }
}

impl BatchObservationSource for Mutant {
    fn observe_batch(targets: Vec<Target>) -> Result<Vec<Result<Sample, Error>>, Error> {
        #[cfg(feature = "io-before-unsupported")]
        let _ = docker::version();
        Real::observe_batch(targets)
    }
}

impl SelectionDiscoverer for Mutant {
    fn discover_selection() -> Result<Vec<SelectionOption>, Error> {
        Real::discover_selection()
    }
}

impl CredentialVerifier for Mutant {
    fn verify_credential(credential: String) -> Result<(), Error> {
        Real::verify_credential(credential)
    }
}

impl ConfigurationAdapter for Mutant {
    fn requirements() -> ConfigurationRequirements {
        Real::requirements()
    }
    fn decode_input(input: String) -> Result<String, Error> {
        Real::decode_input(input)
    }
    fn encode(configuration: String) -> Result<String, Error> {
        Real::encode(configuration)
    }
    fn decode(stored: String) -> Result<String, Error> {
        Real::decode(stored)
    }
    fn normalize(configuration: String) -> Result<String, Error> {
        Real::normalize(configuration)
    }
    fn resolve_change(current: String, proposed: String) -> Result<String, Error> {
        Real::resolve_change(current, proposed)
    }
    fn equal(left: String, right: String) -> Result<bool, Error> {
        Real::equal(left, right)
    }
    fn with_credential(configuration: String, credential: String) -> Result<String, Error> {
        Real::with_credential(configuration, credential)
    }
    fn discover_configuration() -> Result<Vec<String>, Error> {
        Real::discover_configuration()
    }
}

impl Readiness for Mutant {
    fn probe() -> Vec<Diagnostic> {
        Real::probe()
    }
}

impl Declarations for Mutant {
    fn operations() -> Vec<OperationDeclaration> {
        Real::operations()
    }
}

oac_provider_sdk::export_provider!(Mutant);
