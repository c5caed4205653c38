//! 100K table writes while traffic flows through the engine.
//!
//! A forwarding thread owns a `Worker` (its own wait-free reader of the control
//! state) and replays frames as fast as it can; the test thread writes through the
//! runtime API of the `Switch` behind the mutex the Thrift server would use.
//!
//! * Phase 1: the writes (adds, modifies, deletes) touch keys the traffic does not
//!   use: every frame must leave on its port, none lost.
//! * Phase 2: the writes add, then modify, the very entries the traffic hits. Each
//!   batch must see one state that is a prefix of the write sequence (no batch sees a
//!   later write without an earlier one), and no key may go back to an older state.
//! * Phase 3: 10K adds through the Thrift server, for the write rate over the wire.
//!
//! Prints the longest `step()` of the worker (its stall) without and with writes, and
//! the write rates (docs/control-plane.md quotes them). `P4JET_LIVE_WRITES=N` changes
//! the number of phase-1 writes.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::corpus_json;
use p4jet_switch::{Switch, SwitchConfig, Worker};
use p4jet_thrift::Bmv2;
use p4jet_thrift::types::{BmAddEntryOptions, BmMatchParam};
use p4jet_thrift::{ServerConfig, ServerHandle, SharedRuntime, ThriftClient};

const TABLE: &str = "IngressImpl.dmac";
const FORWARD: &str = "IngressImpl.forward";
const BATCH: usize = 32;

fn mac(class: u8, i: u32) -> [u8; 6] {
    let b = i.to_be_bytes();
    [class, 0, b[0], b[1], b[2], b[3]]
}

fn key(class: u8, i: u32) -> Vec<BmMatchParam> {
    vec![BmMatchParam::Exact {
        key: mac(class, i).to_vec(),
    }]
}

fn port_data(p: u16) -> Vec<Vec<u8>> {
    vec![p.to_be_bytes().to_vec()]
}

fn add(sw: &Mutex<Switch>, class: u8, i: u32, port: u16) -> i32 {
    Bmv2::new(&mut *sw.lock().unwrap())
        .bm_mt_add_entry(
            TABLE,
            &key(class, i),
            FORWARD,
            &port_data(port),
            BmAddEntryOptions::default(),
        )
        .unwrap()
}

/// Frame for traffic key `k` of class `class`, carrying `seq`.
fn frame(class: u8, k: u32, seq: u64) -> Vec<u8> {
    let mut f = mac(class, k).to_vec();
    f.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0x88, 0xb5]);
    f.extend_from_slice(&seq.to_be_bytes());
    f.resize(60, 0);
    f
}

fn parse(f: &[u8]) -> (u32, u64) {
    let k = u32::from_be_bytes([f[2], f[3], f[4], f[5]]);
    let seq = u64::from_be_bytes(f[14..22].try_into().unwrap());
    (k, seq)
}

/// What the forwarding thread saw.
#[derive(Default, Debug)]
struct Seen {
    injected: u64,
    sent: u64,
    longest_step: Duration,
    /// Longest step before the writes started.
    longest_quiet: Duration,
    steps: u64,
    step_time: Duration,
    /// Step durations (ns) while writes were made.
    during: Vec<u64>,
    /// Problems (mis-forwarded, lost, inconsistent).
    problems: Vec<String>,
}

/// Replays `nkeys` keys of `class` in batches until `stop`; `check` gets, per batch,
/// the keys injected and the (key, port) of every frame sent, and reports problems.
fn forward_loop(
    mut w: Worker,
    class: u8,
    nkeys: u32,
    stop: Arc<AtomicBool>,
    writing: Arc<AtomicBool>,
    mut check: impl FnMut(&[u32], &[(u32, u32)], &mut Vec<String>) + Send,
) -> Seen {
    let mut s = Seen::default();
    let mut seq = 0u64;
    let mut next_key = 0u32;
    let mut sent: Vec<(u32, u32)> = Vec::with_capacity(BATCH * 2);
    let mut keys: Vec<u32> = Vec::with_capacity(BATCH);
    // one more round after `stop`, so the last writes are seen
    let mut last = false;
    loop {
        if stop.load(Ordering::Acquire) {
            if last {
                break;
            }
            last = true;
        }
        keys.clear();
        let mut seqs = Vec::with_capacity(BATCH);
        for _ in 0..BATCH {
            let k = next_key % nkeys;
            next_key = next_key.wrapping_add(1);
            w.inject(0, &frame(class, k, seq));
            keys.push(k);
            seqs.push(seq);
            seq += 1;
        }
        s.injected += BATCH as u64;
        sent.clear();
        let mut bad_seq = None;
        while w.pending() > 0 {
            let t = Instant::now();
            w.step(&mut |port, f| {
                let (k, q) = parse(f);
                if !seqs.contains(&q) {
                    bad_seq = Some(q);
                }
                sent.push((k, port));
            });
            let d = t.elapsed();
            if writing.load(Ordering::Relaxed) {
                s.steps += 1;
                s.step_time += d;
                s.longest_step = s.longest_step.max(d);
                s.during.push(d.as_nanos() as u64);
            } else {
                s.longest_quiet = s.longest_quiet.max(d);
            }
        }
        if let Some(q) = bad_seq {
            s.problems.push(format!("frame seq {q} from another batch"));
        }
        s.sent += sent.len() as u64;
        check(&keys, &sent, &mut s.problems);
        if s.problems.len() > 20 {
            break;
        }
    }
    s
}

