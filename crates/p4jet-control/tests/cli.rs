//! simple_switch_CLI commands against a recording mock of the runtime API:
//! the right call with the right bytes, the right output, and no call at
//! all for malformed commands.

mod common;

use common::{MockApi, corpus_json};
use p4jet_control::api::*;
use p4jet_control::cli::{Cli, CliErrorKind, parse_value};

fn cli(program: &str) -> Cli {
    Cli::new(&corpus_json(program)).expect("corpus JSON loads")
}

fn ok(cli: &mut Cli, api: &mut MockApi, line: &str) -> String {
    match cli.execute(api, line) {
        Ok(out) => out,
        Err(e) => panic!("{line}: unexpected error: {}", e.printed()),
    }
}

/// Runs a command that must fail before calling anything; returns the error line.
fn rejected(cli: &mut Cli, line: &str) -> String {
    let mut api = MockApi::new();
    let e = cli.execute(&mut api, line).expect_err(line);
    assert!(
        api.calls.is_empty(),
        "{line}: malformed command made calls {:?}",
        api.calls
    );
    assert!(!matches!(e.kind, CliErrorKind::Api { .. }), "{line}: {e}");
    e.to_string()
}

fn call(name: &str, args: impl std::fmt::Debug) -> String {
    format!("{name}{args:?}")
}

fn exact(b: &[u8]) -> BmMatchParam {
    BmMatchParam::Exact { key: b.to_vec() }
}

fn prio(p: i32) -> BmAddEntryOptions {
    BmAddEntryOptions { priority: Some(p) }
}

#[test]
fn table_add_exact_prints_like_simple_switch_cli() {
    let mut c = cli("basic_l2");
    let mut api = MockApi::new();
    let out = ok(
        &mut c,
        &mut api,
        "table_add dmac forward 00:00:00:00:00:10 => 1",
    );
    assert_eq!(
        out,
        "Adding entry to exact match table dmac\n\
         match key:           EXACT-00:00:00:00:00:10\n\
         action:              forward\n\
         runtime data:        00:01\n\
         Entry has been added with handle 0\n"
    );
    assert_eq!(
        api.take(),
        vec![call(
            "bm_mt_add_entry",
            (
                "IngressImpl.dmac",
                &[exact(&[0, 0, 0, 0, 0, 0x10])][..],
                "IngressImpl.forward",
                &[vec![0u8, 1]][..],
                prio(0)
            )
        )]
    );
    // Fully qualified names work too, and handles come from the switch.
    let out = ok(
        &mut c,
        &mut api,
        "table_add IngressImpl.dmac IngressImpl.forward 0x000000000011 => 0x1ff",
    );
    assert!(
        out.ends_with("Entry has been added with handle 1\n"),
        "{out}"
    );
    assert!(out.contains("runtime data:        01:ff\n"));
    // No parameters: the runtime data line keeps its trailing space.
    let out = ok(&mut c, &mut api, "table_add dmac IngressImpl.drop 0x12 =>");
    assert!(out.contains("\nruntime data:        \n"), "{out:?}");
}

#[test]
fn table_add_errors_from_the_switch() {
    let mut c = cli("basic_l2");
    let mut api = MockApi::new().fail("bm_mt_add_entry", 17);
    let e = c
        .execute(&mut api, "table_add dmac forward 00:00:00:00:00:10 => 1")
        .unwrap_err();
    assert_eq!(e.to_string(), "Invalid table operation (DUPLICATE_ENTRY)");
    assert_eq!(
        e.kind,
        CliErrorKind::Api {
            message: "Invalid table operation (DUPLICATE_ENTRY)".into(),
            code: Some("DUPLICATE_ENTRY")
        }
    );
    assert!(
        e.printed()
            .starts_with("Adding entry to exact match table dmac\n")
    );
    assert!(
        e.printed()
            .ends_with("runtime data:        00:01\nInvalid table operation (DUPLICATE_ENTRY)\n")
    );
}

#[test]
fn table_add_ternary_lpm_range_keys() {
    let mut c = cli("acl_firewall");
    let mut api = MockApi::new();
    let out = ok(
        &mut c,
        &mut api,
        "table_add acl deny 10.66.0.0&&&255.255.0.0 0&&&0 6&&&0xff 0x50&&&0xffff 0&&&0 0x02&&&0x12 => 7",
    );
    assert!(out.starts_with("Adding entry to ternary match table acl\nmatch key:           TERNARY-0a:42:00:00 &&& ff:ff:00:00\tTERNARY-00:00:00:00 &&& 00:00:00:00\tTERNARY-06 &&& ff\t"), "{out}");
    let t = |k: &[u8], m: &[u8]| BmMatchParam::Ternary {
        key: k.to_vec(),
        mask: m.to_vec(),
    };
    let empty: &[Vec<u8>] = &[];
    assert_eq!(
        api.take(),
        vec![call(
            "bm_mt_add_entry",
            (
                "IngressImpl.acl",
                &[
                    t(&[10, 66, 0, 0], &[255, 255, 0, 0]),
                    t(&[0, 0, 0, 0], &[0, 0, 0, 0]),
                    t(&[6], &[0xff]),
                    t(&[0, 0x50], &[0xff, 0xff]),
                    t(&[0], &[0]),
                    t(&[2], &[0x12]),
                ][..],
                "IngressImpl.deny",
                empty,
                prio(7)
            )
        )]
    );

    // Range key with the exact key before it, priority last.
    ok(
        &mut c,
        &mut api,
        "table_add src_port_filter deny_source 17 0->1023 => 20",
    );
    assert_eq!(
        api.take(),
        vec![call(
            "bm_mt_add_entry",
            (
                "IngressImpl.src_port_filter",
                &[
                    exact(&[17]),
                    BmMatchParam::Range {
                        start: vec![0, 0],
                        end: vec![3, 0xff]
                    }
                ][..],
                "IngressImpl.deny_source",
                empty,
                prio(20)
            )
        )]
    );

    // LPM (simple_router) and IPv6 LPM.
    let mut c = cli("simple_router");
    let out = ok(
        &mut c,
        &mut api,
        "table_add ipv4_lpm set_next_hop 10.1.0.0/16 => 192.168.0.2 2",
    );
    assert!(
        out.contains("match key:           LPM-0a:01:00:00/16\n"),
        "{out}"
    );
    assert!(
        out.contains("runtime data:        c0:a8:00:02\t00:02\n"),
        "{out}"
    );
    assert_eq!(
        api.take(),
        vec![call(
            "bm_mt_add_entry",
            (
                "IngressImpl.ipv4_lpm",
                &[BmMatchParam::Lpm {
                    key: vec![10, 1, 0, 0],
                    prefix_length: 16
                }][..],
                "IngressImpl.set_next_hop",
                &[vec![192u8, 168, 0, 2], vec![0, 2]][..],
                prio(0)
            )
        )]
    );
    let mut c = cli("ipv6_router");
    ok(
        &mut c,
        &mut api,
        "table_add routes route 2001:db8:1::/48 => 2 2",
    );
    let mut key = vec![0x20, 0x01, 0x0d, 0xb8, 0, 1];
    key.resize(16, 0);
    assert_eq!(
        api.take(),
        vec![call(
            "bm_mt_add_entry",
            (
                "IngressImpl.routes",
                &[BmMatchParam::Lpm {
                    key,
                    prefix_length: 48
                }][..],
                "IngressImpl.route",
                &[vec![0u8, 2], vec![0, 2]][..],
                prio(0)
            )
        )]
    );
    ok(&mut c, &mut api, "table_add routes route ::/0 => 4 0");
    assert!(api.take()[0].contains(
        "Lpm { key: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], prefix_length: 0 }"
    ));
}

