//! The HTTP capability: the standard `wasi:http/outgoing-handler`, with
//! the host's policy in its send hook. A component builds requests with
//! `wasi:http` and may hold a streamed response open while it sends other
//! requests; the host decides, before anything is sent:
//!
//! - only the kind's allowed origins are reached (exact scheme, host and
//!   port; no user information), with no redirect followed and no proxy
//!   taken from the environment;
//! - a call that may only read sends only `GET`;
//! - the framing, hop-by-hop and `host` headers are the transport's;
//! - the credential is filled in by the host where the component asks for
//!   it with the `oac-credential*` marker headers, so it never enters guest
//!   memory, and only on the kind's exact credential origins;
//! - no credential the call holds goes anywhere else: a request whose URL,
//!   headers or body carry one, in any obvious encoding
//!   ([`oac_provider_api::secrets`]), is refused; so the body is read
//!   whole, and checked, before anything is sent;
//! - bodies are bounded both ways, the requests a call and a kind hold
//!   open at once are bounded, and the whole exchange by the call's
//!   deadline;
//! - every request crosses the capability boundary (recorded, faults
//!   injected, never retried).
//!
//! Errors are fixed `wasi:http` codes: `HTTP-request-denied` (refused,
//! nothing sent), `connection-refused` (not sent), `HTTP-request-body-size`
//! / `HTTP-response-body-size` (a bound), and otherwise a code that means
//! the request may have been received (`connection-terminated`,
//! `connection-timeout`, `connection-read-timeout`).

use crate::capability::SharedCapabilities;
use crate::capability::boundary::{Action, Boundary, Crossing, Decided, HttpAction, InFlight};
use crate::capability::scope::Access;
use bytes::Bytes;
use http_body_util::BodyExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use wasmtime_wasi_http::{
    DEFAULT_FORBIDDEN_HEADERS, Error as HttpError, ForbiddenHeaderFilter, RequestOptions,
    WasiHttpHooks,
};

pub use oac_contract::http::{
    CREDENTIAL_FIELD_MARKER, CREDENTIAL_MARKER, CREDENTIAL_PREFIX_MARKER, MAX_BODY_BYTES,
};

/// Requests one call may hold open at once (sent or being sent, until its
/// response body is read or dropped); beyond it a request is refused
/// before it is sent. A provider call needs a handful. The default of a
/// kind's `policy.max_open_requests_per_call`.
pub const MAX_OPEN_REQUESTS_PER_CALL: usize = 64;

/// Requests all calls of one kind may hold open at once, so that one kind
/// cannot take every descriptor of the node. The default of a kind's
/// `policy.max_open_requests_per_kind`.
pub const MAX_OPEN_REQUESTS_PER_KIND: usize = 1024;

/// Request body bytes one call may hold in the host at once: a body is
/// read whole, and checked, before anything of its request is sent.
pub const MAX_HELD_BODY_BYTES_PER_CALL: usize = 2 * MAX_BODY_BYTES;

/// Headers the component may not set, nor name as its credential header:
/// the target and framing of the request, and the hop-by-hop headers
/// (RFC 9110 §7.6.1), which are the transport's business. A request's
/// `content-length` is the component's, checked against its body.
const RESERVED_HEADERS: [&str; 11] = [
    "host",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "expect",
];

fn is_reserved(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    RESERVED_HEADERS.contains(&name.as_str())
        || DEFAULT_FORBIDDEN_HEADERS
            .iter()
            .any(|forbidden| forbidden.as_str() == name)
}

/// A private test network for fixtures that speak TLS under a test domain:
/// the client trusts only `root_certificate_pem` and resolves every name to
/// `address`. Never set in production (no configuration file has it).
#[derive(Clone, Debug)]
pub struct TestNetwork {
    /// The test CA's certificate (PEM).
    pub root_certificate_pem: Vec<u8>,
    /// Where every name resolves.
    pub address: std::net::SocketAddr,
}

