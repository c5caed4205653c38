//! The traffic manager: per egress port, `priority_queues` FIFO queues; the highest
//! priority index is served first (simple_switch semantics).
//!
//! Rate limits (`set_queue_rate`, packets per second, per queue) pace departures as
//! bmv2's `QueueingLogicPriRL` does: each queue remembers the departure time it gave
//! its last packet (initially the time the queue was created, which here is its first
//! packet), and a packet enqueued at `now` may leave at `max(now, last + 1 s / rate)`
//! (the interval truncated to whole nanoseconds; rate 0 or no rate: at once). A queue
//! whose head is not due yet is skipped, so a lower priority queue may be served
//! meanwhile. Times are nanoseconds of the switch clock.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use p4jet_engine::PacketCtx;

/// A packet owned by the switch: boxed so that moving it between queues moves a pointer.
pub type Pkt = Box<PacketCtx>;

/// The queue configuration shared by the control plane and the workers, with a
/// generation number that changes with every change: a worker copies the configuration
/// only when the generation moved, so the per-batch check is one read of a cache line
/// that nobody writes while the configuration stays as it is (a lock per batch would be
/// written by every worker).
#[derive(Debug)]
pub struct SharedQueues {
    cfg: Mutex<QueueConfig>,
    generation: AtomicU64,
}

/// The shared queue configuration's mutex was poisoned (a thread panicked holding it).
#[derive(Debug, Clone, Copy)]
pub struct QueuesPoisoned;

impl std::fmt::Display for QueuesPoisoned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("queue configuration lock poisoned")
    }
}

/// Write access to [`SharedQueues`]; dropping it publishes the change (the generation
/// moves while the lock is still held).
pub struct QueueGuard<'a> {
    guard: MutexGuard<'a, QueueConfig>,
    generation: &'a AtomicU64,
}

impl std::ops::Deref for QueueGuard<'_> {
    type Target = QueueConfig;
    fn deref(&self) -> &QueueConfig {
        &self.guard
    }
}

impl std::ops::DerefMut for QueueGuard<'_> {
    fn deref_mut(&mut self) -> &mut QueueConfig {
        &mut self.guard
    }
}

impl Drop for QueueGuard<'_> {
    fn drop(&mut self) {
        self.generation.fetch_add(1, Ordering::Release);
    }
}

impl SharedQueues {
    /// Shares `cfg`.
    pub fn new(cfg: QueueConfig) -> SharedQueues {
        SharedQueues {
            cfg: Mutex::new(cfg),
            generation: AtomicU64::new(0),
        }
    }

    /// Locks the configuration for a change (or a look); workers take it at their next
    /// batch.
    pub fn lock(&self) -> Result<QueueGuard<'_>, QueuesPoisoned> {
        let guard = self.cfg.lock().map_err(|_| QueuesPoisoned)?;
        Ok(QueueGuard {
            guard,
            generation: &self.generation,
        })
    }

    /// The current generation.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Copies the configuration into `out` if the generation differs from `*seen`, and
    /// records the generation copied.
    #[inline]
    pub fn refresh(&self, seen: &mut u64, out: &mut QueueConfig) {
        let g = self.generation();
        if g == *seen {
            return;
        }
        if let Ok(q) = self.cfg.lock() {
            out.clone_from(&q);
            // the generation cannot move while the lock is held
            *seen = self.generation();
        }
    }
}

/// Queue limits set by the control plane (`set_queue_depth`, `set_queue_rate`).
#[derive(Debug, Clone)]
pub struct QueueConfig {
    /// Number of priority queues per port.
    pub nqueues: u32,
    /// Depth limit for all queues (None: unbounded, the file-port default: p4jet never
    /// loses a packet for lack of room unless told to).
    pub default_depth: Option<usize>,
    /// Per (port, priority) depth.
    pub depth: BTreeMap<(u32, u32), usize>,
    /// Rate limit for all queues, packets per second.
    pub default_rate: Option<u64>,
    /// Per (port, priority) rate.
    pub rate: BTreeMap<(u32, u32), u64>,
}

impl QueueConfig {
    /// Defaults for `nqueues` queues per port.
    pub fn new(nqueues: u32) -> QueueConfig {
        QueueConfig {
            nqueues: nqueues.max(1),
            default_depth: None,
            depth: BTreeMap::new(),
            default_rate: None,
            rate: BTreeMap::new(),
        }
    }

