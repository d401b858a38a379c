//! A hostile component against the host's container policy. The steerable
//! test component asks the Docker capability for whatever the contract lets
//! it ask (and the tests steer it to ask badly); the engine is the contract
//! suite's stateful fake, so what reached it is checked literally, or a
//! deliberately hostile engine that answers with unbounded bodies and
//! frames. The real-engine side (settings seen from inside a container) is
//! in `docker_engine.rs`.

use crate::support::*;
use sandbox_host::capability::docker::names::AllocationNames;
use sandbox_host::testing::{Fault, NativeHook, NativeRequest};
use sandbox_host::types::{Error, Reference};
use sandbox_host::{Budget, Host};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

fn reference(allocation: &str) -> Reference {
    Reference::new("t", "e", allocation)
}

fn budget() -> Budget {
    Budget::from_millis(5_000).expect("budget")
}

/// The fake engine with the policy's image present.
async fn fake_engine() -> Arc<FakeDockerEngine> {
    let engine = FakeDockerEngine::start().await.expect("fake engine");
    engine.insert_image("oac-test-runtime:test", NO_IMAGE);
    Arc::new(engine)
}

/// The steerable kind, steered by `steering`, against `engine`, with `hook`.
async fn steered(
    engine: &FakeDockerEngine,
    installation: &str,
    steering: Value,
    hook: Option<Arc<dyn NativeHook>>,
) -> Host {
    let mut binding = binding(Some(engine.socket().to_path_buf()), steering);
    binding.installation_id = installation.into();
    binding.hook = hook;
    let host = TestHost::one(steerable("steerable"), binding)
        .loaded()
        .await;
    engine.clear_requests();
    host
}

/// One steered `get-info` for `allocation`: the component's answer (its
/// provider id carries what the capability returned).
async fn act(host: &Host, allocation: &str) -> Result<String, Error> {
    host.kind("steerable")
        .expect("a loaded kind")
        .get_info(reference(allocation), budget())
        .await
        .map(|info| info.provider_id.unwrap_or_default())
}

/// The host's names for allocation `allocation` of [`INSTALLATION`].
fn names(allocation: &str) -> AllocationNames {
    AllocationNames::of(
        INSTALLATION,
        &reference(allocation),
        &sandbox_host::registry::Policy::default().volume_roles,
    )
}

/// Allocation `a`'s container name.
fn a_box() -> String {
    names("a").container
}

/// Allocation `a`'s `home` volume name.
fn a_vol() -> String {
    names("a").volumes[0].1.clone()
}

/// Steers one action against `engine` as installation `inst-test`.
async fn attempt(engine: &FakeDockerEngine, steering: Value) -> Result<String, Error> {
    let host = steered(engine, INSTALLATION, steering, None).await;
    act(&host, "a").await
}

/// Creates allocation `a`'s container; returns its id.
async fn create_box(engine: &FakeDockerEngine) -> String {
    attempt(
        engine,
        json!({ "action": "container-create", "container": a_box() }),
    )
    .await
    .expect("created")
}

/// A tar with one entry, written from raw headers so any type, mode, owner
/// or path can be asked for.
fn tar_with(path: &str, kind: tar::EntryType, mode: u32, owner: u64) -> Vec<u8> {
    let mut header = tar::Header::new_ustar();
    header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_uid(owner);
    header.set_gid(owner);
    header.set_size(if kind == tar::EntryType::Regular {
        1
    } else {
        0
    });
    header.set_cksum();
    let mut bytes = header.as_bytes().to_vec();
    if kind == tar::EntryType::Regular {
        bytes.push(b'x');
        bytes.resize(1024, 0);
    }
    bytes.extend_from_slice(&[0; 1024]);
    bytes
}

