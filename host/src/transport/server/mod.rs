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

mod frames;
mod http1;
mod listener;
mod routes;

use frames::*;
use http1::*;
use routes::*;

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
    /// The registry digest `GET /kinds` and `GET /health` report.
    registry: String,
    /// The node's identity, reported beside it.
    node_id: String,
}

/// What every connection serves (see [`Node::served`]).
#[derive(Clone)]
struct Served {
    router: axum::Router,
    node: Arc<Node>,
}

/// A request's in-flight slot and its share of the body budget.
type Permit = (OwnedSemaphorePermit, OwnedSemaphorePermit);

impl Node {
    /// A node serving `host`'s kinds to clients presenting `token`, with at
    /// most `max_in_flight` requests being handled at once.
    ///
    /// It reports the digest of a registry of exactly the loaded kinds'
    /// rows, and the identity `node`, until [`Self::with_identity`] names
    /// the registry it was configured from.
    pub fn new(host: Arc<Host>, token: Token, max_in_flight: u32) -> Self {
        let registry = host.loaded_registry().digest();
        Self {
            registry,
            node_id: "node".into(),
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

    /// Names the registry the node was configured from (by its digest:
    /// Core's side refuses the node unless it holds the same) and the
    /// node's identity.
    pub fn with_identity(mut self, registry_digest: String, node_id: String) -> Self {
        self.registry = registry_digest;
        self.node_id = node_id;
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
}
