//! The parser: a packet's headers extracted into its PHV. The parser's likeliest path
//! runs as one step, then states with plans ([`crate::plan::parser`]) on a planned path,
//! and anything else state by state and operation by operation through the general code.
//! Checksum verification follows (`checksum.rs`).

use num_bigint::BigUint;
use p4jet_ir::{FieldLoc, KeyElem, ParserOp, Program, TransitionKind};

use crate::eval::{EvalCtx, eval_bool, eval_index, resolve_field, resolve_header};
use crate::packet::{level, trace_line};
use crate::phv::Phv;
use crate::plan::parser::Next;
use crate::state::ControlState;
use crate::{Engine, PacketCtx, Pkt, Scratch, plan};

/// The planned path's extract of fixed header `h` (`len` bytes to PHV offset `off`)
/// at `cursor`: the cursor after it, or None when the packet is too short.
#[inline(always)]
fn extract_planned(
    ctx: &mut PacketCtx,
    h: u32,
    off: u32,
    len: u32,
    cursor: usize,
) -> Option<usize> {
    let (off, len) = (off as usize, len as usize);
    let src = ctx.pkt.data().get(cursor..cursor + len)?;
    crate::copy::copy_small(&mut ctx.phv.data[off..off + len], src);
    ctx.phv.valid[h as usize] = true;
    Some(cursor + len)
}

/// The header of member `member` in the next element of union stack `stack`: the
/// element after the last one with a valid member (elements are extracted in order;
/// `UnionRef::StackLast` reads the same). None when the stack is full.
fn union_stack_next(p: &Program, phv: &Phv, stack: u32, member: u32) -> Option<u32> {
    let s = &p.union_stacks[stack as usize];
    let next = s
        .unions
        .iter()
        .rposition(|u| {
            p.unions[*u as usize]
                .headers
                .iter()
                .any(|h| phv.valid[*h as usize])
        })
        .map_or(0, |i| i + 1);
    s.unions
        .get(next)
        .and_then(|u| p.unions[*u as usize].headers.get(member as usize))
        .copied()
}

impl Engine {
    // ------------------------------------------------------------------ parser

    /// Parses the frame of every context (which must have been reset and given its
    /// standard metadata) and verifies checksums.
    pub fn parse(&self, cs: &ControlState, pkts: &mut [Pkt], sc: &mut Scratch) {
        match self.run_native() {
            Some(n) => n.parse(self, cs, pkts, sc),
            None => self.parse_interp(cs, pkts, sc),
        }
    }

    /// [`Engine::parse`] by the interpreter.
    pub fn parse_interp(&self, cs: &ControlState, pkts: &mut [Pkt], sc: &mut Scratch) {
        for ctx in pkts {
            self.parse_one(cs, ctx, sc);
        }
    }

    // inlined into the batch loop of `parse` (the rare cases are out of line)
    #[inline(always)]
    pub(crate) fn parse_one(&self, cs: &ControlState, ctx: &mut PacketCtx, sc: &mut Scratch) {
        if self.cfg.trace {
            return self.parse_traced(cs, ctx, sc);
        }
        let (cursor, error) = match self.parse_planned(ctx) {
            Ok(done) => done,
            Err((state, cursor, steps)) => self.parse_general(cs, ctx, sc, state, cursor, steps),
        };
        self.end_parse(ctx, sc, cursor, error);
    }

    /// What follows the parser states: the payload offset, `parser_error` (and its
    /// trace line), the checksum verification.
    #[inline(always)]
    fn end_parse(&self, ctx: &mut PacketCtx, sc: &mut Scratch, cursor: usize, error: u32) {
        ctx.payload_off = cursor;
        self.std_set(&mut ctx.phv, self.std_meta.parser_error, error as u128);
        if error != self.prog.error_codes.no_error {
            self.trace_parser_error(ctx, error);
        }
        let ck = &self.plan.checksums;
        if !ck.verify.is_empty() {
            if ck.verify_planned && !self.cfg.trace {
                self.verify_planned(&mut ctx.phv);
            } else {
                self.verify_checksums(ctx, sc);
            }
        }
    }

    /// The trace line of a parser error.
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_parser_error(&self, ctx: &mut PacketCtx, error: u32) {
        let name = self.prog.error_name(error).to_string();
        self.trace(ctx, level::ERROR, || {
            format!("Exception while parsing: {name}")
        });
    }

