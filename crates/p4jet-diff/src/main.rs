//! `p4jet-diff`: p4jet against bmv2 simple_switch. See docs/differential.md.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use p4jet_diff::cli::StockCli;
use p4jet_diff::diff::{DiffConfig, Summary, corpus_seeds, run, summary_table};
use p4jet_diff::expect::expect_stf;
use p4jet_diff::switch::SwitchSpec;

#[derive(Parser)]
#[command(
    name = "p4jet-diff",
    version,
    about = "p4jet against bmv2 simple_switch"
)]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

/// Options common to every subcommand.
#[derive(clap::Args, Debug)]
struct Common {
    /// The reference simple_switch.
    #[arg(long, default_value = "../shared/reference/bin/simple_switch")]
    reference: PathBuf,
    /// The stock simple_switch_CLI (default: $P4JET_SSCLI, then PATH).
    #[arg(long)]
    cli: Option<PathBuf>,
    /// Working directory (pcap FIFOs, logs).
    #[arg(long, default_value = "target/p4jet-diff")]
    work: PathBuf,
}

/// Options of differential runs.
#[derive(clap::Args, Debug)]
struct RunOpts {
    /// The p4jet binary (default: `p4jet` next to this program).
    #[arg(long)]
    p4jet: Option<PathBuf>,
    /// Frames per chunk (one pair of switch runs with fresh random entries).
    #[arg(long, default_value_t = 20_000)]
    chunk: usize,
    /// Seed (chunk i uses seed + i).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// First chunk number.
    #[arg(long, default_value_t = 0)]
    first_chunk: usize,
    /// Write minimised differences as STF tests into DIR.
    #[arg(long, value_name = "DIR")]
    found: Option<PathBuf>,
    /// Most differences to minimise per program.
    #[arg(long, default_value_t = 3)]
    max_minimize: usize,
    /// Ports 0..N are opened and receive frames.
    #[arg(long, default_value_t = 8)]
    ports: u32,
    /// Keep per-packet logs of both switches and every chunk's working directory
    /// (slow; for looking into a difference).
    #[arg(long)]
    log: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// Play STF tests on the reference and print them with its outputs as expectations.
    Expect {
        #[command(flatten)]
        common: Common,
        /// The bmv2 JSON program.
        program: PathBuf,
        /// STF tests.
        #[arg(required = true)]
        tests: Vec<PathBuf>,
        /// Overwrite each test in place instead of printing it.
        #[arg(long)]
        write: bool,
        /// Keep bmv2's per-packet log (switch.txt in the working directory).
        #[arg(long)]
        log: bool,
    },
    /// Compare p4jet with bmv2 on one program.
    Run {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        opts: RunOpts,
        /// The bmv2 JSON program.
        program: PathBuf,
        /// Chunks to run.
        #[arg(long, default_value_t = 1)]
        chunks: usize,
        /// simple_switch_CLI commands used instead of random entries in every third chunk.
        #[arg(long)]
        commands: Option<PathBuf>,
        /// Directories whose STF packets are mutated (default: the program's `tests`).
        #[arg(long)]
        seeds: Vec<PathBuf>,
    },
    /// Compare p4jet with bmv2 on every program of a corpus directory.
    Corpus {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        opts: RunOpts,
        /// The corpus (NAME/NAME.json, NAME/NAME.commands, NAME/tests/*.stf).
        #[arg(long, default_value = "tests/corpus")]
        corpus: PathBuf,
        /// Frames per program.
        #[arg(long, default_value_t = 20_000)]
        frames: usize,
        /// Only these programs.
        #[arg(long)]
        only: Vec<String>,
    },
}

fn default_p4jet() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("p4jet")))
        .unwrap_or_else(|| PathBuf::from("p4jet"))
}

