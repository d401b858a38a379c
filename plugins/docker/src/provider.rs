//! Every operation of the Docker provider: observe before acting, act on
//! the ids observations return, never replay. The host checks ownership of
//! every resource and owns every container's isolation.

use crate::config::NodeConfiguration;
use crate::identity::Identity;
use crate::{archive, mutant, spec};
use oac_provider_sdk::capability::docker::{
    ContainerStatus, ContainerSummary, DockerError, ExecSpec,
};
use oac_provider_sdk::prelude::*;

/// The provider: it supports the required operations, observation and
/// its (empty) public configuration; `lib.rs` declares the rest.
pub struct DockerProvider;

/// Everything one call needs: the configuration and the allocation's names.
struct Call {
    configuration: NodeConfiguration,
    identity: Identity,
}

impl Call {
    fn new(allocation: &Reference) -> Result<Self, Error> {
        Ok(Call {
            configuration: NodeConfiguration::parse(&context::configuration())?,
            identity: Identity::of(allocation)?,
        })
    }
}

/// What an observation found for one resource.
enum Found<T> {
    Absent,
    Owned(T),
}

fn unconfirmed(_: DockerError) -> Error {
    Error::ComputeUnconfirmed
}

/// An observation: absent, this allocation's, or (`ownership`) someone else's.
fn observed<T>(answer: Result<T, DockerError>) -> Result<Found<T>, Error> {
    match answer {
        Ok(found) => Ok(Found::Owned(found)),
        Err(DockerError::NotFound) => Ok(Found::Absent),
        Err(DockerError::Ownership) => Err(Error::Ownership),
        Err(error) => Err(unconfirmed(error)),
    }
}

fn observe_container(call: &Call) -> Result<Found<ContainerSummary>, Error> {
    observed(docker::container_inspect(&call.identity.container))
}

fn observe_volume(volume: &str) -> Result<Found<()>, Error> {
    observed(docker::volume_inspect(volume))
}

/// What an observation of the allocation's container shows. An
/// observation never settles a Create: only Create's own answer can.
fn info_of(allocation: Reference, container: &ContainerSummary) -> Info {
    let state = match container.status {
        ContainerStatus::Running => LifecycleState::Running,
        ContainerStatus::Paused => LifecycleState::Paused,
        ContainerStatus::Created | ContainerStatus::Restarting => LifecycleState::Pending,
        _ => LifecycleState::Stopped,
    };
    Info {
        reference: allocation,
        provider_id: Some(container.id.clone()),
        // A container that no longer carries the node's policy (drift in
        // image or limits) blocks readiness; it never triggers cleanup.
        bootstrap_complete: container.status == ContainerStatus::Running && container.conforms,
        state,
        create_settled: false,
    }
}

/// Kill's answer: every resource confirmed gone. It does not settle the
/// original Create, which a Kill cannot know has ended.
fn absent(allocation: Reference) -> Info {
    Info {
        reference: allocation,
        provider_id: None,
        state: LifecycleState::Absent,
        bootstrap_complete: false,
        create_settled: false,
    }
}

/// Create's definite end at a container that does not carry the node's
/// policy: the host left it unstarted, and this Create changes nothing
/// more. Kill removes it.
fn refused_container(allocation: Reference, call: &Call) -> Failure {
    let info = match observe_container(call) {
        Ok(Found::Owned(container)) => Some(Info {
            create_settled: true,
            ..info_of(allocation, &container)
        }),
        _ => None,
    };
    Failure {
        error: Error::Invalid,
        info,
    }
}

pub(crate) fn create(request: &Bootstrap) -> Result<Info, Failure> {
    let allocation = request.reference.clone();
    let call = Call::new(&allocation)?;
    let identity = &call.identity;
    if let Found::Owned(existing) = observe_container(&call)? {
        return Err(Failure {
            error: Error::Exists,
            info: Some(info_of(allocation, &existing)),
        });
    }
    for volume in [&identity.home, &identity.environment] {
        if let Found::Owned(()) = observe_volume(volume)? {
            // Retained volumes without a container: never reuse or clean up silently.
            return Err(Error::Exists.into());
        }
    }
    let refused = |error| match error {
        DockerError::Conflict => Error::Exists,
        DockerError::Ownership => Error::Ownership,
        other => unconfirmed(other),
    };
    for volume in [&identity.home, &identity.environment] {
        docker::volume_create(volume).map_err(refused)?;
    }
    let hosts = call.configuration.hosts()?;
    // The host creates it under the node's policy and verifies it before
    // answering; every follow-up names the id it answered.
    let id = match docker::container_create(&spec::container_spec(identity, hosts)) {
        Ok(id) => id,
        Err(DockerError::Invalid) => return Err(refused_container(allocation, &call)),
        Err(error) => return Err(refused(error).into()),
    };
    let record = archive::bootstrap_record(request);
    docker::archive_upload(&id, "/home", &archive::home_archive(&record)).map_err(unconfirmed)?;
    docker::archive_upload(&id, "/environment", &archive::environment_archive())
        .map_err(unconfirmed)?;
    docker::container_start(&id).map_err(unconfirmed)?;
    Ok(Info {
        reference: allocation,
        provider_id: Some(id),
        state: LifecycleState::Running,
        bootstrap_complete: true,
        create_settled: true,
    })
}

