//! Packet conservation under a flood, with copies and a port that vanishes:
//! `p4jet run` on the multicast program over four AF_PACKET ports (veth pairs this
//! test makes and deletes). A generator (an AF_PACKET transmit ring in this process)
//! sends IPv4 multicast frames into port 0 as fast as it can; each one becomes three
//! copies (ports 1, 2 and 3); port 1 is limited to `CONSERVATION_RATE` packets per
//! second (default 5,000) with a 64-packet queue, far below what is offered (a flood
//! of many times its rate); port 2's interface is deleted half-way. At the end the
//! books must balance — received + copies = sent + dropped (per reason) + queued —
//! over the runtime API (`packet_books`) and in the exit summary, every copy sent on
//! ports 1 and 3 must have arrived at the far end of the wire, and every frame the
//! switch received must have come from the generator.
//!
//! `CONSERVATION_FRAMES` (default 300,000) sets how many frames the generator sends;
//! docs/reliability.md has the 10^8-frame run. Needs root; skipped otherwise.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use p4jet_io::{AfPacketOptions, AfPacketPort, Port};

/// 64-byte IPv4 UDP frames to 239.1.1.1 (the program's group 1) from 256 sources.
fn frames() -> Vec<Vec<u8>> {
    (0..256u32)
        .map(|i| {
            let mut f = vec![0x01, 0x00, 0x5e, 0x01, 0x01, 0x01, 0x02, 0, 0, 0, 0, 1];
            f.extend([0x08, 0x00]);
            f.extend([0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0]);
            f.extend([10, 0, (i >> 8) as u8, i as u8, 239, 1, 1, 1]);
            f.extend([(i >> 8) as u8 | 0x10, i as u8, 0, 9, 0, 26, 0, 0]);
            f.resize(64, 0x5a);
            f
        })
        .collect()
}

