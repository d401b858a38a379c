//! The Docker sandbox provider (`nodes` mode). Each allocation is one
//! container plus two volumes. The host owns the container's isolation and
//! labels every resource for the allocation; the adapter decides names,
//! command, mounts and the bootstrap, observes before it acts, and never
//! replays a request.

mod archive;
mod config;
mod identity;
mod provider;
mod spec;

oac_provider_sdk::export_provider!(provider::DockerProvider);
