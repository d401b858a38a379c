//! The node side of the transport: checks version, token, frame size, input
//! and the in-flight limit, in that order, before anything runs; then runs
//! the operation through the host (which answers an unsupported operation
//! before any native I/O) within the budget counted from receipt.

use super::wire::{self, Call, Outcome, Refusal, Value};
use super::{
    MAX_CONNECTIONS, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES, PROTOCOL_HEADER, PROTOCOL_VERSION,
    READ_TIMEOUT,
};
use crate::bindings::{Error, Failure};
use crate::budget::Budget;
use crate::declaration::Decision;
use crate::host::Host;
use crate::node_config::{Listen, Token};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::task::TaskTracker;

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
}

/// A node: the loaded host, the token clients present, and the in-flight limit.
pub struct Node {
    host: Arc<Host>,
    token: Token,
    in_flight: Arc<Semaphore>,
    operations: TaskTracker,
    read_timeout: Duration,
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

/// The code an operation reports when it ends without the provider's answer.
fn aborted(call: &Call) -> Error {
    match call {
        Call::RunCommand(_) | Call::RunCommandCompute(_) => Error::CommandUnconfirmed,
        Call::Observe(_) => Error::ObservationUnavailable,
        _ => Error::ComputeUnconfirmed,
    }
}

fn error(error: Error) -> Outcome {
    Outcome::Error {
        error: wire::ErrorCode::from(&error),
        info: None,
    }
}

fn failure(failure: Failure) -> Outcome {
    Outcome::Error {
        error: wire::ErrorCode::from(&failure.error),
        info: failure.info.map(Into::into),
    }
}

fn outcome<T>(answer: Result<T, Error>, value: impl FnOnce(T) -> Value) -> Outcome {
    answer.map_or_else(error, |ok| Outcome::Ok(value(ok)))
}

fn mutation(answer: Result<crate::bindings::Info, Failure>) -> Outcome {
    answer.map_or_else(failure, |info| Outcome::Ok(Value::Info(info.into())))
}

/// Runs one operation on the host and shapes its answer.
async fn execute(host: &Host, kind: &str, call: Call, budget: Budget) -> Outcome {
    let info = |info: crate::bindings::Info| Value::Info(info.into());
    let compute =
        |c: crate::bindings::oac::sandbox_provider::types::Compute| Value::Compute(c.into());
    let state = |s: crate::bindings::oac::sandbox_provider::types::ComputeState| {
        Value::ComputeState(s.into())
    };
    let command = |r: crate::bindings::CommandResult| Value::CommandResult(r.into());
    match call {
        Call::Create(b) => mutation(host.create(kind, b.into(), budget).await),
        Call::GetInfo(r) => outcome(host.get_info(kind, r.into(), budget).await, info),
        Call::Renew(r) => mutation(host.renew(kind, r.into(), budget).await),
        Call::Kill(r) => mutation(host.kill(kind, r.into(), budget).await),
        Call::RunCommand(c) => outcome(
            host.run_command(kind, c.reference.into(), c.request.into(), budget)
                .await,
            command,
        ),
        Call::Observe(t) => outcome(host.observe(kind, t.into(), budget).await, |s| {
            Value::Sample(s.into())
        }),
        Call::Initial(r) => outcome(host.initial(kind, r.into(), budget).await, compute),
        Call::NewCompute(n) => outcome(
            host.new_compute(kind, n.reference.into(), n.generation, budget)
                .await,
            compute,
        ),
        Call::GetCompute(c) => outcome(
            host.get_compute(kind, c.reference.into(), c.compute.into(), budget)
                .await,
            state,
        ),
        Call::Suspend(s) => outcome(host.suspend(kind, s.into(), budget).await, |s| {
            Value::Snapshot(s.into())
        }),
        Call::Resume(r) => outcome(host.resume(kind, r.into(), budget).await, compute),
        Call::ResumeCompute(c) => outcome(
            host.resume_compute(kind, c.reference.into(), c.compute.into(), budget)
                .await,
            state,
        ),
        Call::KillCompute(c) => outcome(
            host.kill_compute(kind, c.reference.into(), c.compute.into(), budget)
                .await,
            |()| Value::Done,
        ),
        Call::DeleteSnapshot(s) => outcome(
            host.delete_snapshot(kind, s.reference.into(), s.snapshot.into(), budget)
                .await,
            |()| Value::Done,
        ),
        Call::RunCommandCompute(c) => outcome(
            host.run_command_compute(
                kind,
                c.reference.into(),
                c.compute.into(),
                c.request.into(),
                budget,
            )
            .await,
            command,
        ),
    }
}

fn authorized(headers: &HeaderMap, token: &Token) -> bool {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.as_bytes().strip_prefix(b"Bearer "))
        .unwrap_or_default();
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
            read_timeout: READ_TIMEOUT,
        }
    }

    /// Replaces [`READ_TIMEOUT`]: how long a client may take to send a
    /// request's head, and then its body, and how long an idle connection
    /// stays open.
    pub fn with_read_timeout(mut self, read_timeout: Duration) -> Self {
        self.read_timeout = read_timeout;
        self
    }

    /// The HTTP service; every path and method goes through one handler so
    /// that every answer, refusals included, has the protocol's shape.
    pub fn router(self) -> axum::Router {
        axum::Router::new()
            .fallback(handle)
            .with_state(Arc::new(self))
    }

    /// Serves until `shutdown` completes, then finishes the requests in
    /// flight and the operations whose callers have left. A Unix socket
    /// left by a dead server is replaced; one a live server answers on, or a
    /// path that is not a socket, is refused; the socket is removed on the
    /// way out.
    pub async fn serve(
        self,
        listen: &Listen,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let operations = self.operations.clone();
        let read_timeout = self.read_timeout;
        let router = self.router();
        let served = Self::listen_and_serve(router, read_timeout, listen, shutdown).await;
        // Operations whose caller left still run to their end.
        operations.close();
        operations.wait().await;
        served
    }

    async fn listen_and_serve(
        router: axum::Router,
        read_timeout: Duration,
        listen: &Listen,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
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
                serve_connections(listener, router, read_timeout, shutdown).await;
                let _ = std::fs::remove_file(path);
                Ok(())
            }
            (None, Some(address)) => {
                let listener = tokio::net::TcpListener::bind(address)
                    .await
                    .map_err(|e| ServeError::Bind(address.to_string(), e))?;
                tracing::info!(address = %address, "serving");
                serve_connections(listener, router, read_timeout, shutdown).await;
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
                    .0
                    .iter()
                    .map(|(operation, decision)| {
                        let support = match decision {
                            Decision::Supported => wire::Support::Supported,
                            Decision::Unsupported(reason) => {
                                wire::Support::Unsupported(reason.clone())
                            }
                        };
                        (operation.clone(), support)
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
            let name = &kind.registration.kind;
            let diagnostics: Vec<wire::Diagnostic> = match self.host.probe(name, budget).await {
                Ok(found) => found.into_iter().map(Into::into).collect(),
                Err(_) => vec![wire::Diagnostic::ProbeUnavailable],
            };
            kinds.insert(name.clone(), diagnostics);
        }
        let ready = kinds.values().all(Vec::is_empty);
        let status = if ready {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        answer(status, &wire::Health { ready, kinds })
    }

    /// `permit` is this request's in-flight slot; it goes with the
    /// operation, which keeps it until it ends even if the caller leaves.
    async fn call(&self, body: Body, received: Instant, permit: OwnedSemaphorePermit) -> Response {
        let read = Limited::new(body, MAX_REQUEST_BYTES).collect();
        let bytes = match tokio::time::timeout(self.read_timeout, read).await {
            Ok(Ok(collected)) => collected.to_bytes(),
            Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => {
                return refuse(Refused::TooLarge);
            }
            Ok(Err(_)) => return refuse(Refused::Invalid),
            Err(_) => return refuse(Refused::TooSlow),
        };
        let Ok(request) = serde_json::from_slice::<wire::Request>(&bytes) else {
            return refuse(Refused::Invalid);
        };
        let Ok(budget) = Budget::from_millis(request.timeout_ms) else {
            return refuse(Refused::Invalid);
        };
        let operation = request.call.operation();
        let unknown = aborted(&request.call);
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
                // goes away: a half-cancelled mutation helps nobody.
                let task = self.operations.spawn(async move {
                    let _permit = permit;
                    execute(&host, &kind, request.call, budget).await
                });
                task.await.unwrap_or_else(|_| error(unknown.clone()))
            }
        };
        // An answer too large for the client to accept would be lost on
        // the way: it is unknown here already.
        let (outcome, body) = match serde_json::to_vec(&outcome) {
            Ok(body) if body.len() <= MAX_RESPONSE_BYTES => (outcome, Some(body)),
            _ => (error(unknown), None),
        };
        let code = match &outcome {
            Outcome::Ok(_) => "ok",
            Outcome::Error { error, .. } => error.code.as_str(),
        };
        tracing::info!(
            operation,
            outcome = code,
            elapsed_ms = received.elapsed().as_millis() as u64,
            "call"
        );
        match body {
            Some(body) => stamped(StatusCode::OK, body),
            None => answer(StatusCode::OK, &outcome),
        }
    }
}

