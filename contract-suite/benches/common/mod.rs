//! What the suite's benches share: the builtin `docker` kind loaded against
//! an engine, and a node serving a host over a Unix socket with the
//! Core-side proxy connected to it.

use contract_suite::fixtures::Engine;
use sandbox_host::node_config::{Listen, Token};
use sandbox_host::registry::{self, Mode};
use sandbox_host::testing::TestHost;
use sandbox_host::transport::{Endpoint, Node, NodeClient, RemoteProvider, ServeError};
use sandbox_host::{Budget, Host, NodeBinding, Runtime};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The benches run the host with the `sandbox-host` binary's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The kind both benches load.
pub(crate) const KIND: &str = "docker";
const TOKEN: &str = "suite-bench-token-0123456789";

#[allow(
    unused_imports,
    reason = "only the transport bench reads the staged files"
)]
pub(crate) use sandbox_host::testing::plugin_dir;

/// A real engine's socket (`OAC_DOCKER_SOCKET`) and the assembled seccomp
/// profile its containers run under (from `../shared/seccomp-upstream`, or
/// `OAC_SECCOMP_UPSTREAM`), or what is missing.
pub(crate) fn real_engine() -> Result<(PathBuf, String), String> {
    let socket = std::env::var_os("OAC_DOCKER_SOCKET")
        .map(PathBuf::from)
        .ok_or("no Docker Engine (set OAC_DOCKER_SOCKET; see scripts/docker-engine.sh)")?;
    let profile = oac_fixtures::seccomp_profile::runtime_profile()?;
    Ok((socket, profile.to_string()))
}

/// Removes every container and volume of `installation` from a real
/// engine, such as a run that stopped half-way left behind (its
/// allocations would otherwise be taken). Fakes start empty.
pub(crate) async fn sweep(engine: &Engine, installation: &str) {
    let Engine::Real { client, .. } = engine else {
        return;
    };
    let (containers, volumes) = engine.resources_of(installation).await;
    let force = bollard::query_parameters::RemoveContainerOptionsBuilder::default()
        .force(true)
        .build();
    for container in containers {
        // Listed names carry the engine's leading `/`.
        let name = container.trim_start_matches('/');
        let _ = client.remove_container(name, Some(force.clone())).await;
    }
    for volume in volumes {
        let _ = client
            .remove_volume(
                &volume,
                None::<bollard::query_parameters::RemoveVolumeOptions>,
            )
            .await;
    }
}

/// The suite's docker profile: the `docker` adapter's configuration the
/// benches' hosts and nodes load.
pub(crate) fn docker_configuration() -> serde_json::Value {
    let profile = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("profiles/docker.json"),
    )
    .expect("docker profile");
    serde_json::from_str(&profile).expect("profile is JSON")
}

/// The builtin `docker` row loaded with the suite's docker profile, as
/// `installation`, against `engine` under a policy of `image` and
/// `seccomp_profile`.
pub(crate) async fn docker_host(
    engine: &Engine,
    image: &str,
    seccomp_profile: &str,
    installation: &str,
) -> Host {
    docker_host_at(
        engine.socket().map(std::path::Path::to_path_buf),
        image.to_string(),
        seccomp_profile.to_string(),
        installation.to_string(),
    )
    .await
}

/// [`docker_host`] against the engine at `docker_socket`, owning its
/// arguments so that it can be loaded on another runtime (its Engine
/// client's connections then belong to that runtime).
pub(crate) async fn docker_host_at(
    docker_socket: Option<PathBuf>,
    image: String,
    seccomp_profile: String,
    installation: String,
) -> Host {
    let mut table: Vec<_> = registry::builtin()
        .into_iter()
        .filter(|row| row.kind == KIND)
        .collect();
    assert_eq!(table.len(), 1, "the registry has a docker row");
    assert_eq!(table[0].mode, Mode::Nodes);
    let policy =
        contract_suite::harness::container_policy(&image, &seccomp_profile).expect("policy");
    let binding = NodeBinding {
        installation_id: installation,
        docker: sandbox_host::capability::docker::Binding {
            socket: docker_socket,
            policy: Some(policy),
        },
        configuration: docker_configuration(),
        ..NodeBinding::default()
    };
    TestHost::one(table.remove(0), binding)
        .on(Runtime::new().expect("wasmtime engine"))
        .loaded()
        .await
}

/// A node serving a host on a Unix socket, and the proxy Core would use.
pub(crate) struct ServedNode {
    /// The `docker` kind through the node.
    pub remote: Arc<RemoteProvider>,
    /// The node's client, for calls with no operation behind them.
    #[allow(
        dead_code,
        reason = "only the transport bench calls without an operation"
    )]
    pub client: NodeClient,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<Result<(), ServeError>>,
    _dir: tempfile::TempDir,
}

impl ServedNode {
    /// Serves `host` (with up to 64 operations in flight) on `runtime`
    /// (its connections and the operations they run included) and
    /// connects the proxy, whose sessions belong to the caller's runtime,
    /// once the node answers.
    pub(crate) async fn start(
        host: Arc<Host>,
        budget: Budget,
        runtime: &tokio::runtime::Handle,
    ) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("node.sock");
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, TOKEN).expect("token");
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
        let token = Token::read(&token_file).expect("token");
        let registry = host.loaded_registry();
        let node = Node::new(host, token.clone(), 64);
        let listen = Listen {
            unix: Some(socket.clone()),
            ..Listen::default()
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = runtime.spawn(async move {
            node.serve(&listen, async {
                let _ = stopped.await;
            })
            .await
        });
        let client = NodeClient::new(&Endpoint::Unix(socket), token.expose()).expect("client");
        let mut remote = None;
        for _ in 0..200 {
            if let Ok(proxy) =
                RemoteProvider::connect(client.clone(), &registry, KIND, budget).await
            {
                remote = Some(proxy);
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Self {
            remote: Arc::new(remote.expect("the node serves")),
            client,
            stop: Some(stop),
            served,
            _dir: dir,
        }
    }

    /// Stops the node and waits for it to finish serving.
    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.served)
            .await
            .expect("server task")
            .expect("served");
    }
}
