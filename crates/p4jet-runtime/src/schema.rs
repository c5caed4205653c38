//! The program model: what a control plane can see and change of a P4 program.
//!
//! A [`Schema`] is built once per program from the lowered program
//! ([`Schema::from_program`]) or from bmv2 JSON text ([`Schema::from_json`]). Nobody
//! re-reads the JSON: every front end resolves names and checks shapes against the
//! schema. It lists, in JSON order:
//!
//! * tables: key fields (name, match kind, width, static mask), actions, size,
//!   implementation (direct, action profile, action selector), const entries and
//!   default entry (and their const-ness), `support_timeout`, direct counter and meter;
//! * actions and their parameters (name, width);
//! * action profiles and selectors, and the tables using them;
//! * counters and meters (direct or indexed; meter unit and rate count), registers
//!   (size, cell width), digests (learn lists) with their fields, parser value sets,
//!   named hash calculations;
//!
//! each with its JSON `id`. Names are the JSON's fully qualified names
//! (`IngressImpl.dmac`); [`Schema::resolve`] finds an object by any unique dotted
//! suffix, as `simple_switch_CLI` does. A P4Info is joined to the schema by name in
//! [`crate::p4info`].

use std::collections::HashMap;
use std::fmt;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::entity::{ActionCall, Bytes, FieldMatch};
use crate::error::RuntimeError;
use crate::ids::{
    ActionId, CalcId, CounterId, DigestId, MeterId, ProfileId, RegisterId, TableId, ValueSetId,
};

/// Match kind of a key field (or of a whole table, as the JSON's `match_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchKind {
    /// `exact`
    Exact,
    /// `lpm`
    Lpm,
    /// `ternary`
    Ternary,
    /// `range`
    Range,
    /// `optional` (stored as a ternary match with a full or empty mask)
    Optional,
    /// `valid` (legacy P4_14 key on a header's validity)
    Valid,
}

impl MatchKind {
    /// The JSON spelling (`exact`, `lpm`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Lpm => "lpm",
            MatchKind::Ternary => "ternary",
            MatchKind::Range => "range",
            MatchKind::Optional => "optional",
            MatchKind::Valid => "valid",
        }
    }

    /// Whether a field of this kind gives its table priorities.
    pub fn needs_priority(self) -> bool {
        matches!(
            self,
            MatchKind::Ternary | MatchKind::Range | MatchKind::Optional
        )
    }
}

impl From<p4jet_ir::MatchKind> for MatchKind {
    fn from(k: p4jet_ir::MatchKind) -> Self {
        match k {
            p4jet_ir::MatchKind::Exact => MatchKind::Exact,
            p4jet_ir::MatchKind::Lpm => MatchKind::Lpm,
            p4jet_ir::MatchKind::Ternary => MatchKind::Ternary,
            p4jet_ir::MatchKind::Range => MatchKind::Range,
            p4jet_ir::MatchKind::Optional => MatchKind::Optional,
            p4jet_ir::MatchKind::Valid => MatchKind::Valid,
        }
    }
}

/// How a table finds its actions (bmv2's table `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableKind {
    /// `simple`: entries hold actions.
    Direct,
    /// `indirect`: entries hold action profile members.
    Indirect(ProfileId),
    /// `indirect_ws`: entries hold selector groups (or members).
    IndirectWs(ProfileId),
}

impl TableKind {
    /// The action profile of an indirect table.
    pub fn profile(self) -> Option<ProfileId> {
        match self {
            TableKind::Direct => None,
            TableKind::Indirect(p) | TableKind::IndirectWs(p) => Some(p),
        }
    }
}

/// One field of a table key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyField {
    /// The key's `name` in the JSON: the P4 expression (`hdr.ethernet.dst_addr`), as
    /// P4Info's match field and p4c's STF driver name it.
    pub name: String,
    /// The JSON `target`: `header.field`, or the header for a validity key.
    pub target: String,
    /// Match kind.
    pub kind: MatchKind,
    /// Width in bits (1 for validity keys).
    pub width: u32,
    /// Static mask of `field & MASK` keys (big-endian, `ceil(width / 8)` bytes).
    pub mask: Option<Bytes>,
    /// A validity key: `valid` kind or an exact match on `$valid$`.
    pub is_validity: bool,
}

