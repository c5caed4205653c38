//! `p4jet run`: simple_switch's command line.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;

use crate::logfile::{self, LogSink};
use p4jet_control::cli::Cli;
use p4jet_io::{PcapFilePort, PcapRecorder, Port};
use p4jet_switch::{PortCounters, Switch, SwitchConfig};
use p4jet_thrift::{ServerConfig, ServerHandle, SharedRuntime};

use crate::forward;

/// simple_switch options.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The bmv2 JSON program (p4c-bm2-ss output). Leave it out with `--no-p4`.
    pub program: Option<PathBuf>,
    /// Start without a program: packets are dropped until a controller pushes one
    /// over P4Runtime (SetForwardingPipelineConfig) or Thrift (load + swap).
    #[arg(long = "no-p4", conflicts_with = "program")]
    pub no_p4: bool,
    /// Serve P4Runtime (gRPC) as simple_switch_grpc does; implied by the name
    /// `simple_switch_grpc`, by `--no-p4` and by the gRPC target options.
    #[arg(long = "p4runtime", hide = true)]
    pub p4runtime: bool,
    /// `PORT@NAME`: attach port number PORT to interface (or pcap base name) NAME;
    /// `PORT@dpdk:DEVARGS` for a DPDK device (`0@dpdk:net_tap0,iface=dtap0`,
    /// `1@dpdk:0000:01:00.0`; builds with the `dpdk` feature).
    #[arg(short = 'i', long = "interface", value_name = "PORT@NAME")]
    pub interfaces: Vec<String>,
    /// Read `NAME_in.pcap`, write `NAME_out.pcap` for every `-i PORT@NAME`, after
    /// waiting this many seconds (simple_switch --use-files).
    #[arg(long = "use-files", value_name = "WAIT_S")]
    pub use_files: Option<f64>,
    /// Table commands (simple_switch_CLI syntax) applied before the first packet;
    /// `-` reads them from standard input. May be repeated.
    #[arg(long = "commands", value_name = "FILE")]
    pub commands: Vec<PathBuf>,
    /// Exit once every input is consumed and every packet has left (pcap files),
    /// printing per-port counts.
    #[arg(long = "exit-when-done")]
    pub exit_when_done: bool,
    /// Print a per-packet trace on standard output.
    #[arg(long = "log-console")]
    pub log_console: bool,
    /// Write the per-packet trace to FILE.txt (simple_switch appends .txt).
    #[arg(long = "log-file", value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Per-packet log level: trace (default), debug, info, warn, error or off.
    #[arg(short = 'L', long = "log-level", value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Flush the log after every line (accepted; p4jet always flushes per batch).
    #[arg(long = "log-flush")]
    pub log_flush: bool,
    /// Record every port's traffic into DIR/<name>_in.pcap and _out.pcap.
    #[arg(long = "pcap", value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
    pub pcap: Option<PathBuf>,
    /// Thrift runtime server port.
    #[arg(long = "thrift-port", default_value_t = 9090)]
    pub thrift_port: u16,
    /// Address the Thrift server binds to.
    #[arg(long = "thrift-ip", default_value = "127.0.0.1")]
    pub thrift_ip: String,
    /// Device id.
    #[arg(long = "device-id", default_value_t = 0)]
    pub device_id: u32,
    /// nanomsg event logger address (accepted, not supported: ignored with a warning).
    #[arg(long = "nanolog", value_name = "ADDR")]
    pub nanolog: Option<String>,
    /// nanomsg PUB address of learning and port notifications (default
    /// `ipc:///tmp/bmv2-<device-id>-notifications.ipc`, as simple_switch).
    #[arg(long = "notifications-addr", value_name = "ADDR")]
    pub notifications_addr: Option<String>,
    /// Serve the packet books in the Prometheus text format on `GET /metrics` at
    /// ADDR (`HOST:PORT`, or a port on 127.0.0.1); off by default.
    #[arg(long = "metrics-addr", value_name = "ADDR")]
    pub metrics_addr: Option<String>,
    /// Bytes of every frame received and sent written in hex to the log (`[I]` lines,
    /// as simple_switch; needs `--log-console` or `--log-file`; 0, the default: none).
    #[arg(long = "dump-packet-data", value_name = "N")]
    pub dump_packet_data: Option<usize>,
    /// Event-logger debugger (accepted, not supported: ignored with a warning).
    #[arg(long = "debugger", hide = true)]
    pub debugger: bool,
    /// Debugger address (accepted, ignored with a warning).
    #[arg(long = "debugger-addr", value_name = "ADDR", hide = true)]
    pub debugger_addr: Option<String>,
    /// State file to restore (accepted, not supported: ignored with a warning).
    #[arg(long = "restore-state", value_name = "FILE", hide = true)]
    pub restore_state: Option<PathBuf>,
    /// Size of the log file (bytes) at which it is rotated (default 5242880, as
    /// simple_switch).
    #[arg(long = "log-file-max-size", value_name = "BYTES")]
    pub log_file_max_size: Option<u64>,
    /// Rotated log files kept: FILE.1.txt ... FILE.N.txt (default 3, as simple_switch).
    #[arg(long = "log-file-max-files", value_name = "N")]
    pub log_file_max_files: Option<u64>,
    /// Largest port number + 1 (accepted, ignored with a warning).
    #[arg(long = "max-port-count", value_name = "N", hide = true)]
    pub max_port_count: Option<u32>,
    /// Packets per ingress batch (`auto`: chosen by the performance model from the
    /// program and the profile of `p4jet model --calibrate`, then adjusted by each
    /// run-to-completion thread from the cost it measures).
    #[arg(long = "batch", default_value = "32")]
    pub batch: crate::model::BatchArg,
    /// Seconds an empty pcap FIFO input (open, nothing written yet) holds back the
    /// others, so that frames enter in timestamp order across inputs; then the others
    /// go on without it until it delivers. simple_switch waits for ever.
    #[arg(long = "pcap-fifo-wait", value_name = "SECONDS", default_value_t = 1.0)]
    pub pcap_fifo_wait: f64,
    /// Resubmit/recirculate passes after which a packet is dropped with an error
    /// (simple_switch has no limit; p4jet's keeps a looping program from hanging it).
    #[arg(long = "max-passes", default_value_t = 64)]
    pub max_passes: u32,
    /// Keys per stage of a batched table lookup: all are hashed or indexed and their
    /// buckets prefetched before the first is resolved (1 to 64, or `auto`: chosen by
    /// the performance model, then adjusted by each run-to-completion thread for its
    /// own lookups).
    #[arg(long = "sub-batch", default_value = "32")]
    pub sub_batch: crate::model::BatchArg,
    /// The engine: `reference` (the plain reading of the program), `interp` (the fused
    /// plan, interpreted) or `jit` (compiled to native code).
    #[arg(long = "engine", default_value_t = crate::engine::default_engine())]
    pub engine: p4jet_engine::EngineKind,
    /// Exit after this many seconds (live ports; 0 = run until SIGTERM).
    #[arg(long = "duration", default_value_t = 0.0)]
    pub duration: f64,
    /// Backend of live `-i` ports: `auto` (AF_XDP if possible, else AF_PACKET),
    /// `af_xdp` or `af_packet` (forced; fails if it cannot be opened).
    #[arg(long = "port-type", value_enum, default_value_t = PortType::Auto)]
    pub port_type: PortType,
    /// EAL arguments for DPDK ports (`-i PORT@dpdk:DEVARGS`), instead of the default
    /// `--no-huge --no-shconf --no-telemetry -m 512` (no hugepages, nothing on disk),
    /// e.g. `--dpdk-eal "-l 1 --huge-dir /dev/hugepages -a 0000:01:00.0"`.
    #[arg(long = "dpdk-eal", value_name = "ARGS", allow_hyphen_values = true)]
    pub dpdk_eal: Option<String>,
    /// DPDK devices with a queue per worker: RSS with the symmetric key, so both
    /// directions of a flow go to one worker.
    #[arg(long = "dpdk-symmetric-rss")]
    pub dpdk_symmetric_rss: bool,
    /// AF_PACKET receive ring of every socket: BLOCKS x KIB (default 32x256). A block
    /// is handed over when full or after 1 ms, so at low rates the ring holds about
    /// BLOCKS ms of traffic: more blocks keep frames through longer stalls of a
    /// worker (a machine short of CPU), e.g. `512x16`.
    #[arg(long = "af-packet-rx-ring", value_name = "BLOCKSxKIB")]
    pub af_packet_rx_ring: Option<String>,
    /// AF_XDP UMEMs: `shared` (one per worker, shared by its AF_XDP ports and used as
    /// their packet buffers, so frames forwarded between them are not copied) or
    /// `per-port` (each port its own UMEM; frames are copied in and out).
    #[arg(long = "xdp-umem", value_enum, default_value_t = XdpUmem::Shared)]
    pub xdp_umem: XdpUmem,
    /// Frames of each worker's shared UMEM (2048 or 4096 bytes each, from the MTU).
    #[arg(long = "xdp-umem-frames", default_value_t = 16384)]
    pub xdp_umem_frames: u32,
    /// AF_XDP zero-copy: `auto` (when the driver allows it, else copy mode), `force`
    /// (fail if the driver cannot) or `off` (copy mode).
    #[arg(long = "xdp-zero-copy", value_enum, default_value_t = XdpZeroCopy::Auto)]
    pub xdp_zero_copy: XdpZeroCopy,
    /// Where the XDP redirect program runs: `auto` (native if the driver has it, else
    /// generic), `native` (fail without driver support) or `generic` (SKB mode).
    #[arg(long = "xdp-mode", value_enum, default_value_t = XdpAttach::Auto)]
    pub xdp_mode: XdpAttach,
    /// Forwarding workers: a count, or `auto:MIN..MAX` (grown and shrunk from how
    /// busy the workers are). The receive side of every live interface is cut into
    /// shards (`--max-workers`, or MAX): its share of the AF_XDP queues when the
    /// interface has a queue per shard, else an AF_PACKET socket in the interface's
    /// hash fanout group, or a DPDK queue pair; each worker serves whole shards, so a
    /// flow stays on one worker. pcap files (--use-files) are served by one worker.
    #[arg(long = "workers", default_value = "1")]
    pub workers: WorkersArg,
    /// Most workers (and shards of every interface): `set_workers` (CLI, Thrift
    /// `p4jet_set_workers`) changes the count between 1 and this while traffic
    /// flows. Default: the `--workers` count (or MAX of `auto:MIN..MAX`).
    #[arg(long = "max-workers", value_name = "N")]
    pub max_workers: Option<usize>,
    /// Pin forwarding thread k to the k-th CPU the process may use.
    #[arg(long = "pin")]
    pub pin: bool,
    /// `rtc`: each worker runs every stage of a packet (run to completion);
    /// `pipeline`: ingress and egress of each worker on two threads joined by rings.
    #[arg(long = "mode", value_enum, default_value_t = Mode::Rtc)]
    pub mode: Mode,
    /// Slots of the rings between the stages of `--mode pipeline` (rounded up to a
    /// power of two).
    #[arg(long = "queue-size", default_value_t = 1024)]
    pub queue_size: usize,
}

