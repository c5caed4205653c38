//! Longest-prefix match for wide LPM fields and LPM combined with exact/valid
//! fields: one hash table per distinct prefix length, binary search on the
//! lengths with markers (Waldvogel et al., "Scalable High Speed IP Routing
//! Lookups"). A lookup costs at most ceil(log2(k + 1)) hash probes for `k`
//! distinct prefix lengths.
//!
//! Exact/valid fields are part of every probe (their bytes are always fully
//! masked), so a table `vrf exact + ipv6 lpm` is a 128-length binary search
//! where each probe also checks the vrf.
//!
//! Each level entry carries `bmp`, the longest real prefix (entry index) of its
//! string with a length <= the level's length; a lookup that hits an entry
//! records its `bmp` and continues with longer lengths, a miss continues with
//! shorter ones. Markers are placed on the binary-search path of each prefix;
//! when the set of distinct lengths changes the search tree changes shape and
//! the structure is rebuilt (the rules are kept in a B-tree ordered by key,
//! which also finds the prefixes extending a given one for incremental `bmp`
//! maintenance).

use std::collections::BTreeMap;

use crate::exact::MAX_BATCH;
use crate::hash::{HashIndex, hash_bytes, hash_masked, masked_eq};
use crate::prefetch::prefetch_index;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Ent {
    real: u32,
    bmp: u32,
    markers: u32,
}

const FREE: Ent = Ent {
    real: NONE,
    bmp: NONE,
    markers: 0,
};

#[derive(Clone)]
struct Level {
    mask: Box<[u8]>,
    map: HashIndex,
    keys: Vec<u8>,
    ents: Vec<Ent>,
    free: Vec<u32>,
}

impl Level {
    fn new(mask: Box<[u8]>) -> Self {
        Level {
            mask,
            map: HashIndex::default(),
            keys: Vec::new(),
            ents: Vec::new(),
            free: Vec::new(),
        }
    }

    #[inline(always)]
    fn key(&self, e: u32) -> &[u8] {
        let kb = self.mask.len();
        &self.keys[e as usize * kb..(e as usize + 1) * kb]
    }

    #[inline(always)]
    fn find(&self, k: &[u8]) -> Option<u32> {
        let h = hash_masked(k, &self.mask);
        self.map.find(h, |e| masked_eq(self.key(e), k, &self.mask))
    }

    fn get_or_create(&mut self, k: &[u8]) -> (u32, bool) {
        if let Some(e) = self.find(k) {
            return (e, false);
        }
        let kb = self.mask.len();
        let e = if let Some(e) = self.free.pop() {
            self.ents[e as usize] = FREE;
            e
        } else {
            self.ents.push(FREE);
            self.keys.resize(self.keys.len() + kb, 0);
            (self.ents.len() - 1) as u32
        };
        let s = e as usize * kb;
        for (i, (a, b)) in k.iter().zip(self.mask.iter()).enumerate() {
            self.keys[s + i] = a & b;
        }
        let (keys, map) = (&self.keys, &mut self.map);
        map.insert(hash_masked(k, &self.mask), e, |x| {
            hash_bytes(&keys[x as usize * kb..(x as usize + 1) * kb])
        });
        (e, true)
    }

    fn remove(&mut self, e: u32) {
        let h = hash_bytes(self.key(e));
        let removed = self.map.remove(h, e);
        debug_assert!(removed);
        self.ents[e as usize] = FREE;
        self.free.push(e);
    }

    fn memory_bytes(&self) -> usize {
        self.map.memory_bytes()
            + self.keys.capacity()
            + self.ents.capacity() * std::mem::size_of::<Ent>()
            + self.free.capacity() * 4
            + self.mask.len()
    }
}

/// Positions of the marker levels on the binary-search path to level `j` of
/// `k` levels (the levels where the search must be told to go longer).
fn path(k: usize, j: usize) -> impl Iterator<Item = usize> {
    let (mut lo, mut hi) = (0usize, k);
    std::iter::from_fn(move || {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if mid == j {
                return None;
            }
            if j > mid {
                lo = mid + 1;
                return Some(mid);
            }
            hi = mid;
        }
        None
    })
}

