//! Clause `lifecycle`: the happy path of one allocation; clause
//! `settlement`: what a duplicate Create returns, and that no observation
//! or Kill claims to settle a Create.

use super::{Runner, ensure};
use crate::report::Level;
use sandbox_host::contract::Operation;
use sandbox_host::types::{Error, Failure, LifecycleState};
use std::sync::Mutex;

pub(super) async fn run(runner: &mut Runner<'_>) {
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
            "GetInfo of running compute claims create-settled only as the host's record of the Create's answer allows: an observation alone cannot prove a Create ended.",
            async |h| match h.get_info(r).await {
                Ok(info) => ensure(h.claim_agrees(Operation::GetInfo, &info).await, || {
                    format!("info {info:?}")
                }),
                other => Err(format!("{other:?}")),
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
            "Kill on confirmed absence succeeds again, claiming create-settled only as the host's record of the Create's answer allows: a Kill alone is not terminal proof.",
            async |h| match h.kill(r).await {
                Ok(info) => ensure(
                    info.state == LifecycleState::Absent
                        && h.claim_agrees(Operation::Kill, &info).await,
                    || format!("info {info:?}"),
                ),
                other => Err(format!("{other:?}")),
            },
        )
        .await;
    runner
        .case(
            "lifecycle.get-info-after-kill",
            "lifecycle",
            Level::Must,
            "GetInfo after Kill is not-found, or settled absence as the host's record of the Create's answer allows.",
            async |h| {
                let answer = h.get_info(r).await;
                let agrees = match &answer {
                    Ok(info) => h.claim_agrees(Operation::GetInfo, info).await,
                    Err(_) => false,
                };
                ensure(
                    match &answer {
                        Err(Error::NotFound) => true,
                        Ok(info) => {
                            agrees
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
