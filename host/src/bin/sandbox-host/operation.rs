//! One operation as `call` and `client call` take it: parsed once into a
//! typed value, run on any provider (a kind loaded here, or one served by
//! a node), and printed as `{"ok": …}` or `{"error": CODE, "info": …}`.

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use sandbox_host::Budget;
use sandbox_host::provider::SandboxProvider;
use sandbox_host::types::{Bootstrap, Command, CommandResult, Failure, Reference};
use serde_json::{Value, json};
use std::path::PathBuf;

/// One operation's input, as written on the command line.
#[derive(Args)]
pub(crate) struct OperationArgs {
    /// Provider kind, e.g. `docker`.
    kind: String,
    /// The operation.
    operation: OperationName,
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

/// The operations `call` runs, as written on the command line.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum OperationName {
    /// Create the allocation's compute (`--bootstrap FILE`).
    Create,
    /// Observe it.
    GetInfo,
    /// Extend its lease.
    Renew,
    /// Remove it.
    Kill,
    /// Run a command in it (after `--`).
    RunCommand,
}

/// What to run.
enum Input {
    Create(Bootstrap),
    GetInfo,
    Renew,
    Kill,
    RunCommand(Command),
}

/// A parsed operation: the kind, the allocation, the budget and the input.
pub(crate) struct Operation {
    /// The provider kind.
    pub kind: String,
    allocation: Reference,
    budget: Budget,
    input: Input,
}

/// `TENANT/ENVIRONMENT/ALLOCATION`, each part non-empty.
pub(crate) fn parse_reference(text: &str) -> Result<Reference> {
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

fn read(path: &PathBuf) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

impl OperationArgs {
    /// Checks and reads everything before anything is loaded or sent.
    pub(crate) fn parse(self) -> Result<Operation> {
        let budget = Budget::from_millis(self.budget_ms)?;
        let allocation = parse_reference(&self.reference)?;
        let input = match self.operation {
            OperationName::Create => {
                let path = self.bootstrap.context("create needs --bootstrap FILE")?;
                let mut fields: serde_json::Map<String, Value> =
                    serde_json::from_slice(&read(&path)?)
                        .context("the bootstrap file is not a JSON object")?;
                fields.insert("reference".into(), json!(allocation));
                let request: Bootstrap = serde_json::from_value(Value::Object(fields))
                    .context("the bootstrap file is incomplete or malformed")?;
                Input::Create(request)
            }
            OperationName::GetInfo => Input::GetInfo,
            OperationName::Renew => Input::Renew,
            OperationName::Kill => Input::Kill,
            OperationName::RunCommand => Input::RunCommand(Command {
                args: self.args,
                directory: self.directory,
                stdin: self.stdin_file.as_ref().map(read).transpose()?,
            }),
        };
        Ok(Operation {
            kind: self.kind,
            allocation,
            budget,
            input,
        })
    }
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

/// A command's outcome, its bytes shown as text.
pub(crate) fn command_json(result: &CommandResult) -> Value {
    json!({
        "stdout": String::from_utf8_lossy(&result.stdout),
        "stderr": String::from_utf8_lossy(&result.stderr),
        "exit_code": result.exit_code,
    })
}

impl Operation {
    /// Runs on `provider` and prints the outcome; returns success.
    pub(crate) async fn run(self, provider: &impl SandboxProvider) -> Result<bool> {
        let (allocation, budget) = (self.allocation, self.budget);
        let failure = |f: Failure| (f.error.code(), json!(f.info));
        let plain = |e: sandbox_host::types::Error| (e.code(), Value::Null);
        match self.input {
            Input::Create(request) => {
                report(provider.create(request, budget).await.map_err(failure))
            }
            Input::GetInfo => report(provider.get_info(allocation, budget).await.map_err(plain)),
            Input::Renew => report(provider.renew(allocation, budget).await.map_err(failure)),
            Input::Kill => report(provider.kill(allocation, budget).await.map_err(failure)),
            Input::RunCommand(request) => report(
                provider
                    .run_command(allocation, request, budget)
                    .await
                    .map(|result| command_json(&result))
                    .map_err(plain),
            ),
        }
    }
}
