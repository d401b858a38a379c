//! Framed sessions (`GET /frames`) opened by hand on a node's socket, to
//! send what `NodeClient` never would, and a fake node to check what the
//! client does with an answer marked last.

use super::*;
use sandbox_host::transport::wire::frame;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// The head that asks for a session, with `token` and `upgrade`.
fn upgrade_head(version: &str, token: Option<&str>, upgrade: bool) -> String {
    let mut head =
        format!("GET /frames HTTP/1.1\r\nhost: node\r\n{PROTOCOL_HEADER}: {version}\r\n");
    if let Some(token) = token {
        head.push_str(&format!("authorization: Bearer {token}\r\n"));
    }
    if upgrade {
        head.push_str("upgrade: oac-frames\r\nconnection: upgrade\r\n");
    }
    head.push_str("\r\n");
    head
}

/// A session on the node's socket, its 101 read.
async fn open(node: &Served) -> UnixStream {
    let mut stream = UnixStream::connect(&node.socket).await.expect("connect");
    upgrade(&mut stream).await;
    stream
}

/// Asks for a session on `stream` and reads the 101; its head.
async fn upgrade(stream: &mut UnixStream) -> String {
    stream
        .write_all(upgrade_head(PROTOCOL_VERSION, Some(TOKEN), true).as_bytes())
        .await
        .expect("write");
    let head = read_message(stream).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("{PROTOCOL_HEADER}: {PROTOCOL_VERSION}")),
        "{head}"
    );
    head
}

async fn send(stream: &mut UnixStream, body: &[u8]) {
    stream
        .write_all(&frame::request_of(body))
        .await
        .expect("write frame");
}

/// The next answer frame as JSON and whether it is the session's last;
/// `None` if the node closed the session instead.
async fn answer(stream: &mut (impl AsyncRead + Unpin)) -> Option<(serde_json::Value, bool)> {
    let mut prefix = [0; frame::PREFIX];
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut prefix))
        .await
        .expect("the node answers or closes");
    read.ok()?;
    let (length, last) = frame::answer_prefix(prefix);
    let mut body = vec![0; length];
    stream
        .read_exact(&mut body)
        .await
        .expect("the answer's body");
    Some((serde_json::from_slice(&body).expect("JSON"), last))
}

fn get_info(kind: &str, timeout_ms: u32) -> Vec<u8> {
    serde_json::to_vec(&get_info_body(kind, timeout_ms)).expect("JSON")
}

fn is_ok(answer: &Option<(serde_json::Value, bool)>) -> bool {
    matches!(answer, Some((json, false)) if json["outcome"]["ok"]["info"]["state"].is_string())
}

fn refused(code: &str, last: bool) -> Option<(serde_json::Value, bool)> {
    Some((serde_json::json!({ "refused": code }), last))
}

/// A `get-info` of `plain` on `session` is answered with a success
/// (`why` it must be).
async fn answered_ok(session: &mut UnixStream, why: &str) {
    send(session, &get_info("plain", 5_000)).await;
    assert!(is_ok(&answer(session).await), "{why}");
}

/// A node serving `plain`, and a session on it that has answered a call.
async fn serve_with_a_session_in_use() -> (Served, UnixStream) {
    let node = serve(&[("plain", steer("none"))], 8).await;
    let mut session = open(&node).await;
    answered_ok(&mut session, "a call on the session").await;
    (node, session)
}

#[tokio::test]
async fn a_session_runs_calls_in_turn_and_ends_only_when_out_of_step() {
    let (node, mut session) = serve_with_a_session_in_use().await;
    send(&mut session, b"not JSON").await;
    assert_eq!(answer(&mut session).await, refused("invalid", false));
    send(&mut session, &get_info("plain", 0)).await;
    assert_eq!(
        answer(&mut session).await,
        refused("invalid", false),
        "a budget outside 1..=120000"
    );
    answered_ok(
        &mut session,
        "refusals that read the whole frame keep the session in step",
    )
    .await;
    let oversized = (MAX_REQUEST_BYTES as u32 + 1).to_be_bytes();
    session.write_all(&oversized).await.expect("write");
    assert_eq!(
        answer(&mut session).await,
        refused("too_large", true),
        "its body is not read: the session is out of step and ends"
    );
    assert_eq!(
        answer(&mut session).await,
        None,
        "closed after the last answer"
    );
    node.stop().await;
}

