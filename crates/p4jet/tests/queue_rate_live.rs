//! `set_queue_rate` on a running switch: a port limited to N packets per second sends N
//! packets per second (± 5%) while more is offered, measured on the transmit
//! timestamps of its pcap output; what the full queue cannot hold is dropped and
//! counted, so the exit summary balances (received = sent + dropped).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::time::{Duration, Instant};

use common::*;
use p4jet_thrift::types::{BmAddEntryOptions, BmMatchParam};

/// (timestamp in µs, frame) of every record of a pcap file (little-endian, µs).
fn pcap_times(path: &std::path::Path) -> Vec<u64> {
    let b = std::fs::read(path).unwrap();
    let mut out = vec![];
    let mut i = 24;
    while i + 16 <= b.len() {
        let u = |j: usize| u32::from_le_bytes([b[j], b[j + 1], b[j + 2], b[j + 3]]) as u64;
        out.push(u(i) * 1_000_000 + u(i + 4));
        i += 16 + u(i + 8) as usize;
    }
    out
}

#[test]
fn a_rate_limited_port_sends_at_its_rate() {
    const RATE: u64 = 1000;
    let dir = tmpdir("queue-rate");
    let mut sw = Running::start(&dir, &corpus_json("basic_l2"), &[0, 1], &[]);
    let mut c = p4jet_thrift::ThriftClient::connect(("127.0.0.1", sw.thrift_port)).unwrap();
    let key = |mac: u8| {
        vec![BmMatchParam::Exact {
            key: vec![0, 0, 0, 0, 0, mac],
        }]
    };
    c.bm_mt_add_entry(
        "IngressImpl.dmac",
        &key(0x11),
        "IngressImpl.forward",
        &[vec![0, 1]],
        BmAddEntryOptions::default(),
    )
    .unwrap();
    c.set_egress_queue_rate(1, RATE as i64).unwrap();
    // simple_switch's default depth (p4jet's default is unbounded)
    c.set_egress_queue_depth(1, 64).unwrap();
    let mut frame = unhex("000000000011000000000010 0800");
    frame.resize(64, 0x5a);
    // 2x the rate for 3 s, in bursts of 20 every 10 ms
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < Duration::from_secs(3) {
        let due = (start.elapsed().as_millis() as u64 / 10 + 1) * 20;
        while sent < due {
            sw.send(0, &frame);
            sent += 1;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // the queue drains at the rate: wait until the output stops growing
    let mut last = 0;
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let n = sw.output(1).len();
        if n == last {
            break;
        }
        last = n;
    }
    assert!(sw.stop().success(), "{}", sw.stderr());
    let times = pcap_times(&dir.join("pcap1_out.pcap"));
    assert!(
        times.len() as u64 > 2 * RATE,
        "only {} sent; stderr:\n{}",
        times.len(),
        sw.stderr()
    );
    // the steady part: leave out the first and last 10%
    let (a, b) = (times.len() / 10, times.len() * 9 / 10);
    let pps = (b - a) as f64 * 1e6 / (times[b] - times[a]) as f64;
    assert!(
        (pps - RATE as f64).abs() <= RATE as f64 * 0.05,
        "port 1 sent {pps:.1} pps, limited to {RATE}"
    );
    // every frame is accounted for: sent on port 1 or dropped (full queue)
    let err = sw.stderr();
    let summary = err
        .lines()
        .find_map(|l| {
            let rest = l.split(": rx ").nth(1)?;
            let nums: Vec<u64> = rest
                .split(|c: char| !c.is_ascii_digit())
                .filter(|s| !s.is_empty())
                .filter_map(|s| s.parse().ok())
                .collect();
            (nums.len() == 3).then(|| (nums[0], nums[1], nums[2]))
        })
        .unwrap_or_else(|| panic!("no exit summary in:\n{err}"));
    assert_eq!(summary.0, sent, "received: {err}");
    assert_eq!(summary.1, times.len() as u64, "sent: {err}");
    assert_eq!(summary.0, summary.1 + summary.2, "rx = tx + drop: {err}");
    assert!(
        summary.2 > 0,
        "offered twice the rate into 64 places: drops expected"
    );
    eprintln!(
        "offered {sent} at {} pps, sent {} at {pps:.1} pps (limit {RATE}), dropped {}",
        2 * RATE,
        summary.1,
        summary.2
    );
}
