//! The runtime model ([`p4jet_runtime::Runtime`]) on a [`Switch`].
//!
//! Every operation has simple_switch's semantics: the same checks in the same order,
//! the same error codes (carried in [`RuntimeError::bmv2`]), the same handle
//! numbering. One file per thing managed:
//!
//! * [`tables`]: entries, default entries, idle timeouts, direct counters and meters;
//! * [`profiles`]: action profile members and selector groups (weights, watch ports);
//! * [`pre`]: the packet replication engine (bmv2 nodes and P4Runtime groups) and
//!   clone sessions;
//! * [`externs`]: counters, meters, registers, parser value sets;
//! * [`learning`]: digests (learn lists): configuration, notifications, acks;
//! * [`config`]: the program (load, save, commit, replace, reconcile, none), ports,
//!   queues, hash parameters, reset, information.
//!
//! # Writes
//!
//! [`Runtime::write`] turns each [`Update`] into control-state ops (`p4jet_engine::Op`)
//! and what to do once they succeeded. Checks that need only the program are made
//! first (an unknown action, a malformed key, ...); checks on the state (a duplicate
//! key, a member that does not exist, ...) are made by the control state as each op
//! applies, so that an update sees the updates before it in its batch. All the ops of
//! a batch go in one `Op::Batch` and one publication: packets see the batch whole or
//! not at all. Multicast groups and clone sessions, which nothing else refers to, are
//! checked and changed on a working copy and published with the batch. Extern writes
//! (counters, meters, registers) and digest bookkeeping happen after the publication,
//! in order, and only for updates that succeeded (in an all-or-nothing batch, only if
//! all did).
//!
//! Deliberate choices where bmv2 has no error to mirror: unknown ids answer
//! [`ErrorKind::NotFound`] with the bmv2 code of an unknown name; requests bmv2
//! answers by crashing or with a C++ exception (a priority queue that does not exist,
//! a value set value of the wrong length) answer an error.

mod config;
mod externs;
mod learning;
mod pre;
mod profiles;
mod tables;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use p4jet_engine::state::{
    ControlState, EntryAction as EngineAction, MirrorSession, OpResult, Pre, Refusal,
};
use p4jet_engine::{Op, hash::CrcParams};
use p4jet_ir::{Action, ActionCall as IrCall, ActionData, Program};
use p4jet_runtime::bmv2::TableOperationErrorCode as TC;
use p4jet_runtime::{
    ActionCall, Applied, Atomicity, BatchResult, Bytes, ErrorKind, RuntimeError, Schema, TableId,
    Update,
};
use p4jet_tables::TableError;

use crate::Switch;

pub use config::NO_PROGRAM_JSON;

/// simple_switch's default multicast group table size (`--max-mc-groups`).
pub const MAX_MC_GROUPS: usize = 4096;
/// simple_switch's default number of L1 (node) entries (`--max-l1-entries`).
pub const MAX_MC_L1_ENTRIES: usize = 4096;
/// simple_switch's default number of L2 (port map) entries (`--max-l2-entries`).
pub const MAX_MC_L2_ENTRIES: usize = 8192;
/// Width of PRE port and LAG maps.
pub const MC_PORT_MAP_SIZE: u32 = 512;
/// Number of LAG indexes of the PRE.
pub const MC_LAG_MAX_ENTRIES: u32 = 256;
/// Largest mirroring session id.
pub const MAX_MIRROR_SESSION_ID: u32 = 0x7fff;
/// Default learn list flush timeout.
pub const DEFAULT_LEARN_TIMEOUT_MS: u32 = 1000;
/// Default maximum number of samples per learning message.
pub const DEFAULT_LEARN_MAX_SAMPLES: usize = 16;
/// Most learning notifications kept for `digest_dump` (older ones are forgotten).
pub const LEARN_LOG_CAPACITY: usize = 256;

/// A port known to the device manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortEntry {
    /// Interface name.
    pub iface: String,
    /// Pcap file given to `port_add`, if any.
    pub pcap: Option<String>,
}

/// A port's counters as its device or the kernel keeps them (summed over its
/// queues), published by the binary that runs the ports about once a second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceCounters {
    /// Frames dropped before the switch read them (receive ring full, DPDK
    /// `imissed` + `rx_nombuf`).
    pub rx_missed: u64,
    /// Erroneous frames received (DPDK `ierrors`).
    pub rx_errors: u64,
    /// Frames the device failed to send (DPDK `oerrors`).
    pub tx_errors: u64,
}

/// A port change requested through the runtime; the owner of the I/O (the binary)
/// drains [`RuntimeState::port_events`] and opens or closes the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortEvent {
    /// A port to open.
    Add {
        /// Port number.
        port: u32,
        /// Interface name.
        iface: String,
        /// Pcap file, if any.
        pcap: Option<String>,
    },
    /// A port to close.
    Remove {
        /// Port number.
        port: u32,
    },
}

