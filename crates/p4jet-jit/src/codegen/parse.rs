//! The parser as native code: a loop over the lanes; per packet the likeliest path as
//! one bounds check, compares and a copy, then one block per parser state with its
//! extracts (copies of known lengths to known offsets, bounds-checked against the
//! frame's length as the interpreter checks them), field copies and select (a 64-bit
//! compare chain, or the interpreter's select) jumping straight to the next state's
//! block; then `parser_error`, and checksum verification.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Block, InstBuilder, JumpTableData, Value, types};
use cranelift_frontend::Variable;
use p4jet_engine::plan::checksum::CsumOp;
use p4jet_engine::plan::parser::{Next, ParseOp, Select, SelectKey};

use super::checksum::csum_inline;
use super::{Gen, H, mem};
use crate::abi::{ACCEPT, ERR_BIT, PARSE_ONLY, off};

/// Most states the interpreter runs before `ParserTimeout`.
const MAX_STEPS: u64 = 100_000;

/// The per-packet values every state block uses.
struct Pkt {
    lane: Value,
    phv: Value,
    valid: Value,
    data: Value,
    len: Value,
    cursor: Variable,
    steps: Variable,
    error: Variable,
}

/// Emits the parse function's body: `(env, lanes, n)`, into the current block; with
/// `begin`, each packet first enters ingress (`Gen::begin_ingress`); with `unicast`
/// (a program without an ingress control), each packet not marked [`PARSE_ONLY`] then
/// has the unicast check after ingress (`Gen::unicast`), and the function returns the
/// count of the others.
pub(crate) fn emit(g: &mut Gen, lanes: Value, n: Value, begin: bool, unicast: bool) {
    let e = g.e;
    let prog = &*e.prog;
    let plan = e.plan();
    let codes = prog.error_codes;
    let i_var = g.var(0);
    let head = g.b.create_block();
    let body = g.b.create_block();
    let exit = g.b.create_block();
    g.b.ins().jump(head, &[]);
    g.b.switch_to_block(head);
    let i = g.b.use_var(i_var);
    let more = g.b.ins().icmp(IntCC::UnsignedLessThan, i, n);
    g.b.ins().brif(more, body, &[], exit, &[]);

    g.b.switch_to_block(body);
    let i = g.b.use_var(i_var);
    let lane = g.lane(lanes, i);
    let pk = Pkt {
        phv: g.lane_ptr(lane, off::LANE_PHV),
        valid: g.lane_ptr(lane, off::LANE_VALID),
        data: g.lane_ptr(lane, off::LANE_PKT),
        len: g.lane_ptr(lane, off::LANE_LEN),
        lane,
        cursor: g.var(0),
        steps: g.var(0),
        error: g.var(u64::from(codes.no_error)),
    };
    let out = (begin || unicast).then(|| g.b.ins().load(types::I64, mem(), pk.lane, off::LANE_OUT));
    if let (true, Some(out)) = (begin, out) {
        // a packet with preserved fields already entered (BEGUN): the interpreter
        // wrote them back after its reset
        let go = g.b.create_block();
        let skip = g.b.create_block();
        g.b.ins().brif(out, skip, &[], go, &[]);
        g.b.switch_to_block(go);
        g.begin_ingress(pk.lane, pk.phv, pk.valid, pk.len);
        g.b.ins().jump(skip, &[]);
        g.b.switch_to_block(skip);
    }
    let states: Vec<Block> = plan
        .parser
        .states
        .iter()
        .map(|_| g.b.create_block())
        .collect();
    let accept = g.b.create_block();
    let finish = g.b.create_block();
    let fail = g.b.create_block();
    // the state chosen at run time (helper selects): a jump table over the states
    let next_var = g.b.declare_var(types::I64);
    let dispatch = g.b.create_block();
    let to = |s: Option<u32>| -> Block {
        match s {
            Some(s) => states[s as usize],
            None => accept,
        }
    };

    // the likeliest path as one step
    let start = to(plan.parser.init);
    match &plan.parser.path {
        Some(path) => {
            let on = g.b.create_block();
            let need = g.k(u64::from(path.len));
            let short = g.b.ins().icmp(IntCC::UnsignedLessThan, pk.len, need);
            let check = g.b.create_block();
            g.b.ins().brif(short, start, &[], check, &[]);
            g.b.switch_to_block(check);
            let mut ok = g.k(1);
            for &(at, shift, mask, value) in path.checks.iter() {
                let v = g.read_window(pk.data, shift, mask, at);
                let eq = g.b.ins().icmp_imm_s(IntCC::Equal, v, value as i64);
                let eq = g.b.ins().uextend(types::I64, eq);
                ok = g.b.ins().band(ok, eq);
            }
            g.b.ins().brif(ok, on, &[], start, &[]);
            g.b.switch_to_block(on);
            g.copy(pk.phv, path.phv_off as i32, pk.data, 0, path.len);
            for &h in path.headers.iter() {
                g.set_valid(pk.valid, h, true);
            }
            let c = g.k(u64::from(path.len));
            g.b.def_var(pk.cursor, c);
            let s = g.k(path.headers.len() as u64);
            g.b.def_var(pk.steps, s);
            g.b.ins().jump(to(path.next), &[]);
        }
        None => {
            g.b.ins().jump(start, &[]);
        }
    }

    // the states
    let counted = has_cycle(prog);
    for (si, st) in plan.parser.states.iter().enumerate() {
        g.b.switch_to_block(states[si]);
        if counted {
            steps(g, &pk, codes.parser_timeout, finish);
        }
        let mut oi = 0;
        while oi < st.ops.len() {
            let run = copy_run(&st.ops[oi..]);
            if let Some((dst, src, n, ops)) = run {
                // byte copies that continue one another, as one copy
                g.copy(pk.phv, dst as i32, pk.phv, src as i32, n);
                oi += ops;
                continue;
            }
            parse_op(g, &pk, si as u32, oi as u32, st.ops[oi], fail);
            oi += 1;
        }
        match &st.next {
            Next::Goto(next) => {
                g.b.ins().jump(to(*next), &[]);
            }
            Next::Select(sel) if select_inline(sel) => {
                let key = select_key(g, pk.phv, sel);
                let trans: Vec<(u64, u64, Option<u32>)> = match &sel.word {
                    Some(w) => w.trans.clone(),
                    None => sel
                        .trans
                        .iter()
                        .map(|&(v, m, next)| (v as u64, m as u64, next))
                        .collect(),
                };
                let mut done = false;
                for &(v, m, next) in &trans {
                    if m == 0 {
                        g.b.ins().jump(to(next), &[]);
                        done = true;
                        break;
                    }
                    let km = g.b.ins().band_imm_s(key, m as i64);
                    let eq = g.b.ins().icmp_imm_s(IntCC::Equal, km, v as i64);
                    let other = g.b.create_block();
                    g.b.ins().brif(eq, to(next), &[], other, &[]);
                    g.b.switch_to_block(other);
                }
                if !done {
                    // no transition matches: bmv2 accepts
                    g.b.ins().jump(accept, &[]);
                }
            }
            Next::Select(_) | Next::General => {
                let env = g.env;
                let sk = g.k32(si as u32);
                let c = g.b.use_var(pk.cursor);
                let r = g.call(H::Select, &[env, pk.lane, sk, c]).unwrap_or(c);
                let is_err =
                    g.b.ins()
                        .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, r, ERR_BIT as i64);
                let ok = g.b.create_block();
                let err = g.b.create_block();
                g.b.ins().brif(is_err, err, &[], ok, &[]);
                g.b.switch_to_block(err);
                let code = g.b.ins().band_imm_s(r, 0xffff_ffff);
                g.b.def_var(pk.error, code);
                g.b.ins().jump(finish, &[]);
                g.b.switch_to_block(ok);
                g.b.def_var(next_var, r);
                g.b.ins().jump(dispatch, &[]);
            }
        }
    }

    // a state chosen by the interpreter
    g.b.switch_to_block(dispatch);
    let nx = g.b.use_var(next_var);
    let is_accept = g.b.ins().icmp_imm_s(IntCC::Equal, nx, ACCEPT as i64);
    let table = g.b.create_block();
    g.b.ins().brif(is_accept, accept, &[], table, &[]);
    g.b.switch_to_block(table);
    let idx = g.b.ins().ireduce(types::I32, nx);
    let def = g.b.func.dfg.block_call(accept, &[]);
    let calls: Vec<_> = states
        .iter()
        .map(|b| g.b.func.dfg.block_call(*b, &[]))
        .collect();
    let jt = g.b.create_jump_table(JumpTableData::new(def, &calls));
    g.b.ins().br_table(idx, jt);

    // errors: the code is in `error`
    g.b.switch_to_block(fail);
    g.b.ins().jump(finish, &[]);

    g.b.switch_to_block(accept);
    let ok = g.k(u64::from(codes.no_error));
    g.b.def_var(pk.error, ok);
    g.b.ins().jump(finish, &[]);

    // the end of every packet's parse: payload offset, parser_error, verification
    g.b.switch_to_block(finish);
    let c = g.b.use_var(pk.cursor);
    g.b.ins().store(mem(), c, pk.lane, off::LANE_OUT);
    let cx = g.lane_ptr(pk.lane, off::LANE_CTX);
    g.b.ins().store(mem(), c, cx, crate::abi::ctx::PAYLOAD_OFF);
    if let Some(w) = e.std_meta.parser_error {
        let err = g.b.use_var(pk.error);
        g.write64(pk.phv, w, err);
    }
    let ck = &plan.checksums;
    if !ck.verify.is_empty() {
        let inline = ck.verify_planned
            && ck
                .verify
                .iter()
                .all(|o| matches!(o, CsumOp::Planned(c) if csum_inline(c)));
        if inline {
            let mut bad = g.k(0);
            for op in &ck.verify {
                if let CsumOp::Planned(c) = op {
                    let f = g.csum_fails(pk.phv, pk.valid, pk.lane, c);
                    bad = g.b.ins().bor(bad, f);
                }
            }
            if let Some(w) = e.std_meta.checksum_error {
                let set = g.b.create_block();
                let done = g.b.create_block();
                g.b.ins().brif(bad, set, &[], done, &[]);
                g.b.switch_to_block(set);
                let one = g.k(1);
                g.write64(pk.phv, w, one);
                g.b.ins().jump(done, &[]);
                g.b.switch_to_block(done);
            }
        } else {
            let env = g.env;
            g.call(H::Verify, &[env, pk.lane]);
        }
    }
    if let (true, Some(out)) = (unicast, out) {
        let only = g.b.ins().band_imm_u(out, PARSE_ONLY as i64);
        let check = g.b.create_block();
        let next = g.b.create_block();
        g.b.ins().brif(only, next, &[], check, &[]);
        g.b.switch_to_block(check);
        g.unicast(pk.lane, pk.phv);
        g.b.ins().jump(next, &[]);
        g.b.switch_to_block(next);
    }
    let i = g.b.use_var(i_var);
    let i = g.b.ins().iadd_imm_s(i, 1);
    g.b.def_var(i_var, i);
    g.b.ins().jump(head, &[]);

    g.b.switch_to_block(exit);
    let o = if unicast {
        g.b.ins().load(types::I64, mem(), g.env, off::ENV_OTHERS)
    } else {
        g.k(0)
    };
    g.b.ins().return_(&[o]);
}