#[test]
fn malformed_table_commands_make_no_call() {
    let mut c = cli("acl_firewall");
    assert_eq!(
        rejected(&mut c, "table_add"),
        "Error: Insufficient number of args"
    );
    assert_eq!(
        rejected(&mut c, "table_add nope forward 1 => 2"),
        "Error: Invalid table name (nope)"
    );
    assert_eq!(
        rejected(&mut c, "table_add port_map permit 1 => 2"),
        "Error: Table port_map has no action permit"
    );
    assert_eq!(
        rejected(&mut c, "table_add port_map forward 1 2 => 2"),
        "Error: Table port_map needs 1 key fields"
    );
    assert_eq!(
        rejected(&mut c, "table_add port_map forward 1 => 2 3"),
        "Error: Action IngressImpl.forward needs 1 parameters"
    );
    assert_eq!(
        rejected(&mut c, "table_add port_map forward 1 => 0x10000"),
        "Invalid runtime data: Error while parsing 0x10000 - Parameter is too large"
    );
    assert_eq!(
        rejected(&mut c, "table_add port_map forward 1 => port"),
        "Invalid runtime data: Error while parsing port - Invalid input, could not cast to integer, try in hex with 0x prefix"
    );
    assert_eq!(
        rejected(&mut c, "table_add port_map forward 0x10000 => 1"),
        "Invalid match key: Error while parsing 0x10000 - Parameter is too large"
    );
    // Without "=>" the last argument is dropped, as in simple_switch_CLI.
    assert_eq!(
        rejected(&mut c, "table_add port_map forward 1 2"),
        "Error: Action IngressImpl.forward needs 1 parameters"
    );
    // Ternary and range tables need a priority.
    assert_eq!(
        rejected(
            &mut c,
            "table_add acl deny 0&&&0 0&&&0 0&&&0 0&&&0 0&&&0 0&&&0 =>"
        ),
        "Error: Table is ternary, but could not extract a valid priority from args"
    );
    assert_eq!(
        rejected(
            &mut c,
            "table_add acl deny 0&&&0 0&&&0 0&&&0 0&&&0 0&&&0 0 => 1"
        ),
        "Invalid match key: Invalid ternary value 0, use '&&&' to separate key and mask"
    );
    assert_eq!(
        rejected(
            &mut c,
            "table_add src_port_filter deny_source 17 1023->0 => 1"
        ),
        "Invalid match key: start is less than end in expression 1023->0"
    );
    assert_eq!(
        rejected(&mut c, "table_add src_port_filter deny_source 17 5 => 1"),
        "Invalid match key: Invalid range value 5, use '->' to separate range start and range end"
    );
    assert_eq!(
        rejected(
            &mut c,
            "table_add acl deny 10.0.0&&&255.0.0.0 0&&&0 0&&&0 0&&&0 0&&&0 0&&&0 => 1"
        ),
        "Invalid match key: Error while parsing 10.0.0 - Invalid IPv4 address"
    );
    assert_eq!(
        rejected(&mut c, "table_set_default port_map forward"),
        "Error: Action forward needs 1 parameters"
    );
    assert_eq!(
        rejected(&mut c, "table_set_default port_map forward => 1"),
        "Error: Action forward needs 1 parameters"
    );
    assert_eq!(
        rejected(&mut c, "table_delete port_map x"),
        "Error: Bad format for entry handle"
    );
    assert_eq!(
        rejected(&mut c, "table_delete port_map"),
        "Error: Wrong number of args, expected 2 but got 1"
    );
    assert_eq!(
        rejected(&mut c, "table_modify port_map forward 0 => 1 2"),
        "Error: Action IngressImpl.forward needs 1 parameters"
    );
    assert_eq!(
        rejected(&mut c, "table_modify port_map forward 0"),
        "Error: Action IngressImpl.forward needs 1 parameters"
    );
    assert_eq!(
        rejected(&mut c, "table_set_timeout port_map 0 10"),
        "Error: Table port_map does not support entry timeouts"
    );
    assert_eq!(
        rejected(&mut c, "table_add_x"),
        "*** Unknown syntax: table_add_x"
    );
    assert_eq!(
        rejected(&mut c, "# a comment"),
        "*** Unknown syntax: # a comment"
    );
    let mut c = cli("basic_l2");
    assert_eq!(
        rejected(&mut c, "table_add dmac forward 00:00:00:00:00 => 1"),
        "Invalid match key: Error while parsing 00:00:00:00:00 - Invalid MAC address"
    );
    let mut c = cli("simple_router");
    assert_eq!(
        rejected(&mut c, "table_add ipv4_lpm set_next_hop 10.0.0.0 => 1 1"),
        "Invalid match key: Invalid LPM value 10.0.0.0, use '/' to separate prefix and length"
    );
    // "drop" names IngressImpl.drop and EgressImpl.drop: ambiguous.
    assert_eq!(
        rejected(&mut c, "table_add ipv4_lpm drop 10.0.0.0/8 =>"),
        "Error: Table ipv4_lpm has no action drop"
    );
}

#[test]
fn other_table_commands() {
    let mut c = cli("basic_l2");
    let mut api = MockApi::new();
    let out = ok(&mut c, &mut api, "table_set_default dmac forward 3");
    assert_eq!(
        out,
        "Setting default action of dmac\naction:              forward\nruntime data:        00:03\n"
    );
    assert_eq!(
        api.take(),
        vec![call(
            "bm_mt_set_default_action",
            (
                "IngressImpl.dmac",
                "IngressImpl.forward",
                &[vec![0u8, 3]][..]
            )
        )]
    );
    assert_eq!(
        ok(&mut c, &mut api, "table_modify dmac forward 3 => 2"),
        "Modifying entry 3 for exact match table dmac\n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "table_modify dmac forward 4 1"),
        "Modifying entry 4 for exact match table dmac\n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "table_delete dmac 3"),
        "Deleting entry 3 from dmac\n"
    );
    assert_eq!(ok(&mut c, &mut api, "table_clear dmac"), "");
    assert_eq!(ok(&mut c, &mut api, "table_reset_default dmac"), "");
    api.num_entries = 4;
    assert_eq!(ok(&mut c, &mut api, "table_num_entries dmac"), "4\n");
    assert_eq!(
        api.take(),
        vec![
            call(
                "bm_mt_modify_entry",
                (
                    "IngressImpl.dmac",
                    3,
                    "IngressImpl.forward",
                    &[vec![0u8, 2]][..]
                )
            ),
            call(
                "bm_mt_modify_entry",
                (
                    "IngressImpl.dmac",
                    4,
                    "IngressImpl.forward",
                    &[vec![0u8, 1]][..]
                )
            ),
            call("bm_mt_delete_entry", ("IngressImpl.dmac", 3)),
            call("bm_mt_clear_entries", ("IngressImpl.dmac", false)),
            call("bm_mt_reset_default_entry", ("IngressImpl.dmac",)),
            call("bm_mt_get_num_entries", ("IngressImpl.dmac",)),
        ]
    );
}