/// Runtime state that is neither control state nor extern state: the switch's
/// information and ports, and per-program bookkeeping (learning buffers, entry
/// ageing, group weights' watch ports, ...).
#[derive(Debug, Clone)]
pub struct RuntimeState {
    /// `--device-id`.
    pub device_id: u64,
    /// `--thrift-port`.
    pub thrift_port: u16,
    /// Notifications socket address.
    pub notifications_socket: Option<String>,
    /// Event logger address.
    pub elogger_socket: Option<String>,
    /// Debugger address.
    pub debugger_socket: Option<String>,
    /// `--cpu-port`.
    pub cpu_port: Option<u32>,
    /// Size of the multicast group table (`--max-mc-groups`).
    pub max_mc_groups: usize,
    /// Most PRE nodes (`--max-l1-entries`).
    pub max_mc_l1_entries: usize,
    /// Most PRE port maps (`--max-l2-entries`; one per node).
    pub max_mc_l2_entries: usize,
    /// Ports of the device manager (the binary registers the ports it opened).
    pub ports: BTreeMap<u32, PortEntry>,
    /// Port additions and removals requested through the runtime, oldest first.
    pub port_events: Vec<PortEvent>,
    /// The forwarding workers, published by the binary that runs them (None: this
    /// switch runs no forwarding threads, e.g. in memory).
    pub workers: Option<p4jet_runtime::Workers>,
    /// A worker count asked for through the runtime (`set_workers`), not yet taken
    /// by the binary.
    pub workers_request: Option<u32>,
    /// Per port, what its device counts ([`DeviceCounters`]; `port_counters` adds
    /// them).
    pub device_counters: BTreeMap<u32, DeviceCounters>,
    /// The latest digest lists sent, oldest first (at most [`LEARN_LOG_CAPACITY`]).
    pub learn_log: std::collections::VecDeque<p4jet_runtime::DigestList>,
    pub(crate) learn: BTreeMap<u32, learning::LearnListState>,
    pub(crate) toeplitz_keys: BTreeMap<u32, Vec<u8>>,
    /// (table, slot) → ageing start (ms): when the entry was added or its timeout set.
    pub(crate) entry_times_ms: HashMap<(u32, u32), u64>,
    /// (table, slot) → the hit time last reported as an idle timeout.
    pub(crate) idle_reported: HashMap<(u32, u32), u64>,
    /// bmv2's ageing monitor: per table, the handles its last sweep reported.
    pub(crate) ageing_prev: HashMap<u32, std::collections::HashSet<u32>>,
    /// The next ageing notification's buffer id.
    pub(crate) ageing_buffer_id: u64,
    /// (profile, group) → watch ports of members and the group's size limit.
    pub(crate) group_meta: HashMap<(u32, u32), profiles::GroupMeta>,
}

impl Default for RuntimeState {
    fn default() -> Self {
        RuntimeState {
            device_id: 0,
            thrift_port: 9090,
            notifications_socket: Some("ipc:///tmp/bmv2-0-notifications.ipc".into()),
            elogger_socket: None,
            debugger_socket: None,
            cpu_port: None,
            max_mc_groups: MAX_MC_GROUPS,
            max_mc_l1_entries: MAX_MC_L1_ENTRIES,
            max_mc_l2_entries: MAX_MC_L2_ENTRIES,
            ports: BTreeMap::new(),
            port_events: Vec::new(),
            workers: None,
            workers_request: None,
            device_counters: BTreeMap::new(),
            learn_log: std::collections::VecDeque::new(),
            learn: BTreeMap::new(),
            toeplitz_keys: BTreeMap::new(),
            entry_times_ms: HashMap::new(),
            idle_reported: HashMap::new(),
            ageing_prev: HashMap::new(),
            ageing_buffer_id: 0,
            group_meta: HashMap::new(),
        }
    }
}

impl RuntimeState {
    /// Forgets what belongs to the previous program; ports, device information and
    /// limits stay.
    pub(crate) fn program_changed(&mut self) {
        self.learn.clear();
        self.learn_log.clear();
        self.toeplitz_keys.clear();
        self.entry_times_ms.clear();
        self.idle_reported.clear();
        self.ageing_prev.clear();
        self.ageing_buffer_id = 0;
        self.group_meta.clear();
    }

    /// The Toeplitz key set for a calculation (by index), if any. The engine does not
    /// compute Toeplitz hashes yet (it uses CRC-32 for them); the key is kept for it.
    pub fn toeplitz_key(&self, calc: u32) -> Option<&[u8]> {
        self.toeplitz_keys.get(&calc).map(Vec::as_slice)
    }

    /// Flush timeout (ms) and maximum samples per message of a learn list (by JSON id).
    pub fn learn_settings(&self, list_id: u32) -> (u32, usize) {
        self.learn
            .get(&list_id)
            .map(|l| (l.timeout_ms, l.max_samples))
            .unwrap_or((DEFAULT_LEARN_TIMEOUT_MS, DEFAULT_LEARN_MAX_SAMPLES))
    }
}

// -------------------------------------------------------------------- errors

