//! bmv2's services on a switch: every group of RPCs of the Thrift adapter over the
//! runtime model of a switch in memory, their error codes and handle numbering, on
//! the corpus programs, and forwarding after entries added through them.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use p4jet_runtime::{DigestId, DigestList, RuntimeError};
use p4jet_switch::runtime::PortEvent;
use p4jet_switch::{Switch, SwitchConfig};
use p4jet_thrift::Bmv2;
use p4jet_thrift::types::*;

/// bmv2's services over the switch.
fn bm(sw: &mut Switch) -> Bmv2<'_> {
    Bmv2::new(sw)
}

fn corpus_json(prog: &str) -> String {
    let path = format!(
        "{}/../../tests/corpus/{prog}/{prog}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn switch_from(json: &str) -> (Switch, Arc<AtomicU64>) {
    let clock = Arc::new(AtomicU64::new(0));
    let cfg = SwitchConfig {
        manual_clock: Some(clock.clone()),
        batch: 1,
        ..SwitchConfig::default()
    };
    (Switch::new(json, cfg).unwrap(), clock)
}

fn load(prog: &str) -> Switch {
    switch_from(&corpus_json(prog)).0
}

/// The IDL name of the exception of a failed call.
fn code<T: std::fmt::Debug>(r: Result<T, RuntimeError>) -> &'static str {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => match e.bmv2 {
            Some(c) => c.name(),
            None => panic!("expected an exception, got internal error {e}"),
        },
    }
}

/// Whether a call failed without exception code (a `TApplicationException` on the wire).
fn is_internal<T: std::fmt::Debug>(r: Result<T, RuntimeError>) -> bool {
    matches!(r, Err(e) if e.bmv2.is_none())
}

fn ex(v: &[u8]) -> BmMatchParam {
    BmMatchParam::Exact { key: v.to_vec() }
}

fn lpm(v: &[u8], len: i32) -> BmMatchParam {
    BmMatchParam::Lpm {
        key: v.to_vec(),
        prefix_length: len,
    }
}

fn tern(v: &[u8], m: &[u8]) -> BmMatchParam {
    BmMatchParam::Ternary {
        key: v.to_vec(),
        mask: m.to_vec(),
    }
}

fn range(a: &[u8], b: &[u8]) -> BmMatchParam {
    BmMatchParam::Range {
        start: a.to_vec(),
        end: b.to_vec(),
    }
}

fn prio(p: i32) -> BmAddEntryOptions {
    BmAddEntryOptions { priority: Some(p) }
}

const NOPRIO: BmAddEntryOptions = BmAddEntryOptions { priority: None };

fn mac(last: u8) -> Vec<u8> {
    vec![0, 0, 0, 0, 0, last]
}

fn eth(dst: &[u8], src: &[u8], ty: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(src);
    f.extend_from_slice(&ty.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn csum16(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in data.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, ttl: u8, payload: &[u8]) -> Vec<u8> {
    let total = 20 + payload.len() as u16;
    let mut h = vec![0x45, 0];
    h.extend_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&[0, 1, 0, 0, ttl, proto, 0, 0]);
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    let c = csum16(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

/// Sends frames and collects what leaves, per port.
fn run(sw: &mut Switch, frames: &[(u32, Vec<u8>)]) -> BTreeMap<u32, Vec<Vec<u8>>> {
    let mut out: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
    for (port, f) in frames {
        sw.inject(*port, f);
        sw.run_until_idle(&mut |p, frame| out.entry(p).or_default().push(frame.to_vec()));
    }
    out
}

// ------------------------------------------------------------------------ match tables

#[test]
fn exact_table_entries_handles_and_errors() {
    let mut sw = load("basic_l2");
    let t = "IngressImpl.dmac";
    let fwd = "IngressImpl.forward";
    assert_eq!(bm(&mut sw).bm_mt_get_num_entries(t).unwrap(), 0);
    // handles: lowest free index, version 0
    let h0 = bm(&mut sw)
        .bm_mt_add_entry(t, &[ex(&mac(0x10))], fwd, &[vec![0, 1]], NOPRIO)
        .unwrap();
    let h1 = bm(&mut sw)
        .bm_mt_add_entry(t, &[ex(&mac(0x11))], fwd, &[vec![0, 2]], NOPRIO)
        .unwrap();
    let h2 = bm(&mut sw)
        .bm_mt_add_entry(t, &[ex(&mac(0x12))], "IngressImpl.drop", &[], NOPRIO)
        .unwrap();
    assert_eq!((h0, h1, h2), (0, 1, 2));
    assert_eq!(bm(&mut sw).bm_mt_get_num_entries(t).unwrap(), 3);

    // reading back
    let e = bm(&mut sw).bm_mt_get_entry(t, h1).unwrap();
    assert_eq!(e.match_key, vec![ex(&mac(0x11))]);
    assert_eq!(e.entry_handle, 1);
    assert_eq!(e.options.priority, Some(-1));
    assert_eq!(e.life, None);
    assert_eq!(
        e.action_entry,
        BmActionEntry::ActionData {
            action_name: fwd.into(),
            action_data: vec![vec![0, 2]],
        }
    );
    let all = bm(&mut sw).bm_mt_get_entries(t).unwrap();
    assert_eq!(
        all.iter().map(|e| e.entry_handle).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    let by_key = bm(&mut sw)
        .bm_mt_get_entry_from_key(t, &[ex(&mac(0x12))], NOPRIO)
        .unwrap();
    assert_eq!(by_key.entry_handle, 2);
    assert_eq!(
        code(bm(&mut sw).bm_mt_get_entry_from_key(t, &[ex(&mac(0x99))], NOPRIO)),
        "BAD_MATCH_KEY"
    );

    // errors of add, in bmv2's order
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry("nope", &[ex(&mac(1))], fwd, &[vec![0, 1]], NOPRIO)),
        "INVALID_TABLE_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(t, &[ex(&mac(1))], "NoSuchAction", &[], NOPRIO)),
        "INVALID_ACTION_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(t, &[ex(&mac(1))], fwd, &[], NOPRIO)),
        "BAD_ACTION_DATA"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(t, &[ex(&[1, 2, 3])], fwd, &[vec![1]], NOPRIO)),
        "BAD_MATCH_KEY"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(t, &[lpm(&mac(1), 48)], fwd, &[vec![1]], NOPRIO)),
        "BAD_MATCH_KEY"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(t, &[], fwd, &[vec![1]], NOPRIO)),
        "BAD_MATCH_KEY"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(t, &[ex(&mac(0x10))], fwd, &[vec![0, 9]], NOPRIO)),
        "DUPLICATE_ENTRY"
    );

    // modify, delete, handle versions
    bm(&mut sw)
        .bm_mt_modify_entry(t, h2, fwd, &[vec![0, 3]])
        .unwrap();
    assert_eq!(
        bm(&mut sw).bm_mt_get_entry(t, h2).unwrap().action_entry,
        BmActionEntry::ActionData {
            action_name: fwd.into(),
            action_data: vec![vec![0, 3]],
        }
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_modify_entry(t, h2, fwd, &[])),
        "BAD_ACTION_DATA"
    );
    bm(&mut sw).bm_mt_delete_entry(t, h1).unwrap();
    assert_eq!(
        code(bm(&mut sw).bm_mt_delete_entry(t, h1)),
        "INVALID_HANDLE"
    );
    assert_eq!(code(bm(&mut sw).bm_mt_get_entry(t, h1)), "INVALID_HANDLE");
    let h1b = bm(&mut sw)
        .bm_mt_add_entry(t, &[ex(&mac(0x13))], fwd, &[vec![0, 3]], NOPRIO)
        .unwrap();
    assert_eq!(
        h1b,
        1 << 24 | 1,
        "the freed slot is reused with a new version"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_delete_entry(t, h1)),
        "EXPIRED_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_modify_entry(t, h1, fwd, &[vec![0, 1]])),
        "EXPIRED_HANDLE"
    );
    assert_eq!(code(bm(&mut sw).bm_mt_get_entry(t, h1)), "EXPIRED_HANDLE");
    assert_eq!(
        code(bm(&mut sw).bm_mt_delete_entry(t, 77)),
        "INVALID_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_delete_entry(t, -1)),
        "INVALID_HANDLE"
    );

    // default entry
    let drop = BmActionEntry::ActionData {
        action_name: "IngressImpl.drop".into(),
        action_data: vec![],
    };
    assert_eq!(bm(&mut sw).bm_mt_get_default_entry(t).unwrap(), drop);
    bm(&mut sw)
        .bm_mt_set_default_action(t, fwd, &[vec![0, 2]])
        .unwrap();
    assert_eq!(
        bm(&mut sw).bm_mt_get_default_entry(t).unwrap(),
        BmActionEntry::ActionData {
            action_name: fwd.into(),
            action_data: vec![vec![0, 2]],
        }
    );
    let from_empty_key = bm(&mut sw)
        .bm_mt_get_entry_from_key(t, &[], NOPRIO)
        .unwrap();
    assert_eq!(
        from_empty_key.action_entry,
        bm(&mut sw).bm_mt_get_default_entry(t).unwrap()
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_set_default_action(t, "nope", &[])),
        "INVALID_ACTION_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_set_default_action(t, fwd, &[])),
        "BAD_ACTION_DATA"
    );
    bm(&mut sw).bm_mt_reset_default_entry(t).unwrap();
    assert_eq!(bm(&mut sw).bm_mt_get_default_entry(t).unwrap(), drop);

    // clear keeps the default unless asked, and restarts handle numbering
    bm(&mut sw)
        .bm_mt_set_default_action(t, fwd, &[vec![0, 2]])
        .unwrap();
    bm(&mut sw).bm_mt_clear_entries(t, false).unwrap();
    assert_eq!(bm(&mut sw).bm_mt_get_num_entries(t).unwrap(), 0);
    assert_ne!(bm(&mut sw).bm_mt_get_default_entry(t).unwrap(), drop);
    bm(&mut sw).bm_mt_clear_entries(t, true).unwrap();
    assert_eq!(bm(&mut sw).bm_mt_get_default_entry(t).unwrap(), drop);
    let h = bm(&mut sw)
        .bm_mt_add_entry(t, &[ex(&mac(0x10))], fwd, &[vec![0, 1]], NOPRIO)
        .unwrap();
    assert_eq!(h, 0);

    // ageing is not enabled on this table
    assert_eq!(
        code(bm(&mut sw).bm_mt_set_entry_ttl(t, h, 100)),
        "AGEING_DISABLED"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_get_num_entries("IngressImpl.nope")),
        "INVALID_TABLE_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_get_entries("nope")),
        "INVALID_TABLE_NAME"
    );
}