#[test]
fn table_dump_format() {
    let mut c = cli("acl_firewall");
    let mut api = MockApi::new();
    api.entries = vec![BmMtEntry {
        match_key: vec![
            exact(&[17]),
            BmMatchParam::Range {
                start: vec![0, 0],
                end: vec![3, 0xff],
            },
        ],
        options: prio(20),
        entry_handle: 0,
        action_entry: BmActionEntry::ActionData {
            action_name: "IngressImpl.deny_source".into(),
            action_data: vec![],
        },
        life: None,
    }];
    api.default_entry = Some(BmActionEntry::ActionData {
        action_name: "NoAction".into(),
        action_data: vec![],
    });
    let out = ok(&mut c, &mut api, "table_dump src_port_filter");
    assert_eq!(
        out,
        "==========\n\
         TABLE ENTRIES\n\
         **********\n\
         Dumping entry 0x0\n\
         Match key:\n\
         * ipv4.protocol                 : EXACT     11\n\
         * scalars.metadata_t.l4_src_port: RANGE     0000 -> 03ff\n\
         Priority: 20\n\
         Action entry: IngressImpl.deny_source - \n\
         ==========\n\
         Dumping default entry\n\
         Action entry: NoAction - \n\
         ==========\n"
    );
    let mut c = cli("basic_l2");
    api.entries = vec![BmMtEntry {
        match_key: vec![exact(&[0, 0, 0, 0, 0, 0x10])],
        options: prio(-1),
        entry_handle: 26,
        action_entry: BmActionEntry::ActionData {
            action_name: "IngressImpl.forward".into(),
            action_data: vec![vec![0, 1]],
        },
        life: None,
    }];
    api.default_entry = None;
    assert_eq!(
        ok(&mut c, &mut api, "table_dump_entry dmac 26"),
        "Dumping entry 0x1a\nMatch key:\n* ethernet.dst_addr   : EXACT     000000000010\nAction entry: IngressImpl.forward - 0001\n"
    );
    let out = ok(&mut c, &mut api, "table_dump dmac");
    assert!(
        out.ends_with("Dumping default entry\nEMPTY\n==========\n"),
        "{out}"
    );
    let out = ok(
        &mut c,
        &mut api,
        "table_dump_entry_from_key dmac 00:00:00:00:00:10",
    );
    assert!(out.starts_with("Dumping entry 0x1a\n"), "{out}");
    let e = c.execute(&mut api, "table_dump_entry dmac 3").unwrap_err();
    assert_eq!(e.to_string(), "Invalid table operation (INVALID_HANDLE)");
}

#[test]
fn action_profiles_and_indirect_tables() {
    let mut c = cli("ecmp");
    let mut api = MockApi::new();
    assert_eq!(
        ok(
            &mut c,
            &mut api,
            "act_prof_create_member ecmp_selector set_next_hop 00:00:00:00:0d:01 1"
        ),
        "Member has been created with handle 0\n"
    );
    assert_eq!(
        ok(
            &mut c,
            &mut api,
            "act_prof_create_group IngressImpl.ecmp_selector"
        ),
        "Group has been created with handle 0\n"
    );
    ok(
        &mut c,
        &mut api,
        "act_prof_add_member_to_group ecmp_selector 0 0",
    );
    assert_eq!(
        ok(
            &mut c,
            &mut api,
            "table_indirect_add_with_group ecmp_route 10.0.0.0/8 => 0"
        ),
        "Adding entry to indirect match table IngressImpl.ecmp_route\nEntry has been added with handle 0\n"
    );
    ok(
        &mut c,
        &mut api,
        "table_indirect_add ecmp_route 0.0.0.0/0 => 0",
    );
    ok(&mut c, &mut api, "table_indirect_add port_smac 3 => 0");
    ok(&mut c, &mut api, "table_indirect_set_default port_smac 0");
    ok(
        &mut c,
        &mut api,
        "table_indirect_set_default_with_group ecmp_route 0",
    );
    ok(&mut c, &mut api, "table_indirect_reset_default port_smac");
    ok(&mut c, &mut api, "table_indirect_delete port_smac 0");
    ok(
        &mut c,
        &mut api,
        "act_prof_remove_member_from_group ecmp_selector 0 0",
    );
    ok(
        &mut c,
        &mut api,
        "act_prof_modify_member smac_profile set_src_mac 0 => 00:ee:00:00:00:01",
    );
    ok(&mut c, &mut api, "act_prof_delete_group ecmp_selector 0");
    ok(&mut c, &mut api, "act_prof_delete_member ecmp_selector 0");
    // Legacy alias: the table's action profile is used.
    assert_eq!(
        ok(
            &mut c,
            &mut api,
            "table_indirect_create_member port_smac NoAction"
        ),
        "Member has been created with handle 1\n"
    );
    let lpm = |k: [u8; 4], l| BmMatchParam::Lpm {
        key: k.to_vec(),
        prefix_length: l,
    };
    assert_eq!(
        api.take(),
        vec![
            call(
                "bm_mt_act_prof_add_member",
                (
                    "IngressImpl.ecmp_selector",
                    "IngressImpl.set_next_hop",
                    &[vec![0u8, 0, 0, 0, 0x0d, 1], vec![0, 1]][..]
                )
            ),
            call(
                "bm_mt_act_prof_create_group",
                ("IngressImpl.ecmp_selector",)
            ),
            call(
                "bm_mt_act_prof_add_member_to_group",
                ("IngressImpl.ecmp_selector", 0, 0)
            ),
            call(
                "bm_mt_indirect_ws_add_entry",
                (
                    "IngressImpl.ecmp_route",
                    &[lpm([10, 0, 0, 0], 8)][..],
                    0,
                    prio(0)
                )
            ),
            call(
                "bm_mt_indirect_add_entry",
                (
                    "IngressImpl.ecmp_route",
                    &[lpm([0, 0, 0, 0], 0)][..],
                    0,
                    prio(0)
                )
            ),
            call(
                "bm_mt_indirect_add_entry",
                ("EgressImpl.port_smac", &[exact(&[0, 3])][..], 0, prio(0))
            ),
            call(
                "bm_mt_indirect_set_default_member",
                ("EgressImpl.port_smac", 0)
            ),
            call(
                "bm_mt_indirect_ws_set_default_group",
                ("IngressImpl.ecmp_route", 0)
            ),
            call(
                "bm_mt_indirect_reset_default_entry",
                ("EgressImpl.port_smac",)
            ),
            call("bm_mt_indirect_delete_entry", ("EgressImpl.port_smac", 0)),
            call(
                "bm_mt_act_prof_remove_member_from_group",
                ("IngressImpl.ecmp_selector", 0, 0)
            ),
            call(
                "bm_mt_act_prof_modify_member",
                (
                    "EgressImpl.smac_profile",
                    0,
                    "EgressImpl.set_src_mac",
                    &[vec![0u8, 0xee, 0, 0, 0, 1]][..]
                )
            ),
            call(
                "bm_mt_act_prof_delete_group",
                ("IngressImpl.ecmp_selector", 0)
            ),
            call(
                "bm_mt_act_prof_delete_member",
                ("IngressImpl.ecmp_selector", 0)
            ),
            call(
                "bm_mt_act_prof_add_member",
                ("EgressImpl.smac_profile", "NoAction", &[] as &[Vec<u8>])
            ),
        ]
    );
    assert_eq!(
        rejected(&mut c, "act_prof_create_group smac_profile"),
        "Error: Cannot run this command on an action profile without selector"
    );
    assert_eq!(
        rejected(&mut c, "table_indirect_add_with_group port_smac 1 => 0"),
        "Error: Cannot run this command on non-indirect table, or on indirect table with no selector"
    );
    assert_eq!(
        rejected(&mut c, "table_indirect_add port_smac 1 0"),
        "Error: Invalid arguments, could not find handle"
    );
    assert_eq!(
        rejected(&mut c, "table_indirect_add port_smac 1 => 0 1"),
        "Error: Invalid arguments, could not find handle"
    );
    assert_eq!(
        rejected(
            &mut c,
            "act_prof_create_member smac_profile set_next_hop 1 1"
        ),
        "Error: Action profile 'smac_profile' has no action 'set_next_hop'"
    );
    assert_eq!(
        rejected(&mut c, "table_indirect_create_group port_smac"),
        "Error: Cannot run this command on non-indirect table, or on indirect table with no selector"
    );
    let mut c = cli("basic_l2");
    assert_eq!(
        rejected(&mut c, "table_indirect_add dmac 1 => 0"),
        "Error: Cannot run this command on non-indirect table"
    );

    // Dumps.
    let mut c = cli("ecmp");
    api.members = vec![BmMtActProfMember {
        mbr_handle: 0,
        action_name: "IngressImpl.set_next_hop".into(),
        action_data: vec![vec![0, 0, 0, 0, 0x0d, 1], vec![0, 1]],
    }];
    api.groups = vec![BmMtActProfGroup {
        grp_handle: 0,
        mbr_handles: vec![0, 1, 2],
    }];
    assert_eq!(
        ok(&mut c, &mut api, "act_prof_dump ecmp_selector"),
        "==========\nMEMBERS\n**********\nDumping member 0\nAction entry: IngressImpl.set_next_hop - 000000000d01, 0001\n==========\nGROUPS\n**********\nDumping group 0\nMembers: [0, 1, 2]\n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "table_dump_group ecmp_route 0"),
        "Dumping group 0\nMembers: [0, 1, 2]\n"
    );
    api.entries = vec![BmMtEntry {
        match_key: vec![lpm([10, 0, 0, 0], 8)],
        options: prio(-1),
        entry_handle: 0,
        action_entry: BmActionEntry::GrpHandle(0),
        life: None,
    }];
    let out = ok(&mut c, &mut api, "table_dump ecmp_route");
    assert!(
        out.starts_with("==========\nTABLE ENTRIES\n**********\nDumping entry 0x0\nMatch key:\n* ipv4.dst_addr       : LPM       0a000000/8\nIndex: group(0)\n==========\nMEMBERS\n"),
        "{out}"
    );
}

