//! `p4jet model`: predicts a program's packets per second per core and its latency from
//! its structure and per-operation costs measured on this machine.
//!
//! The structure ([`Features`]) comes from the lowered program and the loaded tables:
//! headers extracted on the parser's longest path (α of the EuroP4 2019 latency model),
//! headers whose fields actions write (β), the tables applied on the control graph's most
//! expensive path (γ) with their match kind and entry count, primitives, keyless action
//! calls and internet checksums. The costs ([`Profile`]) come from micro-benchmarks that
//! `p4jet model --calibrate` runs through the real engine, on the same replay loop as
//! `p4jet bench` ([`crate::bench::measure_parallel`]): the null program, parses of 1..8
//! headers, exact/LPM/ternary lookups at several table sizes, a checksum, keyless calls
//! and extra primitives, large frames and batch size 1 (the per-batch overhead).
//!
//! With a trace, the paths its packets take are measured on a sample run through the
//! interpreter ([`crate::paths::PathStats`]): each table is priced for the share of
//! packets that apply it (and its calibrated per-call cost per chunk that reaches it),
//! and the per-packet decisions a mixed trace makes the branch predictor miss are priced
//! by a calibrated cost; without one, the costliest path is priced for every packet.
//!
//! The prediction ([`Prediction`]) is CPU nanoseconds per packet split into the three
//! terms of the APSys 2017 model: `io` (receive copy, batch and transmit: the null
//! program's cost plus a per-byte cost), `memory` (the part of each lookup above what the
//! same lookup costs on a table small enough to stay in cache: stalls on the table's
//! memory) and `cpu` (parsing, actions, checksums, lookups in cache). One thread does all
//! three in turn, so they add up (`1 / (c + m + d)`, not `min`); the binding term is the
//! largest. The time is also split by stage (parse, ingress, egress, deparse, io).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use p4jet_ir::{ControlNode, MatchKind, ParserOp, Prim, Program, TableNext};
use p4jet_switch::{Switch, SwitchConfig};
use serde::{Deserialize, Serialize};

use crate::bench::{Measure, NULL_PROGRAM, Setup, measure_parallel};
use crate::paths::PathStats;
use crate::run::Mode;

/// Version of the profile's format (a profile of another version is recalibrated).
pub const PROFILE_VERSION: u32 = 5;

/// `p4jet model` options.
#[derive(Args, Debug)]
pub struct ModelArgs {
    /// The bmv2 JSON program to predict (optional with --calibrate).
    pub program: Option<PathBuf>,
    /// Table commands (simple_switch_CLI syntax): the entry counts the lookups cost.
    #[arg(long = "commands")]
    pub commands: Vec<PathBuf>,
    /// A trace (pcap) of the traffic: its average frame size (else 64 bytes).
    #[arg(long = "trace")]
    pub trace: Option<PathBuf>,
    /// Run the micro-benchmarks and store the profile (then predict PROGRAM if given).
    #[arg(long = "calibrate")]
    pub calibrate: bool,
    /// The profile to read or write (default: $P4JET_PROFILE, else
    /// $XDG_CACHE_HOME/p4jet/profile-ENGINE.json, else ~/.cache/p4jet/profile-ENGINE.json).
    #[arg(long = "profile")]
    pub profile: Option<PathBuf>,
    /// Seconds per calibration point.
    #[arg(long = "seconds", default_value_t = 0.5)]
    pub seconds: f64,
    /// --calibrate: a small calibration (tables of at most 10,000 entries, short traces),
    /// for tests; its memory term misses large tables.
    #[arg(long = "quick", requires = "calibrate")]
    pub quick: bool,
    /// Packets per batch the prediction is for (`auto`: the model's choice).
    #[arg(long = "batch", default_value = "auto")]
    pub batch: BatchArg,
    /// Packets waiting in front of the worker (the latency's queue; default: one batch).
    #[arg(long = "queue-size")]
    pub queue_size: Option<usize>,
    /// The engine the costs are for.
    #[arg(long = "engine", default_value_t = crate::engine::default_engine())]
    pub engine: p4jet_engine::EngineKind,
    /// Print one JSON object.
    #[arg(long = "json")]
    pub json: bool,
}

/// `--batch N|auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchArg {
    /// Chosen by the model.
    Auto,
    /// This many packets.
    Fixed(usize),
}

impl std::str::FromStr for BatchArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(BatchArg::Auto);
        }
        match s.parse::<usize>() {
            Ok(n) if (1..=4096).contains(&n) => Ok(BatchArg::Fixed(n)),
            _ => Err(format!(
                "`{s}`: expected `auto` or a number of packets (1..4096)"
            )),
        }
    }
}

impl std::fmt::Display for BatchArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BatchArg::Auto => f.write_str("auto"),
            BatchArg::Fixed(n) => write!(f, "{n}"),
        }
    }
}

/// Cost of one lookup (with its action) against table size, for one match kind.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LookupCurve {
    /// `exact`, `lpm` or `ternary`.
    pub kind: String,
    /// (entries, ns per packet) in increasing entries, each measured with the
    /// calibration's traffic ([`Profile::frames`] flows).
    pub points: Vec<(usize, f64)>,
    /// At the largest size of `points`: (distinct entries the traffic hits, ns per
    /// packet) in increasing entries hit. A large table's lookups miss the caches
    /// by how much of it the traffic touches, not by its size alone.
    #[serde(default)]
    pub hot: Vec<(usize, f64)>,
}

/// Linear in log(x) between the points, flat beyond them.
fn log_interp(p: &[(usize, f64)], x: f64) -> f64 {
    let Some(first) = p.first() else { return 0.0 };
    if x <= first.0 as f64 {
        return first.1;
    }
    let lx = x.max(1.0).ln();
    for w in p.windows(2) {
        let (a, b) = (w[0], w[1]);
        if x <= b.0 as f64 {
            let (xa, xb) = ((a.0.max(1) as f64).ln(), (b.0.max(1) as f64).ln());
            let t = if xb > xa { (lx - xa) / (xb - xa) } else { 1.0 };
            return a.1 + t * (b.1 - a.1);
        }
    }
    p.last().map_or(0.0, |l| l.1)
}

/// Distinct flows in `frames` frames drawn uniformly from `flows` flows (expected):
/// `flows·(1 − e^(−frames/flows))`.
pub fn flows_seen(flows: usize, frames: usize) -> usize {
    let f = flows.max(1) as f64;
    (f * (1.0 - (-(frames as f64) / f).exp())).round() as usize
}

/// Distinct entries of a table of `entries` that `flows` flows hit, each flow one
/// entry drawn uniformly: `n·(1 − e^(−flows/n))`.
pub fn entries_hit(entries: usize, flows: usize) -> f64 {
    let n = entries.max(1) as f64;
    n * (1.0 - (-(flows as f64) / n).exp())
}

impl LookupCurve {
    /// ns at `n` entries: linear in log(n) between the measured points, flat beyond.
    pub fn at(&self, n: usize) -> f64 {
        log_interp(&self.points, n as f64)
    }

    /// ns at `n` entries when `flows` distinct flows hit the table (`None`: traffic
    /// like the calibration's, `cal_flows` flows): [`LookupCurve::at`] moved along the
    /// hot-set curve from the entries the calibration's traffic hit to the entries
    /// these flows hit. The move is weighed like the size curve, from nothing at the
    /// second-largest size measured (a table that fits the caches) to all of it at
    /// the largest.
    pub fn at_traffic(&self, n: usize, flows: Option<usize>, cal_flows: usize) -> f64 {
        let base = self.at(n);
        let (Some(flows), true, true) = (flows, self.hot.len() >= 2, cal_flows > 0) else {
            return base;
        };
        let k = self.points.len();
        if k < 2 {
            return base;
        }
        let (lo, hi) = (
            self.points[k - 2].0.max(1) as f64,
            self.points[k - 1].0 as f64,
        );
        let w = if hi > lo {
            (((n.max(1) as f64).ln() - lo.ln()) / (hi.ln() - lo.ln())).clamp(0.0, 1.0)
        } else {
            1.0
        };
        let moved = log_interp(&self.hot, entries_hit(n, flows))
            - log_interp(&self.hot, entries_hit(n, cal_flows));
        (base + w * moved).max(self.in_cache())
    }

    /// The cost on the smallest table measured (in cache).
    pub fn in_cache(&self) -> f64 {
        self.points.first().map_or(0.0, |p| p.1)
    }
}

/// Per-operation costs on this machine (CPU ns of one forwarding thread).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Profile {
    /// Format version ([`PROFILE_VERSION`]).
    pub version: u32,
    /// Engine measured.
    pub engine: String,
    /// CPU model (from /proc/cpuinfo).
    pub cpu: String,
    /// Seconds since the epoch.
    pub created: u64,
    /// Load average at the start and end of the calibration.
    pub load_average: [f64; 6],
    /// Batch of the calibration runs.
    pub batch: usize,
    /// Distinct flows in the calibration's traces (16,384 frames drawn uniformly
    /// from 16,384 flows, each flow hitting a uniformly drawn entry).
    pub flows: usize,
    /// Null program, 64-byte frames: rx copy, batching, tx (ns/packet).
    pub null_ns: f64,
    /// Per frame byte past 64 (ns).
    pub byte_ns: f64,
    /// Per batch, whatever its size (ns): from the null program at batch 1.
    pub batch_ns: f64,
    /// Per header extracted and emitted (ns).
    pub header_ns: f64,
    /// Per internet checksum over a 20-byte header, verify or update (ns).
    pub checksum_ns: f64,
    /// Per keyless table (an action call of one primitive) (ns).
    pub call_ns: f64,
    /// Per primitive past the first of an action that is not a move (ns).
    pub prim_ns: f64,
    /// Per move (a constant, parameter or field assigned to a field) past the first (ns).
    pub move_ns: f64,
    /// Per table call (a batched lookup of the packets of a batch waiting at a table),
    /// whatever the packets it serves (ns): from the exact lookup at batch 4 against 32.
    /// The lookup curves hold it shared by a whole calibration batch.
    pub table_call_ns: f64,
    /// Per per-packet decision a branch predictor misses (ns): a parser select and the
    /// deparser's header on a 50/50 random mix of two paths against the same frames
    /// sorted by path, over the misses [`crate::paths::PathStats`] counts on each.
    pub branch_ns: f64,
    /// Lookup (and a one-primitive action) by kind against size. `lpm_wide` is an LPM
    /// table the DIR-16-8-8 array cannot hold (a key wider than 32 bits or with other
    /// fields: hash tables per prefix length searched by binary search), measured with
    /// [`WIDE_LPM_PROBES`] probes per lookup.
    pub lookups: Vec<LookupCurve>,
    /// Per hash probe of a wide LPM lookup above or below the calibrated
    /// [`WIDE_LPM_PROBES`] (ns).
    pub lpm_probe_ns: f64,
    /// CPU ns of a packet's cost spent before its latency clock starts (receiving it
    /// into the switch): with Q packets queued at batch B, mean latency is
    /// `Q·ns − B·inject_ns` (null program: `ns − latency / B` at Q = B).
    pub inject_ns: f64,
    /// p99 / mean latency, null program.
    pub p99_factor: f64,
    /// Each calibration point: (name, ns per packet).
    pub points: Vec<(String, f64)>,
}

impl Profile {
    /// The lookup curve of a match kind (range and valid tables as ternary: both are
    /// tuple-space searches).
    pub fn lookup(&self, kind: MatchKind) -> Option<&LookupCurve> {
        let k = match kind {
            MatchKind::Exact => "exact",
            MatchKind::Lpm => "lpm",
            _ => "ternary",
        };
        self.lookups.iter().find(|c| c.kind == k)
    }

    /// (cost at the table's size, cost in cache) of one apply of a keyed table; `None`
    /// for a kind the profile has no curve for. A wide LPM table is priced by its probes
    /// (a profile without the wide curve prices it as a narrow one).
    pub fn lookup_cost(&self, t: &TableShape) -> Option<(f64, f64)> {
        let at = |c: &LookupCurve| c.at_traffic(t.entries, t.flows, self.flows);
        if t.lpm_probes > 0
            && let Some(c) = self.lookups.iter().find(|c| c.kind == "lpm_wide")
        {
            let d = (t.lpm_probes as f64 - WIDE_LPM_PROBES as f64) * self.lpm_probe_ns;
            return Some(((at(c) + d).max(0.0), (c.in_cache() + d).max(0.0)));
        }
        self.lookup(t.kind?).map(|c| (at(c), c.in_cache()))
    }
}

/// Probes per lookup of the calibration's wide LPM table (32 prefix lengths: a binary
/// search over 32 lengths takes at most ceil(log2(33)) = 6 probes).
pub const WIDE_LPM_PROBES: usize = 6;

/// What a table's lookups cost depends on: its kind, entries and, for a wide LPM table,
/// the probes of the binary search over its prefix lengths.
#[derive(Debug, Clone, Copy, Default)]
pub struct TableShape {
    /// Match kind; `None` for a keyless table.
    pub kind: Option<MatchKind>,
    /// Entries.
    pub entries: usize,
    /// Wide LPM: hash probes per lookup (ceil(log2(lengths + 1))); 0 otherwise.
    pub lpm_probes: usize,
    /// Distinct flows of the traffic ([`trace_flows`]); `None`: not known (priced
    /// like the calibration's traffic).
    pub flows: Option<usize>,
}