/// `--workers`: a count, or a range the count moves in by itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkersArg {
    /// This many.
    Fixed(usize),
    /// `auto:MIN..MAX`.
    Auto(usize, usize),
}

impl std::str::FromStr for WorkersArg {
    type Err = String;
    fn from_str(s: &str) -> Result<WorkersArg, String> {
        let num = |x: &str| -> Result<usize, String> {
            match x.trim().parse::<usize>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(format!(
                    "bad worker count `{x}` in `{s}`: a number from 1 (or auto:MIN..MAX)"
                )),
            }
        };
        match s.strip_prefix("auto:") {
            None => num(s).map(WorkersArg::Fixed),
            Some(r) => {
                let (lo, hi) = r
                    .split_once("..")
                    .ok_or_else(|| format!("bad `--workers {s}`: expected auto:MIN..MAX"))?;
                let (lo, hi) = (num(lo)?, num(hi)?);
                if lo > hi {
                    return Err(format!("bad `--workers {s}`: MIN is above MAX"));
                }
                Ok(WorkersArg::Auto(lo, hi))
            }
        }
    }
}

impl WorkersArg {
    /// Workers at start.
    pub fn initial(self) -> usize {
        match self {
            WorkersArg::Fixed(n) | WorkersArg::Auto(n, _) => n,
        }
    }
}

