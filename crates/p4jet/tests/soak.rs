//! Soak: `p4jet run` forwarding sustained traffic on live ports while a controller
//! churns a table over Thrift (adds and deletes at 10K writes per second) and swaps
//! the program (`load_new_config` + `swap_configs`) at intervals. Every interval the
//! test samples the switch's resident memory, the latency histogram of
//! `--metrics-addr` and the packet books; at the end it checks that memory stayed flat
//! after the warm-up, that the latency did not drift, and that the books balance with
//! what the kernel counted on the wires.
//!
//! `SOAK_SECS` (default 60) sets the length; `SOAK_PPS` the offered load (default
//! 20000 frames/s); `SOAK_WRITES` the table writes per second (default 10000);
//! `SOAK_SWAP_SECS` the time between swaps (default 20). docs/reliability.md has the
//! command of the one-hour run and its figures. Needs root (namespaces and veth
//! pairs); skipped with a message otherwise.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::*;
use p4jet_thrift::ThriftClient;
use p4jet_thrift::types::{BmAddEntryOptions, BmMatchParam};

const NS_PREFIX: &str = "p4jet-soak";
const TABLE: &str = "IngressImpl.dmac";
/// Destination MACs the traffic uses (entries that forward them to port 1).
const FLOWS: u32 = 256;
/// Entries the churn keeps in the table besides the flows' (dmac holds 1024).
const CHURN_LIVE: usize = 512;

/// The namespace and the interfaces this test made; removed on drop.
struct Net {
    ns: String,
    root_ifs: Vec<String>,
}

impl Drop for Net {
    fn drop(&mut self) {
        for i in &self.root_ifs {
            let _ = Command::new("ip")
                .args(["link", "del", i])
                .stderr(Stdio::null())
                .status();
        }
        del_netns(&self.ns);
    }
}

/// Sends frames to FLOWS destination MACs (and random source MACs and IPv4 addresses)
/// at RATE frames/s for SECS seconds, in bursts paced by the clock; prints how many
/// it sent.
const SENDER: &str = r#"
import os, random, socket, struct, sys, time
iface, rate, secs, flows = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
rnd = random.Random(7)
frames = []
for i in range(4096):
    f = i % flows
    dst = bytes([0, 0, 0, 1, f >> 8, f & 255])
    src = bytes([2]) + rnd.randbytes(5)
    ip = struct.pack("!BBHHHBBH", 0x45, 0, 46, i, 0, 64, 17, 0) + rnd.randbytes(8)
    frames.append(dst + src + b"\x08\x00" + ip + bytes(26))
sent = 0
start = time.perf_counter()
end = start + secs
i = 0
while True:
    now = time.perf_counter()
    if now >= end:
        break
    due = int((now - start) * rate)
    if due <= sent:
        time.sleep(0.0005)
        continue
    for _ in range(min(due - sent, 256)):
        try:
            s.send(frames[i])
            sent += 1
        except OSError:
            time.sleep(0.0001)
        i = (i + 1) & 4095
print(sent)
"#;

