//! The operations, each over the library's handles. What the runtime has is
//! reported as it is read back; a request's guard is checked on the handle
//! the operation then acts on.

use crate::{probe, runtime};
use microsandbox::sandbox::{SandboxHandle, SandboxStatus};
use microsandbox::{MicrosandboxError, Sandbox, SnapshotState};
use oac_helper_protocol::{
    ErrorCode, Guard, NetworkPolicy, Operation, Outcome, Request, Snapshot, Verified, Vm, VmSpec,
    VmStatus,
};
use std::collections::BTreeMap;

/// Performs `request`.
pub(crate) async fn perform(request: Request) -> Result<Outcome, ErrorCode> {
    let Request {
        runtime,
        deadline_unix_ms,
        operation,
        ..
    } = request;
    if operation == Operation::Probe {
        let probe = probe::probe(&runtime).await;
        return Ok(Outcome::Probe { probe });
    }
    runtime::open(&runtime).await?;
    let _lock = match allocation_of(&operation) {
        Some(name) => Some(runtime::lock_allocation(&runtime, name, deadline_unix_ms).await?),
        None => None,
    };
    match operation {
        Operation::Get { name } => {
            let handle = Sandbox::get(&name).await.map_err(code)?;
            Ok(Outcome::Vm { vm: vm(&handle)? })
        }
        Operation::Create { spec } => create(&spec).await,
        Operation::KillRemove { guard } => kill_remove(&guard).await,
        Operation::GetSnapshot { group, member } => {
            let snapshot = snapshot(&group, &member).await?;
            Ok(Outcome::Snapshot { snapshot })
        }
        Operation::RemoveSnapshot {
            group,
            member,
            snapshot_id,
        } => remove_snapshot(&group, &member, &snapshot_id).await,
        Operation::Exec { guard, command } => exec(&guard, &command, deadline_unix_ms).await,
        Operation::Relabel { guard, labels } => {
            let handle = guarded(&guard).await?;
            let mut change = handle.modify();
            for (key, value) in labels {
                change = change.label(key, value);
            }
            change.next_start().apply().await.map_err(code)?;
            Ok(Outcome::Done)
        }
        Operation::Pause { guard } => {
            let handle = guarded(&guard).await?;
            handle.pause().await.map_err(code)?;
            reread(&guard.name).await
        }
        Operation::Resume { guard } => {
            let handle = guarded(&guard).await?;
            // A paused VM only: the library never starts a stopped one here.
            match handle.status_snapshot() {
                SandboxStatus::Paused => handle.resume().await.map_err(code)?,
                SandboxStatus::Running => {}
                _ => return Err(ErrorCode::Failed),
            }
            reread(&guard.name).await
        }
        Operation::Capture {
            guard,
            group,
            member,
            labels,
        } => {
            guarded(&guard).await?;
            let mut capture = microsandbox::Snapshot::builder(&member)
                .from_sandbox(&guard.name)
                .group(&group)
                .full()
                .record_integrity()
                .guest_flush(microsandbox::snapshot::GuestFlush::Skip);
            for (key, value) in labels {
                capture = capture.label(key, value);
            }
            capture.create().await.map_err(code)?;
            let snapshot = snapshot(&group, &member).await?;
            Ok(Outcome::Snapshot { snapshot })
        }
        Operation::Restore {
            group,
            member,
            snapshot_id,
            name,
            network,
        } => {
            let found = snapshot(&group, &member).await?;
            if found.id != snapshot_id {
                return Err(ErrorCode::Replaced);
            }
            let restore = Sandbox::restore(format!("{group}:{member}")).name(&name);
            let restore = match network {
                NetworkPolicy::None => restore.network_policy(microsandbox::NetworkPolicy::none()),
                NetworkPolicy::Public => restore.network_policy(public()),
            };
            restore.restore().await.map_err(code)?;
            reread(&name).await
        }
        Operation::Metrics { guard } => {
            let handle = guarded(&guard).await?;
            if handle.status_snapshot() != SandboxStatus::Running {
                return Err(ErrorCode::NotFound);
            }
            let sample = handle.metrics().await.map_err(code)?;
            let observed_at_ms = u64::try_from(sample.timestamp.timestamp_millis())
                .map_err(|_| ErrorCode::Unconfirmed)?;
            Ok(Outcome::Metrics {
                metrics: oac_helper_protocol::Metrics {
                    observed_at_ms,
                    uptime_ms: u64::try_from(sample.uptime.as_millis()).unwrap_or(u64::MAX),
                    vcpu_time_ns: sample.vcpu_time_ns,
                    memory_bytes: sample.memory_bytes,
                    memory_limit_bytes: sample.memory_limit_bytes,
                },
            })
        }
        Operation::Probe => Err(ErrorCode::Invalid),
    }
}

