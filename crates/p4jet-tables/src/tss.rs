//! Tuple-space search for ternary and range tables, with tuple merging, a
//! shared Bloom filter and priority pruning.
//!
//! Every entry has an *index mask* over the packed key (its ternary masks,
//! LPM prefixes, all-ones for exact/valid fields, and for range fields the
//! mask described below) and a value (`key & mask` of the entries it matches).
//!
//! A tuple is a hash table keyed by `key & tuple_mask`. An entry may live in
//! any tuple whose mask is a subset of its index mask (TupleMerge, Daly &
//! Torng 2017): the hash narrows the candidates to a chain, and each candidate
//! is then verified against its own value/mask (and range bounds). Chains are
//! sorted by *rank* = (priority, entry index), which is bmv2's order (smallest
//! priority wins, ties go to the lowest handle), so the first candidate that
//! verifies is the tuple's answer.
//!
//! Placement (greedy, on insert): an entry joins the most specific compatible
//! tuple whose chain for it has fewer than `CHAIN_LIMIT` entries; if there is
//! none, a tuple is created from its mask *relaxed* (in every field wider than
//! a byte, the leading-ones prefix rounded down to a multiple of 8 bits, the
//! bits after it dropped), or from its exact mask when the relaxed tuple
//! exists (and is full for it). Relaxed tuples take entries of many nearby
//! masks, which keeps the number of tuples (the cost of a lookup) low.
//! Tuples whose entries all have exactly the tuple mask and no range check
//! skip verification.
//!
//! Before any hashing, the per-field length bounds of `prune.rs` say which
//! tuples can hold an entry the key matches (a row of tuple bits per field
//! and length, ANDed over the pruning fields); only those are looked at.
//!
//! Lookup: tuples are kept sorted by their best rank. A lookup takes them in
//! that order, 64 at a time: first it hashes the key under every candidate tuple's mask
//! (one folded multiply per 16 key bytes, independent across tuples, so the
//! CPU overlaps them) and tests a Bloom filter shared by all tuples (two bits
//! in one word; each live group of every tuple sets them under its tuple's
//! seed), then it probes only the tuples that passed, in order, and stops as
//! soon as the next tuple's best rank cannot beat the match found. Most tuples
//! hold no group for a given key, so most of the work is the filter test
//! (~1 ns per tuple). Deleted groups leave their bits (false positives only)
//! until the filter is rebuilt.
//!
//! Range fields: a range that is exactly one aligned power-of-two block (a
//! single value, the full range, any prefix-shaped range) becomes a plain mask.
//! Any other range is masked by the common leading bits of its bounds and its
//! entry is always verified against the bounds. This keeps exact semantics
//! without the blow-up of range-to-prefix expansion (a 16-bit range can need
//! 30 prefixes, two such fields 900 entries).

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use crate::hash::HashIndex;
use crate::prefetch::prefetch_index;
use crate::prune::{Bound, BoundView, MixHasher};
use crate::small::SmallBits;
use crate::words::{self, ByteWords, Words, meq, mhash, seed_of, to_words};

/// Longest chain an entry may join in a merged (less specific) tuple.
const CHAIN_LIMIT: usize = 16;
/// Tables with at most this many entries are also kept as one list sorted
/// by rank and looked up by bit vectors per key lane (`small.rs`) or a
/// linear scan (both cheaper than hashing).
pub(crate) const SMALL: usize = 8;
/// Small tables keep flat scan records when they have at most this many
/// range fields, all of at most 8 bytes.
const SMALL_MAX_RANGES: usize = 4;
/// Tuples filtered per pass of a lookup.
const CHUNK: usize = 64;
/// Most keys per stage of a staged batch.
const STAGE_MAX: usize = 16;
/// The filter is grown (and rebuilt) when it has fewer bits per live group.
const FILTER_MIN_BITS: usize = 24;
/// Bits per live group right after a rebuild (rounded up to a power of two).
const FILTER_BUILD_BITS: usize = 48;

/// Rank of an entry: `(priority, index)` packed so that `u64` order is
/// bmv2's order. The low 32 bits are the entry index.
#[inline(always)]
fn rank(prio: i32, idx: u32) -> u64 {
    (u64::from((prio as u32) ^ 0x8000_0000) << 32) | u64::from(idx)
}

/// Larger than every rank (entry indexes are below 2^24).
const NO_RANK: u64 = u64::MAX;
/// Group record flag: the head entry needs a range check.
const HEAD_CHECK: u64 = 1;
/// Group record flag: the chain has more than one entry.
const MORE: u64 = 2;

#[derive(Clone)]
struct Tuple {
    /// tuple mask, as words
    mask: Box<[u64]>,
    seed: u64,
    /// group hash -> group id
    map: HashIndex,
    /// per group, stride `3w + 2` words: the masked key (`w`), the head's
    /// rank, flags (`HEAD_CHECK`, `MORE`), the head's value and mask (`w`
    /// each): a probe reads one record and usually nothing else
    grec: Vec<u64>,
    /// ranks of the group's entries, ascending (the head is `chains[g][0]`)
    chains: Vec<Vec<u64>>,
    free_groups: Vec<u32>,
    /// ranks of all entries
    members: BTreeSet<u64>,
    /// members that need verification (mask differs from the tuple's, or range check)
    impure: u32,
    /// number of one bits in `mask`
    bits: u32,
    /// per key field: leading-ones length of the mask (see `prune.rs`)
    plen: Box<[u8]>,
}

impl Tuple {
    fn new(mask: Vec<u64>, seed: u64) -> Self {
        let bits = mask.iter().map(|b| b.count_ones()).sum();
        Tuple {
            plen: Box::new([]),
            mask: mask.into_boxed_slice(),
            seed,
            map: HashIndex::default(),
            grec: Vec::new(),
            chains: Vec::new(),
            free_groups: Vec::new(),
            members: BTreeSet::new(),
            impure: 0,
            bits,
        }
    }

    fn best(&self) -> u64 {
        self.members.first().copied().unwrap_or(NO_RANK)
    }

    #[inline(always)]
    fn rec(&self, g: u32) -> &[u64] {
        let s = 3 * self.mask.len() + 2;
        &self.grec[g as usize * s..(g as usize + 1) * s]
    }

    #[inline(always)]
    fn gkey(&self, g: u32) -> &[u64] {
        &self.rec(g)[..self.mask.len()]
    }

    /// Refresh the head fields of group `g`'s record from its chain.
    fn set_head(&mut self, g: u32, erec: &[u64]) {
        let w = self.mask.len();
        let s = g as usize * (3 * w + 2);
        let c = &self.chains[g as usize];
        let Some(&r0) = c.first() else {
            return;
        };
        let e = (r0 as u32) as usize * (2 * w + 1);
        let more = if c.len() > 1 { MORE } else { 0 };
        let rec = &mut self.grec[s..s + 3 * w + 2];
        rec[w] = r0;
        rec[w + 1] = if erec[e + 2 * w] != 0 { HEAD_CHECK } else { 0 } | more;
        rec[w + 2..3 * w + 2].copy_from_slice(&erec[e..e + 2 * w]);
    }

