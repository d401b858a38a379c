//! Cold start of `sandbox-host serve` with every shipped kind (docker, e2b,
//! steerable), from exec to the first answered call (`kinds` through the
//! node's socket): without a compile cache (the baseline, every component
//! compiled) and with a warm one, in the same run. The node's resident
//! memory at its first answer is printed beside the times.
//!
//! The engine kinds are granted the fixture's fake engine (a node checks
//! its engine before serving); e2b gets a dummy credential and is never
//! reached. The poll for the first answer sleeps 1 ms between attempts, so
//! a start is measured to within about 1 ms. Before criterion's group a
//! plain run alternates the two `OAC_BENCH_STARTS` times (default 5) and
//! prints the medians and their ratio; under `cargo test` (no `--bench`)
//! each runs once.

use criterion::{Criterion, SamplingMode};
use oac_fixtures::docker_engine::FakeDockerEngine;
use oac_fixtures::timing::median;
use sandbox_host::Budget;
use sandbox_host::transport::{Endpoint, NodeClient};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "cold-start-bench-token-0123456789";

/// A node configuration with every shipped kind, and where it listens.
struct Node {
    dir: tempfile::TempDir,
    /// Configuration without a compile cache.
    uncached: PathBuf,
    /// The same with a compile cache.
    cached: PathBuf,
}

impl Node {
    fn write(engine: &Path) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = |name: &str| dir.path().join(name).display().to_string();
        let secret = |name: &str, text: &str| {
            std::fs::write(dir.path().join(name), text).expect("secret");
            std::fs::set_permissions(
                dir.path().join(name),
                std::fs::Permissions::from_mode(0o600),
            )
            .expect("chmod");
        };
        secret("token", TOKEN);
        secret("e2b.key", r#"{"api_key":"e2b_cold_start_bench"}"#);
        std::fs::write(
            dir.path().join("seccomp.json"),
            r#"{"defaultAction":"SCMP_ACT_ERRNO"}"#,
        )
        .expect("seccomp");
        let plugins = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins");
        let engine_kind = |kind: &str| {
            format!(
                "[kinds.{kind}]\ndocker_socket = \"{}\"\n[kinds.{kind}.container_policy]\n\
                 image = \"sha256:{}\"\nnetwork = \"none\"\nseccomp_profile = \"{}\"\n\
                 cpus = 1.0\nmemory_mib = 256\n",
                engine.display(),
                "0".repeat(64),
                path("seccomp.json"),
            )
        };
        let config = format!(
            // Every kind, two of them Docker kinds whose calls may each
            // hold an upload: more than the default memory budget allows.
            "token_file = \"{}\"\ninstallation = \"cold-start-bench\"\nplugins = \"{}\"\n\
             registry = \"{}/test-registry.toml\"\n\
             memory_budget_mib = 20480\nstate_dir = \"{}\"\n[listen]\nunix = \"{}\"\n[log]\nlevel = \"warn\"\n\
             [kinds.e2b]\ncredential_file = \"{}\"\n[kinds.e2b.configuration]\n\
             template = \"oac-runtime:2c5d9a1e-8b3f-4c6d-9e7f-0a1b2c3d4e5f\"\napi_url = \"https://api.e2b-fixture.test\"\n\
             domain = \"e2b-fixture.test\"\ncpu_count = 2\nmemory_mb = 1024\n{}{}",
            path("token"),
            plugins.display(),
            plugins.display(),
            path("state"),
            path("node.sock"),
            path("e2b.key"),
            engine_kind("docker"),
            engine_kind("steerable"),
        );
        let uncached = dir.path().join("uncached.toml");
        std::fs::write(&uncached, &config).expect("config");
        let cached = dir.path().join("cached.toml");
        std::fs::write(
            &cached,
            format!("compile_cache = \"{}\"\n{config}", path("cache")),
        )
        .expect("config");
        Self {
            dir,
            uncached,
            cached,
        }
    }

