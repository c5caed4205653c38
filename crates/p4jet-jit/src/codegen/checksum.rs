//! Checksums and conditions: an internet checksum summed from PHV byte runs (as
//! `hash::csum16_planned`), checksum verification and update, and the planned
//! condition tests (validity, a field in a range, a comparison).

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};
use p4jet_engine::plan::checksum::Checksum;
use p4jet_engine::plan::cond::{Cond, CondKind, CondTree};
use p4jet_engine::plan::control::CondTest;
use p4jet_ir::expr::BinOp;

use super::{Gen, H, mask64, mem};

/// Whether planned condition `c` compiles without the interpreter (every kind but a
/// comparison of a field wider than 64 bits).
pub(crate) fn cond_inline(c: &Cond) -> bool {
    match c.kind {
        CondKind::Valid(_) | CondKind::Range64(_) => true,
        CondKind::Cmp { loc, k, .. } => {
            loc.width <= 64 && (1..=8).contains(&loc.nbytes) && k <= u128::from(u64::MAX)
        }
    }
}

/// Whether every leaf of condition tree `t` compiles without the interpreter.
pub(crate) fn tree_inline(t: &CondTree) -> bool {
    let mut leaves = vec![];
    t.leaves(&mut leaves);
    leaves.into_iter().all(cond_inline)
}

/// Whether [`Gen::cond_test`] compiles condition `t`: a planned one or a tree that
/// compiles inline, or a general one (a call).
pub(crate) fn test_compiles(t: &CondTest) -> bool {
    match t {
        CondTest::Planned(c) => cond_inline(c),
        CondTest::Tree(t) => tree_inline(t),
        CondTest::General(_) => true,
    }
}

/// Whether planned checksum `c` compiles without the interpreter.
pub(crate) fn csum_inline(c: &Checksum) -> bool {
    c.cond.as_ref().is_none_or(cond_inline)
        && c.target.loc.width <= 64
        && (1..=8).contains(&c.target.loc.nbytes)
}

impl Gen<'_, '_> {
    /// The internet checksum of `c`'s pieces (a piece of an invalid header counts
    /// nothing), as `hash::csum16_planned` computes it: 16 bits in a 64-bit value.
    /// `known`: a header the caller tested valid (its pieces are not weighed by their
    /// validity byte).
    ///
    /// The bytes are summed in the host's (little-endian) order, each piece as two
    /// zero-extended 4-byte loads with their mask, no byte swaps: a ones' complement
    /// sum of byte-swapped words is the byte-swapped sum (RFC 1071), so one swap of
    /// the folded result gives the big-endian one.
    pub(crate) fn csum16(&mut self, phv: Value, valid: Value, c: &Checksum, known: u32) -> Value {
        let mut sum: Option<Value> = None;
        let mut valids: HashMap<u32, Value> = HashMap::new();
        for p in c.pieces.iter() {
            // the piece's mask over the bytes as loaded (little-endian)
            let m = p.mask.swap_bytes();
            let mut add: Option<Value> = None;
            for (o, hm) in [(0i32, m as u32), (4, (m >> 32) as u32)] {
                if hm == 0 {
                    continue;
                }
                let w = self.b.ins().uload32(mem(), phv, p.byte as i32 + o);
                // (the mask sign-extended: the high half of `w` is zero anyway, and
                // the constant fits an instruction's 32-bit immediate)
                let w = if hm == u32::MAX {
                    w
                } else {
                    self.b.ins().band_imm_s(w, i64::from(hm as i32))
                };
                add = Some(match add {
                    Some(a) => self.b.ins().iadd(a, w),
                    None => w,
                });
            }
            let Some(add) = add else { continue };
            let add = if p.header == known {
                add
            } else {
                let v = match valids.get(&p.header) {
                    Some(v) => *v,
                    None => {
                        let v = self.valid(valid, p.header);
                        valids.insert(p.header, v);
                        v
                    }
                };
                // valid is 0 or 1
                self.b.ins().imul(add, v)
            };
            sum = Some(match sum {
                Some(s) => self.b.ins().iadd(s, add),
                None => add,
            });
        }
        let sum = sum.unwrap_or_else(|| self.k(0));
        // carries folded back to 16 bits, then to big-endian
        let s = self.fold16(sum);
        let s = self.b.ins().ireduce(types::I16, s);
        let s = self.b.ins().bswap(s);
        let s = self.b.ins().bnot(s);
        self.b.ins().uextend(types::I64, s)
    }

    /// Whether planned checksum `c` is checked and fails (`Checksum::fails`): 0 or 1.
    pub(crate) fn csum_fails(
        &mut self,
        phv: Value,
        valid: Value,
        lane: Value,
        c: &Checksum,
    ) -> Value {
        let ok = self.b.create_block();
        let check = self.b.create_block();
        let done = self.b.create_block();
        let res = self.b.declare_var(types::I64);
        let zero = self.k(0);
        self.b.def_var(res, zero);
        let v = self.valid(valid, c.header);
        let mut go = v;
        if let Some(fc) = &c.cond {
            let t = self.cond(phv, valid, lane, fc, None);
            go = self.b.ins().band(go, t);
        }
        self.b.ins().brif(go, check, &[], ok, &[]);
        self.b.switch_to_block(check);
        let got = self.csum16(phv, valid, c, c.header);
        let got = self
            .b
            .ins()
            .band_imm_s(got, mask64(c.target.loc.width) as i64);
        let have = self
            .read_field(phv, c.target.loc)
            .unwrap_or_else(|| self.k(0));
        let bad = self.b.ins().icmp(IntCC::NotEqual, got, have);
        let bad = self.b.ins().uextend(types::I64, bad);
        self.b.def_var(res, bad);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(ok);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        self.b.use_var(res)
    }

