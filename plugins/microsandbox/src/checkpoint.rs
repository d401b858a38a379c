//! The checkpoint operations. Incarnation `g` of an allocation is the VM
//! the host names for generation `g`; Create makes generation 0. A
//! suspend pauses the source, captures a full snapshot once per suspend
//! operation, verifies it and force-kills the source (a graceful stop
//! would let the captured source run on after its checkpoint); a resume
//! restores the snapshot into the next generation (never a cold boot,
//! never a disk-only restore: the host offers neither). Nothing is
//! replayed: an outcome that cannot be observed is `compute-unconfirmed`.

use crate::provider::{remove, run_in};
use crate::vm::{self, failed, found, identity, incarnation, observed, resident};
use oac_provider_sdk::capability::microsandbox::{self as msb, VmError, VmSnapshot, VmState};
use oac_provider_sdk::prelude::*;

/// `initial` and `new-compute`: the identity, from the host's names only.
pub fn new_compute(
    allocation: &Reference,
    generation: u64,
    restored_from: Option<SnapshotIdentity>,
) -> Result<Compute, Error> {
    if (generation == 0) != restored_from.is_none() {
        return Err(Error::Invalid);
    }
    Ok(Compute {
        generation,
        name: vm::name(allocation, generation)?,
        id: String::new(),
        restored_from,
    })
}

/// The incarnation as the runtime has it now (`None`: absent).
fn inspect(allocation: &Reference, compute: &Compute) -> Result<Option<VmState>, Error> {
    found(msb::inspect(allocation, &incarnation(allocation, compute)?))
}

pub fn get_compute(allocation: &Reference, compute: &Compute) -> Result<ComputeState, Error> {
    match inspect(allocation, compute)? {
        Some(state) => Ok(observed(compute, &state)),
        None => Err(Error::NotFound),
    }
}

/// The snapshot `operation` captured from `source`, if there is one. An
/// artifact that no longer verifies is not one to act on: unknown.
fn captured(
    allocation: &Reference,
    source: &Compute,
    operation: &str,
) -> Result<Option<VmSnapshot>, Error> {
    match msb::find_snapshot(allocation, &incarnation(allocation, source)?, operation) {
        Ok(snapshot) => Ok(Some(snapshot)),
        Err(VmError::NotFound) => Ok(None),
        Err(error) => Err(failed(error)),
    }
}

/// A suspend's answer: the source, stopped, with its snapshot.
fn suspended(request: &SuspendRequest, snapshot: VmSnapshot) -> ComputeState {
    let source = &request.source;
    let id = match source.id.is_empty() {
        true => snapshot.source_id.clone(),
        false => source.id.clone(),
    };
    ComputeState {
        compute: Compute {
            id,
            ..source.clone()
        },
        status: ComputeStatus::Suspended,
        bootstrap_complete: false,
        snapshot: Some(identity(&request.reference, snapshot)),
        source_stopped: true,
    }
}

/// Force-kills the source of a capture and confirms it gone: it must not
/// run past its checkpoint.
fn stop_source(allocation: &Reference, source: &msb::Incarnation) -> Result<(), Error> {
    #[cfg(feature = "mutant-run-after-capture")]
    crate::mutant::run_after_capture(allocation, source);
    remove(allocation, source)
}

pub fn suspend(request: SuspendRequest) -> Result<ComputeState, Error> {
    let allocation = &request.reference;
    let source = &request.source;
    // What this operation captured already is observed, never captured
    // again.
    let existing = captured(allocation, source, &request.operation_id)?;
    #[cfg(feature = "mutant-recapture")]
    let existing = crate::mutant::forget(allocation, existing);
    if let Some(snapshot) = existing {
        let exact = msb::Incarnation {
            id: Some(snapshot.source_id.clone()),
            ..incarnation(allocation, source)?
        };
        if found(msb::inspect(allocation, &exact))?.is_some() {
            if request.observe_only {
                // Captured, but the source still exists: an earlier
                // suspend is mid-way, and observe-only never acts.
                return Err(Error::ComputeUnconfirmed);
            }
            stop_source(allocation, &exact)?;
        }
        return Ok(suspended(&request, snapshot));
    }
    let state = inspect(allocation, source)?;
    if request.observe_only {
        // Nothing captured: only the source that still holds its
        // processes, bootstrapped (the rollback path); never a capture.
        return match state {
            Some(state) if resident(&state) && observed(source, &state).bootstrap_complete => {
                Ok(observed(source, &state))
            }
            _ => Err(Error::ComputeUnconfirmed),
        };
    }
    if request.snapshot.is_some() {
        // Core holds a snapshot of this operation that the runtime does
        // not: it is not made again.
        return Err(Error::ComputeUnconfirmed);
    }
    let Some(state) = state else {
        return Err(Error::NotFound);
    };
    if !observed(source, &state).bootstrap_complete {
        return Err(Error::Invalid);
    }
    let exact = msb::Incarnation {
        id: Some(state.id.clone()),
        ..incarnation(allocation, source)?
    };
    if state.status == msb::VmStatus::Running {
        msb::pause(allocation, &exact).map_err(|_| Error::ComputeUnconfirmed)?;
    }
    let snapshot = msb::capture(allocation, &exact, &request.operation_id)
        .map_err(|_| Error::ComputeUnconfirmed)?;
    // Verified as the runtime reads it back: exactly what was captured.
    let verified = captured(
        allocation,
        &vm::with_id(source, &state),
        &request.operation_id,
    )?;
    if verified.as_ref() != Some(&snapshot) {
        return Err(Error::ComputeUnconfirmed);
    }
    stop_source(allocation, &exact)?;
    Ok(suspended(&request, snapshot))
}

