//! `p4jet bench`: replays a trace from memory through the real engine and reports
//! packets per second, ns per packet, latency from injection to transmission and the
//! time per stage, next to a null program (parse nothing, forward to port 0) measured in
//! the same run.
//!
//! Modes: `rtc` (each worker thread runs every stage) and `pipeline` (per worker an
//! ingress and an egress thread joined by p4jet-ring rings, see
//! `p4jet_switch::pipeline`). `--sweep-queue-size` measures both modes for queue sizes
//! 16..8192. The ring on its own is measured by `cargo run --release -p p4jet-ring
//! --example ring_bench` (docs/ring.md).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use p4jet_switch::{
    EgressStage, IngressStage, LatencyHist, STAGES, Stamps, Switch, SwitchConfig, Worker,
};

use crate::run::Mode;

/// `p4jet bench` options.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The bmv2 JSON program (`null`: the null program the figures are compared
    /// with, on its own).
    #[arg(required_unless_present = "suite")]
    pub program: Option<PathBuf>,
    /// Table commands (simple_switch_CLI syntax).
    #[arg(long = "commands")]
    pub commands: Vec<PathBuf>,
    /// Trace to replay (pcap); every frame enters on port 0 unless --port-from-trace.
    #[arg(long = "trace", required_unless_present = "suite")]
    pub trace: Option<PathBuf>,
    /// Run the use-case suite (L2, IPv4, IPv6, VXLAN, BNG over table sizes, frame sizes,
    /// batch and queue sizes and workers, next to the model's prediction) and write
    /// suite.json and index.html (with SVG plots) to --out.
    #[arg(long = "suite")]
    pub suite: bool,
    /// --suite: a small, fast run (two table sizes for L2/IPv4, one for the others, a
    /// few frame and batch sizes, one worker).
    #[arg(long = "quick", requires = "suite")]
    pub quick: bool,
    /// --suite: the report's directory (default p4jet-report).
    #[arg(long = "out", requires = "suite")]
    pub out: Option<PathBuf>,
    /// Forwarding workers; the trace is spread over them by flow hash (a flow stays on
    /// one worker). In pipeline mode each worker is two threads.
    #[arg(long = "workers", default_value_t = 1)]
    pub workers: usize,
    /// `rtc`: one thread runs every stage; `pipeline`: ingress and egress threads
    /// joined by rings of --queue-size slots.
    #[arg(long = "mode", value_enum, default_value_t = Mode::Rtc)]
    pub mode: Mode,
    /// pipeline: slots of the rings between the stages (rounded up to a power of two;
    /// default 1024). rtc: packets kept waiting in front of the worker, like a full rx
    /// ring under overload (default: one batch).
    #[arg(long = "queue-size")]
    pub queue_size: Option<usize>,
    /// Measure both modes for queue sizes 16, 32, ..., 8192 (throughput and latency,
    /// --seconds each) instead of one configuration.
    #[arg(long = "sweep-queue-size")]
    pub sweep_queue_size: bool,
    /// Pin forwarding thread k to the k-th CPU the process may use.
    #[arg(long = "pin")]
    pub pin: bool,
    /// Packets per batch (`auto`: chosen by the performance model, `p4jet model`, from
    /// the program, its loaded tables and the trace's frame size).
    #[arg(long = "batch", default_value = "32")]
    pub batch: crate::model::BatchArg,
    /// Keys per stage of a batched table lookup: all are hashed or indexed and their
    /// buckets prefetched before the first is resolved (1 to 64, or `auto`).
    #[arg(long = "sub-batch", default_value = "32")]
    pub sub_batch: crate::model::BatchArg,
    /// The model's profile for `auto` (default: where `p4jet model --calibrate` writes it).
    #[arg(long = "profile")]
    pub model_profile: Option<PathBuf>,
    /// Seconds to measure each program (each point of a sweep).
    #[arg(long = "seconds", default_value_t = 3.0)]
    pub seconds: f64,
    /// Print one JSON object instead of a table.
    #[arg(long = "json")]
    pub json: bool,
    /// Ingress port of the replayed frames.
    #[arg(long = "port", default_value_t = 0)]
    pub port: u32,
    /// The engine: `reference` (the plain reading of the program), `interp` (the fused
    /// plan, interpreted) or `jit` (compiled to native code). The null program runs on
    /// the same engine.
    #[arg(long = "engine", default_value_t = crate::engine::default_engine())]
    pub engine: p4jet_engine::EngineKind,
    /// Skip the null program and the instrumented stage run (for profilers: only the
    /// program's own replay runs; null figures are reported as 0).
    #[arg(long = "profile-only")]
    pub profile_only: bool,
    /// The lookup-result cache of ternary/range tables: `auto` (the default, as
    /// `p4jet run` uses it), `on`, `off`, or `compare`: measure the program with
    /// the cache as `auto` and again with it off, in the same run.
    #[arg(long = "table-cache", value_enum, default_value_t = TableCache::Auto)]
    pub table_cache: TableCache,
    /// Also measure run-time updates: while one worker forwards the trace, the control
    /// thread adds copies of the largest ternary/range table's entries (priorities past
    /// every existing one: they never win) and deletes them, this many operations per
    /// publish (left-right applies each to both copies); the update rate is reported with
    /// the forwarding rate and forwarded share during the churn.
    #[arg(long = "churn-batch")]
    pub churn_batch: Option<usize>,
}

