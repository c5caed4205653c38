//! pcap file ports, as simple_switch `--use-files` has them, and a recorder
//! that wraps any port (`--pcap DIR`).
//!
//! * [`PcapFilePort::use_files`]`(dir, "pcap0")` reads `dir/pcap0_in.pcap` and
//!   writes `dir/pcap0_out.pcap`.
//! * Inputs may be FIFOs. Opening a FIFO for reading blocks until a writer
//!   opens it, so open ports **in the order the writer opens them** (p4c's STF
//!   driver: sorted port order). Reads are non-blocking after that: a FIFO
//!   with no data yet is "nothing received", not EOF.
//! * EOF (end of file, or every writer of the FIFO closed) is reported by
//!   [`Port::is_exhausted`] once all frames were delivered.
//! * Malformed input (bad magic, truncated header or record, absurd record
//!   length) gives an `InvalidData` error carrying a [`PcapFormatError`] with
//!   the file name and byte offset; the error repeats on later calls.
//! * A regular input file is mapped whole (read-only) and its records are parsed in
//!   place; what it gains after opening is read once the mapping is consumed. FIFOs
//!   (and files that cannot be mapped) are read in chunks of 256 KiB (or what a FIFO
//!   has). [`PcapFilePort::take_frames`] hands out a run of frames (up to a
//!   timestamp, for merging) where they lie, without a copy; [`PcapFilePort::peek`]
//!   gives the next one's timestamp. A mapped file truncated by another process while
//!   it is read raises `SIGBUS`, as with any mapped file.
//! * Outputs: Ethernet linktype, microsecond timestamps, native byte order,
//!   snaplen 65535. [`PcapFilePort`] buffers transmitted frames and writes them
//!   with one `write(2)` or `writev(2)` (staged record buffers handed over by
//!   [`PcapFilePort::send_records`] are written as they are) once [`OUT_BUFFER`] bytes wait, on [`Port::flush`] and
//!   when dropped: a caller that wants a reader to see frames as they leave
//!   flushes when it goes idle (`p4jet run` does). [`PcapRecorder`] writes each
//!   batch at once. The global header is written when the port is opened.

use std::fs::File;
use std::io::{self, IoSlice, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use pcap_file::pcap::{PcapHeader, PcapParser};
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};

use crate::sys::{MappedFile, ctx, now_since_epoch, poll_one};
use crate::{Port, PortKind, PortStats};

/// Snap length written in output files (and the per-frame truncation length).
pub const OUT_SNAPLEN: u32 = 65535;

/// Records longer than this are taken as garbage rather than waited for.
const MAX_RECORD: u32 = 256 * 1024;

/// Bytes asked of the input per `read(2)` (at least; the buffer grows for records
/// longer than half of it).
const READ_CHUNK: usize = 256 * 1024;

/// Output bytes a [`PcapFilePort`] buffers before it writes them (a
/// [`Port::flush`] writes them at once).
pub const OUT_BUFFER: usize = 256 * 1024;

/// A malformed pcap input: which file, at which byte offset, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapFormatError {
    /// The file being read.
    pub path: PathBuf,
    /// Byte offset in the file of the header or record that is wrong.
    pub offset: u64,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for PcapFormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "malformed pcap {}: at byte offset {}: {}",
            self.path.display(),
            self.offset,
            self.reason
        )
    }
}

impl std::error::Error for PcapFormatError {}

/// State of the next input frame, from [`PcapFilePort::peek`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peek {
    /// A frame is ready; its pcap timestamp (since the epoch).
    Ready(Duration),
    /// Nothing yet (a FIFO whose writer has not written more).
    Pending,
    /// The input ended and every frame was delivered.
    Exhausted,
}

/// One parsed record, as offsets into the read buffer.
#[derive(Clone, Copy)]
struct Record {
    data_start: usize,
    data_len: usize,
    next: usize,
    ts: Duration,
}

/// Where an input's bytes are.
enum Src {
    /// A regular file mapped whole: records are parsed where they lie in the page
    /// cache, with no `read(2)` copy. Shared with the input's [`Populater`].
    Map(Arc<MappedFile>),
    /// Read with `read(2)` into a buffer: FIFOs, files that cannot be mapped, and what
    /// a file gained after it was mapped.
    Buf(Vec<u8>),
}

impl Src {
    #[inline(always)]
    fn bytes(&self) -> &[u8] {
        match self {
            Src::Map(m) => m.bytes(),
            Src::Buf(b) => b,
        }
    }
}

/// How far ahead of the record being taken [`PcapFilePort::take_frames`] prefetches
/// (a cache line per record: as fast as 64-byte frames' records go by).
const PREFETCH_AHEAD: usize = 2048;

/// A hint to bring the cache line of `bytes[at]` in (nothing if `at` is outside).
#[inline(always)]
fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = bytes.get(at) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch only hints the cache and reads nothing; the address is
        // inside `bytes` anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(b).cast::<i8>()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

/// Bytes of a mapped input mapped in ahead of the reader at a time.
const POPULATE: usize = 4 << 20;

