//! The suite against the real Docker adapter (every case holds) and against
//! each mutant (the expected clause fails). Components come from
//! `cargo xtask build-plugins` (`target/plugins`).
//!
//! Each test runs in a process of its own ([`main`], a harness of its own):
//! a suite run reads the log its process captured, so runs in one process
//! take turns, and most of a run is waiting (budgets that must run out,
//! fsync'd receipts), which other runs can use.

use contract_suite::cases::Clause;
use contract_suite::harness::FAKE_SECCOMP_PROFILE;
use contract_suite::profile::{FakeSource, HttpProfile};
use contract_suite::{DockerTier, MicrosandboxTier, Report, Target, Tier};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

/// Names the test a child process runs (see [`main`]).
const CHILD: &str = "OAC_SUITE_TEST_CHILD";

/// How many tests run at once unless `--test-threads` says otherwise: a
/// suite run spends most of its time waiting, but its heaviest cases (50
/// MiB of stdin through a debug host) need a core each within their
/// budget; at three or four at once on two cores they sometimes did not.
const AT_ONCE: usize = 2;

/// A test's body.
type Body = fn() -> Pin<Box<dyn Future<Output = ()>>>;

/// Each test, by name.
const TESTS: &[(&str, Body)] = &[
    ("the_docker_adapter_passes_every_case", || {
        Box::pin(the_docker_adapter_passes_every_case())
    }),
    ("a_create_replayed_after_a_lost_response_is_caught", || {
        Box::pin(a_create_replayed_after_a_lost_response_is_caught())
    }),
    ("deleting_on_foreign_labels_is_caught", || {
        Box::pin(deleting_on_foreign_labels_is_caught())
    }),
    ("an_invented_settlement_is_caught", || {
        Box::pin(an_invented_settlement_is_caught())
    }),
    ("native_io_before_unsupported_is_caught", || {
        Box::pin(native_io_before_unsupported_is_caught())
    }),
    ("a_leaked_secret_is_caught", || {
        Box::pin(a_leaked_secret_is_caught())
    }),
    ("settlement_claimed_by_an_observation_is_caught", || {
        Box::pin(settlement_claimed_by_an_observation_is_caught())
    }),
    ("leak_cases_do_not_hold_when_nothing_was_created", || {
        Box::pin(leak_cases_do_not_hold_when_nothing_was_created())
    }),
    (
        "the_checkpoint_clause_holds_for_a_checkpointing_adapter",
        || Box::pin(the_checkpoint_clause_holds_for_a_checkpointing_adapter()),
    ),
    ("a_cold_start_in_resume_compute_is_caught", || {
        Box::pin(a_cold_start_in_resume_compute_is_caught())
    }),
    ("a_capture_claiming_another_operation_is_caught", || {
        Box::pin(a_capture_claiming_another_operation_is_caught())
    }),
    ("the_fault_matrix_runs_against_an_http_adapter", || {
        Box::pin(the_fault_matrix_runs_against_an_http_adapter())
    }),
    ("an_http_adapter_replaying_create_is_caught", || {
        Box::pin(an_http_adapter_replaying_create_is_caught())
    }),
    ("the_e2b_adapter_passes_every_case", || {
        Box::pin(the_e2b_adapter_passes_every_case())
    }),
    (
        "an_e2b_create_replayed_after_an_unknown_outcome_is_caught",
        || Box::pin(an_e2b_create_replayed_after_an_unknown_outcome_is_caught()),
    ),
    ("an_e2b_kill_without_terminal_proof_is_caught", || {
        Box::pin(an_e2b_kill_without_terminal_proof_is_caught())
    }),
    ("an_e2b_mutation_sent_twice_is_caught", || {
        Box::pin(an_e2b_mutation_sent_twice_is_caught())
    }),
    ("each_broken_declaration_fails_the_rule_it_breaks", || {
        Box::pin(each_broken_declaration_fails_the_rule_it_breaks())
    }),
    ("an_observation_that_writes_is_caught", || {
        Box::pin(an_observation_that_writes_is_caught())
    }),
    ("the_example_adapter_passes_every_clause", || {
        Box::pin(the_example_adapter_passes_every_clause())
    }),
    ("the_example_replaying_create_is_caught", || {
        Box::pin(the_example_replaying_create_is_caught())
    }),
    ("the_example_killing_without_proof_is_caught", || {
        Box::pin(the_example_killing_without_proof_is_caught())
    }),
    ("the_example_deleting_a_foreign_box_is_caught", || {
        Box::pin(the_example_deleting_a_foreign_box_is_caught())
    }),
    ("the_example_leaking_the_credential_is_caught", || {
        Box::pin(the_example_leaking_the_credential_is_caught())
    }),
    ("the_example_deleting_twice_is_caught", || {
        Box::pin(the_example_deleting_twice_is_caught())
    }),
    ("every_builtin_kind_has_a_suite_profile", || {
        Box::pin(every_builtin_kind_has_a_suite_profile())
    }),
    ("the_microsandbox_adapter_passes_every_case", || {
        Box::pin(the_microsandbox_adapter_passes_every_case())
    }),
    (
        "a_microsandbox_cold_start_in_resume_compute_is_caught",
        || {
            Box::pin(microsandbox_mutant(
                "cold-start",
                "checkpoint.resume-compute-never-cold-starts",
            ))
        },
    ),
    (
        "a_microsandbox_source_run_after_its_capture_is_caught",
        || {
            Box::pin(microsandbox_mutant(
                "run-after-capture",
                "checkpoint.suspend-stops-the-source-at-its-capture",
            ))
        },
    ),
    ("a_microsandbox_recapture_is_caught", || {
        Box::pin(microsandbox_mutant(
            "recapture",
            "checkpoint.suspend-again-never-recaptures",
        ))
    }),
    (
        "a_microsandbox_restore_under_observe_only_is_caught",
        || {
            Box::pin(microsandbox_mutant(
                "restore-observe-only",
                "checkpoint.resume-observe-only-never-restores",
            ))
        },
    ),
    ("a_microsandbox_snapshot_deleted_unasked_is_caught", || {
        Box::pin(microsandbox_mutant(
            "delete-other-snapshot",
            "checkpoint.delete-snapshot",
        ))
    }),
];

