//! Budgets and memory limits: a looping or memory-hungry component is
//! stopped, reported as unconfirmed (never success), and the host keeps
//! serving other calls, including concurrently.

use crate::support::*;
use sandbox_host::host::Connect;
use sandbox_host::types::{Bootstrap, Error, Failure};
use sandbox_host::{Host, Kind, NodeBinding, Registration};
use serde_json::json;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

fn bootstrap() -> Bootstrap {
    sandbox_host::testing::bootstrap(reference(), "canary-credential")
}

/// A host with three kinds of the same component steered differently.
async fn host() -> Host {
    let kinds = [
        ("looper", "loop"),
        ("hoarder", "allocate"),
        ("flooder", "table-flood"),
        ("wide-logger", "log-wide"),
        ("panicker", "panic"),
        ("quiet", "none"),
        ("counter", "count"),
    ];
    let table: Vec<Registration> = kinds.iter().map(|(kind, _)| steerable(kind)).collect();
    let bindings: BTreeMap<String, NodeBinding> = kinds
        .iter()
        .map(|(kind, action)| {
            (
                kind.to_string(),
                binding(
                    Some("/run/engine.sock".into()),
                    // Two million pollables; 1.2 million log fields.
                    match *action {
                        "table-flood" => json!({ "action": action, "count": 2_000_000 }),
                        _ => json!({ "action": action, "count": 1_200_000 }),
                    },
                ),
            )
        })
        .collect();
    TestHost::table(&table, &bindings)
        .load(Connect::Offline)
        .await
        .expect("host loads")
}

/// A kind the host loaded.
fn loaded<'h>(host: &'h Host, kind: &str) -> &'h Kind {
    host.kind(kind).expect("a loaded kind")
}

/// The host still answers a call of its quiet kind.
async fn still_serves(host: &Host) {
    assert!(
        loaded(host, "quiet")
            .get_info(reference(), budget(5_000))
            .await
            .is_ok(),
        "host still serves"
    );
}

/// A call that began at `started` was stopped at its bound, not before
/// (its bound is 300 ms) and well before `limit`.
fn stopped_at_the_bound(started: Instant, limit: Duration, bound: &str) {
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(250),
        "stopped too early: {elapsed:?}"
    );
    assert!(elapsed < limit, "not stopped at {bound}: {elapsed:?}");
}

/// The steerable kind `kind` with 300 ms of guest CPU per call, on the
/// engine at `socket`, steered by `steering`.
fn cpu_bound(kind: &str, socket: std::path::PathBuf, steering: serde_json::Value) -> TestHost {
    let mut row = steerable(kind);
    row.policy.max_guest_cpu_ms = 300;
    TestHost::one(row, binding(Some(socket), steering))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_component_is_stopped_at_its_budget() {
    let host = host().await;
    let started = Instant::now();
    let outcome = loaded(&host, "looper")
        .create(bootstrap(), budget(300))
        .await;
    assert_eq!(outcome, Err(Failure::from(Error::ComputeUnconfirmed)));
    stopped_at_the_bound(started, Duration::from_secs(5), "the budget");
    still_serves(&host).await;
}

/// A long budget is not CPU to burn: a guest spinning past the kind's CPU
/// time per call ends there, while a call that waits (here on a held
/// engine request) spends no CPU and runs its budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spinning_guest_ends_at_its_cpu_time_whatever_its_budget() {
    let host = cpu_bound(
        "spinner",
        "/run/engine.sock".into(),
        json!({ "action": "loop" }),
    )
    .load(Connect::Offline)
    .await
    .expect("loads");
    let started = Instant::now();
    let outcome = loaded(&host, "spinner")
        .get_info(reference(), budget(60_000))
        .await;
    assert_eq!(outcome, Err(Error::ComputeUnconfirmed));
    stopped_at_the_bound(started, Duration::from_secs(10), "its CPU time");

    let engine = FakeEngine::start().await;
    let steering = json!({ "action": "version" });
    let host = cpu_bound("waiter", engine.socket.clone(), steering)
        .loaded()
        .await;
    let hold = engine.hold("GET", "/version");
    let (answer, ()) = tokio::join!(
        loaded(&host, "waiter").get_info(reference(), budget(60_000)),
        async {
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            hold.release();
        }
    );
    assert!(answer.is_ok(), "waiting is no CPU: {answer:?}");
}

