//! Every STF test of the corpus (tests/corpus/*/tests/*.stf and tests/ext/*.stf) passes
#![allow(clippy::unwrap_used)]
//! through `p4jet stf --strict-ports`, as the corpus's strict runner ran them on bmv2,
//! under each engine (reference, interp, jit) with the single-threaded worker, and with
//! the pipelined one.

use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

fn stf_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for sub in ["tests", "tests/ext"] {
        if let Ok(rd) = std::fs::read_dir(dir.join(sub)) {
            for f in rd.flatten() {
                if f.path().extension().is_some_and(|e| e == "stf") {
                    out.push(f.path());
                }
            }
        }
    }
    out.sort();
    out
}

/// The reference engine: the plain reading of the program, no fusion.
#[test]
fn corpus_stf_tests_pass_reference() {
    corpus_passes("rtc", "reference");
}

/// The fused plan, interpreted.
#[test]
fn corpus_stf_tests_pass_interp() {
    corpus_passes("rtc", "interp");
}

/// The fused plan compiled to native code.
#[test]
fn corpus_stf_tests_pass_jit() {
    corpus_passes("rtc", "jit");
}

/// The same with the ingress and egress halves of the worker on two threads joined by
/// rings (`--mode pipeline`, default engine): splitting the worker changes no result.
#[test]
fn corpus_stf_tests_pass_pipelined() {
    corpus_passes("pipeline", "jit");
}

fn corpus_passes(mode: &str, engine: &str) {
    let mut programs: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .flatten()
        .map(|d| d.path())
        .filter(|p| p.is_dir() && !stf_files(p).is_empty())
        .collect();
    programs.sort();
    assert!(programs.len() >= 22, "corpus missing: {}", programs.len());
    let mut failures = vec![];
    let mut total = 0;
    for dir in programs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let json = dir.join(format!("{name}.json"));
        let tests = stf_files(&dir);
        total += tests.len();
        let out = Command::new(env!("CARGO_BIN_EXE_p4jet"))
            .arg("stf")
            .arg("--strict-ports")
            .args(["--mode", mode, "--engine", engine])
            .arg(&json)
            .args(&tests)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            failures.push(format!(
                "{name} ({engine}):\n{stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert_eq!(total, 106, "the corpus has 106 STF tests, found {total}");
    assert!(
        failures.is_empty(),
        "{} program(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
