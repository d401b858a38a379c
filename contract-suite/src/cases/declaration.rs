//! Clause `declaration`: the component's declaration is complete and valid.
//! Each rule is judged on the declaration exactly as the component gives
//! it (`sandbox_host::testing::declared`), before the host's own check, so
//! a declaration the host refuses to load still fails the rule it breaks,
//! by name.

use super::ensure;
use crate::report::{CaseResult, Level};
use sandbox_host::contract::{Interface, Operation, is_valid_reason};
use sandbox_host::declaration::{Decision, Inventory};
use std::time::Duration;

/// The component's own declaration: its inventory and its entries.
pub type Declared = (Inventory, Vec<(String, Decision)>);

/// The decision for `operation` (its first, when declared twice: the
/// duplicate is `declaration.complete`'s to judge).
fn decision(entries: &[(String, Decision)], operation: Operation) -> Option<&Decision> {
    entries
        .iter()
        .find(|(name, _)| name == operation.name())
        .map(|(_, decision)| decision)
}

fn supports(entries: &[(String, Decision)], operation: Operation) -> bool {
    decision(entries, operation) == Some(&Decision::Supported)
}

/// The names of the contract's operations for which `holds`, in order.
fn operations_where(holds: impl Fn(Operation) -> bool) -> Vec<&'static str> {
    Operation::ALL
        .into_iter()
        .filter(|op| holds(*op))
        .map(Operation::name)
        .collect()
}

/// Every case of the clause, judged on `declared`.
pub fn cases((inventory, entries): &Declared) -> Vec<CaseResult> {
    let mut cases = Vec::new();
    let mut case = |id: &str, sentence: &str, verdict: super::Verdict| {
        cases.push(CaseResult {
            id: id.into(),
            clause: "declaration",
            level: Level::Must,
            sentence: sentence.into(),
            failure: verdict.err(),
            not_run: None,
            duration: Duration::ZERO,
        });
    };
    let names: Vec<&str> = entries.iter().map(|(name, _)| name.as_str()).collect();
    let unknown: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| Operation::from_name(name).is_none_or(|op| !inventory.contains(op)))
        .collect();
    let twice: Vec<&str> = names
        .iter()
        .enumerate()
        .filter(|(i, name)| names[..*i].contains(name))
        .map(|(_, name)| *name)
        .collect();
    let missing: Vec<&str> = inventory
        .0
        .iter()
        .filter(|op| !names.contains(&op.name()))
        .map(|op| op.name())
        .collect();
    case(
        "declaration.complete",
        "Every exported operation is declared exactly once, and nothing else is.",
        ensure(
            unknown.is_empty() && twice.is_empty() && missing.is_empty(),
            || {
                format!(
                    "undeclared: {missing:?}; declared twice: {twice:?}; not exported: {unknown:?}"
                )
            },
        ),
    );
    let required = operations_where(|op| op.required() && !supports(entries, op));
    case(
        "declaration.required-supported",
        "The five required operations are supported.",
        ensure(required.is_empty(), || {
            format!("not supported: {required:?}")
        }),
    );
    let infallible = operations_where(|op| {
        !op.fallible() && matches!(decision(entries, op), Some(Decision::Unsupported(_)))
    });
    case(
        "declaration.infallible-supported",
        "Operations that cannot fail (requirements, probe) are never declared unsupported.",
        ensure(infallible.is_empty(), || {
            format!("unsupported: {infallible:?}")
        }),
    );
    let checkpoint: Vec<bool> = inventory
        .0
        .iter()
        .filter(|op| op.interface() == Interface::CheckpointProvider)
        .map(|op| supports(entries, *op))
        .collect();
    case(
        "declaration.checkpoint-all-or-nothing",
        "Checkpoint operations are supported all together or not at all.",
        ensure(
            checkpoint.iter().all(|d| *d) || checkpoint.iter().all(|d| !*d),
            || format!("mixed: {checkpoint:?}"),
        ),
    );
    let bad: Vec<&str> = entries
        .iter()
        .filter_map(|(name, decision)| match decision {
            Decision::Unsupported(reason) if !is_valid_reason(reason) => Some(name.as_str()),
            _ => None,
        })
        .collect();
    case(
        "declaration.reasons-valid",
        "Every unsupported reason matches ^[a-z][a-z0-9_]{0,95}$.",
        ensure(bad.is_empty(), || format!("invalid reasons for {bad:?}")),
    );
    let batch = supports(entries, Operation::ObserveBatch);
    let single = supports(entries, Operation::Observe);
    case(
        "declaration.batch-requires-observe",
        "Batch observation is supported only when observe is.",
        ensure(!batch || single, || {
            "observe-batch supported without observe".into()
        }),
    );
    cases
}
