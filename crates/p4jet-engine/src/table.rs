//! Table apply: the keys of every packet waiting at a table built into one buffer,
//! one batched lookup, then each packet's action (its plan, or the interpreter) and
//! its next node by hit, miss or action.

use p4jet_ir::ActionCall;
use p4jet_tables::EntryHandle;

use crate::action::copy_param;
use crate::control::{move_all, move_to};
use crate::copy::copy_short;
use crate::eval::{EvalCtx, resolve_field};
use crate::parse::put_big;
use crate::phv::Phv;
use crate::plan::action::Form;
use crate::plan::table::{ApplyNext, Key, KeyPart};
use crate::state::{self, ControlState, EntryAction, EntryValue, Externs};
use crate::{Engine, PacketCtx, Pkt, SUB_BATCH, Scratch};

/// Room past a table key for whole-word writes (`Engine::build_key`,
/// `key_from_runs`).
pub(crate) const KEY_SLACK: usize = 16;

/// A table key made of PHV byte runs of at most 16 bytes (`Engine::key_runs`):
/// each run is copied as 16 bytes, the excess overwritten by the next run or
/// left in the `KEY_SLACK` bytes past the key.
#[inline(always)]
fn key_from_runs(runs: &[(usize, usize)], phv: &[u8], out: &mut [u8]) {
    // one run (a MAC, an IPv4 address, a port): one 16-byte move
    if let [(byte, _)] = *runs
        && let (Some(d), Some(s)) = (
            out.first_chunk_mut::<16>(),
            phv.get(byte..).and_then(|s| s.first_chunk::<16>()),
        )
    {
        *d = *s;
        return;
    }
    let mut off = 0;
    for &(byte, n) in runs {
        out[off..off + 16].copy_from_slice(&phv[byte..byte + 16]);
        off += n;
    }
}

