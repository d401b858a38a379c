//! Scale: 1 000 operations in flight at once against a slow engine (the
//! fixtures' fake Docker Engine holding every request 50 ms), next to one
//! call against the same engine measured in the same run; and the process's
//! memory per in-flight call, sampled while all 1 000 are held in the
//! engine. Held bursts also print when their last call was first polled
//! and their two phases (up to the engine, and after it) in wall time and
//! in the process's CPU and minor page faults per call, and 100
//! alternating runs of each side print their medians and p99, and when the
//! last call of each burst was first polled (the span the runtime takes to
//! start every call, which the wall time adds to the engine's latency),
//! when its median and its last request reached the engine, and how long
//! the burst went on after the last request's latency (the answers' work
//! that had not kept pace with them).
//!
//! What a call costs depends on what is in the caches, so with the engine
//! answering at once the bench also prints the process's CPU per call for
//! calls one after another and for bursts of 1 000, and the median of calls
//! made one after another each after a walk over 64 MiB (more than a core's
//! own caches hold: a call that finds none of its memory there).
//!
//! Each call is a `get-info` on its own allocation whose component makes
//! one `docker.version` request; the kind is registered with
//! `max_concurrent_calls = 1024` (the registry's upper bound). With
//! `OAC_BENCH_COMPONENT=docker` the calls are the shipped `docker`
//! adapter's own `get-info` instead (one container inspect each, with the
//! host's ownership and policy checks on the answer), on allocations
//! created through it first. With `OAC_BENCH_COMPONENT=one-request` they
//! are the bench-only `one-request` component's: the same one request per
//! call from the smallest shape an SDK adapter has, to tell what the
//! steerable component's own imports and steering cost from the host's.
//!
//! `OAC_BENCH_ENGINE_THREAD=1` runs the fake engine on a thread of its own,
//! as a real engine runs in a process of its own, and the held bursts then
//! print the engine's share of the CPU per call: what of the process's CPU
//! is the host's, and what the fixture's.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use oac_fixtures::cpu::{
    process_cpu_time, process_minor_faults, start_on_own_thread, threads_cpu_time,
};
use oac_fixtures::docker_engine::FakeDockerEngine;
use sandbox_host::provider::SandboxProvider;
use sandbox_host::{Budget, Host, Runtime};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Operations in flight at once: 1 000, or `OAC_BENCH_IN_FLIGHT` (to see
/// how the CPU per call changes with the number in flight; past 1 024 the
/// kind's bound queues them).
static IN_FLIGHT: std::sync::LazyLock<usize> = std::sync::LazyLock::new(|| {
    std::env::var("OAC_BENCH_IN_FLIGHT")
        .ok()
        .and_then(|count| count.parse().ok())
        .filter(|count| *count > 0)
        .unwrap_or(1_000)
});

/// Which component answers the calls (`OAC_BENCH_COMPONENT`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Component {
    /// The steerable test component, steered to make one `docker.version`
    /// request per call.
    Steerable,
    /// The shipped `docker` adapter: its `get-info` inspects the
    /// allocation's container.
    Docker,
    /// The bench-only `one-request` component: the same one `docker.version`
    /// request per call from the smallest shape an SDK adapter has (no
    /// steering to parse, none of the steerable component's other imports).
    OneRequest,
}

static COMPONENT: std::sync::LazyLock<Component> =
    std::sync::LazyLock::new(|| match std::env::var("OAC_BENCH_COMPONENT").as_deref() {
        Ok("docker") => Component::Docker,
        Ok("one-request") => Component::OneRequest,
        Ok("steerable") | Err(_) => Component::Steerable,
        Ok(other) => {
            panic!("OAC_BENCH_COMPONENT: `steerable`, `one-request` or `docker`, not `{other}`")
        }
    });

