//! The node transport: `sandbox-host serve` exposes a node's kinds to Core
//! over the versioned JSON protocol of [`wire`], and
//! [`RemoteProvider`] is Core's side of it, the same provider interface as
//! a kind loaded in-process. The protocol, its client and the proxy are the
//! provider interface's ([`oac_provider_api`]); the node is here: its
//! server, what each connection may hold ([`connection`]), the threads
//! connections are served on (`threads`) and TLS for TCP ([`tls`]).

pub mod connection;
pub mod listen;
pub mod server;
mod threads;
pub mod tls;

pub use connection::ConnectionLimits;
pub use oac_provider_api::client::{
    self, ClientError, Endpoint, NodeClient, TlsEndpoint, TransportError,
};
pub use oac_provider_api::proxy::{self, ProxyError, RemoteProvider};
pub use oac_provider_api::wire;
pub use server::{Node, ServeError};
pub use threads::THREAD_NAME as CONNECTION_THREAD_NAME;

/// Connections a node serves at once; further ones wait in the backlog
/// while every slot is held by an authenticated connection.
pub const MAX_CONNECTIONS: usize = 256;

/// Of [`MAX_CONNECTIONS`], the slots connections that have not presented
/// the token can never take: beyond the rest, the oldest of them is closed
/// for a newer one.
pub const RESERVED_FOR_AUTHENTICATED: usize = 64;

/// TCP connections one peer address may hold at once
/// (`listen.max_connections_per_peer` overrides it).
pub const MAX_CONNECTIONS_PER_PEER: usize = 64;
