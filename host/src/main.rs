//! `sandbox-host`: serve, validate, describe and call the provider kinds of
//! the fixed registry compiled into this binary, and talk to a serving node
//! as Core does.

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use sandbox_host::capability::docker::policy::{ContainerPolicy, PolicySettings};
use sandbox_host::host::Connect;
use sandbox_host::node_config::{NodeConfig, Token};
use sandbox_host::provider::{ConfigurationProvider, SandboxProvider};
use sandbox_host::transport::{Endpoint, Node, NodeClient, RemoteProvider};
use sandbox_host::types::{Bootstrap, Command, CommandResult, Failure, NetworkAccess, Reference};
use sandbox_host::{Budget, Host, NodeBinding, Runtime, registry};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

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
    /// The container policy of kinds granted Docker: a TOML file with the
    /// keys of a node configuration's `[kinds.<kind>.container_policy]`
    /// (image, network, seccomp_profile, cpus, memory_mib, pids_limit,
    /// nested_sandbox). Needed by commands that reach the engine.
    #[arg(long, value_name = "FILE")]
    container_policy: Option<PathBuf>,
    /// A kind's native configuration as a JSON object: `KIND=JSON`, or
    /// `KIND=@FILE` to read it from a file (repeatable).
    #[arg(long = "configuration", value_name = "KIND=JSON")]
    configurations: Vec<String>,
}

/// How to reach a serving node.
#[derive(Args)]
struct RemoteArgs {
    /// The node's Unix socket.
    #[arg(long, conflicts_with = "tcp", required_unless_present = "tcp")]
    unix: Option<PathBuf>,
    /// The node's TCP address, e.g. `127.0.0.1:7400`.
    #[arg(long)]
    tcp: Option<std::net::SocketAddr>,
    /// File holding the node's bearer token (mode 600).
    #[arg(long)]
    token_file: PathBuf,
}

/// One operation's input, as `call` and `client call` take it.
#[derive(Args)]
struct OperationArgs {
    /// Provider kind, e.g. `docker`.
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
    /// ("enabled", "disabled" or "restricted") and allowed_domains.
    #[arg(long)]
    bootstrap: Option<PathBuf>,
    /// run-command: file whose bytes become the command's stdin.
    #[arg(long)]
    stdin_file: Option<PathBuf>,
    /// run-command: working directory.
    #[arg(long)]
    directory: Option<String>,
    /// run-command: the program and its arguments (after `--`).
    #[arg(last = true)]
    args: Vec<String>,
}

#[derive(Subcommand)]
enum ClientCmd {
    /// Print each served kind's readiness diagnostics as JSON (exit status 1
    /// when any kind is not ready).
    Health,
    /// Print the served kinds' declarations as JSON.
    Kinds,
    /// Run one operation through the node and print the result as JSON
    /// (exit status 1 when the operation returns an error code).
    Call {
        #[command(flatten)]
        operation: OperationArgs,
    },
    /// Walk one allocation through create, get-info, run-command and kill,
    /// printing each step (exit status 1 when a step fails).
    Walk {
        /// Provider kind, e.g. `docker`.
        kind: String,
        /// The allocation: `TENANT/ENVIRONMENT/ALLOCATION` (default: a fresh one).
        #[arg(long)]
        reference: Option<String>,
        /// Budget for each step, 1..=120000 ms.
        #[arg(long, default_value_t = 60_000)]
        budget_ms: u32,
    },
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
        remote: RemoteArgs,
        #[command(subcommand)]
        action: ClientCmd,
    },
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
    /// Run one operation on one kind in this process and print the result
    /// as JSON (exit status 1 when the operation returns an error code).
    Call {
        #[command(flatten)]
        operation: OperationArgs,
        #[command(flatten)]
        node: NodeArgs,
    },
}

/// Reads `--container-policy`; relative paths in it are relative to the
/// working directory.
fn container_policy(node: &NodeArgs) -> Result<Option<ContainerPolicy>> {
    let Some(path) = &node.container_policy else {
        return Ok(None);
    };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let settings: PolicySettings = toml::from_str(&text)
        .map_err(|error| anyhow::anyhow!("{}: {}", path.display(), error.message()))?;
    Ok(Some(ContainerPolicy::load(
        &settings,
        std::path::Path::new(""),
    )?))
}

