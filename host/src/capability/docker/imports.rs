//! The component's `docker` imports: each function a broker call bound to
//! the call's allocations and deadline, shown to the boundary's hook first
//! (before any policy decision).

use super::{DockerCall, Fresh, ProvenContainers};
use crate::bindings::oac::sandbox_provider::docker;
use crate::capability::Call;
use crate::capability::boundary::{Effect, ImportCall};

/// What one call holds of the Docker capability: the containers it has
/// proven its own (inspected once per call) and what it made that nothing
/// has run in yet (uploads go only there).
#[derive(Default)]
pub(crate) struct State {
    proven: ProvenContainers,
    fresh: Fresh,
}

/// What a `docker` import sees of its call.
pub(crate) struct View<'a> {
    pub(crate) call: &'a Call,
    pub(crate) state: &'a mut State,
}

linked_through_view!(Docker, docker);

impl View<'_> {
    /// The Docker broker bound to this call's allocations and deadline,
    /// after showing the hook which function the component called on which
    /// resource (before any policy decision). A pure call (configuration)
    /// is denied everything; a change asked for in a call that may only
    /// read is invalid before any request.
    fn docker(
        &self,
        function: &'static str,
        target: &str,
        effect: Effect,
    ) -> Result<DockerCall<'_>, docker::DockerError> {
        let call = self.call;
        let broker = call
            .capabilities
            .docker
            .as_ref()
            .ok_or_else(|| super::refused("not_granted", docker::DockerError::Denied))?;
        broker.note_call(ImportCall {
            capability: "docker",
            function,
            target,
            effect,
        });
        if !call.scope.may_reach() {
            return Err(super::refused(
                "pure_call_reaches_nothing",
                docker::DockerError::Denied,
            ));
        }
        if effect != Effect::Reads && !call.scope.may_change() {
            return Err(super::refused(
                "reading_call_changes_nothing",
                docker::DockerError::Invalid,
            ));
        }
        Ok(broker.call(
            &call.scope,
            call.deadline,
            &call.in_flight,
            &self.state.proven,
            &self.state.fresh,
        ))
    }
}

impl Call {
    /// Whether the host sees anything of the call's allocation left on the
    /// engine (a kind without Docker: nothing it can see), within the
    /// call's deadline.
    pub(crate) fn allocation_left(&self) -> impl Future<Output = bool> + Send + 'static {
        let (capabilities, scope, deadline, in_flight) = (
            self.capabilities.clone(),
            self.scope.clone(),
            self.deadline,
            self.in_flight.clone(),
        );
        async move {
            let Some(broker) = &capabilities.docker else {
                return false;
            };
            let (proven, fresh) = Default::default();
            broker
                .call(&scope, deadline, &in_flight, &proven, &fresh)
                .anything_left()
                .await
        }
    }
}

impl docker::Host for View<'_> {
    async fn names(
        &mut self,
        allocation: docker::Reference,
    ) -> Result<docker::AllocationNames, docker::DockerError> {
        let reference = allocation.into();
        let names = self.docker("names", "", Effect::Reads)?.names(&reference)?;
        Ok(docker::AllocationNames {
            container: names.container,
            volumes: names
                .volumes
                .into_iter()
                .map(|(role, name)| docker::VolumeName { role, name })
                .collect(),
        })
    }
    async fn version(&mut self) -> Result<docker::EngineVersion, docker::DockerError> {
        self.docker("version", "", Effect::Reads)?.version().await
    }
    async fn info(&mut self) -> Result<docker::EngineInfo, docker::DockerError> {
        self.docker("info", "", Effect::Reads)?.info().await
    }
    async fn runtime_image(&mut self) -> Result<docker::ImageSummary, docker::DockerError> {
        self.docker("runtime-image", "", Effect::Reads)?
            .runtime_image()
            .await
    }
    async fn container_inspect(
        &mut self,
        container: String,
    ) -> Result<docker::ContainerSummary, docker::DockerError> {
        self.docker("container-inspect", &container, Effect::Reads)?
            .container_inspect(&container)
            .await
    }
    async fn container_list(&mut self) -> Result<Vec<String>, docker::DockerError> {
        self.docker("container-list", "", Effect::Reads)?
            .container_list()
            .await
    }
    async fn container_create(
        &mut self,
        spec: docker::ContainerSpec,
    ) -> Result<String, docker::DockerError> {
        // A credential (the Create's daemon credential) travels only in a
        // file or on stdin, never in what an inspection or `ps` shows.
        let shown = spec.cmd.iter().chain(&spec.env).chain(&spec.working_dir);
        if self.call.carries_secret(shown) {
            self.docker("container-create", &spec.name, Effect::Creates)?;
            return Err(docker::DockerError::Invalid);
        }
        self.docker("container-create", &spec.name, Effect::Creates)?
            .container_create(&spec)
            .await
    }
    async fn container_start(&mut self, container: String) -> Result<(), docker::DockerError> {
        self.docker("container-start", &container, Effect::Changes)?
            .container_start(&container)
            .await
    }
    async fn container_remove(
        &mut self,
        container: String,
        force: bool,
    ) -> Result<(), docker::DockerError> {
        self.docker("container-remove", &container, Effect::Removes)?
            .container_remove(&container, force)
            .await
    }
    async fn container_stats(
        &mut self,
        container: String,
    ) -> Result<docker::StatsReading, docker::DockerError> {
        self.docker("container-stats", &container, Effect::Reads)?
            .container_stats(&container)
            .await
    }
    async fn volume_inspect(&mut self, volume: String) -> Result<(), docker::DockerError> {
        self.docker("volume-inspect", &volume, Effect::Reads)?
            .volume_inspect(&volume)
            .await
    }
    async fn volume_list(&mut self) -> Result<Vec<String>, docker::DockerError> {
        self.docker("volume-list", "", Effect::Reads)?
            .volume_list()
            .await
    }
    async fn volume_create(&mut self, volume: String) -> Result<(), docker::DockerError> {
        self.docker("volume-create", &volume, Effect::Creates)?
            .volume_create(&volume)
            .await
    }
    async fn volume_remove(&mut self, volume: String) -> Result<(), docker::DockerError> {
        self.docker("volume-remove", &volume, Effect::Removes)?
            .volume_remove(&volume)
            .await
    }
    async fn archive_upload(
        &mut self,
        container: String,
        path: String,
        archive: Vec<u8>,
    ) -> Result<(), docker::DockerError> {
        self.docker("archive-upload", &container, Effect::Changes)?
            .archive_upload(&container, &path, archive)
            .await
    }
    async fn exec(
        &mut self,
        container: String,
        spec: docker::ExecSpec,
    ) -> Result<docker::ExecOutput, docker::DockerError> {
        if self
            .call
            .carries_secret(spec.args.iter().chain(&spec.working_dir))
        {
            self.docker("exec", &container, Effect::Changes)?;
            return Err(docker::DockerError::Invalid);
        }
        self.docker("exec", &container, Effect::Changes)?
            .exec(&container, &spec)
            .await
    }
}
