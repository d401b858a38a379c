//! Bodies under the HTTP capability's bounds: a request body searched for
//! credentials (whole before anything is sent, or as it streams) and
//! counted against the call's share while held, a response body read
//! within the call's deadline and the size bound, and the places a request
//! holds among the call's and the kind's open ones.

use super::{MAX_HELD_REQUEST_BYTES_PER_CALL, MAX_REQUEST_BODY_BYTES, MAX_RESPONSE_BODY_BYTES};
use crate::capability::boundary::{Boundary, Decided};
use bytes::Bytes;
use http_body::Body as _;
use oac_provider_api::secrets::Secrets;
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
/// first chunk past [`MAX_RESPONSE_BODY_BYTES`] is the last one delivered.
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
        if self.read > MAX_RESPONSE_BODY_BYTES {
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
/// ([`MAX_HELD_REQUEST_BYTES_PER_CALL`]).
#[derive(Clone, Default)]
pub(super) struct HeldBodies(Arc<std::sync::atomic::AtomicUsize>);

/// One body's share of [`HeldBodies`], given back as its bytes are sent
/// and when it is dropped.
pub(super) struct Share(HeldBodies, usize);

impl Share {
    /// Counts `bytes` more, or says the call holds too much.
    fn take(&mut self, bytes: usize) -> Result<(), HttpError> {
        let held = (self.0)
            .0
            .fetch_add(bytes, std::sync::atomic::Ordering::AcqRel)
            + bytes;
        self.1 += bytes;
        if held > MAX_HELD_REQUEST_BYTES_PER_CALL {
            return Err(HttpError::HttpRequestBodySize(None));
        }
        Ok(())
    }

    /// Gives `bytes` back (they were sent).
    fn give_back(&mut self, bytes: usize) {
        let bytes = bytes.min(self.1);
        (self.0)
            .0
            .fetch_sub(bytes, std::sync::atomic::Ordering::AcqRel);
        self.1 -= bytes;
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        self.give_back(self.1);
    }
}

/// Why a streamed body was cut off, for the request's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cut {
    /// It carried a credential the call holds.
    Credential,
    /// It passed a bound (its size, or the call's share).
    Bound,
}

impl Cut {
    /// The answer to the request.
    pub(super) fn error(self) -> HttpError {
        match self {
            Cut::Credential => HttpError::HttpRequestDenied,
            Cut::Bound => HttpError::HttpRequestBodySize(None),
        }
    }
}

/// Where a [`Checked`] body says why it was cut off, once it has been.
#[derive(Clone, Default)]
pub(super) struct CutOff(Arc<std::sync::OnceLock<Cut>>);

impl CutOff {
    /// The reason, once the body has been cut off.
    pub(super) fn reason(&self) -> Option<Cut> {
        self.0.get().copied()
    }

    fn cut(&self, reason: Cut) -> HttpError {
        let _ = self.0.set(reason);
        reason.error()
    }
}

/// The component's request body, checked on its way out: at most
/// [`MAX_REQUEST_BODY_BYTES`], counted while held against the call's
/// share, and searched for every credential the call holds. Bytes are
/// sent only once searched with the [`Secrets::hold_back`] bytes after
/// them, so a credential split across chunks is found before any byte of
/// it leaves; finding one (or passing a bound) cuts the body off.
pub(super) struct Checked {
    inner: RequestBody,
    ended: bool,
    /// Read from the component, not yet sent.
    pending: bytes::BytesMut,
    read: usize,
    secrets: Arc<Secrets>,
    hold_back: usize,
    share: Share,
    cut_off: CutOff,
}

impl Checked {
    pub(super) fn new(inner: RequestBody, secrets: Arc<Secrets>, held: &HeldBodies) -> Self {
        Self {
            inner,
            ended: false,
            pending: bytes::BytesMut::new(),
            read: 0,
            hold_back: secrets.hold_back(),
            secrets,
            share: Share(held.clone(), 0),
            cut_off: CutOff::default(),
        }
    }

