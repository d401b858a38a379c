//! The adapter's operations natively, against scripted answers of the
//! Example Cloud API (the SDK's mock host): what a vendor tests before the
//! contract suite judges the component in the real host.

use super::*;
use oac_provider_sdk::testing::{Mock, reference};

const CONFIGURATION_JSON: &str = r#"{"api_url":"https://api.example-cloud.dev"}"#;

fn bootstrap() -> Bootstrap {
    Bootstrap {
        reference: reference(),
        session_id: "s".into(),
        device_id: "d".into(),
        core_url: "https://core.example".into(),
        daemon_credential: "secret".into(),
        harness: "h".into(),
        network_access: NetworkAccess::Disabled,
        allowed_domains: Vec::new(),
    }
}

#[test]
fn a_create_whose_answer_is_lost_is_unknown_and_sent_once() {
    let mock = Mock::new("inst", CONFIGURATION_JSON).respond(|_| Err(HttpError::Unconfirmed));
    let (answer, mock) = mock.run(|| Example::create(bootstrap()));
    assert_eq!(
        answer.map_err(|f| (f.error, f.info)),
        Err((Error::ComputeUnconfirmed, None))
    );
    assert_eq!(mock.requests.len(), 1, "never replayed");
    // The attempt stays recorded: the next Create looks before it creates.
    assert!(mock.receipts.contains_key(settlement::PENDING));
}

#[test]
fn a_definitely_refused_create_is_settled_absence() {
    let mock = Mock::new("inst", CONFIGURATION_JSON).respond(|_| Ok(Response::json(429, "{}")));
    let (answer, mock) = mock.run(|| Example::create(bootstrap()));
    let failure = answer.expect_err("refused");
    let info = failure.info.expect("settled absence");
    assert!(info.create_settled && info.state == LifecycleState::Absent);
    // GetInfo then proves it without asking the vendor.
    let (info, after) = mock.run(|| Example::get_info(bootstrap().reference));
    assert!(info.is_ok_and(|info| info.create_settled));
    assert_eq!(after.requests.len(), 1, "only the refused create");
}

#[test]
fn the_credential_travels_only_as_the_header_the_host_fills_in() {
    let mock = Mock::new("inst", CONFIGURATION_JSON).respond(|_| Err(HttpError::Unconfirmed));
    let (_, mock) = mock.run(|| Example::create(bootstrap()));
    let request = &mock.requests[0];
    assert_eq!(request.url, "https://api.example-cloud.dev/v1/boxes");
    assert!(
        request
            .credential
            .as_ref()
            .is_some_and(|c| c.field.as_deref() == Some("api_key"))
    );
    assert!(!String::from_utf8_lossy(&request.body.to_vec()).contains("secret"));
}
