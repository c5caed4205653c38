//! Binary protocol codec: round trips of every wire type and of every IDL
//! struct, limits, and golden byte sequences written by hand from the
//! Thrift binary protocol specification (checked on raw sockets against
//! both our client and our server).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;

use p4jet_runtime::bmv2::*;
use p4jet_runtime::testing::Call;
use p4jet_thrift::ThriftClient;
use p4jet_thrift::codec::{self, Fields};
use p4jet_thrift::protocol::*;
use p4jet_thrift::types::*;

fn enc(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_value(&mut out, v);
    out
}

fn dec(t: TType, bytes: &[u8]) -> Result<Value, DecodeError> {
    let mut d = Decoder::new(bytes, Limits::default());
    let v = d.read_value(t)?;
    assert!(d.get_ref().is_empty(), "trailing bytes");
    Ok(v)
}

fn roundtrip(v: Value) {
    let bytes = enc(&v);
    assert_eq!(dec(v.ttype(), &bytes).unwrap(), v, "bytes {bytes:02x?}");
}

fn struct_roundtrip(s: &Struct) -> Struct {
    let bytes = enc(&Value::Struct(s.clone()));
    match dec(TType::Struct, &bytes).unwrap() {
        Value::Struct(s) => s,
        v => panic!("not a struct: {v:?}"),
    }
}

/// Concatenates byte pieces (for readable golden sequences).
fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

// ---------------------------------------------------------------------------
// Primitive and container round trips

#[test]
fn every_wire_type_round_trips() {
    for b in [true, false] {
        roundtrip(Value::Bool(b));
    }
    for v in [i8::MIN, -1, 0, 1, i8::MAX] {
        roundtrip(Value::Byte(v));
    }
    for v in [i16::MIN, -1, 0, 0x1234, i16::MAX] {
        roundtrip(Value::I16(v));
    }
    for v in [i32::MIN, -1, 0, 0x1234_5678, i32::MAX] {
        roundtrip(Value::I32(v));
    }
    for v in [i64::MIN, -1, 0, 0x1234_5678_9abc_def0, i64::MAX] {
        roundtrip(Value::I64(v));
    }
    for v in [0.0, -0.0, 1.5, -2.25e-300, f64::INFINITY, f64::MIN_POSITIVE] {
        roundtrip(Value::Double(v));
    }
    // NaN payloads survive bit for bit.
    let nan = f64::from_bits(0x7ff8_dead_beef_0001);
    match dec(TType::Double, &enc(&Value::Double(nan))).unwrap() {
        Value::Double(d) => assert_eq!(d.to_bits(), nan.to_bits()),
        v => panic!("{v:?}"),
    }
    roundtrip(Value::string(""));
    roundtrip(Value::string("héllo wörld ✓"));
    roundtrip(Value::Binary((0..=255).collect()));
    roundtrip(Value::list(TType::I32, vec![]));
    roundtrip(Value::list(
        TType::String,
        vec![Value::string("a"), Value::Binary(vec![0, 255])],
    ));
    roundtrip(Value::list(
        TType::List,
        vec![
            Value::list(TType::Bool, vec![Value::Bool(true)]),
            Value::list(TType::Bool, vec![]),
        ],
    ));
    roundtrip(Value::Set {
        elem: TType::I64,
        items: vec![Value::I64(1), Value::I64(-1)],
    });
    roundtrip(Value::Map {
        key: TType::String,
        value: TType::Struct,
        entries: vec![(
            Value::string("k"),
            Value::Struct(Struct::new().with(1, Value::I16(2))),
        )],
    });
    roundtrip(Value::Map {
        key: TType::I32,
        value: TType::Double,
        entries: vec![],
    });
    roundtrip(Value::Struct(Struct::new()));
    roundtrip(Value::Struct(Struct::new().with(-3, Value::Byte(1)).with(
        32767,
        Value::Struct(Struct::new().with(0, Value::Bool(false))),
    )));
}

#[test]
fn messages_round_trip() {
    for kind in [
        MessageType::Call,
        MessageType::Reply,
        MessageType::Exception,
        MessageType::Oneway,
    ] {
        let body = Struct::new().with(1, Value::I32(7));
        let bytes = encode_message("standard:bm_get_config", kind, -5, &body);
        let (h, b) = decode_message(&bytes, Limits::default()).unwrap();
        assert_eq!(h.name, "standard:bm_get_config");
        assert_eq!(h.kind, kind);
        assert_eq!(h.seqid, -5);
        assert_eq!(b, body);
    }
}

