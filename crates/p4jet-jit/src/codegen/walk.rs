//! A control block as native code in the interpreter's order (for controls whose call
//! nodes touch state shared by packets: registers, meters, digests, where the order of
//! packets and nodes shows): per node (in the plan's topological order) a mask of the
//! packets waiting there, kept in registers or
//! the stack; a condition is tested for each of them and splits the mask; a table
//! builds every waiting packet's key, calls the interpreter once for the batched
//! lookup and the outcomes, then runs each packet's action inline (a jump table over
//! the table's actions) and moves it to its next node; a call node runs its action.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};
use cranelift_frontend::Variable;
use p4jet_engine::ControlBlock;
use p4jet_engine::plan::control::{CondTest, Node};
use p4jet_engine::plan::table::{ApplyNext, Key};
use p4jet_ir::ControlNode;

use super::action::{self, Px};
use super::checksum::{cond_inline, tree_inline};
use super::{Gen, H, PTR, mem};
use crate::abi::off;

/// Emits the control function's body: `(env, lanes, n)` with `n` at most 64.
pub(crate) fn emit_walk(g: &mut Gen, which: ControlBlock, lanes: Value, n: Value) {
    let e = g.e;
    let (ctl, ir) = match which {
        ControlBlock::Ingress => (&e.plan().ingress, &e.prog.ingress),
        ControlBlock::Egress => (&e.plan().egress, &e.prog.egress),
    };
    let Some(init) = ctl.init else {
        let z = g.k(0);
        g.b.ins().return_(&[z]);
        return;
    };
    let at: Vec<Variable> = ctl.nodes.iter().map(|_| g.var(0)).collect();
    // every packet of the chunk starts at the first node
    let one = g.k(1);
    let sh = g.b.ins().ishl(one, n);
    let low = g.b.ins().iadd_imm_s(sh, -1);
    let all = g.k(u64::MAX);
    let is64 =
        g.b.ins()
            .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, n, 64);
    let full = g.b.ins().select(is64, all, low);
    g.b.def_var(at[init as usize], full);
    let mv = |g: &mut Gen, to: Option<u32>, m: Value| {
        if let Some(v) = to.and_then(|t| at.get(t as usize)) {
            g.or_into(*v, m);
        }
    };
    for (ni, node) in ctl.nodes.iter().enumerate() {
        let here = g.b.use_var(at[ni]);
        let body = g.b.create_block();
        let next = g.b.create_block();
        g.b.ins().brif(here, body, &[], next, &[]);
        g.b.switch_to_block(body);
        match node {
            Node::Cond { test, t, f } => {
                let expr = match ir.nodes.get(ni) {
                    Some(ControlNode::Cond { expr, .. }) => Some(*expr),
                    _ => None,
                };
                let yes = g.var(0);
                g.each_bit(here, |g, i| {
                    let lane = g.lane(lanes, i);
                    let phv = g.lane_ptr(lane, off::LANE_PHV);
                    let valid = g.lane_ptr(lane, off::LANE_VALID);
                    let b = match test {
                        CondTest::Planned(c) if cond_inline(c) => g.cond(phv, valid, lane, c, expr),
                        CondTest::Tree(t) if tree_inline(t) => g.cond_tree(phv, valid, lane, t),
                        _ => {
                            let env = g.env;
                            let ek = g.k32(expr.unwrap_or(0));
                            let r = g.call(H::Test, &[env, lane, ek]).unwrap_or(ek);
                            g.b.ins().uextend(types::I64, r)
                        }
                    };
                    let bi = g.b.ins().ishl(b, i);
                    g.or_into(yes, bi);
                });
                let y = g.b.use_var(yes);
                mv(g, *t, y);
                let no = g.b.ins().band_not(here, y);
                mv(g, *f, no);
            }
            Node::Call { action, next: nx } => {
                g.each_bit(here, |g, i| {
                    let lane = g.lane(lanes, i);
                    let px = Px {
                        lane,
                        phv: g.lane_ptr(lane, off::LANE_PHV),
                        valid: g.lane_ptr(lane, off::LANE_VALID),
                    };
                    let null = g.k(0);
                    let exit = action::emit(g, *action, px, null, null);
                    let bit = g.bit(i);
                    let zero = g.k(0);
                    let stay = g.b.ins().select(exit, zero, bit);
                    mv(g, *nx, stay);
                });
            }
            Node::Apply { table } => apply(g, *table, lanes, here, &at),
        }
        g.b.ins().jump(next, &[]);
        g.b.switch_to_block(next);
    }
    let z = g.k(0);
    g.b.ins().return_(&[z]);
}