fn get_info(allocation: Reference) -> Result<Info, Error> {
    let call = Call::new(&allocation)?;
    match observe_container(&call)? {
        Found::Owned(container) => Ok(info_of(allocation, &container)),
        Found::Absent => Err(Error::NotFound),
    }
}

fn kill(allocation: Reference) -> Result<Info, Failure> {
    let call = Call::new(&allocation)?;
    let identity = &call.identity;
    // Every ownership check comes before any deletion.
    let container = observe_container(&call)?;
    let home = observe_volume(&identity.home)?;
    let environment = observe_volume(&identity.environment)?;
    if let Found::Owned(container) = container {
        match docker::container_remove(&container.id, true) {
            Ok(()) | Err(DockerError::NotFound) => {}
            Err(error) => return Err(unconfirmed(error).into()),
        }
    }
    for (found, volume) in [(home, &identity.home), (environment, &identity.environment)] {
        if let Found::Owned(()) = found {
            match docker::volume_remove(volume) {
                Ok(()) | Err(DockerError::NotFound) => {}
                Err(error) => return Err(unconfirmed(error).into()),
            }
        }
    }
    // Confirm: all three must now be absent.
    let gone = matches!(observe_container(&call)?, Found::Absent)
        && matches!(observe_volume(&identity.home)?, Found::Absent)
        && matches!(observe_volume(&identity.environment)?, Found::Absent);
    if gone {
        Ok(absent(allocation))
    } else {
        Err(Error::ComputeUnconfirmed.into())
    }
}

fn run_command(allocation: Reference, request: Command) -> Result<CommandResult, Error> {
    let call = Call::new(&allocation)?;
    let container = match observe_container(&call)? {
        Found::Owned(container) => container,
        Found::Absent => return Err(Error::NotFound),
    };
    if container.status != ContainerStatus::Running {
        return Err(Error::RuntimeNotRunning);
    }
    let spec = ExecSpec {
        args: request.args,
        working_dir: Some(
            request
                .directory
                .unwrap_or_else(|| spec::WORKING_DIR.into()),
        ),
        stdin: request.stdin,
        output_limit_bytes: oac_provider_sdk::bounds::MAX_OUTPUT_BYTES,
    };
    let output = docker::exec(&container.id, &spec).map_err(|error| match error {
        DockerError::Invalid => Error::Invalid,
        DockerError::NotFound => Error::NotFound,
        DockerError::Ownership => Error::Ownership,
        _ => Error::CommandUnconfirmed,
    })?;
    match output.exit_code {
        Some(exit_code) if !output.overflowed => Ok(CommandResult {
            stdout: output.stdout,
            stderr: output.stderr,
            exit_code,
        }),
        _ => Err(Error::CommandUnconfirmed),
    }
}

fn observe(of: Target) -> Result<Sample, Error> {
    let call = Call::new(&of.reference)?;
    let container = match observe_container(&call) {
        Ok(Found::Owned(container)) => container,
        Ok(Found::Absent) => return Err(Error::NotFound),
        Err(Error::ComputeUnconfirmed) => return Err(Error::ObservationUnavailable),
        Err(other) => return Err(other),
    };
    if of
        .provider_id
        .as_ref()
        .is_some_and(|id| *id != container.id)
    {
        return Err(Error::NotFound);
    }
    if container.status != ContainerStatus::Running {
        return Err(Error::RuntimeNotRunning);
    }
    let stats =
        docker::container_stats(&container.id).map_err(|_| Error::ObservationUnavailable)?;
    Ok(Sample {
        cpu_seconds: Some(stats.cpu_total_ns as f64 / 1e9),
        memory_bytes: stats.memory_usage_bytes,
        memory_limit_bytes: stats.memory_limit_bytes,
        cpus: container.nano_cpus as f64 / 1e9,
        started_at: container.started_at,
    })
}

