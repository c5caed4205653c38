//! The data the generated code and the Rust around it share, laid out `#[repr(C)]` so
//! that the code generator knows every offset.
//!
//! Generated functions take an [`Env`] (the engine, control and extern state, scratch
//! buffers, the time) and an array of [`Lane`]s, one per packet: the pointers into the
//! packet's context the code reads and writes. Calls back into the interpreter
//! (`native.rs`) receive the same pointers.

use std::mem::{offset_of, size_of};

use p4jet_engine::state::{ControlState, Externs};
use p4jet_engine::v1model::Requests;
use p4jet_engine::{ArchMeta, Engine, PacketBuf, PacketCtx, Scratch};

/// One packet as the generated code sees it.
///
/// The generated code reads `ctx`, `phv`, `valid`, `pkt` and `len` as unchanging during
/// a call (readonly loads), with one exception: the unicast check after ingress, a
/// packet's last step in its function, turns a plain unicast packet's `pkt`, `len` and
/// `out` into the deparser's form (`codegen::arch`, `Gen::egress_lane`) for the egress
/// functions called next on the same lanes; nothing reads them after it in that call.
#[repr(C)]
pub struct Lane {
    /// The packet's context (for calls back into the interpreter).
    pub ctx: *mut PacketCtx,
    /// The PHV's bytes.
    pub phv: *mut u8,
    /// The PHV's validity bytes (one per header, 0 or 1).
    pub valid: *mut u8,
    /// Parse: the frame's first byte. Deparse: the buffer's first byte.
    pub pkt: *mut u8,
    /// Parse: the frame's length. Deparse: the payload's offset in the buffer.
    pub len: u64,
    /// Parse: [`BEGUN`] or 0 before, the cursor after parsing (the payload offset).
    /// Deparse: the new start, or [`GROW`].
    pub out: u64,
}

/// A table's outcome for one packet, written by the lookup helper.
#[repr(C)]
pub struct Hit {
    /// The action that runs, or [`ACTION_NONE`]: no action runs. (The generated code
    /// compares it with the table's actions; one outside them runs in the interpreter.)
    pub action: u32,
    /// 1 for a hit, 0 for a miss.
    pub hit: u32,
    /// The action data.
    pub data: *const u8,
    /// Its length in bytes.
    pub len: u64,
}

/// [`Hit::action`]: no action runs.
pub const ACTION_NONE: u32 = u32::MAX;

/// What a generated function may use besides its lanes.
#[repr(C)]
pub struct Env {
    /// The engine (program and plan).
    pub engine: *const Engine,
    /// Control-plane state (tables).
    pub cs: *const ControlState,
    /// Extern state (counters, registers, meters).
    pub ex: *const Externs,
    /// The worker's scratch space.
    pub sc: *mut Scratch,
    /// The time (µs) for meters.
    pub now_us: u64,
    /// Table keys of the packets waiting at a table (64 keys and slack).
    pub keys: *mut u8,
    /// Their outcomes (64).
    pub hits: *mut Hit,
    /// Their lane indexes (64).
    pub waiting: *mut u8,
    /// The lanes of the current call.
    pub lanes: *mut Lane,
    /// The compiled program (its per-table action slots).
    pub compiled: *const crate::Compiled,
    /// The packets the unicast check after ingress left to the switch (counted in
    /// memory, not in a variable the whole function would carry).
    pub others: u64,
}

/// Byte offsets and sizes for the code generator.
pub(crate) mod off {
    use super::*;

    pub const LANE_SIZE: i64 = size_of::<Lane>() as i64;
    pub const LANE_CTX: i32 = offset_of!(Lane, ctx) as i32;
    pub const LANE_PHV: i32 = offset_of!(Lane, phv) as i32;
    pub const LANE_VALID: i32 = offset_of!(Lane, valid) as i32;
    pub const LANE_PKT: i32 = offset_of!(Lane, pkt) as i32;
    pub const LANE_LEN: i32 = offset_of!(Lane, len) as i32;
    pub const LANE_OUT: i32 = offset_of!(Lane, out) as i32;

    pub const HIT_SIZE: i64 = size_of::<Hit>() as i64;
    pub const HIT_ACTION: i32 = offset_of!(Hit, action) as i32;
    pub const HIT_HIT: i32 = offset_of!(Hit, hit) as i32;
    pub const HIT_DATA: i32 = offset_of!(Hit, data) as i32;
    pub const HIT_LEN: i32 = offset_of!(Hit, len) as i32;

    pub const ENV_NOW: i32 = offset_of!(Env, now_us) as i32;
    pub const ENV_KEYS: i32 = offset_of!(Env, keys) as i32;
    pub const ENV_HITS: i32 = offset_of!(Env, hits) as i32;
    pub const ENV_WAITING: i32 = offset_of!(Env, waiting) as i32;
    pub const ENV_OTHERS: i32 = offset_of!(Env, others) as i32;
}

/// Offsets of the packet context's scalar fields the architecture's metadata comes
/// from (the layout of this build, as `offset_of!` reports it).
pub(crate) mod ctx {
    use super::*;

    const ARCH: usize = offset_of!(PacketCtx, arch);
    pub const LENGTH_REG: i32 = offset_of!(PacketCtx, length_reg) as i32;
    pub const PAYLOAD_OFF: i32 = offset_of!(PacketCtx, payload_off) as i32;
    pub const DEPARSED: i32 = offset_of!(PacketCtx, deparsed) as i32;
    pub const EXIT: i32 = offset_of!(PacketCtx, exit) as i32;
    pub const PENDING: i32 = (offset_of!(PacketCtx, req) + offset_of!(Requests, pending)) as i32;
    pub const PKT_START: i32 = (offset_of!(PacketCtx, pkt) + offset_of!(PacketBuf, start)) as i32;
    pub const PORT: i32 = (ARCH + offset_of!(ArchMeta, port)) as i32;
    pub const INSTANCE_TYPE: i32 = (ARCH + offset_of!(ArchMeta, instance_type)) as i32;
    pub const ENQ_US: i32 = (ARCH + offset_of!(ArchMeta, enq_us)) as i32;
    pub const ENQ_QDEPTH: i32 = (ARCH + offset_of!(ArchMeta, enq_qdepth)) as i32;
    pub const DEQ_QDEPTH: i32 = (ARCH + offset_of!(ArchMeta, deq_qdepth)) as i32;
    pub const QID: i32 = (ARCH + offset_of!(ArchMeta, qid)) as i32;
}

/// [`Lane::out`] set before the arrival-and-parse function: the packet already entered
/// ingress (the interpreter restored fields preserved from its pass before).
pub const BEGUN: u64 = 1;

/// [`Lane::out`] flag set before the arrival-and-parse function: parse only (no unicast
/// check after it, for a program without an ingress control).
pub const PARSE_ONLY: u64 = 4;

/// [`Lane::out`] set before the deparser: deparse this packet whatever it asked for
/// (the caller decided it leaves).
pub const FORCE: u64 = 2;

/// A helper's result: the high bit marks a parser error (its code in the low 32 bits).
pub const ERR_BIT: u64 = 1 << 63;
/// A helper's next state meaning "accept".
pub const ACCEPT: u64 = u32::MAX as u64;
/// The deparser's result when the headers outgrow the headroom (the interpreter
/// deparses the packet).
pub const GROW: u64 = u64::MAX;