/// How a worker processes packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Run to completion: one thread runs every stage.
    Rtc,
    /// Ingress (rx, parse, ingress, traffic manager) and egress (egress, deparse, tx)
    /// on two threads joined by p4jet-ring rings.
    Pipeline,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Rtc => "rtc",
            Mode::Pipeline => "pipeline",
        })
    }
}

/// Options after `--` (simple_switch target options).
#[derive(Debug, Default, Clone)]
pub struct TargetOptions {
    /// `--drop-port`
    pub drop_port: Option<u32>,
    /// `--priority-queues`
    pub priority_queues: Option<u32>,
    /// `--enable-swap`
    pub enable_swap: bool,
    /// `--grpc-server-addr` (simple_switch_grpc: where P4Runtime listens)
    pub grpc_server_addr: Option<String>,
    /// `--grpc-server-ssl`
    pub grpc_server_ssl: bool,
    /// `--grpc-server-cacert`
    pub grpc_server_cacert: Option<PathBuf>,
    /// `--grpc-server-cert`
    pub grpc_server_cert: Option<PathBuf>,
    /// `--grpc-server-key`
    pub grpc_server_key: Option<PathBuf>,
    /// `--grpc-server-with-client-auth`
    pub grpc_server_with_client_auth: bool,
    /// `--cpu-port`: packets to and from the P4Runtime controller
    pub cpu_port: Option<u32>,
    /// Options accepted and ignored (with their reason).
    pub ignored: Vec<String>,
    /// Other options (warned about).
    pub unknown: Vec<String>,
}

