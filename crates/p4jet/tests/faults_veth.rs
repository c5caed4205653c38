//! Faults on live ports (veth pairs in a network namespace this test creates and
//! deletes): a flood into a port limited to 100 packets per second with a 64-packet
//! queue (hundreds of times what the port forwards), then the port's interface
//! deleted while traffic for it keeps coming. The switch keeps running, reports the
//! drops as counts (not a line per packet), exits cleanly on SIGTERM, and its books
//! balance: received = sent + dropped (queue_full, port_error, ...) + queued.
//! Needs root (skipped with a message otherwise).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

const NS_PREFIX: &str = "p4jet-faults";

struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        del_netns(&self.0);
    }
}

impl Ns {
    /// A new namespace `PREFIX-PID-N` (stale ones of killed runs removed first), its
    /// loopback up (a switch inside serves Thrift there).
    fn new(n: u32) -> Ns {
        remove_stale_namespaces(NS_PREFIX);
        let ns = Ns(format!("{NS_PREFIX}-{}-{n}", std::process::id()));
        sh(Command::new("ip").args(["netns", "add", &ns.0])).unwrap();
        sh(Command::new("ip").args(["-n", &ns.0, "link", "set", "lo", "up"])).unwrap();
        ns
    }
}

/// The veth pair `vethP` (the switch's side) / `peerP` in namespace `ns`, up, without
/// IPv6 (no chatter: the wire counters are the test's frames only).
fn add_veth(ns: &str, p: u32) {
    let (v, peer) = (format!("veth{p}"), format!("peer{p}"));
    sh(Command::new("ip").args([
        "-n", ns, "link", "add", &v, "type", "veth", "peer", "name", &peer,
    ]))
    .unwrap();
    for i in [&v, &peer] {
        let _ = sh(Command::new("ip").args([
            "netns",
            "exec",
            ns,
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{i}.disable_ipv6=1"),
        ]));
        sh(Command::new("ip").args(["-n", ns, "link", "set", i, "up"])).unwrap();
    }
}

const SENDER: &str = r#"
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
f = bytes.fromhex(sys.argv[2])
n = int(sys.argv[3])
sent = 0
for i in range(n):
    try:
        s.send(f)
        sent += 1
    except OSError:
        time.sleep(0.0001)
print(sent)
"#;

fn send(ns: &str, iface: &str, frame: &str, n: u64) -> u64 {
    let out = sh(Command::new("ip").args([
        "netns",
        "exec",
        ns,
        "python3",
        "-c",
        SENDER,
        iface,
        frame,
        &n.to_string(),
    ]))
    .unwrap();
    out.trim().parse().unwrap()
}

#[test]
fn flood_and_deleted_port_keep_the_switch_running_and_the_books_balanced() {
    if !is_root() {
        eprintln!("faults_veth: skipped: needs root for namespaces and veth pairs");
        return;
    }
    let ns = Ns::new(0);
    add_veth(&ns.0, 0);
    add_veth(&ns.0, 1);
    let dir = tmpdir("faults-veth");
    let cmds = dir.join("faults.commands");
    std::fs::write(
        &cmds,
        "table_add IngressImpl.dmac forward 00:00:00:00:00:11 => 1\n\
         set_queue_rate 100 1\nset_queue_depth 64 1\n",
    )
    .unwrap();
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns.0, p4jet(), "run"])
        .arg(corpus_json("basic_l2"))
        .arg("--commands")
        .arg(&cmds)
        .args(["--port-type", "af_packet", "--thrift-port", "0"])
        .args(["-i", "0@veth0", "-i", "1@veth1"])
        .current_dir(&dir);
    let mut sw = Proc::spawn(&mut cmd, &dir);
    sw.wait_forwarding();
    std::thread::sleep(Duration::from_millis(300));
    let frame = format!(
        "{}{}",
        "000000000011000000000010",
        "0800".to_string() + &"5a".repeat(50)
    );
    // the flood: as fast as the sender goes into a port that forwards 100/s
    let flood = send(&ns.0, "peer0", &frame, 100_000);
    std::thread::sleep(Duration::from_millis(500));
    // the egress port's interface goes away while traffic for it keeps coming
    sh(Command::new("ip").args(["-n", &ns.0, "link", "del", "veth1"])).unwrap();
    let after = send(&ns.0, "peer0", &frame, 2_000);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(sw.alive(), "p4jet died:\n{}", sw.stderr());
    let err = sw.terminate();
    let (books, [rx, copies, tx, dropped, queued]) = exit_books(&err);
    assert_eq!(rx + copies, tx + dropped + queued, "{books}");
    // the kernel may drop frames before the switch reads them, and sends a few of its
    // own on the veths (the program drops those)
    assert!(
        rx <= flood + after + 100 && rx > 1000,
        "{books} (sent {flood} + {after})"
    );
    let reasons = err
        .lines()
        .find(|l| l.starts_with("p4jet: drops by reason: "))
        .unwrap();
    assert!(reasons.contains("queue_full"), "{reasons}");
    // a line per dropped packet would be thousands
    let lines = err.lines().count();
    assert!(lines < 200, "{lines} lines of stderr:\n{err}");
    eprintln!("faults_veth: sent {flood} + {after}; {books}; {reasons}");
}

