//! Action plans: an action's body as operations, one per primitive (so that jumps keep
//! their targets). Assignments from parameters, constants, fields and wrapping
//! expressions are planned (`forward(port)` is a byte copy, `ttl - 1` one 64-bit read,
//! addition and write); anything else is a primitive run by the interpreter. A body of
//! planned assignments only runs as a list of steps, without the interpreter's call,
//! and an empty body or a single parameter copy (`NoAction`, `forward`) has its own form.

use p4jet_ir::expr::{BinOp, FieldRef, HeaderRef};
use p4jet_ir::{FieldLoc, Prim, Program};

use crate::phv::Window64;
use crate::plan::FlatExpr;

/// An `AssignParam` that is a byte copy: (PHV byte, blob offset, bytes).
pub type ParamCopy = (u32, u32, u32);

/// One operation of an action body.
#[derive(Debug, Clone)]
pub enum Op {
    /// A parameter's bytes into a field that owns as many bytes (a parameter no wider;
    /// both loaders store action data masked to the parameter's width): (PHV byte, blob
    /// offset, bytes). Data shorter than that takes the primitive's general code.
    Copy(ParamCopy),
    /// A constant into a field.
    Const(FieldLoc, u128),
    /// One field into another.
    CopyField {
        /// Destination.
        dst: FieldLoc,
        /// Source.
        src: FieldLoc,
    },
    /// A flattened expression into a field of at most 128 bits.
    Expr(FieldLoc, FlatExpr),
    /// `dst = src OP k [OP k]` on fields read and written as 64-bit windows
    /// (`ttl = ttl - 1`): the operations in order, a trailing `& mask` that keeps every
    /// bit of `dst` dropped at load (the write masks).
    FieldOps {
        /// Destination.
        dst: Window64,
        /// Source.
        src: Window64,
        /// The operations (the first `n`).
        ops: [(BinOp, u64); 2],
        /// Operations used.
        n: u8,
    },
    /// [`Op::FieldOps`] of one addition (p4c's `ttl - 1` is `ttl + 0xff`, an
    /// increment `+ 1`): no operation dispatch.
    FieldAdd {
        /// Destination.
        dst: Window64,
        /// Source.
        src: Window64,
        /// The constant added.
        k: u64,
    },
    /// v1model's `mark_to_drop`.
    MarkToDrop,
    /// `add_header` (`setValid`) of a header of fixed length `len` at PHV byte `off`:
    /// when it was invalid, its bytes zeroed, it made valid (a union's other members
    /// invalid) and the packet length register grown by `len`.
    AddHeader {
        /// The header.
        h: u32,
        /// Its PHV offset.
        off: u32,
        /// Its bytes.
        len: u32,
    },
    /// `remove_header` (`setInvalid`) of a header of fixed length `len`: when it was
    /// valid, made invalid and the packet length register shrunk by `len`.
    RemoveHeader {
        /// The header.
        h: u32,
        /// Its bytes.
        len: u32,
    },
    /// The primitive at this index of the body, by the interpreter.
    Prim,
}

impl Op {
    /// Whether a body of such operations runs as a list of steps.
    fn is_step(&self) -> bool {
        matches!(
            self,
            Op::Copy(_) | Op::Const(..) | Op::Expr(..) | Op::FieldOps { .. } | Op::FieldAdd { .. }
        )
    }
}

/// How an action's body runs.
#[derive(Debug, Clone)]
pub enum Form {
    /// An empty body: nothing runs.
    Empty,
    /// One parameter copy (`forward(port)`), done in place.
    Copy(ParamCopy),
    /// Steps only (parameter copies, constants, flattened expressions: `set_next_hop`
    /// with its `ttl - 1`), run as a list when the action data has at least `need`
    /// bytes (else by the interpreter, which handles short data).
    Steps {
        /// Action data bytes the parameter copies read.
        need: usize,
    },
    /// Anything else: the interpreter, operation by operation.
    General,
}

/// One action's plan.
#[derive(Debug, Clone)]
pub struct ActionPlan {
    /// Per primitive of the body, its operation.
    pub ops: Vec<Op>,
    /// How the body runs.
    pub form: Form,
}

/// Per action of `prog`, its plan: every primitive by the interpreter, unless `plan`.
pub(crate) fn actions(prog: &Program, plan: bool) -> Vec<ActionPlan> {
    prog.actions
        .iter()
        .map(|a| {
            if !plan {
                return ActionPlan {
                    ops: vec![Op::Prim; a.body.len()],
                    form: Form::General,
                };
            }
            let ops: Vec<Op> = a.body.iter().map(|prim| op_of(prog, a, prim)).collect();
            let form = match &ops[..] {
                [] => Form::Empty,
                [Op::Copy(c)] => Form::Copy(*c),
                _ if ops.iter().all(Op::is_step) => Form::Steps {
                    need: ops
                        .iter()
                        .map(|op| match op {
                            Op::Copy((_, off, n)) => (*off + *n) as usize,
                            _ => 0,
                        })
                        .max()
                        .unwrap_or(0),
                },
                _ => Form::General,
            };
            ActionPlan { ops, form }
        })
        .collect()
}

