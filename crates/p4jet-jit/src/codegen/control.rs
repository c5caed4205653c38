//! A control block as native code over a chunk of at most 64 packets.
//!
//! Each packet runs straight-line code from the control's first node: conditions are
//! branches, call nodes inline actions, until the packet reaches a table node, where
//! it joins that table's mask (or leaves the control). Tables are then applied in the
//! plan's topological order: every waiting packet's key is built, one call into the
//! interpreter looks them all up and resolves their outcomes, and each packet runs its
//! action (inline, behind a jump table over the table's actions) and continues, again
//! straight-line, to its next table or the end. Every edge goes to a higher node, so
//! a table is applied once, after every packet that can reach it got there.
//!
//! The straight-line code between tables is a *region*: the blocks of the nodes
//! reachable from an entry without crossing a table, emitted once per loop that enters
//! it (the first pass, and each table's loop over its packets).

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    Block, InstBuilder, StackSlot, StackSlotData, StackSlotKind, Value, types,
};
use cranelift_frontend::Variable;
use p4jet_engine::ControlBlock;
use p4jet_engine::plan::control::{CondTest, ControlPlan, Node};
use p4jet_engine::plan::table::{ApplyNext, Key};
use p4jet_ir::ControlNode;

use super::action::{self, Px};
use super::checksum::{cond_inline, tree_inline};
use super::{Gen, H, PTR, mem};
use crate::abi::{ACTION_NONE, off};

/// Where a table node's mask of waiting packets is kept: 8 bytes of a stack slot.
#[derive(Clone, Copy)]
struct Mask {
    ss: StackSlot,
    at: i32,
}

impl Mask {
    /// `mask |= bit`.
    fn add(self, g: &mut Gen, bit: Value) {
        let m = g.b.ins().stack_load(PTR, types::I64, self.ss, self.at);
        let m = g.b.ins().bor(m, bit);
        g.b.ins().stack_store(PTR, m, self.ss, self.at);
    }
}

/// What the region code of one loop needs.
struct Region<'c> {
    ctl: &'c ControlPlan,
    ir: &'c p4jet_ir::Control,
    /// Per node: where the mask of a table node's waiting packets is kept.
    at: &'c [Option<Mask>],
    /// Per table: the packets that applied it inline ([`inline_default`]) in this
    /// call, counted as its lookups at the end.
    counts: &'c [Option<Variable>],
    /// The packet.
    px: Px,
    /// `1 << lane index`.
    bit: Value,
    /// Where a packet goes when its walk stops (at a table or the end).
    done: Block,
    /// The ingress control's unicast check where the control ends for a packet
    /// ([`fuses_unicast`]; not in egress).
    unicast: bool,
    /// Where a packet goes when the control ends for it (the unicast check, then
    /// `done`; created when first used).
    end_at: Option<Block>,
    /// The blocks of the nodes emitted so far in this loop.
    blocks: HashMap<u32, Block>,
    /// Nodes whose blocks are still to fill.
    todo: Vec<u32>,
}

/// Whether action `a` runs in any order across packets with the same results: it
/// touches no state that packets share and whose order shows (registers, meters,
/// digests, random numbers, stateful hash algorithms; counters add up the same).
fn order_free(p: &p4jet_ir::Program, a: u32, depth: u32) -> bool {
    use p4jet_ir::{HashAlgo, Prim};
    let Some(act) = p.actions.get(a as usize) else {
        return false;
    };
    depth < 8
        && act.body.iter().all(|prim| match prim {
            Prim::RegisterRead { .. }
            | Prim::RegisterWrite { .. }
            | Prim::ExecuteMeter { .. }
            | Prim::Digest(_)
            | Prim::Random { .. } => false,
            Prim::Hash { calc, .. } => p.calculations.get(*calc as usize).is_some_and(|c| {
                !matches!(
                    c.algo,
                    HashAlgo::RoundRobin | HashAlgo::RoundRobinConsistent | HashAlgo::Random
                )
            }),
            Prim::Call(b) => order_free(p, *b, depth + 1),
            _ => true,
        })
}

