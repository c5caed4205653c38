//! DPDK ports (feature `dpdk`) on virtual devices, without hugepages: net_null and
//! net_ring in the process, net_af_packet on a veth pair into a namespace (root).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

#[cfg(not(feature = "dpdk"))]
#[test]
fn dpdk_skipped() {
    eprintln!("SKIPPED dpdk tests: p4jet-io was built without the `dpdk` feature");
}

#[cfg(feature = "dpdk")]
mod common;

#[cfg(feature = "dpdk")]
mod dpdk {
    use std::time::{Duration, Instant};

    use super::common::*;
    use p4jet_io::dpdk::{DpdkOptions, DpdkPort, init_eal};
    use p4jet_io::{Port, PortKind};

    /// Starts the EAL with the defaults; false (with a message) if it cannot start
    /// because the test does not run as root. As root it must start.
    fn eal(test: &str) -> bool {
        match init_eal(None) {
            Ok(_) => true,
            // SAFETY: geteuid has no preconditions.
            Err(e) if unsafe { libc::geteuid() } != 0 => {
                eprintln!("SKIPPED {test}: the EAL does not start without root: {e}");
                false
            }
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn null_device_bursts_and_counts() {
        if !eal("null_device_bursts_and_counts") {
            return;
        }
        let mut p = DpdkPort::open("net_null7", &DpdkOptions::default(), 0).unwrap();
        assert_eq!(p.kind(), PortKind::Dpdk);
        assert_eq!(p.name(), "net_null7");
        assert!(p.busy_polls());
        eprintln!("{}", p.description());
        let mut lens = vec![];
        let n = p.recv_batch(32, None, &mut |f| lens.push(f.len())).unwrap();
        assert_eq!(n, 32, "net_null fills every burst");
        assert!(lens.iter().all(|&l| l == 64), "{lens:?}");
        let frame = [0xabu8; 100];
        let frames: Vec<&[u8]> = (0..1000).map(|_| &frame[..]).collect();
        let mut done = 0;
        while done < frames.len() {
            done += p.send_batch(&frames[done..]).unwrap();
        }
        let huge = vec![0u8; 9000];
        assert_eq!(p.send_batch(&[&huge, &frame]).unwrap(), 2);
        let s = p.stats();
        assert_eq!(s.rx_packets, 32);
        assert_eq!(s.rx_bytes, 32 * 64);
        assert_eq!(s.tx_packets, 1001);
        assert_eq!(s.tx_bytes, 1001 * 100);
        assert_eq!(s.tx_dropped, 1, "the 9000-byte frame does not fit an mbuf");
        let d = p.device_stats().unwrap();
        assert_eq!(d.tx_packets, 1001);
        assert_eq!(d.rx_packets, 32);
    }

    #[test]
    fn ring_device_loops_frames_back_byte_for_byte() {
        if !eal("ring_device_loops_frames_back_byte_for_byte") {
            return;
        }
        let mut p = DpdkPort::open("net_ring7", &DpdkOptions::default(), 0).unwrap();
        let m = marker();
        let sent: Vec<Vec<u8>> = (0..300u32)
            .map(|i| test_frame(m, i, 60 + (i as usize * 37) % 1455))
            .collect();
        let refs: Vec<&[u8]> = sent.iter().map(|f| f.as_slice()).collect();
        let mut got = vec![];
        let mut done = 0;
        let deadline = Instant::now() + Duration::from_secs(5);
        while got.len() < sent.len() && Instant::now() < deadline {
            if done < refs.len() {
                done += p
                    .send_batch(&refs[done..(done + 64).min(refs.len())])
                    .unwrap();
            }
            p.recv_batch(32, None, &mut |f| got.push(f.to_vec()))
                .unwrap();
        }
        assert_frames_eq(&got, &sent, "net_ring tx -> rx");
        assert_eq!(p.stats().tx_packets, 300);
        assert_eq!(p.stats().rx_packets, 300);
    }

    /// Received frames are carried in their mbufs: changed in place (a header pushed
    /// into the headroom, one popped), sent back as themselves, received again with
    /// the changes; mbufs dropped anywhere go back to the pool.
    #[test]
    fn ring_device_carries_mbufs_from_rx_to_tx() {
        if !eal("ring_device_carries_mbufs_from_rx_to_tx") {
            return;
        }
        let mut p = DpdkPort::open("net_ring8", &DpdkOptions::default(), 0).unwrap();
        assert!(p.moves_buffers());
        let m = marker();
        let sent: Vec<Vec<u8>> = (0..200u32)
            .map(|i| test_frame(m, i, 60 + (i as usize * 53) % 1400))
            .collect();
        let refs: Vec<&[u8]> = sent.iter().map(|f| f.as_slice()).collect();
        let mut done = 0;
        while done < refs.len() {
            done += p.send_batch(&refs[done..]).unwrap();
        }
        // round 1: receive in mbufs, push 4 bytes in front of even frames, cut 2 off
        // the end of odd ones, and send each back as itself
        let mut bufs = vec![];
        let deadline = Instant::now() + Duration::from_secs(5);
        while bufs.len() < sent.len() && Instant::now() < deadline {
            p.recv_bufs(32, &mut bufs).unwrap();
        }
        assert_eq!(bufs.len(), sent.len());
        let mut want = vec![];
        let mut changed = vec![];
        for (i, mut b) in bufs.into_iter().enumerate() {
            assert!(b.buf.is_port_owned(), "frame {i} is in its mbuf");
            assert_eq!(b.data(), &sent[i][..], "frame {i} as received");
            if i % 2 == 0 {
                assert!(b.start >= 4, "headroom in front of the frame");
                b.start -= 4;
                let s = b.start;
                b.buf[s..s + 4].copy_from_slice(&[0xee, 0xee, i as u8, 0xee]);
            } else {
                b.truncate(b.len() - 2);
            }
            want.push(b.data().to_vec());
            changed.push(b);
        }
        // sent in batches of up to 64 (flushing when the device takes none)
        while !changed.is_empty() {
            let mut batch: Vec<_> = changed.drain(..changed.len().min(64)).collect();
            while !batch.is_empty() {
                if p.send_bufs(&mut batch) == 0 {
                    p.flush().unwrap();
                }
            }
        }
        p.flush().unwrap();
        assert!(!p.tx_pending());
        let s = p.stats();
        assert_eq!(s.tx_in_place, 200, "every mbuf sent as itself");
        assert_eq!(s.tx_packets, 400);
        // round 2: the changed frames come back; a copy of a heap buffer is sent too
        let mut got = vec![];
        let deadline = Instant::now() + Duration::from_secs(5);
        while got.len() < want.len() && Instant::now() < deadline {
            let mut burst = vec![];
            p.recv_bufs(32, &mut burst).unwrap();
            got.extend(burst.iter().map(|b| b.data().to_vec()));
        }
        assert_frames_eq(&got, &want, "carried mbufs tx -> rx");
        let mut heap = p4jet_buf::PacketBuf::with_capacity(64);
        heap.set(&sent[0]);
        p.send_buf(heap).unwrap();
        p.flush().unwrap();
        let mut again = vec![];
        while again.is_empty() && Instant::now() < deadline {
            let mut burst = vec![];
            p.recv_bufs(32, &mut burst).unwrap();
            again.extend(burst.iter().map(|b| b.data().to_vec()));
        }
        assert_eq!(
            again,
            vec![sent[0].clone()],
            "a heap buffer is copied into an mbuf"
        );
        assert_eq!(p.stats().tx_in_place, 200);
        // many more frames than the pool has mbufs, received and dropped: every
        // dropped buffer frees its mbuf, or the ring would run dry
        let mut total = 0;
        let frame = test_frame(m, 7, 64);
        let burst: Vec<&[u8]> = (0..64).map(|_| &frame[..]).collect();
        for _ in 0..2000 {
            let n = p.send_batch(&burst).unwrap();
            let mut burst = vec![];
            let r = p.recv_bufs(64, &mut burst).unwrap();
            assert!(burst.iter().all(|b| b.buf.is_port_owned()));
            assert_eq!((r, burst.len()), (n, n), "what was sent comes back");
            drop(burst);
            total += r;
        }
        assert_eq!(total, 2000 * 64);
        assert_eq!(p.device_stats().unwrap().rx_nombuf, 0);

        // packets outlive their port: the device closes, its pool waits for them
        // (freeing it under them would make their release write into freed memory)
        let frame = test_frame(m, 9, 80);
        assert_eq!(p.send_batch(&[&frame, &frame, &frame]).unwrap(), 3);
        let mut held = vec![];
        let deadline = Instant::now() + Duration::from_secs(5);
        while held.len() < 3 && Instant::now() < deadline {
            p.recv_bufs(32, &mut held).unwrap();
        }
        assert_eq!(held.len(), 3);
        // (tests of this file share the process: count relative to now)
        let retired = p4jet_io::dpdk::retired_pools();
        drop(p);
        assert_eq!(
            p4jet_io::dpdk::retired_pools(),
            retired + 1,
            "the pool waits"
        );
        assert!(
            held.iter().all(|b| b.data() == &frame[..]),
            "still readable"
        );
        // sent on another device as themselves, then the rest dropped
        let mut q = DpdkPort::open("net_null9", &DpdkOptions::default(), 0).unwrap();
        let last = held.pop().unwrap();
        q.send_buf(last).unwrap();
        q.flush().unwrap();
        assert_eq!(q.stats().tx_in_place, 1);
        drop(held);
        drop(q);
        assert_eq!(
            p4jet_io::dpdk::retired_pools(),
            retired,
            "every mbuf came home: the pool was freed when the next device closed"
        );
        // the device opens again with a fresh pool
        let mut again = DpdkPort::open("net_ring8", &DpdkOptions::default(), 0).unwrap();
        assert_eq!(again.send_batch(&[&frame]).unwrap(), 1);
        let mut back = 0;
        while back == 0 && Instant::now() < deadline {
            back = again.recv_bufs(32, &mut Vec::new()).unwrap();
        }
        assert_eq!(back, 1);
    }

    #[test]
    fn queue_pair_per_worker() {
        if !eal("queue_pair_per_worker") {
            return;
        }
        let o = DpdkOptions {
            queues: 2,
            ..Default::default()
        };
        let mut q0 = DpdkPort::open("net_null8", &o, 0).unwrap();
        let mut q1 = DpdkPort::open("net_null8", &o, 1).unwrap();
        assert!(
            q1.description().contains("queue 1 of 2"),
            "{}",
            q1.description()
        );
        // another queue count for an open device is refused, so is a queue beyond it
        let e = DpdkPort::open("net_null8", &DpdkOptions::default(), 0)
            .err()
            .unwrap();
        assert!(e.to_string().contains("already open with 2"), "{e}");
        assert!(DpdkPort::open("net_null8", &o, 2).is_err());
        let t = std::thread::spawn(move || {
            let n = q1.recv_batch(16, None, &mut |_| {}).unwrap();
            (n, q1)
        });
        assert_eq!(q0.recv_batch(16, None, &mut |_| {}).unwrap(), 16);
        let (n, q1) = t.join().unwrap();
        assert_eq!(n, 16);
        assert_eq!(q0.device_stats().unwrap().rx_packets, 32);
        drop((q0, q1));
        // closed with its last port, and can be opened again
        let p = DpdkPort::open("net_null8", &DpdkOptions::default(), 0).unwrap();
        assert!(p.description().contains("queue 0 of 1"));
    }

    #[test]
    fn bad_devargs_are_errors() {
        if !eal("bad_devargs_are_errors") {
            return;
        }
        for bad in ["net_nosuchdriver0", "", "net_tap9,iface=", "0000:ff:1f.7"] {
            match DpdkPort::open(bad, &DpdkOptions::default(), 0) {
                Ok(_) => panic!("{bad:?} opened"),
                Err(e) => eprintln!("{bad:?}: {e}"),
            }
        }
    }

    #[test]
    fn af_packet_on_veth_both_directions() {
        if !can_run("af_packet_on_veth_both_directions") || !eal("af_packet_on_veth") {
            return;
        }
        let net = VethNs::new("dp").unwrap();
        let mut p = DpdkPort::open(
            &format!("net_af_packet5,iface={}", net.host),
            &DpdkOptions::default(),
            0,
        )
        .unwrap();
        let peer = net.peer_socket().unwrap();
        let m = marker();
        let sent: Vec<Vec<u8>> = (0..200u32)
            .map(|i| test_frame(m, i, 60 + (i as usize * 37) % 1455))
            .collect();
        for f in &sent {
            peer.send(f).unwrap();
        }
        let mut got = vec![];
        let deadline = Instant::now() + Duration::from_secs(3);
        while got.len() < sent.len() && Instant::now() < deadline {
            p.recv_batch(32, Some(Duration::from_millis(10)), &mut |f| {
                if has_marker(f, m) {
                    got.push(f.to_vec())
                }
            })
            .unwrap();
        }
        assert_frames_eq(&got, &sent, "outside -> DPDK port");

        let m2 = marker();
        let out: Vec<Vec<u8>> = (0..500u32)
            .map(|i| test_frame(m2, i, 60 + (i as usize * 53) % 1455))
            .collect();
        for chunk in out.chunks(32) {
            let refs: Vec<&[u8]> = chunk.iter().map(|f| f.as_slice()).collect();
            let mut done = 0;
            while done < refs.len() {
                done += p.send_batch(&refs[done..]).unwrap();
            }
        }
        let back = peer.recv_until(out.len(), Duration::from_secs(3), |f| has_marker(f, m2));
        assert_frames_eq(&back, &out, "DPDK port -> outside");
        let s = p.stats();
        assert_eq!(s.tx_packets, 500);
        assert!(s.rx_packets >= 200);
    }
}
