//! Our client against our server, over loopback TCP, with a recorded switch in
//! memory behind the server.
//!
//! Differential: every RPC is called twice with the same arguments, once on the bmv2
//! adapter over a local switch ([`Bmv2`]) and once through client → wire → server →
//! adapter → remote switch, both switches running the same program. Results (values
//! and exception codes) and the model operations the two recorders saw must be
//! identical, so arguments and replies survive the wire exactly. The pass runs once
//! normally and once with every model operation failing with a code of the RPC's
//! declared exception.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{CLOCK_US, Rt, recorded, shared, start};
use p4jet_runtime::bmv2::*;
use p4jet_runtime::testing::Call;
use p4jet_runtime::{ErrorKind, RuntimeError};
use p4jet_thrift::codec::METHODS;
use p4jet_thrift::protocol::*;
use p4jet_thrift::service::code_of;
use p4jet_thrift::types::*;
use p4jet_thrift::{Bmv2, PreService, ServerHandle, ThriftClient};

struct Env {
    local: Rt,
    remote: Arc<Mutex<Rt>>,
    client: ThriftClient,
    seen: BTreeSet<&'static str>,
    /// Fail every model operation with this code of each RPC's exception.
    fail_code: Option<i32>,
    _server: ServerHandle,
}

fn env(program: &str) -> Env {
    let (remote, api) = shared(recorded(program));
    let server = start(api);
    let client = ThriftClient::connect(server.local_addr()).unwrap();
    Env {
        local: recorded(program),
        remote,
        client,
        seen: BTreeSet::new(),
        fail_code: None,
        _server: server,
    }
}

impl Env {
    /// Both switches start over with `program`.
    fn load(&mut self, program: &str) {
        self.local = recorded(program);
        *self.remote.lock().unwrap() = recorded(program);
    }

    /// Before calling `method`: in failing mode, makes every model operation of both
    /// runtimes fail with `fail_code` as the RPC's declared exception (an error
    /// without code for an RPC that declares none).
    fn arm(&mut self, method: &str) {
        let Some(code) = self.fail_code else {
            return;
        };
        let spec = METHODS.iter().find(|m| m.name == method).unwrap();
        // (a code the exception does not have: its last one)
        let code = spec
            .exception
            .and_then(|x| code_of(x, code).or_else(|| (1..64).rev().find_map(|c| code_of(x, c))));
        let error = match code {
            Some(c) => c.error("injected"),
            None => RuntimeError::internal("injected"),
        };
        for rt in [&mut self.local, &mut *self.remote.lock().unwrap()] {
            rt.clear_failures();
            rt.fail_when(|_| true, error.clone());
        }
    }
}

/// What a caller can tell apart: the value, or the exception code (None: an
/// application exception, or an error without code).
fn seen_as<T>(r: &Result<T, RuntimeError>) -> Result<&T, Option<Bmv2Code>> {
    r.as_ref().map_err(|e| e.bmv2)
}

/// Calls `$m` on both sides, compares, and returns the remote result.
macro_rules! same_r {
    ($e:ident, $m:ident($($a:expr),* $(,)?)) => {{
        $e.arm(stringify!($m));
        let want = Bmv2::new(&mut $e.local).$m($($a),*);
        let got = $e.client.$m($($a),*);
        assert_eq!(seen_as(&got), seen_as(&want), "result of {}", stringify!($m));
        let lc = $e.local.take();
        let rc = $e.remote.lock().unwrap().take();
        assert_eq!(rc, lc, "model operations made by {}", stringify!($m));
        $e.seen.insert(stringify!($m));
        got
    }};
}

macro_rules! same {
    ($($t:tt)*) => {
        let _ = same_r!($($t)*);
    };
}

/// An `Ok` result (outside failing mode).
macro_rules! same_ok {
    ($e:ident, $($t:tt)*) => {{
        let r = same_r!($e, $($t)*);
        if $e.fail_code.is_none() {
            assert!(r.is_ok(), "{}: {r:?}", stringify!($($t)*));
        }
    }};
}

fn ex(v: &[u8]) -> BmMatchParam {
    BmMatchParam::Exact { key: v.to_vec() }
}

