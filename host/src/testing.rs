//! The host's test seams, for the contract suite and the host's own tests;
//! never used in production (no configuration file reaches them). Through
//! a binding's `hook` a test sees every capability call and native
//! request and may inject one fault per request; through its
//! `http_test_network` a TLS fixture stands in for a vendor; and
//! [`load_unpoliced`] lets every answer through as the component gave it,
//! so the suite judges the component itself. [`DirectEngine`] is the
//! host's Engine transport alone, the floor benchmarks compare with.

pub use crate::capability::Action;
pub use crate::capability::boundary::{Effect, Fault, ImportCall, NativeHook, NativeRequest};
pub use crate::capability::docker::DirectEngine;
pub use crate::capability::http::TestNetwork;

use crate::binding::NodeBinding;
use crate::host::{Connect, Host, HostError};
use crate::kind::Policing;
use crate::loader::Runtime;
use crate::registry::Registration;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// [`Host::load`] with policing off: every operation reaches the
/// component and its answers come back as it gave them.
pub async fn load_unpoliced(
    runtime: Arc<Runtime>,
    table: &[Registration],
    plugin_dir: &Path,
    bindings: &BTreeMap<String, NodeBinding>,
) -> Result<Host, HostError> {
    Host::load_with(
        runtime,
        table,
        plugin_dir,
        bindings,
        Connect::Capabilities,
        Policing::Off,
    )
    .await
}
