//! One P4Runtime device: the switch's runtime model, the program as P4Runtime sees
//! it (P4Info, joined to the model), the controller sessions and the CPU port.
//!
//! Every RPC is a thin translation ([`crate::translate`]) around the runtime model:
//! the model applies writes with its atomicity modes and publishes them the way
//! every front end does (forwarding never waits), reads page through tables, and
//! loads, saves, commits and reconciles programs.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use p4jet_runtime::{
    Atomicity, EntryCursor, EntryRef, PipelineAction, PipelineConfig, Runtime, RuntimeError,
    TableId, Update,
};
use prost::Message;
use tokio::sync::mpsc;
use tonic::Status;

use crate::arbitration::code;
use crate::bytestring::canonical;
use crate::cpu::CpuChannel;
use crate::device_config;
use crate::metadata::{ControllerData, EntryMeta};
use crate::proto::p4::v1 as p4;
use crate::proto::p4::v1::get_forwarding_pipeline_config_request::ResponseType;
use crate::proto::p4::v1::set_forwarding_pipeline_config_request::Action as SetAction;
use crate::role::Access;
use crate::status::{self, UpdateOutcome};
use crate::stream::Sessions;
use crate::translate::{self, Fail, Program, SelectorMode};

/// The runtime model a device drives (the switch, shared with the Thrift server).
pub type SharedRuntime = Arc<Mutex<dyn Runtime + Send>>;

/// Bytes of entities per ReadResponse: far below the 4 MiB clients accept.
pub const READ_CHUNK_BYTES: usize = 1 << 20;

/// Table entries read from the model per lock.
const READ_PAGE: usize = 1024;

/// One P4Runtime device.
pub struct Device {
    /// Its id (`--device-id`).
    pub device_id: u64,
    /// Controller sessions and arbitration.
    pub sessions: Sessions,
    runtime: SharedRuntime,
    /// The program packets run, as P4Runtime sees it.
    committed: RwLock<Option<Arc<Program>>>,
    /// A program saved by VERIFY_AND_SAVE, waiting for COMMIT (requests address it).
    saved: RwLock<Option<Arc<Program>>>,
    /// Digests the controller configured (P4Info ids): only their lists are sent.
    digests: Mutex<HashSet<u32>>,
    /// How each action selector has been programmed since the pipeline was set.
    selector_modes: Mutex<HashMap<p4jet_runtime::ProfileId, SelectorMode>>,
    /// The controller's metadata on entries and multicast groups.
    controller_data: Mutex<ControllerData>,
    cpu: Option<Arc<CpuChannel>>,
}

/// What a successful update does to the controller's metadata.
enum MetaChange {
    /// A table entry inserted, modified or deleted.
    Entry {
        table: TableId,
        key: p4jet_runtime::MatchKey,
        ty: p4::update::Type,
        meta: EntryMeta,
    },
    /// A multicast group written or deleted.
    Group { id: u32, meta: Option<Vec<u8>> },
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn read<T: Clone>(l: &RwLock<T>) -> T {
    match l.read() {
        Ok(g) => g.clone(),
        Err(p) => p.into_inner().clone(),
    }
}

fn write<T>(l: &RwLock<T>, v: T) {
    match l.write() {
        Ok(mut g) => *g = v,
        Err(p) => *p.into_inner() = v,
    }
}

fn fail(f: Fail) -> Status {
    Status::new(status::grpc_code(f.code), f.message)
}

fn rt_status(e: &RuntimeError) -> Status {
    Status::new(status::grpc_code(translate::error_code(e)), e.to_string())
}

impl Device {
    /// A device over `runtime`. When the runtime already runs a program (started
    /// with a JSON file), P4Runtime knows it only once a controller pushes its P4Info
    /// (as with simple_switch_grpc).
    pub fn new(device_id: u64, runtime: SharedRuntime, cpu: Option<Arc<CpuChannel>>) -> Device {
        Device {
            device_id,
            sessions: Sessions::new(device_id),
            runtime,
            committed: RwLock::new(None),
            saved: RwLock::new(None),
            digests: Mutex::new(HashSet::new()),
            selector_modes: Mutex::new(HashMap::new()),
            controller_data: Mutex::new(ControllerData::default()),
            cpu,
        }
    }

    /// The CPU port's queues, if `--cpu-port` was given.
    pub fn cpu(&self) -> Option<Arc<CpuChannel>> {
        self.cpu.clone()
    }

    /// The program requests address: the saved one while a commit is pending.
    fn program(&self) -> Option<Arc<Program>> {
        read(&self.saved).or_else(|| read(&self.committed))
    }

    fn check_device(&self, id: u64) -> Result<(), Status> {
        if id != self.device_id {
            return Err(Status::not_found(format!(
                "Unknown device id {id} (this switch is device {})",
                self.device_id
            )));
        }
        Ok(())
    }

    // ------------------------------------------------------------------ pipeline

    /// SetForwardingPipelineConfig.
    pub fn set_pipeline(&self, req: p4::SetForwardingPipelineConfigRequest) -> Result<(), Status> {
        self.check_device(req.device_id)?;
        #[allow(deprecated)] // role_id: P4Runtime 1.0 clients
        let role = if req.role.is_empty() && req.role_id != 0 {
            format!("#{}", req.role_id)
        } else {
            req.role.clone()
        };
        self.sessions
            .check_primary(&role, req.election_id.as_ref())
            .map_err(status::refusal)?;
        if !self.sessions.access(&role).may_push_pipeline() {
            return Err(Status::permission_denied(format!(
                "role '{role}' may not set the forwarding pipeline (its role config does not \
                 set can_push_pipeline)"
            )));
        }
        let action = SetAction::try_from(req.action).unwrap_or(SetAction::Unspecified);
        let build = || -> Result<Program, Status> {
            let c = req.config.clone().ok_or_else(|| {
                Status::invalid_argument(format!(
                    "{}: a ForwardingPipelineConfig is required",
                    action.as_str_name()
                ))
            })?;
            let p4info = c
                .p4info
                .ok_or_else(|| Status::invalid_argument("the config has no P4Info"))?;
            let (json, _) =
                device_config::bmv2_json(&c.p4_device_config).map_err(Status::invalid_argument)?;
            Program::new(p4info, c.p4_device_config, json, c.cookie.map(|k| k.cookie)).map_err(fail)
        };
        let model = |p: &Program| PipelineConfig {
            json: p.json.clone(),
            cookie: p.cookie,
        };
        let mut rt = lock(&self.runtime);
        match action {
            SetAction::Unspecified => Err(Status::invalid_argument(
                "Invalid SetForwardingPipeline action",
            )),
            SetAction::Verify => {
                let p = build()?;
                rt.set_pipeline(PipelineAction::Verify(model(&p)))
                    .map_err(|e| rt_status(&e))
            }
            SetAction::VerifyAndSave => {
                let p = build()?;
                rt.set_pipeline(PipelineAction::Save(model(&p)))
                    .map_err(|e| rt_status(&e))?;
                write(&self.saved, Some(Arc::new(p)));
                lock(&self.selector_modes).clear();
                Ok(())
            }
            SetAction::Commit => {
                if req.config.is_some() {
                    return Err(Status::invalid_argument(
                        "COMMIT takes no config: it commits the one saved by VERIFY_AND_SAVE",
                    ));
                }
                let Some(saved) = read(&self.saved) else {
                    return Err(Status::failed_precondition(
                        "COMMIT: no config was saved (VERIFY_AND_SAVE) since the last commit",
                    ));
                };
                rt.set_pipeline(PipelineAction::Commit)
                    .map_err(|e| rt_status(&e))?;
                lock(&self.controller_data).take_entries();
                write(&self.saved, None);
                write(&self.committed, Some(saved));
                lock(&self.digests).clear();
                Ok(())
            }
            SetAction::VerifyAndCommit | SetAction::ReconcileAndCommit => {
                let p = build()?;
                let a = if action == SetAction::VerifyAndCommit {
                    PipelineAction::Replace(model(&p))
                } else {
                    PipelineAction::Reconcile(model(&p))
                };
                rt.set_pipeline(a).map_err(|e| rt_status(&e))?;
                let carried = lock(&self.controller_data).take_entries();
                if action == SetAction::ReconcileAndCommit
                    && let Some(old) = read(&self.committed)
                {
                    // the entries reconciling kept keep their metadata: found by
                    // table name and key in the new program
                    let mut data = lock(&self.controller_data);
                    for (t, entries) in carried {
                        let Some(nt) = old
                            .schema
                            .table(t)
                            .and_then(|x| p.schema.table_by_name(&x.name))
                        else {
                            continue;
                        };
                        for (key, meta) in entries.into_values() {
                            if let Ok(e) = rt.table_entry(nt, &EntryRef::Key(key)) {
                                data.set_entry(nt, &e, meta);
                            }
                        }
                    }
                }
                write(&self.saved, None);
                let p = Arc::new(p);
                if action == SetAction::VerifyAndCommit {
                    lock(&self.digests).clear();
                } else {
                    // configured digests that still exist stay configured
                    let mut d = lock(&self.digests);
                    d.retain(|id| p.join.digest(*id).is_some());
                }
                write(&self.committed, Some(p));
                lock(&self.selector_modes).clear();
                Ok(())
            }
        }
    }

