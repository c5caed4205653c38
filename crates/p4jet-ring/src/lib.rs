//! Single-producer/single-consumer ring that joins two p4jet pipeline stages
//! (e.g. the rx+parse+ingress thread and the egress+deparse+tx thread).
//!
//! The ring storage and its two indices are [`rtrb`]'s: its chunk API already
//! keeps a *local copy* of the remote index on each side (reloaded only when
//! the local view cannot satisfy the request) and *publishes* an index once
//! per chunk, and its head and tail live on separate 128-byte lines. This
//! crate adds what rtrb does not have: a blocking layer with **wake-up
//! suppression**, batch-oriented entry points, close/shutdown, and counters.
//! It contains no `unsafe` code. See `docs/ring.md` for the design, the
//! protocol and measurements.
//!
//! # API
//!
//! ```text
//! let (mut tx, mut rx) = p4jet_ring::ring::<T>(1024)?;     // power of two
//! // or RingConfig::new(1024).spin(..).yields(..).sleep(..).producer_wake_at(..).build()
//!
//! // producer                                  // consumer
//! tx.push(item);          // stage locally     rx.pop_batch(&mut out, max)?  // block for >= 1
//! tx.commit()?;           // publish, block    rx.try_pop_batch(&mut out, max)?
//! tx.push_batch(&mut v)?; // drain v, block    rx.pop_batch_timeout(&mut out, max, d)?
//! tx.try_push_batch(&mut v)?  // what fits     rx.pop_with(max, |item| ..)?  // no Vec
//! tx.send(item)? / tx.try_send(item)           rx.pop()? / rx.try_pop()
//! tx.close();  (also on drop)                  rx.close();  (also on drop)
//! tx.stats() / rx.stats() / tx.stats_handle()  -> Stats { .., wakeups() }
//! ```
//!
//! Every call that moves `k` items publishes the index once (one release
//! store), then runs the wake-up check once (a SeqCst fence and a load of
//! the other side's state). A consumer that finds the ring empty spins,
//! yields, naps (a short timed park, declared `NAPPING`), then parks
//! (declared `PARKED`); the producer unparks it after a publication only if
//! it declared itself `PARKED`, and cuts a nap short only when the ring is
//! full. A producer that finds the ring full spins, yields, then parks until
//! the consumer has freed `producer_wake_at` slots (half the ring by
//! default); the consumer checks for that on each release. Wake-ups in both
//! directions are counted in [`Stats`].
//!
//! The handles are `Send` but not `Sync`; each is used by one thread at a
//! time (it may move between threads).
#![forbid(unsafe_code)]

mod consumer;
mod producer;
mod shared;

use std::sync::Arc;
use std::time::Duration;

pub use consumer::Consumer;
pub use producer::Producer;

/// Why a ring could not be created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    #[error("ring capacity {0} is not a power of two (>= 1)")]
    NotPowerOfTwo(usize),
    #[error("producer wake threshold {wake_at} must be in 1..={capacity}")]
    BadWakeThreshold { wake_at: usize, capacity: usize },
}

/// The other side closed the ring (or was dropped). For a consumer this is
/// only reported once the ring is also empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("ring closed")]
pub struct Closed;

/// Error of [`Producer::try_send`]; gives the item back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrySendError<T> {
    #[error("ring full")]
    Full(T),
    #[error("ring closed")]
    Closed(T),
}

/// Error of [`Consumer::try_pop`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TryPopError {
    #[error("ring empty")]
    Empty,
    #[error("ring closed")]
    Closed,
}

