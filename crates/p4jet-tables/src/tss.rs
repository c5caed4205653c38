//! Tuple-space search for ternary and range tables.
//!
//! Entries are grouped into tuples by their mask over the packed key. Within a
//! tuple a hash index maps `key & mask` to a chain of entries sorted by
//! (priority, entry index), which is bmv2's order: smallest priority wins, ties
//! go to the lowest handle. Tuples are kept sorted by their best (priority,
//! index); a lookup visits them in that order and stops as soon as the next
//! tuple's best cannot beat the match already found.
//!
//! Range fields: a range that is exactly one aligned power-of-two block (a
//! single value, the full range, or any prefix-shaped range) is turned into a
//! mask and costs nothing extra. Any other range makes its entry part of a
//! "checked" tuple where the range fields are left out of the hash (mask 0)
//! and every candidate of the chain is checked against its bounds, in priority
//! order, stopping at the first one that matches. This keeps exact semantics
//! without the entry blow-up of range-to-prefix expansion (a 16-bit range can
//! need 30 prefixes, two such fields 900 entries); the price is a scan of the
//! chain of entries that share the same non-range key and mask.

use std::collections::{BTreeMap, BTreeSet};

use crate::hash::{HashIndex, hash_bytes, hash_masked, masked_eq};

#[derive(Clone)]
struct Tuple {
    mask: Box<[u8]>,
    check: bool,
    map: HashIndex,
    gkeys: Vec<u8>,
    chains: Vec<Vec<u32>>,
    free_groups: Vec<u32>,
    members: BTreeSet<(i32, u32)>,
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

#[derive(Clone)]
pub(crate) struct Tss {
    kb: usize,
    /// (offset, nbytes) of every range field
    range_fields: Vec<(usize, usize)>,
    rstride: usize,
    tuples: Vec<Tuple>,
    tuple_ids: BTreeMap<(Box<[u8]>, bool), u32>,
    free_tuples: Vec<u32>,
    /// non-empty tuples sorted by (best, id)
    order: Vec<u32>,
    /// per entry index
    prio: Vec<i32>,
    ent_tuple: Vec<u32>,
    ent_group: Vec<u32>,
    ranges: Vec<u8>,
}

impl Tss {
    pub(crate) fn new(kb: usize, range_fields: Vec<(usize, usize)>) -> Self {
        let rstride = range_fields.iter().map(|(_, n)| 2 * n).sum();
        Tss {
            kb,
            range_fields,
            rstride,
            tuples: Vec::new(),
            tuple_ids: BTreeMap::new(),
            free_tuples: Vec::new(),
            order: Vec::new(),
            prio: Vec::new(),
            ent_tuple: Vec::new(),
            ent_group: Vec::new(),
            ranges: Vec::new(),
        }
    }

    pub(crate) fn clear(&mut self) {
        *self = Tss::new(self.kb, std::mem::take(&mut self.range_fields));
    }

    pub(crate) fn num_tuples(&self) -> usize {
        self.order.len()
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.tuples.iter().map(Tuple::memory_bytes).sum::<usize>()
            + self.tuple_ids.len() * (self.kb + 48)
            + self.order.capacity() * 4
            + self.prio.capacity() * 12
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

    /// Find an entry with the same index key for which `same(idx)` holds.
    pub(crate) fn find(&self, k: &TssKey, same: impl Fn(u32) -> bool) -> Option<u32> {
        let t = *self
            .tuple_ids
            .get(&(k.mask.clone().into_boxed_slice(), k.check))?;
        let tu = &self.tuples[t as usize];
        let g = tu.find_group(&k.value)?;
        tu.chains[g as usize].iter().copied().find(|e| same(*e))
    }

    pub(crate) fn insert(&mut self, idx: u32, k: TssKey, prio: i32) {
        let i = idx as usize;
        if self.prio.len() <= i {
            self.prio.resize(i + 1, 0);
            self.ent_tuple.resize(i + 1, 0);
            self.ent_group.resize(i + 1, 0);
            self.ranges.resize((i + 1) * self.rstride, 0);
        }
        self.prio[i] = prio;
        self.ranges[i * self.rstride..(i + 1) * self.rstride].copy_from_slice(&k.ranges);

        let tkey = (k.mask.into_boxed_slice(), k.check);
        let t = match self.tuple_ids.get(&tkey) {
            Some(t) => {
                let t = *t;
                self.order_remove(t);
                t
            }
            None => {
                let tu = Tuple {
                    mask: tkey.0.clone(),
                    check: k.check,
                    map: HashIndex::default(),
                    gkeys: Vec::new(),
                    chains: Vec::new(),
                    free_groups: Vec::new(),
                    members: BTreeSet::new(),
                };
                let t = if let Some(t) = self.free_tuples.pop() {
                    self.tuples[t as usize] = tu;
                    t
                } else {
                    self.tuples.push(tu);
                    (self.tuples.len() - 1) as u32
                };
                self.tuple_ids.insert(tkey, t);
                t
            }
        };
        let kb = self.kb;
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
                tu.gkeys[g as usize * kb..(g as usize + 1) * kb].copy_from_slice(&k.value);
                let (gkeys, map) = (&tu.gkeys, &mut tu.map);
                map.insert(hash_bytes(&k.value), g, |x| {
                    hash_bytes(&gkeys[x as usize * kb..(x as usize + 1) * kb])
                });
                g
            }
        };
        let chain = &mut tu.chains[g as usize];
        let pos = chain.partition_point(|e| (prios[*e as usize], *e) < (prio, idx));
        chain.insert(pos, idx);
        tu.members.insert((prio, idx));
        self.ent_tuple[i] = t;
        self.ent_group[i] = g;
        self.order_insert(t);
    }

    pub(crate) fn remove(&mut self, idx: u32) {
        let i = idx as usize;
        let (t, g, prio) = (self.ent_tuple[i], self.ent_group[i], self.prio[i]);
        self.order_remove(t);
        let tu = &mut self.tuples[t as usize];
        tu.members.remove(&(prio, idx));
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
            let key = (tu.mask.clone(), tu.check);
            self.tuple_ids.remove(&key);
            self.tuples[t as usize].chains = Vec::new();
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
            let tb = tu.best();
            if best.is_some_and(|b| tb >= b) {
                break;
            }
            let Some(g) = tu.find_group(key) else {
                continue;
            };
            let chain = &tu.chains[g as usize];
            let cand = if !tu.check {
                chain.first().copied()
            } else {
                chain.iter().copied().find(|e| self.ranges_ok(*e, key))
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
