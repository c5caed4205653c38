//! The lowered program: a bmv2 JSON program with every name resolved.
//!
//! Lowering happens once at load time ([`lower`]). Every header instance gets a fixed byte
//! offset in a flat per-packet *header vector* (the PHV), every field becomes a
//! [`FieldLoc`] (byte offset, bit offset, width), every name used by a primitive, a table,
//! a parser state or a control node becomes an index. Expressions are analysed for the
//! integer width they need so that the engine evaluates them in 128-bit arithmetic when
//! that gives exactly bmv2's unbounded-integer result, and in big integers otherwise.
//!
//! The crate does no I/O and knows nothing of packets or threads.
#![forbid(unsafe_code)]

pub mod expr;
mod lower;
pub mod prim;

pub use expr::{BinOp, Expr, ExprId, ExprPool, FieldRef, HeaderRef, Node as ExprNode, UnOp};
pub use lower::lower;
pub use prim::{Action, Prim};

use num_bigint::BigUint;

/// A load-time error: what is wrong, and where in the JSON document.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{path}: {message}")]
pub struct LoadError {
    /// JSON path of the offending object, e.g. `actions[3].primitives[1]`.
    pub path: String,
    /// What is wrong or unsupported.
    pub message: String,
}

impl LoadError {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        LoadError {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// Index of a header instance.
pub type HeaderId = u32;
/// Index of a field (global, over all header instances).
pub type FieldId = u32;
/// Index of an action.
pub type ActionId = u32;
/// Index of a table (over both pipelines).
pub type TableId = u32;

/// Where a field lives in the header vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldLoc {
    /// Byte offset of the field's first byte in the PHV data area.
    pub byte: u32,
    /// Bit offset of the field's most significant bit inside that byte (0 = MSB).
    pub bit: u8,
    /// Width in bits.
    pub width: u32,
    /// `int<W>`: reads sign-extend.
    pub signed: bool,
    /// Bytes spanned by the field (`ceil((bit + width) / 8)`): the exact window read and
    /// written, so that accesses to neighbouring fields never overlap partially (a partial
    /// overlap with a recent store defeats store-to-load forwarding).
    pub nbytes: u8,
    /// The field owns its whole window (starts on a byte and fills it to the end), so a
    /// write is a plain store.
    pub own: bool,
}

impl FieldLoc {
    /// Location of a `width`-bit field starting `bit` bits into byte `byte`; `own`: no
    /// other field shares its bytes and the bits before it are zero padding.
    pub fn new(byte: u32, bit: u8, width: u32, signed: bool, own: bool) -> FieldLoc {
        let nbytes = (bit as u32 + width).div_ceil(8);
        FieldLoc {
            byte,
            bit,
            width,
            signed,
            nbytes: nbytes.min(255) as u8,
            own: own && (bit as u32 + width) == nbytes * 8,
        }
    }
}

/// A header instance (packet header or metadata).
#[derive(Debug, Clone)]
pub struct HeaderInfo {
    /// Instance name as in the JSON.
    pub name: String,
    /// Header type name.
    pub type_name: String,
    /// Metadata: always valid, zeroed on packet arrival, never deparsed.
    pub metadata: bool,
    /// Byte offset of the header in the PHV data area.
    pub offset: u32,
    /// Length in bytes of the fixed part (whole header when there is no varbit field),
    /// i.e. the bytes an extract copies; for varbit headers the maximum length.
    pub max_bytes: u32,
    /// Fixed bits (sum of non-varbit field widths).
    pub fixed_bits: u32,
    /// Fields of this instance, in wire order (ids into [`Program::fields`]).
    pub fields: Vec<FieldId>,
    /// Index of the varbit field inside `fields`, if any.
    pub varbit: Option<usize>,
    /// Varbit slot index (into the per-packet varbit-length array), if any.
    pub varbit_slot: Option<u32>,
    /// Stack this header is an element of, with its index.
    pub stack: Option<(u32, u32)>,
    /// Union this header is a member of, with its member index.
    pub union: Option<(u32, u32)>,
}

/// A field of a header instance.
#[derive(Debug, Clone)]
pub struct FieldInfo {
    /// Field name.
    pub name: String,
    /// Owning header.
    pub header: HeaderId,
    /// Bit offset from the start of the header.
    pub bit_offset: u32,
    /// Location in the PHV (for varbit fields: location at maximum width).
    pub loc: FieldLoc,
    /// Varbit field.
    pub varbit: bool,
}

/// A header stack.
#[derive(Debug, Clone)]
pub struct StackInfo {
    /// Name.
    pub name: String,
    /// Element headers, index order.
    pub headers: Vec<HeaderId>,
    /// Header type of the elements.
    pub type_name: String,
}

/// A header union.
#[derive(Debug, Clone)]
pub struct UnionInfo {
    /// Name.
    pub name: String,
    /// Member headers in member order.
    pub headers: Vec<HeaderId>,
}

/// A header union stack.
#[derive(Debug, Clone)]
pub struct UnionStackInfo {
    /// Name.
    pub name: String,
    /// Unions, index order.
    pub unions: Vec<u32>,
}

/// Standard metadata fields simple_switch reads and writes, resolved once.
#[derive(Debug, Clone, Default)]
pub struct StdMeta {
    /// `standard_metadata.ingress_port`
    pub ingress_port: Option<FieldId>,
    /// `egress_spec`
    pub egress_spec: Option<FieldId>,
    /// `egress_port`
    pub egress_port: Option<FieldId>,
    /// `instance_type`
    pub instance_type: Option<FieldId>,
    /// `packet_length`
    pub packet_length: Option<FieldId>,
    /// `enq_timestamp`
    pub enq_timestamp: Option<FieldId>,
    /// `enq_qdepth`
    pub enq_qdepth: Option<FieldId>,
    /// `deq_timedelta`
    pub deq_timedelta: Option<FieldId>,
    /// `deq_qdepth`
    pub deq_qdepth: Option<FieldId>,
    /// `ingress_global_timestamp`
    pub ingress_global_timestamp: Option<FieldId>,
    /// `egress_global_timestamp`
    pub egress_global_timestamp: Option<FieldId>,
    /// `mcast_grp`
    pub mcast_grp: Option<FieldId>,
    /// `egress_rid`
    pub egress_rid: Option<FieldId>,
    /// `checksum_error`
    pub checksum_error: Option<FieldId>,
    /// `parser_error`
    pub parser_error: Option<FieldId>,
    /// `priority`
    pub priority: Option<FieldId>,
    /// `qid`
    pub qid: Option<FieldId>,
    /// The `standard_metadata` header, if present.
    pub header: Option<HeaderId>,
}

/// Parser error codes used by the engine.
#[derive(Debug, Clone, Copy, Default)]
pub struct ErrorCodes {
    /// `NoError`
    pub no_error: u32,
    /// `PacketTooShort`
    pub packet_too_short: u32,
    /// `NoMatch`
    pub no_match: u32,
    /// `StackOutOfBounds`
    pub stack_out_of_bounds: u32,
    /// `HeaderTooShort`
    pub header_too_short: u32,
    /// `ParserTimeout`
    pub parser_timeout: u32,
    /// `ParserInvalidArgument`
    pub parser_invalid_argument: u32,
}

/// A parser state.
#[derive(Debug, Clone)]
pub struct ParseState {
    /// Name.
    pub name: String,
    /// Operations.
    pub ops: Vec<ParserOp>,
    /// Select key elements.
    pub key: Vec<KeyElem>,
    /// Total key bytes (each element byte-padded).
    pub key_bytes: u32,
    /// Transitions in order.
    pub transitions: Vec<Transition>,
}

/// One element of a parser select key.
#[derive(Debug, Clone)]
pub enum KeyElem {
    /// A field (possibly of the last stack element).
    Field(FieldRef),
    /// Packet bits at `offset` bits after the cursor, `width` bits.
    Lookahead {
        /// Bit offset from the cursor.
        offset: u32,
        /// Width in bits.
        width: u32,
    },
}

impl KeyElem {
    /// Width in bits of this element.
    pub fn width(&self, p: &Program) -> u32 {
        match self {
            KeyElem::Field(f) => f.width(p),
            KeyElem::Lookahead { width, .. } => *width,
        }
    }
}

/// A parser select transition.
#[derive(Debug, Clone)]
pub struct Transition {
    /// What matches.
    pub kind: TransitionKind,
    /// Next state (index) or `None` for accept.
    pub next: Option<u32>,
}

/// Transition matching.
#[derive(Debug, Clone)]
pub enum TransitionKind {
    /// Always.
    Default,
    /// `(key & mask) == value` (both `key_bytes` long, value pre-masked).
    Value {
        /// Value bytes.
        value: Vec<u8>,
        /// Mask bytes (all ones when none given).
        mask: Vec<u8>,
    },
    /// A parser value set, optionally masked.
    ValueSet {
        /// Value set index.
        vset: u32,
        /// Mask bytes (all ones when none given).
        mask: Vec<u8>,
    },
}

/// A parser operation.
#[derive(Debug, Clone)]
pub enum ParserOp {
    /// Extract a fixed-size header.
    Extract(HeaderRef),
    /// Extract the next element of a stack.
    ExtractNext(u32),
    /// Extract the next element of a stack whose header has a varbit field
    /// (`extract_VL` into `stack.next`), the varbit length (in bits) given.
    ExtractNextVarbit {
        /// Stack.
        stack: u32,
        /// Varbit length in bits.
        bits: ExprId,
    },
    /// Extract member `member` of the next element of a header union stack (the
    /// element after the last one with a valid member).
    ExtractUnionNext {
        /// Union stack.
        stack: u32,
        /// Member index (in the union type's order).
        member: u32,
    },
    /// Extract a header with a varbit field whose length (in bits) is given.
    ExtractVarbit {
        /// Header.
        header: HeaderRef,
        /// Varbit length in bits.
        bits: ExprId,
    },
    /// `set(dst, src)`.
    Set {
        /// Destination.
        dst: FieldRef,
        /// Source.
        src: ExprId,
    },
    /// `verify(cond, error)`.
    Verify {
        /// Condition.
        cond: ExprId,
        /// Error code when false.
        error: ExprId,
    },
    /// Skip bits (multiple of 8).
    Advance(ExprId),
    /// Any action primitive.
    Primitive(Prim),
}

/// The parser.
#[derive(Debug, Clone)]
pub struct Parser {
    /// States; index 0 is not special, see `init`.
    pub states: Vec<ParseState>,
    /// Initial state.
    pub init: Option<u32>,
}

/// The deparser.
#[derive(Debug, Clone)]
pub struct Deparser {
    /// Headers emitted in order (when valid).
    pub order: Vec<HeaderId>,
}

/// A match-table key element.
#[derive(Debug, Clone)]
pub struct TableKey {
    /// Match kind.
    pub kind: MatchKind,
    /// What is matched.
    pub source: KeySource,
    /// Width in bits as seen by the control plane.
    pub width: u32,
    /// Static mask (already width-truncated), if any.
    pub mask: Option<BigUint>,
    /// Control-plane name.
    pub name: String,
}

/// Source of a key element.
#[derive(Debug, Clone)]
pub enum KeySource {
    /// A field.
    Field(FieldRef),
    /// Validity of a header (legacy `valid` match kind, or `$valid$`).
    Valid(HeaderRef),
}

/// Match kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    /// exact
    Exact,
    /// lpm
    Lpm,
    /// ternary (and optional)
    Ternary,
    /// range
    Range,
    /// valid (legacy)
    Valid,
    /// optional (emitted by some p4c versions)
    Optional,
}

