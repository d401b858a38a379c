//! The four ownership labels every vendor resource of an allocation
//! carries (installation, tenant, environment, allocation): written at
//! create, and checked on every read, mutation and cleanup, so a name or id
//! collision never touches another installation's or allocation's
//! resource. The host checks Docker resources itself; over HTTP only the
//! adapter can, with these helpers (and the contract suite judges it).

use crate::capability::context;
use crate::types::Reference;
use std::collections::BTreeMap;

/// The label names a vendor stores the four values under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabelKeys {
    /// The installation's key.
    pub installation: &'static str,
    /// The tenant's key.
    pub tenant: &'static str,
    /// The environment's key.
    pub environment: &'static str,
    /// The allocation's key.
    pub allocation: &'static str,
}

impl LabelKeys {
    /// The contract's own names (`io.oac.installation`, …).
    pub const CONTRACT: LabelKeys = LabelKeys {
        installation: oac_contract::labels::INSTALLATION,
        tenant: oac_contract::labels::TENANT,
        environment: oac_contract::labels::ENVIRONMENT,
        allocation: oac_contract::labels::ALLOCATION,
    };

    /// Names without dots, for vendors whose metadata keys refuse them
    /// (`oac_installationid`, …).
    pub const UNDOTTED: LabelKeys = LabelKeys {
        installation: "oac_installationid",
        tenant: "oac_tenantid",
        environment: "oac_environmentid",
        allocation: "oac_allocationid",
    };
}

/// An allocation's four label values under this call's installation.
#[derive(Clone, Debug, PartialEq)]
pub struct Ownership {
    /// The installation (from the call's context).
    pub installation: String,
    /// The allocation's reference.
    pub reference: Reference,
}

impl Ownership {
    /// The ownership of `reference` for the installation the call runs for.
    pub fn of(reference: &Reference) -> Self {
        Ownership {
            installation: context::installation_id(),
            reference: reference.clone(),
        }
    }

    /// The four values, in the labels' order (installation, tenant,
    /// environment, allocation): e.g. the arguments of an image's init.
    pub fn values(&self) -> [String; 4] {
        [
            self.installation.clone(),
            self.reference.tenant_id.clone(),
            self.reference.environment_id.clone(),
            self.reference.allocation_id.clone(),
        ]
    }

    /// The four labels under `keys`, to write at create and to filter a
    /// listing by.
    pub fn labels(&self, keys: LabelKeys) -> BTreeMap<String, String> {
        BTreeMap::from([
            (keys.installation.into(), self.installation.clone()),
            (keys.tenant.into(), self.reference.tenant_id.clone()),
            (
                keys.environment.into(),
                self.reference.environment_id.clone(),
            ),
            (keys.allocation.into(), self.reference.allocation_id.clone()),
        ])
    }

    /// True when `labels` (a resource's, as the vendor answered) carry all
    /// four values under `keys`. Anything else is someone else's: leave it
    /// alone and answer `ownership`.
    pub fn owns<'a>(&self, keys: LabelKeys, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.labels(keys)
            .iter()
            .all(|(key, value)| label(key) == Some(value.as_str()))
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::testing::{Mock, reference};

    #[test]
    fn labels_carry_the_installation_and_the_reference() {
        let (ownership, _) = Mock::new("inst", "{}").run(|| Ownership::of(&reference()));
        let labels = ownership.labels(LabelKeys::UNDOTTED);
        assert_eq!(labels["oac_installationid"], "inst");
        assert_eq!(labels["oac_allocationid"], "a");
        assert!(ownership.owns(LabelKeys::UNDOTTED, |key| {
            labels.get(key).map(String::as_str)
        }));
        let mut foreign = labels.clone();
        foreign.insert("oac_installationid".into(), "other".into());
        assert!(!ownership.owns(LabelKeys::UNDOTTED, |key| {
            foreign.get(key).map(String::as_str)
        }));
        let mut partial = labels;
        partial.remove("oac_tenantid");
        assert!(!ownership.owns(LabelKeys::UNDOTTED, |key| {
            partial.get(key).map(String::as_str)
        }));
    }
}