/// Whether the parse graph has a cycle (a state that can reach itself through the
/// transitions). Without one a packet goes through each state at most once, so it can
/// never run more than [`MAX_STEPS`] states and the steps need no counting.
fn has_cycle(p: &p4jet_ir::Program) -> bool {
    // depth-first, colouring states: 0 unseen, 1 on the path, 2 done
    let states = &p.parser.states;
    let mut colour = vec![0u8; states.len()];
    let mut stack: Vec<(usize, usize)> = vec![];
    for root in 0..states.len() {
        if colour[root] != 0 {
            continue;
        }
        colour[root] = 1;
        stack.push((root, 0));
        while let Some(&mut (s, ref mut t)) = stack.last_mut() {
            let next = states[s].transitions.get(*t).map(|tr| tr.next);
            *t += 1;
            match next {
                None => {
                    colour[s] = 2;
                    stack.pop();
                }
                Some(None) => {}
                Some(Some(n)) => match colour.get(n as usize) {
                    Some(1) => return true,
                    Some(0) => {
                        colour[n as usize] = 1;
                        stack.push((n as usize, 0));
                    }
                    // done, or out of range (no state)
                    _ => {}
                },
            }
        }
    }
    false
}

/// `steps += 1`; more than [`MAX_STEPS`]: ParserTimeout (code `timeout`) to `finish`.
fn steps(g: &mut Gen, pk: &Pkt, timeout: u32, finish: Block) {
    let s = g.b.use_var(pk.steps);
    let s = g.b.ins().iadd_imm_s(s, 1);
    g.b.def_var(pk.steps, s);
    let over =
        g.b.ins()
            .icmp_imm_s(IntCC::UnsignedGreaterThan, s, MAX_STEPS as i64);
    let go = g.b.create_block();
    let out = g.b.create_block();
    g.b.ins().brif(over, out, &[], go, &[]);
    g.b.switch_to_block(out);
    let t = g.k(u64::from(timeout));
    g.b.def_var(pk.error, t);
    g.b.ins().jump(finish, &[]);
    g.b.switch_to_block(go);
}

