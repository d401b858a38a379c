//! `sandbox-host client`: talk to a serving node as Core does, through the
//! node protocol and the Core-side proxy.

use crate::operation::{OperationArgs, command_json, parse_reference};
use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use sandbox_host::Budget;
use sandbox_host::node_config::{Token, read_credential};
use sandbox_host::provider::SandboxProvider;
use sandbox_host::registry::Registry;
use sandbox_host::transport::{Endpoint, NodeClient, RemoteProvider, TlsEndpoint};
use sandbox_host::types::{Bootstrap, Command, NetworkAccess, Reference};
use serde_json::json;
use std::path::PathBuf;

/// How to reach a serving node.
#[derive(Args)]
pub(crate) struct RemoteArgs {
    /// The node's Unix socket.
    #[arg(long, conflicts_with = "tcp", required_unless_present = "tcp")]
    unix: Option<PathBuf>,
    /// The node's TCP address, e.g. `127.0.0.1:7400`.
    #[arg(long)]
    tcp: Option<std::net::SocketAddr>,
    /// File holding the node's bearer token (no group or other access).
    #[arg(long)]
    token_file: PathBuf,
    /// Speak TLS to `--tcp`, trusting only this CA (PEM) for the node's
    /// certificate.
    #[arg(long, requires = "tcp", requires = "server_name")]
    tls_ca: Option<PathBuf>,
    /// The name the node's certificate must be valid for (with `--tls-ca`).
    #[arg(long, requires = "tls_ca")]
    server_name: Option<String>,
    /// This client's certificate and private key (PEM, one file, no group
    /// or other access), for a node that requires client certificates.
    #[arg(long, requires = "tls_ca")]
    client_identity: Option<PathBuf>,
    /// The operator's registry file, as Core holds it (the one the node's
    /// configuration names): kinds are taken from it, never from the node,
    /// and a node whose registry differs is refused. Default: the built-in
    /// rows alone.
    #[arg(long, value_name = "FILE")]
    registry: Option<PathBuf>,
}

impl RemoteArgs {
    /// Core's copy of the registry.
    fn registry(&self) -> Result<Registry> {
        Ok(match &self.registry {
            Some(path) => Registry::with_file(path)?,
            None => Registry::builtin(),
        })
    }

    /// Where the node is, as the client reaches it.
    fn endpoint(&self) -> Result<Endpoint> {
        Ok(match (&self.unix, self.tcp, &self.tls_ca) {
            (Some(path), _, _) => Endpoint::Unix(path.clone()),
            (None, Some(address), None) => Endpoint::Tcp(address),
            (None, Some(address), Some(ca)) => {
                let ca_pem = std::fs::read(ca)
                    .with_context(|| format!("cannot read --tls-ca {}", ca.display()))?;
                let identity_pem = match &self.client_identity {
                    Some(path) => Some(
                        read_credential(path)
                            .map_err(|reason| anyhow!("--client-identity {reason}"))?
                            .into_bytes(),
                    ),
                    None => None,
                };
                Endpoint::Tls(TlsEndpoint {
                    address,
                    server_name: self.server_name.clone().unwrap_or_default(),
                    ca_pem,
                    identity_pem,
                })
            }
            (None, None, _) => bail!("give --unix or --tcp"),
        })
    }
}

/// What to ask the node.
#[derive(Subcommand)]
pub(crate) enum ClientCmd {
    /// Print each served kind's readiness diagnostics as JSON (exit status 1
    /// when any kind is not ready).
    Health,
    /// Print the node's registry digest and identity, and the served kinds'
    /// declarations and component digests, as JSON.
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
    /// Walk one allocation of a checkpointing kind through create, a file
    /// written, suspend, resume into generation 1, the file and the
    /// daemon's process read back, generation 1 observed by its native id,
    /// kill-compute of both generations and
    /// delete-snapshot, checking each answer (exit status 1 at the first
    /// step that fails, after removing what the walk made).
    CheckpointWalk {
        /// Provider kind, e.g. `microsandbox`.
        kind: String,
        /// The allocation: `TENANT/ENVIRONMENT/ALLOCATION` (default: a fresh one).
        #[arg(long)]
        reference: Option<String>,
        /// Budget for each step, 1..=120000 ms.
        #[arg(long, default_value_t = 120_000)]
        budget_ms: u32,
    },
}

/// Prints one step of `client walk`; returns whether it succeeded.
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

/// A walk's allocation (the given one, or a fresh one) and step budget.
fn walked(reference: Option<String>, budget_ms: u32) -> Result<(Reference, Budget)> {
    let allocation = match reference {
        Some(text) => parse_reference(&text)?,
        None => fresh_reference(),
    };
    Ok((allocation, Budget::from_millis(budget_ms)?))
}

/// Runs one client command; returns success.
pub(crate) async fn run(remote: RemoteArgs, action: ClientCmd) -> Result<bool> {
    let endpoint = remote.endpoint()?;
    let registry = remote.registry()?;
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
            let operation = operation.parse()?;
            let provider =
                RemoteProvider::connect(client, &registry, &operation.kind, budget).await?;
            operation.run(&provider).await
        }
        ClientCmd::Walk {
            kind,
            reference,
            budget_ms,
        } => {
            let (allocation, budget) = walked(reference, budget_ms)?;
            let provider = RemoteProvider::connect(client, &registry, &kind, budget).await?;
            Ok(walk(&provider, allocation, budget).await)
        }
        ClientCmd::CheckpointWalk {
            kind,
            reference,
            budget_ms,
        } => {
            let (allocation, budget) = walked(reference, budget_ms)?;
            let provider = RemoteProvider::connect(client, &registry, &kind, budget).await?;
            Ok(crate::checkpoint_walk::walk(&provider, allocation, budget).await)
        }
    }
}
