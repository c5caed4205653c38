//! A worker split over two threads joined by p4jet-ring rings.
//!
//! ```text
//!            ┌──────────── to_egress (Msg: packets, swap) ────────────┐
//!  inject ─▶ IngressStage: parse, ingress, after-ingress, TM  ──────▶ EgressStage: egress,
//!            ▲                                                       E2E clones, deparse, tx ─▶
//!            ├──────────── recirc (recirculated packets) ────────────┤
//!            └──────────── free (recycled packet contexts) ──────────┘
//! ```
//!
//! * Stage 1 ([`IngressStage`]) takes recirculated packets back first (as
//!   [`Worker::step`] serves them before new input), runs one ingress batch and hands
//!   everything ready for egress to stage 2 in the order a single-threaded step would
//!   run it, with `deq_qdepth` written at dequeue time. Resubmission stays in stage 1.
//! * Stage 2 ([`EgressStage`]) runs egress, egress-to-egress clones (in its own traffic
//!   manager), deparsing and transmission; recirculated packets go back to stage 1
//!   through the second ring, spare packet contexts through the third, so that neither
//!   stage allocates once warm.
//! * Stage 1 blocks when the ring to egress is full; stage 2 never blocks on the rings
//!   back (recirculated packets wait in a local list when their ring is full, spare
//!   contexts are dropped), so the two can never wait for each other.
//! * An in-flight counter (packets handed to stage 2 and not yet sent, dropped or
//!   back in stage 1) tells when the pipeline is idle.
//! * Rate-limited queues (`set_queue_rate`): stage 1 hands a packet over when its
//!   departure time comes; egress clones wait in stage 2's queues, counted as in flight,
//!   and stage 2 publishes how many wait and until when, so that stage 1 can tell "idle
//!   but for paced packets" from "busy" (with a manual clock, `run_until_idle` returns
//!   then; see [`IngressStage::next_due_us`]).
//! * Configuration swaps: stage 1 notices the new generation, stops taking input,
//!   finishes the packets inside the pipeline with the old program (including
//!   recirculations coming back), waits until none is in flight, then sends the new
//!   program down the ring and moves to it; stage 2 moves when the message arrives.
//!   A packet is processed entirely by one program, as with [`Worker`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use p4jet_ring::{Closed, Consumer, Producer, RingConfig};

use crate::latency::Stamps;
use crate::tm::Pkt;
use crate::{Active, Core, Worker};
use p4jet_engine::PacketBuf;

/// What flows from stage 1 to stage 2.
enum Msg {
    /// A packet for egress.
    Pkt(Pkt),
    /// Move to this program (every earlier packet was processed with the old one).
    Swap(Arc<Active>),
}

/// State shared by the two stages.
struct Shared {
    /// Packets handed to egress and not yet transmitted, dropped or back in stage 1,
    /// and egress clones waiting in stage 2's rate-limited queues.
    inflight: AtomicUsize,
    /// Stage 2's queued egress clones (changed together with `inflight` for them).
    waiting: Mutex<Waiting>,
}

/// Egress clones queued in stage 2.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    /// How many.
    count: usize,
    /// Departure time of the first (ns of the switch clock; u64::MAX: none).
    due_ns: u64,
}

impl Shared {
    fn waiting(&self) -> Waiting {
        match self.waiting.lock() {
            Ok(g) => *g,
            Err(p) => *p.into_inner(),
        }
    }
}

/// Rounds a requested ring size to the capacity used: a power of two, at least 2.
pub fn ring_capacity(requested: usize) -> usize {
    requested.max(2).next_power_of_two()
}

/// Stage 1 of a pipelined worker: rx side, parse, ingress, traffic manager.
pub struct IngressStage {
    w: Worker,
    to_egress: Producer<Msg>,
    recirc_in: Consumer<Pkt>,
    free_in: Consumer<Pkt>,
    shared: Arc<Shared>,
    out: Vec<Pkt>,
    msgs: Vec<Msg>,
    back: Vec<Pkt>,
}

