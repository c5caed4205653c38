//! Actions and the primitives they run.

use crate::expr::{ExprId, FieldRef, HeaderRef, UnionRef};
use crate::{ActionId, FieldId};

/// An action.
#[derive(Debug, Clone)]
pub struct Action {
    /// Name.
    pub name: String,
    /// The action's `id` in the JSON.
    pub json_id: i64,
    /// Parameter names and widths.
    pub params: Vec<(String, u32)>,
    /// Byte offset of each parameter in the packed action-data blob (each parameter is
    /// big-endian, `ceil(width/8)` bytes).
    pub param_offsets: Vec<u32>,
    /// Blob length in bytes.
    pub data_bytes: u32,
    /// Body.
    pub body: Vec<Prim>,
}

impl Action {
    /// Id-less helper: bytes of parameter `i`.
    pub fn param_bytes(&self, i: usize) -> usize {
        self.params[i].1.div_ceil(8) as usize
    }
}

/// Where a primitive writes a value.
pub type Dst = FieldRef;

/// A primitive operation.
#[derive(Debug, Clone)]
pub enum Prim {
    /// `dst = src` (general).
    Assign {
        /// Destination.
        dst: Dst,
        /// Source.
        src: ExprId,
    },
    /// `dst = constant` (fast path).
    AssignConst {
        /// Destination field.
        dst: FieldId,
        /// Value bits (already truncated).
        value: u128,
    },
    /// `dst = action parameter` (fast path; same width or truncation).
    AssignParam {
        /// Destination field.
        dst: FieldId,
        /// Parameter index.
        param: u32,
    },
    /// `dst = src field` (fast path, both static, width ≤ 128).
    CopyField {
        /// Destination.
        dst: FieldId,
        /// Source.
        src: FieldId,
    },
    /// Copy a whole header (fields and validity).
    AssignHeader {
        /// Destination.
        dst: HeaderRef,
        /// Source.
        src: HeaderRef,
    },
    /// Copy a union.
    AssignUnion {
        /// Destination.
        dst: UnionRef,
        /// Source.
        src: UnionRef,
    },
    /// Copy a header stack.
    AssignStack {
        /// Destination stack.
        dst: u32,
        /// Source stack.
        src: u32,
    },
    /// Copy a varbit field.
    AssignVarbit {
        /// Destination.
        dst: Dst,
        /// Source.
        src: Dst,
    },
    /// `setValid()`: zero fields and mark valid (if invalid).
    AddHeader(HeaderRef),
    /// Mark valid only.
    AddHeaderFast(HeaderRef),
    /// `setInvalid()`.
    RemoveHeader(HeaderRef),
    /// `push_front(n)`.
    Push(u32, ExprId),
    /// `pop_front(n)`.
    Pop(u32, ExprId),
    /// `mark_to_drop(standard_metadata)` / `drop()`.
    MarkToDrop,
    /// `mark_to_drop(h)` on another header of type `standard_metadata` (p4c's copy of
    /// the standard metadata passed to a function or an action, copied back after it):
    /// as bmv2, `h.egress_spec` gets the drop port and `h.mcast_grp` 0, in `h`.
    MarkToDropIn {
        /// `h.egress_spec`.
        egress_spec: u32,
        /// `h.mcast_grp`, when the header type has it.
        mcast_grp: Option<u32>,
    },
    /// `exit`.
    Exit,
    /// `truncate(len)`.
    Truncate(ExprId),
    /// `log_msg(fmt, args)`.
    LogMsg {
        /// Format with `{}` placeholders.
        fmt: String,
        /// Arguments.
        args: Vec<ExprId>,
    },
    /// `assert(cond)` / `assume(cond)`.
    Assert {
        /// Condition.
        cond: ExprId,
        /// `assume` (else `assert`).
        assume: bool,
        /// Source text for the message.
        source: String,
    },
    /// `dst = base + hash(calc) % max`.
    Hash {
        /// Destination.
        dst: Dst,
        /// Base.
        base: ExprId,
        /// Calculation.
        calc: u32,
        /// Modulus (0 treated as 1... see engine).
        max: ExprId,
    },
    /// `dst = random in [lo, hi]`.
    Random {
        /// Destination.
        dst: Dst,
        /// Low.
        lo: ExprId,
        /// High.
        hi: ExprId,
    },
    /// Indirect counter increment.
    Count {
        /// Counter array.
        counter: u32,
        /// Index.
        index: ExprId,
    },
    /// Indirect meter execution.
    ExecuteMeter {
        /// Meter array.
        meter: u32,
        /// Index.
        index: ExprId,
        /// Color destination.
        dst: Dst,
    },
    /// `dst = reg[idx]`.
    RegisterRead {
        /// Destination.
        dst: Dst,
        /// Register array.
        register: u32,
        /// Index.
        index: ExprId,
    },
    /// `reg[idx] = value`.
    RegisterWrite {
        /// Register array.
        register: u32,
        /// Index.
        index: ExprId,
        /// Value.
        value: ExprId,
    },
    /// Clone request (ingress-to-egress or egress-to-egress).
    Clone {
        /// Egress-to-egress.
        e2e: bool,
        /// Session id.
        session: ExprId,
        /// Field list id (0 = none).
        field_list: u32,
    },
    /// Resubmit request.
    Resubmit(u32),
    /// Recirculate request.
    Recirculate(u32),
    /// Digest request.
    Digest(u32),
    /// Jump to primitive index.
    Jump(u32),
    /// Jump if the condition is false/zero.
    JumpIfZero(ExprId, u32),
    /// Run another action (P4_14 style nested call; not emitted by p4c).
    Call(ActionId),
    /// Recompute a checksum of the program (rare: deparser primitives).
    Nop,
}
