//! Mutated p4c output through the loader: structural mutations of the JSON tree
//! (keys removed, values of other types, numbers and names changed, elements
//! duplicated or dropped) and byte-level damage to the text. Loading must answer an
//! error or a working switch, never panic or hang; a program that loads forwards a
//! few frames.

use std::path::Path;
use std::time::{Duration, Instant};

use p4jet_diff::generate::{mutate, random_frame};
use p4jet_switch::{Switch, SwitchConfig};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use crate::corpus::CorpusProgram;
use crate::harness::{Report, Watchdog, guarded, rss_kib, save_crash};

fn random_value(rng: &mut StdRng, strings: &[String]) -> Value {
    match rng.gen_range(0..12) {
        0 => Value::Null,
        1 => Value::Bool(rng.r#gen()),
        2 => Value::from(rng.gen_range(-3i64..70)),
        3 => Value::from(
            [
                -1i64,
                0,
                1,
                2,
                8,
                9,
                16,
                32,
                48,
                64,
                65,
                128,
                129,
                4096,
                i64::MAX,
                i64::MIN,
            ][rng.gen_range(0..16)],
        ),
        4 => Value::from(rng.r#gen::<f64>() * 1e6),
        5 => Value::from(format!(
            "0x{:x}",
            rng.r#gen::<u64>() >> rng.gen_range(0..64)
        )),
        6 => Value::from(
            [
                "",
                "*",
                "0x",
                "-0x1",
                "0xZZ",
                "default",
                "regular",
                "stack",
                "expression",
                "field",
                "hexstr",
                "lookahead",
            ][rng.gen_range(0..12)],
        ),
        7 if !strings.is_empty() => Value::from(strings[rng.gen_range(0..strings.len())].clone()),
        8 => Value::Array(vec![]),
        9 => Value::Object(serde_json::Map::new()),
        10 => Value::Array(vec![
            Value::from(rng.gen_range(0..4)),
            Value::from(rng.gen_range(0..4)),
        ]),
        _ => Value::from(rng.gen_range(0..1000)),
    }
}

/// Every string in the document (names to swap around).
pub(crate) fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) if s.len() < 64 => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// Counts the nodes of a tree.
fn count(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count).sum(),
        Value::Object(o) => o.values().map(count).sum(),
        _ => 0,
    }
}

/// One structural mutation at a random node.
pub(crate) fn mutate_tree(doc: &mut Value, strs: &[String], rng: &mut StdRng) {
    let n = count(doc);
    let mut i = rng.gen_range(0..n);
    let target = nth_mut(doc, &mut i);
    let Some(node) = target else { return };
    match node {
        Value::Object(o) if !o.is_empty() && rng.gen_bool(0.5) => {
            let keys: Vec<String> = o.keys().cloned().collect();
            let k = &keys[rng.gen_range(0..keys.len())];
            if rng.gen_bool(0.5) {
                o.remove(k);
            } else {
                o.insert(k.clone(), random_value(rng, strs));
            }
        }
        Value::Array(a) if !a.is_empty() && rng.gen_bool(0.6) => {
            let j = rng.gen_range(0..a.len());
            match rng.gen_range(0..4) {
                0 => {
                    a.remove(j);
                }
                1 => {
                    let x = a[j].clone();
                    a.insert(j, x);
                }
                2 => {
                    let k = rng.gen_range(0..a.len());
                    a.swap(j, k);
                }
                _ => a[j] = random_value(rng, strs),
            }
        }
        Value::Number(num) => {
            let v = num.as_i64().unwrap_or(0);
            *node = Value::from(match rng.gen_range(0..4) {
                0 => v.wrapping_add(1),
                1 => v.wrapping_sub(1),
                2 => v.wrapping_mul(2),
                _ => -v,
            });
        }
        _ => *node = random_value(rng, strs),
    }
}

