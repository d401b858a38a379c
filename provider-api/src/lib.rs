//! The sandbox-provider interface Core programs against.
//!
//! - [`types`]: the contract's values (the same on every side; the node
//!   protocol carries them as they are).
//! - [`provider`]: the interface a provider offers — [`SandboxProvider`],
//!   [`CheckpointProvider`] (only when declared), [`ConfigurationProvider`].
//! - [`declaration`]: a provider's declaration and its rules.
//! - [`input`]: what is accepted from Core as input.
//! - [`police`]: what is accepted from a provider as an answer.
//! - [`secrets`]: finding a credential, in any obvious encoding, in what a
//!   component made.
//! - [`wire`], [`client`], [`proxy`]: the node protocol, its raw client,
//!   and [`RemoteProvider`], a kind served by a node behind the same
//!   interface as a kind loaded in-process by the host.
//! - [`registry`]: the one registry table (built-in rows and an
//!   operator's file) both the node and Core's side read.
//! - [`own_wakes`]: how the client and the node poll a connection and its
//!   exchange in one task without the task waking itself.
//!
//! The contract's facts (operations, bounds, labels, reason codes) are in
//! `oac-contract`, re-exported as [`contract`].

pub mod budget;
pub mod client;
pub mod declaration;
pub mod input;
pub mod own_wakes;
pub mod police;
pub mod provider;
pub mod proxy;
pub mod registry;
pub mod secrets;
pub mod types;
pub mod wire;

pub use budget::{Budget, InvalidBudget};
pub use client::{ClientError, Endpoint, NodeClient, TransportError};
pub use oac_contract as contract;
pub use provider::{CheckpointProvider, ConfigurationProvider, SandboxProvider};
pub use proxy::{ProxyError, RemoteProvider};
