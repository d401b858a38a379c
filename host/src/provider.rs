//! The provider interface Core programs against, whether the kind runs in
//! this process ([`LocalProvider`]) or on a node behind the transport
//! ([`crate::transport::RemoteProvider`]). Both answer with the same fixed
//! errors, check the declaration before any I/O, and never retry.

use crate::bindings::exports::oac::sandbox_provider::selection_discoverer::SelectionOption;
use crate::bindings::oac::sandbox_provider::types::{
    Compute, ComputeState, ResumeRequest, Sample, SnapshotIdentity, SuspendRequest, Target,
};
use crate::bindings::{Bootstrap, Command, CommandResult, Error, Failure, Info, Reference};
use crate::budget::Budget;
use crate::declaration::Declaration;
use crate::host::{Host, Kind};
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
}

/// The nine checkpoint operations, supported all together.
pub trait CheckpointProvider: Sync {
    /// The allocation's first incarnation.
    fn initial(
        &self,
        allocation: Reference,
        budget: Budget,
    ) -> impl Future<Output = Result<Compute, Error>> + Send;
    /// The incarnation after `generation`.
    fn new_compute(
        &self,
        allocation: Reference,
        generation: u64,
        budget: Budget,
    ) -> impl Future<Output = Result<Compute, Error>> + Send;
    /// The state of one incarnation.
    fn get_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> impl Future<Output = Result<ComputeState, Error>> + Send;
    /// Suspend an incarnation into a snapshot.
    fn suspend(
        &self,
        request: SuspendRequest,
        budget: Budget,
    ) -> impl Future<Output = Result<SnapshotIdentity, Error>> + Send;
    /// Resume a snapshot into a new incarnation.
    fn resume(
        &self,
        request: ResumeRequest,
        budget: Budget,
    ) -> impl Future<Output = Result<Compute, Error>> + Send;
    /// Resume a suspended incarnation in place.
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

/// A kind loaded in this process.
pub struct LocalProvider<'h> {
    host: &'h Host,
    kind: &'h Kind,
}

impl<'h> LocalProvider<'h> {
    /// The loaded `kind`; an unknown kind is invalid input.
    pub fn new(host: &'h Host, kind: &str) -> Result<Self, Error> {
        Ok(Self {
            host,
            kind: host.kind(kind)?,
        })
    }

    fn name(&self) -> &str {
        &self.kind.registration.kind
    }
}

impl SandboxProvider for LocalProvider<'_> {
    type Checkpoint<'a>
        = LocalCheckpoint<'a>
    where
        Self: 'a;

    fn declaration(&self) -> &Declaration {
        &self.kind.declaration
    }

    fn checkpoint(&self) -> Option<LocalCheckpoint<'_>> {
        self.kind
            .declaration
            .supports_checkpoint(&self.kind.inventory)
            .then_some(LocalCheckpoint { provider: self })
    }

    async fn create(&self, request: Bootstrap, budget: Budget) -> Result<Info, Failure> {
        self.host.create(self.name(), request, budget).await
    }

    async fn get_info(&self, allocation: Reference, budget: Budget) -> Result<Info, Error> {
        self.host.get_info(self.name(), allocation, budget).await
    }

    async fn renew(&self, allocation: Reference, budget: Budget) -> Result<Info, Failure> {
        self.host.renew(self.name(), allocation, budget).await
    }

    async fn kill(&self, allocation: Reference, budget: Budget) -> Result<Info, Failure> {
        self.host.kill(self.name(), allocation, budget).await
    }

    async fn run_command(
        &self,
        allocation: Reference,
        request: Command,
        budget: Budget,
    ) -> Result<CommandResult, Error> {
        self.host
            .run_command(self.name(), allocation, request, budget)
            .await
    }

    async fn observe(&self, target: Target, budget: Budget) -> Result<Sample, Error> {
        self.host.observe(self.name(), target, budget).await
    }

    async fn observe_batch(
        &self,
        targets: Vec<Target>,
        budget: Budget,
    ) -> Result<Vec<Result<Sample, Error>>, Error> {
        self.host.observe_batch(self.name(), targets, budget).await
    }

    async fn discover_selection(&self, budget: Budget) -> Result<Vec<SelectionOption>, Error> {
        self.host.discover_selection(self.name(), budget).await
    }

    async fn verify_credential(&self, credential: String, budget: Budget) -> Result<(), Error> {
        self.host
            .verify_credential(self.name(), credential, budget)
            .await
    }
}

/// The checkpoint operations of a local kind that declares them.
pub struct LocalCheckpoint<'a> {
    provider: &'a LocalProvider<'a>,
}

impl LocalCheckpoint<'_> {
    fn host(&self) -> &Host {
        self.provider.host
    }

    fn name(&self) -> &str {
        self.provider.name()
    }
}

impl CheckpointProvider for LocalCheckpoint<'_> {
    async fn initial(&self, allocation: Reference, budget: Budget) -> Result<Compute, Error> {
        self.host().initial(self.name(), allocation, budget).await
    }

    async fn new_compute(
        &self,
        allocation: Reference,
        generation: u64,
        budget: Budget,
    ) -> Result<Compute, Error> {
        self.host()
            .new_compute(self.name(), allocation, generation, budget)
            .await
    }

    async fn get_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        self.host()
            .get_compute(self.name(), allocation, incarnation, budget)
            .await
    }

    async fn suspend(
        &self,
        request: SuspendRequest,
        budget: Budget,
    ) -> Result<SnapshotIdentity, Error> {
        self.host().suspend(self.name(), request, budget).await
    }

    async fn resume(&self, request: ResumeRequest, budget: Budget) -> Result<Compute, Error> {
        self.host().resume(self.name(), request, budget).await
    }

    async fn resume_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        self.host()
            .resume_compute(self.name(), allocation, incarnation, budget)
            .await
    }

    async fn kill_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<(), Error> {
        self.host()
            .kill_compute(self.name(), allocation, incarnation, budget)
            .await
    }

    async fn delete_snapshot(
        &self,
        allocation: Reference,
        snapshot: SnapshotIdentity,
        budget: Budget,
    ) -> Result<(), Error> {
        self.host()
            .delete_snapshot(self.name(), allocation, snapshot, budget)
            .await
    }

    async fn run_command_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        request: Command,
        budget: Budget,
    ) -> Result<CommandResult, Error> {
        self.host()
            .run_command_compute(self.name(), allocation, incarnation, request, budget)
            .await
    }
}
