//! Property tests: every table kind against a naive linear-scan model of
//! bmv2's rules (normalisation, duplicates, handles, priorities, LPM).
#![allow(clippy::unwrap_used)]

use p4jet_tables::{
    CacheMode, EntryHandle, FieldMatch, KeyFieldSpec, MatchKey, MatchKind, Table, TableError,
};
use proptest::prelude::*;

// ---------------------------------------------------------------- rng

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

// ---------------------------------------------------------------- model

fn nbytes(s: &KeyFieldSpec) -> usize {
    if s.kind == MatchKind::Valid {
        1
    } else {
        s.bit_width.div_ceil(8) as usize
    }
}

fn width(s: &KeyFieldSpec) -> u32 {
    if s.kind == MatchKind::Valid {
        8
    } else {
        s.bit_width
    }
}

fn byte0(w: u32) -> u8 {
    if w.is_multiple_of(8) {
        0xff
    } else {
        (1u8 << (w % 8)) - 1
    }
}

/// mask with `len` leading ones over `n` bytes (bmv2: counted from the MSB of
/// the byte-padded field)
fn pmask(len: u32, n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| {
            let bits = len as i64 - 8 * i as i64;
            if bits >= 8 {
                0xff
            } else if bits <= 0 {
                0
            } else {
                0xffu8 << (8 - bits)
            }
        })
        .collect()
}