    /// [`Engine::parse_one`] when tracing: the general code, state by state and
    /// operation by operation, with simple_switch's log lines.
    #[cold]
    #[inline(never)]
    fn parse_traced(&self, cs: &ControlState, ctx: &mut PacketCtx, sc: &mut Scratch) {
        let p = &*self.prog;
        trace_line(ctx, level::DEBUG, || "Parser 'parser': start".into());
        let mut state = p.parser.init;
        let mut cursor = 0usize;
        let mut steps = 0u32;
        let mut error = p.error_codes.no_error;
        'states: while let Some(si) = state {
            steps += 1;
            if steps > 100_000 {
                error = p.error_codes.parser_timeout;
                break;
            }
            let st = &p.parser.states[si as usize];
            trace_line(ctx, level::DEBUG, || {
                format!("Parser 'parser' entering state '{}'", st.name)
            });
            for (oi, op) in st.ops.iter().enumerate() {
                let ec = EvalCtx::of_phv(&ctx.phv);
                let msg = match op {
                    ParserOp::Extract(h) => resolve_header(p, &ec, h)
                        .map(|h| format!("Extracting header '{}'", p.headers[h as usize].name)),
                    ParserOp::ExtractVarbit { header, .. } => {
                        resolve_header(p, &ec, header).map(|h| {
                            format!(
                                "Extracting variable-sized header '{}'",
                                p.headers[h as usize].name
                            )
                        })
                    }
                    // bmv2 numbers stacks and headers as the JSON does, which is
                    // the order p4jet keeps them in
                    ParserOp::ExtractNext(s) | ParserOp::ExtractNextVarbit { stack: s, .. } => p
                        .stacks[*s as usize]
                        .headers
                        .get(ctx.phv.stack_next[*s as usize] as usize)
                        .map(|h| format!("Extracting to header stack {s}, next header is {h}")),
                    ParserOp::ExtractUnionNext { stack, member } => {
                        union_stack_next(p, &ctx.phv, *stack, *member).map(|h| {
                            format!("Extracting to header union stack {stack}, next header is {h}")
                        })
                    }
                    ParserOp::Advance(bits) => crate::eval::eval_index(p, &ec, *bits)
                        .map(|n| format!("Advancing by {} bytes", n / 8)),
                    _ => None,
                };
                if let Some(m) = msg {
                    trace_line(ctx, level::DEBUG, || m);
                }
                if let ParserOp::Primitive(_) = op
                    && let Some((name, text)) = p.log_text.parser_prims.get(&(si, oi as u32))
                {
                    // bmv2 runs a parser's primitive as a one-primitive action
                    trace_line(ctx, level::DEBUG, || format!("Executing method {name}"));
                    trace_line(ctx, level::TRACE, || format!("Action {name}"));
                    trace_line(ctx, level::TRACE, || text.clone());
                }
                if let Err(e) = self.parser_op(cs, ctx, op, &mut cursor, sc) {
                    error = e;
                    break 'states;
                }
                if let ParserOp::Set { dst, src } = op {
                    self.trace_parser_set(ctx, dst, *src);
                }
            }
            if st.key.is_empty() {
                trace_line(ctx, level::DEBUG, || {
                    format!(
                        "Parser state '{}' has no switch, going to default next state",
                        st.name
                    )
                });
            } else {
                let mut key = vec![0u8; st.key_bytes as usize];
                if let Err(e) = self.select_key(ctx, st, cursor, &mut key) {
                    error = e;
                    break;
                }
                trace_line(ctx, level::DEBUG, || {
                    format!("Parser state '{}': key is {}", st.name, hex(&key))
                });
            }
            match self.select_general(cs, ctx, st, cursor) {
                Ok(next) => state = next,
                Err(e) => {
                    error = e;
                    break;
                }
            }
            trace_line(ctx, level::TRACE, || format!("Bytes parsed: {cursor}"));
        }
        self.end_parse(ctx, sc, cursor, error);
        trace_line(ctx, level::DEBUG, || "Parser 'parser': end".into());
    }

    /// The log line of a parser `set`, after it.
    fn trace_parser_set(&self, ctx: &mut PacketCtx, dst: &p4jet_ir::FieldRef, src: u32) {
        let p = &*self.prog;
        let ec = EvalCtx::of_phv(&ctx.phv);
        let Some(d) = resolve_field(p, &ec, dst) else {
            return;
        };
        let value = ctx.phv.read_big(p.fields[d as usize].loc);
        let dname = p.field_name(d);
        let msg = match p.exprs.nodes.get(src as usize).map(|n| &n.expr) {
            Some(p4jet_ir::Expr::Const(v)) => {
                format!("Parser set: setting field '{dname}' to {v}")
            }
            Some(p4jet_ir::Expr::Lookahead { offset, width }) => format!(
                "Parser set: setting field '{dname}' from lookahead ({offset}, {width}), \
                 new value is {value}"
            ),
            // a plain field; a stack's `last` element (p4c's `stack_field`) is an
            // expression to bmv2
            Some(p4jet_ir::Expr::Field(f @ p4jet_ir::FieldRef::Static(_))) => {
                match resolve_field(p, &ec, f) {
                    Some(s) => format!(
                        "Parser set: setting field '{dname}' from field '{}' ({value})",
                        p.field_name(s)
                    ),
                    None => return,
                }
            }
            _ => {
                format!("Parser set: setting field '{dname}' from expression, new value is {value}")
            }
        };
        trace_line(ctx, level::DEBUG, || msg);
    }

    /// The parser's planned path: runs states that only extract fixed headers (outside
    /// unions) and choose the next state by plan. Ok((cursor, error)) when parsing
    /// ended; Err((state, cursor, steps)) hands the first other state (or any state,
    /// when tracing) to [`Engine::parse_general`].
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    pub(crate) fn parse_planned(
        &self,
        ctx: &mut PacketCtx,
    ) -> Result<(usize, u32), (Option<u32>, usize, u32)> {
        let p = &*self.prog;
        let mut state = p.parser.init;
        let mut cursor = 0usize;
        let mut steps = 0u32;
        if self.cfg.trace {
            return Err((state, cursor, steps));
        }
        if let Some(path) = &self.plan.parser.path
            && let Some(c) = path.run(ctx.pkt.data(), &mut ctx.phv)
        {
            (state, cursor, steps) = (path.next, c, path.states());
        }
        while let Some(si) = state {
            let plan = &self.plan.parser.states[si as usize];
            if !plan.simple {
                return Err((state, cursor, steps));
            }
            steps += 1;
            if steps > 100_000 {
                return Ok((cursor, p.error_codes.parser_timeout));
            }
            if let Some((h, off, len)) = plan.single {
                match extract_planned(ctx, h, off, len, cursor) {
                    Some(c) => cursor = c,
                    None => return Ok((cursor, p.error_codes.packet_too_short)),
                }
            } else {
                for op in &plan.ops {
                    match *op {
                        plan::parser::ParseOp::Extract { h, off, len, .. } => {
                            match extract_planned(ctx, h, off, len, cursor) {
                                Some(c) => cursor = c,
                                None => return Ok((cursor, p.error_codes.packet_too_short)),
                            }
                        }
                        plan::parser::ParseOp::ExtractN { h, n, off, len } => {
                            match self.extract_n(ctx, h, n, off, len, cursor) {
                                Ok(c) => cursor = c,
                                Err(c) => return Ok((c, p.error_codes.packet_too_short)),
                            }
                        }
                        _ => {}
                    }
                }
            }
            state = match &plan.next {
                Next::Goto(next) => *next,
                Next::Select(sel) => {
                    match sel.next(
                        &ctx.phv,
                        ctx.pkt.data(),
                        cursor,
                        p.error_codes.packet_too_short,
                    ) {
                        Ok(next) => next,
                        Err(e) => return Ok((cursor, e)),
                    }
                }
                // not simple
                Next::General => return Err((state, cursor, steps)),
            };
        }
        Ok((cursor, p.error_codes.no_error))
    }

    /// A [`plan::parser::ParseOp::ExtractN`] at `cursor`: the cursor after it, or the
    /// cursor after the headers the packet holds when it is too short for all.
    #[inline(always)]
    pub(crate) fn extract_n(
        &self,
        ctx: &mut PacketCtx,
        h: u32,
        n: u32,
        off: u32,
        len: u32,
        mut cursor: usize,
    ) -> Result<usize, usize> {
        if let Some(c) = extract_planned(ctx, h, off, len, cursor) {
            for v in ctx.phv.valid[h as usize..(h + n) as usize].iter_mut() {
                *v = true;
            }
            return Ok(c);
        }
        for h in h..h + n {
            let hi = &self.prog.headers[h as usize];
            cursor = extract_planned(ctx, h, hi.offset, hi.max_bytes, cursor).ok_or(cursor)?;
        }
        Ok(cursor)
    }

    /// The parser's general path, from state `state` at `cursor` after `steps` states:
    /// (cursor, error) when parsing ended.
    #[inline(never)]
    pub(crate) fn parse_general(
        &self,
        cs: &ControlState,
        ctx: &mut PacketCtx,
        sc: &mut Scratch,
        mut state: Option<u32>,
        mut cursor: usize,
        mut steps: u32,
    ) -> (usize, u32) {
        let p = &*self.prog;
        let mut error = p.error_codes.no_error;
        'states: while let Some(si) = state {
            steps += 1;
            if steps > 100_000 {
                error = p.error_codes.parser_timeout;
                break;
            }
            let plan = &self.plan.parser.states[si as usize];
            for op in &plan.ops {
                if let Err(e) = self.parse_op(cs, ctx, si, *op, &mut cursor, sc) {
                    error = e;
                    break 'states;
                }
            }
            match &plan.next {
                Next::Goto(next) => {
                    state = *next;
                    continue;
                }
                Next::Select(sel) => {
                    match sel.next(
                        &ctx.phv,
                        ctx.pkt.data(),
                        cursor,
                        p.error_codes.packet_too_short,
                    ) {
                        Ok(next) => {
                            state = next;
                            continue;
                        }
                        Err(e) => {
                            error = e;
                            break;
                        }
                    }
                }
                Next::General => {}
            }
            let st = &p.parser.states[si as usize];
            match self.select_general(cs, ctx, st, cursor) {
                Ok(next) => state = next,
                Err(e) => {
                    error = e;
                    break;
                }
            }
        }
        (cursor, error)
    }

    /// Operation `op` of parser state `si` at `*cursor`, as the interpreter runs it.
    #[inline(always)]
    pub(crate) fn parse_op(
        &self,
        cs: &ControlState,
        ctx: &mut PacketCtx,
        si: u32,
        op: plan::parser::ParseOp,
        cursor: &mut usize,
        sc: &mut Scratch,
    ) -> Result<(), u32> {
        let p = &*self.prog;
        match op {
            plan::parser::ParseOp::ExtractN { h, n, off, len } if !self.cfg.trace => {
                match self.extract_n(ctx, h, n, off, len, *cursor) {
                    Ok(c) => {
                        *cursor = c;
                        Ok(())
                    }
                    Err(c) => {
                        *cursor = c;
                        Err(p.error_codes.packet_too_short)
                    }
                }
            }
            plan::parser::ParseOp::ExtractN { h, n, .. } => (h..h + n).try_for_each(|h| {
                let hi = &p.headers[h as usize];
                let (off, len) = (hi.offset as usize, hi.max_bytes as usize);
                self.extract_fixed(ctx, h, off, len, false, cursor)
            }),
            plan::parser::ParseOp::Extract { h, off, len, union } => {
                self.extract_fixed(ctx, h, off as usize, len as usize, union, cursor)
            }
            plan::parser::ParseOp::Copy { dst, src } => {
                let v = ctx.phv.read_raw(src);
                ctx.phv.write(dst, v);
                Ok(())
            }
            plan::parser::ParseOp::Copy64 {
                dst,
                src,
                shift,
                mask,
            } => {
                let v = match ctx.phv.load8(src.byte as usize) {
                    Some(w) => (w >> shift) & mask,
                    None => ctx.phv.read_raw(src) as u64,
                };
                ctx.phv.write64(dst, v);
                Ok(())
            }
            plan::parser::ParseOp::CopyBytes { dst, src, n } => {
                let (dst, src, n) = (dst as usize, src as usize, n as usize);
                let v = crate::phv::load_be(&ctx.phv.data, src, n);
                crate::phv::store_be(&mut ctx.phv.data, dst, n, v);
                Ok(())
            }
            plan::parser::ParseOp::SetAhead { dst, at, n, i } => {
                let (dst, n) = (dst as usize, n as usize);
                let from = *cursor + at as usize;
                match ctx.pkt.data().get(from..from + n) {
                    Some(src) => {
                        ctx.phv.data[dst..dst + n].copy_from_slice(src);
                        Ok(())
                    }
                    None => {
                        let op = &p.parser.states[si as usize].ops[i as usize];
                        self.parser_op(cs, ctx, op, cursor, sc)
                    }
                }
            }
            plan::parser::ParseOp::AddHeader { h, off, len, .. } if !self.cfg.trace => {
                if !ctx.phv.valid[h as usize] {
                    ctx.phv.data[off as usize..(off + len) as usize].fill(0);
                    self.set_valid(&mut ctx.phv, h);
                    ctx.length_reg = ctx.length_reg.wrapping_add(u64::from(len));
                }
                Ok(())
            }
            plan::parser::ParseOp::AddHeader { i, .. } | plan::parser::ParseOp::General(i) => {
                let op = &p.parser.states[si as usize].ops[i as usize];
                self.parser_op(cs, ctx, op, cursor, sc)
            }
        }
    }

    /// The select of parser state `st` by the general code (value sets, keys wider than
    /// 128 bits, stack fields chosen at run time): the next state, or a parser error.
    /// Out of line, so that the planned path keeps a small frame.
    #[inline(never)]
    pub(crate) fn select_general(
        &self,
        cs: &ControlState,
        ctx: &PacketCtx,
        st: &p4jet_ir::ParseState,
        cursor: usize,
    ) -> Result<Option<u32>, u32> {
        let mut keybuf = [0u8; 64];
        // build the select key
        let kb = st.key_bytes as usize;
        let mut big_key;
        let key: &mut [u8] = if kb <= keybuf.len() {
            &mut keybuf[..kb]
        } else {
            big_key = vec![0u8; kb];
            &mut big_key[..]
        };
        self.select_key(ctx, st, cursor, key)?;
        // the first transition that matches; none matching and no default: bmv2 accepts
        let chosen = st.transitions.iter().find(|t| match &t.kind {
            TransitionKind::Default => true,
            TransitionKind::Value { value, mask } => key
                .iter()
                .zip(value)
                .zip(mask)
                .all(|((k, v), m)| (k & m) == *v),
            TransitionKind::ValueSet { vset, mask } => {
                cs.value_sets.get(*vset as usize).is_some_and(|vs| {
                    vs.iter().any(|v| {
                        // value-set values are right-aligned to the key
                        let pad = key.len().saturating_sub(v.len());
                        key.iter().enumerate().all(|(i, k)| {
                            let vb = if i < pad { 0 } else { v[i - pad] };
                            (k & mask[i]) == (vb & mask[i])
                        })
                    })
                })
            }
        });
        Ok(chosen.and_then(|t| t.next))
    }

    /// The select key of parser state `st` at `cursor` into `key` (`st.key_bytes` long).
    pub(crate) fn select_key(
        &self,
        ctx: &PacketCtx,
        st: &p4jet_ir::ParseState,
        cursor: usize,
        key: &mut [u8],
    ) -> Result<(), u32> {
        let p = &*self.prog;
        let mut off = 0usize;
        for k in &st.key {
            let w = k.width(p);
            let nb = w.div_ceil(8) as usize;
            match k {
                KeyElem::Field(f) => {
                    let ec = EvalCtx::of_phv(&ctx.phv);
                    match resolve_field(p, &ec, f) {
                        Some(fid) => put_field(
                            &ctx.phv,
                            p.fields[fid as usize].loc,
                            &mut key[off..off + nb],
                        ),
                        None => {
                            // `stack.last` of an empty stack
                            return Err(p.error_codes.stack_out_of_bounds);
                        }
                    }
                }
                KeyElem::Lookahead { offset, width } => {
                    let data = ctx.pkt.data();
                    let need_bits = cursor * 8 + *offset as usize + *width as usize;
                    if need_bits > data.len() * 8 {
                        return Err(p.error_codes.packet_too_short);
                    }
                    let ahead = &data[cursor..];
                    let bits_off = *offset as usize;
                    let v =
                        crate::phv::read_big(ahead, bits_off / 8, (bits_off % 8) as u32, *width);
                    put_big(&v, &mut key[off..off + nb]);
                }
            }
            off += nb;
        }
        Ok(())
    }
}

