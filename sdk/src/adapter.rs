//! Bridges the SDK traits to the generated export traits.

use crate::__bindings::exports::oac::sandbox_provider as exports;
use crate::traits::Provider;
use crate::types::*;
use std::marker::PhantomData;

/// The type the export macro exports; it forwards every call to `P`.
pub struct Adapter<P>(PhantomData<P>);

impl<P: Provider> exports::sandbox_provider::Guest for Adapter<P> {
    fn create(request: Bootstrap) -> Result<Info, Failure> {
        P::create(request)
    }
    fn get_info(allocation: Reference) -> Result<Info, Error> {
        P::get_info(allocation)
    }
    fn renew(allocation: Reference) -> Result<Info, Failure> {
        P::renew(allocation)
    }
    fn kill(allocation: Reference) -> Result<Info, Failure> {
        P::kill(allocation)
    }
    fn run_command(allocation: Reference, request: Command) -> Result<CommandResult, Error> {
        P::run_command(allocation, request)
    }
}

impl<P: Provider> exports::checkpoint_provider::Guest for Adapter<P> {
    fn initial(allocation: Reference) -> Result<Compute, Error> {
        P::initial(allocation)
    }
    fn new_compute(allocation: Reference, generation: u64) -> Result<Compute, Error> {
        P::new_compute(allocation, generation)
    }
    fn get_compute(allocation: Reference, incarnation: Compute) -> Result<ComputeState, Error> {
        P::get_compute(allocation, incarnation)
    }
    fn suspend(request: SuspendRequest) -> Result<SnapshotIdentity, Error> {
        P::suspend(request)
    }
    fn resume(request: ResumeRequest) -> Result<Compute, Error> {
        P::resume(request)
    }
    fn resume_compute(allocation: Reference, incarnation: Compute) -> Result<ComputeState, Error> {
        P::resume_compute(allocation, incarnation)
    }
    fn kill_compute(allocation: Reference, incarnation: Compute) -> Result<(), Error> {
        P::kill_compute(allocation, incarnation)
    }
    fn delete_snapshot(allocation: Reference, snapshot: SnapshotIdentity) -> Result<(), Error> {
        P::delete_snapshot(allocation, snapshot)
    }
    fn run_command_compute(
        allocation: Reference,
        incarnation: Compute,
        request: Command,
    ) -> Result<CommandResult, Error> {
        P::run_command_compute(allocation, incarnation, request)
    }
}

impl<P: Provider> exports::observation_source::Guest for Adapter<P> {
    fn observe(of: Target) -> Result<Sample, Error> {
        P::observe(of)
    }
}

impl<P: Provider> exports::batch_observation_source::Guest for Adapter<P> {
    fn observe_batch(targets: Vec<Target>) -> Result<Vec<Result<Sample, Error>>, Error> {
        P::observe_batch(targets)
    }
}

impl<P: Provider> exports::selection_discoverer::Guest for Adapter<P> {
    fn discover_selection() -> Result<Vec<SelectionOption>, Error> {
        P::discover_selection()
    }
}

impl<P: Provider> exports::credential_verifier::Guest for Adapter<P> {
    fn verify_credential(credential: String) -> Result<(), Error> {
        P::verify_credential(credential)
    }
}

impl<P: Provider> exports::configuration_adapter::Guest for Adapter<P> {
    fn requirements() -> ConfigurationRequirements {
        P::requirements()
    }
    fn decode_input(input: String) -> Result<String, Error> {
        P::decode_input(input)
    }
    fn encode(configuration: String) -> Result<String, Error> {
        P::encode(configuration)
    }
    fn decode(stored: String) -> Result<String, Error> {
        P::decode(stored)
    }
    fn normalize(configuration: String) -> Result<String, Error> {
        P::normalize(configuration)
    }
    fn resolve_change(current: String, proposed: String) -> Result<String, Error> {
        P::resolve_change(current, proposed)
    }
    fn equal(left: String, right: String) -> Result<bool, Error> {
        P::equal(left, right)
    }
    fn with_credential(configuration: String, credential: String) -> Result<String, Error> {
        P::with_credential(configuration, credential)
    }
    fn discover_configuration() -> Result<Vec<String>, Error> {
        P::discover_configuration()
    }
}

impl<P: Provider> exports::readiness::Guest for Adapter<P> {
    fn probe() -> Vec<Diagnostic> {
        P::probe()
    }
}

impl<P: Provider> exports::declarations::Guest for Adapter<P> {
    fn operations() -> Vec<OperationDeclaration> {
        P::operations()
    }
}
