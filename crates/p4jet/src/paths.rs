//! The paths a trace's packets take through a program, for the performance model
//! (`p4jet model --trace`, `bench`, `bench --suite`).
//!
//! A sample of the trace runs through the interpreter with its per-packet log on (the
//! lines simple_switch writes with `--log-console`); the log says, per packet, which
//! parser states it went through, which tables it applied and with which action, which
//! primitives of an action ran (an `if` inside an action shows as the primitives taken),
//! which checksums were computed and which headers were emitted. From it
//! [`PathStats`] counts:
//!
//! - per table and keyless call, the share of packets that apply it (the model prices a
//!   table by the packets that reach it, instead of every table of the costliest path for
//!   every packet);
//! - headers extracted and emitted and checksums computed per packet;
//! - the decisions the generated code takes per packet (parser transitions, the action a
//!   table's lookup dispatches to, branches inside actions, checksum conditions and the
//!   deparser's header validity) that a branch predictor would miss, replayed in the
//!   trace's order through a small predictor per decision. A 50/50 random mix of two
//!   paths misses about half of the decisions where they part, a trace sorted by path
//!   almost none; the calibration prices a missed decision (`branch_ns`). Conditions and
//!   table successors of the control graph are not counted: the batched control walk
//!   splits the batch's packet mask there without a branch per packet.

use std::collections::{BTreeMap, HashMap};

use p4jet_switch::{Switch, SwitchConfig};
use serde::Serialize;

/// What a traced sample of packets did, per packet.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PathStats {
    /// Packets traced.
    pub packets: usize,
    /// Per table (by name): applies per packet.
    pub tables: BTreeMap<String, f64>,
    /// Per action (by name): runs per packet outside a table (keyless call nodes).
    pub calls: BTreeMap<String, f64>,
    /// Headers extracted per packet.
    pub extracted: f64,
    /// Headers emitted per packet.
    pub emitted: f64,
    /// Checksums verified (computed) per packet.
    pub verified: f64,
    /// Checksums updated per packet.
    pub updated: f64,
    /// Mispredicted per-packet decisions per packet, by stage ([`STAGES`]).
    pub mispredicts: [f64; 4],
}

/// A per-packet log line reduced to what it says about the packet's path (values
/// dropped); `None` for lines that carry only values.
fn event(msg: &str) -> Option<String> {
    const DROP: [&str; 8] = [
        "Parser set:",
        "Bytes parsed",
        "Looking up key",
        "Dumping entry",
        "Processing packet",
        "Transmitting packet",
        "Egress port is",
        "hash(",
    ];
    if DROP.iter().any(|d| msg.starts_with(d)) || msg.starts_with('*') {
        return None;
    }
    if let Some(rest) = msg.strip_prefix("Parser state '") {
        // `Parser state 'S': key is VALUE` carries the value only
        if rest.contains("': key is") {
            return None;
        }
    }
    let cut = |s: &str, at: &str| s.split_once(at).map_or(s, |(a, _)| a).to_string();
    if msg.starts_with("Action entry is ") {
        return Some(cut(msg, " - "));
    }
    if msg.starts_with("Checksum '") {
        return Some(cut(msg, ":"));
    }
    if msg.starts_with("Table '") {
        // hit or miss, not the handle
        return Some(cut(msg, " with handle"));
    }
    Some(msg.to_string())
}

/// A predictor of one decision: per history of its last four outcomes, the outcome
/// predicted with a two-bit confidence.
#[derive(Default)]
struct Predictor {
    hist: [u32; 4],
    table: HashMap<[u32; 4], (u32, u8)>,
}

impl Predictor {
    /// Records `outcome`; true when it was mispredicted (a first sight is not).
    fn observe(&mut self, outcome: u32) -> bool {
        let miss = match self.table.get_mut(&self.hist) {
            None => {
                self.table.insert(self.hist, (outcome, 1));
                false
            }
            Some((pred, conf)) => {
                if *pred == outcome {
                    *conf = (*conf + 1).min(3);
                    false
                } else {
                    if *conf > 0 {
                        *conf -= 1;
                    } else {
                        *pred = outcome;
                    }
                    true
                }
            }
        };
        self.hist = [self.hist[1], self.hist[2], self.hist[3], outcome];
        miss
    }
}