    /// One start of `serve` with `config`: the time from exec to the first
    /// answered `kinds`, and the node's resident memory (KiB) then. The
    /// node is stopped with SIGTERM before this returns.
    async fn start(&self, config: &Path) -> (Duration, u64) {
        let socket = self.dir.path().join("node.sock");
        let log = std::fs::File::create(self.dir.path().join("serve.log")).expect("log");
        let client = NodeClient::new(&Endpoint::Unix(socket), TOKEN).expect("client");
        let budget = Budget::from_millis(5_000).expect("budget");
        let began = Instant::now();
        let mut serve = Command::new(env!("CARGO_BIN_EXE_sandbox-host"))
            .arg("serve")
            .arg("--config")
            .arg(config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("serve starts");
        loop {
            if client.kinds(budget).await.is_ok() {
                break;
            }
            if let Some(status) = serve.try_wait().expect("serve's status") {
                let log = std::fs::read_to_string(self.dir.path().join("serve.log"));
                panic!("serve exited ({status}) before answering: {log:?}");
            }
            if began.elapsed() > Duration::from_secs(120) {
                let _ = serve.kill();
                let log = std::fs::read_to_string(self.dir.path().join("serve.log"));
                panic!("serve did not answer within 120 s: {log:?}");
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let answered = began.elapsed();
        let status = std::fs::read_to_string(format!("/proc/{}/status", serve.id()))
            .expect("the node's status");
        let rss = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS");
        let stopped = Command::new("kill")
            .arg("-TERM")
            .arg(serve.id().to_string())
            .status()
            .expect("kill");
        assert!(stopped.success(), "SIGTERM sent");
        let status = serve.wait().expect("serve exits");
        assert!(status.success(), "serve exits 0 on SIGTERM: {status}");
        (answered, rss)
    }
}

/// The plain run: uncached and cached starts alternating, `starts` each.
fn report(rt: &tokio::runtime::Runtime, node: &Node, starts: usize) {
    let (mut uncached, mut cached) = (Vec::new(), Vec::new());
    for _ in 0..starts {
        uncached.push(rt.block_on(node.start(&node.uncached)));
        cached.push(rt.block_on(node.start(&node.cached)));
    }
    let millis = |starts: &[(Duration, u64)]| {
        starts
            .iter()
            .map(|(time, _)| format!("{:.0}", time.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!("cold start of serve, all kinds, exec to the first answer, {starts} alternating (ms)");
    println!("  no cache:      {}", millis(&uncached));
    println!("  compile cache: {}", millis(&cached));
    let time = |starts: &[(Duration, u64)]| median(starts.iter().map(|s| s.0).collect());
    let rss = |starts: &[(Duration, u64)]| median(starts.iter().map(|s| s.1).collect());
    let (cold, warm) = (time(&uncached), time(&cached));
    println!(
        "  medians: no cache {:.1} ms, compile cache {:.1} ms; ratio cached / uncached {:.3}",
        cold.as_secs_f64() * 1e3,
        warm.as_secs_f64() * 1e3,
        warm.as_secs_f64() / cold.as_secs_f64()
    );
    println!(
        "  resident memory at the first answer (median): no cache {} KiB, compile cache {} KiB",
        rss(&uncached),
        rss(&cached)
    );
    println!();
}

fn starts(c: &mut Criterion, rt: &tokio::runtime::Runtime, node: &Node) {
    let mut group = c.benchmark_group("cold_start");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1));
    for (name, config) in [
        ("baseline_no_cache", &node.uncached),
        ("compile_cache_warm", &node.cached),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += node.start(config).await.0;
                    }
                    total
                })
            })
        });
    }
    group.finish();
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test` runs this as a smoke test.
    let runs = oac_fixtures::timing::runs("OAC_BENCH_STARTS", 5);
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    let engine = rt.block_on(FakeDockerEngine::start()).expect("fake engine");
    let node = Node::write(engine.socket());
    // Fills the compile cache the cached starts read.
    rt.block_on(node.start(&node.cached));
    report(&rt, &node, runs);
    let mut criterion = Criterion::default().configure_from_args();
    starts(&mut criterion, &rt, &node);
    criterion.final_summary();
}
