//! The consumer end.

use std::sync::Arc;
use std::sync::atomic::{Ordering, fence};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use crate::shared::{NAPPING, PARKED, Shared, bump};
use crate::{Closed, RingConfig, StatsHandle, TryPopError};

/// The consuming end of a ring. `Send`, not `Sync`: one thread at a time.
pub struct Consumer<T> {
    ring: rtrb::Consumer<T>,
    shared: Arc<Shared>,
    capacity: usize,
    spin: u32,
    yields: u32,
    sleeps: u32,
    sleep: Duration,
    wake_at: usize,
    registered: Option<ThreadId>,
}

/// How a wait for items ended.
enum Waited {
    Ready(usize),
    Closed,
    Timeout,
}

impl<T> Consumer<T> {
    pub(crate) fn new(ring: rtrb::Consumer<T>, shared: Arc<Shared>, cfg: RingConfig) -> Self {
        Consumer {
            ring,
            shared,
            capacity: cfg.capacity,
            spin: cfg.spin,
            yields: cfg.yields,
            sleeps: cfg.sleeps,
            sleep: cfg.sleep,
            wake_at: cfg.producer_wake_at,
            registered: None,
        }
    }

    /// Number of slots of the ring.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Items available as last seen by this side (no shared access). The
    /// true number can only be larger.
    pub fn cached_len(&self) -> usize {
        self.ring.cached_slots()
    }