#[test]
fn match_values_wider_than_the_field_are_masked_and_tables_fill_up() {
    let mut sw = load("control_flow");
    // ingress_port is bit<9>: two bytes, the 7 extra high bits are cleared
    let t = "IngressImpl.port_check";
    let h = bm(&mut sw)
        .bm_mt_add_entry(t, &[ex(&[0xff, 0x01])], "NoAction", &[], NOPRIO)
        .unwrap();
    assert_eq!(
        bm(&mut sw).bm_mt_get_entry(t, h).unwrap().match_key,
        vec![ex(&[0x01, 0x01])]
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(t, &[ex(&[0x01, 0x01])], "NoAction", &[], NOPRIO)),
        "DUPLICATE_ENTRY"
    );
    // action data is reduced to the parameter width too
    let c = "IngressImpl.classify";
    let h = bm(&mut sw)
        .bm_mt_add_entry(
            c,
            &[ex(&[7])],
            "IngressImpl.to_port",
            &[vec![0xfe, 0x03]],
            NOPRIO,
        )
        .unwrap();
    assert_eq!(
        bm(&mut sw).bm_mt_get_entry(c, h).unwrap().action_entry,
        BmActionEntry::ActionData {
            action_name: "IngressImpl.to_port".into(),
            action_data: vec![vec![0x00, 0x03]],
        }
    );
    // classify has 64 slots
    for k in 8..71u8 {
        bm(&mut sw)
            .bm_mt_add_entry(c, &[ex(&[k])], "NoAction", &[], NOPRIO)
            .unwrap();
    }
    assert_eq!(bm(&mut sw).bm_mt_get_num_entries(c).unwrap(), 64);
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(c, &[ex(&[200])], "NoAction", &[], NOPRIO)),
        "TABLE_FULL"
    );
    // the default action keeps its program parameters
    assert_eq!(
        bm(&mut sw).bm_mt_get_default_entry(c).unwrap(),
        BmActionEntry::ActionData {
            action_name: "IngressImpl.set_mark".into(),
            action_data: vec![vec![0x5a]],
        }
    );
}

#[test]
fn const_entries_and_const_defaults() {
    let mut sw = load("control_flow");
    let t = "IngressImpl.const_tbl";
    assert_eq!(bm(&mut sw).bm_mt_get_num_entries(t).unwrap(), 4);
    let entries = bm(&mut sw).bm_mt_get_entries(t).unwrap();
    assert_eq!(entries.len(), 4);
    assert_eq!(entries[0].match_key, vec![ex(&[3]), tern(&[0x10], &[0xf0])]);
    assert_eq!(entries[0].options.priority, Some(1));
    assert_eq!(entries[2].match_key, vec![ex(&[3]), tern(&[0], &[0])]);
    assert_eq!(
        entries[3].action_entry,
        BmActionEntry::ActionData {
            action_name: "IngressImpl.set_mark".into(),
            action_data: vec![vec![0x44]],
        }
    );
    let e = bm(&mut sw)
        .bm_mt_get_entry_from_key(t, &[ex(&[3]), tern(&[0x1f], &[0xff])], prio(2))
        .unwrap();
    assert_eq!(e.entry_handle, 1);
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(
            t,
            &[ex(&[5]), tern(&[0], &[0])],
            "IngressImpl.set_mark",
            &[vec![1]],
            prio(9)
        )),
        "IMMUTABLE_TABLE_ENTRIES"
    );
    // the action name is checked first
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(t, &[], "NoAction", &[], prio(9))),
        "INVALID_ACTION_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_modify_entry(t, 0, "IngressImpl.set_mark", &[vec![1]])),
        "IMMUTABLE_TABLE_ENTRIES"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_delete_entry(t, 0)),
        "IMMUTABLE_TABLE_ENTRIES"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_set_default_action(t, "IngressImpl.set_value", &[vec![0, 1]])),
        "DEFAULT_ENTRY_IS_CONST"
    );
    assert_eq!(
        bm(&mut sw).bm_mt_get_default_entry(t).unwrap(),
        BmActionEntry::ActionData {
            action_name: "IngressImpl.set_value".into(),
            action_data: vec![vec![0xde, 0xad]],
        }
    );

    // a const default action whose parameters may change
    let json = corpus_json("control_flow").replacen(
        "\"action_data\" : [\"0xdead\"],\n            \"action_entry_const\" : true",
        "\"action_data\" : [\"0xdead\"],\n            \"action_entry_const\" : false",
        1,
    );
    assert_ne!(
        json,
        corpus_json("control_flow"),
        "the JSON patch must apply"
    );
    let (mut sw, _) = switch_from(&json);
    assert_eq!(
        code(bm(&mut sw).bm_mt_set_default_action(t, "IngressImpl.set_mark", &[vec![1]])),
        "DEFAULT_ACTION_IS_CONST"
    );
    bm(&mut sw)
        .bm_mt_set_default_action(t, "IngressImpl.set_value", &[vec![0, 1]])
        .unwrap();

    // range const entries (acl_firewall)
    let mut sw = load("acl_firewall");
    let t = "IngressImpl.port_class";
    let e = bm(&mut sw).bm_mt_get_entries(t).unwrap();
    assert_eq!(e.len(), 4);
    assert_eq!(e[1].match_key, vec![range(&[0x1f, 0x90], &[0x1f, 0x99])]);
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(t, &[range(&[0, 0], &[0, 1])], "NoAction", &[], prio(1))),
        "IMMUTABLE_TABLE_ENTRIES"
    );
}

#[test]
fn ternary_range_tables_and_direct_counters() {
    let mut sw = load("acl_firewall");
    let acl = "IngressImpl.acl";
    let any = |n: usize| tern(&vec![0; n], &vec![0; n]);
    let key = |dst: [u8; 4], m: [u8; 4], proto: u8, pm: u8| {
        vec![
            any(4),
            tern(&dst, &m),
            tern(&[proto], &[pm]),
            any(2),
            any(1),
            any(1),
        ]
    };
    let h0 = bm(&mut sw)
        .bm_mt_add_entry(
            acl,
            &key([10, 0, 0, 9], [255, 255, 255, 255], 0, 0),
            "IngressImpl.permit",
            &[],
            prio(10),
        )
        .unwrap();
    // values are stored ANDed with their mask; the mask is kept
    let h1 = bm(&mut sw)
        .bm_mt_add_entry(
            acl,
            &key([10, 0, 7, 7], [255, 255, 0, 0], 0, 0),
            "IngressImpl.deny",
            &[],
            prio(20),
        )
        .unwrap();
    let e = bm(&mut sw).bm_mt_get_entry(acl, h1).unwrap();
    assert_eq!(e.match_key[1], tern(&[10, 0, 0, 0], &[255, 255, 0, 0]));
    assert_eq!(e.options.priority, Some(20));
    // same key and mask with another priority is another entry
    bm(&mut sw)
        .bm_mt_add_entry(
            acl,
            &key([10, 0, 0, 0], [255, 255, 0, 0], 0, 0),
            "IngressImpl.deny",
            &[],
            prio(30),
        )
        .unwrap();
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(
            acl,
            &key([10, 0, 9, 9], [255, 255, 0, 0], 0, 0),
            "IngressImpl.deny",
            &[],
            prio(20),
        )),
        "DUPLICATE_ENTRY"
    );
    assert_eq!(
        bm(&mut sw)
            .bm_mt_get_entry_from_key(acl, &key([10, 0, 0, 0], [255, 255, 0, 0], 0, 0), prio(30))
            .unwrap()
            .entry_handle,
        2
    );
    // range keys: start must not exceed end
    let f = "IngressImpl.src_port_filter";
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(
            f,
            &[ex(&[17]), range(&[0, 9], &[0, 8])],
            "IngressImpl.deny_source",
            &[],
            prio(1)
        )),
        "BAD_MATCH_KEY"
    );
    let hr = bm(&mut sw)
        .bm_mt_add_entry(
            f,
            &[ex(&[17]), range(&[0, 53], &[0, 53])],
            "IngressImpl.allow_source",
            &[],
            prio(1),
        )
        .unwrap();
    assert_eq!(
        bm(&mut sw).bm_mt_get_entry(f, hr).unwrap().match_key,
        vec![ex(&[17]), range(&[0, 53], &[0, 53])]
    );

    // direct counters: only for tables with one
    bm(&mut sw)
        .bm_mt_add_entry(
            "IngressImpl.port_map",
            &[ex(&[0, 0])],
            "IngressImpl.forward",
            &[vec![0, 1]],
            NOPRIO,
        )
        .unwrap();
    assert_eq!(
        code(bm(&mut sw).bm_mt_read_counter("IngressImpl.port_map", 0)),
        "COUNTERS_DISABLED"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_reset_counters("IngressImpl.port_map")),
        "COUNTERS_DISABLED"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_read_counter(acl, 99)),
        "INVALID_HANDLE"
    );
    // direct counters are not counter arrays
    assert_eq!(
        code(bm(&mut sw).bm_counter_read("IngressImpl.acl_counter", 0)),
        "INVALID_COUNTER_NAME"
    );

    // a TCP packet to 10.0.0.9 hits h0 (priority 10 beats 20 and 30) and is forwarded
    let tcp = [
        0x12, 0x34, 0, 80, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x02, 0, 0, 0, 0, 0, 0,
    ];
    let pkt = eth(
        &mac(1),
        &mac(2),
        0x0800,
        &ipv4([1, 1, 1, 1], [10, 0, 0, 9], 6, 64, &tcp),
    );
    let out = run(&mut sw, &[(0, pkt.clone()), (0, pkt.clone())]);
    assert_eq!(out.get(&1).map(Vec::len), Some(2));
    let c = bm(&mut sw).bm_mt_read_counter(acl, h0).unwrap();
    assert_eq!(c.packets, 2);
    assert_eq!(c.bytes, 2 * pkt.len() as u64);
    assert_eq!(bm(&mut sw).bm_mt_read_counter(acl, h1).unwrap().packets, 0);
    // a packet to 10.0.3.3 hits h1 (deny)
    let pkt2 = eth(
        &mac(1),
        &mac(2),
        0x0800,
        &ipv4([1, 1, 1, 1], [10, 0, 3, 3], 6, 64, &tcp),
    );
    let out = run(&mut sw, &[(0, pkt2)]);
    assert!(out.is_empty());
    assert_eq!(bm(&mut sw).bm_mt_read_counter(acl, h1).unwrap().packets, 1);

    bm(&mut sw)
        .bm_mt_write_counter(
            acl,
            h0,
            BmCounterValue {
                bytes: 1000,
                packets: 7,
            },
        )
        .unwrap();
    assert_eq!(
        bm(&mut sw).bm_mt_read_counter(acl, h0).unwrap(),
        BmCounterValue {
            bytes: 1000,
            packets: 7
        }
    );
    // a new entry in a freed slot starts from zero; a stale handle of a used slot
    // still reads it (bmv2 checks the slot, not the version)
    bm(&mut sw).bm_mt_delete_entry(acl, h1).unwrap();
    let h1b = bm(&mut sw)
        .bm_mt_add_entry(
            acl,
            &key([10, 0, 0, 8], [255, 255, 255, 255], 0, 0),
            "IngressImpl.permit",
            &[],
            prio(5),
        )
        .unwrap();
    assert_eq!(h1b, 1 << 24 | 1);
    assert_eq!(bm(&mut sw).bm_mt_read_counter(acl, h1b).unwrap().packets, 0);
    assert_eq!(bm(&mut sw).bm_mt_read_counter(acl, h1).unwrap().packets, 0);
    bm(&mut sw).bm_mt_reset_counters(acl).unwrap();
    assert_eq!(
        bm(&mut sw).bm_mt_read_counter(acl, h0).unwrap(),
        BmCounterValue::default()
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_write_counter(acl, 50, BmCounterValue::default())),
        "INVALID_HANDLE"
    );
}

