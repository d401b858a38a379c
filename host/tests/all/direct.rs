//! Direct kinds (run on Core's side): from `sandbox-host call` and beside
//! Core through `sandbox-host serve` on a local socket, with the vendor
//! credential from a private file and durable receipts in a state
//! directory.

use crate::support::cli::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};

const KIND: &str = "steerable-direct";

/// Writes `credential` into a file of `mode`.
fn credential_file(dir: &Path, mode: u32) -> String {
    let path = dir.join("vendor.key");
    std::fs::write(&path, "{\"api_key\":\"direct-secret-0123\"}\n").expect("credential");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    path.display().to_string()
}

/// `call` of the direct kind, steered by `steering`, with `extra` options.
fn call_direct(state: &str, steering: Value, extra: &[&str]) -> Output {
    call(KIND, "get-info")
        .args(["--state-dir", state])
        .args(["--configuration", &format!("{KIND}={steering}")])
        .args(extra)
        .output()
        .expect("run sandbox-host")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn call_takes_a_direct_kinds_credential_from_a_private_file_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state").display().to_string();
    let requires = json!({"declaration": "credential-required", "action": "receipt-put"});

    let without = call_direct(&state, requires.clone(), &[]);
    assert_eq!(without.status.code(), Some(2));
    assert!(
        stderr(&without).contains("kind `steerable-direct` requires a credential and has none"),
        "{}",
        stderr(&without)
    );

    let shared = credential_file(dir.path(), 0o644);
    let refused = call_direct(
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
    let on_a_node_kind = call("steerable", "get-info")
        .args(["--credential-file", &format!("steerable={private}")])
        .output()
        .expect("run sandbox-host");
    assert_eq!(on_a_node_kind.status.code(), Some(2));
    assert!(
        stderr(&on_a_node_kind).contains("`steerable` is not a direct kind"),
        "{}",
        stderr(&on_a_node_kind)
    );

    let answered = call_direct(
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
    let token = private_token(dir.path(), "direct-test-token-0123456789");
    let credential = credential_file(dir.path(), 0o600);
    let state = dir.path().join("state").display().to_string();
    let socket = dir.path().join("core-side.sock").display().to_string();
    let tables = format!(
        "[listen]\nunix = \"{socket}\"\n[kinds.{KIND}]\ncredential_file = \"{credential}\"\n\
         [kinds.{KIND}.configuration]\ndeclaration = \"credential-required\"\n\
         action = \"receipt-put\"\nreceipt_value = \"written-through-serve\"\n"
    );
    let config = node_config(dir.path(), &token, "inst-direct", &tables);
    let serve = serve(&config, Stdio::piped());
    let token = token.display().to_string();
    let client = |args: &[&str]| client(&socket, &token).args(args).output().expect("client");
    let ready = until_served(|| client(&["health"])).await;
    assert!(ready.is_some(), "serve became healthy");
    let called =
        tokio::task::block_in_place(|| client(&["call", KIND, "get-info", "--reference", "t/e/a"]));
    let answer: Value = serde_json::from_slice(&called.stdout).expect("JSON");
    assert_eq!(answer["ok"]["provider_id"], "ok", "{answer}");

    stop(serve);

    // The node released the store: the receipt it wrote is read back by
    // the next process on the same state directory, same installation.
    let read = call_direct(
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