impl KeyField {
    /// The name `simple_switch_CLI` shows: `header.field`, or `header_valid` for a
    /// validity key.
    pub fn cli_name(&self) -> String {
        if self.is_validity {
            let h = self.target.strip_suffix(".$valid$").unwrap_or(&self.target);
            format!("{h}_valid")
        } else {
            self.target.clone()
        }
    }

    /// Bytes of a value of this field.
    pub fn bytes(&self) -> usize {
        self.width.div_ceil(8) as usize
    }

    /// The match of an `optional` field: a value (full mask) or, with None, a
    /// wildcard (empty mask). p4c writes P4's `optional` match kind as `ternary` in
    /// the bmv2 JSON (the P4Info says `OPTIONAL`): such fields have kind
    /// [`MatchKind::Ternary`] here.
    pub fn optional(&self, value: Option<Bytes>) -> FieldMatch {
        match value {
            Some(value) => FieldMatch::Ternary {
                value,
                mask: ones(self.width),
            },
            None => self.wildcard(),
        }
    }

    /// The match that matches every value (P4Runtime's omitted field): an empty mask,
    /// a zero-length prefix, the full range; an exact field has no wildcard (it gets
    /// an all-zero exact value, which P4Runtime forbids omitting).
    pub fn wildcard(&self) -> FieldMatch {
        let zero = vec![0u8; self.bytes()];
        match self.kind {
            MatchKind::Ternary | MatchKind::Optional => FieldMatch::Ternary {
                value: zero.clone(),
                mask: zero,
            },
            MatchKind::Lpm => FieldMatch::Lpm {
                value: zero,
                prefix_len: 0,
            },
            MatchKind::Range => FieldMatch::Range {
                low: zero,
                high: ones(self.width),
            },
            MatchKind::Exact => FieldMatch::Exact(zero),
            MatchKind::Valid => FieldMatch::Valid(false),
        }
    }
}

/// `ceil(width / 8)` bytes with the low `width` bits set.
pub fn ones(width: u32) -> Bytes {
    let mut v = vec![0xffu8; width.div_ceil(8) as usize];
    if !width.is_multiple_of(8)
        && let Some(b) = v.first_mut()
    {
        *b = (1u8 << (width % 8)) - 1;
    }
    v
}

/// `value` as `ceil(width / 8)` big-endian bytes keeping its low `width` bits (what
/// storing into a `bit<width>` does): longer values lose their high bytes, shorter
/// ones are zero-extended.
pub fn fit(value: &[u8], width: u32) -> Bytes {
    let nb = width.div_ceil(8) as usize;
    let mut out = vec![0u8; nb];
    let n = nb.min(value.len());
    out[nb - n..].copy_from_slice(&value[value.len() - n..]);
    if !width.is_multiple_of(8)
        && let Some(b) = out.first_mut()
    {
        *b &= (1u8 << (width % 8)) - 1;
    }
    out
}

/// A match table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Its id.
    pub id: TableId,
    /// Fully qualified name.
    pub name: String,
    /// The JSON `id`.
    pub json_id: i64,
    /// The JSON `match_type` of the table (`range` > `ternary` > `lpm` > `exact`).
    pub match_type: MatchKind,
    /// Direct, or through an action profile or selector.
    pub kind: TableKind,
    /// Key fields, in order.
    pub keys: Vec<KeyField>,
    /// Actions, in JSON order.
    pub actions: Vec<ActionId>,
    /// Capacity.
    pub max_size: u32,
    /// Entries may have idle timeouts.
    pub support_timeout: bool,
    /// Direct counter.
    pub direct_counter: Option<CounterId>,
    /// Direct meter.
    pub direct_meter: Option<MeterId>,
    /// The program's default entry (None: a miss runs no action).
    pub default_action: Option<ActionCall>,
    /// The default action may not be changed (its parameters may).
    pub default_action_const: bool,
    /// The default entry may not be changed at all.
    pub default_entry_const: bool,
    /// The program gives the entries (`const entries`): they cannot be changed.
    pub const_entries: bool,
}

impl Table {
    /// Whether entries carry a priority (a ternary, range or optional key field).
    pub fn needs_priority(&self) -> bool {
        self.keys.iter().any(|k| k.kind.needs_priority())
    }

