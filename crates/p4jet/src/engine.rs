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

/// A line saying which engine runs a program and, for compiled code, how long the
/// compilation took (the `run` start-up line, `bench`).
pub fn describe(e: &p4jet_engine::Engine) -> String {
    match (e.cfg.engine, e.native()) {
        (EngineKind::Jit, Some(n)) => {
            let s = n.stats();
            let cpu = s
                .compile_cpu
                .map(|c| format!(", {:.1} ms of CPU", c.as_secs_f64() * 1e3))
                .unwrap_or_default();
            format!(
                "jit: compiled to native code in {:.1} ms{cpu} ({} functions, {} bytes)",
                s.compile_time.as_secs_f64() * 1e3,
                s.functions,
                s.code_bytes
            )
        }
        (EngineKind::Jit, None) => "jit: not compiled, the plan is interpreted".into(),
        (k, _) => format!("{k}: the plan is interpreted"),
    }
}

/// Compile time of `e`'s native code in ms, wall clock and CPU (0 when interpreted).
pub fn compile_ms(e: &p4jet_engine::Engine) -> (f64, f64) {
    e.native().map_or((0.0, 0.0), |n| {
        let s = n.stats();
        (
            s.compile_time.as_secs_f64() * 1e3,
            s.compile_cpu.unwrap_or(s.compile_time).as_secs_f64() * 1e3,
        )
    })
}

/// `p4jet plan` options.
#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The bmv2 JSON program.
    pub program: PathBuf,
    /// Whose plan: `reference` (no fusion) or `interp`/`jit` (the fused plan; `jit`
    /// also compiles it and prints the compile time and code size).
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
    let mut e =
        p4jet_engine::load(&json, cfg).map_err(|e| format!("{}: {e}", a.program.display()))?;
    let mut text = e.plan().display(&e.prog).to_string();
    if a.engine == EngineKind::Jit {
        // the plan compiled as a switch would: its time and size
        if let Err(err) = p4jet_jit::attach(&mut e) {
            text.push_str(&format!("\nnot compiled: {err}\n"));
        }
        text.push_str(&format!("\n{}\n", describe(&e)));
    }
    // a closed pipe (`| head`) ends the output quietly
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(ExitCode::SUCCESS),
    }
}