/// Resolves every name to one address (a [`TestNetwork`]).
struct ResolveAll(std::net::SocketAddr);

impl reqwest::dns::Resolve for ResolveAll {
    fn resolve(&self, _: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let address = self.0;
        Box::pin(async move {
            let addresses: reqwest::dns::Addrs = Box::new(std::iter::once(address));
            Ok(addresses)
        })
    }
}

/// Where a kind's requests may go: the registry's origins, exactly, and
/// the configured endpoint (its API origin, and every `https` host within
/// its domain on the default port). Requests to anywhere else are refused
/// before anything is sent. The credential goes only to the exact
/// credential origins: the registry's, and the endpoint's API origin.
#[derive(Clone, Debug)]
pub struct OriginPolicy {
    origins: Arc<[reqwest::Url]>,
    credential_origins: Arc<[reqwest::Url]>,
    /// Every `https://` host within this domain (default port) is allowed.
    domain: Option<String>,
}

impl OriginPolicy {
    /// The policy for `origins` and `credential_origins` (registry origins;
    /// one that does not parse as an origin allows nothing) and `endpoint`
    /// (`(api_url, domain)`, already resolved).
    pub fn new(
        origins: &[String],
        credential_origins: &[String],
        endpoint: Option<(String, String)>,
    ) -> Self {
        let parsed = |origins: &[String]| -> Vec<reqwest::Url> {
            origins
                .iter()
                .filter_map(|origin| parse_origin(origin))
                .collect()
        };
        let (mut origins, mut credential_origins) = (parsed(origins), parsed(credential_origins));
        let mut domain = None;
        if let Some((api_url, within)) = endpoint {
            let api = reqwest::Url::parse(&api_url).ok();
            origins.extend(api.clone());
            credential_origins.extend(api);
            domain = Some(within);
        }
        Self {
            origins: origins.into(),
            credential_origins: credential_origins.into(),
            domain,
        }
    }

    /// Whether a request to `url` (already admitted) may carry the
    /// credential: its origin is exactly a credential origin.
    pub fn takes_credential(&self, url: &reqwest::Url) -> bool {
        self.credential_origins
            .iter()
            .any(|origin| origin.origin() == url.origin())
    }

    /// The URL a request for `target` is sent to, when the policy allows
    /// it: it parses, is not too long (as written and as it will be sent:
    /// percent-encoding may triple it), carries no user information, and
    /// its origin is allowed.
    pub fn admit(&self, target: &str) -> Option<reqwest::Url> {
        let bound = oac_contract::bounds::MAX_URL_BYTES;
        if target.len() > bound {
            return None;
        }
        let url = reqwest::Url::parse(target).ok()?;
        (url.as_str().len() <= bound && self.allowed(&url)).then_some(url)
    }

    fn allowed(&self, url: &reqwest::Url) -> bool {
        let listed = self
            .origins
            .iter()
            .any(|origin| origin.origin() == url.origin());
        let within = self.domain.as_deref().is_some_and(|domain| {
            url.scheme() == "https"
                && url.port().is_none()
                && matches!(url.host(), Some(url::Host::Domain(host))
                    if oac_contract::endpoint::is_within(host, domain))
        });
        (listed || within) && url.username().is_empty() && url.password().is_none()
    }
}

/// The HTTP broker of one kind: its client and allowed origins.
#[derive(Clone)]
pub(crate) struct HttpBroker {
    client: reqwest::Client,
    origins: OriginPolicy,
    installation: String,
    boundary: Boundary,
    /// The kind's open requests ([`MAX_OPEN_REQUESTS_PER_KIND`] unless
    /// its policy says otherwise).
    open: Arc<tokio::sync::Semaphore>,
    /// How many requests one call may hold open.
    open_per_call: usize,
}

impl HttpBroker {
    /// This broker with the kind's bounds on requests open at once: per
    /// call and for the whole kind.
    pub(crate) fn with_open_limits(self, per_call: usize, per_kind: usize) -> Self {
        Self {
            open: Arc::new(tokio::sync::Semaphore::new(per_kind)),
            open_per_call: per_call,
            ..self
        }
    }

