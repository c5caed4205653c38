//! Direct counters and entry hit times after traffic are the same under every engine
//! (`reference`, `interp`, `jit`): acl_large's `acl` table (ternary entries, a direct
//! packets-and-bytes counter) and p4rt_switch's `smac` (exact entries that can age) and
//! `acl` (ternary and range, a direct counter), over IPv4 frames of random lengths of
//! which most hit an entry.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;
use common::{engine, jit_skipped, packets, rng, set_ipv4_checksum};
use p4jet_engine::state::{EntryAction, EntryValue, Op};
use p4jet_engine::{Engine, EngineKind, Externs, Scratch};
use p4jet_ir::{ActionCall, MatchKind};
use p4jet_tables::{FieldMatch, MatchKey};

/// The source MACs of the frames (and of `smac`'s entries, the last one's left out).
const MACS: [[u8; 6]; 5] = [
    [0, 1, 2, 3, 4, 5],
    [0, 1, 2, 3, 4, 6],
    [0, 0x0a, 0, 0, 0, 1],
    [0x02, 0, 0, 0, 0, 0x42],
    [0x02, 0, 0, 0, 0, 0x43],
];

/// An Ethernet + IPv4 + TCP or UDP frame, 54 to 250 bytes: source MAC from [`MACS`],
/// IPv4 addresses' first byte 10 to 14, random ports and TTL.
fn frame(rnd: &mut impl FnMut() -> u64) -> Vec<u8> {
    let n = 54 + (rnd() % 197) as usize;
    let mut f: Vec<u8> = (0..n).map(|_| rnd() as u8).collect();
    f[6..12].copy_from_slice(&MACS[(rnd() % MACS.len() as u64) as usize]);
    f[12] = 0x08;
    f[13] = 0x00;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&((n - 14) as u16).to_be_bytes());
    f[23] = if rnd().is_multiple_of(2) { 6 } else { 17 };
    f[26] = 10 + (rnd() % 5) as u8;
    f[30] = 10 + (rnd() % 5) as u8;
    // a correct header checksum (p4rt_switch drops the others)
    set_ipv4_checksum(&mut f);
    f
}

/// The engines on `json`: reference, interp, jit (compiled).
fn engines(json: &str) -> Vec<Engine> {
    EngineKind::ALL.iter().map(|&k| engine(json, k)).collect()
}

/// Entries in every table of `e` with a direct counter or entries that can age: a
/// 32-bit ternary field (an IPv4 address) matches its first byte against 10 to 13,
/// another ternary field anything, a range field anything, an exact 48-bit field one of the first four
/// [`MACS`]; the action is the table's first one without parameters.
fn entries(e: &Engine, rnd: &mut impl FnMut() -> u64) -> Vec<Op> {
    let p = &e.prog;
    let mut ops = vec![];
    for (ti, t) in p.tables.iter().enumerate() {
        if t.direct_counter.is_none() && !t.support_timeout {
            continue;
        }
        let action = t
            .actions
            .iter()
            .copied()
            .find(|&a| p.actions[a as usize].params.is_empty())
            .unwrap();
        for i in 0..12 {
            let fields = t
                .keys
                .iter()
                .map(|k| {
                    let n = k.width.div_ceil(8) as usize;
                    match k.kind {
                        MatchKind::Exact if k.width == 48 => {
                            FieldMatch::Exact(MACS[i % 4].to_vec())
                        }
                        MatchKind::Ternary if k.width == 32 => {
                            let (mut value, mut mask) = (vec![0; n], vec![0; n]);
                            value[0] = 10 + (rnd() % 4) as u8;
                            mask[0] = 0xff;
                            FieldMatch::Ternary { value, mask }
                        }
                        MatchKind::Ternary => FieldMatch::Ternary {
                            value: vec![0; n],
                            mask: vec![0; n],
                        },
                        MatchKind::Range => FieldMatch::Range {
                            low: vec![0; n],
                            high: vec![0xff; n],
                        },
                        kind => panic!("{}: no entries for {kind:?} keys here", t.name),
                    }
                })
                .collect();
            let ternary = t.keys.iter().any(|k| k.kind != MatchKind::Exact);
            ops.push(Op::AddEntry {
                table: ti as u32,
                key: MatchKey {
                    fields,
                    priority: if ternary { 1 + i as i32 } else { -1 },
                },
                value: EntryValue {
                    action: EntryAction::Direct(ActionCall {
                        action,
                        data: Default::default(),
                    }),
                    timeout_ms: 0,
                },
            });
            if !ternary && i == 3 {
                break;
            }
        }
    }
    ops
}

/// Every direct counter cell (bytes, packets) and entry hit time of `ex` in use: per
/// table, (index, value) of those not zero.
type Cells = (Vec<Vec<(usize, (u64, u64))>>, Vec<Vec<(usize, u64)>>);

fn direct_state(ex: &Externs) -> Cells {
    let counters = ex
        .direct_counters
        .iter()
        .flatten()
        .map(|c| {
            c.iter()
                .map(|c| c.read())
                .enumerate()
                .filter(|(_, c)| *c != (0, 0))
                .collect()
        })
        .collect();
    let hits = ex
        .entry_hits
        .iter()
        .flatten()
        .map(|h| {
            h.iter()
                .map(|h| h.load(std::sync::atomic::Ordering::Relaxed))
                .enumerate()
                .filter(|(_, h)| *h != 0)
                .collect()
        })
        .collect();
    (counters, hits)
}

#[test]
fn direct_counters_and_hit_times_are_the_same_under_every_engine() {
    if jit_skipped() {
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    for prog in ["bench/acl_large.json", "p4rt_switch/p4rt_switch.json"] {
        let json = std::fs::read_to_string(root.join(prog)).unwrap();
        let es = engines(&json);
        let ops = entries(&es[0], &mut rng(0x5eed_d1ec));
        assert!(!ops.is_empty(), "{prog}: no table with direct resources");
        let mut states: Vec<_> = es
            .iter()
            .map(|e| {
                let mut cs = e.new_control_state().unwrap();
                for op in &ops {
                    cs.apply(op);
                    assert!(cs.last.is_ok(), "{prog}: {op:?}: {:?}", cs.last);
                }
                (cs, e.new_externs(), Scratch::default())
            })
            .collect();
        let mut rnd = rng(0x0ddb_a11d);
        for round in 0..40u64 {
            let frames: Vec<Vec<u8>> = (0..1 + rnd() % 70).map(|_| frame(&mut rnd)).collect();
            for (e, (cs, ex, sc)) in es.iter().zip(&mut states) {
                let mut pkts = packets(e, &frames);
                e.ingress_pass(cs, ex, &mut pkts, sc, 1000 + 37 * round, false);
            }
        }
        let reference = direct_state(&states[0].1);
        let counted: u64 = reference.0.iter().flatten().map(|(_, c)| c.1).sum();
        assert!(counted > 500, "{prog}: only {counted} packets counted");
        assert!(
            reference.0.iter().all(|t| t.len() >= 4),
            "{prog}: fewer than 4 entries hit: {reference:?}"
        );
        assert!(
            reference.1.iter().all(|t| t.len() >= 4),
            "{prog}: fewer than 4 entries hit: {reference:?}"
        );
        for (e, (_, ex, _)) in es.iter().zip(&states).skip(1) {
            assert_eq!(
                direct_state(ex),
                reference,
                "{prog}: {} against reference",
                e.cfg.engine.name()
            );
        }
    }
}
