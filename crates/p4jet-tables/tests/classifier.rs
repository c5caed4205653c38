//! The ternary/range classifier at scale against a naive priority scan:
//! ClassBench-shaped rule sets (clustered prefixes, wildcards, protocol
//! wildcards, port ranges and exact ports), duplicated matches with other
//! priorities, equal priorities (ties go to the lowest handle index),
//! deletes and re-inserts, lookups one by one and batched, keys uniformly
//! random and drawn from the rules, cache on and off.
#![allow(clippy::unwrap_used)]

use p4jet_tables::{CacheMode, EntryHandle, FieldMatch, KeyFieldSpec, MatchKey, MatchKind, Table};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Rule {
    src: (u32, u32),
    dst: (u32, u32),
    proto: (u8, u8),
    sport: (u16, u16),
    dport: (u16, u16),
    prio: i32,
}

impl Rule {
    fn key(&self) -> MatchKey {
        let t = |v: &[u8], m: &[u8]| FieldMatch::Ternary {
            value: v.to_vec(),
            mask: m.to_vec(),
        };
        let r = |lo: u16, hi: u16| FieldMatch::Range {
            low: lo.to_be_bytes().to_vec(),
            high: hi.to_be_bytes().to_vec(),
        };
        MatchKey {
            fields: vec![
                t(&self.src.0.to_be_bytes(), &self.src.1.to_be_bytes()),
                t(&self.dst.0.to_be_bytes(), &self.dst.1.to_be_bytes()),
                t(&[self.proto.0], &[self.proto.1]),
                r(self.sport.0, self.sport.1),
                r(self.dport.0, self.dport.1),
            ],
            priority: self.prio,
        }
    }

