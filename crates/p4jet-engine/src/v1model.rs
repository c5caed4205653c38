//! The v1model architecture's part of a packet, in one place: where the standard metadata
//! fields the switch reads and writes live ([`StandardMetadata`]), the requests a program
//! makes of the architecture ([`Requests`]: clone, resubmit, recirculate, digest,
//! truncate), the per-packet bookkeeping of the switch around the engine ([`ArchMeta`]),
//! `instance_type` values ([`instance`]) and `mark_to_drop`'s meaning (the drop port).
//! The switch (`p4jet-switch`) runs the architecture's flow with these: the traffic
//! manager, replication, and the order of the after-ingress and after-egress decisions.

use num_bigint::BigUint;
use p4jet_ir::Program;

use crate::native::Passed;
use crate::phv::{Phv, Window64};
use crate::state::{ControlState, Externs};
use crate::{ControlBlock, Engine, PacketCtx, Pkt, Scratch};

/// `instance_type` values (v1model).
pub mod instance {
    /// A packet received on a port.
    pub const NORMAL: u32 = 0;
    /// Ingress-to-egress clone.
    pub const INGRESS_CLONE: u32 = 1;
    /// Egress-to-egress clone.
    pub const EGRESS_CLONE: u32 = 2;
    /// Recirculated.
    pub const RECIRC: u32 = 4;
    /// Multicast copy.
    pub const REPLICATION: u32 = 5;
    /// Resubmitted.
    pub const RESUBMIT: u32 = 6;
}

/// What a program asked of the architecture during a pass (v1model's `clone`,
/// `resubmit`, `recirculate`, `digest` and `truncate` externs); the switch acts on them
/// after ingress or egress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requests {
    /// Some request may be set: false means none is (the switch's common path tests
    /// this one flag; compiled code reads it too).
    pub pending: bool,
    /// Clone requested: (session, field list id).
    pub clone: Option<(u32, u32)>,
    /// Resubmit requested with this field list id.
    pub resubmit: Option<u32>,
    /// Recirculate requested with this field list id.
    pub recirculate: Option<u32>,
    /// Digest requested: learn list id.
    pub digest: Option<u32>,
    /// Truncate the transmitted frame to this many bytes.
    pub truncate: Option<u32>,
}

impl Requests {
    /// Sets (or clears) the truncation length, keeping `pending` true while a request
    /// is set.
    #[inline]
    pub fn set_truncate(&mut self, n: Option<u32>) {
        self.truncate = n;
        self.pending |= n.is_some();
    }
}

/// Per-packet bookkeeping of the architecture around the engine.
#[derive(Debug, Clone, Default)]
pub struct ArchMeta {
    /// Port the packet arrived on (or is to be sent to, after the traffic manager).
    pub port: u32,
    /// `instance_type` of this pass.
    pub instance_type: u32,
    /// Resubmit/recirculate passes so far.
    pub passes: u32,
    /// Field values preserved from the previous pass (field id, value).
    pub preserved: Vec<(u32, BigUint)>,
    /// Enqueue time (µs).
    pub enq_us: u64,
    /// Queue depth seen at enqueue.
    pub enq_qdepth: u32,
    /// Queue depth left behind at dequeue (set by the traffic manager when the program
    /// reads `deq_qdepth`).
    pub deq_qdepth: u32,
    /// Priority queue.
    pub qid: u32,
    /// Injection time on the worker's latency clock (ns; 0 when latency is not
    /// measured); clones and recirculated packets keep their original's.
    pub rx_ns: u64,
    /// The per-packet log's `[PACKET.COPY]` (only kept when tracing): simple_switch's
    /// packet id (arrival order) and copy id (0 for the packet received, then 1, 2 ...
    /// for each clone, replica, resubmission or recirculation made from it).
    pub trace: TraceId,
}

