//! The contract suite: conformance of one provider component.
//!
//! It loads the component in the real host exactly as production does,
//! wires its capabilities to native-side fixtures (the Docker tier: a
//! stateful fake Docker Engine API that the host's Engine transport talks to
//! unchanged, or a real engine; the HTTP tier: the vendor's own fake, with a
//! profile that classifies its requests), and injects faults at the capability boundary
//! through the host's native-request hook, so the same
//! cases work for any vendor's adapter. Every native request is recorded and
//! compared with the legitimate sequence, which exposes replay, fallback and
//! implicit cleanup.

pub mod cases;
pub mod fixtures;
pub mod harness;
pub mod logs;
pub mod profile;
pub mod recorder;
pub mod report;
pub mod vendor_fake;

pub use harness::{DockerTier, Harness, HarnessError, MicrosandboxTier, Target, Tier};
pub use report::Report;

/// Runs every case against `target`. A component the host refuses yields a
/// report with that one failed case. Runs in one process are serialised,
/// because the captured log is process-wide.
pub async fn run(target: &Target, progress: bool) -> Result<Report, HarnessError> {
    run_clauses(target, &cases::Clause::ALL, progress).await
}

/// Runs `clauses` against `target` (see [`run`]).
pub async fn run_clauses(
    target: &Target,
    clauses: &[cases::Clause],
    progress: bool,
) -> Result<Report, HarnessError> {
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _running = ONE_AT_A_TIME.lock().await;
    logs::install();
    logs::clear();
    match Harness::start(target).await {
        Ok(harness) => Ok(cases::run(&harness, clauses, progress).await),
        Err(HarnessError::Load(observed, declared)) => {
            let mut report = Report::default();
            // The rules the declaration breaks, by name, when it was read.
            if let Some(declared) =
                declared.filter(|_| clauses.contains(&cases::Clause::Declaration))
            {
                report.cases = cases::declaration::cases(&declared);
            }
            report.cases.push(report::CaseResult {
                id: "declaration.loads".into(),
                clause: "declaration",
                level: report::Level::Must,
                sentence: "The host loads the component: valid exports, stamp and declaration."
                    .into(),
                failure: Some(observed),
                not_run: None,
                duration: std::time::Duration::ZERO,
            });
            Ok(report)
        }
        Err(other) => Err(other),
    }
}