/// Table implementation kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableKind {
    /// Direct actions.
    Simple,
    /// Action profile.
    Indirect,
    /// Action selector.
    IndirectWs,
}

/// Next-node policy of a table.
#[derive(Debug, Clone)]
pub enum TableNext {
    /// One next node per action slot of the table (`switch(t.apply().action_run)` or plain).
    ByAction(Vec<Option<u32>>),
    /// `t.apply().hit` / `.miss`.
    HitMiss {
        /// On hit.
        hit: Option<u32>,
        /// On miss.
        miss: Option<u32>,
    },
}

/// An action with its data, as stored in an entry or a default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionCall {
    /// Action.
    pub action: ActionId,
    /// Packed parameter blob (see [`Action::param_offsets`]).
    pub data: ActionData,
}

/// An action's packed parameter blob, held in place up to [`ActionData::INLINE`] bytes
/// (almost every table action: ports, addresses, a few rewrites) and on the heap beyond.
///
/// In place, a table entry's action data sit next to its action in the entry itself:
/// a lookup that finds the entry has the data without following a pointer to a
/// separate allocation (a cache miss per packet on a large table with random traffic),
/// and loading a million entries makes no allocation per entry for them. The size is
/// that of the boxed slice it replaces plus the tag (24 bytes).
#[derive(Clone)]
pub enum ActionData {
    /// Up to [`ActionData::INLINE`] bytes: `buf[..len]`.
    Inline {
        /// Bytes in use.
        len: InlineLen,
        /// Storage; bytes past `len` are zero.
        buf: [u8; ActionData::INLINE],
    },
    /// More.
    Heap(Box<[u8]>),
}

