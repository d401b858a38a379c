//! Parsing a container inspection, which the host does on every container
//! request it checks for ownership: into bollard's whole
//! `ContainerInspectResponse` (the baseline) and into the fields the host
//! reads (`InspectedContainer`), measured in the same run on two answers:
//!
//! - `recorded`: what Docker Engine 26.1.5 (API 1.45) wrote for a container
//!   with the runtime's kind of settings (`tests/data/container-inspect.json`),
//!   whose only security option is `no-new-privileges`;
//! - `runtime profile`: the same answer with the security options a node's
//!   policy gives every container, the seccomp entry carrying the runtime's
//!   profile as `sandbox-host seccomp` writes it (the engine keeps the text
//!   it was given and returns it on every inspection). It needs the
//!   upstream profile (`../shared/seccomp-upstream` or
//!   `OAC_SECCOMP_UPSTREAM`); without it the bench says so and measures
//!   only the recorded answer.

mod common;

use bollard_stubs::models::ContainerInspectResponse;
use criterion::{Criterion, criterion_group, criterion_main};
use sandbox_host::capability::docker::inspection::InspectedContainer;
use std::hint::black_box;
use std::time::Instant;

/// The engine's answer, as it came off the socket (JSON without spaces).
const RECORDED: &[u8] = include_bytes!("../tests/data/container-inspect.json");

/// [`RECORDED`] with the policy's security options around the runtime's
/// seccomp profile, or why it could not be made.
fn with_runtime_profile() -> Result<Vec<u8>, String> {
    // The file `sandbox-host seccomp` writes, which a node's policy sends.
    let text = oac_fixtures::seccomp_profile::runtime_profile_file()?;
    let mut answer: serde_json::Value =
        serde_json::from_slice(RECORDED).map_err(|error| error.to_string())?;
    answer["HostConfig"]["SecurityOpt"] = serde_json::json!([
        "no-new-privileges",
        format!("seccomp={text}"),
        "apparmor=unconfined"
    ]);
    serde_json::to_vec(&answer).map_err(|error| error.to_string())
}

fn full(answer: &[u8]) -> ContainerInspectResponse {
    serde_json::from_slice(black_box(answer)).expect("the engine's answer parses")
}

fn reduced(answer: &[u8]) -> InspectedContainer {
    serde_json::from_slice(black_box(answer)).expect("the engine's answer parses")
}

/// Medians and p99 of per-parse means over batches of 100, the two parses
/// alternating.
fn plain_runs(name: &str, answer: &[u8]) {
    let (rounds, per_round) = if common::measuring() {
        (20, 500)
    } else {
        (1, 2)
    };
    let mut timings = [common::Timings::default(), common::Timings::default()];
    for _ in 0..rounds {
        for (case, times) in timings.iter_mut().enumerate() {
            for _ in 0..per_round {
                let start = Instant::now();
                for _ in 0..100 {
                    if case == 0 {
                        black_box(full(answer));
                    } else {
                        black_box(reduced(answer));
                    }
                }
                times.push(start.elapsed() / 100);
            }
        }
    }
    let micros = |q: f64, case: usize| timings[case].percentile(q).as_secs_f64() * 1e6;
    println!(
        "container inspection, {name}, {} bytes, per parse: bollard's whole type p50 {:.2} µs, \
         p99 {:.2} µs; the host's fields p50 {:.2} µs, p99 {:.2} µs; ratio p50 {:.2}, p99 {:.2}",
        answer.len(),
        micros(0.50, 0),
        micros(0.99, 0),
        micros(0.50, 1),
        micros(0.99, 1),
        micros(0.50, 1) / micros(0.50, 0),
        micros(0.99, 1) / micros(0.99, 0),
    );
}

fn inspection(c: &mut Criterion) {
    let profiled = with_runtime_profile();
    let mut answers = vec![("recorded", RECORDED.to_vec())];
    match profiled {
        Ok(answer) => answers.push(("runtime profile", answer)),
        Err(missing) => println!("SKIPPED the runtime profile's answer: {missing}"),
    }
    for (name, answer) in &answers {
        // Both parses read the same answer alike where they overlap.
        let (whole, read) = (full(answer), reduced(answer));
        assert_eq!(read.config, whole.config, "{name}");
        assert_eq!(
            read.host_config,
            whole.host_config.map(Into::into),
            "{name}"
        );
        plain_runs(name, answer);
    }
    println!();

    let mut group = c.benchmark_group("inspection");
    for (name, answer) in &answers {
        let name = name.replace(' ', "_");
        group.bench_function(format!("{name}/bollard_whole_type"), |b| {
            b.iter(|| full(answer))
        });
        group.bench_function(format!("{name}/host_fields"), |b| {
            b.iter(|| reduced(answer))
        });
    }
    group.finish();
}

criterion_group!(benches, inspection);
criterion_main!(benches);