fn and(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.iter().zip(b).map(|(x, y)| x & y).collect()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Exact,
    Lpm,
    Ternary,
    Range,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Err {
    Bad,
    Dup,
    Full,
    Invalid,
    Expired,
}

fn err_kind(e: &TableError) -> Err {
    match e {
        TableError::BadMatchKey(_) => Err::Bad,
        TableError::DuplicateEntry => Err::Dup,
        TableError::TableFull => Err::Full,
        TableError::InvalidHandle => Err::Invalid,
        TableError::ExpiredHandle => Err::Expired,
        other => panic!("unexpected error {other:?}"),
    }
}

struct Model {
    specs: Vec<KeyFieldSpec>,
    kind: Kind,
    max: usize,
    slots: Vec<(u8, Option<(MatchKey, u32)>)>,
}

impl Model {
    fn new(specs: Vec<KeyFieldSpec>, max: usize) -> Self {
        let has = |k| specs.iter().any(|s| s.kind == k);
        let kind = if has(MatchKind::Range) {
            Kind::Range
        } else if has(MatchKind::Ternary) {
            Kind::Ternary
        } else if has(MatchKind::Lpm) {
            Kind::Lpm
        } else {
            Kind::Exact
        };
        Model {
            specs,
            kind,
            max,
            slots: vec![],
        }
    }

    fn masked_kind(&self) -> bool {
        matches!(self.kind, Kind::Ternary | Kind::Range)
    }

    fn norm(&self, k: &MatchKey) -> Result<MatchKey, Err> {
        if k.fields.len() != self.specs.len() {
            return Err(Err::Bad);
        }
        let mut out = vec![];
        for (s, f) in self.specs.iter().zip(&k.fields) {
            let n = nbytes(s);
            let w = width(s);
            let fix = |v: &[u8]| {
                let mut v = v.to_vec();
                v[0] &= byte0(w);
                v
            };
            out.push(match (s.kind, f) {
                (MatchKind::Exact, FieldMatch::Exact(v)) if v.len() == n => {
                    FieldMatch::Exact(fix(v))
                }
                (MatchKind::Valid, FieldMatch::Valid(b)) => FieldMatch::Valid(*b),
                (MatchKind::Lpm, FieldMatch::Lpm { value, prefix_len })
                    if value.len() == n && *prefix_len <= w =>
                {
                    let mut v = fix(value);
                    if self.masked_kind() {
                        v = and(&v, &pmask(*prefix_len, n));
                    }
                    FieldMatch::Lpm {
                        value: v,
                        prefix_len: *prefix_len,
                    }
                }
                (MatchKind::Ternary, FieldMatch::Ternary { value, mask })
                    if value.len() == n && mask.len() == n =>
                {
                    FieldMatch::Ternary {
                        value: and(&fix(value), mask),
                        mask: mask.clone(),
                    }
                }
                (MatchKind::Range, FieldMatch::Range { low, high })
                    if low.len() == n && high.len() == n && low <= high =>
                {
                    FieldMatch::Range {
                        low: fix(low),
                        high: high.clone(),
                    }
                }
                _ => return Err(Err::Bad),
            });
        }
        Ok(MatchKey {
            fields: out,
            priority: if self.masked_kind() { k.priority } else { -1 },
        })
    }

    fn same(&self, a: &MatchKey, b: &MatchKey) -> bool {
        match self.kind {
            Kind::Exact => a.fields == b.fields,
            Kind::Lpm => a.fields.iter().zip(&b.fields).all(|(x, y)| match (x, y) {
                (
                    FieldMatch::Lpm {
                        value: v1,
                        prefix_len: l1,
                    },
                    FieldMatch::Lpm {
                        value: v2,
                        prefix_len: l2,
                    },
                ) => l1 == l2 && and(v1, &pmask(*l1, v1.len())) == and(v2, &pmask(*l2, v2.len())),
                _ => x == y,
            }),
            Kind::Ternary | Kind::Range => a == b,
        }
    }

    fn find_idx(&self, nk: &MatchKey) -> Option<usize> {
        self.slots
            .iter()
            .position(|(_, e)| e.as_ref().is_some_and(|(k, _)| self.same(k, nk)))
    }

    fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.1.is_some()).count()
    }

    fn handle(&self, i: usize) -> EntryHandle {
        (u32::from(self.slots[i].0) << 24) | i as u32
    }

    fn insert(&mut self, k: &MatchKey, v: u32) -> Result<EntryHandle, Err> {
        let nk = self.norm(k)?;
        if self.find_idx(&nk).is_some() {
            return Err(Err::Dup);
        }
        if self.len() >= self.max {
            return Err(Err::Full);
        }
        let i = match self.slots.iter().position(|s| s.1.is_none()) {
            Some(i) => i,
            None => {
                self.slots.push((0, None));
                self.slots.len() - 1
            }
        };
        self.slots[i].1 = Some((nk, v));
        Ok(self.handle(i))
    }

    fn check(&self, h: EntryHandle) -> Result<usize, Err> {
        let i = (h & 0xff_ffff) as usize;
        match self.slots.get(i) {
            Some((ver, Some(_))) => {
                if u32::from(*ver) == h >> 24 {
                    Ok(i)
                } else {
                    Err(Err::Expired)
                }
            }
            _ => Err(Err::Invalid),
        }
    }

    fn delete(&mut self, h: EntryHandle) -> Result<(), Err> {
        let i = self.check(h)?;
        self.slots[i].1 = None;
        self.slots[i].0 = self.slots[i].0.wrapping_add(1);
        Ok(())
    }

    fn modify(&mut self, h: EntryHandle, v: u32) -> Result<(), Err> {
        let i = self.check(h)?;
        if let Some(e) = &mut self.slots[i].1 {
            e.1 = v;
        }
        Ok(())
    }

    fn field_matches(&self, s: &KeyFieldSpec, f: &FieldMatch, k: &[u8]) -> bool {
        match f {
            FieldMatch::Exact(v) => k == &v[..],
            FieldMatch::Valid(b) => k == [u8::from(*b)],
            FieldMatch::Lpm { value, prefix_len } => {
                let m = pmask(*prefix_len, nbytes(s));
                and(k, &m) == and(value, &m)
            }
            FieldMatch::Ternary { value, mask } => and(k, mask) == *value,
            FieldMatch::Range { low, high } => &low[..] <= k && k <= &high[..],
        }
    }

    fn matches(&self, nk: &MatchKey, key: &[u8]) -> bool {
        let mut off = 0;
        for (s, f) in self.specs.iter().zip(&nk.fields) {
            let n = nbytes(s);
            if !self.field_matches(s, f, &key[off..off + n]) {
                return false;
            }
            off += n;
        }
        true
    }

    fn lookup(&self, key: &[u8]) -> Option<(EntryHandle, u32)> {
        let mut best: Option<(i64, usize)> = None; // (score: lower is better, idx)
        for (i, (_, e)) in self.slots.iter().enumerate() {
            let Some((k, _)) = e else { continue };
            if !self.matches(k, key) {
                continue;
            }
            let score = match self.kind {
                Kind::Exact => 0,
                Kind::Lpm => {
                    -(k.fields
                        .iter()
                        .map(|f| match f {
                            FieldMatch::Lpm { prefix_len, .. } => i64::from(*prefix_len),
                            _ => 0,
                        })
                        .sum::<i64>())
                }
                Kind::Ternary | Kind::Range => i64::from(k.priority),
            };
            if best.is_none_or(|(s, _)| score < s) {
                best = Some((score, i));
            }
        }
        best.map(|(_, i)| (self.handle(i), self.slots[i].1.as_ref().map_or(0, |e| e.1)))
    }
}

