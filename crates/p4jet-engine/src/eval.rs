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
pub(crate) fn param(c: &EvalCtx, i: u32) -> u128 {
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

/// The value of a varbit field: the bits of its current length, as a number (0 when
/// the reference does not resolve).
fn varbit_value(p: &Program, c: &EvalCtx, f: &FieldRef) -> BigUint {
    let Some(fid) = resolve_field(p, c, f) else {
        return BigUint::default();
    };
    let fi = &p.fields[fid as usize];
    let h = &p.headers[fi.header as usize];
    let len = h
        .varbit_slot
        .map_or(0, |s| c.phv.varbit_bits[s as usize])
        .min(fi.loc.width);
    // the field is stored left-aligned in its full width
    c.phv.read_big(fi.loc) >> (fi.loc.width - len) as usize
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
        Expr::VarbitEq(a, b) => (varbit_value(p, c, a) == varbit_value(p, c, b)) as u128,
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
            if *w == 0 {
                return 0;
            }
            // [-2^(w-1), 2^(w-1) - 1]; at 128 bits that is the whole of i128 (the shift
            // would overflow)
            let (lo, hi) = if *w >= 128 {
                (i128::MIN, i128::MAX)
            } else {
                (-(1i128 << (*w - 1)), (1i128 << (*w - 1)) - 1)
            };
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
        Expr::ValidUnion(_)
        | Expr::HeaderEq(..)
        | Expr::VarbitEq(..)
        | Expr::LastStackIndex(_)
        | Expr::SizeStack(_) => {
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

/// The wrapping 128-bit operations (`+ - * & | ^`), shared by [`eval`] and
/// [`crate::plan::FlatExpr`]; only these six are passed (any other operator gives `x ^ y`).
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
