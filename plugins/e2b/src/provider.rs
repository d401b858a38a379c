//! Every operation of the E2B provider. Ownership lives in each sandbox's
//! metadata (all four `oac_*` keys must match); what an attempt did lives
//! in durable receipts written before the effect they describe:
//!
//! - `create_pending`: an attempt began (written before `POST /sandboxes`);
//! - `sandbox`: the created sandbox's id, domain and envd token;
//! - `create_settled`: the attempt ended (`rejected`, `not_sent`,
//!   `invalid`, `bootstrap_failed` or `running`).
//!
//! Receipts are this adapter's bookkeeping (never replay, find the
//! sandbox, start a new attempt only after one that sent nothing). They are
//! not evidence: GetInfo, Renew and Kill claim `create-settled` only where
//! the Create answered settled itself (every `create_settled` but
//! `not_sent`), which is what the host recorded and checks the claim
//! against. Nothing is ever resent: an unknown outcome stays unknown.

use crate::api::{self, Api, Failed, Sandbox};
use crate::config::Configuration as Settings;
use crate::envd::{Envd, RunError};
use oac_provider_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The provider.
pub struct E2bProvider;

/// The init program of the E2B template (see `template/`).
pub const INIT: &str = "/usr/local/bin/oac-e2b-init";
/// Where the init records the identity it bootstrapped.
pub const READY_RECORD: &str = "/run/oac/ready.json";
/// The user commands run as (uid 1000 in the template).
pub const RUNTIME_USER: &str = "runtime";

const PENDING: &str = "create_pending";
const SANDBOX: &str = "sandbox";
const SETTLED: &str = "create_settled";

/// The sandbox an attempt made, as recorded.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
struct Recorded {
    id: String,
    domain: String,
    token: Option<String>,
}

/// Everything one call needs.
struct Call {
    settings: Settings,
    api: Api,
    installation: String,
}

impl Call {
    fn new() -> Result<Self, Error> {
        let settings = Settings::parse(&context::configuration())?;
        Ok(Call {
            api: Api {
                base: settings.api_url.clone(),
            },
            settings,
            installation: context::installation_id(),
        })
    }

    /// The four ownership pairs of `reference`.
    fn ownership(&self, reference: &Reference) -> BTreeMap<String, String> {
        BTreeMap::from([
            (api::INSTALLATION_KEY.into(), self.installation.clone()),
            (api::TENANT_KEY.into(), reference.tenant_id.clone()),
            (
                api::ENVIRONMENT_KEY.into(),
                reference.environment_id.clone(),
            ),
            (api::ALLOCATION_KEY.into(), reference.allocation_id.clone()),
        ])
    }

    fn owns(&self, sandbox: &Sandbox, reference: &Reference) -> bool {
        self.ownership(reference)
            .iter()
            .all(|(key, value)| sandbox.metadata.get(key) == Some(value))
    }

    /// The sandbox is what this configuration makes: its template, its
    /// resources, under its domain. A sandbox shows its template's id
    /// (and one of its aliases, arbitrarily): a configured alias is
    /// resolved to the id (a read) when the id is not what was configured.
    fn qualifies(&self, sandbox: &Sandbox, domain: &str) -> Result<bool, Error> {
        let resources = self
            .settings
            .cpu_count
            .is_none_or(|cpus| sandbox.cpu_count == cpus)
            && self
                .settings
                .memory_mb
                .is_none_or(|memory| sandbox.memory_mb == memory)
            && oac_provider_sdk::endpoint::is_within(domain, &self.settings.domain);
        let template = &self.settings.selector.template;
        if !resources || sandbox.template_id.eq_ignore_ascii_case(template) {
            return Ok(resources);
        }
        let id = self
            .api
            .template_id(template)
            .map_err(|_| Error::ComputeUnconfirmed)?;
        Ok(sandbox.template_id.eq_ignore_ascii_case(&id))
    }

    /// `<template>:<build UUID>`: what Create asks E2B for, so a rebuilt
    /// template's newer default build is never what an allocation gets.
    fn pinned(&self) -> String {
        let selector = &self.settings.selector;
        format!("{}:{}", selector.template, selector.build)
    }