impl Engine {
    /// Writes table `t`'s key for `phv` at the start of `out`, which must have
    /// `KEY_SLACK` bytes of room past the key: short parts are written as whole
    /// 8-byte words, and the bytes past a part are overwritten by the next
    /// part (parts are in key order) or lie past the key.
    pub(crate) fn build_key(&self, parts: &[KeyPart], phv: &Phv, out: &mut [u8]) {
        let mut off = 0;
        for part in parts {
            match part {
                KeyPart::Bytes { byte, n } => {
                    let (byte, n) = (*byte, *n);
                    if n <= 16
                        && let Some(src) = phv.data.get(byte..byte + 16)
                    {
                        out[off..off + 8].copy_from_slice(&src[..8]);
                        if n > 8 {
                            out[off + 8..off + 16].copy_from_slice(&src[8..]);
                        }
                    } else {
                        copy_short(&mut out[off..off + n], &phv.data[byte..byte + n]);
                    }
                    off += n;
                }
                KeyPart::Field { loc, nbytes, mask } => {
                    let mut v = phv.read_raw(*loc);
                    if let Some(m) = mask {
                        v &= m;
                    }
                    let nbytes = *nbytes;
                    if nbytes <= 8 {
                        // the field's bytes first, big-endian, then zeros
                        let w = (v as u64) << (64 - 8 * nbytes as u32);
                        out[off..off + 8].copy_from_slice(&w.to_be_bytes());
                    } else {
                        let be = v.to_be_bytes();
                        out[off..off + nbytes].copy_from_slice(&be[16 - nbytes..]);
                    }
                    off += nbytes;
                }
                KeyPart::Wide { loc, nbytes, mask } => {
                    let mut v = phv.read_big(*loc);
                    if let Some(m) = mask {
                        v &= m;
                    }
                    put_big(&v, &mut out[off..off + nbytes]);
                    off += nbytes;
                }
                KeyPart::Valid(h) => {
                    out[off] = phv.valid[*h as usize] as u8;
                    off += 1;
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
    pub(crate) fn apply_table(
        &self,
        cs: &ControlState,
        ex: &Externs,
        t: u32,
        here: u64,
        chunk: &mut [Pkt],
        sc: &mut Scratch,
        now_us: u64,
    ) {
        let p = &*self.prog;
        let ti = &p.tables[t as usize];
        let ts = &cs.tables[t as usize];
        let kb = ti.key_bytes as usize;
        let n = chunk.len();
        // 1. keys for every packet waiting here
        let mut waiting = [0u8; SUB_BATCH];
        let mut w = 0usize;
        sc.keys.clear();
        sc.keys.resize(n * kb.max(1) + KEY_SLACK, 0);
        let tp = &self.plan.tables[t as usize];
        let runs = match &tp.key {
            Key::Runs(r) => Some(&r[..]),
            _ => None,
        };
        let parts = match &tp.key {
            Key::Parts(parts) => &parts[..],
            _ => &[],
        };
        let mut m = here;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            waiting[w] = i as u8;
            if kb > 0 {
                let out = &mut sc.keys[w * kb..];
                match runs {
                    Some(r) => key_from_runs(r, &chunk[i].phv.data, out),
                    None => self.build_key(parts, &chunk[i].phv, out),
                }
            }
            w += 1;
        }
        // 2. one batched lookup (the keys are followed by scratch bytes: the
        // tables may read whole words past a key; `hits[..w]` bounds the count)
        let mut hits: [Option<(EntryHandle, &EntryValue)>; SUB_BATCH] = [None; SUB_BATCH];
        if kb > 0 && !ts.entries.is_empty() {
            let keys = std::mem::take(&mut sc.keys);
            ts.entries.lookup_batch(&keys, &mut hits[..w]);
            sc.keys = keys;
        }
        let found = hits[..w].iter().filter(|h| h.is_some()).count();
        sc.count_table(t, w as u64, found as u64);
        // 3. actions (whether the table has direct counters or meters: once per batch)
        let direct = tp.direct;
        // the common case without per-packet tests of what the table cannot have: no
        // direct counter or meter, no trace, the next node fixed or by hit/miss
        let fixed_next = match tp.next {
            ApplyNext::Same(next) => Some((next, next)),
            ApplyNext::HitMiss { hit, miss } => Some((hit, miss)),
            ApplyNext::ByAction { .. } => None,
        };
        if let Some((on_hit, on_miss)) = fixed_next
            && !direct
            && !self.cfg.trace
        {
            // the packets that hit, and those that exited: moved on together after
            let (mut hit_mask, mut gone) = (0u64, 0u64);
            for (k, hit) in hits.iter().enumerate().take(w) {
                let i = waiting[k] as usize;
                let ctx = &mut *chunk[i];
                let action = match hit {
                    Some((_, v)) => {
                        hit_mask |= 1u64 << i;
                        Some(&v.action)
                    }
                    None => ts.default.as_ref(),
                };
                match action {
                    Some(EntryAction::Direct(call)) => {
                        self.run_table_action(cs, ex, ctx, call, sc, now_us)
                    }
                    Some(a) => {
                        if let Some(call) = self.resolve_entry_action(cs, t, a, ctx, sc) {
                            self.run_table_action(cs, ex, ctx, call, sc, now_us);
                        }
                    }
                    None => {}
                }
                gone |= u64::from(ctx.exit) << i;
            }
            let stay = here & !gone;
            move_all(&mut sc.at, stay & hit_mask, on_hit);
            move_all(&mut sc.at, stay & !hit_mask, on_miss);
            return;
        }
        for (k, hit) in hits.iter().enumerate().take(w) {
            let i = waiting[k] as usize;
            let ctx = &mut *chunk[i];
            let (action, is_hit) = match hit {
                Some((h, v)) => {
                    if direct {
                        self.count_and_meter(ex, t, *h, ctx, now_us);
                    }
                    (Some(&v.action), true)
                }
                None => (ts.default.as_ref(), false),
            };
            let call = match action {
                Some(EntryAction::Direct(c)) => Some(c),
                Some(a) => self.resolve_entry_action(cs, t, a, ctx, sc),
                None => None,
            };
            let next = match &tp.next {
                ApplyNext::Same(next) => *next,
                ApplyNext::HitMiss { hit, miss } => {
                    if is_hit {
                        *hit
                    } else {
                        *miss
                    }
                }
                ApplyNext::ByAction { slots, default } => match &call {
                    Some(c) => ti.action_slot(c.action).and_then(|s| slots[s]),
                    None => *default,
                },
            };
            if self.cfg.trace {
                self.trace_apply(ctx, t, cs, hit.map(|(h, v)| (h, &v.action)), call);
                if let Some(call) = call {
                    // the interpreter, primitive by primitive, for their log lines
                    self.trace_action(ctx, call.action);
                    self.run_action(cs, ex, ctx, call, sc, now_us);
                }
            } else if let Some(call) = call {
                self.run_table_action(cs, ex, ctx, call, sc, now_us);
            }
            if !ctx.exit {
                move_to(&mut sc.at, i, next);
            }
        }
    }

    /// Runs a table's action on one packet through its load-time form when it has one.
    #[inline(always)]
    pub(crate) fn run_table_action(
        &self,
        cs: &ControlState,
        ex: &Externs,
        ctx: &mut PacketCtx,
        call: &ActionCall,
        sc: &mut Scratch,
        now_us: u64,
    ) {
        let Some(a) = self.plan.actions.get(call.action as usize) else {
            return;
        };
        match a.form {
            Form::Empty => {}
            Form::Copy(pc) if copy_param(&mut ctx.phv, &call.data, pc) => {}
            Form::Steps { need } if call.data.len() >= need => self.run_steps(&a.ops, ctx, call),
            _ => self.run_action(cs, ex, ctx, call, sc, now_us),
        }
    }

    /// A table hit's direct counter, direct meter (the meter's colour written to its
    /// result field) and hit time (tables whose entries can age); out of line: most
    /// tables have none of them.
    #[inline(never)]
    pub(crate) fn count_and_meter(
        &self,
        ex: &Externs,
        t: u32,
        h: EntryHandle,
        ctx: &mut PacketCtx,
        now_us: u64,
    ) {
        let p = &*self.prog;
        let ti = &p.tables[t as usize];
        state::count_entry_hit(ex.entry_hit_cells(t), h, ctx.ingress_len, now_us);
        if let (Some(mi), Some(Some(cells))) = (ti.direct_meter, ex.direct_meters.get(t as usize))
            && let Some(cell) = cells.get(state::handle_index(h))
        {
            let m = &p.meters[mi as usize];
            let units = if m.bytes { ctx.ingress_len as u64 } else { 1 };
            let color = cell
                .lock()
                .map(|mut c| c.execute(units, now_us))
                .unwrap_or(0);
            if let Some((_, dst)) = &m.direct {
                let ec = EvalCtx::of_phv(&ctx.phv);
                if let Some(fid) = resolve_field(p, &ec, dst) {
                    self.write_bits(&mut ctx.phv, fid, color as u128);
                }
            }
        }
    }

    /// Turns a stored entry action into the action call to run (member lookup, selector
    /// hashing for groups).
    pub(crate) fn resolve_entry_action<'a>(
        &self,
        cs: &'a ControlState,
        t: u32,
        a: &'a EntryAction,
        ctx: &PacketCtx,
        sc: &mut Scratch,
    ) -> Option<&'a ActionCall> {
        let p = &*self.prog;
        match a {
            EntryAction::Direct(c) => Some(c),
            EntryAction::Member(m) => {
                let prof = p.tables[t as usize].action_profile?;
                cs.profiles
                    .get(prof as usize)?
                    .members
                    .get(m)
                    .map(|m| &m.call)
            }
            EntryAction::Group(g) => {
                let prof = p.tables[t as usize].action_profile?;
                let ps = cs.profiles.get(prof as usize)?;
                let members = ps.groups.get(g)?;
                if members.is_empty() {
                    return None;
                }
                let (calc, _) = p.action_profiles[prof as usize].selector.as_ref()?;
                let h = self.calc_value(ctx, *calc, sc, Some(cs));
                sc.members.clear();
                sc.members.extend_from_slice(members);
                let m = sc.members[(h % members.len() as u64) as usize];
                ps.members.get(&m).map(|m| &m.call)
            }
            EntryAction::OneShot(o) => {
                if o.pick.is_empty() {
                    return None;
                }
                let prof = p.tables[t as usize].action_profile?;
                let (calc, _) = p.action_profiles[prof as usize].selector.as_ref()?;
                let h = self.calc_value(ctx, *calc, sc, Some(cs));
                let i = o.pick[(h % o.pick.len() as u64) as usize];
                o.actions.get(i as usize).map(|(c, _, _)| c)
            }
        }
    }
}
