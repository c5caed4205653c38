//! `set_queue_rate`: egress queues release their packets at most at the configured rate
//! (packets per second, per queue), as simple_switch's `QueueingLogicPriRL`: a packet
//! enqueued at `t` leaves at `max(t, previous departure + 1 s / rate)`, the first one
//! of a new queue one interval after it arrives; rate 0 is no limit. The queueing
//! metadata egress reads (enq_timestamp, enq_qdepth, deq_timedelta, deq_qdepth) show
//! the pacing delay. (deq_qdepth is what is left in the queue once the packets leaving
//! together, in one batch, are taken: see docs/v1model.md.)
//!
//! The program is `programs/v1model_rules.json` with its egress observation action
//! extended to record the queueing metadata in the `obs` header (in place of fields
//! these tests do not need): eg_packet_length := deq_timedelta, ig_packet_length :=
//! enq_timestamp, eg_rid := deq_qdepth, eg_mcast_grp := enq_qdepth.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use p4jet_control::cli::Cli;
use p4jet_switch::{Switch, SwitchConfig};
use serde_json::{Value, json};

const RULES: &str = include_str!("programs/v1model_rules.json");

const CTL_OFF: usize = 14;
const OBS_OFF: usize = CTL_OFF + 20;
const EG_OFF: usize = OBS_OFF + 12;
const FRAME_LEN: usize = EG_OFF + 21 + 8;

/// The rules program, recording the queueing metadata.
fn program() -> String {
    let mut j: Value = serde_json::from_str(RULES).unwrap();
    let field = |h: &str, f: &str| json!({"type": "field", "value": [h, f]});
    let low16 = |f: &str| {
        json!({"type": "expression", "value": {"type": "expression", "value": {
            "op": "&", "left": field("standard_metadata", f),
            "right": {"type": "hexstr", "value": "0xffff"}}}})
    };
    let assign =
        |dst: &str, src: Value| json!({"op": "assign", "parameters": [field("obs", dst), src]});
    let actions = j["actions"].as_array_mut().unwrap();
    let observe = actions
        .iter_mut()
        .find(|a| a["name"] == "v1model_rules_observe_egress")
        .unwrap();
    let prims = observe["primitives"].as_array_mut().unwrap();
    prims.push(assign(
        "eg_packet_length",
        field("standard_metadata", "deq_timedelta"),
    ));
    prims.push(assign(
        "ig_packet_length",
        field("standard_metadata", "enq_timestamp"),
    ));
    prims.push(assign("eg_rid", low16("deq_qdepth")));
    prims.push(assign("eg_mcast_grp", low16("enq_qdepth")));
    j.to_string()
}

/// A frame from `src` to port `out` with priority `prio`.
fn frame(src: u8, out: u16, prio: u8) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, src, 0x88, 0xb5];
    f.resize(FRAME_LEN, 0);
    f[CTL_OFF + 10..CTL_OFF + 12].copy_from_slice(&out.to_be_bytes());
    f[CTL_OFF + 14] = prio;
    f
}

/// What egress recorded of the queue a frame went through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Q {
    /// The frame's source tag.
    src: u8,
    enq_timestamp: u32,
    enq_qdepth: u16,
    deq_timedelta: u32,
    deq_qdepth: u16,
}

fn q(src: u8, enq_timestamp: u32, enq_qdepth: u16, deq_timedelta: u32, deq_qdepth: u16) -> Q {
    Q {
        src,
        enq_timestamp,
        enq_qdepth,
        deq_timedelta,
        deq_qdepth,
    }
}

fn decode(f: &[u8]) -> Q {
    let be32 = |o: usize| u32::from_be_bytes([f[o], f[o + 1], f[o + 2], f[o + 3]]);
    let be16 = |o: usize| u16::from_be_bytes([f[o], f[o + 1]]);
    Q {
        src: f[11],
        enq_timestamp: be32(OBS_OFF + 4),
        deq_timedelta: be32(EG_OFF + 12),
        deq_qdepth: be16(EG_OFF + 8),
        enq_qdepth: be16(EG_OFF + 10),
    }
}

