//! Expressions of the lowered program and the width analysis that picks their evaluator.
//!
//! bmv2 evaluates expressions on unbounded integers and truncates only when a field is
//! written. The engine evaluates in 128-bit wrapping arithmetic (`u128` bit patterns)
//! whenever that provably gives the same observable result, and in big integers otherwise.
//! The proof is an interval analysis done once at load time ([`ExprPool::finish_root`]):
//! every node gets the range of values it can take; an operation that needs its operand's
//! exact value (a comparison, a right shift, a division, a saturating cast, a truth test)
//! requires that range to fit a 128-bit window (`[0, 2^128)` read as unsigned or
//! `[-2^127, 2^127)` read as signed); operations that only need low bits (`+ - * & | ^ ~ <<`,
//! `two_comp_mod`, a write into a field of at most 128 bits) never do. A root whose
//! requirements cannot be met is marked `wide` and evaluated with big integers.

use num_bigint::BigInt;
use num_traits::{One, Signed, Zero};

/// Index of an expression node in the [`ExprPool`].
pub type ExprId = u32;

/// A reference to a header instance, possibly computed at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderRef {
    /// A fixed header.
    Static(u32),
    /// `stack[index]`.
    StackIndex {
        /// Stack.
        stack: u32,
        /// Index expression.
        index: ExprId,
    },
    /// The last valid element of a stack (`stack.last`, parser `stack_field`).
    StackLast(u32),
    /// A member of a union.
    UnionMember {
        /// Union.
        union: Box<UnionRef>,
        /// Member index.
        member: u32,
    },
}

/// A reference to a header union, possibly computed at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnionRef {
    /// A fixed union.
    Static(u32),
    /// `ustack[index]`.
    StackIndex {
        /// Union stack.
        stack: u32,
        /// Index expression.
        index: ExprId,
    },
    /// Last valid union of a union stack.
    StackLast(u32),
}

/// A reference to a field, possibly of a run-time selected header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldRef {
    /// A fixed field.
    Static(u32),
    /// Field number `index` (in the header type's field order) of a computed header.
    Dyn {
        /// Header.
        header: HeaderRef,
        /// Field position in the header type.
        index: u32,
    },
}

impl FieldRef {
    /// Width of the field in bits.
    pub fn width(&self, p: &crate::Program) -> u32 {
        match self {
            FieldRef::Static(f) => p.fields[*f as usize].loc.width,
            FieldRef::Dyn { header, index } => {
                let h = header.any_header(p);
                let f = p.headers[h as usize].fields[*index as usize];
                p.fields[f as usize].loc.width
            }
        }
    }

    /// Signedness of the field.
    pub fn signed(&self, p: &crate::Program) -> bool {
        match self {
            FieldRef::Static(f) => p.fields[*f as usize].loc.signed,
            FieldRef::Dyn { header, index } => {
                let h = header.any_header(p);
                let f = p.headers[h as usize].fields[*index as usize];
                p.fields[f as usize].loc.signed
            }
        }
    }
}

impl HeaderRef {
    /// A header this reference may denote (all candidates share the header type).
    pub fn any_header(&self, p: &crate::Program) -> u32 {
        match self {
            HeaderRef::Static(h) => *h,
            HeaderRef::StackIndex { stack, .. } | HeaderRef::StackLast(stack) => p.stacks
                [*stack as usize]
                .headers
                .first()
                .copied()
                .unwrap_or(0),
            HeaderRef::UnionMember { union, member } => {
                let u = match union.as_ref() {
                    UnionRef::Static(u) => *u,
                    UnionRef::StackIndex { stack, .. } | UnionRef::StackLast(stack) => p
                        .union_stacks[*stack as usize]
                        .unions
                        .first()
                        .copied()
                        .unwrap_or(0),
                };
                p.unions[u as usize]
                    .headers
                    .get(*member as usize)
                    .copied()
                    .unwrap_or(0)
            }
        }
    }
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `~x` (infinite precision: `-x - 1`)
    BitNot,
    /// `not b`
    Not,
    /// data → bool (non-zero)
    D2b,
    /// bool → data (0/1)
    B2d,
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `&`
    And,
    /// `|`
    Or,
    /// `^`
    Xor,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// logical `and`
    LAnd,
    /// logical `or`
    LOr,
}