    /// The action of this table with this fully qualified name.
    pub fn action_named(&self, schema: &Schema, name: &str) -> Option<ActionId> {
        self.actions
            .iter()
            .copied()
            .find(|a| schema.action(*a).is_some_and(|x| x.name == name))
    }

    /// Whether `action` is one of the table's actions.
    pub fn has_action(&self, action: ActionId) -> bool {
        self.actions.contains(&action)
    }
}

/// An action parameter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Param {
    /// Name.
    pub name: String,
    /// Width in bits.
    pub width: u32,
}

/// An action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// Its id.
    pub id: ActionId,
    /// Fully qualified name (several actions may share it).
    pub name: String,
    /// The JSON `id`.
    pub json_id: i64,
    /// Parameters, in order.
    pub params: Vec<Param>,
}

/// An action profile or action selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionProfile {
    /// Its id.
    pub id: ProfileId,
    /// Fully qualified name.
    pub name: String,
    /// The JSON `id`.
    pub json_id: i64,
    /// Most members.
    pub max_size: u32,
    /// An action selector (groups allowed).
    pub with_selector: bool,
    /// Tables using it.
    pub tables: Vec<TableId>,
    /// Actions of those tables (what members may run), in first-seen order.
    pub actions: Vec<ActionId>,
}

impl ActionProfile {
    /// The action of the profile's tables with this fully qualified name.
    pub fn action_named(&self, schema: &Schema, name: &str) -> Option<ActionId> {
        self.actions
            .iter()
            .copied()
            .find(|a| schema.action(*a).is_some_and(|x| x.name == name))
    }
}

/// A counter array (or a direct counter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    /// Its id.
    pub id: CounterId,
    /// Fully qualified name.
    pub name: String,
    /// The JSON `id`.
    pub json_id: i64,
    /// Cells (0 for a direct counter, whose cells are its table's entries).
    pub size: u32,
    /// The table of a direct counter.
    pub direct_table: Option<TableId>,
}

/// What a meter measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MeterUnit {
    /// Packets.
    Packets,
    /// Bytes.
    Bytes,
}

/// A meter array (or a direct meter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meter {
    /// Its id.
    pub id: MeterId,
    /// Fully qualified name.
    pub name: String,
    /// The JSON `id`.
    pub json_id: i64,
    /// Cells (0 for a direct meter).
    pub size: u32,
    /// Unit.
    pub unit: MeterUnit,
    /// Rates per configuration (2 for v1model's two-rate meters).
    pub rate_count: u32,
    /// The table of a direct meter.
    pub direct_table: Option<TableId>,
}

/// A register array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Register {
    /// Its id.
    pub id: RegisterId,
    /// Fully qualified name.
    pub name: String,
    /// The JSON `id`.
    pub json_id: i64,
    /// Cells.
    pub size: u32,
    /// Cell width in bits (any width).
    pub width: u32,
}

/// One field of a digest sample.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DigestField {
    /// `header.field`.
    pub name: String,
    /// Width in bits; the field takes `ceil(width / 8)` bytes of a sample.
    pub width: u32,
    /// The header is chosen per packet (a header stack element): `name` names the
    /// first candidate.
    pub dynamic: bool,
}

/// A digest (bmv2 learn list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    /// Its id.
    pub id: DigestId,
    /// Name (P4Info names the digest by its struct type, which is this name).
    pub name: String,
    /// The JSON `id`: the list id of bmv2's learning messages and RPCs.
    pub json_id: i64,
    /// Sample fields, in order.
    pub fields: Vec<DigestField>,
}

impl Digest {
    /// Bytes of one sample.
    pub fn sample_len(&self) -> usize {
        self.fields
            .iter()
            .map(|f| f.width.div_ceil(8) as usize)
            .sum()
    }

    /// A sample as `{header.field=0x.., ...}` when its length is the digest's (its
    /// fields known), else `{0x<whole sample>}`.
    pub fn describe_sample(&self, sample: &[u8]) -> String {
        let hex = |b: &[u8]| {
            b.iter().fold(String::from("0x"), |mut s, x| {
                let _ = write!(s, "{x:02x}");
                s
            })
        };
        let known = !self.fields.is_empty()
            && !self.fields.iter().any(|f| f.dynamic)
            && self.sample_len() == sample.len();
        if !known {
            return format!("{{{}}}", hex(sample));
        }
        let mut at = 0;
        let parts: Vec<String> = self
            .fields
            .iter()
            .map(|f| {
                let n = f.width.div_ceil(8) as usize;
                let part = &sample[at..at + n];
                at += n;
                format!("{}={}", f.name, hex(part))
            })
            .collect();
        format!("{{{}}}", parts.join(", "))
    }

