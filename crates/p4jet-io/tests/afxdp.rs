//! AF_XDP port over a veth pair into a network namespace.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::collections::HashSet;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use std::sync::Arc;

use p4jet_io::{AfXdpOptions, AfXdpPort, PacketBuf, Port, PortKind, UmemSlot, XdpMode, ZeroCopy};

/// Opens the port, or prints why the kernel refuses AF_XDP and returns None.
fn open_or_skip(test: &str, iface: &str, opts: &AfXdpOptions) -> Option<AfXdpPort> {
    skip_refused(test, AfXdpPort::open(iface, opts))
}

/// The port, or None (saying why) if the kernel refuses AF_XDP here.
fn skip_refused(test: &str, opened: std::io::Result<AfXdpPort>) -> Option<AfXdpPort> {
    match opened {
        Ok(p) => Some(p),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EAFNOSUPPORT)
                    | Some(libc::ENOSYS)
                    | Some(libc::EPERM)
                    | Some(libc::EOPNOTSUPP)
            ) =>
        {
            eprintln!("SKIPPED {test}: the kernel refuses AF_XDP here: {e}");
            None
        }
        Err(e) => panic!("{test}: {e}"),
    }
}

fn xdp_attached(iface: &str) -> bool {
    let out = Command::new("ip")
        .args(["link", "show", "dev", iface])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    s.contains(" xdp") || s.contains("prog/xdp")
}

