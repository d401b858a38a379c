//! The example adapter: the Example Cloud boxes API (defined by its fake,
//! `fixtures/src/example_api.rs`) as a direct kind, written with the SDK's
//! helpers. `docs/writing-an-adapter.md` walks through it. Ownership lives
//! in each box's four `io.oac.*` labels; Create follows the SDK's
//! settlement recipe; a box is bootstrapped by the image's init, run as
//! root with the bootstrap record on stdin.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use oac_provider_sdk::bootstrap;
use oac_provider_sdk::capability::http::{
    CredentialHeader, HttpError, Method, Request, Response, encode_component as encode,
};
use oac_provider_sdk::prelude::*;
use oac_provider_sdk::status::Operation;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

struct Example;

/// The labels ownership lives under (the vendor accepts dotted keys).
const KEYS: LabelKeys = LabelKeys::CONTRACT;
/// The image's init.
const INIT: &str = "/usr/local/bin/oac-init";
/// Runs `"$@"` in directory `$0`.
const IN_DIRECTORY: &str = r#"cd "$0" && exec "$@""#;
/// The lease Create and Renew ask for, seconds.
const LEASE_SECONDS: u32 = 3600;

/// The kind's public configuration.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// The API's origin, e.g. `https://api.example-cloud.dev`.
    api_url: String,
    /// The image boxes start from.
    #[serde(default = "default_image")]
    image: String,
}

fn default_image() -> String {
    "oac-runtime".into()
}

fn settings(public: &str) -> Result<Settings, Error> {
    let settings: Settings = serde_json::from_str(public).map_err(|_| Error::Invalid)?;
    let origin = settings.api_url.split_once("://").map(|(scheme, _)| scheme);
    if !matches!(origin, Some("https" | "http")) || settings.api_url.ends_with('/') {
        return Err(Error::Invalid);
    }
    Ok(settings)
}

/// The configuration adapter: a canonical public object, the API key as
/// the credential, and an endpoint that never changes under a kind.
const CONFIGURATION: JsonConfiguration = JsonConfiguration {
    canonical: |public| {
        let settings = settings(public)?;
        Ok(json!({ "api_url": settings.api_url, "image": settings.image }).to_string())
    },
    credential_fields: &["api_key"],
    may_change: |before, after| {
        settings(before).map(|s| s.api_url).ok() == settings(after).map(|s| s.api_url).ok()
    },
};

/// A box as the API shows it.
#[derive(Deserialize)]
struct Found {
    id: String,
    state: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

/// `None` when the vendor's answer proves nothing.
type Outcome<T> = Result<Option<T>, Error>;

/// A command's end as the API answers it.
#[derive(Deserialize)]
struct Ran {
    exit_code: i32,
    stdout: String,
    stderr: String,
}

/// The API at the configured origin, with the key the host fills in.
type Api = Settings;

impl Api {
    fn new() -> Result<Self, Error> {
        settings(&context::configuration())
    }

    /// A request to `path`, with the key the host fills in.
    fn request(&self, method: Method, path: &str) -> Request {
        let key = CredentialHeader::new("authorization")
            .prefix("Bearer ")
            .field("api_key");
        Request::new(method, format!("{}{path}", self.api_url)).with_credential(key)
    }

    fn send(&self, method: Method, path: &str, body: Option<Value>) -> Result<Response, HttpError> {
        let request = self.request(method, path);
        http::send(&match body {
            Some(body) => request.json(&body),
            None => request,
        })
    }

    /// A GET; without an answer, what it would show is unknown.
    fn read(&self, path: &str) -> Result<Response, Error> {
        self.send(Method::Get, path, None)
            .map_err(|_| Error::ComputeUnconfirmed)
    }

    /// One box by id: `None` when the API says it is gone.
    fn get(&self, id: &str) -> Result<Option<Found>, Error> {
        let response = self.read(&format!("/v1/boxes/{id}"))?;
        match Status::of(response.status) {
            Status::Success => parse(&response).map(Some),
            Status::Absent => Ok(None),
            _ => Err(Error::ComputeUnconfirmed),
        }
    }

