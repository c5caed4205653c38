//! Two-thread transfer harness shared by `benches/ring.rs` and
//! `examples/ring_bench.rs`: one producer thread sends `n` u64 values in
//! batches of `batch`, one consumer thread takes them (up to `batch` at a
//! time) and checks the order. Per-thread CPU time and voluntary context
//! switches come from /proc/thread-self (Linux).
#![allow(dead_code, clippy::unwrap_used)]

use std::hint::black_box;
use std::thread;
use std::time::{Duration, Instant};

use p4jet_ring::RingConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// p4jet-ring, `push_batch` / `pop_batch`.
    Ring,
    /// crossbeam_channel::bounded, send per item / recv + try_recv.
    Crossbeam,
    /// std::sync::mpsc::sync_channel, same pattern.
    StdSync,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Ring => "p4jet-ring",
            Kind::Crossbeam => "crossbeam bounded",
            Kind::StdSync => "std sync_channel",
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Params {
    pub kind: Kind,
    pub capacity: usize,
    pub batch: usize,
    pub items: u64,
    /// Busy work per item on the producer / consumer side (ns, approx.).
    pub producer_work_ns: u64,
    pub consumer_work_ns: u64,
    /// Ring tuning (capacity is overridden by `capacity`).
    pub cfg: Option<RingConfig>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    pub wall: Duration,
    pub producer_cpu: Duration,
    pub consumer_cpu: Duration,
    /// Voluntary context switches (= times the thread blocked in the kernel).
    pub producer_vcsw: u64,
    pub consumer_vcsw: u64,
    /// Wake-ups counted by the ring (both directions); None for baselines.
    pub wakeups: Option<u64>,
    pub commits: Option<u64>,
    pub releases: Option<u64>,
    /// Latency of every 1024th item, producer push to consumer receipt:
    /// median, 99th percentile, maximum.
    pub lat_p50: Duration,
    pub lat_p99: Duration,
    pub lat_max: Duration,
}

impl Sample {
    pub fn ns_per_item(&self, items: u64) -> f64 {
        self.wall.as_nanos() as f64 / items as f64
    }
}