/// Whether select `sel` compiles: a one-field key with a 64-bit window, or a key of
/// fields of at most 64 bits each, 64 bits in all (no lookahead bits).
fn select_inline(sel: &Select) -> bool {
    if sel.word.is_some() {
        return true;
    }
    let mut total = 0;
    for k in &sel.key {
        match *k {
            SelectKey::Field { loc, bits } if loc.width <= 64 && (1..=8).contains(&loc.nbytes) => {
                total += bits
            }
            _ => return false,
        }
    }
    !sel.key.is_empty() && total <= 64
}

/// The key of select `sel` ([`select_inline`]) in 64 bits: the fields' values, each
/// in its key bits, concatenated (`Select::next`). Fields that follow each other in
/// the PHV as they follow each other in the key (each but the first filling its key
/// bits) are one run of bits; the runs within 8 bytes of one another share one 8-byte
/// load, each then a shift and a mask: a key of fields side by side is one big-endian
/// word.
fn select_key(g: &mut Gen, phv: Value, sel: &Select) -> Value {
    if let Some(w) = &sel.word {
        return g.read_window(phv, w.shift, w.mask, w.byte);
    }
    // (first PHV bit, width, key bits) per run
    let mut runs: Vec<(u32, u32, u32)> = vec![];
    for k in &sel.key {
        let SelectKey::Field { loc, bits } = *k else {
            continue;
        };
        let start = loc.byte * 8 + u32::from(loc.bit);
        match runs.last_mut() {
            Some(r) if r.0 + r.1 == start && bits == loc.width => {
                r.1 += loc.width;
                r.2 += bits;
            }
            _ => runs.push((start, loc.width, bits)),
        }
    }
    let mut key: Option<Value> = None;
    // the current 8-byte window: (its first byte, the loaded word)
    let mut win: Option<(u32, Value)> = None;
    for (start, width, bits) in runs {
        let (wb, w) = match win {
            Some((wb, w)) if start >= wb * 8 && start + width <= wb * 8 + 64 => (wb, w),
            _ => {
                let wb = start / 8;
                let w = g.b.ins().load(types::I64, mem(), phv, wb as i32);
                let w = g.b.ins().bswap(w);
                win = Some((wb, w));
                (wb, w)
            }
        };
        // a field of at most 64 bits from bit `start % 8` always lies in its window;
        // a run of several may not: then it is read on its own
        let v = if start + width <= wb * 8 + 64 {
            let shift = wb * 8 + 64 - start - width;
            let v = if shift > 0 {
                g.b.ins().ushr_imm_u(w, i64::from(shift))
            } else {
                w
            };
            if width < 64 {
                g.b.ins().band_imm_s(v, super::mask64(width) as i64)
            } else {
                v
            }
        } else {
            read_bits(g, phv, start, width)
        };
        key = Some(match key {
            // `bits` < 64 here: the key's earlier elements took some of its 64
            Some(k) => {
                let k = g.b.ins().ishl_imm_s(k, i64::from(bits));
                g.b.ins().bor(k, v)
            }
            None => v,
        });
    }
    key.unwrap_or_else(|| g.k(0))
}

