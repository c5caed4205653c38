//! The v1model architecture's per-packet work, specialised per program: the PHV reset
//! and the arrival metadata as a packet enters ingress (`Engine::begin_ingress`), and
//! the egress metadata as it enters egress (`Engine::begin_egress`). Only the fields
//! the program reads are written; the values come from the packet context's
//! architecture fields (`abi::ctx`), the lane and the time in `Env`.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};

use super::{Gen, mem};
use crate::abi::{ctx, off};

impl Gen<'_, '_> {
    /// A packet entering ingress: its PHV zeroed and its validity set as on arrival
    /// (metadata valid), then `ingress_port`, `packet_length`, `instance_type` and
    /// `ingress_global_timestamp` when the program reads them. (The rest of the
    /// context's reset is the caller's.)
    pub(crate) fn begin_ingress(&mut self, lane: Value, phv: Value, valid: Value, len: Value) {
        let prog = &*self.e.prog;
        // every data byte, in 16-byte stores: the last one may reach into the padding
        // (`PHV_PAD` bytes, zero, and never written otherwise: zeroing it changes
        // nothing)
        let bytes = prog.phv_bytes.div_ceil(16) * 16;
        debug_assert!(bytes as usize <= prog.phv_bytes as usize + p4jet_engine::phv::PHV_PAD);
        let zero = self.k(0);
        let zero2 = self.b.ins().splat(types::I64X2, zero);
        let mut o = 0;
        while o < bytes {
            self.b.ins().store(mem(), zero2, phv, o as i32);
            o += 16;
        }
        // validity: metadata headers valid, the others not, in stores of 8, 4, 2, 1
        let init = &prog.valid_init;
        let mut at = 0usize;
        for size in [8usize, 4, 2, 1] {
            while at + size <= init.len() {
                let mut w = 0u64;
                for (k, v) in init[at..at + size].iter().enumerate() {
                    w |= u64::from(*v) << (8 * k);
                }
                let t = match size {
                    8 => types::I64,
                    4 => types::I32,
                    2 => types::I16,
                    _ => types::I8,
                };
                let c = self.b.ins().iconst(t, w as i64);
                self.b.ins().store(mem(), c, valid, at as i32);
                at += size;
            }
        }
        let std = self.e.std_meta;
        if std.ingress_info {
            let cx = self.lane_ptr(lane, off::LANE_CTX);
            if let Some(w) = std.ingress_port {
                let v = self.b.ins().uload32(mem(), cx, ctx::PORT);
                self.write64(phv, w, v);
            }
            if let Some(w) = std.packet_length {
                self.write64(phv, w, len);
            }
            if let Some(w) = std.instance_type {
                let v = self.b.ins().uload32(mem(), cx, ctx::INSTANCE_TYPE);
                self.write64(phv, w, v);
            }
            if let Some(w) = std.ingress_global_timestamp {
                let now = self.b.ins().load(types::I64, mem(), self.env, off::ENV_NOW);
                self.write64(phv, w, now);
            }
        }
    }