pub fn thread_cpu() -> Duration {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = s
        .split_whitespace()
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

pub fn thread_vcsw() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Roughly `ns` nanoseconds of arithmetic (calibrated once).
pub fn busy(ns: u64, iters_per_ns: f64) {
    if ns == 0 {
        return;
    }
    let mut x = 1u64;
    for _ in 0..(ns as f64 * iters_per_ns) as u64 {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    black_box(x);
}

pub fn calibrate() -> f64 {
    let n = 5_000_000u64;
    let t = Instant::now();
    let mut x = 1u64;
    for _ in 0..n {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    black_box(x);
    n as f64 / t.elapsed().as_nanos().max(1) as f64
}

/// Send timestamps of every `STAMP_EVERY`-th item, written by the producer
/// before it publishes the item and read by the consumer after receiving it.
const STAMP_EVERY: u64 = 1024;

struct Stamps {
    t0: Instant,
    at: Vec<std::sync::atomic::AtomicU64>,
}

impl Stamps {
    fn new(items: u64) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Stamps {
            t0: Instant::now(),
            at: (0..items / STAMP_EVERY + 1)
                .map(|_| std::sync::atomic::AtomicU64::new(0))
                .collect(),
        })
    }
    #[inline]
    fn sent(&self, x: u64) {
        if x.is_multiple_of(STAMP_EVERY) {
            let ns = self.t0.elapsed().as_nanos() as u64;
            self.at[(x / STAMP_EVERY) as usize].store(ns, std::sync::atomic::Ordering::Relaxed);
        }
    }
    #[inline]
    fn received(&self, x: u64, lats: &mut Vec<u64>) {
        if x.is_multiple_of(STAMP_EVERY) {
            let now = self.t0.elapsed().as_nanos() as u64;
            let sent =
                self.at[(x / STAMP_EVERY) as usize].load(std::sync::atomic::Ordering::Relaxed);
            lats.push(now.saturating_sub(sent));
        }
    }
}

fn summarize(mut lats: Vec<u64>) -> (Duration, Duration, Duration) {
    if lats.is_empty() {
        return (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    }
    lats.sort_unstable();
    let q = |f: usize| Duration::from_nanos(lats[(lats.len() * f / 100).min(lats.len() - 1)]);
    (q(50), q(99), q(100))
}

struct Side {
    cpu: Duration,
    vcsw: u64,
}

fn measure<R>(f: impl FnOnce() -> R) -> (R, Side) {
    let c0 = thread_cpu();
    let v0 = thread_vcsw();
    let r = f();
    (
        r,
        Side {
            cpu: thread_cpu() - c0,
            vcsw: thread_vcsw() - v0,
        },
    )
}

pub fn run(p: Params, ipn: f64) -> Sample {
    match p.kind {
        Kind::Ring => run_ring(p, ipn),
        Kind::Crossbeam => {
            let (s, r) = crossbeam::channel::bounded::<u64>(p.capacity);
            run_channel(p, ipn, move |x| s.send(x).is_ok(), move || r.recv().ok())
        }
        Kind::StdSync => {
            let (s, r) = std::sync::mpsc::sync_channel::<u64>(p.capacity);
            run_channel(p, ipn, move |x| s.send(x).is_ok(), move || r.recv().ok())
        }
    }
}

fn run_ring(p: Params, ipn: f64) -> Sample {
    let cfg = match p.cfg {
        Some(c) => RingConfig {
            capacity: p.capacity,
            producer_wake_at: (p.capacity / 2).max(1),
            ..c
        },
        None => RingConfig::new(p.capacity),
    };
    let (mut tx, mut rx) = cfg.build::<u64>().unwrap();
    let stats = tx.stats_handle();
    let stamps = Stamps::new(p.items);
    let st = std::sync::Arc::clone(&stamps);
    let mut lats = Vec::new();
    let t0 = Instant::now();
    let producer = thread::spawn(move || {
        measure(|| {
            let mut v = Vec::with_capacity(p.batch);
            let mut next = 0u64;
            while next < p.items {
                let k = (p.batch as u64).min(p.items - next);
                for x in next..next + k {
                    busy(p.producer_work_ns, ipn);
                    st.sent(x);
                    v.push(x);
                }
                tx.push_batch(&mut v).unwrap();
                next += k;
            }
            drop(tx);
        })
        .1
    });
    let ((), cons) = measure(|| {
        let mut out = Vec::with_capacity(p.batch);
        let mut expect = 0u64;
        while rx.pop_batch(&mut out, p.batch).is_ok() {
            for x in out.drain(..) {
                assert_eq!(x, expect);
                stamps.received(x, &mut lats);
                busy(p.consumer_work_ns, ipn);
                expect += 1;
            }
        }
        assert_eq!(expect, p.items);
    });
    let prod = producer.join().unwrap();
    let wall = t0.elapsed();
    let (lat_p50, lat_p99, lat_max) = summarize(lats);
    let s = stats.stats();
    Sample {
        wall,
        producer_cpu: prod.cpu,
        consumer_cpu: cons.cpu,
        producer_vcsw: prod.vcsw,
        consumer_vcsw: cons.vcsw,
        wakeups: Some(s.wakeups()),
        lat_p50,
        lat_p99,
        lat_max,
        commits: Some(s.commits),
        releases: Some(s.releases),
    }
}

/// Baseline channels have no batch API: the producer sends items one by one
/// (per-item publication and wake-up check) and the consumer `recv`s one by
/// one (a "batch" read from these channels is the same loop), so `batch`
/// does not change what they do.
fn run_channel<S, R>(p: Params, ipn: f64, mut send: S, mut recv: R) -> Sample
where
    S: FnMut(u64) -> bool + Send + 'static,
    R: FnMut() -> Option<u64>,
{
    let stamps = Stamps::new(p.items);
    let st = std::sync::Arc::clone(&stamps);
    let mut lats = Vec::new();
    let t0 = Instant::now();
    let producer = thread::spawn(move || {
        measure(|| {
            let mut next = 0u64;
            while next < p.items {
                let k = (p.batch as u64).min(p.items - next);
                for x in next..next + k {
                    busy(p.producer_work_ns, ipn);
                    st.sent(x);
                    assert!(send(x));
                }
                next += k;
            }
            drop(send);
        })
        .1
    });
    let ((), cons) = measure(|| {
        let mut expect = 0u64;
        while let Some(x) = recv() {
            assert_eq!(x, expect);
            stamps.received(x, &mut lats);
            busy(p.consumer_work_ns, ipn);
            expect += 1;
        }
        assert_eq!(expect, p.items);
    });
    let prod = producer.join().unwrap();
    let wall = t0.elapsed();
    let (lat_p50, lat_p99, lat_max) = summarize(lats);
    Sample {
        wall,
        producer_cpu: prod.cpu,
        consumer_cpu: cons.cpu,
        producer_vcsw: prod.vcsw,
        consumer_vcsw: cons.vcsw,
        wakeups: None,
        lat_p50,
        lat_p99,
        lat_max,
        commits: None,
        releases: None,
    }
}