/// The error of a table operation refused by the tables crate.
pub(crate) fn table_error(what: &str, e: &TableError) -> RuntimeError {
    let (kind, code, msg) = match e {
        TableError::TableFull => (ErrorKind::ResourceExhausted, TC::TABLE_FULL, "table full"),
        TableError::DuplicateEntry => (
            ErrorKind::AlreadyExists,
            TC::DUPLICATE_ENTRY,
            "an entry with this key exists",
        ),
        TableError::InvalidHandle => (ErrorKind::NotFound, TC::INVALID_HANDLE, "no such entry"),
        TableError::ExpiredHandle => (
            ErrorKind::NotFound,
            TC::EXPIRED_HANDLE,
            "the entry of this handle was deleted",
        ),
        TableError::BadMatchKey(m) => {
            return RuntimeError::invalid(format!("{what}: bad match key: {m}"))
                .with_bmv2(TC::BAD_MATCH_KEY);
        }
        TableError::InvalidSpec(m) => {
            return RuntimeError::internal(format!("{what}: {m}")).with_bmv2(TC::ERROR);
        }
    };
    RuntimeError::new(kind, format!("{what}: {msg}")).with_bmv2(code)
}

/// The error of an op refused by a check on the control state.
pub(crate) fn refusal_error(what: &str, r: Refusal) -> RuntimeError {
    let (kind, code, msg) = match r {
        Refusal::NoMember => (
            ErrorKind::NotFound,
            TC::INVALID_MBR_HANDLE,
            "no such member",
        ),
        Refusal::NoGroup => (ErrorKind::NotFound, TC::INVALID_GRP_HANDLE, "no such group"),
        Refusal::MemberExists => {
            return RuntimeError::already_exists(format!("{what}: the member exists already"));
        }
        Refusal::GroupExists => {
            return RuntimeError::already_exists(format!("{what}: the group exists already"));
        }
        Refusal::MemberUsed => (
            ErrorKind::FailedPrecondition,
            TC::MBR_STILL_USED,
            "the member is used by a group or an entry",
        ),
        Refusal::GroupUsed => (
            ErrorKind::FailedPrecondition,
            TC::GRP_STILL_USED,
            "the group is used by an entry",
        ),
        Refusal::MemberInGroup => (
            ErrorKind::AlreadyExists,
            TC::MBR_ALREADY_IN_GRP,
            "the member is in the group already",
        ),
        Refusal::MemberNotInGroup => (
            ErrorKind::NotFound,
            TC::MBR_NOT_IN_GRP,
            "the member is not in the group",
        ),
        Refusal::EmptyGroup => (
            ErrorKind::FailedPrecondition,
            TC::EMPTY_GRP,
            "an entry may not point to an empty group",
        ),
        Refusal::NoEntry => (
            ErrorKind::NotFound,
            TC::BAD_MATCH_KEY,
            "no entry has this key",
        ),
        Refusal::NotIndirect => (
            ErrorKind::InvalidArgument,
            TC::WRONG_TABLE_TYPE,
            "not an indirect table",
        ),
        Refusal::Aborted => {
            return RuntimeError::new(ErrorKind::Aborted, format!("{what}: not applied"));
        }
    };
    RuntimeError::new(kind, format!("{what}: {msg}")).with_bmv2(code)
}

/// The error of a failed control-state op.
pub(crate) fn op_error(what: &str, r: &OpResult) -> RuntimeError {
    match r {
        OpResult::Table(e) => table_error(what, e),
        OpResult::Refused(r) => refusal_error(what, *r),
        OpResult::Err(m) => RuntimeError::internal(format!("{what}: {m}")),
        OpResult::Ok | OpResult::Handle(_) => {
            RuntimeError::internal(format!("{what}: an op that succeeded reported as failed"))
        }
    }
}

pub(crate) const STATE_GONE: &str = "the switch's control state is gone";

// ------------------------------------------------------------ action data

/// Packs action data into the engine's parameter blob; None when the number of
/// parameters is wrong (bmv2's `BAD_ACTION_DATA`). Values longer or shorter than the
/// parameter are reduced to its width, as bmv2 does when it uses them; a value of the
/// parameter's exact size is moved, not copied, when it is the whole blob and too long
/// to be held in place.
pub(crate) fn pack_action_data(action: &Action, mut data: Vec<Bytes>) -> Option<ActionData> {
    if data.len() != action.params.len() {
        return None;
    }
    if let ([(_, w)], [v]) = (&action.params[..], &mut data[..]) {
        let nb = w.div_ceil(8) as usize;
        if v.len() == nb
            && action.data_bytes as usize == nb
            && action.param_offsets.first().is_none_or(|o| *o == 0)
        {
            let mut v = std::mem::take(v);
            if !w.is_multiple_of(8)
                && let Some(b) = v.first_mut()
            {
                *b &= (1u8 << (w % 8)) - 1;
            }
            return Some(ActionData::from(v));
        }
    }
    let mut blob = ActionData::zeroed(action.data_bytes as usize);
    for (i, ((_, w), v)) in action.params.iter().zip(&data).enumerate() {
        let off = action.param_offsets.get(i).copied().unwrap_or(0) as usize;
        let nb = w.div_ceil(8) as usize;
        if let Some(dst) = blob.get_mut(off..off + nb) {
            dst.copy_from_slice(&p4jet_runtime::schema::fit(v, *w));
        }
    }
    Some(blob)
}

/// The parameters of an engine action call.
pub(crate) fn unpack_call(prog: &Program, call: &IrCall) -> ActionCall {
    let args = match prog.actions.get(call.action as usize) {
        Some(a) => a
            .params
            .iter()
            .enumerate()
            .map(|(i, (_, w))| {
                let off = a.param_offsets.get(i).copied().unwrap_or(0) as usize;
                let nb = w.div_ceil(8) as usize;
                call.data
                    .get(off..off + nb)
                    .map(<[u8]>::to_vec)
                    .unwrap_or_else(|| vec![0; nb])
            })
            .collect(),
        None => vec![],
    };
    ActionCall::new(p4jet_runtime::ActionId(call.action), args)
}