/// The test harness. Run as a child (`CHILD` names a test), runs that
/// test's body on a runtime of its own; otherwise runs each test as such a
/// child of this binary, [`AT_ONCE`] at a time, and takes its output and
/// outcome.
fn main() {
    if let Some(name) = std::env::var_os(CHILD) {
        let test = TESTS
            .iter()
            .find(|(test, _)| *test == name)
            .map(|(_, test)| test)
            .expect("the child's test exists");
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(test());
        return;
    }
    let mut arguments = libtest_mimic::Arguments::from_args();
    arguments.test_threads.get_or_insert(AT_ONCE);
    let trials = TESTS
        .iter()
        .map(|(name, _)| libtest_mimic::Trial::test(*name, move || in_own_process(name)))
        .collect();
    libtest_mimic::run(&arguments, trials).exit();
}

/// Runs the test `name` in a child process: this binary again, whose output
/// becomes the test's.
fn in_own_process(name: &str) -> Result<(), libtest_mimic::Failed> {
    let output = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .env(CHILD, name)
        .output()
        .map_err(|error| format!("the test binary did not run: {error}"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
    .into())
}

fn component(name: &str) -> PathBuf {
    std::env::var_os("OAC_PLUGIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins"))
        .join(name)
}

/// The whole suite against a Docker-tier component and the fake engine.
async fn suite(name: &str) -> Report {
    suite_clauses(name, &Clause::ALL).await
}

