//! Control plans: a control block's graph as nodes of the plan. A condition node is
//! tested through its planned form when it has one ([`Cond`]), or by the general
//! evaluator; a table node applies its table ([`super::table::TablePlan`] says how its
//! key is built and where each outcome leads); a call node runs an action.

use p4jet_ir::expr::ExprId;
use p4jet_ir::{Control, ControlNode, Program};

use super::cond::{Cond, CondTree};

/// How a condition is tested.
#[derive(Debug, Clone)]
pub enum CondTest {
    /// Through its plan.
    Planned(Cond),
    /// Planned conditions joined by `&&`, `||`, `!`.
    Tree(Box<CondTree>),
    /// By the general evaluator.
    General(ExprId),
}

impl CondTest {
    /// The condition of expression `e` of `p`, through its plan when `plan` and it has
    /// one.
    pub(crate) fn of(p: &Program, e: ExprId, plan: bool) -> CondTest {
        if !plan {
            return CondTest::General(e);
        }
        if let Some(c) = Cond::of(p, e) {
            return CondTest::Planned(c);
        }
        match CondTree::of(p, e) {
            Some(t) => CondTest::Tree(Box::new(t)),
            None => CondTest::General(e),
        }
    }
}

/// One node of a control.
#[derive(Debug, Clone)]
pub enum Node {
    /// A branch.
    Cond {
        /// The test.
        test: CondTest,
        /// Next node when it holds (None: the control ends).
        t: Option<u32>,
        /// Next node when it does not.
        f: Option<u32>,
    },
    /// A table apply; the next node depends on the outcome
    /// ([`super::table::TablePlan::next`]).
    Apply {
        /// The table.
        table: u32,
    },
    /// An action called outside a table.
    Call {
        /// The action.
        action: u32,
        /// The next node.
        next: Option<u32>,
    },
}

/// A control block's plan: nodes in topological order (every edge goes to a higher
/// index), as in the lowered program.
#[derive(Debug, Clone)]
pub struct ControlPlan {
    /// The first node (None: the control is empty).
    pub init: Option<u32>,
    /// The nodes.
    pub nodes: Vec<Node>,
}

impl ControlPlan {
    /// The plain reading of control `ctl` of `p`; conditions planned when `plan`.
    pub(crate) fn new(p: &Program, ctl: &Control, plan: bool) -> ControlPlan {
        ControlPlan {
            init: ctl.init,
            nodes: ctl
                .nodes
                .iter()
                .map(|n| match n {
                    ControlNode::Table(t) => Node::Apply { table: *t },
                    ControlNode::Cond { expr, t, f, .. } => Node::Cond {
                        test: CondTest::of(p, *expr, plan),
                        t: *t,
                        f: *f,
                    },
                    ControlNode::Call { action, next, .. } => Node::Call {
                        action: *action,
                        next: *next,
                    },
                })
                .collect(),
        }
    }
}