impl TargetOptions {
    /// Whether a simple_switch_grpc option asks for the P4Runtime server.
    pub fn wants_grpc(&self) -> bool {
        self.grpc_server_addr.is_some()
            || self.cpu_port.is_some()
            || self.grpc_server_ssl
            || self.grpc_server_cert.is_some()
    }
}

/// Splits `argv` at `--` into our arguments and target options.
pub fn split_target_options(args: &[String]) -> (Vec<String>, TargetOptions) {
    let Some(pos) = args.iter().position(|a| a == "--") else {
        return (args.to_vec(), TargetOptions::default());
    };
    let mut t = TargetOptions::default();
    let rest = &args[pos + 1..];
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i].as_str();
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (a, None),
        };
        let mut value = || {
            inline.clone().or_else(|| {
                i += 1;
                rest.get(i).cloned()
            })
        };
        match key {
            "--drop-port" => t.drop_port = value().and_then(|v| v.parse().ok()),
            "--priority-queues" => t.priority_queues = value().and_then(|v| v.parse().ok()),
            "--enable-swap" => t.enable_swap = true,
            "--grpc-server-addr" => t.grpc_server_addr = value(),
            "--grpc-server-ssl" => t.grpc_server_ssl = true,
            "--grpc-server-cacert" => t.grpc_server_cacert = value().map(PathBuf::from),
            "--grpc-server-cert" => t.grpc_server_cert = value().map(PathBuf::from),
            "--grpc-server-key" => t.grpc_server_key = value().map(PathBuf::from),
            "--grpc-server-with-client-auth" => t.grpc_server_with_client_auth = true,
            "--cpu-port" => t.cpu_port = value().and_then(|v| v.parse().ok()),
            "--dp-grpc-server-addr" => {
                let _ = value();
                t.ignored
                    .push("--dp-grpc-server-addr (no data-plane gRPC service)".into());
            }
            "--max-mc-groups" | "--max-l1-entries" | "--max-l2-entries" | "--load-modules" => {
                let _ = value();
            }
            other => t.unknown.push(other.to_string()),
        }
        i += 1;
    }
    (args[..pos].to_vec(), t)
}

/// An open port: pcap files (merged by timestamp on input) or a live interface.
pub(crate) enum PortIo {
    Pcap(Box<PcapFilePort>),
    Live(Box<dyn Port>),
}

pub(crate) struct PortEntry {
    pub(crate) num: u32,
    pub(crate) io: PortIo,
    pub(crate) exhausted: bool,
    /// Since when a pcap FIFO input has had no record ready (and is not closed).
    pub(crate) pending_since: Option<std::time::Instant>,
}

impl PortEntry {
    pub(crate) fn port(&mut self) -> &mut dyn Port {
        match &mut self.io {
            PortIo::Pcap(p) => p.as_mut(),
            PortIo::Live(p) => p.as_mut(),
        }
    }
}

/// Applies commands files to the switch; returns whether every line succeeded.
pub fn apply_commands(sw: &mut Switch, files: &[PathBuf]) -> Result<bool, String> {
    let mut ok = true;
    for f in files {
        let text = if f.as_os_str() == "-" {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| format!("reading commands from stdin: {e}"))?;
            s
        } else {
            std::fs::read_to_string(f).map_err(|e| format!("reading {}: {e}", f.display()))?
        };
        let mut cli = Cli::new(&sw.json).map_err(|e| e.to_string())?;
        let out = cli.run_script(sw, &text);
        print!("{}", out.output);
        for e in &out.errors {
            eprintln!("{}: {e}", f.display());
            ok = false;
        }
    }
    Ok(ok)
}

/// Applies commands files without printing their output; errors go to stderr.
pub fn apply_commands_quiet(sw: &mut Switch, files: &[PathBuf]) -> Result<bool, String> {
    let mut ok = true;
    for f in files {
        let text =
            std::fs::read_to_string(f).map_err(|e| format!("reading {}: {e}", f.display()))?;
        let mut cli = Cli::new(&sw.json).map_err(|e| e.to_string())?;
        let out = cli.run_script_quiet(sw, &text);
        for e in out.errors.iter().take(20) {
            eprintln!("{}: {e}", f.display());
            ok = false;
        }
    }
    Ok(ok)
}

/// Parses `PORT@NAME` as simple_switch does: the port number may carry surrounding
/// whitespace (p4c's STF driver passes `-i 0@pcap0` as one argument, so the value
/// arrives as ` 0@pcap0`); the name is taken as given, trimmed.
pub(crate) fn parse_iface(s: &str) -> Result<(u32, String), String> {
    let s = s.trim();
    let (p, n) = s
        .split_once('@')
        .ok_or_else(|| format!("bad interface `{s}`: expected PORT@NAME"))?;
    let p: u32 = p
        .trim()
        .parse()
        .map_err(|_| format!("bad port number in `{s}`"))?;
    let n = n.trim();
    if n.is_empty() {
        return Err(format!("bad interface `{s}`: empty name"));
    }
    Ok((p, n.to_string()))
}

