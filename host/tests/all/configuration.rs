//! Configuration, discovery and credentials (contract 0.2): the rules the
//! host checks at load, the node rule before every call, the credential as
//! a handle the host fills into HTTP requests (a candidate's for
//! verification and discovery), and the call fence around a replacement.

use crate::support::*;
use sandbox_host::host::Connect;
use sandbox_host::provider::{ConfigurationProvider, SandboxProvider};
use sandbox_host::registry::{Grants, Mode};
use sandbox_host::types::{Configuration, Error, Reference, StoredConfiguration};
use sandbox_host::{Budget, Host, Registration};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn budget() -> Budget {
    Budget::from_millis(10_000).expect("budget")
}

fn reference() -> Reference {
    Reference {
        tenant_id: "t".into(),
        environment_id: "e".into(),
        allocation_id: "a".into(),
    }
}

/// A loopback server recording the `x-api-key` of every request; `/slow`
/// answers after 600 ms, and records that it did.
async fn server() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let recorded = seen.clone();
    let handler = move |request: axum::extract::Request| {
        let recorded = recorded.clone();
        async move {
            let key = request
                .headers()
                .get("x-api-key")
                .and_then(|value| value.to_str().ok())
                .unwrap_or("-")
                .to_string();
            recorded.lock().expect("lock").push(key.clone());
            if request.uri().path() == "/slow" {
                tokio::time::sleep(Duration::from_millis(600)).await;
                recorded
                    .lock()
                    .expect("lock")
                    .push(format!("{key} answered"));
            }
            "ok"
        }
    };
    let origin = serve_on_loopback(axum::Router::new().fallback(handler)).await;
    (origin, seen)
}

/// A steerable kind of `mode` reaching `origin`, with `credential`.
async fn load(
    mode: Mode,
    origin: &str,
    steering: serde_json::Value,
    credential: Option<&str>,
) -> Result<Host, sandbox_host::HostError> {
    let registration = Registration {
        mode,
        grants: Grants {
            docker: false,
            http_origins: vec![origin.to_string()],
            credential_origins: vec![origin.to_string()],
            receipts: false,
            http_endpoint: None,
        },
        ..steerable("configured")
    };
    let mut binding = binding(None, steering);
    binding.credential = credential.map(Into::into);
    load_one(registration, binding, Connect::Capabilities).await
}

#[tokio::test]
async fn configuration_rules_are_checked_at_load() {
    for (declaration, mode, expected) in [
        (
            "node-with-credential",
            Mode::Nodes,
            "supports no credential replacement",
        ),
        ("node-credential", Mode::Nodes, "supports no credential"),
        (
            "discovery-mismatch",
            Mode::Direct,
            "disagree on configuration discovery",
        ),
    ] {
        let loaded = load(
            mode,
            "http://127.0.0.1:9",
            json!({ "declaration": declaration }),
            None,
        )
        .await;
        let error = loaded.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains(expected), "{declaration}: {error:?}");
    }
}

