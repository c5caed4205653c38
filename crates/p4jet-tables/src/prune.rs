//! Per-field length bounds that let a tuple-space lookup skip tuples
//! without hashing them.
//!
//! For one key field, every entry contributes the *leading-ones prefix* of
//! its mask on that field (its length `L`, counted from the most significant
//! bit of the byte-padded field, padding bits counting as ones since keys
//! always have them zero) and the entry's value under that prefix. A key
//! can only match an entry whose prefix it matches, so
//!
//! `bound(key) = max { L : some entry's prefix of length L matches key }`
//!
//! is at least the prefix length of every entry the key matches. A tuple's
//! own mask is a subset of its entries' masks, so its leading-ones length
//! on the field is at most theirs: a tuple whose length exceeds the bound on
//! any field holds no entry the key matches, and is skipped.
//!
//! `bound` is answered from two direct tables on the first 24 bits of the
//! field (an over-estimate is allowed, never an under-estimate):
//!
//! * level 1, indexed by the first `b1 = min(16, bits)` bits: the longest
//!   prefix of length `<= b1` covering the slot, with a flag when longer
//!   prefixes live inside the slot;
//! * level 2 (fields of more than 16 bits), one block of 256 per flagged
//!   level-1 slot, indexed by the next 8 bits: the longest prefix of length
//!   `b1 < L <= 24` covering it, or the field's full width when some prefix
//!   longer than 24 bits lies inside (the over-estimate); the bound is the
//!   larger of the two levels.
//!
//! Updates are incremental: a new distinct prefix of length `L <= b1` sets
//! its bit in the `2^(b1 - L)` level-1 slots it covers (and refreshes their
//! blocks), a prefix inside a slot bumps a count and rewrites at most 256
//! level-2 bytes; removing the last entry with a prefix undoes exactly that.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-xor hasher for the small integer keys of the update maps
/// (SipHash's cost showed in update profiles; the keys are not chosen by
/// packets, only by the control plane).
#[derive(Default, Clone, Copy)]
pub(crate) struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^ (h >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(23) ^ i).wrapping_mul(0xA076_1D64_78BD_642F);
    }
}

type Map<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;

/// Widest field with a working bound (its lengths fit a byte).
const MAX_BYTES: usize = 31;

/// Level-1 flag: "also look at level 2".
const LEVEL2: u8 = 0x80;
const NO_BLOCK: u32 = u32::MAX;

#[derive(Clone)]
pub(crate) struct Bound {
    /// byte offset and length of the field in the packed key
    off: usize,
    nbytes: usize,
    /// padded width in bits (`8 * nbytes`)
    full: u32,
    /// bits looked at: level 1 and level 2
    b1: u32,
    b2: u32,
    /// per level-1 slot: the bound from prefixes of length `<= b1` (low
    /// byte), `| LEVEL2` when the slot has a level-2 block, whose number is
    /// in the upper 24 bits (one load per slot for a lookup)
    hot1: Vec<u32>,
    /// per level-1 slot: bit `L` set when a prefix of length `L <= b1` covers it
    short: Vec<u32>,
    /// per level-1 slot: its level-2 block or `NO_BLOCK`
    blk: Vec<u32>,
    /// per block: 256 bounds from the prefixes longer than `b1`
    hot2: Vec<u8>,
    /// per block: entries with a prefix longer than `b1` inside it
    blk_live: Vec<u32>,
    free_blk: Vec<u32>,
    /// per level-2 slot (`slot << 8 | t`): bit `L - b1 - 1` set when a
    /// prefix of length `b1 < L <= b1 + b2` covers it
    mid: Map<u32, u32>,
    /// per level-2 slot: entries with a prefix longer than `b1 + b2` inside
    deep: Map<u32, u32>,
    /// entries per distinct (value of the first `b1 + b2` bits, length) with
    /// length `<= b1 + b2`
    count: Map<(u32, u8), u32>,
    /// whether level 1 has been allocated (on the first contribution)
    live: bool,
    /// when the bytes `top` reads lie in one word of the key as words:
    /// (word, right shift to the first byte, bytes)
    word: Option<(usize, u32, u32)>,
}

/// A [`Bound`]'s lookup data in the form a staged batch uses it: the key
/// word holding the field's first bytes, the level-1 and level-2 tables.
#[derive(Clone, Copy)]
pub(crate) struct BoundView<'a> {
    /// the key word holding the field's first bytes (`None`: they straddle
    /// two words, read from the bytes at `off`)
    word: Option<usize>,
    off: usize,
    nbytes: usize,
    sh: u32,
    mask: u64,
    drop: u32,
    b2: u32,
    hot1: &'a [u32],
    hot2: &'a [u8],
    /// row base of the field's candidate rows (the caller's)
    pub(crate) base: usize,
}

