//! `p4jet bench`: replays a trace from memory through the real engine and reports
//! packets per second, ns per packet and the time per stage, next to a null program
//! (parse nothing, forward to port 0) measured in the same run.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use p4jet_switch::{STAGES, Switch, SwitchConfig, Worker};

/// `p4jet bench` options.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The bmv2 JSON program.
    pub program: PathBuf,
    /// Table commands (simple_switch_CLI syntax).
    #[arg(long = "commands")]
    pub commands: Vec<PathBuf>,
    /// Trace to replay (pcap); every frame enters on port 0 unless --port-from-trace.
    #[arg(long = "trace")]
    pub trace: PathBuf,
    /// Forwarding workers (threads).
    #[arg(long = "workers", default_value_t = 1)]
    pub workers: usize,
    /// Packets per batch.
    #[arg(long = "batch", default_value_t = 32)]
    pub batch: usize,
    /// Seconds to measure each program.
    #[arg(long = "seconds", default_value_t = 3.0)]
    pub seconds: f64,
    /// Print one JSON object instead of a table.
    #[arg(long = "json")]
    pub json: bool,
    /// Ingress port of the replayed frames.
    #[arg(long = "port", default_value_t = 0)]
    pub port: u32,
}

/// A program that parses nothing and forwards everything to port 0.
pub const NULL_PROGRAM: &str = r#"{
  "header_types": [{"name": "standard_metadata", "id": 0, "fields": [
    ["ingress_port", 9, false], ["egress_spec", 9, false], ["egress_port", 9, false],
    ["instance_type", 32, false], ["packet_length", 32, false], ["mcast_grp", 16, false],
    ["egress_rid", 16, false], ["parser_error", 32, false], ["priority", 3, false], ["_padding", 2, false]]}],
  "headers": [{"name": "standard_metadata", "id": 0, "header_type": "standard_metadata", "metadata": true}],
  "parsers": [{"name": "parser", "id": 0, "init_state": "start",
    "parse_states": [{"name": "start", "id": 0, "parser_ops": [], "transition_key": [],
      "transitions": [{"type": "default", "value": null, "mask": null, "next_state": null}]}]}],
  "deparsers": [{"name": "deparser", "id": 0, "order": []}],
  "actions": [],
  "pipelines": [
    {"name": "ingress", "id": 0, "init_table": null, "tables": [], "conditionals": [], "action_profiles": []},
    {"name": "egress", "id": 1, "init_table": null, "tables": [], "conditionals": [], "action_profiles": []}],
  "__meta__": {"version": [2, 23]}
}"#;

/// Results of one measured program.
#[derive(Debug, Clone, Default)]
pub struct Measure {
    /// Packets forwarded.
    pub packets: u64,
    /// Packets injected.
    pub injected: u64,
    /// Wall time.
    pub secs: f64,
    /// Share of time per stage (fractions of the instrumented run).
    pub stage_share: Vec<(String, f64)>,
    /// Nanoseconds per packet per stage.
    pub stage_ns: Vec<(String, f64)>,
}

impl Measure {
    /// Packets per second.
    pub fn pps(&self) -> f64 {
        self.packets as f64 / self.secs.max(1e-9)
    }
}

fn read_trace(path: &PathBuf) -> Result<Vec<Vec<u8>>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut r =
        pcap_file::pcap::PcapReader::new(f).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = vec![];
    while let Some(p) = r.next_packet() {
        let p = p.map_err(|e| format!("{}: {e}", path.display()))?;
        out.push(p.data.to_vec());
    }
    if out.is_empty() {
        return Err(format!("{}: no packets", path.display()));
    }
    Ok(out)
}

