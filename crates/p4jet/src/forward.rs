//! The forwarding threads of `p4jet run`.
//!
//! * `--mode rtc` (run to completion, the default): `--workers N` threads, each a
//!   [`Worker`] with its own wait-free reader of the control state and its own port on
//!   every interface (an AF_PACKET socket in the interface's fanout group, or its share
//!   of the AF_XDP queues), so a flow stays on one worker and needs no lock.
//! * `--mode pipeline`: per worker two threads, an [`IngressStage`] (rx, parse,
//!   ingress, traffic manager) and an [`EgressStage`] (egress, deparse, tx) joined by
//!   p4jet-ring rings of `--queue-size` slots. The worker's ports are shared by its two
//!   threads behind a mutex that each takes once per batch: the ingress thread to
//!   receive (without blocking; it waits for traffic with `poll` outside the lock), the
//!   egress thread to send the batch it staged.
//!
//! The main thread supervises: signals, `--duration`, port additions and removals
//! requested over Thrift (opened once per worker and handed to its threads), and the end
//! of the inputs with `--exit-when-done`. Per-port counters live in each thread's core
//! and are summed when the threads end.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use p4jet_engine::PacketBuf;
use p4jet_io::Port;
use p4jet_io::pcap::Peek;
use p4jet_switch::runtime::{DeviceCounters, PortEvent};
use p4jet_switch::{
    Balance, Board, Core, DropReason, EgressStage, IngressStage, PortCounters, Stamps, Switch,
    ThreadBooks, Worker,
};

use crate::run::{Mode, PortEntry, PortIo};

/// Longest wait of an idle run-to-completion thread whose ports can all wake it:
/// traffic wakes it at once; port changes and the end of the run are seen within it.
const IDLE_WAIT: Duration = Duration::from_millis(20);

/// One port of one shard as a forwarding thread holds it (shared with the other
/// stage of its worker in pipeline mode).
#[derive(Clone)]
pub(crate) struct PortHandle {
    pub num: u32,
    /// The shard it belongs to: the shards of an interface divide its receive side
    /// (fanout sockets, AF_XDP queues, DPDK queue pairs); a worker serves whole shards.
    pub shard: usize,
    pub port: Arc<Mutex<PortEntry>>,
}

