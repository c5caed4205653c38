//! Writes through the runtime model: 1,000 table inserts as one batch (each
//! atomicity mode) against 1,000 single inserts, and 100,000 entries in batches of
//! 1,000 into a table of the large L2 benchmark program.
//!
//! Run with `cargo bench -p p4jet-switch --bench runtime_writes`. Each group reports
//! inserts per second. A batch is one control-state publication however many updates
//! it has, so it costs at most what the same inserts cost one by one (less: one
//! publication instead of 1,000).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use p4jet_runtime::{
    ActionCall, Atomicity, EntryRef, FieldMatch, MatchKey, Runtime, TableId, Update,
};
use p4jet_switch::{Switch, SwitchConfig};

fn l2_large() -> Switch {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/corpus/bench/l2_large.json"
    );
    let json = std::fs::read_to_string(path).unwrap();
    Switch::new(&json, SwitchConfig::default()).unwrap()
}

/// Insert `i`: a distinct MAC, forward to port `i % 4`.
fn insert(t: TableId, fwd: ActionCall, i: u32) -> Update {
    let mut mac = vec![2, 0];
    mac.extend(i.to_be_bytes());
    let mut call = fwd;
    call.args = vec![vec![0, (i % 4) as u8]];
    Update::add_direct(t, MatchKey::new(vec![FieldMatch::Exact(mac)]), call)
}

fn delete(t: TableId, i: u32) -> Update {
    let mut mac = vec![2, 0];
    mac.extend(i.to_be_bytes());
    Update::DeleteEntry {
        table: t,
        entry: EntryRef::Key(MatchKey::new(vec![FieldMatch::Exact(mac)])),
    }
}

fn bench_writes(c: &mut Criterion) {
    let mut sw = l2_large();
    let s = Runtime::schema(&sw).unwrap();
    let t = s.table_by_name("IngressImpl.dmac").unwrap();
    let fwd = ActionCall::new(s.action_by_name("IngressImpl.forward").unwrap(), vec![]);
    // a table that already holds 100,000 entries
    for chunk in 0..100u32 {
        let batch = (chunk * 1000..(chunk + 1) * 1000)
            .map(|i| insert(t, fwd.clone(), 1_000_000 + i))
            .collect();
        assert!(sw.write(batch, Atomicity::ContinueOnError).is_ok());
    }

    let mut g = c.benchmark_group("insert_1000");
    g.throughput(Throughput::Elements(1000));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(3));
    g.bench_function("one_by_one", |b| {
        b.iter_custom(|iters| {
            let mut took = Duration::ZERO;
            for _ in 0..iters {
                let t0 = Instant::now();
                for i in 0..1000 {
                    Runtime::apply(&mut sw, insert(t, fwd.clone(), i)).unwrap();
                }
                took += t0.elapsed();
                let dels = (0..1000).map(|i| delete(t, i)).collect();
                assert!(sw.write(dels, Atomicity::ContinueOnError).is_ok());
            }
            took
        });
    });
    for (name, atomicity) in [
        ("batch_continue_on_error", Atomicity::ContinueOnError),
        ("batch_rollback_on_error", Atomicity::RollbackOnError),
        ("batch_dataplane_atomic", Atomicity::DataplaneAtomic),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut took = Duration::ZERO;
                for _ in 0..iters {
                    let batch = (0..1000).map(|i| insert(t, fwd.clone(), i)).collect();
                    let t0 = Instant::now();
                    let r = sw.write(batch, atomicity);
                    took += t0.elapsed();
                    assert!(r.is_ok());
                    let dels = (0..1000).map(|i| delete(t, i)).collect();
                    assert!(sw.write(dels, Atomicity::ContinueOnError).is_ok());
                }
                took
            });
        });
    }
    g.finish();

    // P4Runtime's target: 100,000 entries in batches of 1,000 in well under a second
    let mut g = c.benchmark_group("insert_100k_in_batches_of_1000");
    g.throughput(Throughput::Elements(100_000));
    g.sample_size(10);
    g.bench_function("continue_on_error", |b| {
        b.iter_custom(|iters| {
            let mut took = Duration::ZERO;
            for _ in 0..iters {
                let batches: Vec<Vec<Update>> = (0..100u32)
                    .map(|c| {
                        (c * 1000..(c + 1) * 1000)
                            .map(|i| insert(t, fwd.clone(), i))
                            .collect()
                    })
                    .collect();
                let t0 = Instant::now();
                for batch in batches {
                    assert!(sw.write(batch, Atomicity::ContinueOnError).is_ok());
                }
                took += t0.elapsed();
                for c in 0..100u32 {
                    let dels = (c * 1000..(c + 1) * 1000).map(|i| delete(t, i)).collect();
                    assert!(sw.write(dels, Atomicity::ContinueOnError).is_ok());
                }
            }
            took
        });
    });
    g.finish();
}

criterion_group!(benches, bench_writes);
criterion_main!(benches);
