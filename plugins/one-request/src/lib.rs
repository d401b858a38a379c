//! A component for the host's benches: its `get-info` makes one Docker
//! `version` request and answers the engine's API version as the provider
//! id, reading no configuration. Built with the SDK and importing only what
//! that needs (the Docker capability and what Rust's standard library
//! imports), it is the smallest shape an adapter with one capability
//! request has, so a bench can tell the host's cost per call from a larger
//! component's (the `steerable` test component imports HTTP, clocks, logs
//! and receipts for other tests, and parses its steering on every call).

use oac_provider_sdk::prelude::*;

struct OneRequest;

/// A pending allocation, with `provider_id` as found.
fn pending(allocation: Reference, provider_id: Option<String>) -> Info {
    Info {
        reference: allocation,
        provider_id,
        state: LifecycleState::Pending,
        bootstrap_complete: false,
        create_settled: false,
    }
}

impl Sandbox for OneRequest {
    fn create(request: Bootstrap) -> Result<Info, Failure> {
        // Refused before any effect: a definite outcome, so it settles.
        Err(Failure {
            error: Error::Invalid,
            info: Some(Info {
                state: LifecycleState::Absent,
                create_settled: true,
                ..pending(request.reference, None)
            }),
        })
    }
    fn get_info(allocation: Reference) -> Result<Info, Error> {
        docker::version()
            .map(|version| pending(allocation, Some(version.api_version)))
            .map_err(|_| Error::ComputeUnconfirmed)
    }
    fn renew(_allocation: Reference) -> Result<Info, Failure> {
        Err(Error::NotFound.into())
    }
    fn kill(allocation: Reference) -> Result<Info, Failure> {
        // Confirmed absence; a Kill never settles a Create.
        Ok(Info {
            state: LifecycleState::Absent,
            ..pending(allocation, None)
        })
    }
    fn run_command(_allocation: Reference, _request: Command) -> Result<CommandResult, Error> {
        Err(Error::NotFound)
    }
}

impl Readiness for OneRequest {
    fn probe() -> Vec<Diagnostic> {
        Vec::new()
    }
}

export_provider!(OneRequest {
    requirements: { credential: NotRequired, public_origin: NotRequired },
    checkpoint: "bench_component_has_no_checkpoints",
    observe: "bench_component_has_no_observation",
    observe_batch: "bench_component_has_no_observation",
    discover_selection: "bench_component_has_no_catalog",
    verify_credential: "credentials_not_required",
    configuration: "bench_component_has_no_configuration",
    with_credential: "credentials_not_required",
    discover_configuration: "bench_component_has_no_catalog",
});