    /// GetForwardingPipelineConfig.
    pub fn get_pipeline(
        &self,
        req: &p4::GetForwardingPipelineConfigRequest,
    ) -> Result<p4::GetForwardingPipelineConfigResponse, Status> {
        self.check_device(req.device_id)?;
        let p = self.program().ok_or_else(status::no_pipeline)?;
        let ty = ResponseType::try_from(req.response_type).map_err(|_| {
            Status::invalid_argument(format!("unknown response type {}", req.response_type))
        })?;
        let cookie = p
            .cookie
            .map(|cookie| p4::forwarding_pipeline_config::Cookie { cookie });
        let (p4info, dc) = match ty {
            ResponseType::All => (Some(p.p4info.clone()), p.device_config.clone()),
            ResponseType::CookieOnly => (None, vec![]),
            ResponseType::P4infoAndCookie => (Some(p.p4info.clone()), vec![]),
            ResponseType::DeviceConfigAndCookie => (None, p.device_config.clone()),
        };
        Ok(p4::GetForwardingPipelineConfigResponse {
            config: Some(p4::ForwardingPipelineConfig {
                p4info,
                p4_device_config: dc,
                cookie,
            }),
        })
    }

    // ------------------------------------------------------------------ write

    /// Write: every update translated, then applied by the model as one batch with
    /// the request's atomicity.
    pub fn write(&self, req: p4::WriteRequest) -> Result<(), Status> {
        self.check_device(req.device_id)?;
        #[allow(deprecated)]
        let role = if req.role.is_empty() && req.role_id != 0 {
            format!("#{}", req.role_id)
        } else {
            req.role.clone()
        };
        self.sessions
            .check_primary(&role, req.election_id.as_ref())
            .map_err(status::refusal)?;
        let prog = self.program().ok_or_else(status::no_pipeline)?;
        let access = self.sessions.access(&role);
        let atomicity = match p4::write_request::Atomicity::try_from(req.atomicity) {
            Ok(p4::write_request::Atomicity::ContinueOnError) => Atomicity::ContinueOnError,
            Ok(p4::write_request::Atomicity::RollbackOnError) => Atomicity::RollbackOnError,
            Ok(p4::write_request::Atomicity::DataplaneAtomic) => Atomicity::DataplaneAtomic,
            Err(_) => {
                return Err(Status::invalid_argument(format!(
                    "unknown atomicity {}",
                    req.atomicity
                )));
            }
        };
        let n = req.updates.len();
        let mut outcomes: Vec<Option<UpdateOutcome>> = vec![None; n];
        // (update index, model updates)
        let mut groups: Vec<(usize, usize)> = Vec::with_capacity(n);
        let mut batch: Vec<Update> = Vec::with_capacity(n);
        let mut digest_changes: Vec<(u32, bool)> = vec![];
        let mut modes: Vec<Option<(p4jet_runtime::ProfileId, SelectorMode)>> = vec![None; n];
        let mut meta_changes: Vec<Option<MetaChange>> = (0..n).map(|_| None).collect();
        for (i, u) in req.updates.iter().enumerate() {
            if let Some(e) = u.entity.as_ref().and_then(|e| e.entity.as_ref())
                && let Err(why) = in_scope(&prog, &access, e)
            {
                outcomes[i] = Some(UpdateOutcome::err(
                    code::PERMISSION_DENIED,
                    format!("role '{role}' may not write {why}"),
                ));
                continue;
            }
            if let Some((p, m)) = prog.selector_use(u) {
                if let Err(f) = self.check_selector_mode(p, m, &modes) {
                    outcomes[i] = Some(UpdateOutcome::err(f.code, f.message));
                    continue;
                }
                modes[i] = Some((p, m));
            }
            match prog.updates(u) {
                Ok(v) => {
                    if let Some(p4::entity::Entity::DigestEntry(d)) =
                        u.entity.as_ref().and_then(|e| e.entity.as_ref())
                    {
                        let delete = u.r#type == p4::update::Type::Delete as i32;
                        digest_changes.push((d.digest_id, !delete));
                    }
                    groups.push((i, v.len()));
                    batch.extend(v);
                }
                Err(f) => outcomes[i] = Some(UpdateOutcome::err(f.code, f.message)),
            }
        }
        let refused = outcomes.iter().any(Option::is_some);
        if refused && atomicity.all_or_nothing() {
            // nothing is applied: the others are aborted
            let outs: Vec<UpdateOutcome> = outcomes
                .into_iter()
                .map(|o| {
                    o.unwrap_or_else(|| {
                        UpdateOutcome::err(10, "not applied: another update of the batch failed")
                    })
                })
                .collect();
            return status::write_result(&outs);
        }
        // metadata bookkeeping only where a controller uses metadata
        if !lock(&self.controller_data).is_empty() || req.updates.iter().any(carries_metadata) {
            for (i, _) in &groups {
                meta_changes[*i] = meta_change(&prog, &req.updates[*i]);
            }
        }
        let mut rt = lock(&self.runtime);
        let before = self.meta_before(&mut *rt, &mut meta_changes);
        let result = if batch.is_empty() {
            p4jet_runtime::BatchResult::default()
        } else {
            rt.write(batch, atomicity)
        };
        drop(rt);
        let mut results = result.results.into_iter();
        let mut inserted: Vec<Option<p4jet_runtime::EntryHandle>> = vec![None; n];
        for (i, count) in groups {
            let mut out = UpdateOutcome::ok();
            for _ in 0..count {
                match results.next() {
                    Some(Ok(a)) => {
                        if inserted[i].is_none() {
                            inserted[i] = a.entry();
                        }
                    }
                    Some(Err(e)) => {
                        if out.code == 0 {
                            out = UpdateOutcome::err(translate::error_code(&e), e.to_string());
                        }
                    }
                    None => {
                        if out.code == 0 {
                            out = UpdateOutcome::err(code::INTERNAL, "the runtime gave no result");
                        }
                    }
                }
            }
            outcomes[i] = Some(out);
        }
        let outs: Vec<UpdateOutcome> = outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(UpdateOutcome::ok))
            .collect();
        if let Some(before) = before {
            self.apply_meta_changes(meta_changes, before, &outs, &inserted);
        }
        {
            let mut sm = lock(&self.selector_modes);
            for (i, m) in modes.iter().enumerate() {
                if let Some((p, m)) = m
                    && outs[i].code == 0
                {
                    sm.insert(*p, *m);
                }
            }
        }
        // digest configurations that were applied
        {
            let mut d = lock(&self.digests);
            let mut k = 0;
            for (i, u) in req.updates.iter().enumerate() {
                if let Some(p4::entity::Entity::DigestEntry(_)) =
                    u.entity.as_ref().and_then(|e| e.entity.as_ref())
                {
                    if let Some((id, on)) = digest_changes.get(k)
                        && outs[i].code == 0
                    {
                        if *on {
                            d.insert(*id);
                        } else {
                            d.remove(id);
                        }
                    }
                    k += 1;
                }
            }
        }
        status::write_result(&outs)
    }