/// Every decision's predictor and the misses by stage.
#[derive(Default)]
struct Decisions {
    preds: HashMap<(usize, u32, u32), Predictor>,
    misses: [u64; 4],
}

impl Decisions {
    /// The packet went from `prev` (its occurrence in the packet counted in `seen`)
    /// to `outcome` in `stage`.
    fn decide(
        &mut self,
        stage: usize,
        seen: &mut HashMap<u32, u32>,
        prev: Option<u32>,
        outcome: u32,
    ) {
        let Some(p) = prev else { return };
        let occ = seen.entry(p).or_insert(0);
        *occ += 1;
        if self
            .preds
            .entry((stage, p, *occ))
            .or_default()
            .observe(outcome)
        {
            self.misses[stage] += 1;
        }
    }
}

impl Decisions {
    /// The branch `key` of `stage` went `outcome`.
    fn decide_on(&mut self, stage: usize, key: u32, outcome: u32) {
        // occurrence 0: apart from the chained decisions (which count from 1)
        if self
            .preds
            .entry((stage, key, 0))
            .or_default()
            .observe(outcome)
        {
            self.misses[stage] += 1;
        }
    }
}

/// The checksum a log line computes, verifies or skips.
fn checksum_of(e: &str) -> Option<&str> {
    let rest = e
        .strip_prefix("Checksum ")
        .or_else(|| e.strip_prefix("Verified checksum "))
        .or_else(|| e.strip_prefix("Skipping checksum "))
        .or_else(|| e.strip_prefix("Updating checksum "))?;
    let name = rest.strip_prefix('\'')?;
    name.split_once('\'').map(|(n, _)| n)
}

/// Interns strings as small numbers.
#[derive(Default)]
struct Ids(HashMap<String, u32>);

impl Ids {
    fn of(&mut self, s: &str) -> u32 {
        let n = self.0.len() as u32;
        *self.0.entry(s.to_string()).or_insert(n)
    }
}

/// One packet's log, split into its id and messages (`LVL[PACKET.COPY] [cxt 0] MSG`).
fn split_line(line: &str) -> Option<(&str, &str)> {
    let open = line.find('[')?;
    let close = open + line[open..].find(']')?;
    let id = &line[open + 1..close];
    let (_, msg) = line[close..].split_once("[cxt 0] ")?;
    Some((id, msg))
}

