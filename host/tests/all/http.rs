//! The `http` capability reaches only the kind's allowlisted origins, never
//! follows a redirect, and sends nothing for a denied request.

use crate::support::*;
use sandbox_host::host::Connect;
use sandbox_host::registry::Grants;
use sandbox_host::types::{Error, Reference};
use sandbox_host::{Budget, Registration};
use serde_json::json;
use std::sync::{Arc, Mutex};

/// A loopback HTTP server recording request paths; `/redirect` answers 302
/// to `/target`.
async fn server() -> (String, Arc<Mutex<Vec<String>>>) {
    use axum::response::IntoResponse;
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let recorded = seen.clone();
    let handler = move |request: axum::extract::Request| {
        let recorded = recorded.clone();
        async move {
            let path = request.uri().path().to_string();
            recorded.lock().expect("lock").push(path.clone());
            if path == "/redirect" {
                (axum::http::StatusCode::FOUND, [("location", "/target")], "").into_response()
            } else {
                (axum::http::StatusCode::OK, "hello").into_response()
            }
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, axum::Router::new().fallback(handler)).await;
    });
    (origin, seen)
}

async fn get(allowed: &str, url: &str) -> Result<sandbox_host::types::Info, Error> {
    let registration = Registration {
        grants: Grants {
            docker: false,
            http_origins: vec![allowed.to_string()],
            receipts: false,
        },
        ..steerable("fetcher")
    };
    let host = load_one(
        registration,
        binding(None, json!({ "action": "http-get", "url": url })),
        Connect::Capabilities,
    )
    .await
    .expect("host loads");
    let allocation = Reference {
        tenant_id: "t".into(),
        environment_id: "e".into(),
        allocation_id: "a".into(),
    };
    host.kind("fetcher")
        .expect("a loaded kind")
        .get_info(allocation, Budget::from_millis(10_000).expect("budget"))
        .await
}

#[tokio::test]
async fn an_allowlisted_origin_is_reached() {
    let (origin, seen) = server().await;
    let info = get(&origin, &format!("{origin}/hello"))
        .await
        .expect("request succeeds");
    assert_eq!(info.provider_id.as_deref(), Some("200"));
    assert_eq!(*seen.lock().expect("lock"), vec!["/hello".to_string()]);
}

#[tokio::test]
async fn an_origin_off_the_list_is_denied_before_any_request() {
    let (origin, seen) = server().await;
    let (other, other_seen) = server().await;
    assert_eq!(
        get(&origin, &format!("{other}/steal")).await,
        Err(Error::Invalid),
        "denied"
    );
    assert!(seen.lock().expect("lock").is_empty());
    assert!(
        other_seen.lock().expect("lock").is_empty(),
        "the off-list origin received a request"
    );
}

#[tokio::test]
async fn redirects_are_returned_not_followed() {
    let (origin, seen) = server().await;
    let info = get(&origin, &format!("{origin}/redirect"))
        .await
        .expect("response");
    assert_eq!(info.provider_id.as_deref(), Some("302"));
    assert_eq!(*seen.lock().expect("lock"), vec!["/redirect".to_string()]);
}

/// A batch observation only reads: a POST from it is denied before any
/// request, while the same POST from a single observation is sent.
#[tokio::test]
async fn a_batch_observation_sends_only_reads() {
    use sandbox_host::types::Target;
    let (origin, seen) = server().await;
    let registration = Registration {
        grants: Grants {
            docker: false,
            http_origins: vec![origin.clone()],
            receipts: false,
        },
        ..steerable("observer")
    };
    let steering = json!({ "declaration": "observing", "action": "http-post",
                           "url": format!("{origin}/change") });
    let host = load_one(registration, binding(None, steering), Connect::Capabilities)
        .await
        .expect("host loads");
    let kind = host.kind("observer").expect("a loaded kind");
    let target = Target {
        reference: Reference {
            tenant_id: "t".into(),
            environment_id: "e".into(),
            allocation_id: "a".into(),
        },
        provider_id: None,
    };
    let budget = Budget::from_millis(10_000).expect("budget");
    assert_eq!(
        kind.observe_batch(vec![target.clone()], budget)
            .await
            .map(|answers| answers
                .into_iter()
                .map(|a| a.map(|_| ()))
                .collect::<Vec<_>>()),
        Ok(vec![Err(Error::Invalid)])
    );
    assert!(seen.lock().expect("lock").is_empty(), "nothing sent");
    assert!(kind.observe(target, budget).await.is_ok());
    assert_eq!(*seen.lock().expect("lock"), vec!["/change".to_string()]);
}
