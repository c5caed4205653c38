//! Actions: a table's action through its plan ([`crate::plan::action`]: nothing, a
//! parameter copy, a list of steps) or the primitive interpreter, which runs any body
//! (externs, header operations, jumps) by reading the lowered program.

use num_bigint::{BigInt, BigUint, Sign};
use p4jet_ir::expr::{BinOp, FieldRef};
use p4jet_ir::{ActionCall, Prim};

use crate::copy::copy_short;
use crate::eval::{
    self, EvalCtx, eval_bits, eval_bool, eval_exact, eval_index, resolve_field, resolve_header,
};
use crate::packet::{level, trace_line};
use crate::phv::{Phv, Window64};
use crate::plan::action::Op;
use crate::state::{ControlState, Externs};
use crate::{Engine, PacketCtx, Scratch, header_bytes, plan};

/// Copies an action parameter's bytes into the PHV (a `ParamCopy`); false when the
/// action data is too short for it (the caller then runs the general code).
#[inline(always)]
pub(crate) fn copy_param(phv: &mut Phv, data: &[u8], (dst, src, n): (u32, u32, u32)) -> bool {
    let (dst, src, n) = (dst as usize, src as usize, n as usize);
    match data.get(src..src + n) {
        Some(from) => {
            copy_short(&mut phv.data[dst..dst + n], from);
            true
        }
        None => false,
    }
}

/// Runs a [`plan::action::Step::FieldOps`].
#[inline(always)]
fn field_ops(phv: &mut Phv, dst: Window64, src: Window64, ops: &[(BinOp, u64)]) {
    let mut v = phv.read64(src);
    for &(op, k) in ops {
        v = plan::expr::bin64(op, v, k);
    }
    phv.write64(dst, v);
}

/// Runs a [`plan::action::Step::FieldAdd`].
#[inline(always)]
fn field_add(phv: &mut Phv, dst: Window64, src: Window64, k: u64) {
    let v = phv.read64(src).wrapping_add(k);
    phv.write64(dst, v);
}

/// `loc = fe` in action `a` with action data `data` (`loc` of at most 128 bits).
#[inline(always)]
fn assign_flat(
    ctx: &mut PacketCtx,
    loc: p4jet_ir::FieldLoc,
    fe: &plan::FlatExpr,
    a: &p4jet_ir::Action,
    data: &[u8],
) {
    let v = fe.eval(&EvalCtx {
        phv: &ctx.phv,
        ahead: &[],
        action: Some((a, data)),
    });
    ctx.phv.write(loc, v);
}

impl Engine {
    pub(crate) fn write_bits(&self, phv: &mut Phv, fid: u32, v: u128) {
        let loc = self.prog.fields[fid as usize].loc;
        if loc.width <= 128 {
            phv.write(loc, v);
        } else {
            // sign-extend the 128-bit pattern? values reaching here are exact and narrow
            phv.write_big(loc, &BigUint::from(v));
        }
    }

    pub(crate) fn write_exact(&self, phv: &mut Phv, fid: u32, v: &BigInt) {
        let loc = self.prog.fields[fid as usize].loc;
        if loc.width <= 128 {
            phv.write(loc, p4jet_ir::expr::to_bits(v));
        } else {
            let m = BigInt::from(1) << loc.width;
            let mut r = v % &m;
            if r.sign() == Sign::Minus {
                r += &m;
            }
            phv.write_big(loc, &r.to_biguint().unwrap_or_default());
        }
    }

    /// Evaluates `src` and stores it into `dst` with bmv2's truncation.
    pub(crate) fn assign(
        &self,
        ctx: &mut PacketCtx,
        dst: &FieldRef,
        src: u32,
        action: Option<(&p4jet_ir::Action, &[u8])>,
        ahead: &[u8],
    ) {
        let p = &*self.prog;
        let ec = EvalCtx {
            phv: &ctx.phv,
            ahead,
            action,
        };
        let Some(fid) = resolve_field(p, &ec, dst) else {
            return;
        };
        let w = p.fields[fid as usize].loc.width;
        if w <= 128 {
            let v = eval_bits(p, &ec, src);
            ctx.phv.write(p.fields[fid as usize].loc, v);
        } else {
            let v = eval_exact(p, &ec, src);
            self.write_exact(&mut ctx.phv, fid, &v);
        }
    }
}

