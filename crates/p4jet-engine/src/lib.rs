//! The p4jet engine: runs a lowered program over batches of packets.
//!
//! A packet goes through the stages in this order, one file each:
//!
//! | stage | file | entry |
//! |---|---|---|
//! | the packet and its header vector | `packet.rs`, `phv.rs` | [`PacketCtx`], [`Phv`] |
//! | parser (and checksum verification) | `parse.rs` | [`Engine::parse`] |
//! | controls: the walk over the control graph | `control.rs` | [`Engine::run_control`] |
//! | table apply: keys, batched lookup, hit/miss | `table.rs` | (from the walk) |
//! | actions: planned steps and the primitive interpreter | `action.rs` | [`Engine::run_action`] |
//! | checksums (verify after parsing, update before deparsing) | `checksum.rs` | (from parse and deparse) |
//! | deparser | `deparse.rs` | [`Engine::deparse`] |
//!
//! What can be decided once per program is decided when it loads: [`plan`] holds every
//! load-time form (parser states as copies and 128-bit compares, conditions tested
//! without walking their expression, table keys as byte runs, action bodies as step
//! lists, checksums summed straight from the PHV); the stage files run those plans and
//! fall back to the general code (expression evaluation in `eval.rs`, hashes in
//! `hash.rs`) for everything else.
//!
//! The v1model architecture's part of the packet (standard metadata locations, the drop
//! port, clone/resubmit/recirculate/digest requests) is in `v1model.rs`; the traffic
//! manager, replication and the order of the after-ingress and after-egress decisions
//! live in `p4jet-switch`. Control-plane and extern state is in `state.rs`. The engine
//! does no I/O and reads no clock: time comes in as an argument.
#![forbid(unsafe_code)]

mod action;
mod checksum;
mod control;
mod copy;
mod deparse;
pub mod eval;
pub mod hash;
pub mod native;
mod packet;
mod parse;
pub mod phv;
pub mod plan;
pub mod state;
mod step;
mod table;
mod trace;
pub mod v1model;

use std::sync::Arc;

use num_bigint::BigInt;
use num_traits::ToPrimitive;
use p4jet_ir::Program;

pub use eval::EvalCtx;
pub use native::{Native, NativeStats, Passed};
pub use packet::{PacketCtx, Scratch, TableStats, level, trace_line, trace_text};
pub use phv::{Phv, Window64};
pub use plan::Plan;
pub use state::{ControlState, EntryAction, EntryValue, Externs, Op, OpResult};
pub use v1model::{ArchMeta, StandardMetadata, TraceId};

/// A packet as the stages pass it around: a boxed context (moves are pointer moves).
pub type Pkt = Box<PacketCtx>;

/// Most packets a control processes in one table-lookup batch.
pub const SUB_BATCH: usize = 64;

/// Default keys per stage of a batched table lookup ([`EngineConfig::sub_batch`]).
pub const DEFAULT_SUB_BATCH: usize = p4jet_tables::DEFAULT_PREFETCH_DISTANCE;

pub use p4jet_buf::{Frame, FrameRegion, HEADROOM, PacketBuf, Storage};

/// Which control block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlBlock {
    /// Ingress.
    Ingress,
    /// Egress.
    Egress,
}

/// Which engine runs a program (`--engine`): all three run the same plan and give the
/// same results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineKind {
    /// The reference plan ([`Plan::reference`]: the plain reading of the program, no
    /// fusion), interpreted: the oracle the others are checked against.
    Reference,
    /// The fused plan ([`Plan::fused`]), interpreted.
    #[default]
    Interp,
    /// The fused plan compiled to native code by `p4jet-jit` (interpreted until
    /// compiled code is attached: [`Engine::set_native`]).
    Jit,
}

impl EngineKind {
    /// Every engine, in the order above.
    pub const ALL: [EngineKind; 3] = [EngineKind::Reference, EngineKind::Interp, EngineKind::Jit];

    /// The engine's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Reference => "reference",
            EngineKind::Interp => "interp",
            EngineKind::Jit => "jit",
        }
    }

    /// The plan this engine runs.
    pub fn fusion(self) -> plan::Fusion {
        match self {
            EngineKind::Reference => plan::Fusion::None,
            EngineKind::Interp | EngineKind::Jit => plan::Fusion::All,
        }
    }
}

impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for EngineKind {
    type Err = String;

    fn from_str(s: &str) -> Result<EngineKind, String> {
        EngineKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown engine `{s}` (reference, interp or jit)"))
    }
}

