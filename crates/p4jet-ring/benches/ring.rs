//! Criterion benchmark: time per item through a ring between two threads,
//! for several ring and batch sizes, against crossbeam's bounded channel and
//! std's sync_channel. Criterion reports time per item ("thrpt" in
//! elements/s); wake-ups per item (which criterion cannot show) are printed
//! to stderr from one extra run per configuration.
//!
//! `cargo bench -p p4jet-ring --bench ring`. For a quick table of plain
//! numbers use `examples/ring_bench.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{Kind, Params, calibrate, run};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn transfer(c: &mut Criterion) {
    let ipn = calibrate();
    for kind in [Kind::Ring, Kind::Crossbeam, Kind::StdSync] {
        let mut g = c.benchmark_group(kind.name().replace(' ', "_"));
        g.throughput(Throughput::Elements(1));
        g.sample_size(10);
        g.warm_up_time(Duration::from_millis(500));
        g.measurement_time(Duration::from_secs(2));
        let batches: &[usize] = if kind == Kind::Ring {
            &[1, 32, 256]
        } else {
            &[1]
        };
        for cap in [64usize, 1024] {
            for &batch in batches {
                let params = |items| Params {
                    kind,
                    capacity: cap,
                    batch,
                    items,
                    producer_work_ns: 0,
                    consumer_work_ns: 0,
                    cfg: None,
                };
                if let Some(w) = run(params(1_000_000), ipn).wakeups {
                    eprintln!(
                        "{} cap={cap} batch={batch}: {:.2e} wake-ups/item",
                        kind.name(),
                        w as f64 / 1e6
                    );
                }
                g.bench_with_input(
                    BenchmarkId::from_parameter(format!("cap{cap}/batch{batch}")),
                    &(),
                    |b, _| b.iter_custom(|iters| run(params(iters.max(1)), ipn).wall),
                );
            }
        }
        g.finish();
    }
}

criterion_group!(benches, transfer);
criterion_main!(benches);