/// The VM `name` as the runtime has it now.
async fn reread(name: &str) -> Result<Outcome, ErrorCode> {
    let handle = Sandbox::get(name).await.map_err(code)?;
    Ok(Outcome::Vm { vm: vm(&handle)? })
}

/// Runs a command in the guard's running VM and waits for its exit, its
/// output bounded per stream. No exit seen (a spawn failure, a failure
/// event, the deadline, output over the bound) is `command-unconfirmed`.
async fn exec(
    guard: &Guard,
    command: &oac_helper_protocol::ExecCommand,
    deadline_unix_ms: u64,
) -> Result<Outcome, ErrorCode> {
    use base64::Engine as _;
    let base64 = base64::engine::general_purpose::STANDARD;
    let handle = guarded(guard).await?;
    if handle.status_snapshot() != SandboxStatus::Running {
        return Err(ErrorCode::Failed);
    }
    let stdin = match &command.stdin_base64 {
        Some(text) => base64.decode(text).map_err(|_| ErrorCode::Invalid)?,
        None => Vec::new(),
    };
    let (program, args) = command.args.split_first().ok_or(ErrorCode::Invalid)?;
    let left = deadline_unix_ms.saturating_sub(runtime::now_ms());
    let live = handle.connect().await.map_err(code)?;
    let mut running = live
        .exec_stream_with(program.as_str(), |options| {
            let options = options
                .args(args.iter().cloned())
                .user(command.user.as_str())
                .stdin_bytes(stdin)
                .timeout(std::time::Duration::from_millis(left));
            match &command.working_dir {
                Some(directory) => options.cwd(directory.as_str()),
                None => options,
            }
        })
        .await
        .map_err(|_| ErrorCode::CommandUnconfirmed)?;
    let bound = command.output_limit_bytes as usize;
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let exit_code = loop {
        match running.recv().await {
            Some(microsandbox::ExecEvent::Stdout(bytes)) => stdout.extend_from_slice(&bytes),
            Some(microsandbox::ExecEvent::Stderr(bytes)) => stderr.extend_from_slice(&bytes),
            Some(microsandbox::ExecEvent::Exited { code }) => break code,
            Some(microsandbox::ExecEvent::Started { .. }) => {}
            Some(_) | None => return Err(ErrorCode::CommandUnconfirmed),
        }
        if stdout.len() > bound || stderr.len() > bound {
            return Err(ErrorCode::CommandUnconfirmed);
        }
    };
    Ok(Outcome::Exec {
        output: oac_helper_protocol::ExecOutput {
            stdout_base64: base64.encode(stdout),
            stderr_base64: base64.encode(stderr),
            exit_code,
        },
    })
}

/// Creates and boots the VM, detached, and reads it back. A boot that
/// fails on a node without CPU virtualisation is `no-virtualisation` (the
/// runtime keeps the VM recorded, stopped); any other failure leaves the
/// outcome unknown.
async fn create(spec: &VmSpec) -> Result<Outcome, ErrorCode> {
    match builder(spec).create().await {
        Ok(_) => {}
        Err(MicrosandboxError::SandboxAlreadyExists(_)) => return Err(ErrorCode::Exists),
        Err(MicrosandboxError::BootStart { .. }) if !probe::cpu_virtualisation() => {
            return Err(ErrorCode::NoVirtualisation);
        }
        Err(_) => return Err(ErrorCode::Unconfirmed),
    }
    let handle = Sandbox::get(&spec.name).await.map_err(code)?;
    Ok(Outcome::Vm { vm: vm(&handle)? })
}