/// `clauses` of the suite against a Docker-tier component and the fake
/// engine.
async fn suite_clauses(name: &str, clauses: &[Clause]) -> Report {
    let configuration = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("profiles/docker.json"),
    )
    .expect("docker profile");
    let target = Target {
        component: component(name),
        budget_ms: 1_000,
        tier: Tier::Docker(DockerTier {
            engine: None,
            configuration,
            seccomp_profile: FAKE_SECCOMP_PROFILE.into(),
        }),
    };
    contract_suite::run_clauses(&target, clauses, false)
        .await
        .expect("suite runs")
}

fn failed_ids(report: &Report) -> Vec<String> {
    report.failures().map(|case| case.id.clone()).collect()
}

async fn the_docker_adapter_passes_every_case() {
    let report = suite("docker.wasm").await;
    assert!(
        report.cases.len() >= 40,
        "only {} cases",
        report.cases.len()
    );
    assert_eq!(report.failed(), 0, "{}", report.render("docker.wasm"));
}

/// Asserts that each of `ids` failed; with `only`, that nothing else did.
fn assert_failed(report: &Report, name: &str, ids: &[&str], only: bool) {
    let failed = failed_ids(report);
    for id in ids {
        assert!(
            failed.iter().any(|f| f == id),
            "{name} not caught by {id}; failed: {failed:?}"
        );
    }
    if only {
        assert_eq!(failed.len(), ids.len(), "{name}: also failed {failed:?}");
    }
}

/// Runs `clauses` against the Docker mutant `mutant` and asserts that each
/// of `ids` failed; with `only`, that nothing else did. A mutant whose
/// cases judge one clause runs only that clause; `only` over every clause
/// takes the whole suite.
async fn assert_caught(mutant: &str, clauses: &[Clause], ids: &[&str], only: bool) {
    let report = suite_clauses(&format!("mutant-docker-{mutant}.wasm"), clauses).await;
    assert_failed(&report, mutant, ids, only);
}

async fn a_create_replayed_after_a_lost_response_is_caught() {
    assert_caught(
        "retry-create",
        &[Clause::FailureMatrix],
        &["failure.create.lost-response.1"],
        false,
    )
    .await;
}

async fn deleting_on_foreign_labels_is_caught() {
    assert_caught(
        "delete-foreign",
        &[Clause::FailureMatrix, Clause::Ownership],
        &[
            "ownership.kill-on-collision",
            "failure.kill.cleanup-failure",
        ],
        false,
    )
    .await;
}

async fn an_invented_settlement_is_caught() {
    assert_caught(
        "invent-settlement",
        &[Clause::Lifecycle, Clause::FailureMatrix],
        &[
            "lifecycle.duplicate-create",
            "failure.create.transport-failure.1",
        ],
        false,
    )
    .await;
}

/// A component that touches its vendor before answering `unsupported` (the
/// steerable component: an SDK adapter cannot write this) fails exactly
/// that operation's case.
async fn native_io_before_unsupported_is_caught() {
    let steering = serde_json::json!({
        "touch_before_unsupported": true,
        "url": "${FIXTURE_ORIGIN}/sandboxes",
    });
    let target = steerable("direct", steering, 1_000);
    let report = contract_suite::run_clauses(&target, &[Clause::Unsupported], false)
        .await
        .expect("suite runs");
    assert_failed(
        &report,
        "touch_before_unsupported",
        &["unsupported.observe-batch"],
        true,
    );
}

async fn a_leaked_secret_is_caught() {
    assert_caught("leak-secret", &Clause::ALL, &["leaks.credential"], true).await;
}

async fn settlement_claimed_by_an_observation_is_caught() {
    assert_caught(
        "settle-on-observation",
        &Clause::ALL,
        &["settlement.observation", "settlement.kill-again"],
        true,
    )
    .await;
}