#[test]
fn keyless_tables() {
    // simple_router's `tbl_drop` is keyless, with a const default action
    let mut sw = load("simple_router");
    let t = "tbl_drop";
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(t, &[ex(&[1])], "IngressImpl.drop", &[], NOPRIO)),
        "BAD_MATCH_KEY"
    );
    let h = bm(&mut sw)
        .bm_mt_add_entry(t, &[], "IngressImpl.drop", &[], NOPRIO)
        .unwrap();
    assert_eq!(h, 0);
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(t, &[], "IngressImpl.drop", &[], NOPRIO)),
        "DUPLICATE_ENTRY"
    );
    assert_eq!(bm(&mut sw).bm_mt_get_entry(t, h).unwrap().match_key, vec![]);
    assert_eq!(
        code(bm(&mut sw).bm_mt_set_default_action(t, "IngressImpl.drop", &[])),
        "DEFAULT_ENTRY_IS_CONST"
    );
}

// --------------------------------------------------------------- profiles and selectors

#[test]
fn action_profiles_selectors_and_indirect_tables() {
    let mut sw = load("ecmp");
    let sel = "IngressImpl.ecmp_selector";
    let route = "IngressImpl.ecmp_route";
    let nh = "IngressImpl.set_next_hop";
    let m = |sw: &mut Switch, last: u8, port: u8| {
        bm(sw)
            .bm_mt_act_prof_add_member(sel, nh, &[mac(last), vec![0, port]])
            .unwrap()
    };
    assert_eq!(m(&mut sw, 1, 1), 0);
    assert_eq!(m(&mut sw, 2, 2), 1);
    assert_eq!(m(&mut sw, 3, 3), 2);
    assert_eq!(m(&mut sw, 0, 0), 3);
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_add_member("nope", nh, &[])),
        "INVALID_ACTION_PROFILE_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_add_member(sel, "EgressImpl.set_src_mac", &[mac(1)])),
        "INVALID_ACTION_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_add_member(sel, nh, &[mac(1)])),
        "BAD_ACTION_DATA"
    );
    assert_eq!(bm(&mut sw).bm_mt_act_prof_create_group(sel).unwrap(), 0);
    assert_eq!(bm(&mut sw).bm_mt_act_prof_create_group(sel).unwrap(), 1);
    for mbr in [2, 0, 1] {
        bm(&mut sw)
            .bm_mt_act_prof_add_member_to_group(sel, mbr, 0)
            .unwrap();
    }
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_add_member_to_group(sel, 0, 0)),
        "MBR_ALREADY_IN_GRP"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_add_member_to_group(sel, 9, 0)),
        "INVALID_MBR_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_add_member_to_group(sel, 0, 9)),
        "INVALID_GRP_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_remove_member_from_group(sel, 3, 0)),
        "MBR_NOT_IN_GRP"
    );
    assert_eq!(
        bm(&mut sw).bm_mt_act_prof_get_group(sel, 0).unwrap(),
        BmMtActProfGroup {
            grp_handle: 0,
            mbr_handles: vec![0, 1, 2],
        }
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_get_group(sel, 5)),
        "INVALID_GRP_HANDLE"
    );
    assert_eq!(bm(&mut sw).bm_mt_act_prof_get_groups(sel).unwrap().len(), 2);
    let members = bm(&mut sw).bm_mt_act_prof_get_members(sel).unwrap();
    assert_eq!(members.len(), 4);
    assert_eq!(
        members[3],
        BmMtActProfMember {
            mbr_handle: 3,
            action_name: nh.into(),
            action_data: vec![mac(0), vec![0, 0]],
        }
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_get_member(sel, 8)),
        "INVALID_MBR_HANDLE"
    );

    // indirect entries
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(route, &[lpm(&[10, 0, 0, 0], 8)], nh, &[], NOPRIO)),
        "WRONG_TABLE_TYPE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_ws_add_entry(route, &[lpm(&[10, 0, 0, 0], 8)], 1, NOPRIO)),
        "EMPTY_GRP"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_ws_add_entry(route, &[lpm(&[10, 0, 0, 0], 8)], 7, NOPRIO)),
        "INVALID_GRP_HANDLE"
    );
    let e0 = bm(&mut sw)
        .bm_mt_indirect_ws_add_entry(route, &[lpm(&[10, 0, 0, 0], 8)], 0, NOPRIO)
        .unwrap();
    let e1 = bm(&mut sw)
        .bm_mt_indirect_add_entry(route, &[lpm(&[0, 0, 0, 0], 0)], 3, NOPRIO)
        .unwrap();
    assert_eq!((e0, e1), (0, 1));
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_add_entry(route, &[lpm(&[1, 0, 0, 0], 8)], 17, NOPRIO)),
        "INVALID_MBR_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_add_entry(route, &[lpm(&[1, 0, 0, 0], 33)], 0, NOPRIO)),
        "BAD_MATCH_KEY"
    );
    let entries = bm(&mut sw).bm_mt_get_entries(route).unwrap();
    assert_eq!(entries[0].action_entry, BmActionEntry::GrpHandle(0));
    assert_eq!(entries[1].action_entry, BmActionEntry::MbrHandle(3));
    assert_eq!(entries[0].match_key, vec![lpm(&[10, 0, 0, 0], 8)]);

    // members and groups in use cannot be deleted
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_delete_member(sel, 3)),
        "MBR_STILL_USED"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_delete_member(sel, 0)),
        "MBR_STILL_USED"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_delete_group(sel, 0)),
        "GRP_STILL_USED"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_delete_member(sel, 11)),
        "INVALID_MBR_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_delete_group(sel, 11)),
        "INVALID_GRP_HANDLE"
    );
    bm(&mut sw).bm_mt_act_prof_delete_group(sel, 1).unwrap();
    assert_eq!(bm(&mut sw).bm_mt_act_prof_create_group(sel).unwrap(), 1);

    // modify and re-point entries
    bm(&mut sw)
        .bm_mt_act_prof_modify_member(sel, 3, nh, &[mac(0x0e), vec![0, 0]])
        .unwrap();
    assert_eq!(
        code(bm(&mut sw).bm_mt_act_prof_modify_member(sel, 33, nh, &[mac(0x0e), vec![0, 0]])),
        "INVALID_MBR_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_ws_modify_entry(route, e0, 1)),
        "EMPTY_GRP"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_ws_modify_entry(route, 44, 0)),
        "INVALID_HANDLE"
    );
    bm(&mut sw)
        .bm_mt_indirect_modify_entry(route, e1, 2)
        .unwrap();
    bm(&mut sw)
        .bm_mt_indirect_modify_entry(route, e1, 3)
        .unwrap();
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_modify_entry(route, e1, 99)),
        "INVALID_MBR_HANDLE"
    );

    // the plain action profile of the egress table
    let prof = "EgressImpl.smac_profile";
    let smac = "EgressImpl.port_smac";
    let s0 = bm(&mut sw)
        .bm_mt_act_prof_add_member(prof, "EgressImpl.set_src_mac", &[vec![0, 0xee, 0, 0, 0, 1]])
        .unwrap();
    assert_eq!(s0, 0, "member handles are per profile");
    for port in 0..4u8 {
        bm(&mut sw)
            .bm_mt_indirect_add_entry(smac, &[ex(&[0, port])], s0, NOPRIO)
            .unwrap();
    }
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_ws_add_entry(smac, &[ex(&[0, 9])], 0, NOPRIO)),
        "WRONG_TABLE_TYPE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_add_entry("tbl_drop", &[], 0, NOPRIO)),
        "WRONG_TABLE_TYPE"
    );

    // default member and group
    assert_eq!(
        bm(&mut sw).bm_mt_get_default_entry(route).unwrap(),
        BmActionEntry::None
    );
    bm(&mut sw)
        .bm_mt_indirect_set_default_member(route, 3)
        .unwrap();
    assert_eq!(
        bm(&mut sw).bm_mt_get_default_entry(route).unwrap(),
        BmActionEntry::MbrHandle(3)
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_set_default_member(route, 30)),
        "INVALID_MBR_HANDLE"
    );
    bm(&mut sw)
        .bm_mt_indirect_ws_set_default_group(route, 0)
        .unwrap();
    assert_eq!(
        bm(&mut sw).bm_mt_get_default_entry(route).unwrap(),
        BmActionEntry::GrpHandle(0)
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_ws_set_default_group(route, 30)),
        "INVALID_GRP_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_ws_set_default_group(smac, 0)),
        "WRONG_TABLE_TYPE"
    );
    bm(&mut sw)
        .bm_mt_indirect_reset_default_entry(route)
        .unwrap();
    assert_eq!(
        bm(&mut sw).bm_mt_get_default_entry(route).unwrap(),
        BmActionEntry::None
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_reset_default_entry(route)),
        "WRONG_TABLE_TYPE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_reset_default_entry("tbl_drop")),
        "WRONG_TABLE_TYPE"
    );

    // forwarding: 10.1.2.3 uses the group, 192.0.2.1 the default route (member 3)
    let udp = [0x30, 0x39, 0, 53, 0, 8, 0, 0];
    let to = |dst: [u8; 4]| {
        eth(
            &mac(0xaa),
            &mac(0xbb),
            0x0800,
            &ipv4([192, 168, 0, 1], dst, 17, 64, &udp),
        )
    };
    let out = run(&mut sw, &[(0, to([10, 1, 2, 3])), (0, to([192, 0, 2, 1]))]);
    let mut got = vec![];
    for (port, frames) in &out {
        for f in frames {
            got.push((*port, f[5], f[11], f[22]));
        }
    }
    got.sort();
    // the group member sends to its port with its MAC; the source MAC comes from the
    // egress profile; the TTL is decremented
    assert_eq!(got.len(), 2, "{out:?}");
    assert!(got.contains(&(0, 0x0e, 1, 63)), "{got:?}");
    assert!(
        got.iter().any(|(p, d, s, ttl)| *p >= 1
            && *p <= 3
            && *d == *p as u8
            && *s == 1
            && *ttl == 63),
        "{got:?}"
    );

    // deleting entries frees members and groups
    bm(&mut sw).bm_mt_indirect_delete_entry(route, e0).unwrap();
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_delete_entry(route, e0)),
        "INVALID_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_delete_entry("tbl_drop", 0)),
        "WRONG_TABLE_TYPE"
    );
    bm(&mut sw)
        .bm_mt_act_prof_remove_member_from_group(sel, 0, 0)
        .unwrap();
    bm(&mut sw).bm_mt_act_prof_delete_member(sel, 0).unwrap();
    bm(&mut sw).bm_mt_act_prof_delete_group(sel, 0).unwrap();
    assert_eq!(
        bm(&mut sw)
            .bm_mt_act_prof_add_member(sel, "IngressImpl.drop", &[])
            .unwrap(),
        0,
        "the lowest free member handle is reused"
    );
}

