//! The threads a node serves its connections on: each runs a runtime of its
//! own on one thread, and each accepted connection is handed to one of them
//! in turn, where it lives to its end with its calls and the operations it
//! starts.
//!
//! Why not the multi-threaded runtime the node starts on: with its workers
//! sharing the tasks, a frame's wake-up on one worker unparks another to
//! look for work, and on a small machine those hand-overs cost more than
//! half of the CPU the transport added to a call (see
//! `docs/benchmarks.md`, `4730aad`). A connection's work has no reason
//! to move: its calls run one after another, and everything it waits for
//! (its socket, the engine's, its timers) is driven on its own thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// Runtimes on threads of their own, handed out in turn; stopped when
/// dropped (or by [`ConnectionThreads::stop`], which waits for them).
pub(crate) struct ConnectionThreads {
    runtimes: Vec<Handle>,
    next: AtomicUsize,
    stop: CancellationToken,
    stopped: Vec<oneshot::Receiver<()>>,
}

/// What a node's connection threads are called, followed by `-` and their
/// index (`node-conn-0`): how `ps -L`, `top` and a panic name them.
pub const THREAD_NAME: &str = "node-conn";

impl ConnectionThreads {
    /// Starts `count` threads (at least one), each running a
    /// current-thread runtime with its engine connection pools kept on it
    /// (see `keep_engine_pools_on_this_thread`). Each runtime is built, run
    /// and dropped on its own thread (a runtime dropped in an async context
    /// would panic); if one cannot start, those already started stop.
    pub(crate) async fn start(count: usize) -> std::io::Result<Self> {
        let mut threads = Self {
            runtimes: Vec::new(),
            next: AtomicUsize::new(0),
            stop: CancellationToken::new(),
            stopped: Vec::new(),
        };
        for index in 0..count.max(1) {
            let (started, on_started) = oneshot::channel();
            let (done, on_done) = oneshot::channel();
            let stopping = threads.stop.clone();
            std::thread::Builder::new()
                .name(format!("{THREAD_NAME}-{index}"))
                .spawn(move || {
                    let built = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build();
                    let runtime = match built {
                        Ok(runtime) => runtime,
                        Err(error) => {
                            let _ = started.send(Err(error));
                            return;
                        }
                    };
                    let _ = started.send(Ok(runtime.handle().clone()));
                    crate::capability::keep_engine_pools_on_this_thread();
                    runtime.block_on(stopping.cancelled());
                    // The runtime (and whatever task is left on it) goes
                    // before the thread reports its end.
                    drop(runtime);
                    let _ = done.send(());
                })?;
            threads.stopped.push(on_done);
            let runtime = on_started.await.map_err(|_| {
                std::io::Error::other("a connection thread ended before its runtime started")
            })??;
            threads.runtimes.push(runtime);
        }
        Ok(threads)
    }

    /// The runtime the next connection goes to.
    pub(crate) fn next(&self) -> &Handle {
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        &self.runtimes[turn % self.runtimes.len()]
    }

    /// Stops every thread and waits until each has dropped its runtime.
    pub(crate) async fn stop(mut self) {
        self.stop.cancel();
        for stopped in std::mem::take(&mut self.stopped) {
            let _ = stopped.await;
        }
    }
}

impl Drop for ConnectionThreads {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// How many connection threads a node starts: as many as the runtime it
/// serves from has workers (the machine's cores unless
/// `TOKIO_WORKER_THREADS` says otherwise).
pub(crate) fn default_count() -> usize {
    Handle::current().metrics().num_workers()
}

/// A stream moved from the runtime that accepted it to the one that serves
/// it: it leaves the first's reactor and joins the second's.
pub(crate) trait Movable: Sized {
    /// The stream outside any runtime.
    type Detached: Send + 'static;
    /// Leaves the current runtime's reactor.
    fn detach(self) -> std::io::Result<Self::Detached>;
    /// Joins the current runtime's reactor.
    fn attach(detached: Self::Detached) -> std::io::Result<Self>;
}

impl Movable for tokio::net::UnixStream {
    type Detached = std::os::unix::net::UnixStream;
    fn detach(self) -> std::io::Result<Self::Detached> {
        self.into_std()
    }
    fn attach(detached: Self::Detached) -> std::io::Result<Self> {
        Self::from_std(detached)
    }
}

impl Movable for tokio::net::TcpStream {
    type Detached = std::net::TcpStream;
    fn detach(self) -> std::io::Result<Self::Detached> {
        self.into_std()
    }
    fn attach(detached: Self::Detached) -> std::io::Result<Self> {
        Self::from_std(detached)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name and the kernel's id of the thread a task runs on.
    async fn where_it_runs(runtime: &Handle) -> (String, String) {
        runtime
            .spawn(async {
                let name = std::thread::current().name().map(str::to_owned);
                let tid = std::fs::read_link("/proc/thread-self").expect("thread-self");
                let tid = tid.file_name().expect("tid").to_string_lossy().into_owned();
                (name.expect("named"), tid)
            })
            .await
            .expect("task")
    }

    #[tokio::test]
    async fn threads_run_their_tasks_in_turn_and_end_when_stopped() {
        let threads = ConnectionThreads::start(2).await.expect("threads");
        let mut served = Vec::new();
        for _ in 0..4 {
            served.push(where_it_runs(threads.next()).await);
        }
        let names: Vec<&str> = served.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            ["node-conn-0", "node-conn-1", "node-conn-0", "node-conn-1"]
        );
        assert_eq!(served[0].1, served[2].1, "a runtime keeps its thread");
        assert_ne!(served[0].1, served[1].1, "each runtime has its own");
        threads.stop().await;
        // A thread reports its end just before it returns.
        let alive = |tid: &str| std::path::Path::new("/proc/self/task").join(tid).exists();
        for _ in 0..100 {
            if !alive(&served[0].1) && !alive(&served[1].1) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the connection threads outlived their stop");
    }

    #[tokio::test]
    async fn a_task_still_running_at_the_stop_is_dropped_with_its_runtime() {
        let threads = ConnectionThreads::start(1).await.expect("threads");
        let (held, released) = oneshot::channel::<()>();
        let task = threads.next().spawn(async move {
            let _held = held;
            std::future::pending::<()>().await;
        });
        threads.stop().await;
        assert!(released.await.is_err(), "the task's state was dropped");
        assert!(task.await.expect_err("cancelled").is_cancelled());
    }

    #[tokio::test]
    async fn at_least_one_thread_is_started() {
        let threads = ConnectionThreads::start(0).await.expect("threads");
        assert_eq!(where_it_runs(threads.next()).await.0, "node-conn-0");
        assert_eq!(where_it_runs(threads.next()).await.0, "node-conn-0");
        threads.stop().await;
    }
}
