//! The provider interface Core programs against, whether the kind is loaded
//! in this process (the host's `Kind`) or served by a node
//! ([`crate::proxy::RemoteProvider`]). Both answer with the same fixed
//! errors and the same policing ([`crate::police`]), check the declaration
//! before any I/O, and never retry.

use crate::budget::Budget;
use crate::declaration::Declaration;
use crate::types::{
    Bootstrap, Command, CommandResult, Compute, ComputeState, Configuration,
    ConfigurationRequirements, Diagnostic, Error, Failure, Info, Reference, ResumeRequest, Sample,
    SnapshotIdentity, StoredConfiguration, SuspendRequest, Target,
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

    /// The candidate configuration with its omitted native values resolved
    /// (read-only); its credential reaches the vendor, not the adapter.
    fn discover_selection(
        &self,
        candidate: Configuration,
        budget: Budget,
    ) -> impl Future<Output = Result<Configuration, Error>> + Send;

    /// Whether the candidate's credential reaches the installation's
    /// resources of `references`, without mutating anything.
    fn verify_credential(
        &self,
        candidate: Configuration,
        references: Vec<Reference>,
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
/// decodes, stores and compares a kind's configuration through it. The
/// public object travels as JSON text, the credential beside it; errors
/// never echo the input.
pub trait ConfigurationProvider: Sync {
    /// What an installation of this kind must provide.
    fn requirements(
        &self,
        budget: Budget,
    ) -> impl Future<Output = Result<ConfigurationRequirements, Error>> + Send;
    /// Strictly decode an operator's public object and credential.
    fn decode_input(
        &self,
        public: String,
        credential: Option<String>,
        budget: Budget,
    ) -> impl Future<Output = Result<Configuration, Error>> + Send;
    /// Encode a configuration for storage (the secret apart).
    fn encode(
        &self,
        configuration: Configuration,
        budget: Budget,
    ) -> impl Future<Output = Result<StoredConfiguration, Error>> + Send;
    /// Decode a stored configuration.
    fn decode(
        &self,
        stored: StoredConfiguration,
        budget: Budget,
    ) -> impl Future<Output = Result<Configuration, Error>> + Send;
    /// Canonicalise a configuration.
    fn normalize(
        &self,
        configuration: Configuration,
        budget: Budget,
    ) -> impl Future<Output = Result<Configuration, Error>> + Send;
    /// The configuration after changing `previous` to `next`.
    fn resolve_change(
        &self,
        next: Configuration,
        previous: Configuration,
        budget: Budget,
    ) -> impl Future<Output = Result<Configuration, Error>> + Send;
    /// Whether two configurations are the same after normalisation.
    fn equal(
        &self,
        left: Configuration,
        right: Configuration,
        budget: Budget,
    ) -> impl Future<Output = Result<bool, Error>> + Send;
    /// `owner`'s configuration with `candidate` as its credential.
    fn with_credential(
        &self,
        owner: Configuration,
        candidate: String,
        budget: Budget,
    ) -> impl Future<Output = Result<Configuration, Error>> + Send;
    /// Public configurations discoverable from the vendor for `query`.
    fn discover_configuration(
        &self,
        query: String,
        budget: Budget,
    ) -> impl Future<Output = Result<Vec<String>, Error>> + Send;
}
