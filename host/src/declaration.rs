//! The operation inventory, derived from a component's exported functions,
//! and the rules its declaration must follow. Nothing here trusts a
//! hand-kept list of what a component implements.

use std::collections::BTreeMap;
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime::component::types::{ComponentItem, Type};

/// The contract version this host speaks.
pub const CONTRACT_VERSION: &str = "0.1.0";
/// The WIT package every exported interface belongs to.
pub const PACKAGE: &str = "oac:sandbox-provider";

/// The five operations no provider may declare unsupported.
pub const REQUIRED: [&str; 5] = ["create", "get-info", "renew", "kill", "run-command"];
/// The interface whose functions are supported all together or not at all.
pub const CHECKPOINT_INTERFACE: &str = "checkpoint-provider";
/// The functions of [`CHECKPOINT_INTERFACE`], for a side that has no
/// component to read them from (the node proxy).
pub const CHECKPOINT_OPERATIONS: [&str; 9] = [
    "initial",
    "new-compute",
    "get-compute",
    "suspend",
    "resume",
    "resume-compute",
    "kill-compute",
    "delete-snapshot",
    "run-command-compute",
];
/// The interface that is the declaration itself, not an operation.
const DECLARATIONS_INTERFACE: &str = "declarations";
/// Reason codes: `^[a-z][a-z0-9_]{0,95}$`.
pub const REASON_PATTERN: &str = "^[a-z][a-z0-9_]{0,95}$";

/// One exported function of the component.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Operation {
    /// Function name, e.g. `get-info`.
    pub name: String,
    /// Interface name without package or version, e.g. `sandbox-provider`.
    pub interface: String,
    /// Whether the function can return an error (and so `unsupported`).
    pub fallible: bool,
}

/// Every operation the component exports, in export order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Inventory(pub Vec<Operation>);

/// The component's decision for one operation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "support", content = "reason", rename_all = "lowercase")]
pub enum Decision {
    /// Implemented.
    Supported,
    /// Answered with `unsupported(operation, reason)` before any native I/O.
    Unsupported(String),
}

/// A validated declaration: every inventory operation exactly once.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Declaration(pub BTreeMap<String, Decision>);

impl Declaration {
    /// The decision for `operation`; `None` only for names outside the inventory.
    pub fn decision(&self, operation: &str) -> Option<&Decision> {
        self.0.get(operation)
    }

    /// True when the checkpoint operations are declared supported.
    pub fn supports_checkpoint(&self, inventory: &Inventory) -> bool {
        inventory
            .0
            .iter()
            .filter(|operation| operation.interface == CHECKPOINT_INTERFACE)
            .all(|operation| self.0.get(&operation.name) == Some(&Decision::Supported))
    }
}

/// Why a component's exports or declaration are refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DeclarationError {
    /// The component exports an interface of another contract version.
    #[error("component implements contract version {found}, this host speaks {CONTRACT_VERSION}")]
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
    /// Two exported functions share a name.
    #[error("operation `{0}` is exported twice")]
    AmbiguousExport(String),
    /// An inventory operation is not declared.
    #[error("operation `{0}` is not declared")]
    Missing(String),
    /// A declared operation is not exported.
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
}

/// The interfaces every component exports (besides `declarations`).
pub const INTERFACES: [&str; 8] = [
    "sandbox-provider",
    CHECKPOINT_INTERFACE,
    "observation-source",
    "batch-observation-source",
    "selection-discoverer",
    "credential-verifier",
    "configuration-adapter",
    "readiness",
];

/// Splits `oac:sandbox-provider/<interface>@<version>`.
fn split_export_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(PACKAGE)?.strip_prefix('/')?;
    rest.split_once('@')
}

/// Derives the inventory from the component's exported functions.
pub fn derive_inventory(
    engine: &Engine,
    component: &Component,
) -> Result<Inventory, DeclarationError> {
    let ty = component.component_type();
    let mut operations: Vec<Operation> = Vec::new();
    let mut interfaces = Vec::new();
    for (export, item) in ty.exports(engine) {
        let Some((interface, version)) = split_export_name(export) else {
            continue;
        };
        if version != CONTRACT_VERSION {
            return Err(DeclarationError::ContractVersion {
                found: version.to_string(),
            });
        }
        interfaces.push(interface.to_string());
        let ComponentItem::ComponentInstance(instance) = item.ty else {
            continue;
        };
        if interface == DECLARATIONS_INTERFACE {
            continue;
        }
        for (name, function) in instance.exports(engine) {
            let ComponentItem::ComponentFunc(function) = function.ty else {
                continue;
            };
            if operations.iter().any(|operation| operation.name == name) {
                return Err(DeclarationError::AmbiguousExport(name.to_string()));
            }
            let fallible = function
                .results()
                .any(|result| matches!(result, Type::Result(_)));
            operations.push(Operation {
                name: name.to_string(),
                interface: interface.to_string(),
                fallible,
            });
        }
    }
    for required in INTERFACES.iter().chain([&DECLARATIONS_INTERFACE]) {
        if !interfaces.iter().any(|interface| interface == required) {
            return Err(DeclarationError::MissingInterface(required.to_string()));
        }
    }
    Ok(Inventory(operations))
}