/// The VM name whose allocation lock a mutation takes (reads take none).
fn allocation_of(operation: &Operation) -> Option<&str> {
    match operation {
        Operation::Create { spec } => Some(&spec.name),
        Operation::Restore { name, .. } => Some(name),
        Operation::Exec { guard, .. }
        | Operation::Relabel { guard, .. }
        | Operation::Pause { guard }
        | Operation::Resume { guard }
        | Operation::KillRemove { guard }
        | Operation::Capture { guard, .. } => Some(&guard.name),
        Operation::RemoveSnapshot { group, .. } => Some(group),
        Operation::Probe
        | Operation::Get { .. }
        | Operation::GetSnapshot { .. }
        | Operation::Metrics { .. } => None,
    }
}

/// The library's error as a fixed code (its text is dropped here).
fn code(error: MicrosandboxError) -> ErrorCode {
    match error {
        MicrosandboxError::SandboxNotFound(_) | MicrosandboxError::SnapshotNotFound(_) => {
            ErrorCode::NotFound
        }
        MicrosandboxError::SandboxAlreadyExists(_)
        | MicrosandboxError::SnapshotAlreadyExists(_) => ErrorCode::Exists,
        MicrosandboxError::SandboxReplaced { .. } => ErrorCode::Replaced,
        MicrosandboxError::SnapshotIntegrity(_)
        | MicrosandboxError::SandboxStillRunning(_)
        | MicrosandboxError::SandboxNotRunning(_)
        | MicrosandboxError::InvalidConfig(_)
        | MicrosandboxError::Unsupported { .. } => ErrorCode::Failed,
        _ => ErrorCode::Unconfirmed,
    }
}

fn status(status: SandboxStatus) -> Result<VmStatus, ErrorCode> {
    Ok(match status {
        SandboxStatus::Starting => VmStatus::Starting,
        SandboxStatus::Running => VmStatus::Running,
        SandboxStatus::Draining => VmStatus::Draining,
        SandboxStatus::Paused => VmStatus::Paused,
        SandboxStatus::Stopped => VmStatus::Stopped,
        SandboxStatus::Crashed => VmStatus::Crashed,
        // `created` is the cloud backend's; nothing local is in it.
        _ => return Err(ErrorCode::Unconfirmed),
    })
}

/// What the runtime has of the VM behind `handle`, from its persisted
/// configuration.
fn vm(handle: &SandboxHandle) -> Result<Vm, ErrorCode> {
    let config = handle.config().map_err(code)?;
    // The raw JSON carries what the typed view keeps private: the snapshot
    // a restored VM came from.
    let raw: serde_json::Value =
        serde_json::from_str(handle.config_json()).unwrap_or(serde_json::Value::Null);
    Ok(Vm {
        id: handle.id().to_string(),
        name: handle.name().to_string(),
        status: status(handle.status_snapshot())?,
        ..configured(&config, &raw)
    })
}

/// The configuration's part of a [`Vm`] (id, name and status left empty).
fn configured(config: &microsandbox::SandboxConfig, raw: &serde_json::Value) -> Vm {
    let spec = &config.spec;
    let (image, root_disk_mib) = match &spec.image {
        microsandbox::sandbox::RootfsSource::Oci(oci) => (oci.reference.clone(), root_disk(oci)),
        _ => (String::new(), None),
    };
    let snapshot_parent = raw
        .get("snapshot_parent")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string);
    let (disks_mib, other_mounts) = disks(raw);
    Vm {
        id: String::new(),
        name: String::new(),
        status: VmStatus::Stopped,
        labels: spec.labels.clone(),
        image,
        cpus: spec.resources.cpus,
        max_cpus: spec.resources.max_cpus,
        memory_mib: spec.resources.memory_mib,
        root_disk_mib,
        disks_mib,
        user: spec.runtime.user.clone(),
        network: network(raw),
        security_profile: raw
            .get("security_profile")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string),
        ports: u32::try_from(spec.network.ports.len()).unwrap_or(u32::MAX),
        other_mounts,
        secrets: raw
            .pointer("/network/secrets/secrets")
            .and_then(serde_json::Value::as_array)
            .map_or(0, |secrets| {
                u32::try_from(secrets.len()).unwrap_or(u32::MAX)
            }),
        snapshot_parent,
    }
}

