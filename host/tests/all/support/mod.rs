//! Shared helpers for the host's tests: the staged test component, registry
//! rows around it, container policies, and the fixtures' fake engine.

#![allow(dead_code, missing_docs)]

use sandbox_host::capability::docker::policy::{ContainerPolicy, PolicySettings};
/// The provider interface, so tests call a loaded kind's operations.
#[allow(unused_imports)]
pub(crate) use sandbox_host::provider::{
    CheckpointProvider, ConfigurationProvider, SandboxProvider,
};
use sandbox_host::{NodeBinding, Registration};
use std::path::PathBuf;
use std::sync::Arc;

pub(crate) const INSTALLATION: &str = "inst-test";

pub(crate) mod cli;
pub(crate) mod engine;
pub(crate) mod node;
pub(crate) mod proxy;
pub(crate) use engine::{
    create_foreign_volume, engine_client, engine_sh, remove_containers, remove_volume, unique,
};
pub(crate) use node::{EngineNode, TestNode};
pub(crate) use oac_fixtures::docker_engine::FakeDockerEngine;
pub(crate) use oac_fixtures::runtime_image;
pub(crate) use sandbox_host::testing::{TestHost, plugin_dir};

/// The Docker Engine the real-engine tests use, from `OAC_DOCKER_SOCKET`.
/// Without one they print SKIPPED and pass, unless `OAC_REQUIRE_DOCKER=1`.
pub(crate) fn engine_socket(test: &str) -> Option<PathBuf> {
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

/// A budget of `ms` milliseconds.
pub(crate) fn budget(ms: u32) -> sandbox_host::Budget {
    sandbox_host::Budget::from_millis(ms).expect("budget")
}

/// The allocation most tests serve: tenant `t`, environment `e`,
/// allocation `a`.
pub(crate) fn reference() -> sandbox_host::types::Reference {
    sandbox_host::types::Reference {
        tenant_id: "t".into(),
        environment_id: "e".into(),
        allocation_id: "a".into(),
    }
}

/// The steerable test row under another kind name.
pub(crate) fn steerable(kind: &str) -> Registration {
    Registration {
        kind: kind.into(),
        ..sandbox_host::testing::steerable_row()
    }
}

/// The assembled seccomp profile without nesting (from the upstream copy
/// beside the repo, or `OAC_SECCOMP_UPSTREAM`).
pub(crate) fn seccomp_profile() -> String {
    seccomp_profile_for(false)
}

/// The assembled profile for a policy with or without `nested_sandbox`.
pub(crate) fn seccomp_profile_for(nested_sandbox: bool) -> String {
    let profile = if nested_sandbox {
        oac_fixtures::seccomp_profile::nested_profile()
    } else {
        oac_fixtures::seccomp_profile::runtime_profile()
    };
    profile
        .expect("upstream seccomp profile beside the repository")
        .to_string()
}

/// The test runtime image's id, imported once per test binary.
pub(crate) async fn runtime_image_id(engine: &bollard::Docker) -> String {
    static IMAGE: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    IMAGE
        .get_or_init(async || runtime_image::import(engine).await.expect("runtime image"))
        .await
        .clone()
}

/// The image of [`policy`] when a test runs no container.
pub(crate) const NO_IMAGE: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000001";
/// A deny-by-default seccomp profile, for engines that never apply it.
pub(crate) const SMALL_SECCOMP: &str = r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]}"#;

/// A container policy for `image` with `seccomp` (0.5 CPU, 256 MiB, 128
/// processes, no network), optionally for nested sandboxes.
pub(crate) fn policy_with(image: &str, seccomp: &str, nested_sandbox: bool) -> ContainerPolicy {
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
pub(crate) fn binding(socket: Option<PathBuf>, configuration: serde_json::Value) -> NodeBinding {
    NodeBinding {
        installation_id: INSTALLATION.into(),
        docker: sandbox_host::capability::docker::Binding {
            policy: socket
                .is_some()
                .then(|| policy_with(NO_IMAGE, SMALL_SECCOMP, false)),
            socket,
        },
        configuration,
        credential: None,
        receipts: None,
        microsandbox: Default::default(),
        http_test_network: None,
        hook: None,
    }
}

/// Steerable kinds, each steered by its configuration, all granted the
/// Docker Engine at `socket`.
pub(crate) fn steered(socket: &std::path::Path, kinds: &[(&str, serde_json::Value)]) -> TestHost {
    kinds
        .iter()
        .fold(TestHost::new(), |host, (kind, configuration)| {
            host.kind(
                steerable(kind),
                binding(Some(socket.to_path_buf()), configuration.clone()),
            )
        })
}

/// The fixtures' stateful fake Docker Engine as these tests use it: with
/// its socket at hand and the host's construction check (`GET /version`)
/// left out of what it recorded.
pub(crate) struct FakeEngine {
    pub socket: PathBuf,
    engine: FakeDockerEngine,
}

impl std::ops::Deref for FakeEngine {
    type Target = FakeDockerEngine;
    fn deref(&self) -> &FakeDockerEngine {
        &self.engine
    }
}

impl FakeEngine {
    pub(crate) async fn start() -> Self {
        let engine = FakeDockerEngine::start().await.expect("fake engine");
        Self {
            socket: engine.socket().to_path_buf(),
            engine,
        }
    }

    /// A fake engine that reports `api` as its API version.
    pub(crate) async fn start_with_api(api: &str) -> Self {
        let engine = Self::start().await;
        engine.report_api_version(api);
        engine
    }

    /// Every request but the construction check, as `METHOD /path`.
    pub(crate) fn recorded(&self) -> Vec<String> {
        self.engine
            .requests()
            .into_iter()
            .filter(|request| request != "GET /version")
            .collect()
    }

    /// Seeds a volume labelled for another installation.
    pub(crate) fn seed_foreign_volume(&self, name: &str) {
        self.engine.insert_volume(name, foreign_labels());
    }
}

/// The labels of a resource another installation owns.
pub(crate) fn foreign_labels() -> std::collections::BTreeMap<String, String> {
    std::collections::BTreeMap::from([(
        "io.oac.installation".to_string(),
        "someone-else".to_string(),
    )])
}

/// Writes `contents` to `path`, readable by its owner alone (a token or a
/// key file, which the host refuses otherwise).
pub(crate) fn write_private(path: &std::path::Path, contents: impl AsRef<[u8]>) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, contents).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

