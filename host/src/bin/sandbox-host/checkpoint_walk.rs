//! `sandbox-host client checkpoint-walk`: one allocation of a checkpointing
//! kind through a node, as Core drives it — create, a file written and the
//! daemon's process id read, suspend, resume into generation 1, the file
//! and the process id read again (the workspace and the running process
//! came back with the snapshot's memory and disk), generation 1 observed
//! by its native id, kill-compute of both generations, delete-snapshot —
//! checking each answer by the contract's rules and printing each step. It
//! stops at the first step that fails, then removes what it made.

use crate::operation::command_json;
use sandbox_host::Budget;
use sandbox_host::contract::Operation;
use sandbox_host::police;
use sandbox_host::provider::{CheckpointProvider, SandboxProvider};
use sandbox_host::types::{
    Bootstrap, Command, CommandResult, Compute, ComputeStatus, Error, NetworkAccess, Reference,
    ResumeRequest, SnapshotIdentity, SuspendRequest, Target,
};
use serde_json::json;

/// The file the walk writes before the suspend and reads after the resume.
const KEPT_FILE: &str = "/workspace/oac-checkpoint-walk";
/// Its content.
const KEPT: &[u8] = b"written before the suspend\n";

/// Prints a step; `Err` carries what failed, for the walk's end.
fn step<T: serde::Serialize>(name: &str, outcome: Result<T, String>) -> Result<T, String> {
    match &outcome {
        Ok(value) => println!("{name}: ok {}", json!(value)),
        Err(why) => println!("{name}: FAILED {why}"),
    }
    outcome
}

fn code(error: Error) -> String {
    error.code().to_string()
}

fn command(args: &[&str], stdin: Option<&[u8]>) -> Command {
    Command {
        args: args.iter().map(|arg| arg.to_string()).collect(),
        directory: None,
        stdin: stdin.map(<[u8]>::to_vec),
    }
}

/// A command's result that exited 0.
fn exited(result: Result<CommandResult, Error>) -> Result<CommandResult, String> {
    match result {
        Ok(result) if result.exit_code == 0 => Ok(result),
        Ok(result) => Err(format!(
            "exited {}: {}",
            result.exit_code,
            command_json(&result)
        )),
        Err(error) => Err(code(error)),
    }
}

/// `args` run in incarnation `target` exit 0 with `expected` as stdout.
async fn reads(
    checkpoint: &impl CheckpointProvider,
    allocation: &Reference,
    target: &Compute,
    args: &[&str],
    expected: &[u8],
    budget: Budget,
) -> Result<serde_json::Value, String> {
    let command = command(args, None);
    let result = checkpoint
        .run_command_compute(allocation.clone(), target.clone(), command, budget)
        .await;
    exited(result).and_then(|result| match result.stdout == expected {
        true => Ok(command_json(&result)),
        false => Err(format!(
            "`{}` answered {}",
            args.join(" "),
            command_json(&result)
        )),
    })
}

/// What the walk made, for its cleanup.
#[derive(Default)]
struct Made {
    source: Option<Compute>,
    snapshot: Option<SnapshotIdentity>,
    target: Option<Compute>,
}

/// Walks `allocation`; returns whether every step held.
pub(crate) async fn walk(
    provider: &impl SandboxProvider,
    allocation: Reference,
    budget: Budget,
) -> bool {
    println!(
        "allocation {}/{}/{}",
        allocation.tenant_id, allocation.environment_id, allocation.allocation_id
    );
    let Some(checkpoint) = provider.checkpoint() else {
        println!("checkpoint: FAILED the kind does not declare checkpoints");
        return false;
    };
    let mut made = Made::default();
    let outcome = steps(provider, &checkpoint, &allocation, budget, &mut made).await;
    if outcome.is_err() {
        clean(provider, &checkpoint, &allocation, budget, made).await;
    }
    outcome.is_ok()
}