/// The planned operation of primitive `prim` of action `a`.
fn op_of(p: &Program, a: &p4jet_ir::Action, prim: &Prim) -> Op {
    let loc_of = |f: u32| p.fields.get(f as usize).map(|f| f.loc);
    match prim {
        Prim::AssignParam { dst, param } => {
            param_copy(p, a, *dst, *param).map_or(Op::Prim, Op::Copy)
        }
        Prim::AssignConst { dst, value } => loc_of(*dst).map_or(Op::Prim, |l| Op::Const(l, *value)),
        Prim::CopyField { dst, src } => match (loc_of(*dst), loc_of(*src)) {
            (Some(dst), Some(src)) if dst.width <= 128 && src.width <= 128 => {
                Op::CopyField { dst, src }
            }
            _ => Op::Prim,
        },
        Prim::Assign {
            dst: FieldRef::Static(f),
            src,
        } => match (loc_of(*f), const_of(p, *src), FlatExpr::of(p, *src)) {
            (Some(loc), Some(k), _) if loc.width <= 128 => Op::Const(loc, k),
            (Some(loc), _, Some(fe)) if loc.width <= 128 => {
                field_ops_step(loc, &fe).unwrap_or(Op::Expr(loc, fe))
            }
            _ => Op::Prim,
        },
        Prim::MarkToDrop => Op::MarkToDrop,
        Prim::AddHeader(HeaderRef::Static(h)) => match p.headers.get(*h as usize) {
            Some(hi) if hi.varbit_slot.is_none() => Op::AddHeader {
                h: *h,
                off: hi.offset,
                len: hi.max_bytes,
            },
            _ => Op::Prim,
        },
        Prim::RemoveHeader(HeaderRef::Static(h)) => match p.headers.get(*h as usize) {
            Some(hi) if hi.varbit_slot.is_none() => Op::RemoveHeader {
                h: *h,
                len: hi.max_bytes,
            },
            _ => Op::Prim,
        },
        _ => Op::Prim,
    }
}

/// The value of expression `id` when it is a constant: a constant, a boolean literal,
/// or one converted between boolean and bit (p4c's `hasReturned = (bit)true`).
fn const_of(p: &Program, id: p4jet_ir::ExprId) -> Option<u128> {
    use p4jet_ir::expr::{Expr, UnOp};
    if p.exprs.wide.get(id as usize).copied().unwrap_or(true) {
        return None;
    }
    let n = p.exprs.nodes.get(id as usize)?;
    match &n.expr {
        Expr::Const(_) => Some(n.konst),
        Expr::Bool(b) => Some(u128::from(*b)),
        Expr::Un(UnOp::B2d, a) => const_of(p, *a),
        Expr::Un(UnOp::D2b, a) => const_of(p, *a).map(|v| u128::from(v != 0)),
        _ => None,
    }
}

/// `dst = param` of action `a` as a byte copy, when the field owns its bytes (zero bits
/// before it) and the blob holds the parameter in as many bytes, masked to its width
/// (both loaders mask): then the copy is the masked write.
fn param_copy(p: &Program, a: &p4jet_ir::Action, dst: u32, param: u32) -> Option<ParamCopy> {
    let loc = p.fields.get(dst as usize)?.loc;
    let pw = a.params.get(param as usize)?.1;
    let off = *a.param_offsets.get(param as usize)?;
    let nb = loc.nbytes as u32;
    (loc.own && nb <= 16 && pw <= loc.width && pw.div_ceil(8) == nb).then_some((loc.byte, off, nb))
}

/// The [`Op::FieldOps`] form of `dst = fe`, when `fe` is one field and at most
/// two constant operations (after dropping a trailing mask that keeps all of `dst`)
/// and both fields have 64-bit windows.
pub(crate) fn field_ops_step(dst: p4jet_ir::FieldLoc, fe: &FlatExpr) -> Option<Op> {
    let (src, mut ops) = fe.field_const_ops()?;
    let (dst, src) = (Window64::new(dst), Window64::new(src));
    if dst.n == 0 || src.n == 0 {
        return None;
    }
    if let Some(&(BinOp::And, k)) = ops.last()
        && u128::from(dst.mask) & !k == 0
    {
        ops.pop();
    }
    if ops.len() > 2 {
        return None;
    }
    if let [(BinOp::Add, k)] = ops[..] {
        return Some(Op::FieldAdd {
            dst,
            src,
            k: k as u64,
        });
    }
    let mut arr = [(BinOp::Or, 0u64); 2];
    for (slot, (op, k)) in arr.iter_mut().zip(&ops) {
        // the low 64 bits of the constant are all that reach a field of at most 64 bits
        *slot = (*op, *k as u64);
    }
    Some(Op::FieldOps {
        dst,
        src,
        ops: arr,
        n: ops.len() as u8,
    })
}
