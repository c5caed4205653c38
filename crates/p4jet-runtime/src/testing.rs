//! The shared test double (feature `testing`).
//!
//! Front ends are tested against the real thing: the switch in memory
//! (`p4jet_switch::Switch` with a manual clock and no ports) implements
//! [`Runtime`] exactly as it serves packets, so a test sees real handles, real
//! errors with their bmv2 codes, and real reads. What a test also needs is to see
//! *which* operations a front end made and to make some of them fail: [`Recorder`]
//! wraps any runtime (the switch, a remote client, another recorder), records every
//! call as a [`Call`], and answers chosen calls with an injected error instead of
//! passing them on — like smoltcp's fault-injecting device wrappers.
//!
//! ```ignore
//! let mut rt = Recorder::new(Switch::new(&json, cfg)?);
//! rt.fail_when(|c| matches!(c, Call::Write(u, _) if matches!(u[0], Update::AddEntry { .. })),
//!              RuntimeError::exhausted("full").with_bmv2(TableOperationErrorCode::TABLE_FULL));
//! cli.execute(&mut rt, "table_add dmac forward 00:00:00:00:00:01 => 1")?;
//! assert_eq!(rt.updates(), vec![...]);
//! ```

use std::sync::Arc;

use crate::entity::{
    Bytes, ClockReading, CloneSession, CounterValue, CrcConfig, DigestConfig, DigestList,
    DigestLog, EntryAction, EntryCursor, EntryPage, EntryRef, Group, IdleTimeout, Member,
    MeterConfig, PortCounters, PortInfo, PreState, QueueSelector, QueueSetting, SwitchInfo,
    TableEntry,
};
use crate::error::{Result, RuntimeError};
use crate::ids::{
    CalcId, CounterId, DigestId, GroupId, MemberId, MeterId, PortId, ProfileId, RegisterId,
    SessionId, TableId, ValueSetId,
};
use crate::runtime::{PipelineAction, PipelineInfo, Runtime};
use crate::schema::Schema;
use crate::update::{Atomicity, BatchResult, Update};

/// One call made through a [`Recorder`].
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    /// [`Runtime::write`] (and [`Runtime::apply`], a batch of one).
    Write(Vec<Update>, Atomicity),
    /// [`Runtime::set_pipeline`].
    SetPipeline(PipelineAction),
    /// Any read or switch operation: its name and arguments (`entry_count(table 3)`).
    Other(String),
}

impl Call {
    /// The updates of a write (empty for other calls).
    pub fn updates(&self) -> &[Update] {
        match self {
            Call::Write(u, _) => u,
            _ => &[],
        }
    }

    /// Whether this is the read or switch operation `name`.
    pub fn is(&self, name: &str) -> bool {
        match self {
            Call::Other(s) => s.split('(').next() == Some(name),
            _ => false,
        }
    }
}

type Rule = (Box<dyn Fn(&Call) -> bool + Send>, RuntimeError);

/// A runtime wrapper that records calls and injects failures (see the module docs).
pub struct Recorder<R> {
    inner: R,
    /// Every call, in order.
    pub calls: Vec<Call>,
    rules: Vec<Rule>,
}

impl<R> Recorder<R> {
    /// Wraps a runtime.
    pub fn new(inner: R) -> Recorder<R> {
        Recorder {
            inner,
            calls: Vec::new(),
            rules: Vec::new(),
        }
    }

    /// The wrapped runtime.
    pub fn inner(&mut self) -> &mut R {
        &mut self.inner
    }

    /// Unwraps.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// From now on, calls for which `when` holds fail with `error` without reaching
    /// the wrapped runtime (a write fails every update of its batch).
    pub fn fail_when(
        &mut self,
        when: impl Fn(&Call) -> bool + Send + 'static,
        error: RuntimeError,
    ) -> &mut Self {
        self.rules.push((Box::new(when), error));
        self
    }

    /// Removes every injected failure.
    pub fn clear_failures(&mut self) {
        self.rules.clear();
    }

    /// Takes the calls recorded so far.
    pub fn take(&mut self) -> Vec<Call> {
        std::mem::take(&mut self.calls)
    }

    /// Every update written so far, batches flattened, in order.
    pub fn updates(&self) -> Vec<Update> {
        self.calls
            .iter()
            .flat_map(|c| c.updates().iter().cloned())
            .collect()
    }

    /// Takes the updates written so far (and forgets every recorded call).
    pub fn take_updates(&mut self) -> Vec<Update> {
        self.take()
            .into_iter()
            .flat_map(|c| match c {
                Call::Write(u, _) => u,
                _ => vec![],
            })
            .collect()
    }

