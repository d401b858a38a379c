//! The sandbox-provider plugin host.
//!
//! It loads provider components from one explicit registry table (the
//! built-in rows, [`registry::builtin`], and an operator's registry file,
//! [`registry::Registry`]), validates each registration before compiling
//! anything, validates each component's operation declaration against the
//! inventory derived from its exports, and runs every operation in a fresh
//! instance under a budget while brokering the component's native calls
//! (Docker Engine, HTTP, logging) through capabilities it polices.
//!
//! Core calls a loaded [`Kind`] through the provider interface of
//! [`oac_provider_api`] (re-exported as [`provider`] and [`types`]), the same
//! interface a kind served by a node has ([`transport::RemoteProvider`]).

pub mod binding;
mod bindings;
mod call;
pub mod capability;
pub mod compile_cache;
mod convert;
pub(crate) mod credential;
pub mod declaration;
mod exports;
pub mod host;
mod kind;
pub mod loader;
pub mod node_config;
pub mod registry;
mod settlement;
mod state;
#[doc(hidden)]
pub mod testing;
pub mod transport;
mod turns;

pub use binding::NodeBinding;
pub use capability::receipts::{ReceiptStore, ReceiptStoreError};
pub use host::{Connect, Host, HostError};
pub use kind::Kind;
pub use loader::Runtime;
pub use oac_contract as contract;
pub use oac_provider_api::{Budget, input, police, provider, types};
pub use registry::Registration;
