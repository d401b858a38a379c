//! The contract suite's mutants of this adapter (see `Cargo.toml`): each
//! feature breaks one rule, and `contract-suite/tests/suite.rs` names the
//! case that catches it. Without a feature every item here is the
//! adapter's own behaviour.

use crate::Api;
use oac_provider_sdk::capability::http::{HttpError, Method, Response};
use oac_provider_sdk::prelude::*;

/// Kill answers settled absence when it finds nothing, without proof.
pub const KILL_WITHOUT_PROOF: bool = cfg!(feature = "mutant-kill-without-proof");

/// Kill's answer when nothing proves the allocation's end: unknown (the
/// mutant claims settled absence).
#[allow(clippy::result_large_err)] // `Failure` is the contract's shape
pub fn without_proof(reference: Reference) -> Result<Info, Failure> {
    if KILL_WITHOUT_PROOF {
        return Ok(Info::absent(reference, true));
    }
    Err(Error::ComputeUnconfirmed.into())
}
/// Kill deletes a box whose labels are someone else's.
pub const DELETE_FOREIGN: bool = cfg!(feature = "mutant-delete-foreign");

/// Sends the create once (the mutant sends it again after an unknown
/// outcome).
pub fn create(api: &Api, body: serde_json::Value) -> Result<Response, HttpError> {
    let sent = api.send(Method::Post, "/v1/boxes", Some(body.clone()));
    if cfg!(feature = "mutant-replay-create") && sent == Err(HttpError::Unconfirmed) {
        return api.send(Method::Post, "/v1/boxes", Some(body));
    }
    sent
}

/// Sends the deletion once (the mutant sends it twice, checking both).
pub fn delete(api: &Api, id: &str) -> Result<Response, HttpError> {
    let path = format!("/v1/boxes/{id}");
    if cfg!(feature = "mutant-delete-twice") {
        api.send(Method::Delete, &path, None)?;
    }
    api.send(Method::Delete, &path, None)
}

/// The mutant logs the daemon credential.
pub fn leak_credential(request: &Bootstrap) {
    if cfg!(feature = "mutant-leak-credential") {
        let fields = [("credential".to_string(), request.daemon_credential.clone())];
        log::emit(log::Level::Info, "bootstrap_received", &fields);
    }
}
