//! What a component may put into an engine request, checked before any
//! request is made: resource names and full ids (never an id prefix, which
//! the engine would resolve to whatever container it matches), container
//! paths, and the few container fields a component decides. Anything else
//! is `invalid`, and the check names the rule, never the value.

use crate::bindings::oac::sandbox_provider::docker::{ContainerSpec, ExecSpec, VolumeMount};
use std::net::IpAddr;

/// Largest number of command arguments or environment entries.
pub(crate) const MAX_LIST: usize = 256;
/// Largest command argument or environment entry.
pub(crate) const MAX_ENTRY_BYTES: usize = 32 << 10;
/// Largest number of volume mounts.
pub(crate) const MAX_MOUNTS: usize = 16;
/// Largest number of extra hosts.
pub(crate) const MAX_EXTRA_HOSTS: usize = 64;
/// Largest number of exec arguments.
pub(crate) const MAX_EXEC_ARGS: usize = 4096;
/// Most bytes of a container's command, environment and working directory
/// together, as JSON text (escapes counted): an inspection shows the
/// command twice and the environment once, beside the seccomp profile,
/// and must still fit the host's 4 MiB bound on an engine answer, or the
/// host could never verify, nor so remove, the container.
pub(crate) const MAX_SPEC_TEXT_BYTES: usize = 512 << 10;
/// Largest container path.
const MAX_PATH_BYTES: usize = 4096;
/// Container paths a volume may never be mounted at or below.
const RESERVED_TARGETS: [&str; 4] = ["/proc", "/sys", "/dev", "/tmp"];

/// Which rule an input breaks. Carries no value from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("docker request: invalid {0}")]
pub struct Invalid(pub &'static str);

/// Docker's rule for container and volume names: `[a-zA-Z0-9][a-zA-Z0-9_.-]+`
/// (at most 255 bytes).
pub(crate) fn is_resource_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() >= 2
        && bytes.len() <= 255
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// A full engine id: 64 lowercase hex digits.
pub(crate) fn is_full_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// How a component names a container: a full name or a full id. A name
/// made only of hex digits could be read by the engine as an id prefix, so
/// it is refused unless it is a full id.
pub(crate) fn container_key(input: &str) -> Result<&str, Invalid> {
    let hex_only = input.bytes().all(|b| b.is_ascii_hexdigit());
    if is_full_id(input) || (is_resource_name(input) && !hex_only) {
        Ok(input)
    } else {
        Err(Invalid("container name"))
    }
}

/// An absolute, normalised path: `/` then components that are neither
/// empty, `.` nor `..`, with no NUL, no trailing `/` (except `/` itself).
pub(crate) fn is_container_path(path: &str) -> bool {
    path.len() <= MAX_PATH_BYTES
        && !path.contains('\0')
        && (path == "/"
            || path.strip_prefix('/').is_some_and(|rest| {
                rest.split('/')
                    .all(|part| !part.is_empty() && part != "." && part != "..")
            }))
}

/// True when `path` is `base` or below it.
pub(crate) fn is_at_or_below(path: &str, base: &str) -> bool {
    base == "/"
        || path == base
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// A relative, normalised path inside a volume.
fn is_subpath(path: &str) -> bool {
    path.len() <= MAX_PATH_BYTES
        && !path.contains('\0')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

fn is_host_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 253
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.'))
}

fn is_entry(entry: &str) -> bool {
    entry.len() <= MAX_ENTRY_BYTES && !entry.contains('\0')
}

fn is_env_entry(entry: &str) -> bool {
    is_entry(entry)
        && entry
            .split_once('=')
            .is_some_and(|(key, _)| !key.is_empty())
}

/// A volume mount as checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeMountRequest {
    /// Volume name.
    pub volume: String,
    /// Container path.
    pub target: String,
    /// Subdirectory of the volume.
    pub subpath: Option<String>,
    /// Read-only.
    pub read_only: bool,
}

/// A container spec as checked: the component's fields only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerRequest {
    /// Container name.
    pub name: String,
    /// Command.
    pub cmd: Vec<String>,
    /// Environment.
    pub env: Vec<String>,
    /// Working directory.
    pub working_dir: Option<String>,
    /// Volume mounts.
    pub mounts: Vec<VolumeMountRequest>,
    /// `name:address` entries.
    pub extra_hosts: Vec<String>,
}

