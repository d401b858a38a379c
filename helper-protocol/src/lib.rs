//! The protocol between the host and its microsandbox helper.
//!
//! microsandbox is a library with no server, so the host runs a helper
//! process (which links it) for each native call: one [`Request`] as JSON on
//! the helper's stdin, one [`Response`] as JSON on its stdout, then the
//! helper exits. Both sides refuse unknown fields and any other
//! [`VERSION`]. The host never kills a helper: a call whose budget ended
//! leaves it to finish, and the allocation's turn is held until it has.
//!
//! The helper is a thin executor. It reports what the runtime has
//! ([`Vm`], [`Snapshot`]) and the host judges it (ownership labels, native
//! ids, ancestry, the VM policy). Where a check and an effect must not be
//! separated, the host sends the guard ([`Guard`]) and the helper checks it
//! on the handle it acts on, in the same process, under the allocation's
//! lock file.
//!
//! Errors are fixed codes ([`ErrorCode`]): the runtime's text, which may
//! carry paths, names or secrets, never crosses.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The protocol version both sides speak (exact match).
pub const VERSION: u32 = 1;

/// The largest request the helper reads: a command's stdin (50 MiB + 32
/// bytes) base64-encoded, plus room for the rest.
pub const MAX_REQUEST_BYTES: usize = 72 * 1024 * 1024;

/// The largest response the host reads: two output streams of 1 MiB
/// base64-encoded, plus room for the rest.
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// One native call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// [`VERSION`].
    pub version: u32,
    /// Where the runtime lives and keeps its state.
    pub runtime: Runtime,
    /// When the caller stops waiting, Unix milliseconds. The helper bounds
    /// its waits (the lock, a command) by it; a mutation already started
    /// runs to its end.
    pub deadline_unix_ms: u64,
    /// What to do.
    pub operation: Operation,
}

/// The runtime the helper drives: the operator's installation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runtime {
    /// The runtime's home (`MSB_HOME`): its database, images, VMs and
    /// snapshots; private to the node (mode 0700).
    pub home: String,
    /// The `msb` executable.
    pub msb: String,
    /// The `libkrunfw` library.
    pub libkrunfw: String,
}

/// The operations, each what one runtime call (or one checked sequence on
/// one handle) needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Operation {
    /// What the node offers: virtualisation, the runtime's diagnosis and
    /// version. Reads only.
    Probe,
    /// The VM `name`, if there is one. Reads only.
    Get {
        /// The VM's name.
        name: String,
    },
    /// Creates and boots a VM (detached: it outlives the helper).
    Create {
        /// What to create.
        spec: VmSpec,
    },
    /// Runs a command in a running VM and waits for its exit.
    Exec {
        /// The VM it runs in.
        guard: Guard,
        /// The command.
        command: ExecCommand,
    },
    /// Replaces labels, for the VM's next start (the runtime keeps a
    /// running VM's labels): the host reads them from the persisted
    /// configuration.
    Relabel {
        /// The VM.
        guard: Guard,
        /// Labels to set (others are kept).
        labels: BTreeMap<String, String>,
    },
    /// Pauses a running VM in memory.
    Pause {
        /// The VM.
        guard: Guard,
    },
    /// Resumes a paused VM.
    Resume {
        /// The VM.
        guard: Guard,
    },
    /// Force-kills (SIGKILL, never a graceful stop) and removes a VM, then
    /// looks it up again: answers only once it is absent.
    KillRemove {
        /// The VM.
        guard: Guard,
    },
    /// Captures a full snapshot of a running VM, integrity recorded, and
    /// verifies it.
    Capture {
        /// The source VM.
        guard: Guard,
        /// The snapshot group (the allocation's generation-0 name).
        group: String,
        /// The member name in the group (`s-<operation-id>`).
        member: String,
        /// Labels the artifact carries.
        labels: BTreeMap<String, String>,
    },
    /// The snapshot `group:member`, verified, if there is one. Reads only.
    GetSnapshot {
        /// The group.
        group: String,
        /// The member.
        member: String,
    },
    /// Restores a full snapshot into a new VM `name` (memory, disk,
    /// execution and device state; never disk-only), with an explicit
    /// network policy, detached.
    Restore {
        /// The snapshot's group.
        group: String,
        /// The snapshot's member.
        member: String,
        /// The snapshot's native id: the artifact must still be it.
        snapshot_id: String,
        /// The new VM's name.
        name: String,
        /// The network policy (the runtime's default would be public).
        network: NetworkPolicy,
    },
    /// Removes the snapshot `group:member` if it is still `snapshot_id`.
    RemoveSnapshot {
        /// The group.
        group: String,
        /// The member.
        member: String,
        /// The snapshot's native id.
        snapshot_id: String,
    },
    /// One metrics sample of a running VM. Reads only.
    Metrics {
        /// The VM.
        guard: Guard,
    },
}

