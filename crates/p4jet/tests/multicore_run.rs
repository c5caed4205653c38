//! `p4jet run --workers 2` (and `--mode pipeline`) on veth pairs: 100K frames of 1000
//! UDP flows, each frame carrying its flow's sequence number, go in on port 1 and must
//! all come out of port 2, none reordered within its flow, with the switch's per-port
//! counters (summed over its workers) equal to what was sent.
//!
//! Topology per test: namespace `p4jmc-<pid>-<n>` holds the switch ends `s1`, `s2`
//! (p4jet runs there through `ip netns exec`); their peers `<tag>a`, `<tag>b` stay in
//! the test's namespace, where this test sends on one (AF_PACKET, through the qdisc so
//! the kernel picks a veth queue by flow hash, from a thread pinned to one CPU so that
//! the kernel keeps the frames of a flow in order) and receives on the other. The
//! sender keeps at most 512 frames in flight, so nothing is lost for lack of room
//! ("below capacity"). Deleting the namespace removes the veths; a guard does it even
//! when the test fails, and stale namespaces of killed runs are removed first.
//!
//! Not root or no `ip`: the tests print `SKIPPED: <reason>` and pass.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{corpus_json, del_netns, p4jet, remove_stale_namespaces, sh, skipped, tmpdir};
use p4jet_io::{AfPacketOptions, AfPacketPort, Port};

const PACKETS: u32 = 100_000;
const FLOWS: u32 = 1000;
const WINDOW: u64 = 512;
const MAGIC: &[u8; 4] = b"P4MC";
const NS_PREFIX: &str = "p4jmc";

/// One switch at a time: these tests measure nothing, but three switches and their
/// generators on a 2-CPU machine would only slow each other down.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn run_two_workers_af_xdp_queue_per_worker() {
    // two queues per veth: worker k takes AF_XDP queue k (or says why not)
    let Some(out) = run_case("xq", 2, &["--workers", "2", "--pin"]) else {
        return;
    };
    for w in ["worker 0/2", "worker 1/2"] {
        assert!(out.stderr.contains(w), "{w} missing:\n{}", out.stderr);
    }
    if !out.stderr.contains("AF_XDP on s1") {
        eprintln!("note: AF_XDP not used on this kernel:\n{}", out.stderr);
        return;
    }
    // both ports of a worker share its UMEM: every frame leaves from its rx chunk
    assert_eq!(in_place(&out.stderr), PACKETS as u64, "{}", out.stderr);
}

/// Frames sent from the UMEM chunk they arrived in, summed over the port reports.
fn in_place(stderr: &str) -> u64 {
    stderr
        .lines()
        .filter(|l| l.starts_with("p4jet: port "))
        .filter_map(|l| {
            let (_, rest) = l.split_once(" in place)")?.0.rsplit_once('(')?;
            Some(rest)
        })
        .filter_map(|n| n.trim().parse::<u64>().ok())
        .sum()
}

#[test]
fn run_two_workers_af_packet_fanout() {
    // one queue per veth: AF_XDP cannot give each worker a queue, so every worker
    // opens an AF_PACKET socket in the interface's fanout group
    let Some(out) = run_case("xf", 1, &["--workers", "2", "--pin"]) else {
        return;
    };
    assert!(
        out.stderr.contains(
            "s1 has 1 receive queue for 2 workers: one AF_XDP queue per worker is impossible"
        ),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("fanout hash group"), "{}", out.stderr);
}

#[test]
fn run_pipeline_mode() {
    let Some(out) = run_case(
        "xp",
        1,
        &["--mode", "pipeline", "--queue-size", "256", "--pin"],
    ) else {
        return;
    };
    assert!(out.stderr.contains("rings of 256 slots"), "{}", out.stderr);
    if out.stderr.contains("AF_XDP on s1") {
        // the egress thread sends from the chunks the ingress thread received into
        assert_eq!(in_place(&out.stderr), PACKETS as u64, "{}", out.stderr);
    }
}

/// What a run left behind.
struct Outcome {
    stderr: String,
}

