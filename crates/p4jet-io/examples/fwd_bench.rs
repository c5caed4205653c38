//! Measures forwarding rates on veth, the numbers in docs/ports.md.
//!
//! Topology (created here, removed at exit, needs root):
//! ```text
//!   netns G: g0 ==veth== a0 (here) --forwarder--> b0 (here) ==veth== s0 :netns S
//! ```
//! A generator thread in G blasts 64-byte UDP frames (256 flows) out of g0
//! with an AF_PACKET TX ring; the forwarder (the same loop as `xdp_fwd`)
//! moves frames a0 -> b0 with the port type under test; the rate is what
//! s0's rx counter sees, over `--secs` seconds after a 1 s warm-up.
//!
//! ```text
//! fwd_bench [--secs N] [--size BYTES] [--batch N] [--only afpacket|xdp|xdp-skb]
//! ```

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use p4jet_io::{AfPacketOptions, AfPacketPort, AfXdpOptions, AfXdpPort, Port, XdpMode};

#[path = "shared/fwd.rs"]
mod fwd;
#[path = "shared/gen.rs"]
mod generate;

struct Topo {
    g: String,
    s: String,
    a: String,
    b: String,
}

fn sh(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{args:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Topo {
    fn new() -> Result<Topo, String> {
        let id = std::process::id() % 100_000;
        let t = Topo {
            g: format!("fbg{id}"),
            s: format!("fbs{id}"),
            a: format!("fba{id}"),
            b: format!("fbb{id}"),
        };
        sh(&["ip", "netns", "add", &t.g])?;
        sh(&["ip", "netns", "add", &t.s])?;
        sh(&[
            "ip", "link", "add", &t.a, "type", "veth", "peer", "name", "g0", "netns", &t.g,
        ])?;
        sh(&[
            "ip", "link", "add", &t.b, "type", "veth", "peer", "name", "s0", "netns", &t.s,
        ])?;
        for (ns, i) in [(&t.g, "g0"), (&t.s, "s0")] {
            let _ = sh(&[
                "ip",
                "netns",
                "exec",
                ns,
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{i}.disable_ipv6=1"),
            ]);
            sh(&["ip", "-n", ns, "link", "set", i, "up"])?;
        }
        for i in [&t.a, &t.b] {
            let _ = sh(&[
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{i}.disable_ipv6=1"),
            ]);
            sh(&["ip", "link", "set", i, "up"])?;
        }
        Ok(t)
    }

    fn sink_rx(&self) -> u64 {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.s,
                "cat",
                "/sys/class/net/s0/statistics/rx_packets",
            ])
            .output();
        out.ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Topo {
    fn drop(&mut self) {
        let _ = sh(&["ip", "link", "del", &self.a]);
        let _ = sh(&["ip", "link", "del", &self.b]);
        let _ = sh(&["ip", "netns", "del", &self.g]);
        let _ = sh(&["ip", "netns", "del", &self.s]);
    }
}

/// Generator thread: enters netns G, sends until `stop`.
fn generator(
    ns: String,
    size: usize,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
) -> std::thread::JoinHandle<Result<(), String>> {
    std::thread::spawn(move || {
        let f = File::open(format!("/run/netns/{ns}")).map_err(|e| e.to_string())?;
        // SAFETY: setns on a valid namespace fd; affects this thread only.
        if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(format!("setns: {}", std::io::Error::last_os_error()));
        }
        let mut port = AfPacketPort::open(
            "g0",
            &AfPacketOptions {
                promiscuous: false,
                ..AfPacketOptions::default()
            },
        )
        .map_err(|e| e.to_string())?;
        let frames = generate::flows(256, size);
        let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
        while !stop.load(Ordering::Relaxed) {
            let n = port.send_batch(&refs).map_err(|e| e.to_string())?;
            port.flush().map_err(|e| e.to_string())?;
            sent.fetch_add(n as u64, Ordering::Relaxed);
        }
        Ok(())
    })
}

fn measure(
    topo: &Topo,
    name: &str,
    mut a: Box<dyn Port>,
    mut b: Box<dyn Port>,
    secs: u64,
    size: usize,
    batch: usize,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let gen_thread = generator(topo.g.clone(), size, stop.clone(), sent.clone());
    let (mut ab, mut ba) = (fwd::DirStats::default(), fwd::DirStats::default());
    let start = Instant::now();
    let warm = start + Duration::from_secs(1);
    let end = warm + Duration::from_secs(secs);
    let mut base: Option<(u64, u64, u64, Instant)> = None;
    let mut err = None;
    while Instant::now() < end {
        if base.is_none() && Instant::now() >= warm {
            base = Some((
                topo.sink_rx(),
                sent.load(Ordering::Relaxed),
                ab.forwarded,
                Instant::now(),
            ));
        }
        let r = fwd::forward(&mut *a, &mut *b, batch, &mut ab)
            .and_then(|n| fwd::forward(&mut *b, &mut *a, batch, &mut ba).map(|m| n + m));
        if let Err(e) = r {
            err = Some(e);
            break;
        }
    }
    let (sink1, sent1, fwd1, t1) = (
        topo.sink_rx(),
        sent.load(Ordering::Relaxed),
        ab.forwarded,
        Instant::now(),
    );
    stop.store(true, Ordering::Relaxed);
    let gen_res = gen_thread.join();
    if let Some(e) = err {
        println!("{name:<32} forwarder error: {e}");
        return;
    }
    if let Ok(Err(e)) = gen_res {
        println!("{name:<32} generator error: {e}");
        return;
    }
    let Some((sink0, sent0, fwd0, t0)) = base else {
        return;
    };
    let dt = t1.duration_since(t0).as_secs_f64();
    let st = a.stats();
    println!(
        "{name:<32} offered {:6.3} Mpps  forwarded {:6.3} Mpps  at sink {:6.3} Mpps  (rx drops at a: {})",
        (sent1 - sent0) as f64 / dt / 1e6,
        (fwd1 - fwd0) as f64 / dt / 1e6,
        (sink1 - sink0) as f64 / dt / 1e6,
        st.rx_dropped
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut secs = 5;
    let mut size = 64;
    let mut batch = 64;
    let mut only: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--secs" => secs = it.next().and_then(|v| v.parse().ok()).unwrap_or(secs),
            "--size" => {
                size = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(size)
                    .clamp(60, 1514)
            }
            "--batch" => batch = it.next().and_then(|v| v.parse().ok()).unwrap_or(batch),
            "--only" => only = it.next().cloned(),
            _ => {
                eprintln!(
                    "fwd_bench [--secs N] [--size BYTES] [--batch N] [--only afpacket|xdp|xdp-skb]"
                );
                std::process::exit(2);
            }
        }
    }
    let topo = match Topo::new() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("fwd_bench: cannot build the veth topology (root needed): {e}");
            std::process::exit(1);
        }
    };
    println!(
        "{size}-byte frames, batch {batch}, {secs} s per run, {} CPUs",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    let want = |k: &str| only.as_deref().is_none_or(|o| o == k);
    if want("afpacket") {
        let o = AfPacketOptions::default();
        match (
            AfPacketPort::open(&topo.a, &o),
            AfPacketPort::open(&topo.b, &o),
        ) {
            (Ok(a), Ok(b)) => measure(
                &topo,
                "AF_PACKET v3 (qdisc bypass)",
                Box::new(a),
                Box::new(b),
                secs,
                size,
                batch,
            ),
            (Err(e), _) | (_, Err(e)) => println!("AF_PACKET: {e}"),
        }
    }
    for (key, label, mode) in [
        ("xdp", "AF_XDP native, copy", XdpMode::Drv),
        ("xdp-skb", "AF_XDP generic (skb), copy", XdpMode::Skb),
    ] {
        if !want(key) {
            continue;
        }
        let o = AfXdpOptions {
            mode,
            ..AfXdpOptions::default()
        };
        match (AfXdpPort::open(&topo.a, &o), AfXdpPort::open(&topo.b, &o)) {
            (Ok(a), Ok(b)) => measure(&topo, label, Box::new(a), Box::new(b), secs, size, batch),
            (Err(e), _) | (_, Err(e)) => println!("{label}: {e}"),
        }
        // Let the kernel release the queues before the next mode binds them.
        std::thread::sleep(Duration::from_millis(300));
    }
}