#[tokio::test]
async fn a_session_is_opened_only_with_the_version_the_token_and_the_upgrade() {
    let node = serve(&[("plain", steer("none"))], 8).await;
    let before = node.engine.recorded().len();
    let cases = [
        (
            upgrade_head("oac-node/1", Some(TOKEN), true),
            "400",
            "version_mismatch",
        ),
        (
            upgrade_head(PROTOCOL_VERSION, None, true),
            "401",
            "unauthorized",
        ),
        (
            upgrade_head(PROTOCOL_VERSION, Some("wrong"), true),
            "401",
            "unauthorized",
        ),
        (
            upgrade_head(PROTOCOL_VERSION, Some(TOKEN), false),
            "400",
            "invalid",
        ),
    ];
    for (head, status, code) in cases {
        let mut stream = UnixStream::connect(&node.socket).await.expect("connect");
        stream.write_all(head.as_bytes()).await.expect("write");
        let answer = read_message(&mut stream).await;
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{answer}"
        );
        assert!(
            answer.contains(&format!("\"refused\":\"{code}\"")),
            "{answer}"
        );
        // No session: a frame sent now (if the node has not closed the
        // connection yet) is not an HTTP request either.
        let _ = stream
            .write_all(&frame::request_of(&get_info("plain", 5_000)))
            .await;
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
        assert!(
            !String::from_utf8_lossy(&rest).contains("\"ok\""),
            "nothing ran on a refused upgrade"
        );
    }
    assert_eq!(
        node.engine.recorded().len(),
        before,
        "nothing reached the engine"
    );
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_session_skips_the_frame_and_stays_in_step() {
    let node = serve(&[("spin", steer("loop")), ("plain", steer("none"))], 1).await;
    let spinning = spin_in_background(&node.client(), 1_000).await;
    let mut session = open(&node).await;
    send(&mut session, &get_info("plain", 5_000)).await;
    assert_eq!(answer(&mut session).await, refused("busy", false));
    let _ = spinning.await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    answered_ok(&mut session, "the same session, in step").await;
    node.stop().await;
}

/// A `get-info` on `session` is answered with an outcome marked last, and
/// the session is closed after it.
async fn answers_once_more_then_ends(session: &mut UnixStream) {
    send(session, &get_info("plain", 5_000)).await;
    let last = answer(session).await;
    assert!(
        matches!(&last, Some((json, true)) if json["outcome"]["ok"].is_object()),
        "{last:?}"
    );
    assert_eq!(answer(session).await, None, "closed after its last answer");
}

/// A node whose connections retire `lifetime` after they open.
async fn serve_retiring_after(lifetime: Duration) -> Served {
    let limits = ConnectionLimits {
        max_lifetime: lifetime,
        ..ConnectionLimits::default()
    };
    serve_set_up(&[("plain", steer("none"))], 8, None, move |node| {
        node.with_limits(limits)
    })
    .await
}

#[tokio::test]
async fn past_its_lifetime_a_session_marks_its_answer_last() {
    let node = serve_retiring_after(Duration::from_millis(200)).await;
    let mut session = open(&node).await;
    answered_ok(&mut session, "a call on the session").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    answers_once_more_then_ends(&mut session).await;
    node.stop().await;
}

#[tokio::test]
async fn a_connection_past_its_lifetime_still_answers_one_frame() {
    let node = serve_retiring_after(Duration::from_millis(200)).await;
    let mut stream = UnixStream::connect(&node.socket).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let head = upgrade(&mut stream).await;
    assert!(!head.to_ascii_lowercase().contains("close"), "{head}");
    answers_once_more_then_ends(&mut stream).await;
    node.stop().await;
}

/// A node serving `plain` that waits at most `read_timeout` for what it
/// reads, and a session on it.
async fn session_reading_for(read_timeout: Duration) -> (Served, UnixStream) {
    let node = serve_on(&[("plain", steer("none"))], 8, None, read_timeout).await;
    let session = open(&node).await;
    (node, session)
}

#[tokio::test]
async fn a_session_in_use_outlives_its_read_timeout_and_an_idle_one_is_closed() {
    let read_timeout = Duration::from_secs(1);
    let (node, mut session) = session_reading_for(read_timeout).await;
    // A frame every fifth of the read timeout, for three read timeouts.
    let started = Instant::now();
    let mut last_answer = Instant::now();
    while started.elapsed() < read_timeout * 3 {
        tokio::time::sleep(read_timeout / 5).await;
        answered_ok(&mut session, "a session in use stays open").await;
        last_answer = Instant::now();
    }
    // Then only a prefix begun: idle all the same.
    session.write_all(&[0, 0]).await.expect("write");
    assert_eq!(
        answer(&mut session).await,
        None,
        "an idle session is closed"
    );
    assert!(
        last_answer.elapsed() >= read_timeout / 2,
        "closed for its idleness, not at once"
    );
    node.stop().await;
}

