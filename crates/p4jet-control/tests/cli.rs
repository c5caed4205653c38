//! simple_switch_CLI commands against a switch in memory (or a null runtime),
//! recorded by the shared test double: the right update with the right bytes, the
//! right output, and no call at all for malformed commands.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use p4jet_control::cli::{Cli, CliErrorKind, parse_value};
use p4jet_runtime::bmv2::{Bmv2Code, TableOperationErrorCode as TC};
use p4jet_runtime::schema::ObjectKind;
use p4jet_runtime::testing::Call;
use p4jet_runtime::{
    ActionCall, CloneSession, CloneTarget, CounterId, CounterValue, CrcConfig, EntryAction,
    GroupId, McNodeHandle, MemberId, MeterConfig, MeterId, MeterRate, ProfileId, RegisterId,
    Runtime, RuntimeError, Update, ValueSetId, WriteMode,
};

fn cli(program: &str) -> Cli {
    Cli::new(&corpus_json(program)).expect("corpus JSON loads")
}

#[test]
fn table_add_exact_prints_like_simple_switch_cli() {
    let mut e = on_switch("basic_l2");
    let out = e.ok("table_add dmac forward 00:00:00:00:00:10 => 1");
    assert_eq!(
        out,
        "Adding entry to exact match table dmac\n\
         match key:           EXACT-00:00:00:00:00:10\n\
         action:              forward\n\
         runtime data:        00:01\n\
         Entry has been added with handle 0\n"
    );
    assert_eq!(
        e.take(),
        vec![e.add(
            "IngressImpl.dmac",
            vec![ex(&[0, 0, 0, 0, 0, 0x10])],
            "IngressImpl.forward",
            vec![vec![0, 1]],
            0
        )]
    );
    // Fully qualified names work too, and handles come from the switch.
    let out = e.ok("table_add IngressImpl.dmac IngressImpl.forward 0x000000000011 => 0x1ff");
    assert!(
        out.ends_with("Entry has been added with handle 1\n"),
        "{out}"
    );
    assert!(out.contains("runtime data:        01:ff\n"));
    // No parameters: the runtime data line keeps its trailing space.
    let out = e.ok("table_add dmac IngressImpl.drop 0x12 =>");
    assert!(out.contains("\nruntime data:        \n"), "{out:?}");
}

#[test]
fn table_add_errors_from_the_switch() {
    let mut e = on_switch("basic_l2");
    e.ok("table_add dmac forward 00:00:00:00:00:10 => 1");
    // the same key again: the switch's own answer
    let err = e.err("table_add dmac forward 00:00:00:00:00:10 => 1");
    assert_eq!(err.to_string(), "Invalid table operation (DUPLICATE_ENTRY)");
    assert_eq!(
        err.kind,
        CliErrorKind::Api {
            message: "Invalid table operation (DUPLICATE_ENTRY)".into(),
            code: Some("DUPLICATE_ENTRY")
        }
    );
    assert!(
        err.printed()
            .starts_with("Adding entry to exact match table dmac\n")
    );
    assert!(
        err.printed()
            .ends_with("runtime data:        00:01\nInvalid table operation (DUPLICATE_ENTRY)\n")
    );
    // an injected failure prints the same way
    e.rt.fail_when(
        |c| matches!(c, Call::Write(..)),
        Bmv2Code::Table(TC::TABLE_FULL).error("full"),
    );
    let err = e.err("table_add dmac forward 00:00:00:00:00:20 => 1");
    assert_eq!(err.to_string(), "Invalid table operation (TABLE_FULL)");
}

