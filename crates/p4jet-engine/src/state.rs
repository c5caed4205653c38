//! Run-time state of a loaded program.
//!
//! [`ControlState`] is everything the control plane writes and the data plane only reads:
//! table entries and defaults, action profiles, parser value sets, CRC parameters,
//! multicast groups and mirroring sessions. It is replicated by the `left-right` crate so
//! workers read it wait-free while a writer applies [`Op`]s; every op is deterministic, so
//! both copies stay identical (same entry handles).
//!
//! [`Externs`] is the state the data plane itself writes: counters, registers and meters,
//! shared by all workers through atomics and short critical sections.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use num_bigint::BigUint;
use p4jet_ir::{ActionCall, Program};
use p4jet_tables::{EntryHandle, FieldMatch, KeyFieldSpec, MatchKey, Table, TableError};

use crate::hash::CrcParams;

/// What a table entry (or default) runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryAction {
    /// An action with its data.
    Direct(ActionCall),
    /// An action-profile member.
    Member(u32),
    /// An action-selector group.
    Group(u32),
}

/// Per-entry value stored in the match structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryValue {
    /// Action.
    pub action: EntryAction,
    /// Idle timeout in ms (0 = none).
    pub timeout_ms: u64,
}

/// One table's run-time state.
#[derive(Clone)]
pub struct TableState {
    /// Entries.
    pub entries: Table<EntryValue>,
    /// Current default (None: miss runs nothing).
    pub default: Option<EntryAction>,
}

/// A member of an action profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Action and data.
    pub call: ActionCall,
}

/// Action profile / selector state.
#[derive(Debug, Clone, Default)]
pub struct ProfileState {
    /// Members by handle.
    pub members: BTreeMap<u32, Member>,
    /// Groups by handle: member handles, kept sorted.
    pub groups: BTreeMap<u32, Vec<u32>>,
    /// Next member handle (lowest free is searched from 0).
    pub next_member: u32,
    /// Next group handle.
    pub next_group: u32,
}

impl ProfileState {
    /// Lowest unused member handle.
    pub fn alloc_member(&self) -> u32 {
        (0..)
            .find(|h| !self.members.contains_key(h))
            .unwrap_or(u32::MAX)
    }

    /// Lowest unused group handle.
    pub fn alloc_group(&self) -> u32 {
        (0..)
            .find(|h| !self.groups.contains_key(h))
            .unwrap_or(u32::MAX)
    }
}

/// A multicast node (L1 entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McNode {
    /// Replication id written to `egress_rid`.
    pub rid: u16,
    /// Ports, ascending and unique.
    pub ports: Vec<u32>,
    /// LAG indexes, ascending and unique.
    pub lags: Vec<u32>,
    /// Group the node is associated with.
    pub group: Option<u32>,
}

/// Packet replication engine configuration.
#[derive(Debug, Clone, Default)]
pub struct Pre {
    /// Groups: node handles in association order.
    pub groups: BTreeMap<u32, Vec<u32>>,
    /// Nodes by handle.
    pub nodes: BTreeMap<u32, McNode>,
    /// LAG membership: lag index → ports, ascending and unique.
    pub lags: BTreeMap<u32, Vec<u32>>,
}

/// A mirroring session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MirrorSession {
    /// Egress port.
    pub port: Option<u32>,
    /// Multicast group.
    pub mgid: Option<u32>,
}

impl std::fmt::Debug for TableState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableState")
            .field("entries", &self.entries.len())
            .field("default", &self.default)
            .finish()
    }
}

/// Control-plane state read by the data plane.
#[derive(Clone, Debug)]
pub struct ControlState {
    /// Per table.
    pub tables: Vec<TableState>,
    /// Per action profile.
    pub profiles: Vec<ProfileState>,
    /// Parser value sets: values (width-truncated bytes).
    pub value_sets: Vec<Vec<Vec<u8>>>,
    /// Custom CRC parameters per slot.
    pub crc: Vec<Option<CrcParams>>,
    /// Multicast.
    pub pre: Pre,
    /// Mirroring sessions by id.
    pub mirror: BTreeMap<u32, MirrorSession>,
    /// Result of the last applied op (read by the writer after publishing).
    pub last: OpResult,
    /// Results of the last [`Op::AddEntries`], one per entry, in order.
    pub added: Vec<Result<EntryHandle, TableError>>,
}