impl Operation {
    /// A stable name, e.g. `kill-remove`.
    pub fn name(&self) -> &'static str {
        match self {
            Operation::Probe => "probe",
            Operation::Get { .. } => "get",
            Operation::Create { .. } => "create",
            Operation::Exec { .. } => "exec",
            Operation::Relabel { .. } => "relabel",
            Operation::Pause { .. } => "pause",
            Operation::Resume { .. } => "resume",
            Operation::KillRemove { .. } => "kill-remove",
            Operation::Capture { .. } => "capture",
            Operation::GetSnapshot { .. } => "get-snapshot",
            Operation::Restore { .. } => "restore",
            Operation::RemoveSnapshot { .. } => "remove-snapshot",
            Operation::Metrics { .. } => "metrics",
        }
    }

    /// True for operations that only read runtime state.
    pub fn is_read(&self) -> bool {
        matches!(
            self,
            Operation::Probe
                | Operation::Get { .. }
                | Operation::GetSnapshot { .. }
                | Operation::Metrics { .. }
        )
    }
}

/// The VM an operation acts on, as the host's ownership check saw it: the
/// helper acts only when the VM under `name` still has `id` and carries
/// every one of `labels` (else [`ErrorCode::Replaced`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guard {
    /// The VM's name.
    pub name: String,
    /// Its native id.
    pub id: String,
    /// Labels it must carry, with these values.
    pub labels: BTreeMap<String, String>,
}

/// A VM to create: the host's policy and the host's names and labels;
/// nothing of it comes from a component.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmSpec {
    /// The VM's name.
    pub name: String,
    /// The image, by digest (`name@sha256:<64 hex>`).
    pub image: String,
    /// vCPUs (the maximum is the same).
    pub cpus: u8,
    /// Memory, MiB.
    pub memory_mib: u32,
    /// Root disk, MiB.
    pub root_disk_mib: u32,
    /// The VM's own disk mounted at `/environment`, MiB.
    pub environment_disk_mib: u32,
    /// The user its processes run as, `uid:gid`.
    pub user: String,
    /// The network policy.
    pub network: NetworkPolicy,
    /// The guest security profile's name.
    pub security_profile: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
}

/// Where a VM's network may go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkPolicy {
    /// No network interface at all.
    None,
    /// Public destinations only (no private, loopback or host addresses).
    Public,
}

/// A command to run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecCommand {
    /// Program and arguments.
    pub args: Vec<String>,
    /// Working directory.
    pub working_dir: Option<String>,
    /// The user, `uid:gid`.
    pub user: String,
    /// Stdin, base64; closed after it is written.
    pub stdin_base64: Option<String>,
    /// Bound per output stream, bytes: over it the answer is
    /// [`ErrorCode::CommandUnconfirmed`].
    pub output_limit_bytes: u32,
}

/// A command whose exit was observed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecOutput {
    /// Standard output, base64.
    pub stdout_base64: String,
    /// Standard error, base64.
    pub stderr_base64: String,
    /// Exit code.
    pub exit_code: i32,
}

/// A VM's native status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VmStatus {
    /// Booting.
    Starting,
    /// Running.
    Running,
    /// Shutting down.
    Draining,
    /// Paused in memory.
    Paused,
    /// Stopped.
    Stopped,
    /// Its process died.
    Crashed,
}

