//! Sustained `get-info` on the real `docker` component through the node
//! transport, next to the same call made in process, both measured in the
//! same run against the contract suite's fake Docker Engine, or against the
//! real engine `OAC_DOCKER_SOCKET` names with `OAC_BENCH_REAL_ENGINE=1` (its
//! containers under the assembled seccomp profile; see `real_engine.rs`).
//! Against the fake engine the policy's seccomp profile is a 35-byte one,
//! or with `OAC_BENCH_RUNTIME_PROFILE=1` the runtime's, as the file
//! `sandbox-host seccomp` writes: the engine returns it in every
//! inspection, about 19 KB of each answer.
//!
//! One tokio multi-thread runtime carries everything: the fake engine, the
//! node serving the host over a Unix socket, and the callers (one worker
//! per core, or `OAC_BENCH_WORKERS`), except the node's connections, which
//! a node serves on threads of its own (`node-conn-N`, as many as the
//! runtime has workers), as `serve` does. One host (`Arc<Host>`) answers
//! both paths:
//!
//! - `in_process`: the loaded kind's `get_info` (the host's `Kind`);
//! - `transport`: `RemoteProvider::get_info`, i.e. a request frame on a
//!   framed session over the Unix socket to a `Node` serving that same
//!   host.
//!
//! Eight allocations are created first, so every `get-info` inspects an
//! existing container in the fake engine and answers `running`; each
//! caller works on its own allocation (`OAC_BENCH_ONE_ALLOCATION=1`: all on
//! one, where the callers queue on that allocation's turn).
//!
//! Two measurements: criterion's per-call time (group `get_info`, or
//! `get_info_real_engine`; one caller, its calls made in a task on the
//! runtime), and, before it, a plain sustained run per path
//! with 1 and 8 concurrent callers that prints operations per second, p50
//! and p99 latency, this process's CPU, context switches and minor page
//! faults per call, and the ratios transport / in-process; beside them,
//! `bare` (the same `get-info` frames exchanged with a server that has
//! none of the node's protections: this protocol's floor, see [`bare`]),
//! `kinds` through the node (an HTTP request with no operation behind it)
//! and `echo`, a 512-byte frame sent and echoed back over a Unix socket on
//! the same runtime (the floor of any request/answer protocol over the
//! node's socket), and `threads`, the same echo between pairs of blocking
//! threads with no runtime (the kernel's own floor), under a line saying
//! how this machine's idle CPUs wait (halt polling). `OAC_BENCH_ROUNDS`
//! sets the sustained run's rounds (3). Without `--bench` (a `cargo test`
//! smoke run) the sustained run is cut down to a few calls, and runs in
//! both shapes below.
//!
//! `OAC_BENCH_NODE_RUNTIME=1` splits the process the way a node and Core
//! split machines: the servers (the node, `bare`'s and `echo`'s) run on a
//! runtime of their own (threads `bench-node`, as many workers, and the
//! node's connection threads `node-conn-N`) with a
//! host of their own loaded there (the same installation), the fake
//! engine on a thread of its own (`fake-engine`), the callers, the proxy
//! and the in-process host on the first runtime. Each path's CPU per call
//! is then also printed by side, and the node's side of a call through
//! the node (its runtime and the engine) is set against the whole
//! in-process call: the rate a node's machine sustains against an
//! in-process host's with the same cores, when both are bound by CPU.
//!
//! `OAC_BENCH_NODE_PROCESS=1` goes one step further: the node is the
//! `sandbox-host serve` binary in a process of its own (the one built
//! beside this bench, e.g. `target/release/sandbox-host`, or the one
//! `OAC_SANDBOX_HOST` names), with its own configuration file naming the
//! same engine, installation, policy and adapter configuration, and the
//! fake engine on a thread of its own. Its paths are `in_process`,
//! `transport` and `kinds` (the other servers live in this process); the
//! CPU, switches and faults per call are both processes', and the node's
//! side is the node's process and the engine's thread. The smoke run
//! takes this shape too, when the binary is there.

mod common;

use common::{KIND, ServedNode};
use contract_suite::fixtures::Engine;
use criterion::Criterion;
use oac_fixtures::cpu::{
    IdleWait, Process, start_on_own_thread, threads_cpu_time, threads_cpu_time_prefixed,
};
use sandbox_host::provider::SandboxProvider;
use sandbox_host::transport::{NodeClient, RemoteProvider};
use sandbox_host::types::{Bootstrap, LifecycleState, Reference};
use sandbox_host::{Budget, Host};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

/// Concurrent callers of the sustained run.
const CALLERS: [usize; 2] = [1, 8];
/// Calls per path, per caller count and round, in a real run.
const CALLS: usize = 2_000;
/// Rounds per caller count; the two paths alternate within each round.
/// `OAC_BENCH_ROUNDS` sets another count: a real engine's pace drifts
/// within a run, and more rounds average the drift over the paths (an even
/// count puts each path first as often as last).
const ROUNDS: usize = 3;

/// The installation the bench's host runs as.
const INSTALLATION: &str = "oac-transport-bench";

fn budget() -> Budget {
    Budget::from_millis(10_000).expect("budget")
}

/// Allocations created for the run: one per caller, so that callers do not
/// queue on one allocation's turn (one operation at a time per allocation)
/// unless `OAC_BENCH_ONE_ALLOCATION` asks for that shape.
const ALLOCATIONS: usize = 8;

