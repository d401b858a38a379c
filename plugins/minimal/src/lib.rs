//! A complete minimal adapter: the five required operations over an
//! in-memory answer, everything optional declared unsupported with a reason.
//! `cargo xtask build-plugins` builds it; the host's tests load it.

use oac_provider_sdk::declaration::CONFIGURATION_OPERATIONS;
use oac_provider_sdk::prelude::*;

struct Minimal;

const NO_OBSERVE: Unsupported = Unsupported::new("observe", "minimal_has_no_observation");
const NO_BATCH: Unsupported = Unsupported::new("observe-batch", "minimal_has_no_observation");
const NO_SELECTION: Unsupported = Unsupported::new("discover-selection", "minimal_has_no_catalog");
const NO_VERIFY: Unsupported = Unsupported::new("verify-credential", "credentials_not_required");
const NO_CREDENTIAL: Unsupported = Unsupported::new("with-credential", "credentials_not_required");
const NO_DISCOVERY: Unsupported =
    Unsupported::new("discover-configuration", "minimal_has_no_catalog");

fn unsupported_checkpoint(operation: &str) -> Error {
    Error::Unsupported(UnsupportedOperation {
        operation: operation.into(),
        reason: "minimal_has_no_checkpoints".into(),
    })
}

fn absent(allocation: Reference) -> Info {
    Info {
        reference: allocation,
        provider_id: None,
        state: LifecycleState::Absent,
        bootstrap_complete: false,
        create_settled: true,
    }
}

impl SandboxProvider for Minimal {
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

impl CheckpointProvider for Minimal {
    fn initial(_: Reference) -> Result<Compute, Error> {
        Err(unsupported_checkpoint("initial"))
    }
    fn new_compute(_: Reference, _: u64) -> Result<Compute, Error> {
        Err(unsupported_checkpoint("new-compute"))
    }
    fn get_compute(_: Reference, _: Compute) -> Result<ComputeState, Error> {
        Err(unsupported_checkpoint("get-compute"))
    }
    fn suspend(_: SuspendRequest) -> Result<SnapshotIdentity, Error> {
        Err(unsupported_checkpoint("suspend"))
    }
    fn resume(_: ResumeRequest) -> Result<Compute, Error> {
        Err(unsupported_checkpoint("resume"))
    }
    fn resume_compute(_: Reference, _: Compute) -> Result<ComputeState, Error> {
        Err(unsupported_checkpoint("resume-compute"))
    }
    fn kill_compute(_: Reference, _: Compute) -> Result<(), Error> {
        Err(unsupported_checkpoint("kill-compute"))
    }
    fn delete_snapshot(_: Reference, _: SnapshotIdentity) -> Result<(), Error> {
        Err(unsupported_checkpoint("delete-snapshot"))
    }
    fn run_command_compute(_: Reference, _: Compute, _: Command) -> Result<CommandResult, Error> {
        Err(unsupported_checkpoint("run-command-compute"))
    }
}

impl ObservationSource for Minimal {
    fn observe(_: Target) -> Result<Sample, Error> {
        Err(NO_OBSERVE.into())
    }
}

impl BatchObservationSource for Minimal {
    fn observe_batch(_: Vec<Target>) -> Result<Vec<Result<Sample, Error>>, Error> {
        Err(NO_BATCH.into())
    }
}

impl SelectionDiscoverer for Minimal {
    fn discover_selection() -> Result<Vec<SelectionOption>, Error> {
        Err(NO_SELECTION.into())
    }
}

impl CredentialVerifier for Minimal {
    fn verify_credential(_: String) -> Result<(), Error> {
        Err(NO_VERIFY.into())
    }
}

impl ConfigurationAdapter for Minimal {
    fn requirements() -> ConfigurationRequirements {
        ConfigurationRequirements {
            credential: Requirement::NotRequired,
            public_origin: Requirement::NotRequired,
        }
    }
    fn decode_input(input: String) -> Result<String, Error> {
        if input.trim() == "{}" {
            Ok("{}".into())
        } else {
            Err(Error::Invalid)
        }
    }
    fn encode(configuration: String) -> Result<String, Error> {
        Self::decode_input(configuration)
    }
    fn decode(stored: String) -> Result<String, Error> {
        Self::decode_input(stored)
    }
    fn normalize(configuration: String) -> Result<String, Error> {
        Self::decode_input(configuration)
    }
    fn resolve_change(_current: String, proposed: String) -> Result<String, Error> {
        Self::decode_input(proposed)
    }
    fn equal(left: String, right: String) -> Result<bool, Error> {
        Ok(Self::decode_input(left)? == Self::decode_input(right)?)
    }
    fn with_credential(_: String, _: String) -> Result<String, Error> {
        Err(NO_CREDENTIAL.into())
    }
    fn discover_configuration() -> Result<Vec<String>, Error> {
        Err(NO_DISCOVERY.into())
    }
}

impl Readiness for Minimal {
    fn probe() -> Vec<Diagnostic> {
        Vec::new()
    }
}

impl Declarations for Minimal {
    fn operations() -> Vec<OperationDeclaration> {
        let mut all = supported(&REQUIRED_OPERATIONS);
        all.extend(supported(&READINESS_OPERATIONS));
        all.extend(unsupported(
            &CHECKPOINT_OPERATIONS,
            "minimal_has_no_checkpoints",
        ));
        for decision in [
            NO_OBSERVE,
            NO_BATCH,
            NO_SELECTION,
            NO_VERIFY,
            NO_CREDENTIAL,
            NO_DISCOVERY,
        ] {
            all.push(decision.declaration());
        }
        let configured = ["with-credential", "discover-configuration"];
        all.extend(supported(
            &CONFIGURATION_OPERATIONS
                .iter()
                .copied()
                .filter(|op| !configured.contains(op))
                .collect::<Vec<_>>(),
        ));
        all
    }
}

oac_provider_sdk::export_provider!(Minimal);