/// Two veth pairs with `queues` queues each, p4jet run with `args`, the traffic, the
/// checks. None when the test cannot run here.
fn run_case(tag: &str, queues: u32, args: &[&str]) -> Option<Outcome> {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(why) = cannot_run() {
        skipped(&format!("SKIPPED: {why}"));
        return None;
    }
    let net = Net::new(tag, queues).unwrap();
    let dir = tmpdir(&format!("multicore-{tag}"));
    let cmds = dir.join("commands.txt");
    std::fs::write(
        &cmds,
        "table_add IngressImpl.dmac forward 00:00:00:00:00:02 => 2\n",
    )
    .unwrap();
    let mut sw = SwitchProc::start(&net, &dir, &cmds, args);
    sw.wait_ready();
    println!("{}", sw.stderr());

    let sink = AfPacketPort::open(&net.host[1], &AfPacketOptions::default()).unwrap();
    let src = AfPacketPort::open(
        &net.host[0],
        &AfPacketOptions {
            // through the qdisc: the kernel picks the veth queue by flow hash
            qdisc_bypass: false,
            ..AfPacketOptions::default()
        },
    )
    .unwrap();
    let received = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let stray = Arc::new(AtomicUsize::new(0));
    let receiver = {
        let (received, done, stray) = (received.clone(), done.clone(), stray.clone());
        std::thread::spawn(move || {
            let mut sink = sink;
            let mut got: Vec<(u32, u32)> = Vec::with_capacity(PACKETS as usize);
            while !done.load(Ordering::Acquire) {
                sink.recv_batch(
                    256,
                    Some(Duration::from_millis(5)),
                    &mut |f| match parse(f) {
                        Some(x) => got.push(x),
                        None => {
                            stray.fetch_add(1, Ordering::Relaxed);
                        }
                    },
                )
                .unwrap();
                received.store(got.len() as u64, Ordering::Release);
            }
            got
        })
    };
    let sent = send_all(src, received.clone());
    // wait for the last frames (or give up after 5 s without progress)
    let mut last = (received.load(Ordering::Acquire), Instant::now());
    while received.load(Ordering::Acquire) < sent {
        let r = received.load(Ordering::Acquire);
        if r != last.0 {
            last = (r, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(5) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    done.store(true, Ordering::Release);
    let got = receiver.join().unwrap();
    let (ok, counts) = sw.stop();
    let stderr = sw.stderr();
    println!("switch counts:\n{counts}");
    assert!(ok, "p4jet run did not exit cleanly:\n{stderr}");
    assert_eq!(sent, PACKETS as u64);
    assert_eq!(
        got.len() as u64,
        sent,
        "frames lost ({} stray frames seen):\n{stderr}",
        stray.load(Ordering::Relaxed)
    );
    check_order(&got);
    // every forwarding thread had its share
    let per_thread: Vec<(String, u64)> = stderr
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("p4jet: worker ")?.split_once(": rx ")?;
            let rx: u64 = rest.split(',').next()?.trim().parse().ok()?;
            let tx: u64 = rest
                .split("tx ")
                .nth(1)?
                .split(',')
                .next()?
                .trim()
                .parse()
                .ok()?;
            Some((name.to_string(), rx + tx))
        })
        .collect();
    println!("per thread (rx + tx): {per_thread:?}");
    assert!(!per_thread.is_empty(), "no per-thread report:\n{stderr}");
    for (name, n) in &per_thread {
        assert!(*n > 0, "worker {name} forwarded nothing:\n{stderr}");
    }
    let c = parse_counts(&counts);
    assert_eq!(
        c.get(&1).map(|c| c.0),
        Some(PACKETS as u64),
        "rx of port 1:\n{counts}"
    );
    assert_eq!(
        c.get(&2).map(|c| c.1),
        Some(PACKETS as u64),
        "tx of port 2:\n{counts}"
    );
    assert_eq!(c.values().map(|c| c.2).sum::<u64>(), 0, "drops:\n{counts}");
    Some(Outcome { stderr })
}

/// Sends the traffic, at most WINDOW frames ahead of what came out; returns how many
/// were sent.
fn send_all(mut src: AfPacketPort, received: Arc<AtomicU64>) -> u64 {
    let h = std::thread::spawn(move || {
        // one CPU: the frames of a flow enter the kernel in order on one queue
        if let Ok(cpus) = p4jet_io::affinity::allowed_cpus()
            && let Some(c) = cpus.first()
        {
            let _ = p4jet_io::affinity::pin_current_thread(*c);
        }
        let mut next = vec![0u32; FLOWS as usize];
        let mut x = 0x9e37_79b9u32;
        let mut sent = 0u64;
        let mut stall = Instant::now();
        let mut last_rx = 0;
        while sent < PACKETS as u64 {
            let rx = received.load(Ordering::Acquire);
            if rx != last_rx {
                last_rx = rx;
                stall = Instant::now();
            }
            if sent - rx >= WINDOW {
                assert!(
                    stall.elapsed() < Duration::from_secs(10),
                    "no progress: {sent} sent, {rx} received"
                );
                std::thread::yield_now();
                continue;
            }
            let n = (WINDOW - (sent - rx)).min(64).min(PACKETS as u64 - sent);
            let frames: Vec<Vec<u8>> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    let flow = x % FLOWS;
                    let seq = next[flow as usize];
                    next[flow as usize] += 1;
                    frame(flow, seq)
                })
                .collect();
            let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
            let mut off = 0;
            while off < refs.len() {
                off += src.send_batch(&refs[off..]).unwrap();
                src.flush().unwrap();
            }
            sent += n;
        }
        sent
    });
    h.join().unwrap()
}