fn config(
    common: &Common,
    opts: &RunOpts,
    program: &Path,
    chunks: usize,
    commands: Option<PathBuf>,
    seeds: Vec<Vec<u8>>,
) -> Result<DiffConfig, String> {
    let cli = StockCli::locate(common.cli.as_deref())?;
    let p4jet = opts.p4jet.clone().unwrap_or_else(default_p4jet);
    let mut reference = SwitchSpec::bmv2(&common.reference);
    let mut p4jet = SwitchSpec::p4jet(&p4jet);
    reference.log = opts.log;
    p4jet.log = opts.log;
    Ok(DiffConfig {
        keep: opts.log,
        program: program.to_path_buf(),
        commands,
        seeds,
        chunk: opts.chunk,
        chunks,
        first_chunk: opts.first_chunk,
        seed: opts.seed,
        reference,
        p4jet,
        cli,
        work: common.work.clone(),
        found: opts.found.clone(),
        max_minimize: opts.max_minimize,
        ports: opts.ports,
    })
}

fn print_summary(name: &str, s: &Summary) {
    println!(
        "{name}: {} frames ({} valid, {} mutated corpus, {} mutated valid, {} random), \
         {} sent by bmv2, {} chunks, {} with unexplained differences, {} only reordered, \
         {} only stale ({} inputs), {} only bmv2's timing, {:.0} s",
        s.frames,
        s.kinds[0],
        s.kinds[1],
        s.kinds[2],
        s.kinds[3],
        s.frames_out,
        s.chunks,
        s.chunks_differing,
        s.chunks_reordered,
        s.chunks_stale,
        s.stale_inputs,
        s.chunks_timing,
        s.seconds
    );
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut log = |l: &str| eprintln!("{l}");
    let r = match args.cmd {
        Cmd::Expect {
            common,
            program,
            tests,
            write,
            log: keep_log,
        } => (|| -> Result<bool, String> {
            let cli = StockCli::locate(common.cli.as_deref())?;
            let mut spec = SwitchSpec::bmv2(&common.reference);
            spec.log = keep_log;
            for t in &tests {
                let stem = t
                    .file_stem()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_default();
                let dir = common.work.join(format!("expect-{stem}"));
                let text = expect_stf(&spec, &cli, &program, t, &dir)?;
                if write {
                    std::fs::write(t, &text).map_err(|e| format!("{}: {e}", t.display()))?;
                    eprintln!("wrote {}", t.display());
                } else {
                    print!("{text}");
                }
            }
            Ok(true)
        })(),
        Cmd::Run {
            common,
            opts,
            program,
            chunks,
            commands,
            seeds,
        } => (|| -> Result<bool, String> {
            let seed_dirs = if seeds.is_empty() {
                program
                    .parent()
                    .map(|d| vec![d.join("tests")])
                    .unwrap_or_default()
            } else {
                seeds
            };
            let frames: Vec<Vec<u8>> = seed_dirs
                .iter()
                .flat_map(|d| p4jet_diff::generate::stf_seeds(d))
                .collect();
            let cfg = config(&common, &opts, &program, chunks, commands, frames)?;
            let s = run(&cfg, &mut log)?;
            print_summary(&program.display().to_string(), &s);
            Ok(s.chunks_differing == 0)
        })(),
        Cmd::Corpus {
            common,
            opts,
            corpus,
            frames,
            only,
        } => (|| -> Result<bool, String> {
            let mut dirs: Vec<PathBuf> = std::fs::read_dir(&corpus)
                .map_err(|e| format!("{}: {e}", corpus.display()))?
                .flatten()
                .map(|d| d.path())
                .filter(|p| {
                    let n = p.file_name().map(|n| n.to_string_lossy().to_string());
                    n.as_ref()
                        .is_some_and(|n| p.join(format!("{n}.json")).is_file())
                        && (only.is_empty() || n.is_some_and(|n| only.contains(&n)))
                })
                .collect();
            dirs.sort();
            let mut rows = BTreeMap::new();
            let mut ok = true;
            for d in dirs {
                let name = d
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default();
                let program = d.join(format!("{name}.json"));
                let commands = Some(d.join(format!("{name}.commands"))).filter(|c| c.is_file());
                let chunks = frames.div_ceil(opts.chunk).max(1);
                let cfg = config(&common, &opts, &program, chunks, commands, corpus_seeds(&d))?;
                let s = run(&cfg, &mut log)?;
                print_summary(&name, &s);
                ok &= s.chunks_differing == 0;
                rows.insert(name, s);
            }
            println!("{}", summary_table(&rows));
            Ok(ok)
        })(),
    };
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("p4jet-diff: {e}");
            ExitCode::from(2)
        }
    }
}
