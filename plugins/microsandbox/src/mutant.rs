//! The contract suite's mutants (see `Cargo.toml`): each breaks one
//! checkpoint rule, in the place the real adapter keeps it, so the suite's
//! tests show which named case catches it.

#![allow(dead_code, unused_imports)]

use crate::vm::{self, failed, incarnation};
use oac_provider_sdk::capability::microsandbox::{self as msb, VmSnapshot, VmState};
use oac_provider_sdk::prelude::*;

/// `cold-start`: resume-compute of an incarnation that is gone boots a
/// new generation 0 instead of failing.
pub fn cold_start(allocation: &Reference, compute: &Compute) -> Result<ComputeState, Error> {
    let state = msb::create(allocation).map_err(failed)?;
    Ok(vm::observed(compute, &state))
}

/// `run-after-capture`: the captured source is let run on (as a graceful
/// stop would) before it is removed.
pub fn run_after_capture(allocation: &Reference, source: &msb::Incarnation) {
    let _ = msb::resume(allocation, source);
}

/// `recapture`: an artifact this operation already captured is deleted
/// and captured again.
pub fn forget(allocation: &Reference, existing: Option<VmSnapshot>) -> Option<VmSnapshot> {
    if let Some(snapshot) = existing {
        let _ = msb::delete_snapshot(allocation, &snapshot);
    }
    None
}

/// `restore-observe-only`: a resume restores even under observe-only.
pub fn restore_under_observe_only(
    allocation: &Reference,
    target: &msb::Incarnation,
    existing: Option<VmState>,
) -> Option<VmState> {
    existing.or_else(|| msb::restore(allocation, target).ok())
}

/// `delete-other-snapshot`: delete-snapshot also deletes the allocation's
/// snapshot of another suspend operation, found by an operation id it was
/// not given.
pub fn delete_other_snapshot(allocation: &Reference, given: &SnapshotIdentity) {
    for generation in 0..4 {
        let source = msb::Incarnation {
            generation,
            id: None,
            restored_from: None,
        };
        for other in ["suite-suspend-1", "suite-suspend-2"] {
            if other != given.operation_id
                && let Ok(snapshot) = msb::find_snapshot(allocation, &source, other)
            {
                let _ = msb::delete_snapshot(allocation, &snapshot);
            }
        }
    }
}