#[allow(clippy::too_many_lines)]
fn exercise_all(e: &mut Env) {
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

    // ---- p4rt_switch: every match kind, a selector, counters, a meter array, a
    // register, a digest, a value set.
    e.load("p4rt_switch");
    let acl = "IngressImpl.acl";
    let dmac = "IngressImpl.dmac";
    let smac = "IngressImpl.smac";
    let acl_key = vec![
        BmMatchParam::Ternary {
            key: vec![10, 0, 0, 0],
            mask: vec![255, 0, 0, 0],
        },
        BmMatchParam::Range {
            start: vec![0x00, 0x10],
            end: vec![0x00, 0x20],
        },
        BmMatchParam::Ternary {
            key: vec![6],
            mask: vec![0xff],
        },
    ];
    let mac_key = vec![ex(&[0, 0, 0, 0, 0, 7])];
    let port = vec![vec![0, 3]];

    // Direct tables.
    same_ok!(
        e,
        bm_mt_add_entry(acl, &acl_key, "IngressImpl.acl_drop", &[], opts)
    );
    same_ok!(
        e,
        bm_mt_add_entry(dmac, &mac_key, "IngressImpl.forward", &port, none)
    );
    same!(
        e,
        bm_mt_add_entry(dmac, &mac_key, "IngressImpl.forward", &port, none)
    );
    same!(
        e,
        bm_mt_add_entry(dmac, &mac_key, "IngressImpl.forward", &[], none)
    );
    same!(
        e,
        bm_mt_add_entry("nope", &mac_key, "IngressImpl.forward", &port, none)
    );
    same_ok!(e, bm_mt_get_num_entries(dmac));
    same_ok!(e, bm_mt_set_default_action(dmac, "IngressImpl.flood", &[]));
    same_ok!(e, bm_mt_get_default_entry(dmac));
    same_ok!(e, bm_mt_get_default_entry(acl));
    same_ok!(e, bm_mt_modify_entry(dmac, 0, "IngressImpl.to_cpu", &[]));
    same_ok!(
        e,
        bm_mt_add_entry(smac, &mac_key, "IngressImpl.learn", &[], none)
    );
    same_ok!(e, bm_mt_set_entry_ttl(smac, 0, 500));
    same!(e, bm_mt_set_entry_ttl(dmac, 0, 500));
    same_ok!(e, bm_mt_get_entries(smac));
    same_ok!(e, bm_mt_get_entries(acl));
    same_ok!(e, bm_mt_get_entry(dmac, 0));
    same!(e, bm_mt_get_entry(dmac, 1000));
    same_ok!(e, bm_mt_get_entry_from_key(acl, &acl_key, opts));
    same!(e, bm_mt_get_entry_from_key(dmac, &[], none));
    same_ok!(e, bm_mt_read_counter(acl, 0));
    same_ok!(e, bm_mt_write_counter(acl, 0, cv));
    same_ok!(e, bm_mt_read_counter(acl, 0));
    same_ok!(e, bm_mt_reset_counters(acl));
    same!(e, bm_mt_read_counter(dmac, 0));
    same!(e, bm_mt_set_meter_rates(acl, 0, &rates));
    same!(e, bm_mt_get_meter_rates(acl, 0));
    same_ok!(e, bm_mt_delete_entry(dmac, 0));
    same!(e, bm_mt_delete_entry(dmac, 99));
    same_ok!(e, bm_mt_reset_default_entry(dmac));
    same_ok!(e, bm_mt_clear_entries(acl, true));
    same_ok!(e, bm_mt_clear_entries(smac, false));

    // An action selector and its table.
    let sel = "IngressImpl.route_selector";
    let route = "IngressImpl.route";
    let nhop = vec![vec![0, 1], vec![0, 0, 0, 0, 0, 9]];
    let route_key = |len: i32| {
        vec![BmMatchParam::Lpm {
            key: vec![10, 1, 2, 0],
            prefix_length: len,
        }]
    };
    same_ok!(
        e,
        bm_mt_act_prof_add_member(sel, "IngressImpl.set_nhop", &nhop)
    );
    same!(
        e,
        bm_mt_act_prof_add_member(sel, "IngressImpl.set_nhop", &nhop[..1])
    );
    same_ok!(
        e,
        bm_mt_act_prof_modify_member(sel, 0, "IngressImpl.set_nhop", &[vec![0, 2], vec![0; 6]])
    );
    same_ok!(e, bm_mt_act_prof_get_member(sel, 0));
    same!(e, bm_mt_act_prof_get_member(sel, 55));
    same_ok!(e, bm_mt_act_prof_get_members(sel));
    same_ok!(e, bm_mt_act_prof_create_group(sel));
    same_ok!(e, bm_mt_act_prof_add_member_to_group(sel, 0, 0));
    same!(e, bm_mt_act_prof_add_member_to_group(sel, 0, 0));
    same_ok!(e, bm_mt_act_prof_get_group(sel, 0));
    same_ok!(e, bm_mt_act_prof_get_groups(sel));
    same_ok!(e, bm_mt_indirect_add_entry(route, &route_key(24), 0, none));
    same_ok!(
        e,
        bm_mt_indirect_ws_add_entry(route, &route_key(16), 0, none)
    );
    same_ok!(e, bm_mt_indirect_ws_modify_entry(route, 1, 0));
    same_ok!(e, bm_mt_indirect_modify_entry(route, 0, 0));
    same!(e, bm_mt_indirect_set_entry_ttl(route, 0, 1));
    same_ok!(e, bm_mt_indirect_ws_set_default_group(route, 0));
    same_ok!(e, bm_mt_get_entries(route));
    same_ok!(e, bm_mt_get_default_entry(route));
    same_ok!(e, bm_mt_indirect_delete_entry(route, 0));
    same!(e, bm_mt_indirect_delete_entry(route, 0));
    same!(e, bm_mt_act_prof_delete_group(sel, 0));
    same_ok!(e, bm_mt_indirect_delete_entry(route, 1));
    same_ok!(e, bm_mt_act_prof_remove_member_from_group(sel, 0, 0));
    same!(e, bm_mt_act_prof_delete_member(sel, 7));

    // Counter arrays.
    let pc = "IngressImpl.port_counter";
    same_ok!(e, bm_counter_write(pc, 2, cv));
    same_ok!(e, bm_counter_read(pc, 2));
    same!(e, bm_counter_read(pc, -1));
    same!(e, bm_counter_read(pc, 512));
    same_ok!(e, bm_counter_reset_all(pc));

    // Learning (learn_t is list 1).
    same!(e, bm_learning_ack(1, i64::MAX, &[1, 2, 3]));
    same!(e, bm_learning_ack(1, 0, &[]));
    same!(e, bm_learning_ack(7, 0, &[]));
    same!(e, bm_learning_ack_buffer(1, -5));
    same_ok!(e, bm_learning_set_timeout(1, 100));
    same!(e, bm_learning_set_timeout(7, 100));
    same_ok!(e, bm_learning_set_buffer_size(1, 16));
    same_ok!(e, p4jet_learning_dump("learn_t", 3));
    same_ok!(e, p4jet_learning_dump("", 0));
    same_ok!(e, p4jet_packet_books());
    // a switch in memory runs no forwarding workers: both calls fail alike
    same!(e, p4jet_workers());
    same!(e, p4jet_set_workers(2));
    same_ok!(e, p4jet_digest_log("learn_t", 3));
    same_ok!(e, p4jet_digest_log("", 0));
    same!(e, p4jet_digest_log("nope", 0));

    // Config swap.
    same!(e, bm_load_new_config("not JSON"));
    same!(e, bm_swap_configs());
    same!(e, bm_load_new_config("{\"program\": \"é\"}"));
    same!(e, bm_swap_configs());
    let json = common::corpus_json("p4rt_switch");
    same_ok!(e, bm_load_new_config(&json));
    same!(e, bm_load_new_config(&json));
    same_ok!(e, bm_swap_configs());

    // Meter arrays.
    let pm = "IngressImpl.port_meter";
    same_ok!(e, bm_meter_array_set_rates(pm, &rates));
    same_ok!(e, bm_meter_set_rates(pm, 1, &rates));
    same_ok!(e, bm_meter_get_rates(pm, 1));
    same_ok!(e, bm_meter_get_rates(pm, 2));
    same!(e, bm_meter_get_rates(pm, 512));
    same!(e, bm_meter_set_rates(pm, 1, &rates[..1]));

    // Registers.
    let reg = "IngressImpl.port_packets";
    same_ok!(e, bm_register_write(reg, 1, -7));
    same_ok!(e, bm_register_read(reg, 1));
    same!(e, bm_register_read(reg, 999));
    same_ok!(e, bm_register_read_all(reg));
    same_ok!(e, bm_register_write_range(reg, 0, 3, i64::MIN));
    same_ok!(e, bm_register_read_all(reg));
    same_ok!(e, bm_register_reset(reg));

    // Parser value sets.
    let pvs = "ParserImpl.punt_ports";
    same_ok!(e, bm_parse_vset_add(pvs, &[1, 2]));
    same!(e, bm_parse_vset_add(pvs, &[]));
    same_ok!(e, bm_parse_vset_remove(pvs, &[3, 4]));
    same_ok!(e, bm_parse_vset_get(pvs));
    same_ok!(e, bm_parse_vset_clear(pvs));

    // Device manager and management.
    same_ok!(e, bm_dev_mgr_add_port("veth0", 3, ""));
    same!(e, bm_dev_mgr_add_port("veth1", 3, ""));
    same_ok!(e, bm_dev_mgr_show_ports());
    same_ok!(e, bm_dev_mgr_remove_port(3));
    same!(e, bm_dev_mgr_remove_port(3));
    same_ok!(e, bm_mgmt_get_info());
    let c16 = BmCrc16Config {
        polynomial: 0x8005,
        initial_remainder: 0xffff,
        final_xor_value: 0x1234,
        data_reflected: true,
        remainder_reflected: false,
    };
    same!(e, bm_set_crc16_custom_parameters("calc", c16));
    let c32 = BmCrc32Config {
        polynomial: 0x04c1_1db7,
        initial_remainder: 0xffff_ffff,
        final_xor_value: 0x8000_0000,
        data_reflected: false,
        remainder_reflected: true,
    };
    same!(e, bm_set_crc32_custom_parameters("calc_0", c32));
    same!(e, bm_set_toeplitz_hash_key("calc", &[0x6d; 40]));
    same_ok!(e, bm_get_config());
    same_ok!(e, bm_get_config_md5());
    for ty in BmResourceType::ALL {
        for name in [acl, sel, pc, pm, reg, "learn_t", "IngressImpl.x"] {
            same!(e, bm_get_id_from_name(*ty, name));
        }
    }
    same_ok!(e, bm_serialize_state());
    same_ok!(e, bm_reset_state());

    // PRE.
    same_ok!(e, bm_mc_mgrp_create(1));
    same!(e, bm_mc_mgrp_create(1));
    same_ok!(e, bm_mc_node_create(5, "1010", "1"));
    same_ok!(e, bm_mc_node_associate(1, 0));
    same!(e, bm_mc_node_associate(1, 9));
    same_ok!(e, bm_mc_node_dissociate(1, 0));
    same_ok!(e, bm_mc_node_update(0, "1", ""));
    same!(e, bm_mc_set_lag_membership(i16::MAX, "11"));
    same_ok!(e, bm_mc_set_lag_membership(3, "11"));
    same_ok!(e, bm_mc_get_entries());
    same_ok!(e, bm_mc_node_destroy(0));
    same_ok!(e, bm_mc_mgrp_destroy(1));
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
    same_ok!(e, mirroring_session_add(1, to_port));
    same_ok!(e, mirroring_session_add(2, to_mgid));
    same_ok!(e, mirroring_session_get(1));
    same_ok!(e, mirroring_session_get(2));
    same!(e, mirroring_session_get(3));
    same_ok!(e, mirroring_session_delete(1));
    same!(e, mirroring_session_delete(1));
    same_ok!(e, mirroring_mapping_add(5, 3));
    same_ok!(e, mirroring_mapping_get_egress_port(5));
    same_ok!(e, mirroring_mapping_delete(5));
    same_ok!(e, mirroring_mapping_get_egress_port(5));
    same_ok!(e, set_egress_queue_depth(1, 64));
    same!(e, set_egress_priority_queue_depth(1, 7, 32));
    same_ok!(e, set_egress_priority_queue_depth(1, 0, 32));
    same_ok!(e, set_all_egress_queue_depths(100));
    same_ok!(e, set_egress_queue_rate(1, 1000));
    same!(e, set_egress_priority_queue_rate(1, 2, i64::MAX));
    same_ok!(e, set_egress_priority_queue_rate(1, 0, i64::MAX));
    same_ok!(e, set_all_egress_queue_rates(5));
    same_ok!(e, get_time_elapsed_us());
    // Wall clock: read on each side, not equal.
    e.arm("get_time_since_epoch_us");
    let local = Bmv2::new(&mut e.local).get_time_since_epoch_us();
    let remote = e.client.get_time_since_epoch_us();
    assert_eq!(seen_as(&local).is_ok(), seen_as(&remote).is_ok());
    if let (Ok(l), Ok(r)) = (local, remote) {
        assert!((l - r).abs() < 60_000_000, "{l} {r}");
    }
    assert_eq!(e.local.take(), e.remote.lock().unwrap().take());
    e.seen.insert("get_time_since_epoch_us");

    // ---- ecmp: an action profile without selector, and its indirect table.
    e.load("ecmp");
    let prof = "EgressImpl.smac_profile";
    let port_smac = "EgressImpl.port_smac";
    same_ok!(
        e,
        bm_mt_act_prof_add_member(prof, "EgressImpl.set_src_mac", &[vec![2; 6]])
    );
    same_ok!(
        e,
        bm_mt_act_prof_add_member(prof, "EgressImpl.set_src_mac", &[vec![3; 6]])
    );
    same!(e, bm_mt_act_prof_create_group(prof));
    same_ok!(
        e,
        bm_mt_indirect_add_entry(port_smac, &[ex(&[0, 1])], 0, none)
    );
    same!(
        e,
        bm_mt_indirect_add_entry(port_smac, &[ex(&[0, 2])], 9, none)
    );
    same!(
        e,
        bm_mt_indirect_ws_add_entry(port_smac, &[ex(&[0, 2])], 0, none)
    );
    same_ok!(e, bm_mt_indirect_modify_entry(port_smac, 0, 1));
    same_ok!(e, bm_mt_indirect_set_default_member(port_smac, 0));
    same_ok!(e, bm_mt_get_default_entry(port_smac));
    same_ok!(e, bm_mt_get_entries(port_smac));
    same!(e, bm_mt_act_prof_delete_member(prof, 1));
    same_ok!(e, bm_mt_indirect_reset_default_entry(port_smac));
    same_ok!(e, bm_mt_indirect_delete_entry(port_smac, 0));
    same_ok!(e, bm_mt_act_prof_delete_member(prof, 1));
    same_ok!(e, bm_mt_act_prof_get_members(prof));

    // ---- stateful: a direct meter.
    e.load("stateful");
    let classify = "IngressImpl.classify";
    let key = vec![BmMatchParam::Ternary {
        key: vec![0, 0, 0, 0x30],
        mask: vec![0xff; 4],
    }];
    same_ok!(
        e,
        bm_mt_add_entry(classify, &key, "IngressImpl.set_class", &[vec![3]], opts)
    );
    same_ok!(e, bm_mt_set_meter_rates(classify, 0, &rates));
    same_ok!(e, bm_mt_get_meter_rates(classify, 0));
    same!(e, bm_mt_get_meter_rates(classify, 1));
    same!(e, bm_meter_get_rates("IngressImpl.class_meter", 0));
}

