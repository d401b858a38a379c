//! A node serving a loaded host for a test: `TestNode::builder(host)`
//! with what the test changes (token, slots, node set-up, where it
//! listens, where readiness is asked), then `start`, which returns once the
//! node answers. The node stops when its `TestNode` is dropped or stopped.

use sandbox_host::Host;
use sandbox_host::node_config::{Listen, Token};
use sandbox_host::transport::{Endpoint, Node, NodeClient, RemoteProvider, ServeError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A token long enough for the node's rule.
pub(crate) const TEST_TOKEN: &str = "test-node-token-0123456789abcdef";

type Where<T> = Box<dyn FnOnce(&Path) -> Option<T>>;

/// What a test's node is made of, before it starts.
pub(crate) struct TestNodeBuilder {
    host: Arc<Host>,
    token: &'static str,
    max_in_flight: u32,
    set_up: Box<dyn FnOnce(Node) -> Node>,
    listen: Where<Listen>,
    ready: Where<Endpoint>,
}

/// A started node, on a Unix socket in a directory of its own unless the
/// builder said otherwise.
pub(crate) struct TestNode {
    pub(crate) socket: PathBuf,
    pub(crate) token: Token,
    pub(crate) host: Arc<Host>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<Result<(), ServeError>>,
    _dir: tempfile::TempDir,
}

impl TestNode {
    /// A node serving `host` with [`TEST_TOKEN`], 64 operations in
    /// flight, default limits, on its Unix socket.
    pub(crate) fn builder(host: Arc<Host>) -> TestNodeBuilder {
        TestNodeBuilder {
            host,
            token: TEST_TOKEN,
            max_in_flight: 64,
            set_up: Box::new(|node| node),
            listen: Box::new(|_| None),
            ready: Box::new(|_| None),
        }
    }

    /// A client on the node's Unix socket.
    pub(crate) fn client(&self) -> NodeClient {
        self.client_at(&Endpoint::Unix(self.socket.clone()))
    }

    /// A client at `endpoint`.
    pub(crate) fn client_at(&self, endpoint: &Endpoint) -> NodeClient {
        NodeClient::new(endpoint, self.token.expose()).expect("client")
    }

    /// The proxy to `kind` on this node.
    pub(crate) async fn proxy(&self, kind: &str) -> RemoteProvider {
        let registry = self.host.loaded_registry();
        RemoteProvider::connect(self.client(), &registry, kind, super::budget(5_000))
            .await
            .expect("proxy")
    }

    /// A raw connection to the node's Unix socket.
    pub(crate) async fn connect(&self) -> tokio::net::UnixStream {
        tokio::net::UnixStream::connect(&self.socket)
            .await
            .expect("connect")
    }

    /// Stops the node and waits for it: how it ended.
    pub(crate) async fn stop(mut self) -> Result<(), ServeError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.served).await.expect("server task")
    }
}

impl Drop for TestNode {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl TestNodeBuilder {
    /// The node's token (the file holds it; clients send it).
    pub(crate) fn token(mut self, token: &'static str) -> Self {
        self.token = token;
        self
    }

    /// Operations the node runs at once.
    pub(crate) fn max_in_flight(mut self, max_in_flight: u32) -> Self {
        self.max_in_flight = max_in_flight;
        self
    }

    /// Sets the node up (limits, timeouts) before it serves.
    pub(crate) fn set_up(mut self, set_up: impl FnOnce(Node) -> Node + 'static) -> Self {
        self.set_up = Box::new(set_up);
        self
    }

    /// Where it listens, given its directory (`None`: its Unix socket).
    pub(crate) fn listen(mut self, listen: impl FnOnce(&Path) -> Option<Listen> + 'static) -> Self {
        self.listen = Box::new(listen);
        self
    }

    /// Where readiness is asked, given its directory (`None`: its Unix
    /// socket).
    pub(crate) fn ready(mut self, ready: impl FnOnce(&Path) -> Option<Endpoint> + 'static) -> Self {
        self.ready = Box::new(ready);
        self
    }

    /// Starts the node and waits until it answers.
    pub(crate) async fn start(self) -> TestNode {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("node.sock");
        let token = super::token_in(dir.path(), self.token);
        let listen = (self.listen)(dir.path()).unwrap_or(Listen {
            unix: Some(socket.clone()),
            ..Listen::default()
        });
        let endpoint = (self.ready)(dir.path()).unwrap_or(Endpoint::Unix(socket.clone()));
        let node = (self.set_up)(Node::new(
            self.host.clone(),
            token.clone(),
            self.max_in_flight,
        ));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(async move {
            node.serve(&listen, async {
                let _ = stopped.await;
            })
            .await
        });
        let node = TestNode {
            socket,
            token,
            host: self.host,
            stop: Some(stop),
            served,
            _dir: dir,
        };
        let client = node.client_at(&endpoint);
        for _ in 0..300 {
            if client.kinds(super::budget(1_000)).await.is_ok() {
                return node;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the node did not start serving");
    }
}

/// A node serving kinds whose engine is the fixtures' fake one, which
/// lives as long as the node.
pub(crate) struct EngineNode {
    pub(crate) node: TestNode,
    pub(crate) engine: super::FakeEngine,
}

impl std::ops::Deref for EngineNode {
    type Target = TestNode;
    fn deref(&self) -> &TestNode {
        &self.node
    }
}

impl EngineNode {
    /// Stops the node, which must end cleanly and remove its socket; how
    /// long stopping took.
    pub(crate) async fn stop(self) -> Duration {
        let stopping = std::time::Instant::now();
        let socket = self.node.socket.clone();
        let served = self.node.stop().await;
        assert!(served.is_ok(), "the server stops cleanly: {served:?}");
        assert!(!socket.exists(), "the socket is removed on the way out");
        stopping.elapsed()
    }
}
