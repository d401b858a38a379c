//! The Docker sandbox provider (`nodes` mode). Each allocation is one
//! container plus two volumes. The host owns the container's isolation and
//! labels every resource for the allocation; the adapter decides names,
//! command, mounts and the bootstrap, observes before it acts, and never
//! replays a request.

mod archive;
mod config;
mod identity;
mod mutant;
mod provider;
mod spec;

oac_provider_sdk::export_provider!(provider::DockerProvider {
    requirements: { credential: NotRequired, public_origin: NotRequired },
    checkpoint: "docker_does_not_support_checkpoints",
    observe: supported,
    observe_batch: "docker_observes_one_allocation_at_a_time",
    discover_selection: "node_configuration_has_no_catalog",
    verify_credential: "credentials_not_required",
    configuration: supported,
    with_credential: "credentials_not_required",
    discover_configuration: "node_configuration_has_no_catalog",
});
