//! Clause `unsupported`: an operation declared unsupported answers
//! `unsupported(operation, reason)` with the declared reason, carries no
//! result, and makes no native request. The component is called directly,
//! so the host's own shortcut cannot hide a component that does I/O first.

use super::{Runner, actions, ensure};
use crate::harness::{Harness, KIND};
use crate::report::Level;
use sandbox_host::bindings::oac::sandbox_provider::types::{
    Compute, Error, ResumeRequest, SnapshotIdentity, SuspendRequest, Target,
};
use sandbox_host::capability::scope::CallScope;
use sandbox_host::declaration::Decision;
use sandbox_host::host::CallError;

/// Calls `operation` raw with placeholder arguments; `Ok(None)` is a success.
async fn call(h: &Harness, operation: &str) -> Result<Option<Error>, CallError> {
    let reference = h.allocation("unsupported");
    let compute = Compute {
        generation: 0,
        name: "suite".into(),
        id: "suite".into(),
        restored_from: None,
    };
    let snapshot = SnapshotIdentity {
        name: "suite".into(),
        id: "suite".into(),
    };
    let target = Target {
        reference: reference.clone(),
        provider_id: None,
    };
    let command = sandbox_host::bindings::Command {
        args: vec!["true".into()],
        directory: None,
        stdin: None,
    };
    let (r, c, b) = (&reference, &compute, h.budget());
    let error = |result: Result<(), Error>| result.err();
    // Each operation runs with the scope the host gives it in production.
    let node_level = matches!(
        operation,
        "discover-selection"
            | "verify-credential"
            | "decode-input"
            | "encode"
            | "decode"
            | "normalize"
            | "resolve-change"
            | "equal"
            | "with-credential"
            | "discover-configuration"
    );
    let scope = if node_level {
        CallScope::Node
    } else {
        CallScope::Allocation(reference.clone())
    };
    h.host
        .call_raw(KIND, scope, b, async |p, s| {
            let checkpoint = p.oac_sandbox_provider_checkpoint_provider();
            let configuration = p.oac_sandbox_provider_configuration_adapter();
            Ok(match operation {
                "initial" => error(checkpoint.call_initial(&mut *s, r).await?.map(drop)),
                "new-compute" => error(checkpoint.call_new_compute(&mut *s, r, 1).await?.map(drop)),
                "get-compute" => error(checkpoint.call_get_compute(&mut *s, r, c).await?.map(drop)),
                "suspend" => {
                    let request = SuspendRequest {
                        reference: r.clone(),
                        compute: c.clone(),
                        observe_only: false,
                    };
                    error(checkpoint.call_suspend(&mut *s, &request).await?.map(drop))
                }
                "resume" => {
                    let request = ResumeRequest {
                        reference: r.clone(),
                        snapshot: snapshot.clone(),
                        observe_only: false,
                    };
                    error(checkpoint.call_resume(&mut *s, &request).await?.map(drop))
                }
                "resume-compute" => error(
                    checkpoint
                        .call_resume_compute(&mut *s, r, c)
                        .await?
                        .map(drop),
                ),
                "kill-compute" => error(checkpoint.call_kill_compute(&mut *s, r, c).await?),
                "delete-snapshot" => error(
                    checkpoint
                        .call_delete_snapshot(&mut *s, r, &snapshot)
                        .await?,
                ),
                "run-command-compute" => error(
                    checkpoint
                        .call_run_command_compute(&mut *s, r, c, &command)
                        .await?
                        .map(drop),
                ),
                "observe" => error(
                    p.oac_sandbox_provider_observation_source()
                        .call_observe(&mut *s, &target)
                        .await?
                        .map(drop),
                ),
                "observe-batch" => error(
                    p.oac_sandbox_provider_batch_observation_source()
                        .call_observe_batch(&mut *s, std::slice::from_ref(&target))
                        .await?
                        .map(drop),
                ),
                "discover-selection" => error(
                    p.oac_sandbox_provider_selection_discoverer()
                        .call_discover_selection(&mut *s)
                        .await?
                        .map(drop),
                ),
                "verify-credential" => error(
                    p.oac_sandbox_provider_credential_verifier()
                        .call_verify_credential(&mut *s, "suite-credential")
                        .await?,
                ),
                "decode-input" => error(
                    configuration
                        .call_decode_input(&mut *s, "{}")
                        .await?
                        .map(drop),
                ),
                "encode" => error(configuration.call_encode(&mut *s, "{}").await?.map(drop)),
                "decode" => error(configuration.call_decode(&mut *s, "{}").await?.map(drop)),
                "normalize" => error(configuration.call_normalize(&mut *s, "{}").await?.map(drop)),
                "resolve-change" => error(
                    configuration
                        .call_resolve_change(&mut *s, "{}", "{}")
                        .await?
                        .map(drop),
                ),
                "equal" => error(
                    configuration
                        .call_equal(&mut *s, "{}", "{}")
                        .await?
                        .map(drop),
                ),
                "with-credential" => error(
                    configuration
                        .call_with_credential(&mut *s, "{}", "suite-credential")
                        .await?
                        .map(drop),
                ),
                "discover-configuration" => error(
                    configuration
                        .call_discover_configuration(&mut *s)
                        .await?
                        .map(drop),
                ),
                _ => Some(Error::Invalid),
            })
        })
        .await
}

pub async fn run(runner: &mut Runner<'_>) {
    let unsupported: Vec<(String, String)> = {
        let (declaration, _) = runner_harness(runner).declaration();
        declaration
            .0
            .iter()
            .filter_map(|(op, decision)| match decision {
                Decision::Unsupported(reason) => Some((op.clone(), reason.clone())),
                Decision::Supported => None,
            })
            .collect()
    };
    for (operation, reason) in unsupported {
        let sentence = format!(
            "`{operation}` answers unsupported({operation}, {reason}) with no result and no native request."
        );
        runner
            .case(
                format!("unsupported.{operation}"),
                "unsupported",
                Level::Must,
                sentence,
                async |h| {
                    let (answer, requests) =
                        h.with_fault(None, async || call(h, &operation).await).await;
                    let expected =
                        Error::Unsupported(sandbox_host::bindings::UnsupportedOperation {
                            operation: operation.clone(),
                            reason: reason.clone(),
                        });
                    ensure(answer == Ok(Some(expected.clone())), || {
                        format!("answered {answer:?}, expected {expected:?}")
                    })?;
                    ensure(requests.is_empty(), || {
                        format!("native requests before answering: {:?}", actions(&requests))
                    })
                },
            )
            .await;
    }
}

fn runner_harness<'a>(runner: &Runner<'a>) -> &'a Harness {
    runner.harness
}
