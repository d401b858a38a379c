//! Clause `lifecycle`: the happy path of one allocation; clause
//! `settlement`: what a duplicate Create returns, and that no observation
//! or Kill claims to settle a Create.

use super::{Runner, ensure};
use crate::report::Level;
use sandbox_host::types::{Error, Failure, LifecycleState};
use std::sync::Mutex;

pub async fn run(runner: &mut Runner<'_>) {
    let reference = runner.harness.allocation("lifecycle");
    let provider_id: Mutex<Option<String>> = Mutex::default();
    let (r, id) = (&reference, &provider_id);
    runner
        .case(
            "lifecycle.create",
            "lifecycle",
            Level::Must,
            "Create succeeds with settled, bootstrapped info for the exact reference.",
            async |h| match h.create(r).await {
                Ok(info) => {
                    ensure(info.reference == *r, || {
                        format!("reference {:?}", info.reference)
                    })?;
                    ensure(info.create_settled && info.bootstrap_complete, || {
                        format!("info {info:?}")
                    })?;
                    ensure(info.provider_id.is_some(), || "no provider id".into())?;
                    *id.lock().unwrap_or_else(|p| p.into_inner()) = info.provider_id;
                    Ok(())
                }
                other => Err(format!("{other:?}")),
            },
        )
        .await;
    runner
        .case(
            "lifecycle.get-info",
            "lifecycle",
            Level::Must,
            "GetInfo reports running, bootstrap-complete, the reference and the provider id.",
            async |h| match h.get_info(r).await {
                Ok(info) => {
                    let expected = id.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    ensure(info.reference == *r && info.provider_id == expected, || {
                        format!("info {info:?}")
                    })?;
                    ensure(
                        info.state == LifecycleState::Running && info.bootstrap_complete,
                        || format!("info {info:?}"),
                    )
                }
                other => Err(format!("{other:?}")),
            },
        )
        .await;
    runner
        .case(
            "settlement.observation",
            "settlement",
            Level::Must,
            "GetInfo of running compute claims create-settled only on a durable receipt it read: an observation alone cannot prove a Create ended.",
            async |h| {
                let (answer, requests) = h.with_fault(None, async || h.get_info(r).await).await;
                match answer {
                    Ok(info) => ensure(
                        !info.create_settled || h.rests_on_a_receipt(&requests),
                        || format!("info {info:?}"),
                    ),
                    other => Err(format!("{other:?}")),
                }
            },
        )
        .await;
    runner
        .case(
            "lifecycle.duplicate-create",
            "settlement",
            Level::Must,
            "A second Create returns exists; info it carries is the existing compute's, for the exact reference.",
            async |h| match h.create(r).await {
                Err(Failure {
                    error: Error::Exists,
                    info,
                }) => {
                    let expected = id.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    info.map_or(Ok(()), |info| {
                        ensure(info.reference == *r && info.provider_id == expected, || {
                            format!("evidence {info:?}")
                        })
                    })
                }
                other => Err(format!("{other:?}")),
            },
        )
        .await;
    runner
        .case(
            "lifecycle.renew",
            "lifecycle",
            Level::Must,
            "Renew succeeds for a running allocation.",
            async |h| match h.renew(r).await {
                Ok(info) => ensure(info.reference == *r, || format!("info {info:?}")),
                other => Err(format!("{other:?}")),
            },
        )
        .await;
    runner
        .case(
            "lifecycle.run-command",
            "lifecycle",
            Level::Must,
            "RunCommand runs in the allocation and returns its output.",
            async |h| match h.run_command(r, &["sh", "-c", "echo ready"], None).await {
                Ok(result) => ensure(result.exit_code == 0 && result.stdout == b"ready\n", || {
                    format!("result {result:?}")
                }),
                other => Err(format!("{other:?}")),
            },
        )
        .await;
    runner
        .case(
            "lifecycle.kill",
            "lifecycle",
            Level::Must,
            "Kill succeeds and reports absence for the exact reference.",
            async |h| match h.kill(r).await {
                Ok(info) => ensure(
                    info.reference == *r && info.state == LifecycleState::Absent,
                    || format!("info {info:?}"),
                ),
                other => Err(format!("{other:?}")),
            },
        )
        .await;
    runner
        .case(
            "settlement.kill-again",
            "settlement",
            Level::Must,
            "Kill on confirmed absence succeeds again, claiming create-settled only on a durable receipt it read: a Kill alone is not terminal proof.",
            async |h| {
                let (answer, requests) = h.with_fault(None, async || h.kill(r).await).await;
                match answer {
                    Ok(info) => ensure(
                        info.state == LifecycleState::Absent
                            && (!info.create_settled || h.rests_on_a_receipt(&requests)),
                        || format!("info {info:?}"),
                    ),
                    other => Err(format!("{other:?}")),
                }
            },
        )
        .await;
    runner
        .case(
            "lifecycle.get-info-after-kill",
            "lifecycle",
            Level::Must,
            "GetInfo after Kill is not-found, or settled absence resting on a durable receipt it read.",
            async |h| {
                let (answer, requests) = h.with_fault(None, async || h.get_info(r).await).await;
                let receipt = h.rests_on_a_receipt(&requests);
                ensure(
                    match &answer {
                        Err(Error::NotFound) => true,
                        Ok(info) => {
                            receipt
                                && info.state == LifecycleState::Absent
                                && info.create_settled
                                && info.provider_id.is_none()
                                && info.reference == *r
                        }
                        _ => false,
                    },
                    || format!("{answer:?}"),
                )
            },
        )
        .await;
}