/// The library's builder for `spec`: the policy's image, sizes, user,
/// network and guest profile, the host's labels, detached (the VM outlives
/// the helper), and nothing else (no port, host mount or secret).
fn builder(spec: &VmSpec) -> microsandbox::sandbox::SandboxBuilder {
    use microsandbox::sandbox::SecurityProfile;
    let environment_mib = spec.environment_disk_mib;
    let builder = Sandbox::builder(&spec.name)
        .image(spec.image.as_str())
        .root_disk(spec.root_disk_mib)
        .cpus(spec.cpus)
        .max_cpus(spec.cpus)
        .memory(spec.memory_mib)
        .volume(ENVIRONMENT, move |mount| {
            mount.owned_with(move |volume| volume.disk().size(environment_mib))
        })
        .user(spec.user.as_str())
        .security(match spec.security_profile.as_str() {
            "default" => SecurityProfile::Default,
            _ => SecurityProfile::Restricted,
        })
        .labels(spec.labels.clone())
        .detached(true);
    match spec.network {
        NetworkPolicy::None => builder.disable_network(),
        NetworkPolicy::Public => builder.network(|network| network.policy(public())),
    }
}

/// Where the VM's own second disk is mounted.
const ENVIRONMENT: &str = "/environment";

fn public() -> microsandbox::NetworkPolicy {
    microsandbox::NetworkPolicy::from_profiles([microsandbox::NetworkProfile::Public])
}

fn root_disk(oci: &microsandbox::sandbox::OciRootfsSource) -> Option<u32> {
    let value = serde_json::to_value(oci.root_disk.as_ref()?).ok()?;
    value
        .get("size_mib")
        .and_then(serde_json::Value::as_u64)
        .and_then(|size| u32::try_from(size).ok())
}

/// The VM's own disks by guest path (capacity in MiB), and how many other
/// mounts it has (a bind, a named volume, a host disk image, a tmpfs).
fn disks(raw: &serde_json::Value) -> (BTreeMap<String, u32>, u32) {
    let mut owned = BTreeMap::new();
    let mut other = 0u32;
    for mount in raw
        .get("mounts")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
    {
        let guest = mount.get("guest").and_then(serde_json::Value::as_str);
        let own_disk = mount.get("type").and_then(serde_json::Value::as_str) == Some("Owned")
            && mount
                .pointer("/storage/kind")
                .and_then(serde_json::Value::as_str)
                == Some("disk");
        let capacity = mount
            .pointer("/storage/capacity_mib")
            .and_then(serde_json::Value::as_u64)
            .and_then(|size| u32::try_from(size).ok());
        match (guest, capacity) {
            (Some(guest), Some(capacity)) if own_disk && !owned.contains_key(guest) => {
                owned.insert(guest.to_string(), capacity);
            }
            _ => other = other.saturating_add(1),
        }
    }
    (owned, other)
}

/// The network policy, when it is exactly one this protocol names.
fn network(raw: &serde_json::Value) -> Option<NetworkPolicy> {
    let network = raw.get("network")?;
    if network.get("enabled").and_then(serde_json::Value::as_bool) == Some(false) {
        return Some(NetworkPolicy::None);
    }
    let public = serde_json::to_value(public()).ok()?;
    (network.get("policy") == Some(&public)).then_some(NetworkPolicy::Public)
}

/// The guard's VM, if it still is the one the host checked.
async fn guarded(guard: &Guard) -> Result<SandboxHandle, ErrorCode> {
    let handle = Sandbox::get(&guard.name).await.map_err(code)?;
    let labels = &handle.config().map_err(code)?.spec.labels;
    let same = handle.id().to_string() == guard.id
        && guard
            .labels
            .iter()
            .all(|(key, value)| labels.get(key) == Some(value));
    same.then_some(handle).ok_or(ErrorCode::Replaced)
}

/// SIGKILL (never a graceful stop: a stopping VM could still run), remove,
/// and look again: done only once the VM is absent. An absent VM is done.
async fn kill_remove(guard: &Guard) -> Result<Outcome, ErrorCode> {
    let handle = match guarded(guard).await {
        Err(ErrorCode::NotFound) => return Ok(Outcome::Done),
        other => other?,
    };
    handle.kill().await.map_err(code)?;
    handle.remove().await.map_err(code)?;
    match Sandbox::get(&guard.name).await {
        Err(MicrosandboxError::SandboxNotFound(_)) => Ok(Outcome::Done),
        _ => Err(ErrorCode::Unconfirmed),
    }
}

