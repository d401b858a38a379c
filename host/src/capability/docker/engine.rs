//! The Engine API transport: HTTP/1.1 over the node's explicit Unix socket,
//! with bollard's models for the JSON. It exists because the broker must
//! control what bollard's request layer does not: every path carries the
//! pinned API version (`/v1.45/…`) and percent-encoded segments, every
//! response body is read under a bound, and an exec's multiplexed output is
//! decoded frame by frame into bounded buffers, so a hostile or broken
//! engine costs bounded memory.

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::header::{CONNECTION, CONTENT_TYPE, UPGRADE};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyperlocal::UnixConnector;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// The Engine API version every request path names.
pub const API_VERSION: &str = "1.45";
/// Largest JSON body the broker reads from the engine.
pub(super) const MAX_JSON_BYTES: usize = 4 << 20;
/// Largest error body read (and discarded) before a connection is reused.
const MAX_ERROR_BYTES: usize = 64 << 10;
/// Size of the scratch buffer output beyond the bound is discarded through.
const DISCARD_CHUNK: usize = 16 << 10;

/// Bytes kept verbatim in a path segment: unreserved characters, plus `:`
/// and `@` (image digests). Everything else is percent-encoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b':')
    .remove(b'@');

/// How a request ended without a usable answer. Carries no engine text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EngineError {
    /// The socket did not accept a connection: nothing was sent.
    Unreachable,
    /// The engine answered with this error status.
    Status(u16),
    /// The request may have reached the engine, but its answer was lost,
    /// malformed or over its bound.
    Unconfirmed,
}

/// The body of a request.
pub(super) enum Body {
    /// No body.
    Empty,
    /// A JSON document.
    Json(Vec<u8>),
    /// A tar archive, in parts sent one after another (the host's
    /// canonical headers between slices of the component's own bytes: no
    /// copy of the data).
    Tar(Vec<Bytes>),
}

/// A request body of parts sent in order, with its exact length (so the
/// request carries a `content-length`).
pub(crate) struct Parts {
    parts: std::collections::VecDeque<Bytes>,
    remaining: u64,
}

/// Most bytes handed to the transport at once: it may copy what it is
/// given into its own buffer, so a large part goes in slices of this size
/// (slices of the same bytes, not copies).
const PART_BYTES: usize = 256 << 10;

impl Parts {
    fn new(parts: impl IntoIterator<Item = Bytes>) -> Self {
        let parts: std::collections::VecDeque<Bytes> = parts
            .into_iter()
            .flat_map(|part| {
                (0..part.len())
                    .step_by(PART_BYTES)
                    .map(move |at| part.slice(at..(at + PART_BYTES).min(part.len())))
            })
            .collect();
        let remaining = parts.iter().map(|part| part.len() as u64).sum();
        Self { parts, remaining }
    }
}

impl http_body::Body for Parts {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let part = self.parts.pop_front();
        if let Some(part) = &part {
            self.remaining -= part.len() as u64;
        }
        std::task::Poll::Ready(part.map(|part| Ok(http_body::Frame::data(part))))
    }

    fn is_end_stream(&self) -> bool {
        self.parts.is_empty()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.remaining)
    }
}

impl Body {
    /// `value` as a JSON body.
    pub(super) fn json(value: &impl Serialize) -> Self {
        // Serialising the engine's models into a Vec cannot fail.
        Body::Json(serde_json::to_vec(value).unwrap_or_default())
    }
}

/// What an exec's attached streams delivered.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct ExecStreams {
    /// Standard output, up to the bound.
    pub stdout: Vec<u8>,
    /// Standard error, up to the bound.
    pub stderr: Vec<u8>,
    /// A stream went over the bound; reading stopped there.
    pub overflowed: bool,
}

/// A pooled HTTP/1.1 client of an engine's Unix socket.
type Pooled = Client<UnixConnector, Parts>;

