//! Tuple-space search for ternary and range tables, with tuple merging.
//!
//! Every entry has an *index mask* over the packed key (its ternary masks,
//! LPM prefixes, all-ones for exact/valid fields, and for range fields the
//! mask described below) and a value (`key & mask` of the entries it matches).
//!
//! A tuple is a hash table keyed by `key & tuple_mask`. An entry may live in
//! any tuple whose mask is a subset of its index mask (TupleMerge, Daly &
//! Torng 2017): the hash narrows the candidates to a chain, and each candidate
//! is then verified against its own value/mask (and range bounds). Chains are
//! sorted by (priority, entry index), which is bmv2's order (smallest priority
//! wins, ties go to the lowest handle), so the first candidate that verifies is
//! the tuple's answer. On insert an entry joins the most specific compatible
//! tuple whose chain for it is shorter than `CHAIN_LIMIT`; otherwise a new tuple
//! is made from the entry's mask with each field's leading-ones prefix cut to
//! 1/4, 2/4, 3/4 or all of its length (the first of those not already taken).
//! This keeps the number of tuples (the cost of a miss) small when entries
//! have many slightly different masks. Tuples whose entries all have exactly
//! the tuple mask and no range check skip verification.
//!
//! Tuples are kept sorted by their best (priority, index); a lookup visits
//! them in that order and stops as soon as the next tuple's best cannot beat
//! the match already found.
//!
//! Range fields: a range that is exactly one aligned power-of-two block (a
//! single value, the full range, any prefix-shaped range) becomes a plain mask.
//! Any other range is masked by the common leading bits of its bounds and its
//! entry is always verified against the bounds. This keeps exact semantics
//! without the blow-up of range-to-prefix expansion (a 16-bit range can need
//! 30 prefixes, two such fields 900 entries).

use std::collections::BTreeSet;

use crate::hash::{HashIndex, hash_bytes, hash_masked, masked_eq};

/// Longest chain an entry may join in a merged (less specific) tuple.
const CHAIN_LIMIT: usize = 4;

#[derive(Clone)]
struct Tuple {
    mask: Box<[u8]>,
    map: HashIndex,
    gkeys: Vec<u8>,
    chains: Vec<Vec<u32>>,
    free_groups: Vec<u32>,
    members: BTreeSet<(i32, u32)>,
    /// members that need verification (mask differs from the tuple's, or range check)
    impure: u32,
    /// number of one bits in `mask`
    bits: u32,
}

impl Tuple {
    fn best(&self) -> (i32, u32) {
        self.members
            .first()
            .copied()
            .unwrap_or((i32::MAX, u32::MAX))
    }

    #[inline(always)]
    fn gkey(&self, g: u32) -> &[u8] {
        let kb = self.mask.len();
        &self.gkeys[g as usize * kb..(g as usize + 1) * kb]
    }

    #[inline(always)]
    fn find_group(&self, key: &[u8]) -> Option<u32> {
        let h = hash_masked(key, &self.mask);
        self.map
            .find(h, |g| masked_eq(self.gkey(g), key, &self.mask))
    }

    fn chain_len(&self, key: &[u8]) -> usize {
        self.find_group(key)
            .map_or(0, |g| self.chains[g as usize].len())
    }

