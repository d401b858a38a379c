//! The contract's checkpoint records in the capability's terms, and back:
//! a [`Compute`] is an incarnation (its generation, its native id once it
//! exists, the snapshot it is restored from); a [`SnapshotIdentity`] is a
//! VM snapshot, whose native reference the host derives from the
//! allocation and the suspend operation.

use oac_provider_sdk::capability::microsandbox::{
    self as vm, Incarnation, VmError, VmSnapshot, VmState, VmStatus,
};
use oac_provider_sdk::prelude::*;

/// The host's VM name of incarnation `generation` (a pure call).
pub fn name(allocation: &Reference, generation: u64) -> Result<String, Error> {
    vm::name(allocation, generation).map_err(|_| Error::ComputeUnconfirmed)
}

/// The capability's record of `snapshot`.
pub fn vm_snapshot(
    allocation: &Reference,
    snapshot: &SnapshotIdentity,
) -> Result<VmSnapshot, Error> {
    Ok(VmSnapshot {
        native_reference: format!("{}:s-{}", name(allocation, 0)?, snapshot.operation_id),
        id: snapshot.id.clone(),
        digest: snapshot.digest.clone(),
        checkpoint_id: snapshot.checkpoint_id.clone(),
        checkpoint_root: snapshot.checkpoint_root.clone(),
        operation_id: snapshot.operation_id.clone(),
        source_generation: snapshot.source_generation,
        source_name: snapshot.source_name.clone(),
        source_id: snapshot.source_id.clone(),
    })
}

/// The contract's record of `snapshot`, for `allocation`.
pub fn identity(allocation: &Reference, snapshot: VmSnapshot) -> SnapshotIdentity {
    SnapshotIdentity {
        reference: allocation.clone(),
        id: snapshot.id,
        digest: snapshot.digest,
        checkpoint_id: snapshot.checkpoint_id,
        checkpoint_root: snapshot.checkpoint_root,
        operation_id: snapshot.operation_id,
        source_generation: snapshot.source_generation,
        source_name: snapshot.source_name,
        source_id: snapshot.source_id,
    }
}

/// The incarnation `compute` names.
pub fn incarnation(allocation: &Reference, compute: &Compute) -> Result<Incarnation, Error> {
    Ok(Incarnation {
        generation: compute.generation,
        id: (!compute.id.is_empty()).then(|| compute.id.clone()),
        restored_from: compute
            .restored_from
            .as_ref()
            .map(|snapshot| vm_snapshot(allocation, snapshot))
            .transpose()?,
    })
}

/// Generation 0, the incarnation Create makes, by name only.
pub fn first() -> Incarnation {
    Incarnation {
        generation: 0,
        id: None,
        restored_from: None,
    }
}

/// `compute` with the native id `state` shows.
pub fn with_id(compute: &Compute, state: &VmState) -> Compute {
    Compute {
        id: state.id.clone(),
        ..compute.clone()
    }
}

/// True when the VM runs or is paused in memory: it still holds its
/// processes.
pub fn resident(state: &VmState) -> bool {
    matches!(state.status, VmStatus::Running | VmStatus::Paused)
}

/// What an incarnation is, as the contract reports it (a VM that exists
/// is never `suspended` or `absent` here: those are the answers of a
/// suspend and of a removal).
pub fn status(state: &VmState) -> ComputeStatus {
    match state.status {
        VmStatus::Running | VmStatus::Starting => ComputeStatus::Running,
        VmStatus::Paused => ComputeStatus::Paused,
        VmStatus::Draining | VmStatus::Stopped | VmStatus::Crashed => ComputeStatus::Stopped,
    }
}

/// Bootstrapped: the host's label says so, the VM still holds its
/// processes, and it still carries the node's policy (drift blocks
/// readiness; it never triggers cleanup).
pub fn bootstrapped(state: &VmState) -> bool {
    state.bootstrap_complete && state.conforms && resident(state)
}

/// The observation of an incarnation that exists.
pub fn observed(compute: &Compute, state: &VmState) -> ComputeState {
    ComputeState {
        compute: with_id(compute, state),
        status: status(state),
        bootstrap_complete: bootstrapped(state),
        snapshot: None,
        source_stopped: matches!(status(state), ComputeStatus::Stopped),
    }
}

/// An observation: absent (`None`), present, or an error that says
/// nothing about the VM (unknown).
pub fn found(answer: Result<VmState, VmError>) -> Result<Option<VmState>, Error> {
    match answer {
        Ok(state) => Ok(Some(state)),
        Err(VmError::NotFound) => Ok(None),
        Err(error) => Err(failed(error)),
    }
}

/// The contract's error for a capability error of a compute operation:
/// what proves nothing is unknown.
pub fn failed(error: VmError) -> Error {
    match error {
        VmError::Ownership => Error::Ownership,
        VmError::NotFound => Error::NotFound,
        VmError::Exists => Error::Exists,
        VmError::Invalid => Error::Invalid,
        VmError::Denied
        | VmError::NotReady
        | VmError::Unavailable
        | VmError::Unconfirmed
        | VmError::CommandUnconfirmed
        | VmError::Failed => Error::ComputeUnconfirmed,
    }
}