    fn matches(&self, k: &[u8]) -> bool {
        let u32at = |i: usize| u32::from_be_bytes(k[i..i + 4].try_into().unwrap());
        let u16at = |i: usize| u16::from_be_bytes(k[i..i + 2].try_into().unwrap());
        u32at(0) & self.src.1 == self.src.0 & self.src.1
            && u32at(4) & self.dst.1 == self.dst.0 & self.dst.1
            && k[8] & self.proto.1 == self.proto.0 & self.proto.1
            && (self.sport.0..=self.sport.1).contains(&u16at(9))
            && (self.dport.0..=self.dport.1).contains(&u16at(11))
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn prefix(rng: &mut Rng, bases: &[u32]) -> (u32, u32) {
    let len = [0u32, 8, 16, 23, 24, 28, 31, 32, 32, 32][rng.below(10) as usize];
    let m = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    let a = if rng.below(3) > 0 {
        bases[rng.below(bases.len() as u64) as usize] ^ (rng.next() as u32 & 0xff)
    } else {
        rng.next() as u32
    };
    (a & m, m)
}

fn port(rng: &mut Rng) -> (u16, u16) {
    match rng.below(6) {
        0 => (0, 65535),
        1 => (1024, 65535),
        2 => (0, 1023),
        3 => {
            let a = rng.next() as u16;
            let b = rng.next() as u16;
            (a.min(b), a.max(b))
        }
        _ => {
            let p = [80u16, 443, 53, 1521, 22, 8080][rng.below(6) as usize];
            (p, p)
        }
    }
}

fn rules(seed: u64, n: usize) -> Vec<Rule> {
    let mut rng = Rng(seed | 1);
    let bases: Vec<u32> = (0..8).map(|_| rng.next() as u32).collect();
    let mut out: Vec<Rule> = Vec::new();
    for i in 0..n {
        if i > 0 && rng.below(10) == 0 {
            // the same match as an earlier rule, another (or the same) priority
            let mut r = out[rng.below(out.len() as u64) as usize].clone();
            r.prio = rng.below(n as u64 / 2) as i32;
            out.push(r);
            continue;
        }
        let proto = match rng.below(4) {
            0 => (0, 0),
            1 => (17, 0xff),
            _ => (6, 0xff),
        };
        out.push(Rule {
            src: prefix(&mut rng, &bases),
            dst: prefix(&mut rng, &bases),
            proto,
            sport: if rng.below(4) == 0 {
                port(&mut rng)
            } else {
                (0, 65535)
            },
            dport: port(&mut rng),
            prio: rng.below(n as u64 / 2) as i32,
        });
    }
    out
}

fn key_of(rng: &mut Rng, rs: &[Rule], live: &[Option<EntryHandle>]) -> [u8; 13] {
    let mut k = [0u8; 13];
    for b in &mut k {
        *b = rng.next() as u8;
    }
    k[8] = [6, 17, 1][rng.below(3) as usize];
    if rng.below(2) == 0 {
        let i = rng.below(rs.len() as u64) as usize;
        if live[i].is_some() {
            let r = &rs[i];
            let s = (r.src.0 & r.src.1) | (rng.next() as u32 & !r.src.1);
            let d = (r.dst.0 & r.dst.1) | (rng.next() as u32 & !r.dst.1);
            k[..4].copy_from_slice(&s.to_be_bytes());
            k[4..8].copy_from_slice(&d.to_be_bytes());
            if r.proto.1 != 0 {
                k[8] = r.proto.0;
            }
            let inr = |rng: &mut Rng, (lo, hi): (u16, u16)| {
                lo + (rng.below(u64::from(hi - lo) + 1) as u16)
            };
            k[9..11].copy_from_slice(&inr(rng, r.sport).to_be_bytes());
            k[11..13].copy_from_slice(&inr(rng, r.dport).to_be_bytes());
        }
    }
    k
}

fn check(seed: u64, n: usize, mode: CacheMode) {
    let rs = rules(seed, n);
    let spec = vec![
        KeyFieldSpec {
            kind: MatchKind::Ternary,
            bit_width: 32,
        },
        KeyFieldSpec {
            kind: MatchKind::Ternary,
            bit_width: 32,
        },
        KeyFieldSpec {
            kind: MatchKind::Ternary,
            bit_width: 8,
        },
        KeyFieldSpec {
            kind: MatchKind::Range,
            bit_width: 16,
        },
        KeyFieldSpec {
            kind: MatchKind::Range,
            bit_width: 16,
        },
    ];
    let mut t: Table<usize> = Table::new(spec, 1 << 20).unwrap();
    t.set_cache_mode(mode);
    let mut live: Vec<Option<EntryHandle>> = vec![None; rs.len()];
    let mut rng = Rng(seed.wrapping_mul(31) | 1);
    let naive = |live: &[Option<EntryHandle>], k: &[u8]| -> Option<EntryHandle> {
        live.iter()
            .zip(&rs)
            .filter_map(|(h, r)| {
                Some((r.prio, (*h)? & 0x00ff_ffff, (*h)?)).filter(|_| r.matches(k))
            })
            .min()
            .map(|x| x.2)
    };
    let mut hits = 0;
    for round in 0..4 {
        // insert what is missing (duplicates with equal priority are refused)
        for (i, r) in rs.iter().enumerate() {
            if live[i].is_none() {
                live[i] = t.insert(r.key(), i).ok();
            }
        }
        // delete a share of them
        for l in live.iter_mut() {
            if let Some(h) = *l
                && rng.below(4) == round % 4
            {
                t.delete(h).unwrap();
                *l = None;
            }
        }
        let keys: Vec<[u8; 13]> = (0..512).map(|_| key_of(&mut rng, &rs, &live)).collect();
        let mut out = vec![None; 64];
        for chunk in keys.chunks(64) {
            let packed: Vec<u8> = chunk.concat();
            t.lookup_batch(&packed, &mut out);
            for (j, k) in chunk.iter().enumerate() {
                let want = naive(&live, k);
                hits += usize::from(want.is_some());
                assert_eq!(
                    t.lookup(k).map(|x| x.0),
                    want,
                    "seed {seed} round {round} key {k:?}"
                );
                assert_eq!(
                    out[j].map(|x| x.0),
                    want,
                    "batch: seed {seed} round {round} key {k:?}"
                );
            }
        }
    }
    assert!(t.num_tuples() > 1, "seed {seed}: {} tuples", t.num_tuples());
    assert!(hits > 200, "seed {seed}: only {hits} of 2048 keys hit");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(8)))]

    #[test]
    fn classbench_shaped_rule_sets_match_a_priority_scan(seed in any::<u64>(), n in 50usize..1500) {
        check(seed, n, CacheMode::Off);
        check(seed, n, CacheMode::On(4));
    }
}

