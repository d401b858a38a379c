//! The node transport: `sandbox-host serve` exposes a node's kinds to Core
//! over the versioned JSON protocol of [`wire`], and
//! [`RemoteProvider`] is Core's side of it, the same provider interface as
//! a kind loaded in-process. The protocol, its client and the proxy are the
//! provider interface's ([`oac_provider_api`]); the node is here.

pub mod server;

pub use oac_provider_api::client::{self, ClientError, Endpoint, NodeClient, TransportError};
pub use oac_provider_api::proxy::{self, ProxyError, RemoteProvider};
pub use oac_provider_api::wire;
pub use server::{Node, ServeError};

/// Connections a node serves at once; further ones wait in the backlog.
pub const MAX_CONNECTIONS: usize = 256;