// ------------------------------------------------------------- meters, registers, counters

#[test]
fn meters_registers_and_counter_arrays() {
    let (mut sw, clock) = switch_from(&corpus_json("stateful"));
    let rates = |a: f64, b: u32, c: f64, d: u32| {
        vec![
            BmMeterRateConfig {
                units_per_micros: a,
                burst_size: b,
            },
            BmMeterRateConfig {
                units_per_micros: c,
                burst_size: d,
            },
        ]
    };
    let fm = "IngressImpl.flow_meter";
    assert_eq!(bm(&mut sw).bm_meter_get_rates(fm, 3).unwrap(), vec![]);
    bm(&mut sw)
        .bm_meter_set_rates(fm, 3, &rates(0.000001, 1, 0.000002, 2))
        .unwrap();
    assert_eq!(
        bm(&mut sw).bm_meter_get_rates(fm, 3).unwrap(),
        rates(0.000001, 1, 0.000002, 2)
    );
    assert_eq!(
        code(bm(&mut sw).bm_meter_set_rates(fm, 3, &rates(0.5, 1, 0.1, 2))),
        "INVALID_INFO_RATE_VALUE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_meter_set_rates(fm, 3, &rates(0.5, 1, 0.6, 2)[..1])),
        "BAD_RATES_LIST"
    );
    assert_eq!(
        code(bm(&mut sw).bm_meter_set_rates(fm, 16, &rates(0.5, 1, 0.6, 2))),
        "INVALID_INDEX"
    );
    assert_eq!(
        code(bm(&mut sw).bm_meter_get_rates(fm, -1)),
        "INVALID_INDEX"
    );
    assert_eq!(
        code(bm(&mut sw).bm_meter_set_rates("nope", 0, &[])),
        "INVALID_METER_NAME"
    );
    bm(&mut sw)
        .bm_meter_array_set_rates(fm, &rates(1.0, 10, 2.0, 20))
        .unwrap();
    assert_eq!(
        bm(&mut sw).bm_meter_get_rates(fm, 15).unwrap(),
        rates(1.0, 10, 2.0, 20)
    );
    assert_eq!(
        code(bm(&mut sw).bm_meter_array_set_rates(fm, &[])),
        "BAD_RATES_LIST"
    );

    // the direct meter, by entry handle, and by index through the meter array name
    let c = "IngressImpl.classify";
    let h = bm(&mut sw)
        .bm_mt_add_entry(
            c,
            &[tern(&[0, 0, 0, 0x30], &[0xff, 0xff, 0xff, 0xf0])],
            "IngressImpl.set_class",
            &[vec![3]],
            prio(20),
        )
        .unwrap();
    bm(&mut sw)
        .bm_mt_set_meter_rates(c, h, &rates(0.0001, 100, 0.0002, 200))
        .unwrap();
    assert_eq!(
        bm(&mut sw).bm_mt_get_meter_rates(c, h).unwrap(),
        rates(0.0001, 100, 0.0002, 200)
    );
    assert_eq!(
        bm(&mut sw)
            .bm_meter_get_rates("IngressImpl.class_meter", h)
            .unwrap(),
        rates(0.0001, 100, 0.0002, 200)
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_set_meter_rates(c, h, &rates(0.2, 1, 0.1, 1))),
        "ERROR"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_set_meter_rates(c, 5, &rates(0.1, 1, 0.2, 1))),
        "INVALID_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_get_meter_rates(c, 5)),
        "INVALID_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_set_meter_rates("tbl_stateful120", 0, &[])),
        "METERS_DISABLED"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_get_meter_rates("tbl_stateful120", 0)),
        "METERS_DISABLED"
    );

    // registers
    let r = "IngressImpl.flow_packets";
    bm(&mut sw).bm_register_write(r, 5, 100).unwrap();
    assert_eq!(bm(&mut sw).bm_register_read(r, 5).unwrap(), 100);
    bm(&mut sw).bm_register_write(r, 6, -1).unwrap();
    assert_eq!(
        bm(&mut sw).bm_register_read(r, 6).unwrap(),
        0xffff_ffff,
        "truncated to bit<32>"
    );
    bm(&mut sw).bm_register_write_range(r, 8, 11, 7).unwrap();
    let all = bm(&mut sw).bm_register_read_all(r).unwrap();
    assert_eq!(all.len(), 16);
    assert_eq!(&all[7..12], &[0, 7, 7, 7, 0], "the end index is exclusive");
    assert_eq!(
        code(bm(&mut sw).bm_register_write_range(r, 10, 17, 1)),
        "INVALID_INDEX"
    );
    assert_eq!(
        code(bm(&mut sw).bm_register_write_range(r, 5, 4, 1)),
        "INVALID_INDEX"
    );
    assert_eq!(code(bm(&mut sw).bm_register_read(r, 16)), "INVALID_INDEX");
    assert_eq!(code(bm(&mut sw).bm_register_read(r, -1)), "INVALID_INDEX");
    assert_eq!(
        code(bm(&mut sw).bm_register_write(r, 16, 1)),
        "INVALID_INDEX"
    );
    assert_eq!(
        code(bm(&mut sw).bm_register_read("x", 0)),
        "INVALID_REGISTER_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_register_read_all("x")),
        "INVALID_REGISTER_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_register_reset("x")),
        "INVALID_REGISTER_NAME"
    );

    // counter arrays
    let pc = "IngressImpl.port_counter";
    assert_eq!(code(bm(&mut sw).bm_counter_read(pc, 4)), "INVALID_INDEX");
    assert_eq!(code(bm(&mut sw).bm_counter_read(pc, -1)), "INVALID_INDEX");
    assert_eq!(
        code(bm(&mut sw).bm_counter_read("x", 0)),
        "INVALID_COUNTER_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_counter_write(pc, 9, BmCounterValue::default())),
        "INVALID_INDEX"
    );
    assert_eq!(
        code(bm(&mut sw).bm_counter_reset_all("x")),
        "INVALID_COUNTER_NAME"
    );

    // packets: flow key 0x35 (flow index 5), on port 2
    clock.store(1_000, Ordering::Relaxed);
    let probe = |key: u32| {
        let mut p = key.to_be_bytes().to_vec();
        p.extend_from_slice(&[0; 12]);
        p
    };
    let pkt = eth(&mac(1), &mac(2), 0x88b5, &probe(0x35));
    let out = run(&mut sw, &[(2, pkt.clone())]);
    let frames: Vec<&Vec<u8>> = out.values().flatten().collect();
    assert_eq!(frames.len(), 1, "{out:?}");
    assert_eq!(bm(&mut sw).bm_register_read(r, 5).unwrap(), 101);
    assert_eq!(bm(&mut sw).bm_counter_read(pc, 2).unwrap().packets, 1);
    let fc = bm(&mut sw)
        .bm_counter_read("IngressImpl.flow_counter", 5)
        .unwrap();
    assert_eq!((fc.packets, fc.bytes), (1, pkt.len() as u64));
    bm(&mut sw)
        .bm_counter_write(
            pc,
            2,
            BmCounterValue {
                bytes: 5,
                packets: 6,
            },
        )
        .unwrap();
    assert_eq!(
        bm(&mut sw).bm_counter_read(pc, 2).unwrap(),
        BmCounterValue {
            bytes: 5,
            packets: 6
        }
    );
    bm(&mut sw).bm_counter_reset_all(pc).unwrap();
    assert_eq!(
        bm(&mut sw).bm_counter_read(pc, 2).unwrap(),
        BmCounterValue::default()
    );
    bm(&mut sw).bm_register_reset(r).unwrap();
    assert_eq!(bm(&mut sw).bm_register_read(r, 5).unwrap(), 0);
}

// ------------------------------------------------------------------------------- PRE

