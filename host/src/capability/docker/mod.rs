//! The `docker` capability: a typed Engine API subset on bollard, over an
//! explicit Unix socket. Every request is policed before it is sent (the
//! isolation floor, installation ownership, size bounds) and bounded by the
//! call's remaining budget. Nothing is retried.

pub mod floor;

use crate::bindings::oac::sandbox_provider::docker::{
    ContainerSpec, ContainerStatus, ContainerSummary, DockerError, EngineInfo, EngineVersion,
    ExecOutput, ExecSpec, ImageSummary, Label, StatsReading, VolumeSummary,
};
use crate::capability::faults::{Fault, NativeHook, NativeRequest};
use bollard::Docker;
use bollard::errors::Error as BollardError;
use bollard::models::{
    ContainerCreateBody, ContainerStateStatusEnum, ExecConfig, HostConfig, Mount as EngineMount,
    MountType, MountVolumeOptions, VolumeCreateRequest,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, ListVolumesOptionsBuilder,
    RemoveContainerOptionsBuilder, StatsOptionsBuilder, UploadToContainerOptionsBuilder,
};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// The label every resource of this installation carries.
pub const INSTALLATION_LABEL: &str = "io.oac.installation";
/// Oldest Engine API the typed subset needs (volume subpath mounts).
pub const MIN_API_VERSION: (u32, u32) = (1, 45);
/// Largest stdin an exec accepts: 50 MiB + 32 bytes.
pub const MAX_STDIN_BYTES: usize = 50 * 1024 * 1024 + 32;
/// Largest output bound per stream: 1 MiB.
pub const MAX_OUTPUT_BYTES: u32 = 1024 * 1024;
/// Largest archive an upload accepts: 64 MiB.
pub const MAX_ARCHIVE_BYTES: usize = 64 * 1024 * 1024;

/// Why the capability cannot be constructed for a node. No native text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DockerConnectError {
    /// The socket is missing or the engine does not answer.
    #[error("the Docker Engine socket does not answer")]
    Unreachable,
    /// The engine speaks an API older than 1.45.
    #[error("the Docker Engine API is older than 1.45")]
    TooOld,
}

/// The Docker broker of one node binding.
#[derive(Clone)]
pub struct DockerBroker {
    client: Docker,
    installation: String,
    hook: Option<Arc<dyn NativeHook>>,
}

