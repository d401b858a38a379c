//! Per-call costs of the host, each next to a baseline measured in the same
//! run: a trivial operation (fresh instance + one export call), and a
//! trivial operation with one Docker capability call versus the same engine
//! request made directly with bollard. The engine is the in-process fake
//! from the tests, so the numbers isolate the host's overhead.

#[path = "../tests/support/mod.rs"]
mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use sandbox_host::Budget;
use sandbox_host::types::Reference;
use serde_json::json;
use support::*;

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
        let engine = FakeEngine::start().await;
        let kinds = [
            ("trivial", json!({ "action": "none" })),
            ("capability", json!({ "action": "version" })),
        ];
        let host = load_steered(&engine.socket, &kinds).await;
        (engine, host)
    });
    let direct = bollard::Docker::connect_with_unix(
        engine.socket.to_str().expect("path"),
        30,
        bollard::API_DEFAULT_VERSION,
    )
    .expect("bollard");
    let budget = Budget::from_millis(10_000).expect("budget");

    let mut group = c.benchmark_group("per_call");
    group.bench_function("baseline_bollard_version_direct", |b| {
        b.to_async(&rt)
            .iter(|| async { direct.version().await.expect("version") })
    });
    group.bench_function("host_get_info_trivial_fresh_instance", |b| {
        b.to_async(&rt).iter(|| async {
            host.kind("trivial")
                .expect("a loaded kind")
                .get_info(reference(), budget)
                .await
                .expect("trivial")
        })
    });
    group.bench_function("host_get_info_one_docker_call", |b| {
        b.to_async(&rt).iter(|| async {
            host.kind("capability")
                .expect("a loaded kind")
                .get_info(reference(), budget)
                .await
                .expect("capability")
        })
    });
    group.finish();
}

criterion_group!(benches, calls);
criterion_main!(benches);
