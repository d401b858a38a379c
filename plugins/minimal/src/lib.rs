//! A complete minimal adapter: the five required operations and the probe,
//! every optional group declared unsupported with its reason. It answers
//! from memory; a real adapter reaches its vendor through a capability.

use oac_provider_sdk::prelude::*;

struct Minimal;

/// No resource of the allocation exists. `settled` only where this answer
/// proves the original Create can no longer change resources.
fn absent(allocation: Reference, settled: bool) -> Info {
    Info {
        reference: allocation,
        provider_id: None,
        state: LifecycleState::Absent,
        bootstrap_complete: false,
        create_settled: settled,
    }
}

impl Sandbox for Minimal {
    fn create(request: Bootstrap) -> Result<Info, Failure> {
        // A real adapter creates compute through a capability here. This
        // Create refuses before any effect: its outcome is definite, so its
        // failure is settlement evidence.
        Err(Failure {
            error: Error::Invalid,
            info: Some(absent(request.reference, true)),
        })
    }
    fn get_info(_allocation: Reference) -> Result<Info, Error> {
        // An observation that finds nothing proves nothing: `not-found`.
        Err(Error::NotFound)
    }
    fn renew(_allocation: Reference) -> Result<Info, Failure> {
        Err(Error::NotFound.into())
    }
    fn kill(allocation: Reference) -> Result<Info, Failure> {
        // Confirmed absence; a Kill never settles a Create.
        Ok(absent(allocation, false))
    }
    fn run_command(_allocation: Reference, _request: Command) -> Result<CommandResult, Error> {
        Err(Error::NotFound)
    }
}

impl Readiness for Minimal {
    fn probe() -> Vec<Diagnostic> {
        Vec::new()
    }
}

export_provider!(Minimal {
    requirements: { credential: NotRequired, public_origin: NotRequired },
    checkpoint: "minimal_has_no_checkpoints",
    observe: "minimal_has_no_observation",
    observe_batch: "minimal_has_no_observation",
    discover_selection: "minimal_has_no_catalog",
    verify_credential: "credentials_not_required",
    configuration: "minimal_has_no_configuration",
    with_credential: "credentials_not_required",
    discover_configuration: "minimal_has_no_catalog",
});