impl BinOp {
    /// A comparison (boolean result from integer operands).
    pub fn is_compare(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
}

/// An expression node.
#[derive(Debug, Clone)]
pub enum Expr {
    /// Integer constant.
    Const(BigInt),
    /// Boolean constant.
    Bool(bool),
    /// Field read (sign-extended for signed fields).
    Field(FieldRef),
    /// Action parameter.
    Param(u32),
    /// Packet bits ahead of the parser cursor.
    Lookahead {
        /// Bit offset.
        offset: u32,
        /// Width.
        width: u32,
    },
    /// Header validity.
    Valid(HeaderRef),
    /// Union validity (any member valid).
    ValidUnion(UnionRef),
    /// Unary.
    Un(UnOp, ExprId),
    /// Binary.
    Bin(BinOp, ExprId, ExprId),
    /// `c ? a : b`
    Cond(ExprId, ExprId, ExprId),
    /// Wrap to a signed `w`-bit value.
    TwoCompMod(ExprId, u32),
    /// Saturate to signed `w` bits.
    SatCast(ExprId, u32),
    /// Saturate to unsigned `w` bits.
    UsatCast(ExprId, u32),
    /// Header equality (all fields and validity).
    HeaderEq(HeaderRef, HeaderRef),
    /// Equality of two varbit fields: their values (the bits of their current
    /// lengths, as numbers), as bmv2 compares them.
    VarbitEq(FieldRef, FieldRef),
    /// Index of the last valid element of a stack (`-1`… as bmv2: next index − 1).
    LastStackIndex(u32),
    /// Number of valid elements (next index) of a stack.
    SizeStack(u32),
}

/// Which integer domain evaluates a node in the 128-bit evaluator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interp {
    /// Range within `[0, 2^128)`: the bit pattern read as `u128` is the exact value.
    Unsigned,
    /// Range within `[-2^127, 2^127)`: the bit pattern read as `i128` is the exact value.
    Signed,
    /// Only the low 128 bits are known.
    Wrapped,
}

/// A node plus its analysis results.
#[derive(Debug, Clone)]
pub struct Node {
    /// The operation.
    pub expr: Expr,
    /// Interval of possible values (None = unbounded).
    pub range: Option<(BigInt, BigInt)>,
    /// How the 128-bit evaluator reads this node's bits.
    pub interp: Interp,
    /// Constant value as a 128-bit pattern (for `Const`).
    pub konst: u128,
    /// Comparisons: compare the operands' bit patterns as signed (else unsigned).
    pub signed_cmp: bool,
}

/// Per-root information.
#[derive(Debug, Clone, Copy)]
pub struct RootInfo {
    /// Evaluate with big integers.
    pub wide: bool,
}

/// All expression nodes of a program.
#[derive(Debug, Clone, Default)]
pub struct ExprPool {
    /// Nodes.
    pub nodes: Vec<Node>,
    /// Root flags, indexed by node id (only meaningful for roots).
    pub wide: Vec<bool>,
}

/// How a root's value is consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Written into a field (or other storage) of this many bits: low bits suffice.
    Store(u32),
    /// Used as an exact value (truth test, index, count, error code...).
    Exact,
}

fn pow2(n: u32) -> BigInt {
    BigInt::one() << n
}

fn bitlen_abs(r: &(BigInt, BigInt)) -> u64 {
    r.0.abs().bits().max(r.1.abs().bits())
}

impl ExprPool {
    /// Adds a node; widths of fields are supplied by the caller through `range`.
    pub fn push(&mut self, expr: Expr, range: Option<(BigInt, BigInt)>) -> ExprId {
        let konst = match &expr {
            Expr::Const(c) => to_bits(c),
            Expr::Bool(b) => *b as u128,
            _ => 0,
        };
        let interp = interp_of(&range);
        let signed_cmp = match &expr {
            Expr::Bin(op, a, b) if op.is_compare() => {
                self.compare_interp(*a, *b) == Some(Interp::Signed)
            }
            _ => false,
        };
        self.nodes.push(Node {
            expr,
            range,
            interp,
            konst,
            signed_cmp,
        });
        self.wide.push(false);
        (self.nodes.len() - 1) as ExprId
    }

