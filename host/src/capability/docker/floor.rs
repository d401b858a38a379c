//! The isolation floor: what no container spec may ask for, whatever the
//! adapter intends. Isolation belongs to the infrastructure, so the host
//! refuses these before any request reaches the engine.

use crate::bindings::oac::sandbox_provider::docker::{ContainerSpec, MountKind};

/// Paths that must stay masked even when an adapter replaces the mask list.
const ALWAYS_MASKED: [&str; 2] = ["/sys/firmware", "/sys/devices/virtual/powercap"];

/// Which rule a spec breaks. Carries no value from the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// `privileged` was requested.
    #[error("privileged containers are refused")]
    Privileged,
    /// Capabilities were added.
    #[error("added capabilities are refused")]
    AddedCapabilities,
    /// Host devices were requested.
    #[error("devices are refused")]
    Devices,
    /// A bind or tmpfs mount was requested through `mounts`.
    #[error("only named volume mounts are allowed")]
    NonVolumeMount,
    /// A mount names something that is not a plain volume name.
    #[error("mount source is not a volume name")]
    MountSource,
    /// A mount or tmpfs target is not an absolute container path.
    #[error("mount target is not an absolute path")]
    MountTarget,
    /// The Docker socket would become reachable.
    #[error("the Docker socket is never mounted")]
    DockerSocket,
    /// A host or `container:` namespace was requested.
    #[error("host and container namespaces are refused")]
    SharedNamespace,
    /// A security option disables confinement.
    #[error("security option disables confinement")]
    SecurityOption,
    /// The replaced mask list unmasks a path that must stay masked.
    #[error("masked paths must keep firmware and powercap masked")]
    Unmasked,
    /// Name or image is empty or malformed.
    #[error("container name or image is malformed")]
    Identity,
}

/// Docker's own rule for volume and container names.
pub(crate) fn is_resource_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() >= 2
        && bytes.len() <= 255
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn is_container_path(path: &str) -> bool {
    path.starts_with('/') && !path.split('/').any(|part| part == "..")
}

fn mentions_docker_socket(text: &str) -> bool {
    text.contains("docker.sock")
}

fn shares_namespace(mode: &Option<String>) -> bool {
    mode.as_deref()
        .is_some_and(|mode| mode == "host" || mode.starts_with("container:"))
}

fn disables_confinement(option: &str) -> bool {
    let normalized = option.replace(':', "=").to_ascii_lowercase();
    matches!(
        normalized.as_str(),
        "seccomp=unconfined"
            | "label=disable"
            | "no-new-privileges=false"
            | "systempaths=unconfined"
    )
}

