//! The operations a kind may declare unsupported, beyond `observe`:
//! checkpoint, batch observation, discovery, credential verification and
//! the configuration adapter. Each goes through the same path as the
//! required five: declaration first (unsupported is answered by the host
//! before any instance runs), one call, a fixed code when it is aborted.

use crate::bindings::exports::oac::sandbox_provider::selection_discoverer::SelectionOption;
use crate::bindings::oac::sandbox_provider::types::{
    Compute, ComputeState, ResumeRequest, Sample, SnapshotIdentity, SuspendRequest, Target,
};
use crate::bindings::{Command, CommandResult, Error, Reference};
use crate::budget::Budget;
use crate::capability::docker::MAX_OUTPUT_BYTES;
use crate::capability::scope::CallScope;
use crate::host::Host;

/// Most targets one batch observation may carry.
pub const MAX_BATCH_TARGETS: usize = 100;

/// `unsupported` from an operation declared supported contradicts the
/// declaration, so the outcome is unknown.
fn police<T>(answer: Result<T, Error>, unknown: Error) -> Result<T, Error> {
    match answer {
        Err(Error::Unsupported(_)) => Err(unknown),
        other => other,
    }
}

impl Host {
    /// The first incarnation of the allocation.
    pub async fn initial(
        &self,
        kind: &str,
        allocation: Reference,
        budget: Budget,
    ) -> Result<Compute, Error> {
        let answer = self
            .invoke(
                kind,
                "initial",
                CallScope::Allocation(allocation.clone()),
                budget,
                Error::ComputeUnconfirmed,
                async |p, s| {
                    p.oac_sandbox_provider_checkpoint_provider()
                        .call_initial(s, &allocation)
                        .await
                },
            )
            .await?;
        police(answer, Error::ComputeUnconfirmed)
    }

    /// The identity of the incarnation after `generation`.
    pub async fn new_compute(
        &self,
        kind: &str,
        allocation: Reference,
        generation: u64,
        budget: Budget,
    ) -> Result<Compute, Error> {
        let answer = self
            .invoke(
                kind,
                "new-compute",
                CallScope::Allocation(allocation.clone()),
                budget,
                Error::ComputeUnconfirmed,
                async |p, s| {
                    p.oac_sandbox_provider_checkpoint_provider()
                        .call_new_compute(s, &allocation, generation)
                        .await
                },
            )
            .await?;
        police(answer, Error::ComputeUnconfirmed)
    }

    /// Observe one exact incarnation.
    pub async fn get_compute(
        &self,
        kind: &str,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        let answer = self
            .invoke(
                kind,
                "get-compute",
                CallScope::Allocation(allocation.clone()),
                budget,
                Error::ComputeUnconfirmed,
                async |p, s| {
                    p.oac_sandbox_provider_checkpoint_provider()
                        .call_get_compute(s, &allocation, &incarnation)
                        .await
                },
            )
            .await?;
        police(answer, Error::ComputeUnconfirmed)
    }

    /// Suspend an incarnation into a snapshot. Never replayed.
    pub async fn suspend(
        &self,
        kind: &str,
        request: SuspendRequest,
        budget: Budget,
    ) -> Result<SnapshotIdentity, Error> {
        let answer = self
            .invoke(
                kind,
                "suspend",
                CallScope::Allocation(request.reference.clone()),
                budget,
                Error::ComputeUnconfirmed,
                async |p, s| {
                    p.oac_sandbox_provider_checkpoint_provider()
                        .call_suspend(s, &request)
                        .await
                },
            )
            .await?;
        police(answer, Error::ComputeUnconfirmed)
    }

    /// Resume from a snapshot into a new incarnation. Never replayed.
    pub async fn resume(
        &self,
        kind: &str,
        request: ResumeRequest,
        budget: Budget,
    ) -> Result<Compute, Error> {
        let answer = self
            .invoke(
                kind,
                "resume",
                CallScope::Allocation(request.reference.clone()),
                budget,
                Error::ComputeUnconfirmed,
                async |p, s| {
                    p.oac_sandbox_provider_checkpoint_provider()
                        .call_resume(s, &request)
                        .await
                },
            )
            .await?;
        police(answer, Error::ComputeUnconfirmed)
    }

