//! The only `unsafe` of the JIT: calling generated code, and the helpers generated code
//! calls back.
//!
//! The contract the generated code keeps (`codegen`): it reads and writes only through
//! the pointers of its [`Lane`]s and [`Env`] — a PHV (whose `PHV_PAD` bytes of padding
//! keep every 8-byte window load in bounds), its validity bytes, the frame bytes it
//! checked against the frame's length, the action data it checked against the data's
//! length, the key, hit and waiting buffers of `Env`, the static CRC tables of
//! `p4jet_engine::hash::CrcTable` at indexes masked to 0..=255 — and it calls only the
//! helpers below, with the pointers it was given.
//!
//! The contract the Rust side keeps: every pointer in a `Lane` or an `Env` comes from a
//! reference that lives, unmoved, for the whole call; nothing else touches those
//! objects during the call (one thread runs the generated code and its helpers, one at
//! a time); a helper turns a pointer back into a reference only for its own duration.

#![allow(unsafe_code)]

use std::mem::MaybeUninit;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use cranelift_jit::JITModule;
use p4jet_engine::state::{ControlState, EntryAction, Externs, TableState, count_entry_hit};
use p4jet_engine::{
    ControlBlock, Engine, Native, NativeStats, PacketCtx, Passed, Pkt, SUB_BATCH, Scratch,
};
use p4jet_tables::EntryHandle;

use crate::abi::{ACCEPT, ACTION_NONE, BEGUN, ERR_BIT, Env, FORCE, GROW, Hit, Lane, PARSE_ONLY};
use crate::codegen::{H, Helpers};

/// A function over a batch of at most 64 lanes: `(env, lanes, n)`.
pub(crate) type BatchFn = unsafe extern "C" fn(*mut Env, *mut Lane, u64) -> u64;

/// Room past the keys for whole-word writes and reads.
const KEY_SLACK: usize = 64;
/// Keys of at most this many bytes live in a stack buffer (longer ones on the heap).
const STACK_KEY: usize = 64;

/// A program compiled to native code: the functions, and the module that owns their
/// memory.
pub struct Compiled {
    /// Each packet entering ingress (PHV reset, arrival metadata; not for lanes marked
    /// [`BEGUN`]), the parser and checksum verification; for a program without an
    /// ingress control, then the unicast check ([`Compiled::arrive_unicast`]).
    pub(crate) arrive: BatchFn,
    /// The controls (None: the program has none); the ingress control may end each
    /// packet with the unicast check ([`Compiled::ingress_unicast`]).
    pub(crate) ingress: Option<BatchFn>,
    pub(crate) egress: Option<BatchFn>,
    /// After ingress: the plain unicast packets' fast-lane fields; counts the others.
    pub(crate) unicast: BatchFn,
    /// The ingress control does the unicast check itself and returns the count of the
    /// others (`codegen::control::fuses_unicast`): `unicast` is not called after it.
    pub(crate) ingress_unicast: bool,
    /// The arrival-and-parse function does it (no ingress control), for the lanes not
    /// marked [`PARSE_ONLY`].
    pub(crate) arrive_unicast: bool,
    /// Each packet entering egress (egress metadata; None: nothing to write, or the
    /// egress control does it, `codegen::control::fuses_begin_egress`).
    pub(crate) begin_egress: Option<BatchFn>,
    /// The deparser of the packets of an egress pass, or of one packet marked
    /// [`FORCE`] (None: a header has no fixed length; the interpreter deparses).
    pub(crate) deparse: Option<BatchFn>,
    /// Freed when this is dropped (only then: the function pointers above point into
    /// it).
    pub(crate) module: Mutex<Option<JITModule>>,
    pub(crate) stats: NativeStats,
    /// Per table: what the lookup helper needs of it.
    pub(crate) tables: Vec<TableCall>,
}

/// What [`h_lookup`] needs of a table, resolved when the program is compiled (the
/// table's entries and default are the control plane's: looked up per call).
pub(crate) struct TableCall {
    /// Bytes per key (0: keyless).
    key_bytes: usize,
    /// Direct counters, meters or hit times: outside the loop that writes each
    /// outcome as it is found, the interpreter resolves each outcome.
    direct: bool,
    /// A direct meter: the interpreter resolves each outcome (direct counters and hit
    /// times without one are updated in the lookup's loop).
    metered: bool,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("stats", &self.stats)
            .finish()
    }
}

impl Drop for Compiled {
    fn drop(&mut self) {
        let module = match self.module.get_mut() {
            Ok(m) => m.take(),
            Err(p) => p.into_inner().take(),
        };
        if let Some(m) = module {
            // SAFETY: the only pointers into the module's memory are this struct's
            // function pointers, and `self` is being dropped: no call is running (a
            // call borrows `self`) and none can start.
            unsafe { m.free_memory() };
        }
    }
}