#[test]
fn pre_groups_nodes_lags_and_replication() {
    let mut sw = load("multicast");
    assert_eq!(bm(&mut sw).bm_mc_mgrp_create(1).unwrap(), 1);
    assert_eq!(bm(&mut sw).bm_mc_mgrp_create(2).unwrap(), 2);
    // a duplicate group is accepted and changes nothing, as in bmv2
    assert_eq!(bm(&mut sw).bm_mc_mgrp_create(2).unwrap(), 2);
    let n0 = bm(&mut sw).bm_mc_node_create(10, "110", "").unwrap();
    let n1 = bm(&mut sw).bm_mc_node_create(20, "1000", "").unwrap();
    let n2 = bm(&mut sw).bm_mc_node_create(30, "11", "").unwrap();
    let n3 = bm(&mut sw).bm_mc_node_create(40, "10", "").unwrap();
    assert_eq!((n0, n1, n2, n3), (0, 1, 2, 3));
    bm(&mut sw).bm_mc_node_associate(1, n0).unwrap();
    bm(&mut sw).bm_mc_node_associate(1, n1).unwrap();
    bm(&mut sw).bm_mc_node_associate(2, n2).unwrap();
    bm(&mut sw).bm_mc_node_associate(2, n3).unwrap();
    assert_eq!(code(bm(&mut sw).bm_mc_node_associate(2, n0)), "ERROR");
    assert_eq!(
        code(bm(&mut sw).bm_mc_node_associate(9, 9)),
        "INVALID_L1_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mc_node_associate(9, n0)),
        "INVALID_MGRP_HANDLE"
    );
    assert_eq!(code(bm(&mut sw).bm_mc_node_dissociate(2, n0)), "ERROR");
    assert_eq!(
        code(bm(&mut sw).bm_mc_node_dissociate(1, 9)),
        "INVALID_L1_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mc_node_dissociate(7, n0)),
        "INVALID_MGRP_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mc_node_update(9, "1", "")),
        "INVALID_L1_HANDLE"
    );
    assert_eq!(code(bm(&mut sw).bm_mc_node_destroy(9)), "INVALID_L1_HANDLE");
    assert!(is_internal(bm(&mut sw).bm_mc_node_create(1, "12", "")));
    assert_eq!(
        code(bm(&mut sw).bm_mc_set_lag_membership(256, "1")),
        "ERROR"
    );
    assert_eq!(code(bm(&mut sw).bm_mc_set_lag_membership(-1, "1")), "ERROR");

    let json = bm(&mut sw).bm_mc_get_entries().unwrap();
    assert_eq!(
        json,
        "{\"l1_handles\": [{\"handle\": 0, \"l2_handle\": 0, \"rid\": 10}, \
         {\"handle\": 1, \"l2_handle\": 1, \"rid\": 20}, \
         {\"handle\": 2, \"l2_handle\": 2, \"rid\": 30}, \
         {\"handle\": 3, \"l2_handle\": 3, \"rid\": 40}], \
         \"l2_handles\": [{\"handle\": 0, \"lags\": [], \"ports\": [1, 2]}, \
         {\"handle\": 1, \"lags\": [], \"ports\": [3]}, \
         {\"handle\": 2, \"lags\": [], \"ports\": [0, 1]}, \
         {\"handle\": 3, \"lags\": [], \"ports\": [1]}], \
         \"lags\": [], \
         \"mgrps\": [{\"id\": 1, \"l1_handles\": [0, 1]}, {\"id\": 2, \"l1_handles\": [2, 3]}]}"
    );

    // packets to 239.1.1.1 → group 1: rid 10 on ports 1 and 2 (VLAN 100), rid 20 on port 3
    bm(&mut sw)
        .bm_mt_add_entry(
            "IngressImpl.mcast_group",
            &[ex(&[239, 1, 1, 1])],
            "IngressImpl.set_group",
            &[vec![0, 1]],
            NOPRIO,
        )
        .unwrap();
    bm(&mut sw)
        .bm_mt_add_entry(
            "EgressImpl.copy_rewrite",
            &[ex(&[0, 10])],
            "EgressImpl.tag",
            &[vec![0, 100], vec![0]],
            NOPRIO,
        )
        .unwrap();
    let pkt = eth(
        &mac(1),
        &mac(2),
        0x0800,
        &ipv4([10, 0, 0, 1], [239, 1, 1, 1], 17, 64, &[0; 8]),
    );
    let out = run(&mut sw, &[(0, pkt.clone())]);
    assert_eq!(out.keys().copied().collect::<Vec<_>>(), vec![1, 2, 3]);
    assert_eq!(&out[&1][0][12..14], &[0x81, 0x00]);
    assert_eq!(&out[&3][0][12..14], &[0x08, 0x00]);

    // update, dissociate, destroy
    bm(&mut sw).bm_mc_node_update(n1, "10000", "").unwrap();
    bm(&mut sw).bm_mc_node_dissociate(1, n0).unwrap();
    let out = run(&mut sw, &[(0, pkt.clone())]);
    assert_eq!(out.keys().copied().collect::<Vec<_>>(), vec![4]);
    bm(&mut sw).bm_mc_node_destroy(n1).unwrap();
    assert!(run(&mut sw, &[(0, pkt.clone())]).is_empty());
    // the lowest free node handle is reused
    assert_eq!(bm(&mut sw).bm_mc_node_create(50, "1", "").unwrap(), 1);

    // LAGs
    bm(&mut sw).bm_mc_set_lag_membership(3, "1100").unwrap();
    let n = bm(&mut sw).bm_mc_node_create(60, "", "1000").unwrap();
    bm(&mut sw).bm_mc_node_associate(1, n).unwrap();
    let json = bm(&mut sw).bm_mc_get_entries().unwrap();
    assert!(
        json.contains("\"lags\": [{\"id\": 3, \"ports\": [2, 3]}]"),
        "{json}"
    );
    assert!(
        json.contains("{\"handle\": 4, \"lags\": [3], \"ports\": []}"),
        "{json}"
    );
    let out = run(&mut sw, &[(0, pkt.clone())]);
    assert_eq!(
        out.values().map(Vec::len).sum::<usize>(),
        1,
        "one LAG member"
    );
    // bmv2 picks member 0xFF % 2 = 1 (0-based, ascending ports): port 3
    assert_eq!(out.keys().copied().collect::<Vec<_>>(), vec![3], "{out:?}");
    // three members: 0xFF % 3 = 0, the lowest port (1 of 1, 2, 4)
    bm(&mut sw).bm_mc_set_lag_membership(3, "10110").unwrap();
    let out = run(&mut sw, &[(0, pkt.clone())]);
    assert_eq!(out.keys().copied().collect::<Vec<_>>(), vec![1], "{out:?}");
    // four members: 0xFF % 4 = 3, the highest of 1, 2, 5, 6
    bm(&mut sw).bm_mc_set_lag_membership(3, "1100110").unwrap();
    let out = run(&mut sw, &[(0, pkt.clone())]);
    assert_eq!(out.keys().copied().collect::<Vec<_>>(), vec![6], "{out:?}");

    // destroying a group: the node stays associated with it (bmv2)
    bm(&mut sw).bm_mc_mgrp_destroy(1).unwrap();
    bm(&mut sw).bm_mc_mgrp_destroy(1).unwrap();
    assert!(run(&mut sw, &[(0, pkt)]).is_empty());
    assert_eq!(code(bm(&mut sw).bm_mc_node_associate(2, n)), "ERROR");

    // table sizes (simple_switch's --max-mc-groups, --max-l1-entries)
    let mut sw = load("multicast");
    assert_eq!(sw.rt.max_mc_groups, 4096);
    assert_eq!(sw.rt.max_mc_l1_entries, 4096);
    sw.rt.max_mc_groups = 3;
    sw.rt.max_mc_l1_entries = 2;
    for g in 0..3 {
        bm(&mut sw).bm_mc_mgrp_create(g).unwrap();
    }
    assert_eq!(code(bm(&mut sw).bm_mc_mgrp_create(5000)), "TABLE_FULL");
    for _ in 0..2 {
        bm(&mut sw).bm_mc_node_create(0, "1", "").unwrap();
    }
    assert_eq!(
        code(bm(&mut sw).bm_mc_node_create(0, "1", "")),
        "TABLE_FULL"
    );
}

#[test]
fn learning_digests_flood_and_acks() {
    let mut sw = load("l2_learning");
    bm(&mut sw).bm_mc_mgrp_create(1).unwrap();
    let n = bm(&mut sw).bm_mc_node_create(0, "1111", "").unwrap();
    bm(&mut sw).bm_mc_node_associate(1, n).unwrap();
    bm(&mut sw)
        .bm_mt_add_entry(
            "IngressImpl.dmac",
            &[ex(&mac(0x11))],
            "IngressImpl.forward",
            &[vec![0, 1]],
            NOPRIO,
        )
        .unwrap();
    // unknown destination: flooded to every port but the ingress one; the source is learnt
    let f = eth(&mac(0x99), &mac(0x10), 0x1234, &[0; 46]);
    let out = run(&mut sw, &[(2, f.clone())]);
    assert_eq!(out.keys().copied().collect::<Vec<_>>(), vec![0, 1, 3]);
    let msgs = sw.take_digests();
    assert_eq!(
        msgs,
        vec![DigestList {
            digest: DigestId(0),
            list_id: 0,
            samples: vec![vec![0, 0, 0, 0, 0, 0x10, 0, 2]],
            timestamp_ns: 0,
        }]
    );
    assert_eq!(
        sw.describe_digest_list(&msgs[0]),
        "digest learn_digest_t (list 1) buffer 0, 1 sample: \
         {scalars.tmp=0x000000000010, scalars.tmp_0=0x0002}"
    );
    // the learning filter holds the sample until it is acknowledged
    run(&mut sw, &[(2, f.clone())]);
    assert!(sw.take_digests().is_empty());
    bm(&mut sw).bm_learning_ack_buffer(1, 0).unwrap();
    run(&mut sw, &[(2, f.clone())]);
    let msgs = sw.take_digests();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].list_id, 1);
    bm(&mut sw).bm_learning_ack(1, 1, &[5, 0]).unwrap();
    // acking an unknown buffer is fine; an unknown list is not
    bm(&mut sw).bm_learning_ack(1, 42, &[0]).unwrap();
    bm(&mut sw).bm_learning_ack_buffer(1, 42).unwrap();
    assert_eq!(
        code(bm(&mut sw).bm_learning_ack(2, 0, &[0])),
        "INVALID_LIST_ID"
    );
    assert_eq!(
        code(bm(&mut sw).bm_learning_ack_buffer(-1, 0)),
        "INVALID_LIST_ID"
    );
    assert_eq!(
        code(bm(&mut sw).bm_learning_set_timeout(3, 10)),
        "INVALID_LIST_ID"
    );
    assert_eq!(
        code(bm(&mut sw).bm_learning_set_buffer_size(3, 10)),
        "INVALID_LIST_ID"
    );
    // buffer size: samples per message
    bm(&mut sw).bm_learning_set_buffer_size(1, 2).unwrap();
    bm(&mut sw).bm_learning_set_timeout(1, 500).unwrap();
    assert_eq!(sw.rt.learn_settings(1), (500, 2));
    run(
        &mut sw,
        &[
            (2, f.clone()),
            (0, eth(&mac(0x99), &mac(0x20), 0x1234, &[0; 46])),
            (0, eth(&mac(0x99), &mac(0x21), 0x1234, &[0; 46])),
        ],
    );
    let msgs = sw.take_digests();
    assert_eq!(
        msgs.iter().map(|m| m.samples.len()).collect::<Vec<_>>(),
        vec![2, 1]
    );
    // known destination
    let out = run(
        &mut sw,
        &[(0, eth(&mac(0x11), &mac(0x10), 0x1234, &[0; 46]))],
    );
    assert_eq!(out.keys().copied().collect::<Vec<_>>(), vec![1]);
}

