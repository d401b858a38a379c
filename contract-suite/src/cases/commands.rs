//! Clause `commands`: stdin arrives intact (binary, over 1 MiB, in order),
//! streams stay separate, exit codes are real, output over 1 MiB is
//! `command-unconfirmed`, and a lost completion is `command-unconfirmed`
//! with no second exec.

use super::{Runner, actions, ensure};
use crate::recorder::{Matching, Plan};
use crate::report::Level;
use sandbox_host::testing::Fault;
use sandbox_host::types::Error;
use sha2::Digest;

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
                let digest = hex::encode(sha2::Sha256::digest(&stdin));
                match h.run_command(r, &["sha256sum"], Some(stdin)).await {
                    Ok(result) => ensure(result.stdout.starts_with(digest.as_bytes()), || {
                        format!("stdout {:?}", String::from_utf8_lossy(&result.stdout))
                    }),
                    other => Err(format!("{other:?}")),
                }
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
    // The request that starts the command and the one that completes it
    // (Docker: exec-start, exec-inspect; envd over HTTP: the Start stream),
    // and the request that would make a second one.
    let over_http = h.engine.socket().is_none();
    let points: Vec<(&str, Matching, Matching)> = if over_http {
        let start = Matching::ActionTo("http-post", "/process.Process/Start");
        vec![("start", start, start)]
    } else {
        let create = Matching::Action("exec-create");
        vec![
            ("exec-start", Matching::Action("exec-start"), create),
            ("exec-inspect", Matching::Action("exec-inspect"), create),
        ]
    };
    for (action, lost, made) in points {
        let sentence = format!(
            "When the {action} response is lost, RunCommand is command-unconfirmed and no second command is started."
        );
        runner
            .case(
                format!("commands.lost-completion.{action}"),
                "commands",
                Level::Must,
                sentence,
                async |h| {
                    let plan = Plan {
                        matching: lost,
                        nth: 1,
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
                    let creates = requests
                        .iter()
                        .filter(|request| made.matches(request))
                        .count();
                    ensure(creates == 1, || {
                        format!("exec created {creates} times: {:?}", actions(&requests))
                    })
                },
            )
            .await;
    }
    h.cleanup(&reference).await;
}