/// Fields too wide for a length bound (lengths are kept in a byte) and
/// fields of odd widths prune nothing wrongly: a 40-byte ternary field next
/// to a 9-bit and a 32-bit one, against a scan.
#[test]
fn wide_and_odd_fields_against_a_scan() {
    let spec = vec![
        KeyFieldSpec {
            kind: MatchKind::Ternary,
            bit_width: 320,
        },
        KeyFieldSpec {
            kind: MatchKind::Ternary,
            bit_width: 9,
        },
        KeyFieldSpec {
            kind: MatchKind::Ternary,
            bit_width: 32,
        },
    ];
    let mut t: Table<usize> = Table::new(spec, 4096).unwrap();
    let mut rng = Rng(77);
    let mut rules: Vec<(Vec<u8>, Vec<u8>, i32)> = Vec::new();
    for i in 0..600 {
        let mut v: Vec<u8> = (0..46).map(|_| rng.next() as u8).collect();
        let mut m = vec![0u8; 46];
        let l0 = rng.below(321) as usize;
        for b in 0..l0 {
            m[b / 8] |= 0x80 >> (b % 8);
        }
        m[40] = [0x00, 0x01, 0x01][rng.below(3) as usize];
        m[41] = [0x00, 0xff, 0xf0][rng.below(3) as usize];
        let l2 = [0u32, 8, 16, 24, 32][rng.below(5) as usize];
        for b in 0..l2 as usize {
            m[42 + b / 8] |= 0x80 >> (b % 8);
        }
        v[40] &= 1;
        for (a, b) in v.iter_mut().zip(&m) {
            *a &= b;
        }
        let k = MatchKey {
            fields: vec![
                FieldMatch::Ternary {
                    value: v[..40].to_vec(),
                    mask: m[..40].to_vec(),
                },
                FieldMatch::Ternary {
                    value: v[40..42].to_vec(),
                    mask: m[40..42].to_vec(),
                },
                FieldMatch::Ternary {
                    value: v[42..].to_vec(),
                    mask: m[42..].to_vec(),
                },
            ],
            priority: i,
        };
        t.insert(k, i as usize).unwrap();
        rules.push((v, m, i));
    }
    for n in 0..3000 {
        let mut key: Vec<u8> = if n % 2 == 0 {
            (0..46).map(|_| rng.next() as u8).collect()
        } else {
            let (v, m, _) = &rules[rng.below(rules.len() as u64) as usize];
            v.iter()
                .zip(m)
                .map(|(a, b)| a | (rng.next() as u8 & !b))
                .collect()
        };
        key[40] &= 1;
        let want = rules
            .iter()
            .filter(|(v, m, _)| key.iter().zip(m).zip(v).all(|((k, m), v)| k & m == *v))
            .map(|r| r.2)
            .min();
        assert_eq!(t.lookup(&key).map(|x| *x.1 as i32), want, "{key:?}");
    }
}

