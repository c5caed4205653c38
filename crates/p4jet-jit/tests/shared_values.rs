//! Large exact and LPM tables, whose compiled lookups read each entry's shared value
//! instead of its slot (`Table::looks_up_shared`), leave the same headers, validity and
//! lookup and hit counts as the interpreter: router_large's and l2_large's tables
//! with 64,000 entries added to each, most of their values among a few common ones, the rest
//! (more than `SHARED_MAX` distinct ones) shared up to that limit and kept in their
//! slots beyond; then again after a quarter of the entries were deleted and another
//! quarter given other values.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;
use common::{assert_same_table_counts, engine, jit_skipped, packets, rng, set_ipv4_checksum};
use p4jet_engine::state::{ControlState, EntryAction, EntryLoc, EntryValue, Op, OpResult};
use p4jet_engine::{Engine, EngineKind, Externs, Scratch};
use p4jet_ir::{ActionCall, MatchKind};
use p4jet_tables::{FieldMatch, MatchKey};

const ENTRIES: usize = 64_000;

/// An entry's action: the table's first action with parameters, its data one of 8
/// common blobs (85 %) or random.
fn value(e: &Engine, t: usize, rnd: &mut impl FnMut() -> u64) -> EntryAction {
    let p = &e.prog;
    let a = p.tables[t]
        .actions
        .iter()
        .copied()
        .find(|&a| p.actions[a as usize].data_bytes > 0)
        .unwrap();
    let n = p.actions[a as usize].data_bytes as usize;
    let seed = if rnd() % 100 < 85 { rnd() % 8 } else { rnd() };
    let mut r = rng(seed | 1);
    EntryAction::Direct(ActionCall {
        action: a,
        data: (0..n).map(|_| r() as u8).collect::<Vec<u8>>().into(),
    })
}

/// One field's key for entry `i`: exact keys from `i` (and the random high bytes),
/// LPM keys /16 to /32 under 10.0.0.0/8.
fn key(kind: MatchKind, width: u32, i: usize, rnd: &mut impl FnMut() -> u64) -> FieldMatch {
    let n = width.div_ceil(8) as usize;
    match kind {
        MatchKind::Exact => {
            let mut v: Vec<u8> = (0..n).map(|_| rnd() as u8).collect();
            let tail = (i as u32).to_be_bytes();
            let k = n.min(4);
            v[n - k..].copy_from_slice(&tail[4 - k..]);
            FieldMatch::Exact(v)
        }
        MatchKind::Lpm => {
            let len = (16 + rnd() % 17) as u32;
            let mut v = (0x0a00_0000 | (rnd() as u32 & 0x00ff_ffff)).to_be_bytes();
            let mask = if len == 32 {
                u32::MAX
            } else {
                !(u32::MAX >> len)
            };
            v = (u32::from_be_bytes(v) & mask).to_be_bytes();
            FieldMatch::Lpm {
                value: v.to_vec(),
                prefix_len: len,
            }
        }
        k => panic!("no keys of kind {k:?} here"),
    }
}

/// Entries for every table of `e` with one exact or LPM key: the ops and the keys.
fn fill(e: &Engine, rnd: &mut impl FnMut() -> u64) -> (Vec<Op>, Vec<(u32, MatchKey)>) {
    let (mut ops, mut keys) = (vec![], vec![]);
    for (t, table) in e.prog.tables.iter().enumerate() {
        let [k] = table.keys.as_slice() else {
            continue;
        };
        if !matches!(k.kind, MatchKind::Exact | MatchKind::Lpm)
            || k.width > 64
            || (k.kind == MatchKind::Lpm && k.width != 32)
            || table.direct_counter.is_some()
            || table.support_timeout
        {
            continue;
        }
        for i in 0..ENTRIES {
            let key = MatchKey {
                fields: vec![key(k.kind, k.width, i, rnd)],
                priority: -1,
            };
            ops.push(Op::AddEntry {
                table: t as u32,
                key: key.clone(),
                value: EntryValue {
                    action: value(e, t, rnd),
                    timeout_ms: 0,
                },
            });
            keys.push((t as u32, key));
        }
    }
    (ops, keys)
}

/// Deletes every fourth entry of `keys` and gives every fourth other one a new value.
fn churn(e: &Engine, keys: &[(u32, MatchKey)], rnd: &mut impl FnMut() -> u64) -> Vec<Op> {
    let mut ops = vec![];
    for (i, (t, k)) in keys.iter().enumerate() {
        let entry = EntryLoc::Key(k.clone());
        match i % 4 {
            0 => ops.push(Op::DeleteEntry { table: *t, entry }),
            1 => ops.push(Op::ModifyEntry {
                table: *t,
                entry,
                action: value(e, *t as usize, rnd),
            }),
            _ => {}
        }
    }
    ops
}