fn all_method_names() -> BTreeSet<&'static str> {
    METHODS.iter().map(|m| m.name).collect()
}

#[test]
fn every_method_round_trips() {
    let mut e = env("p4rt_switch");
    exercise_all(&mut e);
    // Every RPC of the IDL (and p4jet's five) was exercised, and nothing else.
    assert_eq!(e.seen, all_method_names());
    assert_eq!(e.seen.len(), 98);
}

#[test]
fn every_method_carries_its_declared_exception() {
    let mut e = env("p4rt_switch");
    e.fail_code = Some(2);
    exercise_all(&mut e);
    e.load("p4rt_switch");
    // Spot-check that these really were exceptions with the IDL's codes.
    let r = same_r!(
        e,
        bm_mt_add_entry(
            "IngressImpl.dmac",
            &[ex(&[0; 6])],
            "IngressImpl.flood",
            &[],
            BmAddEntryOptions::default()
        )
    );
    assert_eq!(
        r.unwrap_err().bmv2,
        Some(Bmv2Code::Table(TableOperationErrorCode::INVALID_HANDLE))
    );
    let r = same_r!(e, bm_dev_mgr_remove_port(1));
    assert_eq!(
        r.unwrap_err().bmv2,
        Some(Bmv2Code::DevMgr(DevMgrErrorCode::ERROR))
    );
    let r = same_r!(e, mirroring_session_get(1));
    assert_eq!(
        r.unwrap_err().bmv2,
        Some(Bmv2Code::Mirroring(
            MirroringOperationErrorCode::SESSION_NOT_FOUND
        ))
    );
}

