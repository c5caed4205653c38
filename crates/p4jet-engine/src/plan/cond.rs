//! Condition plans: the truth tests p4c emits for `if` statements and checksum
//! conditions (`hdr.isValid()`, an unsigned field compared with a constant, their
//! negations), recognised at load and tested without walking the expression tree.

use p4jet_ir::Program;
use p4jet_ir::expr::{BinOp, Expr, ExprId, FieldRef, HeaderRef, Interp, UnOp};

use crate::phv::Phv;

/// A truth test recognised at load time (the shapes p4c emits for `if` statements:
/// `hdr.isValid()`, `field == const`, `field < const`, their negations) and evaluated
/// without walking the expression tree.
#[derive(Debug, Clone, Copy)]
pub struct Cond {
    /// The test.
    pub kind: CondKind,
    /// The result is negated.
    pub negate: bool,
}

/// [`CondKind::Range64`]: `v - lo <= span` (wrapping) with `v` read by one 8-byte load
/// from PHV byte `byte`, shifted and masked (the PHV's padding keeps the load in bounds).
#[derive(Debug, Clone, Copy)]
pub struct Range64 {
    /// PHV byte of the 8-byte load.
    pub byte: u32,
    /// Right shift of the loaded big-endian word.
    pub shift: u32,
    /// Mask after the shift.
    pub mask: u64,
    /// Lowest value in the range.
    pub lo: u64,
    /// Highest value minus the lowest.
    pub span: u64,
}

impl Range64 {
    /// The field's value lies in `lo..=lo + span`.
    #[inline(always)]
    pub fn holds(&self, phv: &Phv) -> bool {
        let v = phv
            .load8(self.byte as usize)
            .map_or(0, |w| (w >> self.shift) & self.mask);
        v.wrapping_sub(self.lo) <= self.span
    }
}

/// What a [`Cond`] tests.
#[derive(Debug, Clone, Copy)]
pub enum CondKind {
    /// Header `h` is valid.
    Valid(u32),
    /// `field OP k` on an unsigned field whose bits lie within 8 bytes from its first
    /// byte, as a range test.
    Range64(Range64),
    /// `field OP k` on an unsigned field of at most 128 bits.
    Cmp {
        /// The field.
        loc: p4jet_ir::FieldLoc,
        /// The comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`).
        op: BinOp,
        /// The constant.
        k: u128,
    },
}

impl Cond {
    /// Recognises root `id` used as a truth test; `None` for anything else.
    pub fn of(p: &Program, id: ExprId) -> Option<Cond> {
        if p.exprs.wide.get(id as usize).copied().unwrap_or(true) {
            return None;
        }
        Self::shape(p, id)
    }

    fn shape(p: &Program, id: ExprId) -> Option<Cond> {
        let n = p.exprs.nodes.get(id as usize)?;
        match &n.expr {
            Expr::Valid(HeaderRef::Static(h)) => Some(Cond {
                kind: CondKind::Valid(*h),
                negate: false,
            }),
            // a boolean as 0/1 or a value as a boolean: the same truth
            Expr::Un(UnOp::D2b | UnOp::B2d, a) => Self::shape(p, *a),
            // an unsigned field as a truth value: not zero
            Expr::Field(FieldRef::Static(f)) => {
                let loc = p.fields.get(*f as usize)?.loc;
                if loc.signed {
                    return None;
                }
                Self::range64(loc, BinOp::Ne, 0)
            }
            Expr::Un(UnOp::Not, a) => Self::shape(p, *a).map(|f| Cond {
                negate: !f.negate,
                ..f
            }),
            Expr::Bin(
                op @ (BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge),
                a,
                b,
            ) => {
                let ordered = !matches!(op, BinOp::Eq | BinOp::Ne);
                if ordered && n.signed_cmp {
                    return None;
                }
                let (na, nb) = (
                    p.exprs.nodes.get(*a as usize)?,
                    p.exprs.nodes.get(*b as usize)?,
                );
                let (f, k, op) = match (&na.expr, &nb.expr) {
                    (Expr::Field(FieldRef::Static(f)), Expr::Const(_)) => (*f, nb, *op),
                    (Expr::Const(_), Expr::Field(FieldRef::Static(f))) => {
                        let flipped = match op {
                            BinOp::Lt => BinOp::Gt,
                            BinOp::Le => BinOp::Ge,
                            BinOp::Gt => BinOp::Lt,
                            BinOp::Ge => BinOp::Le,
                            o => *o,
                        };
                        (*f, na, flipped)
                    }
                    _ => return None,
                };
                let loc = p.fields.get(f as usize)?.loc;
                if loc.signed || loc.width > 128 || k.interp != Interp::Unsigned {
                    return None;
                }
                if let Some(c) = Self::range64(loc, op, k.konst) {
                    return Some(c);
                }
                Some(Cond {
                    kind: CondKind::Cmp {
                        loc,
                        op,
                        k: k.konst,
                    },
                    negate: false,
                })
            }
            _ => None,
        }
    }

