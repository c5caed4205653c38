//! Our client against our server, over loopback TCP, with the recording
//! mock behind the server.
//!
//! Differential: every `RuntimeApi` method is called twice with the same
//! arguments, once on a local mock and once through client → wire → server
//! → remote mock. Results (values and exceptions) and the calls the mocks
//! recorded must be identical, so arguments and replies survive the wire
//! exactly. The pass runs once normally and once with every RPC failing
//! with its declared exception.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Fail, MockApi, shared, start};
use p4jet_control::api::*;
use p4jet_thrift::codec::METHODS;
use p4jet_thrift::protocol::*;
use p4jet_thrift::{PreService, ServerHandle, ThriftClient};

struct Env {
    local: MockApi,
    remote: Arc<Mutex<MockApi>>,
    client: ThriftClient,
    seen: BTreeSet<&'static str>,
    _server: ServerHandle,
}

fn env() -> Env {
    let (remote, api) = shared(MockApi::new());
    let server = start(api);
    let client = ThriftClient::connect(server.local_addr()).unwrap();
    Env {
        local: MockApi::new(),
        remote,
        client,
        seen: BTreeSet::new(),
        _server: server,
    }
}

/// Calls `$m` on both sides, compares, and returns the result.
macro_rules! same_r {
    ($e:ident, $m:ident($($a:expr),* $(,)?)) => {{
        let want = $e.local.$m($($a),*);
        let got = $e.client.$m($($a),*);
        assert_eq!(got, want, "result of {}", stringify!($m));
        let lc = $e.local.take();
        let rc = $e.remote.lock().unwrap().take();
        assert_eq!(rc, lc, "calls recorded for {}", stringify!($m));
        assert_eq!(rc.len(), 1, "{}", stringify!($m));
        $e.seen.insert(stringify!($m));
        got
    }};
}

macro_rules! same {
    ($($t:tt)*) => {
        let _ = same_r!($($t)*);
    };
}

fn key() -> Vec<BmMatchParam> {
    vec![
        BmMatchParam::Exact { key: vec![0, 1] },
        BmMatchParam::Lpm {
            key: vec![10, 1, 2, 0],
            prefix_length: 24,
        },
        BmMatchParam::Ternary {
            key: vec![0xab, 0xcd],
            mask: vec![0xff, 0x00],
        },
        BmMatchParam::Valid { key: true },
        BmMatchParam::Range {
            start: vec![0x00, 0x10],
            end: vec![0x00, 0x20],
        },
    ]
}

