//! A scenario: control-plane commands, frames, synchronisation points and counter
//! reads, played against one switch; what the switch did is an [`Observed`].

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::cli::{StockCli, split_answers};
use crate::switch::{Running, SwitchSpec};

/// One step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A simple_switch_CLI command; `name` is the STF name given to the entry it adds.
    Cli {
        /// The command line.
        command: String,
        /// `add ... = NAME`.
        name: Option<String>,
    },
    /// A frame into a port.
    Packet {
        /// Ingress port.
        port: u32,
        /// The frame.
        data: Vec<u8>,
    },
    /// Let the switch finish everything sent so far (STF `wait`).
    Sync,
    /// Read a counter cell after everything sent so far: `counter_read NAME INDEX`,
    /// the index a number or (direct counters) a named entry's handle.
    ReadCounter {
        /// Counter name as the CLI takes it.
        counter: String,
        /// Index or entry name.
        index: CounterRef,
    },
}

/// A counter index: a number, or the handle of an entry named in an `add`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CounterRef {
    /// A number.
    Index(u64),
    /// An entry name.
    Entry(String),
}

/// A counter cell read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterValue {
    /// Packets.
    pub packets: u64,
    /// Bytes.
    pub bytes: u64,
}

/// What a switch did in a scenario.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Frames sent per port, in order.
    pub outputs: BTreeMap<u32, Vec<Vec<u8>>>,
    /// With [`Options::attribute`]: the frames each packet step produced (port,
    /// frame), in step order of the packets.
    pub per_packet: Vec<Vec<(u32, Vec<u8>)>>,
    /// Every command with the CLI's answer.
    pub answers: Vec<(String, String)>,
    /// Every `ReadCounter` in order (None when the read failed).
    pub counters: Vec<Option<CounterValue>>,
    /// Final state reads (`Options::final_reads`) with their answers.
    pub final_reads: Vec<(String, String)>,
}

/// How to play a scenario.
#[derive(Debug, Clone)]
pub struct Options {
    /// Ports to open (frames to other ports are lost, as on a real switch).
    pub ports: Vec<u32>,
    /// Wait for the switch to be idle after every packet, to know which frames each
    /// packet produced (only with a single input port).
    pub attribute: bool,
    /// CLI commands run once everything is finished (counter and register reads).
    pub final_reads: Vec<String>,
    /// Extra simple_switch options.
    pub extra: Vec<String>,
    /// Device id.
    pub device_id: u32,
    /// Idle window and limit for synchronisation.
    pub idle_window: Duration,
    /// Longest wait for the switch to go idle.
    pub idle_limit: Duration,
    /// Feed frames in slices of this many and wait for the switch to go idle after
    /// each, so that few are ever in flight (bmv2 drops resubmitted and recirculated
    /// packets when their 1,024-packet queue is full, which depends on its threads'
    /// timing).
    pub pace: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            ports: (0..8).collect(),
            attribute: false,
            final_reads: vec![],
            extra: vec![],
            device_id: 0,
            idle_window: Duration::from_millis(300),
            idle_limit: Duration::from_secs(600),
            pace: None,
        }
    }
}

/// The handle printed by `table_add` / `table_indirect_add*`.
fn added_handle(answer: &str) -> Option<u64> {
    answer
        .lines()
        .find_map(|l| l.trim().strip_prefix("Entry has been added with handle "))
        .and_then(|h| h.trim().parse().ok())
}

/// Parses `NAME[IDX]=  (B bytes, P packets)`.
pub fn parse_counter(answer: &str) -> Option<CounterValue> {
    let l = answer
        .lines()
        .find(|l| l.contains("bytes") && l.contains("packets"))?;
    let inner = l.split('(').nth(1)?.split(')').next()?;
    let mut bytes = None;
    let mut packets = None;
    for part in inner.split(',') {
        let mut w = part.split_whitespace();
        let n = w.next()?.parse::<u64>().ok()?;
        match w.next()? {
            "bytes" => bytes = Some(n),
            "packets" => packets = Some(n),
            _ => {}
        }
    }
    Some(CounterValue {
        packets: packets?,
        bytes: bytes?,
    })
}

