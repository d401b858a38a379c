//! The JSON shapes of the node protocol, version [`PROTOCOL_VERSION`]: a
//! call is one operation with its input, an outcome is its value or a fixed
//! error (with settlement evidence for mutations). The values themselves are
//! [`crate::types`], unchanged. Decoding is strict.
//!
//! The protocol is HTTP/1.1 on a Unix socket or TCP. Every request and
//! answer carries `oac-protocol: oac-node/4` (matched exactly, no fallback)
//! and every request `authorization: Bearer <token>` (compared in constant
//! time). Endpoints:
//!
//! - `POST /call` — a [`Request`]; answers HTTP 200 with an [`Outcome`]
//!   whenever the operation was attempted.
//! - `GET /frames` with `upgrade: oac-frames` — answers 101 and turns the
//!   connection into a framed session: calls one after another, each a
//!   [`Request`] frame answered by an [`Answer`] frame (see [`frame`]), with
//!   no HTTP per call. What a call may be and what it answers are those of
//!   `POST /call`.
//! - `GET /kinds` — the node's registry digest and identity, and the served
//!   kinds' declarations and component digests ([`Kinds`]). Core's side
//!   refuses a node whose registry digest is not its own.
//! - `GET /health` — readiness from each kind's probe ([`Health`]); HTTP 200
//!   when ready, 503 otherwise.
//!
//! A refused request (wrong version, bad token, oversized frame, malformed
//! or out-of-range input, too many operations in flight) gets a 4xx/5xx
//! [`Refusal`] and was not executed.

use crate::police::Settled;
use crate::types::present;
use crate::types::{
    Bootstrap, Command, CommandResult, Compute, ComputeState, Diagnostic, Error, Info, Reference,
    ResumeRequest, Sample, SnapshotIdentity, SuspendRequest, Target,
};
use oac_contract::Operation;
use serde::{Deserialize, Serialize};

/// The header naming the protocol version on every request and answer.
pub const PROTOCOL_HEADER: &str = "oac-protocol";
/// The one protocol version this build speaks.
pub const PROTOCOL_VERSION: &str = "oac-node/4";
/// Largest request body: 50 MiB + 32 bytes of stdin as base64, plus room
/// for the envelope.
pub const MAX_REQUEST_BYTES: usize = 72 << 20;
/// Largest answer body: two 1 MiB command streams as base64, plus room.
pub const MAX_RESPONSE_BYTES: usize = 4 << 20;
/// How long a node waits for a request's head (which is also how long it
/// keeps an idle connection open) and then for its body: a stalled client
/// must hold neither a connection, an in-flight slot nor shutdown for long.
pub const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The `upgrade` token that asks `GET /frames` for a framed session.
pub const FRAMES_UPGRADE: &str = "oac-frames";

/// Frames of a session: a 4-byte big-endian prefix, then that many bytes
/// of JSON. A request frame holds a [`Request`] (at most
/// [`MAX_REQUEST_BYTES`]); an answer frame holds an [`Answer`] (at most
/// [`frame::MAX_ANSWER_BYTES`]), and the prefix's top bit
/// ([`frame::LAST`]) says the node ends the session after it.
pub mod frame {
    /// Bytes of a frame's length prefix.
    pub const PREFIX: usize = 4;
    /// In an answer's prefix: the session's last answer. The length is the
    /// other 31 bits.
    pub const LAST: u32 = 1 << 31;
    /// Largest answer frame: an outcome of [`super::MAX_RESPONSE_BYTES`]
    /// and its envelope.
    pub const MAX_ANSWER_BYTES: usize = super::MAX_RESPONSE_BYTES + 16;

    /// Splits an answer's prefix into its length and whether it is the
    /// session's last.
    pub fn answer_prefix(prefix: [u8; PREFIX]) -> (usize, bool) {
        let word = u32::from_be_bytes(prefix);
        ((word & !LAST) as usize, word & LAST != 0)
    }

    /// An answer frame around `outcome`, the JSON of an
    /// [`super::Outcome`] (already bounded by the node): `{"outcome":…}`.
    pub fn answer_outcome(outcome: &[u8], last: bool) -> Vec<u8> {
        let mut frame = Vec::with_capacity(PREFIX + outcome.len() + 12);
        frame.extend_from_slice(&[0; PREFIX]);
        frame.extend_from_slice(b"{\"outcome\":");
        frame.extend_from_slice(outcome);
        frame.push(b'}');
        seal(frame, last)
    }

    /// An answer frame refusing a request with `code`:
    /// `{"refused":"code"}`.
    pub fn answer_refused(code: &str, last: bool) -> Vec<u8> {
        let mut frame = vec![0; PREFIX];
        // A code is one of the fixed ASCII words of `REFUSALS`.
        frame.extend_from_slice(format!("{{\"refused\":\"{code}\"}}").as_bytes());
        seal(frame, last)
    }

