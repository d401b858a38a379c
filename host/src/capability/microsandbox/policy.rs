//! The VM policy: every setting that isolates or sizes a VM, owned by the
//! node (`[kinds.<kind>.vm_policy]`), never by a component. The host builds
//! each create from it, gives its network to each restore, and checks every
//! VM against it after both: a VM that does not carry it is never used.

use oac_helper_protocol::{NetworkPolicy, Vm, VmSpec};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The user every VM's processes run as (the bootstrap alone runs as root,
/// while the bootstrap label reads `pending`).
pub const RUNTIME_USER: &str = "1000:1000";
/// Where the VM's own second disk is mounted.
pub const ENVIRONMENT_MOUNT: &str = "/environment";

/// The VM policy as a node configuration writes it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct VmPolicySettings {
    /// The image, pinned by digest: `name[:tag]@sha256:<64 hex>`.
    pub image: String,
    /// vCPUs, 1 ..= 64 (the maximum is the same: no hotplug).
    pub cpus: u8,
    /// Memory, MiB, 256 ..= 262 144 (the maximum is the same).
    pub memory_mib: u32,
    /// The root disk, MiB, 512 ..= 1 048 576.
    pub root_disk_mib: u32,
    /// The disk at `/environment`, MiB, 64 ..= 1 048 576.
    pub environment_disk_mib: u32,
    /// `none` (no interface) or `public` (public destinations only).
    pub network: NetworkSetting,
    /// The guest security profile: `restricted` (no privilege elevation in
    /// exec sessions) unless the operator chooses `default`.
    #[serde(default)]
    pub guest_profile: GuestProfile,
}

/// The network a policy allows.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum NetworkSetting {
    /// No network interface.
    None,
    /// Public destinations only.
    Public,
}

/// The guest security profile.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GuestProfile {
    /// Exec sessions cannot gain privileges.
    #[default]
    Restricted,
    /// The runtime's default (root in the guest keeps its powers).
    Default,
}

impl GuestProfile {
    /// The runtime's name for it.
    pub fn name(self) -> &'static str {
        match self {
            GuestProfile::Restricted => "restricted",
            GuestProfile::Default => "default",
        }
    }
}

