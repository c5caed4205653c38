//! Writes: [`Update`]s, applied one by one or in batches with an [`Atomicity`].
//!
//! Every change a control plane makes to the state of a program is an [`Update`]:
//! table entries and default entries, action profile members and groups, direct and
//! indexed counters, meters, registers, value sets, digest configuration and
//! acknowledgements, the packet replication engine (bmv2's nodes and P4Runtime-style
//! groups) and clone sessions. Updates are data: a batch is a `Vec<Update>`, a test
//! double records them, a remote runtime sends them.
//!
//! Objects are addressed by id ([`crate::ids`]); entries by handle or by key
//! ([`EntryRef`]).

use crate::entity::{
    ActionCall, Bytes, CloneSession, CounterValue, DigestConfig, EntryAction, EntryRef,
    GroupMember, MeterConfig, NewEntry, Replica,
};
use crate::error::RuntimeError;
use crate::ids::{
    CounterId, DigestId, EntryHandle, GroupId, McGroupId, McNodeHandle, MemberId, MeterId, PortId,
    ProfileId, RegisterId, SessionId, TableId, ValueSetId,
};

/// Insert, modify or either: how a write meets an existing object of the same id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteMode {
    /// The object must not exist (P4Runtime `INSERT`; else [`crate::ErrorKind::AlreadyExists`]).
    Insert,
    /// The object must exist (P4Runtime `MODIFY`; else [`crate::ErrorKind::NotFound`]).
    Modify,
    /// Create or replace (bmv2's `mirroring_session_add`).
    Upsert,
}

