//! The simple_switch_CLI commands: one table of name, help text and handler
//! (`help` lists it; [`super::Cli`] dispatches through it).

use p4jet_runtime::Runtime;

use super::*;

/// A command's handler: the CLI, the runtime, the arguments split on whitespace,
/// the arguments as typed, the output.
pub(super) type Run = fn(&mut Cli, &mut dyn Runtime, &[&str], &str, &mut String) -> R;

/// One command.
pub(super) struct Command {
    /// Its name.
    pub name: &'static str,
    /// Its usage text; None for the undocumented ones.
    pub doc: Option<&'static str>,
    /// The command replacing a deprecated one.
    pub replaced_by: Option<&'static str>,
    /// What it does.
    pub run: Run,
}

macro_rules! commands {
    ($( $name:literal, $doc:expr, $sub:expr => |$c:ident, $rt:ident, $a:ident, $rest:ident, $out:ident| $body:block )*) => {
        /// Every command, by name.
        pub(super) const COMMANDS: &[Command] = &[
            $(Command {
                name: $name,
                doc: $doc,
                replaced_by: $sub,
                run: {
                    #[allow(unused_variables, clippy::ptr_arg)]
                    fn run($c: &mut Cli, $rt: &mut dyn Runtime, $a: &[&str], $rest: &str, $out: &mut String) -> R $body
                    run
                },
            },)*
        ];
    };
}

