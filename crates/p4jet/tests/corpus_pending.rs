//! The pending corpus programs (tests/corpus-pending: corners where p4jet does not yet
//! behave like bmv2, each README says why) run through `p4jet stf --strict-ports`: p4jet
//! must report the failure cleanly (a failed test or a load error naming the JSON path,
//! exit status 1), never crash. A pending program that passes fails this test on
//! purpose: move it to tests/corpus/, where the corpus tests then guard it.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::Command;

fn pending() -> Vec<PathBuf> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus-pending");
    let mut v: Vec<PathBuf> = std::fs::read_dir(base)
        .unwrap()
        .flatten()
        .map(|d| d.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
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

#[test]
fn pending_corners_fail_cleanly_and_none_passes_unnoticed() {
    // empty when every corner runs like bmv2
    let programs = pending();
    let mut now_pass = vec![];
    let mut crashed = vec![];
    for dir in programs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let json = dir.join(format!("{name}.json"));
        let tests = stf_files(&dir);
        assert!(!tests.is_empty(), "{name} has no STF test");
        assert!(dir.join("README.md").is_file(), "{name} has no README");
        let out = Command::new(env!("CARGO_BIN_EXE_p4jet"))
            .args(["stf", "--strict-ports"])
            .arg(&json)
            .args(&tests)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        match out.status.code() {
            Some(0) => now_pass.push(name),
            Some(1) => eprintln!("pending {name}: still fails\n{text}"),
            _ => crashed.push(format!("{name} ({}):\n{text}", out.status)),
        }
    }
    assert!(crashed.is_empty(), "p4jet crashed:\n{}", crashed.join("\n"));
    assert!(
        now_pass.is_empty(),
        "pending program(s) now pass, move them to tests/corpus/: {now_pass:?}"
    );
}
