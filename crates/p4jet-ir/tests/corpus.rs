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

/// The write analysis (`Program::writes`) against the JSON, for the two
/// standard-metadata fields whose reads the switch skips when nothing writes them:
/// where the analysis says "never written", no primitive other than `mark_to_drop`
/// names the field as a parameter and no parser operation names it; the programs
/// known to assign them are found.
#[test]
fn std_fields_written_only_where_the_program_writes_them() {
    let mut found = vec![];
    for f in corpus_jsons() {
        let text = std::fs::read_to_string(&f).unwrap();
        let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
        let j = p4jet_json::parse(&text).unwrap();
        let p = p4jet_ir::lower(&j).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        for (field, id) in [("mcast_grp", p.std.mcast_grp), ("priority", p.std.priority)] {
            let Some(id) = id else { continue };
            let want = serde_json::json!({"type": "field", "value": ["standard_metadata", field]});
            let in_actions = raw["actions"].as_array().into_iter().flatten().any(|a| {
                a["primitives"].as_array().into_iter().flatten().any(|pr| {
                    pr["op"] != "mark_to_drop"
                        && pr["parameters"]
                            .as_array()
                            .is_some_and(|ps| ps.contains(&want))
                })
            });
            let in_parser = raw["parsers"]
                .to_string()
                .contains(&format!("[\"standard_metadata\",\"{field}\"]"));
            let written = p.writes[id as usize];
            if !written {
                assert!(
                    !in_actions && !in_parser,
                    "{name}: {field} is named by a primitive or parser op but not counted as written"
                );
            }
            if written {
                found.push(format!("{name}:{field}"));
            }
        }
        if name == "basic_l2.json" {
            assert!(p.writes[p.std.egress_spec.unwrap() as usize]);
            assert!(!p.writes[p.std.mcast_grp.unwrap() as usize]);
            assert!(!p.writes[p.std.priority.unwrap() as usize]);
        }
    }
    for want in [
        "multicast.json:mcast_grp",
        "l2_learning.json:mcast_grp",
        "v1model_misc.json:priority",
    ] {
        assert!(
            found.iter().any(|f| f == want),
            "{want} not found in {found:?}"
        );
    }
}
