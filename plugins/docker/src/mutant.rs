//! The contract suite's mutants of this adapter (see `Cargo.toml`): each
//! feature breaks one rule around the real operation, and
//! `contract-suite/tests/suite.rs` names the case that catches it. Without
//! a feature every function here hands the real answer on unchanged.

use crate::identity::Identity;
use oac_provider_sdk::prelude::*;

/// `leak-secret`: Create logs the daemon credential it was given.
pub fn before_create(request: &Bootstrap) {
    if cfg!(feature = "mutant-leak-secret") {
        log::emit(
            log::Level::Info,
            "bootstrap_received",
            &[("credential".into(), request.daemon_credential.clone())],
        );
    }
}

/// `retry-create`: an unconfirmed Create is sent again. `invent-settlement`:
/// a failed Create claims settlement and a complete bootstrap.
pub fn after_create(answer: Result<Info, Failure>, request: &Bootstrap) -> Result<Info, Failure> {
    match answer {
        Err(Failure {
            error: Error::ComputeUnconfirmed,
            ..
        }) if cfg!(feature = "mutant-retry-create") => crate::provider::create(request),
        Err(failure) if cfg!(feature = "mutant-invent-settlement") => Err(Failure {
            error: failure.error,
            info: Some(Info {
                reference: request.reference.clone(),
                provider_id: None,
                state: LifecycleState::Running,
                bootstrap_complete: true,
                create_settled: true,
            }),
        }),
        other => other,
    }
}

/// `delete-foreign`: Kill first removes whatever carries the allocation's
/// names, without looking at its labels.
pub fn before_kill(allocation: &Reference) {
    if cfg!(feature = "mutant-delete-foreign")
        && let Ok(names) = Identity::of(allocation)
    {
        let _ = docker::container_remove(&names.container, true);
        let _ = docker::volume_remove(&names.home);
        let _ = docker::volume_remove(&names.environment);
    }
}

/// `settle-on-observation`: GetInfo and Kill claim `create-settled`, which
/// neither can prove.
pub fn settled(info: Info) -> Info {
    Info {
        create_settled: info.create_settled || cfg!(feature = "mutant-settle-on-observation"),
        ..info
    }
}
