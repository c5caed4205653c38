//! Malformed Thrift frames and invalid requests against a running `p4jet run`:
//! errors come back, the server keeps serving, the state and the forwarding do not
//! change.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;
use p4jet_thrift::ThriftClient;
use p4jet_thrift::types::{BmAddEntryOptions, BmMatchParam};

const FRAME: &str = "0000000000110000000000100800 000102030405060708090A0B";

fn call_header(method: &str, seqid: i32) -> Vec<u8> {
    let mut b = vec![];
    b.extend_from_slice(&0x8001_0001u32.to_be_bytes());
    b.extend_from_slice(&(method.len() as i32).to_be_bytes());
    b.extend_from_slice(method.as_bytes());
    b.extend_from_slice(&seqid.to_be_bytes());
    b
}

fn field_i32(id: i16, v: i32) -> Vec<u8> {
    let mut b = vec![8];
    b.extend_from_slice(&id.to_be_bytes());
    b.extend_from_slice(&v.to_be_bytes());
    b
}

fn field_str(id: i16, s: &[u8]) -> Vec<u8> {
    let mut b = vec![11];
    b.extend_from_slice(&id.to_be_bytes());
    b.extend_from_slice(&(s.len() as i32).to_be_bytes());
    b.extend_from_slice(s);
    b
}

/// A valid `standard:bm_mt_get_num_entries(0, table)` call.
fn num_entries_call(table: &str, seqid: i32) -> Vec<u8> {
    let mut b = call_header("standard:bm_mt_get_num_entries", seqid);
    b.extend(field_i32(1, 0));
    b.extend(field_str(2, table.as_bytes()));
    b.push(0);
    b
}

