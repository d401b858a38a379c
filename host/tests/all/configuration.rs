//! Configuration, discovery and credentials (contract 0.2): the rules the
//! host checks at load, the node rule before every call, the credential as
//! a handle the host fills into HTTP requests (a candidate's for
//! verification and discovery), and the call fence around a replacement.

use crate::support::*;
use sandbox_host::host::Connect;
use sandbox_host::provider::{ConfigurationProvider, SandboxProvider};
use sandbox_host::registry::{Grants, Mode};
use sandbox_host::types::{Configuration, Error, StoredConfiguration};
use sandbox_host::{Budget, Host, Kind, Registration};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn budget() -> Budget {
    Budget::from_millis(10_000).expect("budget")
}

/// A loopback server recording the `x-api-key` of every request; `/slow`
/// answers after 600 ms, and records that it did.
async fn server() -> (String, Recorded) {
    recording_server(|request, recorded| async move {
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
        axum::response::IntoResponse::into_response("ok")
    })
    .await
}

/// The credential object of a steerable direct kind, with `key` as its
/// one field, `api_key`.
fn key(key: &str) -> String {
    json!({ "api_key": key }).to_string()
}

/// A steerable kind of `mode` reaching `origin`, with `credential` (its
/// `api_key`); a direct kind's credential is `{"api_key": …}`.
async fn load(
    mode: Mode,
    origin: &str,
    steering: serde_json::Value,
    credential: Option<&str>,
) -> Result<Host, sandbox_host::HostError> {
    let registration = Registration {
        mode,
        grants: http_grants(origin),
        credential_fields: match mode {
            Mode::Direct => vec!["api_key".into()],
            Mode::Nodes => Vec::new(),
        },
        ..steerable("configured")
    };
    let mut binding = binding(None, steering);
    binding.credential = credential.map(key);
    TestHost::one(registration, binding)
        .load(Connect::Capabilities)
        .await
}

/// [`load`] with an origin nothing listens on and no credential, which
/// must load.
async fn load_unreachable(mode: Mode, steering: serde_json::Value) -> Host {
    load(mode, "http://127.0.0.1:9", steering, None)
        .await
        .expect("loads")
}

/// The loaded kind.
fn configured(host: &Host) -> &Kind {
    host.kind("configured").expect("kind")
}

/// Steering for one request `action` to `url` carrying the credential's
/// `api_key` as `x-api-key`.
fn keyed(action: &str, url: String) -> serde_json::Value {
    json!({
        "action": action,
        "url": url,
        "credential_header": "x-api-key",
        "credential_field": "api_key",
    })
}

/// A direct kind declaring verification and discovery, holding
/// `installation-key`, steered to [`keyed`] `action` on `path` of a
/// recording [`server`]: the host and what the server saw.
async fn verifying(action: &str, path: &str) -> (Host, Recorded) {
    let (origin, seen) = server().await;
    let mut steering = keyed(action, format!("{origin}{path}"));
    steering["declaration"] = json!("verifying");
    let host = load(Mode::Direct, &origin, steering, Some("installation-key"))
        .await
        .expect("loads");
    (host, seen)
}