    /// The running and paused sandboxes labelled for `reference`.
    fn labelled(&self, reference: &Reference) -> Result<Vec<Sandbox>, Error> {
        let ownership = self.ownership(reference);
        let pairs: Vec<(&str, &str)> = ownership
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect();
        let listed = self
            .api
            .list(&pairs)
            .map_err(|_| Error::ComputeUnconfirmed)?;
        // E2B filtered by all four pairs: an entry without them is not
        // this allocation's, and nothing of the answer can be trusted.
        if listed.iter().any(|sandbox| !self.owns(sandbox, reference)) {
            return Err(Error::Ownership);
        }
        Ok(listed)
    }
}

fn receipt(key: &str) -> Result<Option<Vec<u8>>, Error> {
    receipts::get(key).map_err(|_| Error::ComputeUnconfirmed)
}

fn recorded() -> Result<Option<Recorded>, Error> {
    match receipt(SANDBOX)? {
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|_| Error::ComputeUnconfirmed),
        None => Ok(None),
    }
}

fn settled_receipt() -> Result<Option<String>, Error> {
    Ok(receipt(SETTLED)?.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
}

/// Whether the Create answered settled (so the host recorded it): its
/// attempt ended, except one that sent nothing and answered unknown.
fn answered_settled() -> Result<bool, Error> {
    Ok(settled_receipt()?.is_some_and(|settled| settled != "not_sent"))
}

/// Writes a receipt; `false` when it may not be on disk.
fn write(key: &str, value: &[u8]) -> bool {
    receipts::put(key, value).is_ok()
}

fn state_of(sandbox: &Sandbox) -> LifecycleState {
    match sandbox.state.as_str() {
        "running" => LifecycleState::Running,
        "paused" => LifecycleState::Paused,
        _ => LifecycleState::Pending,
    }
}

/// What the init records once it has bootstrapped `reference`.
fn ready_record(installation: &str, reference: &Reference) -> serde_json::Value {
    serde_json::json!({
        "installation": installation,
        "tenant": reference.tenant_id,
        "environment": reference.environment_id,
        "allocation": reference.allocation_id,
    })
}

/// The sandbox the allocation has, found by its recorded id or, with none,
/// by its labels.
enum Located {
    Nothing,
    One(Sandbox, Recorded),
    Several,
}

fn locate(call: &Call, reference: &Reference) -> Result<Located, Error> {
    if let Some(recorded) = recorded()? {
        return match call.api.get(&recorded.id) {
            Ok(Some(sandbox)) if call.owns(&sandbox, reference) => {
                Ok(Located::One(sandbox, recorded))
            }
            Ok(Some(_)) => Err(Error::Ownership),
            Ok(None) => Ok(Located::Nothing),
            Err(_) => Err(Error::ComputeUnconfirmed),
        };
    }
    let labelled = call.labelled(reference)?;
    match labelled.as_slice() {
        [] => Ok(Located::Nothing),
        [one] => {
            // The list shows neither domain nor token: read the detail.
            let sandbox = match call.api.get(&one.sandbox_id) {
                Ok(Some(sandbox)) if call.owns(&sandbox, reference) => sandbox,
                Ok(Some(_)) => return Err(Error::Ownership),
                _ => return Err(Error::ComputeUnconfirmed),
            };
            let recorded = Recorded {
                id: sandbox.sandbox_id.clone(),
                domain: sandbox
                    .domain
                    .clone()
                    .unwrap_or_else(|| call.settings.domain.clone()),
                token: sandbox.envd_access_token.clone(),
            };
            Ok(Located::One(sandbox, recorded))
        }
        _ => Ok(Located::Several),
    }
}

/// True when the init's ready record names exactly this allocation; a
/// read that did not answer is an unknown outcome, not a `false`.
fn bootstrapped(
    call: &Call,
    reference: &Reference,
    sandbox: &Sandbox,
    recorded: &Recorded,
) -> Result<bool, Error> {
    if state_of(sandbox) != LifecycleState::Running {
        return Ok(false);
    }
    let envd = Envd::new(&recorded.id, &recorded.domain, recorded.token.clone());
    match envd.read_file(READY_RECORD, "root") {
        // A record naming anyone else is not this allocation's sandbox.
        Ok(Some(bytes)) => match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(record) if record == ready_record(&call.installation, reference) => Ok(true),
            _ => Err(Error::Ownership),
        },
        Ok(None) => Ok(false),
        Err(_) => Err(Error::ComputeUnconfirmed),
    }
}

fn info_of(
    call: &Call,
    reference: Reference,
    sandbox: &Sandbox,
    recorded: &Recorded,
    settled: bool,
) -> Result<Info, Error> {
    let bootstrap_complete = bootstrapped(call, &reference, sandbox, recorded)?;
    Ok(Info {
        reference,
        provider_id: Some(sandbox.sandbox_id.clone()),
        state: state_of(sandbox),
        bootstrap_complete,
        create_settled: settled,
    })
}

