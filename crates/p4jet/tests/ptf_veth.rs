//! PTF over veth: `p4jet run` forwards between veth pairs in network namespaces
//! while the P4 Testing Framework (PyPI `ptf` + `scapy`, installed by this test into
//! a venv under the cargo target dir) sends and checks frames on the other ends.
//!
//! Per test: namespace `…-sw` holds the switch ends `veth0..3` (p4jet's `-i N@vethN`,
//! with `--port-type af_packet` or `af_xdp`), namespace `…-t` the peers `peer0..3`
//! (PTF's `--interface N@peerN`). IPv6 is off on every test interface before it
//! comes up, so no router solicitation, DAD or MLD frame reaches the switch or
//! PTF's `verify_no_other_packets`. Both namespaces (and so the veths) are removed
//! by a guard, also when the test fails. The PTF tests are in `tests/ptf/*.py`.
//!
//! Not root, no `ip`, no Python venv/pip, or AF_XDP refused by the kernel: the test
//! prints `SKIPPED: <reason>` and returns; `P4JET_REQUIRE_PTF=1` makes that a failure.
//! `P4JET_PTF=/path/to/ptf` uses an installed ptf instead of the venv.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{corpus_json, del_netns, p4jet, remove_stale_namespaces, run_with_input, sh};

/// Switch ports 0..PORTS, as in the corpus commands files.
const PORTS: u32 = 4;
/// Prefix of every namespace these tests create (`<prefix>-<pid>-<n>-{sw,t}`).
const NS_PREFIX: &str = "p4jptf";

#[test]
fn ptf_basic_l2_af_packet() {
    run_case("basic_l2", "af_packet", 5);
}

#[test]
fn ptf_basic_l2_af_xdp() {
    run_case("basic_l2", "af_xdp", 5);
}

#[test]
fn ptf_simple_router_af_packet() {
    run_case("simple_router", "af_packet", 7);
}

#[test]
fn ptf_simple_router_af_xdp() {
    run_case("simple_router", "af_xdp", 7);
}

/// The same tests over DPDK ports: `-i N@dpdk:net_af_packetN,iface=vethN` (the EAL
/// without hugepages); needs the `dpdk` feature.
#[cfg(feature = "dpdk")]
#[test]
fn ptf_basic_l2_dpdk() {
    run_case("basic_l2", "dpdk", 5);
}

#[cfg(feature = "dpdk")]
#[test]
fn ptf_simple_router_dpdk() {
    run_case("simple_router", "dpdk", 7);
}

#[cfg(not(feature = "dpdk"))]
#[test]
fn ptf_dpdk() {
    note(
        "SKIPPED: ptf_veth basic_l2/simple_router over DPDK: p4jet was built without \
         the `dpdk` feature (cargo test -p p4jet --features dpdk --test ptf_veth dpdk)",
    );
}

/// `-i` of switch port `p` for `port_type`.
fn iface_spec(p: u32, port_type: &str) -> String {
    if port_type == "dpdk" {
        format!("{p}@dpdk:net_af_packet{p},iface=veth{p}")
    } else {
        format!("{p}@veth{p}")
    }
}