    /// Range of a node.
    pub fn range(&self, id: ExprId) -> Option<&(BigInt, BigInt)> {
        self.nodes[id as usize].range.as_ref()
    }

    /// Computes the range of a node from its operands (called by the lowering after it
    /// has pushed the operands).
    pub fn derive_range(&self, expr: &Expr) -> Option<(BigInt, BigInt)> {
        let r = |id: &ExprId| self.nodes[*id as usize].range.clone();
        let boolr = Some((BigInt::zero(), BigInt::one()));
        match expr {
            Expr::Const(c) => Some((c.clone(), c.clone())),
            Expr::Bool(_)
            | Expr::Valid(_)
            | Expr::ValidUnion(_)
            | Expr::HeaderEq(..)
            | Expr::VarbitEq(..) => boolr,
            Expr::Field(_) | Expr::Param(_) | Expr::Lookahead { .. } => None, // set by caller
            Expr::LastStackIndex(_) | Expr::SizeStack(_) => {
                Some((BigInt::from(-1), BigInt::from(1u64 << 32)))
            }
            Expr::Un(op, a) => match op {
                UnOp::Not | UnOp::D2b | UnOp::B2d => boolr,
                UnOp::Neg => r(a).map(|(lo, hi)| (-hi, -lo)),
                UnOp::BitNot => r(a).map(|(lo, hi)| (-hi - 1, -lo - 1)),
            },
            Expr::Bin(op, a, b) => {
                if op.is_compare() || matches!(op, BinOp::LAnd | BinOp::LOr) {
                    return boolr;
                }
                let (ra, rb) = (r(a)?, r(b)?);
                match op {
                    BinOp::Add => Some((&ra.0 + &rb.0, &ra.1 + &rb.1)),
                    BinOp::Sub => Some((&ra.0 - &rb.1, &ra.1 - &rb.0)),
                    BinOp::Mul => {
                        let c = [&ra.0 * &rb.0, &ra.0 * &rb.1, &ra.1 * &rb.0, &ra.1 * &rb.1];
                        let lo = c.iter().min().cloned()?;
                        let hi = c.iter().max().cloned()?;
                        Some((lo, hi))
                    }
                    BinOp::Div => {
                        if ra.0.is_negative() || rb.0.is_negative() {
                            return None;
                        }
                        let d = if rb.0.is_zero() {
                            BigInt::one()
                        } else {
                            rb.0.clone()
                        };
                        Some((BigInt::zero(), &ra.1 / d))
                    }
                    BinOp::Mod => {
                        if ra.0.is_negative() || rb.0.is_negative() {
                            return None;
                        }
                        let m = if rb.1.is_zero() {
                            BigInt::zero()
                        } else {
                            &rb.1 - 1
                        };
                        Some((BigInt::zero(), ra.1.clone().min(m)))
                    }
                    BinOp::Shl => {
                        if rb.0.is_negative() || rb.1 > BigInt::from(4096) {
                            return None;
                        }
                        let s0 = u32::try_from(&rb.0).ok()?;
                        let s1 = u32::try_from(&rb.1).ok()?;
                        let c = [&ra.0 << s0, &ra.0 << s1, &ra.1 << s0, &ra.1 << s1];
                        Some((c.iter().min().cloned()?, c.iter().max().cloned()?))
                    }
                    BinOp::Shr => {
                        if rb.0.is_negative() {
                            return None;
                        }
                        let s0 = u32::try_from(&rb.0).unwrap_or(u32::MAX).min(4096);
                        let s1 = u32::try_from(&rb.1).unwrap_or(u32::MAX).min(4096);
                        // floor division by powers of two is monotonic in the value
                        let lo = (&ra.0 >> s0).min(&ra.0 >> s1);
                        let hi = (&ra.1 >> s0).max(&ra.1 >> s1);
                        Some((lo, hi))
                    }
                    BinOp::And => {
                        let an = !ra.0.is_negative();
                        let bn = !rb.0.is_negative();
                        match (an, bn) {
                            (true, true) => Some((BigInt::zero(), ra.1.clone().min(rb.1.clone()))),
                            (true, false) => Some((BigInt::zero(), ra.1.clone())),
                            (false, true) => Some((BigInt::zero(), rb.1.clone())),
                            (false, false) => {
                                let k = bitlen_abs(&ra).max(bitlen_abs(&rb)) as u32;
                                Some((-pow2(k), pow2(k) - 1))
                            }
                        }
                    }
                    BinOp::Or | BinOp::Xor => {
                        let k = bitlen_abs(&ra).max(bitlen_abs(&rb)) as u32;
                        if !ra.0.is_negative() && !rb.0.is_negative() {
                            Some((BigInt::zero(), pow2(k) - 1))
                        } else {
                            Some((-pow2(k), pow2(k) - 1))
                        }
                    }
                    _ => None,
                }
            }
            Expr::Cond(_, a, b) => {
                let (ra, rb) = (r(a)?, r(b)?);
                Some((
                    ra.0.clone().min(rb.0.clone()),
                    ra.1.clone().max(rb.1.clone()),
                ))
            }
            Expr::TwoCompMod(_, w) | Expr::SatCast(_, w) => {
                if *w == 0 {
                    return Some((BigInt::zero(), BigInt::zero()));
                }
                Some((-pow2(w - 1), pow2(w - 1) - 1))
            }
            Expr::UsatCast(_, w) => Some((BigInt::zero(), pow2(*w) - 1)),
        }
    }

