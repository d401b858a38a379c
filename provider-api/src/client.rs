//! The raw client of the node protocol: each call one request frame on a
//! framed session (`GET /frames`, see [`wire::frame`]), `kinds` and
//! `health` one HTTP request each; all bounded in time by the caller's
//! budget and in size by [`MAX_RESPONSE_BYTES`], and never retried (not
//! even the protocol-level retries HTTP clients do by default).

use crate::budget::Budget;
use crate::wire::{
    self, Answer, Call, FRAMES_UPGRADE, MAX_RESPONSE_BYTES, Outcome, PROTOCOL_HEADER,
    PROTOCOL_VERSION, READ_TIMEOUT, REFUSALS, frame,
};
use bytes::Bytes;
use futures_util::FutureExt;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::client::conn::http1;
use hyper::header::{AUTHORIZATION, CONNECTION, CONTENT_TYPE, HOST, HeaderValue, UPGRADE};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// Where a node listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A Unix socket.
    Unix(PathBuf),
    /// Plain TCP (a node serves it on loopback, or where its operator
    /// allowed it explicitly).
    Tcp(SocketAddr),
    /// TCP with TLS: the node's certificate is verified.
    Tls(TlsEndpoint),
}

/// A node behind TLS: where it is, the name its certificate must carry,
/// the CA that issued it, and this client's own certificate when the node
/// requires one (mTLS).
#[derive(Clone, PartialEq, Eq)]
pub struct TlsEndpoint {
    /// The node's address.
    pub address: SocketAddr,
    /// The DNS name the node's certificate must be valid for.
    pub server_name: String,
    /// The CA certificates (PEM) the node's certificate must chain to;
    /// the system's roots are not trusted.
    pub ca_pem: Vec<u8>,
    /// This client's certificate chain and private key (PEM, in one
    /// buffer), for a node that requires client certificates.
    pub identity_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for TlsEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsEndpoint")
            .field("address", &self.address)
            .field("server_name", &self.server_name)
            .field(
                "identity",
                &self.identity_pem.as_ref().map(|_| "[redacted]"),
            )
            .finish_non_exhaustive()
    }
}

/// Why a request got no operation outcome.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The request was refused before it was executed: by the node (one of
    /// [`REFUSALS`]), or `too_large` by this client, which sends no frame
    /// over [`wire::MAX_REQUEST_BYTES`].
    #[error("the node refused the request: {0}")]
    Refused(&'static str),
    /// The connection failed or was lost before a complete answer.
    #[error("the connection to the node was lost before an answer")]
    Lost,
    /// The budget ran out before an answer.
    #[error("the budget expired before the node answered")]
    Expired,
    /// The answer is not a frame of this protocol version.
    #[error("the node's answer is not a valid frame")]
    BadFrame,
}

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The token cannot be sent as a header.
    #[error("the token holds characters a header cannot carry")]
    Token,
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built")]
    Build,
    /// The TLS endpoint's CA, identity or server name is unusable.
    #[error("the TLS endpoint's {0} is unusable")]
    Tls(&'static str),
}

/// A connection pool to one node: framed sessions for calls, HTTP/1.1
/// connections for the rest. Each request is written, and its answer read,
/// by the caller's own task: no connection is driven by a task of its own,
/// so a call crosses no thread on this side.
#[derive(Clone)]
pub struct NodeClient {
    inner: Arc<Inner>,
}

struct Inner {
    target: Target,
    /// The `Host` header: the node's name or address.
    authority: HeaderValue,
    authorization: HeaderValue,
    idle: Idle<Connection>,
    sessions: Idle<Session>,
}

/// Open connections or sessions waiting for their next exchange, at most
/// [`MAX_IDLE`] (newest first out).
struct Idle<T>(Mutex<Vec<T>>);

impl<T> Idle<T> {
    fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    fn pop(&self) -> Option<T> {
        self.lock().pop()
    }