    /// No depth or rate limit anywhere.
    pub fn unlimited(&self) -> bool {
        self.default_depth.is_none() && self.depth.is_empty() && self.unpaced()
    }

    /// No rate limit anywhere (a rate of 0 is no limit, as in bmv2).
    pub fn unpaced(&self) -> bool {
        self.default_rate.is_none_or(|r| r == 0) && self.rate.values().all(|&r| r == 0)
    }

    /// Interval between departures of a queue (ns), None when it has no rate limit.
    pub fn interval_ns(&self, port: u32, prio: u32) -> Option<u64> {
        let pps = self
            .rate
            .get(&(port, prio))
            .copied()
            .or(self.default_rate)?;
        // bmv2: duration_cast<nanoseconds>(duration<double>(1. / pps))
        (pps != 0).then(|| 1_000_000_000 / pps)
    }

    /// Depth limit of a queue.
    pub fn depth_of(&self, port: u32, prio: u32) -> Option<usize> {
        self.depth
            .get(&(port, prio))
            .copied()
            .or(self.default_depth)
    }
}

/// One (port, priority) queue: packets with their departure time (0: at once).
#[derive(Debug, Default)]
struct Queue {
    pkts: VecDeque<(u64, Pkt)>,
    /// Departure time given to the last packet (bmv2's `last_sent`); None until the
    /// queue's first packet (bmv2 creates the queue then, with `last_sent = now`).
    last_ns: Option<u64>,
}

/// Queued packets.
#[derive(Debug, Default)]
pub struct Tm {
    queues: BTreeMap<u32, Vec<Queue>>,
    len: usize,
    /// Queued packets with a departure time (rate-limited queues).
    paced: usize,
}

impl Tm {
    /// Number of queued packets.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of queued packets that wait for a departure time.
    pub fn paced(&self) -> usize {
        self.paced
    }

    /// Current depth of a queue.
    pub fn depth(&self, port: u32, prio: u32) -> usize {
        self.queues
            .get(&port)
            .and_then(|q| q.get(prio as usize))
            .map(|q| q.pkts.len())
            .unwrap_or(0)
    }

    /// Enqueues at time `now_ns`; gives the packet back when the queue is full.
    #[allow(clippy::result_large_err)] // the context is handed back to be recycled, not boxed
    pub fn enqueue(
        &mut self,
        cfg: &QueueConfig,
        port: u32,
        prio: u32,
        ctx: Pkt,
        now_ns: u64,
    ) -> Result<usize, Pkt> {
        let qs = self
            .queues
            .entry(port)
            .or_insert_with(|| (0..cfg.nqueues).map(|_| Queue::default()).collect());
        if qs.len() < cfg.nqueues as usize {
            qs.resize_with(cfg.nqueues as usize, Queue::default);
        }
        let Some(q) = qs.get_mut(prio as usize) else {
            return Err(ctx);
        };
        if let Some(d) = cfg.depth_of(port, prio)
            && q.pkts.len() >= d
        {
            return Err(ctx);
        }
        let last = q.last_ns.unwrap_or(now_ns);
        let send = match cfg.interval_ns(port, prio) {
            Some(gap) => {
                let t = now_ns.max(last.saturating_add(gap));
                q.last_ns = Some(t);
                self.paced += 1;
                t
            }
            None => {
                q.last_ns = Some(now_ns.max(last));
                0
            }
        };
        let depth = q.pkts.len();
        q.pkts.push_back((send, ctx));
        self.len += 1;
        Ok(depth)
    }

    /// Dequeues up to `max` packets due at `now_ns`: ports ascending, highest priority
    /// whose head is due first, FIFO.
    pub fn dequeue_into(&mut self, max: usize, out: &mut Vec<Pkt>, now_ns: u64) {
        while out.len() < max && self.len > 0 {
            let before = out.len();
            for qs in self.queues.values_mut() {
                for q in qs.iter_mut().rev() {
                    if q.pkts.front().is_some_and(|(t, _)| *t <= now_ns)
                        && let Some((t, c)) = q.pkts.pop_front()
                    {
                        self.len -= 1;
                        if t != 0 {
                            self.paced -= 1;
                        }
                        out.push(c);
                        break;
                    }
                }
                if out.len() >= max {
                    break;
                }
            }
            if out.len() == before {
                break;
            }
        }
    }

    /// Whether some packet may leave at `now_ns`.
    pub fn has_due(&self, now_ns: u64) -> bool {
        if self.paced == 0 {
            return self.len > 0;
        }
        self.next_due_ns().is_some_and(|t| t <= now_ns)
    }

