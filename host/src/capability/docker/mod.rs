//! The `docker` capability: a typed Engine API subset over the node's
//! explicit Unix socket. The host owns the container ([`policy`]): a
//! component names resources and decides a few container fields
//! ([`request`]), and every request is bound to resources labelled for the
//! call's allocation ([`CallScope`]), names the full id the ownership check
//! saw, is bounded by the call's remaining budget, and is never retried.

mod action;
mod archive;
mod engine;
mod fresh;
mod imports;
pub mod inspection;
pub mod names;
pub mod policy;
mod proven;
pub(crate) mod request;

use crate::bindings::oac::sandbox_provider::docker::{
    ContainerSpec, ContainerStatus, ContainerSummary, DockerError, EngineInfo, EngineVersion,
    ExecOutput, ExecSpec, ImageSummary, StatsReading,
};
use crate::capability::boundary::{Action, Boundary, Crossing, Decided, InFlight};
use crate::capability::scope::{CallScope, INSTALLATION_LABEL, ownership_labels};
use bollard_stubs::models::{
    ContainerCreateBody, ContainerCreateResponse, ContainerStateStatusEnum, ContainerStatsResponse,
    ExecConfig, ExecInspectResponse, IdResponse, ImageInspect, SystemInfo, SystemVersion, Volume,
    VolumeCreateRequest, VolumeListResponse,
};
use engine::{Body, Engine, EngineError};
use fresh::Fresh;
use hyper::Method;
pub(crate) use imports::{State, View, add_to_linker};
use inspection::InspectedContainer;
use oac_provider_api::types::Reference;
use policy::ContainerPolicy;
use proven::Proof;
use proven::ProvenContainers;
use request::{ContainerRequest, container_key, is_full_id, is_resource_name};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use action::DockerAction;
pub use archive::MAX_ARCHIVE_BYTES;
pub use engine::API_VERSION;
pub(crate) use engine::keep_pools_on_this_thread;

/// What a registry row grants: whether the kind reaches the Engine (nodes
/// kinds only).
pub type Grant = bool;

/// What a node binds to the Docker capability: the engine's Unix socket
/// (never taken from `DOCKER_HOST`) and the container policy every
/// container of the kind gets (the host's, never the component's). A kind
/// granted Docker needs both to connect; one not granted it may have
/// neither.
#[derive(Clone, Debug, Default)]
pub struct Binding {
    /// The engine's Unix socket (absolute).
    pub socket: Option<std::path::PathBuf>,
    /// The container policy.
    pub policy: Option<ContainerPolicy>,
}

/// Oldest Engine API the typed subset needs (volume subpath mounts).
pub const MIN_API_VERSION: (u32, u32) = (1, 45);
use oac_contract::bounds::{MAX_OUTPUT_BYTES, MAX_STDIN_BYTES};

/// The host's own Engine transport alone, without Wasm, broker, policy or
/// boundary: what one Engine request costs natively, the floor the calls
/// benchmark measures the host against. A test seam: reached through
/// `crate::testing`, never by a component.
#[doc(hidden)]
#[derive(Clone)]
pub struct DirectEngine(Engine);

impl DirectEngine {
    /// A transport to the engine at `socket` (nothing is dialled yet).
    pub fn new(socket: &Path) -> Self {
        Self(Engine::new(socket))
    }

    /// `GET /version` under the pinned API, decoded as the capability
    /// decodes it; whether it answered.
    pub async fn version(&self) -> bool {
        self.0
            .json::<SystemVersion>(Method::GET, &["version"], &[], Body::Empty)
            .await
            .is_ok()
    }
}

/// Why the capability cannot be constructed for a node. No native text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DockerConnectError {
    /// The socket is missing or the engine does not answer.
    #[error("the Docker Engine socket does not answer")]
    Unreachable,
    /// The engine speaks an API older than 1.45.
    #[error("the Docker Engine API is older than 1.45")]
    TooOld,
}

/// The Docker broker of one node binding: the engine, the installation and
/// the container policy every container of the kind gets.
#[derive(Clone)]
pub(crate) struct Broker {
    engine: Engine,
    installation: String,
    policy: Arc<ContainerPolicy>,
    /// The kind's volume roles: what [`names::AllocationNames`] names.
    volume_roles: Arc<[String]>,
    boundary: Boundary,
}