impl PathStats {
    /// The statistics of per-packet log lines (any order of packets; packets are taken
    /// in the order of their ids, the order they were received in).
    pub fn of_log<S: AsRef<str>>(lines: &[S]) -> PathStats {
        // packet id -> its events
        let mut by_packet: BTreeMap<(u64, u64), Vec<String>> = BTreeMap::new();
        for l in lines {
            let Some((id, msg)) = split_line(l.as_ref()) else {
                continue;
            };
            let Some((p, c)) = id.split_once('.') else {
                continue;
            };
            let (Ok(p), Ok(c)) = (p.parse::<u64>(), c.parse::<u64>()) else {
                continue;
            };
            if let Some(e) = event(msg) {
                by_packet.entry((p, c)).or_default().push(e);
            }
        }
        let mut s = PathStats {
            packets: by_packet.keys().filter(|k| k.1 == 0).count(),
            ..PathStats::default()
        };
        let n = s.packets.max(1) as f64;
        let mut ids = Ids::default();
        let end_of_action = ids.of("(end of action)");
        let mut d = Decisions::default();
        // every header any packet emitted, in the order first seen
        let mut headers: Vec<u32> = vec![];
        for events in by_packet.values() {
            for h in events
                .iter()
                .filter_map(|e| e.strip_prefix("Deparsing header "))
            {
                let h = ids.of(h);
                if !headers.contains(&h) {
                    headers.push(h);
                }
            }
        }
        for events in by_packet.values() {
            // checksums (stage, checksum, computed) and headers emitted, decided at the
            // packet's end
            let mut taken: Vec<(usize, u32, bool)> = vec![];
            let mut emitted: Vec<u32> = vec![];
            let mut deparsed = false;
            // stage of each event: parse until the first pipeline starts, then that
            // pipeline's, deparse from the deparser's start
            let mut stage = 0usize;
            let mut pipelines = 0;
            // occurrences of each event in this packet: a decision is (stage, event,
            // its occurrence) -> the next event
            let mut seen: HashMap<u32, u32> = HashMap::new();
            let mut prev: Option<u32> = None;
            let mut table_applied: Option<u32> = None;
            let mut in_action = false;
            for e in events {
                if e.starts_with("Pipeline '") {
                    if e.ends_with("start") {
                        pipelines += 1;
                        stage = if pipelines == 1 { 1 } else { 2 };
                    }
                    if in_action {
                        d.decide(stage, &mut seen, prev, end_of_action);
                    }
                    prev = None;
                    in_action = false;
                    continue;
                }
                if e.starts_with("Deparser '") && e.ends_with("start") {
                    stage = 3;
                    prev = None;
                }
                let id = ids.of(e);
                match stage {
                    0 | 3 => {
                        // a checksum computed or skipped, a header emitted: one branch
                        // of its own each, whatever came before (the code tests each
                        // checksum's condition and each header's validity in turn)
                        if let Some(c) = checksum_of(e) {
                            let on = !e.starts_with("Skipping");
                            if e.starts_with("Checksum '") {
                                s.verified += 1.0;
                            } else if e.starts_with("Updating") {
                                s.updated += 1.0;
                            }
                            if !e.starts_with("Verified") {
                                taken.push((stage, ids.of(&format!("checksum {c}")), on));
                            }
                            continue;
                        }
                        if let Some(h) = e.strip_prefix("Deparsing header ") {
                            s.emitted += 1.0;
                            emitted.push(ids.of(h));
                            continue;
                        }
                        if e.starts_with("Extracting header") {
                            s.extracted += 1.0;
                        }
                        if stage == 3 {
                            deparsed = true;
                            continue;
                        }
                        d.decide(stage, &mut seen, prev, id);
                        prev = Some(id);
                    }
                    _ => {
                        let primitive = e.contains("Primitive") && in_action;
                        if in_action && !primitive {
                            d.decide(stage, &mut seen, prev, end_of_action);
                            in_action = false;
                            prev = None;
                        }
                        if let Some(t) = e.strip_prefix("Applying table '") {
                            *s.tables
                                .entry(t.trim_end_matches('\'').to_string())
                                .or_default() += 1.0;
                            table_applied = Some(id);
                        } else if e.starts_with("Action entry is ") {
                            // the action a lookup dispatches to
                            d.decide(stage, &mut seen, table_applied.take(), id);
                        } else if let Some(a) = e.strip_prefix("Action ") {
                            // counted as a keyless call here, taken back below for the
                            // actions of tables (`Action entry is A` before)
                            *s.calls.entry(a.to_string()).or_default() += 1.0;
                            in_action = true;
                            prev = Some(id);
                        } else if primitive {
                            d.decide(stage, &mut seen, prev, id);
                            prev = Some(id);
                        }
                    }
                }
            }
            for (stage, c, on) in taken {
                d.decide_on(stage, c, u32::from(on));
            }
            if deparsed {
                for h in &headers {
                    d.decide_on(3, *h, u32::from(emitted.contains(h)));
                }
            }
        }
        let misses = d.misses;
        // `Action A` lines that follow `Action entry is A` are a table's action
        for (t, _) in by_packet
            .values()
            .flat_map(|ev| ev.iter().filter_map(|e| e.strip_prefix("Action entry is ")))
            .map(|a| (a.to_string(), ()))
            .collect::<Vec<_>>()
        {
            if let Some(c) = s.calls.get_mut(&t) {
                *c -= 1.0;
            }
        }
        s.calls.retain(|_, c| *c > 0.0);
        for v in s.tables.values_mut().chain(s.calls.values_mut()) {
            *v /= n;
        }
        s.extracted /= n;
        s.emitted /= n;
        s.verified /= n;
        s.updated /= n;
        for (m, x) in s.mispredicts.iter_mut().zip(misses) {
            *m = x as f64 / n;
        }
        s
    }