impl PortHandle {
    pub fn new(pe: PortEntry, shard: usize) -> PortHandle {
        PortHandle {
            num: pe.num,
            shard,
            port: Arc::new(Mutex::new(pe)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, PortEntry> {
        match self.port.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

/// A port change for one forwarding thread.
pub(crate) enum PortCmd {
    /// A port added at run time (of one of the thread's shards).
    Add(PortHandle),
    /// A port removed at run time (of every shard).
    Remove(u32),
    /// Hand shard `.0` back on `.1` once everything the worker holds has left
    /// (run-to-completion workers only).
    Release(usize, Sender<(usize, Vec<PortHandle>)>),
    /// Serve these ports: a shard handed over by its previous worker.
    Take(Vec<PortHandle>),
    /// Leave, after draining (every shard was released before).
    Exit,
}

/// What a run-to-completion thread must do between two turns.
enum Ctl {
    Release(usize, Sender<(usize, Vec<PortHandle>)>),
    Exit,
}

/// Settings shared by every forwarding thread.
pub(crate) struct Common {
    pub stop: AtomicBool,
    pub files: bool,
    pub exit_when_done: bool,
    pub batch: usize,
    /// `--batch auto`: each run-to-completion thread adjusts its batch from the cost
    /// it measures ([`crate::model::BatchTuner`]).
    pub tune_batch: bool,
    /// The sub-batch (the tables' prefetch distance) chosen at load.
    pub sub_batch: usize,
    /// `--sub-batch auto`: each run-to-completion thread adjusts its sub-batch the same
    /// way, for its own lookups.
    pub tune_sub_batch: bool,
    /// The per-packet log (`--log-console`, `--log-file`).
    pub log: Option<Mutex<crate::logfile::LogSink>>,
    /// The notification socket (`--notifications-addr`): learning and port messages.
    pub notify: Option<p4jet_nanomsg::Publisher>,
    /// How long an empty open pcap FIFO holds the other inputs back.
    pub fifo_wait: Duration,
    /// Where the threads publish their books (the switch's board).
    pub board: Arc<Board>,
}

/// How often a forwarding thread publishes its books and reports what it dropped.
const REPORT_EVERY: Duration = Duration::from_secs(1);

/// A forwarding thread's reports: each distinct message once per [`REPORT_EVERY`]
/// with how often it repeated, and the drops that are faults or limits (not the
/// program's) as counts per reason, so a flood never floods stderr.
struct Reporter {
    name: String,
    slot: usize,
    board: Arc<Board>,
    last: Instant,
    /// Messages of this period: (message, times).
    seen: Vec<(String, u64)>,
    /// Fault drops per reason already reported.
    drops_reported: [u64; p4jet_switch::DROP_REASONS],
    busy: u64,
    idle: u64,
}

impl Reporter {
    fn new(name: &str, slot: usize, board: Arc<Board>) -> Reporter {
        Reporter {
            name: name.to_string(),
            slot,
            board,
            last: Instant::now(),
            seen: vec![],
            drops_reported: [0; p4jet_switch::DROP_REASONS],
            busy: 0,
            idle: 0,
        }
    }

    /// Counts a turn of the thread's loop.
    fn turn(&mut self, busy: bool) {
        if busy {
            self.busy += 1;
        } else {
            self.idle += 1;
        }
    }

    /// A message: printed the first time in a period, counted after that.
    fn message(&mut self, m: String) {
        if let Some(x) = self.seen.iter_mut().find(|x| x.0 == m) {
            x.1 += 1;
            return;
        }
        eprintln!("p4jet: {m}");
        if self.seen.len() < 64 {
            self.seen.push((m, 1));
        }
    }

    /// Takes the core's messages; once a period publishes its books and reports the
    /// repeats and fault drops of the period (`now`: whatever the time).
    fn tick(&mut self, core: &mut Core, extra: &mut Vec<String>, now: bool) {
        self.tick_at(core, extra, now, Instant::now())
    }

    /// [`Reporter::tick`] at `at`, the time of the caller's turn (one clock read per
    /// turn of a forwarding loop).
    fn tick_at(&mut self, core: &mut Core, extra: &mut Vec<String>, now: bool, at: Instant) {
        for e in std::mem::take(&mut core.errors) {
            self.message(e);
        }
        for e in extra.drain(..) {
            self.message(e);
        }
        let since = at.saturating_duration_since(self.last);
        if !now && since < REPORT_EVERY {
            return;
        }
        let secs = since.as_secs_f64();
        self.last = at;
        for (m, n) in self.seen.drain(..) {
            if n > 1 {
                eprintln!("p4jet: {m} ({} more times in {secs:.1} s)", n - 1);
            }
        }
        let b = core.balance();
        let d = b.drops();
        let mut parts = vec![];
        for r in DropReason::ALL {
            let i = r.index();
            if !r.by_program() && d[i] > self.drops_reported[i] {
                parts.push(format!("{} {}", r.name(), d[i] - self.drops_reported[i]));
                self.drops_reported[i] = d[i];
            }
        }
        if !parts.is_empty() {
            eprintln!(
                "p4jet: {}: dropped in {secs:.1} s: {}",
                self.name,
                parts.join(", ")
            );
        }
        self.board.publish(
            self.slot,
            ThreadBooks {
                name: self.name.clone(),
                balance: b,
                busy_polls: self.busy,
                idle_polls: self.idle,
                latency: core.latency.clone(),
                tables: core.table_stats(),
            },
        );
    }
}

/// What one forwarding thread owns.
struct Lane {
    name: String,
    /// This thread's entry on the board.
    slot: usize,
    ports: Vec<PortHandle>,
    cmds: Receiver<PortCmd>,
    cpu: Option<usize>,
    fds: Vec<RawFd>,
    /// Every port has a poll fd: an idle thread may sleep in `poll` until traffic
    /// comes (up to [`IDLE_WAIT`]) instead of waking every millisecond.
    all_pollable: bool,
    /// A port is polled without sleeping (DPDK): the thread never waits.
    busy: bool,
    /// Ports that move buffers (AF_XDP): received into and sent from UMEM chunks.
    moving: Vec<u32>,
    /// `moving` changed since the thread last told its core.
    moving_changed: bool,
    /// pcap-file ports (`--use-files`): their output takes pcap records.
    pcap_out: Vec<u32>,
    /// `pcap_out` changed since the thread last told its [`TxBuf`].
    pcap_changed: bool,
    /// A receive burst of buffers on its way to the core (kept for its capacity).
    staged: Vec<PacketBuf>,
}

/// Where a forwarding thread puts what it receives.
trait Rx {
    /// A frame to copy into a pooled buffer.
    fn frame(&mut self, port: u32, frame: &[u8]);
    /// Frames in their own buffers (UMEM chunks, mbufs), all from `port`, in order;
    /// `bufs` is left empty.
    fn bufs(&mut self, port: u32, bufs: &mut Vec<PacketBuf>);
}

impl Rx for Worker {
    fn frame(&mut self, port: u32, frame: &[u8]) {
        self.inject(port, frame)
    }
    fn bufs(&mut self, port: u32, bufs: &mut Vec<PacketBuf>) {
        self.inject_bufs(port, bufs)
    }
}

impl Rx for IngressStage {
    fn frame(&mut self, port: u32, frame: &[u8]) {
        self.inject(port, frame)
    }
    fn bufs(&mut self, port: u32, bufs: &mut Vec<PacketBuf>) {
        self.inject_bufs(port, bufs)
    }
}

impl Lane {
    fn start(&mut self) {
        if let Some(cpu) = self.cpu {
            match p4jet_io::affinity::pin_current_thread(cpu) {
                Ok(()) => eprintln!("p4jet: {} pinned to CPU {cpu}", self.name),
                Err(e) => eprintln!("p4jet: {}: {e}", self.name),
            }
        }
        self.refresh_fds();
    }

    fn refresh_fds(&mut self) {
        self.fds.clear();
        self.moving.clear();
        self.pcap_out.clear();
        self.all_pollable = true;
        self.busy = false;
        for ph in &self.ports {
            let mut pe = ph.lock();
            let port = pe.port();
            self.busy |= port.busy_polls();
            match port.poll_fd() {
                Some(fd) => self.fds.push(fd),
                None => self.all_pollable = false,
            }
            if port.moves_buffers() {
                self.moving.push(ph.num);
            }
            if matches!(pe.io, PortIo::Pcap(_)) {
                self.pcap_out.push(ph.num);
            }
        }
        self.moving_changed = true;
        self.pcap_changed = true;
    }

    /// Tells `tx` which ports are pcap files, if that changed.
    fn update_pcap(&mut self, tx: &mut TxBuf) {
        if self.pcap_changed {
            tx.set_pcap_ports(&self.pcap_out);
            self.pcap_changed = false;
        }
    }

    /// Tells `core` which ports take buffers, if that changed.
    fn update_moving(&mut self, core: &mut Core) {
        if self.moving_changed {
            core.set_moving_ports(&self.moving);
            self.moving_changed = false;
        }
    }

    /// Applies port additions and removals sent by the supervisor, and takes the
    /// shards handed over; returns the hand-overs and exits asked for, which the
    /// thread carries out after draining.
    fn port_cmds(&mut self) -> Vec<Ctl> {
        let mut changed = false;
        let mut ctl = vec![];
        loop {
            match self.cmds.try_recv() {
                Ok(PortCmd::Add(h)) => {
                    self.ports.retain(|p| (p.num, p.shard) != (h.num, h.shard));
                    self.ports.push(h);
                    self.ports.sort_by_key(|p| (p.num, p.shard));
                    changed = true;
                }
                Ok(PortCmd::Take(hs)) => {
                    self.ports.extend(hs);
                    self.ports.sort_by_key(|p| (p.num, p.shard));
                    changed = true;
                }
                Ok(PortCmd::Release(s, reply)) => ctl.push(Ctl::Release(s, reply)),
                Ok(PortCmd::Exit) => ctl.push(Ctl::Exit),
                Ok(PortCmd::Remove(num)) => {
                    if let Some(p) = self.ports.iter().find(|p| p.num == num) {
                        let _ = p.lock().port().flush();
                    }
                    self.ports.retain(|p| p.num != num);
                    changed = true;
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        if changed {
            self.refresh_fds();
        }
        ctl
    }

    /// Takes the ports of shard `s` out of this thread.
    fn take_shard(&mut self, s: usize) -> Vec<PortHandle> {
        let (gone, kept) = std::mem::take(&mut self.ports)
            .into_iter()
            .partition(|p| p.shard == s);
        self.ports = kept;
        self.refresh_fds();
        gone
    }

    /// Whether a port of this thread has frames the kernel has not taken yet.
    fn tx_pending(&self) -> bool {
        self.ports.iter().any(|ph| ph.lock().port().tx_pending())
    }

    /// Receives up to a batch per live port without blocking: AF_XDP frames in
    /// their UMEM chunks, other ports' frames copied. pcap ports are read by
    /// `read_pcaps` (the CPU port is live next to them with `--use-files`).
    fn rx_live(&mut self, batch: usize, rx: &mut dyn Rx, errors: &mut Vec<String>) -> usize {
        let mut got = 0;
        let staged = &mut self.staged;
        for ph in &self.ports {
            let num = ph.num;
            let mut pe = ph.lock();
            if matches!(pe.io, PortIo::Pcap(_)) {
                continue;
            }
            let port = pe.port();
            let n = if port.moves_buffers() {
                // the burst is staged, then handed over in one call (not one per frame)
                let r = port.recv_bufs(batch, staged);
                rx.bufs(num, staged);
                r
            } else {
                port.recv_batch(batch, None, &mut |f| rx.frame(num, f))
            };
            // a port that fails (its interface went down or away) is reported and
            // kept: the switch goes on with the others (port_remove takes it away)
            match n {
                Ok(n) => got += n,
                Err(e) => errors.push(format!("port {num}: receive: {e}")),
            }
        }
        got
    }

    /// How long an idle thread waits in `poll`: long when every port can wake it.
    fn idle_wait(&self) -> Duration {
        if self.busy {
            Duration::ZERO
        } else if self.all_pollable && !self.fds.is_empty() {
            IDLE_WAIT
        } else {
            Duration::from_millis(1)
        }
    }

    /// Waits up to `d` for traffic on any live port.
    fn wait(&self, d: Duration) -> Result<(), String> {
        if d.is_zero() {
            return Ok(());
        }
        p4jet_io::wait_readable(&self.fds, d)
            .map(|_| ())
            .map_err(|e| format!("{}: poll: {e}", self.name))
    }

    /// One line per live port of this thread with the port's own counters (how many
    /// frames left from the UMEM chunk they arrived in, for AF_XDP).
    fn report_ports(&self) {
        for ph in &self.ports {
            let mut pe = ph.lock();
            if matches!(pe.io, PortIo::Pcap(_)) {
                continue;
            }
            let port = pe.port();
            let s = port.stats();
            eprintln!(
                "p4jet: port {}@{} ({}, {}): rx {} (kernel drops {}), tx {} ({} in place), tx dropped {}",
                ph.num,
                port.name(),
                port.kind(),
                self.name,
                s.rx_packets,
                s.rx_dropped,
                s.tx_packets,
                s.tx_in_place,
                s.tx_dropped
            );
            // DPDK: the device's error counters, always
            if s.rx_errors + s.tx_errors > 0 || port.kind() == p4jet_io::PortKind::Dpdk {
                eprintln!(
                    "p4jet: port {}@{}: rx errors {}, tx errors {}",
                    ph.num,
                    port.name(),
                    s.rx_errors,
                    s.tx_errors
                );
            }
        }
    }

    /// Flushes every port; a port that fails is reported in `errors`, and the frames
    /// it could not hand on are counted as lost in `core`'s books.
    fn flush_all(&self, core: &mut Core, errors: &mut Vec<String>) {
        for ph in &self.ports {
            let num = ph.num;
            let mut pe = ph.lock();
            if let Err(e) = pe.port().flush() {
                errors.push(format!("port {num}: flush: {e}"));
            }
            let unsent = pe.port().take_unsent();
            drop(pe);
            core.uncount_tx(num, DropReason::PortError, unsent);
        }
    }
}

/// Reads up to `max` frames of the pcap inputs in timestamp order, as bmv2's pcap
/// reader does: the earliest record among the heads of all open inputs, so a FIFO that
/// has not delivered its next record yet (and is not closed) holds the others back, and
/// frames enter in one order whatever the timing of the writers. bmv2 waits for such a
/// FIFO for ever; p4jet waits `fifo_wait` (`--pcap-fifo-wait`, 1 s by default), then
/// goes on without it until it delivers again (a FIFO its writer never uses, such as an
/// output-only port of a test driver, would otherwise stop the switch). Ordering by
/// timestamp makes runs repeatable (equal timestamps: the lower port first).
///
/// Each input is locked once per call and the heads are merged with a heap; the
/// frames of the input that stays earliest are taken in one run up to the next head's
/// timestamp (a single input: up to `max` at once), handed to `inject` where they lie
/// (a mapped file, or an input's read buffer). Returns the frames read and whether
/// every pcap input has ended.
fn read_pcaps(
    ports: &[PortHandle],
    max: usize,
    fifo_wait: Duration,
    mut inject: impl FnMut(u32, &[u8]),
) -> Result<(usize, bool), String> {
    let mut inputs: Vec<MutexGuard<'_, PortEntry>> = ports
        .iter()
        .map(PortHandle::lock)
        .filter(|pe| !pe.exhausted && matches!(pe.io, PortIo::Pcap(_)))
        .collect();
    let mut heads = BinaryHeap::with_capacity(inputs.len());
    let mut waiting = false;
    for (i, pe) in inputs.iter_mut().enumerate() {
        match head(pe, fifo_wait)? {
            Head::Ready(ts) => heads.push(Reverse((ts, i))),
            Head::Wait => waiting = true,
            Head::None => {}
        }
    }
    let mut n = 0;
    // an input that may still deliver an earlier frame holds the others back
    while n < max && !waiting {
        let Some(Reverse((_, i))) = heads.pop() else {
            break;
        };
        let pe = &mut *inputs[i];
        let num = pe.num;
        let PortIo::Pcap(pc) = &mut pe.io else {
            continue;
        };
        // the frames of this input while they stay the earliest: up to the next
        // head's timestamp (itself too if this input's port is lower), no heap
        let until = heads.peek().map(|Reverse((ts, j))| (*ts, i < *j));
        n += pc
            .take_frames(max - n, until, |f| inject(num, f))
            .map_err(|e| e.to_string())?;
        match head(pe, fifo_wait)? {
            Head::Ready(ts) => heads.push(Reverse((ts, i))),
            Head::Wait => waiting = true,
            Head::None => {}
        }
    }
    let done = inputs.iter().all(|pe| pe.exhausted);
    Ok((n, done))
}

/// The head of one pcap input for [`read_pcaps`].
enum Head {
    /// A frame with this timestamp is ready.
    Ready(Duration),
    /// Nothing yet, and the input is waited for (a FIFO within `--pcap-fifo-wait`).
    Wait,
    /// Ended, or a FIFO waited for too long: not merged for now.
    None,
}

/// Peeks at the next frame of one pcap input (without waiting) and keeps its books:
/// when it ended, since when it has had nothing.
fn head(pe: &mut PortEntry, fifo_wait: Duration) -> Result<Head, String> {
    let PortIo::Pcap(pc) = &mut pe.io else {
        return Ok(Head::None);
    };
    Ok(match pc.peek(None).map_err(|e| e.to_string())? {
        Peek::Ready(ts) => {
            pe.pending_since = None;
            Head::Ready(ts)
        }
        Peek::Exhausted => {
            pe.exhausted = true;
            Head::None
        }
        Peek::Pending => {
            let since = *pe.pending_since.get_or_insert_with(Instant::now);
            if since.elapsed() < fifo_wait {
                Head::Wait
            } else {
                Head::None
            }
        }
    })
}

/// Frames transmitted during one batch, copied out of the packet contexts so that
/// each port is locked once per batch and gets them in one `send_batch`.
#[derive(Default)]
struct TxBuf {
    data: Vec<u8>,
    frames: Vec<(u32, usize, usize)>,
    /// Frames leaving in their own buffers (UMEM chunks, mbufs), from
    /// `Core::take_moved`: the ports in `moved_to`, the buffers at the same places
    /// in `moved`.
    moved_to: Vec<u32>,
    moved: Vec<PacketBuf>,
    /// While one port sends its moved frames when several ports have some: its
    /// frames, and the other ports' (ports and buffers), in order (kept for their
    /// capacity).
    mine: Vec<PacketBuf>,
    others_to: Vec<u32>,
    others: Vec<PacketBuf>,
    /// pcap-file outputs (`--use-files`): frames are written as pcap records into
    /// the port's staging buffer as they leave, and handed over whole.
    pcap: Vec<PcapStage>,
    /// Port number -> 1 + its index in `pcap` (0: not a pcap output).
    pcap_slot: Vec<u16>,
    /// The records' timestamp in this batch (the clock is read once per batch).
    ts: Option<Duration>,
}

/// The records of one pcap output staged during a batch.
struct PcapStage {
    port: u32,
    records: Vec<u8>,
    frames: u64,
    bytes: u64,
}

/// Ports above this number are served by the general path (the slot table stays small).
const MAX_PCAP_SLOT: u32 = 4096;

impl TxBuf {
    #[inline]
    fn push(&mut self, port: u32, frame: &[u8]) {
        if let Some(&k) = self.pcap_slot.get(port as usize)
            && k > 0
        {
            let ts = *self.ts.get_or_insert_with(now_since_epoch);
            let st = &mut self.pcap[usize::from(k) - 1];
            p4jet_io::pcap::push_record(&mut st.records, frame, ts);
            st.frames += 1;
            st.bytes += frame.len() as u64;
            return;
        }
        let s = self.data.len();
        self.data.extend_from_slice(frame);
        self.frames.push((port, s, self.data.len()));
    }

    /// The pcap outputs of the thread (called between batches, with nothing staged).
    fn set_pcap_ports(&mut self, ports: &[u32]) {
        self.pcap.clear();
        self.pcap_slot.clear();
        for &p in ports.iter().filter(|p| **p <= MAX_PCAP_SLOT) {
            let i = p as usize;
            if self.pcap_slot.len() <= i {
                self.pcap_slot.resize(i + 1, 0);
            }
            self.pcap.push(PcapStage {
                port: p,
                records: Vec::with_capacity(64 * 1024),
                frames: 0,
                bytes: 0,
            });
            self.pcap_slot[i] = self.pcap.len() as u16;
        }
    }

    /// Hands the staged pcap records to their ports (one lock and one copy per port
    /// and batch); frames a port failed to write are moved from sent to dropped.
    fn send_pcap(&mut self, ports: &[PortHandle], core: &mut Core, errors: &mut Vec<String>) {
        self.ts = None;
        for st in &mut self.pcap {
            if st.frames == 0 {
                continue;
            }
            // the frames lost: with the output's writer thread, those of an earlier
            // batch whose write failed since (this batch's are handed over)
            let (r, lost) = match ports.iter().find(|h| h.num == st.port) {
                Some(ph) => match &mut ph.lock().io {
                    PortIo::Pcap(pc) => {
                        let r = pc.send_records(&mut st.records, st.frames, st.bytes);
                        (r, pc.take_unsent())
                    }
                    PortIo::Live(_) => (
                        Err(std::io::Error::other("not a pcap-file port")),
                        st.frames,
                    ),
                },
                None => {
                    core.uncount_tx(st.port, DropReason::NoSuchPort, st.frames);
                    (Ok(()), 0)
                }
            };
            if let Err(e) = r {
                errors.push(format!("port {}: transmit: {e}", st.port));
            }
            if lost > 0 {
                core.uncount_tx(st.port, DropReason::PortError, lost);
            }
            st.records.clear();
            st.frames = 0;
            st.bytes = 0;
        }
    }

    /// Sends the staged frames, per port in order, and flushes those ports. Frames to
    /// ports this thread does not have are dropped (as simple_switch drops frames to
    /// unknown ports).
    ///
    /// Frames the port did not take are moved from sent to dropped in `core`'s books:
    /// a full transmit ring (after retries), a port that fails (reported, kept: its
    /// interface may come back), a port this thread does not have.
    fn send(&mut self, ports: &[PortHandle], core: &mut Core, errors: &mut Vec<String>) {
        if !self.pcap.is_empty() {
            self.send_pcap(ports, core, errors);
        }
        if self.frames.is_empty() && self.moved.is_empty() {
            return;
        }
        const CHUNK: usize = 64;
        // a thread serving several shards has a port per shard on an interface
        // (sorted by number, then shard): the first transmits
        let mut last = None;
        for ph in ports {
            if last == Some(ph.num) {
                continue;
            }
            last = Some(ph.num);
            if !self.frames.iter().any(|f| f.0 == ph.num) && !self.moved_to.contains(&ph.num) {
                continue;
            }
            let mut pe = ph.lock();
            let is_pcap = matches!(pe.io, PortIo::Pcap(_));
            let port = pe.port();
            let num = ph.num;
            let mut failed = 0u64;
            let mut fail = |e: std::io::Error, n: usize, failed: &mut u64| {
                *failed += n as u64;
                errors.push(format!("port {num}: transmit: {e}"));
            };
            let mut dropped = match self.send_moved(port, num) {
                Ok(d) => d as u64,
                Err((e, n)) => {
                    fail(e, n, &mut failed);
                    0
                }
            };
            // (frames all moved: no chunk of slices to set up)
            if !self.frames.is_empty() {
                let mut chunk: [&[u8]; CHUNK] = [&[]; CHUNK];
                let mut n = 0;
                let mut send = |chunk: &[&[u8]], dropped: &mut u64, failed: &mut u64| match send_all(
                    port, chunk,
                ) {
                    Ok(d) => *dropped += d as u64,
                    Err((e, d)) => fail(e, d, failed),
                };
                for &(p, s, e) in &self.frames {
                    if p != num {
                        continue;
                    }
                    chunk[n] = &self.data[s..e];
                    n += 1;
                    if n == CHUNK {
                        send(&chunk[..n], &mut dropped, &mut failed);
                        n = 0;
                    }
                }
                if n > 0 {
                    send(&chunk[..n], &mut dropped, &mut failed);
                }
            }
            // pcap outputs are buffered: the thread flushes them when it goes idle
            if !is_pcap && let Err(e) = port.flush() {
                errors.push(format!("port {num}: flush: {e}"));
            }
            // frames the port took but could not hand on (its interface went away)
            failed += port.take_unsent();
            core.uncount_tx(num, DropReason::TxRingFull, dropped);
            core.uncount_tx(num, DropReason::PortError, failed);
        }
        // frames for ports this thread does not have: dropped, as simple_switch drops
        // frames to unknown ports (moved frames' chunks go back)
        for &(p, _, _) in &self.frames {
            if !ports.iter().any(|h| h.num == p) {
                core.uncount_tx(p, DropReason::NoSuchPort, 1);
            }
        }
        for &p in &self.moved_to {
            core.uncount_tx(p, DropReason::NoSuchPort, 1);
        }
        self.data.clear();
        self.frames.clear();
        self.moved_to.clear();
        self.moved.clear();
    }
}

impl TxBuf {
    /// Sends the moved frames of port `num` (in order; the others stay in `moved`,
    /// in order), flushing while the transmit ring is full; returns how many were
    /// dropped because the port did not make room. An error leaves the frames of
    /// `num` not sent yet out of `moved` and gives how many there were.
    fn send_moved(
        &mut self,
        port: &mut dyn Port,
        num: u32,
    ) -> Result<usize, (std::io::Error, usize)> {
        let mine = self.moved_to.iter().filter(|&&p| p == num).count();
        if mine == 0 {
            return Ok(0);
        }
        if mine == self.moved_to.len() {
            // the common case: every moved frame leaves by this port
            self.moved_to.clear();
            return send_bufs_all(port, &mut self.moved);
        }
        for (p, b) in self.moved_to.drain(..).zip(self.moved.drain(..)) {
            if p == num {
                self.mine.push(b);
            } else {
                self.others_to.push(p);
                self.others.push(b);
            }
        }
        std::mem::swap(&mut self.moved_to, &mut self.others_to);
        std::mem::swap(&mut self.moved, &mut self.others);
        send_bufs_all(port, &mut self.mine)
    }
}

/// Sends every buffer of `bufs` (which is left empty), flushing while the transmit
/// ring is full; returns how many were dropped because the port did not make room.
/// An error drops the frames not sent yet and gives how many there were.
fn send_bufs_all(
    port: &mut dyn Port,
    bufs: &mut Vec<PacketBuf>,
) -> Result<usize, (std::io::Error, usize)> {
    let (mut dropped, mut stalls) = (0, 0);
    while !bufs.is_empty() {
        if port.send_bufs(bufs) > 0 {
            continue;
        }
        if let Err(e) = port.flush() {
            let lost = bufs.len();
            bufs.clear();
            return Err((e, lost));
        }
        stalls += 1;
        if stalls > 10_000 {
            // the port makes no room: this frame is dropped, the next tried once more
            bufs.remove(0);
            dropped += 1;
        } else if stalls > 16 {
            std::thread::yield_now();
        }
    }
    Ok(dropped)
}

/// Sends every frame, flushing while the transmit ring is full; gives up (returns the
/// number not sent) if the kernel does not make room.
/// An error gives the number not sent.
fn send_all(port: &mut dyn Port, frames: &[&[u8]]) -> Result<usize, (std::io::Error, usize)> {
    let mut off = 0;
    let mut stalls = 0;
    while off < frames.len() {
        let n = port
            .send_batch(&frames[off..])
            .map_err(|e| (e, frames.len() - off))?;
        off += n;
        if n == 0 {
            port.flush().map_err(|e| (e, frames.len() - off))?;
            stalls += 1;
            if stalls > 10_000 {
                return Ok(frames.len() - off);
            }
            if stalls > 16 {
                std::thread::yield_now();
            }
        }
    }
    Ok(0)
}

fn flush_trace(core: &mut Core, c: &Common) {
    let lines = std::mem::take(&mut core.trace_out);
    if lines.is_empty() {
        return;
    }
    if let Some(log) = &c.log {
        let mut out = match log.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        out.write_lines(lines);
    }
}

/// With `--use-files`, a run-to-completion thread reads up to this many of its batches
/// per turn (the switch takes them a batch at a time): fewer turns, each with its
/// locks and books.
const FILE_BATCHES: usize = 8;

/// Longest time buffered pcap output waits for a write while the thread stays busy
/// (an idle thread writes at once).
const FLUSH_EVERY: Duration = Duration::from_millis(10);

/// The wall clock as pcap timestamps take it.
fn now_since_epoch() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

/// How long an idle forwarding thread may wait: `max`, or less when a packet of a
/// rate-limited queue is due sooner.
fn nap(due: Option<Duration>, max: Duration) -> Duration {
    due.map_or(max, |d| d.min(max))
}

/// A run-to-completion worker thread.
fn rtc_thread(
    mut w: Worker,
    mut lane: Lane,
    c: Arc<Common>,
    load: Arc<Load>,
) -> Result<Done, String> {
    lane.start();
    let mut tx = TxBuf::default();
    let mut errors = vec![];
    let mut rep = Reporter::new(&lane.name, lane.slot, c.board.clone());
    let mut flushed = Instant::now();
    let mut batch = c.batch;
    let mut tuner = (c.tune_batch || c.tune_sub_batch)
        .then(|| crate::model::BatchTuner::new(batch, c.sub_batch, c.tune_batch, c.tune_sub_batch));
    let mut sub_batch = c.sub_batch;
    let mut changes = 0u64;
    let r = (|| -> Result<(), String> {
        let mut turn = Instant::now();
        let mut was_busy = false;
        let mut last_got = 0;
        while !c.stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            load.add(was_busy, now - turn);
            // a turn that took a whole batch: the batch size limited it
            if let Some(t) = tuner.as_mut()
                && last_got >= batch
                && let Some((nb, nsb)) = t.observe(last_got as u64, (now - turn).as_nanos() as f64)
            {
                changes += 1;
                if nb != batch {
                    batch = nb;
                    w.core.set_batch_size(nb);
                }
                if nsb != sub_batch {
                    // this thread's lookups only: the tables are shared
                    sub_batch = nsb;
                    p4jet_tables::set_thread_prefetch_distance(Some(nsb));
                }
            }
            turn = now;
            let ctl = lane.port_cmds();
            if !ctl.is_empty() && hand_over(&mut w, &mut lane, &mut tx, &c, &mut errors, ctl) {
                break;
            }
            lane.update_moving(&mut w.core);
            // the turn's time (one clock read): the latency stamp of what arrives now
            w.core.mark_rx_at(now);
            lane.update_pcap(&mut tx);
            let (got, ended) = if c.files {
                let (n, ended) =
                    read_pcaps(&lane.ports, batch * FILE_BATCHES, c.fifo_wait, |n, f| {
                        w.inject(n, f)
                    })?;
                (n + lane.rx_live(batch, &mut w, &mut errors), ended)
            } else {
                (lane.rx_live(batch, &mut w, &mut errors), false)
            };
            last_got = got;
            rep.turn(got > 0);
            was_busy = got > 0;
            // packets of rate-limited queues leave later: never wait for them here
            w.run_ready(&mut |p, f| tx.push(p, f));
            w.core.take_moved(&mut tx.moved_to, &mut tx.moved);
            tx.send(&lane.ports, &mut w.core, &mut errors);
            flush_trace(&mut w.core, &c);
            rep.tick_at(&mut w.core, &mut errors, false, now);
            if c.files {
                // the pcap outputs: written when the thread is idle (readers of FIFOs
                // see every frame promptly) or has been busy for FLUSH_EVERY
                if got == 0 || flushed.elapsed() >= FLUSH_EVERY {
                    lane.flush_all(&mut w.core, &mut errors);
                    flushed = Instant::now();
                }
                if ended && w.pending() == 0 {
                    if c.exit_when_done {
                        return Ok(());
                    }
                    // simple_switch keeps running after its inputs end; wait for SIGTERM
                    std::thread::sleep(Duration::from_millis(20));
                } else if got == 0 {
                    std::thread::sleep(nap(w.core.until_due(), Duration::from_micros(200)));
                }
            } else if got == 0 {
                lane.wait(nap(w.core.until_due(), lane.idle_wait()))?;
            }
        }
        Ok(())
    })();
    lane.flush_all(&mut w.core, &mut errors);
    rep.tick(&mut w.core, &mut errors, true);
    lane.report_ports();
    if let Some(t) = &tuner {
        eprintln!(
            "p4jet: {}: batch {}, sub-batch {} at the end (auto: {changes} changes while forwarding)",
            lane.name,
            t.batch(),
            t.sub_batch()
        );
    }
    r?;
    Ok(Done::Rtc(Box::new(w)))
}

/// Carries out hand-overs: first everything the worker holds leaves (processed and
/// transmitted, the transmit rings taken by the kernel), with nothing received
/// meanwhile, so no frame of a shard it gives away can leave after a frame its next
/// worker sends; then the shards go back to the supervisor. Returns whether the
/// thread is to end.
fn hand_over(
    w: &mut Worker,
    lane: &mut Lane,
    tx: &mut TxBuf,
    c: &Common,
    errors: &mut Vec<String>,
    ctl: Vec<Ctl>,
) -> bool {
    let mut said = Instant::now();
    loop {
        w.run_ready(&mut |p, f| tx.push(p, f));
        w.core.take_moved(&mut tx.moved_to, &mut tx.moved);
        tx.send(&lane.ports, &mut w.core, errors);
        lane.flush_all(&mut w.core, errors);
        if (w.pending() == 0 && !lane.tx_pending()) || c.stop.load(Ordering::Relaxed) {
            break;
        }
        if said.elapsed() >= REPORT_EVERY {
            said = Instant::now();
            errors.push(format!(
                "{}: handing over: {} packets still queued (rate-limited queues)",
                lane.name,
                w.pending()
            ));
        }
        if w.pending() > 0 {
            std::thread::sleep(nap(w.core.until_due(), Duration::from_millis(1)));
        } else {
            std::thread::yield_now();
        }
    }
    let mut exit = false;
    for x in ctl {
        match x {
            Ctl::Release(s, reply) => {
                let hs = lane.take_shard(s);
                let _ = reply.send((s, hs));
            }
            Ctl::Exit => exit = true,
        }
    }
    exit
}

/// The ingress thread of a pipelined worker.
fn ingress_thread(mut st: IngressStage, mut lane: Lane, c: Arc<Common>) -> Result<Done, String> {
    lane.start();
    let mut errors = vec![];
    let mut rep = Reporter::new(&lane.name, lane.slot, c.board.clone());
    let name = lane.name.clone();
    let gone = move |_| format!("{name}: the egress stage stopped");
    let r = (|| -> Result<(), String> {
        while !c.stop.load(Ordering::Relaxed) {
            lane.port_cmds();
            // the turn's time (one clock read), for the latency stamps and the reporter
            let now = Instant::now();
            st.core_mut().mark_rx_at(now);
            let (got, ended) = if c.files {
                let (n, ended) =
                    read_pcaps(&lane.ports, c.batch, c.fifo_wait, |n, f| st.inject(n, f))?;
                (n + lane.rx_live(c.batch, &mut st, &mut errors), ended)
            } else {
                (lane.rx_live(c.batch, &mut st, &mut errors), false)
            };
            rep.turn(got > 0);
            // everything received goes through ingress; recirculated packets come back
            st.step().map_err(&gone)?;
            while st.local_ready() {
                st.step().map_err(&gone)?;
            }
            flush_trace(st.core_mut(), &c);
            rep.tick_at(st.core_mut(), &mut errors, false, now);
            if c.files {
                if ended && st.pending() == 0 {
                    if c.exit_when_done {
                        return Ok(());
                    }
                    std::thread::sleep(Duration::from_millis(20));
                } else if got == 0 {
                    std::thread::sleep(nap(st.idle_until(), Duration::from_micros(200)));
                }
            } else if got == 0 {
                if let Some(d) = st.idle_until() {
                    // only packets of rate-limited queues are left
                    lane.wait(nap(Some(d), lane.idle_wait().min(Duration::from_millis(1))))?;
                } else if st.in_flight() == 0 {
                    lane.wait(lane.idle_wait().min(Duration::from_millis(1)))?;
                } else {
                    // recirculated packets may come back any moment
                    std::thread::yield_now();
                }
            }
        }
        Ok(())
    })();
    st.close();
    rep.tick(st.core_mut(), &mut errors, true);
    r?;
    Ok(Done::Ingress(Box::new(st)))
}

/// The egress thread of a pipelined worker: runs until the ingress thread closes the
/// ring.
fn egress_thread(mut st: EgressStage, mut lane: Lane, c: Arc<Common>) -> Result<Done, String> {
    lane.start();
    let mut tx = TxBuf::default();
    let mut errors = vec![];
    let mut rep = Reporter::new(&lane.name, lane.slot, c.board.clone());
    let mut flushed = Instant::now();
    loop {
        lane.port_cmds();
        lane.update_moving(st.core_mut());
        lane.update_pcap(&mut tx);
        let r = st.step(&mut |p, f| tx.push(p, f), Duration::from_millis(5));
        let busy = matches!(r, Ok(n) if n > 0);
        rep.turn(busy);
        st.core_mut().take_moved(&mut tx.moved_to, &mut tx.moved);
        tx.send(&lane.ports, st.core_mut(), &mut errors);
        // pcap outputs: written when idle or after FLUSH_EVERY (see rtc_thread)
        if c.files && (!busy || flushed.elapsed() >= FLUSH_EVERY) {
            lane.flush_all(st.core_mut(), &mut errors);
            flushed = Instant::now();
        }
        flush_trace(st.core_mut(), &c);
        rep.tick(st.core_mut(), &mut errors, false);
        if r.is_err() {
            break;
        }
    }
    lane.flush_all(st.core_mut(), &mut errors);
    rep.tick(st.core_mut(), &mut errors, true);
    lane.report_ports();
    Ok(Done::Egress(Box::new(st)))
}

/// A forwarding thread's state when it ends.
enum Done {
    Rtc(Box<Worker>),
    Ingress(Box<IngressStage>),
    Egress(Box<EgressStage>),
}

impl Done {
    fn balance(&self) -> Balance {
        match self {
            Done::Rtc(w) => w.core.balance(),
            Done::Ingress(s) => s.core().balance(),
            Done::Egress(s) => s.core().balance(),
        }
    }
}

/// How `p4jet run` forwards.
pub(crate) struct Plan {
    /// Log learning notifications on stderr (without P4Runtime: with it, digest
    /// lists go to the controller).
    pub log_digests: bool,
    pub mode: Mode,
    /// Workers at start.
    pub workers: usize,
    /// `--workers auto:MIN..MAX`.
    pub auto: Option<(usize, usize)>,
    pub pin: bool,
    pub queue_size: usize,
    pub duration: f64,
}

/// Opens one port for shard `k`.
pub(crate) type OpenFn<'a> = dyn Fn(u32, &str, usize) -> Result<PortEntry, String> + 'a;

/// How busy a run-to-completion worker is: the time of its loop turns that found
/// frames, and of those that found none (waits included).
#[derive(Default)]
struct Load {
    busy_ns: AtomicU64,
    idle_ns: AtomicU64,
}

impl Load {
    fn add(&self, busy: bool, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        if busy {
            self.busy_ns.fetch_add(ns, Ordering::Relaxed);
        } else {
            self.idle_ns.fetch_add(ns, Ordering::Relaxed);
        }
    }

    fn read(&self) -> (u64, u64) {
        (
            self.busy_ns.load(Ordering::Relaxed),
            self.idle_ns.load(Ordering::Relaxed),
        )
    }
}

/// A worker as the supervisor holds it: one thread (run to completion) or two
/// (pipelined).
struct Active {
    id: usize,
    cmds: Vec<Sender<PortCmd>>,
    threads: Vec<(String, JoinHandle<Result<Done, String>>)>,
    load: Arc<Load>,
}

/// The forwarding threads, and which worker serves each shard.
struct Pool<'a> {
    sw: &'a Mutex<Switch>,
    common: Arc<Common>,
    mode: Mode,
    cpus: Vec<usize>,
    active: Vec<Active>,
    /// Per shard, the id of the worker serving it.
    owners: Vec<usize>,
    /// Per shard, its ports (to read their counters; the workers hold them too).
    shard_ports: Vec<Vec<PortHandle>>,
    next_id: usize,
    /// Threads of workers that left, and how they ended.
    retired: Vec<(String, Result<Done, String>)>,
    changes: u64,
    /// `--workers auto:MIN..MAX`, until `set_workers` fixes the count.
    auto: Option<(usize, usize)>,
    requested: usize,
}

impl Lane {
    fn new(
        name: String,
        slot: usize,
        ports: Vec<PortHandle>,
        cmds: Receiver<PortCmd>,
        cpu: Option<usize>,
    ) -> Lane {
        Lane {
            name,
            slot,
            ports,
            cmds,
            cpu,
            fds: vec![],
            all_pollable: false,
            busy: false,
            moving: vec![],
            moving_changed: true,
            pcap_out: vec![],
            pcap_changed: true,
            staged: Vec::new(),
        }
    }
}

fn spawn_thread(
    name: &str,
    f: Box<dyn FnOnce() -> Result<Done, String> + Send>,
) -> Result<JoinHandle<Result<Done, String>>, String> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .map_err(|e| format!("starting {name}: {e}"))
}

impl Pool<'_> {
    fn cpu(&self, i: usize) -> Option<usize> {
        (!self.cpus.is_empty()).then(|| self.cpus[i % self.cpus.len()])
    }

    /// Starts a worker serving `ports` (the ports of its shards, sorted by number
    /// then shard).
    fn spawn(&mut self, queue_size: usize, mut ports: Vec<PortHandle>) -> Result<(), String> {
        ports.sort_by_key(|p| (p.num, p.shard));
        let id = self.next_id;
        self.next_id += 1;
        let load = Arc::new(Load::default());
        let w = match self.mode {
            Mode::Rtc => {
                let mut w = lock(self.sw).new_worker();
                w.core.enable_latency(Stamps::new());
                let (s, r) = std::sync::mpsc::channel();
                let l = Lane::new(format!("worker {id}"), id, ports, r, self.cpu(id));
                let c = self.common.clone();
                let name = l.name.clone();
                let ld = load.clone();
                let h = spawn_thread(&name, Box::new(move || rtc_thread(w, l, c, ld)))?;
                Active {
                    id,
                    cmds: vec![s],
                    threads: vec![(name, h)],
                    load,
                }
            }
            Mode::Pipeline => {
                let (mut ing, mut egr) = lock(self.sw).new_pipeline(queue_size);
                let stamps = Stamps::new();
                ing.enable_latency(stamps.clone());
                egr.enable_latency(stamps);
                let (s1, r1) = std::sync::mpsc::channel();
                let (s2, r2) = std::sync::mpsc::channel();
                let l1 = Lane::new(
                    format!("worker {id} ingress"),
                    2 * id,
                    ports.clone(),
                    r1,
                    self.cpu(2 * id),
                );
                let l2 = Lane::new(
                    format!("worker {id} egress"),
                    2 * id + 1,
                    ports,
                    r2,
                    self.cpu(2 * id + 1),
                );
                let (c1, c2) = (self.common.clone(), self.common.clone());
                let (n1, n2) = (l1.name.clone(), l2.name.clone());
                let h1 = spawn_thread(&n1, Box::new(move || ingress_thread(ing, l1, c1)))?;
                let h2 = spawn_thread(&n2, Box::new(move || egress_thread(egr, l2, c2)))?;
                Active {
                    id,
                    cmds: vec![s1, s2],
                    threads: vec![(n1, h1), (n2, h2)],
                    load,
                }
            }
        };
        self.active.push(w);
        Ok(())
    }

    fn worker(&self, id: usize) -> Option<&Active> {
        self.active.iter().find(|a| a.id == id)
    }

    /// Per shard, where its port changes go (the threads of its worker).
    fn shard_senders(&self) -> Vec<Vec<Sender<PortCmd>>> {
        self.owners
            .iter()
            .map(|id| self.worker(*id).map(|a| a.cmds.clone()).unwrap_or_default())
            .collect()
    }

    /// Per worker: (id, busy ns, idle ns) so far.
    fn loads(&self) -> Vec<(usize, u64, u64)> {
        self.active
            .iter()
            .map(|a| {
                let (b, i) = a.load.read();
                (a.id, b, i)
            })
            .collect()
    }

    fn any_finished(&self) -> bool {
        self.active
            .iter()
            .any(|a| a.threads.iter().any(|(_, h)| h.is_finished()))
    }

    /// What the runtime API shows.
    fn info(&self) -> p4jet_runtime::Workers {
        p4jet_runtime::Workers {
            active: self.active.len() as u32,
            requested: self.requested as u32,
            max: self.owners.len() as u32,
            auto: self.auto.map(|(a, b)| (a as u32, b as u32)),
            owners: self.owners.iter().map(|o| *o as u32).collect(),
            changes: self.changes,
        }
    }

    fn publish(&self) {
        let mut s = lock(self.sw);
        s.rt.workers = Some(self.info());
    }

    /// What the devices of the ports count, per port over its shards; and the frames
    /// dropped before a worker read them, over every port. None when a worker holds
    /// one of the ports right now: the supervisor never makes a worker wait.
    fn device_counters(&self) -> Option<(BTreeMap<u32, DeviceCounters>, u64)> {
        let mut m: BTreeMap<u32, DeviceCounters> = BTreeMap::new();
        let mut missed = 0;
        for ph in self.shard_ports.iter().flatten() {
            let mut pe = match ph.port.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return None,
            };
            if matches!(pe.io, PortIo::Pcap(_)) {
                continue;
            }
            let st = pe.port().stats();
            let d = m.entry(ph.num).or_default();
            d.rx_missed += st.rx_dropped;
            d.rx_errors += st.rx_errors;
            d.tx_errors += st.tx_errors;
            missed += st.rx_dropped;
        }
        Some((m, missed))
    }

    /// Changes the number of run-to-completion workers to `target` while traffic
    /// flows. New workers start with no shard; shards are then spread as evenly as
    /// possible with the fewest moves, the workers that leave being the latest
    /// started. Each shard that moves is handed over on its own: its worker drains
    /// (everything it holds is transmitted and taken by the kernel, nothing received
    /// meanwhile) and gives it back; only then does its new worker get it, so a flow
    /// (always on one shard) never has frames on two workers at once.
    fn scale(&mut self, target: usize, term: &AtomicBool) -> Result<(), String> {
        let max = self.owners.len();
        let target = target.clamp(1, max.max(1));
        let from = self.active.len();
        if target == from {
            return Ok(());
        }
        if self.mode != Mode::Rtc {
            return Err(format!(
                "workers {from} -> {target}: pipelined workers cannot be added or removed \
                 (--mode rtc)"
            ));
        }
        let t0 = Instant::now();
        while self.active.len() < target {
            self.spawn(0, vec![])?;
        }
        let stay: Vec<usize> = self.active[..target].iter().map(|a| a.id).collect();
        let mut held: Vec<Vec<usize>> = stay
            .iter()
            .map(|id| (0..max).filter(|s| self.owners[*s] == *id).collect())
            .collect();
        let mut free: Vec<usize> = (0..max)
            .filter(|s| !stay.contains(&self.owners[*s]))
            .collect();
        // the most loaded keep the larger shares
        let mut order: Vec<usize> = (0..target).collect();
        order.sort_by_key(|&i| Reverse(held[i].len()));
        let mut want = vec![max / target; target];
        for &i in order.iter().take(max % target) {
            want[i] += 1;
        }
        for i in 0..target {
            while held[i].len() > want[i] {
                if let Some(s) = held[i].pop() {
                    free.push(s);
                }
            }
        }
        free.sort_unstable();
        let mut moves: Vec<(usize, usize, usize)> = vec![];
        let mut free = free.into_iter();
        for i in 0..target {
            while held[i].len() < want[i] {
                let Some(s) = free.next() else { break };
                moves.push((s, self.owners[s], stay[i]));
                held[i].push(s);
            }
        }
        // every shard that moves is released by its worker (after draining) ...
        let (rtx, rrx) = std::sync::mpsc::channel();
        for &(s, old, _) in &moves {
            if let Some(a) = self.worker(old) {
                let _ = a.cmds[0].send(PortCmd::Release(s, rtx.clone()));
            }
        }
        drop(rtx);
        // ... and handed to its new worker as it comes back
        let mut left = moves.len();
        while left > 0 {
            match rrx.recv_timeout(Duration::from_millis(100)) {
                Ok((s, hs)) => {
                    let to = moves.iter().find(|m| m.0 == s).map_or(stay[0], |m| m.2);
                    if let Some(a) = self.worker(to) {
                        let _ = a.cmds[0].send(PortCmd::Take(hs));
                    }
                    self.owners[s] = to;
                    left -= 1;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if term.load(Ordering::Relaxed) {
                        return Err(format!("workers {from} -> {target}: interrupted"));
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(format!(
                        "workers {from} -> {target}: a worker ended during the hand-over"
                    ));
                }
            }
        }
        let handed = t0.elapsed();
        // the workers left without a shard end
        for a in self.active.split_off(target) {
            for s in &a.cmds {
                let _ = s.send(PortCmd::Exit);
            }
            for (name, h) in a.threads {
                let r = h.join().unwrap_or_else(|_| Err(format!("{name} panicked")));
                if let Ok(d) = &r {
                    let b = d.balance();
                    eprintln!(
                        "p4jet: {name} left: rx {}, tx {}, drop {}",
                        b.received(),
                        b.sent(),
                        b.dropped()
                    );
                }
                self.retired.push((name, r));
            }
        }
        self.changes += 1;
        let owners: Vec<String> = self
            .owners
            .iter()
            .enumerate()
            .map(|(s, o)| format!("{s}->{o}"))
            .collect();
        eprintln!(
            "p4jet: workers {from} -> {target}: {} shard{} handed over in {:.2} ms (shard->worker: {})",
            moves.len(),
            if moves.len() == 1 { "" } else { "s" },
            handed.as_secs_f64() * 1e3,
            owners.join(" ")
        );
        Ok(())
    }
}

/// `--workers auto:MIN..MAX`: once a second, how busy each worker was (the time of
/// its loop turns that found frames over all of its time). One more worker after 3
/// seconds in a row of the workers busy more than [`AUTO_GROW`] on average; one fewer
/// after 5 seconds in a row where the others could take the load staying under
/// [`AUTO_SHRINK`]; nothing for 5 seconds after a change.
struct AutoScale {
    last: Vec<(usize, u64, u64)>,
    /// Frames dropped before a worker read them, at the last look.
    missed: u64,
    hot: u32,
    cold: u32,
    quiet_until: Instant,
}

/// Average busy share of the workers above which `auto` adds one.
const AUTO_GROW: f64 = 0.85;
/// Busy share the remaining workers would have below which `auto` removes one.
const AUTO_SHRINK: f64 = 0.5;

impl AutoScale {
    /// The worker count to move to, if any; `missed`: frames dropped so far because
    /// a receive ring was full (the workers do not keep up, whatever their share of
    /// busy turns says).
    /// `now`: per active worker (id, busy ns, idle ns) so far; `at`: the time.
    fn decide(
        &mut self,
        now: Vec<(usize, u64, u64)>,
        (lo, hi): (usize, usize),
        missed: u64,
        at: Instant,
    ) -> Option<usize> {
        let dropping = missed > self.missed;
        self.missed = missed;
        let n = now.len();
        let mut utils = vec![];
        for &(id, b, i) in &now {
            let (b0, i0) = self
                .last
                .iter()
                .find(|x| x.0 == id)
                .map_or((0, 0), |x| (x.1, x.2));
            let (db, di) = (b.saturating_sub(b0), i.saturating_sub(i0));
            if db + di > 0 {
                utils.push(db as f64 / (db + di) as f64);
            }
        }
        self.last = now;
        if utils.is_empty() || at < self.quiet_until {
            return None;
        }
        let total: f64 = utils.iter().sum();
        let avg = total / utils.len() as f64;
        self.hot = if avg > AUTO_GROW || dropping {
            self.hot + 1
        } else {
            0
        };
        self.cold = if n > 1 && !dropping && total / ((n - 1) as f64) < AUTO_SHRINK {
            self.cold + 1
        } else {
            0
        };
        let to = if self.hot >= 3 && n < hi {
            Some(n + 1)
        } else if self.cold >= 5 && n > lo {
            Some(n - 1)
        } else if n < lo {
            Some(lo)
        } else {
            None
        };
        if to.is_some() {
            self.hot = 0;
            self.cold = 0;
            self.quiet_until = at + Duration::from_secs(5);
            eprintln!(
                "p4jet: workers auto: busy {:.0} % on average over {n} worker{}{}",
                avg * 100.0,
                if n == 1 { "" } else { "s" },
                if dropping {
                    ", receive rings overflowing"
                } else {
                    ""
                }
            );
        }
        to
    }
}

/// Starts the forwarding threads over `ports` (per shard), supervises them until a
/// signal (`term`), `--duration`, or the end of the inputs, and returns the per-port
/// counters summed over every thread.
pub(crate) fn run(
    sw: &Mutex<Switch>,
    plan: &Plan,
    ports: Vec<Vec<PortHandle>>,
    common: Arc<Common>,
    term: &AtomicBool,
    open: &OpenFn<'_>,
) -> Result<Vec<PortCounters>, String> {
    let cpus = if plan.pin {
        match p4jet_io::affinity::allowed_cpus() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("p4jet: --pin: {e}; threads are not pinned");
                vec![]
            }
        }
    } else {
        vec![]
    };
    let threads_per_worker = match plan.mode {
        Mode::Rtc => 1,
        Mode::Pipeline => 2,
    };
    if plan.pin && plan.workers * threads_per_worker > cpus.len() && !cpus.is_empty() {
        eprintln!(
            "p4jet: --pin: {} forwarding threads on {} CPUs: some share a CPU",
            plan.workers * threads_per_worker,
            cpus.len()
        );
    }
    // live ports come up at start: bmv2's port monitor publishes them once it polls
    // them (every 200 ms); pcap-file ports have no status
    let mut startup_ports: Vec<u32> = ports
        .first()
        .map(|w| w.iter().map(|p| p.num).collect())
        .unwrap_or_default();
    startup_ports.sort_unstable();
    startup_ports.dedup();
    let mut startup_sent = common.files;
    let shards = ports.len();
    let workers = plan.workers.clamp(1, shards.max(1));
    let mut pool = Pool {
        sw,
        common: common.clone(),
        mode: plan.mode,
        cpus,
        active: vec![],
        owners: (0..shards).map(|s| s % workers).collect(),
        shard_ports: ports.clone(),
        next_id: 0,
        retired: vec![],
        changes: 0,
        auto: plan.auto,
        requested: workers,
    };
    // shard k starts on worker k % workers
    let mut per_worker: Vec<Vec<PortHandle>> = vec![vec![]; workers];
    for (k, hs) in ports.into_iter().enumerate() {
        per_worker[k % workers].extend(hs);
    }
    for mine in per_worker {
        pool.spawn(plan.queue_size, mine)?;
    }
    pool.publish();
    eprintln!(
        "p4jet: forwarding with {} worker{} ({}){}",
        workers,
        if workers == 1 { "" } else { "s" },
        match plan.mode {
            Mode::Rtc => "run to completion".to_string(),
            Mode::Pipeline => format!(
                "pipelined: ingress and egress threads joined by rings of {} slots",
                p4jet_switch::pipeline::ring_capacity(plan.queue_size)
            ),
        },
        match (plan.auto, shards > workers) {
            (Some((lo, hi)), _) => format!("; automatic between {lo} and {hi}"),
            (None, true) => format!("; up to {shards} with set_workers"),
            (None, false) => String::new(),
        }
    );

    let start = Instant::now();
    let mut last_events = Instant::now();
    let mut last_sweep = Instant::now();
    let mut last_auto = Instant::now();
    let mut auto = AutoScale {
        last: vec![],
        missed: 0,
        hot: 0,
        cold: 0,
        quiet_until: Instant::now(),
    };
    loop {
        if term.load(Ordering::Relaxed)
            || (plan.duration > 0.0 && start.elapsed().as_secs_f64() >= plan.duration)
            || pool.any_finished()
        {
            break;
        }
        if !startup_sent && start.elapsed() >= Duration::from_millis(200) {
            startup_sent = true;
            let device = lock(sw).rt.device_id;
            publish_ports(&common, device, &startup_ports);
        }
        if last_events.elapsed() >= Duration::from_millis(100) {
            last_events = Instant::now();
            port_events(
                sw,
                &pool.shard_senders(),
                &mut pool.shard_ports,
                open,
                &common,
            );
            // with P4Runtime on, its digest lists take the learning notifications
            if plan.log_digests {
                learn_events(sw, false, &common);
            }
            // a worker count asked for over the runtime API
            let req = match sw.try_lock() {
                Ok(mut s) => s.rt.workers_request.take(),
                Err(_) => None,
            };
            if let Some(n) = req {
                pool.auto = None;
                pool.requested = n as usize;
                if let Err(e) = pool.scale(n as usize, term) {
                    eprintln!("p4jet: {e}");
                }
                pool.publish();
            }
        }
        if last_auto.elapsed() >= Duration::from_secs(1) {
            last_auto = Instant::now();
            // the devices' counters, for the runtime API's port counters
            let missed = match pool.device_counters() {
                Some((dev, missed)) => {
                    if let Ok(mut s) = sw.try_lock() {
                        s.rt.device_counters = dev;
                    }
                    missed
                }
                None => auto.missed,
            };
            if let Some(range) = pool.auto
                && let Some(n) = auto.decide(pool.loads(), range, missed, Instant::now())
            {
                pool.requested = n;
                if let Err(e) = pool.scale(n, term) {
                    eprintln!("p4jet: {e}");
                }
                pool.publish();
            }
        }
        // bmv2's ageing monitor sweeps once a second; with P4Runtime on, its idle
        // timeout notifications take the place of these
        if last_sweep.elapsed() >= Duration::from_secs(1) {
            last_sweep = Instant::now();
            if plan.log_digests {
                ageing_events(sw, &common);
            }
        }
        // a run that ends with its pcap inputs is timed to the millisecond
        std::thread::sleep(Duration::from_millis(
            if common.files && common.exit_when_done {
                1
            } else {
                5
            },
        ));
    }
    common.stop.store(true, Ordering::Relaxed);
    let mut total = Balance::default();
    let mut first_err = None;
    let mut ended: Vec<(String, Result<Done, String>)> = std::mem::take(&mut pool.retired)
        .into_iter()
        .map(|(n, r)| (format!("{n} (left)"), r))
        .collect();
    for a in std::mem::take(&mut pool.active) {
        for (name, h) in a.threads {
            let r = h.join().unwrap_or_else(|_| Err(format!("{name} panicked")));
            ended.push((name, r));
        }
    }
    // until the workers are gone: their last frames are written (pcap-file outputs
    // wait for their writer threads)
    let forwarded_for = start.elapsed();
    for (name, r) in ended {
        match r {
            Ok(done) => {
                let b = done.balance();
                eprintln!(
                    "p4jet: {name}: rx {}, tx {}, drop {}",
                    b.received(),
                    b.sent(),
                    b.dropped()
                );
                total.add(&b);
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    // the workers are gone: what they learned last is sent now
    if plan.log_digests {
        learn_events(sw, true, &common);
    }
    // the books: what came in (received, copies made) went out, was dropped (by
    // reason) or is still inside
    eprintln!("p4jet: packets: {}", total.equation());
    let secs = forwarded_for.as_secs_f64();
    eprintln!(
        "p4jet: forwarded for {secs:.3} s: {:.2} Mpps received",
        total.received() as f64 / secs.max(1e-9) / 1e6
    );
    eprintln!("p4jet: drops by reason: {}", total.drops_text());
    match first_err {
        Some(e) => Err(e),
        None => Ok(total.ports),
    }
}

/// Learning notifications (digests) due now: published on the notification socket as
/// bmv2 publishes them (`LEA|` messages), and one log line each on stderr
/// (`digest_dump` shows the latest again). While forwarding (`all` false) it never
/// waits for the lock; at the end of a run (`all`) it waits for it and sends every
/// waiting sample whatever the lists' timeouts.
fn learn_events(sw: &Mutex<Switch>, all: bool, common: &Common) {
    let mut s = if all {
        lock(sw)
    } else {
        match sw.try_lock() {
            Ok(s) => s,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        }
    };
    let msgs = if all {
        s.take_digests()
    } else {
        s.poll_digests_now()
    };
    for m in &msgs {
        if let Some(n) = &common.notify {
            // bmv2's learning message names the list by its JSON id
            let list_id = s
                .engine
                .prog
                .learn_lists
                .get(m.digest.index())
                .map_or(0, |l| l.id);
            n.send(
                &p4jet_nanomsg::Learn {
                    switch_id: s.rt.device_id,
                    cxt_id: 0,
                    list_id: list_id as i32,
                    buffer_id: m.list_id,
                    samples: m.samples.clone(),
                }
                .encode(),
            );
        }
        eprintln!("p4jet: {}", s.describe_digest_list(m));
    }
}

/// Ageing notifications (`AGE|`) of one sweep, on the notification socket.
fn ageing_events(sw: &Mutex<Switch>, common: &Common) {
    let Some(n) = &common.notify else {
        return;
    };
    let mut s = match sw.try_lock() {
        Ok(s) => s,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    let device = s.rt.device_id;
    for (buffer_id, table_id, handles) in s.ageing_sweep() {
        n.send(
            &p4jet_nanomsg::Ageing {
                switch_id: device,
                cxt_id: 0,
                buffer_id,
                table_id: table_id as i32,
                handles,
            }
            .encode(),
        );
    }
}

/// A port status notification (`PRT|`): these ports are up.
fn publish_ports(common: &Common, device: u64, ports: &[u32]) {
    if let Some(n) = &common.notify
        && !ports.is_empty()
    {
        n.send(
            &p4jet_nanomsg::PortStatus {
                switch_id: device,
                statuses: ports.iter().map(|p| (*p as i32, true)).collect(),
            }
            .encode(),
        );
    }
}

fn lock(sw: &Mutex<Switch>) -> MutexGuard<'_, Switch> {
    match sw.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Port additions and removals requested through the runtime API (`port_add`,
/// `port_remove`), looked at a few times a second without ever waiting for the lock:
/// each shard gets its own port, handed to the thread(s) of the worker serving it.
fn port_events(
    sw: &Mutex<Switch>,
    shards: &[Vec<Sender<PortCmd>>],
    shard_ports: &mut [Vec<PortHandle>],
    open: &OpenFn<'_>,
    common: &Common,
) {
    let (events, device) = match sw.try_lock() {
        Ok(mut s) => (std::mem::take(&mut s.rt.port_events), s.rt.device_id),
        Err(_) => return,
    };
    for ev in events {
        match ev {
            PortEvent::Add { port, iface, .. } => {
                let mut opened = false;
                for (k, ss) in shards.iter().enumerate() {
                    match open(port, &iface, k) {
                        Ok(pe) => {
                            opened = true;
                            let h = PortHandle::new(pe, k);
                            if let Some(v) = shard_ports.get_mut(k) {
                                v.retain(|p| p.num != port);
                                v.push(h.clone());
                            }
                            for s in ss {
                                let _ = s.send(PortCmd::Add(h.clone()));
                            }
                        }
                        Err(e) => eprintln!("p4jet: {e}"),
                    }
                }
                // a port added at run time comes up: bmv2's port monitor says so
                if opened && !common.files {
                    publish_ports(common, device, &[port]);
                }
            }
            PortEvent::Remove { port } => {
                for v in shard_ports.iter_mut() {
                    v.retain(|p| p.num != port);
                }
                for s in shards.iter().flatten() {
                    let _ = s.send(PortCmd::Remove(port));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scaler(at: Instant) -> AutoScale {
        AutoScale {
            last: vec![],
            missed: 0,
            hot: 0,
            cold: 0,
            quiet_until: at,
        }
    }

    /// Feeds one second of `busy` shares (per worker id) and returns the decision.
    fn second(
        a: &mut AutoScale,
        totals: &mut Vec<(usize, u64, u64)>,
        busy: &[(usize, f64)],
        missed: u64,
        at: Instant,
    ) -> Option<usize> {
        totals.retain(|t| busy.iter().any(|b| b.0 == t.0));
        for &(id, f) in busy {
            let ns = 1_000_000_000u64;
            let b = (f * ns as f64) as u64;
            match totals.iter_mut().find(|t| t.0 == id) {
                Some(t) => {
                    t.1 += b;
                    t.2 += ns - b;
                }
                None => totals.push((id, b, ns - b)),
            }
        }
        a.decide(totals.clone(), (1, 3), missed, at)
    }

    #[test]
    fn auto_grows_after_three_busy_seconds_and_shrinks_after_five_idle_ones() {
        let t0 = Instant::now();
        let s = |k: u64| t0 + Duration::from_secs(k);
        let mut a = scaler(t0);
        let mut tot = vec![];
        // busy, but not three seconds in a row
        assert_eq!(second(&mut a, &mut tot, &[(0, 0.9)], 0, s(1)), None);
        assert_eq!(second(&mut a, &mut tot, &[(0, 0.9)], 0, s(2)), None);
        assert_eq!(second(&mut a, &mut tot, &[(0, 0.5)], 0, s(3)), None);
        assert_eq!(second(&mut a, &mut tot, &[(0, 0.95)], 0, s(4)), None);
        assert_eq!(second(&mut a, &mut tot, &[(0, 0.95)], 0, s(5)), None);
        assert_eq!(second(&mut a, &mut tot, &[(0, 0.95)], 0, s(6)), Some(2));
        // nothing for 5 seconds after a change, however idle
        for k in 7..11 {
            assert_eq!(
                second(&mut a, &mut tot, &[(0, 0.0), (1, 0.0)], 0, s(k)),
                None
            );
        }
        // then 5 seconds in which one worker could take the load
        for k in 11..15 {
            assert_eq!(
                second(&mut a, &mut tot, &[(0, 0.2), (1, 0.2)], 0, s(k)),
                None
            );
        }
        assert_eq!(
            second(&mut a, &mut tot, &[(0, 0.2), (1, 0.2)], 0, s(15)),
            Some(1)
        );
    }

    #[test]
    fn auto_counts_overflowing_rings_as_busy_and_stays_in_its_range() {
        let t0 = Instant::now();
        let s = |k: u64| t0 + Duration::from_secs(k);
        let mut a = scaler(t0);
        let mut tot = vec![];
        // 60 % busy, but frames are being dropped at the rings: grow
        assert_eq!(second(&mut a, &mut tot, &[(0, 0.6)], 10, s(1)), None);
        assert_eq!(second(&mut a, &mut tot, &[(0, 0.6)], 20, s(2)), None);
        assert_eq!(second(&mut a, &mut tot, &[(0, 0.6)], 30, s(3)), Some(2));
        // three workers busy: MAX reached, nothing more
        let busy = [(0, 1.0), (1, 1.0), (2, 1.0)];
        for k in 9..20 {
            assert_eq!(second(&mut a, &mut tot, &busy, 30, s(k)), None);
        }
        // two workers each 30 % busy: one alone would be 60 %, above the shrink
        // threshold: they stay
        for k in 20..30 {
            assert_eq!(
                second(&mut a, &mut tot, &[(0, 0.3), (1, 0.3)], 30, s(k)),
                None
            );
        }
    }
}