#[test]
fn counters_meters_registers() {
    let mut c = cli("stateful");
    let mut api = MockApi::new();
    api.counter = BmCounterValue {
        bytes: 242,
        packets: 4,
    };
    assert_eq!(
        ok(&mut c, &mut api, "counter_read flow_counter 1"),
        "flow_counter[1]= (242 bytes, 4 packets)\n"
    );
    assert_eq!(
        ok(
            &mut c,
            &mut api,
            "counter_write IngressImpl.port_counter 2 5 300"
        ),
        "IngressImpl.port_counter[2] has been updated\n"
    );
    assert_eq!(ok(&mut c, &mut api, "counter_reset port_counter"), "");
    ok(
        &mut c,
        &mut api,
        "meter_set_rates IngressImpl.flow_meter 3 0.000001:1 0.000002:2",
    );
    ok(
        &mut c,
        &mut api,
        "meter_set_rates class_meter 0 0.0001:100 0.0002:200",
    );
    ok(
        &mut c,
        &mut api,
        "meter_array_set_rates flow_meter 1e-9:10 2e-9:20",
    );
    api.rates = vec![
        BmMeterRateConfig {
            units_per_micros: 1e-9,
            burst_size: 100,
        },
        BmMeterRateConfig {
            units_per_micros: 0.5,
            burst_size: 200,
        },
    ];
    assert_eq!(
        ok(&mut c, &mut api, "meter_get_rates flow_meter 3"),
        "0: info rate = 1e-09, burst size = 100\n1: info rate = 0.5, burst size = 200\n"
    );
    ok(&mut c, &mut api, "meter_get_rates class_meter 0");
    api.registers = vec![0, 100, 0, 7];
    assert_eq!(
        ok(&mut c, &mut api, "register_read flow_packets 1"),
        "flow_packets[1]= 100\n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "register_read port_bytes"),
        "port_bytes= 0, 100, 0, 7\n"
    );
    ok(
        &mut c,
        &mut api,
        "register_write IngressImpl.flow_packets 5 100",
    );
    ok(&mut c, &mut api, "register_reset flow_packets");
    let r = |u, b| BmMeterRateConfig {
        units_per_micros: u,
        burst_size: b,
    };
    assert_eq!(
        api.take(),
        vec![
            call("bm_counter_read", ("IngressImpl.flow_counter", 1)),
            call(
                "bm_counter_write",
                (
                    "IngressImpl.port_counter",
                    2,
                    BmCounterValue {
                        bytes: 300,
                        packets: 5
                    }
                )
            ),
            call("bm_counter_reset_all", ("IngressImpl.port_counter",)),
            call(
                "bm_meter_set_rates",
                (
                    "IngressImpl.flow_meter",
                    3,
                    &[r(0.000001, 1), r(0.000002, 2)][..]
                )
            ),
            // A direct meter is configured through its table.
            call(
                "bm_mt_set_meter_rates",
                (
                    "IngressImpl.classify",
                    0,
                    &[r(0.0001, 100), r(0.0002, 200)][..]
                )
            ),
            call(
                "bm_meter_array_set_rates",
                ("IngressImpl.flow_meter", &[r(1e-9, 10), r(2e-9, 20)][..])
            ),
            call("bm_meter_get_rates", ("IngressImpl.flow_meter", 3)),
            call("bm_mt_get_meter_rates", ("IngressImpl.classify", 0)),
            call("bm_register_read", ("IngressImpl.flow_packets", 1)),
            call("bm_register_read_all", ("IngressImpl.port_bytes",)),
            call("bm_register_write", ("IngressImpl.flow_packets", 5, 100i64)),
            call("bm_register_reset", ("IngressImpl.flow_packets",)),
        ]
    );
    assert_eq!(
        rejected(&mut c, "meter_set_rates flow_meter 3 0.1:1"),
        "Error: Invalid number of rates, expected 2 but got 1"
    );
    assert_eq!(
        rejected(&mut c, "meter_set_rates flow_meter 3 0.1:1 x:2"),
        "Error: Error while parsing rates"
    );
    assert_eq!(
        rejected(&mut c, "register_write flow_packets 1 0x10"),
        "Error: Bad format for value, must be an integer"
    );
    assert_eq!(
        rejected(&mut c, "register_read nope 1"),
        "Error: Invalid register name (nope)"
    );
    assert_eq!(
        rejected(&mut c, "counter_read nope 1"),
        "Error: Invalid counter name (nope)"
    );
    assert_eq!(
        rejected(&mut c, "counter_read flow_counter x"),
        "Error: Bad format for index"
    );
    assert_eq!(
        rejected(&mut c, "meter_get_rates nope 1"),
        "Error: Invalid meter name (nope)"
    );

    // Direct counter: indexed by entry handle, read through the table.
    let mut c = cli("acl_firewall");
    assert_eq!(
        ok(&mut c, &mut api, "counter_read acl_counter 3"),
        "this is the direct counter for table IngressImpl.acl\nacl_counter[3]= (242 bytes, 4 packets)\n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "counter_write acl_counter 3 1 2"),
        "writing to direct counter for table IngressImpl.acl\nacl_counter[3] has been updated\n"
    );
    assert_eq!(
        api.take(),
        vec![
            call("bm_mt_read_counter", ("IngressImpl.acl", 3)),
            call(
                "bm_mt_write_counter",
                (
                    "IngressImpl.acl",
                    3,
                    BmCounterValue {
                        bytes: 2,
                        packets: 1
                    }
                )
            ),
        ]
    );
    let mut api = MockApi::new().fail("bm_counter_read", 2);
    let mut c = cli("stateful");
    let e = c
        .execute(&mut api, "counter_read flow_counter 99")
        .unwrap_err();
    assert_eq!(e.printed(), "Invalid counter operation (INVALID_INDEX)\n");
}

