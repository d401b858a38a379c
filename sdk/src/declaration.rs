//! Helpers for writing the operation declaration and unsupported answers.

use crate::types::{Error, Failure, OperationDeclaration, Support, UnsupportedOperation};

/// The five operations every provider supports.
pub const REQUIRED_OPERATIONS: [&str; 5] = ["create", "get-info", "renew", "kill", "run-command"];

/// The checkpoint operations: supported all together or not at all.
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

/// Observation, discovery and verification operations.
pub const OPTIONAL_OPERATIONS: [&str; 4] = [
    "observe",
    "observe-batch",
    "discover-selection",
    "verify-credential",
];

/// The configuration adapter's operations.
pub const CONFIGURATION_OPERATIONS: [&str; 9] = [
    "requirements",
    "decode-input",
    "encode",
    "decode",
    "normalize",
    "resolve-change",
    "equal",
    "with-credential",
    "discover-configuration",
];

/// The readiness probe; it cannot fail, so it is always supported.
pub const READINESS_OPERATIONS: [&str; 1] = ["probe"];

/// True when `reason` matches `^[a-z][a-z0-9_]{0,95}$`.
pub const fn is_valid_reason(reason: &str) -> bool {
    let bytes = reason.as_bytes();
    if bytes.is_empty() || bytes.len() > 96 || !bytes[0].is_ascii_lowercase() {
        return false;
    }
    let mut index = 1;
    while index < bytes.len() {
        let byte = bytes[index];
        if !(byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_') {
            return false;
        }
        index += 1;
    }
    true
}

/// An operation the adapter does not support, with its reason code.
///
/// Build it in a `const` so that an invalid reason fails compilation:
/// `const NO_OBSERVE: Unsupported = Unsupported::new("observe", "no_stats_api");`
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unsupported {
    operation: &'static str,
    reason: &'static str,
}

impl Unsupported {
    /// Panics (at compile time in a `const`) when `reason` is not a valid code.
    pub const fn new(operation: &'static str, reason: &'static str) -> Self {
        assert!(
            is_valid_reason(reason),
            "reason must match ^[a-z][a-z0-9_]{{0,95}}$"
        );
        Self { operation, reason }
    }

    /// The declaration entry for this operation.
    pub fn declaration(&self) -> OperationDeclaration {
        OperationDeclaration {
            operation: self.operation.to_string(),
            support: Support::Unsupported(self.reason.to_string()),
        }
    }
}

impl From<Unsupported> for Error {
    fn from(value: Unsupported) -> Self {
        Error::Unsupported(UnsupportedOperation {
            operation: value.operation.to_string(),
            reason: value.reason.to_string(),
        })
    }
}

impl From<Unsupported> for Failure {
    fn from(value: Unsupported) -> Self {
        Failure {
            error: value.into(),
            info: None,
        }
    }
}

/// Declaration entries marking `operations` supported.
pub fn supported(operations: &[&str]) -> Vec<OperationDeclaration> {
    operations
        .iter()
        .map(|operation| OperationDeclaration {
            operation: operation.to_string(),
            support: Support::Supported,
        })
        .collect()
}

/// Declaration entries marking `operations` unsupported for one reason.
pub fn unsupported(operations: &[&str], reason: &str) -> Vec<OperationDeclaration> {
    operations
        .iter()
        .map(|operation| OperationDeclaration {
            operation: operation.to_string(),
            support: Support::Unsupported(reason.to_string()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_codes_follow_the_pattern() {
        assert!(is_valid_reason("docker_does_not_support_checkpoints"));
        assert!(is_valid_reason("a"));
        assert!(!is_valid_reason(""));
        assert!(!is_valid_reason("Upper"));
        assert!(!is_valid_reason("1abc"));
        assert!(!is_valid_reason("has-dash"));
        assert!(!is_valid_reason(&"a".repeat(97)));
        assert!(is_valid_reason(&"a".repeat(96)));
    }
}