/// An engine call for `call`, checked against the actions allowed (`allowed`):
/// `INVALID_ACTION_NAME` for another action, `BAD_ACTION_DATA` for the wrong number
/// of parameters.
pub(crate) fn engine_call(
    prog: &Program,
    what: &str,
    allowed: &[u32],
    call: ActionCall,
) -> Result<IrCall, RuntimeError> {
    let a = call.action.0;
    let action = prog
        .actions
        .get(a as usize)
        .filter(|_| allowed.contains(&a))
        .ok_or_else(|| {
            RuntimeError::invalid(format!("{what}: action {} is not one of its actions", a))
                .with_bmv2(TC::INVALID_ACTION_NAME)
        })?;
    let n = call.args.len();
    let data = pack_action_data(action, call.args).ok_or_else(|| {
        RuntimeError::invalid(format!(
            "{what}: action {} takes {} parameters, not {n}",
            action.name,
            action.params.len()
        ))
        .with_bmv2(TC::BAD_ACTION_DATA)
    })?;
    Ok(IrCall { action: a, data })
}

/// The model's view of an engine entry action.
pub(crate) fn model_action(prog: &Program, a: &EngineAction) -> p4jet_runtime::EntryAction {
    use p4jet_runtime::EntryAction as E;
    match a {
        EngineAction::Direct(c) => E::Direct(unpack_call(prog, c)),
        EngineAction::Member(m) => E::Member(p4jet_runtime::MemberId(*m)),
        EngineAction::Group(g) => E::Group(p4jet_runtime::GroupId(*g)),
        EngineAction::OneShot(o) => E::OneShot(
            o.actions
                .iter()
                .map(|(c, w, watch)| p4jet_runtime::WeightedAction {
                    action: unpack_call(prog, c),
                    weight: *w,
                    watch_port: *watch,
                })
                .collect(),
        ),
    }
}

// ------------------------------------------------------------------ batches

/// What to do after an update's ops succeeded.
pub(crate) enum Done {
    /// Nothing more; the update's result.
    Applied(Applied),
    /// A new entry (result: its handle).
    EntryAdded {
        table: u32,
        /// Ageing starts (tables with `support_timeout`).
        timed: bool,
    },
    /// An entry's timeout was set (result: its handle).
    TimeoutSet { table: u32 },
    /// An entry was deleted (result: its handle).
    EntryDeleted { table: u32 },
    /// A table was cleared.
    TableCleared { table: u32 },
    /// A new member (result: its id).
    Member,
    /// A new group (result: its id) and its metadata.
    Group {
        profile: u32,
        meta: profiles::GroupMeta,
    },
    /// A group's members were set: its metadata.
    GroupMembers {
        profile: u32,
        group: u32,
        meta: profiles::GroupMeta,
    },
    /// A group was deleted.
    GroupDeleted { profile: u32, group: u32 },
    /// A write to extern state or digest bookkeeping, made after the publication
    /// (the handle of a `FindEntry` op, if any, is passed to it).
    Later(externs::Later),
}

/// One update, prepared.
pub(crate) struct Prepared {
    /// Its control-state ops (all or nothing).
    pub ops: PreparedOps,
    /// What to do after.
    pub done: Done,
}

/// The ops of a prepared update (one, most often: no allocation for it).
pub(crate) enum PreparedOps {
    /// None.
    None,
    /// One.
    One(Op),
    /// Several.
    Many(Vec<Op>),
}

impl PreparedOps {
    fn is_empty(&self) -> bool {
        matches!(self, PreparedOps::None)
    }

    fn len(&self) -> usize {
        match self {
            PreparedOps::None => 0,
            PreparedOps::One(_) => 1,
            PreparedOps::Many(v) => v.len(),
        }
    }

    /// Moves the ops to the end of `out`.
    fn move_into(&mut self, out: &mut Vec<Op>) {
        match std::mem::replace(self, PreparedOps::None) {
            PreparedOps::None => {}
            PreparedOps::One(op) => out.push(op),
            PreparedOps::Many(v) => out.extend(v),
        }
    }
}

impl From<Vec<Op>> for PreparedOps {
    fn from(mut v: Vec<Op>) -> PreparedOps {
        match v.len() {
            0 => PreparedOps::None,
            1 => v.pop().map_or(PreparedOps::None, PreparedOps::One),
            _ => PreparedOps::Many(v),
        }
    }
}

impl Prepared {
    pub(crate) fn op(op: Op, done: Done) -> Prepared {
        Prepared {
            ops: PreparedOps::One(op),
            done,
        }
    }

    pub(crate) fn ops(ops: Vec<Op>, done: Done) -> Prepared {
        Prepared {
            ops: ops.into(),
            done,
        }
    }

    pub(crate) fn none(done: Done) -> Prepared {
        Prepared {
            ops: PreparedOps::None,
            done,
        }
    }
}