#[test]
fn application_exception_round_trips() {
    let ex = ApplicationException::new(app_error::UNKNOWN_METHOD, "Invalid method name: 'x'");
    let back = ApplicationException::from_struct(&struct_roundtrip(&ex.to_struct()));
    assert_eq!(back, ex);
    assert_eq!(
        back.to_string(),
        "TApplicationException(UNKNOWN_METHOD): Invalid method name: 'x'"
    );
}

#[test]
fn struct_lookup_follows_generated_code() {
    // Last occurrence of a repeated id wins; a mistyped field reads unset.
    let s = Struct::new()
        .with(1, Value::I32(1))
        .with(2, Value::string("x"))
        .with(1, Value::I32(2));
    let f = Fields(&s);
    assert_eq!(f.i32(1), 2);
    assert_eq!(f.i32(2), 0);
    assert_eq!(f.string(2), "x");
    assert_eq!(f.string(3), "");
    assert!(f.list(2, TType::String).is_empty());
}

// ---------------------------------------------------------------------------
// IDL struct round trips

fn all_match_params() -> Vec<BmMatchParam> {
    vec![
        BmMatchParam::Exact { key: vec![1, 2, 3] },
        BmMatchParam::Exact { key: vec![] },
        BmMatchParam::Lpm {
            key: vec![10, 0, 0, 1],
            prefix_length: 0,
        },
        BmMatchParam::Lpm {
            key: vec![0xff; 16],
            prefix_length: 128,
        },
        BmMatchParam::Ternary {
            key: vec![0xab],
            mask: vec![0xf0],
        },
        BmMatchParam::Valid { key: true },
        BmMatchParam::Valid { key: false },
        BmMatchParam::Range {
            start: vec![0, 0],
            end: vec![0xff, 0xff],
        },
    ]
}

