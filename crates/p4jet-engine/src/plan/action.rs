//! Action plans: what a table hit or miss runs, chosen per action at load. The
//! commonest bodies (nothing: `NoAction`, `permit`; one parameter copied into a field that
//! owns its bytes: `forward(port)`; lists of parameter copies, constant assignments and
//! flattened expressions: `set_next_hop`) run without the action interpreter's call and
//! per-primitive dispatch.

use p4jet_ir::expr::{BinOp, FieldRef};
use p4jet_ir::{Prim, Program};

use crate::phv::Window64;
use crate::plan::FlatExpr;

/// An `AssignParam` that is a byte copy: (PHV byte, blob offset, bytes).
pub(crate) type ParamCopy = Option<(u32, u32, u32)>;

/// What a table hit or miss runs, decided per action at load: the commonest bodies
/// (nothing: `NoAction`, `permit`; one parameter copied into a field that owns its
/// bytes: `forward(port)`) without the action interpreter's call.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    /// An empty body.
    Nothing,
    /// One `AssignParam` that is a byte copy (see `Plan::param_copies`).
    ParamCopy((u32, u32, u32)),
    /// A body of parameter copies, constant assignments and flattened expressions
    /// only (`set_next_hop(hop, port)` with its `ttl - 1`), run as a list when the
    /// action data has at least `need` bytes (else `Engine::run_action`, which
    /// handles short data).
    Steps { steps: Box<[Step]>, need: usize },
    /// Anything else: `Engine::run_action`.
    Run,
}

/// One primitive of a [`Action::Steps`] body.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// A parameter's bytes into a field that owns its bytes (`Plan::param_copies`).
    Copy((u32, u32, u32)),
    /// A constant into a field.
    Const(p4jet_ir::FieldLoc, u128),
    /// A flattened expression into a field of at most 128 bits.
    Expr(p4jet_ir::FieldLoc, FlatExpr),
    /// `dst = src OP k [OP k]` on fields read and written as 64-bit windows
    /// (`ttl = ttl - 1`): the operations in order, a trailing `& mask` that keeps every
    /// bit of `dst` dropped at load (the write masks).
    FieldOps {
        dst: Window64,
        src: Window64,
        ops: [(BinOp, u64); 2],
        n: u8,
    },
    /// [`Step::FieldOps`] of one addition (p4c's `ttl - 1` is `ttl + 0xff`, an
    /// increment `+ 1`): no operation dispatch.
    FieldAdd {
        dst: Window64,
        src: Window64,
        k: u64,
    },
}

/// The [`Step::FieldOps`] form of `dst = fe`, when `fe` is one field and at most
/// two constant operations (after dropping a trailing mask that keeps all of `dst`)
/// and both fields have 64-bit windows.
pub(crate) fn field_ops_step(dst: p4jet_ir::FieldLoc, fe: &FlatExpr) -> Option<Step> {
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
        return Some(Step::FieldAdd {
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
    Some(Step::FieldOps {
        dst,
        src,
        ops: arr,
        n: ops.len() as u8,
    })
}

/// The [`Action::Steps`] form of action `a`, or [`Action::Run`] when a
/// primitive is not a parameter copy, a constant assignment or a flattened expression
/// assigned to a static field of at most 128 bits.
fn steps_of(
    p: &Program,
    a: &p4jet_ir::Action,
    copies: &[ParamCopy],
    exprs: &[Option<FlatExpr>],
) -> Action {
    let mut steps = Vec::with_capacity(a.body.len());
    let mut need = 0usize;
    for (pc, prim) in a.body.iter().enumerate() {
        let loc_of = |f: u32| p.fields.get(f as usize).map(|f| f.loc);
        let step = match prim {
            Prim::AssignParam { .. } => match copies.get(pc) {
                Some(Some(c)) => {
                    need = need.max(c.1 as usize + c.2 as usize);
                    Step::Copy(*c)
                }
                _ => return Action::Run,
            },
            Prim::AssignConst { dst, value } => match loc_of(*dst) {
                Some(loc) => Step::Const(loc, *value),
                None => return Action::Run,
            },
            Prim::Assign {
                dst: FieldRef::Static(f),
                src,
            } => match (loc_of(*f), exprs.get(*src as usize)) {
                (Some(loc), Some(Some(fe))) if loc.width <= 128 => {
                    field_ops_step(loc, fe).unwrap_or_else(|| Step::Expr(loc, fe.clone()))
                }
                _ => return Action::Run,
            },
            _ => return Action::Run,
        };
        steps.push(step);
    }
    Action::Steps {
        steps: steps.into_boxed_slice(),
        need,
    }
}

/// Per action and primitive of `prog`: an `AssignParam` that is a plain byte copy (a
/// field owning its bytes, a parameter no wider in as many bytes), as (PHV byte, blob
/// offset, bytes).
pub(crate) fn param_copies(prog: &Program) -> Vec<Vec<ParamCopy>> {
    prog.actions
        .iter()
        .map(|a| {
            a.body
                .iter()
                .map(|prim| {
                    let Prim::AssignParam { dst, param } = prim else {
                        return None;
                    };
                    let loc = prog.fields.get(*dst as usize)?.loc;
                    let pw = a.params.get(*param as usize)?.1;
                    let off = *a.param_offsets.get(*param as usize)?;
                    // the field owns its bytes (zero bits before it) and the blob
                    // holds the parameter in as many bytes, masked to its width
                    // (both loaders mask): a byte copy is the masked write
                    let nb = loc.nbytes as u32;
                    (loc.own && nb <= 16 && pw <= loc.width && pw.div_ceil(8) == nb)
                        .then_some((loc.byte, off, nb))
                })
                .collect()
        })
        .collect()
}

/// Per action of `prog`, its plan.
pub(crate) fn actions(
    prog: &Program,
    copies: &[Vec<ParamCopy>],
    exprs: &[Option<FlatExpr>],
) -> Vec<Action> {
    prog.actions
        .iter()
        .zip(copies)
        .map(
            |(a, copies): (&p4jet_ir::Action, &Vec<ParamCopy>)| match (&a.body[..], &copies[..]) {
                ([], _) => Action::Nothing,
                ([Prim::AssignParam { .. }], [Some(copy)]) => Action::ParamCopy(*copy),
                _ => steps_of(prog, a, copies, exprs),
            },
        )
        .collect()
}
