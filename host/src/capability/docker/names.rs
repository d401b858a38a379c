//! The names of an allocation's container and volumes. The host derives
//! them from the installation and the allocation's reference, and creates a
//! container or volume only under them: a component never chooses a name,
//! so no allocation can take another's name first, and an allocation has
//! at most one container and one volume per role its kind's policy lists.
//!
//! The scheme: `oac-` and the first 32 hex digits of the SHA-256 of the
//! four parts (installation, tenant, environment, allocation), each
//! preceded by its length as 8 big-endian bytes (so no part can be shifted
//! into another), for the container; `<container>-<role>` for a volume.

use oac_provider_api::types::Reference;
use sha2::{Digest, Sha256};

/// The names one allocation's resources may have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocationNames {
    /// The container's name.
    pub container: String,
    /// Each volume role with its volume's name.
    pub volumes: Vec<(String, String)>,
}

impl AllocationNames {
    /// The names of `reference`'s resources in `installation`, with a
    /// volume for each of `roles`.
    pub fn of(installation: &str, reference: &Reference, roles: &[String]) -> Self {
        let mut hash = Sha256::new();
        for part in [
            installation,
            &reference.tenant_id,
            &reference.environment_id,
            &reference.allocation_id,
        ] {
            hash.update((part.len() as u64).to_be_bytes());
            hash.update(part.as_bytes());
        }
        let digest = hex::encode(hash.finalize());
        let container = format!("oac-{}", &digest[..32]);
        let volumes = roles
            .iter()
            .map(|role| (role.clone(), format!("{container}-{role}")))
            .collect();
        Self { container, volumes }
    }

    /// Whether `name` is one of the allocation's volume names.
    pub fn has_volume(&self, name: &str) -> bool {
        self.volumes.iter().any(|(_, volume)| volume == name)
    }
}

/// Whether `role` may name a volume role: `[a-z][a-z0-9]{0,15}`.
pub fn is_volume_role(role: &str) -> bool {
    oac_contract::is_lowercase_name(role, 16, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(tenant: &str, environment: &str, allocation: &str) -> Reference {
        Reference {
            tenant_id: tenant.into(),
            environment_id: environment.into(),
            allocation_id: allocation.into(),
        }
    }

    fn roles() -> Vec<String> {
        vec!["home".into(), "environment".into()]
    }

    #[test]
    fn names_depend_on_every_part_and_cannot_be_shifted() {
        let base = AllocationNames::of("inst", &reference("t", "e", "a"), &roles());
        // The scheme's fixed vector: a vendor's adapter may rely on it.
        assert_eq!(base.container, "oac-ebd9f6083c2cbb7a0f275a1608a90b41");
        assert_eq!(
            base.volumes,
            vec![
                ("home".to_string(), format!("{}-home", base.container)),
                (
                    "environment".to_string(),
                    format!("{}-environment", base.container)
                ),
            ]
        );
        let other = |installation, reference: Reference| {
            AllocationNames::of(installation, &reference, &roles()).container
        };
        assert_ne!(base.container, other("other", reference("t", "e", "a")));
        assert_ne!(base.container, other("inst", reference("t", "e", "b")));
        assert_ne!(
            other("inst", reference("ab", "c", "a")),
            other("inst", reference("a", "bc", "a"))
        );
        assert!(base.has_volume(&format!("{}-home", base.container)));
        assert!(!base.has_volume(&format!("{}-other", base.container)));
    }

    #[test]
    fn a_role_is_a_short_lowercase_word() {
        assert!(is_volume_role("home"));
        assert!(is_volume_role("v2"));
        assert!(!is_volume_role(""));
        assert!(!is_volume_role("Home"));
        assert!(!is_volume_role("a-b"));
        assert!(!is_volume_role(&"a".repeat(17)));
    }
}
