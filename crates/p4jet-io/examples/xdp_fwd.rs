//! A minimal AF_XDP forwarder between two interfaces (both directions), as a
//! rate baseline: what p4jet's ports can do with no P4 program at all.
//!
//! ```text
//! xdp_fwd IFACE_A IFACE_B [--secs N] [--batch N] [--skb] [--copy] [--busy]
//! ```
//! `--skb`: generic XDP instead of native; `--copy`: no zero-copy attempt;
//! `--busy`: spin instead of sleeping in poll() when idle. Prints the rate
//! every second.

use std::time::{Duration, Instant};

use p4jet_io::{AfXdpOptions, AfXdpPort, Port, XdpMode, ZeroCopy};

#[path = "shared/fwd.rs"]
mod fwd;

fn main() {
    if let Err(e) = run() {
        eprintln!("xdp_fwd: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut ifaces = Vec::new();
    let mut secs: Option<u64> = None;
    let mut batch = 64usize;
    let mut opts = AfXdpOptions::default();
    let mut busy = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--secs" => secs = it.next().and_then(|v| v.parse().ok()),
            "--batch" => batch = it.next().and_then(|v| v.parse().ok()).ok_or("--batch N")?,
            "--skb" => opts.mode = XdpMode::Skb,
            "--copy" => opts.zero_copy = ZeroCopy::Off,
            "--busy" => busy = true,
            "-h" | "--help" => {
                println!(
                    "xdp_fwd IFACE_A IFACE_B [--secs N] [--batch N] [--skb] [--copy] [--busy]"
                );
                return Ok(());
            }
            s => ifaces.push(s.to_string()),
        }
    }
    let [ia, ib] = ifaces.as_slice() else {
        return Err(
            "usage: xdp_fwd IFACE_A IFACE_B [--secs N] [--batch N] [--skb] [--copy] [--busy]"
                .into(),
        );
    };
    let mut a = AfXdpPort::open(ia, &opts).map_err(|e| e.to_string())?;
    let mut b = AfXdpPort::open(ib, &opts).map_err(|e| e.to_string())?;
    println!("{}", a.description());
    println!("{}", b.description());
    let (mut ab, mut ba) = (fwd::DirStats::default(), fwd::DirStats::default());
    let start = Instant::now();
    let mut tick = start;
    let mut last = (0u64, 0u64);
    loop {
        let n = fwd::forward(&mut a, &mut b, batch, &mut ab).map_err(|e| e.to_string())?
            + fwd::forward(&mut b, &mut a, batch, &mut ba).map_err(|e| e.to_string())?;
        if n == 0 && !busy {
            fwd::wait_any(&a, &b, 100);
        }
        let now = Instant::now();
        if now.duration_since(tick) >= Duration::from_secs(1) {
            let dt = now.duration_since(tick).as_secs_f64();
            println!(
                "{ia}->{ib}: {:.3} Mpps   {ib}->{ia}: {:.3} Mpps   (drops {} / {})",
                (ab.forwarded - last.0) as f64 / dt / 1e6,
                (ba.forwarded - last.1) as f64 / dt / 1e6,
                ab.dropped,
                ba.dropped
            );
            last = (ab.forwarded, ba.forwarded);
            tick = now;
            if secs.is_some_and(|s| now.duration_since(start) >= Duration::from_secs(s)) {
                break;
            }
        }
    }
    println!(
        "total forwarded {} + {}, stats {:?} / {:?}",
        ab.forwarded,
        ba.forwarded,
        a.stats(),
        b.stats()
    );
    Ok(())
}