#[derive(Clone)]
pub(crate) struct WaldvogelLpm {
    kb: usize,
    /// offset / length of the LPM field in the packed key
    lpm_off: usize,
    lpm_nbytes: usize,
    /// per entry index: prefix length, and masked packed key (stride kb)
    plen: Vec<u32>,
    rkeys: Vec<u8>,
    /// (sort key = non-LPM bytes ++ masked LPM bytes, prefix length) -> entry
    rules: BTreeMap<(Vec<u8>, u32), u32>,
    len_count: BTreeMap<u32, usize>,
    lens: Vec<u32>,
    levels: Vec<Level>,
}

impl WaldvogelLpm {
    pub(crate) fn new(kb: usize, lpm_off: usize, lpm_nbytes: usize) -> Self {
        WaldvogelLpm {
            kb,
            lpm_off,
            lpm_nbytes,
            plen: Vec::new(),
            rkeys: Vec::new(),
            rules: BTreeMap::new(),
            len_count: BTreeMap::new(),
            lens: Vec::new(),
            levels: Vec::new(),
        }
    }

    pub(crate) fn clear(&mut self) {
        *self = WaldvogelLpm::new(self.kb, self.lpm_off, self.lpm_nbytes);
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.plen.capacity() * 4
            + self.rkeys.capacity()
            + self.rules.len() * (self.kb + 48)
            + self.levels.iter().map(Level::memory_bytes).sum::<usize>()
    }

    /// Mask over the packed key for an LPM prefix of `len` bits.
    fn level_mask(&self, len: u32) -> Box<[u8]> {
        let mut m = vec![0xffu8; self.kb];
        let lpm = &mut m[self.lpm_off..self.lpm_off + self.lpm_nbytes];
        crate::fill_prefix_mask(lpm, len);
        m.into_boxed_slice()
    }

    fn sort_key(&self, masked: &[u8]) -> Vec<u8> {
        let mut s = Vec::with_capacity(self.kb);
        s.extend_from_slice(&masked[..self.lpm_off]);
        s.extend_from_slice(&masked[self.lpm_off + self.lpm_nbytes..]);
        s.extend_from_slice(&masked[self.lpm_off..self.lpm_off + self.lpm_nbytes]);
        s
    }

    fn rkey(&self, idx: u32) -> &[u8] {
        &self.rkeys[idx as usize * self.kb..(idx as usize + 1) * self.kb]
    }

    /// Normalise `key` (packed, LPM bytes possibly unmasked) for prefix `len`.
    fn masked(&self, key: &[u8], len: u32) -> Vec<u8> {
        let m = self.level_mask(len);
        key.iter().zip(m.iter()).map(|(a, b)| a & b).collect()
    }

    pub(crate) fn find(&self, key: &[u8], len: u32) -> Option<u32> {
        let mk = self.masked(key, len);
        self.rules.get(&(self.sort_key(&mk), len)).copied()
    }

