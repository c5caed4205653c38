//! Packet accounting: every packet a core received or made is sent, dropped with a
//! counted reason, or still queued.
//!
//! `received + copies = sent + dropped + queued` holds for every core at every instant
//! between two of its steps (and for a pipelined worker over its two stages once its
//! rings are empty). Copies are the packets made beyond the original: an I2E or E2E
//! clone counts one, a packet replicated to `n` ports (a multicast group, a clone
//! session with a group or replicas) counts `n - 1`; a replication with no port at all
//! (a group that does not exist or is empty, a clone session without destination) is a
//! drop ([`DropReason::NoReplicas`]). Resubmission and recirculation move the packet
//! back to ingress: no copy, counted apart ([`Accounts::resubmitted`],
//! [`Accounts::recirculated`]).

/// Why a packet left the switch without being sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The program dropped it in ingress (`mark_to_drop`, egress_spec = drop port).
    Ingress,
    /// The program dropped it in ingress with `parser_error` set (bmv2 passes parser
    /// errors to ingress; the program decided to drop).
    ParserError,
    /// The program dropped it in egress.
    Egress,
    /// Its egress queue was full (`set_queue_depth`).
    QueueFull,
    /// Its priority has no queue (`--priority-queues`).
    PriorityOutOfRange,
    /// Resubmitted or recirculated more than the loop guard allows.
    LoopGuard,
    /// Replicated to no port: a multicast group that does not exist or is empty, a
    /// clone session without destination.
    NoReplicas,
    /// Sent to a port number the switch does not have (simple_switch drops these).
    NoSuchPort,
    /// The port refused it: transmit ring full after retries.
    TxRingFull,
    /// The port failed: its interface is down or gone (a deleted veth).
    PortError,
    /// Discarded by the switch itself: the program it ran was gone (configuration swap
    /// with its control state lost), or the run stopped with it inside a stage.
    Discarded,
}

/// How many [`DropReason`]s there are.
pub const DROP_REASONS: usize = 11;

impl DropReason {
    /// Every reason, in the order of [`DropReason::index`].
    pub const ALL: [DropReason; DROP_REASONS] = [
        DropReason::Ingress,
        DropReason::ParserError,
        DropReason::Egress,
        DropReason::QueueFull,
        DropReason::PriorityOutOfRange,
        DropReason::LoopGuard,
        DropReason::NoReplicas,
        DropReason::NoSuchPort,
        DropReason::TxRingFull,
        DropReason::PortError,
        DropReason::Discarded,
    ];

    /// Its index in [`PortCounters::drops`].
    #[inline(always)]
    pub fn index(self) -> usize {
        self as usize
    }

    /// Its name in summaries, the runtime API and metrics (snake case).
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Ingress => "ingress_program",
            DropReason::ParserError => "parser_error",
            DropReason::Egress => "egress_program",
            DropReason::QueueFull => "queue_full",
            DropReason::PriorityOutOfRange => "priority_out_of_range",
            DropReason::LoopGuard => "loop_guard",
            DropReason::NoReplicas => "no_replicas",
            DropReason::NoSuchPort => "no_such_port",
            DropReason::TxRingFull => "tx_ring_full",
            DropReason::PortError => "port_error",
            DropReason::Discarded => "discarded",
        }
    }

    /// Whether the program asked for it (the others are faults or limits).
    pub fn by_program(self) -> bool {
        matches!(
            self,
            DropReason::Ingress | DropReason::ParserError | DropReason::Egress
        )
    }
}

/// Per-port packet counts. A drop is counted on the port the packet was on when it
/// was dropped: its ingress port in ingress (0 for resubmitted and recirculated
/// packets, as their `ingress_port`), its egress port from the traffic manager on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Frames received.
    pub rx: u64,
    /// Frames sent.
    pub tx: u64,
    /// Frames dropped, by [`DropReason::index`].
    pub drops: [u64; DROP_REASONS],
}

impl PortCounters {
    /// Frames dropped for any reason.
    pub fn dropped(&self) -> u64 {
        self.drops.iter().sum()
    }

    /// Adds `o` to these.
    pub fn add(&mut self, o: &PortCounters) {
        self.rx += o.rx;
        self.tx += o.tx;
        for (a, b) in self.drops.iter_mut().zip(o.drops.iter()) {
            *a += b;
        }
    }
}

