//! What one client connection may hold, and for how long. A client can
//! stall a node only through its connections, so each one is bounded here:
//! in time (no progress in either direction, a lifetime), in number (a cap,
//! per peer for TCP) and in precedence (a connection that has not shown
//! the token gives its slot up to a newer one before any authenticated
//! connection waits).

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

/// The bounds on each connection; [`Default`] is what `serve` uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a client may take to send a request's head (also how long
    /// an idle connection stays open), and then its body.
    pub read_timeout: Duration,
    /// A connection that moves no byte in either direction for this long,
    /// while none of its requests is running, is closed; so is one whose
    /// answer the client does not take for this long.
    pub stall_timeout: Duration,
    /// After this, a connection's next answer ends it (`Connection:
    /// close`); an idle one ends by the read timeout.
    pub max_lifetime: Duration,
    /// After this, a connection is dropped whatever it is doing: a client
    /// that takes its answers a byte at a time holds nothing forever.
    pub hard_lifetime: Duration,
    /// Open connections at once (the first [`Self::unauthenticated`] of
    /// them for connections that have not presented the token).
    pub connections: usize,
    /// Connections that have not presented the token yet; a newer one
    /// evicts the oldest of them rather than wait, so the remaining slots
    /// stay reserved for authenticated connections.
    pub unauthenticated: usize,
    /// TCP connections from one peer address at once; more are closed on
    /// arrival.
    pub per_peer: usize,
    /// On shutdown, how long connections may still take to deliver their
    /// last answers once the operations in flight have ended.
    pub shutdown_grace: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            read_timeout: super::wire::READ_TIMEOUT,
            stall_timeout: Duration::from_secs(30),
            max_lifetime: Duration::from_secs(600),
            hard_lifetime: Duration::from_secs(900),
            connections: super::MAX_CONNECTIONS,
            unauthenticated: super::MAX_CONNECTIONS - super::RESERVED_FOR_AUTHENTICATED,
            per_peer: super::MAX_CONNECTIONS_PER_PEER,
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

/// What one connection has done, shared by its byte stream (progress), its
/// requests (running, authenticated) and the slot table (eviction).
#[derive(Debug)]
pub(crate) struct Activity {
    opened: Instant,
    /// Milliseconds after `opened` of the last byte moved, or of the last
    /// request starting or ending.
    progress_ms: AtomicU64,
    running: AtomicUsize,
    authenticated: AtomicBool,
    /// Past its lifetime: the next answer closes the connection.
    retiring: AtomicBool,
}

impl Activity {
    fn new() -> Self {
        Self {
            opened: Instant::now(),
            progress_ms: AtomicU64::new(0),
            running: AtomicUsize::new(0),
            authenticated: AtomicBool::new(false),
            retiring: AtomicBool::new(false),
        }
    }

    fn progress(&self) {
        let now = self.opened.elapsed().as_millis() as u64;
        self.progress_ms.store(now, Ordering::Relaxed);
    }

    fn quiet_since(&self) -> Instant {
        self.opened + Duration::from_millis(self.progress_ms.load(Ordering::Relaxed))
    }

    /// The connection presented the node's token.
    pub(crate) fn authenticate(&self) {
        self.authenticated.store(true, Ordering::Relaxed);
    }

    fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Relaxed)
    }

    /// The connection is past its lifetime.
    pub(crate) fn retire(&self) {
        self.retiring.store(true, Ordering::Relaxed);
    }

    /// Whether the next answer must end the connection.
    pub(crate) fn is_retiring(&self) -> bool {
        self.retiring.load(Ordering::Relaxed)
    }

    /// Marks a request running until the guard drops: a connection whose
    /// operation takes minutes is not stalled.
    pub(crate) fn running(self: &Arc<Self>) -> Running {
        self.running.fetch_add(1, Ordering::Relaxed);
        self.progress();
        Running(self.clone())
    }
}

/// A request of the connection is running; see [`Activity::running`].
pub(crate) struct Running(Arc<Activity>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.progress();
        self.0.running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection's byte stream, failing with `TimedOut` once it has made no
/// progress for the stall timeout: a read while none of its requests runs,
/// or any write (an answer the client does not take).
pub(crate) struct Guarded<IO> {
    io: IO,
    activity: Arc<Activity>,
    stall: Duration,
    timer: Pin<Box<Sleep>>,
}

impl<IO> Guarded<IO> {
    pub(crate) fn new(io: IO, activity: Arc<Activity>, stall: Duration) -> Self {
        let timer = Box::pin(tokio::time::sleep_until(activity.quiet_since() + stall));
        Self {
            io,
            activity,
            stall,
            timer,
        }
    }

    /// Called when the stream is not ready: whether it has been quiet too
    /// long. Arms the timer so that the connection's task wakes at the
    /// deadline.
    fn stalled(&mut self, cx: &mut Context<'_>, writing: bool) -> bool {
        if !writing && self.activity.running.load(Ordering::Relaxed) > 0 {
            return false;
        }
        let deadline = self.activity.quiet_since() + self.stall;
        if self.timer.deadline() != deadline {
            self.timer.as_mut().reset(deadline);
        }
        self.timer.as_mut().poll(cx).is_ready()
    }

    fn moved(&self, bytes: usize) {
        if bytes > 0 {
            self.activity.progress();
        }
    }
}

fn stall_error() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "no progress on the connection")
}

