//! Per-packet latency from injection to transmission, for benchmarks.
//!
//! A packet's injection time, on a clock shared by the stages of a worker ([`Stamps`]),
//! is written into the packet (`arch.rx_ns`, which travels with the packet and its
//! clones, also across pipeline stages); the stage that transmits it records
//! `tx time - injection time` in its [`LatencyHist`]. Clocks are read once per batch
//! ([`crate::Core::mark_rx`] before a batch of injections, once per egress batch before
//! transmission), so the cost is two clock reads per batch and a store and a load per
//! packet. A forwarding loop that reads the time once per turn hands it to
//! [`crate::Core::mark_rx_at`] instead.

use std::sync::Arc;
use std::time::Instant;

/// The latency clock shared by the stages of one worker.
#[derive(Debug)]
pub struct Stamps {
    base: Instant,
}

impl Stamps {
    /// A new clock; times are nanoseconds since now.
    pub fn new() -> Arc<Stamps> {
        Arc::new(Stamps {
            base: Instant::now(),
        })
    }

    /// Nanoseconds since the clock was created.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// `at`, in nanoseconds since the clock was created (0 before it).
    #[inline]
    pub fn ns_at(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.base).as_nanos() as u64
    }
}

/// Sub-buckets per power of two (relative resolution 1/32).
const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
const LINEAR: usize = 2 * SUB;
const BUCKETS: usize = LINEAR + (64 - SUB_BITS as usize - 1) * SUB;

/// A log-linear histogram of nanosecond values: exact below 64 ns, then 32 buckets per
/// power of two (quantiles within ~3 %); exact count, mean and maximum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyHist {
    count: u64,
    sum: u128,
    max: u64,
    buckets: Vec<u64>,
}

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist {
            count: 0,
            sum: 0,
            max: 0,
            buckets: vec![0; BUCKETS],
        }
    }
}

fn bucket_of(v: u64) -> usize {
    if v < LINEAR as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let sub = ((v >> shift) as usize) & (SUB - 1);
    LINEAR + (msb as usize - SUB_BITS as usize - 1) * SUB + sub
}

/// Largest value of bucket `i`.
fn bucket_top(i: usize) -> u64 {
    if i < LINEAR {
        return i as u64;
    }
    let k = i - LINEAR;
    let msb = (k / SUB) as u32 + SUB_BITS + 1;
    let shift = msb - SUB_BITS;
    let sub = (k % SUB) as u128;
    let top = ((SUB as u128 + sub + 1) << shift) - 1;
    top.min(u64::MAX as u128) as u64
}

impl LatencyHist {
    /// Records one value.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    /// Records `n` values of `ns`.
    pub fn record_n(&mut self, ns: u64, n: u64) {
        self.count += n;
        self.sum += ns as u128 * n as u128;
        self.max = self.max.max(ns);
        self.buckets[bucket_of(ns)] += n;
    }

    /// Adds another histogram's values.
    pub fn merge(&mut self, o: &LatencyHist) {
        self.count += o.count;
        self.sum += o.sum;
        self.max = self.max.max(o.max);
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        *self = LatencyHist::default();
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Mean (0 when empty).
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Largest value.
    pub fn max_ns(&self) -> u64 {
        self.max
    }

    /// Sum of the values (ns).
    pub fn sum_ns(&self) -> u128 {
        self.sum
    }

    /// Values at most `ns`, counting the buckets that lie wholly at or below it (a
    /// bucket straddling `ns` is left out: an under-count of at most one bucket,
    /// 1/32 of the value's power of two).
    pub fn count_le(&self, ns: u64) -> u64 {
        let mut n = 0;
        for (i, c) in self.buckets.iter().enumerate() {
            if bucket_top(i) > ns {
                break;
            }
            n += c;
        }
        n
    }

    /// The `q` quantile (0..=1): the top of the bucket holding it, at most the maximum.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return bucket_top(i).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_cover_their_values() {
        let mut prev = 0;
        for v in (0..5000u64).chain([1 << 20, (1 << 40) + 12345, u64::MAX]) {
            let b = bucket_of(v);
            assert!(b < BUCKETS);
            assert!(b >= prev || v > 5000);
            prev = b;
            assert!(bucket_top(b) >= v, "{v}");
            if b > 0 {
                assert!(bucket_top(b - 1) < v, "{v}");
            }
            let top = bucket_top(b);
            assert!(top - v <= v / 16 + 1, "{v} -> {top}");
        }
    }

    #[test]
    fn count_le_is_cumulative_and_exact_on_bucket_tops() {
        let mut h = LatencyHist::default();
        for v in [10u64, 100, 1_000, 10_000, 100_000, 100_000] {
            h.record(v);
        }
        assert_eq!(h.count_le(9), 0);
        assert_eq!(h.count_le(10), 1);
        assert_eq!(h.count_le(bucket_top(bucket_of(1_000))), 3);
        assert_eq!(h.count_le(u64::MAX), 6);
        let mut prev = 0;
        for ns in (0..200_000).step_by(997) {
            let c = h.count_le(ns);
            assert!(c >= prev);
            prev = c;
        }
        assert_eq!(h.sum_ns(), 211_110);
    }

    #[test]
    fn quantiles_mean_max() {
        let mut h = LatencyHist::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        assert_eq!(h.count(), 1000);
        assert!((h.mean_ns() - 500_500.0).abs() < 1e-6);
        assert_eq!(h.max_ns(), 1_000_000);
        let p99 = h.quantile_ns(0.99);
        assert!((990_000..=1_000_000).contains(&p99), "{p99}");
        let p50 = h.quantile_ns(0.5);
        assert!((500_000..=516_000).contains(&p50), "{p50}");
        let mut g = LatencyHist::default();
        g.record(5);
        g.merge(&h);
        assert_eq!(g.count(), 1001);
        assert_eq!(g.quantile_ns(0.0), 5);
    }
}