    /// Narrows the metadata changes of a batch to the tables that need bookkeeping
    /// (an update of the batch carries metadata, or entries have some already), and
    /// looks up, before the batch, the entries its modifies and deletes name. None:
    /// nothing to do (no metadata anywhere near this batch).
    #[allow(clippy::type_complexity)]
    fn meta_before(
        &self,
        rt: &mut (dyn Runtime + Send),
        changes: &mut [Option<MetaChange>],
    ) -> Option<HashMap<(TableId, p4jet_runtime::MatchKey), Option<p4jet_runtime::EntryHandle>>>
    {
        if changes.iter().all(Option::is_none) {
            return None;
        }
        let data = lock(&self.controller_data);
        let mut involved: HashSet<TableId> = HashSet::new();
        for c in changes.iter().flatten() {
            if let MetaChange::Entry { table, meta, .. } = c
                && (!meta.is_empty() || data.has_table(*table))
            {
                involved.insert(*table);
            }
        }
        drop(data);
        let mut before = HashMap::new();
        for c in changes.iter_mut() {
            if let Some(MetaChange::Entry { table, key, ty, .. }) = c {
                if !involved.contains(table) {
                    *c = None;
                } else if *ty != p4::update::Type::Insert {
                    let h = rt
                        .table_entry(*table, &EntryRef::Key(key.clone()))
                        .ok()
                        .map(|e| e.handle);
                    before.entry((*table, key.clone())).or_insert(h);
                }
            }
        }
        Some(before)
    }

    /// Keeps the metadata of the updates that were applied, following the batch in
    /// order (an entry may be inserted, modified and deleted in one batch).
    fn apply_meta_changes(
        &self,
        changes: Vec<Option<MetaChange>>,
        mut current: HashMap<
            (TableId, p4jet_runtime::MatchKey),
            Option<p4jet_runtime::EntryHandle>,
        >,
        outs: &[UpdateOutcome],
        inserted: &[Option<p4jet_runtime::EntryHandle>],
    ) {
        // the last word on each entry (empty: forget it)
        let mut last: HashMap<(TableId, p4jet_runtime::EntryHandle), EntryMeta> = HashMap::new();
        let mut groups: Vec<(u32, Vec<u8>)> = vec![];
        for (i, c) in changes.into_iter().enumerate() {
            let Some(c) = c else { continue };
            if outs.get(i).is_none_or(|o| o.code != 0) {
                continue;
            }
            match c {
                MetaChange::Group { id, meta } => groups.push((id, meta.unwrap_or_default())),
                MetaChange::Entry {
                    table,
                    key,
                    ty,
                    meta,
                } => {
                    let slot = current.entry((table, key)).or_insert(None);
                    match ty {
                        p4::update::Type::Insert => {
                            *slot = inserted[i];
                            if let Some(h) = inserted[i] {
                                last.insert((table, h), meta);
                            }
                        }
                        p4::update::Type::Modify => {
                            if let Some(h) = *slot {
                                last.insert((table, h), meta);
                            }
                        }
                        _ => {
                            if let Some(h) = slot.take() {
                                last.insert((table, h), EntryMeta::default());
                            }
                        }
                    }
                }
            }
        }
        let mut rt = self.rt();
        let mut data = lock(&self.controller_data);
        for (id, meta) in groups {
            data.set_group(id, meta);
        }
        for ((t, h), meta) in last {
            match rt.table_entry(t, &EntryRef::Handle(h)) {
                Ok(e) if !meta.is_empty() => data.set_entry(t, &e, meta),
                _ => data.remove_entry(t, h),
            }
        }
    }

    /// Refuses mixing one-shot and member/group programming on one selector
    /// (P4Runtime "One Shot Action Selector Programming"), unless the selector was
    /// emptied of the other kind since.
    fn check_selector_mode(
        &self,
        p: p4jet_runtime::ProfileId,
        m: SelectorMode,
        earlier: &[Option<(p4jet_runtime::ProfileId, SelectorMode)>],
    ) -> Result<(), Fail> {
        let current = earlier
            .iter()
            .rev()
            .flatten()
            .find(|(q, _)| *q == p)
            .map(|(_, m)| *m)
            .or_else(|| lock(&self.selector_modes).get(&p).copied());
        let Some(cur) = current else {
            return Ok(());
        };
        if cur == m {
            return Ok(());
        }
        let emptied = {
            let mut rt = self.rt();
            match cur {
                SelectorMode::Explicit => {
                    rt.members(p).is_ok_and(|v| v.is_empty())
                        && rt.groups(p).is_ok_and(|v| v.is_empty())
                }
                SelectorMode::OneShot => self.program().is_some_and(|prog| {
                    prog.schema.profile(p).is_some_and(|x| {
                        x.tables
                            .iter()
                            .all(|t| rt.entry_count(*t).is_ok_and(|n| n == 0))
                    })
                }),
            }
        };
        if emptied && !earlier.iter().flatten().any(|(q, _)| *q == p) {
            return Ok(());
        }
        Err(Fail::invalid(
            "Invalid attempt to mix action selector programming modes",
        ))
    }

    // ------------------------------------------------------------------ read

    /// What Read checks before it streams: the device and the pipeline.
    pub fn check_read(&self, req: &p4::ReadRequest) -> Result<(), Status> {
        self.check_device(req.device_id)?;
        if self.program().is_none() {
            return Err(status::no_pipeline());
        }
        Ok(())
    }

    /// Read: entities streamed in responses of at most [`READ_CHUNK_BYTES`].
    pub fn read(&self, req: p4::ReadRequest, tx: &mpsc::Sender<Result<p4::ReadResponse, Status>>) {
        let Some(prog) = self.program() else {
            let _ = tx.blocking_send(Err(status::no_pipeline()));
            return;
        };
        let mut sink = Sink {
            tx,
            buf: vec![],
            bytes: 0,
            sent: false,
            role: req.role.clone(),
            access: self.sessions.access(&req.role),
        };
        for e in &req.entities {
            if let Err(st) = self.read_entity(&prog, e, &mut sink) {
                let _ = tx.blocking_send(Err(st));
                return;
            }
            if sink.closed() {
                return;
            }
        }
        sink.finish();
    }