/// Whether the calls reach a real engine (`OAC_BENCH_REAL_ENGINE`).
static REAL_ENGINE: std::sync::LazyLock<bool> =
    std::sync::LazyLock::new(|| std::env::var_os("OAC_BENCH_REAL_ENGINE").is_some());

/// Whether the fake engine's containers carry the runtime's seccomp profile
/// (`OAC_BENCH_RUNTIME_PROFILE`) rather than a 35-byte one.
static RUNTIME_PROFILE: std::sync::LazyLock<bool> =
    std::sync::LazyLock::new(|| std::env::var_os("OAC_BENCH_RUNTIME_PROFILE").is_some());

/// The names of the servers' threads and of the fake engine's thread when
/// they run apart (`OAC_BENCH_NODE_RUNTIME`; at most 15 bytes, a thread's
/// `comm`).
const NODE_THREAD: &str = "bench-node";
const ENGINE_THREAD: &str = "fake-engine";

/// Whether every caller works on allocation 0 (`OAC_BENCH_ONE_ALLOCATION`).
static ONE_ALLOCATION: std::sync::LazyLock<bool> =
    std::sync::LazyLock::new(|| std::env::var_os("OAC_BENCH_ONE_ALLOCATION").is_some());

/// The allocation caller `caller` works on.
fn allocation_of(caller: usize) -> usize {
    if *ONE_ALLOCATION {
        0
    } else {
        caller % ALLOCATIONS
    }
}

fn reference(allocation: usize) -> Reference {
    Reference::new(
        "bench-tenant",
        format!("bench-env-{allocation}"),
        format!("bench-alloc-{allocation}"),
    )
}

fn bootstrap(allocation: usize) -> Bootstrap {
    sandbox_host::testing::bootstrap(reference(allocation), "bench-daemon-credential")
}

/// Where the servers run against the callers (see the module's comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// Everything on one runtime.
    Together,
    /// The servers on a runtime of their own, the fake engine on a thread
    /// (`OAC_BENCH_NODE_RUNTIME`).
    RuntimeApart,
    /// The node in a `sandbox-host serve` process of its own, the fake
    /// engine on a thread (`OAC_BENCH_NODE_PROCESS`).
    ProcessApart,
}

impl Shape {
    /// The shape `cargo bench` was asked for.
    fn from_env() -> Self {
        let set = |name| std::env::var_os(name).is_some();
        match (set("OAC_BENCH_NODE_RUNTIME"), set("OAC_BENCH_NODE_PROCESS")) {
            (false, false) => Shape::Together,
            (true, false) => Shape::RuntimeApart,
            (false, true) => Shape::ProcessApart,
            (true, true) => {
                panic!("set one of OAC_BENCH_NODE_RUNTIME and OAC_BENCH_NODE_PROCESS, not both")
            }
        }
    }

    /// The sustained run's paths, in the order of its table: with the
    /// node in a process of its own, only those that reach it, and the
    /// in-process call.
    fn routes(self) -> &'static [Route] {
        match self {
            Shape::Together | Shape::RuntimeApart => &ROUTES,
            Shape::ProcessApart => &[Route::InProcess, Route::Transport, Route::Floor],
        }
    }

    /// What the node's side is called in the by-side rows, when apart.
    fn node_side(self) -> &'static str {
        match self {
            Shape::Together | Shape::RuntimeApart => "servers' runtime",
            Shape::ProcessApart => "node's process",
        }
    }
}

/// The node the proxy reaches: served by this process, or a process of
/// its own.
enum Served {
    InBench(ServedNode),
    Process(node_process::NodeProcess),
}

/// The host with the `docker` kind, the node serving it, and the proxy.
struct Fixture {
    shape: Shape,
    host: Arc<Host>,
    remote: Arc<RemoteProvider>,
    client: NodeClient,
    node: Served,
    /// The servers of this process, when it serves the node.
    bare: Option<Arc<bare::Client>>,
    echo: Option<Echo>,
    _engine: Engine,
}

/// Bytes of each `echo` frame, both ways: about a `get-info` request.
const ECHO_FRAME: usize = 512;