    /// One line describing a list of samples sent, as `p4jet run` logs it and
    /// `digest_dump` prints it: `digest learn_t (list 1) buffer 0, 2 samples:
    /// {ethernet.src_addr=0x0a0b0c0d0e0f, ...}; {...}`.
    pub fn describe_list(&self, list: &crate::entity::DigestList) -> String {
        let n = list.samples.len();
        let mut out = format!(
            "digest {} (list {}) buffer {}, {n} sample{}:",
            self.name,
            self.json_id,
            list.list_id,
            if n == 1 { "" } else { "s" }
        );
        for (i, s) in list.samples.iter().enumerate() {
            out.push_str(if i == 0 { " " } else { "; " });
            out.push_str(&self.describe_sample(s));
        }
        out
    }
}

/// A parser value set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueSet {
    /// Its id.
    pub id: ValueSetId,
    /// Fully qualified name.
    pub name: String,
    /// The JSON `id`.
    pub json_id: i64,
    /// Width of its values (`compressed_bitwidth`).
    pub width: u32,
    /// Most values.
    pub max_size: u32,
}

/// The algorithm of a named calculation, as far as the control plane cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CalcAlgo {
    /// `crc16_custom`: parameters set by `bm_set_crc16_custom_parameters`.
    Crc16Custom,
    /// `crc32_custom`: parameters set by `bm_set_crc32_custom_parameters`.
    Crc32Custom,
    /// `toeplitz`: key set by `bm_set_toeplitz_hash_key`.
    Toeplitz,
    /// Anything else (nothing to configure).
    Other,
}

/// A named hash calculation of the JSON (`calculations`; selector hashes are not
/// named calculations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calculation {
    /// Its id.
    pub id: CalcId,
    /// Name.
    pub name: String,
    /// The JSON `id`.
    pub json_id: i64,
    /// Algorithm.
    pub algo: CalcAlgo,
}

/// Kinds of named objects (for [`Schema::resolve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// Tables.
    Table,
    /// Actions.
    Action,
    /// Action profiles and selectors.
    Profile,
    /// Counters.
    Counter,
    /// Meters.
    Meter,
    /// Registers.
    Register,
    /// Digests.
    Digest,
    /// Parser value sets.
    ValueSet,
    /// Named calculations.
    Calculation,
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ObjectKind::Table => "table",
            ObjectKind::Action => "action",
            ObjectKind::Profile => "action profile",
            ObjectKind::Counter => "counter",
            ObjectKind::Meter => "meter",
            ObjectKind::Register => "register",
            ObjectKind::Digest => "digest",
            ObjectKind::ValueSet => "value set",
            ObjectKind::Calculation => "calculation",
        })
    }
}

/// The program model.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    /// Tables, in JSON order (pipeline by pipeline).
    pub tables: Vec<Table>,
    /// Actions, in JSON order.
    pub actions: Vec<Action>,
    /// Action profiles and selectors.
    pub profiles: Vec<ActionProfile>,
    /// Counters (direct ones included).
    pub counters: Vec<Counter>,
    /// Meters (direct ones included).
    pub meters: Vec<Meter>,
    /// Registers.
    pub registers: Vec<Register>,
    /// Digests (learn lists).
    pub digests: Vec<Digest>,
    /// Parser value sets.
    pub value_sets: Vec<ValueSet>,
    /// Named calculations.
    pub calculations: Vec<Calculation>,
    /// (kind, full name) → first index of that name.
    names: HashMap<(ObjectKind, String), u32>,
    /// (kind, unique dotted suffix) → full name.
    suffixes: HashMap<(ObjectKind, String), String>,
}

