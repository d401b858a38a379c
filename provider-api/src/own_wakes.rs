//! Polling a future whose parts wake each other, without the task waking
//! itself.
//!
//! The node client drives its HTTP/1.1 connection in the caller's task,
//! and a node serves each connection, its handler included, in one task.
//! There one part of the future wakes another while the task is being
//! polled: the connection completes the answer the caller waits for, the
//! caller's read of the body asks the connection for more. Tokio takes a
//! task woken during its own poll for one that yields: it queues it again
//! and wakes a parked worker to steal it, which on a machine whose idle
//! CPUs halt is a wake-up through the hypervisor and a hand-over to another
//! core, on every request (see docs/benchmarks.md, `5b5553d`).
//! [`repoll_own_wakes`] turns such a wake into one more round of the same
//! poll.

use futures_util::task::AtomicWaker;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

/// Rounds one poll may take before the task yields for real, so that a
/// future that keeps waking itself cannot hold its worker.
const MAX_ROUNDS: usize = 8;

/// Runs `future`, polling it again at once when it wakes itself while
/// being polled, instead of rescheduling the task. A wake that comes from
/// elsewhere (a socket's readiness, another task, a timer) wakes the task
/// as usual, so the future's own contract holds: every wake is followed by
/// a poll.
pub async fn repoll_own_wakes<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let wakes = Arc::new(OwnWakes::default());
    let waker = Waker::from(wakes.clone());
    std::future::poll_fn(move |cx| wakes.poll(future.as_mut(), &waker, cx)).await
}

/// The waker the future is polled with: it records a wake, and passes it
/// on to the task only when the future is not being polled.
#[derive(Default)]
struct OwnWakes {
    /// True while the future is being polled.
    polling: AtomicBool,
    /// Set by every wake; cleared before each round.
    woken: AtomicBool,
    /// The task's own waker.
    task: AtomicWaker,
}

impl Wake for OwnWakes {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Stored before `polling` is read, as the poll stores `polling`
        // before reading `woken`: a wake that lands as a poll ends is seen
        // by the poll (another round) or passes on to the task, or both.
        self.woken.store(true, Ordering::SeqCst);
        if !self.polling.load(Ordering::SeqCst) {
            self.task.wake();
        }
    }
}

impl OwnWakes {
    fn poll<F: Future>(
        &self,
        mut future: Pin<&mut F>,
        waker: &Waker,
        cx: &mut Context<'_>,
    ) -> Poll<F::Output> {
        self.task.register(cx.waker());
        let mut own = Context::from_waker(waker);
        for _ in 0..MAX_ROUNDS {
            self.woken.store(false, Ordering::SeqCst);
            self.polling.store(true, Ordering::SeqCst);
            let polled = future.as_mut().poll(&mut own);
            self.polling.store(false, Ordering::SeqCst);
            if polled.is_ready() || !self.woken.load(Ordering::SeqCst) {
                return polled;
            }
            // Out of tokio's budget its resources answer "pending" and wake
            // at once: going round again would only spin.
            if !tokio::task::coop::has_budget_remaining() {
                break;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::repoll_own_wakes;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll, Wake, Waker};

    /// Counts the wakes the task receives.
    #[derive(Default)]
    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A task polled by hand, counting the wakes it receives.
    #[derive(Default)]
    struct Task(Arc<CountingWaker>);

    impl Task {
        fn poll<F: Future>(&self, future: Pin<&mut F>) -> Poll<F::Output> {
            let waker = Waker::from(self.0.clone());
            future.poll(&mut Context::from_waker(&waker))
        }

        fn wakes(&self) -> usize {
            self.0.0.load(Ordering::SeqCst)
        }
    }

    /// Wakes itself during its first `rounds` polls, then is ready.
    struct WakesItself {
        rounds: usize,
        polls: usize,
    }

    impl Future for WakesItself {
        type Output = usize;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
            self.polls += 1;
            if self.polls > self.rounds {
                return Poll::Ready(self.polls);
            }
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    #[test]
    fn a_future_that_wakes_itself_is_polled_again_without_waking_the_task() {
        let task = Task::default();
        let future = std::pin::pin!(repoll_own_wakes(WakesItself {
            rounds: 3,
            polls: 0
        }));
        assert_eq!(task.poll(future), Poll::Ready(4));
        assert_eq!(task.wakes(), 0);
    }

    #[test]
    fn a_future_that_keeps_waking_itself_yields_and_wakes_the_task() {
        let task = Task::default();
        let future = std::pin::pin!(repoll_own_wakes(WakesItself {
            rounds: usize::MAX,
            polls: 0
        }));
        assert!(task.poll(future).is_pending());
        assert_eq!(task.wakes(), 1);
    }

    #[test]
    fn a_wake_from_elsewhere_reaches_the_task() {
        let task = Task::default();
        let (send, receive) = tokio::sync::oneshot::channel();
        let mut future = std::pin::pin!(repoll_own_wakes(receive));
        assert!(task.poll(future.as_mut()).is_pending());
        assert_eq!(task.wakes(), 0);
        send.send(7).expect("the receiver waits");
        assert_eq!(task.wakes(), 1);
        assert_eq!(task.poll(future), Poll::Ready(Ok(7)));
    }

    /// Tokio's yield wakes the task after its poll: the task yields to the
    /// others for real (the host's guests yield so every epoch tick).
    #[tokio::test(flavor = "current_thread")]
    async fn tokio_s_yield_still_lets_the_other_tasks_run() {
        let ran = Arc::new(AtomicUsize::new(0));
        let other = tokio::spawn({
            let ran = ran.clone();
            async move { ran.fetch_add(1, Ordering::SeqCst) }
        });
        let seen = repoll_own_wakes(async {
            tokio::task::yield_now().await;
            ran.load(Ordering::SeqCst)
        })
        .await;
        assert_eq!(seen, 1, "the other task ran during the yield");
        other.await.expect("the other task");
    }
}