    /// A broker for the registered origins and credential origins
    /// (already validated) and the configured endpoint `(api_url, domain)`
    /// (already resolved).
    pub(crate) fn new(
        origins: &[String],
        credential_origins: &[String],
        endpoint: Option<(String, String)>,
        installation: &str,
        boundary: Boundary,
        test_network: Option<&TestNetwork>,
    ) -> Result<Self, reqwest::Error> {
        // No redirect is followed and no proxy is taken from the
        // environment: a request goes to the allowed origin it names, once.
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy();
        if let Some(network) = test_network {
            let certificate = reqwest::Certificate::from_pem(&network.root_certificate_pem)?;
            builder = builder
                .tls_certs_only([certificate])
                .dns_resolver(Arc::new(ResolveAll(network.address)));
        }
        let client = builder.build()?;
        Ok(Self {
            client,
            origins: OriginPolicy::new(origins, credential_origins, endpoint),
            installation: installation.to_string(),
            boundary,
            open: Arc::new(tokio::sync::Semaphore::new(MAX_OPEN_REQUESTS_PER_KIND)),
            open_per_call: MAX_OPEN_REQUESTS_PER_CALL,
        })
    }

    /// Sends an admitted request within `deadline`, once its body has been
    /// read and checked: its response head now, its body as the component
    /// reads it.
    async fn exchange(
        &self,
        admitted: Admitted,
        deadline: Instant,
        in_flight: &InFlight,
    ) -> Result<http::Response<wasmtime_wasi_http::WasiBody>, HttpError> {
        let Admitted {
            head,
            url,
            action,
            body,
            secrets,
            open,
            held,
        } = admitted;
        // Not sent: the component never finished its body in time.
        let (body, _share) = tokio::time::timeout_at(deadline.into(), held.collect(body))
            .await
            .map_err(|_| HttpError::ConnectionRefused)??;
        if secrets.found_in(&body) {
            tracing::warn!(target: "provider", event = "credential_in_request", "request refused");
            return Err(HttpError::HttpRequestDenied);
        }
        let decided = self
            .boundary
            .decide(Action::Http(action), url.path(), false);
        let mut request = reqwest::Request::new(head.method, url);
        *request.headers_mut() = head.headers;
        *request.body_mut() = Some(reqwest::Body::from(body));
        let sending = self.client.execute(request);
        let response = self
            .boundary
            .dispatch(&decided, deadline, in_flight, sending)
            .await
            .map_err(|crossing| match crossing {
                Crossing::NotSent | Crossing::CleanupFailed => HttpError::ConnectionRefused,
                Crossing::Lost => HttpError::ConnectionTerminated,
                Crossing::Native(error) if error.is_connect() => HttpError::ConnectionRefused,
                Crossing::Native(error) if error.is_timeout() => HttpError::ConnectionTimeout,
                Crossing::Native(_) => HttpError::ConnectionTerminated,
            })?;
        let response: http::Response<reqwest::Body> = response.into();
        let (head, body) = response.into_parts();
        let watched = Watched {
            inner: body,
            read: 0,
            deadline: Box::pin(tokio::time::sleep_until(deadline.into())),
            scan: Scan::new(&self.installation, self.boundary.clone(), decided.clone()),
            _open: open,
        };
        let body = if decided.shows_foreign() {
            // An injected foreign-ownership fault: the whole (bounded) body,
            // with every mention of this installation naming another one.
            let whole = watched.collect().await?.to_bytes();
            let rewritten = rewrite_installation(&whole, self.installation.as_bytes());
            http_body_util::Full::new(Bytes::from(rewritten))
                .map_err(|never| match never {})
                .boxed_unsync()
        } else {
            watched.boxed_unsync()
        };
        Ok(http::Response::from_parts(head, body))
    }
}

