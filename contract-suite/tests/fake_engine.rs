//! The fake Docker Engine, driven by the unchanged `bollard` client exactly
//! as the host drives a real engine.

use std::collections::{BTreeMap, HashMap};

use bollard::errors::Error as BollardError;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::models::{
    ContainerCreateBody, HostConfig, Mount, MountType, MountVolumeOptions, VolumeCreateRequest,
};
use bollard::query_parameters::{
    CreateContainerOptions, ListContainersOptions, ListVolumesOptions, RemoveContainerOptions,
    RemoveVolumeOptions, StatsOptions, UploadToContainerOptions,
};
use bollard::{ClientVersion, Docker};
use bytes::Bytes;
use contract_suite::fixtures::docker_engine::{FakeDockerEngine, NATIVE_ERROR_CANARY};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const IMAGE: &str = "oac-test-runtime:test";
const IMAGE_ID: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

fn connect(engine: &FakeDockerEngine) -> Docker {
    let socket = engine.socket().to_str().expect("socket path is UTF-8");
    Docker::connect_with_unix(
        socket,
        60,
        &ClientVersion {
            major_version: 1,
            minor_version: 45,
        },
    )
    .expect("connect to the fake engine")
}

/// The status and message of an engine error; panics on anything else.
fn server_error<T: std::fmt::Debug>(result: Result<T, BollardError>) -> (u16, String) {
    match result {
        Err(BollardError::DockerResponseServerError {
            status_code,
            message,
        }) => {
            assert!(
                message.contains(NATIVE_ERROR_CANARY),
                "error message lacks the canary: {message}"
            );
            (status_code, message)
        }
        other => panic!("expected an engine error, got {other:?}"),
    }
}

