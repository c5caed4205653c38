//! The compiled ingress pass leaves the same headers, validity and table lookup and
//! hit counts as the interpreted one, for every corpus program over random frames
//! (headers of the usual kinds with random contents, and random bytes): tables applied
//! inline by the generated code (keyless, with a const default entry) are counted
//! like the looked-up ones.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;
use common::{assert_same_table_counts, corpus, engine, jit_skipped, packets, random_frame, rng};

use p4jet_engine::{EngineKind, Scratch};

#[test]
fn compiled_ingress_counts_tables_like_the_interpreter() {
    if jit_skipped() {
        return;
    }
    let mut rnd = rng(0x0dd_ba11_5eed_0042);
    let mut compared = 0usize;
    for path in corpus() {
        let json = std::fs::read_to_string(&path).unwrap();
        let interp = engine(&json, EngineKind::Interp);
        let jit = engine(&json, EngineKind::Jit);
        let (cs_i, cs_j) = (
            interp.new_control_state().unwrap(),
            jit.new_control_state().unwrap(),
        );
        let (ex_i, ex_j) = (interp.new_externs(), jit.new_externs());
        let (mut sc_i, mut sc_j) = (Scratch::default(), Scratch::default());
        for round in 0..20 {
            let frames: Vec<Vec<u8>> = (0..1 + rnd() % 70)
                .map(|_| random_frame(&mut rnd))
                .collect();
            let mut a = packets(&interp, &frames);
            let mut b = packets(&jit, &frames);
            interp.ingress_pass(&cs_i, &ex_i, &mut a, &mut sc_i, 1000, false);
            jit.ingress_pass(&cs_j, &ex_j, &mut b, &mut sc_j, 1000, false);
            for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                let what = format!("{} round {round} packet {i}", path.display());
                assert_eq!(x.phv.data, y.phv.data, "headers: {what}");
                assert_eq!(x.phv.valid, y.phv.valid, "validity: {what}");
                compared += 1;
            }
            assert_same_table_counts(&sc_i, &sc_j, |t| {
                format!(
                    "{}: table {} after round {round}",
                    path.display(),
                    jit.prog.tables[t].name
                )
            });
        }
    }
    assert!(compared > 10_000, "only {compared} packets compared");
}
