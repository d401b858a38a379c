//! The names of an allocation's VMs and snapshots. The host derives them
//! and a component never names a VM or a snapshot, so no allocation can
//! take another's name first, and one allocation has at most one VM per
//! generation and one snapshot per suspend operation.
//!
//! A VM is `<allocation>-g<generation>`, where `<allocation>` is the name
//! the Docker capability gives the allocation's container (`oac-` and 32
//! hex digits of a SHA-256 over the installation and the reference, each
//! part length-prefixed, so that no part can shift into another: reference
//! parts may contain `:`). A snapshot is member `s-<operation-id>` of the
//! group named after generation 0, so its native reference is
//! `<generation-0 name>:s-<operation-id>`.

use crate::capability::docker::names::AllocationNames;
use oac_provider_api::types::Reference;

/// One allocation's names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmNames {
    allocation: String,
}

impl VmNames {
    /// The names of `reference`'s VMs and snapshots in `installation`.
    pub fn of(installation: &str, reference: &Reference) -> Self {
        Self {
            allocation: AllocationNames::of(installation, reference, &[]).container,
        }
    }

    /// The VM of `generation`.
    pub fn vm(&self, generation: u64) -> String {
        format!("{}-g{generation}", self.allocation)
    }

    /// The group every snapshot of the allocation is captured into.
    pub fn snapshot_group(&self) -> String {
        self.vm(0)
    }

    /// The member suspend `operation_id` captures, when the operation id can
    /// name one (`[A-Za-z0-9][A-Za-z0-9._-]*`, not ending in `.`, at most
    /// 126 bytes); `None` otherwise.
    pub fn snapshot_member(operation_id: &str) -> Option<String> {
        let bytes = operation_id.as_bytes();
        let valid = !bytes.is_empty()
            && bytes.len() <= 126
            && bytes[0].is_ascii_alphanumeric()
            && !operation_id.ends_with('.')
            && bytes
                .iter()
                .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'));
        valid.then(|| format!("s-{operation_id}"))
    }

    /// The native reference of the snapshot suspend `operation_id` captures.
    pub fn snapshot_reference(&self, operation_id: &str) -> Option<String> {
        Self::snapshot_member(operation_id)
            .map(|member| format!("{}:{member}", self.snapshot_group()))
    }
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
    fn generations_share_the_allocation_and_differ_by_number() {
        let names = VmNames::of("inst", &reference("a"));
        let zero = names.vm(0);
        assert!(zero.starts_with("oac-") && zero.ends_with("-g0"), "{zero}");
        assert_eq!(zero.len(), "oac-".len() + 32 + "-g0".len());
        assert_eq!(names.vm(12), zero.replace("-g0", "-g12"));
        assert_eq!(names.snapshot_group(), zero);
    }

    #[test]
    fn a_part_shifted_across_a_colon_names_another_allocation() {
        let one = Reference {
            tenant_id: "t:e".into(),
            environment_id: "a".into(),
            allocation_id: "b".into(),
        };
        let other = Reference {
            tenant_id: "t".into(),
            environment_id: "e:a".into(),
            allocation_id: "b".into(),
        };
        assert_ne!(
            VmNames::of("inst", &one).vm(0),
            VmNames::of("inst", &other).vm(0)
        );
        assert_ne!(
            VmNames::of("inst", &reference("a")).vm(0),
            VmNames::of("other", &reference("a")).vm(0)
        );
    }

    #[test]
    fn a_snapshot_is_named_by_its_operation() {
        let names = VmNames::of("inst", &reference("a"));
        assert_eq!(
            names.snapshot_reference("op-1").expect("valid"),
            format!("{}:s-op-1", names.vm(0))
        );
        for refused in ["", "op:1", "op/1", ".op", "op.", &"x".repeat(127)] {
            assert_eq!(VmNames::snapshot_member(refused), None, "{refused}");
        }
    }
}