#[tokio::test]
async fn requests_the_contract_forbids_are_invalid_before_any_request() {
    use tar::EntryType::{Block, Char, Fifo, Regular, Symlink};
    let engine = fake_engine().await;
    let create = |extra: Value| {
        let mut steering = json!({ "action": "container-create" });
        for (key, value) in extra.as_object().expect("object") {
            steering[key] = value.clone();
        }
        steering
    };
    let mount = |volume: &str, target: &str, subpath: Option<&str>| json!({ "mounts": [{ "volume": volume, "target": target, "subpath": subpath }] });
    let upload = |path: &str, archive: Vec<u8>| json!({ "action": "archive-upload", "container": a_box(), "path": path, "archive": archive });
    let cases = vec![
        create(json!({ "container": "/escape" })),
        create(json!({ "container": "x" })),
        create(json!({ "container": "0123456789ab" })),
        create(json!({ "container": "a/../b" })),
        create(mount("@home", "/", None)),
        create(mount("@home", "/proc", None)),
        create(mount("@home", "/sys/fs/cgroup", None)),
        create(mount("@home", "/dev/shm", None)),
        create(mount("@home", "/tmp", None)),
        create(mount("@home", "/home/../etc", None)),
        create(mount("@home", "relative", None)),
        create(mount("@home", "/data", Some("../up"))),
        create(mount("@home", "/data", Some("/abs"))),
        create(mount("/etc", "/data", None)),
        create(mount("/var/run/docker.sock", "/var/run/docker.sock", None)),
        create(json!({ "hosts": [["core.internal", "host-gateway"]] })),
        create(json!({ "hosts": [["core.internal", "example.com"]] })),
        create(json!({ "hosts": [["a b", "10.0.0.1"]] })),
        create(json!({ "env": ["NO_EQUALS_SIGN"] })),
        create(json!({ "working_dir": "relative" })),
        json!({ "action": "container-inspect", "container": "0123456789ab" }),
        json!({ "action": "container-inspect", "container": "get?names=x&y=" }),
        json!({ "action": "container-inspect", "container": "../containers/x" }),
        json!({ "action": "container-start", "container": "abc" }),
        json!({ "action": "container-remove", "container": "oac%2Fx" }),
        json!({ "action": "exec", "container": a_box(), "args": [] }),
        json!({ "action": "exec", "container": a_box(), "args": ["id"], "working_dir": "tmp" }),
        json!({ "action": "volume-create", "volume": "/etc" }),
        json!({ "action": "volume-inspect", "volume": "../volumes" }),
        json!({ "action": "volume-remove", "volume": "x" }),
        upload("relative", tar_with("f", Regular, 0o600, 1000)),
        upload("/home/../etc", tar_with("f", Regular, 0o600, 1000)),
        upload("/home", vec![7; 900]),
        upload("/home", tar_with("suid", Regular, 0o4755, 1000)),
        upload("/home", tar_with("sgid", Regular, 0o2755, 1000)),
        upload("/home", tar_with("kmsg", Char, 0o600, 1000)),
        upload("/home", tar_with("sda", Block, 0o600, 1000)),
        upload("/home", tar_with("fifo", Fifo, 0o600, 1000)),
        upload("/home", tar_with("link", Symlink, 0o777, 1000)),
        upload("/home", tar_with("root", Regular, 0o600, 0)),
        upload("/home", tar_with("../up", Regular, 0o600, 1000)),
    ];
    for steering in cases {
        let answer = attempt(&engine, steering.clone()).await;
        assert_eq!(answer, Err(Error::Invalid), "{steering}");
        assert!(
            engine.requests().is_empty(),
            "{steering}: reached the engine: {:?}",
            engine.requests()
        );
    }
}

#[tokio::test]
async fn a_container_that_asks_for_nothing_gets_the_whole_policy() {
    let engine = fake_engine().await;
    let id = create_box(&engine).await;
    let inspected = engine_client(engine.socket())
        .inspect_container(&id, None)
        .await
        .expect("inspect");
    let config = inspected.config.expect("config");
    let host = inspected.host_config.expect("host config");
    assert_eq!(config.user.as_deref(), Some("1000:1000"));
    assert_eq!(config.image.as_deref(), Some(NO_IMAGE));
    assert_eq!(host.cap_drop, Some(vec!["ALL".to_string()]));
    assert_eq!(host.readonly_rootfs, Some(true));
    let security = host.security_opt.unwrap_or_default();
    assert!(security.contains(&"no-new-privileges".to_string()));
    assert!(security.contains(&"apparmor=unconfined".to_string()));
    assert!(security.contains(&format!("seccomp={SMALL_SECCOMP}")));
    assert_eq!(host.network_mode.as_deref(), Some("none"));
    assert_eq!(host.nano_cpus, Some(500_000_000));
    assert_eq!(host.memory, Some(256 << 20));
    assert_eq!(host.pids_limit, Some(128));
    assert_eq!(host.init, Some(false));
    assert!(
        host.readonly_paths
            .unwrap_or_default()
            .contains(&"/proc/sys".to_string())
    );
    assert!(
        host.masked_paths
            .unwrap_or_default()
            .contains(&"/proc/kcore".to_string())
    );
    assert_eq!(
        host.log_config.and_then(|log| log.typ).as_deref(),
        Some("json-file")
    );
    let labels = config.labels.unwrap_or_default();
    for (key, value) in [
        ("io.oac.installation", INSTALLATION),
        ("io.oac.tenant", "t"),
        ("io.oac.environment", "e"),
        ("io.oac.allocation", "a"),
    ] {
        assert_eq!(labels.get(key).map(String::as_str), Some(value), "{key}");
    }
}

