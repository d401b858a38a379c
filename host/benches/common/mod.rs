//! What the benches share: the steerable test component (or another staged
//! component) loaded as kinds, and the allocator of the `sandbox-host`
//! binary.

use sandbox_host::capability::docker::policy::{ContainerPolicy, PolicySettings};
use sandbox_host::testing::TestHost;
use sandbox_host::types::Reference;
use sandbox_host::{Host, NodeBinding, Registration, Runtime, registry};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The benches measure the host as the binary runs it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The image id the benches' container policy names.
#[allow(dead_code, reason = "only the scale bench creates containers")]
pub(crate) const POLICY_IMAGE: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// The staged steerable test component under `kind`, steered by its
/// configuration, granted the engine at `socket`; `max_concurrent_calls`
/// replaces the registry row's own.
#[allow(dead_code, reason = "the scale bench chooses its component")]
pub(crate) async fn load_steered(
    runtime: Arc<Runtime>,
    socket: &Path,
    kinds: &[(&str, serde_json::Value)],
    max_concurrent_calls: Option<u32>,
) -> Host {
    load_row(
        runtime,
        builtin_row("steerable"),
        socket,
        kinds,
        max_concurrent_calls,
    )
    .await
}

/// The bench-only `one-request` component (`one_request.wasm`, staged with
/// the others), registered as the steerable kind's row is; its
/// configuration must be `{}` (it reads none).
#[allow(dead_code, reason = "only the scale bench loads it")]
pub(crate) fn one_request_row() -> Registration {
    Registration {
        component: "one_request.wasm".into(),
        ..builtin_row("steerable")
    }
}

/// The row of `kind`: a built-in one, or the steerable test kind.
pub(crate) fn builtin_row(kind: &str) -> Registration {
    if kind == "steerable" {
        return sandbox_host::testing::steerable_row();
    }
    registry::builtin()
        .into_iter()
        .find(|row| row.kind == kind)
        .expect("the builtin table has the kind")
}

/// `row`'s component under each of `kinds` (the row renamed to each),
/// granted the engine at `socket`; `max_concurrent_calls` replaces the
/// row's own.
pub(crate) async fn load_row(
    runtime: Arc<Runtime>,
    mut row: Registration,
    socket: &Path,
    kinds: &[(&str, serde_json::Value)],
    max_concurrent_calls: Option<u32>,
) -> Host {
    let settings = PolicySettings {
        image: POLICY_IMAGE.into(),
        network: "none".into(),
        seccomp_profile: PathBuf::new(),
        cpus: 1.0,
        memory_mib: 256,
        pids_limit: 128,
        nested_sandbox: false,
    };
    let policy = ContainerPolicy::new(&settings, r#"{"defaultAction":"SCMP_ACT_ERRNO"}"#.into())
        .expect("policy");
    if let Some(calls) = max_concurrent_calls {
        row.policy.max_concurrent_calls = calls;
    }
    let docker = sandbox_host::capability::docker::Binding {
        socket: Some(socket.to_path_buf()),
        policy: Some(policy),
    };
    kinds
        .iter()
        .fold(
            TestHost::new().on(runtime),
            |host, (kind, configuration)| {
                let binding = NodeBinding {
                    installation_id: "bench".into(),
                    docker: docker.clone(),
                    configuration: configuration.clone(),
                    ..NodeBinding::default()
                };
                let row = Registration {
                    kind: kind.to_string(),
                    ..row.clone()
                };
                host.kind(row, binding)
            },
        )
        .loaded()
        .await
}

/// The allocation `t/e/{allocation}`.
#[allow(dead_code, reason = "the load bench makes no call")]
pub(crate) fn reference(allocation: &str) -> Reference {
    Reference::new("t", "e", allocation)
}

#[allow(unused_imports, reason = "the load bench times nothing one by one")]
pub(crate) use oac_fixtures::timing::{Timings, measuring};
