//! Hashing and the bucketed open-addressing index shared by every structure.
//!
//! `HashIndex` maps a 64-bit hash to `u32` ids; the keys themselves live
//! elsewhere (packed arenas owned by the caller), and the caller supplies the
//! equality test. A bucket is one cache line: 8 slots, each with a 16-bit
//! signature (0 = empty) and a `u32` id, plus an overflow counter. Probing is
//! linear over buckets; the overflow counter of a bucket counts the ids whose
//! home bucket is at or before it and that were stored after it, so a lookup
//! stops at the first bucket whose counter is 0 (no tombstones needed, deletes
//! just decrement the counters along the probe path, as in F14).

use crate::prefetch::prefetch;
use crate::words::word_in;

const K0: u64 = 0x243F_6A88_85A3_08D3;
const K1: u64 = 0x9E37_79B9_7F4A_7C15;
const K2: u64 = 0xD6E8_FEB8_6659_FD93;
const K3: u64 = 0xA076_1D64_78BD_642F;

#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

#[inline(always)]
fn word(c: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a[..c.len()].copy_from_slice(c);
    u64::from_le_bytes(a)
}

/// Hash of a byte string (fixed seed: deterministic across runs and copies).
#[inline]
pub(crate) fn hash_bytes(k: &[u8]) -> u64 {
    let mut h = K0 ^ (k.len() as u64).wrapping_mul(K3);
    let mut chunks = k.chunks_exact(8);
    for c in &mut chunks {
        h = fold(h ^ word(c) ^ K2, K1);
    }
    let r = chunks.remainder();
    if !r.is_empty() {
        h = fold(h ^ word(r) ^ K3, K1);
    }
    fold(h, K2)
}

/// Hash of a key of 3 to 8 bytes held as one word (its bytes little-endian, zero
/// above): one multiplication, for the exact index's word keys (which are hashed only
/// this way).
#[inline(always)]
pub(crate) fn hash_word(w: u64) -> u64 {
    fold(w ^ K0, K1)
}

/// `hash_bytes(&buf[at..at + kb])`, reading the last partial word as one
/// masked 8-byte load when `buf` goes on past the key (keys packed back to
/// back): no `memcpy` call for short keys.
#[inline(always)]
pub(crate) fn hash_at(buf: &[u8], at: usize, kb: usize) -> u64 {
    let mut h = K0 ^ (kb as u64).wrapping_mul(K3);
    let full = kb / 8;
    for i in 0..full {
        h = fold(h ^ word_in(buf, at + 8 * i, 8) ^ K2, K1);
    }
    let r = kb % 8;
    if r != 0 {
        h = fold(h ^ word_in(buf, at + 8 * full, r) ^ K3, K1);
    }
    fold(h, K2)
}

/// `a == b` for short byte strings without a `memcmp` call (lengths up to 16
/// are compared with two overlapping loads).
#[inline(always)]
pub(crate) fn short_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    macro_rules! ld {
        ($s:expr, $t:ty, $i:expr) => {{
            const N: usize = std::mem::size_of::<$t>();
            let mut x = [0u8; N];
            x.copy_from_slice(&$s[$i..$i + N]);
            <$t>::from_le_bytes(x)
        }};
    }
    if n >= 8 {
        if n > 16 {
            return a == b;
        }
        (ld!(a, u64, 0) ^ ld!(b, u64, 0)) | (ld!(a, u64, n - 8) ^ ld!(b, u64, n - 8)) == 0
    } else if n >= 4 {
        (ld!(a, u32, 0) ^ ld!(b, u32, 0)) | (ld!(a, u32, n - 4) ^ ld!(b, u32, n - 4)) == 0
    } else if n >= 2 {
        (ld!(a, u16, 0) ^ ld!(b, u16, 0)) | (ld!(a, u16, n - 2) ^ ld!(b, u16, n - 2)) == 0
    } else {
        n == 0 || a[0] == b[0]
    }
}

/// `hash_bytes(k & m)` without materialising `k & m`. `m.len() == k.len()`.
#[inline]
pub(crate) fn hash_masked(k: &[u8], m: &[u8]) -> u64 {
    let mut h = K0 ^ (k.len() as u64).wrapping_mul(K3);
    let mut kc = k.chunks_exact(8);
    let mut mc = m.chunks_exact(8);
    for (a, b) in (&mut kc).zip(&mut mc) {
        h = fold(h ^ (word(a) & word(b)) ^ K2, K1);
    }
    let (r, rm) = (kc.remainder(), mc.remainder());
    if !r.is_empty() {
        h = fold(h ^ (word(r) & word(rm)) ^ K3, K1);
    }
    fold(h, K2)
}