#[test]
fn multicast() {
    let mut c = cli("multicast");
    let mut api = MockApi::new();
    assert_eq!(
        ok(&mut c, &mut api, "mc_mgrp_create 1"),
        "Creating multicast group 1\n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "mc_node_create 0 0 1 2 3"),
        "Creating node with rid 0 , port map 1111 and lag map \nnode was created with handle 0\n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "mc_node_create 10 3 1 | 2"),
        "Creating node with rid 10 , port map 1010 and lag map 100\nnode was created with handle 1\n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "mc_node_associate 1 0"),
        "Associating node 0 to multicast group 1\n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "mc_node_dissociate 1 0"),
        "Dissociating node 0 from multicast group 1\n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "mc_node_update 1 2"),
        "Updating node 1 with port map 100 and lag map \n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "mc_set_lag_membership 2 0 3"),
        "Setting lag membership: 2 <- 1001\n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "mc_node_destroy 1"),
        "Destroying node 1\n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "mc_mgrp_destroy 1"),
        "Destroying multicast group 1\n"
    );
    assert_eq!(
        api.take(),
        vec![
            call("bm_mc_mgrp_create", (1,)),
            call("bm_mc_node_create", (0, "1111", "")),
            call("bm_mc_node_create", (10, "1010", "100")),
            call("bm_mc_node_associate", (1, 0)),
            call("bm_mc_node_dissociate", (1, 0)),
            call("bm_mc_node_update", (1, "100", "")),
            call("bm_mc_set_lag_membership", (2i16, "1001")),
            call("bm_mc_node_destroy", (1,)),
            call("bm_mc_mgrp_destroy", (1,)),
        ]
    );
    assert_eq!(
        rejected(&mut c, "mc_node_create 0 1 1"),
        "Error: Found duplicate port number '1'"
    );
    assert_eq!(
        rejected(&mut c, "mc_node_create 0 -1"),
        "Error: '-1' is not a valid port number"
    );
    assert_eq!(
        rejected(&mut c, "mc_node_create x 1"),
        "Error: Bad format for rid"
    );
    assert_eq!(
        rejected(&mut c, "mc_node_destroy x"),
        "Error: Bad format for node handle"
    );
    assert_eq!(
        rejected(&mut c, "mc_mgrp_create x"),
        "Error: Bad format for multicast group id"
    );
    let mut api = MockApi::new().fail("bm_mc_node_associate", 2);
    let e = c.execute(&mut api, "mc_node_associate 9 0").unwrap_err();
    assert_eq!(
        e.printed(),
        "Associating node 0 to multicast group 9\nInvalid PRE operation (INVALID_MGID)\n"
    );
    api.mc_json = r#"{"mgrps":[{"id":1,"l1_handles":[0]}],"l1_handles":[{"handle":0,"rid":5,"l2_handle":0}],"l2_handles":[{"handle":0,"ports":[1,2],"lags":[]}],"lags":[]}"#.into();
    assert_eq!(
        ok(&mut c, &mut api, "mc_dump"),
        "==========\nMC ENTRIES\n**********\nmgrp(1)\n  -> (L1h=0, rid=5) -> (ports=[1, 2], lags=[])\n==========\nLAGS\n==========\n"
    );
}

#[test]
fn simple_switch_commands() {
    let mut c = cli("mirror_clone");
    let mut api = MockApi::new();
    ok(&mut c, &mut api, "mirroring_add 1 3");
    ok(&mut c, &mut api, "mirroring_add_mc 2 7");
    api.mirror = MirroringSessionConfig {
        port: Some(3),
        mgid: None,
    };
    assert_eq!(
        ok(&mut c, &mut api, "mirroring_get 1"),
        "MirroringSessionConfig(port=3, mgid=None)\n"
    );
    ok(&mut c, &mut api, "mirroring_delete 1");
    ok(&mut c, &mut api, "set_queue_depth 64");
    ok(&mut c, &mut api, "set_queue_depth 64 2");
    ok(&mut c, &mut api, "set_queue_depth 64 2 1");
    ok(&mut c, &mut api, "set_queue_rate 1000");
    ok(&mut c, &mut api, "set_queue_rate 1000 3");
    ok(&mut c, &mut api, "set_queue_rate 1000 3 0");
    assert_eq!(ok(&mut c, &mut api, "get_time_elapsed"), "1234\n");
    assert_eq!(ok(&mut c, &mut api, "get_time_since_epoch"), "5678\n");
    let port = |p| MirroringSessionConfig {
        port: Some(p),
        mgid: None,
    };
    assert_eq!(
        api.take(),
        vec![
            call("mirroring_session_add", (1, port(3))),
            call(
                "mirroring_session_add",
                (
                    2,
                    MirroringSessionConfig {
                        port: None,
                        mgid: Some(7)
                    }
                )
            ),
            call("mirroring_session_get", (1,)),
            call("mirroring_session_delete", (1,)),
            call("set_all_egress_queue_depths", (64,)),
            call("set_egress_queue_depth", (2, 64)),
            call("set_egress_priority_queue_depth", (2, 1, 64)),
            call("set_all_egress_queue_rates", (1000i64,)),
            call("set_egress_queue_rate", (3, 1000i64)),
            call("set_egress_priority_queue_rate", (3, 0, 1000i64)),
            call("get_time_elapsed_us", ()),
            call("get_time_since_epoch_us", ()),
        ]
    );
    assert_eq!(
        rejected(&mut c, "mirroring_add x 3"),
        "Error: Bad format for mirror_id, expected integer"
    );
    assert_eq!(
        rejected(&mut c, "set_queue_depth 64 p"),
        "Error: Bad format for egress_port, expected integer"
    );
    let mut api = MockApi::new().fail("mirroring_session_get", 1);
    let e = c.execute(&mut api, "mirroring_get 4").unwrap_err();
    assert_eq!(
        e.to_string(),
        "Invalid mirroring operation (SESSION_NOT_FOUND)"
    );
}