impl ContainerRequest {
    /// Checks a component's spec.
    pub fn check(spec: &ContainerSpec) -> Result<Self, Invalid> {
        // A name that could never be addressed afterwards is refused too.
        if !is_resource_name(&spec.name) || is_full_id(&spec.name) {
            return Err(Invalid("container name"));
        }
        container_key(&spec.name)?;
        if spec.cmd.len() > MAX_LIST || !spec.cmd.iter().all(|arg| is_entry(arg)) {
            return Err(Invalid("cmd"));
        }
        if spec.env.len() > MAX_LIST || !spec.env.iter().all(|entry| is_env_entry(entry)) {
            return Err(Invalid("env"));
        }
        if spec
            .working_dir
            .as_deref()
            .is_some_and(|dir| !is_container_path(dir))
        {
            return Err(Invalid("working-dir"));
        }
        let text: usize = spec
            .cmd
            .iter()
            .chain(&spec.env)
            .chain(&spec.working_dir)
            .map(|text| serde_json::to_string(text).map_or(usize::MAX, |json| json.len()))
            .fold(0, usize::saturating_add);
        if text > MAX_SPEC_TEXT_BYTES {
            return Err(Invalid("cmd and env size"));
        }
        if spec.mounts.len() > MAX_MOUNTS {
            return Err(Invalid("mounts"));
        }
        let mut mounts: Vec<VolumeMountRequest> = Vec::new();
        for mount in &spec.mounts {
            let mount = check_mount(mount)?;
            if mounts.iter().any(|other| other.target == mount.target) {
                return Err(Invalid("mount target"));
            }
            mounts.push(mount);
        }
        if spec.extra_hosts.len() > MAX_EXTRA_HOSTS {
            return Err(Invalid("extra-hosts"));
        }
        let mut extra_hosts = Vec::new();
        for entry in &spec.extra_hosts {
            let address: IpAddr = entry
                .address
                .parse()
                .map_err(|_| Invalid("extra-host address"))?;
            if !is_host_name(&entry.name) {
                return Err(Invalid("extra-host name"));
            }
            extra_hosts.push(format!("{}:{address}", entry.name));
        }
        Ok(Self {
            name: spec.name.clone(),
            cmd: spec.cmd.clone(),
            env: spec.env.clone(),
            working_dir: spec.working_dir.clone(),
            mounts,
            extra_hosts,
        })
    }

    /// The distinct volumes the container mounts, in first-mount order.
    pub fn volumes(&self) -> Vec<&str> {
        let mut volumes: Vec<&str> = Vec::new();
        for mount in &self.mounts {
            if !volumes.contains(&mount.volume.as_str()) {
                volumes.push(&mount.volume);
            }
        }
        volumes
    }
}

fn check_mount(mount: &VolumeMount) -> Result<VolumeMountRequest, Invalid> {
    if !is_resource_name(&mount.volume) {
        return Err(Invalid("mount volume"));
    }
    let reserved = RESERVED_TARGETS
        .iter()
        .any(|base| is_at_or_below(&mount.target, base));
    if !is_container_path(&mount.target) || mount.target == "/" || reserved {
        return Err(Invalid("mount target"));
    }
    if mount.subpath.as_deref().is_some_and(|sub| !is_subpath(sub)) {
        return Err(Invalid("mount subpath"));
    }
    Ok(VolumeMountRequest {
        volume: mount.volume.clone(),
        target: mount.target.clone(),
        subpath: mount.subpath.clone(),
        read_only: mount.read_only,
    })
}