macro_rules! inline_len {
    ($($v:ident = $n:literal),* $(,)?) => {
        /// The length of in-place action data, 0 to [`ActionData::INLINE`]: a type
        /// whose values are only those, so that slicing by it needs no bounds check (a
        /// check, and its panic path, in every table lookup's loop that reads an entry's
        /// data).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        #[allow(missing_docs)]
        pub enum InlineLen {
            $($v = $n),*
        }

        impl InlineLen {
            const ALL: [InlineLen; ActionData::INLINE + 1] = [$(InlineLen::$v),*];
        }
    };
}

inline_len!(
    L0 = 0,
    L1 = 1,
    L2 = 2,
    L3 = 3,
    L4 = 4,
    L5 = 5,
    L6 = 6,
    L7 = 7,
    L8 = 8,
    L9 = 9,
    L10 = 10,
    L11 = 11,
    L12 = 12,
    L13 = 13,
    L14 = 14,
    L15 = 15,
    L16 = 16,
    L17 = 17,
    L18 = 18,
    L19 = 19,
    L20 = 20,
    L21 = 21,
    L22 = 22,
);

impl InlineLen {
    /// `n` as a length held in place, if it is one.
    pub fn new(n: usize) -> Option<InlineLen> {
        InlineLen::ALL.get(n).copied()
    }

