//! The differential run: chunks of random control-plane state and frames, played on
//! bmv2 and on p4jet, compared; differences are minimised into STF tests.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::cli::StockCli;
use crate::generate::{EntryOptions, FrameKind, Pools, entries, frame, stf_seeds};
use crate::model::ProgramInfo;
use crate::scenario::{Observed, Options, Step, play};
use crate::switch::SwitchSpec;

/// A differential run's settings.
#[derive(Debug, Clone)]
pub struct DiffConfig {
    /// The bmv2 JSON.
    pub program: PathBuf,
    /// simple_switch_CLI commands to use instead of random ones in every third chunk
    /// (the corpus's `NAME.commands`).
    pub commands: Option<PathBuf>,
    /// Frames to mutate (the corpus STF packets).
    pub seeds: Vec<Vec<u8>>,
    /// Frames per chunk (one switch run each).
    pub chunk: usize,
    /// Chunks.
    pub chunks: usize,
    /// First chunk number (to resume or split a run).
    pub first_chunk: usize,
    /// Seed of the whole run; chunk `i` uses `seed + i`.
    pub seed: u64,
    /// The reference.
    pub reference: SwitchSpec,
    /// p4jet.
    pub p4jet: SwitchSpec,
    /// The stock CLI.
    pub cli: StockCli,
    /// Working directory.
    pub work: PathBuf,
    /// Where minimised differences are written as STF tests (None: not minimised).
    pub found: Option<PathBuf>,
    /// Most differences to minimise per run.
    pub max_minimize: usize,
    /// Ports 0..ports are opened; frames enter on them.
    pub ports: u32,
    /// Keep the working directory of chunks without differences too.
    pub keep: bool,
}

/// What kind of difference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffKind {
    /// The same frames on a port, in another order, where bmv2's order depends on
    /// timing (recirculation, resubmission, E2E clones): intended.
    Order,
    /// Different frames.
    Frames,
    /// A CLI command answered differently.
    Answer,
    /// A counter or register read differently.
    State,
    /// One of the switches died.
    Crash,
}

/// One difference.
#[derive(Debug, Clone)]
pub struct Difference {
    /// Kind.
    pub kind: DiffKind,
    /// Description.
    pub detail: String,
}

/// The comparison of two observations.
pub fn compare(
    info: &ProgramInfo,
    bmv2: &Observed,
    p4jet: &Observed,
    ignore_answers: bool,
) -> Vec<Difference> {
    let mut out = vec![];
    if !ignore_answers {
        for ((c, a), (_, b)) in bmv2.answers.iter().zip(&p4jet.answers) {
            if a.trim() != b.trim() {
                out.push(Difference {
                    kind: DiffKind::Answer,
                    detail: format!(
                        "`{c}`:\n  bmv2:  {}\n  p4jet: {}",
                        a.trim().replace('\n', "\n         "),
                        b.trim().replace('\n', "\n         ")
                    ),
                });
            }
        }
    }
    let ports: std::collections::BTreeSet<u32> = bmv2
        .outputs
        .keys()
        .chain(p4jet.outputs.keys())
        .copied()
        .collect();
    let empty = vec![];
    for p in ports {
        let a = bmv2.outputs.get(&p).unwrap_or(&empty);
        let b = p4jet.outputs.get(&p).unwrap_or(&empty);
        if a == b {
            continue;
        }
        let mut sa = a.clone();
        let mut sb = b.clone();
        sa.sort();
        sb.sort();
        if sa == sb && info.timing_dependent_order {
            out.push(Difference {
                kind: DiffKind::Order,
                detail: format!("port {p}: the same {} frames in another order", a.len()),
            });
            continue;
        }
        let first = a
            .iter()
            .zip(b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
        let show = |v: &Vec<Vec<u8>>| {
            v.get(first)
                .map(|f| f.iter().map(|x| format!("{x:02x}")).collect::<String>())
                .unwrap_or_else(|| "(none)".into())
        };
        out.push(Difference {
            kind: DiffKind::Frames,
            detail: format!(
                "port {p}: bmv2 sent {} frames, p4jet {}; first difference at frame {first}:\n  bmv2:  {}\n  p4jet: {}",
                a.len(),
                b.len(),
                show(a),
                show(b)
            ),
        });
    }
    for ((c, a), (_, b)) in bmv2.final_reads.iter().zip(&p4jet.final_reads) {
        if a.trim() != b.trim() {
            out.push(Difference {
                kind: DiffKind::State,
                detail: format!(
                    "`{c}`:\n  bmv2:  {}\n  p4jet: {}",
                    a.trim().replace('\n', "\n         "),
                    b.trim().replace('\n', "\n         ")
                ),
            });
        }
    }
    out
}

/// The state reads done after a chunk: every indexed counter cell, every direct
/// counter cell of the entries added, every register.
pub fn final_reads(info: &ProgramInfo, commands: &[String]) -> Vec<String> {
    let mut reads = vec![];
    for (c, size) in &info.counters {
        for i in 0..(*size).min(256) {
            reads.push(format!("counter_read {c} {i}"));
        }
    }
    for t in &info.tables {
        let Some(c) = &t.direct_counter else { continue };
        let adds = commands
            .iter()
            .filter(|l| {
                let mut w = l.split_whitespace();
                matches!(
                    w.next(),
                    Some("table_add" | "table_indirect_add" | "table_indirect_add_with_group")
                ) && w.next() == Some(t.name.as_str())
            })
            .count();
        for h in 0..adds {
            reads.push(format!("counter_read {c} {h}"));
        }
    }
    for (r, _, _) in &info.registers {
        reads.push(format!("register_read {r}"));
    }
    reads
}

/// Plays the same steps on both switches (at once) and compares.
pub struct Pair<'a> {
    /// Settings.
    pub cfg: &'a DiffConfig,
    /// The program.
    pub info: &'a ProgramInfo,
}

