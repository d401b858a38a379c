//! The `sandbox-host` binary as the CLI tests run it: on the staged
//! components and test registry, `serve` started and stopped, `client`
//! pointed at a served socket.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// Where the components are staged.
pub(crate) fn plugins() -> String {
    super::plugin_dir().display().to_string()
}

/// The test kinds' registry file, staged beside the components.
pub(crate) fn registry() -> String {
    format!("{}/test-registry.toml", plugins())
}

/// The binary, to be given its arguments.
pub(crate) fn sandbox_host() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sandbox-host"))
}

/// Runs the binary with `args` to its end.
pub(crate) fn host(args: &[&str]) -> Output {
    sandbox_host()
        .args(args)
        .output()
        .expect("run sandbox-host")
}

/// `call KIND OPERATION` for allocation `t/e/a` on the staged components
/// and test registry; more options may follow.
pub(crate) fn call(kind: &str, operation: &str) -> Command {
    let mut command = sandbox_host();
    let (plugins, registry) = (plugins(), registry());
    command.args([
        "call",
        kind,
        operation,
        "--reference",
        "t/e/a",
        "--plugins",
        &plugins,
        "--registry",
        &registry,
    ]);
    command
}

/// `client` of the node on Unix socket `socket` with the token in
/// `token_file`, holding the test registry; the command follows.
pub(crate) fn client(socket: &str, token_file: &str) -> Command {
    let mut command = sandbox_host();
    command.args([
        "client",
        "--unix",
        socket,
        "--token-file",
        token_file,
        "--registry",
        &registry(),
    ]);
    command
}

/// Writes `token` into a file private to its owner in `dir`.
pub(crate) fn private_token(dir: &Path, token: &str) -> PathBuf {
    let path = dir.join("token");
    super::write_private(&path, format!("{token}\n"));
    path
}

/// A node configuration file in `dir`: the token in `token`, installation
/// `installation`, the staged components and test registry, state in
/// `dir`, then `tables` (where it listens, its kinds); its path.
pub(crate) fn node_config(dir: &Path, token: &Path, installation: &str, tables: &str) -> String {
    let config = dir.join("node.toml");
    let head = format!(
        "token_file = \"{}\"\ninstallation = \"{installation}\"\nplugins = \"{}\"\nregistry = \"{}\"\nstate_dir = \"{}\"\n",
        token.display(),
        plugins(),
        registry(),
        dir.join("state").display(),
    );
    std::fs::write(&config, head + tables).expect("config");
    config.display().to_string()
}

/// Starts `serve` on `config`, its standard error going to `stderr`.
pub(crate) fn serve(config: &str, stderr: Stdio) -> Child {
    sandbox_host()
        .args(["serve", "--config", config])
        .stderr(stderr)
        .spawn()
        .expect("serve starts")
}

/// Sends `serve` SIGTERM.
pub(crate) fn terminate(serve: &Child) {
    let killed = Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
}

/// Stops `serve` with SIGTERM, which it must answer by exiting 0.
pub(crate) fn stop(mut serve: Child) {
    terminate(&serve);
    let status = tokio::task::block_in_place(|| serve.wait()).expect("serve exits");
    assert!(status.success(), "serve exits 0 on SIGTERM: {status:?}");
}

/// How long a test waits for a `serve` it started to answer. `serve`
/// compiles every kind before it listens (a fresh directory has no compile
/// cache): alone that takes a few seconds of a debug build, and far longer
/// beside the rest of the suite on a loaded 2-core runner.
pub(crate) const SERVE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs `probe` (a `client` command) every 100 ms until it succeeds, at
/// most [`SERVE_PATIENCE`]: its first successful output.
pub(crate) async fn until_served(probe: impl Fn() -> Output) -> Option<Output> {
    let started = std::time::Instant::now();
    loop {
        let output = tokio::task::block_in_place(&probe);
        if output.status.success() {
            return Some(output);
        }
        if started.elapsed() > SERVE_PATIENCE {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
