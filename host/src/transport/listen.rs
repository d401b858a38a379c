//! Where and how a node listens, and the token it admits: what the node
//! configuration gives the transport.

use serde::Deserialize;
use std::path::PathBuf;

/// Where the node transport listens: exactly one of `unix` and `tcp`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Listen {
    /// A Unix socket path.
    pub unix: Option<PathBuf>,
    /// A TCP address, e.g. `127.0.0.1:7400`.
    pub tcp: Option<std::net::SocketAddr>,
    /// TLS for `tcp` (and mTLS when it names a client CA).
    pub tls: Option<super::tls::TlsFiles>,
    /// Serve plain TCP on an address other than loopback: the token and
    /// every call cross the network unencrypted. Off unless set to `true`.
    #[serde(default)]
    pub insecure_plain_tcp: bool,
    /// TCP connections one peer address may hold at once (default
    /// [`super::MAX_CONNECTIONS_PER_PEER`]).
    pub max_connections_per_peer: Option<usize>,
}

/// Why a `listen` section cannot be served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ListenError {
    /// Neither or both of `unix` and `tcp`.
    #[error("listen: give exactly one of `unix` and `tcp`")]
    ExactlyOne,
    /// TLS is for TCP; a Unix socket is guarded by its file permissions.
    #[error("listen.tls: TLS is served on `tcp` only")]
    TlsOnUnix,
    /// Plain TCP beyond loopback, not asked for explicitly.
    #[error(
        "listen.tcp: plain TCP on an address other than loopback: configure `listen.tls`, \
         or set `insecure_plain_tcp = true` to send the token unencrypted"
    )]
    PlainTcp,
    /// `max_connections_per_peer` outside 1..=256.
    #[error("listen.max_connections_per_peer: out of range (1..=256)")]
    PerPeer,
}

impl Listen {
    /// The rules every listen section follows: one place to listen; TLS
    /// on TCP only; plain TCP on loopback only unless `insecure_plain_tcp`.
    pub fn check(&self) -> Result<(), ListenError> {
        match (&self.unix, &self.tcp) {
            (Some(_), Some(_)) | (None, None) => Err(ListenError::ExactlyOne),
            (Some(_), None) if self.tls.is_some() => Err(ListenError::TlsOnUnix),
            (None, Some(address))
                if self.tls.is_none()
                    && !address.ip().to_canonical().is_loopback()
                    && !self.insecure_plain_tcp =>
            {
                Err(ListenError::PlainTcp)
            }
            _ if self
                .max_connections_per_peer
                .is_some_and(|cap| !(1..=super::MAX_CONNECTIONS).contains(&cap)) =>
            {
                Err(ListenError::PerPeer)
            }
            _ => Ok(()),
        }
    }
}

/// Request bodies the node holds at once, at most (MiB).
pub const DEFAULT_REQUEST_BODY_BUDGET_MIB: u64 = 1 << 10;

/// The node's bearer token; its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(pub(crate) String);

impl Token {
    /// The token itself, for the constant-time comparison.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token([redacted])")
    }
}
