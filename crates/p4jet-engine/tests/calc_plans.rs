//! The engine's load-time plans (hash/checksum inputs, control conditions, assignment
//! sources) give exactly what the general per-packet path gives, for every calculation,
//! condition and assignment of every corpus program, over random header contents,
//! validity, payloads and action data.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::PathBuf;

use p4jet_engine::PacketCtx;
use p4jet_engine::eval::{EvalCtx, eval_bits, eval_bool};
use p4jet_engine::hash::{
    self, CrcTable, build_input, build_planned, csum_quad, csum16, csum16_planned, csum16_quad,
    fixed_input, plan,
};
use p4jet_engine::phv::Phv;
use p4jet_engine::plan::{Cond, FlatExpr};
use p4jet_ir::{ControlNode, Prim, Program};

/// Every corpus program (also the large bench variants), lowered.
fn corpus() -> Vec<(PathBuf, Program)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let mut paths = vec![];
    for dir in [root.clone(), root.join("bench")] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                for f in std::fs::read_dir(&p).into_iter().flatten().flatten() {
                    if f.path().extension().is_some_and(|x| x == "json") {
                        paths.push(f.path());
                    }
                }
            } else if p.extension().is_some_and(|x| x == "json") {
                paths.push(p);
            }
        }
    }
    paths.sort();
    assert!(paths.len() >= 20, "corpus not found: {paths:?}");
    paths
        .into_iter()
        .map(|path| {
            let json = std::fs::read_to_string(&path).unwrap();
            let p = p4jet_ir::lower(&p4jet_json::parse(&json).unwrap()).unwrap();
            (path, p)
        })
        .collect()
}