/// Stage 2 of a pipelined worker: egress, deparse, tx side.
pub struct EgressStage {
    w: Worker,
    from_ingress: Consumer<Msg>,
    recirc_out: Producer<Pkt>,
    free_out: Producer<Pkt>,
    shared: Arc<Shared>,
    msgs: Vec<Msg>,
    batch: Vec<Pkt>,
    /// Recirculated packets waiting for room in the ring back to stage 1.
    back: Vec<Pkt>,
    spare: Vec<Pkt>,
    max: usize,
}

impl crate::Switch {
    /// A pipelined worker: two stages (run each on its own thread) joined by rings of
    /// `queue_size` slots (rounded up to a power of two, see [`ring_capacity`]).
    pub fn new_pipeline(&self, queue_size: usize) -> (IngressStage, EgressStage) {
        let cap = ring_capacity(queue_size);
        let w1 = self.new_worker();
        let w2 = w1.sibling();
        pipeline(w1, w2, cap)
    }
}

fn ring<T>(cap: usize) -> (Producer<T>, Consumer<T>) {
    match RingConfig::new(cap).build() {
        Ok(r) => r,
        // `cap` is a power of two >= 2 and the default wake threshold is cap/2
        Err(e) => unreachable!("ring of {cap}: {e}"),
    }
}

fn pipeline(w1: Worker, w2: Worker, cap: usize) -> (IngressStage, EgressStage) {
    let (to_egress, from_ingress) = ring(cap);
    let (recirc_out, recirc_in) = ring(cap);
    let (free_out, free_in) = ring(cap);
    let shared = Arc::new(Shared {
        inflight: AtomicUsize::new(0),
        waiting: Mutex::new(Waiting {
            count: 0,
            due_ns: u64::MAX,
        }),
    });
    let max = w2.core.batch_size();
    (
        IngressStage {
            w: w1,
            to_egress,
            recirc_in,
            free_in,
            shared: shared.clone(),
            out: Vec::new(),
            msgs: Vec::new(),
            back: Vec::new(),
        },
        EgressStage {
            w: w2,
            from_ingress,
            recirc_out,
            free_out,
            shared,
            msgs: Vec::new(),
            batch: Vec::new(),
            back: Vec::new(),
            spare: Vec::new(),
            max,
        },
    )
}

impl IngressStage {
    /// Queues a received frame.
    #[inline]
    pub fn inject(&mut self, port: u32, frame: &[u8]) {
        self.w.inject(port, frame)
    }

    /// Queues a received frame in the buffer it arrived in (no copy).
    #[inline]
    pub fn inject_buf(&mut self, port: u32, buf: PacketBuf) {
        self.w.inject_buf(port, buf)
    }

    /// Queues received frames, all from `port`, in the buffers they arrived in
    /// (`bufs` is left empty).
    #[inline]
    pub fn inject_bufs(&mut self, port: u32, bufs: &mut Vec<PacketBuf>) {
        self.w.inject_bufs(port, bufs)
    }

    /// This stage's core (rx and ingress-drop counters, trace lines, errors).
    pub fn core(&self) -> &Core {
        &self.w.core
    }

    /// This stage's core.
    pub fn core_mut(&mut self) -> &mut Core {
        &mut self.w.core
    }

    /// Measures injection-to-transmission latency (into the egress stage's
    /// [`Core::latency`]); give `egress` the same table.
    pub fn enable_latency(&mut self, stamps: Arc<Stamps>) {
        self.w.core.enable_latency(stamps)
    }

    /// Packets not finished: waiting for ingress here, or handed to egress and not yet
    /// sent, dropped or back here.
    pub fn pending(&self) -> usize {
        self.w.pending() + self.in_flight()
    }

    /// Packets waiting for ingress in this stage.
    pub fn local_pending(&self) -> usize {
        self.w.pending()
    }

    /// Whether [`IngressStage::step`] can make progress now (packets waiting for
    /// ingress, or queued packets due).
    pub fn local_ready(&self) -> bool {
        if self.w.swap_pending() {
            let core = &self.w.core;
            core.pipeline_ready()
                || (core.in_pipeline() == 0 && self.in_flight() == 0 && self.w.pending() > 0)
        } else {
            self.w.core.ready()
        }
    }

