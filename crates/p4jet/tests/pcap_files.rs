//! `p4jet run --use-files` with a generated multi-port trace: every packet is
//! accounted for (per port, rx = what its input held; tx + drops = rx in the exit
//! summary), inputs are merged by timestamp across ports (equal timestamps: the lower
//! port first), and each `NAME_out.pcap` holds exactly the frames an in-process switch
//! (the in-memory `p4jet bench` path: `Worker::inject` / `run_until_idle`) sends to that
//! port, in the same order. A second test streams frames into FIFO inputs of a switch
//! that keeps running and reads its outputs while it runs: buffered pcap output must
//! still reach the files once the switch goes idle.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::*;
use p4jet_control::cli::Cli;
use p4jet_gen::{GenOptions, UseCase};
use p4jet_switch::{Switch, SwitchConfig};

const PORTS: u32 = 4;

/// Input port and timestamp (µs) of trace frame `i`: frames come in pairs with one
/// timestamp, the first of a pair on the lower port, so the merge order (earliest
/// timestamp, then the lower port) is the trace order.
fn place(i: usize) -> (u32, u64) {
    let pair = i / 2;
    let base = if pair.is_multiple_of(2) { 0 } else { 2 };
    (base + (i % 2) as u32, 1_000_000 + pair as u64)
}

/// What an in-process switch sends, per port in order, for `frames` received in this
/// order (`ports[i]` the port of frame i).
fn reference(json: &str, commands: &str, frames: &[Vec<u8>], ports: &[u32]) -> Out {
    let mut sw = Switch::new(json, SwitchConfig::default()).unwrap();
    let mut cli = Cli::new(&sw.json).unwrap();
    let r = cli.run_script_quiet(&mut sw, commands);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let mut w = sw.new_worker();
    let mut out = Out::new();
    for (chunk, pchunk) in frames.chunks(256).zip(ports.chunks(256)) {
        for (f, p) in chunk.iter().zip(pchunk) {
            w.inject(*p, f);
        }
        w.run_until_idle(&mut |p, f| out.entry(p).or_default().push(f.to_vec()));
    }
    out
}

type Out = BTreeMap<u32, Vec<Vec<u8>>>;

/// The per-port rows of `p4jet run`'s exit table: port -> (rx, tx, drop).
fn books(stdout: &str) -> BTreeMap<u32, (u64, u64, u64)> {
    let mut m = BTreeMap::new();
    for l in stdout.lines() {
        let v: Vec<&str> = l.split_whitespace().collect();
        if v.len() == 4
            && let (Ok(p), Ok(rx), Ok(tx), Ok(d)) = (
                v[0].parse::<u32>(),
                v[1].parse::<u64>(),
                v[2].parse::<u64>(),
                v[3].parse::<u64>(),
            )
        {
            m.insert(p, (rx, tx, d));
        }
    }
    m
}

