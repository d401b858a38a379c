//! The allocations one call serves, and the ownership labels that bind a
//! native resource to one of them. A capability reaches only resources
//! labelled for the call's own allocation (or, in a batch observation, one
//! of its allocations): a component cannot name its way into another
//! installation's or another allocation's resources.

pub use oac_contract::labels::{
    ALLOCATION as ALLOCATION_LABEL, ENVIRONMENT as ENVIRONMENT_LABEL,
    INSTALLATION as INSTALLATION_LABEL, TENANT as TENANT_LABEL,
};
use oac_provider_api::types::Reference;
use std::collections::HashMap;

/// The allocations a call serves, from the operation's input.
#[derive(Clone, Debug, PartialEq)]
pub enum CallScope {
    /// No allocation (readiness probe, declarations, configuration,
    /// discovery): no resource is reachable.
    Node,
    /// One allocation: every operation that names a reference.
    Allocation(Reference),
    /// A batch observation's allocations: it may only read.
    Batch(Vec<Reference>),
}

impl CallScope {
    /// False for a batch observation: a call that serves several
    /// allocations changes none of them (no native request but reads).
    pub fn may_change(&self) -> bool {
        !matches!(self, CallScope::Batch(_))
    }

    /// The single allocation resources may be created for.
    pub fn single(&self) -> Option<&Reference> {
        match self {
            CallScope::Allocation(reference) => Some(reference),
            _ => None,
        }
    }

    fn references(&self) -> &[Reference] {
        match self {
            CallScope::Node => &[],
            CallScope::Allocation(reference) => std::slice::from_ref(reference),
            CallScope::Batch(references) => references,
        }
    }

    /// True when `labels` bind the resource to this installation and to one
    /// of the call's allocations, all four labels exactly.
    pub fn owns(&self, installation: &str, labels: &HashMap<String, String>) -> bool {
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
pub fn ownership_labels(installation: &str, reference: &Reference) -> HashMap<String, String> {
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
        Reference {
            tenant_id: "t".into(),
            environment_id: "e".into(),
            allocation_id: allocation.into(),
        }
    }

    #[test]
    fn only_all_four_labels_of_a_call_allocation_own_a_resource() {
        let scope = CallScope::Allocation(reference("a"));
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
            !CallScope::Node.owns("inst", &ours),
            "a node call owns nothing"
        );
    }

    #[test]
    fn a_batch_owns_each_of_its_allocations_and_creates_for_none() {
        let batch = CallScope::Batch(vec![reference("a"), reference("b")]);
        assert!(batch.owns("inst", &ownership_labels("inst", &reference("b"))));
        assert!(!batch.owns("inst", &ownership_labels("inst", &reference("c"))));
        assert_eq!(batch.single(), None);
        assert_eq!(
            CallScope::Allocation(reference("a")).single(),
            Some(&reference("a"))
        );
    }

    #[test]
    fn only_a_batch_may_not_change() {
        assert!(CallScope::Node.may_change());
        assert!(CallScope::Allocation(reference("a")).may_change());
        assert!(!CallScope::Batch(vec![reference("a")]).may_change());
    }
}