/// State shared by the updates of one batch while they are prepared: working copies
/// of the state that only they change.
pub(crate) struct BatchCtx {
    /// The program.
    pub prog: Arc<Program>,
    /// The PRE as the batch changes it (taken from the published state when first
    /// needed).
    pub pre: Option<Pre>,
    /// Clone sessions as the batch changes them (None: unchanged).
    pub mirror: Option<BTreeMap<u32, MirrorSession>>,
    /// Whether the batch has one update (checks on the published state may then be
    /// made in bmv2's order before the ones that need only the program).
    pub single: bool,
}

impl Switch {
    /// The program model, or the no-pipeline error.
    pub(crate) fn need_schema(&self) -> Result<Arc<Schema>, RuntimeError> {
        self.schema.clone().ok_or_else(RuntimeError::no_pipeline)
    }

    /// Reads the control state as the runtime sees it.
    pub(crate) fn read_cs<R>(&self, f: impl FnOnce(&ControlState) -> R) -> Result<R, RuntimeError> {
        self.with_state(f)
            .ok_or_else(|| RuntimeError::internal(STATE_GONE))
    }

    /// "table IngressImpl.dmac" (for messages; formatted once per program, as every
    /// update of a batch asks for it).
    pub(crate) fn table_what(&self, t: u32) -> Arc<str> {
        let prog = &self.engine.prog;
        let key = Arc::as_ptr(prog) as usize;
        if let Ok(mut c) = self.table_whats.lock() {
            if c.0 != key {
                *c = (
                    key,
                    prog.tables
                        .iter()
                        .map(|ti| Arc::from(format!("table {}", ti.name)))
                        .collect(),
                );
            }
            if let Some(w) = c.1.get(t as usize) {
                return w.clone();
            }
        }
        Arc::from(format!("table {t}"))
    }

    /// Applies one op and publishes it, mapping failures onto runtime errors.
    pub(crate) fn apply_op(&mut self, what: &str, op: Op) -> Result<OpResult, RuntimeError> {
        let r = self.apply(op);
        if r.is_ok() {
            Ok(r)
        } else {
            Err(op_error(what, &r))
        }
    }

    /// [`Runtime::write`](p4jet_runtime::Runtime::write).
    pub(crate) fn write_batch(
        &mut self,
        updates: Vec<Update>,
        atomicity: Atomicity,
    ) -> BatchResult {
        let n = updates.len();
        if let Err(e) = self.need_schema() {
            return BatchResult::all_failed(n, &e);
        }
        let atomic = atomicity.all_or_nothing();
        let mut ctx = BatchCtx {
            prog: self.engine.prog.clone(),
            pre: None,
            mirror: None,
            single: n == 1,
        };
        let mut prepared: Vec<Result<Prepared, RuntimeError>> = Vec::with_capacity(n);
        for u in updates {
            let p = self.prepare(&mut ctx, u);
            let failed = p.is_err();
            prepared.push(p);
            if failed && atomic {
                break;
            }
        }
        if atomic && prepared.iter().any(Result::is_err) {
            // nothing was applied
            let failed = prepared.iter().position(Result::is_err).unwrap_or(0);
            let mut results: Vec<Result<Applied, RuntimeError>> =
                (0..n).map(|_| Err(RuntimeError::aborted(failed))).collect();
            if let Some(Err(e)) = prepared.into_iter().nth(failed) {
                results[failed] = Err(e);
            }
            return BatchResult { results };
        }
        // the ops of every update, in order, then the working copies
        let mut ops: Vec<Op> = Vec::with_capacity(n);
        let mut ends: Vec<u32> = Vec::with_capacity(n);
        let mut spans: Vec<Option<(usize, usize)>> = Vec::with_capacity(n);
        for p in &mut prepared {
            match p {
                Ok(p) if !p.ops.is_empty() => {
                    let (at, len) = (ops.len(), p.ops.len());
                    p.ops.move_into(&mut ops);
                    spans.push(Some((at, len)));
                    ends.push(ops.len() as u32);
                }
                _ => spans.push(None),
            }
        }
        let mut extra = Vec::new();
        if let Some(pre) = ctx.pre.take() {
            extra.push(Op::SetPre(pre));
        }
        if let Some(mirror) = ctx.mirror.take() {
            match self.read_cs(|cs| cs.mirror.clone()) {
                Ok(old) => {
                    for id in old.keys() {
                        if !mirror.contains_key(id) {
                            extra.push(Op::SetMirror {
                                id: *id,
                                session: None,
                            });
                        }
                    }
                    for (id, s) in mirror {
                        if old.get(&id) != Some(&s) {
                            extra.push(Op::SetMirror {
                                id,
                                session: Some(s),
                            });
                        }
                    }
                }
                Err(e) => return BatchResult::all_failed(n, &e),
            }
        }
        if !extra.is_empty() {
            ops.extend(extra);
            ends.push(ops.len() as u32);
        }
        let results: Vec<OpResult> = if ops.is_empty() {
            Vec::new()
        } else {
            self.apply(Op::Batch { ops, ends, atomic });
            match self.read_cs(|cs| cs.results.clone()) {
                Ok(r) => r,
                Err(e) => return BatchResult::all_failed(n, &e),
            }
        };
        // per update: its ops' results
        let mut out: Vec<Result<(Done, Option<u32>), RuntimeError>> = Vec::with_capacity(n);
        let mut first_failed: Option<usize> = None;
        for (i, (p, span)) in prepared.into_iter().zip(spans).enumerate() {
            let p = match p {
                Ok(p) => p,
                Err(e) => {
                    out.push(Err(e));
                    continue;
                }
            };
            let Some((at, len)) = span else {
                out.push(Ok((p.done, None)));
                continue;
            };
            let rs = results.get(at..at + len).unwrap_or(&[]);
            match rs.iter().find(|r| !r.is_ok()) {
                Some(bad) if !matches!(bad, OpResult::Refused(Refusal::Aborted)) => {
                    first_failed.get_or_insert(i);
                    out.push(Err(op_error(&p.done.what(self), bad)));
                }
                Some(_) => out.push(Err(RuntimeError::aborted(first_failed.unwrap_or(i)))),
                None if rs.len() < len => {
                    out.push(Err(RuntimeError::internal(STATE_GONE)));
                }
                None => {
                    // the handle the update's first op gave (entry, member, group)
                    let h = rs.iter().find_map(|r| match r {
                        OpResult::Handle(h) => Some(*h),
                        _ => None,
                    });
                    out.push(Ok((p.done, h)));
                }
            }
        }
        if atomic && let Some(f) = first_failed {
            let results = out
                .into_iter()
                .enumerate()
                .map(|(i, r)| match r {
                    Err(e) if i == f => Err(e),
                    _ => Err(RuntimeError::aborted(f)),
                })
                .collect();
            return BatchResult { results };
        }
        let results = out
            .into_iter()
            .map(|r| r.and_then(|(done, h)| self.finish(done, h)))
            .collect();
        BatchResult { results }
    }