#[test]
fn value_sets_crc_and_device() {
    let mut c = cli("parser_features");
    let mut api = MockApi::new();
    ok(&mut c, &mut api, "pvs_add custom_ethertypes 0x88B6");
    ok(
        &mut c,
        &mut api,
        "pvs_remove ParserImpl.custom_ethertypes 4660",
    );
    api.pvs = vec![vec![0x88, 0xb6]];
    assert_eq!(ok(&mut c, &mut api, "pvs_get custom_ethertypes"), "88b6\n");
    ok(&mut c, &mut api, "pvs_clear custom_ethertypes");
    assert_eq!(
        ok(&mut c, &mut api, "show_pvs"),
        "ParserImpl.custom_ethertypes   [compressed bitwidth:16]\n"
    );
    assert_eq!(
        api.take(),
        vec![
            call(
                "bm_parse_vset_add",
                ("ParserImpl.custom_ethertypes", &[0x88u8, 0xb6][..])
            ),
            call(
                "bm_parse_vset_remove",
                ("ParserImpl.custom_ethertypes", &[0x12u8, 0x34][..])
            ),
            call("bm_parse_vset_get", ("ParserImpl.custom_ethertypes",)),
            call("bm_parse_vset_clear", ("ParserImpl.custom_ethertypes",)),
        ]
    );
    assert_eq!(
        rejected(&mut c, "pvs_add custom_ethertypes 0x10000"),
        "Error: Input is too large, it should fit within 16 bits"
    );
    assert_eq!(
        rejected(&mut c, "pvs_add nope 1"),
        "Error: Invalid parser value set name (nope)"
    );

    let mut c = cli("hashes");
    ok(
        &mut c,
        &mut api,
        "set_crc16_parameters calc_9 0x1021 0xffff 0x0000 false false",
    );
    ok(
        &mut c,
        &mut api,
        "set_crc32_parameters calc_10 0x1edc6f41 0xffffffff 0xffffffff true 1",
    );
    assert_eq!(
        api.take(),
        vec![
            call(
                "bm_set_crc16_custom_parameters",
                (
                    "calc_9",
                    BmCrc16Config {
                        polynomial: 0x1021,
                        initial_remainder: 0xffff,
                        final_xor_value: 0,
                        data_reflected: false,
                        remainder_reflected: false
                    }
                )
            ),
            call(
                "bm_set_crc32_custom_parameters",
                (
                    "calc_10",
                    BmCrc32Config {
                        polynomial: 0x1edc6f41,
                        initial_remainder: 0xffffffff,
                        final_xor_value: 0xffffffff,
                        data_reflected: true,
                        remainder_reflected: true
                    }
                )
            ),
        ]
    );
    assert_eq!(
        rejected(&mut c, "set_crc16_parameters calc_10 1 1 1 false false"),
        "Error: Invalid crc16_custom name (calc_10)"
    );
    assert_eq!(
        rejected(
            &mut c,
            "set_crc16_parameters calc_9 0x10000 1 1 false false"
        ),
        "Error: Integer cannot fit within 16 bits"
    );
    assert_eq!(
        rejected(&mut c, "set_crc16_parameters calc_9 1 1 1 maybe false"),
        "Error: Invalid bool parameter"
    );

    ok(&mut c, &mut api, "port_add veth0 1");
    ok(&mut c, &mut api, "port_add veth1 2 /tmp/x.pcap");
    ok(&mut c, &mut api, "port_remove 1");
    ok(&mut c, &mut api, "reset_state");
    ok(&mut c, &mut api, "swap_configs");
    api.ports = vec![DevMgrPortInfo {
        port_num: 1,
        iface_name: "veth0".into(),
        is_up: true,
        extra: [("k".to_string(), "v".to_string())].into_iter().collect(),
    }];
    assert_eq!(
        ok(&mut c, &mut api, "show_ports"),
        "  port #       iface name       status  extra info\n==================================================\n    1            veth0            UP    k=v\n"
    );
    api.info = BmConfig {
        device_id: 0,
        thrift_port: 9090,
        notifications_socket: Some("ipc:///tmp/bmv2-0-notifications.ipc".into()),
        elogger_socket: None,
        debugger_socket: None,
    };
    assert_eq!(
        ok(&mut c, &mut api, "switch_info"),
        "device_id                : 0\nthrift_port              : 9090\nnotifications_socket     : ipc:///tmp/bmv2-0-notifications.ipc\nelogger_socket           : None\ndebugger_socket          : None\n"
    );
    assert_eq!(
        api.take(),
        vec![
            call("bm_dev_mgr_add_port", ("veth0", 1, "")),
            call("bm_dev_mgr_add_port", ("veth1", 2, "/tmp/x.pcap")),
            call("bm_dev_mgr_remove_port", (1,)),
            call("bm_reset_state", ()),
            call("bm_swap_configs", ()),
            call("bm_dev_mgr_show_ports", ()),
            call("bm_mgmt_get_info", ()),
        ]
    );
    ok(&mut c, &mut api, "set_toeplitz_hash_key calc_0 00112233");
    assert_eq!(
        api.take(),
        vec![call(
            "bm_set_toeplitz_hash_key",
            ("calc_0", &[0u8, 0x11, 0x22, 0x33][..])
        )]
    );
    assert_eq!(
        rejected(&mut c, "set_toeplitz_hash_key calc_0 001122"),
        "Error: Toeplitz hash key must be a multiple of 4 bytes in length"
    );
}

#[test]
fn program_information() {
    let mut c = cli("basic_l2");
    let mut api = MockApi::new();
    assert_eq!(
        ok(&mut c, &mut api, "table_info dmac"),
        format!(
            "IngressImpl.dmac               [implementation=None, mk=ethernet.dst_addr(exact, 48)]\n{}\nIngressImpl.drop               []\nIngressImpl.forward            [port(9)]\n",
            "*".repeat(80)
        )
    );
    assert_eq!(
        ok(&mut c, &mut api, "table_show_actions dmac"),
        "IngressImpl.drop               []\nIngressImpl.forward            [port(9)]\n"
    );
    let out = ok(&mut c, &mut api, "show_tables");
    assert!(
        out.contains("IngressImpl.dmac               [implementation=None, mk=ethernet.dst_addr(exact, 48)]\n"),
        "{out}"
    );
    let out = ok(&mut c, &mut api, "show_actions");
    assert!(
        out.contains("IngressImpl.forward            [port(9)]\n"),
        "{out}"
    );
    let mut c = cli("ecmp");
    let out = ok(&mut c, &mut api, "table_info ecmp_route");
    assert!(
        out.starts_with("IngressImpl.ecmp_route         [implementation=IngressImpl.ecmp_selector, mk=ipv4.dst_addr(lpm, 32)]\n"),
        "{out}"
    );
    let mut c = cli("acl_firewall");
    let out = ok(&mut c, &mut api, "table_info src_port_filter");
    assert!(
        out.starts_with("IngressImpl.src_port_filter    [implementation=None, mk=ipv4.protocol(exact, 8),\tscalars.metadata_t.l4_src_port(range, 16)]\n"),
        "{out}"
    );
    assert!(api.calls.is_empty());

    let help = ok(&mut c, &mut api, "help");
    assert!(help.starts_with(
        "\nDocumented commands (type help <topic>):\n========================================\n"
    ));
    assert!(
        help.contains("\nUndocumented commands:\n======================\nEOF  greet\n"),
        "{help}"
    );
    for cmd in [
        "table_add",
        "mc_node_create",
        "mirroring_add",
        "set_queue_rate",
        "pvs_add",
        "act_prof_dump",
    ] {
        assert!(help.contains(cmd), "{cmd}");
    }
    assert!(
        ok(&mut c, &mut api, "help table_add")
            .starts_with("Add an entry to a match table: table_add <table name>")
    );
    assert!(ok(&mut c, &mut api, "? table_indirect_create_member").starts_with("[DEPRECATED!] "));
    assert_eq!(ok(&mut c, &mut api, "help nope"), "*** No help on nope\n");
    assert_eq!(ok(&mut c, &mut api, "greet"), "hello\n");
    assert_eq!(ok(&mut c, &mut api, "   "), "");
}