/// A configuration whose credential is a candidate's.
fn candidate() -> Configuration {
    Configuration {
        public: "{}".into(),
        credential: Some(key("candidate-key")),
    }
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
    let host = load_unreachable(Mode::Nodes, json!({})).await;
    let kind = configured(&host);
    assert_eq!(
        kind.decode_input("{}".into(), None, budget()).await,
        Ok(Configuration::without_credential("{}"))
    );
    for (public, credential) in [(r#"{"image":"x"}"#, None), ("{}", Some("secret"))] {
        assert_eq!(
            kind.decode_input(public.into(), credential.map(key), budget())
                .await,
            Err(Error::Invalid),
            "{public} {credential:?}"
        );
    }
    let with_credential = Configuration {
        public: "{}".into(),
        credential: Some(key("secret")),
    };
    assert_eq!(
        kind.encode(with_credential, budget()).await,
        Err(Error::Invalid)
    );
}

#[tokio::test]
async fn a_direct_kinds_credential_travels_apart_from_its_public_object() {
    let host = load_unreachable(Mode::Direct, json!({})).await;
    let kind = configured(&host);
    let decoded = kind
        .decode_input(
            r#"{"template":"base"}"#.into(),
            Some(r#"{ "api_key": "secret" }"#.into()),
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
            secret: Some(br#"{"api_key":"secret"}"#.to_vec()),
        },
        "the host stores the credential's canonical text"
    );
    assert!(!format!("{stored:?}{decoded:?}").contains("secret\""));
    assert_eq!(kind.decode(stored, budget()).await, Ok(decoded));
}

/// A configuration call gets a handle: the credential's field names and
/// lengths, never its value, so even a component that shows everything it
/// was given shows no secret.
#[tokio::test]
async fn a_configuration_call_sees_the_credential_as_a_handle() {
    let host = load_unreachable(Mode::Direct, json!({ "action": "show-credential" })).await;
    let kind = configured(&host);
    let decoded = kind
        .decode_input("{}".into(), Some(key("s3cret-value")), budget())
        .await
        .expect("decoded");
    let shown: serde_json::Value = serde_json::from_str(&decoded.public).expect("JSON");
    assert_eq!(
        shown,
        json!({ "handle": 0, "fields": [{ "name": "api_key", "length": 12 }] })
    );
    assert_eq!(decoded.credential, Some(key("s3cret-value")));
    let stored = kind.encode(decoded, budget()).await.expect("encoded");
    assert!(!stored.metadata.contains("s3cret"), "{}", stored.metadata);
    assert_eq!(stored.secret, Some(key("s3cret-value").into_bytes()));
}

/// The credential is checked against the registration's shape before the
/// component runs: anything else is `invalid`, and nothing is echoed.
#[tokio::test]
async fn a_credential_that_does_not_fit_its_shape_is_invalid() {
    let host = load_unreachable(Mode::Direct, json!({})).await;
    let kind = configured(&host);
    for unfit in [
        "s3cret",
        r#"{"api_key":"k","team":"t"}"#,
        r#"{"token":"k"}"#,
    ] {
        assert_eq!(
            kind.decode_input("{}".into(), Some(unfit.into()), budget())
                .await,
            Err(Error::Invalid),
            "{unfit}"
        );
    }
    let stored = StoredConfiguration {
        public: "{}".into(),
        metadata: "{}".into(),
        secret: Some(b"s3cret".to_vec()),
    };
    assert_eq!(kind.decode(stored, budget()).await, Err(Error::Invalid));
    assert_eq!(
        kind.replace_credential(Some("s3cret".into())).await,
        Err(Error::Invalid)
    );
    let registration = Registration {
        mode: Mode::Direct,
        credential_fields: vec!["api_key".into()],
        grants: Grants::default(),
        ..steerable("configured")
    };
    let mut unfit = binding(None, json!({}));
    unfit.credential = Some("s3cret".into());
    let refused = TestHost::one(registration, unfit)
        .load(Connect::Capabilities)
        .await;
    let error = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        error.contains("kind `configured`: credential is not a JSON object"),
        "{error}"
    );
    assert!(!error.contains("s3cret"));
}

/// A handle the call was never given is no credential: the answer is the
/// unknown outcome, never another credential's value.
#[tokio::test]
async fn an_answer_with_a_forged_handle_is_refused() {
    let host = load_unreachable(Mode::Direct, json!({ "action": "forge-handle" })).await;
    let kind = configured(&host);
    let unknown = Err(Error::ComputeUnconfirmed);
    assert_eq!(
        kind.decode_input("{}".into(), Some(key("k1")), budget())
            .await,
        unknown
    );
    let configuration = Configuration {
        public: "{}".into(),
        credential: Some(key("k1")),
    };
    assert_eq!(
        kind.encode(configuration, budget()).await.map(drop),
        unknown.map(drop)
    );
    // Without a credential there is no handle to forge.
    assert!(kind.decode_input("{}".into(), None, budget()).await.is_ok());
}

#[tokio::test]
async fn a_candidate_credential_reaches_the_vendor_as_a_handle() {
    let (host, seen) = verifying("http-get", "/check").await;
    let kind = configured(&host);
    kind.verify_credential(candidate(), vec![reference()], budget())
        .await
        .expect("verified");
    let resolved = kind
        .discover_selection(candidate(), budget())
        .await
        .expect("resolved");
    assert_eq!(resolved, candidate());
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
    let (host, seen) = verifying("http-post", "/mutate").await;
    let kind = configured(&host);
    assert_eq!(
        kind.verify_credential(candidate(), vec![reference()], budget())
            .await,
        Err(Error::Invalid)
    );
    assert_eq!(
        kind.discover_selection(candidate(), budget()).await,
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
    let steering = keyed("http-get", format!("{origin}/slow"));
    let host = Arc::new(
        load(Mode::Direct, &origin, steering, Some("old-key"))
            .await
            .expect("loads"),
    );
    let kind = || configured(&host);
    let left = tokio::time::timeout(
        Duration::from_millis(200),
        kind().get_info(reference(), budget()),
    )
    .await;
    assert!(left.is_err(), "the first caller left mid-call");
    let replacing = tokio::spawn({
        let host = host.clone();
        async move {
            configured(&host)
                .replace_credential(Some(key("new-key")))
                .await
                .expect("fits")
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let later = tokio::spawn({
        let host = host.clone();
        async move { configured(&host).get_info(reference(), budget()).await }
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