/// A core's counts beyond the per-port ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Accounts {
    /// Clones made (I2E and E2E), one per clone.
    pub clone_copies: u64,
    /// Copies made by replication beyond the original (multicast groups, clone
    /// sessions with groups or replicas): `n - 1` for `n` ports.
    pub multicast_copies: u64,
    /// Packets resubmitted (each pass counts).
    pub resubmitted: u64,
    /// Packets recirculated (each pass counts).
    pub recirculated: u64,
}

impl Accounts {
    /// Copies made (the packets that entered the books besides received frames).
    pub fn copies(&self) -> u64 {
        self.clone_copies + self.multicast_copies
    }

    /// Adds `o` to these.
    pub fn add(&mut self, o: &Accounts) {
        self.clone_copies += o.clone_copies;
        self.multicast_copies += o.multicast_copies;
        self.resubmitted += o.resubmitted;
        self.recirculated += o.recirculated;
    }
}

/// The books of one or more cores at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Balance {
    /// Per-port counts (index = port).
    pub ports: Vec<PortCounters>,
    /// Copies, resubmissions, recirculations.
    pub accounts: Accounts,
    /// Packets still inside: waiting for ingress, resubmitted or recirculated, queued
    /// for egress (and, summed over a pipelined worker, in its rings).
    pub queued: u64,
}

impl Balance {
    /// Frames received on every port.
    pub fn received(&self) -> u64 {
        self.ports.iter().map(|p| p.rx).sum()
    }

    /// Frames sent on every port.
    pub fn sent(&self) -> u64 {
        self.ports.iter().map(|p| p.tx).sum()
    }

    /// Drops per reason over every port (by [`DropReason::index`]).
    pub fn drops(&self) -> [u64; DROP_REASONS] {
        let mut d = [0; DROP_REASONS];
        for p in &self.ports {
            for (a, b) in d.iter_mut().zip(p.drops.iter()) {
                *a += b;
            }
        }
        d
    }

    /// Frames dropped for any reason.
    pub fn dropped(&self) -> u64 {
        self.ports.iter().map(|p| p.dropped()).sum()
    }

    /// Whether `received + copies = sent + dropped + queued`.
    pub fn holds(&self) -> bool {
        self.received() + self.accounts.copies() == self.sent() + self.dropped() + self.queued
    }

    /// Adds `o` to these books.
    pub fn add(&mut self, o: &Balance) {
        if self.ports.len() < o.ports.len() {
            self.ports.resize(o.ports.len(), PortCounters::default());
        }
        for (a, b) in self.ports.iter_mut().zip(o.ports.iter()) {
            a.add(b);
        }
        self.accounts.add(&o.accounts);
        self.queued += o.queued;
    }

    /// One line: `received R + copies C = sent S + dropped D + queued Q` and whether
    /// it holds.
    pub fn equation(&self) -> String {
        let (r, c, s, d, q) = (
            self.received(),
            self.accounts.copies(),
            self.sent(),
            self.dropped(),
            self.queued,
        );
        format!(
            "received {r} + copies {c} = sent {s} + dropped {d} + queued {q}{}",
            if self.holds() {
                ""
            } else {
                " (DOES NOT BALANCE)"
            }
        )
    }

    /// The nonzero drop counts by reason: `queue_full 12, ingress_program 3` (`none`
    /// when there is none).
    pub fn drops_text(&self) -> String {
        let d = self.drops();
        let parts: Vec<String> = DropReason::ALL
            .iter()
            .filter(|r| d[r.index()] > 0)
            .map(|r| format!("{} {}", r.name(), d[r.index()]))
            .collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }

    /// The books as JSON: `{"received", "copies", "sent", "dropped", "queued",
    /// "balanced", "clone_copies", "multicast_copies", "resubmitted", "recirculated",
    /// "drops": {reason: n}, "ports": [{"port", "rx", "tx", "drops": {reason: n}}]}`
    /// (ports with no traffic left out, reasons with no drop left out).
    pub fn to_json(&self) -> serde_json::Value {
        let reasons = |d: &[u64; DROP_REASONS]| {
            let mut m = serde_json::Map::new();
            for r in DropReason::ALL {
                if d[r.index()] > 0 {
                    m.insert(r.name().into(), d[r.index()].into());
                }
            }
            serde_json::Value::Object(m)
        };
        let ports: Vec<serde_json::Value> = self
            .ports
            .iter()
            .enumerate()
            .filter(|(_, p)| p.rx > 0 || p.tx > 0 || p.dropped() > 0)
            .map(|(i, p)| {
                serde_json::json!({"port": i, "rx": p.rx, "tx": p.tx, "drops": reasons(&p.drops)})
            })
            .collect();
        let a = &self.accounts;
        serde_json::json!({
            "received": self.received(),
            "copies": a.copies(),
            "sent": self.sent(),
            "dropped": self.dropped(),
            "queued": self.queued,
            "balanced": self.holds(),
            "clone_copies": a.clone_copies,
            "multicast_copies": a.multicast_copies,
            "resubmitted": a.resubmitted,
            "recirculated": a.recirculated,
            "drops": reasons(&self.drops()),
            "ports": ports,
        })
    }
}

