//! The JSON shapes of the node protocol, version [`super::PROTOCOL_VERSION`].
//!
//! They mirror the WIT types field for field (snake_case names, lowercase
//! enum values, bytes as standard base64) and are decoded strictly: unknown
//! and duplicate fields are rejected, and an optional field is either
//! absent or a value, never `null`. Conversions to and from the host's
//! bindings are total, so nothing is lost crossing the wire.

use crate::bindings;
use crate::bindings::exports::oac::sandbox_provider::readiness::Diagnostic as BoundDiagnostic;
use crate::bindings::oac::sandbox_provider::types as wit;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An optional field: absent means none; `null` is refused.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Bytes as standard base64 text.
mod base64_bytes {
    use super::*;

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD
            .decode(text)
            .map_err(|_| serde::de::Error::custom("bytes must be standard base64"))
    }
}

/// Optional bytes as standard base64 text; absent means none.
mod base64_optional {
    use super::*;

    pub fn serialize<S: Serializer>(bytes: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match bytes {
            Some(bytes) => base64_bytes::serialize(bytes, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        base64_bytes::deserialize(d).map(Some)
    }
}

/// The allocation an operation is about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// Core's tenant.
    pub tenant_id: String,
    /// Core's environment.
    pub environment_id: String,
    /// The allocation, persisted by Core before Create.
    pub allocation_id: String,
}

/// Lifecycle of the allocation's compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LifecycleState {
    /// Created, not yet running.
    Pending,
    /// Running.
    Running,
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
    /// Evidence that Create's outcome is settled.
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
    /// CPU time used.
    pub cpu_seconds: f64,
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

/// A snapshot's exact identity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotIdentity {
    /// Name.
    pub name: String,
    /// Native id.
    pub id: String,
}

/// One incarnation of an allocation's compute.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compute {
    /// Incarnation number.
    pub generation: u64,
    /// Name.
    pub name: String,
    /// Native id.
    pub id: String,
    /// The snapshot it was restored from, if any.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub restored_from: Option<SnapshotIdentity>,
}

/// State of one incarnation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComputeState {
    /// Running.
    Running,
    /// Suspended.
    Suspended,
    /// Stopped.
    Stopped,
    /// Gone.
    Absent,
}

/// Suspend's input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuspendRequest {
    /// The allocation.
    pub reference: Reference,
    /// The incarnation to suspend.
    pub compute: Compute,
    /// Only observe a suspension already under way.
    pub observe_only: bool,
}

/// Resume's input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeRequest {
    /// The allocation.
    pub reference: Reference,
    /// The snapshot to resume from.
    pub snapshot: SnapshotIdentity,
    /// Only observe a resumption already under way.
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

/// One operation with its input, externally tagged by the operation name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Call {
    /// `create`.
    Create(Bootstrap),
    /// `get-info`.
    GetInfo(Reference),
    /// `renew`.
    Renew(Reference),
    /// `kill`.
    Kill(Reference),
    /// `run-command`.
    RunCommand(OnAllocation<Command>),
    /// `observe`.
    Observe(Target),
    /// `initial`.
    Initial(Reference),
    /// `new-compute`.
    NewCompute(NewCompute),
    /// `get-compute`.
    GetCompute(OnCompute),
    /// `suspend`.
    Suspend(SuspendRequest),
    /// `resume`.
    Resume(ResumeRequest),
    /// `resume-compute`.
    ResumeCompute(OnCompute),
    /// `kill-compute`.
    KillCompute(OnCompute),
    /// `delete-snapshot`.
    DeleteSnapshot(OnSnapshot),
    /// `run-command-compute`.
    RunCommandCompute(CommandOnCompute),
}