/// A port whose interface is deleted comes back: the interface is made again and the
/// controller runs `port_remove` and `port_add` (simple_switch_CLI commands, over
/// Thrift); frames for the port are dropped (counted) while it is gone and forwarded
/// again after, and the books balance with what the kernel counted on the wire.
#[test]
fn a_deleted_port_comes_back_with_port_remove_and_port_add() {
    if !is_root() {
        eprintln!("faults_veth: skipped: needs root for namespaces and veth pairs");
        return;
    }
    let ns = Ns::new(1);
    add_veth(&ns.0, 0);
    add_veth(&ns.0, 1);
    let wire_rx = |iface: &str| -> u64 {
        sh(Command::new("ip").args([
            "netns",
            "exec",
            &ns.0,
            "cat",
            &format!("/sys/class/net/{iface}/statistics/rx_packets"),
        ]))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
    };
    let dir = tmpdir("faults-recover");
    let cmds = dir.join("recover.commands");
    std::fs::write(
        &cmds,
        "table_add IngressImpl.dmac forward 00:00:00:00:00:11 => 1\n",
    )
    .unwrap();
    let thrift = free_port();
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns.0, p4jet(), "run"])
        .arg(corpus_json("basic_l2"))
        .arg("--commands")
        .arg(&cmds)
        .args(["--port-type", "af_packet"])
        .args(["--thrift-port", &thrift.to_string()])
        .args(["-i", "0@veth0", "-i", "1@veth1"])
        .current_dir(&dir);
    let mut sw = Proc::spawn(&mut cmd, &dir);
    sw.wait_forwarding();
    std::thread::sleep(Duration::from_millis(300));
    let frame = format!(
        "{}{}",
        "000000000011000000000010",
        "0800".to_string() + &"5a".repeat(50)
    );
    let wait_rx = |iface: &str, n: u64| {
        let start = Instant::now();
        while wire_rx(iface) < n && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(200));
        wire_rx(iface)
    };

    // 1. up: forwarded
    let a = send(&ns.0, "peer0", &frame, 500);
    let got_a = wait_rx("peer1", a);
    assert_eq!(got_a, a, "before the deletion\n{}", sw.stderr());
    // 2. gone: dropped and counted, the switch keeps running
    sh(Command::new("ip").args(["-n", &ns.0, "link", "del", "veth1"])).unwrap();
    let b = send(&ns.0, "peer0", &frame, 500);
    std::thread::sleep(Duration::from_millis(500));
    assert!(sw.alive(), "{}", sw.stderr());
    // 3. back: the interface again, and the port re-opened by the controller
    add_veth(&ns.0, 1);
    let cli = |commands: &str| {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &ns.0, p4jet(), "cli", "--thrift-port"])
            .arg(thrift.to_string());
        run_with_input(&mut c, commands)
    };
    let (out, err, st) = cli("port_remove 1\nport_add veth1 1\n");
    assert!(st.success(), "{out}\n{err}");
    assert!(!out.contains("Error") && !out.contains("rror:"), "{out}");
    // the runtime's port requests are taken up within 100 ms
    std::thread::sleep(Duration::from_millis(500));
    let c = send(&ns.0, "peer0", &frame, 500);
    let got_c = wait_rx("peer1", c);
    assert_eq!(got_c, c, "after port_add\n{}", sw.stderr());

    let err = sw.terminate();
    let (books, [rx, copies, tx, dropped, queued]) = exit_books(&err);
    assert_eq!(rx + copies, tx + dropped + queued, "{books}");
    assert_eq!(rx, a + b + c, "{books}");
    assert_eq!(tx, got_a + got_c, "{books}\n{err}");
    assert_eq!(dropped, b, "{books}\n{err}");
    eprintln!("faults_veth: recovery: {books}");
}