/// Table `t`'s action when applying it is that action: a keyless table (no entry is
/// ever looked up) whose default entry the control plane may not change, a plain call
/// without action data of an action in the table's list that runs in any order
/// (`order_free`), and no direct counter or meter — p4c's `tbl_*` tables that wrap
/// the statements of a control. Such a table is applied inline, on the packet's
/// straight-line stretch: the action, one more lookup (a miss) counted, and the
/// miss's successor. Returns (action, its slot in the table's list).
fn inline_default(e: &p4jet_engine::Engine, t: u32) -> Option<(u32, usize)> {
    let ti = e.prog.tables.get(t as usize)?;
    let tp = e.plan().tables.get(t as usize)?;
    let call = ti.default_entry.as_ref()?;
    let plain = ti.kind == p4jet_ir::TableKind::Simple && ti.action_profile.is_none();
    let slot = ti.action_slot(call.action)?;
    (ti.key_bytes == 0
        && matches!(tp.key, Key::Empty)
        && ti.default_entry_const
        && plain
        && !tp.direct
        && ti.direct_counter.is_none()
        && ti.direct_meter.is_none()
        && call.data.is_empty()
        && order_free(&e.prog, call.action, 0))
    .then_some((call.action, slot))
}

/// Whether packets may run their straight-line stretches one after the other: the
/// call nodes on them give the same results in any order (else [`emit`] compiles the
/// interpreter's order, node by node: `walk`).
fn straight(e: &p4jet_engine::Engine, ctl: &ControlPlan) -> bool {
    ctl.nodes.iter().all(|n| match n {
        Node::Call { action, .. } => order_free(&e.prog, *action, 0),
        _ => true,
    })
}

/// Whether the egress control's function also does each packet's egress arrival
/// (`Gen::begin_egress`, at the start of the packet's first stretch), so that no
/// separate arrival function runs before it.
pub(crate) fn fuses_begin_egress(e: &p4jet_engine::Engine) -> bool {
    let ctl = &e.plan().egress;
    ctl.init.is_some() && straight(e, ctl)
}

/// Whether the ingress control's function also does the unicast check after ingress
/// (`Gen::unicast`, where the control ends for each packet; returning the count of the
/// others), so that no separate unicast function runs after it.
pub(crate) fn fuses_unicast(e: &p4jet_engine::Engine) -> bool {
    let ctl = &e.plan().ingress;
    ctl.init.is_some() && straight(e, ctl)
}