    /// The length.
    #[inline(always)]
    pub fn get(self) -> usize {
        self as usize
    }
}

impl ActionData {
    /// The most bytes held in place.
    pub const INLINE: usize = 22;

    /// `len` zero bytes (in place when they fit).
    pub fn zeroed(len: usize) -> Self {
        match InlineLen::new(len) {
            Some(len) => ActionData::Inline {
                len,
                buf: [0; ActionData::INLINE],
            },
            None => ActionData::Heap(vec![0; len].into_boxed_slice()),
        }
    }

    /// The blob as bytes.
    #[inline(always)]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            ActionData::Inline { len, buf } => &buf[..len.get()],
            ActionData::Heap(b) => b,
        }
    }

    /// The blob as bytes, to change in place.
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        match self {
            ActionData::Inline { len, buf } => &mut buf[..len.get()],
            ActionData::Heap(b) => b,
        }
    }
}

impl Default for ActionData {
    fn default() -> Self {
        ActionData::Inline {
            len: InlineLen::L0,
            buf: [0; ActionData::INLINE],
        }
    }
}

impl From<&[u8]> for ActionData {
    fn from(b: &[u8]) -> Self {
        match InlineLen::new(b.len()) {
            Some(len) => {
                let mut buf = [0; ActionData::INLINE];
                buf[..b.len()].copy_from_slice(b);
                ActionData::Inline { len, buf }
            }
            None => ActionData::Heap(b.into()),
        }
    }
}