fn rss_kb(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The latency histogram of the metrics endpoint: (bound in seconds, cumulative count).
fn latency_buckets(port: u16) -> Vec<(f64, u64)> {
    let start = Instant::now();
    let mut c = loop {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(c) => break c,
            Err(e) => assert!(start.elapsed() < Duration::from_secs(20), "metrics: {e}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    write!(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut s = String::new();
    c.read_to_string(&mut s).unwrap();
    let mut out = vec![];
    for l in s.lines() {
        let Some(rest) = l.strip_prefix("p4jet_latency_seconds_bucket{le=\"") else {
            continue;
        };
        let (le, n) = rest.split_once("\"} ").unwrap();
        let le = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().unwrap()
        };
        out.push((le, n.parse().unwrap()));
    }
    out
}

/// The bound of the bucket holding quantile `q` of the packets between two scrapes
/// (None when no packet left in between).
fn interval_quantile(a: &[(f64, u64)], b: &[(f64, u64)], q: f64) -> Option<f64> {
    let total = b.last()?.1.saturating_sub(a.last()?.1);
    if total == 0 {
        return None;
    }
    let rank = (q * total as f64).ceil() as u64;
    b.iter()
        .zip(a)
        .find(|((_, nb), (_, na))| nb.saturating_sub(*na) >= rank)
        .map(|((le, _), _)| *le)
}

/// One sample: time (s), RSS (kB), the interval's p50 and p99 (s), table writes so
/// far, packets of the interval slower than 1 ms.
type Sample = (f64, u64, Option<f64>, Option<f64>, u64, u64);

/// Packets between two scrapes whose latency was over `secs` (at a bucket bound).
fn slower_than(a: &[(f64, u64)], b: &[(f64, u64)], secs: f64) -> u64 {
    let total = |h: &[(f64, u64)]| h.last().map_or(0, |x| x.1);
    let upto = |h: &[(f64, u64)]| h.iter().find(|x| x.0 >= secs).map_or(0, |x| x.1);
    (total(b) - upto(b)).saturating_sub(total(a) - upto(a))
}

fn key(mac: [u8; 6]) -> Vec<BmMatchParam> {
    vec![BmMatchParam::Exact { key: mac.to_vec() }]
}

fn add_flows(c: &mut ThriftClient) {
    for f in 0..FLOWS {
        c.bm_mt_add_entry(
            TABLE,
            &key([0, 0, 0, 1, (f >> 8) as u8, f as u8]),
            "IngressImpl.forward",
            &[vec![0, 1]],
            BmAddEntryOptions::default(),
        )
        .unwrap();
    }
}

fn ns_counter(ns: &str, iface: &str, what: &str) -> u64 {
    sh(Command::new("ip").args([
        "netns",
        "exec",
        ns,
        "cat",
        &format!("/sys/class/net/{iface}/statistics/{what}"),
    ]))
    .unwrap()
    .trim()
    .parse()
    .unwrap()
}

#[test]
fn soak_traffic_churn_and_swaps() {
    if !is_root() {
        eprintln!("soak: skipped: needs root for namespaces and veth pairs");
        return;
    }
    let secs = env_u64("SOAK_SECS", 60);
    let pps = env_u64("SOAK_PPS", 20_000);
    let writes = env_u64("SOAK_WRITES", 10_000);
    let swap_every = Duration::from_secs(env_u64("SOAK_SWAP_SECS", 20));
    let sample_every = Duration::from_secs((secs / 12).clamp(5, 60));

    remove_stale_namespaces(NS_PREFIX);
    let pid = std::process::id();
    let net = Net {
        ns: format!("{NS_PREFIX}-{pid}-0"),
        root_ifs: (0..2).map(|p| format!("sk{}s{p}", pid % 100_000)).collect(),
    };
    sh(Command::new("ip").args(["netns", "add", &net.ns])).unwrap();
    for (p, sw) in net.root_ifs.iter().enumerate() {
        let h = format!("h{p}");
        sh(Command::new("ip").args([
            "link", "add", sw, "type", "veth", "peer", "name", &h, "netns", &net.ns,
        ]))
        .unwrap();
        // no IPv6 chatter: the counters on the wires are the test's traffic only
        let _ =
            sh(Command::new("sysctl").args(["-qw", &format!("net.ipv6.conf.{sw}.disable_ipv6=1")]));
        let _ = sh(Command::new("ip").args([
            "netns",
            "exec",
            &net.ns,
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{h}.disable_ipv6=1"),
        ]));
        sh(Command::new("ip").args(["link", "set", sw, "up"])).unwrap();
        sh(Command::new("ip").args(["-n", &net.ns, "link", "set", &h, "up"])).unwrap();
    }

    let dir = tmpdir("soak");
    let thrift = free_port();
    let metrics = free_port();
    let json = corpus_json("basic_l2");
    let mut cmd = Command::new(p4jet());
    cmd.arg("run")
        .arg(&json)
        .args(["--port-type", "af_packet"])
        .args(["--thrift-port", &thrift.to_string()])
        .args(["--metrics-addr", &format!("127.0.0.1:{metrics}")])
        .args(["-i", &format!("0@{}", net.root_ifs[0])])
        .args(["-i", &format!("1@{}", net.root_ifs[1])])
        .args(["--", "--enable-swap"])
        .current_dir(&dir);
    let mut sw = Proc::spawn(&mut cmd, &dir);
    let sw_pid = sw.id();
    let start = Instant::now();
    let mut c = loop {
        if let Ok(c) = ThriftClient::connect(("127.0.0.1", thrift)) {
            break c;
        }
        assert!(sw.alive(), "p4jet exited:\n{}", sw.stderr());
        assert!(start.elapsed() < Duration::from_secs(20), "{}", sw.stderr());
        std::thread::sleep(Duration::from_millis(50));
    };
    add_flows(&mut c);

    // the churn: adds and deletes of entries the traffic does not use, paced
    let stop = Arc::new(AtomicBool::new(false));
    let done_writes = Arc::new(AtomicU64::new(0));
    // held by a swap (with the swap count), so the churn never straddles one
    let swapping = Arc::new(std::sync::Mutex::new(0u64));
    let churn = {
        let (stop, done, swapping) = (stop.clone(), done_writes.clone(), swapping.clone());
        std::thread::spawn(move || {
            let mut c = ThriftClient::connect(("127.0.0.1", thrift)).unwrap();
            let mut live = std::collections::VecDeque::new();
            let mut n: u64 = 0;
            let mut failures = 0u64;
            let mut generation = 0u64;
            let t0 = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let due = (t0.elapsed().as_secs_f64() * writes as f64) as u64;
                if n >= due {
                    std::thread::sleep(Duration::from_micros(200));
                    continue;
                }
                let g = swapping.lock().unwrap();
                if *g != generation {
                    // a swap emptied the table: the handles are the new program's
                    generation = *g;
                    live.clear();
                }
                if live.len() >= CHURN_LIVE {
                    let h = live.pop_front().unwrap();
                    if c.bm_mt_delete_entry(TABLE, h).is_err() {
                        failures += 1;
                    }
                } else {
                    let m = n % 60_000;
                    let mac = [2, 0, 0, (m >> 16) as u8, (m >> 8) as u8, m as u8];
                    match c.bm_mt_add_entry(
                        TABLE,
                        &key(mac),
                        "IngressImpl.forward",
                        &[vec![0, 0]],
                        BmAddEntryOptions::default(),
                    ) {
                        Ok(h) => live.push_back(h),
                        Err(_) => failures += 1,
                    }
                }
                n += 1;
                done.store(n, Ordering::Relaxed);
            }
            (n, failures, t0.elapsed().as_secs_f64())
        })
    };

    let sender = Command::new("ip")
        .args(["netns", "exec", &net.ns, "python3", "-c", SENDER, "h0"])
        .arg(pps.to_string())
        .arg(secs.to_string())
        .arg(FLOWS.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();

    let mut samples: Vec<Sample> = vec![];
    let t0 = Instant::now();
    let mut last_swap = Instant::now();
    let mut swaps = 0;
    let mut prev = latency_buckets(metrics);
    let mut next_sample = sample_every;
    while t0.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_millis(100));
        assert!(sw.alive(), "p4jet died:\n{}", sw.stderr());
        if last_swap.elapsed() >= swap_every {
            // the same program again: a fresh state (empty tables), compiled again
            let mut g = swapping.lock().unwrap();
            *g += 1;
            c.bm_load_new_config(&std::fs::read_to_string(&json).unwrap())
                .unwrap();
            c.bm_swap_configs().unwrap();
            add_flows(&mut c);
            swaps += 1;
            last_swap = Instant::now();
        }
        if t0.elapsed() >= next_sample {
            next_sample += sample_every;
            let now = latency_buckets(metrics);
            samples.push((
                t0.elapsed().as_secs_f64(),
                rss_kb(sw_pid),
                interval_quantile(&prev, &now, 0.5),
                interval_quantile(&prev, &now, 0.99),
                done_writes.load(Ordering::Relaxed),
                slower_than(&prev, &now, 0.001),
            ));
            prev = now;
        }
    }
    let out = sender.wait_with_output().unwrap();
    let sent: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    stop.store(true, Ordering::Relaxed);
    let (n_writes, write_failures, churn_secs) = churn.join().unwrap();
    std::thread::sleep(Duration::from_millis(1500));

    let books: serde_json::Value = serde_json::from_str(&c.p4jet_packet_books().unwrap()).unwrap();
    let t = &books["total"];
    let wire_rx = ns_counter(&net.ns, "h1", "rx_packets");
    sw.terminate();

    let rate_writes = n_writes as f64 / churn_secs;
    eprintln!(
        "soak: {secs} s, {sent} frames offered ({:.0}/s), {n_writes} table writes ({rate_writes:.0}/s, {write_failures} refused), {swaps} swaps",
        sent as f64 / secs as f64
    );
    eprintln!("soak:   time s   RSS kB   p50 us   p99 us   writes  >1 ms");
    for (t, rss, p50, p99, w, slow) in &samples {
        let us = |x: &Option<f64>| x.map_or("-".to_string(), |v| format!("{:.0}", v * 1e6));
        eprintln!(
            "soak: {t:>8.0} {rss:>8} {:>8} {:>8} {w:>8} {slow:>6}",
            us(p50),
            us(p99)
        );
    }
    eprintln!("soak: books {}", t);

    // conservation: the switch's books balance, and what it says it sent on port 1
    // the kernel counted on the far end of the wire
    assert_eq!(t["balanced"], true, "{books}");
    let port1_tx = t["ports"]
        .as_array()
        .and_then(|p| p.iter().find(|x| x["port"] == 1))
        .map(|x| x["tx"].as_u64().unwrap())
        .unwrap_or(0);
    assert_eq!(
        port1_tx, wire_rx,
        "sent on port 1 vs received on h1\n{books}"
    );
    let rx = t["received"].as_u64().unwrap();
    assert!(
        rx <= sent && rx * 100 >= sent * 95,
        "offered {sent}, received {rx}"
    );
    // the forwarded ones are those the switch did not drop for want of an entry
    // (the moments after a swap, before the flows are back)
    assert!(
        port1_tx * 100 >= rx * 90,
        "received {rx}, forwarded {port1_tx}"
    );
    assert_eq!(write_failures, 0, "table writes refused");
    assert!(
        rate_writes >= writes as f64 * 0.9,
        "table writes: {rate_writes:.0}/s of {writes}"
    );
    assert!(swaps >= 1 || secs < swap_every.as_secs());

    // memory: flat after the warm-up (the first third of the run)
    let warm = samples
        .iter()
        .find(|s| s.0 >= secs as f64 / 3.0)
        .map(|s| s.1)
        .unwrap();
    let max_after = samples
        .iter()
        .filter(|s| s.0 >= secs as f64 / 3.0)
        .map(|s| s.1)
        .max()
        .unwrap();
    let growth = (max_after as f64 / warm as f64 - 1.0) * 100.0;
    eprintln!("soak: RSS after warm-up {warm} kB, largest later {max_after} kB ({growth:+.2} %)");
    let limit = if secs >= 600 { 1.0 } else { 5.0 };
    assert!(growth < limit, "RSS grew {growth:.2} % after the warm-up");
    // latency: no drift (the last intervals' p99 within a bound of the first ones')
    let p99s: Vec<f64> = samples.iter().filter_map(|s| s.3).collect();
    assert!(p99s.len() >= 3, "too few latency samples: {samples:?}");
    let first = p99s[..p99s.len() / 2].iter().cloned().fold(0.0, f64::max);
    let last = p99s[p99s.len() / 2..].iter().cloned().fold(0.0, f64::max);
    assert!(
        last <= (first * 4.0).max(0.005),
        "latency p99 drifted: first half {first} s, second half {last} s"
    );
}
