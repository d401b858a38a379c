//! The node's routes: one handler every request goes through, so every
//! answer (refusals included) has the protocol's shape; the route table;
//! and what each route answers.

use super::*;
use oac_provider_api::police::{Evidence, Settled};

/// How long a probe may take when `/health` asks.
pub(super) const HEALTH_BUDGET_MS: u32 = 10_000;

/// Why a request is turned away before anything runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refused {
    VersionMismatch,
    Unauthorized,
    TooLarge,
    TooSlow,
    Invalid,
    Busy,
    NoSuchEndpoint,
}

impl Refused {
    pub(super) fn code(self) -> &'static str {
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

    pub(super) fn status(self) -> StatusCode {
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
pub(super) fn answer(status: StatusCode, body: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => stamped(status, bytes),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// Serialized JSON, stamped with the protocol version.
pub(super) fn stamped(status: StatusCode, bytes: Vec<u8>) -> Response {
    let mut response = (status, bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(PROTOCOL_HEADER, HeaderValue::from_static(PROTOCOL_VERSION));
    response
}

pub(super) fn refuse(refused: Refused) -> Response {
    answer(
        refused.status(),
        &Refusal {
            refused: refused.code().to_string(),
        },
    )
}

pub(super) fn error(error: Error) -> Outcome {
    Outcome::Error {
        error,
        info: None,
        record: None,
    }
}

pub(super) fn failure(failure: Failure) -> Outcome {
    Outcome::Error {
        error: failure.error,
        info: failure.info,
        record: None,
    }
}

/// The record a settlement claim of `info` rests on, when it claims one
/// and the host's record was what the answer was policed on.
fn record(info: Option<&Info>, evidence: &Evidence) -> Option<Settled> {
    match evidence {
        Evidence::Recorded(settled) if info.is_some_and(|info| info.create_settled) => {
            Some(settled.clone())
        }
        _ => None,
    }
}

/// A get-info, renew or kill answer, with the record its claim rests on.
pub(super) fn on_record<E: Into<Failure>>(
    (answer, evidence): (Result<Info, E>, Evidence),
) -> Outcome {
    match answer.map_err(Into::into) {
        Ok(info) => match record(Some(&info), &evidence) {
            Some(record) => Outcome::Ok(Value::InfoOnRecord(wire::OnRecord { info, record })),
            None => Outcome::Ok(Value::Info(info)),
        },
        Err(failed) => Outcome::Error {
            record: record(failed.info.as_ref(), &evidence),
            error: failed.error,
            info: failed.info,
        },
    }
}

pub(super) fn outcome<T>(answer: Result<T, Error>, value: impl FnOnce(T) -> Value) -> Outcome {
    answer.map_or_else(error, |ok| Outcome::Ok(value(ok)))
}

pub(super) fn mutation(answer: Result<Info, Failure>) -> Outcome {
    answer.map_or_else(failure, |info| Outcome::Ok(Value::Info(info)))
}

/// Runs one call on the kind (the provider) and shapes its answer.
pub(super) async fn execute(kind: &Kind, call: Call, budget: Budget) -> Outcome {
    match call {
        Call::Create(b) => mutation(kind.create(b, budget).await),
        Call::GetInfo(r) => on_record(kind.get_info_on_record(r, budget).await),
        Call::Renew(r) => on_record(kind.renew_on_record(r, budget).await),
        Call::Kill(r) => on_record(kind.kill_on_record(r, budget).await),
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
pub(super) fn authorized(headers: &HeaderMap, token: &Token) -> bool {
    let mut presented = headers.get_all(header::AUTHORIZATION).iter();
    let (Some(only), None) = (presented.next(), presented.next()) else {
        return false;
    };
    let presented = only.as_bytes().strip_prefix(b"Bearer ").unwrap_or_default();
    bool::from(presented.ct_eq(token.expose().as_bytes()))
}

/// What a route of the node answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Route {
    /// `POST /call`: one operation (see `docs/node-protocol.md`).
    Call,
    /// `GET /kinds`: each served kind's declaration.
    Kinds,
    /// `GET /health`: each kind's readiness probe.
    Health,
    /// `GET /frames`: the upgrade to a framed session.
    Frames,
}

/// Every route a node serves; anything else is `no_such_endpoint`. A new
/// route is a row here and an arm of [`handle`].
pub(super) const ROUTES: [(&str, &str, Route); 4] = [
    ("POST", "/call", Route::Call),
    ("GET", "/kinds", Route::Kinds),
    ("GET", "/health", Route::Health),
    ("GET", "/frames", Route::Frames),
];

/// The route of `method` and `path`, if the node serves one.
fn route(method: &Method, path: &str) -> Option<Route> {
    ROUTES
        .iter()
        .find(|(m, p, _)| method.as_str() == *m && path == *p)
        .map(|(_, _, route)| *route)
}

/// The one handler: protocol version and token first (a refusal then
/// closes the connection), then the route, the size and the in-flight
/// bounds, then what the route answers.
pub(super) async fn handle(State(node): State<Arc<Node>>, request: Request) -> Response {
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
    let Some(route) = route(&parts.method, parts.uri.path()) else {
        return refuse(Refused::NoSuchEndpoint);
    };
    if route == Route::Frames {
        return upgrade_to_frames(parts);
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
    match route {
        Route::Call => {
            let share = declared_length.unwrap_or(MAX_REQUEST_BYTES);
            let Some(body_share) = u32::try_from(share)
                .ok()
                .and_then(|share| node.bodies.clone().try_acquire_many_owned(share).ok())
            else {
                return refuse(Refused::Busy);
            };
            node.call(body, received, (permit, body_share)).await
        }
        Route::Kinds => answer(StatusCode::OK, &node.kinds()),
        Route::Health => node.health().await,
        Route::Frames => refuse(Refused::Invalid),
    }
}

impl Node {
    pub(super) fn kinds(&self) -> wire::Kinds {
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
        let components = self
            .host
            .kinds()
            .map(|kind| (kind.name().to_string(), kind.digest.clone()))
            .collect();
        wire::Kinds {
            registry: self.registry.clone(),
            node: self.node_id.clone(),
            kinds,
            components,
        }
    }

    pub(super) async fn health(&self) -> Response {
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
        let health = wire::Health {
            registry: self.registry.clone(),
            node: self.node_id.clone(),
            ready,
            kinds,
        };
        answer(status, &health)
    }

    /// `permit` is this request's in-flight slot and its share of the body
    /// budget; they go with the operation, which keeps them until it ends
    /// even if the caller leaves.
    pub(super) async fn call(&self, body: Body, received: Instant, permit: Permit) -> Response {
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
    pub(super) async fn run(
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
}