/// The outcome of one comparison run.
pub struct PairRun {
    /// bmv2's observation (Err: it failed).
    pub bmv2: Result<Observed, String>,
    /// p4jet's.
    pub p4jet: Result<Observed, String>,
}

impl Pair<'_> {
    /// Runs `steps` on both, in `dir`.
    pub fn run(&self, steps: &[Step], reads: &[String], dir: &Path) -> PairRun {
        self.run_on(&self.cfg.program, steps, reads, dir, None)
    }

    /// Runs `steps` on both at once with `program`, bmv2's frames paced by `pace`.
    fn run_on(
        &self,
        program: &Path,
        steps: &[Step],
        reads: &[String],
        dir: &Path,
        pace: Option<usize>,
    ) -> PairRun {
        let (a, b) = std::thread::scope(|s| {
            let ha =
                s.spawn(|| self.play_side(true, program, steps, reads, &dir.join("bmv2"), pace));
            let hb =
                s.spawn(|| self.play_side(false, program, steps, reads, &dir.join("p4jet"), None));
            (
                ha.join()
                    .unwrap_or_else(|_| Err("bmv2 runner panicked".into())),
                hb.join()
                    .unwrap_or_else(|_| Err("p4jet runner panicked".into())),
            )
        });
        PairRun { bmv2: a, p4jet: b }
    }

    /// Plays one side alone: `program` instead of the configured one, frames paced.
    fn play_side(
        &self,
        bmv2: bool,
        program: &Path,
        steps: &[Step],
        reads: &[String],
        dir: &Path,
        pace: Option<usize>,
    ) -> Result<Observed, String> {
        let opts = Options {
            ports: (0..self.cfg.ports).collect(),
            final_reads: reads.to_vec(),
            pace,
            ..Options::default()
        };
        let spec = if bmv2 {
            &self.cfg.reference
        } else {
            &self.cfg.p4jet
        };
        play(spec, &self.cfg.cli, program, steps, dir, &opts)
    }

    /// Plays a chunk whose differences the first run could not explain again, to
    /// tell bmv2's timing-dependent behaviour from real differences: first bmv2 alone
    /// with its input fed in slices of [`PACE`] frames, compared with p4jet's first
    /// run (`p4jet`): bmv2 drops resubmitted and recirculated packets when their
    /// queue is full, and how full it gets depends on how fast frames arrive and how
    /// its threads are scheduled. If differences remain, both switches play the
    /// program with zeroed headers ([`crate::zeroed`]), bmv2 paced again: what
    /// differs then does not come from stale fields of invalid headers either.
    pub fn rerun(&self, steps: &[Step], reads: &[String], p4jet: &Observed, dir: &Path) -> Rerun {
        let paced = match self.play_side(
            true,
            &self.cfg.program,
            steps,
            reads,
            &dir.join("paced"),
            Some(PACE),
        ) {
            Ok(o) => o,
            Err(e) => return Rerun::Failed(format!("bmv2 paced: {e}")),
        };
        if real(compare(self.info, &paced, p4jet, false)).is_empty() {
            return Rerun::Timing;
        }
        let zeroed = match std::fs::read_to_string(&self.cfg.program)
            .map_err(|e| e.to_string())
            .and_then(|j| crate::zeroed::zeroed_program(&j))
        {
            Ok(z) => z,
            Err(e) => return Rerun::Failed(format!("zeroed program: {e}")),
        };
        let zpath = dir.join("zeroed.json");
        if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&zpath, zeroed)) {
            return Rerun::Failed(format!("{}: {e}", zpath.display()));
        }
        let r = self.run_on(&zpath, steps, reads, &dir.join("zeroed"), Some(PACE));
        match (r.bmv2, r.p4jet) {
            (Ok(a), Ok(b)) => {
                let d = real(compare(self.info, &a, &b, false));
                if d.is_empty() {
                    Rerun::Stale
                } else {
                    Rerun::Still(d.len())
                }
            }
            (Err(e), _) => Rerun::Failed(format!("bmv2 on the zeroed program: {e}")),
            (_, Err(e)) => Rerun::Failed(format!("p4jet on the zeroed program: {e}")),
        }
    }

    /// The differences of a run (crashes included).
    pub fn differences(&self, r: &PairRun, ignore_answers: bool) -> Vec<Difference> {
        match (&r.bmv2, &r.p4jet) {
            (Ok(a), Ok(b)) => compare(self.info, a, b, ignore_answers),
            (Err(e), Ok(_)) => vec![Difference {
                kind: DiffKind::Crash,
                detail: format!("bmv2 failed: {e}"),
            }],
            (Ok(_), Err(e)) => vec![Difference {
                kind: DiffKind::Crash,
                detail: format!("p4jet failed: {e}"),
            }],
            (Err(a), Err(b)) => vec![Difference {
                kind: DiffKind::Crash,
                detail: format!("both failed:\n  bmv2: {a}\n  p4jet: {b}"),
            }],
        }
    }
}