    /// A request frame holding `request`, its JSON written after the
    /// prefix (no copy of a large stdin); `None` if it cannot be encoded or
    /// is over [`super::MAX_REQUEST_BYTES`], which no node would read.
    pub fn request(request: &super::Request) -> Option<Vec<u8>> {
        let mut frame = vec![0; PREFIX];
        serde_json::to_writer(&mut frame, request).ok()?;
        (frame.len() - PREFIX <= super::MAX_REQUEST_BYTES).then(|| seal(frame, false))
    }

    /// A request frame around `body`, whatever it holds (for tests that
    /// send what a client never would).
    pub fn request_of(body: &[u8]) -> Vec<u8> {
        let mut frame = Vec::with_capacity(PREFIX + body.len());
        frame.extend_from_slice(&[0; PREFIX]);
        frame.extend_from_slice(body);
        seal(frame, false)
    }

    /// Writes the length of what follows the prefix, and the last flag.
    fn seal(mut frame: Vec<u8>, last: bool) -> Vec<u8> {
        let length = (frame.len() - PREFIX) as u32;
        let word = if last { length | LAST } else { length };
        frame[..PREFIX].copy_from_slice(&word.to_be_bytes());
        frame
    }
}

/// The code Core's side refuses a node with whose registry digest is not
/// its own: the two would disagree on what a kind is.
pub const REGISTRY_MISMATCH: &str = "registry_mismatch";

/// The codes a node refuses a request with (nothing was executed).
pub const REFUSALS: [&str; 7] = [
    "version_mismatch",
    "unauthorized",
    "too_large",
    "too_slow",
    "invalid",
    "busy",
    "no_such_endpoint",
];

/// Reasons a proxy gives for the operations a node never forwards.
pub mod reasons {
    /// `observe-batch`: Core batches across nodes itself.
    pub const BATCH: &str = "node_batch_observation_not_forwarded";
    /// `discover-selection`: discovery is a Core-side concern.
    pub const DISCOVERY: &str = "node_selection_discovery_not_forwarded";
    /// `verify-credential`: credentials are verified where they are stored.
    pub const VERIFICATION: &str = "node_credential_verification_not_forwarded";
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
    /// The operation this call runs.
    pub fn operation(&self) -> Operation {
        match self {
            Call::Create(_) => Operation::Create,
            Call::GetInfo(_) => Operation::GetInfo,
            Call::Renew(_) => Operation::Renew,
            Call::Kill(_) => Operation::Kill,
            Call::RunCommand(_) => Operation::RunCommand,
            Call::Observe(_) => Operation::Observe,
            Call::Initial(_) => Operation::Initial,
            Call::NewCompute(_) => Operation::NewCompute,
            Call::GetCompute(_) => Operation::GetCompute,
            Call::Suspend(_) => Operation::Suspend,
            Call::Resume(_) => Operation::Resume,
            Call::ResumeCompute(_) => Operation::ResumeCompute,
            Call::KillCompute(_) => Operation::KillCompute,
            Call::DeleteSnapshot(_) => Operation::DeleteSnapshot,
            Call::RunCommandCompute(_) => Operation::RunCommandCompute,
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
    /// The new incarnation's generation.
    pub generation: u64,
    /// The snapshot it is to be restored from.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::types::present"
    )]
    pub restored_from: Option<SnapshotIdentity>,
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

/// The value a successful operation returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Value {
    /// create, get-info, renew, kill.
    Info(Info),
    /// get-info, renew, kill whose `create_settled` claim rests on the
    /// host's own settlement record (docs/evidence.md): the info and the
    /// record. Core's side believes it only for a kind whose registration
    /// (in its own copy of the registry) keeps records.
    InfoOnRecord(OnRecord),
    /// run-command, run-command-compute.
    CommandResult(CommandResult),
    /// observe.
    Sample(Sample),
    /// initial, new-compute.
    Compute(Compute),
    /// get-compute, suspend, resume, resume-compute (boxed: it is the
    /// largest value by far).
    ComputeState(Box<ComputeState>),
    /// kill-compute, delete-snapshot.
    Done,
}

/// An answer's info and the settlement record its claim rests on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnRecord {
    /// The answer.
    pub info: Info,
    /// What the host recorded the allocation's Create settled to.
    pub record: Settled,
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
        error: Error,
        /// Settlement evidence bound to the request's reference, if any.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        info: Option<Info>,
        /// The host's settlement record `info`'s claim rests on, for a
        /// get-info, renew or kill (see [`Value::InfoOnRecord`]).
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        record: Option<Settled>,
    },
}

/// One answer frame of a framed session: the call's outcome, or the code
/// it was refused with (one of [`REFUSALS`]; nothing was executed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[allow(clippy::large_enum_variant)] // decoded once per call and taken apart at once
pub enum Answer {
    /// The operation was attempted: its outcome, as `POST /call` answers it.
    Outcome(Outcome),
    /// The request was refused before anything ran.
    Refused(String),
}

