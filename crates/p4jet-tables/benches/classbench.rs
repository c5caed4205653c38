//! ClassBench-style ACLs (`p4jet gen acl --profile acl1|fw1|ipc1`) against
//! acl_large's `acl` table: lookups with uniformly random and with
//! rule-derived (locality) traffic, the lookup cache on (`auto`) and off, and
//! run-time updates (a delete and a re-insert of the same rule).
//!
//! `cargo bench -p p4jet-tables --bench classbench` (`-- acl1` for one set;
//! `P4JET_CB_ENTRIES=100000` for larger tables).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use p4jet_gen::{AclProfile, GenOptions, Traffic, UseCase, Variant};
use p4jet_tables::{CacheMode, FieldMatch, KeyFieldSpec, MatchKey, MatchKind, Table};

const BATCH: usize = 32;
const WIDTHS: [usize; 6] = [4, 4, 1, 2, 1, 1];

fn num(x: &str, nbytes: usize) -> Vec<u8> {
    let n: u64 = if x.contains('.') {
        x.split('.')
            .fold(0, |a, p| (a << 8) | p.parse::<u64>().unwrap())
    } else if let Some(h) = x.strip_prefix("0x") {
        u64::from_str_radix(h, 16).unwrap()
    } else {
        x.parse().unwrap()
    };
    n.to_be_bytes()[8 - nbytes..].to_vec()
}

/// The `acl` entries of a generated commands text.
fn acl_entries(cmds: &str) -> Vec<MatchKey> {
    cmds.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() > 10 && w[1] == "IngressImpl.acl").then(|| MatchKey {
                fields: (0..6)
                    .map(|i| {
                        let (v, m) = w[3 + i].split_once("&&&").unwrap();
                        FieldMatch::Ternary {
                            value: num(v, WIDTHS[i]),
                            mask: num(m, WIDTHS[i]),
                        }
                    })
                    .collect(),
                priority: w[10].parse().unwrap(),
            })
        })
        .collect()
}

fn class_of(p: u16) -> u8 {
    match p {
        0..=1023 => 1,
        8080..=8089 => 4,
        1024..=49151 => 2,
        _ => 3,
    }
}

/// acl_large's `acl` key of each frame, packed.
fn acl_keys(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut pk = Vec::new();
    for f in frames {
        let ip = &f[14..];
        let l4 = &ip[usize::from(ip[0] & 15) * 4..];
        let (dport, flags) = match ip[9] {
            6 => (u16::from_be_bytes([l4[2], l4[3]]), l4[13]),
            17 => (u16::from_be_bytes([l4[2], l4[3]]), 0),
            _ => (0, 0),
        };
        pk.extend_from_slice(&ip[12..20]);
        pk.push(ip[9]);
        pk.extend_from_slice(&dport.to_be_bytes());
        pk.push(if ip[9] == 1 { 0 } else { class_of(dport) });
        pk.push(flags);
    }
    pk
}

fn table(entries: &[MatchKey], mode: CacheMode) -> Table<u32> {
    let spec = WIDTHS
        .iter()
        .map(|w| KeyFieldSpec {
            kind: MatchKind::Ternary,
            bit_width: 8 * *w as u32,
        })
        .collect();
    let mut t = Table::new(spec, 1 << 24).unwrap();
    t.set_cache_mode(mode);
    for (i, k) in entries.iter().enumerate() {
        t.insert(k.clone(), i as u32).unwrap();
    }
    t
}

fn bench_profile(c: &mut Criterion, profile: AclProfile) {
    let n: usize = std::env::var("P4JET_CB_ENTRIES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    for traffic in [Traffic::Random, Traffic::Locality] {
        let g = p4jet_gen::generate(
            UseCase::Acl,
            &GenOptions {
                entries: n,
                packets: 65_536,
                variant: Variant::Large,
                acl_profile: Some(profile),
                traffic,
                ..GenOptions::default()
            },
        )
        .unwrap();
        let entries = acl_entries(&g.commands);
        let keys = acl_keys(&g.frames);
        for (mode, label) in [(CacheMode::Auto, "cache"), (CacheMode::Off, "nocache")] {
            let t = table(&entries, mode);
            let kb = t.key_bytes();
            let nk = keys.len() / kb;
            let name = format!(
                "{}_{}k_{}_{label}",
                profile.name(),
                n / 1000,
                traffic.name()
            );
            eprintln!(
                "{name}: {} entries, {} tuples, {:.0} bytes/entry",
                t.len(),
                t.num_tuples(),
                t.memory_bytes() as f64 / t.len() as f64
            );
            let mut gr = c.benchmark_group(&name);
            gr.throughput(Throughput::Elements(BATCH as u64));
            let mut pos = 0usize;
            gr.bench_function("lookup", |b| {
                b.iter(|| {
                    let s = pos;
                    pos = (pos + BATCH) % (nk - BATCH);
                    let mut acc = 0u32;
                    for i in s..s + BATCH {
                        if let Some((h, _)) = t.lookup(&keys[i * kb..(i + 1) * kb]) {
                            acc = acc.wrapping_add(h);
                        }
                    }
                    black_box(acc)
                })
            });
            let mut out = vec![None; BATCH];
            let mut pos = 0usize;
            gr.bench_function("lookup_batch", |b| {
                b.iter(|| {
                    let s = pos;
                    pos = (pos + BATCH) % (nk - BATCH);
                    t.lookup_batch(&keys[s * kb..(s + BATCH) * kb], &mut out);
                    black_box(out[BATCH - 1].map(|(h, _)| h))
                })
            });
            gr.finish();
        }
        if traffic == Traffic::Random {
            // run-time updates: delete one rule and insert it again
            let mut t = table(&entries, CacheMode::Auto);
            let mut hs: Vec<u32> = t.iter().map(|(h, _, _)| h).collect();
            let mut i = 0usize;
            let mut gr = c.benchmark_group(format!("{}_{}k_update", profile.name(), n / 1000));
            gr.throughput(Throughput::Elements(2));
            gr.bench_function("delete_insert", |b| {
                b.iter_batched(
                    || (),
                    |()| {
                        let j = i % entries.len();
                        i += 1;
                        t.delete(hs[j]).unwrap();
                        hs[j] = t.insert(entries[j].clone(), j as u32).unwrap();
                    },
                    BatchSize::SmallInput,
                )
            });
            gr.finish();
        }
    }
}

fn bench_acl1(c: &mut Criterion) {
    bench_profile(c, AclProfile::Acl1);
}

fn bench_fw1(c: &mut Criterion) {
    bench_profile(c, AclProfile::Fw1);
}

fn bench_ipc1(c: &mut Criterion) {
    bench_profile(c, AclProfile::Ipc1);
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
    targets = bench_acl1, bench_fw1, bench_ipc1
}
criterion_main!(benches);
