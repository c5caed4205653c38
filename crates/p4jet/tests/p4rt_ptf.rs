//! Forwarding programmed over P4Runtime, checked on veth pairs with PTF and scapy.
//!
//! One network namespace holds four veth pairs (`vethN` for the switch, `peerN` for
//! PTF), IPv6 off so that no stray frame reaches either side. In it, p4jet runs as
//! `simple_switch_grpc --no-p4 -i N@vethN -- --grpc-server-addr 127.0.0.1:P
//! --cpu-port 255`, and PTF (`tests/p4rt/ptf/p4rt_forwarding.py`) pushes
//! p4rt_switch, writes entries and checks unicast, flooding, packet-in/out and an
//! acl drop. The namespace (and the veths) are removed by a guard.
//!
//! Not root, no `ip`, no venv: `SKIPPED: ...`; `P4JET_REQUIRE_P4RT=1` makes that a
//! failure.
#![allow(clippy::unwrap_used)]

mod common;

use std::fs::File;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    corpus_file, del_netns, p4jet, p4rt_script, p4rt_venv, remove_stale_namespaces, run_with_input,
    sh, skipped,
};

const NS_PREFIX: &str = "p4jrt";

struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        del_netns(&self.0);
    }
}

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn skip(why: &str) {
    let msg = format!("SKIPPED: p4rt_ptf: {why}");
    assert!(std::env::var_os("P4JET_REQUIRE_P4RT").is_none(), "{msg}");
    skipped(&msg);
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

#[test]
fn ptf_over_veth_programmed_by_p4runtime() {
    if !is_root() {
        return skip("needs root for a network namespace and veth pairs");
    }
    if sh(Command::new("ip").args(["netns", "list"])).is_err() {
        return skip("`ip netns` does not work here");
    }
    let Some(bin) = p4rt_venv() else { return };
    remove_stale_namespaces(NS_PREFIX);
    let ns = Ns(format!("{NS_PREFIX}-{}-0", std::process::id()));
    let ip = |args: &[&str]| sh(Command::new("ip").args(["-n", &ns.0]).args(args));
    sh(Command::new("ip").args(["netns", "add", &ns.0])).unwrap();
    ip(&["link", "set", "lo", "up"]).unwrap();
    for p in 0..4 {
        let (v, peer) = (format!("veth{p}"), format!("peer{p}"));
        ip(&["link", "add", &v, "type", "veth", "peer", "name", &peer]).unwrap();
        for i in [&v, &peer] {
            let _ = sh(Command::new("ip")
                .args(["netns", "exec", &ns.0, "sysctl", "-qw"])
                .arg(format!("net.ipv6.conf.{i}.disable_ipv6=1")));
            ip(&["link", "set", i, "up"]).unwrap();
        }
    }
    let dir = common::tmpdir("p4rt-ptf");
    let link = dir.join("simple_switch_grpc");
    std::os::unix::fs::symlink(p4jet(), &link).unwrap();
    let grpc = "127.0.0.1:9559";
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns.0]).arg(&link).args([
        "--no-p4",
        "--device-id",
        "1",
        "--thrift-port",
        "9090",
    ]);
    for p in 0..4 {
        cmd.arg("-i").arg(format!("{p}@veth{p}"));
    }
    cmd.args(["--", "--grpc-server-addr", grpc, "--cpu-port", "255"])
        .current_dir(&dir)
        .stdout(Stdio::from(File::create(dir.join("switch.out")).unwrap()))
        .stderr(Stdio::from(File::create(dir.join("switch.err")).unwrap()));
    let mut sw = Proc(cmd.spawn().unwrap());
    let err = || std::fs::read_to_string(dir.join("switch.err")).unwrap_or_default();
    let start = Instant::now();
    while !err().contains("Server listening on") {
        assert!(
            sw.0.try_wait().unwrap().is_none(),
            "the switch exited:\n{}",
            err()
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no gRPC server:\n{}",
            err()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns.0])
        .arg(bin.join("ptf"))
        .arg("--test-dir")
        .arg(p4rt_script("ptf"))
        .arg("--pypath")
        .arg(p4rt_script(""))
        .arg("--log-file")
        .arg(dir.join("ptf.log"))
        .args(["--test-case-timeout", "120", "--default-timeout", "5"]);
    for p in 0..4 {
        cmd.arg("--interface").arg(format!("{p}@peer{p}"));
    }
    cmd.arg("--test-params").arg(format!(
        "grpc_addr='{grpc}';p4info='{}';json='{}'",
        corpus_file("p4rt_switch/p4rt_switch.p4info.txtpb").display(),
        corpus_file("p4rt_switch/p4rt_switch.json").display()
    ));
    cmd.arg("p4rt_forwarding")
        .current_dir(&dir)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let (out, e, st) = run_with_input(&mut cmd, "");
    println!("---- PTF output\n{out}{e}");
    assert!(
        st.success() && format!("{out}{e}").lines().any(|l| l == "OK"),
        "PTF failed; switch stderr:\n{}",
        err()
    );
    assert!(
        sw.0.try_wait().unwrap().is_none(),
        "the switch died:\n{}",
        err()
    );
    drop(sw);
    drop(ns);
}
