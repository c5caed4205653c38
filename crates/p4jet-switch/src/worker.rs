//! A forwarding worker: runs batches through ingress, the traffic manager and egress.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use num_bigint::BigUint;
use p4jet_engine::{
    ControlBlock, ControlState, Engine, Externs, PacketBuf, PacketCtx, Passed, Scratch, TableStats,
    TraceId, level, trace_line, trace_text,
};
use p4jet_ir::expr::FieldRef;

use crate::accounting::{Accounts, Balance, DropReason, PortCounters};
use crate::latency::{LatencyHist, Stamps};
use crate::tm::{Pkt, QueueConfig, SharedQueues, Tm};
use crate::{Active, Clock, Dataplane, Digest, DigestQueue, SwitchConfig};

/// Packets received so far by every worker of the process, when tracing: the packet
/// ids of the per-packet log, in arrival order as simple_switch numbers them.
static TRACE_PACKETS: AtomicU64 = AtomicU64::new(0);

/// instance_type values (v1model).
pub use p4jet_engine::v1model::instance;

/// A forwarding worker.
pub struct Worker {
    pub(crate) reader: left_right::ReadHandle<ControlState>,
    /// The switch's data plane (to notice configuration swaps).
    pub(crate) dataplane: Arc<Dataplane>,
    /// The program this worker runs (keeps it alive while the worker uses it).
    pub(crate) active: Arc<Active>,
    /// Everything but the state reader.
    pub core: Core,
}

/// The worker's state apart from its control-state reader.
pub struct Core {
    /// The program. A handle private to this core around the shared one: the core
    /// clones it per batch (to call its own methods while the engine is borrowed), and a
    /// private reference count keeps those clones off a cache line the other workers
    /// write.
    #[allow(clippy::redundant_allocation)] // the second count is the point, see above
    engine: Arc<Arc<Engine>>,
    externs: Arc<Externs>,
    digests: Arc<Mutex<DigestQueue>>,
    cfg: SwitchConfig,
    clock: Clock,
    queues: Arc<SharedQueues>,
    /// This batch's copy of `queues`.
    qcfg: QueueConfig,
    /// Generation of `queues` copied into `qcfg` (`u64::MAX`: none yet).
    qgen: u64,
    /// `qcfg` has one queue per port and no depth or rate limit (the fast lane is
    /// allowed whenever the traffic manager is empty).
    qplain: bool,
    scratch: Scratch,
    pool: Vec<Pkt>,
    input: VecDeque<Pkt>,
    recirc: VecDeque<Pkt>,
    batch: Vec<Pkt>,
    egress: Vec<Pkt>,
    /// Packets that skipped the traffic manager queues (see `enqueue`).
    fast: Vec<Pkt>,
    /// `egress` holds a batch the ingress pass ran on through egress at this time
    /// (µs, [`Passed::Egress`]): it is next out, and only transmitted.
    egressed: Option<u64>,
    tm: Tm,
    /// Per-port counts (index = port).
    pub ports: Vec<PortCounters>,
    /// Copies, resubmissions, recirculations (see [`crate::accounting`]).
    pub accounts: Accounts,
    /// Drop reasons already reported in `errors` (one message per reason and core;
    /// the counters say how many followed).
    reported: u32,
    /// Trace lines of processed packets (when tracing).
    pub trace_out: Vec<String>,
    /// Run-time problems reported (bad register index, loops...).
    pub errors: Vec<String>,
    /// Measure time per stage (for `p4jet bench`).
    pub timing: bool,
    /// Nanoseconds spent per stage: parse, ingress, traffic manager, egress, deparse+tx.
    pub stage_ns: [u64; 5],
    /// The latency clock (latency measurement, off by default).
    stamps: Option<Arc<Stamps>>,
    /// The time [`Core::mark_rx`] read, given to the packets injected after it.
    rx_stamp: u64,
    /// The time the caller read for this turn ([`Core::mark_rx`], [`Core::mark_rx_at`]):
    /// the next ingress batch takes its timestamp from it instead of reading the
    /// clock again; cleared once that step's ingress ran.
    turn_at: Option<std::time::Instant>,
    /// Injection-to-transmission latency of the packets this core transmitted (only
    /// with [`Core::enable_latency`]).
    pub latency: LatencyHist,
    /// Heap buffers swapped out of pooled contexts by [`Core::inject_buf`], given to
    /// contexts whose buffer left with a transmitted frame.
    spare: Vec<PacketBuf>,
    /// Ports (by number) whose frames leave as buffers ([`Core::set_moving_ports`]).
    moving: Vec<bool>,
    /// Frames for those ports, taken by [`Core::take_moved`]: the ports in
    /// `moved_to`, the buffers at the same places in `moved`.
    moved_to: Vec<u32>,
    moved: Vec<PacketBuf>,
}

/// Most heap buffers a core keeps aside for contexts that lost theirs.
const SPARE_BUFFERS: usize = 4096;

/// Names of the stages of [`Core::stage_ns`].
pub const STAGES: [&str; 5] = ["parse", "ingress", "tm", "egress", "deparse+tx"];

#[inline]
fn lap(on: bool, t: &mut Option<std::time::Instant>, acc: &mut u64) {
    if on {
        let now = std::time::Instant::now();
        if let Some(t0) = t {
            *acc += now.duration_since(*t0).as_nanos() as u64;
        }
        *t = Some(now);
    }
}

/// `deq_qdepth` of a packet just dequeued: the depth left in its queue.
fn deq_qdepth(tm: &Tm, ctx: &PacketCtx) -> usize {
    if tm.is_empty() {
        0
    } else {
        tm.depth(ctx.arch.port, ctx.arch.qid)
    }
}

fn field_value(e: &Engine, ctx: &PacketCtx, f: &FieldRef) -> Option<(u32, BigUint)> {
    let p = &*e.prog;
    let ec = p4jet_engine::EvalCtx::of_phv(&ctx.phv);
    let fid = p4jet_engine::eval::resolve_field(p, &ec, f)?;
    Some((fid, ctx.phv.read_big(p.fields[fid as usize].loc)))
}

impl Worker {
    /// A worker running the data plane's current program.
    pub(crate) fn new(
        dataplane: Arc<Dataplane>,
        digests: Arc<Mutex<DigestQueue>>,
        cfg: SwitchConfig,
        clock: Clock,
        queues: Arc<SharedQueues>,
    ) -> Worker {
        let active = dataplane.current();
        Self::with_active(dataplane, active, digests, cfg, clock, queues)
    }

    /// A worker running `active` (which the data plane published).
    pub(crate) fn with_active(
        dataplane: Arc<Dataplane>,
        active: Arc<Active>,
        digests: Arc<Mutex<DigestQueue>>,
        cfg: SwitchConfig,
        clock: Clock,
        queues: Arc<SharedQueues>,
    ) -> Worker {
        Worker {
            reader: active.readers.handle(),
            dataplane,
            core: Core {
                engine: Arc::new(active.engine.clone()),
                externs: active.externs.clone(),
                digests,
                qcfg: QueueConfig::new(cfg.priority_queues),
                qplain: false,
                qgen: u64::MAX,
                cfg,
                clock,
                queues,
                scratch: Scratch::default(),
                pool: Vec::new(),
                input: VecDeque::new(),
                recirc: VecDeque::new(),
                batch: Vec::new(),
                egress: Vec::new(),
                fast: Vec::new(),
                egressed: None,
                tm: Tm::default(),
                ports: Vec::new(),
                accounts: Accounts::default(),
                reported: 0,
                trace_out: Vec::new(),
                errors: Vec::new(),
                timing: false,
                stage_ns: [0; 5],
                stamps: None,
                rx_stamp: 0,
                turn_at: None,
                latency: LatencyHist::default(),
                spare: Vec::new(),
                moving: Vec::new(),
                moved_to: Vec::new(),
                moved: Vec::new(),
            },
            active,
        }
    }