    /// Why the body was cut off, once it has been (shared with the sender).
    pub(super) fn cut_off(&self) -> CutOff {
        self.cut_off.clone()
    }

    /// Reads the next bytes of the component's body into `pending`;
    /// `Ready(Ok(()))` once some were read or the body ended.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), HttpError>> {
        loop {
            let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    self.ended = true;
                    return Poll::Ready(Ok(()));
                }
                Poll::Ready(Some(frame)) => frame?,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            self.read = self.read.saturating_add(data.len());
            if self.read > MAX_REQUEST_BODY_BYTES {
                return Poll::Ready(Err(HttpError::HttpRequestBodySize(None)));
            }
            self.share.take(data.len())?;
            self.pending.extend_from_slice(&data);
            return Poll::Ready(Ok(()));
        }
    }

    /// Reads until the body ends or `bytes` are pending: a body that ends
    /// within them is sent whole ([`Self::into_whole`]), once searched.
    pub(super) async fn fill(&mut self, bytes: usize) -> Result<(), HttpError> {
        while !self.ended && self.pending.len() < bytes {
            std::future::poll_fn(|cx| self.poll_read(cx)).await?;
        }
        Ok(())
    }

    /// The whole body, when it ended within [`Self::fill`]; it stays
    /// counted until the share is dropped.
    pub(super) fn into_whole(self) -> Result<(Bytes, Share), Self> {
        if !self.ended {
            return Err(self);
        }
        let Self { pending, share, .. } = self;
        Ok((pending.freeze(), share))
    }

    /// Whether the whole body or the pending bytes carry a credential.
    pub(super) fn carries_credential(&self) -> bool {
        self.secrets.found_in(&self.pending)
    }
}

/// Bytes read from the component before a streamed body sends any: the
/// held-back bytes are searched again with each slice.
const SLICE_BYTES: usize = 64 * 1024;