/// What `--churn-batch` measured.
struct Churn {
    ops: u64,
    secs: f64,
    fwd: Measure,
    table: String,
    entries: usize,
}

/// `--churn-batch`: forwards on one worker while the control thread adds copies of the
/// largest ternary/range table's entries (with priorities past every existing one, so
/// they never win and the forwarding decisions stay those of the loaded table) and
/// deletes them again, `batch` operations per publish.
fn churn(sw: &mut Switch, frames: &[Vec<u8>], s: &Setup, batch: usize) -> Option<Churn> {
    use p4jet_engine::Op;
    use p4jet_engine::state::NewEntry;
    let (table, name, entries) = sw.with_state(|st| {
        let (i, t) = st
            .tables
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                matches!(
                    t.entries.kind(),
                    p4jet_tables::TableKind::Ternary | p4jet_tables::TableKind::Range
                )
            })
            .max_by_key(|(_, t)| t.entries.len())?;
        let es: Vec<_> = t
            .entries
            .iter()
            .map(|(_, k, v)| (k.into_owned(), v.clone()))
            .collect();
        Some((i as u32, format!("table {i}"), es))
    })??;
    let top = entries.iter().map(|e| e.0.priority).max()?;
    let n = entries.len();
    let mut w = sw.new_worker();
    let stop = AtomicBool::new(false);
    let half = (batch / 2).max(1);
    std::thread::scope(|sc| {
        let h = sc.spawn(|| {
            let m = measure(&mut w, frames, s);
            stop.store(true, Ordering::Release);
            m
        });
        let t0 = Instant::now();
        let mut ops = 0u64;
        let mut at = 0usize;
        while !stop.load(Ordering::Acquire) {
            let chunk = at..(at + half).min(n);
            let adds: Vec<NewEntry> = chunk
                .clone()
                .map(|i| {
                    let mut key = entries[i].0.clone();
                    key.priority = top.saturating_add(1 + i as i32);
                    NewEntry {
                        table,
                        key,
                        value: entries[i].1.clone(),
                    }
                })
                .collect();
            let handles: Vec<_> = sw.apply_entries(adds).into_iter().flatten().collect();
            ops += handles.len() as u64;
            sw.apply_many(handles.iter().map(|&handle| Op::DeleteEntry {
                table,
                entry: p4jet_engine::state::EntryLoc::Handle(handle),
            }));
            ops += handles.len() as u64;
            at = if chunk.end >= n { 0 } else { chunk.end };
        }
        let secs = t0.elapsed().as_secs_f64();
        let fwd = h.join().unwrap_or_default();
        Some(Churn {
            ops,
            secs,
            fwd,
            table: name,
            entries: n,
        })
    })
}

/// `--table-cache`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TableCache {
    Auto,
    On,
    Off,
    Compare,
}

impl TableCache {
    fn mode(self) -> p4jet_tables::CacheMode {
        match self {
            TableCache::Auto | TableCache::Compare => p4jet_tables::CacheMode::Auto,
            TableCache::On => p4jet_tables::CacheMode::On(p4jet_tables::DEFAULT_CACHE_SETS),
            TableCache::Off => p4jet_tables::CacheMode::Off,
        }
    }
}

/// Lookup-cache counts summed over the switch's tables.
fn cache_stats(sw: &Switch) -> p4jet_tables::CacheStats {
    sw.with_state(|s| {
        let mut t = p4jet_tables::CacheStats::default();
        for c in s.tables.iter().filter_map(|t| t.entries.cache_stats()) {
            t.probed += c.probed;
            t.hits += c.hits;
            t.skipped += c.skipped;
        }
        t
    })
    .unwrap_or_default()
}

