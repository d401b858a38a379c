//! `sandbox-host`: validate, describe and call the provider kinds of the
//! fixed registry compiled into this binary.

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use sandbox_host::bindings::{Bootstrap, Command, Reference};
use sandbox_host::host::Connect;
use sandbox_host::{Budget, Host, NodeBinding, Runtime, registry};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Loads sandbox-provider Wasm components from the fixed registry, validates
/// them, and brokers their native calls (Docker Engine, HTTP).
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

/// Where components are and what the node supplies to each kind.
#[derive(Args)]
struct NodeArgs {
    /// Directory of staged components (`cargo xtask build-plugins` output).
    #[arg(long, default_value = "target/plugins")]
    plugins: PathBuf,
    /// Installation id: the value of every `io.oac.installation` label.
    #[arg(long, default_value = "default")]
    installation: String,
    /// Docker Engine Unix socket for kinds granted Docker (never DOCKER_HOST).
    #[arg(long, default_value = "/var/run/docker.sock")]
    docker_socket: PathBuf,
    /// A kind's native configuration as a JSON object: `KIND=JSON`, or
    /// `KIND=@FILE` to read it from a file (repeatable).
    #[arg(long = "configuration", value_name = "KIND=JSON")]
    configurations: Vec<String>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Validate the registry table and load every component offline
    /// (digest, contract version, exports, declaration); no native I/O.
    Validate {
        #[command(flatten)]
        node: NodeArgs,
    },
    /// Print each kind's registration, digest, operation inventory,
    /// declaration, configuration requirements and node artifacts as JSON.
    Describe {
        #[command(flatten)]
        node: NodeArgs,
    },
    /// Run every kind's readiness probe against this node's capabilities and
    /// print the fixed diagnostics as JSON (exit status 1 when any kind is not ready).
    Probe {
        #[command(flatten)]
        node: NodeArgs,
    },
    /// Assemble the runtime's seccomp profile: verify the upstream Moby
    /// profile against its pinned SHA-256, append the one project rule, and
    /// write `seccomp.json` and `seccomp.LICENSE` into the output directory.
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
    /// Run one operation on one kind and print the result as JSON
    /// (exit status 1 when the operation returns an error code).
    Call {
        /// Provider kind, e.g. `steerable`.
        kind: String,
        /// One of: create, get-info, renew, kill, run-command.
        operation: String,
        /// The allocation: `TENANT/ENVIRONMENT/ALLOCATION`.
        #[arg(long)]
        reference: String,
        /// Budget for the call, 1..=120000 ms.
        #[arg(long, default_value_t = 30_000)]
        budget_ms: u32,
        /// create: JSON file with the rest of the bootstrap: session_id,
        /// device_id, core_url, daemon_credential, harness, network_access
        /// ("Enabled", "Disabled" or "Restricted") and allowed_domains.
        #[arg(long)]
        bootstrap: Option<PathBuf>,
        /// run-command: file whose bytes become the command's stdin.
        #[arg(long)]
        stdin_file: Option<PathBuf>,
        /// run-command: working directory.
        #[arg(long)]
        directory: Option<String>,
        #[command(flatten)]
        node: NodeArgs,
        /// run-command: the program and its arguments (after `--`).
        #[arg(last = true)]
        args: Vec<String>,
    },
}

fn bindings(node: &NodeArgs) -> Result<BTreeMap<String, NodeBinding>> {
    let mut configurations = BTreeMap::new();
    for entry in &node.configurations {
        let (kind, text) = entry
            .split_once('=')
            .context("--configuration takes KIND=JSON")?;
        let text = match text.strip_prefix('@') {
            Some(path) => std::fs::read_to_string(path)
                .with_context(|| format!("reading the configuration of `{kind}` from {path}"))?,
            None => text.to_string(),
        };
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("--configuration for `{kind}` is not JSON"))?;
        configurations.insert(kind.to_string(), value);
    }
    Ok(registry::builtin()
        .into_iter()
        .map(|registration| {
            let binding = NodeBinding {
                installation_id: node.installation.clone(),
                docker_socket: registration
                    .grants
                    .docker
                    .then(|| node.docker_socket.clone()),
                configuration: configurations
                    .remove(&registration.kind)
                    .unwrap_or_else(|| json!({})),
                credential: None,
                hook: None,
            };
            (registration.kind, binding)
        })
        .collect())
}

async fn load(node: &NodeArgs, connect: Connect) -> Result<Host> {
    let runtime = Runtime::new().context("creating the WebAssembly engine")?;
    Ok(Host::load(
        runtime,
        &registry::builtin(),
        &node.plugins,
        &bindings(node)?,
        connect,
    )
    .await?)
}

fn parse_reference(text: &str) -> Result<Reference> {
    let parts: Vec<&str> = text.split('/').collect();
    let [tenant, environment, allocation] = parts[..] else {
        bail!("--reference takes TENANT/ENVIRONMENT/ALLOCATION")
    };
    if [tenant, environment, allocation]
        .iter()
        .any(|part| part.is_empty())
    {
        bail!("--reference parts must not be empty");
    }
    Ok(Reference {
        tenant_id: tenant.into(),
        environment_id: environment.into(),
        allocation_id: allocation.into(),
    })
}

