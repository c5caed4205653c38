//! An ingress pass that runs on through egress (`Passed::Egress`: the unicast check
//! turns each lane into the deparser's form and the egress functions run on the same
//! lanes) leaves every packet as the two passes one after the other do: the same
//! frame, headers, validity, and deparsed mark, for every corpus program over random
//! frames. A batch with a packet that is not a plain unicast does not go on.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;
use common::{corpus, engine, jit_skipped, packets, random_frame, rng};

use p4jet_engine::{EngineKind, Passed, SUB_BATCH, Scratch};

#[test]
fn ingress_through_egress_leaves_packets_as_two_passes_do() {
    if jit_skipped() {
        return;
    }
    let mut rnd = rng(0x7e57_0e61_e55e_0001);
    let (mut through, mut programs_through, mut held) = (0usize, 0usize, 0usize);
    for path in corpus() {
        let json = std::fs::read_to_string(&path).unwrap();
        // one engine runs the passes fused, the other one after the other
        let (a, b) = (
            engine(&json, EngineKind::Jit),
            engine(&json, EngineKind::Jit),
        );
        let (cs_a, cs_b) = (
            a.new_control_state().unwrap(),
            b.new_control_state().unwrap(),
        );
        let (ex_a, ex_b) = (a.new_externs(), b.new_externs());
        let (mut sc_a, mut sc_b) = (Scratch::default(), Scratch::default());
        let mut went = false;
        for round in 0..20u64 {
            let n = 1 + (rnd() % SUB_BATCH as u64) as usize;
            let frames: Vec<Vec<u8>> = (0..n).map(|_| random_frame(&mut rnd)).collect();
            let now = 1000 + 7 * round;
            let mut x = packets(&a, &frames);
            let mut y = packets(&b, &frames);
            let fused = a.ingress_pass(&cs_a, &ex_a, &mut x, &mut sc_a, now, true);
            let first = b.ingress_pass(&cs_b, &ex_b, &mut y, &mut sc_b, now, false);
            let what = format!("{} round {round}", path.display());
            match fused {
                Passed::Egress => {
                    assert_eq!(first, Passed::Unicast, "{what}: the same batch, not fused");
                    b.egress_pass(&cs_b, &ex_b, &mut y, &mut sc_b, now);
                    through += n;
                    went = true;
                }
                // not every packet a plain unicast: the batch stops after ingress
                other => {
                    assert_eq!(other, first, "{what}");
                    assert_ne!(other, Passed::Unicast, "{what}: a unicast batch not fused");
                    held += n;
                }
            }
            for (i, (p, q)) in x.iter().zip(&y).enumerate() {
                let what = format!("{what} packet {i}");
                assert_eq!(p.pkt.data(), q.pkt.data(), "frame: {what}");
                assert_eq!(p.phv.data, q.phv.data, "headers: {what}");
                assert_eq!(p.phv.valid, q.phv.valid, "validity: {what}");
                assert_eq!(p.deparsed, q.deparsed, "deparsed: {what}");
                assert_eq!(p.exit, q.exit, "exit: {what}");
                assert_eq!(p.payload_off, q.payload_off, "payload offset: {what}");
                assert_eq!(
                    (p.arch.port, p.arch.enq_us, p.arch.instance_type),
                    (q.arch.port, q.arch.enq_us, q.arch.instance_type),
                    "architecture fields: {what}"
                );
            }
        }
        programs_through += usize::from(went);
    }
    // with empty tables a third of the programs forward to port 0 (8 of 34 when
    // written); the others drop, flood or make requests
    assert!(
        programs_through >= 6 && through > 2_000,
        "only {through} packets of {programs_through} programs went through egress"
    );
    assert!(held > 0, "no batch stopped after ingress");
}