    fn memory_bytes(&self) -> usize {
        self.mask.len()
            + self.map.memory_bytes()
            + self.gkeys.capacity()
            + self.chains.capacity() * 24
            + self.chains.iter().map(|c| c.capacity() * 4).sum::<usize>()
            + self.members.len() * 16
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

fn subset(a: &[u8], b: &[u8]) -> bool {
    a.iter().zip(b).all(|(x, y)| x & !y == 0)
}

#[derive(Clone)]
pub(crate) struct Tss {
    kb: usize,
    /// (offset, nbytes, width) of every field
    fields: Vec<(usize, usize, u32)>,
    /// (offset, nbytes) of every range field
    range_fields: Vec<(usize, usize)>,
    rstride: usize,
    tuples: Vec<Tuple>,
    free_tuples: Vec<u32>,
    /// live tuples sorted by (best, id)
    order: Vec<u32>,
    /// per entry index
    prio: Vec<i32>,
    ent_tuple: Vec<u32>,
    ent_group: Vec<u32>,
    ent_check: Vec<bool>,
    evals: Vec<u8>,
    emasks: Vec<u8>,
    ranges: Vec<u8>,
}

impl Tss {
    pub(crate) fn new(
        kb: usize,
        fields: Vec<(usize, usize, u32)>,
        range_fields: Vec<(usize, usize)>,
    ) -> Self {
        let rstride = range_fields.iter().map(|(_, n)| 2 * n).sum();
        Tss {
            kb,
            fields,
            range_fields,
            rstride,
            tuples: Vec::new(),
            free_tuples: Vec::new(),
            order: Vec::new(),
            prio: Vec::new(),
            ent_tuple: Vec::new(),
            ent_group: Vec::new(),
            ent_check: Vec::new(),
            evals: Vec::new(),
            emasks: Vec::new(),
            ranges: Vec::new(),
        }
    }

    pub(crate) fn clear(&mut self) {
        *self = Tss::new(
            self.kb,
            std::mem::take(&mut self.fields),
            std::mem::take(&mut self.range_fields),
        );
    }

    pub(crate) fn num_tuples(&self) -> usize {
        self.order.len()
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.tuples.iter().map(Tuple::memory_bytes).sum::<usize>()
            + self.order.capacity() * 4
            + self.prio.capacity() * 13
            + self.evals.capacity()
            + self.emasks.capacity()
            + self.ranges.capacity()
    }

    fn tuple_key(&self, t: u32) -> (i32, u32, u32) {
        let (p, i) = self.tuples[t as usize].best();
        (p, i, t)
    }

    fn order_remove(&mut self, t: u32) {
        if let Some(pos) = self.order.iter().position(|x| *x == t) {
            self.order.remove(pos);
        }
    }

    fn order_insert(&mut self, t: u32) {
        let k = self.tuple_key(t);
        let pos = self.order.partition_point(|x| self.tuple_key(*x) < k);
        self.order.insert(pos, t);
    }

    #[inline(always)]
    fn ranges_ok(&self, e: u32, key: &[u8]) -> bool {
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
    fn verify(&self, e: u32, key: &[u8]) -> bool {
        let s = e as usize * self.kb;
        let (v, m) = (&self.evals[s..s + self.kb], &self.emasks[s..s + self.kb]);
        masked_eq(v, key, m) && (!self.ent_check[e as usize] || self.ranges_ok(e, key))
    }

    fn is_pure(&self, e: u32, t: u32) -> bool {
        let s = e as usize * self.kb;
        !self.ent_check[e as usize] && *self.tuples[t as usize].mask == self.emasks[s..s + self.kb]
    }

    /// Live tuples whose mask is a subset of `mask`, most specific first.
    fn compatible(&self, mask: &[u8]) -> Vec<u32> {
        let mut c: Vec<u32> = self
            .order
            .iter()
            .copied()
            .filter(|t| subset(&self.tuples[*t as usize].mask, mask))
            .collect();
        c.sort_by_key(|t| (std::cmp::Reverse(self.tuples[*t as usize].bits), *t));
        c
    }

    /// `mask` with each field's leading-ones prefix cut to `level`/4 of its
    /// length (bits after that prefix dropped); `level` 4 = `mask` itself.
    fn relax(&self, mask: &[u8], level: u32) -> Vec<u8> {
        if level >= 4 {
            return mask.to_vec();
        }
        let mut out = vec![0u8; mask.len()];
        for &(off, n, w) in &self.fields {
            let pad = (8 * n as u32).saturating_sub(w);
            let bit = |i: u32| mask[off + (i / 8) as usize] & (0x80 >> (i % 8)) != 0;
            let mut l = 0;
            while pad + l < 8 * n as u32 && bit(pad + l) {
                l += 1;
            }
            let keep = l * level / 4;
            for i in pad..pad + keep {
                out[off + (i / 8) as usize] |= 0x80 >> (i % 8);
            }
        }
        out
    }

    fn find_tuple(&self, mask: &[u8]) -> Option<u32> {
        self.order
            .iter()
            .copied()
            .find(|t| *self.tuples[*t as usize].mask == *mask)
    }

    /// Find an entry with the same index key for which `same(idx)` holds.
    pub(crate) fn find(&self, k: &TssKey, same: impl Fn(u32) -> bool) -> Option<u32> {
        for t in self.compatible(&k.mask) {
            let tu = &self.tuples[t as usize];
            if let Some(g) = tu.find_group(&k.value)
                && let Some(e) = tu.chains[g as usize].iter().copied().find(|e| same(*e))
            {
                return Some(e);
            }
        }
        None
    }

    fn new_tuple(&mut self, mask: Vec<u8>) -> u32 {
        let bits = mask.iter().map(|b| b.count_ones()).sum();
        let tu = Tuple {
            mask: mask.into_boxed_slice(),
            map: HashIndex::default(),
            gkeys: Vec::new(),
            chains: Vec::new(),
            free_groups: Vec::new(),
            members: BTreeSet::new(),
            impure: 0,
            bits,
        };
        if let Some(t) = self.free_tuples.pop() {
            self.tuples[t as usize] = tu;
            t
        } else {
            self.tuples.push(tu);
            (self.tuples.len() - 1) as u32
        }
    }

    /// Tuple for a new entry (see the module docs).
    fn choose_tuple(&mut self, k: &TssKey) -> u32 {
        for t in self.compatible(&k.mask) {
            if self.tuples[t as usize].chain_len(&k.value) < CHAIN_LIMIT {
                return t;
            }
        }
        for level in 1..=4 {
            let m = self.relax(&k.mask, level);
            match self.find_tuple(&m) {
                None => return self.new_tuple(m),
                Some(t) if level == 4 => return t,
                Some(_) => {}
            }
        }
        // unreachable: level 4 always returns
        self.new_tuple(k.mask.clone())
    }

    pub(crate) fn insert(&mut self, idx: u32, k: TssKey, prio: i32) {
        let i = idx as usize;
        let kb = self.kb;
        if self.prio.len() <= i {
            self.prio.resize(i + 1, 0);
            self.ent_tuple.resize(i + 1, 0);
            self.ent_group.resize(i + 1, 0);
            self.ent_check.resize(i + 1, false);
            self.evals.resize((i + 1) * kb, 0);
            self.emasks.resize((i + 1) * kb, 0);
            self.ranges.resize((i + 1) * self.rstride, 0);
        }
        self.prio[i] = prio;
        self.ent_check[i] = k.check;
        self.evals[i * kb..(i + 1) * kb].copy_from_slice(&k.value);
        self.emasks[i * kb..(i + 1) * kb].copy_from_slice(&k.mask);
        self.ranges[i * self.rstride..(i + 1) * self.rstride].copy_from_slice(&k.ranges);

        let t = self.choose_tuple(&k);
        self.order_remove(t);
        let pure = self.is_pure(idx, t);
        let prios = &self.prio;
        let tu = &mut self.tuples[t as usize];
        let g = match tu.find_group(&k.value) {
            Some(g) => g,
            None => {
                let g = if let Some(g) = tu.free_groups.pop() {
                    g
                } else {
                    tu.chains.push(Vec::new());
                    tu.gkeys.resize(tu.gkeys.len() + kb, 0);
                    (tu.chains.len() - 1) as u32
                };
                let gk: Vec<u8> = k
                    .value
                    .iter()
                    .zip(tu.mask.iter())
                    .map(|(a, b)| a & b)
                    .collect();
                tu.gkeys[g as usize * kb..(g as usize + 1) * kb].copy_from_slice(&gk);
                let (gkeys, map) = (&tu.gkeys, &mut tu.map);
                map.insert(hash_bytes(&gk), g, |x| {
                    hash_bytes(&gkeys[x as usize * kb..(x as usize + 1) * kb])
                });
                g
            }
        };
        let chain = &mut tu.chains[g as usize];
        let pos = chain.partition_point(|e| (prios[*e as usize], *e) < (prio, idx));
        chain.insert(pos, idx);
        tu.members.insert((prio, idx));
        if !pure {
            tu.impure += 1;
        }
        self.ent_tuple[i] = t;
        self.ent_group[i] = g;
        self.order_insert(t);
    }

    pub(crate) fn remove(&mut self, idx: u32) {
        let i = idx as usize;
        let (t, g, prio) = (self.ent_tuple[i], self.ent_group[i], self.prio[i]);
        let pure = self.is_pure(idx, t);
        self.order_remove(t);
        let tu = &mut self.tuples[t as usize];
        tu.members.remove(&(prio, idx));
        if !pure {
            tu.impure -= 1;
        }
        let chain = &mut tu.chains[g as usize];
        if let Some(pos) = chain.iter().position(|e| *e == idx) {
            chain.remove(pos);
        }
        if chain.is_empty() {
            let h = hash_bytes(tu.gkey(g));
            tu.map.remove(h, g);
            tu.chains[g as usize] = Vec::new();
            tu.free_groups.push(g);
        }
        if tu.members.is_empty() {
            self.tuples[t as usize] = Tuple {
                mask: Box::new([]),
                map: HashIndex::default(),
                gkeys: Vec::new(),
                chains: Vec::new(),
                free_groups: Vec::new(),
                members: BTreeSet::new(),
                impure: 0,
                bits: 0,
            };
            self.free_tuples.push(t);
        } else {
            self.order_insert(t);
        }
    }

    #[inline]
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<u32> {
        let mut best: Option<(i32, u32)> = None;
        for &t in &self.order {
            let tu = &self.tuples[t as usize];
            if best.is_some_and(|b| tu.best() >= b) {
                break;
            }
            let Some(g) = tu.find_group(key) else {
                continue;
            };
            let chain = &self.tuples[t as usize].chains[g as usize];
            let cand = if tu.impure == 0 {
                chain.first().copied()
            } else {
                chain
                    .iter()
                    .copied()
                    .take_while(|e| best.is_none_or(|b| (self.prio[*e as usize], *e) < b))
                    .find(|e| self.verify(*e, key))
            };
            if let Some(e) = cand {
                let c = (self.prio[e as usize], e);
                if best.is_none_or(|b| c < b) {
                    best = Some(c);
                }
            }
        }
        best.map(|b| b.1)
    }
}