impl From<Vec<u8>> for ActionData {
    fn from(v: Vec<u8>) -> Self {
        if v.len() <= ActionData::INLINE {
            ActionData::from(v.as_slice())
        } else {
            ActionData::Heap(v.into_boxed_slice())
        }
    }
}

impl From<Box<[u8]>> for ActionData {
    fn from(b: Box<[u8]>) -> Self {
        if b.len() <= ActionData::INLINE {
            ActionData::from(&*b)
        } else {
            ActionData::Heap(b)
        }
    }
}

impl std::ops::Deref for ActionData {
    type Target = [u8];
    #[inline(always)]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::ops::DerefMut for ActionData {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

impl PartialEq for ActionData {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for ActionData {}

impl std::hash::Hash for ActionData {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_slice().hash(h)
    }
}

impl std::fmt::Debug for ActionData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

/// A const entry from the program.
#[derive(Debug, Clone)]
pub struct ConstEntryInfo {
    /// Per key element: match value (see the engine for encoding).
    pub keys: Vec<ConstKey>,
    /// Action.
    pub action: ActionCall,
    /// Priority.
    pub priority: i32,
}

/// A const entry key element (bytes are big-endian, ceil(width/8) long).
#[derive(Debug, Clone)]
pub enum ConstKey {
    /// exact / valid
    Exact(Vec<u8>),
    /// lpm
    Lpm(Vec<u8>, u32),
    /// ternary / optional
    Ternary(Vec<u8>, Vec<u8>),
    /// range
    Range(Vec<u8>, Vec<u8>),
}

/// A match table.
#[derive(Debug, Clone)]
pub struct TableInfo {
    /// Name.
    pub name: String,
    /// The table's `id` in the JSON.
    pub json_id: i64,
    /// The table's `match_type` in the JSON (`range` > `ternary` > `lpm` > `exact` of its
    /// keys as p4c computes it; `Exact` when absent).
    pub match_type: MatchKind,
    /// Index of its control block in the JSON's `pipelines` (bmv2's name for control
    /// blocks).
    pub control: u32,
    /// Key.
    pub keys: Vec<TableKey>,
    /// Packed key length in bytes.
    pub key_bytes: u32,
    /// Table kind.
    pub kind: TableKind,
    /// Action profile index (indirect tables).
    pub action_profile: Option<u32>,
    /// Capacity.
    pub max_size: u32,
    /// Actions allowed, in the JSON's order (the "action slot" is the index here).
    pub actions: Vec<ActionId>,
    /// Next node policy.
    pub next: TableNext,
    /// Next node on a miss with no default action.
    pub base_default_next: Option<u32>,
    /// Default action from the program.
    pub default_entry: Option<ActionCall>,
    /// The default action may not be changed.
    pub default_action_const: bool,
    /// The default entry (action and data) may not be changed.
    pub default_entry_const: bool,
    /// Const entries (the table is immutable when present).
    pub const_entries: Option<Vec<ConstEntryInfo>>,
    /// Direct counter array index.
    pub direct_counter: Option<u32>,
    /// Direct meter array index.
    pub direct_meter: Option<u32>,
    /// Idle timeout support.
    pub support_timeout: bool,
    /// Actions annotated so that they can only be defaults? (not in JSON; always false)
    pub with_counters: bool,
}

impl TableInfo {
    /// Slot of an action in this table's action list.
    pub fn action_slot(&self, a: ActionId) -> Option<usize> {
        self.actions.iter().position(|x| *x == a)
    }
}

/// An action profile or selector.
#[derive(Debug, Clone)]
pub struct ActionProfileInfo {
    /// Name.
    pub name: String,
    /// The profile's `id` in the JSON.
    pub json_id: i64,
    /// Capacity.
    pub max_size: u32,
    /// Selector: algorithm and inputs.
    pub selector: Option<(u32, Vec<FieldRef>)>,
    /// Tables using it.
    pub tables: Vec<TableId>,
}

/// A control-flow node.
#[derive(Debug, Clone)]
pub enum ControlNode {
    /// Apply a table.
    Table(TableId),
    /// Branch.
    Cond {
        /// Name.
        name: String,
        /// Condition.
        expr: ExprId,
        /// When true.
        t: Option<u32>,
        /// When false.
        f: Option<u32>,
    },
    /// Run an action.
    Call {
        /// Name.
        name: String,
        /// Action.
        action: ActionId,
        /// Next.
        next: Option<u32>,
    },
}

/// A control block (pipeline).
#[derive(Debug, Clone)]
pub struct Control {
    /// Name.
    pub name: String,
    /// Nodes; topologically ordered (every edge goes to a higher index).
    pub nodes: Vec<ControlNode>,
    /// First node.
    pub init: Option<u32>,
}

/// Hash algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlgo {
    /// CRC-16/ARC
    Crc16,
    /// CRC-32 (IEEE)
    Crc32,
    /// CRC-16/CCITT-FALSE
    CrcCcitt,
    /// Internet checksum
    Csum16,
    /// XOR of 16-bit words
    Xor16,
    /// XOR of 32-bit words
    Xor32,
    /// First bytes as integer
    Identity,
    /// Configurable CRC-16
    Crc16Custom,
    /// Configurable CRC-32
    Crc32Custom,
    /// Configurable CRC-8
    Crc8Custom,
    /// Configurable CRC-64
    Crc64Custom,
    /// Round robin
    RoundRobin,
    /// Round robin (consistent)
    RoundRobinConsistent,
    /// Random
    Random,
    /// xxh64
    Xxh64,
    /// Toeplitz
    Toeplitz,
}

