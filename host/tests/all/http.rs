//! The `http` capability reaches only the kind's allowlisted origins, never
//! follows a redirect, and sends nothing for a denied request.

use crate::support::*;
use sandbox_host::Registration;
use sandbox_host::types::Error;
use serde_json::json;
use std::sync::{Arc, Mutex};

/// A loopback HTTP server recording request paths; `/redirect` answers 302
/// to `/target`.
async fn server() -> (String, Recorded) {
    use axum::response::IntoResponse;
    recording_server(|request, recorded| async move {
        let path = request.uri().path().to_string();
        recorded.lock().expect("lock").push(path.clone());
        if path == "/redirect" {
            (axum::http::StatusCode::FOUND, [("location", "/target")], "").into_response()
        } else {
            (axum::http::StatusCode::OK, "hello").into_response()
        }
    })
    .await
}

async fn get(allowed: &str, url: &str) -> Result<sandbox_host::types::Info, Error> {
    fetcher_info(allowed, None, json!({ "action": "http-get", "url": url })).await
}

/// The steerable kind `fetcher`, allowed `origin` and sending its
/// credential there.
fn fetcher(origin: &str) -> Registration {
    Registration {
        grants: http_grants(origin),
        credential_fields: vec!["api_key".into(), "team".into()],
        ..steerable("fetcher")
    }
}

/// GetInfo of a steerable kind allowed `allowed`, holding `credential`,
/// steered by `steering`.
async fn fetcher_info(
    allowed: &str,
    credential: Option<&str>,
    steering: serde_json::Value,
) -> Result<sandbox_host::types::Info, Error> {
    let mut binding = binding(None, steering);
    binding.credential = credential.map(Into::into);
    let host = TestHost::one(fetcher(allowed), binding).loaded().await;
    host.kind("fetcher")
        .expect("a loaded kind")
        .get_info(reference(), budget(10_000))
        .await
}

/// Gets `path` from an allowlisted [`server`], which must answer: the
/// status the component saw, and the paths the server recorded.
async fn get_allowed(path: &str) -> (Option<String>, Vec<String>) {
    let (origin, seen) = server().await;
    let info = get(&origin, &format!("{origin}{path}"))
        .await
        .expect("request succeeds");
    let seen = seen.lock().expect("lock").clone();
    (info.provider_id, seen)
}

#[tokio::test]
async fn an_allowlisted_origin_is_reached() {
    let (status, seen) = get_allowed("/hello").await;
    assert_eq!(status.as_deref(), Some("200"));
    assert_eq!(seen, vec!["/hello".to_string()]);
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
    let (status, seen) = get_allowed("/redirect").await;
    assert_eq!(status.as_deref(), Some("302"));
    assert_eq!(seen, vec!["/redirect".to_string()]);
}

/// An observation only reads: a POST from a batch or a single one is
/// denied before any request.
#[tokio::test]
async fn observations_send_only_reads() {
    use sandbox_host::types::Target;
    let (origin, seen) = server().await;
    let registration = Registration {
        grants: http_grants(&origin),
        ..steerable("observer")
    };
    let steering = json!({ "declaration": "observing", "action": "http-post",
                           "url": format!("{origin}/change") });
    let host = TestHost::one(registration, binding(None, steering))
        .loaded()
        .await;
    let kind = host.kind("observer").expect("a loaded kind");
    let target = Target {
        reference: reference(),
        provider_id: None,
    };
    let budget = budget(10_000);
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
    // Nor from a single observation, which waits for no turn.
    assert_eq!(
        kind.observe(target, budget).await.map(|_| ()),
        Err(Error::Invalid)
    );
    assert!(seen.lock().expect("lock").is_empty(), "nothing sent");
}

/// What the policy server saw: each request's path and headers.
type Seen = Arc<Mutex<Vec<(String, Vec<(String, String)>)>>>;