/// A run that never created anything cannot show that nothing leaked: the
/// leak cases report not run instead of holding.
async fn leak_cases_do_not_hold_when_nothing_was_created() {
    let configuration = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("profiles/docker.json"),
    )
    .expect("docker profile");
    let target = Target {
        component: component("docker.wasm"),
        budget_ms: 1_000,
        tier: Tier::Docker(DockerTier {
            engine: None,
            configuration,
            seccomp_profile: FAKE_SECCOMP_PROFILE.into(),
        }),
    };
    let alone = contract_suite::run_clauses(&target, &[Clause::Leaks], false)
        .await
        .expect("suite runs");
    assert_eq!(alone.cases.len(), 3);
    assert_eq!((alone.passed(), alone.failed()), (0, 0));
    assert_eq!(alone.not_run().count(), 3);
    assert!(
        alone
            .render("docker.wasm")
            .ends_with("0 passed, 0 failed, 3 not run\n")
    );
    let after = contract_suite::run_clauses(&target, &[Clause::Lifecycle, Clause::Leaks], false)
        .await
        .expect("suite runs");
    assert_eq!(after.not_run().count(), 0);
    assert_eq!(after.failed(), 0, "{}", after.render("docker.wasm"));
}

/// A profile of `contract-suite/profiles`, its fake started from this
/// build's `oac-fake`.
fn http_profile(name: &str, fake: &str) -> HttpProfile {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("profiles")
        .join(name);
    let mut profile = HttpProfile::load(&path).expect("profile");
    profile.fake = FakeSource::Command {
        command: vec![env!("CARGO_BIN_EXE_oac-fake").into(), fake.into()],
    };
    profile
}

/// The steerable component over HTTP against its fake vendor, its
/// configuration extended by `extra`.
fn steerable(mode: &str, extra: serde_json::Value, budget_ms: u32) -> Target {
    let mut profile = http_profile("steerable.json", "steerable");
    profile.mode = mode.into();
    if let (Some(configuration), Some(extra)) =
        (profile.configuration.as_object_mut(), extra.as_object())
    {
        configuration.extend(extra.clone());
    }
    Target {
        component: component("steerable.wasm"),
        budget_ms,
        tier: Tier::Http(Box::new(profile)),
    }
}

/// The checkpoint clause against the steerable component's checkpoint mode
/// (the fake vendor's sandboxes and snapshots), steered further by `extra`.
async fn checkpointing(extra: serde_json::Value) -> Report {
    let mut steering = serde_json::json!({ "declaration": "checkpoint" });
    if let (Some(steering), Some(extra)) = (steering.as_object_mut(), extra.as_object()) {
        steering.extend(extra.clone());
    }
    let target = steerable("nodes", steering, 2_000);
    contract_suite::run_clauses(&target, &[Clause::Checkpoint], false)
        .await
        .expect("suite runs")
}

async fn the_checkpoint_clause_holds_for_a_checkpointing_adapter() {
    let report = checkpointing(serde_json::json!({})).await;
    assert!(report.cases.len() >= 9, "only {} cases", report.cases.len());
    assert_eq!(report.failed(), 0, "{}", report.render("steerable.wasm"));
}

async fn a_cold_start_in_resume_compute_is_caught() {
    let report = checkpointing(serde_json::json!({ "cold_start": true })).await;
    assert_eq!(
        failed_ids(&report),
        vec!["checkpoint.resume-compute-never-cold-starts".to_string()],
        "{}",
        report.render("steerable.wasm")
    );
}

async fn a_capture_claiming_another_operation_is_caught() {
    let report = checkpointing(serde_json::json!({ "lie": "operation" })).await;
    assert_failed(&report, "lie", &["checkpoint.suspend"], false);
}

/// The fault matrix against an adapter that reaches its vendor over `http`
/// (the steerable test component against the fake vendor API).
async fn http_adapter(replay: bool) -> Report {
    let target = steerable("direct", serde_json::json!({ "replay": replay }), 1_000);
    contract_suite::run_clauses(&target, &[Clause::FailureMatrix], false)
        .await
        .expect("suite runs")
}