/// The helpers' addresses for the code generator.
pub(crate) fn helpers() -> Helpers {
    let mut m = std::collections::HashMap::new();
    m.insert(H::ParseOp, h_parse_op as *const () as usize);
    m.insert(H::Select, h_select as *const () as usize);
    m.insert(H::Verify, h_verify as *const () as usize);
    m.insert(H::Update, h_update as *const () as usize);
    m.insert(H::UpdateOne, h_update_one as *const () as usize);
    m.insert(H::Test, h_test as *const () as usize);
    m.insert(H::BuildKey, h_build_key as *const () as usize);
    m.insert(H::Lookup, h_lookup as *const () as usize);
    m.insert(H::RunAction, h_run_action as *const () as usize);
    m.insert(H::Prim, h_prim as *const () as usize);
    m.insert(H::PayloadSum, h_payload_sum as *const () as usize);
    m.insert(H::Count, h_count as *const () as usize);
    Helpers(m)
}

/// The lane of packet `ctx` for the parser and the controls.
fn lane_of(ctx: &mut PacketCtx) -> Lane {
    let (start, end) = (ctx.pkt.start, ctx.pkt.end);
    let base = ctx.pkt.buf.as_mut_ptr();
    Lane {
        phv: ctx.phv.data.as_mut_ptr(),
        valid: ctx.phv.valid.as_mut_ptr().cast::<u8>(),
        pkt: base.wrapping_add(start),
        len: end.saturating_sub(start) as u64,
        out: 0,
        ctx,
    }
}

/// The packets of an egress chunk the generated deparser left to the interpreter: all
/// that leave (`all`: a header without a fixed length), else those whose headers
/// outgrew the headroom (the interpreter moves the payload). Out of line: rare.
#[cold]
#[inline(never)]
fn deparse_rest(
    e: &Engine,
    cs: &ControlState,
    sc: &mut Scratch,
    chunk: &mut [Pkt],
    lanes: &mut Lanes,
    all: bool,
) {
    for (i, ctx) in chunk.iter_mut().enumerate() {
        let again = if all {
            !ctx.req.pending && !e.dropped_in_egress(ctx)
        } else {
            lane_mut(lanes, i).out == GROW
        };
        if again {
            e.deparse_interp(ctx, sc, cs);
            ctx.deparsed = true;
        }
    }
}

/// A packet carrying preserved fields enters ingress by the interpreter's code (out
/// of line: rare, and inlined its field writes would cost every batch their set-up).
#[cold]
#[inline(never)]
fn begin_preserved(e: &Engine, ctx: &mut PacketCtx, now_us: u64) -> u64 {
    e.begin_ingress(ctx, now_us);
    BEGUN
}

/// The buffers of a control call: the keys, outcomes and lane indexes of the packets
/// waiting at a table.
struct Bufs {
    stack_keys: [MaybeUninit<u8>; SUB_BATCH * STACK_KEY + KEY_SLACK],
    heap_keys: Vec<u8>,
    hits: [MaybeUninit<Hit>; SUB_BATCH],
    waiting: [u8; SUB_BATCH],
}

impl Bufs {
    fn new(e: &Engine) -> Bufs {
        let kb = e.prog.max_key_bytes as usize;
        Bufs {
            stack_keys: [const { MaybeUninit::uninit() }; SUB_BATCH * STACK_KEY + KEY_SLACK],
            heap_keys: if kb > STACK_KEY {
                vec![0; SUB_BATCH * kb + KEY_SLACK]
            } else {
                Vec::new()
            },
            hits: [const { MaybeUninit::uninit() }; SUB_BATCH],
            waiting: [0; SUB_BATCH],
        }
    }

    fn keys(&mut self) -> *mut u8 {
        if self.heap_keys.is_empty() {
            self.stack_keys.as_mut_ptr().cast::<u8>()
        } else {
            self.heap_keys.as_mut_ptr()
        }
    }
}

/// Lanes of a chunk of at most 64 packets.
type Lanes = [MaybeUninit<Lane>; SUB_BATCH];

/// The lanes of `chunk` (at most 64 packets).
fn lanes_of(chunk: &mut [Pkt]) -> Lanes {
    let mut lanes: Lanes = [const { MaybeUninit::uninit() }; SUB_BATCH];
    for (l, ctx) in lanes.iter_mut().zip(chunk.iter_mut()) {
        l.write(lane_of(ctx));
    }
    lanes
}

/// The `i`th lane, initialized by [`lanes_of`] (or its caller) for a chunk longer
/// than `i`.
fn lane_mut(lanes: &mut Lanes, i: usize) -> &mut Lane {
    // SAFETY: per the caller, lane `i` was written.
    unsafe { lanes[i].assume_init_mut() }
}