/// A loopback server for the `wasi:http` policy: `/record` answers `ok`,
/// `/sink` the length of the body it received (recording how much arrived),
/// `/big` a body one byte over the bound, `/stream` sends `first;`, then
/// `second` only once `/release` has been requested.
async fn policy_server() -> (String, Seen) {
    use axum::response::IntoResponse;
    let seen: Seen = Arc::default();
    let released = Arc::new(tokio::sync::Notify::new());
    let recorded = seen.clone();
    let handler = move |request: axum::extract::Request| {
        let recorded = recorded.clone();
        let released = released.clone();
        async move {
            let path = request.uri().path().to_string();
            let headers = request
                .headers()
                .iter()
                .map(|(name, value)| {
                    (
                        name.to_string(),
                        String::from_utf8_lossy(value.as_bytes()).into_owned(),
                    )
                })
                .collect();
            if path == "/sink" {
                // What arrived of the body, and whether it ended.
                let mut body = request.into_body();
                let (mut received, mut ended) = (Vec::new(), true);
                while let Some(frame) = http_body_util::BodyExt::frame(&mut body).await {
                    match frame.map(|frame| frame.into_data()) {
                        Ok(Ok(data)) => received.extend_from_slice(&data),
                        Ok(Err(_)) => {}
                        Err(_) => {
                            ended = false;
                            break;
                        }
                    }
                }
                let leaked = received.windows(4).any(|window| window == b"key-");
                let sink = format!(
                    "/sink {} bytes, ended {ended}, leaked {leaked}",
                    received.len()
                );
                recorded.lock().expect("lock").push((sink, headers));
                return received.len().to_string().into_response();
            }
            recorded.lock().expect("lock").push((path.clone(), headers));
            match path.as_str() {
                "/big" => vec![b'x'; 8 * 1024 * 1024 + 1].into_response(),
                "/release" => {
                    released.notify_one();
                    "released".into_response()
                }
                "/stream" => {
                    let chunks = futures_util::stream::unfold(0, move |step| {
                        let released = released.clone();
                        async move {
                            match step {
                                0 => Some((Ok::<_, std::io::Error>("first;"), 1)),
                                1 => {
                                    released.notified().await;
                                    Some((Ok("second"), 2))
                                }
                                _ => None,
                            }
                        }
                    });
                    axum::body::Body::from_stream(chunks).into_response()
                }
                _ => "ok".into_response(),
            }
        }
    };
    let origin = serve_on_loopback(axum::Router::new().fallback(handler)).await;
    (origin, seen)
}

/// What `http-fetch` (or `http-stream`) steered by `steering` answered, for
/// a kind allowed `origin` holding `credential`.
async fn fetch(origin: &str, credential: Option<&str>, steering: serde_json::Value) -> String {
    fetcher_info(origin, credential, steering)
        .await
        .expect("answered")
        .provider_id
        .expect("an outcome")
}

const CREDENTIAL: &str = r#"{"api_key":"key-0123456789","team":"t-1"}"#;

