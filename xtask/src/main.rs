//! Project automation. `cargo xtask build-plugins` builds every component in
//! `plugins/` for wasm32-wasip2 (release) and stages each `.wasm` with its
//! SHA-256 in `target/plugins/`, where the host and its tests load them.

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Parser)]
#[command(about = "Project automation for the sandbox-provider plugin host")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Build every plugin component (release, wasm32-wasip2) and stage it
    /// with its SHA-256 in the output directory.
    BuildPlugins {
        /// Where to stage `<name>.wasm` and `<name>.wasm.sha256`.
        #[arg(long, default_value = "target/plugins")]
        out: PathBuf,
    },
    /// Build the plugins, then run every test: the host workspace, the guest
    /// SDK's and the adapters' unit tests (natively), and the microsandbox
    /// helper's (against the runtime `OAC_MICROSANDBOX_RUNTIME` names, from
    /// scripts/microsandbox-runtime.sh; skipped without one, and said so,
    /// unless `OAC_REQUIRE_MICROSANDBOX=1`). The Docker Engine tests
    /// run against `OAC_DOCKER_SOCKET`, or against a private engine this
    /// command starts and stops (scripts/docker-engine.sh; needs root). Only
    /// without either are they skipped, and the command says why.
    Test,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Broken builds of adapters (their `mutant-*` features): the crate, its
/// component file, and the mutants, staged as `mutant-<prefix>-<name>.wasm`.
const ADAPTER_MUTANTS: [(&str, &str, &str, &[&str]); 4] = [
    (
        "docker",
        "docker.wasm",
        "docker",
        &[
            "retry-create",
            "delete-foreign",
            "invent-settlement",
            "leak-secret",
            "settle-on-observation",
        ],
    ),
    (
        "e2b",
        "e2b.wasm",
        "e2b",
        &["replay-create", "kill-without-proof", "mutate-twice"],
    ),
    (
        "microsandbox",
        "microsandbox.wasm",
        "microsandbox",
        &[
            "cold-start",
            "run-after-capture",
            "recapture",
            "restore-observe-only",
            "delete-other-snapshot",
        ],
    ),
    (
        "example-http",
        "example_http.wasm",
        "example",
        &[
            "replay-create",
            "kill-without-proof",
            "delete-foreign",
            "leak-credential",
            "delete-twice",
        ],
    ),
];

/// Builds components in the plugins workspace (release, wasm32-wasip2).
fn build_components(extra: &[&str]) -> Result<()> {
    let manifest = workspace_root().join("plugins/Cargo.toml");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--manifest-path",
        ])
        .arg(&manifest)
        .args(extra)
        .status()
        .context("running cargo for the plugins workspace")?;
    if !status.success() {
        bail!("plugin build failed (is the target installed? `rustup target add wasm32-wasip2`)");
    }
    Ok(())
}

/// Copies a built component to `out/name` with its `.sha256` beside it.
fn stage(component: &Path, out: &Path, name: &str) -> Result<()> {
    let bytes =
        std::fs::read(component).with_context(|| format!("reading {}", component.display()))?;
    let digest = hex::encode(Sha256::digest(&bytes));
    std::fs::write(out.join(name), &bytes).with_context(|| format!("staging {name}"))?;
    std::fs::write(
        out.join(format!("{name}.sha256")),
        format!("{digest}  {name}\n"),
    )
    .with_context(|| format!("writing the digest of {name}"))?;
    eprintln!("  {name:<34} {:>8} bytes  sha256 {digest}", bytes.len());
    Ok(())
}

/// Writes `out/test-registry.toml` from `plugins/steerable/registry.toml`,
/// each placeholder `@sha256 FILE@` replaced by the digest staged beside `<file>`:
/// the test kinds as an operator's registry file pins them.
fn stage_test_registry(out: &Path) -> Result<()> {
    let template = workspace_root().join("plugins/steerable/registry.toml");
    let mut text = std::fs::read_to_string(&template)
        .with_context(|| format!("reading {}", template.display()))?;
    while let Some(start) = text.find("@sha256 ") {
        let rest = &text[start + "@sha256 ".len()..];
        let end = rest
            .find('@')
            .context("an unterminated @sha256 placeholder")?;
        let file = rest[..end].to_string();
        let staged = std::fs::read_to_string(out.join(format!("{file}.sha256")))
            .with_context(|| format!("the digest of {file} (is it a plugin?)"))?;
        let digest = staged
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        text.replace_range(start..start + "@sha256 ".len() + end + 1, &digest);
    }
    std::fs::write(out.join("test-registry.toml"), text).context("writing test-registry.toml")?;
    eprintln!("  test-registry.toml (the test kinds, digests pinned)");
    Ok(())
}

