//! The deparser as native code, for one packet: the emitted length as a branch-free sum
//! over the headers, the checksum updates, then the valid headers copied in front of
//! the payload (one copy when exactly the first headers in deparser order are valid
//! and lie back to back in the PHV).
//! Returns the frame's new start in its buffer, or [`GROW`] when the headers outgrow
//! the headroom (then nothing was written and the interpreter deparses the packet).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{BlockArg, InstBuilder, Value, types};
use p4jet_engine::plan::checksum::CsumOp;

use super::checksum::{csum_inline, test_compiles};
use super::hash::csum_update;
use super::{Gen, H};
use crate::abi::{FORCE, GROW, ctx, off};

/// Emits the deparser: `(env, lanes, n) -> grown`. In an egress pass a packet the
/// egress control dropped, or with a request pending (an egress clone is copied before
/// deparsing), is left alone (a lane marked [`FORCE`] is deparsed in any case); the others are deparsed in place (the context's frame
/// start, payload offset and `deparsed` written) unless their headers outgrow the
/// headroom: their lanes get [`GROW`], counted in the result.
pub(crate) fn emit_pass(g: &mut Gen, lanes: Value, n: Value) {
    let egress = g.e.prog.egress.init.is_some();
    let spec = g.e.std_meta.egress_spec;
    let drop_port = g.e.cfg.drop_port;
    let grown = g.var(0);
    g.each_lane(lanes, n, |g, lane| {
        let next = g.b.create_block();
        let cx = g.lane_ptr(lane, off::LANE_CTX);
        let out =
            g.b.ins()
                .load(types::I64, super::mem(), lane, off::LANE_OUT);
        let forced = g.b.ins().icmp_imm_s(IntCC::Equal, out, FORCE as i64);
        let work = g.b.create_block();
        let check = g.b.create_block();
        g.b.ins().brif(forced, work, &[], check, &[]);
        g.b.switch_to_block(check);
        let pending = g.b.ins().uload8(types::I64, super::mem(), cx, ctx::PENDING);
        let go = g.b.create_block();
        g.b.ins().brif(pending, next, &[], go, &[]);
        g.b.switch_to_block(go);
        if egress && let Some(w) = spec {
            let phv = g.lane_ptr(lane, off::LANE_PHV);
            if let Some(v) = g.read64(phv, w) {
                let dropped = g.b.ins().icmp_imm_s(IntCC::Equal, v, i64::from(drop_port));
                let keep = g.b.create_block();
                g.b.ins().brif(dropped, next, &[], keep, &[]);
                g.b.switch_to_block(keep);
            }
        }
        g.b.ins().jump(work, &[]);
        g.b.switch_to_block(work);
        let done = g.b.create_block();
        g.b.append_block_param(done, types::I64);
        deparse_one(g, lane, done);
        g.b.switch_to_block(done);
        let r = g.b.block_params(done)[0];
        let grow_b = g.b.create_block();
        let ok = g.b.create_block();
        let is_grow = g.b.ins().icmp_imm_s(IntCC::Equal, r, GROW as i64);
        g.b.ins().brif(is_grow, grow_b, &[], ok, &[]);
        g.b.switch_to_block(grow_b);
        g.b.ins().store(super::mem(), r, lane, off::LANE_OUT);
        let gv = g.b.use_var(grown);
        let gv = g.b.ins().iadd_imm_s(gv, 1);
        g.b.def_var(grown, gv);
        g.b.ins().jump(next, &[]);
        g.b.switch_to_block(ok);
        g.b.ins().store(super::mem(), r, lane, off::LANE_OUT);
        g.b.ins().store(super::mem(), r, cx, ctx::PKT_START);
        let payload = g.lane_ptr(lane, off::LANE_LEN);
        let po = g.b.ins().isub(payload, r);
        g.b.ins().store(super::mem(), po, cx, ctx::PAYLOAD_OFF);
        let one = g.b.ins().iconst(types::I8, 1);
        g.b.ins().store(super::mem(), one, cx, ctx::DEPARSED);
        g.b.ins().jump(next, &[]);
        g.b.switch_to_block(next);
    });
    let gv = g.b.use_var(grown);
    g.b.ins().return_(&[gv]);
}

