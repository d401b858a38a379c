//! The host's helper runner (`sandbox_host::capability::microsandbox::helper`)
//! against the fake helper as a process (`oac-fake microsandbox-helper`,
//! behind a wrapper script, as an operator's helper path would be): answers
//! cross the process boundary, a helper past its deadline is never killed
//! and is counted until it exits, and what the helper gets is the host's
//! environment, not the node's.

use oac_fixtures::microsandbox_helper::{FakeRuntime, Fault, sample_spec};
use oac_helper_protocol::{Operation, Outcome};
use sandbox_host::capability::microsandbox::helper::{Helper, HelperFailure, InFlight};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// A fake runtime in `dir` and a helper reaching it through a wrapper
/// script that also records the environment it was given.
fn helper(dir: &Path) -> (FakeRuntime, Helper) {
    let runtime = FakeRuntime::create(dir).expect("fake runtime");
    let script = dir.join("helper");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nenv > '{}'\nexec '{}' microsandbox-helper\n",
            dir.join("helper-env").display(),
            env!("CARGO_BIN_EXE_oac-fake")
        ),
    )
    .expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("mode");
    let helper = Helper::new(script, runtime.runtime());
    (runtime, helper)
}

fn create(name: &str) -> Operation {
    Operation::Create {
        spec: sample_spec(name),
    }
}

fn soon(ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(ms)
}

#[tokio::test]
async fn an_answer_crosses_the_process_boundary_in_the_hosts_environment() {
    let dir = tempfile::tempdir().expect("dir");
    let (_runtime, helper) = helper(dir.path());
    let helpers = InFlight::default();
    let Ok(Outcome::Probe { probe }) = helper.call(Operation::Probe, soon(5_000), &helpers).await
    else {
        panic!("no probe answer");
    };
    assert!(probe.cpu_virtualisation);
    assert_eq!(helpers.running(), 0, "the helper was reaped");
    let env = std::fs::read_to_string(dir.path().join("helper-env")).expect("env");
    assert!(env.contains("MSB_BACKEND=local\n"), "{env}");
    assert!(env.contains(&format!("MSB_HOME={}\n", helper.runtime().home)));
    // Cargo gives this test process CARGO_MANIFEST_DIR; the helper has none
    // of the node's own environment.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    assert!(!env.contains("CARGO_MANIFEST_DIR"), "{env}");
}

#[tokio::test]
async fn a_helper_past_its_deadline_is_never_killed_and_counted_until_it_exits() {
    let dir = tempfile::tempdir().expect("dir");
    let (runtime, helper) = helper(dir.path());
    runtime.inject("create", Fault::Slow(1_500)).expect("steer");
    let helpers = InFlight::default();
    let asked = Instant::now();
    let answer = helper.call(create("vm-g0"), soon(200), &helpers).await;
    assert_eq!(answer, Err(HelperFailure::Unconfirmed));
    assert!(
        asked.elapsed() < Duration::from_millis(1_200),
        "waited past the deadline"
    );
    assert_eq!(helpers.running(), 1, "the helper still runs");
    assert!(runtime.state().expect("state").vms.is_empty());
    tokio::time::timeout(Duration::from_secs(10), helpers.idle())
        .await
        .expect("the helper exits in its own time");
    // It was left to finish: the VM exists.
    assert!(runtime.state().expect("state").vms.contains_key("vm-g0"));
}

#[tokio::test]
async fn a_crash_garbage_or_a_lost_answer_is_unconfirmed() {
    let dir = tempfile::tempdir().expect("dir");
    let (runtime, helper) = helper(dir.path());
    let helpers = InFlight::default();
    for fault in [Fault::Crash, Fault::Garbage, Fault::LoseAnswer] {
        runtime.inject("create", fault).expect("steer");
        let answer = helper.call(create("vm-g0"), soon(5_000), &helpers).await;
        assert_eq!(answer, Err(HelperFailure::Unconfirmed), "{fault:?}");
    }
    // The lost answer's create took effect; the crash and the garbage did
    // nothing (they stopped before the operation).
    let state = runtime.state().expect("state");
    assert_eq!(state.vms.len(), 1);
    assert_eq!(
        state.journal,
        vec!["create vm-g0".to_string()],
        "one create was performed"
    );
}

#[tokio::test]
async fn a_helper_that_cannot_start_did_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let runtime = FakeRuntime::create(dir.path()).expect("fake runtime");
    let helper = Helper::new(dir.path().join("absent"), runtime.runtime());
    let helpers = InFlight::default();
    let answer = helper.call(create("vm-g0"), soon(5_000), &helpers).await;
    assert_eq!(answer, Err(HelperFailure::NotStarted));
    assert_eq!(helpers.running(), 0);
}