    fn read_entity(
        &self,
        prog: &Program,
        e: &p4::Entity,
        sink: &mut Sink<'_>,
    ) -> Result<(), Status> {
        use p4::entity::Entity as E;
        let Some(ent) = e.entity.as_ref() else {
            return Err(Status::invalid_argument("an entity to read has no type"));
        };
        match ent {
            E::TableEntry(te) => self.read_tables(prog, te, sink),
            E::ActionProfileMember(m) => self.read_members(prog, m, sink),
            E::ActionProfileGroup(g) => self.read_groups(prog, g, sink),
            E::CounterEntry(c) => self.read_counters(prog, c, sink),
            E::DirectCounterEntry(c) => self.read_direct(prog, c.table_entry.as_ref(), true, sink),
            E::MeterEntry(m) => self.read_meters(prog, m, sink),
            E::DirectMeterEntry(m) => self.read_direct(prog, m.table_entry.as_ref(), false, sink),
            E::RegisterEntry(r) => self.read_registers(prog, r, sink),
            E::ValueSetEntry(v) => self.read_value_sets(prog, v, sink),
            E::DigestEntry(d) => self.read_digests(prog, d, sink),
            E::PacketReplicationEngineEntry(p) => {
                if !sink.access.is_full() {
                    return Err(Status::permission_denied(format!(
                        "role '{}' may not read the packet replication engine (only roles with \
                         full pipeline access may)",
                        sink.role
                    )));
                }
                self.read_pre(p, sink)
            }
            E::ExternEntry(_) => Err(Status::unimplemented(
                "extern entries: v1model has no architecture-specific extern for P4Runtime",
            )),
        }
    }

    fn rt(&self) -> MutexGuard<'_, dyn Runtime + Send + 'static> {
        lock(&self.runtime)
    }

    /// The controller's metadata of entry `e` of table `t`, into `out`.
    fn put_meta(&self, t: TableId, e: &p4jet_runtime::TableEntry, out: &mut p4::TableEntry) {
        put_meta(&lock(&self.controller_data), t, e, out);
    }

    /// The tables a read names (`table_id` 0: every one) that the reader may see;
    /// `direct` also lets a role see a table through its direct counter or meter.
    fn tables_of(
        &self,
        prog: &Program,
        table_id: u32,
        sink: &Sink<'_>,
        direct: bool,
    ) -> Result<Vec<(u32, TableId)>, Status> {
        let sees = |id: u32, wildcard: bool| {
            if direct && direct_ids(prog, id).any(|d| sink.access.allows(d)) {
                return Ok(true);
            }
            sink.sees(id, wildcard, "table")
        };
        if table_id == 0 {
            let mut v: Vec<(u32, TableId)> = vec![];
            for t in &prog.p4info.tables {
                let Some(id) = t.preamble.as_ref().map(|p| p.id) else {
                    continue;
                };
                if let Some(t) = prog.join.table(id)
                    && sees(id, true)?
                {
                    v.push((id, t));
                }
            }
            v.sort();
            Ok(v)
        } else {
            let (t, _, _) = prog.table(table_id).map_err(fail)?;
            sees(table_id, false)?;
            Ok(vec![(table_id, t)])
        }
    }