#[test]
fn table_add_ternary_lpm_range_keys() {
    let mut e = on_switch("acl_firewall");
    let out = e.ok(
        "table_add acl deny 10.66.0.0&&&255.255.0.0 0&&&0 6&&&0xff 0x50&&&0xffff 0&&&0 0x02&&&0x12 => 7",
    );
    assert!(out.starts_with("Adding entry to ternary match table acl\nmatch key:           TERNARY-0a:42:00:00 &&& ff:ff:00:00\tTERNARY-00:00:00:00 &&& 00:00:00:00\tTERNARY-06 &&& ff\t"), "{out}");
    assert_eq!(
        e.take(),
        vec![e.add(
            "IngressImpl.acl",
            vec![
                tern(&[10, 66, 0, 0], &[255, 255, 0, 0]),
                tern(&[0, 0, 0, 0], &[0, 0, 0, 0]),
                tern(&[6], &[0xff]),
                tern(&[0, 0x50], &[0xff, 0xff]),
                tern(&[0], &[0]),
                tern(&[2], &[0x12]),
            ],
            "IngressImpl.deny",
            vec![],
            7
        )]
    );

    // Range key with the exact key before it, priority last.
    e.ok("table_add src_port_filter deny_source 17 0->1023 => 20");
    assert_eq!(
        e.take(),
        vec![e.add(
            "IngressImpl.src_port_filter",
            vec![ex(&[17]), range(&[0, 0], &[3, 0xff])],
            "IngressImpl.deny_source",
            vec![],
            20
        )]
    );

    // LPM (simple_router) and IPv6 LPM.
    let mut e = on_switch("simple_router");
    let out = e.ok("table_add ipv4_lpm set_next_hop 10.1.0.0/16 => 192.168.0.2 2");
    assert!(
        out.contains("match key:           LPM-0a:01:00:00/16\n"),
        "{out}"
    );
    assert!(
        out.contains("runtime data:        c0:a8:00:02\t00:02\n"),
        "{out}"
    );
    assert_eq!(
        e.take(),
        vec![e.add(
            "IngressImpl.ipv4_lpm",
            vec![lpm(&[10, 1, 0, 0], 16)],
            "IngressImpl.set_next_hop",
            vec![vec![192, 168, 0, 2], vec![0, 2]],
            0
        )]
    );
    let mut e = on_switch("ipv6_router");
    e.ok("table_add routes route 2001:db8:1::/48 => 2 2");
    let mut key = vec![0x20, 0x01, 0x0d, 0xb8, 0, 1];
    key.resize(16, 0);
    assert_eq!(
        e.take(),
        vec![e.add(
            "IngressImpl.routes",
            vec![lpm(&key, 48)],
            "IngressImpl.route",
            vec![vec![0, 2], vec![0, 2]],
            0
        )]
    );
    e.ok("table_add routes route ::/0 => 4 0");
    assert_eq!(
        e.take(),
        vec![e.add(
            "IngressImpl.routes",
            vec![lpm(&[0; 16], 0)],
            "IngressImpl.route",
            vec![vec![0, 4], vec![0, 0]],
            0
        )]
    );
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
    let mut e = on_null("basic_l2");
    let out = e.ok("table_set_default dmac forward 3");
    assert_eq!(
        out,
        "Setting default action of dmac\naction:              forward\nruntime data:        00:03\n"
    );
    let dmac = e.t("IngressImpl.dmac");
    let fwd_id = e.a("IngressImpl.dmac", "IngressImpl.forward");
    let fwd = |args| EntryAction::Direct(ActionCall::new(fwd_id, args));
    assert_eq!(
        e.take(),
        vec![Update::SetDefault {
            table: dmac,
            action: fwd(vec![vec![0, 3]])
        }]
    );
    assert_eq!(
        e.ok("table_modify dmac forward 3 => 2"),
        "Modifying entry 3 for exact match table dmac\n"
    );
    assert_eq!(
        e.ok("table_modify dmac forward 4 1"),
        "Modifying entry 4 for exact match table dmac\n"
    );
    assert_eq!(e.ok("table_delete dmac 3"), "Deleting entry 3 from dmac\n");
    assert_eq!(e.ok("table_clear dmac"), "");
    assert_eq!(e.ok("table_reset_default dmac"), "");
    assert_eq!(
        e.take(),
        vec![
            Update::ModifyEntry {
                table: dmac,
                entry: h(3),
                action: fwd(vec![vec![0, 2]])
            },
            Update::ModifyEntry {
                table: dmac,
                entry: h(4),
                action: fwd(vec![vec![0, 1]])
            },
            Update::DeleteEntry {
                table: dmac,
                entry: h(3)
            },
            Update::ClearEntries {
                table: dmac,
                reset_default: false
            },
            Update::ResetDefault { table: dmac },
        ]
    );
    // the count comes from the switch
    let mut e = on_switch("basic_l2");
    for i in 0..4 {
        e.ok(&format!("table_add dmac forward 00:00:00:00:00:1{i} => 1"));
    }
    e.calls();
    assert_eq!(e.ok("table_num_entries dmac"), "4\n");
    assert_eq!(e.calls(), vec![format!("entry_count({dmac:?},)")]);
}

#[test]
fn table_dump_format() {
    let mut e = on_switch("acl_firewall");
    e.ok("table_add src_port_filter deny_source 17 0->1023 => 20");
    let out = e.ok("table_dump src_port_filter");
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
    let mut e = on_switch("basic_l2");
    for i in 0..27u8 {
        e.ok(&format!(
            "table_add dmac forward 00:00:00:00:01:{i:02x} => 1"
        ));
    }
    e.ok("table_add dmac forward 00:00:00:00:00:10 => 1");
    assert_eq!(
        e.ok("table_dump_entry dmac 27"),
        "Dumping entry 0x1b\nMatch key:\n* ethernet.dst_addr   : EXACT     000000000010\nAction entry: IngressImpl.forward - 0001\n"
    );
    let out = e.ok("table_dump dmac");
    assert!(
        out.ends_with("Dumping default entry\nAction entry: IngressImpl.drop - \n==========\n"),
        "{out}"
    );
    let out = e.ok("table_dump_entry_from_key dmac 00:00:00:00:00:10");
    assert!(out.starts_with("Dumping entry 0x1b\n"), "{out}");
    let err = e.err("table_dump_entry dmac 99");
    assert_eq!(err.to_string(), "Invalid table operation (INVALID_HANDLE)");
    // an indirect table without default member has no default entry
    let mut e = on_switch("ecmp");
    let out = e.ok("table_dump ecmp_route");
    assert!(
        out.ends_with("Dumping default entry\nEMPTY\n==========\n"),
        "{out}"
    );
}

