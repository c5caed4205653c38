//! TAP port: frames written to the port appear as received on the interface,
//! frames sent on the interface are received by the port.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::time::{Duration, Instant};

use common::*;
use p4jet_io::{Port, PortKind, TapPort};

#[test]
fn tap_both_directions_byte_for_byte() {
    if !can_run("tap_both_directions_byte_for_byte") {
        return;
    }
    let name = unique("tp");
    let mut port = match TapPort::open(&name, true) {
        Ok(p) => p,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
            eprintln!("SKIPPED tap_both_directions_byte_for_byte: no /dev/net/tun ({e})");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(port.kind(), PortKind::Tap);
    // The host side of the TAP: a raw socket on the interface.
    let host = RawSock::open(None, &name).unwrap();

    let m = marker();
    let out: Vec<Vec<u8>> = (0..200u32)
        .map(|i| test_frame(m, i, 60 + (i as usize * 41) % 1455))
        .collect();
    let refs: Vec<&[u8]> = out.iter().map(|f| f.as_slice()).collect();
    let mut done = 0;
    while done < refs.len() {
        done += port.send_batch(&refs[done..]).unwrap();
        port.flush().unwrap();
    }
    let got = host.recv_until(out.len(), Duration::from_secs(3), |f| has_marker(f, m));
    assert_frames_eq(&got, &out, "port -> host");

    let m2 = marker();
    let sent: Vec<Vec<u8>> = (0..200u32)
        .map(|i| test_frame(m2, i, 60 + (i as usize * 43) % 1455))
        .collect();
    for f in &sent {
        host.send(f).unwrap();
    }
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    while got.len() < sent.len() && Instant::now() < deadline {
        port.recv_batch(32, Some(Duration::from_millis(20)), &mut |f| {
            if has_marker(f, m2) {
                got.push(f.to_vec())
            }
        })
        .unwrap();
    }
    assert_frames_eq(&got, &sent, "host -> port");
    drop(port);
    // The device was created by the port and goes with it.
    assert!(std::fs::metadata(format!("/sys/class/net/{name}")).is_err());
}
