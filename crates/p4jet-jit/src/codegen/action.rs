//! Action bodies as native code, inlined where a table or a call node runs them:
//! parameter copies (bounds-checked against the action data's length), constants,
//! field copies, field operation chains and flattened expressions in 64-bit
//! arithmetic, `mark_to_drop`, jumps and `exit`; other primitives (externs, header
//! operations, wide fields) are calls to the primitive interpreter.

use cranelift_codegen::ir::{Block, InstBuilder, Value, types};
use cranelift_frontend::Variable;
use p4jet_engine::plan::action::{Form, Op};
use p4jet_engine::plan::cond::Cond;
use p4jet_engine::plan::expr::FlatOp;
use p4jet_ir::expr::HeaderRef;
use p4jet_ir::expr::{BinOp, UnOp};
use p4jet_ir::{FieldLoc, Prim};

use super::checksum::cond_inline;
use super::hash::hash_prim;
use super::{Gen, H, mask64};

/// A packet inside a control: its lane and PHV pointers.
#[derive(Clone, Copy)]
pub(crate) struct Px {
    /// The lane (for helpers).
    pub lane: Value,
    /// PHV bytes.
    pub phv: Value,
    /// Validity bytes.
    pub valid: Value,
}

/// Whether action `a`'s body jumps backward (then the interpreter, with its loop
/// guard, runs it).
fn jumps_back(body: &[Prim]) -> bool {
    body.iter().enumerate().any(|(pc, p)| match p {
        Prim::Jump(t) | Prim::JumpIfZero(_, t) => (*t as usize) <= pc,
        _ => false,
    })
}

/// Whether the code [`emit`] makes of action `a` reads its action data or its length
/// (else they may be any value).
pub(crate) fn reads_data(e: &p4jet_engine::Engine, a: u32) -> bool {
    let Some(ap) = e.plan().actions.get(a as usize) else {
        return false;
    };
    // operations that name no parameter (run inline, or by the interpreter's
    // primitive, which then reads no data either); anything else may
    !ap.ops.iter().all(|op| {
        matches!(
            op,
            Op::Const(..)
                | Op::CopyField { .. }
                | Op::FieldOps { .. }
                | Op::FieldAdd { .. }
                | Op::MarkToDrop
                | Op::AddHeader { .. }
                | Op::RemoveHeader { .. }
        )
    })
}

/// Emits action `a` with action data `data` (`len` bytes) for packet `px`; returns its
/// exit flag (0 or 1).
pub(crate) fn emit(g: &mut Gen, a: u32, px: Px, data: Value, len: Value) -> Value {
    let plan = g.e.plan();
    let (Some(ap), Some(ir)) = (
        plan.actions.get(a as usize),
        g.e.prog.actions.get(a as usize),
    ) else {
        return g.k(0);
    };
    let exit = g.var(0);
    let end = g.b.create_block();
    match ap.form {
        Form::Empty => {
            g.b.ins().jump(end, &[]);
        }
        Form::Copy(c) => {
            let fast = g.b.create_block();
            let slow = g.b.create_block();
            let need = g.k(u64::from(c.1 + c.2));
            g.if_lt(len, need, slow, fast);
            g.b.switch_to_block(fast);
            g.copy(px.phv, c.0 as i32, data, c.1 as i32, c.2);
            g.b.ins().jump(end, &[]);
            g.b.switch_to_block(slow);
            run_action(g, a, px, data, len, exit);
            g.b.ins().jump(end, &[]);
        }
        Form::Steps { need } => {
            let fast = g.b.create_block();
            let slow = g.b.create_block();
            if need == 0 {
                // no data to check (`reads_data`): the slow path is never taken
                g.b.ins().jump(fast, &[]);
            } else {
                let need = g.k(need as u64);
                g.if_lt(len, need, slow, fast);
            }
            g.b.switch_to_block(fast);
            let mut merged = 0;
            for (pc, op) in ap.ops.iter().enumerate() {
                if merged > 0 {
                    // copied with an earlier one
                    merged -= 1;
                    continue;
                }
                if let Op::Copy((dst, src, n)) = *op {
                    // the data's length was checked for every copy, and copies that
                    // continue each other in the PHV and in the data are one copy
                    let mut len_all = n;
                    for next in &ap.ops[pc + 1..] {
                        match *next {
                            Op::Copy((d, s, m)) if d == dst + len_all && s == src + len_all => {
                                len_all += m;
                                merged += 1;
                            }
                            _ => break,
                        }
                    }
                    g.copy(px.phv, dst as i32, data, src as i32, len_all);
                    continue;
                }
                let next = g.b.create_block();
                let cx = Cx {
                    a,
                    px,
                    data,
                    len,
                    exit,
                    end,
                    next,
                    blocks: &[],
                };
                emit_op(g, pc, op, &cx);
                g.b.switch_to_block(next);
            }
            g.b.ins().jump(end, &[]);
            g.b.switch_to_block(slow);
            run_action(g, a, px, data, len, exit);
            g.b.ins().jump(end, &[]);
        }
        Form::General if jumps_back(&ir.body) => {
            run_action(g, a, px, data, len, exit);
            g.b.ins().jump(end, &[]);
        }
        Form::General => {
            let blocks: Vec<Block> = (0..ap.ops.len()).map(|_| g.b.create_block()).collect();
            let at = |pc: usize| blocks.get(pc).copied().unwrap_or(end);
            g.b.ins().jump(at(0), &[]);
            for (pc, op) in ap.ops.iter().enumerate() {
                g.b.switch_to_block(blocks[pc]);
                let cx = Cx {
                    a,
                    px,
                    data,
                    len,
                    exit,
                    end,
                    next: at(pc + 1),
                    blocks: &blocks,
                };
                emit_op(g, pc, op, &cx);
            }
        }
    }
    g.b.switch_to_block(end);
    g.b.use_var(exit)
}