// ---------------------------------------------------------------- generators

struct Gen {
    specs: Vec<KeyFieldSpec>,
    bases: Vec<Vec<Vec<u8>>>,
    masks: Vec<Vec<Vec<u8>>>,
}

impl Gen {
    fn new(specs: &[KeyFieldSpec], rng: &mut Rng) -> Self {
        let bases = specs
            .iter()
            .map(|s| {
                (0..4)
                    .map(|_| fix_width(rng.bytes(nbytes(s)), width(s)))
                    .collect()
            })
            .collect();
        let masks = specs
            .iter()
            .map(|s| (0..3).map(|_| rng.bytes(nbytes(s))).collect())
            .collect();
        Gen {
            specs: specs.to_vec(),
            bases,
            masks,
        }
    }

    fn value(&self, i: usize, rng: &mut Rng) -> Vec<u8> {
        let s = &self.specs[i];
        let n = nbytes(s);
        let mut v = if rng.chance(75) {
            self.bases[i][rng.below(4) as usize].clone()
        } else {
            rng.bytes(n)
        };
        if rng.chance(40) && n > 0 {
            let last = n - 1;
            v[last] ^= (rng.next() as u8) & 0x7;
        }
        if rng.chance(15) && n > 1 {
            let j = rng.below(n as u64) as usize;
            v[j] = rng.next() as u8;
        }
        if !rng.chance(10) {
            v = fix_width(v, width(s));
        }
        v
    }

    fn field(&self, i: usize, rng: &mut Rng) -> FieldMatch {
        let s = &self.specs[i];
        let n = nbytes(s);
        let w = width(s);
        match s.kind {
            MatchKind::Exact => FieldMatch::Exact(self.value(i, rng)),
            MatchKind::Valid => FieldMatch::Valid(rng.chance(50)),
            MatchKind::Lpm => {
                let prefix_len = match rng.below(4) {
                    0 => [0, w, w / 2, w.saturating_sub(1)][rng.below(4) as usize],
                    _ => rng.below(u64::from(w) + 1) as u32,
                };
                FieldMatch::Lpm {
                    value: self.value(i, rng),
                    prefix_len,
                }
            }
            MatchKind::Ternary => {
                let mask = match rng.below(6) {
                    0 => fix_width(vec![0xff; n], w),
                    1 => vec![0; n],
                    2 => pmask(rng.below(u64::from(w) + 1) as u32, n),
                    3 => rng.bytes(n),
                    _ => self.masks[i][rng.below(3) as usize].clone(),
                };
                FieldMatch::Ternary {
                    value: self.value(i, rng),
                    mask,
                }
            }
            MatchKind::Range => {
                let max = fix_width(vec![0xff; n], w);
                let (low, high) = match rng.below(6) {
                    0 => (vec![0; n], max),
                    1 => {
                        let v = self.value(i, rng);
                        (v.clone(), v)
                    }
                    2 => {
                        // aligned block
                        let v = self.value(i, rng);
                        let l = rng.below(u64::from(w) + 1) as u32;
                        let m = pmask(l + (8 * n as u32 - w), n);
                        let lo = and(&v, &m);
                        let hi: Vec<u8> = lo.iter().zip(&m).map(|(a, b)| a | !b).collect();
                        (lo, fix_width(hi, w))
                    }
                    3 => (vec![0; n], vec![0xff; n]),
                    _ => {
                        let a = self.value(i, rng);
                        let b = self.value(i, rng);
                        if a <= b { (a, b) } else { (b, a) }
                    }
                };
                FieldMatch::Range { low, high }
            }
        }
    }

    fn key(&self, rng: &mut Rng) -> MatchKey {
        let fields = (0..self.specs.len()).map(|i| self.field(i, rng)).collect();
        let priority = if rng.chance(10) {
            -(rng.below(3) as i32)
        } else {
            rng.below(8) as i32
        };
        MatchKey { fields, priority }
    }