/// Frames per slice when bmv2 is fed slowly: well under the 1,024 packets its
/// resubmission and recirculation queue holds.
pub const PACE: usize = 600;

/// What playing a chunk again showed ([`Pair::rerun`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rerun {
    /// bmv2 fed slowly sent what p4jet sent: the differences came from bmv2's timing.
    Timing,
    /// With headers zeroed at the start of every packet, both agreed: the
    /// differences came from stale fields of invalid headers.
    Stale,
    /// This many differences remained.
    Still(usize),
    /// A run failed.
    Failed(String),
}

impl Rerun {
    /// One line for the report.
    pub fn describe(&self) -> String {
        match self {
            Rerun::Timing => "no difference with bmv2 fed slowly (bmv2's timing)".into(),
            Rerun::Stale => {
                "no difference with headers zeroed at every packet's start (stale fields)".into()
            }
            Rerun::Still(n) => format!("{n} difference(s) remain, also paced and zeroed"),
            Rerun::Failed(e) => format!("failed: {e}"),
        }
    }
}

/// The differences that are not intended reorderings.
fn real(d: Vec<Difference>) -> Vec<Difference> {
    d.into_iter()
        .filter(|d| d.kind != DiffKind::Order)
        .collect()
}

/// Steps: the commands, then the frames (port, bytes).
pub fn steps_of(commands: &[String], frames: &[(u32, Vec<u8>)]) -> Vec<Step> {
    let mut s: Vec<Step> = commands
        .iter()
        .map(|c| Step::Cli {
            command: c.clone(),
            name: None,
        })
        .collect();
    s.push(Step::Cli {
        // deep egress queues: bmv2 tail-drops at 64 frames per port otherwise
        command: "set_queue_depth 100000".into(),
        name: None,
    });
    for (p, f) in frames {
        s.push(Step::Packet {
            port: *p,
            data: f.clone(),
        });
    }
    s
}

