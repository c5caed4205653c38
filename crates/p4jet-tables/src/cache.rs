//! Exact cache of lookup results (ternary and range tables).
//!
//! Set-associative (2 ways), keyed by the whole packed key, storing the
//! lookup's answer (entry index or "no match") together with the table's
//! *generation*. The table bumps its generation on every insert, delete and
//! clear (all under `&mut`), so an answer computed before a write never
//! matches after it: results are exactly those of the uncached lookup,
//! whatever the priorities. `modify` keeps the generation (the cache holds
//! entry indexes, values are read from the table).
//!
//! Lookups take `&self` and may run on several threads at once (left-right
//! readers share one copy), so every word is an `AtomicU64` and each way is
//! a seqlock: a filler claims the way by moving its sequence word from even
//! to odd (compare-exchange; a busy way is skipped), writes, and publishes
//! with the next even value; a reader retries nothing, it treats a way that
//! is busy or changed while being read as a miss. On x86_64 a hit is plain
//! loads; a fill costs one locked compare-exchange.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

use crate::words::{Words, seed_of};

const WAYS: usize = 2;
/// `score` is a smoothed hit rate in 1/256ths; below this, batches bypass
/// the cache.
const LOW_SCORE: u32 = 32;

pub(crate) struct LookupCache {
    /// key words
    w: usize,
    /// words per way: sequence, result, key (`2 + w`, kept: computing it instead
    /// measured 2 instructions per packet more on acl_large)
    stride: usize,
    sets_mask: usize,
    seed: u64,
    slots: Vec<AtomicU64>,
    /// Smoothed hit rate of batched lookups (x256). When traffic has far
    /// more flows than the cache holds, every probe misses and fills (a
    /// locked compare-exchange and a cold line): batches then skip the
    /// cache, and every 32nd batch tries it again. Updated with plain
    /// relaxed loads and stores, once per batch (racing updates only blur
    /// the estimate; results never depend on it).
    score: AtomicU32,
    /// Batched lookups that went through the cache, those that hit, and
    /// those that skipped it (bypass): statistics for reports, updated once
    /// per batch with relaxed loads and stores (racing workers may lose a
    /// batch's counts; nothing depends on them).
    probed: AtomicU64,
    hits: AtomicU64,
    skipped: AtomicU64,
}

/// Counts of a lookup cache (batched lookups only), see
/// [`crate::Table::cache_stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Keys looked up through the cache.
    pub probed: u64,
    /// Of those, answered by the cache.
    pub hits: u64,
    /// Keys of batches that skipped the cache because it kept missing.
    pub skipped: u64,
}

impl Clone for LookupCache {
    /// A copy starts empty (a cache is only a hint of past lookups).
    fn clone(&self) -> Self {
        LookupCache::new(self.sets_mask + 1, self.w)
    }
}

