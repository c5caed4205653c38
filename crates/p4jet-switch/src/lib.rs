//! The v1model architecture as simple_switch implements it, around the p4jet engine.
//!
//! A [`Switch`] owns the control side (the `left-right` write handle of the control
//! state, the extern state, the digest queue) and a [`Worker`] that forwards packets:
//! ingress batch → after-ingress decisions (clone, digest, resubmit, multicast, drop,
//! unicast) → traffic manager queues → egress batch → after-egress decisions (clone,
//! drop, deparse, recirculate, transmit). The ordering and metadata rules are those of
//! simple_switch (see docs/v1model.md).
#![forbid(unsafe_code)]

pub mod runtime;
mod tm;
mod worker;

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use p4jet_engine::{ControlState, Engine, EngineConfig, Externs, Op, OpResult};

pub use tm::QueueConfig;
pub use worker::{Core, PortCounters, STAGES, Worker};

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
    /// Frame buffer capacity.
    pub buf_size: usize,
    /// Packets per ingress batch.
    pub batch: usize,
    /// Most resubmit/recirculate passes of one packet before it is dropped with an error.
    pub max_passes: u32,
    /// Manual clock (None = real time).
    pub manual_clock: Option<Arc<AtomicU64>>,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            drop_port: 511,
            priority_queues: 1,
            trace: false,
            buf_size: 2048,
            batch: 32,
            max_passes: 64,
            manual_clock: None,
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
    /// Every digest ever sent, in order (for tests and the CLI).
    pub history: Vec<Digest>,
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
    pub queues: Arc<Mutex<QueueConfig>>,
    /// The JSON text (served by `bm_get_config`).
    pub json: String,
    /// Runtime-API state outside the control state (ports, learning buffers, ...).
    pub rt: runtime::RuntimeState,
}

impl Switch {
    /// Loads a bmv2 JSON program.
    pub fn new(json: &str, cfg: SwitchConfig) -> Result<Switch, String> {
        let engine = Arc::new(p4jet_engine::load(
            json,
            EngineConfig {
                drop_port: cfg.drop_port,
                trace: cfg.trace,
            },
        )?);
        let fresh = engine.new_control_state()?;
        let (mut writer, reader) = left_right::new_from_empty::<ControlState, Op>(fresh.clone());
        writer.publish();
        let externs = Arc::new(engine.new_externs());
        let digests = Arc::new(Mutex::new(DigestQueue::default()));
        let clock = match &cfg.manual_clock {
            Some(c) => Clock::Manual(c.clone()),
            None => Clock::Real(Instant::now()),
        };
        let queues = Arc::new(Mutex::new(QueueConfig::new(cfg.priority_queues)));
        let readers = reader.factory();
        let worker = Worker::new(
            engine.clone(),
            readers.handle(),
            externs.clone(),
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
        })
    }

    /// A new forwarding worker over this switch's program and state (for worker threads:
    /// it reads the control state through its own wait-free handle).
    pub fn new_worker(&self) -> Worker {
        Worker::new(
            self.engine.clone(),
            self.readers.handle(),
            self.externs.clone(),
            self.digests.clone(),
            self.cfg.clone(),
            self.clock.clone(),
            self.queues.clone(),
        )
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
    /// sent.
    pub fn run_until_idle(&mut self, tx: &mut dyn FnMut(u32, &[u8])) {
        self.worker.run_until_idle(tx);
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
    #[test]
    fn workers_can_move_to_threads() {
        fn send<T: Send>() {}
        send::<super::Worker>();
    }
}
