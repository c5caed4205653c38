//! `p4jet gen`: table and trace generator for benchmarks.
//!
//! For a use case (a program of the corpus or its large benchmark variant),
//! [`generate`] makes N table entries as simple_switch_CLI commands and a
//! trace of P Ethernet frames drawn from K flows, every frame one that the
//! program forwards (unless misses are asked for). [`main`] writes them as
//! `DIR/commands.txt` and `DIR/trace.pcap`. Output depends only on the
//! options and the seed. See docs/gen.md.
#![forbid(unsafe_code)]

mod acl;
mod bng;
mod classbench;
mod flows;
mod ipv4;
mod ipv6;
mod l2;
pub mod pkt;
pub mod prefix;
mod vxlan;

use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

pub use classbench::{AclProfile, Traffic};

/// The port every frame of a trace is meant to be received on.
pub const TRACE_PORT: u32 = 0;

/// A benchmark use case, each tied to a program of the corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum UseCase {
    /// basic_l2 / l2_large: exact match on the destination MAC.
    L2,
    /// simple_router / router_large: IPv4 LPM, neighbor and source MAC tables.
    Ipv4,
    /// ipv6_router: IPv6 LPM and next-hop table.
    Ipv6,
    /// acl_firewall / acl_large: ternary ACL, source-port range filter, port map.
    Acl,
    /// vxlan_gateway: VXLAN encapsulation to service backends and decapsulation.
    Vxlan,
    /// bng: GRE subscriber tunnels and NAT, upstream and downstream.
    Bng,
}

impl UseCase {
    /// All use cases.
    pub const ALL: [UseCase; 6] = [
        UseCase::L2,
        UseCase::Ipv4,
        UseCase::Ipv6,
        UseCase::Acl,
        UseCase::Vxlan,
        UseCase::Bng,
    ];

    /// Name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            UseCase::L2 => "l2",
            UseCase::Ipv4 => "ipv4",
            UseCase::Ipv6 => "ipv6",
            UseCase::Acl => "acl",
            UseCase::Vxlan => "vxlan",
            UseCase::Bng => "bng",
        }
    }

    /// The program the commands and the trace are made for, as a path
    /// relative to the workspace root; an error if the variant does not exist.
    pub fn program(self, variant: Variant) -> Result<&'static str, String> {
        Ok(match (self, variant) {
            (UseCase::L2, Variant::Base) => "tests/corpus/basic_l2/basic_l2.json",
            (UseCase::L2, Variant::Large) => "tests/corpus/bench/l2_large.json",
            (UseCase::Ipv4, Variant::Base) => "tests/corpus/simple_router/simple_router.json",
            (UseCase::Ipv4, Variant::Large) => "tests/corpus/bench/router_large.json",
            (UseCase::Ipv6, Variant::Base) => "tests/corpus/ipv6_router/ipv6_router.json",
            (UseCase::Acl, Variant::Base) => "tests/corpus/acl_firewall/acl_firewall.json",
            (UseCase::Acl, Variant::Large) => "tests/corpus/bench/acl_large.json",
            (UseCase::Vxlan, Variant::Base) => "tests/corpus/vxlan_gateway/vxlan_gateway.json",
            (UseCase::Bng, Variant::Base) => "tests/corpus/bng/bng.json",
            (u, Variant::Large) => {
                return Err(format!(
                    "use case {} has no large program variant (only l2, ipv4 and acl have one)",
                    u.name()
                ));
            }
        })
    }
}

impl fmt::Display for UseCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which build of the program: the corpus one or the benchmark one with
/// bigger tables (same table and action names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, clap::ValueEnum)]
pub enum Variant {
    /// The corpus program (tables of 256..16384 entries).
    #[default]
    Base,
    /// tests/corpus/bench/*_large (l2_large, router_large, acl_large).
    Large,
}

/// Frame sizes: one size, or a weighted mix.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameSize {
    /// Every frame this many bytes.
    Fixed(usize),
    /// Each frame drawn from (size, weight) pairs.
    Mix(Vec<(usize, u32)>),
}

/// Smallest frame size accepted (bytes, Ethernet header included, FCS not).
pub const MIN_FRAME: usize = 64;
/// Largest frame size accepted.
pub const MAX_FRAME: usize = 9216;

