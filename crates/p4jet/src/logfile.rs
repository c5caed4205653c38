//! The per-packet log's writer (`--log-console`, `--log-file`): simple_switch's line
//! format, `[HH:MM:SS.mmm] [bmv2] [LEVEL] [thread TID] [PACKET.COPY] [cxt 0] MESSAGE`,
//! lines below the `-L` level left out, and a log file rotated as simple_switch's
//! (spdlog's rotating file sink): when a line would take `FILE.txt` past
//! `--log-file-max-size` bytes, `FILE.txt` becomes `FILE.1.txt`, `FILE.1.txt` becomes
//! `FILE.2.txt` and so on, the oldest beyond `--log-file-max-files` is deleted, and a
//! new `FILE.txt` is started.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// simple_switch's default `--log-file-max-size` (5 MB).
pub(crate) const DEFAULT_MAX_SIZE: u64 = 5 * 1024 * 1024;
/// simple_switch's default `--log-file-max-files`.
pub(crate) const DEFAULT_MAX_FILES: u64 = 3;

/// The rank of a level letter (`T` lowest).
fn rank(letter: u8) -> u8 {
    match letter {
        b'T' => 0,
        b'D' => 1,
        b'I' => 2,
        b'W' => 3,
        b'E' => 4,
        _ => 5,
    }
}

/// Parses `-L/--log-level`: the rank of the lowest level written, `None` for `off`.
pub(crate) fn parse_level(s: &str) -> Result<Option<u8>, String> {
    Ok(Some(match s.trim() {
        "trace" => 0,
        "debug" => 1,
        "info" => 2,
        "warn" => 3,
        "error" => 4,
        "off" => return Ok(None),
        other => {
            return Err(format!(
                "bad --log-level `{other}` (trace, debug, info, warn, error or off)"
            ));
        }
    }))
}

/// Where log lines go.
enum Out {
    Console(std::io::Stdout),
    File(Rotating),
}

/// The log writer shared by the forwarding threads (behind a mutex).
pub(crate) struct LogSink {
    out: Out,
    min: u8,
}

impl LogSink {
    /// Standard output, lines of rank `min` and above.
    pub(crate) fn console(min: u8) -> LogSink {
        LogSink {
            out: Out::Console(std::io::stdout()),
            min,
        }
    }

    /// `FILE.txt`, appended to (as spdlog opens it), rotated at `max_size` bytes with
    /// `max_files` backups.
    pub(crate) fn file(
        file: &std::path::Path,
        min: u8,
        max_size: u64,
        max_files: u64,
    ) -> Result<LogSink, String> {
        Ok(LogSink {
            out: Out::File(Rotating::open(file, max_size, max_files)?),
            min,
        })
    }

    /// Writes stored per-packet lines (level letter, then `[P.C] [cxt 0] MESSAGE`) with
    /// time, logger, level and this thread's id, and flushes.
    pub(crate) fn write_lines(&mut self, lines: Vec<String>) {
        let prefix_time = clock();
        let tid = thread_id();
        for l in lines {
            let Some(&letter) = l.as_bytes().first() else {
                continue;
            };
            if rank(letter) < self.min {
                continue;
            }
            let line = format!(
                "[{prefix_time}] [bmv2] [{}] [thread {tid}] {}\n",
                letter as char,
                &l[1..]
            );
            let _ = match &mut self.out {
                Out::Console(o) => o.write_all(line.as_bytes()),
                Out::File(f) => f.write_line(line.as_bytes()),
            };
        }
        let _ = match &mut self.out {
            Out::Console(o) => o.flush(),
            Out::File(f) => f.file.flush(),
        };
    }
}

/// `HH:MM:SS.mmm` of now (UTC).
fn clock() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let s = d.as_secs() % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        d.subsec_millis()
    )
}

/// The kernel's id of this thread (as spdlog logs it), or the process id.
fn thread_id() -> u64 {
    thread_local! {
        static TID: u64 = std::fs::read_link("/proc/thread-self")
            .ok()
            .and_then(|p| p.file_name().and_then(|n| n.to_str()?.parse().ok()))
            .unwrap_or_else(|| u64::from(std::process::id()));
    }
    TID.with(|t| *t)
}

/// A size-rotated log file.
pub(crate) struct Rotating {
    /// `FILE` as given (the files are `FILE.txt`, `FILE.1.txt`, ...).
    stem: PathBuf,
    max_size: u64,
    max_files: u64,
    file: File,
    size: u64,
}

impl Rotating {
    fn name(&self, i: u64) -> PathBuf {
        name(&self.stem, i)
    }

    pub(crate) fn open(
        stem: &std::path::Path,
        max_size: u64,
        max_files: u64,
    ) -> Result<Self, String> {
        let path = name(stem, 0);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("opening log file {}: {e}", path.display()))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(Rotating {
            stem: stem.to_path_buf(),
            max_size,
            max_files,
            file,
            size,
        })
    }

    /// Writes one line, rotating first when it would pass the size limit.
    pub(crate) fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        if self.size + line.len() as u64 > self.max_size && self.size > 0 {
            self.rotate()?;
        }
        self.file.write_all(line)?;
        self.size += line.len() as u64;
        Ok(())
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        for i in (1..=self.max_files).rev() {
            let src = self.name(i - 1);
            if src.exists() {
                let dst = self.name(i);
                let _ = std::fs::remove_file(&dst);
                std::fs::rename(&src, &dst)?;
            }
        }
        self.file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(self.name(0))?;
        self.size = 0;
        Ok(())
    }
}

/// `FILE.txt` (i = 0) or `FILE.i.txt`.
fn name(stem: &std::path::Path, i: u64) -> PathBuf {
    let mut s = stem.as_os_str().to_owned();
    if i > 0 {
        s.push(format!(".{i}"));
    }
    s.push(".txt");
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn rotation_keeps_size_and_count() {
        let dir = std::env::temp_dir().join(format!("p4jet-logrot-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let stem = dir.join("switch");
        let mut r = Rotating::open(&stem, 1000, 2).unwrap();
        let line = [b'x'; 99];
        for _ in 0..100 {
            r.write_line(&line).unwrap();
        }
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["switch.1.txt", "switch.2.txt", "switch.txt"]);
        for n in &names {
            let len = std::fs::metadata(dir.join(n)).unwrap().len();
            assert!(len <= 1000 && len.is_multiple_of(99), "{n}: {len}");
        }
        // 100 lines of 99 bytes, 10 per file: the current file holds the last 10
        assert_eq!(
            std::fs::metadata(dir.join("switch.txt")).unwrap().len(),
            990
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn levels() {
        assert_eq!(parse_level("trace").unwrap(), Some(0));
        assert_eq!(parse_level("error").unwrap(), Some(4));
        assert_eq!(parse_level("off").unwrap(), None);
        assert!(parse_level("loud").is_err());
        assert!(rank(b'D') < rank(b'I'));
    }
}