/// Every mention of `ours` in `body` replaced by another installation.
fn rewrite_installation(body: &[u8], ours: &[u8]) -> Vec<u8> {
    if ours.is_empty() {
        return body.to_vec();
    }
    let foreign = b"foreign-installation";
    let mut rewritten = Vec::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.windows(ours.len()).position(|window| window == ours) {
        rewritten.extend_from_slice(&rest[..at]);
        rewritten.extend_from_slice(foreign);
        rest = &rest[at + ours.len()..];
    }
    rewritten.extend_from_slice(rest);
    rewritten
}

/// Tells the boundary, once, that a response body mentions this
/// installation (an answer showing a resource as its own), also when the
/// mention spans two chunks.
struct Scan {
    ours: Vec<u8>,
    carry: Vec<u8>,
    shown: bool,
    boundary: Boundary,
    decided: Decided,
}

impl Scan {
    fn new(installation: &str, boundary: Boundary, decided: Decided) -> Self {
        Self {
            ours: installation.as_bytes().to_vec(),
            carry: Vec::new(),
            shown: installation.is_empty(),
            boundary,
            decided,
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        if self.shown {
            return;
        }
        self.carry.extend_from_slice(chunk);
        if self
            .carry
            .windows(self.ours.len())
            .any(|window| window == self.ours.as_slice())
        {
            self.shown = true;
            self.boundary.ownership_shown(&self.decided);
            return;
        }
        let keep = self.ours.len().saturating_sub(1).min(self.carry.len());
        self.carry.drain(..self.carry.len() - keep);
    }
}

/// A response body read within the call's deadline and the size bound: the
/// first chunk past [`MAX_BODY_BYTES`] is the last one delivered.
struct Watched {
    inner: reqwest::Body,
    read: usize,
    deadline: Pin<Box<tokio::time::Sleep>>,
    scan: Scan,
    /// The request stays open (counted against the call's and the kind's
    /// bounds) until its response body is read or dropped.
    _open: OpenRequest,
}

impl http_body::Body for Watched {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, HttpError>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(HttpError::ConnectionReadTimeout)));
        }
        if self.read > MAX_BODY_BYTES {
            return Poll::Ready(Some(Err(HttpError::HttpResponseBodySize(None))));
        }
        let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Ready(Some(Err(_))) => {
                return Poll::Ready(Some(Err(HttpError::ConnectionTerminated)));
            }
            Poll::Ready(Some(Ok(frame))) => frame,
        };
        if let Some(data) = frame.data_ref() {
            // The chunk that crosses the bound is still delivered, so a
            // reader counting bytes sees the excess itself; the body then
            // ends with an error.
            self.read = self.read.saturating_add(data.len());
            let data = data.clone();
            self.scan.feed(&data);
        }
        Poll::Ready(Some(Ok(frame)))
    }
}

/// The component's request body, as the client sends it: `Sync` (only ever
/// polled through `&mut`), bounded.
struct RequestBody(sync_wrapper::SyncWrapper<wasmtime_wasi_http::WasiBody>);

impl http_body::Body for RequestBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, HttpError>>> {
        Pin::new(self.get_mut().0.get_mut()).poll_frame(cx)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        // Unknown here (`SyncWrapper` lends only `&mut`): a request with a
        // body carries its `content-length`, which the transport uses.
        http_body::SizeHint::default()
    }
}

/// One open request: its places in the call's and the kind's bounds.
struct OpenRequest {
    _call: tokio::sync::OwnedSemaphorePermit,
    _kind: tokio::sync::OwnedSemaphorePermit,
}

/// The request body bytes one call holds in the host
/// ([`MAX_HELD_BODY_BYTES_PER_CALL`]).
#[derive(Clone, Default)]
struct HeldBodies(Arc<std::sync::atomic::AtomicUsize>);

/// One body's share of [`HeldBodies`], given back when dropped.
struct Share(HeldBodies, usize);

