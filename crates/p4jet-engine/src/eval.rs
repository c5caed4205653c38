//! Expression evaluation: a 128-bit evaluator for the roots the load-time analysis proved
//! narrow, and a big-integer evaluator (bmv2's unbounded semantics) for the others.

use num_bigint::{BigInt, BigUint, Sign};
use num_traits::{One, Signed, ToPrimitive, Zero};
use p4jet_ir::expr::{BinOp, Expr, ExprId, FieldRef, HeaderRef, Interp, UnOp, UnionRef};
use p4jet_ir::{Action, Program};

use crate::phv::{Phv, read_bits, sign_extend};

/// What an expression can see besides the PHV.
#[derive(Clone, Copy)]
pub struct EvalCtx<'a> {
    /// Headers and metadata.
    pub phv: &'a Phv,
    /// Packet bytes from the parser cursor on (for lookahead).
    pub ahead: &'a [u8],
    /// Running action and its data blob (for parameters).
    pub action: Option<(&'a Action, &'a [u8])>,
}

impl<'a> EvalCtx<'a> {
    /// A context of headers and metadata only: no lookahead bytes, no action data.
    pub fn of_phv(phv: &'a Phv) -> EvalCtx<'a> {
        EvalCtx {
            phv,
            ahead: &[],
            action: None,
        }
    }
}

#[inline]
fn mask(width: u32) -> u128 {
    if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

/// Resolves a header reference to a header id (None: index out of range or empty stack).
#[inline]
pub fn resolve_header(p: &Program, c: &EvalCtx, h: &HeaderRef) -> Option<u32> {
    match h {
        HeaderRef::Static(h) => Some(*h),
        HeaderRef::StackIndex { stack, index } => {
            let i = eval_index(p, c, *index)?;
            p.stacks[*stack as usize]
                .headers
                .get(usize::try_from(i).ok()?)
                .copied()
        }
        HeaderRef::StackLast(stack) => {
            let next = c.phv.stack_next[*stack as usize];
            if next == 0 {
                return None;
            }
            p.stacks[*stack as usize]
                .headers
                .get(next as usize - 1)
                .copied()
        }
        HeaderRef::UnionMember { union, member } => {
            let u = resolve_union(p, c, union)?;
            p.unions[u as usize].headers.get(*member as usize).copied()
        }
    }
}

/// Resolves a union reference.
pub fn resolve_union(p: &Program, c: &EvalCtx, u: &UnionRef) -> Option<u32> {
    match u {
        UnionRef::Static(u) => Some(*u),
        UnionRef::StackIndex { stack, index } => {
            let i = eval_index(p, c, *index)?;
            p.union_stacks[*stack as usize]
                .unions
                .get(usize::try_from(i).ok()?)
                .copied()
        }
        UnionRef::StackLast(stack) => {
            let s = &p.union_stacks[*stack as usize];
            // the last union with a valid member
            s.unions.iter().rev().copied().find(|u| {
                p.unions[*u as usize]
                    .headers
                    .iter()
                    .any(|h| c.phv.valid[*h as usize])
            })
        }
    }
}

/// Resolves a field reference to a field id.
#[inline]
pub fn resolve_field(p: &Program, c: &EvalCtx, f: &FieldRef) -> Option<u32> {
    match f {
        FieldRef::Static(f) => Some(*f),
        FieldRef::Dyn { header, index } => {
            let h = resolve_header(p, c, header)?;
            p.headers[h as usize].fields.get(*index as usize).copied()
        }
    }
}

/// Value of action parameter `i` as bits.
#[inline]
fn param(c: &EvalCtx, i: u32) -> u128 {
    match c.action {
        Some((a, data)) => {
            let off = a.param_offsets.get(i as usize).copied().unwrap_or(0) as usize;
            let w = a.params.get(i as usize).map(|x| x.1).unwrap_or(0);
            crate::phv::read_param(data, off, w)
        }
        None => 0,
    }
}

fn param_big(c: &EvalCtx, i: u32) -> BigUint {
    match c.action {
        Some((a, data)) => {
            let off = a.param_offsets.get(i as usize).copied().unwrap_or(0) as usize;
            let w = a.params.get(i as usize).map(|x| x.1).unwrap_or(0);
            let nbytes = w.div_ceil(8) as usize;
            BigUint::from_bytes_be(data.get(off..off + nbytes).unwrap_or(&[]))
        }
        None => BigUint::zero(),
    }
}

/// Evaluates a root to a 128-bit pattern (low bits of the exact value).
#[inline]
pub fn eval_bits(p: &Program, c: &EvalCtx, id: ExprId) -> u128 {
    if p.exprs.wide[id as usize] {
        p4jet_ir::expr::to_bits(&eval_big(p, c, id))
    } else {
        eval(p, c, id)
    }
}

/// Evaluates a root used as a truth value.
#[inline]
pub fn eval_bool(p: &Program, c: &EvalCtx, id: ExprId) -> bool {
    if p.exprs.wide[id as usize] {
        !eval_big(p, c, id).is_zero()
    } else {
        eval(p, c, id) != 0
    }
}

/// Evaluates a root used as an exact integer (index, count, code); `None` when negative
/// or beyond 64 bits.
#[inline]
pub fn eval_index(p: &Program, c: &EvalCtx, id: ExprId) -> Option<u64> {
    if p.exprs.wide[id as usize] {
        return eval_big(p, c, id).to_u64();
    }
    let v = eval(p, c, id);
    match p.exprs.nodes[id as usize].interp {
        Interp::Signed if (v as i128) < 0 => None,
        _ => u64::try_from(v).ok(),
    }
}

/// Evaluates a root exactly as a big integer.
pub fn eval_exact(p: &Program, c: &EvalCtx, id: ExprId) -> BigInt {
    if p.exprs.wide[id as usize] {
        return eval_big(p, c, id);
    }
    let v = eval(p, c, id);
    match p.exprs.nodes[id as usize].interp {
        Interp::Signed => BigInt::from(v as i128),
        _ => BigInt::from(v),
    }
}

fn read_field(p: &Program, c: &EvalCtx, f: &FieldRef) -> u128 {
    match resolve_field(p, c, f) {
        Some(f) => c.phv.read(p.fields[f as usize].loc),
        None => 0,
    }
}

fn valid(p: &Program, c: &EvalCtx, h: &HeaderRef) -> bool {
    resolve_header(p, c, h).is_some_and(|h| c.phv.valid[h as usize])
}

fn header_eq(p: &Program, c: &EvalCtx, a: &HeaderRef, b: &HeaderRef) -> bool {
    let (Some(a), Some(b)) = (resolve_header(p, c, a), resolve_header(p, c, b)) else {
        return false;
    };
    let (va, vb) = (c.phv.valid[a as usize], c.phv.valid[b as usize]);
    if !va && !vb {
        return true;
    }
    if va != vb {
        return false;
    }
    let (ha, hb) = (&p.headers[a as usize], &p.headers[b as usize]);
    ha.fields.len() == hb.fields.len()
        && ha.fields.iter().zip(&hb.fields).all(|(fa, fb)| {
            let (la, lb) = (p.fields[*fa as usize].loc, p.fields[*fb as usize].loc);
            c.phv.read_big(la) == c.phv.read_big(lb)
        })
}

/// The 128-bit evaluator (only for nodes of roots not marked wide).
pub fn eval(p: &Program, c: &EvalCtx, id: ExprId) -> u128 {
    let n = &p.exprs.nodes[id as usize];
    match &n.expr {
        Expr::Const(_) | Expr::Bool(_) => n.konst,
        Expr::Field(f) => read_field(p, c, f),
        Expr::Param(i) => param(c, *i),
        Expr::Lookahead { offset, width } => {
            read_bits(c.ahead, (*offset / 8) as usize, offset % 8, *width)
        }
        Expr::Valid(h) => valid(p, c, h) as u128,
        Expr::ValidUnion(u) => resolve_union(p, c, u).is_some_and(|u| {
            p.unions[u as usize]
                .headers
                .iter()
                .any(|h| c.phv.valid[*h as usize])
        }) as u128,
        Expr::HeaderEq(a, b) => header_eq(p, c, a, b) as u128,
        Expr::LastStackIndex(s) => (c.phv.stack_next[*s as usize] as i128 - 1) as u128,
        Expr::SizeStack(s) => c.phv.stack_next[*s as usize] as u128,
        Expr::Un(op, a) => {
            let v = eval(p, c, *a);
            match op {
                UnOp::Neg => v.wrapping_neg(),
                UnOp::BitNot => !v,
                UnOp::Not => (v == 0) as u128,
                UnOp::D2b => (v != 0) as u128,
                UnOp::B2d => v,
            }
        }
        Expr::Bin(op, a, b) => {
            match op {
                BinOp::LAnd => return (eval(p, c, *a) != 0 && eval(p, c, *b) != 0) as u128,
                BinOp::LOr => return (eval(p, c, *a) != 0 || eval(p, c, *b) != 0) as u128,
                _ => {}
            }
            let x = eval(p, c, *a);
            let y = eval(p, c, *b);
            let ia = p.exprs.nodes[*a as usize].interp;
            match op {
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::And | BinOp::Or | BinOp::Xor => {
                    bin(*op, x, y)
                }
                BinOp::Shl => {
                    if y >= 128 {
                        0
                    } else {
                        x << y
                    }
                }
                BinOp::Shr => {
                    let neg = ia == Interp::Signed && (x as i128) < 0;
                    if y >= 128 {
                        if neg { u128::MAX } else { 0 }
                    } else if neg {
                        ((x as i128) >> y) as u128
                    } else {
                        x >> y
                    }
                }
                BinOp::Div | BinOp::Mod => {
                    // bmv2 requires non-negative operands and a non-zero divisor; a zero
                    // divisor yields 0 here instead of aborting the switch.
                    if y == 0 {
                        return 0;
                    }
                    if ia == Interp::Signed || p.exprs.nodes[*b as usize].interp == Interp::Signed {
                        let (xs, ys) = (x as i128, y as i128);
                        let r = if *op == BinOp::Div {
                            xs.wrapping_div(ys)
                        } else {
                            xs.wrapping_rem(ys)
                        };
                        r as u128
                    } else if *op == BinOp::Div {
                        x / y
                    } else {
                        x % y
                    }
                }
                BinOp::Eq => (x == y) as u128,
                BinOp::Ne => (x != y) as u128,
                BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                    let ord = if n.signed_cmp {
                        (x as i128).cmp(&(y as i128))
                    } else {
                        x.cmp(&y)
                    };
                    let r = match op {
                        BinOp::Lt => ord.is_lt(),
                        BinOp::Le => ord.is_le(),
                        BinOp::Gt => ord.is_gt(),
                        _ => ord.is_ge(),
                    };
                    r as u128
                }
                BinOp::LAnd | BinOp::LOr => 0,
            }
        }
        Expr::Cond(k, a, b) => {
            if eval(p, c, *k) != 0 {
                eval(p, c, *a)
            } else {
                eval(p, c, *b)
            }
        }
        Expr::TwoCompMod(a, w) => sign_extend(eval(p, c, *a) & mask(*w), *w),
        Expr::SatCast(a, w) => {
            let v = eval(p, c, *a);
            let ia = p.exprs.nodes[*a as usize].interp;
            let (lo, hi) = (
                -(1i128 << (*w - 1).min(126)),
                (1i128 << (*w - 1).min(126)) - 1,
            );
            if *w == 0 {
                return 0;
            }
            if ia == Interp::Unsigned {
                if v > hi as u128 { hi as u128 } else { v }
            } else {
                (v as i128).clamp(lo, hi) as u128
            }
        }
        Expr::UsatCast(a, w) => {
            let v = eval(p, c, *a);
            let ia = p.exprs.nodes[*a as usize].interp;
            if ia == Interp::Signed && (v as i128) < 0 {
                0
            } else {
                v.min(mask(*w))
            }
        }
    }
}

fn pow2(n: u32) -> BigInt {
    BigInt::one() << n
}

fn field_big(p: &Program, c: &EvalCtx, f: &FieldRef) -> BigInt {
    let Some(f) = resolve_field(p, c, f) else {
        return BigInt::zero();
    };
    let loc = p.fields[f as usize].loc;
    let u = BigInt::from(c.phv.read_big(loc));
    if loc.signed && loc.width > 0 && u >= pow2(loc.width - 1) {
        u - pow2(loc.width)
    } else {
        u
    }
}

/// The big-integer evaluator: bmv2's semantics on unbounded integers.
pub fn eval_big(p: &Program, c: &EvalCtx, id: ExprId) -> BigInt {
    let n = &p.exprs.nodes[id as usize];
    let b2i = |b: bool| if b { BigInt::one() } else { BigInt::zero() };
    match &n.expr {
        Expr::Const(v) => v.clone(),
        Expr::Bool(b) => b2i(*b),
        Expr::Field(f) => field_big(p, c, f),
        Expr::Param(i) => BigInt::from(param_big(c, *i)),
        Expr::Lookahead { offset, width } => BigInt::from(crate::phv::read_big(
            c.ahead,
            (*offset / 8) as usize,
            offset % 8,
            *width,
        )),
        Expr::Valid(h) => b2i(valid(p, c, h)),
        Expr::ValidUnion(_) | Expr::HeaderEq(..) | Expr::LastStackIndex(_) | Expr::SizeStack(_) => {
            let v = eval(p, c, id);
            if matches!(n.expr, Expr::LastStackIndex(_)) {
                BigInt::from(v as i128)
            } else {
                BigInt::from(v)
            }
        }
        Expr::Un(op, a) => {
            let v = eval_big(p, c, *a);
            match op {
                UnOp::Neg => -v,
                UnOp::BitNot => -v - 1,
                UnOp::Not => b2i(v.is_zero()),
                UnOp::D2b => b2i(!v.is_zero()),
                UnOp::B2d => v,
            }
        }
        Expr::Bin(op, a, b) => {
            match op {
                BinOp::LAnd => {
                    return b2i(!eval_big(p, c, *a).is_zero() && !eval_big(p, c, *b).is_zero());
                }
                BinOp::LOr => {
                    return b2i(!eval_big(p, c, *a).is_zero() || !eval_big(p, c, *b).is_zero());
                }
                _ => {}
            }
            let x = eval_big(p, c, *a);
            let y = eval_big(p, c, *b);
            match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::And => x & y,
                BinOp::Or => x | y,
                BinOp::Xor => x ^ y,
                BinOp::Shl => match y.to_u32() {
                    Some(s) if s <= 1 << 16 => x << s,
                    _ => BigInt::zero(),
                },
                BinOp::Shr => match y.to_u32() {
                    Some(s) => x >> s,
                    None => {
                        if x.is_negative() {
                            BigInt::from(-1)
                        } else {
                            BigInt::zero()
                        }
                    }
                },
                BinOp::Div | BinOp::Mod => {
                    if y.is_zero() {
                        return BigInt::zero();
                    }
                    if *op == BinOp::Div { x / y } else { x % y }
                }
                BinOp::Eq => b2i(x == y),
                BinOp::Ne => b2i(x != y),
                BinOp::Lt => b2i(x < y),
                BinOp::Le => b2i(x <= y),
                BinOp::Gt => b2i(x > y),
                BinOp::Ge => b2i(x >= y),
                BinOp::LAnd | BinOp::LOr => BigInt::zero(),
            }
        }
        Expr::Cond(k, a, b) => {
            if !eval_big(p, c, *k).is_zero() {
                eval_big(p, c, *a)
            } else {
                eval_big(p, c, *b)
            }
        }
        Expr::TwoCompMod(a, w) => {
            let v = eval_big(p, c, *a);
            if *w == 0 {
                return BigInt::zero();
            }
            let m = pow2(*w);
            let mut r = v % &m;
            if r.sign() == Sign::Minus {
                r += &m;
            }
            if r >= pow2(*w - 1) { r - m } else { r }
        }
        Expr::SatCast(a, w) => {
            let v = eval_big(p, c, *a);
            if *w == 0 {
                return BigInt::zero();
            }
            let hi = pow2(*w - 1) - 1;
            let lo = -pow2(*w - 1);
            v.clamp(lo, hi)
        }
        Expr::UsatCast(a, w) => {
            let v = eval_big(p, c, *a);
            v.clamp(BigInt::zero(), pow2(*w) - 1)
        }
    }
}