fn cache_json(c: &p4jet_tables::CacheStats) -> serde_json::Value {
    let keys = c.probed + c.skipped;
    serde_json::json!({
        "probed": c.probed,
        "hits": c.hits,
        "skipped": c.skipped,
        "hit_rate": if keys > 0 { c.hits as f64 / keys as f64 } else { 0.0 },
    })
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

pub fn read_trace(path: &PathBuf) -> Result<Vec<Vec<u8>>, String> {
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

/// Results of one measurement.
#[derive(Debug, Clone, Default)]
pub struct Measure {
    /// Packets forwarded.
    pub packets: u64,
    /// Packets injected.
    pub injected: u64,
    /// Packets run through the worker to warm it up before the timed run (not counted
    /// in `packets`, `injected` or the rates).
    pub warmup: u64,
    /// Wall time.
    pub secs: f64,
    /// Share of time per stage (fractions of the instrumented run; rtc only).
    pub stage_share: Vec<(String, f64)>,
    /// Nanoseconds per packet per stage (rtc only).
    pub stage_ns: Vec<(String, f64)>,
    /// Injection-to-transmission latency of the forwarded packets.
    pub latency: LatencyHist,
    /// CPU time of the forwarding threads (ns, from /proc/thread-self/schedstat).
    pub cpu_ns: u64,
    /// Forwarding threads.
    pub threads: usize,
    /// pipeline: times the ingress stage found the ring to egress full.
    pub ring_full_waits: u64,
    /// pipeline: times the egress stage found its ring empty.
    pub ring_empty_waits: u64,
    /// pipeline: times a stage blocked in the kernel (parks, both sides).
    pub ring_parks: u64,
}

impl Measure {
    /// Packets per second.
    pub fn pps(&self) -> f64 {
        self.packets as f64 / self.secs.max(1e-9)
    }

    /// CPU time per forwarded packet (ns).
    pub fn cpu_per_packet(&self) -> f64 {
        self.cpu_ns as f64 / self.packets.max(1) as f64
    }

    /// Fraction of the wall time the forwarding threads were on a CPU (1 = each had a
    /// core to itself all along).
    pub fn cpu_share(&self) -> f64 {
        self.cpu_ns as f64 / (self.secs.max(1e-9) * 1e9 * self.threads.max(1) as f64)
    }

    fn add(&mut self, r: &Measure) {
        self.packets += r.packets;
        self.injected += r.injected;
        self.warmup += r.warmup;
        self.secs = self.secs.max(r.secs);
        self.latency.merge(&r.latency);
        self.cpu_ns += r.cpu_ns;
        self.threads += r.threads;
        self.ring_full_waits += r.ring_full_waits;
        self.ring_empty_waits += r.ring_empty_waits;
        self.ring_parks += r.ring_parks;
    }
}

/// CPU time of the calling thread in ns (0 if unknown).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// The load average (1, 5, 15 minutes).
pub fn load_average() -> [f64; 3] {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut it = s.split_whitespace().map(|v| v.parse().unwrap_or(0.0));
    [
        it.next().unwrap_or(0.0),
        it.next().unwrap_or(0.0),
        it.next().unwrap_or(0.0),
    ]
}

/// How one measurement runs.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// Ingress port of the frames.
    pub port: u32,
    /// Packets per batch.
    pub batch: usize,
    /// Seconds measured.
    pub secs: f64,
    /// rtc: packets kept waiting in front of the worker; pipeline: ring slots.
    pub queue: usize,
    /// Print the rate every second.
    pub progress: bool,
    /// Also measure the time per stage (rtc).
    pub stages: bool,
}

fn pin(cpus: &[usize], i: usize) {
    if !cpus.is_empty() {
        let _ = p4jet_io::affinity::pin_to_nth_allowed(i, cpus);
    }
}

/// The timed replay loop of [`measure`]: keeps the worker's input at `s.queue`
/// packets from `frames` (cycling from `*i`) and steps it for `dur` seconds; returns
/// the seconds elapsed. A named function kept out of line so that instruction
/// profiles can collect exactly this loop
/// (`valgrind --tool=callgrind --toggle-collect=p4jet::bench::replay`).
#[inline(never)]
pub fn replay(
    w: &mut Worker,
    frames: &[Vec<u8>],
    s: &Setup,
    dur: f64,
    sent: &mut u64,
    injected: &mut u64,
    i: &mut usize,
) -> f64 {
    let backlog = s.queue.max(1);
    let port = s.port;
    let start = Instant::now();
    let mut next_report = start + Duration::from_secs(1);
    let mut steps = 0u64;
    loop {
        w.core.mark_rx();
        let want = backlog.saturating_sub(w.pending());
        // the trace's next `want` frames, in runs up to its end (no test per frame)
        let mut left = want;
        while left > 0 {
            let run = &frames[*i..frames.len().min(*i + left)];
            if run.is_empty() {
                break; // (no frames: `read_trace` refuses an empty trace)
            }
            w.inject_all(port, run.iter().map(Vec::as_slice));
            left -= run.len();
            *i += run.len();
            if *i == frames.len() {
                *i = 0;
            }
        }
        *injected += want as u64;
        w.step(&mut |_, _| *sent += 1);
        steps += 1;
        if steps.is_multiple_of(64) {
            let now = Instant::now();
            let el = now.duration_since(start).as_secs_f64();
            if el >= dur {
                return el;
            }
            if s.progress && now >= next_report {
                eprint!("\r  {:.2} Mpps ...", *sent as f64 / el / 1e6);
                let _ = std::io::stderr().flush();
                next_report = now + Duration::from_secs(1);
            }
        }
    }
}

/// Replays `frames` through a run-to-completion worker for `s.secs` seconds, keeping
/// `s.queue` packets injected ahead of processing (a step takes at most a batch of
/// them: below a batch, the batches are that small).
pub fn measure(w: &mut Worker, frames: &[Vec<u8>], s: &Setup) -> Measure {
    let batch = s.batch.max(1);
    let port = s.port;
    w.core.enable_latency(Stamps::new());
    // warm up
    let warmup = frames.len().clamp(batch * 4, 65536);
    for f in frames.iter().cycle().take(warmup) {
        w.inject(port, f);
        if w.pending() >= batch {
            w.step(&mut |_, _| {});
        }
    }
    w.run_until_idle(&mut |_, _| {});
    w.core.latency.clear();
    let mut i = 0usize;
    let (mut sent, mut injected) = (0u64, 0u64);
    let cpu0 = thread_cpu_ns();
    let el = replay(w, frames, s, s.secs, &mut sent, &mut injected, &mut i);
    w.run_until_idle(&mut |_, _| sent += 1);
    let cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
    if s.progress {
        eprint!("\r                              \r");
    }
    let latency = w.core.latency.clone();
    let (mut stage_share, mut stage_ns) = (vec![], vec![]);
    if s.stages {
        // a shorter instrumented run for the stage shares
        w.core.timing = true;
        w.core.stage_ns = [0; 5];
        let (mut s2, mut i2) = (0u64, 0u64);
        let t0 = Instant::now();
        replay(
            w,
            frames,
            s,
            (s.secs / 4.0).max(0.2),
            &mut s2,
            &mut i2,
            &mut i,
        );
        let total_ns = t0.elapsed().as_nanos() as f64;
        w.core.timing = false;
        let staged: u64 = w.core.stage_ns.iter().sum();
        for (k, name) in STAGES.iter().enumerate() {
            let ns = w.core.stage_ns[k] as f64;
            stage_share.push((name.to_string(), ns / total_ns));
            stage_ns.push((name.to_string(), ns / s2.max(1) as f64));
        }
        // the rest: rx (copy into pooled buffers), batching, loop overhead
        let other = (total_ns - staged as f64).max(0.0);
        stage_share.push(("rx+io".into(), other / total_ns));
        stage_ns.push(("rx+io".into(), other / s2.max(1) as f64));
        w.run_until_idle(&mut |_, _| {});
    }
    Measure {
        packets: sent,
        injected,
        warmup: warmup as u64,
        secs: el,
        stage_share,
        stage_ns,
        latency,
        cpu_ns,
        threads: 1,
        ..Measure::default()
    }
}

/// Replays `frames` through a pipelined worker (`Switch::new_pipeline`, the egress
/// stage on a second thread, pinned to the `egress_cpu`-th of `cpus`) for `s.secs`
/// seconds.
pub fn measure_pipeline(
    (mut ing, mut egr): (IngressStage, EgressStage),
    frames: &[Vec<u8>],
    s: &Setup,
    cpus: &[usize],
    egress_cpu: usize,
) -> Measure {
    let batch = s.batch.max(1);
    let port = s.port;
    let stamps = Stamps::new();
    ing.enable_latency(stamps.clone());
    egr.enable_latency(stamps);
    let sent = AtomicU64::new(0);
    let clear = AtomicBool::new(false);
    std::thread::scope(|sc| {
        let h = sc.spawn(|| {
            pin(cpus, egress_cpu);
            let cpu0 = thread_cpu_ns();
            let mut n = 0u64;
            let mut cpu_from = cpu0;
            loop {
                let r = egr.step(&mut |_, _| n += 1, Duration::from_millis(10));
                sent.store(n, Ordering::Release);
                if clear.swap(false, Ordering::AcqRel) {
                    egr.core_mut().latency.clear();
                    cpu_from = thread_cpu_ns();
                }
                if r.is_err() {
                    break;
                }
            }
            (
                egr.core().latency.clone(),
                thread_cpu_ns().saturating_sub(cpu_from),
                egr.ring_stats(),
            )
        });
        // warm up
        let mut i = 0usize;
        let warm = frames.len().clamp(batch * 4, 65536);
        let mut k = 0;
        while k < warm {
            for _ in 0..batch {
                ing.inject(port, &frames[i]);
                i = (i + 1) % frames.len();
            }
            k += batch;
            let _ = ing.step();
        }
        let _ = ing.run_until_idle();
        clear.store(true, Ordering::Release);
        while clear.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        let sent0 = sent.load(Ordering::Acquire);
        let stats0 = ing.ring_stats();
        let cpu0 = thread_cpu_ns();
        let start = Instant::now();
        let mut next_report = start + Duration::from_secs(1);
        let mut injected = 0u64;
        let mut steps = 0u64;
        loop {
            ing.core_mut().mark_rx();
            for _ in 0..batch {
                ing.inject(port, &frames[i]);
                i += 1;
                if i == frames.len() {
                    i = 0;
                }
            }
            injected += batch as u64;
            if ing.step().is_err() {
                break;
            }
            steps += 1;
            if steps.is_multiple_of(64) {
                let now = Instant::now();
                let el = now.duration_since(start).as_secs_f64();
                if el >= s.secs {
                    break;
                }
                if s.progress && now >= next_report {
                    let n = sent.load(Ordering::Relaxed) - sent0;
                    eprint!("\r  {:.2} Mpps ...", n as f64 / el / 1e6);
                    let _ = std::io::stderr().flush();
                    next_report = now + Duration::from_secs(1);
                }
            }
        }
        let _ = ing.run_until_idle();
        let el = start.elapsed().as_secs_f64();
        let cpu1 = thread_cpu_ns().saturating_sub(cpu0);
        let stats1 = ing.ring_stats();
        ing.close();
        if s.progress {
            eprint!("\r                              \r");
        }
        let (latency, cpu2, _) = h.join().unwrap_or_default();
        let packets = sent.load(Ordering::Acquire) - sent0;
        Measure {
            packets,
            injected,
            secs: el,
            latency,
            cpu_ns: cpu1 + cpu2,
            threads: 2,
            ring_full_waits: stats1.producer_waits - stats0.producer_waits,
            ring_empty_waits: stats1.consumer_waits - stats0.consumer_waits,
            ring_parks: (stats1.producer_parks + stats1.consumer_parks)
                - (stats0.producer_parks + stats0.consumer_parks),
            ..Measure::default()
        }
    })
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

/// Runs `workers` workers (threads, or pairs of threads in pipeline mode), each
/// replaying its share of the trace; returns the aggregate. With `pin`, forwarding
/// thread k runs on the k-th allowed CPU.
pub fn measure_parallel(
    sw: &Switch,
    frames: &[Vec<u8>],
    s: &Setup,
    workers: usize,
    mode: Mode,
    pin_threads: bool,
) -> Measure {
    let cpus = if pin_threads {
        p4jet_io::affinity::allowed_cpus().unwrap_or_default()
    } else {
        vec![]
    };
    let workers = workers.max(1);
    let mut parts: Vec<Vec<Vec<u8>>> = vec![vec![]; workers];
    if workers == 1 {
        parts[0] = frames.to_vec();
    } else {
        for f in frames {
            parts[(flow_hash(f) % workers as u64) as usize].push(f.clone());
        }
    }
    for p in parts.iter_mut() {
        if p.is_empty() {
            p.push(frames[0].clone());
        }
    }
    let results: Vec<Measure> = std::thread::scope(|sc| {
        let hs: Vec<_> = parts
            .iter()
            .enumerate()
            .map(|(k, part)| {
                let setup = Setup {
                    progress: s.progress && k == 0,
                    ..*s
                };
                let cpus = &cpus;
                match mode {
                    Mode::Rtc => {
                        let mut w = sw.new_worker();
                        sc.spawn(move || {
                            pin(cpus, k);
                            measure(&mut w, part, &setup)
                        })
                    }
                    Mode::Pipeline => {
                        let stages = sw.new_pipeline(s.queue);
                        sc.spawn(move || {
                            pin(cpus, 2 * k);
                            measure_pipeline(stages, part, &setup, cpus, 2 * k + 1)
                        })
                    }
                }
            })
            .collect();
        hs.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut total = Measure::default();
    for r in &results {
        total.add(r);
    }
    if let Some(first) = results.first() {
        total.stage_share = first.stage_share.clone();
        total.stage_ns = first.stage_ns.clone();
    }
    total
}

fn us(ns: f64) -> f64 {
    ns / 1000.0
}

fn latency_json(h: &LatencyHist) -> serde_json::Value {
    serde_json::json!({
        "mean_us": us(h.mean_ns()),
        "p50_us": us(h.quantile_ns(0.5) as f64),
        "p99_us": us(h.quantile_ns(0.99) as f64),
        "max_us": us(h.max_ns() as f64),
        "samples": h.count(),
    })
}

/// Queue sizes of `--sweep-queue-size`.
pub const SWEEP_SIZES: [usize; 10] = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192];

fn sweep(
    a: &BenchArgs,
    sw: &Switch,
    frames: &[Vec<u8>],
    (batch, sub_batch): (usize, usize),
) -> Result<ExitCode, String> {
    let program = a.program.clone().unwrap_or_default();
    let trace = a.trace.clone().unwrap_or_default();
    let load0 = load_average();
    let workers = a.workers.max(1);
    let mut rows = vec![];
    if !a.json {
        println!("program          {}", program.display());
        println!("engine           {}", crate::engine::describe(&sw.engine));
        println!(
            "workers          {workers}, batch {}, {} s per point, load average {:.2} {:.2} {:.2}",
            batch, a.seconds, load0[0], load0[1], load0[2]
        );
        println!(
            "queue: rtc = packets waiting in front of the worker (rx backlog), pipeline = ring slots between the stages"
        );
        println!("latency: injection to transmission, per packet");
        println!(
            "{:<9} {:>6} {:>8} {:>9} {:>10} {:>9} {:>9} {:>9} {:>5}",
            "mode", "queue", "Mpps", "ns/pkt", "mean us", "p99 us", "max us", "cpu/pkt", "cpu%"
        );
    }
    for mode in [Mode::Rtc, Mode::Pipeline] {
        for q in SWEEP_SIZES {
            let setup = Setup {
                port: a.port,
                batch: batch.max(1),
                secs: a.seconds,
                queue: q,
                progress: false,
                stages: false,
            };
            let m = measure_parallel(sw, frames, &setup, workers, mode, a.pin);
            let pps = m.pps();
            let cpu = m.cpu_per_packet();
            if !a.json {
                println!(
                    "{:<9} {:>6} {:>8.3} {:>9.1} {:>10.1} {:>9.1} {:>9.1} {:>9.1} {:>5.0}",
                    mode.to_string(),
                    q,
                    pps / 1e6,
                    1e9 / pps.max(1e-9),
                    us(m.latency.mean_ns()),
                    us(m.latency.quantile_ns(0.99) as f64),
                    us(m.latency.max_ns() as f64),
                    cpu,
                    100.0 * m.cpu_share()
                );
                let _ = std::io::stdout().flush();
            }
            rows.push(serde_json::json!({
                "mode": mode.to_string(),
                "queue_size": q,
                "pps": pps,
            "packets": m.packets,
                "ns_per_packet": 1e9 / pps.max(1e-9),
                "latency": latency_json(&m.latency),
                "cpu_ns_per_packet": cpu,
                "cpu_share": m.cpu_share(),
                "forwarded_fraction": m.packets as f64 / m.injected.max(1) as f64,
                "ring_full_waits": m.ring_full_waits,
                "ring_empty_waits": m.ring_empty_waits,
                "ring_parks": m.ring_parks,
            }));
        }
    }
    let load1 = load_average();
    if a.json {
        let o = serde_json::json!({
            "program": program.display().to_string(),
            "trace": trace.display().to_string(),
            "frames": frames.len(),
            "workers": workers,
            "batch": batch,
            "sub_batch": sub_batch,
            "seconds_per_point": a.seconds,
            "load_average_start": load0,
            "load_average_end": load1,
            "sweep": rows,
        });
        println!("{o}");
    } else {
        println!(
            "load average     {:.2} {:.2} {:.2} at the end",
            load1[0], load1[1], load1[2]
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `p4jet bench`.
pub fn main(a: BenchArgs) -> Result<ExitCode, String> {
    if a.suite {
        return crate::suite::main(&a);
    }
    let (Some(program), Some(trace)) = (a.program.clone(), a.trace.clone()) else {
        return Err("give PROGRAM.json and --trace (or --suite)".into());
    };
    let json = if program.as_os_str() == "null" {
        NULL_PROGRAM.to_string()
    } else {
        std::fs::read_to_string(&program).map_err(|e| format!("{}: {e}", program.display()))?
    };
    let frames = read_trace(&trace)?;
    let workers = a.workers.max(1);
    let fixed = |x: crate::model::BatchArg, d: usize| match x {
        crate::model::BatchArg::Fixed(n) => n,
        crate::model::BatchArg::Auto => d,
    };
    if let crate::model::BatchArg::Fixed(s) = a.sub_batch
        && !(1..=64).contains(&s)
    {
        return Err(format!("--sub-batch {s}: expected 1..64 or auto"));
    }
    let (mut batch, mut sub_batch) = (
        fixed(a.batch, 32),
        fixed(a.sub_batch, p4jet_engine::DEFAULT_SUB_BATCH),
    );
    let mut cfg = SwitchConfig {
        batch,
        sub_batch,
        engine: a.engine,
        ..SwitchConfig::default()
    };
    p4jet_tables::set_default_cache_mode(a.table_cache.mode());
    let t_load = Instant::now();
    let load = |cfg: &SwitchConfig| -> Result<Switch, String> {
        let mut sw =
            Switch::new(&json, cfg.clone()).map_err(|e| format!("{}: {e}", program.display()))?;
        if !crate::run::apply_commands_quiet(&mut sw, &a.commands)? {
            return Err("some commands failed".into());
        }
        Ok(sw)
    };
    let mut sw = load(&cfg)?;
    let mut auto_note = None;
    if a.batch == crate::model::BatchArg::Auto || a.sub_batch == crate::model::BatchArg::Auto {
        let paths = crate::paths::PathStats::measure(
            &json,
            |s| {
                crate::run::apply_commands_quiet(s, &a.commands)?
                    .then_some(())
                    .ok_or_else(|| "some commands failed".to_string())
            },
            &frames,
            a.port,
            crate::paths::SAMPLE,
        )
        .map_err(|e| {
            eprintln!(
                "p4jet bench: the model's traced sample of {}: {e}; pricing the costliest path",
                program.display()
            )
        })
        .ok();
        let (b, sb, pred) =
            crate::model::auto_for(&sw, a.model_profile.as_deref(), &frames, paths.as_ref())?;
        batch = fixed(a.batch, b);
        sub_batch = fixed(a.sub_batch, sb);
        auto_note = Some(pred);
        if sub_batch != cfg.sub_batch || batch != cfg.batch {
            // the prefetch distance is fixed when the tables are made: load again
            cfg.batch = batch;
            cfg.sub_batch = sub_batch;
            sw = load(&cfg)?;
        }
    }
    let load_s = t_load.elapsed().as_secs_f64();
    let sw_off = if a.table_cache == TableCache::Compare {
        p4jet_tables::set_default_cache_mode(p4jet_tables::CacheMode::Off);
        let mut s =
            Switch::new(&json, cfg.clone()).map_err(|e| format!("{}: {e}", program.display()))?;
        if !crate::run::apply_commands_quiet(&mut s, &a.commands)? {
            return Err("some commands failed".into());
        }
        p4jet_tables::set_default_cache_mode(p4jet_tables::CacheMode::Auto);
        Some(s)
    } else {
        None
    };
    if a.sweep_queue_size {
        return sweep(&a, &sw, &frames, (batch, sub_batch));
    }
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
    let queue = a.queue_size.unwrap_or(match a.mode {
        Mode::Rtc => batch.max(1),
        Mode::Pipeline => 1024,
    });
    let load0 = load_average();
    let setup = Setup {
        port: a.port,
        batch: batch.max(1),
        secs: a.seconds,
        queue,
        progress: !a.json,
        stages: !a.profile_only,
    };
    let cache0 = cache_stats(&sw);
    let m = measure_parallel(&sw, &frames, &setup, workers, a.mode, a.pin);
    let cache1 = cache_stats(&sw);
    let cache = p4jet_tables::CacheStats {
        probed: cache1.probed - cache0.probed,
        hits: cache1.hits - cache0.hits,
        skipped: cache1.skipped - cache0.skipped,
    };
    let churned = a.churn_batch.and_then(|b| {
        churn(
            &mut sw,
            &frames,
            &Setup {
                stages: false,
                progress: false,
                ..setup
            },
            b,
        )
    });
    let m_off = sw_off
        .as_ref()
        .map(|s| measure_parallel(s, &frames, &setup, workers, a.mode, a.pin));
    let n = if a.profile_only {
        Measure::default()
    } else {
        measure_parallel(&null, &frames, &setup, workers, a.mode, a.pin)
    };
    let load1 = load_average();
    let pps = m.pps();
    let null_pps = n.pps();
    let avg_len = frames.iter().map(|f| f.len()).sum::<usize>() as f64 / frames.len() as f64;
    let cpu = m.cpu_per_packet();
    let queue_used = match a.mode {
        Mode::Rtc => queue.max(1),
        Mode::Pipeline => p4jet_switch::pipeline::ring_capacity(queue),
    };
    if a.json {
        let churn_json = churned.as_ref().map(|c| {
            serde_json::json!({
                "table": c.table,
                "entries": c.entries,
                "batch": a.churn_batch,
                "updates": c.ops,
                "updates_per_second": c.ops as f64 / c.secs.max(1e-9),
                "pps": c.fwd.pps(),
                "packets": c.fwd.packets,
                "injected": c.fwd.injected,
            })
        });
        let cache_off_json = m_off.as_ref().map(|o| {
            serde_json::json!({
                "pps": o.pps(),
                "ns_per_packet": 1e9 / o.pps().max(1e-9),
                "cpu_ns_per_packet": o.cpu_per_packet(),
                "ratio_to_null": o.pps() / null_pps.max(1e-9),
            })
        });
        let predicted_json = auto_note.as_ref().map(|p| {
            serde_json::json!({
                "ns_per_packet": p.ns_per_packet,
                "mpps_per_core": p.mpps_per_core,
                "binding": p.binding,
            })
        });
        let stages: serde_json::Map<String, serde_json::Value> = m
            .stage_ns
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::json!(v)))
            .collect();
        let o = serde_json::json!({
            "program": program.display().to_string(),
            "trace": trace.display().to_string(),
            "frames": frames.len(),
            "avg_frame_bytes": avg_len,
            "workers": workers,
            "mode": a.mode.to_string(),
            "queue_size": queue_used,
            "threads": m.threads,
            "batch": batch,
            "sub_batch": sub_batch,
            "pps": pps,
            "packets": m.packets,
            "injected": m.injected,
            "warmup_packets": m.warmup,
            "ns_per_packet": 1e9 / pps.max(1e-9),
            "latency": latency_json(&m.latency),
            "cpu_ns_per_packet": cpu,
            "cpu_share": m.cpu_share(),
            "ring_full_waits": m.ring_full_waits,
            "ring_empty_waits": m.ring_empty_waits,
            "ring_parks": m.ring_parks,
            "null_pps": null_pps,
            "null_cpu_ns_per_packet": n.cpu_per_packet(),
            "null_ns_per_packet": 1e9 / null_pps.max(1e-9),
            "ratio_to_null": pps / null_pps.max(1e-9),
            "forwarded_fraction": m.packets as f64 / m.injected.max(1) as f64,
            "stage_ns_per_packet": stages,
            "table_entries": entries,
            "table_memory_bytes": mem,
            "memory_bytes_per_entry": if entries > 0 { mem as f64 / entries as f64 } else { 0.0 },
            "load_seconds": load_s,
            "engine": a.engine.name(),
            "compile_ms": crate::engine::compile_ms(&sw.engine).0,
            "compile_cpu_ms": crate::engine::compile_ms(&sw.engine).1,
            "code_bytes": sw.engine.native().map_or(0, |n| n.stats().code_bytes),
            "table_cache": format!("{:?}", a.table_cache).to_lowercase(),
            "lookup_cache": cache_json(&cache),
            "cache_off": cache_off_json,
            "churn": churn_json,
            "load_average_start": load0,
            "load_average_end": load1,
        });
        let mut o = o;
        o["batch_auto"] = serde_json::json!(a.batch == crate::model::BatchArg::Auto);
        o["sub_batch_auto"] = serde_json::json!(a.sub_batch == crate::model::BatchArg::Auto);
        o["predicted"] = serde_json::json!(predicted_json);
        println!("{o}");
    } else {
        println!("program          {}", program.display());
        println!("engine           {}", crate::engine::describe(&sw.engine));
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
        match a.mode {
            Mode::Rtc => println!(
                "mode             rtc: {workers} worker thread(s), batch {batch}, {queue_used} packets queued ahead"
            ),
            Mode::Pipeline => println!(
                "mode             pipeline: {workers} worker(s) x 2 threads, batch {batch}, rings of {queue_used} slots"
            ),
        }
        if let Some(p) = &auto_note {
            println!(
                "auto             batch {batch}, sub-batch {sub_batch} chosen by the model (predicted {:.1} ns/packet of CPU, {:.2} Mpps per core, {} binds)",
                p.ns_per_packet, p.mpps_per_core, p.binding
            );
        }
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
            "latency          mean {:.1} us, p99 {:.1} us, max {:.1} us (injection to transmission)",
            us(m.latency.mean_ns()),
            us(m.latency.quantile_ns(0.99) as f64),
            us(m.latency.max_ns() as f64)
        );
        println!(
            "cpu              {cpu:.1} ns/packet over {} thread(s), on a CPU {:.0}% of the time",
            m.threads,
            100.0 * m.cpu_share()
        );
        if a.mode == Mode::Pipeline {
            let per_k = |v: u64| 1000.0 * v as f64 / m.packets.max(1) as f64;
            println!(
                "ring             per 1000 packets: ingress found it full {:.2} times, egress found it empty {:.2} times, {:.3} parks",
                per_k(m.ring_full_waits),
                per_k(m.ring_empty_waits),
                per_k(m.ring_parks)
            );
        }
        println!(
            "null program     {:.3} Mpps, {:.1} ns/packet",
            null_pps / 1e6,
            1e9 / null_pps.max(1e-9)
        );
        println!("ratio to null    {:.3}", pps / null_pps.max(1e-9));
        let keys = cache.probed + cache.skipped;
        if keys > 0 {
            println!(
                "lookup cache     {:.1}% of {keys} ternary/range lookups answered by the cache ({} skipped it while it kept missing)",
                100.0 * cache.hits as f64 / keys as f64,
                cache.skipped
            );
        }
        if let Some(c) = &churned {
            println!(
                "updates          {:.0} per second on {} ({} entries: copies added and deleted, {} per publish) while forwarding {:.3} Mpps ({} of {} injected forwarded)",
                c.ops as f64 / c.secs.max(1e-9),
                c.table,
                c.entries,
                a.churn_batch.unwrap_or(0),
                c.fwd.pps() / 1e6,
                c.fwd.packets,
                c.fwd.injected
            );
        }
        if let Some(o) = &m_off {
            println!(
                "cache off        {:.3} Mpps, {:.1} ns/packet, ratio to null {:.3}",
                o.pps() / 1e6,
                1e9 / o.pps().max(1e-9),
                o.pps() / null_pps.max(1e-9)
            );
        }
        if !m.stage_ns.is_empty() {
            println!("time per stage (ns/packet, share):");
            for ((k, ns), (_, sh)) in m.stage_ns.iter().zip(&m.stage_share) {
                println!("  {k:<12} {ns:>8.1}  {:>5.1}%", sh * 100.0);
            }
        }
        println!(
            "load average     {:.2} {:.2} {:.2} before, {:.2} {:.2} {:.2} after",
            load0[0], load0[1], load0[2], load1[0], load1[1], load1[2]
        );
    }
    Ok(ExitCode::SUCCESS)
}