impl Engine {
    /// Runs a [`Form::Steps`] body (the action data is long enough).
    #[inline(never)]
    pub(crate) fn run_steps(&self, ops: &[Op], ctx: &mut PacketCtx, call: &ActionCall) {
        for op in ops {
            match op {
                Op::Copy(pc) => {
                    copy_param(&mut ctx.phv, &call.data, *pc);
                }
                Op::FieldAdd { dst, src, k } => field_add(&mut ctx.phv, *dst, *src, *k),
                _ => self.step_other(op, ctx, call),
            }
        }
    }

    /// The steps other than copies and additions (which `run_steps` runs itself), out
    /// of line: their general writes would otherwise enlarge every `run_steps` frame.
    #[inline(never)]
    pub(crate) fn step_other(&self, op: &Op, ctx: &mut PacketCtx, call: &ActionCall) {
        match op {
            Op::Const(loc, v) => ctx.phv.write(*loc, *v),
            Op::Expr(loc, fe) => self.step_expr(*loc, fe, ctx, call),
            Op::FieldOps { dst, src, ops, n } => {
                field_ops(&mut ctx.phv, *dst, *src, &ops[..*n as usize])
            }
            _ => {}
        }
    }

    /// An [`Op::Expr`], out of line: the 128-bit evaluator's stack would otherwise
    /// enlarge every `run_steps` frame.
    #[inline(never)]
    pub(crate) fn step_expr(
        &self,
        loc: p4jet_ir::FieldLoc,
        fe: &plan::FlatExpr,
        ctx: &mut PacketCtx,
        call: &ActionCall,
    ) {
        if let Some(a) = self.prog.actions.get(call.action as usize) {
            assign_flat(ctx, loc, fe, a, &call.data);
        }
    }

    /// Runs an action on one packet: its operations in order, the planned ones here,
    /// the others by the primitive interpreter.
    pub fn run_action(
        &self,
        cs: &ControlState,
        ex: &Externs,
        ctx: &mut PacketCtx,
        call: &ActionCall,
        sc: &mut Scratch,
        now_us: u64,
    ) {
        self.step_action(cs, ex, ctx, call.action, &call.data, sc, now_us)
    }

    /// [`Engine::run_action`] of action `action` with action data `data`.
    #[allow(clippy::too_many_arguments)]
    pub fn step_action(
        &self,
        cs: &ControlState,
        ex: &Externs,
        ctx: &mut PacketCtx,
        action: u32,
        data: &[u8],
        sc: &mut Scratch,
        now_us: u64,
    ) {
        let p = &*self.prog;
        let (Some(a), Some(plan)) = (
            p.actions.get(action as usize),
            self.plan.actions.get(action as usize),
        ) else {
            return;
        };
        let mut pc = 0usize;
        let mut guard = 0u32;
        while let Some(op) = plan.ops.get(pc) {
            guard += 1;
            if guard > 1_000_000 {
                break;
            }
            if self.cfg.trace {
                self.trace_primitive(ctx, action, pc);
            }
            // the planned operations without the general dispatcher's frame
            match op {
                Op::Const(loc, value) => {
                    ctx.phv.write(*loc, *value);
                    pc += 1;
                    continue;
                }
                Op::Copy(copy) if copy_param(&mut ctx.phv, data, *copy) => {
                    pc += 1;
                    continue;
                }
                Op::CopyField { dst, src } => {
                    let v = ctx.phv.read(*src);
                    ctx.phv.write(*dst, v);
                    pc += 1;
                    continue;
                }
                Op::Expr(loc, fe) => {
                    assign_flat(ctx, *loc, fe, a, data);
                    pc += 1;
                    continue;
                }
                Op::FieldOps { .. } | Op::FieldAdd { .. } => {
                    Self::field_step(op, ctx);
                    pc += 1;
                    continue;
                }
                _ => {}
            }
            let jumped = self.prim(
                cs,
                Some(ex),
                ctx,
                &a.body,
                &mut pc,
                Some((a, data)),
                sc,
                now_us,
            );
            if !jumped {
                pc += 1;
            }
            if ctx.exit {
                break;
            }
        }
    }

