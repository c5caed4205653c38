//! Single-threaded unit tests of the API contract.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use p4jet_ring::{Closed, RingConfig, RingError, TryPopError, TrySendError, ring};

#[test]
fn capacity_must_be_power_of_two() {
    assert_eq!(ring::<u32>(0).unwrap_err(), RingError::NotPowerOfTwo(0));
    assert_eq!(ring::<u32>(6).unwrap_err(), RingError::NotPowerOfTwo(6));
    for cap in [1, 2, 4, 1024, 1 << 16] {
        let (tx, rx) = ring::<u32>(cap).unwrap();
        assert_eq!(tx.capacity(), cap);
        assert_eq!(rx.capacity(), cap);
    }
    assert!(matches!(
        RingConfig::new(8).producer_wake_at(9).build::<u8>(),
        Err(RingError::BadWakeThreshold { .. })
    ));
    assert!(matches!(
        RingConfig::new(8).producer_wake_at(0).build::<u8>(),
        Err(RingError::BadWakeThreshold { .. })
    ));
}

#[test]
fn staged_items_are_invisible_until_commit() {
    let (mut tx, mut rx) = ring::<u32>(8).unwrap();
    tx.push(1);
    tx.push(2);
    assert_eq!(tx.staged(), 2);
    assert_eq!(rx.try_pop(), Err(TryPopError::Empty));
    tx.commit().unwrap();
    assert_eq!(tx.staged(), 0);
    let mut out = Vec::new();
    assert_eq!(rx.try_pop_batch(&mut out, 10), Ok(2));
    assert_eq!(out, [1, 2]);
    let s = tx.stats();
    assert_eq!((s.pushed, s.commits), (2, 1));
    assert_eq!((s.popped, s.releases), (2, 1));
}

#[test]
fn one_publication_per_batch_and_wraparound() {
    let (mut tx, mut rx) = ring::<u64>(16).unwrap();
    let mut v = Vec::new();
    let mut out = Vec::new();
    let mut next = 0u64;
    let mut expect = 0u64;
    for round in 0..100 {
        let k = 1 + round % 16;
        v.extend(next..next + k as u64);
        next += k as u64;
        tx.push_batch(&mut v).unwrap();
        assert!(v.is_empty());
        out.clear();
        assert_eq!(rx.try_pop_batch(&mut out, 64), Ok(k));
        for x in &out {
            assert_eq!(*x, expect);
            expect += 1;
        }
    }
    let s = rx.stats();
    assert_eq!(s.commits, 100);
    assert_eq!(s.releases, 100);
    assert_eq!(s.pushed, next);
    assert_eq!(s.popped, next);
    assert_eq!(s.wakeups(), 0);
}

#[test]
fn try_push_batch_moves_what_fits() {
    let (mut tx, mut rx) = ring::<u32>(4).unwrap();
    let mut v: Vec<u32> = (0..7).collect();
    assert_eq!(tx.try_push_batch(&mut v), Ok(4));
    assert_eq!(v, [4, 5, 6]);
    assert_eq!(tx.try_push_batch(&mut v), Ok(0));
    assert!(matches!(tx.try_send(9), Err(TrySendError::Full(9))));
    assert_eq!(rx.try_pop(), Ok(0));
    assert_eq!(tx.try_push_batch(&mut v), Ok(1));
    assert_eq!(v, [5, 6]);
    let mut got = Vec::new();
    // The consumer's cached view still says 3: it takes those without
    // reloading the producer's index, then reloads once that is empty.
    assert_eq!(rx.try_pop_with(10, |x| got.push(x)), Ok(3));
    assert_eq!(rx.try_pop_with(10, |x| got.push(x)), Ok(1));
    assert_eq!(got, [1, 2, 3, 4]);
}