impl<IO: AsyncRead + Unpin> AsyncRead for Guarded<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                this.moved(buf.filled().len() - before);
                Poll::Ready(Ok(()))
            }
            Poll::Pending if this.stalled(cx, false) => Poll::Ready(Err(stall_error())),
            other => other,
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Guarded<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Ready(Ok(written)) => {
                this.moved(written);
                Poll::Ready(Ok(written))
            }
            Poll::Pending if this.stalled(cx, true) => Poll::Ready(Err(stall_error())),
            other => other,
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write_vectored(cx, bufs) {
            Poll::Ready(Ok(written)) => {
                this.moved(written);
                Poll::Ready(Ok(written))
            }
            Poll::Pending if this.stalled(cx, true) => Poll::Ready(Err(stall_error())),
            other => other,
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_flush(cx) {
            Poll::Pending if this.stalled(cx, true) => Poll::Ready(Err(stall_error())),
            other => other,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_shutdown(cx) {
            Poll::Pending if this.stalled(cx, true) => Poll::Ready(Err(stall_error())),
            other => other,
        }
    }
}

/// The node's open connections: how many, from whom, and which have shown
/// the token.
pub(crate) struct Slots {
    open: Mutex<Open>,
    freed: Notify,
    limits: ConnectionLimits,
}

#[derive(Default)]
struct Open {
    next: u64,
    /// By arrival: the first unauthenticated entry is the oldest.
    connections: BTreeMap<u64, Entry>,
    peers: HashMap<IpAddr, usize>,
}

struct Entry {
    activity: Arc<Activity>,
    evict: CancellationToken,
    peer: Option<IpAddr>,
}

impl Open {
    fn live(&self) -> impl Iterator<Item = &Entry> {
        self.connections
            .values()
            .filter(|entry| !entry.evict.is_cancelled())
    }

    fn oldest_unauthenticated(&self) -> Option<&Entry> {
        self.live().find(|entry| !entry.activity.is_authenticated())
    }
}

/// What [`Slots::admit`] decided.
pub(crate) enum Admission {
    /// Served in this slot.
    Admitted(Slot),
    /// Its peer holds its share already: closed on arrival.
    PeerFull,
    /// Every slot is held by an authenticated connection: it waits for a
    /// vacancy before it is served.
    Full,
}

/// One admitted connection; dropping it frees the slot.
pub(crate) struct Slot {
    slots: Arc<Slots>,
    id: u64,
    /// The connection's activity.
    pub(crate) activity: Arc<Activity>,
    /// Cancelled when the connection must be dropped at once (evicted, or
    /// shutdown's grace is over).
    pub(crate) evict: CancellationToken,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.slots.open.lock()
            && let Some(entry) = open.connections.remove(&self.id)
            && let Some(peer) = entry.peer
            && let Some(count) = open.peers.get_mut(&peer)
        {
            *count -= 1;
            if *count == 0 {
                open.peers.remove(&peer);
            }
        }
        self.slots.freed.notify_waiters();
    }
}

impl Slots {
    pub(crate) fn new(limits: ConnectionLimits) -> Arc<Self> {
        Arc::new(Self {
            open: Mutex::new(Open::default()),
            freed: Notify::new(),
            limits,
        })
    }

    fn has_room(&self) -> bool {
        let Ok(open) = self.open.lock() else {
            return false;
        };
        open.live().count() < self.limits.connections || open.oldest_unauthenticated().is_some()
    }

    /// Waits until a new connection can be admitted: a slot is free, or an
    /// unauthenticated connection can give its own up. While every slot is
    /// held by an authenticated connection, new ones wait in the backlog.
    pub(crate) async fn vacancy(&self) {
        loop {
            let freed = self.freed.notified();
            if self.has_room() {
                return;
            }
            freed.await;
        }
    }

    /// Admits a connection from `peer` (none for a Unix socket), evicting
    /// the oldest unauthenticated connection when the cap, or the share of
    /// unauthenticated connections, is reached. `shutdown` is the node's
    /// drop-everything token, of which the slot's own is a child.
    pub(crate) fn admit(
        self: &Arc<Self>,
        peer: Option<IpAddr>,
        shutdown: &CancellationToken,
    ) -> Admission {
        let Ok(mut open) = self.open.lock() else {
            return Admission::Full;
        };
        if let Some(peer) = peer
            && open.peers.get(&peer).copied().unwrap_or(0) >= self.limits.per_peer
        {
            return Admission::PeerFull;
        }
        let live = open.live().count();
        let unauthenticated = open
            .live()
            .filter(|entry| !entry.activity.is_authenticated())
            .count();
        if live >= self.limits.connections || unauthenticated >= self.limits.unauthenticated {
            // Every slot authenticated (they proved themselves since the
            // vacancy was seen): the connection waits, unserved.
            let Some(oldest) = open.oldest_unauthenticated() else {
                return Admission::Full;
            };
            oldest.evict.cancel();
        }
        let id = open.next;
        open.next += 1;
        let activity = Arc::new(Activity::new());
        let evict = shutdown.child_token();
        open.connections.insert(
            id,
            Entry {
                activity: activity.clone(),
                evict: evict.clone(),
                peer,
            },
        );
        if let Some(peer) = peer {
            *open.peers.entry(peer).or_default() += 1;
        }
        Admission::Admitted(Slot {
            slots: self.clone(),
            id,
            activity,
            evict,
        })
    }
}