/// A table apply for the packets of `here`.
fn apply(g: &mut Gen, t: u32, lanes: Value, here: Value, at: &[Variable]) {
    let e = g.e;
    let tp = &e.plan().tables[t as usize];
    let ti = &e.prog.tables[t as usize];
    let kb = ti.key_bytes;
    let env = g.env;
    let keys = g.b.ins().load(PTR, mem(), env, off::ENV_KEYS);
    let hits = g.b.ins().load(PTR, mem(), env, off::ENV_HITS);
    let waiting = g.b.ins().load(PTR, mem(), env, off::ENV_WAITING);
    // 1. every waiting packet's key, its lane index in `waiting`
    let w = g.var(0);
    g.each_bit(here, |g, i| {
        let wv = g.b.use_var(w);
        let slot = g.b.ins().iadd(waiting, wv);
        let i8v = g.b.ins().ireduce(types::I8, i);
        g.b.ins().store(mem(), i8v, slot, 0);
        if kb > 0 {
            let lane = g.lane(lanes, i);
            let ko = g.b.ins().imul_imm_s(wv, i64::from(kb));
            let kp = g.b.ins().iadd(keys, ko);
            match &tp.key {
                Key::Runs(runs) => {
                    let phv = g.lane_ptr(lane, off::LANE_PHV);
                    let mut o = 0i32;
                    for &(byte, n) in runs.iter() {
                        g.copy(kp, o, phv, byte as i32, n as u32);
                        o += n as i32;
                    }
                }
                Key::Parts(_) => {
                    let env = g.env;
                    let tk = g.k32(t);
                    g.call(H::BuildKey, &[env, lane, tk, kp]);
                }
                Key::Empty => {}
            }
        }
        let wv = g.b.ins().iadd_imm_s(wv, 1);
        g.b.def_var(w, wv);
    });
    // 2. the batched lookup and every packet's outcome, by the interpreter
    let wv = g.b.use_var(w);
    let w32 = g.b.ins().ireduce(types::I32, wv);
    let tk = g.k32(t);
    // the outcomes' stride: 0 when every packet's is the first (one multiplication
    // per packet, no test)
    let stride = g
        .call(H::Lookup, &[env, tk, w32])
        .unwrap_or_else(|| g.k(off::HIT_SIZE as u64));
    // 3. per waiting packet: its action, inline, and its next node
    let k = g.var(0);
    let head = g.b.create_block();
    let work = g.b.create_block();
    let done = g.b.create_block();
    g.b.ins().jump(head, &[]);
    g.b.switch_to_block(head);
    let kv = g.b.use_var(k);
    let wv = g.b.use_var(w);
    let more = g.b.ins().icmp(IntCC::UnsignedLessThan, kv, wv);
    g.b.ins().brif(more, work, &[], done, &[]);
    g.b.switch_to_block(work);
    let kv = g.b.use_var(k);
    let wp = g.b.ins().iadd(waiting, kv);
    let i = g.b.ins().uload8(types::I64, mem(), wp, 0);
    let lane = g.lane(lanes, i);
    let px = Px {
        lane,
        phv: g.lane_ptr(lane, off::LANE_PHV),
        valid: g.lane_ptr(lane, off::LANE_VALID),
    };
    let ho = g.b.ins().imul(kv, stride);
    let hp = g.b.ins().iadd(hits, ho);
    let action = g.b.ins().load(types::I32, mem(), hp, off::HIT_ACTION);
    let bit = g.bit(i);
    let after = g.b.create_block();
    let slots: Vec<_> = ti.actions.iter().map(|_| g.b.create_block()).collect();
    let other = g.b.create_block();
    let none = g.b.create_block();
    super::control::dispatch(g, action, &ti.actions, &slots, none, other);
    // where a packet goes: by hit/miss, or by the action's slot (None: no action)
    let go = |g: &mut Gen, exit: Value, slot: Option<Option<usize>>| {
        let zero = g.k(0);
        let stay = g.b.ins().select(exit, zero, bit);
        match &tp.next {
            ApplyNext::Same(x) => {
                if let Some(v) = x.and_then(|x| at.get(x as usize)) {
                    g.or_into(*v, stay);
                }
            }
            ApplyNext::HitMiss { hit: h, miss: m } => {
                // the hit flag read only where it decides
                let hit = g.b.ins().uload32(mem(), hp, off::HIT_HIT);
                let hm = g.b.ins().imul(stay, hit);
                let mm = g.b.ins().bxor(stay, hm);
                if let Some(v) = h.and_then(|x| at.get(x as usize)) {
                    g.or_into(*v, hm);
                }
                if let Some(v) = m.and_then(|x| at.get(x as usize)) {
                    g.or_into(*v, mm);
                }
            }
            ApplyNext::ByAction { slots, default } => {
                let to = match slot {
                    // an action of the table
                    Some(Some(s)) => slots.get(s).copied().flatten(),
                    // no action
                    Some(None) => *default,
                    // an action outside the table's list: the control ends
                    None => None,
                };
                if let Some(v) = to.and_then(|x| at.get(x as usize)) {
                    g.or_into(*v, stay);
                }
            }
        }
        g.b.ins().jump(after, &[]);
    };
    for (s, a) in ti.actions.iter().enumerate() {
        g.b.switch_to_block(slots[s]);
        let (data, len) = super::control::outcome_data(g, *a, hp);
        let exit = action::emit(g, *a, px, data, len);
        go(g, exit, Some(Some(s)));
    }
    // an action outside the list (run by the interpreter)
    g.b.switch_to_block(other);
    let data = g.b.ins().load(PTR, mem(), hp, off::HIT_DATA);
    let len = g.b.ins().load(types::I64, mem(), hp, off::HIT_LEN);
    let r = g
        .call(H::RunAction, &[env, lane, action, data, len])
        .unwrap_or(action);
    let exit = g.b.ins().uextend(types::I64, r);
    go(g, exit, None);
    // no action
    g.b.switch_to_block(none);
    let zero = g.k(0);
    go(g, zero, Some(None));
    g.b.switch_to_block(after);
    let kv = g.b.use_var(k);
    let kv = g.b.ins().iadd_imm_s(kv, 1);
    g.b.def_var(k, kv);
    g.b.ins().jump(head, &[]);
    g.b.switch_to_block(done);
}
