//! The node protocol's request decoder (`POST /call` bodies): any bytes
//! decode or are refused without a panic, and what decodes survives a
//! round trip unchanged (no field is lost or invented between Core's
//! encoder and the node's decoder).
#![no_main]

use libfuzzer_sys::fuzz_target;
use oac_provider_api::Budget;
use oac_provider_api::wire::Request;

fuzz_target!(|bytes: &[u8]| {
    let Ok(request) = serde_json::from_slice::<Request>(bytes) else {
        return;
    };
    let _ = Budget::from_millis(request.timeout_ms);
    let encoded = serde_json::to_vec(&request).expect("a decoded request encodes");
    let again: Request = serde_json::from_slice(&encoded).expect("an encoded request decodes");
    assert_eq!(again, request);
});
