//! The contract's values as Core sees them: plain Rust types that mirror
//! the WIT field for field, and that the node protocol carries as JSON
//! (snake_case names, lowercase enum values, bytes as standard base64).
//! They are decoded strictly: unknown and duplicate fields are refused, and
//! an optional field is either absent or a value, never `null`.
//!
//! These are the types of the provider interface on every side: an
//! in-process kind converts them at the WebAssembly boundary only, and a
//! remote call sends them as they are.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An optional field: absent means none; `null` is refused.
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Bytes as standard base64 text.
mod base64_bytes {
    use super::*;

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD
            .decode(text)
            .map_err(|_| serde::de::Error::custom("bytes must be standard base64"))
    }
}

/// Optional bytes as standard base64 text; absent means none.
mod base64_optional {
    use super::*;

    pub(super) fn serialize<S: Serializer>(
        bytes: &Option<Vec<u8>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match bytes {
            Some(bytes) => base64_bytes::serialize(bytes, s),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        base64_bytes::deserialize(d).map(Some)
    }
}

/// The allocation an operation is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// Core's tenant.
    pub tenant_id: String,
    /// Core's environment.
    pub environment_id: String,
    /// The allocation, persisted by Core before Create.
    pub allocation_id: String,
}

impl Reference {
    /// The reference to `allocation` of `environment` of `tenant`.
    pub fn new(
        tenant: impl Into<String>,
        environment: impl Into<String>,
        allocation: impl Into<String>,
    ) -> Self {
        Self {
            tenant_id: tenant.into(),
            environment_id: environment.into(),
            allocation_id: allocation.into(),
        }
    }
}

/// Lifecycle of the allocation's compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LifecycleState {
    /// Created, not yet running (or restarting).
    Pending,
    /// Running.
    Running,
    /// Present, its processes frozen in memory.
    Paused,
    /// Present only as a snapshot.
    Suspended,
    /// Present but stopped.
    Stopped,
    /// Gone.
    Absent,
}

/// What a provider says about an allocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Info {
    /// The allocation this answer is bound to.
    pub reference: Reference,
    /// The provider's native id; absent when there is none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub provider_id: Option<String>,
    /// Lifecycle state.
    pub state: LifecycleState,
    /// Evidence that the bootstrap reached the runtime.
    pub bootstrap_complete: bool,
    /// Evidence that the original Create for this reference can no longer
    /// change resources (see the WIT's `info` for who may claim it).
    pub create_settled: bool,
}

/// Network policy of the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkAccess {
    /// Unrestricted.
    Enabled,
    /// None.
    Disabled,
    /// Only `allowed_domains`.
    Restricted,
}

/// Create's input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bootstrap {
    /// The allocation.
    pub reference: Reference,
    /// Core's session.
    pub session_id: String,
    /// The runtime's device.
    pub device_id: String,
    /// Where the runtime daemon connects.
    pub core_url: String,
    /// The daemon's credential (confidential: never logged).
    pub daemon_credential: String,
    /// The harness to run.
    pub harness: String,
    /// Network policy.
    pub network_access: NetworkAccess,
    /// Domains reachable under `restricted`.
    pub allowed_domains: Vec<String>,
}

/// One command to run in the allocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Command {
    /// Program and arguments.
    pub args: Vec<String>,
    /// Working directory; absent for the default.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub directory: Option<String>,
    /// Standard input, base64; absent for none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "base64_optional"
    )]
    pub stdin: Option<Vec<u8>>,
}

impl Command {
    /// A command the contract accepts ([`crate::input::command`]).
    /// Anything else is `invalid` before it is sent anywhere, in process or
    /// through a node.
    pub fn is_valid(&self) -> bool {
        crate::input::command(self)
    }
}

/// A command's outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandResult {
    /// Standard output, base64.
    #[serde(with = "base64_bytes")]
    pub stdout: Vec<u8>,
    /// Standard error, base64.
    #[serde(with = "base64_bytes")]
    pub stderr: Vec<u8>,
    /// The real exit code.
    pub exit_code: i32,
}