    /// The boxes labelled for `owner`; all of them must carry its labels.
    fn labelled(&self, owner: &Ownership) -> Result<Vec<Found>, Error> {
        let label = |(key, value): (&String, &String)| {
            format!("label={}", encode(&format!("{key}:{value}")))
        };
        let query: Vec<String> = owner.labels(KEYS).iter().map(label).collect();
        let response = self.read(&format!("/v1/boxes?{}", query.join("&")))?;
        if Status::of(response.status) != Status::Success {
            return Err(Error::ComputeUnconfirmed);
        }
        #[derive(Deserialize)]
        struct Listed {
            boxes: Vec<Found>,
        }
        let listed: Listed = response.parse().ok_or(Error::ComputeUnconfirmed)?;
        if listed.boxes.iter().any(|found| !owns(owner, found)) {
            return Err(Error::Ownership);
        }
        Ok(listed.boxes)
    }

    /// Runs `argv` as `user` to its end (`None`: the answer proves nothing).
    /// Stdin goes in the one request, base64-encoded as it is sent.
    fn exec(&self, id: &str, user: &str, argv: &[String], stdin: Vec<u8>) -> Outcome<Ran> {
        let timeout_ms = context::remaining_budget_ms().saturating_sub(500);
        let fields = json!({ "argv": argv, "user": user, "timeout_ms": timeout_ms });
        let Value::Object(fields) = fields else {
            return Ok(None);
        };
        let request = self.request(Method::Post, &format!("/v1/boxes/{id}/exec"));
        let response = match http::send(&request.json_with_base64(fields, "stdin", stdin)) {
            Ok(response) => response,
            Err(_) => return Ok(None),
        };
        match Status::of(response.status) {
            Status::Success => Ok(response.parse()),
            Status::Unknown => Ok(None),
            status => Err(status
                .error(Operation::RunCommand)
                .unwrap_or(Error::Invalid)),
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(response: &Response) -> Result<T, Error> {
    response.parse().ok_or(Error::ComputeUnconfirmed)
}

fn owns(owner: &Ownership, found: &Found) -> bool {
    owner.owns(KEYS, |key| found.labels.get(key).map(String::as_str))
}

fn state_of(found: &Found) -> LifecycleState {
    match found.state.as_str() {
        "running" => LifecycleState::Running,
        "stopped" => LifecycleState::Stopped,
        _ => LifecycleState::Pending,
    }
}

fn info(reference: Reference, found: &Found, bootstrapped: bool, settled: bool) -> Info {
    Info {
        reference,
        provider_id: Some(found.id.clone()),
        state: state_of(found),
        bootstrap_complete: bootstrapped,
        create_settled: settled,
    }
}

/// True when the init's ready record names this allocation.
fn bootstrapped(api: &Api, owner: &Ownership, found: &Found) -> Result<bool, Error> {
    if state_of(found) != LifecycleState::Running {
        return Ok(false);
    }
    let path = format!(
        "/v1/boxes/{}/files?path={}",
        found.id,
        encode(bootstrap::READY_RECORD)
    );
    let response = api.read(&path)?;
    match Status::of(response.status) {
        Status::Success if bootstrap::is_ready_record(&response.body, owner) => Ok(true),
        Status::Success => Err(Error::Ownership),
        Status::Absent => Ok(false),
        _ => Err(Error::ComputeUnconfirmed),
    }
}

/// The allocation's box: by the id an attempt recorded, else by labels.
enum Located {
    Nothing,
    One(Found),
    Several,
}

impl Located {
    /// The one box an operation on existing compute needs.
    fn one(self) -> Result<Found, Error> {
        match self {
            Located::One(found) => Ok(found),
            Located::Nothing => Err(Error::NotFound),
            Located::Several => Err(Error::ComputeUnconfirmed),
        }
    }
}

fn locate(api: &Api, owner: &Ownership, prior: &Prior) -> Result<Located, Error> {
    if let Some(id) = prior.resource_id() {
        return match api.get(&id)? {
            Some(found) if owns(owner, &found) => Ok(Located::One(found)),
            Some(_) => Err(Error::Ownership),
            None => Ok(Located::Nothing),
        };
    }
    let mut labelled = api.labelled(owner)?;
    match labelled.len() {
        0 => Ok(Located::Nothing),
        1 => Ok(Located::One(labelled.remove(0))),
        _ => Ok(Located::Several),
    }
}

mod mutant;
#[cfg(test)]
mod tests;

impl Sandbox for Example {
    fn create(request: Bootstrap) -> Result<Info, Failure> {
        mutant::leak_credential(&request);
        let reference = request.reference.clone();
        let internet = match request.network_access {
            // The vendor cannot filter egress by name.
            NetworkAccess::Restricted => return Err(Error::Invalid.into()),
            access => access == NetworkAccess::Enabled,
        };
        let api = Api::new()?;
        let owner = Ownership::of(&reference);
        // An earlier attempt decides first: never a second box.
        let prior = settlement::prior()?;
        if prior != Prior::Fresh {
            match locate(&api, &owner, &prior)? {
                Located::One(found) => {
                    let info = info(reference, &found, false, false);
                    return Err(Failure::with(Error::Exists, info));
                }
                Located::Several => return Err(Error::ComputeUnconfirmed.into()),
                Located::Nothing => {}
            }
        }
        let labels = owner.labels(KEYS);
        let identity = serde_json::to_vec(&labels).unwrap_or_default();
        let attempt = settlement::begin(&reference, &identity, &prior, true)?;
        let body = json!({
            "image": api.image,
            "labels": labels,
            "ttl_seconds": LEASE_SECONDS,
            "internet": internet,
        });
        let response = match mutant::create(&api, body) {
            Ok(response) => response,
            Err(HttpError::Denied | HttpError::Unavailable) => return Err(attempt.not_sent()),
            Err(_) => return Err(Error::ComputeUnconfirmed.into()),
        };
        let found: Found = match Status::of(response.status) {
            Status::Success => parse(&response)?,
            Status::Unknown => return Err(Error::ComputeUnconfirmed.into()),
            status => {
                let error = status.error(Operation::Create).unwrap_or(Error::Invalid);
                return Err(attempt.refused(error));
            }
        };
        if !owns(&owner, &found) {
            return Err(Error::Ownership.into());
        }
        attempt.made(found.id.as_bytes())?;
        let argv = [vec![INIT.to_string()], owner.values().to_vec()].concat();
        match api.exec(&found.id, "root", &argv, bootstrap::record(&request)) {
            Ok(Some(ran)) if ran.exit_code == 0 => {}
            // The init ran and refused: a definite end (Kill removes the box).
            Ok(Some(_)) => {
                let info = info(reference, &found, false, true);
                return Err(attempt.ended(Ended::BootstrapFailed, Error::RuntimeNotRunning, info));
            }
            Ok(None) | Err(_) => return Err(Error::ComputeUnconfirmed.into()),
        }
        attempt.running(info(reference, &found, true, true))
    }

    fn get_info(reference: Reference) -> Result<Info, Error> {
        let prior = settlement::prior()?;
        // A refused Create proves absence without asking the vendor.
        if prior.refused() {
            return Ok(Info::absent(reference, true));
        }
        let api = Api::new()?;
        let owner = Ownership::of(&reference);
        let settled = prior.answered_settled();
        match locate(&api, &owner, &prior)? {
            Located::One(found) => {
                let bootstrapped = bootstrapped(&api, &owner, &found)?;
                Ok(info(reference, &found, bootstrapped, settled))
            }
            Located::Several => Err(Error::ComputeUnconfirmed),
            Located::Nothing if settled => Ok(Info::absent(reference, true)),
            Located::Nothing => Err(Error::NotFound),
        }
    }

    fn renew(reference: Reference) -> Result<Info, Failure> {
        let api = Api::new()?;
        let owner = Ownership::of(&reference);
        let prior = settlement::prior()?;
        let settled = prior.answered_settled();
        let found = locate(&api, &owner, &prior)?.one()?;
        let lease = Some(json!({ "ttl_seconds": LEASE_SECONDS }));
        let path = format!("/v1/boxes/{}/ttl", found.id);
        let response = api
            .send(Method::Post, &path, lease)
            .map_err(|_| Error::ComputeUnconfirmed)?;
        if let Some(error) = Status::of(response.status).error(Operation::Renew) {
            return Err(error.into());
        }
        let renewed: Found = parse(&response)?;
        if renewed.id != found.id || !owns(&owner, &renewed) {
            return Err(Error::Ownership.into());
        }
        let bootstrapped = bootstrapped(&api, &owner, &renewed)?;
        Ok(info(reference, &renewed, bootstrapped, settled))
    }

    fn kill(reference: Reference) -> Result<Info, Failure> {
        let api = Api::new()?;
        let owner = Ownership::of(&reference);
        let prior = settlement::prior()?;
        let settled = prior.answered_settled();
        let labelled = api.labelled(&owner)?.into_iter().map(|found| found.id);
        let ids: BTreeSet<String> = prior.resource_id().into_iter().chain(labelled).collect();
        if ids.is_empty() && (prior == Prior::Fresh || mutant::KILL_WITHOUT_PROOF) {
            // Nothing known to remove and nothing says an attempt ended:
            // Kill answers only on terminal proof.
            return mutant::without_proof(reference);
        }
        for id in &ids {
            // Every id is checked again right before it is deleted.
            match api.get(id)? {
                Some(found) if !owns(&owner, &found) && !mutant::DELETE_FOREIGN => {
                    return Err(Error::Ownership.into());
                }
                _ => {}
            }
            let response = mutant::delete(&api, id).map_err(|_| Error::ComputeUnconfirmed)?;
            let gone = matches!(
                Status::of(response.status),
                Status::Success | Status::Absent
            );
            if !gone {
                return Err(Error::ComputeUnconfirmed.into());
            }
        }
        // Terminal proof: nothing labelled is left and no id answers.
        if !api.labelled(&owner)?.is_empty() {
            return Err(Error::ComputeUnconfirmed.into());
        }
        for id in &ids {
            if api.get(id)?.is_some() {
                return Err(Error::ComputeUnconfirmed.into());
            }
        }
        Ok(Info::absent(reference, settled))
    }

    fn run_command(reference: Reference, request: Command) -> Result<CommandResult, Error> {
        let api = Api::new()?;
        let owner = Ownership::of(&reference);
        let prior = settlement::prior()?;
        let found = locate(&api, &owner, &prior)?.one()?;
        if state_of(&found) != LifecycleState::Running || !bootstrapped(&api, &owner, &found)? {
            return Err(Error::RuntimeNotRunning);
        }
        let mut argv = request.args;
        if let Some(directory) = request.directory {
            // The API has no working directory: a shell changes to it.
            let shell = ["sh".into(), "-c".into(), IN_DIRECTORY.into(), directory];
            argv.splice(0..0, shell);
        }
        let stdin = request.stdin.unwrap_or_default();
        let ran = match api.exec(&found.id, "runtime", &argv, stdin) {
            Ok(Some(ran)) => ran,
            Ok(None) => return Err(Error::CommandUnconfirmed),
            Err(Error::ComputeUnconfirmed) => return Err(Error::CommandUnconfirmed),
            Err(error) => return Err(error),
        };
        let decode = |text: &str| STANDARD.decode(text).map_err(|_| Error::CommandUnconfirmed);
        CommandResult::bounded(ran.exit_code, decode(&ran.stdout)?, decode(&ran.stderr)?)
    }
}

impl Readiness for Example {
    fn probe() -> Vec<Diagnostic> {
        // Reachable with the key: a box that cannot exist is not found.
        match Api::new().and_then(|api| api.get("probe")) {
            Ok(None) => Vec::new(),
            _ => vec![Diagnostic::ProviderUnavailable],
        }
    }
}

impl JsonConfigured for Example {
    const CONFIGURATION: JsonConfiguration = CONFIGURATION;
}

export_provider!(Example {
    requirements: { credential: Required, public_origin: NotRequired },
    checkpoint: "example_cloud_has_no_snapshots",
    observe: "example_cloud_has_no_metrics",
    observe_batch: "example_cloud_has_no_metrics",
    discover_selection: "example_cloud_has_one_image",
    verify_credential: "example_cloud_has_no_key_check",
    configuration: supported,
    with_credential: supported,
    discover_configuration: "example_cloud_has_no_catalog",
});