impl Component {
    /// Loads the component as the kind `slow` against `engine`.
    async fn load(self, runtime: Arc<Runtime>, engine: &FakeDockerEngine) -> Host {
        let socket = engine.socket();
        match self {
            Component::Steerable => {
                let kinds = [("slow", json!({ "action": "version" }))];
                common::load_steered(runtime, socket, &kinds, Some(1024)).await
            }
            Component::Docker => {
                let kinds = [("slow", json!({}))];
                let row = common::builtin_row("docker");
                common::load_row(runtime, row, socket, &kinds, Some(1024)).await
            }
            Component::OneRequest => {
                let kinds = [("slow", json!({}))];
                let row = common::one_request_row();
                common::load_row(runtime, row, socket, &kinds, Some(1024)).await
            }
        }
    }

    /// What a call asks of the engine: the request a held burst holds.
    fn request(self) -> (&'static str, &'static str) {
        match self {
            Component::Steerable | Component::OneRequest => ("GET", "/version"),
            Component::Docker => ("GET", "/json"),
        }
    }

    /// Makes every allocation a call observes exist: the docker adapter
    /// answers `get-info` from the allocation's container.
    async fn prepare(self, host: &Host, engine: &FakeDockerEngine) {
        if self != Component::Docker {
            return;
        }
        engine.insert_image("oac-bench-runtime:scale", common::POLICY_IMAGE);
        let kind = host.kind("slow").expect("a loaded kind");
        let budget = Budget::from_millis(30_000).expect("budget");
        for index in 0..*IN_FLIGHT {
            let bootstrap = sandbox_host::testing::bootstrap(
                common::reference(&format!("a{index}")),
                "bench-daemon-credential",
            );
            kind.create(bootstrap, budget).await.expect("created");
        }
    }
}

/// The name of the fake engine's thread when it runs on one of its own.
const ENGINE_THREAD: &str = "fake-engine";

/// Whether the fake engine runs on a thread of its own
/// (`OAC_BENCH_ENGINE_THREAD`) rather than on the host's runtime.
static ENGINE_ON_OWN_THREAD: std::sync::LazyLock<bool> =
    std::sync::LazyLock::new(|| std::env::var_os("OAC_BENCH_ENGINE_THREAD").is_some());

/// Starts the fake engine on a thread of its own, with a runtime of its own.
fn engine_on_own_thread() -> FakeDockerEngine {
    start_on_own_thread(ENGINE_THREAD, || async {
        FakeDockerEngine::start().await.expect("fake engine")
    })
    .expect("the engine's thread")
}

/// How long the engine holds every request.
const LATENCY: Duration = Duration::from_millis(50);

/// Resident memory of this process, KiB (`VmRSS`).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// What a burst of calls did.
struct Burst {
    /// How many calls answered.
    answered: usize,
    /// When the last call was first polled, from the burst's start: how
    /// long the runtime took to start every call. Each call's work before
    /// its request waits behind the calls started before it.
    last_started: Duration,
}

/// Runs `count` calls at once, each on its own allocation.
async fn burst(host: &Arc<Host>, count: usize) -> Burst {
    let budget = Budget::from_millis(30_000).expect("budget");
    let began = Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    for index in 0..count {
        let host = host.clone();
        calls.spawn(async move {
            let started = began.elapsed();
            let answered = host
                .kind("slow")
                .expect("a loaded kind")
                .get_info(common::reference(&format!("a{index}")), budget)
                .await
                .is_ok();
            (answered, started)
        });
    }
    let ends = calls.join_all().await;
    Burst {
        answered: ends.iter().filter(|(answered, _)| *answered).count(),
        last_started: ends
            .iter()
            .map(|(_, started)| *started)
            .max()
            .unwrap_or_default(),
    }
}

/// A burst held in the engine until all of it has arrived, then released.
struct Held {
    /// From the first call to the last request in the engine: the calls'
    /// work before the engine.
    arrived: Duration,
    /// From the release to the last answer: the engine's latency and the
    /// calls' work after it.
    answered: Duration,
    /// CPU time of the process over `arrived`.
    arrived_cpu: Duration,
    /// CPU time of the process over `answered`.
    answered_cpu: Duration,
    /// CPU time of the engine's own thread over `arrived`, and over
    /// `answered` (zero when the engine shares the host's runtime).
    engine_cpu: (Duration, Duration),
    /// The process's minor page faults over `arrived`, and over `answered`.
    faults: (u64, u64),
    /// The process's RSS while every call was held, KiB.
    rss_in_flight: u64,
    /// When the last call was first polled (see [`Burst::last_started`]).
    last_started: Duration,
}

