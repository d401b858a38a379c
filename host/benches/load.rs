//! Loading a kind, the in-process part of a node's cold start: a new
//! engine (`Runtime`) and `Host::load` of the steerable component, once
//! compiling it (the baseline) and once reading it from a warm compile
//! cache, measured in the same run. The `cold_start` bench measures the
//! whole start of `serve` (exec, all kinds, the first answer).

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use oac_fixtures::docker_engine::FakeDockerEngine;
use sandbox_host::Runtime;
use sandbox_host::compile_cache::CompileCache;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// A new engine (from `cache` when given) and the steerable kind loaded
/// into a host; the time until the host is ready.
async fn load(socket: &Path, cache: Option<&Path>) -> Duration {
    let start = Instant::now();
    let runtime = match cache {
        Some(dir) => Runtime::with_compile_cache(CompileCache::open(dir).expect("cache")),
        None => Runtime::new(),
    }
    .expect("engine");
    let kinds = [("steerable", json!({ "action": "none" }))];
    let host = common::load_steered(runtime, socket, &kinds, None).await;
    let loaded = start.elapsed();
    assert_eq!(host.kinds().count(), 1, "the kind is loaded");
    loaded
}

fn loading(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    let engine = rt.block_on(FakeDockerEngine::start()).expect("fake engine");
    let cache = tempfile::tempdir().expect("cache dir");
    // Fills the cache the second case reads.
    rt.block_on(load(engine.socket(), Some(cache.path())));

    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    group.bench_function("baseline_compile_no_cache", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += load(engine.socket(), None).await;
                }
                total
            })
        })
    });
    group.bench_function("compile_cache_warm", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += load(engine.socket(), Some(cache.path())).await;
                }
                total
            })
        })
    });
    group.finish();
}

criterion_group!(benches, loading);
criterion_main!(benches);
