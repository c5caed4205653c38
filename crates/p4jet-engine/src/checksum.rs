//! Checksums: verification after parsing and updates before deparsing, through their
//! plans ([`crate::plan::checksum`]) or the general calculation.

use crate::eval::{EvalCtx, resolve_field};
use crate::packet::{level, trace_line};
use crate::phv::Phv;
use crate::plan::checksum::{Checksum, CsumOp};
use crate::plan::control::CondTest;
use crate::state::ControlState;
use crate::{Engine, PacketCtx, Scratch, hash, mask_of};

impl Checksum {
    /// Whether the checksum is checked and fails.
    #[inline(always)]
    pub(crate) fn fails(&self, phv: &Phv) -> bool {
        if !phv
            .valid
            .get(self.header as usize)
            .copied()
            .unwrap_or(false)
            || self.cond.as_ref().is_some_and(|fc| !fc.test(phv))
        {
            return false;
        }
        // the target's header is valid: so is the quad's
        if let (Some(q), Some(t)) = (&self.quad, self.target16)
            && let Some(win) = hash::quad_window(&phv.data, q)
        {
            let have = win[t..]
                .first_chunk::<2>()
                .map_or(0, |b| u16::from_le_bytes(*b));
            return hash::quad_sum_le(win, q) != have;
        }
        let got = match self.quad.as_ref().and_then(|q| hash::csum16_quad(phv, q)) {
            Some(v) => v,
            None => hash::csum16_planned(phv, &self.pieces),
        };
        got & self.target.mask != phv.read64(self.target)
    }

    /// Writes the checksum.
    #[inline(always)]
    pub(crate) fn update(&self, phv: &mut Phv) {
        if self.cond.as_ref().is_some_and(|fc| !fc.test(phv)) {
            return;
        }
        let valid = phv
            .valid
            .get(self.header as usize)
            .copied()
            .unwrap_or(false);
        if self.only_valid && !valid {
            return;
        }
        if let (Some(q), Some(t), true) = (&self.quad, self.target16, valid)
            && let Some(win) = hash::quad_window_mut(&mut phv.data, q)
        {
            let v = hash::quad_sum_le(win, q);
            if let Some(b) = win[t..].first_chunk_mut::<2>() {
                *b = v.to_le_bytes();
            }
            return;
        }
        let quad_sum = match &self.quad {
            Some(q) if valid => hash::csum16_quad(phv, q),
            _ => None,
        };
        let v = quad_sum.unwrap_or_else(|| hash::csum16_planned(phv, &self.pieces));
        phv.write64(self.target, v);
    }
}

impl Engine {
    /// Verifies the checksums when every one is planned (inlined into the parser):
    /// `checksum_error` set when one fails.
    #[inline(always)]
    pub(crate) fn verify_planned(&self, phv: &mut Phv) {
        let mut bad = false;
        for op in &self.plan.checksums.verify {
            if let CsumOp::Planned(c) = op {
                bad |= c.fails(phv);
            }
        }
        if bad && let Some(e) = self.std_meta.checksum_error {
            phv.write64(e, 1);
        }
    }

    /// Verifies the checksums, planned or not (every one by the general code when
    /// tracing, for its trace lines).
    #[inline(never)]
    pub(crate) fn verify_checksums(&self, ctx: &mut PacketCtx, sc: &mut Scratch) {
        let p = &*self.prog;
        let mut bad = false;
        if self.cfg.trace {
            for (i, ck) in p.checksums.iter().enumerate() {
                if ck.verify {
                    let cond = ck.cond.map(CondTest::General);
                    bad |= self.verify_one(ctx, i as u32, cond.as_ref(), sc);
                }
            }
        } else {
            for op in &self.plan.checksums.verify {
                bad |= match op {
                    CsumOp::Planned(c) => c.fails(&ctx.phv),
                    CsumOp::General { index, cond } => {
                        self.verify_one(ctx, *index, cond.as_ref(), sc)
                    }
                };
            }
        }
        if bad {
            self.std_set(&mut ctx.phv, self.std_meta.checksum_error, 1);
        }
    }