impl HashAlgo {
    /// Parses a bmv2 algorithm name.
    pub fn from_name(s: &str) -> Option<HashAlgo> {
        Some(match s {
            "crc16" => HashAlgo::Crc16,
            "crc32" => HashAlgo::Crc32,
            "crcCCITT" => HashAlgo::CrcCcitt,
            "csum16" | "cksum16" => HashAlgo::Csum16,
            "xor16" => HashAlgo::Xor16,
            "xor32" => HashAlgo::Xor32,
            "identity" => HashAlgo::Identity,
            "crc16_custom" => HashAlgo::Crc16Custom,
            "crc32_custom" => HashAlgo::Crc32Custom,
            "crc8_custom" => HashAlgo::Crc8Custom,
            "crc64_custom" => HashAlgo::Crc64Custom,
            "round_robin" => HashAlgo::RoundRobin,
            "round_robin_consistent" => HashAlgo::RoundRobinConsistent,
            "random" => HashAlgo::Random,
            "xxh64" => HashAlgo::Xxh64,
            "toeplitz" => HashAlgo::Toeplitz,
            _ => return None,
        })
    }
}

/// One input of a calculation.
#[derive(Debug, Clone)]
pub enum CalcInput {
    /// A field (skipped when its header is invalid).
    Field(FieldRef),
    /// A constant of `width` bits.
    Const {
        /// Value.
        value: BigUint,
        /// Width in bits.
        width: u32,
    },
    /// A whole header (skipped when invalid).
    Header(HeaderId),
    /// Everything after the parsed headers.
    Payload,
}

