//! What every campaign shares: a panic catcher that keeps the message, a watchdog
//! that turns a hang into a saved case and a failure, resident-memory readings, and
//! the report.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

static HOOK: Once = Once::new();
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());
static SERVER_PANICS: AtomicU64 = AtomicU64::new(0);

/// The name of the P4Runtime server's threads (its tokio runtime's).
const SERVER_THREADS: &str = "p4runtime";

/// Panics are caught per case: the default hook's message goes to a buffer instead
/// of the terminal.
fn quiet_hook() {
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let msg = format!("{info}");
            if std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with(SERVER_THREADS))
            {
                SERVER_PANICS.fetch_add(1, Ordering::Relaxed);
            }
            if let Ok(mut l) = LAST_PANIC.lock() {
                *l = msg;
            }
        }));
    });
}

/// Panics seen so far on the threads of a P4Runtime server running in this process
/// (named `p4runtime`): they are not caught by [`guarded`].
pub fn server_panic_count() -> u64 {
    quiet_hook();
    SERVER_PANICS.load(Ordering::Relaxed)
}

/// The message of the last panic seen.
pub fn last_panic() -> String {
    LAST_PANIC.lock().map(|l| l.clone()).unwrap_or_default()
}

/// Runs `f`; a panic becomes `Err(message)`.
pub fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    quiet_hook();
    catch_unwind(AssertUnwindSafe(f)).map_err(|_| {
        LAST_PANIC
            .lock()
            .map(|l| l.clone())
            .unwrap_or_else(|_| "panic".into())
    })
}

/// A switch configuration with a clock held still: commands and calls may set queue
/// rates as low as 1 packet/s, and with a real clock `run_until_idle` would wait for
/// every such packet's departure (not a hang, but hours of sleeping); with a held
/// clock they stay queued.
pub fn held_clock() -> p4jet_switch::SwitchConfig {
    p4jet_switch::SwitchConfig {
        manual_clock: Some(Arc::new(AtomicU64::new(0))),
        ..p4jet_switch::SwitchConfig::default()
    }
}

/// Resident memory of this process in KiB (0 if unknown).
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|x| x.parse::<u64>().ok())
        })
        .map(|pages| pages * 4)
        .unwrap_or(0)
}

/// Watches a heartbeat: when it stops for longer than the limit, the case being run
/// is written to the crash directory and the process exits with status 3. Every
/// minute it writes the progress to standard error (cases started, resident memory).
pub struct Watchdog {
    beat: Arc<AtomicU64>,
    started: Arc<AtomicU64>,
    case: Arc<Mutex<Vec<u8>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// Starts watching; `target` names the saved case.
    pub fn start(target: &str, crashes: &Path, limit: Duration) -> Watchdog {
        let beat = Arc::new(AtomicU64::new(0));
        let case = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicU64::new(0));
        let (b, c, s, n) = (beat.clone(), case.clone(), stop.clone(), started.clone());
        let path: PathBuf = crashes.join(format!("{target}-hang.bin"));
        let target = target.to_string();
        let thread = std::thread::spawn(move || {
            let mut last = b.load(Ordering::Relaxed);
            let mut since = Instant::now();
            let t0 = Instant::now();
            let mut report = t0 + Duration::from_secs(60);
            while !s.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                if Instant::now() >= report {
                    report += Duration::from_secs(60);
                    let k = n.load(Ordering::Relaxed);
                    eprintln!(
                        "p4jet-fuzz: {target}: {k} cases started in {:.0} s ({:.0}/s), RSS {} KiB",
                        t0.elapsed().as_secs_f64(),
                        k as f64 / t0.elapsed().as_secs_f64(),
                        rss_kib()
                    );
                }
                let now = b.load(Ordering::Relaxed);
                if now != last {
                    last = now;
                    since = Instant::now();
                } else if since.elapsed() > limit {
                    let bytes = c.lock().map(|c| c.clone()).unwrap_or_default();
                    if let Some(d) = path.parent() {
                        let _ = std::fs::create_dir_all(d);
                    }
                    let _ = std::fs::write(&path, &bytes);
                    eprintln!(
                        "p4jet-fuzz: {target}: no progress for {:?}: hang; case saved in {}",
                        limit,
                        path.display()
                    );
                    std::process::exit(3);
                }
            }
        });
        Watchdog {
            beat,
            started,
            case,
            stop,
            thread: Some(thread),
        }
    }

    /// Records the case about to run and beats.
    pub fn case(&self, bytes: &[u8]) {
        if let Ok(mut c) = self.case.lock() {
            c.clear();
            c.extend_from_slice(bytes);
        }
        self.started.fetch_add(1, Ordering::Relaxed);
        self.beat.fetch_add(1, Ordering::Relaxed);
    }

    /// Beats without recording a case.
    pub fn beat(&self) {
        self.beat.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Saves a crashing case.
pub fn save_crash(crashes: &Path, target: &str, n: usize, bytes: &[u8]) -> PathBuf {
    let _ = std::fs::create_dir_all(crashes);
    let p = crashes.join(format!("{target}-{n}.bin"));
    let _ = std::fs::write(&p, bytes);
    p
}

/// The outcome of a campaign.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Target name.
    pub target: String,
    /// Cases run (frames, documents, commands, messages).
    pub cases: u64,
    /// What a case is, for the summary line.
    pub unit: &'static str,
    /// Panics found (each case saved).
    pub panics: Vec<String>,
    /// Resident memory once warm and at the end, KiB.
    pub rss_warm_kib: u64,
    /// At the end.
    pub rss_end_kib: u64,
    /// Wall time.
    pub seconds: f64,
    /// Extra per-target counts.
    pub notes: Vec<String>,
}