/// Emits the control function's body: `(env, lanes, n)` with `n` at most 64.
pub(crate) fn emit(g: &mut Gen, which: ControlBlock, lanes: Value, n: Value) {
    let e = g.e;
    let (ctl, ir) = match which {
        ControlBlock::Ingress => (&e.plan().ingress, &e.prog.ingress),
        ControlBlock::Egress => (&e.plan().egress, &e.prog.egress),
    };
    // packets may run their straight-line stretches one after the other when the
    // call nodes on them give the same results in any order; else the interpreter's
    // order: node by node
    if !straight(e, ctl) {
        return super::walk::emit_walk(g, which, lanes, n);
    }
    let Some(init) = ctl.init else {
        let z = g.k(0);
        g.b.ins().return_(&[z]);
        return;
    };
    let inline: Vec<Option<(u32, usize)>> = ctl
        .nodes
        .iter()
        .map(|n| match n {
            Node::Apply { table } => inline_default(e, *table),
            _ => None,
        })
        .collect();
    // the tables' masks of waiting packets, in one stack slot: memory, not variables
    // every block would carry (they are live across the whole function, and as
    // variables their moves and spills at each join cost more than a load, an or and
    // a store where a packet joins a table)
    let tables = ctl
        .nodes
        .iter()
        .zip(&inline)
        .filter(|(n, i)| matches!(n, Node::Apply { .. }) && i.is_none())
        .count();
    let ss = g.b.create_sized_stack_slot(StackSlotData::new(
        StackSlotKind::ExplicitSlot,
        (8 * tables.max(1)) as u32,
        3,
    ));
    let mut k = 0;
    let at: Vec<Option<Mask>> = ctl
        .nodes
        .iter()
        .zip(&inline)
        .map(|(n, i)| {
            (matches!(n, Node::Apply { .. }) && i.is_none()).then(|| {
                let m = Mask { ss, at: 8 * k };
                k += 1;
                let z = g.k(0);
                g.b.ins().stack_store(PTR, z, ss, m.at);
                m
            })
        })
        .collect();
    let mut counts: Vec<Option<Variable>> = vec![None; e.prog.tables.len()];
    for (n, i) in ctl.nodes.iter().zip(&inline) {
        if let (Node::Apply { table }, Some(_)) = (n, i)
            && let Some(c) = counts.get_mut(*table as usize)
            && c.is_none()
        {
            *c = Some(g.var(0));
        }
    }
    // the ingress control ends each packet with the unicast check
    let unicast = which == ControlBlock::Ingress;
    // every packet from the first node to its first table
    let i_var = g.var(0);
    let head = g.b.create_block();
    let work = g.b.create_block();
    let tables_b = g.b.create_block();
    g.b.ins().jump(head, &[]);
    g.b.switch_to_block(head);
    let i = g.b.use_var(i_var);
    let more = g.b.ins().icmp(IntCC::UnsignedLessThan, i, n);
    g.b.ins().brif(more, work, &[], tables_b, &[]);
    g.b.switch_to_block(work);
    let i = g.b.use_var(i_var);
    let lane = g.lane(lanes, i);
    let px = Px {
        lane,
        phv: g.lane_ptr(lane, off::LANE_PHV),
        valid: g.lane_ptr(lane, off::LANE_VALID),
    };
    if which == ControlBlock::Egress && super::arch::begin_egress_writes(e) {
        // the packet's egress arrival (`fuses_begin_egress`): it writes only the
        // packet's own metadata, from its context and the time, so it may run just
        // before the packet's first stretch instead of for every packet first (when
        // the caller ran `Engine::begin_egress` before, this writes the same values)
        g.begin_egress(lane, px.phv);
    }
    let bit = g.bit(i);
    let next_i = g.b.create_block();
    let mut r = Region {
        ctl,
        ir,
        at: &at,
        counts: &counts,
        px,
        bit,
        done: next_i,
        unicast,
        end_at: None,
        blocks: HashMap::new(),
        todo: vec![],
    };
    let entry = r.block(g, Some(init));
    g.b.ins().jump(entry, &[]);
    r.fill(g);
    g.b.switch_to_block(next_i);
    let i = g.b.use_var(i_var);
    let i = g.b.ins().iadd_imm_s(i, 1);
    g.b.def_var(i_var, i);
    g.b.ins().jump(head, &[]);
    // the tables, in topological order
    g.b.switch_to_block(tables_b);
    for (ni, node) in ctl.nodes.iter().enumerate() {
        let (Node::Apply { table }, Some(m)) = (node, at[ni]) else {
            continue;
        };
        let here = g.b.ins().stack_load(PTR, types::I64, m.ss, m.at);
        let body = g.b.create_block();
        let next = g.b.create_block();
        g.b.ins().brif(here, body, &[], next, &[]);
        g.b.switch_to_block(body);
        apply(g, ctl, ir, &at, &counts, unicast, *table, lanes, here);
        g.b.ins().jump(next, &[]);
        g.b.switch_to_block(next);
    }
    // the lookups of the tables applied inline
    for (t, c) in counts.iter().enumerate() {
        let Some(c) = c else { continue };
        let n = g.b.use_var(*c);
        let count = g.b.create_block();
        let next = g.b.create_block();
        g.b.ins().brif(n, count, &[], next, &[]);
        g.b.switch_to_block(count);
        let env = g.env;
        let tk = g.k32(t as u32);
        g.call(H::Count, &[env, tk, n]);
        g.b.ins().jump(next, &[]);
        g.b.switch_to_block(next);
    }
    let r = if unicast {
        g.b.ins().load(types::I64, mem(), g.env, off::ENV_OTHERS)
    } else {
        g.k(0)
    };
    g.b.ins().return_(&[r]);
}