/// The whole action by the interpreter.
fn run_action(g: &mut Gen, a: u32, px: Px, data: Value, len: Value, exit: Variable) {
    let env = g.env;
    let ak = g.k32(a);
    let r = g
        .call(H::RunAction, &[env, px.lane, ak, data, len])
        .unwrap_or(ak);
    let r = g.b.ins().uextend(types::I64, r);
    g.b.def_var(exit, r);
}

/// Where one operation of an action is emitted.
struct Cx<'b> {
    a: u32,
    px: Px,
    data: Value,
    len: Value,
    exit: Variable,
    /// The action's end.
    end: Block,
    /// The next operation's block.
    next: Block,
    /// Every operation's block (jump targets; empty when the body has no jumps).
    blocks: &'b [Block],
}

impl Cx<'_> {
    /// The block of primitive `t` (past the body: the end).
    fn target(&self, t: u32) -> Block {
        self.blocks.get(t as usize).copied().unwrap_or(self.end)
    }
}

/// Primitive `pc` by the interpreter; on exit to `end`, else to `next`.
fn prim(g: &mut Gen, pc: usize, cx: &Cx) {
    let env = g.env;
    let ak = g.k32(cx.a);
    let pk = g.k32(pc as u32);
    let r = g
        .call(H::Prim, &[env, cx.px.lane, ak, pk, cx.data, cx.len])
        .unwrap_or(ak);
    let r = g.b.ins().uextend(types::I64, r);
    g.b.def_var(cx.exit, r);
    g.b.ins().brif(r, cx.end, &[], cx.next, &[]);
}

/// Branches to `slow` when the action data is shorter than `need` bytes, else continues
/// in a new block.
fn data_at_least(g: &mut Gen, cx: &Cx, need: u32, slow: Block) {
    let fast = g.b.create_block();
    let n = g.k(u64::from(need));
    g.if_lt(cx.len, n, slow, fast);
    g.b.switch_to_block(fast);
}