/// Warns about simple_switch options p4jet accepts but does not implement.
fn warn_ignored(a: &RunArgs, target: &TargetOptions) {
    for u in &target.unknown {
        eprintln!("p4jet: ignoring unknown target option {u}");
    }
    for u in &target.ignored {
        eprintln!("p4jet: {u} is not supported; ignored");
    }
    let ignored: [(&str, bool); 5] = [
        ("--nanolog (no nanomsg event logger)", a.nanolog.is_some()),
        ("--debugger", a.debugger),
        ("--debugger-addr", a.debugger_addr.is_some()),
        ("--restore-state", a.restore_state.is_some()),
        ("--max-port-count", a.max_port_count.is_some()),
    ];
    for (what, given) in ignored {
        if given {
            eprintln!("p4jet: {what} is not supported; ignored");
        }
    }
    if a.pcap.is_some() && a.use_files.is_some() {
        eprintln!("p4jet: --pcap with --use-files: the files already record the traffic; ignored");
    }
}

/// `p4jet run`.
pub fn main(a: RunArgs, target: &TargetOptions) -> Result<ExitCode, String> {
    warn_ignored(&a, target);
    if a.log_console && a.log_file.is_some() {
        return Err("--log-console and --log-file are exclusive".into());
    }
    let log_level = match &a.log_level {
        Some(l) => logfile::parse_level(l)?,
        None => Some(0),
    };
    let program = match (&a.program, a.no_p4) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => None,
        (None, false) => {
            return Err(
                "no program: give the bmv2 JSON file, or --no-p4 to start without \
                        one (a controller then pushes it)"
                    .into(),
            );
        }
    };
    let grpc = crate::grpc::wanted(&a, target);
    let cpu = if grpc {
        crate::grpc::cpu_channel(target)?
    } else {
        None
    };
    let json = match &program {
        Some(p) => {
            Some(std::fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()))?)
        }
        None => None,
    };
    let (batch, sub_batch) =
        crate::model::resolve_at_load(json.as_deref(), a.batch, a.sub_batch, a.engine)?;
    let cfg = SwitchConfig {
        drop_port: target.drop_port.unwrap_or(511),
        priority_queues: target.priority_queues.unwrap_or(1),
        trace: (a.log_console || a.log_file.is_some()) && log_level.is_some(),
        dump_packet_data: a.dump_packet_data.unwrap_or(0),
        batch: batch.max(1),
        sub_batch,
        enable_swap: target.enable_swap,
        max_passes: a.max_passes.max(1),
        engine: a.engine,
        ..SwitchConfig::default()
    };
    let mut sw = match (&program, &json) {
        (Some(p), Some(json)) => {
            Switch::new(json, cfg).map_err(|e| format!("{}: {e}", p.display()))?
        }
        _ => Switch::without_program(cfg)?,
    };
    eprintln!("p4jet: engine {}", crate::engine::describe(&sw.engine));
    sw.rt.device_id = u64::from(a.device_id);
    sw.rt.thrift_port = a.thrift_port;
    sw.rt.notifications_socket = Some(sw_notifications_addr(&a));
    sw.rt.elogger_socket = a.nanolog.clone();
    let log = match (log_level, a.log_console, &a.log_file) {
        (Some(min), true, _) => Some(LogSink::console(min)),
        (Some(min), false, Some(f)) => Some(LogSink::file(
            f,
            min,
            a.log_file_max_size.unwrap_or(logfile::DEFAULT_MAX_SIZE),
            a.log_file_max_files.unwrap_or(logfile::DEFAULT_MAX_FILES),
        )?),
        _ => None,
    };
    if !apply_commands(&mut sw, &a.commands)? {
        eprintln!("p4jet: some commands failed (see above); continuing with the rest applied");
    }

    let mut ifaces: Vec<(u32, String)> = a
        .interfaces
        .iter()
        .map(|s| parse_iface(s))
        .collect::<Result<_, _>>()?;
    // ports are opened in port order (p4c's STF driver opens the FIFOs in that order)
    ifaces.sort_by_key(|(p, _)| *p);
    if let Some(w) = ifaces.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(format!("port {} given twice", w[0].0));
    }
    let files = a.use_files.is_some();
    for (num, name) in &ifaces {
        let pcap = files.then(|| format!("{name}_in.pcap"));
        sw.rt.ports.insert(
            *num,
            p4jet_switch::runtime::PortEntry {
                iface: name.clone(),
                pcap,
            },
        );
    }

    let mut workers = a.workers.initial().max(1);
    let auto = match a.workers {
        WorkersArg::Auto(lo, hi) => Some((lo, hi)),
        WorkersArg::Fixed(_) => None,
    };
    // the shards of every interface: the most workers there can be
    let mut shards = a
        .max_workers
        .unwrap_or(auto.map_or(workers, |(_, hi)| hi))
        .max(1);
    if shards < workers {
        return Err(format!(
            "--max-workers {shards} is below --workers {workers}"
        ));
    }
    if files && shards > 1 {
        eprintln!("p4jet: --workers {workers} with --use-files: pcap files are read by one worker");
        workers = 1;
        shards = 1;
    }
    if shards > workers && a.mode == Mode::Pipeline {
        return Err(
            "--max-workers and --workers auto need --mode rtc: pipelined workers \
                    cannot be added or removed at run time"
                .into(),
        );
    }
    // The data plane: workers with their own wait-free readers of the control state.
    // The control side (Thrift server) shares the switch behind a mutex that the
    // forwarding threads never take per packet.
    let sw = Arc::new(Mutex::new(sw));
    let api: SharedRuntime = sw.clone();
    let addr = format!("{}:{}", a.thrift_ip, a.thrift_port);
    let listener = TcpListener::bind(&addr)
        .map_err(|e| format!("Thrift server: cannot listen on {addr}: {e}"))?;
    let server = ServerHandle::spawn(listener, api, ServerConfig::default())
        .map_err(|e| format!("Thrift server: {e}"))?;
    eprintln!("Thrift server was started on {}", server.local_addr());

    if let Some(w) = a.use_files
        && w > 0.0
    {
        std::thread::sleep(Duration::from_secs_f64(w));
    }
    let af_packet = match &a.af_packet_rx_ring {
        Some(r) => {
            let (blocks, size) = parse_rx_ring(r)?;
            p4jet_io::AfPacketOptions {
                rx_block_count: blocks,
                rx_block_size: size,
                ..Default::default()
            }
        }
        None => p4jet_io::AfPacketOptions::default(),
    };
    let opts = OpenArgs {
        af_packet,
        backend: a.port_type.backend(),
        files,
        pcap: a.pcap.clone(),
        shards,
        umems: match a.xdp_umem {
            XdpUmem::Shared => (0..shards)
                .map(|_| Some(p4jet_io::UmemSlot::new(a.xdp_umem_frames)))
                .collect(),
            XdpUmem::PerPort => vec![None; shards],
        },
        af_xdp: p4jet_io::AfXdpOptions {
            zero_copy: match a.xdp_zero_copy {
                XdpZeroCopy::Auto => p4jet_io::ZeroCopy::Auto,
                XdpZeroCopy::Force => p4jet_io::ZeroCopy::Force,
                XdpZeroCopy::Off => p4jet_io::ZeroCopy::Off,
            },
            mode: match a.xdp_mode {
                XdpAttach::Auto => p4jet_io::XdpMode::Auto,
                XdpAttach::Native => p4jet_io::XdpMode::Drv,
                XdpAttach::Generic => p4jet_io::XdpMode::Skb,
            },
            ..Default::default()
        },
        dpdk: p4jet_io::DpdkOpenOptions {
            eal: a.dpdk_eal.clone(),
            symmetric_rss: a.dpdk_symmetric_rss,
            pci: ifaces
                .iter()
                .filter_map(|(_, n)| p4jet_io::dpdk_devargs(n))
                .filter(|d| p4jet_io::dpdk_is_pci(d))
                .map(str::to_string)
                .collect(),
        },
    };
    // every shard has its own port on each interface, in port order
    let mut ports: Vec<Vec<forward::PortHandle>> = vec![];
    for k in 0..shards {
        let mut mine = vec![];
        for (num, name) in &ifaces {
            mine.push(forward::PortHandle::new(open_one(*num, name, &opts, k)?, k));
        }
        if let Some(c) = &cpu {
            if ifaces.iter().any(|(n, _)| *n == c.port()) {
                return Err(format!(
                    "--cpu-port {} is also given as an interface (-i {}@...)",
                    c.port(),
                    c.port()
                ));
            }
            mine.push(forward::PortHandle::new(
                PortEntry {
                    num: c.port(),
                    io: PortIo::Live(Box::new(crate::cpu_port::CpuPort::new(c.clone()))),
                    exhausted: false,
                    pending_since: None,
                },
                k,
            ));
            mine.sort_by_key(|p| p.num);
        }
        ports.push(mine);
    }
    // Installed once the FIFOs are open: a SIGTERM while blocked opening one of them
    // ends the process the default way (exit status -15, which p4c's driver accepts).
    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, term.clone())
            .map_err(|e| format!("signal handler: {e}"))?;
    }

    // bmv2's notification socket: learning and port status messages for controllers
    // that subscribe with nanomsg (p4-utils, nnpy scripts); a socket that cannot be
    // bound is reported and the switch runs without it, as simple_switch does
    let notify = match p4jet_nanomsg::Publisher::bind(&sw_notifications_addr(&a)) {
        Ok(p) => Some(p),
        Err(e) => {
            eprintln!("p4jet: notifications: {e}; not publishing notifications");
            None
        }
    };
    let common = Arc::new(forward::Common {
        stop: AtomicBool::new(false),
        files,
        exit_when_done: a.exit_when_done,
        batch: batch.max(1),
        tune_batch: a.batch == crate::model::BatchArg::Auto && a.mode == Mode::Rtc,
        sub_batch,
        tune_sub_batch: a.sub_batch == crate::model::BatchArg::Auto && a.mode == Mode::Rtc,
        log: log.map(Mutex::new),
        notify,
        fifo_wait: Duration::from_secs_f64(a.pcap_fifo_wait.clamp(0.0, 1e9)),
        board: match sw.lock() {
            Ok(g) => g.board.clone(),
            Err(p) => p.into_inner().board.clone(),
        },
    });
    let plan = forward::Plan {
        log_digests: !grpc,
        mode: a.mode,
        workers,
        auto,
        pin: a.pin,
        queue_size: a.queue_size,
        duration: a.duration,
    };
    let metrics = match &a.metrics_addr {
        Some(addr) => {
            let m = crate::metrics::Metrics::start(
                &crate::metrics::parse_addr(addr)?,
                common.board.clone(),
            )?;
            eprintln!("p4jet: metrics on http://{}/metrics", m.addr);
            Some(m)
        }
        None => None,
    };
    let open = |num: u32, name: &str, k: usize| open_one(num, name, &opts, k);
    // P4Runtime listens once the ports are open, right before forwarding starts
    let p4rt = if grpc {
        Some(crate::grpc::start(&sw, &a, target, cpu)?)
    } else {
        None
    };
    // the threads flush their ports when they end
    let r = forward::run(&sw, &plan, ports, common, &term, &open);
    if let Some(h) = p4rt {
        h.stop();
    }
    if let Err(e) = server.stop() {
        eprintln!("p4jet: Thrift server: {e}");
    }
    drop(metrics);
    print_counts(&r?);
    Ok(ExitCode::SUCCESS)
}

