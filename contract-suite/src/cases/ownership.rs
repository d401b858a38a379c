//! Clause `ownership`: when the names an allocation would use are taken by
//! resources labelled for someone else, neither Create nor Kill mutates or
//! deletes them.

use super::{Runner, actions, ensure};
use crate::fixtures::{Engine, FakeVms};
use crate::harness::INSTALLATION;
use crate::report::Level;
use sandbox_host::capability::microsandbox::names::VmNames;
use sandbox_host::contract::labels;
use sandbox_host::testing::Effect;
use sandbox_host::types::{Error, Reference};
use std::collections::BTreeMap;

pub(super) async fn run(runner: &mut Runner<'_>) {
    let h = runner.harness;
    if let Engine::Microsandbox(vms) = &h.engine {
        return on_vm_names(runner, vms).await;
    }
    if h.engine.socket().is_none() {
        return over_http(runner).await;
    }
    let reference = h.allocation("ownership");
    // Learn the names this allocation uses from a clean Create.
    let (created, requests) = h
        .with_fault(None, async || h.create(&reference).await)
        .await;
    h.cleanup(&reference).await;
    let names: Vec<String> = requests
        .iter()
        .filter(|r| r.action.name() == "volume-create")
        .map(|r| r.target.clone())
        .collect();
    if created.is_err() || names.is_empty() {
        runner.failed(
            "ownership.setup",
            "ownership",
            "A clean Create names the volumes it creates.",
            format!("create {created:?}, requests {:?}", actions(&requests)),
        );
        return;
    }
    let foreign = foreign_labels(&reference);
    for name in &names {
        if !h.engine.seed_volume(name, foreign.clone()).await {
            runner.failed(
                "ownership.setup",
                "ownership",
                "Foreign volumes can be seeded.",
                format!("seeding {name} failed"),
            );
            return;
        }
    }
    let (r, names, foreign) = (&reference, &names, &foreign);
    for (id, sentence, kill) in [
        (
            "ownership.create-on-collision",
            "Create on names held by a foreign allocation fails and mutates nothing.",
            false,
        ),
        (
            "ownership.kill-on-collision",
            "Kill on names held by a foreign allocation fails and deletes nothing.",
            true,
        ),
    ] {
        runner
            .case(id, "ownership", Level::Must, sentence, async |h| {
                let (answer, requests, calls) = h
                    .observed(None, async || match kill {
                        true => h.kill(r).await,
                        false => h.create(r).await,
                    })
                    .await;
                let verb = if kill { "kill" } else { "create" };
                ensure(answer.is_err(), || format!("{verb} succeeded: {answer:?}"))?;
                // A Create must not even try to make a foreign-held name.
                let attempts: Vec<_> = calls
                    .iter()
                    .filter(|call| call.capability == "docker")
                    .filter(|call| {
                        call.effect == Effect::Removes || (!kill && call.effect == Effect::Creates)
                    })
                    .collect();
                ensure(attempts.is_empty(), || match kill {
                    true => format!("attempted to delete foreign resources: {attempts:?}"),
                    false => format!("attempted to change foreign-held names: {attempts:?}"),
                })?;
                ensure(!requests.iter().any(|r| h.is_mutation(r)), || {
                    format!("mutations: {:?}", actions(&requests))
                })?;
                ensure(untouched(h, names, foreign).await, || {
                    "the foreign volumes changed".into()
                })
            })
            .await;
    }
    for name in names {
        h.engine.remove_seeded_volume(name).await;
    }
}