    /// Earliest departure time of a queue head (None when nothing is queued).
    pub fn next_due_ns(&self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        self.queues
            .values()
            .flat_map(|qs| qs.iter())
            .filter_map(|q| q.pkts.front().map(|(t, _)| *t))
            .min()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A packet tagged with `tag` (in its sequence number).
    fn pkt(tag: u64) -> Pkt {
        thread_local! {
            static ENGINE: p4jet_engine::Engine = {
                let p = concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../tests/corpus/basic_l2/basic_l2.json"
                );
                let json = std::fs::read_to_string(p).unwrap();
                p4jet_engine::load(&json, p4jet_engine::EngineConfig::default()).unwrap()
            };
        }
        let mut c = ENGINE.with(|e| Box::new(e.new_ctx(64)));
        c.arch.rx_ns = tag;
        c
    }

    fn tags(out: &[Pkt]) -> Vec<u64> {
        out.iter().map(|c| c.arch.rx_ns).collect()
    }

    fn drain(tm: &mut Tm, now_ns: u64) -> Vec<u64> {
        let mut out = vec![];
        tm.dequeue_into(64, &mut out, now_ns);
        tags(&out)
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn interval_is_one_second_over_the_rate_and_zero_means_no_limit() {
        let mut c = QueueConfig::new(2);
        assert!(c.unlimited() && c.unpaced());
        assert_eq!(c.interval_ns(1, 0), None);
        c.default_rate = Some(3);
        assert_eq!(c.interval_ns(1, 0), Some(333_333_333));
        c.rate.insert((1, 1), 0);
        c.rate.insert((2, 0), 1000);
        assert_eq!(
            c.interval_ns(1, 1),
            None,
            "a queue's rate 0 overrides the default"
        );
        assert_eq!(c.interval_ns(2, 0), Some(MS));
        assert_eq!(c.interval_ns(2, 1), Some(333_333_333));
        assert!(!c.unpaced() && !c.unlimited());
        c.default_rate = None;
        c.rate.retain(|_, r| *r == 0);
        assert!(c.unpaced() && c.unlimited(), "rates of 0 limit nothing");
        c.rate.insert((3, 0), 2_000_000_000);
        assert_eq!(c.interval_ns(3, 0), Some(0));
    }

    #[test]
    fn a_paced_queue_releases_one_packet_per_interval() {
        let mut c = QueueConfig::new(1);
        c.rate.insert((2, 0), 1000); // 1 ms apart
        let mut tm = Tm::default();
        // five packets at t = 10 ms: bmv2 creates the queue with last_sent = now, so the
        // first leaves one interval later
        for i in 0..5 {
            assert_eq!(tm.enqueue(&c, 2, 0, pkt(i), 10 * MS).ok(), Some(i as usize));
        }
        // an unpaced port is not held back
        tm.enqueue(&c, 3, 0, pkt(100), 10 * MS).ok().unwrap();
        assert_eq!(tm.paced(), 5);
        assert!(tm.has_due(10 * MS));
        assert_eq!(drain(&mut tm, 10 * MS), vec![100]);
        assert!(!tm.has_due(10 * MS));
        assert_eq!(tm.next_due_ns(), Some(11 * MS));
        assert_eq!(drain(&mut tm, 11 * MS - 1), Vec::<u64>::new());
        assert_eq!(drain(&mut tm, 11 * MS), vec![0]);
        assert_eq!(tm.next_due_ns(), Some(12 * MS));
        // late: everything due leaves at once, in order
        assert_eq!(drain(&mut tm, 14 * MS), vec![1, 2, 3]);
        assert_eq!(tm.depth(2, 0), 1);
        assert_eq!(drain(&mut tm, 15 * MS), vec![4]);
        assert!(tm.is_empty() && tm.paced() == 0 && tm.next_due_ns().is_none());
        // after an idle gap longer than the interval the next packet leaves at once
        tm.enqueue(&c, 2, 0, pkt(5), 40 * MS).ok().unwrap();
        assert_eq!(tm.next_due_ns(), Some(40 * MS));
        // ... and the one after it an interval later
        tm.enqueue(&c, 2, 0, pkt(6), 40 * MS).ok().unwrap();
        assert_eq!(drain(&mut tm, 40 * MS), vec![5]);
        assert_eq!(tm.next_due_ns(), Some(41 * MS));
    }

    #[test]
    fn unpaced_queues_are_served_as_before() {
        let c = QueueConfig::new(2);
        let mut tm = Tm::default();
        tm.enqueue(&c, 2, 0, pkt(0), 0).ok().unwrap();
        tm.enqueue(&c, 2, 1, pkt(1), 0).ok().unwrap();
        tm.enqueue(&c, 1, 0, pkt(2), 0).ok().unwrap();
        assert_eq!(tm.paced(), 0);
        assert!(tm.has_due(0));
        assert_eq!(tm.next_due_ns(), Some(0));
        // ports ascending, highest priority first
        let mut out = vec![];
        tm.dequeue_into(2, &mut out, 0);
        assert_eq!(tags(&out), vec![2, 1]);
        assert_eq!(drain(&mut tm, 0), vec![0]);
    }

    #[test]
    fn a_priority_queue_not_due_lets_a_lower_one_through() {
        let mut c = QueueConfig::new(2);
        c.rate.insert((2, 1), 1000);
        let mut tm = Tm::default();
        tm.enqueue(&c, 2, 1, pkt(10), 0).ok().unwrap();
        tm.enqueue(&c, 2, 1, pkt(11), 0).ok().unwrap();
        tm.enqueue(&c, 2, 0, pkt(0), 0).ok().unwrap();
        tm.enqueue(&c, 2, 0, pkt(1), 0).ok().unwrap();
        assert_eq!(drain(&mut tm, 0), vec![0, 1]);
        assert_eq!(drain(&mut tm, MS), vec![10]);
        // once due, the high priority queue goes first again
        tm.enqueue(&c, 2, 0, pkt(2), MS).ok().unwrap();
        let mut out = vec![];
        tm.dequeue_into(1, &mut out, 2 * MS);
        assert_eq!(tags(&out), vec![11]);
        assert_eq!(drain(&mut tm, 2 * MS), vec![2]);
    }

    #[test]
    fn depth_limits_still_apply_to_paced_queues() {
        let mut c = QueueConfig::new(1);
        c.default_rate = Some(1000);
        c.default_depth = Some(2);
        let mut tm = Tm::default();
        assert!(tm.enqueue(&c, 2, 0, pkt(0), 0).is_ok());
        assert!(tm.enqueue(&c, 2, 0, pkt(1), 0).is_ok());
        assert!(tm.enqueue(&c, 2, 0, pkt(2), 0).is_err(), "full");
        assert_eq!(drain(&mut tm, MS), vec![0]);
        // room again; the refused packet took no departure slot
        assert!(tm.enqueue(&c, 2, 0, pkt(3), MS).is_ok());
        assert_eq!(drain(&mut tm, 2 * MS), vec![1]);
        assert_eq!(tm.next_due_ns(), Some(3 * MS));
    }

    #[test]
    fn a_rate_removed_later_does_not_reorder_a_queue() {
        let mut c = QueueConfig::new(1);
        c.default_rate = Some(1000);
        let mut tm = Tm::default();
        tm.enqueue(&c, 2, 0, pkt(0), 0).ok().unwrap();
        c.default_rate = None;
        tm.enqueue(&c, 2, 0, pkt(1), 0).ok().unwrap();
        assert_eq!(tm.next_due_ns(), Some(MS));
        assert!(!tm.has_due(0));
        assert_eq!(drain(&mut tm, 0), Vec::<u64>::new());
        assert_eq!(drain(&mut tm, MS), vec![0, 1]);
    }
}

#[cfg(test)]
mod shared_tests {
    use super::*;

    #[test]
    fn workers_copy_the_queue_configuration_only_after_a_change() {
        let shared = SharedQueues::new(QueueConfig::new(1));
        let mut seen = u64::MAX;
        let mut local = QueueConfig::new(1);
        // first look: copied
        shared.refresh(&mut seen, &mut local);
        assert_eq!(seen, shared.generation());
        // a change made under the guard is published when the guard drops
        {
            let mut q = shared.lock().expect("lock");
            q.default_rate = Some(1000);
        }
        assert_ne!(seen, shared.generation());
        shared.refresh(&mut seen, &mut local);
        assert_eq!(local.default_rate, Some(1000));
        assert_eq!(seen, shared.generation());
        // no change: the local copy is left alone (even if someone scribbled on it)
        local.default_rate = None;
        shared.refresh(&mut seen, &mut local);
        assert_eq!(local.default_rate, None);
    }
}
