//! The container policy: every setting that isolates a container, owned by
//! the node (its configuration), never by a component. The host builds each
//! container's create body from the policy plus the few fields a component
//! may decide, and checks every container against the policy — right after
//! creating it, and before starting, exec'ing into or uploading to it.

use super::inspection::{InspectedContainer, InspectedHost, SecurityOption, encoded};
use super::request::ContainerRequest;
use bollard_stubs::models::{
    ContainerConfig, ContainerCreateBody, HostConfig, HostConfigLogConfig, Mount, MountType,
    MountVolumeOptions,
};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::LazyLock;

/// The user every container and every exec runs as.
pub const RUNTIME_USER: &str = "1000:1000";
/// The only tmpfs: its path and options (128 MiB, sticky world-writable).
pub const TMPFS: (&str, &str) = ("/tmp", "size=134217728,mode=1777");
/// Highest pids limit a policy may set.
pub const MAX_PIDS: u32 = 128;
/// The log driver and its bounds (at most 3 files of 10 MB).
const LOG_DRIVER: &str = "json-file";
const LOG_OPTIONS: [(&str, &str); 2] = [("max-size", "10m"), ("max-file", "3")];
/// Largest seccomp profile accepted.
const MAX_SECCOMP_BYTES: usize = 1 << 20;

/// Docker Engine 26's default masked paths.
pub const DEFAULT_MASKED_PATHS: [&str; 11] = [
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
];
/// The masked paths of a nested-sandbox container: the /proc masks are
/// lifted (a nested sandbox mounts its own /proc), firmware and powercap stay.
pub const NESTED_MASKED_PATHS: [&str; 2] = ["/sys/firmware", "/sys/devices/virtual/powercap"];
/// Docker Engine 26's default read-only paths, in both modes.
pub const READONLY_PATHS: [&str; 5] = [
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// The container policy as a node configuration writes it
/// (`[kinds.<kind>.container_policy]`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PolicySettings {
    /// Runtime image pinned by digest: `sha256:<64 hex>` (an image id) or
    /// `name[:tag]@sha256:<64 hex>`.
    pub image: String,
    /// Network every container joins (never `host` or `container:*`).
    pub network: String,
    /// The seccomp profile file (the assembled `seccomp.json`).
    pub seccomp_profile: PathBuf,
    /// CPUs per container (fractional allowed), in (0, 1024].
    pub cpus: f64,
    /// Memory per container in MiB, 16 ..= 16 Ti.
    pub memory_mib: u64,
    /// Processes per container, 1 ..= 128 (default 128).
    #[serde(default = "default_pids")]
    pub pids_limit: u32,
    /// Lift the /proc masks and run an init, so the sandbox can nest sandboxes.
    #[serde(default)]
    pub nested_sandbox: bool,
}

fn default_pids() -> u32 {
    MAX_PIDS
}

