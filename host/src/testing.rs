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

/// The component's declaration as it gives it, with its inventory, before
/// the host checks any rule: the contract suite judges each rule on it, so
/// that a declaration the host would refuse still fails the suite's cases
/// by name. Errors (unreadable, wrong digest, no stamp, a call that traps)
/// are the host's load errors.
pub async fn declared(
    runtime: &Runtime,
    registration: &Registration,
    binding: &NodeBinding,
    plugin_dir: &Path,
) -> Result<
    (
        crate::declaration::Inventory,
        Vec<(String, crate::declaration::Decision)>,
    ),
    HostError,
> {
    let loaded = crate::loader::load(runtime, registration, plugin_dir)?;
    let entries = Host::declared(registration, binding, &loaded).await?;
    Ok((loaded.inventory, entries))
}

/// The row of the host's self-test component as a node kind: it exercises
/// every capability and rule. Not a built-in kind (operators never run
/// it): tests build their tables from it, and `cargo xtask build-plugins`
/// stages it in `target/plugins/test-registry.toml` for the CLI's tests.
/// It pins no declaration, so a test may steer the component's.
pub fn steerable_row() -> Registration {
    use crate::registry::{DigestSource, Grants, Mode, Policy};
    Registration {
        kind: "steerable".into(),
        mode: Mode::Nodes,
        component: "steerable.wasm".into(),
        digest: DigestSource::Staged,
        credential_fields: Vec::new(),
        grants: Grants {
            docker: true,
            ..Grants::default()
        },
        policy: Policy::default(),
        node_artifacts: Vec::new(),
        suspension: None,
        unsupported: None,
    }
}

/// The self-test component as a node kind granted microVMs (the
/// `microsandbox` capability) and nothing else.
pub fn steerable_vm_row() -> Registration {
    use crate::registry::Grants;
    Registration {
        kind: "steerable-vm".into(),
        grants: Grants {
            microsandbox: true,
            ..Grants::default()
        },
        ..steerable_row()
    }
}

/// The self-test component as a direct kind: what runs on Core's side, with
/// a credential and durable receipts (and so settlement records).
pub fn steerable_direct_row() -> Registration {
    use crate::registry::{Grants, Mode};
    Registration {
        kind: "steerable-direct".into(),
        mode: Mode::Direct,
        credential_fields: vec!["api_key".into()],
        grants: Grants {
            receipts: true,
            ..Grants::default()
        },
        ..steerable_row()
    }
}
