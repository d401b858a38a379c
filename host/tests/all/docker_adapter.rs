//! The Docker adapter against a real Docker Engine (real-engine tier): every
//! container setting by inspect and by probes inside the container, labels,
//! the bootstrap file, ownership, Kill, RunCommand, and a start whose
//! response is lost. The engine comes from `OAC_DOCKER_SOCKET`; without it
//! these tests print SKIPPED and pass, unless `OAC_REQUIRE_DOCKER=1`.

use crate::support::*;
use bollard::Docker;
use sandbox_host::registry::{self, Policy};
use sandbox_host::types::{
    Bootstrap, Command, Error, Failure, Info, LifecycleState, NetworkAccess, Reference,
};
use sandbox_host::{Budget, Host, Kind, NodeBinding};
use serde_json::json;
use sha2::Digest;
use std::path::Path;

const CANARY: &str = "canary-daemon-credential-7f3a";

/// The image is imported once per test binary.
async fn image(engine: &Docker) -> String {
    runtime_image_id(engine).await
}

/// The loaded docker kind.
fn docker(host: &Host) -> &Kind {
    host.kind("docker").expect("a loaded kind")
}

async fn adapter(socket: &Path, installation: &str) -> Host {
    adapter_with(socket, installation, false).await
}

async fn adapter_with(socket: &Path, installation: &str, nested_sandbox: bool) -> Host {
    let engine = engine_client(socket);
    let policy = policy_with(
        &image(&engine).await,
        &seccomp_profile_for(nested_sandbox),
        nested_sandbox,
    );
    load_docker(
        socket,
        installation,
        policy,
        json!({ "extra_hosts": ["core.internal:10.0.0.1"] }),
    )
    .await
}

/// The builtin docker kind under `policy`, with the adapter's `configuration`.
async fn load_docker(
    socket: &Path,
    installation: &str,
    policy: sandbox_host::capability::docker::policy::ContainerPolicy,
    configuration: serde_json::Value,
) -> Host {
    let mut row = registry::builtin()
        .into_iter()
        .find(|row| row.kind == "docker")
        .expect("docker kind");
    row.policy = Policy {
        default_budget_ms: 60_000,
        ..row.policy
    };
    let binding = NodeBinding {
        installation_id: installation.into(),
        docker: sandbox_host::capability::docker::Binding {
            socket: Some(socket.to_path_buf()),
            policy: Some(policy),
        },
        configuration,
        ..Default::default()
    };
    TestHost::one(row, binding).loaded().await
}

fn allocation(name: &str) -> Reference {
    Reference::new("tenant", "env", unique(name))
}

fn bootstrap(reference: &Reference) -> Bootstrap {
    Bootstrap {
        reference: reference.clone(),
        session_id: "session".into(),
        device_id: "device-1".into(),
        core_url: "https://core.example".into(),
        daemon_credential: CANARY.into(),
        harness: "harness-a".into(),
        network_access: NetworkAccess::Disabled,
        allowed_domains: vec![],
    }
}

/// The bootstrap file the adapter writes for [`bootstrap`].
fn bootstrap_record() -> String {
    format!(
        r#"{{"core_url":"https://core.example","daemon_credential":"{CANARY}","device_id":"device-1","harness":"harness-a","version":1}}"#
    )
}

fn budget() -> Budget {
    Budget::from_millis(60_000).expect("budget")
}

async fn run(
    host: &Host,
    reference: &Reference,
    args: &[&str],
    stdin: Option<Vec<u8>>,
) -> Result<sandbox_host::types::CommandResult, Error> {
    let command = Command {
        args: args.iter().map(|arg| arg.to_string()).collect(),
        directory: None,
        stdin,
    };
    docker(host)
        .run_command(reference.clone(), command, budget())
        .await
}

/// What GetInfo observes of `reference`, which must answer.
async fn observed(host: &Host, reference: &Reference) -> Info {
    docker(host)
        .get_info(reference.clone(), budget())
        .await
        .expect("observed")
}

async fn shell(host: &Host, reference: &Reference, script: &str) -> (String, i32) {
    let result = run(host, reference, &["sh", "-c", script], None)
        .await
        .expect("command runs");
    (
        String::from_utf8_lossy(&result.stdout).trim().to_string(),
        result.exit_code,
    )
}