    /// What a succeeded update still has to do; its result.
    fn finish(&mut self, done: Done, h: Option<u32>) -> Result<Applied, RuntimeError> {
        let handle = || h.ok_or_else(|| RuntimeError::internal("an op gave no handle"));
        match done {
            Done::Applied(a) => Ok(a),
            Done::EntryAdded { table, timed } => {
                let h = handle()?;
                self.entry_added(table, h, timed);
                Ok(Applied::Entry(p4jet_runtime::EntryHandle(h)))
            }
            Done::TimeoutSet { table } => {
                let h = handle()?;
                self.record_entry_time(table, h);
                Ok(Applied::Done)
            }
            Done::EntryDeleted { table } => {
                let slot = handle()? & 0x00ff_ffff;
                self.rt.entry_times_ms.remove(&(table, slot));
                self.rt.idle_reported.remove(&(table, slot));
                Ok(Applied::Done)
            }
            Done::TableCleared { table } => {
                self.rt.entry_times_ms.retain(|(t, _), _| *t != table);
                self.rt.idle_reported.retain(|(t, _), _| *t != table);
                Ok(Applied::Done)
            }
            Done::Member => Ok(Applied::Member(p4jet_runtime::MemberId(handle()?))),
            Done::Group { profile, meta } => {
                let g = handle()?;
                self.rt.group_meta.insert((profile, g), meta);
                Ok(Applied::Group(p4jet_runtime::GroupId(g)))
            }
            Done::GroupMembers {
                profile,
                group,
                meta,
            } => {
                let max = self
                    .rt
                    .group_meta
                    .get(&(profile, group))
                    .map_or(0, |m| m.max_size);
                self.rt.group_meta.insert(
                    (profile, group),
                    profiles::GroupMeta {
                        max_size: max,
                        ..meta
                    },
                );
                Ok(Applied::Done)
            }
            Done::GroupDeleted { profile, group } => {
                self.rt.group_meta.remove(&(profile, group));
                Ok(Applied::Done)
            }
            Done::Later(l) => self.later(l, h),
        }
    }

    /// One update's ops and follow-up.
    fn prepare(&mut self, ctx: &mut BatchCtx, u: Update) -> Result<Prepared, RuntimeError> {
        match u {
            Update::AddEntry { .. }
            | Update::ModifyEntry { .. }
            | Update::DeleteEntry { .. }
            | Update::ClearEntries { .. }
            | Update::SetDefault { .. }
            | Update::ResetDefault { .. }
            | Update::SetEntryTimeout { .. }
            | Update::ReserveEntries { .. }
            | Update::WriteDirectCounter { .. }
            | Update::ResetDirectCounters { .. }
            | Update::SetDirectMeter { .. } => self.prepare_table(ctx, u),
            Update::AddMember { .. }
            | Update::ModifyMember { .. }
            | Update::DeleteMember { .. }
            | Update::AddGroup { .. }
            | Update::DeleteGroup { .. }
            | Update::AddToGroup { .. }
            | Update::RemoveFromGroup { .. }
            | Update::SetGroupMembers { .. } => self.prepare_profile(ctx, u),
            Update::WriteCounter { .. }
            | Update::ResetCounter { .. }
            | Update::SetMeter { .. }
            | Update::WriteRegister { .. }
            | Update::ResetRegister { .. }
            | Update::AddValueSetMember { .. }
            | Update::RemoveValueSetMember { .. }
            | Update::ClearValueSet { .. } => self.prepare_extern(ctx, u),
            Update::ConfigureDigest { .. } | Update::AckDigest { .. } => {
                self.prepare_digest(ctx, u)
            }
            Update::McGroupCreate { .. }
            | Update::McGroupDestroy { .. }
            | Update::McNodeCreate { .. }
            | Update::McNodeUpdate { .. }
            | Update::McNodeAssociate { .. }
            | Update::McNodeDissociate { .. }
            | Update::McNodeDestroy { .. }
            | Update::McSetLag { .. }
            | Update::WriteMulticastGroup { .. }
            | Update::DeleteMulticastGroup { .. }
            | Update::WriteCloneSession { .. }
            | Update::DeleteCloneSession { .. } => self.prepare_pre(ctx, u),
        }
    }