impl Compiled {
    /// Calls the batch functions `fs` in order over `chunk`'s lanes.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        fs: &[BatchFn],
        e: &Engine,
        cs: &ControlState,
        ex: Option<&Externs>,
        sc: &mut Scratch,
        now_us: u64,
        lanes: &mut Lanes,
        n: usize,
        bufs: &mut Bufs,
    ) -> u64 {
        let lanes_ptr = lanes.as_mut_ptr().cast::<Lane>();
        let mut env = Env {
            engine: e,
            cs,
            ex: ex.map_or(std::ptr::null(), |x| x as *const Externs),
            sc,
            now_us,
            keys: bufs.keys(),
            hits: bufs.hits.as_mut_ptr().cast::<Hit>(),
            waiting: bufs.waiting.as_mut_ptr(),
            lanes: lanes_ptr,
            compiled: self,
            others: 0,
        };
        let mut r = 0;
        for f in fs {
            // SAFETY: the first `n` lanes were written from contexts borrowed mutably
            // by the caller for this call; the key buffer holds 64 keys of the
            // program's longest key and slack, the hit and waiting buffers 64
            // entries; `env`'s pointers come from references that outlive the call.
            // `f` was compiled for this engine; a control function gets externs (its
            // callers pass them).
            r = unsafe { f(&mut env, lanes_ptr, n as u64) };
        }
        r
    }

    /// The egress pass of one chunk (at most [`SUB_BATCH`] packets): egress metadata,
    /// control and deparser, and the interpreter's deparser for the packets the
    /// generated one left to it. `lanes` are written here, unless `ready`: the unicast
    /// check after ingress wrote them for egress (`Gen::egress_lane`).
    #[allow(clippy::too_many_arguments)]
    fn egress_chunk(
        &self,
        e: &Engine,
        cs: &ControlState,
        ex: &Externs,
        chunk: &mut [Pkt],
        sc: &mut Scratch,
        now_us: u64,
        bufs: &mut Bufs,
        lanes: &mut Lanes,
        ready: bool,
    ) {
        let n = chunk.len();
        if !ready {
            for (l, ctx) in lanes.iter_mut().zip(chunk.iter_mut()) {
                ctx.exit = false;
                ctx.req.clone = None;
                ctx.deparsed = false;
                // the deparser's lane: the buffer's start and the payload's offset
                let pk = &ctx.pkt;
                let payload = pk.start + ctx.payload_off.min(pk.end - pk.start);
                l.write(Lane {
                    phv: ctx.phv.data.as_mut_ptr(),
                    valid: ctx.phv.valid.as_mut_ptr().cast::<u8>(),
                    pkt: ctx.pkt.buf.as_mut_ptr(),
                    len: payload as u64,
                    out: 0,
                    ctx: &mut **ctx,
                });
            }
        }
        // the egress arrival, control and deparser that exist, in that order
        let mut fs = [self.arrive; 3];
        let mut k = 0;
        for f in [self.begin_egress, self.egress, self.deparse]
            .into_iter()
            .flatten()
        {
            fs[k] = f;
            k += 1;
        }
        let r = self.run(&fs[..k], e, cs, Some(ex), sc, now_us, lanes, n, bufs);
        let grown = if self.deparse.is_some() { r } else { 0 };
        if self.deparse.is_none() || grown > 0 {
            deparse_rest(e, cs, sc, chunk, lanes, self.deparse.is_none());
        }
    }
}

impl Native for Compiled {
    fn parse(&self, e: &Engine, cs: &ControlState, pkts: &mut [Pkt], sc: &mut Scratch) {
        let mut bufs = Bufs::new(e);
        for chunk in pkts.chunks_mut(SUB_BATCH) {
            let mut lanes = lanes_of(chunk);
            let n = chunk.len();
            for i in 0..n {
                // the caller reset the packets: parse only
                lane_mut(&mut lanes, i).out = BEGUN | PARSE_ONLY;
            }
            // (the generated parser writes each context's payload offset)
            self.run(&[self.arrive], e, cs, None, sc, 0, &mut lanes, n, &mut bufs);
        }
    }

    fn run_control(
        &self,
        e: &Engine,
        cs: &ControlState,
        ex: &Externs,
        which: ControlBlock,
        pkts: &mut [Pkt],
        sc: &mut Scratch,
        now_us: u64,
    ) {
        for ctx in pkts.iter_mut() {
            ctx.exit = false;
        }
        let f = match which {
            ControlBlock::Ingress => self.ingress,
            ControlBlock::Egress => self.egress,
        };
        let Some(f) = f else {
            // no control: nothing runs
            return;
        };
        let mut bufs = Bufs::new(e);
        for chunk in pkts.chunks_mut(SUB_BATCH) {
            let mut lanes = lanes_of(chunk);
            let n = chunk.len();
            self.run(&[f], e, cs, Some(ex), sc, now_us, &mut lanes, n, &mut bufs);
        }
    }

