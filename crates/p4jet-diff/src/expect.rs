//! `p4jet-diff expect`: an STF test's expectations taken from the reference switch.
//!
//! The test's statements are played on bmv2 `simple_switch` (table entries through the
//! stock CLI, frames through pcap FIFOs on ports 0..7 plus any the test names), and the
//! test is written back with bmv2's outputs as its `expect` lines (exact, `$`-ended)
//! and bmv2's counts in its `check_counter` lines. With a single input port each
//! packet's outputs follow its `packet` line; otherwise they all follow the last one.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use p4jet_control::stf::{CounterIndex, StfKind, StfOptions, parse_stf};

use crate::cli::StockCli;
use crate::scenario::{CounterRef, Observed, Options, Step, play};
use crate::switch::SwitchSpec;

/// The steps of an STF text, with the statement line of every step.
pub fn stf_steps(json: &str, text: &str) -> Result<Vec<(usize, Step)>, String> {
    let program = p4jet_runtime::Schema::shared_from_json(json).map_err(|e| e.to_string())?;
    let stmts = parse_stf(text, &program, &StfOptions { extensions: true }).map_err(|errs| {
        errs.iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    let mut steps = vec![];
    for s in stmts {
        let step = match s.kind {
            StfKind::Cli {
                command,
                entry_name,
            } => Step::Cli {
                command,
                name: entry_name,
            },
            StfKind::Packet { port, data } => Step::Packet { port, data },
            StfKind::Wait => Step::Sync,
            StfKind::CheckCounter(c) => Step::ReadCounter {
                counter: c.counter.clone(),
                index: match c.index {
                    CounterIndex::Number(n) => CounterRef::Index(n),
                    CounterIndex::Entry(e) => CounterRef::Entry(e),
                },
            },
            StfKind::Expect { .. }
            | StfKind::ExpectDigest { .. }
            | StfKind::NoPacket
            | StfKind::RemoveAll => continue,
        };
        steps.push((s.line, step));
    }
    Ok(steps)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// Rewrites `text` with the outputs and counts bmv2 produced.
pub fn rewrite(text: &str, steps: &[(usize, Step)], obs: &Observed) -> String {
    let attributed = !obs.per_packet.is_empty();
    let packet_lines: Vec<usize> = steps
        .iter()
        .filter(|(_, s)| matches!(s, Step::Packet { .. }))
        .map(|(l, _)| *l)
        .collect();
    let last_packet = packet_lines.last().copied();
    let counter_lines: Vec<usize> = steps
        .iter()
        .filter(|(_, s)| matches!(s, Step::ReadCounter { .. }))
        .map(|(l, _)| *l)
        .collect();
    let mut out = String::new();
    let mut packet_no = 0;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        let first = content.split_whitespace().next().unwrap_or("");
        if first == "expect" {
            continue;
        }
        if let Some(k) = counter_lines.iter().position(|l| *l == line) {
            let head = content.split(')').next().unwrap_or(content);
            let wants_bytes = content
                .split(')')
                .nth(1)
                .is_some_and(|rest| rest.trim_start().starts_with("bytes"));
            match obs.counters.get(k).copied().flatten() {
                Some(v) if wants_bytes => {
                    let _ = writeln!(out, "{head}) bytes == {}", v.bytes);
                }
                Some(v) => {
                    let _ = writeln!(out, "{head}) packets == {}", v.packets);
                }
                None => {
                    let _ = writeln!(out, "{raw}  # bmv2 could not read this counter");
                }
            }
            continue;
        }
        let _ = writeln!(out, "{raw}");
        if packet_lines.contains(&line) {
            if attributed {
                if let Some(frames) = obs.per_packet.get(packet_no) {
                    for (p, f) in frames {
                        let _ = writeln!(out, "expect {p} {}$", hex(f));
                    }
                }
                packet_no += 1;
            } else if Some(line) == last_packet {
                for (p, frames) in &obs.outputs {
                    for f in frames {
                        let _ = writeln!(out, "expect {p} {}$", hex(f));
                    }
                }
            }
        }
    }
    out
}

/// Plays an STF test on `spec` (the reference) and returns it with the reference's
/// expectations.
pub fn expect_stf(
    spec: &SwitchSpec,
    cli: &StockCli,
    program: &Path,
    stf: &Path,
    dir: &Path,
) -> Result<String, String> {
    let json =
        std::fs::read_to_string(program).map_err(|e| format!("{}: {e}", program.display()))?;
    let text = std::fs::read_to_string(stf).map_err(|e| format!("{}: {e}", stf.display()))?;
    let steps = stf_steps(&json, &text).map_err(|e| format!("{}: {e}", stf.display()))?;
    let inputs: BTreeMap<u32, ()> = steps
        .iter()
        .filter_map(|(_, s)| match s {
            Step::Packet { port, .. } => Some((*port, ())),
            _ => None,
        })
        .collect();
    let opts = Options {
        attribute: inputs.len() == 1,
        ..Options::default()
    };
    let plain: Vec<Step> = steps.iter().map(|(_, s)| s.clone()).collect();
    let obs = play(spec, cli, program, &plain, dir, &opts)?;
    for (cmd, answer) in &obs.answers {
        if answer.contains("Error") || answer.contains("Invalid") || answer.contains("error") {
            return Err(format!(
                "{}: the reference refused `{cmd}`: {}",
                stf.display(),
                answer.trim()
            ));
        }
    }
    Ok(rewrite(&text, &steps, &obs))
}
