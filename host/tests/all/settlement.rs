//! Settlement evidence (contract 0.2) with the real Docker adapter against
//! the fake engine, in process and through a node: an observation or a Kill
//! never settles a Create; operations on one reference take turns, so a
//! GetInfo sent while a Create is stalled waits for it and a queued
//! mutation whose budget ends never runs; cleanup after a lost Create
//! response; partial volumes; a container made without the policy; and
//! input the contract refuses, before any native request.

use crate::support::*;
use oac_fixtures::docker_engine::Hold;
use sandbox_host::provider::SandboxProvider;
use sandbox_host::registry;
use sandbox_host::testing::{Fault, NativeHook, NativeRequest};
use sandbox_host::transport::RemoteProvider;
use sandbox_host::types::{
    Bootstrap, Command, Error, Failure, Info, LifecycleState, NetworkAccess, Reference,
};
use sandbox_host::{Host, NodeBinding};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn reference(allocation: &str) -> Reference {
    Reference::new("tenant", "env", allocation)
}

fn bootstrap(allocation: &str) -> Bootstrap {
    sandbox_host::testing::bootstrap(reference(allocation), "credential")
}

/// The Docker kind against a fake engine holding the policy's image.
struct Docker {
    host: Arc<Host>,
    engine: FakeEngine,
}

impl Docker {
    async fn start(hook: Option<Arc<dyn NativeHook>>) -> Self {
        let engine = FakeEngine::start().await;
        engine.insert_image("oac-test-runtime:test", NO_IMAGE);
        let row = registry::builtin()
            .into_iter()
            .find(|row| row.kind == "docker")
            .expect("docker kind");
        let binding = NodeBinding {
            installation_id: INSTALLATION.into(),
            docker: sandbox_host::capability::docker::Binding {
                socket: Some(engine.socket.clone()),
                policy: Some(policy_with(NO_IMAGE, SMALL_SECCOMP, false)),
            },
            configuration: json!({}),
            hook,
            ..Default::default()
        };
        let host = TestHost::one(row, binding).loaded().await;
        engine.clear_requests();
        Self {
            host: Arc::new(host),
            engine,
        }
    }

    fn kind(&self) -> &sandbox_host::Kind {
        self.host.kind("docker").expect("docker kind")
    }

    fn count(&self, request: &str) -> usize {
        self.engine
            .recorded()
            .iter()
            .filter(|r| r.as_str() == request)
            .count()
    }
}

/// The provider under test: the in-process kind, or the proxy to a node.
async fn each_path(test: impl AsyncFn(&Docker, &dyn Provider, &str)) {
    let local = Docker::start(None).await;
    test(&local, &InProcess(local.host.clone()), "in-process").await;
    let remote = Docker::start(None).await;
    let served = TestNode::builder(remote.host.clone()).start().await;
    let proxy = served.proxy("docker").await;
    test(&remote, &Remote(proxy), "through the node").await;
}

/// The operations these tests need, object-safe so one test body serves
/// both paths.
trait Provider {
    fn create(&self, b: Bootstrap, ms: u32) -> BoxFuture<'_, Result<Info, Failure>>;
    fn get_info(&self, r: Reference, ms: u32) -> BoxFuture<'_, Result<Info, Error>>;
    fn renew(&self, r: Reference, ms: u32) -> BoxFuture<'_, Result<Info, Failure>>;
    fn kill(&self, r: Reference, ms: u32) -> BoxFuture<'_, Result<Info, Failure>>;
    fn run(&self, r: Reference, c: Command, ms: u32) -> BoxFuture<'_, Result<Vec<u8>, Error>>;
}

type BoxFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>>;

struct InProcess(Arc<Host>);
struct Remote(RemoteProvider);