/// `width` (at most 64) bits of the PHV from bit `start`, which an 8-byte window from
/// `start`'s byte may not hold: two windows, joined.
fn read_bits(g: &mut Gen, phv: Value, start: u32, width: u32) -> Value {
    let hi_w = 64 - start % 8;
    let lo_w = width - hi_w.min(width);
    let hi = g.read_window(phv, 0, super::mask64(hi_w), start / 8);
    if lo_w == 0 {
        let hi = g.b.ins().ushr_imm_u(hi, i64::from(hi_w - width));
        return g.b.ins().band_imm_s(hi, super::mask64(width) as i64);
    }
    let lo = g.read_window(phv, 64 - lo_w, super::mask64(lo_w), start / 8 + 8);
    let hi = g.b.ins().ishl_imm_s(hi, i64::from(lo_w));
    g.b.ins().bor(hi, lo)
}

/// The [`ParseOp::CopyBytes`] at the start of `ops` and those right after it that
/// continue it in the PHV, both source and destination (p4c slicing a `lookahead`
/// temporary into a probe header's fields), when they are at least two and the whole
/// source does not overlap the whole destination (so no copy reads a byte another
/// wrote): (destination, source, bytes, operations).
fn copy_run(ops: &[ParseOp]) -> Option<(u32, u32, u32, usize)> {
    let Some(&ParseOp::CopyBytes { dst, src, n }) = ops.first() else {
        return None;
    };
    let mut len = n;
    let mut k = 1;
    while let Some(&ParseOp::CopyBytes {
        dst: d,
        src: s,
        n: m,
    }) = ops.get(k)
    {
        if d != dst + len || s != src + len {
            break;
        }
        len += m;
        k += 1;
    }
    (k > 1 && (dst + len <= src || src + len <= dst)).then_some((dst, src, len, k))
}

