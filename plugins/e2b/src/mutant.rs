//! The contract suite's mutants of this adapter (see `Cargo.toml`): each
//! feature breaks one rule where the adapter keeps it, and
//! `contract-suite/tests/suite.rs` names the case that catches it. Without
//! a feature every function here hands the real answer on unchanged.

use oac_provider_sdk::capability::http::{self, HttpError, Request};
use oac_provider_sdk::prelude::*;

/// `replay-create`: forgets an attempt whose outcome is unknown and sends
/// it again.
pub fn after_create(answer: Result<Info, Failure>, request: &Bootstrap) -> Result<Info, Failure> {
    match answer {
        Err(Failure {
            error: Error::ComputeUnconfirmed,
            ..
        }) if cfg!(feature = "mutant-replay-create") => {
            for key in ["create_pending", "sandbox", "create_settled"] {
                let _ = receipts::remove(key);
            }
            crate::provider::create(request)
        }
        other => other,
    }
}

/// `kill-without-proof`: answers settled absence whatever Kill could prove.
pub fn after_kill(answer: Result<Info, Failure>, allocation: Reference) -> Result<Info, Failure> {
    match answer {
        Err(_) if cfg!(feature = "mutant-kill-without-proof") => Ok(Info::absent(allocation, true)),
        other => other,
    }
}

/// `mutate-twice`: every mutation is sent once more before the one whose
/// answer counts, each answer checked (a replay hidden in the legitimate
/// sequence).
pub fn before_mutation(request: &Request) -> Result<(), HttpError> {
    if cfg!(feature = "mutant-mutate-twice") {
        http::send(request)?;
    }
    Ok(())
}
