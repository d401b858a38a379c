//! What one call may reach: the allocations it serves and what it may do to
//! them. A capability reaches only resources labelled for the call's own
//! allocation (or, in a batch observation, one of its allocations), so a
//! component cannot name its way into another installation's or another
//! allocation's resources; and a call's [`Access`] decides, before any
//! request, whether it may change anything at all.

pub(crate) use oac_contract::labels::{
    ALLOCATION as ALLOCATION_LABEL, ENVIRONMENT as ENVIRONMENT_LABEL,
    INSTALLATION as INSTALLATION_LABEL, TENANT as TENANT_LABEL,
};
use oac_provider_api::types::Reference;
use std::collections::HashMap;

/// What a call may do through the capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// No capability at all (the configuration adapter and the declaration
    /// calls): every native import is denied and no event is logged.
    Pure,
    /// Reads only: `GET` over HTTP, Docker reads, receipt reads (the
    /// readiness probe, observations, discovery, credential verification).
    Read,
    /// May change native state: the lifecycle and checkpoint operations.
    Change,
}

/// The allocations a call serves, from the operation's input, and its
/// [`Access`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CallScope {
    access: Access,
    references: Vec<Reference>,
}

impl CallScope {
    /// A configuration or declaration call: no capability, no allocation.
    pub(crate) fn pure() -> Self {
        Self {
            access: Access::Pure,
            references: Vec::new(),
        }
    }

    /// A call about no allocation that may only read (the readiness probe,
    /// selection and configuration discovery).
    pub(crate) fn node_read() -> Self {
        Self {
            access: Access::Read,
            references: Vec::new(),
        }
    }

    /// An operation on one allocation that may change it.
    pub(crate) fn changing(reference: Reference) -> Self {
        Self {
            access: Access::Change,
            references: vec![reference],
        }
    }

    /// A call that may only read these allocations' resources
    /// (observations, credential verification).
    pub(crate) fn reading(references: Vec<Reference>) -> Self {
        Self {
            access: Access::Read,
            references,
        }
    }

    /// What the call may do.
    pub(crate) fn access(&self) -> Access {
        self.access
    }

    /// Whether the call may change native state.
    pub(crate) fn may_change(&self) -> bool {
        self.access == Access::Change
    }

    /// Whether the call may use a native capability at all.
    pub(crate) fn may_reach(&self) -> bool {
        self.access != Access::Pure
    }

    /// The call's one allocation, when it serves exactly one.
    pub(crate) fn single(&self) -> Option<&Reference> {
        match self.references.as_slice() {
            [reference] => Some(reference),
            _ => None,
        }
    }

    /// The allocation whose turn the call takes: a changing call's.
    pub(crate) fn turn(&self) -> Option<&Reference> {
        self.single().filter(|_| self.may_change())
    }

    /// The allocations the call serves.
    pub(crate) fn references(&self) -> &[Reference] {
        &self.references
    }

    /// True when `labels` bind the resource to this installation and to one
    /// of the call's allocations, all four labels exactly.
    pub(crate) fn owns(&self, installation: &str, labels: &HashMap<String, String>) -> bool {
        let label = |key: &str| labels.get(key).map(String::as_str);
        label(INSTALLATION_LABEL) == Some(installation)
            && self.references().iter().any(|reference| {
                label(TENANT_LABEL) == Some(reference.tenant_id.as_str())
                    && label(ENVIRONMENT_LABEL) == Some(reference.environment_id.as_str())
                    && label(ALLOCATION_LABEL) == Some(reference.allocation_id.as_str())
            })
    }
}

/// The four ownership labels of `reference` under `installation`.
pub(crate) fn ownership_labels(
    installation: &str,
    reference: &Reference,
) -> HashMap<String, String> {
    HashMap::from([
        (INSTALLATION_LABEL.to_string(), installation.to_string()),
        (TENANT_LABEL.to_string(), reference.tenant_id.clone()),
        (
            ENVIRONMENT_LABEL.to_string(),
            reference.environment_id.clone(),
        ),
        (
            ALLOCATION_LABEL.to_string(),
            reference.allocation_id.clone(),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(allocation: &str) -> Reference {
        Reference::new("t", "e", allocation)
    }

    #[test]
    fn only_all_four_labels_of_a_call_allocation_own_a_resource() {
        let scope = CallScope::changing(reference("a"));
        let ours = ownership_labels("inst", &reference("a"));
        assert!(scope.owns("inst", &ours));
        assert!(!scope.owns("other", &ours), "another installation");
        assert!(
            !scope.owns("inst", &ownership_labels("inst", &reference("b"))),
            "another allocation of the same installation"
        );
        for key in [
            INSTALLATION_LABEL,
            TENANT_LABEL,
            ENVIRONMENT_LABEL,
            ALLOCATION_LABEL,
        ] {
            let mut missing = ours.clone();
            missing.remove(key);
            assert!(!scope.owns("inst", &missing), "without {key}");
        }
        assert!(
            !CallScope::node_read().owns("inst", &ours),
            "a node call owns nothing"
        );
    }

    #[test]
    fn a_batch_owns_each_of_its_allocations_and_creates_for_none() {
        let batch = CallScope::reading(vec![reference("a"), reference("b")]);
        assert!(batch.owns("inst", &ownership_labels("inst", &reference("b"))));
        assert!(!batch.owns("inst", &ownership_labels("inst", &reference("c"))));
        assert_eq!(batch.single(), None);
        assert_eq!(batch.turn(), None);
        let one = CallScope::changing(reference("a"));
        assert_eq!(one.single(), Some(&reference("a")));
        assert_eq!(one.turn(), Some(&reference("a")));
        let observed = CallScope::reading(vec![reference("a")]);
        assert_eq!(observed.single(), Some(&reference("a")));
        assert_eq!(observed.turn(), None, "a read waits for no turn");
    }

    #[test]
    fn only_a_changing_call_may_change_and_a_pure_one_reaches_nothing() {
        assert!(CallScope::changing(reference("a")).may_change());
        for read in [
            CallScope::node_read(),
            CallScope::reading(vec![reference("a")]),
        ] {
            assert!(!read.may_change() && read.may_reach());
        }
        let pure = CallScope::pure();
        assert!(!pure.may_change() && !pure.may_reach());
        assert!(pure.references().is_empty());
    }
}
