//! Running the helper: one process per native call, the request on its
//! stdin, its answer read from its stdout (bounded), in an environment of
//! the host's making (nothing of the node's own environment but `PATH`,
//! `LANG` and the temporary directory). A helper is never killed: when the
//! caller's deadline passes the call answers `unconfirmed`, and the helper
//! goes on in a task of its own, counted in an [`InFlight`] (the call's:
//! its allocation's turn is held until it exits), until it exits.

pub use crate::capability::boundary::InFlight;
use oac_helper_protocol::{
    MAX_RESPONSE_BYTES, Operation, Outcome, Request, Runtime, VERSION, decode_response, encode,
};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The environment the node passes on to the helper, when set.
const PASSED_ON: [&str; 3] = ["PATH", "LANG", "TMPDIR"];

/// How a helper call ended without an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HelperFailure {
    /// The helper could not be started: nothing was done.
    NotStarted,
    /// The deadline passed, the helper crashed, or its answer was not one
    /// of the protocol: what it did is unknown.
    Unconfirmed,
}

/// The helper of one node: its executable and the runtime it drives.
#[derive(Clone, Debug)]
pub struct Helper {
    executable: PathBuf,
    runtime: Runtime,
}

impl Helper {
    /// The helper `executable`, driving `runtime`.
    pub fn new(executable: PathBuf, runtime: Runtime) -> Self {
        Self {
            executable,
            runtime,
        }
    }

    /// The runtime it drives.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Runs `operation` in a new helper process and waits for its answer
    /// until `deadline`. The process is counted in `helpers` until it
    /// exits, which it does in its own time: it is never killed.
    pub async fn call(
        &self,
        operation: Operation,
        deadline: Instant,
        helpers: &InFlight,
    ) -> Result<Outcome, HelperFailure> {
        let request = encode(&Request {
            version: VERSION,
            runtime: self.runtime.clone(),
            deadline_unix_ms: unix_ms(deadline),
            operation,
        });
        let mut command = tokio::process::Command::new(&self.executable);
        command
            .env_clear()
            .envs(
                PASSED_ON
                    .iter()
                    .filter_map(|key| std::env::var_os(key).map(|value| (*key, value))),
            )
            .env("MSB_HOME", &self.runtime.home)
            .env("MSB_PATH", &self.runtime.msb)
            .env("MSB_LIBKRUNFW_PATH", &self.runtime.libkrunfw)
            .env("MSB_BACKEND", "local")
            .env("RUST_LOG", "off")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(false);
        let mut child = command.spawn().map_err(|_| HelperFailure::NotStarted)?;
        let counted = helpers.enter();
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let exchange = async move {
            let (Some(mut stdin), Some(stdout)) = (stdin, stdout) else {
                return Err(HelperFailure::Unconfirmed);
            };
            // Read while writing (a helper may answer before it has read
            // everything), and stop reading shortly after it exits: a
            // process it started (a VM's) may hold its stdout open.
            let reading = tokio::spawn(read_bounded(stdout));
            let written = stdin.write_all(&request).await.is_ok();
            drop(stdin);
            let exited = child.wait().await;
            drop(counted);
            let (answer, read) =
                match tokio::time::timeout(std::time::Duration::from_secs(1), reading).await {
                    Ok(Ok(read)) => read,
                    _ => (Vec::new(), false),
                };
            match exited {
                Ok(status) if status.success() && written && read => decode_response(&answer)
                    .map(|response| response.outcome)
                    .map_err(|_| HelperFailure::Unconfirmed),
                _ => Err(HelperFailure::Unconfirmed),
            }
        };
        // The exchange goes on in a task of its own, so it ends (and the
        // helper is reaped and uncounted) whether or not anyone waits.
        let exchange = tokio::spawn(exchange);
        match tokio::time::timeout_at(deadline.into(), exchange).await {
            Ok(Ok(answer)) => answer,
            _ => Err(HelperFailure::Unconfirmed),
        }
    }
}

/// Reads `stdout` to its end, keeping at most one byte more than the
/// largest answer (the rest is drained, so the helper never blocks on a
/// full pipe); whether it was read without error.
async fn read_bounded(mut stdout: tokio::process::ChildStdout) -> (Vec<u8>, bool) {
    let mut answer = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match stdout.read(&mut chunk).await {
            Ok(0) => return (answer, true),
            Ok(read) => {
                let room = (MAX_RESPONSE_BYTES + 1).saturating_sub(answer.len());
                answer.extend_from_slice(&chunk[..read.min(room)]);
            }
            Err(_) => return (answer, false),
        }
    }
}

/// `deadline` as Unix milliseconds.
fn unix_ms(deadline: Instant) -> u64 {
    let now_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let left = deadline.saturating_duration_since(Instant::now());
    u64::try_from((now_unix + left).as_millis()).unwrap_or(u64::MAX)
}