/// Counts of a differential run.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Frames played (on each switch).
    pub frames: u64,
    /// Frames by kind: valid, mutated seed, mutated valid, random.
    pub kinds: [u64; 4],
    /// Frames bmv2 sent.
    pub frames_out: u64,
    /// Chunks.
    pub chunks: u64,
    /// Chunks with an unexplained difference.
    pub chunks_differing: u64,
    /// Chunks with only reordering where bmv2's order depends on timing.
    pub chunks_reordered: u64,
    /// Chunks whose only differences come from frames that behave the same alone on a
    /// fresh switch (bmv2's stale fields of invalid headers).
    pub chunks_stale: u64,
    /// Inputs found behind such differences.
    pub stale_inputs: u64,
    /// Chunks whose differences went away when bmv2 was fed slowly (see
    /// [`Pair::rerun`]).
    pub chunks_timing: u64,
    /// Difference reports.
    pub reports: Vec<String>,
    /// STF tests written.
    pub tests_written: Vec<PathBuf>,
    /// Wall time in seconds.
    pub seconds: f64,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// An STF test (extension format: raw CLI lines) reproducing a difference, with
/// bmv2's outputs as expectations.
pub fn write_case(
    path: &Path,
    header: &str,
    commands: &[String],
    frames: &[(u32, Vec<u8>)],
    bmv2: &Observed,
) -> Result<(), String> {
    let mut s = String::new();
    for l in header.lines() {
        let _ = writeln!(s, "# {l}");
    }
    for c in commands {
        let _ = writeln!(s, "{c}");
    }
    for (p, f) in frames {
        let _ = writeln!(s, "packet {p} {}", hex(f));
    }
    for (p, fs) in &bmv2.outputs {
        for f in fs {
            let _ = writeln!(s, "expect {p} {}$", hex(f));
        }
    }
    std::fs::write(path, s).map_err(|e| format!("{}: {e}", path.display()))
}

/// Frames (port, bytes) that reproduce a difference, with bmv2's observation of them
/// and the differences.
pub type Reduced = (Vec<(u32, Vec<u8>)>, Observed, Vec<Difference>);

/// Minimises a differing chunk: the shortest prefix of its frames that still differs,
/// then as few frames before the last one as still differ. Returns the frames and
/// bmv2's observation of them.
pub fn minimize(
    pair: &Pair<'_>,
    commands: &[String],
    frames: &[(u32, Vec<u8>)],
    dir: &Path,
    log: &mut dyn FnMut(&str),
) -> Option<Reduced> {
    let reads = final_reads(pair.info, commands);
    const LIMIT: usize = 60;
    let probes = std::cell::Cell::new(0usize);
    let differs = |fs: &[(u32, Vec<u8>)]| -> Option<(Observed, Vec<Difference>)> {
        probes.set(probes.get() + 1);
        let r = pair.run(
            &steps_of(commands, fs),
            &reads,
            &dir.join(format!("probe{}", probes.get())),
        );
        let d: Vec<Difference> = pair
            .differences(&r, true)
            .into_iter()
            .filter(|d| d.kind != DiffKind::Order)
            .collect();
        if d.is_empty() {
            None
        } else {
            r.bmv2.ok().map(|o| (o, d))
        }
    };
    // shortest differing prefix (differences grow with the prefix)
    let (mut lo, mut hi) = (0usize, frames.len());
    differs(&frames[..hi])?;
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if differs(&frames[..mid]).is_some() {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    log(&format!("  shortest differing prefix: {hi} frames"));
    let last = frames[hi - 1].clone();
    let mut kept: Vec<(u32, Vec<u8>)> = frames[..hi - 1].to_vec();
    // the last frame alone?
    if let Some((o, d)) = differs(std::slice::from_ref(&last)) {
        return Some((vec![last], o, d));
    }
    // drop earlier frames in halves, then one by one, within LIMIT runs
    let mut chunk = kept.len().div_ceil(2).max(1);
    while !kept.is_empty() && probes.get() < LIMIT {
        let mut i = 0;
        let mut removed = false;
        while i < kept.len() && probes.get() < LIMIT {
            let end = (i + chunk).min(kept.len());
            let mut trial: Vec<(u32, Vec<u8>)> = kept[..i].to_vec();
            trial.extend_from_slice(&kept[end..]);
            trial.push(last.clone());
            if differs(&trial).is_some() {
                kept.drain(i..end);
                removed = true;
            } else {
                i = end;
            }
        }
        if chunk == 1 && !removed {
            break;
        }
        chunk = (chunk / 2).max(1);
    }
    kept.push(last);
    let (o, d) = differs(&kept)?;
    log(&format!(
        "  reduced to {} frames in {} runs",
        kept.len(),
        probes.get()
    ));
    Some((kept, o, d))
}

/// A frame of one port without its twin in the other switch's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmatched {
    /// Only bmv2 sent frame i.
    OnlyA(usize),
    /// Only p4jet sent frame j.
    OnlyB(usize),
    /// bmv2's frame i and p4jet's frame j stand at the same place but differ.
    Pair(usize, usize),
}

