//! `sandbox-host serve`: serve a node's kinds to Core until interrupted.

use anyhow::{Context, Result, bail};
use sandbox_host::host::Connect;
use sandbox_host::node_config::NodeConfig;
use sandbox_host::transport::Node;
use sandbox_host::{Host, Runtime, registry};
use std::path::PathBuf;
use std::sync::Arc;

/// Completes on Ctrl-C or SIGTERM.
async fn interrupted() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
    eprintln!("sandbox-host: stopping; finishing the operations in flight");
}

/// Loads the configuration's kinds, connects them and serves them; on
/// Ctrl-C or SIGTERM finishes the operations in flight and stops.
pub(crate) async fn run(path: PathBuf) -> Result<bool> {
    let config = NodeConfig::load(&path, &registry::builtin())?;
    let _log = crate::logging::init(config.log.level.as_deref(), config.log.json);
    let runtime = match config.compile_cache.clone() {
        Some(cache) => Runtime::with_compile_cache(cache),
        None => Runtime::new(),
    }
    .context("creating the WebAssembly engine")?;
    let host = Host::load(
        runtime,
        &config.registrations,
        &config.plugins,
        &config.bindings,
        Connect::Capabilities,
    )
    .await?;
    host.check_configured(&config.bindings).await?;
    let kinds: Vec<&str> = host.kinds().map(|kind| kind.name()).collect();
    let shown = match (&config.listen.unix, config.listen.tcp) {
        (Some(path), _) => format!("unix:{}", path.display()),
        (None, Some(address)) if config.listen.tls.is_some() => format!("tls:{address}"),
        (None, Some(address)) => format!("tcp:{address}"),
        (None, None) => bail!("listen: give exactly one of `unix` and `tcp`"),
    };
    let kinds = kinds.join(", ");
    let node = Node::new(Arc::new(host), config.token, config.max_in_flight)
        .with_request_body_budget(config.request_body_budget)
        .with_identity(config.registry.digest(), config.node_id.clone());
    let listen = config.listen;
    let served = tokio::spawn(async move { node.serve(&listen, interrupted()).await });
    eprintln!("sandbox-host: serving {kinds} on {shown}");
    served.await.context("the server task failed")??;
    eprintln!("sandbox-host: stopped");
    Ok(true)
}
