//! The packet as the engine carries it through the stages: its frame, its header vector
//! and what the program asked of the architecture; and the per-worker scratch space.

use p4jet_buf::PacketBuf;
use p4jet_ir::Program;

use crate::phv::Phv;
use crate::v1model::{ArchMeta, Requests};

/// Per-packet state carried through the pipeline.
#[derive(Debug, Clone)]
pub struct PacketCtx {
    /// The frame.
    pub pkt: PacketBuf,
    /// Headers and metadata.
    pub phv: Phv,
    /// Bytes of the frame consumed by the parser; the rest is payload.
    pub payload_off: usize,
    /// Length as received (counters and meters use it).
    pub ingress_len: u32,
    /// simple_switch's packet length register: set by the switch when a pass starts,
    /// adjusted by `add_header` (setValid) and `remove_header` (setInvalid); egress
    /// reads `packet_length` from it. Wrapping, as bmv2's unsigned register.
    pub length_reg: u64,
    /// `exit` was called in this control.
    pub exit: bool,
    /// The deparser ran for this pass ([`crate::Engine::egress_pass`]).
    pub deparsed: bool,
    /// What the program asked of the architecture (clone, resubmit, recirculate,
    /// digest, truncate).
    pub req: Requests,
    /// Trace lines (only filled when tracing).
    pub log: Vec<String>,
    /// Architecture bookkeeping (owned by the switch, not the program).
    pub arch: ArchMeta,
}

impl PacketCtx {
    /// A context for `p` with an empty frame of capacity `cap`.
    pub fn new(p: &Program, cap: usize) -> PacketCtx {
        PacketCtx {
            pkt: PacketBuf::with_capacity(cap),
            phv: Phv::new(p),
            payload_off: 0,
            ingress_len: 0,
            length_reg: 0,
            exit: false,
            deparsed: false,
            req: Requests::default(),
            log: Vec::new(),
            arch: ArchMeta::default(),
        }
    }

    /// Resets everything but the frame for a new arrival.
    #[inline]
    pub fn reset(&mut self, p: &Program) {
        self.phv.reset(p);
        self.payload_off = 0;
        self.exit = false;
        self.req = Requests::default();
        self.log.clear();
    }

    /// [`PacketCtx::reset`] of everything but the PHV's bytes and validity (which
    /// compiled code resets itself as a packet enters ingress). `extras`: the program
    /// has header stacks or varbit fields (else their indexes and lengths, which it
    /// never reads, are left alone; a per-program test the caller makes once).
    #[inline(always)]
    pub fn reset_but_phv(&mut self, extras: bool) {
        if extras {
            self.phv.stack_next.fill(0);
            self.phv.varbit_bits.fill(0);
        }
        self.exit = false;
        // no request is set unless `pending` is (the parser writes the payload offset)
        if self.req.pending {
            self.req = Requests::default();
        }
        if !self.log.is_empty() {
            self.log.clear();
        }
    }

    /// Copies frame, headers and requests of `other` into `self` without allocating
    /// (when `self`'s buffers are large enough).
    pub fn copy_from(&mut self, other: &PacketCtx) {
        self.pkt.buf.grow_to(other.pkt.buf.len());
        self.pkt.buf[other.pkt.start..other.pkt.end].copy_from_slice(other.pkt.data());
        self.pkt.start = other.pkt.start;
        self.pkt.end = other.pkt.end;
        self.phv.data.copy_from_slice(&other.phv.data);
        self.phv.valid.copy_from_slice(&other.phv.valid);
        if !other.phv.stack_next.is_empty() {
            self.phv.stack_next.copy_from_slice(&other.phv.stack_next);
        }
        if !other.phv.varbit_bits.is_empty() {
            self.phv.varbit_bits.copy_from_slice(&other.phv.varbit_bits);
        }
        self.payload_off = other.payload_off;
        self.ingress_len = other.ingress_len;
        self.length_reg = other.length_reg;
        self.exit = other.exit;
        self.deparsed = other.deparsed;
        self.req = other.req;
        self.log.clear();
        self.arch.port = other.arch.port;
        self.arch.instance_type = other.arch.instance_type;
        self.arch.passes = other.arch.passes;
        self.arch.preserved.clear();
        self.arch.enq_us = other.arch.enq_us;
        self.arch.enq_qdepth = other.arch.enq_qdepth;
        self.arch.deq_qdepth = other.arch.deq_qdepth;
        self.arch.qid = other.arch.qid;
        if other.arch.trace.copies.is_some() {
            // a copy (clone, replica): the next copy id of its packet
            self.arch.trace = other.arch.trace.new_copy();
        }
    }

    /// Zeroes every metadata header (simple_switch's reset of a new instance).
    pub fn zero_metadata(&mut self, p: &Program) {
        for (off, len) in &p.metadata_ranges {
            self.phv.data[*off as usize..(*off + *len) as usize].fill(0);
        }
    }
}

/// Levels of the per-packet log lines, as simple_switch's (`-L`): each line in
/// [`PacketCtx::log`] starts with one of these letters.
pub mod level {
    /// `[T]`: every condition, table apply, action and primitive.
    pub const TRACE: u8 = b'T';
    /// `[D]`: the packet's way through parser, tables and architecture.
    pub const DEBUG: u8 = b'D';
    /// `[I]`: `log_msg`.
    pub const INFO: u8 = b'I';
    /// `[W]`
    pub const WARN: u8 = b'W';
    /// `[E]`: a failed checksum.
    pub const ERROR: u8 = b'E';
}

/// Appends a line to the packet's log: its level letter, then simple_switch's
/// `[PACKET.COPY] [cxt 0] MESSAGE` (the writer adds time, logger and thread). Out of
/// line: the formatting stays off the per-packet paths, which only test whether
/// tracing is on.
#[cold]
#[inline(never)]
pub fn trace_line(ctx: &mut PacketCtx, lvl: u8, f: impl FnOnce() -> String) {
    let line = trace_text(&ctx.arch.trace, lvl, &f());
    ctx.log.push(line);
}

/// A stored log line of packet `id` (see [`trace_line`]).
#[cold]
pub fn trace_text(id: &crate::v1model::TraceId, lvl: u8, msg: &str) -> String {
    format!("{}[{}.{}] [cxt 0] {msg}", lvl as char, id.packet, id.copy)
}

/// Per-worker scratch space, allocated once.
#[derive(Debug, Default)]
pub struct Scratch {
    /// Per control node, the packets of the sub-batch waiting there (bit i: packet i).
    pub(crate) at: Vec<u64>,
    pub(crate) members: Vec<u32>,
    pub(crate) keys: Vec<u8>,
    pub(crate) calc: Vec<u8>,
    /// Per table (index of the program's tables), its lookups and hits on this worker.
    tables: Vec<TableStats>,
}

/// A table's lookups on one worker: every apply of the table to a packet, and those
/// that found an entry (a key-less table never does).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TableStats {
    /// Applies.
    pub lookups: u64,
    /// Applies that found an entry.
    pub hits: u64,
}

impl Scratch {
    /// Counts `lookups` applies of table `t`, `hits` of them hits (once per batch).
    #[inline]
    pub fn count_table(&mut self, t: u32, lookups: u64, hits: u64) {
        let t = t as usize;
        if t >= self.tables.len() {
            self.tables.resize(t + 1, TableStats::default());
        }
        let s = &mut self.tables[t];
        s.lookups += lookups;
        s.hits += hits;
    }

    /// The tables' counts so far, by table index (tables never applied may be
    /// missing at the end).
    pub fn table_stats(&self) -> &[TableStats] {
        &self.tables
    }
}