/// What to observe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// The allocation.
    pub reference: Reference,
    /// The native id, when Core knows it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub provider_id: Option<String>,
}

/// One resource-usage sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sample {
    /// CPU time used, seconds; `None` when the system does not report it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub cpu_seconds: Option<f64>,
    /// Memory in use.
    pub memory_bytes: u64,
    /// Memory limit.
    pub memory_limit_bytes: u64,
    /// CPUs granted.
    pub cpus: f64,
    /// Start time (RFC 3339), when known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub started_at: Option<String>,
}

/// A snapshot a suspend captured: provider evidence Core persists
/// unchanged (see the WIT's `snapshot-identity`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotIdentity {
    /// The allocation it belongs to.
    pub reference: Reference,
    /// Provider-side snapshot id.
    pub id: String,
    /// Digest of the captured state.
    pub digest: String,
    /// Provider-side checkpoint id.
    pub checkpoint_id: String,
    /// Where the provider keeps the checkpoint.
    pub checkpoint_root: String,
    /// The suspend operation that captured it.
    pub operation_id: String,
    /// Generation of the incarnation it was captured from.
    pub source_generation: u64,
    /// Name of that incarnation.
    pub source_name: String,
    /// Native id of that incarnation.
    pub source_id: String,
}

/// One incarnation of an allocation's compute.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compute {
    /// Incarnation number.
    pub generation: u64,
    /// Name.
    pub name: String,
    /// Native id; empty until the incarnation exists.
    pub id: String,
    /// The snapshot it was (or is to be) restored from, if any.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub restored_from: Option<SnapshotIdentity>,
}

/// What one incarnation is, natively.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComputeStatus {
    /// Running.
    Running,
    /// Frozen in memory.
    Paused,
    /// Captured into a snapshot and stopped.
    Suspended,
    /// Stopped without a snapshot.
    Stopped,
    /// Gone.
    Absent,
}

/// An observation of one exact incarnation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputeState {
    /// The incarnation, its native id filled in.
    pub compute: Compute,
    /// Its native status.
    pub status: ComputeStatus,
    /// Evidence that the runtime daemon was started in it.
    pub bootstrap_complete: bool,
    /// The snapshot a suspend captured from it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub snapshot: Option<SnapshotIdentity>,
    /// Evidence that it is stopped and can no longer run.
    pub source_stopped: bool,
}

/// Suspend's input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuspendRequest {
    /// The allocation.
    pub reference: Reference,
    /// Core's id for this suspend.
    pub operation_id: String,
    /// The incarnation to suspend.
    pub source: Compute,
    /// The snapshot Core already holds for this operation.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub snapshot: Option<SnapshotIdentity>,
    /// Only report what this operation already did.
    pub observe_only: bool,
}

/// Resume's input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeRequest {
    /// The allocation.
    pub reference: Reference,
    /// Core's id for this resume.
    pub operation_id: String,
    /// The snapshot to restore.
    pub snapshot: SnapshotIdentity,
    /// The incarnation to make.
    pub target: Compute,
    /// Only report what this operation already did.
    pub observe_only: bool,
}

/// A readiness diagnostic of a kind on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Diagnostic {
    /// The node's configuration of the kind is invalid.
    ConfigurationInvalid,
    /// The provider's native service does not answer.
    ProviderUnavailable,
    /// The node cannot host this kind (e.g. engine too old).
    HostUnsupported,
    /// The requested resource limits cannot be enforced.
    LimitsUnsupported,
    /// The runtime image is missing.
    ImageUnavailable,
    /// The probe itself did not answer in time (node-side code).
    ProbeUnavailable,
}

/// Why an operation is not supported: the operation and a reason code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnsupportedOperation {
    /// The operation name, as in the declaration.
    pub operation: String,
    /// Reason code, `^[a-z][a-z0-9_]{0,95}$`.
    pub reason: String,
}