impl LookupCache {
    /// `sets` is rounded up to a power of two.
    pub(crate) fn new(sets: usize, w: usize) -> Self {
        let sets = sets.max(1).next_power_of_two();
        let stride = 2 + w;
        LookupCache {
            w,
            stride,
            sets_mask: sets - 1,
            seed: seed_of(0x5eed),
            slots: (0..sets * WAYS * stride)
                .map(|_| AtomicU64::new(0))
                .collect(),
            score: AtomicU32::new(256),
            probed: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
        }
    }

    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats {
            probed: self.probed.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
            skipped: self.skipped.load(Ordering::Relaxed),
        }
    }

    /// Count `n` keys of a batch that skipped the cache.
    #[inline]
    pub(crate) fn record_skip(&self, n: usize) {
        let s = self.skipped.load(Ordering::Relaxed);
        self.skipped.store(s + n as u64, Ordering::Relaxed);
    }

    /// Whether the next batch should skip the cache (see `score`).
    #[inline]
    pub(crate) fn bypass(&self) -> bool {
        let s = self.score.load(Ordering::Relaxed);
        if s < LOW_SCORE {
            self.score.store(s + 1, Ordering::Relaxed);
            true
        } else {
            false
        }
    }

    /// Account a batch of `n` cached lookups with `hits` hits.
    #[inline]
    pub(crate) fn record(&self, hits: usize, n: usize) {
        if n == 0 {
            return;
        }
        let p = self.probed.load(Ordering::Relaxed);
        self.probed.store(p + n as u64, Ordering::Relaxed);
        let h = self.hits.load(Ordering::Relaxed);
        self.hits.store(h + hits as u64, Ordering::Relaxed);
        let rate = (hits * 256 / n) as u32;
        let old = self.score.load(Ordering::Relaxed).min(256);
        let new = (old * 3 + rate) / 4;
        self.score
            .store(if new < LOW_SCORE { 0 } else { new }, Ordering::Relaxed);
    }

    pub(crate) fn sets(&self) -> usize {
        self.sets_mask + 1
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.slots.capacity() * 8
    }

    /// Forget everything (used when the generation wraps).
    pub(crate) fn reset(&mut self) {
        for s in &mut self.slots {
            *s.get_mut() = 0;
        }
    }

    #[inline(always)]
    pub(crate) fn hash<K: Words + ?Sized>(&self, k: &K) -> u64 {
        crate::words::hash_key(k, self.seed)
    }

    /// The first word of hash `h`'s set, for ways of `stride` words.
    #[inline(always)]
    fn set_base(&self, h: u64, stride: usize) -> usize {
        ((h >> 20) as usize & self.sets_mask) * WAYS * stride
    }

    /// Prefetch the set of hash `h`.
    #[inline(always)]
    pub(crate) fn prefetch(&self, h: u64) {
        crate::prefetch::prefetch_index(&self.slots, self.set_base(h, self.stride));
    }

    /// The cached answer for key `k` (hash `h`) at generation `gen`:
    /// `Some(None)` = cached "no match".
    #[inline(always)]
    pub(crate) fn get<K: Words + ?Sized>(
        &self,
        k: &K,
        h: u64,
        generation: u32,
    ) -> Option<Option<u32>> {
        // the key's own word count (a constant for fixed-size keys: the loops
        // unroll), which is the cache's
        let w = k.n();
        debug_assert_eq!(w, self.w);
        let stride = 2 + w;
        let base = self.set_base(h, stride);
        for way in 0..WAYS {
            let b = base + way * stride;
            let ws = &self.slots[b..b + 2 + w];
            let s1 = ws[0].load(Ordering::Acquire);
            let res = ws[1].load(Ordering::Relaxed);
            let mut d = u64::from((res >> 32) as u32 ^ generation);
            for i in 0..w {
                d |= ws[2 + i].load(Ordering::Relaxed) ^ k.at(i);
            }
            fence(Ordering::Acquire);
            let s2 = ws[0].load(Ordering::Relaxed);
            if d == 0 && s1 == s2 && s1 & 1 == 0 {
                return Some((res as u32).checked_sub(1));
            }
        }
        None
    }

    /// Remember `result` for key `k` (hash `h`) at generation `gen`.
    #[inline]
    pub(crate) fn put<K: Words + ?Sized>(
        &self,
        k: &K,
        h: u64,
        generation: u32,
        result: Option<u32>,
    ) {
        let base = self.set_base(h, self.stride);
        // an empty or stale way first, else one picked by the hash
        let mut way = ((h >> 40) & 1) as usize;
        for x in 0..WAYS {
            let res = self.slots[base + x * self.stride + 1].load(Ordering::Relaxed);
            if (res >> 32) as u32 != generation {
                way = x;
                break;
            }
        }
        let b = base + way * self.stride;
        let ws = &self.slots[b..b + self.stride];
        let s = ws[0].load(Ordering::Relaxed);
        if s & 1 != 0
            || ws[0]
                .compare_exchange(s, s.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        fence(Ordering::Release);
        let r = result.map_or(0, |i| u64::from(i) + 1);
        ws[1].store((u64::from(generation) << 32) | r, Ordering::Relaxed);
        for i in 0..self.w {
            ws[2 + i].store(k.at(i), Ordering::Relaxed);
        }
        ws[0].store(s.wrapping_add(2), Ordering::Release);
    }
}