/// The managed bootstrap record the daemon reads (the same shape on every
/// kind).
fn bootstrap_record(request: &Bootstrap) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "version": 1,
        "core_url": request.core_url,
        "daemon_credential": request.daemon_credential,
        "device_id": request.device_id,
        "harness": request.harness,
    }))
    .unwrap_or_default()
}

fn budget_ms() -> u32 {
    context::remaining_budget_ms().saturating_sub(500).max(1)
}

pub fn create(request: &Bootstrap) -> Result<Info, Failure> {
    let reference = request.reference.clone();
    let call = Call::new()?;
    let internet = match request.network_access {
        NetworkAccess::Enabled => true,
        NetworkAccess::Disabled => false,
        // E2B filters egress by address, not by the names Core allows.
        NetworkAccess::Restricted => return Err(Error::Invalid.into()),
    };
    if call.settings.cpu_count.is_none() || call.settings.memory_mb.is_none() {
        // Unknown resources cannot be qualified: selection discovery
        // resolves them first.
        return Err(Error::Invalid.into());
    }
    // An earlier attempt decides first: never a second sandbox.
    let pending = receipt(PENDING)?.is_some();
    let settled = settled_receipt()?;
    if pending || recorded()?.is_some() {
        match locate(&call, &reference)? {
            Located::One(sandbox, recorded) => {
                return Err(Failure {
                    error: Error::Exists,
                    info: Some(info_of(&call, reference, &sandbox, &recorded, false)?),
                });
            }
            Located::Several => return Err(Error::ComputeUnconfirmed.into()),
            Located::Nothing if settled.is_none() => {
                // An attempt whose outcome is unknown is never replayed.
                return Err(Error::ComputeUnconfirmed.into());
            }
            Located::Nothing => {}
        }
    }
    let identity = serde_json::to_vec(&call.ownership(&reference)).unwrap_or_default();
    if !write(PENDING, &identity)
        || receipts::remove(SETTLED).is_err()
        || receipts::remove(SANDBOX).is_err()
    {
        return Err(Error::ComputeUnconfirmed.into());
    }
    let metadata = call.ownership(&reference);
    let created = match call.api.create(&call.pinned(), &metadata, internet) {
        Ok(created) => created,
        Err(Failed::Status(400 | 401 | 403 | 404 | 422 | 429)) => {
            // A definite rejection: nothing was made.
            let info = write(SETTLED, b"rejected").then(|| Info::absent(reference, true));
            return Err(Failure {
                error: Error::Invalid,
                info,
            });
        }
        Err(Failed::NotSent) => {
            // Nothing was sent: a later Create may try again (this receipt
            // says so); this answer claims nothing, so no later one does.
            let _ = write(SETTLED, b"not_sent");
            return Err(Error::ComputeUnconfirmed.into());
        }
        Err(_) => return Err(Error::ComputeUnconfirmed.into()),
    };
    let recorded = Recorded {
        id: created.sandbox_id.clone(),
        domain: created
            .domain
            .clone()
            .unwrap_or_else(|| call.settings.domain.clone()),
        token: created.envd_access_token.clone(),
    };
    let record = serde_json::to_vec(&recorded).unwrap_or_default();
    if !write(SANDBOX, &record) {
        // The sandbox exists; Kill finds it by its labels.
        return Err(Error::ComputeUnconfirmed.into());
    }
    let sandbox = match call.api.get(&recorded.id) {
        Ok(Some(sandbox)) => sandbox,
        _ => return Err(Error::ComputeUnconfirmed.into()),
    };
    if !call.owns(&sandbox, &reference) {
        return Err(Error::Ownership.into());
    }
    if !call.qualifies(&sandbox, &recorded.domain)? {
        // Create ends at a sandbox it will not use; Kill removes it.
        let info = write(SETTLED, b"invalid").then(|| Info {
            create_settled: true,
            bootstrap_complete: false,
            ..info_of_observed(reference.clone(), &sandbox)
        });
        return Err(Failure {
            error: Error::Invalid,
            info,
        });
    }
    let envd = Envd::new(&recorded.id, &recorded.domain, recorded.token.clone());
    let args = [
        INIT.to_string(),
        call.installation.clone(),
        reference.tenant_id.clone(),
        reference.environment_id.clone(),
        reference.allocation_id.clone(),
    ];
    match envd.run(
        "root",
        &args,
        None,
        Some(&bootstrap_record(request)),
        budget_ms(),
    ) {
        Ok(ran) if ran.exit_code == 0 => {}
        // The init ran and refused, or envd refused to start it: a
        // definite end at a sandbox without its daemon (Kill removes it).
        Ok(_) | Err(RunError::Refused) => {
            let info = write(SETTLED, b"bootstrap_failed").then(|| Info {
                create_settled: true,
                bootstrap_complete: false,
                ..info_of_observed(reference.clone(), &sandbox)
            });
            return Err(Failure {
                error: Error::RuntimeNotRunning,
                info,
            });
        }
        Err(RunError::NotStarted | RunError::Unknown) => {
            return Err(Error::ComputeUnconfirmed.into());
        }
    }
    // Without this receipt a later observation could not prove the
    // Create ended: unknown rather than a success nothing can confirm.
    if !write(SETTLED, b"running") {
        return Err(Error::ComputeUnconfirmed.into());
    }
    Ok(Info {
        reference,
        provider_id: Some(recorded.id),
        state: LifecycleState::Running,
        bootstrap_complete: true,
        create_settled: true,
    })
}