struct Rig {
    sw: Switch,
    clock: Arc<AtomicU64>,
}

fn rig(priority_queues: u32, commands: &[&str]) -> Rig {
    let clock = Arc::new(AtomicU64::new(0));
    let json = program();
    let cfg = SwitchConfig {
        manual_clock: Some(clock.clone()),
        priority_queues,
        ..SwitchConfig::default()
    };
    let mut sw = Switch::new(&json, cfg).unwrap();
    let mut cli = Cli::new(&json).unwrap();
    for c in commands {
        cli.execute(&mut sw, c)
            .unwrap_or_else(|e| panic!("{c}: {e:?}"));
    }
    Rig { sw, clock }
}

impl Rig {
    fn inject(&mut self, frames: &[(u8, u16, u8)]) {
        for &(src, out, prio) in frames {
            self.sw.inject(6, &frame(src, out, prio));
        }
    }

    /// Sets the clock to `us` and runs until idle: what left, per port.
    fn at(&mut self, us: u64) -> Vec<(u32, Q)> {
        self.clock.store(us, Ordering::Relaxed);
        let mut out = vec![];
        self.sw.run_until_idle(&mut |p, f| out.push((p, decode(f))));
        out
    }
}

#[test]
fn n_packets_at_rate_r_leave_one_interval_apart() {
    // 1000 packets/s on port 2: one per millisecond
    let mut r = rig(1, &["set_queue_rate 1000 2"]);
    r.inject(&[
        (0, 2, 0),
        (1, 2, 0),
        (2, 2, 0),
        (3, 2, 0),
        (4, 3, 0),
        (5, 3, 0),
    ]);
    // port 3 has no rate: at once; port 2's queue holds its four packets
    assert_eq!(r.at(0), vec![(3, q(4, 0, 0, 0, 0)), (3, q(5, 0, 1, 0, 0))]);
    assert_eq!(r.sw.worker.pending(), 4);
    assert_eq!(r.sw.next_due_us(), Some(1000));
    assert_eq!(r.at(999), vec![]);
    // each leaves at its departure time; deq_timedelta is the pacing delay,
    // deq_qdepth what is left behind it
    assert_eq!(r.at(1000), vec![(2, q(0, 0, 0, 1000, 3))]);
    assert_eq!(r.sw.next_due_us(), Some(2000));
    assert_eq!(r.at(2000), vec![(2, q(1, 0, 1, 2000, 2))]);
    // late: what is due leaves together, in order
    assert_eq!(
        r.at(4500),
        vec![(2, q(2, 0, 2, 4500, 0)), (2, q(3, 0, 3, 4500, 0))]
    );
    assert_eq!(r.sw.worker.pending(), 0);
    assert_eq!(r.sw.next_due_us(), None);
    // after a gap longer than the interval the next packet leaves at once, the one
    // after it an interval later
    r.clock.store(10_000, Ordering::Relaxed);
    r.inject(&[(6, 2, 0), (7, 2, 0)]);
    assert_eq!(r.at(10_000), vec![(2, q(6, 10_000, 0, 0, 1))]);
    assert_eq!(r.at(11_000), vec![(2, q(7, 10_000, 1, 1000, 0))]);
}