#[test]
fn consumer_reads_cached_view_first() {
    let (mut tx, mut rx) = ring::<u32>(8).unwrap();
    tx.send(1).unwrap();
    let mut out = Vec::new();
    // Seen 1 item: the next call takes it without reloading...
    assert_eq!(rx.len(), 1);
    tx.send(2).unwrap();
    assert_eq!(rx.cached_len(), 1);
    assert_eq!(rx.try_pop_batch(&mut out, 8), Ok(1));
    // ...and only reloads the producer's index once the cached view is empty.
    assert_eq!(rx.try_pop_batch(&mut out, 8), Ok(1));
    assert_eq!(out, [1, 2]);
}

#[test]
fn producer_close_lets_consumer_drain_first() {
    let (mut tx, mut rx) = ring::<u32>(8).unwrap();
    tx.push(1);
    tx.push(2);
    tx.close(); // publishes what it staged
    assert!(rx.is_closed());
    assert_eq!(rx.pop(), Ok(1));
    assert_eq!(rx.try_pop(), Ok(2));
    assert_eq!(rx.try_pop(), Err(TryPopError::Closed));
    assert_eq!(rx.pop(), Err(Closed));
    let mut out = Vec::new();
    assert_eq!(rx.pop_batch(&mut out, 4), Err(Closed));
    assert_eq!(rx.try_pop_batch(&mut out, 4), Err(Closed));
}

#[test]
fn producer_drop_closes() {
    let (tx, mut rx) = ring::<u32>(8).unwrap();
    drop(tx);
    assert_eq!(rx.pop(), Err(Closed));
}

#[test]
fn consumer_close_fails_the_producer_and_keeps_items() {
    let (mut tx, rx) = ring::<u32>(8).unwrap();
    drop(rx);
    assert!(tx.is_closed());
    assert!(matches!(tx.try_send(5), Err(TrySendError::Closed(5))));
    assert!(matches!(tx.send(6), Err(TrySendError::Closed(6))));
    let mut v = vec![1, 2, 3];
    assert_eq!(tx.push_batch(&mut v), Err(Closed));
    assert_eq!(v, [1, 2, 3]);
    tx.push(7);
    assert_eq!(tx.commit(), Err(Closed));
    assert_eq!(tx.take_staged(), [7]);
}

#[test]
fn items_left_in_the_ring_are_dropped_once() {
    let token = Arc::new(());
    {
        let (mut tx, mut rx) = ring::<Arc<()>>(8).unwrap();
        for _ in 0..6 {
            tx.push(Arc::clone(&token));
        }
        tx.commit().unwrap();
        let _one = rx.try_pop().unwrap();
        assert_eq!(Arc::strong_count(&token), 7);
    }
    assert_eq!(Arc::strong_count(&token), 1);
}

#[test]
fn pop_timeout_returns_zero_then_items() {
    let (mut tx, mut rx) = RingConfig::new(8)
        .spin(4)
        .sleep(1, Duration::from_micros(100))
        .build::<u32>()
        .unwrap();
    let mut out = Vec::new();
    let t = Instant::now();
    assert_eq!(
        rx.pop_batch_timeout(&mut out, 8, Duration::from_millis(20)),
        Ok(0)
    );
    assert!(t.elapsed() >= Duration::from_millis(20));
    tx.send(3).unwrap();
    assert_eq!(
        rx.pop_batch_timeout(&mut out, 8, Duration::from_millis(20)),
        Ok(1)
    );
    assert_eq!(out, [3]);
    assert_eq!(rx.pop_batch_timeout(&mut out, 0, Duration::ZERO), Ok(0));
    drop(tx);
    assert_eq!(
        rx.pop_batch_timeout(&mut out, 8, Duration::from_millis(20)),
        Err(Closed)
    );
}

#[test]
fn capacity_one_works() {
    let (mut tx, mut rx) = ring::<u32>(1).unwrap();
    let h = std::thread::spawn(move || {
        let mut v: Vec<u32> = (0..1000).collect();
        tx.push_batch(&mut v).unwrap();
    });
    let mut out = Vec::new();
    while out.len() < 1000 {
        rx.pop_batch(&mut out, 8).unwrap();
    }
    h.join().unwrap();
    assert_eq!(out, (0..1000).collect::<Vec<_>>());
    assert_eq!(rx.pop(), Err(Closed));
}
