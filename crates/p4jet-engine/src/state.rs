//! Run-time state of a loaded program.
//!
//! [`ControlState`] is everything the control plane writes and the data plane only reads:
//! table entries and defaults, action profiles, parser value sets, CRC parameters,
//! multicast groups and mirroring sessions. It is replicated by the `left-right` crate so
//! workers read it wait-free while a writer applies [`Op`]s; every op is deterministic, so
//! both copies stay identical (same entry handles).
//!
//! An [`Op::Batch`] applies many ops with one publication: packets see all of them or
//! none. The checks that depend on the state (a member an entry points to exists, a
//! member to delete is unused, ...) are made as each op applies, so an op sees the
//! effects of the ops before it in its batch; a failing op changes nothing, and with
//! `atomic` the ops of the batch already applied are undone (see [`Op::Batch`]).
//!
//! [`Externs`] is the state the data plane itself writes: counters, registers and meters,
//! shared by all workers through atomics and short critical sections.

use std::borrow::Cow;
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
    /// A one-shot selector entry: actions of its own, chosen by the selector's hash.
    OneShot(Box<OneShot>),
}

/// The actions of a one-shot selector entry (P4Runtime's `action_profile_action_set`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneShot {
    /// Each action with its weight and watch port.
    pub actions: Vec<(ActionCall, u32, Option<u32>)>,
    /// The selection list: each action's index once per unit of its weight.
    pub pick: Vec<u32>,
}

impl OneShot {
    /// Actions with (weight ≥ 1, watch port).
    pub fn new(actions: Vec<(ActionCall, u32, Option<u32>)>) -> OneShot {
        let pick = actions
            .iter()
            .enumerate()
            .flat_map(|(i, (_, w, _))| std::iter::repeat_n(i as u32, (*w).max(1) as usize))
            .collect();
        OneShot { actions, pick }
    }
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
    /// Groups by handle: member handles, kept sorted. A member appears once per unit
    /// of weight (bmv2's groups are sets: weight 1), so that the selector's choice
    /// `hash % len` is weighted.
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pre {
    /// Groups: node handles in association order.
    pub groups: BTreeMap<u32, Vec<u32>>,
    /// Nodes by handle.
    pub nodes: BTreeMap<u32, McNode>,
    /// LAG membership: lag index → ports, ascending and unique.
    pub lags: BTreeMap<u32, Vec<u32>>,
}

/// A mirroring (clone) session.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MirrorSession {
    /// Egress port.
    pub port: Option<u32>,
    /// Multicast group.
    pub mgid: Option<u32>,
    /// Copies to make instead of `port` and `mgid` (P4Runtime replicas): (port,
    /// replication id), in order.
    pub replicas: Option<Vec<(u32, u16)>>,
    /// Clones are truncated to this many bytes (0 = whole).
    pub truncate: u32,
    /// P4Runtime's class of service (kept and reported only).
    pub class_of_service: u32,
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
    /// The action profile of each table (indirect tables).
    pub table_profiles: Vec<Option<u32>>,
    /// Result of the last applied op (read by the writer after publishing).
    pub last: OpResult,
    /// Results of the last [`Op::AddEntries`], one per entry, in order.
    pub added: Vec<Result<EntryHandle, TableError>>,
    /// Results of the last [`Op::Batch`]: one per op, in order (ops not applied
    /// because an earlier one failed: [`Refusal::Aborted`]).
    pub results: Vec<OpResult>,
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

/// Why an op was refused by a check on the state (the writer maps these onto its
/// error codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The member does not exist.
    NoMember,
    /// The group does not exist.
    NoGroup,
    /// A member with this id exists already.
    MemberExists,
    /// A group with this id exists already.
    GroupExists,
    /// The member is in a group or used by an entry or default.
    MemberUsed,
    /// The group is used by an entry or default.
    GroupUsed,
    /// The member is in the group already.
    MemberInGroup,
    /// The member is not in the group.
    MemberNotInGroup,
    /// An entry may not point to an empty group.
    EmptyGroup,
    /// No entry has this key.
    NoEntry,
    /// The table is not indirect (a member or group given to a direct table).
    NotIndirect,
    /// Not applied: an earlier op of an atomic batch failed.
    Aborted,
}