#[allow(clippy::too_many_lines)]
fn exercise_all(e: &mut Env) {
    let key = key();
    let exact = vec![BmMatchParam::Exact { key: vec![7; 6] }];
    let data = vec![vec![1, 2], vec![], vec![0xff; 20]];
    let opts = BmAddEntryOptions { priority: Some(3) };
    let none = BmAddEntryOptions::default();
    let rates = vec![
        BmMeterRateConfig {
            units_per_micros: 0.000_125,
            burst_size: 1000,
        },
        BmMeterRateConfig {
            units_per_micros: 2.5,
            burst_size: u32::MAX,
        },
    ];
    let cv = BmCounterValue {
        bytes: u64::MAX,
        packets: 3,
    };

    // Direct tables.
    same!(e, bm_mt_add_entry("t", &key, "a", &data, opts));
    same!(e, bm_mt_add_entry("t", &exact, "a", &data, none));
    same!(e, bm_mt_add_entry("t", &exact, "a", &data, none));
    same!(e, bm_mt_get_num_entries("t"));
    same!(e, bm_mt_set_default_action("t", "d", &data));
    same!(e, bm_mt_get_default_entry("t"));
    same!(e, bm_mt_get_default_entry("empty"));
    same!(e, bm_mt_modify_entry("t", 0, "b", &[]));
    same!(e, bm_mt_set_entry_ttl("t", 0, 500));
    same!(e, bm_mt_get_entries("t"));
    same!(e, bm_mt_get_entry("t", 0));
    same!(e, bm_mt_get_entry("t", 1000));
    same!(e, bm_mt_get_entry("t", 77));
    same!(e, bm_mt_get_entry_from_key("t", &key, opts));
    same!(e, bm_mt_get_entry_from_key("t", &[], none));
    same!(e, bm_mt_read_counter("t", 0));
    same!(e, bm_mt_write_counter("t", 0, cv));
    same!(e, bm_mt_read_counter("t", 0));
    same!(e, bm_mt_reset_counters("t"));
    same!(e, bm_mt_set_meter_rates("t", 0, &rates));
    same!(e, bm_mt_get_meter_rates("t", 0));
    same!(e, bm_mt_delete_entry("t", 0));
    same!(e, bm_mt_delete_entry("t", 99));
    same!(e, bm_mt_reset_default_entry("t"));
    same!(e, bm_mt_clear_entries("t", true));
    same!(e, bm_mt_clear_entries("t", false));

    // Action profiles and indirect tables.
    same!(e, bm_mt_act_prof_add_member("ap", "a", &data));
    same!(e, bm_mt_act_prof_modify_member("ap", 0, "b", &data[..1]));
    same!(e, bm_mt_act_prof_get_member("ap", 0));
    same!(e, bm_mt_act_prof_get_member("ap", 55));
    same!(e, bm_mt_act_prof_get_members("ap"));
    same!(e, bm_mt_act_prof_create_group("ap"));
    same!(e, bm_mt_act_prof_add_member_to_group("ap", 0, 1));
    same!(e, bm_mt_act_prof_get_group("ap", 1));
    same!(e, bm_mt_act_prof_get_groups("ap"));
    same!(e, bm_mt_act_prof_remove_member_from_group("ap", 0, 1));
    same!(e, bm_mt_indirect_add_entry("it", &key, 0, opts));
    same!(e, bm_mt_indirect_modify_entry("it", 2, 1));
    same!(e, bm_mt_indirect_set_entry_ttl("it", 2, 1));
    same!(e, bm_mt_indirect_set_default_member("it", 0));
    same!(e, bm_mt_indirect_reset_default_entry("it"));
    same!(e, bm_mt_indirect_delete_entry("it", 2));
    same!(e, bm_mt_indirect_ws_add_entry("wt", &exact, 1, none));
    same!(e, bm_mt_indirect_ws_modify_entry("wt", 3, 1));
    same!(e, bm_mt_indirect_ws_set_default_group("wt", 1));
    same!(e, bm_mt_get_entries("wt"));
    same!(e, bm_mt_get_default_entry("wt"));
    same!(e, bm_mt_act_prof_delete_group("ap", 1));
    same!(e, bm_mt_act_prof_delete_member("ap", 0));

    // Counter arrays.
    same!(e, bm_counter_write("c", 2, cv));
    same!(e, bm_counter_read("c", 2));
    same!(e, bm_counter_read("c", -1));
    same!(e, bm_counter_reset_all("c"));

    // Learning.
    same!(e, bm_learning_ack(1, i64::MAX, &[1, 2, 3]));
    same!(e, bm_learning_ack(1, 0, &[]));
    same!(e, bm_learning_ack_buffer(1, -5));
    same!(e, bm_learning_set_timeout(1, 100));
    same!(e, bm_learning_set_buffer_size(1, 16));
    same!(e, p4jet_learning_dump("learn_digest_t", 3));
    same!(e, p4jet_learning_dump("", 0));

    // Config swap.
    same!(e, bm_load_new_config("{\"program\": \"é\"}"));
    same!(e, bm_swap_configs());

    // Meter arrays.
    same!(e, bm_meter_array_set_rates("m", &rates));
    same!(e, bm_meter_set_rates("m", 1, &rates));
    same!(e, bm_meter_get_rates("m", 1));
    same!(e, bm_meter_get_rates("m", 2));

    // Registers.
    same!(e, bm_register_write("r", 1, -7));
    same!(e, bm_register_read("r", 1));
    same!(e, bm_register_read("r", 99));
    same!(e, bm_register_read_all("r"));
    same!(e, bm_register_write_range("r", 0, 3, i64::MIN));
    same!(e, bm_register_reset("r"));

    // Parser value sets.
    same!(e, bm_parse_vset_add("p", &[1, 2]));
    same!(e, bm_parse_vset_add("p", &[]));
    same!(e, bm_parse_vset_remove("p", &[3]));
    same!(e, bm_parse_vset_get("p"));
    same!(e, bm_parse_vset_clear("p"));

    // Device manager and management.
    same!(e, bm_dev_mgr_add_port("veth0", 3, ""));
    same!(e, bm_dev_mgr_remove_port(3));
    same!(e, bm_dev_mgr_show_ports());
    same!(e, bm_mgmt_get_info());
    let c16 = BmCrc16Config {
        polynomial: 0x8005,
        initial_remainder: 0xffff,
        final_xor_value: 0x1234,
        data_reflected: true,
        remainder_reflected: false,
    };
    same!(e, bm_set_crc16_custom_parameters("calc16", c16));
    let c32 = BmCrc32Config {
        polynomial: 0x04c1_1db7,
        initial_remainder: 0xffff_ffff,
        final_xor_value: 0x8000_0000,
        data_reflected: false,
        remainder_reflected: true,
    };
    same!(e, bm_set_crc32_custom_parameters("calc32", c32));
    same!(e, bm_set_toeplitz_hash_key("tz", &[0x6d; 40]));
    same!(e, bm_reset_state());
    same!(e, bm_get_config());
    same!(e, bm_get_config_md5());
    for ty in BmResourceType::ALL {
        same!(e, bm_get_id_from_name(*ty, "IngressImpl.x"));
    }
    same!(e, bm_serialize_state());

    // PRE.
    same!(e, bm_mc_mgrp_create(1));
    same!(e, bm_mc_mgrp_create(1));
    same!(e, bm_mc_node_create(5, "1010", "1"));
    same!(e, bm_mc_node_associate(1, 0));
    same!(e, bm_mc_node_associate(1, 9));
    same!(e, bm_mc_node_dissociate(1, 0));
    same!(e, bm_mc_node_update(0, "1", ""));
    same!(e, bm_mc_set_lag_membership(i16::MAX, "11"));
    same!(e, bm_mc_get_entries());
    same!(e, bm_mc_node_destroy(0));
    same!(e, bm_mc_mgrp_destroy(1));
    same!(e, bm_mc_mgrp_destroy(1));

    // simple_switch.
    let to_port = MirroringSessionConfig {
        port: Some(4),
        mgid: None,
    };
    let to_mgid = MirroringSessionConfig {
        port: None,
        mgid: Some(9),
    };
    same!(e, mirroring_session_add(1, to_port));
    same!(e, mirroring_session_add(2, to_mgid));
    same!(e, mirroring_session_get(1));
    same!(e, mirroring_session_get(2));
    same!(e, mirroring_session_get(3));
    same!(e, mirroring_session_delete(1));
    same!(e, mirroring_session_delete(1));
    same!(e, mirroring_mapping_add(5, 3));
    same!(e, mirroring_mapping_delete(5));
    same!(e, mirroring_mapping_get_egress_port(5));
    same!(e, set_egress_queue_depth(1, 64));
    same!(e, set_egress_priority_queue_depth(1, 7, 32));
    same!(e, set_all_egress_queue_depths(100));
    same!(e, set_egress_queue_rate(1, 1000));
    same!(e, set_egress_priority_queue_rate(1, 2, i64::MAX));
    same!(e, set_all_egress_queue_rates(5));
    same!(e, get_time_elapsed_us());
    same!(e, get_time_since_epoch_us());
}