/// `stored == k & m` (all three the same length).
#[inline]
pub(crate) fn masked_eq(stored: &[u8], k: &[u8], m: &[u8]) -> bool {
    let mut sc = stored.chunks_exact(8);
    let mut kc = k.chunks_exact(8);
    let mut mc = m.chunks_exact(8);
    for ((s, a), b) in (&mut sc).zip(&mut kc).zip(&mut mc) {
        if word(s) != word(a) & word(b) {
            return false;
        }
    }
    let (s, a, b) = (sc.remainder(), kc.remainder(), mc.remainder());
    s.is_empty() || word(s) == word(a) & word(b)
}

const SLOTS: usize = 8;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Bucket {
    /// 16-bit signatures, four per word, slot `i` in bits `16 * (i % 4)` of word
    /// `i / 4` (0 = empty slot); kept as words so that [`Bucket::matches`] reads them
    /// with two loads.
    sigs: [u64; SLOTS / 4],
    ids: [u32; SLOTS],
    overflow: u32,
}

impl Bucket {
    const EMPTY: Bucket = Bucket {
        sigs: [0; SLOTS / 4],
        ids: [0; SLOTS],
        overflow: 0,
    };

    /// Bit `i` set when slot `i` holds signature `sig`: on x86_64 one SSE2 compare of
    /// the eight lanes (~6 instructions), elsewhere [`Bucket::matches_swar`].
    #[inline(always)]
    #[cfg(target_arch = "x86_64")]
    fn matches(&self, sig: u16) -> u32 {
        crate::prefetch::eq_lanes16(self.sigs, sig)
    }

    /// [`Bucket::matches`] without SIMD: SWAR over two 64-bit words of four 16-bit
    /// lanes. A lane equal to `sig` is zero after the XOR; `((x & 0x7fff) + 0x7fff) | x`
    /// has bit 15 set exactly in the non-zero lanes, without carries between lanes;
    /// the zero lanes' bits 15 are then gathered into bits 48..52 by one
    /// multiplication (the shifts 48, 33, 18, 3 take lane k's bit to 48 + k, and no
    /// two partial products meet, so nothing carries). About 20 instructions where
    /// the per-slot loop took about 60 under callgrind.
    #[cfg(any(test, not(target_arch = "x86_64")))]
    fn matches_swar(&self, sig: u16) -> u32 {
        const LOW: u64 = 0x7fff_7fff_7fff_7fff;
        const HIGH: u64 = 0x8000_8000_8000_8000;
        const GATHER: u64 = (1 << 48) | (1 << 33) | (1 << 18) | (1 << 3);
        let pattern = u64::from(sig) * 0x0001_0001_0001_0001;
        let four = |w: u64| {
            let x = w ^ pattern;
            let zero_lanes = !(((x & LOW) + LOW) | x) & HIGH;
            (((zero_lanes >> 15).wrapping_mul(GATHER) >> 48) & 0xf) as u32
        };
        four(self.sigs[0]) | (four(self.sigs[1]) << 4)
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn matches(&self, sig: u16) -> u32 {
        self.matches_swar(sig)
    }

    /// The signature in slot `i` (0 = empty).
    #[inline]
    fn sig(&self, i: usize) -> u16 {
        (self.sigs[i / 4] >> (16 * (i % 4))) as u16
    }

    /// Sets the signature of slot `i`.
    #[inline]
    fn set_sig(&mut self, i: usize, sig: u16) {
        let shift = 16 * (i % 4);
        let w = &mut self.sigs[i / 4];
        *w = (*w & !(0xffff << shift)) | (u64::from(sig) << shift);
    }
}

#[inline(always)]
fn sig_of(h: u64) -> u16 {
    let s = (h >> 48) as u16;
    s | u16::from(s == 0)
}

/// Hash index from 64-bit hashes to `u32` ids (see the module docs).
#[derive(Clone, Default)]
pub(crate) struct HashIndex {
    buckets: Vec<Bucket>,
    mask: usize,
    len: usize,
}

impl HashIndex {
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<Bucket>()
    }

    pub(crate) fn clear(&mut self) {
        *self = HashIndex::default();
    }

    /// Whether the index is small enough (at most 256 buckets, 16 KiB: about 1,800
    /// entries) to stay in the L1/L2 caches: the prefetch stages' instructions (a
    /// second signature scan per key) then cost more than the misses they hide.
    #[inline(always)]
    pub(crate) fn is_small(&self) -> bool {
        self.buckets.len() <= 256
    }

    #[inline(always)]
    fn home(&self, h: u64) -> usize {
        (h as usize) & self.mask
    }