impl FrameSize {
    /// Simple IMIX: 7 × 64, 4 × 594, 1 × 1514 bytes.
    pub fn imix() -> FrameSize {
        FrameSize::Mix(vec![(64, 7), (594, 4), (1514, 1)])
    }

    fn sample(&self, rng: &mut StdRng) -> usize {
        match self {
            FrameSize::Fixed(n) => *n,
            FrameSize::Mix(m) => {
                let total: u32 = m.iter().map(|e| e.1).sum();
                let mut x = rng.gen_range(0..total.max(1));
                for &(s, w) in m {
                    if x < w {
                        return s;
                    }
                    x -= w;
                }
                m.last().map_or(MIN_FRAME, |e| e.0)
            }
        }
    }
}

impl Default for FrameSize {
    fn default() -> Self {
        FrameSize::Fixed(MIN_FRAME)
    }
}

impl FromStr for FrameSize {
    type Err = String;

    /// `64`, `imix`, or a mix `SIZE[:WEIGHT],...` such as `64:7,594:4,1514:1`.
    fn from_str(s: &str) -> Result<FrameSize, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("imix") {
            return Ok(FrameSize::imix());
        }
        let size = |t: &str| -> Result<usize, String> {
            let n: usize = t.trim().parse().map_err(|_| {
                format!("bad frame size '{t}' (a number of bytes, 'imix', or SIZE:WEIGHT,...)")
            })?;
            if !(MIN_FRAME..=MAX_FRAME).contains(&n) {
                return Err(format!(
                    "frame size {n} out of range {MIN_FRAME}..={MAX_FRAME}"
                ));
            }
            Ok(n)
        };
        if !s.contains(',') && !s.contains(':') {
            return Ok(FrameSize::Fixed(size(s)?));
        }
        let mut mix = Vec::new();
        for part in s.split(',') {
            let (sz, w) = match part.split_once(':') {
                Some((a, b)) => (
                    size(a)?,
                    b.trim()
                        .parse::<u32>()
                        .map_err(|_| format!("bad weight in '{part}'"))?,
                ),
                None => (size(part)?, 1),
            };
            mix.push((sz, w));
        }
        if mix.iter().all(|e| e.1 == 0) {
            return Err("frame size mix has no positive weight".into());
        }
        Ok(FrameSize::Mix(mix))
    }
}

impl fmt::Display for FrameSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameSize::Fixed(n) => write!(f, "{n}"),
            FrameSize::Mix(m) => {
                let parts: Vec<String> = m.iter().map(|(s, w)| format!("{s}:{w}")).collect();
                f.write_str(&parts.join(","))
            }
        }
    }
}

/// `p4jet gen`: write benchmark tables and a trace for a use case.
#[derive(clap::Args, Debug, Clone)]
pub struct GenArgs {
    /// Use case (l2, ipv4, ipv6, acl, vxlan, bng).
    #[arg(value_enum)]
    pub usecase: UseCase,
    /// Entries in the use case's main table (dmac, routes, ACL rules,
    /// tunnels/services, subscribers).
    #[arg(long, default_value_t = 1000)]
    pub entries: usize,
    /// Distinct flows in the trace (bng: NAT bindings).
    #[arg(long, default_value_t = 1000)]
    pub flows: usize,
    /// Frame size in bytes with the Ethernet header, without FCS (64..=9216),
    /// `imix` (64:7,594:4,1514:1), or a mix `SIZE:WEIGHT,...`.
    #[arg(long, default_value = "64")]
    pub size: FrameSize,
    /// Number of frames in the trace.
    #[arg(long, default_value_t = 10000)]
    pub packets: usize,
    /// Random seed: the same options and seed give the same output.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output directory (DIR/trace.pcap, DIR/commands.txt).
    #[arg(long)]
    pub out: PathBuf,
    /// Program variant: base (corpus) or large (tests/corpus/bench/*_large).
    #[arg(long, value_enum, default_value_t = Variant::Base)]
    pub program_variant: Variant,
    /// Flow popularity: Zipf with this exponent (e.g. 1.1); uniform if absent.
    #[arg(long)]
    pub zipf: Option<f64>,
    /// Fraction of frames (0..=1) that miss the main table and are dropped.
    #[arg(long, default_value_t = 0.0)]
    pub miss_ratio: f64,
    /// Switch ports used by the entries (0..PORTS-1).
    #[arg(long, default_value_t = 4)]
    pub ports: u32,
    /// Next hops (ipv4: neighbor entries; ipv6: next_hop entries).
    #[arg(long, default_value_t = 16)]
    pub next_hops: usize,
    /// Fraction of frames in the second direction (vxlan: decapsulated
    /// server traffic; bng: downstream).
    #[arg(long, default_value_t = 0.5)]
    pub reverse_ratio: f64,
    /// acl: a ClassBench-style rule set instead of the default one
    #[arg(long, value_enum)]
    pub profile: Option<AclProfile>,
    /// acl with --profile: flows (--flows headers from rules), random
    /// (every frame a uniformly drawn header) or locality (ClassBench's
    /// Pareto bursts of headers from rules)
    #[arg(long, value_enum, default_value_t = Traffic::Flows)]
    pub traffic: Traffic,
}