impl Broker {
    /// The container policy every container of this kind gets.
    pub(crate) fn policy(&self) -> &ContainerPolicy {
        &self.policy
    }
}

fn parse_api_version(version: &str) -> Option<(u32, u32)> {
    let (major, minor) = version.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

fn classify(error: EngineError) -> DockerError {
    match error {
        EngineError::Unreachable => DockerError::Unavailable,
        EngineError::Status(404) => DockerError::NotFound,
        EngineError::Status(409) => DockerError::Conflict,
        EngineError::Status(_) => DockerError::Failed,
        EngineError::Unconfirmed => DockerError::Unconfirmed,
    }
}

/// Under an injected foreign-ownership fault, the resource appears
/// labelled for another installation.
fn relabel(labels: &mut HashMap<String, String>, decided: &Decided) {
    if decided.shows_foreign() {
        labels.insert(INSTALLATION_LABEL.into(), "foreign-installation".into());
    }
}

fn status(status: Option<ContainerStateStatusEnum>) -> ContainerStatus {
    match status {
        Some(ContainerStateStatusEnum::RUNNING) => ContainerStatus::Running,
        Some(ContainerStateStatusEnum::PAUSED) => ContainerStatus::Paused,
        Some(ContainerStateStatusEnum::RESTARTING) => ContainerStatus::Restarting,
        Some(ContainerStateStatusEnum::REMOVING) => ContainerStatus::Removing,
        Some(ContainerStateStatusEnum::EXITED) => ContainerStatus::Exited,
        Some(ContainerStateStatusEnum::DEAD) => ContainerStatus::Dead,
        _ => ContainerStatus::Created,
    }
}

fn unsigned(value: Option<i64>) -> u64 {
    value.and_then(|n| u64::try_from(n).ok()).unwrap_or(0)
}

/// The exec the engine is asked for: the component's command, as the
/// policy's user, never privileged, no environment of its own.
fn exec_config(spec: &ExecSpec) -> ExecConfig {
    ExecConfig {
        attach_stdin: Some(spec.stdin.is_some()),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        tty: Some(false),
        cmd: Some(spec.args.clone()),
        user: Some(policy::RUNTIME_USER.into()),
        privileged: Some(false),
        working_dir: spec.working_dir.clone(),
        ..Default::default()
    }
}

/// A container the ownership check saw: its full id and what inspect said.
struct Owned {
    id: String,
    inspected: InspectedContainer,
    /// What the inspection proved (also recorded for the rest of the call).
    proof: Proof,
}

impl Broker {
    /// Connects to the engine at `socket` and requires API ≥ 1.45. The
    /// construction check itself does not cross the `boundary`.
    pub(crate) async fn connect(
        socket: &Path,
        installation: &str,
        policy: ContainerPolicy,
        volume_roles: &[String],
        timeout: Duration,
        boundary: Boundary,
    ) -> Result<Self, DockerConnectError> {
        let engine = Engine::new(socket);
        let version: SystemVersion = tokio::time::timeout(timeout, engine.version_unversioned())
            .await
            .map_err(|_| DockerConnectError::Unreachable)?
            .map_err(|_| DockerConnectError::Unreachable)?;
        let api = version
            .api_version
            .as_deref()
            .and_then(parse_api_version)
            .ok_or(DockerConnectError::TooOld)?;
        if api < MIN_API_VERSION {
            return Err(DockerConnectError::TooOld);
        }
        Ok(Self {
            engine,
            installation: installation.to_string(),
            policy: Arc::new(policy),
            volume_roles: volume_roles.into(),
            boundary,
        })
    }

    /// Shows the boundary's hook a call the component made.
    pub(crate) fn note_call(&self, call: crate::capability::boundary::ImportCall<'_>) {
        self.boundary.note_call(call);
    }

    /// The broker as one call uses it: bound to the call's allocations and
    /// its deadline.
    pub(crate) fn call<'a>(
        &'a self,
        scope: &'a CallScope,
        deadline: Instant,
        in_flight: &'a InFlight,
        proven: &'a ProvenContainers,
        fresh: &'a Fresh,
    ) -> DockerCall<'a> {
        DockerCall {
            broker: self,
            scope,
            deadline,
            in_flight,
            proven,
            fresh,
        }
    }
}

