//! open_port: backend choice, reason, recording.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::time::Duration;

use common::*;
use p4jet_io::{Backend, OpenOptions, PcapFilePort, Port, PortKind, open_port};

#[test]
fn open_port_auto_forced_and_recorded() {
    if !can_run("open_port_auto_forced_and_recorded") {
        return;
    }
    let net = VethNs::new("op").unwrap();
    let auto = open_port(&format!("3@{}", net.host), &OpenOptions::default()).unwrap();
    assert_eq!(auto.port_num, 3);
    println!("{}", auto.reason);
    assert!(
        auto.reason.starts_with(&format!("port 3@{}: ", net.host)),
        "{}",
        auto.reason
    );
    assert!(auto.reason.contains("auto"), "{}", auto.reason);
    // AF_XDP works on this kernel (veth, root), so auto must have picked it.
    assert_eq!(auto.port.kind(), PortKind::AfXdp, "{}", auto.reason);
    drop(auto);

    let dir = std::env::temp_dir().join(format!("p4jet-io-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let opts = OpenOptions {
        backend: Backend::AfPacket,
        record_dir: Some(dir.clone()),
        ..OpenOptions::default()
    };
    let mut p = open_port(&format!("4@{}", net.host), &opts).unwrap();
    assert_eq!(p.port.kind(), PortKind::AfPacket);
    assert!(
        p.reason.contains("forced") && p.reason.contains("recording"),
        "{}",
        p.reason
    );
    let peer = net.peer_socket().unwrap();
    let m = marker();
    let f_in = test_frame(m, 1, 90);
    let f_out = test_frame(m, 2, 91);
    peer.send(&f_in).unwrap();
    let mut got = Vec::new();
    for _ in 0..100 {
        p.port
            .recv_batch(8, Some(Duration::from_millis(20)), &mut |f| {
                if has_marker(f, m) {
                    got.push(f.to_vec())
                }
            })
            .unwrap();
        if !got.is_empty() {
            break;
        }
    }
    assert_frames_eq(&got, std::slice::from_ref(&f_in), "rx");
    p.port.send_batch(&[&f_out]).unwrap();
    p.port.flush().unwrap();
    let read = |name: String| {
        let mut q = PcapFilePort::open("r", Some(&dir.join(name)), None).unwrap();
        let mut v = Vec::new();
        while !q.is_exhausted() {
            q.recv_batch(64, None, &mut |f| v.push(f.to_vec())).unwrap();
        }
        v.into_iter()
            .filter(|f| has_marker(f, m))
            .collect::<Vec<_>>()
    };
    assert_frames_eq(
        &read(format!("{}_in.pcap", net.host)),
        &[f_in],
        "recorded rx",
    );
    assert_frames_eq(
        &read(format!("{}_out.pcap", net.host)),
        &[f_out],
        "recorded tx",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn open_port_errors_name_the_interface() {
    if !can_run("open_port_errors_name_the_interface") {
        return;
    }
    let e = open_port("1@nosuch7", &OpenOptions::default())
        .err()
        .unwrap();
    let s = e.to_string();
    assert!(
        s.contains("nosuch7") && s.contains("AF_XDP also failed"),
        "{s}"
    );
    let e = open_port("nonsense", &OpenOptions::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("PORT@IFACE"));
}
