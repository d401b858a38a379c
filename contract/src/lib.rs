//! The facts of the `oac:sandbox-provider` contract, in one table: its
//! version, every operation with its interface, whether it is required and
//! what an unknown outcome of it is reported as, the bounds, the reason-code
//! rule and the ownership labels. The WIT in `wit/` is the contract; this
//! crate is what Rust code on every side reads instead of repeating it (a
//! test keeps the two equal). It has no dependencies, so it builds for the
//! host, for `wasm32-wasip2` guests and for Core alike.

#![no_std]

pub mod endpoint;
pub mod http;

/// The contract version (the WIT package version).
pub const VERSION: &str = "0.6.0";
/// The WIT package every interface belongs to.
pub const PACKAGE: &str = "oac:sandbox-provider";
/// The custom section the SDK stamps the version into.
pub const STAMP_SECTION: &str = "oac:contract-version";
/// [`VERSION`] as the bytes of the stamp.
pub const VERSION_STAMP: [u8; VERSION.len()] = {
    let mut stamp = [0u8; VERSION.len()];
    let bytes = VERSION.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        stamp[index] = bytes[index];
        index += 1;
    }
    stamp
};
/// The exported interface that is the declaration itself, not an operation.
pub const DECLARATIONS_INTERFACE: &str = "declarations";

/// An exported interface whose functions are operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Interface {
    /// The five required operations.
    SandboxProvider,
    /// The nine checkpoint operations, supported all together or not at all.
    CheckpointProvider,
    /// One resource-usage sample.
    ObservationSource,
    /// Samples for many targets (supported only with observe).
    BatchObservationSource,
    /// The options the provider offers.
    SelectionDiscoverer,
    /// Credential checks.
    CredentialVerifier,
    /// Configuration decoding, encoding and comparison.
    ConfigurationAdapter,
    /// The readiness probe.
    Readiness,
}

impl Interface {
    /// Every operation interface, in the world's export order.
    pub const ALL: [Interface; 8] = [
        Interface::SandboxProvider,
        Interface::CheckpointProvider,
        Interface::ObservationSource,
        Interface::BatchObservationSource,
        Interface::SelectionDiscoverer,
        Interface::CredentialVerifier,
        Interface::ConfigurationAdapter,
        Interface::Readiness,
    ];

    /// The interface's WIT name.
    pub const fn name(self) -> &'static str {
        match self {
            Interface::SandboxProvider => "sandbox-provider",
            Interface::CheckpointProvider => "checkpoint-provider",
            Interface::ObservationSource => "observation-source",
            Interface::BatchObservationSource => "batch-observation-source",
            Interface::SelectionDiscoverer => "selection-discoverer",
            Interface::CredentialVerifier => "credential-verifier",
            Interface::ConfigurationAdapter => "configuration-adapter",
            Interface::Readiness => "readiness",
        }
    }
}

/// What an operation's outcome is reported as when it is unknown (the
/// budget ran out, the instance trapped, the answer contradicted the
/// declaration): never success, never a guess.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unknown {
    /// `compute-unconfirmed` (`unconfirmed` on the node protocol).
    Compute,
    /// `command-unconfirmed`.
    Command,
    /// `observation-unavailable`: an observation proves nothing either way.
    Observation,
}

/// Every operation of the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs)] // each variant is the WIT function of the same name
pub enum Operation {
    Create,
    GetInfo,
    Renew,
    Kill,
    RunCommand,
    Initial,
    NewCompute,
    GetCompute,
    Suspend,
    Resume,
    ResumeCompute,
    KillCompute,
    DeleteSnapshot,
    RunCommandCompute,
    Observe,
    ObserveBatch,
    DiscoverSelection,
    VerifyCredential,
    Requirements,
    DecodeInput,
    Encode,
    Decode,
    Normalize,
    ResolveChange,
    Equal,
    WithCredential,
    DiscoverConfiguration,
    Probe,
}

