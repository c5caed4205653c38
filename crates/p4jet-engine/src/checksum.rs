//! Checksums: verification after parsing and updates before deparsing, through their
//! plans ([`crate::plan::checksum`]) or the general calculation.

use crate::eval::{EvalCtx, resolve_field};
use crate::phv::{Phv, Window64};
use crate::state::ControlState;
use crate::{Engine, PacketCtx, Scratch, hash, mask_of, plan};

impl plan::checksum::Checksums {
    /// Verifies the checksums, setting `checksum_error` when one fails.
    #[inline(always)]
    pub(crate) fn verify(&self, phv: &mut Phv, error: Option<Window64>) {
        let mut bad = false;
        for c in &self.verify {
            if !phv.valid.get(c.header as usize).copied().unwrap_or(false)
                || c.cond.as_ref().is_some_and(|fc| !fc.test(phv))
            {
                continue;
            }
            // the target's header is valid: so is the quad's
            if let (Some(q), Some(t)) = (&c.quad, c.target16)
                && let Some(win) = hash::quad_window(&phv.data, q)
            {
                let have = win[t..]
                    .first_chunk::<2>()
                    .map_or(0, |b| u16::from_le_bytes(*b));
                bad |= hash::quad_sum_le(win, q) != have;
                continue;
            }
            let got = match c.quad.as_ref().and_then(|q| hash::csum16_quad(phv, q)) {
                Some(v) => v,
                None => hash::csum16_planned(phv, &c.pieces),
            };
            bad |= got & c.target.mask != phv.read64(c.target);
        }
        if bad && let Some(e) = error {
            phv.write64(e, 1);
        }
    }

    /// Writes the updated checksums (all of them have a plan).
    #[inline(always)]
    pub(crate) fn update(&self, phv: &mut Phv) {
        for c in &self.update {
            Self::update_one(c, phv);
        }
    }

    /// Writes checksum `c`.
    #[inline(always)]
    pub(crate) fn update_one(c: &plan::checksum::Checksum, phv: &mut Phv) {
        if c.cond.as_ref().is_some_and(|fc| !fc.test(phv)) {
            return;
        }
        let valid = phv.valid.get(c.header as usize).copied().unwrap_or(false);
        if c.only_valid && !valid {
            return;
        }
        if let (Some(q), Some(t), true) = (&c.quad, c.target16, valid)
            && let Some(win) = hash::quad_window_mut(&mut phv.data, q)
        {
            let v = hash::quad_sum_le(win, q);
            if let Some(b) = win[t..].first_chunk_mut::<2>() {
                *b = v.to_le_bytes();
            }
            return;
        }
        let quad_sum = match &c.quad {
            Some(q) if valid => hash::csum16_quad(phv, q),
            _ => None,
        };
        let v = quad_sum.unwrap_or_else(|| hash::csum16_planned(phv, &c.pieces));
        phv.write64(c.target, v);
    }
}

impl Engine {
    #[inline(never)]
    pub(crate) fn verify_checksums(&self, ctx: &mut PacketCtx, sc: &mut Scratch) {
        let p = &*self.prog;
        if let Some(fc) = &self.plan.mixed_checksums
            && !self.cfg.trace
        {
            fc.verify(&mut ctx.phv, self.std_meta.checksum_error);
            return self.verify_general(ctx, sc, &fc.general_verify);
        }
        let mut bad = false;
        for ck in p.checksums.iter().filter(|c| c.verify) {
            bad |= self.verify_one(ctx, ck, sc);
        }
        if bad {
            self.std_set(&mut ctx.phv, self.std_meta.checksum_error, 1);
        }
    }

    /// The verified checksums `which` (indexes in the program) by the general code,
    /// after the planned ones.
    pub(crate) fn verify_general(&self, ctx: &mut PacketCtx, sc: &mut Scratch, which: &[u32]) {
        let p = &*self.prog;
        let mut bad = false;
        for &i in which {
            if let Some(ck) = p.checksums.get(i as usize) {
                bad |= self.verify_one(ctx, ck, sc);
            }
        }
        if bad {
            self.std_set(&mut ctx.phv, self.std_meta.checksum_error, 1);
        }
    }

    /// Whether checksum `ck` is checked and fails.
    pub(crate) fn verify_one(
        &self,
        ctx: &mut PacketCtx,
        ck: &p4jet_ir::ChecksumInfo,
        sc: &mut Scratch,
    ) -> bool {
        let p = &*self.prog;
        let ec = EvalCtx::of_phv(&ctx.phv);
        let Some(fid) = resolve_field(p, &ec, &ck.target) else {
            return false;
        };
        let fi = &p.fields[fid as usize];
        if !ctx.phv.valid[fi.header as usize] {
            return false;
        }
        if let Some(c) = ck.cond
            && !self.test_cond(&ctx.phv, c)
        {
            return false;
        }
        let got = self.calc_value(ctx, ck.calc, sc, None);
        let have = ctx.phv.read_raw(fi.loc);
        if (got as u128) & mask_of(fi.loc.width) != have {
            let name = ck.name.clone();
            self.trace(ctx, || format!("checksum {name} failed"));
            return true;
        }
        false
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
}

impl Engine {
    /// The deparser's checksum updates (out of line: most programs have none or one).
    #[inline(never)]
    pub(crate) fn update_checksums(
        &self,
        ctx: &mut PacketCtx,
        sc: &mut Scratch,
        cs: &ControlState,
    ) {
        let p = &*self.prog;
        if let Some(fc) = &self.plan.mixed_checksums {
            return match &fc.update_order {
                Some(order) => self.update_mixed(fc, order, ctx, sc, cs),
                // every updated checksum has a plan (some verified one has not)
                None => fc.update(&mut ctx.phv),
            };
        }
        for ck in p.checksums.iter().filter(|c| c.update) {
            self.update_one(ctx, ck, sc, cs);
        }
    }

    /// The updates of a program whose checksums are partly planned, in program order.
    pub(crate) fn update_mixed(
        &self,
        fc: &plan::checksum::Checksums,
        order: &[Result<u32, u32>],
        ctx: &mut PacketCtx,
        sc: &mut Scratch,
        cs: &ControlState,
    ) {
        let p = &*self.prog;
        for step in order {
            match *step {
                Ok(i) => {
                    if let Some(c) = fc.update.get(i as usize) {
                        plan::checksum::Checksums::update_one(c, &mut ctx.phv);
                    }
                }
                Err(i) => {
                    if let Some(ck) = p.checksums.get(i as usize) {
                        self.update_one(ctx, ck, sc, cs);
                    }
                }
            }
        }
    }

    /// Updates checksum `ck` by the general code.
    pub(crate) fn update_one(
        &self,
        ctx: &mut PacketCtx,
        ck: &p4jet_ir::ChecksumInfo,
        sc: &mut Scratch,
        cs: &ControlState,
    ) {
        let p = &*self.prog;
        if let Some(c) = ck.cond
            && !self.test_cond(&ctx.phv, c)
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