/// A policy setting that is refused. Names the field, never its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("container_policy.{0}: invalid")]
pub struct PolicyError(pub &'static str);

/// A validated container policy.
#[derive(Clone, Debug, PartialEq)]
pub struct ContainerPolicy {
    image: String,
    network: String,
    /// `SecurityOpt` as every container gets it and every inspection
    /// checks it, made once: its seccomp entry carries the whole profile.
    security_options: [String; 3],
    /// Each of `security_options` as a JSON string token: an inspection's
    /// options are compared in this form before any is decoded.
    security_encoded: [String; 3],
    nano_cpus: i64,
    memory_bytes: i64,
    pids_limit: i64,
    nested_sandbox: bool,
}

impl ContainerPolicy {
    /// Whether a container under this policy gets exactly the network
    /// access a bootstrap asks for: `disabled` only on network `none`,
    /// `enabled` only on another network, and never `restricted` (the
    /// engine cannot limit a container to a list of domains).
    pub fn enforces(&self, access: oac_provider_api::types::NetworkAccess) -> bool {
        use oac_provider_api::types::NetworkAccess;
        match access {
            NetworkAccess::Disabled => self.network == "none",
            NetworkAccess::Enabled => self.network != "none",
            NetworkAccess::Restricted => false,
        }
    }
}

/// The reference grammar of a pinned image: `name[:tag]@sha256:<hex>` with
/// Docker's name grammar (an optional registry host and port, then
/// lowercase path components), or a bare image id.
static PINNED_IMAGE: LazyLock<regex::Regex> = LazyLock::new(|| {
    let component = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
    let domain = format!(r"(?:{component}(?:\.{component})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?");
    let path = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
    let pattern = format!(
        r"^(?:(?:{domain}/)?{path}(?:/{path})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?@)?sha256:[a-f0-9]{{64}}$"
    );
    regex::Regex::new(&pattern).expect("the pinned-image grammar is a valid pattern")
});

/// True for a pinned image reference (≤ 255 bytes).
pub fn is_pinned_image(image: &str) -> bool {
    image.len() <= 255 && PINNED_IMAGE.is_match(image)
}

fn is_network_name(network: &str) -> bool {
    let bytes = network.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        && network != "host"
}

/// Whether a profile (already [confining](is_confining_profile)) lets a
/// container build nested sandboxes ([`oac_seccomp::allows_nesting`]).
fn allows_nesting(profile: &str) -> bool {
    serde_json::from_str(profile).is_ok_and(|profile| oac_seccomp::allows_nesting(&profile))
}

/// A profile is a JSON object whose default action denies: an allow-all or
/// log-only default would be no confinement at all.
fn is_confining_profile(profile: &str) -> bool {
    if profile.len() > MAX_SECCOMP_BYTES {
        return false;
    }
    let Ok(serde_json::Value::Object(object)) = serde_json::from_str(profile) else {
        return false;
    };
    matches!(
        object.get("defaultAction").and_then(|action| action.as_str()),
        Some(action) if !matches!(action, "SCMP_ACT_ALLOW" | "SCMP_ACT_LOG")
    )
}

impl ContainerPolicy {
    /// Validates settings whose seccomp profile is given as text.
    pub fn new(settings: &PolicySettings, seccomp_profile: String) -> Result<Self, PolicyError> {
        if !is_pinned_image(&settings.image) {
            return Err(PolicyError("image"));
        }
        if !is_network_name(&settings.network) {
            return Err(PolicyError("network"));
        }
        if !is_confining_profile(&seccomp_profile) {
            return Err(PolicyError("seccomp_profile"));
        }
        // New namespaces, mounts and pivot_root are for nested sandboxes
        // only: without `nested_sandbox`, a profile that allows them (the
        // nested profile, or one like it) is refused.
        if !settings.nested_sandbox && allows_nesting(&seccomp_profile) {
            return Err(PolicyError("seccomp_profile"));
        }
        let cpus = settings.cpus;
        if !(cpus.is_finite() && cpus > 0.0 && cpus <= 1024.0) {
            return Err(PolicyError("cpus"));
        }
        if !(16..=1 << 24).contains(&settings.memory_mib) {
            return Err(PolicyError("memory_mib"));
        }
        if !(1..=MAX_PIDS).contains(&settings.pids_limit) {
            return Err(PolicyError("pids_limit"));
        }
        let security_options = [
            "no-new-privileges".to_string(),
            format!("seccomp={seccomp_profile}"),
            "apparmor=unconfined".to_string(),
        ];
        Ok(Self {
            image: settings.image.clone(),
            network: settings.network.clone(),
            security_encoded: security_options.each_ref().map(|option| encoded(option)),
            security_options,
            nano_cpus: (cpus * 1e9).round() as i64,
            memory_bytes: (settings.memory_mib << 20) as i64,
            pids_limit: i64::from(settings.pids_limit),
            nested_sandbox: settings.nested_sandbox,
        })
    }

    /// Validates settings, reading the seccomp profile from its file (a
    /// relative path is relative to the working directory).
    pub fn load(settings: &PolicySettings) -> Result<Self, PolicyError> {
        let profile = std::fs::read_to_string(&settings.seccomp_profile)
            .map_err(|_| PolicyError("seccomp_profile"))?;
        Self::new(settings, profile)
    }

    /// The runtime image reference.
    pub fn image(&self) -> &str {
        &self.image
    }

    fn masked_paths(&self) -> &'static [&'static str] {
        if self.nested_sandbox {
            &NESTED_MASKED_PATHS
        } else {
            &DEFAULT_MASKED_PATHS
        }
    }

    /// The create body: the component's fields, the ownership labels, and
    /// everything else from the policy.
    pub fn create_body(
        &self,
        request: &ContainerRequest,
        labels: HashMap<String, String>,
    ) -> ContainerCreateBody {
        ContainerCreateBody {
            image: Some(self.image.clone()),
            user: Some(RUNTIME_USER.into()),
            labels: Some(labels),
            cmd: (!request.cmd.is_empty()).then(|| request.cmd.clone()),
            env: Some(request.env.clone()),
            working_dir: request.working_dir.clone(),
            host_config: Some(HostConfig {
                readonly_rootfs: Some(true),
                cap_drop: Some(vec!["ALL".into()]),
                security_opt: Some(self.security_options.to_vec()),
                privileged: Some(false),
                network_mode: Some(self.network.clone()),
                extra_hosts: Some(request.extra_hosts.clone()),
                nano_cpus: Some(self.nano_cpus),
                memory: Some(self.memory_bytes),
                pids_limit: Some(self.pids_limit),
                tmpfs: Some(HashMap::from([(TMPFS.0.into(), TMPFS.1.into())])),
                mounts: Some(request.mounts.iter().map(engine_mount).collect()),
                masked_paths: Some(owned(self.masked_paths())),
                readonly_paths: Some(owned(&READONLY_PATHS)),
                init: Some(self.nested_sandbox),
                log_config: Some(HostConfigLogConfig {
                    typ: Some(LOG_DRIVER.into()),
                    config: Some(
                        LOG_OPTIONS
                            .iter()
                            .map(|(key, value)| (key.to_string(), value.to_string()))
                            .collect(),
                    ),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Which isolation setting of an inspected container differs from the
    /// policy (`None`: it conforms). Names the field only.
    pub fn nonconformity(&self, container: &InspectedContainer) -> Option<&'static str> {
        // Borrowed, not cloned: this runs on every inspection of a call.
        let (no_config, no_host) = (ContainerConfig::default(), InspectedHost::default());
        let config = container.config.as_ref().unwrap_or(&no_config);
        let host = container.host_config.as_ref().unwrap_or(&no_host);
        let empty = |list: &Option<Vec<String>>| list.as_ref().is_none_or(Vec::is_empty);
        let shared = |mode: &Option<String>| {
            mode.as_deref()
                .is_some_and(|mode| mode == "host" || mode.starts_with("container:"))
        };
        let image_ok = config.image.as_deref() == Some(self.image.as_str())
            && (!self.image.starts_with("sha256:")
                || container.image.as_deref() == Some(self.image.as_str()));
        let log_ok = host.log_config.as_ref().is_some_and(|log| {
            let options = log.config.as_ref();
            log.typ.as_deref() == Some(LOG_DRIVER)
                && options.map_or(0, HashMap::len) == LOG_OPTIONS.len()
                && LOG_OPTIONS.iter().all(|(key, value)| {
                    options
                        .and_then(|options| options.get(*key))
                        .map(String::as_str)
                        == Some(*value)
                })
        });
        let tmpfs_ok = host.tmpfs.as_ref().is_some_and(|tmpfs| {
            tmpfs.len() == 1 && tmpfs.get(TMPFS.0).map(String::as_str) == Some(TMPFS.1)
        });
        let volumes_only = host
            .mounts
            .as_deref()
            .unwrap_or_default()
            .iter()
            .all(|mount| {
                mount.typ == Some(MountType::VOLUME)
                    && mount.volume_options.as_ref().is_none_or(|options| {
                        options.driver_config.is_none() && options.no_copy.is_none_or(|copy| !copy)
                    })
            });
        let checks: [(&'static str, bool); 20] = [
            ("user", config.user.as_deref() == Some(RUNTIME_USER)),
            ("image", image_ok),
            ("read-only-rootfs", host.readonly_rootfs == Some(true)),
            (
                "cap-drop",
                host.cap_drop.as_deref() == Some(&["ALL".to_string()][..]),
            ),
            ("cap-add", empty(&host.cap_add)),
            (
                "security-opt",
                same_options(
                    &host.security_opt,
                    &self.security_options,
                    &self.security_encoded,
                ),
            ),
            ("privileged", host.privileged != Some(true)),
            (
                "network",
                host.network_mode.as_deref() == Some(self.network.as_str()),
            ),
            ("nano-cpus", host.nano_cpus == Some(self.nano_cpus)),
            ("memory", host.memory == Some(self.memory_bytes)),
            ("pids-limit", host.pids_limit == Some(self.pids_limit)),
            ("tmpfs", tmpfs_ok),
            (
                "masked-paths",
                same_list(&host.masked_paths, self.masked_paths()),
            ),
            (
                "readonly-paths",
                same_list(&host.readonly_paths, &READONLY_PATHS),
            ),
            ("init", host.init.unwrap_or(false) == self.nested_sandbox),
            ("log-config", log_ok),
            (
                "mounts",
                volumes_only && empty(&host.binds) && empty(&host.volumes_from),
            ),
            (
                "devices",
                host.devices.as_ref().is_none_or(Vec::is_empty)
                    && host.device_requests.as_ref().is_none_or(Vec::is_empty)
                    && empty(&host.device_cgroup_rules),
            ),
            (
                "namespaces",
                !shared(&host.pid_mode)
                    && !shared(&host.ipc_mode)
                    && !shared(&host.uts_mode)
                    && !shared(&host.userns_mode),
            ),
            (
                "ports",
                host.port_bindings.as_ref().is_none_or(HashMap::is_empty)
                    && host.publish_all_ports != Some(true),
            ),
        ];
        checks
            .into_iter()
            .find(|(_, holds)| !holds)
            .map(|(field, _)| field)
    }

    /// Like [`Self::nonconformity`], and the component's own fields are
    /// exactly what was asked for (used right after create).
    pub fn mismatch(
        &self,
        container: &InspectedContainer,
        request: &ContainerRequest,
    ) -> Option<&'static str> {
        if let Some(field) = self.nonconformity(container) {
            return Some(field);
        }
        let (no_config, no_host) = (ContainerConfig::default(), InspectedHost::default());
        let config = container.config.as_ref().unwrap_or(&no_config);
        let host = container.host_config.as_ref().unwrap_or(&no_host);
        let name_ok = container
            .name
            .as_deref()
            .map(|name| name.trim_start_matches('/'))
            == Some(request.name.as_str());
        let found: Vec<MountKey> = host
            .mounts
            .as_deref()
            .unwrap_or_default()
            .iter()
            .map(mount_key)
            .collect();
        let wanted: Vec<MountKey> = request
            .mounts
            .iter()
            .map(engine_mount)
            .map(|m| mount_key(&m))
            .collect();
        let mounts_ok = found == wanted;
        let hosts_ok =
            host.extra_hosts.as_deref().unwrap_or_default() == request.extra_hosts.as_slice();
        let cmd_ok = request.cmd.is_empty() || config.cmd.as_deref() == Some(&request.cmd[..]);
        [
            ("name", name_ok),
            ("volume-mounts", mounts_ok),
            ("extra-hosts", hosts_ok),
            ("cmd", cmd_ok),
        ]
        .into_iter()
        .find(|(_, holds)| !holds)
        .map(|(field, _)| field)
    }
}

/// Whether `found` holds the options of `wanted`, as a multiset.
fn same_options(
    found: &Option<Vec<SecurityOption>>,
    wanted: &[String],
    wanted_encoded: &[String],
) -> bool {
    // An entry may be a whole seccomp profile, and this runs on every
    // inspection: each found option is matched in its encoded form and
    // decoded only when the engine encoded it otherwise. Equal lengths and
    // equal counts of each wanted entry make the same multiset.
    let found = found.as_deref().unwrap_or_default();
    if found.len() != wanted.len() {
        return false;
    }
    let Some(texts) = found
        .iter()
        .map(|option| option.text_among(wanted, wanted_encoded))
        .collect::<Option<Vec<_>>>()
    else {
        return false;
    };
    wanted.iter().all(|entry| {
        texts.iter().filter(|text| **text == entry.as_str()).count()
            == wanted.iter().filter(|item| *item == entry).count()
    })
}

/// Whether `found` is exactly `wanted`, in order.
fn same_list(found: &Option<Vec<String>>, wanted: &[&str]) -> bool {
    found
        .as_deref()
        .is_some_and(|found| found.iter().map(String::as_str).eq(wanted.iter().copied()))
}

/// A list of owned strings, for a create body.
fn owned(list: &[&str]) -> Vec<String> {
    list.iter().map(|item| item.to_string()).collect()
}

/// A mount as the engine echoes it: an unset read-only flag or subpath
/// means false or none.
type MountKey = (
    Option<MountType>,
    Option<String>,
    Option<String>,
    bool,
    Option<String>,
);

fn mount_key(mount: &Mount) -> MountKey {
    (
        mount.typ,
        mount.source.clone(),
        mount.target.clone(),
        mount.read_only.unwrap_or(false),
        mount
            .volume_options
            .as_ref()
            .and_then(|options| options.subpath.clone())
            .filter(|subpath| !subpath.is_empty()),
    )
}

fn engine_mount(mount: &super::request::VolumeMountRequest) -> Mount {
    Mount {
        typ: Some(MountType::VOLUME),
        source: Some(mount.volume.clone()),
        target: Some(mount.target.clone()),
        read_only: Some(mount.read_only),
        volume_options: mount.subpath.clone().map(|subpath| MountVolumeOptions {
            subpath: Some(subpath),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::oac::sandbox_provider::docker::{ContainerSpec, VolumeMount};
    use bollard_stubs::models::ContainerConfig;

    fn settings() -> PolicySettings {
        PolicySettings {
            image: format!("runtime@sha256:{}", "a".repeat(64)),
            network: "none".into(),
            seccomp_profile: PathBuf::new(),
            cpus: 0.5,
            memory_mib: 256,
            pids_limit: 128,
            nested_sandbox: false,
        }
    }

    const PROFILE: &str = r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]}"#;

    fn policy(nested_sandbox: bool) -> ContainerPolicy {
        ContainerPolicy::new(
            &PolicySettings {
                nested_sandbox,
                ..settings()
            },
            PROFILE.into(),
        )
        .expect("valid")
    }

    fn request() -> ContainerRequest {
        ContainerRequest::check(&ContainerSpec {
            name: "oac-abc".into(),
            cmd: vec!["oac-daemon".into()],
            env: vec![],
            working_dir: None,
            mounts: vec![VolumeMount {
                volume: "oac-abc-home".into(),
                target: "/home".into(),
                subpath: None,
                read_only: false,
            }],
            extra_hosts: vec![],
        })
        .expect("valid request")
    }

    /// What an engine that applies the body faithfully reports on inspect.
    fn inspected(policy: &ContainerPolicy) -> InspectedContainer {
        let body = policy.create_body(&request(), HashMap::new());
        InspectedContainer {
            id: Some("f".repeat(64)),
            name: Some("/oac-abc".into()),
            image: Some(format!("sha256:{}", "b".repeat(64))),
            config: Some(ContainerConfig {
                user: body.user.clone(),
                image: body.image.clone(),
                cmd: body.cmd.clone(),
                ..Default::default()
            }),
            // Through the parser, as an engine's answer would come.
            host_config: body.host_config.map(|host| {
                serde_json::from_value(serde_json::to_value(host).expect("JSON"))
                    .expect("parses as an inspection's")
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_faithfully_applied_body_conforms_in_both_modes() {
        for nested in [false, true] {
            let policy = policy(nested);
            assert_eq!(
                policy.nonconformity(&inspected(&policy)),
                None,
                "nested {nested}"
            );
            assert_eq!(policy.mismatch(&inspected(&policy), &request()), None);
        }
    }

    #[test]
    fn the_body_carries_the_policy_not_the_component() {
        let body = policy(false).create_body(&request(), HashMap::new());
        let host = body.host_config.expect("host config");
        assert_eq!(body.user.as_deref(), Some(RUNTIME_USER));
        assert_eq!(host.cap_drop, Some(vec!["ALL".to_string()]));
        assert_eq!(host.readonly_rootfs, Some(true));
        assert_eq!(host.pids_limit, Some(128));
        assert_eq!(host.nano_cpus, Some(500_000_000));
        assert_eq!(host.memory, Some(256 << 20));
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        assert_eq!(host.init, Some(false));
        let options = host.security_opt.expect("security options");
        assert!(options.contains(&"no-new-privileges".to_string()));
        assert!(options.contains(&format!("seccomp={PROFILE}")));
        assert_eq!(
            host.readonly_paths,
            Some(READONLY_PATHS.map(String::from).to_vec())
        );
    }

    /// The security options are a set: their order is the engine's, but
    /// an extra, a missing or a repeated entry is a different set.
    #[test]
    fn security_options_are_compared_as_a_set() {
        let policy = policy(false);
        let seccomp = format!("seccomp={PROFILE}");
        let judged = |options: Vec<SecurityOption>| {
            let mut container = inspected(&policy);
            container
                .host_config
                .as_mut()
                .expect("host config")
                .security_opt = Some(options);
            policy.nonconformity(&container)
        };
        let with = |options: &[&str]| {
            judged(
                options
                    .iter()
                    .map(|option| SecurityOption::new(option))
                    .collect(),
            )
        };
        assert_eq!(
            with(&["apparmor=unconfined", &seccomp, "no-new-privileges"]),
            None
        );
        for options in [
            &[
                "no-new-privileges",
                &seccomp,
                "apparmor=unconfined",
                "label=disable",
            ][..],
            &["no-new-privileges", &seccomp],
            &["no-new-privileges", &seccomp, &seccomp],
            &[
                "no-new-privileges",
                "no-new-privileges",
                "apparmor=unconfined",
            ],
        ] {
            assert_eq!(with(options), Some("security-opt"), "{options:?}");
        }
        // As the engine wrote them: another encoding of the same options
        // conforms, an option that decodes to no string does not.
        let written = |tokens: &[&str]| {
            judged(
                tokens
                    .iter()
                    .map(|token| serde_json::from_str(token).expect("a string"))
                    .collect(),
            )
        };
        let seccomp = serde_json::to_string(&seccomp).expect("JSON");
        let escaped = seccomp.replacen("seccomp", "\\u0073eccomp", 1);
        assert_ne!(escaped, seccomp);
        let apparmor = r#""apparmor=unconfined""#;
        assert_eq!(
            written(&[r#""no-new-privileges""#, &escaped, apparmor]),
            None
        );
        assert_eq!(
            written(&[r#""no-new-privileges""#, &seccomp, r#""\ud800""#]),
            Some("security-opt")
        );
    }

    /// Each way an engine (or an earlier, weaker host) could have left a
    /// container below the policy; every one is caught and named.
    #[test]
    fn every_weakened_setting_is_caught() {
        type Spoil = Box<dyn Fn(&mut InspectedContainer)>;
        let config = |f: fn(&mut ContainerConfig)| -> Spoil {
            Box::new(move |c| f(c.config.as_mut().expect("config")))
        };
        let host = |f: fn(&mut InspectedHost)| -> Spoil {
            Box::new(move |c| f(c.host_config.as_mut().expect("host config")))
        };
        let security = |options: &'static [&'static str]| -> Spoil {
            Box::new(move |c| {
                let host = c.host_config.as_mut().expect("host config");
                host.security_opt = Some(options.iter().map(|o| SecurityOption::new(o)).collect());
            })
        };
        let cases: Vec<(&str, Spoil)> = vec![
            ("user", config(|c| c.user = Some("0".into()))),
            ("user", config(|c| c.user = Some("0:0".into()))),
            ("user", config(|c| c.user = Some("root".into()))),
            ("user", config(|c| c.user = Some("1000:0".into()))),
            ("user", config(|c| c.user = Some("1000".into()))),
            ("user", config(|c| c.user = None)),
            ("image", config(|c| c.image = Some("busybox:latest".into()))),
            (
                "read-only-rootfs",
                host(|h| h.readonly_rootfs = Some(false)),
            ),
            ("read-only-rootfs", host(|h| h.readonly_rootfs = None)),
            ("cap-drop", host(|h| h.cap_drop = None)),
            (
                "cap-drop",
                host(|h| h.cap_drop = Some(vec!["NET_RAW".into()])),
            ),
            (
                "cap-add",
                host(|h| h.cap_add = Some(vec!["SYS_ADMIN".into()])),
            ),
            ("security-opt", security(&[])),
            (
                "security-opt",
                security(&[
                    "seccomp=unconfined",
                    "no-new-privileges",
                    "apparmor=unconfined",
                ]),
            ),
            (
                "security-opt",
                security(&[
                    "seccomp:unconfined",
                    "no-new-privileges",
                    "apparmor=unconfined",
                ]),
            ),
            (
                "security-opt",
                security(&[
                    "SECCOMP=UNCONFINED",
                    "no-new-privileges",
                    "apparmor=unconfined",
                ]),
            ),
            (
                "security-opt",
                security(&[
                    r#"seccomp={"defaultAction":"SCMP_ACT_ALLOW"}"#,
                    "no-new-privileges",
                    "apparmor=unconfined",
                ]),
            ),
            (
                "security-opt",
                security(&["no-new-privileges=false", "apparmor=unconfined"]),
            ),
            (
                "security-opt",
                security(&["no-new-privileges:false", "apparmor=unconfined"]),
            ),
            ("security-opt", security(&["label=disable"])),
            ("security-opt", security(&["systempaths=unconfined"])),
            ("privileged", host(|h| h.privileged = Some(true))),
            ("network", host(|h| h.network_mode = Some("bridge".into()))),
            ("network", host(|h| h.network_mode = Some("host".into()))),
            (
                "network",
                host(|h| h.network_mode = Some("container:other".into())),
            ),
            ("nano-cpus", host(|h| h.nano_cpus = Some(0))),
            ("nano-cpus", host(|h| h.nano_cpus = Some(64_000_000_000))),
            ("memory", host(|h| h.memory = Some(0))),
            ("memory", host(|h| h.memory = None)),
            ("pids-limit", host(|h| h.pids_limit = Some(0))),
            ("pids-limit", host(|h| h.pids_limit = Some(-1))),
            ("pids-limit", host(|h| h.pids_limit = Some(4096))),
            (
                "tmpfs",
                host(|h| {
                    h.tmpfs = Some(HashMap::from([("/tmp".into(), "size=8g".into())]));
                }),
            ),
            (
                "tmpfs",
                host(|h| {
                    let tmpfs = h.tmpfs.get_or_insert_default();
                    tmpfs.insert("/run".into(), String::new());
                }),
            ),
            ("masked-paths", host(|h| h.masked_paths = Some(vec![]))),
            (
                "masked-paths",
                host(|h| h.masked_paths = Some(NESTED_MASKED_PATHS.map(String::from).to_vec())),
            ),
            ("readonly-paths", host(|h| h.readonly_paths = Some(vec![]))),
            ("readonly-paths", host(|h| h.readonly_paths = None)),
            ("init", host(|h| h.init = Some(true))),
            ("log-config", host(|h| h.log_config = None)),
            (
                "log-config",
                host(|h| {
                    if let Some(log) = h.log_config.as_mut() {
                        log.config
                            .get_or_insert_default()
                            .insert("mode".into(), "non-blocking".into());
                    }
                }),
            ),
            (
                "log-config",
                host(|h| {
                    if let Some(log) = h.log_config.as_mut() {
                        log.config = Some(HashMap::from([
                            ("max-size".into(), "10g".into()),
                            ("max-file".into(), "3".into()),
                        ]));
                    }
                }),
            ),
            ("tmpfs", host(|h| h.tmpfs = None)),
            (
                "log-config",
                host(|h| {
                    h.log_config = Some(HostConfigLogConfig {
                        typ: Some("json-file".into()),
                        config: None,
                    });
                }),
            ),
            ("mounts", host(|h| h.binds = Some(vec!["/:/host".into()]))),
            (
                "mounts",
                host(|h| {
                    h.mounts.get_or_insert_default().push(Mount {
                        typ: Some(MountType::BIND),
                        source: Some("/var/run/docker.sock".into()),
                        target: Some("/var/run/docker.sock".into()),
                        ..Default::default()
                    });
                }),
            ),
            (
                "mounts",
                host(|h| h.volumes_from = Some(vec!["other".into()])),
            ),
            (
                "devices",
                host(|h| {
                    h.devices = Some(vec![bollard_stubs::models::DeviceMapping {
                        path_on_host: Some("/dev/kmsg".into()),
                        ..Default::default()
                    }]);
                }),
            ),
            ("namespaces", host(|h| h.pid_mode = Some("host".into()))),
            ("namespaces", host(|h| h.ipc_mode = Some("host".into()))),
            ("namespaces", host(|h| h.uts_mode = Some("host".into()))),
            ("namespaces", host(|h| h.userns_mode = Some("host".into()))),
            ("ports", host(|h| h.publish_all_ports = Some(true))),
        ];
        let policy = policy(false);
        for (index, (field, spoil)) in cases.into_iter().enumerate() {
            let mut container = inspected(&policy);
            spoil(&mut container);
            assert_eq!(
                policy.nonconformity(&container),
                Some(field),
                "case {index}"
            );
        }
    }

    #[test]
    fn the_nested_masks_are_allowed_only_with_nested_sandbox() {
        let nested = policy(true);
        let container = inspected(&nested);
        assert_eq!(nested.nonconformity(&container), None);
        assert_eq!(
            policy(false).nonconformity(&container),
            Some("masked-paths")
        );
    }

    #[test]
    fn the_component_fields_must_be_exactly_what_was_asked() {
        let policy = policy(false);
        let mut renamed = inspected(&policy);
        renamed.name = Some("/other".into());
        assert_eq!(policy.mismatch(&renamed, &request()), Some("name"));
        let mut remounted = inspected(&policy);
        if let Some(mounts) = remounted
            .host_config
            .as_mut()
            .and_then(|host| host.mounts.as_mut())
        {
            mounts[0].source = Some("someone-elses-volume".into());
        }
        assert_eq!(
            policy.mismatch(&remounted, &request()),
            Some("volume-mounts")
        );
    }

    #[test]
    fn only_pinned_images_pass_the_reference_grammar() {
        let digest = "a".repeat(64);
        for good in [
            format!("sha256:{digest}"),
            format!("runtime@sha256:{digest}"),
            format!("registry.example:5000/team/runtime:1.2@sha256:{digest}"),
            format!("[fd00::1]:5000/runtime@sha256:{digest}"),
        ] {
            assert!(is_pinned_image(&good), "{good}");
        }
        for bad in [
            "busybox".to_string(),
            "busybox:latest".to_string(),
            format!("get?names=x&y=@sha256:{digest}"),
            format!("runtime#x@sha256:{digest}"),
            format!("runtime%2F@sha256:{digest}"),
            format!("../runtime@sha256:{digest}"),
            format!("run\\time@sha256:{digest}"),
            format!("Runtime@sha256:{digest}"),
            format!("runtime@sha256:{}", "A".repeat(64)),
            format!("runtime@sha256:{}", "a".repeat(63)),
            format!("run\ntime@sha256:{digest}"),
            format!("{}@sha256:{digest}", "a".repeat(200)),
            // Found by the image_reference fuzz target: Docker's tag
            // grammar is ASCII (`\\w` in Rust's regex is Unicode).
            format!("runtime:1\u{69e}@sha256:{digest}"),
            format!("runtime:\u{e9}t\u{e9}@sha256:{digest}"),
        ] {
            assert!(!is_pinned_image(&bad), "{bad:?}");
        }
    }

    #[test]
    fn each_weak_setting_is_refused_by_field() {
        let cases: Vec<(PolicySettings, &str, &str)> = vec![
            (
                PolicySettings {
                    image: "busybox:latest".into(),
                    ..settings()
                },
                PROFILE,
                "image",
            ),
            (
                PolicySettings {
                    network: "host".into(),
                    ..settings()
                },
                PROFILE,
                "network",
            ),
            (
                PolicySettings {
                    network: "container:x".into(),
                    ..settings()
                },
                PROFILE,
                "network",
            ),
            (
                PolicySettings {
                    cpus: 0.0,
                    ..settings()
                },
                PROFILE,
                "cpus",
            ),
            (
                PolicySettings {
                    cpus: f64::NAN,
                    ..settings()
                },
                PROFILE,
                "cpus",
            ),
            (
                PolicySettings {
                    memory_mib: 0,
                    ..settings()
                },
                PROFILE,
                "memory_mib",
            ),
            (
                PolicySettings {
                    pids_limit: 0,
                    ..settings()
                },
                PROFILE,
                "pids_limit",
            ),
            (
                PolicySettings {
                    pids_limit: 129,
                    ..settings()
                },
                PROFILE,
                "pids_limit",
            ),
            (settings(), "not json", "seccomp_profile"),
            (settings(), "[]", "seccomp_profile"),
            (
                settings(),
                r#"{"defaultAction":"SCMP_ACT_ALLOW"}"#,
                "seccomp_profile",
            ),
            (
                settings(),
                r#"{"defaultAction":"SCMP_ACT_LOG"}"#,
                "seccomp_profile",
            ),
            (settings(), r#"{"syscalls":[]}"#, "seccomp_profile"),
        ];
        for (settings, profile, field) in cases {
            assert_eq!(
                ContainerPolicy::new(&settings, profile.into()),
                Err(PolicyError(field)),
                "{field}"
            );
        }
    }

    #[test]
    fn a_profile_allowing_new_namespaces_needs_nested_sandbox() {
        let mut nesting: serde_json::Value = serde_json::from_str(PROFILE).expect("json");
        nesting["syscalls"]
            .as_array_mut()
            .expect("list")
            .push(oac_seccomp::appended_rule());
        let nesting = nesting.to_string();
        assert_eq!(
            ContainerPolicy::new(&settings(), nesting.clone()),
            Err(PolicyError("seccomp_profile"))
        );
        let nested = PolicySettings {
            nested_sandbox: true,
            ..settings()
        };
        assert!(ContainerPolicy::new(&nested, nesting).is_ok());
        assert!(ContainerPolicy::new(&settings(), PROFILE.into()).is_ok());
    }
}
