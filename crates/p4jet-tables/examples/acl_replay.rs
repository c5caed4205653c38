//! Replays a `p4jet gen acl` ACL (commands.txt + trace.pcap) against the
//! `acl` table alone: `cargo run --release -p p4jet-tables --example acl_replay -- DIR`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use p4jet_tables::{FieldMatch, KeyFieldSpec, MatchKey, MatchKind, Table};

fn tern(s: &str, nbytes: usize) -> FieldMatch {
    let (v, m) = s.split_once("&&&").unwrap();
    let num = |x: &str| -> Vec<u8> {
        let n: u64 = if x.contains('.') {
            x.split('.')
                .fold(0, |a, p| (a << 8) | p.parse::<u64>().unwrap())
        } else if let Some(h) = x.strip_prefix("0x") {
            u64::from_str_radix(h, 16).unwrap()
        } else {
            x.parse().unwrap()
        };
        n.to_be_bytes()[8 - nbytes..].to_vec()
    };
    FieldMatch::Ternary {
        value: num(v),
        mask: num(m),
    }
}

fn class_of(p: u16) -> u8 {
    match p {
        0..=1023 => 1,
        8080..=8089 => 4,
        1024..=49151 => 2,
        _ => 3,
    }
}

/// Wide LPM (Waldvogel) with many routes: `lookup` vs `lookup_batch`.
fn wide_lpm(n: usize) {
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut t: Table<u32> = Table::new(
        vec![KeyFieldSpec {
            kind: MatchKind::Lpm,
            bit_width: 128,
        }],
        n,
    )
    .unwrap();
    let t0 = Instant::now();
    let mut routes = vec![];
    while t.len() < n {
        let v = (u128::from(0x2000 | (next() % 0x1000)) << 112) | (u128::from(next()) << 48);
        let l = [32, 40, 44, 48, 48, 48, 56, 64, 64, 128][(next() % 10) as usize] as u32;
        let m = if l == 0 { 0 } else { u128::MAX << (128 - l) };
        let k = MatchKey {
            fields: vec![FieldMatch::Lpm {
                value: (v & m).to_be_bytes().to_vec(),
                prefix_len: l,
            }],
            priority: 0,
        };
        if t.insert(k, l).is_ok() {
            routes.push((v & m, m));
        }
    }
    let ins = t0.elapsed().as_secs_f64();
    let keys: Vec<u8> = (0..1 << 16)
        .flat_map(|_| {
            let (v, m) = routes[(next() % routes.len() as u64) as usize];
            let h = (u128::from(next()) << 64 | u128::from(next())) & !m;
            (v | h).to_be_bytes()
        })
        .collect();
    let (mut bl, mut bb) = (f64::MAX, f64::MAX);
    let mut out = vec![None; 32];
    let mut acc = 0u32;
    for r in 0..20 {
        let ks = &keys[(r % 8) * 8192 * 16..((r % 8) + 1) * 8192 * 16];
        let t0 = Instant::now();
        for k in ks.chunks_exact(16) {
            acc = acc.wrapping_add(t.lookup(k).map_or(0, |x| x.0));
        }
        bl = bl.min(t0.elapsed().as_secs_f64() * 1e9 / 8192.0);
        let t1 = Instant::now();
        for c in ks.chunks_exact(32 * 16) {
            t.lookup_batch(c, &mut out);
            acc = acc.wrapping_add(out[31].map_or(0, |x: (u32, &u32)| x.0));
        }
        bb = bb.min(t1.elapsed().as_secs_f64() * 1e9 / 8192.0);
    }
    println!(
        "wide LPM {n} routes ({}, inserted in {ins:.2} s, {:.0} B/route): lookup {bl:.1} ns, batch {bb:.1} ns ({acc})",
        t.structure(),
        t.memory_bytes() as f64 / n as f64
    );
}