    fn ingress_pass(
        &self,
        e: &Engine,
        cs: &ControlState,
        ex: &Externs,
        pkts: &mut [Pkt],
        sc: &mut Scratch,
        now_us: u64,
        through: bool,
    ) -> Passed {
        let mut bufs = Bufs::new(e);
        let mut others = 0;
        // on through egress when the batch is one chunk of plain unicast packets
        let through = through && pkts.len() <= SUB_BATCH;
        let extras = !e.prog.stacks.is_empty() || e.prog.varbit_slots > 0;
        for chunk in pkts.chunks_mut(SUB_BATCH) {
            let n = chunk.len();
            let mut lanes: Lanes = [const { MaybeUninit::uninit() }; SUB_BATCH];
            for (l, ctx) in lanes.iter_mut().zip(chunk.iter_mut()) {
                // packets carrying preserved fields (resubmit, recirculate) enter by
                // the interpreter's code, which writes them back after the reset; the
                // generated code resets the PHV of the others and writes their arrival
                // metadata
                let begun = if ctx.arch.preserved.is_empty() {
                    ctx.reset_but_phv(extras);
                    0
                } else {
                    begin_preserved(e, ctx, now_us)
                };
                // (`begin_ingress` wrote the same lengths)
                let (start, end) = (ctx.pkt.start, ctx.pkt.end);
                let len = end.saturating_sub(start);
                ctx.ingress_len = len as u32;
                ctx.length_reg = len as u64;
                l.write(Lane {
                    phv: ctx.phv.data.as_mut_ptr(),
                    valid: ctx.phv.valid.as_mut_ptr().cast::<u8>(),
                    pkt: ctx.pkt.buf.as_mut_ptr().wrapping_add(start),
                    len: len as u64,
                    out: begun,
                    ctx: &mut **ctx,
                });
            }
            // arrival, the ingress control (if any), and the unicast check unless one
            // of them does it already
            let mut fs = [self.arrive; 3];
            let mut k = 1;
            let fused = match self.ingress {
                Some(c) => {
                    fs[k] = c;
                    k += 1;
                    self.ingress_unicast
                }
                None => self.arrive_unicast,
            };
            if !fused {
                fs[k] = self.unicast;
                k += 1;
            }
            others += self.run(
                &fs[..k],
                e,
                cs,
                Some(ex),
                sc,
                now_us,
                &mut lanes,
                n,
                &mut bufs,
            );
            if through && others == 0 {
                // every lane turned into its egress form by the unicast check
                self.egress_chunk(e, cs, ex, chunk, sc, now_us, &mut bufs, &mut lanes, true);
                return Passed::Egress;
            }
        }
        if others == 0 {
            Passed::Unicast
        } else {
            Passed::Ingress
        }
    }

    fn egress_pass(
        &self,
        e: &Engine,
        cs: &ControlState,
        ex: &Externs,
        pkts: &mut [Pkt],
        sc: &mut Scratch,
        now_us: u64,
    ) {
        let mut bufs = Bufs::new(e);
        for chunk in pkts.chunks_mut(SUB_BATCH) {
            let mut lanes: Lanes = [const { MaybeUninit::uninit() }; SUB_BATCH];
            self.egress_chunk(e, cs, ex, chunk, sc, now_us, &mut bufs, &mut lanes, false);
        }
    }

    fn deparse(&self, e: &Engine, ctx: &mut PacketCtx, sc: &mut Scratch, cs: &ControlState) {
        let Some(f) = self.deparse else {
            return e.deparse_interp(ctx, sc, cs);
        };
        let pk = &ctx.pkt;
        let payload = pk.start + ctx.payload_off.min(pk.end - pk.start);
        let mut lanes: Lanes = [const { MaybeUninit::uninit() }; SUB_BATCH];
        let mut lane = lane_of(ctx);
        lane.pkt = ctx.pkt.buf.as_mut_ptr();
        lane.len = payload as u64;
        // whatever the packet asked for: the caller decided it leaves
        lane.out = FORCE;
        lanes[0].write(lane);
        let mut bufs = Bufs::new(e);
        self.run(&[f], e, cs, None, sc, 0, &mut lanes, 1, &mut bufs);
        if lane_mut(&mut lanes, 0).out == GROW {
            e.deparse_interp(ctx, sc, cs);
        }
    }

    fn stats(&self) -> NativeStats {
        self.stats
    }
}

/// The engine, states, scratch and packet of a helper call.
struct Call<'a> {
    e: &'a Engine,
    cs: &'a ControlState,
    sc: &'a mut Scratch,
    now_us: u64,
}

/// # Safety
/// `env` is the `Env` of the running call (see the module's contract).
unsafe fn call<'a>(env: *mut Env) -> Call<'a> {
    // SAFETY: per the caller, `env` and its engine, control state and scratch
    // pointers are valid for the helper's duration and not otherwise in use.
    unsafe {
        let env = &*env;
        Call {
            e: &*env.engine,
            cs: &*env.cs,
            sc: &mut *env.sc,
            now_us: env.now_us,
        }
    }
}