thread_local! {
    /// Pools of this thread's own, by authority, once
    /// [`keep_pools_on_this_thread`] was called on it.
    static THREAD_POOLS: RefCell<Option<HashMap<String, Pooled>>> = const { RefCell::new(None) };
}

/// From now on, engine requests made on this thread use connections of
/// this thread's own. A pooled connection is driven by a task on the
/// runtime that opened it: on a thread that runs a runtime of its own (a
/// node's connection threads), a connection opened elsewhere would wake
/// that other runtime's thread twice per request.
pub(crate) fn keep_pools_on_this_thread() {
    THREAD_POOLS.with(|pools| pools.borrow_mut().get_or_insert_with(HashMap::new).clear());
}

/// A client with a pool of its own.
fn pooled() -> Pooled {
    Client::builder(TokioExecutor::new()).build(UnixConnector)
}

/// A pooled HTTP/1.1 client for one engine socket.
#[derive(Clone)]
pub(super) struct Engine {
    client: Pooled,
    /// `unix://<hex of the socket path>:0`, the authority hyperlocal dials.
    authority: String,
}

impl Engine {
    /// A client for the engine at `socket` (nothing is dialled yet).
    pub(super) fn new(socket: &Path) -> Self {
        let client = pooled();
        let authority = format!(
            "unix://{}:0",
            hex::encode(socket.as_os_str().as_encoded_bytes())
        );
        Self { client, authority }
    }

    /// The URI of `segments` under the pinned version (or unversioned, for
    /// the version probe), with `query` form-encoded.
    fn uri(&self, versioned: bool, segments: &[&str], query: &[(&str, &str)]) -> String {
        let mut uri = self.authority.clone();
        if versioned {
            uri.push_str("/v");
            uri.push_str(API_VERSION);
        }
        for segment in segments {
            uri.push('/');
            uri.extend(utf8_percent_encode(segment, SEGMENT));
        }
        if !query.is_empty() {
            uri.push('?');
            uri.push_str(
                &form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(query)
                    .finish(),
            );
        }
        uri
    }

    fn request(
        &self,
        method: Method,
        uri: String,
        body: Body,
    ) -> Result<Request<Parts>, EngineError> {
        let builder = Request::builder().method(method).uri(uri);
        let (builder, parts) = match body {
            Body::Empty => (builder, Vec::new()),
            Body::Json(json) => (
                builder.header(CONTENT_TYPE, "application/json"),
                vec![json.into()],
            ),
            Body::Tar(parts) => (builder.header(CONTENT_TYPE, "application/x-tar"), parts),
        };
        // Only a malformed URI fails here, and nothing has been sent.
        builder
            .body(Parts::new(parts))
            .map_err(|_| EngineError::Unreachable)
    }

    async fn send(
        &self,
        request: Request<Parts>,
    ) -> Result<hyper::Response<hyper::body::Incoming>, EngineError> {
        let thread_pool = THREAD_POOLS.with(|pools| {
            let mut pools = pools.borrow_mut();
            let pools = pools.as_mut()?;
            if let Some(pool) = pools.get(&self.authority) {
                return Some(pool.clone());
            }
            let pool = pooled();
            pools.insert(self.authority.clone(), pool.clone());
            Some(pool)
        });
        let client = thread_pool.as_ref().unwrap_or(&self.client);
        client.request(request).await.map_err(|error| {
            if error.is_connect() {
                EngineError::Unreachable
            } else {
                EngineError::Unconfirmed
            }
        })
    }

