//! State shared by the two ends of a ring, apart from the ring itself
//! (which `rtrb` owns): the two "I am parked" flags, the close flag, the
//! thread handles used to unpark, and the statistics counters.
//!
//! Every group that one side writes and the other reads sits on its own
//! cache line (`CachePadded`, 128 bytes on x86-64), so a producer that bumps
//! its counters never invalidates the line the consumer polls, and so on.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::{self, Thread, ThreadId};

use crossbeam_utils::CachePadded;

use crate::Stats;

/// Counters written only by the producer (single writer: plain load+store).
#[derive(Default)]
pub(crate) struct ProducerCounters {
    pub pushed: AtomicU64,
    pub commits: AtomicU64,
    pub waits: AtomicU64,
    pub parks: AtomicU64,
    pub wakeups_sent: AtomicU64,
}

/// Counters written only by the consumer.
#[derive(Default)]
pub(crate) struct ConsumerCounters {
    pub popped: AtomicU64,
    pub releases: AtomicU64,
    pub waits: AtomicU64,
    pub sleeps: AtomicU64,
    pub parks: AtomicU64,
    pub wakeups_sent: AtomicU64,
}

/// Adds `n` to a counter that only the calling thread writes. A relaxed load
/// and store instead of `fetch_add`: no locked instruction on the fast path.
#[inline]
pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// Owner is running (or spinning): nobody needs to wake it.
pub(crate) const AWAKE: u8 = 0;
/// Owner (the consumer) is in a short timed sleep: wake it only if the ring
/// is full; otherwise its timer will.
pub(crate) const NAPPING: u8 = 1;
/// Owner is parked without timeout: wake it when its condition holds.
pub(crate) const PARKED: u8 = 2;

/// One side's sleep state (the flag the other side checks after each
/// publication) plus the thread to unpark.
#[derive(Default)]
pub(crate) struct Parker {
    /// `AWAKE`, `NAPPING` or `PARKED`. Set by the owner right before it
    /// sleeps; reset to `AWAKE` by whoever wakes it (with an atomic
    /// exchange, so exactly one waker unparks) or by the owner itself.
    pub state: CachePadded<AtomicU8>,
    /// Slow path only: written when the owner sleeps from a thread it has
    /// not slept on before, read by a waker that won the exchange.
    thread: Mutex<Option<Thread>>,
}

fn lock(m: &Mutex<Option<Thread>>) -> MutexGuard<'_, Option<Thread>> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Parker {
    /// Records the calling thread as the one to unpark (once per thread).
    pub fn register(&self, known: &mut Option<ThreadId>) {
        let me = thread::current();
        if *known != Some(me.id()) {
            *known = Some(me.id());
            *lock(&self.thread) = Some(me);
        }
    }

    /// Declares the owner asleep in `state` (then the caller fences and
    /// re-checks its condition).
    #[inline]
    pub fn declare(&self, state: u8) {
        self.state.store(state, Ordering::Relaxed);
    }

    /// The owner is running again.
    #[inline]
    pub fn awake(&self) {
        self.state.store(AWAKE, Ordering::Relaxed);
    }

    /// Wakes the owner if (and only if) it declared itself `PARKED`.
    /// Returns whether an unpark was sent. The caller has issued a SeqCst
    /// fence between publishing its index and calling this.
    #[inline]
    pub fn wake_parked(&self) -> bool {
        self.state.load(Ordering::Relaxed) == PARKED
            && self
                .state
                .compare_exchange(PARKED, AWAKE, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            && self.unpark()
    }

    /// Wakes the owner if it declared itself `NAPPING` or `PARKED`.
    #[inline]
    pub fn wake_any(&self) -> bool {
        self.state.load(Ordering::Relaxed) != AWAKE
            && self.state.swap(AWAKE, Ordering::AcqRel) != AWAKE
            && self.unpark()
    }

    fn unpark(&self) -> bool {
        if let Some(t) = lock(&self.thread).as_ref() {
            t.unpark();
        }
        true
    }
}

pub(crate) struct Shared {
    pub consumer: Parker,
    pub producer: Parker,
    pub closed: CachePadded<AtomicBool>,
    pub pc: CachePadded<ProducerCounters>,
    pub cc: CachePadded<ConsumerCounters>,
}

impl Shared {
    pub fn new() -> Self {
        Shared {
            consumer: Parker::default(),
            producer: Parker::default(),
            closed: CachePadded::new(AtomicBool::new(false)),
            pc: CachePadded::new(ProducerCounters::default()),
            cc: CachePadded::new(ConsumerCounters::default()),
        }
    }

    #[inline]
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub fn stats(&self) -> Stats {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            pushed: r(&self.pc.pushed),
            commits: r(&self.pc.commits),
            producer_waits: r(&self.pc.waits),
            producer_parks: r(&self.pc.parks),
            consumer_wakeups: r(&self.pc.wakeups_sent),
            popped: r(&self.cc.popped),
            releases: r(&self.cc.releases),
            consumer_waits: r(&self.cc.waits),
            consumer_sleeps: r(&self.cc.sleeps),
            consumer_parks: r(&self.cc.parks),
            producer_wakeups: r(&self.cc.wakeups_sent),
        }
    }
}