/// What the runtime has of a VM: its persisted configuration, as read
/// back, for the host to judge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vm {
    /// Native id (never reused for another VM).
    pub id: String,
    /// Name.
    pub name: String,
    /// Status.
    pub status: VmStatus,
    /// Labels of the persisted configuration.
    pub labels: BTreeMap<String, String>,
    /// The image reference it was created from.
    pub image: String,
    /// vCPUs.
    pub cpus: u8,
    /// Maximum vCPUs.
    pub max_cpus: u8,
    /// Memory, MiB.
    pub memory_mib: u32,
    /// Root disk, MiB.
    pub root_disk_mib: Option<u32>,
    /// Sizes of the VM's own disks by mount path, MiB.
    pub disks_mib: BTreeMap<String, u32>,
    /// The user, as configured.
    pub user: Option<String>,
    /// The network policy, when it is one this protocol names.
    pub network: Option<NetworkPolicy>,
    /// The guest security profile, as configured.
    pub security_profile: Option<String>,
    /// Published ports.
    pub ports: u32,
    /// Mounts other than its own disks (a bind, a named volume, a host
    /// disk image, a tmpfs).
    pub other_mounts: u32,
    /// Secrets given to it.
    pub secrets: u32,
    /// Native id of the snapshot it was restored from.
    pub snapshot_parent: Option<String>,
}

/// What the runtime has of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// Native id (`snap_…`).
    pub id: String,
    /// The artifact's digest.
    pub digest: String,
    /// The group.
    pub group: String,
    /// The member.
    pub member: String,
    /// A full snapshot (memory, execution and devices, not only the disk).
    pub full: bool,
    /// Its labels (the host's, written at capture: ownership, operation,
    /// source generation and id).
    pub labels: BTreeMap<String, String>,
    /// The verification of its recorded integrity; absent when it was
    /// captured without integrity.
    pub verified: Option<Verified>,
}

/// A snapshot's recorded integrity, checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verified {
    /// The digest the verification computed.
    pub digest: String,
    /// The checkpoint's id.
    pub checkpoint_id: String,
    /// The checkpoint's root.
    pub checkpoint_root: String,
}

/// One metrics sample.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// When the runtime took it, Unix milliseconds.
    pub observed_at_ms: u64,
    /// How long the VM had run then, milliseconds.
    pub uptime_ms: u64,
    /// vCPU time, nanoseconds.
    pub vcpu_time_ns: u64,
    /// Memory in use, bytes.
    pub memory_bytes: u64,
    /// Memory limit, bytes.
    pub memory_limit_bytes: u64,
}

/// What the node offers, for the host's readiness judgement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// The CPU advertises hardware virtualisation (`vmx` or `svm`).
    pub cpu_virtualisation: bool,
    /// The runtime's own diagnosis (`msb doctor`) passed.
    pub doctor_passed: bool,
    /// The runtime's version (`msb --version`).
    pub runtime_version: String,
    /// The SHA-256 of the `msb` executable, hex.
    pub runtime_sha256: String,
    /// The permission bits of the runtime's home; absent when there is no
    /// home (yet).
    pub home_mode: Option<u32>,
}

/// A helper's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Response {
    /// [`VERSION`].
    pub version: u32,
    /// The outcome.
    pub outcome: Outcome,
}

/// The outcome of one operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Outcome {
    /// Done, nothing to report.
    Done,
    /// A VM (`get`, `create`, `pause`, `resume`, `restore`).
    Vm {
        /// The VM as read back after the operation.
        vm: Vm,
    },
    /// A snapshot (`capture`, `get-snapshot`).
    Snapshot {
        /// The snapshot as read back and verified.
        snapshot: Snapshot,
    },
    /// A command's output (`exec`).
    Exec {
        /// The output.
        output: ExecOutput,
    },
    /// A metrics sample (`metrics`).
    Metrics {
        /// The sample.
        metrics: Metrics,
    },
    /// What the node offers (`probe`).
    Probe {
        /// The facts.
        probe: Probe,
    },
    /// A fixed failure code.
    Error {
        /// The code.
        code: ErrorCode,
    },
}

/// Fixed failure codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    /// The request could not be read, or is not valid.
    Invalid,
    /// The VM or snapshot does not exist.
    NotFound,
    /// A VM or snapshot of that name exists already.
    Exists,
    /// The guard no longer holds: another id, or labels missing.
    Replaced,
    /// The runtime refused the request (a state that does not allow it,
    /// an artifact that failed verification).
    Failed,
    /// The VM could not boot: no virtualisation on this node.
    NoVirtualisation,
    /// A command's exit was not observed.
    CommandUnconfirmed,
    /// The outcome is unknown.
    Unconfirmed,
}