    /// Writes planned checksum `c` (`Checksum::update`).
    pub(crate) fn csum_update(&mut self, phv: Value, valid: Value, lane: Value, c: &Checksum) {
        let write = self.b.create_block();
        let done = self.b.create_block();
        let mut go = self.k(1);
        if let Some(fc) = &c.cond {
            go = self.cond(phv, valid, lane, fc, None);
        }
        if c.only_valid {
            let v = self.valid(valid, c.header);
            go = self.b.ins().band(go, v);
        }
        self.b.ins().brif(go, write, &[], done, &[]);
        self.b.switch_to_block(write);
        let known = if c.only_valid { c.header } else { u32::MAX };
        let v = self.csum16(phv, valid, c, known);
        self.write_field(phv, c.target.loc, v);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
    }

    /// Control-plan condition `t` for packet `px` (0 or 1; [`test_compiles`]): inline,
    /// or a general one by the general evaluator.
    pub(crate) fn cond_test(&mut self, px: super::action::Px, t: &CondTest) -> Value {
        match t {
            CondTest::Planned(c) => self.cond(px.phv, px.valid, px.lane, c, None),
            CondTest::Tree(t) => self.cond_tree(px.phv, px.valid, px.lane, t),
            CondTest::General(e) => {
                let env = self.env;
                let ek = self.k32(*e);
                let r = self.call(H::Test, &[env, px.lane, ek]).unwrap_or(ek);
                self.b.ins().uextend(types::I64, r)
            }
        }
    }

    /// Condition tree `t` (0 or 1; every leaf compiles: [`tree_inline`]), its leaves
    /// evaluated eagerly (they have no side effects) and joined by bit operations.
    pub(crate) fn cond_tree(
        &mut self,
        phv: Value,
        valid: Value,
        lane: Value,
        t: &CondTree,
    ) -> Value {
        match t {
            CondTree::Leaf(c) => self.cond(phv, valid, lane, c, None),
            CondTree::Not(a) => {
                let v = self.cond_tree(phv, valid, lane, a);
                self.b.ins().bxor_imm_s(v, 1)
            }
            CondTree::And(a, b) => {
                let x = self.cond_tree(phv, valid, lane, a);
                let y = self.cond_tree(phv, valid, lane, b);
                self.b.ins().band(x, y)
            }
            CondTree::Or(a, b) => {
                let x = self.cond_tree(phv, valid, lane, a);
                let y = self.cond_tree(phv, valid, lane, b);
                self.b.ins().bor(x, y)
            }
        }
    }

    /// Planned condition `c` (0 or 1). A comparison of a field wider than 64 bits is
    /// evaluated by the interpreter from expression `expr`.
    pub(crate) fn cond(
        &mut self,
        phv: Value,
        valid: Value,
        lane: Value,
        c: &Cond,
        expr: Option<u32>,
    ) -> Value {
        let t = match c.kind {
            CondKind::Valid(h) => self.valid(valid, h),
            CondKind::Range64(r) => {
                let v = self.read_window(phv, r.shift, r.mask, r.byte);
                let d = self.b.ins().iadd_imm_s(v, (r.lo as i64).wrapping_neg());
                let le = self
                    .b
                    .ins()
                    .icmp_imm_s(IntCC::UnsignedLessThanOrEqual, d, r.span as i64);
                self.b.ins().uextend(types::I64, le)
            }
            CondKind::Cmp { loc, op, k } => {
                let read = if k <= u128::from(u64::MAX) {
                    self.read_field(phv, loc)
                } else {
                    None
                };
                match (read, expr) {
                    (Some(v), _) => {
                        let cc = match op {
                            BinOp::Eq => IntCC::Equal,
                            BinOp::Ne => IntCC::NotEqual,
                            BinOp::Lt => IntCC::UnsignedLessThan,
                            BinOp::Le => IntCC::UnsignedLessThanOrEqual,
                            BinOp::Gt => IntCC::UnsignedGreaterThan,
                            _ => IntCC::UnsignedGreaterThanOrEqual,
                        };
                        let kv = self.k(k as u64);
                        let r = self.b.ins().icmp(cc, v, kv);
                        self.b.ins().uextend(types::I64, r)
                    }
                    (None, Some(e)) => {
                        // the whole expression, negation included
                        let e = self.k32(e);
                        let env = self.env;
                        let r = self.call(H::Test, &[env, lane, e]).unwrap_or(e);
                        return self.b.ins().uextend(types::I64, r);
                    }
                    // callers compile only conditions that `cond_inline` accepts, or
                    // give the expression
                    (None, None) => self.k(0),
                }
            }
        };
        if c.negate {
            self.b.ins().bxor_imm_s(t, 1)
        } else {
            t
        }
    }
}
