//! What an adapter implements: one trait per group of operations it
//! supports, and nothing for a group it declares unsupported in
//! [`crate::export_provider!`]. No trait has default bodies.
//!
//! These are the *guest's* traits: the component answers one call through
//! them. Every call runs in a fresh instance of the component, so nothing
//! (a static, a cache, a connection) outlives it; the host, not the adapter,
//! keeps time, memory and every native resource in bounds.

use crate::types::*;

/// The five required operations.
#[allow(
    clippy::result_large_err,
    reason = "the signatures are the contract's exports: a failure carries its info by value across the boundary"
)]
pub trait Sandbox {
    /// Create compute and start the Runtime daemon; never replay on failure.
    fn create(request: Bootstrap) -> Result<Info, Failure>;
    /// Observe the allocation.
    fn get_info(allocation: Reference) -> Result<Info, Error>;
    /// Extend the provider's lease, if any.
    fn renew(allocation: Reference) -> Result<Info, Failure>;
    /// Delete every owned resource of the allocation.
    fn kill(allocation: Reference) -> Result<Info, Failure>;
    /// Run one command to completion.
    fn run_command(allocation: Reference, request: Command) -> Result<CommandResult, Error>;
}

/// The construction probe behind readiness (always supported: it cannot fail).
pub trait Readiness {
    /// Every problem found; empty when ready. Observes only.
    fn probe() -> Vec<Diagnostic>;
}

/// Suspend and resume through exact incarnations (all nine, or none).
pub trait Checkpoint {
    /// The first incarnation's identity (generation 0); allocates nothing.
    fn initial(allocation: Reference) -> Result<Compute, Error>;
    /// Incarnation `generation`'s identity, restored from `restored_from`;
    /// allocates nothing.
    fn new_compute(
        allocation: Reference,
        generation: u64,
        restored_from: Option<SnapshotIdentity>,
    ) -> Result<Compute, Error>;
    /// Observe one incarnation.
    fn get_compute(allocation: Reference, incarnation: Compute) -> Result<ComputeState, Error>;
    /// Capture the source into a snapshot carrying the request's operation
    /// id and the source's identity, and stop it.
    fn suspend(request: SuspendRequest) -> Result<ComputeState, Error>;
    /// Make the target incarnation from the snapshot.
    fn resume(request: ResumeRequest) -> Result<ComputeState, Error>;
    /// Thaw the same resident incarnation after an aborted pause; never a
    /// cold start, never a restore.
    fn resume_compute(allocation: Reference, incarnation: Compute) -> Result<ComputeState, Error>;
    /// Delete one incarnation.
    fn kill_compute(allocation: Reference, incarnation: Compute) -> Result<(), Error>;
    /// Delete one snapshot.
    fn delete_snapshot(allocation: Reference, snapshot: SnapshotIdentity) -> Result<(), Error>;
    /// Run a command in one incarnation.
    fn run_command_compute(
        allocation: Reference,
        incarnation: Compute,
        request: Command,
    ) -> Result<CommandResult, Error>;
}

/// Observation of one allocation.
pub trait Observe {
    /// One sample.
    fn observe(of: Target) -> Result<Sample, Error>;
}

/// Observation of many allocations (only with [`Observe`]).
pub trait ObserveBatch {
    /// One result per target, in order.
    fn observe_batch(targets: Vec<Target>) -> Result<Vec<Result<Sample, Error>>, Error>;
}

/// Selection discovery.
pub trait DiscoverSelection {
    /// The candidate's public object (JSON text) with its omitted native
    /// values resolved; read-only. The candidate's credential is filled
    /// into this call's HTTP requests by the host.
    fn discover_selection(candidate: String) -> Result<String, Error>;
}

/// Credential verification.
pub trait VerifyCredential {
    /// Ok when the candidate credential (filled into this call's HTTP
    /// requests by the host) reaches the installation's resources of
    /// `references`; read-only.
    fn verify_credential(candidate: String, references: Vec<Reference>) -> Result<(), Error>;
}

/// The kind's configuration: the public object as JSON text and the
/// credential beside it as a handle (errors never echo input). The host
/// checks each credential against the fields the kind's registration
/// declares before any of these runs; an adapter sees field names and
/// lengths, never values, and passes a handle back to keep that credential.
pub trait ConfigurationAdapter {
    /// Strictly decode an operator's public object and credential.
    fn decode_input(public: String, credential: Option<Credential>)
    -> Result<Configuration, Error>;
    /// Encode for storage: the credential only in `secret` (the host stores
    /// its value).
    fn encode(configuration: Configuration) -> Result<StoredConfiguration, Error>;
    /// Decode from storage.
    fn decode(stored: StoredConfiguration) -> Result<Configuration, Error>;
    /// Canonicalise.
    fn normalize(configuration: Configuration) -> Result<Configuration, Error>;
    /// Change `previous` to `next`, or refuse it.
    fn resolve_change(next: Configuration, previous: Configuration)
    -> Result<Configuration, Error>;
    /// Compare after normalisation.
    fn equal(left: Configuration, right: Configuration) -> Result<bool, Error>;
}

/// Replacing a configuration's credential.
pub trait WithCredential {
    /// `owner`'s configuration with `candidate` as its credential.
    fn with_credential(owner: Configuration, candidate: Credential)
    -> Result<Configuration, Error>;
}

/// Discovering configurations from the vendor.
pub trait DiscoverConfiguration {
    /// Public configurations discoverable for `query` (validate it).
    fn discover_configuration(query: String) -> Result<Vec<String>, Error>;
}
