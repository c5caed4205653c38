//! DIR-16-8-8 longest-prefix match for a single LPM field of at most 32 bits.
//!
//! The key is left-aligned into a `u32` (the prefix counts from the most
//! significant bit of the byte-padded field, as in bmv2). Level 1 is a
//! 65536-slot array indexed by the top 16 bits; a slot holds either a leaf
//! (next hop = entry index + 1, and the depth of the prefix that set it) or a
//! pointer to a 256-slot group indexed by the next 8 bits, whose slots in turn
//! may point to a 256-slot group for the last 8 bits. A lookup is 1 to 3
//! dependent loads. Insert writes the prefix's range, keeping deeper leaves;
//! delete rewrites the slots set by the prefix with the next-longest covering
//! prefix (found in the rule map) and collapses groups that became uniform.

use std::collections::BTreeMap;

use crate::prefetch::prefetch_index;

const GROUP: u32 = 1 << 31;
const NH_MASK: u32 = 0x00ff_ffff;

/// Tables of at most this many prefixes skip the prefetch stages of `lookup_batch`.
const DIRECT_RULES_MAX: usize = 4096;

#[inline(always)]
fn leaf(idx: Option<u32>, depth: u32) -> u32 {
    (depth << 24) | idx.map_or(0, |i| i + 1)
}

#[inline(always)]
fn depth(e: u32) -> u32 {
    (e >> 24) & 0x3f
}

#[inline(always)]
fn nh(e: u32) -> Option<u32> {
    let n = e & NH_MASK;
    if n == 0 { None } else { Some(n - 1) }
}

#[inline(always)]
fn pmask(len: u32) -> u32 {
    if len == 0 { 0 } else { u32::MAX << (32 - len) }
}

#[derive(Clone)]
pub(crate) struct DirLpm {
    nbytes: usize,
    tbl16: Vec<u32>,
    tbl8: Vec<u32>,
    free_groups: Vec<u32>,
    /// (prefix length, left-aligned masked prefix) -> entry index
    rules: BTreeMap<(u32, u32), u32>,
}