/// # Safety
/// `env` is the `Env` of a running control call (its externs are set).
unsafe fn externs<'a>(env: *mut Env) -> &'a Externs {
    // SAFETY: control calls set `ex` from a reference that outlives the call.
    unsafe { &*(*env).ex }
}

/// # Safety
/// `lane` is a lane of the running call.
unsafe fn ctx<'a>(lane: *mut Lane) -> &'a mut PacketCtx {
    // SAFETY: the lane's context pointer comes from a `&mut PacketCtx` borrowed for
    // the whole call; nothing else uses it while the helper runs.
    unsafe { &mut *(*lane).ctx }
}

/// The action data at `p` (`n` bytes; none when `n` is 0 or `p` is null).
///
/// # Safety
/// `p` points to `n` readable bytes that outlive the helper call.
unsafe fn bytes<'a>(p: *const u8, n: u64) -> &'a [u8] {
    if n == 0 || p.is_null() {
        return &[];
    }
    // SAFETY: per the caller.
    unsafe { std::slice::from_raw_parts(p, n as usize) }
}

/// Runs a helper's body; a panic (a bug: the interpreter does not panic on bad input)
/// yields `fallback` instead of unwinding through generated code. Only the lookup,
/// once per table and batch, pays for it: in the per-operation helpers a panic
/// aborts (`extern "C"`), as it would stop the forwarding thread of the interpreter.
fn guard<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// A parser operation by the interpreter.
unsafe extern "C" fn h_parse_op(
    env: *mut Env,
    lane: *mut Lane,
    state: u32,
    op: u32,
    cursor: u64,
) -> u64 {
    // SAFETY: called by generated code with its env and one of its lanes.
    let (c, ctx) = unsafe { (call(env), ctx(lane)) };
    match c
        .e
        .step_parse_op(c.cs, ctx, state, op, cursor as usize, c.sc)
    {
        Ok(cur) => cur as u64,
        Err(code) => ERR_BIT | u64::from(code),
    }
}

/// A select by the interpreter.
unsafe extern "C" fn h_select(env: *mut Env, lane: *mut Lane, state: u32, cursor: u64) -> u64 {
    // SAFETY: called by generated code with its env and one of its lanes.
    let (c, ctx) = unsafe { (call(env), ctx(lane)) };
    match c.e.step_select(c.cs, ctx, state, cursor as usize) {
        Ok(Some(s)) => u64::from(s),
        Ok(None) => ACCEPT,
        Err(code) => ERR_BIT | u64::from(code),
    }
}

/// Every verified checksum by the interpreter (after the parser: the lane holds the
/// payload's offset, which checksums over the payload need).
unsafe extern "C" fn h_verify(env: *mut Env, lane: *mut Lane) {
    // SAFETY: called by generated code with its env and one of its lanes.
    let (c, ctx, payload) = unsafe { (call(env), ctx(lane), (*lane).out) };
    ctx.payload_off = payload as usize;
    c.e.step_verify(ctx, c.sc)
}

/// Every updated checksum by the interpreter.
unsafe extern "C" fn h_update(env: *mut Env, lane: *mut Lane) {
    // SAFETY: called by generated code with its env and one of its lanes.
    let (c, ctx) = unsafe { (call(env), ctx(lane)) };
    c.e.step_update(ctx, c.sc, c.cs)
}

/// Checksum `index` of the program updated by the general code (its condition held).
unsafe extern "C" fn h_update_one(env: *mut Env, lane: *mut Lane, index: u32) {
    // SAFETY: called by generated code with its env and one of its lanes.
    let (c, ctx) = unsafe { (call(env), ctx(lane)) };
    c.e.step_update_one(ctx, index, c.sc, c.cs)
}

/// A condition by the general evaluator.
unsafe extern "C" fn h_test(env: *mut Env, lane: *mut Lane, expr: u32) -> u32 {
    // SAFETY: called by generated code with its env and one of its lanes.
    let (c, ctx) = unsafe { (call(env), ctx(lane)) };
    u32::from(c.e.step_test(&ctx.phv, expr))
}

/// A table key built from its parts.
unsafe extern "C" fn h_build_key(env: *mut Env, lane: *mut Lane, t: u32, out: *mut u8) {
    // SAFETY: called by generated code with its env and one of its lanes.
    let (c, ctx) = unsafe { (call(env), ctx(lane)) };
    let kb =
        c.e.prog
            .tables
            .get(t as usize)
            .map_or(0, |ti| ti.key_bytes as usize);
    // SAFETY: `out` is a key's place in the key buffer, which holds 64 keys of the
    // longest key and KEY_SLACK bytes past the last.
    let out = unsafe { std::slice::from_raw_parts_mut(out, kb + 16) };
    c.e.step_build_key(t, &ctx.phv, out)
}