#[test]
fn action_profiles_and_indirect_tables() {
    let mut e = on_switch("ecmp");
    assert_eq!(
        e.ok("act_prof_create_member ecmp_selector set_next_hop 00:00:00:00:0d:01 1"),
        "Member has been created with handle 0\n"
    );
    assert_eq!(
        e.ok("act_prof_create_group IngressImpl.ecmp_selector"),
        "Group has been created with handle 0\n"
    );
    e.ok("act_prof_add_member_to_group ecmp_selector 0 0");
    assert_eq!(
        e.ok("table_indirect_add_with_group ecmp_route 10.0.0.0/8 => 0"),
        "Adding entry to indirect match table IngressImpl.ecmp_route\nEntry has been added with handle 0\n"
    );
    e.ok("table_indirect_add ecmp_route 0.0.0.0/0 => 0");
    e.ok("act_prof_create_member smac_profile set_src_mac 00:ee:00:00:00:00");
    e.ok("table_indirect_add port_smac 3 => 0");
    e.ok("table_indirect_set_default port_smac 0");
    e.ok("table_indirect_set_default_with_group ecmp_route 0");
    e.ok("table_indirect_reset_default port_smac");
    e.ok("table_indirect_delete port_smac 0");
    // the group's entries go first, then the group and its member
    e.ok("table_indirect_delete ecmp_route 0");
    e.ok("table_indirect_delete ecmp_route 1");
    e.ok("table_indirect_reset_default ecmp_route");
    e.ok("act_prof_remove_member_from_group ecmp_selector 0 0");
    e.ok("act_prof_modify_member smac_profile set_src_mac 0 => 00:ee:00:00:00:01");
    e.ok("act_prof_delete_group ecmp_selector 0");
    e.ok("act_prof_delete_member ecmp_selector 0");
    // Legacy alias: the table's action profile is used.
    assert_eq!(
        e.ok("table_indirect_create_member port_smac NoAction"),
        "Member has been created with handle 1\n"
    );
    let sel = ProfileId(e.id(ObjectKind::Profile, "IngressImpl.ecmp_selector"));
    let smac = ProfileId(e.id(ObjectKind::Profile, "EgressImpl.smac_profile"));
    let route = e.t("IngressImpl.ecmp_route");
    let port_smac = e.t("EgressImpl.port_smac");
    let nh = e.pa("IngressImpl.ecmp_selector", "IngressImpl.set_next_hop");
    let set_src = e.pa("EgressImpl.smac_profile", "EgressImpl.set_src_mac");
    let no_action = e.pa("EgressImpl.smac_profile", "NoAction");
    assert_eq!(
        e.take(),
        vec![
            Update::AddMember {
                profile: sel,
                id: None,
                action: ActionCall::new(nh, vec![vec![0, 0, 0, 0, 0x0d, 1], vec![0, 1]])
            },
            Update::AddGroup {
                profile: sel,
                id: None,
                max_size: 0
            },
            Update::AddToGroup {
                profile: sel,
                group: GroupId(0),
                member: MemberId(0)
            },
            e.add_indirect(
                "IngressImpl.ecmp_route",
                vec![lpm(&[10, 0, 0, 0], 8)],
                EntryAction::Group(GroupId(0)),
                0
            ),
            e.add_indirect(
                "IngressImpl.ecmp_route",
                vec![lpm(&[0, 0, 0, 0], 0)],
                EntryAction::Member(MemberId(0)),
                0
            ),
            Update::AddMember {
                profile: smac,
                id: None,
                action: ActionCall::new(set_src, vec![vec![0, 0xee, 0, 0, 0, 0]])
            },
            e.add_indirect(
                "EgressImpl.port_smac",
                vec![ex(&[0, 3])],
                EntryAction::Member(MemberId(0)),
                0
            ),
            Update::SetDefault {
                table: port_smac,
                action: EntryAction::Member(MemberId(0))
            },
            Update::SetDefault {
                table: route,
                action: EntryAction::Group(GroupId(0))
            },
            Update::ResetDefault { table: port_smac },
            Update::DeleteEntry {
                table: port_smac,
                entry: h(0)
            },
            Update::DeleteEntry {
                table: route,
                entry: h(0)
            },
            Update::DeleteEntry {
                table: route,
                entry: h(1)
            },
            Update::ResetDefault { table: route },
            Update::RemoveFromGroup {
                profile: sel,
                group: GroupId(0),
                member: MemberId(0)
            },
            Update::ModifyMember {
                profile: smac,
                member: MemberId(0),
                action: ActionCall::new(set_src, vec![vec![0, 0xee, 0, 0, 0, 1]])
            },
            Update::DeleteGroup {
                profile: sel,
                group: GroupId(0)
            },
            Update::DeleteMember {
                profile: sel,
                member: MemberId(0)
            },
            Update::AddMember {
                profile: smac,
                id: None,
                action: ActionCall::new(no_action, vec![])
            },
        ]
    );
    let mut c = cli("ecmp");
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
    let mut e = on_switch("ecmp");
    e.ok("act_prof_create_member ecmp_selector set_next_hop 00:00:00:00:0d:01 1");
    e.ok("act_prof_create_member ecmp_selector set_next_hop 00:00:00:00:0d:02 2");
    e.ok("act_prof_create_member ecmp_selector set_next_hop 00:00:00:00:0d:03 3");
    e.ok("act_prof_create_group ecmp_selector");
    for m in 0..3 {
        e.ok(&format!("act_prof_add_member_to_group ecmp_selector {m} 0"));
    }
    let out = e.ok("act_prof_dump ecmp_selector");
    assert!(
        out.starts_with("==========\nMEMBERS\n**********\nDumping member 0\nAction entry: IngressImpl.set_next_hop - 000000000d01, 0001\n"),
        "{out}"
    );
    assert!(
        out.ends_with("==========\nGROUPS\n**********\nDumping group 0\nMembers: [0, 1, 2]\n"),
        "{out}"
    );
    assert_eq!(
        e.ok("table_dump_group ecmp_route 0"),
        "Dumping group 0\nMembers: [0, 1, 2]\n"
    );
    e.ok("table_indirect_add_with_group ecmp_route 10.0.0.0/8 => 0");
    let out = e.ok("table_dump ecmp_route");
    assert!(
        out.starts_with("==========\nTABLE ENTRIES\n**********\nDumping entry 0x0\nMatch key:\n* ipv4.dst_addr       : LPM       0a000000/8\nIndex: group(0)\n==========\nMEMBERS\n"),
        "{out}"
    );
}