fn apply(cs: &mut ControlState, ops: &[Op]) {
    for op in ops {
        cs.apply(op);
        // (random keys may repeat: a duplicate is refused, its delete finds nothing)
        assert!(
            cs.last.is_ok() || matches!(cs.last, OpResult::Table(_) | OpResult::Refused(_)),
            "{op:?}: {:?}",
            cs.last
        );
    }
}

/// An Ethernet + IPv4 frame to a destination MAC and address from the entries' keys
/// (or random ones), with a correct header checksum.
fn frame(keys: &[(u32, MatchKey)], rnd: &mut impl FnMut() -> u64) -> Vec<u8> {
    let mut f: Vec<u8> = (0..64).map(|_| rnd() as u8).collect();
    for _ in 0..2 {
        let (_, k) = &keys[(rnd() % keys.len() as u64) as usize];
        match &k.fields[0] {
            FieldMatch::Exact(v) if v.len() == 6 => f[0..6].copy_from_slice(v),
            FieldMatch::Lpm { value, .. } => {
                f[30..34].copy_from_slice(value);
                f[33] |= rnd() as u8 & 1;
            }
            _ => {}
        }
    }
    f[12] = 0x08;
    f[13] = 0x00;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&50u16.to_be_bytes());
    f[22] = 64;
    set_ipv4_checksum(&mut f);
    f
}

fn compare(
    prog: &str,
    es: &[Engine; 2],
    states: &mut [(ControlState, Externs, Scratch); 2],
    keys: &[(u32, MatchKey)],
    rnd: &mut impl FnMut() -> u64,
) {
    for round in 0..30 {
        let frames: Vec<Vec<u8>> = (0..1 + rnd() % 64).map(|_| frame(keys, rnd)).collect();
        let mut outs = vec![];
        for (e, (cs, ex, sc)) in es.iter().zip(states.iter_mut()) {
            let mut pkts = packets(e, &frames);
            e.ingress_pass(cs, ex, &mut pkts, sc, 1000, false);
            outs.push(pkts);
        }
        for (i, (x, y)) in outs[0].iter().zip(&outs[1]).enumerate() {
            assert_eq!(x.phv.data, y.phv.data, "{prog} round {round} packet {i}");
            assert_eq!(x.phv.valid, y.phv.valid, "{prog} round {round} packet {i}");
        }
    }
    assert_same_table_counts(&states[0].2, &states[1].2, |t| format!("{prog}: table {t}"));
}

#[test]
fn compiled_lookups_of_shared_values_answer_as_the_interpreter() {
    if jit_skipped() {
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/bench");
    for prog in ["router_large.json", "l2_large.json"] {
        let json = std::fs::read_to_string(root.join(prog)).unwrap();
        let es = [
            engine(&json, EngineKind::Interp),
            engine(&json, EngineKind::Jit),
        ];
        let mut rnd = rng(0x5ba4_ed00_0000_0001);
        let (ops, keys) = fill(&es[0], &mut rnd);
        assert!(!keys.is_empty(), "{prog}: no exact or LPM table");
        let mut states = es.each_ref().map(|e| {
            let mut cs = e.new_control_state().unwrap();
            apply(&mut cs, &ops);
            (cs, e.new_externs(), Scratch::default())
        });
        // the case under test: large tables sharing most values, not all
        let mut shared_tables = 0;
        for ts in &states[1].0.tables {
            if ts.entries.looks_up_shared() {
                shared_tables += 1;
                let distinct = ts.entries.shared_values();
                assert!(
                    (8..=p4jet_tables::SHARED_MAX).contains(&distinct),
                    "{prog}: {distinct} values shared"
                );
            }
        }
        assert!(shared_tables > 0, "{prog}: no table looks up shared values");
        compare(prog, &es, &mut states, &keys, &mut rnd);
        let more = churn(&es[0], &keys, &mut rnd);
        for (cs, _, _) in &mut states {
            apply(cs, &more);
        }
        assert!(
            states[1]
                .0
                .tables
                .iter()
                .any(|ts| ts.entries.looks_up_shared()),
            "{prog}: no table looks up shared values after the churn"
        );
        compare(prog, &es, &mut states, &keys, &mut rnd);
        let hits: u64 = states[1].2.table_stats().iter().map(|s| s.hits).sum();
        assert!(hits > 500, "{prog}: only {hits} hits");
    }
}
