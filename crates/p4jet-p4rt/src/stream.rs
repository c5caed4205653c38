//! StreamChannel sessions: arbitration, packet-out in, packet-in / digests / idle
//! timeouts / arbitration updates out.
//!
//! Every StreamChannel call has a bounded outbound queue. The server never waits
//! for a slow client: packet-ins, digest lists and notifications that do not fit
//! are dropped (and counted); arbitration updates have room reserved. A stream
//! whose client stops reading therefore costs at most its queue.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;
use tonic::Status;

use crate::arbitration::{Arbiter, Notice, Refusal, StreamId};
use crate::proto::p4::v1::{StreamMessageResponse, stream_message_response};
use crate::role::Access;

/// Messages a stream's queue holds.
pub const STREAM_QUEUE: usize = 1024;

/// What the server sends on one stream.
pub type Outbound = mpsc::Sender<Result<StreamMessageResponse, Status>>;

/// The open streams of a device and their arbitration.
#[derive(Debug)]
pub struct Sessions {
    inner: Mutex<Inner>,
    next_id: AtomicU64,
    dropped: AtomicU64,
}

#[derive(Debug)]
struct Inner {
    arbiter: Arbiter,
    streams: HashMap<StreamId, Outbound>,
}

fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl Sessions {
    /// The sessions of device `device_id`.
    pub fn new(device_id: u64) -> Sessions {
        Sessions {
            inner: Mutex::new(Inner {
                arbiter: Arbiter::new(device_id),
                streams: HashMap::new(),
            }),
            next_id: AtomicU64::new(1),
            dropped: AtomicU64::new(0),
        }
    }

    /// Registers a new stream; returns its id.
    pub fn open(&self, tx: Outbound) -> StreamId {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.inner).streams.insert(id, tx);
        id
    }

    /// Forgets a stream (it ended) and tells the others if the primary changed.
    pub fn close(&self, id: StreamId) {
        let mut g = lock(&self.inner);
        g.streams.remove(&id);
        let notices = g.arbiter.leave(id);
        Self::deliver(&g, notices, &self.dropped);
    }

    /// Handles an arbitration request of stream `id`.
    pub fn arbitrate(
        &self,
        id: StreamId,
        msg: &crate::proto::p4::v1::MasterArbitrationUpdate,
    ) -> Result<(), Refusal> {
        let mut g = lock(&self.inner);
        let notices = g.arbiter.arbitrate(id, msg)?;
        Self::deliver(&g, notices, &self.dropped);
        Ok(())
    }

    fn deliver(g: &Inner, notices: Vec<Notice>, dropped: &AtomicU64) {
        for n in notices {
            if let Some(tx) = g.streams.get(&n.stream) {
                let m = StreamMessageResponse {
                    update: Some(stream_message_response::Update::Arbitration(n.update)),
                };
                if tx.try_send(Ok(m)).is_err() {
                    dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Whether a write-like request of `role` with this election id may proceed.
    pub fn check_primary(
        &self,
        role: &str,
        election_id: Option<&crate::proto::p4::v1::Uint128>,
    ) -> Result<(), Refusal> {
        lock(&self.inner).arbiter.check_primary(role, election_id)
    }

    /// Whether stream `id` is the primary of its role.
    pub fn is_primary(&self, id: StreamId) -> bool {
        lock(&self.inner).arbiter.is_primary_stream(id)
    }

    /// Whether stream `id` has arbitrated.
    pub fn has_arbitrated(&self, id: StreamId) -> bool {
        lock(&self.inner).arbiter.stream_role(id).is_some()
    }

    /// Sends a message to stream `id` without waiting; false if it was dropped.
    pub fn send_to(&self, id: StreamId, m: StreamMessageResponse) -> bool {
        let g = lock(&self.inner);
        let ok = g
            .streams
            .get(&id)
            .is_some_and(|tx| tx.try_send(Ok(m)).is_ok());
        if !ok {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }

    /// What the clients of `role` may do (its role config).
    pub fn access(&self, role: &str) -> Access {
        lock(&self.inner).arbiter.access(role)
    }

    /// Sends a message to the primary of every role; returns how many got it.
    pub fn send_to_primaries(&self, m: &StreamMessageResponse) -> usize {
        self.send_to_primaries_if(m, |_| true)
    }

    /// Sends a message to the primary of every role whose access `to` accepts;
    /// returns how many got it.
    pub fn send_to_primaries_if(
        &self,
        m: &StreamMessageResponse,
        to: impl Fn(&Access) -> bool,
    ) -> usize {
        let g = lock(&self.inner);
        let mut n = 0;
        for (s, access) in g.arbiter.primaries_with_access() {
            if !to(&access) {
                continue;
            }
            if let Some(tx) = g.streams.get(&s) {
                if tx.try_send(Ok(m.clone())).is_ok() {
                    n += 1;
                } else {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        n
    }

    /// Whether any role has a primary (someone to send notifications to).
    pub fn has_primary(&self) -> bool {
        !lock(&self.inner).arbiter.primaries().is_empty()
    }

    /// Messages dropped because a client did not read fast enough.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Open streams.
    pub fn stream_count(&self) -> usize {
        lock(&self.inner).streams.len()
    }
}

/// Shared handle.
pub type SharedSessions = Arc<Sessions>;
