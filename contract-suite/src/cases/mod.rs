//! The cases, grouped by contract clause. Each case states one sentence
//! of the contract and reports what it observed when that did not hold.

mod checkpoint;
mod checkpoint_faults;
mod commands;
pub mod declaration;
mod failures;
mod leaks;
mod lifecycle;
mod optional;
mod ownership;
mod receipts;
mod unsupported;

pub use declaration::Declared;

use crate::harness::Harness;
use crate::report::{CaseResult, Level, Report};
use sandbox_host::testing::NativeRequest;
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
            not_run: None,
            duration: started.elapsed(),
        });
    }

    /// Records a case judged elsewhere.
    pub fn push(&mut self, case: CaseResult) {
        if self.progress {
            let mark = if case.failure.is_none() {
                "ok  "
            } else {
                "FAIL"
            };
            eprintln!("[{:>3}] {mark} {}", self.report.cases.len() + 1, case.id);
        }
        self.report.cases.push(case);
    }

    /// Records a case that has nothing to judge in this run, and why.
    pub fn not_run(
        &mut self,
        id: &str,
        clause: &'static str,
        level: Level,
        sentence: &str,
        why: String,
    ) {
        if self.progress {
            eprintln!("[{:>3}] --   {id} (not run)", self.report.cases.len() + 1);
        }
        self.report.cases.push(CaseResult {
            id: id.into(),
            clause,
            level,
            sentence: sentence.into(),
            failure: None,
            not_run: Some(why),
            duration: std::time::Duration::ZERO,
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
            not_run: None,
            duration: std::time::Duration::ZERO,
        });
    }

    /// The results so far.
    pub fn finish(self) -> Report {
        self.report
    }
}

/// A clause of the contract: a group of cases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clause {
    /// The declaration is complete and valid.
    Declaration,
    /// Unsupported operations answer so, with no native request.
    Unsupported,
    /// Supported optional operations answer and change nothing.
    Optional,
    /// The lifecycle and settlement evidence.
    Lifecycle,
    /// Faults at every native request of the legitimate sequences.
    FailureMatrix,
    /// Foreign resources are never touched.
    Ownership,
    /// Commands keep bytes, streams, bounds and exit codes.
    Commands,
    /// Checkpoints through exact incarnations (when declared).
    Checkpoint,
    /// Nothing leaks; nothing is left.
    Leaks,
    /// Durable receipts prove settlement across restarts (kinds granted
    /// receipts).
    Receipts,
}

impl Clause {
    /// Every clause, in the order a run takes them.
    pub const ALL: [Clause; 10] = [
        Clause::Declaration,
        Clause::Unsupported,
        Clause::Optional,
        Clause::Lifecycle,
        Clause::FailureMatrix,
        Clause::Ownership,
        Clause::Commands,
        Clause::Checkpoint,
        Clause::Receipts,
        Clause::Leaks,
    ];

    /// The clause's name, as reports and `--clause` write it.
    pub fn name(self) -> &'static str {
        match self {
            Clause::Declaration => "declaration",
            Clause::Unsupported => "unsupported",
            Clause::Optional => "optional",
            Clause::Lifecycle => "lifecycle",
            Clause::FailureMatrix => "failure-matrix",
            Clause::Ownership => "ownership",
            Clause::Commands => "commands",
            Clause::Checkpoint => "checkpoint",
            Clause::Leaks => "leaks",
            Clause::Receipts => "receipts",
        }
    }

    /// The clause named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|clause| clause.name() == name)
    }
}

/// Runs `clauses` against the loaded component.
pub async fn run(harness: &Harness, clauses: &[Clause], progress: bool) -> Report {
    let mut runner = Runner::new(harness, progress);
    for clause in clauses {
        match clause {
            Clause::Declaration => {
                for case in declaration::cases(&harness.declared) {
                    runner.push(case);
                }
            }
            Clause::Unsupported => unsupported::run(&mut runner).await,
            Clause::Optional => optional::run(&mut runner).await,
            Clause::Lifecycle => lifecycle::run(&mut runner).await,
            Clause::FailureMatrix => failures::run(&mut runner).await,
            Clause::Ownership => ownership::run(&mut runner).await,
            Clause::Commands => commands::run(&mut runner).await,
            Clause::Checkpoint => checkpoint::run(&mut runner).await,
            Clause::Leaks => leaks::run(&mut runner).await,
            Clause::Receipts => receipts::run(&mut runner).await,
        }
    }
    runner.finish()
}
