//! The suite against the real Docker adapter (every case holds) and against
//! each mutant (the expected clause fails). Components come from
//! `cargo xtask build-plugins` (`target/plugins`).

use contract_suite::cases::Clause;
use contract_suite::harness::{FAKE_SECCOMP_PROFILE, Fixture};
use contract_suite::{Report, Target};
use sandbox_host::registry::Mode;
use std::path::PathBuf;

fn component(name: &str) -> PathBuf {
    std::env::var_os("OAC_PLUGIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins"))
        .join(name)
}

async fn suite(name: &str) -> Report {
    let configuration = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("profiles/docker.json"),
    )
    .expect("docker profile");
    let target = Target {
        component: component(name),
        mode: Mode::Nodes,
        configuration,
        seccomp_profile: contract_suite::harness::FAKE_SECCOMP_PROFILE.into(),
        budget_ms: 1_000,
        fixture: contract_suite::harness::Fixture::FakeEngine,
    };
    contract_suite::run(&target, false)
        .await
        .expect("suite runs")
}

fn failed_ids(report: &Report) -> Vec<String> {
    report.failures().map(|case| case.id.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_docker_adapter_passes_every_case() {
    let report = suite("docker.wasm").await;
    assert!(
        report.cases.len() >= 40,
        "only {} cases",
        report.cases.len()
    );
    assert_eq!(report.failed(), 0, "{}", report.render("docker.wasm"));
}

async fn assert_caught(mutant: &str, clause_prefix: &str) {
    let report = suite(&format!("mutant-{mutant}.wasm")).await;
    let failed = failed_ids(&report);
    assert!(
        failed.iter().any(|id| id.starts_with(clause_prefix)),
        "mutant {mutant} not caught by {clause_prefix}*; failed: {failed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_replayed_after_a_lost_response_is_caught() {
    assert_caught("retry-create", "failure.create.lost-response").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_on_foreign_labels_is_caught() {
    assert_caught("delete-foreign", "ownership.kill-on-collision").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invented_settlement_is_caught() {
    assert_caught("invent-settlement", "failure.create.").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_io_before_unsupported_is_caught() {
    assert_caught("io-before-unsupported", "unsupported.observe-batch").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaked_secret_is_caught() {
    assert_caught("leak-secret", "leaks.credential").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settlement_claimed_by_an_observation_is_caught() {
    assert_caught("settle-on-observation", "settlement.").await;
}

/// The checkpoint clause against the steerable component's checkpoint mode
/// (the fake vendor's sandboxes and snapshots), steered further by `extra`.
async fn checkpointing(extra: serde_json::Value) -> Report {
    let mut configuration = serde_json::json!({
        "declaration": "checkpoint",
        "action": "vendor",
        "url": "${FIXTURE_ORIGIN}",
    });
    if let (Some(configuration), Some(extra)) = (configuration.as_object_mut(), extra.as_object()) {
        configuration.extend(extra.clone());
    }
    let target = Target {
        component: component("steerable.wasm"),
        mode: Mode::Nodes,
        configuration: configuration.to_string(),
        seccomp_profile: FAKE_SECCOMP_PROFILE.into(),
        budget_ms: 2_000,
        fixture: Fixture::FakeVendor,
    };
    contract_suite::run_clauses(&target, &[Clause::Checkpoint], false)
        .await
        .expect("suite runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checkpoint_clause_holds_for_a_checkpointing_adapter() {
    let report = checkpointing(serde_json::json!({})).await;
    assert!(report.cases.len() >= 9, "only {} cases", report.cases.len());
    assert_eq!(report.failed(), 0, "{}", report.render("steerable.wasm"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_start_in_resume_compute_is_caught() {
    let report = checkpointing(serde_json::json!({ "cold_start": true })).await;
    assert_eq!(
        failed_ids(&report),
        vec!["checkpoint.resume-compute-never-cold-starts".to_string()],
        "{}",
        report.render("steerable.wasm")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_claiming_another_operation_is_caught() {
    let report = checkpointing(serde_json::json!({ "lie": "operation" })).await;
    let failed = failed_ids(&report);
    assert!(
        failed.contains(&"checkpoint.suspend".to_string()),
        "not caught; failed: {failed:?}"
    );
}

/// The fault matrix against an adapter that reaches its vendor over `http`
/// (the steerable test component against the fake vendor API).
async fn http_adapter(replay: bool) -> Report {
    let configuration = serde_json::json!({
        "action": "vendor",
        "url": "${FIXTURE_ORIGIN}",
        "replay": replay,
    });
    let target = Target {
        component: component("steerable.wasm"),
        mode: Mode::Direct,
        configuration: configuration.to_string(),
        seccomp_profile: FAKE_SECCOMP_PROFILE.into(),
        budget_ms: 1_000,
        fixture: Fixture::FakeVendor,
    };
    contract_suite::run_clauses(&target, &[Clause::FailureMatrix], false)
        .await
        .expect("suite runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fault_matrix_runs_against_an_http_adapter() {
    let report = http_adapter(false).await;
    assert!(
        report.cases.len() >= 20,
        "only {} cases",
        report.cases.len()
    );
    assert_eq!(report.failed(), 0, "{}", report.render("steerable.wasm"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_adapter_replaying_create_is_caught() {
    let failed = failed_ids(&http_adapter(true).await);
    assert!(
        failed
            .iter()
            .any(|id| id.starts_with("failure.create.lost-response")),
        "replay not caught; failed: {failed:?}"
    );
}

/// The suite against an E2B build (`e2b.wasm` or a mutant) and the fake E2B.
async fn e2b_suite(name: &str) -> Report {
    let configuration = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("profiles/e2b.json"),
    )
    .expect("e2b profile");
    let target = Target {
        component: component(name),
        mode: Mode::Direct,
        configuration,
        seccomp_profile: FAKE_SECCOMP_PROFILE.into(),
        // Receipts are fsync'd: a Create commits four times, which takes
        // seconds on a disk still writing back a build.
        budget_ms: 5_000,
        fixture: Fixture::FakeE2b,
    };
    contract_suite::run(&target, false)
        .await
        .expect("suite runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_e2b_adapter_passes_every_case() {
    let report = e2b_suite("e2b.wasm").await;
    assert!(
        report.cases.len() >= 100,
        "only {} cases",
        report.cases.len()
    );
    assert_eq!(report.failed(), 0, "{}", report.render("e2b.wasm"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_e2b_create_replayed_after_an_unknown_outcome_is_caught() {
    let failed = failed_ids(&e2b_suite("mutant-e2b-replay-create.wasm").await);
    assert!(
        failed
            .iter()
            .any(|id| id.starts_with("failure.create.lost-response.")),
        "not caught; failed: {failed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_e2b_kill_without_terminal_proof_is_caught() {
    let failed = failed_ids(&e2b_suite("mutant-e2b-kill-without-proof.wasm").await);
    assert!(
        failed.iter().any(|id| id.starts_with("failure.kill.")),
        "not caught; failed: {failed:?}"
    );
    assert!(
        failed.contains(&"receipts.kill-needs-proof".to_string()),
        "not caught by the receipts clause; failed: {failed:?}"
    );
}

/// Every production kind of the built-in table has a suite profile, so CI
/// judges each (the steerable test component is the host's own instrument,
/// not a provider).
#[test]
fn every_builtin_kind_has_a_suite_profile() {
    let profiles = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("profiles");
    let providers: Vec<String> = sandbox_host::registry::builtin()
        .into_iter()
        .filter(|row| row.component != "steerable.wasm")
        .map(|row| row.kind)
        .collect();
    assert!(providers.contains(&"docker".to_string()), "{providers:?}");
    for kind in providers {
        let profile = profiles.join(format!("{kind}.json"));
        let text = std::fs::read_to_string(&profile).unwrap_or_else(|_| {
            panic!(
                "kind `{kind}` has no suite profile at {}",
                profile.display()
            )
        });
        assert!(
            serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|v| v.is_object()),
            "the profile of `{kind}` is a JSON object"
        );
    }
}
