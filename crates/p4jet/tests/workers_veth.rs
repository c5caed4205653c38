//! Forwarding workers changed while traffic flows: `p4jet run` with basic_l2 on two
//! ports (veth pairs into a network namespace this test makes and deletes),
//! `--workers 1 --max-workers 2`, over AF_PACKET (fanout), AF_XDP (a queue per shard)
//! and DPDK (`net_af_packet` queue pairs; built with the `dpdk` feature). A generator
//! in this process offers a constant load of 64-byte UDP frames in 16 flows (each
//! frame carries its flow and a per-flow sequence number) into port 0 for
//! `WORKERS_SECS` seconds (default 10) at `WORKERS_PPS` frames per second (default
//! 20,000; AF_XDP 10,000, DPDK 5,000); `set_workers 2` (a simple_switch_CLI extension,
//! over Thrift) comes at 30 % of the run, `set_workers 1` at 65 %. At the far end of
//! port 1 every frame must arrive, once, and within each flow in the order sent; the
//! switch's exit books must balance with nothing dropped; the added worker must have
//! forwarded a share of the traffic (the hand-over really happened both ways).
//! Needs root; skipped otherwise.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;
use p4jet_io::{AfPacketOptions, AfPacketPort, Port};

const NS_PREFIX: &str = "p4jet-workers";
const FLOWS: u16 = 16;
const MAGIC: &[u8; 4] = b"P4JW";

struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        del_netns(&self.0);
    }
}

/// The switch side `vethN` in the namespace, the far side `outer` here, both up
/// without IPv6, with `queues` receive and transmit queues each.
fn add_pair(ns: &str, n: u32, outer: &str, queues: u32) {
    let q = queues.to_string();
    let v = format!("veth{n}");
    sh(Command::new("ip").args([
        "link",
        "add",
        outer,
        "numrxqueues",
        &q,
        "numtxqueues",
        &q,
        "type",
        "veth",
        "peer",
        "name",
        &v,
        "numrxqueues",
        &q,
        "numtxqueues",
        &q,
        "netns",
        ns,
    ]))
    .unwrap();
    let _ =
        sh(Command::new("sysctl").args(["-qw", &format!("net.ipv6.conf.{outer}.disable_ipv6=1")]));
    let _ = sh(Command::new("ip").args([
        "netns",
        "exec",
        ns,
        "sysctl",
        "-qw",
        &format!("net.ipv6.conf.veth{n}.disable_ipv6=1"),
    ]));
    sh(Command::new("ip").args(["link", "set", outer, "up"])).unwrap();
    sh(Command::new("ip").args(["-n", ns, "link", "set", &format!("veth{n}"), "up"])).unwrap();
}

/// A 64-byte IPv4/UDP frame of flow `f` (its own addresses and ports, so the kernel's
/// fanout hash spreads the flows) with sequence number `seq` in the payload.
fn frame(f: u16, seq: u32) -> Vec<u8> {
    let mut v = vec![0, 0, 0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0x10, 0x08, 0x00];
    let mut ip = vec![
        0x45,
        0,
        0,
        50,
        0,
        0,
        0x40,
        0,
        64,
        17,
        0,
        0,
        10,
        0,
        (f >> 8) as u8,
        f as u8,
        10,
        1,
        0,
        1,
    ];
    let sum = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum::<u32>();
    let sum = (sum & 0xffff) + (sum >> 16);
    let ck = !((sum & 0xffff) + (sum >> 16)) as u16;
    ip[10..12].copy_from_slice(&ck.to_be_bytes());
    v.extend(ip);
    let sport = 10_000 + f;
    v.extend(sport.to_be_bytes());
    v.extend(20_000u16.to_be_bytes());
    v.extend(30u16.to_be_bytes());
    v.extend([0, 0]);
    v.extend(MAGIC);
    v.extend(f.to_be_bytes());
    v.extend(seq.to_be_bytes());
    v.resize(64, 0x5a);
    v
}

/// The flow and sequence number of one of our frames.
fn parse(fr: &[u8]) -> Option<(u16, u32)> {
    let p = fr.get(42..52)?;
    if &p[..4] != MAGIC {
        return None;
    }
    Some((
        u16::from_be_bytes([p[4], p[5]]),
        u32::from_be_bytes([p[6], p[7], p[8], p[9]]),
    ))
}