impl Operation {
    /// Every operation, in the world's export order.
    pub const ALL: [Operation; 28] = [
        Operation::Create,
        Operation::GetInfo,
        Operation::Renew,
        Operation::Kill,
        Operation::RunCommand,
        Operation::Initial,
        Operation::NewCompute,
        Operation::GetCompute,
        Operation::Suspend,
        Operation::Resume,
        Operation::ResumeCompute,
        Operation::KillCompute,
        Operation::DeleteSnapshot,
        Operation::RunCommandCompute,
        Operation::Observe,
        Operation::ObserveBatch,
        Operation::DiscoverSelection,
        Operation::VerifyCredential,
        Operation::Requirements,
        Operation::DecodeInput,
        Operation::Encode,
        Operation::Decode,
        Operation::Normalize,
        Operation::ResolveChange,
        Operation::Equal,
        Operation::WithCredential,
        Operation::DiscoverConfiguration,
        Operation::Probe,
    ];

    /// The operation's WIT function name.
    pub const fn name(self) -> &'static str {
        match self {
            Operation::Create => "create",
            Operation::GetInfo => "get-info",
            Operation::Renew => "renew",
            Operation::Kill => "kill",
            Operation::RunCommand => "run-command",
            Operation::Initial => "initial",
            Operation::NewCompute => "new-compute",
            Operation::GetCompute => "get-compute",
            Operation::Suspend => "suspend",
            Operation::Resume => "resume",
            Operation::ResumeCompute => "resume-compute",
            Operation::KillCompute => "kill-compute",
            Operation::DeleteSnapshot => "delete-snapshot",
            Operation::RunCommandCompute => "run-command-compute",
            Operation::Observe => "observe",
            Operation::ObserveBatch => "observe-batch",
            Operation::DiscoverSelection => "discover-selection",
            Operation::VerifyCredential => "verify-credential",
            Operation::Requirements => "requirements",
            Operation::DecodeInput => "decode-input",
            Operation::Encode => "encode",
            Operation::Decode => "decode",
            Operation::Normalize => "normalize",
            Operation::ResolveChange => "resolve-change",
            Operation::Equal => "equal",
            Operation::WithCredential => "with-credential",
            Operation::DiscoverConfiguration => "discover-configuration",
            Operation::Probe => "probe",
        }
    }

    /// The operation named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|operation| operation.name() == name)
    }

    /// The interface that exports it.
    pub const fn interface(self) -> Interface {
        use Operation::*;
        match self {
            Create | GetInfo | Renew | Kill | RunCommand => Interface::SandboxProvider,
            Initial | NewCompute | GetCompute | Suspend | Resume | ResumeCompute | KillCompute
            | DeleteSnapshot | RunCommandCompute => Interface::CheckpointProvider,
            Observe => Interface::ObservationSource,
            ObserveBatch => Interface::BatchObservationSource,
            DiscoverSelection => Interface::SelectionDiscoverer,
            VerifyCredential => Interface::CredentialVerifier,
            Requirements
            | DecodeInput
            | Encode
            | Decode
            | Normalize
            | ResolveChange
            | Equal
            | WithCredential
            | DiscoverConfiguration => Interface::ConfigurationAdapter,
            Probe => Interface::Readiness,
        }
    }

    /// The five operations no provider may declare unsupported.
    pub const fn required(self) -> bool {
        matches!(self.interface(), Interface::SandboxProvider)
    }

    /// Whether the function can return an error (and so `unsupported`):
    /// `requirements` and `probe` cannot, so they are always supported.
    pub const fn fallible(self) -> bool {
        !matches!(self, Operation::Requirements | Operation::Probe)
    }

    /// What an unknown outcome of the operation is reported as.
    pub const fn unknown(self) -> Unknown {
        use Operation::*;
        match self {
            RunCommand | RunCommandCompute => Unknown::Command,
            Observe
            | ObserveBatch
            | DiscoverSelection
            | VerifyCredential
            | DiscoverConfiguration
            | Probe => Unknown::Observation,
            _ => Unknown::Compute,
        }
    }

    /// Whether a node forwards the operation to the kind it serves. The
    /// others are Core's: configuration, discovery and verification run
    /// where the credential is, and a batch observation is one observation
    /// per target. Every operation is named, so a new one does not compile
    /// until this is decided for it.
    pub const fn forwarded(self) -> bool {
        use Operation::*;
        match self {
            Create | GetInfo | Renew | Kill | RunCommand | Observe | Initial | NewCompute
            | GetCompute | Suspend | Resume | ResumeCompute | KillCompute | DeleteSnapshot
            | RunCommandCompute => true,
            ObserveBatch
            | DiscoverSelection
            | VerifyCredential
            | Requirements
            | DecodeInput
            | Encode
            | Decode
            | Normalize
            | ResolveChange
            | Equal
            | WithCredential
            | DiscoverConfiguration
            | Probe => false,
        }
    }

    /// The operations a node forwards, in export order.
    pub fn forwarded_operations() -> impl Iterator<Item = Operation> {
        Self::ALL
            .into_iter()
            .filter(|operation| operation.forwarded())
    }

    /// The operations of `interface`, in export order.
    pub fn of(interface: Interface) -> impl Iterator<Item = Operation> {
        Self::ALL
            .into_iter()
            .filter(move |operation| operation.interface() == interface)
    }
}

