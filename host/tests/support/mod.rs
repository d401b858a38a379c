//! Shared helpers for the host's tests and benchmarks: the staged test
//! component, registry rows around it, and a recording fake Docker Engine.

#![allow(dead_code, missing_docs)]

use sandbox_host::capability::docker::policy::{ContainerPolicy, PolicySettings};
use sandbox_host::host::Connect;
/// The provider interface, so tests call a loaded kind's operations.
#[allow(unused_imports)]
pub use sandbox_host::provider::{CheckpointProvider, ConfigurationProvider, SandboxProvider};
use sandbox_host::{Host, HostError, NodeBinding, Registration, Runtime};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

pub const INSTALLATION: &str = "inst-test";

pub mod proxy;
#[path = "../../../contract-suite/src/fixtures/runtime_image.rs"]
pub mod runtime_image;

/// The Docker Engine the real-engine tests use, from `OAC_DOCKER_SOCKET`.
/// Without one they print SKIPPED and pass, unless `OAC_REQUIRE_DOCKER=1`.
pub fn engine_socket(test: &str) -> Option<PathBuf> {
    match std::env::var_os("OAC_DOCKER_SOCKET") {
        Some(socket) => Some(PathBuf::from(socket)),
        None if std::env::var("OAC_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!("{test}: OAC_REQUIRE_DOCKER=1 but OAC_DOCKER_SOCKET is not set")
        }
        None => {
            eprintln!(
                "SKIPPED {test}: no Docker Engine (set OAC_DOCKER_SOCKET; see scripts/docker-engine.sh)"
            );
            None
        }
    }
}

/// Where `cargo xtask build-plugins` staged the components.
pub fn plugin_dir() -> PathBuf {
    std::env::var_os("OAC_PLUGIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins"))
}

/// One engine (and compile cache) for the whole test binary.
pub fn runtime() -> Arc<Runtime> {
    static RUNTIME: OnceLock<Arc<Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| Runtime::new().expect("engine"))
        .clone()
}

/// The builtin steerable row under another kind name.
pub fn steerable(kind: &str) -> Registration {
    let row = sandbox_host::registry::builtin()
        .into_iter()
        .find(|row| row.kind == "steerable");
    Registration {
        kind: kind.into(),
        ..row.expect("the builtin table has the steerable kind")
    }
}

/// The assembled seccomp profile (from the upstream copy beside the repo,
/// or `OAC_SECCOMP_UPSTREAM`).
pub fn seccomp_profile() -> String {
    let dir = std::env::var_os("OAC_SECCOMP_UPSTREAM")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/seccomp-upstream")
        });
    let upstream = std::fs::read(dir.join("moby-default-65adc7e.json"))
        .expect("upstream seccomp profile beside the repository");
    oac_seccomp::assemble(&upstream)
        .expect("pinned profile")
        .to_string()
}

/// The test runtime image's id, imported once per test binary.
pub async fn runtime_image_id(engine: &bollard::Docker) -> String {
    static IMAGE: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    IMAGE
        .get_or_init(async || runtime_image::import(engine).await.expect("runtime image"))
        .await
        .clone()
}

/// The image of [`policy`] when a test runs no container.
pub const NO_IMAGE: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000001";
/// A deny-by-default seccomp profile, for engines that never apply it.
pub const SMALL_SECCOMP: &str = r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]}"#;

/// A container policy for `image` with `seccomp` (0.5 CPU, 256 MiB, 128
/// processes, no network), optionally for nested sandboxes.
pub fn policy_with(image: &str, seccomp: &str, nested_sandbox: bool) -> ContainerPolicy {
    let settings = PolicySettings {
        image: image.into(),
        network: "none".into(),
        seccomp_profile: PathBuf::new(),
        cpus: 0.5,
        memory_mib: 256,
        pids_limit: 128,
        nested_sandbox,
    };
    ContainerPolicy::new(&settings, seccomp.into()).expect("a valid test policy")
}

/// A node binding steering the component with `configuration`; with a
/// socket, under a policy whose image need not exist.
pub fn binding(socket: Option<PathBuf>, configuration: serde_json::Value) -> NodeBinding {
    NodeBinding {
        installation_id: INSTALLATION.into(),
        container_policy: socket
            .is_some()
            .then(|| policy_with(NO_IMAGE, SMALL_SECCOMP, false)),
        docker_socket: socket,
        configuration,
        credential: None,
        hook: None,
    }
}

