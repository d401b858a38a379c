//! The host's microsandbox helper: reads one request on stdin, performs it
//! with the microsandbox library against the runtime the request names, and
//! writes one response on stdout (`oac-helper-protocol`).
//!
//! It judges nothing the host judges (ownership, the VM policy): it reports
//! what the runtime has, and checks a request's guard on the very handle it
//! acts on. Runtime errors become fixed codes; their text never leaves.
//! Mutations of one allocation take its lock file in the runtime's home
//! first, so two helpers never interleave on it, whatever their callers
//! did.

mod probe;
mod runtime;
mod vm;

use oac_helper_protocol::{
    DecodeError, ErrorCode, Outcome, Request, Response, VERSION, decode_request, encode,
};
use std::io::{Read, Write};

fn main() {
    let outcome = match read_request() {
        Ok(request) => serve(request),
        Err(_) => Outcome::Error {
            code: ErrorCode::Invalid,
        },
    };
    let response = Response {
        version: VERSION,
        outcome,
    };
    // Nothing else is written to stdout; the runtime's own logging is off
    // (the host gives `RUST_LOG=off`).
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(&encode(&response));
    let _ = stdout.flush();
}

fn read_request() -> Result<Request, DecodeError> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(oac_helper_protocol::MAX_REQUEST_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|_| DecodeError::Malformed)?;
    decode_request(&bytes)
}

fn serve(request: Request) -> Outcome {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(_) => {
            return Outcome::Error {
                code: ErrorCode::Unconfirmed,
            };
        }
    };
    runtime.block_on(async move {
        match vm::perform(request).await {
            Ok(outcome) => outcome,
            Err(code) => Outcome::Error { code },
        }
    })
}
