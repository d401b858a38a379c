//! Names of an allocation's three resources. Names are derived from a hash,
//! so a collision is possible only by design of an attacker; ownership is
//! decided by the labels the host puts on and checks, never by the name.

use oac_provider_sdk::types::Reference;
use sha2::{Digest, Sha256};

/// The container and volume names of one allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Container name.
    pub container: String,
    /// Volume mounted at /home.
    pub home: String,
    /// Volume mounted at /environment (and its `workspace` at /workspace).
    pub environment: String,
}

impl Identity {
    /// Derives the names from installation + tenant + environment + allocation.
    pub fn of(installation: &str, allocation: &Reference) -> Self {
        let mut hash = Sha256::new();
        for part in [
            installation,
            &allocation.tenant_id,
            &allocation.environment_id,
            &allocation.allocation_id,
        ] {
            hash.update((part.len() as u64).to_be_bytes());
            hash.update(part.as_bytes());
        }
        let digest = hex::encode(hash.finalize());
        let container = format!("oac-{}", &digest[..32]);
        Identity {
            home: format!("{container}-home"),
            environment: format!("{container}-environment"),
            container,
        }
    }
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

    #[test]
    fn names_depend_on_every_part_and_cannot_be_shifted() {
        let base = Identity::of("inst", &reference("t", "e", "a"));
        assert_eq!(base, Identity::of("inst", &reference("t", "e", "a")));
        assert_ne!(
            base.container,
            Identity::of("other", &reference("t", "e", "a")).container
        );
        assert_ne!(
            base.container,
            Identity::of("inst", &reference("t", "e", "b")).container
        );
        assert_ne!(
            Identity::of("inst", &reference("ab", "c", "a")).container,
            Identity::of("inst", &reference("a", "bc", "a")).container
        );
        assert_eq!(base.home, format!("{}-home", base.container));
        assert_eq!(base.environment, format!("{}-environment", base.container));
        assert_eq!(base.container.len(), 36);
    }
}
