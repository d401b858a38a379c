//! `sandbox-host`: serve, validate, describe and call the provider kinds of
//! the registry (the rows built into this binary and an operator's registry
//! file), and talk to a serving node as Core does. One module per group of subcommands.

mod checkpoint_walk;
mod client;
mod inspect;
mod logging;
mod node;
mod operation;
mod serve;

use anyhow::Result;
use clap::{Parser, Subcommand};
use sandbox_host::host::Connect;
use std::path::PathBuf;

/// Loads sandbox-provider Wasm components from one registry (built-in rows
/// and an operator's registry file), validates them, and brokers their
/// native calls (Docker Engine, HTTP, receipts).
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve the kinds of a node configuration (TOML) to Core over the node
    /// protocol until interrupted (Ctrl-C or SIGTERM), then finish the
    /// operations in flight and stop.
    Serve {
        /// The node configuration file.
        #[arg(long)]
        config: PathBuf,
    },
    /// Talk to a serving node as Core does: through the node protocol and
    /// the Core-side proxy.
    Client {
        #[command(flatten)]
        remote: client::RemoteArgs,
        #[command(subcommand)]
        action: client::ClientCmd,
    },
    /// Validate the registry table and load every component offline
    /// (digest, contract version, exports, declaration); no native I/O.
    Validate {
        #[command(flatten)]
        node: node::NodeArgs,
    },
    /// Print each kind's registration, digest, operation inventory,
    /// declaration, configuration requirements and node artifacts as JSON.
    Describe {
        #[command(flatten)]
        node: node::NodeArgs,
    },
    /// Run every kind's readiness probe against this node's capabilities and
    /// print the fixed diagnostics as JSON (exit status 1 when any kind is not ready).
    Probe {
        #[command(flatten)]
        node: node::NodeArgs,
    },
    /// Assemble the runtime's seccomp profiles: verify the upstream Moby
    /// profile against its pinned SHA-256 and write `seccomp.json` (upstream
    /// as it is), `seccomp-nested.json` (with the one project rule appended,
    /// for `nested_sandbox` policies only) and `seccomp.LICENSE` into the
    /// output directory.
    Seccomp {
        /// The upstream `seccomp/default.json` (moby/profiles at the pinned commit).
        #[arg(long)]
        upstream: PathBuf,
        /// The upstream licence file.
        #[arg(long)]
        license: PathBuf,
        /// Output directory.
        #[arg(long, default_value = "target/seccomp")]
        out: PathBuf,
    },
    /// Run one operation on one kind in this process and print the result
    /// as JSON (exit status 1 when the operation returns an error code).
    Call {
        #[command(flatten)]
        operation: operation::OperationArgs,
        #[command(flatten)]
        node: node::NodeArgs,
    },
}

/// Runs one operation on a kind loaded here; the input is checked (and its
/// files read) before anything is loaded.
async fn call(operation: operation::OperationArgs, node: node::NodeArgs) -> Result<bool> {
    let operation = operation.parse()?;
    let host = node
        .load(Connect::Capabilities, Some(&operation.kind))
        .await?;
    let kind = host
        .kind(&operation.kind)
        .map_err(|_| anyhow::anyhow!("`{}` is not a loaded kind", operation.kind))?;
    operation.run(kind).await
}

async fn run(cli: Cli) -> Result<bool> {
    match cli.command {
        Cmd::Serve { config } => serve::run(config).await,
        Cmd::Client { remote, action } => client::run(remote, action).await,
        Cmd::Validate { node } => inspect::validate(node).await,
        Cmd::Describe { node } => inspect::describe(node).await,
        Cmd::Probe { node } => inspect::probe(node).await,
        Cmd::Seccomp {
            upstream,
            license,
            out,
        } => {
            let assembled = oac_seccomp::assemble_files(&upstream, &license, &out)?;
            for path in [&assembled.profile, &assembled.nested, &assembled.license] {
                println!("{}", path.display());
            }
            Ok(true)
        }
        Cmd::Call { operation, node } => call(operation, node).await,
    }
}

/// Every call allocates and frees a store's worth of small objects, often
/// on another worker than the one that allocated them; with glibc's
/// allocator 1 000 calls in flight took 27–30 % longer (docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit status: 0 success, 1 the operation or probe said no, 2 bad input or
/// a failure of the tool itself.
#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // `serve` installs its own, at the level its configuration names.
    let _log = (!matches!(cli.command, Cmd::Serve { .. })).then(|| logging::init(None, false));
    match run(cli).await {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(error) => {
            eprintln!("sandbox-host: {error:#}");
            std::process::ExitCode::from(2)
        }
    }
}