/// A truth test recognised at load time (the shapes p4c emits for `if` statements:
/// `hdr.isValid()`, `field == const`, `field < const`, their negations) and evaluated
/// without walking the expression tree.
#[derive(Debug, Clone, Copy)]
pub struct FastCond {
    kind: FastKind,
    negate: bool,
}

/// [`FastKind::Range64`]: `v - lo <= span` (wrapping) with `v` read by one 8-byte load
/// from PHV byte `byte`, shifted and masked (the PHV's padding keeps the load in bounds).
#[derive(Debug, Clone, Copy)]
struct Range64 {
    byte: u32,
    shift: u32,
    mask: u64,
    lo: u64,
    span: u64,
}

impl Range64 {
    /// The field's value lies in `lo..=lo + span`.
    #[inline(always)]
    fn holds(&self, phv: &Phv) -> bool {
        let v = phv
            .load8(self.byte as usize)
            .map_or(0, |w| (w >> self.shift) & self.mask);
        v.wrapping_sub(self.lo) <= self.span
    }
}

#[derive(Debug, Clone, Copy)]
enum FastKind {
    Valid(u32),
    /// `field OP k` on an unsigned field whose bits lie within 8 bytes from its first
    /// byte, as a range test.
    Range64(Range64),
    /// `field OP k` on an unsigned field of at most 128 bits.
    Cmp {
        loc: p4jet_ir::FieldLoc,
        op: BinOp,
        k: u128,
    },
}