fn build_plugins(out: &Path) -> Result<()> {
    let root = workspace_root();
    let built = root.join("plugins/target/wasm32-wasip2/release");
    let out = if out.is_absolute() {
        out.to_path_buf()
    } else {
        root.join(out)
    };
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    eprintln!("[1/3] building the adapters for wasm32-wasip2 (release)");
    build_components(&["--workspace"])?;
    let mut components: Vec<PathBuf> = std::fs::read_dir(&built)
        .with_context(|| format!("reading {}", built.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "wasm"))
        .collect();
    components.sort();
    if components.is_empty() {
        bail!("no components were built in {}", built.display());
    }
    eprintln!(
        "[2/3] staging {} component(s) in {}",
        components.len(),
        out.display()
    );
    for component in &components {
        let name = component
            .file_name()
            .context("component name")?
            .to_string_lossy()
            .into_owned();
        stage(component, &out, &name)?;
    }
    stage_test_registry(&out)?;
    let mutants: usize = ADAPTER_MUTANTS
        .iter()
        .map(|(_, _, _, mutants)| mutants.len())
        .sum();
    eprintln!("[3/3] building the contract suite's {mutants} mutants");
    for (package, file, prefix, mutants) in ADAPTER_MUTANTS {
        for mutant in mutants {
            let feature = format!("mutant-{mutant}");
            build_components(&["--package", package, "--features", &feature])?;
            stage(
                &built.join(file),
                &out,
                &format!("mutant-{prefix}-{mutant}.wasm"),
            )?;
        }
        // Leave the plain adapter as the last build of its crate.
        build_components(&["--package", package])?;
    }
    Ok(())
}

fn cargo(args: &[&str], manifest: Option<&Path>) -> Result<()> {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.args(args).current_dir(workspace_root());
    if let Some(manifest) = manifest {
        command.arg("--manifest-path").arg(manifest);
    }
    let status = command
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    Ok(())
}

/// The Docker Engine the tests run against: the one `OAC_DOCKER_SOCKET`
/// names, or a private one this run starts (and stops again when dropped).
struct TestEngine {
    socket: Option<PathBuf>,
    started: bool,
}

impl TestEngine {
    fn script() -> PathBuf {
        workspace_root().join("scripts/docker-engine.sh")
    }

    /// Uses the given engine, or starts the private one when this process
    /// may (root: it installs packages and runs dockerd). Otherwise says
    /// loudly why the engine tests will be skipped.
    fn prepare() -> Result<Self> {
        if let Some(socket) = std::env::var_os("OAC_DOCKER_SOCKET") {
            let socket = PathBuf::from(socket);
            eprintln!("Docker Engine tests run against {}", socket.display());
            return Ok(Self {
                socket: Some(socket),
                started: false,
            });
        }
        if !is_root()? {
            eprintln!(
                "SKIPPING the Docker Engine tests: OAC_DOCKER_SOCKET is not set and starting a \
                 private engine needs root (run as root, or start one with \
                 `scripts/docker-engine.sh start` and export the socket it prints)"
            );
            return Ok(Self {
                socket: None,
                started: false,
            });
        }
        if !Path::new("/bin/busybox").exists() {
            // The test runtime image is built from Debian's static busybox.
            eprintln!("installing busybox-static for the test runtime image");
            run(Command::new("apt-get").args(["install", "-y", "-q", "busybox-static"])).or_else(
                |_| {
                    run(Command::new("apt-get").args(["update", "-q"]))?;
                    run(Command::new("apt-get").args(["install", "-y", "-q", "busybox-static"]))
                },
            )?;
        }
        let running = Command::new(Self::script())
            .arg("status")
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        eprintln!("starting a private Docker Engine (scripts/docker-engine.sh start)");
        let output = Command::new(Self::script())
            .arg("start")
            .stderr(std::process::Stdio::inherit())
            .output()
            .context("running scripts/docker-engine.sh start")?;
        if !output.status.success() {
            bail!("the private Docker Engine did not start (see above)");
        }
        let socket = String::from_utf8_lossy(&output.stdout)
            .lines()
            .last()
            .map(PathBuf::from)
            .context("scripts/docker-engine.sh start printed no socket")?;
        eprintln!("Docker Engine tests run against {}", socket.display());
        Ok(Self {
            socket: Some(socket),
            started: !running,
        })
    }
}

