//! p4c's bmv2 STF driver (backends/bmv2/run-bmv2-test.py + bmv2stf.py) emulated end
//! to end against `p4jet run`: mkfifo `pcapN_in.pcap`, start the switch with the
//! driver's exact flags, open the FIFOs for writing in sorted port order, wait for the
//! Thrift port, pipe the translated commands into simple_switch_CLI (the stock one if
//! it can be installed, else `p4jet cli`), write the packets, close the FIFOs, sleep
//! 2 s, SIGTERM; the exit status must be 0 or -15 and every `pcapN_out.pcap` must hold
//! the expected frames.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use p4jet_control::stf::{CompareOptions, Expectations, StfKind, StfOptions, compare, parse_stf};
use p4jet_runtime::Schema;

/// Runs one STF test the way p4c's driver does; returns the comparison report text
/// (empty if it passed).
fn drive(program: &str, stf: &str, stock: Option<&Path>) -> String {
    let json_path = corpus_json(program);
    let json = std::fs::read_to_string(&json_path).unwrap();
    let text = std::fs::read_to_string(
        json_path
            .parent()
            .unwrap()
            .join("tests")
            .join(format!("{stf}.stf")),
    )
    .unwrap();
    let prog = Schema::from_json(&json).unwrap();
    let statements = parse_stf(&text, &prog, &StfOptions::default()).unwrap();
    let mut ports = BTreeSet::new();
    for s in &statements {
        match &s.kind {
            StfKind::Packet { port, .. } | StfKind::Expect { port, .. } => {
                ports.insert(*port);
            }
            _ => {}
        }
    }
    let ports: Vec<u32> = ports.into_iter().collect();
    let dir = tmpdir(&format!("stf-{program}-{stf}"));
    // the driver's command line (Running::start adds -i N@pcapN and the program)
    let mut sw = Running::start(&dir, &json_path, &ports, &[]);
    let mut pending = String::new();
    let mut last_port = None;
    let flush = |pending: &mut String, sw: &Running| {
        if pending.is_empty() {
            return;
        }
        let (out, err) = match stock {
            Some(cli) => stock_session(cli, sw.thrift_port, pending),
            None => {
                let (o, e, _) = p4jet_cli(sw.thrift_port, pending);
                (o, e)
            }
        };
        assert!(!err.contains("Traceback"), "CLI crashed:\n{out}{err}");
        pending.clear();
    };
    for s in &statements {
        match &s.kind {
            StfKind::Cli { command, .. } => {
                pending.push_str(command);
                pending.push('\n');
            }
            StfKind::Packet { port, data } => {
                // the driver sleeps 1 s before a packet that follows commands; we
                // wait for the CLI to finish, which is what the sleep is for
                flush(&mut pending, &sw);
                // Each port's FIFO has its own reader (in simple_switch too), so
                // frames written to different ports race each other: on a loaded
                // machine a frame to port 1 can overtake an earlier one to port 0.
                // The expectations list each port's frames in STF order, so give
                // the previous port's frame time to get through first.
                if last_port.is_some_and(|p| p != *port) {
                    std::thread::sleep(Duration::from_millis(200));
                }
                last_port = Some(*port);
                sw.send(*port, data);
            }
            _ => {}
        }
    }
    flush(&mut pending, &sw);
    // close the FIFOs, sleep 2 s, SIGTERM
    sw.inputs.clear();
    std::thread::sleep(Duration::from_secs(2));
    let st = sw.stop();
    assert!(
        st.code() == Some(0) || st.signal() == Some(15),
        "exit status {st:?} (the driver accepts 0 or -15); stderr:\n{}",
        sw.stderr()
    );
    let log = std::fs::read_to_string(dir.join("switch.log.txt")).unwrap_or_default();
    assert!(
        !log.is_empty(),
        "--log-file switch.log writes switch.log.txt"
    );
    let mut actual = BTreeMap::new();
    for p in &ports {
        actual.insert(*p, sw.output(*p));
    }
    let report = compare(
        &Expectations::from_statements(&statements),
        &actual,
        CompareOptions::default(),
    );
    if report.passed() {
        String::new()
    } else {
        format!("{program}/{stf}: {report}")
    }
}

#[test]
fn p4c_stf_driver_flow_end_to_end() {
    let stock = stock_cli();
    let mut failures = vec![];
    for (program, stf) in [
        ("basic_l2", "hit"),
        ("multicast", "replication"),
        ("mirror_clone", "ingress_mirror"),
        ("stateful", "registers"),
    ] {
        let r = drive(program, stf, stock.as_deref());
        if !r.is_empty() {
            failures.push(r);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn sigterm_while_waiting_for_the_fifo_writer_exits_minus_15_or_0() {
    // the driver may give up before opening the FIFOs: the switch, blocked opening
    // its first input, must still die on SIGTERM
    let dir = tmpdir("stf-early-term");
    let fifo = dir.join("pcap0_in.pcap");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let mut child = Command::new(p4jet())
        .current_dir(&dir)
        .args(["run", "--use-files", "0", "-i", "0@pcap0"])
        .arg("--thrift-port")
        .arg(free_port().to_string())
        .arg(corpus_json("basic_l2"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status()
            .unwrap()
            .success()
    );
    let start = std::time::Instant::now();
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "did not exit");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(st.code() == Some(0) || st.signal() == Some(15), "{st:?}");
}
