//! Clause `ownership`: when the names an allocation would use are taken by
//! resources labelled for someone else, neither Create nor Kill mutates or
//! deletes them.

use super::{Runner, actions, ensure, is_mutation};
use crate::report::Level;
use std::collections::BTreeMap;

pub async fn run(runner: &mut Runner<'_>) {
    let h = runner.harness;
    let reference = h.allocation("ownership");
    // Learn the names this allocation uses from a clean Create.
    let (created, requests) = h
        .with_fault(None, async || h.create(&reference).await)
        .await;
    h.cleanup(&reference).await;
    let names: Vec<String> = requests
        .iter()
        .filter(|r| r.action == "volume-create")
        .map(|r| r.target.clone())
        .collect();
    if !matches!(created, Ok(Ok(_))) || names.is_empty() {
        runner.failed(
            "ownership.setup",
            "ownership",
            "A clean Create names the volumes it creates.",
            format!("create {created:?}, requests {:?}", actions(&requests)),
        );
        return;
    }
    let foreign: BTreeMap<String, String> = [
        ("io.oac.installation", "foreign-installation"),
        ("io.oac.tenant", reference.tenant_id.as_str()),
        ("io.oac.environment", reference.environment_id.as_str()),
        ("io.oac.allocation", reference.allocation_id.as_str()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for name in &names {
        h.engine.insert_volume(name, foreign.clone());
    }
    let untouched = |h: &crate::harness::Harness| {
        names
            .iter()
            .all(|name| h.engine.volume_labels(name).as_ref() == Some(&foreign))
    };
    let (r, untouched) = (&reference, &untouched);
    runner
        .case(
            "ownership.create-on-collision",
            "ownership",
            Level::Must,
            "Create on names held by a foreign allocation fails and mutates nothing.",
            async |h| {
                let (answer, requests, calls) = h.observed(None, async || h.create(r).await).await;
                ensure(!matches!(answer, Ok(Ok(_))), || {
                    format!("create succeeded: {answer:?}")
                })?;
                let attempts: Vec<&String> = calls
                    .iter()
                    .filter(|call| call.contains("-remove ") || call.contains("-create "))
                    .collect();
                ensure(attempts.is_empty(), || {
                    format!("attempted to change foreign-held names: {attempts:?}")
                })?;
                ensure(!requests.iter().any(is_mutation), || {
                    format!("mutations: {:?}", actions(&requests))
                })?;
                ensure(untouched(h), || "the foreign volumes changed".into())
            },
        )
        .await;
    runner
        .case(
            "ownership.kill-on-collision",
            "ownership",
            Level::Must,
            "Kill on names held by a foreign allocation fails and deletes nothing.",
            async |h| {
                let (answer, requests, calls) = h.observed(None, async || h.kill(r).await).await;
                ensure(!matches!(answer, Ok(Ok(_))), || {
                    format!("kill succeeded: {answer:?}")
                })?;
                let attempts: Vec<&String> = calls
                    .iter()
                    .filter(|call| call.contains("-remove "))
                    .collect();
                ensure(attempts.is_empty(), || {
                    format!("attempted to delete foreign resources: {attempts:?}")
                })?;
                ensure(!requests.iter().any(is_mutation), || {
                    format!("mutations: {:?}", actions(&requests))
                })?;
                ensure(untouched(h), || "the foreign volumes changed".into())
            },
        )
        .await;
}