#[test]
fn flood_copies_and_a_vanished_port_keep_the_books() {
    if !is_root() {
        eprintln!("conservation_veth: skipped: needs root for veth pairs");
        return;
    }
    let total = env_u64("CONSERVATION_FRAMES", 300_000);
    let rate = env_u64("CONSERVATION_RATE", 5_000);
    let tag = std::process::id() % 100_000;
    // switch side cvPIDaN, far side cvPIDbN (port 0's far side is the generator's)
    let links = VethPairs::new(&format!("cv{tag}"), 4);
    let a = |n: u32| links.a(n);
    let b = |n: u32| links.b(n);
    let dir = tmpdir("conservation");
    let cmds = dir.join("conservation.commands");
    let mut c = std::fs::read_to_string(corpus_file("multicast/multicast.commands")).unwrap();
    c.push_str(&format!("set_queue_rate {rate} 1\nset_queue_depth 64 1\n"));
    std::fs::write(&cmds, c).unwrap();
    let thrift = free_port();
    let mut cmd = Command::new(p4jet());
    cmd.arg("run")
        .arg(corpus_json("multicast"))
        .arg("--commands")
        .arg(&cmds)
        .args(["--port-type", "af_packet"])
        .args(["--thrift-port", &thrift.to_string()])
        .current_dir(&dir);
    for n in 0..4 {
        cmd.args(["-i", &format!("{n}@{}", a(n))]);
    }
    let mut sw = Proc::spawn(&mut cmd, &dir);
    sw.wait_forwarding();
    std::thread::sleep(Duration::from_millis(300));

    // the generator: as fast as the ring goes; port 2's interface goes at half-way
    let fs = frames();
    let mut gen_port = AfPacketPort::open(&b(0), &AfPacketOptions::default()).unwrap();
    let batch: Vec<&[u8]> = (0..64).map(|i| &fs[i % fs.len()][..]).collect();
    let mut offered = 0u64;
    let mut deleted = false;
    let t0 = Instant::now();
    let mut s2_before = 0;
    while offered < total {
        let want = (total - offered).min(batch.len() as u64) as usize;
        let n = gen_port.send_batch(&batch[..want]).unwrap();
        offered += n as u64;
        gen_port.flush().unwrap();
        if n == 0 {
            std::thread::yield_now();
        }
        if !deleted && offered >= total / 2 {
            s2_before = if_counter(&b(2), "rx_packets");
            sh(Command::new("ip").args(["link", "del", &a(2)])).unwrap();
            deleted = true;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    // the last of the rate-limited queue leaves within 64 / rate s
    std::thread::sleep(Duration::from_millis(1500 + 64_000 / rate.max(1)));
    assert!(sw.alive(), "p4jet died:\n{}", sw.stderr());
    let wire_sent = if_counter(&b(0), "tx_packets");
    let arrived = if_counter(&a(0), "rx_packets");
    let (s1, s3) = (
        if_counter(&b(1), "rx_packets"),
        if_counter(&b(3), "rx_packets"),
    );

    // the runtime API's books
    let (out, err, st) = p4jet_cli(thrift, "packet_books\n");
    assert!(st.success(), "{out}\n{err}");
    let json = &out[out.find('{').unwrap()..=out.rfind('}').unwrap()];
    let j: serde_json::Value = serde_json::from_str(json).unwrap();
    let t = &j["total"];
    assert_eq!(t["balanced"], true, "{t}");
    let get = |k: &str| t[k].as_u64().unwrap();
    assert_eq!(
        get("received") + get("copies"),
        get("sent") + get("dropped") + get("queued"),
        "{t}"
    );
    let port = |n: u64, k: &str| {
        t["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["port"] == n)
            .map(|p| p[k].as_u64().unwrap_or(0))
            .unwrap_or(0)
    };
    let rx = get("received");
    assert!(
        rx <= arrived && arrived <= wire_sent,
        "{rx} {arrived} {wire_sent}"
    );
    assert_eq!(port(0, "rx"), rx);
    // every frame of group 1 makes three packets: two copies beyond the original
    assert_eq!(get("copies"), 2 * rx, "{t}");
    assert_eq!(port(1, "tx"), s1, "port 1: sent vs arrived\n{t}");
    assert_eq!(port(3, "tx"), s3, "port 3: sent vs arrived\n{t}");
    assert!(port(2, "tx") >= s2_before, "{t}");
    let drops = &t["drops"];
    assert!(drops["queue_full"].as_u64().unwrap_or(0) > 0, "{t}");
    assert!(drops["port_error"].as_u64().unwrap_or(0) > 0, "{t}");

    // the exit summary says the same
    let err = sw.terminate();
    let (line, n) = exit_books(&err);
    assert_eq!(n[0] + n[1], n[2] + n[3] + n[4], "{line}");
    assert_eq!(n[0], rx, "{line}");
    // what arrived at port 0's interface: received by the switch, or dropped by the
    // kernel because the switch's receive ring was full (the port's summary line)
    let p0 = err
        .lines()
        .find(|l| l.starts_with(&format!("p4jet: port 0@{} ", a(0))) && l.contains("kernel drops"))
        .unwrap_or_else(|| panic!("no port 0 summary:\n{err}"));
    let kdrops: u64 = p0
        .split("kernel drops ")
        .nth(1)
        .and_then(|x| x.split(')').next())
        .and_then(|x| x.parse().ok())
        .unwrap();
    assert_eq!(rx + kdrops, arrived, "{p0}");
    let reasons = err
        .lines()
        .find(|l| l.starts_with("p4jet: drops by reason: "))
        .unwrap_or("");
    eprintln!(
        "conservation_veth: generator {offered} frames in {secs:.1} s ({:.0}/s), {wire_sent} on the wire, {arrived} arrived at port 0 ({kdrops} dropped by the kernel: receive ring full); {line}; {reasons}; port 1 {s1} and port 3 {s3} arrived at the far ends",
        offered as f64 / secs
    );
    drop(links);
}
