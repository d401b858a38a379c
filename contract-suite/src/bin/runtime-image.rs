//! `runtime-image --engine-socket SOCK`: imports the contract suite's test
//! runtime image (static busybox and a stand-in `oac-daemon`) into a Docker
//! Engine and prints its id, for the quickstart and for operators trying
//! the Docker adapter without a registry.

use anyhow::{Context, Result};
use clap::Parser;
use contract_suite::fixtures::runtime_image;
use std::path::PathBuf;

/// Imports the test runtime image into a Docker Engine and prints its id.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// The Docker Engine's Unix socket.
    #[arg(long)]
    engine_socket: PathBuf,
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let path = cli
        .engine_socket
        .to_str()
        .context("the socket path is not UTF-8")?;
    let engine = bollard::Docker::connect_with_unix(path, 120, bollard::API_DEFAULT_VERSION)
        .with_context(|| format!("connecting to {path}"))?;
    engine
        .version()
        .await
        .with_context(|| format!("no Docker Engine answers on {path}"))?;
    let image = runtime_image::import(&engine).await?;
    println!("{image}");
    Ok(())
}