/// What one forwarding thread published last.
#[derive(Debug, Clone, Default)]
pub struct ThreadBooks {
    /// The thread's name (`worker 0`, `worker 0 ingress`, ...).
    pub name: String,
    /// Its core's books.
    pub balance: Balance,
    /// Loop turns that received or processed packets.
    pub busy_polls: u64,
    /// Loop turns that found nothing to do.
    pub idle_polls: u64,
    /// Injection-to-transmission latency of the packets the thread transmitted, since
    /// it started (empty for a thread that transmits nothing).
    pub latency: crate::LatencyHist,
    /// Per table, the lookups and hits of the thread (see [`crate::Core::table_stats`]).
    pub tables: Vec<(String, p4jet_engine::TableStats)>,
}

/// The latest books of every forwarding thread of a running switch, published by the
/// threads a few times a second and at their end; read by the runtime API and the
/// metrics endpoint. Each thread's entry is consistent in itself (taken between two of
/// its steps); entries of different threads are taken at different instants.
#[derive(Debug, Default)]
pub struct Board {
    threads: std::sync::Mutex<Vec<ThreadBooks>>,
}

impl Board {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ThreadBooks>> {
        match self.threads.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Thread `i`'s books.
    pub fn publish(&self, i: usize, books: ThreadBooks) {
        let mut t = self.lock();
        if t.len() <= i {
            t.resize(i + 1, ThreadBooks::default());
        }
        t[i] = books;
    }

    /// Every thread's latest books (empty when no forwarding thread ran).
    pub fn snapshot(&self) -> Vec<ThreadBooks> {
        self.lock().clone()
    }

    /// The books of every thread summed (None when no forwarding thread ran).
    pub fn total(&self) -> Option<Balance> {
        let t = self.lock();
        if t.is_empty() {
            return None;
        }
        let mut b = Balance::default();
        for x in t.iter() {
            b.add(&x.balance);
        }
        Some(b)
    }

    /// Per table (by name, sorted), the lookups and hits of every thread summed.
    pub fn tables(&self) -> Vec<(String, p4jet_engine::TableStats)> {
        let mut m: std::collections::BTreeMap<String, p4jet_engine::TableStats> =
            std::collections::BTreeMap::new();
        for x in self.lock().iter() {
            for (name, s) in &x.tables {
                let e = m.entry(name.clone()).or_default();
                e.lookups += s.lookups;
                e.hits += s.hits;
            }
        }
        m.into_iter().collect()
    }

    /// The latency histograms of every thread merged.
    pub fn latency(&self) -> crate::LatencyHist {
        let mut h = crate::LatencyHist::default();
        for x in self.lock().iter() {
            h.merge(&x.latency);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_indexed_in_order_with_distinct_names() {
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
        let mut names: Vec<_> = DropReason::ALL.iter().map(|r| r.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DROP_REASONS);
    }

    #[test]
    fn a_balance_sums_and_checks() {
        let mut b = Balance::default();
        b.ports.resize(2, PortCounters::default());
        b.ports[0].rx = 10;
        b.ports[1].tx = 7;
        b.ports[1].drops[DropReason::QueueFull.index()] = 4;
        b.accounts.multicast_copies = 2;
        b.queued = 1;
        assert!(b.holds(), "{}", b.equation());
        assert_eq!(b.drops_text(), "queue_full 4");
        let mut t = Balance::default();
        t.add(&b);
        t.add(&b);
        assert!(t.holds());
        assert_eq!(t.received(), 20);
        t.queued = 0;
        assert!(!t.holds());
        assert!(t.equation().ends_with("(DOES NOT BALANCE)"));
    }
}