impl Call {
    /// The contract's name of the operation (as declarations name it).
    pub fn operation(&self) -> &'static str {
        match self {
            Call::Create(_) => "create",
            Call::GetInfo(_) => "get-info",
            Call::Renew(_) => "renew",
            Call::Kill(_) => "kill",
            Call::RunCommand(_) => "run-command",
            Call::Observe(_) => "observe",
            Call::Initial(_) => "initial",
            Call::NewCompute(_) => "new-compute",
            Call::GetCompute(_) => "get-compute",
            Call::Suspend(_) => "suspend",
            Call::Resume(_) => "resume",
            Call::ResumeCompute(_) => "resume-compute",
            Call::KillCompute(_) => "kill-compute",
            Call::DeleteSnapshot(_) => "delete-snapshot",
            Call::RunCommandCompute(_) => "run-command-compute",
        }
    }
}

/// An input bound to an allocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnAllocation<T> {
    /// The allocation.
    pub reference: Reference,
    /// The input.
    pub request: T,
}

/// `new-compute`'s input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewCompute {
    /// The allocation.
    pub reference: Reference,
    /// The generation after which the new incarnation comes.
    pub generation: u64,
}

/// An input naming one incarnation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnCompute {
    /// The allocation.
    pub reference: Reference,
    /// The incarnation.
    pub compute: Compute,
}

/// An input naming one snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnSnapshot {
    /// The allocation.
    pub reference: Reference,
    /// The snapshot.
    pub snapshot: SnapshotIdentity,
}

/// `run-command-compute`'s input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandOnCompute {
    /// The allocation.
    pub reference: Reference,
    /// The incarnation.
    pub compute: Compute,
    /// The command.
    pub request: Command,
}

/// One request to `POST /call`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The served kind.
    pub kind: String,
    /// The caller's budget, 1..=120 000 ms, counted from the node's receipt.
    pub timeout_ms: u32,
    /// The operation and its input.
    pub call: Call,
}

/// A fixed error code, with the operation and reason of `unsupported`.
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

/// The value a successful operation returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Value {
    /// create, get-info, renew, kill.
    Info(Info),
    /// run-command, run-command-compute.
    CommandResult(CommandResult),
    /// observe.
    Sample(Sample),
    /// initial, new-compute, resume.
    Compute(Compute),
    /// get-compute, resume-compute.
    ComputeState(ComputeState),
    /// suspend.
    Snapshot(SnapshotIdentity),
    /// kill-compute, delete-snapshot.
    Done,
}

/// The body of a `POST /call` answer (HTTP 200): the operation's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Outcome {
    /// The operation succeeded.
    Ok(Value),
    /// The operation failed with a fixed code; mutations may carry info.
    Error {
        /// The code.
        error: ErrorCode,
        /// Settlement evidence bound to the request's reference, if any.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        info: Option<Info>,
    },
}

/// The body of every refused request (HTTP 4xx/5xx): nothing was executed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Refusal {
    /// One of `version_mismatch unauthorized too_large invalid busy
    /// no_such_endpoint`.
    pub refused: String,
}

/// One kind's declaration as `GET /kinds` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindDeclaration {
    /// Operation name → `supported` or the reason it is unsupported.
    pub operations: std::collections::BTreeMap<String, Support>,
}

/// A declared decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Support {
    /// Implemented.
    Supported,
    /// Unsupported, with the reason code.
    Unsupported(String),
}

/// The body of `GET /kinds`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kinds {
    /// Served kind → its declaration.
    pub kinds: std::collections::BTreeMap<String, KindDeclaration>,
}

/// The body of `GET /health`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Health {
    /// True when every served kind reports no diagnostic.
    pub ready: bool,
    /// Served kind → its diagnostics (empty when ready).
    pub kinds: std::collections::BTreeMap<String, Vec<Diagnostic>>,
}

// Conversions between the wire and the bindings. Each pair is total.

impl From<bindings::Reference> for Reference {
    fn from(r: bindings::Reference) -> Self {
        Self {
            tenant_id: r.tenant_id,
            environment_id: r.environment_id,
            allocation_id: r.allocation_id,
        }
    }
}

