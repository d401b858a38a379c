//! What a client can hold on a node: connections that pipeline refused
//! requests, idle ones, ones that never take their answers, too many from
//! one peer, old ones; and TCP with TLS and client certificates. Each test
//! runs a real `Node::serve` with the steerable component on a fake engine.

use crate::support::*;
use sandbox_host::node_config::{Listen, ListenError};
use sandbox_host::transport::tls::TlsFiles;
use sandbox_host::transport::wire::{PROTOCOL_HEADER, PROTOCOL_VERSION};
use sandbox_host::transport::{
    ConnectionLimits, Endpoint, MAX_CONNECTIONS, Node, NodeClient, RESERVED_FOR_AUTHENTICATED,
    ServeError, TlsEndpoint, TransportError,
};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "node-limits-test-token-0123456789";

/// A node serving one steerable kind, `plain`.
type Served = EngineNode;

/// Serves under `limits` where `listen` says (given the test's directory;
/// `None` is the Unix socket there), and waits until it answers through
/// `client` (`None`: a client on the Unix socket).
async fn serve(
    limits: ConnectionLimits,
    listen: impl FnOnce(&Path) -> Option<Listen> + 'static,
    ready: impl FnOnce(&Path) -> Option<Endpoint> + 'static,
) -> Served {
    serve_with(move |node| node.with_limits(limits), listen, ready).await
}

/// [`serve`] on the node's Unix socket.
async fn serve_local(limits: ConnectionLimits) -> Served {
    serve(limits, |_| None, |_| None).await
}

/// [`serve`] on TCP at `address` with TLS from `files`, ready once a
/// client trusting `ca` (presenting `identity`) is served.
async fn serve_tls(
    address: std::net::SocketAddr,
    files: TlsFiles,
    ca: Vec<u8>,
    identity: Option<Vec<u8>>,
) -> Served {
    serve(
        ConnectionLimits::default(),
        move |_| {
            Some(Listen {
                tcp: Some(address),
                tls: Some(files),
                ..Listen::default()
            })
        },
        move |_| Some(tls_endpoint(address, &ca, identity.as_deref())),
    )
    .await
}

/// [`serve`], with the node set up by `set_up`.
async fn serve_with(
    set_up: impl FnOnce(Node) -> Node + 'static,
    listen: impl FnOnce(&Path) -> Option<Listen> + 'static,
    ready: impl FnOnce(&Path) -> Option<Endpoint> + 'static,
) -> Served {
    let engine = FakeEngine::start().await;
    let kinds = [(
        "plain",
        serde_json::json!({ "declaration": "valid", "action": "none", "volume": "vol-x" }),
    )];
    let host = std::sync::Arc::new(steered(&engine.socket, &kinds).loaded().await);
    let node = TestNode::builder(host)
        .token(TOKEN)
        .set_up(set_up)
        .listen(listen)
        .ready(ready)
        .start()
        .await;
    EngineNode { node, engine }
}

/// `GET /kinds`, with the token or without.
fn kinds_request(authenticated: bool) -> String {
    let token = if authenticated {
        format!("authorization: Bearer {TOKEN}\r\n")
    } else {
        "authorization: Bearer not-the-token\r\n".to_string()
    };
    format!(
        "GET /kinds HTTP/1.1\r\nhost: node\r\n{PROTOCOL_HEADER}: {PROTOCOL_VERSION}\r\n{token}\r\n"
    )
}

/// Sends `GET /kinds` with the token on `stream` and reads the answer.
async fn ask_kinds(stream: &mut tokio::net::UnixStream) -> String {
    stream
        .write_all(kinds_request(true).as_bytes())
        .await
        .expect("write");
    read_message(stream).await
}

