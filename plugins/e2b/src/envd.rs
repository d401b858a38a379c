//! envd, the agent inside each sandbox, at `https://49983-<id>.<domain>`:
//! its process service over the Connect protocol (JSON codec) and its file
//! reads. A command is one server-streamed `Start` whose response stays
//! open while its stdin goes in with `SendInput` and `CloseStdin`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use oac_provider_sdk::capability::http::{self, HttpError, Method, Request, Streaming};
use serde_json::{Value, json};

/// envd's port, part of every sandbox host name.
pub const PORT: u16 = 49983;
/// Most stdin bytes per `SendInput`.
pub const STDIN_CHUNK: usize = 64 * 1024;
/// Most bytes kept per output stream: more is an unknown command outcome.
pub const MAX_OUTPUT: usize = 1024 * 1024;

/// One sandbox's envd.
pub struct Envd {
    base: String,
    sandbox_id: String,
    token: Option<String>,
}

/// What a command gave.
#[derive(Debug, PartialEq, Eq)]
pub struct Ran {
    /// Its stdout.
    pub stdout: Vec<u8>,
    /// Its stderr.
    pub stderr: Vec<u8>,
    /// Its exit code (-1 when a signal ended it).
    pub exit_code: i32,
}

/// Why a command has no result.
#[derive(Debug, PartialEq, Eq)]
pub enum RunError {
    /// Nothing ran: the request was never sent.
    NotStarted,
    /// envd answered that it refused the command before starting a
    /// process (an unknown user, a missing directory): nothing ran.
    Refused,
    /// It may have run, in part or whole: the outcome is unknown.
    Unknown,
}

/// A Connect envelope: flags, then the big-endian length, then the message.
fn envelope(message: &Value) -> Vec<u8> {
    let payload = message.to_string().into_bytes();
    let mut framed = Vec::with_capacity(payload.len() + 5);
    framed.push(0);
    framed.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    framed.extend_from_slice(&payload);
    framed
}

/// Reads the envelopes of a streamed response as they arrive.
struct Envelopes {
    streaming: Streaming,
    buffered: Vec<u8>,
    /// A message has arrived (the `start` event comes first).
    started: bool,
}

/// Connect codes envd ends a `Start` with when it refused before starting
/// a process (its checks of the user, the directory and the deadline).
const REFUSED_BEFORE_START: [&str; 3] =
    ["invalid_argument", "unauthenticated", "permission_denied"];

impl Envelopes {
    /// The next message, `None` at the end-of-stream envelope (an error in
    /// it, or the body ending without one, is an error).
    fn next(&mut self) -> Result<Option<Value>, RunError> {
        loop {
            if self.buffered.len() >= 5 {
                let length = u32::from_be_bytes([
                    self.buffered[1],
                    self.buffered[2],
                    self.buffered[3],
                    self.buffered[4],
                ]) as usize;
                if length > 4 * MAX_OUTPUT {
                    return Err(RunError::Unknown);
                }
                if self.buffered.len() >= 5 + length {
                    let flags = self.buffered[0];
                    let message: Vec<u8> = self.buffered.drain(..5 + length).skip(5).collect();
                    let value: Value =
                        serde_json::from_slice(&message).map_err(|_| RunError::Unknown)?;
                    if flags & 0x02 != 0 {
                        // An error before any message: envd refused (HTTP
                        // 200, Connect streaming); after one, unknown.
                        let code = value["error"]["code"].as_str();
                        return match value.get("error") {
                            None => Ok(None),
                            Some(_)
                                if !self.started
                                    && code.is_some_and(|code| {
                                        REFUSED_BEFORE_START.contains(&code)
                                    }) =>
                            {
                                Err(RunError::Refused)
                            }
                            Some(_) => Err(RunError::Unknown),
                        };
                    }
                    self.started = true;
                    return Ok(Some(value));
                }
            }
            match self.streaming.read() {
                Ok(Some(bytes)) => self.buffered.extend_from_slice(&bytes),
                Ok(None) | Err(_) => return Err(RunError::Unknown),
            }
        }
    }
}

impl Envd {
    /// The envd of sandbox `sandbox_id` under `domain`.
    pub fn new(sandbox_id: &str, domain: &str, token: Option<String>) -> Self {
        Envd {
            base: format!("https://{PORT}-{sandbox_id}.{domain}"),
            sandbox_id: sandbox_id.to_string(),
            token,
        }
    }

    fn request(&self, method: Method, path: &str, user: &str) -> Request {
        let mut request = Request::new(method, format!("{}{path}", self.base));
        let basic = STANDARD.encode(format!("{user}:"));
        request.headers = vec![
            ("e2b-sandbox-id".into(), self.sandbox_id.clone()),
            ("e2b-sandbox-port".into(), PORT.to_string()),
            ("authorization".into(), format!("Basic {basic}")),
        ];
        if let Some(token) = &self.token {
            request
                .headers
                .push(("x-access-token".into(), token.clone()));
        }
        request
    }