/// An observed sandbox without the bootstrap check.
fn info_of_observed(reference: Reference, sandbox: &Sandbox) -> Info {
    Info {
        reference,
        provider_id: Some(sandbox.sandbox_id.clone()),
        state: state_of(sandbox),
        bootstrap_complete: false,
        create_settled: false,
    }
}

pub fn get_info(reference: Reference) -> Result<Info, Error> {
    let call = Call::new()?;
    // A definite refusal (the Create answered settled absence) proves
    // absence without asking E2B.
    if settled_receipt()?.as_deref() == Some("rejected") && recorded()?.is_none() {
        return Ok(Info::absent(reference, true));
    }
    let settled = answered_settled()?;
    match locate(&call, &reference)? {
        Located::One(sandbox, recorded) => info_of(&call, reference, &sandbox, &recorded, settled),
        Located::Several => Err(Error::ComputeUnconfirmed),
        Located::Nothing if settled => Ok(Info::absent(reference, true)),
        Located::Nothing => Err(Error::NotFound),
    }
}

pub fn renew(reference: Reference) -> Result<Info, Failure> {
    let call = Call::new()?;
    let settled = answered_settled()?;
    let (sandbox, recorded) = match locate(&call, &reference)? {
        Located::One(sandbox, recorded) => (sandbox, recorded),
        Located::Nothing => return Err(Error::NotFound.into()),
        Located::Several => return Err(Error::ComputeUnconfirmed.into()),
    };
    if state_of(&sandbox) != LifecycleState::Running {
        return Err(Error::RuntimeNotRunning.into());
    }
    match call.api.set_timeout(&recorded.id) {
        Ok(204 | 200) => {}
        Ok(404) => return Err(Error::NotFound.into()),
        _ => return Err(Error::ComputeUnconfirmed.into()),
    }
    let renewed = match call.api.get(&recorded.id) {
        Ok(Some(renewed)) if call.owns(&renewed, &reference) => renewed,
        Ok(Some(_)) => return Err(Error::Ownership.into()),
        _ => return Err(Error::ComputeUnconfirmed.into()),
    };
    if !call.qualifies(&renewed, &recorded.domain)? {
        return Err(Error::Ownership.into());
    }
    let info = info_of(&call, reference, &renewed, &recorded, settled)?;
    // E2B answers 204 also when the team's maximum sandbox length keeps
    // the end where it was: the lease was not renewed.
    if !lasts_a_lease(&renewed) {
        return Err(Failure {
            error: Error::Invalid,
            info: Some(info),
        });
    }
    Ok(info)
}

/// Slack for the clocks of E2B and this node.
const CLOCK_SLACK_SECONDS: u64 = 300;

/// Whether the sandbox's end is a whole lease from now (within the slack).
fn lasts_a_lease(sandbox: &Sandbox) -> bool {
    let Some(end) = sandbox
        .end_at
        .as_deref()
        .and_then(|text| humantime::parse_rfc3339_weak(text).ok())
    else {
        return false;
    };
    let wanted = std::time::SystemTime::now()
        + std::time::Duration::from_secs(u64::from(api::LEASE_SECONDS) - CLOCK_SLACK_SECONDS);
    end >= wanted
}

