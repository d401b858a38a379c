//! The provider interface Core programs against, whether the kind is loaded
//! in this process (the host's `Kind`) or served by a node
//! ([`crate::proxy::RemoteProvider`]). Both answer with the same fixed
//! errors and the same policing ([`crate::police`]), check the declaration
//! before any I/O, and never retry.

use crate::budget::Budget;
use crate::declaration::Declaration;
use crate::types::{
    Bootstrap, Command, CommandResult, Compute, ComputeState, ConfigurationRequirements,
    Diagnostic, Error, Failure, Info, Reference, ResumeRequest, Sample, SelectionOption,
    SnapshotIdentity, SuspendRequest, Target,
};
use std::future::Future;

/// Create, GetInfo, Renew, Kill, RunCommand (always supported), observation,
/// and the operations a node never forwards. Checkpoint operations are
/// reachable only through [`SandboxProvider::checkpoint`], which is `None`
/// unless the kind declares them.
pub trait SandboxProvider: Sync {
    /// The checkpoint handle, when the kind declares checkpoints.
    type Checkpoint<'a>: CheckpointProvider
    where
        Self: 'a;

    /// Every operation this provider answers, with its decision.
    fn declaration(&self) -> &Declaration;

    /// Checkpoint operations, only when the kind declares them supported.
    fn checkpoint(&self) -> Option<Self::Checkpoint<'_>>;

    /// Create compute for the allocation. Never replayed.
    fn create(
        &self,
        request: Bootstrap,
        budget: Budget,
    ) -> impl Future<Output = Result<Info, Failure>> + Send;

    /// Observe the allocation.
    fn get_info(
        &self,
        allocation: Reference,
        budget: Budget,
    ) -> impl Future<Output = Result<Info, Error>> + Send;

    /// Extend the provider's lease.
    fn renew(
        &self,
        allocation: Reference,
        budget: Budget,
    ) -> impl Future<Output = Result<Info, Failure>> + Send;

    /// Delete the allocation's resources.
    fn kill(
        &self,
        allocation: Reference,
        budget: Budget,
    ) -> impl Future<Output = Result<Info, Failure>> + Send;

    /// Run one command. Never replayed.
    fn run_command(
        &self,
        allocation: Reference,
        request: Command,
        budget: Budget,
    ) -> impl Future<Output = Result<CommandResult, Error>> + Send;

    /// One resource-usage sample.
    fn observe(
        &self,
        target: Target,
        budget: Budget,
    ) -> impl Future<Output = Result<Sample, Error>> + Send;

    /// Samples for up to 100 targets, in input order.
    fn observe_batch(
        &self,
        targets: Vec<Target>,
        budget: Budget,
    ) -> impl Future<Output = Result<Vec<Result<Sample, Error>>, Error>> + Send;

    /// The selectable options the provider offers.
    fn discover_selection(
        &self,
        budget: Budget,
    ) -> impl Future<Output = Result<Vec<SelectionOption>, Error>> + Send;

