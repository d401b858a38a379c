//! Straight to a Docker Engine, outside the host: what the real-engine
//! tests set up, look at and clean up on the engine themselves.

use bollard::Docker;
use std::path::Path;

/// A client of the engine at `socket`.
pub(crate) fn engine_client(socket: &Path) -> Docker {
    Docker::connect_with_unix(
        socket.to_str().expect("utf-8 socket path"),
        60,
        bollard::API_DEFAULT_VERSION,
    )
    .expect("engine")
}

/// `prefix` made unique to this process and moment (tests share an engine).
pub(crate) fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{nanos}", std::process::id())
}

/// Creates volume `name` labelled for another installation.
pub(crate) async fn create_foreign_volume(engine: &Docker, name: &str) {
    let request = bollard::models::VolumeCreateRequest {
        name: Some(name.into()),
        labels: Some(super::foreign_labels().into_iter().collect()),
        ..Default::default()
    };
    engine.create_volume(request).await.expect("foreign volume");
}

/// Removes volume `name` (test cleanup: it must be there).
pub(crate) async fn remove_volume(engine: &Docker, name: &str) {
    engine
        .remove_volume(name, None::<bollard::query_parameters::RemoveVolumeOptions>)
        .await
        .expect("cleanup");
}

/// Removes the containers `names`, running or not (test cleanup).
pub(crate) async fn remove_containers(engine: &Docker, names: &[String]) {
    let options = bollard::query_parameters::RemoveContainerOptionsBuilder::default()
        .force(true)
        .build();
    for name in names {
        let _ = engine.remove_container(name, Some(options.clone())).await;
    }
}

/// Runs `script` with `sh -c` as root in `container`: its exit code and
/// stdout.
pub(crate) async fn engine_sh(engine: &Docker, container: &str, script: &str) -> (i64, String) {
    use futures_util::StreamExt;
    let exec = engine
        .create_exec(
            container,
            bollard::models::ExecConfig {
                cmd: Some(vec!["sh".into(), "-c".into(), script.into()]),
                user: Some("0".into()),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                ..Default::default()
            },
        )
        .await
        .expect("exec created");
    let mut stdout = String::new();
    if let bollard::exec::StartExecResults::Attached { mut output, .. } = engine
        .start_exec(&exec.id, None)
        .await
        .expect("exec started")
    {
        while let Some(Ok(chunk)) = output.next().await {
            if let bollard::container::LogOutput::StdOut { message } = chunk {
                stdout.push_str(&String::from_utf8_lossy(&message));
            }
        }
    }
    let inspected = engine.inspect_exec(&exec.id).await.expect("exec inspected");
    (inspected.exit_code.unwrap_or(-1), stdout)
}