    /// Prefetch the home bucket of `h`.
    #[inline(always)]
    pub(crate) fn prefetch(&self, h: u64) {
        if !self.buckets.is_empty() {
            prefetch(&self.buckets[self.home(h)] as *const Bucket);
        }
    }

    /// First id in the home bucket of `h` whose signature matches (a cheap
    /// guess used to prefetch the key before the full probe).
    #[inline(always)]
    pub(crate) fn first_candidate(&self, h: u64) -> Option<u32> {
        let b = self.buckets.get(self.home(h))?;
        let m = b.matches(sig_of(h));
        if m == 0 {
            None
        } else {
            Some(b.ids[m.trailing_zeros() as usize])
        }
    }

    /// Find the id with hash `h` for which `eq(id)` holds.
    #[inline(always)]
    pub(crate) fn find(&self, h: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        if self.buckets.is_empty() {
            return None;
        }
        let sig = sig_of(h);
        let mut b = self.home(h);
        // every bucket may carry overflow (probe sequences can wrap around),
        // so the probe is also bounded by the number of buckets
        for _ in 0..self.buckets.len() {
            let bucket = &self.buckets[b];
            let mut m = bucket.matches(sig);
            while m != 0 {
                let id = bucket.ids[m.trailing_zeros() as usize];
                if eq(id) {
                    return Some(id);
                }
                m &= m - 1;
            }
            if bucket.overflow == 0 {
                return None;
            }
            b = (b + 1) & self.mask;
        }
        None
    }

    /// Insert `id` under hash `h` (the caller guarantees it is not present).
    /// `rehash(id)` must return the hash of any id already stored (used when
    /// the index grows).
    pub(crate) fn insert(&mut self, h: u64, id: u32, rehash: impl Fn(u32) -> u64) {
        let cap = self.buckets.len() * SLOTS;
        // max load 7/8
        if (self.len + 1) * 8 > cap * 7 {
            self.grow(rehash);
        }
        self.insert_nogrow(h, id);
    }

    fn insert_nogrow(&mut self, h: u64, id: u32) {
        let sig = sig_of(h);
        let mut b = self.home(h);
        loop {
            let bucket = &mut self.buckets[b];
            if let Some(i) = (0..SLOTS).find(|&i| bucket.sig(i) == 0) {
                bucket.set_sig(i, sig);
                bucket.ids[i] = id;
                break;
            }
            bucket.overflow += 1;
            b = (b + 1) & self.mask;
        }
        self.len += 1;
    }

    /// Grows the index (if needed) so that it holds `len` ids without growing again.
    pub(crate) fn reserve(&mut self, len: usize, rehash: impl Fn(u32) -> u64) {
        let mut nb = self.buckets.len().max(1);
        while len * 8 > nb * SLOTS * 7 {
            nb *= 2;
        }
        if nb > self.buckets.len() {
            self.resize(nb, rehash);
        }
    }

    fn grow(&mut self, rehash: impl Fn(u32) -> u64) {
        self.resize((self.buckets.len() * 2).max(1), rehash);
    }

    fn resize(&mut self, nb: usize, rehash: impl Fn(u32) -> u64) {
        let old = std::mem::replace(&mut self.buckets, vec![Bucket::EMPTY; nb]);
        self.mask = nb - 1;
        self.len = 0;
        for b in &old {
            for i in 0..SLOTS {
                if b.sig(i) != 0 {
                    let id = b.ids[i];
                    self.insert_nogrow(rehash(id), id);
                }
            }
        }
    }