impl Region<'_> {
    /// The block where the control ends for the packet.
    fn end(&mut self, g: &mut Gen) -> Block {
        if !self.unicast {
            return self.done;
        }
        *self.end_at.get_or_insert_with(|| g.b.create_block())
    }

    /// The block of node `n` in this region (None: the end of the control).
    fn block(&mut self, g: &mut Gen, n: Option<u32>) -> Block {
        let Some(n) = n else {
            return self.end(g);
        };
        if let Some(b) = self.blocks.get(&n) {
            return *b;
        }
        let b = g.b.create_block();
        self.blocks.insert(n, b);
        self.todo.push(n);
        b
    }

    /// Fills the blocks of every node reached so far (and those they reach), and the
    /// end.
    fn fill(&mut self, g: &mut Gen) {
        self.fill_nodes(g);
        if let (Some(end), true) = (self.end_at, self.unicast) {
            g.b.switch_to_block(end);
            g.unicast(self.px.lane, self.px.phv);
            g.b.ins().jump(self.done, &[]);
        }
    }

    /// Fills the blocks of every node reached so far (and those they reach).
    fn fill_nodes(&mut self, g: &mut Gen) {
        while let Some(n) = self.todo.pop() {
            let b = self.blocks[&n];
            g.b.switch_to_block(b);
            match &self.ctl.nodes[n as usize] {
                Node::Apply { table } => {
                    let table = *table;
                    match inline_default(g.e, table) {
                        Some((a, slot)) => self.apply_inline(g, table, a, slot),
                        None => {
                            // the packet waits at this table
                            if let Some(m) = self.at.get(n as usize).copied().flatten() {
                                m.add(g, self.bit);
                            }
                            g.b.ins().jump(self.done, &[]);
                        }
                    }
                }
                Node::Cond { test, t, f } => {
                    let expr = match self.ir.nodes.get(n as usize) {
                        Some(ControlNode::Cond { expr, .. }) => Some(*expr),
                        _ => None,
                    };
                    let px = self.px;
                    let v = match test {
                        CondTest::Planned(c) if cond_inline(c) => {
                            g.cond(px.phv, px.valid, px.lane, c, expr)
                        }
                        CondTest::Tree(t) if tree_inline(t) => {
                            g.cond_tree(px.phv, px.valid, px.lane, t)
                        }
                        _ => {
                            let env = g.env;
                            let ek = g.k32(expr.unwrap_or(0));
                            let r = g.call(H::Test, &[env, px.lane, ek]).unwrap_or(ek);
                            g.b.ins().uextend(types::I64, r)
                        }
                    };
                    let tb = self.block(g, *t);
                    let fb = self.block(g, *f);
                    g.b.ins().brif(v, tb, &[], fb, &[]);
                }
                Node::Call { action, next } => {
                    let null = g.k(0);
                    let exit = action::emit(g, *action, self.px, null, null);
                    let nb = self.block(g, *next);
                    let end = self.end(g);
                    g.b.ins().brif(exit, end, &[], nb, &[]);
                }
            }
        }
    }
}

impl Region<'_> {
    /// Table `t` applied inline ([`inline_default`]): its action `a` (slot `slot`), one
    /// lookup counted, on to the miss's successor (or the end, when the action exits).
    fn apply_inline(&mut self, g: &mut Gen, t: u32, a: u32, slot: usize) {
        if let Some(c) = self.counts.get(t as usize).copied().flatten() {
            let v = g.b.use_var(c);
            let v = g.b.ins().iadd_imm_s(v, 1);
            g.b.def_var(c, v);
        }
        let null = g.k(0);
        let exit = action::emit(g, a, self.px, null, null);
        let to = match &g.e.plan().tables[t as usize].next {
            ApplyNext::Same(x) => *x,
            ApplyNext::HitMiss { miss, .. } => *miss,
            ApplyNext::ByAction { slots, .. } => slots.get(slot).copied().flatten(),
        };
        let nb = self.block(g, to);
        let end = self.end(g);
        g.b.ins().brif(exit, end, &[], nb, &[]);
    }
}