/// One entry of [`Op::AddEntries`].
#[derive(Debug, Clone)]
pub struct NewEntry {
    /// Table.
    pub table: u32,
    /// Key.
    pub key: MatchKey,
    /// Value.
    pub value: EntryValue,
}

/// Result of a control op.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OpResult {
    /// Nothing to report.
    #[default]
    Ok,
    /// A new handle.
    Handle(u32),
    /// A table error.
    Table(TableError),
    /// Another error.
    Err(String),
}

/// A control-plane write.
#[derive(Debug, Clone)]
pub enum Op {
    /// Add an entry.
    AddEntry {
        /// Table.
        table: u32,
        /// Key.
        key: MatchKey,
        /// Value.
        value: EntryValue,
    },
    /// Add entries in order, each as [`Op::AddEntry`] would (a refused entry
    /// changes nothing); the results go to [`ControlState::added`]. Bulk loads
    /// publish many entries with one op.
    AddEntries(Vec<NewEntry>),
    /// Make room for this many more entries in a table (a hint: nothing visible
    /// changes).
    Reserve {
        /// Table.
        table: u32,
        /// Entries.
        additional: usize,
    },
    /// Modify an entry's action.
    ModifyEntry {
        /// Table.
        table: u32,
        /// Handle.
        handle: EntryHandle,
        /// Action.
        action: EntryAction,
    },
    /// Delete an entry.
    DeleteEntry {
        /// Table.
        table: u32,
        /// Handle.
        handle: EntryHandle,
    },
    /// Remove all entries.
    ClearEntries(u32),
    /// Set (Some) or reset to the program's (None) default.
    SetDefault {
        /// Table.
        table: u32,
        /// Default.
        action: Option<EntryAction>,
    },
    /// Set an entry's idle timeout.
    SetTimeout {
        /// Table.
        table: u32,
        /// Handle.
        handle: EntryHandle,
        /// Timeout.
        ms: u64,
    },
    /// Add a profile member.
    AddMember {
        /// Profile.
        profile: u32,
        /// Action.
        call: ActionCall,
    },
    /// Modify a member.
    ModifyMember {
        /// Profile.
        profile: u32,
        /// Member.
        member: u32,
        /// Action.
        call: ActionCall,
    },
    /// Delete a member.
    DeleteMember {
        /// Profile.
        profile: u32,
        /// Member.
        member: u32,
    },
    /// Create a group.
    AddGroup(u32),
    /// Delete a group.
    DeleteGroup {
        /// Profile.
        profile: u32,
        /// Group.
        group: u32,
    },
    /// Add a member to a group.
    AddToGroup {
        /// Profile.
        profile: u32,
        /// Member.
        member: u32,
        /// Group.
        group: u32,
    },
    /// Remove a member from a group.
    RemoveFromGroup {
        /// Profile.
        profile: u32,
        /// Member.
        member: u32,
        /// Group.
        group: u32,
    },
    /// Add a value to a value set.
    VsetAdd {
        /// Set.
        vset: u32,
        /// Value.
        value: Vec<u8>,
    },
    /// Remove a value.
    VsetRemove {
        /// Set.
        vset: u32,
        /// Value.
        value: Vec<u8>,
    },
    /// Clear a value set.
    VsetClear(u32),
    /// Set custom CRC parameters.
    SetCrc {
        /// Slot.
        slot: u32,
        /// Parameters.
        params: CrcParams,
    },
    /// Replace the PRE configuration.
    SetPre(Pre),
    /// Set (Some) or delete (None) a mirroring session.
    SetMirror {
        /// Session id.
        id: u32,
        /// Config.
        session: Option<MirrorSession>,
    },
    /// Reset everything to the state after loading.
    Reset(Box<ControlState>),
}

/// Errors building state for a program.
pub type StateError = String;