/// Every code of every exception enum, on one RPC that declares it.
#[test]
fn every_exception_code_arrives() {
    let mut e = env("p4rt_switch");
    macro_rules! all_codes {
        ($code:ident, $m:ident($($a:expr),*)) => {
            for c in $code::ALL {
                e.fail_code = Some(c.code());
                let r = same_r!(e, $m($($a),*));
                match r {
                    Err(x) => {
                        assert_eq!(x.bmv2, Some(Bmv2Code::from(*c)));
                        assert_eq!(x.kind, Bmv2Code::from(*c).kind());
                    }
                    other => panic!("{}: {other:?}", stringify!($m)),
                }
            }
        };
    }
    all_codes!(
        TableOperationErrorCode,
        bm_mt_get_num_entries("IngressImpl.acl")
    );
    all_codes!(
        CounterOperationErrorCode,
        bm_counter_reset_all("IngressImpl.port_counter")
    );
    all_codes!(SwapOperationErrorCode, bm_swap_configs());
    all_codes!(
        MeterOperationErrorCode,
        bm_meter_get_rates("IngressImpl.port_meter", 0)
    );
    all_codes!(
        RegisterOperationErrorCode,
        bm_register_read("IngressImpl.port_packets", 0)
    );
    all_codes!(
        ParseVSetOperationErrorCode,
        bm_parse_vset_clear("ParserImpl.punt_ports")
    );
    all_codes!(LearnOperationErrorCode, bm_learning_set_timeout(1, 1));
    all_codes!(DevMgrErrorCode, bm_dev_mgr_show_ports());
    all_codes!(
        CrcErrorCode,
        bm_set_crc32_custom_parameters("calc", BmCrc32Config::default())
    );
    all_codes!(ToeplitzHashErrorCode, bm_set_toeplitz_hash_key("calc", &[]));
    all_codes!(McOperationErrorCode, bm_mc_get_entries());
    all_codes!(MirroringOperationErrorCode, mirroring_session_delete(0));
    // Id lookups answer from the program model alone: their codes are the adapter's.
    e.fail_code = None;
    let r = same_r!(e, bm_get_id_from_name(BmResourceType::COUNTER, "nope"));
    assert_eq!(
        r.unwrap_err().bmv2,
        Some(Bmv2Code::IdLookup(IdLookupErrorCode::INVALID_RESOURCE_NAME))
    );
}

