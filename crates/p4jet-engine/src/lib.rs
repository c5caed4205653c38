//! The p4jet engine: runs a lowered program over batches of packets.
//!
//! Stages mirror simple_switch: [`Engine::parse`] (parser + checksum verification),
//! [`Engine::run_control`] (a control block over a whole batch, table lookups batched per
//! table), [`Engine::deparse`] (checksum update + emit). The v1model architecture around
//! them (traffic manager, replication, clone, resubmit, recirculate) lives in
//! `p4jet-switch`. The engine does no I/O and reads no clock: time comes in as an argument.
#![forbid(unsafe_code)]

pub mod eval;
pub mod hash;
mod parse_plan;
pub mod phv;
pub mod state;

use std::ops::DerefMut;
use std::sync::Arc;

use num_bigint::{BigInt, BigUint, Sign};
use num_traits::ToPrimitive;
use p4jet_ir::expr::{BinOp, FieldRef, HeaderRef};
use p4jet_ir::{
    ActionCall, ControlNode, FieldLoc, KeyElem, KeySource, ParserOp, Prim, Program, TableNext,
    TransitionKind,
};
use p4jet_tables::EntryHandle;

pub use eval::EvalCtx;
pub use phv::{Phv, StdSlot};
pub use state::{ControlState, EntryAction, EntryValue, Externs, Op, OpResult};

use eval::{eval_bits, eval_bool, eval_exact, eval_index, resolve_field, resolve_header};

/// Most packets a control processes in one table-lookup batch.
pub const SUB_BATCH: usize = 64;

/// Default keys per stage of a batched table lookup ([`EngineConfig::sub_batch`]).
pub const DEFAULT_SUB_BATCH: usize = p4jet_tables::DEFAULT_PREFETCH_DISTANCE;

pub use p4jet_buf::{Frame, FrameRegion, HEADROOM, PacketBuf, Storage};

/// Per-packet state carried through the pipeline.
#[derive(Debug, Clone)]
pub struct PacketCtx {
    /// The frame.
    pub pkt: PacketBuf,
    /// Headers and metadata.
    pub phv: Phv,
    /// Bytes of the frame consumed by the parser; the rest is payload.
    pub payload_off: usize,
    /// Length as received (counters and meters use it).
    pub ingress_len: u32,
    /// simple_switch's packet length register: set by the switch when a pass starts,
    /// adjusted by `add_header` (setValid) and `remove_header` (setInvalid); egress
    /// reads `packet_length` from it. Wrapping, as bmv2's unsigned register.
    pub length_reg: u64,
    /// `exit` was called in this control.
    pub exit: bool,
    /// Clone requested: (session, field list id).
    pub clone: Option<(u32, u32)>,
    /// Resubmit requested with this field list id (0 = none).
    pub resubmit: Option<u32>,
    /// Recirculate requested with this field list id.
    pub recirculate: Option<u32>,
    /// Digest requested: learn list id.
    pub digest: Option<u32>,
    /// Truncate the transmitted frame to this many bytes.
    pub truncate: Option<u32>,
    /// Trace lines (only filled when tracing).
    pub log: Vec<String>,
    /// Architecture bookkeeping (owned by the switch, not the program).
    pub arch: ArchMeta,
}

/// Per-packet bookkeeping of the architecture around the engine.
#[derive(Debug, Clone, Default)]
pub struct ArchMeta {
    /// Port the packet arrived on (or is to be sent to, after the traffic manager).
    pub port: u32,
    /// `instance_type` of this pass.
    pub instance_type: u32,
    /// Resubmit/recirculate passes so far.
    pub passes: u32,
    /// Field values preserved from the previous pass (field id, value).
    pub preserved: Vec<(u32, BigUint)>,
    /// Enqueue time (µs).
    pub enq_us: u64,
    /// Queue depth seen at enqueue.
    pub enq_qdepth: u32,
    /// Priority queue.
    pub qid: u32,
    /// Injection time on the worker's latency clock (ns; 0 when latency is not
    /// measured); clones and recirculated packets keep their original's.
    pub rx_ns: u64,
}

impl PacketCtx {
    /// A context for `p` with an empty frame of capacity `cap`.
    pub fn new(p: &Program, cap: usize) -> PacketCtx {
        PacketCtx {
            pkt: PacketBuf::with_capacity(cap),
            phv: Phv::new(p),
            payload_off: 0,
            ingress_len: 0,
            length_reg: 0,
            exit: false,
            clone: None,
            resubmit: None,
            recirculate: None,
            digest: None,
            truncate: None,
            log: Vec::new(),
            arch: ArchMeta::default(),
        }
    }

    /// Resets everything but the frame for a new arrival.
    #[inline]
    pub fn reset(&mut self, p: &Program) {
        self.phv.reset(p);
        self.payload_off = 0;
        self.exit = false;
        self.clone = None;
        self.resubmit = None;
        self.recirculate = None;
        self.digest = None;
        self.truncate = None;
        self.log.clear();
    }

    /// Copies frame, headers and requests of `other` into `self` without allocating
    /// (when `self`'s buffers are large enough).
    pub fn copy_from(&mut self, other: &PacketCtx) {
        self.pkt.buf.grow_to(other.pkt.buf.len());
        self.pkt.buf[other.pkt.start..other.pkt.end].copy_from_slice(other.pkt.data());
        self.pkt.start = other.pkt.start;
        self.pkt.end = other.pkt.end;
        self.phv.data.copy_from_slice(&other.phv.data);
        self.phv.valid.copy_from_slice(&other.phv.valid);
        if !other.phv.stack_next.is_empty() {
            self.phv.stack_next.copy_from_slice(&other.phv.stack_next);
        }
        if !other.phv.varbit_bits.is_empty() {
            self.phv.varbit_bits.copy_from_slice(&other.phv.varbit_bits);
        }
        self.payload_off = other.payload_off;
        self.ingress_len = other.ingress_len;
        self.length_reg = other.length_reg;
        self.exit = other.exit;
        self.clone = other.clone;
        self.resubmit = other.resubmit;
        self.recirculate = other.recirculate;
        self.digest = other.digest;
        self.truncate = other.truncate;
        self.log.clear();
        self.arch.port = other.arch.port;
        self.arch.instance_type = other.arch.instance_type;
        self.arch.passes = other.arch.passes;
        self.arch.preserved.clear();
        self.arch.enq_us = other.arch.enq_us;
        self.arch.enq_qdepth = other.arch.enq_qdepth;
        self.arch.qid = other.arch.qid;
    }

    /// Zeroes every metadata header (simple_switch's reset of a new instance).
    pub fn zero_metadata(&mut self, p: &Program) {
        for (off, len) in &p.metadata_ranges {
            self.phv.data[*off as usize..(*off + *len) as usize].fill(0);
        }
    }
}

/// Appends a trace line to the packet's log (out of line: the formatting stays off the
/// per-packet paths, which only test whether tracing is on).
#[cold]
#[inline(never)]
fn trace_line(ctx: &mut PacketCtx, f: impl FnOnce() -> String) {
    ctx.log.push(f());
}

/// Moves packet `i` of a sub-batch to control node `next` (None: the control ends for
/// it).
#[inline(always)]
fn move_to(at: &mut [u64], i: usize, next: Option<u32>) {
    if let Some(nx) = next
        && let Some(m) = at.get_mut(nx as usize)
    {
        *m |= 1u64 << i;
    }
}

/// Moves the packets of mask `m` to node `next` (nowhere: the control ends for them).
#[inline(always)]
fn move_all(at: &mut [u64], m: u64, next: Option<u32>) {
    if let Some(nx) = next
        && let Some(w) = at.get_mut(nx as usize)
    {
        *w |= m;
    }
}

/// Per-worker scratch space, allocated once.
#[derive(Debug, Default)]
pub struct Scratch {
    /// Per control node, the packets of the sub-batch waiting there (bit i: packet i).
    at: Vec<u64>,
    members: Vec<u32>,
    keys: Vec<u8>,
    calc: Vec<u8>,
}

/// Room past a table key for whole-word writes (`Engine::build_key`,
/// `key_from_runs`).
const KEY_SLACK: usize = 16;

/// (PHV byte, length) of every byte run of a table key (`Engine::key_runs`).
type KeyRuns = Box<[(usize, usize)]>;

/// An `AssignParam` that is a byte copy: (PHV byte, blob offset, bytes).
type ParamCopy = Option<(u32, u32, u32)>;

/// Copies an action parameter's bytes into the PHV (a `ParamCopy`); false when the
/// action data is too short for it (the caller then runs the general code).
#[inline(always)]
fn copy_param(phv: &mut Phv, data: &[u8], (dst, src, n): (u32, u32, u32)) -> bool {
    let (dst, src, n) = (dst as usize, src as usize, n as usize);
    match data.get(src..src + n) {
        Some(from) => {
            copy_short(&mut phv.data[dst..dst + n], from);
            true
        }
        None => false,
    }
}

/// What a table hit or miss runs, decided per action at load: the commonest bodies
/// (nothing: `NoAction`, `permit`; one parameter copied into a field that owns its
/// bytes: `forward(port)`) without the action interpreter's call.
#[derive(Debug, Clone)]
enum QuickAction {
    /// An empty body.
    Nothing,
    /// One `AssignParam` that is a byte copy (see `Engine::param_copies`).
    ParamCopy((u32, u32, u32)),
    /// A body of parameter copies, constant assignments and flattened expressions
    /// only (`set_next_hop(hop, port)` with its `ttl - 1`), run as a list when the
    /// action data has at least `need` bytes (else `Engine::run_action`, which
    /// handles short data).
    Steps {
        steps: Box<[QuickStep]>,
        need: usize,
    },
    /// Anything else: `Engine::run_action`.
    Run,
}

/// One primitive of a [`QuickAction::Steps`] body.
#[derive(Debug, Clone)]
enum QuickStep {
    /// A parameter's bytes into a field that owns its bytes (`Engine::param_copies`).
    Copy((u32, u32, u32)),
    /// A constant into a field.
    Const(p4jet_ir::FieldLoc, u128),
    /// A flattened expression into a field of at most 128 bits.
    Expr(p4jet_ir::FieldLoc, eval::FastExpr),
    /// `dst = src OP k [OP k]` on fields read and written as 64-bit windows
    /// (`ttl = ttl - 1`): the operations in order, a trailing `& mask` that keeps every
    /// bit of `dst` dropped at load (the write masks).
    FieldOps {
        dst: StdSlot,
        src: StdSlot,
        ops: [(BinOp, u64); 2],
        n: u8,
    },
    /// [`QuickStep::FieldOps`] of one addition (p4c's `ttl - 1` is `ttl + 0xff`, an
    /// increment `+ 1`): no operation dispatch.
    FieldAdd { dst: StdSlot, src: StdSlot, k: u64 },
}

/// Per node of control `ctl`, the load-time form of its condition (None for tables,
/// calls and conditions without one).
fn node_conds(
    ctl: &p4jet_ir::Control,
    fast: &[Option<eval::FastCond>],
) -> Box<[Option<eval::FastCond>]> {
    ctl.nodes
        .iter()
        .map(|n| match n {
            ControlNode::Cond { expr, .. } => fast.get(*expr as usize).copied().flatten(),
            _ => None,
        })
        .collect()
}

/// A checksum verified or updated without the general code: an internet checksum
/// summed straight from the PHV (`hash::csum16_planned`) into a field with a 64-bit
/// window, under no condition or one with a load-time form (the IPv4 header checksum).
#[derive(Debug, Clone)]
struct FastChecksum {
    target: StdSlot,
    /// The target's header: verification skips the checksum when it is invalid.
    header: u32,
    /// The condition, unless it is [`FastChecksum::only_valid`]'s.
    cond: Option<eval::FastCond>,
    /// The condition is "`header` is valid".
    only_valid: bool,
    pieces: Box<[hash::CsumPiece]>,
    /// The pieces as a fixed list when they fit one (the IPv4 header checksum's three).
    quad: Option<hash::CsumQuad>,
    /// With `quad`: the offset in the quad's window of a target that is a plain
    /// byte-aligned 16-bit field (the IPv4 `hdrChecksum`), compared and stored there
    /// in the byte order the quad's sum comes in.
    target16: Option<usize>,
}

/// The program's verified and updated checksums in their [`FastChecksum`] form, in
/// program order.
#[derive(Debug, Clone)]
struct FastChecksums {
    /// The verified checksums that have a fast form.
    verify: Box<[FastChecksum]>,
    /// The updated checksums that have a fast form.
    update: Box<[FastChecksum]>,
    /// The verified checksums without one (their indexes in the program), verified by
    /// the general code after the fast ones (verification only sets a flag: its order
    /// does not matter).
    general_verify: Box<[u32]>,
    /// When some updated checksum has no fast form: every update in program order (a
    /// later checksum may cover an earlier one's target), `Ok(i)` the `i`th of
    /// `update`, `Err(i)` the program's checksum `i` by the general code.
    update_order: Option<Box<[Result<u32, u32>]>>,
}