impl ControlState {
    /// Fresh state for a program: empty tables with their defaults and const entries.
    pub fn new(p: &Program) -> Result<ControlState, StateError> {
        let mut tables = vec![];
        for t in &p.tables {
            let fields: Vec<KeyFieldSpec> = t
                .keys
                .iter()
                .map(|k| KeyFieldSpec {
                    kind: tables_kind(k.kind),
                    bit_width: k.width,
                })
                .collect();
            let max = (t.max_size as usize).clamp(1, p4jet_tables::MAX_TABLE_SIZE);
            let mut entries =
                Table::new(fields, max).map_err(|e| format!("table `{}`: {e}", t.name))?;
            if let Some(ces) = &t.const_entries {
                for (i, ce) in ces.iter().enumerate() {
                    let key = MatchKey {
                        fields: ce
                            .keys
                            .iter()
                            .map(|k| match k {
                                p4jet_ir::ConstKey::Exact(v) => FieldMatch::Exact(v.clone()),
                                p4jet_ir::ConstKey::Lpm(v, l) => FieldMatch::Lpm {
                                    value: v.clone(),
                                    prefix_len: *l,
                                },
                                p4jet_ir::ConstKey::Ternary(v, m) => FieldMatch::Ternary {
                                    value: v.clone(),
                                    mask: m.clone(),
                                },
                                p4jet_ir::ConstKey::Range(a, b) => FieldMatch::Range {
                                    low: a.clone(),
                                    high: b.clone(),
                                },
                            })
                            .collect(),
                        priority: ce.priority,
                    };
                    let key = fix_valid_keys(&t.keys, key);
                    entries
                        .insert(
                            key,
                            EntryValue {
                                action: EntryAction::Direct(ce.action.clone()),
                                timeout_ms: 0,
                            },
                        )
                        .map_err(|e| format!("table `{}` const entry {i}: {e}", t.name))?;
                }
            }
            let default = t.default_entry.clone().map(EntryAction::Direct);
            tables.push(TableState { entries, default });
        }
        Ok(ControlState {
            tables,
            profiles: vec![ProfileState::default(); p.action_profiles.len()],
            value_sets: vec![vec![]; p.value_sets.len()],
            crc: vec![None; p.custom_crc_slots as usize],
            pre: Pre::default(),
            mirror: BTreeMap::new(),
            last: OpResult::Ok,
            added: Vec::new(),
        })
    }

    /// Applies one op, recording its result in `self.last`.
    pub fn apply(&mut self, op: &Op) {
        self.last = match self.apply_inner(op) {
            Ok(r) => r,
            Err(e) => e,
        };
    }

    /// [`ControlState::apply`] of an op that is not needed afterwards: table
    /// entries are moved into the tables instead of copied.
    pub fn apply_owned(&mut self, op: Op) {
        match op {
            Op::AddEntry { table, key, value } => {
                self.last = match self.table(table) {
                    Ok(t) => match t.entries.insert(key, value) {
                        Ok(h) => OpResult::Handle(h),
                        Err(e) => OpResult::Table(e),
                    },
                    Err(e) => e,
                };
            }
            Op::AddEntries(entries) => {
                self.add_entries(entries.len(), |tables, added| {
                    for e in entries {
                        added.push(match tables.get_mut(e.table as usize) {
                            Some(t) => t.entries.insert(e.key, e.value),
                            None => Err(no_table(e.table)),
                        });
                    }
                });
                self.last = OpResult::Ok;
            }
            op => self.apply(&op),
        }
    }

    /// Runs `add` with the tables and the cleared result list of [`Op::AddEntries`].
    fn add_entries(
        &mut self,
        n: usize,
        add: impl FnOnce(&mut [TableState], &mut Vec<Result<EntryHandle, TableError>>),
    ) {
        let mut added = std::mem::take(&mut self.added);
        added.clear();
        added.reserve(n);
        add(&mut self.tables, &mut added);
        self.added = added;
    }