#[test]
fn counters_meters_registers() {
    let mut e = on_switch("stateful");
    let flow_counter = CounterId(e.id(ObjectKind::Counter, "IngressImpl.flow_counter"));
    let port_counter = CounterId(e.id(ObjectKind::Counter, "IngressImpl.port_counter"));
    e.rt.apply(Update::WriteCounter {
        counter: flow_counter,
        index: 1,
        value: CounterValue {
            bytes: 242,
            packets: 4,
        },
    })
    .unwrap();
    e.take();
    assert_eq!(
        e.ok("counter_read flow_counter 1"),
        "flow_counter[1]= (242 bytes, 4 packets)\n"
    );
    assert_eq!(e.calls(), vec![format!("counters({flow_counter:?}, 1, 2)")]);
    assert_eq!(
        e.ok("counter_write IngressImpl.port_counter 2 5 300"),
        "IngressImpl.port_counter[2] has been updated\n"
    );
    assert_eq!(e.ok("counter_reset port_counter"), "");
    e.ok("meter_set_rates IngressImpl.flow_meter 3 0.000001:1 0.000002:2");
    e.ok("table_add classify set_class 0x00000030&&&0xFFFFFFF0 => 3 20");
    e.ok("meter_set_rates class_meter 0 0.0001:100 0.0002:200");
    e.ok("meter_array_set_rates flow_meter 1e-9:10 2e-9:20");
    e.ok("meter_set_rates flow_meter 3 1e-9:100 0.5:200");
    assert_eq!(
        e.ok("meter_get_rates flow_meter 3"),
        "0: info rate = 1e-09, burst size = 100\n1: info rate = 0.5, burst size = 200\n"
    );
    assert_eq!(
        e.ok("meter_get_rates class_meter 0"),
        "0: info rate = 0.0001, burst size = 100\n1: info rate = 0.0002, burst size = 200\n"
    );
    let flow_packets = RegisterId(e.id(ObjectKind::Register, "IngressImpl.flow_packets"));
    let port_bytes = RegisterId(e.id(ObjectKind::Register, "IngressImpl.port_bytes"));
    // Written past the recorder: the switch holds what the CLI reads.
    for (r, i, v) in [
        (flow_packets, 1, 100u64),
        (port_bytes, 1, 100),
        (port_bytes, 3, 7),
    ] {
        Runtime::apply(
            e.rt.inner(),
            Update::WriteRegister {
                register: r,
                start: i,
                end: i + 1,
                value: v.to_be_bytes().to_vec(),
            },
        )
        .unwrap();
    }
    assert_eq!(
        e.ok("register_read flow_packets 1"),
        "flow_packets[1]= 100\n"
    );
    let size = e.schema.register(port_bytes).unwrap().size as usize;
    let mut want = vec!["0"; size];
    want[1] = "100";
    want[3] = "7";
    assert_eq!(
        e.ok("register_read port_bytes"),
        format!("port_bytes= {}\n", want.join(", "))
    );
    e.ok("register_write IngressImpl.flow_packets 5 100");
    e.ok("register_reset flow_packets");
    let r = |u, b| MeterRate {
        units_per_us: u,
        burst: b,
    };
    let flow_meter = MeterId(e.id(ObjectKind::Meter, "IngressImpl.flow_meter"));
    let classify = e.t("IngressImpl.classify");
    let updates = e.take();
    let want = vec![
        Update::WriteCounter {
            counter: port_counter,
            index: 2,
            value: CounterValue {
                bytes: 300,
                packets: 5,
            },
        },
        Update::ResetCounter {
            counter: port_counter,
        },
        Update::SetMeter {
            meter: flow_meter,
            index: Some(3),
            config: MeterConfig {
                rates: vec![r(0.000001, 1), r(0.000002, 2)],
            },
        },
        // (the classify entry)
        updates[3].clone(),
        // A direct meter is configured through its table.
        Update::SetDirectMeter {
            table: classify,
            entry: h(0),
            config: MeterConfig {
                rates: vec![r(0.0001, 100), r(0.0002, 200)],
            },
        },
        Update::SetMeter {
            meter: flow_meter,
            index: None,
            config: MeterConfig {
                rates: vec![r(1e-9, 10), r(2e-9, 20)],
            },
        },
        Update::SetMeter {
            meter: flow_meter,
            index: Some(3),
            config: MeterConfig {
                rates: vec![r(1e-9, 100), r(0.5, 200)],
            },
        },
        Update::WriteRegister {
            register: flow_packets,
            start: 5,
            end: 6,
            value: vec![0, 0, 0, 0x64],
        },
        Update::ResetRegister {
            register: flow_packets,
        },
    ];
    assert!(matches!(updates[3], Update::AddEntry { .. }));
    assert_eq!(updates, want);
    let mut c = cli("stateful");
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
    let mut e = on_switch("acl_firewall");
    for i in 0..4 {
        e.ok(&format!(
            "table_add acl permit 0&&&0 0&&&0 {i}&&&0xff 0&&&0 0&&&0 0&&&0 => 1"
        ));
    }
    let acl = e.t("IngressImpl.acl");
    e.rt.apply(Update::WriteDirectCounter {
        table: acl,
        entry: h(3),
        value: CounterValue {
            bytes: 242,
            packets: 4,
        },
    })
    .unwrap();
    e.take();
    assert_eq!(
        e.ok("counter_read acl_counter 3"),
        "this is the direct counter for table IngressImpl.acl\nacl_counter[3]= (242 bytes, 4 packets)\n"
    );
    assert_eq!(
        e.ok("counter_write acl_counter 3 1 2"),
        "writing to direct counter for table IngressImpl.acl\nacl_counter[3] has been updated\n"
    );
    assert_eq!(
        e.take(),
        vec![Update::WriteDirectCounter {
            table: acl,
            entry: h(3),
            value: CounterValue {
                bytes: 2,
                packets: 1
            }
        }]
    );
    let mut e = on_switch("stateful");
    let err = e.err("counter_read flow_counter 99999");
    assert_eq!(err.printed(), "Invalid counter operation (INVALID_INDEX)\n");
}