async fn the_fault_matrix_runs_against_an_http_adapter() {
    let report = http_adapter(false).await;
    assert!(
        report.cases.len() >= 20,
        "only {} cases",
        report.cases.len()
    );
    assert_eq!(report.failed(), 0, "{}", report.render("steerable.wasm"));
}

async fn an_http_adapter_replaying_create_is_caught() {
    // Request 2 is the create (after a lookup).
    let report = http_adapter(true).await;
    assert_failed(
        &report,
        "replay",
        &["failure.create.lost-response.2"],
        false,
    );
}

/// The suite against the E2B adapter and the fake E2B, whose sandboxes are
/// containers on the engine `OAC_DOCKER_SOCKET` names (the fake's process
/// inherits it); without one, commands are simulated.
async fn e2b_suite() -> Report {
    match std::env::var_os("OAC_DOCKER_SOCKET") {
        Some(_) => {}
        None if std::env::var("OAC_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!("OAC_REQUIRE_DOCKER=1 but OAC_DOCKER_SOCKET is not set")
        }
        None => eprintln!(
            "the E2B suite runs against simulated commands: no Docker Engine (set \
             OAC_DOCKER_SOCKET; see scripts/docker-engine.sh)"
        ),
    }
    e2b_run("e2b.wasm", http_profile("e2b.json", "e2b"), &Clause::ALL).await
}

/// `clauses` of the suite against an E2B mutant and the fake E2B with
/// simulated commands: each mutant breaks a receipt or fault rule, which no
/// command decides, and containers would only add minutes.
async fn e2b_mutant_suite(name: &str, clauses: &[Clause]) -> Report {
    let mut profile = http_profile("e2b.json", "e2b");
    if let FakeSource::Command { command } = &mut profile.fake {
        command.push("--simulate".into());
    }
    e2b_run(name, profile, clauses).await
}

async fn e2b_run(name: &str, profile: HttpProfile, clauses: &[Clause]) -> Report {
    let target = Target {
        component: component(name),
        // Receipts are fsync'd: a Create commits four times, which takes
        // seconds on a disk still writing back a build.
        budget_ms: 5_000,
        tier: Tier::Http(Box::new(profile)),
    };
    contract_suite::run_clauses(&target, clauses, false)
        .await
        .expect("suite runs")
}

async fn the_e2b_adapter_passes_every_case() {
    let report = e2b_suite().await;
    assert!(
        report.cases.len() >= 126,
        "only {} cases",
        report.cases.len()
    );
    assert_eq!(report.failed(), 0, "{}", report.render("e2b.wasm"));
}

async fn an_e2b_create_replayed_after_an_unknown_outcome_is_caught() {
    let report = e2b_mutant_suite("mutant-e2b-replay-create.wasm", &[Clause::FailureMatrix]).await;
    assert_failed(
        &report,
        "replay-create",
        &["failure.create.lost-response.1"],
        false,
    );
}

async fn an_e2b_kill_without_terminal_proof_is_caught() {
    let report = e2b_mutant_suite(
        "mutant-e2b-kill-without-proof.wasm",
        &[Clause::FailureMatrix, Clause::Receipts],
    )
    .await;
    assert_failed(
        &report,
        "kill-without-proof",
        &["failure.kill.cleanup-failure", "receipts.kill-needs-proof"],
        false,
    );
}

/// A component that sends each mutation twice, checking both answers,
/// passes every other case of the failure matrix (each fault stops it
/// where the legitimate sequence would stop); only the legitimate sequence
/// itself shows it.
async fn an_e2b_mutation_sent_twice_is_caught() {
    let report = e2b_mutant_suite("mutant-e2b-mutate-twice.wasm", &[Clause::FailureMatrix]).await;
    assert_failed(
        &report,
        "mutate-twice",
        &[
            "failure.renew.each-mutation-once",
            "failure.kill.each-mutation-once",
        ],
        true,
    );
}

