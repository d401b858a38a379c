//! The microsandbox sandbox provider (`nodes` mode, checkpoints). Each
//! incarnation of an allocation is one microVM the host makes under the
//! node's VM policy, through its microsandbox helper; Create makes
//! generation 0 and bootstraps it, a suspend captures a full snapshot and
//! force-kills the source, a resume restores it into the next generation.

mod bootstrap;
mod checkpoint;
#[cfg(any(
    feature = "mutant-cold-start",
    feature = "mutant-run-after-capture",
    feature = "mutant-recapture",
    feature = "mutant-restore-observe-only",
    feature = "mutant-delete-other-snapshot"
))]
mod mutant;
mod provider;
mod vm;

use oac_provider_sdk::prelude::*;
use provider::MicrosandboxProvider;

impl Checkpoint for MicrosandboxProvider {
    fn initial(allocation: Reference) -> Result<Compute, Error> {
        checkpoint::new_compute(&allocation, 0, None)
    }
    fn new_compute(
        allocation: Reference,
        generation: u64,
        restored_from: Option<SnapshotIdentity>,
    ) -> Result<Compute, Error> {
        checkpoint::new_compute(&allocation, generation, restored_from)
    }
    fn get_compute(allocation: Reference, incarnation: Compute) -> Result<ComputeState, Error> {
        checkpoint::get_compute(&allocation, &incarnation)
    }
    fn suspend(request: SuspendRequest) -> Result<ComputeState, Error> {
        checkpoint::suspend(request)
    }
    fn resume(request: ResumeRequest) -> Result<ComputeState, Error> {
        checkpoint::resume(request)
    }
    fn resume_compute(allocation: Reference, incarnation: Compute) -> Result<ComputeState, Error> {
        checkpoint::resume_compute(&allocation, &incarnation)
    }
    fn kill_compute(allocation: Reference, incarnation: Compute) -> Result<(), Error> {
        checkpoint::kill_compute(&allocation, &incarnation)
    }
    fn delete_snapshot(allocation: Reference, snapshot: SnapshotIdentity) -> Result<(), Error> {
        checkpoint::delete_snapshot(&allocation, &snapshot)
    }
    fn run_command_compute(
        allocation: Reference,
        incarnation: Compute,
        request: Command,
    ) -> Result<CommandResult, Error> {
        checkpoint::run_command_compute(&allocation, &incarnation, request)
    }
}

oac_provider_sdk::export_provider!(MicrosandboxProvider {
    requirements: { credential: NotRequired, public_origin: NotRequired },
    checkpoint: supported,
    observe: supported,
    observe_batch: supported,
    discover_selection: "node_configuration_has_no_catalog",
    verify_credential: "credentials_not_required",
    configuration: supported,
    with_credential: "credentials_not_required",
    discover_configuration: "node_configuration_has_no_catalog",
});