impl From<Reference> for bindings::Reference {
    fn from(r: Reference) -> Self {
        Self {
            tenant_id: r.tenant_id,
            environment_id: r.environment_id,
            allocation_id: r.allocation_id,
        }
    }
}

impl From<bindings::LifecycleState> for LifecycleState {
    fn from(s: bindings::LifecycleState) -> Self {
        match s {
            bindings::LifecycleState::Pending => Self::Pending,
            bindings::LifecycleState::Running => Self::Running,
            bindings::LifecycleState::Stopped => Self::Stopped,
            bindings::LifecycleState::Absent => Self::Absent,
        }
    }
}

impl From<LifecycleState> for bindings::LifecycleState {
    fn from(s: LifecycleState) -> Self {
        match s {
            LifecycleState::Pending => Self::Pending,
            LifecycleState::Running => Self::Running,
            LifecycleState::Stopped => Self::Stopped,
            LifecycleState::Absent => Self::Absent,
        }
    }
}

impl From<bindings::Info> for Info {
    fn from(i: bindings::Info) -> Self {
        Self {
            reference: i.reference.into(),
            provider_id: i.provider_id,
            state: i.state.into(),
            bootstrap_complete: i.bootstrap_complete,
            create_settled: i.create_settled,
        }
    }
}

impl From<Info> for bindings::Info {
    fn from(i: Info) -> Self {
        Self {
            reference: i.reference.into(),
            provider_id: i.provider_id,
            state: i.state.into(),
            bootstrap_complete: i.bootstrap_complete,
            create_settled: i.create_settled,
        }
    }
}

impl From<bindings::NetworkAccess> for NetworkAccess {
    fn from(n: bindings::NetworkAccess) -> Self {
        match n {
            bindings::NetworkAccess::Enabled => Self::Enabled,
            bindings::NetworkAccess::Disabled => Self::Disabled,
            bindings::NetworkAccess::Restricted => Self::Restricted,
        }
    }
}

impl From<NetworkAccess> for bindings::NetworkAccess {
    fn from(n: NetworkAccess) -> Self {
        match n {
            NetworkAccess::Enabled => Self::Enabled,
            NetworkAccess::Disabled => Self::Disabled,
            NetworkAccess::Restricted => Self::Restricted,
        }
    }
}

impl From<bindings::Bootstrap> for Bootstrap {
    fn from(b: bindings::Bootstrap) -> Self {
        Self {
            reference: b.reference.into(),
            session_id: b.session_id,
            device_id: b.device_id,
            core_url: b.core_url,
            daemon_credential: b.daemon_credential,
            harness: b.harness,
            network_access: b.network_access.into(),
            allowed_domains: b.allowed_domains,
        }
    }
}

impl From<Bootstrap> for bindings::Bootstrap {
    fn from(b: Bootstrap) -> Self {
        Self {
            reference: b.reference.into(),
            session_id: b.session_id,
            device_id: b.device_id,
            core_url: b.core_url,
            daemon_credential: b.daemon_credential,
            harness: b.harness,
            network_access: b.network_access.into(),
            allowed_domains: b.allowed_domains,
        }
    }
}

impl From<bindings::Command> for Command {
    fn from(c: bindings::Command) -> Self {
        Self {
            args: c.args,
            directory: c.directory,
            stdin: c.stdin,
        }
    }
}

impl From<Command> for bindings::Command {
    fn from(c: Command) -> Self {
        Self {
            args: c.args,
            directory: c.directory,
            stdin: c.stdin,
        }
    }
}

impl From<bindings::CommandResult> for CommandResult {
    fn from(c: bindings::CommandResult) -> Self {
        Self {
            stdout: c.stdout,
            stderr: c.stderr,
            exit_code: c.exit_code,
        }
    }
}

impl From<CommandResult> for bindings::CommandResult {
    fn from(c: CommandResult) -> Self {
        Self {
            stdout: c.stdout,
            stderr: c.stderr,
            exit_code: c.exit_code,
        }
    }
}