    /// When the next packet waiting in a rate-limited queue of either stage may leave
    /// (µs of the switch clock, rounded up); None when none waits.
    pub fn next_due_us(&self) -> Option<u64> {
        let local = self.w.core.next_due_us();
        let w = self.shared.waiting();
        let remote = (w.count > 0 && w.due_ns != u64::MAX).then(|| w.due_ns.div_ceil(1000));
        match (local, remote) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Time until a packet of either stage's rate-limited queues may leave, when
    /// everything left waits for that (None: something can be done now, or nothing
    /// waits).
    pub fn idle_until(&self) -> Option<Duration> {
        if self.local_ready() {
            return None;
        }
        let w = self.shared.waiting();
        if self.in_flight() != w.count {
            // the egress stage has work
            return None;
        }
        let clock = self.w.core.clock();
        let now = clock.now_ns();
        let mut due = w.due_ns;
        if let Some(d) = self.w.core.until_due() {
            due = due.min(now.saturating_add(d.as_nanos() as u64));
        }
        (due != u64::MAX).then(|| Duration::from_nanos(due.saturating_sub(now)))
    }

    /// Packets handed to the egress stage that have not left the pipeline yet.
    pub fn in_flight(&self) -> usize {
        self.shared.inflight.load(Ordering::Acquire)
    }

    /// Counters of the ring to the egress stage.
    pub fn ring_stats(&self) -> p4jet_ring::Stats {
        self.to_egress.stats()
    }

    /// Capacity of the rings.
    pub fn capacity(&self) -> usize {
        self.to_egress.capacity()
    }

    /// Generation of the program this stage runs.
    pub fn generation(&self) -> u64 {
        self.w.generation()
    }

    /// Takes back recirculated packets and spare contexts from the egress stage.
    fn collect(&mut self) {
        if let Ok(n) = self.recirc_in.try_pop_batch(&mut self.back, usize::MAX)
            && n > 0
        {
            self.w.core.put_recirc(&mut self.back);
            self.shared.inflight.fetch_sub(n, Ordering::AcqRel);
        }
        if let Ok(n) = self.free_in.try_pop_batch(&mut self.back, usize::MAX)
            && n > 0
        {
            self.w.core.give_back(&mut self.back);
        }
    }

    /// One step: takes back what the egress stage returned, runs one ingress batch
    /// (recirculated and resubmitted packets first) and hands what is to leave to the
    /// egress stage, blocking while its ring is full. Returns the packets handed over.
    /// `Err(Closed)` when the egress stage is gone (the packets are then lost).
    pub fn step(&mut self) -> Result<usize, Closed> {
        self.collect();
        if self.w.swap_pending() {
            return self.step_swap();
        }
        let Some(guard) = self.w.reader.enter() else {
            self.w.core.errors.push("control state is gone".into());
            self.w.core.clear_input();
            return Ok(0);
        };
        self.w.core.ingress_stage(&guard, true, &mut self.out);
        drop(guard);
        self.send()
    }

    /// A step while a configuration swap is under way (see the module docs).
    fn step_swap(&mut self) -> Result<usize, Closed> {
        if self.w.core.in_pipeline() > 0 {
            let Some(guard) = self.w.reader.enter() else {
                self.w
                    .core
                    .errors
                    .push("configuration swap: packets of the old program lost".into());
                self.w.core.clear_pipeline();
                return Ok(0);
            };
            self.w.core.ingress_stage(&guard, false, &mut self.out);
            drop(guard);
            return self.send();
        }
        if self.in_flight() > 0 {
            // the egress stage still has packets of the old program
            return Ok(0);
        }
        let next = self.w.dataplane.current();
        // contexts of the old program's layout must not be reused
        let _ = self.free_in.try_pop_batch(&mut self.back, usize::MAX);
        self.back.clear();
        self.msgs.push(Msg::Swap(next.clone()));
        let r = self.to_egress.push_batch(&mut self.msgs);
        self.msgs.clear();
        self.w.adopt(next);
        r.map(|()| 0)
    }

    fn send(&mut self) -> Result<usize, Closed> {
        let n = self.out.len();
        if n == 0 {
            return Ok(0);
        }
        // counted before the egress stage can see (and uncount) them
        self.shared.inflight.fetch_add(n, Ordering::AcqRel);
        self.msgs.extend(self.out.drain(..).map(Msg::Pkt));
        match self.to_egress.push_batch(&mut self.msgs) {
            Ok(()) => Ok(n),
            Err(Closed) => {
                let lost = self.msgs.len();
                self.msgs.clear();
                self.shared.inflight.fetch_sub(lost, Ordering::AcqRel);
                self.w.core.count_discarded(lost);
                Err(Closed)
            }
        }
    }

    /// Steps until every packet injected so far has left the pipeline (the egress stage
    /// must be running on another thread). Packets of rate-limited queues are waited
    /// for with a real clock; with a manual clock this returns once only they are left
    /// (advance the clock to [`IngressStage::next_due_us`] and call again).
    pub fn run_until_idle(&mut self) -> Result<(), Closed> {
        loop {
            let n = self.step()?;
            if self.pending() == 0 {
                return Ok(());
            }
            if n == 0 {
                if let Some(d) = self.idle_until() {
                    if d.is_zero() {
                        // due now: the stage holding it releases it at its next step
                    } else if self.w.core.clock().is_manual() {
                        return Ok(());
                    } else {
                        std::thread::sleep(d.min(Duration::from_millis(1)));
                        continue;
                    }
                }
                std::thread::yield_now();
            }
        }
    }

    /// Closes the ring to egress: the egress stage finishes what it holds and its
    /// [`EgressStage::step`] returns `Err(Closed)`.
    pub fn close(&mut self) {
        self.to_egress.close();
    }
}

impl EgressStage {
    /// This stage's core (tx counters, latency, trace lines, errors).
    pub fn core(&self) -> &Core {
        &self.w.core
    }