#[test]
fn every_idl_struct_round_trips() {
    for p in all_match_params() {
        let s = struct_roundtrip(&codec::match_param(&p));
        assert_eq!(codec::match_param_from(Fields(&s)).unwrap(), p);
    }
    let key = all_match_params();
    let s = struct_roundtrip(&Struct::new().with(3, codec::match_key(&key)));
    assert_eq!(codec::match_key_from(Fields(&s), 3).unwrap(), key);

    for o in [None, Some(0), Some(-1), Some(i32::MAX)] {
        let o = BmAddEntryOptions { priority: o };
        let s = struct_roundtrip(&codec::add_entry_options(o));
        assert_eq!(codec::add_entry_options_from(Fields(&s)), o);
    }

    for c in [
        BmCounterValue::default(),
        BmCounterValue {
            bytes: u64::MAX,
            packets: 1 << 63,
        },
    ] {
        let s = struct_roundtrip(&codec::counter_value(c));
        assert_eq!(codec::counter_value_from(Fields(&s)), c);
    }

    let rates = vec![
        BmMeterRateConfig {
            units_per_micros: 0.0001,
            burst_size: 100,
        },
        BmMeterRateConfig {
            units_per_micros: 1e9,
            burst_size: u32::MAX,
        },
    ];
    let s = struct_roundtrip(&Struct::new().with(4, codec::meter_rates(&rates)));
    assert_eq!(codec::meter_rates_from(Fields(&s), 4), rates);

    for a in [
        BmActionEntry::None,
        BmActionEntry::ActionData {
            action_name: "IngressImpl.forward".into(),
            action_data: vec![vec![0, 1], vec![]],
        },
        BmActionEntry::MbrHandle(7),
        BmActionEntry::GrpHandle(-1),
    ] {
        let s = struct_roundtrip(&codec::action_entry(&a));
        assert_eq!(codec::action_entry_from(Fields(&s)).unwrap(), a);
    }

    for life in [
        None,
        Some(BmMtEntryLife {
            timeout_ms: 100,
            time_since_hit_ms: 3,
        }),
    ] {
        let e = BmMtEntry {
            match_key: all_match_params(),
            options: BmAddEntryOptions { priority: Some(3) },
            entry_handle: 42,
            action_entry: BmActionEntry::MbrHandle(2),
            life,
        };
        let s = struct_roundtrip(&codec::mt_entry(&e));
        assert_eq!(codec::mt_entry_from(Fields(&s)).unwrap(), e);
    }

    let m = BmMtActProfMember {
        mbr_handle: 3,
        action_name: "a".into(),
        action_data: vec![vec![9]],
    };
    let s = struct_roundtrip(&codec::act_prof_member(&m));
    assert_eq!(codec::act_prof_member_from(Fields(&s)), m);

    let g = BmMtActProfGroup {
        grp_handle: 4,
        mbr_handles: vec![1, 2, 3],
    };
    let s = struct_roundtrip(&codec::act_prof_group(&g));
    assert_eq!(codec::act_prof_group_from(Fields(&s)), g);

    for c in [
        BmConfig::default(),
        BmConfig {
            device_id: -1,
            thrift_port: 9090,
            notifications_socket: Some("ipc:///tmp/n".into()),
            elogger_socket: Some(String::new()),
            debugger_socket: None,
        },
    ] {
        let s = struct_roundtrip(&codec::bm_config(&c));
        assert_eq!(codec::bm_config_from(Fields(&s)), c);
    }

    let mut extra = BTreeMap::new();
    extra.insert("k".to_string(), "v".to_string());
    for p in [
        DevMgrPortInfo::default(),
        DevMgrPortInfo {
            port_num: 3,
            iface_name: "veth0".into(),
            is_up: true,
            extra,
        },
    ] {
        let s = struct_roundtrip(&codec::port_info(&p));
        assert_eq!(codec::port_info_from(Fields(&s)), p);
    }

    let c16 = BmCrc16Config {
        polynomial: 0x8005,
        initial_remainder: 0xffff,
        final_xor_value: 0,
        data_reflected: true,
        remainder_reflected: false,
    };
    let s = struct_roundtrip(&codec::crc16_config(c16));
    assert_eq!(codec::crc16_config_from(Fields(&s)), c16);
    let c32 = BmCrc32Config {
        polynomial: 0x04c1_1db7,
        initial_remainder: 0xffff_ffff,
        final_xor_value: 0xffff_ffff,
        data_reflected: false,
        remainder_reflected: true,
    };
    let s = struct_roundtrip(&codec::crc32_config(c32));
    assert_eq!(codec::crc32_config_from(Fields(&s)), c32);

    for (port, mgid) in [
        (None, None),
        (Some(1), None),
        (None, Some(2)),
        (Some(3), Some(4)),
    ] {
        let c = MirroringSessionConfig { port, mgid };
        let s = struct_roundtrip(&codec::mirroring_config(c));
        assert_eq!(codec::mirroring_config_from(Fields(&s)), c);
    }
}

#[test]
fn bad_enum_tags_are_errors() {
    let s = Struct::new().with(1, Value::I32(9));
    assert!(codec::match_param_from(Fields(&s)).is_err());
    assert!(codec::action_entry_from(Fields(&s)).is_err());
}

#[test]
fn catalogue_matches_the_idl_counts() {
    use codec::{METHODS, Service};
    let count = |s| METHODS.iter().filter(|m| m.service == s).count();
    assert_eq!(count(Service::Standard), 70);
    assert_eq!(count(Service::SimplePreLag), 9);
    assert_eq!(count(Service::SimplePre), 8);
    assert_eq!(count(Service::SimpleSwitch), 14);
    // Every declared exception is field 1 of the result, and every argument
    // id is unique within its method.
    for m in METHODS {
        let mut ids: Vec<i16> = m.args.iter().map(|a| a.0).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), m.args.len(), "{}", m.name);
    }
}

// ---------------------------------------------------------------------------
// Limits and malformed input at the codec level

