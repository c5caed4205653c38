//! The [`Runtime`] trait: what every front end drives.

use std::sync::Arc;

use crate::entity::{
    Bytes, ClockReading, CloneSession, CounterValue, CrcConfig, DigestConfig, DigestList,
    DigestLog, EntryAction, EntryCursor, EntryPage, EntryRef, Group, IdleTimeout, Member,
    MeterConfig, PortCounters, PortInfo, PreState, QueueSelector, QueueSetting, SwitchInfo,
    TableEntry,
};
use crate::error::Result;
use crate::ids::{
    CalcId, CounterId, DigestId, GroupId, MemberId, MeterId, PortId, ProfileId, RegisterId,
    SessionId, TableId, ValueSetId,
};
use crate::schema::Schema;
use crate::update::{Applied, Atomicity, BatchResult, Update};

/// A program to load: the bmv2 JSON text and P4Runtime's cookie.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PipelineConfig {
    /// The bmv2 JSON.
    pub json: String,
    /// P4Runtime's `ForwardingPipelineConfig.cookie` (kept and reported).
    pub cookie: Option<u64>,
}

impl PipelineConfig {
    /// A program without cookie.
    pub fn new(json: impl Into<String>) -> PipelineConfig {
        PipelineConfig {
            json: json.into(),
            cookie: None,
        }
    }
}

/// What to do with a program (P4Runtime's `SetForwardingPipelineConfig` actions and
/// bmv2's configuration swap).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PipelineAction {
    /// Check that the program loads; change nothing (P4Runtime `VERIFY`).
    Verify(PipelineConfig),
    /// Load the program for a later [`PipelineAction::Commit`] (bmv2
    /// `bm_load_new_config`, P4Runtime `VERIFY_AND_SAVE`). From now on operations
    /// address the saved program (its tables start empty) while packets keep running
    /// the current one. Refused while another saved program waits (bmv2
    /// `ONGOING_SWAP`).
    Save(PipelineConfig),
    /// Make the saved program the one packets run (bmv2 `bm_swap_configs`,
    /// P4Runtime `COMMIT`); it takes effect between two packets. Refused when none
    /// is saved (`NO_ONGOING_SWAP`).
    Commit,
    /// Load and run a program now with fresh state (P4Runtime `VERIFY_AND_COMMIT`;
    /// how a switch started without a program gets one). Multicast groups and clone
    /// sessions belong to the switch, not to the program: they carry over, as in
    /// simple_switch.
    Replace(PipelineConfig),
    /// Load and run a program now keeping the state that still fits it (P4Runtime
    /// `RECONCILE_AND_COMMIT`): entries of tables of the same name and key shape whose
    /// action (by name and parameter widths) the new table has, default entries,
    /// members and groups of profiles of the same name, counters, meters and
    /// registers of the same name and shape (cells up to the smaller size), value
    /// sets, digest configuration; multicast groups and clone sessions. State that
    /// does not fit is dropped. Kept entries may get new handles (P4Runtime addresses
    /// them by key); their direct counters, meters and idle timeouts go with them.
    Reconcile(PipelineConfig),
}

/// The program in use.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PipelineInfo {
    /// Its bmv2 JSON (what `bm_get_config` answers).
    pub json: Arc<str>,
    /// MD5 digest of the JSON (`bm_get_config_md5`).
    pub md5: [u8; 16],
    /// P4Runtime's cookie, if one was given.
    pub cookie: Option<u64>,
    /// A saved program waits for [`PipelineAction::Commit`] (the JSON above is the
    /// saved one: operations address it).
    pub commit_pending: bool,
}

/// The runtime model as a front end drives it: one typed operation per thing a
/// control plane does, objects addressed by id (see [`crate::ids`]), writes as
/// [`Update`]s applied alone or in batches, one error type
/// ([`crate::RuntimeError`]).
///
/// Implemented by the switch (`p4jet_switch::Switch`), by the Thrift client
/// (`p4jet_thrift::ThriftClient`, driving a remote simple_switch or p4jet), and by
/// the test double ([`crate::testing`]).
///
/// With no program set ([`Runtime::schema`] is None) every operation except
/// [`Runtime::set_pipeline`], [`Runtime::info`], [`Runtime::clock`] and the port
/// operations answers [`crate::ErrorKind::NoPipeline`].
///
/// Reads do not change state; a few take `&mut self` because a remote runtime
/// talks over a connection.
pub trait Runtime {
    // ------------------------------------------------------------------ program

