//! Several forwarding threads on one switch: 100K packets of 1000 flows, each carrying
//! a per-flow sequence number, through two run-to-completion workers and through two
//! pipelined workers (ingress and egress threads joined by rings). The flows are spread
//! over the workers by a flow hash, as a NIC's RSS or a PACKET_FANOUT group would: no
//! packet may be lost, none reordered within its flow, and the per-port counters
//! summed over the workers must equal what was sent. Plus: recirculation, clones and a
//! configuration swap crossing the two stages of a pipelined worker.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use p4jet_control::cli::Cli;
use p4jet_switch::{PortCounters, Switch, SwitchConfig};

const PACKETS: u32 = 100_000;
const FLOWS: u32 = 1000;
const MAGIC: &[u8; 4] = b"P4MC";

fn corpus(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../tests/corpus/{name}/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// basic_l2 forwarding 00:00:00:00:00:02 to port 2.
fn switch() -> Switch {
    let json = corpus("basic_l2");
    let mut sw = Switch::new(&json, SwitchConfig::default()).unwrap();
    let mut cli = Cli::new(&json).unwrap();
    cli.execute(
        &mut sw,
        "table_add IngressImpl.dmac forward 00:00:00:00:00:02 => 2",
    )
    .unwrap();
    sw
}

/// IPv4/UDP from port 10000 + flow, payload: magic, flow, sequence number.
fn frame(flow: u32, seq: u32) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let payload_len = 12 + 18;
    let ip_len = 20 + 8 + payload_len;
    let mut ip = vec![
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        0,
        0,
        0,
        64,
        17,
        0,
        0,
    ];
    ip.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(&ip);
    let sport = 10000 + flow as u16;
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&7u16.to_be_bytes());
    f.extend_from_slice(&((8 + payload_len) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(MAGIC);
    f.extend_from_slice(&flow.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.resize(14 + ip_len, 0);
    f
}

fn parse(f: &[u8]) -> Option<(u32, u32)> {
    let p = f.get(42..54)?;
    if &p[..4] != MAGIC {
        return None;
    }
    Some((
        u32::from_be_bytes(p[4..8].try_into().ok()?),
        u32::from_be_bytes(p[8..12].try_into().ok()?),
    ))
}

/// The traffic: PACKETS frames, flows interleaved pseudo-randomly, sequence numbers
/// counting up per flow.
fn traffic() -> Vec<(u32, u32)> {
    let mut next = vec![0u32; FLOWS as usize];
    let mut x = 0x2545_f491u32;
    (0..PACKETS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let flow = x % FLOWS;
            let seq = next[flow as usize];
            next[flow as usize] += 1;
            (flow, seq)
        })
        .collect()
}

fn worker_of(flow: u32, workers: u32) -> usize {
    (flow.wrapping_mul(2_654_435_761) >> 7) as usize % workers as usize
}

/// Checks what came out: every packet once, in order within its flow.
fn check(sent: &[(u32, u32)], out: &[Vec<(u32, u32)>]) {
    let total: usize = out.iter().map(|o| o.len()).sum();
    assert_eq!(total, sent.len(), "packets lost or duplicated");
    let mut expect: HashMap<u32, u32> = HashMap::new();
    for o in out {
        for &(flow, seq) in o {
            let e = expect.entry(flow).or_insert(0);
            assert_eq!(seq, *e, "flow {flow}: got {seq}, expected {e}");
            *e += 1;
        }
    }
    let mut per_flow: HashMap<u32, u32> = HashMap::new();
    for &(flow, _) in sent {
        *per_flow.entry(flow).or_default() += 1;
    }
    assert_eq!(expect, per_flow);
}

fn sum(counters: &[Vec<PortCounters>]) -> Vec<PortCounters> {
    let mut t: Vec<PortCounters> = vec![];
    for c in counters {
        for (i, p) in c.iter().enumerate() {
            if t.len() <= i {
                t.resize(i + 1, PortCounters::default());
            }
            t[i].add(p);
        }
    }
    t
}

fn check_counters(c: &[PortCounters]) {
    assert_eq!(c[1].rx, PACKETS as u64, "rx of port 1");
    assert_eq!(c[2].tx, PACKETS as u64, "tx of port 2");
    assert_eq!(c.iter().map(|p| p.dropped()).sum::<u64>(), 0, "drops");
    assert_eq!(c.iter().map(|p| p.rx).sum::<u64>(), PACKETS as u64);
}

#[test]
fn two_rtc_workers_lose_and_reorder_nothing() {
    let sw = switch();
    let sent = traffic();
    let workers = 2u32;
    let mut outs = vec![];
    let mut counters = vec![];
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..workers as usize)
            .map(|k| {
                let mut w = sw.new_worker();
                let mine: Vec<(u32, u32)> = sent
                    .iter()
                    .copied()
                    .filter(|(f, _)| worker_of(*f, workers) == k)
                    .collect();
                s.spawn(move || {
                    let mut out = vec![];
                    // uneven bursts, as a NIC delivers them
                    for (i, chunk) in mine.chunks(7).enumerate() {
                        for &(flow, seq) in chunk {
                            w.inject(1, &frame(flow, seq));
                        }
                        if i % 5 == 4 {
                            w.step(&mut |p, f| {
                                assert_eq!(p, 2);
                                out.push(parse(f).unwrap());
                            });
                        }
                    }
                    w.run_until_idle(&mut |p, f| {
                        assert_eq!(p, 2);
                        out.push(parse(f).unwrap());
                    });
                    (out, w.core.ports.clone())
                })
            })
            .collect();
        for h in hs {
            let (o, c) = h.join().unwrap();
            assert!(!o.is_empty(), "a worker got no flow");
            outs.push(o);
            counters.push(c);
        }
    });
    check(&sent, &outs);
    check_counters(&sum(&counters));
}

