//! The HTTP tier's profile: what a vendor tells the suite about its
//! component and its fake, as a JSON file. The suite needs no other
//! knowledge of a vendor's wire format: every clause matches the request
//! *classes* the profile assigns by method and path pattern.
//!
//! ```json
//! {
//!   "fake": {"command": ["./fake-api"]},
//!   "configuration": {"api_url": "${FIXTURE_ORIGIN}"},
//!   "credential_file": "credential.json",
//!   "receipts": true,
//!   "native_error_marker": "example-native-error",
//!   "requests": [
//!     {"method": "POST", "path": "/v1/boxes", "class": "create"},
//!     {"method": "POST", "path": "/v1/boxes/*/exec", "class": "exec"}
//!   ]
//! }
//! ```

use oac_fixtures::control::Announcement;
use sandbox_host::registry::EndpointGrant;
use sandbox_host::testing::NativeRequest;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// What a native request does, for the clauses: they compare, count and
/// fault requests by class, never by a vendor's request names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Reads vendor state only.
    Read,
    /// Makes compute (or a resource that holds an allocation's state).
    Create,
    /// Changes existing state otherwise (renew, start, upload).
    Mutation,
    /// Deletes something (Kill's cleanup).
    Removal,
    /// Starts a command (bootstrap or RunCommand); when its answer carries
    /// the command's end, it is also its completion.
    Exec,
    /// Feeds a started command (stdin, closing stdin).
    ExecInput,
    /// Reads a started command's completion (exit code, output).
    ExecResult,
}

impl Class {
    /// True for requests that change vendor state.
    pub fn is_mutation(self) -> bool {
        matches!(
            self,
            Class::Create | Class::Mutation | Class::Removal | Class::Exec | Class::ExecInput
        )
    }
}

/// One rule: requests of `method` whose path matches `path` are `class`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// `GET`, `POST`, `PUT`, `PATCH`, `DELETE`, or `*` for any.
    pub method: String,
    /// A path pattern: `/` separated segments, where `*` (or `{name}`)
    /// matches one segment and a last `**` matches any rest.
    pub path: String,
    /// The class of matching requests.
    pub class: Class,
}

impl Rule {
    fn matches(&self, method: &str, path: &str) -> bool {
        (self.method == "*" || self.method.eq_ignore_ascii_case(method))
            && path_matches(&self.path, path)
    }
}