#[test]
fn multicast() {
    let mut e = on_switch("multicast");
    assert_eq!(e.ok("mc_mgrp_create 1"), "Creating multicast group 1\n");
    assert_eq!(
        e.ok("mc_node_create 0 0 1 2 3"),
        "Creating node with rid 0 , port map 1111 and lag map \nnode was created with handle 0\n"
    );
    assert_eq!(
        e.ok("mc_node_create 10 3 1 | 2"),
        "Creating node with rid 10 , port map 1010 and lag map 100\nnode was created with handle 1\n"
    );
    assert_eq!(
        e.ok("mc_node_associate 1 0"),
        "Associating node 0 to multicast group 1\n"
    );
    assert_eq!(
        e.ok("mc_node_dissociate 1 0"),
        "Dissociating node 0 from multicast group 1\n"
    );
    assert_eq!(
        e.ok("mc_node_update 1 2"),
        "Updating node 1 with port map 100 and lag map \n"
    );
    assert_eq!(
        e.ok("mc_set_lag_membership 2 0 3"),
        "Setting lag membership: 2 <- 1001\n"
    );
    assert_eq!(e.ok("mc_node_destroy 1"), "Destroying node 1\n");
    assert_eq!(e.ok("mc_mgrp_destroy 1"), "Destroying multicast group 1\n");
    assert_eq!(
        e.take(),
        vec![
            Update::McGroupCreate { group: 1 },
            Update::McNodeCreate {
                rid: 0,
                ports: vec![0, 1, 2, 3],
                lags: vec![]
            },
            Update::McNodeCreate {
                rid: 10,
                ports: vec![1, 3],
                lags: vec![2]
            },
            Update::McNodeAssociate {
                group: 1,
                node: McNodeHandle(0)
            },
            Update::McNodeDissociate {
                group: 1,
                node: McNodeHandle(0)
            },
            Update::McNodeUpdate {
                node: McNodeHandle(1),
                ports: vec![2],
                lags: vec![]
            },
            Update::McSetLag {
                lag: 2,
                ports: vec![0, 3]
            },
            Update::McNodeDestroy {
                node: McNodeHandle(1)
            },
            Update::McGroupDestroy { group: 1 },
        ]
    );
    let mut c = cli("multicast");
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
    let err = e.err("mc_node_associate 9 0");
    assert_eq!(
        err.printed(),
        "Associating node 0 to multicast group 9\nInvalid PRE operation (INVALID_MGRP_HANDLE)\n"
    );
    e.ok("mc_mgrp_create 1");
    e.ok("mc_node_create 5 1 2");
    e.ok("mc_node_associate 1 1");
    assert_eq!(
        e.ok("mc_dump"),
        "==========\nMC ENTRIES\n**********\nmgrp(1)\n  -> (L1h=1, rid=5) -> (ports=[1, 2], lags=[])\n==========\nLAGS\nlag(2) -> ports=[0, 3]\n==========\n"
    );
}

#[test]
fn simple_switch_commands() {
    let mut e = on_switch("mirror_clone");
    e.ok("mirroring_add 1 3");
    e.ok("mirroring_add_mc 2 7");
    assert_eq!(
        e.ok("mirroring_get 1"),
        "MirroringSessionConfig(port=3, mgid=None)\n"
    );
    e.ok("mirroring_delete 1");
    e.ok("set_queue_depth 64");
    e.ok("set_queue_depth 64 2");
    e.ok("set_queue_depth 64 2 0");
    e.ok("set_queue_rate 1000");
    e.ok("set_queue_rate 1000 3");
    e.ok("set_queue_rate 1000 3 0");
    assert_eq!(e.ok("get_time_elapsed"), "0\n");
    let epoch: u64 = e
        .ok("get_time_since_epoch")
        .trim()
        .parse()
        .expect("a number");
    assert!(epoch > 1_600_000_000_000_000, "{epoch}");
    let session = |id, port, mgid| Update::WriteCloneSession {
        mode: WriteMode::Upsert,
        session: CloneSession {
            id,
            target: CloneTarget::Bmv2 { port, mgid },
            class_of_service: 0,
            packet_length_bytes: 0,
        },
    };
    assert_eq!(
        e.calls(),
        vec![
            "write(1 updates)",
            "write(1 updates)",
            "clone_session(1,)",
            "write(1 updates)",
            "set_queue(All, Depth(64))",
            "set_queue(Port(2), Depth(64))",
            "set_queue(Priority(2, 0), Depth(64))",
            "set_queue(All, Rate(1000))",
            "set_queue(Port(3), Rate(1000))",
            "set_queue(Priority(3, 0), Rate(1000))",
            "clock()",
            "clock()",
        ]
    );
    e.ok("mirroring_add 1 3");
    e.ok("mirroring_add_mc 2 7");
    e.ok("mirroring_delete 1");
    assert_eq!(
        e.take(),
        vec![
            session(1, Some(3), None),
            session(2, None, Some(7)),
            Update::DeleteCloneSession { id: 1 }
        ]
    );
    let mut c = cli("mirror_clone");
    assert_eq!(
        rejected(&mut c, "mirroring_add x 3"),
        "Error: Bad format for mirror_id, expected integer"
    );
    assert_eq!(
        rejected(&mut c, "set_queue_depth 64 p"),
        "Error: Bad format for egress_port, expected integer"
    );
    let err = e.err("mirroring_get 4");
    assert_eq!(
        err.to_string(),
        "Invalid mirroring operation (SESSION_NOT_FOUND)"
    );
}

