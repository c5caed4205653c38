//! Traffic generator for rate measurements on veth (`tools/veth_bench.sh`):
//! sends 64-byte UDP frames (256 flows, the frames of `fwd_bench`) out of one
//! interface as fast as an AF_PACKET TX ring allows, until killed or `--secs`.
//!
//! ```text
//! veth_gen IFACE [--size BYTES] [--flows N] [--secs N]
//! ```
//! Frames go from 02:00:00:00:00:01 to 02:00:00:00:00:02 (10.0.0.1 -> 10.0.0.2,
//! UDP source ports 1024.., destination port 9). Prints the frames sent at exit
//! (only with `--secs`; when killed, read the interface's tx counter instead).

use std::time::{Duration, Instant};

use p4jet_io::{AfPacketOptions, AfPacketPort, Port};

#[path = "shared/gen.rs"]
mod generate;

const USAGE: &str = "veth_gen IFACE [--size BYTES] [--flows N] [--secs N]";

fn main() {
    if let Err(e) = run() {
        eprintln!("veth_gen: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut iface = None;
    let mut size = 64usize;
    let mut flows = 256u16;
    let mut secs: Option<f64> = None;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--size" => {
                size = it
                    .next()
                    .and_then(|v| v.parse::<usize>().ok())
                    .ok_or(USAGE)?
                    .clamp(60, 1514)
            }
            "--flows" => flows = it.next().and_then(|v| v.parse().ok()).ok_or(USAGE)?,
            "--secs" => secs = Some(it.next().and_then(|v| v.parse().ok()).ok_or(USAGE)?),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            s if iface.is_none() => iface = Some(s.to_string()),
            _ => return Err(USAGE.into()),
        }
    }
    let iface = iface.ok_or(USAGE)?;
    let mut port = AfPacketPort::open(
        &iface,
        &AfPacketOptions {
            promiscuous: false,
            ..AfPacketOptions::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let frames = generate::flows(flows.max(1), size);
    let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
    let end = secs.map(|s| Instant::now() + Duration::from_secs_f64(s));
    let mut sent = 0u64;
    while end.is_none_or(|e| Instant::now() < e) {
        let n = port.send_batch(&refs).map_err(|e| e.to_string())?;
        port.flush().map_err(|e| e.to_string())?;
        sent += n as u64;
    }
    println!("sent {sent} frames, {:?}", port.stats());
    Ok(())
}
