//! Per-call costs of the host, each next to a baseline measured in the same
//! run: a trivial operation (fresh instance + one export call) versus a
//! bare instantiate + call of an empty export on the same engine, and a
//! trivial operation with one Docker capability call versus the same engine
//! request made directly with bollard. The engine is the fixtures' fake
//! Docker Engine, so the numbers isolate the host's overhead. Before
//! criterion's estimates, a plain run times every call on its own and
//! prints each case's median and p99, then the bare instantiation of each
//! built component (the bench's, the shipped adapters', the SDK's minimal
//! one and the bench-only `one-request`): a fresh instance's floor depends
//! on the component's shape.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use oac_fixtures::docker_engine::FakeDockerEngine;
use sandbox_host::provider::SandboxProvider;
use sandbox_host::{Budget, Runtime};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// The floor of a call: a component with one empty export and nothing
/// else, instantiated and called on the host's own engine (same pooling
/// allocator, epoch interruption and async support).
const EMPTY_COMPONENT: &str = r#"
(component
  (core module $m (func (export "noop")))
  (core instance $i (instantiate $m))
  (func (export "noop") (canon lift (core func $i "noop"))))
"#;

/// A built component (`target/plugins/<name>.wasm`) itself, every import
/// linked to a trap: instantiating it (and dropping the instance) is that
/// component's floor, without any host function, context or policing.
fn bare_provider(engine: &wasmtime::Engine, name: &str) -> wasmtime::component::InstancePre<()> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/plugins")
        .join(format!("{name}.wasm"));
    let component = wasmtime::component::Component::from_file(engine, path).expect("compiles");
    let mut linker = wasmtime::component::Linker::<()>::new(engine);
    linker
        .define_unknown_imports_as_traps(&component)
        .expect("traps");
    linker.instantiate_pre(&component).expect("links")
}

async fn bare_instantiate(pre: &wasmtime::component::InstancePre<()>) {
    let mut store = wasmtime::Store::new(pre.engine(), ());
    store.set_epoch_deadline(1_000);
    pre.instantiate_async(&mut store).await.expect("instance");
}

async fn bare_call(pre: &wasmtime::component::InstancePre<()>) {
    let mut store = wasmtime::Store::new(pre.engine(), ());
    store.set_epoch_deadline(1_000);
    let instance = pre.instantiate_async(&mut store).await.expect("instance");
    let noop = instance
        .get_typed_func::<(), ()>(&mut store, "noop")
        .expect("export");
    noop.call_async(&mut store, ()).await.expect("call");
}