impl http_body::Body for Checked {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, HttpError>>> {
        let this = &mut *self;
        // Once cut off, never a clean end: a chunked body ended here would
        // reach the origin as a whole (shorter) request.
        if let Some(cut) = this.cut_off.reason() {
            return Poll::Ready(Some(Err(cut.error())));
        }
        while !this.ended && this.pending.len() < this.hold_back + SLICE_BYTES {
            match this.poll_read(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(error)) => {
                    let cut = match error {
                        HttpError::HttpRequestBodySize(_) => this.cut_off.cut(Cut::Bound),
                        other => other,
                    };
                    return Poll::Ready(Some(Err(cut)));
                }
            }
        }
        if this.carries_credential() {
            tracing::warn!(target: "provider", event = "credential_in_request", "request cut off");
            return Poll::Ready(Some(Err(this.cut_off.cut(Cut::Credential))));
        }
        let send = match this.ended {
            true => this.pending.len(),
            false => this.pending.len() - this.hold_back,
        };
        if send == 0 {
            return Poll::Ready(None);
        }
        let slice = this.pending.split_to(send).freeze();
        this.share.give_back(slice.len());
        Poll::Ready(Some(Ok(http_body::Frame::data(slice))))
    }

    fn is_end_stream(&self) -> bool {
        self.ended && self.pending.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::Action;
    use crate::capability::http::HttpAction;

    /// The component's body, written in `frames`.
    fn written(frames: Vec<Vec<u8>>) -> RequestBody {
        let frames = frames
            .into_iter()
            .map(|frame| Ok::<_, HttpError>(http_body::Frame::data(Bytes::from(frame))));
        let stream = http_body_util::StreamBody::new(futures_util::stream::iter(frames));
        RequestBody(sync_wrapper::SyncWrapper::new(
            http_body_util::BodyExt::boxed_unsync(stream),
        ))
    }

    /// What a checked body sends before it ends or is cut off, and how.
    async fn sent(mut body: Checked) -> (Vec<u8>, Option<Cut>) {
        let cut_off = body.cut_off();
        body.fill(MAX_WHOLE_REQUEST_BODY)
            .await
            .expect("first bytes");
        let mut sent = Vec::new();
        while let Some(frame) = http_body_util::BodyExt::frame(&mut body).await {
            match frame {
                Ok(frame) => sent.extend_from_slice(&frame.into_data().expect("data")),
                Err(_) => break,
            }
        }
        (sent, cut_off.reason())
    }

    const MAX_WHOLE_REQUEST_BODY: usize = super::super::MAX_WHOLE_REQUEST_BODY_BYTES;
    const SECRET: &str = "sk_live_9f8e7d6c5b4a";

    /// `length` bytes of base64-looking text written 4 KiB at a time, with
    /// `inserted` at `at`.
    fn text(length: usize, inserted: &[u8], at: usize) -> Vec<Vec<u8>> {
        let mut text: Vec<u8> = (0..length).map(|i| b"ABCDwxyz+/09"[i % 12]).collect();
        text[at..at + inserted.len()].copy_from_slice(inserted);
        text.chunks(4096).map(<[u8]>::to_vec).collect()
    }

    #[tokio::test]
    async fn a_streamed_body_is_cut_off_before_any_byte_of_a_credential_split_across_chunks() {
        let secrets = Arc::new(Secrets::new([SECRET]));
        let held = HeldBodies::default();
        // Raw and percent-encoded, each straddling a 4 KiB chunk boundary
        // well past the part read whole.
        let percent: String = SECRET.bytes().map(|b| format!("%{b:02x}")).collect();
        let deep = 3 * MAX_WHOLE_REQUEST_BODY - 7;
        // Written 4 KiB at a time, the first slice sent ends where the
        // part read whole ends, less what is held back: a form 45 bytes
        // before that end straddles it unless all of it is held back.
        let straddling = MAX_WHOLE_REQUEST_BODY - 45;
        for (form, at) in [
            (SECRET.as_bytes(), deep),
            (percent.as_bytes(), deep),
            (percent.as_bytes(), straddling),
        ] {
            let body = Checked::new(written(text(4 << 20, form, at)), secrets.clone(), &held);
            let (sent, cut) = sent(body).await;
            assert_eq!(cut, Some(Cut::Credential), "at {at}");
            assert!(
                sent.len() <= at,
                "{} bytes sent, the form at {at}",
                sent.len()
            );
            assert!(
                at == straddling || sent.len() > MAX_WHOLE_REQUEST_BODY,
                "it streamed"
            );
            assert!(!secrets.found_in(&sent));
        }
        assert_eq!(held.0.load(std::sync::atomic::Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn no_split_of_any_form_lets_a_byte_of_it_out() {
        use base64::Engine as _;
        let secrets = Arc::new(Secrets::new([SECRET]));
        let held = HeldBodies::default();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        let forms = [
            SECRET.as_bytes().to_vec(),
            SECRET
                .bytes()
                .map(|b| format!("%{b:02X}"))
                .collect::<String>()
                .into_bytes(),
            hex::encode(SECRET).into_bytes(),
            base64::engine::general_purpose::STANDARD
                .encode(format!("xy{SECRET}z"))
                .into_bytes(),
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(format!("q{SECRET}"))
                .into_bytes(),
        ];
        for round in 0..40 {
            let form = &forms[round % forms.len()];
            let length = (1 << 20) + next(3 << 20);
            let at = next(length - form.len());
            let mut whole = text(length, form, at).concat();
            if round % 8 == 7 {
                // No credential at all: everything arrives.
                whole = text(length, b"", 0).concat();
            }
            let mut frames = Vec::new();
            let mut rest = &whole[..];
            while !rest.is_empty() {
                let (frame, after) = rest.split_at((1 + next(20_000)).min(rest.len()));
                frames.push(frame.to_vec());
                rest = after;
            }
            let (sent, cut) = sent(Checked::new(written(frames), secrets.clone(), &held)).await;
            if round % 8 == 7 {
                assert_eq!((cut, sent.len()), (None, length), "round {round}");
            } else {
                assert_eq!(cut, Some(Cut::Credential), "round {round}");
                assert!(sent.len() <= at, "round {round}: {} > {at}", sent.len());
            }
        }
        assert_eq!(held.0.load(std::sync::atomic::Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn a_body_cut_off_never_ends_cleanly_when_polled_again() {
        let secrets = Arc::new(Secrets::new([SECRET]));
        let held = HeldBodies::default();
        let frames = text(4 << 20, SECRET.as_bytes(), 3 << 20);
        let mut body = Checked::new(written(frames), secrets, &held);
        body.fill(MAX_WHOLE_REQUEST_BODY)
            .await
            .expect("first bytes");
        loop {
            match http_body_util::BodyExt::frame(&mut body).await {
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    assert!(matches!(error, HttpError::HttpRequestDenied));
                    break;
                }
                None => panic!("the body ended before its credential"),
            }
        }
        let again = http_body_util::BodyExt::frame(&mut body).await;
        assert!(matches!(again, Some(Err(HttpError::HttpRequestDenied))));
    }

    #[tokio::test]
    async fn a_clean_streamed_body_arrives_whole_and_gives_its_share_back() {
        let secrets = Arc::new(Secrets::new([SECRET]));
        let held = HeldBodies::default();
        let frames = text(5 << 20, b"", 0);
        let whole = frames.concat();
        let (sent, cut) = sent(Checked::new(written(frames), secrets, &held)).await;
        assert_eq!(cut, None);
        assert!(sent == whole, "{} of {} bytes", sent.len(), whole.len());
        assert_eq!(held.0.load(std::sync::atomic::Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn a_small_body_is_read_whole_and_a_credential_in_it_found_before_sending() {
        let secrets = Arc::new(Secrets::new([SECRET]));
        let held = HeldBodies::default();
        let mut body = Checked::new(written(text(9000, SECRET.as_bytes(), 4090)), secrets, &held);
        body.fill(MAX_WHOLE_REQUEST_BODY).await.expect("read");
        assert!(body.carries_credential());
        let (whole, _share) = body.into_whole().ok().expect("whole");
        assert_eq!(whole.len(), 9000);
        assert_eq!(held.0.load(std::sync::atomic::Ordering::Acquire), 9000);
    }

    #[tokio::test]
    async fn a_body_past_its_bound_or_the_calls_share_is_cut_off() {
        let held = HeldBodies::default();
        let past = MAX_REQUEST_BODY_BYTES + 1;
        let frames: Vec<Vec<u8>> = (0..past.div_ceil(1 << 20))
            .map(|i| vec![b'a'; (past - i * (1 << 20)).min(1 << 20)])
            .collect();
        let (sent, cut) = sent(Checked::new(written(frames), Arc::default(), &held)).await;
        assert_eq!(cut, Some(Cut::Bound));
        assert!(sent.len() <= MAX_REQUEST_BODY_BYTES);
        // Four bodies hold a whole part each; a fifth passes the share.
        let mut holding = Vec::new();
        for _ in 0..4 {
            let mut body = Checked::new(written(text(2 << 20, b"", 0)), Arc::default(), &held);
            body.fill(MAX_WHOLE_REQUEST_BODY)
                .await
                .expect("within the share");
            holding.push(body);
        }
        let mut fifth = Checked::new(written(text(2 << 20, b"", 0)), Arc::default(), &held);
        assert!(matches!(
            fifth.fill(MAX_WHOLE_REQUEST_BODY).await,
            Err(HttpError::HttpRequestBodySize(None))
        ));
        drop((holding, fifth));
        assert_eq!(held.0.load(std::sync::atomic::Ordering::Acquire), 0);
    }

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
