//! `contract-suite <component.wasm>`: conformance of one provider component.

use anyhow::{Context, Result};
use clap::Parser;
use contract_suite::cases::Clause;
use contract_suite::profile::HttpProfile;
use contract_suite::{DockerTier, MicrosandboxTier, Target, Tier};
use std::path::PathBuf;

/// Runs the sandbox-provider contract suite against one component, in the
/// real host, with native-side fixtures and faults at the capability
/// boundary. The Docker tier (default) runs a node kind against the fake
/// Docker Engine or a real one; the HTTP tier (`--http PROFILE`) runs a kind
/// that reaches its vendor over `http` against the vendor's own fake.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// The component to test (a `.wasm` built for wasm32-wasip2).
    component: PathBuf,
    /// Run the HTTP tier with this profile (a JSON file: the vendor's fake,
    /// the configuration, the credential file, receipts, and the request
    /// classes; see contract-suite/README.md).
    #[arg(long, value_name = "PROFILE", conflicts_with_all = ["configuration", "engine_socket", "seccomp_profile"])]
    http: Option<PathBuf>,
    /// Run the microsandbox tier: a node kind granted the `microsandbox`
    /// capability, against a fake helper over a fake runtime (by default
    /// `oac-fake microsandbox-helper`, beside this binary).
    #[arg(long, conflicts_with_all = ["http", "configuration", "engine_socket", "seccomp_profile"])]
    microsandbox: bool,
    /// The microsandbox tier's helper: an executable that takes one
    /// request of the host's helper protocol on stdin and answers on
    /// stdout (a vendor's own fake helper).
    #[arg(long, value_name = "PROGRAM", requires = "microsandbox")]
    microsandbox_helper: Option<PathBuf>,
    /// Docker tier: the kind's own configuration (a JSON file; default `{}`).
    #[arg(long)]
    configuration: Option<PathBuf>,
    /// Docker tier: the seccomp profile of the node's container policy (the
    /// real-engine tier needs the assembled `seccomp.json`; the fake engine
    /// never applies one, so a small deny-by-default profile is the default).
    #[arg(long)]
    seccomp_profile: Option<PathBuf>,
    /// Budget of each call in milliseconds (cancellation cases wait it out).
    #[arg(long, default_value_t = 2_000)]
    budget_ms: u32,
    /// Set a top-level configuration key to a file's contents as a string,
    /// e.g. `notes=notes.txt` (repeatable).
    #[arg(long = "set-from-file", value_name = "KEY=FILE")]
    set_from_file: Vec<String>,
    /// Docker tier against a real engine: the same cases against the Docker
    /// Engine at this Unix socket (the runtime image is imported into it),
    /// instead of the fake engine.
    #[arg(long)]
    engine_socket: Option<PathBuf>,
    /// Run only these clauses (repeatable; default: all): declaration,
    /// unsupported, optional, lifecycle, failure-matrix, ownership, commands,
    /// checkpoint (only for a component that declares checkpoints),
    /// receipts (only for a kind granted receipts), leaks.
    #[arg(long = "clause", value_name = "CLAUSE")]
    clauses: Vec<String>,
    /// Also write the results as JUnit XML to this file.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Do not print progress.
    #[arg(long)]
    quiet: bool,
}

/// Applies `--set-from-file KEY=FILE` to the configuration object.
fn set_from_files(configuration: &str, settings: &[String]) -> Result<String> {
    if settings.is_empty() {
        return Ok(configuration.to_string());
    }
    let mut value: serde_json::Value =
        serde_json::from_str(configuration).context("the configuration is not JSON")?;
    let object = value
        .as_object_mut()
        .context("the configuration is not a JSON object")?;
    for setting in settings {
        let (key, file) = setting
            .split_once('=')
            .context("--set-from-file takes KEY=FILE")?;
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?;
        object.insert(key.to_string(), serde_json::Value::String(text));
    }
    Ok(value.to_string())
}

/// `program`'s path in this binary's directory.
fn beside_this_binary(program: &str) -> Result<String> {
    let me = std::env::current_exe().context("locating this binary")?;
    let path = me.with_file_name(program);
    anyhow::ensure!(path.is_file(), "{} is missing", path.display());
    Ok(path.display().to_string())
}

#[tokio::main]
async fn main() -> Result<std::process::ExitCode> {
    let cli = Cli::parse();
    let tier = match &cli.http {
        None if cli.microsandbox => Tier::Microsandbox(MicrosandboxTier {
            helper: match &cli.microsandbox_helper {
                Some(program) => vec![program.display().to_string()],
                None => vec![
                    beside_this_binary("oac-fake")?,
                    "microsandbox-helper".into(),
                ],
            },
        }),
        Some(path) => {
            let mut profile = HttpProfile::load(path)?;
            let configuration =
                set_from_files(&profile.configuration.to_string(), &cli.set_from_file)?;
            profile.configuration = serde_json::from_str(&configuration)?;
            Tier::Http(Box::new(profile))
        }
        None => {
            let configuration = match &cli.configuration {
                Some(path) => std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?,
                None => "{}".into(),
            };
            let seccomp_profile = match &cli.seccomp_profile {
                Some(path) => std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?,
                None => contract_suite::harness::FAKE_SECCOMP_PROFILE.into(),
            };
            Tier::Docker(DockerTier {
                engine: cli.engine_socket.clone(),
                configuration: set_from_files(&configuration, &cli.set_from_file)?,
                seccomp_profile,
            })
        }
    };
    let target = Target {
        component: cli.component.clone(),
        budget_ms: cli.budget_ms,
        tier,
    };
    let clauses = if cli.clauses.is_empty() {
        Clause::ALL.to_vec()
    } else {
        cli.clauses
            .iter()
            .map(|name| {
                Clause::from_name(name).with_context(|| format!("no clause named `{name}`"))
            })
            .collect::<Result<Vec<_>>>()?
    };
    let report = contract_suite::run_clauses(&target, &clauses, !cli.quiet).await?;
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