/// A packet's id in the per-packet log (see [`ArchMeta::trace`]).
#[derive(Debug, Clone, Default)]
pub struct TraceId {
    /// Packet id: the number of the received packet this one comes from.
    pub packet: u64,
    /// Copy id.
    pub copy: u64,
    /// The port simple_switch says the packet was received on: the port the original
    /// arrived on, for its resubmissions and recirculations too.
    pub port: u32,
    /// Copy ids given so far to copies of this packet, shared by all of them.
    pub copies: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

impl TraceId {
    /// The id of a packet received: copy 0 of packet `packet`.
    pub fn received(packet: u64, port: u32) -> TraceId {
        TraceId {
            packet,
            copy: 0,
            port,
            copies: Some(std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0))),
        }
    }

    /// The id of a new copy of this packet (the next copy id of its packet).
    pub fn new_copy(&self) -> TraceId {
        let copy = self.copies.as_ref().map_or(0, |c| {
            c.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
        });
        TraceId {
            packet: self.packet,
            copy,
            port: self.port,
            copies: self.copies.clone(),
        }
    }
}

/// Locations of the standard metadata fields the switch reads and writes, resolved once.
/// Informational fields (ports, lengths, timestamps, queue figures, errors) are `None`
/// when the program never reads them, so the switch does not spend time writing them.
#[derive(Debug, Clone, Copy, Default)]
pub struct StandardMetadata {
    /// `ingress_port`
    pub ingress_port: Option<Window64>,
    /// `egress_spec` (always resolved: the switch reads it)
    pub egress_spec: Option<Window64>,
    /// `egress_port`
    pub egress_port: Option<Window64>,
    /// `instance_type`
    pub instance_type: Option<Window64>,
    /// `packet_length`
    pub packet_length: Option<Window64>,
    /// `enq_timestamp`
    pub enq_timestamp: Option<Window64>,
    /// `enq_qdepth`
    pub enq_qdepth: Option<Window64>,
    /// `deq_timedelta`
    pub deq_timedelta: Option<Window64>,
    /// `deq_qdepth`
    pub deq_qdepth: Option<Window64>,
    /// `ingress_global_timestamp`
    pub ingress_global_timestamp: Option<Window64>,
    /// `egress_global_timestamp`
    pub egress_global_timestamp: Option<Window64>,
    /// `mcast_grp` (resolved when the program may write it: otherwise it is 0 and
    /// the switch does not read it)
    pub mcast_grp: Option<Window64>,
    /// `egress_rid`
    pub egress_rid: Option<Window64>,
    /// `checksum_error`
    pub checksum_error: Option<Window64>,
    /// `parser_error`
    pub parser_error: Option<Window64>,
    /// `priority` (resolved when the program may write it, as `mcast_grp`)
    pub priority: Option<Window64>,
    /// `qid`
    pub qid: Option<Window64>,
    /// The program reads one of the fields the switch writes as a packet enters
    /// ingress (`ingress_port`, `packet_length`, `instance_type`,
    /// `ingress_global_timestamp`): when false, the switch skips them all.
    pub ingress_info: bool,
    /// The program reads one of the informational fields the switch writes as a packet
    /// enters egress (`egress_port`, `packet_length`, the queue figures and timestamps,
    /// `qid`).
    pub egress_info: bool,
}

impl StandardMetadata {
    pub(crate) fn new(p: &Program) -> StandardMetadata {
        let any = |f: Option<u32>| f.map(|f| Window64::new(p.fields[f as usize].loc));
        let read = |f: Option<u32>| {
            f.filter(|f| p.reads[*f as usize])
                .map(|f| Window64::new(p.fields[f as usize].loc))
        };
        let written = |f: Option<u32>| {
            f.filter(|f| p.writes.get(*f as usize).copied().unwrap_or(true))
                .map(|f| Window64::new(p.fields[f as usize].loc))
        };
        let s = &p.std;
        let mut l = StandardMetadata {
            ingress_port: read(s.ingress_port),
            egress_spec: any(s.egress_spec),
            egress_port: read(s.egress_port),
            instance_type: read(s.instance_type),
            packet_length: read(s.packet_length),
            enq_timestamp: read(s.enq_timestamp),
            enq_qdepth: read(s.enq_qdepth),
            deq_timedelta: read(s.deq_timedelta),
            deq_qdepth: read(s.deq_qdepth),
            ingress_global_timestamp: read(s.ingress_global_timestamp),
            egress_global_timestamp: read(s.egress_global_timestamp),
            mcast_grp: written(s.mcast_grp),
            egress_rid: read(s.egress_rid),
            checksum_error: read(s.checksum_error),
            parser_error: read(s.parser_error),
            priority: written(s.priority),
            qid: read(s.qid),
            ingress_info: false,
            egress_info: false,
        };
        l.ingress_info = [
            l.ingress_port,
            l.packet_length,
            l.instance_type,
            l.ingress_global_timestamp,
        ]
        .iter()
        .any(Option::is_some);
        l.egress_info = [
            l.egress_port,
            l.packet_length,
            l.enq_timestamp,
            l.enq_qdepth,
            l.deq_timedelta,
            l.deq_qdepth,
            l.egress_global_timestamp,
            l.qid,
        ]
        .iter()
        .any(Option::is_some);
        l
    }
}