/// A seeded xorshift generator.
fn rng(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// A PHV for round `round`: random bytes on even rounds, all 0x00, 0xff or 0x01 on odd
/// ones (values at the edges of comparisons); headers valid with probability 1/2.
fn random_phv(p: &Program, round: usize, rnd: &mut impl FnMut() -> u64) -> Phv {
    let mut phv = Phv::new(p);
    let fill = [0u8, 0xff, 1][round % 3];
    for b in phv.data.iter_mut() {
        *b = if round.is_multiple_of(2) {
            rnd() as u8
        } else {
            fill
        };
    }
    for (v, h) in phv.valid.iter_mut().zip(&p.headers) {
        *v = h.metadata || rnd().is_multiple_of(2);
    }
    phv
}

#[test]
fn planned_inputs_equal_resolved_inputs() {
    let mut rnd = rng(0x2545_f491_4f6c_dd1d);
    let (mut planned, mut direct, mut quads) = (0, 0, 0);
    for (path, p) in corpus() {
        for c in &p.calculations {
            let Some(plan) = plan(&p, c) else {
                continue;
            };
            planned += 1;
            for round in 0..200 {
                let phv = random_phv(&p, round, &mut rnd);
                let payload: Vec<u8> = (0..rnd() % 40).map(|_| rnd() as u8).collect();
                let (mut a, mut b) = (vec![], vec![]);
                let ec = EvalCtx {
                    phv: &phv,
                    ahead: &[],
                    action: None,
                };
                build_input(&p, &ec, c, &payload, &mut a);
                build_planned(&p, &phv, &plan.items, &payload, &mut b);
                let what = format!("{}: calculation {}", path.display(), c.name);
                assert_eq!(a, b, "{what}");
                if let Some(pieces) = &plan.csum_pieces {
                    direct += 1;
                    assert_eq!(csum16_planned(&phv, pieces), csum16(&a), "{what}");
                    // the fixed four-piece form, for a header that is valid
                    if let Some(h) = pieces.first().map(|pc| pc.header)
                        && let Some(q) = csum_quad(pieces, h)
                        && phv.valid[h as usize]
                    {
                        quads += 1;
                        assert_eq!(csum16_quad(&phv, &q), Some(csum16(&a)), "{what}");
                    }
                }
            }
        }
    }
    assert!(planned >= 10, "only {planned} calculations planned");
    assert!(direct > 0, "no checksum summed directly from the PHV");
    assert!(quads > 0, "no checksum summed as four pieces");
}

/// A calculation's fixed layout (`hash::fixed_input`) gives the bytes the general input
/// building gives whenever the headers it reads are valid, and the table CRCs of
/// generated code (`hash::CrcTable`) the CRCs of `hash::run`, for every calculation of
/// every corpus program that has one.
#[test]
fn fixed_inputs_equal_resolved_inputs() {
    let mut rnd = rng(0x5851_f42d_4c95_7f2d);
    let (mut fixed, mut checked) = (0, 0);
    for (path, p) in corpus() {
        for c in &p.calculations {
            let Some(fi) = fixed_input(&p, c) else {
                continue;
            };
            fixed += 1;
            let what = format!("{}: calculation {}", path.display(), c.name);
            for round in 0..200 {
                let mut phv = random_phv(&p, round, &mut rnd);
                if round % 4 != 3 {
                    // mostly the case the layout is for: every header it reads valid
                    for h in &fi.headers {
                        phv.valid[*h as usize] = true;
                    }
                }
                let payload: Vec<u8> = (0..rnd() % 40).map(|_| rnd() as u8).collect();
                let mut want = vec![];
                let ec = EvalCtx {
                    phv: &phv,
                    ahead: &[],
                    action: None,
                };
                build_input(&p, &ec, c, &payload, &mut want);
                if !fi.headers.iter().all(|h| phv.valid[*h as usize]) {
                    continue;
                }
                checked += 1;
                let mut got = fi.bytes(&phv.data).unwrap();
                assert_eq!(got.len(), fi.len as usize, "{what}");
                assert_eq!(fi.sources().len(), got.len(), "{what}: one source per byte");
                if fi.payload {
                    got.extend_from_slice(&payload);
                }
                assert_eq!(got, want, "{what}");
                if let Some(t) = CrcTable::of(c.algo) {
                    assert_eq!(t.run(&want), hash::run(c.algo, &want, None), "{what}");
                }
            }
        }
    }
    assert!(fixed >= 10, "only {fixed} calculations with a fixed layout");
    assert!(checked >= 1000, "only {checked} inputs checked");
}

#[test]
fn fast_conditions_equal_tree_evaluation() {
    let mut rnd = rng(0x9e37_79b9_7f4a_7c15);
    let mut compiled = 0;
    for (path, p) in corpus() {
        for node in p.ingress.nodes.iter().chain(&p.egress.nodes) {
            let ControlNode::Cond { expr, .. } = node else {
                continue;
            };
            let Some(fc) = Cond::of(&p, *expr) else {
                continue;
            };
            compiled += 1;
            let mut chunk = vec![];
            for round in 0..300 {
                let phv = random_phv(&p, round, &mut rnd);
                let ec = EvalCtx {
                    phv: &phv,
                    ahead: &[],
                    action: None,
                };
                assert_eq!(
                    fc.test(&phv),
                    eval_bool(&p, &ec, *expr),
                    "{}: condition {expr}",
                    path.display()
                );
                let mut ctx = PacketCtx::new(&p, 64);
                ctx.phv = phv;
                chunk.push(Box::new(ctx));
            }
            let want_all = |part: &[Box<PacketCtx>], here: u64| {
                (0..part.len())
                    .filter(|&i| here >> i & 1 == 1 && fc.test(&part[i].phv))
                    .fold(0u64, |m, i| m | 1 << i)
            };
            // the batch form: the same truths, for the packets of the mask, in order
            for round in 0..30 {
                let start = (rnd() % 236) as usize;
                let part = &chunk[start..start + 64];
                // every third round all the packets (the plain walk), else a random set
                let here = if round % 3 == 0 {
                    u64::MAX
                } else {
                    rnd() ^ rnd().rotate_left(17)
                };
                let want = (0..64)
                    .filter(|&i: &usize| here >> i & 1 == 1 && fc.test(&part[i].phv))
                    .fold(0u64, |m, i| m | 1 << i);
                assert_eq!(
                    fc.truth_mask(here, part),
                    want,
                    "{}: condition {expr}",
                    path.display()
                );
                // a short chunk: no bits past its end, negated or not; with all its
                // packets (the plain walk) or a random set
                let short = &part[..(rnd() % 64) as usize];
                let inside = (1u64 << short.len()) - 1;
                assert_eq!(
                    fc.truth_mask(inside, short),
                    want_all(short, inside),
                    "{}: condition {expr} on all {} packets",
                    path.display(),
                    short.len()
                );
                assert_eq!(
                    fc.truth_mask(here, short),
                    want & inside,
                    "{}: condition {expr} on {} packets",
                    path.display(),
                    short.len()
                );
            }
        }
    }
    assert!(compiled >= 10, "only {compiled} conditions compiled");
}

#[test]
fn fast_expressions_equal_tree_evaluation() {
    let mut rnd = rng(0x1234_5678_9abc_def1);
    let mut compiled = 0;
    for (path, p) in corpus() {
        for a in &p.actions {
            let data_len = a
                .param_offsets
                .iter()
                .zip(&a.params)
                .map(|(o, pw)| *o as usize + pw.1.div_ceil(8) as usize)
                .max()
                .unwrap_or(0)
                + 16;
            for prim in &a.body {
                let Prim::Assign { src, .. } = prim else {
                    continue;
                };
                let Some(fe) = FlatExpr::of(&p, *src) else {
                    continue;
                };
                compiled += 1;
                for round in 0..300 {
                    let phv = random_phv(&p, round, &mut rnd);
                    let data: Vec<u8> = (0..data_len).map(|_| rnd() as u8).collect();
                    let ec = EvalCtx {
                        phv: &phv,
                        ahead: &[],
                        action: Some((a, &data)),
                    };
                    assert_eq!(
                        fe.eval(&ec),
                        eval_bits(&p, &ec, *src),
                        "{}: action {} expression {src}",
                        path.display(),
                        a.name
                    );
                }
            }
        }
    }
    assert!(compiled >= 10, "only {compiled} expressions compiled");
}