    /// Check a credential against the provider.
    fn verify_credential(
        &self,
        credential: String,
        budget: Budget,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// Whether the kind can serve now: its readiness diagnostics (empty when
    /// ready). It only observes.
    fn probe(&self, budget: Budget) -> impl Future<Output = Result<Vec<Diagnostic>, Error>> + Send;
}

/// The nine checkpoint operations, supported all together.
pub trait CheckpointProvider: Sync {
    /// The allocation's first incarnation (constructed, not allocated).
    fn initial(
        &self,
        allocation: Reference,
        budget: Budget,
    ) -> impl Future<Output = Result<Compute, Error>> + Send;
    /// Incarnation `generation`, to be restored from `restored_from`
    /// (constructed, not allocated).
    fn new_compute(
        &self,
        allocation: Reference,
        generation: u64,
        restored_from: Option<SnapshotIdentity>,
        budget: Budget,
    ) -> impl Future<Output = Result<Compute, Error>> + Send;
    /// The state of one incarnation.
    fn get_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> impl Future<Output = Result<ComputeState, Error>> + Send;
    /// Capture an incarnation into a snapshot and stop it.
    fn suspend(
        &self,
        request: SuspendRequest,
        budget: Budget,
    ) -> impl Future<Output = Result<ComputeState, Error>> + Send;
    /// Make a new incarnation from a snapshot.
    fn resume(
        &self,
        request: ResumeRequest,
        budget: Budget,
    ) -> impl Future<Output = Result<ComputeState, Error>> + Send;
    /// Thaw the same resident incarnation after an aborted pause; never a
    /// cold start, never a restore.
    fn resume_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> impl Future<Output = Result<ComputeState, Error>> + Send;
    /// Delete one incarnation.
    fn kill_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    /// Delete one snapshot.
    fn delete_snapshot(
        &self,
        allocation: Reference,
        snapshot: SnapshotIdentity,
        budget: Budget,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    /// Run one command in an incarnation. Never replayed.
    fn run_command_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        request: Command,
        budget: Budget,
    ) -> impl Future<Output = Result<CommandResult, Error>> + Send;
}

/// A reference to a checkpoint provider is one too, so a provider can hand
/// out itself as its checkpoint handle.
impl<T: CheckpointProvider> CheckpointProvider for &T {
    async fn initial(&self, allocation: Reference, budget: Budget) -> Result<Compute, Error> {
        (**self).initial(allocation, budget).await
    }
    async fn new_compute(
        &self,
        allocation: Reference,
        generation: u64,
        restored_from: Option<SnapshotIdentity>,
        budget: Budget,
    ) -> Result<Compute, Error> {
        (**self)
            .new_compute(allocation, generation, restored_from, budget)
            .await
    }
    async fn get_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        (**self).get_compute(allocation, incarnation, budget).await
    }
    async fn suspend(
        &self,
        request: SuspendRequest,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        (**self).suspend(request, budget).await
    }
    async fn resume(&self, request: ResumeRequest, budget: Budget) -> Result<ComputeState, Error> {
        (**self).resume(request, budget).await
    }
    async fn resume_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        (**self)
            .resume_compute(allocation, incarnation, budget)
            .await
    }
    async fn kill_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<(), Error> {
        (**self).kill_compute(allocation, incarnation, budget).await
    }
    async fn delete_snapshot(
        &self,
        allocation: Reference,
        snapshot: SnapshotIdentity,
        budget: Budget,
    ) -> Result<(), Error> {
        (**self).delete_snapshot(allocation, snapshot, budget).await
    }
    async fn run_command_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        request: Command,
        budget: Budget,
    ) -> Result<CommandResult, Error> {
        (**self)
            .run_command_compute(allocation, incarnation, request, budget)
            .await
    }
}

/// The configuration adapter of a kind loaded in this process: Core's side
/// decodes, stores and compares a kind's public configuration through it.
/// Configuration travels as JSON text; errors never echo the input.
pub trait ConfigurationProvider: Sync {
    /// What an installation of this kind must provide.
    fn requirements(
        &self,
        budget: Budget,
    ) -> impl Future<Output = Result<ConfigurationRequirements, Error>> + Send;
    /// Strictly decode operator input into the canonical configuration.
    fn decode_input(
        &self,
        input: String,
        budget: Budget,
    ) -> impl Future<Output = Result<String, Error>> + Send;
    /// Encode a canonical configuration for storage.
    fn encode(
        &self,
        configuration: String,
        budget: Budget,
    ) -> impl Future<Output = Result<String, Error>> + Send;
    /// Decode a stored configuration.
    fn decode(
        &self,
        stored: String,
        budget: Budget,
    ) -> impl Future<Output = Result<String, Error>> + Send;
    /// Canonicalise a configuration.
    fn normalize(
        &self,
        configuration: String,
        budget: Budget,
    ) -> impl Future<Output = Result<String, Error>> + Send;
    /// The configuration after applying `proposed` to `current`.
    fn resolve_change(
        &self,
        current: String,
        proposed: String,
        budget: Budget,
    ) -> impl Future<Output = Result<String, Error>> + Send;
    /// Whether two configurations are the same after normalisation.
    fn equal(
        &self,
        left: String,
        right: String,
        budget: Budget,
    ) -> impl Future<Output = Result<bool, Error>> + Send;
    /// The configuration with a credential attached.
    fn with_credential(
        &self,
        configuration: String,
        credential: String,
        budget: Budget,
    ) -> impl Future<Output = Result<String, Error>> + Send;
    /// Configurations discoverable from the vendor.
    fn discover_configuration(
        &self,
        budget: Budget,
    ) -> impl Future<Output = Result<Vec<String>, Error>> + Send;
}