/// A server that echoes every frame it reads on a Unix socket.
struct Echo {
    socket: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Echo {
    async fn start() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let socket = dir.path().join("echo.sock");
        let listener = UnixListener::bind(&socket).expect("echo socket");
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut frame = [0; ECHO_FRAME];
                    while stream.read_exact(&mut frame).await.is_ok() {
                        if stream.write_all(&frame).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self { socket, _dir: dir }
    }
}

impl Fixture {
    /// Loads the builtin `docker` row against the engine (the fake, or the
    /// real one), serves the host on a Unix socket from `servers` (as the
    /// bare and echo servers) or starts a node process for it, connects
    /// the proxy, and creates the allocations. Apart, `servers` is a
    /// runtime of its own (unused for a node process), and the fake engine
    /// goes on a thread of its own (see the module's comment).
    async fn start(servers: tokio::runtime::Handle, shape: Shape, workers: usize) -> Self {
        let ((engine, image), seccomp_profile) = if *REAL_ENGINE {
            let (socket, seccomp_profile) =
                common::real_engine().expect("OAC_BENCH_REAL_ENGINE=1 needs a real engine");
            let engine = Engine::real(&socket)
                .await
                .unwrap_or_else(|error| panic!("the real engine: {error}"));
            (engine, seccomp_profile)
        } else {
            let engine = if shape != Shape::Together {
                start_on_own_thread(ENGINE_THREAD, || async {
                    Engine::fake().await.expect("fake engine")
                })
                .expect("the engine's thread")
            } else {
                Engine::fake().await.expect("fake engine")
            };
            let profile = if *RUNTIME_PROFILE {
                oac_fixtures::seccomp_profile::runtime_profile_file()
                    .expect("OAC_BENCH_RUNTIME_PROFILE=1 needs the upstream profile")
            } else {
                contract_suite::harness::FAKE_SECCOMP_PROFILE.to_string()
            };
            (engine, profile)
        };
        common::sweep(&engine, INSTALLATION).await;
        let host = common::docker_host(&engine, &image, &seccomp_profile, INSTALLATION).await;
        let host = Arc::new(host);
        // Apart, the servers run a host of their own, loaded on their
        // runtime (or in their process), so that no Engine connection of
        // one side is driven by the other's threads; the same installation
        // owns the allocations.
        let served = match shape {
            Shape::Together => Some(host.clone()),
            Shape::RuntimeApart => {
                let loaded = servers.spawn(common::docker_host_at(
                    engine.socket().map(std::path::Path::to_path_buf),
                    image.clone(),
                    seccomp_profile.clone(),
                    INSTALLATION.to_string(),
                ));
                Some(Arc::new(loaded.await.expect("the servers' host")))
            }
            Shape::ProcessApart => None,
        };
        let node = match &served {
            Some(served) => {
                Served::InBench(ServedNode::start(served.clone(), budget(), &servers).await)
            }
            None => Served::Process(
                node_process::NodeProcess::start(node_process::Settings {
                    docker_socket: engine.socket().expect("a Docker Engine").to_path_buf(),
                    image: image.clone(),
                    seccomp_profile: seccomp_profile.clone(),
                    installation: INSTALLATION.to_string(),
                    workers,
                })
                .await
                .unwrap_or_else(|missing| panic!("{missing}")),
            ),
        };
        let (remote, client) = match &node {
            Served::InBench(node) => (node.remote.clone(), node.client.clone()),
            Served::Process(node) => (node.remote.clone(), node.client.clone()),
        };

        let local = host.kind(KIND).expect("docker kind");
        for allocation in 0..ALLOCATIONS {
            let created = local
                .create(bootstrap(allocation), budget())
                .await
                .expect("created");
            assert_eq!(created.state, LifecycleState::Running);
            for info in [
                local.get_info(reference(allocation), budget()).await,
                remote.get_info(reference(allocation), budget()).await,
            ] {
                let info = info.expect("get-info answers");
                assert_eq!(info.state, LifecycleState::Running, "{info:?}");
            }
        }
        let (bare, echo) = match served {
            Some(served) => {
                let bare = servers.spawn(bare::serve(served));
                let bare = Arc::new(bare.await.expect("bare server"));
                let echo = servers.spawn(Echo::start()).await.expect("echo server");
                (Some(bare), Some(echo))
            }
            None => (None, None),
        };
        Self {
            shape,
            host,
            remote,
            client,
            node,
            bare,
            echo,
            _engine: engine,
        }
    }

    /// The node's process, when it runs in one.
    fn node_process(&self) -> Option<Process> {
        match &self.node {
            Served::InBench(_) => None,
            Served::Process(node) => Some(Process::Other(node.pid())),
        }
    }

    async fn stop(self) {
        let local = self.host.kind(KIND).expect("docker kind");
        for allocation in 0..ALLOCATIONS {
            local
                .kill(reference(allocation), budget())
                .await
                .expect("killed");
        }
        match self.node {
            Served::InBench(node) => node.stop().await,
            Served::Process(node) => node.stop(),
        }
    }
}

/// The sustained run's paths, in the order of its table.
const ROUTES: [Route; 6] = [
    Route::InProcess,
    Route::Transport,
    Route::Bare,
    Route::Floor,
    Route::Echo,
    Route::Threads,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    InProcess,
    Transport,
    /// The same frames through [`bare`]: the protocol without the node.
    Bare,
    /// `kinds` through the node: an HTTP request with no operation behind
    /// it.
    Floor,
    /// A frame echoed over a Unix socket: any protocol's floor.
    Echo,
    /// The same echo between two blocking threads per caller, outside the
    /// runtime: the kernel's floor under any async runtime.
    Threads,
}

impl Route {
    fn name(self) -> &'static str {
        match self {
            Route::InProcess => "in_process",
            Route::Transport => "transport",
            Route::Bare => "bare",
            Route::Floor => "kinds",
            Route::Echo => "echo",
            Route::Threads => "threads",
        }
    }
}

/// Latencies of every call, the wall time of a sustained run and the CPU
/// this process spent in it (callers, node, host, and the fake engine when
/// it is the fake) and the node's process when there is one, and the part
/// of it the servers' threads (or the node's process) and the fake
/// engine's thread spent when they run apart.
#[derive(Default)]
struct Run {
    latencies: Vec<Duration>,
    wall: Duration,
    cpu: Duration,
    sides: Sides,
    switches: u64,
    faults: u64,
}

/// CPU of the servers' runtime and the node's connection threads (or the
/// node's process) and of the fake engine's thread; reported only when
/// they run apart.
#[derive(Clone, Copy, Default)]
struct Sides {
    node: Duration,
    engine: Duration,
}

impl Sides {
    fn now(node_process: Option<Process>) -> Self {
        Self {
            node: node_process.map_or_else(
                || {
                    threads_cpu_time(NODE_THREAD)
                        + threads_cpu_time_prefixed(sandbox_host::transport::CONNECTION_THREAD_NAME)
                },
                Process::cpu_time,
            ),
            engine: threads_cpu_time(ENGINE_THREAD),
        }
    }

