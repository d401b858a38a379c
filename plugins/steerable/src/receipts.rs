//! Receipt actions: each answers its outcome as text (`ok`, `none`, the
//! value read, or the error's name) in the provider id, so the host's
//! tests can see exactly what the `receipts` capability said.
//!
//! `receipt-put`, `receipt-get` and `receipt-remove` act on `receipt_key`
//! (default `create_pending`) with `receipt_value` (default the
//! allocation id) or `receipt_bytes` bytes of `x`. `receipt-then-loop`
//! writes the receipt, logs `steerable_receipt_written` at warn level and
//! spins until the host ends it: a crash test kills the process then.
//! `receipt-settled-absence` reads the receipt and, found or not, answers
//! settled absence: the host accepts the claim only after a read that
//! found one written before the call (with `receipt_value` `forge` it
//! writes the receipt itself first).

use crate::{Steering, spin_forever};
use oac_provider_sdk::prelude::*;

fn error_name(error: receipts::ReceiptsError) -> String {
    use receipts::ReceiptsError::*;
    match error {
        Denied => "denied",
        Invalid => "invalid",
        Full => "full",
        Unavailable => "unavailable",
        Unconfirmed => "unconfirmed",
    }
    .into()
}

fn outcome(result: Result<(), receipts::ReceiptsError>) -> String {
    result.map_or_else(error_name, |()| "ok".into())
}

/// Writes `key`: `ok` or the error's name.
pub(crate) fn put_outcome(key: &str, value: &[u8]) -> String {
    outcome(receipts::put(key, value))
}

/// The steered receipt action's outcome; `None` for other actions.
pub(crate) fn act(steering: &Steering, allocation: &Reference) -> Option<String> {
    let key = steering
        .receipt_key
        .clone()
        .unwrap_or_else(|| "create_pending".into());
    let value = match steering.receipt_bytes {
        Some(bytes) => vec![b'x'; bytes],
        None => steering
            .receipt_value
            .clone()
            .unwrap_or_else(|| allocation.allocation_id.clone())
            .into_bytes(),
    };
    let answer = match steering.action.as_str() {
        "receipt-put" => outcome(receipts::put(&key, &value)),
        "receipt-remove" => outcome(receipts::remove(&key)),
        "receipt-get" => match receipts::get(&key) {
            Ok(Some(value)) => String::from_utf8_lossy(&value).into_owned(),
            Ok(None) => "none".into(),
            Err(error) => error_name(error),
        },
        "receipt-then-loop" => {
            let written = outcome(receipts::put(&key, &value));
            log::emit(
                log::Level::Warn,
                "steerable_receipt_written",
                &[("outcome".into(), written)],
            );
            spin_forever()
        }
        _ => return None,
    };
    Some(answer)
}

/// `receipt-settled-absence`: settled absence after reading the receipt.
pub(crate) fn settled_absence(steering: &Steering, allocation: Reference) -> Info {
    let key = steering
        .receipt_key
        .clone()
        .unwrap_or_else(|| "create_pending".into());
    if steering.receipt_value.as_deref() == Some("forge") {
        // A component forging its own evidence within the call.
        let _ = receipts::put(&key, b"forged");
    }
    let _ = receipts::get(&key);
    Info {
        reference: allocation,
        provider_id: None,
        state: LifecycleState::Absent,
        bootstrap_complete: false,
        create_settled: true,
    }
}