    /// Runs up to `sample` frames of `frames` (received on `port`; [`sample_windows`])
    /// through `json` in the interpreter with its log on; `load` adds the table
    /// entries.
    pub fn measure(
        json: &str,
        load: impl FnOnce(&mut Switch) -> Result<(), String>,
        frames: &[Vec<u8>],
        port: u32,
        sample: usize,
    ) -> Result<PathStats, String> {
        let cfg = SwitchConfig {
            trace: true,
            engine: p4jet_engine::EngineKind::Interp,
            ..SwitchConfig::default()
        };
        let mut sw = Switch::new(json, cfg)?;
        load(&mut sw)?;
        sw.worker.core.trace_out.clear();
        let mut lines: Vec<String> = vec![];
        for chunk in sample_windows(frames, sample).chunks(32) {
            for f in chunk {
                sw.inject(port, f);
            }
            sw.run_until_idle(&mut |_, _| {});
            lines.append(&mut sw.worker.core.trace_out);
        }
        Ok(PathStats::of_log(&lines))
    }

    /// Mispredicted decisions per packet, all stages.
    pub fn mispredicts_total(&self) -> f64 {
        self.mispredicts.iter().sum()
    }
}

/// Frames the model traces of a trace.
pub const SAMPLE: usize = 2048;

/// Windows of a sample: enough to cover a trace whose paths come in long runs.
const WINDOWS: usize = 8;