/// Probes of a binary search over `lengths` distinct prefix lengths.
pub fn probes_for_lengths(lengths: usize) -> usize {
    let mut p = 0;
    while (1usize << p) < lengths + 1 {
        p += 1;
    }
    p.max(1)
}

impl TableShape {
    /// The shape of `t` holding `entries` entries with `lengths` distinct prefix lengths
    /// (`None`: not known, as at load time before a controller adds entries; every
    /// length of the field is assumed then).
    pub fn of(t: &p4jet_ir::TableInfo, entries: usize, lengths: Option<usize>) -> TableShape {
        if t.keys.is_empty() {
            return TableShape::default();
        }
        let lpm: Vec<&p4jet_ir::TableKey> =
            t.keys.iter().filter(|k| k.kind == MatchKind::Lpm).collect();
        let wide = t.match_type == MatchKind::Lpm
            && lpm.len() == 1
            && (t.keys.len() > 1 || lpm[0].width > 32);
        TableShape {
            kind: Some(t.match_type),
            entries,
            lpm_probes: if wide {
                probes_for_lengths(lengths.unwrap_or(lpm[0].width as usize + 1))
            } else {
                0
            },
            flows: None,
        }
    }
}

/// Where the profile lives: `--profile`, $P4JET_PROFILE, the XDG cache, ~/.cache.
pub fn profile_path(arg: Option<&Path>, engine: p4jet_engine::EngineKind) -> PathBuf {
    if let Some(p) = arg {
        return p.to_path_buf();
    }
    if let Some(p) = std::env::var_os("P4JET_PROFILE") {
        return PathBuf::from(p);
    }
    let dir = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    dir.join("p4jet")
        .join(format!("profile-{}.json", engine.name()))
}

/// Reads a profile.
pub fn load_profile(path: &Path) -> Result<Profile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: {e} (run `p4jet model --calibrate` to measure this machine)",
            path.display()
        )
    })?;
    let p: Profile = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if p.version != PROFILE_VERSION {
        return Err(format!(
            "{}: profile version {} (this p4jet writes {PROFILE_VERSION}); run `p4jet model --calibrate`",
            path.display(),
            p.version
        ));
    }
    Ok(p)
}

fn save_profile(path: &Path, p: &Profile) -> Result<(), String> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let text = serde_json::to_string_pretty(p).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------
// Program structure

/// A table on the modelled path.
#[derive(Debug, Clone, Serialize)]
pub struct TableFeature {
    /// Table name.
    pub name: String,
    /// `ingress` or `egress`.
    pub control: &'static str,
    /// Match kind (`exact`, `lpm`, `ternary`, `range`), or `keyless`.
    pub kind: String,
    /// Entries loaded.
    pub entries: usize,
    /// Wide LPM: hash probes per lookup; 0 otherwise.
    pub lpm_probes: usize,
    /// Primitives of its most expensive action.
    pub prims: usize,
    /// Of those, moves (constant, parameter and field-to-field assignments).
    pub moves: usize,
    /// Applies per packet: from a traced sample of the traffic, else 1 (every table of
    /// the costliest path for every packet).
    pub share: f64,
    #[serde(skip)]
    shape: TableShape,
    #[serde(skip)]
    split: Prims,
}

/// What the model counts in a program.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Features {
    /// Headers extracted on the parser's longest path (α).
    pub parsed_headers: usize,
    /// Headers whose fields the actions on the path write (β).
    pub modified_headers: usize,
    /// Tables with a key on the path (γ).
    pub keyed_tables: usize,
    /// Every table and keyless call on the path, in order.
    pub tables: Vec<TableFeature>,
    /// Checksums verified after parsing.
    pub checksums_verified: usize,
    /// Checksums updated before deparsing.
    pub checksums_updated: usize,
    /// Average frame bytes of the traffic (64 without a trace).
    pub frame_bytes: f64,
    /// Distinct flows of the traffic ([`trace_flows`]; none without a trace).
    pub flows: Option<usize>,
    /// Packets of the trace run through the program to weigh its paths (0: no trace;
    /// the costliest path is priced for every packet).
    pub traced_packets: usize,
    /// Headers extracted per packet (the parser's longest path without a trace).
    pub extracted: f64,
    /// Headers emitted per packet (as `extracted` without a trace).
    pub emitted: f64,
    /// Checksums verified per packet.
    pub verified: f64,
    /// Checksums updated per packet.
    pub updated: f64,
    /// Per-packet decisions a branch predictor misses, per packet, by stage (parse,
    /// ingress, egress, deparse); zero without a trace.
    pub mispredicts: [f64; 4],
}

fn parser_longest(prog: &Program) -> usize {
    fn walk(prog: &Program, s: u32, depth: usize, seen: &mut Vec<u32>) -> usize {
        let Some(st) = prog.parser.states.get(s as usize) else {
            return 0;
        };
        if depth > 64 || seen.contains(&s) {
            return 0;
        }
        seen.push(s);
        let here = st
            .ops
            .iter()
            .filter(|o| {
                matches!(
                    o,
                    ParserOp::Extract(_)
                        | ParserOp::ExtractNext(_)
                        | ParserOp::ExtractNextVarbit { .. }
                        | ParserOp::ExtractUnionNext { .. }
                        | ParserOp::ExtractVarbit { .. }
                )
            })
            .count();
        let next = st
            .transitions
            .iter()
            .filter_map(|t| t.next)
            .map(|n| walk(prog, n, depth + 1, seen))
            .max()
            .unwrap_or(0);
        seen.pop();
        here + next
    }
    prog.parser
        .init
        .map_or(0, |s| walk(prog, s, 0, &mut vec![]))
}

/// The header a primitive writes, when it writes a static field or adds/removes a
/// fixed header.
fn header_of_prim(prog: &Program, p: &Prim) -> Option<u32> {
    let field = |f: u32| prog.fields.get(f as usize).map(|i| i.header);
    match p {
        Prim::Assign {
            dst: p4jet_ir::FieldRef::Static(f),
            ..
        } => field(*f),
        Prim::AssignConst { dst, .. }
        | Prim::AssignParam { dst, .. }
        | Prim::CopyField { dst, .. } => field(*dst),
        Prim::AddHeader(p4jet_ir::HeaderRef::Static(h))
        | Prim::AddHeaderFast(p4jet_ir::HeaderRef::Static(h))
        | Prim::RemoveHeader(p4jet_ir::HeaderRef::Static(h)) => Some(*h),
        _ => None,
    }
}

/// An action's primitives: moves (a constant, an action parameter or another field
/// written to a field: a load and a store in generated code) and the others
/// (expressions, hashes, header operations, externs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Prims {
    /// Constant, parameter and field-to-field assignments.
    pub moves: usize,
    /// Every other primitive.
    pub general: usize,
}

impl Prims {
    /// All primitives.
    pub fn total(self) -> usize {
        self.moves + self.general
    }

    /// Cost (ns) of the primitives past the first (the first is in the calibrated cost
    /// of a call or a lookup, whose action is one move); without a profile, a count.
    fn extra(self, p: Option<&Profile>) -> f64 {
        let (m, g) = p.map_or((1.0, 1.0), |p| (p.move_ns, p.prim_ns));
        if self.moves > 0 {
            (self.moves - 1) as f64 * m + self.general as f64 * g
        } else {
            self.general.saturating_sub(1) as f64 * g
        }
    }
}

/// Primitives of one action (a `Call` counts its callee's).
fn action_prims(prog: &Program, a: u32, depth: usize) -> Prims {
    let mut n = Prims::default();
    let Some(act) = prog.actions.get(a as usize) else {
        return n;
    };
    for p in &act.body {
        match p {
            Prim::Call(b) if depth < 8 => {
                let c = action_prims(prog, *b, depth + 1);
                n.moves += c.moves;
                n.general += c.general;
            }
            Prim::Jump(_) | Prim::JumpIfZero(..) => {}
            Prim::AssignConst { .. } | Prim::AssignParam { .. } | Prim::CopyField { .. } => {
                n.moves += 1
            }
            _ => n.general += 1,
        }
    }
    n
}

/// The dearest action of a table.
fn table_prims(prog: &Program, ti: &p4jet_ir::TableInfo, p: Option<&Profile>) -> Prims {
    ti.actions
        .iter()
        .map(|a| action_prims(prog, *a, 0))
        .max_by(|a, b| a.extra(p).total_cmp(&b.extra(p)))
        .unwrap_or_default()
}