impl FastChecksum {
    /// The fast form of checksum `ck`, if it has one.
    fn of(
        p: &Program,
        ck: &p4jet_ir::ChecksumInfo,
        plans: &[Option<hash::CalcPlan>],
        conds: &[Option<eval::FastCond>],
    ) -> Option<FastChecksum> {
        let FieldRef::Static(fid) = ck.target else {
            return None;
        };
        let fi = p.fields.get(fid as usize)?;
        let target = StdSlot::new(fi.loc);
        if target.n == 0 {
            return None;
        }
        let cond = match ck.cond {
            Some(c) => Some((*conds.get(c as usize)?)?),
            None => None,
        };
        // the condition "the target's header is valid" (p4c's usual one) is the
        // header test both loops make anyway
        let only_valid = cond.is_some_and(|fc| fc.is_valid_of(fi.header));
        let cond = cond.filter(|_| !only_valid);
        let pieces = plans
            .get(ck.calc as usize)?
            .as_ref()?
            .csum_pieces
            .clone()?
            .into_boxed_slice();
        let quad = hash::csum_quad(&pieces, fi.header);
        let plain16 = fi.loc.width == 16 && fi.loc.bit == 0 && fi.loc.own && !fi.loc.signed;
        Some(FastChecksum {
            target,
            header: fi.header,
            cond,
            only_valid,
            target16: quad
                .as_ref()
                .filter(|_| plain16)
                .and_then(|q| q.target_offset(fi.loc.byte)),
            quad,
            pieces,
        })
    }
}

impl FastChecksums {
    /// The checksums' fast forms, with the general code for those that have none
    /// (None when no checksum has one).
    fn new(
        p: &Program,
        plans: &[Option<hash::CalcPlan>],
        conds: &[Option<eval::FastCond>],
    ) -> Option<FastChecksums> {
        let (mut verify, mut update) = (vec![], vec![]);
        let (mut general_verify, mut order, mut mixed) = (vec![], vec![], false);
        for (i, ck) in p.checksums.iter().enumerate() {
            let fast = FastChecksum::of(p, ck, plans, conds);
            if ck.verify {
                match &fast {
                    Some(f) => verify.push(f.clone()),
                    None => general_verify.push(i as u32),
                }
            }
            if ck.update {
                match fast {
                    Some(f) => {
                        order.push(Ok(update.len() as u32));
                        update.push(f);
                    }
                    None => {
                        order.push(Err(i as u32));
                        mixed = true;
                    }
                }
            }
        }
        if verify.is_empty() && update.is_empty() {
            return None;
        }
        Some(FastChecksums {
            verify: verify.into_boxed_slice(),
            update: update.into_boxed_slice(),
            general_verify: general_verify.into_boxed_slice(),
            update_order: mixed.then(|| order.into_boxed_slice()),
        })
    }

    /// Verifies the checksums, setting `checksum_error` when one fails.
    #[inline(always)]
    fn verify(&self, phv: &mut Phv, error: Option<StdSlot>) {
        let mut bad = false;
        for c in &self.verify {
            if !phv.valid.get(c.header as usize).copied().unwrap_or(false)
                || c.cond.as_ref().is_some_and(|fc| !fc.test(phv))
            {
                continue;
            }
            // the target's header is valid: so is the quad's
            if let (Some(q), Some(t)) = (&c.quad, c.target16)
                && let Some(win) = hash::quad_window(&phv.data, q)
            {
                let have = win[t..]
                    .first_chunk::<2>()
                    .map_or(0, |b| u16::from_le_bytes(*b));
                bad |= hash::quad_sum_le(win, q) != have;
                continue;
            }
            let got = match c.quad.as_ref().and_then(|q| hash::csum16_quad(phv, q)) {
                Some(v) => v,
                None => hash::csum16_planned(phv, &c.pieces),
            };
            bad |= got & c.target.mask != phv.read_std(c.target);
        }
        if bad && let Some(e) = error {
            phv.write_std(e, 1);
        }
    }

    /// Writes the updated checksums (all of them have a fast form).
    #[inline(always)]
    fn update(&self, phv: &mut Phv) {
        for c in &self.update {
            Self::update_one(c, phv);
        }
    }

    /// Writes checksum `c`.
    #[inline(always)]
    fn update_one(c: &FastChecksum, phv: &mut Phv) {
        if c.cond.as_ref().is_some_and(|fc| !fc.test(phv)) {
            return;
        }
        let valid = phv.valid.get(c.header as usize).copied().unwrap_or(false);
        if c.only_valid && !valid {
            return;
        }
        if let (Some(q), Some(t), true) = (&c.quad, c.target16, valid)
            && let Some(win) = hash::quad_window_mut(&mut phv.data, q)
        {
            let v = hash::quad_sum_le(win, q);
            if let Some(b) = win[t..].first_chunk_mut::<2>() {
                *b = v.to_le_bytes();
            }
            return;
        }
        let quick = match &c.quad {
            Some(q) if valid => hash::csum16_quad(phv, q),
            _ => None,
        };
        let v = quick.unwrap_or_else(|| hash::csum16_planned(phv, &c.pieces));
        phv.write_std(c.target, v);
    }
}

/// Runs a [`QuickStep::FieldOps`].
#[inline(always)]
fn field_ops(phv: &mut Phv, dst: StdSlot, src: StdSlot, ops: &[(BinOp, u64)]) {
    let mut v = phv.read_std(src);
    for &(op, k) in ops {
        v = eval::bin64(op, v, k);
    }
    phv.write_std(dst, v);
}

/// Runs a [`QuickStep::FieldAdd`].
#[inline(always)]
fn field_add(phv: &mut Phv, dst: StdSlot, src: StdSlot, k: u64) {
    let v = phv.read_std(src).wrapping_add(k);
    phv.write_std(dst, v);
}

/// The [`QuickStep::FieldOps`] form of `dst = fe`, when `fe` is one field and at most
/// two constant operations (after dropping a trailing mask that keeps all of `dst`)
/// and both fields have 64-bit windows.
fn field_ops_step(dst: p4jet_ir::FieldLoc, fe: &eval::FastExpr) -> Option<QuickStep> {
    let (src, mut ops) = fe.field_const_ops()?;
    let (dst, src) = (StdSlot::new(dst), StdSlot::new(src));
    if dst.n == 0 || src.n == 0 {
        return None;
    }
    if let Some(&(BinOp::And, k)) = ops.last()
        && u128::from(dst.mask) & !k == 0
    {
        ops.pop();
    }
    if ops.len() > 2 {
        return None;
    }
    if let [(BinOp::Add, k)] = ops[..] {
        return Some(QuickStep::FieldAdd {
            dst,
            src,
            k: k as u64,
        });
    }
    let mut arr = [(BinOp::Or, 0u64); 2];
    for (slot, (op, k)) in arr.iter_mut().zip(&ops) {
        // the low 64 bits of the constant are all that reach a field of at most 64 bits
        *slot = (*op, *k as u64);
    }
    Some(QuickStep::FieldOps {
        dst,
        src,
        ops: arr,
        n: ops.len() as u8,
    })
}

/// The [`QuickAction::Steps`] form of action `a`, or [`QuickAction::Run`] when a
/// primitive is not a parameter copy, a constant assignment or a flattened expression
/// assigned to a static field of at most 128 bits.
fn quick_steps(
    p: &Program,
    a: &p4jet_ir::Action,
    copies: &[ParamCopy],
    fast_exprs: &[Option<eval::FastExpr>],
) -> QuickAction {
    let mut steps = Vec::with_capacity(a.body.len());
    let mut need = 0usize;
    for (pc, prim) in a.body.iter().enumerate() {
        let loc_of = |f: u32| p.fields.get(f as usize).map(|f| f.loc);
        let step = match prim {
            Prim::AssignParam { .. } => match copies.get(pc) {
                Some(Some(c)) => {
                    need = need.max(c.1 as usize + c.2 as usize);
                    QuickStep::Copy(*c)
                }
                _ => return QuickAction::Run,
            },
            Prim::AssignConst { dst, value } => match loc_of(*dst) {
                Some(loc) => QuickStep::Const(loc, *value),
                None => return QuickAction::Run,
            },
            Prim::Assign {
                dst: FieldRef::Static(f),
                src,
            } => match (loc_of(*f), fast_exprs.get(*src as usize)) {
                (Some(loc), Some(Some(fe))) if loc.width <= 128 => {
                    field_ops_step(loc, fe).unwrap_or_else(|| QuickStep::Expr(loc, fe.clone()))
                }
                _ => return QuickAction::Run,
            },
            _ => return QuickAction::Run,
        };
        steps.push(step);
    }
    QuickAction::Steps {
        steps: steps.into_boxed_slice(),
        need,
    }
}

/// `loc = fe` in action `a` with action data `data` (`loc` of at most 128 bits).
#[inline(always)]
fn assign_fast(
    ctx: &mut PacketCtx,
    loc: p4jet_ir::FieldLoc,
    fe: &eval::FastExpr,
    a: &p4jet_ir::Action,
    data: &[u8],
) {
    let v = fe.eval(&EvalCtx {
        phv: &ctx.phv,
        ahead: &[],
        action: Some((a, data)),
    });
    ctx.phv.write(loc, v);
}

/// The parser short path's extract of fixed header `h` (`len` bytes to PHV offset `off`)
/// at `cursor`: the cursor after it, or None when the packet is too short.
#[inline(always)]
fn extract_short(ctx: &mut PacketCtx, h: u32, off: u32, len: u32, cursor: usize) -> Option<usize> {
    let (off, len) = (off as usize, len as usize);
    let src = ctx.pkt.data().get(cursor..cursor + len)?;
    parse_plan::copy_small(&mut ctx.phv.data[off..off + len], src);
    ctx.phv.valid[h as usize] = true;
    Some(cursor + len)
}

/// A table key made of PHV byte runs of at most 16 bytes (`Engine::key_runs`):
/// each run is copied as 16 bytes, the excess overwritten by the next run or
/// left in the `KEY_SLACK` bytes past the key.
#[inline(always)]
fn key_from_runs(runs: &[(usize, usize)], phv: &[u8], out: &mut [u8]) {
    // one run (a MAC, an IPv4 address, a port): one 16-byte move
    if let [(byte, _)] = *runs
        && let (Some(d), Some(s)) = (
            out.first_chunk_mut::<16>(),
            phv.get(byte..).and_then(|s| s.first_chunk::<16>()),
        )
    {
        *d = *s;
        return;
    }
    let mut off = 0;
    for &(byte, n) in runs {
        out[off..off + 16].copy_from_slice(&phv[byte..byte + 16]);
        off += n;
    }
}

/// `dst.copy_from_slice(src)` for short runs without a `memcpy` call (table keys are
/// mostly 1 to 16 bytes, headers 14 or 20): two moves of the largest power of two
/// that fits, the second ending at the end (they overlap when the length is not that
/// power), so any length from 2 to 16 is two loads and two stores after one or two
/// branches.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    if n >= 8 {
        if n > 16 {
            dst.copy_from_slice(src);
            return;
        }
        two_moves::<8>(dst, src);
    } else if n >= 4 {
        two_moves::<4>(dst, src);
    } else if n >= 2 {
        two_moves::<2>(dst, src);
    } else if n == 1 {
        dst[0] = src[0];
    }
}

/// The first and the last `K` bytes of `src` into `dst` (same length, `K..=2K`), both
/// loaded before either is stored; as array values, so that the compiler emits plain
/// moves (with `copy_from_slice` it merged the calls into one `memcpy` call).
#[inline(always)]
pub(crate) fn two_moves<const K: usize>(dst: &mut [u8], src: &[u8]) {
    let (Some(a), Some(b)) = (src.first_chunk::<K>(), src.last_chunk::<K>()) else {
        return;
    };
    let (a, b) = (*a, *b);
    if let Some(d) = dst.first_chunk_mut::<K>() {
        *d = a;
    }
    if let Some(d) = dst.last_chunk_mut::<K>() {
        *d = b;
    }
}

/// One key element of a table, ready for key building.
#[derive(Debug, Clone)]
enum KeyPart {
    /// A run of PHV bytes copied as is (byte-aligned fields of whole bytes, or metadata
    /// slots whose padding bits are zero; adjacent ones merged).
    Bytes {
        byte: usize,
        n: usize,
    },
    Field {
        loc: FieldLoc,
        nbytes: usize,
        mask: Option<u128>,
    },
    Wide {
        loc: FieldLoc,
        nbytes: usize,
        mask: Option<BigUint>,
    },
    Valid(u32),
}

/// Locations of the standard metadata fields the switch reads and writes, resolved once.
/// Informational fields (ports, lengths, timestamps, queue figures, errors) are `None`
/// when the program never reads them, so the switch does not spend time writing them.
#[derive(Debug, Clone, Copy, Default)]
pub struct StdLocs {
    /// `ingress_port`
    pub ingress_port: Option<StdSlot>,
    /// `egress_spec` (always resolved: the switch reads it)
    pub egress_spec: Option<StdSlot>,
    /// `egress_port`
    pub egress_port: Option<StdSlot>,
    /// `instance_type`
    pub instance_type: Option<StdSlot>,
    /// `packet_length`
    pub packet_length: Option<StdSlot>,
    /// `enq_timestamp`
    pub enq_timestamp: Option<StdSlot>,
    /// `enq_qdepth`
    pub enq_qdepth: Option<StdSlot>,
    /// `deq_timedelta`
    pub deq_timedelta: Option<StdSlot>,
    /// `deq_qdepth`
    pub deq_qdepth: Option<StdSlot>,
    /// `ingress_global_timestamp`
    pub ingress_global_timestamp: Option<StdSlot>,
    /// `egress_global_timestamp`
    pub egress_global_timestamp: Option<StdSlot>,
    /// `mcast_grp` (resolved when the program may write it: otherwise it is 0 and
    /// the switch does not read it)
    pub mcast_grp: Option<StdSlot>,
    /// `egress_rid`
    pub egress_rid: Option<StdSlot>,
    /// `checksum_error`
    pub checksum_error: Option<StdSlot>,
    /// `parser_error`
    pub parser_error: Option<StdSlot>,
    /// `priority` (resolved when the program may write it, as `mcast_grp`)
    pub priority: Option<StdSlot>,
    /// `qid`
    pub qid: Option<StdSlot>,
    /// The program reads one of the fields the switch writes as a packet enters
    /// ingress (`ingress_port`, `packet_length`, `instance_type`,
    /// `ingress_global_timestamp`): when false, the switch skips them all.
    pub ingress_info: bool,
    /// The program reads one of the informational fields the switch writes as a packet
    /// enters egress (`egress_port`, `packet_length`, the queue figures and timestamps,
    /// `qid`).
    pub egress_info: bool,
}

