//! The cases, grouped by contract clause. Each case states one sentence
//! of the contract and reports what it observed when that did not hold.

mod commands;
mod declaration;
mod failures;
mod leaks;
mod lifecycle;
mod ownership;
mod unsupported;

use crate::harness::Harness;
use crate::report::{CaseResult, Level, Report};
use sandbox_host::capability::faults::NativeRequest;
use std::time::Instant;

/// Runs cases and collects their results, showing progress on stderr.
pub struct Runner<'a> {
    harness: &'a Harness,
    report: Report,
    progress: bool,
}

/// A case's verdict: `Err` carries what was observed.
pub type Verdict = Result<(), String>;

/// `Ok` when `holds`, else the observation.
pub fn ensure(holds: bool, observed: impl FnOnce() -> String) -> Verdict {
    if holds { Ok(()) } else { Err(observed()) }
}

/// Actions of recorded requests, for messages and comparisons.
pub fn actions(requests: &[NativeRequest]) -> Vec<String> {
    requests
        .iter()
        .map(|request| format!("{} {}", request.action, request.target))
        .collect()
}

/// True for requests that change native state.
pub fn is_mutation(request: &NativeRequest) -> bool {
    !(request.action.ends_with("-inspect")
        || request.action.ends_with("-list")
        || matches!(request.action, "version" | "info" | "container-stats"))
}

impl<'a> Runner<'a> {
    /// A runner over `harness`.
    pub fn new(harness: &'a Harness, progress: bool) -> Self {
        Self {
            harness,
            report: Report::default(),
            progress,
        }
    }

    /// Runs one case.
    pub async fn case(
        &mut self,
        id: impl Into<String>,
        clause: &'static str,
        level: Level,
        sentence: impl Into<String>,
        check: impl AsyncFnOnce(&Harness) -> Verdict,
    ) {
        let (id, sentence) = (id.into(), sentence.into());
        let started = Instant::now();
        let failure = check(self.harness).await.err();
        if self.progress {
            let mark = if failure.is_none() { "ok  " } else { "FAIL" };
            eprintln!("[{:>3}] {mark} {id}", self.report.cases.len() + 1);
        }
        self.report.cases.push(CaseResult {
            id,
            clause,
            level,
            sentence,
            failure,
            duration: started.elapsed(),
        });
    }

    /// Records a case that could not run (e.g. the component did not load).
    pub fn failed(&mut self, id: &str, clause: &'static str, sentence: &str, observed: String) {
        self.report.cases.push(CaseResult {
            id: id.into(),
            clause,
            level: Level::Must,
            sentence: sentence.into(),
            failure: Some(observed),
            duration: std::time::Duration::ZERO,
        });
    }

    /// The results so far.
    pub fn finish(self) -> Report {
        self.report
    }
}

/// Runs every clause against the loaded component.
pub async fn run_all(harness: &Harness, progress: bool) -> Report {
    let mut runner = Runner::new(harness, progress);
    declaration::run(&mut runner).await;
    unsupported::run(&mut runner).await;
    lifecycle::run(&mut runner).await;
    failures::run(&mut runner).await;
    ownership::run(&mut runner).await;
    commands::run(&mut runner).await;
    leaks::run(&mut runner).await;
    runner.finish()
}