    #[inline]
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<u32> {
        let (mut lo, mut hi) = (0usize, self.levels.len());
        let mut best = NONE;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let lv = &self.levels[mid];
            if let Some(e) = lv.find(key) {
                let b = lv.ents[e as usize].bmp;
                if b != NONE {
                    best = b;
                }
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (best != NONE).then_some(best)
    }

    /// Batched lookup of `n` keys packed back to back, `dist` keys at a
    /// time in lock step: every round computes each unfinished key's probe
    /// hash and prefetches its bucket, then prefetches the first candidate's
    /// stored key and level entry, then resolves the probes (a round's misses
    /// overlap instead of being paid one after the other). Same results as
    /// `lookup`.
    pub(crate) fn lookup_batch(
        &self,
        keys: &[u8],
        n: usize,
        dist: usize,
        mut emit: impl FnMut(usize, Option<u32>),
    ) {
        let kb = self.kb;
        let dist = dist.clamp(1, MAX_BATCH);
        let mut lo = [0usize; MAX_BATCH];
        let mut hi = [0usize; MAX_BATCH];
        let mut best = [NONE; MAX_BATCH];
        let mut hs = [0u64; MAX_BATCH];
        let mut i = 0;
        while i < n {
            let m = (n - i).min(dist);
            lo[..m].fill(0);
            hi[..m].fill(self.levels.len());
            best[..m].fill(NONE);
            loop {
                let mut active = false;
                for j in 0..m {
                    if lo[j] < hi[j] {
                        active = true;
                        let lv = &self.levels[lo[j] + (hi[j] - lo[j]) / 2];
                        hs[j] = hash_masked(&keys[(i + j) * kb..(i + j + 1) * kb], &lv.mask);
                        lv.map.prefetch(hs[j]);
                    }
                }
                if !active {
                    break;
                }
                for j in 0..m {
                    if lo[j] < hi[j] {
                        let lv = &self.levels[lo[j] + (hi[j] - lo[j]) / 2];
                        if let Some(e) = lv.map.first_candidate(hs[j]) {
                            prefetch_index(&lv.keys, e as usize * kb);
                            prefetch_index(&lv.ents, e as usize);
                        }
                    }
                }
                for j in 0..m {
                    if lo[j] < hi[j] {
                        let mid = lo[j] + (hi[j] - lo[j]) / 2;
                        let lv = &self.levels[mid];
                        let key = &keys[(i + j) * kb..(i + j + 1) * kb];
                        match lv.map.find(hs[j], |e| masked_eq(lv.key(e), key, &lv.mask)) {
                            Some(e) => {
                                let b = lv.ents[e as usize].bmp;
                                if b != NONE {
                                    best[j] = b;
                                }
                                lo[j] = mid + 1;
                            }
                            None => hi[j] = mid,
                        }
                    }
                }
            }
            for (j, b) in best.iter().enumerate().take(m) {
                emit(i + j, (*b != NONE).then_some(*b));
            }
            i += m;
        }
    }

    fn level_of(&self, len: u32) -> usize {
        self.lens.partition_point(|l| *l < len)
    }

    /// Longest real prefix of `s` stored at a level index <= `j`.
    fn best_real_upto(&self, s: &[u8], j: usize, exclude: u32) -> u32 {
        for jj in (0..=j).rev() {
            let lv = &self.levels[jj];
            if let Some(e) = lv.find(s) {
                let r = lv.ents[e as usize].real;
                if r != NONE && r != exclude {
                    return r;
                }
            }
        }
        NONE
    }

    /// Entries (prefix length, entry index) whose prefix strictly extends the
    /// masked key `mk` of length `len`.
    fn extending(&self, mk: &[u8], len: u32) -> Vec<(u32, u32)> {
        let lo = self.sort_key(mk);
        let mut hi_masked = mk.to_vec();
        let m = self.level_mask(len);
        for i in self.lpm_off..self.lpm_off + self.lpm_nbytes {
            hi_masked[i] |= !m[i];
        }
        let hi = self.sort_key(&hi_masked);
        self.rules
            .range((lo, 0)..=(hi, u32::MAX))
            .filter(|((_, l), _)| *l > len)
            .map(|((_, l), i)| (*l, *i))
            .collect()
    }

    pub(crate) fn insert(&mut self, key: &[u8], len: u32, idx: u32) {
        let mk = self.masked(key, len);
        let i = idx as usize;
        if self.plen.len() <= i {
            self.plen.resize(i + 1, 0);
            self.rkeys.resize((i + 1) * self.kb, 0);
        }
        self.plen[i] = len;
        self.rkeys[i * self.kb..(i + 1) * self.kb].copy_from_slice(&mk);
        self.rules.insert((self.sort_key(&mk), len), idx);
        let c = self.len_count.entry(len).or_insert(0);
        *c += 1;
        if *c == 1 {
            self.rebuild();
            return;
        }
        let k = self.levels.len();
        let j = self.level_of(len);
        for m in path(k, j) {
            let (e, created) = self.levels[m].get_or_create(&mk);
            self.levels[m].ents[e as usize].markers += 1;
            if created {
                let b = self.best_real_upto(&mk, m, NONE);
                self.levels[m].ents[e as usize].bmp = b;
            }
        }
        let (e, _) = self.levels[j].get_or_create(&mk);
        let ent = &mut self.levels[j].ents[e as usize];
        ent.real = idx;
        ent.bmp = idx;
        for (len2, idx2) in self.extending(&mk, len) {
            let j2 = self.level_of(len2);
            let r2 = self.rkey(idx2).to_vec();
            for m in path(k, j2).filter(|m| *m > j) {
                if let Some(e) = self.levels[m].find(&r2) {
                    let b = self.levels[m].ents[e as usize].bmp;
                    if b == NONE || self.plen[b as usize] < len {
                        self.levels[m].ents[e as usize].bmp = idx;
                    }
                }
            }
        }
    }

    pub(crate) fn delete(&mut self, idx: u32) {
        let len = self.plen[idx as usize];
        let mk = self.rkey(idx).to_vec();
        self.rules.remove(&(self.sort_key(&mk), len));
        let last = match self.len_count.get_mut(&len) {
            Some(c) => {
                *c -= 1;
                *c == 0
            }
            None => false,
        };
        if last {
            self.len_count.remove(&len);
            self.rebuild();
            return;
        }
        let k = self.levels.len();
        let j = self.level_of(len);
        let q = self.best_real_upto(&mk, j, idx);
        for (len2, idx2) in self.extending(&mk, len) {
            let j2 = self.level_of(len2);
            let r2 = self.rkey(idx2).to_vec();
            for m in path(k, j2).filter(|m| *m > j) {
                if let Some(e) = self.levels[m].find(&r2) {
                    let ent = &mut self.levels[m].ents[e as usize];
                    if ent.bmp == idx {
                        ent.bmp = q;
                    }
                }
            }
        }
        if let Some(e) = self.levels[j].find(&mk) {
            let ent = &mut self.levels[j].ents[e as usize];
            ent.real = NONE;
            if ent.markers == 0 {
                self.levels[j].remove(e);
            } else {
                ent.bmp = q;
            }
        }
        for m in path(k, j) {
            if let Some(e) = self.levels[m].find(&mk) {
                let ent = &mut self.levels[m].ents[e as usize];
                ent.markers -= 1;
                if ent.markers == 0 && ent.real == NONE {
                    self.levels[m].remove(e);
                }
            }
        }
    }

    fn rebuild(&mut self) {
        self.lens = self.len_count.keys().copied().collect();
        self.levels = self
            .lens
            .iter()
            .map(|l| Level::new(self.level_mask(*l)))
            .collect();
        let k = self.levels.len();
        let rules: Vec<(u32, u32)> = self.rules.iter().map(|((_, l), i)| (*l, *i)).collect();
        for (len, idx) in rules {
            let j = self.level_of(len);
            let mk = self.rkey(idx).to_vec();
            let (e, _) = self.levels[j].get_or_create(&mk);
            self.levels[j].ents[e as usize].real = idx;
            for m in path(k, j) {
                let (e, _) = self.levels[m].get_or_create(&mk);
                self.levels[m].ents[e as usize].markers += 1;
            }
        }
        for j in 0..k {
            for e in 0..self.levels[j].ents.len() {
                let ent = self.levels[j].ents[e];
                if ent.real == NONE && ent.markers == 0 {
                    continue;
                }
                let s = self.levels[j].key(e as u32).to_vec();
                let b = self.best_real_upto(&s, j, NONE);
                self.levels[j].ents[e].bmp = b;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::path;

    #[test]
    fn path_matches_binary_search() {
        for k in 1..20 {
            for j in 0..k {
                let p: Vec<usize> = path(k, j).collect();
                // simulate a search for j that goes right exactly at p
                let (mut lo, mut hi) = (0, k);
                let mut rights = vec![];
                loop {
                    let mid = lo + (hi - lo) / 2;
                    if mid == j {
                        break;
                    }
                    if j > mid {
                        rights.push(mid);
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                assert_eq!(p, rights);
            }
        }
    }
}