/// Action data wider than its parameter is reduced to the parameter's width, as bmv2
/// does when it uses it: `forward(port)` with a 9-bit port given in two bytes with the
/// top bits set forwards to the low 9 bits (the engine copies parameter bytes into the
/// 9-bit egress_spec slot, so the stored data must be masked).
#[test]
fn action_data_is_masked_to_the_parameter_width() {
    let mut sw = load("basic_l2");
    for (last, data) in [(0x10u8, vec![0xFE, 0x03]), (0x11, vec![0x02, 0x01])] {
        bm(&mut sw)
            .bm_mt_add_entry(
                "IngressImpl.dmac",
                &[ex(&mac(last))],
                "IngressImpl.forward",
                &[data],
                NOPRIO,
            )
            .unwrap();
    }
    // a modified entry and a default action go through the same packing
    bm(&mut sw)
        .bm_mt_modify_entry(
            "IngressImpl.dmac",
            1,
            "IngressImpl.forward",
            &[vec![0xFF, 0xFF, 0x02]],
        )
        .unwrap();
    bm(&mut sw)
        .bm_mt_set_default_action(
            "IngressImpl.dmac",
            "IngressImpl.forward",
            &[vec![0x7E, 0x01]],
        )
        .unwrap();
    let out = run(
        &mut sw,
        &[
            (0, eth(&mac(0x10), &mac(1), 0x1234, &[0; 46])),
            (0, eth(&mac(0x11), &mac(1), 0x1234, &[1; 46])),
            (0, eth(&mac(0x99), &mac(1), 0x1234, &[2; 46])),
        ],
    );
    let ports: Vec<(u32, usize)> = out.iter().map(|(p, f)| (*p, f.len())).collect();
    // 0xFE03 -> 3, 0xFFFF02 -> 0x102 = 258, 0x7E01 -> 0x001
    assert_eq!(ports, vec![(1, 1), (3, 1), (258, 1)], "{out:?}");
    assert_eq!(out[&3][0][14], 0);
    assert_eq!(out[&258][0][14], 1);
    assert_eq!(out[&1][0][14], 2);
}

/// `poll_digests_now` sends a list's samples as bmv2's learning buffers do: at once
/// when `max_samples` wait, else once the first has waited the list's timeout (never
/// with timeout 0); the notifications are kept (bounded) for `p4jet_learning_dump`.
#[test]
fn learning_notifications_follow_buffer_size_and_timeout() {
    let (mut sw, clock) = switch_from(&corpus_json("l2_learning"));
    bm(&mut sw).bm_learning_set_buffer_size(1, 2).unwrap();
    bm(&mut sw).bm_learning_set_timeout(1, 500).unwrap();
    let from = |m: u8| eth(&mac(0x99), &mac(m), 0x1234, &[0; 46]);
    // the switch's clock, held still: polls see the time set
    let poll = |sw: &mut Switch, ms: u64| {
        clock.fetch_max(ms * 1000, Ordering::Relaxed);
        sw.poll_digests_now()
    };
    run(&mut sw, &[(1, from(0x20))]);
    assert!(poll(&mut sw, 0).is_empty());
    assert!(poll(&mut sw, 499).is_empty());
    run(&mut sw, &[(1, from(0x21)), (3, from(0x22))]);
    // three waiting, buffer size 2: all go out, in messages of at most 2
    let msgs = poll(&mut sw, 499);
    assert_eq!(
        msgs.iter()
            .map(|m| (m.list_id, m.samples.len()))
            .collect::<Vec<_>>(),
        vec![(0, 2), (1, 1)]
    );
    // one waiting: out once it has waited 500 ms since the poll that first saw it
    run(&mut sw, &[(2, from(0x23))]);
    assert!(poll(&mut sw, 600).is_empty());
    assert!(poll(&mut sw, 1099).is_empty());
    let msgs = poll(&mut sw, 1100);
    assert_eq!(msgs.len(), 1);
    assert_eq!(
        sw.describe_digest_list(&msgs[0]),
        "digest learn_digest_t (list 1) buffer 2, 1 sample: \
         {scalars.tmp=0x000000000023, scalars.tmp_0=0x0002}"
    );
    // timeout 0: only full buffers
    bm(&mut sw).bm_learning_set_timeout(1, 0).unwrap();
    run(&mut sw, &[(2, from(0x24))]);
    assert!(poll(&mut sw, 100_000).is_empty());
    let dump = bm(&mut sw)
        .p4jet_learning_dump("learn_digest_t", 2)
        .unwrap();
    assert_eq!(
        dump,
        "digest learn_digest_t (list 1) buffer 1, 1 sample: \
         {scalars.tmp=0x000000000022, scalars.tmp_0=0x0003}\n\
         digest learn_digest_t (list 1) buffer 2, 1 sample: \
         {scalars.tmp=0x000000000023, scalars.tmp_0=0x0002}\n\
         waiting learn_digest_t (list 1): {scalars.tmp=0x000000000024, scalars.tmp_0=0x0002}\n"
    );
    assert_eq!(
        bm(&mut sw)
            .p4jet_learning_dump("", 0)
            .unwrap()
            .lines()
            .count(),
        4
    );
    assert_eq!(
        code(bm(&mut sw).p4jet_learning_dump("nope", 0)),
        "INVALID_LIST_ID"
    );
    // the log keeps the latest notifications only, oldest first
    bm(&mut sw).bm_learning_set_buffer_size(1, 1).unwrap();
    let mut sent = vec![];
    for m in 0..300u32 {
        run(&mut sw, &[(1, from((m % 200) as u8))]);
        for msg in poll(&mut sw, 0) {
            // acknowledged at once, so that the sample can be learned again
            bm(&mut sw)
                .bm_learning_ack_buffer(1, msg.list_id as i64)
                .unwrap();
            sent.push(msg);
        }
    }
    let cap = p4jet_switch::runtime::LEARN_LOG_CAPACITY;
    assert!(sent.len() > cap, "{} notifications", sent.len());
    assert_eq!(
        sw.rt.learn_log.iter().collect::<Vec<_>>(),
        sent[sent.len() - cap..].iter().collect::<Vec<_>>()
    );
}

// -------------------------------------------------------------------------- mirroring

#[test]
fn mirroring_sessions_and_clones() {
    let mut sw = load("mirror_clone");
    assert_eq!(
        code(bm(&mut sw).mirroring_session_get(1)),
        "SESSION_NOT_FOUND"
    );
    assert_eq!(
        code(bm(&mut sw).mirroring_session_delete(1)),
        "SESSION_NOT_FOUND"
    );
    assert_eq!(
        code(bm(&mut sw).mirroring_session_delete(-5)),
        "SESSION_NOT_FOUND"
    );
    let to3 = MirroringSessionConfig {
        port: Some(3),
        mgid: None,
    };
    bm(&mut sw).mirroring_session_add(1, to3).unwrap();
    assert_eq!(bm(&mut sw).mirroring_session_get(1).unwrap(), to3);
    let both = MirroringSessionConfig {
        port: Some(2),
        mgid: Some(7),
    };
    bm(&mut sw).mirroring_session_add(32767, both).unwrap();
    assert_eq!(bm(&mut sw).mirroring_session_get(32767).unwrap(), both);
    // out of range: simple_switch logs and does nothing
    bm(&mut sw).mirroring_session_add(32768, to3).unwrap();
    assert_eq!(
        code(bm(&mut sw).mirroring_session_get(32768)),
        "SESSION_NOT_FOUND"
    );
    bm(&mut sw).mirroring_session_delete(32767).unwrap();
    assert_eq!(
        code(bm(&mut sw).mirroring_session_get(32767)),
        "SESSION_NOT_FOUND"
    );
    // the deprecated RPCs return what simple_switch returns
    assert_eq!(bm(&mut sw).mirroring_mapping_add(5, 6).unwrap(), 1);
    assert_eq!(bm(&mut sw).mirroring_mapping_add(-1, 6).unwrap(), 0);
    assert_eq!(bm(&mut sw).mirroring_mapping_get_egress_port(5).unwrap(), 6);
    assert_eq!(
        bm(&mut sw).mirroring_mapping_get_egress_port(6).unwrap(),
        -1
    );
    assert_eq!(bm(&mut sw).mirroring_mapping_delete(5).unwrap(), 1);
    assert_eq!(bm(&mut sw).mirroring_mapping_delete(5).unwrap(), 0);

    // an ingress clone of traffic from port 0 goes to port 3
    bm(&mut sw)
        .bm_mt_add_entry(
            "IngressImpl.dmac",
            &[ex(&mac(0x11))],
            "IngressImpl.forward",
            &[vec![0, 1]],
            NOPRIO,
        )
        .unwrap();
    bm(&mut sw)
        .bm_mt_add_entry(
            "IngressImpl.ingress_mirror",
            &[ex(&[0, 0])],
            "IngressImpl.mirror_ingress",
            &[vec![0, 0, 0, 1]],
            NOPRIO,
        )
        .unwrap();
    let f = eth(&mac(0x11), &mac(0x10), 0x1234, &[0; 46]);
    let out = run(&mut sw, &[(0, f.clone())]);
    assert_eq!(out.keys().copied().collect::<Vec<_>>(), vec![1, 3]);
    bm(&mut sw).mirroring_session_delete(1).unwrap();
    let out = run(&mut sw, &[(0, f)]);
    assert_eq!(out.keys().copied().collect::<Vec<_>>(), vec![1]);
}

// --------------------------------------------------------------------- everything else

