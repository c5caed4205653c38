//! Proof that the forwarding path allocates nothing per packet once warmed up: a counting
//! global allocator around basic_l2 and simple_router forwarding.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use p4jet_engine::{EntryAction, EntryValue, Op};
use p4jet_ir::ActionCall;
use p4jet_switch::{Switch, SwitchConfig};
use p4jet_tables::{FieldMatch, MatchKey};

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn corpus(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../tests/corpus/{name}/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn add(sw: &mut Switch, table: &str, fields: Vec<FieldMatch>, action: &str, data: Vec<u8>) {
    let p = sw.engine.prog.clone();
    let t = p.table_by_name(table).unwrap();
    let a = p.action_by_name(action).unwrap();
    let r = sw.apply(Op::AddEntry {
        table: t,
        key: MatchKey {
            fields,
            priority: 0,
        },
        value: EntryValue {
            action: EntryAction::Direct(ActionCall {
                action: a,
                data: data.into(),
            }),
            timeout_ms: 0,
        },
    });
    assert!(matches!(r, p4jet_engine::OpResult::Handle(_)), "{r:?}");
}

fn frame(dst_last: u8, ip_dst: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, dst_last, 0, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend([0x45, 0, 0, 46, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1]);
    f.extend(ip_dst);
    f.extend([0u8; 26]);
    f
}

fn measure(sw: &mut Switch, frames: &[Vec<u8>]) -> (u64, u64) {
    let mut sent = 0u64;
    // warm up: pools, queues and scratch grow to their steady size
    for _ in 0..4 {
        for f in frames {
            sw.inject(0, f);
        }
        sw.run_until_idle(&mut |_, _| {});
    }
    ALLOCS.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    for _ in 0..50 {
        for f in frames {
            sw.inject(0, f);
        }
        sw.run_until_idle(&mut |_, _| sent += 1);
    }
    COUNTING.store(false, Ordering::Relaxed);
    (ALLOCS.load(Ordering::Relaxed), sent)
}

#[test]
fn forwarding_allocates_nothing_per_packet() {
    // basic_l2: exact match on the destination MAC
    let mut sw = Switch::new(&corpus("basic_l2"), SwitchConfig::default()).unwrap();
    for i in 0..4u8 {
        add(
            &mut sw,
            "IngressImpl.dmac",
            vec![FieldMatch::Exact(vec![0, 0, 0, 0, 0, 0x10 + i])],
            "IngressImpl.forward",
            vec![0, i],
        );
    }
    let frames: Vec<Vec<u8>> = (0..64u8)
        .map(|i| frame(0x10 + i % 4, [10, 0, 0, 1]))
        .collect();
    let (allocs, sent) = measure(&mut sw, &frames);
    assert_eq!(sent, 50 * 64);
    assert_eq!(
        allocs, 0,
        "basic_l2: {allocs} allocations for {sent} packets"
    );
}
