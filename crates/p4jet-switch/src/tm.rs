//! The traffic manager: per egress port, `priority_queues` FIFO queues; the highest
//! priority index is served first (simple_switch semantics).

use std::collections::{BTreeMap, VecDeque};

use p4jet_engine::PacketCtx;

/// A packet owned by the switch: boxed so that moving it between queues moves a pointer.
pub type Pkt = Box<PacketCtx>;

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
        self.default_depth.is_none()
            && self.depth.is_empty()
            && self.default_rate.is_none()
            && self.rate.is_empty()
    }

    /// Depth limit of a queue.
    pub fn depth_of(&self, port: u32, prio: u32) -> Option<usize> {
        self.depth
            .get(&(port, prio))
            .copied()
            .or(self.default_depth)
    }
}

/// Queued packets.
#[derive(Debug, Default)]
pub struct Tm {
    queues: BTreeMap<u32, Vec<VecDeque<Pkt>>>,
    len: usize,
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

    /// Current depth of a queue.
    pub fn depth(&self, port: u32, prio: u32) -> usize {
        self.queues
            .get(&port)
            .and_then(|q| q.get(prio as usize))
            .map(|q| q.len())
            .unwrap_or(0)
    }

    /// Enqueues; gives the packet back when the queue is full.
    #[allow(clippy::result_large_err)] // the context is handed back to be recycled, not boxed
    pub fn enqueue(
        &mut self,
        cfg: &QueueConfig,
        port: u32,
        prio: u32,
        ctx: Pkt,
    ) -> Result<usize, Pkt> {
        let qs = self
            .queues
            .entry(port)
            .or_insert_with(|| (0..cfg.nqueues).map(|_| VecDeque::new()).collect());
        if qs.len() < cfg.nqueues as usize {
            qs.resize_with(cfg.nqueues as usize, VecDeque::new);
        }
        let Some(q) = qs.get_mut(prio as usize) else {
            return Err(ctx);
        };
        if let Some(d) = cfg.depth_of(port, prio)
            && q.len() >= d
        {
            return Err(ctx);
        }
        let depth = q.len();
        q.push_back(ctx);
        self.len += 1;
        Ok(depth)
    }

    /// Dequeues up to `max` packets: ports ascending, highest priority first, FIFO.
    pub fn dequeue_into(&mut self, max: usize, out: &mut Vec<Pkt>) {
        while out.len() < max && self.len > 0 {
            let before = out.len();
            for qs in self.queues.values_mut() {
                for q in qs.iter_mut().rev() {
                    if let Some(c) = q.pop_front() {
                        self.len -= 1;
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
}