/// Bytes sent one at a time never buy more time: a prefix's wait counts
/// from the last answer, a body's from its prefix.
#[tokio::test]
async fn a_frame_trickled_byte_by_byte_does_not_extend_its_wait() {
    let read_timeout = Duration::from_secs(2);
    let (node, mut session) = session_reading_for(read_timeout).await;

    // A prefix: three bytes within the read timeout (the last at 0.9 of
    // it), the rest of the frame at 1.7. The session is closed at 1.0;
    // had each byte restarted the wait, it would still be open at 1.7
    // (until 1.9) and the frame would be answered.
    answered_ok(&mut session, "a call on the session").await;
    let request = frame::request_of(&get_info("plain", 5_000));
    // (A write may fail: on a loaded runner the node may have closed the
    // session before a late byte, and has closed it before the rest.)
    for byte in &request[..3] {
        tokio::time::sleep(read_timeout * 3 / 10).await;
        let _ = session.write_all(&[*byte]).await;
    }
    tokio::time::sleep(read_timeout * 8 / 10).await;
    let _ = session.write_all(&request[3..]).await;
    assert_eq!(
        answer(&mut session).await,
        None,
        "closed a read timeout after its last answer, the frame unanswered"
    );

    // A body: one byte every fifth of the read timeout, never the last.
    // Had each byte restarted the wait, no answer would ever come.
    let (mut session, mut trickled) = open(&node).await.into_split();
    let body = get_info("plain", 5_000);
    let writer = tokio::spawn(async move {
        let prefix = u32::try_from(body.len()).expect("small").to_be_bytes();
        if trickled.write_all(&prefix).await.is_err() {
            return;
        }
        for byte in &body[..body.len() - 1] {
            tokio::time::sleep(read_timeout / 5).await;
            if trickled.write_all(&[*byte]).await.is_err() {
                return;
            }
        }
    });
    assert_eq!(
        answer(&mut session).await,
        refused("too_slow", true),
        "a body not read within the read timeout is refused, and the session ends"
    );
    assert_eq!(answer(&mut session).await, None);
    writer.abort();
    node.stop().await;
}

#[tokio::test]
async fn shutdown_ends_an_idle_session_at_once() {
    let (node, mut session) = serve_with_a_session_in_use().await;
    let started = Instant::now();
    node.stop().await;
    assert!(
        started.elapsed() < READ_TIMEOUT / 2,
        "an idle session does not hold shutdown for its read timeout"
    );
    assert_eq!(answer(&mut session).await, None);
}

/// A fake node whose every answer frame is marked last but which keeps the
/// session open and reads nothing more: a client that sent a second frame
/// there would wait for its answer forever.
#[tokio::test]
async fn the_client_never_sends_after_a_last_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("last.sock");
    let listener = tokio::net::UnixListener::bind(&socket).expect("bind");
    let sessions = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let opened = sessions.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            opened.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                let head = read_message(&mut stream).await;
                assert!(head.starts_with("GET /frames"), "{head}");
                let upgraded = format!(
                    "HTTP/1.1 101 Switching Protocols\r\nupgrade: oac-frames\r\nconnection: upgrade\r\n{PROTOCOL_HEADER}: {PROTOCOL_VERSION}\r\n\r\n"
                );
                stream.write_all(upgraded.as_bytes()).await.expect("101");
                let length = stream.read_u32().await.expect("a frame") as usize;
                let mut body = vec![0; length];
                stream.read_exact(&mut body).await.expect("its body");
                let outcome = serde_json::to_vec(&Outcome::Ok(wire::Value::Done)).expect("JSON");
                stream
                    .write_all(&frame::answer_outcome(&outcome, true))
                    .await
                    .expect("answer");
                // Held open, never read again.
                tokio::time::sleep(Duration::from_secs(60)).await;
                drop(stream);
            });
        }
    });
    let client = NodeClient::new(&Endpoint::Unix(socket), TOKEN).expect("client");
    for _ in 0..2 {
        let answered = client
            .call("plain", budget(3_000), Call::GetInfo(reference("a")))
            .await;
        assert_eq!(answered, Ok(Outcome::Ok(wire::Value::Done)));
    }
    assert_eq!(
        sessions.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "the second call opened a session of its own"
    );
}

#[tokio::test]
async fn the_client_sends_no_frame_the_node_would_refuse_unread() {
    let node = serve(&[("plain", steer("none"))], 8).await;
    let lossy = crate::support::proxy::Proxy::start(node.socket.clone()).await;
    let client = NodeClient::new(&Endpoint::Unix(lossy.socket.clone()), TOKEN).expect("client");
    // 55 MiB of stdin is 73 MiB of base64: over the frame bound.
    let huge = Call::RunCommand(wire::OnAllocation {
        reference: reference("a"),
        request: Command {
            args: vec!["cat".into()],
            directory: None,
            stdin: Some(vec![0; 55 << 20]),
        },
    });
    assert_eq!(
        client.call("plain", budget(5_000), huge).await,
        Err(TransportError::Refused("too_large"))
    );
    assert!(
        lossy.recorded().is_empty(),
        "nothing was sent: {:?}",
        lossy.recorded()
    );
    node.stop().await;
}
