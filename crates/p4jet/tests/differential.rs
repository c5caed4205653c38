//! A bounded slice of the differential run against the reference simple_switch
//! (`p4jet-diff`, docs/differential.md): random entries and frames through a set of
//! corpus programs on bmv2 and on p4jet, every output frame, port, counter, register
//! and CLI answer compared; no difference may stay unexplained. The long runs (10^6
//! frames per program) are `p4jet-diff corpus`. Skipped with a message when the
//! reference or the stock CLI is unavailable (`P4JET_REQUIRE_REFERENCE=1` makes that
//! a failure).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::path::Path;

use common::*;
use p4jet_diff::cli::StockCli;
use p4jet_diff::diff::{DiffConfig, corpus_seeds, run};
use p4jet_diff::switch::SwitchSpec;

fn skip(msg: &str) {
    let msg = format!("SKIPPED: differential slice: {msg}");
    if std::env::var_os("P4JET_REQUIRE_REFERENCE").is_some() {
        panic!("{msg}");
    }
    skipped(&msg);
}

/// The reference simple_switch and the stock CLI, or None after saying why the test
/// is skipped.
fn reference() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let Some(shared) = shared_dir() else {
        skip("../shared is absent");
        return None;
    };
    let bmv2 = shared.join("reference/bin/simple_switch");
    if !bmv2.is_file() {
        skip("no reference simple_switch in ../shared/reference");
        return None;
    }
    let Some(cli) = stock_cli() else {
        skip("no stock simple_switch_CLI");
        return None;
    };
    Some((bmv2, cli))
}

/// The slice's settings for corpus program `name`: its commands in every third chunk
/// when it has them, 2 chunks of 3,000 frames.
fn corpus_config(name: &str, bmv2: &Path, cli: &Path, work: &Path) -> DiffConfig {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus")
        .join(name);
    let commands = dir.join(format!("{name}.commands"));
    DiffConfig {
        program: dir.join(format!("{name}.json")),
        commands: commands.is_file().then_some(commands),
        seeds: corpus_seeds(&dir),
        chunk: 3000,
        chunks: 2,
        first_chunk: 0,
        seed: 20_260_101,
        reference: SwitchSpec::bmv2(bmv2),
        p4jet: SwitchSpec::p4jet(Path::new(p4jet())),
        cli: StockCli {
            path: cli.to_path_buf(),
        },
        work: work.join(name),
        found: None,
        max_minimize: 0,
        ports: 8,
        keep: false,
    }
}

#[test]
fn p4jet_matches_bmv2_on_random_entries_and_frames() {
    let Some((bmv2, cli)) = reference() else {
        return;
    };
    let work = tmpdir("differential");
    let mut failures = vec![];
    let mut total = 0;
    for name in [
        "basic_l2",
        "simple_router",
        "acl_firewall",
        "ecmp",
        "hashes",
        "arith_ops",
        "control_flow",
        "multicast",
        "l2_learning",
        "stateful",
        "recirc_resubmit",
        "p4_14_router",
    ] {
        let cfg = corpus_config(name, &bmv2, &cli, &work);
        let s = run(&cfg, &mut |l| eprintln!("{l}")).unwrap();
        total += s.frames;
        if s.chunks_differing > 0 {
            failures.push(format!("{name}:\n{}", s.reports.join("\n")));
        }
    }
    assert!(total >= 70_000, "{total} frames");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A chunk played again (`Pair::rerun`) tells bmv2's stale fields of invalid headers
/// from real differences: length_ops reads a field of a header that frames too short
/// for it leave invalid (bmv2 acts on what an earlier packet left there), and every
/// difference goes away when both switches zero headers at each packet's start; a
/// p4jet that really differs (it drops packets after one pass, so recirculated and
/// resubmitted packets are lost) stays unexplained.
#[test]
fn played_again_stale_fields_are_explained_and_real_differences_are_not() {
    let Some((bmv2, cli)) = reference() else {
        return;
    };
    let work = tmpdir("differential-rerun");
    let cfg = |name: &str, p4jet: SwitchSpec| DiffConfig {
        commands: None,
        chunk: 4000,
        chunks: 1,
        seed: 1,
        p4jet,
        ..corpus_config(name, &bmv2, &cli, &work)
    };
    let s = run(
        &cfg("length_ops", SwitchSpec::p4jet(Path::new(p4jet()))),
        &mut |l| eprintln!("{l}"),
    )
    .unwrap();
    assert_eq!(s.chunks_differing, 0, "{}", s.reports.join("\n"));
    assert_eq!(
        s.chunks_stale,
        1,
        "the chunk should differ first and be explained as stale:\n{}",
        s.reports.join("\n")
    );

    let mut one_pass = SwitchSpec::p4jet(Path::new(p4jet()));
    let at = one_pass
        .pre_args
        .iter()
        .position(|a| a == "--max-passes")
        .unwrap();
    one_pass.pre_args[at + 1] = "1".into();
    let s = run(&cfg("recirc_resubmit", one_pass), &mut |l| eprintln!("{l}")).unwrap();
    assert_eq!(s.chunks_differing, 1, "{}", s.reports.join("\n"));
    assert!(
        s.reports.iter().any(|r| r.contains("remain")),
        "{}",
        s.reports.join("\n")
    );
}

/// The zeroed variant of a program (`p4jet_diff::zeroed`) behaves as the program on
/// everything but stale fields: every corpus program's STF tests pass with it. (Runs
/// without the reference.)
#[test]
fn zeroed_programs_pass_the_corpus_stf_tests() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let work = tmpdir("zeroed");
    let mut checked = 0;
    let mut failures = vec![];
    for d in std::fs::read_dir(&corpus).unwrap().flatten() {
        let dir = d.path();
        let name = d.file_name().to_string_lossy().to_string();
        let json = dir.join(format!("{name}.json"));
        let mut stfs: Vec<_> = std::fs::read_dir(dir.join("tests"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "stf"))
            .collect();
        if !json.is_file() || stfs.is_empty() {
            continue;
        }
        stfs.sort();
        let zeroed =
            p4jet_diff::zeroed::zeroed_program(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let zpath = work.join(format!("{name}.json"));
        std::fs::write(&zpath, zeroed).unwrap();
        let out = std::process::Command::new(p4jet())
            .arg("stf")
            .arg("--strict-ports")
            .arg(&zpath)
            .args(&stfs)
            .output()
            .unwrap();
        checked += 1;
        if !out.status.success() {
            failures.push(format!(
                "{name}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(checked >= 30, "{checked} programs");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