    fn read_tables(
        &self,
        prog: &Program,
        te: &p4::TableEntry,
        sink: &mut Sink<'_>,
    ) -> Result<(), Status> {
        let with_counter = te.counter_data.is_some();
        let with_meter = te.meter_config.is_some();
        let with_idle = te.time_since_last_hit.is_some();
        for (_, t) in self.tables_of(prog, te.table_id, sink, false)? {
            let st = prog
                .schema
                .table(t)
                .ok_or_else(|| Status::internal("schema"))?;
            let decorate =
                |rt: &mut dyn Runtime, data: &ControllerData, e: &p4jet_runtime::TableEntry| {
                    let mut out = prog.entry_to_p4(t, e);
                    put_meta(data, t, e, &mut out);
                    let r = EntryRef::Handle(e.handle);
                    if with_counter
                        && st.direct_counter.is_some()
                        && let Ok(c) = rt.direct_counter(t, &r)
                    {
                        out.counter_data = Some(translate::counter_to_p4(&c));
                    }
                    if with_meter
                        && st.direct_meter.is_some()
                        && let Ok(m) = rt.direct_meter(t, &r)
                    {
                        out.meter_config = translate::meter_to_p4(&m);
                    }
                    if with_idle && let Some(ttl) = e.ttl {
                        out.time_since_last_hit = Some(p4::table_entry::IdleTimeout {
                            elapsed_ns: (ttl.idle_ms as i64).saturating_mul(1_000_000),
                        });
                    }
                    out
                };
            if te.is_default_action {
                let d = self.rt().default_entry(t).map_err(|e| rt_status(&e))?;
                if let Some(a) = d {
                    let out = p4::TableEntry {
                        table_id: prog.join.table_p4info_id(t).unwrap_or(0),
                        action: Some(prog.action_to_p4(&a)),
                        is_default_action: true,
                        is_const: st.default_entry_const,
                        ..Default::default()
                    };
                    sink.push(entity_table(out));
                }
                continue;
            }
            if te.table_id != 0 && !te.r#match.is_empty() {
                // one entry, by key
                let (_, key) = prog.key(te).map_err(fail)?;
                let mut rt = self.rt();
                match rt.table_entry(t, &EntryRef::Key(key)) {
                    Ok(e) => {
                        let out = decorate(&mut *rt, &lock(&self.controller_data), &e);
                        drop(rt);
                        sink.push(entity_table(out));
                    }
                    Err(e) if e.kind == p4jet_runtime::ErrorKind::NotFound => {}
                    Err(e) if e.kind == p4jet_runtime::ErrorKind::InvalidArgument => {}
                    Err(e) => return Err(rt_status(&e)),
                }
                continue;
            }
            let mut from = EntryCursor::START;
            loop {
                let (outs, next) = {
                    let mut rt = self.rt();
                    let page = rt
                        .table_entries(t, from, READ_PAGE)
                        .map_err(|e| rt_status(&e))?;
                    let data = lock(&self.controller_data);
                    let outs: Vec<p4::TableEntry> = page
                        .entries
                        .iter()
                        .map(|e| decorate(&mut *rt, &data, e))
                        .collect();
                    (outs, page.next)
                };
                for o in outs {
                    sink.push(entity_table(o));
                }
                if sink.closed() {
                    return Ok(());
                }
                match next {
                    Some(n) => from = n,
                    None => break,
                }
            }
        }
        Ok(())
    }

    fn read_direct(
        &self,
        prog: &Program,
        te: Option<&p4::TableEntry>,
        counter: bool,
        sink: &mut Sink<'_>,
    ) -> Result<(), Status> {
        let te = te.cloned().unwrap_or_default();
        let what = if counter { "counter" } else { "meter" };
        for (_, t) in self.tables_of(prog, te.table_id, sink, true)? {
            let st = prog
                .schema
                .table(t)
                .ok_or_else(|| Status::internal("schema"))?;
            let has = if counter {
                st.direct_counter.is_some()
            } else {
                st.direct_meter.is_some()
            };
            if !has {
                if te.table_id != 0 {
                    return Err(Status::invalid_argument(format!(
                        "table {} has no direct {what}",
                        st.name
                    )));
                }
                continue;
            }
            let make = |rt: &mut dyn Runtime,
                        e: &p4jet_runtime::TableEntry|
             -> Option<p4::Entity> {
                let mut key = prog.entry_to_p4(t, e);
                key.action = None;
                key.idle_timeout_ns = 0;
                key.is_const = false;
                let r = EntryRef::Handle(e.handle);
                Some(if counter {
                    let c = rt.direct_counter(t, &r).ok()?;
                    p4::Entity {
                        entity: Some(p4::entity::Entity::DirectCounterEntry(
                            p4::DirectCounterEntry {
                                table_entry: Some(key),
                                data: Some(translate::counter_to_p4(&c)),
                            },
                        )),
                    }
                } else {
                    let m = rt.direct_meter(t, &r).ok()?;
                    p4::Entity {
                        entity: Some(p4::entity::Entity::DirectMeterEntry(p4::DirectMeterEntry {
                            table_entry: Some(key),
                            config: translate::meter_to_p4(&m),
                            counter_data: None,
                        })),
                    }
                })
            };
            if te.table_id != 0 && !te.r#match.is_empty() {
                let (_, key) = prog.key(&te).map_err(fail)?;
                let mut rt = self.rt();
                if let Ok(e) = rt.table_entry(t, &EntryRef::Key(key))
                    && let Some(x) = make(&mut *rt, &e)
                {
                    drop(rt);
                    sink.push(x);
                }
                continue;
            }
            let mut from = EntryCursor::START;
            loop {
                let (outs, next) = {
                    let mut rt = self.rt();
                    let page = rt
                        .table_entries(t, from, READ_PAGE)
                        .map_err(|e| rt_status(&e))?;
                    let outs: Vec<p4::Entity> = page
                        .entries
                        .iter()
                        .filter_map(|e| make(&mut *rt, e))
                        .collect();
                    (outs, page.next)
                };
                for o in outs {
                    sink.push(o);
                }
                if sink.closed() {
                    return Ok(());
                }
                match next {
                    Some(n) => from = n,
                    None => break,
                }
            }
        }
        Ok(())
    }

    fn profiles_of(
        &self,
        prog: &Program,
        id: u32,
        sink: &Sink<'_>,
    ) -> Result<Vec<(u32, p4jet_runtime::ProfileId)>, Status> {
        if id == 0 {
            Ok(prog
                .p4info
                .action_profiles
                .iter()
                .filter_map(|p| {
                    let id = p.preamble.as_ref()?.id;
                    Some((id, prog.join.profile(id)?))
                })
                .filter(|(id, _)| sink.access.allows(*id))
                .collect())
        } else {
            let p = prog
                .join
                .profile(id)
                .ok_or_else(|| Status::not_found(format!("Unknown action profile id {id}")))?;
            sink.sees(id, false, "action profile")?;
            Ok(vec![(id, p)])
        }
    }

    fn read_members(
        &self,
        prog: &Program,
        m: &p4::ActionProfileMember,
        sink: &mut Sink<'_>,
    ) -> Result<(), Status> {
        for (pid, p) in self.profiles_of(prog, m.action_profile_id, sink)? {
            let members = if m.member_id != 0 {
                match self.rt().member(p, p4jet_runtime::MemberId(m.member_id)) {
                    Ok(x) => vec![x],
                    Err(e) if e.kind == p4jet_runtime::ErrorKind::NotFound => vec![],
                    Err(e) => return Err(rt_status(&e)),
                }
            } else {
                self.rt().members(p).map_err(|e| rt_status(&e))?
            };
            for x in members {
                sink.push(p4::Entity {
                    entity: Some(p4::entity::Entity::ActionProfileMember(
                        p4::ActionProfileMember {
                            action_profile_id: pid,
                            member_id: x.id.0,
                            action: Some(prog.call_to_p4(&x.action)),
                        },
                    )),
                });
            }
        }
        Ok(())
    }

    fn read_groups(
        &self,
        prog: &Program,
        g: &p4::ActionProfileGroup,
        sink: &mut Sink<'_>,
    ) -> Result<(), Status> {
        for (pid, p) in self.profiles_of(prog, g.action_profile_id, sink)? {
            if !prog.schema.profile(p).is_some_and(|x| x.with_selector) {
                continue;
            }
            let groups = if g.group_id != 0 {
                match self.rt().group(p, p4jet_runtime::GroupId(g.group_id)) {
                    Ok(x) => vec![x],
                    Err(e) if e.kind == p4jet_runtime::ErrorKind::NotFound => vec![],
                    Err(e) => return Err(rt_status(&e)),
                }
            } else {
                self.rt().groups(p).map_err(|e| rt_status(&e))?
            };
            for x in groups {
                sink.push(p4::Entity {
                    entity: Some(p4::entity::Entity::ActionProfileGroup(
                        p4::ActionProfileGroup {
                            action_profile_id: pid,
                            group_id: x.id.0,
                            members: x
                                .members
                                .iter()
                                .map(|m| p4::action_profile_group::Member {
                                    member_id: m.member.0,
                                    weight: m.weight as i32,
                                    watch_kind: m.watch_port.map(|p| {
                                        p4::action_profile_group::member::WatchKind::WatchPort(
                                            crate::bytestring::from_u128(u128::from(p)),
                                        )
                                    }),
                                })
                                .collect(),
                            max_size: x.max_size as i32,
                        },
                    )),
                });
            }
        }
        Ok(())
    }

    fn read_counters(
        &self,
        prog: &Program,
        c: &p4::CounterEntry,
        sink: &mut Sink<'_>,
    ) -> Result<(), Status> {
        let ids: Vec<(u32, p4jet_runtime::CounterId)> = if c.counter_id == 0 {
            prog.p4info
                .counters
                .iter()
                .filter_map(|x| {
                    let id = x.preamble.as_ref()?.id;
                    Some((id, prog.join.counter(id)?))
                })
                .filter(|(id, _)| sink.access.allows(*id))
                .collect()
        } else {
            let id = prog
                .join
                .counter(c.counter_id)
                .ok_or_else(|| Status::not_found(format!("Unknown counter id {}", c.counter_id)))?;
            sink.sees(c.counter_id, false, "counter")?;
            vec![(c.counter_id, id)]
        };
        for (pid, id) in ids {
            let size = prog.schema.counter(id).map_or(0, |x| x.size);
            let (start, end) = match &c.index {
                Some(i) => {
                    if i.index < 0 || i.index >= i64::from(size) {
                        return Err(Status::out_of_range(format!(
                            "counter index {} out of range (size {size})",
                            i.index
                        )));
                    }
                    (i.index as u32, i.index as u32 + 1)
                }
                None => (0, size),
            };
            let mut s = start;
            while s < end {
                let e = end.min(s + 4096);
                let vals = self.rt().counters(id, s, e).map_err(|e| rt_status(&e))?;
                for (k, v) in vals.iter().enumerate() {
                    sink.push(p4::Entity {
                        entity: Some(p4::entity::Entity::CounterEntry(p4::CounterEntry {
                            counter_id: pid,
                            index: Some(p4::Index {
                                index: i64::from(s) + k as i64,
                            }),
                            data: Some(translate::counter_to_p4(v)),
                        })),
                    });
                }
                if sink.closed() {
                    return Ok(());
                }
                s = e;
            }
        }
        Ok(())
    }

    fn read_meters(
        &self,
        prog: &Program,
        m: &p4::MeterEntry,
        sink: &mut Sink<'_>,
    ) -> Result<(), Status> {
        let ids: Vec<(u32, p4jet_runtime::MeterId)> = if m.meter_id == 0 {
            prog.p4info
                .meters
                .iter()
                .filter_map(|x| {
                    let id = x.preamble.as_ref()?.id;
                    Some((id, prog.join.meter(id)?))
                })
                .filter(|(id, _)| sink.access.allows(*id))
                .collect()
        } else {
            let id = prog
                .join
                .meter(m.meter_id)
                .ok_or_else(|| Status::not_found(format!("Unknown meter id {}", m.meter_id)))?;
            sink.sees(m.meter_id, false, "meter")?;
            vec![(m.meter_id, id)]
        };
        for (pid, id) in ids {
            let size = prog.schema.meter(id).map_or(0, |x| x.size);
            let (start, end) = match &m.index {
                Some(i) => {
                    if i.index < 0 || i.index >= i64::from(size) {
                        return Err(Status::out_of_range(format!(
                            "meter index {} out of range (size {size})",
                            i.index
                        )));
                    }
                    (i.index as u32, i.index as u32 + 1)
                }
                None => (0, size),
            };
            for idx in start..end {
                let cfg = self.rt().meter(id, idx).map_err(|e| rt_status(&e))?;
                sink.push(p4::Entity {
                    entity: Some(p4::entity::Entity::MeterEntry(p4::MeterEntry {
                        meter_id: pid,
                        index: Some(p4::Index {
                            index: i64::from(idx),
                        }),
                        config: translate::meter_to_p4(&cfg),
                        counter_data: None,
                    })),
                });
                if sink.closed() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    fn read_registers(
        &self,
        prog: &Program,
        r: &p4::RegisterEntry,
        sink: &mut Sink<'_>,
    ) -> Result<(), Status> {
        let ids: Vec<(u32, p4jet_runtime::RegisterId)> = if r.register_id == 0 {
            prog.p4info
                .registers
                .iter()
                .filter_map(|x| {
                    let id = x.preamble.as_ref()?.id;
                    Some((id, prog.join.register(id)?))
                })
                .filter(|(id, _)| sink.access.allows(*id))
                .collect()
        } else {
            let id = prog.join.register(r.register_id).ok_or_else(|| {
                Status::not_found(format!("Unknown register id {}", r.register_id))
            })?;
            sink.sees(r.register_id, false, "register")?;
            vec![(r.register_id, id)]
        };
        for (pid, id) in ids {
            let size = prog.schema.register(id).map_or(0, |x| x.size);
            let (start, end) = match &r.index {
                Some(i) => {
                    if i.index < 0 || i.index >= i64::from(size) {
                        return Err(Status::out_of_range(format!(
                            "register index {} out of range (size {size})",
                            i.index
                        )));
                    }
                    (i.index as u32, i.index as u32 + 1)
                }
                None => (0, size),
            };
            let mut s = start;
            while s < end {
                let e = end.min(s + 4096);
                let vals = self.rt().registers(id, s, e).map_err(|e| rt_status(&e))?;
                for (k, v) in vals.iter().enumerate() {
                    sink.push(p4::Entity {
                        entity: Some(p4::entity::Entity::RegisterEntry(p4::RegisterEntry {
                            register_id: pid,
                            index: Some(p4::Index {
                                index: i64::from(s) + k as i64,
                            }),
                            data: Some(p4::P4Data {
                                data: Some(p4::p4_data::Data::Bitstring(canonical(v))),
                            }),
                        })),
                    });
                }
                if sink.closed() {
                    return Ok(());
                }
                s = e;
            }
        }
        Ok(())
    }

    fn read_value_sets(
        &self,
        prog: &Program,
        v: &p4::ValueSetEntry,
        sink: &mut Sink<'_>,
    ) -> Result<(), Status> {
        let sets: Vec<&crate::proto::p4::config::v1::ValueSet> = prog
            .p4info
            .value_sets
            .iter()
            .filter(|s| {
                v.value_set_id == 0 || s.preamble.as_ref().is_some_and(|p| p.id == v.value_set_id)
            })
            .collect();
        if sets.is_empty() && v.value_set_id != 0 {
            return Err(Status::not_found(format!(
                "Unknown value set id {}",
                v.value_set_id
            )));
        }
        for s in sets {
            let pid = s.preamble.as_ref().map_or(0, |p| p.id);
            if !sink.sees(pid, v.value_set_id == 0, "value set")? {
                continue;
            }
            let Some(id) = prog.join.value_set(pid) else {
                continue;
            };
            let values = self.rt().value_set(id).map_err(|e| rt_status(&e))?;
            let members = values
                .iter()
                .map(|val| p4::ValueSetMember {
                    r#match: split_fields(val, s),
                })
                .collect();
            sink.push(p4::Entity {
                entity: Some(p4::entity::Entity::ValueSetEntry(p4::ValueSetEntry {
                    value_set_id: pid,
                    members,
                })),
            });
        }
        Ok(())
    }

    fn read_digests(
        &self,
        prog: &Program,
        d: &p4::DigestEntry,
        sink: &mut Sink<'_>,
    ) -> Result<(), Status> {
        let configured: BTreeSet<u32> = lock(&self.digests).iter().copied().collect();
        if d.digest_id != 0 && prog.join.digest(d.digest_id).is_none() {
            return Err(Status::not_found(format!(
                "Unknown digest id {}",
                d.digest_id
            )));
        }
        if d.digest_id != 0 {
            sink.sees(d.digest_id, false, "digest")?;
        }
        for id in configured {
            if (d.digest_id != 0 && d.digest_id != id) || !sink.access.allows(id) {
                continue;
            }
            let Some(m) = prog.join.digest(id) else {
                continue;
            };
            let c = self.rt().digest_config(m).map_err(|e| rt_status(&e))?;
            sink.push(p4::Entity {
                entity: Some(p4::entity::Entity::DigestEntry(p4::DigestEntry {
                    digest_id: id,
                    config: Some(p4::digest_entry::Config {
                        max_timeout_ns: c.max_timeout_ns.min(i64::MAX as u64) as i64,
                        max_list_size: c.max_list_size.min(i32::MAX as u32) as i32,
                        ack_timeout_ns: c.ack_timeout_ns.min(i64::MAX as u64) as i64,
                    }),
                })),
            });
        }
        Ok(())
    }

    fn read_pre(
        &self,
        p: &p4::PacketReplicationEngineEntry,
        sink: &mut Sink<'_>,
    ) -> Result<(), Status> {
        use p4::packet_replication_engine_entry::Type as T;
        match p.r#type.as_ref() {
            Some(T::MulticastGroupEntry(g)) => {
                let pre = self.rt().pre().map_err(|e| rt_status(&e))?;
                for grp in &pre.groups {
                    if g.multicast_group_id != 0 && grp.id != g.multicast_group_id {
                        continue;
                    }
                    let replicas = pre.replicas(grp.id).unwrap_or_default();
                    sink.push(p4::Entity {
                        entity: Some(p4::entity::Entity::PacketReplicationEngineEntry(
                            p4::PacketReplicationEngineEntry {
                                r#type: Some(T::MulticastGroupEntry(p4::MulticastGroupEntry {
                                    multicast_group_id: grp.id,
                                    replicas: translate::replicas_to_p4(&replicas),
                                    metadata: lock(&self.controller_data)
                                        .group(grp.id)
                                        .map(<[u8]>::to_vec)
                                        .unwrap_or_default(),
                                })),
                            },
                        )),
                    });
                }
                Ok(())
            }
            Some(T::CloneSessionEntry(c)) => {
                let sessions = if c.session_id != 0 {
                    match self.rt().clone_session(c.session_id) {
                        Ok(s) => vec![s],
                        Err(e) if e.kind == p4jet_runtime::ErrorKind::NotFound => vec![],
                        Err(e) => return Err(rt_status(&e)),
                    }
                } else {
                    self.rt().clone_sessions().map_err(|e| rt_status(&e))?
                };
                for s in sessions {
                    let replicas = match &s.target {
                        p4jet_runtime::CloneTarget::Replicas(r) => r.clone(),
                        p4jet_runtime::CloneTarget::Bmv2 { port: Some(p), .. } => {
                            vec![p4jet_runtime::Replica {
                                port: *p,
                                instance: 0,
                            }]
                        }
                        p4jet_runtime::CloneTarget::Bmv2 { .. } => vec![],
                    };
                    sink.push(p4::Entity {
                        entity: Some(p4::entity::Entity::PacketReplicationEngineEntry(
                            p4::PacketReplicationEngineEntry {
                                r#type: Some(T::CloneSessionEntry(p4::CloneSessionEntry {
                                    session_id: s.id,
                                    replicas: translate::replicas_to_p4(&replicas),
                                    class_of_service: s.class_of_service,
                                    packet_length_bytes: s.packet_length_bytes.min(i32::MAX as u32)
                                        as i32,
                                })),
                            },
                        )),
                    });
                }
                Ok(())
            }
            None => Err(Status::invalid_argument(
                "a packet replication engine entry to read needs a multicast group or a clone \
                 session (id 0 reads all)",
            )),
        }
    }

    // ------------------------------------------------------------------ packet I/O

    /// A PacketOut of the primary: into the pipeline through the CPU port.
    pub fn packet_out(&self, p: &p4::PacketOut) -> Result<(), (i32, String)> {
        let Some(cpu) = &self.cpu else {
            return Err((
                code::FAILED_PRECONDITION,
                "the switch has no CPU port (start it with --cpu-port N)".into(),
            ));
        };
        let Some(prog) = read(&self.committed) else {
            return Err((
                code::FAILED_PRECONDITION,
                "No forwarding pipeline config set for this device".into(),
            ));
        };
        let frame = prog
            .io
            .packet_out_frame(p)
            .map_err(|e| (code::INVALID_ARGUMENT, e))?;
        if !cpu.send_to_switch(frame) {
            return Err((
                code::RESOURCE_EXHAUSTED,
                "packet-out queue full: the switch takes packets more slowly than they are sent"
                    .into(),
            ));
        }
        Ok(())
    }

    /// A frame the pipeline sent to the CPU port: a PacketIn to the primaries.
    pub fn packet_in(&self, frame: &[u8]) {
        let Some(prog) = read(&self.committed) else {
            return;
        };
        let Some(pi) = prog.io.packet_in(frame) else {
            return;
        };
        let to = |a: &Access| a.receives_packet_in(&pi.metadata);
        let m = p4::StreamMessageResponse {
            update: Some(p4::stream_message_response::Update::Packet(pi.clone())),
        };
        self.sessions.send_to_primaries_if(&m, to);
    }

    /// A DigestListAck of the primary.
    pub fn digest_ack(&self, a: &p4::DigestListAck) {
        let Some(prog) = self.program() else {
            return;
        };
        let Some(d) = prog.join.digest(a.digest_id) else {
            return;
        };
        let _ = self.rt().apply(Update::AckDigest {
            digest: d,
            list_id: a.list_id,
            samples: None,
        });
    }

    /// Digest lists and idle timeouts due now, sent to the primaries.
    pub fn poll_notifications(&self) {
        let Some(prog) = read(&self.committed) else {
            return;
        };
        if read(&self.saved).is_some() {
            return;
        }
        let (lists, idle) = {
            let mut rt = self.rt();
            (
                rt.poll_digests().unwrap_or_default(),
                rt.poll_idle_timeouts().unwrap_or_default(),
            )
        };
        let configured: HashSet<u32> = lock(&self.digests).clone();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        for l in lists {
            let Some(pid) = prog.join.digest_p4info_id(l.digest) else {
                continue;
            };
            if !configured.contains(&pid) {
                // not asked for: acknowledged at once so that it does not hold the
                // learning filter
                let _ = self.rt().apply(Update::AckDigest {
                    digest: l.digest,
                    list_id: l.list_id,
                    samples: None,
                });
                continue;
            }
            let fields: Vec<u32> = prog
                .schema
                .digest(l.digest)
                .map(|d| d.fields.iter().map(|f| f.width).collect())
                .unwrap_or_default();
            let is_struct = digest_is_struct(&prog, pid);
            let data = l
                .samples
                .iter()
                .map(|s| digest_data(s, &fields, is_struct))
                .collect();
            self.sessions.send_to_primaries_if(
                &p4::StreamMessageResponse {
                    update: Some(p4::stream_message_response::Update::Digest(
                        p4::DigestList {
                            digest_id: pid,
                            list_id: l.list_id,
                            data,
                            timestamp: now,
                        },
                    )),
                },
                |a| a.allows(pid),
            );
        }
        for it in idle {
            let entries = it
                .entries
                .iter()
                .map(|e| {
                    let mut x = prog.entry_to_p4(it.table, e);
                    x.action = None;
                    self.put_meta(it.table, e, &mut x);
                    x
                })
                .collect::<Vec<_>>();
            if entries.is_empty() {
                continue;
            }
            let tid = prog.join.table_p4info_id(it.table).unwrap_or(0);
            self.sessions.send_to_primaries_if(
                &p4::StreamMessageResponse {
                    update: Some(
                        p4::stream_message_response::Update::IdleTimeoutNotification(
                            p4::IdleTimeoutNotification {
                                table_entry: entries,
                                timestamp: now,
                            },
                        ),
                    ),
                },
                |a| a.allows(tid),
            );
        }
    }

    /// Starts the device's background tasks on `rt`: PacketIns from the CPU port, and
    /// digest lists and idle timeout notifications (checked every 10 ms while a
    /// controller is primary, every 200 ms otherwise; idle, the tasks sleep).
    pub fn start_background(
        self: &Arc<Self>,
        rt: &tokio::runtime::Handle,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let mut v = vec![];
        if let Some(cpu) = self.cpu() {
            let dev = self.clone();
            v.push(rt.spawn(async move {
                loop {
                    cpu.wait_packet_in().await;
                    while let Some(frame) = cpu.take_packet_in() {
                        dev.packet_in(&frame);
                    }
                }
            }));
        }
        let dev = self.clone();
        v.push(rt.spawn(async move {
            loop {
                let busy = dev.sessions.has_primary() && read(&dev.committed).is_some();
                tokio::time::sleep(if busy {
                    Duration::from_millis(10)
                } else {
                    Duration::from_millis(200)
                })
                .await;
                if busy {
                    let d = dev.clone();
                    let _ = tokio::task::spawn_blocking(move || d.poll_notifications()).await;
                }
            }
        }));
        v
    }
}

