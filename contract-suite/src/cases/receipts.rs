//! Clause `receipts`, for kinds granted durable receipts: settlement proved
//! across a restart, a refusal proved without asking the vendor, Kill
//! answering only on terminal proof, and commands admitted only on
//! bootstrapped compute and bounded by the deadline.

use super::{Runner, actions, ensure};
use crate::fixtures::Engine;
use crate::harness::KIND;
use crate::profile::{Class, Classifier};
use crate::report::Level;
use sandbox_host::contract::Operation;
use sandbox_host::police;
use sandbox_host::provider::SandboxProvider;
use sandbox_host::types::{Error, LifecycleState};

pub(super) async fn run(runner: &mut Runner<'_>) {
    let h = runner.harness;
    if !h.keeps_receipts() {
        return;
    }
    let reference = h.allocation("receipts");
    let (created, requests) = h
        .with_fault(None, async || h.create(&reference).await)
        .await;
    // The vendor's request that makes compute, to refuse it below.
    let create_request = requests
        .iter()
        .find(|request| h.class(request) == Class::Create)
        .map(|request| {
            let method = request
                .action
                .name()
                .trim_start_matches("http-")
                .to_uppercase();
            let path = request
                .target
                .split('?')
                .next()
                .unwrap_or_default()
                .to_string();
            (method, path)
        });
    let Ok(created) = created else {
        runner.failed(
            "receipts.setup",
            "receipts",
            "Create succeeds for the receipt cases.",
            format!("{created:?}"),
        );
        return;
    };
    let r = &reference;
    runner
        .case(
            "receipts.restart",
            "receipts",
            Level::Must,
            "After a restart, GetInfo answers the same compute, settled, as the host's record of the Create's answer allows.",
            async |h| {
                let restarted = h.restarted().await.map_err(|error| error.to_string())?;
                let kind = restarted.kind(KIND).map_err(|error| format!("{error:?}"))?;
                let (answer, requests) = h
                    .with_fault(None, async || kind.get_info(r.clone(), h.budget()).await)
                    .await;
                let info = answer.map_err(|error| format!("{error:?}"))?;
                let evidence = kind.settlement_evidence(r).await;
                ensure(
                    info.provider_id == created.provider_id
                        && info.create_settled
                        && police::may_claim_settlement(Operation::GetInfo, &evidence, &info),
                    || format!("{info:?} on {evidence:?} after {:?}", actions(&requests)),
                )
            },
        )
        .await;
    runner
        .case(
            "receipts.kill-needs-proof",
            "receipts",
            Level::Must,
            "Kill of a reference with no receipt and nothing found is not a settled success: nothing proves that no attempt made compute.",
            async |h| {
                let never = h.allocation("receipts-never");
                let answer = h.kill(&never).await;
                ensure(!matches!(&answer, Ok(info) if info.create_settled), || {
                    format!("{answer:?}")
                })
            },
        )
        .await;
    runner
        .case(
            "receipts.command-admission",
            "receipts",
            Level::Must,
            "RunCommand on a reference with no compute is refused before any command starts.",
            async |h| {
                let never = h.allocation("receipts-no-compute");
                let (answer, requests) = h
                    .with_fault(None, async || {
                        h.run_command(&never, &["echo", "hi"], None).await
                    })
                    .await;
                let started = requests
                    .iter()
                    .filter(|request| h.class(request) == Class::Exec)
                    .count();
                ensure(answer.is_err() && started == 0, || {
                    format!("{answer:?} after {:?}", actions(&requests))
                })
            },
        )
        .await;
    runner
        .case(
            "receipts.command-deadline",
            "receipts",
            Level::Must,
            "A command still running at the deadline is command-unconfirmed.",
            async |h| {
                let answer = h.run_command(r, &["sleep", "3600"], None).await;
                ensure(matches!(answer, Err(Error::CommandUnconfirmed)), || {
                    format!("{answer:?}")
                })
            },
        )
        .await;
    let (Engine::Http(fake), Some((method, path))) = (&h.engine, create_request) else {
        h.cleanup(&reference).await;
        return;
    };
    let sentence = format!(
        "A Create the vendor definitely refuses ({} to {method} {path}, before any effect) is settled absence, and GetInfo then proves it without a vendor request.",
        h.refusal_status
    );
    runner
        .case(
            "receipts.settled-refusal",
            "receipts",
            Level::Must,
            sentence,
            async |h| {
                let refused = h.allocation("receipts-refused");
                fake.refuse_next(&method, &path, h.refusal_status)
                    .await
                    .map_err(|error| error.to_string())?;
                let created = h.create(&refused).await;
                let settled = matches!(&created, Err(failure)
                    if failure.info.as_ref().is_some_and(|info| info.create_settled
                        && info.state == LifecycleState::Absent));
                ensure(settled, || format!("create {created:?}"))?;
                let (answer, requests) = h
                    .with_fault(None, async || h.get_info(&refused).await)
                    .await;
                let vendor = requests
                    .iter()
                    .filter(|request| Classifier::is_vendor(request))
                    .count();
                let agrees = match &answer {
                    Ok(info) => h.claim_agrees(Operation::GetInfo, info).await,
                    Err(_) => false,
                };
                ensure(
                    matches!(&answer, Ok(info) if info.create_settled
                        && info.state == LifecycleState::Absent)
                        && agrees
                        && vendor == 0,
                    || format!("{answer:?} after {:?}", actions(&requests)),
                )
            },
        )
        .await;
    h.cleanup(&reference).await;
}
