//! End to end against a real Docker Engine: the test component creates,
//! inspects and removes a labelled volume through the host's `docker`
//! capability. The engine comes from `OAC_DOCKER_SOCKET` (CI starts one with
//! `scripts/docker-engine.sh start`). Without it these tests print SKIPPED
//! and pass, unless `OAC_REQUIRE_DOCKER=1`, where they fail instead.

use crate::support::*;
use sandbox_host::capability::docker::names::AllocationNames;
use sandbox_host::host::Connect;
use sandbox_host::types::{Error, Reference};
use sandbox_host::{Budget, Host};
use serde_json::json;
use std::path::Path;

/// The `home` volume the host names for `allocation` (names are the
/// host's: a unique allocation gives unique names on a shared engine).
fn home_volume(allocation: &str) -> String {
    names_of(allocation).volumes[0].1.clone()
}

fn names_of(allocation: &str) -> AllocationNames {
    AllocationNames::of(
        INSTALLATION,
        &reference(allocation),
        &sandbox_host::registry::Policy::default().volume_roles,
    )
}

fn reference(allocation: &str) -> Reference {
    Reference::new("tenant", "env", allocation)
}

async fn host(socket: &Path, kinds: &[(&str, serde_json::Value)]) -> Host {
    steered(socket, kinds).loaded().await
}

fn budget() -> Budget {
    Budget::from_millis(30_000).expect("budget")
}

#[tokio::test]
async fn a_labelled_volume_is_created_inspected_and_removed_through_the_capability() {
    let Some(socket) = engine_socket("volume lifecycle") else {
        return;
    };
    let owner = unique("alloc");
    let volume = home_volume(&owner);
    let steer = |action: &str| json!({ "action": action, "volume": volume });
    let host = host(
        &socket,
        &[
            ("creator", steer("volume-create")),
            ("inspector", steer("volume-inspect")),
            ("remover", steer("volume-remove")),
        ],
    )
    .await;
    let allocation = reference(&owner);
    // Each kind acts in its GetInfo.
    let get_info = |kind: &str, allocation: Reference| {
        host.kind(kind)
            .expect("a loaded kind")
            .get_info(allocation, budget())
    };

    let created = get_info("creator", allocation.clone())
        .await
        .expect("volume created");
    assert_eq!(created.provider_id.as_deref(), Some(volume.as_str()));
    assert_eq!(created.reference, allocation);

    let seen = engine_client(&socket)
        .inspect_volume(&volume)
        .await
        .expect("volume exists on the engine");
    for (key, value) in [
        ("io.oac.installation", INSTALLATION),
        ("io.oac.tenant", "tenant"),
        ("io.oac.environment", "env"),
        ("io.oac.allocation", owner.as_str()),
    ] {
        assert_eq!(
            seen.labels.get(key).map(String::as_str),
            Some(value),
            "{key}"
        );
    }

    let inspected = get_info("inspector", allocation.clone())
        .await
        .expect("owned volume inspected");
    assert_eq!(inspected.provider_id.as_deref(), Some(volume.as_str()));
    assert_eq!(
        get_info("inspector", reference("alloc-2")).await,
        Err(Error::Ownership),
        "another allocation does not own it"
    );

    get_info("remover", allocation.clone())
        .await
        .expect("owned volume removed");
    assert!(
        engine_client(&socket)
            .inspect_volume(&volume)
            .await
            .is_err(),
        "volume is gone"
    );
    assert_eq!(
        get_info("inspector", allocation).await,
        Err(Error::NotFound)
    );
}

#[tokio::test]
async fn a_foreign_volume_on_a_real_engine_is_never_removed() {
    let Some(socket) = engine_socket("foreign volume") else {
        return;
    };
    let volume = unique("oac-foreign");
    let engine = engine_client(&socket);
    create_foreign_volume(&engine, &volume).await;
    let host = host(
        &socket,
        &[(
            "remover",
            json!({ "action": "volume-remove", "volume": volume }),
        )],
    )
    .await;
    assert_eq!(
        host.kind("remover")
            .expect("a loaded kind")
            .get_info(reference("a"), budget())
            .await,
        Err(Error::Ownership)
    );
    assert!(
        engine.inspect_volume(&volume).await.is_ok(),
        "foreign volume untouched"
    );
    remove_volume(&engine, &volume).await;
}

#[tokio::test]
async fn an_engine_that_does_not_answer_fails_construction() {
    let outcome = TestHost::one(
        steerable("steerable"),
        binding(Some("/nonexistent/docker.sock".into()), json!({})),
    )
    .load(Connect::Capabilities)
    .await;
    assert!(matches!(
        outcome,
        Err(sandbox_host::HostError::Docker { .. })
    ));
}