/// Replays `frames` through a worker for `secs` seconds.
pub fn measure(
    w: &mut Worker,
    frames: &[Vec<u8>],
    port: u32,
    batch: usize,
    secs: f64,
    progress: bool,
) -> Measure {
    let mut sent = 0u64;
    let mut injected = 0u64;
    let mut i = 0usize;
    // warm up
    for f in frames
        .iter()
        .cycle()
        .take(frames.len().clamp(batch * 4, 65536))
    {
        w.inject(port, f);
        if w.pending() >= batch {
            w.step(&mut |_, _| {});
        }
    }
    w.run_until_idle(&mut |_, _| {});
    let run = |sw: &mut Worker, dur: f64, sent: &mut u64, injected: &mut u64, i: &mut usize| {
        let start = Instant::now();
        let mut next_report = start + Duration::from_secs(1);
        loop {
            for _ in 0..batch {
                sw.inject(port, &frames[*i]);
                *i += 1;
                if *i == frames.len() {
                    *i = 0;
                }
            }
            *injected += batch as u64;
            sw.step(&mut |_, _| *sent += 1);
            if (*injected).is_multiple_of(batch as u64 * 64) {
                let now = Instant::now();
                let el = now.duration_since(start).as_secs_f64();
                if el >= dur {
                    return el;
                }
                if progress && now >= next_report {
                    eprint!("\r  {:.2} Mpps ...", *sent as f64 / el / 1e6);
                    let _ = std::io::stderr().flush();
                    next_report = now + Duration::from_secs(1);
                }
            }
        }
    };
    let el = run(w, secs, &mut sent, &mut injected, &mut i);
    w.run_until_idle(&mut |_, _| sent += 1);
    if progress {
        eprint!("\r                              \r");
    }
    // a shorter instrumented run for the stage shares
    w.core.timing = true;
    w.core.stage_ns = [0; 5];
    let (mut s2, mut i2) = (0u64, 0u64);
    let t0 = Instant::now();
    let el2 = run(w, (secs / 4.0).max(0.2), &mut s2, &mut i2, &mut i);
    let total_ns = t0.elapsed().as_nanos() as f64;
    w.core.timing = false;
    let staged: u64 = w.core.stage_ns.iter().sum();
    let mut stage_share = vec![];
    let mut stage_ns = vec![];
    for (k, name) in STAGES.iter().enumerate() {
        let ns = w.core.stage_ns[k] as f64;
        stage_share.push((name.to_string(), ns / total_ns));
        stage_ns.push((name.to_string(), ns / s2.max(1) as f64));
    }
    // the rest: rx (copy into pooled buffers), batching, loop overhead
    let other = (total_ns - staged as f64).max(0.0);
    stage_share.push(("rx+io".into(), other / total_ns));
    stage_ns.push(("rx+io".into(), other / s2.max(1) as f64));
    let _ = el2;
    Measure {
        packets: sent,
        injected,
        secs: el,
        stage_share,
        stage_ns,
    }
}

