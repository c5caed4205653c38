//! Lookup micro-benchmarks: ns per key for `lookup` and `lookup_batch`.
//!
//! Run with `cargo bench -p p4jet-tables --bench lookup`. Every group reports
//! throughput in keys (elements) per second; ns/key = 1e9 / that.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use p4jet_tables::{FieldMatch, KeyFieldSpec, MatchKey, MatchKind, Table};

const BATCH: usize = 256;
const NKEYS: usize = 1 << 16;

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
        self.next() % n
    }
}

fn spec(kind: MatchKind, bit_width: u32) -> KeyFieldSpec {
    KeyFieldSpec { kind, bit_width }
}

/// Benchmark `lookup` and `lookup_batch` over `keys` (NKEYS packed keys).
fn bench_table(c: &mut Criterion, name: &str, mut t: Table<u32>, keys: &[u8]) {
    if let Some(d) = std::env::var("P4JET_PREFETCH")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        t.set_prefetch_distance(d);
    }
    let t = &t;
    let kb = t.key_bytes();
    let n = keys.len() / kb;
    let hits = (0..n)
        .filter(|i| t.lookup(&keys[i * kb..(i + 1) * kb]).is_some())
        .count();
    eprintln!(
        "{name}: {} entries, structure {}, {} tuples, {:.1} bytes/entry, hit rate {:.0}%",
        t.len(),
        t.structure(),
        t.num_tuples(),
        t.memory_bytes() as f64 / t.len().max(1) as f64,
        100.0 * hits as f64 / n as f64
    );
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(BATCH as u64));
    let mut pos = 0usize;
    g.bench_function("lookup", |b| {
        b.iter(|| {
            let start = pos;
            pos = (pos + BATCH) % n;
            let mut acc = 0u32;
            for i in start..start + BATCH {
                if let Some((h, v)) = t.lookup(&keys[i * kb..(i + 1) * kb]) {
                    acc = acc.wrapping_add(h ^ *v);
                }
            }
            black_box(acc)
        })
    });
    let mut out = vec![None; BATCH];
    let mut pos = 0usize;
    g.bench_function("lookup_batch", |b| {
        b.iter(|| {
            let start = pos;
            pos = (pos + BATCH) % n;
            t.lookup_batch(&keys[start * kb..(start + BATCH) * kb], &mut out);
            black_box(out[BATCH - 1].map(|(h, _)| h))
        })
    });
    g.finish();
}

fn exact_table(n: usize, rng: &mut Rng) -> (Table<u32>, Vec<u8>) {
    // 48-bit MAC + 12-bit VLAN
    let mut t = Table::new(
        vec![spec(MatchKind::Exact, 48), spec(MatchKind::Exact, 12)],
        n,
    )
    .unwrap();
    let mut entries = Vec::with_capacity(n);
    while t.len() < n {
        let m = rng.next().to_be_bytes();
        let v = (rng.below(4096) as u16).to_be_bytes();
        let k = MatchKey {
            fields: vec![
                FieldMatch::Exact(m[2..].to_vec()),
                FieldMatch::Exact(v.to_vec()),
            ],
            priority: 0,
        };
        if t.insert(k, t.len() as u32).is_ok() {
            entries.push([&m[2..], &v[..]].concat());
        }
    }
    let mut keys = Vec::with_capacity(NKEYS * 8);
    for _ in 0..NKEYS {
        if rng.below(10) < 9 {
            keys.extend_from_slice(&entries[rng.below(n as u64) as usize]);
        } else {
            keys.extend_from_slice(&[0xee, 1, 2, 3, 4, 5, 0, 7]);
        }
    }
    (t, keys)
}

fn bench_exact(c: &mut Criterion) {
    let mut rng = Rng(1);
    for (name, n) in [("exact_1k", 1000), ("exact_1m", 1_000_000)] {
        let (t, keys) = exact_table(n, &mut rng);
        bench_table(c, name, t, &keys);
    }
}

