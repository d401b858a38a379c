//! A provider's declaration and the rules it must follow, the same for a
//! component's declaration (checked against the inventory derived from its
//! exports) and for a node's declaration of a served kind (checked against
//! the operations a node forwards).

use oac_contract::{Interface, Operation, REASON_PATTERN, VERSION, is_valid_reason};
use std::collections::BTreeMap;

/// The operations a provider actually has (for a component, derived from
/// its exported functions; never a hand-kept list), in contract order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inventory(pub Vec<Operation>);

impl Inventory {
    /// True when `operation` is in the inventory.
    pub fn contains(&self, operation: Operation) -> bool {
        self.0.contains(&operation)
    }
}

/// The provider's decision for one operation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "support", content = "reason", rename_all = "lowercase")]
pub enum Decision {
    /// Implemented.
    Supported,
    /// Answered with `unsupported(operation, reason)` before any native I/O.
    Unsupported(String),
}

/// A validated declaration: every inventory operation exactly once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declaration(pub BTreeMap<Operation, Decision>);

impl Declaration {
    /// The decision for `operation`; `None` for an operation the provider
    /// does not have.
    pub fn decision(&self, operation: Operation) -> Option<&Decision> {
        self.0.get(&operation)
    }

    /// True when `operation` is declared supported.
    pub fn supports(&self, operation: Operation) -> bool {
        self.decision(operation) == Some(&Decision::Supported)
    }

    /// True when the checkpoint operations are declared supported (they
    /// are all or none).
    pub fn supports_checkpoint(&self) -> bool {
        self.supports(Operation::Initial)
    }

    /// `unsupported(operation, reason)` for an operation declared so, and
    /// `invalid` for one the provider does not have: answered before any
    /// call is made.
    pub fn check(&self, operation: Operation) -> Result<(), crate::types::Error> {
        match self.decision(operation) {
            Some(Decision::Supported) => Ok(()),
            Some(Decision::Unsupported(reason)) => Err(crate::types::Error::unsupported(
                operation.name(),
                reason.clone(),
            )),
            None => Err(crate::types::Error::Invalid),
        }
    }

    /// Operation name → decision, as `describe` and `GET /kinds` show it.
    pub fn by_name(&self) -> BTreeMap<&'static str, &Decision> {
        self.0
            .iter()
            .map(|(operation, decision)| (operation.name(), decision))
            .collect()
    }
}

/// Why a component's exports or a declaration are refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DeclarationError {
    /// The component exports an interface of another contract version.
    #[error("component implements contract version {found}, this host speaks {VERSION}")]
    ContractVersion {
        /// Version found in the export names or the version stamp.
        found: String,
    },
    /// The component lacks the SDK's contract version stamp.
    #[error("component carries no contract version stamp")]
    MissingStamp,
    /// An exported interface of the contract is missing.
    #[error("component does not export interface `{0}`")]
    MissingInterface(String),
    /// An exported function is not the contract's (or not where the
    /// contract puts it, or with another shape).
    #[error("component exports `{0}`, which is not an operation of the contract")]
    UnknownExport(String),
    /// Two exported functions share a name.
    #[error("operation `{0}` is exported twice")]
    AmbiguousExport(String),
    /// An inventory operation is not declared.
    #[error("operation `{0}` is not declared")]
    Missing(String),
    /// A declared operation is not one the provider has.
    #[error("declared operation is not exported by the component")]
    Unknown,
    /// An operation is declared more than once.
    #[error("operation `{0}` is declared more than once")]
    Duplicate(String),
    /// A required operation is declared unsupported.
    #[error("required operation `{0}` is declared unsupported")]
    RequiredUnsupported(String),
    /// An operation that cannot return an error is declared unsupported.
    #[error("operation `{0}` cannot fail and so cannot be unsupported")]
    InfallibleUnsupported(String),
    /// A reason code does not match the pattern.
    #[error("operation `{0}` has a reason that does not match {REASON_PATTERN}")]
    InvalidReason(String),
    /// Some but not all checkpoint operations are supported.
    #[error("checkpoint operations must be supported all together or not at all")]
    PartialCheckpoint,
    /// Checkpoint is supported by a kind that is not a `nodes` kind.
    #[error("only nodes kinds may support checkpoint operations")]
    CheckpointNotNodes,
    /// Batch observation is supported while single observation is not.
    #[error("observe-batch is supported but observe is not")]
    BatchWithoutObserve,
    /// The requirements' configuration discovery contradicts the
    /// declaration of `discover-configuration`.
    #[error("requirements and declaration disagree on configuration discovery")]
    DiscoveryMismatch,
    /// A `nodes` kind asks for what only a direct kind may have.
    #[error("a nodes kind takes no credential and supports no {0}")]
    NodeConfiguration(&'static str),
}

