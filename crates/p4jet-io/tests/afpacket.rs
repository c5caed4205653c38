//! AF_PACKET port over a veth pair into a network namespace.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::*;
use p4jet_io::{AfPacketOptions, AfPacketPort, Fanout, Port, PortKind};

/// Receives from `port` until `want` frames with `marker` arrived or timeout.
pub fn port_recv(
    port: &mut dyn Port,
    want: usize,
    timeout: Duration,
    keep: impl Fn(&[u8]) -> bool,
) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + timeout;
    let mut got = Vec::new();
    while got.len() < want && Instant::now() < deadline {
        port.recv_batch(64, Some(Duration::from_millis(20)), &mut |f| {
            if keep(f) {
                got.push(f.to_vec())
            }
        })
        .unwrap();
    }
    got
}

#[test]
fn afpacket_both_directions_byte_for_byte() {
    if !can_run("afpacket_both_directions_byte_for_byte") {
        return;
    }
    let net = VethNs::new("ap").unwrap();
    let mut port = AfPacketPort::open(&net.host, &AfPacketOptions::default()).unwrap();
    assert_eq!(port.kind(), PortKind::AfPacket);
    assert_eq!(port.name(), net.host);
    let peer = net.peer_socket().unwrap();

    // Outside -> port: sizes from minimum to full MTU, some VLAN-tagged.
    let m = marker();
    let mut sent = Vec::new();
    for i in 0..200u32 {
        let len = 60 + (i as usize * 37) % 1455;
        let f = if i % 7 == 3 {
            test_frame_vlan(m, i, len, 100 + i as u16)
        } else {
            test_frame(m, i, len)
        };
        peer.send(&f).unwrap();
        sent.push(f);
    }
    let got = port_recv(&mut port, sent.len(), Duration::from_secs(3), |f| {
        has_marker(f, m)
    });
    assert_eq!(got.len(), sent.len());
    assert_frames_eq(&got, &sent, "outside -> port");
    assert!(port.stats().rx_packets >= 200);

    // Port -> outside, in batches, with one kick per batch.
    let m2 = marker();
    // More frames than TX slots, so the ring wraps; some VLAN-tagged.
    let out: Vec<Vec<u8>> = (0..3000u32)
        .map(|i| {
            let len = 60 + (i as usize * 53) % 1455;
            if i % 5 == 1 {
                test_frame_vlan(m2, i, len, 7)
            } else {
                test_frame(m2, i, len)
            }
        })
        .collect();
    for chunk in out.chunks(32) {
        let refs: Vec<&[u8]> = chunk.iter().map(|f| f.as_slice()).collect();
        let mut done = 0;
        while done < refs.len() {
            done += port.send_batch(&refs[done..]).unwrap();
            port.flush().unwrap();
        }
    }
    let got = peer.recv_until(out.len(), Duration::from_secs(3), |f| has_marker(f, m2));
    assert_frames_eq(&got, &out, "port -> outside");
    assert_eq!(port.stats().tx_packets, 3000);

    // Our own transmissions are not received back (PACKET_IGNORE_OUTGOING).
    let echo = port_recv(&mut port, 1, Duration::from_millis(200), |f| {
        has_marker(f, m2)
    });
    assert!(echo.is_empty(), "port received its own frames");

    // A frame too large for a TX slot is consumed and counted, not sent.
    let huge = vec![0u8; port.max_tx_frame() + 1];
    assert_eq!(port.send_batch(&[&huge]).unwrap(), 1);
    assert_eq!(port.stats().tx_dropped, 1);
    check_oversize_in_batch(&mut port, &peer, 1500);
}