impl BoundView<'_> {
    /// [`Bound::top_of`] of a key given as `W` words and as bytes.
    #[inline(always)]
    pub(crate) fn top<const W: usize>(&self, k: &[u64; W], key: &[u8]) -> u32 {
        match self.word {
            Some(wi) => {
                let b = (k[wi] >> self.sh) & self.mask;
                (b.swap_bytes() >> self.drop) as u32
            }
            None => key[self.off..self.off + self.nbytes]
                .iter()
                .fold(0u32, |a, x| (a << 8) | u32::from(*x)),
        }
    }

    /// Prefetch the level-1 slot of `x` (a [`BoundView::top`]): the first
    /// step of a staged batch, whose keys are spread over the table.
    #[inline(always)]
    pub(crate) fn prefetch1(&self, x: u32) {
        crate::prefetch::prefetch_index(self.hot1, (x >> self.b2) as usize);
    }

    /// Prefetch the level-2 byte of `x` when its slot has a block (reads
    /// the level-1 slot: after [`BoundView::prefetch1`]).
    #[inline(always)]
    pub(crate) fn prefetch2(&self, x: u32) {
        if let Some(&h) = self.hot1.get((x >> self.b2) as usize)
            && h & u32::from(LEVEL2) != 0
        {
            crate::prefetch::prefetch_index(self.hot2, (h & !0xff) as usize | (x & 0xff) as usize);
        }
    }

    /// [`Bound::bound_of`].
    #[inline(always)]
    pub(crate) fn bound(&self, x: u32) -> u8 {
        let h = self.hot1[(x >> self.b2) as usize];
        if h & u32::from(LEVEL2) == 0 {
            return h as u8;
        }
        (h as u8 & !LEVEL2).max(self.hot2[(h & !0xff) as usize | (x & 0xff) as usize])
    }
}

/// Highest set bit's index (`0` for `0`: the empty set bounds nothing
/// longer than 0, and a 0-length prefix matches everything anyway).
#[inline(always)]
fn msb(x: u32) -> u8 {
    (31 - x.leading_zeros().min(31)) as u8
}

impl Bound {
    /// Fields of more than [`MAX_BYTES`] bytes get an inert bound (lengths
    /// are kept in a byte): every entry contributes length 0, no tuple is
    /// ever pruned on them.
    pub(crate) fn new(off: usize, nbytes: usize) -> Self {
        let nbytes = if nbytes > MAX_BYTES { 0 } else { nbytes };
        let full = 8 * nbytes as u32;
        let eb = 8 * nbytes.min(3) as u32;
        let b1 = eb.min(16);
        Bound {
            off,
            nbytes,
            full,
            b1,
            b2: eb - b1,
            hot1: Vec::new(),
            short: Vec::new(),
            blk: Vec::new(),
            hot2: Vec::new(),
            blk_live: Vec::new(),
            free_blk: Vec::new(),
            mid: Map::default(),
            deep: Map::default(),
            count: Map::default(),
            live: false,
            word: {
                let m = nbytes.min(3);
                (m > 0 && off % 8 + m <= 8).then_some((off / 8, 8 * (off % 8) as u32, m as u32))
            },
        }
    }

    pub(crate) fn full(&self) -> u32 {
        self.full
    }

    fn ensure(&mut self) {
        if !self.live {
            let n = 1usize << self.b1;
            self.hot1 = vec![0; n];
            self.short = vec![0; n];
            self.blk = vec![NO_BLOCK; n];
            self.live = true;
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.hot1.capacity() * 4
            + self.short.capacity() * 4
            + self.blk.capacity() * 4
            + self.hot2.capacity()
            + self.blk_live.capacity() * 4
            + (self.mid.capacity() + self.deep.capacity()) * 12
            + self.count.capacity() * 16
    }

    /// The first `b1 + b2` bits of the field in `key`, as a number.
    #[inline(always)]
    fn top(&self, key: &[u8]) -> u32 {
        let b = &key[self.off..self.off + self.nbytes.min(3)];
        b.iter().fold(0u32, |a, x| (a << 8) | u32::from(*x))
    }

    /// The first `b1 + b2` bits of the field in a key given as words (`k`, see
    /// `words.rs`; used when the field's first bytes lie in one word) and bytes:
    /// the input of [`Bound::bound_of`].
    #[inline(always)]
    pub(crate) fn top_of<K: crate::words::Words + ?Sized>(&self, k: &K, key: &[u8]) -> u32 {
        match self.word {
            Some((wi, sh, m)) => {
                let b = (k.at(wi) >> sh) & ((1u64 << (8 * m)) - 1);
                (b.swap_bytes() >> (64 - 8 * m)) as u32
            }
            None => self.top(key),
        }
    }

    /// [`Bound::bound`] with the key also given as words.
    #[inline(always)]
    pub(crate) fn bound_w<K: crate::words::Words + ?Sized>(&self, k: &K, key: &[u8]) -> u8 {
        self.bound_of(self.top_of(k, key))
    }

    /// What a staged batch reads of this bound, copied out once per batch.
    /// `base` is the caller's row base for this field. Like [`Bound::bound_of`]
    /// it needs the level-1 table allocated (a field some entry contributed
    /// to, which is every field a tuple has a non-zero length on).
    pub(crate) fn view(&self, base: usize) -> BoundView<'_> {
        let (word, sh, m) = match self.word {
            Some((w, sh, m)) => (Some(w), sh, m),
            None => (None, 0, self.nbytes.min(3) as u32),
        };
        BoundView {
            word,
            off: self.off,
            nbytes: self.nbytes.min(3),
            sh,
            mask: (1u64 << (8 * m)) - 1,
            drop: 64 - 8 * m,
            b2: self.b2,
            hot1: &self.hot1,
            hot2: &self.hot2,
            base,
        }
    }

