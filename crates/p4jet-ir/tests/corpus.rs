//! Every program of the corpus loads and lowers.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

fn corpus_jsons() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let mut out = vec![];
    for dir in std::fs::read_dir(&root).expect("tests/corpus").flatten() {
        for f in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if f.path().extension().is_some_and(|e| e == "json") {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn all_corpus_programs_lower() {
    let files = corpus_jsons();
    assert!(
        files.len() >= 22,
        "expected the corpus, found {}",
        files.len()
    );
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let j = p4jet_json::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let p = p4jet_ir::lower(&j).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(!p.headers.is_empty());
        let wide = p.exprs.wide.iter().filter(|w| **w).count();
        eprintln!(
            "{}: {} tables, {} exprs ({} roots wide)",
            f.display(),
            p.tables.len(),
            p.exprs.nodes.len(),
            wide
        );
    }
}

#[test]
fn phv_sizes() {
    for f in corpus_jsons() {
        let text = std::fs::read_to_string(&f).unwrap();
        let p = p4jet_ir::lower(&p4jet_json::parse(&text).unwrap()).unwrap();
        eprintln!(
            "{}: phv {} bytes, {} headers, {} stacks, {} varbit",
            f.display(),
            p.phv_bytes,
            p.headers.len(),
            p.stacks.len(),
            p.varbit_slots
        );
    }
}