#[test]
fn load_new_config_switches_the_program() {
    let dir = std::env::temp_dir().join(format!("p4jet-control-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("new.json");
    std::fs::write(&path, corpus_json("simple_router")).unwrap();
    let mut c = cli("basic_l2");
    let mut api = MockApi::new();
    assert_eq!(
        ok(
            &mut c,
            &mut api,
            &format!("load_new_config_file {}", path.display())
        ),
        "Loading new Json config\n"
    );
    assert_eq!(api.take().len(), 1);
    assert!(c.program().table("ipv4_lpm").is_some());
    assert_eq!(
        rejected(&mut c, "load_new_config_file /nonexistent/x.json"),
        "Error: Not a valid filename"
    );
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{").unwrap();
    let e = c
        .execute(&mut api, &format!("load_new_config_file {}", bad.display()))
        .unwrap_err();
    assert_eq!(
        e.printed(),
        "Loading new Json config\nError: Not a valid JSON file\n"
    );
    assert!(api.calls.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_script_reports_failed_lines_and_keeps_going() {
    let mut c = cli("basic_l2");
    let mut api = MockApi::new();
    let script = "# setup\n\
                  table_add dmac forward 00:00:00:00:00:10 => 0\n\
                  \n\
                  table_add dmac forward 00:00:00:00:00:11 =>\n\
                  table_add nope forward 1 => 1\n\
                  table_set_default dmac drop\n";
    let outcome = c.run_script(&mut api, script);
    assert!(outcome.failed());
    let lines: Vec<usize> = outcome.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![4, 5]);
    assert_eq!(
        outcome.errors[1].to_string(),
        "line 5: table_add nope forward 1 => 1: Error: Invalid table name (nope)"
    );
    assert!(
        outcome
            .output
            .contains("Entry has been added with handle 0\n")
    );
    assert!(
        outcome
            .output
            .contains("Error: Invalid table name (nope)\n")
    );
    assert!(outcome.output.ends_with("runtime data:        \n"));
    let calls = api.take();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls[1].starts_with("bm_mt_set_default_action"));
    assert!(!c.run_script(&mut api, "table_clear dmac\n").failed());
}

#[test]
fn value_literals() {
    // IPv4 only for 32-bit fields, MAC only for 48, IPv6 only for 128.
    assert_eq!(
        parse_value("192.168.1.10", 32).unwrap(),
        vec![192, 168, 1, 10]
    );
    assert_eq!(parse_value("4294967295", 32).unwrap(), vec![255; 4]);
    assert_eq!(
        parse_value("4294967296", 32).unwrap_err(),
        "Parameter is too large"
    );
    assert_eq!(
        parse_value("1.2.3.4.5", 32).unwrap_err(),
        "Invalid IPv4 address"
    );
    assert_eq!(
        parse_value("1.2.3.x", 32).unwrap_err(),
        "Invalid IPv4 address"
    );
    assert!(parse_value("1.2.3.4", 31).is_err());
    assert_eq!(
        parse_value("aa:bb:cc:dd:ee:ff", 48).unwrap(),
        vec![0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]
    );
    assert_eq!(
        parse_value("0x00aa00000001", 48).unwrap(),
        vec![0, 0xaa, 0, 0, 0, 1]
    );
    assert_eq!(
        parse_value("aa:bb:cc:dd:ee:gg", 48).unwrap_err(),
        "Invalid MAC address"
    );
    assert!(parse_value("aa:bb:cc:dd:ee:ff", 64).is_err());
    let v6 = |s| parse_value(s, 128).unwrap();
    assert_eq!(v6("::"), vec![0; 16]);
    assert_eq!(v6("::1")[15], 1);
    assert_eq!(v6("2001:db8::42")[..4], [0x20, 0x01, 0x0d, 0xb8]);
    assert_eq!(v6("2001:db8::42")[14..], [0, 0x42]);
    assert_eq!(v6("2001:db8:1:2::"), {
        let mut v = vec![0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2];
        v.resize(16, 0);
        v
    });
    assert_eq!(v6("1:2:3:4:5:6:7:8")[14..], [0, 8]);
    assert_eq!(v6("::ffff:10.0.0.1")[12..], [10, 0, 0, 1]);
    assert_eq!(
        parse_value("2001:db8::g", 128).unwrap_err(),
        "Invalid IPv6 address"
    );
    assert_eq!(
        parse_value("1:2:3:4:5:6:7:8:9", 128).unwrap_err(),
        "Invalid IPv6 address"
    );
    assert_eq!(
        parse_value("0x20010db8000000000000000000000001", 128).unwrap()[15],
        1
    );
    // Integers: Python int(x, 0).
    assert_eq!(parse_value("0", 9).unwrap(), vec![0, 0]);
    assert_eq!(parse_value("256", 9).unwrap(), vec![1, 0]);
    assert_eq!(parse_value("0x1_00", 9).unwrap(), vec![1, 0]);
    assert_eq!(parse_value("0B1", 1).unwrap(), vec![1]);
    assert_eq!(parse_value("0o777", 9).unwrap(), vec![1, 0xff]);
    assert_eq!(
        parse_value("007", 8).unwrap_err(),
        "Invalid input, could not cast to integer, try in hex with 0x prefix"
    );
    assert_eq!(
        parse_value("1.5", 8).unwrap_err(),
        "Invalid input, could not cast to integer, try in hex with 0x prefix"
    );
    assert_eq!(
        parse_value("-5", 8).unwrap(),
        vec![0],
        "negative values encode as zeros"
    );
    assert_eq!(parse_value("0xff", 8).unwrap(), vec![0xff]);
    assert_eq!(
        parse_value("0x100", 8).unwrap_err(),
        "Parameter is too large"
    );
    // Only whole bytes are checked: 9 bits take 2 bytes.
    assert_eq!(parse_value("0xffff", 9).unwrap(), vec![0xff, 0xff]);
    assert_eq!(
        parse_value("0x23456789abcdef0123", 72).unwrap(),
        vec![0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23]
    );
    assert_eq!(
        parse_value("0x123456789abcdef0123", 72).unwrap_err(),
        "Parameter is too large"
    );
}

#[test]
fn remaining_commands() {
    // A table with support_timeout (none in the corpus: patch basic_l2).
    let json = corpus_json("basic_l2")
        .replace("\"support_timeout\" : false", "\"support_timeout\" : true");
    let mut c = Cli::new(&json).unwrap();
    let mut api = MockApi::new();
    assert_eq!(
        ok(&mut c, &mut api, "table_set_timeout dmac 2 500"),
        "Setting a 500 ms timeout for entry 2\n"
    );
    assert_eq!(
        api.take(),
        vec![call("bm_mt_set_entry_ttl", ("IngressImpl.dmac", 2, 500))]
    );
    api.entries = vec![BmMtEntry {
        match_key: vec![exact(&[0, 0, 0, 0, 0, 1])],
        options: BmAddEntryOptions { priority: None },
        entry_handle: 2,
        action_entry: BmActionEntry::MbrHandle(4),
        life: Some(BmMtEntryLife {
            timeout_ms: 500,
            time_since_hit_ms: 20,
        }),
    }];
    assert_eq!(
        ok(&mut c, &mut api, "table_dump_entry dmac 2"),
        "Dumping entry 0x2\nMatch key:\n* ethernet.dst_addr   : EXACT     000000000001\nIndex: member(4)\nLife: 20ms since hit, timeout is 500ms\n"
    );
    assert_eq!(ok(&mut c, &mut api, "EOF"), "\n");
    assert_eq!(ok(&mut c, &mut api, "shell echo hi"), "hi\n\n");
    assert_eq!(ok(&mut c, &mut api, "!echo hi"), "hi\n\n");

    // Files written by the CLI.
    let dir = std::env::temp_dir().join(format!("p4jet-control-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    api.config = "{\"x\": 1}".into();
    let cfg = dir.join("cfg.json");
    ok(
        &mut c,
        &mut api,
        &format!("write_config_to_file {}", cfg.display()),
    );
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), "{\"x\": 1}");
    ok(
        &mut c,
        &mut api,
        &format!("serialize_state {}", dir.join("state").display()),
    );
    assert!(dir.join("state").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
    api.take();

    // Legacy aliases of the action profile commands.
    let mut c = cli("ecmp");
    api.members = vec![BmMtActProfMember {
        mbr_handle: 1,
        action_name: "EgressImpl.set_src_mac".into(),
        action_data: vec![vec![0, 0xee, 0, 0, 0, 1]],
    }];
    assert_eq!(
        ok(&mut c, &mut api, "table_dump_member port_smac 1"),
        "Dumping member 1\nAction entry: EgressImpl.set_src_mac - 00ee00000001\n"
    );
    assert_eq!(
        ok(&mut c, &mut api, "act_prof_dump_member smac_profile 1"),
        "Dumping member 1\nAction entry: EgressImpl.set_src_mac - 00ee00000001\n"
    );
    ok(
        &mut c,
        &mut api,
        "table_indirect_modify_member port_smac set_src_mac 1 00:ee:00:00:00:02",
    );
    ok(&mut c, &mut api, "table_indirect_delete_member port_smac 1");
    assert_eq!(
        ok(&mut c, &mut api, "table_indirect_create_group ecmp_route"),
        "Group has been created with handle 0\n"
    );
    ok(
        &mut c,
        &mut api,
        "table_indirect_add_member_to_group ecmp_route 1 0",
    );
    ok(
        &mut c,
        &mut api,
        "table_indirect_remove_member_from_group ecmp_route 1 0",
    );
    ok(&mut c, &mut api, "table_indirect_delete_group ecmp_route 0");
    assert_eq!(
        api.take(),
        vec![
            call("bm_mt_act_prof_get_member", ("EgressImpl.smac_profile", 1)),
            call("bm_mt_act_prof_get_member", ("EgressImpl.smac_profile", 1)),
            call(
                "bm_mt_act_prof_modify_member",
                (
                    "EgressImpl.smac_profile",
                    1,
                    "EgressImpl.set_src_mac",
                    &[vec![0u8, 0xee, 0, 0, 0, 2]][..]
                )
            ),
            call(
                "bm_mt_act_prof_delete_member",
                ("EgressImpl.smac_profile", 1)
            ),
            call(
                "bm_mt_act_prof_create_group",
                ("IngressImpl.ecmp_selector",)
            ),
            call(
                "bm_mt_act_prof_add_member_to_group",
                ("IngressImpl.ecmp_selector", 1, 0)
            ),
            call(
                "bm_mt_act_prof_remove_member_from_group",
                ("IngressImpl.ecmp_selector", 1, 0)
            ),
            call(
                "bm_mt_act_prof_delete_group",
                ("IngressImpl.ecmp_selector", 0)
            ),
        ]
    );

    // Direct counter reset, meter warnings, register index errors from the switch.
    let mut c = cli("acl_firewall");
    assert_eq!(
        ok(&mut c, &mut api, "counter_reset acl_counter"),
        "this is the direct counter for table IngressImpl.acl\n"
    );
    assert_eq!(
        api.take(),
        vec![call("bm_mt_reset_counters", ("IngressImpl.acl",))]
    );
    let mut c = cli("stateful");
    api.rates = vec![];
    assert_eq!(
        ok(&mut c, &mut api, "meter_get_rates flow_meter 0"),
        "WARNING: expected 2 rates but only received 0\n"
    );
    let mut api = MockApi::new().fail("bm_register_read", 2);
    let e = c
        .execute(&mut api, "register_read flow_packets 99")
        .unwrap_err();
    assert_eq!(e.printed(), "Invalid register operation (INVALID_INDEX)\n");
    let mut api = MockApi::new().fail("bm_meter_set_rates", 3);
    let e = c
        .execute(&mut api, "meter_set_rates flow_meter 0 0.2:1 0.1:1")
        .unwrap_err();
    assert_eq!(e.printed(), "Invalid meter operation (BAD_RATES_LIST)\n");
    let mut api = MockApi::new().fail("bm_swap_configs", 1);
    let e = c.execute(&mut api, "swap_configs").unwrap_err();
    assert_eq!(
        e.printed(),
        "Swapping configs\nInvalid swap operation (CONFIG_SWAP_DISABLED)\n"
    );
    let mut api = MockApi::new().fail("bm_reset_state", 0);
    let e = c.execute(&mut api, "reset_state").unwrap_err();
    assert_eq!(e.printed(), "Error: bm_reset_state failed\n");
    assert_eq!(
        e.kind,
        CliErrorKind::Api {
            message: "Error: bm_reset_state failed".into(),
            code: None
        }
    );
}

#[test]
fn cli_from_switch_config() {
    let mut api = MockApi::new();
    api.config = corpus_json("basic_l2");
    let c = Cli::from_switch(&mut api).unwrap();
    assert!(c.program().table("dmac").is_some());
    assert_eq!(api.take(), vec![call("bm_get_config", ())]);
    assert!(Cli::is_command("table_add") && !Cli::is_command("table_addd"));
    assert!(Cli::command_names().len() > 80);
}