    /// A second worker over the same program as this one, sharing its switch (used for
    /// the stages of a pipelined worker).
    pub(crate) fn sibling(&self) -> Worker {
        let c = &self.core;
        Self::with_active(
            self.dataplane.clone(),
            self.active.clone(),
            c.digests.clone(),
            c.cfg.clone(),
            c.clock.clone(),
            c.queues.clone(),
        )
    }

    /// Queues a received frame (inlined into receive loops).
    #[inline]
    pub fn inject(&mut self, port: u32, frame: &[u8]) {
        self.core.inject(port, frame)
    }

    /// Queues received frames from one port (inlined into receive loops).
    #[inline]
    pub fn inject_all<'f>(&mut self, port: u32, frames: impl IntoIterator<Item = &'f [u8]>) {
        self.core.inject_all(port, frames)
    }

    /// Queues a received frame in the buffer it arrived in (no copy).
    pub fn inject_buf(&mut self, port: u32, buf: PacketBuf) {
        self.core.inject_buf(port, buf)
    }

    /// Queues received frames, all from `port`, in the buffers they arrived in
    /// (`bufs` is left empty).
    pub fn inject_bufs(&mut self, port: u32, bufs: &mut Vec<PacketBuf>) {
        self.core.inject_bufs(port, bufs)
    }

    /// Packets waiting anywhere in the worker.
    pub fn pending(&self) -> usize {
        self.core.pending()
    }

    /// Runs until no packet is left; `tx` receives every transmitted frame.
    ///
    /// Packets of rate-limited queues (`set_queue_rate`) leave at their departure
    /// time: with a real clock this sleeps until then. A manual clock only moves when
    /// its owner moves it, so with one this returns once nothing else can be done, the
    /// paced packets still queued: advance the clock to [`Worker::next_due_us`] and
    /// call again (what `p4jet stf` does).
    pub fn run_until_idle(&mut self, tx: &mut dyn FnMut(u32, &[u8])) {
        loop {
            self.run_ready(tx);
            if self.pending() == 0 || !self.core.wait_for_due() {
                return;
            }
        }
    }

    /// Processes everything that can be processed now (received, resubmitted and
    /// recirculated packets, queued packets due) and returns without waiting for the
    /// departure time of rate-limited packets (see [`Worker::next_due_us`]).
    pub fn run_ready(&mut self, tx: &mut dyn FnMut(u32, &[u8])) {
        while self.ready() {
            self.step(tx);
        }
    }

    /// Whether a step can make progress now.
    pub fn ready(&self) -> bool {
        if self.swap_pending() {
            // the old program's packets first; the swap, then received packets
            self.core.pipeline_ready() || (self.core.in_pipeline() == 0 && self.pending() > 0)
        } else {
            self.core.ready()
        }
    }

    /// When the next packet waiting in a rate-limited queue may leave (µs of the
    /// switch clock, rounded up); None when no packet is queued.
    pub fn next_due_us(&self) -> Option<u64> {
        self.core.next_due_us()
    }

    /// One ingress batch, then the traffic manager drained through egress. Moves to a
    /// swapped-in program first, if there is one.
    ///
    /// Generic over the transmit callback (a `&mut dyn FnMut` works too): a forwarding
    /// loop's own closure is inlined into the transmit loop.
    pub fn step<F: FnMut(u32, &[u8]) + ?Sized>(&mut self, tx: &mut F) {
        if self.dataplane.generation() != self.active.generation
            && !self.follow_swap(&mut |p, f| tx(p, f))
        {
            // packets of the old program wait in a rate-limited queue
            return;
        }
        let Some(guard) = self.reader.enter() else {
            self.core.errors.push("control state is gone".into());
            self.core.clear_input();
            return;
        };
        self.core.step(&guard, tx);
    }

    /// Generation of the program this worker runs (see [`Dataplane::generation`]).
    pub fn generation(&self) -> u64 {
        self.active.generation
    }

    /// Moves to the data plane's current program: packets already inside the pipeline
    /// (recirculating or queued for egress) finish with the old one; received packets
    /// not yet in ingress are kept for the new one. False when the move must wait:
    /// packets of the old program are in a rate-limited queue and not due yet.
    pub(crate) fn follow_swap(&mut self, tx: &mut dyn FnMut(u32, &[u8])) -> bool {
        let next = self.dataplane.current();
        if next.generation == self.active.generation {
            return true;
        }
        while self.core.recirc.len() + self.core.tm.len() > 0 {
            if !self.core.pipeline_ready() {
                return false;
            }
            let Some(guard) = self.reader.enter() else {
                self.core
                    .errors
                    .push("configuration swap: packets of the old program lost".into());
                self.core.clear_pipeline();
                break;
            };
            self.core.step_with(&guard, tx, false);
        }
        self.adopt(next);
        true
    }

    /// Moves to program `next` now; received packets not yet in ingress are re-created
    /// for its header layout, pooled contexts are dropped.
    pub(crate) fn adopt(&mut self, next: Arc<Active>) {
        self.reader = next.readers.handle();
        self.core.engine = Arc::new(next.engine.clone());
        self.core.externs = next.externs.clone();
        self.core.scratch = Scratch::default();
        self.core.pool.clear();
        // received frames are re-created with the new program's header layout
        let waiting: Vec<Pkt> = self.core.input.drain(..).collect();
        for old in waiting {
            let mut ctx = self.core.alloc();
            ctx.pkt.set(old.pkt.data());
            ctx.arch.port = old.arch.port;
            ctx.arch.instance_type = instance::NORMAL;
            ctx.arch.passes = 0;
            ctx.arch.preserved.clear();
            ctx.arch.rx_ns = old.arch.rx_ns;
            ctx.arch.trace = old.arch.trace.clone();
            self.core.input.push_back(ctx);
        }
        self.active = next;
    }

    /// Whether the data plane published a program this worker does not run yet.
    pub(crate) fn swap_pending(&self) -> bool {
        self.dataplane.generation() != self.active.generation
    }
}

impl Core {
    #[inline(always)]
    fn alloc(&mut self) -> Pkt {
        match self.pool.pop() {
            Some(c) => c,
            None => self.alloc_new(),
        }
    }

    /// A new context, when the pool is empty (warm-up, bursts).
    #[cold]
    #[inline(never)]
    fn alloc_new(&mut self) -> Pkt {
        Box::new(self.engine.new_ctx(self.cfg.buf_size))
    }

    /// Returns a context to the pool (inlined: the common case is one push).
    #[inline(always)]
    fn free(&mut self, ctx: Pkt) {
        if !ctx.log.is_empty() || !ctx.arch.preserved.is_empty() || ctx.pkt.buf.is_port_owned() {
            return self.free_slow(ctx);
        }
        self.pool.push(ctx);
    }

    /// [`Core::free`] of a context with a trace, preserved fields or a port-owned buffer
    /// (an AF_XDP UMEM chunk, a DPDK mbuf).
    #[cold]
    #[inline(never)]
    fn free_slow(&mut self, mut ctx: Pkt) {
        if self.cfg.trace && !ctx.log.is_empty() {
            self.trace_out.append(&mut ctx.log);
        }
        ctx.arch.preserved.clear();
        if ctx.pkt.buf.is_port_owned() {
            // a UMEM chunk or an mbuf goes back to its owner (the fill rings and
            // the device's receive queue need it), not to
            // the pool with the context
            ctx.pkt = self.spare.pop().unwrap_or_default();
        }
        self.pool.push(ctx);
    }

    #[inline(always)]
    fn port_mut(&mut self, port: u32) -> &mut PortCounters {
        let i = port as usize;
        // (one bounds check, the growth out of line)
        if i < self.ports.len() {
            return &mut self.ports[i];
        }
        self.grow_ports(i)
    }

    /// Counters for port `i` and below; port `i`'s.
    #[cold]
    #[inline(never)]
    fn grow_ports(&mut self, i: usize) -> &mut PortCounters {
        self.ports.resize(i + 1, PortCounters::default());
        &mut self.ports[i]
    }