#[tokio::test]
async fn an_engine_older_than_api_1_45_is_refused_at_construction() {
    let engine = FakeEngine::start_with_api("1.44").await;
    let outcome = TestHost::one(
        steerable("steerable"),
        binding(Some(engine.socket.clone()), json!({})),
    )
    .load(Connect::Capabilities)
    .await;
    assert!(matches!(
        outcome,
        Err(sandbox_host::HostError::Docker {
            error: sandbox_host::capability::docker::DockerConnectError::TooOld,
            ..
        })
    ));
    let current = FakeEngine::start_with_api("1.45").await;
    assert!(
        TestHost::one(
            steerable("steerable"),
            binding(Some(current.socket.clone()), json!({}))
        )
        .load(Connect::Capabilities)
        .await
        .is_ok()
    );
}

/// Records every native request and injects one fault into the first
/// request with the given action.
#[derive(Debug, Default)]
struct Faulty {
    seen: std::sync::Mutex<Vec<String>>,
    inject: Option<(&'static str, sandbox_host::testing::Fault)>,
}

impl sandbox_host::testing::NativeHook for Faulty {
    fn on_request(
        &self,
        request: &sandbox_host::testing::NativeRequest,
    ) -> Option<sandbox_host::testing::Fault> {
        let mut seen = self.seen.lock().expect("lock");
        seen.push(request.action.to_string());
        let first = seen
            .iter()
            .filter(|action| *action == request.action.name())
            .count()
            == 1;
        self.inject
            .filter(|(action, _)| first && *action == request.action.name())
            .map(|(_, fault)| fault)
    }
}

async fn faulted(
    socket: &Path,
    allocation: &str,
    fault: sandbox_host::testing::Fault,
) -> (Result<sandbox_host::types::Info, Error>, Vec<String>) {
    let volume = home_volume(allocation);
    let hook = std::sync::Arc::new(Faulty {
        inject: Some(("volume-create", fault)),
        ..Default::default()
    });
    let mut binding = binding(
        Some(socket.to_path_buf()),
        json!({ "action": "volume-create", "volume": volume }),
    );
    binding.hook = Some(hook.clone());
    let host = TestHost::one(steerable("steerable"), binding)
        .loaded()
        .await;
    let answer = host
        .kind("steerable")
        .expect("a loaded kind")
        .get_info(
            reference(allocation),
            Budget::from_millis(2_000).expect("budget"),
        )
        .await;
    let seen = hook.seen.lock().expect("lock").clone();
    (answer, seen)
}

#[tokio::test]
async fn injected_faults_act_at_the_capability_boundary() {
    use sandbox_host::testing::Fault;
    let Some(socket) = engine_socket("capability faults") else {
        return;
    };
    let engine = engine_client(&socket);

    let allocation = unique("fault-before");
    let volume = home_volume(&allocation);
    let (answer, seen) = faulted(&socket, &allocation, Fault::FailBeforeDispatch).await;
    assert_eq!(
        (answer, seen),
        (
            Err(Error::ComputeUnconfirmed),
            // The host looks for a volume of the name first (only one it
            // did not find is its call's own fresh volume).
            vec!["volume-inspect".to_string(), "volume-create".to_string()]
        )
    );
    assert!(engine.inspect_volume(&volume).await.is_err(), "never sent");

    for fault in [Fault::LoseResponse, Fault::CancelAfterDispatch] {
        let allocation = unique("fault-after");
        let volume = home_volume(&allocation);
        let (answer, _) = faulted(&socket, &allocation, fault).await;
        assert_eq!(answer, Err(Error::ComputeUnconfirmed), "{fault:?}");
        assert!(
            engine.inspect_volume(&volume).await.is_ok(),
            "{fault:?}: the request took effect"
        );
        remove_volume(&engine, &volume).await;
    }
}

/// A component that asks the capability for as little as it can — a name
/// and a command — still gets a container under the whole policy, checked
/// from inside: the runtime user, no capabilities, no-new-privileges, the
/// seccomp filter, a read-only root and a read-only /proc/sys; and every
/// exec runs as the runtime user too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_that_asks_for_nothing_still_runs_under_the_policy() {
    let Some(fresh) = Fresh::on_engine("policy from inside", "hostile").await else {
        return;
    };
    let container = fresh.names().container;
    let probe = "id -u; id -g; grep -E '^(CapEff|CapPrm|NoNewPrivs|Seccomp):' /proc/self/status; \
                 grep ' /proc/sys ' /proc/mounts | cut -d' ' -f4 | cut -d, -f1; \
                 touch /rootfs-probe 2>/dev/null && echo root-writable || echo root-read-only";
    let steering = json!({
        "action": "run",
        "container": container,
        "cmd": ["sleep", "600"],
        "args": ["sh", "-c", probe],
    });
    let answer = fresh.steered(steering).await;
    remove_containers(&fresh.engine, &[container]).await;
    let seen = answer.expect("ran").provider_id.expect("stdout");
    let lines: Vec<Vec<&str>> = seen
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines,
        vec![
            vec!["1000"],
            vec!["1000"],
            vec!["CapPrm:", "0000000000000000"],
            vec!["CapEff:", "0000000000000000"],
            vec!["NoNewPrivs:", "1"],
            vec!["Seccomp:", "2"],
            vec!["ro"],
            vec!["root-read-only"],
        ],
        "{seen}"
    );
}

