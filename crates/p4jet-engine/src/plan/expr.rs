//! Flattened expressions: an assignment source of wrapping operations on unsigned
//! fields, constants and action parameters in postfix form, evaluated on a small fixed
//! stack.

use p4jet_ir::Program;
use p4jet_ir::expr::{BinOp, Expr, ExprId, FieldRef, UnOp};

use crate::eval::{EvalCtx, bin, param};

/// Deepest operand stack a [`FlatExpr`] may need.
const FLAT_STACK: usize = 8;

/// [`bin`] on 64-bit values: the low 64 bits of [`bin`]'s result (for the wrapping
/// operations a [`FlatExpr`] admits, the result's low bits depend only on the operands'
/// low bits, so the compiler emits 64-bit operations).
#[inline(always)]
pub(crate) fn bin64(op: BinOp, x: u64, y: u64) -> u64 {
    bin(op, u128::from(x), u128::from(y)) as u64
}

/// An expression of wrapping 128-bit operations on unsigned fields, constants and action
/// parameters (`ttl - 1` arrives from p4c as `(ttl + 0xff) & 0xff`), flattened at load
/// into postfix form and evaluated on a small fixed stack: the same bits as [`crate::eval::eval`]
/// without the recursive walk.
#[derive(Debug, Clone)]
pub struct FlatExpr {
    /// The operations in postfix order.
    pub ops: Vec<FlatOp>,
}

/// One operation of a [`FlatExpr`].
#[derive(Debug, Clone, Copy)]
pub enum FlatOp {
    /// Push a constant.
    Const(u128),
    /// Push an unsigned field's bits.
    Field(p4jet_ir::FieldLoc),
    /// Push action parameter `i`.
    Param(u32),
    /// Pop two, push `a OP b` (`+ - * & | ^`, wrapping).
    Bin(BinOp),
    /// `Bin` whose right operand is a constant (`Const(k), Bin(op)` fused at load).
    BinK(BinOp, u128),
    /// Replace the top with `-a` or `!a`.
    Un(UnOp),
}

impl FlatExpr {
    /// Flattens root `id`; `None` when it is wide, too deep, or uses anything else.
    pub fn of(p: &Program, id: ExprId) -> Option<FlatExpr> {
        if p.exprs.wide.get(id as usize).copied().unwrap_or(true) {
            return None;
        }
        let mut ops = Vec::new();
        let depth = Self::emit(p, id, &mut ops)?;
        if depth > FLAT_STACK || ops.len() <= 1 {
            return None;
        }
        // a constant right operand is applied to the top of the stack, not pushed
        let mut fused: Vec<FlatOp> = Vec::with_capacity(ops.len());
        for op in ops {
            match (op, fused.last()) {
                (FlatOp::Bin(b), Some(&FlatOp::Const(k))) => {
                    fused.pop();
                    fused.push(FlatOp::BinK(b, k));
                }
                _ => fused.push(op),
            }
        }
        Some(FlatExpr { ops: fused })
    }

    /// Emits `id` in postfix order; returns the stack depth it needs.
    fn emit(p: &Program, id: ExprId, ops: &mut Vec<FlatOp>) -> Option<usize> {
        let n = p.exprs.nodes.get(id as usize)?;
        match &n.expr {
            Expr::Const(_) => {
                ops.push(FlatOp::Const(n.konst));
                Some(1)
            }
            Expr::Field(FieldRef::Static(f)) => {
                let loc = p.fields.get(*f as usize)?.loc;
                if loc.signed || loc.width > 128 {
                    return None;
                }
                ops.push(FlatOp::Field(loc));
                Some(1)
            }
            Expr::Param(i) => {
                ops.push(FlatOp::Param(*i));
                Some(1)
            }
            Expr::Un(op @ (UnOp::BitNot | UnOp::Neg), a) => {
                let d = Self::emit(p, *a, ops)?;
                ops.push(FlatOp::Un(*op));
                Some(d)
            }
            Expr::Bin(
                op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::And | BinOp::Or | BinOp::Xor),
                a,
                b,
            ) => {
                let da = Self::emit(p, *a, ops)?;
                let db = Self::emit(p, *b, ops)?;
                ops.push(FlatOp::Bin(*op));
                Some(da.max(db + 1))
            }
            _ => None,
        }
    }

    /// The expression as one field followed by operations with constant right operands
    /// (`(ttl + 0xff) & 0xff`): the field and the operations, or None for any other shape.
    pub fn field_const_ops(&self) -> Option<(p4jet_ir::FieldLoc, Vec<(BinOp, u128)>)> {
        let (FlatOp::Field(loc), rest) = self.ops.split_first()? else {
            return None;
        };
        let ops = rest
            .iter()
            .map(|op| match *op {
                FlatOp::BinK(b, k) => Some((b, k)),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some((*loc, ops))
    }

    /// `loc OP k OP k ...` (for tests of forms built from this shape).
    #[cfg(test)]
    pub(crate) fn of_field_ops(loc: p4jet_ir::FieldLoc, ops: &[(BinOp, u128)]) -> FlatExpr {
        let mut v = vec![FlatOp::Field(loc)];
        v.extend(ops.iter().map(|&(b, k)| FlatOp::BinK(b, k)));
        FlatExpr { ops: v }
    }

    /// The expression's 128-bit pattern (what [`eval_bits`] returns).
    pub fn eval(&self, c: &EvalCtx) -> u128 {
        let mut st = [0u128; FLAT_STACK];
        let mut sp = 0usize;
        for op in &self.ops {
            match *op {
                FlatOp::Const(k) => {
                    st[sp] = k;
                    sp += 1;
                }
                FlatOp::Field(loc) => {
                    st[sp] = c.phv.read_raw(loc);
                    sp += 1;
                }
                FlatOp::Param(i) => {
                    st[sp] = param(c, i);
                    sp += 1;
                }
                FlatOp::Un(op) => {
                    let v = st[sp - 1];
                    st[sp - 1] = match op {
                        UnOp::Neg => v.wrapping_neg(),
                        _ => !v,
                    };
                }
                FlatOp::Bin(op) => {
                    sp -= 1;
                    st[sp - 1] = bin(op, st[sp - 1], st[sp]);
                }
                FlatOp::BinK(op, k) => st[sp - 1] = bin(op, st[sp - 1], k),
            }
        }
        st[0]
    }
}