/// Checks a spec against the floor; the first violation found is returned.
pub fn check(spec: &ContainerSpec) -> Result<(), Violation> {
    if !is_resource_name(&spec.name) || spec.image.trim().is_empty() {
        return Err(Violation::Identity);
    }
    if spec.privileged {
        return Err(Violation::Privileged);
    }
    if !spec.cap_add.is_empty() {
        return Err(Violation::AddedCapabilities);
    }
    if !spec.devices.is_empty() {
        return Err(Violation::Devices);
    }
    for mount in &spec.mounts {
        if mentions_docker_socket(&mount.source) || mentions_docker_socket(&mount.target) {
            return Err(Violation::DockerSocket);
        }
        if mount.kind != MountKind::Volume {
            return Err(Violation::NonVolumeMount);
        }
        if !is_resource_name(&mount.source) {
            return Err(Violation::MountSource);
        }
        let subpath_ok = mount.subpath.as_deref().is_none_or(|sub| {
            !sub.is_empty() && !sub.starts_with('/') && !sub.split('/').any(|part| part == "..")
        });
        if !is_container_path(&mount.target) || !subpath_ok {
            return Err(Violation::MountTarget);
        }
    }
    if spec
        .tmpfs
        .iter()
        .any(|tmpfs| !is_container_path(&tmpfs.target))
    {
        return Err(Violation::MountTarget);
    }
    if shares_namespace(&spec.network_mode)
        || shares_namespace(&spec.pid_mode)
        || shares_namespace(&spec.ipc_mode)
    {
        return Err(Violation::SharedNamespace);
    }
    if spec
        .security_opt
        .iter()
        .any(|option| disables_confinement(option))
    {
        return Err(Violation::SecurityOption);
    }
    if let Some(masked) = &spec.masked_paths
        && !ALWAYS_MASKED
            .iter()
            .all(|path| masked.iter().any(|m| m == path))
    {
        return Err(Violation::Unmasked);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::oac::sandbox_provider::docker::{Mount, TmpfsMount};

    fn spec() -> ContainerSpec {
        ContainerSpec {
            name: "oac-abc".into(),
            image: "busybox@sha256:00".into(),
            labels: vec![],
            cmd: vec![],
            env: vec![],
            user: Some("1000:1000".into()),
            working_dir: None,
            read_only_rootfs: true,
            cap_drop: vec!["ALL".into()],
            cap_add: vec![],
            security_opt: vec!["no-new-privileges".into(), "apparmor=unconfined".into()],
            privileged: false,
            devices: vec![],
            network_mode: Some("bridge".into()),
            pid_mode: None,
            ipc_mode: None,
            extra_hosts: vec![],
            nano_cpus: 1_000_000_000,
            memory_bytes: 1 << 30,
            pids_limit: 128,
            tmpfs: vec![TmpfsMount {
                target: "/tmp".into(),
                size_bytes: 128 << 20,
                mode: 0o1777,
            }],
            mounts: vec![
                volume("oac-abc-home", "/home", None),
                volume("oac-abc-environment", "/workspace", Some("workspace")),
            ],
            masked_paths: None,
            readonly_paths: None,
            init: false,
        }
    }

    fn volume(source: &str, target: &str, subpath: Option<&str>) -> Mount {
        Mount {
            kind: MountKind::Volume,
            source: source.into(),
            target: target.into(),
            read_only: false,
            subpath: subpath.map(Into::into),
        }
    }

    #[test]
    fn the_adapter_shaped_spec_passes() {
        assert_eq!(check(&spec()), Ok(()));
    }

    #[test]
    fn each_escape_is_refused() {
        let cases: Vec<(Box<dyn Fn(&mut ContainerSpec)>, Violation)> = vec![
            (Box::new(|s| s.privileged = true), Violation::Privileged),
            (
                Box::new(|s| s.cap_add.push("NET_ADMIN".into())),
                Violation::AddedCapabilities,
            ),
            (
                Box::new(|s| s.devices.push("/dev/fuse".into())),
                Violation::Devices,
            ),
            (
                Box::new(|s| s.mounts[0].kind = MountKind::Bind),
                Violation::NonVolumeMount,
            ),
            (
                Box::new(|s| s.mounts[0].kind = MountKind::Tmpfs),
                Violation::NonVolumeMount,
            ),
            (
                Box::new(|s| s.mounts.push(volume("/var/run/docker.sock", "/x", None))),
                Violation::DockerSocket,
            ),
            (
                Box::new(|s| s.mounts.push(volume("vol", "/run/docker.sock", None))),
                Violation::DockerSocket,
            ),
            (
                Box::new(|s| s.mounts.push(volume("/etc", "/x", None))),
                Violation::MountSource,
            ),
            (
                Box::new(|s| s.mounts.push(volume("vol", "relative", None))),
                Violation::MountTarget,
            ),
            (
                Box::new(|s| s.mounts.push(volume("vol", "/x", Some("../up")))),
                Violation::MountTarget,
            ),
            (
                Box::new(|s| s.tmpfs[0].target = "tmp".into()),
                Violation::MountTarget,
            ),
            (
                Box::new(|s| s.network_mode = Some("host".into())),
                Violation::SharedNamespace,
            ),
            (
                Box::new(|s| s.network_mode = Some("container:other".into())),
                Violation::SharedNamespace,
            ),
            (
                Box::new(|s| s.pid_mode = Some("host".into())),
                Violation::SharedNamespace,
            ),
            (
                Box::new(|s| s.ipc_mode = Some("container:x".into())),
                Violation::SharedNamespace,
            ),
            (
                Box::new(|s| s.security_opt.push("seccomp=unconfined".into())),
                Violation::SecurityOption,
            ),
            (
                Box::new(|s| s.security_opt.push("seccomp:unconfined".into())),
                Violation::SecurityOption,
            ),
            (
                Box::new(|s| s.masked_paths = Some(vec!["/sys/firmware".into()])),
                Violation::Unmasked,
            ),
            (Box::new(|s| s.name = "/escape".into()), Violation::Identity),
            (Box::new(|s| s.image = " ".into()), Violation::Identity),
        ];
        for (index, (spoil, violation)) in cases.into_iter().enumerate() {
            let mut spec = spec();
            spoil(&mut spec);
            assert_eq!(check(&spec), Err(violation), "case {index}");
        }
    }

    #[test]
    fn lifting_proc_masks_keeps_the_two_required_masks() {
        let mut nested = spec();
        nested.masked_paths = Some(ALWAYS_MASKED.iter().map(|p| p.to_string()).collect());
        assert_eq!(check(&nested), Ok(()));
    }
}