/// Accepts connections until `shutdown`, at most [`MAX_CONNECTIONS`] at
/// once, each of which must send a request head within `read_timeout` (an
/// idle one is closed after it); then lets every open connection finish
/// the request it is in.
async fn serve_connections<L>(
    mut listener: L,
    router: axum::Router,
    read_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) where
    L: axum::serve::Listener,
{
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = connections.clone().acquire_owned() => slot,
            () = &mut shutdown => break,
        };
        let Ok(slot) = slot else { break };
        let io = tokio::select! {
            (io, _) = listener.accept() => io,
            () = &mut shutdown => break,
        };
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(read_timeout)
            .serve_connection(
                hyper_util::rt::TokioIo::new(io),
                hyper_util::service::TowerToHyperService::new(router.clone()),
            );
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A connection that fails (a client gone, a head too slow) has
            // nothing to report beyond its own end.
            let _ = connection.await;
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
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
        return refuse(Refused::VersionMismatch);
    }
    if !authorized(&parts.headers, &node.token) {
        return refuse(Refused::Unauthorized);
    }
    let route = (parts.method.clone(), parts.uri.path());
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
        "/call" => node.call(body, received, permit).await,
        "/kinds" => answer(StatusCode::OK, &node.kinds()),
        _ => node.health().await,
    }
}