    /// Adds a node whose range is derived from its operands.
    pub fn push_derived(&mut self, expr: Expr) -> ExprId {
        let r = self.derive_range(&expr);
        self.push(expr, r)
    }

    /// Decides the evaluator of a root expression consumed as `usage`.
    pub fn finish_root(&mut self, root: ExprId, usage: Use) {
        let ok = match usage {
            Use::Store(w) if w <= 128 => self.check(root, false),
            Use::Store(_) => false,
            Use::Exact => self.check(root, true),
        };
        self.wide[root as usize] = !ok;
    }

    /// Whether `id` is evaluable in 128 bits when its consumer needs its exact value
    /// (`exact`) or only its low 128 bits.
    fn check(&self, id: ExprId, exact: bool) -> bool {
        let n = &self.nodes[id as usize];
        if exact && n.interp == Interp::Wrapped {
            return false;
        }
        match &n.expr {
            Expr::Const(c) => !exact || c.bits() <= 127 || (!c.is_negative() && c.bits() <= 128),
            Expr::Bool(_) | Expr::Param(_) | Expr::Lookahead { .. } => true,
            Expr::Field(f) => self.check_fref(f),
            Expr::Valid(h) => self.check_href(h),
            Expr::ValidUnion(u) => self.check_uref(u),
            Expr::HeaderEq(a, b) => self.check_href(a) && self.check_href(b),
            Expr::VarbitEq(a, b) => self.check_fref(a) && self.check_fref(b),
            Expr::LastStackIndex(_) | Expr::SizeStack(_) => true,
            Expr::Un(op, a) => match op {
                UnOp::Neg | UnOp::BitNot => self.check(*a, false),
                UnOp::Not | UnOp::D2b | UnOp::B2d => self.check(*a, true),
            },
            Expr::Bin(op, a, b) => match op {
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::And | BinOp::Or | BinOp::Xor => {
                    self.check(*a, false) && self.check(*b, false)
                }
                BinOp::Shl => self.check(*a, false) && self.check(*b, true),
                BinOp::Shr | BinOp::Div | BinOp::Mod => {
                    self.check(*a, true) && self.check(*b, true)
                }
                BinOp::LAnd | BinOp::LOr => self.check(*a, true) && self.check(*b, true),
                BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                    self.compare_interp(*a, *b).is_some()
                        && self.check(*a, true)
                        && self.check(*b, true)
                }
            },
            Expr::Cond(c, a, b) => {
                self.check(*c, true) && self.check(*a, exact) && self.check(*b, exact)
            }
            Expr::TwoCompMod(a, w) => *w <= 128 && self.check(*a, false),
            Expr::SatCast(a, w) | Expr::UsatCast(a, w) => *w <= 128 && self.check(*a, true),
        }
    }

    fn check_fref(&self, f: &FieldRef) -> bool {
        match f {
            FieldRef::Static(_) => true,
            FieldRef::Dyn { header, .. } => self.check_href(header),
        }
    }

    fn check_href(&self, h: &HeaderRef) -> bool {
        match h {
            HeaderRef::Static(_) | HeaderRef::StackLast(_) => true,
            HeaderRef::StackIndex { index, .. } => self.check(*index, true),
            HeaderRef::UnionMember { union, .. } => self.check_uref(union),
        }
    }

    fn check_uref(&self, u: &UnionRef) -> bool {
        match u {
            UnionRef::Static(_) | UnionRef::StackLast(_) => true,
            UnionRef::StackIndex { index, .. } => self.check(*index, true),
        }
    }

    /// Common interpretation of two compared operands, if any.
    pub fn compare_interp(&self, a: ExprId, b: ExprId) -> Option<Interp> {
        let (ra, rb) = (
            self.nodes[a as usize].range.as_ref()?,
            self.nodes[b as usize].range.as_ref()?,
        );
        let union = Some((
            ra.0.clone().min(rb.0.clone()),
            ra.1.clone().max(rb.1.clone()),
        ));
        match interp_of(&union) {
            Interp::Wrapped => None,
            i => Some(i),
        }
    }
}