#[test]
fn rate_for_all_queues_one_queue_and_zero_for_none() {
    // 500/s everywhere (2 ms apart), then port 3 unlimited again with rate 0
    let mut r = rig(1, &["set_queue_rate 500", "set_queue_rate 0 3"]);
    r.inject(&[(0, 2, 0), (1, 4, 0), (2, 3, 0), (3, 2, 0)]);
    assert_eq!(r.at(0), vec![(3, q(2, 0, 0, 0, 0))]);
    assert_eq!(r.sw.next_due_us(), Some(2000));
    // ports 2 and 4 have queues of their own, each paced
    let out = r.at(2000);
    assert_eq!(
        out,
        vec![(2, q(0, 0, 0, 2000, 1)), (4, q(1, 0, 0, 2000, 0))]
    );
    assert_eq!(r.at(4000), vec![(2, q(3, 0, 1, 4000, 0))]);
    // rate 0 for all: no limit anywhere, the fast path again
    let mut r = rig(1, &["set_queue_rate 500", "set_queue_rate 0"]);
    r.inject(&[(0, 2, 0), (1, 2, 0)]);
    assert_eq!(r.at(0), vec![(2, q(0, 0, 0, 0, 0)), (2, q(1, 0, 0, 0, 0))]);
}

#[test]
fn a_priority_queue_rate_paces_that_queue_only() {
    // two queues per port; the CLI's priority is simple_switch's internal queue index,
    // packets of priority p use queue nqueues - 1 - p: this paces priority 1 of port 2
    let mut r = rig(2, &["set_queue_rate 1000 2 0"]);
    r.inject(&[(0, 2, 1), (1, 2, 1), (2, 2, 0), (3, 2, 0)]);
    // the high priority queue is not due: the low one is served meanwhile
    assert_eq!(r.at(0), vec![(2, q(2, 0, 0, 0, 0)), (2, q(3, 0, 1, 0, 0))]);
    assert_eq!(r.at(1000), vec![(2, q(0, 0, 0, 1000, 1))]);
    assert_eq!(r.at(2000), vec![(2, q(1, 0, 1, 2000, 0))]);
    // a priority beyond the queues is refused as by simple_switch_CLI
    let json = program();
    let mut sw = Switch::new(&json, SwitchConfig::default()).unwrap();
    let mut cli = Cli::new(&json).unwrap();
    assert!(cli.execute(&mut sw, "set_queue_rate 1000 2 1").is_err());
    // and the other queue index paces priority 0, leaving priority 1 alone
    let mut r = rig(2, &["set_queue_rate 1000 2 1"]);
    r.inject(&[(0, 2, 0), (1, 2, 1)]);
    assert_eq!(r.at(0), vec![(2, q(1, 0, 0, 0, 0))]);
    assert_eq!(r.at(1000), vec![(2, q(0, 0, 0, 1000, 0))]);
}

#[test]
fn queue_depth_and_rate_together() {
    let mut r = rig(1, &["set_queue_rate 1000 2", "set_queue_depth 2 2"]);
    r.inject(&[(0, 2, 0), (1, 2, 0), (2, 2, 0), (3, 2, 0)]);
    assert_eq!(r.at(0), vec![]);
    assert_eq!(r.sw.worker.pending(), 2, "two tail-dropped");
    // reported once, counted per packet
    assert_eq!(r.sw.worker.core.errors.len(), 1);
    let b = r.sw.balance();
    assert_eq!(b.drops()[p4jet_switch::DropReason::QueueFull.index()], 2);
    assert_eq!(
        b.ports[2].drops[p4jet_switch::DropReason::QueueFull.index()],
        2
    );
    assert!(b.holds(), "{}", b.equation());
    assert_eq!(r.at(1000), vec![(2, q(0, 0, 0, 1000, 1))]);
    // room for one more while the second waits
    r.inject(&[(4, 2, 0)]);
    assert_eq!(r.at(1000), vec![]);
    assert_eq!(
        r.at(3000),
        vec![(2, q(1, 0, 1, 3000, 0)), (2, q(4, 1000, 1, 2000, 0))]
    );
}

#[test]
fn without_a_rate_nothing_waits() {
    let mut r = rig(1, &["set_queue_depth 8"]);
    r.inject(&[(0, 2, 0), (1, 2, 0), (2, 3, 0)]);
    let out = r.at(0);
    assert_eq!(
        out,
        vec![
            (2, q(0, 0, 0, 0, 0)),
            (3, q(2, 0, 0, 0, 0)),
            (2, q(1, 0, 1, 0, 0))
        ]
    );
    assert_eq!(r.sw.next_due_us(), None);
    let mut r = rig(1, &[]);
    r.inject(&[(0, 2, 0), (1, 2, 0)]);
    assert_eq!(r.at(0), vec![(2, q(0, 0, 0, 0, 0)), (2, q(1, 0, 0, 0, 0))]);
}