impl StdLocs {
    fn new(p: &Program) -> StdLocs {
        let any = |f: Option<u32>| f.map(|f| StdSlot::new(p.fields[f as usize].loc));
        let read = |f: Option<u32>| {
            f.filter(|f| p.reads[*f as usize])
                .map(|f| StdSlot::new(p.fields[f as usize].loc))
        };
        let written = |f: Option<u32>| {
            f.filter(|f| p.writes.get(*f as usize).copied().unwrap_or(true))
                .map(|f| StdSlot::new(p.fields[f as usize].loc))
        };
        let s = &p.std;
        let mut l = StdLocs {
            ingress_port: read(s.ingress_port),
            egress_spec: any(s.egress_spec),
            egress_port: read(s.egress_port),
            instance_type: read(s.instance_type),
            packet_length: read(s.packet_length),
            enq_timestamp: read(s.enq_timestamp),
            enq_qdepth: read(s.enq_qdepth),
            deq_timedelta: read(s.deq_timedelta),
            deq_qdepth: read(s.deq_qdepth),
            ingress_global_timestamp: read(s.ingress_global_timestamp),
            egress_global_timestamp: read(s.egress_global_timestamp),
            mcast_grp: written(s.mcast_grp),
            egress_rid: read(s.egress_rid),
            checksum_error: read(s.checksum_error),
            parser_error: read(s.parser_error),
            priority: written(s.priority),
            qid: read(s.qid),
            ingress_info: false,
            egress_info: false,
        };
        l.ingress_info = [
            l.ingress_port,
            l.packet_length,
            l.instance_type,
            l.ingress_global_timestamp,
        ]
        .iter()
        .any(Option::is_some);
        l.egress_info = [
            l.egress_port,
            l.packet_length,
            l.enq_timestamp,
            l.enq_qdepth,
            l.deq_timedelta,
            l.deq_qdepth,
            l.egress_global_timestamp,
            l.qid,
        ]
        .iter()
        .any(Option::is_some);
        l
    }
}

/// Which control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipeline {
    /// Ingress.
    Ingress,
    /// Egress.
    Egress,
}