    fn since(self, start: Self) -> Self {
        Self {
            node: self.node.saturating_sub(start.node),
            engine: self.engine.saturating_sub(start.engine),
        }
    }
}

impl Run {
    fn absorb(&mut self, other: Run) {
        self.latencies.extend(other.latencies);
        self.wall += other.wall;
        self.cpu += other.cpu;
        self.sides.node += other.sides.node;
        self.sides.engine += other.sides.engine;
        self.switches += other.switches;
        self.faults += other.faults;
    }

    fn cpu_per_call(&self) -> Duration {
        self.per_call(self.cpu)
    }

    fn per_call(&self, cpu: Duration) -> Duration {
        cpu / self.latencies.len() as u32
    }

    fn switches_per_call(&self) -> f64 {
        self.switches as f64 / self.latencies.len() as f64
    }

    fn faults_per_call(&self) -> f64 {
        self.faults as f64 / self.latencies.len() as f64
    }

    fn ops_per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64()
    }

    /// Nearest-rank percentile; the latencies must be sorted.
    fn percentile(&self, q: f64) -> Duration {
        oac_fixtures::timing::percentile(&self.latencies, q)
    }
}

/// CPU, context switches and minor page faults of this process and of
/// the node's, when it has one.
#[derive(Clone, Copy, Default)]
struct Counters {
    cpu: Duration,
    switches: u64,
    faults: u64,
}

impl Counters {
    fn of(node_process: Option<Process>) -> Self {
        let processes = std::iter::once(Process::This).chain(node_process);
        processes.fold(Self::default(), |sum, process| Self {
            cpu: sum.cpu + process.cpu_time(),
            switches: sum.switches + process.context_switches(),
            faults: sum.faults + process.minor_faults(),
        })
    }
}

/// The counters of this process, and of the node's when it has one, at
/// the start of a run.
struct Meter {
    node_process: Option<Process>,
    counters: Counters,
    sides: Sides,
    began: Instant,
}

impl Meter {
    fn start(node_process: Option<Process>) -> Self {
        // The sides are read outside the processes' own window.
        let sides = Sides::now(node_process);
        Self {
            counters: Counters::of(node_process),
            node_process,
            sides,
            began: Instant::now(),
        }
    }

    /// The run since the start, its calls' `latencies` given.
    fn finish(self, latencies: Vec<Duration>) -> Run {
        let wall = self.began.elapsed();
        let now = Counters::of(self.node_process);
        Run {
            latencies,
            wall,
            cpu: now.cpu.saturating_sub(self.counters.cpu),
            sides: Sides::now(self.node_process).since(self.sides),
            switches: now.switches.saturating_sub(self.counters.switches),
            faults: now.faults.saturating_sub(self.counters.faults),
        }
    }
}

