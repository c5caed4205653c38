//! The control walk: a control block run over a batch. Packets walk the control graph
//! together: nodes are visited in topological order, a condition is tested for every
//! packet waiting at it, and at a table every packet waiting there is looked up in one
//! batch (`table.rs`).

use p4jet_ir::{ActionCall, ControlNode};

use crate::eval::{EvalCtx, eval_bool};
use crate::phv::Phv;
use crate::plan::control::{CondTest, Node};
use crate::state::{ControlState, Externs};
use crate::{ControlBlock, Engine, Pkt, SUB_BATCH, Scratch};

/// Moves packet `i` of a sub-batch to control node `next` (None: the control ends for
/// it).
#[inline(always)]
pub(crate) fn move_to(at: &mut [u64], i: usize, next: Option<u32>) {
    if let Some(nx) = next
        && let Some(m) = at.get_mut(nx as usize)
    {
        *m |= 1u64 << i;
    }
}

/// Moves the packets of mask `m` to node `next` (nowhere: the control ends for them).
#[inline(always)]
pub(crate) fn move_all(at: &mut [u64], m: u64, next: Option<u32>) {
    if let Some(nx) = next
        && let Some(w) = at.get_mut(nx as usize)
    {
        *w |= m;
    }
}

impl Engine {
    /// A condition's truth.
    #[inline]
    pub(crate) fn test(&self, phv: &Phv, c: &CondTest) -> bool {
        match c {
            CondTest::Planned(fc) => fc.test(phv),
            CondTest::Tree(t) => t.test(phv),
            CondTest::General(expr) => {
                let ec = EvalCtx::of_phv(phv);
                eval_bool(&self.prog, &ec, *expr)
            }
        }
    }

    /// Runs a control over a batch. Packets walk the control graph together: nodes are
    /// visited in topological order, and at a table node every packet waiting there is
    /// looked up in one batch.
    pub fn run_control(
        &self,
        cs: &ControlState,
        ex: &Externs,
        which: ControlBlock,
        pkts: &mut [Pkt],
        sc: &mut Scratch,
        now_us: u64,
    ) {
        match self.run_native() {
            Some(n) => n.run_control(self, cs, ex, which, pkts, sc, now_us),
            None => self.run_control_interp(cs, ex, which, pkts, sc, now_us),
        }
    }

    /// [`Engine::run_control`] by the interpreter.
    pub fn run_control_interp(
        &self,
        cs: &ControlState,
        ex: &Externs,
        which: ControlBlock,
        pkts: &mut [Pkt],
        sc: &mut Scratch,
        now_us: u64,
    ) {
        let (ctl, ir) = match which {
            ControlBlock::Ingress => (&self.plan.ingress, &self.prog.ingress),
            ControlBlock::Egress => (&self.plan.egress, &self.prog.egress),
        };
        for ctx in pkts.iter_mut() {
            ctx.exit = false;
        }
        if self.cfg.trace {
            for ctx in pkts.iter_mut() {
                self.trace_pipeline(ctx, &ir.name, "start");
            }
        }
        let Some(init) = ctl.init else {
            if self.cfg.trace {
                for ctx in pkts.iter_mut() {
                    self.trace_pipeline(ctx, &ir.name, "end");
                }
            }
            return;
        };
        for chunk in pkts.chunks_mut(SUB_BATCH) {
            let n = chunk.len();
            // every edge goes to a higher node index, so one pass in index order moves
            // every packet to its end; a node's packets are taken in batch order
            sc.at.clear();
            sc.at.resize(ctl.nodes.len(), 0);
            sc.at[init as usize] = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
            for (ni, node) in ctl.nodes.iter().enumerate() {
                let mut here = sc.at[ni];
                if here == 0 {
                    continue;
                }
                match node {
                    Node::Cond {
                        test: CondTest::Planned(cond),
                        t,
                        f,
                    } if !self.cfg.trace => {
                        let yes = cond.truth_mask(here, chunk);
                        move_all(&mut sc.at, yes, *t);
                        move_all(&mut sc.at, here & !yes, *f);
                    }
                    Node::Cond { test, t, f } => {
                        while here != 0 {
                            let i = here.trailing_zeros() as usize;
                            here &= here - 1;
                            let b = self.test(&chunk[i].phv, test);
                            if self.cfg.trace
                                && let Some(ControlNode::Cond { name, .. }) = ir.nodes.get(ni)
                            {
                                self.trace_cond(&mut chunk[i], name, b);
                            }
                            move_to(&mut sc.at, i, if b { *t } else { *f });
                        }
                    }
                    Node::Call { action, next } => {
                        while here != 0 {
                            let i = here.trailing_zeros() as usize;
                            here &= here - 1;
                            let call = ActionCall {
                                action: *action,
                                data: Default::default(),
                            };
                            if self.cfg.trace {
                                self.trace_action(&mut chunk[i], *action);
                            }
                            self.run_action(cs, ex, &mut chunk[i], &call, sc, now_us);
                            if !chunk[i].exit {
                                move_to(&mut sc.at, i, *next);
                            }
                        }
                    }
                    Node::Apply { table } => {
                        self.apply_table(cs, ex, *table, here, chunk, sc, now_us)
                    }
                }
            }
        }
        if self.cfg.trace {
            for ctx in pkts.iter_mut() {
                self.trace_pipeline(ctx, &ir.name, "end");
            }
        }
    }
}