    fn bad_key(&self, rng: &mut Rng) -> MatchKey {
        let mut k = self.key(rng);
        let i = rng.below(self.specs.len() as u64) as usize;
        match rng.below(3) {
            0 => {
                k.fields.pop();
            }
            1 => {
                k.fields[i] = match &k.fields[i] {
                    FieldMatch::Exact(v) => FieldMatch::Exact([v.clone(), vec![0]].concat()),
                    FieldMatch::Valid(_) => FieldMatch::Exact(vec![1]),
                    FieldMatch::Lpm { value, .. } => FieldMatch::Lpm {
                        value: value.clone(),
                        prefix_len: width(&self.specs[i]) + 1,
                    },
                    FieldMatch::Ternary { value, .. } => FieldMatch::Ternary {
                        value: value.clone(),
                        mask: vec![],
                    },
                    FieldMatch::Range { .. } => {
                        let n = nbytes(&self.specs[i]);
                        FieldMatch::Range {
                            low: vec![0xff; n],
                            high: vec![0; n],
                        }
                    }
                }
            }
            _ => {
                // wrong kind
                k.fields[i] = match &k.fields[i] {
                    FieldMatch::Valid(_) => FieldMatch::Ternary {
                        value: vec![0],
                        mask: vec![0],
                    },
                    _ => FieldMatch::Valid(true),
                };
            }
        }
        k
    }

    /// A lookup key: mostly near existing entries.
    fn lookup_key(&self, model: &Model, rng: &mut Rng) -> Vec<u8> {
        let entries: Vec<&MatchKey> = model
            .slots
            .iter()
            .filter_map(|s| s.1.as_ref().map(|e| &e.0))
            .collect();
        let near = if !entries.is_empty() && rng.chance(70) {
            Some(entries[rng.below(entries.len() as u64) as usize])
        } else {
            None
        };
        let mut out = vec![];
        for (i, s) in self.specs.iter().enumerate() {
            let n = nbytes(s);
            let w = width(s);
            let mut v = match near.map(|k| &k.fields[i]) {
                Some(FieldMatch::Exact(v)) | Some(FieldMatch::Lpm { value: v, .. }) => v.clone(),
                Some(FieldMatch::Ternary { value, .. }) => value.clone(),
                Some(FieldMatch::Range { low, high }) => match rng.below(6) {
                    0 | 1 => low.clone(),
                    2 | 3 => high.clone(),
                    // just outside the bounds
                    4 => step_be(low, false),
                    _ => step_be(high, true),
                },
                Some(FieldMatch::Valid(b)) => vec![u8::from(*b)],
                None => self.value(i, rng),
            };
            if s.kind == MatchKind::Valid {
                if rng.chance(20) {
                    v = vec![rng.below(2) as u8];
                }
            } else if rng.chance(40) && n > 0 {
                let j = rng.below(n as u64) as usize;
                v[j] ^= 1 << rng.below(8);
            }
            if s.kind != MatchKind::Valid {
                v = fix_width(v, w);
            }
            out.extend(v);
        }
        out
    }
}

/// `v + 1` (`up`) or `v - 1` as a big-endian number, wrapping.
fn step_be(v: &[u8], up: bool) -> Vec<u8> {
    let mut v = v.to_vec();
    for b in v.iter_mut().rev() {
        let (x, carry) = if up {
            b.overflowing_add(1)
        } else {
            b.overflowing_sub(1)
        };
        *b = x;
        if !carry {
            break;
        }
    }
    v
}

fn fix_width(mut v: Vec<u8>, w: u32) -> Vec<u8> {
    if let Some(b) = v.first_mut() {
        *b &= byte0(w);
    }
    v
}

// ---------------------------------------------------------------- driver

fn spec(kind: MatchKind, bit_width: u32) -> KeyFieldSpec {
    KeyFieldSpec { kind, bit_width }
}

/// Every sequence runs with the default lookup cache (on once a ternary/range
/// table has enough tuples) and with a 2-set cache that is always on (keys
/// evict each other all the time; every write must invalidate it).
fn run(specs: &[KeyFieldSpec], max: usize, seed: u64, ops: &[u8]) {
    run_with(specs, max, seed, ops, CacheMode::Auto);
    if specs
        .iter()
        .any(|s| matches!(s.kind, MatchKind::Ternary | MatchKind::Range))
    {
        run_with(specs, max, seed, ops, CacheMode::On(2));
    }
}