    /// One request; a success answer's body, read under [`MAX_JSON_BYTES`].
    pub(super) async fn call(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, &str)],
        body: Body,
    ) -> Result<Bytes, EngineError> {
        let request = self.request(method, self.uri(true, segments, query), body)?;
        read_answer(self.send(request).await?).await
    }

    /// [`Self::call`] and decode the JSON answer.
    pub(super) async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, &str)],
        body: Body,
    ) -> Result<T, EngineError> {
        let bytes = self.call(method, segments, query, body).await?;
        serde_json::from_slice(&bytes).map_err(|_| EngineError::Unconfirmed)
    }

    /// `GET /version` without a version prefix: an engine older than the
    /// pinned API refuses versioned paths, and this is how it is detected.
    pub(super) async fn version_unversioned<T: DeserializeOwned>(&self) -> Result<T, EngineError> {
        let request = self.request(Method::GET, self.uri(false, &["version"], &[]), Body::Empty)?;
        let bytes = read_answer(self.send(request).await?).await?;
        serde_json::from_slice(&bytes).map_err(|_| EngineError::Unconfirmed)
    }

    /// Starts exec `id` attached (the connection is upgraded to a raw
    /// stream), writes `stdin` and closes it, and reads the multiplexed
    /// output into buffers of at most `limit` bytes each. Reading stops at
    /// the first byte over the bound: the outcome is then incomplete anyway.
    /// The start runs to its end; writing and reading stop at `deadline`
    /// (the command goes on; its outcome is unknown).
    pub(super) async fn exec_start(
        &self,
        id: &str,
        stdin: Option<&[u8]>,
        limit: usize,
        deadline: std::time::Instant,
    ) -> Result<ExecStreams, EngineError> {
        let body = Body::json(&serde_json::json!({ "Detach": false, "Tty": false }));
        let mut request = self.request(
            Method::POST,
            self.uri(true, &["exec", id, "start"], &[]),
            body,
        )?;
        let headers = request.headers_mut();
        headers.insert(
            CONNECTION,
            hyper::header::HeaderValue::from_static("Upgrade"),
        );
        headers.insert(UPGRADE, hyper::header::HeaderValue::from_static("tcp"));
        let response = self.send(request).await?;
        if response.status() != StatusCode::SWITCHING_PROTOCOLS {
            let status = response.status();
            drain(response).await;
            return Err(if status.is_success() {
                EngineError::Unconfirmed
            } else {
                EngineError::Status(status.as_u16())
            });
        }
        let upgraded = hyper::upgrade::on(response)
            .await
            .map_err(|_| EngineError::Unconfirmed)?;
        let (mut reader, mut writer) = tokio::io::split(TokioIo::new(upgraded));
        let write = async {
            if let Some(stdin) = stdin {
                writer.write_all(stdin).await?;
            }
            writer.shutdown().await
        };
        let streams = async { tokio::join!(write, read_frames(&mut reader, limit)) };
        let (written, read) = tokio::time::timeout_at(deadline.into(), streams)
            .await
            .map_err(|_| EngineError::Unconfirmed)?;
        // A command may exit without reading all of its stdin; its outcome
        // is still known, so a broken pipe on the write side is no error.
        if written.is_err() {
            tracing::debug!(event = "exec_stdin_not_consumed");
        }
        read.map_err(|_| EngineError::Unconfirmed)
    }
}

/// The body of a success answer under [`MAX_JSON_BYTES`]; an error status
/// with its body read (bounded) and discarded, so no engine text travels.
async fn read_answer(
    response: hyper::Response<hyper::body::Incoming>,
) -> Result<Bytes, EngineError> {
    let status = response.status();
    if !(status.is_success() || status == StatusCode::NOT_MODIFIED) {
        drain(response).await;
        return Err(EngineError::Status(status.as_u16()));
    }
    Limited::new(response.into_body(), MAX_JSON_BYTES)
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .map_err(|_| EngineError::Unconfirmed)
}

/// Reads a small body to its end so the connection can be reused; a larger
/// one is dropped with its connection.
async fn drain(response: hyper::Response<hyper::body::Incoming>) {
    let _ = Limited::new(response.into_body(), MAX_ERROR_BYTES)
        .collect()
        .await;
}