    /// [`Bound::bound`] of a key whose [`Bound::top_of`] is `x`.
    #[inline(always)]
    pub(crate) fn bound_of(&self, x: u32) -> u8 {
        let s = (x >> self.b2) as usize;
        let h = self.hot1[s];
        if h & u32::from(LEVEL2) == 0 {
            return h as u8;
        }
        (h as u8 & !LEVEL2).max(self.hot2[(h & !0xff) as usize | (x & 0xff) as usize])
    }

    /// An upper bound of the longest entry prefix on this field that `key`
    /// matches (see the module docs).
    #[inline(always)]
    pub(crate) fn bound(&self, key: &[u8]) -> u8 {
        self.bound_of(self.top(key))
    }

    /// Leading-ones length of a field mask (`bytes`, padding bits given as
    /// ones by the caller) and the value's first `b1 + b2` bits under it.
    pub(crate) fn prefix_of(&self, value: &[u8], mask: &[u8]) -> (u32, u8) {
        if self.full == 0 {
            return (0, 0);
        }
        let mut len = 0u32;
        for &m in mask {
            len += m.leading_ones();
            if m != 0xff {
                break;
            }
        }
        let eb = self.b1 + self.b2;
        let top = value[..self.nbytes.min(3)]
            .iter()
            .fold(0u32, |a, x| (a << 8) | u32::from(*x));
        let keep = len.min(eb);
        let m = if keep == 0 {
            0
        } else {
            !0u32 << (eb - keep) & ((1u64 << eb) - 1) as u32
        };
        (top & m, len as u8)
    }

    fn refresh_hot1(&mut self, s: usize) {
        let b = self.blk[s];
        self.hot1[s] = if b != NO_BLOCK {
            (b << 8) | u32::from(msb(self.short[s]) | LEVEL2)
        } else {
            u32::from(msb(self.short[s]))
        };
    }

    fn refresh_hot2(&mut self, s: usize, t: usize) {
        let b = self.blk[s];
        if b == NO_BLOCK {
            return;
        }
        let k = ((s as u32) << 8) | t as u32;
        let mut v = 0;
        if let Some(m) = self.mid.get(&k)
            && *m != 0
        {
            v = v.max(msb(*m) + self.b1 as u8 + 1);
        }
        if self.deep.get(&k).is_some_and(|c| *c > 0) {
            v = self.full as u8;
        }
        self.hot2[((b as usize) << 8) | t] = v;
    }

    /// Slot `s` gains an entry whose prefix is longer than `b1`.
    fn block_add(&mut self, s: usize) {
        if self.blk[s] == NO_BLOCK {
            let b = match self.free_blk.pop() {
                Some(b) => b,
                None => {
                    self.blk_live.push(0);
                    self.hot2.resize(self.hot2.len() + 256, 0);
                    (self.blk_live.len() - 1) as u32
                }
            };
            self.blk[s] = b;
            self.blk_live[b as usize] = 0;
            // nothing lies inside a slot without a block: its bounds are 0
            let at = (b as usize) << 8;
            self.hot2[at..at + 256].fill(0);
            self.refresh_hot1(s);
        }
        self.blk_live[self.blk[s] as usize] += 1;
    }

    fn block_remove(&mut self, s: usize) {
        let b = self.blk[s];
        if b == NO_BLOCK {
            return;
        }
        self.blk_live[b as usize] -= 1;
        if self.blk_live[b as usize] == 0 {
            self.blk[s] = NO_BLOCK;
            self.free_blk.push(b);
            self.refresh_hot1(s);
        }
    }

