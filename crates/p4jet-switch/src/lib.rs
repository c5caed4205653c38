//! The v1model architecture as simple_switch implements it, around the p4jet engine.
//!
//! A [`Switch`] owns the control side (the `left-right` write handle of the control
//! state, the extern state, the digest queue) and a [`Worker`] that forwards packets:
//! ingress batch → after-ingress decisions (clone, digest, resubmit, multicast, drop,
//! unicast) → traffic manager queues → egress batch → after-egress decisions (clone,
//! drop, deparse, recirculate, transmit). The ordering and metadata rules are those of
//! simple_switch (see docs/v1model.md).
//!
//! Configuration swap (`bm_load_new_config` + `bm_swap_configs`, simple_switch's
//! `--enable-swap`): the runtime API works on the *loaded* program as soon as it is
//! loaded (as bmv2's `p4objects_rt`), while workers keep forwarding with the program
//! they run. A swap publishes the loaded program in the switch's [`Dataplane`] and bumps
//! its generation; every worker compares that generation once per step (one atomic load)
//! and, when it changed, finishes the packets already inside its pipeline with the old
//! program, then moves to the new one. A swap therefore takes effect between packets.
#![forbid(unsafe_code)]

pub mod accounting;
pub mod latency;
pub mod pipeline;
pub mod runtime;
mod tm;
mod worker;

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use p4jet_engine::{ControlState, Engine, EngineConfig, EngineKind, Externs, Op, OpResult};
use p4jet_runtime::Schema;

pub use accounting::{
    Accounts, Balance, Board, DROP_REASONS, DropReason, PortCounters, ThreadBooks,
};
pub use latency::{LatencyHist, Stamps};
pub use pipeline::{EgressStage, IngressStage};
pub use tm::{QueueConfig, QueueGuard, QueuesPoisoned, SharedQueues};
pub use worker::{Core, STAGES, Worker};

/// Where time comes from.
#[derive(Debug, Clone)]
pub enum Clock {
    /// Microseconds since the switch started.
    Real(Instant),
    /// A clock the caller sets (tests hold it still).
    Manual(Arc<AtomicU64>),
}

impl Clock {
    /// Now, in microseconds since start.
    #[inline]
    pub fn now_us(&self) -> u64 {
        match self {
            Clock::Real(t) => t.elapsed().as_micros() as u64,
            Clock::Manual(v) => v.load(Ordering::Relaxed),
        }
    }

    /// The instant `at` (read by the caller from the real clock), in microseconds since
    /// start; a manual clock gives its own time.
    #[inline]
    pub fn us_at(&self, at: Instant) -> u64 {
        match self {
            Clock::Real(t) => at.saturating_duration_since(*t).as_micros() as u64,
            Clock::Manual(v) => v.load(Ordering::Relaxed),
        }
    }

    /// Now, in nanoseconds since start (a manual clock counts whole microseconds).
    #[inline]
    pub fn now_ns(&self) -> u64 {
        match self {
            Clock::Real(t) => t.elapsed().as_nanos() as u64,
            Clock::Manual(v) => v.load(Ordering::Relaxed).saturating_mul(1000),
        }
    }

    /// Whether the caller sets the time (see [`Clock::Manual`]).
    pub fn is_manual(&self) -> bool {
        matches!(self, Clock::Manual(_))
    }

    /// Moves a manual clock forward to `us` (never back); a real clock is left alone.
    pub fn advance_to(&self, us: u64) {
        if let Clock::Manual(v) = self {
            v.fetch_max(us, Ordering::Relaxed);
        }
    }
}

