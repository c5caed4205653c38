//! Every simple_switch flag of the README's `p4jet run` section parses (with p4jet's
//! `--batch` and `--sub-batch`); the ones p4jet does not implement are accepted with a
//! warning; target options after `--`
//! (known and unknown) are taken; SIGINT ends the switch cleanly.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

#[test]
fn simple_switch_flags_are_accepted() {
    let dir = tmpdir("run-flags");
    let port = free_port();
    let out = Command::new(p4jet())
        .current_dir(&dir)
        .args(["run", "--log-file", "sw", "--log-flush", "-L", "debug"])
        .args([
            "--thrift-port",
            &port.to_string(),
            "--thrift-ip",
            "127.0.0.1",
        ])
        .args([
            "--device-id",
            "3",
            "--nanolog",
            "ipc:///tmp/p4jet-test-log.ipc",
        ])
        .args(["--notifications-addr", "ipc:///tmp/p4jet-test-notif.ipc"])
        .args([
            "--dump-packet-data",
            "64",
            "--pcap",
            "pcaps",
            "--duration",
            "0.5",
        ])
        .args(["--debugger", "--max-port-count", "64"])
        // p4jet's own batch sizes
        .args(["--batch", "16", "--sub-batch", "8"])
        .arg(corpus_json("basic_l2"))
        .args([
            "--",
            "--drop-port",
            "100",
            "--priority-queues",
            "8",
            "--enable-swap",
        ])
        .args(["--max-mc-groups", "10", "--no-such-target-option"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);
    expect(
        &stderr,
        "--nanolog (no nanomsg event logger) is not supported; ignored",
    );
    // --notifications-addr is implemented: the socket is bound without a word
    assert!(!stderr.contains("notifications"), "{stderr}");
    expect(&stderr, "--debugger is not supported; ignored");
    expect(
        &stderr,
        "ignoring unknown target option --no-such-target-option",
    );
    expect(
        &stderr,
        &format!("Thrift server was started on 127.0.0.1:{port}"),
    );
    assert!(
        dir.join("sw.txt").is_file(),
        "--log-file FILE writes FILE.txt"
    );
}

#[test]
fn simple_switch_name_runs_p4jet_run_and_sigint_stops_it() {
    let dir = tmpdir("run-symlink");
    let link = dir.join("simple_switch");
    std::os::unix::fs::symlink(p4jet(), &link).unwrap();
    let port = free_port();
    let mut child = Command::new(&link)
        .args(["--thrift-port", &port.to_string()])
        .arg(corpus_json("basic_l2"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // the runtime API answers
    let start = Instant::now();
    loop {
        let (out, _, st) = p4jet_cli(port, "table_num_entries dmac\n");
        if st.success() {
            expect(&out, "RuntimeCmd: 0\n");
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{out}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let start = Instant::now();
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no exit on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(st.success(), "{st:?}");
}

/// simple_switch (boost::program_options) accepts a value attached to its flag, after
/// `=`, and with whitespace around the port number: p4c's STF driver passes
/// `-i 0@pcap0` as one argument, so the value is ` 0@pcap0`. Every form opens its port.
#[test]
fn bmv2_argument_forms_are_accepted() {
    let dir = tmpdir("run-arg-forms");
    for name in ["p0", "p1", "p2", "p3"] {
        std::fs::write(dir.join(format!("{name}_in.pcap")), pcap_header()).unwrap();
    }
    let port = free_port();
    let out = Command::new(p4jet())
        .current_dir(&dir)
        .args([
            "run",
            "-i 0@p0",
            "-i1@p1",
            "--interface=2@p2",
            "-i",
            " 3@p3 ",
        ])
        .arg(format!("--thrift-port={port}"))
        .args(["--use-files=0", "--exit-when-done", "--device-id=7"])
        .arg(corpus_json("basic_l2"))
        .args(["--", "--drop-port=100", "--priority-queues=2"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    for name in ["p0", "p1", "p2", "p3"] {
        assert!(
            dir.join(format!("{name}_out.pcap")).is_file(),
            "{name}_out.pcap not written\n{stdout}\n{stderr}"
        );
    }
    assert!(!stderr.contains("unknown target option"), "{stderr}");
    // a value that is not a port number still fails, naming it
    let out = Command::new(p4jet())
        .current_dir(&dir)
        .args(["run", "-i x@p0", "--use-files", "0"])
        .arg(corpus_json("basic_l2"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    expect(
        &String::from_utf8_lossy(&out.stderr),
        "bad port number in `x@p0`",
    );
}