fn check_order(got: &[(u32, u32)]) {
    let mut expect: HashMap<u32, u32> = HashMap::new();
    for &(flow, seq) in got {
        let e = expect.entry(flow).or_insert(0);
        assert_eq!(
            seq, *e,
            "flow {flow}: got {seq}, expected {e} (reordered or lost)"
        );
        *e += 1;
    }
    assert_eq!(expect.len(), FLOWS as usize);
}

/// `port rx tx drop` lines of `p4jet run`'s exit report.
fn parse_counts(s: &str) -> HashMap<u32, (u64, u64, u64)> {
    s.lines()
        .filter_map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            (v.len() == 4).then(|| (v[0] as u32, (v[1], v[2], v[3])))
        })
        .collect()
}

/// IPv4/UDP 10.0.0.1:(10000 + flow) -> 10.0.0.2:7 to 00:00:00:00:00:02, payload:
/// magic, flow, sequence number (64 bytes).
fn frame(flow: u32, seq: u32) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let ip_len: u16 = 20 + 8 + 22;
    let mut ip = vec![
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        0,
        0,
        0,
        64,
        17,
        0,
        0,
    ];
    ip.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    let mut sum: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let ck = !(sum as u16);
    ip[10..12].copy_from_slice(&ck.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&(10000 + flow as u16).to_be_bytes());
    f.extend_from_slice(&7u16.to_be_bytes());
    f.extend_from_slice(&(ip_len - 20).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(MAGIC);
    f.extend_from_slice(&flow.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.resize(14 + ip_len as usize, 0);
    f
}

fn parse(f: &[u8]) -> Option<(u32, u32)> {
    let p = f.get(42..54)?;
    if &p[..4] != MAGIC {
        return None;
    }
    Some((
        u32::from_be_bytes(p[4..8].try_into().ok()?),
        u32::from_be_bytes(p[8..12].try_into().ok()?),
    ))
}

// --------------------------------------------------------------------- topology

fn cannot_run() -> Option<String> {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        });
    if uid.as_deref() != Some("0") {
        return Some("needs root (network namespaces, veth, raw sockets)".into());
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Some("the `ip` command (iproute2) is not installed".into());
    }
    None
}

