//! Commands files load through the bulk path (`Cli::run_script` batches consecutive
//! `table_add` lines into one runtime-model write, one left-right publish per batch): the
//! result must be exactly what running the lines one by one gives — handles, entries,
//! output, error lines — with malformed lines and other commands in the middle.

#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;

use p4jet_control::cli::{Cli, ScriptError, ScriptOutcome};
use p4jet_runtime::{Runtime, Schema};
use p4jet_switch::{Switch, SwitchConfig};

fn bench_json(prog: &str) -> String {
    let path = format!(
        "{}/../../tests/corpus/bench/{prog}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn switch(json: &str) -> Switch {
    Switch::new(json, SwitchConfig::default()).unwrap()
}

/// The reference: every line through `Cli::execute` (one write, one publish per
/// command), collected as `run_script` reports a script.
fn one_by_one(cli: &mut Cli, sw: &mut Switch, text: &str) -> ScriptOutcome {
    let mut outcome = ScriptOutcome::default();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match cli.execute(sw, line) {
            Ok(out) => outcome.output.push_str(&out),
            Err(error) => {
                outcome.output.push_str(&error.printed());
                outcome.errors.push(ScriptError {
                    line: i + 1,
                    command: line.to_string(),
                    error,
                });
            }
        }
    }
    outcome
}

/// Everything the runtime model reports about the tables.
fn tables_state(json: &str, sw: &mut Switch) -> String {
    let program = Schema::from_json(json).unwrap();
    let mut s = String::new();
    for (i, t) in program.tables.iter().enumerate() {
        let id = p4jet_runtime::TableId(i as u32);
        let n = sw.entry_count(id);
        let entries = p4jet_runtime::all_entries(sw, id);
        let default = sw.default_entry(id);
        writeln!(s, "{}: {n:?}\n{entries:?}\n{default:?}", t.name).unwrap();
    }
    s
}

/// A pseudo-random MAC address (deterministic).
fn mac(i: u64) -> String {
    let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16;
    let b = x.to_be_bytes();
    format!(
        "{:x}:{:02x}:{:02x}:{:02x}:{:02X}:{:02x}",
        b[2], b[3], b[4], b[5], b[6], b[7]
    )
}

/// A generated L2 commands file: more than two batches of adds, duplicates (refused by
/// the switch inside a batch), malformed lines of every kind, and commands that read or
/// change the table between runs of adds.
fn l2_script() -> String {
    let mut s = String::from("# generated\n\n");
    for i in 0..10_000u64 {
        let port = i % 500;
        match i {
            17 => s.push_str("table_add dmac forward zz:00:00:00:00:01 => 1\n"),
            1000 => s.push_str("table_add nosuch forward 00:00:00:00:00:01 => 1\n"),
            2000 => s.push_str("table_add dmac nosuch 00:00:00:00:00:01 => 1\n"),
            3000 => s.push_str("table_add dmac forward 00:00:00:00:00:01 => 1 2\n"),
            4095 => s.push_str("table_add dmac forward\n"),
            4096 => s.push_str("table_add dmac forward 00:00:00:00:00:02\n"),
            5000 => s.push_str("table_add dmac forward 1:2:3:4:5:6:7 => 1\n"),
            5001 => s.push_str("table_add dmac forward 00:00:00:00:00:03 => 0x1_0\n"),
            5002 => s.push_str("table_add dmac forward 0x000000000004 => 010\n"),
            5003 => s.push_str("table_add dmac forward 5 => 99999999999999999999\n"),
            6000 => s.push_str("table_delete dmac 5\ntable_num_entries dmac\n"),
            6001 => s.push_str("table_modify dmac drop 7\ntable_dump_entry dmac 7\n"),
            6002 => s.push_str("table_delete dmac 6\n\n# a comment\n"),
            7000 => s.push_str("table_clear nosuch\n"),
            8000 => s.push_str("table_add IngressImpl.dmac drop 00:00:00:00:00:09 =>\n"),
            _ => {}
        }
        // every 997th line re-adds an earlier key: DUPLICATE_ENTRY from the switch
        let key = if i % 997 == 996 { mac(i - 500) } else { mac(i) };
        writeln!(s, "  table_add dmac forward {key} => {port}").unwrap();
    }
    s.push_str("table_num_entries dmac\n");
    s
}