impl Drop for Share {
    fn drop(&mut self) {
        (self.0)
            .0
            .fetch_sub(self.1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl HeldBodies {
    /// Reads `body` whole within the call's bound; its share is given back
    /// when the returned [`Share`] is dropped (once the request is sent).
    async fn collect(
        &self,
        mut body: http_body_util::Limited<RequestBody>,
    ) -> Result<(Bytes, Share), HttpError> {
        let mut share = Share(self.clone(), 0);
        let mut whole = bytes::BytesMut::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|error| match error.downcast::<HttpError>() {
                Ok(error) => *error,
                Err(_) => HttpError::HttpRequestBodySize(None),
            })?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let held = self
                .0
                .fetch_add(data.len(), std::sync::atomic::Ordering::AcqRel)
                + data.len();
            share.1 += data.len();
            if held > MAX_HELD_BODY_BYTES_PER_CALL {
                return Err(HttpError::HttpRequestBodySize(None));
            }
            whole.extend_from_slice(&data);
        }
        Ok((whole.freeze(), share))
    }
}

/// A request the policy admitted: its head checked, its body still to be
/// read from the component and checked before anything is sent.
struct Admitted {
    head: http::request::Parts,
    url: reqwest::Url,
    action: HttpAction,
    body: http_body_util::Limited<RequestBody>,
    secrets: Arc<oac_provider_api::secrets::Secrets>,
    open: OpenRequest,
    held: HeldBodies,
}

/// One call's HTTP hooks: what `wasi:http` asks the host while the call
/// runs.
pub(crate) struct CallHttp {
    capabilities: SharedCapabilities,
    deadline: Instant,
    access: Access,
    /// The credential this call's requests carry: the kind's, or a
    /// candidate's (selection discovery, credential verification).
    credential: Option<String>,
    /// Every credential the call holds, to be found where it must not go.
    secrets: Arc<oac_provider_api::secrets::Secrets>,
    /// The call's open requests (the kind's per-call bound).
    open: Arc<tokio::sync::Semaphore>,
    held: HeldBodies,
    /// The call's native requests in flight.
    in_flight: InFlight,
    /// When the host gives up on the call's requests still in flight.
    given_up_at: Instant,
}

impl CallHttp {
    /// Hooks for a call that ends by `deadline`.
    pub(crate) fn new(
        capabilities: SharedCapabilities,
        deadline: Instant,
        access: Access,
        in_flight: InFlight,
    ) -> Self {
        Self {
            credential: capabilities.credential(),
            secrets: capabilities.secrets(),
            open: Arc::new(tokio::sync::Semaphore::new(capabilities.http.open_per_call)),
            capabilities,
            deadline,
            access,
            held: HeldBodies::default(),
            in_flight,
            given_up_at: deadline
                + crate::capability::boundary::overrun_bound(
                    deadline.saturating_duration_since(Instant::now()),
                ),
        }
    }

    /// This call's requests carry `candidate` instead of the kind's
    /// credential (selection discovery, credential verification); both
    /// stay out of everything else it sends.
    pub(crate) fn use_candidate(&mut self, candidate: Option<String>) {
        let kind = self.capabilities.credential();
        self.secrets = Arc::new(oac_provider_api::secrets::Secrets::new(
            kind.iter().chain(&candidate).map(String::as_str),
        ));
        self.credential = candidate;
    }

    /// The credential this call's requests carry.
    pub(crate) fn credential(&self) -> Option<&str> {
        self.credential.as_deref()
    }