/// `cursor + len <= frame length`, else ParserTooShort to `fail`; continues in a new
/// block when it holds.
fn need(g: &mut Gen, pk: &Pkt, extra: u32, fail: Block) {
    let c = g.b.use_var(pk.cursor);
    let end = g.b.ins().iadd_imm_s(c, i64::from(extra));
    let short = g.b.ins().icmp(IntCC::UnsignedGreaterThan, end, pk.len);
    let ok = g.b.create_block();
    let bad = g.b.create_block();
    g.b.ins().brif(short, bad, &[], ok, &[]);
    g.b.switch_to_block(bad);
    let code = g.k(u64::from(g.e.prog.error_codes.packet_too_short));
    g.b.def_var(pk.error, code);
    g.b.ins().jump(fail, &[]);
    g.b.switch_to_block(ok);
}

/// Copies `len` frame bytes at the cursor to PHV offset `off` and advances the cursor
/// (the bounds were checked).
fn take(g: &mut Gen, pk: &Pkt, off: u32, len: u32) {
    let c = g.b.use_var(pk.cursor);
    let src = g.b.ins().iadd(pk.data, c);
    g.copy(pk.phv, off as i32, src, 0, len);
    let c = g.b.ins().iadd_imm_s(c, i64::from(len));
    g.b.def_var(pk.cursor, c);
}