    /// Remove `id` (stored under hash `h`). Returns whether it was found.
    pub(crate) fn remove(&mut self, h: u64, id: u32) -> bool {
        if self.buckets.is_empty() {
            return false;
        }
        let sig = sig_of(h);
        let home = self.home(h);
        let mut b = home;
        for _ in 0..self.buckets.len() {
            let bucket = &mut self.buckets[b];
            if let Some(i) = (0..SLOTS).find(|&i| bucket.sig(i) == sig && bucket.ids[i] == id) {
                bucket.set_sig(i, 0);
                let mut p = home;
                while p != b {
                    self.buckets[p].overflow -= 1;
                    p = (p + 1) & self.mask;
                }
                self.len -= 1;
                return true;
            }
            if bucket.overflow == 0 {
                return false;
            }
            b = (b + 1) & self.mask;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_hash_matches_plain() {
        let k: Vec<u8> = (0u8..37).collect();
        let m: Vec<u8> = (0u8..37)
            .map(|i| if i % 3 == 0 { 0xff } else { 0x0f })
            .collect();
        let km: Vec<u8> = k.iter().zip(&m).map(|(a, b)| a & b).collect();
        assert_eq!(hash_masked(&k, &m), hash_bytes(&km));
        assert!(masked_eq(&km, &k, &m));
    }

    #[test]
    fn hash_at_and_short_eq_match_the_plain_versions() {
        let buf: Vec<u8> = (0..80u32).map(|i| (i * 73 + 11) as u8).collect();
        for kb in 0..=40usize {
            for at in 0..=buf.len() - kb {
                assert_eq!(
                    hash_at(&buf, at, kb),
                    hash_bytes(&buf[at..at + kb]),
                    "{kb} {at}"
                );
            }
        }
        for n in 0..=24usize {
            let a: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
            assert!(short_eq(&a, &a.clone()));
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 0x40;
                assert!(!short_eq(&a, &b), "{n} {i}");
            }
            assert!(!short_eq(&a, &buf[..n + 1]));
        }
    }

    #[test]
    fn bucket_matches_every_slot() {
        let mut b = Bucket::EMPTY;
        for i in 0..SLOTS {
            b.set_sig(i, [7, 9, 7, 0xffff, 1, 7, 0x8000, 9][i]);
        }
        assert_eq!(b.matches(7), 0b0010_0101);
        assert_eq!(b.matches(9), 0b1000_0010);
        assert_eq!(b.matches(0xffff), 0b0000_1000);
        assert_eq!(b.matches(0x8000), 0b0100_0000);
        assert_eq!(b.matches(1), 0b0001_0000);
        assert_eq!(b.matches(2), 0);
        assert_eq!(Bucket::EMPTY.matches(0), 0xff);
    }

    /// `matches` (SSE2 on x86_64) and the SWAR version against the per-slot definition,
    /// on buckets drawn from values that stress lane borrows and carries (0, 1, 0x7fff,
    /// 0x8000, 0xffff, ...).
    #[test]
    fn bucket_matches_like_the_slot_loop() {
        const VALUES: [u16; 9] = [0, 1, 2, 0x7fff, 0x8000, 0x8001, 0xfffe, 0xffff, 0x0100];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let mut b = Bucket::EMPTY;
            for i in 0..SLOTS {
                let r = next();
                let s = if r & 1 == 0 {
                    VALUES[(r >> 1) as usize % VALUES.len()]
                } else {
                    (r >> 16) as u16
                };
                b.set_sig(i, s);
                assert_eq!(b.sig(i), s);
            }
            let r = next();
            let sig = if r & 1 == 0 {
                b.sig((r >> 1) as usize % SLOTS)
            } else {
                VALUES[(r >> 1) as usize % VALUES.len()]
            };
            let want = (0..SLOTS).fold(0u32, |m, i| m | (u32::from(b.sig(i) == sig) << i));
            assert_eq!(b.matches(sig), want, "{:x?} {sig:#x}", b.sigs);
            assert_eq!(b.matches_swar(sig), want, "{:x?} {sig:#x}", b.sigs);
        }
    }

    #[test]
    fn index_insert_find_remove() {
        let mut ix = HashIndex::default();
        // deliberately poor hash to exercise overflow chains
        let h = |id: u32| u64::from(id % 7) | (u64::from(id) << 48);
        for id in 0..1000u32 {
            ix.insert(h(id), id, h);
        }
        for id in 0..1000u32 {
            assert_eq!(ix.find(h(id), |x| x == id), Some(id));
        }
        for id in (0..1000u32).step_by(2) {
            assert!(ix.remove(h(id), id));
        }
        for id in 0..1000u32 {
            let f = ix.find(h(id), |x| x == id);
            assert_eq!(f.is_some(), id % 2 == 1);
        }
        assert_eq!(ix.len(), 500);
    }

    #[test]
    fn miss_terminates_when_every_bucket_overflows() {
        // two buckets; churn leaves both overflow counters non-zero
        let mut ix = HashIndex::default();
        let home0 = |id: u32| u64::from(id + 1) << 48;
        let home1 = |id: u32| 1 | (u64::from(id + 1) << 48);
        let h = |id: u32| if id <= 8 { home0(id) } else { home1(id) };
        for id in 0..14u32 {
            ix.insert(h(id), id, h);
        }
        assert_eq!(ix.buckets.len(), 2);
        for id in 0..3u32 {
            assert!(ix.remove(h(id), id));
        }
        for id in 14..17u32 {
            ix.insert(h(id), id, h);
        }
        assert_eq!(ix.buckets.len(), 2);
        assert!(ix.buckets.iter().all(|b| b.overflow > 0));
        assert_eq!(ix.find(home0(100), |_| false), None);
        assert!(!ix.remove(home1(100), 100));
        for id in 3..17u32 {
            assert_eq!(ix.find(h(id), |x| x == id), Some(id));
        }
    }
}