/// The fixed error codes; no free text ever crosses a boundary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ErrorCode", into = "ErrorCode")]
pub enum Error {
    /// The input is malformed or violates a bound or policy.
    Invalid,
    /// A resource exists but is not owned by this allocation.
    Ownership,
    /// The allocation's compute already exists.
    Exists,
    /// The allocation's compute does not exist.
    NotFound,
    /// The outcome of a compute operation is unknown.
    ComputeUnconfirmed,
    /// The outcome of a command is unknown.
    CommandUnconfirmed,
    /// The operation is declared unsupported.
    Unsupported(UnsupportedOperation),
    /// No observation can be made now.
    ObservationUnavailable,
    /// The Runtime daemon is not running in the compute.
    RuntimeNotRunning,
}

impl Error {
    /// The fixed code, as the node protocol and the CLI print it.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Invalid => "invalid",
            Error::Ownership => "ownership",
            Error::Exists => "exists",
            Error::NotFound => "not_found",
            Error::ComputeUnconfirmed => "unconfirmed",
            Error::CommandUnconfirmed => "command_unconfirmed",
            Error::Unsupported(_) => "unsupported",
            Error::ObservationUnavailable => "observation_unavailable",
            Error::RuntimeNotRunning => "runtime_not_running",
        }
    }

    /// `unsupported(operation, reason)`.
    pub fn unsupported(operation: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Unsupported(UnsupportedOperation {
            operation: operation.into(),
            reason: reason.into(),
        })
    }

    /// What an unknown outcome is reported as.
    pub fn unknown(unknown: oac_contract::Unknown) -> Self {
        match unknown {
            oac_contract::Unknown::Compute => Error::ComputeUnconfirmed,
            oac_contract::Unknown::Command => Error::CommandUnconfirmed,
            oac_contract::Unknown::Observation => Error::ObservationUnavailable,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

impl std::error::Error for Error {}

/// An error as the node protocol writes it: the code, and the operation and
/// reason of `unsupported`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorCode {
    /// One of `invalid ownership exists not_found unsupported
    /// observation_unavailable runtime_not_running command_unconfirmed
    /// unconfirmed`.
    pub code: String,
    /// `unsupported` only: the operation.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub operation: Option<String>,
    /// `unsupported` only: the reason code.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub reason: Option<String>,
}

/// A code outside the fixed set, or `unsupported` without its operation and
/// reason (or another code with them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not one of the fixed error codes")]
pub struct UnknownCode;

impl TryFrom<ErrorCode> for Error {
    type Error = UnknownCode;

    fn try_from(code: ErrorCode) -> Result<Self, UnknownCode> {
        let plain = |error: Error| {
            (code.operation.is_none() && code.reason.is_none())
                .then_some(error)
                .ok_or(UnknownCode)
        };
        match code.code.as_str() {
            "invalid" => plain(Error::Invalid),
            "ownership" => plain(Error::Ownership),
            "exists" => plain(Error::Exists),
            "not_found" => plain(Error::NotFound),
            "unconfirmed" => plain(Error::ComputeUnconfirmed),
            "command_unconfirmed" => plain(Error::CommandUnconfirmed),
            "observation_unavailable" => plain(Error::ObservationUnavailable),
            "runtime_not_running" => plain(Error::RuntimeNotRunning),
            "unsupported" => match (code.operation, code.reason) {
                (Some(operation), Some(reason)) => Ok(Error::Unsupported(UnsupportedOperation {
                    operation,
                    reason,
                })),
                _ => Err(UnknownCode),
            },
            _ => Err(UnknownCode),
        }
    }
}

impl From<Error> for ErrorCode {
    fn from(error: Error) -> Self {
        let code = error.code().to_string();
        match error {
            Error::Unsupported(unsupported) => ErrorCode {
                code,
                operation: Some(unsupported.operation),
                reason: Some(unsupported.reason),
            },
            _ => ErrorCode {
                code,
                operation: None,
                reason: None,
            },
        }
    }
}

/// A failed mutation, with settlement evidence bound to the call's
/// reference when the provider has some.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// What went wrong.
    pub error: Error,
    /// Evidence the provider holds despite the error, if any.
    pub info: Option<Info>,
}