impl Held {
    fn print(&self, which: &str) {
        println!(
            "phases ({which}): the last call first polled after {:.1} ms, all {n} requests \
             in the engine after {:.1} ms ({:.1} µs CPU, {:.2} minor faults per call); \
             released, all answered {:.1} ms \
             later ({} ms of it the engine's latency; {:.1} µs CPU, {:.2} minor faults per \
             call)",
            self.last_started.as_secs_f64() * 1e3,
            self.arrived.as_secs_f64() * 1e3,
            self.arrived_cpu.as_secs_f64() * 1e6 / *IN_FLIGHT as f64,
            self.faults.0 as f64 / *IN_FLIGHT as f64,
            self.answered.as_secs_f64() * 1e3,
            LATENCY.as_millis(),
            self.answered_cpu.as_secs_f64() * 1e6 / *IN_FLIGHT as f64,
            self.faults.1 as f64 / *IN_FLIGHT as f64,
            n = *IN_FLIGHT,
        );
        if *ENGINE_ON_OWN_THREAD {
            println!(
                "  of it the fake engine's thread: {:.1} µs per call before the release, \
                 {:.1} µs after",
                self.engine_cpu.0.as_secs_f64() * 1e6 / *IN_FLIGHT as f64,
                self.engine_cpu.1.as_secs_f64() * 1e6 / *IN_FLIGHT as f64,
            );
        }
    }
}

/// The fake engine's thread's CPU so far, read only when it has a thread
/// of its own (each read walks every thread of the process).
fn engine_cpu() -> Duration {
    if *ENGINE_ON_OWN_THREAD {
        threads_cpu_time(ENGINE_THREAD)
    } else {
        Duration::ZERO
    }
}

async fn held_burst(host: &Arc<Host>, engine: &FakeDockerEngine) -> Held {
    let (method, path) = COMPONENT.request();
    let hold = engine.hold(method, path);
    let cpu_started = process_cpu_time();
    let engine_started = engine_cpu();
    let faults_started = process_minor_faults();
    let started = Instant::now();
    let calls = {
        let host = host.clone();
        tokio::spawn(async move { burst(&host, *IN_FLIGHT).await })
    };
    hold.arrived(*IN_FLIGHT).await;
    let arrived = started.elapsed();
    let cpu_arrived = process_cpu_time();
    let engine_arrived = engine_cpu();
    let faults_arrived = process_minor_faults();
    let rss_in_flight = rss_kib();
    let cpu_released = process_cpu_time();
    let engine_released = engine_cpu();
    let faults_released = process_minor_faults();
    let released = Instant::now();
    hold.release();
    let burst = calls.await.expect("burst");
    let answered_in = released.elapsed();
    assert_eq!(burst.answered, *IN_FLIGHT, "every call answered");
    Held {
        arrived,
        arrived_cpu: cpu_arrived.saturating_sub(cpu_started),
        answered: answered_in,
        answered_cpu: process_cpu_time().saturating_sub(cpu_released),
        engine_cpu: (
            engine_arrived.saturating_sub(engine_started),
            engine_cpu().saturating_sub(engine_released),
        ),
        faults: (
            faults_arrived.saturating_sub(faults_started),
            process_minor_faults().saturating_sub(faults_released),
        ),
        rss_in_flight,
        last_started: burst.last_started,
    }
}