/// Validates a declaration (`(operation name, decision)` as the provider
/// wrote it) against the inventory.
pub fn validate_declaration(
    inventory: &Inventory,
    entries: &[(String, Decision)],
) -> Result<Declaration, DeclarationError> {
    let mut declared = BTreeMap::new();
    for (name, decision) in entries {
        let operation = Operation::from_name(name)
            .filter(|operation| inventory.contains(*operation))
            .ok_or(DeclarationError::Unknown)?;
        if declared.insert(operation, decision.clone()).is_some() {
            return Err(DeclarationError::Duplicate(name.clone()));
        }
        if let Decision::Unsupported(reason) = decision {
            if !is_valid_reason(reason) {
                return Err(DeclarationError::InvalidReason(name.clone()));
            }
            if operation.required() {
                return Err(DeclarationError::RequiredUnsupported(name.clone()));
            }
            if !operation.fallible() {
                return Err(DeclarationError::InfallibleUnsupported(name.clone()));
            }
        }
    }
    if let Some(missing) = inventory.0.iter().find(|op| !declared.contains_key(*op)) {
        return Err(DeclarationError::Missing(missing.name().into()));
    }
    if let Some(required) = Operation::ALL
        .into_iter()
        .find(|operation| operation.required() && !declared.contains_key(operation))
    {
        return Err(DeclarationError::Missing(required.name().into()));
    }
    let declaration = Declaration(declared);
    let checkpoint: Vec<Operation> = Operation::of(Interface::CheckpointProvider)
        .filter(|operation| inventory.contains(*operation))
        .collect();
    let supported = checkpoint
        .iter()
        .filter(|operation| declaration.supports(**operation))
        .count();
    if supported != 0 && supported != checkpoint.len() {
        return Err(DeclarationError::PartialCheckpoint);
    }
    if declaration.supports(Operation::ObserveBatch) && !declaration.supports(Operation::Observe) {
        return Err(DeclarationError::BatchWithoutObserve);
    }
    Ok(declaration)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn everything() -> Inventory {
        Inventory(Operation::ALL.to_vec())
    }

    fn entries(decide: impl Fn(Operation) -> Decision) -> Vec<(String, Decision)> {
        Operation::ALL
            .iter()
            .map(|operation| (operation.name().to_string(), decide(*operation)))
            .collect()
    }

    fn no(reason: &str) -> Decision {
        Decision::Unsupported(reason.into())
    }

    #[test]
    fn a_full_declaration_is_accepted_and_checked_by_operation() {
        let declaration = validate_declaration(
            &everything(),
            &entries(|operation| {
                if operation.interface() == Interface::CheckpointProvider {
                    no("none")
                } else {
                    Decision::Supported
                }
            }),
        )
        .expect("valid");
        assert_eq!(declaration.check(Operation::Create), Ok(()));
        assert_eq!(
            declaration.check(Operation::Suspend),
            Err(crate::types::Error::unsupported("suspend", "none"))
        );
        assert!(!declaration.supports_checkpoint());
    }

    #[test]
    fn each_broken_rule_is_named() {
        let all = everything();
        let refused = |decide: &dyn Fn(Operation) -> Decision| {
            validate_declaration(&all, &entries(decide)).expect_err("refused")
        };
        assert_eq!(
            refused(&|op| if op == Operation::Kill {
                no("x")
            } else {
                Decision::Supported
            }),
            DeclarationError::RequiredUnsupported("kill".into())
        );
        assert_eq!(
            refused(&|op| if op == Operation::Probe {
                no("x")
            } else {
                Decision::Supported
            }),
            DeclarationError::InfallibleUnsupported("probe".into())
        );
        assert_eq!(
            refused(&|op| if op == Operation::Suspend {
                no("x")
            } else {
                Decision::Supported
            }),
            DeclarationError::PartialCheckpoint
        );
        assert_eq!(
            refused(&|op| if op == Operation::Observe {
                no("x")
            } else {
                Decision::Supported
            }),
            DeclarationError::BatchWithoutObserve
        );
        assert_eq!(
            refused(&|op| if op == Operation::Encode {
                no("Not Valid")
            } else {
                Decision::Supported
            }),
            DeclarationError::InvalidReason("encode".into())
        );
        let mut missing = entries(|_| Decision::Supported);
        missing.retain(|(name, _)| name != "renew");
        assert_eq!(
            validate_declaration(&all, &missing),
            Err(DeclarationError::Missing("renew".into()))
        );
        let mut doubled = entries(|_| Decision::Supported);
        doubled.push(("get-info".into(), Decision::Supported));
        assert_eq!(
            validate_declaration(&all, &doubled),
            Err(DeclarationError::Duplicate("get-info".into()))
        );
        let mut unknown = entries(|_| Decision::Supported);
        unknown.push(("teleport".into(), Decision::Supported));
        assert_eq!(
            validate_declaration(&all, &unknown),
            Err(DeclarationError::Unknown)
        );
    }
}