/// `--notifications-addr`, or simple_switch's default for the device id.
fn sw_notifications_addr(a: &RunArgs) -> String {
    a.notifications_addr
        .clone()
        .unwrap_or_else(|| format!("ipc:///tmp/bmv2-{}-notifications.ipc", a.device_id))
}

struct OpenArgs {
    /// `--af-packet-rx-ring`.
    af_packet: p4jet_io::AfPacketOptions,
    backend: p4jet_io::Backend,
    files: bool,
    pcap: Option<PathBuf>,
    /// Shards of every interface (the most workers).
    shards: usize,
    /// Per shard: the slot of its shared AF_XDP UMEM (`--xdp-umem shared`).
    umems: Vec<Option<Arc<p4jet_io::UmemSlot>>>,
    /// `--xdp-zero-copy`, `--xdp-mode`.
    af_xdp: p4jet_io::AfXdpOptions,
    /// `--dpdk-eal`, `--dpdk-symmetric-rss`.
    dpdk: p4jet_io::DpdkOpenOptions,
}

/// `--af-packet-rx-ring BLOCKSxKIB`: (blocks, block bytes).
fn parse_rx_ring(s: &str) -> Result<(u32, u32), String> {
    let bad = || {
        format!(
            "bad --af-packet-rx-ring `{s}`: expected BLOCKSxKIB, 2 to 65536 blocks of a \
             power of two from 4 to 4096 KiB (e.g. 512x16)"
        )
    };
    let (b, k) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let b: u32 = b.trim().parse().map_err(|_| bad())?;
    let k: u32 = k.trim().parse().map_err(|_| bad())?;
    if !(2..=65536).contains(&b) || !(4..=4096).contains(&k) || !k.is_power_of_two() {
        return Err(bad());
    }
    Ok((b, k * 1024))
}

