//! Engine options reach what they configure: `sub_batch` becomes every table's lookup
//! stage size (clamped to the 1..=64 the tables support).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use p4jet_engine::{DEFAULT_SUB_BATCH, EngineConfig};

fn router_json() -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus/bench/router_large.json");
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn sub_batch_sets_every_tables_stage_size() {
    let json = router_json();
    for (asked, got) in [
        (DEFAULT_SUB_BATCH, DEFAULT_SUB_BATCH),
        (5, 5),
        (64, 64),
        (0, 1),
        (100, 64),
    ] {
        let e = p4jet_engine::load(
            &json,
            EngineConfig {
                sub_batch: asked,
                ..EngineConfig::default()
            },
        )
        .unwrap();
        let cs = e.new_control_state().unwrap();
        assert!(cs.tables.len() >= 3);
        for t in &cs.tables {
            assert_eq!(t.entries.prefetch_distance(), got, "sub_batch {asked}");
        }
    }
}
