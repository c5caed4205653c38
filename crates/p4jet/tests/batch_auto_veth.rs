//! `p4jet run --batch auto --sub-batch auto` on live ports: the performance model
//! chooses the first batch and sub-batch from a profile (`P4JET_PROFILE`, written by a
//! quick calibration here), each forwarding thread then adjusts them from the cost it
//! measures while a generator
//! floods port 0 (basic_l2 over two AF_PACKET veth pairs this test makes and deletes),
//! and nothing is lost on the way: every frame the switch received left on port 1 and
//! arrived at the far end. Whether the values move depends on how long the thread is
//! saturated; the tuner's decisions are unit-tested (`cargo test -p p4jet --bin p4jet
//! tuner`). Needs root; skipped otherwise.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use p4jet_io::{AfPacketOptions, AfPacketPort, Port};

#[test]
fn batch_auto_adjusts_while_forwarding_and_loses_nothing() {
    if !is_root() {
        eprintln!("batch_auto_veth: skipped: needs root for veth pairs");
        return;
    }
    let dir = tmpdir("batch_auto");
    let prof = dir.join("profile.json");
    quick_profile(&prof);

    let tag = std::process::id() % 100_000;
    let links = VethPairs::new(&format!("ba{tag}"), 2);
    let a = |n: u32| links.a(n);
    let b = |n: u32| links.b(n);
    let mut cmd = Command::new(p4jet());
    cmd.arg("run")
        .arg(corpus_json("basic_l2"))
        .arg("--commands")
        .arg(corpus_file("basic_l2/basic_l2.commands"))
        .args([
            "--port-type",
            "af_packet",
            "--batch",
            "auto",
            "--sub-batch",
            "auto",
        ])
        .args(["--thrift-port", &free_port().to_string()])
        .args(["-i", &format!("0@{}", a(0)), "-i", &format!("1@{}", a(1))])
        .env("P4JET_PROFILE", &prof)
        .current_dir(&dir);
    let mut sw = Proc::spawn(&mut cmd, &dir);
    sw.wait_forwarding();
    let err = sw.stderr();
    assert!(
        err.contains("(auto: chosen by the performance model)"),
        "the model's choice is announced:\n{err}"
    );
    std::thread::sleep(Duration::from_millis(300));

    // to 00:00:00:00:00:11 (port 1), from 1,024 sources
    let frames: Vec<Vec<u8>> = (0..1024u32)
        .map(|i| {
            let mut f = vec![0, 0, 0, 0, 0, 0x11, 0x02, 0, 0, 0, (i >> 8) as u8, i as u8];
            f.extend([0x08, 0x00]);
            f.resize(64, 0x5a);
            f
        })
        .collect();
    let total = env_u64("BATCH_AUTO_FRAMES", 600_000);
    let mut gen_port = AfPacketPort::open(&b(0), &AfPacketOptions::default()).unwrap();
    let mut offered = 0u64;
    let mut k = 0usize;
    while offered < total {
        let batch: Vec<&[u8]> = (0..64)
            .map(|j| &frames[(k + j) % frames.len()][..])
            .collect();
        k += 64;
        let want = (total - offered).min(64) as usize;
        let n = gen_port.send_batch(&batch[..want]).unwrap();
        offered += n as u64;
        gen_port.flush().unwrap();
        if n == 0 {
            std::thread::yield_now();
        }
    }
    std::thread::sleep(Duration::from_millis(1500));
    assert!(sw.alive(), "p4jet died:\n{}", sw.stderr());
    let arrived_far = if_counter(&b(1), "rx_packets");
    let err = sw.terminate();
    let (line, n) = exit_books(&err);
    // received + copies = sent + dropped + queued, and every received frame left
    assert_eq!(n[0] + n[1], n[2] + n[3] + n[4], "{line}");
    assert!(n[0] > 0, "{line}");
    assert_eq!(n[2], n[0], "every received frame sent on port 1: {line}");
    assert_eq!(
        arrived_far, n[2],
        "sent frames arrived at the far end: {line}"
    );
    let end = err
        .lines()
        .find(|l| l.contains("at the end (auto:"))
        .unwrap_or_else(|| panic!("no tuner summary:\n{err}"));
    let after = |what: &str| -> usize {
        end.split(what)
            .nth(1)
            .and_then(|x| x.split([' ', ',']).next())
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("no {what}in {end}"))
    };
    let (batch, sub_batch) = (after(": batch "), after("sub-batch "));
    assert!(
        batch.is_power_of_two() && (8..=256).contains(&batch),
        "{end}"
    );
    assert!(
        sub_batch.is_power_of_two() && (4..=64).contains(&sub_batch) && sub_batch <= batch,
        "{end}"
    );
    eprintln!("batch_auto_veth: {line}; {end}");
    drop(links);
}