impl GenArgs {
    /// The generator options these arguments stand for.
    pub fn options(&self) -> GenOptions {
        GenOptions {
            entries: self.entries,
            flows: self.flows,
            size: self.size.clone(),
            packets: self.packets,
            seed: self.seed,
            variant: self.program_variant,
            zipf: self.zipf,
            miss_ratio: self.miss_ratio,
            ports: self.ports,
            next_hops: self.next_hops,
            reverse_ratio: self.reverse_ratio,
            acl_profile: self.profile,
            traffic: self.traffic,
        }
    }
}

/// Generator options (see [`GenArgs`] for their meaning).
#[derive(Debug, Clone, PartialEq)]
pub struct GenOptions {
    /// Entries in the main table.
    pub entries: usize,
    /// Distinct flows.
    pub flows: usize,
    /// Frame sizes.
    pub size: FrameSize,
    /// Trace length.
    pub packets: usize,
    /// Seed.
    pub seed: u64,
    /// Program variant.
    pub variant: Variant,
    /// Zipf exponent of flow popularity (None: uniform).
    pub zipf: Option<f64>,
    /// Fraction of frames that miss.
    pub miss_ratio: f64,
    /// Ports 0..ports.
    pub ports: u32,
    /// Next hops.
    pub next_hops: usize,
    /// Fraction of second-direction frames.
    pub reverse_ratio: f64,
    /// acl: ClassBench-style rule set.
    pub acl_profile: Option<AclProfile>,
    /// acl with a profile: kind of trace.
    pub traffic: Traffic,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            entries: 1000,
            flows: 1000,
            size: FrameSize::default(),
            packets: 10000,
            seed: 1,
            variant: Variant::Base,
            zipf: None,
            miss_ratio: 0.0,
            ports: 4,
            next_hops: 16,
            reverse_ratio: 0.5,
            acl_profile: None,
            traffic: Traffic::Flows,
        }
    }
}

impl GenOptions {
    fn validate(&self) -> Result<(), String> {
        if self.entries == 0 {
            return Err("--entries must be at least 1".into());
        }
        if self.flows == 0 {
            return Err("--flows must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.miss_ratio) {
            return Err("--miss-ratio must be within 0..=1".into());
        }
        if !(0.0..=1.0).contains(&self.reverse_ratio) {
            return Err("--reverse-ratio must be within 0..=1".into());
        }
        if let Some(s) = self.zipf
            && !(s.is_finite() && s > 0.0)
        {
            return Err("--zipf must be a positive exponent".into());
        }
        if !(1..=64).contains(&self.ports) {
            return Err("--ports must be within 1..=64 (the port tables hold 64 entries)".into());
        }
        if self.next_hops == 0 {
            return Err("--next-hops must be at least 1".into());
        }
        match &self.size {
            FrameSize::Fixed(n) if !(MIN_FRAME..=MAX_FRAME).contains(n) => Err(format!(
                "frame size {n} out of range {MIN_FRAME}..={MAX_FRAME}"
            )),
            FrameSize::Mix(m)
                if m.is_empty()
                    || m.iter().all(|e| e.1 == 0)
                    || m.iter().any(|e| !(MIN_FRAME..=MAX_FRAME).contains(&e.0)) =>
            {
                Err(format!("bad frame size mix {}", self.size))
            }
            _ => Ok(()),
        }
    }

    /// Number of distinct miss flows (0 when no misses are asked for).
    pub(crate) fn miss_flows(&self) -> usize {
        if self.miss_ratio > 0.0 {
            ((self.flows as f64 * self.miss_ratio).round() as usize).max(1)
        } else {
            0
        }
    }
}

/// What [`generate`] makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// The trace: Ethernet frames, to be received on [`TRACE_PORT`].
    pub frames: Vec<Vec<u8>>,
    /// simple_switch_CLI commands that fill the program's tables.
    pub commands: String,
    /// What was generated, for people.
    pub description: String,
    /// Per frame: whether the program forwards it (false: a requested miss).
    pub forwarded: Vec<bool>,
}