/// A `PACKET_FANOUT` group id for port `num`: the same for every worker of this
/// process, distinct between ports, and unlikely to be another process's.
fn fanout_group(num: u32) -> u16 {
    let pid = std::process::id();
    ((pid.wrapping_mul(0x9e37_79b1) >> 16) as u16) ^ (num as u16)
}

/// Opens port `num@name` for shard `k`.
fn open_one(num: u32, name: &str, o: &OpenArgs, k: usize) -> Result<PortEntry, String> {
    let io = if o.files {
        let port = PcapFilePort::use_files(Path::new("."), name)
            .map_err(|e| format!("port {num}@{name}: {e}"))?;
        PortIo::Pcap(Box::new(port))
    } else {
        let oo = p4jet_io::OpenOptions {
            af_packet: o.af_packet.clone(),
            backend: o.backend.clone(),
            af_xdp: o.af_xdp.clone(),
            dpdk: o.dpdk.clone(),
            // a recorded port copies its frames anyway
            umem: if o.pcap.is_some() && k == 0 {
                None
            } else {
                o.umems.get(k).cloned().flatten()
            },
            ..Default::default()
        };
        let opened = p4jet_io::open_worker_port(
            &format!("{num}@{name}"),
            &oo,
            k,
            o.shards,
            fanout_group(num),
        )
        .map_err(|e| format!("port {num}@{name}: {e}"))?;
        eprintln!("p4jet: {}", opened.reason);
        let port: Box<dyn Port> = match &o.pcap {
            // one recording per port: the traffic of worker 0
            Some(dir) if k == 0 => {
                if o.shards > 1 {
                    eprintln!(
                        "p4jet: --pcap with {} shards records shard 0's share of the traffic only",
                        o.shards
                    );
                }
                Box::new(PcapRecorder::new(opened.port, dir).map_err(|e| e.to_string())?)
            }
            _ => opened.port,
        };
        PortIo::Live(port)
    };
    Ok(PortEntry {
        num,
        io,
        exhausted: false,
        pending_since: None,
    })
}