macro_rules! provider_via {
    ($type:ty, $provider:expr) => {
        impl Provider for $type {
            fn create(&self, b: Bootstrap, ms: u32) -> BoxFuture<'_, Result<Info, Failure>> {
                Box::pin(async move { $provider(self).create(b, budget(ms)).await })
            }
            fn get_info(&self, r: Reference, ms: u32) -> BoxFuture<'_, Result<Info, Error>> {
                Box::pin(async move { $provider(self).get_info(r, budget(ms)).await })
            }
            fn renew(&self, r: Reference, ms: u32) -> BoxFuture<'_, Result<Info, Failure>> {
                Box::pin(async move { $provider(self).renew(r, budget(ms)).await })
            }
            fn kill(&self, r: Reference, ms: u32) -> BoxFuture<'_, Result<Info, Failure>> {
                Box::pin(async move { $provider(self).kill(r, budget(ms)).await })
            }
            fn run(
                &self,
                r: Reference,
                c: Command,
                ms: u32,
            ) -> BoxFuture<'_, Result<Vec<u8>, Error>> {
                Box::pin(async move {
                    $provider(self)
                        .run_command(r, c, budget(ms))
                        .await
                        .map(|result| result.stdout)
                })
            }
        }
    };
}

fn in_process(p: &InProcess) -> &sandbox_host::Kind {
    p.0.kind("docker").expect("kind")
}

fn remote(p: &Remote) -> &RemoteProvider {
    &p.0
}

provider_via!(InProcess, in_process);
provider_via!(Remote, remote);

/// Creates `a` with its archive upload held, running `meanwhile` (which
/// releases the hold) once the upload has arrived: the Create's answer and
/// what `meanwhile` returned.
async fn while_create_held<T>(
    docker: &Docker,
    provider: &dyn Provider,
    meanwhile: impl AsyncFnOnce(&Hold) -> T,
) -> (Result<Info, Failure>, T) {
    let hold = docker.engine.hold("PUT", "/archive");
    tokio::join!(provider.create(bootstrap("a"), 10_000), async {
        hold.arrived(1).await;
        meanwhile(&hold).await
    })
}

/// Runs `create` with its archive upload held, and leaves it (drops its
/// future) 500 ms in, once the upload has arrived: the hold, to release.
async fn leave_a_held_create(
    docker: &Docker,
    create: impl Future<Output = Result<Info, Failure>>,
) -> Hold {
    let hold = docker.engine.hold("PUT", "/archive");
    let left = tokio::time::timeout(Duration::from_millis(500), create);
    let (left, ()) = tokio::join!(left, hold.arrived(1));
    assert!(left.is_err(), "the caller left before the answer");
    hold
}