/// Engine options.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Port number meaning "drop" (simple_switch `--drop-port`, default 511).
    pub drop_port: u32,
    /// Record a per-packet trace in [`PacketCtx::log`].
    pub trace: bool,
    /// Which engine: the plan it runs.
    pub engine: EngineKind,
    /// Keys per stage of a batched table lookup (hash or index them all, prefetch,
    /// resolve): the sub-batch, 1 to 64.
    pub sub_batch: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            drop_port: 511,
            trace: false,
            engine: EngineKind::default(),
            sub_batch: DEFAULT_SUB_BATCH,
        }
    }
}

/// Messages about run-time problems of the P4 program (bad indexes, failed asserts): they
/// are reported, the packet goes on, as in bmv2 release builds.
#[derive(Debug, Clone)]
pub struct Diag(pub String);

/// A loaded program ready to run.
pub struct Engine {
    /// The lowered program.
    pub prog: Arc<Program>,
    /// Options.
    pub cfg: EngineConfig,
    /// Where the standard metadata fields the switch reads and writes live.
    pub std_meta: StandardMetadata,
    /// The program's load-time forms.
    pub(crate) plan: Plan,
    /// The plan compiled to native code ([`EngineKind::Jit`], attached by
    /// [`Engine::set_native`]); the stages run it instead of interpreting the plan,
    /// except when tracing.
    native: Option<Box<dyn Native>>,
}

/// Loads a bmv2 JSON text into an engine.
pub fn load(json: &str, cfg: EngineConfig) -> Result<Engine, String> {
    let j = p4jet_json::parse(json).map_err(|e| e.to_string())?;
    let p = p4jet_ir::lower(&j).map_err(|e| e.to_string())?;
    Ok(Engine::new(Arc::new(p), cfg))
}

fn mask_of(width: u32) -> u128 {
    if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

/// Length in bytes of a header as it would be emitted now.
pub fn header_bytes(p: &Program, phv: &Phv, h: u32) -> u32 {
    let hi = &p.headers[h as usize];
    match hi.varbit_slot {
        Some(s) => (hi.fixed_bits + phv.varbit_bits[s as usize]).div_ceil(8),
        None => hi.max_bytes,
    }
}

impl Engine {
    /// Prepares a program for execution: plans it ([`Plan::new`]) for the engine
    /// `cfg.engine` runs.
    pub fn new(prog: Arc<Program>, cfg: EngineConfig) -> Engine {
        let plan = Plan::new(&prog, cfg.engine.fusion());
        Engine {
            std_meta: StandardMetadata::new(&prog),
            prog,
            cfg,
            plan,
            native: None,
        }
    }

    /// Attaches native code compiled from this engine's plan (`p4jet-jit`).
    pub fn set_native(&mut self, native: Box<dyn Native>) {
        self.native = Some(native);
    }

    /// The native code the stages run, if any.
    pub fn native(&self) -> Option<&dyn Native> {
        self.native.as_deref()
    }

    /// The native code to run now: attached, and not tracing (the trace is written by
    /// the interpreter).
    #[inline(always)]
    pub(crate) fn run_native(&self) -> Option<&dyn Native> {
        match &self.native {
            Some(n) if !self.cfg.trace => Some(&**n),
            _ => None,
        }
    }

    /// The plan this engine runs.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Fresh control state (empty tables, defaults, const entries).
    pub fn new_control_state(&self) -> Result<ControlState, String> {
        let mut cs = ControlState::new(&self.prog)?;
        for t in &mut cs.tables {
            t.entries.set_prefetch_distance(self.cfg.sub_batch);
        }
        Ok(cs)
    }

    /// Fresh extern state.
    pub fn new_externs(&self) -> Externs {
        Externs::new(&self.prog)
    }

    /// A new packet context.
    pub fn new_ctx(&self, cap: usize) -> PacketCtx {
        PacketCtx::new(&self.prog, cap)
    }

    #[inline(always)]
    fn trace(&self, ctx: &mut PacketCtx, lvl: u8, f: impl FnOnce() -> String) {
        if self.cfg.trace {
            packet::trace_line(ctx, lvl, f);
        }
    }
}

/// Big-endian bytes of a u64 value truncated to `width` bits.
pub fn value_bytes(v: u128, width: u32) -> Vec<u8> {
    let n = width.div_ceil(8) as usize;
    let v = v & mask_of(width);
    v.to_be_bytes()[16 - n.min(16)..].to_vec()
}

/// Converts an exact value to `u64` if it fits.
pub fn to_u64(v: &BigInt) -> Option<u64> {
    v.to_u64()
}