impl FastCond {
    /// Recognises root `id` used as a truth test; `None` for anything else.
    pub fn compile(p: &Program, id: ExprId) -> Option<FastCond> {
        if p.exprs.wide.get(id as usize).copied().unwrap_or(true) {
            return None;
        }
        Self::shape(p, id)
    }

    fn shape(p: &Program, id: ExprId) -> Option<FastCond> {
        let n = p.exprs.nodes.get(id as usize)?;
        match &n.expr {
            Expr::Valid(HeaderRef::Static(h)) => Some(FastCond {
                kind: FastKind::Valid(*h),
                negate: false,
            }),
            Expr::Un(UnOp::D2b, a) => Self::shape(p, *a),
            Expr::Un(UnOp::Not, a) => Self::shape(p, *a).map(|f| FastCond {
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
                Some(FastCond {
                    kind: FastKind::Cmp {
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

    /// `loc OP k` as a [`FastKind::Range64`] when the field's bits fit in 8 bytes from
    /// its first byte and the range is neither empty nor the constant outside 64 bits.
    fn range64(loc: p4jet_ir::FieldLoc, op: BinOp, k: u128) -> Option<FastCond> {
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
        Some(FastCond {
            kind: FastKind::Range64(Range64 {
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
            FastKind::Valid(h) => each(here, chunk, move |phv| valid_holds(phv, h)),
            FastKind::Range64(r) => each(here, chunk, move |phv| r.holds(phv)),
            FastKind::Cmp { .. } => each(here, chunk, |phv| self.test(phv) != self.negate),
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
        matches!(self.kind, FastKind::Valid(v) if v == h) && !self.negate
    }

    /// The truth value for this PHV.
    #[inline(always)]
    pub fn test(&self, phv: &Phv) -> bool {
        let b = match self.kind {
            FastKind::Valid(h) => valid_holds(phv, h),
            FastKind::Range64(r) => r.holds(phv),
            FastKind::Cmp { loc, op, k } => {
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

/// [`FastKind::Valid`]: header `h` is valid.
#[inline(always)]
fn valid_holds(phv: &Phv, h: u32) -> bool {
    phv.valid.get(h as usize).copied().unwrap_or(false)
}

/// A mask of the low `n` bits (all 64 for `n >= 64`).
#[inline(always)]
fn low_bits(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// The wrapping 128-bit operations (`+ - * & | ^`), shared by [`eval`] and
/// [`FastExpr`]; only these six are passed (any other operator gives `x ^ y`).
#[inline(always)]
pub(crate) fn bin(op: BinOp, x: u128, y: u128) -> u128 {
    match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::And => x & y,
        BinOp::Or => x | y,
        _ => x ^ y,
    }
}

/// Deepest operand stack a [`FastExpr`] may need.
const FAST_STACK: usize = 8;

/// [`bin`] on 64-bit values: the low 64 bits of [`bin`]'s result (for the wrapping
/// operations a [`FastExpr`] admits, the result's low bits depend only on the operands'
/// low bits, so the compiler emits 64-bit operations).
#[inline(always)]
pub(crate) fn bin64(op: BinOp, x: u64, y: u64) -> u64 {
    bin(op, u128::from(x), u128::from(y)) as u64
}

/// An expression of wrapping 128-bit operations on unsigned fields, constants and action
/// parameters (`ttl - 1` arrives from p4c as `(ttl + 0xff) & 0xff`), flattened at load
/// into postfix form and evaluated on a small fixed stack: the same bits as [`eval`]
/// without the recursive walk.
#[derive(Debug, Clone)]
pub struct FastExpr {
    ops: Vec<FastOp>,
}

#[derive(Debug, Clone, Copy)]
enum FastOp {
    Const(u128),
    Field(p4jet_ir::FieldLoc),
    Param(u32),
    Bin(BinOp),
    /// `Bin` whose right operand is a constant (`Const(k), Bin(op)` fused at load).
    BinK(BinOp, u128),
    Un(UnOp),
}

impl FastExpr {
    /// Flattens root `id`; `None` when it is wide, too deep, or uses anything else.
    pub fn compile(p: &Program, id: ExprId) -> Option<FastExpr> {
        if p.exprs.wide.get(id as usize).copied().unwrap_or(true) {
            return None;
        }
        let mut ops = Vec::new();
        let depth = Self::emit(p, id, &mut ops)?;
        if depth > FAST_STACK || ops.len() <= 1 {
            return None;
        }
        // a constant right operand is applied to the top of the stack, not pushed
        let mut fused: Vec<FastOp> = Vec::with_capacity(ops.len());
        for op in ops {
            match (op, fused.last()) {
                (FastOp::Bin(b), Some(&FastOp::Const(k))) => {
                    fused.pop();
                    fused.push(FastOp::BinK(b, k));
                }
                _ => fused.push(op),
            }
        }
        Some(FastExpr { ops: fused })
    }

    /// Emits `id` in postfix order; returns the stack depth it needs.
    fn emit(p: &Program, id: ExprId, ops: &mut Vec<FastOp>) -> Option<usize> {
        let n = p.exprs.nodes.get(id as usize)?;
        match &n.expr {
            Expr::Const(_) => {
                ops.push(FastOp::Const(n.konst));
                Some(1)
            }
            Expr::Field(FieldRef::Static(f)) => {
                let loc = p.fields.get(*f as usize)?.loc;
                if loc.signed || loc.width > 128 {
                    return None;
                }
                ops.push(FastOp::Field(loc));
                Some(1)
            }
            Expr::Param(i) => {
                ops.push(FastOp::Param(*i));
                Some(1)
            }
            Expr::Un(op @ (UnOp::BitNot | UnOp::Neg), a) => {
                let d = Self::emit(p, *a, ops)?;
                ops.push(FastOp::Un(*op));
                Some(d)
            }
            Expr::Bin(
                op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::And | BinOp::Or | BinOp::Xor),
                a,
                b,
            ) => {
                let da = Self::emit(p, *a, ops)?;
                let db = Self::emit(p, *b, ops)?;
                ops.push(FastOp::Bin(*op));
                Some(da.max(db + 1))
            }
            _ => None,
        }
    }

    /// The expression as one field followed by operations with constant right operands
    /// (`(ttl + 0xff) & 0xff`): the field and the operations, or None for any other shape.
    pub fn field_const_ops(&self) -> Option<(p4jet_ir::FieldLoc, Vec<(BinOp, u128)>)> {
        let (FastOp::Field(loc), rest) = self.ops.split_first()? else {
            return None;
        };
        let ops = rest
            .iter()
            .map(|op| match *op {
                FastOp::BinK(b, k) => Some((b, k)),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some((*loc, ops))
    }

    /// `loc OP k OP k ...` (for tests of forms built from this shape).
    #[cfg(test)]
    pub(crate) fn of_field_ops(loc: p4jet_ir::FieldLoc, ops: &[(BinOp, u128)]) -> FastExpr {
        let mut v = vec![FastOp::Field(loc)];
        v.extend(ops.iter().map(|&(b, k)| FastOp::BinK(b, k)));
        FastExpr { ops: v }
    }

    /// The expression's 128-bit pattern (what [`eval_bits`] returns).
    pub fn eval(&self, c: &EvalCtx) -> u128 {
        let mut st = [0u128; FAST_STACK];
        let mut sp = 0usize;
        for op in &self.ops {
            match *op {
                FastOp::Const(k) => {
                    st[sp] = k;
                    sp += 1;
                }
                FastOp::Field(loc) => {
                    st[sp] = c.phv.read_raw(loc);
                    sp += 1;
                }
                FastOp::Param(i) => {
                    st[sp] = param(c, i);
                    sp += 1;
                }
                FastOp::Un(op) => {
                    let v = st[sp - 1];
                    st[sp - 1] = match op {
                        UnOp::Neg => v.wrapping_neg(),
                        _ => !v,
                    };
                }
                FastOp::Bin(op) => {
                    sp -= 1;
                    st[sp - 1] = bin(op, st[sp - 1], st[sp]);
                }
                FastOp::BinK(op, k) => st[sp - 1] = bin(op, st[sp - 1], k),
            }
        }
        st[0]
    }
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
                            let Some(fc) = FastCond::range64(loc, op, u128::from(k)) else {
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