#[test]
fn with_the_real_clock_run_until_idle_waits_for_departures() {
    let json = program();
    let mut sw = Switch::new(&json, SwitchConfig::default()).unwrap();
    let mut cli = Cli::new(&json).unwrap();
    // 2000/s: 500 µs apart
    cli.execute(&mut sw, "set_queue_rate 2000 2").unwrap();
    let t0 = Instant::now();
    for i in 0..5 {
        sw.inject(6, &frame(i, 2, 0));
    }
    let mut out = vec![];
    sw.run_until_idle(&mut |p, f| out.push((p, decode(f))));
    let took = t0.elapsed();
    assert_eq!(out.len(), 5);
    assert!(took >= Duration::from_micros(2500), "{took:?}");
    let srcs: Vec<u8> = out.iter().map(|(_, q)| q.src).collect();
    assert_eq!(srcs, vec![0, 1, 2, 3, 4]);
    for (i, (_, q)) in out.iter().enumerate() {
        let at_least = 500 * (i as u32 + 1);
        assert!(q.deq_timedelta >= at_least - 1, "{i}: {q:?}");
    }
}

#[test]
fn a_pipelined_worker_paces_too_and_never_hangs() {
    let r = rig(1, &["set_queue_rate 1000 2"]);
    let (mut ingress, mut egress) = r.sw.new_pipeline(16);
    let sent = Arc::new(std::sync::Mutex::new(vec![]));
    let s2 = sent.clone();
    let h = std::thread::spawn(move || {
        egress.run(&mut |p, f| s2.lock().unwrap().push((p, decode(f))));
    });
    for i in 0..3 {
        ingress.inject(6, &frame(i, 2, 0));
    }
    ingress.inject(6, &frame(9, 3, 0));
    // with the manual clock held, run_until_idle returns with the paced packets queued
    ingress.run_until_idle().unwrap();
    assert_eq!(ingress.pending(), 3);
    assert_eq!(ingress.next_due_us(), Some(1000));
    let mut t = 0;
    while let Some(due) = ingress.next_due_us() {
        assert!(due > t);
        t = due;
        r.clock.store(due, Ordering::Relaxed);
        ingress.run_until_idle().unwrap();
    }
    assert_eq!(ingress.pending(), 0);
    ingress.close();
    h.join().unwrap();
    let sent = sent.lock().unwrap().clone();
    assert_eq!(
        sent,
        vec![
            (3, q(9, 0, 0, 0, 0)),
            (2, q(0, 0, 0, 1000, 2)),
            (2, q(1, 0, 1, 2000, 1)),
            (2, q(2, 0, 2, 3000, 0)),
        ]
    );
}

#[test]
fn the_ingress_timestamp_is_the_turns_time_when_the_caller_read_it() {
    // a real clock: the time a forwarding loop read for its turn (here one far in the
    // future, which the clock could not give) stamps the next ingress batch, and only
    // that one
    let json = program();
    let mut sw = Switch::new(&json, SwitchConfig::default()).unwrap();
    let stamp = |sw: &mut Switch| {
        sw.inject(6, &frame(0, 3, 0));
        let mut out = vec![];
        sw.run_until_idle(&mut |p, f| out.push((p, decode(f))));
        assert_eq!(out.len(), 1, "{out:?}");
        out[0].1.enq_timestamp
    };
    sw.worker
        .core
        .mark_rx_at(Instant::now() + Duration::from_secs(30));
    let turn = stamp(&mut sw);
    assert!((30_000_000..31_000_000).contains(&turn), "{turn}");
    let later = stamp(&mut sw);
    assert!(later < 1_000_000, "{later}");
}