impl Features {
    /// The features of a loaded switch (entries as loaded) for frames of `frame_bytes`.
    /// The features of the program loaded in `sw` with its entries, for traffic of
    /// `frame_bytes` average bytes and `flows` distinct flows.
    pub fn of(
        sw: &Switch,
        profile: Option<&Profile>,
        frame_bytes: f64,
        flows: Option<usize>,
        paths: Option<&PathStats>,
    ) -> Features {
        let prog = &sw.engine.prog;
        let shapes: Vec<TableShape> = sw
            .with_state(|s| {
                s.tables
                    .iter()
                    .zip(&prog.tables)
                    .map(|(t, ti)| {
                        let mut lengths = std::collections::BTreeSet::new();
                        if ti.match_type == MatchKind::Lpm {
                            for (_, key, _) in t.entries.iter() {
                                lengths.extend(key.fields.iter().filter_map(|m| match m {
                                    p4jet_tables::FieldMatch::Lpm { prefix_len, .. } => {
                                        Some(*prefix_len)
                                    }
                                    _ => None,
                                }));
                            }
                        }
                        TableShape {
                            flows,
                            ..TableShape::of(ti, t.entries.len(), Some(lengths.len()))
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        Features {
            flows,
            ..Features::of_program(prog, &shapes, profile, frame_bytes, paths)
        }
    }

    /// The features of a program whose table `i` has shape `entries[i]`, for traffic
    /// whose paths `paths` traced (`None`: the costliest path for every packet).
    pub fn of_program(
        prog: &Program,
        entries: &[TableShape],
        profile: Option<&Profile>,
        frame_bytes: f64,
        paths: Option<&PathStats>,
    ) -> Features {
        let parsed = parser_longest(prog);
        let verified = prog.checksums.iter().filter(|c| c.verify).count();
        let updated = prog.checksums.iter().filter(|c| c.update).count();
        let traced = paths.filter(|p| p.packets > 0);
        let mut f = Features {
            parsed_headers: parsed,
            checksums_verified: verified,
            checksums_updated: updated,
            frame_bytes,
            traced_packets: traced.map_or(0, |p| p.packets),
            extracted: traced.map_or(parsed as f64, |p| p.extracted),
            emitted: traced.map_or(parsed as f64, |p| p.emitted),
            verified: traced.map_or(verified as f64, |p| p.verified),
            updated: traced.map_or(updated as f64, |p| p.updated),
            mispredicts: traced.map_or([0.0; 4], |p| p.mispredicts),
            ..Features::default()
        };
        let mut modified = std::collections::BTreeSet::new();
        for (control, name) in [(&prog.ingress, "ingress"), (&prog.egress, "egress")] {
            // with a trace every node some packet reached, with its share; else the
            // costliest path, each node for every packet
            let nodes: Vec<(u32, f64)> = match traced {
                Some(p) => (0..control.nodes.len() as u32)
                    .filter_map(|i| {
                        let share = match &control.nodes[i as usize] {
                            ControlNode::Table(t) => prog
                                .tables
                                .get(*t as usize)
                                .and_then(|ti| p.tables.get(&ti.name).copied()),
                            ControlNode::Call { action, .. } => prog
                                .actions
                                .get(*action as usize)
                                .and_then(|a| p.calls.get(&a.name).copied()),
                            ControlNode::Cond { .. } => None,
                        }?;
                        (share > 0.0).then_some((i, share))
                    })
                    .collect(),
                None => costliest_path(prog, control, entries, profile)
                    .into_iter()
                    .map(|i| (i, 1.0))
                    .collect(),
            };
            for (node, share) in nodes {
                match &control.nodes[node as usize] {
                    ControlNode::Table(t) => {
                        let Some(ti) = prog.tables.get(*t as usize) else {
                            continue;
                        };
                        let prims = table_prims(prog, ti, profile);
                        for a in &ti.actions {
                            if let Some(act) = prog.actions.get(*a as usize) {
                                modified.extend(
                                    act.body.iter().filter_map(|p| header_of_prim(prog, p)),
                                );
                            }
                        }
                        let kind = if ti.keys.is_empty() {
                            "keyless".to_string()
                        } else {
                            f.keyed_tables += 1;
                            format!("{:?}", ti.match_type).to_lowercase()
                        };
                        let shape = entries.get(*t as usize).copied().unwrap_or_default();
                        f.tables.push(TableFeature {
                            name: ti.name.clone(),
                            control: name,
                            kind,
                            entries: shape.entries,
                            lpm_probes: shape.lpm_probes,
                            prims: prims.total(),
                            moves: prims.moves,
                            share,
                            shape,
                            split: prims,
                        });
                    }
                    ControlNode::Call {
                        name: n, action, ..
                    } => {
                        let prims = action_prims(prog, *action, 0);
                        f.tables.push(TableFeature {
                            name: n.clone(),
                            control: name,
                            kind: "keyless".into(),
                            entries: 0,
                            lpm_probes: 0,
                            prims: prims.total(),
                            moves: prims.moves,
                            share,
                            shape: TableShape::default(),
                            split: prims,
                        });
                    }
                    ControlNode::Cond { .. } => {}
                }
            }
        }
        // metadata (egress_spec, user metadata) is not a packet header
        let meta: std::collections::BTreeSet<u32> = prog
            .headers
            .iter()
            .enumerate()
            .filter(|(_, h)| h.metadata)
            .map(|(i, _)| i as u32)
            .collect();
        f.modified_headers = modified.difference(&meta).count();
        f
    }
}

/// Cost of one control node alone (ns; a unit cost without a profile).
fn node_cost(
    prog: &Program,
    node: &ControlNode,
    entries: &[TableShape],
    p: Option<&Profile>,
) -> f64 {
    match node {
        ControlNode::Table(t) => {
            let Some(ti) = prog.tables.get(*t as usize) else {
                return 0.0;
            };
            let extra = table_prims(prog, ti, p).extra(p);
            let Some(p) = p else {
                return 1.0 + extra;
            };
            if ti.keys.is_empty() {
                p.call_ns + extra
            } else {
                let shape = entries.get(*t as usize).copied().unwrap_or_default();
                p.lookup_cost(&shape).map_or(p.call_ns, |c| c.0) + extra
            }
        }
        ControlNode::Call { action, .. } => {
            p.map_or(1.0, |p| p.call_ns) + action_prims(prog, *action, 0).extra(p)
        }
        ControlNode::Cond { .. } => 0.0,
    }
}

/// The nodes of a control's most expensive path from its first node (a packet applies at
/// most these; at a branch the dearer side is taken).
fn costliest_path(
    prog: &Program,
    control: &p4jet_ir::Control,
    entries: &[TableShape],
    p: Option<&Profile>,
) -> Vec<u32> {
    let n = control.nodes.len();
    let mut memo: Vec<Option<(f64, Option<u32>)>> = vec![None; n];
    fn succ(node: &ControlNode) -> Vec<Option<u32>> {
        match node {
            ControlNode::Table(_) => vec![],
            ControlNode::Cond { t, f, .. } => vec![*t, *f],
            ControlNode::Call { next, .. } => vec![*next],
        }
    }
    #[allow(clippy::too_many_arguments)]
    fn best(
        i: u32,
        prog: &Program,
        control: &p4jet_ir::Control,
        entries: &[TableShape],
        p: Option<&Profile>,
        memo: &mut Vec<Option<(f64, Option<u32>)>>,
        depth: usize,
    ) -> f64 {
        if let Some(Some((c, _))) = memo.get(i as usize) {
            return *c;
        }
        let Some(node) = control.nodes.get(i as usize) else {
            return 0.0;
        };
        if depth > 4096 {
            return 0.0;
        }
        let mut next: Vec<Option<u32>> = succ(node);
        if let ControlNode::Table(t) = node
            && let Some(ti) = prog.tables.get(*t as usize)
        {
            next = match &ti.next {
                TableNext::ByAction(v) => v.clone(),
                TableNext::HitMiss { hit, miss } => vec![*hit, *miss],
            };
            next.push(ti.base_default_next);
        }
        let mut choice = (0.0, None);
        for s in next.into_iter().flatten() {
            let c = best(s, prog, control, entries, p, memo, depth + 1);
            if choice.1.is_none() || c > choice.0 {
                choice = (c, Some(s));
            }
        }
        let c = node_cost(prog, node, entries, p) + choice.0;
        memo[i as usize] = Some((c, choice.1));
        c
    }
    let mut path = vec![];
    let Some(init) = control.init else {
        return path;
    };
    best(init, prog, control, entries, p, &mut memo, 0);
    let mut at = Some(init);
    while let Some(i) = at {
        if path.len() > n {
            break;
        }
        path.push(i);
        at = memo.get(i as usize).and_then(|m| m.and_then(|(_, nx)| nx));
    }
    path
}

// ---------------------------------------------------------------------------------
// Prediction

/// The model's answer for one program.
#[derive(Debug, Clone, Serialize)]
pub struct Prediction {
    /// CPU ns per packet.
    pub ns_per_packet: f64,
    /// Mpps one core forwards (1000 / ns).
    pub mpps_per_core: f64,
    /// The three terms (ns): cpu, memory, io.
    pub cpu_ns: f64,
    /// Memory stalls: lookups above their in-cache cost.
    pub memory_ns: f64,
    /// Receive, batch and transmit.
    pub io_ns: f64,
    /// `cpu`, `memory` or `io`: the largest term.
    pub binding: &'static str,
    /// ns by stage: parse, ingress, egress, deparse, io.
    pub stages: Vec<(String, f64)>,
    /// The stage with the most time.
    pub dominant_stage: String,
    /// Batch the prediction is for.
    pub batch: usize,
    /// Keys per stage of a batched lookup (prefetch distance).
    pub sub_batch: usize,
    /// Queue ahead of the worker (packets).
    pub queue: usize,
    /// Mean latency (µs) with `queue` packets waiting.
    pub latency_mean_us: f64,
    /// p99 latency (µs).
    pub latency_p99_us: f64,
    /// Average frame bytes the prediction is for.
    pub frame_bytes: f64,
}

/// Table calls per packet for a table that `share` of the packets apply, at batch
/// `batch`: the control runs over chunks of at most 64 packets and calls a table's
/// batched lookup once per chunk that has a packet at it (`1 − (1 − share)^chunk` of
/// the chunks for packets drawn independently).
pub fn calls_per_packet(share: f64, batch: usize) -> f64 {
    let chunk = batch.clamp(1, 64) as f64;
    if share >= 1.0 {
        share / chunk
    } else {
        (1.0 - (1.0 - share.max(0.0)).powf(chunk)) / chunk
    }
}

/// (ns per packet, of which memory stalls) of table `t` at batch `batch`: its apply
/// cost for the packets that apply it, and for a keyed table the per-call part of the
/// calibrated lookup cost (measured as shared by a whole calibration batch) moved to
/// the calls the table gets.
fn table_cost(t: &TableFeature, p: &Profile, batch: usize) -> (f64, f64) {
    let extra = t.split.extra(Some(p));
    match p.lookup_cost(&t.shape) {
        None => (t.share * (p.call_ns + extra), 0.0),
        Some((at, base)) => {
            let per_call = p.table_call_ns;
            let c = t.share * (at + extra - per_call / p.batch.max(1) as f64)
                + per_call * calls_per_packet(t.share, batch);
            (c, t.share * (at - base).max(0.0))
        }
    }
}

/// Predicts `f` with `p` at batch `batch` (auto: [`auto_batch`]).
pub fn predict(f: &Features, p: &Profile, batch: BatchArg, queue: Option<usize>) -> Prediction {
    let (b, sub) = match batch {
        BatchArg::Auto => auto_batch(f, p),
        BatchArg::Fixed(b) => (b, p4jet_engine::DEFAULT_SUB_BATCH.min(b.max(1))),
    };
    let miss = |i: usize| p.branch_ns * f.mispredicts[i];
    let parse = p.header_ns * f.extracted / 2.0 + p.checksum_ns * f.verified + miss(0);
    let deparse = p.header_ns * f.emitted / 2.0 + p.checksum_ns * f.updated + miss(3);
    let (mut ingress, mut egress, mut memory) = (miss(1), miss(2), 0.0);
    for t in &f.tables {
        let (c, stall) = table_cost(t, p, b);
        memory += stall;
        if t.control == "egress" {
            egress += c;
        } else {
            ingress += c;
        }
    }
    // the null program was measured at the calibration batch: move its batch share
    let io = p.null_ns
        + p.byte_ns * (f.frame_bytes - 64.0).max(0.0)
        + p.batch_ns * (1.0 / b as f64 - 1.0 / p.batch.max(1) as f64);
    let io = io.max(1.0);
    let total = parse + ingress + egress + deparse + io;
    let cpu = total - io - memory;
    let binding = if memory >= cpu && memory >= io {
        "memory"
    } else if io >= cpu {
        "io"
    } else {
        "cpu"
    };
    let stages = vec![
        ("parse".to_string(), parse),
        ("ingress".to_string(), ingress),
        ("egress".to_string(), egress),
        ("deparse".to_string(), deparse),
        ("io".to_string(), io),
    ];
    let dominant_stage = stages
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|s| s.0.clone())
        .unwrap_or_default();
    let q = queue.unwrap_or(b).max(1);
    // a packet waits for the Q ahead of it, less the receive work of the batches that
    // come in while it waits (done before their clocks start)
    let lat = ((q as f64 * total - b as f64 * p.inject_ns) / 1000.0).max(total / 1000.0);
    Prediction {
        ns_per_packet: total,
        mpps_per_core: 1000.0 / total,
        cpu_ns: cpu,
        memory_ns: memory,
        io_ns: io,
        binding,
        stages,
        dominant_stage,
        batch: b,
        sub_batch: sub,
        queue: q,
        latency_mean_us: lat,
        latency_p99_us: lat * p.p99_factor,
        frame_bytes: f.frame_bytes,
    }
}

/// The batch and sub-batch the model chooses (APSys 2017: B large enough that the
/// per-batch cost is amortised, b large enough that a lookup's prefetches cover its
/// memory stall, neither larger than needed: a larger batch only adds latency and cache
/// pressure).
///
/// B: the smallest power of two (8..256) at which the per-batch cost is at most 2% of the
/// packet's cost. b: with memory stalls, the keys whose hashing covers one stall (the
/// stall over the in-cache cost of a lookup), never below the engine's default (a
/// first version went down to 4 and measured up to 15% slower), at most 64 and at most
/// B; without stalls the engine's default.
pub fn auto_batch(f: &Features, p: &Profile) -> (usize, usize) {
    let probe = predict_fixed(f, p, 1 << 20);
    let per_pkt = probe.ns_per_packet.max(1.0);
    let mut b = 8usize;
    while b < 256 && p.batch_ns / b as f64 > 0.02 * per_pkt {
        b *= 2;
    }
    let sub = if probe.memory_ns > 0.05 * per_pkt {
        let hit = f
            .tables
            .iter()
            .filter_map(|t| p.lookup_cost(&t.shape).map(|(at, base)| (at - base, base)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        match hit {
            Some((stall, base)) if base > 0.0 => ((stall / base).ceil() as usize)
                .next_power_of_two()
                .clamp(p4jet_engine::DEFAULT_SUB_BATCH, 64),
            _ => p4jet_engine::DEFAULT_SUB_BATCH,
        }
    } else {
        p4jet_engine::DEFAULT_SUB_BATCH
    };
    // a batch smaller than the prefetch window wastes it
    let b = b.max(sub);
    (b, sub.min(b))
}

fn predict_fixed(f: &Features, p: &Profile, b: usize) -> Prediction {
    predict(f, p, BatchArg::Fixed(b), None)
}

/// The model's batch for a program loaded in `sw` (for `--batch auto`): reads the
/// profile (`profile` or the default place); without one, the defaults and a note.
pub fn auto_for(
    sw: &Switch,
    profile: Option<&Path>,
    frames: &[Vec<u8>],
    paths: Option<&PathStats>,
) -> Result<(usize, usize, Prediction), String> {
    let path = profile_path(profile, sw.engine.cfg.engine);
    let p = load_profile(&path)?;
    let bytes = frames.iter().map(|f| f.len()).sum::<usize>() as f64 / frames.len().max(1) as f64;
    let f = Features::of(sw, Some(&p), bytes, Some(trace_flows(frames)), paths);
    let pred = predict(&f, &p, BatchArg::Auto, None);
    Ok((pred.batch, pred.sub_batch, pred))
}

/// `--batch` and `--sub-batch` of `run`: fixed values pass through; `auto` is the
/// model's choice for `json` with every table at its declared size (the entries a
/// controller will add are not known at load time), from the profile in its default
/// place. Without a profile, `auto` falls back to the defaults (32, the engine's
/// sub-batch) with a note on stderr.
pub fn resolve_at_load(
    json: Option<&str>,
    batch: BatchArg,
    sub_batch: BatchArg,
    engine: p4jet_engine::EngineKind,
) -> Result<(usize, usize), String> {
    if let BatchArg::Fixed(s) = sub_batch
        && !(1..=64).contains(&s)
    {
        return Err(format!("--sub-batch {s}: expected 1..64 or auto"));
    }
    let fixed = |a: BatchArg, d: usize| match a {
        BatchArg::Fixed(n) => n,
        BatchArg::Auto => d,
    };
    if batch != BatchArg::Auto && sub_batch != BatchArg::Auto {
        return Ok((
            fixed(batch, 32),
            fixed(sub_batch, p4jet_engine::DEFAULT_SUB_BATCH),
        ));
    }
    let chosen = json.and_then(|j| {
        let path = profile_path(None, engine);
        let p = match load_profile(&path) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("p4jet: --batch/--sub-batch auto: {e}; using the defaults");
                return None;
            }
        };
        let e = p4jet_engine::load(j, p4jet_engine::EngineConfig::default()).ok()?;
        let sizes: Vec<TableShape> = e
            .prog
            .tables
            .iter()
            .map(|t| TableShape::of(t, t.max_size as usize, None))
            .collect();
        let f = Features::of_program(&e.prog, &sizes, Some(&p), 64.0, None);
        Some(auto_batch(&f, &p))
    });
    let by_model = chosen.is_some();
    let (ab, asb) = chosen.unwrap_or((32, p4jet_engine::DEFAULT_SUB_BATCH));
    let b = fixed(batch, ab);
    let sb = fixed(sub_batch, asb);
    if by_model {
        eprintln!("p4jet: batch {b}, sub-batch {sb} (auto: chosen by the performance model)");
    } else {
        eprintln!("p4jet: batch {b}, sub-batch {sb} (auto without a profile: the defaults)");
    }
    Ok((b, sb))
}

// ---------------------------------------------------------------------------------
// Run time: the batch adjusted from measured cost

/// Packets a [`BatchTuner`] measures per decision.
pub const TUNE_WINDOW: u64 = 1 << 18;
/// The smallest gain (cost per packet) that makes a [`BatchTuner`] keep a new batch.
pub const TUNE_GAIN: f64 = 0.03;

/// A knob a [`BatchTuner`] turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Knob {
    Batch,
    Sub,
}

/// Adjusts a forwarding thread's batch and sub-batch while it runs (`run --batch auto
/// --sub-batch auto`): the model chooses the first values at load time, before a
/// controller has filled the tables; the tuner then measures the cost per packet of
/// the thread's saturated turns (turns that took a whole batch, so the batch size is
/// what limits the rate) over windows of [`TUNE_WINDOW`] packets and tries a
/// neighbouring power of two of one knob at a time, keeping it when it is at least
/// [`TUNE_GAIN`] cheaper and going back otherwise. The batch is probed first (8..256);
/// once probes both ways fail, the sub-batch (the tables' prefetch distance,
/// [`BatchTuner::SUB_MIN`]..64 and at most the batch) the same way; once that settles
/// too the tuner waits (1, 2, 4 ... 64 windows) before the next round, so a settled
/// thread spends at most one window in 64 on a worse value. A knob that is not tuned
/// (a fixed `--batch` or `--sub-batch`) is never probed. Sans I/O: the caller feeds it
/// measurements and applies the values it returns.
#[derive(Debug, Clone)]
pub struct BatchTuner {
    batch: usize,
    sub: usize,
    tune: [bool; 2],
    /// Cost per packet at the current values, from the last window measured there.
    base: Option<f64>,
    /// A probe under way: its knob and the value to go back to.
    trial: Option<(Knob, usize)>,
    /// The knob probed next, and each knob's next direction (true: up).
    knob: Knob,
    up: [bool; 2],
    /// Consecutive failed probes of `knob`.
    failures: u32,
    /// Windows to wait before the next probe, and the current back-off.
    rest: u32,
    backoff: u32,
    packets: u64,
    ns: f64,
}

impl BatchTuner {
    /// Smallest and largest batch tried.
    pub const MIN: usize = 8;
    /// See [`BatchTuner::MIN`].
    pub const MAX: usize = 256;
    /// Smallest sub-batch tried (the largest is 64, the tables' most keys per stage).
    pub const SUB_MIN: usize = 4;
    /// See [`BatchTuner::SUB_MIN`].
    pub const SUB_MAX: usize = 64;

    /// A tuner starting at `batch` and `sub_batch` (the model's choice; a tuned batch
    /// is clamped to 8..256), turning the knobs `tune_batch` and `tune_sub` say.
    pub fn new(batch: usize, sub_batch: usize, tune_batch: bool, tune_sub: bool) -> BatchTuner {
        BatchTuner {
            batch: if tune_batch {
                batch.clamp(Self::MIN, Self::MAX)
            } else {
                batch.max(1)
            },
            sub: sub_batch.clamp(1, Self::SUB_MAX),
            tune: [tune_batch, tune_sub],
            base: None,
            trial: None,
            knob: if tune_batch { Knob::Batch } else { Knob::Sub },
            up: [true, true],
            failures: 0,
            rest: 0,
            backoff: 1,
            packets: 0,
            ns: 0.0,
        }
    }

    /// The batch in use.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// The sub-batch in use (never more than the batch).
    pub fn sub_batch(&self) -> usize {
        self.sub.min(self.batch)
    }

    fn value(&self, k: Knob) -> usize {
        match k {
            Knob::Batch => self.batch,
            Knob::Sub => self.sub_batch(),
        }
    }

    fn set(&mut self, k: Knob, v: usize) {
        match k {
            Knob::Batch => self.batch = v,
            Knob::Sub => self.sub = v,
        }
    }

    /// The neighbouring value of `k` one way, if there is one.
    fn step(&self, k: Knob, up: bool) -> Option<usize> {
        let v = self.value(k);
        let (lo, hi) = match k {
            Knob::Batch => (Self::MIN, Self::MAX),
            Knob::Sub => (Self::SUB_MIN, Self::SUB_MAX.min(self.batch)),
        };
        if up {
            (v * 2 <= hi).then_some(v * 2)
        } else {
            (v / 2 >= lo).then_some(v / 2)
        }
    }

    /// Both directions of `k` failed: the sub-batch next, or a rest before the next
    /// round.
    fn settled(&mut self, k: Knob) {
        self.failures = 0;
        if k == Knob::Batch && self.tune[Knob::Sub as usize] {
            self.knob = Knob::Sub;
        } else {
            self.knob = if self.tune[Knob::Batch as usize] {
                Knob::Batch
            } else {
                Knob::Sub
            };
            self.rest = self.backoff;
            self.backoff = (self.backoff * 2).min(64);
        }
    }

    /// A saturated turn forwarded `packets` in `ns` nanoseconds. Returns the (batch,
    /// sub-batch) to use from now on when either changes.
    pub fn observe(&mut self, packets: u64, ns: f64) -> Option<(usize, usize)> {
        self.packets += packets;
        self.ns += ns;
        if self.packets < TUNE_WINDOW {
            return None;
        }
        let cost = self.ns / self.packets as f64;
        self.packets = 0;
        self.ns = 0.0;
        if let Some((k, from)) = self.trial.take() {
            let base = self.base.unwrap_or(f64::INFINITY);
            if cost < base * (1.0 - TUNE_GAIN) {
                // keep it, and probe further the same way next window
                self.base = Some(cost);
                self.failures = 0;
                self.backoff = 1;
                return None;
            }
            self.set(k, from);
            self.base = None;
            self.up[k as usize] = !self.up[k as usize];
            self.failures += 1;
            if self.failures >= 2 {
                self.settled(k);
            }
            return Some((self.batch, self.sub_batch()));
        }
        self.base = Some(cost);
        if self.rest > 0 {
            self.rest -= 1;
            return None;
        }
        // probe the knob due, or the other when it has nowhere to go
        for _ in 0..2 {
            let k = self.knob;
            if self.tune[k as usize] {
                let i = k as usize;
                let to = self.step(k, self.up[i]).or_else(|| {
                    self.up[i] = !self.up[i];
                    self.step(k, self.up[i])
                });
                if let Some(to) = to {
                    self.trial = Some((k, self.value(k)));
                    self.set(k, to);
                    return Some((self.batch, self.sub_batch()));
                }
            }
            self.failures = 0;
            self.knob = match k {
                Knob::Batch => Knob::Sub,
                Knob::Sub => Knob::Batch,
            };
        }
        None
    }
}

// ---------------------------------------------------------------------------------
// Calibration: micro-programs

/// A micro-benchmark program: Ethernet plus `headers - 1` 20-byte headers, optionally
/// a table on the first one's first field, keyless calls, extra primitives, a checksum.
#[derive(Debug, Clone, Default)]
pub struct Micro {
    /// Headers extracted and emitted (Ethernet counts; at least 1).
    pub headers: usize,
    /// A table keyed on `h0.a` (32 bits) of this kind, its action setting the port;
    /// `lpm_wide`: keyed on `h0.b` exact and `h0.a` LPM (the binary search over prefix
    /// lengths).
    pub table: Option<&'static str>,
    /// `lpm_wide`: distinct prefix lengths of the entries (1: all /24; else 1..=this).
    pub lpm_lengths: u32,
    /// Keyless tables, each running one primitive.
    pub calls: usize,
    /// Extra primitives (`a = a + 1`) in the first keyless call.
    pub prims: usize,
    /// Extra moves (`a = constant`) in the first keyless call.
    pub moves: usize,
    /// An internet checksum over `h0` updated before deparsing.
    pub checksum: bool,
    /// After `h0`, a parser select on `h0.e` (1: a 20-byte header `ha`, which the
    /// control removes; else none, and the control adds `ha`): two paths that part in
    /// the parser, the control and the deparser, with frames of different layouts, as
    /// a tunnel's two directions do ([`Micro::split_frames`]).
    pub split: bool,
}

fn field(h: &str, f: &str) -> serde_json::Value {
    serde_json::json!({"type": "field", "value": [h, f]})
}

impl Micro {
    /// The bmv2 JSON.
    pub fn json(&self) -> String {
        use serde_json::json;
        let n = self.headers.max(1);
        let mut headers = vec![
            json!({"name": "standard_metadata", "id": 0, "header_type": "standard_metadata", "metadata": true}),
            json!({"name": "ethernet", "id": 1, "header_type": "ethernet_t", "metadata": false}),
        ];
        for i in 0..n - 1 {
            headers.push(json!({"name": format!("h{i}"), "id": 2 + i, "header_type": "h_t", "metadata": false}));
        }
        let mut states = vec![];
        states.push(json!({"name": "start", "id": 0,
            "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "ethernet"}]}],
            "transition_key": [],
            "transitions": [{"type": "default", "value": null, "mask": null,
                "next_state": if n > 1 { json!("s0") } else { json!(null) }}]}));
        for i in 0..n - 1 {
            states.push(json!({"name": format!("s{i}"), "id": 1 + i,
                "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": format!("h{i}")}]}],
                "transition_key": [],
                "transitions": [{"type": "default", "value": null, "mask": null,
                    "next_state": if i + 2 < n { json!(format!("s{}", i + 1)) } else { json!(null) }}]}));
        }
        let order: Vec<String> = std::iter::once("ethernet".to_string())
            .chain((0..n - 1).map(|i| format!("h{i}")))
            .collect();
        let hf = if n > 1 { "h0" } else { "ethernet" };
        let (kf1, kf2) = if n > 1 {
            ("b", "c")
        } else {
            ("ether_type", "ether_type")
        };
        let mut actions = vec![
            json!({"name": "fwd", "id": 0, "runtime_data": [{"name": "port", "bitwidth": 9}],
                "primitives": [{"op": "assign", "parameters": [field("standard_metadata", "egress_spec"), {"type": "runtime_data", "value": 0}]}]}),
        ];
        let mut tables = vec![];
        let mut next_id = 0usize;
        let mut chain: Vec<String> = vec![];
        if let Some(kind) = self.table {
            let mt = if kind == "lpm_wide" { "lpm" } else { kind };
            let a = json!({"match_type": mt, "name": "a", "target": [hf, if n > 1 { "a" } else { "dst" }], "mask": null});
            let key = if kind == "lpm_wide" {
                json!([{"match_type": "exact", "name": "b", "target": [hf, "b"], "mask": null}, a])
            } else {
                json!([a])
            };
            tables.push(json!({"name": "t", "id": next_id, "key": key,
                "match_type": mt, "type": "simple", "max_size": 2_000_000, "with_counters": false,
                "support_timeout": false, "direct_meters": null, "action_ids": [0], "actions": ["fwd"],
                "base_default_next": null, "next_tables": {"fwd": null},
                "default_entry": {"action_id": 0, "action_const": false, "action_data": ["0x0"], "action_entry_const": false}}));
            chain.push("t".into());
            next_id += 1;
        }
        for c in 0..self.calls {
            let aid = 1 + c;
            let mut prims =
                vec![json!({"op": "assign", "parameters": [field(hf, kf1), field(hf, kf2)]})];
            if c == 0 {
                for _ in 0..self.prims {
                    prims.push(json!({"op": "assign", "parameters": [field(hf, kf1), {"type": "expression", "value": {"type": "expression", "value": {"op": "+", "left": field(hf, kf1), "right": {"type": "hexstr", "value": "0x0001"}}}}]}));
                }
                // distinct fields and values, so none is a dead store
                for m in 0..self.moves {
                    let f = ["a", "c", "d", "e", "f"][m % 5];
                    prims.push(json!({"op": "assign", "parameters": [field(hf, f), {"type": "hexstr", "value": format!("0x{:04x}", 0x100 + m)}]}));
                }
            }
            actions.push(json!({"name": format!("call{c}"), "id": aid, "runtime_data": [], "primitives": prims}));
            tables.push(json!({"name": format!("tbl_call{c}"), "id": next_id, "key": [],
                "match_type": "exact", "type": "simple", "max_size": 1024, "with_counters": false,
                "support_timeout": false, "direct_meters": null, "action_ids": [aid], "actions": [format!("call{c}")],
                "base_default_next": null, "next_tables": {format!("call{c}"): null},
                "default_entry": {"action_id": aid, "action_const": true, "action_data": [], "action_entry_const": true}}));
            chain.push(format!("tbl_call{c}"));
            next_id += 1;
        }
        // link the tables in order
        for (i, t) in tables.iter_mut().enumerate() {
            let nx = chain.get(i + 1).map_or(json!(null), |s| json!(s));
            if let Some(o) = t.as_object_mut() {
                o.insert("base_default_next".into(), nx.clone());
                let acts: Vec<String> = o
                    .get("actions")
                    .and_then(|a| a.as_array())
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                let m: serde_json::Map<String, serde_json::Value> =
                    acts.into_iter().map(|a| (a, nx.clone())).collect();
                o.insert("next_tables".into(), serde_json::Value::Object(m));
            }
        }
        let (calcs, checksums) = if self.checksum && n > 1 {
            (
                json!([{"name": "calc", "id": 0, "algo": "csum16",
                    "input": [field("h0", "a"), field("h0", "b"), field("h0", "c"), field("h0", "d")]}]),
                json!([{"name": "cksum", "id": 0, "target": ["h0", "e"], "type": "generic",
                    "calculation": "calc", "verify": false, "update": true,
                    "if_cond": {"type": "expression", "value": {"op": "d2b", "left": null, "right": field("h0", "$valid$")}}}]),
            )
        } else {
            (json!([]), json!([]))
        };
        let (headers, states, order) = if self.split && n > 1 {
            self.split_parser(headers, states, order)
        } else {
            (headers, states, order)
        };
        let mut doc: serde_json::Value = serde_json::from_str(NULL_PROGRAM).unwrap_or(json!({}));
        let Some(o) = doc.as_object_mut() else {
            return String::new();
        };
        if let Some(ht) = o.get_mut("header_types").and_then(|v| v.as_array_mut()) {
            ht.push(json!({"name": "ethernet_t", "id": 1, "fields": [["dst", 48, false], ["src", 48, false], ["ether_type", 16, false]]}));
            ht.push(json!({"name": "h_t", "id": 2, "fields": [["a", 32, false], ["b", 32, false], ["c", 32, false], ["d", 32, false], ["e", 16, false], ["f", 16, false]]}));
        }
        o.insert("headers".into(), json!(headers));
        o.insert(
            "parsers".into(),
            json!([{"name": "parser", "id": 0, "init_state": "start", "parse_states": states}]),
        );
        o.insert(
            "deparsers".into(),
            json!([{"name": "deparser", "id": 0, "order": order}]),
        );
        o.insert("actions".into(), json!(actions));
        o.insert("calculations".into(), calcs);
        o.insert("checksums".into(), checksums);
        o.insert(
            "pipelines".into(),
            json!([
                {"name": "ingress", "id": 0, "init_table": chain.first(), "tables": tables, "conditionals": [], "action_profiles": []},
                {"name": "egress", "id": 1, "init_table": null, "tables": [], "conditionals": [], "action_profiles": []}]),
        );
        if self.split && n > 1 {
            Self::split_control(o);
        }
        doc.to_string()
    }

    /// Table commands for `entries` entries and a trace of `frames` frames of `size`
    /// bytes drawn uniformly from `flows` flows, each flow hitting a uniformly drawn
    /// entry (the traces of `p4jet gen`: replayed, a flow comes back at random
    /// distances, not in a fixed cycle).
    pub fn workload(
        &self,
        entries: usize,
        flows: usize,
        frames: usize,
        size: usize,
    ) -> (String, Vec<Vec<u8>>) {
        let mut rng = SplitMix(0x5eed ^ entries as u64);
        let mut cmds = String::new();
        let mut keys: Vec<u32> = Vec::with_capacity(entries);
        // lpm_wide entries: (exact part, prefix, length)
        let mut wide: Vec<(u32, u32, u32)> = vec![];
        if let Some(kind) = self.table {
            for i in 0..entries {
                // distinct keys: a bijection of i scattered over the 32-bit space
                let k = match kind {
                    "lpm" => ((i as u32) << 8).wrapping_mul(0x9E37_79B1) & 0xffff_ff00,
                    _ => (i as u32).wrapping_mul(0x9E37_79B1),
                };
                keys.push(k);
            }
            if kind == "lpm_wide" {
                // an exact part per entry, the LPM part's length from 1..=lengths
                let lengths = self.lpm_lengths.max(1);
                keys.clear();
                for (i, _) in (0..entries).enumerate() {
                    let len = if lengths == 1 {
                        24
                    } else {
                        1 + i as u32 % lengths
                    };
                    let b = (i as u32).wrapping_mul(0x9E37_79B1);
                    let a = (i as u32).wrapping_mul(0x85EB_CA6B) & (u32::MAX << (32 - len));
                    let port = 1 + (i % 3);
                    cmds.push_str(&format!(
                        "table_add t fwd 0x{b:08x} {}.{}.{}.{}/{len} => {port}\n",
                        a >> 24,
                        (a >> 16) & 255,
                        (a >> 8) & 255,
                        a & 255
                    ));
                    wide.push((b, a, len));
                }
            } else if kind == "lpm" {
                // distinct /24s (scattered top 24 bits)
                keys = (0..entries as u32)
                    .map(|i| (i.wrapping_mul(0x9E37_79B1) >> 8) << 8)
                    .collect();
                keys.sort_unstable();
                keys.dedup();
            }
            for (i, k) in keys.iter().enumerate().filter(|_| kind != "lpm_wide") {
                let port = 1 + (i % 3);
                match kind {
                    "exact" => cmds.push_str(&format!("table_add t fwd 0x{k:08x} => {port}\n")),
                    "lpm" => cmds.push_str(&format!(
                        "table_add t fwd {}.{}.{}.{}/24 => {port}\n",
                        k >> 24,
                        (k >> 16) & 255,
                        (k >> 8) & 255,
                        k & 255
                    )),
                    _ => {
                        // four masks, as a tuple-space search sees in practice
                        let mask: u32 = [0xffff_ffff, 0xffff_ff00, 0xffff_0000, 0xff00_ff00][i % 4];
                        cmds.push_str(&format!(
                            "table_add t fwd 0x{:08x}&&&0x{mask:08x} => {port} {}\n",
                            k & mask,
                            i + 1
                        ))
                    }
                }
            }
        }
        let n = self.headers.max(1);
        let flow: Vec<u64> = (0..flows.max(1)).map(|_| rng.next()).collect();
        let mut out = Vec::with_capacity(frames);
        for _ in 0..frames {
            let mut f = vec![0u8; size.max(14 + 20 * (n - 1))];
            let r = flow[(rng.next() >> 32) as usize % flow.len()];
            f[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
            f[6..12].copy_from_slice(&[0x02, 0, (r >> 16) as u8, (r >> 8) as u8, r as u8, 2]);
            f[12..14].copy_from_slice(&[0x12, 0x34]);
            if n > 1 && !wide.is_empty() {
                let (b, a, len) = wide[(r >> 32) as usize % wide.len()];
                let low = if len == 32 {
                    0
                } else {
                    r as u32 & (u32::MAX >> len)
                };
                f[14..18].copy_from_slice(&(a | low).to_be_bytes());
                f[18..22].copy_from_slice(&b.to_be_bytes());
            } else if n > 1 {
                let key = if keys.is_empty() {
                    r as u32
                } else {
                    let k = keys[(r >> 32) as usize % keys.len()];
                    if self.table == Some("lpm") {
                        k | (r as u32 & 0xff)
                    } else {
                        k
                    }
                };
                f[14..18].copy_from_slice(&key.to_be_bytes());
            }
            out.push(f);
        }
        (cmds, out)
    }
}

