//! The load-time parser and deparser plans give exactly what the general code gives: for
//! every corpus program, every packet of its STF tests and random mutations of them
//! (truncated at every length, bytes flipped), parsing with plans and without leaves the
//! same headers, validity, stack indexes, varbit lengths, payload offset and parser error,
//! and deparsing gives the same frame.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use p4jet_engine::{Engine, EngineConfig, PacketCtx, Scratch};

fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

/// (program JSON, its STF files) for every corpus program, plus the bench variants with
/// the STF files of the program they scale up.
fn programs() -> Vec<(PathBuf, Vec<PathBuf>)> {
    let root = corpus_root();
    let mut out = vec![];
    for e in std::fs::read_dir(&root).unwrap().flatten() {
        let dir = e.path();
        if !dir.is_dir() || dir.ends_with("bench") {
            continue;
        }
        let json: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|f| f.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        let mut stf = vec![];
        collect_stf(&dir.join("tests"), &mut stf);
        for j in json {
            out.push((j, stf.clone()));
        }
    }
    for (bench, like) in [
        ("l2_large", "basic_l2"),
        ("router_large", "simple_router"),
        ("acl_large", "acl_firewall"),
    ] {
        let mut stf = vec![];
        collect_stf(&root.join(like).join("tests"), &mut stf);
        out.push((root.join("bench").join(format!("{bench}.json")), stf));
    }
    out.sort();
    assert!(out.len() >= 20, "corpus not found");
    out
}

fn collect_stf(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_stf(&p, out);
        } else if p.extension().is_some_and(|x| x == "stf") {
            out.push(p);
        }
    }
}

/// The frames of the `packet` lines of an STF file.
fn stf_packets(path: &Path) -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = vec![];
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("packet") {
            continue;
        }
        let _port = words.next();
        let hex: String = words.collect::<Vec<_>>().concat();
        if !hex.len().is_multiple_of(2) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        out.push(bytes);
    }
    out
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

/// Every frame, every truncation of it, and a few copies with random bytes changed.
fn variants(frames: &[Vec<u8>], rnd: &mut impl FnMut() -> u64) -> Vec<Vec<u8>> {
    let mut out = vec![];
    for f in frames {
        out.push(f.clone());
        for n in 0..f.len().min(120) {
            out.push(f[..n].to_vec());
        }
        for _ in 0..16 {
            let mut g = f.clone();
            if g.is_empty() {
                break;
            }
            for _ in 0..1 + rnd() % 4 {
                let i = (rnd() as usize) % g.len().min(80);
                g[i] = rnd() as u8;
            }
            out.push(g);
        }
    }
    out
}

fn run(e: &Engine, frame: &[u8], sc: &mut Scratch) -> PacketCtx {
    let cs = e.new_control_state().unwrap();
    let mut ctx = Box::new(e.new_ctx(frame.len() + 512));
    ctx.pkt.set(frame);
    ctx.reset(&e.prog);
    e.parse(&cs, std::slice::from_mut(&mut ctx), sc);
    *ctx
}

/// The program loaded with the fused plan, and as the plain reading (`reference`).
fn engines(json_path: &Path) -> (Engine, Engine) {
    let json = std::fs::read_to_string(json_path).unwrap();
    let planned = p4jet_engine::load(&json, EngineConfig::default()).unwrap();
    let general = p4jet_engine::load(
        &json,
        EngineConfig {
            engine: p4jet_engine::EngineKind::Reference,
            ..EngineConfig::default()
        },
    )
    .unwrap();
    (planned, general)
}