/// Names are the host's: a container or volume under any other name is
/// invalid before a request, and an allocation gets one container and one
/// volume per listed role, however often it asks.
#[tokio::test]
async fn an_allocation_gets_only_the_names_the_host_derives() {
    let engine = fake_engine().await;
    let unlisted = format!("{}-extra", a_box());
    for steering in [
        json!({ "action": "container-create", "container": "oac-mine" }),
        json!({ "action": "container-create", "container": format!("{}-2", a_box()) }),
        json!({ "action": "volume-create", "volume": "oac-mine" }),
        json!({ "action": "volume-create", "volume": unlisted }),
    ] {
        assert_eq!(
            attempt(&engine, steering.clone()).await,
            Err(Error::Invalid),
            "{steering}"
        );
    }
    assert!(engine.requests().is_empty(), "{:?}", engine.requests());
    for _ in 0..3 {
        let _ = attempt(&engine, json!({ "action": "container-create" })).await;
        for role in ["@home", "@environment"] {
            let _ = attempt(
                &engine,
                json!({ "action": "volume-create", "volume": role }),
            )
            .await;
        }
    }
    assert_eq!(engine.containers(), vec![a_box()]);
    let mut volumes: Vec<String> = names("a")
        .volumes
        .into_iter()
        .map(|(_, name)| name)
        .collect();
    volumes.sort();
    assert_eq!(engine.volumes(), volumes);
}

/// A call learns the names of its own allocations only: asking for
/// another's is `ownership`, and sends nothing.
#[tokio::test]
async fn a_call_learns_only_its_own_allocations_names() {
    let engine = fake_engine().await;
    let own = attempt(&engine, json!({ "action": "names-of", "target": "a" })).await;
    assert_eq!(own, Ok(a_box()));
    let foreign = attempt(&engine, json!({ "action": "names-of", "target": "b" })).await;
    assert_eq!(foreign, Err(Error::Ownership));
    assert!(engine.requests().is_empty(), "{:?}", engine.requests());
}

#[tokio::test]
async fn ownership_is_per_allocation_and_a_foreign_resource_gets_nothing() {
    let engine = fake_engine().await;
    let owner = steered(
        &engine,
        INSTALLATION,
        json!({ "action": "volume-create", "volume": a_vol() }),
        None,
    )
    .await;
    act(&owner, "a").await.expect("volume created for a");
    let owner = steered(
        &engine,
        INSTALLATION,
        json!({ "action": "container-create", "container": a_box(),
                "mounts": [{ "volume": a_vol(), "target": "/data" }] }),
        None,
    )
    .await;
    let id = act(&owner, "a").await.expect("container created for a");
    let labels_before = engine.volume_labels(&a_vol());
    for (installation, allocation) in [(INSTALLATION, "b"), ("other-installation", "a")] {
        for (steering, reads) in [
            (
                json!({ "action": "container-inspect", "container": a_box() }),
                1,
            ),
            (json!({ "action": "container-inspect", "container": id }), 1),
            (
                json!({ "action": "container-start", "container": a_box() }),
                1,
            ),
            (json!({ "action": "container-remove", "container": id }), 1),
            (
                json!({ "action": "container-stats", "container": a_box() }),
                1,
            ),
            (
                json!({ "action": "exec", "container": a_box(), "args": ["id"] }),
                1,
            ),
            (json!({ "action": "volume-inspect", "volume": a_vol() }), 1),
            (json!({ "action": "volume-remove", "volume": a_vol() }), 1),
        ] {
            let host = steered(&engine, installation, steering.clone(), None).await;
            let answer = act(&host, allocation).await;
            assert_eq!(
                answer,
                Err(Error::Ownership),
                "{installation}/{allocation}: {steering}"
            );
            let requests = engine.requests();
            assert_eq!(requests.len(), reads, "{steering}: {requests:?}");
        }
        // Another allocation's names are never its own: creating under
        // them, or mounting a volume of them, is invalid before a request.
        for steering in [
            json!({ "action": "container-create", "container": "@",
                    "mounts": [{ "volume": a_vol(), "target": "/data" }] }),
            json!({ "action": "container-create", "container": a_box() }),
            json!({ "action": "volume-create", "volume": a_vol() }),
        ] {
            let host = steered(&engine, installation, steering.clone(), None).await;
            let before = engine.requests().len();
            let answer = act(&host, allocation).await;
            assert_eq!(
                answer,
                Err(Error::Invalid),
                "{installation}/{allocation}: {steering}"
            );
            assert_eq!(engine.requests().len(), before, "{steering}");
        }
    }
    assert_eq!(engine.volume_labels(&a_vol()), labels_before, "untouched");
    assert_eq!(engine.containers(), vec![a_box()]);
    // Listing shows only the call's own allocation.
    let lister = steered(
        &engine,
        INSTALLATION,
        json!({ "action": "container-list" }),
        None,
    )
    .await;
    assert_eq!(act(&lister, "a").await, Ok(a_box()));
    assert_eq!(act(&lister, "b").await, Ok(String::new()));
}

#[tokio::test]
async fn an_id_prefix_never_resolves_to_a_container() {
    let engine = fake_engine().await;
    let id = create_box(&engine).await;
    for prefix in [&id[..12], &id[..63]] {
        let answer = attempt(
            &engine,
            json!({ "action": "container-inspect", "container": prefix }),
        )
        .await;
        assert_eq!(answer, Err(Error::Invalid), "{prefix}");
        assert!(engine.requests().is_empty());
    }
    let found = attempt(
        &engine,
        json!({ "action": "container-inspect", "container": id }),
    )
    .await
    .expect("the full id");
    assert_eq!(found, format!("{id} conforms=true"));
}

