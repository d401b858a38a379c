//! The host's test seams, for the contract suite and the host's own tests;
//! never used in production (no configuration file reaches them). Through
//! a binding's `hook` a test sees every capability call and native
//! request and may inject one fault per request; through its
//! `http_test_network` a TLS fixture stands in for a vendor; and
//! [`load_unpoliced`] lets every answer through as the component gave it,
//! so the suite judges the component itself. [`DirectEngine`] is the
//! host's Engine transport alone, the floor benchmarks compare with.
//! [`TestHost`] and its companions load hosts from the staged components
//! for every test and bench crate; they panic on what a test cannot go on
//! without.

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

/// Where `cargo xtask build-plugins` staged the components: the directory
/// `OAC_PLUGIN_DIR` names, or the workspace's `target/plugins`.
pub fn plugin_dir() -> std::path::PathBuf {
    std::env::var_os("OAC_PLUGIN_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins")
        })
}

/// One engine (and compile cache) for a whole test or bench process.
pub fn runtime() -> Arc<Runtime> {
    static RUNTIME: std::sync::OnceLock<Arc<Runtime>> = std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| Runtime::new().expect("a wasmtime engine"))
        .clone()
}

/// A host for a test or a bench, built kind by kind from the staged
/// components: the one way the host's tests, both crates' benches and the
/// suite's own tests load a table.
#[derive(Default)]
pub struct TestHost {
    table: Vec<Registration>,
    bindings: BTreeMap<String, NodeBinding>,
    runtime: Option<Arc<Runtime>>,
}

impl TestHost {
    /// A host of no kinds yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One kind, `registration` on `binding`.
    pub fn one(registration: Registration, binding: NodeBinding) -> Self {
        Self::new().kind(registration, binding)
    }

    /// `table` with `bindings` (some may be missing, to test that).
    pub fn table(table: &[Registration], bindings: &BTreeMap<String, NodeBinding>) -> Self {
        Self {
            table: table.to_vec(),
            bindings: bindings.clone(),
            runtime: None,
        }
    }

    /// One more kind, `registration` on `binding`.
    pub fn kind(mut self, registration: Registration, binding: NodeBinding) -> Self {
        self.bindings.insert(registration.kind.clone(), binding);
        self.table.push(registration);
        self
    }

    /// Loads on `runtime` instead of the process's shared [`runtime`] (an
    /// Engine client's connections belong to the runtime it was loaded on).
    pub fn on(mut self, runtime: Arc<Runtime>) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Loads the host from [`plugin_dir`], connecting its capabilities or not.
    pub async fn load(self, connect: Connect) -> Result<Host, HostError> {
        Host::load(
            self.runtime.unwrap_or_else(runtime),
            &self.table,
            &plugin_dir(),
            &self.bindings,
            connect,
        )
        .await
    }

    /// Loads and connects the host, which must succeed.
    pub async fn loaded(self) -> Host {
        self.load(Connect::Capabilities)
            .await
            .expect("host loads and connects (run `cargo xtask build-plugins` first)")
    }
}

/// A Create's input for `reference` whose daemon credential is
/// `credential`, with no network: what tests and benches create with when
/// the rest of the bootstrap does not matter to them.
pub fn bootstrap(reference: crate::types::Reference, credential: &str) -> crate::types::Bootstrap {
    crate::types::Bootstrap {
        reference,
        session_id: "test-session".into(),
        device_id: "test-device".into(),
        core_url: "https://core.invalid".into(),
        daemon_credential: credential.into(),
        harness: "test-harness".into(),
        network_access: crate::types::NetworkAccess::Disabled,
        allowed_domains: Vec::new(),
    }
}
