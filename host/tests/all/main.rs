//! The host's integration tests, one binary (each binary links wasmtime,
//! so one binary builds and links once). The Docker Engine tests run
//! against `OAC_DOCKER_SOCKET` (`cargo xtask test` starts a private engine
//! when none is given) and print SKIPPED without one, unless
//! `OAC_REQUIRE_DOCKER=1`.

mod support;

mod checkpoint;
mod cli;
mod configuration;
mod credential;
mod declarations;
mod direct;
mod docker_adapter;
mod docker_engine;
mod e2b;
mod evidence;
mod hostile;
mod http;
mod image_inits;
mod isolation;
mod limits;
mod module_graph;
mod node_limits;
mod receipts;
mod registration;
mod settlement;
mod transport;