/// Counters of one ring, both sides. All are cumulative.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Items published by the producer.
    pub pushed: u64,
    /// Index publications by the producer (one per batch).
    pub commits: u64,
    /// Times the producer found the ring full and had to wait.
    pub producer_waits: u64,
    /// Times the producer actually parked (blocked in the kernel).
    pub producer_parks: u64,
    /// Unparks sent by the producer to a parked consumer (incl. on close).
    pub consumer_wakeups: u64,
    /// Items taken by the consumer.
    pub popped: u64,
    /// Index publications by the consumer (one per batch).
    pub releases: u64,
    /// Times the consumer found the ring empty and had to wait.
    pub consumer_waits: u64,
    /// Short sleeps taken by a waiting consumer before parking.
    pub consumer_sleeps: u64,
    /// Times the consumer actually parked.
    pub consumer_parks: u64,
    /// Unparks sent by the consumer to a parked producer (incl. on close).
    pub producer_wakeups: u64,
}

impl Stats {
    /// Wake-ups sent in both directions.
    pub fn wakeups(&self) -> u64 {
        self.consumer_wakeups + self.producer_wakeups
    }
}

/// A handle that reads a ring's [`Stats`] from any thread (e.g. the CLI).
#[derive(Clone)]
pub struct StatsHandle(Arc<shared::Shared>);

impl StatsHandle {
    pub fn stats(&self) -> Stats {
        self.0.stats()
    }
    /// Whether either side has closed the ring.
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

impl std::fmt::Debug for StatsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StatsHandle").field(&self.stats()).finish()
    }
}

/// Ring parameters. `capacity` must be a power of two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingConfig {
    pub capacity: usize,
    /// Polls (each followed by a CPU spin hint) before a waiting side sleeps
    /// or parks.
    pub spin: u32,
    /// Polls after the spin, each preceded by `sched_yield` (lets the other
    /// side run if it shares our core, as on an oversubscribed machine).
    pub yields: u32,
    /// Short sleeps a waiting consumer takes after spinning and before it
    /// parks. While it sleeps the producer does not have to wake it, and the
    /// items that arrive meanwhile are taken as one batch.
    pub sleeps: u32,
    /// Length of each short sleep (the kernel adds its timer slack, 50 µs by
    /// default on Linux, to every sleep).
    pub sleep: Duration,
    /// A producer that found the ring full asks to be woken once this many
    /// slots are free (hysteresis). Default: half the capacity (at least 1).
    pub producer_wake_at: usize,
}

impl RingConfig {
    /// Defaults: spin 128 polls, then 4 yielding polls, one 20 µs nap, wake
    /// the producer at half.
    pub fn new(capacity: usize) -> Self {
        RingConfig {
            capacity,
            spin: 128,
            yields: 4,
            sleeps: 1,
            sleep: Duration::from_micros(20),
            producer_wake_at: (capacity / 2).max(1),
        }
    }
    pub fn spin(mut self, polls: u32) -> Self {
        self.spin = polls;
        self
    }
    pub fn yields(mut self, polls: u32) -> Self {
        self.yields = polls;
        self
    }
    pub fn sleep(mut self, sleeps: u32, each: Duration) -> Self {
        self.sleeps = sleeps;
        self.sleep = each;
        self
    }
    pub fn producer_wake_at(mut self, free_slots: usize) -> Self {
        self.producer_wake_at = free_slots;
        self
    }

    /// Creates the ring.
    pub fn build<T>(self) -> Result<(Producer<T>, Consumer<T>), RingError> {
        if !self.capacity.is_power_of_two() {
            return Err(RingError::NotPowerOfTwo(self.capacity));
        }
        if self.producer_wake_at == 0 || self.producer_wake_at > self.capacity {
            return Err(RingError::BadWakeThreshold {
                wake_at: self.producer_wake_at,
                capacity: self.capacity,
            });
        }
        let (p, c) = rtrb::RingBuffer::new(self.capacity);
        let shared = Arc::new(shared::Shared::new());
        Ok((
            Producer::new(p, Arc::clone(&shared), self),
            Consumer::new(c, shared, self),
        ))
    }
}

/// Creates a ring of `capacity` (a power of two) slots with default tuning.
pub fn ring<T>(capacity: usize) -> Result<(Producer<T>, Consumer<T>), RingError> {
    RingConfig::new(capacity).build()
}