/// The planted-link attack: a started container links `/data/x` to `/etc`
/// in its volume, then the component uploads through the link into it,
/// and into a second (unstarted) container that replaces it on the same
/// volume. The
/// engine follows links when it extracts, so the host uploads only into a
/// container its call made on volumes it made and never started: both are
/// refused, and the read-only root never sees the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_never_follows_a_planted_link() {
    let Some(fresh) = Fresh::on_engine("planted link", "planted").await else {
        return;
    };
    let (engine, container) = (&fresh.engine, fresh.names().container);
    let volume = home_volume(&fresh.allocation);
    let entry = |path: &str, kind: tar::EntryType, mode: u32, data: &[u8]| {
        let mut archive = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_size(data.len() as u64);
        header.set_mode(mode);
        header.set_uid(1000);
        header.set_gid(1000);
        header.set_cksum();
        archive
            .append_data(&mut header, path, data)
            .expect("tar entry");
        archive.into_inner().expect("tar")
    };
    // A directory the runtime user may write, uploaded before the start.
    let setup = entry("w", tar::EntryType::Directory, 0o755, b"");
    let archive = entry("oac-pwned", tar::EntryType::Regular, 0o644, b"pwned\n");
    let steering = json!({
        "action": "plant-then-upload",
        "container": container,
        "volume": volume,
        "mounts": [{ "volume": volume, "target": "/data" }],
        "cmd": ["sleep", "600"],
        "setup": setup,
        "setup_path": "/data",
        "args": ["ln", "-s", "/etc", "/data/w/x"],
        "path": "/data/w/x",
        "archive": archive,
    });
    let answer = fresh.steered(steering).await;
    // The allocation's one container is now the second, never started:
    // start it here, outside the host, to look at its root.
    let _ = engine
        .start_container(
            &container,
            None::<bollard::query_parameters::StartContainerOptions>,
        )
        .await;
    let (_, etc) = engine_sh(engine, &container, "ls /etc/oac-pwned 2>&1; echo $?").await;
    remove_containers(engine, std::slice::from_ref(&container)).await;
    let _ = engine
        .remove_volume(
            &volume,
            None::<bollard::query_parameters::RemoveVolumeOptions>,
        )
        .await;
    let outcomes = answer
        .expect("the attack ran")
        .provider_id
        .expect("outcomes");
    assert_eq!(
        outcomes, "Error::Invalid,Error::Invalid",
        "both uploads refused"
    );
    assert!(
        etc.trim_end().ends_with('1'),
        "/etc/oac-pwned exists: {etc}"
    );
}

/// A fresh allocation on the real engine, the runtime image imported, for
/// steering the component under the policy without nesting.
struct Fresh {
    socket: std::path::PathBuf,
    engine: bollard::Docker,
    image: String,
    allocation: String,
}

impl Fresh {
    /// `None`: no engine, the test is skipped.
    async fn on_engine(test: &str, prefix: &str) -> Option<Self> {
        let socket = engine_socket(test)?;
        let engine = engine_client(&socket);
        let image = runtime_image_id(&engine).await;
        Some(Self {
            socket,
            engine,
            image,
            allocation: unique(prefix),
        })
    }

    fn names(&self) -> AllocationNames {
        names_of(&self.allocation)
    }

    /// One GetInfo of the steerable kind steered by `steering`.
    async fn steered(
        &self,
        steering: serde_json::Value,
    ) -> Result<sandbox_host::types::Info, Error> {
        let mut binding = binding(Some(self.socket.clone()), steering);
        binding.docker.policy = Some(policy_with(&self.image, &seccomp_profile(), false));
        let host = TestHost::one(steerable("steerable"), binding)
            .loaded()
            .await;
        host.kind("steerable")
            .expect("a loaded kind")
            .get_info(reference(&self.allocation), budget())
            .await
    }
}