    fn apply_inner(&mut self, op: &Op) -> Result<OpResult, OpResult> {
        match op {
            Op::AddEntry { table, key, value } => {
                let t = self.table(*table)?;
                t.entries
                    .insert_ref(key, value.clone())
                    .map(OpResult::Handle)
                    .map_err(OpResult::Table)
            }
            Op::AddEntries(entries) => {
                self.add_entries(entries.len(), |tables, added| {
                    for e in entries {
                        added.push(match tables.get_mut(e.table as usize) {
                            Some(t) => t.entries.insert_ref(&e.key, e.value.clone()),
                            None => Err(no_table(e.table)),
                        });
                    }
                });
                Ok(OpResult::Ok)
            }
            Op::Reserve { table, additional } => {
                self.table(*table)?.entries.reserve(*additional);
                Ok(OpResult::Ok)
            }
            Op::ModifyEntry {
                table,
                handle,
                action,
            } => {
                let t = self.table(*table)?;
                let timeout_ms = t
                    .entries
                    .get(*handle)
                    .map(|(_, v)| v.timeout_ms)
                    .unwrap_or(0);
                t.entries
                    .modify(
                        *handle,
                        EntryValue {
                            action: action.clone(),
                            timeout_ms,
                        },
                    )
                    .map(|_| OpResult::Ok)
                    .map_err(OpResult::Table)
            }
            Op::DeleteEntry { table, handle } => {
                let t = self.table(*table)?;
                t.entries
                    .delete(*handle)
                    .map(|_| OpResult::Ok)
                    .map_err(OpResult::Table)
            }
            Op::ClearEntries(table) => {
                self.table(*table)?.entries.clear();
                Ok(OpResult::Ok)
            }
            Op::SetDefault { table, action } => {
                self.table(*table)?.default = action.clone();
                Ok(OpResult::Ok)
            }
            Op::SetTimeout { table, handle, ms } => {
                let t = self.table(*table)?;
                let Some((_, v)) = t.entries.get(*handle) else {
                    return Err(OpResult::Table(TableError::InvalidHandle));
                };
                let mut v = v.clone();
                v.timeout_ms = *ms;
                t.entries
                    .modify(*handle, v)
                    .map(|_| OpResult::Ok)
                    .map_err(OpResult::Table)
            }
            Op::AddMember { profile, call } => {
                let p = self.profile(*profile)?;
                let h = p.alloc_member();
                p.members.insert(h, Member { call: call.clone() });
                Ok(OpResult::Handle(h))
            }
            Op::ModifyMember {
                profile,
                member,
                call,
            } => {
                let p = self.profile(*profile)?;
                match p.members.get_mut(member) {
                    Some(m) => {
                        m.call = call.clone();
                        Ok(OpResult::Ok)
                    }
                    None => Err(OpResult::Err("invalid member handle".into())),
                }
            }
            Op::DeleteMember { profile, member } => {
                let p = self.profile(*profile)?;
                if p.members.remove(member).is_none() {
                    return Err(OpResult::Err("invalid member handle".into()));
                }
                for g in p.groups.values_mut() {
                    g.retain(|m| m != member);
                }
                Ok(OpResult::Ok)
            }
            Op::AddGroup(profile) => {
                let p = self.profile(*profile)?;
                let h = p.alloc_group();
                p.groups.insert(h, vec![]);
                Ok(OpResult::Handle(h))
            }
            Op::DeleteGroup { profile, group } => {
                let p = self.profile(*profile)?;
                p.groups
                    .remove(group)
                    .map(|_| OpResult::Ok)
                    .ok_or(OpResult::Err("invalid group handle".into()))
            }
            Op::AddToGroup {
                profile,
                member,
                group,
            } => {
                let p = self.profile(*profile)?;
                if !p.members.contains_key(member) {
                    return Err(OpResult::Err("invalid member handle".into()));
                }
                let Some(g) = p.groups.get_mut(group) else {
                    return Err(OpResult::Err("invalid group handle".into()));
                };
                if g.contains(member) {
                    return Err(OpResult::Err("member already in group".into()));
                }
                g.push(*member);
                g.sort_unstable();
                Ok(OpResult::Ok)
            }
            Op::RemoveFromGroup {
                profile,
                member,
                group,
            } => {
                let p = self.profile(*profile)?;
                let Some(g) = p.groups.get_mut(group) else {
                    return Err(OpResult::Err("invalid group handle".into()));
                };
                let before = g.len();
                g.retain(|m| m != member);
                if g.len() == before {
                    return Err(OpResult::Err("member not in group".into()));
                }
                Ok(OpResult::Ok)
            }
            Op::VsetAdd { vset, value } => {
                let s = self
                    .value_sets
                    .get_mut(*vset as usize)
                    .ok_or(OpResult::Err("no such value set".into()))?;
                if !s.contains(value) {
                    s.push(value.clone());
                }
                Ok(OpResult::Ok)
            }
            Op::VsetRemove { vset, value } => {
                let s = self
                    .value_sets
                    .get_mut(*vset as usize)
                    .ok_or(OpResult::Err("no such value set".into()))?;
                s.retain(|v| v != value);
                Ok(OpResult::Ok)
            }
            Op::VsetClear(vset) => {
                let s = self
                    .value_sets
                    .get_mut(*vset as usize)
                    .ok_or(OpResult::Err("no such value set".into()))?;
                s.clear();
                Ok(OpResult::Ok)
            }
            Op::SetCrc { slot, params } => {
                let c = self
                    .crc
                    .get_mut(*slot as usize)
                    .ok_or(OpResult::Err("no such calculation".into()))?;
                *c = Some(*params);
                Ok(OpResult::Ok)
            }
            Op::SetPre(pre) => {
                self.pre = pre.clone();
                Ok(OpResult::Ok)
            }
            Op::SetMirror { id, session } => {
                match session {
                    Some(s) => {
                        self.mirror.insert(*id, *s);
                    }
                    None => {
                        if self.mirror.remove(id).is_none() {
                            return Err(OpResult::Err("session not found".into()));
                        }
                    }
                }
                Ok(OpResult::Ok)
            }
            Op::Reset(fresh) => {
                *self = (**fresh).clone();
                Ok(OpResult::Ok)
            }
        }
    }