#[test]
fn queues_clock_config_and_management() {
    let clock = Arc::new(AtomicU64::new(0));
    let cfg = SwitchConfig {
        manual_clock: Some(clock.clone()),
        priority_queues: 4,
        ..SwitchConfig::default()
    };
    let json = corpus_json("basic_l2");
    let mut sw = Switch::new(&json, cfg).unwrap();
    assert_eq!(bm(&mut sw).set_egress_queue_depth(2, 10).unwrap(), 0);
    // simple_switch's priority argument is its internal queue index: queue 0 holds the
    // packets of the highest priority
    assert_eq!(
        bm(&mut sw)
            .set_egress_priority_queue_depth(3, 0, 5)
            .unwrap(),
        0
    );
    assert_eq!(
        bm(&mut sw)
            .set_egress_priority_queue_rate(3, 1, 1000)
            .unwrap(),
        0
    );
    assert!(is_internal(
        bm(&mut sw).set_egress_priority_queue_depth(3, 4, 5)
    ));
    assert!(is_internal(
        bm(&mut sw).set_egress_priority_queue_rate(3, -1, 5)
    ));
    assert_eq!(bm(&mut sw).set_egress_queue_rate(2, 100).unwrap(), 0);
    {
        let q = sw.queues.lock().unwrap();
        assert_eq!(q.depth_of(2, 0), Some(10));
        assert_eq!(q.depth_of(2, 3), Some(10));
        assert_eq!(q.depth_of(3, 3), Some(5));
        assert_eq!(q.depth_of(3, 0), None);
        assert_eq!(q.rate.get(&(3, 2)), Some(&1000));
        assert_eq!(q.rate.get(&(2, 1)), Some(&100));
    }
    bm(&mut sw).set_all_egress_queue_depths(64).unwrap();
    bm(&mut sw).set_all_egress_queue_rates(0).unwrap();
    {
        let q = sw.queues.lock().unwrap();
        assert_eq!(q.depth_of(2, 0), Some(64));
        assert_eq!(q.depth_of(3, 3), Some(64));
        assert_eq!(q.default_rate, None);
        assert!(q.rate.is_empty());
    }

    clock.store(1234, Ordering::Relaxed);
    assert_eq!(bm(&mut sw).get_time_elapsed_us().unwrap(), 1234);
    assert!(bm(&mut sw).get_time_since_epoch_us().unwrap() > 1_600_000_000_000_000);

    assert_eq!(bm(&mut sw).bm_get_config().unwrap(), json);
    let md5 = bm(&mut sw).bm_get_config_md5().unwrap();
    assert_eq!(md5.len(), 16);
    assert_eq!(
        md5,
        <md5::Md5 as md5::Digest>::digest(json.as_bytes()).to_vec()
    );
    let info = bm(&mut sw).bm_mgmt_get_info().unwrap();
    assert_eq!(info.device_id, 0);
    assert_eq!(info.thrift_port, 9090);
    assert_eq!(
        info.notifications_socket.as_deref(),
        Some("ipc:///tmp/bmv2-0-notifications.ipc")
    );

    // swapping needs --enable-swap, which p4jet does not offer yet
    assert_eq!(
        code(bm(&mut sw).bm_load_new_config(&json)),
        "CONFIG_SWAP_DISABLED"
    );
    assert_eq!(code(bm(&mut sw).bm_swap_configs()), "CONFIG_SWAP_DISABLED");
    assert!(!sw.swap_pending());

    // device manager
    bm(&mut sw).bm_dev_mgr_add_port("veth0", 0, "").unwrap();
    bm(&mut sw)
        .bm_dev_mgr_add_port("veth1", 1, "/tmp/x.pcap")
        .unwrap();
    assert_eq!(
        code(bm(&mut sw).bm_dev_mgr_add_port("veth9", 1, "")),
        "ERROR"
    );
    assert_eq!(
        code(bm(&mut sw).bm_dev_mgr_add_port("veth9", -1, "")),
        "ERROR"
    );
    let ports = bm(&mut sw).bm_dev_mgr_show_ports().unwrap();
    assert_eq!(ports.len(), 2);
    assert_eq!(ports[1].iface_name, "veth1");
    assert_eq!(
        ports[1].extra.get("in_pcap").map(String::as_str),
        Some("/tmp/x.pcap")
    );
    bm(&mut sw).bm_dev_mgr_remove_port(0).unwrap();
    assert_eq!(code(bm(&mut sw).bm_dev_mgr_remove_port(0)), "ERROR");
    assert_eq!(
        sw.rt.port_events,
        vec![
            PortEvent::Add {
                port: 0,
                iface: "veth0".into(),
                pcap: None
            },
            PortEvent::Add {
                port: 1,
                iface: "veth1".into(),
                pcap: Some("/tmp/x.pcap".into())
            },
            PortEvent::Remove { port: 0 },
        ]
    );
}

/// The forwarding workers: refused on a switch that runs none; once the binary has
/// published them, a count from 1 to the most is recorded for it (the JSON of
/// `p4jet_workers` shows it as requested), anything else refused.
#[test]
fn workers_are_asked_for_within_their_range() {
    let mut sw = load("stateful");
    assert_eq!(code(bm(&mut sw).p4jet_workers()), "ERROR");
    assert_eq!(code(bm(&mut sw).p4jet_set_workers(2)), "ERROR");
    sw.rt.workers = Some(p4jet_runtime::Workers {
        active: 1,
        requested: 1,
        max: 4,
        auto: Some((1, 4)),
        owners: vec![0, 0, 0, 0],
        changes: 0,
    });
    for bad in [0, 5, -1] {
        assert_eq!(code(bm(&mut sw).p4jet_set_workers(bad)), "ERROR", "{bad}");
    }
    assert_eq!(sw.rt.workers_request, None);
    bm(&mut sw).p4jet_set_workers(3).unwrap();
    assert_eq!(sw.rt.workers_request, Some(3));
    let j = bm(&mut sw).p4jet_workers().unwrap();
    let w = p4jet_thrift::service::p4jet::workers_from_json(&j).unwrap();
    assert_eq!((w.active, w.requested, w.max), (1, 3, 4));
    assert_eq!(w.auto, Some((1, 4)));
    assert_eq!(w.owners, vec![0, 0, 0, 0]);
}

#[test]
fn id_lookup_reset_and_serialize() {
    let mut sw = load("stateful");
    assert_eq!(
        bm(&mut sw)
            .bm_get_id_from_name(BmResourceType::MATCH_TABLE, "IngressImpl.classify")
            .unwrap(),
        1
    );
    assert_eq!(
        bm(&mut sw)
            .bm_get_id_from_name(BmResourceType::METER, "IngressImpl.class_meter")
            .unwrap(),
        1
    );
    assert_eq!(
        bm(&mut sw)
            .bm_get_id_from_name(BmResourceType::COUNTER, "IngressImpl.flow_counter")
            .unwrap(),
        1
    );
    assert_eq!(
        bm(&mut sw)
            .bm_get_id_from_name(BmResourceType::REGISTER, "IngressImpl.port_bytes")
            .unwrap(),
        1
    );
    assert_eq!(
        code(
            bm(&mut sw).bm_get_id_from_name(BmResourceType::ACTION_PROFILE, "IngressImpl.classify")
        ),
        "INVALID_RESOURCE_NAME"
    );
    let mut l2 = load("l2_learning");
    assert_eq!(
        bm(&mut l2)
            .bm_get_id_from_name(BmResourceType::LEARNING_LIST, "learn_digest_t")
            .unwrap(),
        1
    );
    let mut ecmp = load("ecmp");
    assert_eq!(
        bm(&mut ecmp)
            .bm_get_id_from_name(BmResourceType::ACTION_PROFILE, "EgressImpl.smac_profile")
            .unwrap(),
        1
    );

    // reset_state: entries, registers, meters and the PRE go; mirroring sessions stay
    let c = "IngressImpl.classify";
    bm(&mut sw)
        .bm_mt_add_entry(
            c,
            &[tern(&[0, 0, 0, 0x30], &[0xff, 0xff, 0xff, 0xf0])],
            "IngressImpl.set_class",
            &[vec![3]],
            prio(20),
        )
        .unwrap();
    bm(&mut sw)
        .bm_mt_set_default_action(c, "IngressImpl.set_class", &[vec![1]])
        .unwrap();
    bm(&mut sw)
        .bm_register_write("IngressImpl.flow_packets", 5, 100)
        .unwrap();
    let r = vec![
        BmMeterRateConfig {
            units_per_micros: 0.1,
            burst_size: 1,
        };
        2
    ];
    bm(&mut sw)
        .bm_meter_set_rates("IngressImpl.flow_meter", 0, &r)
        .unwrap();
    bm(&mut sw).bm_mc_mgrp_create(1).unwrap();
    let session = MirroringSessionConfig {
        port: Some(1),
        mgid: None,
    };
    bm(&mut sw).mirroring_session_add(4, session).unwrap();
    let dump = bm(&mut sw).bm_serialize_state().unwrap();
    assert!(
        dump.contains("table IngressImpl.classify (1 entries)"),
        "{dump}"
    );
    assert!(dump.contains("mirroring_session 4"), "{dump}");
    assert!(
        dump.contains("register IngressImpl.flow_packets [5=100]"),
        "{dump}"
    );
    bm(&mut sw).bm_reset_state().unwrap();
    assert_eq!(bm(&mut sw).bm_mt_get_num_entries(c).unwrap(), 0);
    assert_eq!(
        bm(&mut sw).bm_mt_get_default_entry(c).unwrap(),
        BmActionEntry::ActionData {
            action_name: "NoAction".into(),
            action_data: vec![],
        }
    );
    assert_eq!(
        bm(&mut sw)
            .bm_register_read("IngressImpl.flow_packets", 5)
            .unwrap(),
        0
    );
    assert_eq!(
        bm(&mut sw)
            .bm_meter_get_rates("IngressImpl.flow_meter", 0)
            .unwrap(),
        vec![]
    );
    assert!(
        bm(&mut sw)
            .bm_mc_get_entries()
            .unwrap()
            .contains("\"mgrps\": []")
    );
    assert_eq!(bm(&mut sw).mirroring_session_get(4).unwrap(), session);

    // const entries come back after a reset
    let mut cf = load("control_flow");
    bm(&mut cf).bm_reset_state().unwrap();
    assert_eq!(
        bm(&mut cf)
            .bm_mt_get_num_entries("IngressImpl.const_tbl")
            .unwrap(),
        4
    );
}

