//! What the adapter decides about an allocation's container: its name, the
//! daemon command, the working directory, the three volume mounts and the
//! extra hosts. Everything that isolates it is the host's container policy.

use crate::archive::BOOTSTRAP_PATH;
use crate::identity::Identity;
use oac_provider_sdk::capability::docker::{ContainerSpec, HostEntry, VolumeMount};

/// Working directory of the daemon and of commands.
pub const WORKING_DIR: &str = "/environment/workspace";

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

/// The container spec for `identity`.
pub fn container_spec(identity: &Identity, extra_hosts: Vec<HostEntry>) -> ContainerSpec {
    ContainerSpec {
        cmd: daemon_command(),
        working_dir: Some(WORKING_DIR.into()),
        mounts: vec![
            VolumeMount::new(identity.home.clone(), "/home"),
            VolumeMount::new(identity.environment.clone(), "/environment"),
            VolumeMount::new(identity.environment.clone(), "/workspace").subpath("workspace"),
        ],
        extra_hosts,
        ..ContainerSpec::new(identity.container.clone())
    }
}