/// Prints `{"ok": …}` or `{"error": code, "info": …}`; returns success.
fn report<T: serde::Serialize>(outcome: Result<T, (&'static str, Value)>) -> Result<bool> {
    let (value, ok) = match outcome {
        Ok(value) => (json!({ "ok": value }), true),
        Err((code, info)) => (json!({ "error": code, "info": info }), false),
    };
    println!("{}", serde_json::to_string_pretty(&value)?);
    Ok(ok)
}

#[allow(clippy::too_many_arguments)]
async fn call(
    host: &Host,
    kind: &str,
    operation: &str,
    allocation: Reference,
    budget: Budget,
    bootstrap: Option<PathBuf>,
    stdin: Option<PathBuf>,
    directory: Option<String>,
    args: Vec<String>,
) -> Result<bool> {
    use sandbox_host::bindings::Failure;
    let failure = |f: Failure| (f.error.code(), json!(f.info));
    match operation {
        "create" => {
            let path = bootstrap.context("create needs --bootstrap FILE")?;
            let mut fields: serde_json::Map<String, Value> = serde_json::from_slice(
                &std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
            )
            .context("the bootstrap file is not a JSON object")?;
            fields.insert("reference".into(), json!(allocation));
            let request: Bootstrap = serde_json::from_value(Value::Object(fields))
                .context("the bootstrap file is incomplete or malformed")?;
            report(host.create(kind, request, budget).await.map_err(failure))
        }
        "get-info" => report(
            host.get_info(kind, allocation, budget)
                .await
                .map_err(|e| (e.code(), Value::Null)),
        ),
        "renew" => report(host.renew(kind, allocation, budget).await.map_err(failure)),
        "kill" => report(host.kill(kind, allocation, budget).await.map_err(failure)),
        "run-command" => {
            let stdin = stdin
                .map(|path| {
                    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
                })
                .transpose()?;
            let request = Command {
                args,
                directory,
                stdin,
            };
            let outcome = host
                .run_command(kind, allocation, request, budget)
                .await
                .map(|result| {
                    json!({
                        "stdout": String::from_utf8_lossy(&result.stdout),
                        "stderr": String::from_utf8_lossy(&result.stderr),
                        "exit_code": result.exit_code,
                    })
                });
            report(outcome.map_err(|e| (e.code(), Value::Null)))
        }
        other => bail!("unknown operation `{other}` (create, get-info, renew, kill, run-command)"),
    }
}

async fn run(cli: Cli) -> Result<bool> {
    match cli.command {
        Cmd::Validate { node } => {
            let host = load(&node, Connect::Offline).await?;
            for kind in host.kinds() {
                println!(
                    "{}: ok ({} operations declared, sha256 {})",
                    kind.registration.kind,
                    kind.inventory.0.len(),
                    kind.digest
                );
            }
            Ok(true)
        }
        Cmd::Describe { node } => {
            let host = load(&node, Connect::Offline).await?;
            let budget = Budget::from_millis(10_000)?;
            let mut kinds = Vec::new();
            for kind in host.kinds() {
                let requirements = host
                    .requirements(&kind.registration.kind, budget)
                    .await
                    .ok();
                kinds.push(json!({
                    "registration": kind.registration,
                    "sha256": kind.digest,
                    "inventory": kind.inventory,
                    "declaration": kind.declaration,
                    "requirements": requirements,
                    "artifacts": kind.registration.node_artifacts,
                }));
            }
            println!(
                "{}",
                serde_json::to_string_pretty(&json!({ "kinds": kinds }))?
            );
            Ok(true)
        }
        Cmd::Probe { node } => {
            let host = load(&node, Connect::Capabilities).await?;
            let budget = Budget::from_millis(30_000)?;
            let mut report = serde_json::Map::new();
            let mut ready = true;
            for kind in host.kinds() {
                let name = &kind.registration.kind;
                let diagnostics = match host.probe(name, budget).await {
                    Ok(found) => found.iter().map(|d| json!(d)).collect::<Vec<_>>(),
                    Err(error) => vec![json!(error.code())],
                };
                ready &= diagnostics.is_empty();
                report.insert(name.clone(), json!(diagnostics));
            }
            println!("{}", serde_json::to_string_pretty(&Value::Object(report))?);
            Ok(ready)
        }
        Cmd::Seccomp {
            upstream,
            license,
            out,
        } => {
            let (profile, notice) = oac_seccomp::assemble_files(&upstream, &license, &out)?;
            println!("{}\n{}", profile.display(), notice.display());
            Ok(true)
        }
        Cmd::Call {
            kind,
            operation,
            reference,
            budget_ms,
            bootstrap,
            stdin_file,
            directory,
            node,
            args,
        } => {
            let budget = Budget::from_millis(budget_ms)?;
            let allocation = parse_reference(&reference)?;
            let host = load(&node, Connect::Capabilities).await?;
            call(
                &host, &kind, &operation, allocation, budget, bootstrap, stdin_file, directory,
                args,
            )
            .await
        }
    }
}

/// The most verbose level bollard may log at.
const BOLLARD_CEILING: &str = "bollard=info";

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            // bollard traces whole request bodies, which carry the daemon
            // credential in the bootstrap archive: its output stops at info
            // whatever RUST_LOG asks for.
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn".into())
                .add_directive(BOLLARD_CEILING.parse().expect("a valid directive")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(Cli::parse()).await {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(error) => {
            eprintln!("sandbox-host: {error:#}");
            std::process::ExitCode::from(2)
        }
    }
}