    #[inline(always)]
    fn find_group<K: Words + ?Sized>(&self, k: &K, h: u64) -> Option<u32> {
        self.map.find(h, |g| meq(self.gkey(g), k, &self.mask))
    }

    fn chain_len(&self, k: &[u64]) -> usize {
        let h = mhash(k, &self.mask, self.seed);
        self.find_group(k, h)
            .map_or(0, |g| self.chains[g as usize].len())
    }

    fn memory_bytes(&self) -> usize {
        self.mask.len() * 8
            + self.map.memory_bytes()
            + self.grec.capacity() * 8
            + self.chains.capacity() * 24
            + self.chains.iter().map(|c| c.capacity() * 8).sum::<usize>()
            + self.free_groups.capacity() * 4
            + self.members.len() * 16
    }
}

/// What a lookup reads about a tuple, in visiting order.
#[derive(Clone, Copy)]
struct Visit {
    best: u64,
    seed: u64,
    tuple: u32,
    pure: bool,
}

/// Bloom filter over (tuple, group key) shared by all tuples: two bits in
/// one 64-bit word per group. Never has false negatives for live groups.
#[derive(Clone)]
struct Filter {
    words: Vec<u64>,
    /// groups deleted since the last rebuild (their bits are still set)
    stale: usize,
}

impl Filter {
    fn with_bits(bits: usize) -> Self {
        Filter {
            words: vec![0; (bits / 64).next_power_of_two().max(1)],
            stale: 0,
        }
    }

    #[inline(always)]
    fn pos(&self, h: u64) -> (usize, u64) {
        let i = (h >> 44) as usize & (self.words.len() - 1);
        let b = (1u64 << ((h >> 32) & 63)) | (1u64 << ((h >> 38) & 63));
        (i, b)
    }

    #[inline(always)]
    fn prefetch(&self, h: u64) {
        prefetch_index(&self.words, self.pos(h).0);
    }

    #[inline(always)]
    fn test(&self, h: u64) -> bool {
        let (i, b) = self.pos(h);
        self.words[i] & b == b
    }

    fn set(&mut self, h: u64) {
        let (i, b) = self.pos(h);
        self.words[i] |= b;
    }

    fn bits(&self) -> usize {
        self.words.len() * 64
    }
}

/// Index representation of one ternary/range entry.
pub(crate) struct TssKey {
    /// `value & mask` over the packed key
    pub(crate) value: Vec<u8>,
    pub(crate) mask: Vec<u8>,
    /// whether some range field could not be expressed as a mask
    pub(crate) check: bool,
    /// low/high bytes of every range field, in key order
    pub(crate) ranges: Vec<u8>,
}

/// Big-endian bytes (at most 8) as a number.
#[inline(always)]
fn be_num(b: &[u8]) -> u64 {
    b.iter().fold(0, |a, x| (a << 8) | u64::from(*x))
}

/// Bytes `off..off + n` of a packed key held as words.
fn field_bytes(words: &[u64], off: usize, n: usize) -> Vec<u8> {
    (off..off + n)
        .map(|i| (words[i / 8] >> (8 * (i % 8))) as u8)
        .collect()
}

/// Hash of an entry's index key (duplicates have equal ones).
fn dup_hash(k: &TssKey) -> u64 {
    let mut h = MixHasher::default();
    h.write(&k.value);
    h.write(&k.mask);
    h.write(&k.ranges);
    h.finish()
}

/// At most this many fields prune a lookup (more would cost more than they save).
const MAX_PRUNE: usize = 3;

/// The number of one bits of `x`, counted up to `cap` (no `popcnt` in the
/// baseline x86-64 target; candidate sets are small).
#[inline(always)]
fn bits_upto(mut x: u64, cap: usize) -> usize {
    let mut c = 0;
    while x != 0 && c < cap {
        x &= x - 1;
        c += 1;
    }
    c
}

/// `stored == k & m` for `W` words.
#[inline(always)]
fn meq_w<const W: usize>(stored: &[u64; W], k: &[u64; W], m: &[u64; W]) -> bool {
    let mut d = 0u64;
    for i in 0..W {
        d |= stored[i] ^ (k[i] & m[i]);
    }
    d == 0
}

fn subset(a: &[u64], b: &[u64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x & !y == 0)
}

#[derive(Clone)]
pub(crate) struct Tss {
    kb: usize,
    /// words per key
    w: usize,
    /// (offset, nbytes, width) of every field
    fields: Vec<(usize, usize, u32)>,
    /// (offset, nbytes) of every range field
    range_fields: Vec<(usize, usize)>,
    rstride: usize,
    tuples: Vec<Tuple>,
    free_tuples: Vec<u32>,
    /// live tuples in visiting order: by (best rank, tuple id)
    visit: Vec<Visit>,
    /// their masks, `w` words each
    vmask: Vec<u64>,
    filter: Filter,
    /// live groups over all tuples
    groups: usize,
    /// per entry index
    rank: Vec<u64>,
    ent_tuple: Vec<u32>,
    ent_group: Vec<u32>,
    /// per entry index: value words, mask words, range-check flag (stride 2w+1)
    erec: Vec<u64>,
    /// per entry index: low/high bytes of every range field (stride `rstride`)
    ranges: Vec<u8>,
    /// whether every range field has at most 8 bytes: then `rnum` holds the
    /// bounds as numbers (stride 2 per range field) and checks compare integers
    narrow: bool,
    rnum: Vec<u64>,
    /// live entries
    live: usize,
    /// while `live <= SMALL`: every live entry's rank, ascending
    small: Vec<u64>,
    /// `small` as flat scan records (when `narrow` and at most
    /// `SMALL_MAX_RANGES` range fields, else empty), stride `2w + 1 + 2r`:
    /// value words, mask words, entry index, then per range field its bounds
    /// as numbers (`0..=u64::MAX` for an entry without range check)
    small_rec: Vec<u64>,
    /// `small_rec` as bit vectors per key lane (see `small.rs`), used when
    /// `sbits_on`; empty when the table is not small
    sbits: SmallBits,
    sbits_on: bool,
    /// per range field, when none straddles two key words: (word, right
    /// shift to its first byte, mask of its bytes); `None` otherwise
    rword: Option<Vec<(usize, u32, u64)>>,
    /// per key field: the length bound of keys (see `prune.rs`)
    bounds: Vec<Bound>,
    /// fields on which some tuple has a non-zero length (the others prune nothing)
    active: Vec<usize>,
    /// per field `f` and length `l <= full(f)`, `cand_words` words starting
    /// at `cand_base[f] + l * cand_words`: bit `j` of word `c` set when tuple
    /// `visit[64c + j]` has length `<= l` on `f`
    cand: Vec<u64>,
    cand_base: Vec<usize>,
    cand_words: usize,
    /// live tuples, most specific (most mask bits) first: placement order
    by_bits: Vec<u32>,
    /// entries by the hash of their index key (value, mask, range bounds):
    /// the head entry of each list, and per entry the next one (`u32::MAX`
    /// ends a list); finds duplicates without probing every tuple
    dup_head: HashMap<u64, u32, BuildHasherDefault<MixHasher>>,
    dup_next: Vec<u32>,
    /// per entry: its `dup_hash`
    dup_h: Vec<u64>,
}

