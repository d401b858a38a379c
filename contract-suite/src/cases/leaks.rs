//! Clause `leaks`: no answer or log line carries native error text or the
//! daemon credential, and no resource of the suite's installation is left.

use super::{Runner, ensure};
use crate::fixtures::docker_engine::NATIVE_ERROR_CANARY;
use crate::harness::{CREDENTIAL_CANARY, INSTALLATION};
use crate::report::Level;

pub async fn run(runner: &mut Runner<'_>) {
    for (id, canary, what) in [
        (
            "leaks.native-error-text",
            NATIVE_ERROR_CANARY,
            "native error text",
        ),
        (
            "leaks.credential",
            CREDENTIAL_CANARY,
            "the daemon credential",
        ),
    ] {
        let sentence = format!("No answer or log line contains {what}.");
        runner
            .case(id, "leaks", Level::Must, sentence, async |h| {
                let answers = h.answers.lock().unwrap_or_else(|p| p.into_inner());
                let leaked = answers.iter().find(|answer| answer.contains(canary));
                ensure(leaked.is_none(), || {
                    format!("answer: {}", leaked.map(String::as_str).unwrap_or_default())
                })?;
                let logs = crate::logs::captured();
                ensure(!logs.contains(canary), || {
                    let line = logs
                        .lines()
                        .find(|line| line.contains(canary))
                        .unwrap_or_default();
                    format!("log line: {line}")
                })
            })
            .await;
    }
    runner
        .case(
            "leaks.no-leftover-resources",
            "leaks",
            Level::Must,
            "After the run, no container or volume of the suite's installation remains.",
            async |h| {
                let owned = |labels: Option<std::collections::BTreeMap<String, String>>| {
                    labels.is_some_and(|labels| {
                        labels.get("io.oac.installation").map(String::as_str) == Some(INSTALLATION)
                    })
                };
                let containers: Vec<String> = h
                    .engine
                    .containers()
                    .into_iter()
                    .filter(|c| owned(h.engine.container_labels(c)))
                    .collect();
                let volumes: Vec<String> = h
                    .engine
                    .volumes()
                    .into_iter()
                    .filter(|v| owned(h.engine.volume_labels(v)))
                    .collect();
                ensure(containers.is_empty() && volumes.is_empty(), || {
                    format!("containers {containers:?}, volumes {volumes:?}")
                })
            },
        )
        .await;
}