/// Where `inspected`'s mounts are, inside the container.
fn mount_targets(inspected: &InspectedContainer) -> Vec<String> {
    inspected
        .host_config
        .as_ref()
        .and_then(|host| host.mounts.as_ref())
        .map(|mounts| {
            mounts
                .iter()
                .filter_map(|mount| mount.target.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// One call's view of the broker.
pub(crate) struct DockerCall<'a> {
    broker: &'a Broker,
    scope: &'a CallScope,
    deadline: Instant,
    in_flight: &'a InFlight,
    proven: &'a ProvenContainers,
    fresh: &'a Fresh,
}

impl DockerCall<'_> {
    /// Shows the request to the boundary's hook.
    fn decide(&self, action: DockerAction, target: &str, host_cleanup: bool) -> Decided {
        self.broker
            .boundary
            .decide(Action::Docker(action), target, host_cleanup)
    }

    /// Sends one engine request across the boundary, within the call's
    /// deadline; never retried.
    async fn dispatch<T>(
        &self,
        decided: &Decided,
        sending: impl Future<Output = Result<T, EngineError>>,
    ) -> Result<T, DockerError> {
        self.broker
            .boundary
            .dispatch(decided, self.deadline, self.in_flight, sending)
            .await
            .map_err(|crossing| match crossing {
                Crossing::NotSent => DockerError::Unavailable,
                Crossing::CleanupFailed => DockerError::Failed,
                Crossing::Lost => DockerError::Unconfirmed,
                Crossing::Native(error) => classify(error),
            })
    }

    /// [`Self::decide`] then [`Self::dispatch`].
    async fn send<T>(
        &self,
        action: DockerAction,
        target: &str,
        sending: impl Future<Output = Result<T, EngineError>>,
    ) -> Result<T, DockerError> {
        let decided = self.decide(action, target, false);
        self.dispatch(&decided, sending).await
    }

    /// Tells the boundary an answer showed a resource of this installation.
    fn shown(&self, labels: &HashMap<String, String>, decided: &Decided) {
        if labels.get(INSTALLATION_LABEL) == Some(&self.broker.installation) {
            self.broker.boundary.ownership_shown(decided);
        }
    }

    fn engine(&self) -> &Engine {
        &self.broker.engine
    }

    fn policy(&self) -> &ContainerPolicy {
        &self.broker.policy
    }

    fn owns(&self, labels: &HashMap<String, String>) -> bool {
        self.scope.owns(&self.broker.installation, labels)
    }

    /// Engine version.
    pub(crate) async fn version(&self) -> Result<EngineVersion, DockerError> {
        let version: SystemVersion = self
            .send(
                DockerAction::Version,
                "",
                self.engine()
                    .json(Method::GET, &["version"], &[], Body::Empty),
            )
            .await?;
        Ok(EngineVersion {
            version: version.version.unwrap_or_default(),
            api_version: version.api_version.unwrap_or_default(),
        })
    }

    /// Engine capabilities.
    pub(crate) async fn info(&self) -> Result<EngineInfo, DockerError> {
        let info: SystemInfo = self
            .send(
                DockerAction::Info,
                "",
                self.engine().json(Method::GET, &["info"], &[], Body::Empty),
            )
            .await?;
        Ok(EngineInfo {
            cpus: info.ncpu.and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
            memory_bytes: unsigned(info.mem_total),
            memory_limit: info.memory_limit.unwrap_or(false),
            cpu_limit: info.cpu_cfs_quota.unwrap_or(false),
        })
    }

    /// The node's runtime image (validated against the reference grammar
    /// when the policy was loaded; its path segments are its `/` parts).
    pub(crate) async fn runtime_image(&self) -> Result<ImageSummary, DockerError> {
        let image = self.policy().image();
        let mut segments = vec!["images"];
        segments.extend(image.split('/'));
        segments.push("json");
        let found: ImageInspect = self
            .send(
                DockerAction::ImageInspect,
                image,
                self.engine().json(Method::GET, &segments, &[], Body::Empty),
            )
            .await?;
        Ok(ImageSummary {
            id: found.id.unwrap_or_default(),
            repo_digests: found.repo_digests.unwrap_or_default(),
        })
    }

    /// Inspects `key` (a full name or id) and checks it is this call's:
    /// the engine must have resolved it exactly (never as an id prefix),
    /// and it must carry the call's ownership labels.
    async fn owned_container(&self, input: &str) -> Result<Owned, DockerError> {
        let key = container_key(input).map_err(|_| DockerError::Invalid)?;
        let decided = self.decide(DockerAction::ContainerInspect, key, false);
        let mut inspected: InspectedContainer = self
            .dispatch(
                &decided,
                self.engine()
                    .json(Method::GET, &["containers", key, "json"], &[], Body::Empty),
            )
            .await?;
        let id = inspected.id.clone().unwrap_or_default();
        if !is_full_id(&id) {
            return Err(DockerError::Unconfirmed);
        }
        let name = inspected.name.as_deref().unwrap_or_default();
        if key != id && key != name.trim_start_matches('/') {
            // The engine resolved something else (an id prefix): the
            // container the component named does not exist.
            return Err(DockerError::NotFound);
        }
        let config = inspected.config.get_or_insert_default();
        let labels = config.labels.get_or_insert_default();
        self.shown(labels, &decided);
        relabel(labels, &decided);
        if !self.owns(labels) {
            return Err(refused("foreign_container", DockerError::Ownership));
        }
        let proof = Proof {
            nonconformity: self.policy().nonconformity(&inspected),
            mount_targets: mount_targets(&inspected),
        };
        self.proven.record(&id, proof.clone());
        Ok(Owned {
            id,
            inspected,
            proof,
        })
    }

    /// The full id of `input`, a container this call owns: from this
    /// call's proof when `input` is a full id it already proved (and, with
    /// `usable`, proved to carry the policy), else by inspecting it
    /// ([`Self::owned_container`] or [`Self::usable_container`]).
    async fn proven(&self, input: &str, usable: bool) -> Result<(String, Proof), DockerError> {
        if is_full_id(input)
            && let Some(proof) = self.proven.get(input)
            && (proof.nonconformity.is_none() || !usable)
        {
            return Ok((input.to_string(), proof));
        }
        let owned = if usable {
            self.usable_container(input).await?
        } else {
            self.owned_container(input).await?
        };
        Ok((owned.id, owned.proof))
    }

    /// [`Self::owned_container`], and the container carries the policy.
    async fn usable_container(&self, input: &str) -> Result<Owned, DockerError> {
        let owned = self.owned_container(input).await?;
        match owned.proof.nonconformity {
            None => Ok(owned),
            Some(field) => {
                tracing::warn!(
                    event = "container_nonconforming",
                    field,
                    "container not used"
                );
                Err(DockerError::Invalid)
            }
        }
    }

    /// A container of this call's allocation; a foreign one answers
    /// `ownership` and nothing else.
    pub(crate) async fn container_inspect(
        &self,
        input: &str,
    ) -> Result<ContainerSummary, DockerError> {
        let Owned {
            id,
            inspected,
            proof,
        } = self.owned_container(input).await?;
        let conforms = proof.nonconformity.is_none();
        let host = inspected.host_config.unwrap_or_default();
        let state = inspected.state.unwrap_or_default();
        Ok(ContainerSummary {
            id,
            name: inspected
                .name
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_string(),
            status: status(state.status),
            started_at: state.started_at.filter(|at| !at.starts_with("0001-")),
            conforms,
            nano_cpus: unsigned(host.nano_cpus),
            memory_bytes: unsigned(host.memory),
        })
    }

    /// The engine's label filter for this call's single allocation.
    fn label_filter(&self) -> Result<String, DockerError> {
        let reference = self.scope.single().ok_or(DockerError::Invalid)?;
        let wanted: Vec<String> = ownership_labels(&self.broker.installation, reference)
            .into_iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        Ok(serde_json::json!({ "label": wanted }).to_string())
    }

    /// Names of this call's allocation's containers.
    pub(crate) async fn container_list(&self) -> Result<Vec<String>, DockerError> {
        let filters = self.label_filter()?;
        let found: Vec<bollard_stubs::models::ContainerSummary> = self
            .send(
                DockerAction::ContainerList,
                "",
                self.engine().json(
                    Method::GET,
                    &["containers", "json"],
                    &[("all", "true"), ("filters", &filters)],
                    Body::Empty,
                ),
            )
            .await?;
        let mut names: Vec<String> = found
            .into_iter()
            .filter(|summary| {
                summary
                    .labels
                    .as_ref()
                    .is_some_and(|labels| self.owns(labels))
            })
            .filter_map(|summary| summary.names.and_then(|names| names.into_iter().next()))
            .map(|name| name.trim_start_matches('/').to_string())
            .collect();
        names.sort();
        Ok(names)
    }

    /// The names the host gives `reference`'s resources.
    fn names_of(&self, reference: &Reference) -> names::AllocationNames {
        names::AllocationNames::of(
            &self.broker.installation,
            reference,
            &self.broker.volume_roles,
        )
    }

    /// The names of `reference`'s resources, for a reference of this call.
    pub(crate) fn names(
        &self,
        reference: &Reference,
    ) -> Result<names::AllocationNames, DockerError> {
        if !self.scope.references().contains(reference) {
            return Err(refused("foreign_reference", DockerError::Ownership));
        }
        Ok(self.names_of(reference))
    }

    /// Creates a container under the policy, verifies it, and checks its
    /// volumes again (see [`Self::verify_created`]).
    pub(crate) async fn container_create(
        &self,
        spec: &ContainerSpec,
    ) -> Result<String, DockerError> {
        let request = ContainerRequest::check(spec)
            .map_err(|_| refused("container_request", DockerError::Invalid))?;
        let reference = self.scope.single().ok_or(DockerError::Invalid)?;
        let names = self.names_of(reference);
        if request.name != names.container
            || request
                .volumes()
                .into_iter()
                .any(|volume| !names.has_volume(volume))
        {
            return Err(refused("name_not_the_allocations", DockerError::Invalid));
        }
        for volume in request.volumes() {
            self.owned_volume(volume).await?;
        }
        let labels = ownership_labels(&self.broker.installation, reference);
        let body: ContainerCreateBody = self.policy().create_body(&request, labels);
        let created: ContainerCreateResponse = self
            .send(
                DockerAction::ContainerCreate,
                &request.name,
                self.engine().json(
                    Method::POST,
                    &["containers", "create"],
                    &[("name", &request.name)],
                    Body::json(&body),
                ),
            )
            .await?;
        if !is_full_id(&created.id) {
            return Err(DockerError::Unconfirmed);
        }
        self.verify_created(&created.id, &request).await?;
        self.fresh.container_created(&created.id, request.volumes());
        Ok(created.id)
    }

    /// The verification after create. A container without the policy is
    /// `invalid` and left unstarted (it can never be used). Only a
    /// container proved to be the one just created (same id, this
    /// allocation's labels) is removed when it differs from the request or
    /// mounts a volume that is not this allocation's; a failed inspection
    /// proves nothing and leaves it.
    async fn verify_created(
        &self,
        id: &str,
        request: &ContainerRequest,
    ) -> Result<(), DockerError> {
        let owned = self
            .owned_container(id)
            .await
            .map_err(|_| DockerError::Unconfirmed)?;
        if let Some(field) = owned.proof.nonconformity {
            // It is never started or used (every start, exec and upload
            // checks the policy first); the component names it in its
            // answer and Kill removes it.
            tracing::warn!(
                event = "container_policy_mismatch",
                field,
                "created container left unstarted"
            );
            return Err(DockerError::Invalid);
        }
        if let Some(field) = self.policy().mismatch(&owned.inspected, request) {
            // It carries the policy but is not what was asked for (mounts,
            // command, name): nothing would stop a later start, so it goes.
            tracing::warn!(
                event = "container_request_mismatch",
                field,
                "created container removed"
            );
            self.remove_unverified(id).await;
            return Err(DockerError::Unconfirmed);
        }
        for volume in request.volumes() {
            match self.owned_volume(volume).await {
                Ok(()) => {}
                Err(DockerError::Ownership | DockerError::NotFound) => {
                    tracing::warn!(
                        event = "mounted_volume_not_owned",
                        "created container removed"
                    );
                    self.remove_unverified(id).await;
                    return Err(DockerError::Unconfirmed);
                }
                Err(_) => return Err(DockerError::Unconfirmed),
            }
        }
        Ok(())
    }

    /// Removes a container the host created that failed verification.
    async fn remove_unverified(&self, id: &str) {
        self.proven.forget(id);
        let decided = self.decide(DockerAction::ContainerRemove, id, true);
        let removed = self
            .dispatch(
                &decided,
                self.engine().call(
                    Method::DELETE,
                    &["containers", id],
                    &[("force", "true"), ("v", "false")],
                    Body::Empty,
                ),
            )
            .await;
        if removed.is_err() {
            tracing::warn!(event = "unverified_container_left", "removal failed");
        }
    }

    /// Starts an owned container that carries the policy.
    pub(crate) async fn container_start(&self, input: &str) -> Result<(), DockerError> {
        let (id, _) = self.proven(input, true).await?;
        self.fresh.started(&id);
        self.send(
            DockerAction::ContainerStart,
            &id,
            self.engine().call(
                Method::POST,
                &["containers", &id, "start"],
                &[],
                Body::Empty,
            ),
        )
        .await
        .map(drop)
    }

    /// Removes an owned container (whatever it carries: cleanup must work).
    pub(crate) async fn container_remove(
        &self,
        input: &str,
        force: bool,
    ) -> Result<(), DockerError> {
        let (id, _) = self.proven(input, false).await?;
        let force = if force { "true" } else { "false" };
        // Whatever the answer, the proof is not used again: the id may be
        // gone.
        self.proven.forget(&id);
        self.send(
            DockerAction::ContainerRemove,
            &id,
            self.engine().call(
                Method::DELETE,
                &["containers", &id],
                &[("force", force), ("v", "false")],
                Body::Empty,
            ),
        )
        .await
        .map(drop)
    }

    /// One stats reading of an owned container.
    pub(crate) async fn container_stats(&self, input: &str) -> Result<StatsReading, DockerError> {
        let owned = self.owned_container(input).await?;
        let reading: ContainerStatsResponse = self
            .send(
                DockerAction::ContainerStats,
                &owned.id,
                self.engine().json(
                    Method::GET,
                    &["containers", &owned.id, "stats"],
                    &[("stream", "false"), ("one-shot", "true")],
                    Body::Empty,
                ),
            )
            .await?;
        let cpu = reading.cpu_stats.unwrap_or_default();
        let memory = reading.memory_stats.unwrap_or_default();
        Ok(StatsReading {
            cpu_total_ns: cpu
                .cpu_usage
                .and_then(|usage| usage.total_usage)
                .unwrap_or(0),
            online_cpus: cpu.online_cpus.unwrap_or(0),
            memory_usage_bytes: memory.usage.unwrap_or(0),
            memory_limit_bytes: memory.limit.unwrap_or(0),
        })
    }

    /// A volume is this call's when it carries the allocation's labels and
    /// is a plain local volume (no driver options: those can make a
    /// "volume" a host bind mount, and the host never sets them).
    fn volume_is_ours(&self, volume: &Volume) -> bool {
        self.owns(&volume.labels) && volume.driver == "local" && volume.options.is_empty()
    }

    async fn owned_volume(&self, name: &str) -> Result<(), DockerError> {
        if !is_resource_name(name) {
            return Err(DockerError::Invalid);
        }
        let decided = self.decide(DockerAction::VolumeInspect, name, false);
        let mut found: Volume = self
            .dispatch(
                &decided,
                self.engine()
                    .json(Method::GET, &["volumes", name], &[], Body::Empty),
            )
            .await?;
        self.shown(&found.labels, &decided);
        relabel(&mut found.labels, &decided);
        if found.name == name && self.volume_is_ours(&found) {
            Ok(())
        } else {
            Err(DockerError::Ownership)
        }
    }

    /// Succeeds for a volume of this call's allocation.
    pub(crate) async fn volume_inspect(&self, name: &str) -> Result<(), DockerError> {
        self.owned_volume(name).await
    }

    /// Names of this call's allocation's volumes.
    pub(crate) async fn volume_list(&self) -> Result<Vec<String>, DockerError> {
        let filters = self.label_filter()?;
        let found: VolumeListResponse = self
            .send(
                DockerAction::VolumeList,
                "",
                self.engine().json(
                    Method::GET,
                    &["volumes"],
                    &[("filters", &filters)],
                    Body::Empty,
                ),
            )
            .await?;
        let mut names: Vec<String> = found
            .volumes
            .unwrap_or_default()
            .into_iter()
            .filter(|volume| self.volume_is_ours(volume))
            .map(|volume| volume.name)
            .collect();
        names.sort();
        Ok(names)
    }

    /// Whether anything of this call's allocation is left on the engine:
    /// a container or volume carrying all four of its labels. What the
    /// host checks itself after a Kill answered absence; an engine that
    /// does not answer counts as something left.
    pub(crate) async fn anything_left(&self) -> bool {
        match (self.container_list().await, self.volume_list().await) {
            (Ok(containers), Ok(volumes)) => !containers.is_empty() || !volumes.is_empty(),
            _ => true,
        }
    }

    /// Creates a local volume labelled for this call's allocation. The
    /// engine answers an existing volume of the name instead of creating
    /// one, so the answer is checked: anything but this allocation's
    /// volume is `ownership`.
    pub(crate) async fn volume_create(&self, name: &str) -> Result<(), DockerError> {
        let reference = self.scope.single().ok_or(DockerError::Invalid)?;
        if !is_resource_name(name) || !self.names_of(reference).has_volume(name) {
            return Err(DockerError::Invalid);
        }
        // The engine answers an existing volume as if it made it: only one
        // not there before is this call's own fresh volume (and a foreign
        // one is never asked for).
        let existed = match self.owned_volume(name).await {
            Ok(()) => true,
            Err(DockerError::NotFound) => false,
            Err(error) => return Err(error),
        };
        let request = VolumeCreateRequest {
            name: Some(name.to_string()),
            driver: Some("local".into()),
            labels: Some(ownership_labels(&self.broker.installation, reference)),
            ..Default::default()
        };
        let decided = self.decide(DockerAction::VolumeCreate, name, false);
        let mut created: Volume = self
            .dispatch(
                &decided,
                self.engine().json(
                    Method::POST,
                    &["volumes", "create"],
                    &[],
                    Body::json(&request),
                ),
            )
            .await?;
        self.shown(&created.labels, &decided);
        relabel(&mut created.labels, &decided);
        if created.name == name && self.volume_is_ours(&created) {
            if !existed {
                self.fresh.volume_created(name);
            }
            Ok(())
        } else {
            Err(DockerError::Ownership)
        }
    }

    /// Removes an owned volume.
    pub(crate) async fn volume_remove(&self, name: &str) -> Result<(), DockerError> {
        self.owned_volume(name).await?;
        self.send(
            DockerAction::VolumeRemove,
            name,
            self.engine()
                .call(Method::DELETE, &["volumes", name], &[], Body::Empty),
        )
        .await
        .map(drop)
    }

    /// Extracts the host's canonical rewrite of `archive` at `path`, which
    /// must lie in one of the container's volume mounts, of a container
    /// this call made on volumes it made and has not started ([`Fresh`]).
    pub(crate) async fn archive_upload(
        &self,
        input: &str,
        path: &str,
        archive: Vec<u8>,
    ) -> Result<(), DockerError> {
        if !request::is_container_path(path) {
            return Err(DockerError::Invalid);
        }
        // The component's bytes, once, as the engine gets them: the host's
        // headers around slices of them (`archive::sanitize`).
        let canonical = archive::sanitize(archive.into()).map_err(|violation| {
            tracing::info!(event = "archive_refused", rule = %violation);
            DockerError::Invalid
        })?;
        let (id, proof) = self.proven(input, true).await?;
        let in_volume = proof
            .mount_targets
            .iter()
            .any(|target| request::is_at_or_below(path, target));
        if !in_volume {
            return Err(DockerError::Invalid);
        }
        // Only where nothing can have planted a link ([`Fresh`]).
        if !self.fresh.is_fresh(&id) {
            tracing::info!(event = "archive_refused", rule = "container_not_fresh");
            return Err(DockerError::Invalid);
        }
        // The target names the directory too: two uploads into one
        // container are two requests, not one sent twice.
        self.send(
            DockerAction::ArchiveUpload,
            &format!("{id}:{path}"),
            self.engine().call(
                Method::PUT,
                &["containers", &id, "archive"],
                &[("path", path), ("noOverwriteDirNonDir", "true")],
                Body::Tar(canonical),
            ),
        )
        .await
        .map(drop)
    }

    /// Runs a command as the policy's user in an owned container that
    /// carries the policy: stdin is written then closed, the output is read
    /// into bounded buffers (stopping at the first overflow), and the exit
    /// code comes from exec inspect.
    pub(crate) async fn exec(
        &self,
        input: &str,
        spec: &ExecSpec,
    ) -> Result<ExecOutput, DockerError> {
        request::check_exec(spec, MAX_STDIN_BYTES, MAX_OUTPUT_BYTES)
            .map_err(|_| DockerError::Invalid)?;
        let (id, _) = self.proven(input, true).await?;
        let config = exec_config(spec);
        let created: IdResponse = self
            .send(
                DockerAction::ExecCreate,
                &id,
                self.engine().json(
                    Method::POST,
                    &["containers", &id, "exec"],
                    &[],
                    Body::json(&config),
                ),
            )
            .await?;
        if !is_full_id(&created.id) {
            return Err(DockerError::Unconfirmed);
        }
        let streams = self
            .send(
                DockerAction::ExecStart,
                &id,
                self.engine().exec_start(
                    &created.id,
                    spec.stdin.as_deref(),
                    spec.output_limit_bytes as usize,
                    self.deadline,
                ),
            )
            .await?;
        if streams.overflowed {
            return Ok(ExecOutput {
                stdout: streams.stdout,
                stderr: streams.stderr,
                exit_code: None,
                overflowed: true,
            });
        }
        let inspected: ExecInspectResponse = self
            .send(
                DockerAction::ExecInspect,
                &id,
                self.engine().json(
                    Method::GET,
                    &["exec", &created.id, "json"],
                    &[],
                    Body::Empty,
                ),
            )
            .await?;
        let exit_code = match inspected.running {
            Some(false) => inspected
                .exit_code
                .and_then(|code| i32::try_from(code).ok()),
            _ => None,
        };
        Ok(ExecOutput {
            stdout: streams.stdout,
            stderr: streams.stderr,
            exit_code,
            overflowed: false,
        })
    }
}

/// [`super::refused`] for the Docker policy.
fn refused(rule: &'static str, error: DockerError) -> DockerError {
    super::refused("docker", rule, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_compare_numerically() {
        assert!(parse_api_version("1.45").is_some_and(|v| v >= MIN_API_VERSION));
        assert!(parse_api_version("1.100").is_some_and(|v| v >= MIN_API_VERSION));
        assert!(parse_api_version("1.44").is_some_and(|v| v < MIN_API_VERSION));
        assert_eq!(parse_api_version("junk"), None);
    }

    #[test]
    fn every_exec_runs_as_the_runtime_user_unprivileged() {
        let spec = ExecSpec {
            args: vec!["id".into()],
            working_dir: None,
            stdin: Some(b"in".to_vec()),
            output_limit_bytes: 16,
        };
        let config = exec_config(&spec);
        assert_eq!(config.user.as_deref(), Some("1000:1000"));
        assert_eq!(config.privileged, Some(false));
        assert_eq!(config.env, None);
        assert_eq!(config.attach_stdin, Some(true));
    }

    #[test]
    fn engine_statuses_map_to_fixed_codes() {
        assert_eq!(classify(EngineError::Status(404)), DockerError::NotFound);
        assert_eq!(classify(EngineError::Status(409)), DockerError::Conflict);
        assert_eq!(classify(EngineError::Status(500)), DockerError::Failed);
        assert_eq!(classify(EngineError::Unreachable), DockerError::Unavailable);
        assert_eq!(classify(EngineError::Unconfirmed), DockerError::Unconfirmed);
    }
}