    /// `loc OP k` as a [`CondKind::Range64`] when the field's bits fit in 8 bytes from
    /// its first byte and the range is neither empty nor the constant outside 64 bits.
    fn range64(loc: p4jet_ir::FieldLoc, op: BinOp, k: u128) -> Option<Cond> {
        let (shift, max) = crate::phv::window64(loc)?;
        let k = u64::try_from(k).ok().filter(|k| *k <= max)?;
        let (lo, hi, negate) = match op {
            BinOp::Eq => (k, k, false),
            BinOp::Ne => (k, k, true),
            BinOp::Lt => (0, k.checked_sub(1)?, false),
            BinOp::Le => (0, k, false),
            BinOp::Gt => (k.checked_add(1).filter(|v| *v <= max)?, max, false),
            BinOp::Ge => (k, max, false),
            _ => return None,
        };
        Some(Cond {
            kind: CondKind::Range64(Range64 {
                byte: loc.byte,
                shift,
                mask: max,
                lo,
                span: hi - lo,
            }),
            negate,
        })
    }

    /// The packets of `here` (bit `i`: packet `i` of `chunk`) for which the condition
    /// holds, as a mask: the kind is dispatched once for all of them, so its operands
    /// stay in registers through the loop, and the loop body is a test and a bit set.
    /// Bits past the end of `chunk` are never set.
    #[inline(always)]
    pub fn truth_mask<P: std::ops::Deref<Target = crate::PacketCtx>>(
        &self,
        here: u64,
        chunk: &[P],
    ) -> u64 {
        // out of line: inside the control walk the loop's operands spill to the stack
        #[inline(never)]
        fn each<P: std::ops::Deref<Target = crate::PacketCtx>>(
            here: u64,
            chunk: &[P],
            f: impl Fn(&Phv) -> bool,
        ) -> u64 {
            let mut yes = 0u64;
            // every packet of the chunk (the common case): a plain walk over them
            let n = chunk.len().min(64);
            if here == low_bits(n) {
                for (i, c) in chunk[..n].iter().enumerate() {
                    yes |= u64::from(f(&c.phv)) << i;
                }
                return yes;
            }
            let mut m = here;
            while m != 0 {
                let i = m.trailing_zeros();
                m &= m - 1;
                if let Some(c) = chunk.get(i as usize) {
                    yes |= u64::from(f(&c.phv)) << i;
                }
            }
            yes
        }
        // each closure names its operands, which the loop then keeps in registers
        let yes = match self.kind {
            CondKind::Valid(h) => each(here, chunk, move |phv| valid_holds(phv, h)),
            CondKind::Range64(r) => each(here, chunk, move |phv| r.holds(phv)),
            CondKind::Cmp { .. } => each(here, chunk, |phv| self.test(phv) != self.negate),
        };
        if self.negate {
            // the packets of `here` that are in the chunk and failed the test
            here & low_bits(chunk.len()) & !yes
        } else {
            yes
        }
    }

    /// Whether this is the test "header `h` is valid".
    pub fn is_valid_of(&self, h: u32) -> bool {
        matches!(self.kind, CondKind::Valid(v) if v == h) && !self.negate
    }

    /// The truth value for this PHV.
    #[inline(always)]
    pub fn test(&self, phv: &Phv) -> bool {
        let b = match self.kind {
            CondKind::Valid(h) => valid_holds(phv, h),
            CondKind::Range64(r) => r.holds(phv),
            CondKind::Cmp { loc, op, k } => {
                let v = phv.read_raw(loc);
                match op {
                    BinOp::Eq => v == k,
                    BinOp::Ne => v != k,
                    BinOp::Lt => v < k,
                    BinOp::Le => v <= k,
                    BinOp::Gt => v > k,
                    _ => v >= k,
                }
            }
        };
        b != self.negate
    }
}

/// A truth test made of planned conditions joined by `&&`, `||` and `!` (p4c's
/// `checksum_error == 1 || !hdr.ipv4.isValid()`): tested without the expression
/// tree's general evaluation, and without side effects, so in any order.
#[derive(Debug, Clone)]
pub enum CondTree {
    /// A planned condition.
    Leaf(Cond),
    /// Negation.
    Not(Box<CondTree>),
    /// Both hold.
    And(Box<CondTree>, Box<CondTree>),
    /// One holds.
    Or(Box<CondTree>, Box<CondTree>),
}