/// Swaps the named container for a foreign one of the same name just before
/// the first request with `action`.
#[derive(Debug)]
struct Swap {
    engine: Arc<FakeDockerEngine>,
    container: String,
    action: &'static str,
    done: AtomicBool,
    replacement: Mutex<Option<String>>,
}

impl NativeHook for Swap {
    fn on_request(&self, request: &NativeRequest) -> Option<Fault> {
        if request.action.name() == self.action && !self.done.swap(true, Ordering::SeqCst) {
            let foreign = BTreeMap::from([("io.oac.installation".to_string(), "x".to_string())]);
            *self.replacement.lock().expect("lock") =
                self.engine.replace_container(&self.container, foreign);
        }
        None
    }
}

#[tokio::test]
async fn follow_ups_name_the_full_id_the_ownership_check_saw() {
    let engine = fake_engine().await;
    create_box(&engine).await;
    for action in [
        "container-start",
        "exec-create",
        "container-remove",
        "container-stats",
    ] {
        let swap = Arc::new(Swap {
            engine: engine.clone(),
            container: a_box(),
            action,
            done: AtomicBool::new(false),
            replacement: Mutex::new(None),
        });
        let steering = match action {
            "exec-create" => json!({ "action": "exec", "container": a_box(), "args": ["id"] }),
            "container-remove" => json!({ "action": "container-remove", "container": a_box() }),
            "container-stats" => json!({ "action": "container-stats", "container": a_box() }),
            _ => json!({ "action": "container-start", "container": a_box() }),
        };
        let host = steered(&engine, INSTALLATION, steering, Some(swap.clone())).await;
        let previous = engine.requests();
        let answer = act(&host, "a").await;
        let foreign = swap
            .replacement
            .lock()
            .expect("lock")
            .clone()
            .expect("the container was swapped");
        let requests = engine.requests();
        assert!(
            answer.is_err(),
            "{action}: the swapped container answered: {answer:?}"
        );
        assert!(
            requests.iter().all(|request| !request.contains(&foreign)),
            "{action}: the foreign container was named: {requests:?} (before {previous:?})"
        );
        let status = engine_client(engine.socket())
            .inspect_container(&a_box(), None)
            .await
            .expect("the foreign container is still there")
            .state
            .and_then(|state| state.status);
        assert_eq!(
            status,
            Some(bollard::models::ContainerStateStatusEnum::CREATED),
            "{action}: the foreign container was never started"
        );
        // Put one of ours back under the name for the next action.
        engine_client(engine.socket())
            .remove_container(
                &a_box(),
                None::<bollard::query_parameters::RemoveContainerOptions>,
            )
            .await
            .expect("remove the foreign one");
        create_box(&engine).await;
    }
}

/// Tamperings an engine could apply instead of the policy, by create-body field.
/// A change an engine applies to a create body instead of the policy.
type Tamper = Box<dyn Fn(&mut serde_json::Map<String, Value>) + Send>;

fn tamperings() -> Vec<(&'static str, Tamper)> {
    fn host_config(key: &'static str, value: Value) -> Tamper {
        Box::new(move |body| {
            body["HostConfig"][key] = value.clone();
        })
    }
    vec![
        ("user 0", Box::new(|body| body["User"] = json!("0"))),
        ("user 0:0", Box::new(|body| body["User"] = json!("0:0"))),
        ("user root", Box::new(|body| body["User"] = json!("root"))),
        (
            "user 1000:0",
            Box::new(|body| body["User"] = json!("1000:0")),
        ),
        (
            "no user",
            Box::new(|body| {
                body.remove("User");
            }),
        ),
        ("capabilities kept", host_config("CapDrop", json!([]))),
        (
            "capability added",
            host_config("CapAdd", json!(["SYS_ADMIN"])),
        ),
        (
            "no no-new-privileges",
            host_config("SecurityOpt", json!(["apparmor=unconfined"])),
        ),
        (
            "seccomp unconfined",
            host_config(
                "SecurityOpt",
                json!([
                    "no-new-privileges",
                    "seccomp=unconfined",
                    "apparmor=unconfined"
                ]),
            ),
        ),
        ("writable root", host_config("ReadonlyRootfs", json!(false))),
        (
            "no read-only paths",
            host_config("ReadonlyPaths", json!([])),
        ),
        (
            "minimal masks without nested sandbox",
            host_config(
                "MaskedPaths",
                json!(["/sys/firmware", "/sys/devices/virtual/powercap"]),
            ),
        ),
        ("privileged", host_config("Privileged", json!(true))),
        (
            "bridge network",
            host_config("NetworkMode", json!("bridge")),
        ),
        ("host network", host_config("NetworkMode", json!("host"))),
        ("no cpu limit", host_config("NanoCpus", json!(0))),
        ("no memory limit", host_config("Memory", json!(0))),
        ("no pids limit", host_config("PidsLimit", json!(0))),
        (
            "excessive pids limit",
            host_config("PidsLimit", json!(100000)),
        ),
        ("init", host_config("Init", json!(true))),
        ("bind mount", host_config("Binds", json!(["/:/host"]))),
        (
            "no log bound",
            host_config("LogConfig", json!({ "Type": "json-file" })),
        ),
        (
            "bigger /tmp",
            host_config("Tmpfs", json!({ "/tmp": "size=8g" })),
        ),
        (
            "unpinned image",
            Box::new(|body| body["Image"] = json!("oac-test-runtime:test")),
        ),
    ]
}