    /// A packet entering egress: `egress_spec` to the drop port + 1 when the program
    /// has an egress control, and the informational metadata the program reads.
    pub(crate) fn begin_egress(&mut self, lane: Value, phv: Value) {
        let std = self.e.std_meta;
        if self.e.prog.egress.init.is_some()
            && let Some(w) = std.egress_spec
        {
            let v = self.k(u64::from(self.e.cfg.drop_port) + 1);
            self.write64(phv, w, v);
        }
        if !std.egress_info {
            return;
        }
        let cx = self.lane_ptr(lane, off::LANE_CTX);
        let now = self.b.ins().load(types::I64, mem(), self.env, off::ENV_NOW);
        let enq = self.b.ins().load(types::I64, mem(), cx, ctx::ENQ_US);
        let fields = [
            (std.egress_port, Some(ctx::PORT)),
            (std.enq_qdepth, Some(ctx::ENQ_QDEPTH)),
            (std.deq_qdepth, Some(ctx::DEQ_QDEPTH)),
            (std.qid, Some(ctx::QID)),
        ];
        for (w, at) in fields {
            if let (Some(w), Some(at)) = (w, at) {
                let v = self.b.ins().uload32(mem(), cx, at);
                self.write64(phv, w, v);
            }
        }
        if let Some(w) = std.packet_length {
            let v = self.b.ins().load(types::I64, mem(), cx, ctx::LENGTH_REG);
            self.write64(phv, w, v);
        }
        if let Some(w) = std.enq_timestamp {
            self.write64(phv, w, enq);
        }
        if let Some(w) = std.deq_timedelta {
            // saturating: now - enq, or 0 when the clock moved back
            let d = self.b.ins().isub(now, enq);
            let back = self.b.ins().icmp(IntCC::UnsignedLessThan, now, enq);
            let z = self.k(0);
            let d = self.b.ins().select(back, z, d);
            self.write64(phv, w, d);
        }
        if let Some(w) = std.egress_global_timestamp {
            self.write64(phv, w, now);
        }
    }

    /// `body(self, lane)` for every lane of `lanes[..n]`.
    pub(crate) fn each_lane(
        &mut self,
        lanes: Value,
        n: Value,
        mut body: impl FnMut(&mut Self, Value),
    ) {
        let i = self.var(0);
        let head = self.b.create_block();
        let work = self.b.create_block();
        let done = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let iv = self.b.use_var(i);
        let more = self.b.ins().icmp(IntCC::UnsignedLessThan, iv, n);
        self.b.ins().brif(more, work, &[], done, &[]);
        self.b.switch_to_block(work);
        let iv = self.b.use_var(i);
        let lane = self.lane(lanes, iv);
        body(self, lane);
        let iv = self.b.use_var(i);
        let iv = self.b.ins().iadd_imm_s(iv, 1);
        self.b.def_var(i, iv);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(done);
    }
}

/// Emits the unicast check after ingress as a function of its own: `(env, lanes, n)
/// -> others` (for an ingress control that does not do it itself,
/// `codegen::control::fuses_unicast`).
pub(crate) fn emit_unicast(g: &mut Gen, lanes: Value, n: Value) {
    g.each_lane(lanes, n, |g, lane| {
        let phv = g.lane_ptr(lane, off::LANE_PHV);
        g.unicast(lane, phv);
    });
    let o = g.b.ins().load(types::I64, mem(), g.env, off::ENV_OTHERS);
    g.b.ins().return_(&[o]);
}