/// CPU of the process per call, for calls one after another in one task
/// and for bursts of [`IN_FLIGHT`] at once, the engine answering at once;
/// and the median time of a call made after evicting the core's own
/// caches. Each call is on one of [`IN_FLIGHT`] allocations, as in a burst.
async fn cost_per_call(host: &Arc<Host>) -> (Duration, Duration, Duration) {
    let calls: usize = if common::measuring() { 2_000 } else { 100 };
    let budget = Budget::from_millis(30_000).expect("budget");
    let one_by_one = |count: usize, evict: bool| {
        let host = host.clone();
        tokio::spawn(async move {
            // 64 MiB: more than a core's own caches (this VM: 2 MiB of L2).
            let mut junk = if evict {
                vec![0u64; 8 << 20]
            } else {
                Vec::new()
            };
            let mut timings = common::Timings::default();
            let cpu = process_cpu_time();
            for index in 0..count {
                for (offset, word) in junk.iter_mut().enumerate().step_by(8) {
                    *word = word.wrapping_add(offset as u64);
                }
                let started = Instant::now();
                let answered = host
                    .kind("slow")
                    .expect("a loaded kind")
                    .get_info(
                        common::reference(&format!("a{}", index % *IN_FLIGHT)),
                        budget,
                    )
                    .await;
                timings.push(started.elapsed());
                assert!(answered.is_ok());
            }
            std::hint::black_box(&junk);
            (process_cpu_time().saturating_sub(cpu), timings)
        })
    };
    let (sequential, _) = one_by_one(calls, false).await.expect("calls");
    let bursts = (calls / *IN_FLIGHT).max(1);
    let cpu = process_cpu_time();
    for _ in 0..bursts {
        assert_eq!(burst(host, *IN_FLIGHT).await.answered, *IN_FLIGHT);
    }
    let in_bursts = process_cpu_time().saturating_sub(cpu);
    // A tenth as many: each waits for a walk over the 64 MiB.
    let (_, evicted) = one_by_one(calls / 10, true).await.expect("calls");
    (
        sequential / calls as u32,
        in_bursts / (bursts * *IN_FLIGHT) as u32,
        evicted.percentile(0.5),
    )
}

/// Times `iters` bursts of `count` calls, driven from a task on the
/// runtime (as the node's request handlers are), not from the bench's
/// thread; also returns the last burst's [`Burst::last_started`].
async fn timed(host: &Arc<Host>, count: usize, iters: u64) -> (Duration, Duration) {
    let host = host.clone();
    tokio::spawn(async move {
        let start = Instant::now();
        let mut last_started = Duration::ZERO;
        for _ in 0..iters {
            let burst = burst(&host, count).await;
            assert_eq!(burst.answered, count);
            last_started = burst.last_started;
        }
        (start.elapsed(), last_started)
    })
    .await
    .expect("bursts")
}

