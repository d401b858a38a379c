//! A recording proxy in front of a real Docker Engine socket, with one
//! fault: forward a chosen request, let the engine apply it, then drop the
//! connection instead of answering (a lost response). Upgraded connections
//! (exec attach) are passed through, except a node's framed sessions, whose
//! frames it records and can lose the same way (see [`frames`]).

use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use sandbox_host::transport::wire::frame;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::UnixStream;

/// The proxy's shared state.
#[derive(Default)]
struct State {
    recorded: Mutex<Vec<String>>,
    lose: Mutex<Option<(String, String)>>,
}

/// A proxy socket in front of the engine.
pub(crate) struct Proxy {
    pub socket: PathBuf,
    state: Arc<State>,
    _dir: tempfile::TempDir,
}

fn unversioned(path: &str) -> String {
    match path.strip_prefix("/v1.") {
        Some(rest) => rest
            .split_once('/')
            .map(|(_, p)| format!("/{p}"))
            .unwrap_or_default(),
        None => path.to_string(),
    }
}

impl State {
    /// Records `line`; whether the armed loss is for it (then disarmed).
    fn record(&self, line: &str) -> bool {
        self.recorded.lock().expect("lock").push(line.to_string());
        let mut armed = self.lose.lock().expect("lock");
        let hit = armed.as_ref().is_some_and(|(method, suffix)| {
            line.starts_with(method.as_str()) && line.ends_with(suffix.as_str())
        });
        if hit {
            armed.take();
        }
        hit
    }
}

#[derive(Debug)]
struct LostResponse;

impl std::fmt::Display for LostResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("response dropped by the test proxy")
    }
}

impl std::error::Error for LostResponse {}

async fn forward(
    engine: PathBuf,
    state: Arc<State>,
    mut request: Request<Incoming>,
) -> Result<Response<Incoming>, LostResponse> {
    let line = format!("{} {}", request.method(), unversioned(request.uri().path()));
    let lose = state.record(&line);
    let shared = state.clone();
    let client_upgrade = hyper::upgrade::on(&mut request);
    let stream = UnixStream::connect(&engine)
        .await
        .map_err(|_| LostResponse)?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|_| LostResponse)?;
    tokio::spawn(connection.with_upgrades());
    let mut response = sender
        .send_request(request)
        .await
        .map_err(|_| LostResponse)?;
    if lose {
        return Err(LostResponse);
    }
    if response.status() == hyper::StatusCode::SWITCHING_PROTOCOLS {
        let engine_upgrade = hyper::upgrade::on(&mut response);
        tokio::spawn(async move {
            if let (Ok(client), Ok(engine)) = (client_upgrade.await, engine_upgrade.await) {
                let (mut client, mut engine) = (TokioIo::new(client), TokioIo::new(engine));
                if line == "GET /frames" {
                    frames(&mut client, &mut engine, &shared).await;
                } else {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut engine).await;
                }
            }
        });
    }
    Ok(response)
}

/// One frame (its prefix and body) read from `from`; `None` at the end.
async fn read_frame(from: &mut (impl AsyncRead + Unpin)) -> Option<(Vec<u8>, usize)> {
    let mut frame = vec![0; frame::PREFIX];
    from.read_exact(&mut frame).await.ok()?;
    let (length, _) = frame::answer_prefix(frame[..].try_into().ok()?);
    frame.resize(frame::PREFIX + length, 0);
    from.read_exact(&mut frame[frame::PREFIX..]).await.ok()?;
    Some((frame, length))
}

/// A node's framed session: each request frame is recorded as `FRAME
/// <operation>` and forwarded, and its answer passed back, or dropped with
/// the session when a loss is armed for it.
async fn frames(
    client: &mut (impl AsyncRead + AsyncWrite + Unpin),
    node: &mut (impl AsyncRead + AsyncWrite + Unpin),
    state: &State,
) {
    while let Some((request, _)) = read_frame(client).await {
        let call: serde_json::Value =
            serde_json::from_slice(&request[frame::PREFIX..]).unwrap_or_default();
        let operation = call["call"]
            .as_object()
            .and_then(|call| call.keys().next().cloned())
            .unwrap_or_default();
        let lose = state.record(&format!("FRAME {operation}"));
        if node.write_all(&request).await.is_err() {
            return;
        }
        let Some((answer, _)) = read_frame(node).await else {
            return;
        };
        if lose || client.write_all(&answer).await.is_err() {
            return;
        }
    }
}

impl Proxy {
    /// Starts a proxy for the engine at `engine`.
    pub(crate) async fn start(engine: PathBuf) -> Self {
        let state = Arc::new(State::default());
        let shared = state.clone();
        let (socket, dir) = super::serve_unix("proxy.sock", move |request| {
            forward(engine.clone(), shared.clone(), request)
        });
        Self {
            socket,
            state,
            _dir: dir,
        }
    }

    /// Every request seen, as `METHOD /path` without the API version prefix.
    pub(crate) fn recorded(&self) -> Vec<String> {
        self.state.recorded.lock().expect("lock").clone()
    }

    /// Requests seen so far whose line starts with `method` and ends with `suffix`.
    pub(crate) fn count(&self, method: &str, suffix: &str) -> usize {
        self.recorded()
            .iter()
            .filter(|line| line.starts_with(method) && line.ends_with(suffix))
            .count()
    }

    /// The next request matching `method` and path `suffix` reaches the
    /// engine, but its response is dropped and the connection closed.
    pub(crate) fn lose_response_of(&self, method: &str, suffix: &str) {
        *self.state.lose.lock().expect("lock") = Some((method.to_string(), suffix.to_string()));
    }
}