impl From<wit::Target> for Target {
    fn from(t: wit::Target) -> Self {
        Self {
            reference: t.reference.into(),
            provider_id: t.provider_id,
        }
    }
}

impl From<Target> for wit::Target {
    fn from(t: Target) -> Self {
        Self {
            reference: t.reference.into(),
            provider_id: t.provider_id,
        }
    }
}

impl From<wit::Sample> for Sample {
    fn from(s: wit::Sample) -> Self {
        Self {
            cpu_seconds: s.cpu_seconds,
            memory_bytes: s.memory_bytes,
            memory_limit_bytes: s.memory_limit_bytes,
            cpus: s.cpus,
            started_at: s.started_at,
        }
    }
}

impl From<Sample> for wit::Sample {
    fn from(s: Sample) -> Self {
        Self {
            cpu_seconds: s.cpu_seconds,
            memory_bytes: s.memory_bytes,
            memory_limit_bytes: s.memory_limit_bytes,
            cpus: s.cpus,
            started_at: s.started_at,
        }
    }
}

impl From<wit::SnapshotIdentity> for SnapshotIdentity {
    fn from(s: wit::SnapshotIdentity) -> Self {
        Self {
            name: s.name,
            id: s.id,
        }
    }
}

impl From<SnapshotIdentity> for wit::SnapshotIdentity {
    fn from(s: SnapshotIdentity) -> Self {
        Self {
            name: s.name,
            id: s.id,
        }
    }
}

impl From<wit::Compute> for Compute {
    fn from(c: wit::Compute) -> Self {
        Self {
            generation: c.generation,
            name: c.name,
            id: c.id,
            restored_from: c.restored_from.map(Into::into),
        }
    }
}

impl From<Compute> for wit::Compute {
    fn from(c: Compute) -> Self {
        Self {
            generation: c.generation,
            name: c.name,
            id: c.id,
            restored_from: c.restored_from.map(Into::into),
        }
    }
}

impl From<wit::ComputeState> for ComputeState {
    fn from(s: wit::ComputeState) -> Self {
        match s {
            wit::ComputeState::Running => Self::Running,
            wit::ComputeState::Suspended => Self::Suspended,
            wit::ComputeState::Stopped => Self::Stopped,
            wit::ComputeState::Absent => Self::Absent,
        }
    }
}

impl From<ComputeState> for wit::ComputeState {
    fn from(s: ComputeState) -> Self {
        match s {
            ComputeState::Running => Self::Running,
            ComputeState::Suspended => Self::Suspended,
            ComputeState::Stopped => Self::Stopped,
            ComputeState::Absent => Self::Absent,
        }
    }
}

impl From<wit::SuspendRequest> for SuspendRequest {
    fn from(r: wit::SuspendRequest) -> Self {
        Self {
            reference: r.reference.into(),
            compute: r.compute.into(),
            observe_only: r.observe_only,
        }
    }
}

impl From<SuspendRequest> for wit::SuspendRequest {
    fn from(r: SuspendRequest) -> Self {
        Self {
            reference: r.reference.into(),
            compute: r.compute.into(),
            observe_only: r.observe_only,
        }
    }
}

impl From<wit::ResumeRequest> for ResumeRequest {
    fn from(r: wit::ResumeRequest) -> Self {
        Self {
            reference: r.reference.into(),
            snapshot: r.snapshot.into(),
            observe_only: r.observe_only,
        }
    }
}

impl From<ResumeRequest> for wit::ResumeRequest {
    fn from(r: ResumeRequest) -> Self {
        Self {
            reference: r.reference.into(),
            snapshot: r.snapshot.into(),
            observe_only: r.observe_only,
        }
    }
}