    /// Keeps `reusable` unless the pool is full (then it is closed).
    fn push(&self, reusable: T) {
        let mut idle = self.lock();
        if idle.len() < MAX_IDLE {
            idle.push(reusable);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<T>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// How to open a connection to the node.
enum Target {
    Unix(PathBuf),
    Tcp(SocketAddr),
    Tls {
        address: SocketAddr,
        name: ServerName<'static>,
        connector: TlsConnector,
    },
}

/// A byte stream to the node (Unix, TCP, or TLS over TCP).
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

type Driver = http1::Connection<TokioIo<Box<dyn Stream>>, Full<Bytes>>;

/// One HTTP/1.1 connection: the handle requests are sent on, and the
/// future that moves its bytes (polled only while a request is under way).
struct Connection {
    send: http1::SendRequest<Full<Bytes>>,
    driver: Pin<Box<Driver>>,
    idle_since: Instant,
}

/// A framed session: an upgraded connection carrying one call at a time.
struct Session {
    io: tokio::io::BufStream<TokioIo<hyper::upgrade::Upgraded>>,
    idle_since: Instant,
}

/// Idle connections (and, apart, idle sessions) kept for reuse, at most.
const MAX_IDLE: usize = 256;

/// The TLS client of `tls`: trusts only `tls.ca_pem`, presents
/// `tls.identity_pem` when given, verifies `tls.server_name`.
fn tls_target(tls: &TlsEndpoint) -> Result<Target, ClientError> {
    let name = &tls.server_name;
    let valid_name = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'.');
    if !valid_name {
        return Err(ClientError::Tls("server name"));
    }
    let server_name =
        ServerName::try_from(name.clone()).map_err(|_| ClientError::Tls("server name"))?;
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(&tls.ca_pem) {
        let certificate = certificate.map_err(|_| ClientError::Tls("CA"))?;
        roots.add(certificate).map_err(|_| ClientError::Tls("CA"))?;
    }
    if roots.is_empty() {
        return Err(ClientError::Tls("CA"));
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|_| ClientError::Build)?
        .with_root_certificates(roots);
    let config = match &tls.identity_pem {
        Some(pem) => {
            let chain = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .ok()
                .filter(|chain| !chain.is_empty())
                .ok_or(ClientError::Tls("identity"))?;
            let key =
                PrivateKeyDer::from_pem_slice(pem).map_err(|_| ClientError::Tls("identity"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|_| ClientError::Tls("identity"))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(Target::Tls {
        address: tls.address,
        name: server_name,
        connector: TlsConnector::from(Arc::new(config)),
    })
}

impl Target {
    /// A new connection, handshaken (TLS, then HTTP/1.1).
    async fn connect(&self) -> Result<Connection, TransportError> {
        let (send, driver) = http1::Builder::new()
            .handshake(TokioIo::new(self.stream().await?))
            .await
            .map_err(|_| TransportError::Lost)?;
        Ok(Connection {
            send,
            driver: Box::pin(driver),
            idle_since: Instant::now(),
        })
    }

    /// A new byte stream to the node (TLS handshaken).
    async fn stream(&self) -> Result<Box<dyn Stream>, TransportError> {
        Ok(match self {
            Target::Unix(path) => Box::new(
                tokio::net::UnixStream::connect(path)
                    .await
                    .map_err(|_| TransportError::Lost)?,
            ),
            Target::Tcp(address) => Box::new(tcp(*address).await?),
            Target::Tls {
                address,
                name,
                connector,
            } => Box::new(
                connector
                    .connect(name.clone(), tcp(*address).await?)
                    .await
                    .map_err(|_| TransportError::Lost)?,
            ),
        })
    }
}

/// A TCP connection with Nagle's algorithm off (a request is one write).
async fn tcp(address: SocketAddr) -> Result<tokio::net::TcpStream, TransportError> {
    let stream = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|_| TransportError::Lost)?;
    stream.set_nodelay(true).map_err(|_| TransportError::Lost)?;
    Ok(stream)
}

/// An answer as received: status, whether it is stamped with this
/// protocol's version, and its body.
struct Received {
    status: u16,
    stamped: bool,
    body: Bytes,
}

impl NodeClient {
    /// A client for the node at `endpoint`, presenting `token` (the node's
    /// private token; it travels only in the authorization header, which is
    /// marked sensitive).
    pub fn new(endpoint: &Endpoint, token: &str) -> Result<Self, ClientError> {
        let mut authorization =
            HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| ClientError::Token)?;
        authorization.set_sensitive(true);
        let (target, authority) = match endpoint {
            Endpoint::Unix(path) => (Target::Unix(path.clone()), "node".to_string()),
            Endpoint::Tcp(address) => (Target::Tcp(*address), address.to_string()),
            Endpoint::Tls(tls) => (
                tls_target(tls)?,
                format!("{}:{}", tls.server_name, tls.address.port()),
            ),
        };
        let authority = HeaderValue::from_str(&authority).map_err(|_| ClientError::Build)?;
        Ok(Self {
            inner: Arc::new(Inner {
                target,
                authority,
                authorization,
                idle: Idle::new(),
                sessions: Idle::new(),
            }),
        })
    }

    /// Runs one operation on `kind`; the node counts `budget` from receipt,
    /// and this side stops waiting when it runs out here.
    pub async fn call(
        &self,
        kind: &str,
        budget: Budget,
        call: Call,
    ) -> Result<Outcome, TransportError> {
        let deadline = Instant::now() + budget.duration();
        let request = wire::Request {
            kind: kind.to_string(),
            timeout_ms: budget.millis(),
            call,
        };
        // Nothing is sent that the node would refuse unread.
        let request = frame::request(&request).ok_or(TransportError::Refused("too_large"))?;
        let exchange = async {
            let mut session = self.session().await?;
            // A session that failed mid-call is out of step: it is dropped.
            let (answer, last) = Self::framed(&mut session, &request).await?;
            if !last {
                session.idle_since = Instant::now();
                self.inner.sessions.push(session);
            }
            match answer {
                Answer::Outcome(outcome) => Ok(outcome),
                Answer::Refused(code) => Err(refusal_of(&code)),
            }
        };
        tokio::time::timeout_at(deadline, exchange)
            .await
            .map_err(|_| TransportError::Expired)?
    }

    /// An idle session the node is not closing (used recently enough that
    /// it is not closing it as idle, and with nothing, not even its close,
    /// arrived since its last answer), or a new one.
    async fn session(&self) -> Result<Session, TransportError> {
        loop {
            let idle = self.inner.sessions.pop();
            let Some(mut session) = idle else {
                // Opening a session (an HTTP upgrade) is rare and its
                // future is large: boxed, it is not carried, and moved, by
                // every call's future.
                return Box::pin(self.open_session()).await;
            };
            let fresh = session.idle_since.elapsed() < READ_TIMEOUT / 2;
            if fresh && session.io.fill_buf().now_or_never().is_none() {
                return Ok(session);
            }
        }
    }

    /// Opens a connection and upgrades it to a framed session.
    async fn open_session(&self) -> Result<Session, TransportError> {
        let stream = self.inner.target.stream().await?;
        let (mut send, driver) = http1::Builder::new()
            .handshake::<_, Full<Bytes>>(TokioIo::new(stream))
            .await
            .map_err(|_| TransportError::Lost)?;
        let mut request = self.request(Method::GET, "/frames", Vec::new())?;
        request
            .headers_mut()
            .insert(UPGRADE, HeaderValue::from_static(FRAMES_UPGRADE));
        request
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("upgrade"));
        let upgraded = async {
            let response = send
                .send_request(request)
                .await
                .map_err(|_| TransportError::Lost)?;
            let stamped = response
                .headers()
                .get(PROTOCOL_HEADER)
                .is_some_and(|value| value.as_bytes() == PROTOCOL_VERSION.as_bytes());
            if !stamped {
                return Err(TransportError::BadFrame);
            }
            if response.status() != hyper::StatusCode::SWITCHING_PROTOCOLS {
                let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                    .collect()
                    .await
                    .map_err(|_| TransportError::Lost)?
                    .to_bytes();
                let refusal = serde_json::from_slice::<wire::Refusal>(&body)
                    .map_err(|_| TransportError::BadFrame)?;
                return Err(refusal_of(&refusal.refused));
            }
            hyper::upgrade::on(response)
                .await
                .map_err(|_| TransportError::Lost)
        };
        let mut driver = driver.with_upgrades();
        let upgraded = crate::own_wakes::repoll_own_wakes(async {
            let mut upgraded = std::pin::pin!(upgraded);
            tokio::select! {
                biased;
                upgraded = &mut upgraded => upgraded,
                // The connection handed its bytes over, or ended.
                _ = &mut driver => upgraded.await,
            }
        })
        .await?;
        Ok(Session {
            io: tokio::io::BufStream::new(TokioIo::new(upgraded)),
            idle_since: Instant::now(),
        })
    }

    /// Writes one request frame on `session` and reads its answer frame:
    /// the answer, and whether the node ends the session after it.
    async fn framed(
        session: &mut Session,
        request: &[u8],
    ) -> Result<(Answer, bool), TransportError> {
        let io = &mut session.io;
        io.write_all(request)
            .await
            .map_err(|_| TransportError::Lost)?;
        io.flush().await.map_err(|_| TransportError::Lost)?;
        let mut prefix = [0; frame::PREFIX];
        io.read_exact(&mut prefix)
            .await
            .map_err(|_| TransportError::Lost)?;
        let (length, last) = frame::answer_prefix(prefix);
        if length > frame::MAX_ANSWER_BYTES {
            return Err(TransportError::BadFrame);
        }
        let mut body = vec![0; length];
        io.read_exact(&mut body)
            .await
            .map_err(|_| TransportError::Lost)?;
        let answer = serde_json::from_slice(&body).map_err(|_| TransportError::BadFrame)?;
        Ok((answer, last))
    }

    /// The served kinds and their declarations.
    pub async fn kinds(&self, budget: Budget) -> Result<wire::Kinds, TransportError> {
        let deadline = Instant::now() + budget.duration();
        self.exchange(Method::GET, "/kinds", Vec::new(), deadline, false)
            .await
    }

    /// Each served kind's readiness diagnostics (the node answers 503
    /// with the same body when a kind is not ready).
    pub async fn health(&self, budget: Budget) -> Result<wire::Health, TransportError> {
        let deadline = Instant::now() + budget.duration();
        self.exchange(Method::GET, "/health", Vec::new(), deadline, true)
            .await
    }

    /// An idle connection that is still open and was used recently
    /// enough that the node will not be closing it as idle, or a new one.
    async fn connection(&self) -> Result<Connection, TransportError> {
        loop {
            let idle = self.inner.idle.pop();
            let Some(mut connection) = idle else {
                return self.inner.target.connect().await;
            };
            // Never reuse a connection the node may be closing as idle: a
            // request lost that way would be unconfirmed for nothing. One
            // poll of its driver notices a close that already arrived (and
            // lets an open one say it wants the next request).
            let fresh = connection.idle_since.elapsed() < READ_TIMEOUT / 2;
            let ended = connection.driver.as_mut().now_or_never().is_some();
            if fresh && !ended && connection.send.is_ready() {
                return Ok(connection);
            }
        }
    }

    /// Sends one request on `connection` and reads its answer, driving the
    /// connection meanwhile; `Some` connection back when it can be reused.
    async fn send(
        mut connection: Connection,
        request: Request<Full<Bytes>>,
    ) -> (Result<Received, TransportError>, Option<Connection>) {
        let (answer, open) = {
            let Connection { send, driver, .. } = &mut connection;
            let answer = async {
                let response = send
                    .send_request(request)
                    .await
                    .map_err(|_| TransportError::Lost)?;
                let status = response.status().as_u16();
                let stamped = response
                    .headers()
                    .get(PROTOCOL_HEADER)
                    .is_some_and(|value| value.as_bytes() == PROTOCOL_VERSION.as_bytes());
                let closing = response
                    .headers()
                    .get(CONNECTION)
                    .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"close"));
                let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                    .collect()
                    .await
                    .map_err(|error| {
                        if error.downcast_ref::<LengthLimitError>().is_some() {
                            TransportError::BadFrame
                        } else {
                            TransportError::Lost
                        }
                    })?
                    .to_bytes();
                Ok::<_, TransportError>((
                    Received {
                        status,
                        stamped,
                        body,
                    },
                    closing,
                ))
            };
            // The connection and the answer wake each other; see
            // `own_wakes` for why that must not wake the task.
            crate::own_wakes::repoll_own_wakes(async {
                let mut answer = std::pin::pin!(answer);
                tokio::select! {
                    biased;
                    answer = &mut answer => (answer, true),
                    // The connection ended; what it delivered before is read.
                    _ = driver.as_mut() => (answer.await, false),
                }
            })
            .await
        };
        match answer {
            Ok((received, closing)) => {
                let reusable = open && !closing;
                connection.idle_since = Instant::now();
                (Ok(received), reusable.then_some(connection))
            }
            Err(error) => (Err(error), None),
        }
    }