impl Tss {
    pub(crate) fn new(
        kb: usize,
        fields: Vec<(usize, usize, u32)>,
        range_fields: Vec<(usize, usize)>,
    ) -> Self {
        let rstride = range_fields.iter().map(|(_, n)| 2 * n).sum();
        let narrow = range_fields.iter().all(|(_, n)| *n <= 8);
        let rword = range_fields
            .iter()
            .map(|&(off, n)| {
                (n <= 8 && off % 8 + n <= 8).then(|| {
                    let mask = if n == 8 {
                        u64::MAX
                    } else {
                        (1u64 << (8 * n)) - 1
                    };
                    (off / 8, 8 * (off % 8) as u32, mask)
                })
            })
            .collect();
        let bounds = fields
            .iter()
            .map(|&(off, n, _)| Bound::new(off, n))
            .collect();
        let mut t = Tss {
            kb,
            w: words::nwords(kb),
            fields,
            range_fields,
            rstride,
            tuples: Vec::new(),
            free_tuples: Vec::new(),
            visit: Vec::new(),
            vmask: Vec::new(),
            filter: Filter::with_bits(64),
            groups: 0,
            rank: Vec::new(),
            ent_tuple: Vec::new(),
            ent_group: Vec::new(),
            erec: Vec::new(),
            narrow,
            ranges: Vec::new(),
            rnum: Vec::new(),
            live: 0,
            small: Vec::new(),
            small_rec: Vec::new(),
            sbits: SmallBits::default(),
            sbits_on: false,
            rword,
            bounds: Vec::new(),
            active: Vec::new(),
            cand: Vec::new(),
            cand_base: Vec::new(),
            cand_words: 0,
            by_bits: Vec::new(),
            dup_head: HashMap::default(),
            dup_next: Vec::new(),
            dup_h: Vec::new(),
        };
        t.bounds = bounds;
        t
    }

    pub(crate) fn clear(&mut self) {
        *self = Tss::new(
            self.kb,
            std::mem::take(&mut self.fields),
            std::mem::take(&mut self.range_fields),
        );
    }

    pub(crate) fn num_tuples(&self) -> usize {
        self.visit.len()
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.tuples.iter().map(Tuple::memory_bytes).sum::<usize>()
            + self.visit.capacity() * std::mem::size_of::<Visit>()
            + self.vmask.capacity() * 8
            + self.filter.words.capacity() * 8
            + self.rank.capacity() * 16
            + self.erec.capacity() * 8
            + self.ranges.capacity()
            + self.rnum.capacity() * 8
            + self.small_rec.capacity() * 8
            + self.sbits.memory_bytes()
            + self.cand.capacity() * 8
            + self.dup_head.capacity() * 16
            + self.dup_next.capacity() * 4
            + self.dup_h.capacity() * 8
            + self.bounds.iter().map(Bound::memory_bytes).sum::<usize>()
    }

    /// Per field: (first bits, leading-ones length) of `value` under `mask`
    /// (see `prune.rs`; padding bits above the field's width count as ones).
    fn field_prefixes(&self, vw: &[u64], mw: &[u64]) -> Vec<(u32, u8)> {
        self.fields
            .iter()
            .zip(&self.bounds)
            .map(|(&(off, n, width), b)| {
                let v = field_bytes(vw, off, n);
                let mut m = field_bytes(mw, off, n);
                let pad = (8 * n as u32).saturating_sub(width).min(7);
                if let Some(m0) = m.first_mut() {
                    *m0 |= !(0xffu8 >> pad);
                }
                b.prefix_of(&v, &m)
            })
            .collect()
    }

    /// Add (or remove) entry `e`'s contributions to the field bounds.
    fn bound_entry(&mut self, e: usize, add: bool) {
        let w = self.w;
        let rs = 2 * w + 1;
        let (vw, mw) = (
            &self.erec[e * rs..e * rs + w],
            &self.erec[e * rs + w..e * rs + 2 * w],
        );
        let ps = self.field_prefixes(vw, mw);
        for (b, (top, len)) in self.bounds.iter_mut().zip(ps) {
            b.update(top, len, add);
        }
    }

    /// Rebuild the candidate rows from the tuples' lengths, in visiting order.
    fn rebuild_cand(&mut self) {
        let cw = self.visit.len().div_ceil(64).max(1);
        self.cand_words = cw;
        self.cand.clear();
        self.cand_base.clear();
        self.active.clear();
        for (f, b) in self.bounds.iter().enumerate() {
            let rows = b.full() as usize + 1;
            let base = self.cand.len();
            self.cand_base.push(base);
            self.cand.resize(base + rows * cw, 0);
            let mut any = false;
            for (j, v) in self.visit.iter().enumerate() {
                let p = usize::from(self.tuples[v.tuple as usize].plen[f]).min(rows - 1);
                any |= p > 0;
                self.cand[base + p * cw + j / 64] |= 1 << (j % 64);
            }
            for l in 1..rows {
                for c in 0..cw {
                    self.cand[base + l * cw + c] |= self.cand[base + (l - 1) * cw + c];
                }
            }
            if any {
                self.active.push(f);
            }
        }
        // the fields whose tuples' lengths spread the most prune the most;
        // each costs a table lookup per key
        let spread = |f: usize| {
            let mut seen = [false; 256];
            let mut n = 0;
            for v in &self.visit {
                let p = usize::from(self.tuples[v.tuple as usize].plen[f]);
                n += usize::from(!seen[p]);
                seen[p] = true;
            }
            n
        };
        let mut by: Vec<(usize, usize)> = self.active.iter().map(|&f| (spread(f), f)).collect();
        by.sort_by(|a, b| b.cmp(a));
        self.active = by.into_iter().take(MAX_PRUNE).map(|x| x.1).collect();
        self.active.sort_unstable();
    }