fn run_with(specs: &[KeyFieldSpec], max: usize, seed: u64, ops: &[u8], mode: CacheMode) {
    let mut rng = Rng(seed);
    let g = Gen::new(specs, &mut rng);
    let mut t: Table<u32> = Table::new(specs.to_vec(), max).unwrap();
    t.set_cache_mode(mode);
    let mut model = Model::new(specs.to_vec(), max);
    let mut twin = t.clone();
    let mut handles: Vec<EntryHandle> = vec![];
    let mut next_val = 0u32;
    let kb = t.key_bytes();
    for (step, op) in ops.iter().enumerate() {
        match op % 16 {
            0..=6 => {
                let k = if rng.chance(5) {
                    g.bad_key(&mut rng)
                } else {
                    g.key(&mut rng)
                };
                next_val += 1;
                let r = t.insert(k.clone(), next_val).map_err(|e| err_kind(&e));
                let r2 = twin.insert(k.clone(), next_val).map_err(|e| err_kind(&e));
                let m = model.insert(&k, next_val);
                assert_eq!(r, m, "step {step}: insert {k:?}");
                assert_eq!(r, r2);
                if let Ok(h) = r {
                    handles.push(h);
                    // the stored key is bmv2's normalisation
                    let nk = model.norm(&k).unwrap();
                    assert_eq!(
                        t.get(h).map(|(k, v)| (k.into_owned(), *v)),
                        Some((nk, next_val))
                    );
                }
            }
            7 | 8 => {
                let h = if !handles.is_empty() && rng.chance(85) {
                    handles[rng.below(handles.len() as u64) as usize]
                } else {
                    rng.below(8) as u32 | ((rng.below(2) as u32) << 24)
                };
                let r = t.delete(h).map_err(|e| err_kind(&e));
                let r2 = twin.delete(h).map_err(|e| err_kind(&e));
                let m = model.delete(h);
                assert_eq!(r, m, "step {step}: delete {h:#x}");
                assert_eq!(r, r2);
            }
            9 => {
                if let Some(&h) = handles.last() {
                    next_val += 1;
                    let r = t.modify(h, next_val).map_err(|e| err_kind(&e));
                    let _ = twin.modify(h, next_val);
                    assert_eq!(r, model.modify(h, next_val), "step {step}: modify");
                }
            }
            10 => {
                if rng.chance(30) {
                    t.clear();
                    twin.clear();
                    model.slots.clear();
                    handles.clear();
                }
            }
            _ => {
                // batches up to beyond the 64-key pipelines, at any stage size
                let n = if rng.chance(10) {
                    1 + rng.below(150) as usize
                } else {
                    1 + rng.below(20) as usize
                };
                t.set_prefetch_distance(1 + rng.below(64) as usize);
                let mut keys = vec![];
                for _ in 0..n {
                    let k = g.lookup_key(&model, &mut rng);
                    assert_eq!(k.len(), kb);
                    let r = t.lookup(&k).map(|(h, v)| (h, *v));
                    assert_eq!(r, model.lookup(&k), "step {step}: lookup {k:02x?}");
                    assert_eq!(r, twin.lookup(&k).map(|(h, v)| (h, *v)));
                    keys.extend(k);
                }
                let mut out = vec![None; n + 2];
                t.lookup_batch(&keys, &mut out);
                for i in 0..n {
                    let single = t.lookup(&keys[i * kb..(i + 1) * kb]);
                    assert_eq!(out[i].map(|(h, v)| (h, *v)), single.map(|(h, v)| (h, *v)));
                }
                assert!(out[n].is_none() && out[n + 1].is_none());
                // keys followed by other bytes (the engine's scratch room, which
                // lookups may read as whole words): `out` bounds the count
                let mut tail = keys.clone();
                let extra = 1 + rng.below(16 + kb as u64) as usize;
                tail.extend((0..extra).map(|_| rng.below(256) as u8));
                let mut out2 = vec![None; n];
                t.lookup_batch(&tail, &mut out2);
                for i in 0..n {
                    assert_eq!(
                        out2[i].map(|(h, v)| (h, *v)),
                        out[i].map(|(h, v)| (h, *v)),
                        "step {step}: batch with trailing bytes, key {i}"
                    );
                }
            }
        }
        assert_eq!(t.len(), model.len(), "step {step}: len");
    }
    // final: iteration, get and find agree with the model
    let got: Vec<(EntryHandle, MatchKey, u32)> =
        t.iter().map(|(h, k, v)| (h, k.into_owned(), *v)).collect();
    let want: Vec<(EntryHandle, MatchKey, u32)> = model
        .slots
        .iter()
        .enumerate()
        .filter_map(|(i, (_, e))| e.as_ref().map(|(k, v)| (model.handle(i), k.clone(), *v)))
        .collect();
    assert_eq!(got, want);
    for (h, k, _) in &want {
        assert_eq!(t.find(k), Some(*h));
        assert_eq!(twin.find(k), Some(*h));
    }
}