/// One write to the runtime state.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    // ------------------------------------------------------------------ tables
    /// Adds an entry; [`Applied::Entry`] gives its handle. Errors: a const table
    /// (bmv2 `IMMUTABLE_TABLE_ENTRIES`), an action not of the table
    /// (`INVALID_ACTION_NAME`), wrong action data (`BAD_ACTION_DATA`), a malformed key
    /// (`BAD_MATCH_KEY`), a duplicate key (`DUPLICATE_ENTRY`, already exists), a full
    /// table (`TABLE_FULL`), a member or group that does not exist, an empty group.
    AddEntry {
        /// Table.
        table: TableId,
        /// The entry.
        entry: NewEntry,
    },
    /// Replaces what an entry does (its timeout and counters stay).
    ModifyEntry {
        /// Table.
        table: TableId,
        /// The entry.
        entry: EntryRef,
        /// What it does now.
        action: EntryAction,
    },
    /// Deletes an entry.
    DeleteEntry {
        /// Table.
        table: TableId,
        /// The entry.
        entry: EntryRef,
    },
    /// Deletes every entry (const entries included, as bmv2 does) and restarts handle
    /// numbering; also restores the program's default entry when asked.
    ClearEntries {
        /// Table.
        table: TableId,
        /// Restore the default entry too.
        reset_default: bool,
    },
    /// Sets the default entry (what a miss does). Errors: a const default entry
    /// (`DEFAULT_ENTRY_IS_CONST`, permission denied), another action than a const
    /// default action (`DEFAULT_ACTION_IS_CONST`).
    SetDefault {
        /// Table.
        table: TableId,
        /// What a miss does.
        action: EntryAction,
    },
    /// Restores the program's default entry (for an indirect table: none).
    ResetDefault {
        /// Table.
        table: TableId,
    },
    /// Sets an entry's idle timeout (tables with `support_timeout`; else bmv2
    /// `AGEING_DISABLED`). Its idle time restarts from now.
    SetEntryTimeout {
        /// Table.
        table: TableId,
        /// The entry.
        entry: EntryRef,
        /// Timeout in ms (0 = none).
        timeout_ms: u64,
    },
    /// A hint that about `additional` entries are coming (a bulk load): the runtime
    /// may size the table once. Changes nothing visible.
    ReserveEntries {
        /// Table.
        table: TableId,
        /// Entries.
        additional: usize,
    },

    // ------------------------------------------------- direct counters and meters
    /// Writes an entry's direct counter.
    WriteDirectCounter {
        /// Table.
        table: TableId,
        /// The entry.
        entry: EntryRef,
        /// Value.
        value: CounterValue,
    },
    /// Zeroes the direct counters of every entry of a table.
    ResetDirectCounters {
        /// Table.
        table: TableId,
    },
    /// Configures an entry's direct meter.
    SetDirectMeter {
        /// Table.
        table: TableId,
        /// The entry.
        entry: EntryRef,
        /// Configuration (no rates: unconfigured).
        config: MeterConfig,
    },

    // --------------------------------------------------------- action profiles
    /// Adds a member; [`Applied::Member`] gives its id. With `id` None the runtime
    /// gives the lowest free id (bmv2); with an id (P4Runtime) that id, which must be
    /// free.
    AddMember {
        /// Profile.
        profile: ProfileId,
        /// Requested id.
        id: Option<MemberId>,
        /// Its action (one of the actions of the profile's tables).
        action: ActionCall,
    },
    /// Replaces a member's action.
    ModifyMember {
        /// Profile.
        profile: ProfileId,
        /// Member.
        member: MemberId,
        /// Its action.
        action: ActionCall,
    },
    /// Deletes a member (not while a group or an entry uses it: `MBR_STILL_USED`).
    DeleteMember {
        /// Profile.
        profile: ProfileId,
        /// Member.
        member: MemberId,
    },
    /// Creates an empty group (selectors only); [`Applied::Group`] gives its id.
    AddGroup {
        /// Profile.
        profile: ProfileId,
        /// Requested id (None: the lowest free one).
        id: Option<GroupId>,
        /// Most members, weights counted (0 = the profile's size).
        max_size: u32,
    },
    /// Deletes a group (not while an entry uses it: `GRP_STILL_USED`).
    DeleteGroup {
        /// Profile.
        profile: ProfileId,
        /// Group.
        group: GroupId,
    },
    /// Adds a member to a group with weight 1 (bmv2; `MBR_ALREADY_IN_GRP` if there).
    AddToGroup {
        /// Profile.
        profile: ProfileId,
        /// Group.
        group: GroupId,
        /// Member.
        member: MemberId,
    },
    /// Removes a member from a group (`MBR_NOT_IN_GRP` if absent).
    RemoveFromGroup {
        /// Profile.
        profile: ProfileId,
        /// Group.
        group: GroupId,
        /// Member.
        member: MemberId,
    },
    /// Replaces a group's members (P4Runtime's group write), with weights and watch
    /// ports. Members are kept sorted by id; each must exist and appear once.
    SetGroupMembers {
        /// Profile.
        profile: ProfileId,
        /// Group.
        group: GroupId,
        /// Members.
        members: Vec<GroupMember>,
    },

    // -------------------------------------------------------------- externs
    /// Writes one cell of an indexed counter.
    WriteCounter {
        /// Counter.
        counter: CounterId,
        /// Cell.
        index: u32,
        /// Value.
        value: CounterValue,
    },
    /// Zeroes every cell of an indexed counter.
    ResetCounter {
        /// Counter.
        counter: CounterId,
    },
    /// Configures cells of an indexed meter (`index` None: every cell). Rates must
    /// be as many as the meter's rate count (`BAD_RATES_LIST`) and non-decreasing
    /// (`INVALID_INFO_RATE_VALUE`).
    SetMeter {
        /// Meter.
        meter: MeterId,
        /// Cell, or all.
        index: Option<u32>,
        /// Configuration (no rates: unconfigured).
        config: MeterConfig,
    },
    /// Writes cells `start..end` of a register (any width: the value is big-endian,
    /// truncated to the cell width).
    WriteRegister {
        /// Register.
        register: RegisterId,
        /// First cell.
        start: u32,
        /// One past the last cell.
        end: u32,
        /// Value.
        value: Bytes,
    },
    /// Zeroes every cell of a register.
    ResetRegister {
        /// Register.
        register: RegisterId,
    },

    // ---------------------------------------------------------- value sets
    /// Adds a value to a parser value set (no error if present). The value must be
    /// exactly `ceil(width / 8)` bytes.
    AddValueSetMember {
        /// Value set.
        value_set: ValueSetId,
        /// Value.
        value: Bytes,
    },
    /// Removes a value (no error if absent).
    RemoveValueSetMember {
        /// Value set.
        value_set: ValueSetId,
        /// Value.
        value: Bytes,
    },
    /// Removes every value.
    ClearValueSet {
        /// Value set.
        value_set: ValueSetId,
    },

    // -------------------------------------------------------------- digests
    /// Configures a digest.
    ConfigureDigest {
        /// Digest.
        digest: DigestId,
        /// Configuration.
        config: DigestConfig,
    },
    /// Acknowledges samples of a digest list (`samples` None: the whole list), so
    /// that they may be learnt again. An unknown list is taken as acknowledged.
    AckDigest {
        /// Digest.
        digest: DigestId,
        /// The list's id.
        list_id: u64,
        /// Sample positions in the list, or all.
        samples: Option<Vec<u32>>,
    },

    // ------------------------------------------------ packet replication engine
    /// bmv2 `mc_mgrp_create`: creates a group (a group that exists is left alone).
    McGroupCreate {
        /// Group id.
        group: McGroupId,
    },
    /// bmv2 `mc_mgrp_destroy` (its nodes stay, associated with nothing).
    McGroupDestroy {
        /// Group id.
        group: McGroupId,
    },
    /// bmv2 `mc_node_create`; [`Applied::McNode`] gives the node's handle.
    McNodeCreate {
        /// Replication id.
        rid: u32,
        /// Ports.
        ports: Vec<PortId>,
        /// LAG indexes.
        lags: Vec<u32>,
    },
    /// bmv2 `mc_node_update`: replaces a node's ports and LAGs.
    McNodeUpdate {
        /// Node.
        node: McNodeHandle,
        /// Ports.
        ports: Vec<PortId>,
        /// LAG indexes.
        lags: Vec<u32>,
    },
    /// bmv2 `mc_node_associate` (a node belongs to at most one group).
    McNodeAssociate {
        /// Group.
        group: McGroupId,
        /// Node.
        node: McNodeHandle,
    },
    /// bmv2 `mc_node_dissociate`.
    McNodeDissociate {
        /// Group.
        group: McGroupId,
        /// Node.
        node: McNodeHandle,
    },
    /// bmv2 `mc_node_destroy` (an associated node leaves its group first).
    McNodeDestroy {
        /// Node.
        node: McNodeHandle,
    },
    /// bmv2 `mc_set_lag_membership`.
    McSetLag {
        /// LAG index.
        lag: u32,
        /// Member ports.
        ports: Vec<PortId>,
    },
    /// P4Runtime's `MulticastGroupEntry` insert or modify: the group's copies are
    /// exactly `replicas` (the runtime keeps one node per instance).
    WriteMulticastGroup {
        /// Insert, modify or either.
        mode: WriteMode,
        /// Group id (> 0 for P4Runtime).
        group: McGroupId,
        /// Copies.
        replicas: Vec<Replica>,
    },
    /// P4Runtime's `MulticastGroupEntry` delete: the group and its nodes.
    DeleteMulticastGroup {
        /// Group id.
        group: McGroupId,
    },

    // -------------------------------------------------------- clone sessions
    /// Creates or replaces a clone session (bmv2 `mirroring_session_add` is
    /// [`WriteMode::Upsert`]; P4Runtime's `CloneSessionEntry` insert and modify).
    WriteCloneSession {
        /// Insert, modify or either.
        mode: WriteMode,
        /// The session.
        session: CloneSession,
    },
    /// Deletes a clone session (`SESSION_NOT_FOUND` if absent).
    DeleteCloneSession {
        /// Session id.
        id: SessionId,
    },
}

