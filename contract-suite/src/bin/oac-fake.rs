//! `oac-fake FAKE`: one of the project's vendor fakes as a command, as the
//! contract suite's HTTP tier starts a vendor's fake. It prints its
//! announcement (origin, control origin, test network) as one JSON line and
//! serves until its stdin closes (or, with `--until-killed`, until it is
//! interrupted or terminated).
//!
//! `oac-fake microsandbox-helper` is the fake microsandbox helper instead:
//! the host runs it once per call, as it runs the real helper.
//!
//! The fake E2B runs each sandbox as a container on the Docker Engine that
//! `--engine-socket` (or `OAC_DOCKER_SOCKET`) names, and simulates commands
//! without one.

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use oac_fixtures::control::{Announcement, Control, Controlled, Tls};
use oac_fixtures::{e2b_api, example_api, vendor_api};
use std::io::Write;
use std::sync::Arc;
use tokio::io::AsyncReadExt;

/// Starts a vendor fake for the contract suite's HTTP tier.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Which fake.
    fake: Fake,
    /// Serve until SIGINT or SIGTERM instead of until stdin closes (for a
    /// fake started in the background of a shell).
    #[arg(long)]
    until_killed: bool,
    /// The Docker Engine the fake E2B's sandboxes run on as containers
    /// (default: `OAC_DOCKER_SOCKET`; without either, commands are
    /// simulated).
    #[arg(long, conflicts_with = "simulate")]
    engine_socket: Option<String>,
    /// The fake E2B simulates commands even when `OAC_DOCKER_SOCKET` is set
    /// (for runs that judge no command, faster).
    #[arg(long)]
    simulate: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum Fake {
    /// The fake E2B: REST API and envd behind TLS under a test domain.
    E2b,
    /// The host's steerable test component's vendor (sandboxes and
    /// snapshots over plain HTTP).
    Steerable,
    /// The Example Cloud boxes API (the example adapter's vendor).
    Example,
    /// The fake microsandbox helper: one request on stdin, one answer on
    /// stdout (the host's helper protocol), its runtime modelled in the
    /// request's home. Not a vendor: it announces nothing.
    MicrosandboxHelper,
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let (fake, origin, tls): (Arc<dyn Controlled>, Option<String>, Option<Tls>) = match cli.fake {
        Fake::E2b => {
            let socket = cli
                .engine_socket
                .clone()
                .or_else(|| std::env::var("OAC_DOCKER_SOCKET").ok())
                .filter(|_| !cli.simulate);
            let fake = match socket {
                Some(socket) => e2b_api::FakeE2b::start_backed(&socket)
                    .await
                    .with_context(|| format!("starting the fake E2B on the engine at {socket}"))?,
                None => {
                    if !cli.simulate {
                        eprintln!(
                            "oac-fake: the fake E2B simulates commands (no --engine-socket or \
                             OAC_DOCKER_SOCKET)"
                        );
                    }
                    e2b_api::FakeE2b::start()
                        .await
                        .context("starting the fake E2B")?
                }
            };
            let tls = Tls {
                address: fake.address().to_string(),
                ca_pem: fake.ca_pem().to_string(),
            };
            (Arc::new(fake), None, Some(tls))
        }
        Fake::Steerable => {
            let fake = vendor_api::FakeVendor::start()
                .await
                .context("starting the fake vendor")?;
            let origin = fake.origin();
            (Arc::new(fake), Some(origin), None)
        }
        Fake::Example => {
            let fake = example_api::FakeExample::start()
                .await
                .context("starting the Example Cloud fake")?;
            let origin = fake.origin();
            (Arc::new(fake), Some(origin), None)
        }
        Fake::MicrosandboxHelper => return microsandbox_helper(),
    };
    let control = Control::serve(fake).await.context("serving control")?;
    let announcement = Announcement {
        origin,
        control: control.origin(),
        tls,
    };
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", serde_json::to_string(&announcement)?)?;
    stdout.flush()?;
    if cli.until_killed {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    } else {
        // Serve until the suite closes stdin (or is gone).
        let mut rest = Vec::new();
        let _ = tokio::io::stdin().read_to_end(&mut rest).await;
    }
    drop(control);
    Ok(())
}

/// Serves one helper request, as the real helper does.
fn microsandbox_helper() -> Result<()> {
    use std::io::Read;
    let mut input = Vec::new();
    std::io::stdin()
        .take(oac_helper_protocol::MAX_REQUEST_BYTES as u64 + 1)
        .read_to_end(&mut input)
        .context("reading the request")?;
    let (output, code) = oac_fixtures::microsandbox_helper::serve(&input);
    std::io::stdout().write_all(&output)?;
    std::io::stdout().flush()?;
    std::process::exit(code)
}