/// The deparser of one lane, jumping to `done` with the new start or [`GROW`].
fn deparse_one(g: &mut Gen, lane: Value, done: cranelift_codegen::ir::Block) {
    let plan = g.e.plan();
    let d = &plan.deparser;
    let phv = g.lane_ptr(lane, off::LANE_PHV);
    let valid = g.lane_ptr(lane, off::LANE_VALID);
    let buf = g.lane_ptr(lane, off::LANE_PKT);
    let payload = g.lane_ptr(lane, off::LANE_LEN);
    let fixed = d.fixed.as_deref().unwrap_or(&[]);
    let mut emitted = g.k(0);
    // the sum after the first k headers, for the runs of k headers
    let mut partial = vec![];
    for &(h, n) in fixed {
        let v = g.valid(valid, h);
        let add = g.b.ins().imul_imm_s(v, i64::from(n));
        emitted = g.b.ins().iadd(emitted, add);
        partial.push(emitted);
    }
    let grow = g.b.create_block();
    let fits = g.b.create_block();
    let over = g.b.ins().icmp(IntCC::UnsignedGreaterThan, emitted, payload);
    g.b.ins().brif(over, grow, &[], fits, &[]);
    g.b.switch_to_block(grow);
    let gr = g.k(GROW);
    g.b.ins().jump(done, &[BlockArg::Value(gr)]);
    g.b.switch_to_block(fits);
    let ck = &plan.checksums;
    if d.has_update && !ck.update.is_empty() {
        // planned checksums inline, the others one call each when their condition
        // holds, in program order
        let inline = ck.update.iter().all(|o| match o {
            CsumOp::Planned(c) => csum_inline(c),
            CsumOp::General { cond, .. } => cond.as_ref().is_none_or(test_compiles),
        });
        if inline {
            for op in &ck.update {
                match op {
                    CsumOp::Planned(c) => g.csum_update(phv, valid, lane, c),
                    CsumOp::General { index, cond } => {
                        let px = super::action::Px { lane, phv, valid };
                        let go = match cond {
                            Some(t) => g.cond_test(px, t),
                            None => g.k(1),
                        };
                        let run = g.b.create_block();
                        let next = g.b.create_block();
                        g.b.ins().brif(go, run, &[], next, &[]);
                        g.b.switch_to_block(run);
                        let fixed =
                            g.e.prog
                                .checksums
                                .get(*index as usize)
                                .and_then(|ck| csum_update(&g.e.prog, ck));
                        if let Some(c) = fixed {
                            // compiled when every header of its input is valid
                            let ok = g.all_valid(valid, &c.input.headers);
                            let fast = g.b.create_block();
                            let slow = g.b.create_block();
                            g.b.ins().brif(ok, fast, &[], slow, &[]);
                            g.b.switch_to_block(fast);
                            g.csum_update_fixed(phv, lane, &c);
                            g.b.ins().jump(next, &[]);
                            g.b.switch_to_block(slow);
                        }
                        let env = g.env;
                        let ik = g.k32(*index);
                        g.call(H::UpdateOne, &[env, lane, ik]);
                        g.b.ins().jump(next, &[]);
                        g.b.switch_to_block(next);
                    }
                }
            }
        } else {
            let env = g.env;
            g.call(H::Update, &[env, lane]);
        }
    }
    // the checksum fields just written: the copies below read them with loads of
    // exactly their bytes (a wider load over a recent narrower store waits for the
    // store to reach the cache instead of taking its value from the store buffer)
    let updated = if d.has_update { &ck.update[..] } else { &[] };
    let mut cuts: Vec<(u32, u32)> = updated
        .iter()
        .filter_map(|op| {
            let loc = match op {
                CsumOp::Planned(c) => c.target.loc,
                CsumOp::General { index, .. } => {
                    let ck = g.e.prog.checksums.get(*index as usize)?;
                    csum_update(&g.e.prog, ck)?.target
                }
            };
            Some((loc.byte, u32::from(loc.nbytes)))
        })
        .collect();
    cuts.sort_unstable();
    let at = g.b.ins().isub(payload, emitted);
    let dst = g.b.ins().iadd(buf, at);
    // a run of headers back to back in the PHV: one copy when exactly they are valid
    // (the valid headers add up to its length, and so do its own)
    for r in d.runs.iter() {
        let same =
            g.b.ins()
                .icmp_imm_s(IntCC::Equal, emitted, i64::from(r.len));
        let maybe = g.b.create_block();
        let one = g.b.create_block();
        let other = g.b.create_block();
        g.b.ins().brif(same, maybe, &[], other, &[]);
        g.b.switch_to_block(maybe);
        // the first k add up to the run's length too: each of them with bytes is
        // valid (a header without bytes copies nothing either way)
        match partial.get(r.k as usize - 1) {
            _ if r.is_all(d) => {
                g.b.ins().jump(one, &[]);
            }
            Some(&sum) => {
                let ok = g.b.ins().icmp_imm_s(IntCC::Equal, sum, i64::from(r.len));
                g.b.ins().brif(ok, one, &[], other, &[]);
            }
            None => {
                g.b.ins().jump(other, &[]);
            }
        }
        g.b.switch_to_block(one);
        copy_cut(g, dst, phv, r.off, r.len, &cuts);
        g.b.ins().jump(done, &[BlockArg::Value(at)]);
        g.b.switch_to_block(other);
    }
    let pos = g.b.declare_var(cranelift_codegen::ir::types::I64);
    g.b.def_var(pos, dst);
    for &(h, hoff, len) in &d.headers {
        let Some(len) = len else { continue };
        let v = g.valid(valid, h);
        let put = g.b.create_block();
        let next = g.b.create_block();
        g.b.ins().brif(v, put, &[], next, &[]);
        g.b.switch_to_block(put);
        let p = g.b.use_var(pos);
        copy_cut(g, p, phv, hoff, len, &cuts);
        let p = g.b.ins().iadd_imm_s(p, i64::from(len));
        g.b.def_var(pos, p);
        g.b.ins().jump(next, &[]);
        g.b.switch_to_block(next);
    }
    g.b.ins().jump(done, &[BlockArg::Value(at)]);
}

/// `g.copy(dst, 0, phv, off, len)` in pieces that start and end at the byte ranges of
/// `cuts` (sorted, `(byte, length)`) inside it: each such range is copied by a load of
/// exactly its bytes.
fn copy_cut(g: &mut Gen, dst: Value, phv: Value, off: u32, len: u32, cuts: &[(u32, u32)]) {
    let end = off + len;
    let mut at = off;
    for &(c, n) in cuts {
        if c < at || c + n > end || n == 0 {
            // (outside this copy, or overlapping a piece already taken)
            continue;
        }
        if c > at {
            g.copy(dst, (at - off) as i32, phv, at as i32, c - at);
        }
        g.copy(dst, (c - off) as i32, phv, c as i32, n);
        at = c + n;
    }
    if at < end {
        g.copy(dst, (at - off) as i32, phv, at as i32, end - at);
    }
}
