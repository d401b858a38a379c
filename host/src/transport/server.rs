//! The node side of the transport: checks version, token, endpoint, declared
//! frame size, the in-flight limit, then the body (its arrival in time, its
//! size, its decoding and its budget), in that order, before anything runs; then runs
//! the operation through the host (which answers an unsupported operation
//! before any native I/O) within the budget counted from receipt.

use super::connection::{Activity, Admission, ConnectionLimits, Guarded, Slot, Slots};
use super::listen::{Listen, Token};
use super::threads::{self, ConnectionThreads, Movable};
use super::tls::{self, TlsError};
use super::wire::{
    self, Call, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES, Outcome, PROTOCOL_HEADER, PROTOCOL_VERSION,
    Refusal, Value, frame,
};
use crate::declaration::Decision;
use crate::host::Host;
use crate::kind::{Kind, RunsToEnd};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use oac_provider_api::Budget;
use oac_provider_api::own_wakes::repoll_own_wakes;
use oac_provider_api::police;
use oac_provider_api::provider::{CheckpointProvider, SandboxProvider};
use oac_provider_api::types::{Error, Failure, Info};
use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// How long a probe may take when `/health` asks.
const HEALTH_BUDGET_MS: u32 = 10_000;

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listen address is taken or cannot be bound.
    #[error("cannot listen on {0}: {1}")]
    Bind(String, std::io::Error),
    /// The Unix socket path holds something else; it is left alone.
    #[error("{0} exists and is not a socket")]
    NotASocket(String),
    /// Another process is serving on this Unix socket.
    #[error("{0} is in use by a running server")]
    InUse(String),
    /// TLS is configured but cannot be served.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// `listen` breaks a rule (see [`Listen::check`]).
    #[error(transparent)]
    Listen(#[from] super::listen::ListenError),
    /// The threads that serve connections could not be started.
    #[error("cannot start the connection threads: {0}")]
    Threads(std::io::Error),
}

/// A node: the loaded host, the token clients present, and the in-flight limit.
pub struct Node {
    host: Arc<Host>,
    token: Token,
    in_flight: Arc<Semaphore>,
    operations: TaskTracker,
    limits: ConnectionLimits,
    /// Bytes of request bodies held at once (one permit per byte).
    bodies: Arc<Semaphore>,
}

/// Why a request is turned away before anything runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refused {
    VersionMismatch,
    Unauthorized,
    TooLarge,
    TooSlow,
    Invalid,
    Busy,
    NoSuchEndpoint,
}

impl Refused {
    fn code(self) -> &'static str {
        match self {
            Refused::VersionMismatch => "version_mismatch",
            Refused::Unauthorized => "unauthorized",
            Refused::TooLarge => "too_large",
            Refused::TooSlow => "too_slow",
            Refused::Invalid => "invalid",
            Refused::Busy => "busy",
            Refused::NoSuchEndpoint => "no_such_endpoint",
        }
    }

    fn status(self) -> StatusCode {
        match self {
            Refused::VersionMismatch | Refused::Invalid => StatusCode::BAD_REQUEST,
            Refused::Unauthorized => StatusCode::UNAUTHORIZED,
            Refused::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Refused::TooSlow => StatusCode::REQUEST_TIMEOUT,
            Refused::Busy => StatusCode::SERVICE_UNAVAILABLE,
            Refused::NoSuchEndpoint => StatusCode::NOT_FOUND,
        }
    }
}