/// Checks an exec request against the contract's bounds.
pub(crate) fn check_exec(
    spec: &ExecSpec,
    max_stdin: usize,
    max_output: u32,
) -> Result<(), Invalid> {
    if spec.args.is_empty()
        || spec.args.len() > MAX_EXEC_ARGS
        || !spec.args.iter().all(|arg| !arg.contains('\0'))
    {
        return Err(Invalid("exec args"));
    }
    if spec
        .working_dir
        .as_deref()
        .is_some_and(|dir| !is_container_path(dir))
    {
        return Err(Invalid("exec working-dir"));
    }
    if spec
        .stdin
        .as_ref()
        .is_some_and(|stdin| stdin.len() > max_stdin)
    {
        return Err(Invalid("exec stdin"));
    }
    if spec.output_limit_bytes > max_output {
        return Err(Invalid("exec output bound"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::oac::sandbox_provider::docker::HostEntry;

    fn spec() -> ContainerSpec {
        ContainerSpec {
            name: "oac-abc".into(),
            cmd: vec!["oac-daemon".into(), "connect".into()],
            env: vec!["LANG=C.UTF-8".into()],
            working_dir: Some("/environment/workspace".into()),
            mounts: vec![
                mount("oac-abc-home", "/home", None),
                mount("oac-abc-environment", "/workspace", Some("workspace")),
            ],
            extra_hosts: vec![HostEntry {
                name: "core.internal".into(),
                address: "10.0.0.1".into(),
            }],
        }
    }

    fn mount(volume: &str, target: &str, subpath: Option<&str>) -> VolumeMount {
        VolumeMount {
            volume: volume.into(),
            target: target.into(),
            subpath: subpath.map(Into::into),
            read_only: false,
        }
    }

    #[test]
    fn the_adapter_shaped_spec_passes() {
        let checked = ContainerRequest::check(&spec()).expect("valid");
        assert_eq!(checked.extra_hosts, vec!["core.internal:10.0.0.1"]);
        assert_eq!(
            checked.volumes(),
            vec!["oac-abc-home", "oac-abc-environment"]
        );
    }

    #[test]
    fn each_bad_field_is_refused_by_rule() {
        type Spoil = Box<dyn Fn(&mut ContainerSpec)>;
        let cases: Vec<(Spoil, &str)> = vec![
            (Box::new(|s| s.name = "/escape".into()), "container name"),
            (Box::new(|s| s.name = "x".into()), "container name"),
            (Box::new(|s| s.name = "a/../b".into()), "container name"),
            (
                Box::new(|s| s.name = "0123456789ab".into()),
                "container name",
            ),
            (Box::new(|s| s.name = "f".repeat(64)), "container name"),
            (Box::new(|s| s.cmd = vec!["a\0b".into()]), "cmd"),
            (Box::new(|s| s.cmd = vec!["x".into(); MAX_LIST + 1]), "cmd"),
            (Box::new(|s| s.env = vec!["NOVALUE".into()]), "env"),
            // 8 MiB of legal environment, or escapes that grow as JSON.
            (
                Box::new(|s| s.env = vec![format!("A={}", "x".repeat(32_000)); 256]),
                "cmd and env size",
            ),
            (
                Box::new(|s| s.cmd = vec!["\u{1}".repeat(16_000); 8]),
                "cmd and env size",
            ),
            (Box::new(|s| s.env = vec!["=x".into()]), "env"),
            (
                Box::new(|s| s.working_dir = Some("relative".into())),
                "working-dir",
            ),
            (
                Box::new(|s| s.working_dir = Some("/a/../etc".into())),
                "working-dir",
            ),
            (
                Box::new(|s| s.mounts[0].volume = "/etc".into()),
                "mount volume",
            ),
            (
                Box::new(|s| s.mounts[0].volume = "/var/run/docker.sock".into()),
                "mount volume",
            ),
            (
                Box::new(|s| s.mounts[0].target = "/".into()),
                "mount target",
            ),
            (
                Box::new(|s| s.mounts[0].target = "/proc".into()),
                "mount target",
            ),
            (
                Box::new(|s| s.mounts[0].target = "/sys/fs/cgroup".into()),
                "mount target",
            ),
            (
                Box::new(|s| s.mounts[0].target = "/dev/shm".into()),
                "mount target",
            ),
            (
                Box::new(|s| s.mounts[0].target = "/tmp".into()),
                "mount target",
            ),
            (
                Box::new(|s| s.mounts[0].target = "/home/".into()),
                "mount target",
            ),
            (
                Box::new(|s| s.mounts[0].target = "/home//x".into()),
                "mount target",
            ),
            (
                Box::new(|s| s.mounts[1].target = "/home".into()),
                "mount target",
            ),
            (
                Box::new(|s| s.mounts[1].subpath = Some("../up".into())),
                "mount subpath",
            ),
            (
                Box::new(|s| s.mounts[1].subpath = Some("/abs".into())),
                "mount subpath",
            ),
            (
                Box::new(|s| s.mounts[1].subpath = Some(String::new())),
                "mount subpath",
            ),
            (
                Box::new(|s| s.mounts = vec![mount("vol", "/m", None); 17]),
                "mounts",
            ),
            (
                Box::new(|s| s.extra_hosts[0].address = "host-gateway".into()),
                "extra-host address",
            ),
            (
                Box::new(|s| s.extra_hosts[0].address = "example.com".into()),
                "extra-host address",
            ),
            (
                Box::new(|s| s.extra_hosts[0].name = "a:b".into()),
                "extra-host name",
            ),
            (
                Box::new(|s| s.extra_hosts[0].name = String::new()),
                "extra-host name",
            ),
        ];
        for (index, (spoil, rule)) in cases.into_iter().enumerate() {
            let mut spec = spec();
            spoil(&mut spec);
            assert_eq!(
                ContainerRequest::check(&spec),
                Err(Invalid(rule)),
                "case {index}"
            );
        }
    }

    #[test]
    fn an_ipv6_extra_host_is_kept_literal() {
        let mut spec = spec();
        spec.extra_hosts[0].address = "fd00::1".into();
        let checked = ContainerRequest::check(&spec).expect("valid");
        assert_eq!(checked.extra_hosts, vec!["core.internal:fd00::1"]);
    }

    #[test]
    fn containers_are_named_in_full_never_by_prefix() {
        let id = "a".repeat(64);
        assert_eq!(container_key(&id), Ok(id.as_str()));
        assert_eq!(container_key("oac-abc"), Ok("oac-abc"));
        for bad in [
            "",
            "a",
            "oac abc",
            "x/../y",
            "get?names=x",
            "a%2F",
            "id#frag",
            "A\\b",
        ] {
            assert_eq!(
                container_key(bad),
                Err(Invalid("container name")),
                "{bad:?}"
            );
        }
        // Hex-only names would reach the engine's id-prefix resolution.
        for prefix in ["0123456789ab", "abc", &"a".repeat(63), &"A".repeat(64)] {
            assert_eq!(
                container_key(prefix),
                Err(Invalid("container name")),
                "{prefix}"
            );
        }
        assert!(!is_full_id(&"A".repeat(64)));
    }

    #[test]
    fn paths_are_absolute_and_normalised() {
        for good in ["/", "/home", "/environment/workspace"] {
            assert!(is_container_path(good), "{good}");
        }
        for bad in ["", "home", "/home/", "//home", "/a/./b", "/a/../b", "/a\0b"] {
            assert!(!is_container_path(bad), "{bad:?}");
        }
        assert!(is_at_or_below("/home/runtime", "/home"));
        assert!(is_at_or_below("/home", "/home"));
        assert!(!is_at_or_below("/homework", "/home"));
    }
}
