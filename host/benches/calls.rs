//! Per-call costs of the host, each next to a baseline measured in the same
//! run: a trivial operation (fresh instance + one export call), and a
//! trivial operation with one Docker capability call versus the same engine
//! request made directly with bollard. The engine is the fixtures' fake
//! Docker Engine, so the numbers isolate the host's overhead.

use criterion::{Criterion, criterion_group, criterion_main};
use oac_fixtures::docker_engine::FakeDockerEngine;
use sandbox_host::capability::docker::policy::{ContainerPolicy, PolicySettings};
use sandbox_host::host::Connect;
use sandbox_host::provider::SandboxProvider;
use sandbox_host::types::Reference;
use sandbox_host::{Budget, Host, NodeBinding, Registration, Runtime, registry};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The staged steerable test component under `kind`, steered by its
/// configuration, granted the engine at `socket`.
async fn load_steered(socket: &Path, kinds: &[(&str, serde_json::Value)]) -> Host {
    let row = registry::builtin()
        .into_iter()
        .find(|row| row.kind == "steerable")
        .expect("the builtin table has the steerable kind");
    let settings = PolicySettings {
        image: format!("sha256:{}", "0".repeat(64)),
        network: "none".into(),
        seccomp_profile: PathBuf::new(),
        cpus: 1.0,
        memory_mib: 256,
        pids_limit: 128,
        nested_sandbox: false,
    };
    let policy = ContainerPolicy::new(&settings, r#"{"defaultAction":"SCMP_ACT_ERRNO"}"#.into())
        .expect("policy");
    let table: Vec<Registration> = kinds
        .iter()
        .map(|(kind, _)| Registration {
            kind: kind.to_string(),
            ..row.clone()
        })
        .collect();
    let bindings = kinds
        .iter()
        .map(|(kind, configuration)| {
            let binding = NodeBinding {
                installation_id: "bench".into(),
                docker_socket: Some(socket.to_path_buf()),
                container_policy: Some(policy.clone()),
                configuration: configuration.clone(),
                credential: None,
                receipts: None,
                http_test_network: None,
                hook: None,
            };
            (kind.to_string(), binding)
        })
        .collect::<BTreeMap<_, _>>();
    let plugins = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins");
    Host::load(
        Runtime::new().expect("engine"),
        &table,
        &plugins,
        &bindings,
        Connect::Capabilities,
    )
    .await
    .expect("host loads (run `cargo xtask build-plugins` first)")
}

fn reference() -> Reference {
    Reference {
        tenant_id: "t".into(),
        environment_id: "e".into(),
        allocation_id: "a".into(),
    }
}

fn calls(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    let (engine, host) = rt.block_on(async {
        let engine = FakeDockerEngine::start().await.expect("fake engine");
        let kinds = [
            ("trivial", json!({ "action": "none" })),
            ("capability", json!({ "action": "version" })),
        ];
        let host = load_steered(engine.socket(), &kinds).await;
        (engine, host)
    });
    let direct = bollard::Docker::connect_with_unix(
        engine.socket().to_str().expect("path"),
        30,
        bollard::API_DEFAULT_VERSION,
    )
    .expect("bollard");
    let budget = Budget::from_millis(10_000).expect("budget");

    let host = Arc::new(host);
    // Each case runs its iterations inside one task on the runtime, as the
    // node's handlers and an async Core call: a call runs in its own task
    // (so a caller that leaves never cuts it short), which a caller on a
    // runtime worker hands over in that worker's own queue.
    let in_task = |iters: u64, call: Arc<dyn Fn() -> CallFuture + Send + Sync>| {
        rt.block_on(rt.spawn(async move {
            let start = Instant::now();
            for _ in 0..iters {
                call().await;
            }
            start.elapsed()
        }))
        .expect("bench task")
    };
    let get_info = |kind: &'static str| -> Arc<dyn Fn() -> CallFuture + Send + Sync> {
        let host = host.clone();
        Arc::new(move || {
            let host = host.clone();
            Box::pin(async move {
                host.kind(kind)
                    .expect("a loaded kind")
                    .get_info(reference(), budget)
                    .await
                    .expect("answered");
            })
        })
    };
    let mut group = c.benchmark_group("per_call");
    group.bench_function("baseline_bollard_version_direct", |b| {
        let direct = direct.clone();
        let version: Arc<dyn Fn() -> CallFuture + Send + Sync> = Arc::new(move || {
            let direct = direct.clone();
            Box::pin(async move {
                direct.version().await.expect("version");
            })
        });
        b.iter_custom(|iters| in_task(iters, version.clone()))
    });
    group.bench_function("host_get_info_trivial_fresh_instance", |b| {
        b.iter_custom(|iters| in_task(iters, get_info("trivial")))
    });
    group.bench_function("host_get_info_one_docker_call", |b| {
        b.iter_custom(|iters| in_task(iters, get_info("capability")))
    });
    // The same trivial call awaited from outside the runtime (block_on on
    // another thread): the call's task then wakes a parked worker, and its
    // end wakes the caller's thread.
    group.bench_function("host_get_info_trivial_from_outside_the_runtime", |b| {
        b.to_async(&rt).iter(|| async {
            host.kind("trivial")
                .expect("a loaded kind")
                .get_info(reference(), budget)
                .await
                .expect("trivial")
        })
    });
    group.finish();
}

/// One benchmarked call.
type CallFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

criterion_group!(benches, calls);
criterion_main!(benches);
