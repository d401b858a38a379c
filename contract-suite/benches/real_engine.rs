//! Create → running on a real Docker Engine, through the node against the
//! same container started directly, measured in the same run.
//!
//! - `through_node`: `RemoteProvider::create` → the node's transport over
//!   a Unix socket → the `docker` component under the node's container
//!   policy (the suite's runtime image, no network, the assembled seccomp
//!   profile), which answers `running`.
//! - `baseline_direct`: what `docker run` of a container with the same
//!   settings sends, made with bollard: `containers/create` with the node's
//!   container's own `Config` and `HostConfig` (inspected; its two volumes
//!   renamed, so the engine creates them as `docker run` would), the same
//!   two bootstrap archives uploaded (the runtime's daemon exits without
//!   its bootstrap file), and `start`. The direct container and its volumes
//!   carry the bench's installation label (and no allocation's labels), so
//!   the sweep at the start of the next run removes what an interrupted
//!   run left.
//!
//! Every timed create is followed by an untimed cleanup (Kill through the
//! node; remove the direct container and its volumes). Before criterion's
//! groups a plain run alternates the two `OAC_BENCH_RUNS` times (default
//! 10) and prints the medians and their ratio.
//!
//! Needs `OAC_DOCKER_SOCKET` (a running engine, API ≥ 1.45) and the
//! upstream seccomp profile (`../shared/seccomp-upstream`, or
//! `OAC_SECCOMP_UPSTREAM`). Without them it prints SKIPPED and measures
//! nothing, unless `OAC_REQUIRE_DOCKER=1`, where it fails. Under
//! `cargo test` (no `--bench`) each side runs once.

mod common;

use bollard::Docker;
use bollard::models::{ContainerCreateBody, MountType};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, DownloadFromContainerOptionsBuilder,
    RemoveContainerOptionsBuilder, UploadToContainerOptionsBuilder,
};
use common::ServedNode;
use contract_suite::fixtures::Engine;
use criterion::{Criterion, SamplingMode};
use futures_util::TryStreamExt;
use oac_fixtures::timing::median;
use sandbox_host::provider::SandboxProvider;
use sandbox_host::types::{Bootstrap, LifecycleState, Reference};
use sandbox_host::{Budget, Host};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const INSTALLATION: &str = "oac-real-engine-bench";

fn budget() -> Budget {
    Budget::from_millis(60_000).expect("budget")
}

/// A fresh allocation per create, so no two creates share a resource.
fn next_reference() -> Reference {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    Reference::new(
        "bench-tenant",
        format!("bench-env-{n}"),
        format!("bench-alloc-{n}"),
    )
}

fn bootstrap(reference: Reference) -> Bootstrap {
    sandbox_host::testing::bootstrap(reference, "real-engine-bench-credential")
}