#[test]
fn limits_are_enforced() {
    let limits = Limits {
        max_string_len: 16,
        max_container_len: 4,
        max_message_len: 64,
        max_depth: 3,
        max_name_len: 8,
    };
    let dec_with = |t, b: &[u8]| Decoder::new(b, limits).read_value(t);

    // String longer than the limit: rejected before reading its bytes.
    let long = enc(&Value::Binary(vec![0; 17]));
    assert!(matches!(
        dec_with(TType::String, &long),
        Err(DecodeError::Limit(_))
    ));
    // A huge announced length with no data behind it: rejected up front.
    assert!(matches!(
        dec_with(TType::String, &[0x7f, 0xff, 0xff, 0xff]),
        Err(DecodeError::Limit(_))
    ));
    // Negative lengths are invalid.
    assert!(matches!(
        dec_with(TType::String, &[0xff, 0xff, 0xff, 0xfe]),
        Err(DecodeError::Invalid(_))
    ));
    assert!(matches!(
        dec_with(TType::List, &[8, 0x80, 0, 0, 0]),
        Err(DecodeError::Invalid(_))
    ));
    // Too many elements.
    assert!(matches!(
        dec_with(TType::List, &[8, 0, 0, 0, 5]),
        Err(DecodeError::Limit(_))
    ));
    assert!(matches!(
        dec_with(TType::Map, &[8, 8, 0, 0, 0, 5]),
        Err(DecodeError::Limit(_))
    ));
    // Too deep: list<list<list<list<i32>>>>.
    let deep = Value::list(
        TType::List,
        vec![Value::list(
            TType::List,
            vec![Value::list(
                TType::List,
                vec![Value::list(TType::I32, vec![])],
            )],
        )],
    );
    assert!(matches!(
        dec_with(TType::List, &enc(&deep)),
        Err(DecodeError::Limit(_))
    ));
    // Unknown element and field types.
    assert!(matches!(
        dec_with(TType::List, &[5, 0, 0, 0, 1]),
        Err(DecodeError::Invalid(_))
    ));
    assert!(matches!(
        dec_with(TType::Struct, &[0x10, 0, 1]),
        Err(DecodeError::Invalid(_))
    ));
    // Truncated input is an I/O (end of stream) error.
    assert!(matches!(
        dec_with(TType::I64, &[0, 0, 0]),
        Err(DecodeError::Io(_))
    ));
    assert!(matches!(
        dec_with(TType::String, &[0, 0, 0, 4, b'a']),
        Err(DecodeError::Io(_))
    ));

    // Message-level limits: name length and total size.
    let msg = encode_message("toolongname", MessageType::Call, 1, &Struct::new());
    assert!(matches!(
        decode_message(&msg, limits),
        Err(DecodeError::Limit(_))
    ));
    let big = Struct::new()
        .with(1, Value::Binary(vec![0; 16]))
        .with(2, Value::Binary(vec![0; 16]))
        .with(3, Value::Binary(vec![0; 16]));
    let msg = encode_message("m", MessageType::Call, 1, &big);
    assert!(matches!(
        decode_message(&msg, limits),
        Err(DecodeError::Limit(_))
    ));
    // Bad version and bad message type.
    assert!(matches!(
        decode_message(&[0x80, 0x02, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0], limits),
        Err(DecodeError::Invalid(_))
    ));
    assert!(matches!(
        decode_message(&[0x80, 0x01, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0], limits),
        Err(DecodeError::Invalid(_))
    ));
    // Trailing bytes after a message.
    let mut msg = encode_message("m", MessageType::Call, 1, &Struct::new());
    msg.push(0);
    assert!(decode_message(&msg, limits).is_err());
}

#[test]
fn pseudo_random_bytes_never_panic() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let limits = Limits {
        max_string_len: 1 << 10,
        max_container_len: 1 << 10,
        max_message_len: 1 << 16,
        ..Limits::default()
    };
    for len in 0..3000usize {
        let mut bytes = Vec::with_capacity(len % 97);
        for _ in 0..len % 97 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            bytes.push((x >> 24) as u8);
        }
        // Make some inputs start like a real message so the body decoder
        // sees garbage too.
        if len % 3 == 0 && bytes.len() > 12 {
            bytes[..4].copy_from_slice(&[0x80, 0x01, 0x00, 0x01]);
            bytes[4..8].copy_from_slice(&[0, 0, 0, 1]);
        }
        let _ = decode_message(&bytes, limits);
        for t in [TType::Struct, TType::List, TType::Map, TType::String] {
            let _ = Decoder::new(&bytes[..], limits).read_value(t);
        }
    }
}

// ---------------------------------------------------------------------------
// Golden bytes, by hand from the specification

const CXT0: &[u8] = &[0x08, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00]; // i32 field 1 = 0