/// A resume's answer: the target, as restored.
fn resumed(target: &Compute, state: &VmState) -> ComputeState {
    ComputeState {
        snapshot: None,
        source_stopped: false,
        ..observed(target, state)
    }
}

pub fn resume(request: ResumeRequest) -> Result<ComputeState, Error> {
    let allocation = &request.reference;
    let target = &request.target;
    if target.restored_from.as_ref() != Some(&request.snapshot) {
        return Err(Error::Invalid);
    }
    let named = incarnation(allocation, target)?;
    // An existing target is this operation's only when the host finds it
    // owned with exactly this ancestry (else `ownership`).
    let existing = inspect(allocation, target)?;
    #[cfg(feature = "mutant-restore-observe-only")]
    let existing = crate::mutant::restore_under_observe_only(allocation, &named, existing);
    match existing {
        Some(state) if request.observe_only => Ok(resumed(target, &state)),
        Some(_) => {
            // Adopted: the host labels it if it has not yet.
            let state = msb::restore(allocation, &named).map_err(restore_failed)?;
            Ok(resumed(target, &state))
        }
        // Not there: observe-only never restores, and a target whose id
        // is known existed once and is not made again.
        None if request.observe_only || !target.id.is_empty() => Err(Error::ComputeUnconfirmed),
        None => {
            let state = msb::restore(allocation, &named).map_err(restore_failed)?;
            Ok(resumed(target, &state))
        }
    }
}

/// A restore that did not answer a VM: a snapshot that is gone or not
/// this one is definite; anything else may have restored.
fn restore_failed(error: VmError) -> Error {
    match error {
        VmError::NotFound => Error::NotFound,
        VmError::Ownership => Error::Ownership,
        VmError::Invalid => Error::Invalid,
        _ => Error::ComputeUnconfirmed,
    }
}

pub fn resume_compute(allocation: &Reference, compute: &Compute) -> Result<ComputeState, Error> {
    let Some(state) = inspect(allocation, compute)? else {
        #[cfg(feature = "mutant-cold-start")]
        return crate::mutant::cold_start(allocation, compute);
        #[cfg(not(feature = "mutant-cold-start"))]
        return Err(Error::ComputeUnconfirmed);
    };
    match state.status {
        msb::VmStatus::Running => Ok(observed(compute, &state)),
        msb::VmStatus::Paused => {
            let exact = msb::Incarnation {
                id: Some(state.id.clone()),
                ..incarnation(allocation, compute)?
            };
            let thawed = msb::resume(allocation, &exact).map_err(|_| Error::ComputeUnconfirmed)?;
            Ok(observed(compute, &thawed))
        }
        // Never a cold start of a stopped or crashed incarnation.
        _ => Err(Error::ComputeUnconfirmed),
    }
}

pub fn kill_compute(allocation: &Reference, compute: &Compute) -> Result<(), Error> {
    remove(allocation, &incarnation(allocation, compute)?)
}

pub fn delete_snapshot(allocation: &Reference, snapshot: &SnapshotIdentity) -> Result<(), Error> {
    #[cfg(feature = "mutant-delete-other-snapshot")]
    crate::mutant::delete_other_snapshot(allocation, snapshot);
    msb::delete_snapshot(allocation, &vm::vm_snapshot(allocation, snapshot)?).map_err(failed)
}

pub fn run_command_compute(
    allocation: &Reference,
    compute: &Compute,
    request: Command,
) -> Result<CommandResult, Error> {
    run_in(allocation, &incarnation(allocation, compute)?, request)
}
