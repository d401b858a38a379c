//! Clause `unsupported`: an operation declared unsupported answers
//! `unsupported(operation, reason)` with the declared reason, carries no
//! result, and makes no native request. The component is called directly,
//! so the host's own shortcut cannot hide a component that does I/O first.

use super::{Runner, actions, ensure};
use crate::harness::Harness;
use crate::report::Level;
use sandbox_host::contract::Operation;
use sandbox_host::declaration::Decision;
use sandbox_host::provider::{CheckpointProvider, ConfigurationProvider, SandboxProvider};
use sandbox_host::types::{
    Command, Compute, Configuration, Error, Reference, ResumeRequest, SnapshotIdentity,
    StoredConfiguration, SuspendRequest, Target,
};

/// Calls `operation` raw (policing off, so the component answers even an
/// operation it declared unsupported) on `reference` with placeholder
/// arguments otherwise: `None` is a success.
pub(super) async fn call(h: &Harness, operation: Operation, reference: Reference) -> Option<Error> {
    let compute = Compute {
        generation: 0,
        name: "suite".into(),
        id: "suite".into(),
        restored_from: None,
    };
    let snapshot = SnapshotIdentity {
        reference: reference.clone(),
        id: "suite".into(),
        digest: "suite".into(),
        checkpoint_id: "suite".into(),
        checkpoint_root: "suite".into(),
        operation_id: "suite-suspend".into(),
        source_generation: 0,
        source_name: "suite".into(),
        source_id: "suite".into(),
    };
    let target = Target {
        reference: reference.clone(),
        provider_id: None,
    };
    let command = Command {
        args: vec!["true".into()],
        directory: None,
        stdin: None,
    };
    let (kind, r, b) = (h.kind(), reference.clone(), h.budget());
    // Placeholder configurations: the empty public object, no credential.
    let json = || Configuration {
        public: "{}".into(),
        credential: None,
    };
    let stored = StoredConfiguration {
        public: "{}".into(),
        metadata: "{}".into(),
        secret: None,
    };
    fn error<T>(result: Result<T, Error>) -> Option<Error> {
        result.err()
    }
    match operation {
        Operation::Initial => error(kind.initial(r, b).await),
        Operation::NewCompute => error(kind.new_compute(r, 1, None, b).await),
        Operation::GetCompute => error(kind.get_compute(r, compute, b).await),
        Operation::Suspend => {
            let request = SuspendRequest {
                reference: r,
                operation_id: "suite-suspend".into(),
                source: compute,
                snapshot: None,
                observe_only: false,
            };
            error(kind.suspend(request, b).await)
        }
        Operation::Resume => {
            let request = ResumeRequest {
                reference: r,
                operation_id: "suite-resume".into(),
                target: Compute {
                    generation: 1,
                    restored_from: Some(snapshot.clone()),
                    ..compute
                },
                snapshot,
                observe_only: false,
            };
            error(kind.resume(request, b).await)
        }
        Operation::ResumeCompute => error(kind.resume_compute(r, compute, b).await),
        Operation::KillCompute => error(kind.kill_compute(r, compute, b).await),
        Operation::DeleteSnapshot => error(kind.delete_snapshot(r, snapshot, b).await),
        Operation::RunCommandCompute => {
            error(kind.run_command_compute(r, compute, command, b).await)
        }
        Operation::Observe => error(kind.observe(target, b).await),
        Operation::ObserveBatch => error(kind.observe_batch(vec![target], b).await),
        Operation::DiscoverSelection => error(kind.discover_selection(json(), b).await),
        Operation::VerifyCredential => error(kind.verify_credential(json(), vec![r], b).await),
        Operation::DecodeInput => error(kind.decode_input("{}".into(), None, b).await),
        Operation::Encode => error(kind.encode(json(), b).await),
        Operation::Decode => error(kind.decode(stored, b).await),
        Operation::Normalize => error(kind.normalize(json(), b).await),
        Operation::ResolveChange => error(kind.resolve_change(json(), json(), b).await),
        Operation::Equal => error(kind.equal(json(), json(), b).await),
        Operation::WithCredential => {
            // A candidate of the kind's declared shape, so that the host
            // hands it to the component as a handle.
            let candidate: serde_json::Map<String, serde_json::Value> = kind
                .registration
                .credential_fields
                .iter()
                .map(|field| (field.clone(), "suite-credential".into()))
                .collect();
            let candidate = serde_json::Value::Object(candidate).to_string();
            error(kind.with_credential(json(), candidate, b).await)
        }
        Operation::DiscoverConfiguration => {
            error(kind.discover_configuration("{}".into(), b).await)
        }
        // The required operations and the infallible ones are never
        // unsupported. Every operation is named here, so a new one does not
        // compile until it has a case.
        Operation::Create
        | Operation::GetInfo
        | Operation::Renew
        | Operation::Kill
        | Operation::RunCommand
        | Operation::Requirements
        | Operation::Probe => Some(Error::Invalid),
    }
}

pub(super) async fn run(runner: &mut Runner<'_>) {
    let unsupported: Vec<(Operation, String)> = {
        let (declaration, _) = runner_harness(runner).declaration();
        declaration
            .0
            .iter()
            .filter_map(|(op, decision)| match decision {
                Decision::Unsupported(reason) => Some((*op, reason.clone())),
                Decision::Supported => None,
            })
            .collect()
    };
    for (operation, reason) in unsupported {
        let name = operation.name();
        let sentence = format!(
            "`{name}` answers unsupported({name}, {reason}) with no result and no native request."
        );
        runner
            .case(
                format!("unsupported.{name}"),
                "unsupported",
                Level::Must,
                sentence,
                async |h| {
                    let (answer, requests) = h
                        .with_fault(None, async || {
                            call(h, operation, h.allocation("unsupported")).await
                        })
                        .await;
                    let expected = Error::unsupported(name, reason.clone());
                    ensure(answer == Some(expected.clone()), || {
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