    fn table(&mut self, t: u32) -> Result<&mut TableState, OpResult> {
        self.tables
            .get_mut(t as usize)
            .ok_or(OpResult::Err(format!("no table {t}")))
    }

    fn profile(&mut self, p: u32) -> Result<&mut ProfileState, OpResult> {
        self.profiles
            .get_mut(p as usize)
            .ok_or(OpResult::Err(format!("no action profile {p}")))
    }
}

fn no_table(t: u32) -> TableError {
    TableError::InvalidSpec(format!("no table {t}"))
}

impl left_right::Absorb<Op> for ControlState {
    fn absorb_first(&mut self, op: &mut Op, _other: &Self) {
        self.apply(op);
    }

    fn absorb_second(&mut self, op: Op, _other: &Self) {
        self.apply_owned(op);
    }

    fn sync_with(&mut self, first: &Self) {
        *self = first.clone();
    }
}

/// Maps IR match kinds to the tables crate's.
pub fn tables_kind(k: p4jet_ir::MatchKind) -> p4jet_tables::MatchKind {
    use p4jet_ir::MatchKind as M;
    match k {
        M::Exact => p4jet_tables::MatchKind::Exact,
        M::Lpm => p4jet_tables::MatchKind::Lpm,
        M::Ternary | M::Optional => p4jet_tables::MatchKind::Ternary,
        M::Range => p4jet_tables::MatchKind::Range,
        M::Valid => p4jet_tables::MatchKind::Valid,
    }
}

/// Const entries and control-plane keys give `valid` keys as one byte; the tables crate
/// wants `FieldMatch::Valid`.
pub fn fix_valid_keys(keys: &[p4jet_ir::TableKey], mut k: MatchKey) -> MatchKey {
    for (f, spec) in k.fields.iter_mut().zip(keys) {
        if spec.kind == p4jet_ir::MatchKind::Valid
            && let FieldMatch::Exact(v) = f
        {
            *f = FieldMatch::Valid(v.iter().any(|b| *b != 0));
        }
    }
    k
}

// ------------------------------------------------------------------------------ externs

/// A counter cell pair (bytes, packets).
#[derive(Debug, Default)]
pub struct CounterCell {
    /// Bytes.
    pub bytes: AtomicU64,
    /// Packets.
    pub packets: AtomicU64,
}

impl CounterCell {
    /// Counts one packet of `len` bytes.
    #[inline]
    pub fn count(&self, len: u32) {
        self.bytes.fetch_add(len as u64, Ordering::Relaxed);
        self.packets.fetch_add(1, Ordering::Relaxed);
    }

    /// (bytes, packets)
    pub fn read(&self) -> (u64, u64) {
        (
            self.bytes.load(Ordering::Relaxed),
            self.packets.load(Ordering::Relaxed),
        )
    }