/// One operation, ending with a jump to `cx.next` (or `cx.end` on exit).
fn emit_op(g: &mut Gen, pc: usize, op: &Op, cx: &Cx) {
    let prog = &*g.e.prog;
    let (phv, next) = (cx.px.phv, cx.next);
    match op {
        Op::Copy((dst, src, n)) => {
            let slow = g.b.create_block();
            data_at_least(g, cx, src + n, slow);
            g.copy(phv, *dst as i32, cx.data, *src as i32, *n);
            g.b.ins().jump(next, &[]);
            g.b.switch_to_block(slow);
            prim(g, pc, cx);
        }
        Op::Const(loc, v) => {
            let k = g.k(*v as u64);
            if loc.width > 64 || !g.write_field(phv, *loc, k) {
                prim(g, pc, cx);
            } else {
                g.b.ins().jump(next, &[]);
            }
        }
        Op::CopyField { dst, src } => {
            let ok = dst.width <= 64 && dst.nbytes <= 8;
            match ok.then(|| read_signed(g, phv, *src)).flatten() {
                Some(v) => {
                    g.write_field(phv, *dst, v);
                    g.b.ins().jump(next, &[]);
                }
                None => prim(g, pc, cx),
            }
        }
        Op::Expr(loc, fe) => {
            let ir = &prog.actions[cx.a as usize];
            if !flat_compiles(ir, &fe.ops, *loc) {
                return prim(g, pc, cx);
            }
            let slow = g.b.create_block();
            let need = params_needed(ir, &fe.ops);
            if need > 0 {
                data_at_least(g, cx, need, slow);
            }
            match flat(g, ir, &fe.ops, phv, cx.data) {
                Some(v) => {
                    g.write_field(phv, *loc, v);
                    g.b.ins().jump(next, &[]);
                }
                None => {
                    g.b.ins().jump(slow, &[]);
                }
            }
            g.b.switch_to_block(slow);
            prim(g, pc, cx);
        }
        Op::FieldOps { dst, src, ops, n } => match g.read64(phv, *src) {
            Some(mut v) => {
                for &(o, k) in &ops[..*n as usize] {
                    let kv = g.k(k);
                    v = bin(g, o, v, kv);
                }
                g.write64(phv, *dst, v);
                g.b.ins().jump(next, &[]);
            }
            None => prim(g, pc, cx),
        },
        Op::FieldAdd { dst, src, k } => match g.read64(phv, *src) {
            Some(v) => {
                let v = g.b.ins().iadd_imm_s(v, *k as i64);
                g.write64(phv, *dst, v);
                g.b.ins().jump(next, &[]);
            }
            None => prim(g, pc, cx),
        },
        Op::MarkToDrop => {
            let sm = g.e.std_meta;
            let drop = g.k(u64::from(g.e.cfg.drop_port));
            if let Some(w) = sm.egress_spec {
                g.write64(phv, w, drop);
            }
            if let Some(w) = sm.mcast_grp {
                let z = g.k(0);
                g.write64(phv, w, z);
            }
            g.b.ins().jump(next, &[]);
        }
        Op::AddHeader { h, off: hoff, len } => {
            add_header(g, cx.px, *h, *hoff, *len, next);
        }
        Op::RemoveHeader { h, len } => {
            let was = g.valid(cx.px.valid, *h);
            let remove = g.b.create_block();
            g.b.ins().brif(was, remove, &[], next, &[]);
            g.b.switch_to_block(remove);
            g.set_valid(cx.px.valid, *h, false);
            let ctxp = g.lane_ptr(cx.px.lane, crate::abi::off::LANE_CTX);
            let lr =
                g.b.ins()
                    .load(types::I64, super::mem(), ctxp, crate::abi::ctx::LENGTH_REG);
            let lr = g.b.ins().iadd_imm_s(lr, -i64::from(*len));
            g.b.ins()
                .store(super::mem(), lr, ctxp, crate::abi::ctx::LENGTH_REG);
            g.b.ins().jump(next, &[]);
        }
        Op::Prim => {
            let body = &prog.actions[cx.a as usize].body;
            if let Some(h) = body.get(pc).and_then(|p| hash_prim(prog, p)) {
                // compiled when every header of its input is valid
                let ok = g.all_valid(cx.px.valid, &h.input.headers);
                let fast = g.b.create_block();
                let slow = g.b.create_block();
                g.b.ins().brif(ok, fast, &[], slow, &[]);
                g.b.switch_to_block(fast);
                g.hash_prim(phv, &h);
                g.b.ins().jump(next, &[]);
                g.b.switch_to_block(slow);
                return prim(g, pc, cx);
            }
            match body.get(pc) {
                Some(Prim::Jump(t)) => {
                    g.b.ins().jump(cx.target(*t), &[]);
                }
                Some(Prim::JumpIfZero(c, t)) => {
                    let v = match Cond::of(prog, *c).filter(cond_inline) {
                        Some(fc) => g.cond(phv, cx.px.valid, cx.px.lane, &fc, None),
                        None => {
                            let env = g.env;
                            let e = g.k32(*c);
                            let r = g.call(H::Test, &[env, cx.px.lane, e]).unwrap_or(e);
                            g.b.ins().uextend(types::I64, r)
                        }
                    };
                    g.b.ins().brif(v, next, &[], cx.target(*t), &[]);
                }
                Some(Prim::AssignHeader {
                    dst: HeaderRef::Static(d),
                    src: HeaderRef::Static(sh),
                }) if header_copy(prog, *d, *sh).is_some() => {
                    let (doff, soff, n) = header_copy(prog, *d, *sh).unwrap_or_default();
                    // the bytes, then the source's validity (`Engine::copy_header`)
                    g.copy(phv, doff as i32, phv, soff as i32, n);
                    let was = g.valid(cx.px.valid, *sh);
                    let on = g.b.create_block();
                    let off = g.b.create_block();
                    g.b.ins().brif(was, on, &[], off, &[]);
                    g.b.switch_to_block(on);
                    if let Some((u, _)) = prog.headers.get(*d as usize).and_then(|hi| hi.union) {
                        for m in &prog.unions[u as usize].headers {
                            g.set_valid(cx.px.valid, *m, false);
                        }
                    }
                    g.set_valid(cx.px.valid, *d, true);
                    g.b.ins().jump(next, &[]);
                    g.b.switch_to_block(off);
                    g.set_valid(cx.px.valid, *d, false);
                    g.b.ins().jump(next, &[]);
                }
                Some(Prim::Exit) => {
                    let one = g.k(1);
                    g.b.def_var(cx.exit, one);
                    g.b.ins().jump(cx.end, &[]);
                }
                _ => prim(g, pc, cx),
            }
        }
    }
}

