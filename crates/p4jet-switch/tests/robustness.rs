//! Bad input never crashes the switch: random and mutated frames through every corpus
//! program, and mutated JSON through the loader, must give packets processed or clear
//! errors, never a panic.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use p4jet_switch::{Switch, SwitchConfig};
use serde_json::Value;

fn corpus() -> Vec<(String, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let mut v = vec![];
    for d in std::fs::read_dir(root).unwrap().flatten() {
        let name = d.file_name().to_string_lossy().to_string();
        let json = d.path().join(format!("{name}.json"));
        if let Ok(text) = std::fs::read_to_string(&json) {
            v.push((name, text));
        }
    }
    v.sort();
    v
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Frames a real program sees: plausible Ethernet/IPv4/IPv6/MPLS/VLAN starts with random
/// tails, truncated at every length, plus pure garbage.
fn frames(rng: &mut Rng) -> Vec<Vec<u8>> {
    let heads: [&[u8]; 6] = [
        &[0x08, 0x00, 0x45, 0x00],
        &[0x86, 0xdd, 0x60, 0x00],
        &[0x88, 0x47, 0x00, 0x01],
        &[0x81, 0x00, 0x00, 0x05, 0x08, 0x00],
        &[0x08, 0x00, 0x4f, 0x00],
        &[0x12, 0x34],
    ];
    let mut out = vec![vec![], vec![0u8; 1], vec![0xffu8; 13]];
    for h in heads {
        let mut f = vec![0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 1];
        f.extend_from_slice(h);
        for _ in 0..120 {
            f.push(rng.next() as u8);
        }
        for cut in 0..f.len() {
            out.push(f[..cut].to_vec());
        }
    }
    for _ in 0..300 {
        let n = rng.below(300);
        out.push((0..n).map(|_| rng.next() as u8).collect());
    }
    out
}

#[test]
fn random_and_truncated_frames_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for (name, json) in corpus() {
        let mut sw =
            Switch::new(&json, SwitchConfig::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let fs = frames(&mut rng);
        let mut sent = 0usize;
        for (i, f) in fs.iter().enumerate() {
            sw.inject((i % 4) as u32, f);
        }
        sw.run_until_idle(&mut |_, _| sent += 1);
        assert_eq!(sw.worker.pending(), 0, "{name}");
        let rx: u64 = sw.worker.core.ports.iter().map(|p| p.rx).sum();
        assert_eq!(rx as usize, fs.len(), "{name}: every frame was received");
    }
}

fn mutate(v: &mut Value, rng: &mut Rng, depth: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            let keys: Vec<String> = m.keys().cloned().collect();
            let k = &keys[rng.below(keys.len())];
            match rng.below(4) {
                0 if depth > 0 => {
                    m.remove(k);
                }
                _ => mutate(m.get_mut(k).unwrap(), rng, depth + 1),
            }
        }
        Value::Array(a) if !a.is_empty() => {
            let i = rng.below(a.len());
            match rng.below(4) {
                0 => {
                    a.remove(i);
                }
                1 => {
                    let dup = a[i].clone();
                    a.push(dup);
                }
                _ => mutate(&mut a[i], rng, depth + 1),
            }
        }
        _ => {
            *v = match rng.below(7) {
                0 => Value::Null,
                1 => Value::from(-1),
                2 => Value::from(u64::MAX),
                3 => Value::from("0xzz"),
                4 => Value::from("no_such_name"),
                5 => Value::from(100_000),
                _ => Value::Array(vec![]),
            }
        }
    }
}

#[test]
fn mutated_json_is_rejected_or_loaded_never_a_panic() {
    let mut rng = Rng(42);
    let mut rejected = 0;
    let mut total = 0;
    for (name, json) in corpus() {
        let base: Value = serde_json::from_str(&json).unwrap();
        for _ in 0..60 {
            let mut v = base.clone();
            for _ in 0..=rng.below(3) {
                mutate(&mut v, &mut rng, 0);
            }
            total += 1;
            let text = v.to_string();
            match Switch::new(&text, SwitchConfig::default()) {
                Err(e) => {
                    assert!(!e.is_empty(), "{name}: empty error");
                    rejected += 1;
                }
                Ok(mut sw) => {
                    // whatever loaded must forward without panicking
                    sw.inject(0, &[0u8; 64]);
                    sw.run_until_idle(&mut |_, _| {});
                }
            }
        }
        // truncated documents
        for cut in [0, 1, json.len() / 3, json.len() / 2, json.len() - 1] {
            let e = Switch::new(&json[..cut], SwitchConfig::default()).err();
            assert!(e.is_some(), "{name}: truncated JSON accepted");
        }
    }
    assert!(
        rejected > total / 10,
        "mutations should mostly be caught: {rejected}/{total}"
    );
}

#[test]
fn load_errors_name_the_json_path() {
    let (_, json) = corpus().into_iter().find(|(n, _)| n == "basic_l2").unwrap();
    let mut v: Value = serde_json::from_str(&json).unwrap();
    v["actions"][0]["primitives"] =
        serde_json::json!([{"op": "no_such_primitive", "parameters": []}]);
    let e = Switch::new(&v.to_string(), SwitchConfig::default())
        .err()
        .unwrap();
    assert!(
        e.contains("actions[0].primitives[0]") && e.contains("no_such_primitive"),
        "{e}"
    );
    let mut v: Value = serde_json::from_str(&json).unwrap();
    v["pipelines"][0]["tables"][0]["key"][0]["match_type"] = Value::from("fuzzy");
    let e = Switch::new(&v.to_string(), SwitchConfig::default())
        .err()
        .unwrap();
    assert!(
        e.contains("pipelines[0].tables[0].key[0]") && e.contains("fuzzy"),
        "{e}"
    );
}