impl Report {
    /// Memory growth from warm to end, in percent.
    pub fn rss_growth_pct(&self) -> f64 {
        if self.rss_warm_kib == 0 {
            return 0.0;
        }
        (self.rss_end_kib as f64 - self.rss_warm_kib as f64) * 100.0 / self.rss_warm_kib as f64
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} {} in {:.0} s ({:.0}/s), {} panic(s), 0 hangs, RSS {} -> {} KiB ({:+.1} %)",
            self.target,
            self.cases,
            self.unit,
            self.seconds,
            self.cases as f64 / self.seconds.max(1e-9),
            self.panics.len(),
            self.rss_warm_kib,
            self.rss_end_kib,
            self.rss_growth_pct()
        )?;
        for n in &self.notes {
            write!(f, "; {n}")?;
        }
        for p in &self.panics {
            write!(f, "\n  panic: {p}")?;
        }
        Ok(())
    }
}

/// How a control message is encoded, for [`damage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Thrift binary protocol: 4-byte big-endian lengths and counts.
    Thrift,
    /// Protocol buffers: varint lengths, tags with wire types.
    Protobuf,
}

/// Byte damage to an encoded message, one to three times: a bit flipped, the message
/// cut, a byte set to an edge value, a length made huge (a 4-byte length for Thrift,
/// a varint of 5 bytes for protobuf), for protobuf a tag given a wire type that does
/// not fit, or random bytes inserted.
pub fn damage(b: &mut Vec<u8>, rng: &mut rand::rngs::StdRng, wire: Wire) {
    use rand::Rng;
    let (kinds, insert_max) = match wire {
        Wire::Thrift => (5, 16),
        Wire::Protobuf => (6, 12),
    };
    for _ in 0..rng.gen_range(1..=3) {
        let n = b.len();
        match (rng.gen_range(0..kinds), wire) {
            (0, _) if n > 0 => {
                let i = rng.gen_range(0..n);
                b[i] ^= 1 << rng.gen_range(0..8);
            }
            (1, _) if n > 0 => b.truncate(rng.gen_range(0..n)),
            (2, _) if n > 0 => {
                let i = rng.gen_range(0..n);
                b[i] = [0x00, 0xff, 0x7f, 0x80][rng.gen_range(0..4)];
            }
            (3, Wire::Thrift) if n > 4 => {
                let i = rng.gen_range(0..n - 4);
                b[i..i + 4].copy_from_slice(&[0x7f, 0xff, 0xff, 0xff]);
            }
            (3, Wire::Protobuf) if n > 1 => {
                let i = rng.gen_range(0..n);
                b.splice(i..(i + 1).min(n), [0xff, 0xff, 0xff, 0xff, 0x0f]);
            }
            (4, Wire::Protobuf) if n > 2 => {
                let i = rng.gen_range(0..n);
                b[i] = (b[i] & 0xf8) | rng.gen_range(3..8);
            }
            _ => {
                let i = rng.gen_range(0..=n);
                let x: Vec<u8> = (0..rng.gen_range(1..insert_max))
                    .map(|_| rng.r#gen())
                    .collect();
                b.splice(i..i, x);
            }
        }
    }
}