/// The thread that maps a mapped input's pages in ahead of its reader
/// (`MADV_POPULATE_READ` of the next [`POPULATE`] bytes, asked for one to two of them
/// ahead), so that the forwarding thread neither faults on them nor waits for them.
/// It holds the mapping, so the mapping is also unmapped by it, when the input is
/// dropped, not by the reader when it reaches the end.
struct Populater {
    ranges: Option<mpsc::Sender<std::ops::Range<usize>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Populater {
    /// A thread for `map`; None if it cannot be started (the reader then maps pages
    /// in itself).
    fn start(map: Arc<MappedFile>) -> Option<Populater> {
        let (tx, rx) = mpsc::channel::<std::ops::Range<usize>>();
        let thread = std::thread::Builder::new()
            .name("pcap-reader".into())
            .spawn(move || {
                crate::sys::be_batch_thread();
                while let Ok(r) = rx.recv() {
                    if !map.populate(r) {
                        break;
                    }
                }
            })
            .ok()?;
        Some(Populater {
            ranges: Some(tx),
            thread: Some(thread),
        })
    }

    /// Asks for `range` to be mapped in; false if the thread is gone (the kernel
    /// refused an earlier range).
    fn ask(&self, range: std::ops::Range<usize>) -> bool {
        self.ranges.as_ref().is_some_and(|t| t.send(range).is_ok())
    }
}

impl Drop for Populater {
    fn drop(&mut self) {
        self.ranges = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Incremental, non-blocking reader of one pcap file or FIFO.
struct PcapInput {
    path: PathBuf,
    file: File,
    is_fifo: bool,
    src: Src,
    /// Mapped inputs: the bytes up to here are mapped in or asked for (see
    /// [`POPULATE`]); None once the kernel refused.
    populated: Option<usize>,
    /// Mapped inputs: the thread mapping pages in ahead (None: the reader does it).
    populater: Option<Populater>,
    start: usize,
    end: usize,
    /// File offset of the first byte of `src`.
    buf_off: u64,
    /// The global header's settings, once read.
    header: Option<InputHeader>,
    eof: bool,
    failed: Option<PcapFormatError>,
}

/// What the global header of an input says about its records.
#[derive(Clone, Copy)]
struct InputHeader {
    /// Big-endian fields.
    big: bool,
    /// Nanosecond timestamps (else microseconds).
    nanos: bool,
    /// Longest record taken as real.
    limit: u32,
}

enum Step {
    Record(Record),
    NeedMore,
    Exhausted,
}

impl PcapInput {
    fn open(path: &Path) -> io::Result<PcapInput> {
        // Blocks on a FIFO until a writer opens it: that is the ordering
        // contract with the STF driver.
        let file = File::open(path)
            .map_err(|e| ctx(e, format_args!("opening pcap input {}", path.display())))?;
        let meta = file.metadata()?;
        let is_fifo = meta.file_type().is_fifo();
        if is_fifo {
            set_nonblocking(file.as_raw_fd())?;
        }
        // a regular file is mapped (an empty one, or one the kernel will not map, is
        // read); what it gains after this is read once the mapping is consumed
        let mapped = match usize::try_from(meta.len()) {
            Ok(len) if meta.is_file() && len > 0 => MappedFile::map(file.as_raw_fd(), len).ok(),
            _ => None,
        };
        let (src, end, populated, populater) = match mapped {
            Some(m) => {
                let len = m.bytes().len();
                let m = Arc::new(m);
                // the first pages now, the next ones by the thread while the first
                // are read
                let first = m.populate(0..POPULATE).then_some(POPULATE);
                let populater = first.and_then(|_| Populater::start(m.clone()));
                (Src::Map(m), len, first, populater)
            }
            None => (Src::Buf(vec![0; READ_CHUNK]), 0, Some(0), None),
        };
        Ok(PcapInput {
            path: path.to_path_buf(),
            file,
            is_fifo,
            src,
            populated,
            populater,
            start: 0,
            end,
            buf_off: 0,
            header: None,
            eof: false,
            failed: None,
        })
    }

    fn format_error(&mut self, offset: u64, reason: impl Into<String>) -> io::Error {
        let e = PcapFormatError {
            path: self.path.clone(),
            offset,
            reason: reason.into(),
        };
        self.failed = Some(e.clone());
        io::Error::new(io::ErrorKind::InvalidData, e)
    }

    #[inline]
    fn check_failed(&self) -> io::Result<()> {
        match &self.failed {
            Some(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e.clone())),
            None => Ok(()),
        }
    }

    /// Parses the next record from the buffer, if complete. Inlined into `peek`, so
    /// the record is not returned through memory (a store-forwarding stall per frame).
    #[inline(always)]
    fn step(&mut self) -> io::Result<Step> {
        self.check_failed()?;
        let Some(h) = self.header else {
            return self.step_header();
        };
        let avail = &self.src.bytes()[self.start..self.end];
        if avail.len() < 16 {
            return self.incomplete();
        }
        let rd = |o: usize| {
            let raw = [avail[o], avail[o + 1], avail[o + 2], avail[o + 3]];
            if h.big {
                u32::from_be_bytes(raw)
            } else {
                u32::from_le_bytes(raw)
            }
        };
        // the length is checked before waiting for the body: garbage must fail now,
        // not after trying to read 4 GiB
        let incl = rd(8);
        if incl > h.limit {
            let here = self.buf_off + self.start as u64;
            return Err(self.format_error(
                here,
                format!(
                    "record length {incl} exceeds {} (garbage or corrupt file)",
                    h.limit
                ),
            ));
        }
        let next = self.start + 16 + incl as usize;
        if next > self.end {
            return self.incomplete();
        }
        let frac = u64::from(rd(4));
        let nsec = if h.nanos { frac } else { frac * 1000 };
        let ts = Duration::from_secs(u64::from(rd(0))) + Duration::from_nanos(nsec);
        Ok(Step::Record(Record {
            data_start: self.start + 16,
            data_len: incl as usize,
            next,
            ts,
        }))
    }

    /// The buffer ends inside a record: more to come, the end of the input, or a
    /// truncated record.
    #[cold]
    fn incomplete(&mut self) -> io::Result<Step> {
        let avail_len = self.end - self.start;
        if !self.eof {
            return Ok(Step::NeedMore);
        }
        if avail_len == 0 {
            return Ok(Step::Exhausted);
        }
        let reason = if avail_len < 16 {
            format!("truncated record header ({avail_len} of 16 bytes)")
        } else {
            format!(
                "truncated record: file ends {} bytes into its data",
                avail_len - 16
            )
        };
        let here = self.buf_off + self.start as u64;
        Err(self.format_error(here, reason))
    }

    /// Parses the global header, then the first record.
    #[cold]
    fn step_header(&mut self) -> io::Result<Step> {
        let here = self.buf_off + self.start as u64;
        let avail_len = self.end - self.start;
        match PcapParser::new(&self.src.bytes()[self.start..self.end]) {
            Ok((rem, parser)) => {
                self.start = self.end - rem.len();
                let header = parser.header();
                self.header = Some(InputHeader {
                    big: header.endianness == Endianness::Big,
                    nanos: header.ts_resolution == TsResolution::NanoSecond,
                    limit: MAX_RECORD.max(header.snaplen),
                });
                self.step()
            }
            Err(PcapError::IncompleteBuffer) if !self.eof => Ok(Step::NeedMore),
            Err(PcapError::IncompleteBuffer) if avail_len == 0 => {
                Err(self.format_error(here, "empty file: no pcap global header"))
            }
            Err(PcapError::IncompleteBuffer) => Err(self.format_error(
                here,
                format!("truncated pcap global header ({avail_len} of 24 bytes)"),
            )),
            Err(e) => Err(self.format_error(here, format!("bad pcap global header: {e}"))),
        }
    }

    /// A mapped input: has the next [`POPULATE`] bytes mapped in once the reader is
    /// within half of that of the end of what is mapped in (by the populater thread,
    /// asked one more chunk ahead; without it, here).
    #[inline]
    fn populate_ahead(&mut self) {
        let Some(done) = self.populated else {
            return;
        };
        let ahead = if self.populater.is_some() {
            POPULATE + POPULATE / 2
        } else {
            POPULATE / 2
        };
        if let Src::Map(m) = &self.src
            && self.start + ahead >= done
            && done < self.end
        {
            let from = done.max(self.start);
            let range = from..from + POPULATE;
            let ok = match &self.populater {
                Some(p) => p.ask(range),
                None => m.populate(range),
            };
            self.populated = ok.then_some(from + POPULATE);
        }
    }

    /// Reads more bytes, waiting at most `wait` on a FIFO. Returns false if
    /// nothing new arrived (timeout) and the input is not at EOF.
    fn fill(&mut self, wait: Duration) -> io::Result<bool> {
        if self.eof {
            return Ok(true);
        }
        if let Src::Map(m) = &self.src {
            // the mapping is consumed: its unparsed tail goes into a buffer, and what
            // the file gained since it was mapped is read after it
            let map_len = m.bytes().len();
            let mut buf = m.bytes()[self.start..self.end].to_vec();
            buf.resize(buf.len().max(READ_CHUNK), 0);
            self.file
                .seek(SeekFrom::Start(map_len as u64))
                .map_err(|e| ctx(e, format_args!("reading {}", self.path.display())))?;
            self.buf_off += self.start as u64;
            self.end -= self.start;
            self.start = 0;
            self.src = Src::Buf(buf);
        }
        let Src::Buf(buf) = &mut self.src else {
            return Ok(false); // not reached: a mapped input was turned into a buffered one
        };
        // Make room: move the unparsed tail to the front, grow if a record
        // does not fit.
        if self.start > 0 {
            buf.copy_within(self.start..self.end, 0);
            self.buf_off += self.start as u64;
            self.end -= self.start;
            self.start = 0;
        }
        if buf.len() - self.end < READ_CHUNK / 2 {
            let new_len = buf.len() * 2;
            buf.resize(new_len, 0);
        }
        if self.is_fifo {
            let rev = poll_one(self.file.as_raw_fd(), libc::POLLIN, wait)?;
            if rev == 0 {
                return Ok(false);
            }
        }
        loop {
            match self.file.read(&mut buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(true);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(ctx(e, format_args!("reading {}", self.path.display()))),
            }
        }
    }
}

/// Writes every byte of `iov` (the slices are advanced past what was written).
fn write_all_vectored(file: &mut File, mut iov: &mut [IoSlice<'_>]) -> io::Result<()> {
    while !iov.is_empty() {
        match file.write_vectored(iov) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut iov, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes the non-empty buffers of `bufs`, in order, with one `writev(2)` (more if the
/// kernel takes less).
fn write_buffers<'a>(file: &mut File, bufs: impl Iterator<Item = &'a Vec<u8>>) -> io::Result<()> {
    let mut iov: Vec<IoSlice<'_>> = bufs
        .filter(|b| !b.is_empty())
        .map(|b| IoSlice::new(b))
        .collect();
    write_all_vectored(file, &mut iov)
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a valid fd with integer arguments.
    unsafe {
        let fl = crate::sys::cvt(libc::fcntl(fd, libc::F_GETFL))?;
        crate::sys::cvt(libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK))?;
    }
    Ok(())
}

/// Appends one pcap record as the outputs hold them to `buf`: the 16-byte record header
/// (native byte order, microsecond timestamp `ts`), then the frame cut to
/// [`OUT_SNAPLEN`] bytes. [`PcapFilePort::send_records`] takes such records.
#[inline]
pub fn push_record(buf: &mut Vec<u8>, frame: &[u8], ts: Duration) {
    let incl = frame.len().min(OUT_SNAPLEN as usize);
    let secs = u32::try_from(ts.as_secs()).unwrap_or(u32::MAX);
    let orig = u32::try_from(frame.len()).unwrap_or(u32::MAX);
    let mut h = [0u8; 16];
    h[0..4].copy_from_slice(&secs.to_ne_bytes());
    h[4..8].copy_from_slice(&ts.subsec_micros().to_ne_bytes());
    h[8..12].copy_from_slice(&(incl as u32).to_ne_bytes());
    h[12..16].copy_from_slice(&orig.to_ne_bytes());
    buf.reserve(16 + incl);
    buf.extend_from_slice(&h);
    buf.extend_from_slice(&frame[..incl]);
}

/// Writer of one pcap file (Ethernet, microseconds), one `write` per batch.
///
/// Records are appended to `scratch` ([`PcapSink::push`]) or handed over in whole
/// buffers ([`PcapSink::take_records`], no copy); [`PcapSink::commit`] writes them all,
/// in order, with one `writev(2)` (more if the kernel takes less). A sink made
/// [`PcapSink::write_behind`] hands them to its own writer thread instead, so that
/// the kernel's copy into the page cache runs beside the caller; [`PcapSink::sync`]
/// waits for what was handed over.
pub struct PcapSink {
    path: PathBuf,
    out: Out,
    /// Buffers handed over, written before `scratch`.
    queued: Vec<Vec<u8>>,
    /// Bytes in `queued`.
    queued_bytes: usize,
    /// Records in `queued` and `scratch`.
    queued_frames: u64,
    scratch: Vec<u8>,
    /// Written buffers for reuse.
    free: Vec<Vec<u8>>,
    /// Records lost to failed writes and not yet taken ([`PcapSink::take_lost`]).
    lost: u64,
}

/// Where a sink's records go.
enum Out {
    /// Written by the caller's thread.
    Inline(File),
    /// Written by the sink's writer thread.
    Behind(WriteBehind),
}

/// The writer thread of a [`PcapSink`] and the channels to it: every job sent comes
/// back once, with its buffers emptied and what it failed to write.
struct WriteBehind {
    jobs: Option<mpsc::SyncSender<WriteJob>>,
    done: mpsc::Receiver<Written>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Jobs sent and not come back.
    in_flight: usize,
}

/// Buffers of records to write, in order, and how many records they hold.
struct WriteJob {
    bufs: Vec<Vec<u8>>,
    frames: u64,
}

/// A job come back: its buffers (empty) and, if the write failed, the records lost.
struct Written {
    bufs: Vec<Vec<u8>>,
    failed: Option<(u64, io::Error)>,
}

/// Jobs a writer thread may have waiting before [`PcapSink::commit`] waits for it
/// (each holds at least [`OUT_BUFFER`] bytes when the sink is busy).
const WRITE_BEHIND_JOBS: usize = 16;

/// Most buffers a [`PcapSink`] keeps for reuse.
const FREE_BUFFERS: usize = 256;

impl PcapSink {
    /// Creates (truncates) `path` and writes the global header.
    pub fn create(path: &Path) -> io::Result<PcapSink> {
        let file = File::create(path)
            .map_err(|e| ctx(e, format_args!("creating pcap output {}", path.display())))?;
        PcapSink::with_file(file, path)
    }

    /// A sink writing to `file` (opened for writing; `path` names it in errors),
    /// starting with the global header.
    fn with_file(mut file: File, path: &Path) -> io::Result<PcapSink> {
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen: OUT_SNAPLEN,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::MicroSecond,
            endianness: Endianness::native(),
        };
        let mut hbuf = Vec::with_capacity(24);
        header
            .write_to(&mut hbuf)
            .map_err(|e| io::Error::other(format!("encoding pcap header: {e}")))?;
        file.write_all(&hbuf)
            .map_err(|e| ctx(e, format_args!("writing {}", path.display())))?;
        Ok(PcapSink {
            path: path.to_path_buf(),
            out: Out::Inline(file),
            queued: Vec::new(),
            queued_bytes: 0,
            queued_frames: 0,
            scratch: Vec::with_capacity(64 * 1024),
            free: Vec::new(),
            lost: 0,
        })
    }

    /// From now on the records are written by a thread of the sink's own (named
    /// `pcap-writer`): [`PcapSink::commit`] hands them over and returns, waiting only
    /// when [`WRITE_BEHIND_JOBS`] commits are still unwritten. Records pending are
    /// written first.
    pub fn write_behind(&mut self) -> io::Result<()> {
        let Out::Inline(f) = &self.out else {
            return Ok(());
        };
        let file = f
            .try_clone()
            .map_err(|e| ctx(e, format_args!("writer for {}", self.path.display())))?;
        self.commit()?;
        let (jobs, job_rx) = mpsc::sync_channel::<WriteJob>(WRITE_BEHIND_JOBS);
        let (done_tx, done) = mpsc::channel::<Written>();
        let thread = std::thread::Builder::new()
            .name("pcap-writer".into())
            .spawn(move || write_jobs(file, job_rx, done_tx))
            .map_err(|e| {
                ctx(
                    e,
                    format_args!("starting the writer of {}", self.path.display()),
                )
            })?;
        self.out = Out::Behind(WriteBehind {
            jobs: Some(jobs),
            done,
            thread: Some(thread),
            in_flight: 0,
        });
        Ok(())
    }

    /// Takes the records in `records` (`frames` of them, encoded by [`push_record`]) to
    /// be written after those pending, leaving an empty buffer (of the same capacity if
    /// one was written before) in its place.
    pub fn take_records(&mut self, records: &mut Vec<u8>, frames: u64) {
        if records.is_empty() {
            return;
        }
        if !self.scratch.is_empty() {
            let fresh = self.fresh(self.scratch.capacity());
            let s = std::mem::replace(&mut self.scratch, fresh);
            self.queued_bytes += s.len();
            self.queued.push(s);
        }
        let fresh = self.fresh(records.capacity());
        let r = std::mem::replace(records, fresh);
        self.queued_bytes += r.len();
        self.queued_frames += frames;
        self.queued.push(r);
    }

    /// An empty buffer: a written one, else a new one of `cap` bytes.
    fn fresh(&mut self, cap: usize) -> Vec<u8> {
        self.free.pop().unwrap_or_else(|| Vec::with_capacity(cap))
    }

    /// Keeps an emptied buffer for reuse.
    fn recycle(&mut self, mut b: Vec<u8>) {
        if self.free.len() < FREE_BUFFERS {
            b.clear();
            self.free.push(b);
        }
    }

    /// Bytes pending (not handed to the writer or written yet).
    pub fn unwritten(&self) -> usize {
        self.queued_bytes + self.scratch.len()
    }

    /// Appends one record to the pending batch.
    #[inline]
    pub fn push(&mut self, frame: &[u8], ts: Duration) {
        push_record(&mut self.scratch, frame, ts);
        self.queued_frames += 1;
    }

    /// Writes everything pending, in order: one `write(2)` or `writev(2)` (more if the
    /// kernel takes less), or hands it to the writer thread
    /// ([`PcapSink::write_behind`]). An error says that records were lost (counted in
    /// [`PcapSink::take_lost`]): those of this commit, or with a writer thread those
    /// of an earlier one that failed since the last call.
    pub fn commit(&mut self) -> io::Result<()> {
        let frames = std::mem::take(&mut self.queued_frames);
        let r = match &mut self.out {
            Out::Inline(file) => {
                let r = write_buffers(file, self.queued.iter().chain([&self.scratch]));
                self.scratch.clear();
                let mut written = std::mem::take(&mut self.queued);
                for buf in written.drain(..) {
                    self.recycle(buf);
                }
                self.queued = written;
                r.map_err(|e| {
                    self.lost += frames;
                    lost_error(&self.path, frames, &e)
                })
            }
            Out::Behind(_) => {
                if self.unwritten() > 0 {
                    let mut bufs = std::mem::take(&mut self.queued);
                    if !self.scratch.is_empty() {
                        let fresh = self.fresh(self.scratch.capacity());
                        bufs.push(std::mem::replace(&mut self.scratch, fresh));
                    }
                    self.send_job(WriteJob { bufs, frames });
                }
                self.reap(false)
            }
        };
        self.queued_bytes = 0;
        r
    }

    /// Hands a job to the writer thread (waiting while it has [`WRITE_BEHIND_JOBS`]).
    fn send_job(&mut self, job: WriteJob) {
        let Out::Behind(wb) = &mut self.out else {
            return;
        };
        let frames = job.frames;
        match wb.jobs.as_ref().map(|j| j.send(job)) {
            Some(Ok(())) => wb.in_flight += 1,
            // the thread is gone (it only ends when the channel closes, or by a
            // panic): the records are lost
            _ => self.lost += frames,
        }
    }

    /// Takes the jobs come back from the writer thread (waiting for all of them if
    /// `wait`): buffers for reuse, and failures as one error.
    fn reap(&mut self, wait: bool) -> io::Result<()> {
        let mut first: Option<io::Error> = None;
        let mut lost = 0u64;
        while let Out::Behind(wb) = &mut self.out {
            if wb.in_flight == 0 {
                break;
            }
            let w = if wait {
                match wb.done.recv() {
                    Ok(w) => w,
                    Err(_) => {
                        wb.in_flight = 0;
                        break;
                    }
                }
            } else {
                match wb.done.try_recv() {
                    Ok(w) => w,
                    Err(_) => break,
                }
            };
            wb.in_flight -= 1;
            if let Some((n, e)) = w.failed {
                lost += n;
                first.get_or_insert(e);
            }
            for b in w.bufs {
                self.recycle(b);
            }
        }
        self.lost += lost;
        match first {
            Some(e) => Err(lost_error(&self.path, lost, &e)),
            None => Ok(()),
        }
    }

    /// Writes everything pending and, with a writer thread, waits until it has written
    /// everything handed to it; errors as [`PcapSink::commit`].
    pub fn sync(&mut self) -> io::Result<()> {
        let r = self.commit();
        let w = self.reap(true);
        r.and(w)
    }

    /// Records lost to failed writes since the last call.
    pub fn take_lost(&mut self) -> u64 {
        std::mem::take(&mut self.lost)
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PcapSink {
    fn drop(&mut self) {
        // what was handed over still reaches the file
        let _ = self.sync();
        if let Out::Behind(wb) = &mut self.out {
            wb.jobs = None;
            if let Some(t) = wb.thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// The error for `frames` records of `path` lost to `e`.
fn lost_error(path: &Path, frames: u64, e: &io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!(
            "writing {}: {e} ({frames} frames not written)",
            path.display()
        ),
    )
}

/// A writer thread: writes each job's buffers in order with `writev(2)` and sends the
/// job back, until the sink closes the channel.
fn write_jobs(mut file: File, jobs: mpsc::Receiver<WriteJob>, done: mpsc::Sender<Written>) {
    crate::sys::be_batch_thread();
    while let Ok(mut job) = jobs.recv() {
        let r = write_buffers(&mut file, job.bufs.iter());
        for b in &mut job.bufs {
            b.clear();
        }
        let failed = r.err().map(|e| (job.frames, e));
        if done
            .send(Written {
                bufs: job.bufs,
                failed,
            })
            .is_err()
        {
            break;
        }
    }
}

/// A port backed by pcap files: reads frames from an input file (or FIFO),
/// writes transmitted frames to an output file.
pub struct PcapFilePort {
    name: String,
    input: Option<PcapInput>,
    output: Option<PcapSink>,
    stats: PortStats,
}

impl PcapFilePort {
    /// simple_switch `--use-files`: port `N@NAME` reads `dir/NAME_in.pcap` and
    /// writes `dir/NAME_out.pcap`. Blocks if the input is a FIFO without a
    /// writer yet: call it in the writer's order.
    pub fn use_files(dir: &Path, name: &str) -> io::Result<PcapFilePort> {
        let input = dir.join(format!("{name}_in.pcap"));
        let output = dir.join(format!("{name}_out.pcap"));
        PcapFilePort::open(name, Some(&input), Some(&output))
    }

    /// A port named `name` reading `input` (if any) and writing `output` (if
    /// any). A port without input is never exhausted-and-readable (it reports
    /// exhausted at once); a port without output drops what it is sent
    /// (counted in `tx_dropped`).
    pub fn open(
        name: &str,
        input: Option<&Path>,
        output: Option<&Path>,
    ) -> io::Result<PcapFilePort> {
        let input = input.map(PcapInput::open).transpose()?;
        let mut output = output.map(PcapSink::create).transpose()?;
        if let Some(o) = output.as_mut() {
            // if no writer thread can be started, the port writes from the caller's
            // thread: slower, the same files
            let _ = o.write_behind();
        }
        Ok(PcapFilePort {
            name: name.to_string(),
            input,
            output,
            stats: PortStats::default(),
        })
    }

    /// The input path, if any.
    pub fn input_path(&self) -> Option<&Path> {
        self.input.as_ref().map(|i| i.path.as_path())
    }

    /// The output path, if any.
    pub fn output_path(&self) -> Option<&Path> {
        self.output.as_ref().map(|o| o.path())
    }

    /// Whether the input is a FIFO.
    pub fn input_is_fifo(&self) -> bool {
        self.input.as_ref().is_some_and(|i| i.is_fifo)
    }

    /// The timestamp of the next frame without consuming it, reading (waiting
    /// at most `timeout` on a FIFO) if needed. Lets a caller merge several
    /// inputs in timestamp order as bmv2's file reader does.
    pub fn peek(&mut self, timeout: Option<Duration>) -> io::Result<Peek> {
        let Some(input) = self.input.as_mut() else {
            return Ok(Peek::Exhausted);
        };
        let timeout = timeout.unwrap_or_default();
        // the clock is read only when a FIFO is actually waited for
        let mut since: Option<Instant> = None;
        loop {
            match input.step()? {
                Step::Record(r) => return Ok(Peek::Ready(r.ts)),
                Step::Exhausted => return Ok(Peek::Exhausted),
                Step::NeedMore => {
                    let left = if timeout.is_zero() {
                        Duration::ZERO
                    } else {
                        timeout.saturating_sub(since.get_or_insert_with(Instant::now).elapsed())
                    };
                    if !input.fill(left)? {
                        return Ok(Peek::Pending);
                    }
                }
            }
        }
    }

    /// Takes the next frame if one is ready (without waiting) and gives it to `f`;
    /// false (and `f` not called) when none is.
    #[inline]
    pub fn take(&mut self, f: impl FnOnce(&[u8])) -> bool {
        let mut f = Some(f);
        matches!(
            self.take_frames(1, None, |fr| {
                if let Some(f) = f.take() {
                    f(fr)
                }
            }),
            Ok(1)
        )
    }

    /// Hands up to `max` frames to `f`, in file order and where they lie (a mapped
    /// file's page cache or the read buffer), while their timestamp is before `until`:
    /// `Some((t, inclusive))` stops at the first frame later than `t`, or at `t`
    /// itself unless `inclusive` (how a caller merging inputs by timestamp takes the
    /// run of one input that stays earliest). Never waits: stops when the input has
    /// nothing more yet (a FIFO) or ended. Returns the frames handed out.
    #[inline]
    pub fn take_frames(
        &mut self,
        max: usize,
        until: Option<(Duration, bool)>,
        mut f: impl FnMut(&[u8]),
    ) -> io::Result<usize> {
        let Some(input) = self.input.as_mut() else {
            return Ok(0);
        };
        input.populate_ahead();
        let (mut n, mut bytes) = (0usize, 0u64);
        let r = loop {
            if n >= max {
                break Ok(());
            }
            match input.step() {
                Ok(Step::Record(r)) => {
                    if let Some((t, inclusive)) = until
                        && (r.ts > t || (r.ts == t && !inclusive))
                    {
                        break Ok(());
                    }
                    let data = input.src.bytes();
                    // a mapped file's pages come from memory, not the cache: ask for
                    // the records a few hundred ns ahead now
                    prefetch(data, r.next + PREFETCH_AHEAD);
                    f(&data[r.data_start..r.data_start + r.data_len]);
                    input.start = r.next;
                    n += 1;
                    bytes += r.data_len as u64;
                }
                Ok(Step::Exhausted) => break Ok(()),
                Ok(Step::NeedMore) => match input.fill(Duration::ZERO) {
                    Ok(true) => {}
                    Ok(false) => break Ok(()),
                    Err(e) => break Err(e),
                },
                Err(e) => break Err(e),
            }
        };
        self.stats.rx_packets += n as u64;
        self.stats.rx_bytes += bytes;
        // the frames handed out stay taken; an error comes with the next call too
        // (malformed input is sticky), so report it only when nothing was taken
        match r {
            Err(e) if n == 0 => Err(e),
            _ => Ok(n),
        }
    }

    /// Sends `frames` frames already encoded as pcap records by [`push_record`]
    /// (`bytes`: their frame lengths summed, for the port's counters); buffered as
    /// [`Port::send_batch`] buffers. The port takes the buffer itself (no copy) and
    /// leaves an empty one in `records`. Without an output they are dropped (counted
    /// in `tx_dropped`).
    pub fn send_records(
        &mut self,
        records: &mut Vec<u8>,
        frames: u64,
        bytes: u64,
    ) -> io::Result<()> {
        let Some(out) = self.output.as_mut() else {
            self.stats.tx_dropped += frames;
            records.clear();
            return Ok(());
        };
        self.stats.tx_packets += frames;
        self.stats.tx_bytes += bytes;
        out.take_records(records, frames);
        if out.unwritten() >= OUT_BUFFER {
            out.commit()?;
        }
        Ok(())
    }

    /// Bytes transmitted and not yet written to the output file (see
    /// [`Port::flush`]).
    pub fn unwritten(&self) -> usize {
        self.output.as_ref().map_or(0, PcapSink::unwritten)
    }
}

impl Port for PcapFilePort {
    fn recv_batch(
        &mut self,
        max: usize,
        timeout: Option<Duration>,
        f: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize> {
        if max == 0 {
            return Ok(0);
        }
        // waits (a FIFO) for the first frame only
        match self.peek(timeout)? {
            Peek::Ready(_) => self.take_frames(max, None, f),
            Peek::Pending | Peek::Exhausted => Ok(0),
        }
    }

    /// Buffers the frames; they are written once [`OUT_BUFFER`] bytes are waiting, by
    /// [`Port::flush`], or when the port is dropped.
    fn send_batch(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        let Some(out) = self.output.as_mut() else {
            self.stats.tx_dropped += frames.len() as u64;
            return Ok(frames.len());
        };
        let ts = now_since_epoch();
        for fr in frames {
            out.push(fr, ts);
            self.stats.tx_packets += 1;
            self.stats.tx_bytes += fr.len() as u64;
        }
        if out.unwritten() >= OUT_BUFFER {
            out.commit()?;
        }
        Ok(frames.len())
    }

    /// Writes the buffered output frames and waits until the writer thread has
    /// written everything it was handed: a reader of the file sees them all.
    fn flush(&mut self) -> io::Result<()> {
        match self.output.as_mut() {
            Some(out) => out.sync(),
            None => Ok(()),
        }
    }

    /// Frames lost to failed writes since the last call, moved from sent to dropped
    /// in the port's counters.
    fn take_unsent(&mut self) -> u64 {
        let lost = self.output.as_mut().map_or(0, PcapSink::take_lost);
        self.stats.tx_packets = self.stats.tx_packets.saturating_sub(lost);
        self.stats.tx_dropped += lost;
        lost
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> PortKind {
        PortKind::PcapFile
    }

    fn stats(&self) -> PortStats {
        self.stats
    }

    fn is_exhausted(&self) -> bool {
        match &self.input {
            None => true,
            Some(i) => i.eof && i.start == i.end && i.failed.is_none(),
        }
    }

    fn poll_fd(&self) -> Option<RawFd> {
        self.input.as_ref().map(|i| i.file.as_raw_fd())
    }
}

/// Wraps any port and records what it receives into `DIR/<name>_in.pcap` and
/// what it sends into `DIR/<name>_out.pcap` (simple_switch `--pcap DIR`).
pub struct PcapRecorder<P: Port> {
    inner: P,
    rx: PcapSink,
    tx: PcapSink,
}

impl<P: Port> PcapRecorder<P> {
    /// Starts recording `inner` into `dir`, named after `inner.name()`.
    pub fn new(inner: P, dir: &Path) -> io::Result<PcapRecorder<P>> {
        let name = inner.name().to_string();
        let rx = PcapSink::create(&dir.join(format!("{name}_in.pcap")))?;
        let tx = PcapSink::create(&dir.join(format!("{name}_out.pcap")))?;
        Ok(PcapRecorder { inner, rx, tx })
    }

    /// The wrapped port.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The wrapped port, mutably.
    pub fn inner_mut(&mut self) -> &mut P {
        &mut self.inner
    }

    /// Stops recording and returns the wrapped port.
    pub fn into_inner(self) -> P {
        self.inner
    }
}

impl<P: Port> Port for PcapRecorder<P> {
    fn recv_batch(
        &mut self,
        max: usize,
        timeout: Option<Duration>,
        f: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize> {
        let ts = now_since_epoch();
        let rx = &mut self.rx;
        let n = self.inner.recv_batch(max, timeout, &mut |frame: &[u8]| {
            rx.push(frame, ts);
            f(frame);
        })?;
        self.rx.commit()?;
        Ok(n)
    }

    fn send_batch(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        let n = self.inner.send_batch(frames)?;
        let ts = now_since_epoch();
        for fr in &frames[..n] {
            self.tx.push(fr, ts);
        }
        self.tx.commit()?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    fn take_unsent(&mut self) -> u64 {
        self.inner.take_unsent()
    }

    fn tx_pending(&self) -> bool {
        self.inner.tx_pending()
    }

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn kind(&self) -> PortKind {
        self.inner.kind()
    }

    fn stats(&self) -> PortStats {
        self.inner.stats()
    }

    fn is_exhausted(&self) -> bool {
        self.inner.is_exhausted()
    }

    fn poll_fd(&self) -> Option<RawFd> {
        self.inner.poll_fd()
    }

    fn busy_polls(&self) -> bool {
        self.inner.busy_polls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    struct TempDir(PathBuf);
    impl TempDir {
        fn new(tag: &str) -> TempDir {
            static N: AtomicU32 = AtomicU32::new(0);
            let p = std::env::temp_dir().join(format!(
                "p4jet-io-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn frame(i: usize, len: usize) -> Vec<u8> {
        (0..len).map(|j| (i * 7 + j) as u8).collect()
    }

    /// A pcap file image: little-endian, given resolution magic.
    fn pcap_bytes(frames: &[Vec<u8>], nanos: bool, big: bool) -> Vec<u8> {
        let w32 = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let w16 = |v: u16| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut out = Vec::new();
        out.extend_from_slice(&w32(if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }));
        out.extend_from_slice(&w16(2));
        out.extend_from_slice(&w16(4));
        out.extend_from_slice(&w32(0));
        out.extend_from_slice(&w32(0));
        out.extend_from_slice(&w32(65535));
        out.extend_from_slice(&w32(1));
        for (i, f) in frames.iter().enumerate() {
            out.extend_from_slice(&w32(1000 + i as u32));
            out.extend_from_slice(&w32(i as u32 * 10));
            out.extend_from_slice(&w32(f.len() as u32));
            out.extend_from_slice(&w32(f.len() as u32));
            out.extend_from_slice(f);
        }
        out
    }

    fn drain(p: &mut PcapFilePort) -> io::Result<Vec<Vec<u8>>> {
        let mut got = Vec::new();
        for _ in 0..10_000 {
            p.recv_batch(3, None, &mut |f| got.push(f.to_vec()))?;
            if p.is_exhausted() {
                break;
            }
        }
        Ok(got)
    }

    #[test]
    fn round_trip_through_use_files() {
        let d = TempDir::new("rt");
        let frames: Vec<Vec<u8>> = (0..50).map(|i| frame(i, 14 + i * 31)).collect();
        // Write with the port's writer into the out file, then read it back as input.
        {
            let mut p = PcapFilePort::open("w", None, Some(&d.0.join("a_in.pcap"))).unwrap();
            let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
            assert_eq!(p.send_batch(&refs[..20]).unwrap(), 20);
            assert_eq!(p.send_batch(&refs[20..]).unwrap(), 30);
            assert_eq!(p.stats().tx_packets, 50);
        }
        let mut p = PcapFilePort::use_files(&d.0, "a").unwrap();
        assert!(!p.is_exhausted());
        let got = drain(&mut p).unwrap();
        assert_eq!(got, frames);
        assert!(p.is_exhausted());
        assert_eq!(p.stats().rx_packets, 50);
        // EOF is sticky and quiet.
        assert_eq!(
            p.recv_batch(10, Some(Duration::from_millis(5)), &mut |_| panic!())
                .unwrap(),
            0
        );
        assert_eq!(p.peek(None).unwrap(), Peek::Exhausted);
        // The output file exists with only a global header.
        assert_eq!(std::fs::metadata(d.0.join("a_out.pcap")).unwrap().len(), 24);
    }

    #[test]
    fn output_is_readable_by_pcap_file_crate() {
        let d = TempDir::new("out");
        let big = vec![0xab; 70_000];
        let mut p = PcapFilePort::open("o", None, Some(&d.0.join("o.pcap"))).unwrap();
        p.send_batch(&[&[1, 2, 3], &big]).unwrap();
        // Buffered until flushed; visible after a flush, without closing.
        assert_eq!(std::fs::metadata(d.0.join("o.pcap")).unwrap().len(), 24);
        assert!(p.unwritten() > OUT_SNAPLEN as usize);
        p.flush().unwrap();
        assert_eq!(p.unwritten(), 0);
        let mut r =
            pcap_file::pcap::PcapReader::new(File::open(d.0.join("o.pcap")).unwrap()).unwrap();
        assert_eq!(r.header().datalink, DataLink::ETHERNET);
        assert_eq!(r.header().ts_resolution, TsResolution::MicroSecond);
        let a = r.next_packet().unwrap().unwrap();
        assert_eq!(&a.data[..], &[1, 2, 3]);
        // (pcap-file's checked reader rejects orig_len > snaplen, which is
        // valid pcap: read the raw record.)
        let b = r.next_raw_packet().unwrap().unwrap();
        assert_eq!(b.data.len(), OUT_SNAPLEN as usize);
        assert_eq!(b.orig_len, 70_000);
        assert!(r.next_packet().is_none());
    }

    #[test]
    fn write_behind_keeps_every_record_in_order() {
        let d = TempDir::new("behind");
        let path = d.0.join("w.pcap");
        let mut sink = PcapSink::create(&path).unwrap();
        sink.write_behind().unwrap();
        let ts = Duration::from_micros(1_500_000);
        let mut staged = Vec::new();
        let mut n = 0usize;
        // records pushed one by one and handed over in staged buffers, committed
        // (handed to the writer) far more often than it can write them
        for round in 0..2_000 {
            for _ in 0..10 {
                push_record(&mut staged, &frame(n, 60 + n % 40), ts);
                n += 1;
            }
            sink.take_records(&mut staged, 10);
            sink.push(&frame(n, 64 + n % 7), ts);
            n += 1;
            if round % 3 == 0 {
                sink.commit().unwrap();
            }
        }
        sink.sync().unwrap();
        assert_eq!(sink.unwritten(), 0);
        assert_eq!(sink.take_lost(), 0);
        // visible after sync, without closing
        let mut r = pcap_file::pcap::PcapReader::new(File::open(&path).unwrap()).unwrap();
        let mut got = 0usize;
        while let Some(p) = r.next_packet() {
            let p = p.unwrap();
            let len = if got % 11 == 10 {
                64 + got % 7
            } else {
                60 + got % 40
            };
            assert_eq!(&p.data[..], &frame(got, len)[..], "record {got}");
            assert_eq!(p.timestamp, ts);
            got += 1;
        }
        assert_eq!(got, n);
        drop(sink);
    }

    #[test]
    fn write_behind_counts_what_a_failed_write_lost() {
        // a pipe whose reader is gone: every write fails (EPIPE)
        let mut fds = [0; 2];
        // SAFETY: pipe(2) fills the two descriptors of the array it is given.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just opened by pipe(2) and are owned here.
        let (rd, wr) = unsafe {
            use std::os::fd::FromRawFd;
            (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
        };
        let mut sink = PcapSink::with_file(wr, Path::new("pipe")).unwrap();
        drop(rd);
        sink.write_behind().unwrap();
        let ts = Duration::ZERO;
        for i in 0..5 {
            sink.push(&frame(i, 64), ts);
        }
        // handed over: the failure comes back later
        let _ = sink.commit();
        let mut staged = Vec::new();
        push_record(&mut staged, &frame(9, 64), ts);
        push_record(&mut staged, &frame(10, 64), ts);
        sink.take_records(&mut staged, 2);
        let e = sink.sync().unwrap_err();
        assert!(e.to_string().contains("pipe"), "{e}");
        assert!(e.to_string().contains("frames not written"), "{e}");
        assert_eq!(sink.take_lost(), 7);
        assert_eq!(sink.take_lost(), 0);
        // the sink goes on: later writes fail and are counted again
        sink.push(&frame(11, 64), ts);
        assert!(sink.sync().is_err());
        assert_eq!(sink.take_lost(), 1);
    }

    #[test]
    fn file_port_moves_lost_frames_from_sent_to_dropped() {
        use std::os::unix::fs::OpenOptionsExt;
        let d = TempDir::new("lostport");
        let out = d.0.join("o.pcap");
        let c = std::ffi::CString::new(out.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo(3) with a NUL-terminated path and a mode.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // a reader that is there when the port opens the output, and then leaves
        let rd = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&out)
            .unwrap();
        let mut p = PcapFilePort::open("o", None, Some(&out)).unwrap();
        drop(rd);
        p.send_batch(&[&[1, 2, 3], &[4, 5, 6], &[7, 8, 9]]).unwrap();
        assert_eq!(p.stats().tx_packets, 3);
        let e = p.flush().unwrap_err();
        assert!(e.to_string().contains("3 frames not written"), "{e}");
        assert_eq!(p.take_unsent(), 3);
        assert_eq!(p.stats().tx_packets, 0);
        assert_eq!(p.stats().tx_dropped, 3);
        assert_eq!(p.take_unsent(), 0);
    }

    #[test]
    fn nanosecond_and_big_endian_inputs() {
        let d = TempDir::new("ns");
        let frames: Vec<Vec<u8>> = (0..5).map(|i| frame(i, 60)).collect();
        let mut p = PcapFilePort::open("x", None, None).unwrap();
        assert!(p.is_exhausted());
        assert_eq!(p.send_batch(&[&frames[0]]).unwrap(), 1);
        assert_eq!(p.stats().tx_dropped, 1);
        for (nanos, big) in [(true, false), (false, true), (true, true)] {
            let path = d.0.join("x.pcap");
            std::fs::write(&path, pcap_bytes(&frames, nanos, big)).unwrap();
            let mut p = PcapFilePort::open("x", Some(&path), None).unwrap();
            assert_eq!(p.peek(None).unwrap(), Peek::Ready(Duration::new(1000, 0)));
            assert_eq!(drain(&mut p).unwrap(), frames);
            assert_eq!(
                p.peek(None).unwrap(),
                Peek::Exhausted,
                "nanos={nanos} big={big}"
            );
        }
    }

    #[test]
    fn timestamps_are_exposed_for_merging() {
        let d = TempDir::new("ts");
        let path = d.0.join("t.pcap");
        std::fs::write(
            &path,
            pcap_bytes(&[frame(0, 60), frame(1, 60)], false, false),
        )
        .unwrap();
        let mut p = PcapFilePort::open("t", Some(&path), None).unwrap();
        assert_eq!(p.peek(None).unwrap(), Peek::Ready(Duration::new(1000, 0)));
        assert_eq!(p.peek(None).unwrap(), Peek::Ready(Duration::new(1000, 0)));
        assert_eq!(p.recv_batch(1, None, &mut |_| {}).unwrap(), 1);
        assert_eq!(
            p.peek(None).unwrap(),
            Peek::Ready(Duration::new(1001, 10_000))
        );
    }

    fn expect_format_error(bytes: &[u8], offset: u64, needle: &str) {
        let d = TempDir::new("bad");
        let path = d.0.join("bad_in.pcap");
        std::fs::write(&path, bytes).unwrap();
        let mut p = PcapFilePort::use_files(&d.0, "bad").unwrap();
        let mut good = 0;
        let err = loop {
            match p.recv_batch(64, None, &mut |_| good += 1) {
                Ok(_) => assert!(!p.is_exhausted(), "no error for {needle}"),
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        let fe = err
            .get_ref()
            .unwrap()
            .downcast_ref::<PcapFormatError>()
            .unwrap();
        assert_eq!(fe.path, path);
        assert_eq!(fe.offset, offset, "{fe}");
        assert!(fe.reason.contains(needle), "{fe}");
        let msg = err.to_string();
        assert!(
            msg.contains("bad_in.pcap") && msg.contains(&format!("offset {offset}")),
            "{msg}"
        );
        // Sticky, and never exhausted.
        assert!(p.recv_batch(64, None, &mut |_| {}).is_err());
        assert!(!p.is_exhausted());
    }

    #[test]
    fn truncated_and_garbage_inputs_give_clear_errors() {
        let frames: Vec<Vec<u8>> = (0..3).map(|i| frame(i, 100)).collect();
        let good = pcap_bytes(&frames, false, false);
        expect_format_error(&[], 0, "empty file");
        expect_format_error(&good[..10], 0, "truncated pcap global header (10 of 24");
        expect_format_error(
            b"this is not a pcap file at all, no",
            0,
            "bad pcap global header",
        );
        // Record 2 starts at 24 + 2 * 116 = 256.
        expect_format_error(&good[..256 + 7], 256, "truncated record header (7 of 16");
        expect_format_error(
            &good[..256 + 16 + 40],
            256,
            "truncated record: file ends 40 bytes",
        );
        let mut huge = good.clone();
        huge[24 + 116 + 8..24 + 116 + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
        expect_format_error(&huge, 140, "exceeds");
    }

    // about 9 MB: several buffers, and several chunks mapped in ahead by the populater
    #[test]
    fn big_file_crosses_buffer_boundaries() {
        let d = TempDir::new("big");
        let frames: Vec<Vec<u8>> = (0..12_000)
            .map(|i| frame(i, 60 + (i * 13) % 1400))
            .collect();
        let path = d.0.join("b.pcap");
        std::fs::write(&path, pcap_bytes(&frames, false, false)).unwrap();
        let mut p = PcapFilePort::open("b", Some(&path), None).unwrap();
        assert_eq!(drain(&mut p).unwrap(), frames);
    }

    #[test]
    fn mapped_file_reads_what_it_gains_after_opening() {
        let d = TempDir::new("grow");
        let frames: Vec<Vec<u8>> = (0..40).map(|i| frame(i, 60 + i)).collect();
        let bytes = pcap_bytes(&frames, false, false);
        let path = d.0.join("g.pcap");
        // mapped at open: the header, 10 records and half of the 11th
        let cut = 24 + (0..10).map(|i| 16 + 60 + i).sum::<usize>() + 20;
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let mut p = PcapFilePort::open("g", Some(&path), None).unwrap();
        let mut got = Vec::new();
        assert_eq!(p.take_frames(5, None, |f| got.push(f.to_vec())).unwrap(), 5);
        // the rest is appended after the file was mapped: read after the mapping
        let mut w = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        w.write_all(&bytes[cut..]).unwrap();
        drop(w);
        assert_eq!(drain(&mut p).unwrap(), frames[5..].to_vec());
        got.extend(frames[5..].iter().cloned());
        assert_eq!(got, frames);
        assert!(p.is_exhausted());
        assert_eq!(p.stats().rx_packets, 40);
    }

    #[test]
    fn take_frames_stops_at_a_timestamp() {
        let d = TempDir::new("until");
        // frame i: 1000 + i s and i * 10 us
        let frames: Vec<Vec<u8>> = (0..6).map(|i| frame(i, 64)).collect();
        let path = d.0.join("u.pcap");
        std::fs::write(&path, pcap_bytes(&frames, false, false)).unwrap();
        let mut p = PcapFilePort::open("u", Some(&path), None).unwrap();
        let t2 = Duration::new(1002, 20_000);
        let mut n = 0;
        // below t2 only: frames 0 and 1
        assert_eq!(p.take_frames(10, Some((t2, false)), |_| n += 1).unwrap(), 2);
        assert_eq!(p.peek(None).unwrap(), Peek::Ready(t2));
        // t2 itself when inclusive, then the bound stops at frame 3
        assert_eq!(p.take_frames(10, Some((t2, true)), |_| n += 1).unwrap(), 1);
        assert_eq!(p.take_frames(2, None, |_| n += 1).unwrap(), 2);
        assert!(p.take(|f| assert_eq!(f, &frames[5][..])));
        assert!(!p.take(|_| panic!("nothing left")));
        assert_eq!(n, 5);
        assert!(p.is_exhausted());
    }

    #[test]
    fn handed_over_records_are_written_in_order() {
        let d = TempDir::new("sink");
        let path = d.0.join("s.pcap");
        let frames: Vec<Vec<u8>> = (0..30).map(|i| frame(i, 50 + i)).collect();
        let mut p = PcapFilePort::open("s", None, Some(&path)).unwrap();
        let ts = Duration::new(5, 0);
        let mut staged = Vec::new();
        for (k, chunk) in frames.chunks(7).enumerate() {
            // records handed over and frames sent one by one, interleaved
            if k % 2 == 0 {
                let bytes: u64 = chunk.iter().map(|f| f.len() as u64).sum();
                for f in chunk {
                    push_record(&mut staged, f, ts);
                }
                p.send_records(&mut staged, chunk.len() as u64, bytes)
                    .unwrap();
                assert!(staged.is_empty());
            } else {
                let refs: Vec<&[u8]> = chunk.iter().map(|f| f.as_slice()).collect();
                p.send_batch(&refs).unwrap();
            }
        }
        assert_eq!(p.stats().tx_packets, 30);
        p.flush().unwrap();
        let mut q = PcapFilePort::open("r", Some(&path), None).unwrap();
        assert_eq!(drain(&mut q).unwrap(), frames);
    }

    fn mkfifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn fifo_inputs_open_in_order_and_stream() {
        let d = TempDir::new("fifo");
        let frames: Vec<Vec<u8>> = (0..6).map(|i| frame(i, 64)).collect();
        let bytes = pcap_bytes(&frames, false, false);
        for n in ["p0", "p1"] {
            mkfifo(&d.0.join(format!("{n}_in.pcap")));
        }
        let dir = d.0.clone();
        let bytes2 = bytes.clone();
        // The writer opens the FIFOs in sorted order, like the STF driver.
        let writer = std::thread::spawn(move || {
            let mut w0 = File::create(dir.join("p0_in.pcap")).unwrap();
            let mut w1 = File::create(dir.join("p1_in.pcap")).unwrap();
            // p0: header and half of the first record, then a pause.
            w0.write_all(&bytes2[..24 + 30]).unwrap();
            w1.write_all(&bytes2[..24]).unwrap();
            std::thread::sleep(Duration::from_millis(150));
            w0.write_all(&bytes2[24 + 30..]).unwrap();
            drop(w0);
            std::thread::sleep(Duration::from_millis(100));
            w1.write_all(&bytes2[24..]).unwrap();
            drop(w1);
        });
        let mut p0 = PcapFilePort::use_files(&d.0, "p0").unwrap();
        let mut p1 = PcapFilePort::use_files(&d.0, "p1").unwrap();
        assert!(p0.input_is_fifo());
        // Nothing complete yet: a non-blocking poll returns 0, not EOF.
        let t = Instant::now();
        assert_eq!(p0.recv_batch(8, None, &mut |_| {}).unwrap(), 0);
        assert!(t.elapsed() < Duration::from_millis(50));
        assert!(!p0.is_exhausted());
        // A short timeout is honoured.
        let t = Instant::now();
        assert_eq!(
            p1.recv_batch(8, Some(Duration::from_millis(30)), &mut |_| {})
                .unwrap(),
            0
        );
        assert!(
            t.elapsed() >= Duration::from_millis(25) && t.elapsed() < Duration::from_millis(140)
        );
        let mut got0 = Vec::new();
        let mut got1 = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !(p0.is_exhausted() && p1.is_exhausted()) && Instant::now() < deadline {
            p0.recv_batch(4, Some(Duration::from_millis(10)), &mut |f| {
                got0.push(f.to_vec())
            })
            .unwrap();
            p1.recv_batch(4, Some(Duration::from_millis(10)), &mut |f| {
                got1.push(f.to_vec())
            })
            .unwrap();
        }
        writer.join().unwrap();
        assert_eq!(got0, frames);
        assert_eq!(got1, frames);
        assert!(p0.is_exhausted() && p1.is_exhausted());
    }

    #[test]
    fn fifo_truncated_when_writer_leaves() {
        let d = TempDir::new("fifotr");
        let bytes = pcap_bytes(&[frame(0, 64)], false, false);
        let path = d.0.join("q_in.pcap");
        mkfifo(&path);
        let p2 = path.clone();
        let writer = std::thread::spawn(move || {
            let mut w = File::create(p2).unwrap();
            w.write_all(&bytes[..bytes.len() - 5]).unwrap();
        });
        let mut p = PcapFilePort::use_files(&d.0, "q").unwrap();
        writer.join().unwrap();
        let err = p
            .recv_batch(4, Some(Duration::from_secs(2)), &mut |_| {})
            .unwrap_err();
        assert!(err.to_string().contains("q_in.pcap"), "{err}");
        assert!(err.to_string().contains("offset 24"), "{err}");
    }

    #[test]
    fn missing_input_names_the_file() {
        let d = TempDir::new("miss");
        let err = PcapFilePort::use_files(&d.0, "nope").err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains("nope_in.pcap"), "{err}");
    }

    #[test]
    fn recorder_records_rx_and_tx() {
        let d = TempDir::new("rec");
        let frames: Vec<Vec<u8>> = (0..4).map(|i| frame(i, 80)).collect();
        std::fs::write(d.0.join("r_in.pcap"), pcap_bytes(&frames, false, false)).unwrap();
        let rec_dir = d.0.join("rec");
        std::fs::create_dir(&rec_dir).unwrap();
        let inner = PcapFilePort::use_files(&d.0, "r").unwrap();
        let mut p = PcapRecorder::new(Box::new(inner) as Box<dyn Port>, &rec_dir).unwrap();
        assert_eq!(p.name(), "r");
        let mut got = Vec::new();
        while !p.is_exhausted() {
            p.recv_batch(3, None, &mut |f| got.push(f.to_vec()))
                .unwrap();
        }
        assert_eq!(got, frames);
        p.send_batch(&[&frames[1], &frames[2]]).unwrap();
        // the recording is written at once; the wrapped file port on flush
        p.flush().unwrap();
        let read = |name: &str| {
            let mut q = PcapFilePort::open("x", Some(&rec_dir.join(name)), None).unwrap();
            drain(&mut q).unwrap()
        };
        assert_eq!(read("r_in.pcap"), frames);
        assert_eq!(read("r_out.pcap"), frames[1..3].to_vec());
        assert_eq!(
            read("r_out.pcap"),
            drain(&mut PcapFilePort::open("y", Some(&d.0.join("r_out.pcap")), None).unwrap())
                .unwrap()
        );
    }
}