/// A hash or checksum calculation.
#[derive(Debug, Clone)]
pub struct Calculation {
    /// Name.
    pub name: String,
    /// The calculation's `id` in the JSON (-1 for a selector's hash, which is not a
    /// JSON calculation).
    pub json_id: i64,
    /// Algorithm.
    pub algo: HashAlgo,
    /// Inputs in order.
    pub inputs: Vec<CalcInput>,
    /// Custom CRC slot (index into the per-switch CRC parameter table).
    pub custom_slot: Option<u32>,
}

/// A checksum verified after parsing / updated before deparsing.
#[derive(Debug, Clone)]
pub struct ChecksumInfo {
    /// Name.
    pub name: String,
    /// Field holding the checksum.
    pub target: FieldRef,
    /// Calculation.
    pub calc: u32,
    /// Verify at end of parsing.
    pub verify: bool,
    /// Update at start of deparsing.
    pub update: bool,
    /// Condition.
    pub cond: Option<ExprId>,
}

/// A counter array.
#[derive(Debug, Clone)]
pub struct CounterInfo {
    /// Name.
    pub name: String,
    /// The counter array's `id` in the JSON.
    pub json_id: i64,
    /// Cells (indirect).
    pub size: u32,
    /// Direct: bound table.
    pub direct_table: Option<TableId>,
}

/// A meter array.
#[derive(Debug, Clone)]
pub struct MeterInfo {
    /// Name.
    pub name: String,
    /// The meter array's `id` in the JSON.
    pub json_id: i64,
    /// Cells (indirect).
    pub size: u32,
    /// Byte meter (else packets).
    pub bytes: bool,
    /// Number of rates.
    pub rate_count: u32,
    /// Direct: bound table and result field.
    pub direct: Option<(TableId, FieldRef)>,
}

/// A register array.
#[derive(Debug, Clone)]
pub struct RegisterInfo {
    /// Name.
    pub name: String,
    /// The register array's `id` in the JSON.
    pub json_id: i64,
    /// Cells.
    pub size: u32,
    /// Width.
    pub width: u32,
}

/// A field list (clone / resubmit / recirculate preserved fields) or learn list.
#[derive(Debug, Clone)]
pub struct FieldListInfo {
    /// Id as in the JSON.
    pub id: u32,
    /// Name.
    pub name: String,
    /// Fields.
    pub fields: Vec<FieldRef>,
}

/// A parser value set.
#[derive(Debug, Clone)]
pub struct ValueSetInfo {
    /// Name.
    pub name: String,
    /// The value set's `id` in the JSON.
    pub json_id: i64,
    /// Width of values in bits.
    pub width: u32,
    /// Capacity.
    pub max_size: u32,
}