    /// Whether checksum `index` of the program, under condition `cond`, is checked and
    /// fails (the general code).
    pub(crate) fn verify_one(
        &self,
        ctx: &mut PacketCtx,
        index: u32,
        cond: Option<&CondTest>,
        sc: &mut Scratch,
    ) -> bool {
        let p = &*self.prog;
        let Some(ck) = p.checksums.get(index as usize) else {
            return false;
        };
        let ec = EvalCtx::of_phv(&ctx.phv);
        let Some(fid) = resolve_field(p, &ec, &ck.target) else {
            return false;
        };
        let fi = &p.fields[fid as usize];
        if !ctx.phv.valid[fi.header as usize] {
            if self.cfg.trace {
                trace_line(ctx, level::TRACE, || {
                    format!(
                        "Skipping checksum '{}' verification because target field invalid",
                        ck.name
                    )
                });
            }
            return false;
        }
        if let Some(c) = cond
            && !self.test(&ctx.phv, c)
        {
            if self.cfg.trace {
                trace_line(ctx, level::TRACE, || {
                    format!(
                        "Skipping checksum '{}' verification because condition not met",
                        ck.name
                    )
                });
            }
            return false;
        }
        let got = self.calc_value(ctx, ck.calc, sc, None);
        let have = ctx.phv.read_raw(fi.loc);
        let got = (got as u128) & mask_of(fi.loc.width);
        if self.cfg.trace {
            let name = &ck.name;
            let ok = if got == have { "passed" } else { "failed" };
            trace_line(ctx, level::DEBUG, || {
                format!("Checksum '{name}': computed {got:#x} - actual {have:#x}")
            });
            trace_line(ctx, level::DEBUG, || {
                format!("Verified checksum '{name}': {ok}")
            });
            if got != have {
                trace_line(ctx, level::ERROR, || {
                    format!("Checksum '{name}' is not correct")
                });
            }
        }
        got != have
    }

    /// Runs a calculation over the packet's current headers and payload.
    pub(crate) fn calc_value(
        &self,
        ctx: &PacketCtx,
        calc: u32,
        sc: &mut Scratch,
        cs: Option<&ControlState>,
    ) -> u64 {
        let p = &*self.prog;
        let plan = self.plan.calcs.get(calc as usize).and_then(Option::as_ref);
        if let Some(hash::CalcPlan {
            csum_pieces: Some(pieces),
            ..
        }) = plan
        {
            return hash::csum16_planned(&ctx.phv, pieces);
        }
        let c = &p.calculations[calc as usize];
        let payload = &ctx.pkt.data()[ctx.payload_off.min(ctx.pkt.len())..];
        if let Some(plan) = plan.filter(|pl| pl.csum_bytes)
            && let Some(v) = hash::csum16_bytes(p, &ctx.phv, &plan.items, payload)
        {
            return v;
        }
        match plan {
            Some(plan) => hash::build_planned(p, &ctx.phv, &plan.items, payload, &mut sc.calc),
            None => {
                let ec = EvalCtx::of_phv(&ctx.phv);
                hash::build_input(p, &ec, c, payload, &mut sc.calc)
            }
        }
        let custom = c
            .custom_slot
            .and_then(|s| cs.and_then(|cs| cs.crc.get(s as usize).copied().flatten()));
        hash::run(c.algo, &sc.calc, custom.as_ref())
    }

    /// Updates the checksums when every one is planned (inlined into the deparser).
    #[inline(always)]
    pub(crate) fn update_planned(&self, phv: &mut Phv) {
        for op in &self.plan.checksums.update {
            if let CsumOp::Planned(c) = op {
                c.update(phv);
            }
        }
    }

    /// The deparser's checksum updates, planned or not, in program order (out of line:
    /// most programs have none or only planned ones).
    #[inline(never)]
    pub(crate) fn update_checksums(
        &self,
        ctx: &mut PacketCtx,
        sc: &mut Scratch,
        cs: &ControlState,
    ) {
        for op in &self.plan.checksums.update {
            match op {
                CsumOp::Planned(c) => c.update(&mut ctx.phv),
                CsumOp::General { index, cond } => {
                    self.update_one(ctx, *index, cond.as_ref(), sc, cs)
                }
            }
        }
    }

    /// Updates checksum `index` of the program, under condition `cond`, by the general
    /// code.
    pub(crate) fn update_one(
        &self,
        ctx: &mut PacketCtx,
        index: u32,
        cond: Option<&CondTest>,
        sc: &mut Scratch,
        cs: &ControlState,
    ) {
        let p = &*self.prog;
        let Some(ck) = p.checksums.get(index as usize) else {
            return;
        };
        if let Some(c) = cond
            && !self.test(&ctx.phv, c)
        {
            return;
        }
        let ec = EvalCtx::of_phv(&ctx.phv);
        let Some(fid) = resolve_field(p, &ec, &ck.target) else {
            return;
        };
        let v = self.calc_value(ctx, ck.calc, sc, Some(cs));
        self.write_bits(&mut ctx.phv, fid, v as u128);
    }
}