/// `callers` tasks take calls from one counter until `calls` have started.
async fn sustained(fixture: &Fixture, path: Route, callers: usize, calls: usize) -> Run {
    if let Route::Threads = path {
        return echo_between_threads(callers, calls);
    }
    let next = Arc::new(AtomicUsize::new(0));
    let meter = Meter::start(fixture.node_process());
    let tasks: Vec<_> = (0..callers)
        .map(|caller| {
            let allocation = allocation_of(caller);
            let host = fixture.host.clone();
            let remote = fixture.remote.clone();
            let client = fixture.client.clone();
            let next = next.clone();
            let echo = fixture.echo.as_ref().map(|echo| echo.socket.clone());
            let bare = fixture.bare.clone();
            tokio::spawn(async move {
                let local = host.kind(KIND).expect("docker kind");
                let mut echoed = match path {
                    Route::Echo => Some(
                        UnixStream::connect(echo.expect("an echo server"))
                            .await
                            .expect("echo server"),
                    ),
                    _ => None,
                };
                let mut frame = [7; ECHO_FRAME];
                let mut latencies = Vec::with_capacity(calls / callers + 1);
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    let start = Instant::now();
                    let answered = match path {
                        Route::InProcess => local
                            .get_info(reference(allocation), budget())
                            .await
                            .is_ok(),
                        Route::Transport => remote
                            .get_info(reference(allocation), budget())
                            .await
                            .is_ok(),
                        Route::Bare => bare
                            .as_ref()
                            .expect("a bare server")
                            .get_info(reference(allocation))
                            .await
                            .is_ok(),
                        Route::Floor => client.kinds(budget()).await.is_ok(),
                        Route::Echo => {
                            let stream = echoed.as_mut().expect("connected");
                            stream.write_all(&frame).await.is_ok()
                                && stream.read_exact(&mut frame).await.is_ok()
                        }
                        Route::Threads => unreachable!("run outside the runtime"),
                    };
                    latencies.push(start.elapsed());
                    assert!(answered, "{} answers", path.name());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(calls);
    for task in tasks {
        latencies.extend(task.await.expect("caller"));
    }
    meter.finish(latencies)
}

/// `callers` pairs of blocking threads, each pair echoing frames over a
/// socket pair until `calls` exchanges have started: what the kernel alone
/// charges for a request and its answer, the part of `echo` no runtime can
/// save. The threads are started before the run is measured and live until
/// it has been (a thread's CPU is counted only while it exists).
fn echo_between_threads(callers: usize, calls: usize) -> Run {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    use std::sync::{Barrier, mpsc};
    let next = Arc::new(AtomicUsize::new(0));
    let [started, measured] = [(); 2].map(|()| Arc::new(Barrier::new(callers + 1)));
    let (done, finished) = mpsc::channel();
    let threads: Vec<_> = (0..callers)
        .flat_map(|_| {
            let (mut client, mut server) = UnixStream::pair().expect("socket pair");
            let echoing = std::thread::spawn(move || {
                let mut frame = [0; ECHO_FRAME];
                while server.read_exact(&mut frame).is_ok() {
                    if server.write_all(&frame).is_err() {
                        return;
                    }
                }
            });
            let (next, started, measured, done) = (
                next.clone(),
                started.clone(),
                measured.clone(),
                done.clone(),
            );
            let calling = std::thread::spawn(move || {
                let mut frame = [7; ECHO_FRAME];
                let mut latencies = Vec::with_capacity(calls / callers + 1);
                started.wait();
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    let start = Instant::now();
                    client.write_all(&frame).expect("echoing thread");
                    client.read_exact(&mut frame).expect("echoing thread");
                    latencies.push(start.elapsed());
                }
                done.send(latencies).expect("the run waits");
                measured.wait();
                // Dropping the client ends its echoing thread.
            });
            [echoing, calling]
        })
        .collect();
    // Only the calling threads hold a sender now: one that panics drops
    // its own, and the run fails below instead of waiting for it.
    drop(done);
    let meter = Meter::start(None);
    started.wait();
    let mut latencies = Vec::with_capacity(calls);
    for _ in 0..callers {
        latencies.extend(finished.recv().expect("a calling thread"));
    }
    let run = meter.finish(latencies);
    measured.wait();
    for thread in threads {
        thread.join().expect("echo thread");
    }
    run
}

fn micros(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

fn report(rt: &tokio::runtime::Runtime, fixture: &Fixture, calls: usize, rounds: usize) {
    println!(
        "sustained get-info, kind docker, {}: {calls} calls per path per round, \
         {rounds} round(s), paths alternating, {}{}",
        if *REAL_ENGINE {
            "real Docker Engine"
        } else {
            "fake Docker Engine"
        },
        if *ONE_ALLOCATION {
            "every caller on one allocation"
        } else {
            "each caller on its own allocation"
        },
        match (fixture.shape, *REAL_ENGINE) {
            (Shape::Together, _) => "",
            (Shape::RuntimeApart, false) => {
                ", the servers on a runtime of their own, the fake engine on a thread"
            }
            (Shape::RuntimeApart, true) => ", the servers on a runtime of their own",
            (Shape::ProcessApart, false) => {
                ", the node in a process of its own, the fake engine on a thread \
                 (CPU, switches and faults: both processes)"
            }
            (Shape::ProcessApart, true) => {
                ", the node in a process of its own \
                 (CPU, switches and faults: both processes)"
            }
        }
    );
    // A hand-over to a thread parked on the other CPU costs what an idle
    // CPU's wake-up costs here (see docs/benchmarks.md, the machine).
    println!("idle CPUs: {}", IdleWait::of_this_machine());
    println!(
        "{:>7}  {:<10}  {:>9}  {:>10}  {:>10}  {:>10}  {:>9}  {:>7}",
        "callers", "path", "ops/s", "p50", "p99", "CPU/call", "switches", "faults"
    );
    let routes = fixture.shape.routes();
    for callers in CALLERS {
        // Warm up every path (pool slots, connections) before measuring.
        for &path in routes {
            rt.block_on(sustained(fixture, path, callers, (calls / 10).max(callers)));
        }
        let mut runs: Vec<Run> = routes.iter().map(|_| Run::default()).collect();
        for round in 0..rounds {
            // Alternate the order, so no path always follows the same one.
            let mut order: Vec<_> = routes.iter().copied().enumerate().collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for (at, path) in order {
                let run = rt.block_on(sustained(fixture, path, callers, calls));
                runs[at].absorb(run);
            }
        }
        for (path, run) in routes.iter().zip(&mut runs) {
            run.latencies.sort_unstable();
            println!(
                "{callers:>7}  {:<10}  {:>9.0}  {:>10}  {:>10}  {:>10}  {:>9.1}  {:>7.2}",
                path.name(),
                run.ops_per_second(),
                micros(run.percentile(0.50)),
                micros(run.percentile(0.99)),
                micros(run.cpu_per_call()),
                run.switches_per_call(),
                run.faults_per_call(),
            );
        }
        let run_of = |route: Route| {
            routes
                .iter()
                .position(|&path| path == route)
                .map(|at| &runs[at])
        };
        let local = run_of(Route::InProcess).expect("the in-process path runs in every shape");
        let served: Vec<_> = [("transport", Route::Transport), ("bare", Route::Bare)]
            .into_iter()
            .filter_map(|(name, route)| Some((name, run_of(route)?)))
            .collect();
        for &(name, path) in &served {
            let ratio = |q| path.percentile(q).as_secs_f64() / local.percentile(q).as_secs_f64();
            println!(
                "{callers:>7}  {name}/in_process: ops/s {:.2}, p50 {:.2}, p99 {:.2}",
                path.ops_per_second() / local.ops_per_second(),
                ratio(0.50),
                ratio(0.99),
            );
        }
        if fixture.shape != Shape::Together {
            report_sides(fixture.shape, callers, local, &served);
        }
    }
    println!();
}

/// With the servers apart: each path's CPU per call by side, and
/// the node's side of each path through a server (the servers' runtime or
/// the node's process, and the engine) against the whole in-process call.
fn report_sides(shape: Shape, callers: usize, local: &Run, served: &[(&str, &Run)]) {
    let sides = |run: &Run| {
        let (node, engine) = (run.per_call(run.sides.node), run.per_call(run.sides.engine));
        let callers = run.cpu_per_call().saturating_sub(node + engine);
        (callers, node, engine)
    };
    for (name, run) in std::iter::once(("in_process", local)).chain(served.iter().copied()) {
        let (callers_side, node, engine) = sides(run);
        println!(
            "{callers:>7}  {name} CPU/call by side: callers' runtime {}, {} {}, \
             engine's thread {}",
            micros(callers_side),
            shape.node_side(),
            micros(node),
            micros(engine),
        );
    }
    // The split is only worth reading if each side runs where it is
    // counted: the served paths on the servers' runtime (or the node's
    // process), the in-process path on the callers'.
    let (_, in_process_on_servers, _) = sides(local);
    for (name, run) in served {
        let (_, node, engine) = sides(run);
        assert!(
            node > in_process_on_servers * 10,
            "{name} runs on the {} ({node:?} a call there, \
             {in_process_on_servers:?} for an in-process call)",
            shape.node_side(),
        );
        println!(
            "{callers:>7}  {name}'s server side/in_process: CPU/call {} against {}, ops/s bound {:.2}",
            micros(node + engine),
            micros(local.cpu_per_call()),
            local.cpu_per_call().as_secs_f64() / (node + engine).as_secs_f64(),
        );
    }
}

fn per_call(c: &mut Criterion, rt: &tokio::runtime::Runtime, fixture: &Fixture) {
    // Each batch runs in a task on the runtime, as the sustained run's
    // callers and a node's handlers do. Criterion's own `to_async` polls
    // the call on the bench's thread instead, outside the workers: there
    // the in-process call (its engine request handed to the workers, its
    // answer waited for on that thread) measured dearer than the node's,
    // the opposite of every sustained run (see docs/benchmarks.md).
    let in_task = |iters: u64, route: Route| {
        let host = fixture.host.clone();
        let remote = fixture.remote.clone();
        rt.block_on(rt.spawn(async move {
            let local = host.kind(KIND).expect("docker kind");
            let start = Instant::now();
            for _ in 0..iters {
                match route {
                    Route::InProcess => local.get_info(reference(0), budget()).await,
                    Route::Transport => remote.get_info(reference(0), budget()).await,
                    Route::Bare | Route::Floor | Route::Echo | Route::Threads => {
                        unreachable!("criterion times in_process and transport only")
                    }
                }
                .expect("get-info answers");
            }
            start.elapsed()
        }))
        .expect("bench task")
    };
    let mut group = c.benchmark_group(if *REAL_ENGINE {
        "get_info_real_engine"
    } else {
        "get_info"
    });
    group.bench_function("in_process", |b| {
        b.iter_custom(|iters| in_task(iters, Route::InProcess))
    });
    group.bench_function("transport", |b| {
        b.iter_custom(|iters| in_task(iters, Route::Transport))
    });
    group.finish();
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test` runs this as a smoke test,
    // of every shape (the node's process when its binary is there).
    let measuring = oac_fixtures::timing::measuring();
    if measuring {
        bench(Shape::from_env(), true);
    } else {
        bench(Shape::Together, false);
        bench(Shape::RuntimeApart, false);
        match node_process::binary() {
            Ok(_) => bench(Shape::ProcessApart, false),
            Err(missing) => println!("SKIPPED the node's process shape: {missing}"),
        }
    }
}

/// Builds the runtimes and the fixture in `shape`, prints the sustained
/// run (cut down unless `measuring`) and runs criterion's group.
fn bench(shape: Shape, measuring: bool) {
    // OAC_BENCH_WORKERS=1 shows what the hand-overs between workers cost
    // on this machine (see docs/benchmarks.md).
    let workers = std::env::var("OAC_BENCH_WORKERS")
        .ok()
        .and_then(|workers| workers.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from));
    let runtime = |name: Option<&str>| {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        if let Some(name) = name {
            builder.thread_name(name);
        }
        builder
            .worker_threads(workers)
            .enable_all()
            .build()
            .expect("tokio")
    };
    let rt = runtime(None);
    let servers = (shape == Shape::RuntimeApart).then(|| runtime(Some(NODE_THREAD)));
    let handle = servers
        .as_ref()
        .map_or_else(|| rt.handle().clone(), |servers| servers.handle().clone());
    let fixture = rt.block_on(Fixture::start(handle, shape, workers));
    if measuring {
        let rounds = std::env::var("OAC_BENCH_ROUNDS").map_or(ROUNDS, |rounds| {
            rounds
                .parse()
                .ok()
                .filter(|&rounds| rounds > 0)
                .expect("OAC_BENCH_ROUNDS is a count of rounds, at least 1")
        });
        report(&rt, &fixture, CALLS, rounds);
    } else {
        report(&rt, &fixture, 16, 1);
    }
    let mut criterion = Criterion::default().configure_from_args();
    per_call(&mut criterion, &rt, &fixture);
    criterion.final_summary();
    rt.block_on(fixture.stop());
    drop(servers);
}

/// The node protocol's frames without the node: a server that reads each
/// `get-info` request frame, decodes it, runs the call on the same host and
/// writes the answer frame, one call at a time per connection, and a client
/// that pools its connections like the node client pools sessions. Both
/// use the protocol's own framing and JSON ([`wire::frame`]), and nothing
/// else: no token, upgrade, limits, budget from receipt, stall guard,
/// lifetime, tracking, run to end or log line, and no proxy checks. What the
/// transport would cost if the node's and the proxy's protections cost
/// nothing.
mod bare {
    use super::KIND;
    use sandbox_host::provider::SandboxProvider;
    use sandbox_host::transport::wire::{self, Answer, Call, Outcome, Value, frame};
    use sandbox_host::types::{Error, Info, Reference};
    use sandbox_host::{Budget, Host};
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};
    use tokio::io::{AsyncReadExt, AsyncWriteExt, BufStream};
    use tokio::net::{UnixListener, UnixStream};

    /// The client of a bare server.
    pub(crate) struct Client {
        socket: PathBuf,
        idle: Mutex<Vec<BufStream<UnixStream>>>,
        _dir: tempfile::TempDir,
    }

    /// Serves `host` bare on a Unix socket of its own.
    pub(crate) async fn serve(host: Arc<Host>) -> Client {
        let dir = tempfile::tempdir().expect("temp dir");
        let socket = dir.path().join("bare.sock");
        let listener = UnixListener::bind(&socket).expect("bare socket");
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(session(host.clone(), stream));
            }
        });
        Client {
            socket,
            idle: Mutex::new(Vec::new()),
            _dir: dir,
        }
    }

    /// One connection: request frames answered in turn until it closes.
    async fn session(host: Arc<Host>, stream: UnixStream) {
        let mut io = BufStream::new(stream);
        loop {
            let mut prefix = [0; frame::PREFIX];
            if io.read_exact(&mut prefix).await.is_err() {
                return;
            }
            let mut body = vec![0; u32::from_be_bytes(prefix) as usize];
            if io.read_exact(&mut body).await.is_err() {
                return;
            }
            let answer = match answer(&host, &body).await {
                Some(outcome) => frame::answer_outcome(&outcome, false),
                None => frame::answer_refused("invalid", false),
            };
            if io.write_all(&answer).await.is_err() || io.flush().await.is_err() {
                return;
            }
        }
    }

    /// The outcome's JSON for a `get-info` request.
    async fn answer(host: &Host, body: &[u8]) -> Option<Vec<u8>> {
        let request: wire::Request = serde_json::from_slice(body).ok()?;
        let Call::GetInfo(reference) = request.call else {
            return None;
        };
        let kind = host.kind(&request.kind).ok()?;
        let budget = Budget::from_millis(request.timeout_ms).ok()?;
        let outcome = match kind.get_info(reference, budget).await {
            Ok(info) => Outcome::Ok(Value::Info(info)),
            Err(error) => Outcome::Error {
                error,
                info: None,
                record: None,
            },
        };
        serde_json::to_vec(&outcome).ok()
    }

    impl Client {
        /// `get-info` of the bench's kind on `reference`.
        pub(crate) async fn get_info(&self, reference: Reference) -> Result<Info, Error> {
            let request = frame::request(&wire::Request {
                kind: KIND.to_string(),
                timeout_ms: super::budget().millis(),
                call: Call::GetInfo(reference),
            })
            .ok_or(Error::Invalid)?;
            let idle = self.idle.lock().expect("idle connections").pop();
            let mut io = match idle {
                Some(io) => io,
                None => BufStream::new(
                    UnixStream::connect(&self.socket)
                        .await
                        .map_err(|_| Error::ComputeUnconfirmed)?,
                ),
            };
            let lost = |_| Error::ComputeUnconfirmed;
            io.write_all(&request).await.map_err(lost)?;
            io.flush().await.map_err(lost)?;
            let mut prefix = [0; frame::PREFIX];
            io.read_exact(&mut prefix).await.map_err(lost)?;
            let (length, _) = frame::answer_prefix(prefix);
            let mut body = vec![0; length];
            io.read_exact(&mut body).await.map_err(lost)?;
            self.idle.lock().expect("idle connections").push(io);
            match serde_json::from_slice(&body) {
                Ok(Answer::Outcome(Outcome::Ok(Value::Info(info)))) => Ok(info),
                Ok(Answer::Outcome(Outcome::Error { error, .. })) => Err(error),
                _ => Err(Error::ComputeUnconfirmed),
            }
        }
    }
}

/// The node as `sandbox-host serve`, in a process of its own
/// (`OAC_BENCH_NODE_PROCESS`): its configuration written from the same
/// settings as the bench's own host, and the proxy connected to it.
mod node_process {
    use super::KIND;
    use sandbox_host::Budget;
    use sandbox_host::transport::{Endpoint, NodeClient, RemoteProvider};
    use std::fmt::Write as _;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    const TOKEN: &str = "transport-bench-node-process-token";

    /// What the node serves: the same as the bench's own host.
    pub(crate) struct Settings {
        pub docker_socket: PathBuf,
        pub image: String,
        pub seccomp_profile: String,
        pub installation: String,
        /// The node's tokio workers, as many as the bench's runtime.
        pub workers: usize,
    }

    /// A running `sandbox-host serve` and the proxy Core would use.
    pub(crate) struct NodeProcess {
        pub remote: Arc<RemoteProvider>,
        pub client: NodeClient,
        child: Child,
        dir: tempfile::TempDir,
    }

    /// The `sandbox-host` binary: `OAC_SANDBOX_HOST`, or the one built
    /// beside this bench (`target/<profile>/sandbox-host`), or what is
    /// missing.
    pub(crate) fn binary() -> Result<PathBuf, String> {
        if let Some(path) = std::env::var_os("OAC_SANDBOX_HOST") {
            return Ok(path.into());
        }
        let exe = std::env::current_exe().map_err(|error| format!("this bench's path: {error}"))?;
        // The bench is `target/<profile>/deps/transport-<hash>`.
        let beside = exe
            .parent()
            .and_then(Path::parent)
            .map(|profile| profile.join("sandbox-host"))
            .ok_or("this bench is not in a target directory")?;
        if beside.is_file() {
            Ok(beside)
        } else {
            Err(format!(
                "no {} (build it with the bench's profile first, e.g. \
                 `cargo build --release -p sandbox-host`, or set OAC_SANDBOX_HOST)",
                beside.display()
            ))
        }
    }

    /// The node configuration for `settings`, listening on `socket`.
    fn configuration(dir: &Path, settings: &Settings, socket: &Path) -> String {
        let seccomp_file = dir.join("seccomp.json");
        std::fs::write(&seccomp_file, &settings.seccomp_profile).expect("seccomp profile");
        let token_file = dir.join("token");
        std::fs::write(&token_file, TOKEN).expect("token");
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
        let policy = contract_suite::harness::policy_settings(&settings.image, seccomp_file);
        let quoted = |text: &str| serde_json::to_string(text).expect("a string");
        let path = |path: &Path| quoted(&path.display().to_string());
        let mut text = format!(
            "token_file = {}\ninstallation = {}\nplugins = {}\nstate_dir = {}\n\
             max_in_flight = 64\n[listen]\nunix = {}\n[log]\nlevel = \"warn\"\n\
             [kinds.{KIND}]\ndocker_socket = {}\n[kinds.{KIND}.container_policy]\n\
             image = {}\nnetwork = {}\nseccomp_profile = {}\ncpus = {:?}\n\
             memory_mib = {}\npids_limit = {}\nnested_sandbox = {}\n\
             [kinds.{KIND}.configuration]\n",
            path(&token_file),
            quoted(&settings.installation),
            path(&super::common::plugin_dir()),
            path(&dir.join("state")),
            path(socket),
            path(&settings.docker_socket),
            quoted(&policy.image),
            quoted(&policy.network),
            path(&policy.seccomp_profile),
            policy.cpus,
            policy.memory_mib,
            policy.pids_limit,
            policy.nested_sandbox,
        );
        // The profile's keys hold strings, numbers and arrays of them,
        // which JSON and TOML write alike.
        let profile = super::common::docker_configuration();
        for (key, value) in profile.as_object().expect("the profile is an object") {
            assert!(
                !value.is_object(),
                "the docker profile's {key} is a table: write it as TOML here"
            );
            writeln!(text, "{key} = {value}").expect("a string");
        }
        text
    }

    impl NodeProcess {
        /// Starts `sandbox-host serve` for `settings` and connects the
        /// proxy once it answers; fails if the binary is missing.
        pub(crate) async fn start(settings: Settings) -> Result<Self, String> {
            let binary = binary()?;
            let dir = tempfile::tempdir().expect("tempdir");
            let socket = dir.path().join("node.sock");
            let config = dir.path().join("node.toml");
            std::fs::write(&config, configuration(dir.path(), &settings, &socket))
                .expect("node configuration");
            let log = std::fs::File::create(dir.path().join("serve.log")).expect("log");
            let mut child = Command::new(&binary)
                .arg("serve")
                .arg("--config")
                .arg(&config)
                .env("TOKIO_WORKER_THREADS", settings.workers.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .map_err(|error| format!("{} does not start: {error}", binary.display()))?;
            let log = || std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default();
            let client = NodeClient::new(&Endpoint::Unix(socket), TOKEN).expect("client");
            let budget = Budget::from_millis(10_000).expect("budget");
            let began = Instant::now();
            let remote = loop {
                if let Ok(remote) = RemoteProvider::connect(
                    client.clone(),
                    &sandbox_host::registry::Registry::builtin(),
                    KIND,
                    budget,
                )
                .await
                {
                    break remote;
                }
                if let Some(status) = child.try_wait().expect("the node's status") {
                    panic!("the node exited ({status}) before answering: {}", log());
                }
                if began.elapsed() > Duration::from_secs(300) {
                    let _ = child.kill();
                    panic!("the node did not answer within 300 s: {}", log());
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            };
            Ok(Self {
                remote: Arc::new(remote),
                client,
                child,
                dir,
            })
        }

        pub(crate) fn pid(&self) -> u32 {
            self.child.id()
        }

        /// Stops the node as an operator does (SIGTERM) and checks that
        /// it finished cleanly.
        pub(crate) fn stop(mut self) {
            let sent = Command::new("kill")
                .arg("-TERM")
                .arg(self.child.id().to_string())
                .status()
                .expect("kill");
            assert!(sent.success(), "SIGTERM sent");
            let status = self.child.wait().expect("the node exits");
            let log = std::fs::read_to_string(self.dir.path().join("serve.log"));
            assert!(
                status.success(),
                "the node exits 0 on SIGTERM: {status}, {log:?}"
            );
        }
    }

    /// A bench that fails half-way leaves no node running.
    impl Drop for NodeProcess {
        fn drop(&mut self) {
            if let Ok(None) = self.child.try_wait() {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }
    }
}
