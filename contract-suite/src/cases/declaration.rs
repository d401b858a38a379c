//! Clause `declaration`: the component's declaration is complete and valid.
//! The host validated it while loading; these cases state each rule.

use super::{Runner, ensure};
use crate::report::Level;
use sandbox_host::contract::{Interface, Operation, is_valid_reason};
use sandbox_host::declaration::Decision;

pub(super) async fn run(runner: &mut Runner<'_>) {
    runner
        .case(
            "declaration.complete",
            "declaration",
            Level::Must,
            "Every exported operation is declared exactly once.",
            async |h| {
                let (declaration, inventory) = h.declaration();
                let missing: Vec<&str> = inventory
                    .0
                    .iter()
                    .filter(|op| declaration.decision(**op).is_none())
                    .map(|op| op.name())
                    .collect();
                ensure(
                    missing.is_empty() && declaration.0.len() == inventory.0.len(),
                    || format!("undeclared: {missing:?}"),
                )
            },
        )
        .await;
    runner
        .case(
            "declaration.required-supported",
            "declaration",
            Level::Must,
            "The five required operations are supported.",
            async |h| {
                let (declaration, _) = h.declaration();
                let unsupported: Vec<&str> = Operation::ALL
                    .into_iter()
                    .filter(|op| op.required() && !declaration.supports(*op))
                    .map(Operation::name)
                    .collect();
                ensure(unsupported.is_empty(), || {
                    format!("not supported: {unsupported:?}")
                })
            },
        )
        .await;
    runner
        .case(
            "declaration.checkpoint-all-or-nothing",
            "declaration",
            Level::Must,
            "Checkpoint operations are supported all together or not at all.",
            async |h| {
                let (declaration, inventory) = h.declaration();
                let decisions: Vec<bool> = inventory
                    .0
                    .iter()
                    .filter(|op| op.interface() == Interface::CheckpointProvider)
                    .map(|op| declaration.supports(*op))
                    .collect();
                ensure(
                    decisions.iter().all(|d| *d) || decisions.iter().all(|d| !*d),
                    || format!("mixed: {decisions:?}"),
                )
            },
        )
        .await;
    runner
        .case(
            "declaration.reasons-valid",
            "declaration",
            Level::Must,
            "Every unsupported reason matches ^[a-z][a-z0-9_]{0,95}$.",
            async |h| {
                let (declaration, _) = h.declaration();
                let bad: Vec<&str> = declaration
                    .0
                    .iter()
                    .filter_map(|(op, decision)| match decision {
                        Decision::Unsupported(reason) if !is_valid_reason(reason) => {
                            Some(op.name())
                        }
                        _ => None,
                    })
                    .collect();
                ensure(bad.is_empty(), || format!("invalid reasons for {bad:?}"))
            },
        )
        .await;
    runner
        .case(
            "declaration.batch-requires-observe",
            "declaration",
            Level::Must,
            "Batch observation is supported only when observe is.",
            async |h| {
                let (declaration, _) = h.declaration();
                let batch = declaration.supports(Operation::ObserveBatch);
                let single = declaration.supports(Operation::Observe);
                ensure(!batch || single, || {
                    "observe-batch supported without observe".into()
                })
            },
        )
        .await;
}