/// Operation bytes (see `run_with`) with about as many deletes as inserts,
/// so that a table of at most 12 entries keeps crossing the small-table
/// threshold (8 entries) both ways.
fn small_ops() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            3 => 0u8..7,
            3 => 7u8..9,
            1 => Just(9u8),
            1 => Just(10u8),
            4 => 11u8..16,
        ],
        1..300,
    )
}

fn cfg() -> ProptestConfig {
    // PROPTEST_CASES overrides the default of 96 cases per property
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(96),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn exact(seed: u64, ops in prop::collection::vec(any::<u8>(), 1..250)) {
        run(&[spec(MatchKind::Exact, 12), spec(MatchKind::Valid, 1), spec(MatchKind::Exact, 48)], 64, seed, &ops);
        // keys of one or two bytes: the direct array
        run(&[spec(MatchKind::Exact, 9)], 12, seed, &ops);
        run(&[spec(MatchKind::Exact, 16)], 64, seed, &ops);
        run(&[spec(MatchKind::Exact, 4)], 12, seed, &ops);
        run(&[spec(MatchKind::Valid, 1), spec(MatchKind::Exact, 8)], 64, seed, &ops);
        // keys of three to eight bytes: word keys
        run(&[spec(MatchKind::Exact, 12), spec(MatchKind::Exact, 12)], 64, seed, &ops);
        run(&[spec(MatchKind::Exact, 32)], 64, seed, &ops);
        run(&[spec(MatchKind::Exact, 48)], 64, seed, &ops);
        run(&[spec(MatchKind::Valid, 1), spec(MatchKind::Exact, 48)], 64, seed, &ops);
        run(&[spec(MatchKind::Exact, 64)], 64, seed, &ops);
    }

    #[test]
    fn lpm_narrow(seed: u64, ops in prop::collection::vec(any::<u8>(), 1..250)) {
        run(&[spec(MatchKind::Lpm, 32)], 64, seed, &ops);
        run(&[spec(MatchKind::Lpm, 20)], 64, seed, &ops);
        run(&[spec(MatchKind::Lpm, 9)], 64, seed, &ops);
    }

    #[test]
    fn lpm_128(seed: u64, ops in prop::collection::vec(any::<u8>(), 1..250)) {
        run(&[spec(MatchKind::Lpm, 128)], 64, seed, &ops);
        run(&[spec(MatchKind::Lpm, 44)], 64, seed, &ops);
    }

    #[test]
    fn lpm_exact(seed: u64, ops in prop::collection::vec(any::<u8>(), 1..250)) {
        run(&[spec(MatchKind::Exact, 12), spec(MatchKind::Lpm, 32)], 64, seed, &ops);
        run(&[spec(MatchKind::Lpm, 128), spec(MatchKind::Valid, 1), spec(MatchKind::Exact, 8)], 64, seed, &ops);
    }

    #[test]
    fn ternary(seed: u64, ops in prop::collection::vec(any::<u8>(), 1..250)) {
        run(&[spec(MatchKind::Ternary, 32), spec(MatchKind::Exact, 8), spec(MatchKind::Lpm, 16), spec(MatchKind::Ternary, 12)], 64, seed, &ops);
        run(&[spec(MatchKind::Ternary, 3)], 16, seed, &ops);
    }

    #[test]
    fn range(seed: u64, ops in prop::collection::vec(any::<u8>(), 1..250)) {
        run(&[spec(MatchKind::Range, 16), spec(MatchKind::Range, 12)], 64, seed, &ops);
        run(&[spec(MatchKind::Range, 4)], 64, seed, &ops);
        // one range field in small tables (interval lookup of batches):
        // src_port_filter's shape, and a 64-bit field (no value after its top)
        run(&[spec(MatchKind::Exact, 8), spec(MatchKind::Range, 16)], 64, seed, &ops);
        run(&[spec(MatchKind::Range, 64)], 64, seed, &ops);
    }

    #[test]
    fn range_layouts(seed: u64, ops in prop::collection::vec(any::<u8>(), 1..250)) {
        // a range field across two key words; a range wider than 8 bytes; three
        // range fields (the small-table scans' fixed and general paths)
        run(&[spec(MatchKind::Ternary, 48), spec(MatchKind::Range, 32)], 64, seed, &ops);
        run(&[spec(MatchKind::Range, 72), spec(MatchKind::Exact, 8)], 64, seed, &ops);
        run(&[spec(MatchKind::Range, 8), spec(MatchKind::Range, 7), spec(MatchKind::Range, 8),
              spec(MatchKind::Exact, 16)], 64, seed, &ops);
    }

    #[test]
    fn small_tables(seed: u64, ops in small_ops()) {
        // bit-vector lookups of small tables (one lane per range field of at
        // most 2 bytes and per masked byte of the other fields, at most 4
        // lanes), around the 8-entry threshold: port_class's and
        // src_port_filter's shapes, padding above a field's width, two
        // 16-bit range lanes, ternary lanes, and shapes that keep the scan
        // (5 lanes, a 3-byte range field)
        run(&[spec(MatchKind::Range, 16)], 12, seed, &ops);
        run(&[spec(MatchKind::Exact, 8), spec(MatchKind::Range, 16)], 12, seed, &ops);
        run(&[spec(MatchKind::Range, 16), spec(MatchKind::Ternary, 8)], 12, seed, &ops);
        run(&[spec(MatchKind::Range, 9)], 12, seed, &ops);
        run(&[spec(MatchKind::Range, 4)], 12, seed, &ops);
        run(&[spec(MatchKind::Range, 8), spec(MatchKind::Range, 16), spec(MatchKind::Exact, 8)], 12, seed, &ops);
        run(&[spec(MatchKind::Range, 16), spec(MatchKind::Range, 16)], 12, seed, &ops);
        run(&[spec(MatchKind::Ternary, 24), spec(MatchKind::Valid, 1)], 12, seed, &ops);
        run(&[spec(MatchKind::Lpm, 16), spec(MatchKind::Range, 12)], 12, seed, &ops);
        run(&[spec(MatchKind::Ternary, 32), spec(MatchKind::Exact, 8)], 12, seed, &ops);
        run(&[spec(MatchKind::Range, 24), spec(MatchKind::Ternary, 3)], 12, seed, &ops);
    }

    #[test]
    fn mixed(seed: u64, ops in prop::collection::vec(any::<u8>(), 1..250)) {
        run(&[spec(MatchKind::Ternary, 32), spec(MatchKind::Range, 16), spec(MatchKind::Exact, 8),
              spec(MatchKind::Lpm, 24), spec(MatchKind::Valid, 1)], 64, seed, &ops);
    }
}