/// Table `t`'s batched lookup for the `w` waiting packets, and each one's outcome;
/// returns the outcomes' stride in bytes: 0 when every packet has the same one, written
/// once, at the first place (a keyless or empty table whose default action is a plain
/// action call).
unsafe extern "C" fn h_lookup(env: *mut Env, t: u32, w: u32) -> u64 {
    // SAFETY: called by generated code with its env (a control call's).
    let (c, ex, comp) = unsafe { (call(env), externs(env), &*(*env).compiled) };
    // SAFETY: as above: the key, waiting, hit and lane buffers of the running call.
    let (keys, waiting, hits, lanes) =
        unsafe { ((*env).keys, (*env).waiting, (*env).hits, (*env).lanes) };
    // the outcomes' stride: 0 when only the first was written, for every packet
    let size = std::mem::size_of::<Hit>() as u64;
    guard(size, || {
        // SAFETY: the call's buffers (see `lookup`).
        let same = unsafe {
            lookup(
                c,
                ex,
                comp,
                t,
                (w as usize).min(SUB_BATCH),
                keys,
                waiting,
                hits,
                lanes,
            )
        };
        if same == 1 { 0 } else { size }
    })
}

/// [`h_lookup`]'s work.
///
/// # Safety
/// `keys` holds `w` keys of table `t` and slack, `waiting` `w` indexes of lanes of
/// `lanes`, `hits` room for `w` outcomes: the running call's buffers. Returns 1 when
/// only the first outcome was written, for every packet.
#[allow(clippy::too_many_arguments)]
unsafe fn lookup(
    c: Call,
    ex: &Externs,
    comp: &Compiled,
    t: u32,
    w: usize,
    keys: *const u8,
    waiting: *const u8,
    hits: *mut Hit,
    lanes: *mut Lane,
) -> u32 {
    let (Some(tc), Some(ts)) = (comp.tables.get(t as usize), c.cs.tables.get(t as usize)) else {
        return 0;
    };
    let kb = tc.key_bytes;
    // a plain default (None: a profile's member or group, by the interpreter)
    let default = match &ts.default {
        Some(EntryAction::Direct(call)) => Some(Some(call)),
        None => Some(None),
        Some(_) => None,
    };
    let looked_up = kb > 0 && !ts.entries.is_empty();
    // nothing to look up: every packet misses, and a plain default is everyone's
    if !looked_up
        && w > 0
        && let Some(call) = default
    {
        c.sc.count_table(t, w as u64, 0);
        // SAFETY: `hits` has room for `w` (at least one) outcomes.
        outcome(unsafe { &mut *hits }, call, false);
        return 1;
    }
    if looked_up && !tc.metered && default.is_some() {
        // each outcome written as the lookup finds it (`each`); a profile's member or
        // group resolved by the interpreter after the lookup
        let mut slow_found: [MaybeUninit<Option<(EntryHandle, &p4jet_engine::EntryValue)>>;
            SUB_BATCH] = [const { MaybeUninit::uninit() }; SUB_BATCH];
        // SAFETY: the generated code wrote `w` keys of `kb` bytes; the buffer has
        // KEY_SLACK more (the tables may read whole words past a key).
        let keys = unsafe { std::slice::from_raw_parts(keys, w * kb + KEY_SLACK) };
        // two copies of the loop (the lookup's closure kept small, for the lookup
        // to inline it): the one of tables without direct resources tests for none
        let lanes_of = (waiting, lanes);
        // SAFETY: the call's buffers, as this function's.
        macro_rules! each_with {
            ($direct:literal) => {
                each::<$direct>(
                    ex,
                    t,
                    c.now_us,
                    ts,
                    keys,
                    w,
                    default,
                    hits,
                    lanes_of,
                    &mut slow_found,
                )
            };
        }
        let (n_found, mut slow) = unsafe {
            if tc.direct {
                each_with!(true)
            } else {
                each_with!(false)
            }
        };
        while slow != 0 {
            let k = slow.trailing_zeros() as usize;
            slow &= slow - 1;
            // SAFETY: `slow_found[k]` was written for every bit set in `slow`;
            // `waiting[k]` (k < w) indexes one of the call's lanes.
            let (f, ctx) = unsafe {
                (
                    slow_found[k].assume_init(),
                    ctx(lanes.add(*waiting.add(k) as usize)),
                )
            };
            let call =
                c.e.step_table_action(c.cs, ex, t, f, ctx, &mut *c.sc, c.now_us);
            // SAFETY: as above.
            outcome(unsafe { &mut *hits.add(k) }, call, true);
        }
        c.sc.count_table(t, w as u64, n_found);
        return 0;
    }
    let mut found: [Option<(EntryHandle, &p4jet_engine::EntryValue)>; SUB_BATCH] =
        [None; SUB_BATCH];
    if looked_up {
        // SAFETY: as above.
        let keys = unsafe { std::slice::from_raw_parts(keys, w * kb + KEY_SLACK) };
        ts.entries.lookup_batch(keys, &mut found[..w]);
    }
    let n_found = found[..w].iter().filter(|f| f.is_some()).count();
    c.sc.count_table(t, w as u64, n_found as u64);
    for (k, f) in found.iter().enumerate().take(w) {
        // a direct entry or default is its action; anything else (profiles,
        // selectors, direct counters and meters) goes through the interpreter
        let quick = match f {
            Some((_, v)) if !tc.direct => match &v.action {
                EntryAction::Direct(call) => Some(Some(call)),
                _ => None,
            },
            Some(_) => None,
            None => default,
        };
        let outcome_call = match quick {
            Some(o) => o,
            None => {
                // SAFETY: `waiting[k]` indexes one of the call's lanes.
                let ctx = unsafe { ctx(lanes.add(*waiting.add(k) as usize)) };
                c.e.step_table_action(c.cs, ex, t, *f, ctx, &mut *c.sc, c.now_us)
            }
        };
        // SAFETY: `hits` has room for `w` outcomes.
        outcome(unsafe { &mut *hits.add(k) }, outcome_call, f.is_some());
    }
    0
}