/// Every production kind of the built-in table has a suite profile, so CI
/// judges each (the steerable test component is the host's own instrument,
/// not a provider).
async fn every_builtin_kind_has_a_suite_profile() {
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
        let row = sandbox_host::registry::builtin()
            .into_iter()
            .find(|row| row.kind == kind)
            .expect("row");
        if row.grants.microsandbox {
            // The microsandbox tier takes no configuration: the profile
            // names the suite's tier (`contract-suite --microsandbox`).
            let profile: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            assert_eq!(profile["tier"], "microsandbox", "the profile of `{kind}`");
        } else if row.grants.docker {
            assert!(
                serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|v| v.is_object()),
                "the configuration of `{kind}` is a JSON object"
            );
        } else {
            let loaded = HttpProfile::load(&profile)
                .unwrap_or_else(|error| panic!("the HTTP profile of `{kind}`: {error}"));
            assert_eq!(
                loaded.endpoint, row.grants.http_endpoint,
                "the profile of `{kind}` grants what its registration grants"
            );
            assert_eq!(loaded.receipts, row.grants.receipts);
        }
    }
}

/// Each declaration rule is judged on the component's own declaration, so
/// a declaration the host refuses fails the rule it breaks, by name (and
/// only that rule, beside the host's refusal).
async fn each_broken_declaration_fails_the_rule_it_breaks() {
    for (steered, rule) in [
        ("missing-op", "declaration.complete"),
        ("unknown-op", "declaration.complete"),
        ("duplicate", "declaration.complete"),
        ("required-unsupported", "declaration.required-supported"),
        ("infallible-unsupported", "declaration.infallible-supported"),
        (
            "partial-checkpoint",
            "declaration.checkpoint-all-or-nothing",
        ),
        (
            "batch-without-observe",
            "declaration.batch-requires-observe",
        ),
    ] {
        let target = steerable(
            "nodes",
            serde_json::json!({ "declaration": steered }),
            1_000,
        );
        let report = contract_suite::run_clauses(&target, &[Clause::Declaration], false)
            .await
            .expect("suite runs");
        assert_failed(&report, steered, &[rule, "declaration.loads"], true);
    }
}

/// A supported observation that tries to change vendor state (a POST) is
/// caught by its optional case, whether or not the host lets it through.
async fn an_observation_that_writes_is_caught() {
    let steering = serde_json::json!({
        "declaration": "observing",
        "action": "http-post",
        "url": "${FIXTURE_ORIGIN}/sandboxes",
    });
    let target = steerable("direct", steering, 1_000);
    let report = contract_suite::run_clauses(&target, &[Clause::Optional], false)
        .await
        .expect("suite runs");
    assert_failed(
        &report,
        "observing",
        &["optional.observe", "optional.observe-batch"],
        true,
    );
    let reading = steerable(
        "direct",
        serde_json::json!({ "declaration": "observing", "action": "none" }),
        1_000,
    );
    let report = contract_suite::run_clauses(&reading, &[Clause::Optional], false)
        .await
        .expect("suite runs");
    assert!(
        report.cases.len() >= 2,
        "{}",
        report.render("steerable.wasm")
    );
    assert_eq!(report.failed(), 0, "{}", report.render("steerable.wasm"));
}

/// The example adapter (`plugins/example-http`, the adapter guide's
/// subject) or one of its mutants, through the HTTP tier with the
/// example's own profile and fake.
async fn example_suite(name: &str) -> Report {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/example-http/suite-profile.json");
    let mut profile = HttpProfile::load(&path).expect("the example's profile");
    profile.fake = FakeSource::Command {
        command: vec![env!("CARGO_BIN_EXE_oac-fake").into(), "example".into()],
    };
    let target = Target {
        component: component(name),
        budget_ms: 3_000,
        tier: Tier::Http(Box::new(profile)),
    };
    contract_suite::run(&target, false)
        .await
        .expect("suite runs")
}

