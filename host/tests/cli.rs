//! The `sandbox-host` binary as an operator runs it.

use std::process::Command;

fn plugins() -> String {
    std::env::var("OAC_PLUGIN_DIR")
        .unwrap_or_else(|_| format!("{}/../target/plugins", env!("CARGO_MANIFEST_DIR")))
}

fn host(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sandbox-host"))
        .args(args)
        .output()
        .expect("run sandbox-host")
}

#[test]
fn validate_loads_every_registered_kind() {
    let output = host(&["validate", "--plugins", &plugins()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("steerable: ok (28 operations declared")
    );
}

#[test]
fn describe_prints_declarations_and_requirements_as_json() {
    let output = host(&["describe", "--plugins", &plugins()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let described: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let kinds = described["kinds"].as_array().expect("kinds");
    let kind = kinds
        .iter()
        .find(|kind| kind["registration"]["kind"] == "steerable")
        .expect("steerable described");
    let docker = kinds
        .iter()
        .find(|kind| kind["registration"]["kind"] == "docker")
        .expect("docker described");
    assert_eq!(
        docker["declaration"]["suspend"]["reason"],
        "docker_does_not_support_checkpoints"
    );
    assert_eq!(docker["requirements"]["credential"], "NotRequired");
    assert_eq!(kind["registration"]["kind"], "steerable");
    assert_eq!(kind["declaration"]["create"]["support"], "supported");
    assert_eq!(
        kind["declaration"]["suspend"]["reason"],
        "steerable_has_no_checkpoints"
    );
    assert_eq!(kind["inventory"].as_array().map(Vec::len), Some(28));
    assert!(kind["requirements"].is_object());
    assert_eq!(kind["sha256"].as_str().map(str::len), Some(64));
}

#[test]
fn bad_input_gets_a_clear_error_and_exit_status_2() {
    let output = host(&[
        "call",
        "steerable",
        "get-info",
        "--reference",
        "only/two",
        "--plugins",
        &plugins(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("--reference takes TENANT/ENVIRONMENT/ALLOCATION")
    );
    let output = host(&[
        "call",
        "steerable",
        "get-info",
        "--reference",
        "t/e/a",
        "--budget-ms",
        "0",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("budget must be between 1 and 120000")
    );
}

#[test]
fn a_missing_plugin_directory_is_reported_not_panicked() {
    let output = host(&["validate", "--plugins", "/nonexistent/plugins"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot read component"), "{stderr}");
    assert!(!stderr.contains("panicked"));
}

mod support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bollard_never_logs_request_bodies_whatever_rust_log_asks() {
    let engine = support::FakeEngine::start().await;
    let socket = engine.socket.to_string_lossy().into_owned();
    let plugins = plugins();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_sandbox-host"))
            .args([
                "call",
                "steerable",
                "get-info",
                "--reference",
                "t/e/a",
                "--plugins",
                &plugins,
            ])
            .args([
                "--docker-socket",
                &socket,
                "--configuration",
                r#"steerable={"action":"volume-inspect"}"#,
            ])
            .env("RUST_LOG", "bollard=trace")
            .output()
            .expect("run sandbox-host")
    })
    .await
    .expect("join");
    assert!(
        !engine.recorded().is_empty(),
        "the call reached the engine through bollard"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("bollard"), "bollard logged: {stderr}");
}
