//! The Docker sandbox provider (`nodes` mode). Each allocation is one
//! hardened container plus two volumes, all carrying the four ownership
//! labels. Every operation observes before it acts, checks ownership of
//! every resource before touching any, and never replays a request.

mod archive;
mod config;
mod identity;
mod provider;
mod spec;

oac_provider_sdk::export_provider!(provider::DockerProvider);
