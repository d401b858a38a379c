//! The sandbox-provider plugin host.
//!
//! It loads provider components from one fixed registry table
//! ([`registry::builtin`]), validates each registration before compiling
//! anything, validates each component's operation declaration against the
//! inventory derived from its exports, and runs every operation in a fresh
//! instance under a budget while brokering the component's native calls
//! (Docker Engine, HTTP, logging) through capabilities it polices.

pub mod bindings;
pub mod budget;
pub mod call;
pub mod capability;
pub mod declaration;
pub mod host;
pub mod loader;
pub mod node_config;
pub mod optional;
pub mod provider;
pub mod registry;
pub mod state;
pub mod transport;

pub use budget::Budget;
pub use host::{Connect, Host, HostError};
pub use loader::Runtime;

pub use registry::{NodeBinding, Registration};