pub fn kill(reference: Reference) -> Result<Info, Failure> {
    let call = Call::new()?;
    let recorded = recorded()?;
    let settled = answered_settled()?;
    let mut ids: Vec<String> = recorded.iter().map(|r| r.id.clone()).collect();
    let labelled = call.labelled(&reference)?;
    for sandbox in labelled {
        if !ids.contains(&sandbox.sandbox_id) {
            ids.push(sandbox.sandbox_id);
        }
    }
    if ids.is_empty() && !settled && settled_receipt()?.is_none() {
        // Nothing known to remove, and nothing says an attempt ended
        // without one: Kill answers only on terminal proof.
        return Err(Error::ComputeUnconfirmed.into());
    }
    for id in &ids {
        // Every id is checked again before it is deleted.
        match call.api.get(id) {
            Ok(Some(sandbox)) if !call.owns(&sandbox, &reference) => {
                return Err(Error::Ownership.into());
            }
            Ok(_) => {}
            Err(_) => return Err(Error::ComputeUnconfirmed.into()),
        }
        match call.api.delete(id) {
            Ok(204 | 200 | 404) => {}
            _ => return Err(Error::ComputeUnconfirmed.into()),
        }
    }
    // Terminal proof: nothing labelled is left, and no recorded id answers.
    if !call.labelled(&reference)?.is_empty() {
        return Err(Error::ComputeUnconfirmed.into());
    }
    for id in &ids {
        if !matches!(call.api.get(id), Ok(None)) {
            return Err(Error::ComputeUnconfirmed.into());
        }
    }
    // Settled only where the Create answered settled (the host checks the
    // claim against its record of that answer).
    Ok(Info::absent(reference, settled))
}

pub fn run_command(reference: Reference, request: Command) -> Result<CommandResult, Error> {
    let call = Call::new()?;
    let (sandbox, recorded) = match locate(&call, &reference)? {
        Located::One(sandbox, recorded) => (sandbox, recorded),
        Located::Nothing => return Err(Error::NotFound),
        Located::Several => return Err(Error::CommandUnconfirmed),
    };
    match bootstrapped(&call, &reference, &sandbox, &recorded) {
        Ok(true) => {}
        Ok(false) => return Err(Error::RuntimeNotRunning),
        Err(_) => return Err(Error::CommandUnconfirmed),
    }
    let envd = Envd::new(&recorded.id, &recorded.domain, recorded.token.clone());
    match envd.run(
        RUNTIME_USER,
        &request.args,
        request.directory.as_deref(),
        request.stdin.as_deref(),
        budget_ms(),
    ) {
        Ok(ran) => Ok(CommandResult {
            stdout: ran.stdout,
            stderr: ran.stderr,
            exit_code: ran.exit_code,
        }),
        Err(RunError::NotStarted) => Err(Error::RuntimeNotRunning),
        // envd refused the command (e.g. its directory is missing).
        Err(RunError::Refused) => Err(Error::Invalid),
        Err(RunError::Unknown) => Err(Error::CommandUnconfirmed),
    }
}

/// One observation: the sandbox's latest metrics.
fn sample(sandbox: &Sandbox, metric: &api::Metric) -> Sample {
    Sample {
        // E2B reports CPU use as a percentage, never as time.
        cpu_seconds: None,
        memory_bytes: metric.mem_used,
        memory_limit_bytes: metric.mem_total,
        cpus: f64::from(metric.cpu_count),
        started_at: Some(sandbox.started_at.clone()),
    }
}

pub fn observe(of: Target) -> Result<Sample, Error> {
    let mut samples = observe_batch(vec![of])?;
    samples.pop().unwrap_or(Err(Error::ObservationUnavailable))
}

pub fn observe_batch(targets: Vec<Target>) -> Result<Vec<Result<Sample, Error>>, Error> {
    let call = Call::new()?;
    let unavailable = |_| Error::ObservationUnavailable;
    // One labelled list of this installation's sandboxes.
    let installation = call.installation.clone();
    let listed = call
        .api
        .list(&[(api::INSTALLATION_KEY, installation.as_str())])
        .map_err(unavailable)?;
    let found: Vec<Option<&Sandbox>> = targets
        .iter()
        .map(|target| {
            listed
                .iter()
                .find(|sandbox| call.owns(sandbox, &target.reference))
        })
        .collect();
    let ids: Vec<&str> = found
        .iter()
        .flatten()
        .map(|sandbox| sandbox.sandbox_id.as_str())
        .collect();
    let metrics = if ids.is_empty() {
        BTreeMap::new()
    } else {
        call.api.metrics(&ids).map_err(unavailable)?
    };
    Ok(found
        .into_iter()
        .map(|sandbox| {
            let sandbox = sandbox.ok_or(Error::NotFound)?;
            metrics
                .get(&sandbox.sandbox_id)
                .map(|metric| sample(sandbox, metric))
                .ok_or(Error::ObservationUnavailable)
        })
        .collect())
}

