//! `p4jet-fuzz`: fuzz campaigns against p4jet (see docs/reliability.md).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use p4jet_fuzz::harness::Report;
use p4jet_fuzz::{cli, corpus, frames, json, p4rt, thrift};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Target {
    /// Frames through every corpus program.
    Frames,
    /// Mutated JSON programs through the loader.
    Json,
    /// simple_switch_CLI command lines.
    Cli,
    /// Thrift messages against the runtime API.
    Thrift,
    /// P4Runtime messages against the P4Runtime device (and its gRPC server).
    P4rt,
}

#[derive(Parser)]
#[command(name = "p4jet-fuzz", version, about = "Fuzz campaigns against p4jet")]
struct Args {
    /// What to fuzz.
    target: Target,
    /// Cases to run (frames, documents, commands or messages), spread over the programs.
    #[arg(short = 'n', long, default_value_t = 100_000)]
    iterations: u64,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Corpus directory (NAME/NAME.json, NAME.commands, tests/*.stf).
    #[arg(long, default_value = "tests/corpus")]
    corpus: PathBuf,
    /// Only these programs.
    #[arg(long)]
    only: Vec<String>,
    /// Where crashing and hanging cases are saved.
    #[arg(long, default_value = "target/fuzz-crashes")]
    crashes: PathBuf,
    /// A case running longer than this is a hang (seconds).
    #[arg(long, default_value_t = 20)]
    hang_limit: u64,
}

fn main() -> ExitCode {
    let a = Args::parse();
    let programs = match corpus::load(&a.corpus, &a.only) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("p4jet-fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    let limit = Duration::from_secs(a.hang_limit);
    let r: Report = match a.target {
        Target::Frames => frames::campaign(&programs, a.iterations, a.seed, &a.crashes, limit),
        Target::Json => json::campaign(&programs, a.iterations, a.seed, &a.crashes, limit),
        Target::Cli => cli::campaign(&programs, a.iterations, a.seed, &a.crashes, limit),
        Target::Thrift => thrift::campaign(&programs, a.iterations, a.seed, &a.crashes, limit),
        Target::P4rt => p4rt::campaign(&programs, a.iterations, a.seed, &a.crashes, limit),
    };
    println!("{r}");
    if r.panics.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