/// ACL commands: ternary and range tables (priorities, refused duplicates, bad
/// priorities), then exact and keyless tables.
fn acl_script() -> String {
    let mut s = String::new();
    for i in 0..3000u32 {
        let prio = if i % 500 == 499 { i - 1 } else { i };
        let src = if i % 500 == 499 { i - 1 } else { i };
        writeln!(
            s,
            "table_add acl permit 10.{}.{}.0&&&255.255.255.0 0&&&0 6&&&255 {}&&&0xffff 0&&&0 0&&&0 => {prio}",
            src / 256,
            src % 256,
            80 + src % 7,
        )
        .unwrap();
        if i == 100 {
            s.push_str("table_add acl deny 1.2.3.4&&&255.255.255.255 0&&&0 6&&&255 80&&&0xffff 0&&&0 0&&&0 => x\n");
            s.push_str("table_add acl deny 1.2.3.4&&&255.255.255.255 0&&&0 6&&&255 80&&&0xffff 0&&&0 =>  5\n");
            s.push_str("table_add acl deny 1.2.3.4/8 0&&&0 6&&&255 80&&&0xffff 0&&&0 0&&&0 => 5\n");
        }
    }
    s.push_str("table_add port_class set_port_class 0->1023 => 1 10\n");
    s.push_str("table_add port_class set_port_class 1024->2047 => 2 20\n");
    s.push_str("table_add port_class set_port_class 5->1 => 3 30\n");
    s.push_str("table_add port_class set_port_class 0->1023 => 1 10\n");
    s.push_str("table_add src_port_filter deny_source 17 53->53 => 1\n");
    s.push_str("table_add port_map forward 1 => 2\n");
    s.push_str("table_add port_map forward 1 => 3\n");
    s.push_str("table_add tbl_drop drop =>\n");
    s.push_str("table_set_default port_map drop\n");
    s
}

/// The kind of every failed line, as text.
fn error_kinds(outcome: &ScriptOutcome) -> Vec<String> {
    outcome
        .errors
        .iter()
        .map(|e| e.error.kind.to_string())
        .collect()
}

fn check(json: &str, text: &str) -> ScriptOutcome {
    let mut reference_sw = switch(json);
    let mut cli = Cli::new(json).unwrap();
    let reference = one_by_one(&mut cli, &mut reference_sw, text);
    let reference_state = tables_state(json, &mut reference_sw);

    let mut sw = switch(json);
    let mut cli = Cli::new(json).unwrap();
    let bulk = cli.run_script(&mut sw, text);
    assert_eq!(bulk.errors, reference.errors);
    assert_eq!(bulk.output, reference.output);
    assert_eq!(tables_state(json, &mut sw), reference_state);

    let mut sw = switch(json);
    let mut cli = Cli::new(json).unwrap();
    let quiet = cli.run_script_quiet(&mut sw, text);
    assert_eq!(quiet.errors, reference.errors);
    assert_eq!(quiet.output, "");
    assert_eq!(tables_state(json, &mut sw), reference_state);
    reference
}

#[test]
fn bulk_loaded_l2_table_equals_one_by_one() {
    let json = bench_json("l2_large");
    let outcome = check(&json, &l2_script());
    let kinds = error_kinds(&outcome);
    // malformed lines and refused duplicates, each named by its line
    assert!(
        kinds.iter().any(|k| k.contains("DUPLICATE_ENTRY")),
        "{kinds:?}"
    );
    assert!(kinds.iter().any(|k| k.starts_with("Invalid match key")));
    assert!(kinds.iter().any(|k| k.contains("Invalid table name")));
    assert!(kinds.iter().any(|k| k.contains("needs 1 parameters")));
    assert!(outcome.errors.len() >= 20, "{:?}", outcome.errors);
    let added = outcome
        .output
        .matches("Entry has been added with handle")
        .count();
    assert!(added > 9_900, "{added}");
    // the deleted slot is reused with the next version
    assert!(outcome.output.contains("with handle 16777221\n"));
}

#[test]
fn bulk_loaded_ternary_and_range_tables_equal_one_by_one() {
    let json = bench_json("acl_large");
    let outcome = check(&json, &acl_script());
    let kinds = error_kinds(&outcome);
    assert!(
        kinds.iter().any(|k| k.contains("DUPLICATE_ENTRY")),
        "{kinds:?}"
    );
    assert!(
        kinds.iter().any(|k| k.contains("valid priority")),
        "{kinds:?}"
    );
}

#[test]
fn bulk_loaded_entries_forward() {
    let json = bench_json("l2_large");
    let mut sw = switch(&json);
    let mut cli = Cli::new(&json).unwrap();
    let mut text = String::new();
    for i in 0..5000u32 {
        writeln!(
            text,
            "table_add dmac forward 02:00:00:00:{:02x}:{:02x} => {}",
            i >> 8,
            i & 0xff,
            i % 4
        )
        .unwrap();
    }
    assert!(!cli.run_script_quiet(&mut sw, &text).failed());
    let mut out = std::collections::BTreeMap::<u32, usize>::new();
    for i in [0u32, 1, 4095, 4096, 4999] {
        let mut f = vec![2, 0, 0, 0, (i >> 8) as u8, (i & 0xff) as u8];
        f.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0x88, 0xb5]);
        f.resize(60, 0);
        sw.inject(0, &f);
        sw.run_until_idle(&mut |p, _| *out.entry(p).or_default() += 1);
        assert_eq!(out.iter().collect::<Vec<_>>(), vec![(&(i % 4), &1)], "{i}");
        out.clear();
    }
}