/// `--port-type` takes the three backends and refuses anything else (no root needed).
#[test]
fn port_type_flag_is_validated() {
    let out = Command::new(p4jet())
        .args(["run", "--port-type", "bogus"])
        .arg(corpus_json("basic_l2"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid value 'bogus' for '--port-type")
            && err.contains("auto, af_xdp, af_packet"),
        "{err}"
    );
}

/// `--xdp-zero-copy force` on veth (no zero-copy driver): the switch refuses to start and
/// says why, naming the interface; `--xdp-mode generic` with it is refused the same way.
#[test]
fn forced_zero_copy_fails_clearly_on_veth() {
    let name = "forced_zero_copy_fails_clearly_on_veth";
    if let Err(why) = prerequisites() {
        return skip(name, &why);
    }
    let topo = Topology::new().unwrap_or_else(|e| panic!("{name}: building the topology: {e}"));
    for mode in ["auto", "generic"] {
        let out = Command::new("ip")
            .args(["netns", "exec", &topo.sw, p4jet(), "run"])
            .arg(corpus_json("basic_l2"))
            .args([
                "--port-type",
                "af_xdp",
                "--xdp-zero-copy",
                "force",
                "--xdp-mode",
                mode,
            ])
            .args(["-i", "1@veth1"])
            .args(["--thrift-port", "0", "--duration", "1"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "started with forced zero-copy:\n{err}"
        );
        assert!(
            err.contains("zero-copy") && err.contains("veth1"),
            "{mode}: {err}"
        );
    }
    let out = Command::new(p4jet())
        .args(["run", "--xdp-zero-copy", "sometimes"])
        .arg(corpus_json("basic_l2"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("auto, force, off"), "{err}");
}

/// Printed where a plain `cargo test` shows it (not captured).
fn note(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// Skips the test with `reason`, or fails it under `P4JET_REQUIRE_PTF`.
fn skip(name: &str, reason: &str) {
    let msg = format!("SKIPPED: {name}: {reason}");
    if std::env::var_os("P4JET_REQUIRE_PTF").is_some() {
        panic!("{msg} (P4JET_REQUIRE_PTF is set)");
    }
    note(&msg);
}

// ------------------------------------------------------------------ the test case

fn run_case(program: &str, port_type: &str, min_tests: usize) {
    let name = format!("ptf_veth {program} {port_type}");
    if let Err(why) = prerequisites() {
        return skip(&name, &why);
    }
    let ptf = match ptf_bin() {
        Ok(p) => p,
        Err(why) => return skip(&name, &format!("PTF is not available: {why}")),
    };
    let t0 = Instant::now();
    let dir = common::tmpdir(&format!("ptf-{program}-{port_type}"));
    let topo = Topology::new().unwrap_or_else(|e| panic!("{name}: building the topology: {e}"));
    let t_topo = t0.elapsed();

    // the switch, in the switch namespace
    let corpus = corpus_json(program);
    let cmds = corpus.with_extension("commands");
    let extra = ptf_dir().join(format!("{program}.commands"));
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &topo.sw, p4jet(), "run"])
        .arg(&corpus)
        .arg("--commands")
        .arg(&cmds);
    if extra.is_file() {
        cmd.arg("--commands").arg(&extra);
    }
    if port_type != "dpdk" {
        cmd.args(["--port-type", port_type]);
    }
    cmd.args(["--thrift-port", "9090"]);
    for p in 0..PORTS {
        cmd.arg("-i").arg(iface_spec(p, port_type));
    }
    cmd.current_dir(&dir)
        .stdout(Stdio::from(File::create(dir.join("switch.out")).unwrap()))
        .stderr(Stdio::from(File::create(dir.join("switch.err")).unwrap()));
    // `ip netns exec` execs the command: the child is p4jet itself
    let mut sw = SwitchProc {
        child: Some(cmd.spawn().unwrap()),
        dir: dir.clone(),
    };
    if let Err(e) = sw.wait_ports(port_type) {
        drop(sw);
        drop(topo);
        if port_type == "af_xdp" && e.contains("exited") {
            return skip(&name, &format!("p4jet cannot open AF_XDP ports here: {e}"));
        }
        panic!("{name}: {e}");
    }
    let t_switch = t0.elapsed();

    // PTF, in the test namespace
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &topo.test])
        .arg(&ptf)
        .arg("--test-dir")
        .arg(ptf_dir())
        .arg("--log-file")
        .arg(dir.join("ptf.log"))
        .args(["--test-case-timeout", "60", "--default-timeout", "5"]);
    for p in 0..PORTS {
        cmd.arg("--interface").arg(format!("{p}@peer{p}"));
    }
    cmd.arg(program)
        .current_dir(&dir)
        .env("PYTHONDONTWRITEBYTECODE", "1"); // no __pycache__ in the source tree
    let (out, err, status) = run_with_input(&mut cmd, "");
    let t_ptf = t0.elapsed() - t_switch;
    let ptf_out = format!("{out}{err}");
    println!("---- PTF output\n{ptf_out}");

    let alive = sw.child.as_mut().unwrap().try_wait().unwrap().is_none();
    let (sw_status, counts) = sw.stop();
    let ran = ptf_out.lines().find_map(|l| {
        l.strip_prefix("Ran ")?
            .split(' ')
            .next()?
            .parse::<usize>()
            .ok()
    });
    assert!(
        status.success() && ptf_out.lines().any(|l| l == "OK"),
        "{name}: PTF failed ({status}; its output is above)\nswitch stderr:\n{}\nPTF log: {}",
        sw.stderr(),
        dir.join("ptf.log").display()
    );
    assert!(
        ran.is_some_and(|n| n >= min_tests),
        "{name}: PTF ran {ran:?} tests, expected at least {min_tests}:\n{ptf_out}"
    );
    assert!(
        alive,
        "{name}: p4jet died during the PTF run:\n{}",
        sw.stderr()
    );
    assert!(
        sw_status,
        "{name}: p4jet did not exit cleanly on SIGTERM:\n{}",
        sw.stderr()
    );
    drop(topo);
    note(&format!(
        "{name}: {} PTF tests passed; {:.1} s in all (topology {:.1} s, switch up {:.1} s, PTF {:.1} s)\n{counts}",
        ran.unwrap_or(0),
        t0.elapsed().as_secs_f64(),
        t_topo.as_secs_f64(),
        (t_switch - t_topo).as_secs_f64(),
        t_ptf.as_secs_f64()
    ));
}