fn labels(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn label_filter(values: &[&str]) -> HashMap<String, Vec<String>> {
    HashMap::from([(
        "label".to_owned(),
        values.iter().map(|v| (*v).to_owned()).collect(),
    )])
}

fn named(name: &str) -> Option<CreateContainerOptions> {
    Some(CreateContainerOptions {
        name: Some(name.to_owned()),
        ..Default::default()
    })
}

/// A container running the test image with the volume `vol` mounted at /home.
async fn running_container(docker: &Docker, name: &str, vol: &str, user: Option<&str>) -> String {
    let body = ContainerCreateBody {
        image: Some(IMAGE.to_owned()),
        user: user.map(str::to_owned),
        labels: Some(labels(&[("oac.sandbox", name)])),
        host_config: Some(HostConfig {
            mounts: Some(vec![Mount {
                typ: Some(MountType::VOLUME),
                source: Some(vol.to_owned()),
                target: Some("/home".to_owned()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let created = docker
        .create_container(named(name), body)
        .await
        .expect("create container");
    docker
        .start_container(name, None)
        .await
        .expect("start container");
    created.id
}

/// What an attached exec produced.
struct ExecRun {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    exit_code: Option<i64>,
    largest_frame: usize,
}

/// create_exec + attached start_exec, writing stdin (then half-closing)
/// while reading the output to the end, then inspect_exec.
async fn exec(
    docker: &Docker,
    container: &str,
    cmd: &[&str],
    stdin: Option<Vec<u8>>,
    user: Option<&str>,
) -> ExecRun {
    let created = docker
        .create_exec(
            container,
            CreateExecOptions {
                attach_stdin: Some(stdin.is_some()),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                cmd: Some(cmd.iter().map(|s| (*s).to_owned()).collect()),
                user: user.map(str::to_owned),
                ..Default::default()
            },
        )
        .await
        .expect("create exec");
    let StartExecResults::Attached {
        mut output,
        mut input,
    } = docker
        .start_exec(&created.id, None)
        .await
        .expect("start exec")
    else {
        panic!("start_exec without options must attach");
    };
    let writer = async move {
        if let Some(data) = stdin {
            input.write_all(&data).await.expect("write stdin");
            input.shutdown().await.expect("half-close stdin");
        }
    };
    let reader = async {
        let mut run = ExecRun {
            stdout: Vec::new(),
            stderr: Vec::new(),
            exit_code: None,
            largest_frame: 0,
        };
        while let Some(item) = output.next().await {
            match item.expect("exec output") {
                bollard::container::LogOutput::StdOut { message } => {
                    run.largest_frame = run.largest_frame.max(message.len());
                    run.stdout.extend_from_slice(&message);
                }
                bollard::container::LogOutput::StdErr { message } => {
                    run.largest_frame = run.largest_frame.max(message.len());
                    run.stderr.extend_from_slice(&message);
                }
                other => panic!("unexpected output kind: {other:?}"),
            }
        }
        run
    };
    let ((), mut run) = tokio::join!(writer, reader);
    let inspect = docker
        .inspect_exec(&created.id)
        .await
        .expect("inspect exec");
    assert_eq!(inspect.running, Some(false));
    assert_eq!(inspect.container_id.as_deref(), Some(container));
    run.exit_code = inspect.exit_code;
    run
}

fn tar_of(entries: &[(&str, Option<&[u8]>, u32, u64)]) -> Bytes {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, content, mode, uid) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_mode(*mode);
        header.set_uid(*uid);
        header.set_gid(*uid);
        match content {
            Some(data) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(data.len() as u64);
                header.set_cksum();
                builder
                    .append_data(&mut header, path, *data)
                    .expect("append file");
            }
            None => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
                header.set_cksum();
                builder
                    .append_data(&mut header, path, std::io::empty())
                    .expect("append dir");
            }
        }
    }
    Bytes::from(builder.into_inner().expect("finish tar"))
}

fn upload_to(path: &str) -> Option<UploadToContainerOptions> {
    Some(UploadToContainerOptions {
        path: path.to_owned(),
        ..Default::default()
    })
}

#[tokio::test]
async fn version_and_info() {
    let engine = FakeDockerEngine::start().await.expect("start engine");
    let docker = connect(&engine);
    let version = docker.version().await.expect("version");
    assert_eq!(version.api_version.as_deref(), Some("1.45"));
    assert_eq!(version.version.as_deref(), Some("26.1.5"));
    assert_eq!(version.min_api_version.as_deref(), Some("1.24"));
    assert_eq!(version.os.as_deref(), Some("linux"));
    let info = docker.info().await.expect("info");
    assert_eq!(info.ncpu, Some(2));
    assert!(info.mem_total.is_some_and(|m| m > 0));
    assert_eq!(info.memory_limit, Some(true));
    assert_eq!(info.cpu_cfs_quota, Some(true));
    assert_eq!(info.cpu_cfs_period, Some(true));
    docker.ping().await.expect("ping");
    assert_eq!(
        engine.requests(),
        ["GET /version", "GET /info", "GET /_ping"]
    );
}

#[tokio::test]
async fn image_inspect_needs_an_inserted_image() {
    let engine = FakeDockerEngine::start().await.expect("start engine");
    let docker = connect(&engine);
    let (status, message) = server_error(docker.inspect_image(IMAGE).await);
    assert_eq!(status, 404);
    assert!(message.contains("No such image"), "{message}");

    engine.insert_image(IMAGE, IMAGE_ID);
    let digest_ref = format!("oac-test-runtime@sha256:{}", "2".repeat(64));
    engine.insert_image(&digest_ref, IMAGE_ID);
    let image = docker.inspect_image(IMAGE).await.expect("inspect by tag");
    assert_eq!(image.id.as_deref(), Some(IMAGE_ID));
    assert_eq!(image.repo_tags, Some(vec![IMAGE.to_owned()]));
    assert_eq!(image.repo_digests, Some(vec![digest_ref.clone()]));
    let by_digest = docker.inspect_image(&digest_ref).await.expect("by digest");
    assert_eq!(by_digest.id.as_deref(), Some(IMAGE_ID));
    let by_id = docker.inspect_image(IMAGE_ID).await.expect("by id");
    assert_eq!(by_id.id.as_deref(), Some(IMAGE_ID));
}

#[tokio::test]
async fn volume_lifecycle() {
    let engine = FakeDockerEngine::start().await.expect("start engine");
    let docker = connect(&engine);
    let request = VolumeCreateRequest {
        name: Some("oac-vol-1".to_owned()),
        labels: Some(labels(&[("oac.owner", "suite"), ("oac.kind", "home")])),
        ..Default::default()
    };
    let created = docker
        .create_volume(request.clone())
        .await
        .expect("create volume");
    assert_eq!(created.name, "oac-vol-1");
    assert_eq!(created.driver, "local");
    assert_eq!(
        created.labels.get("oac.owner").map(String::as_str),
        Some("suite")
    );
    // Creating again is idempotent and returns the existing volume.
    let again = docker.create_volume(request).await.expect("create again");
    assert_eq!(again.created_at, created.created_at);

    let inspected = docker.inspect_volume("oac-vol-1").await.expect("inspect");
    assert_eq!(inspected.labels, created.labels);
    assert_eq!(
        engine.volume_labels("oac-vol-1"),
        Some(BTreeMap::from([
            ("oac.kind".to_owned(), "home".to_owned()),
            ("oac.owner".to_owned(), "suite".to_owned()),
        ]))
    );

    engine.insert_volume(
        "foreign",
        BTreeMap::from([("oac.owner".to_owned(), "someone-else".to_owned())]),
    );
    let listed = docker
        .list_volumes(Some(ListVolumesOptions {
            filters: Some(label_filter(&["oac.owner=suite", "oac.kind"])),
        }))
        .await
        .expect("list volumes");
    let names: Vec<_> = listed
        .volumes
        .unwrap_or_default()
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(names, ["oac-vol-1"]);
    let all = docker
        .list_volumes(None::<ListVolumesOptions>)
        .await
        .expect("list all");
    assert_eq!(all.volumes.map(|v| v.len()), Some(2));

    docker
        .remove_volume("oac-vol-1", None::<RemoveVolumeOptions>)
        .await
        .expect("remove volume");
    let (status, _) = server_error(docker.inspect_volume("oac-vol-1").await);
    assert_eq!(status, 404);
    let (status, _) = server_error(
        docker
            .remove_volume("oac-vol-1", None::<RemoveVolumeOptions>)
            .await,
    );
    assert_eq!(status, 404);
    assert_eq!(engine.volumes(), ["foreign"]);
}

#[tokio::test]
async fn container_lifecycle() {
    let engine = FakeDockerEngine::start().await.expect("start engine");
    engine.insert_image(IMAGE, IMAGE_ID);
    let docker = connect(&engine);
    let host_config = HostConfig {
        nano_cpus: Some(1_500_000_000),
        memory: Some(256 * 1024 * 1024),
        pids_limit: Some(128),
        readonly_rootfs: Some(true),
        cap_drop: Some(vec!["ALL".to_owned()]),
        security_opt: Some(vec!["no-new-privileges".to_owned()]),
        privileged: Some(false),
        network_mode: Some("none".to_owned()),
        tmpfs: Some(HashMap::from([(
            "/tmp".to_owned(),
            "rw,noexec,size=64m".to_owned(),
        )])),
        mounts: Some(vec![Mount {
            typ: Some(MountType::VOLUME),
            source: Some("oac-home".to_owned()),
            target: Some("/home".to_owned()),
            read_only: Some(false),
            volume_options: Some(MountVolumeOptions {
                subpath: Some("runtime".to_owned()),
                ..Default::default()
            }),
            ..Default::default()
        }]),
        masked_paths: Some(vec!["/proc/kcore".to_owned()]),
        init: Some(true),
        extra_hosts: Some(vec!["host.docker.internal:host-gateway".to_owned()]),
        ..Default::default()
    };
    let body = ContainerCreateBody {
        image: Some(IMAGE.to_owned()),
        labels: Some(labels(&[("oac.sandbox", "s1"), ("oac.owner", "suite")])),
        cmd: Some(vec!["sleep".to_owned(), "infinity".to_owned()]),
        env: Some(vec!["LANG=C.UTF-8".to_owned()]),
        user: Some("1000:1000".to_owned()),
        working_dir: Some("/home".to_owned()),
        host_config: Some(host_config.clone()),
        ..Default::default()
    };
    let created = docker
        .create_container(named("oac-s1"), body.clone())
        .await
        .expect("create container");
    assert_eq!(created.id.len(), 64);
    assert!(created.id.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(engine.containers(), ["oac-s1"]);
    // Mounting a missing volume creates it without labels, like Docker.
    assert_eq!(engine.volume_labels("oac-home"), Some(BTreeMap::new()));

    let (status, message) =
        server_error(docker.create_container(named("oac-s1"), body.clone()).await);
    assert_eq!(status, 409);
    assert!(message.contains("already in use"), "{message}");
    let missing_image = ContainerCreateBody {
        image: Some("absent:latest".to_owned()),
        ..Default::default()
    };
    let (status, message) = server_error(
        docker
            .create_container(named("oac-s2"), missing_image)
            .await,
    );
    assert_eq!(status, 404);
    assert!(message.contains("No such image"), "{message}");

    let inspect = docker
        .inspect_container("oac-s1", None)
        .await
        .expect("inspect created");
    assert_eq!(inspect.id.as_deref(), Some(created.id.as_str()));
    assert_eq!(inspect.name.as_deref(), Some("/oac-s1"));
    assert_eq!(inspect.image.as_deref(), Some(IMAGE_ID));
    let state = inspect.state.expect("state");
    assert_eq!(state.running, Some(false));
    assert_eq!(state.started_at.as_deref(), Some("0001-01-01T00:00:00Z"));
    let config = inspect.config.expect("config");
    assert_eq!(config.image.as_deref(), Some(IMAGE));
    assert_eq!(config.user.as_deref(), Some("1000:1000"));
    assert_eq!(config.working_dir.as_deref(), Some("/home"));
    assert_eq!(config.env, body.env);
    assert_eq!(config.cmd, body.cmd);
    assert_eq!(config.labels, body.labels);
    let echoed = inspect.host_config.expect("host config");
    assert_eq!(echoed.nano_cpus, host_config.nano_cpus);
    assert_eq!(echoed.memory, host_config.memory);
    assert_eq!(echoed.pids_limit, host_config.pids_limit);
    assert_eq!(echoed.readonly_rootfs, Some(true));
    assert_eq!(echoed.cap_drop, host_config.cap_drop);
    assert_eq!(echoed.security_opt, host_config.security_opt);
    assert_eq!(echoed.network_mode.as_deref(), Some("none"));
    assert_eq!(echoed.tmpfs, host_config.tmpfs);
    assert_eq!(echoed.mounts, host_config.mounts);
    assert_eq!(echoed.masked_paths, host_config.masked_paths);
    assert_eq!(echoed.init, Some(true));
    assert_eq!(echoed.privileged, Some(false));
    assert_eq!(echoed.extra_hosts, host_config.extra_hosts);
    let mounts = inspect.mounts.expect("mounts");
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].typ.as_deref(), Some("volume"));
    assert_eq!(mounts[0].name.as_deref(), Some("oac-home"));
    assert_eq!(mounts[0].destination.as_deref(), Some("/home"));

    // Stats and exec need a running container.
    let (status, _) = server_error(
        docker
            .stats(
                "oac-s1",
                Some(StatsOptions {
                    stream: false,
                    one_shot: true,
                }),
            )
            .next()
            .await
            .expect("a stats item"),
    );
    assert_eq!(status, 409);

    docker.start_container("oac-s1", None).await.expect("start");
    // 304 (already running) is a success for bollard.
    docker
        .start_container(&created.id, None)
        .await
        .expect("start again");
    let state = docker
        .inspect_container(&created.id, None)
        .await
        .expect("inspect running")
        .state
        .expect("state");
    assert_eq!(state.running, Some(true));
    assert!(state.started_at.is_some_and(|t| t.starts_with("20")));

    let listed = docker
        .list_containers(Some(ListContainersOptions {
            all: true,
            filters: Some(label_filter(&["oac.owner=suite", "oac.sandbox=s1"])),
            ..Default::default()
        }))
        .await
        .expect("list containers");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id.as_deref(), Some(created.id.as_str()));
    assert_eq!(listed[0].names, Some(vec!["/oac-s1".to_owned()]));
    assert_eq!(
        listed[0]
            .labels
            .as_ref()
            .and_then(|l| l.get("oac.sandbox"))
            .map(String::as_str),
        Some("s1")
    );
    let none = docker
        .list_containers(Some(ListContainersOptions {
            all: true,
            filters: Some(label_filter(&["oac.owner=suite", "oac.sandbox=other"])),
            ..Default::default()
        }))
        .await
        .expect("list none");
    assert!(none.is_empty());

    let stats = docker
        .stats(
            "oac-s1",
            Some(StatsOptions {
                stream: false,
                one_shot: true,
            }),
        )
        .next()
        .await
        .expect("a stats item")
        .expect("stats");
    let cpu = stats.cpu_stats.expect("cpu stats");
    assert!(
        cpu.cpu_usage
            .and_then(|u| u.total_usage)
            .is_some_and(|t| t > 0)
    );
    assert_eq!(cpu.online_cpus, Some(2));
    assert!(cpu.system_cpu_usage.is_some());
    let memory = stats.memory_stats.expect("memory stats");
    assert_eq!(memory.limit, Some(256 * 1024 * 1024));
    assert!(memory.usage.is_some());

    // The volume is in use, the container running.
    let (status, _) = server_error(
        docker
            .remove_volume("oac-home", None::<RemoveVolumeOptions>)
            .await,
    );
    assert_eq!(status, 409);
    let (status, message) = server_error(docker.remove_container("oac-s1", None).await);
    assert_eq!(status, 409);
    assert!(message.contains("container is running"), "{message}");
    docker
        .remove_container(
            "oac-s1",
            Some(RemoveContainerOptions {
                force: true,
                ..Default::default()
            }),
        )
        .await
        .expect("force remove");
    assert!(engine.containers().is_empty());
    let (status, _) = server_error(docker.inspect_container("oac-s1", None).await);
    assert_eq!(status, 404);
    let (status, _) = server_error(docker.start_container("oac-s1", None).await);
    assert_eq!(status, 404);
    docker
        .remove_volume("oac-home", None::<RemoveVolumeOptions>)
        .await
        .expect("remove the volume once unused");
}

#[tokio::test]
async fn archive_uploads_land_in_volumes() {
    let engine = FakeDockerEngine::start().await.expect("start engine");
    engine.insert_image(IMAGE, IMAGE_ID);
    let docker = connect(&engine);
    running_container(&docker, "oac-up", "oac-up-home", Some("1000:1000")).await;

    let content: &[u8] = b"hello\0world\n";
    let archive = tar_of(&[
        ("work", None, 0o750, 1000),
        ("work/hello.txt", Some(content), 0o640, 1000),
        ("top.sh", Some(b"#!/bin/sh\n"), 0o755, 0),
    ]);
    docker
        .upload_to_container(
            "oac-up",
            upload_to("/home"),
            bollard::body_full(archive.clone()),
        )
        .await
        .expect("upload into the volume");
    assert_eq!(
        engine.file("oac-up", "/home/work/hello.txt"),
        Some((content.to_vec(), 0o640, 1000))
    );
    assert_eq!(
        engine.file("oac-up", "/home/work"),
        Some((Vec::new(), 0o750, 1000))
    );
    assert_eq!(
        engine.file("oac-up", "/home/top.sh"),
        Some((b"#!/bin/sh\n".to_vec(), 0o755, 0))
    );
    assert_eq!(engine.file("oac-up", "/home/absent"), None);

    // Into an existing sub-directory of the volume.
    let nested = tar_of(&[("inner.txt", Some(b"x"), 0o600, 1000)]);
    docker
        .upload_to_container(
            "oac-up",
            upload_to("/home/work"),
            bollard::body_full(nested),
        )
        .await
        .expect("upload into a sub-directory");
    assert_eq!(
        engine.file("oac-up", "/home/work/inner.txt"),
        Some((b"x".to_vec(), 0o600, 1000))
    );

    // Files are stored per volume: another container mounting it sees them.
    running_container(&docker, "oac-up-2", "oac-up-home", None).await;
    assert_eq!(
        engine.file("oac-up-2", "/home/work/hello.txt"),
        Some((content.to_vec(), 0o640, 1000))
    );

    // The rootfs is read-only: anything outside a volume is refused.
    let (status, _) = server_error(
        docker
            .upload_to_container(
                "oac-up",
                upload_to("/etc"),
                bollard::body_full(archive.clone()),
            )
            .await,
    );
    assert_eq!(status, 400);
    let (status, _) = server_error(
        docker
            .upload_to_container(
                "oac-up",
                upload_to("/home/missing-dir"),
                bollard::body_full(archive.clone()),
            )
            .await,
    );
    assert_eq!(status, 404);
    let (status, _) = server_error(
        docker
            .upload_to_container("absent", upload_to("/home"), bollard::body_full(archive))
            .await,
    );
    assert_eq!(status, 404);
}

/// Multi-threaded, as the host runs: the exec stream crosses threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_streams_stdin_and_output() {
    let engine = FakeDockerEngine::start().await.expect("start engine");
    engine.insert_image(IMAGE, IMAGE_ID);
    let docker = connect(&engine);
    let id = running_container(&docker, "oac-ex", "oac-ex-home", Some("1000:1000")).await;

    // NUL bytes survive the round trip through `cat`.
    let small = b"a\0b\0\0c\n\xff".to_vec();
    let run = exec(&docker, &id, &["cat"], Some(small.clone()), None).await;
    assert_eq!(run.stdout, small);
    assert!(run.stderr.is_empty());
    assert_eq!(run.exit_code, Some(0));

    // 1.5 MiB through `cat`, and its hash through `sha256sum`.
    let big: Vec<u8> = (0..1536 * 1024).map(|i: u32| (i * 7 % 251) as u8).collect();
    let run = exec(&docker, &id, &["cat"], Some(big.clone()), None).await;
    assert_eq!(run.stdout.len(), big.len());
    assert!(run.stdout == big, "cat changed the data");
    assert!(run.largest_frame <= 64 * 1024);
    let run = exec(&docker, &id, &["sha256sum"], Some(big.clone()), None).await;
    let expected = format!("{}  -\n", hex::encode(Sha256::digest(&big)));
    assert_eq!(String::from_utf8_lossy(&run.stdout), expected);
    let run = exec(&docker, &id, &["wc", "-c"], Some(big), None).await;
    assert_eq!(run.stdout, b"1572864\n");

    // stdout and stderr arrive separately, with the exit code.
    let run = exec(
        &docker,
        &id,
        &["sh", "-c", "echo out; echo err >&2; exit 43"],
        None,
        None,
    )
    .await;
    assert_eq!(run.stdout, b"out\n");
    assert_eq!(run.stderr, b"err\n");
    assert_eq!(run.exit_code, Some(43));

    let run = exec(
        &docker,
        &id,
        &["head", "-c", "1100000", "/dev/zero"],
        None,
        None,
    )
    .await;
    assert_eq!(run.stdout.len(), 1_100_000);
    assert!(run.stdout.iter().all(|b| *b == 0));
    assert!(run.largest_frame <= 64 * 1024);

    // The container's user applies unless the exec overrides it.
    let run = exec(&docker, &id, &["id"], None, None).await;
    assert_eq!(
        run.stdout,
        b"uid=1000(runtime) gid=1000(runtime) groups=1000(runtime)\n"
    );
    let run = exec(&docker, &id, &["sh", "-c", "id; false"], None, Some("0:0")).await;
    assert_eq!(run.stdout, b"uid=0(root) gid=0(root) groups=0(root)\n");
    assert_eq!(run.exit_code, Some(1));

    let run = exec(&docker, &id, &["ls", "/"], None, None).await;
    assert_eq!(run.stderr, b"unsupported fixture command\n");
    assert_eq!(run.exit_code, Some(127));
    assert_eq!(engine.exec_starts(), 9);
}

#[tokio::test]
async fn exec_needs_a_running_container() {
    let engine = FakeDockerEngine::start().await.expect("start engine");
    engine.insert_image(IMAGE, IMAGE_ID);
    let docker = connect(&engine);
    docker
        .create_container(
            named("oac-idle"),
            ContainerCreateBody {
                image: Some(IMAGE_ID.to_owned()),
                ..Default::default()
            },
        )
        .await
        .expect("create by image id");
    let options = CreateExecOptions {
        cmd: Some(vec!["id".to_owned()]),
        attach_stdout: Some(true),
        ..Default::default()
    };
    let (status, _) = server_error(docker.create_exec("oac-idle", options.clone()).await);
    assert_eq!(status, 409);
    let (status, _) = server_error(docker.create_exec("absent", options).await);
    assert_eq!(status, 404);
    let (status, _) = server_error(docker.inspect_exec("no-such-exec").await);
    assert_eq!(status, 404);
    let (status, _) = server_error(docker.start_exec("no-such-exec", None).await);
    assert_eq!(status, 404);
    assert_eq!(engine.exec_starts(), 0);

    // Detached start answers at once; an exec runs only once.
    docker
        .start_container("oac-idle", None)
        .await
        .expect("start");
    let created = docker
        .create_exec(
            "oac-idle",
            CreateExecOptions {
                cmd: Some(vec!["sh".to_owned(), "-c".to_owned(), "exit 7".to_owned()]),
                ..Default::default()
            },
        )
        .await
        .expect("create exec");
    let before = docker.inspect_exec(&created.id).await.expect("inspect");
    assert_eq!((before.running, before.exit_code), (Some(false), None));
    let started = docker
        .start_exec(
            &created.id,
            Some(StartExecOptions {
                detach: true,
                ..Default::default()
            }),
        )
        .await
        .expect("detached start");
    assert!(matches!(started, StartExecResults::Detached));
    let after = docker.inspect_exec(&created.id).await.expect("inspect");
    assert_eq!((after.running, after.exit_code), (Some(false), Some(7)));
    let (status, _) = server_error(docker.start_exec(&created.id, None).await);
    assert_eq!(status, 409);
    assert_eq!(engine.exec_starts(), 1);
}

#[tokio::test]
async fn requests_are_recorded_without_version_or_query() {
    let engine = FakeDockerEngine::start().await.expect("start engine");
    engine.insert_image(IMAGE, IMAGE_ID);
    let docker = connect(&engine);
    docker
        .list_containers(Some(ListContainersOptions {
            all: true,
            filters: Some(label_filter(&["a=b"])),
            ..Default::default()
        }))
        .await
        .expect("list");
    let id = running_container(&docker, "oac-rq", "oac-rq-home", None).await;
    let run = exec(&docker, &id, &["id"], None, None).await;
    assert_eq!(run.exit_code, Some(0));
    let requests = engine.requests();
    assert_eq!(requests[0], "GET /containers/json");
    assert_eq!(requests[1], "POST /containers/create");
    assert_eq!(requests[2], "POST /containers/oac-rq/start");
    assert_eq!(requests[3], format!("POST /containers/{id}/exec"));
    assert!(requests[4].starts_with("POST /exec/") && requests[4].ends_with("/start"));
    assert!(requests[5].starts_with("GET /exec/") && requests[5].ends_with("/json"));
    assert_eq!(requests.len(), 6);
    assert!(
        requests
            .iter()
            .all(|r| !r.contains("/v1.") && !r.contains('?'))
    );
    engine.clear_requests();
    assert!(engine.requests().is_empty());
}

/// A raw request, to see status, headers and body exactly as sent, and a
/// version prefix however the client spells the path.
async fn raw_request(engine: &FakeDockerEngine, request: &str) -> String {
    let mut stream = tokio::net::UnixStream::connect(engine.socket())
        .await
        .expect("connect");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send request");
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .await
        .expect("read response");
    String::from_utf8(response).expect("UTF-8 response")
}

#[tokio::test]
async fn errors_carry_the_canary_and_prefixes_are_stripped() {
    let engine = FakeDockerEngine::start().await.expect("start engine");
    let response = raw_request(
        &engine,
        "GET /v1.45/no/such/route?x=1 HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n",
    )
    .await;
    let lower = response.to_ascii_lowercase();
    assert!(response.starts_with("HTTP/1.1 404"), "{response}");
    assert!(
        lower.contains("content-type: application/json"),
        "{response}"
    );
    let body = response.split("\r\n\r\n").nth(1).expect("a body");
    let json: serde_json::Value = serde_json::from_str(body.trim()).expect("JSON body");
    assert!(
        json["message"]
            .as_str()
            .is_some_and(|m| m.contains(NATIVE_ERROR_CANARY))
    );

    let ping = raw_request(
        &engine,
        "GET /v1.45/_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(ping.starts_with("HTTP/1.1 200"), "{ping}");
    assert!(ping.ends_with("OK"), "{ping}");
    let volume = raw_request(
        &engine,
        "GET /v1.45/volumes/nothing HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(volume.starts_with("HTTP/1.1 404"), "{volume}");
    assert!(volume.contains(NATIVE_ERROR_CANARY), "{volume}");
    assert_eq!(
        engine.requests(),
        ["GET /no/such/route", "GET /_ping", "GET /volumes/nothing"]
    );

    // The legacy map form of filters is accepted too.
    engine.insert_volume("v1", BTreeMap::from([("k".to_owned(), "v".to_owned())]));
    engine.insert_volume("v2", BTreeMap::new());
    let listed = raw_request(
        &engine,
        "GET /volumes?filters=%7B%22label%22%3A%7B%22k%3Dv%22%3Atrue%7D%7D HTTP/1.1\r\n\
         Host: docker\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(listed.contains("\"Name\":\"v1\""), "{listed}");
    assert!(!listed.contains("\"Name\":\"v2\""), "{listed}");
    let bad = raw_request(
        &engine,
        "GET /volumes?filters=%7B%22bogus%22%3A%5B%5D%7D HTTP/1.1\r\n\
         Host: docker\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
}

#[tokio::test]
async fn dropping_the_engine_stops_serving() {
    let engine = FakeDockerEngine::start().await.expect("start engine");
    let socket = engine.socket().to_path_buf();
    let docker = connect(&engine);
    docker.ping().await.expect("ping");
    drop(engine);
    tokio::task::yield_now().await;
    assert!(!socket.exists(), "the temp dir goes with the engine");
    assert!(docker.ping().await.is_err());
}