/// The bounds the host enforces (the WIT has no constants).
pub mod bounds {
    /// Most bytes per command output stream: 1 MiB.
    pub const MAX_OUTPUT_BYTES: u32 = 1024 * 1024;
    /// Most command stdin bytes: 50 MiB + 32.
    pub const MAX_STDIN_BYTES: usize = 50 * 1024 * 1024 + 32;
    /// Most targets in one batch observation.
    pub const MAX_BATCH_TARGETS: usize = 100;
    /// Smallest call budget, milliseconds.
    pub const MIN_BUDGET_MS: u32 = 1;
    /// Largest call budget, milliseconds.
    pub const MAX_BUDGET_MS: u32 = 120_000;
    /// Longest identifier (a reference part, a session, device or harness
    /// id), bytes.
    pub const MAX_IDENTIFIER_BYTES: usize = 128;
    /// Most arguments of one command.
    pub const MAX_COMMAND_ARGS: usize = 4096;
    /// Most bytes of one command's arguments together (stdin carries data).
    pub const MAX_COMMAND_ARGS_BYTES: usize = 1024 * 1024;
    /// Longest command working directory, bytes.
    pub const MAX_DIRECTORY_BYTES: usize = 4096;
    /// Longest Core URL in a bootstrap, bytes.
    pub const MAX_URL_BYTES: usize = 2048;
    /// Longest daemon credential, bytes.
    pub const MAX_CREDENTIAL_BYTES: usize = 4096;
    /// Most allowed domains of a restricted network.
    pub const MAX_ALLOWED_DOMAINS: usize = 256;
    /// Largest receipt value, bytes.
    pub const MAX_RECEIPT_BYTES: usize = 4096;
    /// Most receipts one allocation holds (per kind and installation).
    pub const MAX_RECEIPTS_PER_ALLOCATION: usize = 16;
}

/// The identifier rule (reference parts; session, device and harness ids),
/// for messages. Identifiers are compared byte for byte: the host never
/// normalises one, so one allocation has exactly one spelling.
pub const IDENTIFIER_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$";

/// True when `identifier` matches [`IDENTIFIER_PATTERN`].
pub const fn is_valid_identifier(identifier: &str) -> bool {
    let bytes = identifier.as_bytes();
    if bytes.is_empty()
        || bytes.len() > bounds::MAX_IDENTIFIER_BYTES
        || !bytes[0].is_ascii_alphanumeric()
    {
        return false;
    }
    let mut index = 1;
    while index < bytes.len() {
        let byte = bytes[index];
        if !(byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b':' | b'-')) {
            return false;
        }
        index += 1;
    }
    true
}

/// The labels that bind a native resource to one allocation; a resource is
/// an allocation's only when it carries all four.
pub mod labels {
    /// The installation (node operator).
    pub const INSTALLATION: &str = "io.oac.installation";
    /// The tenant of the allocation.
    pub const TENANT: &str = "io.oac.tenant";
    /// The environment of the allocation.
    pub const ENVIRONMENT: &str = "io.oac.environment";
    /// The allocation.
    pub const ALLOCATION: &str = "io.oac.allocation";
}

/// The reason-code rule, for messages.
pub const REASON_PATTERN: &str = "^[a-z][a-z0-9_]{0,95}$";