impl Update {
    /// An update adding a direct entry `key → action(args)`.
    pub fn add_direct(table: TableId, key: crate::entity::MatchKey, call: ActionCall) -> Update {
        Update::AddEntry {
            table,
            entry: NewEntry::new(key, EntryAction::Direct(call)),
        }
    }

    /// The table an update is about, if any.
    pub fn table(&self) -> Option<TableId> {
        match self {
            Update::AddEntry { table, .. }
            | Update::ModifyEntry { table, .. }
            | Update::DeleteEntry { table, .. }
            | Update::ClearEntries { table, .. }
            | Update::SetDefault { table, .. }
            | Update::ResetDefault { table }
            | Update::SetEntryTimeout { table, .. }
            | Update::ReserveEntries { table, .. }
            | Update::WriteDirectCounter { table, .. }
            | Update::ResetDirectCounters { table }
            | Update::SetDirectMeter { table, .. } => Some(*table),
            _ => None,
        }
    }

    /// Whether the update changes state that packets read through the control state
    /// (entries, defaults, members, groups, value sets, PRE, sessions) rather than
    /// extern state (counters, meters, registers) or control-plane bookkeeping
    /// (digests). See [`Atomicity::DataplaneAtomic`].
    pub fn is_control_state(&self) -> bool {
        !matches!(
            self,
            Update::WriteDirectCounter { .. }
                | Update::ResetDirectCounters { .. }
                | Update::SetDirectMeter { .. }
                | Update::WriteCounter { .. }
                | Update::ResetCounter { .. }
                | Update::SetMeter { .. }
                | Update::WriteRegister { .. }
                | Update::ResetRegister { .. }
                | Update::ConfigureDigest { .. }
                | Update::AckDigest { .. }
                | Update::ReserveEntries { .. }
        )
    }
}