fn main() {
    if let Ok(n) = std::env::var("WLPM").map(|s| s.parse().unwrap_or(200_000)) {
        wide_lpm(n);
        return;
    }
    let dir = std::env::args().nth(1).unwrap_or("/tmp/acl".into());
    let cmds = std::fs::read_to_string(format!("{dir}/commands.txt")).unwrap();
    let widths = [4usize, 4, 1, 2, 1, 1];
    let spec: Vec<KeyFieldSpec> = widths
        .iter()
        .map(|w| KeyFieldSpec {
            kind: MatchKind::Ternary,
            bit_width: 8 * *w as u32,
        })
        .collect();
    let mut keys = vec![];
    for l in cmds.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() < 2 || w[1] != "IngressImpl.acl" {
            continue;
        }
        let fields = (0..6).map(|i| tern(w[3 + i], widths[i])).collect();
        let prio: i32 = w[10].parse().unwrap();
        keys.push(MatchKey {
            fields,
            priority: prio,
        });
    }
    let t0 = Instant::now();
    let mut t: Table<u32> = Table::new(spec, 1 << 20).unwrap();
    for (i, k) in keys.iter().enumerate() {
        t.insert(k.clone(), i as u32).unwrap();
    }
    let ins = t0.elapsed();
    if std::env::var("CHURN").is_ok() {
        // delete and re-add every entry, three times over
        let mut hs: Vec<u32> = t.iter().map(|(h, _, _)| h).collect();
        let t1 = Instant::now();
        let mut ops = 0;
        for _ in 0..3 {
            for (i, k) in keys.iter().enumerate() {
                t.delete(hs[i]).unwrap();
                hs[i] = t.insert(k.clone(), i as u32).unwrap();
                ops += 2;
            }
        }
        let el = t1.elapsed().as_secs_f64();
        println!(
            "churn: {ops} deletes and inserts on {} entries in {el:.3} s: {:.0} updates/s per copy",
            t.len(),
            ops as f64 / el
        );
        return;
    }
    // trace
    let pcap = std::fs::read(format!("{dir}/trace.pcap")).unwrap();
    let mut pos = 24;
    let mut pk = vec![];
    while pos + 16 <= pcap.len() {
        let cap = u32::from_be_bytes(pcap[pos + 8..pos + 12].try_into().unwrap()) as usize;
        let f = &pcap[pos + 16..pos + 16 + cap];
        pos += 16 + cap;
        let ip = &f[14..];
        let ihl = (ip[0] & 15) as usize * 4;
        let proto = ip[9];
        let l4 = &ip[ihl..];
        let (dport, flags) = match proto {
            6 => (u16::from_be_bytes([l4[2], l4[3]]), l4[13]),
            17 => (u16::from_be_bytes([l4[2], l4[3]]), 0),
            _ => (0, 0),
        };
        pk.extend_from_slice(&ip[12..16]);
        pk.extend_from_slice(&ip[16..20]);
        pk.push(proto);
        pk.extend_from_slice(&dport.to_be_bytes());
        pk.push(class_of(dport));
        pk.push(flags);
    }
    let kb = t.key_bytes();
    let n = pk.len() / kb;
    let hits = (0..n)
        .filter(|i| t.lookup(&pk[i * kb..(i + 1) * kb]).is_some())
        .count();
    println!(
        "{} rules inserted in {:.1} ms; {} tuples; {:.0} B/entry; {n} keys, {hits} hits",
        t.len(),
        ins.as_secs_f64() * 1e3,
        t.num_tuples(),
        t.memory_bytes() as f64 / t.len() as f64
    );
    let (mut ct, mut cc, mut cp) = (0, 0, 0);
    let mut hist = [0usize; 5];
    for i in 0..n.min(20000) {
        if let Some((a, b, c)) = t.probe_counts(&pk[i * kb..(i + 1) * kb]) {
            ct += a;
            cc += b;
            cp += c;
            hist[match b {
                0..=2 => 0,
                3..=8 => 1,
                9..=16 => 2,
                17..=32 => 3,
                _ => 4,
            }] += 1;
        }
    }
    println!(
        "candidates per key: 0-2 {} | 3-8 {} | 9-16 {} | 17-32 {} | more {}",
        hist[0], hist[1], hist[2], hist[3], hist[4]
    );
    let m = n.clamp(1, 20000) as f64;
    println!(
        "per key: {:.1} tuples, {:.2} candidates after the length bounds, {:.2} pass the filter",
        ct as f64 / m,
        cc as f64 / m,
        cp as f64 / m
    );
    if std::env::var("CACHE").is_ok_and(|v| v == "off") {
        t.set_cache_mode(p4jet_tables::CacheMode::Off);
    }
    println!("cache active: {}", t.cache_active());
    // many short rounds: on a loaded machine the fastest rounds are the ones
    // that ran undisturbed
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let per = 8192.min(n);
    let (mut ls, mut bs) = (vec![], vec![]);
    let mut out = vec![None; 32];
    let mut acc = 0u32;
    for round in 0..rounds {
        let s0 = (round * per) % (n - per + 1);
        let ks = &pk[s0 * kb..(s0 + per) * kb];
        let t0 = Instant::now();
        for k in ks.chunks_exact(kb) {
            if let Some((h, _)) = t.lookup(k) {
                acc = acc.wrapping_add(h);
            }
        }
        ls.push(t0.elapsed().as_secs_f64() * 1e9 / per as f64);
        let t1 = Instant::now();
        for c in ks.chunks_exact(32 * kb) {
            t.lookup_batch(c, &mut out);
            acc = acc.wrapping_add(out[31].map_or(0, |x: (u32, &u32)| x.0));
        }
        bs.push(t1.elapsed().as_secs_f64() * 1e9 / (per / 32 * 32) as f64);
    }
    {
        let k = &pk[..kb];
        let mut best = f64::MAX;
        for _ in 0..50 {
            let t0 = Instant::now();
            for _ in 0..10000 {
                if let Some((h, _)) = t.lookup(std::hint::black_box(k)) {
                    acc = acc.wrapping_add(h);
                }
            }
            best = best.min(t0.elapsed().as_secs_f64() * 1e9 / 10000.0);
        }
        println!("one key repeated: {best:.1} ns/lookup");
    }
    {
        // the program's port_class range table (const entries)
        let mut pc: Table<u32> = Table::new(
            vec![KeyFieldSpec {
                kind: MatchKind::Range,
                bit_width: 16,
            }],
            4,
        )
        .unwrap();
        for (i, (lo, hi)) in [(0u16, 1023u16), (8080, 8089), (1024, 49151), (49152, 65535)]
            .iter()
            .enumerate()
        {
            let k = MatchKey {
                fields: vec![FieldMatch::Range {
                    low: lo.to_be_bytes().to_vec(),
                    high: hi.to_be_bytes().to_vec(),
                }],
                priority: i as i32 + 1,
            };
            pc.insert(k, i as u32).unwrap();
        }
        let ports: Vec<[u8; 2]> = (0..8192)
            .map(|i| ((i * 7919) as u16).to_be_bytes())
            .collect();
        let mut best = f64::MAX;
        for _ in 0..50 {
            let t0 = Instant::now();
            for p in &ports {
                if let Some((h, _)) = pc.lookup(p) {
                    acc = acc.wrapping_add(h);
                }
            }
            best = best.min(t0.elapsed().as_secs_f64() * 1e9 / ports.len() as f64);
        }
        println!(
            "port_class ({} tuples): {best:.1} ns/lookup",
            pc.num_tuples()
        );
    }
    ls.sort_by(f64::total_cmp);
    bs.sort_by(f64::total_cmp);
    println!(
        "ns/key over {rounds} rounds of {per} keys: lookup min {:.1} p10 {:.1} median {:.1}; batch min {:.1} p10 {:.1} median {:.1} ({acc})",
        ls[0],
        ls[rounds / 10],
        ls[rounds / 2],
        bs[0],
        bs[rounds / 10],
        bs[rounds / 2]
    );
}
