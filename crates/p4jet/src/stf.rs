//! `p4jet stf`: runs STF tests (p4c's bmv2 STF format plus the corpus extensions) against
//! a program, in process, with a clock held still. Only rate-limited queues
//! (`set_queue_rate`) move it: once a packet is processed, the clock jumps to each
//! departure time of the packets they hold, so that they leave in order, paced.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use clap::Args;
use p4jet_control::cli::Cli;
use p4jet_control::stf::{
    CompareOptions, CounterIndex, CounterKind, Expectations, StfKind, StfOptions,
    added_entry_handle, compare, compare_digests, parse_stf,
};
use p4jet_runtime::Schema;
use p4jet_switch::{EgressStage, IngressStage, Switch, SwitchConfig};
use p4jet_thrift::Bmv2;

use crate::run::Mode;

/// How the STF runner forwards: the switch's own worker, or a pipelined worker whose
/// egress stage runs on a second thread.
enum Fwd<'s> {
    Rtc,
    Pipeline {
        ingress: Box<IngressStage>,
        egress: std::thread::ScopedJoinHandle<'s, EgressStage>,
    },
}

/// `p4jet stf` options.
#[derive(Args, Debug)]
pub struct StfArgs {
    /// The bmv2 JSON program.
    pub program: PathBuf,
    /// STF files.
    #[arg(required = true)]
    pub tests: Vec<PathBuf>,
    /// Also fail on frames sent to ports the test never names (the corpus's strict
    /// runner had ports 0..7 open).
    #[arg(long)]
    pub strict_ports: bool,
    /// Accept only what p4c's bmv2 STF driver accepts (no CLI pass-through extensions).
    #[arg(long)]
    pub p4c_only: bool,
    /// Print the per-packet trace of failing tests.
    #[arg(short, long)]
    pub verbose: bool,
    /// `rtc`: one worker runs every stage (as simple_switch's tests expect);
    /// `pipeline`: the ingress and egress stages run on two threads joined by rings
    /// (to check that the split changes nothing).
    #[arg(long = "mode", value_enum, default_value_t = Mode::Rtc)]
    pub mode: Mode,
    /// The engine: `reference` (the plain reading of the program), `interp` (the fused
    /// plan, interpreted) or `jit` (compiled to native code).
    #[arg(long = "engine", default_value_t = crate::engine::default_engine())]
    pub engine: p4jet_engine::EngineKind,
}

/// Outcome of one STF file.
pub struct StfOutcome {
    /// Passed.
    pub passed: bool,
    /// What went wrong (empty when passed).
    pub report: String,
    /// Trace of the run (when tracing).
    pub trace: Vec<String>,
}

/// Runs one STF text against a program.
pub fn run_stf(
    json: &str,
    text: &str,
    strict_ports: bool,
    extensions: bool,
    trace: bool,
    mode: Mode,
    engine: p4jet_engine::EngineKind,
) -> Result<StfOutcome, String> {
    let program = Schema::shared_from_json(json).map_err(|e| e.to_string())?;
    let stmts = match parse_stf(text, &program, &StfOptions { extensions }) {
        Ok(s) => s,
        Err(errs) => {
            let mut r = String::new();
            for e in errs {
                let _ = writeln!(r, "  {e}");
            }
            return Ok(StfOutcome {
                passed: false,
                report: r,
                trace: vec![],
            });
        }
    };
    let clock = Arc::new(AtomicU64::new(0));
    let cfg = SwitchConfig {
        manual_clock: Some(clock),
        trace,
        batch: 1,
        engine,
        ..SwitchConfig::default()
    };
    let mut sw = Switch::new(json, cfg)?;
    let mut cli = Cli::from_schema(program);
    let actual: Mutex<BTreeMap<u32, Vec<Vec<u8>>>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|sc| {
        let fwd = match mode {
            Mode::Rtc => Fwd::Rtc,
            Mode::Pipeline => {
                let (ingress, mut egress) = sw.new_pipeline(64);
                let actual = &actual;
                let egress = sc.spawn(move || {
                    egress.run(&mut |p, f| {
                        if let Ok(mut a) = actual.lock() {
                            a.entry(p).or_default().push(f.to_vec());
                        }
                    });
                    egress
                });
                Fwd::Pipeline {
                    ingress: Box::new(ingress),
                    egress,
                }
            }
        };
        run_statements(&mut sw, &mut cli, &stmts, fwd, &actual, strict_ports)
    })
}

