//! Property test: any single-threaded interleaving of producer and consumer
//! calls behaves like a `VecDeque` of capacity `cap` plus a staging `Vec`,
//! and each side's cached view of the other's index is reloaded exactly when
//! the local view cannot satisfy the call (and never otherwise).
#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;

use p4jet_ring::{Closed, RingConfig, TryPopError, TrySendError};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Push(u8),
    TryCommit,
    TryPushBatch(u8),
    TrySend,
    TryPop,
    TryPopBatch(u8),
    TryPopWith(u8),
    Len,
    Free,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<u8>().prop_map(|n| Op::Push(n % 4)),
        2 => Just(Op::TryCommit),
        3 => (0u8..40).prop_map(Op::TryPushBatch),
        2 => Just(Op::TrySend),
        2 => Just(Op::TryPop),
        3 => (0u8..40).prop_map(Op::TryPopBatch),
        1 => (0u8..40).prop_map(Op::TryPopWith),
        1 => Just(Op::Len),
        1 => Just(Op::Free),
    ]
}

/// The reference: contents plus each side's cached view.
struct Model {
    cap: usize,
    ring: VecDeque<u64>,
    staged: Vec<u64>,
    /// Free slots as the producer last saw them (minus what it pushed since).
    pfree: usize,
    /// Items as the consumer last saw them (minus what it took since).
    cseen: usize,
    commits: u64,
    releases: u64,
}

impl Model {
    fn free(&self) -> usize {
        self.cap - self.ring.len()
    }
    /// Producer moves up to `len` items: reload only if the cached view is
    /// too small for the whole batch.
    fn publish(&mut self, len: usize) -> usize {
        if self.pfree < len {
            self.pfree = self.free();
        }
        let n = len.min(self.pfree);
        self.pfree -= n;
        if n > 0 {
            self.commits += 1;
        }
        n
    }
    /// Consumer takes up to `max`: reload only if the cached view is empty.
    fn take(&mut self, max: usize) -> usize {
        if self.cseen == 0 {
            self.cseen = self.ring.len();
        }
        let n = max.min(self.cseen);
        self.cseen -= n;
        if n > 0 {
            self.releases += 1;
        }
        n
    }
}

fn run(cap: usize, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let (mut tx, mut rx) = RingConfig::new(cap).build::<u64>().unwrap();
    let mut m = Model {
        cap,
        ring: VecDeque::new(),
        staged: Vec::new(),
        pfree: cap,
        cseen: 0,
        commits: 0,
        releases: 0,
    };
    let mut next = 0u64;
    let mut fresh = |k: usize| -> Vec<u64> {
        let v: Vec<u64> = (next..next + k as u64).collect();
        next += k as u64;
        v
    };
    for op in ops {
        match op {
            Op::Push(k) => {
                for x in fresh(k as usize) {
                    tx.push(x);
                    m.staged.push(x);
                }
            }
            Op::TryCommit => {
                let n = m.publish(m.staged.len());
                m.ring.extend(m.staged.drain(..n));
                prop_assert_eq!(tx.try_commit(), Ok(n));
            }
            Op::TryPushBatch(k) => {
                let mut v = fresh(k as usize);
                let mut mv = v.clone();
                let n = m.publish(mv.len());
                m.ring.extend(mv.drain(..n));
                prop_assert_eq!(tx.try_push_batch(&mut v), Ok(n));
                prop_assert_eq!(v, mv);
            }
            Op::TrySend => {
                let x = fresh(1)[0];
                let n = m.publish(1);
                if n == 1 {
                    m.ring.push_back(x);
                    prop_assert_eq!(tx.try_send(x), Ok(()));
                } else {
                    prop_assert_eq!(tx.try_send(x), Err(TrySendError::Full(x)));
                }
            }
            Op::TryPop => {
                let n = m.take(1);
                if n == 1 {
                    prop_assert_eq!(rx.try_pop(), Ok(m.ring.pop_front().unwrap()));
                } else {
                    prop_assert_eq!(rx.try_pop(), Err(TryPopError::Empty));
                }
            }
            Op::TryPopBatch(max) => {
                let n = m.take(max as usize);
                let want: Vec<u64> = m.ring.drain(..n).collect();
                let mut out = vec![7];
                prop_assert_eq!(rx.try_pop_batch(&mut out, max as usize), Ok(n));
                prop_assert_eq!(&out[1..], &want[..]);
            }
            Op::TryPopWith(max) => {
                let n = m.take(max as usize);
                let want: Vec<u64> = m.ring.drain(..n).collect();
                let mut got = Vec::new();
                prop_assert_eq!(rx.try_pop_with(max as usize, |x| got.push(x)), Ok(n));
                prop_assert_eq!(got, want);
            }
            Op::Len => {
                // An explicit query reloads.
                m.cseen = m.ring.len();
                prop_assert_eq!(rx.len(), m.ring.len());
            }
            Op::Free => {
                m.pfree = m.free();
                prop_assert_eq!(tx.free(), m.free());
            }
        }
        prop_assert_eq!(tx.staged(), m.staged.len());
        prop_assert_eq!(tx.cached_free(), m.pfree);
        prop_assert_eq!(rx.cached_len(), m.cseen);
        let s = tx.stats();
        prop_assert_eq!(s.commits, m.commits);
        prop_assert_eq!(s.releases, m.releases);
        prop_assert_eq!(s.wakeups(), 0);
    }
    // Closing the producer publishes what fits; the consumer drains in order
    // and then sees Closed.
    let n = m.publish(m.staged.len());
    m.ring.extend(m.staged.drain(..n));
    tx.close();
    let mut out = Vec::new();
    while rx.try_pop_batch(&mut out, 5) != Err(Closed) {}
    prop_assert_eq!(out, Vec::from(m.ring));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn behaves_like_a_bounded_deque(
        cap_log in 0u32..6,
        ops in proptest::collection::vec(op(), 0..200),
    ) {
        run(1 << cap_log, ops)?;
    }
}