/// The controller's metadata of entry `e` of table `t`, into `out`.
fn put_meta(
    data: &ControllerData,
    t: TableId,
    e: &p4jet_runtime::TableEntry,
    out: &mut p4::TableEntry,
) {
    if let Some(m) = data.entry(t, e) {
        out.metadata = m.metadata.clone();
        #[allow(deprecated)] // controller_metadata: P4Runtime < 1.2 clients
        {
            out.controller_metadata = m.controller_metadata;
        }
    }
}

/// Whether update `u` gives an entry or a multicast group metadata.
fn carries_metadata(u: &p4::Update) -> bool {
    use p4::entity::Entity as E;
    match u.entity.as_ref().and_then(|e| e.entity.as_ref()) {
        #[allow(deprecated)] // controller_metadata: P4Runtime < 1.2 clients
        Some(E::TableEntry(te)) => !te.metadata.is_empty() || te.controller_metadata != 0,
        Some(E::PacketReplicationEngineEntry(p)) => matches!(
            p.r#type.as_ref(),
            Some(p4::packet_replication_engine_entry::Type::MulticastGroupEntry(g))
                if !g.metadata.is_empty()
        ),
        _ => false,
    }
}

/// What update `u` (translated without error) may change of the controller's
/// metadata.
fn meta_change(prog: &Program, u: &p4::Update) -> Option<MetaChange> {
    use p4::entity::Entity as E;
    let ty = p4::update::Type::try_from(u.r#type).ok()?;
    match u.entity.as_ref()?.entity.as_ref()? {
        E::TableEntry(te) if !te.is_default_action => {
            #[allow(deprecated)] // controller_metadata: P4Runtime < 1.2 clients
            let meta = EntryMeta {
                metadata: te.metadata.clone(),
                controller_metadata: te.controller_metadata,
            };
            let (table, _, _) = prog.table(te.table_id).ok()?;
            let (_, key) = prog.key(te).ok()?;
            Some(MetaChange::Entry {
                table,
                key,
                ty,
                meta,
            })
        }
        E::PacketReplicationEngineEntry(p) => match p.r#type.as_ref()? {
            p4::packet_replication_engine_entry::Type::MulticastGroupEntry(g) => {
                Some(MetaChange::Group {
                    id: g.multicast_group_id,
                    meta: (ty != p4::update::Type::Delete).then(|| g.metadata.clone()),
                })
            }
            _ => None,
        },
        _ => None,
    }
}

