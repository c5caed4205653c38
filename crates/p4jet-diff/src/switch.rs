//! Running a simple_switch-compatible binary (bmv2's `simple_switch` or `p4jet run`) the
//! way p4c's STF driver does: one pcap FIFO per port (`--use-files 0`), table entries
//! through the stock `simple_switch_CLI`, frames written with increasing timestamps so
//! that the switch's timestamp merge of its inputs sees them in one global order.
//!
//! bmv2's pcap reader takes the earliest record among the heads of all its input files
//! and then blocks reading the next record of the file it took it from; so every input
//! FIFO is fed by its own writer thread (a single writer filling one port's pipe while
//! the reader waits on another's would deadlock), and a port without frames is closed
//! (end of file) as soon as the table entries are in.

use std::fs::File;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::pcap;

/// How to start one kind of switch.
#[derive(Debug, Clone)]
pub struct SwitchSpec {
    /// Name used in reports (`bmv2`, `p4jet`).
    pub name: String,
    /// The executable.
    pub bin: PathBuf,
    /// Arguments before simple_switch's own (`run` for p4jet).
    pub pre_args: Vec<String>,
    /// Target options after `--` (e.g. `--priority-queues 8`).
    pub target_args: Vec<String>,
    /// Keep a per-packet log (`--log-file switch`): slow on bmv2.
    pub log: bool,
}

impl SwitchSpec {
    /// bmv2 simple_switch at `bin`.
    pub fn bmv2(bin: &Path) -> SwitchSpec {
        SwitchSpec {
            name: "bmv2".into(),
            bin: bin.to_path_buf(),
            pre_args: vec![],
            target_args: vec![],
            log: false,
        }
    }

    /// `p4jet run` at `bin`, without a limit on resubmit/recirculate passes and
    /// waiting for every open pcap input (as simple_switch: p4jet's defaults, 64
    /// passes and 1 s, are intended differences).
    pub fn p4jet(bin: &Path) -> SwitchSpec {
        SwitchSpec {
            name: "p4jet".into(),
            bin: bin.to_path_buf(),
            pre_args: vec![
                "run".into(),
                "--max-passes".into(),
                "1000000".into(),
                // wait for every open input as simple_switch does: frames enter in
                // timestamp order however late a writer is
                "--pcap-fifo-wait".into(),
                "1000000".into(),
            ],
            target_args: vec![],
            log: false,
        }
    }
}

/// A TCP port free right now (the switch binds it a moment later).
pub fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// One input FIFO: its writer thread takes batches of records (or `None` to close).
struct Input {
    port: u32,
    tx: Option<mpsc::Sender<Vec<u8>>>,
    thread: Option<JoinHandle<Result<(), String>>>,
}

/// A running switch with pcap FIFO ports.
pub struct Running {
    child: Option<Child>,
    /// Working directory (pcap files, logs).
    pub dir: PathBuf,
    /// Thrift port.
    pub thrift_port: u16,
    /// Device id (the notification socket's name depends on it).
    pub device_id: u32,
    inputs: Vec<Input>,
    ports: Vec<u32>,
    ts: u64,
    name: String,
}

/// Where a switch started in `dir` publishes its notifications (a Unix socket path,
/// absolute and short enough for `sun_path`).
pub fn notifications_path(dir: &Path) -> Result<PathBuf, String> {
    let d = std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let p = d.join("notify.ipc");
    if p.as_os_str().len() < 100 {
        return Ok(p);
    }
    // too long for a Unix socket address: a name under /tmp derived from the dir
    let h = d
        .to_string_lossy()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    Ok(PathBuf::from(format!("/tmp/p4jet-diff-{h:016x}.ipc")))
}