/// Why a VM policy was refused: the field, never its value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("vm_policy.{0} is not valid")]
pub struct VmPolicyError(pub &'static str);

/// A checked VM policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmPolicy(VmPolicySettings);

impl VmPolicy {
    /// Checks `settings`.
    pub fn new(settings: VmPolicySettings) -> Result<Self, VmPolicyError> {
        let checks: [(&'static str, bool); 5] = [
            ("image", pinned_by_digest(&settings.image)),
            ("cpus", (1..=64).contains(&settings.cpus)),
            ("memory_mib", (256..=262_144).contains(&settings.memory_mib)),
            (
                "root_disk_mib",
                (512..=1_048_576).contains(&settings.root_disk_mib),
            ),
            (
                "environment_disk_mib",
                (64..=1_048_576).contains(&settings.environment_disk_mib),
            ),
        ];
        match checks.into_iter().find(|(_, valid)| !valid) {
            Some((field, _)) => Err(VmPolicyError(field)),
            None => Ok(Self(settings)),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &VmPolicySettings {
        &self.0
    }

    /// The network the policy gives every VM, created or restored.
    pub fn network(&self) -> NetworkPolicy {
        match self.0.network {
            NetworkSetting::None => NetworkPolicy::None,
            NetworkSetting::Public => NetworkPolicy::Public,
        }
    }

    /// Whether a VM under this policy gets exactly the network access a
    /// bootstrap asks for: `disabled` only on `none`, `enabled` only on
    /// `public`, never `restricted` (the policy names no domains).
    pub fn enforces(&self, access: oac_provider_api::types::NetworkAccess) -> bool {
        use oac_provider_api::types::NetworkAccess;
        match access {
            NetworkAccess::Disabled => self.0.network == NetworkSetting::None,
            NetworkAccess::Enabled => self.0.network == NetworkSetting::Public,
            NetworkAccess::Restricted => false,
        }
    }

    /// What to create for VM `name`, labelled `labels`.
    pub fn spec(&self, name: &str, labels: BTreeMap<String, String>) -> VmSpec {
        VmSpec {
            name: name.to_string(),
            image: self.0.image.clone(),
            cpus: self.0.cpus,
            memory_mib: self.0.memory_mib,
            root_disk_mib: self.0.root_disk_mib,
            environment_disk_mib: self.0.environment_disk_mib,
            user: RUNTIME_USER.to_string(),
            network: self.network(),
            security_profile: self.0.guest_profile.name().to_string(),
            labels,
        }
    }

    /// Whether `vm` carries the policy: its image, CPUs and memory (the
    /// maxima equal), disks, user, network and guest profile, and nothing
    /// more (no port, other mount or secret). A field the runtime did not
    /// report does not conform.
    pub fn conforms(&self, vm: &Vm) -> bool {
        let policy = &self.0;
        let disks = BTreeMap::from([(ENVIRONMENT_MOUNT.to_string(), policy.environment_disk_mib)]);
        vm.image == policy.image
            && vm.cpus == policy.cpus
            && vm.max_cpus == policy.cpus
            && vm.memory_mib == policy.memory_mib
            && vm.root_disk_mib == Some(policy.root_disk_mib)
            && vm.disks_mib == disks
            && vm.user.as_deref() == Some(RUNTIME_USER)
            && vm.network == Some(self.network())
            && vm.security_profile.as_deref() == Some(policy.guest_profile.name())
            && vm.ports == 0
            && vm.other_mounts == 0
            && vm.secrets == 0
    }
}

/// `name[:tag]@sha256:<64 lowercase hex>` with a non-empty name.
fn pinned_by_digest(image: &str) -> bool {
    image.split_once("@sha256:").is_some_and(|(name, digest)| {
        !name.is_empty()
            && !name.contains('@')
            && !name.chars().any(char::is_whitespace)
            && digest.len() == 64
            && digest
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oac_helper_protocol::VmStatus;

    const IMAGE: &str = "registry.example/oac-runtime:1@sha256:\
        0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn settings() -> VmPolicySettings {
        VmPolicySettings {
            image: IMAGE.into(),
            cpus: 2,
            memory_mib: 2048,
            root_disk_mib: 4096,
            environment_disk_mib: 8192,
            network: NetworkSetting::Public,
            guest_profile: GuestProfile::Restricted,
        }
    }

    fn policy() -> VmPolicy {
        VmPolicy::new(settings()).expect("valid")
    }

    /// The VM the runtime reports after creating `policy`'s spec.
    fn created(policy: &VmPolicy) -> Vm {
        let spec = policy.spec("oac-x-g0", BTreeMap::new());
        Vm {
            id: "local:1".into(),
            name: spec.name,
            status: VmStatus::Running,
            labels: spec.labels,
            image: spec.image,
            cpus: spec.cpus,
            max_cpus: spec.cpus,
            memory_mib: spec.memory_mib,
            root_disk_mib: Some(spec.root_disk_mib),
            disks_mib: BTreeMap::from([(ENVIRONMENT_MOUNT.into(), spec.environment_disk_mib)]),
            user: Some(spec.user),
            network: Some(spec.network),
            security_profile: Some(spec.security_profile),
            ports: 0,
            other_mounts: 0,
            secrets: 0,
            snapshot_parent: None,
        }
    }

    #[test]
    fn a_vm_made_from_the_policy_conforms() {
        let policy = policy();
        assert!(policy.conforms(&created(&policy)));
    }

    #[test]
    fn every_drift_is_nonconformance() {
        let policy = policy();
        let drifts: [fn(&mut Vm); 13] = [
            |vm| vm.image = IMAGE.replace("0123", "f123"),
            |vm| vm.cpus = 4,
            |vm| vm.max_cpus = 4,
            |vm| vm.memory_mib = 4096,
            |vm| vm.root_disk_mib = None,
            |vm| vm.disks_mib.clear(),
            |vm| {
                vm.disks_mib.insert("/data".into(), 1);
            },
            |vm| vm.user = Some("0:0".into()),
            |vm| vm.network = None,
            |vm| vm.security_profile = Some("default".into()),
            |vm| vm.ports = 1,
            |vm| vm.other_mounts = 1,
            |vm| vm.secrets = 1,
        ];
        for (index, drift) in drifts.iter().enumerate() {
            let mut vm = created(&policy);
            drift(&mut vm);
            assert!(!policy.conforms(&vm), "drift {index} conforms");
        }
    }

    #[test]
    fn the_spec_carries_the_policy_and_the_runtime_user() {
        let spec = policy().spec(
            "oac-x-g0",
            BTreeMap::from([("io.oac.bootstrap".into(), "pending".into())]),
        );
        assert_eq!(spec.user, RUNTIME_USER);
        assert_eq!(spec.network, NetworkPolicy::Public);
        assert_eq!(spec.security_profile, "restricted");
        assert_eq!(spec.labels["io.oac.bootstrap"], "pending");
    }

    #[test]
    fn invalid_settings_name_their_field() {
        type Change = fn(&mut VmPolicySettings);
        let cases: [(Change, &str); 6] = [
            (|s| s.image = "oac-runtime:latest".into(), "image"),
            (|s| s.image = IMAGE.to_uppercase(), "image"),
            (|s| s.cpus = 0, "cpus"),
            (|s| s.memory_mib = 16, "memory_mib"),
            (|s| s.root_disk_mib = 0, "root_disk_mib"),
            (|s| s.environment_disk_mib = 0, "environment_disk_mib"),
        ];
        for (change, field) in cases {
            let mut settings = settings();
            change(&mut settings);
            assert_eq!(VmPolicy::new(settings), Err(VmPolicyError(field)));
        }
    }

    #[test]
    fn settings_read_from_toml_refuse_unknown_fields() {
        let text = format!(
            "image = \"{IMAGE}\"\ncpus = 1\nmemory_mib = 512\nroot_disk_mib = 1024\n\
             environment_disk_mib = 256\nnetwork = \"none\"\n"
        );
        let read: VmPolicySettings = toml::from_str(&text).expect("reads");
        assert_eq!(read.guest_profile, GuestProfile::Restricted);
        assert_eq!(read.network, NetworkSetting::None);
        assert!(toml::from_str::<VmPolicySettings>(&format!("{text}ports = 1\n")).is_err());
    }
}