    fn unary(
        &self,
        method: &str,
        user: &str,
        message: Value,
        timeout_ms: u32,
    ) -> Result<(), RunError> {
        let mut request = self.request(Method::Post, &format!("/process.Process/{method}"), user);
        request.headers.extend([
            ("content-type".into(), "application/json".into()),
            ("connect-protocol-version".into(), "1".into()),
            ("connect-timeout-ms".into(), timeout_ms.to_string()),
        ]);
        request.body = message.to_string().into();
        match http::send(&request) {
            Ok(response) if response.status == 200 => Ok(()),
            _ => Err(RunError::Unknown),
        }
    }

    /// Runs `args` as `user` with `stdin` (then closed), within
    /// `timeout_ms`; never resent.
    pub fn run(
        &self,
        user: &str,
        args: &[String],
        directory: Option<&str>,
        stdin: Option<&[u8]>,
        timeout_ms: u32,
    ) -> Result<Ran, RunError> {
        let (program, rest) = args.split_first().ok_or(RunError::NotStarted)?;
        let mut process = json!({"cmd": program, "args": rest, "envs": {}});
        if let Some(directory) = directory {
            process["cwd"] = json!(directory);
        }
        let mut request = self.request(Method::Post, "/process.Process/Start", user);
        request.headers.extend([
            ("content-type".into(), "application/connect+json".into()),
            ("connect-protocol-version".into(), "1".into()),
            ("connect-timeout-ms".into(), timeout_ms.to_string()),
            ("keepalive-ping-interval".into(), "50".into()),
        ]);
        request.body = envelope(&json!({"process": process, "stdin": stdin.is_some()})).into();
        let streaming = match http::open(&request) {
            Ok(streaming) if streaming.status() == 200 => streaming,
            Ok(_) | Err(HttpError::Denied | HttpError::Unavailable) => {
                return Err(RunError::NotStarted);
            }
            Err(_) => return Err(RunError::Unknown),
        };
        let mut events = Envelopes {
            streaming,
            buffered: Vec::new(),
            started: false,
        };
        let started = events.next()?.ok_or(RunError::Unknown)?;
        let pid = started["event"]["start"]["pid"]
            .as_u64()
            .ok_or(RunError::Unknown)?;
        if let Some(stdin) = stdin {
            let selector = json!({"pid": pid});
            for chunk in stdin.chunks(STDIN_CHUNK) {
                let input =
                    json!({"process": selector, "input": {"stdin": STANDARD.encode(chunk)}});
                self.unary("SendInput", user, input, timeout_ms)?;
            }
            self.unary("CloseStdin", user, json!({"process": selector}), timeout_ms)?;
        }
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        while let Some(message) = events.next()? {
            let event = &message["event"];
            if let Some(data) = event.get("data") {
                let decode = |key: &str| {
                    data.get(key)
                        .and_then(Value::as_str)
                        .map(|text| STANDARD.decode(text))
                };
                if let Some(bytes) = decode("stdout") {
                    stdout.extend(bytes.map_err(|_| RunError::Unknown)?);
                }
                if let Some(bytes) = decode("stderr") {
                    stderr.extend(bytes.map_err(|_| RunError::Unknown)?);
                }
                if stdout.len() > MAX_OUTPUT || stderr.len() > MAX_OUTPUT {
                    return Err(RunError::Unknown);
                }
            } else if let Some(end) = event.get("end") {
                // Zero values are omitted in Connect's JSON: no exit code
                // is 0; a process that did not exit was ended by a signal.
                let exited = end.get("exited").and_then(Value::as_bool).unwrap_or(false);
                let code = end.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
                let exit_code = if exited {
                    i32::try_from(code).map_err(|_| RunError::Unknown)?
                } else {
                    -1
                };
                return Ok(Ran {
                    stdout,
                    stderr,
                    exit_code,
                });
            }
        }
        Err(RunError::Unknown)
    }

    /// The file at `path` as `user` reads it; `None` when it is not there.
    pub fn read_file(&self, path: &str, user: &str) -> Result<Option<Vec<u8>>, RunError> {
        let mut query = String::new();
        for byte in path.bytes() {
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~' | b'/') {
                query.push(byte as char);
            } else {
                query.push_str(&format!("%{byte:02X}"));
            }
        }
        let request = self.request(
            Method::Get,
            &format!("/files?path={query}&username={user}"),
            user,
        );
        match http::send(&request) {
            Ok(response) if response.status == 200 => Ok(Some(response.body)),
            Ok(response) if response.status == 404 => Ok(None),
            _ => Err(RunError::Unknown),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_is_flags_length_and_json() {
        let framed = envelope(&json!({"a": 1}));
        assert_eq!(framed[0], 0);
        assert_eq!(&framed[1..5], &7u32.to_be_bytes());
        assert_eq!(&framed[5..], br#"{"a":1}"#);
    }
}