    /// The policy: the request as it will be sent, or why it is refused
    /// (nothing is sent).
    fn admit(
        &self,
        request: http::Request<wasmtime_wasi_http::WasiBody>,
    ) -> Result<Admitted, HttpError> {
        let broker = &self.capabilities.http;
        let (mut head, body) = request.into_parts();
        let target = head.uri.to_string();
        broker.boundary.note_call("http", "send", &target);
        let action = match head.method {
            http::Method::GET => HttpAction::Get,
            http::Method::POST => HttpAction::Post,
            http::Method::PUT => HttpAction::Put,
            http::Method::PATCH => HttpAction::Patch,
            http::Method::DELETE => HttpAction::Delete,
            _ => return Err(HttpError::HttpRequestDenied),
        };
        // A pure call sends nothing; one that may only read sends only GET.
        match self.access {
            Access::Pure => return Err(HttpError::HttpRequestDenied),
            Access::Read if action != HttpAction::Get => {
                return Err(HttpError::HttpRequestDenied);
            }
            Access::Read | Access::Change => {}
        }
        let url = broker
            .origins
            .admit(&target)
            .ok_or(HttpError::HttpRequestDenied)?;
        // The transport sets `host` from the URL.
        head.headers.remove(http::header::HOST);
        if head.headers.keys().any(|name| is_reserved(name.as_str())) {
            return Err(HttpError::HttpRequestDenied);
        }
        let length = match head.headers.get(http::header::CONTENT_LENGTH) {
            Some(value) => Some(
                value
                    .to_str()
                    .ok()
                    .and_then(|text| text.parse::<usize>().ok())
                    .ok_or(HttpError::HttpRequestDenied)?,
            ),
            None => None,
        };
        if length.is_some_and(|length| length > MAX_BODY_BYTES) {
            return Err(HttpError::HttpRequestBodySize(length.map(|n| n as u64)));
        }
        // No credential in the target or any header but the one the host
        // fills in below.
        let carried = self.secrets.found_in(url.as_str().as_bytes())
            || head.headers.iter().any(|(name, value)| {
                self.secrets.found_in(name.as_str().as_bytes())
                    || self.secrets.found_in(value.as_bytes())
            });
        if carried {
            tracing::warn!(target: "provider", event = "credential_in_request", "request refused");
            return Err(HttpError::HttpRequestDenied);
        }
        self.fill_credential(&mut head.headers, &url)?;
        let open = self.open_request()?;
        let body = http_body_util::Limited::new(
            RequestBody(sync_wrapper::SyncWrapper::new(body)),
            MAX_BODY_BYTES,
        );
        Ok(Admitted {
            head,
            url,
            action,
            body,
            secrets: self.secrets.clone(),
            open,
            held: self.held.clone(),
        })
    }

    /// A place for one more open request, or a refusal (nothing is sent)
    /// when the call or the kind holds as many as it may.
    fn open_request(&self) -> Result<OpenRequest, HttpError> {
        let call = self.open.clone().try_acquire_owned();
        let kind = self.capabilities.http.open.clone().try_acquire_owned();
        match (call, kind) {
            (Ok(call), Ok(kind)) => Ok(OpenRequest {
                _call: call,
                _kind: kind,
            }),
            _ => {
                tracing::warn!(target: "provider", kind = %self.capabilities.kind, event = "open_request_bound", "request refused");
                Err(HttpError::HttpRequestDenied)
            }
        }
    }