fn report(label: &str, s: &mut Seen, writes: u64, took: Duration) {
    let mean = s
        .step_time
        .checked_div(s.steps.max(1) as u32)
        .unwrap_or_default();
    s.during.sort_unstable();
    let pct = |p: f64| {
        let i = ((s.during.len() as f64 * p) as usize).min(s.during.len().saturating_sub(1));
        s.during.get(i).copied().unwrap_or(0) as f64 / 1e3
    };
    println!(
        "{label}: {writes} writes in {:.2} s = {:.0} writes/s; traffic {} frames in, {} out; \
         worker step ({BATCH} frames) during writes: mean {:.1} us, p99 {:.1} us, p99.9 {:.1} us, \
         longest {:.1} us (longest before the writes: {:.1} us)",
        took.as_secs_f64(),
        writes as f64 / took.as_secs_f64().max(1e-9),
        s.injected,
        s.sent,
        mean.as_secs_f64() * 1e6,
        pct(0.99),
        pct(0.999),
        s.longest_step.as_secs_f64() * 1e6,
        s.longest_quiet.as_secs_f64() * 1e6,
    );
}

#[test]
fn table_writes_while_traffic_flows() {
    let json = std::fs::read_to_string(corpus_json("l2_large")).unwrap();
    let sw = Arc::new(Mutex::new(
        Switch::new(&json, SwitchConfig::default()).unwrap(),
    ));
    let nwrites: u32 = std::env::var("P4JET_LIVE_WRITES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);

    // ---------------------------------------------------------------- phase 1
    const TRAFFIC: u8 = 0x0a;
    const OTHER: u8 = 0x0b;
    let nkeys = 64u32;
    for k in 0..nkeys {
        add(&sw, TRAFFIC, k, (k % 4) as u16);
    }
    let worker = sw.lock().unwrap().new_worker();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let writing = Arc::new(AtomicBool::new(false));
    let wr = writing.clone();
    let fwd = std::thread::spawn(move || {
        forward_loop(
            worker,
            TRAFFIC,
            nkeys,
            st,
            wr,
            move |keys, sent, problems| {
                if sent.len() != keys.len() {
                    problems.push(format!("{} frames in, {} out", keys.len(), sent.len()));
                }
                for (k, port) in sent {
                    if *port != k % 4 {
                        problems.push(format!("key {k} sent to port {port}, not {}", k % 4));
                    }
                }
            },
        )
    });
    // quiet period: the worker's stalls without writes
    std::thread::sleep(Duration::from_millis(300));
    writing.store(true, Ordering::Relaxed);
    let t = Instant::now();
    let adds = nwrites * 6 / 10;
    let mods = nwrites * 2 / 10;
    let dels = nwrites - adds - mods;
    let mut handles = Vec::with_capacity(adds as usize);
    for i in 0..adds {
        handles.push(add(&sw, OTHER, i, (i % 7) as u16));
    }
    for i in 0..mods {
        let h = handles[(i % adds) as usize];
        Bmv2::new(&mut *sw.lock().unwrap())
            .bm_mt_modify_entry(TABLE, h, FORWARD, &port_data((i % 5) as u16))
            .unwrap();
    }
    for i in 0..dels {
        let h = handles[(i % adds) as usize];
        Bmv2::new(&mut *sw.lock().unwrap())
            .bm_mt_delete_entry(TABLE, h)
            .unwrap();
    }
    let took1 = t.elapsed();
    stop.store(true, Ordering::Release);
    let mut seen1 = fwd.join().unwrap();
    report("phase 1 (other keys)", &mut seen1, nwrites as u64, took1);
    assert!(seen1.problems.is_empty(), "{:#?}", seen1.problems);
    assert_eq!(seen1.injected, seen1.sent, "no frame lost");
    assert!(seen1.injected > 0);
    assert_eq!(
        Bmv2::new(&mut *sw.lock().unwrap())
            .bm_mt_get_num_entries(TABLE)
            .unwrap(),
        (nkeys + adds - dels) as i64
    );

    // ---------------------------------------------------------------- phase 2
    // Keys of class 0x0c are added in a scrambled order to port 1 + k % 3, then
    // modified in another order to port 5 + k % 2. Every batch must see a prefix of
    // that write sequence.
    const LIVE: u8 = 0x0c;
    let n2 = 2000u32;
    let add_order: Vec<u32> = (0..n2).map(|i| (i * 7919) % n2).collect();
    let mod_order: Vec<u32> = (0..n2).map(|i| (i * 104_729 + 13) % n2).collect();
    let mut add_pos = vec![0u32; n2 as usize];
    let mut mod_pos = vec![0u32; n2 as usize];
    for (i, k) in add_order.iter().enumerate() {
        add_pos[*k as usize] = i as u32;
    }
    for (i, k) in mod_order.iter().enumerate() {
        mod_pos[*k as usize] = i as u32;
    }
    let before = |k: u32| 1 + k % 3;
    let after = |k: u32| 5 + k % 2;
    let worker = sw.lock().unwrap().new_worker();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let writing = Arc::new(AtomicBool::new(false));
    let wr = writing.clone();
    let fwd = std::thread::spawn(move || {
        // per key: 0 never sent, 1 sent with the added entry, 2 with the modified one
        let mut state = vec![0u8; n2 as usize];
        forward_loop(worker, LIVE, n2, st, wr, move |keys, sent, problems| {
            let mut max_added = None::<u32>;
            let mut min_missing = None::<u32>;
            let mut max_modified = None::<u32>;
            let mut min_unmodified = None::<u32>;
            let mut got = std::collections::HashSet::new();
            for (k, port) in sent {
                got.insert(*k);
                let ks = *k as usize;
                let (now, what) = if *port == before(*k) {
                    (1, &mut min_unmodified)
                } else if *port == after(*k) {
                    (2, &mut max_modified)
                } else {
                    problems.push(format!("key {k} sent to port {port}"));
                    continue;
                };
                if now == 1 {
                    *what = Some(what.map_or(mod_pos[ks], |m: u32| m.min(mod_pos[ks])));
                } else {
                    *what = Some(what.map_or(mod_pos[ks], |m: u32| m.max(mod_pos[ks])));
                }
                max_added = Some(max_added.map_or(add_pos[ks], |m| m.max(add_pos[ks])));
                if now < state[ks] {
                    problems.push(format!("key {k} went back to an older entry"));
                }
                state[ks] = now;
            }
            for k in keys {
                if !got.contains(k) {
                    let ks = *k as usize;
                    if state[ks] > 0 {
                        problems.push(format!("key {k} dropped after it was forwarded"));
                    }
                    min_missing = Some(min_missing.map_or(add_pos[ks], |m| m.min(add_pos[ks])));
                }
            }
            if let (Some(a), Some(m)) = (max_added, min_missing)
                && a > m
            {
                problems.push(format!(
                    "a batch saw add #{a} but not add #{m}: not a consistent state"
                ));
            }
            if let (Some(a), Some(m)) = (max_modified, min_unmodified)
                && a > m
            {
                problems.push(format!(
                    "a batch saw modify #{a} but not modify #{m}: not a consistent state"
                ));
            }
        })
    });
    std::thread::sleep(Duration::from_millis(50));
    writing.store(true, Ordering::Relaxed);
    let t = Instant::now();
    let mut live_handles = vec![0i32; n2 as usize];
    for &k in &add_order {
        live_handles[k as usize] = add(&sw, LIVE, k, before(k) as u16);
    }
    for &k in &mod_order {
        Bmv2::new(&mut *sw.lock().unwrap())
            .bm_mt_modify_entry(
                TABLE,
                live_handles[k as usize],
                FORWARD,
                &port_data(after(k) as u16),
            )
            .unwrap();
    }
    let took2 = t.elapsed();
    // let the traffic see the final state for a moment
    std::thread::sleep(Duration::from_millis(50));
    stop.store(true, Ordering::Release);
    let mut seen2 = fwd.join().unwrap();
    report("phase 2 (keys in use)", &mut seen2, 2 * n2 as u64, took2);
    assert!(seen2.problems.is_empty(), "{:#?}", seen2.problems);
    assert!(seen2.sent > 0);

    // ---------------------------------------------------------------- phase 3
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let api: SharedRuntime = sw.clone();
    let server = ServerHandle::spawn(listener, api, ServerConfig::default()).unwrap();
    let mut c = ThriftClient::connect(server.local_addr()).unwrap();
    let worker = sw.lock().unwrap().new_worker();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let writing = Arc::new(AtomicBool::new(false));
    let wr = writing.clone();
    let fwd = std::thread::spawn(move || {
        forward_loop(
            worker,
            TRAFFIC,
            nkeys,
            st,
            wr,
            move |keys, sent, problems| {
                if sent.len() != keys.len() {
                    problems.push(format!("{} frames in, {} out", keys.len(), sent.len()));
                }
            },
        )
    });
    std::thread::sleep(Duration::from_millis(300));
    let n3 = 10_000u32;
    writing.store(true, Ordering::Relaxed);
    let t = Instant::now();
    for i in 0..n3 {
        c.bm_mt_add_entry(
            TABLE,
            &key(0x0d, i),
            FORWARD,
            &port_data(3),
            BmAddEntryOptions::default(),
        )
        .unwrap();
    }
    let took3 = t.elapsed();
    std::thread::sleep(Duration::from_millis(50));
    stop.store(true, Ordering::Release);
    let mut seen3 = fwd.join().unwrap();
    report("phase 3 (Thrift adds)", &mut seen3, n3 as u64, took3);
    assert!(seen3.problems.is_empty(), "{:#?}", seen3.problems);
    server.stop().unwrap();
}
