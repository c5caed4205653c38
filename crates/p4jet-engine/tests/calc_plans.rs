//! The load-time plans of hash/checksum inputs produce exactly the bytes of the
//! per-packet resolution, for every calculation of every corpus program, over random
//! header contents, validity and payloads.

use p4jet_engine::eval::EvalCtx;
use p4jet_engine::hash::{build_input, build_planned, csum16, csum16_direct, csum16_planned, plan};
use p4jet_engine::phv::Phv;

fn corpus_programs() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let mut out = vec![];
    for dir in [root.clone(), root.join("bench")] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                for f in std::fs::read_dir(&p).into_iter().flatten().flatten() {
                    if f.path().extension().is_some_and(|x| x == "json") {
                        out.push(f.path());
                    }
                }
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn planned_inputs_equal_resolved_inputs() {
    let progs = corpus_programs();
    assert!(progs.len() >= 20, "corpus not found: {progs:?}");
    let mut planned = 0;
    let mut direct = 0;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for path in progs {
        let json = std::fs::read_to_string(&path).unwrap();
        let j = p4jet_json::parse(&json).unwrap();
        let p = p4jet_ir::lower(&j).unwrap();
        for c in &p.calculations {
            let Some(items) = plan(&p, c) else {
                continue;
            };
            planned += 1;
            for _ in 0..200 {
                let mut phv = Phv::new(&p);
                for b in phv.data.iter_mut() {
                    *b = rnd() as u8;
                }
                for (v, h) in phv.valid.iter_mut().zip(&p.headers) {
                    *v = h.metadata || rnd() % 4 != 0;
                }
                let payload: Vec<u8> = (0..rnd() % 40).map(|_| rnd() as u8).collect();
                let (mut a, mut b) = (vec![], vec![]);
                let ec = EvalCtx {
                    phv: &phv,
                    ahead: &[],
                    action: None,
                };
                build_input(&p, &ec, c, &payload, &mut a);
                build_planned(&p, &phv, &items, &payload, &mut b);
                assert_eq!(a, b, "{}: calculation {}", path.display(), c.name);
                if csum16_direct(&items) {
                    direct += 1;
                    assert_eq!(
                        csum16_planned(&phv, &items),
                        csum16(&a),
                        "{}: calculation {}",
                        path.display(),
                        c.name
                    );
                }
            }
        }
    }
    assert!(planned >= 10, "only {planned} calculations planned");
    assert!(direct > 0, "no checksum summed directly from the PHV");
}

/// Conditions recognised at load time give the tree walker's answer, for every control
/// condition of every corpus program over random PHVs (field values drawn near the
/// compared constants as well as at random).
#[test]
fn fast_conditions_equal_tree_evaluation() {
    use p4jet_engine::eval::{FastCond, eval_bool};
    use p4jet_ir::ControlNode;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut compiled = 0;
    for path in corpus_programs() {
        let json = std::fs::read_to_string(&path).unwrap();
        let p = p4jet_ir::lower(&p4jet_json::parse(&json).unwrap()).unwrap();
        for node in p.ingress.nodes.iter().chain(&p.egress.nodes) {
            let ControlNode::Cond { expr, .. } = node else {
                continue;
            };
            let Some(fc) = FastCond::compile(&p, *expr) else {
                continue;
            };
            compiled += 1;
            for round in 0..300 {
                let mut phv = Phv::new(&p);
                let fill = match round % 3 {
                    0 => 0u8,
                    1 => 0xff,
                    _ => 1,
                };
                for b in phv.data.iter_mut() {
                    *b = if round % 2 == 0 { rnd() as u8 } else { fill };
                }
                for (v, h) in phv.valid.iter_mut().zip(&p.headers) {
                    *v = h.metadata || rnd() % 2 == 0;
                }
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
            }
        }
    }
    assert!(compiled >= 10, "only {compiled} conditions compiled");
}

/// Assignment sources flattened at load give the tree walker's bits, for every
/// assignment of every corpus action over random PHVs and action data.
#[test]
fn fast_expressions_equal_tree_evaluation() {
    use p4jet_engine::eval::{FastExpr, eval_bits};
    use p4jet_ir::Prim;
    let mut x = 0x1234_5678_9abc_def1u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut compiled = 0;
    for path in corpus_programs() {
        let json = std::fs::read_to_string(&path).unwrap();
        let p = p4jet_ir::lower(&p4jet_json::parse(&json).unwrap()).unwrap();
        for a in &p.actions {
            for prim in &a.body {
                let Prim::Assign { src, .. } = prim else {
                    continue;
                };
                let Some(fe) = FastExpr::compile(&p, *src) else {
                    continue;
                };
                compiled += 1;
                let data_len = a
                    .param_offsets
                    .iter()
                    .zip(&a.params)
                    .map(|(o, pw)| *o as usize + pw.1.div_ceil(8) as usize)
                    .max()
                    .unwrap_or(0)
                    + 16;
                for round in 0..300 {
                    let mut phv = Phv::new(&p);
                    for b in phv.data.iter_mut() {
                        *b = match round % 3 {
                            0 => rnd() as u8,
                            1 => 0xff,
                            _ => 0,
                        };
                    }
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