    /// Overwrites.
    pub fn write(&self, bytes: u64, packets: u64) {
        self.bytes.store(bytes, Ordering::Relaxed);
        self.packets.store(packets, Ordering::Relaxed);
    }
}

/// Meter rates: (units per microsecond, burst) for committed then peak.
pub type MeterRates = Vec<(f64, u32)>;

/// A two-rate three-color meter cell (bmv2 semantics).
#[derive(Debug, Clone, Default)]
pub struct MeterCell {
    /// Configured rates; empty = unconfigured (always GREEN).
    pub rates: MeterRates,
    /// Tokens per rate.
    pub tokens: Vec<f64>,
    /// Last update time (µs).
    pub last_us: u64,
}

/// Meter colors.
pub const GREEN: u32 = 0;
/// Yellow.
pub const YELLOW: u32 = 1;
/// Red.
pub const RED: u32 = 2;

impl MeterCell {
    /// Configures rates; buckets start full.
    pub fn set_rates(&mut self, rates: MeterRates, now_us: u64) {
        self.tokens = rates.iter().map(|(_, b)| *b as f64).collect();
        self.rates = rates;
        self.last_us = now_us;
    }

    /// Marks `units` (packets or bytes) arriving at `now_us`.
    pub fn execute(&mut self, units: u64, now_us: u64) -> u32 {
        if self.rates.is_empty() {
            return GREEN;
        }
        let dt = now_us.saturating_sub(self.last_us) as f64;
        self.last_us = now_us.max(self.last_us);
        for (t, (rate, burst)) in self.tokens.iter_mut().zip(&self.rates) {
            *t = (*t + dt * rate).min(*burst as f64);
        }
        let u = units as f64;
        // RFC 2698 generalised as bmv2 does: the highest rate (peak) is checked first; the
        // first bucket short of tokens gives the color (index + 1) and only the buckets
        // above it are charged.
        let n = self.rates.len();
        for i in (0..n).rev() {
            if self.tokens[i] < u {
                for t in &mut self.tokens[i + 1..] {
                    *t -= u;
                }
                return (i + 1) as u32;
            }
        }
        for t in &mut self.tokens {
            *t -= u;
        }
        GREEN
    }
}

/// A register array.
#[derive(Debug)]
pub enum RegisterArray {
    /// Cells of at most 64 bits.
    Narrow {
        /// Width.
        width: u32,
        /// Cells.
        cells: Box<[AtomicU64]>,
    },
    /// Wider cells.
    Wide {
        /// Width.
        width: u32,
        /// Cells.
        cells: Mutex<Vec<BigUint>>,
    },
}