/// Runs `test_body` on an allocation named `name` created on a real engine
/// (given the host, the engine, the allocation and what Create answered),
/// then kills it. Without an engine the test is skipped.
async fn with_running(
    name: &str,
    nested_sandbox: bool,
    test_body: impl AsyncFnOnce(&Host, &Docker, &Reference, &Info),
) {
    let Some(socket) = engine_socket(&format!("docker adapter {name}")) else {
        return;
    };
    let host = adapter_with(&socket, INSTALLATION, nested_sandbox).await;
    let reference = allocation(name);
    let created = docker(&host)
        .create(bootstrap(&reference), budget())
        .await
        .expect("created");
    test_body(&host, &engine_client(&socket), &reference, &created).await;
    cleanup(&host, &reference).await;
}

/// The adapter behind a recording [`proxy::Proxy`] to the real engine, a
/// client of the engine itself, and an allocation named `name` (`None`: no
/// engine, the test is skipped).
async fn behind_proxy(name: &str) -> Option<(proxy::Proxy, Host, Docker, Reference)> {
    let socket = engine_socket(&format!("docker adapter {name}"))?;
    let proxy = proxy::Proxy::start(socket.clone()).await;
    let host = adapter(&proxy.socket, INSTALLATION).await;
    Some((proxy, host, engine_client(&socket), allocation(name)))
}

/// The container name the adapter derives (read back from inspect by label).
async fn container_of(
    engine: &Docker,
    reference: &Reference,
) -> bollard::models::ContainerInspectResponse {
    let filters = std::collections::HashMap::from([(
        "label".to_string(),
        vec![format!("io.oac.allocation={}", reference.allocation_id)],
    )]);
    let options = bollard::query_parameters::ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    let list = engine.list_containers(Some(options)).await.expect("list");
    assert_eq!(list.len(), 1, "exactly one container for the allocation");
    engine
        .inspect_container(list[0].id.as_deref().expect("id"), None)
        .await
        .expect("inspect")
}

