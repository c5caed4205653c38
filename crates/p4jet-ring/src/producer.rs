//! The producer end.

use std::sync::Arc;
use std::sync::atomic::{Ordering, fence};
use std::thread::{self, ThreadId};

use crate::shared::{PARKED, Shared, bump};
use crate::{Closed, RingConfig, StatsHandle, TrySendError};

/// The producing end of a ring. `Send`, not `Sync`: one thread at a time.
pub struct Producer<T> {
    ring: rtrb::Producer<T>,
    shared: Arc<Shared>,
    /// Items given to [`Producer::push`] and not yet committed.
    staged: Vec<T>,
    spin: u32,
    yields: u32,
    wake_at: usize,
    registered: Option<ThreadId>,
}

impl<T> Producer<T> {
    pub(crate) fn new(ring: rtrb::Producer<T>, shared: Arc<Shared>, cfg: RingConfig) -> Self {
        Producer {
            ring,
            shared,
            staged: Vec::new(),
            spin: cfg.spin,
            yields: cfg.yields,
            wake_at: cfg.producer_wake_at,
            registered: None,
        }
    }

    /// Number of slots of the ring.
    pub fn capacity(&self) -> usize {
        self.ring.buffer().capacity()
    }

    /// Free slots as last seen by this side, without touching shared memory.
    /// The true number can only be larger.
    pub fn cached_free(&self) -> usize {
        self.ring.cached_slots()
    }

    /// Free slots now (reloads the consumer's index).
    pub fn free(&self) -> usize {
        self.ring.slots()
    }

    /// Items staged by [`Producer::push`] and not yet committed.
    pub fn staged(&self) -> usize {
        self.staged.len()
    }