/// `crates/p4jet/tests/ptf`: the PTF test modules.
fn ptf_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ptf")
}

/// Root, `ip`, network namespaces.
fn prerequisites() -> Result<(), String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("?");
    if euid != "0" {
        return Err(format!(
            "needs root for network namespaces and veth pairs (euid {euid})"
        ));
    }
    sh(Command::new("ip").arg("-V")).map_err(|e| format!("no usable `ip` command: {e}"))?;
    sh(Command::new("ip").args(["netns", "list"]))
        .map_err(|e| format!("`ip netns` does not work: {e}"))?;
    Ok(())
}

// -------------------------------------------------------------------------- PTF

/// The `ptf` script: `P4JET_PTF`, or a venv under the target dir with `ptf` and
/// `scapy` from PyPI, installed once (later runs reuse it).
fn ptf_bin() -> Result<PathBuf, String> {
    static PTF: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PTF.get_or_init(install_ptf).clone()
}

fn install_ptf() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("P4JET_PTF") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("P4JET_PTF={} is not a file", p.display()))
        };
    }
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let venv = tmp.join("ptf-venv");
    let python = venv.join("bin/python3");
    let ptf = venv.join("bin/ptf");
    // other test processes may install at the same time: one at a time
    let lock = tmp.join("ptf-venv.lock");
    let start = Instant::now();
    while std::fs::create_dir(&lock).is_err() {
        if start.elapsed() > Duration::from_secs(600) {
            let _ = std::fs::remove_dir(&lock); // left by a killed run
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let r = (|| {
        let ready =
            ptf.is_file() && sh(Command::new(&python).args(["-c", "import ptf, scapy"])).is_ok();
        if !ready {
            let _ = std::fs::remove_dir_all(&venv);
            sh(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
            let t = Instant::now();
            sh(Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "ptf",
                "scapy",
            ]))?;
            note(&format!(
                "ptf_veth: installed ptf and scapy into {} in {:.0} s",
                venv.display(),
                t.elapsed().as_secs_f64()
            ));
        }
        if !ptf.is_file() {
            return Err(format!("{} missing after pip install ptf", ptf.display()));
        }
        Ok(ptf.clone())
    })();
    let _ = std::fs::remove_dir(&lock);
    r
}

// --------------------------------------------------------------------- topology

/// Two namespaces joined by four veth pairs: `veth<N>` in `sw`, `peer<N>` in `test`.
/// Dropping it deletes both namespaces, which destroys the veths.
struct Topology {
    sw: String,
    test: String,
}