#[test]
fn internal_errors_and_panics_become_application_exceptions() {
    let mut e = env("p4rt_switch");
    e.remote.lock().unwrap().fail_when(
        |c| c.is("pipeline"),
        RuntimeError::internal("injected failure"),
    );
    match e.client.bm_get_config() {
        Err(x) => {
            assert_eq!((x.kind, x.bmv2), (ErrorKind::Internal, None));
            assert!(
                x.message.contains("TApplicationException(INTERNAL_ERROR)"),
                "{x}"
            );
            assert!(x.message.contains("injected failure"), "{x}");
        }
        other => panic!("{other:?}"),
    }
    e.remote.lock().unwrap().fail_when(
        |c| {
            assert!(!c.is("entry_count"), "injected panic");
            false
        },
        RuntimeError::internal("never"),
    );
    match e.client.bm_mt_get_num_entries("IngressImpl.acl") {
        Err(x) => assert!(x.message.contains("INTERNAL_ERROR"), "{x}"),
        other => panic!("{other:?}"),
    }
    // Same connection, and a new one, still work (the mutex poisoned by the
    // panic is recovered).
    assert_eq!(e.client.get_time_elapsed_us(), Ok(CLOCK_US as i64));
    let mut c2 = ThriftClient::connect(e.client.peer_addr()).unwrap();
    assert_eq!(c2.mirroring_mapping_get_egress_port(1), Ok(-1));
}