/// The lowered program.
#[derive(Debug, Clone)]
pub struct Program {
    /// Header instances.
    pub headers: Vec<HeaderInfo>,
    /// All fields.
    pub fields: Vec<FieldInfo>,
    /// Header stacks.
    pub stacks: Vec<StackInfo>,
    /// Header unions.
    pub unions: Vec<UnionInfo>,
    /// Header union stacks.
    pub union_stacks: Vec<UnionStackInfo>,
    /// Size of the PHV data area in bytes (without padding).
    pub phv_bytes: u32,
    /// Byte ranges of metadata headers (zeroed on arrival).
    pub metadata_ranges: Vec<(u32, u32)>,
    /// Validity of each header on arrival (metadata headers are always valid), copied
    /// into every packet's PHV in one go.
    pub valid_init: Vec<bool>,
    /// Number of varbit slots.
    pub varbit_slots: u32,
    /// Expressions.
    pub exprs: ExprPool,
    /// Parser.
    pub parser: Parser,
    /// Deparser.
    pub deparser: Deparser,
    /// Actions.
    pub actions: Vec<Action>,
    /// Tables.
    pub tables: Vec<TableInfo>,
    /// Action profiles.
    pub action_profiles: Vec<ActionProfileInfo>,
    /// Ingress control.
    pub ingress: Control,
    /// Egress control.
    pub egress: Control,
    /// Calculations.
    pub calculations: Vec<Calculation>,
    /// Checksums.
    pub checksums: Vec<ChecksumInfo>,
    /// Counter arrays.
    pub counters: Vec<CounterInfo>,
    /// Meter arrays.
    pub meters: Vec<MeterInfo>,
    /// Register arrays.
    pub registers: Vec<RegisterInfo>,
    /// Field lists by id.
    pub field_lists: Vec<FieldListInfo>,
    /// Learn lists by id.
    pub learn_lists: Vec<FieldListInfo>,
    /// Parser value sets.
    pub value_sets: Vec<ValueSetInfo>,
    /// Error names and codes.
    pub errors: Vec<(String, u32)>,
    /// Core error codes.
    pub error_codes: ErrorCodes,
    /// Standard metadata.
    pub std: StdMeta,
    /// Number of custom CRC slots.
    pub custom_crc_slots: u32,
    /// Largest table key in bytes.
    pub max_key_bytes: u32,
    /// Per field: the program may read it (expressions, keys, calculations, field lists,
    /// copies). The switch skips writing informational metadata nobody reads.
    pub reads: Vec<bool>,
    /// Per field: the program may give it a value (see `lower::writes`). The switch
    /// skips reading `mcast_grp` and `priority` when nothing writes them (they are 0).
    pub writes: Vec<bool>,
    /// Largest parser key in bytes.
    pub max_parser_key_bytes: u32,
    /// The P4 source text of conditions and primitives, for the per-packet log.
    pub log_text: LogText,
}

/// The P4 source text the per-packet log quotes, as simple_switch does, from the JSON's
/// `source_info`: `FILE(LINE) Condition "FRAGMENT"` and `FILE(LINE) Primitive FRAGMENT`.
#[derive(Debug, Clone, Default)]
pub struct LogText {
    /// Per conditional node name: `FILE(LINE) Condition "FRAGMENT"`, or
    /// `Condition "NAME"` without source information.
    pub conds: std::collections::HashMap<String, String>,
    /// Per action, per primitive: `FILE(LINE) Primitive FRAGMENT`, or
    /// `Primitive (no source info)`.
    pub prims: Vec<Vec<String>>,
    /// Per (parser state, operation) of a `primitive` parser operation: the
    /// primitive's name (`add_header`) and its `Primitive ...` text as in `prims`.
    pub parser_prims: std::collections::HashMap<(u32, u32), (String, String)>,
}

impl Program {
    /// Looks up a header by name.
    pub fn header_by_name(&self, name: &str) -> Option<HeaderId> {
        self.headers
            .iter()
            .position(|h| h.name == name)
            .map(|i| i as HeaderId)
    }

    /// Looks up a field by header and field name.
    pub fn field_by_name(&self, header: &str, field: &str) -> Option<FieldId> {
        let h = self.header_by_name(header)?;
        self.headers[h as usize]
            .fields
            .iter()
            .copied()
            .find(|f| self.fields[*f as usize].name == field)
    }

    /// Looks up a table by name.
    pub fn table_by_name(&self, name: &str) -> Option<TableId> {
        self.tables
            .iter()
            .position(|t| t.name == name)
            .map(|i| i as TableId)
    }

    /// Looks up an action by name.
    pub fn action_by_name(&self, name: &str) -> Option<ActionId> {
        self.actions
            .iter()
            .position(|a| a.name == name)
            .map(|i| i as ActionId)
    }

    /// Name of an error code.
    pub fn error_name(&self, code: u32) -> &str {
        self.errors
            .iter()
            .find(|(_, c)| *c == code)
            .map(|(n, _)| n.as_str())
            .unwrap_or("?")
    }

    /// `header.field` name of a field.
    pub fn field_name(&self, f: FieldId) -> String {
        let fi = &self.fields[f as usize];
        format!("{}.{}", self.headers[fi.header as usize].name, fi.name)
    }
}
