//! Shared values (`Table::share_values`): after random inserts, modifies, deletes and
//! clears of exact and LPM tables, `lookup_batch_values` answers every key as
//! `lookup_batch_each` does (same entry, equal value), and the table shares exactly
//! the distinct values its entries hold (up to `SHARED_MAX`).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::{HashMap, HashSet};

use p4jet_tables::{FieldMatch, KeyFieldSpec, MatchKey, MatchKind, SHARED_MAX, Table};
use rand::{Rng, SeedableRng, rngs::StdRng};

/// Values: 0..16 common, others rare; odd values above 1,000,000 are not shared.
/// (The summary is one-to-one: no two values share one.)
fn summary(v: &u64) -> Option<u64> {
    (*v < 1_000_000 || v.is_multiple_of(2)).then_some(v.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

fn value(rng: &mut StdRng) -> u64 {
    match rng.gen_range(0..100) {
        0..=84 => rng.gen_range(0..16),
        85..=98 => rng.gen_range(1_000_000..1_000_100),
        _ => rng.gen_range(16..1_000_000),
    }
}

fn key(kind: MatchKind, rng: &mut StdRng) -> MatchKey {
    let v = (0x0a00_0000u32 | rng.gen_range(0..0x100_0000u32))
        .to_be_bytes()
        .to_vec();
    MatchKey {
        fields: vec![match kind {
            MatchKind::Exact => FieldMatch::Exact(v),
            _ => {
                let len = if rng.gen_range(0..10) == 0 {
                    rng.gen_range(8..24u32)
                } else {
                    rng.gen_range(24..=32u32)
                };
                let m = u32::from_be_bytes([v[0], v[1], v[2], v[3]]) & !(u32::MAX >> len);
                FieldMatch::Lpm {
                    value: m.to_be_bytes().to_vec(),
                    prefix_len: len,
                }
            }
        }],
        priority: -1,
    }
}

/// An empty table of one 32-bit field of `kind`.
fn table(kind: MatchKind) -> Table<u64> {
    Table::new(
        vec![KeyFieldSpec {
            kind,
            bit_width: 32,
        }],
        1 << 20,
    )
    .unwrap()
}

/// Checks `t` against `live`; whether its lookups read shared values.
fn check(t: &Table<u64>, live: &HashMap<u32, u64>, rng: &mut StdRng, what: &str) -> bool {
    let n = 64;
    let keys: Vec<u8> = (0..n)
        .flat_map(|_| (0x0a00_0000u32 | rng.gen_range(0..0x100_0000u32)).to_be_bytes())
        .collect();
    let mut each = vec![None; n];
    t.lookup_batch_each(&keys, n, |i, r| {
        each[i] = r.map(|(h, v)| (h & 0x00ff_ffff, *v))
    });
    let mut values = vec![None; n];
    t.lookup_batch_values(&keys, n, |i, r| values[i] = r.map(|(idx, v)| (idx, *v)));
    assert_eq!(each, values, "{what}");
    // shared: the distinct shareable values of the live entries
    let distinct: HashSet<u64> = live
        .values()
        .copied()
        .filter(|v| summary(v).is_some())
        .collect();
    if distinct.len() <= SHARED_MAX {
        assert_eq!(t.shared_values(), distinct.len(), "{what}");
    } else {
        assert_eq!(t.shared_values(), SHARED_MAX, "{what}");
    }
    // lookups read the shared values of a table of 32,768 entries or more, 8 or more
    // per distinct value
    let shared = t.len() >= 32_768 && t.shared_values() * 8 <= t.len();
    assert_eq!(t.looks_up_shared(), shared, "{what}");
    shared
}

#[test]
fn shared_values_answer_as_the_slots() {
    for kind in [MatchKind::Exact, MatchKind::Lpm] {
        let mut rng = StdRng::seed_from_u64(11);
        let mut t = table(kind);
        t.share_values(summary);
        let mut live: HashMap<u32, u64> = HashMap::new();
        let mut handles: Vec<u32> = vec![];
        let mut shared_checks = 0;
        for step in 0..200_000 {
            match rng.gen_range(0..20) {
                0..=11 => {
                    let v = value(&mut rng);
                    if let Ok(h) = t.insert(key(kind, &mut rng), v) {
                        live.insert(h & 0x00ff_ffff, v);
                        handles.push(h);
                    }
                }
                12..=14 if !handles.is_empty() => {
                    let h = handles[rng.gen_range(0..handles.len())];
                    let v = value(&mut rng);
                    t.modify(h, v).unwrap();
                    live.insert(h & 0x00ff_ffff, v);
                }
                15..=18 if !handles.is_empty() => {
                    let h = handles.swap_remove(rng.gen_range(0..handles.len()));
                    t.delete(h).unwrap();
                    live.remove(&(h & 0x00ff_ffff));
                }
                _ => {}
            }
            if step == 12_000 {
                check(&t, &live, &mut rng, &format!("{kind:?} before the clear"));
                t.clear();
                live.clear();
                handles.clear();
            }
            if step % 500 == 0 && check(&t, &live, &mut rng, &format!("{kind:?} step {step}")) {
                shared_checks += 1;
            }
        }
        check(&t, &live, &mut rng, &format!("{kind:?} at the end"));
        assert!(
            shared_checks >= 10,
            "{kind:?}: {shared_checks} checks of shared lookups"
        );
    }
}

/// More distinct values than can be shared: the rest stay in their slots and are
/// looked up from there; deleting entries frees shared numbers for new values.
#[test]
fn values_beyond_the_shared_ones_stay_in_their_slots() {
    let mut t = table(MatchKind::Exact);
    t.share_values(|v| Some(*v));
    // SHARED_MAX + 1,000 distinct values, then repeats of 16 of the shared ones
    let distinct = SHARED_MAX as u32 + 1000;
    let val = |i: u32| u64::from(if i < distinct { i } else { 1000 + i % 16 }) * 3;
    let n = 40_000u32;
    let hs: Vec<u32> = (0..n)
        .map(|i| {
            let k = MatchKey {
                fields: vec![FieldMatch::Exact(i.to_be_bytes().to_vec())],
                priority: -1,
            };
            t.insert(k, val(i)).unwrap()
        })
        .collect();
    assert_eq!(t.shared_values(), SHARED_MAX);
    assert!(t.looks_up_shared());
    let keys: Vec<u8> = (0..n).flat_map(u32::to_be_bytes).collect();
    for chunk in keys.chunks(64 * 4) {
        let m = chunk.len() / 4;
        let mut got = vec![None; m];
        t.lookup_batch_values(chunk, m, |i, r| got[i] = r.map(|(_, v)| *v));
        for (i, g) in got.iter().enumerate() {
            let k = u32::from_be_bytes(chunk[i * 4..i * 4 + 4].try_into().unwrap());
            assert_eq!(*g, Some(val(k)), "key {k}");
        }
    }
    for h in &hs[..100] {
        t.delete(*h).unwrap();
    }
    assert_eq!(t.shared_values(), SHARED_MAX - 100);
    let k = MatchKey {
        fields: vec![FieldMatch::Exact(n.to_be_bytes().to_vec())],
        priority: -1,
    };
    t.insert(k, 7).unwrap();
    assert_eq!(t.shared_values(), SHARED_MAX - 99);
}

/// Values whose summaries collide: the first one is shared, the others are read
/// from their slots; when the first one's last entry goes, the next new value with
/// that summary is shared.
#[test]
fn values_with_one_summary_but_the_first_stay_in_their_slots() {
    let mut t = table(MatchKind::Exact);
    t.share_values(|v| Some(v % 2));
    let mut hs = vec![];
    for i in 0..40_000u32 {
        let k = MatchKey {
            fields: vec![FieldMatch::Exact(i.to_be_bytes().to_vec())],
            priority: -1,
        };
        // values 0..4 (even: summary 0, odd: summary 1)
        hs.push(t.insert(k, u64::from(i % 4)).unwrap());
    }
    assert_eq!(t.shared_values(), 2);
    assert!(t.looks_up_shared());
    let keys: Vec<u8> = (0..40_000u32).flat_map(u32::to_be_bytes).collect();
    let all = |t: &Table<u64>| {
        let mut got = vec![];
        for chunk in keys.chunks(64 * 4) {
            let m = chunk.len() / 4;
            let mut part = vec![None; m];
            t.lookup_batch_values(chunk, m, |i, r| part[i] = r.map(|(_, v)| *v));
            got.extend(part);
        }
        got
    };
    let want: Vec<Option<u64>> = (0..40_000u64).map(|i| Some(i % 4)).collect();
    assert_eq!(all(&t), want);
    // every entry of value 0 gone: value 2 (summary 0 too) is shared when written again
    for (i, h) in hs.iter().enumerate() {
        if i % 4 == 0 {
            t.delete(*h).unwrap();
        }
    }
    assert_eq!(t.shared_values(), 1);
    t.modify(hs[2], 2).unwrap();
    assert_eq!(t.shared_values(), 2);
    let mut want = want;
    for (i, w) in want.iter_mut().enumerate() {
        if i % 4 == 0 {
            *w = None;
        }
    }
    assert_eq!(all(&t), want);
}