/// A packet's outcome: whether it `found` an entry, and `call`, the action that runs
/// (None: none runs).
#[inline(always)]
fn outcome(hit: &mut Hit, call: Option<&p4jet_ir::ActionCall>, found: bool) {
    hit.hit = u32::from(found);
    match call {
        Some(call) => {
            let data = call.data.as_slice();
            hit.action = call.action;
            hit.data = data.as_ptr();
            hit.len = data.len() as u64;
        }
        None => {
            hit.action = ACTION_NONE;
            hit.data = std::ptr::null();
            hit.len = 0;
        }
    }
}

/// [`lookup`]'s batched lookup of the `w` keys of table `t` (state `ts`) in `keys`,
/// each packet's outcome written as its entry is found: a direct entry's action and
/// data, or `default`'s on a miss (`default`: a plain default action, or none). With
/// `DIRECT`, a hit on a direct entry also updates the entry's direct counter and hit
/// time ([`count_entry_hit`], as the interpreter does; a table without a direct meter).
/// Anything else (a profile member or group, possible only in a profile's table) is
/// set aside in `slow_found`, for the interpreter (which updates its counter and hit
/// time). Returns the hits and the mask of the outcomes set aside.
///
/// # Safety
/// `hits` has room for `w` outcomes; `lanes.0` holds `w` indexes of lanes of
/// `lanes.1`: the running call's buffers.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn each<'a, const DIRECT: bool>(
    ex: &Externs,
    t: u32,
    now_us: u64,
    ts: &'a TableState,
    keys: &[u8],
    w: usize,
    default: Option<Option<&'a p4jet_ir::ActionCall>>,
    hits: *mut Hit,
    (waiting, lanes): (*const u8, *mut Lane),
    slow_found: &mut [MaybeUninit<Option<(EntryHandle, &'a p4jet_engine::EntryValue)>>; SUB_BATCH],
) -> (u64, u64) {
    let cells = ex.entry_hit_cells(t);
    let (mut n_found, mut slow) = (0u64, 0u64);
    // (a `move` closure: the pointers and cells are its own copies, one load each,
    // not loads through references to this frame)
    let (found, set_aside) = (&mut n_found, &mut slow);
    if DIRECT || !ts.entries.looks_up_shared() {
        ts.entries.lookup_batch_each(keys, w, move |k, f| {
            let call = match f {
                Some((h, v)) => {
                    *found += 1;
                    match &v.action {
                        EntryAction::Direct(call) => {
                            if DIRECT {
                                // SAFETY: `waiting[k]` (k < w) indexes one of the
                                // call's lanes; only its context's length is read.
                                let len = unsafe {
                                    (*(*lanes.add(*waiting.add(k) as usize)).ctx).ingress_len
                                };
                                count_entry_hit(cells, h, len, now_us);
                            }
                            Some(call)
                        }
                        _ => {
                            *set_aside |= 1 << k;
                            slow_found[k].write(f);
                            return;
                        }
                    }
                }
                None => default.flatten(),
            };
            // SAFETY: `hits` has room for `w` outcomes and `k < w`.
            outcome(unsafe { &mut *hits.add(k) }, call, f.is_some());
        });
    } else {
        // no entry's counter or hit time to update, a large table that shares its
        // values: each entry's shared value, without its handle or slot (out of line:
        // the loop above compiles as it did without this one)
        // SAFETY: `hits` has room for `w` outcomes (this function's contract).
        unsafe { each_shared(ts, keys, w, default, hits, slow_found, found, set_aside) };
    }
    (n_found, slow)
}

/// [`each`] of a table without direct resources whose lookups read shared values
/// ([`p4jet_tables::Table::looks_up_shared`]): each packet's outcome from its entry's
/// shared value; a profile's member or group (never shared) set aside with its handle.
///
/// # Safety
/// As [`each`].
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe fn each_shared<'a>(
    ts: &'a TableState,
    keys: &[u8],
    w: usize,
    default: Option<Option<&'a p4jet_ir::ActionCall>>,
    hits: *mut Hit,
    slow_found: &mut [MaybeUninit<Option<(EntryHandle, &'a p4jet_engine::EntryValue)>>; SUB_BATCH],
    found: &mut u64,
    set_aside: &mut u64,
) {
    let entries = &ts.entries;
    entries.lookup_batch_values(keys, w, move |k, f| {
        let call = match f {
            Some((idx, v)) => {
                *found += 1;
                match &v.action {
                    EntryAction::Direct(call) => Some(call),
                    _ => {
                        *set_aside |= 1 << k;
                        slow_found[k].write(entries.handle_at(idx).map(|h| (h, v)));
                        return;
                    }
                }
            }
            None => default.flatten(),
        };
        // SAFETY: `hits` has room for `w` outcomes and `k < w` (the caller's contract).
        outcome(unsafe { &mut *hits.add(k) }, call, f.is_some());
    });
}

/// A whole action by the interpreter: 1 when the packet exits its control.
unsafe extern "C" fn h_run_action(
    env: *mut Env,
    lane: *mut Lane,
    action: u32,
    data: *const u8,
    len: u64,
) -> u32 {
    // SAFETY: called by generated code with its env (a control call's), one of its
    // lanes and action data from a table outcome (or none).
    let (c, ex, ctx, data) = unsafe { (call(env), externs(env), ctx(lane), bytes(data, len)) };
    c.e.step_action(c.cs, ex, ctx, action, data, c.sc, c.now_us);
    u32::from(ctx.exit)
}

/// One primitive by the interpreter: 1 when the packet exits its control.
unsafe extern "C" fn h_prim(
    env: *mut Env,
    lane: *mut Lane,
    action: u32,
    pc: u32,
    data: *const u8,
    len: u64,
) -> u32 {
    // SAFETY: as `h_run_action`.
    let (c, ex, ctx, data) = unsafe { (call(env), externs(env), ctx(lane), bytes(data, len)) };
    u32::from(c.e.step_prim(c.cs, ex, ctx, action, pc, data, c.sc, c.now_us))
}

/// The ones'-complement sum (not folded: `hash::payload_ones_sum`) of the packet's
/// payload, for a checksum over a fixed input and the payload (`codegen::hash`).
unsafe extern "C" fn h_payload_sum(_env: *mut Env, lane: *mut Lane) -> u64 {
    // SAFETY: called by generated code with one of its lanes.
    let ctx = unsafe { ctx(lane) };
    let d = ctx.pkt.data();
    p4jet_engine::hash::payload_ones_sum(d.get(ctx.payload_off.min(d.len())..).unwrap_or(&[]))
}

/// `n` lookups of table `t`, all misses: a table the generated code applied inline
/// (`codegen::control`'s `inline_default`), counted as `h_lookup` counts them.
unsafe extern "C" fn h_count(env: *mut Env, t: u32, n: u64) {
    // SAFETY: called by generated code with its env.
    let c = unsafe { call(env) };
    c.sc.count_table(t, n, 0);
}

/// The finalized module's function addresses.
pub(crate) struct Addrs {
    pub arrive: *const u8,
    pub ingress: Option<*const u8>,
    pub egress: Option<*const u8>,
    pub unicast: *const u8,
    pub ingress_unicast: bool,
    pub arrive_unicast: bool,
    pub begin_egress: Option<*const u8>,
    pub deparse: Option<*const u8>,
}

/// A [`Compiled`] from the finalized module's function addresses.
pub(crate) fn compiled(e: &Engine, a: Addrs, module: JITModule, stats: NativeStats) -> Compiled {
    let plan = &e.plan().tables;
    let tables = e
        .prog
        .tables
        .iter()
        .enumerate()
        .map(|(i, t)| TableCall {
            key_bytes: t.key_bytes as usize,
            direct: plan.get(i).is_none_or(|tp| tp.direct),
            metered: t.direct_meter.is_some(),
        })
        .collect();
    // SAFETY: each address is a function the module finalized with the signature of
    // its type (lib.rs: `Kind::Batch` for the parser, the controls and the batch
    // passes, `Kind::One` for the deparser of one packet), on this host's default
    // calling convention, which `extern "C"` is; the module lives in the result as
    // long as the pointers.
    unsafe {
        let batch = |p: *const u8| std::mem::transmute::<*const u8, BatchFn>(p);
        Compiled {
            arrive: batch(a.arrive),
            ingress: a.ingress.map(batch),
            egress: a.egress.map(batch),
            unicast: batch(a.unicast),
            ingress_unicast: a.ingress_unicast,
            arrive_unicast: a.arrive_unicast,
            begin_egress: a.begin_egress.map(batch),
            deparse: a.deparse.map(batch),
            module: Mutex::new(Some(module)),
            stats,
            tables,
        }
    }
}

/// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
pub(crate) fn thread_cpu() -> Option<std::time::Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to write.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (r == 0).then(|| std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}