/// Lower-case hex of bytes, as simple_switch logs keys.
pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Engine {
    /// `extract` of a fixed header at a known PHV offset (the planned form of
    /// [`Engine::extract`]).
    #[inline(always)]
    pub(crate) fn extract_fixed(
        &self,
        ctx: &mut PacketCtx,
        h: u32,
        off: usize,
        len: usize,
        union: bool,
        cursor: &mut usize,
    ) -> Result<(), u32> {
        let data = ctx.pkt.data();
        let Some(src) = data.get(*cursor..*cursor + len) else {
            return Err(self.prog.error_codes.packet_too_short);
        };
        crate::copy::copy_small(&mut ctx.phv.data[off..off + len], src);
        if union {
            self.set_valid(&mut ctx.phv, h);
        } else {
            ctx.phv.valid[h as usize] = true;
        }
        *cursor += len;
        Ok(())
    }

    #[inline(never)]
    pub(crate) fn parser_op(
        &self,
        cs: &ControlState,
        ctx: &mut PacketCtx,
        op: &ParserOp,
        cursor: &mut usize,
        sc: &mut Scratch,
    ) -> Result<(), u32> {
        let p = &*self.prog;
        let codes = &p.error_codes;
        match op {
            ParserOp::Extract(h) => {
                let ec = EvalCtx::of_phv(&ctx.phv);
                let Some(h) = resolve_header(p, &ec, h) else {
                    return Err(codes.stack_out_of_bounds);
                };
                self.extract(ctx, h, cursor, None)
            }
            ParserOp::ExtractNext(s) => {
                let st = &p.stacks[*s as usize];
                let next = ctx.phv.stack_next[*s as usize] as usize;
                let Some(h) = st.headers.get(next).copied() else {
                    return Err(codes.stack_out_of_bounds);
                };
                self.extract(ctx, h, cursor, None)?;
                ctx.phv.stack_next[*s as usize] += 1;
                Ok(())
            }
            ParserOp::ExtractNextVarbit { stack, bits } => {
                let st = &p.stacks[*stack as usize];
                let next = ctx.phv.stack_next[*stack as usize] as usize;
                let Some(h) = st.headers.get(next).copied() else {
                    return Err(codes.stack_out_of_bounds);
                };
                let data = ctx.pkt.data();
                let ec = EvalCtx {
                    phv: &ctx.phv,
                    ahead: &data[(*cursor).min(data.len())..],
                    action: None,
                };
                let Some(n) = eval_index(p, &ec, *bits) else {
                    return Err(codes.parser_invalid_argument);
                };
                if !n.is_multiple_of(8) {
                    return Err(codes.parser_invalid_argument);
                }
                self.extract(ctx, h, cursor, Some(n as u32))?;
                ctx.phv.stack_next[*stack as usize] += 1;
                Ok(())
            }
            ParserOp::ExtractUnionNext { stack, member } => {
                let Some(h) = union_stack_next(p, &ctx.phv, *stack, *member) else {
                    return Err(codes.stack_out_of_bounds);
                };
                self.extract(ctx, h, cursor, None)
            }
            ParserOp::ExtractVarbit { header, bits } => {
                let data = ctx.pkt.data();
                let ec = EvalCtx {
                    phv: &ctx.phv,
                    ahead: &data[(*cursor).min(data.len())..],
                    action: None,
                };
                let Some(h) = resolve_header(p, &ec, header) else {
                    return Err(codes.stack_out_of_bounds);
                };
                let Some(n) = eval_index(p, &ec, *bits) else {
                    return Err(codes.parser_invalid_argument);
                };
                if !n.is_multiple_of(8) {
                    return Err(codes.parser_invalid_argument);
                }
                self.extract(ctx, h, cursor, Some(n as u32))
            }
            ParserOp::Set { dst, src } => {
                // bmv2 raises PacketTooShort at a `lookahead` whose bits pass the end of
                // the packet (p4c writes one as the source of a `set`): parsing stops
                // there, before the assignment
                if let Some(p4jet_ir::Expr::Lookahead { offset, width }) =
                    p.exprs.nodes.get(*src as usize).map(|n| &n.expr)
                    && *cursor * 8 + *offset as usize + *width as usize > ctx.pkt.len() * 8
                {
                    return Err(codes.packet_too_short);
                }
                let data = std::mem::take(&mut ctx.pkt.buf);
                let ahead = &data[(ctx.pkt.start + *cursor).min(ctx.pkt.end)..ctx.pkt.end];
                self.assign(ctx, dst, *src, None, ahead);
                ctx.pkt.buf = data;
                Ok(())
            }
            ParserOp::Verify { cond, error } => {
                let data = ctx.pkt.data();
                let ec = EvalCtx {
                    phv: &ctx.phv,
                    ahead: &data[(*cursor).min(data.len())..],
                    action: None,
                };
                if eval_bool(p, &ec, *cond) {
                    Ok(())
                } else {
                    Err(eval_index(p, &ec, *error).unwrap_or(0) as u32)
                }
            }
            ParserOp::Advance(bits) => {
                let ec = EvalCtx::of_phv(&ctx.phv);
                let n = eval_index(p, &ec, *bits).unwrap_or(u64::MAX);
                if !n.is_multiple_of(8) {
                    return Err(codes.parser_invalid_argument);
                }
                let bytes = (n / 8) as usize;
                if *cursor + bytes > ctx.pkt.len() {
                    return Err(codes.packet_too_short);
                }
                *cursor += bytes;
                Ok(())
            }
            ParserOp::Primitive(prim) => {
                let mut pc = 0usize;
                let body = std::slice::from_ref(prim);
                let _ = self.prim(cs, None, ctx, body, &mut pc, None, sc, 0);
                Ok(())
            }
        }
    }

    pub(crate) fn extract(
        &self,
        ctx: &mut PacketCtx,
        h: u32,
        cursor: &mut usize,
        varbits: Option<u32>,
    ) -> Result<(), u32> {
        let p = &*self.prog;
        let hi = &p.headers[h as usize];
        let bytes = match varbits {
            Some(vb) => (hi.fixed_bits as usize + vb as usize) / 8,
            None => hi.max_bytes as usize,
        };
        let data = ctx.pkt.data();
        // bmv2 checks the packet's length before the varbit's maximum: a length over
        // the maximum that also runs past the end of the packet is PacketTooShort
        if *cursor + bytes > data.len() {
            return Err(p.error_codes.packet_too_short);
        }
        if let Some(vb) = varbits
            && hi.fixed_bits + vb > hi.max_bytes * 8
        {
            return Err(p.error_codes.header_too_short);
        }
        let off = hi.offset as usize;
        if varbits.is_some() {
            // varbit header: clear the full slot first (the varbit field is left-aligned)
            ctx.phv.data[off..off + hi.max_bytes as usize].fill(0);
        }
        ctx.phv.data[off..off + bytes].copy_from_slice(&data[*cursor..*cursor + bytes]);
        if let (Some(slot), Some(vb)) = (hi.varbit_slot, varbits) {
            ctx.phv.varbit_bits[slot as usize] = vb;
        }
        self.set_valid(&mut ctx.phv, h);
        *cursor += bytes;
        Ok(())
    }

    /// Marks a header valid; a union member invalidates its siblings.
    pub(crate) fn set_valid(&self, phv: &mut Phv, h: u32) {
        let p = &*self.prog;
        if let Some((u, _)) = p.headers[h as usize].union {
            for m in &p.unions[u as usize].headers {
                phv.valid[*m as usize] = false;
            }
        }
        phv.valid[h as usize] = true;
    }
}

/// Writes a field's value big-endian into `out` (ceil(width/8) bytes).
fn put_field(phv: &Phv, loc: FieldLoc, out: &mut [u8]) {
    if loc.width <= 128 {
        let v = phv.read_raw(loc);
        let be = v.to_be_bytes();
        let n = out.len();
        out.copy_from_slice(&be[16 - n..]);
    } else {
        put_big(&phv.read_big(loc), out);
    }
}

pub(crate) fn put_big(v: &BigUint, out: &mut [u8]) {
    let b = v.to_bytes_be();
    out.fill(0);
    let n = b.len().min(out.len());
    let ol = out.len();
    out[ol - n..].copy_from_slice(&b[b.len() - n..]);
}