    /// A request of this protocol: version, token, host.
    fn request(
        &self,
        method: Method,
        path: &'static str,
        body: Vec<u8>,
    ) -> Result<Request<Full<Bytes>>, TransportError> {
        Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, self.inner.authority.clone())
            .header(PROTOCOL_HEADER, PROTOCOL_VERSION)
            .header(AUTHORIZATION, self.inner.authorization.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|_| TransportError::BadFrame)
    }

    /// Sends one request and decodes its answer, all before `deadline`.
    /// `unready_answers`: a 503 that is not a refusal is an answer too.
    async fn exchange<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &'static str,
        body: Vec<u8>,
        deadline: Instant,
        unready_answers: bool,
    ) -> Result<T, TransportError> {
        let request = self.request(method, path, body)?;
        let exchange = async {
            let connection = self.connection().await?;
            let (received, reusable) = Self::send(connection, request).await;
            if let Some(connection) = reusable {
                self.inner.idle.push(connection);
            }
            let Received {
                status,
                stamped,
                body,
            } = received?;
            if !stamped {
                return Err(TransportError::BadFrame);
            }
            if (200..300).contains(&status) {
                return serde_json::from_slice(&body).map_err(|_| TransportError::BadFrame);
            }
            let refusal = match serde_json::from_slice::<wire::Refusal>(&body) {
                Ok(refusal) => refusal,
                Err(_) if unready_answers && status == 503 => {
                    return serde_json::from_slice(&body).map_err(|_| TransportError::BadFrame);
                }
                Err(_) => return Err(TransportError::BadFrame),
            };
            Err(refusal_of(&refusal.refused))
        };
        tokio::time::timeout_at(deadline, exchange)
            .await
            .map_err(|_| TransportError::Expired)?
    }
}

/// The refusal a node answered with `code`; a code outside [`REFUSALS`]
/// is not an answer of this protocol.
fn refusal_of(code: &str) -> TransportError {
    REFUSALS
        .into_iter()
        .find(|known| *known == code)
        .map_or(TransportError::BadFrame, TransportError::Refused)
}