async fn the_example_adapter_passes_every_clause() {
    let report = example_suite("example_http.wasm").await;
    assert_eq!(report.failed(), 0, "{}", report.render("example_http.wasm"));
    assert_eq!(report.not_run().count(), 0);
    for clause in [
        "declaration",
        "unsupported",
        "optional",
        "lifecycle",
        "settlement",
        "failure-matrix",
        "ownership",
        "commands",
        "receipts",
        "leaks",
    ] {
        assert!(
            report.cases.iter().any(|case| case.clause == clause),
            "no case of clause {clause}"
        );
    }
}

/// Each mutant of the example adapter is caught by exactly its named case.
async fn example_mutant(mutant: &str, case: &str) {
    let report = example_suite(&format!("mutant-example-{mutant}.wasm")).await;
    assert_failed(&report, mutant, &[case], true);
}

/// A Create replayed after a lost response is caught by its named case.
/// Other cases may catch it too, depending on timing: the replay after a
/// cancellation, when the component gets to it before the deadline, or
/// after any Create slower than the budget (a busy disk under its fsync'd
/// receipts), which makes it replay elsewhere.
async fn the_example_replaying_create_is_caught() {
    let report = example_suite("mutant-example-replay-create.wasm").await;
    assert_failed(
        &report,
        "replay-create",
        &["failure.create.lost-response.7"],
        false,
    );
}

async fn the_example_killing_without_proof_is_caught() {
    example_mutant("kill-without-proof", "receipts.kill-needs-proof").await;
}

async fn the_example_deleting_a_foreign_box_is_caught() {
    example_mutant("delete-foreign", "failure.kill.foreign-ownership.5").await;
}

async fn the_example_leaking_the_credential_is_caught() {
    example_mutant("leak-credential", "leaks.credential").await;
}

async fn the_example_deleting_twice_is_caught() {
    example_mutant("delete-twice", "failure.kill.each-mutation-once").await;
}

/// `clauses` of the suite against a microsandbox-tier component: the fake
/// helper (`oac-fake microsandbox-helper`, a process per call) over a fake
/// runtime.
async fn microsandbox_suite(name: &str, clauses: &[Clause]) -> Report {
    let target = Target {
        component: component(name),
        budget_ms: 2_000,
        tier: Tier::Microsandbox(MicrosandboxTier {
            helper: vec![
                env!("CARGO_BIN_EXE_oac-fake").into(),
                "microsandbox-helper".into(),
            ],
        }),
    };
    contract_suite::run_clauses(&target, clauses, false)
        .await
        .expect("suite runs")
}

async fn the_microsandbox_adapter_passes_every_case() {
    let report = microsandbox_suite("microsandbox.wasm", &Clause::ALL).await;
    assert_eq!(report.failed(), 0, "{}", report.render("microsandbox.wasm"));
    let ran = |prefix: &str| {
        report
            .cases
            .iter()
            .filter(|case| case.id.starts_with(prefix) && case.not_run.is_none())
            .count()
    };
    // The checkpoint clause, its failure matrix and the cases that read
    // the fake runtime all ran; so did the VM ownership cases.
    assert!(
        ran("checkpoint.") >= 15,
        "{}",
        report.render("microsandbox.wasm")
    );
    assert!(ran("checkpoint.failure.suspend.") >= 20);
    assert_eq!(ran("checkpoint.resume-adopts-only-its-ancestry"), 1);
    assert_eq!(ran("checkpoint.drift-does-not-block-observation"), 1);
    assert_eq!(ran("ownership.create-on-collision"), 1);
    assert_eq!(ran("leaks.no-leftover-resources"), 1);
}

/// The microsandbox adapter's mutant `mutant` fails the checkpoint case
/// `case` (a mutant that changes an operation's legitimate sequence also
/// fails that operation's failure-matrix cases, which compare with it).
async fn microsandbox_mutant(mutant: &str, case: &str) {
    let name = format!("mutant-microsandbox-{mutant}.wasm");
    let report = microsandbox_suite(&name, &[Clause::Checkpoint]).await;
    assert_failed(&report, mutant, &[case], false);
}