/// A steerable kind's grants: HTTP to `origin` alone, its credential sent
/// there too, and nothing else.
pub(crate) fn http_grants(origin: &str) -> sandbox_host::registry::Grants {
    sandbox_host::registry::Grants {
        docker: false,
        http_origins: vec![origin.to_string()],
        credential_origins: vec![origin.to_string()],
        receipts: false,
        microsandbox: false,
        http_endpoint: None,
    }
}

/// Serves `router` on a loopback port for the rest of the test; its origin
/// (`http://127.0.0.1:<port>`).
pub(crate) async fn serve_on_loopback(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    origin
}

/// What a recording server has written down, in order.
pub(crate) type Recorded = Arc<std::sync::Mutex<Vec<String>>>;

/// A loopback server that hands every request, with what it has recorded,
/// to `answer`; its origin and the record.
pub(crate) async fn recording_server<F, A>(answer: F) -> (String, Recorded)
where
    F: Fn(axum::extract::Request, Recorded) -> A + Clone + Send + Sync + 'static,
    A: Future<Output = axum::response::Response> + Send + 'static,
{
    let seen = Recorded::default();
    let recorded = seen.clone();
    let handler = move |request: axum::extract::Request| answer(request, recorded.clone());
    let origin = serve_on_loopback(axum::Router::new().fallback(handler)).await;
    (origin, seen)
}

/// Serves HTTP/1 (upgrades included) for the rest of the test on a Unix
/// socket `name` in a directory of its own, `answer` answering each
/// request: the socket and its directory.
pub(crate) fn serve_unix<F, A, B, E>(name: &str, answer: F) -> (PathBuf, tempfile::TempDir)
where
    F: Fn(hyper::Request<hyper::body::Incoming>) -> A + Clone + Send + 'static,
    A: Future<Output = Result<hyper::Response<B>, E>> + Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join(name);
    let listener = tokio::net::UnixListener::bind(&socket).expect("bind");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = hyper::service::service_fn(answer.clone());
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .with_upgrades()
                    .await;
            });
        }
    });
    (socket, dir)
}

/// A loopback address no one listens on (yet).
pub(crate) fn free_address() -> std::net::SocketAddr {
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
    free.local_addr().expect("address")
}

/// A node token file in `dir` holding `token`, as the node reads it.
pub(crate) fn token_in(dir: &std::path::Path, token: &str) -> sandbox_host::node_config::Token {
    let path = dir.join("token");
    write_private(&path, token);
    sandbox_host::node_config::Token::read(&path).expect("token")
}

/// Everything the server sends on `stream` until it closes it, or `None`
/// if it is still open after `patience`.
pub(crate) async fn until_closed(
    stream: &mut (impl tokio::io::AsyncRead + Unpin),
    patience: std::time::Duration,
) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut answer = Vec::new();
    match tokio::time::timeout(patience, stream.read_to_end(&mut answer)).await {
        Ok(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
        Err(_) => None,
    }
}

/// One HTTP message as text: its head, then as much body as it announces
/// (or what came before the stream ended).
pub(crate) async fn read_message(stream: &mut (impl tokio::io::AsyncRead + Unpin)) -> String {
    use tokio::io::AsyncReadExt;
    let mut seen = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        let text = String::from_utf8_lossy(&seen).to_string();
        if let Some(head_end) = text.find("\r\n\r\n") {
            let length = text[..head_end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if seen.len() >= head_end + 4 + length {
                return text;
            }
        }
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&seen).to_string(),
            Ok(read) => seen.extend_from_slice(&buffer[..read]),
        }
    }
}

/// Sends `request` on `stream`: all the server answered before it closed
/// the connection, which it must within 5 s.
pub(crate) async fn answered_and_closed(
    stream: &mut tokio::net::UnixStream,
    request: &[u8],
) -> String {
    use tokio::io::AsyncWriteExt;
    stream.write_all(request).await.expect("write");
    until_closed(stream, std::time::Duration::from_secs(5))
        .await
        .expect("the server answers and closes")
}

/// A receipt store in a directory of its own: the test keeps the directory
/// as long as it uses the store.
pub(crate) fn receipt_store() -> (tempfile::TempDir, sandbox_host::ReceiptStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = sandbox_host::ReceiptStore::open(dir.path()).expect("store");
    (dir, store)
}
