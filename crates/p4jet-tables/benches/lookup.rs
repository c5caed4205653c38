//! Lookup micro-benchmarks: ns per key for `lookup` and `lookup_batch`.
//!
//! Run with `cargo bench -p p4jet-tables --bench lookup`. Every group reports
//! throughput in keys (elements) per second; ns/key = 1e9 / that.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use p4jet_tables::{CacheMode, FieldMatch, KeyFieldSpec, MatchKey, MatchKind, Table};

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
        "{name}: {} entries, structure {}, {} tuples, cache {}, {:.1} bytes/entry, hit rate {:.0}%",
        t.len(),
        t.structure(),
        t.num_tuples(),
        if t.cache_active() { "on" } else { "off" },
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

// ---- ACL as `p4jet gen acl` makes it (crates/p4jet-gen/src/acl.rs) ----

const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;
const TCP_SERVICES: &[u16] = &[80, 443, 443, 443, 22, 25, 993, 8080, 8443, 3306, 5432, 6379];
const UDP_SERVICES: &[u16] = &[53, 53, 123, 443, 500, 4500, 5060, 3478];
const BLOCKED: &[u16] = &[23, 135, 137, 138, 139, 445, 1433, 3389];
const WELL_KNOWN: &[u16] = &[22, 25, 53, 80, 110, 123, 143, 443, 993, 995];
const DENIED_NET: (u32, u32) = (0xc612_0000, 15);

/// (value, mask) of src, dst, proto, dport, class, flags.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct AclRule {
    src: (u32, u32),
    dst: (u32, u32),
    proto: (u8, u8),
    dport: (u16, u16),
    class: (u8, u8),
    flags: (u8, u8),
}

fn pmask32(l: u32) -> u32 {
    if l == 0 { 0 } else { u32::MAX << (32 - l) }
}

fn in_net(a: u32, (p, l): (u32, u32)) -> bool {
    a & pmask32(l) == p & pmask32(l)
}

/// A public-looking unicast IPv4 address outside `DENIED_NET` if asked.
fn internet_v4(rng: &mut Rng, avoid_denied: bool) -> u32 {
    loop {
        let a = rng.next() as u32;
        let o = a >> 24;
        if o != 0 && o != 10 && o != 127 && o < 224 && !(avoid_denied && in_net(a, DENIED_NET)) {
            return a;
        }
    }
}

fn weighted(rng: &mut Rng, lens: &[(u32, u64)]) -> u32 {
    let total: u64 = lens.iter().map(|l| l.1).sum();
    let mut x = rng.below(total);
    for &(l, w) in lens {
        if x < w {
            return l;
        }
        x -= w;
    }
    32
}

fn acl_prefix(rng: &mut Rng, lens: &[(u32, u64)], avoid_denied: bool) -> (u32, u32) {
    let m = pmask32(weighted(rng, lens));
    (internet_v4(rng, avoid_denied) & m, m)
}

fn class_of(p: u16) -> u8 {
    match p {
        0..=1023 => 1,
        8080..=8089 => 4,
        1024..=49151 => 2,
        _ => 3,
    }
}

fn pick<T: Copy>(rng: &mut Rng, s: &[T]) -> T {
    s[rng.below(s.len() as u64) as usize]
}

fn permit_rule(rng: &mut Rng) -> AclRule {
    loop {
        let src = if rng.below(10) < 4 {
            (0, 0)
        } else {
            acl_prefix(rng, &[(8, 10), (16, 25), (24, 40), (32, 25)], true)
        };
        let dst = if rng.below(10) < 2 {
            (0, 0)
        } else {
            acl_prefix(rng, &[(16, 15), (24, 45), (32, 40)], false)
        };
        let proto = match rng.below(100) {
            0..60 => (TCP, 0xff),
            60..85 => (UDP, 0xff),
            85..90 => (ICMP, 0xff),
            _ => (0, 0),
        };
        let (dport, class) = if proto.0 == ICMP {
            ((0, 0), if rng.below(5) == 0 { (1, 0xff) } else { (0, 0) })
        } else {
            match rng.below(10) {
                0..6 => {
                    let l = if proto.0 == UDP {
                        UDP_SERVICES
                    } else {
                        TCP_SERVICES
                    };
                    ((pick(rng, l), 0xffff), (0, 0))
                }
                6 => loop {
                    let p = 1024 + rng.below(49151 - 1024 + 1) as u16;
                    if !BLOCKED.contains(&p) {
                        break ((p, 0xffff), (0, 0));
                    }
                },
                _ => (
                    (0, 0),
                    if rng.below(10) < 4 {
                        (1 + rng.below(4) as u8, 0xff)
                    } else {
                        (0, 0)
                    },
                ),
            }
        };
        let flags = if proto.0 == TCP && rng.below(5) == 0 {
            (0x10, 0x10)
        } else {
            (0, 0)
        };
        if src.1 == 0 && dst.1 == 0 && dport.1 == 0 {
            continue;
        }
        return AclRule {
            src,
            dst,
            proto,
            dport,
            class,
            flags,
        };
    }
}