    fn record(&mut self, call: Call) -> Result<()> {
        let failure = self
            .rules
            .iter()
            .find(|(when, _)| when(&call))
            .map(|(_, e)| e.clone());
        self.calls.push(call);
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

macro_rules! pass {
    ($self:ident, $name:literal, $method:ident ( $($arg:expr),* )) => {{
        $self.record(Call::Other(format!(
            concat!($name, "{:?}"),
            ($(&$arg,)*)
        )))?;
        $self.inner.$method($($arg),*)
    }};
}

impl<R: Runtime> Runtime for Recorder<R> {
    fn schema(&self) -> Option<Arc<Schema>> {
        self.inner.schema()
    }

    fn pipeline(&mut self) -> Result<PipelineInfo> {
        pass!(self, "pipeline", pipeline())
    }

    fn set_pipeline(&mut self, action: PipelineAction) -> Result<()> {
        self.record(Call::SetPipeline(action.clone()))?;
        self.inner.set_pipeline(action)
    }

    fn write(&mut self, updates: Vec<Update>, atomicity: Atomicity) -> BatchResult {
        let n = updates.len();
        if let Err(e) = self.record(Call::Write(updates.clone(), atomicity)) {
            return BatchResult::all_failed(n, &e);
        }
        self.inner.write(updates, atomicity)
    }

    fn entry_count(&mut self, table: TableId) -> Result<usize> {
        pass!(self, "entry_count", entry_count(table))
    }

    fn table_entries(
        &mut self,
        table: TableId,
        from: EntryCursor,
        limit: usize,
    ) -> Result<EntryPage> {
        pass!(self, "table_entries", table_entries(table, from, limit))
    }

    fn table_entry(&mut self, table: TableId, entry: &EntryRef) -> Result<TableEntry> {
        pass!(self, "table_entry", table_entry(table, entry))
    }

    fn default_entry(&mut self, table: TableId) -> Result<Option<EntryAction>> {
        pass!(self, "default_entry", default_entry(table))
    }

    fn direct_counter(&mut self, table: TableId, entry: &EntryRef) -> Result<CounterValue> {
        pass!(self, "direct_counter", direct_counter(table, entry))
    }

    fn direct_meter(&mut self, table: TableId, entry: &EntryRef) -> Result<MeterConfig> {
        pass!(self, "direct_meter", direct_meter(table, entry))
    }

    fn members(&mut self, profile: ProfileId) -> Result<Vec<Member>> {
        pass!(self, "members", members(profile))
    }

    fn member(&mut self, profile: ProfileId, member: MemberId) -> Result<Member> {
        pass!(self, "member", member(profile, member))
    }

    fn groups(&mut self, profile: ProfileId) -> Result<Vec<Group>> {
        pass!(self, "groups", groups(profile))
    }

    fn group(&mut self, profile: ProfileId, group: GroupId) -> Result<Group> {
        pass!(self, "group", group(profile, group))
    }

    fn counters(&mut self, counter: CounterId, start: u32, end: u32) -> Result<Vec<CounterValue>> {
        pass!(self, "counters", counters(counter, start, end))
    }

    fn meter(&mut self, meter: MeterId, index: u32) -> Result<MeterConfig> {
        pass!(self, "meter", meter(meter, index))
    }

    fn registers(&mut self, register: RegisterId, start: u32, end: u32) -> Result<Vec<Bytes>> {
        pass!(self, "registers", registers(register, start, end))
    }

    fn value_set(&mut self, value_set: ValueSetId) -> Result<Vec<Bytes>> {
        pass!(self, "value_set", value_set(value_set))
    }

    fn pre(&mut self) -> Result<PreState> {
        pass!(self, "pre", pre())
    }

    fn clone_session(&mut self, id: SessionId) -> Result<CloneSession> {
        pass!(self, "clone_session", clone_session(id))
    }

    fn clone_sessions(&mut self) -> Result<Vec<CloneSession>> {
        pass!(self, "clone_sessions", clone_sessions())
    }

    fn digest_config(&mut self, digest: DigestId) -> Result<DigestConfig> {
        pass!(self, "digest_config", digest_config(digest))
    }

    fn poll_digests(&mut self) -> Result<Vec<DigestList>> {
        pass!(self, "poll_digests", poll_digests())
    }

    fn digest_log(&mut self, digest: Option<DigestId>, count: usize) -> Result<DigestLog> {
        pass!(self, "digest_log", digest_log(digest, count))
    }

    fn poll_idle_timeouts(&mut self) -> Result<Vec<IdleTimeout>> {
        pass!(self, "poll_idle_timeouts", poll_idle_timeouts())
    }

    fn info(&mut self) -> Result<SwitchInfo> {
        pass!(self, "info", info())
    }

    fn clock(&mut self) -> Result<ClockReading> {
        pass!(self, "clock", clock())
    }

    fn ports(&mut self) -> Result<Vec<PortInfo>> {
        pass!(self, "ports", ports())
    }

    fn port_counters(&mut self, port: PortId) -> Result<PortCounters> {
        pass!(self, "port_counters", port_counters(port))
    }

    fn packet_books(&mut self) -> Result<String> {
        pass!(self, "packet_books", packet_books())
    }

    fn workers(&mut self) -> Result<crate::Workers> {
        pass!(self, "workers", workers())
    }

    fn set_workers(&mut self, count: u32) -> Result<()> {
        pass!(self, "set_workers", set_workers(count))
    }

    fn add_port(&mut self, port: PortInfo) -> Result<()> {
        pass!(self, "add_port", add_port(port))
    }

    fn remove_port(&mut self, port: PortId) -> Result<()> {
        pass!(self, "remove_port", remove_port(port))
    }

    fn set_queue(&mut self, which: QueueSelector, setting: QueueSetting) -> Result<()> {
        pass!(self, "set_queue", set_queue(which, setting))
    }

    fn set_crc(&mut self, calc: CalcId, config: CrcConfig) -> Result<()> {
        pass!(self, "set_crc", set_crc(calc, config))
    }

    fn set_toeplitz_key(&mut self, calc: CalcId, key: Bytes) -> Result<()> {
        pass!(self, "set_toeplitz_key", set_toeplitz_key(calc, key))
    }

    fn reset_state(&mut self) -> Result<()> {
        pass!(self, "reset_state", reset_state())
    }

    fn serialize_state(&mut self) -> Result<String> {
        pass!(self, "serialize_state", serialize_state())
    }
}

/// A runtime with a program model and nothing behind it: writes succeed without
/// effect (handles and ids counted from 0), reads answer empty. For front-end tests
/// that only look at what a [`Recorder`] recorded, without a switch; wrap it:
/// `Recorder::new(Null::new(schema))`.
#[derive(Debug, Clone, Default)]
pub struct Null {
    schema: Option<Arc<Schema>>,
    next: u32,
}

impl Null {
    /// A null runtime for a program (None: no pipeline).
    pub fn new(schema: Option<Arc<Schema>>) -> Null {
        Null { schema, next: 0 }
    }

    fn check(&self) -> Result<()> {
        match self.schema {
            Some(_) => Ok(()),
            None => Err(RuntimeError::no_pipeline()),
        }
    }
}

impl Runtime for Null {
    fn schema(&self) -> Option<Arc<Schema>> {
        self.schema.clone()
    }

    fn pipeline(&mut self) -> Result<PipelineInfo> {
        self.check()?;
        Ok(PipelineInfo {
            json: Arc::from(""),
            md5: [0; 16],
            cookie: None,
            commit_pending: false,
        })
    }

    fn set_pipeline(&mut self, action: PipelineAction) -> Result<()> {
        match action {
            PipelineAction::Replace(c) | PipelineAction::Reconcile(c) => {
                self.schema = Some(Schema::shared_from_json(&c.json)?);
                Ok(())
            }
            PipelineAction::Verify(c) | PipelineAction::Save(c) => {
                Schema::from_json(&c.json).map(|_| ())
            }
            PipelineAction::Commit => Ok(()),
        }
    }

    fn write(&mut self, updates: Vec<Update>, _atomicity: Atomicity) -> BatchResult {
        if let Err(e) = self.check() {
            return BatchResult::all_failed(updates.len(), &e);
        }
        use crate::update::Applied;
        let results = updates
            .iter()
            .map(|u| {
                let n = self.next;
                let r = match u {
                    Update::AddEntry { .. } => Applied::Entry(crate::ids::EntryHandle(n)),
                    Update::AddMember { id, .. } => Applied::Member(id.unwrap_or(MemberId(n))),
                    Update::AddGroup { id, .. } => Applied::Group(id.unwrap_or(GroupId(n))),
                    Update::McNodeCreate { .. } => Applied::McNode(crate::ids::McNodeHandle(n)),
                    _ => return Ok(Applied::Done),
                };
                self.next += 1;
                Ok(r)
            })
            .collect();
        BatchResult { results }
    }

    fn entry_count(&mut self, _: TableId) -> Result<usize> {
        self.check().map(|_| 0)
    }

    fn table_entries(&mut self, _: TableId, _: EntryCursor, _: usize) -> Result<EntryPage> {
        self.check().map(|_| EntryPage::default())
    }

    fn table_entry(&mut self, _: TableId, _: &EntryRef) -> Result<TableEntry> {
        self.check()?;
        Err(RuntimeError::not_found("no such entry"))
    }

    fn default_entry(&mut self, _: TableId) -> Result<Option<EntryAction>> {
        self.check().map(|_| None)
    }

    fn direct_counter(&mut self, _: TableId, _: &EntryRef) -> Result<CounterValue> {
        self.check().map(|_| CounterValue::default())
    }

    fn direct_meter(&mut self, _: TableId, _: &EntryRef) -> Result<MeterConfig> {
        self.check().map(|_| MeterConfig::default())
    }

    fn members(&mut self, _: ProfileId) -> Result<Vec<Member>> {
        self.check().map(|_| vec![])
    }

    fn member(&mut self, _: ProfileId, _: MemberId) -> Result<Member> {
        self.check()?;
        Err(RuntimeError::not_found("no such member"))
    }

    fn groups(&mut self, _: ProfileId) -> Result<Vec<Group>> {
        self.check().map(|_| vec![])
    }

    fn group(&mut self, _: ProfileId, _: GroupId) -> Result<Group> {
        self.check()?;
        Err(RuntimeError::not_found("no such group"))
    }

    fn counters(&mut self, _: CounterId, start: u32, end: u32) -> Result<Vec<CounterValue>> {
        self.check()?;
        Ok(vec![
            CounterValue::default();
            end.saturating_sub(start) as usize
        ])
    }

    fn meter(&mut self, _: MeterId, _: u32) -> Result<MeterConfig> {
        self.check().map(|_| MeterConfig::default())
    }

    fn registers(&mut self, _: RegisterId, start: u32, end: u32) -> Result<Vec<Bytes>> {
        self.check()?;
        Ok(vec![vec![0]; end.saturating_sub(start) as usize])
    }

    fn value_set(&mut self, _: ValueSetId) -> Result<Vec<Bytes>> {
        self.check().map(|_| vec![])
    }

    fn pre(&mut self) -> Result<PreState> {
        self.check().map(|_| PreState::default())
    }

    fn clone_session(&mut self, _: SessionId) -> Result<CloneSession> {
        self.check()?;
        Err(RuntimeError::not_found("no such session"))
    }

    fn clone_sessions(&mut self) -> Result<Vec<CloneSession>> {
        self.check().map(|_| vec![])
    }

    fn digest_config(&mut self, _: DigestId) -> Result<DigestConfig> {
        self.check().map(|_| DigestConfig::default())
    }

    fn poll_digests(&mut self) -> Result<Vec<DigestList>> {
        self.check().map(|_| vec![])
    }

    fn digest_log(&mut self, _: Option<DigestId>, _: usize) -> Result<DigestLog> {
        self.check().map(|_| DigestLog::default())
    }

    fn poll_idle_timeouts(&mut self) -> Result<Vec<IdleTimeout>> {
        self.check().map(|_| vec![])
    }

    fn info(&mut self) -> Result<SwitchInfo> {
        Ok(SwitchInfo::default())
    }

    fn clock(&mut self) -> Result<ClockReading> {
        Ok(ClockReading::default())
    }

    fn ports(&mut self) -> Result<Vec<PortInfo>> {
        Ok(vec![])
    }

    fn port_counters(&mut self, _: PortId) -> Result<PortCounters> {
        Ok(PortCounters::default())
    }

    fn add_port(&mut self, _: PortInfo) -> Result<()> {
        Ok(())
    }

    fn remove_port(&mut self, _: PortId) -> Result<()> {
        Ok(())
    }

    fn set_queue(&mut self, _: QueueSelector, _: QueueSetting) -> Result<()> {
        Ok(())
    }

    fn set_crc(&mut self, _: CalcId, _: CrcConfig) -> Result<()> {
        self.check()
    }

    fn set_toeplitz_key(&mut self, _: CalcId, _: Bytes) -> Result<()> {
        self.check()
    }

    fn reset_state(&mut self) -> Result<()> {
        self.check()
    }

    fn serialize_state(&mut self) -> Result<String> {
        self.check().map(|_| String::new())
    }
}