#[test]
fn value_sets_crc_and_device() {
    let mut e = on_switch("parser_features");
    e.ok("pvs_add custom_ethertypes 0x88B6");
    e.ok("pvs_remove ParserImpl.custom_ethertypes 4660");
    assert_eq!(e.ok("pvs_get custom_ethertypes"), "88b6\n");
    e.ok("pvs_clear custom_ethertypes");
    assert_eq!(e.ok("pvs_get custom_ethertypes"), "");
    assert_eq!(
        e.ok("show_pvs"),
        "ParserImpl.custom_ethertypes   [compressed bitwidth:16]\n"
    );
    let vs = ValueSetId(e.id(ObjectKind::ValueSet, "ParserImpl.custom_ethertypes"));
    assert_eq!(
        e.take(),
        vec![
            Update::AddValueSetMember {
                value_set: vs,
                value: vec![0x88, 0xb6]
            },
            Update::RemoveValueSetMember {
                value_set: vs,
                value: vec![0x12, 0x34]
            },
            Update::ClearValueSet { value_set: vs },
        ]
    );
    let mut c = cli("parser_features");
    assert_eq!(
        rejected(&mut c, "pvs_add custom_ethertypes 0x10000"),
        "Error: Input is too large, it should fit within 16 bits"
    );
    assert_eq!(
        rejected(&mut c, "pvs_add nope 1"),
        "Error: Invalid parser value set name (nope)"
    );

    let mut e = on_switch("hashes");
    e.ok("set_crc16_parameters calc_9 0x1021 0xffff 0x0000 false false");
    e.ok("set_crc32_parameters calc_10 0x1edc6f41 0xffffffff 0xffffffff true 1");
    let schema = e.schema.clone();
    let calc = |n: &str| schema.calculation_by_name(n).unwrap();
    let crc16 = CrcConfig {
        width: 16,
        polynomial: 0x1021,
        initial_remainder: 0xffff,
        final_xor_value: 0,
        data_reflected: false,
        remainder_reflected: false,
    };
    let crc32 = CrcConfig {
        width: 32,
        polynomial: 0x1edc6f41,
        initial_remainder: 0xffffffff,
        final_xor_value: 0xffffffff,
        data_reflected: true,
        remainder_reflected: true,
    };
    assert_eq!(
        e.calls(),
        vec![
            format!("set_crc({:?}, {crc16:?})", calc("calc_9")),
            format!("set_crc({:?}, {crc32:?})", calc("calc_10")),
        ]
    );
    let mut c = cli("hashes");
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

    e.ok("port_add veth0 1");
    e.ok("port_add veth1 2 /tmp/x.pcap");
    e.ok("port_remove 1");
    e.ok("reset_state");
    assert_eq!(
        e.ok("show_ports"),
        "  port #       iface name       status  extra info\n==================================================\n    2            veth1            UP    in_pcap=/tmp/x.pcap; out_pcap=/tmp/x.pcap\n"
    );
    assert_eq!(
        e.ok("switch_info"),
        "device_id                : 0\nthrift_port              : 9090\nnotifications_socket     : ipc:///tmp/bmv2-0-notifications.ipc\nelogger_socket           : None\ndebugger_socket          : None\n"
    );
    let calls = e.calls();
    assert!(
        calls[0].starts_with("add_port(PortInfo { port: 1, iface: \"veth0\", pcap: None"),
        "{calls:?}"
    );
    assert!(
        calls[1].starts_with(
            "add_port(PortInfo { port: 2, iface: \"veth1\", pcap: Some(\"/tmp/x.pcap\")"
        ),
        "{calls:?}"
    );
    assert_eq!(
        &calls[2..],
        ["remove_port(1,)", "reset_state()", "ports()", "info()"]
    );
    // No corpus program has a toeplitz calculation: the switch refuses,
    // a runtime that accepts sees the key.
    assert_eq!(
        e.err("set_toeplitz_hash_key calc_0 00112233").printed(),
        "Invalid Toeplitz hash operation (WRONG_TYPE_CALCULATION)\n"
    );
    e.calls();
    let mut e = on_null("hashes");
    e.ok("set_toeplitz_hash_key calc_0 00112233");
    assert_eq!(
        e.calls(),
        vec![format!(
            "set_toeplitz_key({:?}, [0, 17, 34, 51])",
            calc("calc_0")
        )]
    );
    let mut c = cli("hashes");
    assert_eq!(
        rejected(&mut c, "set_toeplitz_hash_key calc_0 001122"),
        "Error: Toeplitz hash key must be a multiple of 4 bytes in length"
    );
}

#[test]
fn program_information() {
    let mut e = on_null("basic_l2");
    assert_eq!(
        e.ok("table_info dmac"),
        format!(
            "IngressImpl.dmac               [implementation=None, mk=ethernet.dst_addr(exact, 48)]\n{}\nIngressImpl.drop               []\nIngressImpl.forward            [port(9)]\n",
            "*".repeat(80)
        )
    );
    assert_eq!(
        e.ok("table_show_actions dmac"),
        "IngressImpl.drop               []\nIngressImpl.forward            [port(9)]\n"
    );
    let out = e.ok("show_tables");
    assert!(
        out.contains("IngressImpl.dmac               [implementation=None, mk=ethernet.dst_addr(exact, 48)]\n"),
        "{out}"
    );
    let out = e.ok("show_actions");
    assert!(
        out.contains("IngressImpl.forward            [port(9)]\n"),
        "{out}"
    );
    let mut e2 = on_null("ecmp");
    let out = e2.ok("table_info ecmp_route");
    assert!(
        out.starts_with("IngressImpl.ecmp_route         [implementation=IngressImpl.ecmp_selector, mk=ipv4.dst_addr(lpm, 32)]\n"),
        "{out}"
    );
    let mut e3 = on_null("acl_firewall");
    let out = e3.ok("table_info src_port_filter");
    assert!(
        out.starts_with("IngressImpl.src_port_filter    [implementation=None, mk=ipv4.protocol(exact, 8),\tscalars.metadata_t.l4_src_port(range, 16)]\n"),
        "{out}"
    );
    assert!(e.rt.calls.is_empty() && e2.rt.calls.is_empty() && e3.rt.calls.is_empty());

    let help = e.ok("help");
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
        e.ok("help table_add")
            .starts_with("Add an entry to a match table: table_add <table name>")
    );
    assert!(
        e.ok("? table_indirect_create_member")
            .starts_with("[DEPRECATED!] ")
    );
    assert_eq!(e.ok("help nope"), "*** No help on nope\n");
    assert_eq!(e.ok("greet"), "hello\n");
    assert_eq!(e.ok("   "), "");
    assert!(e.rt.calls.is_empty());
}