fn header(kind: u8, name: &str, seqid: i32) -> Vec<u8> {
    let mut h = vec![0x80, 0x01, 0x00, kind];
    h.extend_from_slice(&(name.len() as u32).to_be_bytes());
    h.extend_from_slice(name.as_bytes());
    h.extend_from_slice(&seqid.to_be_bytes());
    h
}

/// `standard:bm_mt_get_num_entries(0, "t")`, seqid 1.
fn golden_get_num_entries_call() -> Vec<u8> {
    cat(&[
        &[0x80, 0x01, 0x00, 0x01],
        &[0x00, 0x00, 0x00, 0x1e],
        b"standard:bm_mt_get_num_entries",
        &[0x00, 0x00, 0x00, 0x01],
        CXT0,
        &[0x0b, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, b't'],
        &[0x00],
    ])
}

/// Its reply: success (field 0, i64) = 0.
fn golden_get_num_entries_reply(n: u8) -> Vec<u8> {
    cat(&[
        &[0x80, 0x01, 0x00, 0x02],
        &[0x00, 0x00, 0x00, 0x15],
        b"bm_mt_get_num_entries",
        &[0x00, 0x00, 0x00, 0x01],
        &[0x0a, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, n],
        &[0x00],
    ])
}

/// `standard:bm_mt_add_entry(0, "t", [EXACT aabb], "a", [07], {priority 5})`.
fn golden_add_entry_call() -> Vec<u8> {
    cat(&[
        &[0x80, 0x01, 0x00, 0x01],
        &[0x00, 0x00, 0x00, 0x18],
        b"standard:bm_mt_add_entry",
        &[0x00, 0x00, 0x00, 0x01],
        CXT0,
        &[0x0b, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, b't'],
        // 3: list<struct> of one BmMatchParam
        &[0x0f, 0x00, 0x03, 0x0c, 0x00, 0x00, 0x00, 0x01],
        &[0x08, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00], // type = EXACT
        &[0x0c, 0x00, 0x02],                         // exact
        &[0x0b, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0xaa, 0xbb],
        &[0x00], // end of BmMatchParamExact
        &[0x00], // end of BmMatchParam
        &[0x0b, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, b'a'],
        // 5: list<binary> with one 1-byte string
        &[0x0f, 0x00, 0x05, 0x0b, 0x00, 0x00, 0x00, 0x01],
        &[0x00, 0x00, 0x00, 0x01, 0x07],
        // 6: BmAddEntryOptions { 1: priority = 5 }
        &[
            0x0c, 0x00, 0x06, 0x08, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0x00,
        ],
        &[0x00],
    ])
}

/// Its reply: InvalidTableOperation (field 1) with code DUPLICATE_ENTRY (17).
fn golden_add_entry_duplicate_reply() -> Vec<u8> {
    cat(&[
        &[0x80, 0x01, 0x00, 0x02],
        &[0x00, 0x00, 0x00, 0x0f],
        b"bm_mt_add_entry",
        &[0x00, 0x00, 0x00, 0x01],
        &[
            0x0c, 0x00, 0x01, 0x08, 0x00, 0x01, 0x00, 0x00, 0x00, 0x11, 0x00,
        ],
        &[0x00],
    ])
}

/// `simple_switch:mirroring_session_add(3, {port = 2})`.
fn golden_mirroring_add_call() -> Vec<u8> {
    cat(&[
        &header(1, "simple_switch:mirroring_session_add", 1),
        &[0x08, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03],
        &[
            0x0c, 0x00, 0x02, 0x08, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00,
        ],
        &[0x00],
    ])
}

