//! The deparser: checksum updates, then the valid headers written in front of the
//! payload (one copy when exactly the first headers in deparser order are valid and lie
//! back to back in the PHV).

use crate::state::ControlState;
use crate::{Engine, HEADROOM, PacketCtx, Scratch, header_bytes};

impl Engine {
    // ------------------------------------------------------------------ deparser

    /// Updates checksums and writes the valid headers in front of the payload.
    /// Inlined into the egress loop; the rare cases (checksum updates, too little
    /// headroom) are out of line.
    #[inline(always)]
    pub fn deparse(&self, ctx: &mut PacketCtx, sc: &mut Scratch, cs: &ControlState) {
        if let Some(n) = self.run_native() {
            return n.deparse(self, ctx, sc, cs);
        }
        self.deparse_interp(ctx, sc, cs)
    }

    /// [`Engine::deparse`] by the interpreter (also native code's way out when the
    /// headers outgrow the headroom).
    #[inline(always)]
    pub fn deparse_interp(&self, ctx: &mut PacketCtx, sc: &mut Scratch, cs: &ControlState) {
        let p = &*self.prog;
        if self.cfg.trace {
            self.trace_deparse(ctx);
        }
        if self.plan.deparser.has_update {
            if self.plan.checksums.update_planned {
                self.update_planned(&mut ctx.phv);
            } else {
                self.update_checksums(ctx, sc, cs);
            }
        }
        let mut emitted = 0usize;
        match &self.plan.deparser.fixed {
            Some(fixed) => {
                for &(h, n) in fixed.iter() {
                    let valid = ctx.phv.valid.get(h as usize).copied().unwrap_or(false);
                    emitted += usize::from(valid) * n as usize;
                }
            }
            None => {
                for &(h, _, fixed) in &self.plan.deparser.headers {
                    if ctx.phv.valid[h as usize] {
                        emitted += fixed.unwrap_or_else(|| header_bytes(p, &ctx.phv, h)) as usize;
                    }
                }
            }
        }
        let pk = &ctx.pkt;
        let payload_start = pk.start + ctx.payload_off.min(pk.end - pk.start);
        if emitted > payload_start {
            return self.deparse_grow(ctx, payload_start, emitted);
        }
        self.emit(ctx, payload_start, emitted)
    }

    /// [`Engine::deparse`] when the headers to emit outgrow the headroom: the payload
    /// moves back first.
    #[cold]
    #[inline(never)]
    pub(crate) fn deparse_grow(&self, ctx: &mut PacketCtx, payload_start: usize, emitted: usize) {
        let pk = &mut ctx.pkt;
        let grow = emitted - payload_start + HEADROOM;
        let plen = pk.end - payload_start;
        pk.buf.grow_to(pk.end + grow);
        pk.buf
            .copy_within(payload_start..payload_start + plen, payload_start + grow);
        pk.end += grow;
        self.emit(ctx, payload_start + grow, emitted)
    }
}

impl Engine {
    #[inline(always)]
    pub(crate) fn emit(&self, ctx: &mut PacketCtx, payload_start: usize, emitted: usize) {
        let p = &*self.prog;
        let mut at = payload_start - emitted;
        ctx.pkt.start = at;
        let d = &self.plan.deparser;
        // a run of headers back to back in the PHV is one copy when exactly they are
        // valid: all of them, and the valid headers add up to its length (the others
        // add nothing)
        let run = d.runs.iter().find(|r| {
            r.len as usize == emitted
                && (r.is_all(d)
                    || d.headers[..r.k as usize]
                        .iter()
                        .all(|&(h, ..)| ctx.phv.valid[h as usize]))
        });
        match run {
            Some(r) => {
                let off = r.off as usize;
                crate::copy::copy_small(
                    &mut ctx.pkt.buf[at..at + emitted],
                    &ctx.phv.data[off..off + emitted],
                );
            }
            None => {
                for &(h, off, fixed) in &d.headers {
                    if ctx.phv.valid[h as usize] {
                        let n = fixed.unwrap_or_else(|| header_bytes(p, &ctx.phv, h)) as usize;
                        let off = off as usize;
                        crate::copy::copy_small(
                            &mut ctx.pkt.buf[at..at + n],
                            &ctx.phv.data[off..off + n],
                        );
                        at += n;
                    }
                }
            }
        }
        ctx.payload_off = emitted;
    }
}
