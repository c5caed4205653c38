//! The p4lang tutorials' workflow with p4jet: a Mininet network of switches started
//! as `simple_switch_grpc --no-p4` with the tutorials' flags, a P4Runtime controller
//! that pushes the pipeline and the routes, hosts that ping each other.
//!
//! `examples/mininet/network.py` (Debian's Mininet, no Open vSwitch) runs in a
//! network namespace of its own, so the tutorials' fixed ports (gRPC 50051..., Thrift
//! 9090...) and interface names cannot meet another test's; `controller.py` runs with
//! the PyPI `p4runtime` package from the P4Runtime test venv. Two networks, one after
//! the other: the tutorials' size (three switches in a triangle) and the fleet case
//! (twenty switches in a ring: 380 host pairs, paths of up to eleven switches). Each
//! reports its convergence time and every switch's idle CPU time and resident memory,
//! which are checked against bounds a spinning or leaking switch would cross.
//!
//! Not root, no Mininet, no venv: `SKIPPED: ...`; `P4JET_REQUIRE_P4RT=1` makes that a
//! failure.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use common::{del_netns, p4jet, p4rt_venv, remove_stale_namespaces, run_with_input, sh, skipped};

const NS_PREFIX: &str = "p4jmn";
/// One network at a time: the machine has few cores, and the idle figures are only
/// meaningful without the other network's start-up beside them.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The namespace; the processes left in it (the switches, should the script die
/// before it stops them) are killed before it is deleted.
struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        if let Ok(pids) = sh(Command::new("ip").args(["netns", "pids", &self.0])) {
            for pid in pids.split_whitespace() {
                let _ = Command::new("kill").args(["-KILL", pid]).status();
            }
        }
        del_netns(&self.0);
    }
}

fn skip(why: &str) {
    let msg = format!("SKIPPED: p4rt_mininet: {why}");
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

/// Mininet is Debian's (`python3-mininet`, for the system Python).
const SYSTEM_PYTHON: &str = "/usr/bin/python3";

/// Runs `network.py` with `switches` switches; returns its summary.
fn network(switches: u32) -> Option<serde_json::Value> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() {
        skip("needs root (Mininet)");
        return None;
    }
    if sh(Command::new(SYSTEM_PYTHON).args(["-c", "import mininet.net"])).is_err()
        || sh(Command::new("sh").args(["-c", "command -v mnexec && command -v ping"])).is_err()
    {
        skip("Mininet is not installed (Debian: apt-get install mininet iputils-ping)");
        return None;
    }
    if sh(Command::new("ip").args(["netns", "list"])).is_err() {
        skip("`ip netns` does not work here");
        return None;
    }
    let venv = p4rt_venv()?;
    remove_stale_namespaces(NS_PREFIX);
    let ns = Ns(format!("{NS_PREFIX}-{}-{switches}", std::process::id()));
    sh(Command::new("ip").args(["netns", "add", &ns.0])).unwrap();
    let dir = common::tmpdir(&format!("p4rt-mininet-{switches}"));
    // the name the tutorials' launcher runs
    let link = dir.join("simple_switch_grpc");
    std::os::unix::fs::symlink(p4jet(), &link).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/mininet/network.py");
    let summary = dir.join("summary.json");
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns.0, SYSTEM_PYTHON])
        .arg(&script)
        .arg("--switches")
        .arg(switches.to_string())
        .arg("--sw-path")
        .arg(&link)
        .arg("--controller-python")
        .arg(venv.join("python3"))
        .arg("--log-dir")
        .arg(&dir)
        .arg("--summary")
        .arg(&summary)
        .args(["--idle-seconds", "5"])
        .current_dir(&dir)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let (out, err, st) = run_with_input(&mut cmd, "");
    println!("---- network.py --switches {switches}\n{out}{err}");
    let logs = || {
        (1..=switches)
            .map(|k| {
                let f = dir.join(format!("p4s.s{k}.log"));
                format!(
                    "-- s{k}\n{}",
                    std::fs::read_to_string(f).unwrap_or_default()
                )
            })
            .collect::<String>()
    };
    assert!(
        st.success(),
        "network.py failed ({st}); switch logs:\n{}",
        logs()
    );
    let text = std::fs::read_to_string(&summary).unwrap();
    let s: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(s["ok"], true, "{text}");
    let log = logs();
    assert!(
        !log.contains("panicked"),
        "a switch panicked; switch logs:\n{log}"
    );
    Some(s)
}

fn check(s: &serde_json::Value, switches: u64) {
    let n = switches;
    assert_eq!(s["pings"].as_u64(), Some(n * (n - 1)), "{s}");
    assert_eq!(s["pings_lost"].as_u64(), Some(0), "{s}");
    let idle = s["idle"].as_array().unwrap();
    assert_eq!(idle.len() as u64, n);
    for sw in idle {
        // a forwarding thread that spins holds a whole core (100 %); an idle switch
        // wakes about 50 times a second and holds well under 1 %
        let cpu = sw["cpu_pct"].as_f64().unwrap();
        assert!(cpu < 5.0, "an idle switch uses {cpu} % of a core: {sw}");
        let rss = sw["rss_kb"].as_u64().unwrap();
        assert!(rss < 128 * 1024, "an idle switch holds {rss} kB: {sw}");
    }
    println!(
        "{n} switches: converged in {:.2} s (up {:.2} s, controller {:.2} s, {} pings {:.2} s); \
         idle per switch: CPU mean {:.2} % max {:.2} % of a core, RSS mean {:.1} MB max {:.1} MB",
        s["converged_s"].as_f64().unwrap(),
        s["switches_up_s"].as_f64().unwrap(),
        s["controller_s"].as_f64().unwrap(),
        s["pings"],
        s["ping_s"].as_f64().unwrap(),
        s["idle_cpu_pct_mean"].as_f64().unwrap(),
        s["idle_cpu_pct_max"].as_f64().unwrap(),
        s["idle_rss_mb_mean"].as_f64().unwrap(),
        s["idle_rss_mb_max"].as_f64().unwrap(),
    );
}

#[test]
fn tutorial_triangle_of_three_switches() {
    if let Some(s) = network(3) {
        check(&s, 3);
    }
}

#[test]
fn fleet_of_twenty_switches() {
    if let Some(s) = network(20) {
        check(&s, 20);
    }
}
