//! Ownership labels: every native resource of an allocation carries all four,
//! and a resource is owned only when all four are present and equal.

use crate::types::Reference;

/// Installation that created the resource.
pub const INSTALLATION: &str = "io.oac.installation";
/// Tenant of the allocation.
pub const TENANT: &str = "io.oac.tenant";
/// Environment of the allocation.
pub const ENVIRONMENT: &str = "io.oac.environment";
/// The allocation itself.
pub const ALLOCATION: &str = "io.oac.allocation";

/// The four ownership labels for `allocation` under `installation`.
pub fn ownership(installation: &str, allocation: &Reference) -> Vec<(String, String)> {
    vec![
        (INSTALLATION.to_string(), installation.to_string()),
        (TENANT.to_string(), allocation.tenant_id.clone()),
        (ENVIRONMENT.to_string(), allocation.environment_id.clone()),
        (ALLOCATION.to_string(), allocation.allocation_id.clone()),
    ]
}

/// True when `labels` carry exactly this allocation's four ownership values.
pub fn is_owned(labels: &[(String, String)], installation: &str, allocation: &Reference) -> bool {
    ownership(installation, allocation)
        .iter()
        .all(|(key, value)| {
            let mut matching = labels.iter().filter(|(k, _)| k == key);
            matches!((matching.next(), matching.next()), (Some((_, v)), None) if v == value)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> Reference {
        Reference {
            tenant_id: "t".into(),
            environment_id: "e".into(),
            allocation_id: "a".into(),
        }
    }

    #[test]
    fn all_four_labels_must_match() {
        let labels = ownership("inst", &reference());
        assert!(is_owned(&labels, "inst", &reference()));
        assert!(!is_owned(&labels, "other", &reference()));
        assert!(!is_owned(&labels[1..], "inst", &reference()));
        let mut foreign = labels.clone();
        foreign[3].1 = "b".into();
        assert!(!is_owned(&foreign, "inst", &reference()));
    }
}