/// The labels of `reference` as another installation's.
fn foreign_labels(reference: &Reference) -> BTreeMap<String, String> {
    [
        (labels::INSTALLATION, "foreign-installation"),
        (labels::TENANT, reference.tenant_id.as_str()),
        (labels::ENVIRONMENT, reference.environment_id.as_str()),
        (labels::ALLOCATION, reference.allocation_id.as_str()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The clause for microVMs, whose names the host derives: another
/// installation's VM under the name of the allocation's first incarnation
/// is neither reported, changed nor removed by Create or Kill.
async fn on_vm_names(runner: &mut Runner<'_>, vms: &FakeVms) {
    let h = runner.harness;
    let reference = h.allocation("ownership");
    let name = VmNames::of(INSTALLATION, &reference).vm(0);
    let seeded = vms
        .runtime
        .seed_vm(&name, foreign_labels(&reference))
        .and_then(|()| vms.runtime.state());
    let Some(before) = seeded.ok().and_then(|state| state.vms.get(&name).cloned()) else {
        runner.failed(
            "ownership.setup",
            "ownership",
            "A foreign VM can be seeded under the allocation's name.",
            format!("seeding {name} failed"),
        );
        return;
    };
    let (r, before, name) = (&reference, &before, &name);
    let untouched = || {
        vms.runtime
            .state()
            .ok()
            .and_then(|state| state.vms.get(name).cloned())
            .as_ref()
            == Some(before)
    };
    runner
        .case(
            "ownership.foreign-not-reported",
            "ownership",
            Level::Must,
            "GetInfo does not report another installation's VM under the allocation's name.",
            async |h| {
                let answer = h.get_info(r).await;
                ensure(answer.is_err(), || format!("{answer:?}"))
            },
        )
        .await;
    for (id, sentence, kill) in [
        (
            "ownership.create-on-collision",
            "Create on a name held by another installation's VM fails and changes nothing.",
            false,
        ),
        (
            "ownership.kill-on-collision",
            "Kill on a name held by another installation's VM fails and removes nothing.",
            true,
        ),
    ] {
        runner
            .case(id, "ownership", Level::Must, sentence, async |h| {
                let (answer, requests) = h
                    .with_fault(None, async || match kill {
                        true => h.kill(r).await,
                        false => h.create(r).await,
                    })
                    .await;
                ensure(answer.is_err(), || format!("succeeded: {answer:?}"))?;
                ensure(!requests.iter().any(|r| h.is_mutation(r)), || {
                    format!("mutations: {:?}", actions(&requests))
                })?;
                ensure(untouched(), || "the foreign VM changed".into())
            })
            .await;
    }
}

/// True when every seeded volume still exists with exactly its labels.
async fn untouched(
    h: &crate::harness::Harness,
    names: &[String],
    foreign: &BTreeMap<String, String>,
) -> bool {
    for name in names {
        if h.engine.volume_labels(name).await.as_ref() != Some(foreign) {
            return false;
        }
    }
    true
}

/// The clause for a vendor reached over HTTP, whose resources carry
/// ownership in their labels: a resource of another installation for the
/// same reference, seeded through the vendor's fake, is neither reported
/// nor touched.
async fn over_http(runner: &mut Runner<'_>) {
    let h = runner.harness;
    let reference = h.allocation("ownership");
    let foreign = match h.engine.seed_foreign(&reference).await {
        Ok(id) => id,
        Err(error) => {
            runner.failed(
                "ownership.setup",
                "ownership",
                "A foreign resource can be seeded through the vendor's fake.",
                error.to_string(),
            );
            return;
        }
    };
    let (r, foreign) = (&reference, &foreign);
    runner
        .case(
            "ownership.foreign-not-reported",
            "ownership",
            Level::Must,
            "GetInfo does not report another installation's resource of the same reference.",
            async |h| {
                let answer = h.get_info(r).await;
                ensure(matches!(answer, Err(Error::NotFound)), || {
                    format!("{answer:?}")
                })
            },
        )
        .await;
    runner
        .case(
            "ownership.foreign-untouched",
            "ownership",
            Level::Must,
            "Create and Kill of the reference leave another installation's resource alone: no mutation names it, and it still exists.",
            async |h| {
                let (created, mut requests) = h.with_fault(None, async || h.create(r).await).await;
                let ours = created
                    .as_ref()
                    .ok()
                    .and_then(|info| info.provider_id.clone());
                ensure(ours.as_deref() != Some(foreign.as_str()), || {
                    format!("create answered the foreign resource: {created:?}")
                })?;
                let (killed, more) = h.with_fault(None, async || h.kill(r).await).await;
                requests.extend(more);
                ensure(killed.is_ok(), || format!("kill {killed:?}"))?;
                let touching: Vec<_> = requests
                    .iter()
                    .filter(|request| h.is_mutation(request))
                    .filter(|request| request.target.split(['/', '?', '&', '=']).any(|part| part == foreign))
                    .collect();
                ensure(touching.is_empty(), || {
                    format!("mutations of the foreign resource: {:?}", actions(&requests))
                })?;
                ensure(h.engine.resource_exists(foreign).await == Some(true), || {
                    "the foreign resource is gone".to_string()
                })
            },
        )
        .await;
    h.cleanup(&reference).await;
}
