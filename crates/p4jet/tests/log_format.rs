//! The per-packet log (`--log-console`, `--log-file`) in simple_switch's line format:
//! the same corpus programs, table commands and frames through bmv2 and p4jet, the
//! lines of every packet (`[PACKET.COPY]`) compared after time and thread are taken
//! out; `-L` levels; `--log-file-max-size` / `--log-file-max-files` rotation.
//!
//! Intended differences, left out of the comparison: the order in which the lines of
//! different packets interleave (bmv2 runs ingress, egress and transmit on their own
//! threads; p4jet a packet to completion), so packets are compared one by one; and
//! the switch's start-up lines (no packet id).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use p4jet_diff::cli::StockCli;
use p4jet_diff::switch::{Running as DiffRunning, SwitchSpec};

/// The messages of a log, by packet (`P.C`), each `[LEVEL] MESSAGE` (multi-line
/// messages joined), from lines `[HH:MM:SS.mmm] [bmv2] [L] [thread N] [P.C] [cxt 0] M`.
fn per_packet(log: &str) -> BTreeMap<(u64, u64), Vec<String>> {
    let mut msgs: Vec<(String, String)> = vec![];
    for line in log.lines() {
        match parse_line(line) {
            Some((lvl, rest)) => msgs.push((lvl.to_string(), rest.to_string())),
            None => {
                if let Some(m) = msgs.last_mut() {
                    m.1.push('\n');
                    m.1.push_str(line);
                }
            }
        }
    }
    let mut out: BTreeMap<(u64, u64), Vec<String>> = BTreeMap::new();
    for (lvl, rest) in msgs {
        let Some(r) = rest.strip_prefix('[') else {
            continue;
        };
        let Some((id, msg)) = r.split_once("] [cxt 0] ") else {
            continue;
        };
        let Some((p, c)) = id.split_once('.') else {
            continue;
        };
        let (Ok(p), Ok(c)) = (p.parse(), c.parse()) else {
            continue;
        };
        out.entry((p, c))
            .or_default()
            .push(format!("[{lvl}] {}", msg.trim_end_matches('\n')));
    }
    out
}

/// `(LEVEL, REST)` of a log line with simple_switch's prefix, or None.
fn parse_line(line: &str) -> Option<(&str, &str)> {
    let b = line.as_bytes();
    // [HH:MM:SS.mmm] [bmv2] [L] [thread N] REST
    if b.len() < 28 || b[0] != b'[' || b[13] != b']' || !line[14..].starts_with(" [bmv2] [") {
        return None;
    }
    let rest = &line[23..];
    let (lvl, rest) = rest.split_once("] [thread ")?;
    let (tid, rest) = rest.split_once("] ")?;
    tid.parse::<u64>().ok()?;
    Some((lvl, rest))
}

/// The `packet PORT HEX` lines of an STF file.
fn stf_packets(path: &Path, max: usize) -> Vec<(u32, Vec<u8>)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("packet "))
        .filter_map(|l| {
            let (port, hexs) = l.trim().split_once(' ')?;
            Some((port.parse().ok()?, unhex(hexs)))
        })
        .take(max)
        .collect()
}

/// Runs `spec` on a corpus program with its commands and frames, the per-packet log
/// in a file; returns the log.
fn run_logged(
    spec: &SwitchSpec,
    cli: &StockCli,
    dir: &Path,
    program: &Path,
    commands: &str,
    frames: &[(u32, Vec<u8>)],
) -> String {
    let mut spec = spec.clone();
    spec.log = true;
    let mut r = DiffRunning::start(&spec, dir, program, &[0, 1, 2, 3], 0, &[]).unwrap();
    if !commands.trim().is_empty() {
        cli.run(r.thrift_port, commands).unwrap();
    }
    r.send(frames).unwrap();
    r.close_all_inputs().unwrap();
    r.wait_idle(Duration::from_millis(500), Duration::from_secs(60))
        .unwrap();
    r.stop().unwrap();
    std::fs::read_to_string(dir.join("switch.txt")).unwrap_or_default()
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

/// A corpus program's JSON, the first 6 frames of its STF test `stf` (or of its first
/// STF test when there is no such file) and its commands (value-set entries left out:
/// the stock CLI's pvs_add crashes bmv2 1.15).
fn corpus_case(name: &str, stf: &str) -> (PathBuf, Vec<(u32, Vec<u8>)>, String) {
    let dir = corpus().join(name);
    let mut stf_path = dir.join("tests").join(stf);
    if !stf_path.is_file() {
        let mut all: Vec<PathBuf> = std::fs::read_dir(dir.join("tests"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "stf"))
            .collect();
        all.sort();
        stf_path = all[0].clone();
    }
    let commands = std::fs::read_to_string(dir.join(format!("{name}.commands")))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with("pvs_"))
        .map(|l| format!("{l}\n"))
        .collect();
    (
        dir.join(format!("{name}.json")),
        stf_packets(&stf_path, 6),
        commands,
    )
}