    /// An [`Op::FieldOps`] or [`Op::FieldAdd`] in the interpreter's loop (out of line).
    #[inline(never)]
    fn field_step(op: &Op, ctx: &mut PacketCtx) {
        match op {
            Op::FieldAdd { dst, src, k } => field_add(&mut ctx.phv, *dst, *src, *k),
            Op::FieldOps { dst, src, ops, n } => {
                field_ops(&mut ctx.phv, *dst, *src, &ops[..*n as usize])
            }
            _ => {}
        }
    }

    /// Executes `body[*pc]`; returns true when it changed `pc` itself.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn prim(
        &self,
        cs: &ControlState,
        ex: Option<&Externs>,
        ctx: &mut PacketCtx,
        body: &[Prim],
        pc: &mut usize,
        action: Option<(&p4jet_ir::Action, &[u8])>,
        sc: &mut Scratch,
        now_us: u64,
    ) -> bool {
        let p = &*self.prog;
        let Some(prim) = body.get(*pc) else {
            return false;
        };
        macro_rules! ec {
            () => {
                EvalCtx {
                    phv: &ctx.phv,
                    ahead: &[],
                    action,
                }
            };
        }
        match prim {
            Prim::AssignConst { dst, value } => {
                ctx.phv.write(p.fields[*dst as usize].loc, *value);
            }
            Prim::AssignParam { dst, param } => {
                if let Some((a, data)) = action {
                    let off = a.param_offsets[*param as usize] as usize;
                    let w = a.params[*param as usize].1;
                    let v = crate::phv::read_param(data, off, w);
                    ctx.phv.write(p.fields[*dst as usize].loc, v);
                }
            }
            Prim::CopyField { dst, src } => {
                let v = ctx.phv.read(p.fields[*src as usize].loc);
                ctx.phv.write(p.fields[*dst as usize].loc, v);
            }
            Prim::Assign { dst, src } => self.assign(ctx, dst, *src, action, &[]),
            Prim::AssignVarbit { dst, src } => {
                let ecx = ec!();
                if let (Some(d), Some(s)) =
                    (resolve_field(p, &ecx, dst), resolve_field(p, &ecx, src))
                {
                    let (dh, sh) = (p.fields[d as usize].header, p.fields[s as usize].header);
                    let (dl, sl) = (p.fields[d as usize].loc, p.fields[s as usize].loc);
                    let v = ctx.phv.read_big(sl);
                    ctx.phv.write_big(dl, &v);
                    if let (Some(ds), Some(ss)) = (
                        p.headers[dh as usize].varbit_slot,
                        p.headers[sh as usize].varbit_slot,
                    ) {
                        ctx.phv.varbit_bits[ds as usize] = ctx.phv.varbit_bits[ss as usize];
                    }
                }
            }
            Prim::AssignHeader { dst, src } => {
                let ecx = ec!();
                if let (Some(d), Some(s)) =
                    (resolve_header(p, &ecx, dst), resolve_header(p, &ecx, src))
                {
                    self.copy_header(&mut ctx.phv, d, s);
                }
            }
            Prim::AssignUnion { dst, src } => {
                let ecx = ec!();
                if let (Some(d), Some(s)) = (
                    eval::resolve_union(p, &ecx, dst),
                    eval::resolve_union(p, &ecx, src),
                ) {
                    let (dh, sh) = (
                        p.unions[d as usize].headers.clone(),
                        p.unions[s as usize].headers.clone(),
                    );
                    for (a, b) in dh.iter().zip(&sh) {
                        self.copy_header(&mut ctx.phv, *a, *b);
                    }
                }
            }
            Prim::AssignStack { dst, src } => {
                let (dh, sh) = (
                    &p.stacks[*dst as usize].headers,
                    &p.stacks[*src as usize].headers,
                );
                for (a, b) in dh.iter().zip(sh) {
                    self.copy_header(&mut ctx.phv, *a, *b);
                }
                ctx.phv.stack_next[*dst as usize] = ctx.phv.stack_next[*src as usize];
            }
            Prim::AddHeader(h) => {
                if let Some(h) = resolve_header(p, &ec!(), h)
                    && !ctx.phv.valid[h as usize]
                {
                    let hi = &p.headers[h as usize];
                    ctx.phv.data[hi.offset as usize..(hi.offset + hi.max_bytes) as usize].fill(0);
                    if let Some(s) = hi.varbit_slot {
                        ctx.phv.varbit_bits[s as usize] = 0;
                    }
                    self.set_valid(&mut ctx.phv, h);
                    // simple_switch's add_header: the length register grows by the
                    // header's size (siblings a union member invalidates are not taken off)
                    let n = header_bytes(p, &ctx.phv, h) as u64;
                    ctx.length_reg = ctx.length_reg.wrapping_add(n);
                }
            }
            Prim::AddHeaderFast(h) => {
                if let Some(h) = resolve_header(p, &ec!(), h) {
                    self.set_valid(&mut ctx.phv, h);
                }
            }
            Prim::RemoveHeader(h) => {
                if let Some(h) = resolve_header(p, &ec!(), h)
                    && ctx.phv.valid[h as usize]
                {
                    // simple_switch's remove_header: the length register shrinks by the
                    // size of a header that was valid
                    let n = header_bytes(p, &ctx.phv, h) as u64;
                    ctx.length_reg = ctx.length_reg.wrapping_sub(n);
                    ctx.phv.valid[h as usize] = false;
                }
            }
            Prim::Push(s, n) => {
                let n = eval_index(p, &ec!(), *n).unwrap_or(0) as usize;
                let hs = &p.stacks[*s as usize].headers;
                let size = hs.len();
                for i in (0..size).rev() {
                    if i >= n {
                        self.copy_header(&mut ctx.phv, hs[i], hs[i - n]);
                    } else {
                        ctx.phv.valid[hs[i] as usize] = false;
                    }
                }
                let next = &mut ctx.phv.stack_next[*s as usize];
                *next = (*next as usize + n).min(size) as u32;
            }
            Prim::Pop(s, n) => {
                let n = eval_index(p, &ec!(), *n).unwrap_or(0) as usize;
                let hs = &p.stacks[*s as usize].headers;
                let size = hs.len();
                for i in 0..size {
                    if i + n < size {
                        self.copy_header(&mut ctx.phv, hs[i], hs[i + n]);
                    } else {
                        ctx.phv.valid[hs[i] as usize] = false;
                    }
                }
                let next = &mut ctx.phv.stack_next[*s as usize];
                *next = (*next as usize).saturating_sub(n) as u32;
            }
            Prim::MarkToDrop => self.mark_to_drop(&mut ctx.phv),
            Prim::MarkToDropIn {
                egress_spec,
                mcast_grp,
            } => {
                let drop = self.cfg.drop_port as u128;
                ctx.phv.write(p.fields[*egress_spec as usize].loc, drop);
                if let Some(m) = mcast_grp {
                    ctx.phv.write(p.fields[*m as usize].loc, 0);
                }
            }
            Prim::Exit => ctx.exit = true,
            Prim::Truncate(len) => {
                // bmv2's Packet::truncate keeps the smallest length asked for
                if let Some(v) = eval_index(p, &ec!(), *len) {
                    let v = v.min(u32::MAX as u64) as u32;
                    ctx.req.truncate = Some(ctx.req.truncate.map_or(v, |t| t.min(v)));
                    ctx.req.pending = true;
                }
            }
            Prim::LogMsg { fmt, args } => {
                let mut out = String::new();
                let mut it = args.iter();
                let mut rest = fmt.as_str();
                while let Some(i) = rest.find("{}") {
                    out.push_str(&rest[..i]);
                    if let Some(a) = it.next() {
                        out.push_str(&eval_exact(p, &ec!(), *a).to_string());
                    }
                    rest = &rest[i + 2..];
                }
                out.push_str(rest);
                if self.cfg.trace {
                    // simple_switch logs it without the packet's ids
                    ctx.log.push(format!("I{out}"));
                }
            }
            Prim::Assert {
                cond,
                assume,
                source,
            } => {
                if !eval_bool(p, &ec!(), *cond) {
                    let what = if *assume { "assume" } else { "assert" };
                    let msg = format!("{what} failed: {source}");
                    if self.cfg.trace {
                        trace_line(ctx, level::ERROR, || msg);
                    } else {
                        ctx.log.push(msg);
                    }
                }
            }
            Prim::Hash {
                dst,
                base,
                calc,
                max,
            } => {
                let h = self.calc_value(ctx, *calc, sc, Some(cs));
                let ecx = ec!();
                // base and max of at most 64 bits and not negative (the usual
                // constants): the sum in 128 bits is the exact value
                if let (Some(b), Some(m)) = (eval_index(p, &ecx, *base), eval_index(p, &ecx, *max))
                {
                    let v = match m {
                        0 => u128::from(b),
                        m => u128::from(b) + u128::from(h % m),
                    };
                    if let Some(fid) = resolve_field(p, &ecx, dst) {
                        self.write_bits(&mut ctx.phv, fid, v);
                    }
                    if self.cfg.trace {
                        trace_line(ctx, level::TRACE, || {
                            format!("hash(base={b}, max={m}) = {v}")
                        });
                    }
                    return false;
                }
                let base = eval_exact(p, &ecx, *base);
                let max = eval_exact(p, &ecx, *max);
                let v = if max.sign() == Sign::NoSign {
                    base
                } else {
                    base + (BigInt::from(h) % max)
                };
                if let Some(fid) = resolve_field(p, &ecx, dst) {
                    self.write_exact(&mut ctx.phv, fid, &v);
                }
            }
            Prim::Random { dst, lo, hi } => {
                let ecx = ec!();
                let (lo, hi) = (
                    eval_index(p, &ecx, *lo).unwrap_or(0),
                    eval_index(p, &ecx, *hi).unwrap_or(0),
                );
                if lo <= hi
                    && let Some(fid) = resolve_field(p, &ecx, dst)
                {
                    let v = if lo == hi {
                        lo
                    } else {
                        lo + rand::random::<u64>() % (hi - lo + 1).max(1)
                    };
                    self.write_bits(&mut ctx.phv, fid, v as u128);
                    if self.cfg.trace {
                        trace_line(ctx, level::TRACE, || {
                            format!("random(lo={lo}, hi={hi}) = {v}")
                        });
                    }
                }
            }
            Prim::Count { counter, index } => {
                let i = eval_index(p, &ec!(), *index);
                if let Some(ex) = ex {
                    let name = &p.counters[*counter as usize].name;
                    match i.and_then(|i| ex.counters[*counter as usize].get(i as usize)) {
                        Some(c) => {
                            c.count(ctx.ingress_len);
                            if self.cfg.trace {
                                let i = i.unwrap_or(0);
                                trace_line(ctx, level::TRACE, || {
                                    format!("Updated counter '{name}' at index {i}")
                                });
                            }
                        }
                        None if self.cfg.trace => trace_line(ctx, level::ERROR, || {
                            format!("counter {name} index out of range")
                        }),
                        None => {}
                    }
                }
            }
            Prim::ExecuteMeter { meter, index, dst } => {
                let ecx = ec!();
                let i = eval_index(p, &ecx, *index);
                let m = &p.meters[*meter as usize];
                let units = if m.bytes { ctx.ingress_len as u64 } else { 1 };
                let color = ex
                    .and_then(|ex| i.and_then(|i| ex.meters[*meter as usize].get(i as usize)))
                    .map(|c| c.lock().map(|mut c| c.execute(units, now_us)).unwrap_or(0));
                match (color, resolve_field(p, &ecx, dst)) {
                    (Some(c), Some(fid)) => {
                        self.write_bits(&mut ctx.phv, fid, c as u128);
                        if self.cfg.trace {
                            let (name, i) = (&m.name, i.unwrap_or(0));
                            trace_line(ctx, level::DEBUG, || {
                                format!("Executing meter {name}[{i}]")
                            });
                            trace_line(ctx, level::TRACE, || {
                                format!(
                                    "Updated meter '{name}' at index {i}, assigning dest field \
                                     the color result {c}"
                                )
                            });
                        }
                    }
                    _ if self.cfg.trace => trace_line(ctx, level::ERROR, || {
                        format!("meter {} index out of range", m.name)
                    }),
                    _ => {}
                }
            }
            Prim::RegisterRead {
                dst,
                register,
                index,
            } => {
                let ecx = ec!();
                let i = eval_index(p, &ecx, *index);
                let v = ex.and_then(|ex| {
                    i.and_then(|i| ex.registers[*register as usize].read(i as usize))
                });
                let name = &p.registers[*register as usize].name;
                match (v, resolve_field(p, &ecx, dst)) {
                    (Some(v), Some(fid)) => {
                        if self.cfg.trace {
                            let i = i.unwrap_or(0);
                            trace_line(ctx, level::TRACE, || {
                                format!("Read register '{name}' at index {i} read value {v}")
                            });
                        }
                        self.write_exact(&mut ctx.phv, fid, &BigInt::from(v))
                    }
                    _ if self.cfg.trace => trace_line(ctx, level::ERROR, || {
                        format!("register {name} index out of range")
                    }),
                    _ => {}
                }
            }
            Prim::RegisterWrite {
                register,
                index,
                value,
            } => {
                let ecx = ec!();
                let i = eval_index(p, &ecx, *index);
                let w = p.registers[*register as usize].width;
                let v = eval_exact(p, &ecx, *value);
                let m = BigInt::from(1) << w;
                let mut r = v % &m;
                if r.sign() == Sign::Minus {
                    r += &m;
                }
                let ok = ex.is_some_and(|ex| {
                    i.is_some_and(|i| {
                        ex.registers[*register as usize]
                            .write(i as usize, &r.to_biguint().unwrap_or_default())
                    })
                });
                if self.cfg.trace {
                    let name = &p.registers[*register as usize].name;
                    match i {
                        Some(i) if ok => trace_line(ctx, level::TRACE, || {
                            format!("Wrote register '{name}' at index {i} with value {r}")
                        }),
                        _ => trace_line(ctx, level::ERROR, || {
                            format!("register {name} index out of range")
                        }),
                    }
                }
            }
            Prim::Clone {
                session,
                field_list,
                ..
            } => {
                let s = eval_index(p, &ec!(), *session).unwrap_or(0);
                ctx.req.clone = Some(((s & 0xffff) as u32, *field_list));
                ctx.req.pending = true;
            }
            Prim::Resubmit(fl) => {
                ctx.req.resubmit = Some(*fl);
                ctx.req.pending = true;
            }
            Prim::Recirculate(fl) => {
                ctx.req.recirculate = Some(*fl);
                ctx.req.pending = true;
            }
            Prim::Digest(id) => {
                ctx.req.digest = Some(*id);
                ctx.req.pending = true;
            }
            Prim::Jump(t) => {
                *pc = *t as usize;
                return true;
            }
            Prim::JumpIfZero(c, t) => {
                if !eval_bool(p, &ec!(), *c) {
                    *pc = *t as usize;
                    return true;
                }
            }
            Prim::Call(a) => {
                let call = ActionCall {
                    action: *a,
                    data: Default::default(),
                };
                if let Some(ex) = ex {
                    self.run_action(cs, ex, ctx, &call, sc, now_us);
                }
            }
            Prim::Nop => {}
        }
        false
    }

    pub(crate) fn copy_header(&self, phv: &mut Phv, dst: u32, src: u32) {
        if dst == src {
            return;
        }
        let p = &*self.prog;
        let (d, s) = (&p.headers[dst as usize], &p.headers[src as usize]);
        let n = d.max_bytes.min(s.max_bytes) as usize;
        phv.data
            .copy_within(s.offset as usize..s.offset as usize + n, d.offset as usize);
        if let (Some(ds), Some(ss)) = (d.varbit_slot, s.varbit_slot) {
            phv.varbit_bits[ds as usize] = phv.varbit_bits[ss as usize];
        }
        if phv.valid[src as usize] {
            self.set_valid(phv, dst);
        } else {
            phv.valid[dst as usize] = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::action::{Op as Step, field_ops_step};
    use p4jet_ir::FieldLoc;

    /// `dst = src OP k ...` as a [`Step::FieldOps`] against the flattened
    /// expression's 128-bit evaluation and write, for fields of many widths (sharing
    /// bytes with their neighbours or not), every admitted operation, constants
    /// wider than the fields, and p4c's trailing masks.
    #[test]
    fn field_ops_equal_the_expression() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let widths = [1u32, 3, 7, 8, 9, 12, 16, 24, 31, 32, 33, 48, 56, 63, 64];
        let ops = [
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::And,
            BinOp::Or,
            BinOp::Xor,
        ];
        let (mut fast, mut checked, mut adds) = (0, 0, 0);
        for &dw in &widths {
            for &sw in &widths {
                for round in 0..40 {
                    let mut loc = |w: u32, byte: u32, own: bool| {
                        let bit = if own {
                            ((8 - w % 8) % 8) as u8
                        } else {
                            (rnd() % 8) as u8
                        };
                        let bit = if u32::from(bit) + w > 64 { 0 } else { bit };
                        FieldLoc::new(byte, bit, w, false, own)
                    };
                    let dst = loc(dw, 0, round % 4 != 3);
                    let src = loc(sw, 12, round % 5 != 4);
                    let nops = 1 + (rnd() % 3) as usize;
                    let mut list: Vec<(BinOp, u128)> = (0..nops)
                        .map(|_| {
                            let k = u128::from(rnd()) << 64 | u128::from(rnd());
                            let k = if rnd() % 2 == 0 { k & 0xff } else { k };
                            (ops[(rnd() % 6) as usize], k)
                        })
                        .collect();
                    if round % 2 == 0 {
                        list.push((BinOp::And, (1u128 << dw) - 1));
                    }
                    let fe = plan::FlatExpr::of_field_ops(src, &list);
                    let step = match field_ops_step(dst, &fe) {
                        Some(st @ Step::FieldOps { .. }) => st,
                        Some(st @ Step::FieldAdd { .. }) => {
                            adds += 1;
                            st
                        }
                        _ => continue,
                    };
                    fast += 1;
                    for _ in 0..8 {
                        let mut a = Phv::zeroed(32);
                        for b in a.data.iter_mut() {
                            *b = rnd() as u8;
                        }
                        // a field that owns its bytes keeps zeros in the bits above it
                        a.write(src, u128::from(rnd()));
                        a.write(dst, u128::from(rnd()));
                        let mut b = a.clone();
                        let v = fe.eval(&EvalCtx {
                            phv: &a,
                            ahead: &[],
                            action: None,
                        });
                        a.write(dst, v);
                        match step {
                            Step::FieldOps { dst, src, ops, n } => {
                                field_ops(&mut b, dst, src, &ops[..n as usize])
                            }
                            Step::FieldAdd { dst, src, k } => field_add(&mut b, dst, src, k),
                            _ => unreachable!(),
                        }
                        assert_eq!(a.data, b.data, "dst {dst:?} src {src:?} ops {list:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(
            fast > 1000 && checked > 8000 && adds > 50,
            "{fast} {checked} {adds}"
        );
    }
}
