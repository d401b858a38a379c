//! The operation inventory, derived from a component's exported functions
//! and checked against the contract's table, and the contract stamp. The
//! declaration rules themselves are the provider interface's
//! ([`oac_provider_api::declaration`]), the same for a component and for a
//! node's declaration of a served kind.

use oac_contract::{DECLARATIONS_INTERFACE, Interface, Operation, PACKAGE, STAMP_SECTION, VERSION};
pub use oac_provider_api::declaration::{
    Decision, Declaration, DeclarationError, Inventory, validate_declaration,
};
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime::component::types::{ComponentItem, Type};

/// Splits `oac:sandbox-provider/<interface>@<version>`.
fn split_export_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(PACKAGE)?.strip_prefix('/')?;
    rest.split_once('@')
}

/// Derives the inventory from the component's exported functions, and
/// checks each is the contract's operation of that name, in the interface
/// and with the fallibility the contract gives it.
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
        if version != VERSION {
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
            let fallible = function
                .results()
                .any(|result| matches!(result, Type::Result(_)));
            let operation = Operation::from_name(name)
                .filter(|op| op.interface().name() == interface && op.fallible() == fallible)
                .ok_or_else(|| DeclarationError::UnknownExport(name.to_string()))?;
            if operations.contains(&operation) {
                return Err(DeclarationError::AmbiguousExport(name.to_string()));
            }
            operations.push(operation);
        }
    }
    let expected = Interface::ALL
        .iter()
        .map(|interface| interface.name())
        .chain([DECLARATIONS_INTERFACE]);
    for required in expected {
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
        if section.name() == STAMP_SECTION {
            let found = String::from_utf8_lossy(section.data()).into_owned();
            return if found == VERSION {
                Ok(())
            } else {
                Err(DeclarationError::ContractVersion { found })
            };
        }
    }
    Err(DeclarationError::MissingStamp)
}

/// Validates a declaration against the kind's registration: checkpoint
/// only for `nodes` kinds.
pub fn validate_binding(
    declaration: &Declaration,
    mode: crate::registry::Mode,
) -> Result<(), DeclarationError> {
    if declaration.supports_checkpoint() && mode != crate::registry::Mode::Nodes {
        return Err(DeclarationError::CheckpointNotNodes);
    }
    Ok(())
}

/// Validates a kind's configuration requirements against its declaration
/// and mode: configuration discovery as declared, and a `nodes` kind (whose
/// configuration is the node's file) takes no credential and supports
/// neither credential replacement nor verification nor configuration
/// discovery.
pub fn validate_requirements(
    declaration: &Declaration,
    requirements: &oac_provider_api::types::ConfigurationRequirements,
    mode: crate::registry::Mode,
) -> Result<(), DeclarationError> {
    use oac_contract::Operation;
    use oac_provider_api::types::Requirement;
    if requirements.configuration_discovery
        != declaration.supports(Operation::DiscoverConfiguration)
    {
        return Err(DeclarationError::DiscoveryMismatch);
    }
    if mode == crate::registry::Mode::Nodes {
        if requirements.credential != Requirement::NotRequired {
            return Err(DeclarationError::NodeConfiguration("credential"));
        }
        for (operation, what) in [
            (Operation::WithCredential, "credential replacement"),
            (Operation::VerifyCredential, "credential verification"),
            (Operation::DiscoverConfiguration, "configuration discovery"),
        ] {
            if declaration.supports(operation) {
                return Err(DeclarationError::NodeConfiguration(what));
            }
        }
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
                oac_contract::VERSION.as_bytes()
            )),
            Ok(())
        );
        assert_eq!(
            contract_stamp(&module_with_custom_section(
                "oac:contract-version",
                b"0.5.0"
            )),
            Err(DeclarationError::ContractVersion {
                found: "0.5.0".into()
            })
        );
        assert_eq!(
            contract_stamp(&module_with_custom_section("other", b"0.5.0")),
            Err(DeclarationError::MissingStamp)
        );
    }
}
