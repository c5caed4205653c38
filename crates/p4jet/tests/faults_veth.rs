//! Faults on live ports (veth pairs in a network namespace this test creates and
//! deletes): a flood into a port limited to 100 packets per second with a 64-packet
//! queue (hundreds of times what the port forwards), then the port's interface
//! deleted while traffic for it keeps coming. The switch keeps running, reports the
//! drops as counts (not a line per packet), exits cleanly on SIGTERM, and its books
//! balance: received = sent + dropped (queue_full, port_error, ...) + queued.
//! Needs root (skipped with a message otherwise).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::fs::File;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const NS_PREFIX: &str = "p4jet-faults";

struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        del_netns(&self.0);
    }
}

struct Proc(Option<Child>);

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
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
    let euid = sh(Command::new("id").arg("-u")).unwrap_or_default();
    if euid.trim() != "0" {
        eprintln!("faults_veth: skipped: needs root for namespaces and veth pairs");
        return;
    }
    remove_stale_namespaces(NS_PREFIX);
    let ns = Ns(format!("{NS_PREFIX}-{}-0", std::process::id()));
    sh(Command::new("ip").args(["netns", "add", &ns.0])).unwrap();
    for p in 0..2 {
        let (v, peer) = (format!("veth{p}"), format!("peer{p}"));
        sh(Command::new("ip").args([
            "-n", &ns.0, "link", "add", &v, "type", "veth", "peer", "name", &peer,
        ]))
        .unwrap();
        for i in [&v, &peer] {
            sh(Command::new("ip").args(["-n", &ns.0, "link", "set", i, "up"])).unwrap();
        }
    }
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
        .current_dir(&dir)
        .stdout(Stdio::from(File::create(dir.join("switch.out")).unwrap()))
        .stderr(Stdio::from(File::create(dir.join("switch.err")).unwrap()));
    let mut sw = Proc(Some(cmd.spawn().unwrap()));
    let stderr = || std::fs::read_to_string(dir.join("switch.err")).unwrap_or_default();
    let start = Instant::now();
    while !stderr().contains("forwarding with") {
        assert!(
            sw.0.as_mut().unwrap().try_wait().unwrap().is_none(),
            "p4jet exited:\n{}",
            stderr()
        );
        assert!(start.elapsed() < Duration::from_secs(20), "{}", stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
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
    let alive = sw.0.as_mut().unwrap().try_wait().unwrap().is_none();
    assert!(alive, "p4jet died:\n{}", stderr());
    let mut child = sw.0.take().unwrap();
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let st = child.wait().unwrap();
    let err = stderr();
    assert!(st.success(), "p4jet did not exit cleanly ({st}):\n{err}");
    let books = err
        .lines()
        .find(|l| l.starts_with("p4jet: packets: "))
        .unwrap_or_else(|| panic!("no books:\n{err}"));
    assert!(!books.contains("DOES NOT BALANCE"), "{books}\n{err}");
    let nums: Vec<u64> = books["p4jet: packets: ".len()..]
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    let (rx, copies, tx, dropped, queued) = (nums[0], nums[1], nums[2], nums[3], nums[4]);
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