#[tokio::test]
async fn a_node_kinds_configuration_is_the_empty_object_without_credential() {
    let host = load(Mode::Nodes, "http://127.0.0.1:9", json!({}), None)
        .await
        .expect("loads");
    let kind = host.kind("configured").expect("kind");
    assert_eq!(
        kind.decode_input("{}".into(), None, budget()).await,
        Ok(Configuration::without_credential("{}"))
    );
    for (public, credential) in [(r#"{"image":"x"}"#, None), ("{}", Some("secret"))] {
        assert_eq!(
            kind.decode_input(public.into(), credential.map(Into::into), budget())
                .await,
            Err(Error::Invalid),
            "{public} {credential:?}"
        );
    }
    let with_credential = Configuration {
        public: "{}".into(),
        credential: Some("secret".into()),
    };
    assert_eq!(
        kind.encode(with_credential, budget()).await,
        Err(Error::Invalid)
    );
}

#[tokio::test]
async fn a_direct_kinds_credential_travels_apart_from_its_public_object() {
    let host = load(Mode::Direct, "http://127.0.0.1:9", json!({}), None)
        .await
        .expect("loads");
    let kind = host.kind("configured").expect("kind");
    let decoded = kind
        .decode_input(
            r#"{"template":"base"}"#.into(),
            Some("secret".into()),
            budget(),
        )
        .await
        .expect("decoded");
    let stored = kind
        .encode(decoded.clone(), budget())
        .await
        .expect("encoded");
    assert_eq!(
        stored,
        StoredConfiguration {
            public: r#"{"template":"base"}"#.into(),
            metadata: "{}".into(),
            secret: Some(b"secret".to_vec()),
        }
    );
    assert!(!format!("{stored:?}{decoded:?}").contains("secret\""));
    assert_eq!(kind.decode(stored, budget()).await, Ok(decoded));
}

#[tokio::test]
async fn an_answer_showing_the_credential_is_refused() {
    let host = load(
        Mode::Direct,
        "http://127.0.0.1:9",
        json!({ "action": "leak-secret" }),
        None,
    )
    .await
    .expect("loads");
    let kind = host.kind("configured").expect("kind");
    let unknown = Err(Error::ComputeUnconfirmed);
    assert_eq!(
        kind.decode_input("{}".into(), Some("s3cret".into()), budget())
            .await,
        unknown
    );
    let configuration = Configuration {
        public: "{}".into(),
        credential: Some("s3cret".into()),
    };
    assert_eq!(
        kind.encode(configuration, budget()).await.map(drop),
        unknown.map(drop)
    );
    // Without a credential there is nothing to leak.
    assert!(kind.decode_input("{}".into(), None, budget()).await.is_ok());
}

#[tokio::test]
async fn a_candidate_credential_reaches_the_vendor_as_a_handle() {
    let (origin, seen) = server().await;
    let steering = json!({
        "declaration": "verifying",
        "action": "http-get",
        "url": format!("{origin}/check"),
        "credential_header": "x-api-key",
    });
    let host = load(Mode::Direct, &origin, steering, Some("installation-key"))
        .await
        .expect("loads");
    let kind = host.kind("configured").expect("kind");
    let candidate = Configuration {
        public: "{}".into(),
        credential: Some("candidate-key".into()),
    };
    kind.verify_credential(candidate.clone(), vec![reference()], budget())
        .await
        .expect("verified");
    let resolved = kind
        .discover_selection(candidate.clone(), budget())
        .await
        .expect("resolved");
    assert_eq!(resolved, candidate);
    kind.get_info(reference(), budget())
        .await
        .expect("get-info");
    assert_eq!(
        *seen.lock().expect("lock"),
        vec!["candidate-key", "candidate-key", "installation-key"],
        "verification and discovery carry the candidate, other calls the installation's"
    );
}

/// Verification and selection discovery may only read: a component that
/// sends a POST from them is refused before anything is sent.
#[tokio::test]
async fn verification_and_discovery_may_only_read() {
    let (origin, seen) = server().await;
    let steering = json!({
        "declaration": "verifying",
        "action": "http-post",
        "url": format!("{origin}/mutate"),
        "credential_header": "x-api-key",
    });
    let host = load(Mode::Direct, &origin, steering, Some("installation-key"))
        .await
        .expect("loads");
    let kind = host.kind("configured").expect("kind");
    let candidate = Configuration {
        public: "{}".into(),
        credential: Some("candidate-key".into()),
    };
    assert_eq!(
        kind.verify_credential(candidate.clone(), vec![reference()], budget())
            .await,
        Err(Error::Invalid)
    );
    assert_eq!(
        kind.discover_selection(candidate, budget()).await,
        Err(Error::Invalid)
    );
    assert!(seen.lock().expect("lock").is_empty(), "nothing was sent");
}

/// A replacement waits for the call in flight (whose caller left) and
/// never interrupts it; a call that arrives meanwhile waits, then carries
/// the new credential.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replacing_the_credential_waits_for_calls_in_flight() {
    let (origin, seen) = server().await;
    let steering = json!({
        "action": "http-get",
        "url": format!("{origin}/slow"),
        "credential_header": "x-api-key",
    });
    let host = Arc::new(
        load(Mode::Direct, &origin, steering, Some("old-key"))
            .await
            .expect("loads"),
    );
    let kind = || host.kind("configured").expect("kind");
    let left = tokio::time::timeout(
        Duration::from_millis(200),
        kind().get_info(reference(), budget()),
    )
    .await;
    assert!(left.is_err(), "the first caller left mid-call");
    let replacing = tokio::spawn({
        let host = host.clone();
        async move {
            host.kind("configured")
                .expect("kind")
                .replace_credential(Some("new-key".into()))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let later = tokio::spawn({
        let host = host.clone();
        async move {
            host.kind("configured")
                .expect("kind")
                .get_info(reference(), budget())
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        !replacing.is_finished(),
        "the replacement waits for the call in flight"
    );
    assert!(!later.is_finished(), "a new call waits for the replacement");
    replacing.await.expect("replaced");
    let answer = later.await.expect("task").expect("the later call runs");
    assert_eq!(answer.provider_id.as_deref(), Some("200"));
    assert_eq!(
        *seen.lock().expect("lock"),
        vec!["old-key", "old-key answered", "new-key", "new-key answered"],
        "the call in flight ran to its answer before the new credential was used"
    );
}