    /// Items available now (reloads the producer's index).
    pub fn len(&self) -> usize {
        self.ring.slots()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    /// Items that can be taken now without waiting: the cached view, and
    /// only if that says empty, a reload of the producer's index. After the
    /// producer closed, a final reload so nothing it published is missed.
    #[inline]
    fn available(&self) -> Result<usize, Closed> {
        let cached = self.ring.cached_slots();
        if cached > 0 {
            return Ok(cached);
        }
        let n = self.ring.slots();
        if n > 0 {
            return Ok(n);
        }
        if self.shared.is_closed() {
            // The producer publishes before it sets `closed` (release/acquire).
            let n = self.ring.slots();
            return if n > 0 { Ok(n) } else { Err(Closed) };
        }
        Ok(0)
    }

    /// Appends up to `max` items to `out` without blocking, with one index
    /// publication. `Ok(0)`: empty. `Err(Closed)`: closed and empty.
    pub fn try_pop_batch(&mut self, out: &mut Vec<T>, max: usize) -> Result<usize, Closed> {
        self.try_pop_with(max, |item| out.push(item))
    }

    /// Like [`Consumer::try_pop_batch`] but hands each item to `f` instead of
    /// a `Vec` (no extra move). `f` must not panic: items it did not get
    /// would stay in the ring.
    pub fn try_pop_with(&mut self, max: usize, f: impl FnMut(T)) -> Result<usize, Closed> {
        let n = self.available()?.min(max);
        if n == 0 {
            return Ok(0);
        }
        Ok(self.take(n, f))
    }

    /// Appends up to `max` (>= 1) items to `out`, blocking until at least
    /// one is available. `Err(Closed)` once the producer closed and the ring
    /// is drained.
    pub fn pop_batch(&mut self, out: &mut Vec<T>, max: usize) -> Result<usize, Closed> {
        self.pop_with(max, |item| out.push(item))
    }

    /// Blocking variant of [`Consumer::try_pop_with`].
    pub fn pop_with(&mut self, max: usize, f: impl FnMut(T)) -> Result<usize, Closed> {
        if max == 0 {
            return Ok(0);
        }
        match self.wait(None) {
            Waited::Ready(n) => Ok(self.take(n.min(max), f)),
            Waited::Closed | Waited::Timeout => Err(Closed),
        }
    }

    /// Like [`Consumer::pop_batch`] but waits at most `timeout`; `Ok(0)` on
    /// timeout (for stages that must also do periodic work).
    pub fn pop_batch_timeout(
        &mut self,
        out: &mut Vec<T>,
        max: usize,
        timeout: Duration,
    ) -> Result<usize, Closed> {
        if max == 0 {
            return Ok(0);
        }
        // A timeout too large for an `Instant` means no deadline.
        match self.wait(Instant::now().checked_add(timeout)) {
            Waited::Ready(n) => Ok(self.take(n.min(max), |item| out.push(item))),
            Waited::Closed => Err(Closed),
            Waited::Timeout => Ok(0),
        }
    }

    /// Takes one item (a batch of one) without blocking.
    pub fn try_pop(&mut self) -> Result<T, TryPopError> {
        match self.ring.pop() {
            Ok(item) => {
                self.released(1);
                Ok(item)
            }
            Err(rtrb::PopError::Empty) => {
                if self.shared.is_closed() {
                    // Re-check after seeing `closed`: see `available`.
                    if let Ok(item) = self.ring.pop() {
                        self.released(1);
                        return Ok(item);
                    }
                    Err(TryPopError::Closed)
                } else {
                    Err(TryPopError::Empty)
                }
            }
        }
    }

    /// Takes one item, blocking until there is one.
    pub fn pop(&mut self) -> Result<T, Closed> {
        let mut slot = None;
        self.pop_with(1, |item| slot = Some(item))?;
        slot.ok_or(Closed)
    }

    /// Closes the ring: the producer's next push/commit fails with
    /// [`Closed`] (a parked producer is woken). Items still in the ring are
    /// dropped with it. Also done on drop.
    pub fn close(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self.shared.producer.wake_any() {
            bump(&self.shared.cc.wakeups_sent, 1);
        }
    }

    /// Moves `n` items (all known to be there) to `f`, publishing the head
    /// index once when the chunk iterator is dropped.
    fn take(&mut self, n: usize, mut f: impl FnMut(T)) -> usize {
        if n == 0 {
            return 0;
        }
        let Ok(chunk) = self.ring.read_chunk(n) else {
            return 0; // cannot happen: n <= available, and only we remove
        };
        let mut iter = chunk.into_iter();
        for item in iter.by_ref() {
            f(item);
        }
        let taken = iter.iterated();
        drop(iter); // publishes head
        self.released(taken);
        taken
    }

    /// After an index publication: counters, then wake the producer only if
    /// it is parked and enough slots are free now.
    #[inline]
    fn released(&mut self, n: usize) {
        bump(&self.shared.cc.popped, n as u64);
        bump(&self.shared.cc.releases, 1);
        // Pairs with the producer's store(parked) ; fence ; load(head).
        fence(Ordering::SeqCst);
        if self.shared.producer.state.load(Ordering::Relaxed) == PARKED {
            // A parked producer has published everything it could, so this
            // reload sees the true fill level.
            let free = self.capacity - self.ring.slots();
            if free >= self.wake_at && self.shared.producer.wake_parked() {
                bump(&self.shared.cc.wakeups_sent, 1);
            }
        }
    }

    /// Waits for at least one item: spin, then nap (timed park, declared
    /// `NAPPING`: only a full ring makes the producer cut it short), then
    /// park (declared `PARKED`: the producer's next publication wakes us).
    fn wait(&mut self, deadline: Option<Instant>) -> Waited {
        match self.available() {
            Ok(0) => {}
            Ok(n) => return Waited::Ready(n),
            Err(Closed) => return Waited::Closed,
        }
        bump(&self.shared.cc.waits, 1);
        for i in 0..self.spin + self.yields {
            if i < self.spin {
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
            match self.available() {
                Ok(0) => {}
                Ok(n) => return Waited::Ready(n),
                Err(Closed) => return Waited::Closed,
            }
        }
        for _ in 0..self.sleeps {
            let mut d = self.sleep;
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Waited::Timeout;
                }
                d = d.min(left);
            }
            if let Some(w) = self.sleep_until_woken(NAPPING, Some(d)) {
                return w;
            }
        }
        loop {
            let timeout = match deadline {
                None => None,
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return match self.available() {
                            Ok(0) => Waited::Timeout,
                            Ok(n) => Waited::Ready(n),
                            Err(Closed) => Waited::Closed,
                        };
                    }
                    Some(left)
                }
            };
            if let Some(w) = self.sleep_until_woken(PARKED, timeout) {
                return w;
            }
        }
    }

    /// Declares `state`, double-checks the ring (returning early if an item
    /// or the close arrived meanwhile), then parks (at most `timeout`).
    /// Returns `None` after a park, whatever ended it; the caller re-checks.
    fn sleep_until_woken(&mut self, state: u8, timeout: Option<Duration>) -> Option<Waited> {
        let me = &self.shared.consumer;
        me.register(&mut self.registered);
        me.declare(state);
        // Store(state) ; fence ; load(tail)  pairs with the producer's
        // store(tail) ; fence ; load(state).
        fence(Ordering::SeqCst);
        // Acquire: if closed, the producer's last publication is visible.
        let closed = self.shared.closed.load(Ordering::Acquire);
        let n = self.ring.slots();
        if n > 0 || closed {
            me.awake();
            return Some(if n > 0 {
                Waited::Ready(n)
            } else {
                Waited::Closed
            });
        }
        let c = &self.shared.cc;
        bump(
            if state == NAPPING {
                &c.sleeps
            } else {
                &c.parks
            },
            1,
        );
        match timeout {
            None => thread::park(),
            Some(d) => thread::park_timeout(d),
        }
        // Woken (the waker already reset the state), timed out or spurious.
        me.awake();
        match self.available() {
            Ok(0) => None,
            Ok(n) => Some(Waited::Ready(n)),
            Err(Closed) => Some(Waited::Closed),
        }
    }
}

impl<T> Drop for Consumer<T> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<T> std::fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("capacity", &self.capacity)
            .field("closed", &self.is_closed())
            .finish()
    }
}