/// `killed` (a Kill's answer) is absence, which a Kill alone never settles.
fn assert_absent_unsettled(killed: &Info, why: &str) {
    assert_eq!(
        (killed.state, killed.create_settled),
        (LifecycleState::Absent, false),
        "{why}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observation_or_a_kill_never_settles_a_create() {
    each_path(async |docker, provider, path| {
        let created = provider
            .create(bootstrap("a"), 5_000)
            .await
            .expect("create");
        assert!(
            created.create_settled,
            "{path}: Create's own success is settled"
        );
        let id = created.provider_id.clone();
        let seen = provider
            .get_info(reference("a"), 5_000)
            .await
            .expect("get-info");
        assert_eq!(
            (seen.state, seen.provider_id.clone(), seen.create_settled),
            (LifecycleState::Running, id.clone(), false),
            "{path}: an observation of an existing container never settles"
        );
        let renewed = provider.renew(reference("a"), 5_000).await.expect("renew");
        assert!(!renewed.create_settled, "{path}: renew observes");
        let killed = provider.kill(reference("a"), 5_000).await.expect("kill");
        assert_absent_unsettled(
            &killed,
            &format!("{path}: a Kill alone is not terminal proof"),
        );
        let again = provider
            .kill(reference("a"), 5_000)
            .await
            .expect("kill again");
        assert!(!again.create_settled, "{path}: nor a second one");
        assert_eq!(
            provider.get_info(reference("a"), 5_000).await,
            Err(Error::NotFound),
            "{path}"
        );
        assert!(docker.engine.containers().is_empty(), "{path}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_info_sent_during_a_stalled_create_waits_for_it() {
    each_path(async |docker, provider, path| {
        let (create, get_info) = while_create_held(docker, provider, async |hold| {
            // The Create is mid-way: its container exists, unstarted.
            assert_eq!(docker.engine.containers().len(), 1, "{path}");
            let asked = provider.get_info(reference("a"), 10_000);
            let waiting = tokio::time::timeout(Duration::from_millis(300), asked).await;
            assert!(waiting.is_err(), "{path}: GetInfo waits for the Create");
            let (seen, ()) = tokio::join!(provider.get_info(reference("a"), 10_000), async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                hold.release();
            });
            seen
        })
        .await;
        let created = create.expect("the Create ends once released");
        let seen = get_info.expect("get-info");
        assert_eq!(
            (seen.state, seen.provider_id, seen.create_settled),
            (LifecycleState::Running, created.provider_id, false),
            "{path}: observed after the Create ended"
        );
        assert_eq!(docker.count("POST /containers/create"), 1, "{path}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_mutation_whose_budget_ends_never_runs() {
    each_path(async |docker, provider, path| {
        let (create, (kill, before, after)) = while_create_held(docker, provider, async |hold| {
            let before = docker.engine.recorded().len();
            let kill = provider.kill(reference("a"), 300).await;
            let after = docker.engine.recorded().len();
            hold.release();
            (kill, before, after)
        })
        .await;
        assert_eq!(
            kill,
            Err(Failure::from(Error::ComputeUnconfirmed)),
            "{path}: the Kill's budget ended in the queue"
        );
        assert_eq!(before, after, "{path}: the queued Kill sent nothing");
        create.expect("the Create was not disturbed");
        assert_eq!(docker.engine.containers().len(), 1, "{path}");
        let recorded = docker.engine.recorded();
        assert!(
            !recorded.iter().any(|r| r.starts_with("DELETE ")),
            "{path}: {recorded:?}"
        );
    })
    .await;
}

/// The seeds' "cleanup after a lost Create response", through a node: the
/// caller of Create leaves while it is stalled; the node runs it to its end
/// in its turn; GetInfo waits for it and sees the container (unsettled);
/// Kill removes all three resources; exactly one container-create ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_after_a_lost_create_response() {
    let docker = Docker::start(None).await;
    let served = TestNode::builder(docker.host.clone()).start().await;
    let proxy = served.proxy("docker").await;
    let hold = leave_a_held_create(&docker, proxy.create(bootstrap("a"), budget(10_000))).await;
    let seen = tokio::spawn({
        let proxy = served.proxy("docker").await;
        async move { proxy.get_info(reference("a"), budget(10_000)).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !seen.is_finished(),
        "GetInfo waits for the abandoned Create"
    );
    hold.release();
    let seen = seen.await.expect("task").expect("get-info");
    assert_eq!(
        (seen.state, seen.create_settled),
        (LifecycleState::Running, false)
    );
    let killed = proxy
        .kill(reference("a"), budget(10_000))
        .await
        .expect("kill");
    assert_absent_unsettled(&killed, "the abandoned Create's container");
    assert!(docker.engine.containers().is_empty());
    assert!(docker.engine.volumes().is_empty());
    assert_eq!(docker.count("POST /containers/create"), 1);
}

/// Fails the container-create request before it is sent.
#[derive(Debug)]
struct FailContainerCreate;

impl NativeHook for FailContainerCreate {
    fn on_request(&self, request: &NativeRequest) -> Option<Fault> {
        (request.action.name() == "container-create").then_some(Fault::FailBeforeDispatch)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_volumes_are_not_found_and_kill_removes_them() {
    let docker = Docker::start(Some(Arc::new(FailContainerCreate))).await;
    let kind = docker.kind();
    let failed = kind.create(bootstrap("a"), budget(5_000)).await;
    assert!(
        matches!(&failed, Err(Failure { info: None, .. })),
        "{failed:?}"
    );
    assert_eq!(docker.engine.volumes().len(), 2, "both volumes exist");
    assert_eq!(
        kind.get_info(reference("a"), budget(5_000)).await,
        Err(Error::NotFound),
        "no container: not-found, never absence"
    );
    assert_eq!(docker.engine.volumes().len(), 2, "GetInfo removed nothing");
    let killed = kind
        .kill(reference("a"), budget(5_000))
        .await
        .expect("kill");
    assert_absent_unsettled(&killed, "the partial volumes");
    assert!(docker.engine.volumes().is_empty(), "Kill removed both");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_made_without_the_configured_limits_or_image_is_invalid_and_settled() {
    type Tamper = fn(&mut serde_json::Map<String, serde_json::Value>);
    let tamperings: [(&str, Tamper); 3] = [
        ("cpu", |body| {
            body["HostConfig"]["NanoCpus"] = json!(2_000_000_000)
        }),
        ("memory", |body| {
            body["HostConfig"]["Memory"] = json!(1 << 30)
        }),
        ("image", |body| body["Image"] = json!("other:latest")),
    ];
    for (name, tamper) in tamperings {
        let docker = Docker::start(None).await;
        let other = "sha256:0000000000000000000000000000000000000000000000000000000000000002";
        docker.engine.insert_image("other:latest", other);
        docker.engine.tamper_creates(tamper);
        let kind = docker.kind();
        let failed = kind.create(bootstrap("a"), budget(5_000)).await;
        let Err(Failure {
            error: Error::Invalid,
            info: Some(info),
        }) = failed
        else {
            panic!("{name}: {failed:?}");
        };
        assert_eq!(info.reference, reference("a"), "{name}");
        assert!(info.create_settled, "{name}: the Create ended here");
        assert_eq!(info.state, LifecycleState::Pending, "{name}: never started");
        let id = info.provider_id.expect("names its id");
        assert_eq!(id.len(), 64, "{name}: the full id");
        let recorded = docker.engine.recorded();
        assert!(
            !recorded
                .iter()
                .any(|r| r.ends_with("/start") || r.contains("/archive")),
            "{name}: {recorded:?}"
        );
        kind.kill(reference("a"), budget(5_000))
            .await
            .expect("Kill removes it");
        assert!(docker.engine.containers().is_empty(), "{name}");
    }
}

/// Every input the contract refuses is `invalid` with no native request, on
/// both paths.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_outside_the_contract_is_invalid_before_any_request() {
    let with = |change: fn(&mut Bootstrap)| {
        let mut b = bootstrap("a");
        change(&mut b);
        b
    };
    let bootstraps: Vec<(&str, Bootstrap)> = vec![
        (
            "empty allocation",
            with(|b| b.reference.allocation_id.clear()),
        ),
        (
            "slash in tenant",
            with(|b| b.reference.tenant_id = "a/b".into()),
        ),
        (
            "long environment",
            with(|b| b.reference.environment_id = "e".repeat(129)),
        ),
        ("empty session", with(|b| b.session_id.clear())),
        ("device with space", with(|b| b.device_id = "a b".into())),
        ("harness path", with(|b| b.harness = "../h".into())),
        ("empty credential", with(|b| b.daemon_credential.clear())),
        ("relative core url", with(|b| b.core_url = "core".into())),
        (
            "core url userinfo",
            with(|b| b.core_url = "https://u@core".into()),
        ),
        (
            "domains unrestricted",
            with(|b| b.allowed_domains = vec!["a.com".into()]),
        ),
        (
            "network the policy does not give",
            with(|b| b.network_access = NetworkAccess::Enabled),
        ),
        (
            "restricted network",
            with(|b| {
                b.network_access = NetworkAccess::Restricted;
                b.allowed_domains = vec!["example.com".into()];
            }),
        ),
    ];
    let command = |args: &[&str], directory: Option<&str>| Command {
        args: args.iter().map(|a| a.to_string()).collect(),
        directory: directory.map(Into::into),
        stdin: None,
    };
    let commands = [
        ("no args", command(&[], None)),
        ("nul arg", command(&["a\0"], None)),
        ("relative directory", command(&["true"], Some("tmp"))),
        ("dotdot directory", command(&["true"], Some("/a/.."))),
    ];
    each_path(async |docker, provider, path| {
        for (name, bad) in &bootstraps {
            assert_eq!(
                provider.create(bad.clone(), 5_000).await,
                Err(Failure::from(Error::Invalid)),
                "{path}: {name}"
            );
        }
        for (name, bad) in &commands {
            assert_eq!(
                provider.run(reference("a"), bad.clone(), 5_000).await,
                Err(Error::Invalid),
                "{path}: {name}"
            );
        }
        let bad_reference = reference("a b");
        assert_eq!(
            provider.get_info(bad_reference.clone(), 5_000).await,
            Err(Error::Invalid),
            "{path}"
        );
        assert_eq!(
            provider.kill(bad_reference.clone(), 5_000).await,
            Err(Failure::from(Error::Invalid)),
            "{path}"
        );
        assert_eq!(
            provider
                .run(bad_reference, command(&["true"], None), 5_000)
                .await,
            Err(Error::Invalid),
            "{path}"
        );
        assert_eq!(docker.engine.recorded(), Vec::<String>::new(), "{path}");
    })
    .await;
}

/// In process as on a node: a Create whose caller leaves (its future is
/// dropped) runs to its end in its turn, so the next GetInfo sees what it
/// finished, never a half-made allocation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_process_create_whose_caller_left_runs_to_its_end() {
    let docker = Docker::start(None).await;
    let kind = docker.kind();
    let hold = leave_a_held_create(&docker, kind.create(bootstrap("a"), budget(10_000))).await;
    let (seen, ()) = tokio::join!(kind.get_info(reference("a"), budget(10_000)), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        hold.release();
    });
    let seen = seen.expect("get-info");
    assert_eq!(
        (seen.state, seen.bootstrap_complete),
        (LifecycleState::Running, true),
        "the abandoned Create started its container"
    );
    assert_eq!(docker.count("POST /containers/create"), 1);
}

/// A Create whose budget ends while an engine request of it is in flight
/// answers unknown at its deadline, but keeps its allocation's turn until
/// that request has ended (the engine acts on it whether or not anyone
/// waits): a Kill sent next waits, sends nothing meanwhile, and then finds
/// and removes what the Create made. The guest never runs again: nothing
/// after the held request is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_never_overtakes_a_create_whose_budget_ended() {
    each_path(async |docker, provider, path| {
        let hold = docker.engine.hold("PUT", "/archive");
        let asked = std::time::Instant::now();
        let create = provider.create(bootstrap("a"), 600).await;
        assert_eq!(
            create.map_err(|failure| failure.error),
            Err(Error::ComputeUnconfirmed),
            "{path}"
        );
        assert!(
            asked.elapsed() < Duration::from_secs(3),
            "{path}: answered at its deadline, not when the work ended"
        );
        let before = docker.engine.recorded().len();
        let (kill, during) = tokio::join!(provider.kill(reference("a"), 10_000), async {
            tokio::time::sleep(Duration::from_millis(700)).await;
            let during = docker.engine.recorded().len();
            hold.release();
            during
        });
        assert_eq!(
            before, during,
            "{path}: the Kill overtook the Create's request"
        );
        let killed = kill.expect("the Kill runs once the Create's request ended");
        assert_eq!(killed.state, LifecycleState::Absent, "{path}");
        assert!(docker.engine.containers().is_empty(), "{path}");
        let recorded = docker.engine.recorded();
        let sent = |method: &str, tail: &str| {
            recorded
                .iter()
                .filter(|r| {
                    r.starts_with(method) && r.split('?').next().is_some_and(|p| p.ends_with(tail))
                })
                .count()
        };
        assert_eq!(sent("POST", "/start"), 0, "{path}: {recorded:?}");
        assert_eq!(
            sent("PUT", "/archive"),
            1,
            "{path}: one upload, {recorded:?}"
        );
    })
    .await;
}