/// Frames of one use case: `build` makes a frame of (at least) `size`
/// bytes for hit flow `flow` (or miss flow `flow` when `miss`).
pub(crate) trait Scenario {
    /// Whether the program forwards the frame of `flow` / trace position
    /// `seq`, when the use case decides it itself (else the miss flag does).
    fn verdict(&self, _flow: usize, _seq: u32) -> Option<bool> {
        None
    }
    fn build(&self, flow: usize, miss: bool, size: usize, seq: u32, rng: &mut StdRng) -> Vec<u8>;
}

/// A use case's tables and flows.
pub(crate) struct Setup {
    /// Commands.
    pub cmds: Commands,
    /// Lines for the description.
    pub notes: Vec<String>,
    /// Hit flows.
    pub hit_flows: usize,
    /// Miss flows.
    pub miss_flows: usize,
    /// Frame builder.
    pub scenario: Box<dyn Scenario>,
}

/// simple_switch_CLI command text with a count of entries per table.
#[derive(Debug, Default)]
pub(crate) struct Commands {
    pub text: String,
    pub counts: Vec<(String, usize)>,
}

impl Commands {
    /// `table_add TABLE ACTION KEYS => PARAMS`.
    pub fn add(&mut self, table: &str, action: &str, keys: &str, params: &str) {
        self.text.push_str("table_add ");
        self.text.push_str(table);
        self.text.push(' ');
        self.text.push_str(action);
        self.text.push(' ');
        self.text.push_str(keys);
        self.text.push_str(" =>");
        if !params.is_empty() {
            self.text.push(' ');
            self.text.push_str(params);
        }
        self.text.push('\n');
        match self.counts.iter_mut().find(|c| c.0 == table) {
            Some(c) => c.1 += 1,
            None => self.counts.push((table.to_string(), 1)),
        }
    }

    /// `table_set_default TABLE ACTION PARAMS`.
    pub fn set_default(&mut self, table: &str, action: &str, params: &str) {
        self.text
            .push_str(&format!("table_set_default {table} {action} {params}\n"));
    }
}

/// Fails if `n` entries do not fit a table of `max` entries.
pub(crate) fn fits(table: &str, n: usize, max: usize, what: &str) -> Result<(), String> {
    if n > max {
        return Err(format!(
            "{n} {what} do not fit {table} ({max} entries in this program variant)"
        ));
    }
    Ok(())
}

/// Picks flows: uniformly or by Zipf rank (flow 0 most popular).
enum Picker {
    Uniform(usize),
    Zipf(Vec<f64>),
}

impl Picker {
    fn new(n: usize, zipf: Option<f64>) -> Picker {
        match zipf {
            None => Picker::Uniform(n),
            Some(s) => {
                let mut cdf = Vec::with_capacity(n);
                let mut acc = 0.0;
                for r in 1..=n {
                    acc += 1.0 / (r as f64).powf(s);
                    cdf.push(acc);
                }
                Picker::Zipf(cdf)
            }
        }
    }

    fn pick(&self, rng: &mut StdRng) -> usize {
        match self {
            Picker::Uniform(n) => rng.gen_range(0..*n),
            Picker::Zipf(cdf) => {
                let total = cdf.last().copied().unwrap_or(1.0);
                let x = rng.r#gen::<f64>() * total;
                cdf.partition_point(|&c| c <= x).min(cdf.len() - 1)
            }
        }
    }
}