/// Switch options (simple_switch flags).
#[derive(Debug, Clone)]
pub struct SwitchConfig {
    /// `--drop-port`
    pub drop_port: u32,
    /// `--priority-queues`
    pub priority_queues: u32,
    /// Per-packet trace.
    pub trace: bool,
    /// `--dump-packet-data N`: with the trace on, the first N bytes of every frame
    /// received from and sent to a port, in hex, in `[I]` lines as simple_switch
    /// writes them.
    pub dump_packet_data: usize,
    /// Frame buffer capacity.
    pub buf_size: usize,
    /// Packets per ingress batch.
    pub batch: usize,
    /// Keys per stage of a batched table lookup (the tables clamp it to 1..=64).
    pub sub_batch: usize,
    /// Most resubmit/recirculate passes of one packet before it is dropped with an error.
    pub max_passes: u32,
    /// Manual clock (None = real time).
    pub manual_clock: Option<Arc<AtomicU64>>,
    /// simple_switch's `--enable-swap`: allow `bm_load_new_config` / `bm_swap_configs`.
    pub enable_swap: bool,
    /// Which engine runs the program (`--engine`; by default `jit` where Cranelift
    /// generates code for the host, else `interp`).
    pub engine: EngineKind,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            drop_port: 511,
            priority_queues: 1,
            trace: false,
            dump_packet_data: 0,
            buf_size: 2048,
            batch: 32,
            sub_batch: p4jet_engine::DEFAULT_SUB_BATCH,
            max_passes: 64,
            manual_clock: None,
            enable_swap: false,
            engine: if p4jet_jit::supported() {
                EngineKind::Jit
            } else {
                EngineKind::Interp
            },
        }
    }
}

/// Why a configuration load or swap was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwapError {
    /// The JSON does not load (the reason).
    Load(String),
    /// A loaded program already waits for its swap.
    Ongoing,
    /// No program was loaded.
    NoneLoaded,
}

impl std::fmt::Display for SwapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SwapError::Load(e) => write!(f, "the new configuration does not load: {e}"),
            SwapError::Ongoing => f.write_str("a loaded configuration waits for its swap"),
            SwapError::NoneLoaded => f.write_str("no configuration was loaded"),
        }
    }
}

/// One learning digest message (one sample per call to digest()).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    /// Learn list id.
    pub list_id: u32,
    /// Learn list name.
    pub name: String,
    /// The sample: each field big-endian, byte-padded, concatenated.
    pub sample: Vec<u8>,
}

/// Digest queue with bmv2's learning filter (a sample is sent once until acknowledged).
#[derive(Debug, Default)]
pub struct DigestQueue {
    /// Samples waiting to be read.
    pub pending: VecDeque<Digest>,
    /// Samples sent and not yet acknowledged, per list.
    pub filter: BTreeSet<(u32, Vec<u8>)>,
    /// The latest [`DIGEST_HISTORY_CAPACITY`] digests sent, in order (for `p4jet stf`'s
    /// `expect_digest` and tests; bounded so that a long run does not grow it).
    pub history: VecDeque<Digest>,
}

/// Most digests [`DigestQueue::history`] keeps.
pub const DIGEST_HISTORY_CAPACITY: usize = 4096;

/// One program as the data plane runs it.
pub(crate) struct Active {
    /// The [`Dataplane`] generation that published it.
    pub(crate) generation: u64,
    pub(crate) engine: Arc<Engine>,
    pub(crate) externs: Arc<Externs>,
    pub(crate) readers: left_right::ReadHandleFactory<ControlState>,
    /// Once replaced by a swap: the control-state writer of this program, kept alive
    /// until the last worker that still runs it has moved on (dropping a writer makes
    /// its readers see no state).
    retired_writer: Mutex<Option<left_right::WriteHandle<ControlState, Op>>>,
}

/// The program the workers run, shared by the switch and all its workers.
pub struct Dataplane {
    generation: AtomicU64,
    current: Mutex<Arc<Active>>,
}

impl Dataplane {
    fn new(active: Active) -> Dataplane {
        Dataplane {
            generation: AtomicU64::new(active.generation),
            current: Mutex::new(Arc::new(active)),
        }
    }

    /// Number of configuration swaps so far.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The program workers run now.
    pub(crate) fn current(&self) -> Arc<Active> {
        match self.current.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }
}