/// What the far end saw.
#[derive(Default)]
struct Seen {
    /// Per flow, the next sequence number expected.
    next: Vec<u32>,
    /// Our frames received.
    frames: u64,
    /// Frames that came after a later frame of their flow: (flow, got, next
    /// expected). Reordering.
    late: Vec<(u16, u32, u32)>,
    /// Frames that skipped ahead of their flow: (flow, got, expected). Loss (the
    /// frames in between may still come, late).
    gaps: Vec<(u16, u32, u32)>,
    /// Frames not ours.
    others: u64,
    /// The receiving socket's own drops.
    dropped: u64,
}

fn cli(ns: &str, thrift: u16, cmds: &str) -> String {
    let mut c = Command::new("ip");
    c.args([
        "netns",
        "exec",
        ns,
        p4jet(),
        "cli",
        "--thrift-port",
        &thrift.to_string(),
    ]);
    let (out, err, st) = run_with_input(&mut c, cmds);
    assert!(st.success(), "p4jet cli: {out}\n{err}");
    assert!(!out.contains("Error"), "p4jet cli `{cmds}`: {out}\n{err}");
    out
}

/// AF_PACKET: the shards are the sockets of a `PACKET_FANOUT` hash group.
#[test]
fn af_packet_workers_one_two_one_under_load_lose_and_reorder_nothing() {
    one_two_one("af_packet", 1);
}

/// AF_XDP: the shards are the receive queues of veth pairs with two queues (the far
/// end's kernel picks a frame's queue by its flow hash). Skipped when the kernel
/// refuses AF_XDP.
#[test]
fn af_xdp_workers_one_two_one_under_load_lose_and_reorder_nothing() {
    one_two_one("af_xdp", 2);
}

/// DPDK: the shards are the queue pairs of `net_af_packet` vdevs with two queue
/// pairs on the veths. Skipped when p4jet is built without the `dpdk` feature.
#[test]
fn dpdk_workers_one_two_one_under_load_lose_and_reorder_nothing() {
    one_two_one("dpdk", 1);
}