fn bench_exact_insert(c: &mut Criterion) {
    let mut rng = Rng(2);
    let keys: Vec<MatchKey> = (0..1_000_000u64)
        .map(|i| {
            let m = (rng.next() ^ i).to_be_bytes();
            MatchKey {
                fields: vec![
                    FieldMatch::Exact(m[2..].to_vec()),
                    FieldMatch::Exact(vec![0, 1]),
                ],
                priority: 0,
            }
        })
        .collect();
    let mut g = c.benchmark_group("exact_insert_1m");
    g.sample_size(10);
    g.throughput(Throughput::Elements(keys.len() as u64));
    g.bench_function("insert", |b| {
        b.iter_batched(
            || keys.clone(),
            |keys| {
                let mut t = Table::new(
                    vec![spec(MatchKind::Exact, 48), spec(MatchKind::Exact, 12)],
                    1 << 21,
                )
                .unwrap();
                for (i, k) in keys.into_iter().enumerate() {
                    let _ = t.insert(k, i as u32);
                }
                t
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// Route prefix length with a BGP-table-like distribution.
fn v4_len(rng: &mut Rng) -> u32 {
    match rng.below(100) {
        0..=59 => 24,
        60..=74 => 22 + rng.below(2) as u32,
        75..=89 => 16 + rng.below(6) as u32,
        90..=94 => 8 + rng.below(8) as u32,
        _ => 25 + rng.below(8) as u32,
    }
}

fn bench_lpm32(c: &mut Criterion) {
    let mut rng = Rng(3);
    let n = 100_000;
    let mut t = Table::new(vec![spec(MatchKind::Lpm, 32)], n).unwrap();
    let mut routes = vec![];
    while t.len() < n {
        let v = (rng.next() as u32).to_be_bytes();
        let l = v4_len(&mut rng);
        let k = MatchKey {
            fields: vec![FieldMatch::Lpm {
                value: v.to_vec(),
                prefix_len: l,
            }],
            priority: 0,
        };
        if t.insert(k, l).is_ok() {
            routes.push((u32::from_be_bytes(v), l));
        }
    }
    let mut keys = Vec::with_capacity(NKEYS * 4);
    for _ in 0..NKEYS {
        let (v, l) = routes[rng.below(routes.len() as u64) as usize];
        let host = if l == 32 { 0 } else { (rng.next() as u32) >> l };
        let mask = if l == 0 { 0 } else { u32::MAX << (32 - l) };
        keys.extend_from_slice(&((v & mask) | host).to_be_bytes());
    }
    bench_table(c, "lpm32_100k", t, &keys);
}

fn bench_lpm128(c: &mut Criterion) {
    let mut rng = Rng(4);
    let n = 10_000;
    let mut t = Table::new(vec![spec(MatchKind::Lpm, 128)], n).unwrap();
    let mut routes = vec![];
    while t.len() < n {
        // 2000::/3 space, lengths mostly /32../64, some /128 hosts
        let hi = (0x2000u128 | (rng.below(0x1000) as u128)) << 112;
        let v = hi | (u128::from(rng.next()) << 48) | u128::from(rng.next() as u16);
        let l = match rng.below(100) {
            0..=39 => 48,
            40..=69 => 64,
            70..=84 => 32 + rng.below(16) as u32,
            85..=94 => 49 + rng.below(15) as u32,
            _ => 128,
        };
        let k = MatchKey {
            fields: vec![FieldMatch::Lpm {
                value: v.to_be_bytes().to_vec(),
                prefix_len: l,
            }],
            priority: 0,
        };
        if t.insert(k, l).is_ok() {
            routes.push((v, l));
        }
    }
    let mut keys = Vec::with_capacity(NKEYS * 16);
    for _ in 0..NKEYS {
        let (v, l) = routes[rng.below(routes.len() as u64) as usize];
        let mask = if l == 0 { 0 } else { u128::MAX << (128 - l) };
        let host = ((u128::from(rng.next()) << 64) | u128::from(rng.next())) & !mask;
        keys.extend_from_slice(&((v & mask) | host).to_be_bytes());
    }
    bench_table(c, "lpm128_10k", t, &keys);
}

/// 5-field ACL: src/dst IPv4 (ternary, prefix-shaped masks), src/dst port
/// and protocol (ternary: exact or wildcard).
fn bench_ternary(c: &mut Criterion) {
    let mut rng = Rng(5);
    let n = 10_000;
    let f = vec![
        spec(MatchKind::Ternary, 32),
        spec(MatchKind::Ternary, 32),
        spec(MatchKind::Ternary, 16),
        spec(MatchKind::Ternary, 16),
        spec(MatchKind::Ternary, 8),
    ];
    let mut t = Table::new(f, n).unwrap();
    let pm = |l: u32| if l == 0 { 0u32 } else { u32::MAX << (32 - l) };
    let mut rules = vec![];
    while t.len() < n {
        let ls = [0, 8, 16, 24, 32][rng.below(5) as usize];
        let ld = [0, 16, 24, 32][rng.below(4) as usize];
        let (s, d) = (rng.next() as u32 & pm(ls), rng.next() as u32 & pm(ld));
        let sp: (u16, u16) = if rng.below(4) == 0 {
            (rng.next() as u16, 0xffff)
        } else {
            (0, 0)
        };
        let dp: (u16, u16) = if rng.below(4) != 0 {
            ([22, 53, 80, 443, 8080][rng.below(5) as usize], 0xffff)
        } else {
            (0, 0)
        };
        let pr: (u8, u8) = if rng.below(3) != 0 {
            ([6, 17][rng.below(2) as usize], 0xff)
        } else {
            (0, 0)
        };
        let k = MatchKey {
            fields: vec![
                FieldMatch::Ternary {
                    value: s.to_be_bytes().to_vec(),
                    mask: pm(ls).to_be_bytes().to_vec(),
                },
                FieldMatch::Ternary {
                    value: d.to_be_bytes().to_vec(),
                    mask: pm(ld).to_be_bytes().to_vec(),
                },
                FieldMatch::Ternary {
                    value: sp.0.to_be_bytes().to_vec(),
                    mask: sp.1.to_be_bytes().to_vec(),
                },
                FieldMatch::Ternary {
                    value: dp.0.to_be_bytes().to_vec(),
                    mask: dp.1.to_be_bytes().to_vec(),
                },
                FieldMatch::Ternary {
                    value: vec![pr.0],
                    mask: vec![pr.1],
                },
            ],
            priority: rng.below(1_000_000) as i32,
        };
        if t.insert(k, t.len() as u32).is_ok() {
            rules.push((s, d, sp.0, dp.0, pr.0));
        }
    }
    let mut keys = Vec::with_capacity(NKEYS * 13);
    for _ in 0..NKEYS {
        // packets aimed at a random rule, with random bits where it has wildcards
        let r = rules[rng.below(rules.len() as u64) as usize];
        let x = rng.next();
        keys.extend_from_slice(&(r.0 | ((x as u32) & 0xff)).to_be_bytes());
        keys.extend_from_slice(&(r.1 | ((x >> 32) as u32 & 0xff)).to_be_bytes());
        keys.extend_from_slice(&(if r.2 == 0 { x as u16 } else { r.2 }).to_be_bytes());
        keys.extend_from_slice(&(if r.3 == 0 { (x >> 16) as u16 } else { r.3 }).to_be_bytes());
        keys.push(if r.4 == 0 { 6 } else { r.4 });
    }
    bench_table(c, "ternary_10k_5f", t, &keys);
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_exact, bench_lpm32, bench_lpm128, bench_ternary, bench_exact_insert
}
criterion_main!(benches);
