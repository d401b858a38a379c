//! The node transport: `sandbox-host serve` exposes a node's kinds to Core
//! over a versioned JSON protocol, and [`RemoteProvider`] is Core's side of
//! it, the same [`crate::provider::SandboxProvider`] interface as a kind
//! loaded in-process.
//!
//! The protocol is HTTP/1.1 on a Unix socket or TCP. Every request and
//! answer carries `oac-protocol: oac-node/1` (matched exactly, no fallback)
//! and every request `authorization: Bearer <token>` (compared in constant
//! time). Endpoints:
//!
//! - `POST /call` — a [`wire::Request`]; answers HTTP 200 with a
//!   [`wire::Outcome`] whenever the operation was attempted.
//! - `GET /kinds` — the served kinds' declarations ([`wire::Kinds`]).
//! - `GET /health` — readiness from each kind's probe ([`wire::Health`]);
//!   HTTP 200 when ready, 503 otherwise.
//!
//! A refused request (wrong version, bad token, oversized frame, malformed
//! or out-of-range input, too many operations in flight) gets a 4xx/5xx
//! [`wire::Refusal`] and was not executed.

pub mod client;
pub mod proxy;
pub mod server;
pub mod wire;

pub use client::{Endpoint, NodeClient, TransportError};
pub use proxy::{ProxyError, RemoteProvider};
pub use server::{Node, ServeError};

/// The header naming the protocol version on every request and answer.
pub const PROTOCOL_HEADER: &str = "oac-protocol";
/// The one protocol version this build speaks.
pub const PROTOCOL_VERSION: &str = "oac-node/1";
/// Largest request body: 50 MiB + 32 bytes of stdin as base64, plus room
/// for the envelope.
pub const MAX_REQUEST_BYTES: usize = 72 << 20;
/// Largest answer body: two 1 MiB command streams as base64, plus room.
pub const MAX_RESPONSE_BYTES: usize = 4 << 20;
/// How long a node waits for a request's head (which is also how long it
/// keeps an idle connection open) and then for its body: a stalled client
/// must hold neither a connection, an in-flight slot nor shutdown for long.
pub const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// Connections a node serves at once; further ones wait in the backlog.
pub const MAX_CONNECTIONS: usize = 256;

/// Reasons the proxy gives for the operations a node never forwards.
pub mod reasons {
    /// `observe-batch`: Core batches across nodes itself.
    pub const BATCH: &str = "node_batch_observation_not_forwarded";
    /// `discover-selection`: discovery is a Core-side concern.
    pub const DISCOVERY: &str = "node_selection_discovery_not_forwarded";
    /// `verify-credential`: credentials are verified where they are stored.
    pub const VERIFICATION: &str = "node_credential_verification_not_forwarded";
}