/// The switch: program, state and a worker.
pub struct Switch {
    /// The loaded program.
    pub engine: Arc<Engine>,
    /// Data-plane-written state.
    pub externs: Arc<Externs>,
    /// Control state writer.
    writer: left_right::WriteHandle<ControlState, Op>,
    /// Factory for worker read handles.
    pub readers: left_right::ReadHandleFactory<ControlState>,
    /// State right after loading (for reset).
    fresh: ControlState,
    /// Digests.
    pub digests: Arc<Mutex<DigestQueue>>,
    /// Options.
    pub cfg: SwitchConfig,
    /// Clock.
    pub clock: Clock,
    /// The forwarding worker of single-threaded runs.
    pub worker: Worker,
    /// Queue configuration shared with workers.
    pub queues: Arc<tm::SharedQueues>,
    /// The JSON text (served by `bm_get_config`).
    pub json: String,
    /// Runtime-API state outside the control state (ports, learning buffers, ...).
    pub rt: runtime::RuntimeState,
    /// What the workers run (differs from the fields above between
    /// `bm_load_new_config` and `bm_swap_configs`).
    pub dataplane: Arc<Dataplane>,
    /// Between a load and a swap: the control-state writer of the program the workers
    /// still run.
    swap_pending: Option<left_right::WriteHandle<ControlState, Op>>,
    /// The model of the program the runtime addresses (None: no program set; the
    /// data plane then runs [`runtime::NO_PROGRAM_JSON`]).
    pub(crate) schema: Option<Arc<Schema>>,
    /// P4Runtime's cookie of the program.
    pub(crate) cookie: Option<u64>,
    /// "table NAME" of every table of the program the runtime addresses (for
    /// messages; built once per program, keyed by the program's address).
    pub(crate) table_whats: Mutex<(usize, Vec<Arc<str>>)>,
    /// The books of the forwarding threads of `p4jet run` (empty otherwise: the
    /// books are then those of [`Switch::worker`]).
    pub board: Arc<accounting::Board>,
}