/// The node serving the `docker` kind on the real engine, a direct client,
/// and what the direct side replays of the node's container.
struct Fixture {
    node: ServedNode,
    engine: Engine,
    direct: Docker,
    /// The node's container's settings, its labels replaced by the bench's
    /// installation label.
    template: ContainerCreateBody,
    /// The archives Create uploads, as the node's container holds them:
    /// (path uploaded to, tar).
    archives: Vec<(&'static str, Vec<u8>)>,
}

/// The bench's installation label alone: what the sweep finds, and never
/// an allocation's (that takes all four labels).
fn installation_label() -> BTreeMap<String, String> {
    BTreeMap::from([(
        sandbox_host::contract::labels::INSTALLATION.to_string(),
        INSTALLATION.to_string(),
    )])
}

impl Fixture {
    async fn start(socket: PathBuf, seccomp_profile: &str) -> Self {
        let (engine, image) = Engine::real(&socket)
            .await
            .unwrap_or_else(|error| panic!("the real engine: {error}"));
        let host: Arc<Host> =
            Arc::new(common::docker_host(&engine, &image, seccomp_profile, INSTALLATION).await);
        let node = ServedNode::start(host, budget(), &tokio::runtime::Handle::current()).await;
        // The fixture's own client to the engine makes the direct requests.
        let Engine::Real { client: direct, .. } = &engine else {
            unreachable!("Engine::real answers a real engine")
        };
        let direct = direct.clone();
        common::sweep(&engine, INSTALLATION).await;

        // One create through the node shows what the direct side replays.
        let reference = next_reference();
        let created = node
            .remote
            .create(bootstrap(reference.clone()), budget())
            .await
            .expect("create through the node");
        let id = created.provider_id.expect("a native id");
        let inspected = direct
            .inspect_container(&id, None)
            .await
            .expect("the node's container");
        let mut config = serde_json::to_value(inspected.config.expect("config")).expect("json");
        let config = config.as_object_mut().expect("an object");
        config.insert("Labels".into(), serde_json::json!(installation_label()));
        config.insert(
            "HostConfig".into(),
            serde_json::to_value(inspected.host_config.expect("host config")).expect("json"),
        );
        let template: ContainerCreateBody =
            serde_json::from_value(serde_json::Value::Object(config.clone()))
                .expect("a create body");
        let home = download(&direct, &id, "/home/runtime").await;
        let environment = reroot(&download(&direct, &id, "/environment").await);
        node.remote
            .kill(reference, budget())
            .await
            .expect("kill through the node");
        Self {
            node,
            engine,
            direct,
            template,
            archives: vec![("/home", home), ("/environment", environment)],
        }
    }

    /// One Create through the node, until it answers `running`; then Kill.
    async fn through_node(&self) -> Duration {
        let reference = next_reference();
        let start = Instant::now();
        let created = self
            .node
            .remote
            .create(bootstrap(reference.clone()), budget())
            .await
            .expect("create through the node");
        let elapsed = start.elapsed();
        assert_eq!(created.state, LifecycleState::Running);
        self.node
            .remote
            .kill(reference, budget())
            .await
            .expect("kill through the node");
        elapsed
    }

    /// The same container created, given its files and started directly;
    /// then removed with its volumes.
    async fn direct(&self) -> Duration {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        // Unique per process: a run that stopped half-way leaves no name
        // this one needs.
        let name = format!(
            "oac-bench-direct-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut body = self.template.clone();
        let mut volumes = BTreeMap::new();
        for mount in body
            .host_config
            .as_mut()
            .and_then(|host| host.mounts.as_mut())
            .into_iter()
            .flatten()
        {
            if mount.typ == Some(MountType::VOLUME)
                && let Some(source) = mount.source.as_mut()
            {
                let count = volumes.len();
                let renamed = volumes
                    .entry(source.clone())
                    .or_insert_with(|| format!("{name}-{count}"));
                *source = renamed.clone();
                // The engine labels a volume it creates for a mount.
                mount
                    .volume_options
                    .get_or_insert_with(Default::default)
                    .labels = Some(installation_label().into_iter().collect());
            }
        }
        let start = Instant::now();
        let id = self
            .direct
            .create_container(
                Some(CreateContainerOptionsBuilder::default().name(&name).build()),
                body,
            )
            .await
            .expect("direct create")
            .id;
        for (path, archive) in &self.archives {
            self.direct
                .upload_to_container(
                    &id,
                    Some(
                        UploadToContainerOptionsBuilder::default()
                            .path(path)
                            .build(),
                    ),
                    bollard::body_full(archive.clone().into()),
                )
                .await
                .expect("direct upload");
        }
        self.direct
            .start_container(&id, None)
            .await
            .expect("direct start");
        let elapsed = start.elapsed();
        let running = self
            .direct
            .inspect_container(&id, None)
            .await
            .ok()
            .and_then(|container| container.state)
            .and_then(|state| state.running);
        assert_eq!(running, Some(true), "the direct container runs");
        self.direct
            .remove_container(
                &id,
                Some(RemoveContainerOptionsBuilder::default().force(true).build()),
            )
            .await
            .expect("direct remove");
        for volume in volumes.values() {
            self.direct
                .remove_volume(
                    volume,
                    None::<bollard::query_parameters::RemoveVolumeOptions>,
                )
                .await
                .expect("direct volume remove");
        }
        elapsed
    }

    /// Stops the node and removes anything of the bench's installation.
    async fn stop(self) {
        self.node.stop().await;
        common::sweep(&self.engine, INSTALLATION).await;
    }
}

/// A directory of a container as the engine archives it.
async fn download(engine: &Docker, id: &str, path: &str) -> Vec<u8> {
    let options = DownloadFromContainerOptionsBuilder::default()
        .path(path)
        .build();
    let chunks: Vec<_> = engine
        .download_from_container(id, Some(options))
        .try_collect()
        .await
        .expect("archive download");
    chunks.concat()
}

/// The archive of a directory re-rooted at the directory itself: its own
/// entry dropped and its name stripped from every other entry, as an
/// upload to that directory expects.
fn reroot(archive: &[u8]) -> Vec<u8> {
    let mut rerooted = tar::Builder::new(Vec::new());
    let mut entries = tar::Archive::new(archive);
    for entry in entries.entries().expect("tar") {
        let mut entry = entry.expect("tar entry");
        let path = entry.path().expect("entry path").into_owned();
        let inner: PathBuf = path.components().skip(1).collect();
        if inner.as_os_str().is_empty() {
            continue;
        }
        let mut header = entry.header().clone();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut data).expect("entry data");
        rerooted
            .append_data(&mut header, inner, data.as_slice())
            .expect("append");
    }
    rerooted.into_inner().expect("tar")
}

fn millis(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1e3)
}

