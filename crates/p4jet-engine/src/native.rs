//! The interface between the engine and native code compiled from its plan.
//!
//! `p4jet-jit` compiles an engine's fused plan ([`crate::Plan`]) with Cranelift and
//! attaches the result ([`crate::Engine::set_native`]); the engine's stage entry points
//! ([`crate::Engine::parse`], [`crate::Engine::run_control`],
//! [`crate::Engine::deparse`]) then run it instead of interpreting the plan. Compiled
//! code calls back into the interpreter for the operations it does not compile (the
//! general parser operations, primitives, table lookups): see `step.rs`.

use std::time::Duration;

use crate::state::{ControlState, Externs};
use crate::{ControlBlock, Engine, PacketCtx, Pkt, Scratch};

/// What compiling a plan produced.
#[derive(Debug, Clone, Copy, Default)]
pub struct NativeStats {
    /// Time from plan to callable code (wall clock).
    pub compile_time: Duration,
    /// CPU time of the compiling thread over that time, where the platform reports it
    /// (on a busy machine the wall clock also counts the time other work held the CPU).
    pub compile_cpu: Option<Duration>,
    /// Machine code bytes.
    pub code_bytes: usize,
    /// Functions compiled.
    pub functions: usize,
}

/// What an ingress pass ([`Engine::ingress_pass`]) left to the switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passed {
    /// The switch decides each packet's way after ingress.
    Ingress,
    /// Every packet is a plain unicast (no request pending, `mcast_grp` and `priority`
    /// 0, `egress_spec` not the drop port) whose architecture fields are set as the
    /// traffic manager's fast lane sets them ([`Engine::unicast`]).
    Unicast,
    /// As [`Passed::Unicast`], and every packet went on through the egress pass
    /// ([`Engine::egress_pass`]) at the ingress time: the switch transmits them.
    Egress,
}

/// A plan compiled to native code: the stages with the interpreter's semantics.
pub trait Native: Send + Sync {
    /// [`Engine::parse`]: parser and checksum verification of every packet.
    fn parse(&self, e: &Engine, cs: &ControlState, pkts: &mut [Pkt], sc: &mut Scratch);

    /// [`Engine::run_control`]: a control block over a batch.
    #[allow(clippy::too_many_arguments)]
    fn run_control(
        &self,
        e: &Engine,
        cs: &ControlState,
        ex: &Externs,
        which: ControlBlock,
        pkts: &mut [Pkt],
        sc: &mut Scratch,
        now_us: u64,
    );

    /// [`Engine::deparse`]: checksum updates and emit of one packet.
    fn deparse(&self, e: &Engine, ctx: &mut PacketCtx, sc: &mut Scratch, cs: &ControlState);

    /// [`Engine::ingress_pass`]: arrival, parser, verification, ingress control, and
    /// the plain unicast packets' fast-lane fields; with `through`, when every packet
    /// is one, also the egress pass at `now_us`.
    #[allow(clippy::too_many_arguments)]
    fn ingress_pass(
        &self,
        e: &Engine,
        cs: &ControlState,
        ex: &Externs,
        pkts: &mut [Pkt],
        sc: &mut Scratch,
        now_us: u64,
        through: bool,
    ) -> Passed;

    /// [`Engine::egress_pass`]: egress metadata, egress control and the deparser.
    fn egress_pass(
        &self,
        e: &Engine,
        cs: &ControlState,
        ex: &Externs,
        pkts: &mut [Pkt],
        sc: &mut Scratch,
        now_us: u64,
    );

    /// What compiling produced.
    fn stats(&self) -> NativeStats;
}