/// A container the engine made without the policy is `invalid`: the host
/// leaves it unstarted (the component names it in its answer, Kill removes
/// it) and never starts or uses it.
#[tokio::test]
async fn a_container_that_fails_verification_is_invalid_and_never_used() {
    for (name, tamper) in tamperings() {
        let engine = fake_engine().await;
        engine.tamper_creates(tamper);
        let answer = attempt(
            &engine,
            json!({ "action": "run", "container": a_box(), "cmd": ["sleep", "60"], "args": ["id"] }),
        )
        .await;
        assert_eq!(answer, Err(Error::Invalid), "{name}");
        let requests = engine.requests();
        assert!(
            !requests.iter().any(|r| r.starts_with("DELETE ")
                || r.ends_with("/start")
                || r.ends_with("/exec")
                || r.contains("/archive")),
            "{name}: removed or used: {requests:?}"
        );
        assert_eq!(engine.containers(), vec![a_box()], "{name}");
    }
}

#[tokio::test]
async fn a_nonconforming_container_left_behind_is_never_started_or_used() {
    let engine = fake_engine().await;
    engine.tamper_creates(|body| body["User"] = json!("0:0"));
    let creator = steered(
        &engine,
        INSTALLATION,
        json!({ "action": "container-create", "container": a_box(), "cmd": ["sleep", "60"] }),
        None,
    )
    .await;
    assert_eq!(act(&creator, "a").await, Err(Error::Invalid));
    assert_eq!(engine.containers(), vec![a_box()], "left behind");
    let archive = tar_with("f", tar::EntryType::Regular, 0o600, 1000);
    for steering in [
        json!({ "action": "container-start", "container": a_box() }),
        json!({ "action": "exec", "container": a_box(), "args": ["id"] }),
        json!({ "action": "archive-upload", "container": a_box(), "path": "/tmp", "archive": archive }),
    ] {
        assert_eq!(
            attempt(&engine, steering.clone()).await,
            Err(Error::Invalid),
            "{steering}"
        );
        let requests = engine.requests();
        assert_eq!(requests.len(), 1, "only the inspection: {requests:?}");
    }
    let inspected = attempt(
        &engine,
        json!({ "action": "container-inspect", "container": a_box() }),
    )
    .await
    .expect("inspect");
    assert!(inspected.ends_with("conforms=false"), "{inspected}");
    attempt(
        &engine,
        json!({ "action": "container-remove", "container": a_box() }),
    )
    .await
    .expect("cleanup still works");
    assert!(engine.containers().is_empty());
}

/// Relabels a volume as foreign just before the container is created.
#[derive(Debug)]
struct StealVolume {
    engine: Arc<FakeDockerEngine>,
}

impl NativeHook for StealVolume {
    fn on_request(&self, request: &NativeRequest) -> Option<Fault> {
        if request.action.name() == "container-create" {
            let foreign = BTreeMap::from([("io.oac.installation".to_string(), "x".to_string())]);
            self.engine.insert_volume(&a_vol(), foreign);
        }
        None
    }
}

#[tokio::test]
async fn mounted_volumes_are_checked_again_after_create() {
    let engine = fake_engine().await;
    attempt(
        &engine,
        json!({ "action": "volume-create", "volume": a_vol() }),
    )
    .await
    .expect("volume");
    let hook: Arc<dyn NativeHook> = Arc::new(StealVolume {
        engine: engine.clone(),
    });
    let host = steered(
        &engine,
        INSTALLATION,
        json!({ "action": "container-create", "container": a_box(),
                "mounts": [{ "volume": a_vol(), "target": "/data" }] }),
        Some(hook),
    )
    .await;
    assert_eq!(act(&host, "a").await, Err(Error::ComputeUnconfirmed));
    assert!(engine.containers().is_empty(), "the container was removed");
    assert_eq!(engine.volumes(), vec![a_vol()], "the volume was not");
    let requests = engine.requests();
    assert!(
        !requests.iter().any(|r| r.starts_with("DELETE /volumes/")),
        "{requests:?}"
    );
}