fn one_two_one(port_type: &str, queues: u32) {
    let name = format!("workers_veth ({port_type})");
    if !is_root() {
        eprintln!("{name}: skipped: needs root for namespaces and veth pairs");
        return;
    }
    // DPDK workers poll without sleeping: on a small machine two of them leave the
    // generator and the receiver little CPU, so they get a lighter load; AF_XDP's
    // receive rings (2048 frames a queue) hold about 300 ms of 10,000 frames/s
    let default_pps = match port_type {
        "dpdk" => 5_000,
        "af_xdp" => 10_000,
        _ => 20_000,
    };
    let pps = env_u64("WORKERS_PPS", default_pps).max(100);
    let secs = env_u64("WORKERS_SECS", 10).max(2) as f64;
    remove_stale_namespaces(NS_PREFIX);
    let ns = Ns(format!("{NS_PREFIX}-{}-{port_type}", std::process::id()));
    sh(Command::new("ip").args(["netns", "add", &ns.0])).unwrap();
    sh(Command::new("ip").args(["-n", &ns.0, "link", "set", "lo", "up"])).unwrap();
    let tag = std::process::id() % 10_000;
    let k = &port_type[..1]; // a, a or d
    let k = if port_type == "af_xdp" { "x" } else { k };
    let (o0, o1) = (format!("wk{tag}{k}0"), format!("wk{tag}{k}1"));
    add_pair(&ns.0, 0, &o0, queues);
    add_pair(&ns.0, 1, &o1, queues);

    let dir = tmpdir(&format!("workers-veth-{port_type}"));
    let cmds = dir.join("workers.commands");
    std::fs::write(
        &cmds,
        "table_add IngressImpl.dmac forward 00:00:00:00:00:11 => 1\n",
    )
    .unwrap();
    let thrift = free_port();
    let mut cmd = Command::new("ip");
    // ahead of other processes: on a busy shared machine a switch starved of CPU for
    // longer than its receive rings hold loses frames, which is not what this test
    // is about
    cmd.args(["netns", "exec", &ns.0, "nice", "-n", "-10", p4jet(), "run"])
        .arg(corpus_json("basic_l2"))
        .arg("--commands")
        .arg(&cmds)
        .args(["--workers", "1", "--max-workers", "2"])
        .args(["--thrift-port", &thrift.to_string()])
        .current_dir(&dir);
    if port_type == "dpdk" {
        for n in 0..2 {
            cmd.arg("-i").arg(format!(
                "{n}@dpdk:net_af_packet{n},iface=veth{n},qpairs=2,framecnt=16384"
            ));
        }
    } else {
        cmd.args(["--port-type", port_type, "-i", "0@veth0", "-i", "1@veth1"]);
        // AF_PACKET rings hold half a second of this traffic (the default, 32
        // blocks of at most 1 ms, 32 ms)
        cmd.args(["--af-packet-rx-ring", "512x16"]);
    }
    let mut sw = Proc::spawn(&mut cmd, &dir);
    let start = Instant::now();
    while !sw.stderr().contains("forwarding with") {
        if !sw.alive() {
            let err = sw.stderr();
            if port_type == "af_xdp" && err.contains("AF_XDP") {
                eprintln!("{name}: skipped: the kernel refuses AF_XDP here:\n{err}");
                return;
            }
            if port_type == "dpdk" && err.contains("built without DPDK ports") {
                eprintln!("{name}: skipped: p4jet is built without the dpdk feature");
                return;
            }
            panic!("p4jet exited:\n{err}");
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{}", sw.stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let w = cli(&ns.0, thrift, "show_workers\n");
    assert!(
        w.contains("workers: 1 active, 1 requested, at most 2"),
        "{w}"
    );

    // the far end of port 1
    let stop = Arc::new(AtomicBool::new(false));
    // blocks handed over when full or after 50 ms: at these rates the ring holds
    // seconds of traffic, so a receiver short of CPU for a while loses nothing
    let mut rx_port = AfPacketPort::open(
        &o1,
        &AfPacketOptions {
            rx_block_count: 64,
            rx_block_timeout_ms: 50,
            ..AfPacketOptions::default()
        },
    )
    .unwrap();
    let rx_stop = stop.clone();
    let receiver = std::thread::spawn(move || {
        let mut seen = Seen {
            next: vec![0; usize::from(FLOWS)],
            ..Seen::default()
        };
        let mut quiet = Instant::now();
        loop {
            let n = rx_port
                .recv_batch(
                    256,
                    Some(Duration::from_millis(20)),
                    &mut |fr| match parse(fr) {
                        Some((f, s)) if f < FLOWS => {
                            seen.frames += 1;
                            let e = &mut seen.next[usize::from(f)];
                            if s < *e && seen.late.len() < 100 {
                                seen.late.push((f, s, *e));
                            }
                            if s > *e && seen.gaps.len() < 100 {
                                seen.gaps.push((f, s, *e));
                            }
                            *e = s.max(*e) + 1;
                        }
                        _ => seen.others += 1,
                    },
                )
                .unwrap();
            if n > 0 {
                quiet = Instant::now();
            } else if rx_stop.load(Ordering::Relaxed) && quiet.elapsed() > Duration::from_secs(1) {
                break;
            }
        }
        seen.dropped = rx_port.stats().rx_dropped;
        seen
    });

    // the generator: constant load, flows in turn
    // (through the qdisc layer, which picks a veth transmit queue, the switch's
    // receive queue, by the flow's hash)
    let mut tx_port = AfPacketPort::open(
        &o0,
        &AfPacketOptions {
            qdisc_bypass: false,
            ..AfPacketOptions::default()
        },
    )
    .unwrap();
    let total = (pps as f64 * secs) as u64;
    let generator = std::thread::spawn(move || {
        let t0 = Instant::now();
        let mut sent = 0u64;
        let mut seq = vec![0u32; usize::from(FLOWS)];
        while sent < total {
            let due = ((t0.elapsed().as_secs_f64() * pps as f64) as u64).min(total);
            if due <= sent {
                std::thread::sleep(Duration::from_micros(200));
                continue;
            }
            let n = (due - sent).min(256) as usize;
            let frames: Vec<Vec<u8>> = (0..n)
                .map(|i| {
                    let f = ((sent + i as u64) % u64::from(FLOWS)) as u16;
                    let s = seq[usize::from(f)];
                    seq[usize::from(f)] += 1;
                    frame(f, s)
                })
                .collect();
            let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
            let mut off = 0;
            while off < refs.len() {
                off += tx_port.send_batch(&refs[off..]).unwrap();
                tx_port.flush().unwrap();
                if off < refs.len() {
                    std::thread::yield_now();
                }
            }
            sent += n as u64;
        }
        tx_port.flush().unwrap();
        (sent, t0.elapsed().as_secs_f64())
    });

    // 1 -> 2 -> 1 while it runs
    let t0 = Instant::now();
    let at = |f: f64| Duration::from_secs_f64(secs * f);
    std::thread::sleep(at(0.3).saturating_sub(t0.elapsed()));
    cli(&ns.0, thrift, "set_workers 2\n");
    std::thread::sleep(at(0.65).saturating_sub(t0.elapsed()));
    let mid = cli(&ns.0, thrift, "show_workers\n");
    cli(&ns.0, thrift, "set_workers 1\n");
    let (sent, gen_secs) = generator.join().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let seen = receiver.join().unwrap();
    assert!(sw.alive(), "p4jet died:\n{}", sw.stderr());
    let end = cli(&ns.0, thrift, "show_workers\n");
    let err = sw.terminate();
    // the kernel's counters of the wire from port 1 to the far end, for the messages
    let stat = |ns: Option<&str>, i: &str, what: &str| -> String {
        let path = format!("/sys/class/net/{i}/statistics/{what}");
        let out = match ns {
            Some(ns) => sh(Command::new("ip").args(["netns", "exec", ns, "cat", &path])),
            None => sh(Command::new("cat").arg(&path)),
        };
        out.map(|s| s.trim().to_string()).unwrap_or_default()
    };
    let wire = format!(
        "veth1 tx {} (dropped {}), {o1} rx {} (dropped {})",
        stat(Some(&ns.0), "veth1", "tx_packets"),
        stat(Some(&ns.0), "veth1", "tx_dropped"),
        stat(None, &o1, "rx_packets"),
        stat(None, &o1, "rx_dropped"),
    );

    assert!(
        mid.contains("workers: 2 active, 2 requested, at most 2"),
        "{mid}\n{err}"
    );
    assert!(
        mid.contains("shards: 0 -> worker 0, 1 -> worker 1"),
        "{mid}"
    );
    assert!(
        end.contains("workers: 1 active, 1 requested, at most 2") && end.contains("changes: 2"),
        "{end}\n{err}"
    );
    assert!(
        err.contains("p4jet: workers 1 -> 2: 1 shard handed over"),
        "{err}"
    );
    assert!(
        err.contains("p4jet: workers 2 -> 1: 1 shard handed over"),
        "{err}"
    );
    // the added worker forwarded part of the traffic, then left with nothing held
    let left = err
        .lines()
        .find(|l| l.starts_with("p4jet: worker 1 (left): rx "))
        .unwrap_or_else(|| panic!("no line of the worker that left:\n{err}"));
    let w1: Vec<u64> = left["p4jet: worker 1 (left): ".len()..]
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|x| x.parse().ok())
        .collect();
    assert!(w1[0] > 0 && w1[0] == w1[1], "{left}");

    assert_eq!(
        seen.dropped, 0,
        "the test's receiving socket dropped frames (starved of CPU?)"
    );
    assert!(
        seen.late.is_empty(),
        "frames out of order (flow, got, next expected): {:?}\n{err}",
        seen.late
    );
    // frames lost: the port summaries say whether the kernel dropped them at the
    // switch's receive rings (the switch starved of CPU for longer than they hold)
    assert!(
        seen.gaps.is_empty() && seen.frames == sent,
        "sent {sent}, arrived {}; {wire}; gaps (flow, got, expected): {:?}\n{err}",
        seen.frames,
        seen.gaps
    );
    let (books, [rx, copies, tx, dropped, queued]) = exit_books(&err);
    assert_eq!(rx + copies, tx + dropped + queued, "{books}");
    // every frame of ours forwarded; anything else the kernel sent (none expected
    // without IPv6) is dropped by the program (no entry for its destination)
    assert_eq!(tx, sent, "{books}");
    assert_eq!(rx, sent + dropped, "{books}");
    assert_eq!((copies, queued), (0, 0), "{books}");
    eprintln!(
        "{name}: {sent} frames in {gen_secs:.1} s ({:.0}/s, {FLOWS} flows), all arrived in order; worker 1 forwarded {} while it ran; {books}",
        sent as f64 / gen_secs,
        w1[0]
    );
}