#[test]
fn two_pipelined_workers_lose_and_reorder_nothing() {
    let sw = switch();
    let sent = traffic();
    let workers = 2u32;
    let mut outs = vec![];
    let mut counters = vec![];
    std::thread::scope(|s| {
        let mut hs = vec![];
        for k in 0..workers as usize {
            // a small ring, so that the ingress stage often finds it full
            let (mut ing, mut egr) = sw.new_pipeline(16);
            assert_eq!(ing.capacity(), 16);
            let mine: Vec<(u32, u32)> = sent
                .iter()
                .copied()
                .filter(|(f, _)| worker_of(*f, workers) == k)
                .collect();
            let he = s.spawn(move || {
                let mut out = vec![];
                egr.run(&mut |p, f| {
                    assert_eq!(p, 2);
                    out.push(parse(f).unwrap());
                });
                (out, egr.core().ports.clone())
            });
            let hi = s.spawn(move || {
                for chunk in mine.chunks(11) {
                    for &(flow, seq) in chunk {
                        ing.inject(1, &frame(flow, seq));
                    }
                    ing.step().unwrap();
                }
                ing.run_until_idle().unwrap();
                assert_eq!(ing.pending(), 0);
                let stats = ing.ring_stats();
                ing.close();
                (ing.core().ports.clone(), stats)
            });
            hs.push((hi, he));
        }
        for (hi, he) in hs {
            let (ci, stats) = hi.join().unwrap();
            let (o, ce) = he.join().unwrap();
            assert!(!o.is_empty());
            assert_eq!(stats.pushed, o.len() as u64);
            outs.push(o);
            counters.push(ci);
            counters.push(ce);
        }
    });
    check(&sent, &outs);
    check_counters(&sum(&counters));
}

/// recirc_resubmit's frame: `[resubmits, recirculations, out port, 0 * 5]` after an
/// 0x88B5 Ethernet header, then a payload carrying `id`.
fn recirc_frame(res: u8, rec: u8, port: u8, id: u32) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, 0x0b, 0, 0, 0, 0, 0, 0x0a, 0x88, 0xb5];
    f.extend_from_slice(&[res, rec, port, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&id.to_be_bytes());
    f.resize(60, 0x5a);
    f
}