/// Loads one kind.
pub async fn load_one(
    registration: Registration,
    binding: NodeBinding,
    connect: Connect,
) -> Result<Host, HostError> {
    let bindings = BTreeMap::from([(registration.kind.clone(), binding)]);
    Host::load(
        runtime(),
        &[registration],
        &plugin_dir(),
        &bindings,
        connect,
    )
    .await
}

/// Loads steerable kinds, each steered by its configuration, all granted
/// the Docker Engine at `socket`.
pub async fn load_steered(socket: &std::path::Path, kinds: &[(&str, serde_json::Value)]) -> Host {
    let table: Vec<_> = kinds.iter().map(|(kind, _)| steerable(kind)).collect();
    let bindings = kinds
        .iter()
        .map(|(kind, configuration)| {
            (
                kind.to_string(),
                binding(Some(socket.to_path_buf()), configuration.clone()),
            )
        })
        .collect();
    Host::load(
        runtime(),
        &table,
        &plugin_dir(),
        &bindings,
        Connect::Capabilities,
    )
    .await
    .expect("host loads and connects to the engine (run `cargo xtask build-plugins` first)")
}

/// A fake Docker Engine on a Unix socket that answers `/version`, serves
/// volumes labelled for a foreign installation, refuses the rest, and
/// records every request except `/version`.
pub struct FakeEngine {
    pub socket: PathBuf,
    pub requests: Arc<Mutex<Vec<String>>>,
    /// Every request's path and query as sent, version prefix included.
    pub raw: Arc<Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

impl FakeEngine {
    pub async fn start() -> Self {
        Self::start_with_api("1.45").await
    }

    /// A fake engine that reports `api` as its API version.
    pub async fn start_with_api(api: &'static str) -> Self {
        use axum::extract::Request;
        use axum::http::StatusCode;
        use axum::response::IntoResponse;
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("engine.sock");
        let requests: Arc<Mutex<Vec<String>>> = Arc::default();
        let raw: Arc<Mutex<Vec<String>>> = Arc::default();
        let recorded = requests.clone();
        let recorded_raw = raw.clone();
        let handler = move |request: Request| {
            let recorded = recorded.clone();
            let recorded_raw = recorded_raw.clone();
            async move {
                recorded_raw.lock().expect("lock").push(
                    request
                        .uri()
                        .path_and_query()
                        .map(|p| p.to_string())
                        .unwrap_or_default(),
                );
                let path = request.uri().path().to_string();
                let path = match path.strip_prefix("/v1.") {
                    Some(rest) => rest
                        .split_once('/')
                        .map(|(_, p)| format!("/{p}"))
                        .unwrap_or_default(),
                    None => path,
                };
                if path == "/version" {
                    let body = format!(
                        r#"{{"Version":"26.1.5","ApiVersion":"{api}","MinAPIVersion":"1.24"}}"#
                    );
                    return (StatusCode::OK, [("content-type", "application/json")], body)
                        .into_response();
                }
                recorded
                    .lock()
                    .expect("lock")
                    .push(format!("{} {}", request.method(), path));
                if request.method() == "GET" && path.starts_with("/volumes/") {
                    let name = path.trim_start_matches("/volumes/");
                    let body = format!(
                        r#"{{"Name":"{name}","Driver":"local","Mountpoint":"/x","Scope":"local","Options":{{}},"Labels":{{"io.oac.installation":"someone-else"}}}}"#
                    );
                    return (StatusCode::OK, [("content-type", "application/json")], body)
                        .into_response();
                }
                let body = r#"{"message":"native engine text that must never leak"}"#;
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    [("content-type", "application/json")],
                    body.to_string(),
                )
                    .into_response()
            }
        };
        let router = axum::Router::new().fallback(handler);
        let listener = tokio::net::UnixListener::bind(&socket).expect("bind fake engine");
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Self {
            socket,
            requests,
            raw,
            _dir: dir,
        }
    }

    pub fn recorded(&self) -> Vec<String> {
        self.requests.lock().expect("lock").clone()
    }
}