impl Sandbox for DockerProvider {
    fn create(request: Bootstrap) -> Result<Info, Failure> {
        mutant::before_create(&request);
        mutant::after_create(create(&request), &request)
    }
    fn get_info(allocation: Reference) -> Result<Info, Error> {
        get_info(allocation).map(mutant::settled)
    }
    fn renew(allocation: Reference) -> Result<Info, Failure> {
        // Docker has no lease: renewing is observing.
        get_info(allocation).map_err(Failure::from)
    }
    fn kill(allocation: Reference) -> Result<Info, Failure> {
        mutant::before_kill(&allocation);
        kill(allocation).map(mutant::settled)
    }
    fn run_command(allocation: Reference, request: Command) -> Result<CommandResult, Error> {
        run_command(allocation, request)
    }
}

impl Observe for DockerProvider {
    fn observe(of: Target) -> Result<Sample, Error> {
        observe(of)
    }
}

/// The public configuration of a node kind is always the empty object.
use oac_provider_sdk::configuration::empty_object;

/// A node kind's configuration: the empty object and no credential (the
/// node's file holds the rest).
fn node_configuration(configuration: &Configuration) -> Result<Configuration, Error> {
    if configuration.credential.is_some() {
        return Err(Error::Invalid);
    }
    Ok(Configuration {
        public: empty_object(&configuration.public)?,
        credential: None,
    })
}

impl ConfigurationAdapter for DockerProvider {
    fn decode_input(
        public: String,
        credential: Option<Credential>,
    ) -> Result<Configuration, Error> {
        node_configuration(&Configuration { public, credential })
    }
    fn encode(configuration: Configuration) -> Result<StoredConfiguration, Error> {
        let configuration = node_configuration(&configuration)?;
        Ok(StoredConfiguration {
            public: configuration.public,
            metadata: "{}".into(),
            secret: None,
        })
    }
    fn decode(stored: StoredConfiguration) -> Result<Configuration, Error> {
        if stored.secret.is_some() {
            return Err(Error::Invalid);
        }
        empty_object(&stored.metadata)?;
        node_configuration(&Configuration {
            public: stored.public,
            credential: None,
        })
    }
    fn normalize(configuration: Configuration) -> Result<Configuration, Error> {
        node_configuration(&configuration)
    }
    fn resolve_change(
        next: Configuration,
        previous: Configuration,
    ) -> Result<Configuration, Error> {
        node_configuration(&previous)?;
        node_configuration(&next)
    }
    fn equal(left: Configuration, right: Configuration) -> Result<bool, Error> {
        Ok(node_configuration(&left)? == node_configuration(&right)?)
    }
}

fn api_at_least_1_45(version: &str) -> bool {
    let mut parts = version.split('.').map(|part| part.parse::<u32>().ok());
    matches!((parts.next(), parts.next()), (Some(Some(major)), Some(Some(minor))) if (major, minor) >= (1, 45))
}

/// Engine reachable, API ≥ 1.45, limits enforced, runtime image present.
fn probe() -> Vec<Diagnostic> {
    if NodeConfiguration::parse(&context::configuration()).is_err() {
        return vec![Diagnostic::ConfigurationInvalid];
    }
    let Ok(version) = docker::version() else {
        return vec![Diagnostic::ProviderUnavailable];
    };
    let mut found = Vec::new();
    if !api_at_least_1_45(&version.api_version) {
        found.push(Diagnostic::HostUnsupported);
    }
    match docker::info() {
        Ok(info) if info.memory_limit && info.cpu_limit => {}
        Ok(_) => found.push(Diagnostic::LimitsUnsupported),
        Err(_) => return vec![Diagnostic::ProviderUnavailable],
    }
    match docker::runtime_image() {
        Ok(_) => {}
        Err(DockerError::NotFound) => found.push(Diagnostic::ImageUnavailable),
        Err(_) => return vec![Diagnostic::ProviderUnavailable],
    }
    found
}

impl Readiness for DockerProvider {
    fn probe() -> Vec<Diagnostic> {
        probe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_configuration_is_only_the_empty_object() {
        assert_eq!(empty_object("{}"), Ok("{}".into()));
        assert_eq!(empty_object(" { } "), Ok("{}".into()));
        for bad in [
            "",
            "[]",
            "null",
            r#"{"credential":"secret"}"#,
            r#"{"image":"x"}"#,
            "{",
        ] {
            assert_eq!(empty_object(bad), Err(Error::Invalid), "{bad:?}");
        }
    }

    #[test]
    fn a_node_configuration_takes_no_credential() {
        let with = |credential: Option<Credential>| Configuration {
            public: "{ }".into(),
            credential,
        };
        assert_eq!(
            node_configuration(&with(None)),
            Ok(Configuration {
                public: "{}".into(),
                credential: None
            })
        );
        assert_eq!(
            node_configuration(&with(Some(Credential {
                handle: 0,
                fields: Vec::new()
            }))),
            Err(Error::Invalid)
        );
    }
}
