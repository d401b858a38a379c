//! The steerable component's `microsandbox` actions: with action `vm`, an
//! operation runs the steered steps (`vm_steps` for create and get-info,
//! `vm_kill_steps` for kill), each one capability call, and answers every
//! step's outcome as a JSON array in its provider id, so tests see exactly
//! what the host answered: `{"ok": …}` or `{"error": "<code>"}`.
//!
//! A step names its function (`call`) and what the function takes: the
//! incarnation's `generation`, its `id` (`@` for the id the last step that
//! answered a VM gave), `restored_from` (the snapshot the last capture or
//! find answered, with `forge` replacing one of its fields), the
//! `operation_id`, a command (`args`, `stdin`, `as_root`, `output_limit`,
//! `working_dir`), `snapshot`, a record to name (as an earlier answer
//! showed it), and `allocation`, another allocation (same tenant and
//! environment) to name instead of the call's.

use oac_provider_sdk::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};

use microsandbox::{Incarnation, VmError, VmExec, VmSnapshot, VmState};

/// One capability call.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct VmStep {
    call: String,
    generation: u64,
    id: Option<String>,
    restored_from: bool,
    /// `[field, value]`: a field of the remembered snapshot to replace
    /// before naming it (`id`, `digest`, `native-reference`, …).
    forge: Option<(String, String)>,
    operation_id: String,
    args: Vec<String>,
    stdin: Option<String>,
    as_root: bool,
    output_limit: Option<u32>,
    working_dir: Option<String>,
    allocation: Option<String>,
    /// A snapshot record as an earlier answer showed it, named instead of
    /// the remembered one.
    snapshot: Option<SnapshotFields>,
}

/// A snapshot record in the JSON shape this module answers it in.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotFields {
    native_reference: String,
    id: String,
    digest: String,
    checkpoint_id: String,
    checkpoint_root: String,
    operation_id: String,
    source_generation: u64,
    source_name: String,
    source_id: String,
}

impl From<SnapshotFields> for VmSnapshot {
    fn from(fields: SnapshotFields) -> Self {
        VmSnapshot {
            native_reference: fields.native_reference,
            id: fields.id,
            digest: fields.digest,
            checkpoint_id: fields.checkpoint_id,
            checkpoint_root: fields.checkpoint_root,
            operation_id: fields.operation_id,
            source_generation: fields.source_generation,
            source_name: fields.source_name,
            source_id: fields.source_id,
        }
    }
}

/// What earlier steps answered that later ones may name.
#[derive(Default)]
struct Remembered {
    id: Option<String>,
    snapshot: Option<VmSnapshot>,
}

fn error_name(error: VmError) -> &'static str {
    match error {
        VmError::Denied => "denied",
        VmError::Invalid => "invalid",
        VmError::Ownership => "ownership",
        VmError::NotFound => "not-found",
        VmError::Exists => "exists",
        VmError::NotReady => "not-ready",
        VmError::Unavailable => "unavailable",
        VmError::Unconfirmed => "unconfirmed",
        VmError::CommandUnconfirmed => "command-unconfirmed",
        VmError::Failed => "failed",
    }
}

fn state(state: &VmState) -> Value {
    json!({
        "id": state.id,
        "name": state.name,
        "status": match state.status {
            microsandbox::VmStatus::Starting => "starting",
            microsandbox::VmStatus::Running => "running",
            microsandbox::VmStatus::Draining => "draining",
            microsandbox::VmStatus::Paused => "paused",
            microsandbox::VmStatus::Stopped => "stopped",
            microsandbox::VmStatus::Crashed => "crashed",
        },
        "bootstrap_complete": state.bootstrap_complete,
        "snapshot_parent": state.snapshot_parent,
        "conforms": state.conforms,
    })
}

fn snapshot(snapshot: &VmSnapshot) -> Value {
    json!({
        "native_reference": snapshot.native_reference,
        "id": snapshot.id,
        "digest": snapshot.digest,
        "checkpoint_id": snapshot.checkpoint_id,
        "checkpoint_root": snapshot.checkpoint_root,
        "operation_id": snapshot.operation_id,
        "source_generation": snapshot.source_generation,
        "source_name": snapshot.source_name,
        "source_id": snapshot.source_id,
    })
}

fn forged(mut snapshot: VmSnapshot, forge: &Option<(String, String)>) -> VmSnapshot {
    if let Some((field, value)) = forge {
        let value = value.clone();
        match field.as_str() {
            "native-reference" => snapshot.native_reference = value,
            "id" => snapshot.id = value,
            "digest" => snapshot.digest = value,
            "checkpoint-id" => snapshot.checkpoint_id = value,
            "source-id" => snapshot.source_id = value,
            "source-name" => snapshot.source_name = value,
            "operation-id" => snapshot.operation_id = value,
            _ => {}
        }
    }
    snapshot
}