impl CondTree {
    /// The tree of root `id`, when every leaf is a planned condition (and the tree
    /// is more than one: a single one is a [`Cond`]).
    pub fn of(p: &Program, id: ExprId) -> Option<CondTree> {
        if p.exprs.wide.get(id as usize).copied().unwrap_or(true) {
            return None;
        }
        let t = Self::shape(p, id, 0)?;
        (!matches!(t, CondTree::Leaf(_))).then_some(t)
    }

    fn shape(p: &Program, id: ExprId, depth: u32) -> Option<CondTree> {
        if depth > 16 {
            return None;
        }
        if let Some(c) = Cond::shape(p, id) {
            return Some(CondTree::Leaf(c));
        }
        let n = p.exprs.nodes.get(id as usize)?;
        match &n.expr {
            Expr::Un(UnOp::D2b | UnOp::B2d, a) => Self::shape(p, *a, depth + 1),
            Expr::Un(UnOp::Not, a) => Some(CondTree::Not(Box::new(Self::shape(p, *a, depth + 1)?))),
            Expr::Bin(BinOp::LAnd, a, b) => Some(CondTree::And(
                Box::new(Self::shape(p, *a, depth + 1)?),
                Box::new(Self::shape(p, *b, depth + 1)?),
            )),
            Expr::Bin(BinOp::LOr, a, b) => Some(CondTree::Or(
                Box::new(Self::shape(p, *a, depth + 1)?),
                Box::new(Self::shape(p, *b, depth + 1)?),
            )),
            _ => None,
        }
    }

    /// The truth value for this PHV.
    pub fn test(&self, phv: &Phv) -> bool {
        match self {
            CondTree::Leaf(c) => c.test(phv),
            CondTree::Not(a) => !a.test(phv),
            CondTree::And(a, b) => a.test(phv) && b.test(phv),
            CondTree::Or(a, b) => a.test(phv) || b.test(phv),
        }
    }

    /// Every leaf, for `f`.
    pub fn leaves<'a>(&'a self, out: &mut Vec<&'a Cond>) {
        match self {
            CondTree::Leaf(c) => out.push(c),
            CondTree::Not(a) => a.leaves(out),
            CondTree::And(a, b) | CondTree::Or(a, b) => {
                a.leaves(out);
                b.leaves(out);
            }
        }
    }
}

/// [`CondKind::Valid`]: header `h` is valid.
#[inline(always)]
fn valid_holds(phv: &Phv, h: u32) -> bool {
    phv.valid.get(h as usize).copied().unwrap_or(false)
}

/// A mask of the low `n` bits (all 64 for `n >= 64`).
#[inline(always)]
fn low_bits(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The range form of `field OP k` against the comparison on `read_raw`, for fields
    /// of every width and offset (owned windows and shared bytes), constants at and
    /// around the edges and values at and around the constant.
    #[test]
    fn range_conditions_equal_comparisons() {
        let ops = [
            BinOp::Eq,
            BinOp::Ne,
            BinOp::Lt,
            BinOp::Le,
            BinOp::Gt,
            BinOp::Ge,
        ];
        let mut phv = Phv::zeroed(16);
        let mut checked = 0;
        for width in 1..=64u32 {
            for bit in 0..8u8 {
                for own in [false, true] {
                    let bit = if own {
                        ((8 - width % 8) % 8) as u8
                    } else {
                        bit
                    };
                    if u32::from(bit) + width > 64 {
                        continue;
                    }
                    let loc = p4jet_ir::FieldLoc::new(3, bit, width, false, own);
                    let max = u64::MAX >> (64 - width);
                    for k in [0, 1, max / 2, max - 1, max] {
                        for op in ops {
                            let Some(fc) = Cond::range64(loc, op, u128::from(k)) else {
                                continue;
                            };
                            for v in [0, 1, k.wrapping_sub(1), k, k.wrapping_add(1), max] {
                                let v = v & max;
                                phv.data.fill(0xa5);
                                phv.write(loc, u128::from(v));
                                let r = phv.read_raw(loc);
                                let k = u128::from(k);
                                let want = match op {
                                    BinOp::Eq => r == k,
                                    BinOp::Ne => r != k,
                                    BinOp::Lt => r < k,
                                    BinOp::Le => r <= k,
                                    BinOp::Gt => r > k,
                                    _ => r >= k,
                                };
                                assert_eq!(fc.test(&phv), want, "{loc:?} {op:?} {k} v={v}");
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }
}