    fn order_remove(&mut self, t: u32) -> Option<usize> {
        let pos = self.visit.iter().position(|v| v.tuple == t)?;
        self.visit.remove(pos);
        self.vmask.drain(pos * self.w..(pos + 1) * self.w);
        Some(pos)
    }

    fn order_insert(&mut self, t: u32) -> usize {
        let tu = &self.tuples[t as usize];
        let v = Visit {
            best: tu.best(),
            seed: tu.seed,
            tuple: t,
            pure: tu.impure == 0,
        };
        let pos = self
            .visit
            .partition_point(|x| (x.best, x.tuple) < (v.best, v.tuple));
        self.visit.insert(pos, v);
        let at = pos * self.w;
        self.vmask.splice(at..at, tu.mask.iter().copied());
        pos
    }

    #[inline(always)]
    fn ranges_ok(&self, e: u32, key: &[u8]) -> bool {
        if self.narrow {
            let nr = 2 * self.range_fields.len();
            let b = &self.rnum[e as usize * nr..(e as usize + 1) * nr];
            for (j, &(off, n)) in self.range_fields.iter().enumerate() {
                let x = be_num(&key[off..off + n]);
                if x < b[2 * j] || x > b[2 * j + 1] {
                    return false;
                }
            }
            return true;
        }
        let mut r = e as usize * self.rstride;
        for &(off, n) in &self.range_fields {
            let k = &key[off..off + n];
            let lo = &self.ranges[r..r + n];
            let hi = &self.ranges[r + n..r + 2 * n];
            if k < lo || k > hi {
                return false;
            }
            r += 2 * n;
        }
        true
    }

    #[inline(always)]
    fn verify<K: Words + ?Sized>(&self, e: u32, k: &K, key: &[u8]) -> bool {
        let w = self.w;
        let s = e as usize * (2 * w + 1);
        let rec = &self.erec[s..s + 2 * w + 1];
        meq(&rec[..w], k, &rec[w..2 * w]) && (rec[2 * w] == 0 || self.ranges_ok(e, key))
    }

    fn ent_mask(&self, e: u32) -> &[u64] {
        let w = self.w;
        let s = e as usize * (2 * w + 1);
        &self.erec[s + w..s + 2 * w]
    }

    fn is_pure(&self, e: u32, t: u32) -> bool {
        let w = self.w;
        let s = e as usize * (2 * w + 1);
        self.erec[s + 2 * w] == 0 && *self.tuples[t as usize].mask == *self.ent_mask(e)
    }

    /// Live tuples whose mask is a subset of `mask`, most specific first.
    fn compatible<'a>(&'a self, mask: &'a [u64]) -> impl Iterator<Item = u32> + 'a {
        self.by_bits
            .iter()
            .copied()
            .filter(move |t| subset(&self.tuples[*t as usize].mask, mask))
    }