impl Schema {
    /// The model of a lowered program.
    pub fn from_program(p: &p4jet_ir::Program) -> Schema {
        let action_call = |c: &p4jet_ir::ActionCall| -> ActionCall {
            let args = match p.actions.get(c.action as usize) {
                Some(a) => a
                    .params
                    .iter()
                    .enumerate()
                    .map(|(i, (_, w))| {
                        let off = a.param_offsets.get(i).copied().unwrap_or(0) as usize;
                        let nb = w.div_ceil(8) as usize;
                        c.data
                            .get(off..off + nb)
                            .map(<[u8]>::to_vec)
                            .unwrap_or_else(|| vec![0; nb])
                    })
                    .collect(),
                None => vec![],
            };
            ActionCall::new(ActionId(c.action), args)
        };
        let tables = p
            .tables
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let keys = t
                    .keys
                    .iter()
                    .map(|k| {
                        let (target, is_validity) = match &k.source {
                            p4jet_ir::KeySource::Valid(h) => {
                                let hn = p
                                    .headers
                                    .get(h.any_header(p) as usize)
                                    .map(|h| h.name.clone())
                                    .unwrap_or_default();
                                if k.kind == p4jet_ir::MatchKind::Valid {
                                    (hn, true)
                                } else {
                                    (format!("{hn}.$valid$"), true)
                                }
                            }
                            p4jet_ir::KeySource::Field(f) => (field_ref_name(p, f), false),
                        };
                        KeyField {
                            name: k.name.clone(),
                            target,
                            kind: k.kind.into(),
                            width: k.width,
                            mask: k.mask.as_ref().map(|m| fit(&m.to_bytes_be(), k.width)),
                            is_validity,
                        }
                    })
                    .collect();
                let profile = t.action_profile.map(ProfileId);
                let kind = match (t.kind, profile) {
                    (p4jet_ir::TableKind::Indirect, Some(pr)) => TableKind::Indirect(pr),
                    (p4jet_ir::TableKind::IndirectWs, Some(pr)) => TableKind::IndirectWs(pr),
                    _ => TableKind::Direct,
                };
                Table {
                    id: TableId(i as u32),
                    name: t.name.clone(),
                    json_id: t.json_id,
                    match_type: t.match_type.into(),
                    kind,
                    keys,
                    actions: t.actions.iter().map(|a| ActionId(*a)).collect(),
                    max_size: t.max_size,
                    support_timeout: t.support_timeout,
                    direct_counter: t.direct_counter.map(CounterId),
                    direct_meter: t.direct_meter.map(MeterId),
                    default_action: t.default_entry.as_ref().map(action_call),
                    default_action_const: t.default_action_const,
                    default_entry_const: t.default_entry_const,
                    const_entries: t.const_entries.is_some(),
                }
            })
            .collect::<Vec<_>>();
        let actions = p
            .actions
            .iter()
            .enumerate()
            .map(|(i, a)| Action {
                id: ActionId(i as u32),
                name: a.name.clone(),
                json_id: a.json_id,
                params: a
                    .params
                    .iter()
                    .map(|(n, w)| Param {
                        name: n.clone(),
                        width: *w,
                    })
                    .collect(),
            })
            .collect();
        let profiles = p
            .action_profiles
            .iter()
            .enumerate()
            .map(|(i, ap)| {
                let mut actions: Vec<ActionId> = vec![];
                for t in &ap.tables {
                    if let Some(t) = tables.get(*t as usize) {
                        for a in &t.actions {
                            if !actions.contains(a) {
                                actions.push(*a);
                            }
                        }
                    }
                }
                ActionProfile {
                    id: ProfileId(i as u32),
                    name: ap.name.clone(),
                    json_id: ap.json_id,
                    max_size: ap.max_size,
                    with_selector: ap.selector.is_some(),
                    tables: ap.tables.iter().map(|t| TableId(*t)).collect(),
                    actions,
                }
            })
            .collect();
        let counters = p
            .counters
            .iter()
            .enumerate()
            .map(|(i, c)| Counter {
                id: CounterId(i as u32),
                name: c.name.clone(),
                json_id: c.json_id,
                size: if c.direct_table.is_some() { 0 } else { c.size },
                direct_table: c.direct_table.map(TableId),
            })
            .collect();
        let meters = p
            .meters
            .iter()
            .enumerate()
            .map(|(i, m)| Meter {
                id: MeterId(i as u32),
                name: m.name.clone(),
                json_id: m.json_id,
                size: if m.direct.is_some() { 0 } else { m.size },
                unit: if m.bytes {
                    MeterUnit::Bytes
                } else {
                    MeterUnit::Packets
                },
                rate_count: m.rate_count,
                direct_table: m.direct.as_ref().map(|(t, _)| TableId(*t)),
            })
            .collect();
        let registers = p
            .registers
            .iter()
            .enumerate()
            .map(|(i, r)| Register {
                id: RegisterId(i as u32),
                name: r.name.clone(),
                json_id: r.json_id,
                size: r.size,
                width: r.width,
            })
            .collect();
        let digests = p
            .learn_lists
            .iter()
            .enumerate()
            .map(|(i, l)| Digest {
                id: DigestId(i as u32),
                name: l.name.clone(),
                json_id: i64::from(l.id),
                fields: l
                    .fields
                    .iter()
                    .map(|f| DigestField {
                        name: field_ref_name(p, f),
                        width: f.width(p),
                        dynamic: matches!(f, p4jet_ir::FieldRef::Dyn { .. }),
                    })
                    .collect(),
            })
            .collect();
        let value_sets = p
            .value_sets
            .iter()
            .enumerate()
            .map(|(i, v)| ValueSet {
                id: ValueSetId(i as u32),
                name: v.name.clone(),
                json_id: v.json_id,
                width: v.width,
                max_size: v.max_size,
            })
            .collect();
        let selector_calcs: Vec<u32> = p
            .action_profiles
            .iter()
            .filter_map(|ap| ap.selector.as_ref().map(|(c, _)| *c))
            .collect();
        let calculations = p
            .calculations
            .iter()
            .enumerate()
            .filter(|(i, _)| !selector_calcs.contains(&(*i as u32)))
            .map(|(i, c)| Calculation {
                id: CalcId(i as u32),
                name: c.name.clone(),
                json_id: c.json_id,
                algo: match c.algo {
                    p4jet_ir::HashAlgo::Crc16Custom => CalcAlgo::Crc16Custom,
                    p4jet_ir::HashAlgo::Crc32Custom => CalcAlgo::Crc32Custom,
                    p4jet_ir::HashAlgo::Toeplitz => CalcAlgo::Toeplitz,
                    _ => CalcAlgo::Other,
                },
            })
            .collect();
        let mut s = Schema {
            tables,
            actions,
            profiles,
            counters,
            meters,
            registers,
            digests,
            value_sets,
            calculations,
            names: HashMap::new(),
            suffixes: HashMap::new(),
        };
        s.index_names();
        s
    }

    /// The model of a bmv2 JSON program (parsed and lowered as the switch loads it).
    pub fn from_json(text: &str) -> Result<Schema, RuntimeError> {
        let json = p4jet_json::parse(text)
            .map_err(|e| RuntimeError::invalid(format!("invalid bmv2 JSON: {e}")))?;
        let program = p4jet_ir::lower(&json)
            .map_err(|e| RuntimeError::invalid(format!("invalid bmv2 JSON: {e}")))?;
        Ok(Schema::from_program(&program))
    }

    /// [`Schema::from_json`] in an [`Arc`], as runtimes hand it out.
    pub fn shared_from_json(text: &str) -> Result<Arc<Schema>, RuntimeError> {
        Schema::from_json(text).map(Arc::new)
    }

    fn all_names(&self) -> Vec<(ObjectKind, u32, &str)> {
        let mut all = Vec::new();
        macro_rules! add {
            ($list:expr, $kind:expr) => {
                for (i, x) in $list.iter().enumerate() {
                    all.push(($kind, i as u32, x.name.as_str()));
                }
            };
        }
        add!(self.tables, ObjectKind::Table);
        add!(self.actions, ObjectKind::Action);
        add!(self.profiles, ObjectKind::Profile);
        add!(self.counters, ObjectKind::Counter);
        add!(self.meters, ObjectKind::Meter);
        add!(self.registers, ObjectKind::Register);
        add!(self.digests, ObjectKind::Digest);
        add!(self.value_sets, ObjectKind::ValueSet);
        add!(self.calculations, ObjectKind::Calculation);
        all
    }

    fn index_names(&mut self) {
        let mut names = HashMap::new();
        let mut count: HashMap<(ObjectKind, String), (usize, String)> = HashMap::new();
        for (kind, i, name) in self.all_names() {
            if names.contains_key(&(kind, name.to_string())) {
                // a second object of the same name (p4c copies actions per use):
                // lookups by name find the first; suffixes count the name once
                continue;
            }
            names.insert((kind, name.to_string()), i);
            // every dotted suffix, the full name included; a suffix claimed by two
            // objects of one kind names neither (as in simple_switch_CLI, even when it
            // is one object's full name)
            let parts: Vec<&str> = name.split('.').collect();
            for start in (0..parts.len()).rev() {
                let suffix = parts[start..].join(".");
                count
                    .entry((kind, suffix))
                    .or_insert((0, name.to_string()))
                    .0 += 1;
            }
        }
        self.names = names;
        self.suffixes = count
            .into_iter()
            .filter(|(_, (n, _))| *n == 1)
            .map(|(k, (_, name))| (k, name))
            .collect();
    }

    /// The fully qualified name of the object of this kind that `name` names, as
    /// `simple_switch_CLI` resolves it: any dotted suffix (the full name included)
    /// that no other object of the kind shares.
    pub fn resolve(&self, kind: ObjectKind, name: &str) -> Option<&str> {
        self.suffixes
            .get(&(kind, name.to_string()))
            .map(String::as_str)
    }

    /// The index of the (first) object of this kind with exactly this name.
    pub fn index_of(&self, kind: ObjectKind, name: &str) -> Option<u32> {
        self.names.get(&(kind, name.to_string())).copied()
    }

    /// The table with this fully qualified name.
    pub fn table_by_name(&self, name: &str) -> Option<TableId> {
        self.index_of(ObjectKind::Table, name).map(TableId)
    }

    /// The (first) action with this fully qualified name. Tables and profiles pick
    /// theirs with [`Table::action_named`] and [`ActionProfile::action_named`].
    pub fn action_by_name(&self, name: &str) -> Option<ActionId> {
        self.index_of(ObjectKind::Action, name).map(ActionId)
    }

    /// The action profile with this name.
    pub fn profile_by_name(&self, name: &str) -> Option<ProfileId> {
        self.index_of(ObjectKind::Profile, name).map(ProfileId)
    }

    /// The counter with this name.
    pub fn counter_by_name(&self, name: &str) -> Option<CounterId> {
        self.index_of(ObjectKind::Counter, name).map(CounterId)
    }

    /// The meter with this name.
    pub fn meter_by_name(&self, name: &str) -> Option<MeterId> {
        self.index_of(ObjectKind::Meter, name).map(MeterId)
    }

    /// The register with this name.
    pub fn register_by_name(&self, name: &str) -> Option<RegisterId> {
        self.index_of(ObjectKind::Register, name).map(RegisterId)
    }

    /// The digest with this name.
    pub fn digest_by_name(&self, name: &str) -> Option<DigestId> {
        self.index_of(ObjectKind::Digest, name).map(DigestId)
    }

    /// The digest with this JSON id (bmv2's learn list id).
    pub fn digest_by_json_id(&self, json_id: i64) -> Option<DigestId> {
        self.digests
            .iter()
            .find(|d| d.json_id == json_id)
            .map(|d| d.id)
    }

    /// The value set with this name.
    pub fn value_set_by_name(&self, name: &str) -> Option<ValueSetId> {
        self.index_of(ObjectKind::ValueSet, name).map(ValueSetId)
    }

    /// The named calculation with this name.
    pub fn calculation_by_name(&self, name: &str) -> Option<CalcId> {
        self.calculations
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.id)
    }

    /// A table.
    pub fn table(&self, id: TableId) -> Option<&Table> {
        self.tables.get(id.index())
    }

    /// An action.
    pub fn action(&self, id: ActionId) -> Option<&Action> {
        self.actions.get(id.index())
    }

    /// An action profile.
    pub fn profile(&self, id: ProfileId) -> Option<&ActionProfile> {
        self.profiles.get(id.index())
    }

    /// A counter.
    pub fn counter(&self, id: CounterId) -> Option<&Counter> {
        self.counters.get(id.index())
    }

    /// A meter.
    pub fn meter(&self, id: MeterId) -> Option<&Meter> {
        self.meters.get(id.index())
    }

    /// A register.
    pub fn register(&self, id: RegisterId) -> Option<&Register> {
        self.registers.get(id.index())
    }

    /// A digest.
    pub fn digest(&self, id: DigestId) -> Option<&Digest> {
        self.digests.get(id.index())
    }

    /// A value set.
    pub fn value_set(&self, id: ValueSetId) -> Option<&ValueSet> {
        self.value_sets.get(id.index())
    }

    /// A named calculation (by its id, which indexes the program's calculations).
    pub fn calculation(&self, id: CalcId) -> Option<&Calculation> {
        self.calculations.iter().find(|c| c.id == id)
    }

    /// The name of an action, or `action N` for an unknown id.
    pub fn action_name(&self, id: ActionId) -> String {
        self.action(id)
            .map_or_else(|| id.to_string(), |a| a.name.clone())
    }
}