impl DirLpm {
    pub(crate) fn new(nbytes: usize) -> Self {
        DirLpm {
            nbytes,
            tbl16: Vec::new(),
            tbl8: Vec::new(),
            free_groups: Vec::new(),
            rules: BTreeMap::new(),
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        (self.tbl16.capacity() + self.tbl8.capacity() + self.free_groups.capacity()) * 4
            + self.rules.len() * 32
    }

    pub(crate) fn clear(&mut self) {
        *self = DirLpm::new(self.nbytes);
    }

    /// Left-aligned `u32` of a field of `nbytes` (<= 4) big-endian bytes.
    #[inline(always)]
    pub(crate) fn key32(&self, k: &[u8]) -> u32 {
        if self.nbytes == 4
            && let Some(w) = k.first_chunk::<4>()
        {
            // an IPv4 address: one load
            return u32::from_be_bytes(*w);
        }
        let mut v: u64 = 0;
        for b in &k[..self.nbytes] {
            v = (v << 8) | u64::from(*b);
        }
        (v << (32 - 8 * self.nbytes as u32)) as u32
    }

    pub(crate) fn find(&self, v: u32, len: u32) -> Option<u32> {
        self.rules.get(&(len, v & pmask(len))).copied()
    }

    #[inline(always)]
    pub(crate) fn lookup(&self, k: u32) -> Option<u32> {
        let e = *self.tbl16.get((k >> 16) as usize)?;
        if e & GROUP == 0 {
            return nh(e);
        }
        let e = self.tbl8[(((e & !GROUP) as usize) << 8) | ((k >> 8) & 0xff) as usize];
        if e & GROUP == 0 {
            return nh(e);
        }
        nh(self.tbl8[(((e & !GROUP) as usize) << 8) | (k & 0xff) as usize])
    }

    /// Batched lookup: left-align all keys and prefetch their level-1 slots,
    /// then prefetch level-2 slots, then resolve. A few keys, or a table of few
    /// prefixes (whose slots in use stay in the caches), are resolved one by one
    /// instead: the stages' instructions would cost more than the misses they hide.
    /// (Inlined into each caller: its `emit` is a caller's loop body.)
    #[inline(always)]
    pub(crate) fn lookup_batch(
        &self,
        keys: &[u8],
        kb: usize,
        n: usize,
        dist: usize,
        pre: impl Fn(u32),
        mut emit: impl FnMut(usize, Option<u32>),
    ) {
        if n <= crate::exact::SMALL_BATCH_MAX || self.rules.len() <= DIRECT_RULES_MAX {
            if self.nbytes == 4 && kb == 4 {
                // IPv4 addresses: one load each
                for (i, w) in keys.as_chunks::<4>().0.iter().take(n).enumerate() {
                    emit(i, self.lookup(u32::from_be_bytes(*w)));
                }
            } else {
                for i in 0..n {
                    emit(i, self.lookup(self.key32(&keys[i * kb..(i + 1) * kb])));
                }
            }
            return;
        }
        let dist = dist.clamp(1, crate::exact::MAX_BATCH);
        let mut ks = [0u32; crate::exact::MAX_BATCH];
        let mut start = 0;
        while start < n {
            let m = dist.min(n - start);
            for (i, k) in ks.iter_mut().enumerate().take(m) {
                *k = self.key32(&keys[(start + i) * kb..(start + i + 1) * kb]);
                prefetch_index(&self.tbl16, (*k >> 16) as usize);
            }
            for k in ks.iter().take(m) {
                if let Some(&e) = self.tbl16.get((*k >> 16) as usize)
                    && e & GROUP != 0
                {
                    let p = (((e & !GROUP) as usize) << 8) | ((*k >> 8) & 0xff) as usize;
                    prefetch_index(&self.tbl8, p);
                }
            }
            // the answers, each one's entry prefetched before any is emitted
            let mut rs = [None; crate::exact::MAX_BATCH];
            for (r, k) in rs.iter_mut().zip(&ks).take(m) {
                *r = self.lookup(*k);
                if let Some(r) = *r {
                    pre(r);
                }
            }
            for (i, r) in rs.iter().enumerate().take(m) {
                emit(start + i, *r);
            }
            start += m;
        }
    }

    fn alloc_group(&mut self, fill: u32) -> u32 {
        if let Some(g) = self.free_groups.pop() {
            let s = g as usize * 256;
            self.tbl8[s..s + 256].fill(fill);
            g
        } else {
            let g = (self.tbl8.len() / 256) as u32;
            self.tbl8.resize(self.tbl8.len() + 256, fill);
            g
        }
    }

    /// Apply `f` to every leaf reachable from tbl8 position `pos`.
    fn apply8(tbl8: &mut [u32], pos: usize, f: &impl Fn(u32) -> Option<u32>) {
        let cur = tbl8[pos];
        if cur & GROUP != 0 {
            let g = ((cur & !GROUP) as usize) << 8;
            for i in 0..256 {
                Self::apply8(tbl8, g + i, f);
            }
        } else if let Some(n) = f(cur) {
            tbl8[pos] = n;
        }
    }

    /// Apply `f` to every leaf of the prefix `v/len` (all levels).
    fn apply(&mut self, v: u32, len: u32, f: &impl Fn(u32) -> Option<u32>) {
        if len <= 16 {
            let first = (v >> 16) as usize;
            let count = 1usize << (16 - len);
            for s in first..first + count {
                let cur = self.tbl16[s];
                if cur & GROUP != 0 {
                    let g = ((cur & !GROUP) as usize) << 8;
                    for i in 0..256 {
                        Self::apply8(&mut self.tbl8, g + i, f);
                    }
                } else if let Some(n) = f(cur) {
                    self.tbl16[s] = n;
                }
            }
            return;
        }
        let s = (v >> 16) as usize;
        let g = self.tbl16[s];
        debug_assert!(g & GROUP != 0);
        let gbase = ((g & !GROUP) as usize) << 8;
        if len <= 24 {
            let first = ((v >> 8) & 0xff) as usize;
            let count = 1usize << (24 - len);
            for e in first..first + count {
                Self::apply8(&mut self.tbl8, gbase + e, f);
            }
            return;
        }
        let p = gbase | ((v >> 8) & 0xff) as usize;
        let g2 = self.tbl8[p];
        debug_assert!(g2 & GROUP != 0);
        let g2base = ((g2 & !GROUP) as usize) << 8;
        let first = (v & 0xff) as usize;
        let count = 1usize << (32 - len);
        for e in first..first + count {
            Self::apply8(&mut self.tbl8, g2base + e, f);
        }
    }

    /// Insert `v/len` -> `idx` (caller checked it is not a duplicate).
    pub(crate) fn insert(&mut self, v: u32, len: u32, idx: u32) {
        let v = v & pmask(len);
        if self.tbl16.is_empty() {
            self.tbl16 = vec![leaf(None, 0); 1 << 16];
        }
        // make sure the groups on the path exist
        if len > 16 {
            let s = (v >> 16) as usize;
            let cur = self.tbl16[s];
            if cur & GROUP == 0 {
                let g = self.alloc_group(cur);
                self.tbl16[s] = GROUP | g;
            }
            if len > 24 {
                let p = (((self.tbl16[s] & !GROUP) as usize) << 8) | ((v >> 8) & 0xff) as usize;
                let cur = self.tbl8[p];
                if cur & GROUP == 0 {
                    let g = self.alloc_group(cur);
                    self.tbl8[p] = GROUP | g;
                }
            }
        }
        let new = leaf(Some(idx), len);
        self.apply(v, len, &|cur| (depth(cur) <= len).then_some(new));
        self.rules.insert((len, v), idx);
    }

    /// Delete `v/len` (must be present with entry `idx`).
    pub(crate) fn delete(&mut self, v: u32, len: u32, idx: u32) {
        let v = v & pmask(len);
        self.rules.remove(&(len, v));
        let mut repl = leaf(None, 0);
        for l in (0..len).rev() {
            if let Some(&i) = self.rules.get(&(l, v & pmask(l))) {
                repl = leaf(Some(i), l);
                break;
            }
        }
        let old = leaf(Some(idx), len);
        self.apply(v, len, &|cur| (cur == old).then_some(repl));
        if len > 16 {
            self.collapse(v, len);
        }
    }

    fn uniform(&self, g: usize) -> Option<u32> {
        let s = &self.tbl8[g << 8..(g << 8) + 256];
        let first = s[0];
        (first & GROUP == 0 && s.iter().all(|e| *e == first)).then_some(first)
    }

    fn collapse(&mut self, v: u32, len: u32) {
        let s = (v >> 16) as usize;
        let g = self.tbl16[s];
        if g & GROUP == 0 {
            return;
        }
        let g = (g & !GROUP) as usize;
        if len > 24 {
            let p = (g << 8) | ((v >> 8) & 0xff) as usize;
            let g2 = self.tbl8[p];
            if g2 & GROUP != 0 {
                let g2 = (g2 & !GROUP) as usize;
                if let Some(l) = self.uniform(g2)
                    && depth(l) <= 24
                {
                    self.tbl8[p] = l;
                    self.free_groups.push(g2 as u32);
                }
            }
        }
        if let Some(l) = self.uniform(g)
            && depth(l) <= 16
        {
            self.tbl16[s] = l;
            self.free_groups.push(g as u32);
        }
    }
}