#[test]
fn parser_value_sets_and_hash_parameters() {
    let mut sw = load("parser_features");
    let vs = "ParserImpl.custom_ethertypes";
    assert_eq!(
        bm(&mut sw).bm_parse_vset_get(vs).unwrap(),
        Vec::<Vec<u8>>::new()
    );
    bm(&mut sw).bm_parse_vset_add(vs, &[0x88, 0xb6]).unwrap();
    bm(&mut sw).bm_parse_vset_add(vs, &[0x88, 0xb6]).unwrap();
    bm(&mut sw).bm_parse_vset_add(vs, &[0x99, 0x00]).unwrap();
    let mut got = bm(&mut sw).bm_parse_vset_get(vs).unwrap();
    got.sort();
    assert_eq!(got, vec![vec![0x88, 0xb6], vec![0x99, 0x00]]);
    // simple_switch aborts on a value of the wrong width; p4jet refuses it
    assert_eq!(
        code(bm(&mut sw).bm_parse_vset_add(vs, &[0, 0x88, 0xb6])),
        "ERROR"
    );
    assert_eq!(code(bm(&mut sw).bm_parse_vset_remove(vs, &[0x88])), "ERROR");
    assert_eq!(
        code(bm(&mut sw).bm_parse_vset_add("nope", &[0, 0])),
        "INVALID_PARSE_VSET_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_parse_vset_get("nope")),
        "INVALID_PARSE_VSET_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_parse_vset_clear("nope")),
        "INVALID_PARSE_VSET_NAME"
    );
    bm(&mut sw).bm_parse_vset_remove(vs, &[0x99, 0x00]).unwrap();
    bm(&mut sw).bm_parse_vset_remove(vs, &[0x77, 0x00]).unwrap();
    assert_eq!(
        bm(&mut sw).bm_parse_vset_get(vs).unwrap(),
        vec![vec![0x88, 0xb6]]
    );
    // value sets survive reset_state, as in bmv2
    bm(&mut sw).bm_reset_state().unwrap();
    assert_eq!(
        bm(&mut sw).bm_parse_vset_get(vs).unwrap(),
        vec![vec![0x88, 0xb6]]
    );
    bm(&mut sw).bm_parse_vset_clear(vs).unwrap();
    assert!(bm(&mut sw).bm_parse_vset_get(vs).unwrap().is_empty());

    // custom CRC parameters go to the calculation's slot
    let mut sw = load("hashes");
    let c16 = BmCrc16Config {
        polynomial: 0x1021,
        initial_remainder: 0xffff,
        final_xor_value: 0,
        data_reflected: false,
        remainder_reflected: false,
    };
    bm(&mut sw)
        .bm_set_crc16_custom_parameters("calc_9", c16)
        .unwrap();
    let c32 = BmCrc32Config {
        polynomial: 0x1edc6f41,
        initial_remainder: 0xffffffff,
        final_xor_value: 0xffffffff,
        data_reflected: true,
        remainder_reflected: true,
    };
    bm(&mut sw)
        .bm_set_crc32_custom_parameters("calc_10", c32)
        .unwrap();
    let slots = sw.with_state(|cs| cs.crc.clone()).unwrap();
    let set: Vec<_> = slots.iter().flatten().collect();
    assert_eq!(set.len(), 2);
    assert!(
        set.iter()
            .any(|p| p.width == 16 && p.poly == 0x1021 && p.init == 0xffff)
    );
    assert!(
        set.iter()
            .any(|p| p.width == 32 && p.poly == 0x1edc6f41 && p.refin)
    );
    assert_eq!(
        code(bm(&mut sw).bm_set_crc16_custom_parameters("calc_10", c16)),
        "WRONG_TYPE_CALCULATION"
    );
    assert_eq!(
        code(bm(&mut sw).bm_set_crc32_custom_parameters("calc", c32)),
        "WRONG_TYPE_CALCULATION"
    );
    assert_eq!(
        code(bm(&mut sw).bm_set_crc16_custom_parameters("nope", c16)),
        "INVALID_CALCULATION_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_set_toeplitz_hash_key("nope", &[0; 4])),
        "INVALID_CALCULATION_NAME"
    );
    assert_eq!(
        code(bm(&mut sw).bm_set_toeplitz_hash_key("calc", &[0; 4])),
        "WRONG_TYPE_CALCULATION"
    );
    // CRC parameters survive reset_state, as in bmv2
    bm(&mut sw).bm_reset_state().unwrap();
    assert_eq!(
        sw.with_state(|cs| cs.crc.iter().flatten().count()).unwrap(),
        2
    );

    // a Toeplitz calculation (the engine does not compute Toeplitz yet: the key is kept)
    let json = corpus_json("hashes").replacen("\"algo\" : \"xor16\"", "\"algo\" : \"toeplitz\"", 1);
    assert_ne!(json, corpus_json("hashes"), "the JSON patch must apply");
    let (mut sw, _) = switch_from(&json);
    assert_eq!(
        code(bm(&mut sw).bm_set_toeplitz_hash_key("calc_6", &[1, 2, 3])),
        "INVALID_KEY"
    );
    assert_eq!(
        code(bm(&mut sw).bm_set_toeplitz_hash_key("calc_6", &[])),
        "INVALID_KEY"
    );
    bm(&mut sw)
        .bm_set_toeplitz_hash_key("calc_6", &[0x6d, 0x5a, 0x56, 0xda, 1, 2, 3, 4])
        .unwrap();
}

#[test]
fn ageing_timeouts() {
    // no corpus table supports timeouts: enable it on basic_l2's table
    let json = corpus_json("basic_l2").replacen(
        "\"support_timeout\" : false",
        "\"support_timeout\" : true",
        1,
    );
    assert_ne!(json, corpus_json("basic_l2"), "the JSON patch must apply");
    let (mut sw, clock) = switch_from(&json);
    let t = "IngressImpl.dmac";
    let h = bm(&mut sw)
        .bm_mt_add_entry(
            t,
            &[ex(&mac(1))],
            "IngressImpl.forward",
            &[vec![0, 1]],
            NOPRIO,
        )
        .unwrap();
    assert_eq!(bm(&mut sw).bm_mt_get_entry(t, h).unwrap().life, None);
    clock.store(5_000, Ordering::Relaxed);
    bm(&mut sw).bm_mt_set_entry_ttl(t, h, 2000).unwrap();
    clock.store(8_000, Ordering::Relaxed);
    assert_eq!(
        bm(&mut sw).bm_mt_get_entry(t, h).unwrap().life,
        Some(BmMtEntryLife {
            timeout_ms: 2000,
            time_since_hit_ms: 3,
        })
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_set_entry_ttl(t, 9, 100)),
        "INVALID_HANDLE"
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_indirect_set_entry_ttl("nope", 9, 100)),
        "INVALID_TABLE_NAME"
    );
    // the timeout survives a modification
    bm(&mut sw)
        .bm_mt_modify_entry(t, h, "IngressImpl.drop", &[])
        .unwrap();
    assert_eq!(
        bm(&mut sw)
            .bm_mt_get_entry(t, h)
            .unwrap()
            .life
            .map(|l| l.timeout_ms),
        Some(2000)
    );
}

// --------------------------------------------------------------------------- forwarding

#[test]
fn forwarding_after_entries_added_through_the_api() {
    let mut sw = load("basic_l2");
    for (i, port) in [(0x10u8, 0u8), (0x11, 1), (0x12, 2), (0x13, 3)] {
        bm(&mut sw)
            .bm_mt_add_entry(
                "IngressImpl.dmac",
                &[ex(&mac(i))],
                "IngressImpl.forward",
                &[vec![0, port]],
                NOPRIO,
            )
            .unwrap();
    }
    let f = |d: u8| eth(&mac(d), &mac(0x10), 0x0800, &[0xab; 50]);
    let out = run(&mut sw, &[(0, f(0x12)), (1, f(0x13)), (0, f(0x99))]);
    assert_eq!(out.get(&2), Some(&vec![f(0x12)]));
    assert_eq!(out.get(&3), Some(&vec![f(0x13)]));
    assert_eq!(out.len(), 2, "unknown destinations are dropped");
    // a default action set at run time
    bm(&mut sw)
        .bm_mt_set_default_action("IngressImpl.dmac", "IngressImpl.forward", &[vec![0, 1]])
        .unwrap();
    let out = run(&mut sw, &[(0, f(0x99))]);
    assert_eq!(out.get(&1), Some(&vec![f(0x99)]));

    let mut sw = load("simple_router");
    let route = |sw: &mut Switch, dst: [u8; 4], len: i32, nh: [u8; 4], port: u8| {
        bm(sw)
            .bm_mt_add_entry(
                "IngressImpl.ipv4_lpm",
                &[lpm(&dst, len)],
                "IngressImpl.set_next_hop",
                &[nh.to_vec(), vec![0, port]],
                NOPRIO,
            )
            .unwrap()
    };
    route(&mut sw, [10, 0, 0, 0], 8, [192, 168, 0, 1], 1);
    route(&mut sw, [10, 1, 0, 0], 16, [192, 168, 0, 2], 2);
    // bits past the prefix are kept as given in an LPM table
    let h = route(&mut sw, [10, 1, 1, 99], 24, [192, 168, 0, 3], 3);
    assert_eq!(
        bm(&mut sw)
            .bm_mt_get_entry("IngressImpl.ipv4_lpm", h)
            .unwrap()
            .match_key,
        vec![lpm(&[10, 1, 1, 99], 24)]
    );
    assert_eq!(
        code(bm(&mut sw).bm_mt_add_entry(
            "IngressImpl.ipv4_lpm",
            &[lpm(&[10, 1, 1, 0], 24)],
            "IngressImpl.drop",
            &[],
            NOPRIO
        )),
        "DUPLICATE_ENTRY"
    );
    for (nh, m) in [
        ([192, 168, 0, 1], 1u8),
        ([192, 168, 0, 2], 2),
        ([192, 168, 0, 3], 3),
    ] {
        bm(&mut sw)
            .bm_mt_add_entry(
                "IngressImpl.neighbor",
                &[ex(&nh)],
                "IngressImpl.set_dst_mac",
                &[vec![0, 0, 0, 0, 1, m]],
                NOPRIO,
            )
            .unwrap();
    }
    for port in 0..4u8 {
        bm(&mut sw)
            .bm_mt_add_entry(
                "EgressImpl.smac",
                &[ex(&[0, port])],
                "EgressImpl.set_src_mac",
                &[vec![0, 0xaa, 0, 0, 0, port]],
                NOPRIO,
            )
            .unwrap();
    }
    let pkt = |dst: [u8; 4]| {
        eth(
            &mac(0xff),
            &mac(0xee),
            0x0800,
            &ipv4([172, 16, 0, 1], dst, 17, 64, &[0; 8]),
        )
    };
    let out = run(
        &mut sw,
        &[
            (0, pkt([10, 9, 9, 9])),
            (0, pkt([10, 1, 9, 9])),
            (0, pkt([10, 1, 1, 7])),
            (0, pkt([11, 0, 0, 1])),
        ],
    );
    assert_eq!(out.keys().copied().collect::<Vec<_>>(), vec![1, 2, 3]);
    for (port, frames) in &out {
        let f = &frames[0];
        assert_eq!(&f[0..6], &[0, 0, 0, 0, 1, *port as u8]);
        assert_eq!(&f[6..12], &[0, 0xaa, 0, 0, 0, *port as u8]);
        assert_eq!(f[22], 63, "TTL decremented");
        assert_eq!(csum16(&f[14..34]), 0, "checksum updated");
    }
}