/// Namespace `ns` with the switch ends `s1`, `s2`; their peers `host[0]`, `host[1]`
/// in the test's namespace. Dropping it deletes the namespace, and with it the veths.
struct Net {
    ns: String,
    host: [String; 2],
}

impl Net {
    fn new(tag: &str, queues: u32) -> Result<Net, String> {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        remove_stale_namespaces(NS_PREFIX);
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let ns = format!("{NS_PREFIX}-{pid}-{n}");
        sh(Command::new("ip").args(["netns", "add", &ns]))?;
        let id = format!("{tag}{}{n}", pid % 100_000);
        let net = Net {
            ns,
            host: [format!("{id}a"), format!("{id}b")],
        };
        let q = queues.to_string();
        let ipv6 = Path::new("/proc/sys/net/ipv6").exists();
        sh(Command::new("ip").args(["-n", &net.ns, "link", "set", "lo", "up"]))?;
        for (i, host) in net.host.iter().enumerate() {
            let s = format!("s{}", i + 1);
            #[rustfmt::skip]
            sh(Command::new("ip").args([
                "link", "add", host, "numtxqueues", &q, "numrxqueues", &q, "type", "veth",
                "peer", "name", &s, "numtxqueues", &q, "numrxqueues", &q, "netns", &net.ns,
            ]))?;
            if ipv6 {
                // no router solicitations, DAD or MLD frames once the links are up
                let _ = sh(Command::new("sysctl")
                    .args(["-qw", &format!("net.ipv6.conf.{host}.disable_ipv6=1")]));
                let _ = sh(Command::new("ip").args([
                    "netns",
                    "exec",
                    &net.ns,
                    "sysctl",
                    "-qw",
                    &format!("net.ipv6.conf.{s}.disable_ipv6=1"),
                ]));
            }
            sh(Command::new("ip").args(["link", "set", host, "up"]))?;
            sh(Command::new("ip").args(["-n", &net.ns, "link", "set", &s, "up"]))?;
        }
        Ok(net)
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        del_netns(&self.ns);
        for h in &self.host {
            let _ = Command::new("ip")
                .args(["link", "del", h])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// `p4jet run` in the namespace; killed on drop if still running.
struct SwitchProc {
    child: Option<Child>,
    dir: PathBuf,
}

impl SwitchProc {
    fn start(net: &Net, dir: &Path, cmds: &Path, args: &[&str]) -> SwitchProc {
        let child = Command::new("ip")
            .args(["netns", "exec", &net.ns, p4jet(), "run"])
            .arg(corpus_json("basic_l2"))
            .args(["-i", "1@s1", "-i", "2@s2", "--commands"])
            .arg(cmds)
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::from(
                std::fs::File::create(dir.join("switch.out")).unwrap(),
            ))
            .stderr(Stdio::from(
                std::fs::File::create(dir.join("switch.err")).unwrap(),
            ))
            .spawn()
            .unwrap();
        SwitchProc {
            child: Some(child),
            dir: dir.to_path_buf(),
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("switch.err")).unwrap_or_default()
    }

    /// Waits until the forwarding threads run.
    fn wait_ready(&mut self) {
        let start = Instant::now();
        loop {
            let err = self.stderr();
            if err.contains("p4jet: forwarding with") {
                // let the pinned threads come up
                std::thread::sleep(Duration::from_millis(100));
                return;
            }
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("p4jet run exited ({st}):\n{err}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "p4jet run not ready after 30 s:\n{err}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, wait; whether it exited with success, and its per-port counts.
    fn stop(&mut self) -> (bool, String) {
        let mut child = self.child.take().unwrap();
        // `ip netns exec` execs the program: the child's pid is p4jet's
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let start = Instant::now();
        let ok = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st.success();
            }
            if start.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let _ = child.wait();
                break false;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let out = std::fs::read_to_string(self.dir.join("switch.out")).unwrap_or_default();
        let counts = out
            .lines()
            .skip_while(|l| !l.starts_with("port "))
            .collect::<Vec<_>>()
            .join("\n");
        (ok, counts)
    }
}

impl Drop for SwitchProc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