impl Switch {
    /// The packet books as JSON: `{"total": {..}, "latency": {..}, "threads": [{"name",
    /// "busy_polls", "idle_polls", "books": {..}, "latency": {..}}]}`, each books object
    /// as [`Balance::to_json`], each latency object `{"packets", "mean_us", "p50_us",
    /// "p99_us", "p999_us", "max_us"}` (injection to transmission, since the thread
    /// started).
    pub fn books_json(&self) -> serde_json::Value {
        let lat = |h: &LatencyHist| {
            let us = |ns: f64| (ns / 10.0).round() / 100.0;
            serde_json::json!({
                "packets": h.count(),
                "mean_us": us(h.mean_ns()),
                "p50_us": us(h.quantile_ns(0.5) as f64),
                "p99_us": us(h.quantile_ns(0.99) as f64),
                "p999_us": us(h.quantile_ns(0.999) as f64),
                "max_us": us(h.max_ns() as f64),
            })
        };
        let threads: Vec<serde_json::Value> = self
            .board
            .snapshot()
            .iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.name,
                    "busy_polls": t.busy_polls,
                    "idle_polls": t.idle_polls,
                    "books": t.balance.to_json(),
                    "latency": lat(&t.latency),
                })
            })
            .collect();
        let tables: serde_json::Map<String, serde_json::Value> = self
            .board
            .tables()
            .into_iter()
            .map(|(name, s)| {
                (
                    name,
                    serde_json::json!({"lookups": s.lookups, "hits": s.hits}),
                )
            })
            .collect();
        serde_json::json!({
            "total": self.balance().to_json(),
            "latency": lat(&self.board.latency()),
            "tables": tables,
            "threads": threads,
        })
    }

    /// The switch's packet books: those of the forwarding threads when `p4jet run`
    /// runs them, else those of [`Switch::worker`].
    pub fn balance(&self) -> Balance {
        self.board
            .total()
            .unwrap_or_else(|| self.worker.core.balance())
    }

    /// Loads a bmv2 JSON program.
    pub fn new(json: &str, cfg: SwitchConfig) -> Result<Switch, String> {
        let (engine, fresh, writer, readers, externs) = Self::load(json, &cfg)?;
        let schema = Some(Arc::new(Schema::from_program(&engine.prog)));
        let digests = Arc::new(Mutex::new(DigestQueue::default()));
        let clock = match &cfg.manual_clock {
            Some(c) => Clock::Manual(c.clone()),
            None => Clock::Real(Instant::now()),
        };
        let queues = Arc::new(tm::SharedQueues::new(QueueConfig::new(cfg.priority_queues)));
        let dataplane = Arc::new(Dataplane::new(Active {
            generation: 0,
            engine: engine.clone(),
            externs: externs.clone(),
            readers: readers.clone(),
            retired_writer: Mutex::new(None),
        }));
        let worker = Worker::new(
            dataplane.clone(),
            digests.clone(),
            cfg.clone(),
            clock.clone(),
            queues.clone(),
        );
        Ok(Switch {
            engine,
            externs,
            writer,
            readers,
            fresh,
            digests,
            cfg,
            clock,
            worker,
            queues,
            json: json.to_string(),
            rt: runtime::RuntimeState::default(),
            schema,
            cookie: None,
            table_whats: Mutex::new((0, Vec::new())),
            board: Arc::default(),
            dataplane,
            swap_pending: None,
        })
    }

    /// Lowers a program and creates its state.
    #[allow(clippy::type_complexity)]
    fn load(
        json: &str,
        cfg: &SwitchConfig,
    ) -> Result<
        (
            Arc<Engine>,
            ControlState,
            left_right::WriteHandle<ControlState, Op>,
            left_right::ReadHandleFactory<ControlState>,
            Arc<Externs>,
        ),
        String,
    > {
        let mut engine = p4jet_engine::load(
            json,
            EngineConfig {
                drop_port: cfg.drop_port,
                trace: cfg.trace,
                sub_batch: cfg.sub_batch,
                engine: cfg.engine,
            },
        )?;
        if cfg.engine == EngineKind::Jit {
            // compiled here, on the thread that loads the program (a swap's control
            // thread), never on a forwarding thread; should Cranelift refuse the
            // program, the fused plan is interpreted
            match p4jet_jit::attach(&mut engine) {
                Ok(stats) => tracing::debug!(
                    "compiled to {} bytes of native code in {:?}",
                    stats.code_bytes,
                    stats.compile_time
                ),
                Err(e) => tracing::warn!("not compiled ({e}): the plan is interpreted"),
            }
        }
        let engine = Arc::new(engine);
        let fresh = engine.new_control_state()?;
        let (mut writer, reader) = left_right::new_from_empty::<ControlState, Op>(fresh.clone());
        writer.publish();
        let externs = Arc::new(engine.new_externs());
        let readers = reader.factory();
        Ok((engine, fresh, writer, readers, externs))
    }

    /// A new forwarding worker over the program the data plane runs (for worker
    /// threads: it reads the control state through its own wait-free handle and follows
    /// configuration swaps).
    pub fn new_worker(&self) -> Worker {
        Worker::new(
            self.dataplane.clone(),
            self.digests.clone(),
            self.cfg.clone(),
            self.clock.clone(),
            self.queues.clone(),
        )
    }

    /// Loads a new program for a later [`Switch::swap_configs`]: from now on the
    /// runtime API (and the fields of this struct) refer to it, while workers keep
    /// running the current one. Its tables and externs start empty; multicast groups
    /// and mirroring sessions are copied from the current state. Fails if the JSON does not load or a loaded program
    /// is already waiting for its swap.
    pub fn load_new_config(&mut self, json: &str) -> Result<(), SwapError> {
        if self.swap_pending.is_some() {
            return Err(SwapError::Ongoing);
        }
        self.install(json)
    }

    /// Loads a program in place of the one the runtime addresses, for a swap: a saved
    /// program waiting for its swap is dropped (the data plane never ran it).
    pub(crate) fn install(&mut self, json: &str) -> Result<(), SwapError> {
        let (engine, fresh, writer, readers, externs) =
            Self::load(json, &self.cfg).map_err(SwapError::Load)?;
        // multicast groups and mirroring sessions belong to simple_switch, not to the
        // program: they carry over
        let kept = self.with_state(|cs| (cs.pre.clone(), cs.mirror.clone()));
        let old = std::mem::replace(&mut self.writer, writer);
        if self.swap_pending.is_none() {
            self.swap_pending = Some(old);
        }
        if let Some((pre, mirror)) = kept {
            let mut ops = vec![Op::SetPre(pre)];
            for (id, session) in mirror {
                ops.push(Op::SetMirror {
                    id,
                    session: Some(session),
                });
            }
            self.apply_many(ops);
        }
        self.schema = Some(Arc::new(Schema::from_program(&engine.prog)));
        self.engine = engine;
        self.fresh = fresh;
        self.readers = readers;
        self.externs = externs;
        self.json = json.to_string();
        self.rt.program_changed();
        Ok(())
    }

    /// Whether a program loaded by [`Switch::load_new_config`] waits for its swap.
    pub fn swap_pending(&self) -> bool {
        self.swap_pending.is_some()
    }

    /// Makes the workers run the program loaded by [`Switch::load_new_config`]: each
    /// moves to it before its next batch, after finishing the packets already inside
    /// its pipeline.
    pub fn swap_configs(&mut self) -> Result<(), SwapError> {
        let old_writer = self.swap_pending.take().ok_or(SwapError::NoneLoaded)?;
        let mut cur = match self.dataplane.current.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        match cur.retired_writer.lock() {
            Ok(mut w) => *w = Some(old_writer),
            Err(p) => *p.into_inner() = Some(old_writer),
        }
        let generation = cur.generation + 1;
        *cur = Arc::new(Active {
            generation,
            engine: self.engine.clone(),
            externs: self.externs.clone(),
            readers: self.readers.clone(),
            retired_writer: Mutex::new(None),
        });
        self.dataplane
            .generation
            .store(generation, Ordering::Release);
        Ok(())
    }

    /// Applies one control-plane write and publishes it; returns its result.
    pub fn apply(&mut self, op: Op) -> OpResult {
        self.writer.append(op);
        self.writer.publish();
        self.writer
            .enter()
            .map(|s| s.last.clone())
            .unwrap_or(OpResult::Err("switch state gone".into()))
    }

    /// Applies several writes and publishes once (results are not reported).
    pub fn apply_many(&mut self, ops: impl IntoIterator<Item = Op>) {
        for op in ops {
            self.writer.append(op);
        }
        self.writer.publish();
    }

    /// Adds table entries with one publish ([`Op::AddEntries`]); returns one result
    /// per entry.
    pub fn apply_entries(
        &mut self,
        entries: Vec<p4jet_engine::state::NewEntry>,
    ) -> Vec<Result<p4jet_tables::EntryHandle, p4jet_tables::TableError>> {
        let n = entries.len();
        self.writer.append(Op::AddEntries(entries));
        self.writer.publish();
        self.writer
            .enter()
            .map(|s| s.added.clone())
            .filter(|a| a.len() == n)
            .unwrap_or_else(|| {
                vec![
                    Err(p4jet_tables::TableError::InvalidSpec(
                        "switch state gone".into()
                    ));
                    n
                ]
            })
    }

    /// Reads the current control state.
    pub fn with_state<R>(&self, f: impl FnOnce(&ControlState) -> R) -> Option<R> {
        self.writer.enter().map(|g| f(&g))
    }

    /// Resets tables, PRE, mirroring and externs to their state after loading.
    pub fn reset_state(&mut self) {
        let fresh = Box::new(self.fresh.clone());
        self.apply(Op::Reset(fresh));
        self.externs.reset();
        if let Ok(mut d) = self.digests.lock() {
            *d = DigestQueue::default();
        }
    }

    /// Queues a frame received on `port` for ingress.
    pub fn inject(&mut self, port: u32, frame: &[u8]) {
        self.worker.inject(port, frame);
    }

    /// Processes everything queued until the switch is idle; calls `tx` for each frame
    /// sent. Packets of rate-limited queues are waited for with a real clock; with a
    /// manual clock they stay queued until it reaches their departure time (see
    /// [`Worker::run_until_idle`] and [`Switch::next_due_us`]).
    pub fn run_until_idle(&mut self, tx: &mut dyn FnMut(u32, &[u8])) {
        self.worker.run_until_idle(tx);
    }

    /// When the next packet waiting in a rate-limited queue of the switch's worker may
    /// leave (µs of the switch clock, rounded up); None when none waits.
    pub fn next_due_us(&self) -> Option<u64> {
        self.worker.next_due_us()
    }

    /// Acknowledges all digest samples (clears the learning filter).
    pub fn ack_digests(&mut self) {
        if let Ok(mut d) = self.digests.lock() {
            d.filter.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use p4jet_runtime::bmv2::{Bmv2Code, SwapOperationErrorCode as SC};
    use p4jet_runtime::{
        ActionCall, CloneSession, EntryAction, FieldMatch, MatchKey, NewEntry, PipelineAction,
        PipelineConfig, Runtime, Update, WriteMode,
    };

    #[test]
    fn workers_can_move_to_threads() {
        fn send<T: Send>() {}
        send::<super::Worker>();
        send::<super::Switch>();
    }

    fn basic_l2() -> String {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/corpus/basic_l2/basic_l2.json"
        );
        std::fs::read_to_string(p).unwrap()
    }

    fn frame(dst: u8) -> Vec<u8> {
        let mut f = vec![0, 0, 0, 0, 0, dst, 0, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[0xab; 50]);
        f
    }

    fn forward(w: &mut Worker, dst: u8) -> Vec<u32> {
        let mut out = vec![];
        w.inject(0, &frame(dst));
        w.run_until_idle(&mut |p, _| out.push(p));
        out
    }

    /// `table_add dmac forward 00:00:00:00:00:<dst> => <port>` on the program the
    /// runtime addresses.
    fn add_dmac(sw: &mut Switch, dst: u8, port: u8) {
        let s = Runtime::schema(sw).unwrap();
        let t = s.table_by_name("IngressImpl.dmac").unwrap();
        let a = s.action_by_name("IngressImpl.forward").unwrap();
        Runtime::apply(
            sw,
            Update::AddEntry {
                table: t,
                entry: NewEntry::new(
                    MatchKey::new(vec![FieldMatch::Exact(vec![0, 0, 0, 0, 0, dst])]),
                    EntryAction::Direct(ActionCall::new(a, vec![vec![0, port]])),
                ),
            },
        )
        .unwrap();
    }

    fn dmac_entries(sw: &mut Switch) -> usize {
        let t = Runtime::schema(sw)
            .unwrap()
            .table_by_name("IngressImpl.dmac")
            .unwrap();
        sw.entry_count(t).unwrap()
    }

    fn swap_code(r: Result<(), p4jet_runtime::RuntimeError>) -> Option<Bmv2Code> {
        r.unwrap_err().bmv2
    }

    #[test]
    fn swap_takes_effect_between_packets_for_every_worker() {
        let json = basic_l2();
        let cfg = SwitchConfig {
            enable_swap: true,
            ..SwitchConfig::default()
        };
        let mut sw = Switch::new(&json, cfg).unwrap();
        add_dmac(&mut sw, 0x10, 1);
        let mut w = sw.new_worker();
        assert_eq!(forward(&mut w, 0x10), vec![1]);
        // saved, not committed: the runtime sees the new (empty) program, the
        // workers still run the old one; clone sessions belong to the switch
        Runtime::apply(
            &mut sw,
            Update::WriteCloneSession {
                mode: WriteMode::Upsert,
                session: CloneSession::to_port(3, 1),
            },
        )
        .unwrap();
        let save = || PipelineAction::Save(PipelineConfig::new(basic_l2()));
        sw.set_pipeline(save()).unwrap();
        assert_eq!(dmac_entries(&mut sw), 0);
        assert!(sw.clone_session(3).is_ok());
        assert_eq!(
            swap_code(sw.set_pipeline(save())),
            Some(Bmv2Code::Swap(SC::ONGOING_SWAP))
        );
        add_dmac(&mut sw, 0x10, 2);
        assert_eq!(forward(&mut w, 0x10), vec![1]);
        // a packet received before the commit but not yet processed uses the new program
        w.inject(0, &frame(0x10));
        sw.set_pipeline(PipelineAction::Commit).unwrap();
        let mut out = vec![];
        w.run_until_idle(&mut |p, _| out.push(p));
        assert_eq!(out, vec![2]);
        assert_eq!(w.generation(), 1);
        assert_eq!(forward(&mut sw.worker, 0x10), vec![2]);
        assert_eq!(
            swap_code(sw.set_pipeline(PipelineAction::Commit)),
            Some(Bmv2Code::Swap(SC::NO_ONGOING_SWAP))
        );
        // a JSON that does not load changes nothing
        let bad = PipelineAction::Save(PipelineConfig::new("{\"not\": \"a program\""));
        assert_eq!(
            swap_code(sw.set_pipeline(bad)),
            Some(Bmv2Code::Swap(SC::NO_ONGOING_SWAP))
        );
        assert_eq!(dmac_entries(&mut sw), 1);
        assert_eq!(forward(&mut w, 0x10), vec![2]);
    }
}
