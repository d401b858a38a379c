//! The two records between an adapter and the Runtime daemon's image, the
//! same on every kind: the *bootstrap record* the adapter hands the
//! image's init on stdin (never in arguments, environment or a file the
//! adapter writes itself: it carries the daemon's credential), and the
//! *ready record* the init writes once done, naming exactly the allocation
//! it bootstrapped, which GetInfo reads back before it reports
//! `bootstrap-complete`.

use crate::ownership::Ownership;

/// Where an image's init writes the ready record (the convention of the
/// project's images).
pub const READY_RECORD: &str = "/run/oac/ready.json";
use crate::types::Bootstrap;

/// The bootstrap record of `request`, as JSON bytes for the init's stdin.
pub fn record(request: &Bootstrap) -> Vec<u8> {
    serde_json::json!({
        "version": 1,
        "core_url": request.core_url,
        "daemon_credential": request.daemon_credential,
        "device_id": request.device_id,
        "harness": request.harness,
    })
    .to_string()
    .into_bytes()
}

/// The ready record the init writes for `owner`'s allocation.
pub fn ready_record(owner: &Ownership) -> serde_json::Value {
    serde_json::json!({
        "installation": owner.installation,
        "tenant": owner.reference.tenant_id,
        "environment": owner.reference.environment_id,
        "allocation": owner.reference.allocation_id,
    })
}

/// True when `bytes` (the file the init wrote) is exactly `owner`'s ready
/// record; anything else names another allocation.
pub fn is_ready_record(bytes: &[u8], owner: &Ownership) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .is_ok_and(|record| record == ready_record(owner))
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::testing::{Mock, reference};

    #[test]
    fn only_the_record_naming_exactly_this_allocation_is_ready() {
        let (owner, _) = Mock::new("inst", "{}").run(|| Ownership::of(&reference()));
        let record = ready_record(&owner).to_string();
        assert!(is_ready_record(record.as_bytes(), &owner));
        let other = record.replace("\"a\"", "\"b\"");
        assert!(!is_ready_record(other.as_bytes(), &owner));
        let foreign = record.replace("inst", "other");
        assert!(!is_ready_record(foreign.as_bytes(), &owner));
        assert!(!is_ready_record(b"", &owner));
        assert!(!is_ready_record(b"{}", &owner));
    }
}