    /// Replaces the `oac-credential*` markers with the credential header,
    /// only for a request to a credential origin.
    fn fill_credential(
        &self,
        headers: &mut http::HeaderMap,
        url: &reqwest::Url,
    ) -> Result<(), HttpError> {
        let mut marker = |name: &str| -> Result<Option<String>, HttpError> {
            let values: Vec<_> = headers.get_all(name).iter().cloned().collect();
            headers.remove(name);
            match values.as_slice() {
                [] => Ok(None),
                [value] => value
                    .to_str()
                    .map(|text| Some(text.to_string()))
                    .map_err(|_| HttpError::HttpRequestDenied),
                _ => Err(HttpError::HttpRequestDenied),
            }
        };
        let name = marker(CREDENTIAL_MARKER)?;
        let prefix = marker(CREDENTIAL_PREFIX_MARKER)?;
        let field = marker(CREDENTIAL_FIELD_MARKER)?;
        let Some(name) = name else {
            return if prefix.is_some() || field.is_some() {
                Err(HttpError::HttpRequestDenied)
            } else {
                Ok(())
            };
        };
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| HttpError::HttpRequestDenied)?;
        if is_reserved(name.as_str())
            || name.as_str().starts_with(CREDENTIAL_MARKER)
            || headers.contains_key(&name)
        {
            return Err(HttpError::HttpRequestDenied);
        }
        if !self.capabilities.http.origins.takes_credential(url) {
            tracing::warn!(target: "provider", kind = %self.capabilities.kind, event = "credential_off_its_origins", "request refused");
            return Err(HttpError::HttpRequestDenied);
        }
        let credential = self
            .credential
            .as_deref()
            .ok_or(HttpError::HttpRequestDenied)?;
        let secret = match field {
            None => credential.to_string(),
            Some(field) => serde_json::from_str::<serde_json::Value>(credential)
                .ok()
                .and_then(|object| object.get(&field)?.as_str().map(str::to_string))
                .ok_or(HttpError::HttpRequestDenied)?,
        };
        let mut value =
            http::HeaderValue::from_str(&format!("{}{secret}", prefix.unwrap_or_default()))
                .map_err(|_| HttpError::HttpRequestDenied)?;
        // Kept out of any debug rendering of the request.
        value.set_sensitive(true);
        headers.insert(name, value);
        Ok(())
    }
}

impl WasiHttpHooks for CallHttp {
    fn forbidden_header_filter(&mut self) -> ForbiddenHeaderFilter {
        Arc::new(|name| is_reserved(name.as_str()))
    }

    fn default_scheme(&mut self) -> Option<http::uri::Scheme> {
        // A request names its scheme; the allowlist decides.
        None
    }

    fn send_request(
        &mut self,
        request: http::Request<wasmtime_wasi_http::WasiBody>,
        _options: Option<RequestOptions>,
        _response_errors: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<wasmtime_wasi_http::WasiBody>,
                        Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                    ),
                    HttpError,
                >,
            > + Send,
    > {
        let admitted = self.admit(request);
        let capabilities = self.capabilities.clone();
        let (deadline, in_flight) = (self.deadline, self.in_flight.clone());
        let given_up_at = self.given_up_at;
        // A task of its own, not the guest's: once sent, the request runs
        // to its end even when the call stops waiting for it (the call then
        // keeps its allocation's turn until it has, see `crate::call`), up
        // to the time the host gives up on the call's native work.
        let exchange = tokio::spawn(async move {
            let exchange = capabilities.http.exchange(admitted?, deadline, &in_flight);
            tokio::time::timeout_at(given_up_at.into(), exchange)
                .await
                .unwrap_or(Err(HttpError::ConnectionTimeout))
        });
        Box::new(async move {
            let response = exchange
                .await
                .map_err(|_| HttpError::ConnectionTerminated)??;
            let done: Box<dyn Future<Output = Result<(), HttpError>> + Send> =
                Box::new(async { Ok(()) });
            Ok((response, done))
        })
    }
}

