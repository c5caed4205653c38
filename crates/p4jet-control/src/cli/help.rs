//! `help`: the command list (the same commands as simple_switch_CLI, laid
//! out by Python's `cmd` module rules) and one usage line per command.

use crate::py;

/// Every command with its usage text; `None` for the undocumented ones.
/// Deprecated aliases carry the name of the command that replaces them.
const COMMANDS: &[(&str, Option<&str>, Option<&str>)] = &[
    ("EOF", None, None),
    (
        "act_prof_add_member_to_group",
        Some(
            "Add a member to a group of an action selector: act_prof_add_member_to_group <action profile name> <member handle> <group handle>",
        ),
        None,
    ),
    (
        "act_prof_create_group",
        Some("Create a group in an action selector: act_prof_create_group <action profile name>"),
        None,
    ),
    (
        "act_prof_create_member",
        Some(
            "Create a member in an action profile: act_prof_create_member <action profile name> <action_name> [action parameters]",
        ),
        None,
    ),
    (
        "act_prof_delete_group",
        Some(
            "Delete a group of an action selector: act_prof_delete_group <action profile name> <group handle>",
        ),
        None,
    ),
    (
        "act_prof_delete_member",
        Some(
            "Delete a member of an action profile: act_prof_delete_member <action profile name> <member handle>",
        ),
        None,
    ),
    (
        "act_prof_dump",
        Some(
            "Show the members (and groups) of an action profile: act_prof_dump <action profile name>",
        ),
        None,
    ),
    (
        "act_prof_dump_group",
        Some(
            "Show one group of an action selector: act_prof_dump_group <action profile name> <group handle>",
        ),
        None,
    ),
    (
        "act_prof_dump_member",
        Some(
            "Show one member of an action profile: act_prof_dump_member <action profile name> <member handle>",
        ),
        None,
    ),
    (
        "act_prof_modify_member",
        Some(
            "Change the action of a member: act_prof_modify_member <action profile name> <action_name> <member_handle> [action parameters]",
        ),
        None,
    ),
    (
        "act_prof_remove_member_from_group",
        Some(
            "Remove a member from a group of an action selector: act_prof_remove_member_from_group <action profile name> <member handle> <group handle>",
        ),
        None,
    ),
    (
        "counter_read",
        Some("Read a counter: counter_read <name> <index>"),
        None,
    ),
    (
        "counter_reset",
        Some("Reset a counter array: counter_reset <name>"),
        None,
    ),
    (
        "counter_write",
        Some("Write a counter: counter_write <name> <index> <packets> <bytes>"),
        None,
    ),
    (
        "digest_ack",
        Some(
            "Acknowledge a learning notification so that its samples can be sent again (p4jet; bm_learning_ack_buffer): digest_ack <learn list name> <buffer id>",
        ),
        None,
    ),
    (
        "digest_dump",
        Some(
            "Show the latest learning notifications and the samples waiting to be sent (p4jet; bmv2 publishes them on nanomsg only): digest_dump [<learn list name> [<count>]]",
        ),
        None,
    ),
    (
        "get_time_elapsed",
        Some("Microseconds since the switch started: get_time_elapsed"),
        None,
    ),
    (
        "get_time_since_epoch",
        Some("Microseconds since the switch clock's epoch: get_time_since_epoch"),
        None,
    ),
    ("greet", None, None),
    (
        "help",
        Some("List available commands with \"help\" or detailed help with \"help cmd\"."),
        None,
    ),
    (
        "load_new_config_file",
        Some("Load a new JSON configuration: load_new_config_file <path to .json file>"),
        None,
    ),
    (
        "mc_dump",
        Some("Show the multicast groups, nodes and LAGs"),
        None,
    ),
    (
        "mc_mgrp_create",
        Some("Create a multicast group: mc_mgrp_create <group id>"),
        None,
    ),
    (
        "mc_mgrp_destroy",
        Some("Destroy a multicast group: mc_mgrp_destroy <group id>"),
        None,
    ),
    (
        "mc_node_associate",
        Some("Add a node to a multicast group: mc_node_associate <group handle> <node handle>"),
        None,
    ),
    (
        "mc_node_create",
        Some(
            "Create a multicast node: mc_node_create <rid> <space-separated port list> [ | <space-separated lag list> ]",
        ),
        None,
    ),
    (
        "mc_node_destroy",
        Some("Destroy a multicast node: mc_node_destroy <node handle>"),
        None,
    ),
    (
        "mc_node_dissociate",
        Some(
            "Remove a node from a multicast group: mc_node_dissociate <group handle> <node handle>",
        ),
        None,
    ),
    (
        "mc_node_update",
        Some(
            "Change the ports of a multicast node: mc_node_update <node handle> <space-separated port list> [ | <space-separated lag list> ]",
        ),
        None,
    ),
    (
        "mc_set_lag_membership",
        Some(
            "Set the ports of a LAG: mc_set_lag_membership <lag index> <space-separated port list>",
        ),
        None,
    ),
    (
        "meter_array_set_rates",
        Some(
            "Configure every meter of an array: meter_array_set_rates <name> <rate_1>:<burst_1> <rate_2>:<burst_2> ...",
        ),
        None,
    ),
    (
        "meter_get_rates",
        Some("Read the rates of a meter: meter_get_rates <name> <index>"),
        None,
    ),
    (
        "meter_set_rates",
        Some(
            "Configure one meter: meter_set_rates <name> <index> <rate_1>:<burst_1> <rate_2>:<burst_2> ...\nRates are in units per microsecond and bursts in units (packets or bytes)",
        ),
        None,
    ),
    (
        "mirroring_add",
        Some("Mirror to a port: mirroring_add <mirror_id> <egress_port>"),
        None,
    ),
    (
        "mirroring_add_mc",
        Some("Mirror to a multicast group: mirroring_add_mc <mirror_id> <mgrp>"),
        None,
    ),
    (
        "mirroring_delete",
        Some("Delete a mirroring session: mirroring_delete <mirror_id>"),
        None,
    ),
    (
        "mirroring_get",
        Some("Show a mirroring session: mirroring_get <mirror_id>"),
        None,
    ),
    (
        "port_add",
        Some("Add a port to the switch: port_add <iface_name> <port_num> [pcap_path]"),
        None,
    ),
    (
        "port_remove",
        Some("Remove a port from the switch: port_remove <port_num>"),
        None,
    ),
    (
        "pvs_add",
        Some("Add a value to a parser value set: pvs_add <pvs_name> <value>"),
        None,
    ),
    (
        "pvs_clear",
        Some("Remove every value of a parser value set: pvs_clear <pvs_name>"),
        None,
    ),
    (
        "pvs_get",
        Some("Show the values of a parser value set: pvs_get <pvs_name>"),
        None,
    ),
    (
        "pvs_remove",
        Some("Remove a value from a parser value set: pvs_remove <pvs_name> <value>"),
        None,
    ),
    (
        "register_read",
        Some("Read a register cell, or the whole array: register_read <name> [index]"),
        None,
    ),
    (
        "register_reset",
        Some("Set every cell of a register array to 0: register_reset <name>"),
        None,
    ),
    (
        "register_write",
        Some("Write a register cell: register_write <name> <index> <value>"),
        None,
    ),
    (
        "reset_state",
        Some(
            "Clear all run-time state (entries, registers, ...) but keep the P4 configuration: reset_state",
        ),
        None,
    ),
    (
        "serialize_state",
        Some("Write the switch state to a file: serialize_state <file>"),
        None,
    ),
    (
        "set_crc16_parameters",
        Some(
            "Parameters of a crc16_custom calculation: set_crc16_parameters <name> <polynomial> <initial remainder> <final xor value> <reflect data?> <reflect remainder?>",
        ),
        None,
    ),
    (
        "set_crc32_parameters",
        Some(
            "Parameters of a crc32_custom calculation: set_crc32_parameters <name> <polynomial> <initial remainder> <final xor value> <reflect data?> <reflect remainder?>",
        ),
        None,
    ),
    (
        "set_queue_depth",
        Some(
            "Depth of one or all egress queues: set_queue_depth <nb_pkts> [<egress_port> [<priority>]]",
        ),
        None,
    ),
    (
        "set_queue_rate",
        Some(
            "Rate of one or all egress queues: set_queue_rate <rate_pps> [<egress_port> [<priority>]]",
        ),
        None,
    ),
    (
        "set_toeplitz_hash_key",
        Some("Key of a Toeplitz hash: set_toeplitz_hash_key <name> <key in hex string>"),
        None,
    ),
    ("shell", Some("Run a shell command"), None),
    (
        "show_actions",
        Some("List the actions of the P4 program: show_actions"),
        None,
    ),
    (
        "show_ports",
        Some("List the ports of the switch: show_ports"),
        None,
    ),
    (
        "show_pvs",
        Some("List the parser value sets of the P4 program: show_pvs"),
        None,
    ),
    (
        "show_tables",
        Some("List the tables of the P4 program: show_tables"),
        None,
    ),
    (
        "swap_configs",
        Some("Activate the configuration loaded with load_new_config_file"),
        None,
    ),
    (
        "switch_info",
        Some("Show basic information about the switch: switch_info"),
        None,
    ),
    (
        "table_add",
        Some(
            "Add an entry to a match table: table_add <table name> <action name> <match fields> => <action parameters> [priority]",
        ),
        None,
    ),
    (
        "table_clear",
        Some(
            "Remove every entry of a match table, but not the default entry: table_clear <table name>",
        ),
        None,
    ),
    (
        "table_delete",
        Some("Delete an entry of a match table: table_delete <table name> <entry handle>"),
        None,
    ),
    (
        "table_dump",
        Some("Show the entries of a match table: table_dump <table name>"),
        None,
    ),
    (
        "table_dump_entry",
        Some("Show one entry of a match table: table_dump_entry <table name> <entry handle>"),
        None,
    ),
    (
        "table_dump_entry_from_key",
        Some(
            "Show the entry with this key: table_dump_entry_from_key <table name> <match fields> [priority]",
        ),
        None,
    ),
    (
        "table_dump_group",
        Some("Show one group of an indirect table: table_dump_group <table name> <group handle>"),
        None,
    ),
    (
        "table_dump_member",
        Some(
            "Show one member of an indirect table: table_dump_member <table name> <member handle>",
        ),
        None,
    ),
    (
        "table_indirect_add",
        Some(
            "Add an entry to an indirect table: table_indirect_add <table name> <match fields> => <member handle> [priority]",
        ),
        None,
    ),
    (
        "table_indirect_add_member_to_group",
        Some(
            "Add a member to a group: table_indirect_add_member_to_group <table name> <member handle> <group handle>",
        ),
        Some("act_prof_add_member_to_group"),
    ),
    (
        "table_indirect_add_with_group",
        Some(
            "Add an entry to an indirect table with selector: table_indirect_add_with_group <table name> <match fields> => <group handle> [priority]",
        ),
        None,
    ),
    (
        "table_indirect_create_group",
        Some("Create a group: table_indirect_create_group <table name>"),
        Some("act_prof_create_group"),
    ),
    (
        "table_indirect_create_member",
        Some(
            "Create a member: table_indirect_create_member <table name> <action_name> [action parameters]",
        ),
        Some("act_prof_create_member"),
    ),
    (
        "table_indirect_delete",
        Some(
            "Delete an entry of an indirect table: table_indirect_delete <table name> <entry handle>",
        ),
        None,
    ),
    (
        "table_indirect_delete_group",
        Some("Delete a group: table_indirect_delete_group <table name> <group handle>"),
        Some("act_prof_delete_group"),
    ),
    (
        "table_indirect_delete_member",
        Some("Delete a member: table_indirect_delete_member <table name> <member handle>"),
        Some("act_prof_delete_member"),
    ),
    (
        "table_indirect_modify_member",
        Some(
            "Change the action of a member: table_indirect_modify_member <table name> <action_name> <member_handle> [action parameters]",
        ),
        Some("act_prof_modify_member"),
    ),
    (
        "table_indirect_remove_member_from_group",
        Some(
            "Remove a member from a group: table_indirect_remove_member_from_group <table name> <member handle> <group handle>",
        ),
        Some("act_prof_remove_member_from_group"),
    ),
    (
        "table_indirect_reset_default",
        Some(
            "Remove the default entry of an indirect table: table_indirect_reset_default <table name>",
        ),
        None,
    ),
    (
        "table_indirect_set_default",
        Some(
            "Make a member the default entry of an indirect table: table_indirect_set_default <table name> <member handle>",
        ),
        None,
    ),
    (
        "table_indirect_set_default_with_group",
        Some(
            "Make a group the default entry of an indirect table: table_indirect_set_default_with_group <table name> <group handle>",
        ),
        None,
    ),
    (
        "table_info",
        Some("Show a table and its actions: table_info <table_name>"),
        None,
    ),
    (
        "table_modify",
        Some(
            "Change the action of an entry: table_modify <table name> <action name> <entry handle> [action parameters]",
        ),
        None,
    ),
    (
        "table_num_entries",
        Some("Number of entries of a match table: table_num_entries <table name>"),
        None,
    ),
    (
        "table_reset_default",
        Some("Restore the default entry of a match table: table_reset_default <table name>"),
        None,
    ),
    (
        "table_set_default",
        Some(
            "Set the default action of a match table: table_set_default <table name> <action name> <action parameters>",
        ),
        None,
    ),
    (
        "table_set_timeout",
        Some(
            "Set the timeout of an entry (tables with support_timeout): table_set_timeout <table_name> <entry handle> <timeout (ms)>",
        ),
        None,
    ),
    (
        "table_show_actions",
        Some("List the actions of a table: table_show_actions <table_name>"),
        None,
    ),
    (
        "write_config_to_file",
        Some("Write the JSON configuration of the switch to a file: write_config_to_file <file>"),
        None,
    ),
];

