//! A complete minimal adapter: the five required operations and the probe,
//! every optional group declared unsupported with its reason. It answers
//! from memory; a real adapter reaches its vendor through a capability.

use oac_provider_sdk::prelude::*;

struct Minimal;

fn absent(allocation: Reference) -> Info {
    Info {
        reference: allocation,
        provider_id: None,
        state: LifecycleState::Absent,
        bootstrap_complete: false,
        create_settled: true,
    }
}

impl Sandbox for Minimal {
    fn create(_request: Bootstrap) -> Result<Info, Failure> {
        // A real adapter creates compute through a capability here.
        Err(Error::Invalid.into())
    }
    fn get_info(allocation: Reference) -> Result<Info, Error> {
        Ok(absent(allocation))
    }
    fn renew(allocation: Reference) -> Result<Info, Failure> {
        Ok(absent(allocation))
    }
    fn kill(allocation: Reference) -> Result<Info, Failure> {
        Ok(absent(allocation))
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