#[test]
fn multi_port_trace_is_merged_and_every_packet_accounted_for() {
    let n: usize = std::env::var("P4JET_FILES_PACKETS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let g = p4jet_gen::generate(
        UseCase::L2,
        &GenOptions {
            packets: n,
            entries: 500,
            flows: 400,
            miss_ratio: 0.05,
            ports: PORTS,
            ..Default::default()
        },
    )
    .unwrap();
    let dir = tmpdir("pcap-files");
    std::fs::write(dir.join("commands.txt"), &g.commands).unwrap();
    // the inputs: frames spread over the ports, written in timestamp order per file
    let mut files: Vec<Vec<u8>> = (0..PORTS).map(|_| pcap_header()).collect();
    let mut in_ports = vec![];
    let mut rx = BTreeMap::<u32, u64>::new();
    for (i, f) in g.frames.iter().enumerate() {
        let (p, ts) = place(i);
        files[p as usize].extend_from_slice(&pcap_record(ts, f));
        in_ports.push(p);
        *rx.entry(p).or_default() += 1;
    }
    for (p, b) in files.iter().enumerate() {
        std::fs::write(dir.join(format!("p{p}_in.pcap")), b).unwrap();
    }
    let json_path = corpus_json("basic_l2");
    let json = std::fs::read_to_string(&json_path).unwrap();
    let want = reference(&json, &g.commands, &g.frames, &in_ports);

    let mut cmd = Command::new(p4jet());
    cmd.current_dir(&dir)
        .args(["run", "--use-files", "0", "--exit-when-done"])
        .args(["--commands", "commands.txt"])
        .arg(format!("--thrift-port={}", free_port()));
    for p in 0..PORTS {
        cmd.arg("-i").arg(format!("{p}@p{p}"));
    }
    let out = cmd.arg(&json_path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);

    // the books: every frame of every input received, and sent or dropped
    let b = books(&stdout);
    let mut total = (0, 0, 0);
    for p in 0..PORTS {
        let (prx, ptx, pdrop) = b.get(&p).copied().unwrap_or_default();
        assert_eq!(prx, rx[&p], "port {p} rx\n{stdout}");
        let sent = want.get(&p).map_or(0, Vec::len) as u64;
        assert_eq!(ptx, sent, "port {p} tx\n{stdout}");
        total = (total.0 + prx, total.1 + ptx, total.2 + pdrop);
    }
    assert_eq!(total.0, n as u64, "{stdout}");
    assert_eq!(total.0, total.1 + total.2, "rx = tx + drops\n{stdout}");
    let misses = g.forwarded.iter().filter(|f| !**f).count() as u64;
    assert_eq!(total.2, misses, "drops are the trace's misses\n{stdout}");
    let eq = format!(
        "p4jet: packets: received {n} + copies 0 = sent {} + dropped {misses} + queued 0\n",
        n as u64 - misses
    );
    assert!(stderr.contains(&eq), "want {eq}in\n{stderr}");

    // the outputs: exactly the reference's frames, in its order
    for p in 0..PORTS {
        let got = read_pcap(&dir.join(format!("p{p}_out.pcap")));
        let exp = want.get(&p).cloned().unwrap_or_default();
        assert_eq!(got.len(), exp.len(), "port {p}: frames in p{p}_out.pcap");
        if let Some(k) = (0..got.len()).find(|&k| got[k] != exp[k]) {
            panic!(
                "port {p}: frame {k} of p{p}_out.pcap differs:\n got {}\nwant {}",
                hex(&got[k]),
                hex(&exp[k])
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// FIFO inputs, a switch that keeps running: frames written in bursts come out in the
/// output files while the switch runs (it writes its buffered output when idle).
#[test]
fn fifo_outputs_are_written_while_the_switch_runs() {
    let dir = tmpdir("pcap-files-fifo");
    let g = p4jet_gen::generate(
        UseCase::L2,
        &GenOptions {
            packets: 3000,
            entries: 50,
            flows: 50,
            ports: 2,
            ..Default::default()
        },
    )
    .unwrap();
    let json_path = corpus_json("basic_l2");
    let json = std::fs::read_to_string(&json_path).unwrap();
    let mut sw = Running::start(&dir, &json_path, &[0, 1], &[]);
    let (_, err, st) = p4jet_cli(sw.thrift_port, &g.commands);
    assert!(st.success(), "{err}");
    let ports: Vec<u32> = (0..g.frames.len()).map(|i| (i % 2) as u32).collect();
    let want = reference(&json, &g.commands, &g.frames, &ports);
    // three bursts; after each, the outputs so far must appear without the switch
    // ending (Running::send writes both FIFOs in timestamp order)
    let third = g.frames.len() / 3;
    let mut sent = BTreeMap::<u32, usize>::new();
    for burst in 0..3 {
        let range = burst * third..(burst + 1) * third;
        for (p, f) in ports[range.clone()].iter().zip(&g.frames[range]) {
            sw.send(*p, f);
        }
        // the reference's outputs of the frames sent so far
        let upto = (burst + 1) * third;
        let r = reference(&json, &g.commands, &g.frames[..upto], &ports[..upto]);
        for p in 0..2u32 {
            sent.insert(p, r.get(&p).map_or(0, Vec::len));
        }
        let counts: Vec<(u32, usize)> = sent.iter().map(|(p, n)| (*p, *n)).collect();
        let outs = sw.wait_outputs(&counts);
        for ((p, n), got) in counts.iter().zip(&outs) {
            assert_eq!(
                got.len(),
                *n,
                "port {p} after burst {burst}: frames written while running\n{}",
                sw.stderr()
            );
            assert_eq!(got[..], want[p][..*n], "port {p} after burst {burst}");
        }
    }
    let st = sw.stop();
    assert!(st.success() || st.code().is_none(), "{st:?}");
}