/// Engine options.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Port number meaning "drop" (simple_switch `--drop-port`, default 511).
    pub drop_port: u32,
    /// Record a per-packet trace in [`PacketCtx::log`].
    pub trace: bool,
    /// Run every parser state and the deparser through the general code instead of
    /// their load-time plans (the reference for differential tests).
    pub general_parser: bool,
    /// Keys per stage of a batched table lookup (hash or index them all, prefetch,
    /// resolve): the sub-batch, 1 to 64.
    pub sub_batch: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            drop_port: 511,
            trace: false,
            general_parser: false,
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
    /// Standard metadata locations.
    pub sm: StdLocs,
    key_plans: Vec<Vec<KeyPart>>,
    /// Per table, when every key part is a byte run of at most 16 bytes (with
    /// 16 PHV bytes readable from its start): (PHV byte, length) of each run,
    /// for `key_from_runs`.
    key_runs: Vec<Option<KeyRuns>>,
    /// Per calculation, its inputs resolved at load time (None: resolved per packet).
    calc_plans: Vec<Option<hash::CalcPlan>>,
    /// Per expression id, the control conditions recognised at load time.
    fast_conds: Vec<Option<eval::FastCond>>,
    /// Per expression id, assignment sources flattened at load time.
    fast_exprs: Vec<Option<eval::FastExpr>>,
    /// Per parser state, its plan.
    parse_plans: Vec<parse_plan::StatePlan>,
    /// The parser's likeliest path as one step (see [`parse_plan::ParsePath`]).
    parse_path: Option<parse_plan::ParsePath>,
    /// The deparser's plan.
    deparse_plan: parse_plan::DeparsePlan,
    /// Some checksum is verified in the parser.
    has_verify: bool,
    /// Every checksum of the program in its load-time form, when all have one.
    fast_csums: Option<FastChecksums>,
    /// When some checksums have a fast form and others not: the fast ones and the
    /// order in which both kinds run (taken by the general checksum functions, so that
    /// programs whose checksums are all fast keep `fast_csums`'s inlined path).
    mixed_csums: Option<Box<FastChecksums>>,
    /// Per table: Some(next) when every action (and no action) leads to the same next
    /// node (a plain `t.apply()`), so no per-packet action-slot search.
    same_next: Vec<Option<Option<u32>>>,
    /// Per node of the ingress and egress controls, its condition's load-time form
    /// (the walk reads it by node, not through the expression id).
    node_conds: [Box<[Option<eval::FastCond>]>; 2],
    /// Per action and primitive: an `AssignParam` that is a plain byte copy (a field
    /// owning its bytes, a parameter no wider in as many bytes; blobs are masked to the
    /// parameter's width), as (PHV byte, blob offset, bytes).
    param_copies: Vec<Vec<ParamCopy>>,
    /// Per action: what a table hit runs without calling the action interpreter.
    quick: Vec<QuickAction>,
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
    /// Prepares a program for execution.
    pub fn new(prog: Arc<Program>, cfg: EngineConfig) -> Engine {
        let key_plans: Vec<Vec<KeyPart>> = prog
            .tables
            .iter()
            .map(|t| {
                t.keys
                    .iter()
                    .map(|k| match &k.source {
                        KeySource::Valid(HeaderRef::Static(h)) => KeyPart::Valid(*h),
                        KeySource::Valid(_) => KeyPart::Valid(0),
                        KeySource::Field(f) => {
                            let fid = match f {
                                FieldRef::Static(f) => *f,
                                FieldRef::Dyn { .. } => 0,
                            };
                            let loc = prog.fields[fid as usize].loc;
                            let nbytes = k.width.div_ceil(8) as usize;
                            let plain = loc.nbytes as usize == nbytes
                                && loc.width == k.width
                                && (loc.own || (loc.bit == 0 && loc.width.is_multiple_of(8)));
                            if k.mask.is_none() && plain && matches!(f, FieldRef::Static(_)) {
                                KeyPart::Bytes {
                                    byte: loc.byte as usize,
                                    n: nbytes,
                                }
                            } else if k.width <= 128 {
                                let mask = k.mask.as_ref().map(|m| {
                                    let d = m.to_u64_digits();
                                    (d.first().copied().unwrap_or(0) as u128)
                                        | ((d.get(1).copied().unwrap_or(0) as u128) << 64)
                                });
                                KeyPart::Field {
                                    loc: FieldLoc {
                                        signed: false,
                                        ..loc
                                    },
                                    nbytes,
                                    mask,
                                }
                            } else {
                                KeyPart::Wide {
                                    loc,
                                    nbytes,
                                    mask: k.mask.clone(),
                                }
                            }
                        }
                    })
                    .fold(Vec::new(), |mut plan: Vec<KeyPart>, part| {
                        // merge a byte run that continues the previous one
                        if let (
                            Some(KeyPart::Bytes { byte, n }),
                            KeyPart::Bytes { byte: b2, n: n2 },
                        ) = (plan.last_mut(), &part)
                            && *byte + *n == *b2
                        {
                            *n += *n2;
                            return plan;
                        }
                        plan.push(part);
                        plan
                    })
            })
            .collect();
        let phv_len = prog.phv_bytes as usize + phv::PHV_PAD;
        let key_runs = key_plans
            .iter()
            .map(|plan| {
                plan.iter()
                    .map(|part| match part {
                        KeyPart::Bytes { byte, n } if *n <= 16 && byte + 16 <= phv_len => {
                            Some((*byte, *n))
                        }
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        let sm = StdLocs::new(&prog);
        let calc_plans: Vec<_> = prog
            .calculations
            .iter()
            .map(|c| hash::plan(&prog, c))
            .collect();
        let mut fast_conds = vec![None; prog.exprs.nodes.len()];
        for node in prog.ingress.nodes.iter().chain(&prog.egress.nodes) {
            if let ControlNode::Cond { expr, .. } = node
                && let Some(slot) = fast_conds.get_mut(*expr as usize)
            {
                *slot = eval::FastCond::compile(&prog, *expr);
            }
        }
        for ck in &prog.checksums {
            if let Some(c) = ck.cond
                && let Some(slot) = fast_conds.get_mut(c as usize)
            {
                *slot = eval::FastCond::compile(&prog, c);
            }
        }
        let mut fast_exprs = vec![None; prog.exprs.nodes.len()];
        for a in &prog.actions {
            for prim in &a.body {
                if let Prim::Assign { src, .. } = prim
                    && let Some(slot) = fast_exprs.get_mut(*src as usize)
                {
                    *slot = eval::FastExpr::compile(&prog, *src);
                }
            }
        }
        let parse_plans: Vec<_> = prog
            .parser
            .states
            .iter()
            .map(|st| {
                if cfg.general_parser {
                    parse_plan::StatePlan::general(st)
                } else {
                    parse_plan::StatePlan::new(&prog, st)
                }
            })
            .collect();
        let parse_path = if cfg.general_parser {
            None
        } else {
            parse_plan::ParsePath::new(&parse_plans, prog.parser.init)
        };
        let deparse_plan = parse_plan::DeparsePlan::new(&prog, cfg.general_parser);
        let has_verify = prog.checksums.iter().any(|c| c.verify);
        let same_next = prog
            .tables
            .iter()
            .map(|t| match &t.next {
                TableNext::ByAction(v) if v.iter().all(|n| *n == t.base_default_next) => {
                    Some(t.base_default_next)
                }
                _ => None,
            })
            .collect();
        let node_conds = [
            node_conds(&prog.ingress, &fast_conds),
            node_conds(&prog.egress, &fast_conds),
        ];
        let csums = if cfg.general_parser {
            None
        } else {
            FastChecksums::new(&prog, &calc_plans, &fast_conds)
        };
        let all_fast = csums
            .as_ref()
            .is_some_and(|c| c.general_verify.is_empty() && c.update_order.is_none());
        let (fast_csums, mixed_csums) = match csums {
            Some(c) if all_fast => (Some(c), None),
            c => (None, c.map(Box::new)),
        };
        let param_copies = prog
            .actions
            .iter()
            .map(|a| {
                a.body
                    .iter()
                    .map(|prim| {
                        let Prim::AssignParam { dst, param } = prim else {
                            return None;
                        };
                        let loc = prog.fields.get(*dst as usize)?.loc;
                        let pw = a.params.get(*param as usize)?.1;
                        let off = *a.param_offsets.get(*param as usize)?;
                        // the field owns its bytes (zero bits before it) and the blob
                        // holds the parameter in as many bytes, masked to its width
                        // (both loaders mask): a byte copy is the masked write
                        let nb = loc.nbytes as u32;
                        (loc.own && nb <= 16 && pw <= loc.width && pw.div_ceil(8) == nb)
                            .then_some((loc.byte, off, nb))
                    })
                    .collect()
            })
            .collect();
        let quick = prog
            .actions
            .iter()
            .zip(&param_copies)
            .map(|(a, copies): (&p4jet_ir::Action, &Vec<ParamCopy>)| {
                match (&a.body[..], &copies[..]) {
                    ([], _) => QuickAction::Nothing,
                    ([Prim::AssignParam { .. }], [Some(copy)]) => QuickAction::ParamCopy(*copy),
                    _ => quick_steps(&prog, a, copies, &fast_exprs),
                }
            })
            .collect();
        Engine {
            prog,
            cfg,
            sm,
            key_plans,
            key_runs,
            calc_plans,
            fast_conds,
            fast_exprs,
            parse_plans,
            parse_path,
            deparse_plan,
            has_verify,
            fast_csums,
            mixed_csums,
            node_conds,
            same_next,
            quick,
            param_copies,
        }
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
    fn trace(&self, ctx: &mut PacketCtx, f: impl FnOnce() -> String) {
        if self.cfg.trace {
            trace_line(ctx, f);
        }
    }

    // ------------------------------------------------------------------ fields

    /// Reads a standard metadata field (0 if absent).
    #[inline(always)]
    pub fn std_read(&self, phv: &Phv, f: Option<StdSlot>) -> u128 {
        match f {
            Some(s) => u128::from(phv.read_std(s)),
            None => 0,
        }
    }

    /// Writes a standard metadata field (if present; see [`StdLocs`]).
    #[inline(always)]
    pub fn std_set(&self, phv: &mut Phv, f: Option<StdSlot>, v: u128) {
        if let Some(s) = f {
            phv.write_std(s, v as u64);
        }
    }

    /// Same as [`Engine::std_set`] (informational fields are already filtered in
    /// [`StdLocs`]).
    #[inline(always)]
    pub fn std_inform(&self, phv: &mut Phv, f: Option<StdSlot>, v: u128) {
        self.std_set(phv, f, v)
    }

    fn write_bits(&self, phv: &mut Phv, fid: u32, v: u128) {
        let loc = self.prog.fields[fid as usize].loc;
        if loc.width <= 128 {
            phv.write(loc, v);
        } else {
            // sign-extend the 128-bit pattern? values reaching here are exact and narrow
            phv.write_big(loc, &BigUint::from(v));
        }
    }

    fn write_exact(&self, phv: &mut Phv, fid: u32, v: &BigInt) {
        let loc = self.prog.fields[fid as usize].loc;
        if loc.width <= 128 {
            phv.write(loc, p4jet_ir::expr::to_bits(v));
        } else {
            let m = BigInt::from(1) << loc.width;
            let mut r = v % &m;
            if r.sign() == Sign::Minus {
                r += &m;
            }
            phv.write_big(loc, &r.to_biguint().unwrap_or_default());
        }
    }

    /// Evaluates `src` and stores it into `dst` with bmv2's truncation.
    fn assign(
        &self,
        ctx: &mut PacketCtx,
        dst: &FieldRef,
        src: u32,
        action: Option<(&p4jet_ir::Action, &[u8])>,
        ahead: &[u8],
    ) {
        let p = &*self.prog;
        let ec = EvalCtx {
            phv: &ctx.phv,
            ahead,
            action,
        };
        let Some(fid) = resolve_field(p, &ec, dst) else {
            return;
        };
        let w = p.fields[fid as usize].loc.width;
        if w <= 128 {
            let v = eval_bits(p, &ec, src);
            ctx.phv.write(p.fields[fid as usize].loc, v);
        } else {
            let v = eval_exact(p, &ec, src);
            self.write_exact(&mut ctx.phv, fid, &v);
        }
    }

    // ------------------------------------------------------------------ parser

    /// Parses the frame of every context (which must have been reset and given its
    /// standard metadata) and verifies checksums.
    pub fn parse<P: DerefMut<Target = PacketCtx>>(
        &self,
        cs: &ControlState,
        pkts: &mut [P],
        sc: &mut Scratch,
    ) {
        for ctx in pkts {
            self.parse_one(cs, ctx, sc);
        }
    }

    // inlined into the batch loop of `parse` (the rare cases are out of line)
    #[inline(always)]
    fn parse_one(&self, cs: &ControlState, ctx: &mut PacketCtx, sc: &mut Scratch) {
        let p = &*self.prog;
        let (cursor, error) = match self.parse_short(ctx) {
            Ok(done) => done,
            Err((state, cursor, steps)) => self.parse_general(cs, ctx, sc, state, cursor, steps),
        };
        ctx.payload_off = cursor;
        self.std_set(&mut ctx.phv, self.sm.parser_error, error as u128);
        if error != p.error_codes.no_error {
            self.trace_parser_error(ctx, error);
        }
        if self.has_verify {
            match &self.fast_csums {
                Some(fc) if !self.cfg.trace => fc.verify(&mut ctx.phv, self.sm.checksum_error),
                _ => self.verify_checksums(ctx, sc),
            }
        }
    }

    /// The trace line of a parser error.
    #[cold]
    #[inline(never)]
    fn trace_parser_error(&self, ctx: &mut PacketCtx, error: u32) {
        let name = self.prog.error_name(error).to_string();
        self.trace(ctx, || format!("parser error {name}"));
    }

    /// The parser's short path: runs states that only extract fixed headers (outside
    /// unions) and choose the next state by plan. Ok((cursor, error)) when parsing
    /// ended; Err((state, cursor, steps)) hands the first other state (or any state,
    /// when tracing) to [`Engine::parse_general`].
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn parse_short(&self, ctx: &mut PacketCtx) -> Result<(usize, u32), (Option<u32>, usize, u32)> {
        let p = &*self.prog;
        let mut state = p.parser.init;
        let mut cursor = 0usize;
        let mut steps = 0u32;
        if self.cfg.trace {
            return Err((state, cursor, steps));
        }
        if let Some(path) = &self.parse_path
            && let Some(c) = path.run(ctx.pkt.data(), &mut ctx.phv)
        {
            (state, cursor, steps) = (path.next, c, path.states());
        }
        while let Some(si) = state {
            let plan = &self.parse_plans[si as usize];
            if !plan.simple {
                return Err((state, cursor, steps));
            }
            steps += 1;
            if steps > 100_000 {
                return Ok((cursor, p.error_codes.parser_timeout));
            }
            if let Some((h, off, len)) = plan.single {
                match extract_short(ctx, h, off, len, cursor) {
                    Some(c) => cursor = c,
                    None => return Ok((cursor, p.error_codes.packet_too_short)),
                }
            } else {
                for op in &plan.ops {
                    if let parse_plan::PlanOp::Extract { h, off, len, .. } = *op {
                        match extract_short(ctx, h, off, len, cursor) {
                            Some(c) => cursor = c,
                            None => return Ok((cursor, p.error_codes.packet_too_short)),
                        }
                    }
                }
            }
            state = match (plan.goto, &plan.select) {
                (Some(next), _) => next,
                (None, Some(sel)) => {
                    match sel.next(
                        &ctx.phv,
                        ctx.pkt.data(),
                        cursor,
                        p.error_codes.packet_too_short,
                    ) {
                        Ok(next) => next,
                        Err(e) => return Ok((cursor, e)),
                    }
                }
                // not simple
                (None, None) => return Err((state, cursor, steps)),
            };
        }
        Ok((cursor, p.error_codes.no_error))
    }

    /// The parser's general path, from state `state` at `cursor` after `steps` states:
    /// (cursor, error) when parsing ended.
    #[inline(never)]
    fn parse_general(
        &self,
        cs: &ControlState,
        ctx: &mut PacketCtx,
        sc: &mut Scratch,
        mut state: Option<u32>,
        mut cursor: usize,
        mut steps: u32,
    ) -> (usize, u32) {
        let p = &*self.prog;
        let mut error = p.error_codes.no_error;
        'states: while let Some(si) = state {
            steps += 1;
            if steps > 100_000 {
                error = p.error_codes.parser_timeout;
                break;
            }
            let plan = &self.parse_plans[si as usize];
            if self.cfg.trace {
                let name = &p.parser.states[si as usize].name;
                self.trace(ctx, || format!("parser state {name}"));
            }
            for op in &plan.ops {
                let r = match *op {
                    parse_plan::PlanOp::Extract { h, off, len, union } => {
                        self.extract_fixed(ctx, h, off as usize, len as usize, union, &mut cursor)
                    }
                    parse_plan::PlanOp::Copy { dst, src } => {
                        let v = ctx.phv.read_raw(src);
                        ctx.phv.write(dst, v);
                        Ok(())
                    }
                    parse_plan::PlanOp::Copy64 {
                        dst,
                        src,
                        shift,
                        mask,
                    } => {
                        let v = match ctx.phv.load8(src.byte as usize) {
                            Some(w) => (w >> shift) & mask,
                            None => ctx.phv.read_raw(src) as u64,
                        };
                        ctx.phv.write_std(dst, v);
                        Ok(())
                    }
                    parse_plan::PlanOp::CopyBytes { dst, src, n } => {
                        let (dst, src, n) = (dst as usize, src as usize, n as usize);
                        let v = crate::phv::load_be(&ctx.phv.data, src, n);
                        crate::phv::store_be(&mut ctx.phv.data, dst, n, v);
                        Ok(())
                    }
                    parse_plan::PlanOp::SetAhead { dst, at, n, i } => {
                        let (dst, n) = (dst as usize, n as usize);
                        let from = cursor + at as usize;
                        match ctx.pkt.data().get(from..from + n) {
                            Some(src) => {
                                ctx.phv.data[dst..dst + n].copy_from_slice(src);
                                Ok(())
                            }
                            None => {
                                let op = &p.parser.states[si as usize].ops[i as usize];
                                self.parser_op(cs, ctx, op, &mut cursor, sc)
                            }
                        }
                    }
                    parse_plan::PlanOp::General(i) => {
                        let op = &p.parser.states[si as usize].ops[i as usize];
                        self.parser_op(cs, ctx, op, &mut cursor, sc)
                    }
                };
                if let Err(e) = r {
                    error = e;
                    break 'states;
                }
            }
            if let Some(next) = plan.goto {
                state = next;
                continue;
            }
            if let Some(sel) = &plan.select {
                match sel.next(
                    &ctx.phv,
                    ctx.pkt.data(),
                    cursor,
                    p.error_codes.packet_too_short,
                ) {
                    Ok(next) => {
                        state = next;
                        continue;
                    }
                    Err(e) => {
                        error = e;
                        break;
                    }
                }
            }
            let st = &p.parser.states[si as usize];
            match self.select_general(cs, ctx, st, cursor) {
                Ok(next) => state = next,
                Err(e) => {
                    error = e;
                    break;
                }
            }
        }
        (cursor, error)
    }

    /// The select of parser state `st` by the general code (value sets, keys wider than
    /// 128 bits, stack fields chosen at run time): the next state, or a parser error.
    /// Out of line, so that the planned path keeps a small frame.
    #[inline(never)]
    fn select_general(
        &self,
        cs: &ControlState,
        ctx: &PacketCtx,
        st: &p4jet_ir::ParseState,
        cursor: usize,
    ) -> Result<Option<u32>, u32> {
        let p = &*self.prog;
        let mut keybuf = [0u8; 64];
        // build the select key
        let kb = st.key_bytes as usize;
        let mut big_key;
        let key: &mut [u8] = if kb <= keybuf.len() {
            &mut keybuf[..kb]
        } else {
            big_key = vec![0u8; kb];
            &mut big_key[..]
        };
        let mut off = 0usize;
        for k in &st.key {
            let w = k.width(p);
            let nb = w.div_ceil(8) as usize;
            match k {
                KeyElem::Field(f) => {
                    let ec = EvalCtx::of_phv(&ctx.phv);
                    match resolve_field(p, &ec, f) {
                        Some(fid) => put_field(
                            &ctx.phv,
                            p.fields[fid as usize].loc,
                            &mut key[off..off + nb],
                        ),
                        None => {
                            // `stack.last` of an empty stack
                            return Err(p.error_codes.stack_out_of_bounds);
                        }
                    }
                }
                KeyElem::Lookahead { offset, width } => {
                    let data = ctx.pkt.data();
                    let need_bits = cursor * 8 + *offset as usize + *width as usize;
                    if need_bits > data.len() * 8 {
                        return Err(p.error_codes.packet_too_short);
                    }
                    let ahead = &data[cursor..];
                    let bits_off = *offset as usize;
                    let v =
                        crate::phv::read_big(ahead, bits_off / 8, (bits_off % 8) as u32, *width);
                    put_big(&v, &mut key[off..off + nb]);
                }
            }
            off += nb;
        }
        // the first transition that matches; none matching and no default: bmv2 accepts
        let chosen = st.transitions.iter().find(|t| match &t.kind {
            TransitionKind::Default => true,
            TransitionKind::Value { value, mask } => key
                .iter()
                .zip(value)
                .zip(mask)
                .all(|((k, v), m)| (k & m) == *v),
            TransitionKind::ValueSet { vset, mask } => {
                cs.value_sets.get(*vset as usize).is_some_and(|vs| {
                    vs.iter().any(|v| {
                        // value-set values are right-aligned to the key
                        let pad = key.len().saturating_sub(v.len());
                        key.iter().enumerate().all(|(i, k)| {
                            let vb = if i < pad { 0 } else { v[i - pad] };
                            (k & mask[i]) == (vb & mask[i])
                        })
                    })
                })
            }
        });
        Ok(chosen.and_then(|t| t.next))
    }

    /// A condition's truth, through its load-time form when it has one.
    #[inline]
    fn test_cond(&self, phv: &Phv, expr: u32) -> bool {
        match self.fast_conds.get(expr as usize) {
            Some(Some(fc)) => fc.test(phv),
            _ => {
                let ec = EvalCtx::of_phv(phv);
                eval_bool(&self.prog, &ec, expr)
            }
        }
    }

    /// `extract` of a fixed header at a known PHV offset (the planned form of
    /// [`Engine::extract`]).
    #[inline(always)]
    fn extract_fixed(
        &self,
        ctx: &mut PacketCtx,
        h: u32,
        off: usize,
        len: usize,
        union: bool,
        cursor: &mut usize,
    ) -> Result<(), u32> {
        let data = ctx.pkt.data();
        let Some(src) = data.get(*cursor..*cursor + len) else {
            return Err(self.prog.error_codes.packet_too_short);
        };
        parse_plan::copy_small(&mut ctx.phv.data[off..off + len], src);
        if union {
            self.set_valid(&mut ctx.phv, h);
        } else {
            ctx.phv.valid[h as usize] = true;
        }
        *cursor += len;
        if self.cfg.trace {
            trace_line(ctx, || {
                let name = &self.prog.headers[h as usize].name;
                format!("extracted {name} ({len} bytes)")
            });
        }
        Ok(())
    }

    #[inline(never)]
    fn parser_op(
        &self,
        cs: &ControlState,
        ctx: &mut PacketCtx,
        op: &ParserOp,
        cursor: &mut usize,
        sc: &mut Scratch,
    ) -> Result<(), u32> {
        let p = &*self.prog;
        let codes = &p.error_codes;
        match op {
            ParserOp::Extract(h) => {
                let ec = EvalCtx::of_phv(&ctx.phv);
                let Some(h) = resolve_header(p, &ec, h) else {
                    return Err(codes.stack_out_of_bounds);
                };
                self.extract(ctx, h, cursor, None)
            }
            ParserOp::ExtractNext(s) => {
                let st = &p.stacks[*s as usize];
                let next = ctx.phv.stack_next[*s as usize] as usize;
                let Some(h) = st.headers.get(next).copied() else {
                    return Err(codes.stack_out_of_bounds);
                };
                self.extract(ctx, h, cursor, None)?;
                ctx.phv.stack_next[*s as usize] += 1;
                Ok(())
            }
            ParserOp::ExtractVarbit { header, bits } => {
                let data = ctx.pkt.data();
                let ec = EvalCtx {
                    phv: &ctx.phv,
                    ahead: &data[(*cursor).min(data.len())..],
                    action: None,
                };
                let Some(h) = resolve_header(p, &ec, header) else {
                    return Err(codes.stack_out_of_bounds);
                };
                let Some(n) = eval_index(p, &ec, *bits) else {
                    return Err(codes.parser_invalid_argument);
                };
                if !n.is_multiple_of(8) {
                    return Err(codes.parser_invalid_argument);
                }
                self.extract(ctx, h, cursor, Some(n as u32))
            }
            ParserOp::Set { dst, src } => {
                let data = std::mem::take(&mut ctx.pkt.buf);
                let ahead = &data[(ctx.pkt.start + *cursor).min(ctx.pkt.end)..ctx.pkt.end];
                self.assign(ctx, dst, *src, None, ahead);
                ctx.pkt.buf = data;
                Ok(())
            }
            ParserOp::Verify { cond, error } => {
                let data = ctx.pkt.data();
                let ec = EvalCtx {
                    phv: &ctx.phv,
                    ahead: &data[(*cursor).min(data.len())..],
                    action: None,
                };
                if eval_bool(p, &ec, *cond) {
                    Ok(())
                } else {
                    Err(eval_index(p, &ec, *error).unwrap_or(0) as u32)
                }
            }
            ParserOp::Advance(bits) => {
                let ec = EvalCtx::of_phv(&ctx.phv);
                let n = eval_index(p, &ec, *bits).unwrap_or(u64::MAX);
                if !n.is_multiple_of(8) {
                    return Err(codes.parser_invalid_argument);
                }
                let bytes = (n / 8) as usize;
                if *cursor + bytes > ctx.pkt.len() {
                    return Err(codes.packet_too_short);
                }
                *cursor += bytes;
                Ok(())
            }
            ParserOp::Primitive(prim) => {
                let mut pc = 0usize;
                let body = std::slice::from_ref(prim);
                let _ = self.prim(cs, None, ctx, body, &mut pc, None, sc, 0);
                Ok(())
            }
        }
    }

    fn extract(
        &self,
        ctx: &mut PacketCtx,
        h: u32,
        cursor: &mut usize,
        varbits: Option<u32>,
    ) -> Result<(), u32> {
        let p = &*self.prog;
        let hi = &p.headers[h as usize];
        let bytes = match varbits {
            Some(vb) => {
                if hi.fixed_bits + vb > hi.max_bytes * 8 {
                    return Err(p.error_codes.header_too_short);
                }
                ((hi.fixed_bits + vb) / 8) as usize
            }
            None => hi.max_bytes as usize,
        };
        let data = ctx.pkt.data();
        if *cursor + bytes > data.len() {
            return Err(p.error_codes.packet_too_short);
        }
        let off = hi.offset as usize;
        if varbits.is_some() {
            // varbit header: clear the full slot first (the varbit field is left-aligned)
            ctx.phv.data[off..off + hi.max_bytes as usize].fill(0);
        }
        ctx.phv.data[off..off + bytes].copy_from_slice(&data[*cursor..*cursor + bytes]);
        if let (Some(slot), Some(vb)) = (hi.varbit_slot, varbits) {
            ctx.phv.varbit_bits[slot as usize] = vb;
        }
        self.set_valid(&mut ctx.phv, h);
        *cursor += bytes;
        if self.cfg.trace {
            let name = hi.name.clone();
            ctx.log.push(format!("extracted {name} ({bytes} bytes)"));
        }
        Ok(())
    }

    /// Marks a header valid; a union member invalidates its siblings.
    fn set_valid(&self, phv: &mut Phv, h: u32) {
        let p = &*self.prog;
        if let Some((u, _)) = p.headers[h as usize].union {
            for m in &p.unions[u as usize].headers {
                phv.valid[*m as usize] = false;
            }
        }
        phv.valid[h as usize] = true;
    }

    #[inline(never)]
    fn verify_checksums(&self, ctx: &mut PacketCtx, sc: &mut Scratch) {
        let p = &*self.prog;
        if let Some(fc) = &self.mixed_csums
            && !self.cfg.trace
        {
            fc.verify(&mut ctx.phv, self.sm.checksum_error);
            return self.verify_general(ctx, sc, &fc.general_verify);
        }
        let mut bad = false;
        for ck in p.checksums.iter().filter(|c| c.verify) {
            bad |= self.verify_one(ctx, ck, sc);
        }
        if bad {
            self.std_set(&mut ctx.phv, self.sm.checksum_error, 1);
        }
    }

    /// The verified checksums `which` (indexes in the program) by the general code,
    /// after the fast ones.
    fn verify_general(&self, ctx: &mut PacketCtx, sc: &mut Scratch, which: &[u32]) {
        let p = &*self.prog;
        let mut bad = false;
        for &i in which {
            if let Some(ck) = p.checksums.get(i as usize) {
                bad |= self.verify_one(ctx, ck, sc);
            }
        }
        if bad {
            self.std_set(&mut ctx.phv, self.sm.checksum_error, 1);
        }
    }

    /// Whether checksum `ck` is checked and fails.
    fn verify_one(
        &self,
        ctx: &mut PacketCtx,
        ck: &p4jet_ir::ChecksumInfo,
        sc: &mut Scratch,
    ) -> bool {
        let p = &*self.prog;
        let ec = EvalCtx::of_phv(&ctx.phv);
        let Some(fid) = resolve_field(p, &ec, &ck.target) else {
            return false;
        };
        let fi = &p.fields[fid as usize];
        if !ctx.phv.valid[fi.header as usize] {
            return false;
        }
        if let Some(c) = ck.cond
            && !self.test_cond(&ctx.phv, c)
        {
            return false;
        }
        let got = self.calc_value(ctx, ck.calc, sc, None);
        let have = ctx.phv.read_raw(fi.loc);
        if (got as u128) & mask_of(fi.loc.width) != have {
            let name = ck.name.clone();
            self.trace(ctx, || format!("checksum {name} failed"));
            return true;
        }
        false
    }

    /// Runs a calculation over the packet's current headers and payload.
    fn calc_value(
        &self,
        ctx: &PacketCtx,
        calc: u32,
        sc: &mut Scratch,
        cs: Option<&ControlState>,
    ) -> u64 {
        let p = &*self.prog;
        let plan = self.calc_plans.get(calc as usize).and_then(Option::as_ref);
        if let Some(hash::CalcPlan {
            csum_pieces: Some(pieces),
            ..
        }) = plan
        {
            return hash::csum16_planned(&ctx.phv, pieces);
        }
        let c = &p.calculations[calc as usize];
        let payload = &ctx.pkt.data()[ctx.payload_off.min(ctx.pkt.len())..];
        match plan {
            Some(plan) => hash::build_planned(p, &ctx.phv, &plan.items, payload, &mut sc.calc),
            None => {
                let ec = EvalCtx::of_phv(&ctx.phv);
                hash::build_input(p, &ec, c, payload, &mut sc.calc)
            }
        }
        let custom = c
            .custom_slot
            .and_then(|s| cs.and_then(|cs| cs.crc.get(s as usize).copied().flatten()));
        hash::run(c.algo, &sc.calc, custom.as_ref())
    }

    // ------------------------------------------------------------------ controls

    /// Runs a control over a batch. Packets walk the control graph together: nodes are
    /// visited in topological order, and at a table node every packet waiting there is
    /// looked up in one batch.
    pub fn run_control<P: DerefMut<Target = PacketCtx>>(
        &self,
        cs: &ControlState,
        ex: &Externs,
        which: Pipeline,
        pkts: &mut [P],
        sc: &mut Scratch,
        now_us: u64,
    ) {
        let p = &*self.prog;
        let ctl = match which {
            Pipeline::Ingress => &p.ingress,
            Pipeline::Egress => &p.egress,
        };
        let conds = &self.node_conds[which as usize];
        for ctx in pkts.iter_mut() {
            ctx.exit = false;
        }
        let Some(init) = ctl.init else {
            return;
        };
        for chunk in pkts.chunks_mut(SUB_BATCH) {
            let n = chunk.len();
            // every edge goes to a higher node index, so one pass in index order moves
            // every packet to its end; a node's packets are taken in batch order
            sc.at.clear();
            sc.at.resize(ctl.nodes.len(), 0);
            sc.at[init as usize] = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
            for (ni, node) in ctl.nodes.iter().enumerate() {
                let mut here = sc.at[ni];
                if here == 0 {
                    continue;
                }
                match (conds.get(ni), node) {
                    (Some(Some(cond)), ControlNode::Cond { t, f, .. }) if !self.cfg.trace => {
                        let yes = cond.truth_mask(here, chunk);
                        move_all(&mut sc.at, yes, *t);
                        move_all(&mut sc.at, here & !yes, *f);
                    }
                    (_, ControlNode::Cond { expr, t, f, name }) => {
                        while here != 0 {
                            let i = here.trailing_zeros() as usize;
                            here &= here - 1;
                            let b = self.test_cond(&chunk[i].phv, *expr);
                            if self.cfg.trace {
                                chunk[i].log.push(format!("condition {name} is {b}"));
                            }
                            move_to(&mut sc.at, i, if b { *t } else { *f });
                        }
                    }
                    (_, ControlNode::Call { action, next, .. }) => {
                        while here != 0 {
                            let i = here.trailing_zeros() as usize;
                            here &= here - 1;
                            let call = ActionCall {
                                action: *action,
                                data: Box::new([]),
                            };
                            self.run_action(cs, ex, &mut chunk[i], &call, sc, now_us);
                            if !chunk[i].exit {
                                move_to(&mut sc.at, i, *next);
                            }
                        }
                    }
                    (_, ControlNode::Table(t)) => {
                        self.apply_table(cs, ex, *t, here, chunk, sc, now_us)
                    }
                }
            }
        }
    }

    /// Writes table `t`'s key for `phv` at the start of `out`, which must have
    /// `KEY_SLACK` bytes of room past the key: short parts are written as whole
    /// 8-byte words, and the bytes past a part are overwritten by the next
    /// part (parts are in key order) or lie past the key.
    fn build_key(&self, t: u32, phv: &Phv, out: &mut [u8]) {
        let mut off = 0;
        for part in &self.key_plans[t as usize] {
            match part {
                KeyPart::Bytes { byte, n } => {
                    let (byte, n) = (*byte, *n);
                    if n <= 16
                        && let Some(src) = phv.data.get(byte..byte + 16)
                    {
                        out[off..off + 8].copy_from_slice(&src[..8]);
                        if n > 8 {
                            out[off + 8..off + 16].copy_from_slice(&src[8..]);
                        }
                    } else {
                        copy_short(&mut out[off..off + n], &phv.data[byte..byte + n]);
                    }
                    off += n;
                }
                KeyPart::Field { loc, nbytes, mask } => {
                    let mut v = phv.read_raw(*loc);
                    if let Some(m) = mask {
                        v &= m;
                    }
                    let nbytes = *nbytes;
                    if nbytes <= 8 {
                        // the field's bytes first, big-endian, then zeros
                        let w = (v as u64) << (64 - 8 * nbytes as u32);
                        out[off..off + 8].copy_from_slice(&w.to_be_bytes());
                    } else {
                        let be = v.to_be_bytes();
                        out[off..off + nbytes].copy_from_slice(&be[16 - nbytes..]);
                    }
                    off += nbytes;
                }
                KeyPart::Wide { loc, nbytes, mask } => {
                    let mut v = phv.read_big(*loc);
                    if let Some(m) = mask {
                        v &= m;
                    }
                    put_big(&v, &mut out[off..off + nbytes]);
                    off += nbytes;
                }
                KeyPart::Valid(h) => {
                    out[off] = phv.valid[*h as usize] as u8;
                    off += 1;
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
    fn apply_table<P: DerefMut<Target = PacketCtx>>(
        &self,
        cs: &ControlState,
        ex: &Externs,
        t: u32,
        here: u64,
        chunk: &mut [P],
        sc: &mut Scratch,
        now_us: u64,
    ) {
        let p = &*self.prog;
        let ti = &p.tables[t as usize];
        let ts = &cs.tables[t as usize];
        let kb = ti.key_bytes as usize;
        let n = chunk.len();
        // 1. keys for every packet waiting here
        let mut waiting = [0u8; SUB_BATCH];
        let mut w = 0usize;
        sc.keys.clear();
        sc.keys.resize(n * kb.max(1) + KEY_SLACK, 0);
        let runs = self.key_runs[t as usize].as_deref();
        let mut m = here;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            waiting[w] = i as u8;
            if kb > 0 {
                let out = &mut sc.keys[w * kb..];
                match runs {
                    Some(r) => key_from_runs(r, &chunk[i].phv.data, out),
                    None => self.build_key(t, &chunk[i].phv, out),
                }
            }
            w += 1;
        }
        // 2. one batched lookup (the keys are followed by scratch bytes: the
        // tables may read whole words past a key; `hits[..w]` bounds the count)
        let mut hits: [Option<(EntryHandle, &EntryValue)>; SUB_BATCH] = [None; SUB_BATCH];
        if kb > 0 && !ts.entries.is_empty() {
            let keys = std::mem::take(&mut sc.keys);
            ts.entries.lookup_batch(&keys, &mut hits[..w]);
            sc.keys = keys;
        }
        // 3. actions (whether the table has direct counters or meters: once per batch)
        let direct = ti.direct_meter.is_some()
            || ex
                .direct_counters
                .get(t as usize)
                .is_some_and(Option::is_some)
            || ti.support_timeout;
        // the common case without per-packet tests of what the table cannot have: no
        // direct counter or meter, no trace, the next node fixed or by hit/miss
        let fixed_next = match (&ti.next, self.same_next[t as usize]) {
            (_, Some(next)) => Some((next, next)),
            (TableNext::HitMiss { hit, miss }, None) => Some((*hit, *miss)),
            _ => None,
        };
        if let Some((on_hit, on_miss)) = fixed_next
            && !direct
            && !self.cfg.trace
        {
            // the packets that hit, and those that exited: moved on together after
            let (mut hit_mask, mut gone) = (0u64, 0u64);
            for (k, hit) in hits.iter().enumerate().take(w) {
                let i = waiting[k] as usize;
                let ctx = &mut *chunk[i];
                let action = match hit {
                    Some((_, v)) => {
                        hit_mask |= 1u64 << i;
                        Some(&v.action)
                    }
                    None => ts.default.as_ref(),
                };
                match action {
                    Some(EntryAction::Direct(call)) => {
                        self.run_quick(cs, ex, ctx, call, sc, now_us)
                    }
                    Some(a) => {
                        if let Some(call) = self.resolve_entry_action(cs, t, a, ctx, sc) {
                            self.run_quick(cs, ex, ctx, call, sc, now_us);
                        }
                    }
                    None => {}
                }
                gone |= u64::from(ctx.exit) << i;
            }
            let stay = here & !gone;
            move_all(&mut sc.at, stay & hit_mask, on_hit);
            move_all(&mut sc.at, stay & !hit_mask, on_miss);
            return;
        }
        for (k, hit) in hits.iter().enumerate().take(w) {
            let i = waiting[k] as usize;
            let ctx = &mut *chunk[i];
            let (action, is_hit) = match hit {
                Some((h, v)) => {
                    if direct {
                        self.count_and_meter(ex, t, *h, ctx, now_us);
                    }
                    if self.cfg.trace {
                        ctx.log.push(format!("table {}: hit entry {h}", ti.name));
                    }
                    (Some(&v.action), true)
                }
                None => {
                    if self.cfg.trace {
                        ctx.log.push(format!("table {}: miss", ti.name));
                    }
                    (ts.default.as_ref(), false)
                }
            };
            let call = match action {
                Some(EntryAction::Direct(c)) => Some(c),
                Some(a) => self.resolve_entry_action(cs, t, a, ctx, sc),
                None => None,
            };
            let next = match &ti.next {
                TableNext::HitMiss { hit, miss } => {
                    if is_hit {
                        *hit
                    } else {
                        *miss
                    }
                }
                TableNext::ByAction(v) => match (&call, self.same_next[t as usize]) {
                    (_, Some(next)) => next,
                    (Some(c), None) => ti.action_slot(c.action).and_then(|s| v[s]),
                    (None, None) => ti.base_default_next,
                },
            };
            if let Some(call) = call {
                if self.cfg.trace {
                    ctx.log
                        .push(format!("action {}", p.actions[call.action as usize].name));
                }
                self.run_quick(cs, ex, ctx, call, sc, now_us);
            }
            if !ctx.exit {
                move_to(&mut sc.at, i, next);
            }
        }
    }

    /// Runs a table's action on one packet through its load-time form when it has one.
    #[inline(always)]
    fn run_quick(
        &self,
        cs: &ControlState,
        ex: &Externs,
        ctx: &mut PacketCtx,
        call: &ActionCall,
        sc: &mut Scratch,
        now_us: u64,
    ) {
        match self.quick.get(call.action as usize) {
            Some(QuickAction::Nothing) => {}
            Some(&QuickAction::ParamCopy(pc)) if copy_param(&mut ctx.phv, &call.data, pc) => {}
            Some(QuickAction::Steps { steps, need }) if call.data.len() >= *need => {
                self.run_steps(steps, ctx, call)
            }
            _ => self.run_action(cs, ex, ctx, call, sc, now_us),
        }
    }

    /// A table hit's direct counter, direct meter (the meter's colour written to its
    /// result field) and hit time (tables whose entries can age); out of line: most
    /// tables have none of them.
    #[inline(never)]
    fn count_and_meter(
        &self,
        ex: &Externs,
        t: u32,
        h: EntryHandle,
        ctx: &mut PacketCtx,
        now_us: u64,
    ) {
        let p = &*self.prog;
        let ti = &p.tables[t as usize];
        if let Some(Some(cells)) = ex.direct_counters.get(t as usize)
            && let Some(c) = cells.get(state::handle_index(h))
        {
            c.count(ctx.ingress_len);
        }
        // entries that can age: when they were last hit
        if let Some(Some(hits)) = ex.entry_hits.get(t as usize)
            && let Some(c) = hits.get(state::handle_index(h))
        {
            c.store(
                now_us.saturating_add(1),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        if let (Some(mi), Some(Some(cells))) = (ti.direct_meter, ex.direct_meters.get(t as usize))
            && let Some(cell) = cells.get(state::handle_index(h))
        {
            let m = &p.meters[mi as usize];
            let units = if m.bytes { ctx.ingress_len as u64 } else { 1 };
            let color = cell
                .lock()
                .map(|mut c| c.execute(units, now_us))
                .unwrap_or(0);
            if let Some((_, dst)) = &m.direct {
                let ec = EvalCtx::of_phv(&ctx.phv);
                if let Some(fid) = resolve_field(p, &ec, dst) {
                    self.write_bits(&mut ctx.phv, fid, color as u128);
                }
            }
        }
    }

    /// Turns a stored entry action into the action call to run (member lookup, selector
    /// hashing for groups).
    fn resolve_entry_action<'a>(
        &self,
        cs: &'a ControlState,
        t: u32,
        a: &'a EntryAction,
        ctx: &PacketCtx,
        sc: &mut Scratch,
    ) -> Option<&'a ActionCall> {
        let p = &*self.prog;
        match a {
            EntryAction::Direct(c) => Some(c),
            EntryAction::Member(m) => {
                let prof = p.tables[t as usize].action_profile?;
                cs.profiles
                    .get(prof as usize)?
                    .members
                    .get(m)
                    .map(|m| &m.call)
            }
            EntryAction::Group(g) => {
                let prof = p.tables[t as usize].action_profile?;
                let ps = cs.profiles.get(prof as usize)?;
                let members = ps.groups.get(g)?;
                if members.is_empty() {
                    return None;
                }
                let (calc, _) = p.action_profiles[prof as usize].selector.as_ref()?;
                let h = self.calc_value(ctx, *calc, sc, Some(cs));
                sc.members.clear();
                sc.members.extend_from_slice(members);
                let m = sc.members[(h % members.len() as u64) as usize];
                ps.members.get(&m).map(|m| &m.call)
            }
            EntryAction::OneShot(o) => {
                if o.pick.is_empty() {
                    return None;
                }
                let prof = p.tables[t as usize].action_profile?;
                let (calc, _) = p.action_profiles[prof as usize].selector.as_ref()?;
                let h = self.calc_value(ctx, *calc, sc, Some(cs));
                let i = o.pick[(h % o.pick.len() as u64) as usize];
                o.actions.get(i as usize).map(|(c, _, _)| c)
            }
        }
    }

    /// Runs a [`QuickAction::Steps`] body (the action data is long enough).
    #[inline(never)]
    fn run_steps(&self, steps: &[QuickStep], ctx: &mut PacketCtx, call: &ActionCall) {
        for st in steps {
            match st {
                QuickStep::Copy(pc) => {
                    copy_param(&mut ctx.phv, &call.data, *pc);
                }
                QuickStep::FieldAdd { dst, src, k } => field_add(&mut ctx.phv, *dst, *src, *k),
                QuickStep::Const(..) | QuickStep::Expr(..) | QuickStep::FieldOps { .. } => {
                    self.step_other(st, ctx, call)
                }
            }
        }
    }

    /// The steps other than copies and additions (which `run_steps` runs itself), out
    /// of line: their general writes would otherwise enlarge every `run_steps` frame.
    #[inline(never)]
    fn step_other(&self, st: &QuickStep, ctx: &mut PacketCtx, call: &ActionCall) {
        match st {
            QuickStep::Const(loc, v) => ctx.phv.write(*loc, *v),
            QuickStep::Expr(loc, fe) => self.step_expr(*loc, fe, ctx, call),
            QuickStep::FieldOps { dst, src, ops, n } => {
                field_ops(&mut ctx.phv, *dst, *src, &ops[..*n as usize])
            }
            QuickStep::Copy(_) | QuickStep::FieldAdd { .. } => {}
        }
    }

    /// A [`QuickStep::Expr`], out of line: the 128-bit evaluator's stack would
    /// otherwise enlarge every `run_steps` frame.
    #[inline(never)]
    fn step_expr(
        &self,
        loc: p4jet_ir::FieldLoc,
        fe: &eval::FastExpr,
        ctx: &mut PacketCtx,
        call: &ActionCall,
    ) {
        if let Some(a) = self.prog.actions.get(call.action as usize) {
            assign_fast(ctx, loc, fe, a, &call.data);
        }
    }

    /// Runs an action on one packet.
    pub fn run_action(
        &self,
        cs: &ControlState,
        ex: &Externs,
        ctx: &mut PacketCtx,
        call: &ActionCall,
        sc: &mut Scratch,
        now_us: u64,
    ) {
        let p = &*self.prog;
        let Some(a) = p.actions.get(call.action as usize) else {
            return;
        };
        let mut pc = 0usize;
        let mut guard = 0u32;
        while pc < a.body.len() {
            guard += 1;
            if guard > 1_000_000 {
                break;
            }
            // the commonest primitives without the general dispatcher's frame
            match &a.body[pc] {
                Prim::AssignConst { dst, value } => {
                    ctx.phv.write(p.fields[*dst as usize].loc, *value);
                    pc += 1;
                    continue;
                }
                Prim::AssignParam { dst, param } => {
                    if let Some(Some(copy)) = self
                        .param_copies
                        .get(call.action as usize)
                        .and_then(|v| v.get(pc))
                        && copy_param(&mut ctx.phv, &call.data, *copy)
                    {
                        pc += 1;
                        continue;
                    }
                    let off = a.param_offsets[*param as usize] as usize;
                    let w = a.params[*param as usize].1;
                    let v = crate::phv::read_param(&call.data, off, w);
                    ctx.phv.write(p.fields[*dst as usize].loc, v);
                    pc += 1;
                    continue;
                }
                Prim::CopyField { dst, src } => {
                    let v = ctx.phv.read(p.fields[*src as usize].loc);
                    ctx.phv.write(p.fields[*dst as usize].loc, v);
                    pc += 1;
                    continue;
                }
                Prim::Assign {
                    dst: FieldRef::Static(fid),
                    src,
                } => {
                    if let Some(Some(fe)) = self.fast_exprs.get(*src as usize) {
                        let loc = p.fields[*fid as usize].loc;
                        if loc.width <= 128 {
                            assign_fast(ctx, loc, fe, a, &call.data);
                            pc += 1;
                            continue;
                        }
                    }
                }
                _ => {}
            }
            let jumped = self.prim(
                cs,
                Some(ex),
                ctx,
                &a.body,
                &mut pc,
                Some((a, &call.data)),
                sc,
                now_us,
            );
            if !jumped {
                pc += 1;
            }
            if ctx.exit {
                break;
            }
        }
    }

    /// Executes `body[*pc]`; returns true when it changed `pc` itself.
    #[allow(clippy::too_many_arguments)]
    fn prim(
        &self,
        cs: &ControlState,
        ex: Option<&Externs>,
        ctx: &mut PacketCtx,
        body: &[Prim],
        pc: &mut usize,
        action: Option<(&p4jet_ir::Action, &[u8])>,
        sc: &mut Scratch,
        now_us: u64,
    ) -> bool {
        let p = &*self.prog;
        let Some(prim) = body.get(*pc) else {
            return false;
        };
        macro_rules! ec {
            () => {
                EvalCtx {
                    phv: &ctx.phv,
                    ahead: &[],
                    action,
                }
            };
        }
        match prim {
            Prim::AssignConst { dst, value } => {
                ctx.phv.write(p.fields[*dst as usize].loc, *value);
            }
            Prim::AssignParam { dst, param } => {
                if let Some((a, data)) = action {
                    let off = a.param_offsets[*param as usize] as usize;
                    let w = a.params[*param as usize].1;
                    let v = crate::phv::read_param(data, off, w);
                    ctx.phv.write(p.fields[*dst as usize].loc, v);
                }
            }
            Prim::CopyField { dst, src } => {
                let v = ctx.phv.read(p.fields[*src as usize].loc);
                ctx.phv.write(p.fields[*dst as usize].loc, v);
            }
            Prim::Assign { dst, src } => self.assign(ctx, dst, *src, action, &[]),
            Prim::AssignVarbit { dst, src } => {
                let ecx = ec!();
                if let (Some(d), Some(s)) =
                    (resolve_field(p, &ecx, dst), resolve_field(p, &ecx, src))
                {
                    let (dh, sh) = (p.fields[d as usize].header, p.fields[s as usize].header);
                    let (dl, sl) = (p.fields[d as usize].loc, p.fields[s as usize].loc);
                    let v = ctx.phv.read_big(sl);
                    ctx.phv.write_big(dl, &v);
                    if let (Some(ds), Some(ss)) = (
                        p.headers[dh as usize].varbit_slot,
                        p.headers[sh as usize].varbit_slot,
                    ) {
                        ctx.phv.varbit_bits[ds as usize] = ctx.phv.varbit_bits[ss as usize];
                    }
                }
            }
            Prim::AssignHeader { dst, src } => {
                let ecx = ec!();
                if let (Some(d), Some(s)) =
                    (resolve_header(p, &ecx, dst), resolve_header(p, &ecx, src))
                {
                    self.copy_header(&mut ctx.phv, d, s);
                }
            }
            Prim::AssignUnion { dst, src } => {
                let ecx = ec!();
                if let (Some(d), Some(s)) = (
                    eval::resolve_union(p, &ecx, dst),
                    eval::resolve_union(p, &ecx, src),
                ) {
                    let (dh, sh) = (
                        p.unions[d as usize].headers.clone(),
                        p.unions[s as usize].headers.clone(),
                    );
                    for (a, b) in dh.iter().zip(&sh) {
                        self.copy_header(&mut ctx.phv, *a, *b);
                    }
                }
            }
            Prim::AssignStack { dst, src } => {
                let (dh, sh) = (
                    &p.stacks[*dst as usize].headers,
                    &p.stacks[*src as usize].headers,
                );
                for (a, b) in dh.iter().zip(sh) {
                    self.copy_header(&mut ctx.phv, *a, *b);
                }
                ctx.phv.stack_next[*dst as usize] = ctx.phv.stack_next[*src as usize];
            }
            Prim::AddHeader(h) => {
                if let Some(h) = resolve_header(p, &ec!(), h)
                    && !ctx.phv.valid[h as usize]
                {
                    let hi = &p.headers[h as usize];
                    ctx.phv.data[hi.offset as usize..(hi.offset + hi.max_bytes) as usize].fill(0);
                    if let Some(s) = hi.varbit_slot {
                        ctx.phv.varbit_bits[s as usize] = 0;
                    }
                    self.set_valid(&mut ctx.phv, h);
                    // simple_switch's add_header: the length register grows by the
                    // header's size (siblings a union member invalidates are not taken off)
                    let n = header_bytes(p, &ctx.phv, h) as u64;
                    ctx.length_reg = ctx.length_reg.wrapping_add(n);
                }
            }
            Prim::AddHeaderFast(h) => {
                if let Some(h) = resolve_header(p, &ec!(), h) {
                    self.set_valid(&mut ctx.phv, h);
                }
            }
            Prim::RemoveHeader(h) => {
                if let Some(h) = resolve_header(p, &ec!(), h)
                    && ctx.phv.valid[h as usize]
                {
                    // simple_switch's remove_header: the length register shrinks by the
                    // size of a header that was valid
                    let n = header_bytes(p, &ctx.phv, h) as u64;
                    ctx.length_reg = ctx.length_reg.wrapping_sub(n);
                    ctx.phv.valid[h as usize] = false;
                }
            }
            Prim::Push(s, n) => {
                let n = eval_index(p, &ec!(), *n).unwrap_or(0) as usize;
                let hs = &p.stacks[*s as usize].headers;
                let size = hs.len();
                for i in (0..size).rev() {
                    if i >= n {
                        self.copy_header(&mut ctx.phv, hs[i], hs[i - n]);
                    } else {
                        ctx.phv.valid[hs[i] as usize] = false;
                    }
                }
                let next = &mut ctx.phv.stack_next[*s as usize];
                *next = (*next as usize + n).min(size) as u32;
            }
            Prim::Pop(s, n) => {
                let n = eval_index(p, &ec!(), *n).unwrap_or(0) as usize;
                let hs = &p.stacks[*s as usize].headers;
                let size = hs.len();
                for i in 0..size {
                    if i + n < size {
                        self.copy_header(&mut ctx.phv, hs[i], hs[i + n]);
                    } else {
                        ctx.phv.valid[hs[i] as usize] = false;
                    }
                }
                let next = &mut ctx.phv.stack_next[*s as usize];
                *next = (*next as usize).saturating_sub(n) as u32;
            }
            Prim::MarkToDrop => {
                let drop = self.cfg.drop_port as u128;
                self.std_set(&mut ctx.phv, self.sm.egress_spec, drop);
                self.std_set(&mut ctx.phv, self.sm.mcast_grp, 0);
            }
            Prim::Exit => ctx.exit = true,
            Prim::Truncate(len) => {
                // bmv2's Packet::truncate keeps the smallest length asked for
                if let Some(v) = eval_index(p, &ec!(), *len) {
                    let v = v.min(u32::MAX as u64) as u32;
                    ctx.truncate = Some(ctx.truncate.map_or(v, |t| t.min(v)));
                }
            }
            Prim::LogMsg { fmt, args } => {
                let mut out = String::new();
                let mut it = args.iter();
                let mut rest = fmt.as_str();
                while let Some(i) = rest.find("{}") {
                    out.push_str(&rest[..i]);
                    if let Some(a) = it.next() {
                        out.push_str(&eval_exact(p, &ec!(), *a).to_string());
                    }
                    rest = &rest[i + 2..];
                }
                out.push_str(rest);
                if self.cfg.trace {
                    ctx.log.push(format!("log_msg: {out}"));
                }
            }
            Prim::Assert {
                cond,
                assume,
                source,
            } => {
                if !eval_bool(p, &ec!(), *cond) {
                    let what = if *assume { "assume" } else { "assert" };
                    let msg = format!("{what} failed: {source}");
                    ctx.log.push(msg);
                }
            }
            Prim::Hash {
                dst,
                base,
                calc,
                max,
            } => {
                let h = self.calc_value(ctx, *calc, sc, Some(cs));
                let ecx = ec!();
                let base = eval_exact(p, &ecx, *base);
                let max = eval_exact(p, &ecx, *max);
                let v = if max.sign() == Sign::NoSign {
                    base
                } else {
                    base + (BigInt::from(h) % max)
                };
                if let Some(fid) = resolve_field(p, &ecx, dst) {
                    self.write_exact(&mut ctx.phv, fid, &v);
                }
            }
            Prim::Random { dst, lo, hi } => {
                let ecx = ec!();
                let (lo, hi) = (
                    eval_index(p, &ecx, *lo).unwrap_or(0),
                    eval_index(p, &ecx, *hi).unwrap_or(0),
                );
                if lo <= hi
                    && let Some(fid) = resolve_field(p, &ecx, dst)
                {
                    let v = if lo == hi {
                        lo
                    } else {
                        lo + rand::random::<u64>() % (hi - lo + 1).max(1)
                    };
                    self.write_bits(&mut ctx.phv, fid, v as u128);
                }
            }
            Prim::Count { counter, index } => {
                let i = eval_index(p, &ec!(), *index);
                if let Some(ex) = ex {
                    match i.and_then(|i| ex.counters[*counter as usize].get(i as usize)) {
                        Some(c) => c.count(ctx.ingress_len),
                        None => ctx.log.push(format!(
                            "counter {} index out of range",
                            p.counters[*counter as usize].name
                        )),
                    }
                }
            }
            Prim::ExecuteMeter { meter, index, dst } => {
                let ecx = ec!();
                let i = eval_index(p, &ecx, *index);
                let m = &p.meters[*meter as usize];
                let units = if m.bytes { ctx.ingress_len as u64 } else { 1 };
                let color = ex
                    .and_then(|ex| i.and_then(|i| ex.meters[*meter as usize].get(i as usize)))
                    .map(|c| c.lock().map(|mut c| c.execute(units, now_us)).unwrap_or(0));
                match (color, resolve_field(p, &ecx, dst)) {
                    (Some(c), Some(fid)) => self.write_bits(&mut ctx.phv, fid, c as u128),
                    _ => ctx.log.push(format!("meter {} index out of range", m.name)),
                }
            }
            Prim::RegisterRead {
                dst,
                register,
                index,
            } => {
                let ecx = ec!();
                let i = eval_index(p, &ecx, *index);
                let v = ex.and_then(|ex| {
                    i.and_then(|i| ex.registers[*register as usize].read(i as usize))
                });
                match (v, resolve_field(p, &ecx, dst)) {
                    (Some(v), Some(fid)) => self.write_exact(&mut ctx.phv, fid, &BigInt::from(v)),
                    _ => ctx.log.push(format!(
                        "register {} index out of range",
                        p.registers[*register as usize].name
                    )),
                }
            }
            Prim::RegisterWrite {
                register,
                index,
                value,
            } => {
                let ecx = ec!();
                let i = eval_index(p, &ecx, *index);
                let w = p.registers[*register as usize].width;
                let v = eval_exact(p, &ecx, *value);
                let m = BigInt::from(1) << w;
                let mut r = v % &m;
                if r.sign() == Sign::Minus {
                    r += &m;
                }
                let ok = ex.is_some_and(|ex| {
                    i.is_some_and(|i| {
                        ex.registers[*register as usize]
                            .write(i as usize, &r.to_biguint().unwrap_or_default())
                    })
                });
                if !ok {
                    ctx.log.push(format!(
                        "register {} index out of range",
                        p.registers[*register as usize].name
                    ));
                }
            }
            Prim::Clone {
                session,
                field_list,
                ..
            } => {
                let s = eval_index(p, &ec!(), *session).unwrap_or(0);
                ctx.clone = Some(((s & 0xffff) as u32, *field_list));
            }
            Prim::Resubmit(fl) => ctx.resubmit = Some(*fl),
            Prim::Recirculate(fl) => ctx.recirculate = Some(*fl),
            Prim::Digest(id) => ctx.digest = Some(*id),
            Prim::Jump(t) => {
                *pc = *t as usize;
                return true;
            }
            Prim::JumpIfZero(c, t) => {
                if !eval_bool(p, &ec!(), *c) {
                    *pc = *t as usize;
                    return true;
                }
            }
            Prim::Call(a) => {
                let call = ActionCall {
                    action: *a,
                    data: Box::new([]),
                };
                if let Some(ex) = ex {
                    self.run_action(cs, ex, ctx, &call, sc, now_us);
                }
            }
            Prim::Nop => {}
        }
        false
    }

    fn copy_header(&self, phv: &mut Phv, dst: u32, src: u32) {
        if dst == src {
            return;
        }
        let p = &*self.prog;
        let (d, s) = (&p.headers[dst as usize], &p.headers[src as usize]);
        let n = d.max_bytes.min(s.max_bytes) as usize;
        phv.data
            .copy_within(s.offset as usize..s.offset as usize + n, d.offset as usize);
        if let (Some(ds), Some(ss)) = (d.varbit_slot, s.varbit_slot) {
            phv.varbit_bits[ds as usize] = phv.varbit_bits[ss as usize];
        }
        if phv.valid[src as usize] {
            self.set_valid(phv, dst);
        } else {
            phv.valid[dst as usize] = false;
        }
    }

    // ------------------------------------------------------------------ deparser

    /// Updates checksums and writes the valid headers in front of the payload.
    /// Inlined into the egress loop; the rare cases (checksum updates, too little
    /// headroom) are out of line.
    #[inline(always)]
    pub fn deparse(&self, ctx: &mut PacketCtx, sc: &mut Scratch, cs: &ControlState) {
        let p = &*self.prog;
        if self.deparse_plan.has_update {
            match &self.fast_csums {
                Some(fc) => fc.update(&mut ctx.phv),
                None => self.update_checksums(ctx, sc, cs),
            }
        }
        let mut emitted = 0usize;
        match &self.deparse_plan.fixed {
            Some(fixed) => {
                for &(h, n) in fixed.iter() {
                    let valid = ctx.phv.valid.get(h as usize).copied().unwrap_or(false);
                    emitted += usize::from(valid) * n as usize;
                }
            }
            None => {
                for &(h, _, fixed) in &self.deparse_plan.headers {
                    if ctx.phv.valid[h as usize] {
                        emitted += fixed.unwrap_or_else(|| header_bytes(p, &ctx.phv, h)) as usize;
                    }
                }
            }
        }
        let pk = &ctx.pkt;
        let payload_start = pk.start + ctx.payload_off.min(pk.end - pk.start);
        if emitted > payload_start {
            return self.deparse_grow(ctx, payload_start, emitted);
        }
        self.emit(ctx, payload_start, emitted)
    }

    /// [`Engine::deparse`] when the headers to emit outgrow the headroom: the payload
    /// moves back first.
    #[cold]
    #[inline(never)]
    fn deparse_grow(&self, ctx: &mut PacketCtx, payload_start: usize, emitted: usize) {
        let pk = &mut ctx.pkt;
        let grow = emitted - payload_start + HEADROOM;
        let plen = pk.end - payload_start;
        pk.buf.grow_to(pk.end + grow);
        pk.buf
            .copy_within(payload_start..payload_start + plen, payload_start + grow);
        pk.end += grow;
        self.emit(ctx, payload_start + grow, emitted)
    }

    /// The deparser's checksum updates (out of line: most programs have none or one).
    #[inline(never)]
    fn update_checksums(&self, ctx: &mut PacketCtx, sc: &mut Scratch, cs: &ControlState) {
        let p = &*self.prog;
        if let Some(fc) = &self.mixed_csums {
            return match &fc.update_order {
                Some(order) => self.update_mixed(fc, order, ctx, sc, cs),
                // every updated checksum is fast (some verified one is not)
                None => fc.update(&mut ctx.phv),
            };
        }
        for ck in p.checksums.iter().filter(|c| c.update) {
            self.update_one(ctx, ck, sc, cs);
        }
    }

    /// The updates of a program whose checksums are partly fast, in program order.
    fn update_mixed(
        &self,
        fc: &FastChecksums,
        order: &[Result<u32, u32>],
        ctx: &mut PacketCtx,
        sc: &mut Scratch,
        cs: &ControlState,
    ) {
        let p = &*self.prog;
        for step in order {
            match *step {
                Ok(i) => {
                    if let Some(c) = fc.update.get(i as usize) {
                        FastChecksums::update_one(c, &mut ctx.phv);
                    }
                }
                Err(i) => {
                    if let Some(ck) = p.checksums.get(i as usize) {
                        self.update_one(ctx, ck, sc, cs);
                    }
                }
            }
        }
    }

    /// Updates checksum `ck` by the general code.
    fn update_one(
        &self,
        ctx: &mut PacketCtx,
        ck: &p4jet_ir::ChecksumInfo,
        sc: &mut Scratch,
        cs: &ControlState,
    ) {
        let p = &*self.prog;
        if let Some(c) = ck.cond
            && !self.test_cond(&ctx.phv, c)
        {
            return;
        }
        let ec = EvalCtx::of_phv(&ctx.phv);
        let Some(fid) = resolve_field(p, &ec, &ck.target) else {
            return;
        };
        let v = self.calc_value(ctx, ck.calc, sc, Some(cs));
        self.write_bits(&mut ctx.phv, fid, v as u128);
    }

    #[inline(always)]
    fn emit(&self, ctx: &mut PacketCtx, payload_start: usize, emitted: usize) {
        let p = &*self.prog;
        let mut at = payload_start - emitted;
        ctx.pkt.start = at;
        match self.deparse_plan.contiguous {
            // the headers lie back to back in the PHV and have fixed lengths, so the
            // valid ones add up to the whole run only when every header with bytes is
            // valid: then the run is one copy
            Some((off, n)) if n as usize == emitted => {
                let off = off as usize;
                parse_plan::copy_small(
                    &mut ctx.pkt.buf[at..at + emitted],
                    &ctx.phv.data[off..off + emitted],
                );
            }
            _ => {
                for &(h, off, fixed) in &self.deparse_plan.headers {
                    if ctx.phv.valid[h as usize] {
                        let n = fixed.unwrap_or_else(|| header_bytes(p, &ctx.phv, h)) as usize;
                        let off = off as usize;
                        parse_plan::copy_small(
                            &mut ctx.pkt.buf[at..at + n],
                            &ctx.phv.data[off..off + n],
                        );
                        at += n;
                    }
                }
            }
        }
        ctx.payload_off = emitted;
    }
}

/// Writes a field's value big-endian into `out` (ceil(width/8) bytes).
fn put_field(phv: &Phv, loc: FieldLoc, out: &mut [u8]) {
    if loc.width <= 128 {
        let v = phv.read_raw(loc);
        let be = v.to_be_bytes();
        let n = out.len();
        out.copy_from_slice(&be[16 - n..]);
    } else {
        put_big(&phv.read_big(loc), out);
    }
}

fn put_big(v: &BigUint, out: &mut [u8]) {
    let b = v.to_bytes_be();
    out.fill(0);
    let n = b.len().min(out.len());
    let ol = out.len();
    out[ol - n..].copy_from_slice(&b[b.len() - n..]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use p4jet_ir::FieldLoc;

    /// `dst = src OP k ...` as a [`QuickStep::FieldOps`] against the flattened
    /// expression's 128-bit evaluation and write, for fields of many widths (sharing
    /// bytes with their neighbours or not), every admitted operation, constants
    /// wider than the fields, and p4c's trailing masks.
    #[test]
    fn field_ops_equal_the_expression() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let widths = [1u32, 3, 7, 8, 9, 12, 16, 24, 31, 32, 33, 48, 56, 63, 64];
        let ops = [
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::And,
            BinOp::Or,
            BinOp::Xor,
        ];
        let (mut fast, mut checked, mut adds) = (0, 0, 0);
        for &dw in &widths {
            for &sw in &widths {
                for round in 0..40 {
                    let mut loc = |w: u32, byte: u32, own: bool| {
                        let bit = if own {
                            ((8 - w % 8) % 8) as u8
                        } else {
                            (rnd() % 8) as u8
                        };
                        let bit = if u32::from(bit) + w > 64 { 0 } else { bit };
                        FieldLoc::new(byte, bit, w, false, own)
                    };
                    let dst = loc(dw, 0, round % 4 != 3);
                    let src = loc(sw, 12, round % 5 != 4);
                    let nops = 1 + (rnd() % 3) as usize;
                    let mut list: Vec<(BinOp, u128)> = (0..nops)
                        .map(|_| {
                            let k = u128::from(rnd()) << 64 | u128::from(rnd());
                            let k = if rnd() % 2 == 0 { k & 0xff } else { k };
                            (ops[(rnd() % 6) as usize], k)
                        })
                        .collect();
                    if round % 2 == 0 {
                        list.push((BinOp::And, (1u128 << dw) - 1));
                    }
                    let fe = eval::FastExpr::of_field_ops(src, &list);
                    let step = match field_ops_step(dst, &fe) {
                        Some(st @ QuickStep::FieldOps { .. }) => st,
                        Some(st @ QuickStep::FieldAdd { .. }) => {
                            adds += 1;
                            st
                        }
                        _ => continue,
                    };
                    fast += 1;
                    for _ in 0..8 {
                        let mut a = Phv::zeroed(32);
                        for b in a.data.iter_mut() {
                            *b = rnd() as u8;
                        }
                        // a field that owns its bytes keeps zeros in the bits above it
                        a.write(src, u128::from(rnd()));
                        a.write(dst, u128::from(rnd()));
                        let mut b = a.clone();
                        let v = fe.eval(&EvalCtx {
                            phv: &a,
                            ahead: &[],
                            action: None,
                        });
                        a.write(dst, v);
                        match step {
                            QuickStep::FieldOps { dst, src, ops, n } => {
                                field_ops(&mut b, dst, src, &ops[..n as usize])
                            }
                            QuickStep::FieldAdd { dst, src, k } => field_add(&mut b, dst, src, k),
                            _ => unreachable!(),
                        }
                        assert_eq!(a.data, b.data, "dst {dst:?} src {src:?} ops {list:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(
            fast > 1000 && checked > 8000 && adds > 50,
            "{fast} {checked} {adds}"
        );
    }

    fn corpus_engine(name: &str) -> Engine {
        let path = format!(
            "{}/../../tests/corpus/{name}/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let json = std::fs::read_to_string(&path).unwrap();
        load(&json, EngineConfig::default()).unwrap()
    }

    /// The parser's one-step path: which programs get one, and that a packet off the
    /// path (another EtherType or protocol, too short) leaves the PHV untouched for the
    /// state-by-state parse (which the planned-vs-general differential test compares).
    #[test]
    fn parse_path_takes_only_packets_on_it() {
        // simple_router: Ethernet, then IPv4 on EtherType 0x0800, then accept
        let e = corpus_engine("simple_router");
        let path = e
            .parse_path
            .clone()
            .expect("simple_router has a parse path");
        assert_eq!((path.states(), path.next), (2, None));
        let mut frame = vec![0u8; 60];
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        frame[14] = 0x45;
        let mut ctx = e.new_ctx(frame.len() + 256);
        ctx.pkt.set(&frame);
        ctx.reset(&e.prog);
        let before = ctx.phv.clone();
        assert_eq!(path.run(ctx.pkt.data(), &mut ctx.phv), Some(34));
        assert_eq!(
            ctx.phv.valid.iter().filter(|v| **v).count(),
            before.valid.iter().filter(|v| **v).count() + 2
        );
        assert!(ctx.phv.data.contains(&0x45));
        for (what, f) in [
            ("IPv6 EtherType", {
                let mut f = frame.clone();
                f[12..14].copy_from_slice(&[0x86, 0xdd]);
                f
            }),
            ("33 bytes", frame[..33].to_vec()),
        ] {
            let mut ctx = e.new_ctx(f.len() + 256);
            ctx.pkt.set(&f);
            ctx.reset(&e.prog);
            assert_eq!(path.run(ctx.pkt.data(), &mut ctx.phv), None, "{what}");
            assert_eq!(ctx.phv.data, before.data, "{what}");
            assert_eq!(ctx.phv.valid, before.valid, "{what}");
        }
        // acl_firewall: Ethernet, IPv4, then TCP's state (extract and sets) by state
        let e = corpus_engine("acl_firewall");
        let path = e.parse_path.clone().expect("acl_firewall has a parse path");
        let tcp = e
            .prog
            .parser
            .states
            .iter()
            .position(|s| s.name == "parse_tcp");
        assert_eq!(path.states(), 2);
        assert_eq!(path.next.map(|s| s as usize), tcp);
        // basic_l2: one state, nothing to gain
        assert!(corpus_engine("basic_l2").parse_path.is_none());
        // the general parser has none
        let json = std::fs::read_to_string(format!(
            "{}/../../tests/corpus/simple_router/simple_router.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let g = load(
            &json,
            EngineConfig {
                general_parser: true,
                ..EngineConfig::default()
            },
        )
        .unwrap();
        assert!(g.parse_path.is_none());
    }

    /// vxlan_gateway's start state copies a 304-bit lookahead into a temporary and
    /// slices it with `(tmp >> k) & mask` into a dozen fields: planned, that is one
    /// packet copy and a read of each slice's bits (no big-integer evaluation), and only
    /// the `add_header` goes to the general code. (The planned-vs-general parser test
    /// checks the values, on whole and truncated frames.)
    #[test]
    fn wide_lookahead_and_its_slices_are_planned() {
        let e = corpus_engine("vxlan_gateway");
        let start = e.prog.parser.init.unwrap() as usize;
        let ops = &e.parse_plans[start].ops;
        let count = |f: fn(&parse_plan::PlanOp) -> bool| ops.iter().filter(|o| f(o)).count();
        assert_eq!(
            count(|o| matches!(o, parse_plan::PlanOp::SetAhead { n: 38, .. })),
            1
        );
        assert_eq!(count(|o| matches!(o, parse_plan::PlanOp::General(_))), 1);
        assert!(
            count(|o| matches!(o, parse_plan::PlanOp::Copy64 { .. })) >= 8,
            "{ops:?}"
        );
        assert_eq!(ops.len(), 14);
    }

    /// A program whose checksums are only partly fast (bng: IPv4 header checksums, and
    /// TCP checksums over a pseudo-header with a constant and metadata) keeps the fast
    /// form for those that have one and runs the others by the general code, updates in
    /// program order; a program whose checksums are all fast keeps the inlined path.
    /// (The planned-vs-general parser and deparser test checks the values.)
    #[test]
    fn partly_fast_checksums_keep_their_fast_forms() {
        let e = corpus_engine("bng");
        assert!(e.fast_csums.is_none());
        let m = e
            .mixed_csums
            .as_ref()
            .expect("bng's checksums are partly fast");
        // bng verifies only IPv4 header checksums: all fast
        assert!(!m.verify.is_empty() && m.general_verify.is_empty(), "{m:?}");
        let order = m.update_order.as_ref().expect("some update is general");
        assert!(order.iter().any(|o| o.is_ok()) && order.iter().any(|o| o.is_err()));
        let updates = e.prog.checksums.iter().filter(|c| c.update).count();
        assert_eq!(order.len(), updates);
        // in program order: the general ones' indexes increase
        let general: Vec<u32> = order.iter().filter_map(|o| o.err()).collect();
        assert!(general.windows(2).all(|w| w[0] < w[1]));
        // udp_tcp_checksum verifies IPv4 (fast), TCP and UDP (general)
        let e = corpus_engine("udp_tcp_checksum");
        let m = e.mixed_csums.as_ref().expect("partly fast");
        assert_eq!((m.verify.len(), m.general_verify.len()), (1, 2), "{m:?}");
        let e = corpus_engine("simple_router");
        assert!(e.fast_csums.is_some() && e.mixed_csums.is_none());
    }
}