/// Many waits are no CPU either: 60 waits of 25 ms each cross at least
/// two ticks, far more than a 300 ms CPU bound's 30, and none counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_waits_in_host_calls_spend_no_guest_cpu() {
    let engine = FakeEngine::start().await;
    let steering = json!({ "action": "naps", "count": 60 });
    let host = cpu_bound("napper", engine.socket.clone(), steering)
        .loaded()
        .await;
    let started = Instant::now();
    let answer = loaded(&host, "napper")
        .get_info(reference(), budget(60_000))
        .await;
    assert!(
        started.elapsed() >= Duration::from_millis(1_500),
        "it napped"
    );
    assert!(answer.is_ok(), "waiting is no CPU: {answer:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_does_not_block_other_calls() {
    let host = std::sync::Arc::new(host().await);
    let looping = {
        let host = host.clone();
        tokio::spawn(async move {
            loaded(&host, "looper")
                .get_info(reference(), budget(2_000))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    still_serves(&host).await;
    assert!(
        started.elapsed() < Duration::from_millis(1_500),
        "a concurrent call waited for the loop"
    );
    assert_eq!(looping.await.expect("join"), Err(Error::ComputeUnconfirmed));
}

/// A spinning guest yields its thread every epoch tick: even on a
/// single-threaded runtime another call finishes while it spins.
#[tokio::test(flavor = "current_thread")]
async fn a_spinning_guest_yields_its_thread() {
    let host = std::sync::Arc::new(host().await);
    let (finished, mut order) = tokio::sync::mpsc::unbounded_channel();
    let looping = {
        let (host, finished) = (host.clone(), finished.clone());
        tokio::spawn(async move {
            let outcome = loaded(&host, "looper")
                .get_info(reference(), budget(2_000))
                .await;
            let _ = finished.send("loop");
            outcome
        })
    };
    // Let the looping call start spinning before the quiet one begins.
    tokio::task::yield_now().await;
    still_serves(&host).await;
    let _ = finished.send("quiet");
    assert_eq!(looping.await.expect("join"), Err(Error::ComputeUnconfirmed));
    let first = order.recv().await;
    assert_eq!(first, Some("quiet"), "the quiet call waited for the loop");
}

/// Counts the polls of the future it wraps.
struct CountPolls<F> {
    future: Pin<Box<F>>,
    polls: Arc<AtomicUsize>,
}

impl<F: Future> Future for CountPolls<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls.fetch_add(1, Ordering::Relaxed);
        self.future.as_mut().poll(cx)
    }
}

/// Where the node runs a call (a connection's task under `own_wakes`,
/// which polls again at once a future that wakes itself), a spinning
/// guest still gives its thread back at every epoch tick: its tick's yield
/// must not wake the task during the poll, or `own_wakes` would take it
/// for a wake of its own and spin the guest on for up to 8 ticks. Counted,
/// not timed: the call's polls against the task's.
#[tokio::test(flavor = "current_thread")]
async fn a_spinning_guest_yields_its_thread_under_own_wakes() {
    use oac_provider_api::own_wakes::repoll_own_wakes;
    let host = host().await;
    let (call_polls, task_polls) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let call = CountPolls {
        future: Box::pin(loaded(&host, "looper").get_info(reference(), budget(400))),
        polls: call_polls.clone(),
    };
    let task = CountPolls {
        future: Box::pin(repoll_own_wakes(call)),
        polls: task_polls.clone(),
    };
    assert_eq!(task.await, Err(Error::ComputeUnconfirmed));
    let (call_polls, task_polls) = (
        call_polls.load(Ordering::Relaxed),
        task_polls.load(Ordering::Relaxed),
    );
    // About 40 ticks in the budget (41 polls here); 8 are enough for the
    // check below to tell one yield per tick from one per 8 ticks.
    assert!(call_polls >= 8, "the guest spun through {call_polls} polls");
    assert!(
        call_polls <= task_polls + 2,
        "the guest yielded {call_polls} times but its task only {task_polls}: \
         the tick's yield woke the task during its poll"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unbounded_allocation_fails_cleanly() {
    let host = host().await;
    let outcome = loaded(&host, "hoarder")
        .get_info(reference(), budget(30_000))
        .await;
    assert_eq!(outcome, Err(Error::ComputeUnconfirmed));
    let created = loaded(&host, "hoarder")
        .create(bootstrap(), budget(30_000))
        .await;
    assert_eq!(created, Err(Failure::from(Error::ComputeUnconfirmed)));
    still_serves(&host).await;
}

#[tokio::test]
async fn a_trap_is_unconfirmed_never_success() {
    let host = host().await;
    assert_eq!(
        loaded(&host, "panicker")
            .get_info(reference(), budget(5_000))
            .await,
        Err(Error::ComputeUnconfirmed)
    );
    let command = sandbox_host::types::Command {
        args: vec!["true".into()],
        directory: None,
        stdin: None,
    };
    assert!(
        loaded(&host, "quiet")
            .run_command(reference(), command, budget(5_000))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn each_call_gets_a_fresh_instance() {
    // The component counts its calls in a static: state that survived a
    // call would show as a count above 1.
    let host = host().await;
    for _ in 0..20 {
        let info = loaded(&host, "counter")
            .get_info(reference(), budget(5_000))
            .await
            .expect("count");
        assert_eq!(info.provider_id.as_deref(), Some("1"));
    }
}

#[tokio::test]
async fn unknown_kinds_and_oversized_stdin_are_invalid_before_any_call() {
    let host = host().await;
    assert!(matches!(host.kind("nope"), Err(Error::Invalid)));
    let command = sandbox_host::types::Command {
        args: vec!["cat".into()],
        directory: None,
        stdin: Some(vec![0; 50 * 1024 * 1024 + 33]),
    };
    assert_eq!(
        loaded(&host, "quiet")
            .run_command(reference(), command, budget(5_000))
            .await,
        Err(Error::Invalid)
    );
}

/// Asks `kind` (steered to exceed a per-call bound) for its info: the call
/// traps, its outcome unknown, and the host keeps serving.
async fn trapped_and_still_serving(kind: &str) {
    let host = host().await;
    let outcome = loaded(&host, kind)
        .get_info(reference(), budget(60_000))
        .await;
    assert_eq!(outcome, Err(Error::ComputeUnconfirmed));
    still_serves(&host).await;
}

/// 1.2 million empty log fields fit in the component's 64 MiB, but lifted
/// they would take 57.6 MB of host memory: past the hostcall fuel (52 MiB),
/// a trap, before the host holds them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_argument_beyond_the_hostcall_fuel_traps_before_the_host_holds_it() {
    trapped_and_still_serving("wide-logger").await;
}

/// Two million WASI pollables in one call end at the host's table cap
/// (16 384 entries; wasmtime's default, a million, would have let a
/// hundred thousand through).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_wasi_resources_ends_at_the_table_cap() {
    trapped_and_still_serving("flooder").await;
}