#[test]
fn load_new_config_switches_the_program() {
    let dir = std::env::temp_dir().join(format!("p4jet-control-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("new.json");
    std::fs::write(&path, corpus_json("simple_router")).unwrap();
    let mut e = on_switch("basic_l2");
    assert_eq!(
        e.ok(&format!("load_new_config_file {}", path.display())),
        "Loading new Json config\n"
    );
    assert_eq!(e.calls(), vec!["info()", "set_pipeline"]);
    assert!(
        e.cli
            .schema()
            .table_by_name("IngressImpl.ipv4_lpm")
            .is_some()
    );
    assert_eq!(e.ok("swap_configs"), "Swapping configs\n");
    assert_eq!(e.calls(), vec!["info()", "set_pipeline"]);
    let mut c = cli("basic_l2");
    assert_eq!(
        rejected(&mut c, "load_new_config_file /nonexistent/x.json"),
        "Error: Not a valid filename"
    );
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{").unwrap();
    let err = e.err(&format!("load_new_config_file {}", bad.display()));
    assert_eq!(
        err.printed(),
        "Loading new Json config\nError: Not a valid JSON file\n"
    );
    assert!(e.rt.calls.is_empty());
    // nothing loaded: no swap under way
    let err = e.err("swap_configs");
    assert_eq!(
        err.printed(),
        "Swapping configs\nInvalid swap operation (NO_ONGOING_SWAP)\n"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_script_reports_failed_lines_and_keeps_going() {
    let mut e = on_switch("basic_l2");
    let script = "# setup\n\
                  table_add dmac forward 00:00:00:00:00:10 => 0\n\
                  \n\
                  table_add dmac forward 00:00:00:00:00:11 =>\n\
                  table_add nope forward 1 => 1\n\
                  table_set_default dmac drop\n";
    let outcome = e.cli.run_script(&mut e.rt, script);
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
    let updates = e.take();
    assert_eq!(updates.len(), 2, "{updates:?}");
    assert!(matches!(updates[0], Update::AddEntry { .. }));
    assert!(matches!(updates[1], Update::SetDefault { .. }));
    assert!(!e.cli.run_script(&mut e.rt, "table_clear dmac\n").failed());
    // a failure of the switch on one line of a batch of table_add lines is that line's
    let outcome = e.cli.run_script(
        &mut e.rt,
        "table_add dmac forward 00:00:00:00:00:10 => 0\n\
         table_add dmac forward 00:00:00:00:00:10 => 1\n\
         table_add dmac forward 00:00:00:00:00:12 => 2\n",
    );
    let lines: Vec<usize> = outcome.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![2]);
    assert_eq!(
        outcome.errors[0].error.to_string(),
        "Invalid table operation (DUPLICATE_ENTRY)"
    );
    assert!(
        outcome
            .output
            .contains("Entry has been added with handle 1\n")
    );
    let dmac = e.t("IngressImpl.dmac");
    assert_eq!(e.rt.inner().entry_count(dmac).unwrap(), 2);
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
    let mut e = Env {
        cli: Cli::new(&json).unwrap(),
        rt: p4jet_runtime::testing::Recorder::new(switch_for(&json)),
        schema: Cli::new(&json).unwrap().schema().clone(),
    };
    for i in 0..3u8 {
        e.ok(&format!("table_add dmac forward 00:00:00:00:00:0{i} => 1"));
    }
    e.take();
    assert_eq!(
        e.ok("table_set_timeout dmac 2 500"),
        "Setting a 500 ms timeout for entry 2\n"
    );
    assert_eq!(
        e.take(),
        vec![Update::SetEntryTimeout {
            table: e.t("IngressImpl.dmac"),
            entry: h(2),
            timeout_ms: 500
        }]
    );
    assert_eq!(
        e.ok("table_dump_entry dmac 2"),
        "Dumping entry 0x2\nMatch key:\n* ethernet.dst_addr   : EXACT     000000000002\nAction entry: IngressImpl.forward - 0001\nLife: 0ms since hit, timeout is 500ms\n"
    );
    assert_eq!(e.ok("EOF"), "\n");
    assert_eq!(e.ok("shell echo hi"), "hi\n\n");
    assert_eq!(e.ok("!echo hi"), "hi\n\n");

    // Files written by the CLI.
    let dir = std::env::temp_dir().join(format!("p4jet-control-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("cfg.json");
    e.ok(&format!("write_config_to_file {}", cfg.display()));
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), json);
    e.ok(&format!("serialize_state {}", dir.join("state").display()));
    assert!(
        std::fs::read_to_string(dir.join("state"))
            .unwrap()
            .contains("table IngressImpl.dmac (3 entries)")
    );
    std::fs::remove_dir_all(&dir).unwrap();

    // Legacy aliases of the action profile commands.
    let mut e = on_switch("ecmp");
    e.ok("act_prof_create_member smac_profile set_src_mac 00:ee:00:00:00:00");
    e.ok("act_prof_create_member smac_profile set_src_mac 00:ee:00:00:00:01");
    e.ok("act_prof_create_member ecmp_selector set_next_hop 00:00:00:00:0d:01 1");
    e.ok("act_prof_create_member ecmp_selector set_next_hop 00:00:00:00:0d:02 2");
    e.take();
    assert_eq!(
        e.ok("table_dump_member port_smac 1"),
        "Dumping member 1\nAction entry: EgressImpl.set_src_mac - 00ee00000001\n"
    );
    assert_eq!(
        e.ok("act_prof_dump_member smac_profile 1"),
        "Dumping member 1\nAction entry: EgressImpl.set_src_mac - 00ee00000001\n"
    );
    e.ok("table_indirect_modify_member port_smac set_src_mac 1 00:ee:00:00:00:02");
    e.ok("table_indirect_delete_member port_smac 1");
    assert_eq!(
        e.ok("table_indirect_create_group ecmp_route"),
        "Group has been created with handle 0\n"
    );
    e.ok("table_indirect_add_member_to_group ecmp_route 1 0");
    e.ok("table_indirect_remove_member_from_group ecmp_route 1 0");
    e.ok("table_indirect_delete_group ecmp_route 0");
    let sel = ProfileId(e.id(ObjectKind::Profile, "IngressImpl.ecmp_selector"));
    let smac = ProfileId(e.id(ObjectKind::Profile, "EgressImpl.smac_profile"));
    let set_src = e.pa("EgressImpl.smac_profile", "EgressImpl.set_src_mac");
    assert_eq!(
        e.take(),
        vec![
            Update::ModifyMember {
                profile: smac,
                member: MemberId(1),
                action: ActionCall::new(set_src, vec![vec![0, 0xee, 0, 0, 0, 2]])
            },
            Update::DeleteMember {
                profile: smac,
                member: MemberId(1)
            },
            Update::AddGroup {
                profile: sel,
                id: None,
                max_size: 0
            },
            Update::AddToGroup {
                profile: sel,
                group: GroupId(0),
                member: MemberId(1)
            },
            Update::RemoveFromGroup {
                profile: sel,
                group: GroupId(0),
                member: MemberId(1)
            },
            Update::DeleteGroup {
                profile: sel,
                group: GroupId(0)
            },
        ]
    );

    // Direct counter reset, meter warnings, errors from the switch.
    let mut e = on_switch("acl_firewall");
    assert_eq!(
        e.ok("counter_reset acl_counter"),
        "this is the direct counter for table IngressImpl.acl\n"
    );
    assert_eq!(
        e.take(),
        vec![Update::ResetDirectCounters {
            table: e.t("IngressImpl.acl")
        }]
    );
    let mut e = on_switch("stateful");
    assert_eq!(
        e.ok("meter_get_rates flow_meter 0"),
        "WARNING: expected 2 rates but only received 0\n"
    );
    let err = e.err("register_read flow_packets 99999");
    assert_eq!(
        err.printed(),
        "Invalid register operation (INVALID_INDEX)\n"
    );
    let err = e.err("meter_set_rates flow_meter 0 0.2:1 0.1:1");
    assert_eq!(
        err.printed(),
        "Invalid meter operation (INVALID_INFO_RATE_VALUE)\n"
    );
    // a switch without --enable-swap
    let json = corpus_json("stateful");
    let mut sw = switch_for(&json);
    sw.cfg.enable_swap = false;
    let mut e = Env {
        cli: Cli::new(&json).unwrap(),
        rt: p4jet_runtime::testing::Recorder::new(sw),
        schema: Cli::new(&json).unwrap().schema().clone(),
    };
    let err = e.err("swap_configs");
    assert_eq!(
        err.printed(),
        "Swapping configs\nInvalid swap operation (CONFIG_SWAP_DISABLED)\n"
    );
    // a failure without exception code prints as simple_switch_CLI prints a
    // TApplicationException
    e.rt.fail_when(
        |c| c.is("reset_state"),
        RuntimeError::internal("bm_reset_state failed"),
    );
    let err = e.err("reset_state");
    assert_eq!(err.printed(), "Error: bm_reset_state failed\n");
    assert_eq!(
        err.kind,
        CliErrorKind::Api {
            message: "Error: bm_reset_state failed".into(),
            code: None
        }
    );
}

#[test]
fn cli_from_the_runtime() {
    let json = corpus_json("basic_l2");
    let mut rt = p4jet_runtime::testing::Recorder::new(switch_for(&json));
    let c = Cli::from_runtime(&mut rt).unwrap();
    assert!(c.schema().table_by_name("IngressImpl.dmac").is_some());
    assert!(Cli::is_command("table_add") && !Cli::is_command("table_addd"));
    assert!(Cli::command_names().len() > 80);
    // no program: the CLI cannot start
    let mut none = p4jet_runtime::testing::Null::new(None);
    assert_eq!(
        Cli::from_runtime(&mut none).unwrap_err().kind,
        p4jet_runtime::ErrorKind::NoPipeline
    );
}

/// A sandboxed CLI (the fuzzers run command text nobody vetted) refuses the commands
/// that reach outside the switch, `!` included, and runs nothing; a normal one runs them.
#[test]
fn sandboxed_cli_refuses_shell_and_file_writes() {
    let dir = std::env::temp_dir().join(format!("p4jet-cli-sandbox-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("made");
    let mut e = on_switch("basic_l2");
    e.cli = std::mem::replace(&mut e.cli, cli("basic_l2")).sandboxed();
    for line in [
        format!("shell touch {}", marker.display()),
        format!("!touch {}", marker.display()),
        format!("write_config_to_file {}", marker.display()),
        format!("serialize_state {}", marker.display()),
    ] {
        let err = e.cli.execute(&mut e.rt, &line).unwrap_err();
        assert!(
            err.printed().contains("is disabled in this CLI"),
            "{line}: {}",
            err.printed()
        );
        assert!(!marker.exists(), "{line} reached outside the switch");
    }
    // the ordinary CLI keeps simple_switch_CLI's shell
    let mut plain = cli("basic_l2");
    plain
        .execute(&mut e.rt, &format!("!touch {}", marker.display()))
        .unwrap();
    assert!(marker.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