fn nth_mut<'a>(v: &'a mut Value, i: &mut usize) -> Option<&'a mut Value> {
    if *i == 0 {
        return Some(v);
    }
    *i -= 1;
    match v {
        Value::Array(a) => {
            for x in a.iter_mut() {
                let c = count(x);
                if *i < c {
                    return nth_mut(x, i);
                }
                *i -= c;
            }
            None
        }
        Value::Object(o) => {
            for x in o.values_mut() {
                let c = count(x);
                if *i < c {
                    return nth_mut(x, i);
                }
                *i -= c;
            }
            None
        }
        _ => None,
    }
}

/// Byte-level damage to the text.
pub(crate) fn damage_text(t: &mut Vec<u8>, rng: &mut StdRng) {
    match rng.gen_range(0..4) {
        0 => t.truncate(rng.gen_range(0..=t.len())),
        1 if !t.is_empty() => {
            let i = rng.gen_range(0..t.len());
            t[i] = b"{}[],:\"0-9e.\\ntfu"[rng.gen_range(0..17)];
        }
        2 if !t.is_empty() => {
            let i = rng.gen_range(0..t.len());
            let j = rng.gen_range(i..=t.len().min(i + 64));
            t.drain(i..j);
        }
        _ => {
            let i = rng.gen_range(0..=t.len());
            t.splice(i..i, b"{\"a\":[1,2,{}]}".iter().copied());
        }
    }
}

/// Runs `docs` mutated documents.
pub fn campaign(
    programs: &[CorpusProgram],
    docs: u64,
    seed: u64,
    crashes: &Path,
    hang_limit: Duration,
) -> Report {
    let mut rep = Report {
        target: "json".into(),
        unit: "documents",
        ..Report::default()
    };
    let dog = Watchdog::start("json", crashes, hang_limit);
    let start = Instant::now();
    let mut rng = StdRng::seed_from_u64(seed);
    let trees: Vec<(Value, Vec<String>)> = programs
        .iter()
        .filter_map(|p| {
            let v: Value = serde_json::from_str(&p.json).ok()?;
            let mut s = vec![];
            strings(&v, &mut s);
            s.sort();
            s.dedup();
            Some((v, s))
        })
        .collect();
    let (mut loaded, mut refused) = (0u64, 0u64);
    for k in 0..docs {
        let pi = rng.gen_range(0..trees.len());
        let (tree, strs) = &trees[pi];
        let mut doc = tree.clone();
        for _ in 0..rng.gen_range(1..=4) {
            mutate_tree(&mut doc, strs, &mut rng);
        }
        let mut text = serde_json::to_vec(&doc).unwrap_or_default();
        if rng.gen_range(0..10) == 0 {
            damage_text(&mut text, &mut rng);
        }
        dog.case(&text);
        let seeds = &programs[pi].seeds;
        let frames: Vec<Vec<u8>> = (0..8)
            .map(|_| {
                if !seeds.is_empty() && rng.gen_bool(0.7) {
                    let s = &seeds[rng.gen_range(0..seeds.len())];
                    if rng.gen_bool(0.5) {
                        s.clone()
                    } else {
                        mutate(s, seeds, &mut rng)
                    }
                } else {
                    random_frame(&mut rng)
                }
            })
            .collect();
        let r = guarded(|| {
            let text = String::from_utf8_lossy(&text);
            match Switch::new(&text, SwitchConfig::default()) {
                Ok(mut sw) => {
                    for (i, f) in frames.iter().enumerate() {
                        sw.inject(i as u32 % 4, f);
                    }
                    sw.run_until_idle(&mut |_, _| {});
                    true
                }
                Err(e) => {
                    assert!(!e.is_empty(), "an empty error message");
                    false
                }
            }
        });
        match r {
            Ok(true) => loaded += 1,
            Ok(false) => refused += 1,
            Err(msg) => {
                let path = save_crash(crashes, "json", rep.panics.len(), &text);
                rep.panics
                    .push(format!("{}: {msg} ({})", programs[pi].name, path.display()));
            }
        }
        rep.cases += 1;
        if k == docs / 10 {
            rep.rss_warm_kib = rss_kib();
        }
    }
    rep.rss_end_kib = rss_kib();
    rep.seconds = start.elapsed().as_secs_f64();
    rep.notes
        .push(format!("{loaded} loaded, {refused} refused with an error"));
    rep
}