fn outcome<T>(result: Result<T, VmError>, ok: impl FnOnce(&T) -> Value) -> Value {
    match result {
        Ok(value) => json!({ "ok": ok(&value) }),
        Err(error) => json!({ "error": error_name(error) }),
    }
}

/// Runs `steps` for `allocation`, answering each outcome.
pub(crate) fn run(steps: &[VmStep], allocation: &Reference) -> String {
    let mut remembered = Remembered::default();
    let outcomes: Vec<Value> = steps
        .iter()
        .map(|step| one(step, allocation, &mut remembered))
        .collect();
    Value::Array(outcomes).to_string()
}

fn one(step: &VmStep, allocation: &Reference, remembered: &mut Remembered) -> Value {
    let reference = Reference {
        allocation_id: step
            .allocation
            .clone()
            .unwrap_or_else(|| allocation.allocation_id.clone()),
        ..allocation.clone()
    };
    if let Some(given) = &step.snapshot {
        remembered.snapshot = Some(given.clone().into());
    }
    let target = Incarnation {
        generation: step.generation,
        id: match step.id.as_deref() {
            Some("@") => remembered.id.clone(),
            other => other.map(str::to_string),
        },
        restored_from: step
            .restored_from
            .then(|| remembered.snapshot.clone())
            .flatten()
            .map(|snapshot| forged(snapshot, &step.forge)),
    };
    let mut remember_state = |result: Result<VmState, VmError>| {
        if let Ok(found) = &result {
            remembered.id = Some(found.id.clone());
        }
        outcome(result, state)
    };
    match step.call.as_str() {
        "probe" => outcome(
            microsandbox::probe(),
            |readiness| json!({ "ready": readiness.ready, "reason": readiness.reason }),
        ),
        "name" => outcome(microsandbox::name(&reference, step.generation), |name| {
            json!(name)
        }),
        "create" => remember_state(microsandbox::create(&reference)),
        "inspect" => remember_state(microsandbox::inspect(&reference, &target)),
        "resume" => remember_state(microsandbox::resume(&reference, &target)),
        "restore" => remember_state(microsandbox::restore(&reference, &target)),
        "exec" => {
            let command = VmExec {
                args: step.args.clone(),
                working_dir: step.working_dir.clone(),
                stdin: step.stdin.clone().map(String::into_bytes),
                as_root: step.as_root,
                output_limit_bytes: step.output_limit.unwrap_or(4096),
            };
            outcome(microsandbox::exec(&reference, &target, &command), |out| {
                json!({
                    "stdout": String::from_utf8_lossy(&out.stdout),
                    "stderr": String::from_utf8_lossy(&out.stderr),
                    "exit_code": out.exit_code,
                })
            })
        }
        "mark-bootstrapped" => {
            outcome(microsandbox::mark_bootstrapped(&reference, &target), |()| {
                Value::Null
            })
        }
        "pause" => outcome(microsandbox::pause(&reference, &target), |()| Value::Null),
        "remove" => outcome(microsandbox::remove(&reference, &target), |()| Value::Null),
        "capture" | "find-snapshot" => {
            let result = if step.call == "capture" {
                microsandbox::capture(&reference, &target, &step.operation_id)
            } else {
                microsandbox::find_snapshot(&reference, &target, &step.operation_id)
            };
            if let Ok(found) = &result {
                remembered.snapshot = Some(found.clone());
            }
            outcome(result, snapshot)
        }
        "delete-snapshot" => match remembered.snapshot.clone() {
            Some(found) => outcome(
                microsandbox::delete_snapshot(&reference, &forged(found, &step.forge)),
                |()| Value::Null,
            ),
            None => json!({ "error": "no-snapshot-remembered" }),
        },
        "metrics" => outcome(microsandbox::metrics(&reference, &target), |sample| {
            json!({
                "id": sample.id,
                "name": sample.name,
                "observed_at_ms": sample.observed_at_ms,
                "uptime_ms": sample.uptime_ms,
                "vcpu_time_ns": sample.vcpu_time_ns,
                "memory_bytes": sample.memory_bytes,
                "memory_limit_bytes": sample.memory_limit_bytes,
                "vcpus": sample.vcpus,
            })
        }),
        _ => json!({ "error": "unknown-step" }),
    }
}