/// Whether the program goes away within a second of the last port being
/// dropped. (Not instantly: another test thread may be spawning `ip`, and a
/// forked child holds copies of our fds until it execs.)
fn detached_soon(iface: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if !xdp_attached(iface) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn recv_marked(port: &mut dyn Port, want: usize, keep: impl Fn(&[u8]) -> bool) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + Duration::from_secs(3);
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

fn both_directions(test: &str, opts: &AfXdpOptions) {
    if !can_run(test) {
        return;
    }
    let net = VethNs::new("x").unwrap();
    let Some(mut port) = open_or_skip(test, &net.host, opts) else {
        return;
    };
    eprintln!("{test}: {}", port.description());
    assert_eq!(port.kind(), PortKind::AfXdp);
    assert!(xdp_attached(&net.host), "no XDP program on {}", net.host);
    let peer = net.peer_socket().unwrap();

    let m = marker();
    let mut sent = Vec::new();
    for i in 0..300u32 {
        let len = 60 + (i as usize * 37) % 1455;
        let f = if i % 7 == 3 {
            test_frame_vlan(m, i, len, 100)
        } else {
            test_frame(m, i, len)
        };
        peer.send(&f).unwrap();
        sent.push(f);
        if i % 50 == 49 {
            // Keep the rx ring from overflowing in generic mode.
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let got = recv_marked(&mut port, sent.len(), |f| has_marker(f, m));
    assert_frames_eq(&got, &sent, "outside -> port");

    let m2 = marker();
    let out: Vec<Vec<u8>> = (0..5000u32)
        .map(|i| {
            let len = 60 + (i as usize * 53) % 1455;
            if i % 5 == 1 {
                test_frame_vlan(m2, i, len, 9)
            } else {
                test_frame(m2, i, len)
            }
        })
        .collect();
    for chunk in out.chunks(64) {
        let refs: Vec<&[u8]> = chunk.iter().map(|f| f.as_slice()).collect();
        let mut done = 0;
        while done < refs.len() {
            done += port.send_batch(&refs[done..]).unwrap();
            port.flush().unwrap();
        }
    }
    let got = peer.recv_until(out.len(), Duration::from_secs(5), |f| has_marker(f, m2));
    assert_frames_eq(&got, &out, "port -> outside");
    let st = port.stats();
    assert_eq!(st.tx_packets, 5000);
    assert_eq!(st.tx_dropped, 0);
    assert!(st.rx_packets >= 300);

    let huge = vec![0u8; port.max_tx_frame() + 1];
    assert_eq!(port.send_batch(&[&huge]).unwrap(), 1);
    assert_eq!(port.stats().tx_dropped, 1);
    check_oversize_in_batch(&mut port, &peer, 1500);

    drop(port);
    assert!(
        detached_soon(&net.host),
        "XDP program left on {} after drop",
        net.host
    );
    // And it can be opened again.
    let again = AfXdpPort::open(&net.host, opts).unwrap();
    drop(again);
    assert!(detached_soon(&net.host));
}

#[test]
fn afxdp_auto_mode_both_directions() {
    both_directions("afxdp_auto_mode_both_directions", &AfXdpOptions::default());
}

#[test]
fn afxdp_generic_mode_both_directions() {
    both_directions(
        "afxdp_generic_mode_both_directions",
        &AfXdpOptions {
            mode: XdpMode::Skb,
            need_wakeup: false,
            ..AfXdpOptions::default()
        },
    );
}

#[test]
fn afxdp_zero_copy_forced_fails_clearly_on_veth() {
    let test = "afxdp_zero_copy_forced_fails_clearly_on_veth";
    if !can_run(test) {
        return;
    }
    let net = VethNs::new("xz").unwrap();
    let opts = AfXdpOptions {
        zero_copy: ZeroCopy::Force,
        ..AfXdpOptions::default()
    };
    match AfXdpPort::open(&net.host, &opts) {
        // A future veth with zero-copy would be fine too.
        Ok(p) => assert!(p.is_zero_copy()),
        Err(e) => {
            let s = e.to_string();
            assert!(s.contains(&net.host) && s.contains("zero-copy"), "{s}");
        }
    }
    assert!(
        detached_soon(&net.host),
        "a failed open must not leave XDP attached"
    );
}

#[test]
fn afxdp_all_queues_of_a_multiqueue_interface() {
    let test = "afxdp_all_queues_of_a_multiqueue_interface";
    if !can_run(test) {
        return;
    }
    let net = VethNs::with_queues("xq", 4).unwrap();
    let Some(mut port) = open_or_skip(test, &net.host, &AfXdpOptions::default()) else {
        return;
    };
    assert_eq!(port.queues(), vec![0, 1, 2, 3], "{}", port.description());
    let peer = net.peer_socket().unwrap();
    let m = marker();
    let mut sent = HashSet::new();
    for flow in 0..64u16 {
        let f = udp_frame(m, 2000 + flow, 100);
        peer.send(&f).unwrap();
        sent.insert(f);
    }
    let got = recv_marked(&mut port, sent.len(), |f| udp_has_marker(f, m));
    assert_eq!(got.len(), sent.len());
    assert_eq!(got.into_iter().collect::<HashSet<_>>(), sent);
}

#[test]
fn afxdp_one_port_per_queue_share_the_program() {
    let test = "afxdp_one_port_per_queue_share_the_program";
    if !can_run(test) {
        return;
    }
    let net = VethNs::with_queues("xs", 2).unwrap();
    let q = |n| AfXdpOptions {
        queue: Some(n),
        ..AfXdpOptions::default()
    };
    let Some(mut a) = open_or_skip(test, &net.host, &q(0)) else {
        return;
    };
    let mut b = AfXdpPort::open(&net.host, &q(1)).unwrap();
    let err = AfXdpPort::open(&net.host, &q(7)).err().unwrap();
    assert!(err.to_string().contains("queue 7"), "{err}");
    let peer = net.peer_socket().unwrap();
    let m = marker();
    let mut sent = HashSet::new();
    for flow in 0..64u16 {
        let f = udp_frame(m, 3000 + flow, 100);
        peer.send(&f).unwrap();
        sent.insert(f);
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut got = Vec::new();
    let (mut na, mut nb) = (0, 0);
    while got.len() < sent.len() && Instant::now() < deadline {
        na += a
            .recv_batch(64, Some(Duration::from_millis(5)), &mut |f| {
                if udp_has_marker(f, m) {
                    got.push(f.to_vec())
                }
            })
            .unwrap();
        nb += b
            .recv_batch(64, Some(Duration::from_millis(5)), &mut |f| {
                if udp_has_marker(f, m) {
                    got.push(f.to_vec())
                }
            })
            .unwrap();
    }
    assert_eq!(got.into_iter().collect::<HashSet<_>>(), sent);
    assert!(
        na > 0 && nb > 0,
        "flows not spread over queues: {na} / {nb}"
    );
    drop(a);
    assert!(
        xdp_attached(&net.host),
        "program must stay while port b uses it"
    );
    drop(b);
    assert!(detached_soon(&net.host));
}

/// Receives up to `want` buffers carrying marker `m` (others dropped at once).
fn recv_bufs_marked(port: &mut AfXdpPort, want: usize, m: u32) -> Vec<PacketBuf> {
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut got = Vec::new();
    let mut burst = Vec::new();
    while got.len() < want && Instant::now() < deadline {
        let n = port.recv_bufs(64, &mut burst).unwrap();
        assert_eq!(n, burst.len(), "recv_bufs appends what it counts");
        got.extend(burst.drain(..).filter(|b| has_marker(b.data(), m)));
        if n == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    got
}

/// Sends every buffer (flushing while the ring is full), then flushes.
fn send_bufs(port: &mut AfXdpPort, mut bufs: Vec<PacketBuf>) {
    while !bufs.is_empty() {
        if port.send_bufs(&mut bufs) == 0 {
            port.flush().unwrap();
        }
    }
    port.flush().unwrap();
}

/// Two AF_XDP ports on one UMEM slot (two veth pairs): frames received on one are
/// sent by the other from the chunk they arrived in (counted in `tx_in_place`),
/// arrive intact, and every chunk is back in the region once the ports are closed.
/// A third port with a UMEM of its own copies the same buffers (no in-place sends).
#[test]
fn afxdp_shared_umem_forwards_without_copying() {
    let test = "afxdp_shared_umem_forwards_without_copying";
    if !can_run(test) {
        return;
    }
    let a = VethNs::new("ua").unwrap();
    let b = VethNs::new("ub").unwrap();
    let c = VethNs::new("uc").unwrap();
    let opts = AfXdpOptions {
        rx_frames: 512,
        tx_frames: 512,
        ..Default::default()
    };
    let slot = UmemSlot::new(4096);
    let Some(mut pa) = skip_refused(test, AfXdpPort::open_shared(&a.host, &opts, None, &slot))
    else {
        return;
    };
    let mut pb = AfXdpPort::open_shared(&b.host, &opts, None, &slot).unwrap();
    let mut pc = AfXdpPort::open(&c.host, &opts).unwrap();
    eprintln!("{test}: {}\n{test}: {}", pa.description(), pb.description());
    assert!(pa.moves_buffers() && pb.moves_buffers());
    assert!(pa.shares_umem() && pb.shares_umem() && !pc.shares_umem());
    assert!(Arc::ptr_eq(pa.umem(), pb.umem()));
    assert!(
        pb.description().contains("shared by the worker"),
        "{}",
        pb.description()
    );
    let region = pa.umem().region().clone();
    assert_eq!(region.count(), 4096);
    // each socket's fill ring holds its chunks
    assert_eq!(region.free_count(), 4096 - 2 * 512);

    let (peer_a, peer_b, peer_c) = (
        a.peer_socket().unwrap(),
        b.peer_socket().unwrap(),
        c.peer_socket().unwrap(),
    );
    let m = marker();
    let sent: Vec<Vec<u8>> = (0..400u32)
        .map(|i| test_frame(m, i, 60 + (i as usize * 41) % 1455))
        .collect();
    for (i, f) in sent.iter().enumerate() {
        peer_a.send(f).unwrap();
        if i % 50 == 49 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let bufs = recv_bufs_marked(&mut pa, sent.len(), m);
    assert_eq!(bufs.len(), sent.len(), "frames received on port a");
    for buf in &bufs {
        assert!(
            buf.buf
                .frame()
                .is_some_and(|f| Arc::ptr_eq(f.region(), &region)),
            "received into a chunk of the shared UMEM"
        );
    }
    // the first half to b (in place), the second to c (copied: other UMEM)
    let mut bufs = bufs;
    let second = bufs.split_off(sent.len() / 2);
    send_bufs(&mut pb, bufs);
    send_bufs(&mut pc, second);
    let half = sent.len() / 2;
    let got_b = peer_b.recv_until(half, Duration::from_secs(5), |f| has_marker(f, m));
    assert_frames_eq(&got_b, &sent[..half], "a -> b in place");
    let got_c = peer_c.recv_until(sent.len() - half, Duration::from_secs(5), |f| {
        has_marker(f, m)
    });
    assert_frames_eq(&got_c, &sent[half..], "a -> c copied");
    let (sb, sc) = (pb.stats(), pc.stats());
    assert_eq!(sb.tx_packets, half as u64);
    assert_eq!(
        sb.tx_in_place, half as u64,
        "every frame to b left from its chunk"
    );
    assert_eq!(sc.tx_packets, (sent.len() - half) as u64);
    assert_eq!(sc.tx_in_place, 0, "c has another UMEM: copies");

    // completions return the chunks; closing the sockets returns the fill rings'
    let deadline = Instant::now() + Duration::from_secs(2);
    while region.free_count() < 4096 - 2 * 512 && Instant::now() < deadline {
        pb.flush().unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        region.free_count(),
        4096 - 2 * 512,
        "no chunk lost in flight"
    );
    drop(pa);
    drop(pb);
    drop(pc);
    assert_eq!(region.free_count(), 4096, "every chunk back after close");
}

/// The socket that registered a worker's UMEM goes away (its port removed): the
/// UMEM stays with the other port, a port opened afterwards shares it, and frames
/// still move between them in place.
#[test]
fn afxdp_shared_umem_survives_the_first_port() {
    let test = "afxdp_shared_umem_survives_the_first_port";
    if !can_run(test) {
        return;
    }
    let (a, b, c) = (
        VethNs::new("ra").unwrap(),
        VethNs::new("rb").unwrap(),
        VethNs::new("rc").unwrap(),
    );
    let opts = AfXdpOptions {
        rx_frames: 256,
        tx_frames: 256,
        ..Default::default()
    };
    let slot = UmemSlot::new(2048);
    let Some(pa) = skip_refused(test, AfXdpPort::open_shared(&a.host, &opts, None, &slot)) else {
        return;
    };
    let mut pb = AfXdpPort::open_shared(&b.host, &opts, None, &slot).unwrap();
    let region = pa.umem().region().clone();
    drop(pa);
    assert_eq!(region.free_count(), 2048 - 256, "a's fill ring came back");
    let mut pc = AfXdpPort::open_shared(&c.host, &opts, None, &slot).unwrap();
    assert!(
        pc.shares_umem() && Arc::ptr_eq(pb.umem(), pc.umem()),
        "{}",
        pc.description()
    );
    assert_eq!(region.free_count(), 2048 - 2 * 256);

    let (peer_b, peer_c) = (b.peer_socket().unwrap(), c.peer_socket().unwrap());
    let m = marker();
    let sent: Vec<Vec<u8>> = (0..100u32)
        .map(|i| test_frame(m, i, 64 + i as usize))
        .collect();
    for f in &sent {
        peer_b.send(f).unwrap();
    }
    let bufs = recv_bufs_marked(&mut pb, sent.len(), m);
    assert_eq!(bufs.len(), sent.len());
    send_bufs(&mut pc, bufs);
    let got = peer_c.recv_until(sent.len(), Duration::from_secs(5), |f| has_marker(f, m));
    assert_frames_eq(&got, &sent, "b -> c in place");
    assert_eq!(pc.stats().tx_in_place, sent.len() as u64);
    drop(pb);
    drop(pc);
    assert_eq!(region.free_count(), 2048, "every chunk back after close");
}

/// A UMEM too small for what the switch holds: while received buffers are kept, the
/// fill ring runs dry and the kernel drops at the interface; once they are dropped,
/// their chunks refill the ring and reception resumes. Nothing is lost for good.
#[test]
fn afxdp_exhausted_umem_recovers() {
    let test = "afxdp_exhausted_umem_recovers";
    if !can_run(test) {
        return;
    }
    let a = VethNs::new("ea").unwrap();
    let opts = AfXdpOptions {
        rx_frames: 64,
        tx_frames: 64,
        ..Default::default()
    };
    // 256 frames: 64 in the fill ring, the rest free until buffers are held
    let slot = UmemSlot::new(256);
    let Some(mut pa) = skip_refused(test, AfXdpPort::open_shared(&a.host, &opts, None, &slot))
    else {
        return;
    };
    let region = pa.umem().region().clone();
    let peer = a.peer_socket().unwrap();
    let m = marker();
    let mut held = vec![];
    let mut sent = 0u32;
    // keep every buffer until a round comes back short (the fill ring ran dry)
    for round in 0..8 {
        for i in 0..64u32 {
            peer.send(&test_frame(m, round * 64 + i, 80)).unwrap();
            sent += 1;
        }
        let got = recv_bufs_marked(&mut pa, 64, m);
        let short = got.len() < 64;
        held.extend(got);
        if short {
            break;
        }
    }
    assert!(
        held.len() < sent as usize,
        "the fill ring should have run dry"
    );
    assert!(
        held.len() <= 256,
        "more buffers than chunks: {}",
        held.len()
    );
    assert_eq!(
        region.free_count(),
        0,
        "all chunks held or in the fill ring"
    );
    let before = held.len();
    drop(held);
    // reception resumes with the returned chunks
    let m2 = marker();
    let frames: Vec<Vec<u8>> = (0..50u32).map(|i| test_frame(m2, i, 90)).collect();
    let mut got = vec![];
    let deadline = Instant::now() + Duration::from_secs(3);
    // the first recv call refills the ring (and wakes the kernel) before traffic
    let _ = pa.recv_bufs(64, &mut Vec::new()).unwrap();
    for f in &frames {
        peer.send(f).unwrap();
    }
    while got.len() < frames.len() && Instant::now() < deadline {
        got.extend(recv_bufs_marked(&mut pa, frames.len() - got.len(), m2));
    }
    assert_eq!(
        got.len(),
        frames.len(),
        "after {before} held buffers were dropped"
    );
    let got: Vec<Vec<u8>> = got.iter().map(|b| b.data().to_vec()).collect();
    assert_frames_eq(&got, &frames, "after recovery");
}