impl Topology {
    fn new() -> Result<Topology, String> {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        remove_stale_namespaces(NS_PREFIX);
        let base = format!(
            "{NS_PREFIX}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let mut t = Topology {
            sw: String::new(),
            test: String::new(),
        };
        // fields are filled as the namespaces come into being, so Drop removes
        // whatever exists when a later step fails
        let sw = format!("{base}-sw");
        sh(Command::new("ip").args(["netns", "add", &sw]))?;
        t.sw = sw;
        let test = format!("{base}-t");
        sh(Command::new("ip").args(["netns", "add", &test]))?;
        t.test = test;
        let ipv6 = Path::new("/proc/sys/net/ipv6").exists();
        for ns in [&t.sw, &t.test] {
            sh(Command::new("ip").args(["-n", ns, "link", "set", "lo", "up"]))?;
            if ipv6 {
                // interfaces created from now on start with IPv6 off
                sysctl(ns, "net.ipv6.conf.default.disable_ipv6=1")?;
                sysctl(ns, "net.ipv6.conf.all.disable_ipv6=1")?;
            }
        }
        for p in 0..PORTS {
            let (v, peer) = (format!("veth{p}"), format!("peer{p}"));
            sh(Command::new("ip").args([
                "-n", &t.sw, "link", "add", &v, "type", "veth", "peer", "name", &peer, "netns",
                &t.test,
            ]))?;
            if ipv6 {
                // no router solicitations, DAD or MLD reports once the links are up
                sysctl(&t.sw, &format!("net.ipv6.conf.{v}.disable_ipv6=1"))?;
                sysctl(&t.test, &format!("net.ipv6.conf.{peer}.disable_ipv6=1"))?;
            }
            sh(Command::new("ip").args(["-n", &t.sw, "link", "set", &v, "up"]))?;
            sh(Command::new("ip").args(["-n", &t.test, "link", "set", &peer, "up"]))?;
        }
        Ok(t)
    }
}

fn sysctl(ns: &str, setting: &str) -> Result<String, String> {
    sh(Command::new("ip").args(["netns", "exec", ns, "sysctl", "-qw", setting]))
}

impl Drop for Topology {
    fn drop(&mut self) {
        for ns in [&self.sw, &self.test] {
            if !ns.is_empty() {
                del_netns(ns);
            }
        }
    }
}

// ----------------------------------------------------------------------- switch

/// The running `p4jet run`; killed on drop if still running.
struct SwitchProc {
    child: Option<Child>,
    dir: PathBuf,
}

impl SwitchProc {
    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("switch.err")).unwrap_or_default()
    }

    /// Waits until every port is open with the backend asked for.
    fn wait_ports(&mut self, port_type: &str) -> Result<(), String> {
        let start = Instant::now();
        loop {
            let err = self.stderr();
            let lines: Vec<&str> = (0..PORTS)
                .filter_map(|p| {
                    let tag = format!("p4jet: port {}: ", iface_spec(p, port_type));
                    err.lines().find(|l| l.starts_with(&tag))
                })
                .collect();
            if lines.len() == PORTS as usize {
                let (want, forced) = match port_type {
                    "af_xdp" => ("AF_XDP on veth", "forced)"),
                    "dpdk" => ("DPDK net_af_packet", "(driver net_af_packet"),
                    _ => ("AF_PACKET TPACKET_V3 on veth", "forced)"),
                };
                for l in &lines {
                    if !l.contains(want) || !l.contains(forced) {
                        return Err(format!("port opened with the wrong backend: {l}"));
                    }
                }
                println!("switch ports:\n{}", lines.join("\n"));
                return Ok(());
            }
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                return Err(format!("p4jet run exited ({st}):\n{err}"));
            }
            if start.elapsed() > Duration::from_secs(20) {
                return Err(format!("ports not open after 20 s:\n{err}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, wait; whether it exited with success, and its per-port counts.
    fn stop(&mut self) -> (bool, String) {
        let mut child = self.child.take().unwrap();
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let start = Instant::now();
        let ok = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st.success();
            }
            if start.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let _ = child.wait();
                break false;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let out = std::fs::read_to_string(self.dir.join("switch.out")).unwrap_or_default();
        let counts = out
            .lines()
            .skip_while(|l| !l.starts_with("port "))
            .collect::<Vec<_>>()
            .join("\n");
        (ok, counts)
    }
}

impl Drop for SwitchProc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