/// Aligns two frame sequences of one port (resynchronising within a window) and
/// returns what does not match.
pub fn unmatched(a: &[Vec<u8>], b: &[Vec<u8>]) -> Vec<Unmatched> {
    const W: usize = 32;
    let (mut i, mut j) = (0, 0);
    let mut out = vec![];
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            i += 1;
            j += 1;
            continue;
        }
        let skip_a = (1..=W).find(|k| a.get(i + k) == Some(&b[j]));
        let skip_b = (1..=W).find(|k| b.get(j + k) == Some(&a[i]));
        match (skip_a, skip_b) {
            (Some(k), Some(l)) if k <= l => {
                out.extend((i..i + k).map(Unmatched::OnlyA));
                i += k;
            }
            (Some(k), None) => {
                out.extend((i..i + k).map(Unmatched::OnlyA));
                i += k;
            }
            (_, Some(l)) => {
                out.extend((j..j + l).map(Unmatched::OnlyB));
                j += l;
            }
            (None, None) => {
                out.push(Unmatched::Pair(i, j));
                i += 1;
                j += 1;
            }
        }
    }
    out.extend((i..a.len()).map(Unmatched::OnlyA));
    out.extend((j..b.len()).map(Unmatched::OnlyB));
    out
}

/// p4jet reads fields of invalid headers as zeros where bmv2 reads what an earlier
/// packet left: two frames of the same length that differ only where p4jet's has zero
/// bytes bear that signature.
pub fn stale_signature(bmv2: &[u8], p4jet: &[u8]) -> bool {
    bmv2.len() == p4jet.len()
        && bmv2 != p4jet
        && bmv2.iter().zip(p4jet).all(|(x, y)| x == y || *y == 0)
}