impl Engine {
    /// Reads a standard metadata field (0 if absent).
    #[inline(always)]
    pub fn std_read(&self, phv: &Phv, f: Option<Window64>) -> u128 {
        match f {
            Some(s) => u128::from(phv.read64(s)),
            None => 0,
        }
    }

    /// Writes a standard metadata field (if present; see [`StandardMetadata`]).
    #[inline(always)]
    pub fn std_set(&self, phv: &mut Phv, f: Option<Window64>, v: u128) {
        if let Some(s) = f {
            phv.write64(s, v as u64);
        }
    }

    /// Same as [`Engine::std_set`] (informational fields are already filtered in
    /// [`StandardMetadata`]).
    #[inline(always)]
    pub fn std_inform(&self, phv: &mut Phv, f: Option<Window64>, v: u128) {
        self.std_set(phv, f, v)
    }

    /// A packet entering ingress: the context reset for a new pass, its lengths (as
    /// received: counters, meters and simple_switch's packet length register), the
    /// arrival metadata the program reads (`ingress_port`, `packet_length`,
    /// `instance_type`, `ingress_global_timestamp`) and the fields preserved from the
    /// pass before (resubmit, recirculate).
    #[inline(always)]
    pub fn begin_ingress(&self, ctx: &mut PacketCtx, now_us: u64) {
        let p = &*self.prog;
        let std = &self.std_meta;
        ctx.reset(p);
        let len = ctx.pkt.len() as u128;
        ctx.ingress_len = len as u32;
        ctx.length_reg = len as u64;
        if std.ingress_info {
            self.std_inform(&mut ctx.phv, std.ingress_port, ctx.arch.port as u128);
            self.std_inform(&mut ctx.phv, std.packet_length, len);
            self.std_inform(
                &mut ctx.phv,
                std.instance_type,
                ctx.arch.instance_type as u128,
            );
            self.std_inform(&mut ctx.phv, std.ingress_global_timestamp, now_us as u128);
        }
        if !ctx.arch.preserved.is_empty() {
            self.restore_preserved(ctx);
        }
        if self.cfg.trace {
            let port = ctx.arch.trace.port;
            crate::packet::trace_line(ctx, crate::packet::level::DEBUG, || {
                format!("Processing packet received on port {port}")
            });
        }
    }

    /// The field values preserved from the pass before, written back.
    #[cold]
    #[inline(never)]
    fn restore_preserved(&self, ctx: &mut PacketCtx) {
        let p = &*self.prog;
        for (f, v) in std::mem::take(&mut ctx.arch.preserved) {
            ctx.phv.write_big(p.fields[f as usize].loc, &v);
        }
    }

    /// A packet entering egress: `egress_spec` set to the drop port + 1 when the
    /// program has an egress control (afterwards, `egress_spec` equal to the drop port
    /// means the control dropped it), the informational metadata the program reads
    /// (`egress_port`, `packet_length`, the queueing figures and timestamps, `qid`), and
    /// an ingress clone request forgotten (a recirculation requested in ingress stays:
    /// simple_switch keeps it in the packet's registers and acts on it after egress).
    #[inline(always)]
    pub fn begin_egress(&self, ctx: &mut PacketCtx, now_us: u64) {
        let std = &self.std_meta;
        if self.prog.egress.init.is_some() {
            self.std_set(
                &mut ctx.phv,
                std.egress_spec,
                u128::from(self.cfg.drop_port + 1),
            );
        }
        if std.egress_info {
            let a = &ctx.arch;
            let (port, enq_us, enq_qdepth, deq, qid) =
                (a.port, a.enq_us, a.enq_qdepth, a.deq_qdepth, a.qid);
            let phv = &mut ctx.phv;
            self.std_inform(phv, std.egress_port, u128::from(port));
            self.std_inform(phv, std.packet_length, u128::from(ctx.length_reg));
            self.std_inform(phv, std.enq_timestamp, u128::from(enq_us));
            self.std_inform(phv, std.enq_qdepth, u128::from(enq_qdepth));
            self.std_inform(
                phv,
                std.deq_timedelta,
                u128::from(now_us.saturating_sub(enq_us)),
            );
            self.std_inform(phv, std.deq_qdepth, u128::from(deq));
            self.std_inform(phv, std.egress_global_timestamp, u128::from(now_us));
            self.std_inform(phv, std.qid, u128::from(qid));
        }
        ctx.req.clone = None;
        ctx.deparsed = false;
    }