/// `dst = src` of two different fixed headers whose bytes do not overlap: (PHV offset
/// of `dst`, of `src`, bytes copied).
fn header_copy(p: &p4jet_ir::Program, dst: u32, src: u32) -> Option<(u32, u32, u32)> {
    let (d, s) = (p.headers.get(dst as usize)?, p.headers.get(src as usize)?);
    let n = d.max_bytes.min(s.max_bytes);
    let apart = d.offset + n <= s.offset || s.offset + n <= d.offset;
    (dst != src && d.varbit_slot.is_none() && s.varbit_slot.is_none() && apart && n > 0)
        .then_some((d.offset, s.offset, n))
}

/// `add_header` of fixed header `h` (`len` bytes at PHV offset `hoff`) for packet `px`,
/// then a jump to `next`: when it is invalid, its bytes zeroed, made valid (its union's
/// other members invalid) and the length register grown by its size.
pub(crate) fn add_header(g: &mut Gen, px: Px, h: u32, hoff: u32, len: u32, next: Block) {
    let prog = &*g.e.prog;
    let phv = px.phv;
    let was = g.valid(px.valid, h);
    let add = g.b.create_block();
    g.b.ins().brif(was, next, &[], add, &[]);
    g.b.switch_to_block(add);
    // zeroed: 8-byte stores, the last one ending at the header's end (the header lies
    // inside the PHV; shorter ones byte by byte)
    let z = g.k(0);
    let z8 = g.b.ins().iconst(types::I8, 0);
    if len >= 8 {
        let mut o = 0;
        while o + 8 <= len {
            g.b.ins().store(super::mem(), z, phv, (hoff + o) as i32);
            o += 8;
        }
        if o < len {
            g.b.ins()
                .store(super::mem(), z, phv, (hoff + len - 8) as i32);
        }
    } else {
        for o in 0..len {
            g.b.ins().store(super::mem(), z8, phv, (hoff + o) as i32);
        }
    }
    if let Some((u, _)) = prog.headers.get(h as usize).and_then(|hi| hi.union) {
        for m in &prog.unions[u as usize].headers {
            g.set_valid(px.valid, *m, false);
        }
    }
    g.set_valid(px.valid, h, true);
    let ctxp = g.lane_ptr(px.lane, crate::abi::off::LANE_CTX);
    let lr =
        g.b.ins()
            .load(types::I64, super::mem(), ctxp, crate::abi::ctx::LENGTH_REG);
    let lr = g.b.ins().iadd_imm_s(lr, i64::from(len));
    g.b.ins()
        .store(super::mem(), lr, ctxp, crate::abi::ctx::LENGTH_REG);
    g.b.ins().jump(next, &[]);
}

