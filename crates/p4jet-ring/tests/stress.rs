//! Two-thread stress: 10M items, both sides batching randomly through every
//! entry point and occasionally sleeping; the consumer checks that it sees
//! exactly 0, 1, 2, ... (ordering kept, no loss, no duplicates).
//! `P4JET_RING_STRESS_N` overrides the item count.
#![allow(clippy::unwrap_used)]

use std::thread;
use std::time::Duration;

use p4jet_ring::{Closed, RingConfig, TryPopError, TrySendError};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Sleeps 0..max_us µs with probability 1/one_in.
    fn maybe_sleep(&mut self, one_in: u64, max_us: u64) {
        if self.below(one_in) == 0 {
            thread::sleep(Duration::from_micros(self.below(max_us)));
        }
    }
}

trait Item: Send + 'static {
    fn new(v: u64) -> Self;
    fn get(&self) -> u64;
}
impl Item for u64 {
    fn new(v: u64) -> Self {
        v
    }
    fn get(&self) -> u64 {
        *self
    }
}
impl Item for Box<u64> {
    fn new(v: u64) -> Self {
        Box::new(v)
    }
    fn get(&self) -> u64 {
        **self
    }
}

fn stress<T: Item>(cfg: RingConfig, n: u64, seed: u64) {
    let (mut tx, mut rx) = cfg.build::<T>().unwrap();
    let stats = tx.stats_handle();
    let producer = thread::spawn(move || {
        let mut rng = Rng(seed | 1);
        let mut next = 0u64;
        let mut v = Vec::new();
        while next < n {
            let k = (1 + rng.below(300)).min(n - next);
            match rng.below(4) {
                0 => {
                    v.extend((next..next + k).map(T::new));
                    tx.push_batch(&mut v).unwrap();
                }
                1 => {
                    for i in next..next + k {
                        tx.push(T::new(i));
                    }
                    tx.commit().unwrap();
                }
                2 => {
                    for i in next..next + k.min(8) {
                        tx.send(T::new(i)).map_err(|_| ()).unwrap();
                    }
                    next += k.min(8);
                    rng.maybe_sleep(500, 200);
                    continue;
                }
                _ => {
                    v.extend((next..next + k).map(T::new));
                    while !v.is_empty() {
                        if tx.try_push_batch(&mut v).unwrap() == 0 {
                            thread::yield_now();
                        }
                    }
                    // A sentinel through try_send (Full or not); the
                    // consumer skips it.
                    match tx.try_send(T::new(u64::MAX)) {
                        Ok(()) | Err(TrySendError::Full(_)) => {}
                        Err(TrySendError::Closed(_)) => panic!("closed early"),
                    }
                }
            }
            next += k;
            rng.maybe_sleep(500, 200);
        }
        tx.close();
    });

    let mut rng = Rng(seed.rotate_left(17) | 1);
    let mut expect = 0u64;
    let mut out: Vec<T> = Vec::new();
    let check = |x: &T, expect: &mut u64| {
        let x = x.get();
        if x == u64::MAX {
            return;
        }
        assert_eq!(x, *expect, "out of order / lost / duplicated");
        *expect += 1;
    };
    loop {
        let max = 1 + rng.below(300) as usize;
        let r = match rng.below(5) {
            0 => rx.pop_batch(&mut out, max),
            1 => rx.pop_with(max, |x| check(&x, &mut expect)),
            2 => match rx.try_pop_batch(&mut out, max) {
                Ok(0) => {
                    thread::yield_now();
                    Ok(0)
                }
                r => r,
            },
            3 => match rx.pop() {
                Ok(x) => {
                    check(&x, &mut expect);
                    Ok(1)
                }
                Err(Closed) => Err(Closed),
            },
            _ => rx.pop_batch_timeout(&mut out, max, Duration::from_micros(rng.below(300))),
        };
        for x in out.drain(..) {
            check(&x, &mut expect);
        }
        if r.is_err() {
            break;
        }
        rng.maybe_sleep(500, 200);
    }
    producer.join().unwrap();
    assert_eq!(expect, n);
    assert_eq!(rx.try_pop().err(), Some(TryPopError::Closed));
    let s = stats.stats();
    assert_eq!(s.pushed, s.popped);
    eprintln!(
        "n={n} cap={} commits={} releases={} wakeups c<-p {} p<-c {} parks c {} p {} sleeps {}",
        cfg.capacity,
        s.commits,
        s.releases,
        s.consumer_wakeups,
        s.producer_wakeups,
        s.consumer_parks,
        s.producer_parks,
        s.consumer_sleeps
    );
}

/// Runs `f` on its own thread and fails (instead of hanging the test run)
/// if it does not finish within 10 minutes: a lost wake-up shows up as a hang.
fn with_watchdog(f: impl FnOnce() + Send + 'static) {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let h = thread::spawn(move || {
        f();
        let _ = done_tx.send(());
    });
    match done_rx.recv_timeout(Duration::from_secs(600)) {
        Ok(()) => h.join().unwrap(),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => h.join().unwrap(), // panicked
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("stress hung: lost wake-up?"),
    }
}

fn items() -> u64 {
    std::env::var("P4JET_RING_STRESS_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000)
}

#[test]
fn stress_10m_ring_256() {
    with_watchdog(|| stress::<u64>(RingConfig::new(256), items(), 0x1234_5678));
}

#[test]
fn stress_small_ring_boxed_items() {
    // Capacity 8 forces constant full/empty transitions; boxed items check
    // that moved-out values are neither leaked nor freed twice.
    stress::<Box<u64>>(
        RingConfig::new(8)
            .spin(4)
            .sleep(1, Duration::from_micros(5)),
        items() / 10,
        0x9abc_def0,
    );
}

#[test]
fn stress_no_spin_no_sleep_wake_at_one() {
    // Every wait goes straight to park and the producer wakes at one free
    // slot: the most wake-ups, the most chances for a lost one.
    stress::<u64>(
        RingConfig::new(16)
            .spin(0)
            .sleep(0, Duration::ZERO)
            .producer_wake_at(1),
        items() / 10,
        0x5555_aaaa,
    );
}

#[test]
fn stress_naps_and_yields_tiny_ring() {
    // Capacity 4, no spinning: the consumer naps often and the producer
    // fills the ring during the nap (exercises the cut-short-nap wake-up).
    with_watchdog(|| {
        stress::<u64>(
            RingConfig::new(4)
                .spin(0)
                .yields(2)
                .sleep(3, Duration::from_micros(50)),
            items() / 20,
            0x0f0f_7777,
        )
    });
}
