//! The hardened container every allocation gets.

use crate::archive::BOOTSTRAP_PATH;
use crate::config::NodeConfiguration;
use crate::identity::Identity;
use oac_provider_sdk::capability::docker::{ContainerSpec, Mount, TmpfsMount};

/// The runtime user and group.
pub const RUNTIME_USER: &str = "1000:1000";
/// Working directory of the daemon and of commands.
pub const WORKING_DIR: &str = "/environment/workspace";
/// Processes allowed in the container.
pub const PIDS_LIMIT: u64 = 128;
/// Size of the /tmp tmpfs.
pub const TMP_BYTES: u64 = 128 * 1024 * 1024;
/// Paths kept masked even in nested-sandbox mode.
pub const NESTED_MASKED_PATHS: [&str; 2] = ["/sys/firmware", "/sys/devices/virtual/powercap"];

/// The command that starts the Runtime daemon.
pub fn daemon_command() -> Vec<String> {
    [
        "oac-daemon",
        "connect",
        "--profile",
        "default",
        "--bootstrap-file",
        BOOTSTRAP_PATH,
    ]
    .map(String::from)
    .to_vec()
}

/// The container spec for `identity` under `configuration`.
pub fn container_spec(identity: &Identity, configuration: &NodeConfiguration) -> ContainerSpec {
    let mut spec = ContainerSpec::new(identity.container.clone(), configuration.image.clone());
    spec.labels = identity.labels.clone();
    spec.cmd = daemon_command();
    spec.user = Some(RUNTIME_USER.into());
    spec.working_dir = Some(WORKING_DIR.into());
    spec.read_only_rootfs = true;
    spec.cap_drop = vec!["ALL".into()];
    spec.security_opt = vec![
        "no-new-privileges".into(),
        format!("seccomp={}", configuration.seccomp_profile),
        "apparmor=unconfined".into(),
    ];
    spec.network_mode = Some(configuration.network.clone());
    spec.extra_hosts = configuration.extra_hosts.clone();
    spec.nano_cpus = configuration.nano_cpus();
    spec.memory_bytes = configuration.memory_bytes();
    spec.pids_limit = PIDS_LIMIT;
    spec.tmpfs = vec![TmpfsMount {
        target: "/tmp".into(),
        size_bytes: TMP_BYTES,
        mode: 0o1777,
    }];
    spec.mounts = vec![
        Mount::volume(identity.home.clone(), "/home"),
        Mount::volume(identity.environment.clone(), "/environment"),
        Mount {
            subpath: Some("workspace".into()),
            ..Mount::volume(identity.environment.clone(), "/workspace")
        },
    ];
    if configuration.nested_sandbox {
        spec.masked_paths = Some(NESTED_MASKED_PATHS.map(String::from).to_vec());
        spec.init = true;
    }
    spec
}