fn deny_rule(rng: &mut Rng) -> AclRule {
    let any = AclRule {
        src: (0, 0),
        dst: (0, 0),
        proto: (0, 0),
        dport: (0, 0),
        class: (0, 0),
        flags: (0, 0),
    };
    if rng.below(2) == 0 {
        let m = pmask32(DENIED_NET.1 + rng.below(32 - u64::from(DENIED_NET.1) + 1) as u32);
        let host = rng.next() as u32 & !pmask32(DENIED_NET.1);
        let proto = pick(rng, &[(TCP, 0xff), (UDP, 0xff), (0, 0)]);
        AclRule {
            src: ((DENIED_NET.0 | host) & m, m),
            proto,
            ..any
        }
    } else {
        let dst = if rng.below(2) == 0 {
            (0, 0)
        } else {
            acl_prefix(rng, &[(16, 1), (24, 2), (32, 1)], false)
        };
        AclRule {
            dst,
            proto: (pick(rng, &[TCP, UDP]), 0xff),
            dport: (pick(rng, BLOCKED), 0xffff),
            ..any
        }
    }
}

/// Packed key (src, dst, proto, dport, class, flags) of a packet `r` permits.
fn acl_key(r: &AclRule, rng: &mut Rng) -> [u8; 13] {
    let proto = if r.proto.1 != 0 {
        r.proto.0
    } else if rng.below(10) < 7 {
        TCP
    } else {
        UDP
    };
    let src = loop {
        let a = if r.src.1 == 0 {
            internet_v4(rng, true)
        } else {
            r.src.0 | (rng.next() as u32 & !r.src.1)
        };
        if !in_net(a, DENIED_NET) {
            break a;
        }
    };
    let dst = if r.dst.1 == 0 {
        internet_v4(rng, false)
    } else {
        r.dst.0 | (rng.next() as u32 & !r.dst.1)
    };
    let dport = if proto == ICMP {
        0
    } else if r.dport.1 != 0 {
        r.dport.0
    } else if r.class.1 != 0 {
        loop {
            let p = match r.class.0 {
                1 => pick(rng, WELL_KNOWN),
                2 => 1024 + rng.below(48128) as u16,
                3 => 49152 + rng.below(16384) as u16,
                _ => 8080 + rng.below(10) as u16,
            };
            if class_of(p) == r.class.0 && !BLOCKED.contains(&p) {
                break p;
            }
        }
    } else if proto == UDP {
        pick(rng, UDP_SERVICES)
    } else {
        pick(rng, TCP_SERVICES)
    };
    let flags = if proto != TCP {
        0
    } else if r.flags.1 != 0 {
        pick(rng, &[0x10, 0x18])
    } else {
        pick(rng, &[0x02, 0x10, 0x18, 0x18])
    };
    let mut k = [0u8; 13];
    k[..4].copy_from_slice(&src.to_be_bytes());
    k[4..8].copy_from_slice(&dst.to_be_bytes());
    k[8] = proto;
    k[9..11].copy_from_slice(&dport.to_be_bytes());
    k[11] = class_of(dport);
    k[12] = flags;
    k
}