    /// This stage's core.
    pub fn core_mut(&mut self) -> &mut Core {
        &mut self.w.core
    }

    /// Records injection-to-transmission latency; `stamps` is the ingress stage's.
    pub fn enable_latency(&mut self, stamps: Arc<Stamps>) {
        self.w.core.enable_latency(stamps)
    }

    /// Counters of the ring from the ingress stage.
    pub fn ring_stats(&self) -> p4jet_ring::Stats {
        self.from_ingress.stats()
    }

    /// Takes up to a batch from the ingress stage (waiting at most `wait` for the
    /// first packet), runs egress and transmits through `tx`. Returns the messages
    /// taken (`Ok(0)` on timeout); `Err(Closed)` once the ingress stage closed its ring
    /// and everything in it was processed.
    pub fn step(
        &mut self,
        tx: &mut dyn FnMut(u32, &[u8]),
        wait: Duration,
    ) -> Result<usize, Closed> {
        self.flush_back();
        let mut wait = if self.back.is_empty() {
            wait
        } else {
            wait.min(Duration::from_micros(50))
        };
        if let Some(d) = self.w.core.until_due() {
            // egress clones wait in a rate-limited queue
            wait = wait.min(d);
        }
        match self
            .from_ingress
            .pop_batch_timeout(&mut self.msgs, self.max, wait)
        {
            Ok(0) => {
                if self.w.core.queued() > 0 && self.w.core.ready() {
                    self.process(tx);
                }
                return Ok(0);
            }
            Ok(_) => {}
            Err(Closed) => {
                self.drain_queued(tx);
                if !self.back.is_empty() {
                    let lost = self.back.len();
                    self.back.clear();
                    self.shared.inflight.fetch_sub(lost, Ordering::AcqRel);
                    self.w.core.count_discarded(lost);
                    self.w.core.errors.push(format!(
                        "{lost} recirculated packet(s) lost: the ingress stage stopped"
                    ));
                }
                return Err(Closed);
            }
        }
        let n = self.msgs.len();
        let mut msgs = std::mem::take(&mut self.msgs);
        for m in msgs.drain(..) {
            match m {
                Msg::Pkt(p) => self.batch.push(p),
                Msg::Swap(next) => {
                    self.process(tx);
                    // (stage 1 swaps once nothing is in flight, queued clones included)
                    self.drain_queued(tx);
                    self.w.adopt(next);
                }
            }
        }
        self.msgs = msgs;
        self.process(tx);
        Ok(n)
    }