/// Operation `oi` of state `si`.
fn parse_op(g: &mut Gen, pk: &Pkt, si: u32, oi: u32, op: ParseOp, fail: Block) {
    let prog = &*g.e.prog;
    match op {
        ParseOp::Extract { h, off, len, union } => {
            need(g, pk, len, fail);
            take(g, pk, off, len);
            if union && let Some((u, _)) = prog.headers[h as usize].union {
                for m in &prog.unions[u as usize].headers {
                    g.set_valid(pk.valid, *m, false);
                }
            }
            g.set_valid(pk.valid, h, true);
        }
        ParseOp::ExtractN { h, n, off, len } => {
            // all at once when the frame holds them, else header by header
            let c = g.b.use_var(pk.cursor);
            let end = g.b.ins().iadd_imm_s(c, i64::from(len));
            let short = g.b.ins().icmp(IntCC::UnsignedGreaterThan, end, pk.len);
            let all = g.b.create_block();
            let each = g.b.create_block();
            let done = g.b.create_block();
            g.b.ins().brif(short, each, &[], all, &[]);
            g.b.switch_to_block(all);
            take(g, pk, off, len);
            for h in h..h + n {
                g.set_valid(pk.valid, h, true);
            }
            g.b.ins().jump(done, &[]);
            g.b.switch_to_block(each);
            for h in h..h + n {
                let hi = &prog.headers[h as usize];
                need(g, pk, hi.max_bytes, fail);
                take(g, pk, hi.offset, hi.max_bytes);
                g.set_valid(pk.valid, h, true);
            }
            // (unreachable: the whole run did not fit, so one header failed)
            g.b.ins().jump(done, &[]);
            g.b.switch_to_block(done);
        }
        ParseOp::Copy { dst, src } => {
            let inline = dst.width <= 64 && src.width <= 64 && dst.nbytes <= 8 && src.nbytes <= 8;
            match inline.then(|| g.read_field(pk.phv, src)).flatten() {
                Some(v) => {
                    g.write_field(pk.phv, dst, v);
                }
                None => helper(g, pk, si, oi, fail),
            }
        }
        ParseOp::Copy64 {
            dst,
            shift,
            mask,
            src,
        } => {
            let v = g.read_window(pk.phv, shift, mask, src.byte);
            g.write64(pk.phv, dst, v);
        }
        ParseOp::CopyBytes { dst, src, n } => {
            let phv = pk.phv;
            g.copy(phv, dst as i32, phv, src as i32, n);
        }
        ParseOp::SetAhead { dst, at, n, .. } => {
            // from the frame when it holds the bytes, else the general operation
            let c = g.b.use_var(pk.cursor);
            let end = g.b.ins().iadd_imm_s(c, i64::from(at + n));
            let short = g.b.ins().icmp(IntCC::UnsignedGreaterThan, end, pk.len);
            let copy = g.b.create_block();
            let slow = g.b.create_block();
            let done = g.b.create_block();
            g.b.ins().brif(short, slow, &[], copy, &[]);
            g.b.switch_to_block(copy);
            let src = g.b.ins().iadd(pk.data, c);
            g.copy(pk.phv, dst as i32, src, at as i32, n);
            g.b.ins().jump(done, &[]);
            g.b.switch_to_block(slow);
            helper(g, pk, si, oi, fail);
            g.b.ins().jump(done, &[]);
            g.b.switch_to_block(done);
        }
        ParseOp::AddHeader { h, off, len, .. } => {
            let px = super::action::Px {
                lane: pk.lane,
                phv: pk.phv,
                valid: pk.valid,
            };
            let done = g.b.create_block();
            super::action::add_header(g, px, h, off, len, done);
            g.b.switch_to_block(done);
        }
        ParseOp::General(_) => helper(g, pk, si, oi, fail),
    }
}

/// Operation `oi` of state `si` by the interpreter.
fn helper(g: &mut Gen, pk: &Pkt, si: u32, oi: u32, fail: Block) {
    let env = g.env;
    let s = g.k32(si);
    let o = g.k32(oi);
    let c = g.b.use_var(pk.cursor);
    let r = g.call(H::ParseOp, &[env, pk.lane, s, o, c]).unwrap_or(c);
    let is_err =
        g.b.ins()
            .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, r, ERR_BIT as i64);
    let ok = g.b.create_block();
    let err = g.b.create_block();
    g.b.ins().brif(is_err, err, &[], ok, &[]);
    g.b.switch_to_block(err);
    let code = g.b.ins().band_imm_s(r, 0xffff_ffff);
    g.b.def_var(pk.error, code);
    g.b.ins().jump(fail, &[]);
    g.b.switch_to_block(ok);
    g.b.def_var(pk.cursor, r);
}