/// Up to `sample` frames of `frames`: all of them when they are not more, else
/// [`WINDOWS`] runs of consecutive frames spread evenly over the trace (runs keep the
/// order the predictor sees; spreading them finds paths that come late in the trace).
pub fn sample_windows(frames: &[Vec<u8>], sample: usize) -> Vec<&Vec<u8>> {
    if frames.len() <= sample {
        return frames.iter().collect();
    }
    let run = (sample / WINDOWS).max(1);
    let step = frames.len() / WINDOWS;
    (0..WINDOWS)
        .flat_map(|w| frames[w * step..].iter().take(run))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(p: u64, msg: &str) -> String {
        format!("D[{p}.0] [cxt 0] {msg}")
    }

    /// The log of one packet taking side `a` or `b` of a parser select and of a
    /// condition (tables ta or tb), then a shared table whose action branches the same
    /// way.
    fn packet(p: u64, a: bool) -> Vec<String> {
        let side = if a { "a" } else { "b" };
        let mut v = vec![
            "Processing packet received on port 0".to_string(),
            "Parser 'parser': start".into(),
            "Parser 'parser' entering state 'start'".into(),
            "Extracting header 'ethernet'".into(),
            "Parser state 'start': key is 0800".into(),
            format!("Parser 'parser' entering state 'parse_{side}'"),
            format!("Extracting header 'h_{side}'"),
            "Parser 'parser': end".into(),
            "Pipeline 'ingress': start".into(),
            format!("Condition \"x\" (node_2) is {a}"),
            format!("Applying table 't{side}'"),
            "Looking up key:".into(),
            format!("Table 't{side}': hit with handle {p}"),
            format!("Action entry is set_{side} - {p},"),
            format!("Action set_{side}"),
            "p.p4(10) Primitive meta.x = y".into(),
            "Applying table 'shared'".into(),
            "Table 'shared': miss".into(),
            "Action entry is fwd - ".into(),
            "Action fwd".into(),
            "p.p4(20) Primitive if".into(),
        ];
        if a {
            v.push("p.p4(21) Primitive hdr.h_a.x = 1".into());
        }
        v.extend([
            "p.p4(20) Primitive if".to_string(),
            "Action act_0".into(),
            "p.p4(30) Primitive meta.z = 1".into(),
            "Pipeline 'ingress': end".into(),
            "Deparser 'deparser': start".into(),
            "Updating checksum 'c'".into(),
            "Deparsing header 'ethernet'".into(),
            format!("Deparsing header 'h_{side}'"),
            "Deparser 'deparser': end".into(),
        ]);
        v.into_iter().map(|m| line(p, &m)).collect()
    }

    #[test]
    fn applies_are_shares_of_the_packets() {
        // three packets in four take side a
        let log: Vec<String> = (0..400u64).flat_map(|p| packet(p, p % 4 != 0)).collect();
        let s = PathStats::of_log(&log);
        assert_eq!(s.packets, 400);
        assert_eq!(s.tables["ta"], 0.75);
        assert_eq!(s.tables["tb"], 0.25);
        assert_eq!(s.tables["shared"], 1.0);
        // a keyless call (an action without a table), not the tables' actions
        assert_eq!(s.calls.keys().collect::<Vec<_>>(), vec!["act_0"]);
        assert_eq!(s.calls["act_0"], 1.0);
        assert_eq!((s.extracted, s.emitted, s.updated), (2.0, 2.0, 1.0));
        // the period-4 pattern is learnt: almost no misses
        assert!(s.mispredicts_total() < 0.1, "{s:?}");
    }

    #[test]
    fn a_random_mix_misses_where_paths_part_and_a_sorted_one_does_not() {
        let mut r = 0x1234_5678u64;
        let mut coin = || {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            r & 1 == 1
        };
        let sides: Vec<bool> = (0..2000).map(|_| coin()).collect();
        let random: Vec<String> = sides
            .iter()
            .enumerate()
            .flat_map(|(p, a)| packet(p as u64, *a))
            .collect();
        let mut sorted_sides = sides.clone();
        sorted_sides.sort();
        let sorted: Vec<String> = sorted_sides
            .iter()
            .enumerate()
            .flat_map(|(p, a)| packet(p as u64, *a))
            .collect();
        let (r, s) = (PathStats::of_log(&random), PathStats::of_log(&sorted));
        // same shares either way
        assert_eq!(r.tables, s.tables);
        // random: the parser's transition, the shared table's action's `if` and the
        // deparser's tests of h_a and of h_b, each missed about half the time; the
        // condition (node_2) and the two tables are the control walk's and not counted
        let per = |x: &PathStats, i: usize| x.mispredicts[i];
        assert!((per(&r, 0) - 0.5).abs() < 0.06, "{r:?}");
        assert!((per(&r, 1) - 0.5).abs() < 0.06, "{r:?}");
        assert!((per(&r, 3) - 1.0).abs() < 0.1, "{r:?}");
        assert_eq!(per(&r, 2), 0.0);
        assert!(s.mispredicts_total() < 0.01, "{s:?}");
    }

    #[test]
    fn a_sample_is_runs_spread_over_the_trace() {
        let frames: Vec<Vec<u8>> = (0..100u8).map(|i| vec![i]).collect();
        assert_eq!(sample_windows(&frames, 200).len(), 100);
        let s: Vec<u8> = sample_windows(&frames, 16).iter().map(|f| f[0]).collect();
        assert_eq!(
            s,
            vec![0, 1, 12, 13, 24, 25, 36, 37, 48, 49, 60, 61, 72, 73, 84, 85]
        );
    }

    #[test]
    fn lines_without_a_packet_are_ignored() {
        let s = PathStats::of_log(&["Adding entry", "x[a.b] [cxt 0] Action y", ""]);
        assert_eq!(s.packets, 0);
        assert!(s.tables.is_empty() && s.calls.is_empty());
    }
}
