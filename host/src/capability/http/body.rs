//! Bodies under the HTTP capability's bounds: a request body read whole
//! (and counted against the call's share) before anything is sent, a
//! response body read within the call's deadline and the size bound, and
//! the places a request holds among the call's and the kind's open ones.

use super::{MAX_BODY_BYTES, MAX_HELD_BODY_BYTES_PER_CALL};
use crate::capability::boundary::{Boundary, Decided};
use bytes::Bytes;
use http_body_util::BodyExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use wasmtime_wasi_http::Error as HttpError;

/// Every mention of `ours` in `body` replaced by another installation.
pub(super) fn rewrite_installation(body: &[u8], ours: &[u8]) -> Vec<u8> {
    if ours.is_empty() {
        return body.to_vec();
    }
    let foreign = b"foreign-installation";
    let mut rewritten = Vec::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.windows(ours.len()).position(|window| window == ours) {
        rewritten.extend_from_slice(&rest[..at]);
        rewritten.extend_from_slice(foreign);
        rest = &rest[at + ours.len()..];
    }
    rewritten.extend_from_slice(rest);
    rewritten
}

/// Tells the boundary, once, that a response body mentions this
/// installation (an answer showing a resource as its own), also when the
/// mention spans two chunks.
pub(super) struct Scan {
    ours: Vec<u8>,
    carry: Vec<u8>,
    shown: bool,
    boundary: Boundary,
    decided: Decided,
}

impl Scan {
    pub(super) fn new(installation: &str, boundary: Boundary, decided: Decided) -> Self {
        Self {
            ours: installation.as_bytes().to_vec(),
            carry: Vec::new(),
            shown: installation.is_empty(),
            boundary,
            decided,
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        if self.shown {
            return;
        }
        self.carry.extend_from_slice(chunk);
        if self
            .carry
            .windows(self.ours.len())
            .any(|window| window == self.ours.as_slice())
        {
            self.shown = true;
            self.boundary.ownership_shown(&self.decided);
            return;
        }
        let keep = self.ours.len().saturating_sub(1).min(self.carry.len());
        self.carry.drain(..self.carry.len() - keep);
    }
}

/// A response body read within the call's deadline and the size bound: the
/// first chunk past [`MAX_BODY_BYTES`] is the last one delivered.
pub(super) struct Watched {
    pub(super) inner: reqwest::Body,
    pub(super) read: usize,
    pub(super) deadline: Pin<Box<tokio::time::Sleep>>,
    pub(super) scan: Scan,
    /// The request stays open (counted against the call's and the kind's
    /// bounds) until its response body is read or dropped.
    pub(super) _open: OpenRequest,
}

impl http_body::Body for Watched {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, HttpError>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(HttpError::ConnectionReadTimeout)));
        }
        if self.read > MAX_BODY_BYTES {
            return Poll::Ready(Some(Err(HttpError::HttpResponseBodySize(None))));
        }
        let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Ready(Some(Err(_))) => {
                return Poll::Ready(Some(Err(HttpError::ConnectionTerminated)));
            }
            Poll::Ready(Some(Ok(frame))) => frame,
        };
        if let Some(data) = frame.data_ref() {
            // The chunk that crosses the bound is still delivered, so a
            // reader counting bytes sees the excess itself; the body then
            // ends with an error.
            self.read = self.read.saturating_add(data.len());
            let data = data.clone();
            self.scan.feed(&data);
        }
        Poll::Ready(Some(Ok(frame)))
    }
}

/// The component's request body, as the client sends it: `Sync` (only ever
/// polled through `&mut`), bounded.
pub(super) struct RequestBody(pub(super) sync_wrapper::SyncWrapper<wasmtime_wasi_http::WasiBody>);

impl http_body::Body for RequestBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, HttpError>>> {
        Pin::new(self.get_mut().0.get_mut()).poll_frame(cx)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        // Unknown here (`SyncWrapper` lends only `&mut`): a request with a
        // body carries its `content-length`, which the transport uses.
        http_body::SizeHint::default()
    }
}

/// One open request: its places in the call's and the kind's bounds.
pub(super) struct OpenRequest {
    pub(super) _call: tokio::sync::OwnedSemaphorePermit,
    pub(super) _kind: tokio::sync::OwnedSemaphorePermit,
}

/// The request body bytes one call holds in the host
/// ([`MAX_HELD_BODY_BYTES_PER_CALL`]).
#[derive(Clone, Default)]
pub(super) struct HeldBodies(Arc<std::sync::atomic::AtomicUsize>);

/// One body's share of [`HeldBodies`], given back when dropped.
pub(super) struct Share(HeldBodies, usize);

impl Drop for Share {
    fn drop(&mut self) {
        (self.0)
            .0
            .fetch_sub(self.1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl HeldBodies {
    /// Reads `body` whole within the call's bound; its share is given back
    /// when the returned [`Share`] is dropped (once the request is sent).
    pub(super) async fn collect(
        &self,
        mut body: http_body_util::Limited<RequestBody>,
    ) -> Result<(Bytes, Share), HttpError> {
        let mut share = Share(self.clone(), 0);
        let mut whole = bytes::BytesMut::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|error| match error.downcast::<HttpError>() {
                Ok(error) => *error,
                Err(_) => HttpError::HttpRequestBodySize(None),
            })?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let held = self
                .0
                .fetch_add(data.len(), std::sync::atomic::Ordering::AcqRel)
                + data.len();
            share.1 += data.len();
            if held > MAX_HELD_BODY_BYTES_PER_CALL {
                return Err(HttpError::HttpRequestBodySize(None));
            }
            whole.extend_from_slice(&data);
        }
        Ok((whole.freeze(), share))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::Action;
    use crate::capability::http::HttpAction;

    #[test]
    fn a_mention_split_across_chunks_is_seen_once() {
        let decided = Boundary::default().decide(Action::Http(HttpAction::Get), "/", false);
        let mut scan = Scan::new("inst-1", Boundary::default(), decided);
        scan.feed(b"{\"owner\":\"in");
        assert!(!scan.shown);
        scan.feed(b"st-1\"}");
        assert!(scan.shown);
        assert_eq!(
            rewrite_installation(b"a inst-1 b inst-1", b"inst-1"),
            b"a foreign-installation b foreign-installation".to_vec()
        );
    }
}