#[test]
fn per_packet_lines_match_bmv2() {
    let Some(shared) = shared_dir() else {
        return skipped("SKIPPED: log format against bmv2: ../shared is absent");
    };
    let bmv2 = shared.join("reference/bin/simple_switch");
    if !bmv2.is_file() {
        return skipped("SKIPPED: log format against bmv2: no reference simple_switch");
    }
    let Some(cli) = stock_cli() else {
        return skipped("SKIPPED: log format against bmv2: no stock simple_switch_CLI");
    };
    let cli = StockCli { path: cli };
    let work = tmpdir("log-format");
    let mut failures = vec![];
    // (program, STF file whose packets are played): parser selects and errors,
    // checksums, lpm/ternary/range lookups, clones, resubmit and recirculate,
    // multicast, registers, counters and meters, digests, action selectors, hashes,
    // header stacks, stacks of varbit headers and of header unions
    for (name, stf) in [
        ("basic_l2", "hit.stf"),
        ("simple_router", "checksum.stf"),
        ("acl_firewall", "acl.stf"),
        ("mirror_clone", "ingress_mirror.stf"),
        ("recirc_resubmit", "both.stf"),
        ("multicast", "replication.stf"),
        ("stateful", "registers.stf"),
        ("l2_learning", "unicast.stf"),
        ("header_union", "basic.stf"),
        ("parser_features", "errors.stf"),
        ("ecmp", "no_routes.stf"),
        ("hashes", "algorithms.stf"),
        ("mpls_stack", "overflow_ttl_miss.stf"),
        ("varbit_stack", "options.stf"),
        ("union_stack", "items.stf"),
        ("p4_14_ops", "-"),
        ("p4_14_router", "-"),
        ("v1model_misc", "-"),
        ("telemetry", "-"),
        ("vxlan_gateway", "-"),
        ("bng", "-"),
        ("arith_ops", "-"),
        ("control_flow", "-"),
        ("ipv4_options", "-"),
        ("ipv6_router", "-"),
        ("length_ops", "-"),
        ("lookahead_short", "-"),
        ("std_meta_copy", "-"),
        ("p4rt_switch", "-"),
        ("udp_tcp_checksum", "-"),
    ] {
        let (program, frames, commands) = corpus_case(name, stf);
        let want = run_logged(
            &SwitchSpec::bmv2(&bmv2),
            &cli,
            &work.join(format!("{name}-bmv2")),
            &program,
            &commands,
            &frames,
        );
        let got = run_logged(
            &SwitchSpec::p4jet(Path::new(p4jet())),
            &cli,
            &work.join(format!("{name}-p4jet")),
            &program,
            &commands,
            &frames,
        );
        let (want, got) = (per_packet(&want), per_packet(&got));
        assert!(!want.is_empty(), "{name}: no per-packet lines from bmv2");
        for id in want.keys().chain(got.keys()) {
            let (w, g) = (want.get(id), got.get(id));
            if w != g {
                let w = w.cloned().unwrap_or_default();
                let g = g.cloned().unwrap_or_default();
                let at = w
                    .iter()
                    .zip(&g)
                    .position(|(a, b)| a != b)
                    .unwrap_or(w.len().min(g.len()));
                failures.push(format!(
                    "{name} [{}.{}], line {at}:\n  bmv2:  {:?}\n  p4jet: {:?}",
                    id.0,
                    id.1,
                    w.get(at),
                    g.get(at)
                ));
                break;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// basic_l2 with its commands, `frames` frames from port 0 to the host on port 1,
/// extra `p4jet run` arguments; returns the run's directory after it stopped.
fn basic_l2_run(name: &str, frames: usize, extra: &[&str]) -> PathBuf {
    let dir = tmpdir(name);
    let commands = corpus().join("basic_l2/basic_l2.commands");
    let commands = commands.to_str().unwrap();
    let mut args = vec!["--commands", commands];
    args.extend_from_slice(extra);
    let mut r = Running::start(&dir, &corpus_json("basic_l2"), &[0, 1], &args);
    let frame = unhex(
        "000000000011 000000000010 0800 4500002E00004000401126BD0A0000010A000002 \
         03E807D1001A0000 000102030405060708090A0B0C0D0E0F1011",
    );
    for _ in 0..frames {
        r.send(0, &frame);
    }
    r.wait_outputs(&[(1, frames)]);
    r.stop();
    dir
}

#[test]
fn log_level_selects_lines() {
    let levels = |log: &str| -> Vec<String> {
        log.lines()
            .filter_map(parse_line)
            .map(|(l, _)| l.to_string())
            .collect()
    };
    // the default, trace: every level
    let dir = basic_l2_run("log-level-trace", 1, &[]);
    let log = std::fs::read_to_string(dir.join("switch.log.txt")).unwrap();
    let got = per_packet(&log);
    let lines = &got[&(0, 0)];
    for want in [
        "[D] Processing packet received on port 0",
        "[D] Parser 'parser': start",
        "[D] Extracting header 'ethernet'",
        "[D] Parser state 'start' has no switch, going to default next state",
        "[T] Bytes parsed: 14",
        "[T] Applying table 'IngressImpl.dmac'",
        "[D] Looking up key:\n* hdr.ethernet.dst_addr: 000000000011",
        "[D] Table 'IngressImpl.dmac': hit with handle 1",
        "[D] Action entry is IngressImpl.forward - 1,",
        "[T] basic_l2.p4(53) Primitive std_meta.egress_spec = port",
        "[D] Egress port is 1",
        "[D] Deparsing header 'ethernet'",
        "[D] Transmitting packet of size 60 out of port 1",
    ] {
        assert!(
            lines.iter().any(|l| l == want),
            "missing {want:?} in\n{}",
            lines.join("\n")
        );
    }
    let lv = levels(&log);
    assert!(lv.iter().any(|l| l == "T") && lv.iter().any(|l| l == "D"));
    // debug: no trace lines
    let dir = basic_l2_run("log-level-debug", 1, &["-L", "debug"]);
    let log = std::fs::read_to_string(dir.join("switch.log.txt")).unwrap();
    let lv = levels(&log);
    assert!(lv.iter().any(|l| l == "D"), "{log}");
    assert!(lv.iter().all(|l| l != "T"), "{log}");
    // info: basic_l2 logs nothing above debug for a packet
    let dir = basic_l2_run("log-level-info", 1, &["--log-level", "info"]);
    let log = std::fs::read_to_string(dir.join("switch.log.txt")).unwrap_or_default();
    assert!(per_packet(&log).is_empty(), "{log}");
    // off: no log at all
    let dir = basic_l2_run("log-level-off", 1, &["-L", "off"]);
    let log = std::fs::read_to_string(dir.join("switch.log.txt")).unwrap_or_default();
    assert!(log.is_empty(), "{log}");
}

#[test]
fn log_file_rotates_within_size_and_count() {
    let dir = basic_l2_run(
        "log-rotation",
        40,
        &["--log-file-max-size", "4000", "--log-file-max-files", "2"],
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("switch.log"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["switch.log.1.txt", "switch.log.2.txt", "switch.log.txt"]
    );
    for n in &names {
        let text = std::fs::read_to_string(dir.join(n)).unwrap();
        assert!(text.len() <= 4000, "{n}: {} bytes", text.len());
        assert!(text.ends_with('\n'), "{n} ends mid-line");
    }
    // the newest file holds the last packet's lines
    let last = per_packet(&std::fs::read_to_string(dir.join("switch.log.txt")).unwrap());
    assert!(last.keys().any(|id| id.0 == 39), "{last:?}");
}

/// `--dump-packet-data N`: the `Received packet ...` and `Sending packet ...` lines
/// (the first N bytes in hex; multicast copies, clones and truncation included) are
/// those bmv2 writes for the same frames.
#[test]
fn dumped_packet_data_matches_bmv2() {
    let Some(shared) = shared_dir() else {
        return skipped("SKIPPED: dump-packet-data against bmv2: ../shared is absent");
    };
    let bmv2 = shared.join("reference/bin/simple_switch");
    if !bmv2.is_file() {
        return skipped("SKIPPED: dump-packet-data against bmv2: no reference simple_switch");
    }
    let Some(cli) = stock_cli() else {
        return skipped("SKIPPED: dump-packet-data against bmv2: no stock simple_switch_CLI");
    };
    let cli = StockCli { path: cli };
    let work = tmpdir("log-dump");
    let dumps = |log: &str| -> Vec<String> {
        let mut v: Vec<String> = log
            .lines()
            .filter_map(parse_line)
            .filter(|(_, m)| m.starts_with("Received packet") || m.starts_with("Sending packet"))
            .map(|(l, m)| format!("[{l}] {m}"))
            .collect();
        v.sort();
        v
    };
    for (name, stf, bytes) in [
        ("basic_l2", "hit.stf", "16"),
        ("multicast", "replication.stf", "1000"),
        ("mirror_clone", "ingress_mirror.stf", "40"),
        ("v1model_misc", "truncate.stf", "200"),
    ] {
        let (program, frames, commands) = corpus_case(name, stf);
        let mut b = SwitchSpec::bmv2(&bmv2);
        let mut p = SwitchSpec::p4jet(Path::new(p4jet()));
        for s in [&mut b, &mut p] {
            s.pre_args
                .extend(["--dump-packet-data".to_string(), bytes.to_string()]);
        }
        let want = dumps(&run_logged(
            &b,
            &cli,
            &work.join(format!("{name}-bmv2")),
            &program,
            &commands,
            &frames,
        ));
        let got = dumps(&run_logged(
            &p,
            &cli,
            &work.join(format!("{name}-p4jet")),
            &program,
            &commands,
            &frames,
        ));
        assert!(
            want.iter().any(|l| l.contains("Sending packet")),
            "{name}: bmv2 sent nothing: {want:?}"
        );
        assert_eq!(want, got, "{name}");
    }
}