/// 20K packets resubmitted 0-2 times and recirculated 0-3 times through a pipelined
/// worker with 4-slot rings (the recirculation ring is often full, so the egress
/// stage holds packets back): the same frames leave on the same ports as with the
/// single-threaded worker, each exactly once, with the pass counts of the corpus's
/// STF expectations.
#[test]
fn recirculation_crosses_the_stages_under_load() {
    let json = corpus("recirc_resubmit");
    let sw = Switch::new(&json, SwitchConfig::default()).unwrap();
    let n = 20_000u32;
    let frames: Vec<Vec<u8>> = (0..n)
        .map(|i| recirc_frame((i % 3) as u8, (i / 3 % 4) as u8, (i % 4) as u8, i))
        .collect();
    // single-threaded reference
    let mut reference: Vec<Vec<(u32, Vec<u8>)>> = vec![];
    let mut w = sw.new_worker();
    let mut out = vec![];
    for f in &frames {
        w.inject(0, f);
        if w.pending() >= 32 {
            w.step(&mut |p, f| out.push((p, f.to_vec())));
        }
    }
    w.run_until_idle(&mut |p, f| out.push((p, f.to_vec())));
    reference.push(out);
    // pipelined
    let (mut ing, mut egr) = sw.new_pipeline(4);
    let got = Mutex::new(vec![]);
    std::thread::scope(|s| {
        let got = &got;
        s.spawn(move || {
            egr.run(&mut |p, f| got.lock().unwrap().push((p, f.to_vec())));
        });
        for chunk in frames.chunks(32) {
            for f in chunk {
                ing.inject(0, f);
            }
            ing.step().unwrap();
        }
        ing.run_until_idle().unwrap();
        assert_eq!(ing.pending(), 0);
        ing.close();
    });
    assert!(ing.core().errors.is_empty(), "{:?}", ing.core().errors);
    let mut got = got.into_inner().unwrap();
    let mut want = reference.pop().unwrap();
    assert_eq!(got.len(), n as usize);
    for (p, f) in &want {
        let (res, rec, port) = (f[14], f[15], f[16]);
        assert_eq!(*p, port as u32);
        let itype = if rec > 0 {
            4
        } else if res > 0 {
            6
        } else {
            0
        };
        assert_eq!(&f[14..22], &[res, rec, port, rec + 1, res, rec, itype, 0]);
    }
    // packets recirculated a different number of times may overtake each other (in
    // both modes); the frames per port are the same
    got.sort();
    want.sort();
    assert!(
        got == want,
        "pipelined output differs from the single-threaded one"
    );
}

/// A configuration swap while a pipelined worker forwards one flow: every packet is
/// forwarded by exactly one program, the old program's packets (port 1) are a prefix
/// of the flow and the new one's (port 2) the rest, nothing is lost, and both stages
/// end on the new program.
#[test]
fn swap_while_a_pipelined_worker_forwards() {
    let json = corpus("basic_l2");
    let cfg = SwitchConfig {
        enable_swap: true,
        ..SwitchConfig::default()
    };
    let mut sw = Switch::new(&json, cfg).unwrap();
    let mut cli = Cli::new(&json).unwrap();
    cli.execute(
        &mut sw,
        "table_add IngressImpl.dmac forward 00:00:00:00:00:02 => 1",
    )
    .unwrap();
    let (mut ing, mut egr) = sw.new_pipeline(64);
    let n = 30_000u32;
    let got = Mutex::new(vec![]);
    let started = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let got = &got;
        let started = &started;
        let he = s.spawn(move || {
            egr.run(&mut |p, f| got.lock().unwrap().push((p, parse(f).unwrap().1)));
            egr
        });
        let hi = s.spawn(move || {
            for i in 0..n {
                ing.inject(1, &frame(0, i));
                if i % 16 == 15 {
                    ing.step().unwrap();
                }
                if i == n / 10 {
                    started.store(true, std::sync::atomic::Ordering::Release);
                }
                if i % 1000 == 999 {
                    // leave the swap a chance to land mid-stream
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            ing.run_until_idle().unwrap();
            // the swap may have come after the last packet: let it land
            while ing.generation() == 0 {
                ing.step().unwrap();
                std::thread::yield_now();
            }
            ing.close();
            ing
        });
        while !started.load(std::sync::atomic::Ordering::Acquire) {
            std::thread::yield_now();
        }
        sw.load_new_config(&json).unwrap();
        cli.execute(
            &mut sw,
            "table_add IngressImpl.dmac forward 00:00:00:00:00:02 => 2",
        )
        .unwrap();
        sw.swap_configs().unwrap();
        let ing = hi.join().unwrap();
        let egr = he.join().unwrap();
        assert_eq!(ing.generation(), 1);
        assert!(egr.core().errors.is_empty(), "{:?}", egr.core().errors);
    });
    let got = got.into_inner().unwrap();
    assert_eq!(got.len(), n as usize, "packets lost");
    let old = got.iter().filter(|(p, _)| *p == 1).count();
    assert!(old > 0, "the swap came before the first packet");
    for (i, (p, seq)) in got.iter().enumerate() {
        assert_eq!(*seq, i as u32, "reordered");
        assert_eq!(*p, if i < old { 1 } else { 2 }, "packet {i}");
    }
}
