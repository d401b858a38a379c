//! What the node offers, read without changing anything: the CPU's
//! virtualisation flags, the runtime's own diagnosis, its version and
//! digest, and its home's mode. The host judges them.

use oac_helper_protocol::{Probe, Runtime};
use sha2::{Digest, Sha256};
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

/// Reads the facts; a fact that cannot be read reads as the unready value.
pub(crate) async fn probe(runtime: &Runtime) -> Probe {
    Probe {
        cpu_virtualisation: cpu_virtualisation(),
        doctor_passed: runs_successfully(runtime, &["doctor"]).await.is_some(),
        runtime_version: runs_successfully(runtime, &["--version"])
            .await
            .map(|out| String::from_utf8_lossy(&out).trim().to_string())
            .unwrap_or_default(),
        runtime_sha256: std::fs::read(&runtime.msb)
            .map(|bytes| hex(&Sha256::digest(bytes)))
            .unwrap_or_default(),
        home_mode: std::fs::symlink_metadata(&runtime.home)
            .ok()
            .filter(|meta| meta.is_dir())
            .map(|meta| meta.permissions().mode() & 0o7777),
    }
}

/// True when `/proc/cpuinfo` lists `vmx` (Intel) or `svm` (AMD) among a
/// CPU's flags: without them no VM boots, whatever `/dev/kvm` says.
pub(crate) fn cpu_virtualisation() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|text| {
        text.lines()
            .filter(|line| line.starts_with("flags"))
            .any(|line| {
                line.split_whitespace()
                    .any(|flag| flag == "vmx" || flag == "svm")
            })
    })
}

/// Runs `msb <args>` with the runtime's environment; its stdout when it
/// exits 0 (at most 64 KiB are kept).
async fn runs_successfully(runtime: &Runtime, args: &[&str]) -> Option<Vec<u8>> {
    let output = tokio::process::Command::new(&runtime.msb)
        .args(args)
        .env("MSB_HOME", &runtime.home)
        .env("MSB_PATH", &runtime.msb)
        .env("MSB_LIBKRUNFW_PATH", &runtime.libkrunfw)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .await
        .ok()?;
    let mut stdout = output.stdout;
    stdout.truncate(64 * 1024);
    output.status.success().then_some(stdout)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