impl Gen<'_, '_> {
    /// The unicast check of a packet after ingress: a packet with no request pending,
    /// `mcast_grp` and `priority` 0 and `egress_spec` not the drop port gets the fast
    /// lane's fields (`Engine::unicast`: NORMAL, enqueued now on queue 0 of
    /// `egress_spec`); `Env::others` counts the other packets. (The switch writes the
    /// same fields when it enqueues such a packet itself.)
    pub(crate) fn unicast(&mut self, lane: Value, phv: Value) {
        let g = self;
        let std = g.e.std_meta;
        let drop_port = g.e.cfg.drop_port;
        let other = g.b.create_block();
        let next = g.b.create_block();
        let cx = g.lane_ptr(lane, off::LANE_CTX);
        let mut odd = g.b.ins().uload8(types::I64, mem(), cx, ctx::PENDING);
        for w in [std.mcast_grp, std.priority].into_iter().flatten() {
            if let Some(v) = g.read64(phv, w) {
                odd = g.b.ins().bor(odd, v);
            }
        }
        // (without an egress_spec field every packet is left to the switch)
        let (spec, dropped) = match std.egress_spec.and_then(|w| g.read64(phv, w)) {
            Some(spec) => {
                let d =
                    g.b.ins()
                        .icmp_imm_s(IntCC::Equal, spec, i64::from(drop_port));
                (spec, g.b.ins().uextend(types::I64, d))
            }
            None => (g.k(0), g.k(1)),
        };
        odd = g.b.ins().bor(odd, dropped);
        let plain = g.b.create_block();
        g.b.ins().brif(odd, other, &[], plain, &[]);
        g.b.switch_to_block(plain);
        let z = g.k(0);
        let z32 = g.b.ins().ireduce(types::I32, z);
        g.b.ins().store(mem(), z32, cx, ctx::INSTANCE_TYPE);
        if let Some(w) = std.instance_type {
            g.write64(phv, w, z);
        }
        let now = g.b.ins().load(types::I64, mem(), g.env, off::ENV_NOW);
        g.b.ins().store(mem(), now, cx, ctx::ENQ_US);
        g.b.ins().store(mem(), z32, cx, ctx::QID);
        let spec32 = g.b.ins().ireduce(types::I32, spec);
        g.b.ins().store(mem(), spec32, cx, ctx::PORT);
        g.b.ins().store(mem(), z32, cx, ctx::ENQ_QDEPTH);
        g.egress_lane(lane, cx);
        g.b.ins().jump(next, &[]);
        g.b.switch_to_block(other);
        let o = g.b.ins().load(types::I64, mem(), g.env, off::ENV_OTHERS);
        let o = g.b.ins().iadd_imm_s(o, 1);
        g.b.ins().store(mem(), o, g.env, off::ENV_OTHERS);
        g.b.ins().jump(next, &[]);
        g.b.switch_to_block(next);
    }
}

impl Gen<'_, '_> {
    /// Turns a plain unicast packet's lane from the parser's form into the egress
    /// pass's (`pkt`: the buffer's first byte, `len`: the payload's offset in it, `out`
    /// 0) and resets what the egress pass starts from (`exit`, `deparsed`; a packet
    /// without a pending request has no clone request), so that the egress functions
    /// can run on the same lanes ([`p4jet_engine::Passed::Egress`]).
    fn egress_lane(&mut self, lane: Value, cx: Value) {
        let g = self;
        let start = g.b.ins().load(types::I64, mem(), cx, ctx::PKT_START);
        // (plain loads: these two fields are written just below, see `abi::Lane`)
        let frame = g.b.ins().load(types::I64, mem(), lane, off::LANE_PKT);
        let buf = g.b.ins().isub(frame, start);
        g.b.ins().store(mem(), buf, lane, off::LANE_PKT);
        let len = g.b.ins().load(types::I64, mem(), lane, off::LANE_LEN);
        let po = g.b.ins().load(types::I64, mem(), cx, ctx::PAYLOAD_OFF);
        let po = g.b.ins().umin(po, len);
        let payload = g.b.ins().iadd(start, po);
        g.b.ins().store(mem(), payload, lane, off::LANE_LEN);
        let z = g.k(0);
        g.b.ins().store(mem(), z, lane, off::LANE_OUT);
        let z8 = g.b.ins().ireduce(types::I8, z);
        g.b.ins().store(mem(), z8, cx, ctx::EXIT);
        g.b.ins().store(mem(), z8, cx, ctx::DEPARSED);
    }
}

/// Whether [`Gen::begin_egress`] writes anything for this program (else no egress
/// arrival function is compiled).
pub(crate) fn begin_egress_writes(e: &p4jet_engine::Engine) -> bool {
    (e.prog.egress.init.is_some() && e.std_meta.egress_spec.is_some()) || e.std_meta.egress_info
}

/// Emits the egress arrival function: `(env, lanes, n)`.
pub(crate) fn emit_begin_egress(g: &mut Gen, lanes: Value, n: Value) {
    g.each_lane(lanes, n, |g, lane| {
        let phv = g.lane_ptr(lane, off::LANE_PHV);
        g.begin_egress(lane, phv);
    });
    let z = g.k(0);
    g.b.ins().return_(&[z]);
}
