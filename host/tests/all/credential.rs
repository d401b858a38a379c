//! A hostile component against the credential and scope rules: the
//! credential goes only in its header to the kind's exact credential
//! origins, and nowhere else in any obvious encoding (no other request, no
//! answer); configuration calls reach nothing; probes and observations
//! only read; a call holds a bounded number of requests open. The
//! steerable component tries each, through real Wasm; a loopback server
//! records what arrived.

use crate::support::*;
use base64::Engine as _;
use sandbox_host::registry::Grants;
use sandbox_host::types::{Configuration, Error, Target};
use sandbox_host::{Budget, Host, ReceiptStore, Registration};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// The key inside the credential object, and the object.
const KEY: &str = "e2b_5ecret0123456789abcdef";

fn credential() -> String {
    json!({ "api_key": KEY }).to_string()
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Arrived {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

type Log = Arc<Mutex<Vec<Arrived>>>;

/// A loopback server that records every request: `/slow` answers its head
/// at once and never ends its body, anything else answers `ok`.
async fn server() -> (String, Log) {
    use axum::response::IntoResponse;
    let log: Log = Arc::default();
    let recorded = log.clone();
    let handler = move |request: axum::extract::Request| {
        let recorded = recorded.clone();
        async move {
            let (head, body) = request.into_parts();
            let body = axum::body::to_bytes(body, 16 << 20)
                .await
                .unwrap_or_default()
                .to_vec();
            let path = head.uri.path().to_string();
            recorded.lock().expect("lock").push(Arrived {
                method: head.method.to_string(),
                path: head.uri.to_string(),
                headers: head
                    .headers
                    .iter()
                    .map(|(name, value)| {
                        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                        (name.to_string(), value)
                    })
                    .collect(),
                body,
            });
            if path == "/slow" {
                let never = futures_util::stream::pending::<Result<&'static str, std::io::Error>>();
                return axum::body::Body::from_stream(never).into_response();
            }
            "ok".into_response()
        }
    };
    let origin = serve_on_loopback(axum::Router::new().fallback(handler)).await;
    (origin, log)
}

fn budget() -> Budget {
    Budget::from_millis(10_000).expect("budget")
}

/// The steerable kind `kind` as a direct kind (receipts granted) allowed
/// `origins`, of which `credential_origins` receive the credential.
fn row(kind: &str, origins: &[&str], credential_origins: &[&str]) -> Registration {
    let row = sandbox_host::testing::steerable_direct_row();
    Registration {
        kind: kind.into(),
        grants: Grants {
            docker: false,
            http_origins: origins.iter().map(|origin| origin.to_string()).collect(),
            credential_origins: credential_origins
                .iter()
                .map(|origin| origin.to_string())
                .collect(),
            receipts: true,
            microsandbox: false,
            http_endpoint: None,
        },
        ..row
    }
}

/// A loaded direct steerable kind holding the credential, steered by
/// `steering`, with a fresh receipt store (returned with it).
async fn direct(registration: Registration, steering: Value) -> (Host, ReceiptStore) {
    let state = tempfile::tempdir().expect("state dir").keep();
    let store = ReceiptStore::open(&state).expect("store");
    (with_store(registration, steering, &store).await, store)
}

/// [`direct`] `kind`, allowed a recording [`server`] and sending the
/// credential there, steered to `reach` for every capability from `path`
/// on it: the host, its store and what the server saw.
async fn reaching(kind: &str, path: &str) -> (Host, ReceiptStore, Log) {
    let (origin, log) = server().await;
    let (host, store) = direct(
        row(kind, &[&origin], &[&origin]),
        json!({ "action": "reach", "url": format!("{origin}{path}") }),
    )
    .await;
    (host, store, log)
}

/// [`direct`] on an existing store.
async fn with_store(registration: Registration, steering: Value, store: &ReceiptStore) -> Host {
    let mut binding = binding(None, steering);
    binding.credential = Some(credential());
    binding.receipts = Some(store.clone());
    TestHost::one(registration, binding).loaded().await
}

/// Whether the kind `kind` has no `create_pending` receipt of the reference
/// in `store` (read back through the capability).
async fn no_receipt(kind: &str, store: &ReceiptStore) -> bool {
    let reader = with_store(
        row(kind, &[], &[]),
        json!({ "action": "receipt-get" }),
        store,
    )
    .await;
    answered(&reader, kind).await == Ok("none".into())
}

/// What one steered `get-info` answered in its provider id.
async fn answered(host: &Host, kind: &str) -> Result<String, Error> {
    host.kind(kind)
        .expect("a loaded kind")
        .get_info(reference(), budget())
        .await
        .map(|info| info.provider_id.unwrap_or_default())
}

#[tokio::test]
async fn the_credential_goes_only_to_its_exact_credential_origins() {
    let (api, api_log) = server().await;
    let (other, other_log) = server().await;
    let fetch = |url: String| {
        json!({ "action": "http-fetch", "url": url,
                "credential_header": "x-api-key", "credential_field": "api_key" })
    };
    let registration = row("fetcher", &[&api, &other], &[&api]);
    let (host, _state) = direct(registration.clone(), fetch(format!("{other}/echo"))).await;
    assert_eq!(answered(&host, "fetcher").await, Ok("error:Denied".into()));
    assert!(
        other_log.lock().expect("lock").is_empty(),
        "an allowed origin that is no credential origin received a request"
    );
    let (host, _state) = direct(registration, fetch(format!("{api}/sandboxes"))).await;
    assert_eq!(answered(&host, "fetcher").await, Ok("200:ok".into()));
    let arrived = api_log.lock().expect("lock").clone();
    assert_eq!(arrived.len(), 1);
    assert!(
        arrived[0]
            .headers
            .contains(&("x-api-key".to_string(), KEY.to_string())),
        "{:?}",
        arrived[0].headers
    );
}

/// A component that learned the key (here: told it) tries to send it out
/// in every place and encoding; each request is refused before anything of
/// it is sent, while the same request without the key goes out.
#[tokio::test]
async fn a_request_carrying_the_credential_anywhere_is_refused_before_it_is_sent() {
    let (origin, log) = server().await;
    let registration = row("leaker", &[&origin], &[&origin]);
    let hex = hex::encode(KEY);
    let base64 = base64::engine::general_purpose::STANDARD.encode(format!("k={KEY}"));
    let attempts = [
        json!({ "url": format!("{origin}/x/{hex}") }),
        json!({ "url": format!("{origin}/x?key={KEY}") }),
        json!({ "url": format!("{origin}/x"), "headers": [["x-note", base64]] }),
        json!({ "url": format!("{origin}/x"), "method": "POST", "body": KEY }),
        json!({ "url": format!("{origin}/x"), "method": "POST",
                "body": json!({ "stolen": credential() }).to_string() }),
        json!({ "url": format!("{origin}/x"), "method": "PUT",
                "body": format!("a={}", KEY.replace('_', "%5F")) }),
    ];
    for attempt in attempts {
        let mut steering = json!({ "action": "http-fetch" });
        for (key, value) in attempt.as_object().expect("object") {
            steering[key] = value.clone();
        }
        let (host, _state) = direct(registration.clone(), steering.clone()).await;
        assert_eq!(
            answered(&host, "leaker").await,
            Ok("error:Denied".into()),
            "{steering}"
        );
        assert!(log.lock().expect("lock").is_empty(), "{steering}: sent");
    }
    let harmless = json!({ "action": "http-fetch", "url": format!("{origin}/x"),
                           "method": "POST", "body": "{\"template\":\"t\"}" });
    let (host, _state) = direct(registration, harmless).await;
    assert_eq!(answered(&host, "leaker").await, Ok("200:ok".into()));
    let arrived = log.lock().expect("lock").clone();
    assert_eq!(arrived.len(), 1);
    assert_eq!(
        (arrived[0].method.as_str(), arrived[0].path.as_str()),
        ("POST", "/x")
    );
    assert_eq!(arrived[0].body, b"{\"template\":\"t\"}");
}

#[tokio::test]
async fn an_answer_carrying_the_credential_is_never_accepted() {
    let registration = row("answerer", &[], &[]);
    for shown in [KEY.to_string(), hex::encode(KEY), format!("id-{KEY}")] {
        let (host, _state) = direct(
            registration.clone(),
            json!({ "action": "answer", "answer": shown }),
        )
        .await;
        assert_eq!(
            answered(&host, "answerer").await,
            Err(Error::ComputeUnconfirmed),
            "{shown}"
        );
    }
    let (host, _state) = direct(
        registration,
        json!({ "action": "answer", "answer": "sbx-1" }),
    )
    .await;
    assert_eq!(answered(&host, "answerer").await, Ok("sbx-1".into()));
}

/// `discover-selection` never sees the candidate: its public answer is
/// policed like a configuration's, so one showing the candidate (here:
/// echoed back from the public input) is refused.
#[tokio::test]
async fn a_selection_showing_the_candidate_is_refused() {
    let (origin, _log) = server().await;
    let mut registration = row("selector", &[&origin], &[&origin]);
    registration.grants.receipts = false;
    let steering = json!({ "declaration": "verifying", "url": format!("{origin}/templates") });
    let mut binding = binding(None, steering);
    binding.credential = Some(credential());
    let host = TestHost::one(registration, binding).loaded().await;
    let kind = host.kind("selector").expect("kind");
    let candidate_key = "e2b_candidate_0123456789";
    let select = |public: String| Configuration {
        public,
        credential: Some(json!({ "api_key": candidate_key }).to_string()),
    };
    assert_eq!(
        kind.discover_selection(
            select(json!({ "note": hex::encode(candidate_key) }).to_string()),
            budget()
        )
        .await,
        Err(Error::ObservationUnavailable),
        "discovery's unknown outcome"
    );
    assert!(
        kind.discover_selection(select(json!({ "template": "t" }).to_string()), budget())
            .await
            .is_ok()
    );
}

/// `decode-input` holds the credential in clear, so it reaches nothing: no
/// HTTP (not even to a credential origin), no receipt, no Docker.
#[tokio::test]
async fn configuration_calls_reach_no_capability() {
    let (host, state, log) = reaching("configured", "/collect").await;
    let decoded = host
        .kind("configured")
        .expect("kind")
        .decode_input("{}".into(), Some(credential()), budget())
        .await
        .expect("decoded");
    let outcomes: Value = serde_json::from_str(&decoded.public).expect("outcomes");
    assert_eq!(outcomes["http"], "Denied");
    assert_eq!(outcomes["receipt"], "denied");
    assert!(log.lock().expect("lock").is_empty(), "a request was sent");
    assert!(
        no_receipt("configured", &state).await,
        "a receipt was written"
    );

    // A node kind granted Docker: not even a read of the engine.
    let engine = FakeEngine::start().await;
    let host = TestHost::one(
        steerable("node-configured"),
        binding(Some(engine.socket.clone()), json!({ "action": "reach" })),
    )
    .loaded()
    .await;
    let decoded = host
        .kind("node-configured")
        .expect("kind")
        .decode_input("{}".into(), None, budget())
        .await
        .expect("decoded");
    let outcomes: Value = serde_json::from_str(&decoded.public).expect("outcomes");
    assert_eq!(outcomes["docker"], "Denied");
    assert!(engine.recorded().is_empty(), "{:?}", engine.recorded());
}

/// The probe "only observes": its POST is refused and its receipt write
/// denied; its Docker read (a node kind's `version`) is let through.
#[tokio::test]
async fn the_readiness_probe_only_reads() {
    let (host, _state, log) = reaching("prober", "/delete-me").await;
    let diagnostics = host
        .kind("prober")
        .expect("kind")
        .probe(budget())
        .await
        .expect("probed");
    // http refused, docker not granted, receipt write denied.
    assert_eq!(diagnostics.len(), 3, "{diagnostics:?}");
    assert!(
        log.lock().expect("lock").is_empty(),
        "the probe sent a change"
    );
}

/// An observation waits for no turn, so it may not write a receipt (one a
/// Create in flight could then read).
#[tokio::test]
async fn an_observation_writes_no_receipt() {
    let (host, state) = direct(
        row("configured", &[], &[]),
        json!({ "declaration": "observing", "action": "receipt-put" }),
    )
    .await;
    let target = Target {
        reference: reference(),
        provider_id: None,
    };
    let kind = host.kind("configured").expect("kind");
    assert_eq!(
        kind.observe(target, budget()).await.map(|_| ()),
        Err(Error::ObservationUnavailable)
    );
    assert!(
        no_receipt("configured", &state).await,
        "an observation wrote a receipt"
    );
}

/// One call that opens requests without bound holds at most the per-call
/// cap open, and a Docker kind's Create on the same host goes through
/// meanwhile.
#[tokio::test]
async fn a_request_flood_stays_at_the_per_call_cap() {
    let (origin, log) = server().await;
    let engine = FakeEngine::start().await;
    engine.insert_image("oac-test-runtime:test", NO_IMAGE);
    let flooder = row("flooder", &[&origin], &[]);
    let mut flood_binding = binding(
        None,
        json!({ "action": "http-flood", "url": format!("{origin}/slow"), "count": 3000 }),
    );
    flood_binding.receipts =
        Some(ReceiptStore::open(&tempfile::tempdir().expect("dir").keep()).expect("store"));
    let docker_row = sandbox_host::registry::builtin()
        .into_iter()
        .find(|row| row.kind == "docker")
        .expect("docker kind");
    let docker_binding = binding(Some(engine.socket.clone()), json!({}));
    let bindings = std::collections::BTreeMap::from([
        ("flooder".to_string(), flood_binding),
        ("docker".to_string(), docker_binding),
    ]);
    let host = TestHost::table(&[flooder, docker_row], &bindings)
        .loaded()
        .await;
    let flood = answered(&host, "flooder");
    let create = host.kind("docker").expect("docker").create(
        sandbox_host::types::Bootstrap {
            reference: reference(),
            session_id: "session".into(),
            device_id: "device-1".into(),
            core_url: "https://core.example".into(),
            daemon_credential: "daemon-credential-0123".into(),
            harness: "harness-a".into(),
            network_access: sandbox_host::types::NetworkAccess::Disabled,
            allowed_domains: vec![],
        },
        budget(),
    );
    let (flood, create) = tokio::join!(flood, create);
    assert_eq!(
        flood,
        Ok(sandbox_host::capability::http::MAX_OPEN_REQUESTS_PER_CALL.to_string())
    );
    assert!(create.is_ok(), "{create:?}");
    assert_eq!(
        log.lock().expect("lock").len(),
        sandbox_host::capability::http::MAX_OPEN_REQUESTS_PER_CALL
    );
}

/// The per-call cap is the kind's policy: a kind that sets it lower holds
/// no more open than it says.
#[tokio::test]
async fn a_kinds_policy_sets_its_request_cap() {
    let (origin, log) = server().await;
    let mut flooder = row("flooder", &[&origin], &[]);
    flooder.policy.max_open_requests_per_call = 5;
    flooder.policy.max_open_requests_per_kind = 8;
    let (host, _store) = direct(
        flooder,
        json!({ "action": "http-flood", "url": format!("{origin}/slow"), "count": 50 }),
    )
    .await;
    assert_eq!(answered(&host, "flooder").await, Ok("5".to_string()));
    assert_eq!(log.lock().expect("lock").len(), 5);
}

/// The Create's daemon credential travels only in the bootstrap file (or
/// on stdin): a container spec or exec that carries it in its command,
/// environment or working directory is refused before the engine sees it.
#[tokio::test]
async fn the_daemon_credential_never_goes_into_a_command_or_environment() {
    let daemon = "daemon-credential-0123";
    let engine = FakeEngine::start().await;
    engine.insert_image("oac-test-runtime:test", NO_IMAGE);
    let hex = hex::encode(daemon);
    let attempts = [
        json!({ "action": "container-create", "env": [format!("TOKEN={daemon}")] }),
        json!({ "action": "container-create", "cmd": ["daemon", "--token", hex] }),
        json!({ "action": "container-create", "working_dir": format!("/home/{daemon}") }),
        // Created and started; only the exec carries it.
        json!({ "action": "run", "args": ["echo", daemon] }),
    ];
    for steering in attempts {
        let refused = if steering["action"] == "run" {
            "/exec"
        } else {
            "/containers/create"
        };
        let host = TestHost::one(
            steerable("steerable"),
            binding(Some(engine.socket.clone()), steering.clone()),
        )
        .loaded()
        .await;
        engine.clear_requests();
        let bootstrap = sandbox_host::types::Bootstrap {
            reference: reference(),
            session_id: "session".into(),
            device_id: "device-1".into(),
            core_url: "https://core.example".into(),
            daemon_credential: daemon.into(),
            harness: "harness-a".into(),
            network_access: sandbox_host::types::NetworkAccess::Disabled,
            allowed_domains: vec![],
        };
        let created = host
            .kind("steerable")
            .expect("kind")
            .create(bootstrap, budget())
            .await;
        assert_eq!(
            created.map_err(|f| f.error),
            Err(Error::Invalid),
            "{steering}"
        );
        let sent = engine.recorded();
        assert!(
            !sent.iter().any(|request| request.contains(refused)),
            "{steering}: {sent:?}"
        );
    }
}