/// Plays `steps` on a fresh switch started by `spec` in `dir`.
pub fn play(
    spec: &SwitchSpec,
    cli: &StockCli,
    program: &Path,
    steps: &[Step],
    dir: &Path,
    opts: &Options,
) -> Result<Observed, String> {
    let mut ports = opts.ports.clone();
    for s in steps {
        if let Step::Packet { port, .. } = s {
            ports.push(*port);
        }
    }
    ports.sort_unstable();
    ports.dedup();
    let inputs: Vec<u32> = {
        let mut v: Vec<u32> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Packet { port, .. } => Some(*port),
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let first_packet = steps
        .iter()
        .position(|s| matches!(s, Step::Packet { .. }))
        .unwrap_or(steps.len());
    let syncs_after_packets = steps[first_packet..]
        .iter()
        .any(|s| !matches!(s, Step::Packet { .. }));
    if inputs.len() > 1 && (syncs_after_packets || opts.attribute) {
        return Err(format!(
            "frames enter on {} ports and the scenario synchronises between them: \
             simple_switch's pcap reader merges its inputs and waits for every open \
             one, so only single-port scenarios can be synchronised",
            inputs.len()
        ));
    }
    let mut sw = Running::start(spec, dir, program, &ports, opts.device_id, &opts.extra)?;
    let mut obs = Observed::default();
    let mut names: BTreeMap<String, u64> = BTreeMap::new();
    let idle = |sw: &mut Running| sw.wait_idle(opts.idle_window, opts.idle_limit);
    let snapshot = |sw: &Running| -> BTreeMap<u32, usize> {
        sw.ports()
            .iter()
            .map(|p| (*p, sw.output(*p).len()))
            .collect()
    };
    let mut i = 0;
    let mut closed_idle_inputs = false;
    while i < steps.len() {
        match &steps[i] {
            Step::Cli { .. } => {
                let mut cmds = vec![];
                while let Some(Step::Cli { command, name }) = steps.get(i) {
                    cmds.push((command.clone(), name.clone()));
                    i += 1;
                }
                let text: String = cmds.iter().map(|(c, _)| format!("{c}\n")).collect();
                let out = cli.run(sw.thrift_port, &text)?;
                let answers = split_answers(&out);
                for (k, (c, name)) in cmds.into_iter().enumerate() {
                    let a = answers.get(k).cloned().unwrap_or_default();
                    if let Some(n) = name
                        && let Some(h) = added_handle(&a)
                    {
                        names.insert(n.clone(), h);
                    }
                    obs.answers.push((c, a));
                }
            }
            Step::Packet { .. } => {
                if !closed_idle_inputs {
                    // ports that never receive a frame: end of file now, so that
                    // the reader does not wait for them
                    let idle_ports: Vec<u32> = ports
                        .iter()
                        .copied()
                        .filter(|p| !inputs.contains(p))
                        .collect();
                    sw.close_inputs(&idle_ports)?;
                    closed_idle_inputs = true;
                }
                if opts.attribute {
                    let Step::Packet { port, data } = &steps[i] else {
                        unreachable!()
                    };
                    let before = snapshot(&sw);
                    sw.send(&[(*port, data.clone())])?;
                    idle(&mut sw)?;
                    let mut produced = vec![];
                    for (p, n) in before {
                        for f in sw.output(p).into_iter().skip(n) {
                            produced.push((p, f));
                        }
                    }
                    obs.per_packet.push(produced);
                    i += 1;
                } else {
                    let mut batch = vec![];
                    while let Some(Step::Packet { port, data }) = steps.get(i) {
                        batch.push((*port, data.clone()));
                        i += 1;
                    }
                    match opts.pace {
                        Some(n) => {
                            // a short window: the point is to bound what is in
                            // flight, not to know that everything is done
                            for slice in batch.chunks(n.max(1)) {
                                sw.send(slice)?;
                                sw.wait_idle(Duration::from_millis(100), opts.idle_limit)?;
                            }
                        }
                        None => sw.send(&batch)?,
                    }
                }
            }
            Step::Sync => {
                idle(&mut sw)?;
                i += 1;
            }
            Step::ReadCounter { counter, index } => {
                idle(&mut sw)?;
                let idx = match index {
                    CounterRef::Index(n) => Some(*n),
                    CounterRef::Entry(e) => names.get(e).copied(),
                };
                let v = match idx {
                    Some(idx) => {
                        let out =
                            cli.run(sw.thrift_port, &format!("counter_read {counter} {idx}\n"))?;
                        parse_counter(&out)
                    }
                    None => None,
                };
                obs.counters.push(v);
                i += 1;
            }
        }
    }
    sw.close_all_inputs()?;
    idle(&mut sw)?;
    if !opts.final_reads.is_empty() {
        let text: String = opts.final_reads.iter().map(|c| format!("{c}\n")).collect();
        let out = cli.run(sw.thrift_port, &text)?;
        let answers = split_answers(&out);
        for (k, c) in opts.final_reads.iter().enumerate() {
            obs.final_reads
                .push((c.clone(), answers.get(k).cloned().unwrap_or_default()));
        }
    }
    for p in sw.ports().to_vec() {
        let f = sw.output(p);
        if !f.is_empty() {
            obs.outputs.insert(p, f);
        }
    }
    sw.stop()?;
    Ok(obs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_answers_parse() {
        let v = parse_counter("c[3]=  (120 bytes, 2 packets)\n").unwrap();
        assert_eq!(
            v,
            CounterValue {
                packets: 2,
                bytes: 120
            }
        );
        assert_eq!(parse_counter("Invalid counter operation"), None);
    }

    #[test]
    fn handles_parse() {
        assert_eq!(
            added_handle(
                "Adding entry to exact match table t\nEntry has been added with handle 7\n"
            ),
            Some(7)
        );
    }
}
