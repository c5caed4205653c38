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

#[test]
fn p4jet_matches_bmv2_on_random_entries_and_frames() {
    let Some(shared) = shared_dir() else {
        return skip("../shared is absent");
    };
    let bmv2 = shared.join("reference/bin/simple_switch");
    if !bmv2.is_file() {
        return skip("no reference simple_switch in ../shared/reference");
    }
    let Some(cli) = stock_cli() else {
        return skip("no stock simple_switch_CLI");
    };
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
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
        let dir = corpus.join(name);
        let commands = dir.join(format!("{name}.commands"));
        let cfg = DiffConfig {
            program: dir.join(format!("{name}.json")),
            commands: commands.is_file().then_some(commands),
            seeds: corpus_seeds(&dir),
            chunk: 3000,
            chunks: 2,
            first_chunk: 0,
            seed: 20_260_101,
            reference: SwitchSpec::bmv2(&bmv2),
            p4jet: SwitchSpec::p4jet(Path::new(p4jet())),
            cli: StockCli { path: cli.clone() },
            work: work.join(name),
            found: None,
            max_minimize: 0,
            ports: 8,
            keep: false,
        };
        let s = run(&cfg, &mut |l| eprintln!("{l}")).unwrap();
        total += s.frames;
        if s.chunks_differing > 0 {
            failures.push(format!("{name}:\n{}", s.reports.join("\n")));
        }
    }
    assert!(total >= 70_000, "{total} frames");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
