//! The endpoint rule against its case table, `cases/endpoint.json` (the
//! E2B adapter reads the same table).

use oac_contract::endpoint::{EndpointError, resolve};

fn code(error: EndpointError) -> &'static str {
    match error {
        EndpointError::Incomplete => "incomplete",
        EndpointError::ApiUrl => "api_url",
        EndpointError::Domain => "domain",
        EndpointError::ApiUrlOutsideDomain => "api_url_outside_domain",
    }
}

#[test]
fn every_endpoint_case_of_the_table_holds() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/cases/endpoint.json"))
        .expect("the case table");
    let cases: Vec<serde_json::Value> = serde_json::from_str(&text).expect("JSON");
    assert!(cases.len() >= 29, "at least 29 endpoint cases");
    let mut failures = Vec::new();
    for case in &cases {
        let text = |key: &str| case[key].as_str().expect("a string field");
        let got = match resolve(
            text("api_url"),
            text("domain"),
            "https://api.e2b.app",
            "e2b.app",
        ) {
            Ok((api_url, domain)) => serde_json::json!({"ok": [api_url, domain]}),
            Err(error) => serde_json::json!({"error": code(error)}),
        };
        if got != case["expect"] {
            failures.push(format!(
                "{}: got {got}, want {}",
                text("case"),
                case["expect"]
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