/// The P4Info ids of the direct counter and direct meter of table `table_id`.
fn direct_ids(prog: &Program, table_id: u32) -> impl Iterator<Item = u32> + '_ {
    let counters = prog
        .p4info
        .direct_counters
        .iter()
        .filter(move |c| c.direct_table_id == table_id)
        .filter_map(|c| c.preamble.as_ref().map(|p| p.id));
    let meters = prog
        .p4info
        .direct_meters
        .iter()
        .filter(move |m| m.direct_table_id == table_id)
        .filter_map(|m| m.preamble.as_ref().map(|p| p.id));
    counters.chain(meters)
}

/// Whether a role with `access` may write entity `e`; else what it may not write.
fn in_scope(prog: &Program, access: &Access, e: &p4::entity::Entity) -> Result<(), String> {
    use p4::entity::Entity as E;
    if access.is_full() {
        return Ok(());
    }
    let (what, id) = match e {
        E::TableEntry(t) => ("table", t.table_id),
        E::ActionProfileMember(m) => ("action profile", m.action_profile_id),
        E::ActionProfileGroup(g) => ("action profile", g.action_profile_id),
        E::CounterEntry(c) => ("counter", c.counter_id),
        E::MeterEntry(m) => ("meter", m.meter_id),
        E::RegisterEntry(r) => ("register", r.register_id),
        E::ValueSetEntry(v) => ("value set", v.value_set_id),
        E::DigestEntry(d) => ("digest", d.digest_id),
        E::ExternEntry(x) => ("extern", x.extern_id),
        E::DirectCounterEntry(d) => {
            let t = d.table_entry.as_ref().map_or(0, |t| t.table_id);
            if direct_ids(prog, t).any(|id| access.allows(id)) {
                return Ok(());
            }
            ("the direct counter of table", t)
        }
        E::DirectMeterEntry(d) => {
            let t = d.table_entry.as_ref().map_or(0, |t| t.table_id);
            if direct_ids(prog, t).any(|id| access.allows(id)) {
                return Ok(());
            }
            ("the direct meter of table", t)
        }
        E::PacketReplicationEngineEntry(_) => {
            return Err(
                "the packet replication engine (only roles with full pipeline access may)".into(),
            );
        }
    };
    if access.allows(id) {
        Ok(())
    } else {
        Err(format!("{what} {id} (not in its role config)"))
    }
}