    /// An entry with (first bits `top`, prefix length `len`) was added
    /// (`add`) or removed.
    pub(crate) fn update(&mut self, top: u32, len: u8, add: bool) {
        self.ensure();
        let eb = self.b1 + self.b2;
        let l = u32::from(len);
        let s = (top >> self.b2) as usize;
        let t = (top & 0xff) as usize;
        if l > eb {
            // deeper than the tables: counted per level-2 slot
            let k = ((s as u32) << 8) | t as u32;
            if add {
                *self.deep.entry(k).or_insert(0) += 1;
                self.block_add(s);
            } else {
                if let Some(c) = self.deep.get_mut(&k) {
                    *c -= 1;
                    if *c == 0 {
                        self.deep.remove(&k);
                    }
                }
                self.block_remove(s);
            }
            self.refresh_hot2(s, t);
            return;
        }
        let c = self.count.entry((top, len)).or_insert(0);
        let first = *c == 0 && add;
        if add {
            *c += 1;
        } else {
            *c = c.saturating_sub(1);
        }
        let last = !add && *c == 0;
        if last {
            self.count.remove(&(top, len));
        }
        if l <= self.b1 {
            if first || last {
                let n = 1usize << (self.b1 - l);
                for s in s..s + n {
                    if first {
                        self.short[s] |= 1 << l;
                    } else {
                        self.short[s] &= !(1 << l);
                    }
                    self.refresh_hot1(s);
                }
            }
            return;
        }
        // b1 < l <= b1 + b2: covers 2^(eb - l) level-2 slots of slot s
        if add {
            self.block_add(s);
        }
        if first || last {
            let n = 1usize << (eb - l);
            let bit = 1u32 << (l - self.b1 - 1);
            for t in t..t + n {
                let k = ((s as u32) << 8) | t as u32;
                if first {
                    *self.mid.entry(k).or_insert(0) |= bit;
                } else if let Some(m) = self.mid.get_mut(&k) {
                    *m &= !bit;
                    if *m == 0 {
                        self.mid.remove(&k);
                    }
                }
                self.refresh_hot2(s, t);
            }
        }
        if !add {
            self.block_remove(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Naive bound: the longest prefix among `ps` that `x` matches.
    fn naive(ps: &[(Vec<u8>, Vec<u8>)], key: &[u8]) -> u32 {
        ps.iter()
            .filter_map(|(v, m)| {
                let mut len = 0;
                for &b in m {
                    len += b.leading_ones();
                    if b != 0xff {
                        break;
                    }
                }
                // match under the leading-ones prefix
                let mut ok = true;
                for i in 0..key.len() {
                    let pm = if (i as u32 + 1) * 8 <= len {
                        0xff
                    } else if i as u32 * 8 >= len {
                        0
                    } else {
                        0xffu8 << (8 - (len % 8))
                    };
                    ok &= key[i] & pm == v[i] & pm;
                }
                ok.then_some(len)
            })
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn bound_is_never_below_the_naive_one_and_exact_within_24_bits() {
        let mut seed = 0x1234_5678_u64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for nbytes in [1usize, 2, 3, 4, 6] {
            let mut b = Bound::new(0, nbytes);
            let mut live: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for step in 0..3000 {
                if live.len() > 40 && rnd() % 3 == 0 {
                    let i = (rnd() as usize) % live.len();
                    let (v, m) = live.swap_remove(i);
                    let (top, len) = b.prefix_of(&v, &m);
                    b.update(top, len, false);
                } else {
                    // clustered values, prefix masks of random lengths
                    let len = (rnd() % (8 * nbytes as u64 + 1)) as u32;
                    let mut m = vec![0u8; nbytes];
                    crate::fill_prefix_mask(&mut m, len);
                    let base = rnd() % 4;
                    let v: Vec<u8> = (0..nbytes)
                        .map(|i| {
                            if i == 0 {
                                (base as u8).wrapping_mul(61)
                            } else {
                                rnd() as u8
                            }
                        })
                        .zip(&m)
                        .map(|(a, b)| a & b)
                        .collect();
                    let (top, l) = b.prefix_of(&v, &m);
                    b.update(top, l, true);
                    live.push((v, m));
                }
                if step % 50 == 0 {
                    for _ in 0..50 {
                        let mut key: Vec<u8> = (0..nbytes).map(|_| rnd() as u8).collect();
                        key[0] = ((rnd() % 4) as u8).wrapping_mul(61) ^ (rnd() % 2) as u8;
                        let want = naive(&live, &key);
                        let got = u32::from(b.bound(&key));
                        assert!(got >= want, "{nbytes} bytes {key:?}: {got} < {want}");
                        if want <= 24
                            && !live
                                .iter()
                                .any(|(_, m)| m.iter().map(|x| x.count_ones()).sum::<u32>() > 24)
                        {
                            assert_eq!(got, want, "{nbytes} bytes {key:?}");
                        }
                    }
                }
            }
        }
    }
}