    /// The table of an id, or `INVALID_TABLE_NAME`.
    pub(crate) fn table_index(&self, t: TableId) -> Result<u32, RuntimeError> {
        if (t.0 as usize) < self.engine.prog.tables.len() {
            Ok(t.0)
        } else {
            Err(RuntimeError::not_found(format!("no table {}", t.0))
                .with_bmv2(TC::INVALID_TABLE_NAME))
        }
    }
}

impl Done {
    /// What the update was about (for error messages).
    fn what(&self, sw: &Switch) -> String {
        match self {
            Done::EntryAdded { table, .. }
            | Done::TimeoutSet { table }
            | Done::EntryDeleted { table }
            | Done::TableCleared { table } => sw.table_what(*table).to_string(),
            Done::Group { profile, .. }
            | Done::GroupMembers { profile, .. }
            | Done::GroupDeleted { profile, .. } => profiles::profile_what(sw, *profile),
            Done::Member => "action profile".into(),
            Done::Applied(_) => "update".into(),
            Done::Later(l) => l.what(sw),
        }
    }
}

/// CRC parameters of the engine for a model configuration.
pub(crate) fn crc_params(c: &p4jet_runtime::CrcConfig) -> CrcParams {
    CrcParams {
        width: c.width,
        poly: c.polynomial,
        init: c.initial_remainder,
        xor_out: c.final_xor_value,
        refin: c.data_reflected,
        refout: c.remainder_reflected,
    }
}

// ------------------------------------------------------------------ the trait

impl p4jet_runtime::Runtime for Switch {
    fn schema(&self) -> Option<Arc<Schema>> {
        self.schema.clone()
    }

    fn pipeline(&mut self) -> Result<p4jet_runtime::PipelineInfo, RuntimeError> {
        self.pipeline_info()
    }

    fn set_pipeline(&mut self, action: p4jet_runtime::PipelineAction) -> Result<(), RuntimeError> {
        self.set_pipeline_action(action)
    }

    fn write(&mut self, updates: Vec<Update>, atomicity: Atomicity) -> BatchResult {
        self.write_batch(updates, atomicity)
    }

    fn entry_count(&mut self, table: TableId) -> Result<usize, RuntimeError> {
        self.read_entry_count(table)
    }

    fn table_entries(
        &mut self,
        table: TableId,
        from: p4jet_runtime::EntryCursor,
        limit: usize,
    ) -> Result<p4jet_runtime::EntryPage, RuntimeError> {
        self.read_table_entries(table, from, limit)
    }

    fn table_entry(
        &mut self,
        table: TableId,
        entry: &p4jet_runtime::EntryRef,
    ) -> Result<p4jet_runtime::TableEntry, RuntimeError> {
        self.read_table_entry(table, entry)
    }

    fn default_entry(
        &mut self,
        table: TableId,
    ) -> Result<Option<p4jet_runtime::EntryAction>, RuntimeError> {
        self.read_default_entry(table)
    }

    fn direct_counter(
        &mut self,
        table: TableId,
        entry: &p4jet_runtime::EntryRef,
    ) -> Result<p4jet_runtime::CounterValue, RuntimeError> {
        self.read_direct_counter(table, entry)
    }

    fn direct_meter(
        &mut self,
        table: TableId,
        entry: &p4jet_runtime::EntryRef,
    ) -> Result<p4jet_runtime::MeterConfig, RuntimeError> {
        self.read_direct_meter(table, entry)
    }

    fn members(
        &mut self,
        profile: p4jet_runtime::ProfileId,
    ) -> Result<Vec<p4jet_runtime::Member>, RuntimeError> {
        self.read_members(profile)
    }

    fn member(
        &mut self,
        profile: p4jet_runtime::ProfileId,
        member: p4jet_runtime::MemberId,
    ) -> Result<p4jet_runtime::Member, RuntimeError> {
        self.read_member(profile, member)
    }

    fn groups(
        &mut self,
        profile: p4jet_runtime::ProfileId,
    ) -> Result<Vec<p4jet_runtime::Group>, RuntimeError> {
        self.read_groups(profile)
    }

    fn group(
        &mut self,
        profile: p4jet_runtime::ProfileId,
        group: p4jet_runtime::GroupId,
    ) -> Result<p4jet_runtime::Group, RuntimeError> {
        self.read_group(profile, group)
    }

    fn counters(
        &mut self,
        counter: p4jet_runtime::CounterId,
        start: u32,
        end: u32,
    ) -> Result<Vec<p4jet_runtime::CounterValue>, RuntimeError> {
        self.read_counters(counter, start, end)
    }