fn all_method_names() -> BTreeSet<&'static str> {
    METHODS.iter().map(|m| m.name).collect()
}

#[test]
fn every_method_round_trips() {
    let mut e = env();
    exercise_all(&mut e);
    // Every RPC of the IDL was exercised, and nothing else.
    assert_eq!(e.seen, all_method_names());
    assert_eq!(e.seen.len(), 94);
}

#[test]
fn every_method_carries_its_declared_exception() {
    let mut e = env();
    e.local.fail_all = Some(Fail::Code(2));
    e.remote.lock().unwrap().fail_all = Some(Fail::Code(2));
    exercise_all(&mut e);
    // Spot-check that these really were exceptions with the IDL's codes.
    let r = same_r!(
        e,
        bm_mt_add_entry("t", &key(), "a", &[], BmAddEntryOptions::default())
    );
    assert_eq!(
        r,
        Err(ApiError::Exception(InvalidTableOperation::new(
            TableOperationErrorCode::INVALID_HANDLE
        )))
    );
    let r = same_r!(e, bm_dev_mgr_remove_port(1));
    assert_eq!(
        r,
        Err(ApiError::Exception(InvalidDevMgrOperation::new(
            DevMgrErrorCode::ERROR
        )))
    );
    let r = same_r!(e, mirroring_session_get(1));
    assert_eq!(
        r,
        Err(ApiError::Exception(InvalidMirroringOperation::new(
            MirroringOperationErrorCode::SESSION_NOT_FOUND
        )))
    );
}