/// The plain run: the two sides alternating, `runs` times each.
fn report(rt: &tokio::runtime::Runtime, fixture: &Fixture, runs: usize) {
    let (mut node, mut direct) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        node.push(rt.block_on(fixture.through_node()));
        direct.push(rt.block_on(fixture.direct()));
    }
    let list = |times: &[Duration]| {
        times
            .iter()
            .map(|time| format!("{:.0}", time.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!("create → running, real engine, {runs} alternating runs (ms)");
    println!("  through the node: {}", list(&node));
    println!("  direct:           {}", list(&direct));
    let (node, direct) = (median(node), median(direct));
    println!(
        "  medians: through the node {}, direct {}; ratio node / direct {:.2}",
        millis(node),
        millis(direct),
        node.as_secs_f64() / direct.as_secs_f64()
    );
    println!();
}

fn per_create(c: &mut Criterion, rt: &tokio::runtime::Runtime, fixture: &Fixture) {
    let mut group = c.benchmark_group("create_to_running");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1));
    for (name, through_node) in [("baseline_direct", false), ("through_node", true)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += if through_node {
                            fixture.through_node().await
                        } else {
                            fixture.direct().await
                        };
                    }
                    total
                })
            })
        });
    }
    group.finish();
}

fn main() {
    let (socket, seccomp_profile) = match common::real_engine() {
        Ok(found) => found,
        Err(missing) if std::env::var("OAC_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!("real_engine: OAC_REQUIRE_DOCKER=1 but {missing}")
        }
        Err(missing) => {
            println!("SKIPPED real_engine: {missing}; nothing measured");
            return;
        }
    };
    // `cargo bench` passes `--bench`; `cargo test` runs this as a smoke test.
    let runs = oac_fixtures::timing::runs("OAC_BENCH_RUNS", 10);
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    let fixture = rt.block_on(Fixture::start(socket, &seccomp_profile));
    report(&rt, &fixture, runs);
    let mut criterion = Criterion::default().configure_from_args();
    per_create(&mut criterion, &rt, &fixture);
    criterion.final_summary();
    rt.block_on(fixture.stop());
}
