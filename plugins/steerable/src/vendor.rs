//! Steering `vendor`: the lifecycle of an allocation as one sandbox of the
//! contract suite's fake vendor API, reached over the `http` capability,
//! so the suite's fault matrix can exercise an HTTP adapter. Ownership is
//! the sandbox's metadata (installation and reference). With `replay`, a
//! Create whose POST went unconfirmed is sent again: the mistake the suite
//! must catch.

use oac_provider_sdk::prelude::*;
use serde_json::{Value, json};

/// One sandbox of the allocation, as listed.
struct Sandbox {
    id: String,
}

pub fn request(method: http::Method, url: String, body: Option<Value>) -> http::Request {
    let mut request = http::Request::new(method, url);
    if let Some(body) = body {
        request.headers = vec![("content-type".into(), "application/json".into())];
        request.body = body.to_string().into();
    }
    request
}

/// The metadata that makes a sandbox `allocation`'s incarnation `name`.
pub fn metadata(allocation: &Reference, name: &str) -> Value {
    json!({
        "installation": context::installation_id(),
        "tenant": allocation.tenant_id,
        "environment": allocation.environment_id,
        "allocation": allocation.allocation_id,
        "name": name,
    })
}

/// True when a listed sandbox's metadata is `allocation`'s.
pub fn is_owned(found: &Value, allocation: &Reference) -> bool {
    let metadata = &found["metadata"];
    metadata["installation"] == context::installation_id().as_str()
        && metadata["tenant"] == allocation.tenant_id.as_str()
        && metadata["environment"] == allocation.environment_id.as_str()
}

fn unconfirmed(_: http::HttpError) -> Error {
    Error::ComputeUnconfirmed
}

/// The sandbox of `allocation`: `None` when absent, `ownership` when the
/// sandbox listed for it is someone else's.
fn observe(base: &str, allocation: &Reference) -> Result<Option<Sandbox>, Error> {
    let url = format!("{base}/sandboxes?allocation={}", allocation.allocation_id);
    let response = http::send(&request(http::Method::Get, url, None)).map_err(unconfirmed)?;
    if response.status != 200 {
        return Err(Error::ComputeUnconfirmed);
    }
    let listed: Vec<Value> =
        serde_json::from_slice(&response.body).map_err(|_| Error::ComputeUnconfirmed)?;
    let Some(found) = listed.into_iter().next() else {
        return Ok(None);
    };
    if !is_owned(&found, allocation) {
        return Err(Error::Ownership);
    }
    let id = found["id"]
        .as_str()
        .ok_or(Error::ComputeUnconfirmed)?
        .to_string();
    Ok(Some(Sandbox { id }))
}

/// A running sandbox; `settled` only in Create's own success.
fn running(allocation: Reference, id: String, settled: bool) -> Info {
    Info {
        reference: allocation,
        provider_id: Some(id),
        state: LifecycleState::Running,
        bootstrap_complete: true,
        create_settled: settled,
    }
}

/// Observe, refuse an existing one, create once (twice with `replay`).
pub fn create(base: &str, replay: bool, allocation: Reference) -> Result<Info, Failure> {
    if let Some(existing) = observe(base, &allocation)? {
        return Err(Failure {
            error: Error::Exists,
            info: Some(running(allocation, existing.id, false)),
        });
    }
    let metadata = metadata(&allocation, &crate::checkpoint::name(&allocation, 0));
    let body = json!({ "metadata": metadata });
    let post = || {
        http::send(&request(
            http::Method::Post,
            format!("{base}/sandboxes"),
            Some(body.clone()),
        ))
    };
    let response = match post() {
        Err(http::HttpError::Unconfirmed) if replay => post(),
        other => other,
    }
    .map_err(unconfirmed)?;
    if response.status != 201 {
        return Err(Error::ComputeUnconfirmed.into());
    }
    let created: Value =
        serde_json::from_slice(&response.body).map_err(|_| Error::ComputeUnconfirmed)?;
    let id = created["id"].as_str().ok_or(Error::ComputeUnconfirmed)?;
    Ok(running(allocation, id.to_string(), true))
}

/// The allocation's sandbox, observed.
pub fn get_info(base: &str, allocation: Reference) -> Result<Info, Error> {
    match observe(base, &allocation)? {
        Some(sandbox) => Ok(running(allocation, sandbox.id, false)),
        None => Err(Error::NotFound),
    }
}

/// Delete the allocation's sandbox (after checking it is ours) and confirm.
pub fn kill(base: &str, allocation: Reference) -> Result<Info, Failure> {
    if let Some(sandbox) = observe(base, &allocation)? {
        let url = format!("{base}/sandboxes/{}", sandbox.id);
        let response =
            http::send(&request(http::Method::Delete, url, None)).map_err(unconfirmed)?;
        if !matches!(response.status, 204 | 404) {
            return Err(Error::ComputeUnconfirmed.into());
        }
    }
    match observe(base, &allocation)? {
        None => Ok(Info {
            reference: allocation,
            provider_id: None,
            state: LifecycleState::Absent,
            bootstrap_complete: false,
            create_settled: false,
        }),
        Some(_) => Err(Error::ComputeUnconfirmed.into()),
    }
}