fn print_counts(counts: &[PortCounters]) {
    println!("port        rx        tx      drop");
    for (i, c) in counts.iter().enumerate() {
        if c.rx == 0 && c.tx == 0 && c.dropped() == 0 {
            continue;
        }
        println!("{i:>4} {:>9} {:>9} {:>9}", c.rx, c.tx, c.dropped());
    }
}

/// `--xdp-zero-copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum XdpZeroCopy {
    /// Zero-copy where the driver allows it, else copy mode.
    Auto,
    /// Zero-copy or fail.
    Force,
    /// Copy mode.
    Off,
}

/// `--xdp-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum XdpAttach {
    /// Native (driver) XDP if available, else generic.
    Auto,
    /// Native XDP or fail.
    Native,
    /// Generic (SKB) XDP.
    Generic,
}

/// `--xdp-umem`: how AF_XDP ports get their UMEM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum XdpUmem {
    /// One UMEM per worker, shared by its AF_XDP ports; packets stay in their chunk.
    Shared,
    /// A UMEM per port; frames are copied between the UMEM and packet buffers.
    #[value(name = "per-port")]
    PerPort,
}

/// `--port-type`: which backend opens live `-i PORT@IFACE` ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PortType {
    /// AF_XDP when the kernel and interface allow it, else AF_PACKET.
    Auto,
    /// AF_XDP or fail.
    #[value(name = "af_xdp", alias = "af-xdp", alias = "xdp")]
    AfXdp,
    /// AF_PACKET TPACKET_V3.
    #[value(name = "af_packet", alias = "af-packet", alias = "packet")]
    AfPacket,
}

impl PortType {
    fn backend(self) -> p4jet_io::Backend {
        match self {
            PortType::Auto => p4jet_io::Backend::Auto,
            PortType::AfXdp => p4jet_io::Backend::AfXdp,
            PortType::AfPacket => p4jet_io::Backend::AfPacket,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_take_a_count_or_an_automatic_range() {
        assert_eq!("3".parse::<WorkersArg>(), Ok(WorkersArg::Fixed(3)));
        assert_eq!(
            "auto:1..4".parse::<WorkersArg>(),
            Ok(WorkersArg::Auto(1, 4))
        );
        assert_eq!(
            "auto:2..2".parse::<WorkersArg>(),
            Ok(WorkersArg::Auto(2, 2))
        );
        for bad in [
            "0",
            "-1",
            "x",
            "auto:",
            "auto:4..1",
            "auto:0..2",
            "auto:1-4",
            "",
        ] {
            assert!(bad.parse::<WorkersArg>().is_err(), "{bad}");
        }
        assert_eq!(WorkersArg::Auto(2, 4).initial(), 2);
    }

    #[test]
    fn af_packet_rx_ring_is_blocks_by_kib() {
        assert_eq!(parse_rx_ring("512x16"), Ok((512, 16 * 1024)));
        assert_eq!(parse_rx_ring("32X256"), Ok((32, 256 * 1024)));
        for bad in ["512", "1x16", "512x3", "512x12", "512x8192", "x16", "512x"] {
            assert!(parse_rx_ring(bad).is_err(), "{bad}");
        }
    }
}