impl From<Error> for Failure {
    /// A failure without evidence.
    fn from(error: Error) -> Self {
        Failure { error, info: None }
    }
}

/// Whether an input of a kind's configuration is needed: an explicit
/// decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Requirement {
    /// Must be given.
    Required,
    /// Must not be given.
    NotRequired,
}

/// What an installation of a kind must provide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigurationRequirements {
    /// A vendor credential.
    pub credential: Requirement,
    /// A public origin of Core.
    pub public_origin: Requirement,
    /// Whether configuration discovery is supported.
    pub configuration_discovery: bool,
}

/// A decoded, validated configuration: the canonical public object and the
/// credential beside it. `Debug` never shows the credential.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Configuration {
    /// The canonical public object, as JSON text.
    pub public: String,
    /// The credential, when the kind takes one.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub credential: Option<String>,
}

impl Configuration {
    /// A configuration of `public` alone, without a credential.
    pub fn without_credential(public: impl Into<String>) -> Self {
        Self {
            public: public.into(),
            credential: None,
        }
    }
}

impl std::fmt::Debug for Configuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Configuration")
            .field("public", &self.public)
            .field(
                "credential",
                &self.credential.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// A configuration as Core stores it. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredConfiguration {
    /// The canonical public object, as JSON text.
    pub public: String,
    /// What Core may index or show, as JSON text.
    pub metadata: String,
    /// The credential's bytes, for Core's secret store only.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "base64_optional"
    )]
    pub secret: Option<Vec<u8>>,
}

impl std::fmt::Debug for StoredConfiguration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredConfiguration")
            .field("public", &self.public)
            .field("metadata", &self.metadata)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    const REFERENCE: &str = r#"{"tenant_id":"t","environment_id":"e","allocation_id":"a"}"#;

    #[test]
    fn decoding_is_strict() {
        let info = format!(
            r#"{{"reference":{REFERENCE},"provider_id":null,"state":"absent","bootstrap_complete":false,"create_settled":true}}"#
        );
        assert!(decode::<Info>(&info).is_err(), "null optional");
        assert!(decode::<Info>(&info.replace("\"provider_id\":null,", "")).is_ok());
        let extra = info.replace("\"provider_id\":null,", "\"extra\":1,");
        assert!(decode::<Info>(&extra).is_err(), "unknown field");
        let stdin = r#"{"args":["cat"],"stdin":"not base64!"}"#;
        assert!(decode::<Command>(stdin).is_err(), "bad base64");
    }

    #[test]
    fn bytes_travel_as_base64_and_back() {
        let command = Command {
            args: vec!["cat".into()],
            directory: None,
            stdin: Some(vec![0, 255, 10, 13]),
        };
        let text = serde_json::to_string(&command).expect("encode");
        assert_eq!(text, r#"{"args":["cat"],"stdin":"AP8KDQ=="}"#);
        assert_eq!(decode::<Command>(&text), Ok(command));
    }

    #[test]
    fn every_error_code_round_trips_and_nothing_else_decodes() {
        let all = [
            Error::Invalid,
            Error::Ownership,
            Error::Exists,
            Error::NotFound,
            Error::ComputeUnconfirmed,
            Error::CommandUnconfirmed,
            Error::unsupported("observe", "no_stats"),
            Error::ObservationUnavailable,
            Error::RuntimeNotRunning,
        ];
        for error in all {
            let text = serde_json::to_string(&error).expect("encode");
            assert_eq!(decode::<Error>(&text), Ok(error));
        }
        for stray in [
            r#"{"code":"invalid","operation":"x"}"#,
            r#"{"code":"unsupported","operation":"x"}"#,
            r#"{"code":"teapot"}"#,
        ] {
            assert!(decode::<Error>(stray).is_err(), "{stray}");
        }
        assert_eq!(
            serde_json::to_string(&Diagnostic::ProviderUnavailable).expect("encode"),
            "\"provider_unavailable\""
        );
    }
}