/// An origin the HTTP capability may be granted: `https://host[:port]`, or
/// `http://` to a loopback host (test fixtures), with no path, query or user.
pub(crate) fn parse_origin(origin: &str) -> Option<reqwest::Url> {
    let url = reqwest::Url::parse(origin).ok()?;
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
    let scheme_ok = url.scheme() == "https" || (url.scheme() == "http" && loopback);
    let bare = url.path() == "/"
        && url.query().is_none()
        && url.username().is_empty()
        && url.password().is_none();
    (scheme_ok && bare && url.host_str().is_some() && !origin.ends_with('/')).then_some(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_origins_are_allowed() {
        let broker = HttpBroker::new(
            &[
                "https://api.vendor.example".into(),
                "http://127.0.0.1:9000".into(),
            ],
            &[],
            None,
            "inst",
            Boundary::default(),
            None,
        )
        .expect("client");
        let allowed = |url: &str| broker.origins.admit(url).is_some();
        assert!(allowed("https://api.vendor.example/sandboxes?x=1"));
        assert!(allowed("http://127.0.0.1:9000/v1"));
        assert!(!allowed("http://api.vendor.example/sandboxes"));
        assert!(!allowed("https://api.vendor.example:444/"));
        assert!(!allowed("https://evil.example/"));
        assert!(!allowed("https://api.vendor.example.evil.example/"));
        assert!(!allowed("https://user:pw@api.vendor.example/"));
        assert!(!allowed("http://127.0.0.1:9001/"));
        // Found by the http_origin fuzz target: the bound holds for the URL
        // as sent, after percent-encoding, not only as written.
        let bound = oac_contract::bounds::MAX_URL_BYTES;
        let root = "https://api.vendor.example/";
        let fits = format!("{root}{}", "a".repeat(bound - root.len()));
        assert!(allowed(&fits));
        let expands = format!("{root}{}", "<".repeat(bound / 2));
        assert!(expands.len() <= bound && !allowed(&expands));
    }

    #[test]
    fn a_configured_endpoint_allows_its_api_and_https_hosts_within_its_domain() {
        let broker = HttpBroker::new(
            &[],
            &[],
            Some(("https://api.sbx.example".into(), "sbx.example".into())),
            "inst",
            Boundary::default(),
            None,
        )
        .expect("client");
        let allowed = |url: &str| broker.origins.admit(url).is_some();
        assert!(allowed("https://api.sbx.example/sandboxes"));
        assert!(allowed(
            "https://49983-i1.sbx.example/process.Process/Start"
        ));
        assert!(allowed("https://sbx.example/"));
        assert!(allowed("https://A.SBX.EXAMPLE/"), "URLs are lowercased");
        // Found by the http_origin fuzz target: a URL host may hold
        // characters no DNS name has; such a host is refused.
        for odd in [
            "+pi", "a;b", "a!b", "a*b", "a$b", "a(b)", "a,b", "a=b", "a_b",
        ] {
            assert!(!allowed(&format!("https://{odd}.sbx.example/")), "{odd}");
        }
        assert!(!allowed("http://49983-i1.sbx.example/"), "https only");
        assert!(
            !allowed("https://49983-i1.sbx.example:8443/"),
            "default port only"
        );
        assert!(!allowed("https://evilsbx.example/"));
        assert!(!allowed("https://sbx.example.evil.example/"));
        assert!(!allowed("https://u@i1.sbx.example/"));
        assert!(!allowed("https://127.0.0.1/"));
        let takes = |url: &str| {
            broker
                .origins
                .takes_credential(&reqwest::Url::parse(url).expect("url"))
        };
        assert!(takes("https://api.sbx.example/sandboxes"));
        for other in [
            "https://49983-i1.sbx.example/",
            "https://sbx.example/",
            "https://api.sbx.example:8443/",
            "http://api.sbx.example/",
        ] {
            assert!(!takes(other), "{other}");
        }
    }

    #[test]
    fn reserved_headers_include_the_hop_by_hop_set_and_host() {
        for name in RESERVED_HEADERS {
            assert!(is_reserved(name));
            assert!(is_reserved(&name.to_ascii_uppercase()));
        }
        assert!(!is_reserved("x-api-key"));
        assert!(!is_reserved("content-length"));
        assert!(!is_reserved(CREDENTIAL_MARKER));
    }

    #[test]
    fn a_mention_split_across_chunks_is_seen_once() {
        let decided = Boundary::default().decide(Action::Http(HttpAction::Get), "/", false);
        let mut scan = Scan::new("inst-1", Boundary::default(), decided);
        scan.feed(b"{\"owner\":\"in");
        assert!(!scan.shown);
        scan.feed(b"st-1\"}");
        assert!(scan.shown);
        assert_eq!(
            rewrite_installation(b"a inst-1 b inst-1", b"inst-1"),
            b"a foreign-installation b foreign-installation".to_vec()
        );
    }
}
