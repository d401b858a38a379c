//! Clause `commands`: stdin arrives intact (binary, over 1 MiB, up to the
//! contract's bound, in order),
//! streams stay separate, exit codes are real, output over 1 MiB is
//! `command-unconfirmed`, and a lost completion is `command-unconfirmed`
//! with no second exec.

use super::{Runner, Verdict, actions, ensure};
use crate::harness::Harness;
use crate::profile::Class;
use crate::recorder::{Matching, Plan};
use crate::report::Level;
use sandbox_host::Budget;
use sandbox_host::testing::Fault;
use sandbox_host::types::{Error, Reference};
use sha2::Digest;

/// The least budget the command with the largest stdin is given.
const STDIN_BUDGET_MS: u32 = 30_000;

pub(super) async fn run(runner: &mut Runner<'_>) {
    let h = runner.harness;
    let reference = h.allocation("commands");
    if h.create(&reference).await.is_err() {
        runner.failed(
            "commands.setup",
            "commands",
            "Create succeeds for the command cases.",
            "create failed".into(),
        );
        return;
    }
    let r = &reference;
    runner
        .case(
            "commands.stdin-large-binary",
            "commands",
            Level::Must,
            "More than 1 MiB of binary stdin reaches the command intact.",
            async |h| {
                let stdin: Vec<u8> = (0..1_500_000u32).map(|i| (i % 256) as u8).collect();
                arrives_intact(h, r, stdin, h.budget()).await
            },
        )
        .await;
    runner
        .case(
            "commands.stdin-at-the-bound",
            "commands",
            Level::Must,
            "Stdin of the contract's bound (50 MiB + 32 bytes) reaches the command intact \
             (within the target's budget, at least 30 s).",
            async |h| {
                let bound = sandbox_host::contract::bounds::MAX_STDIN_BYTES;
                let stdin: Vec<u8> = (0..bound).map(|i| (i % 251) as u8).collect();
                let budget = match h.budget().millis() {
                    ms if ms >= STDIN_BUDGET_MS => h.budget(),
                    _ => Budget::from_millis(STDIN_BUDGET_MS).unwrap_or(h.budget()),
                };
                arrives_intact(h, r, stdin, budget).await
            },
        )
        .await;
    runner
        .case(
            "commands.byte-order",
            "commands",
            Level::Must,
            "Stdin bytes, NULs included, come back in order.",
            async |h| {
                let stdin: Vec<u8> = (0..=255u8).chain([0, 0, b'\n', 0]).rev().collect();
                match h.run_command(r, &["cat"], Some(stdin.clone())).await {
                    Ok(result) => ensure(result.stdout == stdin, || {
                        format!("{} bytes differ", result.stdout.len())
                    }),
                    other => Err(format!("{other:?}")),
                }
            },
        )
        .await;
    runner
        .case(
            "commands.streams-separate",
            "commands",
            Level::Must,
            "Stdout and stderr are returned separately.",
            async |h| match h
                .run_command(r, &["sh", "-c", "echo out; echo err >&2"], None)
                .await
            {
                Ok(result) => ensure(
                    result.stdout == b"out\n" && result.stderr == b"err\n",
                    || format!("{result:?}"),
                ),
                other => Err(format!("{other:?}")),
            },
        )
        .await;
    runner
        .case(
            "commands.exit-code",
            "commands",
            Level::Must,
            "The command's real exit code is returned.",
            async |h| match h.run_command(r, &["sh", "-c", "exit 43"], None).await {
                Ok(result) => ensure(result.exit_code == 43, || {
                    format!("exit code {}", result.exit_code)
                }),
                other => Err(format!("{other:?}")),
            },
        )
        .await;
    runner
        .case(
            "commands.output-at-bound",
            "commands",
            Level::Must,
            "Exactly 1 MiB of output is returned whole.",
            async |h| match h
                .run_command(r, &["head", "-c", "1048576", "/dev/zero"], None)
                .await
            {
                Ok(result) => ensure(result.stdout.len() == 1 << 20, || {
                    format!("{} bytes", result.stdout.len())
                }),
                other => Err(format!("{other:?}")),
            },
        )
        .await;
    runner
        .case(
            "commands.output-over-bound",
            "commands",
            Level::Must,
            "Output over 1 MiB is command-unconfirmed, never a truncated success.",
            async |h| {
                let answer = h
                    .run_command(r, &["head", "-c", "1100000", "/dev/zero"], None)
                    .await;
                ensure(matches!(answer, Err(Error::CommandUnconfirmed)), || {
                    format!("{:?}", answer.map(|c| c.stdout.len()))
                })
            },
        )
        .await;
    // The request that starts the command (the last of class exec) and
    // each that reads its completion (class exec-result), in the
    // legitimate sequence of a RunCommand.
    let (legitimate, requests) = h
        .with_fault(None, async || {
            h.run_command(r, &["sh", "-c", "echo hi"], None).await
        })
        .await;
    let classes: Vec<Class> = requests.iter().map(|request| h.class(request)).collect();
    let last_exec = classes.iter().rposition(|class| *class == Class::Exec);
    let points: Vec<usize> = (0..requests.len())
        .filter(|&i| Some(i) == last_exec || classes[i] == Class::ExecResult)
        .collect();
    if legitimate.is_err() || last_exec.is_none() {
        runner.failed(
            "commands.lost-completion.setup",
            "commands",
            "A RunCommand without faults succeeds and starts its command with a request of class exec.",
            format!("{legitimate:?} after {:?}", actions(&requests)),
        );
    }
    for &index in &points {
        let request = &requests[index];
        let class = classes[index];
        // Which occurrence of its class it is, and how many commands were
        // started up to it.
        let nth = classes[..=index].iter().filter(|c| **c == class).count();
        let started = classes[..=index]
            .iter()
            .filter(|c| **c == Class::Exec)
            .count();
        let action = request.action.name();
        let same_action = points
            .iter()
            .filter(|&&i| requests[i].action == request.action)
            .count();
        let id = if same_action > 1 {
            format!("commands.lost-completion.{action}.{}", index + 1)
        } else {
            format!("commands.lost-completion.{action}")
        };
        let sentence = format!(
            "When the {action} response (request {}) is lost, RunCommand is command-unconfirmed and no second command is started.",
            index + 1
        );
        runner
            .case(id, "commands", Level::Must, sentence, async |h| {
                let plan = Plan {
                    matching: Matching::Class(class),
                    nth,
                    fault: Fault::LoseResponse,
                };
                let (answer, requests) = h
                    .with_fault(Some(plan), async || {
                        h.run_command(r, &["sh", "-c", "echo hi"], None).await
                    })
                    .await;
                // A call cut off by its budget is command-unconfirmed too.
                let unconfirmed = matches!(answer, Err(Error::CommandUnconfirmed));
                ensure(unconfirmed, || format!("{answer:?}"))?;
                let execs = requests
                    .iter()
                    .filter(|request| h.class(request) == Class::Exec)
                    .count();
                ensure(execs == started, || {
                    format!(
                        "{execs} requests of class exec, {started} legitimate: {:?}",
                        actions(&requests)
                    )
                })
            })
            .await;
    }
    h.cleanup(&reference).await;
}

/// `stdin` reaches `sha256sum` within `budget` intact: its digest comes back.
async fn arrives_intact(h: &Harness, r: &Reference, stdin: Vec<u8>, budget: Budget) -> Verdict {
    let digest = hex::encode(sha2::Sha256::digest(&stdin));
    match h
        .run_command_within(r, &["sha256sum"], Some(stdin), budget)
        .await
    {
        Ok(result) => ensure(result.stdout.starts_with(digest.as_bytes()), || {
            format!("stdout {:?}", String::from_utf8_lossy(&result.stdout))
        }),
        other => Err(format!("{other:?}")),
    }
}