fn mkfifo(path: &Path) -> Result<(), String> {
    let st = Command::new("mkfifo")
        .arg(path)
        .status()
        .map_err(|e| format!("mkfifo: {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("mkfifo {} failed", path.display()))
    }
}

impl Running {
    /// Starts `spec` on `program` with FIFO ports `ports` (pcapN_in.pcap /
    /// pcapN_out.pcap in `dir`), opens the inputs in port order and waits for the
    /// Thrift server.
    pub fn start(
        spec: &SwitchSpec,
        dir: &Path,
        program: &Path,
        ports: &[u32],
        device_id: u32,
        extra: &[String],
    ) -> Result<Running, String> {
        let mut ports = ports.to_vec();
        ports.sort_unstable();
        ports.dedup();
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for p in &ports {
            let fifo = dir.join(format!("pcap{p}_in.pcap"));
            let _ = std::fs::remove_file(&fifo);
            let _ = std::fs::remove_file(dir.join(format!("pcap{p}_out.pcap")));
            mkfifo(&fifo)?;
        }
        let thrift_port = free_port()?;
        let program =
            std::fs::canonicalize(program).map_err(|e| format!("{}: {e}", program.display()))?;
        let bin = if spec.bin.components().count() > 1 {
            std::fs::canonicalize(&spec.bin).map_err(|e| format!("{}: {e}", spec.bin.display()))?
        } else {
            spec.bin.clone()
        };
        let mut cmd = Command::new(&bin);
        cmd.current_dir(dir).args(&spec.pre_args);
        if spec.log {
            cmd.args(["--log-file", "switch", "--log-flush"]);
        }
        // a notification socket of its own (the default, /tmp/bmv2-<id>-..., would be
        // shared with every other switch of that device id)
        let notify = format!("ipc://{}", notifications_path(dir)?.display());
        cmd.args(["--use-files", "0", "--thrift-port"])
            .arg(thrift_port.to_string())
            .arg("--device-id")
            .arg(device_id.to_string())
            .args(["--notifications-addr", &notify])
            .args(extra);
        for p in &ports {
            cmd.arg("-i").arg(format!("{p}@pcap{p}"));
        }
        cmd.arg(&program);
        if !spec.target_args.is_empty() {
            cmd.arg("--").args(&spec.target_args);
        }
        let out = File::create(dir.join("stdout.txt")).map_err(|e| e.to_string())?;
        let err = File::create(dir.join("stderr.txt")).map_err(|e| e.to_string())?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", spec.bin.display()))?;
        let mut r = Running {
            child: Some(child),
            dir: dir.to_path_buf(),
            thrift_port,
            device_id,
            inputs: vec![],
            ports: ports.clone(),
            ts: 0,
            name: spec.name.clone(),
        };
        // Opening a FIFO for writing blocks until the switch opens it for reading:
        // a thread per FIFO, so that a switch that died (or opens them in another
        // order) is noticed instead of hanging here.
        for p in &ports {
            let path = dir.join(format!("pcap{p}_in.pcap"));
            let (tx, rx) = mpsc::channel::<Vec<u8>>();
            let thread = std::thread::spawn(move || -> Result<(), String> {
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                f.write_all(&pcap::file_header())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                for chunk in rx {
                    f.write_all(&chunk)
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                }
                Ok(())
            });
            r.inputs.push(Input {
                port: *p,
                tx: Some(tx),
                thread: Some(thread),
            });
        }
        r.wait_thrift()?;
        Ok(r)
    }

    fn check_alive(&mut self) -> Result<(), String> {
        if let Some(c) = self.child.as_mut()
            && let Ok(Some(st)) = c.try_wait()
        {
            return Err(format!(
                "{} exited ({st}); stderr:\n{}",
                self.name,
                self.stderr()
            ));
        }
        Ok(())
    }

    fn wait_thrift(&mut self) -> Result<(), String> {
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.thrift_port)).is_err() {
            self.check_alive()?;
            if start.elapsed() > Duration::from_secs(30) {
                return Err(format!(
                    "{}: the Thrift server did not come up; stderr:\n{}",
                    self.name,
                    self.stderr()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Queues frames for their input ports, in order, with increasing timestamps.
    pub fn send(&mut self, frames: &[(u32, Vec<u8>)]) -> Result<(), String> {
        let mut per_port: Vec<(u32, Vec<u8>)> = vec![];
        for (port, f) in frames {
            self.ts += 1;
            let rec = pcap::record(self.ts, f);
            match per_port.iter_mut().find(|(p, _)| p == port) {
                Some((_, buf)) => buf.extend_from_slice(&rec),
                None => per_port.push((*port, rec)),
            }
        }
        for (port, buf) in per_port {
            let input = self
                .inputs
                .iter()
                .find(|i| i.port == port)
                .ok_or_else(|| format!("port {port} is not an input of this run"))?;
            let tx = input
                .tx
                .as_ref()
                .ok_or_else(|| format!("input {port} is already closed"))?;
            tx.send(buf)
                .map_err(|_| format!("{}: the writer of port {port} stopped", self.name))?;
        }
        Ok(())
    }

    /// Closes the inputs in `ports` (end of file for the switch's reader).
    pub fn close_inputs(&mut self, ports: &[u32]) -> Result<(), String> {
        for i in self.inputs.iter_mut().filter(|i| ports.contains(&i.port)) {
            i.tx = None;
        }
        let mut errs = vec![];
        for i in self.inputs.iter_mut().filter(|i| ports.contains(&i.port)) {
            if let Some(t) = i.thread.take() {
                match t.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => errs.push(e),
                    Err(_) => errs.push(format!("writer of port {} panicked", i.port)),
                }
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }

    /// Closes every input.
    pub fn close_all_inputs(&mut self) -> Result<(), String> {
        let ports = self.ports.clone();
        self.close_inputs(&ports)
    }

    /// The ports.
    pub fn ports(&self) -> &[u32] {
        &self.ports
    }

    fn cpu_ticks(&self) -> u64 {
        let Some(pid) = self.pid() else { return 0 };
        let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return 0;
        };
        // fields after the parenthesised command: state is field 3; utime 14, stime 15
        let Some(rest) = s.rfind(')').map(|i| &s[i + 1..]) else {
            return 0;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let get = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        get(11) + get(12)
    }

    /// Whether a thread of the switch is running or waiting for a CPU (state `R`):
    /// on a loaded machine a switch starved of CPU time neither writes nor uses CPU,
    /// and would look idle by those two measures alone.
    fn runnable(&self) -> bool {
        let Some(pid) = self.pid() else { return false };
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return false;
        };
        tasks.flatten().any(|t| {
            std::fs::read_to_string(t.path().join("stat"))
                .ok()
                .and_then(|s| {
                    let rest = &s[s.rfind(')')? + 1..];
                    rest.split_whitespace().next().map(|st| st == "R")
                })
                .unwrap_or(false)
        })
    }

    fn output_bytes(&self) -> u64 {
        self.ports
            .iter()
            .map(|p| {
                std::fs::metadata(self.dir.join(format!("pcap{p}_out.pcap")))
                    .map(|m| m.len())
                    .unwrap_or(0)
            })
            .sum()
    }

    /// Waits until the switch is idle: its outputs have not grown, it has used
    /// little CPU over `window` (bmv2's threads sleep on empty queues; p4jet's
    /// workers nap) and none of its threads is waiting for a CPU. Fails after
    /// `limit`.
    pub fn wait_idle(&mut self, window: Duration, limit: Duration) -> Result<(), String> {
        let start = Instant::now();
        let step = Duration::from_millis(50);
        let ticks_per_s = 100.0; // USER_HZ on Linux
        let mut last = (self.output_bytes(), self.cpu_ticks(), Instant::now());
        loop {
            std::thread::sleep(step);
            self.check_alive()?;
            let now = (self.output_bytes(), self.cpu_ticks(), Instant::now());
            if now.0 != last.0 {
                last = now;
            } else {
                let dt = now.2.duration_since(last.2);
                if dt >= window {
                    let busy = (now.1 - last.1) as f64 / ticks_per_s;
                    if busy < 0.3 * dt.as_secs_f64() && !self.runnable() {
                        return Ok(());
                    }
                    last = now;
                }
            }
            if start.elapsed() > limit {
                return Err(format!(
                    "{}: still busy after {} s",
                    self.name,
                    limit.as_secs()
                ));
            }
        }
    }

    /// Frames sent so far on `port`.
    pub fn output(&self, port: u32) -> Vec<Vec<u8>> {
        pcap::read_records(&self.dir.join(format!("pcap{port}_out.pcap")))
    }

    /// The switch's stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr.txt")).unwrap_or_default()
    }

    /// Stops the switch (SIGTERM, then SIGKILL after 10 s).
    pub fn stop(&mut self) -> Result<(), String> {
        for i in &mut self.inputs {
            i.tx = None;
        }
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        let start = Instant::now();
        loop {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            if start.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // writer threads blocked on opening a FIFO nobody reads: open the read
        // end ourselves to release them
        for i in &mut self.inputs {
            if let Some(t) = i.thread.take() {
                if !t.is_finished() {
                    let _ = File::open(self.dir.join(format!("pcap{}_in.pcap", i.port)));
                }
                let _ = t.join();
            }
        }
        Ok(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