/// Generates the table commands and the trace for a use case.
pub fn generate(usecase: UseCase, opts: &GenOptions) -> Result<Generated, String> {
    opts.validate()?;
    let program = usecase.program(opts.variant)?;
    if usecase != UseCase::Acl && (opts.acl_profile.is_some() || opts.traffic != Traffic::Flows) {
        return Err("--profile and --traffic apply to the acl use case only".into());
    }
    let mut rng = StdRng::seed_from_u64(opts.seed);
    let setup = match usecase {
        UseCase::L2 => l2::setup(opts, &mut rng)?,
        UseCase::Ipv4 => ipv4::setup(opts, &mut rng)?,
        UseCase::Ipv6 => ipv6::setup(opts, &mut rng)?,
        UseCase::Acl => acl::setup(opts, &mut rng)?,
        UseCase::Vxlan => vxlan::setup(opts, &mut rng)?,
        UseCase::Bng => bng::setup(opts, &mut rng)?,
    };
    let n_miss = if setup.miss_flows > 0 {
        (opts.packets as f64 * opts.miss_ratio).round() as usize
    } else {
        0
    };
    let mut forwarded = vec![true; opts.packets];
    for f in forwarded.iter_mut().take(n_miss) {
        *f = false;
    }
    forwarded.shuffle(&mut rng);
    let picker = Picker::new(setup.hit_flows, opts.zipf);
    let mut frames = Vec::with_capacity(opts.packets);
    let mut enlarged = 0usize;
    let mut bytes = 0usize;
    for (i, fwd) in forwarded.iter_mut().enumerate() {
        let size = opts.size.sample(&mut rng);
        let flow = if *fwd {
            picker.pick(&mut rng)
        } else {
            rng.gen_range(0..setup.miss_flows)
        };
        let frame = setup.scenario.build(flow, !*fwd, size, i as u32, &mut rng);
        if let Some(v) = setup.scenario.verdict(flow, i as u32) {
            *fwd = v;
        }
        if frame.len() > size {
            enlarged += 1;
        }
        bytes += frame.len();
        frames.push(frame);
    }

    let mut d = String::new();
    let _ = writeln!(d, "use case {usecase}: program {program}");
    d.push_str("tables:\n");
    for (t, n) in &setup.cmds.counts {
        let _ = writeln!(d, "  {t}: {n} entries");
    }
    for n in &setup.notes {
        let _ = writeln!(d, "{n}");
    }
    let _ = writeln!(
        d,
        "trace: {} frames ({} bytes) received on port {TRACE_PORT}, {} to be forwarded, {} misses to be dropped",
        frames.len(),
        bytes,
        forwarded.iter().filter(|f| **f).count(),
        forwarded.iter().filter(|f| !**f).count()
    );
    let _ = writeln!(
        d,
        "flows: {} hit flows, {} miss flows, popularity {}",
        setup.hit_flows,
        setup.miss_flows,
        match opts.zipf {
            Some(s) => format!("Zipf s={s}"),
            None => "uniform".into(),
        }
    );
    let _ = writeln!(
        d,
        "frame size {} ({} frames enlarged to fit their headers), seed {}",
        opts.size, enlarged, opts.seed
    );
    Ok(Generated {
        frames,
        commands: setup.cmds.text,
        description: d,
        forwarded,
    })
}

use std::fmt::Write as _;

/// Writes frames as a pcap file (Ethernet link type, one microsecond apart).
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) -> Result<(), String> {
    use pcap_file::DataLink;
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let header = PcapHeader {
        datalink: DataLink::ETHERNET,
        snaplen: 65535,
        ..Default::default()
    };
    let mut w = PcapWriter::with_header(BufWriter::new(file), header)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    for (i, f) in frames.iter().enumerate() {
        let ts = Duration::from_micros(1 + i as u64);
        w.write_packet(&PcapPacket::new(ts, f.len() as u32, f))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let mut inner = w.into_writer();
    inner
        .flush()
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// `p4jet gen`: generates and writes `DIR/trace.pcap` and `DIR/commands.txt`,
/// and prints what it wrote.
pub fn main(args: GenArgs) -> Result<ExitCode, String> {
    let opts = args.options();
    let g = generate(args.usecase, &opts)?;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let pcap = args.out.join("trace.pcap");
    let cmds = args.out.join("commands.txt");
    write_pcap(&pcap, &g.frames)?;
    std::fs::write(&cmds, &g.commands).map_err(|e| format!("{}: {e}", cmds.display()))?;
    let lines = g
        .commands
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .count();
    println!("wrote {} ({} frames)", pcap.display(), g.frames.len());
    println!("wrote {} ({lines} commands)", cmds.display());
    print!("{}", g.description);
    Ok(ExitCode::SUCCESS)
}