/// A field's value sign-extended to 64 bits when the field is signed (`Phv::read`).
fn read_signed(g: &mut Gen, phv: Value, loc: FieldLoc) -> Option<Value> {
    let v = g.read_field(phv, loc)?;
    if loc.signed && loc.width < 64 && loc.width > 0 {
        let s = i64::from(64 - loc.width);
        let v = g.b.ins().ishl_imm_s(v, s);
        Some(g.b.ins().sshr_imm_s(v, s))
    } else {
        Some(v)
    }
}

/// `a OP b` for the wrapping operations of plans (any other operator: `a ^ b`, as the
/// interpreter's `bin`).
fn bin(g: &mut Gen, op: BinOp, x: Value, y: Value) -> Value {
    match op {
        BinOp::Add => g.b.ins().iadd(x, y),
        BinOp::Sub => g.b.ins().isub(x, y),
        BinOp::Mul => g.b.ins().imul(x, y),
        BinOp::And => g.b.ins().band(x, y),
        BinOp::Or => g.b.ins().bor(x, y),
        _ => g.b.ins().bxor(x, y),
    }
}

/// Whether a flattened expression into `dst` compiles: `dst` and its fields read and
/// written in 64 bits, its parameters at most 16 bytes.
fn flat_compiles(a: &p4jet_ir::Action, ops: &[FlatOp], dst: FieldLoc) -> bool {
    dst.width <= 64
        && (1..=8).contains(&dst.nbytes)
        && ops.iter().all(|op| match op {
            FlatOp::Field(loc) => loc.width <= 64 && (1..=8).contains(&loc.nbytes),
            FlatOp::Param(i) => {
                a.params
                    .get(*i as usize)
                    .is_some_and(|p| (1..=16).contains(&p.1.div_ceil(8)))
                    && a.param_offsets.get(*i as usize).is_some()
            }
            _ => true,
        })
}

/// A flattened expression's low 64 bits (all a destination of at most 64 bits keeps:
/// the operations wrap); the action data holds its parameters (checked by the caller).
fn flat(
    g: &mut Gen,
    a: &p4jet_ir::Action,
    ops: &[FlatOp],
    phv: Value,
    data: Value,
) -> Option<Value> {
    let mut st: Vec<Value> = Vec::with_capacity(8);
    for op in ops {
        match *op {
            FlatOp::Const(k) => {
                let v = g.k(k as u64);
                st.push(v);
            }
            FlatOp::Field(loc) => {
                let v = g.read_field(phv, loc)?;
                st.push(v);
            }
            FlatOp::Param(i) => {
                let off = *a.param_offsets.get(i as usize)?;
                let w = a.params.get(i as usize)?.1;
                let nb = w.div_ceil(8);
                let v = if nb <= 8 {
                    g.load_be(data, off as i32, nb)
                } else {
                    g.load_be(data, (off + nb - 8) as i32, 8)
                };
                let v = if w < 64 {
                    g.b.ins().band_imm_s(v, mask64(w) as i64)
                } else {
                    v
                };
                st.push(v);
            }
            FlatOp::Bin(o) => {
                let y = st.pop()?;
                let x = st.pop()?;
                let r = bin(g, o, x, y);
                st.push(r);
            }
            FlatOp::BinK(o, k) => {
                let x = st.pop()?;
                let kv = g.k(k as u64);
                let r = bin(g, o, x, kv);
                st.push(r);
            }
            FlatOp::Un(u) => {
                let x = st.pop()?;
                let r = match u {
                    UnOp::Neg => g.b.ins().ineg(x),
                    _ => g.b.ins().bnot(x),
                };
                st.push(r);
            }
        }
    }
    st.pop()
}

/// The action data bytes a flattened expression's parameters need.
fn params_needed(a: &p4jet_ir::Action, ops: &[FlatOp]) -> u32 {
    ops.iter()
        .filter_map(|op| match op {
            FlatOp::Param(i) => {
                let off = *a.param_offsets.get(*i as usize)?;
                let w = a.params.get(*i as usize)?.1;
                Some(off + w.div_ceil(8))
            }
            _ => None,
        })
        .max()
        .unwrap_or(0)
}