fn bindings(node: &NodeArgs) -> Result<BTreeMap<String, NodeBinding>> {
    let policy = container_policy(node)?;
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
                container_policy: policy.clone().filter(|_| registration.grants.docker),
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

/// Runs one operation on `provider`, in this process or through a node.
async fn call(provider: &impl SandboxProvider, input: OperationArgs) -> Result<bool> {
    let budget = Budget::from_millis(input.budget_ms)?;
    let allocation = parse_reference(&input.reference)?;
    let failure = |f: Failure| (f.error.code(), json!(f.info));
    match input.operation.as_str() {
        "create" => {
            let path = input.bootstrap.context("create needs --bootstrap FILE")?;
            let mut fields: serde_json::Map<String, Value> = serde_json::from_slice(
                &std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
            )
            .context("the bootstrap file is not a JSON object")?;
            fields.insert("reference".into(), json!(allocation));
            let request: Bootstrap = serde_json::from_value(Value::Object(fields))
                .context("the bootstrap file is incomplete or malformed")?;
            report(provider.create(request, budget).await.map_err(failure))
        }
        "get-info" => report(
            provider
                .get_info(allocation, budget)
                .await
                .map_err(|e| (e.code(), Value::Null)),
        ),
        "renew" => report(provider.renew(allocation, budget).await.map_err(failure)),
        "kill" => report(provider.kill(allocation, budget).await.map_err(failure)),
        "run-command" => {
            let stdin = input
                .stdin_file
                .map(|path| {
                    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
                })
                .transpose()?;
            let request = Command {
                args: input.args,
                directory: input.directory,
                stdin,
            };
            let outcome = provider
                .run_command(allocation, request, budget)
                .await
                .map(|result| command_json(&result));
            report(outcome.map_err(|e| (e.code(), Value::Null)))
        }
        other => bail!("unknown operation `{other}` (create, get-info, renew, kill, run-command)"),
    }
}

fn command_json(result: &CommandResult) -> Value {
    json!({
        "stdout": String::from_utf8_lossy(&result.stdout),
        "stderr": String::from_utf8_lossy(&result.stderr),
        "exit_code": result.exit_code,
    })
}

/// Prints one step of `client walk` (values in the protocol's shapes);
/// returns whether it succeeded.
fn step<T: serde::Serialize>(name: &str, outcome: Result<T, &'static str>) -> bool {
    match outcome {
        Ok(value) => {
            println!("{name}: ok {}", json!(value));
            true
        }
        Err(code) => {
            println!("{name}: error {code}");
            false
        }
    }
}

/// create → get-info → run-command → kill on one allocation; kill runs
/// whenever create may have left something behind.
async fn walk(provider: &impl SandboxProvider, allocation: Reference, budget: Budget) -> bool {
    println!(
        "allocation {}/{}/{}",
        allocation.tenant_id, allocation.environment_id, allocation.allocation_id
    );
    let request = Bootstrap {
        reference: allocation.clone(),
        session_id: "quickstart-session".into(),
        device_id: "quickstart-device".into(),
        core_url: "https://core.invalid".into(),
        daemon_credential: "quickstart-credential-not-a-secret".into(),
        harness: "quickstart".into(),
        network_access: NetworkAccess::Disabled,
        allowed_domains: vec![],
    };
    let created = provider.create(request, budget).await;
    let exists = matches!(&created, Err(f) if f.error.code() == "exists");
    let mut ok = step("create", created.map_err(|f| f.error.code()));
    if ok {
        ok &= step(
            "get-info",
            provider
                .get_info(allocation.clone(), budget)
                .await
                .map_err(|e| e.code()),
        );
        let command = Command {
            args: vec![
                "sh".into(),
                "-c".into(),
                "echo hello from $(id -u); wc -c".into(),
            ],
            directory: None,
            stdin: Some(b"stdin travels as bytes".to_vec()),
        };
        ok &= step(
            "run-command",
            provider
                .run_command(allocation.clone(), command, budget)
                .await
                .map(|result| command_json(&result))
                .map_err(|e| e.code()),
        );
    }
    if !exists {
        ok &= step(
            "kill",
            provider
                .kill(allocation, budget)
                .await
                .map_err(|f| f.error.code()),
        );
    }
    ok
}

fn fresh_reference() -> Reference {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis())
        .unwrap_or_default();
    Reference {
        tenant_id: "quickstart".into(),
        environment_id: "env".into(),
        allocation_id: format!("alloc-{stamp}"),
    }
}