fn calls(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    let runtime = Runtime::new().expect("engine");
    let (engine, host) = rt.block_on(async {
        let engine = FakeDockerEngine::start().await.expect("fake engine");
        let kinds = [
            ("trivial", json!({ "action": "none" })),
            ("capability", json!({ "action": "version" })),
        ];
        let host = common::load_steered(runtime.clone(), engine.socket(), &kinds, None).await;
        (engine, host)
    });
    let direct = bollard::Docker::connect_with_unix(
        engine.socket().to_str().expect("path"),
        30,
        bollard::API_DEFAULT_VERSION,
    )
    .expect("bollard");
    let budget = Budget::from_millis(10_000).expect("budget");
    let bare = {
        let engine = runtime.engine();
        let bytes = wat::parse_str(EMPTY_COMPONENT).expect("wat");
        let component = wasmtime::component::Component::new(engine, bytes).expect("compiles");
        let linker = wasmtime::component::Linker::<()>::new(engine);
        Arc::new(linker.instantiate_pre(&component).expect("links"))
    };
    let provider_floor = Arc::new(bare_provider(runtime.engine(), "steerable"));

    let host = Arc::new(host);
    // Each case runs its iterations inside one task on a runtime worker, as
    // a node's request handler does: a call is polled in its caller's task
    // (it moves to a task of its own only if its caller leaves).
    let in_task = |iters: u64, call: BenchedCall| {
        rt.block_on(rt.spawn(async move {
            let start = Instant::now();
            for _ in 0..iters {
                call().await;
            }
            start.elapsed()
        }))
        .expect("bench task")
    };
    let get_info = |kind: &'static str| -> BenchedCall {
        let host = host.clone();
        Arc::new(move || {
            let host = host.clone();
            Box::pin(async move {
                host.kind(kind)
                    .expect("a loaded kind")
                    .get_info(common::reference("a"), budget)
                    .await
                    .expect("answered");
            })
        })
    };
    let transport = sandbox_host::testing::DirectEngine::new(engine.socket());
    // The cases: (criterion's name, the plain run's name, the call).
    let cases: [(&str, &str, BenchedCall); 6] = [
        (
            "baseline_bare_instantiate_and_empty_call",
            "bare instantiate + empty call",
            {
                let bare = bare.clone();
                Arc::new(move || {
                    let bare = bare.clone();
                    Box::pin(async move { bare_call(&bare).await })
                })
            },
        ),
        (
            "baseline_bare_instantiate_provider_component",
            "bare provider instantiation",
            {
                let floor = provider_floor.clone();
                Arc::new(move || {
                    let floor = floor.clone();
                    Box::pin(async move { bare_instantiate(&floor).await })
                })
            },
        ),
        (
            "host_get_info_trivial_fresh_instance",
            "host trivial get-info",
            get_info("trivial"),
        ),
        (
            "baseline_bollard_version_direct",
            "bollard version, direct",
            {
                let direct = direct.clone();
                Arc::new(move || {
                    let direct = direct.clone();
                    Box::pin(async move {
                        direct.version().await.expect("version");
                    })
                })
            },
        ),
        (
            "host_get_info_one_docker_call",
            "host get-info, one request",
            get_info("capability"),
        ),
        (
            "baseline_host_engine_transport_version_direct",
            "host transport version, direct",
            {
                let transport = transport.clone();
                Arc::new(move || {
                    let transport = transport.clone();
                    Box::pin(async move {
                        assert!(transport.version().await, "version");
                    })
                })
            },
        ),
    ];

    // Medians and p99 of individual calls, the cases alternating in
    // rounds, before criterion's estimates (which are means of batches).
    let (rounds, per_round) = if common::measuring() {
        (10, 2_000)
    } else {
        (1, 20)
    };
    let calls: Vec<BenchedCall> = cases.iter().map(|(_, _, call)| call.clone()).collect();
    let timings = time_alternating(&rt, &calls, rounds, per_round);
    println!("per call, {rounds} rounds of {per_round} calls per case, cases alternating (µs)");
    let names: Vec<&str> = cases.iter().map(|(_, name, _)| *name).collect();
    print_table("case", &names, &timings);
    let micros = |time: std::time::Duration| time.as_secs_f64() * 1e6;
    let ratio = |over: usize, under: usize, q: f64| {
        micros(timings[over].percentile(q)) / micros(timings[under].percentile(q))
    };
    println!(
        "trivial / bare provider instantiation: p50 {:.2}, p99 {:.2}; \
         one request / direct bollard: p50 {:.2}, p99 {:.2}",
        ratio(2, 1, 0.50),
        ratio(2, 1, 0.99),
        ratio(4, 3, 0.50),
        ratio(4, 3, 0.99),
    );
    // The floor of one request through the host: the same request on the
    // host's own transport (no Wasm) plus one bare provider instantiation.
    for (label, q) in [("p50", 0.50), ("p99", 0.99)] {
        let host = micros(timings[4].percentile(q));
        let transport = micros(timings[5].percentile(q));
        let instantiation = micros(timings[1].percentile(q));
        println!(
            "one request, {label}: host {host:.1} µs = transport {transport:.1} + bare instantiation \
             {instantiation:.1} + {:.1} µs of the host's own",
            host - transport - instantiation
        );
    }
    println!();
    print_floor_by_component(&rt, runtime.engine(), rounds, per_round);

    let mut group = c.benchmark_group("per_call");
    for (name, _, call) in &cases {
        group.bench_function(*name, |b| {
            b.iter_custom(|iters| in_task(iters, call.clone()))
        });
    }
    // The same trivial call awaited from outside the runtime's workers
    // (criterion's `block_on` on the bench's own thread, where the call is
    // then polled).
    group.bench_function("host_get_info_trivial_from_outside_the_runtime", |b| {
        b.to_async(&rt).iter(|| async {
            host.kind("trivial")
                .expect("a loaded kind")
                .get_info(common::reference("a"), budget)
                .await
                .expect("trivial")
        })
    });
    group.finish();
}