/// Every code of every exception enum, on one RPC that declares it.
#[test]
fn every_exception_code_arrives() {
    let mut e = env();
    macro_rules! all_codes {
        ($code:ident, $m:ident($($a:expr),*)) => {
            for c in $code::ALL {
                e.local.fail(stringify!($m), Fail::Code(c.code()));
                e.remote.lock().unwrap().fail(stringify!($m), Fail::Code(c.code()));
                let r = same_r!(e, $m($($a),*));
                match r {
                    Err(ApiError::Exception(x)) => assert_eq!(x.code, *c),
                    other => panic!("{}: {other:?}", stringify!($m)),
                }
            }
        };
    }
    all_codes!(TableOperationErrorCode, bm_mt_get_num_entries("t"));
    all_codes!(CounterOperationErrorCode, bm_counter_reset_all("c"));
    all_codes!(SwapOperationErrorCode, bm_swap_configs());
    all_codes!(MeterOperationErrorCode, bm_meter_get_rates("m", 0));
    all_codes!(RegisterOperationErrorCode, bm_register_read("r", 0));
    all_codes!(ParseVSetOperationErrorCode, bm_parse_vset_clear("p"));
    all_codes!(LearnOperationErrorCode, bm_learning_set_timeout(1, 1));
    all_codes!(DevMgrErrorCode, bm_dev_mgr_show_ports());
    all_codes!(
        CrcErrorCode,
        bm_set_crc32_custom_parameters("c", BmCrc32Config::default())
    );
    all_codes!(ToeplitzHashErrorCode, bm_set_toeplitz_hash_key("c", &[]));
    all_codes!(
        IdLookupErrorCode,
        bm_get_id_from_name(BmResourceType::COUNTER, "c")
    );
    all_codes!(McOperationErrorCode, bm_mc_get_entries());
    all_codes!(MirroringOperationErrorCode, mirroring_session_delete(0));
}

