//! The raw client of the node protocol: one HTTP request per call, bounded
//! in time by the caller's budget and in size by [`MAX_RESPONSE_BYTES`],
//! and never retried (not even the protocol-level retries HTTP clients do
//! by default).

use crate::budget::Budget;
use crate::wire::{
    self, Call, MAX_RESPONSE_BYTES, Outcome, PROTOCOL_HEADER, PROTOCOL_VERSION, READ_TIMEOUT,
    REFUSALS,
};
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::de::DeserializeOwned;
use std::net::SocketAddr;
use std::path::PathBuf;
use tokio::time::Instant;

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
    /// The node refused the request before executing it (one of [`REFUSALS`]).
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

/// A connection pool to one node.
#[derive(Clone)]
pub struct NodeClient {
    http: reqwest::Client,
    base: String,
    authorization: HeaderValue,
}

/// A client that reaches `tls.address` under `tls.server_name`, trusting
/// only `tls.ca_pem`, over TLS alone.
fn tls_builder(
    builder: reqwest::ClientBuilder,
    tls: &TlsEndpoint,
) -> Result<(reqwest::ClientBuilder, String), ClientError> {
    let name = &tls.server_name;
    let valid_name = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'.');
    if !valid_name {
        return Err(ClientError::Tls("server name"));
    }
    let roots = reqwest::Certificate::from_pem_bundle(&tls.ca_pem)
        .ok()
        .filter(|roots| !roots.is_empty())
        .ok_or(ClientError::Tls("CA"))?;
    let mut builder = builder
        .tls_backend_rustls()
        .https_only(true)
        .tls_certs_only(roots)
        .resolve(name, tls.address);
    if let Some(pem) = &tls.identity_pem {
        let identity =
            reqwest::Identity::from_pem(pem).map_err(|_| ClientError::Tls("identity"))?;
        builder = builder.identity(identity);
    }
    Ok((builder, format!("https://{name}:{}", tls.address.port())))
}

impl NodeClient {
    /// A client for the node at `endpoint`, presenting `token` (the node's
    /// private token; it travels only in the authorization header, which is
    /// marked sensitive).
    pub fn new(endpoint: &Endpoint, token: &str) -> Result<Self, ClientError> {
        let mut authorization =
            HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| ClientError::Token)?;
        authorization.set_sensitive(true);
        let builder = reqwest::Client::builder()
            .retry(reqwest::retry::never())
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .http1_only()
            // Never reuse a connection the node may be closing as idle: a
            // request lost that way would be unconfirmed for nothing.
            .pool_idle_timeout(READ_TIMEOUT / 2);
        let (builder, base) = match endpoint {
            Endpoint::Unix(path) => (builder.unix_socket(path.as_path()), "http://node".into()),
            Endpoint::Tcp(address) => (builder, format!("http://{address}")),
            Endpoint::Tls(tls) => tls_builder(builder, tls)?,
        };
        let http = builder.build().map_err(|_| ClientError::Build)?;
        Ok(Self {
            http,
            base,
            authorization,
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
        let body = serde_json::to_vec(&request).map_err(|_| TransportError::BadFrame)?;
        let builder = self.http.post(format!("{}/call", self.base)).body(body);
        self.exchange(builder, deadline, false).await
    }

    /// The served kinds and their declarations.
    pub async fn kinds(&self, budget: Budget) -> Result<wire::Kinds, TransportError> {
        let deadline = Instant::now() + budget.duration();
        let builder = self.http.get(format!("{}/kinds", self.base));
        self.exchange(builder, deadline, false).await
    }

    /// Each served kind's readiness diagnostics (the node answers 503
    /// with the same body when a kind is not ready).
    pub async fn health(&self, budget: Budget) -> Result<wire::Health, TransportError> {
        let deadline = Instant::now() + budget.duration();
        let builder = self.http.get(format!("{}/health", self.base));
        self.exchange(builder, deadline, true).await
    }

    /// Sends one request and decodes its answer, all before `deadline`.
    /// `unready_answers`: a 503 that is not a refusal is an answer too.
    async fn exchange<T: DeserializeOwned>(
        &self,
        builder: reqwest::RequestBuilder,
        deadline: Instant,
        unready_answers: bool,
    ) -> Result<T, TransportError> {
        let builder = builder
            .header(PROTOCOL_HEADER, PROTOCOL_VERSION)
            .header(AUTHORIZATION, self.authorization.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        let exchange = async {
            let mut response = builder.send().await.map_err(|_| TransportError::Lost)?;
            let status = response.status();
            let stamped = response
                .headers()
                .get(PROTOCOL_HEADER)
                .is_some_and(|value| value.as_bytes() == PROTOCOL_VERSION.as_bytes());
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|_| TransportError::Lost)? {
                if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                    return Err(TransportError::BadFrame);
                }
                body.extend_from_slice(&chunk);
            }
            if !stamped {
                return Err(TransportError::BadFrame);
            }
            if status.is_success() {
                return serde_json::from_slice(&body).map_err(|_| TransportError::BadFrame);
            }
            let refusal = match serde_json::from_slice::<wire::Refusal>(&body) {
                Ok(refusal) => refusal,
                Err(_) if unready_answers && status.as_u16() == 503 => {
                    return serde_json::from_slice(&body).map_err(|_| TransportError::BadFrame);
                }
                Err(_) => return Err(TransportError::BadFrame),
            };
            let code = REFUSALS
                .into_iter()
                .find(|code| *code == refusal.refused)
                .ok_or(TransportError::BadFrame)?;
            Err(TransportError::Refused(code))
        };
        tokio::time::timeout_at(deadline, exchange)
            .await
            .map_err(|_| TransportError::Expired)?
    }
}