    /// The model of the program operations address (the saved one while a commit
    /// is pending); None when no program is set.
    fn schema(&self) -> Option<Arc<Schema>>;

    /// The program in use.
    fn pipeline(&mut self) -> Result<PipelineInfo>;

    /// Verifies, saves, commits, replaces or reconciles a program.
    fn set_pipeline(&mut self, action: PipelineAction) -> Result<()>;

    // ------------------------------------------------------------------ writes

    /// Applies updates in order with the given atomicity (see [`Atomicity`]); one
    /// result per update. A batch of N updates costs about what N single updates
    /// cost, without their N publications: forwarding never waits for it.
    fn write(&mut self, updates: Vec<Update>, atomicity: Atomicity) -> BatchResult;

    /// Applies one update.
    fn apply(&mut self, update: Update) -> Result<Applied> {
        let mut r = self.write(vec![update], Atomicity::ContinueOnError);
        match r.results.pop() {
            Some(res) => res,
            None => Err(crate::RuntimeError::internal(
                "the runtime gave no result for the update",
            )),
        }
    }

    // ------------------------------------------------------------------ tables

    /// Number of entries of a table (the default entry does not count).
    fn entry_count(&mut self, table: TableId) -> Result<usize>;

    /// A page of at most `limit` entries, starting at `from` ([`EntryCursor::START`]
    /// for the first page); [`EntryPage::next`] continues. Reading a table of 1M
    /// entries page by page never copies it whole.
    fn table_entries(
        &mut self,
        table: TableId,
        from: EntryCursor,
        limit: usize,
    ) -> Result<EntryPage>;

    /// One entry, by handle or key (P4Runtime reads by key). Not found: bmv2
    /// `INVALID_HANDLE`/`EXPIRED_HANDLE` by handle, `BAD_MATCH_KEY` by key.
    fn table_entry(&mut self, table: TableId, entry: &EntryRef) -> Result<TableEntry>;

    /// The default entry (None: a miss runs no action, e.g. an indirect table
    /// without default member).
    fn default_entry(&mut self, table: TableId) -> Result<Option<EntryAction>>;

    /// An entry's direct counter.
    fn direct_counter(&mut self, table: TableId, entry: &EntryRef) -> Result<CounterValue>;

    /// An entry's direct meter configuration.
    fn direct_meter(&mut self, table: TableId, entry: &EntryRef) -> Result<MeterConfig>;

    // --------------------------------------------------------- action profiles

    /// Every member of a profile, by ascending id.
    fn members(&mut self, profile: ProfileId) -> Result<Vec<Member>>;

    /// One member.
    fn member(&mut self, profile: ProfileId, member: MemberId) -> Result<Member>;

    /// Every group of a selector, by ascending id (groups made for one-shot entries
    /// are not listed).
    fn groups(&mut self, profile: ProfileId) -> Result<Vec<Group>>;

    /// One group.
    fn group(&mut self, profile: ProfileId, group: GroupId) -> Result<Group>;

    // ------------------------------------------------------------------ externs

    /// Cells `start..end` of an indexed counter.
    fn counters(&mut self, counter: CounterId, start: u32, end: u32) -> Result<Vec<CounterValue>>;

    /// One cell of an indexed meter.
    fn meter(&mut self, meter: MeterId, index: u32) -> Result<MeterConfig>;

    /// Cells `start..end` of a register, each big-endian in `ceil(width / 8)` bytes.
    fn registers(&mut self, register: RegisterId, start: u32, end: u32) -> Result<Vec<Bytes>>;

    /// The values of a parser value set.
    fn value_set(&mut self, value_set: ValueSetId) -> Result<Vec<Bytes>>;

    // ------------------------------------------------------- PRE and sessions

    /// The packet replication engine.
    fn pre(&mut self) -> Result<PreState>;

    /// One clone session.
    fn clone_session(&mut self, id: SessionId) -> Result<CloneSession>;