#[test]
fn golden_encodings() {
    let body = Struct::new()
        .with(1, Value::I32(0))
        .with(2, Value::string("t"));
    assert_eq!(
        encode_message(
            "standard:bm_mt_get_num_entries",
            MessageType::Call,
            1,
            &body
        ),
        golden_get_num_entries_call()
    );
    // double 1.5 and i32 100 (BmMeterRateConfig).
    let rate = codec::meter_rate(&BmMeterRateConfig {
        units_per_micros: 1.5,
        burst_size: 100,
    });
    assert_eq!(
        enc(&Value::Struct(rate)),
        [
            0x04, 0x00, 0x01, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, //
            0x08, 0x00, 0x02, 0, 0, 0, 0x64, //
            0x00
        ]
    );
    // DevMgrPortInfo with a map<string,string> and a bool.
    let mut extra = BTreeMap::new();
    extra.insert("k".to_string(), "v".to_string());
    let p = codec::port_info(&DevMgrPortInfo {
        port_num: 1,
        iface_name: "e".into(),
        is_up: true,
        extra,
    });
    assert_eq!(
        enc(&Value::Struct(p)),
        cat(&[
            &[0x08, 0x00, 0x01, 0, 0, 0, 1],
            &[0x0b, 0x00, 0x02, 0, 0, 0, 1, b'e'],
            &[0x02, 0x00, 0x03, 0x01],
            &[0x0d, 0x00, 0x04, 0x0b, 0x0b, 0, 0, 0, 1],
            &[0, 0, 0, 1, b'k', 0, 0, 0, 1, b'v'],
            &[0x00],
        ])
    );
    // i16 (BmCrc16Config polynomial 0x8005 travels as the same bits).
    let c = codec::crc16_config(BmCrc16Config {
        polynomial: 0x8005,
        ..Default::default()
    });
    assert_eq!(
        &enc(&Value::Struct(c))[..5],
        &[0x06, 0x00, 0x01, 0x80, 0x05]
    );
    // TApplicationException UNKNOWN_METHOD.
    let ex = ApplicationException::new(app_error::UNKNOWN_METHOD, "no");
    assert_eq!(
        encode_message("m", MessageType::Exception, 9, &ex.to_struct()),
        cat(&[
            &[0x80, 0x01, 0x00, 0x03, 0, 0, 0, 1, b'm', 0, 0, 0, 9],
            &[0x0b, 0x00, 0x01, 0, 0, 0, 2, b'n', b'o'],
            &[0x08, 0x00, 0x02, 0, 0, 0, 1],
            &[0x00],
        ])
    );
}

#[test]
fn golden_decodings() {
    let (h, body) = decode_message(&golden_add_entry_call(), Limits::default()).unwrap();
    assert_eq!(h.name, "standard:bm_mt_add_entry");
    assert_eq!(h.kind, MessageType::Call);
    assert_eq!(h.seqid, 1);
    let f = Fields(&body);
    assert_eq!(
        codec::match_key_from(f, 3).unwrap(),
        vec![BmMatchParam::Exact {
            key: vec![0xaa, 0xbb]
        }]
    );
    assert_eq!(f.binary_list(5), vec![vec![7]]);
    assert_eq!(codec::add_entry_options_from(f.strukt(6)).priority, Some(5));
    // Old (non-strict) header: length, name, type byte, seqid.
    let old = [0, 0, 0, 4, b'p', b'i', b'n', b'g', 1, 0, 0, 0, 7, 0];
    let (h, body) = decode_message(&old, Limits::default()).unwrap();
    assert_eq!(
        (h.name.as_str(), h.kind, h.seqid),
        ("ping", MessageType::Call, 7)
    );
    assert!(body.fields.is_empty());
}

/// A one-shot fake switch: checks the bytes the client sends and answers
/// with canned bytes.
fn fake_switch(expect: Vec<u8>, reply: Vec<u8>) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let t = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut got = vec![0u8; expect.len()];
        s.read_exact(&mut got).unwrap();
        s.write_all(&reply).unwrap();
        got
    });
    (port, t)
}

#[test]
fn client_sends_golden_bytes() {
    let (port, t) = fake_switch(
        golden_get_num_entries_call(),
        golden_get_num_entries_reply(3),
    );
    let mut c = ThriftClient::connect(("127.0.0.1", port)).unwrap();
    assert_eq!(c.bm_mt_get_num_entries("t"), Ok(3));
    assert_eq!(t.join().unwrap(), golden_get_num_entries_call());

    let (port, t) = fake_switch(golden_add_entry_call(), golden_add_entry_duplicate_reply());
    let mut c = ThriftClient::connect(("127.0.0.1", port)).unwrap();
    let r = c.bm_mt_add_entry(
        "t",
        &[BmMatchParam::Exact {
            key: vec![0xaa, 0xbb],
        }],
        "a",
        &[vec![7]],
        BmAddEntryOptions { priority: Some(5) },
    );
    assert_eq!(
        r.unwrap_err().bmv2,
        Some(Bmv2Code::Table(TableOperationErrorCode::DUPLICATE_ENTRY))
    );
    assert_eq!(t.join().unwrap(), golden_add_entry_call());

    let void_reply = cat(&[&header(2, "mirroring_session_add", 1), &[0x00]]);
    let (port, t) = fake_switch(golden_mirroring_add_call(), void_reply);
    let mut c = ThriftClient::connect(("127.0.0.1", port)).unwrap();
    let cfg = MirroringSessionConfig {
        port: Some(2),
        mgid: None,
    };
    assert_eq!(c.mirroring_session_add(3, cfg), Ok(()));
    assert_eq!(t.join().unwrap(), golden_mirroring_add_call());
}