/// Deterministic seed sweep over every table kind (`SWEEP_SEEDS=n` for more);
/// seed 319 once exposed an endless probe in the hash index.
#[test]
fn deterministic_sweep() {
    let n: u64 = std::env::var("SWEEP_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    let kinds: Vec<Vec<KeyFieldSpec>> = vec![
        vec![
            spec(MatchKind::Exact, 12),
            spec(MatchKind::Valid, 1),
            spec(MatchKind::Exact, 48),
        ],
        vec![spec(MatchKind::Lpm, 20)],
        vec![spec(MatchKind::Lpm, 128), spec(MatchKind::Exact, 8)],
        vec![
            spec(MatchKind::Ternary, 16),
            spec(MatchKind::Range, 12),
            spec(MatchKind::Lpm, 8),
        ],
    ];
    for seed in 0..n {
        let mut r = Rng(seed ^ 0xdead);
        let len = 1 + r.below(250) as usize;
        let ops: Vec<u8> = (0..len).map(|_| r.next() as u8).collect();
        run(&kinds[0], 64, seed, &ops);
        run(&[spec(MatchKind::Exact, 9)], 12, seed, &ops);
        if seed % 4 == 0 {
            for k in &kinds[1..] {
                run(k, 32, seed, &ops);
            }
        }
    }
}