/// The STF statements against `sw`, then the comparison.
fn run_statements(
    sw: &mut Switch,
    cli: &mut Cli,
    stmts: &[p4jet_control::stf::StfStatement],
    mut fwd: Fwd<'_>,
    actual: &Mutex<BTreeMap<u32, Vec<Vec<u8>>>>,
    strict_ports: bool,
) -> Result<StfOutcome, String> {
    let mut names: HashMap<String, i32> = HashMap::new();
    let mut report = String::new();
    let mut failed = false;
    for s in stmts {
        match &s.kind {
            StfKind::Cli {
                command,
                entry_name,
            } => match cli.execute(sw, command) {
                Ok(out) => {
                    if let Some(n) = entry_name
                        && let Some(h) = added_entry_handle(&out)
                    {
                        names.insert(n.clone(), h);
                    }
                }
                Err(e) => {
                    failed = true;
                    let _ = writeln!(
                        report,
                        "  line {}: `{command}` failed: {}",
                        s.line,
                        e.printed().trim_end()
                    );
                }
            },
            StfKind::Packet { port, data } => match &mut fwd {
                Fwd::Rtc => {
                    sw.inject(*port, data);
                    let mut tx = |p: u32, f: &[u8]| {
                        if let Ok(mut a) = actual.lock() {
                            a.entry(p).or_default().push(f.to_vec());
                        }
                    };
                    sw.run_until_idle(&mut tx);
                    // packets of rate-limited queues (set_queue_rate): the held clock
                    // jumps to each departure time in turn
                    while let Some(t) = sw.next_due_us() {
                        let before = (sw.clock.now_us(), sw.worker.pending());
                        sw.clock.advance_to(t);
                        sw.run_until_idle(&mut tx);
                        if (sw.clock.now_us(), sw.worker.pending()) == before {
                            break;
                        }
                    }
                }
                Fwd::Pipeline { ingress, .. } => {
                    ingress.inject(*port, data);
                    let stopped = |_| "the egress stage stopped".to_string();
                    ingress.run_until_idle().map_err(stopped)?;
                    while let Some(t) = ingress.next_due_us() {
                        let before = (sw.clock.now_us(), ingress.pending());
                        sw.clock.advance_to(t);
                        ingress.run_until_idle().map_err(stopped)?;
                        if (sw.clock.now_us(), ingress.pending()) == before {
                            break;
                        }
                    }
                }
            },
            StfKind::CheckCounter(c) => {
                let idx = match &c.index {
                    CounterIndex::Number(n) => Some(*n as i32),
                    CounterIndex::Entry(name) => names.get(name).copied(),
                };
                let Some(idx) = idx else {
                    failed = true;
                    let _ = writeln!(
                        report,
                        "  line {}: check_counter: unknown entry name",
                        s.line
                    );
                    continue;
                };
                let mut b = Bmv2::new(sw);
                let v = match &c.direct_table {
                    Some(t) => b.bm_mt_read_counter(t, idx).map_err(|e| e.to_string()),
                    None => b
                        .bm_counter_read(&c.counter, idx)
                        .map_err(|e| e.to_string()),
                };
                match v {
                    Ok(v) => {
                        let (what, got) = match c.kind {
                            Some(CounterKind::Bytes) => ("bytes", v.bytes),
                            Some(CounterKind::Packets) | None => ("packets", v.packets),
                        };
                        let ok = c.op.holds(got, c.value)
                            && (c.kind.is_some() || c.op.holds(v.bytes, c.value));
                        if !ok {
                            failed = true;
                            let _ = writeln!(
                                report,
                                "  line {}: check_counter {}({}) {what} {} {}: counter is {got}",
                                s.line,
                                c.counter,
                                idx,
                                c.op.as_str(),
                                c.value
                            );
                        }
                    }
                    Err(e) => {
                        failed = true;
                        let _ = writeln!(
                            report,
                            "  line {}: check_counter {}: {e}",
                            s.line, c.counter
                        );
                    }
                }
            }
            StfKind::Expect { .. }
            | StfKind::ExpectDigest { .. }
            | StfKind::NoPacket
            | StfKind::Wait
            | StfKind::RemoveAll => {}
        }
    }
    let mut errors = std::mem::take(&mut sw.worker.core.errors);
    let mut trace = std::mem::take(&mut sw.worker.core.trace_out);
    if let Fwd::Pipeline {
        mut ingress,
        egress,
    } = fwd
    {
        ingress.close();
        let mut egress = egress
            .join()
            .map_err(|_| "the egress stage panicked".to_string())?;
        for core in [ingress.core_mut(), egress.core_mut()] {
            errors.append(&mut core.errors);
            trace.append(&mut core.trace_out);
        }
    }
    let actual = match actual.lock() {
        Ok(a) => a.clone(),
        Err(p) => p.into_inner().clone(),
    };
    let exp = Expectations::from_statements(stmts);
    let cmp = compare(&exp, &actual, CompareOptions { strict_ports });
    let mut ok = cmp.passed() && !failed;
    if !cmp.passed() {
        let _ = write!(report, "{cmp}");
    }
    let digests: Vec<(i64, Vec<u8>)> = sw
        .digests
        .lock()
        .map(|d| {
            d.history
                .iter()
                .map(|m| (m.list_id as i64, m.sample.clone()))
                .collect()
        })
        .unwrap_or_default();
    if !exp.digests.is_empty()
        || stmts
            .iter()
            .any(|s| matches!(s.kind, StfKind::ExpectDigest { .. }))
    {
        let dp = compare_digests(&exp.digests, &digests);
        if !dp.is_empty() {
            ok = false;
            let show = |d: &Option<(i64, Vec<u8>)>| match d {
                Some((id, b)) => format!(
                    "list {id} {}",
                    b.iter().map(|x| format!("{x:02X}")).collect::<String>()
                ),
                None => "nothing".to_string(),
            };
            for p in dp {
                let _ = writeln!(
                    report,
                    "  digest #{}: expected {}, got {}",
                    p.index,
                    show(&p.expected),
                    show(&p.actual)
                );
            }
        }
    }
    for e in errors {
        let _ = writeln!(report, "  note: {e}");
    }
    Ok(StfOutcome {
        passed: ok,
        report,
        trace,
    })
}

/// `p4jet stf`.
pub fn main(a: StfArgs) -> Result<ExitCode, String> {
    let json = std::fs::read_to_string(&a.program)
        .map_err(|e| format!("reading {}: {e}", a.program.display()))?;
    let (mut passed, mut failed) = (0, 0);
    for t in &a.tests {
        let text = match std::fs::read_to_string(t) {
            Ok(s) => s,
            Err(e) => {
                println!("FAIL {}: {e}", t.display());
                failed += 1;
                continue;
            }
        };
        let out = run_stf(
            &json,
            &text,
            a.strict_ports,
            !a.p4c_only,
            a.verbose,
            a.mode,
            a.engine,
        )
        .map_err(|e| format!("{}: {e}", a.program.display()))?;
        if out.passed {
            println!("PASS {}", t.display());
            passed += 1;
        } else {
            println!("FAIL {}", t.display());
            print!("{}", out.report);
            if a.verbose {
                for l in &out.trace {
                    println!("    | {l}");
                }
            }
            failed += 1;
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