/// Random prefix-masked ternary rules over `widths` (bytes per field),
/// looked up one by one and in batches (the staged path) against a scan.
/// Masks are prefixes of random lengths on each field (so many tuples),
/// priorities random with ties, keys half uniformly random and half drawn
/// from the rules; a share of the rules is deleted halfway.
/// Returns the number of tuples.
fn ternary_against_a_scan(widths: &[usize], n: usize, seed: u64) -> usize {
    let spec: Vec<KeyFieldSpec> = widths
        .iter()
        .map(|w| KeyFieldSpec {
            kind: MatchKind::Ternary,
            bit_width: 8 * *w as u32,
        })
        .collect();
    let kb: usize = widths.iter().sum();
    let mut t: Table<usize> = Table::new(spec, 1 << 16).unwrap();
    t.set_cache_mode(CacheMode::Off);
    let mut rng = Rng(seed | 1);
    // (value, mask, priority, handle)
    type Ternary = (Vec<u8>, Vec<u8>, i32, Option<EntryHandle>);
    let mut rules: Vec<Ternary> = Vec::new();
    let bases: Vec<u8> = (0..4).map(|_| rng.next() as u8).collect();
    for _ in 0..n {
        let mut v = Vec::new();
        let mut m = Vec::new();
        for &w in widths {
            let len = [0, 8 * w, rng.below(8 * w as u64 + 1) as usize][rng.below(3) as usize];
            for b in 0..w {
                let mb = if 8 * (b + 1) <= len {
                    0xff
                } else if 8 * b >= len {
                    0
                } else {
                    0xffu8 << (8 - len % 8)
                };
                // clustered first bytes: keys drawn at random hit them too
                let vb = if b == 0 {
                    bases[rng.below(4) as usize]
                } else {
                    rng.next() as u8
                };
                v.push(vb & mb);
                m.push(mb);
            }
        }
        let prio = rng.below(n as u64 / 4 + 1) as i32;
        let mut fields = Vec::new();
        let mut off = 0;
        for &w in widths {
            fields.push(FieldMatch::Ternary {
                value: v[off..off + w].to_vec(),
                mask: m[off..off + w].to_vec(),
            });
            off += w;
        }
        let h = t
            .insert(
                MatchKey {
                    fields,
                    priority: prio,
                },
                rules.len(),
            )
            .ok();
        rules.push((v, m, prio, h));
    }
    for round in 0..2 {
        if round == 1 {
            for r in rules.iter_mut() {
                if let Some(h) = r.3
                    && rng.below(3) == 0
                {
                    t.delete(h).unwrap();
                    r.3 = None;
                }
            }
        }
        let keys: Vec<Vec<u8>> = (0..1024)
            .map(|i| {
                let mut k: Vec<u8> = (0..kb).map(|_| rng.next() as u8).collect();
                if i % 2 == 1 {
                    let (v, m, _, _) = &rules[rng.below(rules.len() as u64) as usize];
                    for ((kx, vx), mx) in k.iter_mut().zip(v).zip(m) {
                        *kx = vx | (*kx & !mx);
                    }
                } else {
                    k[0] = bases[rng.below(4) as usize] ^ (rng.below(2) as u8);
                }
                k
            })
            .collect();
        let want = |k: &[u8]| {
            rules
                .iter()
                .filter_map(|(v, m, p, h)| {
                    let h = (*h)?;
                    k.iter()
                        .zip(m)
                        .zip(v)
                        .all(|((k, m), v)| k & m == *v)
                        .then_some((*p, h & 0x00ff_ffff, h))
                })
                .min()
                .map(|x| x.2)
        };
        let mut out = vec![None; 48];
        for chunk in keys.chunks(48) {
            let packed: Vec<u8> = chunk.concat();
            t.lookup_batch(&packed, &mut out);
            for (j, k) in chunk.iter().enumerate() {
                let w = want(k);
                assert_eq!(t.lookup(k).map(|x| x.0), w, "{widths:?} {k:?}");
                assert_eq!(out[j].map(|x| x.0), w, "batch: {widths:?} {k:?}");
            }
        }
    }
    t.num_tuples()
}

/// The staged batch path with fields whose first bytes straddle two key
/// words (MAC addresses at offsets 0 and 6), more than 64 tuples (several
/// candidate words), and one, two or three pruning fields.
#[test]
fn staged_batches_on_other_layouts_against_a_scan() {
    ternary_against_a_scan(&[6, 6, 2], 3000, 11);
    ternary_against_a_scan(&[4], 400, 12);
    ternary_against_a_scan(&[2, 4], 1500, 13);
    ternary_against_a_scan(&[3, 5, 4, 4, 1, 7], 3000, 14);
    let tuples = ternary_against_a_scan(&[1, 1, 1, 1, 1, 1, 3, 5], 3000, 15);
    assert!(tuples > 64, "{tuples} tuples: one candidate word only");
}