/// `header.field` of a field reference (the first candidate header of a dynamic one).
fn field_ref_name(p: &p4jet_ir::Program, f: &p4jet_ir::FieldRef) -> String {
    match f {
        p4jet_ir::FieldRef::Static(f) => p.field_name(*f),
        p4jet_ir::FieldRef::Dyn { header, index } => {
            let h = header.any_header(p);
            match p
                .headers
                .get(h as usize)
                .and_then(|hi| hi.fields.get(*index as usize))
            {
                Some(f) => p.field_name(*f),
                None => String::from("?"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn corpus(name: &str) -> Schema {
        let p = format!(
            "{}/../../tests/corpus/{name}/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        Schema::from_json(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    #[test]
    fn tables_actions_and_suffixes() {
        let s = corpus("p4rt_switch");
        let dmac = s
            .table(s.table_by_name("IngressImpl.dmac").unwrap())
            .unwrap();
        assert_eq!(dmac.json_id, 10);
        assert_eq!(dmac.keys[0].name, "hdr.ethernet.dst_addr");
        assert_eq!(dmac.keys[0].cli_name(), "ethernet.dst_addr");
        assert_eq!(dmac.keys[0].width, 48);
        assert!(!dmac.needs_priority());
        let acl = s
            .table(s.table_by_name("IngressImpl.acl").unwrap())
            .unwrap();
        assert!(acl.needs_priority());
        // p4c writes P4's `optional` as `ternary` in the JSON (the P4Info says OPTIONAL)
        assert_eq!(acl.keys[2].kind, MatchKind::Ternary);
        assert_eq!(acl.keys[1].kind, MatchKind::Range);
        assert!(acl.direct_counter.is_some());
        let route = s
            .table(s.table_by_name("IngressImpl.route").unwrap())
            .unwrap();
        let TableKind::IndirectWs(p) = route.kind else {
            panic!("route is not a selector table");
        };
        assert!(s.profile(p).unwrap().with_selector);
        // suffixes
        assert_eq!(
            s.resolve(ObjectKind::Table, "dmac"),
            Some("IngressImpl.dmac")
        );
        // two actions named NoAction: one name, found once
        assert_eq!(s.resolve(ObjectKind::Action, "NoAction"), Some("NoAction"));
        assert_eq!(
            s.table_by_name("IngressImpl.smac")
                .and_then(|t| s.table(t))
                .map(|t| t.support_timeout),
            Some(true)
        );
        let d = &s.digests[0];
        assert_eq!(d.name, "learn_t");
        assert_eq!(d.json_id, 1);
        assert_eq!(d.sample_len(), 6 + 2);
        assert_eq!(s.registers[0].width, 32);
        assert_eq!(s.value_sets[0].name, "ParserImpl.punt_ports");
    }

    #[test]
    fn fit_and_ones() {
        assert_eq!(fit(&[0xff, 0xff], 9), vec![0x01, 0xff]);
        assert_eq!(fit(&[0x05], 16), vec![0, 5]);
        assert_eq!(fit(&[1, 2, 3], 16), vec![2, 3]);
        assert_eq!(ones(12), vec![0x0f, 0xff]);
    }

    #[test]
    fn bad_json_is_an_invalid_argument() {
        let e = Schema::from_json("{").unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::InvalidArgument);
        assert!(e.message.starts_with("invalid bmv2 JSON"));
    }
}