/// The snapshot `group:member`, opened and verified.
async fn snapshot(group: &str, member: &str) -> Result<Snapshot, ErrorCode> {
    let handle = microsandbox::Snapshot::get(&format!("{group}:{member}"))
        .await
        .map_err(code)?;
    let artifact = handle.open().await.map_err(code)?;
    let manifest = artifact.manifest();
    let checkpoint = match &manifest.state {
        SnapshotState::Checkpoint(state) => {
            Some((state.checkpoint_id.clone(), state.checkpoint_root.clone()))
        }
        SnapshotState::File(_) => None,
    };
    let verified = match artifact.verify().await {
        Ok(report) => match (report.upper, report.checkpoint, &checkpoint) {
            (
                microsandbox::UpperVerifyStatus::Verified { .. },
                Some(root),
                Some((checkpoint_id, _)),
            ) => Some(Verified {
                digest: report.digest,
                checkpoint_id: checkpoint_id.clone(),
                checkpoint_root: root.root,
            }),
            _ => None,
        },
        Err(MicrosandboxError::SnapshotIntegrity(_)) => return Err(ErrorCode::Failed),
        Err(other) => return Err(code(other)),
    };
    Ok(Snapshot {
        id: handle.id().to_string(),
        digest: handle.digest().to_string(),
        group: group.to_string(),
        member: member.to_string(),
        full: checkpoint.is_some(),
        labels: artifact.labels().clone(),
        verified,
    })
}

/// Removes the snapshot if it is still `snapshot_id` (absent: done).
async fn remove_snapshot(
    group: &str,
    member: &str,
    snapshot_id: &str,
) -> Result<Outcome, ErrorCode> {
    let reference = format!("{group}:{member}");
    let handle = match microsandbox::Snapshot::get(&reference).await {
        Err(MicrosandboxError::SnapshotNotFound(_)) => return Ok(Outcome::Done),
        other => other.map_err(code)?,
    };
    if *handle.id() != *snapshot_id {
        return Err(ErrorCode::Replaced);
    }
    handle.remove(false).await.map_err(code)?;
    match microsandbox::Snapshot::get(&reference).await {
        Err(MicrosandboxError::SnapshotNotFound(_)) => Ok(Outcome::Done),
        _ => Err(ErrorCode::Unconfirmed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(network: NetworkPolicy) -> VmSpec {
        VmSpec {
            name: "oac-0123456789abcdef0123456789abcdef-g0".into(),
            image: format!("registry.example/oac@sha256:{}", "a".repeat(64)),
            cpus: 2,
            memory_mib: 2048,
            root_disk_mib: 4096,
            environment_disk_mib: 8192,
            user: "1000:1000".into(),
            network,
            security_profile: "restricted".into(),
            labels: BTreeMap::from([("io.oac.bootstrap".into(), "pending".into())]),
        }
    }

    /// What the library makes of a spec reads back as that spec: the
    /// configuration a create persists is what `get` reports (no VM
    /// needed: the builder makes the configuration offline).
    #[tokio::test]
    async fn a_spec_reads_back_from_the_configuration_it_builds() {
        for network in [NetworkPolicy::None, NetworkPolicy::Public] {
            let spec = spec(network.clone());
            let config = builder(&spec).build().await.expect("a valid configuration");
            let raw = serde_json::to_value(&config).expect("serialises");
            let vm = configured(&config, &raw);
            assert_eq!(vm.image, spec.image);
            assert_eq!((vm.cpus, vm.max_cpus), (2, 2));
            assert_eq!(vm.memory_mib, 2048);
            assert_eq!(vm.root_disk_mib, Some(4096), "{raw}");
            assert_eq!(
                vm.disks_mib,
                BTreeMap::from([(ENVIRONMENT.to_string(), 8192)]),
                "{raw}"
            );
            assert_eq!(vm.other_mounts, 0, "{raw}");
            assert_eq!(vm.user.as_deref(), Some("1000:1000"));
            assert_eq!(vm.network, Some(network), "{raw}");
            assert_eq!(vm.security_profile.as_deref(), Some("restricted"), "{raw}");
            assert_eq!((vm.ports, vm.secrets), (0, 0));
            assert_eq!(vm.labels, spec.labels);
            assert_eq!(vm.snapshot_parent, None);
        }
    }
}