#[test]
fn internal_errors_and_panics_become_application_exceptions() {
    let mut e = env();
    e.remote
        .lock()
        .unwrap()
        .fail("bm_get_config", Fail::Internal);
    match e.client.bm_get_config() {
        Err(ApiError::Internal(m)) => {
            assert!(m.contains("TApplicationException(INTERNAL_ERROR)"), "{m}");
            assert!(m.contains("mock failure in bm_get_config"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    e.remote
        .lock()
        .unwrap()
        .fail("bm_mt_get_num_entries", Fail::Panic);
    match e.client.bm_mt_get_num_entries("t") {
        Err(ApiError::Internal(m)) => assert!(m.contains("INTERNAL_ERROR"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Same connection, and a new one, still work (the mutex poisoned by the
    // panic is recovered).
    assert_eq!(e.client.get_time_elapsed_us(), Ok(123_456_789));
    let mut c2 = ThriftClient::connect(e.client.peer_addr()).unwrap();
    assert_eq!(c2.mirroring_mapping_get_egress_port(1), Ok(-1));
}

#[test]
fn simple_pre_service() {
    let mut e = env();
    e.client.set_pre_service(PreService::SimplePre);
    assert_eq!(e.client.bm_mc_mgrp_create(3), Ok(3));
    assert_eq!(e.client.bm_mc_node_create(1, "11", ""), Ok(0));
    assert_eq!(e.client.bm_mc_node_update(0, "1", ""), Ok(()));
    assert!(matches!(
        e.client.bm_mc_node_create(1, "11", "1"),
        Err(ApiError::Internal(_))
    ));
    assert!(matches!(
        e.client.bm_mc_set_lag_membership(1, "1"),
        Err(ApiError::Internal(_))
    ));
    assert_eq!(
        e.remote.lock().unwrap().take(),
        vec![
            "bm_mc_mgrp_create(3)",
            r#"bm_mc_node_create(1, "11", "")"#,
            r#"bm_mc_node_update(0, "1", "")"#,
        ]
    );
}

// ---------------------------------------------------------------------------
// Raw wire behaviour

fn raw_call(s: &mut TcpStream, name: &str, kind: MessageType, body: &Struct) {
    s.write_all(&encode_message(name, kind, 42, body)).unwrap();
}

fn raw_reply(s: &mut TcpStream) -> (MessageHeader, Struct) {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut d = Decoder::new(s, Limits::default());
    let h = d.read_message_begin().unwrap().expect("a reply");
    let b = d.read_struct().unwrap();
    (h, b)
}

fn app_exception(body: &Struct) -> ApplicationException {
    ApplicationException::from_struct(body)
}

#[test]
fn wire_edge_cases() {
    let (mock, api) = shared(MockApi::new());
    let server = start(api);
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    let cxt = |c: i32| {
        Struct::new()
            .with(1, Value::I32(c))
            .with(2, Value::string("t"))
    };

    // Un-prefixed names resolve (standard first); the reply is named bare.
    raw_call(&mut s, "bm_mt_get_num_entries", MessageType::Call, &cxt(0));
    let (h, b) = raw_reply(&mut s);
    assert_eq!(
        (h.name.as_str(), h.kind, h.seqid),
        ("bm_mt_get_num_entries", MessageType::Reply, 42)
    );
    assert_eq!(b.get(0), Some(&Value::I64(0)));

    // cxt_id other than 0: invalid name for the resource, API not called.
    raw_call(
        &mut s,
        "standard:bm_mt_get_num_entries",
        MessageType::Call,
        &cxt(1),
    );
    let (_, b) = raw_reply(&mut s);
    let code = b
        .get(1)
        .and_then(Value::as_struct)
        .and_then(|x| x.get(1))
        .cloned();
    assert_eq!(
        code,
        Some(Value::I32(
            TableOperationErrorCode::INVALID_TABLE_NAME.code()
        ))
    );

    // Unknown service and a method of another service.
    raw_call(
        &mut s,
        "nosuch:bm_get_config",
        MessageType::Call,
        &Struct::new(),
    );
    let (h, b) = raw_reply(&mut s);
    assert_eq!(h.kind, MessageType::Exception);
    assert_eq!(app_exception(&b).kind, app_error::UNKNOWN_METHOD);
    raw_call(
        &mut s,
        "simple_pre:bm_mc_set_lag_membership",
        MessageType::Call,
        &Struct::new(),
    );
    let (_, b) = raw_reply(&mut s);
    assert_eq!(app_exception(&b).kind, app_error::UNKNOWN_METHOD);
    raw_call(
        &mut s,
        "simple_switch:bm_get_config",
        MessageType::Call,
        &Struct::new(),
    );
    let (_, b) = raw_reply(&mut s);
    assert_eq!(app_exception(&b).kind, app_error::UNKNOWN_METHOD);

    // A reply sent to the server is not a call.
    raw_call(
        &mut s,
        "standard:bm_get_config",
        MessageType::Reply,
        &Struct::new(),
    );
    let (h, b) = raw_reply(&mut s);
    assert_eq!(h.kind, MessageType::Exception);
    assert_eq!(app_exception(&b).kind, app_error::INVALID_MESSAGE_TYPE);

    // Oneway: executed, no reply; the next call's reply comes next.
    raw_call(
        &mut s,
        "standard:bm_reset_state",
        MessageType::Oneway,
        &Struct::new(),
    );
    raw_call(
        &mut s,
        "simple_switch:get_time_elapsed_us",
        MessageType::Call,
        &Struct::new(),
    );
    let (h, b) = raw_reply(&mut s);
    assert_eq!(h.name, "get_time_elapsed_us");
    assert_eq!(b.get(0), Some(&Value::I64(123_456_789)));

    // Mistyped and missing arguments read as defaults (generated-code rule).
    let bad = Struct::new()
        .with(1, Value::I32(0))
        .with(2, Value::I64(5))
        .with(9, Value::string("ignored"));
    raw_call(
        &mut s,
        "standard:bm_register_reset",
        MessageType::Call,
        &bad,
    );
    let (h, _) = raw_reply(&mut s);
    assert_eq!(h.kind, MessageType::Reply);

    // A match param with an unknown type tag: BAD_MATCH_KEY, API not called.
    let bad_key = Struct::new()
        .with(1, Value::I32(0))
        .with(2, Value::string("t"))
        .with(
            3,
            Value::list(
                TType::Struct,
                vec![Value::Struct(Struct::new().with(1, Value::I32(9)))],
            ),
        );
    raw_call(
        &mut s,
        "standard:bm_mt_add_entry",
        MessageType::Call,
        &bad_key,
    );
    let (_, b) = raw_reply(&mut s);
    let code = b
        .get(1)
        .and_then(Value::as_struct)
        .and_then(|x| x.get(1))
        .cloned();
    assert_eq!(
        code,
        Some(Value::I32(TableOperationErrorCode::BAD_MATCH_KEY.code()))
    );

    // An unknown resource type for an id lookup: INVALID_RESOURCE_TYPE.
    let lookup = Struct::new()
        .with(1, Value::I32(0))
        .with(2, Value::I32(77))
        .with(3, Value::string("x"));
    raw_call(
        &mut s,
        "standard:bm_get_id_from_name",
        MessageType::Call,
        &lookup,
    );
    let (_, b) = raw_reply(&mut s);
    let code = b
        .get(1)
        .and_then(Value::as_struct)
        .and_then(|x| x.get(1))
        .cloned();
    assert_eq!(
        code,
        Some(Value::I32(IdLookupErrorCode::INVALID_RESOURCE_TYPE.code()))
    );

    // Unset priority in an entry is sent as -1 (the stock CLI needs it).
    mock.lock().unwrap().entries.insert(
        "t".into(),
        vec![BmMtEntry {
            match_key: vec![],
            options: BmAddEntryOptions::default(),
            entry_handle: 0,
            action_entry: BmActionEntry::None,
            life: None,
        }],
    );
    let get = Struct::new()
        .with(1, Value::I32(0))
        .with(2, Value::string("t"))
        .with(3, Value::I32(0));
    raw_call(&mut s, "standard:bm_mt_get_entry", MessageType::Call, &get);
    let (_, b) = raw_reply(&mut s);
    let prio = b
        .get(0)
        .and_then(Value::as_struct)
        .and_then(|e| e.get(2))
        .and_then(Value::as_struct)
        .and_then(|o| o.get(1))
        .cloned();
    assert_eq!(prio, Some(Value::I32(-1)));

    assert_eq!(
        mock.lock().unwrap().take(),
        vec![
            r#"bm_mt_get_num_entries("t")"#,
            "bm_reset_state()",
            "get_time_elapsed_us()",
            r#"bm_register_reset("")"#,
            r#"bm_mt_get_entry("t", 0)"#,
        ]
    );
    server.stop().unwrap();
}

#[test]
fn concurrent_clients() {
    let (mock, api) = shared(MockApi::new());
    let server = start(api);
    let addr = server.local_addr();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = ThriftClient::connect(addr).unwrap();
                for i in 0..100 {
                    let name = format!("r{t}");
                    c.bm_register_write(&name, i % 16, i64::from(i)).unwrap();
                    assert_eq!(c.bm_register_read(&name, i % 16), Ok(i64::from(i)));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(mock.lock().unwrap().take().len(), 800);
    server.stop().unwrap();
}

#[test]
fn shutdown_ends_idle_connections_and_client_reconnects() {
    let (_mock, api) = shared(MockApi::new());
    let server = start(api);
    let addr = server.local_addr();
    let mut c = ThriftClient::connect(addr).unwrap();
    assert_eq!(c.get_time_elapsed_us(), Ok(123_456_789));
    let t0 = Instant::now();
    server.stop().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "stop took {:?}",
        t0.elapsed()
    );
    assert!(matches!(
        c.get_time_elapsed_us(),
        Err(ApiError::Internal(_))
    ));

    // A new server on the same port: the client reconnects by itself.
    let (_mock2, api2) = shared(MockApi::new());
    let listener = std::net::TcpListener::bind(addr).unwrap();
    let server2 = ServerHandle::spawn(listener, api2, Default::default()).unwrap();
    assert_eq!(c.get_time_since_epoch_us(), Ok(1_700_000_000_000_000));
    server2.stop().unwrap();
}

#[test]
fn connection_limit() {
    let (_mock, api) = shared(MockApi::new());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let config = p4jet_thrift::ServerConfig {
        max_connections: 1,
        poll_interval: Duration::from_millis(20),
        ..Default::default()
    };
    let server = ServerHandle::spawn(listener, api, config).unwrap();
    let mut c1 = ThriftClient::connect(server.local_addr()).unwrap();
    assert!(c1.get_time_elapsed_us().is_ok());
    // The second connection is accepted and closed at once.
    let mut s2 = TcpStream::connect(server.local_addr()).unwrap();
    s2.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 1];
    assert!(matches!(s2.read(&mut buf), Ok(0) | Err(_)));
    // The first still works.
    assert!(c1.get_time_elapsed_us().is_ok());
    server.stop().unwrap();
}
