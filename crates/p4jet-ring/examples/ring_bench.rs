//! Plain-number benchmark: ns per item, CPU per item, blocking and wake-ups
//! per item for p4jet-ring and the two baseline channels, producer and
//! consumer on two threads.
//!
//! ```text
//! cargo run --release -p p4jet-ring --example ring_bench -- \
//!     [--items N] [--reps R] [--caps 64,512,4096] [--batches 1,8,32,256]
//!     [--kinds ring,crossbeam,std] [--producer-work NS] [--consumer-work NS]
//!     [--spin N] [--yields N] [--sleeps N] [--sleep-us US]   (ring tuning)
//! ```
//!
//! Each configuration runs `reps` times; the median by wall time is shown
//! (and the fastest, in brackets). Columns:
//! ns/item = wall time / items; cpu/item = producer + consumer CPU time /
//! items (2.0x ns/item means both threads were busy all along);
//! blk/item = voluntary context switches of both threads per item (times a
//! thread blocked); wake/item = unparks counted by the ring;
//! items/pub = items per index publication (producer, consumer);
//! lat = time from the producer taking an item to the consumer receiving it
//! (every 1024th item) in µs: median, 99th percentile, maximum.
#![allow(clippy::unwrap_used)]

#[path = "../benches/common/mod.rs"]
mod common;

use common::{Kind, Params, Sample, calibrate, run};

fn list<T: std::str::FromStr>(s: &str) -> Vec<T> {
    s.split(',').filter_map(|x| x.trim().parse().ok()).collect()
}

fn main() {
    let mut items: u64 = 2_000_000;
    let mut reps = 5usize;
    let mut caps: Vec<usize> = vec![64, 512, 4096];
    let mut batches: Vec<usize> = vec![1, 8, 32, 256];
    let mut kinds = vec![Kind::Ring, Kind::Crossbeam, Kind::StdSync];
    let mut pw = 0u64;
    let mut cw = 0u64;
    let mut cfg = p4jet_ring::RingConfig::new(2);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_default();
        match a.as_str() {
            "--items" => items = v.parse().unwrap(),
            "--reps" => reps = v.parse().unwrap(),
            "--caps" => caps = list(&v),
            "--batches" => batches = list(&v),
            "--producer-work" => pw = v.parse().unwrap(),
            "--consumer-work" => cw = v.parse().unwrap(),
            "--spin" => cfg.spin = v.parse().unwrap(),
            "--yields" => cfg.yields = v.parse().unwrap(),
            "--sleeps" => cfg.sleeps = v.parse().unwrap(),
            "--sleep-us" => cfg.sleep = std::time::Duration::from_micros(v.parse().unwrap()),
            "--kinds" => {
                kinds = v
                    .split(',')
                    .filter_map(|k| match k {
                        "ring" => Some(Kind::Ring),
                        "crossbeam" => Some(Kind::Crossbeam),
                        "std" => Some(Kind::StdSync),
                        _ => None,
                    })
                    .collect()
            }
            _ => {
                eprintln!("unknown argument {a}");
                std::process::exit(2);
            }
        }
    }
    let ipn = calibrate();
    println!(
        "items={items} reps={reps} producer_work={pw}ns consumer_work={cw}ns cpus={} \
         spin={} yields={} sleeps={}x{:?}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cfg.spin,
        cfg.yields,
        cfg.sleeps,
        cfg.sleep
    );
    println!(
        "{:<18} {:>5} {:>5} {:>16} {:>9} {:>9} {:>10} {:>13}  lat p50/p99/max us",
        "queue",
        "cap",
        "batch",
        "ns/item [best]",
        "cpu/item",
        "blk/item",
        "wake/item",
        "items/pub p,c",
    );
    for &kind in &kinds {
        for &cap in &caps {
            for &batch in &batches {
                if kind != Kind::Ring && batch != batches[0] && batches.contains(&1) {
                    // Baselines ignore the batch size: one row per capacity.
                    continue;
                }
                let p = Params {
                    kind,
                    capacity: cap,
                    batch,
                    items,
                    producer_work_ns: pw,
                    consumer_work_ns: cw,
                    cfg: Some(cfg),
                };
                let mut samples: Vec<Sample> = (0..reps).map(|_| run(p, ipn)).collect();
                samples.sort_by_key(|s| s.wall);
                let med = samples[samples.len() / 2];
                let best = samples[0];
                let n = items as f64;
                let cpu = (med.producer_cpu + med.consumer_cpu).as_nanos() as f64 / n;
                let blk = (med.producer_vcsw + med.consumer_vcsw) as f64 / n;
                let wake = med
                    .wakeups
                    .map_or("-".to_string(), |w| format!("{:.2e}", w as f64 / n));
                let per_pub = match (med.commits, med.releases) {
                    (Some(c), Some(r)) => {
                        format!("{:.0},{:.0}", n / c.max(1) as f64, n / r.max(1) as f64)
                    }
                    _ => "1,1".to_string(),
                };
                let batch_s = if kind == Kind::Ring {
                    batch.to_string()
                } else {
                    "-".to_string()
                };
                println!(
                    "{:<18} {:>5} {:>5} {:>7.1} [{:>6.1}] {:>9.1} {:>9.2e} {:>10} {:>13} {:>6.1}/{:.1}/{:.0}",
                    kind.name(),
                    cap,
                    batch_s,
                    med.ns_per_item(items),
                    best.ns_per_item(items),
                    cpu,
                    blk,
                    wake,
                    per_pub,
                    med.lat_p50.as_nanos() as f64 / 1e3,
                    med.lat_p99.as_nanos() as f64 / 1e3,
                    med.lat_max.as_nanos() as f64 / 1e3
                );
            }
        }
    }
}