/// Flow hash of a frame (addresses and ports of IPv4/IPv6, else the MAC addresses) used to
/// spread a trace over workers so that a flow stays on one worker.
pub fn flow_hash(f: &[u8]) -> u64 {
    let ety = if f.len() >= 14 {
        u16::from_be_bytes([f[12], f[13]])
    } else {
        0
    };
    let key: &[u8] = match ety {
        0x0800 if f.len() >= 38 => &f[26..38],
        0x86dd if f.len() >= 58 => &f[22..58],
        _ => &f[..f.len().min(12)],
    };
    key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Runs `workers` threads, each replaying its share of the trace; returns the aggregate.
pub fn measure_parallel(
    sw: &Switch,
    frames: &[Vec<u8>],
    port: u32,
    batch: usize,
    secs: f64,
    workers: usize,
    progress: bool,
) -> Measure {
    if workers <= 1 {
        let mut w = sw.new_worker();
        return measure(&mut w, frames, port, batch, secs, progress);
    }
    let mut parts: Vec<Vec<Vec<u8>>> = vec![vec![]; workers];
    for f in frames {
        parts[(flow_hash(f) % workers as u64) as usize].push(f.clone());
    }
    for p in parts.iter_mut() {
        if p.is_empty() {
            p.push(frames[0].clone());
        }
    }
    let results: Vec<Measure> = std::thread::scope(|s| {
        let hs: Vec<_> = parts
            .iter()
            .enumerate()
            .map(|(k, part)| {
                let mut w = sw.new_worker();
                s.spawn(move || measure(&mut w, part, port, batch, secs, progress && k == 0))
            })
            .collect();
        hs.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut total = Measure {
        secs: 0.0,
        ..Measure::default()
    };
    for r in &results {
        total.packets += r.packets;
        total.injected += r.injected;
        total.secs = total.secs.max(r.secs);
    }
    if let Some(first) = results.first() {
        total.stage_share = first.stage_share.clone();
        total.stage_ns = first.stage_ns.clone();
    }
    total
}

/// `p4jet bench`.
pub fn main(a: BenchArgs) -> Result<ExitCode, String> {
    let json =
        std::fs::read_to_string(&a.program).map_err(|e| format!("{}: {e}", a.program.display()))?;
    let frames = read_trace(&a.trace)?;
    let workers = a.workers.max(1);
    let cfg = SwitchConfig {
        batch: a.batch.max(1),
        ..SwitchConfig::default()
    };
    let t_load = Instant::now();
    let mut sw =
        Switch::new(&json, cfg.clone()).map_err(|e| format!("{}: {e}", a.program.display()))?;
    if !crate::run::apply_commands_quiet(&mut sw, &a.commands)? {
        return Err("some commands failed".into());
    }
    let load_s = t_load.elapsed().as_secs_f64();
    let entries: usize = sw
        .with_state(|s| s.tables.iter().map(|t| t.entries.len()).sum())
        .unwrap_or(0);
    let mem: usize = sw
        .with_state(|s| s.tables.iter().map(|t| t.entries.memory_bytes()).sum())
        .unwrap_or(0);
    let null = Switch::new(NULL_PROGRAM, cfg).map_err(|e| format!("null program: {e}"))?;
    if !a.json {
        eprintln!(
            "p4jet bench: {} frames, {entries} table entries loaded in {load_s:.2} s",
            frames.len()
        );
    }
    let m = measure_parallel(
        &sw,
        &frames,
        a.port,
        a.batch.max(1),
        a.seconds,
        workers,
        !a.json,
    );
    let n = measure_parallel(
        &null,
        &frames,
        a.port,
        a.batch.max(1),
        a.seconds,
        workers,
        !a.json,
    );
    let pps = m.pps();
    let null_pps = n.pps();
    let avg_len = frames.iter().map(|f| f.len()).sum::<usize>() as f64 / frames.len() as f64;
    if a.json {
        let stages: serde_json::Map<String, serde_json::Value> = m
            .stage_ns
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::json!(v)))
            .collect();
        let o = serde_json::json!({
            "program": a.program.display().to_string(),
            "trace": a.trace.display().to_string(),
            "frames": frames.len(),
            "avg_frame_bytes": avg_len,
            "workers": workers,
            "batch": a.batch,
            "pps": pps,
            "ns_per_packet": 1e9 / pps.max(1e-9),
            "null_pps": null_pps,
            "null_ns_per_packet": 1e9 / null_pps.max(1e-9),
            "ratio_to_null": pps / null_pps.max(1e-9),
            "forwarded_fraction": m.packets as f64 / m.injected.max(1) as f64,
            "stage_ns_per_packet": stages,
            "table_entries": entries,
            "table_memory_bytes": mem,
            "memory_bytes_per_entry": if entries > 0 { mem as f64 / entries as f64 } else { 0.0 },
            "load_seconds": load_s,
        });
        println!("{o}");
    } else {
        println!("program          {}", a.program.display());
        println!(
            "trace            {} frames, {avg_len:.0} bytes average",
            frames.len()
        );
        println!(
            "table entries    {entries} ({:.1} bytes/entry), loaded in {load_s:.2} s",
            if entries > 0 {
                mem as f64 / entries as f64
            } else {
                0.0
            }
        );
        println!("workers          {workers}, batch {}", a.batch);
        println!(
            "forwarded        {} of {} injected ({:.1}%)",
            m.packets,
            m.injected,
            100.0 * m.packets as f64 / m.injected.max(1) as f64
        );
        println!(
            "throughput       {:.3} Mpps, {:.1} ns/packet",
            pps / 1e6,
            1e9 / pps.max(1e-9)
        );
        println!(
            "null program     {:.3} Mpps, {:.1} ns/packet",
            null_pps / 1e6,
            1e9 / null_pps.max(1e-9)
        );
        println!("ratio to null    {:.3}", pps / null_pps.max(1e-9));
        println!("time per stage (ns/packet, share):");
        for ((k, ns), (_, sh)) in m.stage_ns.iter().zip(&m.stage_share) {
            println!("  {k:<12} {ns:>8.1}  {:>5.1}%", sh * 100.0);
        }
    }
    Ok(ExitCode::SUCCESS)
}