    fn meter(
        &mut self,
        meter: p4jet_runtime::MeterId,
        index: u32,
    ) -> Result<p4jet_runtime::MeterConfig, RuntimeError> {
        self.read_meter(meter, index)
    }

    fn registers(
        &mut self,
        register: p4jet_runtime::RegisterId,
        start: u32,
        end: u32,
    ) -> Result<Vec<Bytes>, RuntimeError> {
        self.read_registers(register, start, end)
    }

    fn value_set(
        &mut self,
        value_set: p4jet_runtime::ValueSetId,
    ) -> Result<Vec<Bytes>, RuntimeError> {
        self.read_value_set(value_set)
    }

    fn pre(&mut self) -> Result<p4jet_runtime::PreState, RuntimeError> {
        self.read_pre()
    }

    fn clone_session(
        &mut self,
        id: p4jet_runtime::SessionId,
    ) -> Result<p4jet_runtime::CloneSession, RuntimeError> {
        self.read_clone_session(id)
    }

    fn clone_sessions(&mut self) -> Result<Vec<p4jet_runtime::CloneSession>, RuntimeError> {
        self.read_clone_sessions()
    }

    fn digest_config(
        &mut self,
        digest: p4jet_runtime::DigestId,
    ) -> Result<p4jet_runtime::DigestConfig, RuntimeError> {
        self.read_digest_config(digest)
    }

    fn poll_digests(&mut self) -> Result<Vec<p4jet_runtime::DigestList>, RuntimeError> {
        self.need_schema()?;
        Ok(self.poll_digests_now())
    }

    fn digest_log(
        &mut self,
        digest: Option<p4jet_runtime::DigestId>,
        count: usize,
    ) -> Result<p4jet_runtime::DigestLog, RuntimeError> {
        self.read_digest_log(digest, count)
    }

    fn poll_idle_timeouts(&mut self) -> Result<Vec<p4jet_runtime::IdleTimeout>, RuntimeError> {
        self.collect_idle_timeouts()
    }

    fn info(&mut self) -> Result<p4jet_runtime::SwitchInfo, RuntimeError> {
        Ok(self.switch_info())
    }

    fn clock(&mut self) -> Result<p4jet_runtime::ClockReading, RuntimeError> {
        Ok(self.clock_reading())
    }

    fn ports(&mut self) -> Result<Vec<p4jet_runtime::PortInfo>, RuntimeError> {
        Ok(self.port_list())
    }

    fn port_counters(
        &mut self,
        port: p4jet_runtime::PortId,
    ) -> Result<p4jet_runtime::PortCounters, RuntimeError> {
        Ok(self.read_port_counters(port))
    }

    fn packet_books(&mut self) -> Result<String, RuntimeError> {
        Ok(self.books_json().to_string())
    }

    fn workers(&mut self) -> Result<p4jet_runtime::Workers, RuntimeError> {
        let mut w = self.rt.workers.clone().ok_or_else(no_workers)?;
        if let Some(n) = self.rt.workers_request {
            w.requested = n;
        }
        Ok(w)
    }

    fn set_workers(&mut self, count: u32) -> Result<(), RuntimeError> {
        let w = self.rt.workers.as_ref().ok_or_else(no_workers)?;
        if count == 0 || count > w.max {
            return Err(RuntimeError::out_of_range(format!(
                "{count} workers: this switch runs 1 to {} (--max-workers)",
                w.max
            ))
            .with_bmv2(p4jet_runtime::bmv2::Bmv2Code::DevMgr(
                p4jet_runtime::bmv2::DevMgrErrorCode::ERROR,
            )));
        }
        self.rt.workers_request = Some(count);
        Ok(())
    }

    fn add_port(&mut self, port: p4jet_runtime::PortInfo) -> Result<(), RuntimeError> {
        self.add_port_entry(port)
    }

    fn remove_port(&mut self, port: p4jet_runtime::PortId) -> Result<(), RuntimeError> {
        self.remove_port_entry(port)
    }

    fn set_queue(
        &mut self,
        which: p4jet_runtime::QueueSelector,
        setting: p4jet_runtime::QueueSetting,
    ) -> Result<(), RuntimeError> {
        self.configure_queue(which, setting)
    }

    fn set_crc(
        &mut self,
        calc: p4jet_runtime::CalcId,
        config: p4jet_runtime::CrcConfig,
    ) -> Result<(), RuntimeError> {
        self.set_crc_config(calc, config)
    }

    fn set_toeplitz_key(
        &mut self,
        calc: p4jet_runtime::CalcId,
        key: Bytes,
    ) -> Result<(), RuntimeError> {
        self.set_toeplitz(calc, key)
    }

    fn reset_state(&mut self) -> Result<(), RuntimeError> {
        self.reset_runtime_state()
    }

    fn serialize_state(&mut self) -> Result<String, RuntimeError> {
        self.dump_state()
    }
}

/// The error of the worker calls on a switch that runs no forwarding threads.
fn no_workers() -> RuntimeError {
    RuntimeError::precondition("this switch runs no forwarding workers (only `p4jet run` does)")
        .with_bmv2(p4jet_runtime::bmv2::Bmv2Code::DevMgr(
            p4jet_runtime::bmv2::DevMgrErrorCode::ERROR,
        ))
}
