//! The runtime images' inits run for real, as root in a container of the
//! test runtime image on the private Docker Engine: the E2B template's
//! (`plugins/e2b/template/oac-e2b-init`) and the microsandbox image's
//! (`plugins/microsandbox/image/oac-microsandbox-init`). Each writes the
//! bootstrap file 0600 and owned by 1000, starts the daemon as 1000 and
//! refuses a second run.

use crate::support::*;
use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{CreateContainerOptionsBuilder, UploadToContainerOptionsBuilder};

const E2B_INIT: &str = include_str!("../../../plugins/e2b/template/oac-e2b-init");
const MICROSANDBOX_INIT: &str =
    include_str!("../../../plugins/microsandbox/image/oac-microsandbox-init");

/// A running container of the test runtime image with `init` installed
/// as `/usr/local/bin/<file>` (and, with `mounts`, the capability to bind
/// mount, as a microVM's root has).
async fn container_with(engine: &Docker, file: &str, init: &str, mounts: bool) -> String {
    let image = runtime_image_id(engine).await;
    let name = format!("{file}-{}", std::process::id());
    let options = CreateContainerOptionsBuilder::default().name(&name).build();
    let body = ContainerCreateBody {
        image: Some(image),
        user: Some("0".into()),
        cmd: Some(vec!["sleep".into(), "600".into()]),
        network_disabled: Some(true),
        host_config: mounts.then(|| HostConfig {
            cap_add: Some(vec!["SYS_ADMIN".into()]),
            security_opt: Some(vec!["apparmor=unconfined".into()]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let created = engine
        .create_container(Some(options), body)
        .await
        .expect("container");
    let id = created.id;
    engine
        .start_container(
            &id,
            None::<bollard::query_parameters::StartContainerOptions>,
        )
        .await
        .expect("started");
    let mut archive = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(init.len() as u64);
    header.set_mode(0o755);
    header.set_cksum();
    archive
        .append_data(&mut header, file, init.as_bytes())
        .expect("tar");
    let archive = archive.into_inner().expect("tar bytes");
    engine
        .upload_to_container(
            &id,
            Some(
                UploadToContainerOptionsBuilder::default()
                    .path("/usr/local/bin")
                    .build(),
            ),
            bollard::body_full(archive.into()),
        )
        .await
        .expect("init uploaded");
    id
}

/// Runs `checks`, then removes the container whatever they found.
async fn checked(engine: &Docker, id: &str, checks: impl std::future::Future<Output = ()>) {
    let outcome = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(checks)).await;
    remove_containers(engine, &[id.to_string()]).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// The bootstrap record each init is given.
const RECORD: &str = r#"{"core_url":"https://core.example","daemon_credential":"init-canary","device_id":"d","harness":"h","version":1}"#;

/// Runs `run` (an init given [`RECORD`] on stdin) and checks what every
/// init promises: it succeeds, the bootstrap file holds exactly the record,
/// 0600 and owned by 1000:1000, one daemon runs as 1000, and a second run
/// is refused.
async fn bootstraps_once(engine: &Docker, id: &str, run: &str) {
    let (code, _) = engine_sh(engine, id, run).await;
    assert_eq!(code, 0, "the init succeeds");
    let (_, file) = engine_sh(
        engine,
        id,
        "stat -c '%a %u %g' /home/runtime/runtime-bootstrap.json; cat /home/runtime/runtime-bootstrap.json",
    )
    .await;
    assert_eq!(file, format!("600 1000 1000\n{RECORD}"));
    // The stand-in daemon execs `sleep 2147483647` once it accepted the
    // bootstrap file: the uids of such processes.
    let daemons = "for p in /proc/[0-9]*; do if grep -q '214748364[7]' $p/cmdline 2>/dev/null; then awk '/^Uid:/{print $2}' $p/status; fi; done";
    let (_, uids) = engine_sh(engine, id, daemons).await;
    assert_eq!(uids.trim(), "1000", "one daemon, running as 1000");
    let (again, _) = engine_sh(engine, id, run).await;
    assert_eq!(again, 65, "a second run is refused");
}

/// On the engine of `test`: a container with the init `file` (`init`'s
/// text) installed, which `run` runs; checks what every init promises
/// ([`bootstraps_once`]), then `more` (given the engine and the container),
/// and removes the container whatever they found.
async fn init_checked(
    test: &str,
    (file, init, mounts): (&str, &str, bool),
    run: &str,
    more: impl AsyncFnOnce(&Docker, &str),
) {
    let Some(socket) = engine_socket(test) else {
        return;
    };
    let engine = engine_client(&socket);
    let id = container_with(&engine, file, init, mounts).await;
    let checks = async {
        bootstraps_once(&engine, &id, run).await;
        more(&engine, &id).await;
    };
    checked(&engine, &id, checks).await;
}

#[tokio::test]
async fn the_template_init_bootstraps_once_as_the_runtime_user() {
    let init = ("oac-e2b-init", E2B_INIT, false);
    let run = format!("printf '%s' '{RECORD}' | oac-e2b-init inst-1 t e alloc-1");
    init_checked("e2b template init", init, &run, async |engine, id| {
        let (_, ready) = engine_sh(engine, id, "cat /run/oac/ready.json").await;
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&ready).expect("ready record"),
            serde_json::json!({"installation": "inst-1", "tenant": "t",
                               "environment": "e", "allocation": "alloc-1"})
        );
        let (bad, _) = engine_sh(
            engine,
            id,
            "rm -rf /run/oac /home/runtime/runtime-bootstrap.json; echo '{}' | oac-e2b-init 'bad name' t e a",
        )
        .await;
        assert_eq!(bad, 64, "an identity part that is not an identifier");
    })
    .await;
}

#[tokio::test]
async fn the_microsandbox_init_bootstraps_once_and_binds_the_workspace() {
    let init = ("oac-microsandbox-init", MICROSANDBOX_INIT, true);
    let run = format!("printf '%s' '{RECORD}' | oac-microsandbox-init");
    init_checked("microsandbox image init", init, &run, async |engine, id| {
        let (_, dirs) = engine_sh(
            engine,
            id,
            "stat -c '%n %a %u' /environment/workspace /environment/staging /environment/initialization /environment/packages",
        )
        .await;
        assert_eq!(
            dirs,
            "/environment/workspace 700 1000\n/environment/staging 700 1000\n\
             /environment/initialization 700 1000\n/environment/packages 700 1000\n"
        );
        let (bound, _) = engine_sh(
            engine,
            id,
            "echo through > /workspace/f && [ \"$(cat /environment/workspace/f)\" = through ]",
        )
        .await;
        assert_eq!(bound, 0, "/workspace is /environment/workspace");
        let (arguments, _) =
            engine_sh(engine, id, "echo '{}' | oac-microsandbox-init extra").await;
        assert_eq!(arguments, 64, "the record comes only on stdin");
        let (linked, _) = engine_sh(
            engine,
            id,
            "rm -f /home/runtime/runtime-bootstrap.json && rm -rf /environment/packages && \
             ln -s /etc /environment/packages && echo '{}' | oac-microsandbox-init",
        )
        .await;
        assert_eq!(linked, 66, "a directory that is a link is never followed");
    })
    .await;
}
