//! Bounded fuzz campaigns over the whole corpus (the long ones run with
//! `p4jet-fuzz`, docs/reliability.md): no panic, no hang, and saved regression cases
//! replayed.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::time::Duration;

use p4jet_fuzz::{cli, corpus, frames, json, p4rt, thrift};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

fn crashes() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-crashes")
}

const HANG: Duration = Duration::from_secs(60);

#[test]
fn frames_through_every_program() {
    let programs = corpus::load(&corpus_dir(), &[]).unwrap();
    assert!(programs.len() >= 25);
    let r = frames::campaign(&programs, 300_000, 11, &crashes(), HANG);
    eprintln!("{r}");
    assert!(r.panics.is_empty(), "{r}");
    assert!(r.cases >= 290_000);
}

#[test]
fn mutated_json_programs() {
    let programs = corpus::load(&corpus_dir(), &[]).unwrap();
    let r = json::campaign(&programs, 2_000, 12, &crashes(), HANG);
    eprintln!("{r}");
    assert!(r.panics.is_empty(), "{r}");
}

#[test]
fn cli_command_lines() {
    let programs = corpus::load(&corpus_dir(), &[]).unwrap();
    let r = cli::campaign(&programs, 60_000, 13, &crashes(), HANG);
    eprintln!("{r}");
    assert!(r.panics.is_empty(), "{r}");
}

#[test]
fn thrift_messages() {
    let programs = corpus::load(&corpus_dir(), &[]).unwrap();
    let r = thrift::campaign(&programs, 30_000, 14, &crashes(), HANG);
    eprintln!("{r}");
    assert!(r.panics.is_empty(), "{r}");
}

#[test]
fn p4runtime_messages() {
    let programs = corpus::load(&corpus_dir(), &[]).unwrap();
    // one case in 50 also over gRPC: about 400 exchanges with a running server
    let r = p4rt::campaign_with(&programs, 20_000, 15, &crashes(), HANG, 50);
    eprintln!("{r}");
    assert!(r.panics.is_empty(), "{r}");
    assert!(r.cases >= 19_000, "{r}");
}

#[test]
fn p4info_of_every_corpus_program_reads() {
    let programs = corpus::load(&corpus_dir(), &[]).unwrap();
    let mut n = 0;
    for p in &programs {
        if let Some(t) = &p.p4info {
            let info = p4rt::parse_p4info(t).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            if p.name == "p4rt_switch" {
                assert_eq!(info.tables.len(), 4);
                assert_eq!(info.digests.len(), 1);
                assert_eq!(info.value_sets.len(), 1);
            }
            n += 1;
        }
    }
    assert!(n >= 25, "{n} programs with a P4Info");
}