/// What a successful update gives back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Applied {
    /// Nothing to report.
    Done,
    /// The handle of a new entry.
    Entry(EntryHandle),
    /// The id of a new member.
    Member(MemberId),
    /// The id of a new group.
    Group(GroupId),
    /// The handle of a new multicast node.
    McNode(McNodeHandle),
}

impl Applied {
    /// The entry handle of an [`Applied::Entry`].
    pub fn entry(self) -> Option<EntryHandle> {
        match self {
            Applied::Entry(h) => Some(h),
            _ => None,
        }
    }

    /// The member id of an [`Applied::Member`].
    pub fn member(self) -> Option<MemberId> {
        match self {
            Applied::Member(m) => Some(m),
            _ => None,
        }
    }

    /// The group id of an [`Applied::Group`].
    pub fn group(self) -> Option<GroupId> {
        match self {
            Applied::Group(g) => Some(g),
            _ => None,
        }
    }

    /// The node handle of an [`Applied::McNode`].
    pub fn mc_node(self) -> Option<McNodeHandle> {
        match self {
            Applied::McNode(n) => Some(n),
            _ => None,
        }
    }
}

/// How a batch treats a failing update (P4Runtime's `WriteRequest.atomicity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Atomicity {
    /// Every update is applied on its own, in order; each has its own result and a
    /// failure changes nothing else. Packets see the whole batch at once when it
    /// ends (one publication), like every write of p4jet.
    #[default]
    ContinueOnError,
    /// All or nothing: at the first failure the updates already applied are undone
    /// (extern writes too: their previous values are restored) and the rest are not
    /// applied ([`crate::ErrorKind::Aborted`]). The control state is published once,
    /// after the batch, so packets never see the undone updates.
    RollbackOnError,
    /// All or nothing as [`Atomicity::RollbackOnError`], and packets see the whole
    /// batch at once: every update of the control state (entries, defaults, members,
    /// groups, value sets, PRE, sessions) is published in one step between two
    /// packet batches. Extern writes (counters, meters, registers), which packets
    /// update themselves, take effect right after that publication.
    DataplaneAtomic,
}

impl Atomicity {
    /// Whether a failure undoes the batch.
    pub fn all_or_nothing(self) -> bool {
        !matches!(self, Atomicity::ContinueOnError)
    }
}

/// The result of a batch: one result per update, in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchResult {
    /// Per update.
    pub results: Vec<Result<Applied, RuntimeError>>,
}

impl BatchResult {
    /// Whether every update succeeded.
    pub fn is_ok(&self) -> bool {
        self.results.iter().all(Result::is_ok)
    }

    /// The first failure (its position and error).
    pub fn first_error(&self) -> Option<(usize, &RuntimeError)> {
        self.results
            .iter()
            .enumerate()
            .find_map(|(i, r)| r.as_ref().err().map(|e| (i, e)))
    }

    /// A result of `n` copies of one error (a batch refused as a whole, e.g. with no
    /// pipeline).
    pub fn all_failed(n: usize, e: &RuntimeError) -> BatchResult {
        BatchResult {
            results: vec![Err(e.clone()); n],
        }
    }
}

/// The action a [`Update::ModifyEntry`] or [`Update::SetDefault`] names, for error
/// messages.
pub fn entry_action_name(schema: &crate::Schema, a: &EntryAction) -> String {
    match a {
        EntryAction::Direct(c) => schema.action_name(c.action),
        EntryAction::Member(m) => m.to_string(),
        EntryAction::Group(g) => g.to_string(),
        EntryAction::OneShot(v) => format!("one-shot group of {} actions", v.len()),
    }
}
