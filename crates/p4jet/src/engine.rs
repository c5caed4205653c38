//! Engine selection (`--engine`) and `p4jet plan`, which prints a program's executable
//! plan: the operations the engines run.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use p4jet_engine::{EngineConfig, EngineKind};

/// The engine used when `--engine` is not given: `jit` where Cranelift generates code
/// for the host (x86-64, aarch64), else `interp`.
pub fn default_engine() -> EngineKind {
    if p4jet_jit::supported() {
        EngineKind::Jit
    } else {
        EngineKind::Interp
    }
}

/// `p4jet plan` options.
#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The bmv2 JSON program.
    pub program: PathBuf,
    /// Whose plan: `reference` (no fusion) or `interp`/`jit` (the fused plan).
    #[arg(long = "engine", default_value_t = EngineKind::Interp)]
    pub engine: EngineKind,
}

/// `p4jet plan`: prints the plan.
pub fn plan_main(a: PlanArgs) -> Result<ExitCode, String> {
    let json = std::fs::read_to_string(&a.program)
        .map_err(|e| format!("reading {}: {e}", a.program.display()))?;
    let cfg = EngineConfig {
        engine: a.engine,
        ..EngineConfig::default()
    };
    let e = p4jet_engine::load(&json, cfg).map_err(|e| format!("{}: {e}", a.program.display()))?;
    let text = e.plan().display(&e.prog).to_string();
    // a closed pipe (`| head`) ends the output quietly
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(ExitCode::SUCCESS),
    }
}