#[tokio::test]
async fn uploads_are_rewritten_owned_by_the_runtime_user() {
    let engine = fake_engine().await;
    let archive = tar_with("note", tar::EntryType::Regular, 0o640, 1000);
    let make = |container: &str, volume: &str, path: &str| {
        json!({ "action": "make-then-upload", "container": container, "volume": volume,
                "mounts": [{ "volume": volume, "target": "/data" }],
                "path": path, "archive": archive })
    };
    let outside = act(
        &steered(&engine, INSTALLATION, make("@", "@home", "/etc"), None).await,
        "b",
    )
    .await;
    assert_eq!(outside, Err(Error::Invalid), "only into a volume mount");
    attempt(&engine, make("@", "@home", "/data"))
        .await
        .expect("uploaded");
    assert_eq!(
        engine.file(&a_box(), "/data/note"),
        Some((b"x".to_vec(), 0o640, 1000))
    );
}

/// Uploads go only into a container the call itself made, on volumes it
/// made, before any start: not into one an earlier call made (something
/// may have run in it since), nor after a start in the same call, nor onto
/// a volume that existed before.
#[tokio::test]
async fn uploads_go_only_where_nothing_has_run() {
    let engine = fake_engine().await;
    let archive = tar_with("note", tar::EntryType::Regular, 0o640, 1000);
    attempt(
        &engine,
        json!({ "action": "make-then-upload", "container": a_box(), "volume": a_vol(),
                "mounts": [{ "volume": a_vol(), "target": "/data" }],
                "path": "/data", "archive": archive }),
    )
    .await
    .expect("made and uploaded in one call");
    let later = attempt(
        &engine,
        json!({ "action": "archive-upload", "container": a_box(), "path": "/data",
                "archive": archive }),
    )
    .await;
    assert_eq!(
        later,
        Err(Error::Invalid),
        "a container an earlier call made"
    );
    attempt(
        &engine,
        json!({ "action": "container-remove", "container": a_box() }),
    )
    .await
    .expect("removed");
    let retained = attempt(
        &engine,
        json!({ "action": "make-then-upload", "container": a_box(), "volume": a_vol(),
                "mounts": [{ "volume": a_vol(), "target": "/data" }],
                "path": "/data", "archive": archive }),
    )
    .await;
    assert_eq!(
        retained,
        Err(Error::Invalid),
        "a volume that existed before"
    );
}

// ---------------------------------------------------------------------------
// A hostile engine: unbounded bodies and frames.
// ---------------------------------------------------------------------------

mod hostile_engine {
    use bytes::Bytes;
    use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
    use hyper::body::Frame;
    use hyper::{Request, Response, StatusCode};
    use hyper_util::rt::TokioIo;
    use std::convert::Infallible;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use tokio::io::AsyncWriteExt;

    /// An engine that answers `/containers/huge/json` with a 1 GiB body,
    /// `/containers/sandbox/json` with `inspect`, and starts every exec with
    /// a frame claiming 4 GiB followed by bytes without end. It counts what
    /// it managed to send.
    pub(super) struct HostileEngine {
        pub socket: std::path::PathBuf,
        pub sent: Arc<AtomicU64>,
        _dir: tempfile::TempDir,
    }

    type Body = BoxBody<Bytes, Infallible>;

    fn full(status: StatusCode, body: String) -> Response<Body> {
        let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
        *response.status_mut() = status;
        response
    }