async fn cleanup(host: &Host, reference: &Reference) {
    let _ = docker(host).kill(reference.clone(), budget()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_applies_every_container_setting() {
    with_running("settings", false, async |host, engine, reference, info| {
        assert_eq!(
            (info.state, info.bootstrap_complete, info.create_settled),
            (LifecycleState::Running, true, true)
        );

        let inspected = container_of(engine, reference).await;
        assert_eq!(info.provider_id.as_deref(), inspected.id.as_deref());
        let config = inspected.config.clone().expect("config");
        let host_config = inspected.host_config.clone().expect("host config");
        assert_eq!(config.user.as_deref(), Some("1000:1000"));
        assert_eq!(
            config.working_dir.as_deref(),
            Some("/environment/workspace")
        );
        assert_eq!(
            config.cmd,
            Some(
                [
                    "oac-daemon",
                    "connect",
                    "--profile",
                    "default",
                    "--bootstrap-file",
                    "/home/runtime/runtime-bootstrap.json"
                ]
                .map(String::from)
                .to_vec()
            )
        );
        assert_eq!(host_config.readonly_rootfs, Some(true));
        assert_eq!(host_config.cap_drop, Some(vec!["ALL".to_string()]));
        let security = host_config.security_opt.clone().unwrap_or_default();
        assert!(
            security.contains(&"no-new-privileges".to_string()),
            "{security:?}"
        );
        assert!(security.contains(&"apparmor=unconfined".to_string()));
        // The profile without nesting: upstream's, the appended rule not in it.
        let seccomp = security
            .iter()
            .find_map(|option| option.strip_prefix("seccomp="))
            .expect("a seccomp profile");
        let profile: serde_json::Value = serde_json::from_str(seccomp).expect("JSON profile");
        assert!(!oac_seccomp::allows_nesting(&profile), "{seccomp:.200}");
        assert_eq!(
            profile,
            oac_fixtures::seccomp_profile::runtime_profile().expect("upstream"),
            "the node's profile, as it is"
        );
        assert_eq!(host_config.nano_cpus, Some(500_000_000));
        assert_eq!(host_config.memory, Some(256 << 20));
        assert_eq!(host_config.pids_limit, Some(128));
        assert_eq!(host_config.network_mode.as_deref(), Some("none"));
        assert_eq!(
            host_config.extra_hosts,
            Some(vec!["core.internal:10.0.0.1".to_string()])
        );
        assert_eq!(host_config.privileged, Some(false));
        let tmpfs = host_config.tmpfs.clone().unwrap_or_default();
        assert!(
            tmpfs
                .get("/tmp")
                .is_some_and(|options| options.contains(&format!("size={}", 128 << 20))),
            "{tmpfs:?}"
        );
        let mounts = host_config.mounts.clone().unwrap_or_default();
        let targets: Vec<_> = mounts
            .iter()
            .map(|m| {
                (
                    m.target.clone().unwrap_or_default(),
                    m.volume_options.as_ref().and_then(|o| o.subpath.clone()),
                )
            })
            .collect();
        assert!(targets.contains(&("/home".into(), None)));
        assert!(targets.contains(&("/environment".into(), None)));
        assert!(targets.contains(&("/workspace".into(), Some("workspace".into()))));
        assert!(
            mounts
                .iter()
                .all(|m| m.typ == Some(bollard::models::MountType::VOLUME))
        );

        // Probes from inside.
        assert_eq!(
            shell(host, reference, "id").await.0,
            "uid=1000(runtime) gid=1000(runtime) groups=1000(runtime)"
        );
        assert_ne!(
            shell(host, reference, "touch /rootfs-probe").await.1,
            0,
            "root filesystem is read-only"
        );
        let status = shell(host, reference, "cat /proc/self/status").await.0;
        for field in [
            ["NoNewPrivs:", "1"],
            ["CapEff:", "0000000000000000"],
            ["Seccomp:", "2"],
        ] {
            assert!(
                status
                    .lines()
                    .any(|l| l.split_whitespace().collect::<Vec<_>>() == field),
                "{field:?} in {status}"
            );
        }
        let (listed, code) = shell(
            host,
            reference,
            "echo probe > /workspace/p && cat /environment/workspace/p",
        )
        .await;
        assert_eq!(
            (listed.as_str(), code),
            ("probe", 0),
            "/workspace is the volume's workspace directory"
        );
        let (tmp, _) = shell(
            host,
            reference,
            "echo t > /tmp/t && cat /tmp/t; ls -ld /tmp; grep ' /tmp ' /proc/mounts",
        )
        .await;
        assert!(tmp.starts_with("t\n"), "/tmp writable: {tmp}");

        // The bootstrap file: byte-identical record, 0600, uid 1000; no credential elsewhere.
        let file = run(
            host,
            reference,
            &["cat", "/home/runtime/runtime-bootstrap.json"],
            None,
        )
        .await
        .expect("cat");
        assert_eq!(
            String::from_utf8_lossy(&file.stdout),
            bootstrap_record(),
            "the record, byte for byte"
        );
        assert_eq!(
            shell(
                host,
                reference,
                "stat -c '%a %u %g' /home/runtime/runtime-bootstrap.json"
            )
            .await
            .0,
            "600 1000 1000"
        );
        assert_eq!(
            shell(host, reference, "stat -c '%a %u' /home/runtime")
                .await
                .0,
            "700 1000"
        );
        let everything = serde_json::to_string(&inspected).expect("inspect json");
        assert!(!everything.contains(CANARY), "credential in inspect output");
        assert!(
            !shell(host, reference, "cat /proc/1/environ | tr '\\0' '\\n'")
                .await
                .0
                .contains(CANARY),
            "credential in env"
        );

        // Labels on all three resources.
        let labels = config.labels.clone().unwrap_or_default();
        for (key, value) in [
            ("io.oac.installation", INSTALLATION),
            ("io.oac.tenant", "tenant"),
            ("io.oac.environment", "env"),
            ("io.oac.allocation", reference.allocation_id.as_str()),
        ] {
            assert_eq!(
                labels.get(key).map(String::as_str),
                Some(value),
                "container {key}"
            );
            for mount in mounts
                .iter()
                .filter(|m| m.target.as_deref() != Some("/workspace"))
            {
                let volume = engine
                    .inspect_volume(mount.source.as_deref().expect("source"))
                    .await
                    .expect("volume");
                assert_eq!(
                    volume.labels.get(key).map(String::as_str),
                    Some(value),
                    "volume {key}"
                );
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_create_and_retained_volumes_are_exists() {
    let Some((proxy, host, engine, reference)) = behind_proxy("exists").await else {
        return;
    };
    let first = docker(&host)
        .create(bootstrap(&reference), budget())
        .await
        .expect("created");
    let again = docker(&host).create(bootstrap(&reference), budget()).await;
    // The existing compute is not evidence that its Create ended: the host
    // keeps no info a duplicate Create cannot prove settled.
    assert_eq!(again, Err(Failure::from(Error::Exists)));
    let seen = observed(&host, &reference).await;
    assert_eq!(seen.provider_id, first.provider_id);
    assert_eq!(
        proxy.count("POST", "/containers/create"),
        1,
        "{:?}",
        proxy.recorded()
    );

    let container = container_of(&engine, &reference).await;
    let options = bollard::query_parameters::RemoveContainerOptionsBuilder::default()
        .force(true)
        .build();
    engine
        .remove_container(container.id.as_deref().expect("id"), Some(options))
        .await
        .expect("removed by hand");
    let retained = docker(&host).create(bootstrap(&reference), budget()).await;
    assert_eq!(
        retained.map_err(|failure| failure.error),
        Err(Error::Exists),
        "retained volumes"
    );
    assert_eq!(proxy.count("POST", "/containers/create"), 1);
    cleanup(&host, &reference).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_removes_all_three_and_is_idempotent() {
    with_running("kill", false, async |host, engine, reference, _| {
        let container = container_of(engine, reference).await;
        let mut volumes: Vec<String> = container
            .mounts
            .unwrap_or_default()
            .into_iter()
            .filter_map(|m| m.name)
            .collect();
        volumes.sort();
        volumes.dedup();
        assert_eq!(volumes.len(), 2);
        let killed = docker(host)
            .kill(reference.clone(), budget())
            .await
            .expect("killed");
        assert_eq!(
            (killed.state, killed.provider_id.clone()),
            (LifecycleState::Absent, None)
        );
        assert!(
            engine
                .inspect_container(container.id.as_deref().expect("id"), None)
                .await
                .is_err()
        );
        for volume in &volumes {
            assert!(
                engine.inspect_volume(volume).await.is_err(),
                "{volume} removed"
            );
        }
        assert_eq!(
            docker(host).kill(reference.clone(), budget()).await,
            Ok(killed),
            "second kill succeeds"
        );
        assert_eq!(
            docker(host).get_info(reference.clone(), budget()).await,
            Err(Error::NotFound)
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_volume_with_the_allocations_name_is_never_touched() {
    let Some(socket) = engine_socket("docker adapter foreign") else {
        return;
    };
    let engine = engine_client(&socket);
    let host = adapter(&socket, INSTALLATION).await;
    let squat = allocation("squat");
    let (home, _) = sandbox_names(&socket, &squat).await;
    // A volume with this allocation's name, labelled for someone else.
    create_foreign_volume(&engine, &home).await;
    let created = docker(&host).create(bootstrap(&squat), budget()).await;
    assert_eq!(
        created.map_err(|f| (f.error, f.info)),
        Err((Error::Ownership, None))
    );
    assert_eq!(
        docker(&host)
            .kill(squat.clone(), budget())
            .await
            .map_err(|f| f.error),
        Err(Error::Ownership)
    );
    let kept = engine
        .inspect_volume(&home)
        .await
        .expect("foreign volume untouched");
    assert_eq!(
        kept.labels.get("io.oac.installation").map(String::as_str),
        Some("someone-else")
    );
    remove_volume(&engine, &home).await;
}

/// The home volume and container names the adapter derives for `reference`
/// under this installation, learned by creating and killing once.
async fn sandbox_names(socket: &Path, reference: &Reference) -> (String, String) {
    let host = adapter(socket, INSTALLATION).await;
    let engine = engine_client(socket);
    docker(&host)
        .create(bootstrap(reference), budget())
        .await
        .expect("probe create");
    let container = container_of(&engine, reference).await;
    let home = container
        .mounts
        .unwrap_or_default()
        .into_iter()
        .find(|m| m.destination.as_deref() == Some("/home"))
        .and_then(|m| m.name)
        .expect("home volume");
    docker(&host)
        .kill(reference.clone(), budget())
        .await
        .expect("probe kill");
    (home, container.name.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_keeps_bytes_streams_and_exit_codes() {
    with_running("run-command", false, async |host, _, reference, _| {
        let binary: Vec<u8> = (0..=255u8).chain([0, 0, 10, 0]).collect();
        let echoed = run(host, reference, &["cat"], Some(binary.clone()))
            .await
            .expect("cat");
        assert_eq!(echoed.stdout, binary, "stdin bytes, NULs and order kept");

        let large: Vec<u8> = (0..1_500_000u32).map(|i| (i % 251) as u8).collect();
        let digest = hex::encode(sha2::Sha256::digest(&large));
        let summed = run(host, reference, &["sha256sum"], Some(large))
            .await
            .expect("sha256sum");
        assert!(
            String::from_utf8_lossy(&summed.stdout).starts_with(&digest),
            "more than 1 MiB of stdin arrives intact"
        );

        let streams = run(
            host,
            reference,
            &["sh", "-c", "echo out; echo err >&2; exit 43"],
            None,
        )
        .await
        .expect("streams");
        assert_eq!(
            (
                streams.stdout.as_slice(),
                streams.stderr.as_slice(),
                streams.exit_code
            ),
            (&b"out\n"[..], &b"err\n"[..], 43)
        );

        let flood = run(
            host,
            reference,
            &["head", "-c", "1100000", "/dev/zero"],
            None,
        )
        .await;
        assert_eq!(
            flood,
            Err(Error::CommandUnconfirmed),
            "output past 1 MiB is never a truncated success"
        );
        let exact = run(
            host,
            reference,
            &["head", "-c", "1048576", "/dev/zero"],
            None,
        )
        .await
        .expect("exactly 1 MiB");
        assert_eq!(exact.stdout.len(), 1 << 20);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_start_response_settles_nothing_and_is_never_replayed() {
    let Some((proxy, host, _, reference)) = behind_proxy("lost-start").await else {
        return;
    };
    proxy.lose_response_of("POST", "/start");
    let created = docker(&host).create(bootstrap(&reference), budget()).await;
    match created {
        Err(Failure { error, info }) => {
            assert_eq!(error, Error::ComputeUnconfirmed);
            assert!(
                info.is_none_or(|info| !info.create_settled && !info.bootstrap_complete),
                "no invented settlement"
            );
        }
        Ok(info) => panic!("a lost response was reported as success: {info:?}"),
    }
    assert_eq!(proxy.count("POST", "/start"), 1);
    assert_eq!(
        proxy.count("POST", "/containers/create"),
        1,
        "{:?}",
        proxy.recorded()
    );
    // The start took effect.
    let seen = observed(&host, &reference).await;
    assert_eq!(
        (seen.state, seen.bootstrap_complete),
        (LifecycleState::Running, true)
    );
    assert_eq!(proxy.count("POST", "/start"), 1, "start never replayed");
    cleanup(&host, &reference).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_reports_readiness_and_a_missing_image() {
    let Some(socket) = engine_socket("docker adapter probe") else {
        return;
    };
    let host = adapter(&socket, INSTALLATION).await;
    assert_eq!(
        docker(&host).probe(budget()).await,
        Ok(vec![]),
        "engine, API, limits and image are ready"
    );
    let absent_image = policy_with(&format!("sha256:{}", "0".repeat(64)), SMALL_SECCOMP, false);
    let missing = load_docker(&socket, INSTALLATION, absent_image.clone(), json!({})).await;
    use sandbox_host::types::Diagnostic;
    assert_eq!(
        docker(&missing).probe(budget()).await,
        Ok(vec![Diagnostic::ImageUnavailable])
    );
    let broken = load_docker(
        &socket,
        INSTALLATION,
        absent_image,
        json!({ "image": "busybox" }),
    )
    .await;
    assert_eq!(
        docker(&broken).probe(budget()).await,
        Ok(vec![Diagnostic::ConfigurationInvalid]),
        "the adapter's configuration has no image: isolation is the host's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_sandbox_lifts_proc_masks_and_runs_an_init() {
    with_running("nested", true, async |host, engine, reference, _| {
        let host_config = container_of(engine, reference)
            .await
            .host_config
            .expect("host config");
        assert_eq!(
            host_config.masked_paths,
            Some(vec![
                "/sys/firmware".to_string(),
                "/sys/devices/virtual/powercap".to_string()
            ])
        );
        assert_eq!(host_config.init, Some(true));
        let (masked, _) = shell(host, reference, "grep -c ' /proc/kcore ' /proc/mounts").await;
        assert_eq!(masked, "0", "/proc/kcore is no longer masked");
        // The nested profile lets it build a sandbox of its own.
        let (_, nested) = shell(host, reference, NEW_NAMESPACES).await;
        assert_eq!(nested, 0, "new namespaces under nested_sandbox");
    })
    .await;
}

/// A user, mount and network namespace with a full capability set inside
/// (busybox's `unshare`, mapping the user to root in it).
const NEW_NAMESPACES: &str = "unshare -U -r -m -n true";

/// Without `nested_sandbox` the container gets the upstream profile as it
/// is: no new namespaces, so no capability set of its own either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_new_namespaces_without_nested_sandbox() {
    with_running("namespaces", false, async |host, _, reference, _| {
        let (_, code) = shell(host, reference, NEW_NAMESPACES).await;
        assert_ne!(
            code, 0,
            "a user namespace was created without nested_sandbox"
        );
        let (_, code) = shell(host, reference, "unshare -n true").await;
        assert_ne!(
            code, 0,
            "a network namespace was created without nested_sandbox"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_blocks_readiness_and_never_triggers_cleanup() {
    with_running("drift", false, async |host, engine, reference, _| {
        let ready = observed(host, reference).await;
        assert!(ready.bootstrap_complete);
        let id = container_of(engine, reference).await.id.expect("id");
        let update = bollard::models::ContainerUpdateBody {
            memory: Some(300 << 20),
            memory_swap: Some(-1),
            ..Default::default()
        };
        engine
            .update_container(&id, update)
            .await
            .expect("memory changed by hand");
        let drifted = observed(host, reference).await;
        assert_eq!(
            (drifted.state, drifted.bootstrap_complete),
            (LifecycleState::Running, false)
        );
        let renewed = docker(host)
            .renew(reference.clone(), budget())
            .await
            .expect("renew observes");
        assert!(!renewed.bootstrap_complete);
        assert_eq!(
            run(host, reference, &["true"], None).await,
            Err(Error::Invalid),
            "the host never execs into a container that does not carry the policy"
        );
        assert!(
            engine.inspect_container(&id, None).await.is_ok(),
            "nothing removed"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_reports_one_stats_sample() {
    with_running("observe", false, async |host, _, reference, created| {
        let target = sandbox_host::types::Target {
            reference: reference.clone(),
            provider_id: created.provider_id.clone(),
        };
        let sample = docker(host)
            .observe(target.clone(), budget())
            .await
            .expect("sample");
        assert_eq!(sample.memory_limit_bytes, 256 << 20);
        assert!(sample.memory_bytes > 0);
        assert!(sample.cpu_seconds.is_some_and(|seconds| seconds >= 0.0));
        assert_eq!(sample.cpus, 0.5);
        assert!(sample.started_at.is_some());
        let wrong = sandbox_host::types::Target {
            provider_id: Some("other".into()),
            ..target
        };
        assert_eq!(
            docker(host).observe(wrong, budget()).await,
            Err(Error::NotFound)
        );
    })
    .await;
}

/// A paused container is `paused`, never `running`, and its bootstrap is
/// not complete evidence while frozen; an observation never settles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_container_is_never_reported_running() {
    with_running("paused", false, async |host, engine, reference, _| {
        let id = container_of(engine, reference).await.id.expect("id");
        engine.pause_container(&id).await.expect("paused by hand");
        let seen = observed(host, reference).await;
        assert_eq!(
            (seen.state, seen.bootstrap_complete, seen.create_settled),
            (LifecycleState::Paused, false, false)
        );
        engine.unpause_container(&id).await.expect("unpaused");
    })
    .await;
}