#[test]
fn simple_pre_service() {
    let mut e = env("p4rt_switch");
    e.client.set_pre_service(PreService::SimplePre);
    assert_eq!(e.client.bm_mc_mgrp_create(3), Ok(3));
    assert_eq!(e.client.bm_mc_node_create(1, "11", ""), Ok(0));
    assert_eq!(e.client.bm_mc_node_update(0, "1", ""), Ok(()));
    assert!(matches!(
        e.client.bm_mc_node_create(1, "11", "1"),
        Err(x) if x.bmv2.is_none()
    ));
    assert!(matches!(
        e.client.bm_mc_set_lag_membership(1, "1"),
        Err(x) if x.bmv2.is_none()
    ));
    // The refused calls never reached the runtime.
    let calls = e.remote.lock().unwrap().take();
    assert_eq!(
        calls
            .iter()
            .filter(|c| matches!(c, Call::Write(..)))
            .count(),
        3,
        "{calls:?}"
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
    let (rt, api) = shared(recorded("p4rt_switch"));
    let server = start(api);
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    let cxt = |c: i32| {
        Struct::new()
            .with(1, Value::I32(c))
            .with(2, Value::string("IngressImpl.dmac"))
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
    assert_eq!(b.get(0), Some(&Value::I64(CLOCK_US as i64)));

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
        .with(2, Value::string("IngressImpl.dmac"))
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

    // An exact entry's priority is sent as -1, as bmv2 does (the stock CLI needs it).
    Bmv2::new(rt.lock().unwrap().inner())
        .bm_mt_add_entry(
            "IngressImpl.dmac",
            &[ex(&[0xaa; 6])],
            "IngressImpl.flood",
            &[],
            BmAddEntryOptions::default(),
        )
        .unwrap();
    let get = Struct::new()
        .with(1, Value::I32(0))
        .with(2, Value::string("IngressImpl.dmac"))
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

    // What reached the runtime: no call was made for the refused ones (bad context,
    // unknown method, bad match key, unknown register, unknown resource type).
    let calls = rt.lock().unwrap().take();
    let names: Vec<&str> = calls
        .iter()
        .map(|c| match c {
            Call::Other(s) => s.split('(').next().unwrap(),
            _ => "write",
        })
        .collect();
    assert_eq!(
        names,
        ["entry_count", "reset_state", "clock", "table_entry"],
        "{calls:?}"
    );
    server.stop().unwrap();
}

#[test]
fn concurrent_clients() {
    let (rt, api) = shared(recorded("p4rt_switch"));
    let server = start(api);
    let addr = server.local_addr();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = ThriftClient::connect(addr).unwrap();
                let reg = "IngressImpl.port_packets";
                for i in 0..100 {
                    let index = t * 16 + i % 16;
                    c.bm_register_write(reg, index, i64::from(i)).unwrap();
                    assert_eq!(c.bm_register_read(reg, index), Ok(i64::from(i)));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(rt.lock().unwrap().take().len(), 800);
    server.stop().unwrap();
}

#[test]
fn shutdown_ends_idle_connections_and_client_reconnects() {
    let (_rt, api) = shared(recorded("basic_l2"));
    let server = start(api);
    let addr = server.local_addr();
    let mut c = ThriftClient::connect(addr).unwrap();
    assert_eq!(c.get_time_elapsed_us(), Ok(CLOCK_US as i64));
    let t0 = Instant::now();
    server.stop().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "stop took {:?}",
        t0.elapsed()
    );
    assert!(matches!(
        c.get_time_elapsed_us(),
        Err(x) if x.kind == ErrorKind::Internal && x.bmv2.is_none()
    ));

    // A new server on the same port: the client reconnects by itself.
    let (_rt2, api2) = shared(recorded("basic_l2"));
    let listener = std::net::TcpListener::bind(addr).unwrap();
    let server2 = ServerHandle::spawn(listener, api2, Default::default()).unwrap();
    assert!(c.get_time_since_epoch_us().unwrap() > 1_700_000_000_000_000);
    server2.stop().unwrap();
}

#[test]
fn connection_limit() {
    let (_rt, api) = shared(recorded("basic_l2"));
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