#[tokio::test]
async fn the_host_fills_in_the_credential_from_its_field_and_strips_the_markers() {
    let (origin, seen) = policy_server().await;
    let steering = |field: Option<&str>| {
        json!({"action": "http-fetch", "url": format!("{origin}/record"),
               "credential_header": "X-API-Key", "credential_field": field})
    };
    assert_eq!(
        fetch(&origin, Some(CREDENTIAL), steering(Some("api_key"))).await,
        "200:ok"
    );
    assert_eq!(
        fetch(&origin, Some(CREDENTIAL), steering(None)).await,
        "200:ok"
    );
    let seen = seen.lock().expect("lock").clone();
    let header = |index: usize, name: &str| {
        seen[index]
            .1
            .iter()
            .filter(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(header(0, "x-api-key"), vec!["key-0123456789".to_string()]);
    assert_eq!(
        header(1, "x-api-key"),
        vec![CREDENTIAL.to_string()],
        "without a field, the whole credential"
    );
    for (_, headers) in &seen {
        assert!(
            headers.iter().all(|(name, _)| !name.starts_with("oac-")),
            "the markers never reach the wire: {headers:?}"
        );
    }
}

/// Each case (what it is, the credential the kind holds, how `http-fetch`
/// is steered, given `/record`'s URL on a [`policy_server`]) is denied, and
/// nothing reaches the server.
async fn all_denied(cases: impl FnOnce(&str) -> Vec<(String, Option<&str>, serde_json::Value)>) {
    let (origin, seen) = policy_server().await;
    for (case, credential, steering) in cases(&format!("{origin}/record")) {
        assert_eq!(
            fetch(&origin, credential, steering).await,
            "error:Denied",
            "{case}"
        );
    }
    assert!(seen.lock().expect("lock").is_empty(), "nothing sent");
}

#[tokio::test]
async fn a_credential_the_host_cannot_fill_in_sends_nothing() {
    all_denied(|url| {
        [
            (Some(CREDENTIAL), Some("missing")),
            (None, Some("api_key")),
            (None, None),
        ]
        .into_iter()
        .map(|(credential, field)| {
            let steering = json!({"action": "http-fetch", "url": url,
                                  "credential_header": "x-api-key", "credential_field": field});
            (format!("{credential:?} {field:?}"), credential, steering)
        })
        .collect()
    })
    .await;
}

#[tokio::test]
async fn reserved_headers_are_denied_also_as_the_credential_header() {
    all_denied(|url| {
        [
            "Host",
            "Connection",
            "Keep-Alive",
            "Transfer-Encoding",
            "TE",
            "Trailer",
            "Upgrade",
            "Expect",
            "Proxy-Authorization",
            "Proxy-Connection",
        ]
        .into_iter()
        .flat_map(|name| {
            let as_header = json!({"action": "http-fetch", "url": url, "headers": [[name, "x"]]});
            let as_credential =
                json!({"action": "http-fetch", "url": url, "credential_header": name});
            [
                (format!("{name} as a header"), Some(CREDENTIAL), as_header),
                (
                    format!("{name} as the credential header"),
                    Some(CREDENTIAL),
                    as_credential,
                ),
            ]
        })
        .collect()
    })
    .await;
}

#[tokio::test]
async fn a_streamed_response_stays_open_while_another_request_is_sent() {
    let (origin, seen) = policy_server().await;
    let steering = json!({"action": "http-stream", "url": format!("{origin}/stream"),
                          "release_url": format!("{origin}/release")});
    assert_eq!(fetch(&origin, None, steering).await, "200:first;second");
    let paths: Vec<String> = seen
        .lock()
        .expect("lock")
        .iter()
        .map(|(path, _)| path.clone())
        .collect();
    assert_eq!(paths, ["/stream", "/release"]);
}

#[tokio::test]
async fn a_response_body_over_the_bound_is_too_large() {
    let (origin, _) = policy_server().await;
    let steering = json!({"action": "http-fetch", "url": format!("{origin}/big")});
    assert_eq!(fetch(&origin, None, steering).await, "error:TooLarge");
}

/// Create of a fetcher kind holding [`CREDENTIAL`], posting `body` to
/// `origin/sink`: its outcome.
async fn post(origin: &str, body: String) -> String {
    let steering = json!({"action": "http-fetch", "method": "POST",
                          "url": format!("{origin}/sink"), "body": body});
    let mut binding = binding(None, steering);
    binding.credential = Some(CREDENTIAL.into());
    let host = TestHost::one(fetcher(origin), binding).loaded().await;
    let bootstrap = sandbox_host::testing::bootstrap(reference(), "daemon-secret");
    host.kind("fetcher")
        .expect("a loaded kind")
        .create(bootstrap, budget(30_000))
        .await
        .expect("answered")
        .provider_id
        .expect("an outcome")
}

/// A body of `length` base64 characters.
fn base64_text(length: usize) -> String {
    (0..length)
        .map(|i| char::from(b"QUJDRGV4YW1wbGU+/w"[i % 18]))
        .collect()
}

#[tokio::test]
async fn a_request_body_over_8_mib_streams_whole() {
    let (origin, seen) = policy_server().await;
    let length = 12 << 20;
    assert_eq!(
        post(&origin, base64_text(length)).await,
        format!("200:{length}")
    );
    let seen = seen.lock().expect("lock");
    assert_eq!(
        seen[0].0,
        format!("/sink {length} bytes, ended true, leaked false")
    );
}

#[tokio::test]
async fn a_credential_deep_in_a_streamed_body_cuts_it_off_before_any_byte_of_it() {
    let (origin, seen) = policy_server().await;
    let mut body = base64_text(12 << 20);
    let at = (6 << 20) + 4093;
    body.replace_range(at..at + 14, "key-0123456789");
    assert_eq!(post(&origin, body).await, "error:Denied");
    // The server sees the cut-off body end after the component's answer.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while seen.lock().expect("lock").is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let seen = seen.lock().expect("lock");
    let (sink, _) = seen.first().expect("the request was started");
    let received: usize = sink
        .split(' ')
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a count");
    assert!(received > 1 << 20 && received <= at, "{sink}");
    assert!(sink.ends_with("ended false, leaked false"), "{sink}");
}