#[test]
fn server_answers_golden_bytes() {
    // The golden calls' program: table `t` (exact, 16 bits), action `a` (8 bits),
    // with the entry aa:bb → a(7) already there.
    let mut j: serde_json::Value = serde_json::from_str(&common::corpus_json("basic_l2")).unwrap();
    j["pipelines"][0]["init_table"] = "t".into();
    let t = &mut j["pipelines"][0]["tables"][0];
    t["name"] = "t".into();
    t["key"][0]["target"] = serde_json::json!(["ethernet", "ether_type"]);
    t["actions"][0] = "a".into();
    t["next_tables"] = serde_json::json!({"a": null, "IngressImpl.drop": null});
    let a = &mut j["actions"][0];
    a["name"] = "a".into();
    a["runtime_data"][0]["bitwidth"] = 8.into();
    let mut rt = p4jet_runtime::testing::Recorder::new(common::switch_for(&j.to_string()));
    p4jet_thrift::Bmv2::new(rt.inner())
        .bm_mt_add_entry(
            "t",
            &[BmMatchParam::Exact {
                key: vec![0xaa, 0xbb],
            }],
            "a",
            &[vec![7]],
            BmAddEntryOptions::default(),
        )
        .unwrap();
    let (typed, api) = common::shared(rt);
    let server = common::start(api);
    let mut s = std::net::TcpStream::connect(server.local_addr()).unwrap();
    let exchange = |s: &mut std::net::TcpStream, call: &[u8], reply: &[u8]| {
        s.write_all(call).unwrap();
        let mut got = vec![0u8; reply.len()];
        s.read_exact(&mut got).unwrap();
        assert_eq!(got, reply);
    };
    exchange(
        &mut s,
        &golden_get_num_entries_call(),
        &golden_get_num_entries_reply(1),
    );
    exchange(
        &mut s,
        &golden_add_entry_call(),
        &golden_add_entry_duplicate_reply(),
    );
    exchange(
        &mut s,
        &golden_mirroring_add_call(),
        &cat(&[&header(2, "mirroring_session_add", 1), &[0x00]]),
    );
    // Unknown method: TApplicationException UNKNOWN_METHOD, connection kept.
    let msg = "Invalid method name: 'bm_frobnicate'";
    exchange(
        &mut s,
        &cat(&[&header(1, "standard:bm_frobnicate", 4), &[0x00]]),
        &cat(&[
            &header(3, "bm_frobnicate", 4),
            &[0x0b, 0x00, 0x01],
            &(msg.len() as u32).to_be_bytes(),
            msg.as_bytes(),
            &[0x08, 0x00, 0x02, 0, 0, 0, 1],
            &[0x00],
        ]),
    );
    exchange(
        &mut s,
        &golden_get_num_entries_call(),
        &golden_get_num_entries_reply(1),
    );
    drop(s);
    // What reached the runtime (not the unknown method).
    let calls = typed.lock().unwrap().take();
    let names: Vec<&str> = calls
        .iter()
        .map(|c| match c {
            Call::Other(s) => s.split('(').next().unwrap(),
            Call::Write(u, _) => match u[..] {
                [p4jet_runtime::Update::AddEntry { .. }] => "add_entry",
                _ => "write",
            },
            Call::SetPipeline(_) => "set_pipeline",
        })
        .collect();
    assert_eq!(
        names,
        ["entry_count", "add_entry", "write", "entry_count"],
        "{calls:?}"
    );
    server.stop().unwrap();
}