async fn client(remote: RemoteArgs, action: ClientCmd) -> Result<bool> {
    let endpoint = match (remote.unix, remote.tcp) {
        (Some(path), _) => Endpoint::Unix(path),
        (None, Some(address)) => Endpoint::Tcp(address),
        (None, None) => bail!("give --unix or --tcp"),
    };
    let token = Token::read(&remote.token_file)?;
    let client = NodeClient::new(&endpoint, token.expose())?;
    let budget = Budget::from_millis(30_000)?;
    match action {
        ClientCmd::Health => {
            let health = client.health(budget).await?;
            println!("{}", serde_json::to_string_pretty(&health)?);
            Ok(health.ready)
        }
        ClientCmd::Kinds => {
            let kinds = client.kinds(budget).await?;
            println!("{}", serde_json::to_string_pretty(&kinds)?);
            Ok(true)
        }
        ClientCmd::Call { operation } => {
            let provider = RemoteProvider::connect(client, &operation.kind, budget).await?;
            call(&provider, operation).await
        }
        ClientCmd::Walk {
            kind,
            reference,
            budget_ms,
        } => {
            let allocation = match reference {
                Some(text) => parse_reference(&text)?,
                None => fresh_reference(),
            };
            let budget = Budget::from_millis(budget_ms)?;
            let provider = RemoteProvider::connect(client, &kind, budget).await?;
            Ok(walk(&provider, allocation, budget).await)
        }
    }
}

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

async fn serve(path: PathBuf) -> Result<bool> {
    let config = NodeConfig::load(&path, &registry::builtin())?;
    init_logging(config.log.level.as_deref(), config.log.json);
    let runtime = Runtime::new().context("creating the WebAssembly engine")?;
    let host = Host::load(
        runtime,
        &config.registrations,
        &config.plugins,
        &config.bindings,
        Connect::Capabilities,
    )
    .await?;
    let kinds: Vec<String> = host.kinds().map(|k| k.registration.kind.clone()).collect();
    let shown = match (&config.listen.unix, config.listen.tcp) {
        (Some(path), _) => format!("unix:{}", path.display()),
        (None, Some(address)) => format!("tcp:{address}"),
        (None, None) => bail!("listen: give exactly one of `unix` and `tcp`"),
    };
    let node = Node::new(Arc::new(host), config.token, config.max_in_flight);
    let listen = config.listen;
    let served = tokio::spawn(async move { node.serve(&listen, interrupted()).await });
    eprintln!("sandbox-host: serving {} on {shown}", kinds.join(", "));
    served.await.context("the server task failed")??;
    eprintln!("sandbox-host: stopped");
    Ok(true)
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
                let requirements = kind.requirements(budget).await.ok();
                let inventory: Vec<Value> = kind
                    .inventory
                    .0
                    .iter()
                    .map(|operation| {
                        json!({
                            "name": operation.name(),
                            "interface": operation.interface().name(),
                            "fallible": operation.fallible(),
                        })
                    })
                    .collect();
                kinds.push(json!({
                    "registration": kind.registration,
                    "sha256": kind.digest,
                    "inventory": inventory,
                    "declaration": kind.declaration.by_name(),
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
                let diagnostics = match kind.probe(budget).await {
                    Ok(found) => found.iter().map(|d| json!(d)).collect::<Vec<_>>(),
                    Err(error) => vec![json!(error.code())],
                };
                ready &= diagnostics.is_empty();
                report.insert(kind.name().to_string(), json!(diagnostics));
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
        Cmd::Call { operation, node } => {
            Budget::from_millis(operation.budget_ms)?;
            parse_reference(&operation.reference)?;
            let host = load(&node, Connect::Capabilities).await?;
            let provider = host
                .kind(&operation.kind)
                .map_err(|_| anyhow::anyhow!("`{}` is not a loaded kind", operation.kind))?;
            call(provider, operation).await
        }
        Cmd::Serve { config } => serve(config).await,
        Cmd::Client { remote, action } => client(remote, action).await,
    }
}

/// Logs to stderr: `RUST_LOG` when set, else `level`, else `warn`.
fn init_logging(level: Option<&str>, json: bool) {
    // No dependency that sees engine request bodies (which carry the
    // daemon credential in the bootstrap archive) logs them: the engine
    // transport is the broker's own and logs fixed events only.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| level.unwrap_or("warn").into());
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    // A second initialisation (none happens today) would only be ignored.
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Cmd::Serve { .. }) {
        init_logging(None, false);
    }
    match run(cli).await {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(error) => {
            eprintln!("sandbox-host: {error:#}");
            std::process::ExitCode::from(2)
        }
    }
}