/// The interpretation a range allows.
pub fn interp_of(range: &Option<(BigInt, BigInt)>) -> Interp {
    let Some((lo, hi)) = range else {
        return Interp::Wrapped;
    };
    if !lo.is_negative() && hi.bits() <= 128 {
        Interp::Unsigned
    } else if lo >= &-pow2(127) && hi < &pow2(127) {
        Interp::Signed
    } else {
        Interp::Wrapped
    }
}

/// Low 128 bits of a big integer in two's complement.
pub fn to_bits(v: &BigInt) -> u128 {
    let m: BigInt = v & (pow2(128) - 1);
    let (_, digits) = m.to_u64_digits();
    let lo = digits.first().copied().unwrap_or(0) as u128;
    let hi = digits.get(1).copied().unwrap_or(0) as u128;
    lo | (hi << 64)
}

/// Range of an unsigned or signed field of `width` bits.
pub fn field_range(width: u32, signed: bool) -> (BigInt, BigInt) {
    if signed && width > 0 {
        (-pow2(width - 1), pow2(width - 1) - 1)
    } else {
        (BigInt::zero(), pow2(width) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_sum_is_narrow() {
        let mut p = ExprPool::default();
        let a = p.push(
            Expr::Field(FieldRef::Static(0)),
            Some(field_range(128, false)),
        );
        let b = p.push_derived(Expr::Const(BigInt::from(1)));
        let s = p.push_derived(Expr::Bin(BinOp::Add, a, b));
        let m = p.push_derived(Expr::Const(pow2(128) - 1));
        let r = p.push_derived(Expr::Bin(BinOp::And, s, m));
        p.finish_root(r, Use::Store(128));
        assert!(!p.wide[r as usize]);
        // comparing the unmasked 129-bit sum needs big integers
        let c = p.push_derived(Expr::Bin(BinOp::Lt, s, a));
        p.finish_root(c, Use::Exact);
        assert!(p.wide[c as usize]);
    }

    #[test]
    fn runtime_shift_then_mask_is_narrow() {
        let mut p = ExprPool::default();
        let x = p.push(
            Expr::Field(FieldRef::Static(0)),
            Some(field_range(8, false)),
        );
        let y = p.push(
            Expr::Field(FieldRef::Static(1)),
            Some(field_range(8, false)),
        );
        let s = p.push_derived(Expr::Bin(BinOp::Shl, x, y));
        let m = p.push_derived(Expr::Const(BigInt::from(255)));
        let r = p.push_derived(Expr::Bin(BinOp::And, s, m));
        assert_eq!(p.nodes[r as usize].interp, Interp::Unsigned);
        p.finish_root(r, Use::Exact);
        assert!(!p.wide[r as usize]);
    }

    #[test]
    fn bits_of_negative() {
        assert_eq!(to_bits(&BigInt::from(-1)), u128::MAX);
        assert_eq!(to_bits(&(pow2(130) + 5)), 5);
    }
}