impl ErrorCode {
    /// The code's name, as it travels.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::Invalid => "invalid",
            ErrorCode::NotFound => "not-found",
            ErrorCode::Exists => "exists",
            ErrorCode::Replaced => "replaced",
            ErrorCode::Failed => "failed",
            ErrorCode::NoVirtualisation => "no-virtualisation",
            ErrorCode::CommandUnconfirmed => "command-unconfirmed",
            ErrorCode::Unconfirmed => "unconfirmed",
        }
    }
}

/// Why a message could not be read.
#[derive(Debug)]
pub enum DecodeError {
    /// Larger than the bound.
    TooLarge,
    /// Not one JSON value of the protocol's shape.
    Malformed,
    /// Another protocol version.
    Version,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DecodeError::TooLarge => "the message exceeds its bound",
            DecodeError::Malformed => "the message is not one value of the protocol",
            DecodeError::Version => "the message speaks another protocol version",
        })
    }
}

impl std::error::Error for DecodeError {}

/// Reads a request (the helper's side).
pub fn decode_request(bytes: &[u8]) -> Result<Request, DecodeError> {
    let request: Request = decode(bytes, MAX_REQUEST_BYTES)?;
    (request.version == VERSION)
        .then_some(request)
        .ok_or(DecodeError::Version)
}

/// Reads a response (the host's side).
pub fn decode_response(bytes: &[u8]) -> Result<Response, DecodeError> {
    let response: Response = decode(bytes, MAX_RESPONSE_BYTES)?;
    (response.version == VERSION)
        .then_some(response)
        .ok_or(DecodeError::Version)
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8], bound: usize) -> Result<T, DecodeError> {
    if bytes.len() > bound {
        return Err(DecodeError::TooLarge);
    }
    // One value, whitespace around it at most: trailing data is refused.
    let mut values = serde_json::Deserializer::from_slice(bytes).into_iter::<T>();
    let value = values
        .next()
        .ok_or(DecodeError::Malformed)?
        .map_err(|_| DecodeError::Malformed)?;
    if values.next().is_some() {
        return Err(DecodeError::Malformed);
    }
    Ok(value)
}

/// Writes a message as one JSON line.
pub fn encode<T: Serialize>(message: &T) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(message).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(operation: Operation) -> Request {
        Request {
            version: VERSION,
            runtime: Runtime {
                home: "/var/lib/oac/msb".into(),
                msb: "/opt/msb/bin/msb".into(),
                libkrunfw: "/opt/msb/lib/libkrunfw.so".into(),
            },
            deadline_unix_ms: 1_800_000_000_000,
            operation,
        }
    }

    #[test]
    fn a_request_survives_the_wire() {
        let sent = request(Operation::Get {
            name: "oac-0123-g0".into(),
        });
        let text = encode(&sent);
        assert!(String::from_utf8_lossy(&text).contains(r#""op":"get""#));
        assert_eq!(decode_request(&text).expect("decodes"), sent);
    }

    #[test]
    fn unknown_fields_trailing_values_and_other_versions_are_refused() {
        let text = String::from_utf8(encode(&request(Operation::Probe))).expect("utf-8");
        let extra = text.replacen('{', r#"{"extra":1,"#, 1);
        assert!(matches!(
            decode_request(extra.as_bytes()),
            Err(DecodeError::Malformed)
        ));
        let twice = format!("{text}{text}");
        assert!(matches!(
            decode_request(twice.as_bytes()),
            Err(DecodeError::Malformed)
        ));
        let other = text.replacen(r#""version":1"#, r#""version":2"#, 1);
        assert!(matches!(
            decode_request(other.as_bytes()),
            Err(DecodeError::Version)
        ));
        let huge = vec![b' '; MAX_RESPONSE_BYTES + 1];
        assert!(matches!(decode_response(&huge), Err(DecodeError::TooLarge)));
    }

    #[test]
    fn an_error_outcome_carries_only_its_code() {
        let response = Response {
            version: VERSION,
            outcome: Outcome::Error {
                code: ErrorCode::Replaced,
            },
        };
        let text = encode(&response);
        assert_eq!(
            String::from_utf8_lossy(&text),
            "{\"version\":1,\"outcome\":{\"kind\":\"error\",\"code\":\"replaced\"}}\n"
        );
        assert_eq!(decode_response(&text).expect("decodes"), response);
    }
}