commands! {
    "EOF", None, None => |c, rt, a, rest, out| {
                outln!(out);
                Ok(())
            }
    "act_prof_add_member_to_group", Some("Add a member to a group of an action selector: act_prof_add_member_to_group <action profile name> <member handle> <group handle>"), None => |c, rt, a, rest, out| { c.act_prof_member_group(rt, a, true) }
    "act_prof_create_group", Some("Create a group in an action selector: act_prof_create_group <action profile name>"), None => |c, rt, a, rest, out| { c.act_prof_create_group(rt, a, out) }
    "act_prof_create_member", Some("Create a member in an action profile: act_prof_create_member <action profile name> <action_name> [action parameters]"), None => |c, rt, a, rest, out| { c.act_prof_create_member(rt, a, out) }
    "act_prof_delete_group", Some("Delete a group of an action selector: act_prof_delete_group <action profile name> <group handle>"), None => |c, rt, a, rest, out| { c.act_prof_delete_group(rt, a) }
    "act_prof_delete_member", Some("Delete a member of an action profile: act_prof_delete_member <action profile name> <member handle>"), None => |c, rt, a, rest, out| { c.act_prof_delete_member(rt, a) }
    "act_prof_dump", Some("Show the members (and groups) of an action profile: act_prof_dump <action profile name>"), None => |c, rt, a, rest, out| { c.act_prof_dump(rt, a, out) }
    "act_prof_dump_group", Some("Show one group of an action selector: act_prof_dump_group <action profile name> <group handle>"), None => |c, rt, a, rest, out| { c.act_prof_dump_group(rt, a, out) }
    "act_prof_dump_member", Some("Show one member of an action profile: act_prof_dump_member <action profile name> <member handle>"), None => |c, rt, a, rest, out| { c.act_prof_dump_member(rt, a, out) }
    "act_prof_modify_member", Some("Change the action of a member: act_prof_modify_member <action profile name> <action_name> <member_handle> [action parameters]"), None => |c, rt, a, rest, out| { c.act_prof_modify_member(rt, a) }
    "act_prof_remove_member_from_group", Some("Remove a member from a group of an action selector: act_prof_remove_member_from_group <action profile name> <member handle> <group handle>"), None => |c, rt, a, rest, out| { c.act_prof_member_group(rt, a, false) }
    "counter_read", Some("Read a counter: counter_read <name> <index>"), None => |c, rt, a, rest, out| { c.counter_read(rt, a, out) }
    "counter_reset", Some("Reset a counter array: counter_reset <name>"), None => |c, rt, a, rest, out| { c.counter_reset(rt, a, out) }
    "counter_write", Some("Write a counter: counter_write <name> <index> <packets> <bytes>"), None => |c, rt, a, rest, out| { c.counter_write(rt, a, out) }
    "digest_ack", Some("Acknowledge a learning notification so that its samples can be sent again (p4jet; bm_learning_ack_buffer): digest_ack <learn list name> <buffer id>"), None => |c, rt, a, rest, out| { c.digest_ack(rt, a) }
    "digest_dump", Some("Show the latest learning notifications and the samples waiting to be sent (p4jet; bmv2 publishes them on nanomsg only): digest_dump [<learn list name> [<count>]]"), None => |c, rt, a, rest, out| { c.digest_dump(rt, a, out) }
    "get_time_elapsed", Some("Microseconds since the switch started: get_time_elapsed"), None => |c, rt, a, rest, out| {
                let t = call(bm(rt).get_time_elapsed_us())?;
                outln!(out, "{t}");
                Ok(())
            }
    "get_time_since_epoch", Some("Microseconds since the switch clock's epoch: get_time_since_epoch"), None => |c, rt, a, rest, out| {
                let t = call(bm(rt).get_time_since_epoch_us())?;
                outln!(out, "{t}");
                Ok(())
            }
    "greet", None, None => |c, rt, a, rest, out| {
                outln!(out, "hello");
                Ok(())
            }
    "help", Some("List available commands with \"help\" or detailed help with \"help cmd\"."), None => |c, rt, a, rest, out| {
                help::help(out, rest);
                Ok(())
            }
    "load_new_config_file", Some("Load a new JSON configuration: load_new_config_file <path to .json file>"), None => |c, rt, a, rest, out| { c.load_new_config_file(rt, a, out) }
    "mc_dump", Some("Show the multicast groups, nodes and LAGs"), None => |c, rt, a, rest, out| { c.mc_dump(rt, out) }
    "mc_mgrp_create", Some("Create a multicast group: mc_mgrp_create <group id>"), None => |c, rt, a, rest, out| { c.mc_mgrp(rt, a, out, true) }
    "mc_mgrp_destroy", Some("Destroy a multicast group: mc_mgrp_destroy <group id>"), None => |c, rt, a, rest, out| { c.mc_mgrp(rt, a, out, false) }
    "mc_node_associate", Some("Add a node to a multicast group: mc_node_associate <group handle> <node handle>"), None => |c, rt, a, rest, out| { c.mc_node_associate(rt, a, out, true) }
    "mc_node_create", Some("Create a multicast node: mc_node_create <rid> <space-separated port list> [ | <space-separated lag list> ]"), None => |c, rt, a, rest, out| { c.mc_node_create(rt, a, out) }
    "mc_node_destroy", Some("Destroy a multicast node: mc_node_destroy <node handle>"), None => |c, rt, a, rest, out| { c.mc_node_destroy(rt, a, out) }
    "mc_node_dissociate", Some("Remove a node from a multicast group: mc_node_dissociate <group handle> <node handle>"), None => |c, rt, a, rest, out| { c.mc_node_associate(rt, a, out, false) }
    "mc_node_update", Some("Change the ports of a multicast node: mc_node_update <node handle> <space-separated port list> [ | <space-separated lag list> ]"), None => |c, rt, a, rest, out| { c.mc_node_update(rt, a, out) }
    "mc_set_lag_membership", Some("Set the ports of a LAG: mc_set_lag_membership <lag index> <space-separated port list>"), None => |c, rt, a, rest, out| { c.mc_set_lag_membership(rt, a, out) }
    "meter_array_set_rates", Some("Configure every meter of an array: meter_array_set_rates <name> <rate_1>:<burst_1> <rate_2>:<burst_2> ..."), None => |c, rt, a, rest, out| { c.meter_array_set_rates(rt, a) }
    "meter_get_rates", Some("Read the rates of a meter: meter_get_rates <name> <index>"), None => |c, rt, a, rest, out| { c.meter_get_rates(rt, a, out) }
    "meter_set_rates", Some("Configure one meter: meter_set_rates <name> <index> <rate_1>:<burst_1> <rate_2>:<burst_2> ...\nRates are in units per microsecond and bursts in units (packets or bytes)"), None => |c, rt, a, rest, out| { c.meter_set_rates(rt, a) }
    "mirroring_add", Some("Mirror to a port: mirroring_add <mirror_id> <egress_port>"), None => |c, rt, a, rest, out| { c.mirroring_add(rt, a, false) }
    "mirroring_add_mc", Some("Mirror to a multicast group: mirroring_add_mc <mirror_id> <mgrp>"), None => |c, rt, a, rest, out| { c.mirroring_add(rt, a, true) }
    "mirroring_delete", Some("Delete a mirroring session: mirroring_delete <mirror_id>"), None => |c, rt, a, rest, out| {
                exactly(a, 1)?;
                let id = parse_int(a[0], "mirror_id")?;
                call(bm(rt).mirroring_session_delete(id))
            }
    "mirroring_get", Some("Show a mirroring session: mirroring_get <mirror_id>"), None => |c, rt, a, rest, out| {
                exactly(a, 1)?;
                let id = parse_int(a[0], "mirror_id")?;
                let config = call(bm(rt).mirroring_session_get(id))?;
                outln!(out, "{config}");
                Ok(())
            }
    "packet_books", Some("Show the packet books as JSON: received + copies = sent + dropped (by reason, per port) + queued, summed and per forwarding thread (p4jet): packet_books"), None => |c, rt, a, rest, out| {
                exactly(a, 0)?;
                let t = call(bm(rt).p4jet_packet_books())?;
                outln!(out, "{t}");
                Ok(())
            }
    "port_add", Some("Add a port to the switch: port_add <iface_name> <port_num> [pcap_path]"), None => |c, rt, a, rest, out| { c.port_add(rt, a) }
    "port_remove", Some("Remove a port from the switch: port_remove <port_num>"), None => |c, rt, a, rest, out| { c.port_remove(rt, a) }
    "pvs_add", Some("Add a value to a parser value set: pvs_add <pvs_name> <value>"), None => |c, rt, a, rest, out| { c.pvs_add_remove(rt, a, true) }
    "pvs_clear", Some("Remove every value of a parser value set: pvs_clear <pvs_name>"), None => |c, rt, a, rest, out| { c.pvs_clear(rt, a) }
    "pvs_get", Some("Show the values of a parser value set: pvs_get <pvs_name>"), None => |c, rt, a, rest, out| { c.pvs_get(rt, a, out) }
    "pvs_remove", Some("Remove a value from a parser value set: pvs_remove <pvs_name> <value>"), None => |c, rt, a, rest, out| { c.pvs_add_remove(rt, a, false) }
    "register_read", Some("Read a register cell, or the whole array: register_read <name> [index]"), None => |c, rt, a, rest, out| { c.register_read(rt, a, out) }
    "register_reset", Some("Set every cell of a register array to 0: register_reset <name>"), None => |c, rt, a, rest, out| { c.register_reset(rt, a) }
    "register_write", Some("Write a register cell: register_write <name> <index> <value>"), None => |c, rt, a, rest, out| { c.register_write(rt, a) }
    "reset_state", Some("Clear all run-time state (entries, registers, ...) but keep the P4 configuration: reset_state"), None => |c, rt, a, rest, out| {
                exactly(a, 0)?;
                call(bm(rt).bm_reset_state())
            }
    "serialize_state", Some("Write the switch state to a file: serialize_state <file>"), None => |c, rt, a, rest, out| { c.serialize_state(rt, a) }
    "set_crc16_parameters", Some("Parameters of a crc16_custom calculation: set_crc16_parameters <name> <polynomial> <initial remainder> <final xor value> <reflect data?> <reflect remainder?>"), None => |c, rt, a, rest, out| { c.set_crc_parameters(rt, a, 16) }
    "set_crc32_parameters", Some("Parameters of a crc32_custom calculation: set_crc32_parameters <name> <polynomial> <initial remainder> <final xor value> <reflect data?> <reflect remainder?>"), None => |c, rt, a, rest, out| { c.set_crc_parameters(rt, a, 32) }
    "set_queue_depth", Some("Depth of one or all egress queues: set_queue_depth <nb_pkts> [<egress_port> [<priority>]]"), None => |c, rt, a, rest, out| { c.set_queue(rt, a, true) }
    "set_queue_rate", Some("Rate of one or all egress queues: set_queue_rate <rate_pps> [<egress_port> [<priority>]]"), None => |c, rt, a, rest, out| { c.set_queue(rt, a, false) }
    "set_toeplitz_hash_key", Some("Key of a Toeplitz hash: set_toeplitz_hash_key <name> <key in hex string>"), None => |c, rt, a, rest, out| { c.set_toeplitz_hash_key(rt, a) }
    "set_workers", Some("Change the number of forwarding workers while traffic flows (p4jet; each leaving worker drains what it holds first): set_workers <count>"), None => |c, rt, a, rest, out| {
                exactly(a, 1)?;
                let n = parse_int(a[0], "count")?;
                let n = u32::try_from(n).map_err(|_| usage(format!("{n} workers")))?;
                call(rt.set_workers(n))
            }
    "shell", Some("Run a shell command"), None => |c, rt, a, rest, out| { c.shell(rest, out) }
    "show_actions", Some("List the actions of the P4 program: show_actions"), None => |c, rt, a, rest, out| { c.show_actions(a, out) }
    "show_ports", Some("List the ports of the switch: show_ports"), None => |c, rt, a, rest, out| { c.show_ports(rt, a, out) }
    "show_pvs", Some("List the parser value sets of the P4 program: show_pvs"), None => |c, rt, a, rest, out| { c.show_pvs(a, out) }
    "show_tables", Some("List the tables of the P4 program: show_tables"), None => |c, rt, a, rest, out| { c.show_tables(a, out) }
    "swap_configs", Some("Activate the configuration loaded with load_new_config_file"), None => |c, rt, a, rest, out| {
                outln!(out, "Swapping configs");
                call(bm(rt).bm_swap_configs())
            }
    "switch_info", Some("Show basic information about the switch: switch_info"), None => |c, rt, a, rest, out| { c.switch_info(rt, a, out) }
    "show_workers", Some("Show the forwarding workers and which serves each shard of receive queues (p4jet): show_workers"), None => |c, rt, a, rest, out| {
                exactly(a, 0)?;
                let w = call(rt.workers())?;
                outln!(out, "workers: {} active, {} requested, at most {}", w.active, w.requested, w.max);
                if let Some((lo, hi)) = w.auto {
                    outln!(out, "automatic: {lo}..{hi}");
                }
                let owners: Vec<String> = w
                    .owners
                    .iter()
                    .enumerate()
                    .map(|(s, o)| format!("{s} -> worker {o}"))
                    .collect();
                outln!(out, "shards: {}", owners.join(", "));
                outln!(out, "changes: {}", w.changes);
                Ok(())
            }
    "table_add", Some("Add an entry to a match table: table_add <table name> <action name> <match fields> => <action parameters> [priority]"), None => |c, rt, a, rest, out| { c.table_add(rt, a, out) }
    "table_clear", Some("Remove every entry of a match table, but not the default entry: table_clear <table name>"), None => |c, rt, a, rest, out| { c.table_clear(rt, a) }
    "table_delete", Some("Delete an entry of a match table: table_delete <table name> <entry handle>"), None => |c, rt, a, rest, out| { c.table_delete(rt, a, out) }
    "table_dump", Some("Show the entries of a match table: table_dump <table name>"), None => |c, rt, a, rest, out| { c.table_dump(rt, a, out) }
    "table_dump_entry", Some("Show one entry of a match table: table_dump_entry <table name> <entry handle>"), None => |c, rt, a, rest, out| { c.table_dump_entry(rt, a, out) }
    "table_dump_entry_from_key", Some("Show the entry with this key: table_dump_entry_from_key <table name> <match fields> [priority]"), None => |c, rt, a, rest, out| { c.table_dump_entry_from_key(rt, a, out) }
    "table_dump_group", Some("Show one group of an indirect table: table_dump_group <table name> <group handle>"), None => |c, rt, a, rest, out| { c.legacy(rt, a, out, "act_prof_dump_group", false, false) }
    "table_dump_member", Some("Show one member of an indirect table: table_dump_member <table name> <member handle>"), None => |c, rt, a, rest, out| { c.legacy(rt, a, out, "act_prof_dump_member", false, false) }
    "table_indirect_add", Some("Add an entry to an indirect table: table_indirect_add <table name> <match fields> => <member handle> [priority]"), None => |c, rt, a, rest, out| { c.table_indirect_add(rt, a, out, false) }
    "table_indirect_add_member_to_group", Some("Add a member to a group: table_indirect_add_member_to_group <table name> <member handle> <group handle>"), Some("act_prof_add_member_to_group") => |c, rt, a, rest, out| {
                c.legacy(rt, a, out, "act_prof_add_member_to_group", true, true)
            }
    "table_indirect_add_with_group", Some("Add an entry to an indirect table with selector: table_indirect_add_with_group <table name> <match fields> => <group handle> [priority]"), None => |c, rt, a, rest, out| { c.table_indirect_add(rt, a, out, true) }
    "table_indirect_create_group", Some("Create a group: table_indirect_create_group <table name>"), Some("act_prof_create_group") => |c, rt, a, rest, out| {
                c.legacy(rt, a, out, "act_prof_create_group", true, true)
            }
    "table_indirect_create_member", Some("Create a member: table_indirect_create_member <table name> <action_name> [action parameters]"), Some("act_prof_create_member") => |c, rt, a, rest, out| {
                c.legacy(rt, a, out, "act_prof_create_member", false, true)
            }
    "table_indirect_delete", Some("Delete an entry of an indirect table: table_indirect_delete <table name> <entry handle>"), None => |c, rt, a, rest, out| { c.table_indirect_delete(rt, a, out) }
    "table_indirect_delete_group", Some("Delete a group: table_indirect_delete_group <table name> <group handle>"), Some("act_prof_delete_group") => |c, rt, a, rest, out| {
                c.legacy(rt, a, out, "act_prof_delete_group", true, true)
            }
    "table_indirect_delete_member", Some("Delete a member: table_indirect_delete_member <table name> <member handle>"), Some("act_prof_delete_member") => |c, rt, a, rest, out| {
                c.legacy(rt, a, out, "act_prof_delete_member", false, true)
            }
    "table_indirect_modify_member", Some("Change the action of a member: table_indirect_modify_member <table name> <action_name> <member_handle> [action parameters]"), Some("act_prof_modify_member") => |c, rt, a, rest, out| {
                c.legacy(rt, a, out, "act_prof_modify_member", false, true)
            }
    "table_indirect_remove_member_from_group", Some("Remove a member from a group: table_indirect_remove_member_from_group <table name> <member handle> <group handle>"), Some("act_prof_remove_member_from_group") => |c, rt, a, rest, out| {
                c.legacy(rt, a, out, "act_prof_remove_member_from_group", true, true)
            }
    "table_indirect_reset_default", Some("Remove the default entry of an indirect table: table_indirect_reset_default <table name>"), None => |c, rt, a, rest, out| { c.table_indirect_reset_default(rt, a) }
    "table_indirect_set_default", Some("Make a member the default entry of an indirect table: table_indirect_set_default <table name> <member handle>"), None => |c, rt, a, rest, out| { c.table_indirect_set_default(rt, a, false) }
    "table_indirect_set_default_with_group", Some("Make a group the default entry of an indirect table: table_indirect_set_default_with_group <table name> <group handle>"), None => |c, rt, a, rest, out| {
                c.table_indirect_set_default(rt, a, true)
            }
    "table_info", Some("Show a table and its actions: table_info <table_name>"), None => |c, rt, a, rest, out| { c.table_info(a, out) }
    "table_modify", Some("Change the action of an entry: table_modify <table name> <action name> <entry handle> [action parameters]"), None => |c, rt, a, rest, out| { c.table_modify(rt, a, out) }
    "table_num_entries", Some("Number of entries of a match table: table_num_entries <table name>"), None => |c, rt, a, rest, out| { c.table_num_entries(rt, a, out) }
    "table_reset_default", Some("Restore the default entry of a match table: table_reset_default <table name>"), None => |c, rt, a, rest, out| { c.table_reset_default(rt, a) }
    "table_set_default", Some("Set the default action of a match table: table_set_default <table name> <action name> <action parameters>"), None => |c, rt, a, rest, out| { c.table_set_default(rt, a, out) }
    "table_set_timeout", Some("Set the timeout of an entry (tables with support_timeout): table_set_timeout <table_name> <entry handle> <timeout (ms)>"), None => |c, rt, a, rest, out| { c.table_set_timeout(rt, a, out) }
    "table_show_actions", Some("List the actions of a table: table_show_actions <table_name>"), None => |c, rt, a, rest, out| { c.table_show_actions(a, out) }
    "write_config_to_file", Some("Write the JSON configuration of the switch to a file: write_config_to_file <file>"), None => |c, rt, a, rest, out| { c.write_config_to_file(rt, a) }
}

/// The command of this name.
pub(super) fn find(name: &str) -> Option<&'static Command> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// All command names, in Python `dir()` order (ASCII).
pub(super) fn names() -> Vec<&'static str> {
    let mut v: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
    v.sort_unstable();
    v
}