    /// Whether the egress control dropped the packet (`egress_spec` set to the drop
    /// port; a program without an egress control drops nothing in egress).
    #[inline(always)]
    pub fn dropped_in_egress(&self, ctx: &PacketCtx) -> bool {
        self.prog.egress.init.is_some()
            && self.std_read(&ctx.phv, self.std_meta.egress_spec) as u32 == self.cfg.drop_port
    }

    /// The ingress pass of a batch: [`Engine::begin_ingress`], the parser with
    /// checksum verification, the ingress control. Compiled code also checks whether
    /// every packet is a plain unicast and sets the fast lane's fields
    /// ([`Passed::Unicast`]); then, with `through` (the caller's traffic manager would
    /// hand such packets straight to egress), it runs the egress pass too
    /// ([`Passed::Egress`]: [`Engine::egress_pass`] at `now_us`). The interpreter
    /// leaves all that to the switch ([`Passed::Ingress`]).
    pub fn ingress_pass(
        &self,
        cs: &ControlState,
        ex: &Externs,
        pkts: &mut [Pkt],
        sc: &mut Scratch,
        now_us: u64,
        through: bool,
    ) -> Passed {
        if let Some(n) = self.run_native() {
            return n.ingress_pass(self, cs, ex, pkts, sc, now_us, through);
        }
        for ctx in pkts.iter_mut() {
            self.begin_ingress(ctx, now_us);
        }
        self.parse_interp(cs, pkts, sc);
        self.run_control_interp(cs, ex, ControlBlock::Ingress, pkts, sc, now_us);
        Passed::Ingress
    }

    /// A plain unicast packet after ingress handed to the fast lane of an empty
    /// traffic manager (`egress_spec` = `port`): simple_switch marks it NORMAL, and it
    /// is enqueued now to queue 0 of `port`, which was empty.
    #[inline(always)]
    pub fn unicast(&self, ctx: &mut PacketCtx, port: u32, now_us: u64) {
        ctx.arch.instance_type = instance::NORMAL;
        self.std_inform(&mut ctx.phv, self.std_meta.instance_type, 0);
        ctx.arch.enq_us = now_us;
        ctx.arch.qid = 0;
        ctx.arch.port = port;
        ctx.arch.enq_qdepth = 0;
    }

    /// The egress pass of a batch: [`Engine::begin_egress`], the egress control, then
    /// the deparser for every packet that leaves (not dropped, no egress clone
    /// requested: a clone copies the packet before it is deparsed), marked
    /// [`PacketCtx::deparsed`]; the caller deparses the others it sends.
    pub fn egress_pass(
        &self,
        cs: &ControlState,
        ex: &Externs,
        pkts: &mut [Pkt],
        sc: &mut Scratch,
        now_us: u64,
    ) {
        if let Some(n) = self.run_native() {
            return n.egress_pass(self, cs, ex, pkts, sc, now_us);
        }
        for ctx in pkts.iter_mut() {
            self.begin_egress(ctx, now_us);
        }
        self.run_control_interp(cs, ex, ControlBlock::Egress, pkts, sc, now_us);
        for ctx in pkts.iter_mut() {
            if ctx.req.clone.is_none() && !self.dropped_in_egress(ctx) {
                self.deparse_interp(ctx, sc, cs);
                ctx.deparsed = true;
            }
        }
    }

    /// v1model's `mark_to_drop`: `egress_spec` to the drop port, `mcast_grp` to 0.
    #[inline(always)]
    pub(crate) fn mark_to_drop(&self, phv: &mut Phv) {
        let drop = self.cfg.drop_port as u128;
        self.std_set(phv, self.std_meta.egress_spec, drop);
        self.std_set(phv, self.std_meta.mcast_grp, 0);
    }
}