impl Drop for TestEngine {
    fn drop(&mut self) {
        if self.started {
            eprintln!("stopping the private Docker Engine this run started");
            let _ = Command::new(Self::script())
                .arg("stop")
                .stdout(std::process::Stdio::null())
                .status();
        }
    }
}

fn is_root() -> Result<bool> {
    let output = Command::new("id")
        .arg("-u")
        .output()
        .context("running id -u")?;
    Ok(String::from_utf8_lossy(&output.stdout).trim() == "0")
}

fn run(command: &mut Command) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("running {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed");
    }
    Ok(())
}

/// The microsandbox helper's test build, started first at the lowest CPU
/// priority: it has its own workspace and target directory (the
/// microsandbox crate's ~470 crates take minutes), and the host's tests
/// spend most of their time waiting, which leaves it the CPU. Killed if
/// the run ends before it was waited for.
struct HelperBuild {
    child: std::process::Child,
    log: PathBuf,
}

impl HelperBuild {
    fn start() -> Result<Self> {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let log = workspace_root().join("target/microsandbox-helper-build.log");
        std::fs::create_dir_all(workspace_root().join("target"))?;
        let output = std::fs::File::create(&log)?;
        let child = Command::new("nice")
            .args(["-n", "19", &cargo, "test", "--no-run", "--manifest-path"])
            .arg(helper_manifest())
            .current_dir(workspace_root())
            .stdout(output.try_clone()?)
            .stderr(output)
            .spawn()
            .context("starting the microsandbox helper's build")?;
        Ok(Self { child, log })
    }

    /// Waits for the build, then runs the helper's tests (against the
    /// runtime `OAC_MICROSANDBOX_RUNTIME` names; they say when there is
    /// none).
    fn test(mut self) -> Result<()> {
        let status = self.child.wait()?;
        if !status.success() {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            bail!("the microsandbox helper's build failed:\n{log}");
        }
        if std::env::var_os("OAC_MICROSANDBOX_RUNTIME").is_none() {
            eprintln!(
                "WARNING: no microsandbox runtime: the helper's runtime tests are skipped \
                 (scripts/microsandbox-runtime.sh DIR, then OAC_MICROSANDBOX_RUNTIME=DIR)"
            );
        }
        cargo(&["test"], Some(&helper_manifest()))?;
        // The host drives the real helper through Wasm (the probe judged by
        // this machine), now that the helper is built.
        if std::env::var_os("OAC_MICROSANDBOX_RUNTIME").is_none() {
            return Ok(());
        }
        let helper =
            workspace_root().join("microsandbox-helper/target/debug/oac-microsandbox-helper");
        let test = "the_real_helper_and_runtime_are_judged_by_this_machine";
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args([
                "test",
                "-p",
                "contract-suite",
                "--test",
                "microsandbox_capability",
                test,
            ])
            .arg("--")
            .arg("--exact")
            .env("OAC_MICROSANDBOX_HELPER", helper)
            .env("OAC_REQUIRE_MICROSANDBOX_HELPER", "1")
            .current_dir(workspace_root())
            .status()
            .context("running the real helper's capability test")?;
        if !status.success() {
            bail!("the real helper's capability test failed");
        }
        Ok(())
    }
}

impl Drop for HelperBuild {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn helper_manifest() -> PathBuf {
    workspace_root().join("microsandbox-helper/Cargo.toml")
}

fn test() -> Result<()> {
    let helper = HelperBuild::start()?;
    build_plugins(Path::new("target/plugins"))?;
    let engine = TestEngine::prepare()?;
    let mut workspace = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    workspace
        .args(["test", "--workspace", "--all-targets"])
        .current_dir(workspace_root());
    if let Some(socket) = &engine.socket {
        // An engine is there: a Docker test that skips would be a failure.
        workspace
            .env("OAC_DOCKER_SOCKET", socket)
            .env("OAC_REQUIRE_DOCKER", "1");
    }
    run(&mut workspace)?;
    cargo(&["test"], Some(&workspace_root().join("sdk/Cargo.toml")))?;
    // The adapters' pure logic (configuration, names, archives) is unit
    // tested natively; the components themselves are tested through the host.
    let host = host_triple()?;
    cargo(
        &["test", "--target", &host],
        Some(&workspace_root().join("plugins/Cargo.toml")),
    )?;
    helper.test()
}

fn host_triple() -> Result<String> {
    let output = Command::new("rustc")
        .arg("-vV")
        .output()
        .context("running rustc -vV")?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: ").map(str::to_string))
        .context("rustc -vV names no host triple")
}

fn main() -> Result<()> {
    match Cli::parse().task {
        Task::BuildPlugins { out } => build_plugins(&out),
        Task::Test => test(),
    }
}