#[test]
fn afpacket_rx_ring_wraps_many_times() {
    if !can_run("afpacket_rx_ring_wraps_many_times") {
        return;
    }
    let net = VethNs::new("aw").unwrap();
    let opts = AfPacketOptions {
        rx_block_size: 16384,
        rx_block_count: 4,
        ..AfPacketOptions::default()
    };
    let mut port = AfPacketPort::open(&net.host, &opts).unwrap();
    let peer = net.peer_socket().unwrap();
    let m = marker();
    let mut sent = Vec::new();
    let mut got = Vec::new();
    for round in 0..40u32 {
        for i in 0..25u32 {
            let seq = round * 25 + i;
            let f = test_frame(m, seq, 60 + (seq as usize * 97) % 1455);
            peer.send(&f).unwrap();
            sent.push(f);
        }
        // Small batches so that blocks are left half-read between calls.
        let want = sent.len();
        let deadline = Instant::now() + Duration::from_secs(2);
        while got.len() < want && Instant::now() < deadline {
            port.recv_batch(7, Some(Duration::from_millis(10)), &mut |f| {
                if has_marker(f, m) {
                    got.push(f.to_vec())
                }
            })
            .unwrap();
        }
    }
    assert_frames_eq(&got, &sent, "outside -> port through a small ring");
    assert_eq!(port.stats().rx_dropped, 0);
}

#[test]
fn afpacket_timeout_is_honoured() {
    if !can_run("afpacket_timeout_is_honoured") {
        return;
    }
    let net = VethNs::new("at").unwrap();
    let mut port = AfPacketPort::open(&net.host, &AfPacketOptions::default()).unwrap();
    // Drain anything already there, then measure.
    while port.recv_batch(64, None, &mut |_| {}).unwrap() > 0 {}
    let t = Instant::now();
    let n = port.recv_batch(64, None, &mut |_| {}).unwrap();
    assert_eq!(n, 0);
    assert!(t.elapsed() < Duration::from_millis(20));
    let t = Instant::now();
    port.recv_batch(64, Some(Duration::from_millis(100)), &mut |_| {})
        .unwrap();
    let el = t.elapsed();
    assert!(el < Duration::from_millis(400), "waited {el:?}");
}

#[test]
fn afpacket_fanout_spreads_flows_over_workers() {
    if !can_run("afpacket_fanout_spreads_flows_over_workers") {
        return;
    }
    let net = VethNs::new("af").unwrap();
    let opts = AfPacketOptions {
        fanout: Some(Fanout {
            group_id: (std::process::id() & 0xffff) as u16,
            defrag: true,
        }),
        rx_block_count: 8,
        ..AfPacketOptions::default()
    };
    let mut a = AfPacketPort::open(&net.host, &opts).unwrap();
    let mut b = AfPacketPort::open(&net.host, &opts).unwrap();
    let peer = net.peer_socket().unwrap();
    let m = marker();
    let mut sent = HashSet::new();
    for flow in 0..64u16 {
        for k in 0..4 {
            let f = udp_frame(m, 1000 + flow, 80 + k * 10);
            peer.send(&f).unwrap();
            sent.insert(f);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    let (mut ga, mut gb) = (Vec::new(), Vec::new());
    while ga.len() + gb.len() < sent.len() && Instant::now() < deadline {
        a.recv_batch(64, Some(Duration::from_millis(5)), &mut |f| {
            if udp_has_marker(f, m) {
                ga.push(f.to_vec())
            }
        })
        .unwrap();
        b.recv_batch(64, Some(Duration::from_millis(5)), &mut |f| {
            if udp_has_marker(f, m) {
                gb.push(f.to_vec())
            }
        })
        .unwrap();
    }
    assert_eq!(
        ga.len() + gb.len(),
        sent.len(),
        "every frame reaches exactly one worker"
    );
    assert!(
        !ga.is_empty() && !gb.is_empty(),
        "64 flows all hashed to one worker: {} / {}",
        ga.len(),
        gb.len()
    );
    let all: HashSet<Vec<u8>> = ga.iter().chain(gb.iter()).cloned().collect();
    assert_eq!(all, sent);
    // A flow stays on one worker.
    let flows_a: HashSet<&[u8]> = ga.iter().map(|f| &f[34..36]).collect();
    let flows_b: HashSet<&[u8]> = gb.iter().map(|f| &f[34..36]).collect();
    assert!(flows_a.is_disjoint(&flows_b));
}

#[test]
fn afpacket_missing_interface_is_a_clear_error() {
    if !can_run("afpacket_missing_interface_is_a_clear_error") {
        return;
    }
    let err = AfPacketPort::open("nosuchif0", &AfPacketOptions::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("nosuchif0"), "{err}");
}
