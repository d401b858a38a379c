//! Clause `optional`: every optional operation the component declares
//! supported (checkpoints aside, which their own clause drives) is called
//! once and answers — never `unsupported` — without changing vendor state:
//! observation, discovery and credential verification only read, and the
//! configuration adapter is pure (no native request at all).

use super::unsupported::call;
use super::{Runner, actions, ensure};
use crate::profile::Classifier;
use crate::report::Level;
use sandbox_host::contract::{Interface, Operation};
use sandbox_host::testing::Effect;
use sandbox_host::types::Error;

pub(super) async fn run(runner: &mut Runner<'_>) {
    let h = runner.harness;
    let supported: Vec<Operation> = {
        let (declaration, _) = h.declaration();
        Operation::ALL
            .into_iter()
            .filter(|op| !op.required() && op.fallible())
            .filter(|op| op.interface() != Interface::CheckpointProvider)
            .filter(|op| declaration.supports(*op))
            .collect()
    };
    if supported.is_empty() {
        return;
    }
    // Observations look at live compute (when Create works).
    let reference = h.allocation("optional");
    let _ = h.create(&reference).await;
    for operation in supported {
        let name = operation.name();
        let pure = operation.interface() == Interface::ConfigurationAdapter
            && operation != Operation::DiscoverConfiguration;
        let sentence = if pure {
            format!("Supported `{name}` answers (never unsupported) and makes no native request.")
        } else {
            format!("Supported `{name}` answers (never unsupported) and changes no vendor state.")
        };
        let r = &reference;
        runner
            .case(
                format!("optional.{name}"),
                "optional",
                Level::Must,
                sentence,
                async |h| {
                    let (answer, requests, calls) = h
                        .observed(None, async || call(h, operation, r.clone()).await)
                        .await;
                    ensure(!matches!(answer, Some(Error::Unsupported(_))), || {
                        format!("answered {answer:?}")
                    })?;
                    // What it sent, and what it asked for that the host
                    // refused (an attempt all the same).
                    let changed: Vec<_> = requests
                        .iter()
                        .filter(|request| {
                            pure || (Classifier::is_vendor(request) && h.is_mutation(request))
                        })
                        .cloned()
                        .collect();
                    let attempted: Vec<_> = calls
                        .iter()
                        .filter(|call| {
                            pure || (call.capability != "receipts" && call.effect != Effect::Reads)
                        })
                        .collect();
                    ensure(changed.is_empty() && attempted.is_empty(), || {
                        format!("sent {:?}, asked for {attempted:?}", actions(&changed))
                    })
                },
            )
            .await;
    }
    h.cleanup(&reference).await;
}
