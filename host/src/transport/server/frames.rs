//! Framed sessions: a connection upgraded by `GET /frames` carries many
//! calls as frames (see `docs/node-protocol.md`).

use super::*;

/// Where the handler of a `GET /frames` leaves the connection's upgrade for
/// [`http`], which serves the session once the 101 is written.
pub(super) type SessionHandOver = Arc<std::sync::Mutex<Option<hyper::upgrade::OnUpgrade>>>;

/// Accepts an authenticated `GET /frames` that asks for `upgrade:
/// oac-frames` on a connection [`http`] serves: its upgrade goes to the
/// connection, which serves the session once this 101 is written.
pub(super) fn upgrade_to_frames(mut parts: axum::http::request::Parts) -> Response {
    let asks = parts.headers.get(header::UPGRADE).is_some_and(|value| {
        value
            .as_bytes()
            .eq_ignore_ascii_case(wire::FRAMES_UPGRADE.as_bytes())
    });
    let upgrade = parts.extensions.remove::<hyper::upgrade::OnUpgrade>();
    let (true, Some(upgrade), Some(hand_over)) =
        (asks, upgrade, parts.extensions.get::<SessionHandOver>())
    else {
        return refuse(Refused::Invalid);
    };
    *hand_over
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(upgrade);
    let mut response = stamped(StatusCode::SWITCHING_PROTOCOLS, Vec::new());
    let headers = response.headers_mut();
    headers.remove(header::CONTENT_TYPE);
    headers.insert(
        header::UPGRADE,
        HeaderValue::from_static(wire::FRAMES_UPGRADE),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    response
}

impl Node {
    /// A framed session on an upgraded connection (see [`wire::frame`]):
    /// one request frame after another, each read, run and answered like
    /// `POST /call`, until the client closes it, a frame breaks the rules
    /// that keep the stream in step (too large, too slow), the connection
    /// retires or the node shuts down (both after the answer in progress).
    pub(super) async fn frames<IO>(
        &self,
        io: IO,
        activity: &Arc<Activity>,
        close_all: &CancellationToken,
    ) where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let mut io = tokio::io::BufStream::new(io);
        // Both waits last the session, not a frame: the close is awaited
        // by one registration, and the idle timer is moved only when it
        // fires, to the last answer's time plus the read timeout (rather
        // than a timer set and cancelled per frame). A retiring session
        // still answers its next frame, marked last.
        let closing = close_all.cancelled();
        let idle = tokio::time::sleep(self.limits.read_timeout);
        tokio::pin!(closing, idle);
        let mut answered = Instant::now();
        loop {
            let mut prefix = [0; frame::PREFIX];
            // A session waits for its next frame as long as an idle
            // connection waits for its next head, counted from its last
            // answer.
            let next = io.read_exact(&mut prefix);
            tokio::pin!(next);
            loop {
                tokio::select! {
                    biased;
                    () = &mut closing => return,
                    read = &mut next => if read.is_ok() { break } else { return },
                    () = &mut idle => {
                        let deadline = answered + self.limits.read_timeout;
                        if deadline <= Instant::now() {
                            return;
                        }
                        idle.as_mut().reset(deadline.into());
                    }
                }
            }
            let received = Instant::now();
            let _running = activity.running();
            let length = u32::from_be_bytes(prefix) as usize;
            let answer = if length > MAX_REQUEST_BYTES {
                // Its body is not read: the stream is out of step.
                Err((Refused::TooLarge, true))
            } else {
                self.framed_call(&mut io, length, received).await
            };
            let mut last = close_all.is_cancelled() || activity.is_retiring();
            let frame = match answer {
                Ok(outcome) => frame::answer_outcome(&outcome, last),
                Err((refused, ends)) => {
                    last |= ends;
                    frame::answer_refused(refused.code(), last)
                }
            };
            if io.write_all(&frame).await.is_err() || io.flush().await.is_err() || last {
                return;
            }
            answered = Instant::now();
        }
    }

    /// Reads one request frame's `length` bytes of body and runs it: the
    /// outcome's JSON, or the refusal and whether the session must end.
    pub(super) async fn framed_call<IO>(
        &self,
        io: &mut IO,
        length: usize,
        received: Instant,
    ) -> Result<Vec<u8>, (Refused, bool)>
    where
        IO: AsyncRead + Unpin,
    {
        let permit = self.in_flight.clone().try_acquire_owned().ok().zip(
            u32::try_from(length)
                .ok()
                .and_then(|share| self.bodies.clone().try_acquire_many_owned(share).ok()),
        );
        let timeout = self.limits.read_timeout;
        let Some(permit) = permit else {
            // Busy: the body is skipped, so the next frame is in step.
            let (mut rest, mut sink) = ((&mut *io).take(length as u64), tokio::io::sink());
            let skipped = tokio::io::copy(&mut rest, &mut sink);
            return match tokio::time::timeout(timeout, skipped).await {
                Ok(Ok(skipped)) if skipped == length as u64 => Err((Refused::Busy, false)),
                _ => Err((Refused::TooSlow, true)),
            };
        };
        let mut body = vec![0; length];
        match tokio::time::timeout(timeout, io.read_exact(&mut body)).await {
            Ok(Ok(_)) => {}
            _ => return Err((Refused::TooSlow, true)),
        }
        self.run(&body, received, permit)
            .await
            .map_err(|refused| (refused, false))
    }
}
