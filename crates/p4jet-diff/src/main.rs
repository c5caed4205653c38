//! `p4jet-diff`: p4jet against bmv2 simple_switch.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use p4jet_diff::cli::StockCli;
use p4jet_diff::expect::expect_stf;
use p4jet_diff::switch::SwitchSpec;

#[derive(Parser)]
#[command(name = "p4jet-diff", version, about = "p4jet against bmv2 simple_switch")]
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
}

fn main() -> ExitCode {
    let args = Args::parse();
    let r = match args.cmd {
        Cmd::Expect {
            common,
            program,
            tests,
            write,
            log,
        } => (|| -> Result<(), String> {
            let cli = StockCli::locate(common.cli.as_deref())?;
            let mut spec = SwitchSpec::bmv2(&common.reference);
            spec.log = log;
            for t in &tests {
                let stem = t.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
                let dir = common.work.join(format!("expect-{stem}"));
                let text = expect_stf(&spec, &cli, &program, t, &dir)?;
                if write {
                    std::fs::write(t, &text).map_err(|e| format!("{}: {e}", t.display()))?;
                    eprintln!("wrote {}", t.display());
                } else {
                    print!("{text}");
                }
            }
            Ok(())
        })(),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("p4jet-diff: {e}");
            ExitCode::from(1)
        }
    }
}