/// Applies table `t` (node of `ctl`) to the packets of `here`.
#[allow(clippy::too_many_arguments)]
fn apply(
    g: &mut Gen,
    ctl: &ControlPlan,
    ir: &p4jet_ir::Control,
    at: &[Option<Mask>],
    counts: &[Option<Variable>],
    unicast: bool,
    t: u32,
    lanes: Value,
    here: Value,
) {
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
    // 3. per waiting packet: its action, inline, and on to its next table
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
    let mut r = Region {
        ctl,
        ir,
        at,
        counts,
        px,
        bit,
        done: after,
        unicast,
        end_at: None,
        blocks: HashMap::new(),
        todo: vec![],
    };
    let slots: Vec<_> = ti.actions.iter().map(|_| g.b.create_block()).collect();
    let other = g.b.create_block();
    let none = g.b.create_block();
    dispatch(g, action, &ti.actions, &slots, none, other);
    // where a packet goes after its action: by hit/miss, or by the action's slot
    // (Some(None): no action; None: an action outside the table's list)
    let go = |g: &mut Gen, r: &mut Region, exit: Value, slot: Option<Option<usize>>| match &tp.next
    {
        ApplyNext::Same(x) => {
            let xb = r.block(g, *x);
            let end = r.end(g);
            g.b.ins().brif(exit, end, &[], xb, &[]);
        }
        ApplyNext::HitMiss { hit: h, miss: m } => {
            let on = g.b.create_block();
            let hb = r.block(g, *h);
            let mb = r.block(g, *m);
            let end = r.end(g);
            g.b.ins().brif(exit, end, &[], on, &[]);
            g.b.switch_to_block(on);
            // the hit flag read only where it decides
            let hit = g.b.ins().load(types::I32, mem(), hp, off::HIT_HIT);
            g.b.ins().brif(hit, hb, &[], mb, &[]);
        }
        ApplyNext::ByAction { slots, default } => {
            let to = match slot {
                Some(Some(s)) => slots.get(s).copied().flatten(),
                Some(None) => *default,
                // the control ends for the packet
                None => None,
            };
            let xb = r.block(g, to);
            let end = r.end(g);
            g.b.ins().brif(exit, end, &[], xb, &[]);
        }
    };
    for (s, a) in ti.actions.iter().enumerate() {
        g.b.switch_to_block(slots[s]);
        let (data, len) = outcome_data(g, *a, hp);
        let exit = action::emit(g, *a, px, data, len);
        go(g, &mut r, exit, Some(Some(s)));
    }
    // an action outside the list (run by the interpreter)
    g.b.switch_to_block(other);
    let data = g.b.ins().load(PTR, mem(), hp, off::HIT_DATA);
    let len = g.b.ins().load(types::I64, mem(), hp, off::HIT_LEN);
    let res = g
        .call(H::RunAction, &[env, lane, action, data, len])
        .unwrap_or(action);
    let exit = g.b.ins().uextend(types::I64, res);
    go(g, &mut r, exit, None);
    // no action
    g.b.switch_to_block(none);
    let zero = g.k(0);
    go(g, &mut r, zero, Some(None));
    r.fill(g);
    g.b.switch_to_block(after);
    let kv = g.b.use_var(k);
    let kv = g.b.ins().iadd_imm_s(kv, 1);
    g.b.def_var(k, kv);
    g.b.ins().jump(head, &[]);
    g.b.switch_to_block(done);
}

/// Branches on a table outcome's `action`: to the block of its first slot in the
/// table's list `actions` (`slots`), to `none` for [`ACTION_NONE`], else (an action
/// outside the list) to `other`. Compares in a row: a table has few actions, and a
/// jump table's bounds check and indirect jump cost as much as several of them.
pub(crate) fn dispatch(
    g: &mut Gen,
    action: Value,
    actions: &[u32],
    slots: &[Block],
    none: Block,
    other: Block,
) {
    for (s, a) in actions.iter().enumerate() {
        if actions[..s].contains(a) {
            // the interpreter runs the first slot of an action listed twice
            continue;
        }
        let eq = g.b.ins().icmp_imm_u(IntCC::Equal, action, i64::from(*a));
        let next = g.b.create_block();
        g.b.ins().brif(eq, slots[s], &[], next, &[]);
        g.b.switch_to_block(next);
    }
    let is_none =
        g.b.ins()
            .icmp_imm_u(IntCC::Equal, action, i64::from(ACTION_NONE));
    g.b.ins().brif(is_none, none, &[], other, &[]);
}

/// The action data and its length of the outcome at `hp`, for action `a` of the
/// table: loaded only when the action's code reads them (else zeros).
pub(crate) fn outcome_data(g: &mut Gen, a: u32, hp: Value) -> (Value, Value) {
    if action::reads_data(g.e, a) {
        let data = g.b.ins().load(PTR, mem(), hp, off::HIT_DATA);
        let len = g.b.ins().load(types::I64, mem(), hp, off::HIT_LEN);
        (data, len)
    } else {
        let z = g.k(0);
        (z, z)
    }
}