async fn steps<C: CheckpointProvider>(
    provider: &impl SandboxProvider,
    checkpoint: &C,
    allocation: &Reference,
    budget: Budget,
    made: &mut Made,
) -> Result<(), String> {
    let request = Bootstrap {
        reference: allocation.clone(),
        session_id: "checkpoint-walk-session".into(),
        device_id: "checkpoint-walk-device".into(),
        core_url: "https://core.invalid".into(),
        daemon_credential: "checkpoint-walk-credential-not-a-secret".into(),
        harness: "checkpoint-walk".into(),
        network_access: NetworkAccess::Disabled,
        allowed_domains: vec![],
    };
    let created = provider.create(request, budget).await;
    let info = step("create", created.map_err(|f| code(f.error)))?;
    if !(info.create_settled && info.bootstrap_complete) {
        return step(
            "create",
            Err::<(), _>("not settled and bootstrapped".into()),
        );
    }
    let wrote = provider
        .run_command(
            allocation.clone(),
            command(&["tee", KEPT_FILE], Some(KEPT)),
            budget,
        )
        .await;
    step(
        "run-command (write)",
        exited(wrote).map(|r| command_json(&r)),
    )?;
    let pid = provider
        .run_command(
            allocation.clone(),
            command(&["pidof", "oac-daemon"], None),
            budget,
        )
        .await;
    let pid = step(
        "run-command (daemon)",
        exited(pid).map(|r| command_json(&r)),
    )?["stdout"]
        .as_str()
        .unwrap_or_default()
        .as_bytes()
        .to_vec();
    let initial = checkpoint.initial(allocation.clone(), budget).await;
    let initial = police::constructed(Operation::Initial, initial, 0, None);
    let initial = step("initial", initial.map_err(code))?;
    let source = checkpoint
        .get_compute(allocation.clone(), initial.clone(), budget)
        .await;
    let source = police::compute_state(Operation::GetCompute, source, &initial)
        .map_err(code)
        .and_then(|state| match state.status {
            ComputeStatus::Running => Ok(state.compute),
            other => Err(format!("{other:?}")),
        });
    let source = step("get-compute (generation 0)", source)?;
    made.source = Some(source.clone());
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis())
        .unwrap_or_default();
    let suspend = SuspendRequest {
        reference: allocation.clone(),
        operation_id: format!("walk-suspend-{stamp}"),
        source: source.clone(),
        snapshot: None,
        observe_only: false,
    };
    let suspended = checkpoint.suspend(suspend.clone(), budget).await;
    let suspended = police::suspended(suspended, &suspend).map_err(code);
    let snapshot = step("suspend", suspended)?
        .snapshot
        .ok_or("suspend answered no snapshot")?;
    made.snapshot = Some(snapshot.clone());
    let target = checkpoint
        .new_compute(allocation.clone(), 1, Some(snapshot.clone()), budget)
        .await;
    let target = police::constructed(Operation::NewCompute, target, 1, Some(&snapshot));
    let target = step("new-compute (generation 1)", target.map_err(code))?;
    let resume = ResumeRequest {
        reference: allocation.clone(),
        operation_id: format!("walk-resume-{stamp}"),
        snapshot: snapshot.clone(),
        target,
        observe_only: false,
    };
    let resumed = checkpoint.resume(resume.clone(), budget).await;
    let resumed = step("resume", police::resumed(resumed, &resume).map_err(code))?;
    let target = resumed.compute;
    made.target = Some(target.clone());
    let read = reads(
        checkpoint,
        allocation,
        &target,
        &["cat", KEPT_FILE],
        KEPT,
        budget,
    )
    .await;
    step("run-command-compute (the file, generation 1)", read)?;
    let again = reads(
        checkpoint,
        allocation,
        &target,
        &["pidof", "oac-daemon"],
        &pid,
        budget,
    )
    .await;
    step("run-command-compute (the same daemon, generation 1)", again)?;
    // An observation names only the native id: it finds generation 1.
    let observed = provider
        .observe(
            Target {
                reference: allocation.clone(),
                provider_id: Some(target.id.clone()),
            },
            budget,
        )
        .await;
    let observed = observed.map_err(code).and_then(|sample| {
        match sample.started_at.is_some() && sample.memory_limit_bytes > 0 {
            true => Ok(sample),
            false => Err(format!("an incomplete sample: {sample:?}")),
        }
    });
    step("observe (generation 1)", observed)?;
    for (name, compute) in [
        ("kill-compute (generation 1)", &target),
        ("kill-compute (generation 0)", &source),
    ] {
        let killed = checkpoint
            .kill_compute(allocation.clone(), compute.clone(), budget)
            .await;
        step(name, killed.map_err(code))?;
        let after = checkpoint
            .get_compute(allocation.clone(), compute.clone(), budget)
            .await;
        let gone = match after {
            Err(Error::NotFound) => Ok("not-found"),
            other => Err(format!("still there: {other:?}")),
        };
        step("get-compute", gone)?;
    }
    let deleted = checkpoint
        .delete_snapshot(allocation.clone(), snapshot, budget)
        .await;
    step("delete-snapshot", deleted.map_err(code))?;
    Ok(())
}

/// Removes what a failed walk made (each removal is idempotent).
async fn clean<C: CheckpointProvider>(
    provider: &impl SandboxProvider,
    checkpoint: &C,
    allocation: &Reference,
    budget: Budget,
    made: Made,
) {
    for compute in [made.target, made.source].into_iter().flatten() {
        let _ = checkpoint
            .kill_compute(allocation.clone(), compute, budget)
            .await;
    }
    if let Some(snapshot) = made.snapshot {
        let _ = checkpoint
            .delete_snapshot(allocation.clone(), snapshot, budget)
            .await;
    }
    let _ = provider.kill(allocation.clone(), budget).await;
}