/// Selection discovery: the build's resources where the candidate omits
/// them; a build that is not ready is refused.
pub fn discover_selection(candidate: String) -> Result<String, Error> {
    let settings = Settings::parse(&candidate)?;
    let api = Api {
        base: settings.api_url.clone(),
    };
    // The alias resolved once, here: the discovered configuration names
    // the template by its id, which is what sandboxes show.
    let id = match api.template_id(&settings.selector.template) {
        Ok(id) => id,
        Err(Failed::Status(403 | 404)) => return Err(Error::Invalid),
        Err(_) => return Err(Error::ObservationUnavailable),
    };
    let builds = api.builds(&id).map_err(|_| Error::ObservationUnavailable)?;
    let build = builds
        .iter()
        .find(|build| build.build_id == settings.selector.build && build.status == "ready")
        .ok_or(Error::Invalid)?;
    let mut public = settings.public.clone();
    public.template = format!("{id}:{}", settings.selector.build);
    public.cpu_count = Some(public.cpu_count.unwrap_or(build.cpu_count));
    public.memory_mb = Some(public.memory_mb.unwrap_or(build.memory_mb));
    serde_json::to_string(&public).map_err(|_| Error::Invalid)
}

/// Credential verification: the candidate key is the team's that owns
/// the configured template (another team's valid key reads it as 403, and
/// would list none of the sandboxes) and reaches every owned sandbox of
/// `references` (reads only).
pub fn verify_credential(_candidate: String, references: Vec<Reference>) -> Result<(), Error> {
    let call = Call::new()?;
    match call.api.template_id(&call.settings.selector.template) {
        Ok(_) => {}
        Err(Failed::Status(401 | 403 | 404)) => return Err(Error::Invalid),
        Err(_) => return Err(Error::ObservationUnavailable),
    }
    for reference in &references {
        let labelled = match call.labelled(reference) {
            Ok(labelled) => labelled,
            Err(_) => return Err(Error::Invalid),
        };
        for sandbox in labelled {
            match call.api.get(&sandbox.sandbox_id) {
                Ok(Some(_)) => {}
                _ => return Err(Error::Invalid),
            }
        }
    }
    Ok(())
}

/// Configuration discovery: every ready build of every template.
pub fn discover_configuration(query: String) -> Result<Vec<String>, Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Query {
        #[serde(default)]
        api_url: String,
        #[serde(default)]
        domain: String,
    }
    let query: Query = serde_json::from_str(&query).map_err(|_| Error::Invalid)?;
    let (api_url, domain) = oac_provider_sdk::endpoint::resolve(
        &query.api_url,
        &query.domain,
        crate::config::DEFAULT_API_URL,
        crate::config::DEFAULT_DOMAIN,
    )
    .map_err(|_| Error::Invalid)?;
    let api = Api {
        base: api_url.to_string(),
    };
    let unavailable = |_| Error::ObservationUnavailable;
    let mut found = Vec::new();
    for template in api.templates().map_err(unavailable)? {
        for build in api.builds(&template.template_id).map_err(unavailable)? {
            if build.status != "ready" {
                continue;
            }
            let public = crate::config::Public {
                template: format!("{}:{}", template.template_id, build.build_id),
                api_url: api_url.to_string(),
                domain: domain.to_string(),
                cpu_count: Some(build.cpu_count),
                memory_mb: Some(build.memory_mb),
            };
            if Settings::from_public(public.clone()).is_ok() {
                found.push(serde_json::to_string(&public).map_err(|_| Error::Invalid)?);
            }
        }
    }
    Ok(found)
}

/// Ready when the configuration is valid and the API answers a read.
pub fn probe() -> Vec<Diagnostic> {
    match Call::new() {
        Ok(call) => match call.api.list(&[(api::INSTALLATION_KEY, "probe")]) {
            Ok(_) => Vec::new(),
            Err(_) => vec![Diagnostic::ProviderUnavailable],
        },
        Err(_) => vec![Diagnostic::ProviderUnavailable],
    }
}