    /// `mask` (bytes) with, in every field wider than 8 bits, the leading-ones
    /// prefix rounded down to a multiple of 8 bits and the bits after it
    /// dropped; fields of at most 8 bits keep their leading-ones prefix.
    fn relax(&self, mask: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; mask.len()];
        for &(off, n, w) in &self.fields {
            let pad = (8 * n as u32).saturating_sub(w);
            let bit = |i: u32| mask[off + (i / 8) as usize] & (0x80 >> (i % 8)) != 0;
            let mut l = 0;
            while pad + l < 8 * n as u32 && bit(pad + l) {
                l += 1;
            }
            let keep = if w > 8 { l / 8 * 8 } else { l };
            for i in pad..pad + keep {
                out[off + (i / 8) as usize] |= 0x80 >> (i % 8);
            }
        }
        out
    }

    fn find_tuple(&self, mask: &[u64]) -> Option<u32> {
        self.visit
            .iter()
            .map(|v| v.tuple)
            .find(|t| *self.tuples[*t as usize].mask == *mask)
    }

    /// Find an entry with the same index key for which `same(idx)` holds.
    pub(crate) fn find(&self, k: &TssKey, same: impl Fn(u32) -> bool) -> Option<u32> {
        let mut e = *self.dup_head.get(&dup_hash(k))?;
        while e != u32::MAX {
            if same(e) {
                return Some(e);
            }
            e = self.dup_next[e as usize];
        }
        None
    }

    /// Take entry `e` out of its duplicate list.
    fn dup_unlink(&mut self, e: u32) {
        let dh = self.dup_h[e as usize];
        let next = self.dup_next[e as usize];
        self.dup_next[e as usize] = u32::MAX;
        let Some(head) = self.dup_head.get_mut(&dh) else {
            return;
        };
        if *head == e {
            if next == u32::MAX {
                self.dup_head.remove(&dh);
            } else {
                *head = next;
            }
            return;
        }
        let mut p = *head;
        while p != u32::MAX {
            let n = self.dup_next[p as usize];
            if n == e {
                self.dup_next[p as usize] = next;
                return;
            }
            p = n;
        }
    }

    fn new_tuple(&mut self, mask: Vec<u64>) -> u32 {
        let t = match self.free_tuples.pop() {
            Some(t) => t,
            None => {
                self.tuples.push(Tuple::new(Vec::new(), 0));
                (self.tuples.len() - 1) as u32
            }
        };
        let zero = vec![0u64; mask.len()];
        let plen: Box<[u8]> = self
            .field_prefixes(&zero, &mask)
            .into_iter()
            .map(|p| p.1)
            .collect();
        self.tuples[t as usize] = Tuple::new(mask, seed_of(u64::from(t)));
        self.tuples[t as usize].plen = plen;
        let key = |x: u32| (std::cmp::Reverse(self.tuples[x as usize].bits), x);
        let pos = self.by_bits.partition_point(|&x| key(x) < key(t));
        self.by_bits.insert(pos, t);
        t
    }

    /// Tuple for a new entry (see the module docs).
    fn choose_tuple(&mut self, k: &TssKey, vw: &[u64], mw: &[u64]) -> u32 {
        for t in self.compatible(mw) {
            if self.tuples[t as usize].chain_len(vw) < CHAIN_LIMIT {
                return t;
            }
        }
        let relaxed = to_words(&self.relax(&k.mask), self.w);
        let m = if self.find_tuple(&relaxed).is_some() {
            mw.to_vec()
        } else {
            relaxed
        };
        match self.find_tuple(&m) {
            Some(t) => t,
            None => self.new_tuple(m),
        }
    }

    fn rebuild_filter(&mut self) {
        let mut f = Filter::with_bits((self.groups + 1) * FILTER_BUILD_BITS);
        for tu in &self.tuples {
            for (g, c) in tu.chains.iter().enumerate() {
                if !c.is_empty() {
                    f.set(mhash(tu.gkey(g as u32), &tu.mask, tu.seed));
                }
            }
        }
        self.filter = f;
    }

    pub(crate) fn insert(&mut self, idx: u32, k: TssKey, prio: i32) {
        let i = idx as usize;
        let w = self.w;
        let rs = 2 * w + 1;
        if self.rank.len() <= i {
            self.rank.resize(i + 1, NO_RANK);
            self.ent_tuple.resize(i + 1, 0);
            self.ent_group.resize(i + 1, 0);
            self.dup_next.resize(i + 1, u32::MAX);
            self.dup_h.resize(i + 1, 0);
            self.erec.resize((i + 1) * rs, 0);
            self.ranges.resize((i + 1) * self.rstride, 0);
            if self.narrow {
                self.rnum.resize((i + 1) * 2 * self.range_fields.len(), 0);
            }
        }
        let r = rank(prio, idx);
        let (vw, mw) = (to_words(&k.value, w), to_words(&k.mask, w));
        self.rank[i] = r;
        self.erec[i * rs..i * rs + w].copy_from_slice(&vw);
        self.erec[i * rs + w..i * rs + 2 * w].copy_from_slice(&mw);
        self.erec[i * rs + 2 * w] = u64::from(k.check);
        self.ranges[i * self.rstride..(i + 1) * self.rstride].copy_from_slice(&k.ranges);
        if self.narrow {
            let nr = 2 * self.range_fields.len();
            let mut off = 0;
            for j in 0..self.range_fields.len() {
                let n = self.range_fields[j].1;
                self.rnum[i * nr + 2 * j] = be_num(&k.ranges[off..off + n]);
                self.rnum[i * nr + 2 * j + 1] = be_num(&k.ranges[off + n..off + 2 * n]);
                off += 2 * n;
            }
        }

        let dh = dup_hash(&k);
        self.dup_h[i] = dh;
        self.dup_next[i] = self.dup_head.insert(dh, idx).unwrap_or(u32::MAX);
        let t = self.choose_tuple(&k, &vw, &mw);
        let was = self.order_remove(t);
        let pure = self.is_pure(idx, t);
        let tu = &mut self.tuples[t as usize];
        let h = mhash(&vw[..], &tu.mask, tu.seed);
        let (g, new_group) = match tu.find_group(&vw[..], h) {
            Some(g) => (g, false),
            None => {
                let gs = 3 * w + 2;
                let g = if let Some(g) = tu.free_groups.pop() {
                    g
                } else {
                    tu.chains.push(Vec::new());
                    tu.grec.resize(tu.grec.len() + gs, 0);
                    (tu.chains.len() - 1) as u32
                };
                let s = g as usize * gs;
                for ((d, v), m) in tu.grec[s..s + w].iter_mut().zip(&vw).zip(tu.mask.iter()) {
                    *d = v & m;
                }
                let (grec, mask, seed, map) = (&tu.grec, &tu.mask, tu.seed, &mut tu.map);
                map.insert(h, g, |x| {
                    let s = x as usize * gs;
                    mhash(&grec[s..s + w], mask, seed)
                });
                (g, true)
            }
        };
        let chain = &mut tu.chains[g as usize];
        let pos = chain.partition_point(|x| *x < r);
        chain.insert(pos, r);
        tu.set_head(g, &self.erec);
        tu.members.insert(r);
        if !pure {
            tu.impure += 1;
        }
        self.ent_tuple[i] = t;
        self.ent_group[i] = g;
        // the candidate rows follow the visiting order: rebuilt when it changed
        if was != Some(self.order_insert(t)) {
            self.rebuild_cand();
        }
        self.bound_entry(i, true);
        self.live += 1;
        if self.live <= SMALL {
            let pos = self.small.partition_point(|x| *x < r);
            self.small.insert(pos, r);
        } else {
            self.small = Vec::new();
        }
        self.rebuild_small_rec();
        if new_group {
            self.groups += 1;
            if self.groups * FILTER_MIN_BITS > self.filter.bits() {
                self.rebuild_filter();
            } else {
                self.filter.set(h);
            }
        }
    }

    pub(crate) fn remove(&mut self, idx: u32) {
        let i = idx as usize;
        let (t, g, r) = (self.ent_tuple[i], self.ent_group[i], self.rank[i]);
        let pure = self.is_pure(idx, t);
        self.dup_unlink(idx);
        let was = self.order_remove(t);
        let tu = &mut self.tuples[t as usize];
        tu.members.remove(&r);
        if !pure {
            tu.impure -= 1;
        }
        let chain = &mut tu.chains[g as usize];
        if let Some(pos) = chain.iter().position(|x| *x == r) {
            chain.remove(pos);
        }
        let empty = chain.is_empty();
        tu.set_head(g, &self.erec);
        let mut group_gone = false;
        if empty {
            let h = mhash(tu.gkey(g), &tu.mask, tu.seed);
            tu.map.remove(h, g);
            tu.chains[g as usize] = Vec::new();
            tu.free_groups.push(g);
            group_gone = true;
        }
        let now = if tu.members.is_empty() {
            self.tuples[t as usize] = Tuple::new(Vec::new(), 0);
            self.free_tuples.push(t);
            self.by_bits.retain(|x| *x != t);
            None
        } else {
            Some(self.order_insert(t))
        };
        if was != now {
            self.rebuild_cand();
        }
        self.bound_entry(i, false);
        self.rank[i] = NO_RANK;
        self.live -= 1;
        if self.live == SMALL {
            let mut v: Vec<u64> = self
                .tuples
                .iter()
                .flat_map(|t| t.members.iter().copied())
                .collect();
            v.sort_unstable();
            self.small = v;
        } else if let Some(pos) = self.small.iter().position(|x| *x == r) {
            self.small.remove(pos);
        }
        self.rebuild_small_rec();
        if group_gone {
            self.groups -= 1;
            self.filter.stale += 1;
            if self.filter.stale > self.groups.max(64) {
                self.rebuild_filter();
            }
        }
    }

    /// Whether small tables are scanned through `small_rec`.
    fn small_flat(&self) -> bool {
        self.narrow && self.range_fields.len() <= SMALL_MAX_RANGES
    }

    /// Rebuild `small_rec` from `small`.
    fn rebuild_small_rec(&mut self) {
        self.small_rec.clear();
        self.sbits_on = false;
        if self.live > SMALL || !self.small_flat() {
            self.sbits = SmallBits::default();
            return;
        }
        let w = self.w;
        let nr = self.range_fields.len();
        for &r in &self.small {
            let e = r as u32 as usize;
            let rec = &self.erec[e * (2 * w + 1)..(e + 1) * (2 * w + 1)];
            self.small_rec.extend_from_slice(&rec[..2 * w]);
            self.small_rec.push(e as u64);
            let check = rec[2 * w] != 0;
            for j in 0..nr {
                if check {
                    self.small_rec.push(self.rnum[e * 2 * nr + 2 * j]);
                    self.small_rec.push(self.rnum[e * 2 * nr + 2 * j + 1]);
                } else {
                    self.small_rec.extend_from_slice(&[0, u64::MAX]);
                }
            }
        }
        self.sbits_on = self
            .sbits
            .build(self.kb, w, &self.range_fields, &self.small_rec);
        if !self.sbits_on {
            self.sbits = SmallBits::default();
        }
    }

    /// Linear scan of `small_rec` (first match in rank order).
    #[inline(always)]
    fn small_scan<K: Words + ?Sized>(&self, k: &K, key: &[u8]) -> Option<u32> {
        let w = self.w;
        let nr = self.range_fields.len();
        let mut x = [0u64; SMALL_MAX_RANGES];
        for (xj, &(off, n)) in x.iter_mut().zip(&self.range_fields) {
            *xj = be_num(&key[off..off + n]);
        }
        let x = &x[..nr];
        for rec in self.small_rec.chunks_exact(2 * w + 1 + 2 * nr) {
            if meq(&rec[..w], k, &rec[w..2 * w])
                && x.iter()
                    .zip(rec[2 * w + 1..].chunks_exact(2))
                    .all(|(x, b)| *x >= b[0] && *x <= b[1])
            {
                return Some(rec[2 * w] as u32);
            }
        }
        None
    }

    /// Entry index of the best entry matching `key` (`key.len() == kb`).
    #[inline]
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<u32> {
        match self.w {
            1 => self.lookup_k(&words::fixed::<1>(key), key),
            2 => self.lookup_k(&words::fixed::<2>(key), key),
            3 => self.lookup_k(&words::fixed::<3>(key), key),
            4 => self.lookup_k(&words::fixed::<4>(key), key),
            n => self.lookup_k(&ByteWords { bytes: key, n }, key),
        }
    }

    /// `lookup_each` of a small table with flat records: `W` key words,
    /// `R` range fields.
    #[inline(never)]
    fn small_each<const W: usize, const R: usize>(
        &self,
        keys: &[u8],
        n: usize,
        emit: &mut impl FnMut(usize, Option<u32>),
    ) {
        let kb = self.kb;
        let mut rf = [(0usize, 0usize); R];
        for (d, s) in rf.iter_mut().zip(&self.range_fields) {
            *d = *s;
        }
        let mut rw = [(0usize, 0u32, 0u64); R];
        if let Some(v) = &self.rword {
            for (d, s) in rw.iter_mut().zip(v) {
                *d = *s;
            }
        }
        let by_words = self.rword.is_some();
        for i in 0..n {
            let k = words::fixed_in::<W>(keys, i * kb, kb);
            let mut x = [0u64; R];
            for j in 0..R {
                x[j] = if by_words {
                    let (wi, sh, m) = rw[j];
                    // the field's bytes, big-endian, as a number
                    let b = (k[wi] >> sh) & m;
                    b.swap_bytes() >> (64 - m.count_ones())
                } else {
                    let (off, nb) = rf[j];
                    be_num(&keys[i * kb + off..i * kb + off + nb])
                };
            }
            let mut found = None;
            for rec in self.small_rec.chunks_exact(2 * W + 1 + 2 * R) {
                let mut d = 0u64;
                for w in 0..W {
                    d |= rec[w] ^ (k[w] & rec[W + w]);
                }
                let mut ok = d == 0;
                for j in 0..R {
                    ok &= x[j] >= rec[2 * W + 1 + 2 * j] && x[j] <= rec[2 * W + 2 + 2 * j];
                }
                if ok {
                    found = Some(rec[2 * W] as u32);
                    break;
                }
            }
            emit(i, found);
        }
    }

    /// `emit(i, lookup(key i))` for the `n` keys packed back to back in
    /// `keys` (one dispatch on the key width for the whole batch).
    #[inline]
    pub(crate) fn lookup_each(
        &self,
        keys: &[u8],
        n: usize,
        d: usize,
        mut emit: impl FnMut(usize, Option<u32>),
    ) {
        let kb = self.kb;
        if self.live > SMALL && !self.visit.is_empty() && self.visit.len() <= u16::MAX as usize {
            macro_rules! staged {
                ($w:literal) => {
                    match self.active.len() {
                        0 => return self.staged_each::<$w, 0>(keys, n, d, &[], &mut emit),
                        1 => {
                            let v = self.views::<1>();
                            return self.staged_each::<$w, 1>(keys, n, d, &v, &mut emit);
                        }
                        2 => {
                            let v = self.views::<2>();
                            return self.staged_each::<$w, 2>(keys, n, d, &v, &mut emit);
                        }
                        3 => {
                            let v = self.views::<3>();
                            return self.staged_each::<$w, 3>(keys, n, d, &v, &mut emit);
                        }
                        _ => {}
                    }
                };
            }
            match self.w {
                1 => staged!(1),
                2 => staged!(2),
                3 => staged!(3),
                4 => staged!(4),
                _ => {}
            }
        }
        if self.live <= SMALL
            && self.sbits_on
            && kb > 0
            && self.sbits.each_any(keys, kb, n, &mut emit)
        {
            return;
        }
        if self.live <= SMALL && self.small_flat() {
            match (self.w, self.range_fields.len()) {
                (1, 0) => return self.small_each::<1, 0>(keys, n, &mut emit),
                (1, 1) => return self.small_each::<1, 1>(keys, n, &mut emit),
                (1, 2) => return self.small_each::<1, 2>(keys, n, &mut emit),
                (2, 0) => return self.small_each::<2, 0>(keys, n, &mut emit),
                (2, 1) => return self.small_each::<2, 1>(keys, n, &mut emit),
                (2, 2) => return self.small_each::<2, 2>(keys, n, &mut emit),
                _ => {}
            }
        }
        macro_rules! each {
            ($w:literal) => {
                for i in 0..n {
                    let k = words::fixed_in::<$w>(keys, i * kb, kb);
                    emit(i, self.lookup_k(&k, &keys[i * kb..(i + 1) * kb]));
                }
            };
        }
        match self.w {
            1 => each!(1),
            2 => each!(2),
            3 => each!(3),
            4 => each!(4),
            nw => {
                for i in 0..n {
                    let key = &keys[i * kb..(i + 1) * kb];
                    emit(i, self.lookup_k(&ByteWords { bytes: key, n: nw }, key));
                }
            }
        }
    }

    /// Probe tuple `visit[j]` (key hash `h` under its mask) and lower `best`
    /// to the rank of the best entry there that matches, if better.
    #[inline(always)]
    fn probe<K: Words + ?Sized>(&self, j: usize, h: u64, k: &K, key: &[u8], best: &mut u64) {
        self.probe_hint(j, h, u32::MAX, k, key, best);
    }

    /// [`Tss::probe`] with `hint`, the group id the first signature match
    /// of the key's home bucket named (`u32::MAX`: none): when that group's
    /// key is the key's, the bucket is not searched again.
    #[inline(always)]
    fn probe_hint<K: Words + ?Sized>(
        &self,
        j: usize,
        h: u64,
        hint: u32,
        k: &K,
        key: &[u8],
        best: &mut u64,
    ) {
        let w = self.w;
        let v = &self.visit[j];
        let m = &self.vmask[j * w..(j + 1) * w];
        let tu = &self.tuples[v.tuple as usize];
        let g = if hint != u32::MAX && (hint as usize) < tu.chains.len() && meq(tu.gkey(hint), k, m)
        {
            hint
        } else {
            let Some(g) = tu.map.find(h, |g| meq(tu.gkey(g), k, m)) else {
                return;
            };
            g
        };
        let rec = tu.rec(g);
        let r0 = rec[w];
        if r0 >= *best {
            return;
        }
        if v.pure
            || (meq(&rec[w + 2..2 * w + 2], k, &rec[2 * w + 2..3 * w + 2])
                && (rec[w + 1] & HEAD_CHECK == 0 || self.ranges_ok(r0 as u32, key)))
        {
            *best = r0;
            return;
        }
        if rec[w + 1] & MORE != 0 {
            for &r in &tu.chains[g as usize][1..] {
                if r >= *best {
                    break;
                }
                if self.verify(r as u32, k, key) {
                    *best = r;
                    break;
                }
            }
        }
    }

    /// [`Tss::probe_hint`] for a key of `W` words: the record and masks are
    /// sliced once with constant lengths (no per-word bounds checks).
    #[inline(always)]
    fn probe_w<const W: usize>(
        &self,
        j: usize,
        h: u64,
        hint: u32,
        k: &[u64; W],
        key: &[u8],
        best: &mut u64,
    ) {
        let s = 3 * W + 2;
        let v = &self.visit[j];
        let m: &[u64; W] = match self.vmask[j * W..].first_chunk::<W>() {
            Some(m) => m,
            None => return self.probe_hint(j, h, hint, k, key, best),
        };
        let tu = &self.tuples[v.tuple as usize];
        let keq = |g: u32| {
            tu.grec
                .get(g as usize * s..)
                .and_then(<[u64]>::first_chunk::<W>)
                .is_some_and(|gk| meq_w(gk, k, m))
        };
        let g = if hint != u32::MAX && keq(hint) {
            hint
        } else {
            let Some(g) = tu.map.find(h, keq) else {
                return;
            };
            g
        };
        let Some(rec) = tu.grec.get(g as usize * s..g as usize * s + s) else {
            return self.probe_hint(j, h, hint, k, key, best);
        };
        let r0 = rec[W];
        if r0 >= *best {
            return;
        }
        let flags = rec[W + 1];
        let head_ok = v.pure || {
            let (hv, hm) = rec[W + 2..].split_at(W);
            let (Some(hv), Some(hm)) = (hv.first_chunk::<W>(), hm.first_chunk::<W>()) else {
                return self.probe_hint(j, h, hint, k, key, best);
            };
            meq_w(hv, k, hm) && (flags & HEAD_CHECK == 0 || self.ranges_ok(r0 as u32, key))
        };
        if head_ok {
            *best = r0;
            return;
        }
        if flags & MORE != 0 {
            for &r in &tu.chains[g as usize][1..] {
                if r >= *best {
                    break;
                }
                if self.verify(r as u32, k, key) {
                    *best = r;
                    break;
                }
            }
        }
    }

    /// `lookup_each` of a large table, `W` key words, `NA` pruning fields
    /// (`views`, copied out of the bounds once per batch): stages of `d` keys
    /// (the bounds' level-1 slots of every key prefetched, then their level-2
    /// bytes, then every candidate tuple's hash computed and its filter word
    /// and bucket prefetched, then the filter tested and the first group
    /// record prefetched, then each key probed); a key with more than
    /// `STAGE_CANDS` candidates takes the one-key path.
    #[inline(never)]
    fn staged_each<const W: usize, const NA: usize>(
        &self,
        keys: &[u8],
        n: usize,
        d: usize,
        views: &[BoundView<'_>; NA],
        emit: &mut impl FnMut(usize, Option<u32>),
    ) {
        const STAGE_CANDS: usize = 8;
        let kb = self.kb;
        let cw = self.cand_words;
        let nv = self.visit.len();
        let vmask = &self.vmask[..nv * W];
        let cand = &self.cand[..];
        let mut i = 0;
        let mut ks = [[0u64; W]; STAGE_MAX];
        let mut tops = [[0u32; NA]; STAGE_MAX];
        let mut cands = [[0u16; STAGE_CANDS]; STAGE_MAX];
        let mut hs = [[0u64; STAGE_CANDS]; STAGE_MAX];
        // per key and candidate: the group the home bucket's first signature
        // match names (`u32::MAX`: none), for the probe
        let mut hint = [[u32::MAX; STAGE_CANDS]; STAGE_MAX];
        let mut nc = [0u8; STAGE_MAX];
        // per key: bit `c` set when candidate `c` passed the filter
        let mut pass = [0u8; STAGE_MAX];
        // valid tuples of the last candidate word
        let last = match nv % 64 {
            0 => u64::MAX,
            r => (1u64 << r) - 1,
        };
        while i < n {
            let m = (n - i).min(d).min(STAGE_MAX);
            let stage = &keys[i * kb..(i + m) * kb];
            // the bounds' tables are spread over megabytes (level 2 of address
            // fields): prefetch level 1 of every key, then level 2, then read
            for j in 0..m {
                ks[j] = words::fixed_in::<W>(keys, (i + j) * kb, kb);
                let key = &stage[j * kb..(j + 1) * kb];
                for (x, v) in tops[j].iter_mut().zip(views) {
                    *x = v.top(&ks[j], key);
                    v.prefetch1(*x);
                }
            }
            for top in tops.iter().take(m) {
                for (x, v) in top.iter().zip(views) {
                    v.prefetch2(*x);
                }
            }
            for j in 0..m {
                let mut rows = [0usize; NA];
                for ((r, v), &x) in rows.iter_mut().zip(views).zip(&tops[j]) {
                    *r = v.base + usize::from(v.bound(x)) * cw;
                }
                // count the candidates first (cheap) and take the one-key path
                // when there are many: hashing them here would be wasted
                let mut words = [0u64; 8];
                if cw == 1 {
                    let mut c = last;
                    for r in rows {
                        c &= cand[r];
                    }
                    if bits_upto(c, STAGE_CANDS + 1) > STAGE_CANDS {
                        nc[j] = u8::MAX;
                        continue;
                    }
                    words[0] = c;
                } else {
                    let mut c = 0usize;
                    for (word, cwd) in words.iter_mut().enumerate().take(cw.min(8)) {
                        let mut x = if word + 1 == cw { last } else { u64::MAX };
                        for r in rows {
                            x &= cand[r + word];
                        }
                        *cwd = x;
                        c += bits_upto(x, STAGE_CANDS + 1);
                    }
                    if c > STAGE_CANDS || cw > 8 {
                        nc[j] = u8::MAX;
                        continue;
                    }
                }
                let mut c = 0;
                for (word, &cwd) in words.iter().enumerate().take(cw) {
                    let mut x = cwd;
                    while x != 0 {
                        let t = 64 * word + x.trailing_zeros() as usize;
                        x &= x - 1;
                        let v = &self.visit[t];
                        let h = mhash(&ks[j], &vmask[t * W..t * W + W], v.seed);
                        self.filter.prefetch(h);
                        self.tuples[v.tuple as usize].map.prefetch(h);
                        cands[j][c] = t as u16;
                        hs[j][c] = h;
                        c += 1;
                    }
                }
                nc[j] = c as u8;
            }
            // the filter words and buckets are in cache now: test the filter
            // and prefetch the first group record of each tuple that passed
            for j in 0..m {
                let mut p = 0u8;
                if nc[j] != u8::MAX {
                    for c in 0..usize::from(nc[j]) {
                        if self.filter.test(hs[j][c]) {
                            p |= 1 << c;
                            let tu =
                                &self.tuples[self.visit[usize::from(cands[j][c])].tuple as usize];
                            hint[j][c] = match tu.map.first_candidate(hs[j][c]) {
                                Some(g) => {
                                    prefetch_index(&tu.grec, g as usize * (3 * W + 2));
                                    g
                                }
                                None => u32::MAX,
                            };
                        }
                    }
                }
                pass[j] = p;
            }
            for j in 0..m {
                let key = &stage[j * kb..(j + 1) * kb];
                if nc[j] == u8::MAX {
                    emit(i + j, self.lookup_k(&ks[j], key));
                    continue;
                }
                let mut best = NO_RANK;
                let mut p = pass[j];
                while p != 0 {
                    let c = p.trailing_zeros() as usize;
                    p &= p - 1;
                    let t = usize::from(cands[j][c]);
                    if self.visit[t].best >= best {
                        break;
                    }
                    self.probe_w::<W>(t, hs[j][c], hint[j][c], &ks[j], key, &mut best);
                }
                emit(i + j, (best != NO_RANK).then_some(best as u32));
            }
            i += m;
        }
    }

    /// The bound views of the `NA` pruning fields (`NA == active.len()`).
    fn views<const NA: usize>(&self) -> [BoundView<'_>; NA] {
        std::array::from_fn(|k| {
            let f = self.active[k];
            self.bounds[f].view(self.cand_base[f])
        })
    }

    /// Diagnostics for one key: (tuples, candidates after the length
    /// bounds, candidates that pass the filter), ignoring priority pruning.
    pub(crate) fn probe_counts(&self, key: &[u8]) -> (usize, usize, usize) {
        let k = words::to_words(key, self.w);
        let cw = self.cand_words;
        let (mut cands, mut pass) = (0, 0);
        for j in 0..self.visit.len() {
            let ok = self.active.iter().all(|&f| {
                let r = self.cand_base[f] + usize::from(self.bounds[f].bound(key)) * cw;
                self.cand[r + j / 64] >> (j % 64) & 1 == 1
            });
            if ok {
                cands += 1;
                let h = mhash(
                    &k[..],
                    &self.vmask[j * self.w..(j + 1) * self.w],
                    self.visit[j].seed,
                );
                pass += usize::from(self.filter.test(h));
            }
        }
        (self.visit.len(), cands, pass)
    }

    #[inline(always)]
    fn lookup_k<K: Words + ?Sized>(&self, k: &K, key: &[u8]) -> Option<u32> {
        if self.live <= SMALL {
            if self.sbits_on {
                return self.sbits.lookup(key);
            }
            if self.small_flat() {
                return self.small_scan(k, key);
            }
            return self
                .small
                .iter()
                .map(|r| *r as u32)
                .find(|e| self.verify(*e, k, key));
        }
        let w = self.w;
        let n = self.visit.len();
        // 0. the rows of candidate tuples for the key's length bounds
        let cw = self.cand_words;
        let mut rows = [0usize; MAX_PRUNE];
        let na = self.active.len();
        for (r, &f) in rows.iter_mut().zip(&self.active) {
            *r = self.cand_base[f] + usize::from(self.bounds[f].bound_w(k, key)) * cw;
        }
        let rows = &rows[..na];
        let mut best = NO_RANK;
        let mut start = 0;
        'outer: while start < n {
            if self.visit[start].best >= best {
                break;
            }
            let end = (start + CHUNK).min(n);
            let c = start / CHUNK;
            let mut cand = if end - start == 64 {
                u64::MAX
            } else {
                (1u64 << (end - start)) - 1
            };
            for r in rows {
                cand &= self.cand[r + c];
            }
            // 1. filter the candidate tuples of the chunk (independent hashes)
            let mut pass = 0u64;
            while cand != 0 {
                let j = start + cand.trailing_zeros() as usize;
                cand &= cand - 1;
                let v = &self.visit[j];
                let h = mhash(k, &self.vmask[j * w..(j + 1) * w], v.seed);
                pass |= u64::from(self.filter.test(h)) << (j - start);
            }
            // (hashes are recomputed below for the few tuples that passed:
            // cheaper than keeping them all)
            let hash = |j: usize| {
                let v = &self.visit[start + j];
                mhash(k, &self.vmask[(start + j) * w..(start + j + 1) * w], v.seed)
            };
            // 2. prefetch the buckets, then the first candidate group of
            // each tuple that passed (their misses overlap)
            let mut p = pass;
            while p != 0 {
                let j = p.trailing_zeros() as usize;
                p &= p - 1;
                self.tuples[self.visit[start + j].tuple as usize]
                    .map
                    .prefetch(hash(j));
            }
            let mut p = pass;
            while p != 0 {
                let j = p.trailing_zeros() as usize;
                p &= p - 1;
                let tu = &self.tuples[self.visit[start + j].tuple as usize];
                if let Some(g) = tu.map.first_candidate(hash(j)) {
                    prefetch_index(&tu.grec, g as usize * (3 * w + 2));
                }
            }
            // 3. probe the tuples that passed, best first
            while pass != 0 {
                let j = start + pass.trailing_zeros() as usize;
                pass &= pass - 1;
                if self.visit[j].best >= best {
                    break 'outer;
                }
                self.probe(j, hash(j - start), k, key, &mut best);
            }
            start = end;
        }
        (best != NO_RANK).then_some(best as u32)
    }
}
