//! Declaration `checkpoint` with action `vendor`: the nine checkpoint
//! operations against the fake vendor API's sandboxes and snapshots, so the
//! host's checkpoint policing and the suite's `checkpoint` clause run
//! against real Wasm. Incarnation `g` of an allocation is the sandbox named
//! `<allocation>-g<g>`; Create makes generation 0.
//!
//! Steering `lie` makes an answer claim what it must not (`operation`,
//! `source`, `not-stopped`, `name`, `provenance`); `cold_start` makes
//! `resume-compute` start a stopped incarnation — the mistake the suite's
//! `checkpoint` clause must catch.

use crate::vendor::{is_owned, metadata, request};
use oac_provider_sdk::prelude::*;
use serde_json::{Value, json};

/// The deterministic name of incarnation `generation`.
pub fn name(allocation: &Reference, generation: u64) -> String {
    format!("{}-g{generation}", allocation.allocation_id)
}

fn unconfirmed(_: http::HttpError) -> Error {
    Error::ComputeUnconfirmed
}

fn send(method: http::Method, url: String, body: Option<Value>) -> Result<http::Response, Error> {
    http::send(&request(method, url, body)).map_err(unconfirmed)
}

fn listed(response: http::Response) -> Result<Vec<Value>, Error> {
    if response.status != 200 {
        return Err(Error::ComputeUnconfirmed);
    }
    serde_json::from_slice(&response.body).map_err(|_| Error::ComputeUnconfirmed)
}

/// The sandbox of `incarnation`: `not-found` when absent, `ownership` when
/// it is someone else's or another incarnation (another native id).
fn sandbox(base: &str, allocation: &Reference, incarnation: &Compute) -> Result<Value, Error> {
    let url = format!(
        "{base}/sandboxes?allocation={}&name={}",
        allocation.allocation_id, incarnation.name
    );
    let found = listed(send(http::Method::Get, url, None)?)?
        .into_iter()
        .next()
        .ok_or(Error::NotFound)?;
    let id = found["id"].as_str().unwrap_or_default();
    if !is_owned(&found, allocation) || (!incarnation.id.is_empty() && incarnation.id != id) {
        return Err(Error::Ownership);
    }
    Ok(found)
}

/// The snapshot operation `operation` captured from `source_id`, if any.
fn captured(base: &str, operation: &str, source_id: &str) -> Result<Option<Value>, Error> {
    let url = format!("{base}/snapshots?operation={operation}");
    Ok(listed(send(http::Method::Get, url, None)?)?
        .into_iter()
        .find(|snapshot| snapshot["source_id"] == source_id))
}

fn identity(request: &SuspendRequest, source: &Compute, found: &Value) -> SnapshotIdentity {
    let id = found["id"].as_str().unwrap_or_default().to_string();
    SnapshotIdentity {
        reference: request.reference.clone(),
        digest: found["digest"].as_str().unwrap_or_default().into(),
        checkpoint_id: id.clone(),
        checkpoint_root: "fake-vendor://snapshots".into(),
        operation_id: request.operation_id.clone(),
        source_generation: source.generation,
        source_name: source.name.clone(),
        source_id: source.id.clone(),
        id,
    }
}

/// What `found` (the sandbox of `incarnation`) is.
fn state_of(
    incarnation: &Compute,
    found: &Value,
    snapshot: Option<SnapshotIdentity>,
) -> ComputeState {
    let status = match found["status"].as_str() {
        Some("running") => ComputeStatus::Running,
        Some("paused") => ComputeStatus::Paused,
        Some("stopped") if snapshot.is_some() => ComputeStatus::Suspended,
        _ => ComputeStatus::Stopped,
    };
    ComputeState {
        compute: Compute {
            id: found["id"].as_str().unwrap_or_default().into(),
            ..incarnation.clone()
        },
        bootstrap_complete: matches!(status, ComputeStatus::Running | ComputeStatus::Paused),
        source_stopped: found["status"] == "stopped",
        status,
        snapshot,
    }
}

/// Applies the steered lie to an answer.
fn lie(lie: &str, mut state: ComputeState) -> ComputeState {
    match lie {
        "operation" | "source" => {
            if let Some(snapshot) = &mut state.snapshot {
                match lie {
                    "operation" => snapshot.operation_id.push_str("-other"),
                    _ => snapshot.source_id = "another-incarnation".into(),
                }
            }
        }
        "not-stopped" => state.source_stopped = false,
        "name" => state.compute.name.push_str("-other"),
        "provenance" => state.compute.restored_from = None,
        _ => {}
    }
    state
}

pub fn initial(allocation: Reference) -> Compute {
    new_compute(allocation, 0, None)
}

pub fn new_compute(
    allocation: Reference,
    generation: u64,
    restored_from: Option<SnapshotIdentity>,
) -> Compute {
    Compute {
        generation,
        name: name(&allocation, generation),
        id: String::new(),
        restored_from,
    }
}