/// The help text of a command (None if it is not a command; Some(None) if
/// it is an undocumented one).
pub(super) fn doc(name: &str) -> Option<Option<String>> {
    COMMANDS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, doc, sub)| {
            doc.map(|d| match sub {
                Some(s) => format!("[DEPRECATED!] {d}\nUse '{s}' instead"),
                None => d.to_string(),
            })
        })
}

/// All command names, in Python `dir()` order (ASCII).
pub(super) fn names() -> Vec<&'static str> {
    let mut v: Vec<&str> = COMMANDS.iter().map(|(n, _, _)| *n).collect();
    v.sort_unstable();
    v
}

fn print_topics(out: &mut String, header: &str, cmds: &[&str]) {
    if cmds.is_empty() {
        return;
    }
    out.push_str(header);
    out.push('\n');
    out.push_str(&"=".repeat(header.len()));
    out.push('\n');
    out.push_str(&py::columnize(cmds, 79));
    out.push('\n');
}

/// `help [command]`.
pub(super) fn help(out: &mut String, arg: &str) {
    if !arg.is_empty() {
        match doc(arg) {
            Some(Some(d)) => {
                out.push_str(&d);
                out.push('\n');
            }
            _ => {
                out.push_str(&format!("*** No help on {arg}\n"));
            }
        }
        return;
    }
    let names = names();
    let documented: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| matches!(doc(n), Some(Some(_))))
        .collect();
    let undocumented: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| matches!(doc(n), Some(None)))
        .collect();
    out.push('\n');
    print_topics(out, "Documented commands (type help <topic>):", &documented);
    print_topics(out, "Undocumented commands:", &undocumented);
}