/// A JSON answer stamped with the protocol version.
fn answer(status: StatusCode, body: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => stamped(status, bytes),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// Serialized JSON, stamped with the protocol version.
fn stamped(status: StatusCode, bytes: Vec<u8>) -> Response {
    let mut response = (status, bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(PROTOCOL_HEADER, HeaderValue::from_static(PROTOCOL_VERSION));
    response
}

fn refuse(refused: Refused) -> Response {
    answer(
        refused.status(),
        &Refusal {
            refused: refused.code().to_string(),
        },
    )
}

fn error(error: Error) -> Outcome {
    Outcome::Error { error, info: None }
}

fn failure(failure: Failure) -> Outcome {
    Outcome::Error {
        error: failure.error,
        info: failure.info,
    }
}

fn outcome<T>(answer: Result<T, Error>, value: impl FnOnce(T) -> Value) -> Outcome {
    answer.map_or_else(error, |ok| Outcome::Ok(value(ok)))
}

fn mutation(answer: Result<Info, Failure>) -> Outcome {
    answer.map_or_else(failure, |info| Outcome::Ok(Value::Info(info)))
}

/// Runs one call on the kind (the provider) and shapes its answer.
async fn execute(kind: &Kind, call: Call, budget: Budget) -> Outcome {
    match call {
        Call::Create(b) => mutation(kind.create(b, budget).await),
        Call::GetInfo(r) => outcome(kind.get_info(r, budget).await, Value::Info),
        Call::Renew(r) => mutation(kind.renew(r, budget).await),
        Call::Kill(r) => mutation(kind.kill(r, budget).await),
        Call::RunCommand(c) => outcome(
            kind.run_command(c.reference, c.request, budget).await,
            Value::CommandResult,
        ),
        Call::Observe(t) => outcome(kind.observe(t, budget).await, Value::Sample),
        Call::Initial(r) => outcome(kind.initial(r, budget).await, Value::Compute),
        Call::NewCompute(n) => outcome(
            kind.new_compute(n.reference, n.generation, n.restored_from, budget)
                .await,
            Value::Compute,
        ),
        Call::GetCompute(c) => outcome(
            kind.get_compute(c.reference, c.compute, budget).await,
            |state| Value::ComputeState(Box::new(state)),
        ),
        Call::Suspend(s) => outcome(kind.suspend(s, budget).await, |state| {
            Value::ComputeState(Box::new(state))
        }),
        Call::Resume(r) => outcome(kind.resume(r, budget).await, |state| {
            Value::ComputeState(Box::new(state))
        }),
        Call::ResumeCompute(c) => outcome(
            kind.resume_compute(c.reference, c.compute, budget).await,
            |state| Value::ComputeState(Box::new(state)),
        ),
        Call::KillCompute(c) => outcome(
            kind.kill_compute(c.reference, c.compute, budget).await,
            |()| Value::Done,
        ),
        Call::DeleteSnapshot(s) => outcome(
            kind.delete_snapshot(s.reference, s.snapshot, budget).await,
            |()| Value::Done,
        ),
        Call::RunCommandCompute(c) => outcome(
            kind.run_command_compute(c.reference, c.compute, c.request, budget)
                .await,
            Value::CommandResult,
        ),
    }
}

/// Exactly one `Authorization: Bearer <token>` header whose token equals
/// the node's (compared in constant time). A second `Authorization`
/// header, even a correct one, is refused: which one a proxy in front
/// would have checked is not knowable.
fn authorized(headers: &HeaderMap, token: &Token) -> bool {
    let mut presented = headers.get_all(header::AUTHORIZATION).iter();
    let (Some(only), None) = (presented.next(), presented.next()) else {
        return false;
    };
    let presented = only.as_bytes().strip_prefix(b"Bearer ").unwrap_or_default();
    bool::from(presented.ct_eq(token.expose().as_bytes()))
}

impl Node {
    /// A node serving `host`'s kinds to clients presenting `token`, with at
    /// most `max_in_flight` requests being handled at once.
    pub fn new(host: Arc<Host>, token: Token, max_in_flight: u32) -> Self {
        Self {
            host,
            token,
            in_flight: Arc::new(Semaphore::new(max_in_flight as usize)),
            operations: TaskTracker::new(),
            limits: ConnectionLimits::default(),
            bodies: Arc::new(Semaphore::new(
                (super::listen::DEFAULT_REQUEST_BODY_BUDGET_MIB << 20) as usize,
            )),
        }
    }

    /// Replaces the default budget of request bodies held at once
    /// (`request_body_budget_mib`), in bytes: a request whose declared
    /// length (or, undeclared, the largest frame) does not fit in what is
    /// left is refused `busy` before its body is read, and its share stays
    /// taken until its operation ends.
    pub fn with_request_body_budget(mut self, bytes: usize) -> Self {
        self.bodies = Arc::new(Semaphore::new(bytes.min(Semaphore::MAX_PERMITS)));
        self
    }

    /// Replaces the default [`ConnectionLimits`]'s read timeout: how long a
    /// client may take to send a request's head, and then its body, and
    /// how long an idle connection stays open.
    pub fn with_read_timeout(mut self, read_timeout: Duration) -> Self {
        self.limits.read_timeout = read_timeout;
        self
    }

    /// Replaces the default [`ConnectionLimits`].
    pub fn with_limits(mut self, limits: ConnectionLimits) -> Self {
        self.limits = limits;
        self
    }

    /// What each connection serves: the HTTP service, where every path and
    /// method goes through one handler so that every answer, refusals
    /// included, has the protocol's shape; and the node for the framed
    /// sessions connections upgrade to.
    fn served(self) -> Served {
        let node = Arc::new(self);
        Served {
            router: axum::Router::new()
                .fallback(handle)
                .with_state(node.clone()),
            node,
        }
    }

    /// Serves until `shutdown` completes, then finishes the requests in
    /// flight and the operations whose callers have left. Connections are
    /// served on threads of their own, as many as the calling runtime has
    /// workers (`node-conn-N`, see [`CONNECTION_THREAD_NAME`]), stopped on
    /// the way out. A Unix socket left by a dead server is replaced; one a
    /// live server answers on, or a path that is not a socket, is refused;
    /// the socket is removed on the way out.
    ///
    /// [`CONNECTION_THREAD_NAME`]: super::CONNECTION_THREAD_NAME
    pub async fn serve(
        self,
        listen: &Listen,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let operations = self.operations.clone();
        let mut limits = self.limits;
        if let Some(per_peer) = listen.max_connections_per_peer {
            limits.per_peer = per_peer;
        }
        let threads = ConnectionThreads::start(threads::default_count())
            .await
            .map_err(ServeError::Threads)?;
        let served = Self::listen_and_serve(
            self.served(),
            limits,
            operations.clone(),
            &threads,
            listen,
            shutdown,
        )
        .await;
        // Operations whose caller left still run to their end, on the
        // threads of their connections.
        operations.close();
        operations.wait().await;
        threads.stop().await;
        served
    }

    async fn listen_and_serve(
        served: Served,
        limits: ConnectionLimits,
        operations: TaskTracker,
        threads: &ConnectionThreads,
        listen: &Listen,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        listen.check()?;
        match (&listen.unix, &listen.tcp) {
            (Some(path), _) => {
                let shown = path.display().to_string();
                if let Ok(existing) = std::fs::symlink_metadata(path) {
                    use std::os::unix::fs::FileTypeExt;
                    if !existing.file_type().is_socket() {
                        return Err(ServeError::NotASocket(shown));
                    }
                    if tokio::net::UnixStream::connect(path).await.is_ok() {
                        return Err(ServeError::InUse(shown));
                    }
                    std::fs::remove_file(path).map_err(|e| ServeError::Bind(shown.clone(), e))?;
                }
                let listener = tokio::net::UnixListener::bind(path)
                    .map_err(|e| ServeError::Bind(shown.clone(), e))?;
                tracing::info!(socket = %shown, "serving");
                serve_connections(
                    listener, served, limits, None, operations, threads, shutdown,
                )
                .await;
                let _ = std::fs::remove_file(path);
                Ok(())
            }
            (None, Some(address)) => {
                let tls = match &listen.tls {
                    Some(files) => Some(TlsAcceptor::from(tls::server_config(files)?)),
                    None => None,
                };
                let listener = tokio::net::TcpListener::bind(address)
                    .await
                    .map_err(|e| ServeError::Bind(address.to_string(), e))?;
                if tls.is_some() {
                    tracing::info!(address = %address, "serving TLS");
                } else if address.ip().to_canonical().is_loopback() {
                    tracing::info!(address = %address, "serving plain TCP on loopback");
                } else {
                    tracing::warn!(
                        address = %address,
                        "serving PLAIN TCP on a non-loopback address (insecure_plain_tcp): \
                         tokens and calls cross the network unencrypted"
                    );
                }
                serve_connections(listener, served, limits, tls, operations, threads, shutdown)
                    .await;
                Ok(())
            }
            (None, None) => Err(ServeError::Bind(
                "nothing".into(),
                std::io::Error::other("no listen address"),
            )),
        }
    }

    fn kinds(&self) -> wire::Kinds {
        let kinds = self
            .host
            .kinds()
            .map(|kind| {
                let operations = kind
                    .declaration
                    .by_name()
                    .into_iter()
                    .map(|(operation, decision)| {
                        let support = match decision {
                            Decision::Supported => wire::Support::Supported,
                            Decision::Unsupported(reason) => {
                                wire::Support::Unsupported(reason.clone())
                            }
                        };
                        (operation.to_string(), support)
                    })
                    .collect();
                (
                    kind.registration.kind.clone(),
                    wire::KindDeclaration { operations },
                )
            })
            .collect();
        wire::Kinds { kinds }
    }

    async fn health(&self) -> Response {
        let mut kinds = std::collections::BTreeMap::new();
        let budget = Budget::from_millis(HEALTH_BUDGET_MS).unwrap_or(Budget::MAX);
        for kind in self.host.kinds() {
            let diagnostics = match kind.probe(budget).await {
                Ok(found) => found,
                Err(_) => vec![oac_provider_api::types::Diagnostic::ProbeUnavailable],
            };
            kinds.insert(kind.name().to_string(), diagnostics);
        }
        let ready = kinds.values().all(Vec::is_empty);
        let status = if ready {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        answer(status, &wire::Health { ready, kinds })
    }

    /// `permit` is this request's in-flight slot and its share of the body
    /// budget; they go with the operation, which keeps them until it ends
    /// even if the caller leaves.
    async fn call(&self, body: Body, received: Instant, permit: Permit) -> Response {
        let read = Limited::new(body, MAX_REQUEST_BYTES).collect();
        let bytes = match tokio::time::timeout(self.limits.read_timeout, read).await {
            Ok(Ok(collected)) => collected.to_bytes(),
            Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => {
                return refuse(Refused::TooLarge);
            }
            Ok(Err(_)) => return refuse(Refused::Invalid),
            Err(_) => return refuse(Refused::TooSlow),
        };
        match self.run(&bytes, received, permit).await {
            Ok(outcome) => stamped(StatusCode::OK, outcome),
            Err(refused) => refuse(refused),
        }
    }

    /// Decodes one request and runs it (see [`Node::call`] for `permit`):
    /// the JSON of its outcome, at most [`MAX_RESPONSE_BYTES`], or why it
    /// was refused. Both `POST /call` and framed sessions answer with it.
    async fn run(
        &self,
        bytes: &[u8],
        received: Instant,
        permit: Permit,
    ) -> Result<Vec<u8>, Refused> {
        let Ok(request) = serde_json::from_slice::<wire::Request>(bytes) else {
            return Err(Refused::Invalid);
        };
        let Ok(budget) = Budget::from_millis(request.timeout_ms) else {
            return Err(Refused::Invalid);
        };
        let operation = request.call.operation();
        let unknown = police::unknown(operation);
        let remaining = budget.duration().saturating_sub(received.elapsed());
        let outcome = match u32::try_from(remaining.as_millis())
            .ok()
            .and_then(|ms| Budget::from_millis(ms).ok())
        {
            None => error(unknown.clone()),
            Some(budget) => {
                let host = self.host.clone();
                let kind = request.kind;
                // The operation runs to its own end even if the caller
                // goes away (a half-cancelled mutation helps nobody): it is
                // polled in this request's task, and goes on in a task of
                // its own only if the request is dropped. Shutdown waits
                // for it either way (it is tracked). Its future is as large
                // as the largest operation's, so it is boxed where it is
                // made, and the wrappers below move a pointer.
                let operation = self.operations.track_future(Box::pin(async move {
                    let _permit = permit;
                    match host.kind(&kind) {
                        Ok(kind) => execute(kind, request.call, budget).await,
                        Err(invalid) => error(invalid),
                    }
                }));
                let operation = std::panic::AssertUnwindSafe(operation).catch_unwind();
                RunsToEnd::new(operation)
                    .await
                    .unwrap_or_else(|_| error(unknown.clone()))
            }
        };
        // An answer too large for the client to accept would be lost on
        // the way: it is unknown here already.
        let (code, body) = match serde_json::to_vec(&outcome) {
            Ok(body) if body.len() <= MAX_RESPONSE_BYTES => {
                let code = match &outcome {
                    Outcome::Ok(_) => "ok",
                    Outcome::Error { error, .. } => error.code(),
                };
                (code, body)
            }
            // (An unknown outcome always encodes; were it not to, an empty
            // answer is not a frame the client accepts: unknown again.)
            _ => (
                unknown.code(),
                serde_json::to_vec(&error(unknown.clone())).unwrap_or_default(),
            ),
        };
        tracing::info!(
            operation = operation.name(),
            outcome = code,
            elapsed_ms = received.elapsed().as_millis() as u64,
            "call"
        );
        Ok(body)
    }

    /// A framed session on an upgraded connection (see [`wire::frame`]):
    /// one request frame after another, each read, run and answered like
    /// `POST /call`, until the client closes it, a frame breaks the rules
    /// that keep the stream in step (too large, too slow), the connection
    /// retires or the node shuts down (both after the answer in progress).
    async fn frames<IO>(&self, io: IO, activity: &Arc<Activity>, close_all: &CancellationToken)
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let mut io = tokio::io::BufStream::new(io);
        // Both waits last the session, not a frame: the close is awaited
        // by one registration, and the idle timer is moved only when it
        // fires, to the last answer's time plus the read timeout (rather
        // than a timer set and cancelled per frame). A retiring session
        // still answers its next frame, marked last.
        let closing = close_all.cancelled();
        let idle = tokio::time::sleep(self.limits.read_timeout);
        tokio::pin!(closing, idle);
        let mut answered = Instant::now();
        loop {
            let mut prefix = [0; frame::PREFIX];
            // A session waits for its next frame as long as an idle
            // connection waits for its next head, counted from its last
            // answer.
            let next = io.read_exact(&mut prefix);
            tokio::pin!(next);
            loop {
                tokio::select! {
                    biased;
                    () = &mut closing => return,
                    read = &mut next => if read.is_ok() { break } else { return },
                    () = &mut idle => {
                        let deadline = answered + self.limits.read_timeout;
                        if deadline <= Instant::now() {
                            return;
                        }
                        idle.as_mut().reset(deadline.into());
                    }
                }
            }
            let received = Instant::now();
            let _running = activity.running();
            let length = u32::from_be_bytes(prefix) as usize;
            let answer = if length > MAX_REQUEST_BYTES {
                // Its body is not read: the stream is out of step.
                Err((Refused::TooLarge, true))
            } else {
                self.framed_call(&mut io, length, received).await
            };
            let mut last = close_all.is_cancelled() || activity.is_retiring();
            let frame = match answer {
                Ok(outcome) => frame::answer_outcome(&outcome, last),
                Err((refused, ends)) => {
                    last |= ends;
                    frame::answer_refused(refused.code(), last)
                }
            };
            if io.write_all(&frame).await.is_err() || io.flush().await.is_err() || last {
                return;
            }
            answered = Instant::now();
        }
    }

    /// Reads one request frame's `length` bytes of body and runs it: the
    /// outcome's JSON, or the refusal and whether the session must end.
    async fn framed_call<IO>(
        &self,
        io: &mut IO,
        length: usize,
        received: Instant,
    ) -> Result<Vec<u8>, (Refused, bool)>
    where
        IO: AsyncRead + Unpin,
    {
        let permit = self.in_flight.clone().try_acquire_owned().ok().zip(
            u32::try_from(length)
                .ok()
                .and_then(|share| self.bodies.clone().try_acquire_many_owned(share).ok()),
        );
        let timeout = self.limits.read_timeout;
        let Some(permit) = permit else {
            // Busy: the body is skipped, so the next frame is in step.
            let (mut rest, mut sink) = ((&mut *io).take(length as u64), tokio::io::sink());
            let skipped = tokio::io::copy(&mut rest, &mut sink);
            return match tokio::time::timeout(timeout, skipped).await {
                Ok(Ok(skipped)) if skipped == length as u64 => Err((Refused::Busy, false)),
                _ => Err((Refused::TooSlow, true)),
            };
        };
        let mut body = vec![0; length];
        match tokio::time::timeout(timeout, io.read_exact(&mut body)).await {
            Ok(Ok(_)) => {}
            _ => return Err((Refused::TooSlow, true)),
        }
        self.run(&body, received, permit)
            .await
            .map_err(|refused| (refused, false))
    }
}

/// What every connection serves (see [`Node::served`]).
#[derive(Clone)]
struct Served {
    router: axum::Router,
    node: Arc<Node>,
}

/// A request's in-flight slot and its share of the body budget.
type Permit = (OwnedSemaphorePermit, OwnedSemaphorePermit);

/// Where the handler of a `GET /frames` leaves the connection's upgrade for
/// [`http`], which serves the session once the 101 is written.
type SessionHandOver = Arc<std::sync::Mutex<Option<hyper::upgrade::OnUpgrade>>>;

/// Where a connection comes from: a TCP peer's address (IPv4-mapped IPv6
/// counted as IPv4), nothing for a Unix socket.
trait PeerAddress {
    fn peer(&self) -> Option<IpAddr>;
}

impl PeerAddress for std::net::SocketAddr {
    fn peer(&self) -> Option<IpAddr> {
        Some(self.ip().to_canonical())
    }
}

impl PeerAddress for tokio::net::unix::SocketAddr {
    fn peer(&self) -> Option<IpAddr> {
        None
    }
}

/// Accepts connections until `shutdown`, each admitted into a slot (see
/// [`Slots`]) and served under `limits` on one of `threads`, in turn; then
/// asks every connection to end after the request it is in, waits for the
/// operations in flight, and drops whatever connection is still open
/// `shutdown_grace` after them.
async fn serve_connections<L>(
    mut listener: L,
    served: Served,
    limits: ConnectionLimits,
    tls: Option<TlsAcceptor>,
    operations: TaskTracker,
    threads: &ConnectionThreads,
    shutdown: impl Future<Output = ()>,
) where
    L: axum::serve::Listener,
    L::Addr: PeerAddress,
    L::Io: Movable,
{
    let slots = Slots::new(limits);
    let drop_all = CancellationToken::new();
    let close_all = CancellationToken::new();
    let connections = TaskTracker::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            () = slots.vacancy() => {}
            () = &mut shutdown => break,
        }
        let (io, address) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        // `None`: shutdown came while the connection waited for a slot
        // (the shutdown future is never polled again once it has ended).
        let admitted = loop {
            match slots.admit(address.peer(), &drop_all) {
                Admission::Full => {}
                admission => break Some(admission),
            }
            tokio::select! {
                () = slots.vacancy() => {}
                () = &mut shutdown => break None,
            }
        };
        let slot = match admitted {
            Some(Admission::Admitted(slot)) => slot,
            Some(_) => {
                tracing::debug!("connection closed on arrival: its peer holds its share");
                continue;
            }
            None => break,
        };
        let Ok(detached) = io.detach() else {
            tracing::debug!("connection lost on its way to its thread");
            continue;
        };
        // The connection, its handler and the operation it runs are polled
        // in this one task and wake each other (see `own_wakes`).
        connections.spawn_on(
            repoll_own_wakes(connection::<L::Io>(
                detached,
                slot,
                served.clone(),
                limits,
                tls.clone(),
                close_all.clone(),
            )),
            threads.next(),
        );
    }
    drop(listener);
    close_all.cancel();
    connections.close();
    operations.close();
    let grace = async {
        operations.wait().await;
        tokio::time::sleep(limits.shutdown_grace).await;
    };
    tokio::select! {
        () = connections.wait() => {}
        () = grace => {
            drop_all.cancel();
            connections.wait().await;
        }
    }
}