    /// Counts a drop of a packet on `port` for `reason`.
    #[inline(always)]
    fn count_drop(&mut self, port: u32, reason: DropReason) {
        self.port_mut(port).drops[reason.index()] += 1;
    }

    /// Counts `n` drops on `port` for `reason` (faults found outside the core, such
    /// as a port that refused frames the core counted as sent: see
    /// [`Core::uncount_tx`]).
    pub fn count_drops(&mut self, port: u32, reason: DropReason, n: u64) {
        self.port_mut(port).drops[reason.index()] += n;
    }

    /// Moves `n` frames of `port` from sent to dropped for `reason`: the port (or
    /// the I/O layer behind `tx`) did not send what the core handed it.
    pub fn uncount_tx(&mut self, port: u32, reason: DropReason, n: u64) {
        let c = self.port_mut(port);
        let n = n.min(c.tx);
        c.tx -= n;
        c.drops[reason.index()] += n;
    }

    /// Counts a drop that is a fault or a limit (not the program's choice): the first
    /// of each reason on this core is also reported in `errors`, with `what`.
    #[cold]
    #[inline(never)]
    fn fault_drop(&mut self, port: u32, reason: DropReason, what: impl FnOnce() -> String) {
        self.count_drop(port, reason);
        let bit = 1u32 << reason.index();
        if self.reported & bit == 0 {
            self.reported |= bit;
            self.errors.push(format!(
                "{} (counted as {} drops from now on, not reported again)",
                what(),
                reason.name()
            ));
        }
    }

    /// The drop reason of a packet the program dropped in ingress.
    #[inline(always)]
    fn ingress_drop_reason(e: &Engine, ctx: &PacketCtx) -> DropReason {
        if e.std_read(&ctx.phv, e.std_meta.parser_error) != 0 {
            DropReason::ParserError
        } else {
            DropReason::Ingress
        }
    }

    /// This core's books now (see [`crate::accounting`]).
    pub fn balance(&self) -> Balance {
        Balance {
            ports: self.ports.clone(),
            accounts: self.accounts,
            queued: self.pending() as u64,
        }
    }

    /// Packets waiting anywhere in the worker.
    pub fn pending(&self) -> usize {
        self.input.len() + self.recirc.len() + self.tm.len() + self.fast.len()
    }

    /// Whether a step can make progress now: input, resubmitted or recirculated
    /// packets, or a queued packet that may leave.
    pub fn ready(&self) -> bool {
        !self.input.is_empty() || self.pipeline_ready()
    }

    /// [`Core::ready`] without the received packets.
    pub(crate) fn pipeline_ready(&self) -> bool {
        !self.recirc.is_empty() || !self.fast.is_empty() || self.tm_ready()
    }

    /// Whether a queued packet may leave now.
    fn tm_ready(&self) -> bool {
        if self.tm.paced() == 0 {
            !self.tm.is_empty()
        } else {
            self.tm.has_due(self.clock.now_ns())
        }
    }

    /// When the next queued packet may leave (µs of the switch clock, rounded up; now
    /// or earlier for a packet without a rate limit); None when nothing is queued.
    pub fn next_due_us(&self) -> Option<u64> {
        self.tm.next_due_ns().map(|t| t.div_ceil(1000))
    }

    /// Time until the next queued packet may leave (zero when one may leave now); None
    /// when nothing is queued.
    pub fn until_due(&self) -> Option<std::time::Duration> {
        let t = self.tm.next_due_ns()?;
        let now = self.clock.now_ns();
        Some(std::time::Duration::from_nanos(t.saturating_sub(now)))
    }

    /// Sleeps until the next queued packet may leave (real clock); false when nothing
    /// is queued or the clock is manual (only its owner moves it).
    pub(crate) fn wait_for_due(&self) -> bool {
        if self.clock.is_manual() {
            return false;
        }
        match self.until_due() {
            Some(d) => {
                if !d.is_zero() {
                    std::thread::sleep(d);
                }
                true
            }
            None => false,
        }
    }

    /// Queues a received frame (inlined into receive loops: a call per packet).
    #[inline(always)]
    pub fn inject(&mut self, port: u32, frame: &[u8]) {
        let ctx = self.ctx_holding(frame);
        self.queue_received(ctx, port);
    }

    /// A pooled context whose buffer holds a copy of `frame`.
    #[inline(always)]
    fn ctx_holding(&mut self, frame: &[u8]) -> Pkt {
        let mut ctx = self.alloc();
        if ctx.pkt.capacity() == 0 {
            self.give_spare(&mut ctx);
        }
        ctx.pkt.set(frame);
        ctx
    }

    /// Gives a context whose buffer left with a frame sent in place a spare buffer, if
    /// there is one.
    #[cold]
    #[inline(never)]
    fn give_spare(&mut self, ctx: &mut Pkt) {
        if let Some(b) = self.spare.pop() {
            ctx.pkt = b;
        }
    }

    /// Queues a received frame in the buffer it arrived in (an AF_XDP UMEM chunk, a
    /// DPDK mbuf):
    /// the packet is processed there and, sent to a port that takes buffers
    /// ([`Core::set_moving_ports`]), leaves from there.
    pub fn inject_buf(&mut self, port: u32, buf: PacketBuf) {
        let ctx = self.ctx_with(buf);
        self.queue_received(ctx, port);
    }

    /// [`Core::inject_buf`] for every buffer of `bufs`, all received on `port`, in
    /// order (`bufs` is left empty): one loop, the port's receive count updated once.
    pub fn inject_bufs(&mut self, port: u32, bufs: &mut Vec<PacketBuf>) {
        if self.cfg.trace {
            for b in bufs.drain(..) {
                self.inject_buf(port, b);
            }
            return;
        }
        let n = bufs.len() as u64;
        for b in bufs.drain(..) {
            let mut ctx = self.ctx_with(b);
            self.received(&mut ctx, port);
            self.input.push_back(ctx);
        }
        if n > 0 {
            self.port_mut(port).rx += n;
        }
    }

    /// A pooled context holding `buf`; the buffer it held becomes a spare (a context
    /// whose frame left in place holds an empty one, given up without a drop).
    #[inline(always)]
    fn ctx_with(&mut self, buf: PacketBuf) -> Pkt {
        let mut ctx = self.alloc();
        let old = std::mem::replace(&mut ctx.pkt, buf);
        if old.buf.is_port_owned() || old.capacity() > 0 {
            self.spare_or_drop(old);
        } else {
            // an empty heap buffer owns no memory: nothing to free
            std::mem::forget(old);
        }
        ctx
    }

    /// Keeps a heap buffer as a spare (up to [`SPARE_BUFFERS`]), else drops it.
    #[cold]
    #[inline(never)]
    fn spare_or_drop(&mut self, old: PacketBuf) {
        if !old.buf.is_port_owned() && self.spare.len() < SPARE_BUFFERS {
            self.spare.push(old);
        }
    }

    /// Frames in port-owned buffers ([`Core::inject_buf`]) transmitted on these ports leave
    /// as buffers, collected by [`Core::take_moved`], instead of being copied through
    /// the `tx` callback; the port then sends them from their chunk. Frames in heap
    /// buffers still go through `tx`. Replaces the previous set.
    pub fn set_moving_ports(&mut self, ports: &[u32]) {
        self.moving.clear();
        for &p in ports {
            let i = p as usize;
            if self.moving.len() <= i {
                self.moving.resize(i + 1, false);
            }
            self.moving[i] = true;
        }
    }

    /// Moves the frames transmitted on the moving ports since the last call to the
    /// end of `bufs` (in transmission order), each truncated as the program asked, and
    /// their ports to the end of `to`. Empty vectors are swapped, not copied.
    pub fn take_moved(&mut self, to: &mut Vec<u32>, bufs: &mut Vec<PacketBuf>) {
        if bufs.is_empty() && to.is_empty() {
            std::mem::swap(to, &mut self.moved_to);
            std::mem::swap(bufs, &mut self.moved);
        } else {
            to.append(&mut self.moved_to);
            bufs.append(&mut self.moved);
        }
    }

