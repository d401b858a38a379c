//! One connection's HTTP/1 serving: request heads and bodies within the
//! read timeout, the hand-over to a framed session.

use super::*;

/// One connection, from its admission to its end, on the thread it was
/// handed to (it first joins that thread's runtime): dropped at once when
/// evicted (or when shutdown's grace is over), and at its hard lifetime.
pub(super) async fn connection<IO>(
    detached: IO::Detached,
    slot: Slot,
    served: Served,
    limits: ConnectionLimits,
    tls: Option<TlsAcceptor>,
    close_all: CancellationToken,
) where
    IO: Movable + AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Ok(io) = IO::attach(detached) else {
        tracing::debug!("connection lost on its way to its thread");
        return;
    };
    let activity = slot.activity.clone();
    let io = Guarded::new(io, activity.clone(), limits.stall_timeout);
    let served = async {
        match tls {
            // A handshake is a head: it must end within the read timeout.
            Some(acceptor) => {
                if let Ok(Ok(stream)) =
                    tokio::time::timeout(limits.read_timeout, acceptor.accept(io)).await
                {
                    http(stream, activity, served, limits, close_all).await;
                }
            }
            None => http(io, activity, served, limits, close_all).await,
        }
    };
    tokio::select! {
        () = served => {}
        () = slot.evict.cancelled() => {}
        () = tokio::time::sleep(limits.hard_lifetime) => {}
    }
    drop(slot);
}

/// HTTP/1.1 on one connection: every request carries the connection's
/// [`Activity`] to the handler (which marks it authenticated) and is
/// counted as running while it is handled; past `max_lifetime` an answer
/// ends the connection; on shutdown the request in progress is finished. A
/// `GET /frames` the handler accepted turns the rest of the connection into
/// a framed session, under the same lifetime and shutdown.
pub(super) async fn http<IO>(
    io: IO,
    activity: Arc<Activity>,
    served: Served,
    limits: ConnectionLimits,
    close_all: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let marked = activity.clone();
    let hand_over = SessionHandOver::default();
    let handed = hand_over.clone();
    let router = served.router;
    let service = hyper::service::service_fn(move |mut request: Request<hyper::body::Incoming>| {
        let router = router.clone();
        let activity = marked.clone();
        let hand_over = handed.clone();
        async move {
            let _running = activity.running();
            request.extensions_mut().insert(activity.clone());
            request.extensions_mut().insert(hand_over);
            let Ok(mut response) = router.oneshot(request).await;
            // A retiring connection still becomes a session: it ends after
            // its first answer (marked last).
            if activity.is_retiring() && response.status() != StatusCode::SWITCHING_PROTOCOLS {
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.read_timeout)
        .serve_connection(hyper_util::rt::TokioIo::new(io), service)
        .with_upgrades();
    let mut connection = std::pin::pin!(connection);
    let lifetime = tokio::time::sleep(limits.max_lifetime);
    let mut lifetime = std::pin::pin!(lifetime);
    let (mut closing, mut retired) = (false, false);
    let upgrade = loop {
        tokio::select! {
            // A connection that fails (a client gone, a head too slow, a
            // stall) has nothing to report beyond its own end; one that
            // ends well may have been upgraded.
            ended = connection.as_mut() => match ended {
                Ok(()) => break hand_over.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take(),
                Err(_) => return,
            },
            () = close_all.cancelled(), if !closing => {
                closing = true;
                connection.as_mut().graceful_shutdown();
            }
            () = &mut lifetime, if !retired => {
                retired = true;
                activity.retire();
            }
        }
    };
    let Some(upgrade) = upgrade else { return };
    let Ok(upgraded) = upgrade.await else { return };
    let session = served.node.frames(
        hyper_util::rt::TokioIo::new(upgraded),
        &activity,
        &close_all,
    );
    let mut session = std::pin::pin!(session);
    loop {
        tokio::select! {
            () = session.as_mut() => return,
            () = &mut lifetime, if !retired => {
                retired = true;
                activity.retire();
            }
        }
    }
}

/// A refusal sent before the token was verified also ends the connection:
/// a client that pipelines unauthenticated requests holds no slot.
pub(super) fn refuse_and_close(refused: Refused) -> Response {
    let mut response = refuse(refused);
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}