/// Whether the node has closed `stream` (nothing more to read), waiting at
/// most `patience`.
async fn closed_within(stream: &mut tokio::net::UnixStream, patience: Duration) -> bool {
    until_closed(stream, patience).await.is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_refused_requests_hold_no_slot_and_a_client_with_the_token_is_served() {
    let node = serve_local(ConnectionLimits::default()).await;
    let pipelined = kinds_request(false).repeat(32);
    let mut stalled = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        let mut stream = node.connect().await;
        stream.write_all(pipelined.as_bytes()).await.expect("write");
        stalled.push(stream);
    }
    // None of them reads; a client with the token is served all the same.
    let started = Instant::now();
    let kinds = tokio::time::timeout(Duration::from_secs(5), node.client().kinds(budget(5_000)))
        .await
        .expect("served within 5 s");
    assert!(kinds.is_ok(), "{kinds:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // Each refused connection got at most one refusal and was closed: the
    // other 31 requests it pipelined were never read. With every slot
    // taken, the client with the token evicted the oldest unauthenticated
    // connection, which under load may not have been answered yet: at
    // most that one ends with no answer at all.
    let mut unanswered = 0;
    for stream in &mut stalled {
        let answer = until_closed(stream, Duration::from_secs(5))
            .await
            .expect("the node closed the refused connection");
        if answer.is_empty() {
            unanswered += 1;
            continue;
        }
        assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{answer}");
        assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
        assert!(answer.contains("connection: close"), "{answer}");
    }
    assert!(unanswered <= 1, "{unanswered} closed unanswered");
    assert!(node.engine.recorded().is_empty(), "nothing ran natively");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_without_the_token_give_way_to_one_with_it() {
    let node = serve_local(ConnectionLimits::default()).await;
    let share = MAX_CONNECTIONS - RESERVED_FOR_AUTHENTICATED;
    let mut idle = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        idle.push(node.connect().await);
    }
    // Past their share, each newer idle connection closed the oldest one.
    let evicted = MAX_CONNECTIONS - share;
    for (index, stream) in idle.iter_mut().enumerate().take(evicted) {
        assert!(
            closed_within(stream, Duration::from_secs(5)).await,
            "idle connection {index} was closed for a newer one"
        );
    }
    assert!(
        !closed_within(&mut idle[evicted], Duration::from_millis(200)).await,
        "the rest stay open (until their read timeout)"
    );
    let kinds = tokio::time::timeout(Duration::from_secs(5), node.client().kinds(budget(5_000)))
        .await
        .expect("served within 5 s");
    assert!(kinds.is_ok(), "{kinds:?}");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_slot_holds_the_token_new_connections_wait_for_one() {
    let node = serve_local(ConnectionLimits::default()).await;
    let mut proven = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        let mut stream = node.connect().await;
        let answer = ask_kinds(&mut stream).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        proven.push(stream);
    }
    let mut waiting = node.connect().await;
    waiting
        .write_all(kinds_request(true).as_bytes())
        .await
        .expect("write");
    let mut first = [0u8; 12];
    let early = tokio::time::timeout(Duration::from_millis(500), waiting.read(&mut first)).await;
    assert!(
        early.is_err(),
        "no answer while every slot is authenticated"
    );
    drop(proven.pop());
    let answer = tokio::time::timeout(Duration::from_secs(10), read_message(&mut waiting))
        .await
        .expect("answered once a slot is free");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Shutdown while a connection still waits for a slot ends cleanly.
    proven.push(waiting);
    let mut late = node.connect().await;
    late.write_all(kinds_request(true).as_bytes())
        .await
        .expect("write");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let took = tokio::time::timeout(Duration::from_secs(10), node.stop())
        .await
        .expect("stopped");
    assert!(took < Duration::from_secs(10));
    drop(proven);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_takes_its_answers_is_cut_off_and_shutdown_does_not_wait_for_it() {
    let limits = ConnectionLimits {
        stall_timeout: Duration::from_millis(500),
        ..ConnectionLimits::default()
    };
    let node = serve_local(limits).await;
    // Thousands of pipelined requests whose answers are never read: the
    // node's writes block, then the connection is dropped, which the
    // still-writing client sees as a broken pipe.
    let stream = node.connect().await;
    let (mut reading, mut writing) = stream.into_split();
    let pipelined = kinds_request(true).repeat(8_000);
    let started = Instant::now();
    let writer = tokio::spawn(async move { writing.write_all(pipelined.as_bytes()).await });
    let written = tokio::time::timeout(Duration::from_secs(20), writer)
        .await
        .expect("the node dropped the stalled connection")
        .expect("writer task");
    assert!(written.is_err(), "the node stopped reading and closed");
    let mut answers = Vec::new();
    let _ = reading.read_to_end(&mut answers).await;
    let answered = String::from_utf8_lossy(&answers)
        .matches("HTTP/1.1 200")
        .count();
    assert!(
        answered < 8_000,
        "answers stopped when the client stopped taking them ({answered})"
    );
    eprintln!(
        "stalled connection dropped after {:?} ({answered} answers)",
        started.elapsed()
    );
    node.stop().await;

    // Shutdown with stalled clients connected (one never reading its
    // answers, one halfway through a head, one idle) ends once the grace
    // is over, long before their own timeouts.
    let limits = ConnectionLimits {
        stall_timeout: Duration::from_secs(120),
        read_timeout: Duration::from_secs(120),
        shutdown_grace: Duration::from_millis(500),
        ..ConnectionLimits::default()
    };
    let node = serve_local(limits).await;
    let (_reading, mut writing) = node.connect().await.into_split();
    let pipelined = kinds_request(true).repeat(8_000);
    let writer = tokio::spawn(async move { writing.write_all(pipelined.as_bytes()).await });
    let mut half_head = node.connect().await;
    half_head
        .write_all(b"GET /kinds HTTP/1.1\r\nhost: node\r\n")
        .await
        .expect("write");
    let _idle = node.connect().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let took = tokio::time::timeout(Duration::from_secs(10), node.stop())
        .await
        .expect("shutdown is not held by stalled clients");
    assert!(took < Duration::from_secs(5), "shutdown took {took:?}");
    writer.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_past_its_lifetime_ends_with_its_next_answer() {
    let limits = ConnectionLimits {
        max_lifetime: Duration::from_millis(300),
        ..ConnectionLimits::default()
    };
    let node = serve_local(limits).await;
    let mut stream = node.connect().await;
    let young = ask_kinds(&mut stream).await;
    assert!(young.starts_with("HTTP/1.1 200"), "{young}");
    assert!(!young.contains("connection: close"), "{young}");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let old = answered_and_closed(&mut stream, kinds_request(true).as_bytes()).await;
    assert!(old.starts_with("HTTP/1.1 200"), "{old}");
    assert!(old.contains("connection: close"), "{old}");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_holds_at_most_its_share_of_tcp_connections() {
    let address = free_address();
    let node = serve(
        ConnectionLimits::default(),
        move |_| {
            Some(Listen {
                tcp: Some(address),
                max_connections_per_peer: Some(4),
                ..Listen::default()
            })
        },
        move |_| Some(Endpoint::Tcp(address)),
    )
    .await;
    // Let the readiness client's pooled connection go.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let connect = || tokio::net::TcpStream::connect(address);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(connect().await.expect("connect"));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut fifth = connect().await.expect("connect");
    let _ = fifth.write_all(kinds_request(true).as_bytes()).await;
    let answer = until_closed(&mut fifth, Duration::from_secs(5))
        .await
        .expect("the fifth connection is closed on arrival");
    assert_eq!(answer, "", "unanswered");
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut next = connect().await.expect("connect");
    next.write_all(kinds_request(true).as_bytes())
        .await
        .expect("write");
    let answer = read_message(&mut next).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bodies_beyond_the_node_budget_are_busy_before_they_are_read() {
    use sandbox_host::transport::wire::MAX_REQUEST_BYTES;
    let limits = ConnectionLimits {
        read_timeout: Duration::from_secs(3),
        ..ConnectionLimits::default()
    };
    // Room for three requests declaring 50 MiB of stdin (as base64 in JSON).
    let declared = (50 << 20) * 4 / 3 + 4096;
    let node = serve_with(
        move |node| {
            node.with_limits(limits)
                .with_request_body_budget(3 * declared + declared / 2)
        },
        |_| None,
        |_| None,
    )
    .await;
    let head = |length: usize| {
        format!(
            "POST /call HTTP/1.1\r\nhost: node\r\n{PROTOCOL_HEADER}: {PROTOCOL_VERSION}\r\n\
             authorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\n\
             content-length: {length}\r\n\r\n{{\"kind\""
        )
    };
    // 64 clients announce 50 MiB commands at once and send their bodies
    // slowly: three hold the budget, every other one is `busy` at once,
    // its body unread.
    let mut streams = Vec::new();
    for _ in 0..64 {
        let mut stream = node.connect().await;
        stream
            .write_all(head(declared).as_bytes())
            .await
            .expect("write");
        streams.push(stream);
    }
    let mut busy = 0;
    let mut waiting = 0;
    for stream in &mut streams {
        match tokio::time::timeout(Duration::from_millis(500), read_message(stream)).await {
            Ok(answer) => {
                assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
                assert!(answer.ends_with(r#"{"refused":"busy"}"#), "{answer}");
                busy += 1;
            }
            Err(_) => waiting += 1,
        }
    }
    assert_eq!((waiting, busy), (3, 61));
    // An undeclared length takes the largest frame's share: busy too.
    let mut chunked = node.connect().await;
    chunked
        .write_all(
            head(0)
                .replace("content-length: 0", "transfer-encoding: chunked")
                .as_bytes(),
        )
        .await
        .expect("write");
    let answer = read_message(&mut chunked).await;
    assert!(answer.contains(r#"{"refused":"busy"}"#), "{answer}");
    assert!(MAX_REQUEST_BYTES > declared / 2);
    // The three bodies never arrive: `too_slow`, and their shares are free.
    drop(streams);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut next = node.connect().await;
    next.write_all(head(declared).as_bytes())
        .await
        .expect("write");
    let early = tokio::time::timeout(Duration::from_millis(500), read_message(&mut next)).await;
    assert!(early.is_err(), "admitted again: waiting for its body");
    assert!(node.engine.recorded().is_empty());
    drop(next);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_over_the_limit_are_too_large_declared_or_chunked() {
    use sandbox_host::transport::wire::MAX_REQUEST_BYTES;
    let node = serve_local(ConnectionLimits::default()).await;
    let head = |framing: String| {
        format!(
            "POST /call HTTP/1.1\r\nhost: node\r\n{PROTOCOL_HEADER}: {PROTOCOL_VERSION}\r\n\
             authorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\n{framing}\r\n\r\n"
        )
    };
    // A declared length over the limit: 413 before any body byte is sent.
    let mut declared = node.connect().await;
    declared
        .write_all(head(format!("content-length: {}", MAX_REQUEST_BYTES + 1)).as_bytes())
        .await
        .expect("write");
    let answer = tokio::time::timeout(Duration::from_secs(5), read_message(&mut declared))
        .await
        .expect("answered without the body");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.ends_with(r#"{"refused":"too_large"}"#), "{answer}");
    // A chunked body that passes the limit: 413 once it does.
    let (mut reading, mut writing) = node.connect().await.into_split();
    let writer = tokio::spawn(async move {
        writing
            .write_all(head("transfer-encoding: chunked".into()).as_bytes())
            .await?;
        let chunk = vec![b' '; 1 << 20];
        let framed = [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat();
        for _ in 0..=(MAX_REQUEST_BYTES >> 20) {
            writing.write_all(&framed).await?;
        }
        writing.write_all(b"0\r\n\r\n").await
    });
    let answer = tokio::time::timeout(Duration::from_secs(30), read_message(&mut reading))
        .await
        .expect("answered");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.ends_with(r#"{"refused":"too_large"}"#), "{answer}");
    writer.abort();
    assert!(node.engine.recorded().is_empty());
    node.stop().await;
}

#[tokio::test]
async fn a_nul_in_the_token_is_refused_by_the_parser_and_runs_nothing() {
    let node = serve_local(ConnectionLimits::default()).await;
    let mut stream = node.connect().await;
    let request = format!(
        "GET /kinds HTTP/1.1\r\nhost: node\r\n{PROTOCOL_HEADER}: {PROTOCOL_VERSION}\r\n\
         authorization: Bearer {TOKEN}\0\r\n\r\n"
    );
    let answer = answered_and_closed(&mut stream, request.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(node.engine.recorded().is_empty());
    node.stop().await;
}

/// A CA, and certificates it issued for the node (`node.test`) and for a
/// client, written as PEM files in `dir`.
pub(crate) struct Pki {
    pub(crate) ca: Vec<u8>,
    pub(crate) client_identity: Vec<u8>,
    pub(crate) files: TlsFiles,
}

pub(crate) fn pki(dir: &Path, name: &str) -> Pki {
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("{name} test CA"));
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA");
    let node_key = rcgen::KeyPair::generate().expect("key");
    let node = rcgen::CertificateParams::new(vec!["node.test".to_string()])
        .expect("params")
        .signed_by(&node_key, &ca)
        .expect("node certificate");
    let client_key = rcgen::KeyPair::generate().expect("key");
    let mut client_params =
        rcgen::CertificateParams::new(vec!["core.test".to_string()]).expect("params");
    client_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let client = client_params
        .signed_by(&client_key, &ca)
        .expect("client certificate");
    let certificate = dir.join(format!("{name}-node.crt"));
    let key = dir.join(format!("{name}-node.key"));
    let client_ca = dir.join(format!("{name}-ca.crt"));
    std::fs::write(&certificate, node.pem()).expect("write");
    write_private(&key, node_key.serialize_pem().as_bytes());
    std::fs::write(&client_ca, ca.pem()).expect("write");
    Pki {
        ca: ca.pem().into_bytes(),
        client_identity: format!("{}{}", client.pem(), client_key.serialize_pem()).into_bytes(),
        files: TlsFiles {
            certificate,
            key,
            client_ca: Some(client_ca),
        },
    }
}

fn tls_endpoint(address: std::net::SocketAddr, ca: &[u8], identity: Option<&[u8]>) -> Endpoint {
    Endpoint::Tls(TlsEndpoint {
        address,
        server_name: "node.test".into(),
        ca_pem: ca.to_vec(),
        identity_pem: identity.map(<[u8]>::to_vec),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_with_tls_verifies_both_sides_when_client_certificates_are_required() {
    let address = free_address();
    let scratch = tempfile::tempdir().expect("tempdir");
    let good = pki(scratch.path(), "good");
    let other = pki(scratch.path(), "other");
    let files = good.files.clone();
    let (ca, identity) = (good.ca.clone(), good.client_identity.clone());
    let node = serve_tls(address, files, ca, Some(identity)).await;
    let kinds = |endpoint: Endpoint| async move {
        NodeClient::new(&endpoint, TOKEN)
            .expect("client")
            .kinds(budget(5_000))
            .await
    };
    // The node's CA and a certificate it issued: served.
    let served = kinds(tls_endpoint(address, &good.ca, Some(&good.client_identity))).await;
    assert!(served.is_ok(), "{served:?}");
    // No client certificate, or one another CA issued: the handshake fails.
    assert_eq!(
        kinds(tls_endpoint(address, &good.ca, None)).await.err(),
        Some(TransportError::Lost)
    );
    assert_eq!(
        kinds(tls_endpoint(
            address,
            &good.ca,
            Some(&other.client_identity)
        ))
        .await
        .err(),
        Some(TransportError::Lost)
    );
    // The client does not trust a node whose certificate its CA did not issue.
    assert_eq!(
        kinds(tls_endpoint(
            address,
            &other.ca,
            Some(&good.client_identity)
        ))
        .await
        .err(),
        Some(TransportError::Lost)
    );
    // Plain HTTP to the TLS port gets no answer of the protocol.
    assert_eq!(
        kinds(Endpoint::Tcp(address)).await.err(),
        Some(TransportError::Lost)
    );
    assert!(node.engine.recorded().is_empty());
    node.stop().await;

    // Without `client_ca`, any client that trusts the node is served.
    let address = free_address();
    let mut files = good.files.clone();
    files.client_ca = None;
    let ca = good.ca.clone();
    let node = serve_tls(address, files, ca, None).await;
    let served = kinds(tls_endpoint(address, &good.ca, None)).await;
    assert!(served.is_ok(), "{served:?}");
    node.stop().await;
}

#[tokio::test]
async fn plain_tcp_beyond_loopback_refuses_to_start_unless_asked_for_loudly() {
    let host = || async {
        let engine = FakeEngine::start().await;
        let kinds = [(
            "plain",
            serde_json::json!({ "declaration": "valid", "action": "none" }),
        )];
        let host = std::sync::Arc::new(steered(&engine.socket, &kinds).loaded().await);
        (engine, host)
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let token = token_in(dir.path(), TOKEN);
    let (_engine, loaded) = host().await;
    let everywhere = Listen {
        tcp: Some("0.0.0.0:0".parse().expect("address")),
        ..Listen::default()
    };
    let refused = Node::new(loaded.clone(), token.clone(), 8)
        .serve(&everywhere, async {})
        .await;
    assert!(
        matches!(refused, Err(ServeError::Listen(ListenError::PlainTcp))),
        "{refused:?}"
    );
    let allowed = Listen {
        insecure_plain_tcp: true,
        ..everywhere
    };
    let served = Node::new(loaded, token, 8).serve(&allowed, async {}).await;
    assert!(served.is_ok(), "explicitly allowed: {served:?}");
}