/// The `acl` table of acl_large with `n` rules as `p4jet gen acl` draws them
/// (15 % deny, unique priorities 1..=n in random order) and the permit rules.
fn acl_table(n: usize, rng: &mut Rng) -> (Table<u32>, Vec<AclRule>) {
    let n_deny = n * 15 / 100;
    let mut seen = std::collections::HashSet::new();
    let mut rules = vec![];
    while rules.len() < n {
        let permit = rules.len() >= n_deny;
        let r = if permit {
            permit_rule(rng)
        } else {
            deny_rule(rng)
        };
        if seen.insert(r) {
            rules.push((r, permit));
        }
    }
    for i in (1..n).rev() {
        rules.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut prios: Vec<i32> = (1..=n as i32).collect();
    for i in (1..n).rev() {
        prios.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let f = [32, 32, 8, 16, 8, 8]
        .map(|w| spec(MatchKind::Ternary, w))
        .to_vec();
    let mut t = Table::new(f, 65536).unwrap();
    for (i, ((r, _), p)) in rules.iter().zip(&prios).enumerate() {
        let tern = |v: u64, m: u64, n: usize| FieldMatch::Ternary {
            value: v.to_be_bytes()[8 - n..].to_vec(),
            mask: m.to_be_bytes()[8 - n..].to_vec(),
        };
        let k = MatchKey {
            fields: vec![
                tern(r.src.0.into(), r.src.1.into(), 4),
                tern(r.dst.0.into(), r.dst.1.into(), 4),
                tern(r.proto.0.into(), r.proto.1.into(), 1),
                tern(r.dport.0.into(), r.dport.1.into(), 2),
                tern(r.class.0.into(), r.class.1.into(), 1),
                tern(r.flags.0.into(), r.flags.1.into(), 1),
            ],
            priority: *p,
        };
        t.insert(k, i as u32).unwrap();
    }
    let permits = rules.iter().filter(|r| r.1).map(|r| r.0).collect();
    (t, permits)
}

/// acl_large's `acl` with 10K rules: packets from 1 000 flows (the `p4jet gen`
/// default: the lookup cache holds them all) and from 64K flows (every key
/// distinct: the cache misses), with and without the cache.
fn bench_acl(c: &mut Criterion) {
    let mut rng = Rng(6);
    let t0 = std::time::Instant::now();
    let (t, permits) = acl_table(10_000, &mut rng);
    eprintln!(
        "acl_10k: 10 000 rules inserted in {:.1} ms",
        t0.elapsed().as_secs_f64() * 1e3
    );
    let flows = |nf: usize, rng: &mut Rng| -> Vec<[u8; 13]> {
        (0..nf)
            .map(|_| acl_key(&permits[rng.below(permits.len() as u64) as usize], rng))
            .collect()
    };
    let f1k = flows(1000, &mut rng);
    let keys1k: Vec<u8> = (0..NKEYS)
        .flat_map(|_| f1k[rng.below(1000) as usize])
        .collect();
    let keys64k: Vec<u8> = flows(NKEYS, &mut rng).concat();
    bench_table(c, "acl_10k_1k_flows", t.clone(), &keys1k);
    bench_table(c, "acl_10k_64k_flows", t.clone(), &keys64k);
    let mut off = t;
    off.set_cache_mode(CacheMode::Off);
    bench_table(c, "acl_10k_nocache", off, &keys64k);
}

/// acl_large's small tables: `port_class` (one 16-bit range field, 4
/// entries) and `src_port_filter` (exact protocol, 16-bit source-port range,
/// 4 entries): lookups, and a write (delete one entry and insert it again,
/// each rebuilding the small-table structures; reported per write).
fn bench_small(c: &mut Criterion) {
    let range = |lo: u16, hi: u16| FieldMatch::Range {
        low: lo.to_be_bytes().to_vec(),
        high: hi.to_be_bytes().to_vec(),
    };
    let mut pc = Table::new(vec![spec(MatchKind::Range, 16)], 16).unwrap();
    for (i, (lo, hi)) in [(0, 1023), (8080, 8089), (1024, 49151), (49152, 65535)]
        .into_iter()
        .enumerate()
    {
        let k = MatchKey {
            fields: vec![range(lo, hi)],
            priority: i as i32,
        };
        pc.insert(k, i as u32).unwrap();
    }
    let mut sf = Table::new(
        vec![spec(MatchKind::Exact, 8), spec(MatchKind::Range, 16)],
        16,
    )
    .unwrap();
    for (i, (p, lo, hi)) in [
        (17, 0, 1023),
        (17, 1900, 1900),
        (17, 11211, 11211),
        (6, 0, 0),
    ]
    .into_iter()
    .enumerate()
    {
        let k = MatchKey {
            fields: vec![FieldMatch::Exact(vec![p]), range(lo, hi)],
            priority: i as i32,
        };
        sf.insert(k, i as u32).unwrap();
    }
    let mut rng = Rng(7);
    let pc_keys: Vec<u8> = (0..NKEYS)
        .flat_map(|_| (rng.next() as u16).to_be_bytes())
        .collect();
    let sf_keys: Vec<u8> = (0..NKEYS)
        .flat_map(|_| {
            let p = [6u8, 17, 1][rng.below(3) as usize];
            let port = rng.next() as u16;
            [p, (port >> 8) as u8, port as u8]
        })
        .collect();
    for (name, t) in [("small_port_class", &pc), ("small_src_port_filter", &sf)] {
        let keys = if name == "small_port_class" {
            &pc_keys
        } else {
            &sf_keys
        };
        bench_table(c, name, t.clone(), keys);
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Elements(2));
        let mut t = t.clone();
        g.bench_function("write", |b| {
            b.iter(|| {
                let (h, k, v) = t
                    .iter()
                    .next()
                    .map(|(h, k, v)| (h, k.into_owned(), *v))
                    .unwrap();
                t.delete(h).unwrap();
                black_box(t.insert(k, v).unwrap())
            })
        });
        g.finish();
    }
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
    targets = bench_exact, bench_lpm32, bench_lpm128, bench_ternary, bench_acl, bench_exact_insert, bench_small
}
criterion_main!(benches);
