//! Accepting connections: on TCP (plain or TLS) or a Unix socket, each
//! admitted into a slot and handed to a connection thread.

use super::*;

/// Where a connection comes from: a TCP peer's address (IPv4-mapped IPv6
/// counted as IPv4), nothing for a Unix socket.
pub(super) trait PeerAddress {
    fn peer(&self) -> Option<IpAddr>;
}

impl PeerAddress for std::net::SocketAddr {
    fn peer(&self) -> Option<IpAddr> {
        Some(self.ip().to_canonical())
    }
}

impl PeerAddress for tokio::net::unix::SocketAddr {
    fn peer(&self) -> Option<IpAddr> {
        None
    }
}

/// Accepts connections until `shutdown`, each admitted into a slot (see
/// [`Slots`]) and served under `limits` on one of `threads`, in turn; then
/// asks every connection to end after the request it is in, waits for the
/// operations in flight, and drops whatever connection is still open
/// `shutdown_grace` after them.
pub(super) async fn serve_connections<L>(
    mut listener: L,
    served: Served,
    limits: ConnectionLimits,
    tls: Option<TlsAcceptor>,
    operations: TaskTracker,
    threads: &ConnectionThreads,
    shutdown: impl Future<Output = ()>,
) where
    L: axum::serve::Listener,
    L::Addr: PeerAddress,
    L::Io: Movable,
{
    let slots = Slots::new(limits);
    let drop_all = CancellationToken::new();
    let close_all = CancellationToken::new();
    let connections = TaskTracker::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            () = slots.vacancy() => {}
            () = &mut shutdown => break,
        }
        let (io, address) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        // `None`: shutdown came while the connection waited for a slot
        // (the shutdown future is never polled again once it has ended).
        let admitted = loop {
            match slots.admit(address.peer(), &drop_all) {
                Admission::Full => {}
                admission => break Some(admission),
            }
            tokio::select! {
                () = slots.vacancy() => {}
                () = &mut shutdown => break None,
            }
        };
        let slot = match admitted {
            Some(Admission::Admitted(slot)) => slot,
            Some(_) => {
                tracing::debug!("connection closed on arrival: its peer holds its share");
                continue;
            }
            None => break,
        };
        let Ok(detached) = io.detach() else {
            tracing::debug!("connection lost on its way to its thread");
            continue;
        };
        // The connection, its handler and the operation it runs are polled
        // in this one task and wake each other (see `own_wakes`).
        connections.spawn_on(
            repoll_own_wakes(connection::<L::Io>(
                detached,
                slot,
                served.clone(),
                limits,
                tls.clone(),
                close_all.clone(),
            )),
            threads.next(),
        );
    }
    drop(listener);
    close_all.cancel();
    connections.close();
    operations.close();
    let grace = async {
        operations.wait().await;
        tokio::time::sleep(limits.shutdown_grace).await;
    };
    tokio::select! {
        () = connections.wait() => {}
        () = grace => {
            drop_all.cancel();
            connections.wait().await;
        }
    }
}

impl Node {
    pub(super) async fn listen_and_serve(
        served: Served,
        limits: ConnectionLimits,
        operations: TaskTracker,
        threads: &ConnectionThreads,
        listen: &Listen,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        listen.check()?;
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
                serve_connections(
                    listener, served, limits, None, operations, threads, shutdown,
                )
                .await;
                let _ = std::fs::remove_file(path);
                Ok(())
            }
            (None, Some(address)) => {
                let tls = match &listen.tls {
                    Some(files) => Some(TlsAcceptor::from(tls::server_config(files)?)),
                    None => None,
                };
                let listener = tokio::net::TcpListener::bind(address)
                    .await
                    .map_err(|e| ServeError::Bind(address.to_string(), e))?;
                if tls.is_some() {
                    tracing::info!(address = %address, "serving TLS");
                } else if address.ip().to_canonical().is_loopback() {
                    tracing::info!(address = %address, "serving plain TCP on loopback");
                } else {
                    tracing::warn!(
                        address = %address,
                        "serving PLAIN TCP on a non-loopback address (insecure_plain_tcp): \
                         tokens and calls cross the network unencrypted"
                    );
                }
                serve_connections(listener, served, limits, tls, operations, threads, shutdown)
                    .await;
                Ok(())
            }
            (None, None) => Err(ServeError::Bind(
                "nothing".into(),
                std::io::Error::other("no listen address"),
            )),
        }
    }
}