/// Decodes the engine's multiplexed stream: frames of an 8-byte header
/// (stream, three zero bytes, big-endian length) and their payload. Payload
/// beyond a buffer's room is never stored: reading stops at the first
/// overflow, so memory stays at `2 × limit` plus one scratch chunk whatever
/// the frames claim.
pub(super) async fn read_frames(
    reader: &mut (impl AsyncRead + Unpin),
    limit: usize,
) -> std::io::Result<ExecStreams> {
    let mut streams = ExecStreams::default();
    let mut header = [0u8; 8];
    loop {
        // A clean end is an end between frames.
        if reader.read(&mut header[..1]).await? == 0 {
            return Ok(streams);
        }
        reader.read_exact(&mut header[1..]).await?;
        let mut remaining =
            u32::from_be_bytes([header[4], header[5], header[6], header[7]]) as usize;
        let buffer = match header[0] {
            1 => Some(&mut streams.stdout),
            2 => Some(&mut streams.stderr),
            _ => None,
        };
        match buffer {
            Some(buffer) => {
                let room = limit.saturating_sub(buffer.len());
                let keep = remaining.min(room);
                let start = buffer.len();
                buffer.resize(start + keep, 0);
                reader.read_exact(&mut buffer[start..]).await?;
                remaining -= keep;
                if remaining > 0 {
                    streams.overflowed = true;
                    return Ok(streams);
                }
            }
            None => discard(reader, remaining).await?,
        }
    }
}