impl From<BoundDiagnostic> for Diagnostic {
    fn from(d: BoundDiagnostic) -> Self {
        match d {
            BoundDiagnostic::ConfigurationInvalid => Self::ConfigurationInvalid,
            BoundDiagnostic::ProviderUnavailable => Self::ProviderUnavailable,
            BoundDiagnostic::HostUnsupported => Self::HostUnsupported,
            BoundDiagnostic::LimitsUnsupported => Self::LimitsUnsupported,
            BoundDiagnostic::ImageUnavailable => Self::ImageUnavailable,
        }
    }
}

impl From<&bindings::Error> for ErrorCode {
    fn from(error: &bindings::Error) -> Self {
        let (operation, reason) = match error {
            bindings::Error::Unsupported(u) => (Some(u.operation.clone()), Some(u.reason.clone())),
            _ => (None, None),
        };
        Self {
            code: error.code().to_string(),
            operation,
            reason,
        }
    }
}

impl ErrorCode {
    /// The binding's error for this code; `None` for a code outside the
    /// fixed set or an `unsupported` without its operation and reason.
    pub fn to_error(&self) -> Option<bindings::Error> {
        use bindings::Error as E;
        let plain = |error: E| (self.operation.is_none() && self.reason.is_none()).then_some(error);
        match self.code.as_str() {
            "invalid" => plain(E::Invalid),
            "ownership" => plain(E::Ownership),
            "exists" => plain(E::Exists),
            "not_found" => plain(E::NotFound),
            "unconfirmed" => plain(E::ComputeUnconfirmed),
            "command_unconfirmed" => plain(E::CommandUnconfirmed),
            "observation_unavailable" => plain(E::ObservationUnavailable),
            "runtime_not_running" => plain(E::RuntimeNotRunning),
            "unsupported" => Some(E::Unsupported(bindings::UnsupportedOperation {
                operation: self.operation.clone()?,
                reason: self.reason.clone()?,
            })),
            _ => None,
        }
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
        let ok = format!(r#"{{"kind":"k","timeout_ms":5,"call":{{"get_info":{REFERENCE}}}}}"#);
        assert!(decode::<Request>(&ok).is_ok());
        let unknown = ok.replace("\"kind\"", "\"extra\":1,\"kind\"");
        assert!(decode::<Request>(&unknown).is_err(), "unknown field");
        let duplicate = ok.replace("\"kind\":\"k\"", "\"kind\":\"k\",\"kind\":\"k\"");
        assert!(decode::<Request>(&duplicate).is_err(), "duplicate field");
        let null = ok.replace("\"kind\":\"k\"", "\"kind\":null");
        assert!(decode::<Request>(&null).is_err(), "null");
        let two_calls = ok.replace(
            &format!("{{\"get_info\":{REFERENCE}}}"),
            &format!("{{\"get_info\":{REFERENCE},\"kill\":{REFERENCE}}}"),
        );
        assert!(decode::<Request>(&two_calls).is_err(), "two operations");
        let info = format!(
            r#"{{"reference":{REFERENCE},"provider_id":null,"state":"absent","bootstrap_complete":false,"create_settled":true}}"#
        );
        assert!(decode::<Info>(&info).is_err(), "null optional");
        assert!(decode::<Info>(&info.replace("\"provider_id\":null,", "")).is_ok());
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
    fn every_error_code_round_trips() {
        use bindings::Error as E;
        let all = [
            E::Invalid,
            E::Ownership,
            E::Exists,
            E::NotFound,
            E::ComputeUnconfirmed,
            E::CommandUnconfirmed,
            E::Unsupported(bindings::UnsupportedOperation {
                operation: "observe".into(),
                reason: "no_stats".into(),
            }),
            E::ObservationUnavailable,
            E::RuntimeNotRunning,
        ];
        for error in all {
            let code = ErrorCode::from(&error);
            assert_eq!(code.to_error(), Some(error));
        }
        let stray = ErrorCode {
            code: "invalid".into(),
            operation: Some("x".into()),
            reason: None,
        };
        assert_eq!(stray.to_error(), None);
    }
}