fn scale(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    let runtime = Runtime::new().expect("engine");
    let own_thread = ENGINE_ON_OWN_THREAD.then(engine_on_own_thread);
    let (engine, host) = rt.block_on(async {
        let engine = match own_thread {
            Some(engine) => engine,
            None => FakeDockerEngine::start().await.expect("fake engine"),
        };
        let host = COMPONENT.load(runtime.clone(), &engine).await;
        COMPONENT.prepare(&host, &engine).await;
        (engine, Arc::new(host))
    });
    engine.slow_down(LATENCY);

    // Memory per in-flight call: every call held in the engine at once,
    // the first time 1 000 pool slots are used.
    rt.block_on(async {
        assert_eq!(burst(&host, 8).await.answered, 8, "warm-up");
        let before = rss_kib();
        let cold = held_burst(&host, &engine).await;
        let after = rss_kib();
        println!(
            "memory: {n} calls in flight: RSS {before} KiB before, {} KiB with \
             all in flight ({} KiB per call), {after} KiB after",
            cold.rss_in_flight,
            (cold.rss_in_flight.saturating_sub(before)) / *IN_FLIGHT as u64,
            n = *IN_FLIGHT,
        );
        cold.print("first burst, pool slots cold");
        held_burst(&host, &engine).await.print("second burst");
        held_burst(&host, &engine).await.print("third burst");
    });

    // What a call costs with warm caches and with cold ones.
    engine.slow_down(Duration::ZERO);
    let (sequential, in_bursts, evicted) = rt.block_on(cost_per_call(&host));
    engine.slow_down(LATENCY);
    let micros = |time: Duration| time.as_secs_f64() * 1e6;
    println!(
        "CPU per call, engine answering at once: {:.1} µs one after another, {:.1} µs in \
         bursts of {n} ({:.2}×); a call after evicting the core's caches: {:.1} µs (median)",
        micros(sequential),
        micros(in_bursts),
        micros(in_bursts) / micros(sequential),
        micros(evicted),
        n = *IN_FLIGHT,
    );

    // Medians and p99 of single calls and of whole bursts, alternating,
    // before criterion's estimates (100 of each: the p99 is the 99th).
    let rounds = if common::measuring() { 100 } else { 2 };
    let (mut one, mut all) = (common::Timings::default(), common::Timings::default());
    let mut last_started = common::Timings::default();
    // When the burst's requests reached the engine: the median one, the
    // last one, and how long the burst went on after the last one's
    // latency (the answers' work that had not kept pace).
    let mut median_arrival = common::Timings::default();
    let mut last_arrival = common::Timings::default();
    let mut after_last_latency = common::Timings::default();
    for _ in 0..rounds {
        one.push(rt.block_on(timed(&host, 1, 1)).0);
        engine.take_arrivals();
        let began = Instant::now();
        let (wall, started) = rt.block_on(timed(&host, *IN_FLIGHT, 1));
        let mut arrivals: Vec<Duration> = engine
            .take_arrivals()
            .into_iter()
            .map(|arrival| arrival.saturating_duration_since(began))
            .collect();
        arrivals.sort_unstable();
        let last = arrivals.last().copied().unwrap_or_default();
        all.push(wall);
        last_started.push(started);
        median_arrival.push(
            arrivals
                .get(arrivals.len() / 2)
                .copied()
                .unwrap_or_default(),
        );
        last_arrival.push(last);
        after_last_latency.push(wall.saturating_sub(last + LATENCY));
    }
    let millis = |time: Duration| time.as_secs_f64() * 1e3;
    println!(
        "wall time, {rounds} alternating runs: one call p50 {:.2} ms, p99 {:.2} ms; \
         {n} at once p50 {:.2} ms, p99 {:.2} ms; ratio p50 {:.2}, p99 {:.2}",
        millis(one.percentile(0.50)),
        millis(one.percentile(0.99)),
        millis(all.percentile(0.50)),
        millis(all.percentile(0.99)),
        millis(all.percentile(0.50)) / millis(one.percentile(0.50)),
        millis(all.percentile(0.99)) / millis(one.percentile(0.99)),
        n = *IN_FLIGHT,
    );
    println!(
        "  the last of the {n} calls first polled after p50 {:.2} ms, p99 {:.2} ms \
         (the engine holds each request {:.0} ms from its arrival)",
        millis(last_started.percentile(0.50)),
        millis(last_started.percentile(0.99)),
        millis(LATENCY),
        n = *IN_FLIGHT,
    );
    println!(
        "  the requests reached the engine: the median one after p50 {:.2} ms, the last \
         after p50 {:.2} ms; the burst ended p50 {:.2} ms, p99 {:.2} ms after the last \
         one's {:.0} ms",
        millis(median_arrival.percentile(0.50)),
        millis(last_arrival.percentile(0.50)),
        millis(after_last_latency.percentile(0.50)),
        millis(after_last_latency.percentile(0.99)),
        millis(LATENCY),
    );

    let mut group = c.benchmark_group("scale");
    group.sample_size(10);
    group.bench_function("baseline_one_call_slow_engine", |b| {
        b.iter_custom(|iters| rt.block_on(timed(&host, 1, iters)).0)
    });
    group.bench_function(format!("in_flight_{}_slow_engine", *IN_FLIGHT), |b| {
        b.iter_custom(|iters| rt.block_on(timed(&host, *IN_FLIGHT, iters)).0)
    });
    group.finish();
}

criterion_group!(benches, scale);
criterion_main!(benches);