/// One connection, from its admission to its end, on the thread it was
/// handed to (it first joins that thread's runtime): dropped at once when
/// evicted (or when shutdown's grace is over), and at its hard lifetime.
async fn connection<IO>(
    detached: IO::Detached,
    slot: Slot,
    served: Served,
    limits: ConnectionLimits,
    tls: Option<TlsAcceptor>,
    close_all: CancellationToken,
) where
    IO: Movable + AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Ok(io) = IO::attach(detached) else {
        tracing::debug!("connection lost on its way to its thread");
        return;
    };
    let activity = slot.activity.clone();
    let io = Guarded::new(io, activity.clone(), limits.stall_timeout);
    let served = async {
        match tls {
            // A handshake is a head: it must end within the read timeout.
            Some(acceptor) => {
                if let Ok(Ok(stream)) =
                    tokio::time::timeout(limits.read_timeout, acceptor.accept(io)).await
                {
                    http(stream, activity, served, limits, close_all).await;
                }
            }
            None => http(io, activity, served, limits, close_all).await,
        }
    };
    tokio::select! {
        () = served => {}
        () = slot.evict.cancelled() => {}
        () = tokio::time::sleep(limits.hard_lifetime) => {}
    }
    drop(slot);
}

/// HTTP/1.1 on one connection: every request carries the connection's
/// [`Activity`] to the handler (which marks it authenticated) and is
/// counted as running while it is handled; past `max_lifetime` an answer
/// ends the connection; on shutdown the request in progress is finished. A
/// `GET /frames` the handler accepted turns the rest of the connection into
/// a framed session, under the same lifetime and shutdown.
async fn http<IO>(
    io: IO,
    activity: Arc<Activity>,
    served: Served,
    limits: ConnectionLimits,
    close_all: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let marked = activity.clone();
    let hand_over = SessionHandOver::default();
    let handed = hand_over.clone();
    let router = served.router;
    let service = hyper::service::service_fn(move |mut request: Request<hyper::body::Incoming>| {
        let router = router.clone();
        let activity = marked.clone();
        let hand_over = handed.clone();
        async move {
            let _running = activity.running();
            request.extensions_mut().insert(activity.clone());
            request.extensions_mut().insert(hand_over);
            let Ok(mut response) = router.oneshot(request).await;
            // A retiring connection still becomes a session: it ends after
            // its first answer (marked last).
            if activity.is_retiring() && response.status() != StatusCode::SWITCHING_PROTOCOLS {
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.read_timeout)
        .serve_connection(hyper_util::rt::TokioIo::new(io), service)
        .with_upgrades();
    let mut connection = std::pin::pin!(connection);
    let lifetime = tokio::time::sleep(limits.max_lifetime);
    let mut lifetime = std::pin::pin!(lifetime);
    let (mut closing, mut retired) = (false, false);
    let upgrade = loop {
        tokio::select! {
            // A connection that fails (a client gone, a head too slow, a
            // stall) has nothing to report beyond its own end; one that
            // ends well may have been upgraded.
            ended = connection.as_mut() => match ended {
                Ok(()) => break hand_over.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take(),
                Err(_) => return,
            },
            () = close_all.cancelled(), if !closing => {
                closing = true;
                connection.as_mut().graceful_shutdown();
            }
            () = &mut lifetime, if !retired => {
                retired = true;
                activity.retire();
            }
        }
    };
    let Some(upgrade) = upgrade else { return };
    let Ok(upgraded) = upgrade.await else { return };
    let session = served.node.frames(
        hyper_util::rt::TokioIo::new(upgraded),
        &activity,
        &close_all,
    );
    let mut session = std::pin::pin!(session);
    loop {
        tokio::select! {
            () = session.as_mut() => return,
            () = &mut lifetime, if !retired => {
                retired = true;
                activity.retire();
            }
        }
    }
}

/// A refusal sent before the token was verified also ends the connection:
/// a client that pipelines unauthenticated requests holds no slot.
fn refuse_and_close(refused: Refused) -> Response {
    let mut response = refuse(refused);
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

async fn handle(State(node): State<Arc<Node>>, request: Request) -> Response {
    let received = Instant::now();
    let (parts, body) = request.into_parts();
    if parts
        .headers
        .get(PROTOCOL_HEADER)
        .map(HeaderValue::as_bytes)
        != Some(PROTOCOL_VERSION.as_bytes())
    {
        return refuse_and_close(Refused::VersionMismatch);
    }
    if !authorized(&parts.headers, &node.token) {
        return refuse_and_close(Refused::Unauthorized);
    }
    if let Some(activity) = parts.extensions.get::<Arc<Activity>>() {
        activity.authenticate();
    }
    let route = (parts.method.clone(), parts.uri.path());
    if route == (Method::GET, "/frames") {
        return upgrade_to_frames(parts);
    }
    if !matches!(
        route,
        (Method::POST, "/call") | (Method::GET, "/kinds") | (Method::GET, "/health")
    ) {
        return refuse(Refused::NoSuchEndpoint);
    }
    let declared_length = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<usize>().ok());
    if declared_length.is_some_and(|length| length > MAX_REQUEST_BYTES) {
        return refuse(Refused::TooLarge);
    }
    let Ok(permit) = node.in_flight.clone().try_acquire_owned() else {
        return refuse(Refused::Busy);
    };
    match route.1 {
        "/call" => {
            let share = declared_length.unwrap_or(MAX_REQUEST_BYTES);
            let Some(body_share) = u32::try_from(share)
                .ok()
                .and_then(|share| node.bodies.clone().try_acquire_many_owned(share).ok())
            else {
                return refuse(Refused::Busy);
            };
            node.call(body, received, (permit, body_share)).await
        }
        "/kinds" => answer(StatusCode::OK, &node.kinds()),
        _ => node.health().await,
    }
}

/// Accepts an authenticated `GET /frames` that asks for `upgrade:
/// oac-frames` on a connection [`http`] serves: its upgrade goes to the
/// connection, which serves the session once this 101 is written.
fn upgrade_to_frames(mut parts: axum::http::request::Parts) -> Response {
    let asks = parts.headers.get(header::UPGRADE).is_some_and(|value| {
        value
            .as_bytes()
            .eq_ignore_ascii_case(wire::FRAMES_UPGRADE.as_bytes())
    });
    let upgrade = parts.extensions.remove::<hyper::upgrade::OnUpgrade>();
    let (true, Some(upgrade), Some(hand_over)) =
        (asks, upgrade, parts.extensions.get::<SessionHandOver>())
    else {
        return refuse(Refused::Invalid);
    };
    *hand_over
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(upgrade);
    let mut response = stamped(StatusCode::SWITCHING_PROTOCOLS, Vec::new());
    let headers = response.headers_mut();
    headers.remove(header::CONTENT_TYPE);
    headers.insert(
        header::UPGRADE,
        HeaderValue::from_static(wire::FRAMES_UPGRADE),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    response
}