/// The components whose floor [`print_floor_by_component`] prints: the
/// bench's steerable component (the floor of the ratio above), the shipped
/// adapters, the SDK's minimal adapter and the bench-only `one-request`
/// component the scale bench can use.
const FLOOR_COMPONENTS: [&str; 5] = ["steerable", "docker", "e2b", "minimal", "one_request"];

/// Prints each component's bare instantiation (median and p99, the
/// components alternating in rounds): what a fresh instance costs before
/// the host does anything depends on the component's shape (its core
/// instances, lowered imports, lifted exports and memory), so a trivial
/// call's floor is the component's as much as the host's.
fn print_floor_by_component(
    rt: &tokio::runtime::Runtime,
    engine: &wasmtime::Engine,
    rounds: usize,
    per_round: usize,
) {
    let floors: Vec<BenchedCall> = FLOOR_COMPONENTS
        .iter()
        .map(|name| {
            let floor = Arc::new(bare_provider(engine, name));
            Arc::new(move || {
                let floor = floor.clone();
                Box::pin(async move { bare_instantiate(&floor).await }) as CallFuture
            }) as BenchedCall
        })
        .collect();
    let timings = time_alternating(rt, &floors, rounds, per_round);
    println!("bare instantiation by component (every import a trap; µs)");
    print_table("component", &FLOOR_COMPONENTS, &timings);
    println!();
}

/// Times `calls` one by one, each in `rounds` rounds of `per_round` calls
/// in a task on the runtime's workers, the calls alternating round by
/// round (so a slow minute of the VM falls on all of them).
fn time_alternating(
    rt: &tokio::runtime::Runtime,
    calls: &[BenchedCall],
    rounds: usize,
    per_round: usize,
) -> Vec<common::Timings> {
    let mut timings: Vec<common::Timings> = calls.iter().map(|_| Default::default()).collect();
    for _ in 0..rounds {
        for (call, times) in calls.iter().zip(&mut timings) {
            let call = call.clone();
            let round = rt
                .block_on(rt.spawn(async move {
                    let mut round = common::Timings::default();
                    for _ in 0..per_round {
                        let start = Instant::now();
                        call().await;
                        round.push(start.elapsed());
                    }
                    round
                }))
                .expect("timing task");
            times.absorb(round);
        }
    }
    timings
}

/// Prints each name's median and p99 in µs, under a header naming the
/// first column `what`.
fn print_table(what: &str, names: &[&str], timings: &[common::Timings]) {
    let micros = |time: std::time::Duration| time.as_secs_f64() * 1e6;
    println!("{what:<32} {:>9} {:>9}", "p50", "p99");
    for (name, times) in names.iter().zip(timings) {
        println!(
            "{name:<32} {:>9.2} {:>9.2}",
            micros(times.percentile(0.50)),
            micros(times.percentile(0.99))
        );
    }
}

/// Makes one benchmarked call each time it is called.
type BenchedCall = Arc<dyn Fn() -> CallFuture + Send + Sync>;

/// One benchmarked call.
type CallFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

criterion_group!(benches, calls);
criterion_main!(benches);