/// True when `reason` matches [`REASON_PATTERN`]. `const`, so a reason
/// written in a `const` is checked at compile time.
pub const fn is_valid_reason(reason: &str) -> bool {
    is_lowercase_name(reason, 96, Some(b'_'))
}

/// The shape of every lowercase name of the contract and its registry (a
/// reason code, a kind, a credential field, a volume role): a lowercase
/// letter, then lowercase letters, digits and `separator`, at most
/// `max_len` bytes in all.
pub const fn is_lowercase_name(name: &str, max_len: usize, separator: Option<u8>) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > max_len || !bytes[0].is_ascii_lowercase() {
        return false;
    }
    let mut index = 1;
    while index < bytes.len() {
        let byte = bytes[index];
        let separates = match separator {
            Some(separator) => byte == separator,
            None => false,
        };
        if !(byte.is_ascii_lowercase() || byte.is_ascii_digit() || separates) {
            return false;
        }
        index += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    /// The functions an interface file of `wit/` declares, with whether each
    /// returns a `result`.
    fn wit_functions(interface: &str) -> Vec<(String, bool)> {
        let path = std::format!("{}/../wit/{interface}.wit", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("the WIT file");
        text.lines()
            .filter_map(|line| {
                let (name, rest) = line.trim().split_once(": func(")?;
                Some((name.into(), rest.contains("-> result<")))
            })
            .collect()
    }

    #[test]
    fn identifiers_are_one_canonical_spelling() {
        let longest = "a".repeat(128);
        for good in ["a", "0", "tenant-1", "env_2.b:c", longest.as_str()] {
            assert!(is_valid_identifier(good), "{good:?}");
        }
        let too_long = "a".repeat(129);
        for bad in [
            "",
            "-a",
            ".a",
            " a",
            "a b",
            "a/b",
            "a\0",
            "é",
            "a\n",
            too_long.as_str(),
        ] {
            assert!(!is_valid_identifier(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_table_equals_the_wit() {
        for interface in Interface::ALL {
            let table: Vec<(String, bool)> = Operation::of(interface)
                .map(|operation| (operation.name().into(), operation.fallible()))
                .collect();
            assert_eq!(
                table,
                wit_functions(interface.name()),
                "{}",
                interface.name()
            );
        }
        let world = std::fs::read_to_string(std::format!(
            "{}/../wit/world.wit",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("world.wit");
        assert!(world.contains(&std::format!("package {PACKAGE}@{VERSION};")));
        let exported: Vec<&str> = world
            .lines()
            .filter_map(|line| line.trim().strip_prefix("export ")?.strip_suffix(';'))
            .collect();
        let mut expected: Vec<&str> = Interface::ALL.iter().map(|i| i.name()).collect();
        expected.push(DECLARATIONS_INTERFACE);
        assert_eq!(exported.len(), expected.len());
        for name in expected {
            assert!(exported.contains(&name), "{name} is exported");
        }
    }

    #[test]
    fn names_round_trip_and_required_is_the_first_interface() {
        for operation in Operation::ALL {
            assert_eq!(Operation::from_name(operation.name()), Some(operation));
        }
        let required: Vec<&str> = Operation::ALL
            .iter()
            .filter(|operation| operation.required())
            .map(|operation| operation.name())
            .collect();
        assert_eq!(
            required,
            ["create", "get-info", "renew", "kill", "run-command"]
        );
        assert_eq!(Operation::RunCommand.unknown(), Unknown::Command);
        assert_eq!(Operation::Observe.unknown(), Unknown::Observation);
        assert_eq!(Operation::Kill.unknown(), Unknown::Compute);
        assert_eq!(&VERSION_STAMP, VERSION.as_bytes());
    }

    #[test]
    fn reason_codes_follow_the_pattern() {
        assert!(is_valid_reason("docker_does_not_support_checkpoints"));
        assert!(is_valid_reason("a"));
        for bad in ["", "Upper", "9lives", "kebab-case", "space here"] {
            assert!(!is_valid_reason(bad), "{bad:?}");
        }
        assert!(is_valid_reason(&"a".repeat(96)));
        assert!(!is_valid_reason(&"a".repeat(97)));
    }
}
