//! The interpreter one operation at a time: what native code compiled from the plan
//! (`p4jet-jit`) calls for the operations it does not compile itself (general parser
//! operations and selects, checksums by the general code, conditions without a plan,
//! table lookups and their outcomes, primitives). Each does exactly what the interpreter
//! does at that point of the plan.

use p4jet_ir::ActionCall;
use p4jet_tables::EntryHandle;

use crate::eval::{EvalCtx, eval_bool};
use crate::phv::Phv;
use crate::plan::parser::Next;
use crate::state::{ControlState, EntryValue, Externs};
use crate::{Engine, PacketCtx, Scratch};

impl Engine {
    /// Operation `op` of parser state `state` at `cursor`: the cursor after it, or the
    /// parser error.
    pub fn step_parse_op(
        &self,
        cs: &ControlState,
        ctx: &mut PacketCtx,
        state: u32,
        op: u32,
        mut cursor: usize,
        sc: &mut Scratch,
    ) -> Result<usize, u32> {
        let Some(pop) = self
            .plan
            .parser
            .states
            .get(state as usize)
            .and_then(|s| s.ops.get(op as usize))
        else {
            return Ok(cursor);
        };
        self.parse_op(cs, ctx, state, *pop, &mut cursor, sc)?;
        Ok(cursor)
    }

    /// The state after parser state `state` at `cursor` (None: accept), or the parser
    /// error.
    pub fn step_select(
        &self,
        cs: &ControlState,
        ctx: &PacketCtx,
        state: u32,
        cursor: usize,
    ) -> Result<Option<u32>, u32> {
        let p = &*self.prog;
        let (Some(plan), Some(st)) = (
            self.plan.parser.states.get(state as usize),
            p.parser.states.get(state as usize),
        ) else {
            return Ok(None);
        };
        match &plan.next {
            Next::Goto(next) => Ok(*next),
            Next::Select(sel) => sel.next(
                &ctx.phv,
                ctx.pkt.data(),
                cursor,
                p.error_codes.packet_too_short,
            ),
            Next::General => self.select_general(cs, ctx, st, cursor),
        }
    }

    /// Every verified checksum, planned or not (`checksum_error` set when one fails).
    pub fn step_verify(&self, ctx: &mut PacketCtx, sc: &mut Scratch) {
        self.verify_checksums(ctx, sc)
    }

    /// Every updated checksum, planned or not, in program order.
    pub fn step_update(&self, ctx: &mut PacketCtx, sc: &mut Scratch, cs: &ControlState) {
        self.update_checksums(ctx, sc, cs)
    }

    /// Checksum `index` of the program updated by the general code, its condition
    /// taken as tested.
    pub fn step_update_one(
        &self,
        ctx: &mut PacketCtx,
        index: u32,
        sc: &mut Scratch,
        cs: &ControlState,
    ) {
        self.update_one(ctx, index, None, sc, cs)
    }

    /// The truth of expression `expr` by the general evaluator.
    pub fn step_test(&self, phv: &Phv, expr: u32) -> bool {
        eval_bool(&self.prog, &EvalCtx::of_phv(phv), expr)
    }

    /// Table `t`'s key for `phv` at the start of `out` (which has 16 bytes of room past
    /// the key), built from its parts.
    pub fn step_build_key(&self, t: u32, phv: &Phv, out: &mut [u8]) {
        if let Some(crate::plan::table::Key::Parts(parts)) =
            self.plan.tables.get(t as usize).map(|tp| &tp.key)
        {
            self.build_key(parts, phv, out);
        }
    }

    /// What a packet runs after table `t`'s lookup gave `hit`: on a hit its direct
    /// counter and meter are updated and the entry's action resolved (profile member,
    /// selector group); on a miss the default action. None: no action runs.
    #[allow(clippy::too_many_arguments)]
    pub fn step_table_action<'a>(
        &self,
        cs: &'a ControlState,
        ex: &Externs,
        t: u32,
        hit: Option<(EntryHandle, &'a EntryValue)>,
        ctx: &mut PacketCtx,
        sc: &mut Scratch,
        now_us: u64,
    ) -> Option<&'a ActionCall> {
        let direct = self.plan.tables.get(t as usize).is_some_and(|tp| tp.direct);
        let action = match hit {
            Some((h, v)) => {
                if direct {
                    self.count_and_meter(ex, t, h, ctx, now_us);
                }
                &v.action
            }
            None => cs.tables.get(t as usize)?.default.as_ref()?,
        };
        self.resolve_entry_action(cs, t, action, ctx, sc)
    }

    /// Primitive `pc` of action `action` (with action data `data`) by the primitive
    /// interpreter; true when it made the packet exit its control. Jumps are the
    /// caller's: a `Jump` or `JumpIfZero` here does nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn step_prim(
        &self,
        cs: &ControlState,
        ex: &Externs,
        ctx: &mut PacketCtx,
        action: u32,
        pc: u32,
        data: &[u8],
        sc: &mut Scratch,
        now_us: u64,
    ) -> bool {
        let Some(a) = self.prog.actions.get(action as usize) else {
            return false;
        };
        if matches!(
            a.body.get(pc as usize),
            Some(p4jet_ir::Prim::Jump(_) | p4jet_ir::Prim::JumpIfZero(..))
        ) {
            return ctx.exit;
        }
        let mut pc = pc as usize;
        self.prim(
            cs,
            Some(ex),
            ctx,
            &a.body,
            &mut pc,
            Some((a, data)),
            sc,
            now_us,
        );
        ctx.exit
    }
}