/// The inputs an output frame may come from: those whose last bytes it ends with (8
/// bytes, or the whole input when it is shorter).
fn sources(
    out: &[u8],
    frames: &[(u32, Vec<u8>)],
    index: &HashMap<Vec<u8>, Vec<usize>>,
) -> Vec<usize> {
    let mut v = vec![];
    for l in 1..=8.min(out.len()) {
        if let Some(ix) = index.get(&out[out.len() - l..]) {
            v.extend(
                ix.iter()
                    .copied()
                    .filter(|i| frames[*i].1.len() == l || l == 8),
            );
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// How the unmatched frames of a chunk were explained.
#[derive(Debug, Default)]
pub struct Triage {
    /// Inputs that behave the same on both switches alone (a fresh switch) but not
    /// after earlier frames: bmv2 read stale fields of invalid headers.
    pub history: Vec<usize>,
    /// Inputs that differ alone: real differences, one frame each.
    pub alone: Vec<(usize, Observed, Vec<Difference>)>,
    /// Unmatched frames whose input could not be told.
    pub unattributed: usize,
    /// Frame pairs with the stale signature ([`stale_signature`]).
    pub signed: usize,
    /// Unmatched frames whose suspected inputs were not all shown to differ only
    /// after earlier frames.
    pub unexplained: usize,
    /// Suspects not checked (over the limit).
    pub unchecked: usize,
}

/// Finds the inputs behind the unmatched frames and plays each alone on both
/// switches.
pub fn triage(
    pair: &Pair<'_>,
    commands: &[String],
    frames: &[(u32, Vec<u8>)],
    bmv2: &Observed,
    p4jet: &Observed,
    dir: &Path,
    limit: usize,
) -> Triage {
    let mut index: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
    for (i, (_, f)) in frames.iter().enumerate() {
        let key = if f.len() >= 8 {
            f[f.len() - 8..].to_vec()
        } else {
            f.clone()
        };
        index.entry(key).or_default().push(i);
    }
    let mut t = Triage::default();
    let mut suspects: Vec<usize> = vec![];
    let ports: std::collections::BTreeSet<u32> = bmv2
        .outputs
        .keys()
        .chain(p4jet.outputs.keys())
        .copied()
        .collect();
    let empty = vec![];
    let mut loose: Vec<Vec<usize>> = vec![];
    let mut signed_samples: Vec<usize> = vec![];
    for p in ports {
        let a = bmv2.outputs.get(&p).unwrap_or(&empty);
        let b = p4jet.outputs.get(&p).unwrap_or(&empty);
        for u in unmatched(a, b) {
            let (f, signed) = match u {
                Unmatched::OnlyA(i) => (&a[i], false),
                Unmatched::OnlyB(j) => (&b[j], false),
                Unmatched::Pair(i, j) => (&b[j], stale_signature(&a[i], &b[j])),
            };
            let s = sources(f, frames, &index);
            if signed {
                t.signed += 1;
                signed_samples.extend(s.iter().take(1));
            } else if s.is_empty() || s.len() > 3 {
                t.unattributed += 1;
            } else {
                suspects.extend(s.iter().copied());
                loose.push(s);
            }
        }
    }
    // the inputs behind unsigned frames first, then a sample of the signed ones
    suspects.extend(signed_samples.iter().take(4));
    let mut seen = std::collections::HashSet::new();
    suspects.retain(|i| seen.insert(*i));
    if suspects.len() > limit {
        t.unchecked = suspects.len() - limit;
        suspects.truncate(limit);
    }
    let reads = final_reads(pair.info, commands);
    for (k, i) in suspects.into_iter().enumerate() {
        let one = std::slice::from_ref(&frames[i]);
        let r = pair.run(
            &steps_of(commands, one),
            &reads,
            &dir.join(format!("alone{k}")),
        );
        let d: Vec<Difference> = pair
            .differences(&r, true)
            .into_iter()
            .filter(|d| d.kind != DiffKind::Order)
            .collect();
        if d.is_empty() {
            t.history.push(i);
        } else if let Ok(o) = r.bmv2 {
            t.alone.push((i, o, d));
        } else {
            t.unattributed += 1;
        }
    }
    t.unexplained = loose
        .iter()
        .filter(|s| !s.iter().any(|i| t.history.contains(i)))
        .count();
    t
}

/// Meter rates of a command replaced by 1e-9 units/µs (bursts kept): with real rates
/// colours depend on when packets arrive, which differs between any two runs; with
/// rates so low, both buckets stay at their burst sizes minus what packets took.
pub fn deterministic_meters(line: &str) -> String {
    let mut w = line.split_whitespace();
    match w.next() {
        Some("meter_set_rates" | "meter_array_set_rates") => line
            .split_whitespace()
            .map(|tok| match tok.split_once(':') {
                Some((_, burst)) => format!("0.000000001:{burst}"),
                None => tok.to_string(),
            })
            .collect::<Vec<_>>()
            .join(" "),
        _ => line.to_string(),
    }
}

/// IPv6 addresses of a command written in hex: the stock CLI cannot parse IPv6
/// notation under Python 3 (its `ipaddr` call yields bytes that it passes to `ord`), on
/// either switch.
pub fn ipv6_as_hex(line: &str) -> String {
    line.split_whitespace()
        .map(|tok| {
            let (addr, len) = match tok.split_once('/') {
                Some((a, l)) => (a, Some(l)),
                None => (tok, None),
            };
            match addr.parse::<std::net::Ipv6Addr>() {
                Ok(a) if addr.contains("::") || addr.matches(':').count() == 7 => {
                    let h = format!("0x{:x}", u128::from(a));
                    match len {
                        Some(l) => format!("{h}/{l}"),
                        None => h,
                    }
                }
                _ => tok.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs the chunks; `log` receives progress lines.
pub fn run(cfg: &DiffConfig, log: &mut dyn FnMut(&str)) -> Result<Summary, String> {
    let json = std::fs::read_to_string(&cfg.program)
        .map_err(|e| format!("{}: {e}", cfg.program.display()))?;
    let p = p4jet_json::parse(&json).map_err(|e| e.to_string())?;
    let info = ProgramInfo::new(&p);
    let name = cfg
        .program
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "program".into());
    let corpus_commands: Option<Vec<String>> = match &cfg.commands {
        Some(c) => Some(
            std::fs::read_to_string(c)
                .map_err(|e| format!("{}: {e}", c.display()))?
                .lines()
                .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
                // the stock CLI's pvs_add sends one byte too many and simple_switch
                // aborts on an assertion (tests/corpus/README.md): left out
                .filter(|l| !l.is_empty() && !l.starts_with("pvs_add"))
                .map(|l| deterministic_meters(&ipv6_as_hex(&l)))
                .collect(),
        ),
        None => None,
    };
    let pair = Pair { cfg, info: &info };
    let mut sum = Summary::default();
    let start = Instant::now();
    let mut minimized = 0;
    for ci in cfg.first_chunk..cfg.first_chunk + cfg.chunks {
        let seed = cfg.seed.wrapping_add(ci as u64);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut pools = Pools::new(&info, &mut rng);
        let mut commands = entries(
            &info,
            &pools,
            &mut rng,
            &EntryOptions {
                ports: cfg.ports,
                ..EntryOptions::default()
            },
        );
        if let Some(cc) = &corpus_commands
            && ci % 3 == 0
        {
            commands = cc.clone();
            pools.absorb(&info, cc);
        }
        let mut frames = Vec::with_capacity(cfg.chunk);
        for _ in 0..cfg.chunk {
            let (k, f) = frame(&info, &pools, &cfg.seeds, &mut rng);
            sum.kinds[match k {
                FrameKind::Valid => 0,
                FrameKind::MutatedSeed => 1,
                FrameKind::MutatedValid => 2,
                FrameKind::Random => 3,
            }] += 1;
            let port = rand::Rng::gen_range(&mut rng, 0..cfg.ports);
            frames.push((port, f));
        }
        let reads = final_reads(&info, &commands);
        let dir = cfg.work.join(format!("{name}-{ci}"));
        let r = pair.run(&steps_of(&commands, &frames), &reads, &dir);
        let diffs = pair.differences(&r, false);
        sum.chunks += 1;
        sum.frames += frames.len() as u64;
        if let Ok(o) = &r.bmv2 {
            sum.frames_out += o.outputs.values().map(|v| v.len() as u64).sum::<u64>();
        }
        let real: Vec<&Difference> = diffs.iter().filter(|d| d.kind != DiffKind::Order).collect();
        if !diffs.is_empty() && real.is_empty() {
            sum.chunks_reordered += 1;
        }
        log(&format!(
            "{name} chunk {ci} (seed {seed}): {} frames, {} commands, {} differences{}",
            frames.len(),
            commands.len(),
            real.len(),
            if diffs.len() > real.len() {
                format!(" (+{} reorderings)", diffs.len() - real.len())
            } else {
                String::new()
            }
        ));
        if real.is_empty() {
            if !cfg.keep {
                let _ = std::fs::remove_dir_all(&dir);
            }
            continue;
        }
        let mut rep = format!("{name} chunk {ci} (seed {seed}):\n");
        for d in real.iter().take(8) {
            let _ = writeln!(rep, "  [{:?}] {}", d.kind, d.detail);
        }
        // played again first (two runs): bmv2 fed slowly, then both on the zeroed
        // program; the per-input triage (a pair of runs per suspect) only when that
        // leaves differences
        let mut rerun_failed = true;
        if let Ok(b) = &r.p4jet {
            let rdir = cfg.work.join(format!("{name}-{ci}-rerun"));
            let verdict = pair.rerun(&steps_of(&commands, &frames), &reads, b, &rdir);
            let _ = std::fs::remove_dir_all(&rdir);
            let _ = writeln!(rep, "  played again: {}", verdict.describe());
            let explained = match verdict {
                Rerun::Timing => {
                    sum.chunks_timing += 1;
                    true
                }
                Rerun::Stale => {
                    sum.chunks_stale += 1;
                    true
                }
                Rerun::Still(_) => {
                    rerun_failed = false;
                    false
                }
                Rerun::Failed(_) => false,
            };
            if explained {
                log(&rep);
                sum.reports.push(rep);
                if !cfg.keep {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                continue;
            }
        }
        // frame differences: the inputs behind them, each played alone
        let only_frames = real.iter().all(|d| d.kind == DiffKind::Frames);
        let any_frames = real.iter().any(|d| d.kind == DiffKind::Frames);
        if let (true, Ok(a), Ok(b)) = (any_frames, &r.bmv2, &r.p4jet) {
            let tdir = cfg.work.join(format!("{name}-{ci}-triage"));
            let t = triage(&pair, &commands, &frames, a, b, &tdir, 12);
            let _ = std::fs::remove_dir_all(&tdir);
            let _ = writeln!(
                rep,
                "  triage: {} input(s) differ only after earlier frames, {} differ alone; \
                 {} frame pair(s) with the stale signature, {} frame(s) unexplained, \
                 {} unattributed, {} suspects unchecked",
                t.history.len(),
                t.alone.len(),
                t.signed,
                t.unexplained,
                t.unattributed,
                t.unchecked
            );
            for (i, o, d) in &t.alone {
                if let Some(found) = &cfg.found
                    && sum.tests_written.len() < cfg.max_minimize
                {
                    std::fs::create_dir_all(found).map_err(|e| e.to_string())?;
                    let path = found.join(format!("{name}-seed{seed}-frame{i}.stf"));
                    let mut header = format!("p4jet-diff: {name}, seed {seed}, frame {i} alone:\n");
                    for x in d.iter().take(4) {
                        let _ = writeln!(header, "[{:?}] {}", x.kind, x.detail);
                    }
                    write_case(
                        &path,
                        &header,
                        &commands,
                        std::slice::from_ref(&frames[*i]),
                        o,
                    )?;
                    let _ = writeln!(rep, "  wrote {}", path.display());
                    sum.tests_written.push(path);
                }
            }
            // without a second run to decide (it failed), inputs that all behave the
            // same alone point at stale fields
            if rerun_failed
                && only_frames
                && t.alone.is_empty()
                && t.unattributed == 0
                && t.unexplained == 0
            {
                sum.chunks_stale += 1;
                sum.stale_inputs += t.history.len() as u64;
                log(&rep);
                sum.reports.push(rep);
                let _ = std::fs::remove_dir_all(&dir);
                continue;
            }
        }
        sum.chunks_differing += 1;
        log(&rep);
        sum.reports.push(rep);
        if let Some(found) = &cfg.found
            && minimized < cfg.max_minimize
            && real
                .iter()
                .any(|d| matches!(d.kind, DiffKind::Frames | DiffKind::State))
        {
            minimized += 1;
            let mdir = cfg.work.join(format!("{name}-{ci}-min"));
            if let Some((fs, o, d)) = minimize(&pair, &commands, &frames, &mdir, log) {
                std::fs::create_dir_all(found).map_err(|e| e.to_string())?;
                let path = found.join(format!("{name}-seed{seed}.stf"));
                let mut header = format!(
                    "p4jet-diff: {name}, seed {seed}, {} frame(s) reproduce:\n",
                    fs.len()
                );
                for x in d.iter().take(4) {
                    let _ = writeln!(header, "[{:?}] {}", x.kind, x.detail);
                }
                write_case(&path, &header, &commands, &fs, &o)?;
                log(&format!("  wrote {}", path.display()));
                sum.tests_written.push(path);
            }
            let _ = std::fs::remove_dir_all(&mdir);
        }
    }
    sum.seconds = start.elapsed().as_secs_f64();
    Ok(sum)
}

/// Collects the seeds of a corpus program directory (its STF packets).
pub fn corpus_seeds(dir: &Path) -> Vec<Vec<u8>> {
    stf_seeds(&dir.join("tests"))
}

/// Per-program results in a table.
pub fn summary_table(rows: &BTreeMap<String, Summary>) -> String {
    let mut s = String::from(
        "| program | frames | sent by bmv2 | chunks | unexplained | reordered only | stale only | bmv2 timing |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (n, r) in rows {
        let _ = writeln!(
            s,
            "| {n} | {} | {} | {} | {} | {} | {} | {} |",
            r.frames,
            r.frames_out,
            r.chunks,
            r.chunks_differing,
            r.chunks_reordered,
            r.chunks_stale,
            r.chunks_timing
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(b: u8) -> Vec<u8> {
        vec![b; 4]
    }

    #[test]
    fn alignment_finds_missing_extra_and_changed_frames() {
        let a = vec![f(1), f(2), f(3), f(4), f(5)];
        let b = vec![f(1), f(3), f(4), f(9), f(5), f(6)];
        assert_eq!(
            unmatched(&a, &b),
            vec![
                Unmatched::OnlyA(1),
                Unmatched::OnlyB(3),
                Unmatched::OnlyB(5)
            ]
        );
        let c = vec![f(1), f(7), f(3)];
        assert_eq!(unmatched(&a[..3], &c), vec![Unmatched::Pair(1, 1)]);
        assert!(unmatched(&a, &a).is_empty());
    }

    #[test]
    fn stale_signature_is_zeros_on_the_p4jet_side() {
        assert!(stale_signature(&[1, 0x88, 0xb5, 4], &[1, 0, 0, 4]));
        assert!(!stale_signature(&[1, 0, 0, 4], &[1, 0x88, 0xb5, 4]));
        assert!(!stale_signature(&[1, 2], &[1, 2]));
        assert!(!stale_signature(&[1, 2], &[1, 0, 0]));
    }
}