fn parse_api_version(version: &str) -> Option<(u32, u32)> {
    let (major, minor) = version.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

fn classify(error: BollardError) -> DockerError {
    match error {
        BollardError::DockerResponseServerError {
            status_code: 404, ..
        } => DockerError::NotFound,
        BollardError::DockerResponseServerError {
            status_code: 409, ..
        } => DockerError::Conflict,
        BollardError::DockerResponseServerError { .. } => DockerError::Failed,
        BollardError::IOError { err }
            if matches!(
                err.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::PermissionDenied
            ) =>
        {
            DockerError::Unavailable
        }
        _ => DockerError::Unconfirmed,
    }
}

fn to_labels(map: Option<HashMap<String, String>>) -> Vec<Label> {
    let mut labels: Vec<Label> = map.unwrap_or_default().into_iter().collect();
    labels.sort();
    labels
}

/// Under [`Fault::ForeignOwnership`], the resource appears labelled for
/// another installation.
fn relabel(mut labels: Vec<Label>, fault: Option<Fault>) -> Vec<Label> {
    if fault == Some(Fault::ForeignOwnership) {
        labels.retain(|(key, _)| key != INSTALLATION_LABEL);
        labels.push((
            INSTALLATION_LABEL.to_string(),
            "foreign-installation".to_string(),
        ));
        labels.sort();
    }
    labels
}

fn carries_installation(labels: &[Label], installation: &str) -> bool {
    let mut values = labels.iter().filter(|(key, _)| key == INSTALLATION_LABEL);
    matches!((values.next(), values.next()), (Some((_, value)), None) if value == installation)
}

fn status(status: Option<ContainerStateStatusEnum>) -> ContainerStatus {
    match status {
        Some(ContainerStateStatusEnum::RUNNING) => ContainerStatus::Running,
        Some(ContainerStateStatusEnum::PAUSED) => ContainerStatus::Paused,
        Some(ContainerStateStatusEnum::RESTARTING) => ContainerStatus::Restarting,
        Some(ContainerStateStatusEnum::REMOVING) => ContainerStatus::Removing,
        Some(ContainerStateStatusEnum::EXITED) => ContainerStatus::Exited,
        Some(ContainerStateStatusEnum::DEAD) => ContainerStatus::Dead,
        _ => ContainerStatus::Created,
    }
}

fn to_i64(value: u64) -> Option<i64> {
    (value != 0).then(|| i64::try_from(value).unwrap_or(i64::MAX))
}

fn engine_body(spec: &ContainerSpec) -> ContainerCreateBody {
    let mounts = spec
        .mounts
        .iter()
        .map(|mount| EngineMount {
            typ: Some(MountType::VOLUME),
            source: Some(mount.source.clone()),
            target: Some(mount.target.clone()),
            read_only: Some(mount.read_only),
            volume_options: mount.subpath.clone().map(|subpath| MountVolumeOptions {
                subpath: Some(subpath),
                ..Default::default()
            }),
            ..Default::default()
        })
        .collect();
    let tmpfs = spec
        .tmpfs
        .iter()
        .map(|tmpfs| {
            (
                tmpfs.target.clone(),
                format!("size={},mode={:o}", tmpfs.size_bytes, tmpfs.mode),
            )
        })
        .collect();
    ContainerCreateBody {
        image: Some(spec.image.clone()),
        labels: Some(spec.labels.iter().cloned().collect()),
        cmd: Some(spec.cmd.clone()),
        env: Some(spec.env.clone()),
        user: spec.user.clone(),
        working_dir: spec.working_dir.clone(),
        host_config: Some(HostConfig {
            readonly_rootfs: Some(spec.read_only_rootfs),
            cap_drop: Some(spec.cap_drop.clone()),
            security_opt: Some(spec.security_opt.clone()),
            privileged: Some(false),
            network_mode: spec.network_mode.clone(),
            pid_mode: spec.pid_mode.clone(),
            ipc_mode: spec.ipc_mode.clone(),
            extra_hosts: Some(spec.extra_hosts.clone()),
            nano_cpus: to_i64(spec.nano_cpus),
            memory: to_i64(spec.memory_bytes),
            pids_limit: to_i64(spec.pids_limit),
            tmpfs: Some(tmpfs),
            mounts: Some(mounts),
            masked_paths: spec.masked_paths.clone(),
            readonly_paths: spec.readonly_paths.clone(),
            init: Some(spec.init),
            ..Default::default()
        }),
        ..Default::default()
    }
}

impl DockerBroker {
    /// Connects to the engine at `socket` and requires API ≥ 1.45. The
    /// construction check itself is not shown to `hook`.
    pub async fn connect(
        socket: &Path,
        installation: &str,
        timeout: Duration,
        hook: Option<Arc<dyn NativeHook>>,
    ) -> Result<Self, DockerConnectError> {
        let path = socket.to_str().ok_or(DockerConnectError::Unreachable)?;
        let pinned = bollard::ClientVersion {
            major_version: 1,
            minor_version: 45,
        };
        let client = Docker::connect_with_unix(path, 120, &pinned)
            .map_err(|_| DockerConnectError::Unreachable)?;
        let version = tokio::time::timeout(timeout, client.version())
            .await
            .map_err(|_| DockerConnectError::Unreachable)?
            .map_err(|_| DockerConnectError::Unreachable)?;
        let api = version
            .api_version
            .as_deref()
            .and_then(parse_api_version)
            .ok_or(DockerConnectError::TooOld)?;
        if api < MIN_API_VERSION {
            return Err(DockerConnectError::TooOld);
        }
        Ok(Self {
            client,
            installation: installation.to_string(),
            hook,
        })
    }

    /// Shows the hook a call the component made (see [`NativeHook::on_call`]).
    pub fn note_call(&self, function: &'static str, target: &str) {
        if let Some(hook) = &self.hook {
            hook.on_call("docker", function, target);
        }
    }

    /// Shows the request to the hook, which may choose a fault for it.
    fn decide(&self, action: &'static str, target: &str) -> (NativeRequest, Option<Fault>) {
        let request = NativeRequest {
            capability: "docker",
            action,
            target: target.to_string(),
        };
        let fault = self
            .hook
            .as_ref()
            .and_then(|hook| hook.on_request(&request));
        (request, fault)
    }

    /// Runs one engine request within the call's deadline, applying the
    /// decided fault. A request is never sent once the deadline has passed;
    /// one cut off by it is `unconfirmed`. Nothing is retried.
    async fn dispatch<T>(
        &self,
        deadline: Instant,
        (request, fault): (NativeRequest, Option<Fault>),
        sending: impl Future<Output = Result<T, BollardError>>,
    ) -> Result<T, DockerError> {
        if Instant::now() >= deadline || fault == Some(Fault::FailBeforeDispatch) {
            return Err(DockerError::Unavailable);
        }
        if request.is_removal() && fault == Some(Fault::FailCleanup) {
            return Err(DockerError::Failed);
        }
        let outcome = tokio::time::timeout_at(deadline.into(), sending).await;
        if let Some(hook) = &self.hook {
            hook.on_response(&request, matches!(outcome, Ok(Ok(_))));
        }
        match fault {
            Some(Fault::LoseResponse) => return Err(DockerError::Unconfirmed),
            Some(Fault::CancelAfterDispatch) => {
                tokio::time::sleep_until(deadline.into()).await;
                return Err(DockerError::Unconfirmed);
            }
            _ => {}
        }
        match outcome {
            Ok(result) => result.map_err(classify),
            Err(_) => Err(DockerError::Unconfirmed),
        }
    }

    /// [`Self::decide`] then [`Self::dispatch`].
    async fn send<T>(
        &self,
        deadline: Instant,
        action: &'static str,
        target: &str,
        sending: impl Future<Output = Result<T, BollardError>>,
    ) -> Result<T, DockerError> {
        let decision = self.decide(action, target);
        self.dispatch(deadline, decision, sending).await
    }

    /// Engine version.
    pub async fn version(&self, deadline: Instant) -> Result<EngineVersion, DockerError> {
        let version = self
            .send(deadline, "version", "", self.client.version())
            .await?;
        Ok(EngineVersion {
            version: version.version.unwrap_or_default(),
            api_version: version.api_version.unwrap_or_default(),
        })
    }

    /// Engine capabilities.
    pub async fn info(&self, deadline: Instant) -> Result<EngineInfo, DockerError> {
        let info = self.send(deadline, "info", "", self.client.info()).await?;
        Ok(EngineInfo {
            cpus: info.ncpu.and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
            memory_bytes: info
                .mem_total
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0),
            memory_limit: info.memory_limit.unwrap_or(false),
            cpu_limit: info.cpu_cfs_quota.unwrap_or(false),
        })
    }

    /// Inspect a local image.
    pub async fn image_inspect(
        &self,
        image: &str,
        deadline: Instant,
    ) -> Result<ImageSummary, DockerError> {
        if image.trim().is_empty() {
            return Err(DockerError::Invalid);
        }
        let found = self
            .send(
                deadline,
                "image-inspect",
                image,
                self.client.inspect_image(image),
            )
            .await?;
        Ok(ImageSummary {
            id: found.id.unwrap_or_default(),
            repo_digests: found.repo_digests.unwrap_or_default(),
            repo_tags: found.repo_tags.unwrap_or_default(),
        })
    }

    /// Inspect any container; the caller checks its labels.
    pub async fn container_inspect(
        &self,
        container: &str,
        deadline: Instant,
    ) -> Result<ContainerSummary, DockerError> {
        if !floor::is_resource_name(container) {
            return Err(DockerError::Invalid);
        }
        let decision = self.decide("container-inspect", container);
        let fault = decision.1;
        let found = self
            .dispatch(
                deadline,
                decision,
                self.client.inspect_container(container, None),
            )
            .await?;
        let config = found.config.unwrap_or_default();
        let host = found.host_config.unwrap_or_default();
        let state = found.state.unwrap_or_default();
        Ok(ContainerSummary {
            id: found.id.unwrap_or_default(),
            name: found
                .name
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_string(),
            labels: relabel(to_labels(config.labels), fault),
            image: config.image.unwrap_or_default(),
            image_id: found.image.unwrap_or_default(),
            status: status(state.status),
            started_at: state.started_at.filter(|at| !at.starts_with("0001-")),
            nano_cpus: host
                .nano_cpus
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0),
            memory_bytes: host.memory.and_then(|n| u64::try_from(n).ok()).unwrap_or(0),
        })
    }

    /// Fails with `ownership` unless the container carries this installation's label.
    async fn owned_container(
        &self,
        container: &str,
        deadline: Instant,
    ) -> Result<ContainerSummary, DockerError> {
        let found = self.container_inspect(container, deadline).await?;
        if carries_installation(&found.labels, &self.installation) {
            Ok(found)
        } else {
            Err(DockerError::Ownership)
        }
    }

    /// Fails with `ownership` unless the volume carries this installation's label.
    async fn owned_volume(
        &self,
        volume: &str,
        deadline: Instant,
    ) -> Result<VolumeSummary, DockerError> {
        let found = self.volume_inspect(volume, deadline).await?;
        if carries_installation(&found.labels, &self.installation) {
            Ok(found)
        } else {
            Err(DockerError::Ownership)
        }
    }

    fn label_filters(&self, labels: &[Label]) -> HashMap<String, Vec<String>> {
        let mut wanted: Vec<String> = labels
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        wanted.push(format!("{INSTALLATION_LABEL}={}", self.installation));
        HashMap::from([("label".to_string(), wanted)])
    }

    /// Names of this installation's containers carrying all `labels`.
    pub async fn container_list(
        &self,
        labels: &[Label],
        deadline: Instant,
    ) -> Result<Vec<String>, DockerError> {
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&self.label_filters(labels))
            .build();
        let found = self
            .send(
                deadline,
                "container-list",
                "",
                self.client.list_containers(Some(options)),
            )
            .await?;
        let mut names: Vec<String> = found
            .into_iter()
            .filter_map(|summary| summary.names.and_then(|names| names.into_iter().next()))
            .map(|name| name.trim_start_matches('/').to_string())
            .collect();
        names.sort();
        Ok(names)
    }

    /// Creates a container after the floor, label and volume-ownership checks.
    pub async fn container_create(
        &self,
        spec: &ContainerSpec,
        deadline: Instant,
    ) -> Result<String, DockerError> {
        if floor::check(spec).is_err() {
            return Err(DockerError::Invalid);
        }
        if !carries_installation(&spec.labels, &self.installation) {
            return Err(DockerError::Ownership);
        }
        for mount in &spec.mounts {
            self.owned_volume(&mount.source, deadline).await?;
        }
        let options = CreateContainerOptionsBuilder::default()
            .name(&spec.name)
            .build();
        let created = self
            .send(
                deadline,
                "container-create",
                &spec.name,
                self.client
                    .create_container(Some(options), engine_body(spec)),
            )
            .await?;
        Ok(created.id)
    }

    /// Starts an owned container.
    pub async fn container_start(
        &self,
        container: &str,
        deadline: Instant,
    ) -> Result<(), DockerError> {
        self.owned_container(container, deadline).await?;
        self.send(
            deadline,
            "container-start",
            container,
            self.client.start_container(container, None),
        )
        .await
    }

    /// Removes an owned container.
    pub async fn container_remove(
        &self,
        container: &str,
        force: bool,
        deadline: Instant,
    ) -> Result<(), DockerError> {
        self.owned_container(container, deadline).await?;
        let options = RemoveContainerOptionsBuilder::default()
            .force(force)
            .v(false)
            .build();
        self.send(
            deadline,
            "container-remove",
            container,
            self.client.remove_container(container, Some(options)),
        )
        .await
    }

    /// One stats reading of an owned container.
    pub async fn container_stats(
        &self,
        container: &str,
        deadline: Instant,
    ) -> Result<StatsReading, DockerError> {
        self.owned_container(container, deadline).await?;
        let options = StatsOptionsBuilder::default()
            .stream(false)
            .one_shot(true)
            .build();
        let mut stream = self.client.stats(container, Some(options));
        let reading = self
            .send(deadline, "container-stats", container, async {
                stream
                    .next()
                    .await
                    .unwrap_or(Err(BollardError::RequestTimeoutError))
            })
            .await?;
        let cpu = reading.cpu_stats.unwrap_or_default();
        let memory = reading.memory_stats.unwrap_or_default();
        Ok(StatsReading {
            cpu_total_ns: cpu
                .cpu_usage
                .and_then(|usage| usage.total_usage)
                .unwrap_or(0),
            online_cpus: cpu.online_cpus.unwrap_or(0),
            memory_usage_bytes: memory.usage.unwrap_or(0),
            memory_limit_bytes: memory.limit.unwrap_or(0),
        })
    }

    /// Inspect any volume; the caller checks its labels.
    pub async fn volume_inspect(
        &self,
        volume: &str,
        deadline: Instant,
    ) -> Result<VolumeSummary, DockerError> {
        if !floor::is_resource_name(volume) {
            return Err(DockerError::Invalid);
        }
        let decision = self.decide("volume-inspect", volume);
        let fault = decision.1;
        let found = self
            .dispatch(deadline, decision, self.client.inspect_volume(volume))
            .await?;
        Ok(VolumeSummary {
            name: found.name,
            labels: relabel(to_labels(Some(found.labels)), fault),
        })
    }

    /// Names of this installation's volumes carrying all `labels`.
    pub async fn volume_list(
        &self,
        labels: &[Label],
        deadline: Instant,
    ) -> Result<Vec<String>, DockerError> {
        let options = ListVolumesOptionsBuilder::default()
            .filters(&self.label_filters(labels))
            .build();
        let found = self
            .send(
                deadline,
                "volume-list",
                "",
                self.client.list_volumes(Some(options)),
            )
            .await?;
        let mut names: Vec<String> = found
            .volumes
            .unwrap_or_default()
            .into_iter()
            .map(|volume| volume.name)
            .collect();
        names.sort();
        Ok(names)
    }

    /// Creates a volume carrying this installation's label.
    pub async fn volume_create(
        &self,
        volume: &str,
        labels: &[Label],
        deadline: Instant,
    ) -> Result<VolumeSummary, DockerError> {
        if !floor::is_resource_name(volume) {
            return Err(DockerError::Invalid);
        }
        if !carries_installation(labels, &self.installation) {
            return Err(DockerError::Ownership);
        }
        let request = VolumeCreateRequest {
            name: Some(volume.to_string()),
            labels: Some(labels.iter().cloned().collect()),
            ..Default::default()
        };
        let created = self
            .send(
                deadline,
                "volume-create",
                volume,
                self.client.create_volume(request),
            )
            .await?;
        Ok(VolumeSummary {
            name: created.name,
            labels: to_labels(Some(created.labels)),
        })
    }

    /// Removes an owned volume.
    pub async fn volume_remove(&self, volume: &str, deadline: Instant) -> Result<(), DockerError> {
        self.owned_volume(volume, deadline).await?;
        self.send(
            deadline,
            "volume-remove",
            volume,
            self.client.remove_volume(
                volume,
                None::<bollard::query_parameters::RemoveVolumeOptions>,
            ),
        )
        .await
    }

    /// Extracts a tar archive into an owned container.
    pub async fn archive_upload(
        &self,
        container: &str,
        path: &str,
        archive: Vec<u8>,
        deadline: Instant,
    ) -> Result<(), DockerError> {
        if archive.len() > MAX_ARCHIVE_BYTES || !path.starts_with('/') {
            return Err(DockerError::Invalid);
        }
        self.owned_container(container, deadline).await?;
        let options = UploadToContainerOptionsBuilder::default()
            .path(path)
            .build();
        let body = bollard::body_full(archive.into());
        self.send(
            deadline,
            "archive-upload",
            container,
            self.client
                .upload_to_container(container, Some(options), body),
        )
        .await
    }

    /// Runs a command in an owned container: stdin is written then
    /// half-closed, both streams are read to the end into bounded buffers,
    /// and the exit code comes from exec inspect.
    pub async fn exec(
        &self,
        container: &str,
        spec: ExecSpec,
        deadline: Instant,
    ) -> Result<ExecOutput, DockerError> {
        let stdin_len = spec.stdin.as_ref().map_or(0, Vec::len);
        if spec.args.is_empty()
            || stdin_len > MAX_STDIN_BYTES
            || spec.output_limit_bytes > MAX_OUTPUT_BYTES
        {
            return Err(DockerError::Invalid);
        }
        self.owned_container(container, deadline).await?;
        let config = ExecConfig {
            attach_stdin: Some(spec.stdin.is_some()),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            tty: Some(false),
            cmd: Some(spec.args.clone()),
            user: spec.user.clone(),
            working_dir: spec.working_dir.clone(),
            ..Default::default()
        };
        let created = self
            .send(
                deadline,
                "exec-create",
                container,
                self.client.create_exec(container, config),
            )
            .await?;
        let started = self
            .send(
                deadline,
                "exec-start",
                container,
                self.client.start_exec(&created.id, None),
            )
            .await?;
        let bollard::exec::StartExecResults::Attached {
            mut output,
            mut input,
        } = started
        else {
            return Err(DockerError::Unconfirmed);
        };
        let limit = spec.output_limit_bytes as usize;
        let write = async {
            if let Some(stdin) = &spec.stdin {
                input.write_all(stdin).await?;
            }
            input.shutdown().await
        };
        let read = async {
            let (mut stdout, mut stderr, mut overflowed) = (Vec::new(), Vec::new(), false);
            while let Some(frame) = output.next().await {
                let (buffer, bytes) = match frame.map_err(classify)? {
                    bollard::container::LogOutput::StdOut { message } => (&mut stdout, message),
                    bollard::container::LogOutput::StdErr { message } => (&mut stderr, message),
                    _ => continue,
                };
                let room = limit.saturating_sub(buffer.len());
                overflowed |= bytes.len() > room;
                buffer.extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
            Ok::<_, DockerError>((stdout, stderr, overflowed))
        };
        let streams =
            tokio::time::timeout_at(deadline.into(), async { tokio::join!(write, read) }).await;
        let Ok((written, read)) = streams else {
            return Err(DockerError::Unconfirmed);
        };
        let (stdout, stderr, overflowed) = read?;
        // A command may exit without reading all of its stdin; its outcome
        // is still known, so a broken pipe here is not an error.
        if written.is_err() {
            tracing::debug!(event = "exec_stdin_not_consumed");
        }
        let inspected = self
            .send(
                deadline,
                "exec-inspect",
                container,
                self.client.inspect_exec(&created.id),
            )
            .await?;
        let exit_code = match inspected.running {
            Some(false) => inspected
                .exit_code
                .and_then(|code| i32::try_from(code).ok()),
            _ => None,
        };
        Ok(ExecOutput {
            stdout,
            stderr,
            exit_code,
            overflowed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_compare_numerically() {
        assert!(parse_api_version("1.45").is_some_and(|v| v >= MIN_API_VERSION));
        assert!(parse_api_version("1.100").is_some_and(|v| v >= MIN_API_VERSION));
        assert!(parse_api_version("1.44").is_some_and(|v| v < MIN_API_VERSION));
        assert_eq!(parse_api_version("junk"), None);
    }

    #[test]
    fn installation_label_must_be_single_and_equal() {
        let ours = vec![(INSTALLATION_LABEL.to_string(), "inst".to_string())];
        assert!(carries_installation(&ours, "inst"));
        assert!(!carries_installation(&ours, "other"));
        assert!(!carries_installation(&[], "inst"));
        let doubled = vec![
            ours[0].clone(),
            (INSTALLATION_LABEL.to_string(), "other".to_string()),
        ];
        assert!(!carries_installation(&doubled, "inst"));
    }
}
