//! The E2B sandbox provider (`direct` mode): E2B's REST API and envd's
//! process API over `wasi:http`, with the API key filled in by the host;
//! ownership in each sandbox's `oac_*` metadata; settlement across
//! restarts in durable receipts. Checkpoints are not supported.

mod api;
mod config;
mod configuration;
mod envd;
mod provider;

mod mutant;

use oac_provider_sdk::prelude::*;
use provider::E2bProvider;

impl Sandbox for E2bProvider {
    fn create(request: Bootstrap) -> Result<Info, Failure> {
        mutant::after_create(provider::create(&request), &request)
    }
    fn get_info(allocation: Reference) -> Result<Info, Error> {
        provider::get_info(allocation)
    }
    fn renew(allocation: Reference) -> Result<Info, Failure> {
        provider::renew(allocation)
    }
    fn kill(allocation: Reference) -> Result<Info, Failure> {
        mutant::after_kill(provider::kill(allocation.clone()), allocation)
    }
    fn run_command(allocation: Reference, request: Command) -> Result<CommandResult, Error> {
        provider::run_command(allocation, request)
    }
}

impl Readiness for E2bProvider {
    fn probe() -> Vec<Diagnostic> {
        provider::probe()
    }
}

impl Observe for E2bProvider {
    fn observe(of: Target) -> Result<Sample, Error> {
        provider::observe(of)
    }
}

impl ObserveBatch for E2bProvider {
    fn observe_batch(targets: Vec<Target>) -> Result<Vec<Result<Sample, Error>>, Error> {
        provider::observe_batch(targets)
    }
}

impl DiscoverSelection for E2bProvider {
    fn discover_selection(candidate: String) -> Result<String, Error> {
        provider::discover_selection(candidate)
    }
}

impl VerifyCredential for E2bProvider {
    fn verify_credential(candidate: String, references: Vec<Reference>) -> Result<(), Error> {
        provider::verify_credential(candidate, references)
    }
}

impl ConfigurationAdapter for E2bProvider {
    fn decode_input(
        public: String,
        credential: Option<Credential>,
    ) -> Result<Configuration, Error> {
        configuration::decode_input(public, credential)
    }
    fn encode(configuration: Configuration) -> Result<StoredConfiguration, Error> {
        configuration::encode(configuration)
    }
    fn decode(stored: StoredConfiguration) -> Result<Configuration, Error> {
        configuration::decode(stored)
    }
    fn normalize(configuration: Configuration) -> Result<Configuration, Error> {
        configuration::normalize(configuration)
    }
    fn resolve_change(
        next: Configuration,
        previous: Configuration,
    ) -> Result<Configuration, Error> {
        configuration::resolve_change(next, previous)
    }
    fn equal(left: Configuration, right: Configuration) -> Result<bool, Error> {
        configuration::equal(left, right)
    }
}

impl WithCredential for E2bProvider {
    fn with_credential(
        owner: Configuration,
        candidate: Credential,
    ) -> Result<Configuration, Error> {
        configuration::with_credential(owner, candidate)
    }
}

impl DiscoverConfiguration for E2bProvider {
    fn discover_configuration(query: String) -> Result<Vec<String>, Error> {
        provider::discover_configuration(query)
    }
}

oac_provider_sdk::export_provider!(E2bProvider {
    // The daemon runs in E2B's cloud and must reach Core.
    requirements: { credential: Required, public_origin: Required },
    checkpoint: "e2b_has_no_exact_incarnations",
    observe: supported,
    observe_batch: supported,
    discover_selection: supported,
    verify_credential: supported,
    configuration: supported,
    with_credential: supported,
    discover_configuration: supported,
});
