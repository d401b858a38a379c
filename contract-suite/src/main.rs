//! `contract-suite <component.wasm>`: conformance of one provider component.

use anyhow::{Context, Result};
use clap::Parser;
use contract_suite::Target;
use sandbox_host::registry::Mode;
use std::path::PathBuf;

/// Runs the sandbox-provider contract suite against one component, in the
/// real host, with native-side fixtures and faults at the capability boundary.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// The component to test (a `.wasm` built for wasm32-wasip2).
    component: PathBuf,
    /// The kind's mode: `nodes` (granted the Docker capability, wired to the
    /// fake Docker Engine) or `direct`.
    #[arg(long, default_value = "nodes")]
    mode: String,
    /// The kind's native configuration (a JSON file); `${FIXTURE_IMAGE}`
    /// stands for the fixture's runtime image id.
    #[arg(long)]
    configuration: Option<PathBuf>,
    /// Budget of each call in milliseconds (cancellation cases wait it out).
    #[arg(long, default_value_t = 2_000)]
    budget_ms: u32,
    /// Also write the results as JUnit XML to this file.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Do not print progress.
    #[arg(long)]
    quiet: bool,
}

#[tokio::main]
async fn main() -> Result<std::process::ExitCode> {
    let cli = Cli::parse();
    let mode = match cli.mode.as_str() {
        "nodes" => Mode::Nodes,
        "direct" => Mode::Direct,
        other => anyhow::bail!("--mode must be nodes or direct, not `{other}`"),
    };
    let configuration = match &cli.configuration {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
        }
        None => "{}".into(),
    };
    let target = Target {
        component: cli.component.clone(),
        mode,
        configuration,
        budget_ms: cli.budget_ms,
    };
    let report = contract_suite::run(&target, !cli.quiet).await?;
    let name = cli.component.display().to_string();
    if let Some(path) = &cli.junit {
        std::fs::write(path, report.junit(&name))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    print!("{}", report.render(&name));
    Ok(if report.failed() == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(1)
    })
}