#[test]
fn planned_parser_and_deparser_match_the_general_code() {
    let mut rnd = rng(0x5eed_1234_abcd_0001);
    let mut checked = 0usize;
    for (json_path, stfs) in programs() {
        let (planned, general) = engines(&json_path);
        let cs = planned.new_control_state().unwrap();
        let mut frames: Vec<Vec<u8>> = stfs.iter().flat_map(|s| stf_packets(s)).collect();
        frames.truncate(64);
        let mut sc = Scratch::default();
        for frame in variants(&frames, &mut rnd) {
            let mut a = run(&planned, &frame, &mut sc);
            let mut b = run(&general, &frame, &mut sc);
            let what = format!("{} frame {frame:02x?}", json_path.display());
            assert_eq!(a.phv.data, b.phv.data, "headers: {what}");
            assert_eq!(a.phv.valid, b.phv.valid, "validity: {what}");
            assert_eq!(a.phv.stack_next, b.phv.stack_next, "stacks: {what}");
            assert_eq!(a.phv.varbit_bits, b.phv.varbit_bits, "varbits: {what}");
            assert_eq!(a.payload_off, b.payload_off, "payload offset: {what}");
            planned.deparse(&mut a, &mut sc, &cs);
            general.deparse(&mut b, &mut sc, &cs);
            assert_eq!(a.pkt.data(), b.pkt.data(), "deparsed: {what}");
            assert_eq!(a.phv.data, b.phv.data, "headers after deparse: {what}");
            checked += 1;
        }
    }
    assert!(checked > 10_000, "only {checked} frames checked");
}

/// The deparser's one-copy runs hold for any set of valid headers, not only the sets a
/// parser leaves: headers made valid or invalid at random after parsing (as controls
/// do with `setValid`, `setInvalid`, encapsulation and decapsulation) are deparsed to
/// the same frame with plans and without.
#[test]
fn deparser_runs_match_the_general_code_for_any_valid_set() {
    let mut rnd = rng(0x5eed_1234_abcd_0002);
    let mut checked = 0usize;
    // deparses in the case of a whole-deparser run, and of a shorter one
    let mut runs_taken = [0usize; 2];
    for (json_path, stfs) in programs() {
        let (planned, general) = engines(&json_path);
        let cs = planned.new_control_state().unwrap();
        let d = &planned.plan().deparser;
        // varbit headers keep the lengths the parser gave them: toggle only fixed ones
        let fixed: Vec<u32> = d
            .headers
            .iter()
            .filter(|(_, _, len)| len.is_some())
            .map(|&(h, ..)| h)
            .collect();
        let mut frames: Vec<Vec<u8>> = stfs.iter().flat_map(|s| stf_packets(s)).collect();
        frames.truncate(16);
        let mut sc = Scratch::default();
        for frame in &frames {
            for round in 0..8 {
                let mut a = run(&planned, frame, &mut sc);
                let mut b = run(&general, frame, &mut sc);
                let mask = rnd();
                for (i, &h) in fixed.iter().enumerate() {
                    // round 0: every header valid (the whole run); then at random
                    let v = round == 0 || mask >> (i % 64) & 1 == 1;
                    a.phv.valid[h as usize] = v;
                    b.phv.valid[h as usize] = v;
                }
                // a run's case, told apart from the plan's own test: exactly the first
                // k headers of the deparser are valid
                let valid: Vec<bool> = d
                    .headers
                    .iter()
                    .map(|&(h, ..)| a.phv.valid[h as usize])
                    .collect();
                for r in d.runs.iter() {
                    let k = r.k as usize;
                    if valid[..k].iter().all(|&v| v) && !valid[k..].iter().any(|&v| v) {
                        runs_taken[usize::from(!r.is_all(d))] += 1;
                    }
                }
                planned.deparse(&mut a, &mut sc, &cs);
                general.deparse(&mut b, &mut sc, &cs);
                let what = format!(
                    "{} frame {frame:02x?} valid {:?}",
                    json_path.display(),
                    a.phv.valid
                );
                assert_eq!(a.pkt.data(), b.pkt.data(), "deparsed: {what}");
                checked += 1;
            }
        }
    }
    assert!(checked > 1_000, "only {checked} deparses checked");
    assert!(
        runs_taken.iter().all(|&n| n > 10),
        "too few deparses in a run's case (whole, shorter): {runs_taken:?}"
    );
}
