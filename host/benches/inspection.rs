//! Parsing a container inspection, which the host does on every container
//! request it checks for ownership: into bollard's whole
//! `ContainerInspectResponse` (the baseline) and into the fields the host
//! reads (`InspectedContainer`), measured in the same run on an answer that
//! Docker Engine 26.1.5 (API 1.45) wrote for a container with the runtime's
//! kind of settings (`tests/data/container-inspect.json`).

mod common;

use bollard_stubs::models::ContainerInspectResponse;
use criterion::{Criterion, criterion_group, criterion_main};
use sandbox_host::capability::docker::inspection::InspectedContainer;
use std::hint::black_box;
use std::time::Instant;

/// The engine's answer, as it came off the socket (JSON without spaces).
const ANSWER: &[u8] = include_bytes!("../tests/data/container-inspect.json");

fn full() -> ContainerInspectResponse {
    serde_json::from_slice(black_box(ANSWER)).expect("the engine's answer parses")
}

fn reduced() -> InspectedContainer {
    serde_json::from_slice(black_box(ANSWER)).expect("the engine's answer parses")
}

fn inspection(c: &mut Criterion) {
    // Both parses read the same answer the same way where they overlap.
    let (whole, read) = (full(), reduced());
    assert_eq!(read.host_config, whole.host_config);
    assert_eq!(read.config, whole.config);

    // Medians and p99 of per-parse means over batches of 100, the two
    // alternating, before criterion's estimates.
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
                        black_box(full());
                    } else {
                        black_box(reduced());
                    }
                }
                times.push(start.elapsed() / 100);
            }
        }
    }
    let micros = |q: f64, case: usize| timings[case].percentile(q).as_secs_f64() * 1e6;
    println!(
        "container inspection, {} bytes, per parse: bollard's whole type p50 {:.2} µs, \
         p99 {:.2} µs; the host's fields p50 {:.2} µs, p99 {:.2} µs; ratio p50 {:.2}, p99 {:.2}",
        ANSWER.len(),
        micros(0.50, 0),
        micros(0.99, 0),
        micros(0.50, 1),
        micros(0.99, 1),
        micros(0.50, 1) / micros(0.50, 0),
        micros(0.99, 1) / micros(0.99, 0),
    );
    println!();

    let mut group = c.benchmark_group("inspection");
    group.bench_function("bollard_whole_type", |b| b.iter(full));
    group.bench_function("host_fields", |b| b.iter(reduced));
    group.finish();
}

criterion_group!(benches, inspection);
criterion_main!(benches);
