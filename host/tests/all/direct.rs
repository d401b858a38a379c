//! Direct kinds (run on Core's side): from `sandbox-host call` and beside
//! Core through `sandbox-host serve` on a local socket, with the vendor
//! credential from a private file and durable receipts in a state
//! directory.

use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const KIND: &str = "steerable-direct";

fn host(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sandbox-host"))
        .args(args)
        .output()
        .expect("run sandbox-host")
}

fn plugins() -> String {
    crate::support::plugin_dir().display().to_string()
}

/// Writes `credential` into a file of `mode`.
fn credential_file(dir: &Path, mode: u32) -> String {
    let path = dir.join("vendor.key");
    std::fs::write(&path, "{\"api_key\":\"direct-secret-0123\"}\n").expect("credential");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    path.display().to_string()
}

/// `call` of the direct kind, steered by `steering`, with `extra` options.
fn call(state: &str, steering: Value, extra: &[&str]) -> Output {
    let configuration = format!("{KIND}={steering}");
    let plugins = plugins();
    let registry = format!("{plugins}/test-registry.toml");
    let mut args = vec![
        "call",
        KIND,
        "get-info",
        "--reference",
        "t/e/a",
        "--plugins",
        &plugins,
        "--registry",
        &registry,
        "--state-dir",
        state,
        "--configuration",
        &configuration,
    ];
    args.extend_from_slice(extra);
    host(&args)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn call_takes_a_direct_kinds_credential_from_a_private_file_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state").display().to_string();
    let requires = json!({"declaration": "credential-required", "action": "receipt-put"});

    let without = call(&state, requires.clone(), &[]);
    assert_eq!(without.status.code(), Some(2));
    assert!(
        stderr(&without).contains("kind `steerable-direct` requires a credential and has none"),
        "{}",
        stderr(&without)
    );

    let shared = credential_file(dir.path(), 0o644);
    let refused = call(
        &state,
        requires.clone(),
        &["--credential-file", &format!("{KIND}={shared}")],
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("must not be readable by group or others"),
        "{}",
        stderr(&refused)
    );
    assert!(!stderr(&refused).contains("direct-secret-0123"));

    let private = credential_file(dir.path(), 0o600);
    let on_a_node_kind = host(&[
        "call",
        "steerable",
        "get-info",
        "--reference",
        "t/e/a",
        "--plugins",
        &plugins(),
        "--registry",
        &format!("{}/test-registry.toml", plugins()),
        "--credential-file",
        &format!("steerable={private}"),
    ]);
    assert_eq!(on_a_node_kind.status.code(), Some(2));
    assert!(
        stderr(&on_a_node_kind).contains("`steerable` is not a direct kind"),
        "{}",
        stderr(&on_a_node_kind)
    );

    let answered = call(
        &state,
        requires,
        &["--credential-file", &format!("{KIND}={private}")],
    );
    assert!(answered.status.success(), "{}", stderr(&answered));
    let answer: Value = serde_json::from_slice(&answered.stdout).expect("JSON");
    assert_eq!(answer["ok"]["provider_id"], "ok", "{answer}");
    for output in [&answered.stdout, &answered.stderr] {
        assert!(!String::from_utf8_lossy(output).contains("direct-secret-0123"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_runs_a_direct_kind_on_a_local_socket_with_its_receipts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    std::fs::write(&token, "direct-test-token-0123456789\n").expect("token");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let credential = credential_file(dir.path(), 0o600);
    let state = dir.path().join("state").display().to_string();
    let socket = dir.path().join("core-side.sock").display().to_string();
    let config = dir.path().join("direct.toml");
    std::fs::write(
        &config,
        format!(
            r#"
token_file = "{token}"
installation = "inst-direct"
plugins = "{plugins}"
registry = "{plugins}/test-registry.toml"
state_dir = "{state}"
[listen]
unix = "{socket}"
[kinds.{KIND}]
credential_file = "{credential}"
[kinds.{KIND}.configuration]
declaration = "credential-required"
action = "receipt-put"
receipt_value = "written-through-serve"
"#,
            token = token.display(),
            plugins = plugins(),
        ),
    )
    .expect("config");
    let mut serve = Command::new(env!("CARGO_BIN_EXE_sandbox-host"))
        .args(["serve", "--config", &config.display().to_string()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve starts");
    let token = token.display().to_string();
    let registry = format!("{}/test-registry.toml", plugins());
    let client = |args: &[&str]| {
        let mut all = vec![
            "client",
            "--unix",
            &socket,
            "--token-file",
            &token,
            "--registry",
            &registry,
        ];
        all.extend_from_slice(args);
        host(&all)
    };
    let mut ready = false;
    for _ in 0..100 {
        if tokio::task::block_in_place(|| client(&["health"]))
            .status
            .success()
        {
            ready = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(ready, "serve became healthy");
    let called =
        tokio::task::block_in_place(|| client(&["call", KIND, "get-info", "--reference", "t/e/a"]));
    let answer: Value = serde_json::from_slice(&called.stdout).expect("JSON");
    assert_eq!(answer["ok"]["provider_id"], "ok", "{answer}");

    let pid = serve.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill")
            .success()
    );
    let status = tokio::task::block_in_place(|| serve.wait()).expect("serve exits");
    assert!(status.success(), "{status:?}");

    // The node released the store: the receipt it wrote is read back by
    // the next process on the same state directory, same installation.
    let read = call(
        &state,
        json!({"declaration": "credential-required", "action": "receipt-get"}),
        &[
            "--installation",
            "inst-direct",
            "--credential-file",
            &format!("{KIND}={credential}"),
        ],
    );
    assert!(read.status.success(), "{}", stderr(&read));
    let answer: Value = serde_json::from_slice(&read.stdout).expect("JSON");
    assert_eq!(answer["ok"]["provider_id"], "written-through-serve");
}