impl Micro {
    /// [`Micro::split`]: headers `ha` and `hb` after the others, the last state selecting
    /// on `h0.e`.
    fn split_parser(
        &self,
        mut headers: Vec<serde_json::Value>,
        mut states: Vec<serde_json::Value>,
        mut order: Vec<String>,
    ) -> (Vec<serde_json::Value>, Vec<serde_json::Value>, Vec<String>) {
        use serde_json::json;
        let id = headers.len();
        headers.push(json!({"name": "ha", "id": id, "header_type": "h_t", "metadata": false}));
        order.push("ha".into());
        if let Some(last) = states.last_mut().and_then(|s| s.as_object_mut()) {
            last.insert("transition_key".into(), json!([field("h0", "e")]));
            last.insert(
                "transitions".into(),
                json!([
                    {"type": "hexstr", "value": "0x0001", "mask": null, "next_state": "sa"},
                    {"type": "default", "value": null, "mask": null, "next_state": null}]),
            );
        }
        states.push(json!({"name": "sa", "id": states.len(),
            "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "ha"}]}],
            "transition_key": [],
            "transitions": [{"type": "default", "value": null, "mask": null, "next_state": null}]}));
        (headers, states, order)
    }

    /// [`Micro::split`]: the ingress control: `ha` valid (decapsulation) removes it,
    /// else (encapsulation) adds and fills it.
    fn split_control(o: &mut serde_json::Map<String, serde_json::Value>) {
        use serde_json::json;
        let ha = json!({"type": "header", "value": "ha"});
        let actions = json!([
            {"name": "pop", "id": 0, "runtime_data": [], "primitives": [
                {"op": "remove_header", "parameters": [ha]}]},
            {"name": "push", "id": 1, "runtime_data": [], "primitives": [
                {"op": "add_header", "parameters": [ha]},
                {"op": "assign", "parameters": [field("ha", "a"), {"type": "hexstr", "value": "0x0a000001"}]},
                {"op": "assign", "parameters": [field("ha", "b"), field("h0", "a")]}]},
        ]);
        let table = |name: &str, aid: usize, act: &str| {
            json!({"name": name, "id": aid, "key": [], "match_type": "exact", "type": "simple",
                "max_size": 1024, "with_counters": false, "support_timeout": false,
                "direct_meters": null, "action_ids": [aid], "actions": [act],
                "base_default_next": null, "next_tables": {act: null},
                "default_entry": {"action_id": aid, "action_const": true, "action_data": [],
                    "action_entry_const": true}})
        };
        o.insert("actions".into(), actions);
        o.insert(
            "pipelines".into(),
            json!([
                {"name": "ingress", "id": 0, "init_table": "node_split",
                 "tables": [table("tbl_pop", 0, "pop"), table("tbl_push", 1, "push")],
                 "conditionals": [{"name": "node_split", "id": 0,
                    "expression": {"type": "expression", "value": {"op": "d2b", "left": null,
                        "right": field("ha", "$valid$")}},
                    "true_next": "tbl_pop", "false_next": "tbl_push"}],
                 "action_profiles": []},
                {"name": "egress", "id": 1, "init_table": null, "tables": [], "conditionals": [], "action_profiles": []}]),
        );
    }