/// The body of every refused request (HTTP 4xx/5xx): nothing was executed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Refusal {
    /// One of `version_mismatch unauthorized too_large invalid busy
    /// no_such_endpoint too_slow`.
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
    /// The node's registry digest ([`crate::registry::Registry::digest`]).
    pub registry: String,
    /// The node's identity (its configuration's `node_id`).
    pub node: String,
    /// Served kind → its declaration.
    pub kinds: std::collections::BTreeMap<String, KindDeclaration>,
    /// Served kind → the SHA-256 of the component it loaded (hex).
    pub components: std::collections::BTreeMap<String, String>,
}

/// The body of `GET /health`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Health {
    /// The node's registry digest.
    pub registry: String,
    /// The node's identity.
    pub node: String,
    /// True when every served kind reports no diagnostic.
    pub ready: bool,
    /// Served kind → its diagnostics (empty when ready).
    pub kinds: std::collections::BTreeMap<String, Vec<Diagnostic>>,
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
    }

    #[test]
    fn every_call_names_a_forwarded_operation() {
        let call = decode::<Call>(&format!(r#"{{"kill":{REFERENCE}}}"#)).expect("call");
        assert_eq!(call.operation(), Operation::Kill);
        assert!(call.operation().forwarded());
    }

    /// The checkpoint inputs as docs/node-protocol.md shows them.
    #[test]
    fn checkpoint_requests_have_the_documented_shape() {
        let reference = r#"{"tenant_id":"t","environment_id":"e","allocation_id":"a"}"#;
        let snapshot = format!(
            r#"{{"reference":{reference},"id":"s","digest":"d","checkpoint_id":"c","checkpoint_root":"/","operation_id":"op-1","source_generation":0,"source_name":"a-g0","source_id":"i"}}"#
        );
        let suspend = format!(
            r#"{{"kind":"k","timeout_ms":1000,"call":{{"suspend":{{"reference":{reference},"operation_id":"op-1","source":{{"generation":0,"name":"a-g0","id":"i"}},"snapshot":{snapshot},"observe_only":true}}}}}}"#
        );
        let request: Request = serde_json::from_str(&suspend).expect("suspend decodes");
        assert_eq!(request.call.operation(), Operation::Suspend);
        let resume = format!(
            r#"{{"kind":"k","timeout_ms":1000,"call":{{"resume":{{"reference":{reference},"operation_id":"op-2","snapshot":{snapshot},"target":{{"generation":1,"name":"a-g1","id":"","restored_from":{snapshot}}},"observe_only":false}}}}}}"#
        );
        let request: Request = serde_json::from_str(&resume).expect("resume decodes");
        assert_eq!(request.call.operation(), Operation::Resume);
        let new_compute = format!(
            r#"{{"kind":"k","timeout_ms":1000,"call":{{"new_compute":{{"reference":{reference},"generation":1,"restored_from":{snapshot}}}}}}}"#
        );
        assert!(serde_json::from_str::<Request>(&new_compute).is_ok());
    }

    /// The shapes docs/node-protocol.md shows a client in another language.
    #[test]
    fn outcomes_have_the_documented_shape() {
        let failed = Outcome::Error {
            error: Error::Exists,
            info: None,
            record: None,
        };
        assert_eq!(
            serde_json::to_string(&failed).expect("json"),
            r#"{"error":{"error":{"code":"exists"}}}"#
        );
        let ok = Outcome::Ok(Value::Done);
        assert_eq!(
            serde_json::to_string(&ok).expect("json"),
            r#"{"ok":"done"}"#
        );
    }

    /// The frames the node builds by hand decode as the [`Answer`]s they
    /// stand for, with their length and last flag in the prefix.
    #[test]
    fn answer_frames_are_answers() {
        let outcome = Outcome::Error {
            error: Error::NotFound,
            info: None,
            record: None,
        };
        let json = serde_json::to_vec(&outcome).expect("json");
        for last in [false, true] {
            let built = frame::answer_outcome(&json, last);
            let (length, flagged) = frame::answer_prefix(built[..4].try_into().expect("prefix"));
            assert_eq!((length, flagged), (built.len() - frame::PREFIX, last));
            let decoded: Answer = serde_json::from_slice(&built[4..]).expect("answer");
            assert_eq!(decoded, Answer::Outcome(outcome.clone()));
            let refused = frame::answer_refused("busy", last);
            assert_eq!(
                frame::answer_prefix(refused[..4].try_into().expect("prefix")).1,
                last
            );
            let decoded: Answer = serde_json::from_slice(&refused[4..]).expect("refusal");
            assert_eq!(decoded, Answer::Refused("busy".into()));
        }
        assert_eq!(frame::request_of(b"{}"), b"\0\0\0\x02{}");
        let request = Request {
            kind: "k".into(),
            timeout_ms: 5,
            call: Call::GetInfo(Reference {
                tenant_id: "t".into(),
                environment_id: "e".into(),
                allocation_id: "a".into(),
            }),
        };
        let built = frame::request(&request).expect("frame");
        let (length, last) = frame::answer_prefix(built[..4].try_into().expect("prefix"));
        assert_eq!((length, last), (built.len() - frame::PREFIX, false));
        assert_eq!(
            serde_json::from_slice::<Request>(&built[4..]).expect("request"),
            request
        );
    }
}