impl RegisterArray {
    fn new(width: u32, size: u32) -> Self {
        if width <= 64 {
            RegisterArray::Narrow {
                width,
                cells: (0..size).map(|_| AtomicU64::new(0)).collect(),
            }
        } else {
            RegisterArray::Wide {
                width,
                cells: Mutex::new(vec![BigUint::default(); size as usize]),
            }
        }
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        match self {
            RegisterArray::Narrow { cells, .. } => cells.len(),
            RegisterArray::Wide { cells, .. } => cells.lock().map(|c| c.len()).unwrap_or(0),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads a cell.
    pub fn read(&self, i: usize) -> Option<BigUint> {
        match self {
            RegisterArray::Narrow { cells, .. } => cells
                .get(i)
                .map(|c| BigUint::from(c.load(Ordering::Relaxed))),
            RegisterArray::Wide { cells, .. } => cells.lock().ok()?.get(i).cloned(),
        }
    }

    /// Reads a cell of a narrow array.
    #[inline]
    pub fn read_u64(&self, i: usize) -> Option<u64> {
        match self {
            RegisterArray::Narrow { cells, .. } => cells.get(i).map(|c| c.load(Ordering::Relaxed)),
            RegisterArray::Wide { .. } => None,
        }
    }

    /// Writes a cell (truncated to the width). Returns false when out of range.
    pub fn write(&self, i: usize, v: &BigUint) -> bool {
        match self {
            RegisterArray::Narrow { width, cells } => {
                let m = if *width >= 64 {
                    u64::MAX
                } else {
                    (1u64 << width) - 1
                };
                let lo = v.iter_u64_digits().next().unwrap_or(0) & m;
                cells
                    .get(i)
                    .map(|c| c.store(lo, Ordering::Relaxed))
                    .is_some()
            }
            RegisterArray::Wide { width, cells } => {
                let m = (BigUint::from(1u8) << *width) - 1u8;
                match cells.lock() {
                    Ok(mut c) => c.get_mut(i).map(|x| *x = v & m).is_some(),
                    Err(_) => false,
                }
            }
        }
    }

    /// Writes a narrow cell.
    #[inline]
    pub fn write_u64(&self, i: usize, v: u64) -> bool {
        match self {
            RegisterArray::Narrow { width, cells } => {
                let m = if *width >= 64 {
                    u64::MAX
                } else {
                    (1u64 << width) - 1
                };
                cells
                    .get(i)
                    .map(|c| c.store(v & m, Ordering::Relaxed))
                    .is_some()
            }
            RegisterArray::Wide { .. } => self.write(i, &BigUint::from(v)),
        }
    }

    /// Zeroes all cells.
    pub fn reset(&self) {
        match self {
            RegisterArray::Narrow { cells, .. } => {
                cells.iter().for_each(|c| c.store(0, Ordering::Relaxed))
            }
            RegisterArray::Wide { cells, .. } => {
                if let Ok(mut c) = cells.lock() {
                    c.iter_mut().for_each(|x| *x = BigUint::default());
                }
            }
        }
    }
}

/// Data-plane-written state.
#[derive(Debug)]
pub struct Externs {
    /// Indirect counters (direct ones are empty here).
    pub counters: Vec<Box<[CounterCell]>>,
    /// Direct counters per table (indexed by handle index).
    pub direct_counters: Vec<Option<Box<[CounterCell]>>>,
    /// Registers.
    pub registers: Vec<RegisterArray>,
    /// Indirect meters.
    pub meters: Vec<Box<[Mutex<MeterCell>]>>,
    /// Direct meters per table (indexed by handle index).
    pub direct_meters: Vec<Option<Box<[Mutex<MeterCell>]>>>,
}

impl Externs {
    /// Zeroed state for a program.
    pub fn new(p: &Program) -> Externs {
        let cells =
            |n: u32| -> Box<[CounterCell]> { (0..n).map(|_| CounterCell::default()).collect() };
        let meters = |n: u32| -> Box<[Mutex<MeterCell>]> {
            (0..n).map(|_| Mutex::new(MeterCell::default())).collect()
        };
        Externs {
            counters: p
                .counters
                .iter()
                .map(|c| {
                    if c.direct_table.is_some() {
                        cells(0)
                    } else {
                        cells(c.size)
                    }
                })
                .collect(),
            direct_counters: p
                .tables
                .iter()
                .map(|t| {
                    t.direct_counter
                        .map(|_| cells(t.max_size.clamp(1, p4jet_tables::MAX_TABLE_SIZE as u32)))
                })
                .collect(),
            registers: p
                .registers
                .iter()
                .map(|r| RegisterArray::new(r.width, r.size))
                .collect(),
            meters: p
                .meters
                .iter()
                .map(|m| {
                    if m.direct.is_some() {
                        meters(0)
                    } else {
                        meters(m.size)
                    }
                })
                .collect(),
            direct_meters: p
                .tables
                .iter()
                .map(|t| {
                    t.direct_meter
                        .map(|_| meters(t.max_size.clamp(1, p4jet_tables::MAX_TABLE_SIZE as u32)))
                })
                .collect(),
        }
    }

    /// Zeroes everything (counters, registers, meter configuration).
    pub fn reset(&self) {
        for c in self
            .counters
            .iter()
            .chain(self.direct_counters.iter().flatten())
        {
            c.iter().for_each(|x| x.write(0, 0));
        }
        for r in &self.registers {
            r.reset();
        }
        for m in self
            .meters
            .iter()
            .chain(self.direct_meters.iter().flatten())
        {
            for c in m.iter() {
                if let Ok(mut c) = c.lock() {
                    *c = MeterCell::default();
                }
            }
        }
    }
}

/// Index of the cell of a handle in per-entry arrays.
#[inline]
pub fn handle_index(h: EntryHandle) -> usize {
    (h & 0x00ff_ffff) as usize
}