    /// [`Micro::split`]: `frames` 64-byte frames, half of them on each path, drawn at
    /// random or sorted by path (all of one, then all of the other).
    pub fn split_frames(&self, frames: usize, sorted: bool) -> Vec<Vec<u8>> {
        let mut rng = SplitMix(0x5eed_5b17);
        let mut sides: Vec<bool> = (0..frames).map(|i| i % 2 == 0).collect();
        if !sorted {
            // Fisher-Yates
            for i in (1..sides.len()).rev() {
                let j = (rng.next() % (i as u64 + 1)) as usize;
                sides.swap(i, j);
            }
        } else {
            sides.sort();
        }
        sides
            .into_iter()
            .map(|a| {
                let mut f = vec![0u8; 64];
                f[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
                f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
                f[12..14].copy_from_slice(&[0x12, 0x34]);
                // h0.e: 16 bytes into h0
                f[30..32].copy_from_slice(&[0, u8::from(a)]);
                f
            })
            .collect()
    }
}

/// A small deterministic generator (the calibration's traffic is the same every run).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Loads `json` with `commands` applied.
pub fn load_switch(json: &str, cfg: SwitchConfig, commands: &str) -> Result<Switch, String> {
    let mut sw = Switch::new(json, cfg)?;
    apply_commands(&mut sw, commands)?;
    Ok(sw)
}

/// Applies table commands (simple_switch_CLI syntax) to `sw`.
pub fn apply_commands(sw: &mut Switch, commands: &str) -> Result<(), String> {
    if !commands.is_empty() {
        let mut cli = p4jet_control::cli::Cli::new(&sw.json).map_err(|e| e.to_string())?;
        let out = cli.run_script_quiet(sw, commands);
        if let Some(e) = out.errors.first() {
            return Err(format!(
                "{} command errors, the first: {e}",
                out.errors.len()
            ));
        }
    }
    Ok(())
}

/// One measurement on one worker, run to completion: (CPU ns per packet, measure).
pub fn run_point(sw: &Switch, frames: &[Vec<u8>], batch: usize, secs: f64) -> (f64, Measure) {
    let setup = Setup {
        port: 0,
        batch: batch.max(1),
        secs,
        queue: batch.max(1),
        progress: false,
        stages: false,
    };
    let m = measure_parallel(sw, frames, &setup, 1, Mode::Rtc, false);
    (m.cpu_per_packet(), m)
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Table sizes the calibration measures lookups at, by kind.
pub const CALIBRATION_SIZES: [(&str, &[usize]); 4] = [
    ("exact", &[100, 1_000, 10_000, 1_000_000]),
    ("lpm", &[100, 1_000, 10_000, 1_000_000]),
    ("lpm_wide", &[100, 1_000, 10_000, 1_000_000]),
    ("ternary", &[100, 1_000, 10_000, 100_000]),
];

/// Runs the micro-benchmarks. `progress` prints each point to stderr.
pub fn calibrate(
    engine: p4jet_engine::EngineKind,
    secs: f64,
    quick: bool,
    progress: bool,
) -> Result<Profile, String> {
    let batch = 32;
    let cfg = SwitchConfig {
        batch,
        engine,
        ..SwitchConfig::default()
    };
    let frames_n = if quick { 2048 } else { 16384 };
    let load0 = crate::bench::load_average();
    let mut points: Vec<(String, f64)> = vec![];
    // each point: its name, program, entries, frame size, batch and trace frames
    let mut point = |name: String, m: &Micro, entries: usize, size: usize, b: usize, nf| {
        let (cmds, frames) = m.workload(entries, nf, frames_n.max(nf), size);
        let sw = load_switch(
            &m.json(),
            SwitchConfig {
                batch: b,
                ..cfg.clone()
            },
            &cmds,
        )
        .map_err(|e| format!("calibration program {name}: {e}"))?;
        // a large table's cost swings most with the machine's state: the median of
        // three runs
        let (ns, meas) = if entries >= 100_000 {
            let mut runs: Vec<(f64, Measure)> =
                (0..3).map(|_| run_point(&sw, &frames, b, secs)).collect();
            runs.sort_by(|x, y| x.0.total_cmp(&y.0));
            runs.swap_remove(1)
        } else {
            run_point(&sw, &frames, b, secs)
        };
        if progress {
            eprintln!("  {name:<22} {ns:>8.1} ns/packet");
        }
        points.push((name, ns));
        Ok::<(f64, Measure), String>((ns, meas))
    };
    let m1 = Micro {
        headers: 1,
        ..Micro::default()
    };
    let (null_ns, null_m) = point("null".into(), &m1, 0, 64, batch, frames_n)?;
    // null program at batch 1: the per-batch cost
    let (null1, _) = point("null batch 1".into(), &m1, 0, 64, 1, frames_n)?;
    let batch_ns = ((null1 - null_ns) * batch as f64 / (batch as f64 - 1.0)).max(0.0);
    let (big, _) = point("null 1518 B".into(), &m1, 0, 1518, batch, frames_n)?;
    let byte_ns = ((big - null_ns) / (1518.0 - 64.0)).max(0.0);
    let mut parse = vec![];
    for h in [1usize, 2, 4, 8] {
        let m = Micro {
            headers: h,
            ..Micro::default()
        };
        parse.push((
            h,
            point(format!("parse {h}"), &m, 0, 64 + 20 * 8, batch, frames_n)?.0,
        ));
    }
    // least squares slope of ns against headers
    let nh = parse.len() as f64;
    let (sx, sy) = parse
        .iter()
        .fold((0.0, 0.0), |(a, b), (h, ns)| (a + *h as f64, b + ns));
    let (mx, my) = (sx / nh, sy / nh);
    let (sxy, sxx) = parse.iter().fold((0.0, 0.0), |(a, b), (h, ns)| {
        (
            a + (*h as f64 - mx) * (ns - my),
            b + (*h as f64 - mx).powi(2),
        )
    });
    let header_ns = (sxy / sxx.max(1e-9)).max(0.0);
    // the parse points carry 8 headers' worth of bytes; every point below is measured on
    // 64-byte frames, so its base is the 2-header program on 64-byte frames (taking the
    // parse point instead charged each later cost the 160 bytes' copy it did not do)
    let base2 = point(
        "base (2 headers)".into(),
        &Micro {
            headers: 2,
            ..Micro::default()
        },
        0,
        64,
        batch,
        frames_n,
    )?
    .0;
    let ck = Micro {
        headers: 2,
        checksum: true,
        ..Micro::default()
    };
    let checksum_ns = (point("checksum".into(), &ck, 0, 64, batch, frames_n)?.0 - base2).max(0.0);
    let calls = Micro {
        headers: 2,
        calls: 4,
        ..Micro::default()
    };
    let call_ns = ((point("4 keyless calls".into(), &calls, 0, 64, batch, frames_n)?.0 - base2)
        / 4.0)
        .max(0.0);
    // eight more primitives of one kind in the first call: the cost of each
    let mut eight_more = |name: &str, m: Micro| {
        point(name.into(), &m, 0, 64, batch, frames_n)
            .map(|(ns, _)| ((ns - base2 - 4.0 * call_ns) / 8.0).max(0.0))
    };
    let prim_ns = eight_more(
        "4 calls + 8 primitives",
        Micro {
            prims: 8,
            ..calls.clone()
        },
    )?;
    let move_ns = eight_more(
        "4 calls + 8 moves",
        Micro {
            moves: 8,
            ..calls.clone()
        },
    )?;
    let mut lookups = vec![];
    for (kind, sizes) in CALIBRATION_SIZES {
        let mut pts = vec![];
        for &n in sizes {
            let n = if quick { n.min(10_000) } else { n };
            if pts.iter().any(|(e, _): &(usize, f64)| *e == n) {
                continue;
            }
            let m = Micro {
                headers: 2,
                table: Some(kind),
                lpm_lengths: 32,
                ..Micro::default()
            };
            let ns = point(format!("{kind} {n}"), &m, n, 64, batch, frames_n)?.0;
            pts.push((n, (ns - base2).max(0.0)));
        }
        // at the largest size, traffic of a quarter and four times the flows: how the
        // cost follows the entries the traffic touches (the full calibration only; the
        // quick one's tables fit the caches)
        let mut hot = vec![];
        if let (Some(&(n, ns)), false) = (pts.last(), quick) {
            let m = Micro {
                headers: 2,
                table: Some(kind),
                lpm_lengths: 32,
                ..Micro::default()
            };
            for nf in [frames_n / 4, frames_n * 4] {
                let name = format!("{kind} {n}, {nf} flows");
                let at = point(name, &m, n, 64, batch, nf)?.0;
                let seen = flows_seen(nf, frames_n.max(nf));
                hot.push((entries_hit(n, seen).round() as usize, (at - base2).max(0.0)));
            }
            let seen = flows_seen(frames_n, frames_n);
            hot.insert(1, (entries_hit(n, seen).round() as usize, ns));
            for i in 1..hot.len() {
                if hot[i].1 < hot[i - 1].1 {
                    hot[i].1 = hot[i - 1].1;
                }
            }
        }
        // a bigger table never costs less: keep the curve monotone against noise
        for i in 1..pts.len() {
            if pts[i].1 < pts[i - 1].1 {
                pts[i].1 = pts[i - 1].1;
            }
        }
        lookups.push(LookupCurve {
            kind: kind.into(),
            points: pts,
            hot,
        });
    }
    // a wide LPM lookup with one prefix length (one probe) against 32 lengths
    // (WIDE_LPM_PROBES probes), both at the smallest size: the cost of a probe
    let one = Micro {
        headers: 2,
        table: Some("lpm_wide"),
        lpm_lengths: 1,
        ..Micro::default()
    };
    let n0 = CALIBRATION_SIZES[2].1[0];
    let one_ns = (point(
        format!("lpm_wide {n0}, 1 length"),
        &one,
        n0,
        64,
        batch,
        frames_n,
    )?
    .0 - base2)
        .max(0.0);
    let wide0 = lookups
        .iter()
        .find(|c| c.kind == "lpm_wide")
        .map_or(one_ns, |c| c.in_cache());
    let lpm_probe_ns = ((wide0 - one_ns) / (WIDE_LPM_PROBES - 1) as f64).max(0.0);
    // the exact lookup at batch 4 against the calibration batch: the part of a lookup
    // paid per table call, whatever the packets it serves
    let small = 4;
    let exact = Micro {
        headers: 2,
        table: Some("exact"),
        ..Micro::default()
    };
    let two = Micro {
        headers: 2,
        ..Micro::default()
    };
    let n0 = CALIBRATION_SIZES[0].1[0];
    let l_small = point(
        format!("exact {n0}, batch {small}"),
        &exact,
        n0,
        64,
        small,
        frames_n,
    )?
    .0 - point(
        format!("base (2 headers), batch {small}"),
        &two,
        0,
        64,
        small,
        frames_n,
    )?
    .0;
    let l_cal = lookups
        .iter()
        .find(|c| c.kind == "exact")
        .map_or(l_small, |c| c.in_cache());
    let table_call_ns = ((l_small - l_cal) / (1.0 / small as f64 - 1.0 / batch as f64)).max(0.0);
    // a parser select and the deparser's header on a 50/50 random mix of two paths
    // against the same frames sorted by path: the cost of a mispredicted decision
    let split = Micro {
        headers: 2,
        split: true,
        ..Micro::default()
    };
    let mut branch = vec![];
    for sorted in [false, true] {
        let frames = split.split_frames(frames_n, sorted);
        let name = if sorted {
            "split, sorted"
        } else {
            "split, random"
        };
        let json = split.json();
        let sw = load_switch(&json, cfg.clone(), "")
            .map_err(|e| format!("calibration program {name}: {e}"))?;
        let ns = run_point(&sw, &frames, batch, secs).0;
        let paths = PathStats::measure(&json, |_| Ok(()), &frames, 0, crate::paths::SAMPLE)
            .map_err(|e| format!("calibration program {name}: {e}"))?;
        if progress {
            eprintln!(
                "  {name:<22} {ns:>8.1} ns/packet, {:.2} mispredicted decisions",
                paths.mispredicts_total()
            );
        }
        points.push((name.to_string(), ns));
        branch.push((ns, paths.mispredicts_total()));
    }
    let branch_ns = if branch[0].1 - branch[1].1 > 0.1 {
        ((branch[0].0 - branch[1].0) / (branch[0].1 - branch[1].1)).max(0.0)
    } else {
        0.0
    };
    let load1 = crate::bench::load_average();
    let lat_mean = null_m.latency.mean_ns();
    let inject_ns = (null_ns - lat_mean / batch as f64).clamp(0.0, null_ns);
    let p99_factor = null_m.latency.quantile_ns(0.99) as f64 / lat_mean.max(1.0);
    Ok(Profile {
        version: PROFILE_VERSION,
        engine: engine.name().to_string(),
        cpu: cpu_model(),
        created: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        load_average: [load0[0], load0[1], load0[2], load1[0], load1[1], load1[2]],
        batch,
        flows: flows_seen(frames_n, frames_n),
        null_ns,
        byte_ns,
        batch_ns,
        header_ns,
        checksum_ns,
        call_ns,
        prim_ns,
        move_ns,
        table_call_ns,
        branch_ns,
        lookups,
        lpm_probe_ns,
        inject_ns,
        p99_factor,
        points,
    })
}

/// Distinct flows of a trace: frames with the same Ethernet addresses, IPv4 or IPv6
/// addresses and protocol, and TCP or UDP ports (after up to two VLAN tags) are one
/// flow; a frame that is not IP is its Ethernet addresses and type. The model takes
/// each flow to hit one entry of a large table, drawn uniformly.
pub fn trace_flows(frames: &[Vec<u8>]) -> usize {
    let mut seen = std::collections::HashSet::with_capacity(frames.len());
    for f in frames {
        let mut key: Vec<u8> = f.get(..12).unwrap_or(f).to_vec();
        let mut o = 12;
        let ty = |o: usize| f.get(o..o + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
        let mut t = ty(o);
        for _ in 0..2 {
            if matches!(t, Some(0x8100 | 0x88a8)) {
                key.extend_from_slice(f.get(o + 2..o + 4).unwrap_or(&[]));
                o += 4;
                t = ty(o);
            }
        }
        key.extend_from_slice(&t.unwrap_or(0).to_be_bytes());
        let ip = o + 2;
        let (proto, l4) = match t {
            Some(0x0800) if f.len() >= ip + 20 => {
                key.extend_from_slice(&f[ip + 12..ip + 20]);
                let ihl = usize::from(f[ip] & 0x0f) * 4;
                let frag = u16::from_be_bytes([f[ip + 6], f[ip + 7]]) & 0x1fff;
                (f[ip + 9], (frag == 0).then_some(ip + ihl.max(20)))
            }
            Some(0x86dd) if f.len() >= ip + 40 => {
                key.extend_from_slice(&f[ip + 8..ip + 40]);
                (f[ip + 6], Some(ip + 40))
            }
            _ => (0, None),
        };
        key.push(proto);
        if let Some(l4) = l4
            && matches!(proto, 6 | 17)
        {
            key.extend_from_slice(f.get(l4..l4 + 4).unwrap_or(&[]));
        }
        seen.insert(key);
    }
    seen.len()
}

/// Loads a program with its commands for the model.
fn load_program(a: &ModelArgs, path: &Path) -> Result<Switch, String> {
    let json = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let cfg = SwitchConfig {
        engine: a.engine,
        ..SwitchConfig::default()
    };
    let mut sw = Switch::new(&json, cfg).map_err(|e| format!("{}: {e}", path.display()))?;
    if !crate::run::apply_commands_quiet(&mut sw, &a.commands)? {
        return Err("some commands failed".into());
    }
    Ok(sw)
}

/// `p4jet model`.
pub fn main(a: ModelArgs) -> Result<ExitCode, String> {
    let path = profile_path(a.profile.as_deref(), a.engine);
    let profile = if a.calibrate {
        if !a.json {
            eprintln!(
                "p4jet model: calibrating the {} engine ({} s per point) ...",
                a.engine.name(),
                a.seconds
            );
        }
        let p = calibrate(a.engine, a.seconds, a.quick, !a.json)?;
        save_profile(&path, &p)?;
        if !a.json {
            eprintln!("p4jet model: profile written to {}", path.display());
        }
        p
    } else {
        load_profile(&path)?
    };
    let Some(prog) = &a.program else {
        if a.json {
            println!(
                "{}",
                serde_json::to_string(&profile).map_err(|e| e.to_string())?
            );
        } else {
            print_profile(&profile);
        }
        return Ok(ExitCode::SUCCESS);
    };
    let sw = load_program(&a, prog)?;
    let (bytes, flows, paths) = match &a.trace {
        Some(t) => {
            let frames = crate::bench::read_trace(&t.to_path_buf())?;
            let b =
                frames.iter().map(|f| f.len()).sum::<usize>() as f64 / frames.len().max(1) as f64;
            let paths = PathStats::measure(
                &sw.json,
                |s| {
                    crate::run::apply_commands_quiet(s, &a.commands)?
                        .then_some(())
                        .ok_or_else(|| "some commands failed".to_string())
                },
                &frames,
                0,
                crate::paths::SAMPLE,
            )?;
            (b, Some(trace_flows(&frames)), Some(paths))
        }
        None => (64.0, None, None),
    };
    let f = Features::of(&sw, Some(&profile), bytes, flows, paths.as_ref());
    let pred = predict(&f, &profile, a.batch, a.queue_size);
    if a.json {
        let o = serde_json::json!({
            "program": prog.display().to_string(),
            "profile": path.display().to_string(),
            "features": f,
            "prediction": pred,
        });
        println!("{o}");
    } else {
        print_prediction(prog, &f, &pred, &path);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_profile(p: &Profile) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "engine {} on {}", p.engine, p.cpu);
    let _ = writeln!(
        o,
        "null program {:.1} ns/packet (batch {}), +{:.3} ns/byte, {:.1} ns per batch",
        p.null_ns, p.batch, p.byte_ns, p.batch_ns
    );
    let _ = writeln!(
        o,
        "header {:.1} ns, checksum {:.1} ns, keyless call {:.1} ns, primitive {:.1} ns, move {:.1} ns, wide LPM probe {:.1} ns",
        p.header_ns, p.checksum_ns, p.call_ns, p.prim_ns, p.move_ns, p.lpm_probe_ns
    );
    let _ = writeln!(
        o,
        "table call {:.1} ns (per batched lookup), mispredicted decision {:.1} ns",
        p.table_call_ns, p.branch_ns
    );
    for c in &p.lookups {
        let pts: Vec<String> = c
            .points
            .iter()
            .map(|(n, ns)| format!("{n}: {ns:.1}"))
            .collect();
        let _ = writeln!(o, "{:<8} lookup ns by entries  {}", c.kind, pts.join(", "));
        if let (Some(last), false) = (c.points.last(), c.hot.is_empty()) {
            let hot: Vec<String> = c
                .hot
                .iter()
                .map(|(n, ns)| format!("{n}: {ns:.1}"))
                .collect();
            let _ = writeln!(
                o,
                "{:<8} at {} entries, by entries hit  {}",
                "",
                last.0,
                hot.join(", ")
            );
        }
    }
    let _ = writeln!(o, "calibration traces: {} distinct flows", p.flows);
}

fn print_prediction(prog: &Path, f: &Features, p: &Prediction, profile: &Path) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "program          {}", prog.display());
    let _ = writeln!(o, "profile          {}", profile.display());
    let _ = writeln!(
        o,
        "structure        {} headers parsed, {} modified, {} keyed tables, {} checksums verified, {} updated, {:.0}-byte frames",
        f.parsed_headers,
        f.modified_headers,
        f.keyed_tables,
        f.checksums_verified,
        f.checksums_updated,
        f.frame_bytes
    );
    if let Some(n) = f.flows {
        let _ = writeln!(o, "traffic          {n} flows in the trace");
    }
    if f.traced_packets > 0 {
        let _ = writeln!(
            o,
            "paths            weighted by the traffic ({} packets traced): {:.1} headers extracted, {:.1} emitted, {:.2} mispredicted decisions per packet",
            f.traced_packets,
            f.extracted,
            f.emitted,
            f.mispredicts.iter().sum::<f64>()
        );
    } else {
        let _ = writeln!(
            o,
            "paths            the costliest path for every packet (no --trace: branches not weighted by traffic)"
        );
    }
    for t in &f.tables {
        if t.kind != "keyless" {
            let probes = if t.lpm_probes > 0 {
                format!(", {} probes", t.lpm_probes)
            } else {
                String::new()
            };
            let share = if f.traced_packets > 0 {
                format!(", {:.0}% of packets", 100.0 * t.share)
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "  {:<8} {:<24} {:<8} {} entries{probes}{share}",
                t.control, t.name, t.kind, t.entries
            );
        }
    }
    let _ = writeln!(
        o,
        "predicted        {:.2} Mpps per core, {:.1} ns/packet (batch {}, sub-batch {})",
        p.mpps_per_core, p.ns_per_packet, p.batch, p.sub_batch
    );
    let _ = writeln!(
        o,
        "terms            cpu {:.1} ns, memory {:.1} ns, io {:.1} ns: {} binds",
        p.cpu_ns, p.memory_ns, p.io_ns, p.binding
    );
    let st: Vec<String> = p
        .stages
        .iter()
        .map(|(k, v)| format!("{k} {v:.1}"))
        .collect();
    let _ = writeln!(
        o,
        "stages (ns)      {}; {} dominates",
        st.join(", "),
        p.dominant_stage
    );
    let _ = writeln!(
        o,
        "latency          mean {:.2} us, p99 {:.2} us with {} packets queued",
        p.latency_mean_us, p.latency_p99_us, p.queue
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cost curve with its minimum at batch 128 (per-batch overhead against cache
    /// pressure) and sub-batch 32 (prefetches too few to cover a stall against too
    /// many in flight), with ±1% deterministic noise.
    fn cost(b: usize, s: usize, i: &mut u64) -> f64 {
        *i = i
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let noise = 1.0 + ((*i >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * 0.02;
        let ls = (s as f64).log2() - 5.0;
        (100.0 + 2000.0 / b as f64 + 0.12 * b as f64 + 8.0 * ls * ls) * noise
    }

    /// Feeds `windows` windows of saturated turns; returns the (batch, sub-batch) of
    /// each window.
    fn run(t: &mut BatchTuner, windows: usize, seed: &mut u64) -> Vec<(usize, usize)> {
        let mut seen = vec![];
        for _ in 0..windows {
            let (b, s) = (t.batch(), t.sub_batch());
            assert!(
                s <= b && (1..=64).contains(&s),
                "sub-batch {s} at batch {b}"
            );
            seen.push((b, s));
            let turns = TUNE_WINDOW.div_ceil(b as u64);
            for _ in 0..turns {
                let c = cost(b, s, seed);
                if let Some(nb) = t.observe(b as u64, c * b as f64) {
                    assert_eq!(nb, (t.batch(), t.sub_batch()));
                    break;
                }
            }
        }
        seen
    }

    #[test]
    fn the_tuner_finds_the_cheapest_batch_and_stays_there() {
        for start in [8, 32, 256] {
            let mut t = BatchTuner::new(start, 16, true, false);
            let mut seed = start as u64;
            let seen = run(&mut t, 400, &mut seed);
            // settled: most of the last 200 windows at the best batch, the others probes
            let late = &seen[200..];
            let at_best = late.iter().filter(|b| b.0 == 128).count();
            assert!(at_best * 10 >= late.len() * 9, "from {start}: {late:?}");
            assert!(
                late.iter().all(|b| [64, 128, 256].contains(&b.0)),
                "{late:?}"
            );
            // the sub-batch is not tuned
            assert!(seen.iter().all(|b| b.1 == 16.min(b.0)), "{seen:?}");
        }
    }

    #[test]
    fn the_tuner_then_finds_the_cheapest_sub_batch() {
        for (start, sub) in [(32, 16), (8, 8), (256, 64)] {
            let mut t = BatchTuner::new(start, sub, true, true);
            let mut seed = 7 + start as u64;
            let seen = run(&mut t, 500, &mut seed);
            let late = &seen[250..];
            let at_best = late.iter().filter(|b| **b == (128, 32)).count();
            assert!(
                at_best * 10 >= late.len() * 9,
                "from {start}/{sub}: {late:?}"
            );
            // once settled, probes move one knob one step
            assert!(
                late.iter()
                    .all(|b| [(64, 32), (128, 32), (256, 32), (128, 16), (128, 64)].contains(b)),
                "{late:?}"
            );
        }
    }

    #[test]
    fn a_fixed_batch_stays_and_bounds_the_sub_batch() {
        let mut t = BatchTuner::new(32, 4, false, true);
        let mut seed = 3;
        let seen = run(&mut t, 300, &mut seed);
        assert!(seen.iter().all(|b| b.0 == 32), "{seen:?}");
        let late = &seen[150..];
        assert!(
            late.iter().filter(|b| b.1 == 32).count() * 10 >= late.len() * 9,
            "{late:?}"
        );
        // at batch 8 the sub-batch cannot pass 8 (the cheapest, 32, is out of reach)
        let mut t = BatchTuner::new(8, 4, false, true);
        let seen = run(&mut t, 200, &mut seed);
        assert!(seen.iter().all(|b| b.0 == 8 && b.1 <= 8), "{seen:?}");
        assert_eq!(t.sub_batch(), 8);
    }

    #[test]
    fn the_tuner_keeps_the_batch_when_sizes_cost_the_same() {
        let mut t = BatchTuner::new(32, 16, true, true);
        let (mut changes, mut late) = (0, 0);
        let mut last = (32, 16);
        for w in 0..300u64 {
            let now = (t.batch(), t.sub_batch());
            if now != last {
                changes += 1;
                late += usize::from(w >= 200);
                last = now;
            }
            let b = now.0;
            for _ in 0..TUNE_WINDOW.div_ceil(b as u64) {
                // flat: 50 ns whatever the batch and sub-batch, ±0.5%
                let c = 50.0 * (1.0 + ((w % 3) as f64 - 1.0) * 0.005);
                if t.observe(b as u64, c * b as f64).is_some() {
                    break;
                }
            }
        }
        // probes back off (1, 2, 4 ... 64 windows between rounds of four probes):
        // once settled, at most eight changes (there and back) per 64 windows
        assert!(changes < 120, "{changes} changes");
        assert!(late <= 16, "{late} changes in the last 100 windows");
        assert!([16, 32, 64].contains(&t.batch()));
        assert!([8, 16, 32].contains(&t.sub_batch()));
    }

    #[test]
    fn probes_are_the_binary_search_depth() {
        assert_eq!(probes_for_lengths(0), 1);
        assert_eq!(probes_for_lengths(1), 1);
        assert_eq!(probes_for_lengths(2), 2);
        assert_eq!(probes_for_lengths(3), 2);
        assert_eq!(probes_for_lengths(32), WIDE_LPM_PROBES);
        assert_eq!(probes_for_lengths(129), 8);
    }

    fn key(kind: MatchKind, width: u32) -> p4jet_ir::TableKey {
        p4jet_ir::TableKey {
            kind,
            source: p4jet_ir::KeySource::Field(p4jet_ir::FieldRef::Static(0)),
            width,
            mask: None,
            name: "k".into(),
        }
    }

    #[test]
    fn only_lpm_tables_outside_the_dir_array_are_wide() {
        let json = Micro {
            headers: 2,
            table: Some("lpm"),
            ..Micro::default()
        }
        .json();
        let e = p4jet_engine::load(&json, p4jet_engine::EngineConfig::default()).unwrap();
        let mut t = e.prog.tables[0].clone();
        // one 32-bit LPM field: DIR-16-8-8, no probes
        assert_eq!(TableShape::of(&t, 10, Some(5)).lpm_probes, 0);
        // a 128-bit LPM field: probes by the lengths loaded, or all 129 when unknown
        t.keys = vec![key(MatchKind::Lpm, 128)];
        assert_eq!(TableShape::of(&t, 10, Some(5)).lpm_probes, 3);
        assert_eq!(TableShape::of(&t, 10, None).lpm_probes, 8);
        // a 32-bit LPM field next to an exact one
        t.keys = vec![key(MatchKind::Exact, 32), key(MatchKind::Lpm, 32)];
        assert_eq!(TableShape::of(&t, 10, Some(32)).lpm_probes, 6);
        t.keys.clear();
        assert!(TableShape::of(&t, 10, None).kind.is_none());
    }

    fn profile() -> Profile {
        Profile {
            version: PROFILE_VERSION,
            engine: "jit".into(),
            cpu: String::new(),
            created: 0,
            load_average: [0.0; 6],
            batch: 32,
            flows: 10_357,
            null_ns: 25.0,
            byte_ns: 0.0,
            batch_ns: 0.0,
            header_ns: 2.0,
            checksum_ns: 4.0,
            call_ns: 3.0,
            prim_ns: 3.0,
            move_ns: 1.0,
            table_call_ns: 64.0,
            branch_ns: 5.0,
            lookups: vec![
                LookupCurve {
                    kind: "lpm".into(),
                    points: vec![(100, 10.0), (10_000, 20.0)],
                    hot: vec![],
                },
                LookupCurve {
                    kind: "lpm_wide".into(),
                    points: vec![(100, 60.0), (10_000, 90.0)],
                    hot: vec![],
                },
            ],
            lpm_probe_ns: 10.0,
            inject_ns: 5.0,
            p99_factor: 1.1,
            points: vec![],
        }
    }

    #[test]
    fn a_wide_lookup_costs_its_probes() {
        let p = profile();
        let wide = |probes, entries| TableShape {
            kind: Some(MatchKind::Lpm),
            entries,
            lpm_probes: probes,
            flows: None,
        };
        assert_eq!(p.lookup_cost(&wide(6, 100)), Some((60.0, 60.0)));
        assert_eq!(p.lookup_cost(&wide(3, 100)), Some((30.0, 30.0)));
        assert_eq!(p.lookup_cost(&wide(8, 10_000)), Some((110.0, 80.0)));
        let narrow = TableShape {
            lpm_probes: 0,
            ..wide(0, 10_000)
        };
        assert_eq!(p.lookup_cost(&narrow), Some((20.0, 10.0)));
        assert_eq!(p.lookup_cost(&TableShape::default()), None);
    }

    #[test]
    fn a_large_tables_cost_follows_the_entries_the_traffic_hits() {
        let c = LookupCurve {
            kind: "exact".into(),
            points: vec![(100, 10.0), (10_000, 20.0), (1_000_000, 80.0)],
            // 40 ns more per 16x more entries hit
            hot: vec![(4_000, 60.0), (16_000, 80.0), (64_000, 100.0)],
        };
        let cal = 16_384;
        // unknown traffic, or traffic like the calibration's: the size curve
        assert_eq!(c.at_traffic(1_000_000, None, cal), 80.0);
        assert!((c.at_traffic(1_000_000, Some(cal), cal) - 80.0).abs() < 1e-9);
        // a quarter of the flows: about 4,000 entries hit instead of 16,000
        let quarter = c.at_traffic(1_000_000, Some(cal / 4), cal);
        assert!((quarter - 60.0).abs() < 0.5, "{quarter}");
        let four = c.at_traffic(1_000_000, Some(cal * 4), cal);
        assert!((four - 100.0).abs() < 1.5, "{four}");
        // a table that fits the caches is not moved, and between sizes the move is
        // weighed in log(size)
        assert_eq!(c.at_traffic(10_000, Some(cal / 4), cal), 20.0);
        let mid = c.at_traffic(100_000, Some(cal / 4), cal);
        let moved = c.at(100_000) - mid;
        assert!(moved > 0.0 && moved < 20.0 * 0.5 + 1e-9, "{mid}");
        // never below the in-cache cost
        assert!(c.at_traffic(1_000_000, Some(1), cal) >= 10.0);
        assert!((entries_hit(1_000_000, 16_384) - 16_250.0).abs() < 10.0);
        assert!((entries_hit(100, 16_384) - 100.0).abs() < 1e-6);
        assert_eq!(flows_seen(16_384, 16_384), 10_357);
        assert_eq!(flows_seen(4_096, 16_384), 4_021);
    }

    #[test]
    fn flows_are_addresses_and_ports() {
        let frame = |dst: u8, src_ip: u8, sport: u8, id: u8| {
            let mut f = vec![0u8; 64];
            f[5] = dst;
            f[12..14].copy_from_slice(&[0x08, 0x00]);
            f[14] = 0x45;
            f[18] = id; // IP identification: not part of the flow
            f[23] = 6;
            f[29] = src_ip;
            f[35] = sport;
            f
        };
        let frames = vec![
            frame(1, 1, 1, 1),
            frame(1, 1, 1, 2),
            frame(2, 1, 1, 3),
            frame(1, 2, 1, 4),
            frame(1, 1, 2, 5),
        ];
        assert_eq!(trace_flows(&frames), 4);
        // short and non-IP frames count by their Ethernet header
        assert_eq!(trace_flows(&[vec![1, 2, 3], vec![0; 14], vec![0; 14]]), 2);
        assert_eq!(trace_flows(&[]), 0);
    }

    #[test]
    fn latency_is_the_queue_ahead_less_the_receive_work_before_the_clock() {
        let p = profile();
        let f = Features {
            parsed_headers: 1,
            extracted: 1.0,
            emitted: 1.0,
            frame_bytes: 64.0,
            ..Features::default()
        };
        let pr = predict(&f, &p, BatchArg::Fixed(32), Some(128));
        // 25 ns io + 2 ns of header
        assert!((pr.ns_per_packet - 27.0).abs() < 1e-9, "{pr:?}");
        let want = (128.0 * 27.0 - 32.0 * 5.0) / 1000.0;
        assert!((pr.latency_mean_us - want).abs() < 1e-9, "{pr:?}");
        assert!((pr.latency_p99_us - want * 1.1).abs() < 1e-9);
        // never below one packet's own time
        let pr = predict(&f, &p, BatchArg::Fixed(32), Some(1));
        assert!((pr.latency_mean_us - 0.027).abs() < 1e-9, "{pr:?}");
    }

    #[test]
    fn a_table_call_is_shared_by_the_packets_of_a_chunk_at_the_table() {
        assert!((calls_per_packet(1.0, 32) - 1.0 / 32.0).abs() < 1e-12);
        // half the packets: almost every chunk of 32 still has one there
        let half = calls_per_packet(0.5, 32);
        assert!(half < 1.0 / 32.0 && half > 0.999 / 32.0, "{half}");
        // one packet in 32: about 63% of the chunks call the table
        let few = calls_per_packet(1.0 / 32.0, 32);
        assert!((few - (1.0 - (31.0f64 / 32.0).powi(32)) / 32.0).abs() < 1e-12);
        // chunks are at most 64 packets whatever the batch
        assert_eq!(calls_per_packet(1.0, 256), 1.0 / 64.0);
        assert_eq!(calls_per_packet(0.0, 32), 0.0);
    }

    fn vxlan(reverse: f64) -> (String, p4jet_gen::Generated) {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/corpus/vxlan_gateway/vxlan_gateway.json"
        );
        let json = std::fs::read_to_string(path).unwrap();
        let g = p4jet_gen::generate(
            p4jet_gen::UseCase::Vxlan,
            &p4jet_gen::GenOptions {
                entries: 100,
                flows: 100,
                packets: 800,
                reverse_ratio: reverse,
                ..p4jet_gen::GenOptions::default()
            },
        )
        .unwrap();
        (json, g)
    }

    #[test]
    fn a_traced_branch_weighs_each_side_by_its_packets() {
        let p = Profile {
            lookups: vec![LookupCurve {
                kind: "exact".into(),
                points: vec![(100, 10.0), (10_000, 20.0)],
                hot: vec![],
            }],
            ..profile()
        };
        // a quarter of the frames decapsulated (vni_decap), the others encapsulated
        // (service_vip, service_backend); both routed (ipv4_route, next_hop)
        let (json, g) = vxlan(0.25);
        let paths = crate::paths::PathStats::measure(
            &json,
            |s| apply_commands(s, &g.commands),
            &g.frames,
            p4jet_gen::TRACE_PORT,
            crate::paths::SAMPLE,
        )
        .unwrap();
        assert_eq!(paths.packets, 800);
        let share = |t: &str| paths.tables.get(t).copied().unwrap_or(0.0);
        let decap = share("IngressImpl.vni_decap");
        assert!((decap - 0.25).abs() < 0.06, "{paths:?}");
        assert!((share("IngressImpl.service_vip") - (1.0 - decap)).abs() < 1e-9);
        assert!(
            (share("IngressImpl.ipv4_route") - 1.0).abs() < 1e-9,
            "{paths:?}"
        );
        assert!(
            (share("EgressImpl.port_mac") - 1.0).abs() < 1e-9,
            "{paths:?}"
        );
        // the two directions part in the parser, in `forward`'s and `set_src_mac`'s
        // branches and in the deparser: a random mix misses some of those decisions
        assert!(paths.mispredicts[0] > 0.2, "{paths:?}");
        assert!(paths.mispredicts[3] > 0.2, "{paths:?}");

        let sw = load_switch(&json, SwitchConfig::default(), &g.commands).unwrap();
        let traced = Features::of(&sw, Some(&p), 64.0, None, Some(&paths));
        let costliest = Features::of(&sw, Some(&p), 64.0, None, None);
        assert_eq!(traced.traced_packets, 800);
        assert_eq!(costliest.traced_packets, 0);
        let names = |f: &Features| -> Vec<(String, f64)> {
            f.tables
                .iter()
                .filter(|t| t.kind != "keyless")
                .map(|t| (t.name.clone(), t.share))
                .collect()
        };
        // both sides with their shares, against one side for every packet
        let t = names(&traced);
        let has = |v: &[(String, f64)], n: &str| v.iter().find(|x| x.0 == n).map(|x| x.1);
        assert_eq!(has(&t, "IngressImpl.vni_decap"), Some(decap));
        assert_eq!(has(&t, "IngressImpl.service_vip"), Some(1.0 - decap));
        let c = names(&costliest);
        assert!(c.iter().all(|x| x.1 == 1.0));
        assert!(
            has(&c, "IngressImpl.vni_decap").is_none()
                || has(&c, "IngressImpl.service_vip").is_none(),
            "{c:?}"
        );
        // the stages add each table's cost at its share, and the misses
        let pr = predict(&traced, &p, BatchArg::Fixed(32), None);
        let ingress: f64 = traced
            .tables
            .iter()
            .filter(|t| t.control == "ingress")
            .map(|t| table_cost(t, &p, 32).0)
            .sum::<f64>()
            + p.branch_ns * traced.mispredicts[1];
        let got = pr.stages.iter().find(|s| s.0 == "ingress").unwrap().1;
        assert!((got - ingress).abs() < 1e-9, "{got} against {ingress}");
        let decap_t = traced
            .tables
            .iter()
            .find(|t| t.name == "IngressImpl.vni_decap")
            .unwrap();
        let at = 10.0 + decap_t.split.extra(Some(&p));
        let want = decap * (at - 64.0 / 32.0) + 64.0 * calls_per_packet(decap, 32);
        assert!((table_cost(decap_t, &p, 32).0 - want).abs() < 1e-9);
        // sorted by direction, the same shares and (almost) no misses
        let mut sorted = g.frames.clone();
        sorted.sort_by_key(|f| (f.len(), f.get(23).copied(), f.get(73).copied()));
        let sp = crate::paths::PathStats::measure(
            &json,
            |s| apply_commands(s, &g.commands),
            &sorted,
            p4jet_gen::TRACE_PORT,
            crate::paths::SAMPLE,
        )
        .unwrap();
        assert_eq!(sp.tables.get("IngressImpl.vni_decap"), Some(&decap));
        assert!(
            sp.mispredicts_total() < 0.3 * paths.mispredicts_total(),
            "{sp:?} against {paths:?}"
        );
    }

    #[test]
    fn mispredicted_decisions_are_priced_in_their_stage() {
        let p = profile();
        let f = Features {
            extracted: 1.0,
            emitted: 1.0,
            frame_bytes: 64.0,
            mispredicts: [0.5, 0.25, 0.0, 1.0],
            ..Features::default()
        };
        let pr = predict(&f, &p, BatchArg::Fixed(32), None);
        let stage = |n: &str| pr.stages.iter().find(|s| s.0 == n).unwrap().1;
        assert!((stage("parse") - (1.0 + 2.5)).abs() < 1e-9, "{pr:?}");
        assert!((stage("ingress") - 1.25).abs() < 1e-9, "{pr:?}");
        assert!((stage("deparse") - (1.0 + 5.0)).abs() < 1e-9, "{pr:?}");
        assert!((pr.ns_per_packet - (25.0 + 2.0 + 8.75)).abs() < 1e-9);
    }

    #[test]
    fn the_split_micro_program_parts_its_paths_in_the_parser() {
        let m = Micro {
            headers: 2,
            split: true,
            ..Micro::default()
        };
        let json = m.json();
        let random = m.split_frames(1024, false);
        let sorted = m.split_frames(1024, true);
        assert_eq!(random.iter().filter(|f| f[31] == 1).count(), 512);
        let paths = |fr: &[Vec<u8>]| {
            crate::paths::PathStats::measure(&json, |_| Ok(()), fr, 0, 1024).unwrap()
        };
        let (r, s) = (paths(&random), paths(&sorted));
        // half the frames carry `ha` (removed), the others get it
        assert_eq!((r.extracted, s.extracted), (2.5, 2.5));
        assert_eq!((r.emitted, s.emitted), (2.5, 2.5));
        assert_eq!(r.tables["tbl_pop"], 0.5);
        // the select and the deparser's third header, each missed about half the time
        assert!((r.mispredicts[0] - 0.5).abs() < 0.08, "{r:?}");
        assert!((r.mispredicts[3] - 0.5).abs() < 0.08, "{r:?}");
        assert!(s.mispredicts_total() < 0.02, "{s:?}");
    }
}