    async fn answer(
        mut request: Request<hyper::body::Incoming>,
        inspect: Arc<String>,
        sent: Arc<AtomicU64>,
    ) -> Response<Body> {
        let path = request.uri().path().to_string();
        if path == "/version" || path.ends_with("/version") {
            return full(
                StatusCode::OK,
                r#"{"ApiVersion":"1.45","Version":"26.1.5"}"#.into(),
            );
        }
        if path.ends_with("/containers/huge/json") {
            const CHUNK: usize = 64 << 10;
            let counter = sent.clone();
            let chunks = futures_util::stream::iter(0..(1usize << 30) / CHUNK).map(move |_| {
                counter.fetch_add(CHUNK as u64, Ordering::Relaxed);
                Ok::<_, Infallible>(Frame::data(Bytes::from(vec![b' '; CHUNK])))
            });
            return Response::new(BodyExt::boxed(StreamBody::new(chunks)));
        }
        if path.ends_with("/containers/sandbox/json") {
            return full(StatusCode::OK, inspect.to_string());
        }
        if path.ends_with("/exec") {
            return full(
                StatusCode::CREATED,
                format!(r#"{{"Id":"{}"}}"#, "e".repeat(64)),
            );
        }
        if path.ends_with("/start") && path.contains("/exec/") {
            let upgrade = hyper::upgrade::on(&mut request);
            tokio::spawn(async move {
                let Ok(upgraded) = upgrade.await else { return };
                let mut io = TokioIo::new(upgraded);
                let header = [1u8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
                if io.write_all(&header).await.is_err() {
                    return;
                }
                let chunk = vec![b'o'; 64 << 10];
                // Endless, but stop at 4 GiB so a broken host cannot hang the test.
                while sent.load(Ordering::Relaxed) < 4 << 30 {
                    if io.write_all(&chunk).await.is_err() {
                        return;
                    }
                    sent.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                }
            });
            let mut response = full(StatusCode::SWITCHING_PROTOCOLS, String::new());
            let headers = response.headers_mut();
            headers.insert("connection", "Upgrade".parse().expect("header"));
            headers.insert("upgrade", "tcp".parse().expect("header"));
            return response;
        }
        full(
            StatusCode::INTERNAL_SERVER_ERROR,
            r#"{"message":"no"}"#.into(),
        )
    }

    use futures_util::StreamExt;

    impl HostileEngine {
        pub(super) async fn start(inspect: String) -> Self {
            let sent = Arc::new(AtomicU64::new(0));
            let (inspect, counter) = (Arc::new(inspect), sent.clone());
            let (socket, dir) = crate::support::serve_unix("hostile.sock", move |request| {
                let (inspect, counter) = (inspect.clone(), counter.clone());
                async move { Ok::<_, Infallible>(answer(request, inspect, counter).await) }
            });
            Self {
                socket,
                sent,
                _dir: dir,
            }
        }
    }
}

/// Inspect output of a container that carries the test policy (see
/// `policy_with(NO_IMAGE, SMALL_SECCOMP, false)` and docs/container-policy.md)
/// and allocation `a`'s labels, written out by hand.
fn conforming_inspect(name: &str) -> String {
    json!({
        "Id": "c".repeat(64),
        "Name": format!("/{name}"),
        "Image": NO_IMAGE,
        "State": { "Status": "running", "Running": true },
        "Config": {
            "Image": NO_IMAGE,
            "User": "1000:1000",
            "Labels": {
                "io.oac.installation": INSTALLATION,
                "io.oac.tenant": "t",
                "io.oac.environment": "e",
                "io.oac.allocation": "a",
            },
        },
        "HostConfig": {
            "ReadonlyRootfs": true,
            "CapDrop": ["ALL"],
            "SecurityOpt": [
                "no-new-privileges",
                format!("seccomp={SMALL_SECCOMP}"),
                "apparmor=unconfined",
            ],
            "Privileged": false,
            "NetworkMode": "none",
            "NanoCpus": 500_000_000,
            "Memory": 256 << 20,
            "PidsLimit": 128,
            "Tmpfs": { "/tmp": "size=134217728,mode=1777" },
            "Mounts": [],
            "MaskedPaths": [
                "/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys",
                "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
                "/sys/devices/virtual/powercap",
            ],
            "ReadonlyPaths": [
                "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
            ],
            "Init": false,
            "LogConfig": { "Type": "json-file", "Config": { "max-size": "10m", "max-file": "3" } },
        },
    })
    .to_string()
}

async fn against_hostile(
    engine: &hostile_engine::HostileEngine,
    steering: Value,
) -> (Result<String, Error>, std::time::Duration) {
    let host = TestHost::one(
        steerable("steerable"),
        binding(Some(engine.socket.clone()), steering),
    )
    .loaded()
    .await;
    let started = std::time::Instant::now();
    let answer = act(&host, "a").await;
    (answer, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gib_engine_body_costs_a_bounded_read() {
    let engine = hostile_engine::HostileEngine::start(conforming_inspect("sandbox")).await;
    let (answer, took) = against_hostile(
        &engine,
        json!({ "action": "container-inspect", "container": "huge" }),
    )
    .await;
    assert_eq!(answer, Err(Error::ComputeUnconfirmed));
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
    let sent = engine.sent.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        sent < 64 << 20,
        "the engine got to send {sent} bytes of 1 GiB"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_exec_frame_costs_the_output_bound() {
    let engine = hostile_engine::HostileEngine::start(conforming_inspect("sandbox")).await;
    let (answer, took) = against_hostile(
        &engine,
        json!({ "action": "exec", "container": "sandbox", "args": ["yes"] }),
    )
    .await;
    assert_eq!(
        answer,
        Err(Error::CommandUnconfirmed),
        "over the bound: never a success"
    );
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
    let sent = engine.sent.load(std::sync::atomic::Ordering::Relaxed);
    assert!(sent < 64 << 20, "the engine got to send {sent} bytes");
}

/// An observation only reads: every change a batch asks for, even of an
/// allocation in the batch, is invalid before any engine request, and so
/// is a change from a single observation; reads still work.
#[tokio::test]
async fn an_observation_changes_nothing() {
    use sandbox_host::types::Target;
    let engine = fake_engine().await;
    act(
        &steered(
            &engine,
            INSTALLATION,
            json!({ "action": "volume-create", "volume": a_vol() }),
            None,
        )
        .await,
        "a",
    )
    .await
    .expect("volume created for a");
    let id = act(
        &steered(
            &engine,
            INSTALLATION,
            json!({ "action": "container-create", "container": a_box(),
                    "mounts": [{ "volume": a_vol(), "target": "/data" }] }),
            None,
        )
        .await,
        "a",
    )
    .await
    .expect("container created for a");
    let targets = || {
        vec![Target {
            reference: reference("a"),
            provider_id: Some(id.clone()),
        }]
    };
    let observing = |action: Value| {
        let mut steering = action;
        steering["declaration"] = json!("observing");
        steering
    };
    // A batch observation of `a` by the kind observing with `action`.
    let batch = async |action: Value| {
        let host = steered(&engine, INSTALLATION, observing(action), None).await;
        host.kind("steerable")
            .expect("a loaded kind")
            .observe_batch(targets(), budget())
            .await
    };
    for action in [
        json!({ "action": "container-start", "container": a_box() }),
        json!({ "action": "container-remove", "container": a_box() }),
        json!({ "action": "exec", "container": a_box(), "args": ["id"] }),
        json!({ "action": "archive-upload", "container": a_box(), "path": "/data",
                "archive": tar_with("f", tar::EntryType::Regular, 0o644, 1000) }),
        json!({ "action": "volume-remove", "volume": a_vol() }),
        json!({ "action": "volume-create", "volume": names("a").volumes[1].1 }),
        json!({ "action": "container-create", "container": a_box() }),
    ] {
        let answer = batch(action.clone()).await;
        assert_eq!(answer, Ok(vec![Err(Error::Invalid)]), "{action}");
        assert_eq!(
            engine.requests(),
            Vec::<String>::new(),
            "{action}: nothing sent"
        );
    }
    assert_eq!(engine.containers(), vec![a_box()]);
    let read = batch(json!({ "action": "container-inspect", "container": a_box() })).await;
    assert!(matches!(read.as_deref(), Ok([Ok(_)])), "a read: {read:?}");
    let single = steered(
        &engine,
        INSTALLATION,
        observing(json!({ "action": "container-start", "container": a_box() })),
        None,
    )
    .await;
    let started = single
        .kind("steerable")
        .expect("a loaded kind")
        .observe(targets().remove(0), budget())
        .await;
    // An observation waits for no turn, so it may change nothing either:
    // it could otherwise act in the middle of a Create.
    assert_eq!(started, Err(Error::Invalid), "a single observation");
    assert!(
        !engine.requests().iter().any(|r| r.ends_with("/start")),
        "{:?}",
        engine.requests()
    );
}

/// Requests that inspected a container by its full id.
fn inspections_by_id(engine: &FakeDockerEngine) -> Vec<String> {
    engine
        .requests()
        .into_iter()
        .filter(|request| {
            request
                .strip_prefix("GET /containers/")
                .and_then(|rest| rest.strip_suffix("/json"))
                .is_some_and(|key| key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .collect()
}

#[tokio::test]
async fn one_call_proves_a_containers_ownership_once_and_a_new_call_again() {
    use sandbox_host::provider::SandboxProvider;
    use sandbox_host::types::{Bootstrap, Command, LifecycleState, NetworkAccess};
    let engine = fake_engine().await;
    let row = sandbox_host::registry::builtin()
        .into_iter()
        .find(|row| row.kind == "docker")
        .expect("docker kind");
    let binding = binding(Some(engine.socket().to_path_buf()), json!({}));
    let host = TestHost::one(row, binding).loaded().await;
    let kind = host.kind("docker").expect("docker");
    let allocation = reference("proved-once");
    engine.clear_requests();
    let bootstrap = Bootstrap {
        reference: allocation.clone(),
        session_id: "session".into(),
        device_id: "device".into(),
        core_url: "https://core.example".into(),
        daemon_credential: "credential-of-the-proof-test".into(),
        harness: "harness".into(),
        network_access: NetworkAccess::Disabled,
        allowed_domains: vec![],
    };
    let created = kind.create(bootstrap, budget()).await.expect("created");
    assert_eq!(created.state, LifecycleState::Running);
    // The verification after create proves the container; the two uploads
    // and the start name its id and rest on that proof.
    let requests = engine.requests();
    assert_eq!(inspections_by_id(&engine).len(), 1, "{requests:#?}");
    assert!(
        requests.iter().any(|r| r.ends_with("/start")),
        "{requests:#?}"
    );
    assert_eq!(
        requests.iter().filter(|r| r.ends_with("/archive")).count(),
        2,
        "{requests:#?}"
    );

    // A new call proves it again (by name: the adapter's observation),
    // and its exec rests on that.
    engine.clear_requests();
    let ran = kind
        .run_command(
            allocation.clone(),
            Command {
                args: vec!["true".into()],
                directory: None,
                stdin: None,
            },
            budget(),
        )
        .await;
    let requests = engine.requests();
    let inspections = requests
        .iter()
        .filter(|r| r.starts_with("GET /containers/") && r.ends_with("/json"))
        .count();
    assert_eq!(inspections, 1, "{ran:?} {requests:#?}");
    assert!(
        requests.iter().any(|r| r.ends_with("/exec")),
        "{requests:#?}"
    );
}