async fn discard(
    reader: &mut (impl AsyncRead + Unpin),
    mut remaining: usize,
) -> std::io::Result<()> {
    let mut scratch = [0u8; DISCARD_CHUNK];
    while remaining > 0 {
        let step = remaining.min(DISCARD_CHUNK);
        reader.read_exact(&mut scratch[..step]).await?;
        remaining -= step;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_part_goes_in_slices_of_the_same_bytes_with_its_exact_length() {
        use http_body::Body as _;
        let big = Bytes::from(vec![1u8; 3 * PART_BYTES + 10]);
        let mut parts = Parts::new([Bytes::from_static(b"head"), big.clone(), Bytes::new()]);
        assert_eq!(parts.size_hint().exact(), Some(4 + big.len() as u64));
        let waker = futures_util::task::noop_waker();
        let mut context = std::task::Context::from_waker(&waker);
        let mut sent = Vec::new();
        while let std::task::Poll::Ready(Some(Ok(frame))) =
            std::pin::Pin::new(&mut parts).poll_frame(&mut context)
        {
            let data = frame.into_data().expect("data");
            assert!(data.len() <= PART_BYTES);
            sent.push(data);
        }
        assert_eq!(sent.len(), 1 + 4);
        assert_eq!(sent[1].as_ptr(), big.as_ptr(), "a slice, not a copy");
        assert_eq!(sent.concat().len(), 4 + big.len());
        assert!(parts.is_end_stream());
    }
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn frame(stream: u8, payload: &[u8]) -> Vec<u8> {
        let mut bytes = vec![stream, 0, 0, 0];
        bytes.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        bytes.extend_from_slice(payload);
        bytes
    }

    async fn decode(bytes: &[u8], limit: usize) -> std::io::Result<ExecStreams> {
        read_frames(&mut &bytes[..], limit).await
    }

    #[tokio::test]
    async fn frames_are_demultiplexed_in_order() {
        let mut bytes = frame(1, b"out-1 ");
        bytes.extend(frame(2, b"err"));
        bytes.extend(frame(1, b"out-2"));
        bytes.extend(frame(0, b"stdin echo is ignored"));
        let streams = decode(&bytes, 64).await.expect("decoded");
        assert_eq!(streams.stdout, b"out-1 out-2");
        assert_eq!(streams.stderr, b"err");
        assert!(!streams.overflowed);
    }

    #[tokio::test]
    async fn output_at_the_bound_fits_and_one_byte_more_overflows() {
        let fits = decode(&frame(1, &[7; 16]), 16).await.expect("decoded");
        assert_eq!((fits.stdout.len(), fits.overflowed), (16, false));
        let over = decode(&frame(1, &[7; 17]), 16).await.expect("decoded");
        assert_eq!((over.stdout.len(), over.overflowed), (16, true));
    }

    #[tokio::test]
    async fn a_frame_claiming_four_gib_costs_only_the_bound() {
        // The header claims u32::MAX bytes; only 32 follow. The decoder keeps
        // at most the bound and stops, never allocating what the header says.
        let mut bytes = vec![1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
        bytes.extend_from_slice(&[1; 32]);
        let streams = decode(&bytes, 16).await.expect("decoded");
        assert_eq!((streams.stdout.len(), streams.overflowed), (16, true));
    }

    #[tokio::test]
    async fn a_stream_cut_inside_a_frame_is_an_error() {
        let mut bytes = frame(1, b"complete");
        bytes.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 9, b'x']);
        assert!(decode(&bytes, 64).await.is_err());
        assert!(decode(&[2, 0, 0], 64).await.is_err(), "cut inside a header");
    }

    #[test]
    fn paths_carry_the_version_and_encode_segments() {
        let engine = Engine::new(Path::new("/run/e.sock"));
        let uri = engine.uri(
            true,
            &["images", "get?names=x&y=#", "json"],
            &[("a", "b c")],
        );
        let authority = format!("unix://{}:0", hex::encode("/run/e.sock"));
        assert_eq!(
            uri,
            format!("{authority}/v1.45/images/get%3Fnames%3Dx%26y%3D%23/json?a=b+c")
        );
        assert_eq!(
            engine.uri(false, &["version"], &[]),
            format!("{authority}/version")
        );
        assert!(
            engine
                .uri(true, &["images", "name@sha256:ab", "json"], &[])
                .ends_with("/v1.45/images/name@sha256:ab/json")
        );
    }

    /// An engine stand-in that answers every request `{}` on keep-alive
    /// connections, and counts the connections it accepted.
    fn counting_engine(dir: &Path) -> (std::path::PathBuf, Arc<AtomicUsize>) {
        use std::io::{BufRead, BufReader, Write};
        let socket = dir.join("engine.sock");
        let listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counted.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    let mut stream = stream;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        match reader.read_line(&mut line) {
                            Ok(0) | Err(_) => return,
                            Ok(_) if line == "\r\n" => {
                                let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
                                if stream.write_all(answer.as_bytes()).is_err() {
                                    return;
                                }
                            }
                            Ok(_) => {}
                        }
                    }
                });
            }
        });
        (socket, accepted)
    }

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn a_thread_that_keeps_its_own_pools_opens_its_own_connections() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (socket, accepted) = counting_engine(dir.path());
        let engine = Engine::new(&socket);
        // A connection goes back to its pool once the connection's task has
        // seen the answer end; a call waits for that before the next one
        // (without it the next call may find the pool empty and dial).
        let get = |engine: &Engine| {
            let engine = engine.clone();
            async move {
                let answer = engine.call(Method::GET, &["info"], &[], Body::Empty).await;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                answer
            }
        };
        // The shared pool's connection is driven by this runtime's worker,
        // which stays.
        let shared = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        for _ in 0..2 {
            assert_eq!(shared.block_on(get(&engine)).expect("answered"), "{}");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1, "the shared pool reuses");

        let own = engine.clone();
        std::thread::spawn(move || {
            keep_pools_on_this_thread();
            let runtime = current_thread();
            for _ in 0..2 {
                runtime.block_on(get(&own)).expect("answered");
            }
        })
        .join()
        .expect("thread");
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            2,
            "a thread with its own pools opens one connection and reuses it"
        );

        let other = engine.clone();
        std::thread::spawn(move || current_thread().block_on(get(&other)).map(|_| ()))
            .join()
            .expect("thread")
            .expect("answered");
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            2,
            "any other thread shares the pool"
        );
    }
}