    /// Runs until the ingress stage closes its ring.
    pub fn run(&mut self, tx: &mut dyn FnMut(u32, &[u8])) {
        while self.step(tx, Duration::from_millis(10)).is_ok() {}
    }

    /// At the end: egress clones still queued leave at their departure time (real
    /// clock); a manual clock would never get there, so they are dropped and reported.
    fn drain_queued(&mut self, tx: &mut dyn FnMut(u32, &[u8])) {
        while self.w.core.queued() > 0 {
            if !self.w.core.ready() && !self.w.core.wait_for_due() {
                let lost = self.w.core.queued();
                self.w.core.clear_pipeline();
                self.w.core.errors.push(format!(
                    "{lost} egress clone(s) dropped at shutdown: their rate-limited queue \
                     was not due (manual clock)"
                ));
                self.publish_waiting(lost, 0);
                return;
            }
            self.process(tx);
        }
    }

    /// Publishes the egress clones queued here; `before` were queued before the last
    /// processing and `k` packets from stage 1 were processed since.
    fn publish_waiting(&mut self, before: usize, k: usize) {
        let after = self.w.core.queued();
        if before == 0 && after == 0 {
            if k > 0 {
                self.shared.inflight.fetch_sub(k, Ordering::AcqRel);
            }
            return;
        }
        let due_ns = self
            .w
            .core
            .until_due()
            .map(|d| {
                self.w
                    .core
                    .clock()
                    .now_ns()
                    .saturating_add(d.as_nanos() as u64)
            })
            .unwrap_or(u64::MAX);
        let mut w = match self.shared.waiting.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        // queued clones count as in flight, changed under the lock with `waiting`
        let add = after;
        let sub = before + k;
        if add >= sub {
            self.shared.inflight.fetch_add(add - sub, Ordering::AcqRel);
        } else {
            self.shared.inflight.fetch_sub(sub - add, Ordering::AcqRel);
        }
        *w = Waiting {
            count: after,
            due_ns,
        };
    }

    fn process(&mut self, tx: &mut dyn FnMut(u32, &[u8])) {
        let k = self.batch.len();
        let queued = self.w.core.queued();
        if k == 0 && !(queued > 0 && self.w.core.ready()) {
            return;
        }
        match self.w.reader.enter() {
            Some(guard) => {
                self.w.core.egress_stage(&guard, &mut self.batch, tx);
            }
            None => {
                self.w.core.errors.push("control state is gone".into());
                let lost = self.batch.len();
                self.batch.clear();
                self.w.core.count_discarded(lost);
            }
        }
        // recirculated packets stay in flight until the ingress stage takes them
        let before = self.back.len();
        self.w.core.take_recirc(&mut self.back);
        let r = self.back.len() - before;
        if r > 0 {
            self.shared.inflight.fetch_add(r, Ordering::AcqRel);
        }
        self.flush_back();
        self.w.core.take_spare(2 * self.max, &mut self.spare);
        if !self.spare.is_empty() {
            let _ = self.free_out.try_push_batch(&mut self.spare);
            self.spare.clear();
        }
        self.publish_waiting(queued, k);
    }

    fn flush_back(&mut self) {
        if self.back.is_empty() {
            return;
        }
        if self.recirc_out.try_push_batch(&mut self.back).is_err() {
            let lost = self.back.len();
            self.back.clear();
            self.shared.inflight.fetch_sub(lost, Ordering::AcqRel);
            self.w.core.count_discarded(lost);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn messages_are_two_words_and_stages_are_send() {
        fn send<T: Send>() {}
        send::<IngressStage>();
        send::<EgressStage>();
        assert_eq!(std::mem::size_of::<Msg>(), 16);
        assert_eq!(ring_capacity(0), 2);
        assert_eq!(ring_capacity(16), 16);
        assert_eq!(ring_capacity(1000), 1024);
    }
}