/// Sends `bytes`, half-closes, and returns everything the server answers before it
/// closes (or until 5 s pass).
fn exchange(port: u16, bytes: &[u8], half_close: bool) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(bytes);
    if half_close {
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
    let mut out = vec![];
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
        if !half_close && !out.is_empty() {
            break;
        }
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn malformed_frames_and_invalid_requests_change_nothing() {
    let dir = tmpdir("live-malformed");
    let mut sw = Running::start(
        &dir,
        &corpus_json("basic_l2"),
        &[0, 1],
        &["--", "--enable-swap"],
    );
    let port = sw.thrift_port;
    let mut c = ThriftClient::connect(("127.0.0.1", port)).unwrap();
    let key = |mac: u8| {
        vec![BmMatchParam::Exact {
            key: vec![0, 0, 0, 0, 0, mac],
        }]
    };
    let h = c
        .bm_mt_add_entry(
            "IngressImpl.dmac",
            &key(0x11),
            "IngressImpl.forward",
            &[vec![0, 1]],
            BmAddEntryOptions::default(),
        )
        .unwrap();
    assert_eq!(h, 0);
    sw.send(0, &unhex(FRAME));
    assert_eq!(sw.wait_outputs(&[(1, 1)])[0].len(), 1);
    let entries_before = c.bm_mt_get_entries("IngressImpl.dmac").unwrap();

    // ---- malformed frames, each on its own connection
    // garbage (deterministic pseudo-random bytes)
    let mut x: u32 = 0x1234_5678;
    for round in 0..20 {
        let garbage: Vec<u8> = (0..(64 + round * 97))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let _ = exchange(port, &garbage, true);
    }
    // every truncation of a valid add_entry call
    let mut add = call_header("standard:bm_mt_add_entry", 7);
    add.extend(field_i32(1, 0));
    add.extend(field_str(2, b"IngressImpl.dmac"));
    add.push(15); // list
    add.extend_from_slice(&3i16.to_be_bytes());
    add.push(12); // of structs
    add.extend_from_slice(&1i32.to_be_bytes());
    add.extend(field_i32(1, 0)); // type EXACT
    add.push(12);
    add.extend_from_slice(&2i16.to_be_bytes());
    add.extend(field_str(1, &[0, 0, 0, 0, 0, 0x22]));
    add.push(0);
    add.push(0);
    add.extend(field_str(4, b"IngressImpl.forward"));
    add.push(0);
    for cut in 0..add.len() {
        let reply = exchange(port, &add[..cut], true);
        assert!(reply.is_empty(), "a truncated call got a reply (cut {cut})");
    }
    // bad version, absurd name length
    let _ = exchange(
        port,
        &[0x80, 0x02, 0, 1, 0, 0, 0, 4, b'x', b'x', b'x', b'x'],
        true,
    );
    let _ = exchange(port, &[0x80, 0x01, 0, 1, 0x7f, 0xff, 0xff, 0xff], true);
    // a string length of 2^31-1 inside the arguments: PROTOCOL_ERROR, then close
    let mut huge = call_header("standard:bm_mt_get_num_entries", 9);
    huge.extend(field_i32(1, 0));
    huge.push(11);
    huge.extend_from_slice(&2i16.to_be_bytes());
    huge.extend_from_slice(&i32::MAX.to_be_bytes());
    let reply = exchange(port, &huge, false);
    assert!(contains(&reply, b"bm_mt_get_num_entries"), "{reply:?}");
    // an unknown field type inside the arguments
    let mut badtype = call_header("standard:bm_mt_get_num_entries", 10);
    badtype.extend_from_slice(&[0x55, 0, 2, 1, 2, 3]);
    let _ = exchange(port, &badtype, true);
    // unknown method, then a valid call on the same connection: still in step
    let mut both = call_header("standard:no_such_method", 11);
    both.push(0);
    both.extend(num_entries_call("IngressImpl.dmac", 12));
    let reply = exchange(port, &both, true);
    assert!(contains(&reply, b"Invalid method name"), "{reply:?}");
    assert!(
        contains(&reply, &[10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0]),
        "the valid call after the unknown one answers 1 entry: {reply:?}"
    );
    // connections opened and dropped at once
    for _ in 0..50 {
        drop(TcpStream::connect(("127.0.0.1", port)).unwrap());
    }

    // ---- invalid requests on a healthy connection: declared errors
    // (the exception as simple_switch_CLI prints it)
    let err = |e: p4jet_runtime::RuntimeError| match e.bmv2 {
        Some(c) => c.to_string(),
        None => format!("no exception: {e}"),
    };
    let e = c
        .bm_mt_add_entry(
            "nosuch",
            &key(0x12),
            "IngressImpl.forward",
            &[vec![0, 1]],
            BmAddEntryOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err(e), "Invalid table operation (INVALID_TABLE_NAME)");
    let e = c
        .bm_mt_add_entry(
            "IngressImpl.dmac",
            &key(0x11),
            "IngressImpl.forward",
            &[vec![0, 2]],
            BmAddEntryOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err(e), "Invalid table operation (DUPLICATE_ENTRY)");
    let e = c
        .bm_mt_add_entry(
            "IngressImpl.dmac",
            &[BmMatchParam::Exact { key: vec![1, 2] }],
            "IngressImpl.forward",
            &[vec![0, 2]],
            BmAddEntryOptions::default(),
        )
        .unwrap_err();
    let e = err(e);
    assert!(e.starts_with("Invalid table operation"), "{e}");
    let e = c
        .bm_mt_add_entry(
            "IngressImpl.dmac",
            &key(0x13),
            "IngressImpl.nosuch",
            &[],
            BmAddEntryOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err(e), "Invalid table operation (INVALID_ACTION_NAME)");
    let e = c.bm_mt_delete_entry("IngressImpl.dmac", 99).unwrap_err();
    assert_eq!(err(e), "Invalid table operation (INVALID_HANDLE)");
    let e = c.bm_mc_node_associate(5, 77).unwrap_err();
    let e = err(e);
    assert!(e.starts_with("Invalid PRE operation"), "{e}");
    let e = c.bm_load_new_config("{ this is not json").unwrap_err();
    assert_eq!(err(e), "Invalid swap operation (NO_ONGOING_SWAP)");
    let e = c.bm_swap_configs().unwrap_err();
    assert_eq!(err(e), "Invalid swap operation (NO_ONGOING_SWAP)");
    let e = c.bm_register_read("nosuch", 0).unwrap_err();
    assert_eq!(err(e), "Invalid register operation (INVALID_REGISTER_NAME)");

    // ---- nothing changed: entries, and forwarding
    let mut c2 = ThriftClient::connect(("127.0.0.1", port)).unwrap();
    assert_eq!(c2.bm_mt_get_num_entries("IngressImpl.dmac").unwrap(), 1);
    assert_eq!(
        c2.bm_mt_get_entries("IngressImpl.dmac").unwrap(),
        entries_before
    );
    sw.send(0, &unhex(FRAME));
    let o = sw.wait_outputs(&[(1, 2)]);
    assert_eq!(o[0], vec![unhex(FRAME), unhex(FRAME)]);
    assert!(sw.output(0).is_empty());
    let st = sw.stop();
    assert!(st.success(), "{st:?}\n{}", sw.stderr());
}