    /// Whether either side has closed the ring.
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }

    pub fn stats(&self) -> crate::Stats {
        self.shared.stats()
    }

    pub fn stats_handle(&self) -> StatsHandle {
        StatsHandle(Arc::clone(&self.shared))
    }

    /// Stages one item locally. Nothing is visible to the consumer (and no
    /// shared cache line is touched) until [`Producer::commit`].
    #[inline]
    pub fn push(&mut self, item: T) {
        self.staged.push(item);
    }

    /// Publishes every staged item, blocking while the ring is full. One
    /// index publication per contiguous run that fits. On `Err(Closed)` the
    /// items that could not be delivered stay staged (see
    /// [`Producer::take_staged`]).
    pub fn commit(&mut self) -> Result<(), Closed> {
        let mut staged = std::mem::take(&mut self.staged);
        let r = self.push_batch(&mut staged);
        self.staged = staged;
        r
    }

    /// Publishes as many staged items as fit without blocking; returns how
    /// many were published.
    pub fn try_commit(&mut self) -> Result<usize, Closed> {
        let mut staged = std::mem::take(&mut self.staged);
        let r = self.try_push_batch(&mut staged);
        self.staged = staged;
        r
    }

    /// Removes and returns the staged items (e.g. to count them as dropped
    /// after the consumer closed).
    pub fn take_staged(&mut self) -> Vec<T> {
        std::mem::take(&mut self.staged)
    }

    /// Moves all of `items` into the ring (front first), blocking while it
    /// is full; `items` is left empty and keeps its allocation. On
    /// `Err(Closed)` the undelivered items are left in `items`.
    pub fn push_batch(&mut self, items: &mut Vec<T>) -> Result<(), Closed> {
        loop {
            if self.shared.is_closed() {
                return Err(Closed);
            }
            self.publish_from(items);
            if items.is_empty() {
                return Ok(());
            }
            self.wait_for_space()?;
        }
    }

    /// Moves as many items from the front of `items` as fit, with a single
    /// index publication, and returns how many moved.
    pub fn try_push_batch(&mut self, items: &mut Vec<T>) -> Result<usize, Closed> {
        if self.shared.is_closed() {
            return Err(Closed);
        }
        Ok(self.publish_from(items))
    }

    /// Publishes one item (a batch of one), blocking while the ring is full.
    pub fn send(&mut self, item: T) -> Result<(), TrySendError<T>> {
        let mut item = item;
        loop {
            match self.try_send(item) {
                Err(TrySendError::Full(back)) => {
                    item = back;
                    if self.wait_for_space().is_err() {
                        return Err(TrySendError::Closed(item));
                    }
                }
                other => return other,
            }
        }
    }

    /// Publishes one item if there is room.
    pub fn try_send(&mut self, item: T) -> Result<(), TrySendError<T>> {
        if self.shared.is_closed() {
            return Err(TrySendError::Closed(item));
        }
        match self.ring.push(item) {
            Ok(()) => {
                self.published(1);
                Ok(())
            }
            Err(rtrb::PushError::Full(item)) => Err(TrySendError::Full(item)),
        }
    }

    /// Publishes what it can of the staged items without blocking, then
    /// closes the ring: the consumer drains what is there and then gets
    /// [`Closed`]. Also done on drop.
    pub fn close(&mut self) {
        if !self.staged.is_empty() {
            let _ = self.try_commit();
        }
        self.shared.closed.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self.shared.consumer.wake_any() {
            bump(&self.shared.pc.wakeups_sent, 1);
        }
    }

    /// Moves `min(items.len(), free)` items from the front of `items` into
    /// the ring with one publication. The consumer's index is reloaded only
    /// if the cached view has too little room for the whole batch.
    fn publish_from(&mut self, items: &mut Vec<T>) -> usize {
        let len = items.len();
        if len == 0 {
            return 0;
        }
        let n = if self.ring.cached_slots() >= len {
            len
        } else {
            self.ring.slots().min(len)
        };
        if n == 0 {
            return 0;
        }
        let Ok(chunk) = self.ring.write_chunk_uninit(n) else {
            return 0; // cannot happen: n <= free slots, and only we add items
        };
        let moved = chunk.fill_from_iter(items.drain(..n));
        debug_assert_eq!(moved, n);
        self.published(moved);
        moved
    }

    /// After an index publication: counters, then wake the consumer only if
    /// it declared itself parked.
    #[inline]
    fn published(&mut self, n: usize) {
        bump(&self.shared.pc.pushed, n as u64);
        bump(&self.shared.pc.commits, 1);
        // Store(tail) ; fence ; load(parked)  pairs with the consumer's
        // store(parked) ; fence ; load(tail): at least one side sees the
        // other's store, so a consumer never parks on an item it missed.
        fence(Ordering::SeqCst);
        if self.shared.consumer.wake_parked() {
            bump(&self.shared.pc.wakeups_sent, 1);
        }
    }

    /// The ring was full: cut short a consumer's nap (a full ring is worth
    /// waking for), spin a little, then park until the consumer has freed
    /// `wake_at` slots (it checks our state each time it releases).
    fn wait_for_space(&mut self) -> Result<(), Closed> {
        bump(&self.shared.pc.waits, 1);
        // Best effort (no fence needed): a missed nap wake-up costs at most
        // the rest of one nap.
        if self.shared.consumer.wake_any() {
            bump(&self.shared.pc.wakeups_sent, 1);
        }
        let want = self.wake_at;
        for i in 0..self.spin + self.yields {
            if i < self.spin {
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
            if self.ring.slots() >= want {
                return Ok(());
            }
            if self.shared.is_closed() {
                return Err(Closed);
            }
        }
        loop {
            self.shared.producer.register(&mut self.registered);
            self.shared.producer.declare(PARKED);
            fence(Ordering::SeqCst);
            // Double check after declaring ourselves parked (the consumer may
            // have released everything just before seeing the flag).
            let closed = self.shared.closed.load(Ordering::Relaxed);
            if closed || self.ring.slots() >= want {
                self.shared.producer.awake();
                return if closed { Err(Closed) } else { Ok(()) };
            }
            bump(&self.shared.pc.parks, 1);
            thread::park();
        }
    }
}

impl<T> Drop for Producer<T> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<T> std::fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("capacity", &self.capacity())
            .field("staged", &self.staged.len())
            .field("closed", &self.is_closed())
            .finish()
    }
}