/// Whether `path` matches `pattern` (see [`Rule::path`]).
pub fn path_matches(pattern: &str, path: &str) -> bool {
    let mut wanted = pattern.trim_start_matches('/').split('/');
    let mut given = path.trim_start_matches('/').split('/');
    loop {
        match (wanted.next(), given.next()) {
            (Some("**"), _) => return wanted.next().is_none(),
            (None, None) => return true,
            (Some(want), Some(have)) => {
                let any = want == "*" || (want.starts_with('{') && want.ends_with('}'));
                if !(any && !have.is_empty() || want == have) {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

/// How the clauses classify requests: by Docker action, or by a vendor's
/// rules (the first match wins; otherwise `GET` reads, `DELETE` removes,
/// any other method mutates). Receipts are the host's own store: a `get`
/// reads, a `put` or `delete` mutates.
#[derive(Clone, Debug, Default)]
pub struct Classifier {
    rules: Vec<Rule>,
}

impl Classifier {
    /// Classifies HTTP requests by `rules`.
    pub fn new(rules: Vec<Rule>) -> Self {
        Self { rules }
    }

    /// The class of `request`.
    pub fn class(&self, request: &NativeRequest) -> Class {
        let action = request.action;
        match action.capability() {
            "docker" => match action.name() {
                "container-create" | "volume-create" => Class::Create,
                "exec-create" | "exec-start" => Class::Exec,
                "exec-inspect" => Class::ExecResult,
                _ if action.is_removal() => Class::Removal,
                _ if action.is_read() => Class::Read,
                _ => Class::Mutation,
            },
            "microsandbox" => match action.name() {
                "vm-create" | "vm-capture" | "vm-restore" => Class::Create,
                "vm-exec" => Class::Exec,
                _ if action.is_removal() => Class::Removal,
                _ if action.is_read() => Class::Read,
                _ => Class::Mutation,
            },
            "http" => {
                let method = action.name().trim_start_matches("http-");
                let path = request.target.split('?').next().unwrap_or_default();
                match self.rules.iter().find(|rule| rule.matches(method, path)) {
                    Some(rule) => rule.class,
                    None if action.is_read() => Class::Read,
                    None if action.is_removal() => Class::Removal,
                    None => Class::Mutation,
                }
            }
            _ if action.is_read() => Class::Read,
            _ => Class::Mutation,
        }
    }

    /// True for requests to the vendor (not the host's receipts).
    pub fn is_vendor(request: &NativeRequest) -> bool {
        request.action.capability() != "receipts"
    }
}

/// Where the vendor's fake comes from.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum FakeSource {
    /// A command that starts the fake and prints its [`Announcement`] as
    /// its first stdout line; it is stopped (stdin closed, then killed)
    /// when the run ends. A relative program path is relative to the
    /// profile's directory; a bare name is looked up beside the suite's
    /// own binary, then on `PATH`.
    Command {
        /// Program and arguments.
        command: Vec<String>,
    },
    /// A fake already running, as its announcement.
    Running(Announcement),
}

/// The HTTP tier's profile (see the module's example).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpProfile {
    /// `direct` (default) or `nodes`.
    #[serde(default = "direct")]
    pub mode: String,
    /// The vendor's fake.
    pub fake: FakeSource,
    /// The component's configuration; `${FIXTURE_ORIGIN}` in any string
    /// becomes the fake's origin.
    #[serde(default = "empty_object")]
    pub configuration: serde_json::Value,
    /// A JSON object file: the kind's credential (its keys are the
    /// credential's fields), relative to the profile's directory.
    #[serde(default)]
    pub credential_file: Option<PathBuf>,
    /// The credential read from `credential_file`.
    #[serde(skip)]
    pub credential: Option<serde_json::Map<String, serde_json::Value>>,
    /// Grant durable receipts (a fresh state directory per run).
    #[serde(default)]
    pub receipts: bool,
    /// Grant origins from the configuration (an API URL and a sandbox
    /// domain) instead of the fake's one origin.
    #[serde(default)]
    pub endpoint: Option<EndpointGrant>,
    /// Text the fake puts in every error body: none may reach an answer or
    /// a log line.
    pub native_error_marker: String,
    /// The status of a definite refusal (the suite makes the fake refuse a
    /// Create with it): default 429.
    #[serde(default = "too_many_requests")]
    pub refusal_status: u16,
    /// The request classes.
    pub requests: Vec<Rule>,
}

fn direct() -> String {
    "direct".into()
}

fn empty_object() -> serde_json::Value {
    serde_json::json!({})
}

fn too_many_requests() -> u16 {
    429
}

/// Why a profile is unusable.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// A file could not be read.
    #[error("cannot read {0}")]
    Read(PathBuf),
    /// The profile is not valid.
    #[error("{path}: {why}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

impl HttpProfile {
    /// Reads a profile, its credential file, and resolves the fake's
    /// program path.
    pub fn load(path: &Path) -> Result<Self, ProfileError> {
        let invalid = |why: String| ProfileError::Invalid {
            path: path.to_path_buf(),
            why,
        };
        let text = std::fs::read_to_string(path).map_err(|_| ProfileError::Read(path.into()))?;
        let mut profile: HttpProfile =
            serde_json::from_str(&text).map_err(|error| invalid(error.to_string()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        if !matches!(profile.mode.as_str(), "direct" | "nodes") {
            return Err(invalid(format!(
                "mode must be direct or nodes, not `{}`",
                profile.mode
            )));
        }
        if !profile.configuration.is_object() {
            return Err(invalid("configuration must be a JSON object".into()));
        }
        if let Some(file) = &profile.credential_file {
            let file = dir.join(file);
            let text =
                std::fs::read_to_string(&file).map_err(|_| ProfileError::Read(file.clone()))?;
            match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(serde_json::Value::Object(credential)) => profile.credential = Some(credential),
                _ => {
                    return Err(invalid(format!("{} is not a JSON object", file.display())));
                }
            }
        }
        if let FakeSource::Command { command } = &mut profile.fake {
            let Some(program) = command.first_mut() else {
                return Err(invalid("fake.command is empty".into()));
            };
            *program = resolve_program(dir, program);
        }
        for rule in &profile.requests {
            if !rule.path.starts_with('/') {
                return Err(invalid(format!(
                    "request path `{}` must start with /",
                    rule.path
                )));
            }
        }
        Ok(profile)
    }
}

/// A relative path against `dir`; a bare name beside this executable when
/// it is there, else as given (looked up on `PATH`).
fn resolve_program(dir: &Path, program: &str) -> String {
    if program.contains('/') {
        return if Path::new(program).is_absolute() {
            program.to_string()
        } else {
            dir.join(program).display().to_string()
        };
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(program)));
    match beside {
        Some(path) if path.is_file() => path.display().to_string(),
        _ => program.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_patterns_match_segments() {
        assert!(path_matches("/sandboxes", "/sandboxes"));
        assert!(path_matches("/sandboxes/*", "/sandboxes/abc"));
        assert!(path_matches(
            "/sandboxes/{id}/timeout",
            "/sandboxes/a/timeout"
        ));
        assert!(!path_matches("/sandboxes/*", "/sandboxes"));
        assert!(!path_matches("/sandboxes/*", "/sandboxes/"));
        assert!(!path_matches("/sandboxes/*", "/sandboxes/a/b"));
        assert!(path_matches("/files/**", "/files/a/b/c"));
        assert!(path_matches("/files/**", "/files"));
        assert!(!path_matches("/sandboxes", "/sandbox"));
    }
}