/// Result of a control op.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OpResult {
    /// Nothing to report.
    #[default]
    Ok,
    /// A new handle (or the handle an op found).
    Handle(u32),
    /// A table error.
    Table(TableError),
    /// A check on the state refused the op.
    Refused(Refusal),
    /// Another error.
    Err(String),
}

impl OpResult {
    /// Whether the op succeeded.
    pub fn is_ok(&self) -> bool {
        matches!(self, OpResult::Ok | OpResult::Handle(_))
    }
}

/// Where an op finds a table entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryLoc {
    /// Exactly this handle (an older version of the slot is `ExpiredHandle`).
    Handle(EntryHandle),
    /// The live entry in this handle's slot, whatever its version (bmv2's direct
    /// counters, meters and ageing ignore the version).
    Slot(EntryHandle),
    /// The entry with this key (and priority, for tables with priorities).
    Key(MatchKey),
}

/// A control-plane write.
#[derive(Debug, Clone)]
pub enum Op {
    /// Add an entry (an indirect entry's member must exist, its group exist and not
    /// be empty).
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
    /// Modify an entry's action (its timeout stays); result: the entry's handle.
    ModifyEntry {
        /// Table.
        table: u32,
        /// Entry.
        entry: EntryLoc,
        /// Action.
        action: EntryAction,
    },
    /// Delete an entry; result: the handle it had.
    DeleteEntry {
        /// Table.
        table: u32,
        /// Entry.
        entry: EntryLoc,
    },
    /// Find an entry (changes nothing); result: its handle. Batches check with it
    /// that an entry whose direct counter or meter they write exists at that point.
    FindEntry {
        /// Table.
        table: u32,
        /// Entry.
        entry: EntryLoc,
    },
    /// Remove all entries.
    ClearEntries(u32),
    /// Set (Some) or reset to none (None) the default (a member or group must
    /// exist).
    SetDefault {
        /// Table.
        table: u32,
        /// Default.
        action: Option<EntryAction>,
    },
    /// Set an entry's idle timeout; result: the entry's handle.
    SetTimeout {
        /// Table.
        table: u32,
        /// Entry.
        entry: EntryLoc,
        /// Timeout.
        ms: u64,
    },
    /// Add a profile member, with this id or the lowest free one; result: its id.
    AddMember {
        /// Profile.
        profile: u32,
        /// Requested id.
        id: Option<u32>,
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
    /// Delete an unused member.
    DeleteMember {
        /// Profile.
        profile: u32,
        /// Member.
        member: u32,
    },
    /// Create a group, with this id or the lowest free one; result: its id.
    AddGroup {
        /// Profile.
        profile: u32,
        /// Requested id.
        id: Option<u32>,
    },
    /// Delete an unused group.
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
    /// Replace a group's member list (sorted; a member repeated once per unit of
    /// weight); every member must exist.
    SetGroupMembers {
        /// Profile.
        profile: u32,
        /// Group.
        group: u32,
        /// Members.
        members: Vec<u32>,
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
    /// Apply groups of ops in order, with one publication. Each group is all or
    /// nothing: at its first failing op the group's earlier ops are undone and its
    /// later ops are not applied. With `atomic`, the first failing group also undoes
    /// every group before it and the groups after it are not applied. Results, one
    /// per op: [`ControlState::results`]. Batches do not nest.
    Batch {
        /// The ops of every group, in order.
        ops: Vec<Op>,
        /// Where each group ends in `ops` (exclusive), ascending.
        ends: Vec<u32>,
        /// All or nothing.
        atomic: bool,
    },
}

/// How to undo one applied op (for batches that may fail part way).
#[derive(Debug, Clone)]
enum Undo {
    /// Delete an entry that was added.
    Remove { table: u32, handle: EntryHandle },
    /// Put back an entry that was deleted, under its handle.
    Restore {
        table: u32,
        handle: EntryHandle,
        key: MatchKey,
        value: EntryValue,
    },
    /// Restore an entry's previous value.
    Value {
        table: u32,
        handle: EntryHandle,
        value: EntryValue,
    },
    /// Restore a whole table (after a clear).
    Table { table: u32, state: Box<TableState> },
    /// Restore a default.
    Default {
        table: u32,
        action: Option<EntryAction>,
    },
    /// Restore a member (None: remove it).
    Member {
        profile: u32,
        member: u32,
        old: Option<Member>,
    },
    /// Restore a group's list (None: remove it).
    Group {
        profile: u32,
        group: u32,
        old: Option<Vec<u32>>,
    },
    /// Restore a value set.
    ValueSet { vset: u32, values: Vec<Vec<u8>> },
    /// Restore CRC parameters.
    Crc {
        slot: u32,
        params: Option<CrcParams>,
    },
    /// Restore the PRE.
    Pre(Box<Pre>),
    /// Restore a mirroring session.
    Mirror {
        id: u32,
        session: Option<MirrorSession>,
    },
    /// Restore everything (after a reset).
    Whole(Box<ControlState>),
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
            // lookups of the compiled code read an entry's action and data from one
            // copy per distinct value (few next hops behind many routes)
            entries.share_values(share_key);
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
            table_profiles: p.tables.iter().map(|t| t.action_profile).collect(),
            last: OpResult::Ok,
            added: Vec::new(),
            results: Vec::new(),
        })
    }

    /// Applies one op, recording its result in `self.last`.
    pub fn apply(&mut self, op: &Op) {
        self.last = self.apply_op(Cow::Borrowed(op), None);
    }

    /// [`ControlState::apply`] of an op that is not needed afterwards: table
    /// entries are moved into the tables instead of copied.
    pub fn apply_owned(&mut self, op: Op) {
        self.last = self.apply_op(Cow::Owned(op), None);
    }

    /// Runs `add` with the tables and the cleared result list of [`Op::AddEntries`].
    fn add_entries(
        &mut self,
        n: usize,
        add: impl FnOnce(&mut Self, &mut Vec<Result<EntryHandle, TableError>>),
    ) {
        let mut added = std::mem::take(&mut self.added);
        added.clear();
        added.reserve(n);
        add(self, &mut added);
        self.added = added;
    }

    /// Applies one op; with `undo`, records how to undo what it changed.
    fn apply_op(&mut self, op: Cow<'_, Op>, mut undo: Option<&mut Vec<Undo>>) -> OpResult {
        match op {
            Cow::Owned(Op::AddEntry { table, key, value }) => {
                self.add_entry(table, Cow::Owned(key), value, undo)
            }
            Cow::Borrowed(Op::AddEntry { table, key, value }) => {
                self.add_entry(*table, Cow::Borrowed(key), value.clone(), undo)
            }
            Cow::Owned(Op::AddEntries(entries)) => {
                self.add_entries(entries.len(), |cs, added| {
                    for e in entries {
                        let r =
                            cs.add_entry(e.table, Cow::Owned(e.key), e.value, undo.as_deref_mut());
                        added.push(entry_result(r));
                    }
                });
                OpResult::Ok
            }
            Cow::Borrowed(Op::AddEntries(entries)) => {
                self.add_entries(entries.len(), |cs, added| {
                    for e in entries {
                        let r = cs.add_entry(
                            e.table,
                            Cow::Borrowed(&e.key),
                            e.value.clone(),
                            undo.as_deref_mut(),
                        );
                        added.push(entry_result(r));
                    }
                });
                OpResult::Ok
            }
            Cow::Owned(Op::Batch { ops, ends, atomic }) => {
                self.batch(ops.into_iter().map(Cow::Owned), &ends, atomic)
            }
            Cow::Borrowed(Op::Batch { ops, ends, atomic }) => {
                self.batch(ops.iter().map(Cow::Borrowed), ends, *atomic)
            }
            op => match self.apply_other(&op, undo) {
                Ok(r) => r,
                Err(e) => e,
            },
        }
    }

    /// An entry's insertion: an indirect entry's member or group must exist (and a
    /// group not be empty) before the table checks the key.
    fn add_entry(
        &mut self,
        table: u32,
        key: Cow<'_, MatchKey>,
        value: EntryValue,
        undo: Option<&mut Vec<Undo>>,
    ) -> OpResult {
        if let Err(e) = self.check_target(table, &value.action, true) {
            return e;
        }
        let Some(t) = self.tables.get_mut(table as usize) else {
            return OpResult::Table(no_table(table));
        };
        let r = match key {
            Cow::Owned(k) => t.entries.insert(k, value),
            Cow::Borrowed(k) => t.entries.insert_ref(k, value),
        };
        match r {
            Ok(h) => {
                if let Some(u) = undo {
                    u.push(Undo::Remove { table, handle: h });
                }
                OpResult::Handle(h)
            }
            Err(e) => OpResult::Table(e),
        }
    }

    /// A member or group an entry (or a default, `entry` false: an empty group is
    /// fine there) of `table` points to must exist.
    fn check_target(&self, table: u32, a: &EntryAction, entry: bool) -> Result<(), OpResult> {
        let (member, group) = match a {
            EntryAction::Direct(_) => return Ok(()),
            EntryAction::Member(m) => (Some(*m), None),
            EntryAction::Group(g) => (None, Some(*g)),
            EntryAction::OneShot(_) => (None, None),
        };
        let Some(p) = self
            .table_profiles
            .get(table as usize)
            .copied()
            .flatten()
            .and_then(|p| self.profiles.get(p as usize))
        else {
            return Err(OpResult::Refused(Refusal::NotIndirect));
        };
        if let Some(m) = member
            && !p.members.contains_key(&m)
        {
            return Err(OpResult::Refused(Refusal::NoMember));
        }
        if let Some(g) = group {
            match p.groups.get(&g) {
                None => return Err(OpResult::Refused(Refusal::NoGroup)),
                Some(ms) if entry && ms.is_empty() => {
                    return Err(OpResult::Refused(Refusal::EmptyGroup));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// The handle of the entry `loc` names.
    fn locate(&self, table: u32, loc: &EntryLoc) -> Result<EntryHandle, OpResult> {
        let t = self
            .tables
            .get(table as usize)
            .ok_or_else(|| OpResult::Table(no_table(table)))?;
        match loc {
            EntryLoc::Handle(h) => match t.entries.get(*h) {
                Some(_) => Ok(*h),
                None => Err(OpResult::Table(if live_slot(&t.entries, *h).is_some() {
                    TableError::ExpiredHandle
                } else {
                    TableError::InvalidHandle
                })),
            },
            EntryLoc::Slot(h) => {
                live_slot(&t.entries, *h).ok_or(OpResult::Table(TableError::InvalidHandle))
            }
            EntryLoc::Key(k) => t.entries.find(k).ok_or(OpResult::Refused(Refusal::NoEntry)),
        }
    }

    /// Applies the groups of a batch (see [`Op::Batch`]).
    fn batch<'a>(
        &mut self,
        mut ops: impl Iterator<Item = Cow<'a, Op>>,
        ends: &[u32],
        atomic: bool,
    ) -> OpResult {
        let mut results = std::mem::take(&mut self.results);
        results.clear();
        let mut applied: Vec<Undo> = Vec::new();
        let mut failed = false;
        let mut start = 0u32;
        for &end in ends {
            let len = end.saturating_sub(start);
            start = end;
            let mut undo: Vec<Undo> = Vec::new();
            let mut group_failed = false;
            // a lone op of a lenient batch changes nothing when it fails: no undo
            let record = atomic || len > 1;
            for _ in 0..len {
                let Some(op) = ops.next() else {
                    break;
                };
                if failed || group_failed {
                    results.push(OpResult::Refused(Refusal::Aborted));
                    continue;
                }
                let r = if matches!(op.as_ref(), Op::Batch { .. }) {
                    OpResult::Err("batches do not nest".into())
                } else {
                    self.apply_op(op, record.then_some(&mut undo))
                };
                group_failed = !r.is_ok();
                results.push(r);
            }
            if group_failed {
                self.undo(undo);
                if atomic {
                    failed = true;
                    self.undo(std::mem::take(&mut applied));
                }
            } else if atomic && !failed {
                applied.extend(undo);
            }
        }
        self.results = results;
        OpResult::Ok
    }

    /// Undoes recorded changes, newest first.
    fn undo(&mut self, log: Vec<Undo>) {
        for u in log.into_iter().rev() {
            match u {
                Undo::Remove { table, handle } => {
                    if let Some(t) = self.tables.get_mut(table as usize) {
                        let _ = t.entries.uninsert(handle);
                    }
                }
                Undo::Restore {
                    table,
                    handle,
                    key,
                    value,
                } => {
                    if let Some(t) = self.tables.get_mut(table as usize) {
                        let _ = t.entries.reinsert(handle, key, value);
                    }
                }
                Undo::Value {
                    table,
                    handle,
                    value,
                } => {
                    if let Some(t) = self.tables.get_mut(table as usize) {
                        let _ = t.entries.modify(handle, value);
                    }
                }
                Undo::Table { table, state } => {
                    if let Some(t) = self.tables.get_mut(table as usize) {
                        *t = *state;
                    }
                }
                Undo::Default { table, action } => {
                    if let Some(t) = self.tables.get_mut(table as usize) {
                        t.default = action;
                    }
                }
                Undo::Member {
                    profile,
                    member,
                    old,
                } => {
                    if let Some(p) = self.profiles.get_mut(profile as usize) {
                        match old {
                            Some(m) => {
                                p.members.insert(member, m);
                            }
                            None => {
                                p.members.remove(&member);
                            }
                        }
                    }
                }
                Undo::Group {
                    profile,
                    group,
                    old,
                } => {
                    if let Some(p) = self.profiles.get_mut(profile as usize) {
                        match old {
                            Some(g) => {
                                p.groups.insert(group, g);
                            }
                            None => {
                                p.groups.remove(&group);
                            }
                        }
                    }
                }
                Undo::ValueSet { vset, values } => {
                    if let Some(s) = self.value_sets.get_mut(vset as usize) {
                        *s = values;
                    }
                }
                Undo::Crc { slot, params } => {
                    if let Some(c) = self.crc.get_mut(slot as usize) {
                        *c = params;
                    }
                }
                Undo::Pre(pre) => self.pre = *pre,
                Undo::Mirror { id, session } => match session {
                    Some(s) => {
                        self.mirror.insert(id, s);
                    }
                    None => {
                        self.mirror.remove(&id);
                    }
                },
                Undo::Whole(cs) => {
                    // keep the batch's results
                    let results = std::mem::take(&mut self.results);
                    *self = *cs;
                    self.results = results;
                }
            }
        }
    }

    /// Whether an entry or a default of a table using profile `prof` points to
    /// `target`.
    fn profile_target_used(&self, prof: u32, target: &EntryAction) -> bool {
        self.tables
            .iter()
            .zip(&self.table_profiles)
            .filter(|(_, p)| **p == Some(prof))
            .any(|(ts, _)| {
                ts.default.as_ref() == Some(target)
                    || ts.entries.iter().any(|(_, _, v)| &v.action == target)
            })
    }

    fn apply_other(&mut self, op: &Op, undo: Option<&mut Vec<Undo>>) -> Result<OpResult, OpResult> {
        let log = |u: Undo| {
            if let Some(l) = undo {
                l.push(u);
            }
        };
        match op {
            Op::AddEntry { .. } | Op::AddEntries(_) | Op::Batch { .. } => {
                Err(OpResult::Err("internal: op dispatched twice".into()))
            }
            Op::Reserve { table, additional } => {
                self.table(*table)?.entries.reserve(*additional);
                Ok(OpResult::Ok)
            }
            Op::ModifyEntry {
                table,
                entry,
                action,
            } => {
                let h = self.locate(*table, entry)?;
                self.check_target(*table, action, true)?;
                let t = self.table(*table)?;
                let old = t
                    .entries
                    .get(h)
                    .map(|(_, v)| v.clone())
                    .ok_or(OpResult::Table(TableError::InvalidHandle))?;
                let value = EntryValue {
                    action: action.clone(),
                    timeout_ms: old.timeout_ms,
                };
                t.entries.modify(h, value).map_err(OpResult::Table)?;
                log(Undo::Value {
                    table: *table,
                    handle: h,
                    value: old,
                });
                Ok(OpResult::Handle(h))
            }
            Op::DeleteEntry { table, entry } => {
                let h = self.locate(*table, entry)?;
                let t = self.table(*table)?;
                let old = t.entries.get(h).map(|(k, v)| (k.into_owned(), v.clone()));
                t.entries.delete(h).map_err(OpResult::Table)?;
                if let Some((key, value)) = old {
                    log(Undo::Restore {
                        table: *table,
                        handle: h,
                        key,
                        value,
                    });
                }
                Ok(OpResult::Handle(h))
            }
            Op::FindEntry { table, entry } => self.locate(*table, entry).map(OpResult::Handle),
            Op::ClearEntries(table) => {
                let t = self.table(*table)?;
                log(Undo::Table {
                    table: *table,
                    state: Box::new(t.clone()),
                });
                t.entries.clear();
                Ok(OpResult::Ok)
            }
            Op::SetDefault { table, action } => {
                if let Some(a) = action {
                    self.check_target(*table, a, false)?;
                }
                let t = self.table(*table)?;
                let old = std::mem::replace(&mut t.default, action.clone());
                log(Undo::Default {
                    table: *table,
                    action: old,
                });
                Ok(OpResult::Ok)
            }
            Op::SetTimeout { table, entry, ms } => {
                let h = self.locate(*table, entry)?;
                let t = self.table(*table)?;
                let Some((_, v)) = t.entries.get(h) else {
                    return Err(OpResult::Table(TableError::InvalidHandle));
                };
                let old = v.clone();
                let mut v = old.clone();
                v.timeout_ms = *ms;
                t.entries.modify(h, v).map_err(OpResult::Table)?;
                log(Undo::Value {
                    table: *table,
                    handle: h,
                    value: old,
                });
                Ok(OpResult::Handle(h))
            }
            Op::AddMember { profile, id, call } => {
                let p = self.profile(*profile)?;
                let h = match id {
                    Some(h) if p.members.contains_key(h) => {
                        return Err(OpResult::Refused(Refusal::MemberExists));
                    }
                    Some(h) => *h,
                    None => p.alloc_member(),
                };
                p.members.insert(h, Member { call: call.clone() });
                log(Undo::Member {
                    profile: *profile,
                    member: h,
                    old: None,
                });
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
                        let old = std::mem::replace(&mut m.call, call.clone());
                        log(Undo::Member {
                            profile: *profile,
                            member: *member,
                            old: Some(Member { call: old }),
                        });
                        Ok(OpResult::Ok)
                    }
                    None => Err(OpResult::Refused(Refusal::NoMember)),
                }
            }
            Op::DeleteMember { profile, member } => {
                let (exists, in_group) = {
                    let p = self.profile(*profile)?;
                    (
                        p.members.contains_key(member),
                        p.groups.values().any(|g| g.contains(member)),
                    )
                };
                if !exists {
                    return Err(OpResult::Refused(Refusal::NoMember));
                }
                if in_group || self.profile_target_used(*profile, &EntryAction::Member(*member)) {
                    return Err(OpResult::Refused(Refusal::MemberUsed));
                }
                let p = self.profile(*profile)?;
                let old = p.members.remove(member);
                log(Undo::Member {
                    profile: *profile,
                    member: *member,
                    old,
                });
                Ok(OpResult::Ok)
            }
            Op::AddGroup { profile, id } => {
                let p = self.profile(*profile)?;
                let h = match id {
                    Some(h) if p.groups.contains_key(h) => {
                        return Err(OpResult::Refused(Refusal::GroupExists));
                    }
                    Some(h) => *h,
                    None => p.alloc_group(),
                };
                p.groups.insert(h, vec![]);
                log(Undo::Group {
                    profile: *profile,
                    group: h,
                    old: None,
                });
                Ok(OpResult::Handle(h))
            }
            Op::DeleteGroup { profile, group } => {
                if !self.profile(*profile)?.groups.contains_key(group) {
                    return Err(OpResult::Refused(Refusal::NoGroup));
                }
                if self.profile_target_used(*profile, &EntryAction::Group(*group)) {
                    return Err(OpResult::Refused(Refusal::GroupUsed));
                }
                let old = self.profile(*profile)?.groups.remove(group);
                log(Undo::Group {
                    profile: *profile,
                    group: *group,
                    old,
                });
                Ok(OpResult::Ok)
            }
            Op::AddToGroup {
                profile,
                member,
                group,
            } => {
                let p = self.profile(*profile)?;
                if !p.members.contains_key(member) {
                    return Err(OpResult::Refused(Refusal::NoMember));
                }
                let Some(g) = p.groups.get_mut(group) else {
                    return Err(OpResult::Refused(Refusal::NoGroup));
                };
                if g.contains(member) {
                    return Err(OpResult::Refused(Refusal::MemberInGroup));
                }
                let old = g.clone();
                g.push(*member);
                g.sort_unstable();
                log(Undo::Group {
                    profile: *profile,
                    group: *group,
                    old: Some(old),
                });
                Ok(OpResult::Ok)
            }
            Op::RemoveFromGroup {
                profile,
                member,
                group,
            } => {
                let p = self.profile(*profile)?;
                if !p.members.contains_key(member) {
                    return Err(OpResult::Refused(Refusal::NoMember));
                }
                let Some(g) = p.groups.get_mut(group) else {
                    return Err(OpResult::Refused(Refusal::NoGroup));
                };
                if !g.contains(member) {
                    return Err(OpResult::Refused(Refusal::MemberNotInGroup));
                }
                let old = g.clone();
                g.retain(|m| m != member);
                log(Undo::Group {
                    profile: *profile,
                    group: *group,
                    old: Some(old),
                });
                Ok(OpResult::Ok)
            }
            Op::SetGroupMembers {
                profile,
                group,
                members,
            } => {
                let p = self.profile(*profile)?;
                if !p.groups.contains_key(group) {
                    return Err(OpResult::Refused(Refusal::NoGroup));
                }
                if members.iter().any(|m| !p.members.contains_key(m)) {
                    return Err(OpResult::Refused(Refusal::NoMember));
                }
                let mut list = members.clone();
                list.sort_unstable();
                let old = p.groups.insert(*group, list);
                log(Undo::Group {
                    profile: *profile,
                    group: *group,
                    old,
                });
                Ok(OpResult::Ok)
            }
            Op::VsetAdd { vset, value } => {
                let s = self.vset(*vset)?;
                if !s.contains(value) {
                    let old = s.clone();
                    s.push(value.clone());
                    log(Undo::ValueSet {
                        vset: *vset,
                        values: old,
                    });
                }
                Ok(OpResult::Ok)
            }
            Op::VsetRemove { vset, value } => {
                let s = self.vset(*vset)?;
                if s.contains(value) {
                    let old = s.clone();
                    s.retain(|v| v != value);
                    log(Undo::ValueSet {
                        vset: *vset,
                        values: old,
                    });
                }
                Ok(OpResult::Ok)
            }
            Op::VsetClear(vset) => {
                let s = self.vset(*vset)?;
                let old = std::mem::take(s);
                log(Undo::ValueSet {
                    vset: *vset,
                    values: old,
                });
                Ok(OpResult::Ok)
            }
            Op::SetCrc { slot, params } => {
                let c = self
                    .crc
                    .get_mut(*slot as usize)
                    .ok_or(OpResult::Err("no such calculation".into()))?;
                let old = c.replace(*params);
                log(Undo::Crc {
                    slot: *slot,
                    params: old,
                });
                Ok(OpResult::Ok)
            }
            Op::SetPre(pre) => {
                let old = std::mem::replace(&mut self.pre, pre.clone());
                log(Undo::Pre(Box::new(old)));
                Ok(OpResult::Ok)
            }
            Op::SetMirror { id, session } => {
                let old = match session {
                    Some(s) => self.mirror.insert(*id, s.clone()),
                    None => match self.mirror.remove(id) {
                        Some(s) => Some(s),
                        None => return Err(OpResult::Err("session not found".into())),
                    },
                };
                log(Undo::Mirror {
                    id: *id,
                    session: old,
                });
                Ok(OpResult::Ok)
            }
            Op::Reset(fresh) => {
                let old = std::mem::replace(self, (**fresh).clone());
                log(Undo::Whole(Box::new(old)));
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

    fn vset(&mut self, v: u32) -> Result<&mut Vec<Vec<u8>>, OpResult> {
        self.value_sets
            .get_mut(v as usize)
            .ok_or(OpResult::Err("no such value set".into()))
    }
}

/// An [`Op::AddEntries`] result from an [`Op::AddEntry`] one.
fn entry_result(r: OpResult) -> Result<EntryHandle, TableError> {
    match r {
        OpResult::Handle(h) => Ok(h),
        OpResult::Table(e) => Err(e),
        OpResult::Refused(r) => Err(TableError::InvalidSpec(format!("{r:?}"))),
        OpResult::Ok => Err(TableError::InvalidSpec("no handle".into())),
        OpResult::Err(s) => Err(TableError::InvalidSpec(s)),
    }
}

/// The live handle using the slot of `h`, whatever its version.
pub fn live_slot(entries: &Table<EntryValue>, h: EntryHandle) -> Option<EntryHandle> {
    entries.handle_at(h & 0x00ff_ffff)
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

/// The summary under which a table shares an entry's value
/// ([`p4jet_tables::Table::share_values`]): direct actions with their data and
/// timeout; profile members, groups and one-shot sets are not shared.
fn share_key(v: &EntryValue) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let EntryAction::Direct(call) = &v.action else {
        return None;
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    call.action.hash(&mut h);
    call.data.hash(&mut h);
    v.timeout_ms.hash(&mut h);
    Some(h.finish())
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
    /// When each entry was last hit, per table with `support_timeout` (indexed by
    /// handle index): the switch clock in µs plus one; 0 = not hit since the control
    /// plane last cleared it.
    pub entry_hits: Vec<Option<Box<[AtomicU64]>>>,
}

impl Externs {
    /// Zeroed state for a program.
    pub fn new(p: &Program) -> Externs {
        let cells =
            |n: u32| -> Box<[CounterCell]> { (0..n).map(|_| CounterCell::default()).collect() };
        let meters = |n: u32| -> Box<[Mutex<MeterCell>]> {
            (0..n).map(|_| Mutex::new(MeterCell::default())).collect()
        };
        let hits = |n: u32| -> Box<[AtomicU64]> { (0..n).map(|_| AtomicU64::new(0)).collect() };
        Externs {
            entry_hits: p
                .tables
                .iter()
                .map(|t| {
                    t.support_timeout
                        .then(|| hits(t.max_size.clamp(1, p4jet_tables::MAX_TABLE_SIZE as u32)))
                })
                .collect(),
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
        for h in self.entry_hits.iter().flatten() {
            h.iter().for_each(|x| x.store(0, Ordering::Relaxed));
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

/// A table's direct counter cells and entry hit times (each None when the table has
/// none): see [`count_entry_hit`].
pub type EntryHitCells<'a> = (Option<&'a [CounterCell]>, Option<&'a [AtomicU64]>);

impl Externs {
    /// Table `t`'s direct counter cells and entry hit times.
    #[inline]
    pub fn entry_hit_cells(&self, t: u32) -> EntryHitCells<'_> {
        (
            self.direct_counters
                .get(t as usize)
                .and_then(|c| c.as_deref()),
            self.entry_hits.get(t as usize).and_then(|h| h.as_deref()),
        )
    }
}

/// A hit on entry `h`: its direct counter counts one packet of `len` bytes (the
/// packet's length at ingress, as bmv2 counts it) and its hit time becomes `now_us + 1`
/// (0 is "never hit"). The direct meter is not this function's: see the engine's
/// table apply.
#[inline]
pub fn count_entry_hit(cells: EntryHitCells<'_>, h: EntryHandle, len: u32, now_us: u64) {
    let i = handle_index(h);
    if let Some(c) = cells.0.and_then(|c| c.get(i)) {
        c.count(len);
    }
    // entries that can age: when they were last hit
    if let Some(t) = cells.1.and_then(|t| t.get(i)) {
        t.store(now_us.saturating_add(1), Ordering::Relaxed);
    }
}