/// Reads the contract version the SDK stamped into the component binary.
pub fn contract_stamp(bytes: &[u8]) -> Result<(), DeclarationError> {
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let Ok(wasmparser::Payload::CustomSection(section)) = payload else {
            continue;
        };
        if section.name() == "oac:contract-version" {
            let found = String::from_utf8_lossy(section.data()).into_owned();
            return if found == CONTRACT_VERSION {
                Ok(())
            } else {
                Err(DeclarationError::ContractVersion { found })
            };
        }
    }
    Err(DeclarationError::MissingStamp)
}

/// True when `reason` matches `^[a-z][a-z0-9_]{0,95}$`.
pub fn is_valid_reason(reason: &str) -> bool {
    let bytes = reason.as_bytes();
    (1..=96).contains(&bytes.len())
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
}

/// Validates the component's declaration against its inventory.
pub fn validate_declaration(
    inventory: &Inventory,
    entries: &[(String, Decision)],
) -> Result<Declaration, DeclarationError> {
    let mut declared = BTreeMap::new();
    for (operation, decision) in entries {
        let Some(exported) = inventory
            .0
            .iter()
            .find(|exported| &exported.name == operation)
        else {
            return Err(DeclarationError::Unknown);
        };
        if declared
            .insert(operation.clone(), decision.clone())
            .is_some()
        {
            return Err(DeclarationError::Duplicate(operation.clone()));
        }
        if let Decision::Unsupported(reason) = decision {
            if !is_valid_reason(reason) {
                return Err(DeclarationError::InvalidReason(operation.clone()));
            }
            if REQUIRED.contains(&operation.as_str()) {
                return Err(DeclarationError::RequiredUnsupported(operation.clone()));
            }
            if !exported.fallible {
                return Err(DeclarationError::InfallibleUnsupported(operation.clone()));
            }
        }
    }
    if let Some(missing) = inventory
        .0
        .iter()
        .find(|operation| !declared.contains_key(&operation.name))
    {
        return Err(DeclarationError::Missing(missing.name.clone()));
    }
    for required in REQUIRED {
        if !declared.contains_key(required) {
            return Err(DeclarationError::Missing(required.to_string()));
        }
    }
    let checkpoint: Vec<&Decision> = inventory
        .0
        .iter()
        .filter(|operation| operation.interface == CHECKPOINT_INTERFACE)
        .filter_map(|operation| declared.get(&operation.name))
        .collect();
    let supported = checkpoint
        .iter()
        .filter(|decision| ***decision == Decision::Supported)
        .count();
    if supported != 0 && supported != checkpoint.len() {
        return Err(DeclarationError::PartialCheckpoint);
    }
    let is_supported = |name: &str| declared.get(name) == Some(&Decision::Supported);
    if is_supported("observe-batch") && !is_supported("observe") {
        return Err(DeclarationError::BatchWithoutObserve);
    }
    Ok(Declaration(declared))
}

/// Validates a declaration against the kind's registration.
pub fn validate_binding(
    declaration: &Declaration,
    inventory: &Inventory,
    mode: crate::registry::Mode,
) -> Result<(), DeclarationError> {
    if declaration.supports_checkpoint(inventory) && mode != crate::registry::Mode::Nodes {
        return Err(DeclarationError::CheckpointNotNodes);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module_with_custom_section(name: &str, data: &[u8]) -> Vec<u8> {
        let mut payload = vec![name.len() as u8];
        payload.extend_from_slice(name.as_bytes());
        payload.extend_from_slice(data);
        let mut bytes = b"\0asm\x01\0\0\0".to_vec();
        bytes.push(0);
        bytes.push(payload.len() as u8);
        bytes.extend(payload);
        bytes
    }

    #[test]
    fn the_contract_stamp_must_match_this_host() {
        assert_eq!(
            contract_stamp(&module_with_custom_section(
                "oac:contract-version",
                b"0.1.0"
            )),
            Ok(())
        );
        assert_eq!(
            contract_stamp(&module_with_custom_section(
                "oac:contract-version",
                b"0.2.0"
            )),
            Err(DeclarationError::ContractVersion {
                found: "0.2.0".into()
            })
        );
        assert_eq!(
            contract_stamp(&module_with_custom_section("other", b"0.1.0")),
            Err(DeclarationError::MissingStamp)
        );
    }

    #[test]
    fn reason_codes_follow_the_pattern() {
        assert!(is_valid_reason("docker_does_not_support_checkpoints"));
        assert!(is_valid_reason(&"a".repeat(96)));
        for bad in [
            "",
            "Upper",
            "9lives",
            "kebab-case",
            "space here",
            &"a".repeat(97),
        ] {
            assert!(!is_valid_reason(bad), "{bad:?}");
        }
    }
}