    /// Queues received frames, all from `port`, in order (inlined into receive loops:
    /// the port's receive count is updated once per call).
    #[inline(always)]
    pub fn inject_all<'f>(&mut self, port: u32, frames: impl IntoIterator<Item = &'f [u8]>) {
        if self.cfg.trace {
            for frame in frames {
                self.inject(port, frame);
            }
            return;
        }
        let mut n = 0u64;
        for frame in frames {
            let mut ctx = self.ctx_holding(frame);
            self.received(&mut ctx, port);
            self.input.push_back(ctx);
            n += 1;
        }
        if n > 0 {
            self.port_mut(port).rx += n;
        }
    }

    // inlined: a call here costs ~20 instructions per packet (callgrind)
    #[inline(always)]
    fn queue_received(&mut self, mut ctx: Pkt, port: u32) {
        if self.cfg.trace {
            let id = TRACE_PACKETS.fetch_add(1, Ordering::Relaxed);
            ctx.arch.trace = TraceId::received(id, port);
            if self.cfg.dump_packet_data > 0 {
                let line = dump_line("Received", port, ctx.pkt.data(), self.cfg.dump_packet_data);
                self.trace_out.push(line);
            }
        }
        self.received(&mut ctx, port);
        self.port_mut(port).rx += 1;
        self.input.push_back(ctx);
    }

    /// A received packet's architecture fields (it entered on `port`, at the time of
    /// the last [`Core::mark_rx`]).
    #[inline(always)]
    fn received(&self, ctx: &mut PacketCtx, port: u32) {
        ctx.arch.port = port;
        ctx.arch.instance_type = instance::NORMAL;
        ctx.arch.passes = 0;
        // a pooled or new context carries no preserved fields (`free` clears them)
        debug_assert!(ctx.arch.preserved.is_empty());
        ctx.arch.rx_ns = self.rx_stamp;
    }

    /// Per table of the running program (by name), its lookups and hits on this core
    /// since the program was loaded; tables never applied are left out.
    pub fn table_stats(&self) -> Vec<(String, TableStats)> {
        let tables = &self.engine.prog.tables;
        self.scratch
            .table_stats()
            .iter()
            .enumerate()
            .filter(|(_, s)| s.lookups > 0)
            .filter_map(|(i, s)| Some((tables.get(i)?.name.clone(), *s)))
            .collect()
    }

    /// Measures the latency of every packet from its injection to its transmission
    /// into [`Core::latency`]; injection times are read from `stamps` (shared with the other
    /// stage of a pipelined worker). Call [`Core::mark_rx`] before each batch of
    /// injections.
    pub fn enable_latency(&mut self, stamps: Arc<Stamps>) {
        self.rx_stamp = stamps.now_ns();
        self.stamps = Some(stamps);
    }

    /// Reads the clock for the packets injected next (one read per batch, only when
    /// latency is measured); the next ingress batch's timestamp comes from the same
    /// read.
    #[inline]
    pub fn mark_rx(&mut self) {
        if self.stamps.is_some() {
            self.mark_rx_at(std::time::Instant::now());
        }
    }

    /// [`Core::mark_rx`] with the time `at` the caller read already (a forwarding loop
    /// reads the clock once per turn): the latency stamp of the packets injected next
    /// and the timestamp of the next ingress batch (`ingress_global_timestamp`), so
    /// the step that follows reads no clock for its ingress.
    pub fn mark_rx_at(&mut self, at: std::time::Instant) {
        if let Some(s) = &self.stamps {
            self.rx_stamp = s.ns_at(at);
        }
        self.turn_at = Some(at);
    }

    /// One ingress batch, then the traffic manager drained through egress.
    pub fn step<F: FnMut(u32, &[u8]) + ?Sized>(&mut self, cs: &ControlState, tx: &mut F) {
        self.step_with(cs, tx, true)
    }

    /// [`Core::step`]; received packets enter ingress only if `take_input`.
    fn step_with<F: FnMut(u32, &[u8]) + ?Sized>(
        &mut self,
        cs: &ControlState,
        tx: &mut F,
        take_input: bool,
    ) {
        self.ingress_half(cs, take_input, true);
        while self.next_egress_batch() {
            self.run_egress(cs, tx, true);
        }
    }

    /// Stage 1 of a pipelined worker: [`Core::ingress_half`], then every packet ready
    /// for egress is moved to `out` (fast lane first, then the traffic manager a batch
    /// at a time, as [`Core::step`] would run them) with its `deq_qdepth` written at
    /// dequeue time, since the egress stage has no view of this traffic manager.
    pub(crate) fn ingress_stage(
        &mut self,
        cs: &ControlState,
        take_input: bool,
        out: &mut Vec<Pkt>,
    ) {
        // (the egress stage runs egress: ingress does not go on through it)
        self.ingress_half(cs, take_input, false);
        let engine = self.engine.clone();
        let e: &Engine = &engine;
        while self.next_egress_batch() {
            let tm = &self.tm;
            if e.std_meta.deq_qdepth.is_some() {
                for ctx in self.egress.iter_mut() {
                    ctx.arch.deq_qdepth = deq_qdepth(tm, ctx) as u32;
                }
            }
            out.append(&mut self.egress);
        }
    }

    /// Stage 2 of a pipelined worker: egress for `batch` (packets from
    /// [`Core::ingress_stage`]; `batch` is left empty), then the egress clones made
    /// meanwhile, through this core's own traffic manager. Recirculated packets are left
    /// for [`Core::take_recirc`].
    pub(crate) fn egress_stage(
        &mut self,
        cs: &ControlState,
        batch: &mut Vec<Pkt>,
        tx: &mut dyn FnMut(u32, &[u8]),
    ) {
        self.sync_queue_config();
        debug_assert!(self.egress.is_empty());
        if !batch.is_empty() {
            std::mem::swap(&mut self.egress, batch);
            self.run_egress(cs, tx, false);
        }
        while self.next_egress_batch() {
            self.run_egress(cs, tx, true);
        }
    }

    /// Moves the recirculated packets waiting for ingress to `out`.
    pub(crate) fn take_recirc(&mut self, out: &mut Vec<Pkt>) {
        out.extend(self.recirc.drain(..));
    }

    /// Queues packets recirculated by the egress stage for ingress.
    pub(crate) fn put_recirc(&mut self, pkts: &mut Vec<Pkt>) {
        self.recirc.extend(pkts.drain(..));
    }

    /// Moves pooled contexts beyond `keep` to `out` (to recycle them in another stage).
    pub(crate) fn take_spare(&mut self, keep: usize, out: &mut Vec<Pkt>) {
        while self.pool.len() > keep {
            match self.pool.pop() {
                Some(c) => out.push(c),
                None => break,
            }
        }
    }

    /// Adds contexts to the pool.
    pub(crate) fn give_back(&mut self, ctxs: &mut Vec<Pkt>) {
        self.pool.append(ctxs);
    }

    /// Packets queued in the traffic manager.
    pub(crate) fn queued(&self) -> usize {
        self.tm.len()
    }

    /// The switch clock.
    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Packets resubmitted or recirculated, and queued in the traffic manager.
    pub(crate) fn in_pipeline(&self) -> usize {
        self.recirc.len() + self.tm.len() + self.fast.len()
    }

    /// Drops the packets waiting for ingress (the control state is gone), counted as
    /// discarded on their port.
    pub(crate) fn clear_input(&mut self) {
        let lost: Vec<Pkt> = self.input.drain(..).chain(self.recirc.drain(..)).collect();
        self.discard(lost);
    }

    /// Drops the packets inside the pipeline (resubmitted, recirculated, queued),
    /// counted as discarded on their port.
    pub(crate) fn clear_pipeline(&mut self) {
        let mut lost: Vec<Pkt> = self.recirc.drain(..).chain(self.fast.drain(..)).collect();
        let mut tm = std::mem::take(&mut self.tm);
        tm.dequeue_into(usize::MAX, &mut lost, u64::MAX);
        self.discard(lost);
    }

    /// Counts packets lost outside this core (in a ring between stages) as discarded.
    pub(crate) fn count_discarded(&mut self, n: usize) {
        self.count_drops(0, DropReason::Discarded, n as u64);
    }

    fn discard(&mut self, lost: Vec<Pkt>) {
        for ctx in lost {
            self.count_drop(ctx.arch.port, DropReason::Discarded);
        }
    }

    /// Packets per batch.
    pub fn batch_size(&self) -> usize {
        self.cfg.batch.max(1)
    }

    /// Changes the packets per batch from the next batch on (`run --batch auto`
    /// adjusts it while forwarding).
    pub fn set_batch_size(&mut self, batch: usize) {
        self.cfg.batch = batch.max(1);
    }

    /// Ingress half of a step: the queue configuration, one batch (resubmitted and
    /// recirculated packets first, then received ones if `take_input`), ingress and the
    /// after-ingress decisions. What is to leave waits in the fast lane or the traffic
    /// manager for [`Core::next_egress_batch`]; with `through`, a batch of plain
    /// unicast packets that finds the fast lane open may instead run on through egress
    /// in the same pass (it then waits in `egress`, see [`Core::egressed`]).
    fn ingress_half(&mut self, cs: &ControlState, take_input: bool, through: bool) {
        let max = self.cfg.batch.max(1);
        // queue limits: one look at the shared configuration per batch
        self.sync_queue_config();
        // resubmitted and recirculated packets are taken before waiting input
        self.batch.clear();
        while self.batch.len() < max {
            match self.recirc.pop_front() {
                Some(c) => self.batch.push(c),
                None => break,
            }
        }
        if take_input {
            if self.batch.is_empty() && self.input.len() <= max {
                // the whole input is the batch: the two buffers trade places (no
                // per-packet moves when the deque's items start at its buffer's start,
                // as they do once it has been a batch)
                let input = Vec::from(std::mem::take(&mut self.input));
                self.input = VecDeque::from(std::mem::replace(&mut self.batch, input));
            } else {
                let k = (max - self.batch.len()).min(self.input.len());
                self.batch.extend(self.input.drain(..k));
            }
        }
        if !self.batch.is_empty() {
            self.ingress(cs, through);
        }
        // the turn's time is for this step's ingress only
        self.turn_at = None;
    }

    /// Moves the next egress batch into `self.egress`: the whole fast lane, else up to a
    /// batch from the traffic manager. False when nothing waits.
    fn next_egress_batch(&mut self) -> bool {
        if self.egressed.is_some() {
            // the batch that ran on through egress in its ingress pass (it met an
            // empty fast lane and traffic manager: nothing is before it)
            true
        } else if !self.fast.is_empty() {
            // the fast lane: packets that met an empty traffic manager without limits
            std::mem::swap(&mut self.egress, &mut self.fast);
            true
        } else if !self.tm.is_empty() {
            // rate-limited packets leave at their departure time (one clock read)
            let now_ns = if self.tm.paced() > 0 {
                self.clock.now_ns()
            } else {
                u64::MAX
            };
            self.egress.clear();
            let mut out = std::mem::take(&mut self.egress);
            self.tm
                .dequeue_into(self.cfg.batch.max(1), &mut out, now_ns);
            self.egress = out;
            !self.egress.is_empty()
        } else {
            false
        }
    }

    fn ingress(&mut self, cs: &ControlState, through: bool) {
        let engine = self.engine.clone();
        let e: &Engine = &engine;
        // the time the caller read for this turn, else a clock read
        let now = match self.turn_at {
            Some(at) => self.clock.us_at(at),
            None => self.clock.now_us(),
        };
        let mut batch = std::mem::take(&mut self.batch);
        // simple_switch: a resubmitted/recirculated/cloned instance has ingress_port 0
        // unless preserved; the port was recorded as 0 when it was requeued.
        if self.timing {
            self.ingress_timed(e, cs, &mut batch, now);
        } else {
            let open = self.fast_lane_open();
            // plain unicast packets may go on through egress at once: they would be
            // next out of the traffic manager, and nothing in between looks at them
            // (a program reading `deq_qdepth` gets it from the traffic manager)
            let through = through && open && e.std_meta.deq_qdepth.is_none();
            let passed = e.ingress_pass(
                cs,
                &self.externs,
                &mut batch,
                &mut self.scratch,
                now,
                through,
            );
            if passed == Passed::Egress {
                // (`egress` is empty between steps)
                debug_assert!(self.egress.is_empty());
                std::mem::swap(&mut self.egress, &mut batch);
                self.egressed = Some(now);
            } else if passed == Passed::Unicast && open {
                // every packet a plain unicast, already set for the fast lane (which
                // was empty): the vectors trade places
                std::mem::swap(&mut self.fast, &mut batch);
            } else {
                self.after_ingress_batch(e, cs, &mut batch, now);
            }
        }
        self.batch = batch;
    }

    /// Plain unicast packets may skip the traffic manager's queues: one queue per port
    /// without limits, nothing queued, none in the fast lane yet, no trace.
    #[inline(always)]
    fn fast_lane_open(&self) -> bool {
        self.qplain && self.tm.is_empty() && self.fast.is_empty() && !self.cfg.trace
    }

    /// [`Core::ingress`] stage by stage, to time the stages (`bench --stages`). Out of
    /// line: inlined, its field writes would cost every batch their set-up.
    #[cold]
    #[inline(never)]
    fn ingress_timed(&mut self, e: &Engine, cs: &ControlState, batch: &mut Vec<Pkt>, now: u64) {
        let mut t = None;
        lap(true, &mut t, &mut 0);
        for ctx in batch.iter_mut() {
            e.begin_ingress(ctx, now);
        }
        e.parse(cs, batch, &mut self.scratch);
        lap(true, &mut t, &mut self.stage_ns[0]);
        e.run_control(
            cs,
            &self.externs,
            ControlBlock::Ingress,
            batch,
            &mut self.scratch,
            now,
        );
        lap(true, &mut t, &mut self.stage_ns[1]);
        for ctx in batch.drain(..) {
            self.after_ingress(e, cs, ctx, now);
        }
        lap(true, &mut t, &mut self.stage_ns[2]);
    }

    fn preserve(&self, e: &Engine, ctx: &PacketCtx, fl: u32, out: &mut Vec<(u32, BigUint)>) {
        out.clear();
        if let Some(list) = e.prog.field_lists.iter().find(|l| l.id == fl) {
            for f in &list.fields {
                if let Some(v) = field_value(e, ctx, f) {
                    out.push(v);
                }
            }
        }
    }

    /// The after-ingress decisions of a batch. Packets that made no request, unicast
    /// (or dropped) with the default priority, when nothing is queued and the queues
    /// have no limits (the fast lane's conditions), are handled where they lie: the
    /// dropped ones freed, the others left in order and handed to the fast lane
    /// wholesale. From the first packet that is not such, [`Core::after_ingress`]
    /// decides packet by packet, after them.
    fn after_ingress_batch(
        &mut self,
        e: &Engine,
        cs: &ControlState,
        batch: &mut Vec<Pkt>,
        now: u64,
    ) {
        let std = &e.std_meta;
        let n = batch.len();
        let (mut w, mut r) = (0usize, 0usize);
        if self.fast_lane_open() {
            let drop_port = self.cfg.drop_port;
            while r < n {
                let ctx = &mut batch[r];
                if ctx.req.pending
                    || e.std_read(&ctx.phv, std.mcast_grp) != 0
                    || e.std_read(&ctx.phv, std.priority) != 0
                {
                    break;
                }
                let spec = e.std_read(&ctx.phv, std.egress_spec) as u32;
                r += 1;
                if spec == drop_port {
                    let (port, why) = (ctx.arch.port, Self::ingress_drop_reason(e, ctx));
                    self.count_drop(port, why);
                    continue;
                }
                e.unicast(ctx, spec, now);
                batch.swap(w, r - 1);
                w += 1;
            }
        }
        if w < r {
            // the dropped ones
            for ctx in batch.drain(w..r) {
                self.free(ctx);
            }
        }
        if w == batch.len() {
            // all in the fast lane (it was empty): the vectors trade places
            std::mem::swap(&mut self.fast, batch);
            return;
        }
        self.fast.extend(batch.drain(..w));
        for ctx in batch.drain(..) {
            self.after_ingress(e, cs, ctx, now);
        }
    }

    #[inline(always)]
    fn after_ingress(&mut self, e: &Engine, cs: &ControlState, mut ctx: Pkt, now: u64) {
        let std = &e.std_meta;
        if ctx.req.pending {
            // 1. I2E clone: the packet as it entered this pass, re-parsed, metadata
            // reset; 2. digest; 3. resubmit: the original packet goes back to ingress
            match self.requests_after_ingress(e, cs, ctx, now) {
                Some(c) => ctx = c,
                None => return,
            }
        }
        // 4. multicast
        let mgid = e.std_read(&ctx.phv, std.mcast_grp) as u32;
        if mgid != 0 {
            // the copies are REPLICATION instances (clones sent to a session's group keep
            // their own instance_type: replicate gives each copy the packet's)
            ctx.arch.instance_type = instance::REPLICATION;
            if self.cfg.trace {
                trace_line(&mut ctx, level::DEBUG, || {
                    "Multicast requested for packet".into()
                });
                // the original's lines first: the replication lines follow them
                self.trace_out.append(&mut ctx.log);
            }
            let n = self.replicate(e, cs, &ctx, mgid, now, None);
            self.fanout(ctx.arch.port, n);
            return self.free(ctx);
        }
        // 5. drop / 6. unicast
        let spec = e.std_read(&ctx.phv, std.egress_spec) as u32;
        if self.cfg.trace {
            trace_line(&mut ctx, level::DEBUG, || format!("Egress port is {spec}"));
        }
        if spec == self.cfg.drop_port {
            if self.cfg.trace {
                trace_line(&mut ctx, level::DEBUG, || {
                    "Dropping packet at the end of ingress".into()
                });
            }
            let (port, why) = (ctx.arch.port, Self::ingress_drop_reason(e, &ctx));
            self.count_drop(port, why);
            return self.free(ctx);
        }
        // simple_switch marks a unicast packet NORMAL before enqueueing it: a resubmitted
        // or recirculated packet reads instance_type 0 in egress
        ctx.arch.instance_type = instance::NORMAL;
        e.std_inform(&mut ctx.phv, std.instance_type, 0);
        self.enqueue(e, ctx, spec, now);
    }

    /// The requests a packet made in ingress, in simple_switch's order: I2E clone,
    /// digest, resubmit (which takes the packet: None). Out of line: most packets make
    /// none.
    #[cold]
    #[inline(never)]
    fn requests_after_ingress(
        &mut self,
        e: &Engine,
        cs: &ControlState,
        mut ctx: Pkt,
        now: u64,
    ) -> Option<Pkt> {
        if let Some((session, fl)) = ctx.req.clone {
            if self.cfg.trace {
                trace_line(&mut ctx, level::DEBUG, || {
                    "Cloning packet at ingress".into()
                });
            }
            self.clone_i2e(e, cs, &ctx, session, fl, now);
            if self.cfg.trace
                && let Some(port) = cs.mirror.get(&(session & 0x7fff)).and_then(|m| m.port)
            {
                trace_line(&mut ctx, level::DEBUG, || {
                    format!("Cloning packet to egress port {port}")
                });
            }
        }
        if let Some(id) = ctx.req.digest {
            self.learn(e, &ctx, id);
        }
        if let Some(fl) = ctx.req.resubmit {
            self.requeue(e, ctx, fl, instance::RESUBMIT);
            return None;
        }
        Some(ctx)
    }

    /// Zeroes the metadata of `c` (a clone of `src`) except the fields of field list
    /// `fl`, which keep their values in `src` (simple_switch's clone metadata rule).
    fn zero_metadata_but(&self, e: &Engine, src: &PacketCtx, c: &mut PacketCtx, fl: u32) {
        let p = &*e.prog;
        c.zero_metadata(p);
        let mut keep = std::mem::take(&mut c.arch.preserved);
        self.preserve(e, src, fl, &mut keep);
        for (f, v) in &keep {
            c.phv.write_big(p.fields[*f as usize].loc, v);
        }
        keep.clear();
        c.arch.preserved = keep;
    }

    /// A copy of `ctx` for mirroring session `session` with the session, or None when
    /// the session does not exist (the clone request is then ignored, as in bmv2).
    fn clone_for<'c>(
        &mut self,
        cs: &'c ControlState,
        ctx: &PacketCtx,
        session: u32,
    ) -> Option<(Pkt, &'c p4jet_engine::state::MirrorSession)> {
        let ms = cs.mirror.get(&(session & 0x7fff))?;
        self.accounts.clone_copies += 1;
        let mut c = self.alloc();
        c.copy_from(ctx);
        c.arch.rx_ns = ctx.arch.rx_ns;
        Some((c, ms))
    }

    /// The I2E clone of `ctx` for `session`, if the session exists (rare path, kept out
    /// of the per-packet code).
    #[cold]
    #[inline(never)]
    fn clone_i2e(
        &mut self,
        e: &Engine,
        cs: &ControlState,
        ctx: &PacketCtx,
        session: u32,
        fl: u32,
        now: u64,
    ) {
        let p = &*e.prog;
        let std = &e.std_meta;
        let Some((mut c, ms)) = self.clone_for(cs, ctx, session) else {
            return;
        };
        c.reset(p);
        e.std_inform(&mut c.phv, std.ingress_port, ctx.arch.port as u128);
        e.parse(cs, std::slice::from_mut(&mut c), &mut self.scratch);
        self.zero_metadata_but(e, ctx, &mut c, fl);
        c.arch.instance_type = instance::INGRESS_CLONE;
        e.std_inform(&mut c.phv, std.instance_type, c.arch.instance_type as u128);
        e.std_inform(&mut c.phv, std.packet_length, c.pkt.len() as u128);
        c.ingress_len = ctx.ingress_len;
        // the length register as the pass began (add/remove_header of this pass
        // changed the original's, not the clone's)
        c.length_reg = ctx.ingress_len as u64;
        self.send_to_session(e, cs, c, ms, now);
    }

    /// The E2E clone of `ctx` for `session`, if the session exists (rare path).
    #[cold]
    #[inline(never)]
    fn clone_e2e(
        &mut self,
        e: &Engine,
        cs: &ControlState,
        ctx: &PacketCtx,
        session: u32,
        fl: u32,
        now: u64,
    ) {
        let std = &e.std_meta;
        let Some((mut c, ms)) = self.clone_for(cs, ctx, session) else {
            return;
        };
        self.zero_metadata_but(e, ctx, &mut c, fl);
        c.req.clone = None;
        c.req.truncate = None;
        c.req.recirculate = None;
        c.arch.instance_type = instance::EGRESS_CLONE;
        e.std_inform(&mut c.phv, std.instance_type, c.arch.instance_type as u128);
        self.send_to_session(e, cs, c, ms, now);
    }

    /// Sends `ctx` back to ingress as a resubmitted (`RESUBMIT`) or, after egress and
    /// deparsing, recirculated (`RECIRC`) instance with field list `fl` preserved (rare
    /// path), or drops it when it has looped too often (a dropped resubmission counts as
    /// an ingress drop on its port).
    #[cold]
    #[inline(never)]
    fn requeue(&mut self, e: &Engine, mut ctx: Pkt, fl: u32, instance_type: u32) {
        let resubmit = instance_type == instance::RESUBMIT;
        if ctx.arch.passes >= self.cfg.max_passes {
            let passes = ctx.arch.passes;
            self.fault_drop(ctx.arch.port, DropReason::LoopGuard, || {
                format!("packet dropped after {passes} resubmit/recirculate passes (loop guard)")
            });
            return self.free(ctx);
        }
        if resubmit {
            self.accounts.resubmitted += 1;
        } else {
            self.accounts.recirculated += 1;
        }
        let mut keep = std::mem::take(&mut ctx.arch.preserved);
        self.preserve(e, &ctx, fl, &mut keep);
        ctx.arch.preserved = keep;
        ctx.arch.instance_type = instance_type;
        ctx.arch.passes += 1;
        ctx.arch.port = 0;
        if self.cfg.trace {
            let what = if resubmit {
                "Resubmitting packet"
            } else {
                "Recirculating packet"
            };
            trace_line(&mut ctx, level::DEBUG, || what.into());
            // this pass's lines out before the next pass (a new copy) starts its own
            self.trace_out.append(&mut ctx.log);
            ctx.arch.trace = ctx.arch.trace.new_copy();
        }
        self.recirc.push_back(ctx);
    }

    fn send_to_session(
        &mut self,
        e: &Engine,
        cs: &ControlState,
        mut c: Pkt,
        ms: &p4jet_engine::state::MirrorSession,
        now: u64,
    ) {
        let truncate = (ms.truncate > 0).then_some(ms.truncate);
        if let Some(replicas) = &ms.replicas {
            // P4Runtime replicas: one copy per (port, instance)
            self.fanout(c.arch.port, replicas.len() as u64);
            for &(port, rid) in replicas {
                let mut r = self.alloc();
                r.copy_from(&c);
                r.req.set_truncate(truncate);
                r.req.recirculate = None;
                r.arch.rx_ns = c.arch.rx_ns;
                e.std_inform(&mut r.phv, e.std_meta.egress_rid, rid as u128);
                self.enqueue(e, r, port, now);
            }
            self.free(c);
            return;
        }
        let copies = match ms.mgid {
            Some(mgid) => self.replicate(e, cs, &c, mgid, now, truncate),
            None => 0,
        };
        match ms.port {
            Some(port) => {
                self.accounts.multicast_copies += copies;
                if truncate.is_some() {
                    c.req.set_truncate(truncate);
                }
                self.enqueue(e, c, port, now)
            }
            None => {
                // the clone became its group's copies
                self.fanout(c.arch.port, copies);
                self.free(c)
            }
        }
    }

    /// Counts a packet on `port` replaced by `n` copies: `n - 1` copies, or a drop
    /// when there is none.
    fn fanout(&mut self, port: u32, n: u64) {
        match n {
            0 => self.count_drop(port, DropReason::NoReplicas),
            n => self.accounts.multicast_copies += n - 1,
        }
    }

    /// One copy of `ctx` per port of multicast group `mgid` (truncated to
    /// `truncate` bytes: copies of a clone session that truncates); returns how many
    /// (the caller counts them, see [`Core::fanout`]).
    #[inline(never)]
    fn replicate(
        &mut self,
        e: &Engine,
        cs: &ControlState,
        ctx: &PacketCtx,
        mgid: u32,
        now: u64,
        truncate: Option<u32>,
    ) -> u64 {
        let mut made = 0;
        let Some(nodes) = cs.pre.groups.get(&mgid) else {
            if self.cfg.trace {
                self.trace_out.push(trace_text(
                    &ctx.arch.trace,
                    level::DEBUG,
                    &format!("Multicast group {mgid} does not exist: no copies"),
                ));
            }
            return 0;
        };
        for nh in nodes {
            let Some(node) = cs.pre.nodes.get(nh) else {
                continue;
            };
            // simple_switch (McSimplePreLAG::replicate): the node's ports in ascending
            // order, then one member per LAG in ascending LAG order. Its LAG "hash" is the
            // constant 0xFF: the member picked is number 0xFF % n (0-based) of the LAG's
            // ports in ascending order. (Port and LAG lists are ascending and unique: they
            // come from port maps.)
            let lag_members = node.lags.iter().filter_map(|lag| {
                let m = cs.pre.lags.get(lag)?;
                (!m.is_empty()).then(|| m[0xFF % m.len()])
            });
            let ports = node.ports.iter().copied().chain(lag_members);
            for port in ports {
                if self.cfg.trace {
                    self.trace_out.push(trace_text(
                        &ctx.arch.trace,
                        level::DEBUG,
                        &format!("Replicating packet on port {port}"),
                    ));
                }
                let mut c = self.alloc();
                c.copy_from(ctx);
                // a new packet (simple_switch: clone_with_phv + clear_all): not truncated
                // (unless its clone session truncates), no recirculation requested
                c.req.set_truncate(truncate);
                c.req.recirculate = None;
                c.arch.rx_ns = ctx.arch.rx_ns;
                e.std_inform(&mut c.phv, e.std_meta.egress_rid, node.rid as u128);
                e.std_inform(
                    &mut c.phv,
                    e.std_meta.instance_type,
                    c.arch.instance_type as u128,
                );
                self.enqueue(e, c, port, now);
                made += 1;
            }
        }
        made
    }

    /// Drops a packet whose priority has no queue (simple_switch without
    /// `--priority-queues` drops priorities other than 0).
    #[cold]
    #[inline(never)]
    fn drop_bad_priority(&mut self, mut ctx: Pkt, port: u32, prio: u32) {
        let n = self.qcfg.nqueues;
        self.fault_drop(port, DropReason::PriorityOutOfRange, || {
            format!("priority {prio} out of range ({n} queues): packet dropped")
        });
        if self.cfg.trace {
            trace_line(&mut ctx, level::ERROR, || {
                format!("Priority out of range, dropping packet (priority {prio})")
            });
        }
        self.free(ctx)
    }

    /// Takes this batch's copy of the shared queue configuration.
    fn sync_queue_config(&mut self) {
        self.queues.refresh(&mut self.qgen, &mut self.qcfg);
        self.qplain = self.qcfg.unlimited() && self.qcfg.nqueues == 1;
    }

    /// Hands a packet to the traffic manager (inlined: the common case is a push onto
    /// the fast lane).
    #[inline(always)]
    fn enqueue(&mut self, e: &Engine, mut ctx: Pkt, port: u32, now: u64) {
        let prio = e.std_read(&ctx.phv, e.std_meta.priority) as u32;
        let cfg = &self.qcfg;
        if prio >= cfg.nqueues {
            return self.drop_bad_priority(ctx, port, prio);
        }
        ctx.arch.enq_us = now;
        ctx.arch.qid = prio;
        ctx.arch.port = port;
        if self.qplain && self.tm.is_empty() {
            // Nothing is queued, no queue has a limit and there is one queue per port:
            // FIFO order per port is the arrival order, so the packet can skip the
            // per-port queues. (With priority queues the batch must be ordered.)
            ctx.arch.enq_qdepth = 0;
            self.fast.push(ctx);
            return;
        }
        self.enqueue_queued(ctx, port, prio, now)
    }

    /// [`Core::enqueue`] into the per-port queues.
    #[inline(never)]
    fn enqueue_queued(&mut self, mut ctx: Pkt, port: u32, prio: u32, now: u64) {
        ctx.arch.enq_qdepth = self.tm.depth(port, prio) as u32;
        let now_ns = now.saturating_mul(1000);
        if let Err(ctx) = self.tm.enqueue(&self.qcfg, port, prio, ctx, now_ns) {
            self.fault_drop(port, DropReason::QueueFull, || {
                format!("egress queue of port {port} full: packet dropped")
            });
            self.free(ctx);
        }
    }

    /// Egress for `self.egress`; `deq_qdepth` is taken from this core's traffic manager
    /// if `compute_deq`, else it was written when the packet was dequeued.
    fn run_egress<F: FnMut(u32, &[u8]) + ?Sized>(
        &mut self,
        cs: &ControlState,
        tx: &mut F,
        compute_deq: bool,
    ) {
        let engine = self.engine.clone();
        let e: &Engine = &engine;
        let std = &e.std_meta;
        let mut t = None;
        let on = self.timing;
        lap(on, &mut t, &mut 0);
        // without an egress control nothing can drop in egress (the egress_spec marker
        // is neither set nor checked) and the time is only for the informational
        // metadata (else for meters and E2E clones): with neither, no clock read
        let egress_control = e.prog.egress.init.is_some();
        let mut batch = std::mem::take(&mut self.egress);
        let now = if let Some(at) = self.egressed.take() {
            // the ingress pass ran on through egress at `at`
            at
        } else {
            let now = if std.egress_info || egress_control {
                self.clock.now_us()
            } else {
                0
            };
            if compute_deq && std.deq_qdepth.is_some() {
                for ctx in batch.iter_mut() {
                    ctx.arch.deq_qdepth = deq_qdepth(&self.tm, ctx) as u32;
                }
            }
            if on {
                self.egress_timed(e, cs, &mut batch, now);
            } else {
                e.egress_pass(cs, &self.externs, &mut batch, &mut self.scratch, now);
            }
            now
        };
        lap(on, &mut t, &mut self.stage_ns[3]);
        let tx_ns = self.stamps.as_ref().map(|s| s.now_ns());
        // latency: the packets of a batch mostly share their injection time, so equal
        // values are counted together
        let mut lat = (0u64, 0u64);
        let plain = !self.cfg.trace;
        // ports that take buffers (AF_XDP, DPDK): tested per packet only if any
        let moving = !self.moving.is_empty();
        for mut ctx in batch.drain(..) {
            if !plain || ctx.req.pending || !ctx.deparsed {
                // 1. E2E clone, 2. drop, 3. deparse, recirculate
                match self.leave_egress(e, cs, ctx, now) {
                    Some(c) => ctx = c,
                    None => continue,
                }
            }
            // 4. transmit
            let port = ctx.arch.port;
            if !plain {
                self.trace_tx(&mut ctx, port);
            }
            if moving
                && self.moving.get(port as usize) == Some(&true)
                && ctx.pkt.buf.is_port_owned()
            {
                if let Some(t) = ctx.req.truncate {
                    ctx.pkt.truncate(t as usize);
                }
                self.moved_to.push(port);
                self.moved.push(std::mem::take(&mut ctx.pkt));
            } else {
                // (a truncation is a request: none without `pending`)
                let data = ctx.pkt.data();
                match ctx.req.truncate {
                    None => tx(port, data),
                    Some(t) => tx(port, &data[..(t as usize).min(data.len())]),
                }
            }
            // counted per packet: counting runs of packets to one port instead
            // mispredicted a branch per packet on traffic spread over ports
            self.port_mut(port).tx += 1;
            if tx_ns.is_some() {
                let rx = ctx.arch.rx_ns;
                if lat.1 > 0 && lat.0 != rx {
                    self.record_latency(tx_ns, lat);
                    lat.1 = 0;
                }
                lat = (rx, lat.1 + 1);
            }
            self.free(ctx);
        }
        if lat.1 > 0 {
            self.record_latency(tx_ns, lat);
        }
        lap(on, &mut t, &mut self.stage_ns[4]);
        self.egress = batch;
    }

    /// The egress control of [`Core::run_egress`] when the stages are timed: the
    /// interpreter's stages one by one. Out of line (see [`Core::ingress_timed`]).
    #[cold]
    #[inline(never)]
    fn egress_timed(&mut self, e: &Engine, cs: &ControlState, batch: &mut [Pkt], now: u64) {
        for ctx in batch.iter_mut() {
            e.begin_egress(ctx, now);
        }
        e.run_control(
            cs,
            &self.externs,
            ControlBlock::Egress,
            batch,
            &mut self.scratch,
            now,
        );
    }

    /// The trace lines of a packet transmitted on `port` (`--log-console`,
    /// `--dump-packet-data`).
    #[cold]
    #[inline(never)]
    fn trace_tx(&mut self, ctx: &mut PacketCtx, port: u32) {
        let n = tx_len(ctx);
        trace_line(ctx, level::DEBUG, || {
            format!("Transmitting packet of size {n} out of port {port}")
        });
        if self.cfg.dump_packet_data > 0 {
            let line = dump_line(
                "Sending",
                port,
                &ctx.pkt.data()[..n],
                self.cfg.dump_packet_data,
            );
            ctx.log.push(line);
        }
    }

    /// `count` packets injected at `rx` ns leaving at `tx` ns.
    fn record_latency(&mut self, tx: Option<u64>, (rx, count): (u64, u64)) {
        if let Some(now) = tx {
            self.latency.record_n(now.saturating_sub(rx), count);
        }
    }

    /// What happens to a packet after the egress pass other than plain transmission:
    /// its E2E clone, drop, deparsing when the pass did not deparse it, recirculation
    /// (None: the packet is gone).
    #[inline(never)]
    fn leave_egress(
        &mut self,
        e: &Engine,
        cs: &ControlState,
        mut ctx: Pkt,
        now: u64,
    ) -> Option<Pkt> {
        // 1. E2E clone: current headers, metadata reset but the field list
        if let Some((session, fl)) = ctx.req.clone {
            if self.cfg.trace {
                trace_line(&mut ctx, level::DEBUG, || "Cloning packet at egress".into());
            }
            self.clone_e2e(e, cs, &ctx, session, fl, now);
            if self.cfg.trace
                && let Some(port) = cs.mirror.get(&(session & 0x7fff)).and_then(|m| m.port)
            {
                trace_line(&mut ctx, level::DEBUG, || {
                    format!("Cloning packet to egress port {port}")
                });
            }
        }
        // 2. drop
        if !ctx.deparsed && e.dropped_in_egress(&ctx) {
            if self.cfg.trace {
                trace_line(&mut ctx, level::DEBUG, || {
                    "Dropping packet at the end of egress".into()
                });
            }
            self.count_drop(ctx.arch.port, DropReason::Egress);
            self.free(ctx);
            return None;
        }
        // 3. deparse (done by the egress pass for packets without requests)
        if !ctx.deparsed {
            e.deparse(&mut ctx, &mut self.scratch, cs);
        }
        if let Some(fl) = ctx.req.recirculate {
            self.requeue(e, ctx, fl, instance::RECIRC);
            return None;
        }
        Some(ctx)
    }

    #[cold]
    #[inline(never)]
    fn learn(&mut self, e: &Engine, ctx: &PacketCtx, id: u32) {
        let p = &*e.prog;
        let Some(list) = p.learn_lists.iter().find(|l| l.id == id) else {
            return;
        };
        let mut sample = vec![];
        for f in &list.fields {
            let Some((fid, v)) = field_value(e, ctx, f) else {
                continue;
            };
            let w = p.fields[fid as usize].loc.width;
            let nb = w.div_ceil(8) as usize;
            let b = v.to_bytes_be();
            let mut bytes = vec![0u8; nb.saturating_sub(b.len())];
            bytes.extend_from_slice(&b[b.len().saturating_sub(nb)..]);
            sample.extend(bytes);
        }
        if let Ok(mut d) = self.digests.lock() {
            if !d.filter.insert((id, sample.clone())) {
                return;
            }
            let msg = Digest {
                list_id: id,
                name: list.name.clone(),
                sample,
            };
            if d.history.len() == crate::DIGEST_HISTORY_CAPACITY {
                d.history.pop_front();
            }
            d.history.push_back(msg.clone());
            d.pending.push_back(msg);
        }
    }
}

/// The bytes of `ctx`'s frame that leave: all, or as many as the program truncated it
/// to.
fn tx_len(ctx: &PacketCtx) -> usize {
    let len = ctx.pkt.len();
    match ctx.req.truncate {
        Some(t) => (t as usize).min(len),
        None => len,
    }
}

/// simple_switch's `--dump-packet-data` line (an `[I]` line without a packet id):
/// `Received packet of length 70 on port 0: 0000...`, the first `max` bytes in hex.
#[cold]
fn dump_line(what: &str, port: u32, data: &[u8], max: usize) -> String {
    use std::fmt::Write as _;
    let mut line = format!(
        "{}{what} packet of length {} on port {port}: ",
        level::INFO as char,
        data.len()
    );
    for b in &data[..data.len().min(max)] {
        let _ = write!(line, "{b:02x}");
    }
    line
}
