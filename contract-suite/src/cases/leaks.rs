//! Clause `leaks`: no answer or info-level log line carries native error
//! text or the daemon credential, and no resource of the suite's
//! installation is left. A run in which the native side never confirmed a
//! create has nothing to leak: its cases report not run instead of holding.

use super::{Runner, ensure};
use crate::harness::{CREDENTIAL_CANARY, Harness, INSTALLATION};
use crate::report::Level;
use sandbox_host::capability::REDACTED;

/// The first answer or log line containing any of `markers`.
fn leaked(h: &Harness, markers: &[&str]) -> Option<String> {
    let answers = h.answers.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(answer) = answers
        .iter()
        .find(|answer| markers.iter().any(|m| answer.contains(m)))
    {
        return Some(format!("answer: {answer}"));
    }
    let logs = crate::logs::captured();
    logs.lines()
        .find(|line| markers.iter().any(|m| line.contains(m)))
        .map(|line| format!("log line: {line}"))
}

/// The clause's cases: id and sentence.
const CASES: [(&str, &str); 3] = [
    (
        "leaks.native-error-text",
        "No answer or log line contains native error text.",
    ),
    (
        "leaks.credential",
        "No answer or log line contains the daemon credential (nor the host's redaction of it).",
    ),
    (
        "leaks.no-leftover-resources",
        "After the run, no container or volume of the suite's installation remains.",
    ),
];

pub(super) async fn run(runner: &mut Runner<'_>) {
    if !runner.harness.recorder.created_something() {
        for (id, sentence) in CASES {
            runner.not_run(
                id,
                "leaks",
                Level::Must,
                sentence,
                "the native side never confirmed a create in this run".into(),
            );
        }
        return;
    }
    runner
        .case(CASES[0].0, "leaks", Level::Must, CASES[0].1, async |h| {
            let found = leaked(h, &h.engine.native_error_markers());
            ensure(found.is_none(), || found.unwrap_or_default())
        })
        .await;
    runner
        .case(CASES[1].0, "leaks", Level::Must, CASES[1].1, async |h| {
            // The host redacts the credentials it knows of in component
            // logs; a redacted field is the component's attempt.
            let found = leaked(h, &[CREDENTIAL_CANARY, REDACTED]);
            ensure(found.is_none(), || found.unwrap_or_default())
        })
        .await;
    runner
        .case(CASES[2].0, "leaks", Level::Must, CASES[2].1, async |h| {
            let (containers, volumes) = h.engine.resources_of(INSTALLATION).await;
            ensure(containers.is_empty() && volumes.is_empty(), || {
                format!("containers {containers:?}, volumes {volumes:?}")
            })
        })
        .await;
}