pub fn get_compute(
    base: &str,
    allocation: Reference,
    incarnation: Compute,
    steered_lie: &str,
) -> Result<ComputeState, Error> {
    let found = sandbox(base, &allocation, &incarnation)?;
    Ok(lie(steered_lie, state_of(&incarnation, &found, None)))
}

/// Captures once per operation: a suspend asked again (or observe-only)
/// answers the capture its operation already made, never a new one.
pub fn suspend(
    base: &str,
    request: SuspendRequest,
    steered_lie: &str,
) -> Result<ComputeState, Error> {
    let found = sandbox(base, &request.reference, &request.source)?;
    let source = Compute {
        id: found["id"].as_str().unwrap_or_default().into(),
        ..request.source.clone()
    };
    let earlier = captured(base, &request.operation_id, &source.id)?;
    let capture = match earlier {
        Some(capture) => Some(capture),
        None if request.observe_only => None,
        None => {
            let url = format!("{base}/sandboxes/{}/snapshots", source.id);
            let body = json!({ "operation": request.operation_id });
            let response = send(http::Method::Post, url, Some(body))?;
            if response.status != 201 {
                return Err(Error::ComputeUnconfirmed);
            }
            captured(base, &request.operation_id, &source.id)?
        }
    };
    let found = sandbox(base, &request.reference, &source)?;
    let snapshot = capture.map(|capture| identity(&request, &source, &capture));
    Ok(lie(
        steered_lie,
        state_of(&request.source, &found, snapshot),
    ))
}

/// Makes the target once: a resume asked again (or observe-only) answers
/// the incarnation its operation already made.
pub fn resume(
    base: &str,
    request: ResumeRequest,
    steered_lie: &str,
) -> Result<ComputeState, Error> {
    let found = match sandbox(base, &request.reference, &request.target) {
        Ok(found) => found,
        Err(Error::NotFound) if !request.observe_only => {
            let body = json!({
                "metadata": metadata(&request.reference, &request.target.name),
                "snapshot": request.snapshot.id,
            });
            let response = send(http::Method::Post, format!("{base}/sandboxes"), Some(body))?;
            if response.status != 201 {
                return Err(Error::ComputeUnconfirmed);
            }
            sandbox(base, &request.reference, &request.target)?
        }
        Err(error) => return Err(error),
    };
    Ok(lie(steered_lie, state_of(&request.target, &found, None)))
}

/// Thaws a paused incarnation. A stopped one is left as it is, unless
/// steered to `cold_start` it.
pub fn resume_compute(
    base: &str,
    allocation: Reference,
    incarnation: Compute,
    cold_start: bool,
) -> Result<ComputeState, Error> {
    let found = sandbox(base, &allocation, &incarnation)?;
    let id = found["id"].as_str().unwrap_or_default();
    let action = match found["status"].as_str() {
        Some("paused") => "resume",
        Some("stopped") if cold_start => "start",
        Some("running") => return Ok(state_of(&incarnation, &found, None)),
        _ => return Err(Error::RuntimeNotRunning),
    };
    let response = send(
        http::Method::Post,
        format!("{base}/sandboxes/{id}/{action}"),
        None,
    )?;
    if response.status != 204 {
        return Err(Error::ComputeUnconfirmed);
    }
    let found = sandbox(base, &allocation, &incarnation)?;
    Ok(state_of(&incarnation, &found, None))
}

pub fn kill_compute(base: &str, allocation: Reference, incarnation: Compute) -> Result<(), Error> {
    let found = sandbox(base, &allocation, &incarnation)?;
    let id = found["id"].as_str().unwrap_or_default();
    let response = send(http::Method::Delete, format!("{base}/sandboxes/{id}"), None)?;
    match response.status {
        204 => Ok(()),
        404 => Err(Error::NotFound),
        _ => Err(Error::ComputeUnconfirmed),
    }
}

pub fn delete_snapshot(base: &str, snapshot: SnapshotIdentity) -> Result<(), Error> {
    let found = captured(base, &snapshot.operation_id, &snapshot.source_id)?;
    if found.is_none_or(|found| found["id"] != snapshot.id.as_str()) {
        return Err(Error::NotFound);
    }
    let url = format!("{base}/snapshots/{}", snapshot.id);
    match send(http::Method::Delete, url, None)?.status {
        204 => Ok(()),
        404 => Err(Error::NotFound),
        _ => Err(Error::ComputeUnconfirmed),
    }
}

pub fn run_command_compute(
    base: &str,
    allocation: Reference,
    incarnation: Compute,
    command: Command,
) -> Result<CommandResult, Error> {
    let found = sandbox(base, &allocation, &incarnation)?;
    if found["status"] != "running" {
        return Err(Error::RuntimeNotRunning);
    }
    Ok(CommandResult {
        stdout: command.stdin.unwrap_or_default(),
        stderr: Vec::new(),
        exit_code: 0,
    })
}