fn digest_is_struct(prog: &Program, pid: u32) -> bool {
    use crate::proto::p4::config::v1::p4_data_type_spec::TypeSpec;
    prog.p4info
        .digests
        .iter()
        .find(|d| d.preamble.as_ref().is_some_and(|p| p.id == pid))
        .and_then(|d| d.type_spec.as_ref())
        .and_then(|t| t.type_spec.as_ref())
        .is_none_or(|t| !matches!(t, TypeSpec::Bitstring(_)))
}

/// A digest sample (fields concatenated, each in whole bytes) as P4Data: a struct
/// of bitstrings, or one bitstring for a digest of a bit<W> type.
fn digest_data(sample: &[u8], widths: &[u32], is_struct: bool) -> p4::P4Data {
    let mut members = vec![];
    let mut off = 0usize;
    for w in widths {
        let n = crate::bytestring::width_bytes(*w);
        let end = (off + n).min(sample.len());
        let v = sample.get(off..end).unwrap_or(&[]);
        members.push(p4::P4Data {
            data: Some(p4::p4_data::Data::Bitstring(canonical(v))),
        });
        off = end;
    }
    if !is_struct
        && members.len() == 1
        && let Some(m) = members.pop()
    {
        return m;
    }
    p4::P4Data {
        data: Some(p4::p4_data::Data::Struct(p4::P4StructLike { members })),
    }
}

/// A value set value split into its fields (exact matches).
fn split_fields(val: &[u8], s: &crate::proto::p4::config::v1::ValueSet) -> Vec<p4::FieldMatch> {
    let total: u32 = s.r#match.iter().map(|f| f.bitwidth.max(0) as u32).sum();
    let pad = val.len() as u32 * 8 - total.min(val.len() as u32 * 8);
    let mut off = pad;
    s.r#match
        .iter()
        .map(|f| {
            let w = f.bitwidth.max(0) as u32;
            let n = crate::bytestring::width_bytes(w);
            let mut out = vec![0u8; n];
            let opad = n as u32 * 8 - w;
            for i in 0..w {
                let src = off + i;
                let bit = val
                    .get((src / 8) as usize)
                    .map_or(0, |b| (b >> (7 - src % 8)) & 1);
                let dst = opad + i;
                out[(dst / 8) as usize] |= bit << (7 - dst % 8);
            }
            off += w;
            p4::FieldMatch {
                field_id: f.id,
                field_match_type: Some(p4::field_match::FieldMatchType::Exact(
                    p4::field_match::Exact {
                        value: canonical(&out),
                    },
                )),
            }
        })
        .collect()
}

fn entity_table(t: p4::TableEntry) -> p4::Entity {
    p4::Entity {
        entity: Some(p4::entity::Entity::TableEntry(t)),
    }
}

/// Collects read entities into responses of at most [`READ_CHUNK_BYTES`].
struct Sink<'a> {
    tx: &'a mpsc::Sender<Result<p4::ReadResponse, Status>>,
    buf: Vec<p4::Entity>,
    bytes: usize,
    sent: bool,
    /// The reading role (ReadRequest.role) and what it may see.
    role: String,
    access: Access,
}

impl Sink<'_> {
    /// Whether the reader may see the object with this P4Info id: wildcard reads
    /// (`wildcard`) leave it out silently, a read naming it is refused.
    fn sees(&self, id: u32, wildcard: bool, what: &str) -> Result<bool, Status> {
        if self.access.allows(id) {
            Ok(true)
        } else if wildcard {
            Ok(false)
        } else {
            Err(Status::permission_denied(format!(
                "role '{}' may not read {what} {id} (not in its role config)",
                self.role
            )))
        }
    }

    fn push(&mut self, e: p4::Entity) {
        let n = e.encoded_len() + 4;
        if self.bytes + n > READ_CHUNK_BYTES && !self.buf.is_empty() {
            self.flush();
        }
        self.bytes += n;
        self.buf.push(e);
    }

    fn flush(&mut self) {
        let entities = std::mem::take(&mut self.buf);
        self.bytes = 0;
        self.sent = true;
        let _ = self.tx.blocking_send(Ok(p4::ReadResponse { entities }));
    }

    /// The client went away.
    fn closed(&self) -> bool {
        self.tx.is_closed()
    }

    fn finish(mut self) {
        // at least one response, as PI sends
        if !self.buf.is_empty() || !self.sent {
            self.flush();
        }
    }
}