    /// Start an existing stopped incarnation. Never replayed.
    pub async fn resume_compute(
        &self,
        kind: &str,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        let answer = self
            .invoke(
                kind,
                "resume-compute",
                CallScope::Allocation(allocation.clone()),
                budget,
                Error::ComputeUnconfirmed,
                async |p, s| {
                    p.oac_sandbox_provider_checkpoint_provider()
                        .call_resume_compute(s, &allocation, &incarnation)
                        .await
                },
            )
            .await?;
        police(answer, Error::ComputeUnconfirmed)
    }

    /// Delete one incarnation.
    pub async fn kill_compute(
        &self,
        kind: &str,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<(), Error> {
        let answer = self
            .invoke(
                kind,
                "kill-compute",
                CallScope::Allocation(allocation.clone()),
                budget,
                Error::ComputeUnconfirmed,
                async |p, s| {
                    p.oac_sandbox_provider_checkpoint_provider()
                        .call_kill_compute(s, &allocation, &incarnation)
                        .await
                },
            )
            .await?;
        police(answer, Error::ComputeUnconfirmed)
    }

    /// Delete one snapshot.
    pub async fn delete_snapshot(
        &self,
        kind: &str,
        allocation: Reference,
        snapshot: SnapshotIdentity,
        budget: Budget,
    ) -> Result<(), Error> {
        let answer = self
            .invoke(
                kind,
                "delete-snapshot",
                CallScope::Allocation(allocation.clone()),
                budget,
                Error::ComputeUnconfirmed,
                async |p, s| {
                    p.oac_sandbox_provider_checkpoint_provider()
                        .call_delete_snapshot(s, &allocation, &snapshot)
                        .await
                },
            )
            .await?;
        police(answer, Error::ComputeUnconfirmed)
    }

    /// Run a command in one incarnation. Never replayed.
    pub async fn run_command_compute(
        &self,
        kind: &str,
        allocation: Reference,
        incarnation: Compute,
        request: Command,
        budget: Budget,
    ) -> Result<CommandResult, Error> {
        let answer = self
            .invoke(
                kind,
                "run-command-compute",
                CallScope::Allocation(allocation.clone()),
                budget,
                Error::CommandUnconfirmed,
                async |p, s| {
                    p.oac_sandbox_provider_checkpoint_provider()
                        .call_run_command_compute(s, &allocation, &incarnation, &request)
                        .await
                },
            )
            .await?;
        let limit = MAX_OUTPUT_BYTES as usize;
        match answer {
            Ok(result) if result.stdout.len() > limit || result.stderr.len() > limit => {
                Err(Error::CommandUnconfirmed)
            }
            Err(Error::Unsupported(_) | Error::ComputeUnconfirmed) => {
                Err(Error::CommandUnconfirmed)
            }
            other => other,
        }
    }

    /// Observe up to 100 targets: one result per target, in input order.
    pub async fn observe_batch(
        &self,
        kind: &str,
        targets: Vec<Target>,
        budget: Budget,
    ) -> Result<Vec<Result<Sample, Error>>, Error> {
        if targets.len() > MAX_BATCH_TARGETS {
            return Err(Error::Invalid);
        }
        let expected = targets.len();
        let answer = self
            .invoke(
                kind,
                "observe-batch",
                CallScope::Batch(
                    targets
                        .iter()
                        .map(|target| target.reference.clone())
                        .collect(),
                ),
                budget,
                Error::ObservationUnavailable,
                async |p, s| {
                    p.oac_sandbox_provider_batch_observation_source()
                        .call_observe_batch(s, &targets)
                        .await
                },
            )
            .await?;
        match police(answer, Error::ObservationUnavailable) {
            Ok(samples) if samples.len() != expected => Err(Error::ObservationUnavailable),
            other => other,
        }
    }

    /// The selectable options reachable with the installation's credential.
    pub async fn discover_selection(
        &self,
        kind: &str,
        budget: Budget,
    ) -> Result<Vec<SelectionOption>, Error> {
        let answer = self
            .invoke(
                kind,
                "discover-selection",
                CallScope::Node,
                budget,
                Error::ObservationUnavailable,
                async |p, s| {
                    p.oac_sandbox_provider_selection_discoverer()
                        .call_discover_selection(s)
                        .await
                },
            )
            .await?;
        police(answer, Error::ObservationUnavailable)
    }

    /// Whether the vendor accepts `credential`.
    pub async fn verify_credential(
        &self,
        kind: &str,
        credential: String,
        budget: Budget,
    ) -> Result<(), Error> {
        let answer = self
            .invoke(
                kind,
                "verify-credential",
                CallScope::Node,
                budget,
                Error::ObservationUnavailable,
                async |p, s| {
                    p.oac_sandbox_provider_credential_verifier()
                        .call_verify_credential(s, &credential)
                        .await
                },
            )
            .await?;
        police(answer, Error::ObservationUnavailable)
    }

    /// One configuration-adapter function taking and returning JSON text:
    /// `decode-input`, `encode`, `decode` or `normalize`.
    pub async fn configuration_text(
        &self,
        kind: &str,
        operation: &str,
        text: String,
        budget: Budget,
    ) -> Result<String, Error> {
        let answer = self
            .invoke(
                kind,
                operation,
                CallScope::Node,
                budget,
                Error::ComputeUnconfirmed,
                async |p, s| {
                    let adapter = p.oac_sandbox_provider_configuration_adapter();
                    match operation {
                        "decode-input" => adapter.call_decode_input(s, &text).await,
                        "encode" => adapter.call_encode(s, &text).await,
                        "decode" => adapter.call_decode(s, &text).await,
                        "normalize" => adapter.call_normalize(s, &text).await,
                        _ => Ok(Err(Error::Invalid)),
                    }
                },
            )
            .await?;
        police(answer, Error::ComputeUnconfirmed)
    }

    /// The configuration resulting from applying `proposed` to `current`.
    pub async fn resolve_change(
        &self,
        kind: &str,
        current: String,
        proposed: String,
        budget: Budget,
    ) -> Result<String, Error> {
        let answer = self
            .invoke(
                kind,
                "resolve-change",
                CallScope::Node,
                budget,
                Error::ComputeUnconfirmed,
                async |p, s| {
                    p.oac_sandbox_provider_configuration_adapter()
                        .call_resolve_change(s, &current, &proposed)
                        .await
                },
            )
            .await?;
        police(answer, Error::ComputeUnconfirmed)
    }

    /// Whether two configurations are equal after normalisation.
    pub async fn configuration_equal(
        &self,
        kind: &str,
        left: String,
        right: String,
        budget: Budget,
    ) -> Result<bool, Error> {
        let answer = self
            .invoke(
                kind,
                "equal",
                CallScope::Node,
                budget,
                Error::ComputeUnconfirmed,
                async |p, s| {
                    p.oac_sandbox_provider_configuration_adapter()
                        .call_equal(s, &left, &right)
                        .await
                },
            )
            .await?;
        police(answer, Error::ComputeUnconfirmed)
    }

    /// The configuration with a credential attached.
    pub async fn with_credential(
        &self,
        kind: &str,
        configuration: String,
        credential: String,
        budget: Budget,
    ) -> Result<String, Error> {
        let answer = self
            .invoke(
                kind,
                "with-credential",
                CallScope::Node,
                budget,
                Error::ComputeUnconfirmed,
                async |p, s| {
                    p.oac_sandbox_provider_configuration_adapter()
                        .call_with_credential(s, &configuration, &credential)
                        .await
                },
            )
            .await?;
        police(answer, Error::ComputeUnconfirmed)
    }

    /// Configurations discoverable from the vendor.
    pub async fn discover_configuration(
        &self,
        kind: &str,
        budget: Budget,
    ) -> Result<Vec<String>, Error> {
        let answer = self
            .invoke(
                kind,
                "discover-configuration",
                CallScope::Node,
                budget,
                Error::ObservationUnavailable,
                async |p, s| {
                    p.oac_sandbox_provider_configuration_adapter()
                        .call_discover_configuration(s)
                        .await
                },
            )
            .await?;
        police(answer, Error::ObservationUnavailable)
    }
}