    /// Every clone session, by ascending id.
    fn clone_sessions(&mut self) -> Result<Vec<CloneSession>>;

    // ------------------------------------------------ digests and idle timeouts

    /// A digest's configuration.
    fn digest_config(&mut self, digest: DigestId) -> Result<DigestConfig>;

    /// The digest lists due now (full, or waited their timeout), to send to the
    /// controller; each is remembered until acknowledged ([`Update::AckDigest`]).
    fn poll_digests(&mut self) -> Result<Vec<DigestList>>;

    /// The latest `count` lists sent (all kept when 0) of one digest (all when
    /// None), and the samples waiting (`digest_dump`).
    fn digest_log(&mut self, digest: Option<DigestId>, count: usize) -> Result<DigestLog>;

    /// Entries whose idle timeout expired since the last call (each expiry once).
    fn poll_idle_timeouts(&mut self) -> Result<Vec<IdleTimeout>>;

    // ------------------------------------------------------------------ switch

    /// Information about the switch.
    fn info(&mut self) -> Result<SwitchInfo>;

    /// The switch clock.
    fn clock(&mut self) -> Result<ClockReading>;

    /// The ports.
    fn ports(&mut self) -> Result<Vec<PortInfo>>;

    /// Packet counts of a port.
    fn port_counters(&mut self, port: PortId) -> Result<PortCounters>;

    /// The switch's packet books as JSON (p4jet): received + copies = sent + dropped
    /// (by reason, per port) + queued, per forwarding thread and summed
    /// (docs/reliability.md says what each field means).
    fn packet_books(&mut self) -> Result<String> {
        Err(crate::RuntimeError::new(
            crate::ErrorKind::Unimplemented,
            "this runtime keeps no packet books",
        ))
    }

    /// The forwarding workers (p4jet): how many forward, at most, per shard its
    /// worker (docs/ports.md, "Forwarding workers changed at run time").
    fn workers(&mut self) -> Result<crate::Workers> {
        Err(crate::RuntimeError::new(
            crate::ErrorKind::Unimplemented,
            "this runtime has no forwarding workers",
        ))
    }

    /// Asks for `count` forwarding workers (p4jet): workers are added or removed
    /// while traffic flows, each leaving worker drains what it holds before its
    /// shards move. Returns when the request is recorded; [`Runtime::workers`] shows
    /// when it is done. Turns automatic scaling off.
    fn set_workers(&mut self, count: u32) -> Result<()> {
        let _ = count;
        Err(crate::RuntimeError::new(
            crate::ErrorKind::Unimplemented,
            "this runtime has no forwarding workers",
        ))
    }

    /// Adds a port (the owner of the I/O opens it).
    fn add_port(&mut self, port: PortInfo) -> Result<()>;

    /// Removes a port.
    fn remove_port(&mut self, port: PortId) -> Result<()>;

    /// Sets the depth or rate of egress queues.
    fn set_queue(&mut self, which: QueueSelector, setting: QueueSetting) -> Result<()>;

    /// Sets the parameters of a `crc16_custom` or `crc32_custom` calculation.
    fn set_crc(&mut self, calc: CalcId, config: CrcConfig) -> Result<()>;

    /// Sets the key of a `toeplitz` calculation.
    fn set_toeplitz_key(&mut self, calc: CalcId, key: Bytes) -> Result<()>;

    /// Clears the run-time state as bmv2's `bm_reset_state` does: entries (const
    /// entries come back), defaults, members, groups, counters, meters, registers,
    /// learning and the PRE; clone sessions, value sets and hash parameters stay.
    fn reset_state(&mut self) -> Result<()>;

    /// The run-time state as text (`bm_serialize_state`).
    fn serialize_state(&mut self) -> Result<String>;
}

/// Every entry of a table, read page by page (for front ends that print whole
/// tables; P4Runtime streams pages instead).
pub fn all_entries(rt: &mut dyn Runtime, table: TableId) -> Result<Vec<TableEntry>> {
    let mut out = Vec::new();
    let mut from = EntryCursor::START;
    loop {
        let page = rt.table_entries(table, from, 4096)?;
        out.extend(page.entries);
        match page.next {
            Some(n) => from = n,
            None => return Ok(out),
        }
    }
}