/// Small tables (at most 8 entries: bit vectors per key lane) of
/// src_port_filter's shape, `protocol : ternary` (exact, wildcard or a
/// partial mask) and `port : range` (16 bits), and port_class's (the range
/// alone): every key (3 protocols × all 65536 ports) against a priority scan
/// after every write; random overlapping ranges, single ports, empty ranges
/// (low > high), duplicate matches with other priorities, deletes and
/// re-inserts that cross the 8-entry threshold both ways.
#[test]
fn small_range_tables_every_key_against_a_scan() {
    type R = (u8, u8, u16, u16, i32);
    let scan = |live: &[(R, EntryHandle)], proto: u8, port: u16| {
        live.iter()
            .filter(|((v, m, lo, hi, _), _)| proto & m == v & m && (*lo..=*hi).contains(&port))
            .min_by_key(|((.., p), h)| (*p, *h & 0xff_ffff))
            .map(|(_, h)| *h)
    };
    for seed in 0..24u64 {
        let mut rng = Rng(seed * 0x9e37_79b9 + 7);
        let with_proto = seed % 3 != 0;
        let mut spec = vec![];
        if with_proto {
            spec.push(KeyFieldSpec {
                kind: MatchKind::Ternary,
                bit_width: 8,
            });
        }
        spec.push(KeyFieldSpec {
            kind: MatchKind::Range,
            bit_width: 16,
        });
        let mut t: Table<u32> = Table::new(spec, 64).unwrap();
        if seed % 2 == 1 {
            t.set_cache_mode(CacheMode::On(4));
        }
        let mut pool: Vec<R> = vec![];
        let mut live: Vec<(R, EntryHandle)> = vec![];
        for step in 0..40 {
            let grow = live.len() < 4 || (live.len() < 11 && rng.below(5) < 3);
            if grow {
                let r: R = if !pool.is_empty() && rng.below(5) == 0 {
                    // the same match again with another priority
                    let mut r = pool[rng.below(pool.len() as u64) as usize];
                    r.4 = rng.below(4) as i32;
                    r
                } else {
                    let (v, m) = if with_proto {
                        match rng.below(4) {
                            0 => (0, 0),
                            1 => (17, 0xff),
                            2 => (6, 0x0f),
                            _ => (6, 0xff),
                        }
                    } else {
                        (0, 0)
                    };
                    let (lo, hi) = match rng.below(5) {
                        0 => port(&mut rng),
                        1 => {
                            let p = rng.next() as u16;
                            (p, p)
                        }
                        2 => (rng.next() as u16, rng.next() as u16),
                        _ => {
                            let a = rng.next() as u16;
                            (a, a.saturating_add(rng.next() as u16 % 300))
                        }
                    };
                    (v, m, lo, hi, rng.below(4) as i32)
                };
                let mut fields = vec![];
                if with_proto {
                    fields.push(FieldMatch::Ternary {
                        value: vec![r.0],
                        mask: vec![r.1],
                    });
                }
                fields.push(FieldMatch::Range {
                    low: r.2.to_be_bytes().to_vec(),
                    high: r.3.to_be_bytes().to_vec(),
                });
                // a refused insert (a duplicate match and priority) leaves
                // nothing to compare; one with low > high matches no key
                if let Ok(h) = t.insert(
                    MatchKey {
                        fields,
                        priority: r.4,
                    },
                    step,
                ) {
                    pool.push(r);
                    live.push((r, h));
                }
            } else {
                let i = rng.below(live.len() as u64) as usize;
                let (_, h) = live.swap_remove(i);
                t.delete(h).unwrap();
            }
            let protos: &[u8] = if with_proto { &[6, 17, 22] } else { &[0] };
            let kb = t.key_bytes();
            let mut keys = Vec::with_capacity(65536 * kb);
            for &p in protos {
                keys.clear();
                for port in 0..=u16::MAX {
                    if with_proto {
                        keys.push(p);
                    }
                    keys.extend_from_slice(&port.to_be_bytes());
                }
                let mut out = vec![None; 65536];
                t.lookup_batch(&keys, &mut out);
                for port in 0..=u16::MAX {
                    let want = scan(&live, p, port);
                    let got = out[usize::from(port)].map(|(h, _)| h);
                    assert_eq!(got, want, "seed {seed} step {step}: proto {p} port {port}");
                    if port % 251 == 0 {
                        let k = &keys[usize::from(port) * kb..(usize::from(port) + 1) * kb];
                        assert_eq!(t.lookup(k).map(|(h, _)| h), want);
                    }
                }
            }
        }
    }
}
