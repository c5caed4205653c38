//! `p4jet`: a programmable P4 software switch that runs p4c's bmv2 JSON with the
//! behaviour of bmv2 `simple_switch`.
#![forbid(unsafe_code)]

mod bench;
mod cli_cmd;
mod cpu_port;
mod engine;
mod forward;
mod fuzz;
mod grpc;
mod logfile;
mod metrics;
mod model;
mod paths;
mod report;
mod run;
mod stf;
mod suite;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "p4jet",
    version,
    about = "P4 software switch: runs p4c bmv2 JSON like simple_switch, faster"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once
enum Cmd {
    /// Run a program on ports (simple_switch's command line).
    Run(run::RunArgs),
    /// Run STF tests against a program.
    Stf(stf::StfArgs),
    /// Measure forwarding speed on an in-memory trace.
    Bench(bench::BenchArgs),
    /// simple_switch_CLI: control a running switch over Thrift.
    Cli(cli_cmd::CliArgs),
    /// Generate a benchmark trace and matching table commands.
    Gen(p4jet_gen::GenArgs),
    /// Print a program's executable plan (the operations the engines run).
    Plan(engine::PlanArgs),
    /// Compare the three engines on random traffic and table entries.
    Fuzz(fuzz::FuzzArgs),
    /// Predict a program's speed and latency from its structure and this machine's
    /// calibrated costs (`--calibrate` measures them).
    Model(model::ModelArgs),
}

fn main() -> ExitCode {
    // `simple_switch ...` (a symlink or copy named simple_switch) behaves like `p4jet run ...`
    let mut args: Vec<String> = std::env::args().collect();
    let argv0 = args
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
        .unwrap_or_default();
    // `simple_switch_grpc ...` is the same with the P4Runtime server
    if argv0 == "simple_switch" {
        args.insert(1, "run".into());
    } else if argv0 == "simple_switch_grpc" {
        args.insert(1, "run".into());
        args.insert(2, "--p4runtime".into());
    }
    let (ours, target) = run::split_target_options(&args);
    let cli = match Cli::try_parse_from(&ours) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let r = match cli.cmd {
        Cmd::Run(a) => run::main(a, &target),
        Cmd::Stf(a) => stf::main(a),
        Cmd::Bench(a) => bench::main(a),
        Cmd::Cli(a) => cli_cmd::main(a),
        Cmd::Gen(a) => p4jet_gen::main(a),
        Cmd::Plan(a) => engine::plan_main(a),
        Cmd::Fuzz(a) => fuzz::main(a),
        Cmd::Model(a) => model::main(a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("p4jet: {e}");
            ExitCode::from(1)
        }
    }
}
