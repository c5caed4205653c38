//! The bmv2 runtime API ([`RuntimeApi`]) on a [`Switch`].
//!
//! Every RPC of the Thrift services `standard`, `simple_pre_lag` and `simple_switch` is
//! implemented with simple_switch's semantics: the same checks in the same order, the
//! same error codes, the same handle numbering. Control-plane writes go through
//! [`Switch::apply`] (the `left-right` writer of the control state); extern state
//! (counters, meters, registers) is written in place; queue limits go to
//! [`Switch::queues`].
//!
//! A few things the data plane does not need live in [`RuntimeState`] (the `rt` field of
//! the switch): the port list of the device manager, learning buffers awaiting acks,
//! Toeplitz keys, entry ageing start times, management information and JSON ids.
//!
//! Deliberate choices where bmv2 has no error to mirror:
//! * unknown names in the read RPCs (`bm_mt_get_entries`, `bm_mt_act_prof_get_members`,
//!   ...) answer `INVALID_TABLE_NAME` / `INVALID_ACTION_PROFILE_NAME` where bmv2 answers
//!   an empty structure;
//! * requests bmv2 answers by crashing or by throwing a C++ exception (a malformed port
//!   map, a priority queue that does not exist, a parser value set value of the wrong
//!   length) answer an error: [`ApiError::Internal`] where bmv2 throws (a Thrift server
//!   sends a `TApplicationException`, as bmv2 does), the `ERROR` code where bmv2 aborts.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use md5::{Digest as _, Md5};
use num_bigint::BigUint;
use num_traits::One;
use p4jet_control::api::{
    ApiError, ApiResult, BmActionEntry, BmAddEntryOptions, BmAddEntryRequest, BmConfig,
    BmCounterValue, BmCrc16Config, BmCrc32Config, BmEntryHandle, BmGroupHandle, BmLearningBufferId,
    BmLearningListId, BmLearningSampleId, BmMatchParam, BmMcL1Handle, BmMcLagIndex, BmMcMgrp,
    BmMcMgrpHandle, BmMcRid, BmMemberHandle, BmMeterRateConfig, BmMtActProfGroup,
    BmMtActProfMember, BmMtEntry, BmMtEntryLife, BmParseVSetValue, BmRegisterValue, BmResourceType,
    CounterOperationErrorCode, CrcErrorCode, DevMgrErrorCode, DevMgrPortInfo, IdLookupErrorCode,
    InvalidCounterOperation, InvalidCrcOperation, InvalidDevMgrOperation, InvalidIdLookup,
    InvalidLearnOperation, InvalidMcOperation, InvalidMeterOperation, InvalidMirroringOperation,
    InvalidParseVSetOperation, InvalidRegisterOperation, InvalidSwapOperation,
    InvalidTableOperation, InvalidToeplitzHashOperation, LearnOperationErrorCode,
    McOperationErrorCode, MeterOperationErrorCode, MirroringOperationErrorCode,
    MirroringSessionConfig, ParseVSetOperationErrorCode, RegisterOperationErrorCode, RuntimeApi,
    SwapOperationErrorCode, TableOperationErrorCode, ToeplitzHashErrorCode, port_map_to_ports,
};
use p4jet_engine::hash::CrcParams;
use p4jet_engine::state::{
    ControlState, EntryAction, EntryValue, McNode, MeterCell, MirrorSession, NewEntry, TableState,
    handle_index,
};
use p4jet_engine::{Op, OpResult};
use p4jet_ir::{Action, ActionCall, HashAlgo, KeySource, MatchKind, Program, TableInfo, TableKind};
use p4jet_tables::{EntryHandle, FieldMatch, MatchKey, Table, TableError};

use crate::Switch;

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
pub const MAX_MIRROR_SESSION_ID: i32 = 0x7fff;
/// Default learn list flush timeout.
pub const DEFAULT_LEARN_TIMEOUT_MS: u32 = 1000;
/// Default maximum number of samples per learning message.
pub const DEFAULT_LEARN_MAX_SAMPLES: usize = 16;
/// Most learning notifications kept for `digest_dump` (older ones are forgotten).
pub const LEARN_LOG_CAPACITY: usize = 256;

type TC = TableOperationErrorCode;
type TErr = ApiError<InvalidTableOperation>;

/// A port known to the device manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortEntry {
    /// Interface name.
    pub iface: String,
    /// Pcap file given to `port_add`, if any.
    pub pcap: Option<String>,
}

/// A port change requested through the runtime API; the owner of the I/O (the binary)
/// drains [`RuntimeState::port_events`] and opens or closes the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortEvent {
    /// `bm_dev_mgr_add_port`.
    Add {
        /// Port number.
        port: u32,
        /// Interface name.
        iface: String,
        /// Pcap file, if any.
        pcap: Option<String>,
    },
    /// `bm_dev_mgr_remove_port`.
    Remove {
        /// Port number.
        port: u32,
    },
}

/// One learning notification: what bmv2 sends on its notification socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnMessage {
    /// Learn list id.
    pub list_id: u32,
    /// Learn list name.
    pub name: String,
    /// Buffer id, to be acknowledged with `bm_learning_ack(_buffer)`.
    pub buffer_id: i64,
    /// The samples (each field big-endian, byte-padded, concatenated).
    pub samples: Vec<Vec<u8>>,
}

#[derive(Debug, Clone)]
struct LearnListState {
    timeout_ms: u32,
    max_samples: usize,
    next_buffer: i64,
    /// Samples sent and not acknowledged, per buffer id (`None` once acknowledged).
    unacked: BTreeMap<i64, Vec<Option<Vec<u8>>>>,
    /// When [`Switch::poll_learn_messages`] first saw samples of this list waiting
    /// (None while none wait): the list's timeout runs from there.
    waiting_since: Option<Instant>,
}

impl Default for LearnListState {
    fn default() -> Self {
        LearnListState {
            timeout_ms: DEFAULT_LEARN_TIMEOUT_MS,
            max_samples: DEFAULT_LEARN_MAX_SAMPLES,
            next_buffer: 0,
            unacked: BTreeMap::new(),
            waiting_since: None,
        }
    }
}

/// JSON ids of named resources (for `bm_get_id_from_name`).
#[derive(Debug, Clone, Default)]
struct IdMaps {
    tables: HashMap<String, i32>,
    profiles: HashMap<String, i32>,
    counters: HashMap<String, i32>,
    meters: HashMap<String, i32>,
    registers: HashMap<String, i32>,
    learn_lists: HashMap<String, i32>,
}

/// Runtime-API state that is neither control state nor extern state.
#[derive(Debug, Clone)]
pub struct RuntimeState {
    /// `--device-id` (reported by `bm_mgmt_get_info`).
    pub device_id: i64,
    /// `--thrift-port`.
    pub thrift_port: i32,
    /// Notifications socket address.
    pub notifications_socket: Option<String>,
    /// Event logger address.
    pub elogger_socket: Option<String>,
    /// Debugger address.
    pub debugger_socket: Option<String>,
    /// Size of the multicast group table (`--max-mc-groups`).
    pub max_mc_groups: usize,
    /// Most PRE nodes (`--max-l1-entries`).
    pub max_mc_l1_entries: usize,
    /// Most PRE port maps (`--max-l2-entries`; one per node).
    pub max_mc_l2_entries: usize,
    /// Ports of the device manager (the binary registers the ports it opened).
    pub ports: BTreeMap<u32, PortEntry>,
    /// Port additions and removals requested through the API, oldest first.
    pub port_events: Vec<PortEvent>,
    learn: BTreeMap<u32, LearnListState>,
    /// The latest learning notifications, oldest first (at most [`LEARN_LOG_CAPACITY`]).
    pub learn_log: VecDeque<LearnMessage>,
    toeplitz_keys: BTreeMap<u32, Vec<u8>>,
    /// (table, handle index) → time (ms) the entry was added or its TTL set.
    entry_times_ms: HashMap<(u32, u32), u64>,
    ids: Option<Arc<IdMaps>>,
}

impl Default for RuntimeState {
    fn default() -> Self {
        RuntimeState {
            device_id: 0,
            thrift_port: 9090,
            notifications_socket: Some("ipc:///tmp/bmv2-0-notifications.ipc".into()),
            elogger_socket: None,
            debugger_socket: None,
            max_mc_groups: MAX_MC_GROUPS,
            max_mc_l1_entries: MAX_MC_L1_ENTRIES,
            max_mc_l2_entries: MAX_MC_L2_ENTRIES,
            ports: BTreeMap::new(),
            port_events: Vec::new(),
            learn: BTreeMap::new(),
            learn_log: VecDeque::new(),
            toeplitz_keys: BTreeMap::new(),
            entry_times_ms: HashMap::new(),
            ids: None,
        }
    }
}

impl RuntimeState {
    /// Forgets what belongs to the previous program (after `bm_load_new_config`); ports,
    /// device information and limits stay.
    pub(crate) fn program_changed(&mut self) {
        self.learn.clear();
        self.learn_log.clear();
        self.toeplitz_keys.clear();
        self.entry_times_ms.clear();
        self.ids = None;
    }

    /// The Toeplitz key set for a calculation (by index), if any. The engine does not
    /// compute Toeplitz hashes yet (it uses CRC-32 for them); the key is kept for it.
    pub fn toeplitz_key(&self, calc: u32) -> Option<&[u8]> {
        self.toeplitz_keys.get(&calc).map(Vec::as_slice)
    }

    /// Flush timeout and maximum samples per message of a learn list.
    pub fn learn_settings(&self, list_id: u32) -> (u32, usize) {
        self.learn
            .get(&list_id)
            .map(|l| (l.timeout_ms, l.max_samples))
            .unwrap_or((DEFAULT_LEARN_TIMEOUT_MS, DEFAULT_LEARN_MAX_SAMPLES))
    }
}

// ----------------------------------------------------------------------------- helpers

/// A learning sample as `{name=0x.., ...}` when `fields` (name, bits; each field
/// byte-padded in the sample) matches its length, else `{0x<whole sample>}`.
fn describe_sample(fields: Option<&[(String, u32)]>, sample: &[u8]) -> String {
    let hex = |b: &[u8]| {
        b.iter().fold(String::from("0x"), |mut s, x| {
            let _ = write!(s, "{x:02x}");
            s
        })
    };
    let bytes = |w: u32| w.div_ceil(8) as usize;
    match fields {
        Some(f)
            if !f.is_empty() && f.iter().map(|(_, w)| bytes(*w)).sum::<usize>() == sample.len() =>
        {
            let mut at = 0;
            let parts: Vec<String> = f
                .iter()
                .map(|(name, w)| {
                    let part = &sample[at..at + bytes(*w)];
                    at += part.len();
                    format!("{name}={}", hex(part))
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        _ => format!("{{{}}}", hex(sample)),
    }
}

fn internal<E>(msg: impl Into<String>) -> ApiError<E> {
    ApiError::Internal(msg.into())
}

const STATE_GONE: &str = "switch control state is gone";

fn table_error(e: &TableError) -> TC {
    match e {
        TableError::TableFull => TC::TABLE_FULL,
        TableError::DuplicateEntry => TC::DUPLICATE_ENTRY,
        TableError::InvalidHandle => TC::INVALID_HANDLE,
        TableError::ExpiredHandle => TC::EXPIRED_HANDLE,
        TableError::BadMatchKey(_) => TC::BAD_MATCH_KEY,
        TableError::InvalidSpec(_) => TC::ERROR,
    }
}

/// Copies a big-endian value into `dst` (the `ceil(width/8)` bytes of a parameter or a
/// field), keeping the low `width` bits, as storing into a `bit<width>` does.
fn fit_bytes(src: &[u8], width: u32, dst: &mut [u8]) {
    let n = dst.len().min(src.len());
    dst.fill(0);
    let dl = dst.len();
    dst[dl - n..].copy_from_slice(&src[src.len() - n..]);
    if !width.is_multiple_of(8)
        && let Some(b) = dst.first_mut()
    {
        *b &= (1u8 << (width % 8)) - 1;
    }
}

/// Packs action data into the engine's parameter blob; `None` when the number of
/// parameters is wrong (bmv2's `BAD_ACTION_DATA`). Values longer or shorter than the
/// parameter are reduced to its width, as bmv2 does when it uses them.
fn pack_action_data(action: &Action, data: &[Vec<u8>]) -> Option<Box<[u8]>> {
    if data.len() != action.params.len() {
        return None;
    }
    let mut blob = vec![0u8; action.data_bytes as usize];
    for (i, ((_, w), v)) in action.params.iter().zip(data).enumerate() {
        let off = action.param_offsets.get(i).copied().unwrap_or(0) as usize;
        let nb = w.div_ceil(8) as usize;
        if let Some(dst) = blob.get_mut(off..off + nb) {
            fit_bytes(v, *w, dst);
        }
    }
    Some(blob.into_boxed_slice())
}

/// [`pack_action_data`] of data the caller gives away: an action with one parameter
/// taking its whole blob keeps the parameter's bytes when they have its size.
fn pack_action_data_owned(action: &Action, mut data: Vec<Vec<u8>>) -> Option<Box<[u8]>> {
    if let ([(_, w)], [v]) = (&action.params[..], &mut data[..]) {
        let nb = w.div_ceil(8) as usize;
        if v.len() == nb
            && action.data_bytes as usize == nb
            && action.param_offsets.first().is_none_or(|o| *o == 0)
        {
            let mut v = std::mem::take(v);
            // fit_bytes of a value of the parameter's size: only the top bits go
            if !w.is_multiple_of(8)
                && let Some(b) = v.first_mut()
            {
                *b &= (1u8 << (w % 8)) - 1;
            }
            return Some(v.into_boxed_slice());
        }
    }
    pack_action_data(action, &data)
}

/// Action `a` of `prog` (the result of a name lookup), or `INVALID_ACTION_NAME`.
fn action_by_id(prog: &Program, a: Option<u32>) -> Result<(u32, &Action), TC> {
    let a = a.ok_or(TC::INVALID_ACTION_NAME)?;
    let action = prog
        .actions
        .get(a as usize)
        .ok_or(TC::INVALID_ACTION_NAME)?;
    Ok((a, action))
}

/// The parameters of an action call, one byte string per parameter.
fn unpack_action_data(action: &Action, blob: &[u8]) -> Vec<Vec<u8>> {
    action
        .params
        .iter()
        .enumerate()
        .map(|(i, (_, w))| {
            let off = action.param_offsets.get(i).copied().unwrap_or(0) as usize;
            let nb = w.div_ceil(8) as usize;
            blob.get(off..off + nb)
                .map(<[u8]>::to_vec)
                .unwrap_or_else(|| vec![0; nb])
        })
        .collect()
}

fn action_call_entry(prog: &Program, call: &ActionCall) -> BmActionEntry {
    match prog.actions.get(call.action as usize) {
        Some(a) => BmActionEntry::ActionData {
            action_name: a.name.clone(),
            action_data: unpack_action_data(a, &call.data),
        },
        None => BmActionEntry::None,
    }
}

fn entry_action_to_bm(prog: &Program, a: &EntryAction) -> BmActionEntry {
    match a {
        EntryAction::Direct(c) => action_call_entry(prog, c),
        EntryAction::Member(m) => BmActionEntry::MbrHandle(*m as i32),
        EntryAction::Group(g) => BmActionEntry::GrpHandle(*g as i32),
        EntryAction::OneShot(_) => BmActionEntry::None,
    }
}

/// Ternary and range tables store priorities (bmv2's `TernaryMatchKey`).
fn is_masked_table(ti: &TableInfo) -> bool {
    ti.keys.iter().any(|k| {
        matches!(
            k.kind,
            MatchKind::Ternary | MatchKind::Range | MatchKind::Optional
        )
    })
}

/// Builds the tables crate's key from Thrift match parameters: kinds must match the
/// table's (`BAD_MATCH_KEY` otherwise); byte lengths, prefix lengths and range bounds
/// are checked by the tables crate, which also clears the bits above the field width.
/// The static key mask (`f & CONST` keys) is applied to the value, as bmv2 does.
fn build_match_key(ti: &TableInfo, params: &[BmMatchParam], priority: i32) -> Result<MatchKey, TC> {
    if params.len() != ti.keys.len() {
        return Err(TC::BAD_MATCH_KEY);
    }
    build_match_key_owned(ti, params.to_vec(), priority)
}

/// [`build_match_key`] keeping the bytes of `params`.
fn build_match_key_owned(
    ti: &TableInfo,
    params: Vec<BmMatchParam>,
    priority: i32,
) -> Result<MatchKey, TC> {
    if params.len() != ti.keys.len() {
        return Err(TC::BAD_MATCH_KEY);
    }
    let mut fields = Vec::with_capacity(params.len());
    for (k, p) in ti.keys.iter().zip(params) {
        let is_valid_field = matches!(k.source, KeySource::Valid(_));
        let mut fm = match (k.kind, p) {
            (MatchKind::Valid, BmMatchParam::Valid { key }) => FieldMatch::Valid(key),
            (MatchKind::Exact, BmMatchParam::Exact { key }) => FieldMatch::Exact(key),
            // `$valid$` keys are exact matches on a 1-bit field; accept the VALID form too
            (MatchKind::Exact, BmMatchParam::Valid { key }) if is_valid_field => {
                FieldMatch::Exact(vec![u8::from(key)])
            }
            (MatchKind::Lpm, BmMatchParam::Lpm { key, prefix_length }) => FieldMatch::Lpm {
                value: key,
                prefix_len: u32::try_from(prefix_length).map_err(|_| TC::BAD_MATCH_KEY)?,
            },
            (MatchKind::Ternary | MatchKind::Optional, BmMatchParam::Ternary { key, mask }) => {
                FieldMatch::Ternary { value: key, mask }
            }
            (MatchKind::Range, BmMatchParam::Range { start, end }) => FieldMatch::Range {
                low: start,
                high: end,
            },
            _ => return Err(TC::BAD_MATCH_KEY),
        };
        if let Some(m) = &k.mask {
            let nb = k.width.div_ceil(8) as usize;
            let mb = m.to_bytes_be();
            let mut mask = vec![0u8; nb];
            fit_bytes(&mb, k.width, &mut mask);
            let apply = |v: &mut Vec<u8>| {
                if v.len() == nb {
                    for (a, b) in v.iter_mut().zip(&mask) {
                        *a &= b;
                    }
                }
            };
            match &mut fm {
                FieldMatch::Exact(v) => apply(v),
                FieldMatch::Lpm { value, .. } => apply(value),
                FieldMatch::Ternary { value, .. } => apply(value),
                // bmv2 masks the stored key bytes, which hold the range's start
                FieldMatch::Range { low, .. } => apply(low),
                FieldMatch::Valid(_) => {}
            }
        }
        fields.push(fm);
    }
    Ok(MatchKey {
        fields,
        priority: if is_masked_table(ti) { priority } else { -1 },
    })
}

fn match_key_to_bm(key: &MatchKey) -> Vec<BmMatchParam> {
    key.fields
        .iter()
        .map(|f| match f {
            FieldMatch::Exact(v) => BmMatchParam::Exact { key: v.clone() },
            FieldMatch::Valid(b) => BmMatchParam::Valid { key: *b },
            FieldMatch::Lpm { value, prefix_len } => BmMatchParam::Lpm {
                key: value.clone(),
                prefix_length: *prefix_len as i32,
            },
            FieldMatch::Ternary { value, mask } => BmMatchParam::Ternary {
                key: value.clone(),
                mask: mask.clone(),
            },
            FieldMatch::Range { low, high } => BmMatchParam::Range {
                start: low.clone(),
                end: high.clone(),
            },
        })
        .collect()
}

/// The live handle using the slot of `h`, whatever its version (bmv2's
/// `is_valid_handle`, used by counters, meters and ageing, ignores the version).
fn live_slot(entries: &Table<EntryValue>, h: u32) -> Option<EntryHandle> {
    let idx = h & 0x00ff_ffff;
    (0..=255u32)
        .map(|v| (v << 24) | idx)
        .find(|c| entries.get(*c).is_some())
}

/// The error for a handle that [`Table::get`] rejects.
fn handle_error(entries: &Table<EntryValue>, h: u32) -> TC {
    if live_slot(entries, h).is_some() {
        TC::EXPIRED_HANDLE
    } else {
        TC::INVALID_HANDLE
    }
}

/// The JSON fragment `[1, 2]`.
fn json_list(v: impl IntoIterator<Item = u32>) -> String {
    let items: Vec<String> = v.into_iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(", "))
}

fn now_epoch_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(2 + 2 * b.len());
    s.push_str("0x");
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

// ------------------------------------------------------------------- switch internals

impl Switch {
    fn prog(&self) -> Arc<Program> {
        self.engine.prog.clone()
    }

    fn read_cs<R, E>(&self, f: impl FnOnce(&ControlState) -> R) -> Result<R, ApiError<E>> {
        self.with_state(f).ok_or_else(|| internal(STATE_GONE))
    }

    /// Applies an op whose table errors are reported as such.
    fn apply_table_op(&mut self, op: Op) -> Result<Option<u32>, TErr> {
        match self.apply(op) {
            OpResult::Ok => Ok(None),
            OpResult::Handle(h) => Ok(Some(h)),
            OpResult::Table(e) => Err(table_error(&e).into()),
            OpResult::Refused(r) => Err(internal(format!("{r:?}"))),
            OpResult::Err(s) => Err(internal(s)),
        }
    }

    /// Applies an op that was validated beforehand: any error is internal.
    fn apply_checked<E>(&mut self, op: Op) -> Result<Option<u32>, ApiError<E>> {
        match self.apply(op) {
            OpResult::Ok => Ok(None),
            OpResult::Handle(h) => Ok(Some(h)),
            OpResult::Table(e) => Err(internal(e.to_string())),
            OpResult::Refused(r) => Err(internal(format!("{r:?}"))),
            OpResult::Err(s) => Err(internal(s)),
        }
    }

    fn now_ms(&self) -> u64 {
        self.clock.now_us() / 1000
    }

    /// Table index by name.
    fn table_index(&self, name: &str) -> Result<u32, TErr> {
        self.engine
            .prog
            .table_by_name(name)
            .ok_or_else(|| TC::INVALID_TABLE_NAME.into())
    }

    /// The action of a table's action list with this name.
    fn table_action(prog: &Program, ti: &TableInfo, name: &str) -> Option<u32> {
        ti.actions.iter().copied().find(|a| {
            prog.actions
                .get(*a as usize)
                .is_some_and(|x| x.name == name)
        })
    }

    /// Resolves `action_name` among the table's actions and packs the data.
    fn table_call(
        prog: &Program,
        ti: &TableInfo,
        action_name: &str,
        data: &[Vec<u8>],
    ) -> Result<ActionCall, TC> {
        let (a, action) = action_by_id(prog, Self::table_action(prog, ti, action_name))?;
        let data = pack_action_data(action, data).ok_or(TC::BAD_ACTION_DATA)?;
        Ok(ActionCall { action: a, data })
    }

    /// [`Switch::table_call`] keeping the bytes of `data` when it can.
    fn table_call_owned(
        prog: &Program,
        ti: &TableInfo,
        action_name: &str,
        data: Vec<Vec<u8>>,
    ) -> Result<ActionCall, TC> {
        let (a, action) = action_by_id(prog, Self::table_action(prog, ti, action_name))?;
        let data = pack_action_data_owned(action, data).ok_or(TC::BAD_ACTION_DATA)?;
        Ok(ActionCall { action: a, data })
    }

    fn record_entry_time(&mut self, table: u32, h: u32) {
        let now = self.now_ms();
        self.rt.entry_times_ms.insert((table, h & 0x00ff_ffff), now);
    }

    /// Adds an entry (any table type) and does what bmv2 does for a new entry: its
    /// direct counter starts at zero and its ageing clock starts now.
    fn add_entry_common(
        &mut self,
        table: u32,
        key: MatchKey,
        action: EntryAction,
    ) -> Result<BmEntryHandle, TErr> {
        let h = self
            .apply_table_op(Op::AddEntry {
                table,
                key,
                value: EntryValue {
                    action,
                    timeout_ms: 0,
                },
            })?
            .ok_or_else(|| internal("AddEntry returned no handle"))?;
        self.entry_added(table, h);
        Ok(h as BmEntryHandle)
    }

    /// What bmv2 does for a new entry besides adding it: its direct counter starts at
    /// zero and its ageing clock starts now (only read for tables that support
    /// timeouts).
    fn entry_added(&mut self, table: u32, h: EntryHandle) {
        if let Some(Some(cells)) = self.externs.direct_counters.get(table as usize)
            && let Some(c) = cells.get(handle_index(h))
        {
            c.write(0, 0);
        }
        if self
            .engine
            .prog
            .tables
            .get(table as usize)
            .is_some_and(|ti| ti.support_timeout)
        {
            self.record_entry_time(table, h);
        }
    }

    fn entry_to_bm(
        &self,
        prog: &Program,
        ti: &TableInfo,
        table: u32,
        h: EntryHandle,
        key: &MatchKey,
        v: &EntryValue,
    ) -> BmMtEntry {
        let life = (ti.support_timeout && v.timeout_ms != 0).then(|| {
            let start = self
                .rt
                .entry_times_ms
                .get(&(table, h & 0x00ff_ffff))
                .copied()
                .unwrap_or(0);
            BmMtEntryLife {
                timeout_ms: v.timeout_ms as i32,
                time_since_hit_ms: self.now_ms().saturating_sub(start) as i32,
            }
        });
        BmMtEntry {
            match_key: match_key_to_bm(key),
            options: BmAddEntryOptions {
                priority: Some(if is_masked_table(ti) {
                    key.priority
                } else {
                    -1
                }),
            },
            entry_handle: h as BmEntryHandle,
            action_entry: entry_action_to_bm(prog, &v.action),
            life,
        }
    }

    /// The default entry as the IDL reports it (`NONE` when bmv2 has no default entry:
    /// indirect tables without a default member or group).
    fn default_to_bm(prog: &Program, ti: &TableInfo, ts: &TableState) -> BmActionEntry {
        match (&ts.default, ti.kind) {
            (None, _) => BmActionEntry::None,
            (Some(EntryAction::Direct(_)), TableKind::Indirect | TableKind::IndirectWs) => {
                BmActionEntry::None
            }
            (Some(a), _) => entry_action_to_bm(prog, a),
        }
    }

    /// Action profile index by name.
    fn profile_index(&self, name: &str) -> Result<u32, TErr> {
        self.engine
            .prog
            .action_profiles
            .iter()
            .position(|p| p.name == name)
            .map(|i| i as u32)
            .ok_or_else(|| TC::INVALID_ACTION_PROFILE_NAME.into())
    }

    /// Resolves an action among the actions of the tables using a profile.
    fn profile_call(
        prog: &Program,
        prof: u32,
        action_name: &str,
        data: &[Vec<u8>],
    ) -> Result<ActionCall, TC> {
        let ap = prog
            .action_profiles
            .get(prof as usize)
            .ok_or(TC::INVALID_ACTION_PROFILE_NAME)?;
        let a = ap
            .tables
            .iter()
            .filter_map(|t| prog.tables.get(*t as usize))
            .find_map(|ti| Self::table_action(prog, ti, action_name));
        let (a, action) = action_by_id(prog, a)?;
        let data = pack_action_data(action, data).ok_or(TC::BAD_ACTION_DATA)?;
        Ok(ActionCall { action: a, data })
    }

    /// Whether an entry or a default of a table using the profile points to `target`.
    fn profile_index_used(
        prog: &Program,
        cs: &ControlState,
        prof: u32,
        target: &EntryAction,
    ) -> bool {
        let Some(ap) = prog.action_profiles.get(prof as usize) else {
            return false;
        };
        ap.tables.iter().any(|t| {
            cs.tables.get(*t as usize).is_some_and(|ts| {
                ts.default.as_ref() == Some(target)
                    || ts.entries.iter().any(|(_, _, v)| &v.action == target)
            })
        })
    }

    /// The table must be indirect (with selector if `ws`).
    fn indirect_table(&self, name: &str, ws: bool) -> Result<(u32, u32), TErr> {
        let t = self.table_index(name)?;
        let prog = self.prog();
        let ti = &prog.tables[t as usize];
        let ok = match ti.kind {
            TableKind::Simple => false,
            TableKind::Indirect => !ws,
            TableKind::IndirectWs => true,
        };
        if !ok {
            return Err(TC::WRONG_TABLE_TYPE.into());
        }
        let prof = ti
            .action_profile
            .ok_or_else(|| internal(format!("indirect table `{name}` has no action profile")))?;
        Ok((t, prof))
    }

    /// The table must be a direct (simple) table.
    fn direct_table(&self, name: &str) -> Result<u32, TErr> {
        let t = self.table_index(name)?;
        if self.engine.prog.tables[t as usize].kind != TableKind::Simple {
            return Err(TC::WRONG_TABLE_TYPE.into());
        }
        Ok(t)
    }

    fn member_exists(&self, prof: u32, m: u32) -> Result<bool, TErr> {
        self.read_cs(|cs| {
            cs.profiles
                .get(prof as usize)
                .is_some_and(|p| p.members.contains_key(&m))
        })
    }

    fn group_members(&self, prof: u32, g: u32) -> Result<Option<Vec<u32>>, TErr> {
        self.read_cs(|cs| {
            cs.profiles
                .get(prof as usize)
                .and_then(|p| p.groups.get(&g).cloned())
        })
    }

    /// Checks that `h` names a live entry of table `t`.
    fn check_entry(&self, t: u32, h: BmEntryHandle) -> Result<(), TErr> {
        let e = self.read_cs(|cs| {
            let ts = &cs.tables[t as usize];
            match ts.entries.get(h as u32) {
                Some(_) => None,
                None => Some(handle_error(&ts.entries, h as u32)),
            }
        })?;
        match e {
            Some(c) => Err(c.into()),
            None => Ok(()),
        }
    }

    /// The live handle of the slot of `h` (bmv2 ignores the version here).
    fn live_handle(&self, t: u32, h: BmEntryHandle) -> Result<EntryHandle, TErr> {
        self.read_cs(|cs| live_slot(&cs.tables[t as usize].entries, h as u32))?
            .ok_or_else(|| TC::INVALID_HANDLE.into())
    }

    fn set_entry_ttl_common(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        timeout_ms: i32,
    ) -> ApiResult<(), InvalidTableOperation> {
        let t = self.table_index(table_name)?;
        if !self.engine.prog.tables[t as usize].support_timeout {
            return Err(TC::AGEING_DISABLED.into());
        }
        let h = self.live_handle(t, entry_handle)?;
        self.apply_table_op(Op::SetTimeout {
            table: t,
            entry: p4jet_engine::state::EntryLoc::Handle(h),
            ms: u64::from(timeout_ms as u32),
        })?;
        self.record_entry_time(t, h);
        Ok(())
    }

    fn modify_pre<R>(
        &mut self,
        f: impl FnOnce(&mut p4jet_engine::state::Pre) -> Result<R, McOperationErrorCode>,
    ) -> ApiResult<R, InvalidMcOperation> {
        let mut pre = self.read_cs(|cs| cs.pre.clone())?;
        let r = f(&mut pre)?;
        self.apply_checked(Op::SetPre(pre))?;
        Ok(r)
    }

    /// Decodes a PRE port or LAG map. bmv2 throws (`std::invalid_argument`) on bad
    /// characters; maps have 512 positions.
    fn pre_map(map: &str, what: &str) -> Result<Vec<u32>, ApiError<InvalidMcOperation>> {
        let ports = port_map_to_ports(map).map_err(|e| internal(e.to_string()))?;
        if let Some(p) = ports.iter().find(|p| **p >= MC_PORT_MAP_SIZE) {
            return Err(internal(format!(
                "{what} map sets position {p}, maps have {MC_PORT_MAP_SIZE} positions"
            )));
        }
        Ok(ports)
    }

    fn meter_cells(
        &self,
        name: &str,
    ) -> Result<(&[Mutex<MeterCell>], u32), ApiError<InvalidMeterOperation>> {
        let prog = &self.engine.prog;
        let m = prog
            .meters
            .iter()
            .position(|m| m.name == name)
            .ok_or(MeterOperationErrorCode::INVALID_METER_NAME)?;
        let info = &prog.meters[m];
        let cells = match &info.direct {
            Some((t, _)) => self
                .externs
                .direct_meters
                .get(*t as usize)
                .and_then(|c| c.as_deref()),
            None => self.externs.meters.get(m).map(|c| &**c),
        };
        Ok((cells.unwrap_or(&[]), info.rate_count))
    }

    fn ids(&mut self) -> Result<Arc<IdMaps>, String> {
        if let Some(ids) = &self.rt.ids {
            return Ok(ids.clone());
        }
        let j = p4jet_json::parse(&self.json).map_err(|e| e.to_string())?;
        let mut ids = IdMaps::default();
        let id = |x: i64| i32::try_from(x).unwrap_or(i32::MAX);
        for pl in &j.pipelines {
            for ap in &pl.action_profiles {
                ids.profiles.insert(ap.name.clone(), id(ap.id));
            }
            for t in &pl.tables {
                ids.tables.insert(t.name.clone(), id(t.id));
                if t.action_profile.is_none()
                    && let Some(n) = &t.act_prof_name
                {
                    ids.profiles.insert(n.clone(), id(t.id));
                }
            }
        }
        for c in j.counter_arrays.iter().filter(|c| !c.is_direct) {
            ids.counters.insert(c.name.clone(), id(c.id));
        }
        for m in &j.meter_arrays {
            ids.meters.insert(m.name.clone(), id(m.id));
        }
        for r in &j.register_arrays {
            ids.registers.insert(r.name.clone(), id(r.id));
        }
        for l in &j.learn_lists {
            ids.learn_lists.insert(l.name.clone(), id(l.id));
        }
        let ids = Arc::new(ids);
        self.rt.ids = Some(ids.clone());
        Ok(ids)
    }

    fn learn_list(
        &mut self,
        list_id: BmLearningListId,
    ) -> Result<&mut LearnListState, ApiError<InvalidLearnOperation>> {
        let id = u32::try_from(list_id).map_err(|_| LearnOperationErrorCode::INVALID_LIST_ID)?;
        if !self.engine.prog.learn_lists.iter().any(|l| l.id == id) {
            return Err(LearnOperationErrorCode::INVALID_LIST_ID.into());
        }
        Ok(self.rt.learn.entry(id).or_default())
    }

    /// Takes all the learning samples waiting in the digest queue and groups them into
    /// notification messages (at most the list's buffer size each, bmv2's `max_samples`),
    /// each with a buffer id that `bm_learning_ack(_buffer)` can acknowledge, whatever
    /// the lists' timeouts. The messages are also kept for `digest_dump`.
    pub fn take_learn_messages(&mut self) -> Vec<LearnMessage> {
        self.learn_messages(None)
    }

    /// The learning notifications due at `now`, as bmv2's learning buffers send them:
    /// a list's waiting samples go out once there are `max_samples` of them or once
    /// they have waited the list's timeout (counted from the first poll that saw them;
    /// timeout 0 = only full buffers). `p4jet run` calls this a few times a second and
    /// logs each message; they are also kept for `digest_dump`.
    pub fn poll_learn_messages(&mut self, now: Instant) -> Vec<LearnMessage> {
        self.learn_messages(Some(now))
    }

    fn learn_messages(&mut self, now: Option<Instant>) -> Vec<LearnMessage> {
        let taken: VecDeque<crate::Digest> = {
            let Ok(mut d) = self.digests.lock() else {
                return vec![];
            };
            let mut waiting: BTreeMap<u32, usize> = BTreeMap::new();
            for x in &d.pending {
                *waiting.entry(x.list_id).or_default() += 1;
            }
            let due: BTreeSet<u32> = waiting
                .into_iter()
                .filter(|&(id, n)| {
                    let Some(now) = now else { return true };
                    let st = self.rt.learn.entry(id).or_default();
                    let since = *st.waiting_since.get_or_insert(now);
                    n >= st.max_samples.max(1)
                        || (st.timeout_ms > 0
                            && now.duration_since(since)
                                >= Duration::from_millis(u64::from(st.timeout_ms)))
                })
                .map(|(id, _)| id)
                .collect();
            if due.is_empty() {
                return vec![];
            }
            let (taken, kept) = std::mem::take(&mut d.pending)
                .into_iter()
                .partition(|x| due.contains(&x.list_id));
            d.pending = kept;
            taken
        };
        let mut by_list: BTreeMap<u32, (String, Vec<Vec<u8>>)> = BTreeMap::new();
        for d in taken {
            by_list
                .entry(d.list_id)
                .or_insert_with(|| (d.name.clone(), vec![]))
                .1
                .push(d.sample);
        }
        let mut out = vec![];
        for (list_id, (name, samples)) in by_list {
            let st = self.rt.learn.entry(list_id).or_default();
            st.waiting_since = None;
            for chunk in samples.chunks(st.max_samples.max(1)) {
                let buffer_id = st.next_buffer;
                st.next_buffer += 1;
                st.unacked
                    .insert(buffer_id, chunk.iter().cloned().map(Some).collect());
                out.push(LearnMessage {
                    list_id,
                    name: name.clone(),
                    buffer_id,
                    samples: chunk.to_vec(),
                });
            }
        }
        let log = &mut self.rt.learn_log;
        for m in &out {
            if log.len() == LEARN_LOG_CAPACITY {
                log.pop_front();
            }
            log.push_back(m.clone());
        }
        out
    }

    /// The fields of a learn list's samples: (`header.field`, width in bits), in sample
    /// order; None when a field is not known until a packet names it (a header stack
    /// element chosen at run time), or for an unknown list.
    pub fn learn_list_fields(&self, list_id: u32) -> Option<Vec<(String, u32)>> {
        let prog = self.prog();
        let list = prog.learn_lists.iter().find(|l| l.id == list_id)?;
        list.fields
            .iter()
            .map(|f| match f {
                p4jet_ir::FieldRef::Static(f) => {
                    Some((prog.field_name(*f), prog.fields.get(*f as usize)?.loc.width))
                }
                p4jet_ir::FieldRef::Dyn { .. } => None,
            })
            .collect()
    }

    /// One line describing a learning notification, each sample split into its named
    /// fields (hex), as `p4jet run` logs it and `digest_dump` prints it:
    /// `digest mac_learn_digest_t (list 1) buffer 0, 2 samples: {ethernet.srcAddr=0x0a0b0c0d0e0f, standard_metadata.ingress_port=0x0001}; {...}`.
    /// Samples whose length does not match the list's fields are printed whole.
    pub fn describe_learn_message(&self, m: &LearnMessage) -> String {
        let fields = self.learn_list_fields(m.list_id);
        let mut out = format!(
            "digest {} (list {}) buffer {}, {} sample{}:",
            m.name,
            m.list_id,
            m.buffer_id,
            m.samples.len(),
            if m.samples.len() == 1 { "" } else { "s" }
        );
        for (i, s) in m.samples.iter().enumerate() {
            out.push_str(if i == 0 { " " } else { "; " });
            out.push_str(&describe_sample(fields.as_deref(), s));
        }
        out
    }

    /// Removes acknowledged samples from the learning filter.
    fn unfilter(&self, list_id: u32, samples: &[Vec<u8>]) {
        if let Ok(mut d) = self.digests.lock() {
            for s in samples {
                d.filter.remove(&(list_id, s.clone()));
            }
        }
    }

    /// A readable dump of the run-time state (`bm_serialize_state`).
    fn dump_state(&mut self) -> Result<String, String> {
        let prog = self.prog();
        let mut out =
            String::from("# p4jet run-time state (text dump; not bmv2's serialization format)\n");
        for ti in &prog.tables {
            let entries = self
                .bm_mt_get_entries(&ti.name)
                .map_err(|e| e.to_string())?;
            let def = self
                .bm_mt_get_default_entry(&ti.name)
                .map_err(|e| e.to_string())?;
            let _ = writeln!(out, "table {} ({} entries)", ti.name, entries.len());
            for e in entries {
                let _ = writeln!(
                    out,
                    "  entry {} key {:?} priority {:?} action {:?}",
                    e.entry_handle, e.match_key, e.options.priority, e.action_entry
                );
            }
            let _ = writeln!(out, "  default {def:?}");
        }
        for ap in &prog.action_profiles {
            let members = self
                .bm_mt_act_prof_get_members(&ap.name)
                .map_err(|e| e.to_string())?;
            let groups = self
                .bm_mt_act_prof_get_groups(&ap.name)
                .map_err(|e| e.to_string())?;
            let _ = writeln!(out, "action_profile {}", ap.name);
            for m in members {
                let data: Vec<String> = m.action_data.iter().map(|d| hex(d)).collect();
                let _ = writeln!(
                    out,
                    "  member {} {}({})",
                    m.mbr_handle,
                    m.action_name,
                    data.join(", ")
                );
            }
            for g in groups {
                let _ = writeln!(out, "  group {} {:?}", g.grp_handle, g.mbr_handles);
            }
        }
        let (vsets, mirror, crc) = self
            .with_state(|cs| (cs.value_sets.clone(), cs.mirror.clone(), cs.crc.clone()))
            .ok_or(STATE_GONE)?;
        for (vi, vs) in prog.value_sets.iter().enumerate() {
            let values: Vec<String> = vsets
                .get(vi)
                .map(|v| v.iter().map(|x| hex(x)).collect())
                .unwrap_or_default();
            let _ = writeln!(out, "parse_vset {} [{}]", vs.name, values.join(", "));
        }
        for c in &prog.calculations {
            if let Some(Some(p)) = c.custom_slot.and_then(|s| crc.get(s as usize)) {
                let _ = writeln!(out, "crc {} {p:?}", c.name);
            }
        }
        for (id, s) in &mirror {
            let _ = writeln!(
                out,
                "mirroring_session {id} port {:?} mgid {:?}",
                s.port, s.mgid
            );
        }
        let pre = self.bm_mc_get_entries().map_err(|e| e.to_string())?;
        let _ = writeln!(out, "pre {pre}");
        for (ri, r) in prog.registers.iter().enumerate() {
            let Some(arr) = self.externs.registers.get(ri) else {
                continue;
            };
            let nz: Vec<String> = (0..arr.len())
                .filter_map(|i| {
                    arr.read(i)
                        .filter(|v| *v != BigUint::default())
                        .map(|v| format!("{i}={v}"))
                })
                .collect();
            let _ = writeln!(out, "register {} [{}]", r.name, nz.join(", "));
        }
        for (mi, m) in prog.meters.iter().enumerate() {
            let cells = match &m.direct {
                Some((t, _)) => self
                    .externs
                    .direct_meters
                    .get(*t as usize)
                    .and_then(|c| c.as_deref()),
                None => self.externs.meters.get(mi).map(|c| &**c),
            };
            let mut conf = vec![];
            for (i, c) in cells.unwrap_or(&[]).iter().enumerate() {
                if let Ok(c) = c.lock()
                    && !c.rates.is_empty()
                {
                    conf.push(format!("{i}={:?}", c.rates));
                }
            }
            let _ = writeln!(out, "meter {} [{}]", m.name, conf.join(", "));
        }
        Ok(out)
    }
}

// --------------------------------------------------------------------------- the API

impl RuntimeApi for Switch {
    // ------------------------------------------------------------------ match tables

    fn bm_mt_get_num_entries(&mut self, table_name: &str) -> ApiResult<i64, InvalidTableOperation> {
        let t = self.table_index(table_name)?;
        self.read_cs(|cs| cs.tables[t as usize].entries.len() as i64)
    }

    fn bm_mt_clear_entries(
        &mut self,
        table_name: &str,
        reset_default_entry: bool,
    ) -> ApiResult<(), InvalidTableOperation> {
        let t = self.table_index(table_name)?;
        // bmv2 clears any table, const entries included, and resets handle numbering
        self.apply_table_op(Op::ClearEntries(t))?;
        if reset_default_entry {
            let prog = self.prog();
            let ti = &prog.tables[t as usize];
            let action = match ti.kind {
                TableKind::Simple => ti.default_entry.clone().map(EntryAction::Direct),
                TableKind::Indirect | TableKind::IndirectWs => None,
            };
            self.apply_table_op(Op::SetDefault { table: t, action })?;
        }
        self.rt.entry_times_ms.retain(|(tt, _), _| *tt != t);
        Ok(())
    }

    fn bm_mt_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        action_name: &str,
        action_data: &[Vec<u8>],
        options: BmAddEntryOptions,
    ) -> ApiResult<BmEntryHandle, InvalidTableOperation> {
        let t = self.direct_table(table_name)?;
        let prog = self.prog();
        let ti = &prog.tables[t as usize];
        Self::table_action(&prog, ti, action_name).ok_or(TC::INVALID_ACTION_NAME)?;
        if ti.const_entries.is_some() {
            return Err(TC::IMMUTABLE_TABLE_ENTRIES.into());
        }
        let call = Self::table_call(&prog, ti, action_name, action_data)?;
        let key = build_match_key(ti, match_key, options.priority.unwrap_or(0))?;
        self.add_entry_common(t, key, EntryAction::Direct(call))
    }

    fn bm_mt_add_entries(
        &mut self,
        entries: Vec<BmAddEntryRequest<'_>>,
    ) -> Vec<ApiResult<BmEntryHandle, InvalidTableOperation>> {
        let prog = self.prog();
        // what bm_mt_add_entry checks before it applies: either a refusal or the entry
        let mut checked = Vec::with_capacity(entries.len());
        let mut ops = Vec::with_capacity(entries.len());
        let mut last_table: Option<(&str, u32)> = None;
        for e in entries {
            let t = match last_table {
                Some((name, t)) if name == e.table_name => Ok(t),
                _ => self.direct_table(e.table_name),
            };
            let entry = t.and_then(|t| {
                last_table = Some((e.table_name, t));
                let ti = &prog.tables[t as usize];
                Self::table_action(&prog, ti, e.action_name).ok_or(TC::INVALID_ACTION_NAME)?;
                if ti.const_entries.is_some() {
                    return Err(TC::IMMUTABLE_TABLE_ENTRIES.into());
                }
                let call = Self::table_call_owned(&prog, ti, e.action_name, e.action_data)?;
                let key = build_match_key_owned(ti, e.match_key, e.options.priority.unwrap_or(0))?;
                Ok(NewEntry {
                    table: t,
                    key,
                    value: EntryValue {
                        action: EntryAction::Direct(call),
                        timeout_ms: 0,
                    },
                })
            });
            checked.push(match entry {
                Ok(entry) => {
                    let t = entry.table;
                    ops.push(entry);
                    Ok(t)
                }
                Err(e) => Err(e),
            });
        }
        let added = if ops.is_empty() {
            Vec::new()
        } else {
            self.apply_entries(ops)
        };
        let mut added = added.into_iter();
        checked
            .into_iter()
            .map(|c| {
                let t = c?;
                match added.next() {
                    Some(Ok(h)) => {
                        self.entry_added(t, h);
                        Ok(h as BmEntryHandle)
                    }
                    Some(Err(e)) => Err(table_error(&e).into()),
                    None => Err(internal(STATE_GONE)),
                }
            })
            .collect()
    }

    fn bm_mt_reserve_entries(&mut self, table_name: &str, additional: usize) {
        if let Ok(table) = self.direct_table(table_name) {
            self.apply_many([Op::Reserve { table, additional }]);
        }
    }

    fn bm_mt_set_default_action(
        &mut self,
        table_name: &str,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> ApiResult<(), InvalidTableOperation> {
        let t = self.direct_table(table_name)?;
        let prog = self.prog();
        let ti = &prog.tables[t as usize];
        let a = Self::table_action(&prog, ti, action_name).ok_or(TC::INVALID_ACTION_NAME)?;
        if ti.default_entry_const {
            return Err(TC::DEFAULT_ENTRY_IS_CONST.into());
        }
        if ti.default_action_const
            && let Some(d) = &ti.default_entry
            && d.action != a
        {
            return Err(TC::DEFAULT_ACTION_IS_CONST.into());
        }
        let call = Self::table_call(&prog, ti, action_name, action_data)?;
        self.apply_table_op(Op::SetDefault {
            table: t,
            action: Some(EntryAction::Direct(call)),
        })?;
        Ok(())
    }

    fn bm_mt_reset_default_entry(
        &mut self,
        table_name: &str,
    ) -> ApiResult<(), InvalidTableOperation> {
        let t = self.direct_table(table_name)?;
        let action = self.engine.prog.tables[t as usize]
            .default_entry
            .clone()
            .map(EntryAction::Direct);
        self.apply_table_op(Op::SetDefault { table: t, action })?;
        Ok(())
    }

    fn bm_mt_delete_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        let t = self.direct_table(table_name)?;
        if self.engine.prog.tables[t as usize].const_entries.is_some() {
            return Err(TC::IMMUTABLE_TABLE_ENTRIES.into());
        }
        self.apply_table_op(Op::DeleteEntry {
            table: t,
            entry: p4jet_engine::state::EntryLoc::Handle(entry_handle as u32),
        })?;
        Ok(())
    }

    fn bm_mt_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> ApiResult<(), InvalidTableOperation> {
        let t = self.direct_table(table_name)?;
        let prog = self.prog();
        let ti = &prog.tables[t as usize];
        Self::table_action(&prog, ti, action_name).ok_or(TC::INVALID_ACTION_NAME)?;
        if ti.const_entries.is_some() {
            return Err(TC::IMMUTABLE_TABLE_ENTRIES.into());
        }
        let call = Self::table_call(&prog, ti, action_name, action_data)?;
        self.apply_table_op(Op::ModifyEntry {
            table: t,
            entry: p4jet_engine::state::EntryLoc::Handle(entry_handle as u32),
            action: EntryAction::Direct(call),
        })?;
        Ok(())
    }

    fn bm_mt_set_entry_ttl(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        timeout_ms: i32,
    ) -> ApiResult<(), InvalidTableOperation> {
        self.set_entry_ttl_common(table_name, entry_handle, timeout_ms)
    }

    // --------------------------------------------------------------- action profiles

    fn bm_mt_act_prof_add_member(
        &mut self,
        act_prof_name: &str,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> ApiResult<BmMemberHandle, InvalidTableOperation> {
        let p = self.profile_index(act_prof_name)?;
        let prog = self.prog();
        let call = Self::profile_call(&prog, p, action_name, action_data)?;
        let h = self
            .apply_checked(Op::AddMember {
                profile: p,
                id: None,
                call,
            })?
            .ok_or_else(|| internal("AddMember returned no handle"))?;
        Ok(h as BmMemberHandle)
    }

    fn bm_mt_act_prof_delete_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        let p = self.profile_index(act_prof_name)?;
        let m = mbr_handle as u32;
        let prog = self.prog();
        let (exists, used) = self.read_cs(|cs| {
            let Some(ps) = cs.profiles.get(p as usize) else {
                return (false, false);
            };
            let exists = ps.members.contains_key(&m);
            let in_group = ps.groups.values().any(|g| g.contains(&m));
            let used = in_group || Self::profile_index_used(&prog, cs, p, &EntryAction::Member(m));
            (exists, used)
        })?;
        if !exists {
            return Err(TC::INVALID_MBR_HANDLE.into());
        }
        if used {
            return Err(TC::MBR_STILL_USED.into());
        }
        self.apply_checked(Op::DeleteMember {
            profile: p,
            member: m,
        })?;
        Ok(())
    }

    fn bm_mt_act_prof_modify_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> ApiResult<(), InvalidTableOperation> {
        let p = self.profile_index(act_prof_name)?;
        let prog = self.prog();
        let call = Self::profile_call(&prog, p, action_name, action_data)?;
        if !self.member_exists(p, mbr_handle as u32)? {
            return Err(TC::INVALID_MBR_HANDLE.into());
        }
        self.apply_checked(Op::ModifyMember {
            profile: p,
            member: mbr_handle as u32,
            call,
        })?;
        Ok(())
    }

    fn bm_mt_act_prof_create_group(
        &mut self,
        act_prof_name: &str,
    ) -> ApiResult<BmGroupHandle, InvalidTableOperation> {
        let p = self.profile_index(act_prof_name)?;
        let h = self
            .apply_checked(Op::AddGroup {
                profile: p,
                id: None,
            })?
            .ok_or_else(|| internal("AddGroup returned no handle"))?;
        Ok(h as BmGroupHandle)
    }

    fn bm_mt_act_prof_delete_group(
        &mut self,
        act_prof_name: &str,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        let p = self.profile_index(act_prof_name)?;
        let g = grp_handle as u32;
        let prog = self.prog();
        let (exists, used) = self.read_cs(|cs| {
            let exists = cs
                .profiles
                .get(p as usize)
                .is_some_and(|ps| ps.groups.contains_key(&g));
            (
                exists,
                Self::profile_index_used(&prog, cs, p, &EntryAction::Group(g)),
            )
        })?;
        if !exists {
            return Err(TC::INVALID_GRP_HANDLE.into());
        }
        if used {
            return Err(TC::GRP_STILL_USED.into());
        }
        self.apply_checked(Op::DeleteGroup {
            profile: p,
            group: g,
        })?;
        Ok(())
    }

    fn bm_mt_act_prof_add_member_to_group(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        let p = self.profile_index(act_prof_name)?;
        let (m, g) = (mbr_handle as u32, grp_handle as u32);
        if !self.member_exists(p, m)? {
            return Err(TC::INVALID_MBR_HANDLE.into());
        }
        let members = self.group_members(p, g)?.ok_or(TC::INVALID_GRP_HANDLE)?;
        if members.contains(&m) {
            return Err(TC::MBR_ALREADY_IN_GRP.into());
        }
        self.apply_checked(Op::AddToGroup {
            profile: p,
            member: m,
            group: g,
        })?;
        Ok(())
    }

    fn bm_mt_act_prof_remove_member_from_group(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        let p = self.profile_index(act_prof_name)?;
        let (m, g) = (mbr_handle as u32, grp_handle as u32);
        if !self.member_exists(p, m)? {
            return Err(TC::INVALID_MBR_HANDLE.into());
        }
        let members = self.group_members(p, g)?.ok_or(TC::INVALID_GRP_HANDLE)?;
        if !members.contains(&m) {
            return Err(TC::MBR_NOT_IN_GRP.into());
        }
        self.apply_checked(Op::RemoveFromGroup {
            profile: p,
            member: m,
            group: g,
        })?;
        Ok(())
    }

    fn bm_mt_act_prof_get_members(
        &mut self,
        act_prof_name: &str,
    ) -> ApiResult<Vec<BmMtActProfMember>, InvalidTableOperation> {
        let p = self.profile_index(act_prof_name)?;
        let prog = self.prog();
        self.read_cs(|cs| {
            cs.profiles
                .get(p as usize)
                .map(|ps| {
                    ps.members
                        .iter()
                        .map(|(h, m)| member_to_bm(&prog, *h, &m.call))
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    fn bm_mt_act_prof_get_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> ApiResult<BmMtActProfMember, InvalidTableOperation> {
        let p = self.profile_index(act_prof_name)?;
        let prog = self.prog();
        self.read_cs(|cs| {
            cs.profiles
                .get(p as usize)
                .and_then(|ps| ps.members.get(&(mbr_handle as u32)))
                .map(|m| member_to_bm(&prog, mbr_handle as u32, &m.call))
        })?
        .ok_or_else(|| TC::INVALID_MBR_HANDLE.into())
    }

    fn bm_mt_act_prof_get_groups(
        &mut self,
        act_prof_name: &str,
    ) -> ApiResult<Vec<BmMtActProfGroup>, InvalidTableOperation> {
        let p = self.profile_index(act_prof_name)?;
        self.read_cs(|cs| {
            cs.profiles
                .get(p as usize)
                .map(|ps| {
                    ps.groups
                        .iter()
                        .map(|(g, ms)| group_to_bm(*g, ms))
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    fn bm_mt_act_prof_get_group(
        &mut self,
        act_prof_name: &str,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<BmMtActProfGroup, InvalidTableOperation> {
        let p = self.profile_index(act_prof_name)?;
        self.group_members(p, grp_handle as u32)?
            .map(|ms| group_to_bm(grp_handle as u32, &ms))
            .ok_or_else(|| TC::INVALID_GRP_HANDLE.into())
    }

    // --------------------------------------------------------------- indirect tables

    fn bm_mt_indirect_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        mbr_handle: BmMemberHandle,
        options: BmAddEntryOptions,
    ) -> ApiResult<BmEntryHandle, InvalidTableOperation> {
        let (t, p) = self.indirect_table(table_name, false)?;
        if !self.member_exists(p, mbr_handle as u32)? {
            return Err(TC::INVALID_MBR_HANDLE.into());
        }
        let prog = self.prog();
        let key = build_match_key(
            &prog.tables[t as usize],
            match_key,
            options.priority.unwrap_or(0),
        )?;
        self.add_entry_common(t, key, EntryAction::Member(mbr_handle as u32))
    }

    fn bm_mt_indirect_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        mbr_handle: BmMemberHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        let (t, p) = self.indirect_table(table_name, false)?;
        self.check_entry(t, entry_handle)?;
        if !self.member_exists(p, mbr_handle as u32)? {
            return Err(TC::INVALID_MBR_HANDLE.into());
        }
        self.apply_table_op(Op::ModifyEntry {
            table: t,
            entry: p4jet_engine::state::EntryLoc::Handle(entry_handle as u32),
            action: EntryAction::Member(mbr_handle as u32),
        })?;
        Ok(())
    }

    fn bm_mt_indirect_delete_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        let (t, _) = self.indirect_table(table_name, false)?;
        self.apply_table_op(Op::DeleteEntry {
            table: t,
            entry: p4jet_engine::state::EntryLoc::Handle(entry_handle as u32),
        })?;
        Ok(())
    }

    fn bm_mt_indirect_set_entry_ttl(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        timeout_ms: i32,
    ) -> ApiResult<(), InvalidTableOperation> {
        self.set_entry_ttl_common(table_name, entry_handle, timeout_ms)
    }

    fn bm_mt_indirect_set_default_member(
        &mut self,
        table_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        let (t, p) = self.indirect_table(table_name, false)?;
        if self.engine.prog.tables[t as usize].default_entry_const {
            return Err(TC::DEFAULT_ENTRY_IS_CONST.into());
        }
        if !self.member_exists(p, mbr_handle as u32)? {
            return Err(TC::INVALID_MBR_HANDLE.into());
        }
        self.apply_table_op(Op::SetDefault {
            table: t,
            action: Some(EntryAction::Member(mbr_handle as u32)),
        })?;
        Ok(())
    }

    fn bm_mt_indirect_reset_default_entry(
        &mut self,
        table_name: &str,
    ) -> ApiResult<(), InvalidTableOperation> {
        let (t, _) = self.indirect_table(table_name, false)?;
        self.apply_table_op(Op::SetDefault {
            table: t,
            action: None,
        })?;
        Ok(())
    }

    fn bm_mt_indirect_ws_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        grp_handle: BmGroupHandle,
        options: BmAddEntryOptions,
    ) -> ApiResult<BmEntryHandle, InvalidTableOperation> {
        let (t, p) = self.indirect_table(table_name, true)?;
        let members = self
            .group_members(p, grp_handle as u32)?
            .ok_or(TC::INVALID_GRP_HANDLE)?;
        if members.is_empty() {
            return Err(TC::EMPTY_GRP.into());
        }
        let prog = self.prog();
        let key = build_match_key(
            &prog.tables[t as usize],
            match_key,
            options.priority.unwrap_or(0),
        )?;
        self.add_entry_common(t, key, EntryAction::Group(grp_handle as u32))
    }

    fn bm_mt_indirect_ws_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        let (t, p) = self.indirect_table(table_name, true)?;
        self.check_entry(t, entry_handle)?;
        let members = self
            .group_members(p, grp_handle as u32)?
            .ok_or(TC::INVALID_GRP_HANDLE)?;
        if members.is_empty() {
            return Err(TC::EMPTY_GRP.into());
        }
        self.apply_table_op(Op::ModifyEntry {
            table: t,
            entry: p4jet_engine::state::EntryLoc::Handle(entry_handle as u32),
            action: EntryAction::Group(grp_handle as u32),
        })?;
        Ok(())
    }

    fn bm_mt_indirect_ws_set_default_group(
        &mut self,
        table_name: &str,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        let (t, p) = self.indirect_table(table_name, true)?;
        if self.engine.prog.tables[t as usize].default_entry_const {
            return Err(TC::DEFAULT_ENTRY_IS_CONST.into());
        }
        // bmv2 accepts an empty group as the default (a miss then runs no action)
        self.group_members(p, grp_handle as u32)?
            .ok_or(TC::INVALID_GRP_HANDLE)?;
        self.apply_table_op(Op::SetDefault {
            table: t,
            action: Some(EntryAction::Group(grp_handle as u32)),
        })?;
        Ok(())
    }

    // ------------------------------------------------------ direct counters / meters

    fn bm_mt_read_counter(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<BmCounterValue, InvalidTableOperation> {
        let t = self.table_index(table_name)?;
        if self.engine.prog.tables[t as usize].direct_counter.is_none() {
            return Err(TC::COUNTERS_DISABLED.into());
        }
        let h = self.live_handle(t, entry_handle)?;
        let (bytes, packets) = self
            .externs
            .direct_counters
            .get(t as usize)
            .and_then(|c| c.as_ref())
            .and_then(|c| c.get(handle_index(h)))
            .map(|c| c.read())
            .unwrap_or((0, 0));
        Ok(BmCounterValue { bytes, packets })
    }

    fn bm_mt_reset_counters(&mut self, table_name: &str) -> ApiResult<(), InvalidTableOperation> {
        let t = self.table_index(table_name)?;
        if self.engine.prog.tables[t as usize].direct_counter.is_none() {
            return Err(TC::COUNTERS_DISABLED.into());
        }
        if let Some(Some(cells)) = self.externs.direct_counters.get(t as usize) {
            cells.iter().for_each(|c| c.write(0, 0));
        }
        Ok(())
    }

    fn bm_mt_write_counter(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        value: BmCounterValue,
    ) -> ApiResult<(), InvalidTableOperation> {
        let t = self.table_index(table_name)?;
        if self.engine.prog.tables[t as usize].direct_counter.is_none() {
            return Err(TC::COUNTERS_DISABLED.into());
        }
        let h = self.live_handle(t, entry_handle)?;
        if let Some(Some(cells)) = self.externs.direct_counters.get(t as usize)
            && let Some(c) = cells.get(handle_index(h))
        {
            c.write(value.bytes, value.packets);
        }
        Ok(())
    }

    fn bm_mt_set_meter_rates(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        rates: &[BmMeterRateConfig],
    ) -> ApiResult<(), InvalidTableOperation> {
        let t = self.table_index(table_name)?;
        let prog = self.prog();
        let Some(mi) = prog.tables[t as usize].direct_meter else {
            return Err(TC::METERS_DISABLED.into());
        };
        let h = self.live_handle(t, entry_handle)?;
        let rate_count = prog.meters.get(mi as usize).map_or(0, |m| m.rate_count);
        let now = self.clock.now_us();
        let cell = self
            .externs
            .direct_meters
            .get(t as usize)
            .and_then(|c| c.as_ref())
            .and_then(|c| c.get(handle_index(h)))
            .ok_or_else(|| internal("direct meter cell missing"))?;
        // bmv2 reports any rate problem of a direct meter as a generic ERROR
        set_meter_rates(cell, rate_count, rates, now).map_err(|e| match e {
            ApiError::Exception(_) => TC::ERROR.into(),
            ApiError::Internal(s) => internal(s),
        })
    }

    fn bm_mt_get_meter_rates(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<Vec<BmMeterRateConfig>, InvalidTableOperation> {
        let t = self.table_index(table_name)?;
        if self.engine.prog.tables[t as usize].direct_meter.is_none() {
            return Err(TC::METERS_DISABLED.into());
        }
        let h = self.live_handle(t, entry_handle)?;
        let cell = self
            .externs
            .direct_meters
            .get(t as usize)
            .and_then(|c| c.as_ref())
            .and_then(|c| c.get(handle_index(h)))
            .ok_or_else(|| internal("direct meter cell missing"))?;
        get_meter_rates(cell)
    }

    // ----------------------------------------------------------------- reading entries

    fn bm_mt_get_entries(
        &mut self,
        table_name: &str,
    ) -> ApiResult<Vec<BmMtEntry>, InvalidTableOperation> {
        let t = self.table_index(table_name)?;
        let prog = self.prog();
        let ti = &prog.tables[t as usize];
        let raw: Vec<(EntryHandle, MatchKey, EntryValue)> = self.read_cs(|cs| {
            cs.tables[t as usize]
                .entries
                .iter()
                .map(|(h, k, v)| (h, k.into_owned(), v.clone()))
                .collect()
        })?;
        Ok(raw
            .iter()
            .map(|(h, k, v)| self.entry_to_bm(&prog, ti, t, *h, k, v))
            .collect())
    }

    fn bm_mt_get_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<BmMtEntry, InvalidTableOperation> {
        let t = self.table_index(table_name)?;
        let prog = self.prog();
        let ti = &prog.tables[t as usize];
        let h = entry_handle as u32;
        let found = self.read_cs(|cs| {
            let ts = &cs.tables[t as usize];
            match ts.entries.get(h) {
                Some((k, v)) => Ok((k.into_owned(), v.clone())),
                None => Err(handle_error(&ts.entries, h)),
            }
        })?;
        let (k, v) = found?;
        Ok(self.entry_to_bm(&prog, ti, t, h, &k, &v))
    }

    fn bm_mt_get_default_entry(
        &mut self,
        table_name: &str,
    ) -> ApiResult<BmActionEntry, InvalidTableOperation> {
        let t = self.table_index(table_name)?;
        let prog = self.prog();
        let ti = &prog.tables[t as usize];
        self.read_cs(|cs| Self::default_to_bm(&prog, ti, &cs.tables[t as usize]))
    }

    fn bm_mt_get_entry_from_key(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        options: BmAddEntryOptions,
    ) -> ApiResult<BmMtEntry, InvalidTableOperation> {
        if match_key.is_empty() {
            let action_entry = self.bm_mt_get_default_entry(table_name)?;
            return Ok(BmMtEntry {
                match_key: vec![],
                options: BmAddEntryOptions::default(),
                entry_handle: 0,
                action_entry,
                life: None,
            });
        }
        let t = self.table_index(table_name)?;
        let prog = self.prog();
        let ti = &prog.tables[t as usize];
        let key = build_match_key(ti, match_key, options.priority.unwrap_or(0))?;
        let found = self.read_cs(|cs| {
            let ts = &cs.tables[t as usize];
            ts.entries.find(&key).and_then(|h| {
                ts.entries
                    .get(h)
                    .map(|(k, v)| (h, k.into_owned(), v.clone()))
            })
        })?;
        // bmv2 answers BAD_MATCH_KEY both for a malformed key and for a key not found
        let (h, k, v) = found.ok_or(TC::BAD_MATCH_KEY)?;
        Ok(self.entry_to_bm(&prog, ti, t, h, &k, &v))
    }

    // ------------------------------------------------------------------- counters

    fn bm_counter_read(
        &mut self,
        counter_name: &str,
        index: i32,
    ) -> ApiResult<BmCounterValue, InvalidCounterOperation> {
        let c = indirect_counter(&self.engine.prog, counter_name)?;
        let cell = self
            .externs
            .counters
            .get(c)
            .and_then(|cells| usize::try_from(index).ok().and_then(|i| cells.get(i)))
            .ok_or(CounterOperationErrorCode::INVALID_INDEX)?;
        let (bytes, packets) = cell.read();
        Ok(BmCounterValue { bytes, packets })
    }

    fn bm_counter_reset_all(
        &mut self,
        counter_name: &str,
    ) -> ApiResult<(), InvalidCounterOperation> {
        let c = indirect_counter(&self.engine.prog, counter_name)?;
        if let Some(cells) = self.externs.counters.get(c) {
            cells.iter().for_each(|x| x.write(0, 0));
        }
        Ok(())
    }

    fn bm_counter_write(
        &mut self,
        counter_name: &str,
        index: i32,
        value: BmCounterValue,
    ) -> ApiResult<(), InvalidCounterOperation> {
        let c = indirect_counter(&self.engine.prog, counter_name)?;
        let cell = self
            .externs
            .counters
            .get(c)
            .and_then(|cells| usize::try_from(index).ok().and_then(|i| cells.get(i)))
            .ok_or(CounterOperationErrorCode::INVALID_INDEX)?;
        cell.write(value.bytes, value.packets);
        Ok(())
    }

    // ------------------------------------------------------------------- learning

    fn bm_learning_ack(
        &mut self,
        list_id: BmLearningListId,
        buffer_id: BmLearningBufferId,
        sample_ids: &[BmLearningSampleId],
    ) -> ApiResult<(), InvalidLearnOperation> {
        let st = self.learn_list(list_id)?;
        let mut acked = vec![];
        // an unknown buffer is taken as acknowledged already, as bmv2 does
        if let Some(buf) = st.unacked.get_mut(&buffer_id) {
            for s in sample_ids {
                if let Some(slot) = usize::try_from(*s).ok().and_then(|i| buf.get_mut(i))
                    && let Some(sample) = slot.take()
                {
                    acked.push(sample);
                }
            }
            if buf.iter().all(Option::is_none) {
                st.unacked.remove(&buffer_id);
            }
        }
        self.unfilter(list_id as u32, &acked);
        Ok(())
    }

    fn bm_learning_ack_buffer(
        &mut self,
        list_id: BmLearningListId,
        buffer_id: BmLearningBufferId,
    ) -> ApiResult<(), InvalidLearnOperation> {
        let st = self.learn_list(list_id)?;
        let acked: Vec<Vec<u8>> = st
            .unacked
            .remove(&buffer_id)
            .map(|b| b.into_iter().flatten().collect())
            .unwrap_or_default();
        self.unfilter(list_id as u32, &acked);
        Ok(())
    }

    fn bm_learning_set_timeout(
        &mut self,
        list_id: BmLearningListId,
        timeout_ms: i32,
    ) -> ApiResult<(), InvalidLearnOperation> {
        self.learn_list(list_id)?.timeout_ms = timeout_ms as u32;
        Ok(())
    }

    fn bm_learning_set_buffer_size(
        &mut self,
        list_id: BmLearningListId,
        nb_samples: i32,
    ) -> ApiResult<(), InvalidLearnOperation> {
        self.learn_list(list_id)?.max_samples = nb_samples as u32 as usize;
        Ok(())
    }

    fn p4jet_learning_dump(
        &mut self,
        list_name: &str,
        count: i32,
    ) -> ApiResult<String, InvalidLearnOperation> {
        let list = if list_name.is_empty() {
            None
        } else {
            match self.prog().learn_lists.iter().find(|l| l.name == list_name) {
                Some(l) => Some(l.id),
                None => return Err(LearnOperationErrorCode::INVALID_LIST_ID.into()),
            }
        };
        let wanted = |id: u32| list.is_none_or(|l| l == id);
        let sent: Vec<&LearnMessage> = self
            .rt
            .learn_log
            .iter()
            .filter(|m| wanted(m.list_id))
            .collect();
        let skip = match usize::try_from(count) {
            Ok(n) if n > 0 => sent.len().saturating_sub(n),
            _ => 0,
        };
        let mut out = String::new();
        for m in &sent[skip..] {
            out.push_str(&self.describe_learn_message(m));
            out.push('\n');
        }
        let waiting: Vec<crate::Digest> = match self.digests.lock() {
            Ok(d) => d
                .pending
                .iter()
                .filter(|d| wanted(d.list_id))
                .cloned()
                .collect(),
            Err(_) => vec![],
        };
        for d in &waiting {
            let fields = self.learn_list_fields(d.list_id);
            let _ = writeln!(
                out,
                "waiting {} (list {}): {}",
                d.name,
                d.list_id,
                describe_sample(fields.as_deref(), &d.sample)
            );
        }
        if out.is_empty() {
            out.push_str("no learning notifications\n");
        }
        Ok(out)
    }

    // ------------------------------------------------------------ configuration swap

    // simple_switch: both need --enable-swap; a second load before the swap is
    // ONGOING_SWAP, a swap without a load NO_ONGOING_SWAP. A JSON that does not load
    // (bmv2 accepts it and breaks later) answers NO_ONGOING_SWAP: nothing was loaded,
    // so no swap is under way, and the switch keeps its state.

    fn bm_load_new_config(&mut self, config_str: &str) -> ApiResult<(), InvalidSwapOperation> {
        if !self.cfg.enable_swap {
            return Err(SwapOperationErrorCode::CONFIG_SWAP_DISABLED.into());
        }
        self.load_new_config(config_str).map_err(|e| {
            tracing::warn!("bm_load_new_config: {e}");
            swap_error(e)
        })
    }

    fn bm_swap_configs(&mut self) -> ApiResult<(), InvalidSwapOperation> {
        if !self.cfg.enable_swap {
            return Err(SwapOperationErrorCode::CONFIG_SWAP_DISABLED.into());
        }
        self.swap_configs().map_err(swap_error)
    }

    // ----------------------------------------------------------------------- meters

    fn bm_meter_array_set_rates(
        &mut self,
        meter_array_name: &str,
        rates: &[BmMeterRateConfig],
    ) -> ApiResult<(), InvalidMeterOperation> {
        let now = self.clock.now_us();
        let (cells, rate_count) = self.meter_cells(meter_array_name)?;
        for c in cells {
            set_meter_rates(c, rate_count, rates, now)?;
        }
        Ok(())
    }

    fn bm_meter_set_rates(
        &mut self,
        meter_array_name: &str,
        index: i32,
        rates: &[BmMeterRateConfig],
    ) -> ApiResult<(), InvalidMeterOperation> {
        let now = self.clock.now_us();
        let (cells, rate_count) = self.meter_cells(meter_array_name)?;
        let cell = usize::try_from(index)
            .ok()
            .and_then(|i| cells.get(i))
            .ok_or(MeterOperationErrorCode::INVALID_INDEX)?;
        set_meter_rates(cell, rate_count, rates, now)
    }

    fn bm_meter_get_rates(
        &mut self,
        meter_array_name: &str,
        index: i32,
    ) -> ApiResult<Vec<BmMeterRateConfig>, InvalidMeterOperation> {
        let (cells, _) = self.meter_cells(meter_array_name)?;
        let cell = usize::try_from(index)
            .ok()
            .and_then(|i| cells.get(i))
            .ok_or(MeterOperationErrorCode::INVALID_INDEX)?;
        get_meter_rates(cell)
    }

    // -------------------------------------------------------------------- registers

    fn bm_register_read(
        &mut self,
        register_array_name: &str,
        index: i32,
    ) -> ApiResult<BmRegisterValue, InvalidRegisterOperation> {
        let r = register_index(&self.engine.prog, register_array_name)?;
        let v = usize::try_from(index)
            .ok()
            .and_then(|i| self.externs.registers.get(r)?.read(i))
            .ok_or(RegisterOperationErrorCode::INVALID_INDEX)?;
        Ok(low_i64(&v))
    }

    fn bm_register_read_all(
        &mut self,
        register_array_name: &str,
    ) -> ApiResult<Vec<BmRegisterValue>, InvalidRegisterOperation> {
        let r = register_index(&self.engine.prog, register_array_name)?;
        let arr = self
            .externs
            .registers
            .get(r)
            .ok_or(RegisterOperationErrorCode::INVALID_REGISTER_NAME)?;
        let values: Vec<i64> = (0..arr.len())
            .map(|i| arr.read(i).map_or(0, |v| low_i64(&v)))
            .collect();
        // bmv2 cannot tell an empty array from an unknown name
        if values.is_empty() {
            return Err(RegisterOperationErrorCode::INVALID_REGISTER_NAME.into());
        }
        Ok(values)
    }

    fn bm_register_write(
        &mut self,
        register_array_name: &str,
        index: i32,
        value: BmRegisterValue,
    ) -> ApiResult<(), InvalidRegisterOperation> {
        let prog = self.prog();
        let r = register_index(&prog, register_array_name)?;
        let v = register_value(value, prog.registers[r].width);
        let ok = usize::try_from(index)
            .ok()
            .and_then(|i| self.externs.registers.get(r).map(|a| a.write(i, &v)))
            .unwrap_or(false);
        if !ok {
            return Err(RegisterOperationErrorCode::INVALID_INDEX.into());
        }
        Ok(())
    }

    fn bm_register_write_range(
        &mut self,
        register_array_name: &str,
        start_index: i32,
        end_index: i32,
        value: BmRegisterValue,
    ) -> ApiResult<(), InvalidRegisterOperation> {
        let prog = self.prog();
        let r = register_index(&prog, register_array_name)?;
        let arr = self
            .externs
            .registers
            .get(r)
            .ok_or(RegisterOperationErrorCode::INVALID_REGISTER_NAME)?;
        // bmv2 writes [start, end): `end` is exclusive (size_t casts make negatives huge)
        let start = start_index as u32 as usize;
        let end = end_index as u32 as usize;
        let (start, end) = if start_index < 0 || end_index < 0 {
            (usize::MAX, usize::MAX)
        } else {
            (start, end)
        };
        if end > arr.len() || start > end {
            return Err(RegisterOperationErrorCode::INVALID_INDEX.into());
        }
        let v = register_value(value, prog.registers[r].width);
        for i in start..end {
            arr.write(i, &v);
        }
        Ok(())
    }

    fn bm_register_reset(
        &mut self,
        register_array_name: &str,
    ) -> ApiResult<(), InvalidRegisterOperation> {
        let r = register_index(&self.engine.prog, register_array_name)?;
        if let Some(a) = self.externs.registers.get(r) {
            a.reset();
        }
        Ok(())
    }

    // ------------------------------------------------------------ parser value sets

    fn bm_parse_vset_add(
        &mut self,
        parse_vset_name: &str,
        value: &[u8],
    ) -> ApiResult<(), InvalidParseVSetOperation> {
        let (vs, v) = self.vset_value(parse_vset_name, value)?;
        self.apply_checked(Op::VsetAdd { vset: vs, value: v })?;
        Ok(())
    }

    fn bm_parse_vset_remove(
        &mut self,
        parse_vset_name: &str,
        value: &[u8],
    ) -> ApiResult<(), InvalidParseVSetOperation> {
        let (vs, v) = self.vset_value(parse_vset_name, value)?;
        self.apply_checked(Op::VsetRemove { vset: vs, value: v })?;
        Ok(())
    }

    fn bm_parse_vset_get(
        &mut self,
        parse_vset_name: &str,
    ) -> ApiResult<Vec<BmParseVSetValue>, InvalidParseVSetOperation> {
        let vs = vset_index(&self.engine.prog, parse_vset_name)?;
        self.read_cs(|cs| cs.value_sets.get(vs as usize).cloned().unwrap_or_default())
    }

    fn bm_parse_vset_clear(
        &mut self,
        parse_vset_name: &str,
    ) -> ApiResult<(), InvalidParseVSetOperation> {
        let vs = vset_index(&self.engine.prog, parse_vset_name)?;
        self.apply_checked(Op::VsetClear(vs))?;
        Ok(())
    }

    // --------------------------------------------------------------- device manager

    fn bm_dev_mgr_add_port(
        &mut self,
        iface_name: &str,
        port_num: i32,
        pcap_path: &str,
    ) -> ApiResult<(), InvalidDevMgrOperation> {
        let port = u32::try_from(port_num).map_err(|_| DevMgrErrorCode::ERROR)?;
        if self.rt.ports.contains_key(&port) || iface_name.is_empty() {
            return Err(DevMgrErrorCode::ERROR.into());
        }
        let pcap = (!pcap_path.is_empty()).then(|| pcap_path.to_string());
        self.rt.ports.insert(
            port,
            PortEntry {
                iface: iface_name.to_string(),
                pcap: pcap.clone(),
            },
        );
        self.rt.port_events.push(PortEvent::Add {
            port,
            iface: iface_name.to_string(),
            pcap,
        });
        Ok(())
    }

    fn bm_dev_mgr_remove_port(&mut self, port_num: i32) -> ApiResult<(), InvalidDevMgrOperation> {
        let port = u32::try_from(port_num).map_err(|_| DevMgrErrorCode::ERROR)?;
        if self.rt.ports.remove(&port).is_none() {
            return Err(DevMgrErrorCode::ERROR.into());
        }
        self.rt.port_events.push(PortEvent::Remove { port });
        Ok(())
    }

    fn bm_dev_mgr_show_ports(&mut self) -> ApiResult<Vec<DevMgrPortInfo>, InvalidDevMgrOperation> {
        Ok(self
            .rt
            .ports
            .iter()
            .map(|(p, e)| {
                let mut extra = BTreeMap::new();
                if let Some(pcap) = &e.pcap {
                    extra.insert("in_pcap".to_string(), pcap.clone());
                    extra.insert("out_pcap".to_string(), pcap.clone());
                }
                DevMgrPortInfo {
                    port_num: *p as i32,
                    iface_name: e.iface.clone(),
                    is_up: true,
                    extra,
                }
            })
            .collect())
    }

    // ------------------------------------------------------------------ management

    fn bm_mgmt_get_info(&mut self) -> ApiResult<BmConfig> {
        Ok(BmConfig {
            device_id: self.rt.device_id,
            thrift_port: self.rt.thrift_port,
            notifications_socket: self.rt.notifications_socket.clone(),
            elogger_socket: self.rt.elogger_socket.clone(),
            debugger_socket: self.rt.debugger_socket.clone(),
        })
    }

    fn bm_set_crc16_custom_parameters(
        &mut self,
        calc_name: &str,
        crc16_config: BmCrc16Config,
    ) -> ApiResult<(), InvalidCrcOperation> {
        let slot = self.crc_slot(calc_name, HashAlgo::Crc16Custom)?;
        let params = CrcParams {
            width: 16,
            poly: u64::from(crc16_config.polynomial),
            init: u64::from(crc16_config.initial_remainder),
            xor_out: u64::from(crc16_config.final_xor_value),
            refin: crc16_config.data_reflected,
            refout: crc16_config.remainder_reflected,
        };
        self.apply_checked(Op::SetCrc { slot, params })?;
        Ok(())
    }

    fn bm_set_crc32_custom_parameters(
        &mut self,
        calc_name: &str,
        crc32_config: BmCrc32Config,
    ) -> ApiResult<(), InvalidCrcOperation> {
        let slot = self.crc_slot(calc_name, HashAlgo::Crc32Custom)?;
        let params = CrcParams {
            width: 32,
            poly: u64::from(crc32_config.polynomial),
            init: u64::from(crc32_config.initial_remainder),
            xor_out: u64::from(crc32_config.final_xor_value),
            refin: crc32_config.data_reflected,
            refout: crc32_config.remainder_reflected,
        };
        self.apply_checked(Op::SetCrc { slot, params })?;
        Ok(())
    }

    fn bm_set_toeplitz_hash_key(
        &mut self,
        calc_name: &str,
        key: &[u8],
    ) -> ApiResult<(), InvalidToeplitzHashOperation> {
        let prog = self.prog();
        let c = named_calculation(&prog, calc_name)
            .ok_or(ToeplitzHashErrorCode::INVALID_CALCULATION_NAME)?;
        if prog.calculations[c].algo != HashAlgo::Toeplitz {
            return Err(ToeplitzHashErrorCode::WRONG_TYPE_CALCULATION.into());
        }
        if key.len() < 4 || !key.len().is_multiple_of(4) {
            return Err(ToeplitzHashErrorCode::INVALID_KEY.into());
        }
        tracing::warn!(
            "toeplitz key stored for `{calc_name}`, but the engine does not compute Toeplitz \
             hashes yet (it uses CRC-32 for them)"
        );
        self.rt.toeplitz_keys.insert(c as u32, key.to_vec());
        Ok(())
    }

    fn bm_reset_state(&mut self) -> ApiResult<()> {
        // bmv2 resets tables, action profiles, counters, meters, registers, learning and
        // the PRE, but keeps mirroring sessions, parser value sets and CRC parameters
        let (mirror, vsets, crc) = self
            .with_state(|cs| (cs.mirror.clone(), cs.value_sets.clone(), cs.crc.clone()))
            .ok_or_else(|| internal(STATE_GONE))?;
        self.reset_state();
        let mut ops = vec![];
        for (id, s) in mirror {
            ops.push(Op::SetMirror {
                id,
                session: Some(s),
            });
        }
        for (i, values) in vsets.into_iter().enumerate() {
            for value in values {
                ops.push(Op::VsetAdd {
                    vset: i as u32,
                    value,
                });
            }
        }
        for (slot, p) in crc.into_iter().enumerate() {
            if let Some(params) = p {
                ops.push(Op::SetCrc {
                    slot: slot as u32,
                    params,
                });
            }
        }
        self.apply_many(ops);
        self.rt.learn.clear();
        self.rt.entry_times_ms.clear();
        Ok(())
    }

    fn bm_get_config(&mut self) -> ApiResult<String> {
        Ok(self.json.clone())
    }

    fn bm_get_config_md5(&mut self) -> ApiResult<Vec<u8>> {
        Ok(Md5::digest(self.json.as_bytes()).to_vec())
    }

    fn bm_get_id_from_name(
        &mut self,
        resource_type: BmResourceType,
        resource_name: &str,
    ) -> ApiResult<i32, InvalidIdLookup> {
        let ids = self.ids().map_err(internal)?;
        let map = match resource_type {
            BmResourceType::MATCH_TABLE => &ids.tables,
            BmResourceType::ACTION_PROFILE => &ids.profiles,
            BmResourceType::COUNTER => &ids.counters,
            BmResourceType::METER => &ids.meters,
            BmResourceType::REGISTER => &ids.registers,
            BmResourceType::LEARNING_LIST => &ids.learn_lists,
        };
        map.get(resource_name)
            .copied()
            .ok_or_else(|| IdLookupErrorCode::INVALID_RESOURCE_NAME.into())
    }

    fn bm_serialize_state(&mut self) -> ApiResult<String> {
        self.dump_state().map_err(internal)
    }

    // ----------------------------------------------------------------------- PRE

    fn bm_mc_mgrp_create(
        &mut self,
        mgrp: BmMcMgrp,
    ) -> ApiResult<BmMcMgrpHandle, InvalidMcOperation> {
        let id = mgrp as u32;
        let max = self.rt.max_mc_groups;
        self.modify_pre(|pre| {
            if pre.groups.len() >= max {
                return Err(McOperationErrorCode::TABLE_FULL);
            }
            // bmv2 neither checks the range nor rejects a duplicate (which changes nothing)
            pre.groups.entry(id).or_default();
            Ok(())
        })?;
        Ok(mgrp)
    }

    fn bm_mc_mgrp_destroy(
        &mut self,
        mgrp_handle: BmMcMgrpHandle,
    ) -> ApiResult<(), InvalidMcOperation> {
        let id = mgrp_handle as u32;
        // bmv2 always succeeds, and the nodes of the group stay associated with it
        self.modify_pre(|pre| {
            pre.groups.remove(&id);
            Ok(())
        })
    }

    fn bm_mc_node_create(
        &mut self,
        rid: BmMcRid,
        port_map: &str,
        lag_map: &str,
    ) -> ApiResult<BmMcL1Handle, InvalidMcOperation> {
        let ports = Self::pre_map(port_map, "port")?;
        let lags = Self::pre_map(lag_map, "LAG")?;
        let max = self.rt.max_mc_l1_entries.min(self.rt.max_mc_l2_entries);
        self.modify_pre(|pre| {
            if pre.nodes.len() >= max {
                return Err(McOperationErrorCode::TABLE_FULL);
            }
            let h = (0u32..)
                .find(|h| !pre.nodes.contains_key(h))
                .ok_or(McOperationErrorCode::ERROR)?;
            pre.nodes.insert(
                h,
                McNode {
                    rid: rid as u16,
                    ports,
                    lags,
                    group: None,
                },
            );
            Ok(h as BmMcL1Handle)
        })
    }

    fn bm_mc_node_associate(
        &mut self,
        mgrp_handle: BmMcMgrpHandle,
        l1_handle: BmMcL1Handle,
    ) -> ApiResult<(), InvalidMcOperation> {
        let (g, n) = (mgrp_handle as u32, l1_handle as u32);
        self.modify_pre(|pre| {
            if !pre.nodes.contains_key(&n) {
                return Err(McOperationErrorCode::INVALID_L1_HANDLE);
            }
            let Some(list) = pre.groups.get_mut(&g) else {
                return Err(McOperationErrorCode::INVALID_MGRP_HANDLE);
            };
            let node = pre
                .nodes
                .get_mut(&n)
                .ok_or(McOperationErrorCode::INVALID_L1_HANDLE)?;
            if node.group.is_some() {
                return Err(McOperationErrorCode::ERROR);
            }
            list.push(n);
            node.group = Some(g);
            Ok(())
        })
    }

    fn bm_mc_node_dissociate(
        &mut self,
        mgrp_handle: BmMcMgrpHandle,
        l1_handle: BmMcL1Handle,
    ) -> ApiResult<(), InvalidMcOperation> {
        let (g, n) = (mgrp_handle as u32, l1_handle as u32);
        self.modify_pre(|pre| {
            if !pre.nodes.contains_key(&n) {
                return Err(McOperationErrorCode::INVALID_L1_HANDLE);
            }
            let Some(list) = pre.groups.get_mut(&g) else {
                return Err(McOperationErrorCode::INVALID_MGRP_HANDLE);
            };
            let node = pre
                .nodes
                .get_mut(&n)
                .ok_or(McOperationErrorCode::INVALID_L1_HANDLE)?;
            if node.group != Some(g) {
                return Err(McOperationErrorCode::ERROR);
            }
            list.retain(|x| *x != n);
            node.group = None;
            Ok(())
        })
    }

    fn bm_mc_node_destroy(&mut self, l1_handle: BmMcL1Handle) -> ApiResult<(), InvalidMcOperation> {
        let n = l1_handle as u32;
        self.modify_pre(|pre| {
            let node = pre
                .nodes
                .remove(&n)
                .ok_or(McOperationErrorCode::INVALID_L1_HANDLE)?;
            // a node may be destroyed while associated: it leaves its group first
            if let Some(g) = node.group
                && let Some(list) = pre.groups.get_mut(&g)
            {
                list.retain(|x| *x != n);
            }
            Ok(())
        })
    }

    fn bm_mc_node_update(
        &mut self,
        l1_handle: BmMcL1Handle,
        port_map: &str,
        lag_map: &str,
    ) -> ApiResult<(), InvalidMcOperation> {
        let n = l1_handle as u32;
        let ports = Self::pre_map(port_map, "port")?;
        let lags = Self::pre_map(lag_map, "LAG")?;
        self.modify_pre(|pre| {
            let node = pre
                .nodes
                .get_mut(&n)
                .ok_or(McOperationErrorCode::INVALID_L1_HANDLE)?;
            node.ports = ports;
            node.lags = lags;
            Ok(())
        })
    }

    fn bm_mc_set_lag_membership(
        &mut self,
        lag_index: BmMcLagIndex,
        port_map: &str,
    ) -> ApiResult<(), InvalidMcOperation> {
        let lag = u32::from(lag_index as u16);
        if lag >= MC_LAG_MAX_ENTRIES {
            return Err(McOperationErrorCode::ERROR.into());
        }
        let ports = Self::pre_map(port_map, "port")?;
        self.modify_pre(|pre| {
            pre.lags.insert(lag, ports);
            Ok(())
        })
    }

    fn bm_mc_get_entries(&mut self) -> ApiResult<String, InvalidMcOperation> {
        let pre = self.read_cs(|cs| cs.pre.clone())?;
        // jsoncpp writes object keys in lexicographic order; l2 handles are allocated
        // with the l1 handles, so they are equal
        let l1: Vec<String> = pre
            .nodes
            .iter()
            .map(|(h, n)| {
                format!(
                    "{{\"handle\": {h}, \"l2_handle\": {h}, \"rid\": {}}}",
                    n.rid
                )
            })
            .collect();
        let l2: Vec<String> = pre
            .nodes
            .iter()
            .map(|(h, n)| {
                format!(
                    "{{\"handle\": {h}, \"lags\": {}, \"ports\": {}}}",
                    json_list(n.lags.iter().copied()),
                    json_list(n.ports.iter().copied())
                )
            })
            .collect();
        let lags: Vec<String> = pre
            .lags
            .iter()
            .map(|(id, ports)| {
                format!(
                    "{{\"id\": {id}, \"ports\": {}}}",
                    json_list(ports.iter().copied())
                )
            })
            .collect();
        let mgrps: Vec<String> = pre
            .groups
            .iter()
            .map(|(id, nodes)| {
                format!(
                    "{{\"id\": {id}, \"l1_handles\": {}}}",
                    json_list(nodes.iter().copied())
                )
            })
            .collect();
        Ok(format!(
            "{{\"l1_handles\": [{}], \"l2_handles\": [{}], \"lags\": [{}], \"mgrps\": [{}]}}",
            l1.join(", "),
            l2.join(", "),
            lags.join(", "),
            mgrps.join(", ")
        ))
    }

    // ----------------------------------------------------------------- simple_switch

    fn mirroring_session_add(
        &mut self,
        mirror_id: i32,
        config: MirroringSessionConfig,
    ) -> ApiResult<(), InvalidMirroringOperation> {
        if !(0..=MAX_MIRROR_SESSION_ID).contains(&mirror_id) {
            // simple_switch logs "mirror_id out of range" and reports success
            tracing::warn!("mirror_id {mirror_id} out of range: no session added");
            return Ok(());
        }
        self.apply_checked(Op::SetMirror {
            id: mirror_id as u32,
            session: Some(MirrorSession {
                port: config.port.map(|p| p as u32),
                mgid: config.mgid.map(|g| g as u32),
                ..MirrorSession::default()
            }),
        })?;
        Ok(())
    }

    fn mirroring_session_delete(
        &mut self,
        mirror_id: i32,
    ) -> ApiResult<(), InvalidMirroringOperation> {
        let exists = (0..=MAX_MIRROR_SESSION_ID).contains(&mirror_id)
            && self.read_cs(|cs| cs.mirror.contains_key(&(mirror_id as u32)))?;
        if !exists {
            return Err(MirroringOperationErrorCode::SESSION_NOT_FOUND.into());
        }
        self.apply_checked(Op::SetMirror {
            id: mirror_id as u32,
            session: None,
        })?;
        Ok(())
    }

    fn mirroring_session_get(
        &mut self,
        mirror_id: i32,
    ) -> ApiResult<MirroringSessionConfig, InvalidMirroringOperation> {
        let s = if mirror_id < 0 {
            None
        } else {
            self.read_cs(|cs| cs.mirror.get(&(mirror_id as u32)).cloned())?
        };
        let s = s.ok_or(MirroringOperationErrorCode::SESSION_NOT_FOUND)?;
        Ok(MirroringSessionConfig {
            port: s.port.map(|p| p as i32),
            mgid: s.mgid.map(|g| g as i32),
        })
    }

    /// simple_switch returns the result of `mirroring_add_session`: 1 when the session
    /// was added, 0 when the id is out of range.
    fn mirroring_mapping_add(&mut self, mirror_id: i32, egress_port: i32) -> ApiResult<i32> {
        if !(0..=MAX_MIRROR_SESSION_ID).contains(&mirror_id) {
            return Ok(0);
        }
        let config = MirroringSessionConfig {
            port: Some(egress_port),
            mgid: None,
        };
        match self.mirroring_session_add(mirror_id, config) {
            Ok(()) => Ok(1),
            Err(ApiError::Exception(e)) => Err(internal(e.to_string())),
            Err(ApiError::Internal(s)) => Err(internal(s)),
        }
    }

    /// simple_switch returns the result of `mirroring_delete_session`: 1 when the
    /// session existed, 0 otherwise.
    fn mirroring_mapping_delete(&mut self, mirror_id: i32) -> ApiResult<i32> {
        match self.mirroring_session_delete(mirror_id) {
            Ok(()) => Ok(1),
            Err(ApiError::Exception(_)) => Ok(0),
            Err(ApiError::Internal(s)) => Err(internal(s)),
        }
    }

    fn set_egress_queue_depth(&mut self, port_num: i32, depth_pkts: i32) -> ApiResult<i32> {
        let port = port_num as u32;
        let depth = depth_pkts as u32 as usize;
        let mut q = self
            .queues
            .lock()
            .map_err(|_| internal("queue lock poisoned"))?;
        for p in 0..q.nqueues {
            q.depth.insert((port, p), depth);
        }
        Ok(0)
    }

    fn set_egress_priority_queue_depth(
        &mut self,
        port_num: i32,
        priority: i32,
        depth_pkts: i32,
    ) -> ApiResult<i32> {
        let depth = depth_pkts as u32 as usize;
        let mut q = self
            .queues
            .lock()
            .map_err(|_| internal("queue lock poisoned"))?;
        let prio = queue_priority(q.nqueues, priority)?;
        q.depth.insert((port_num as u32, prio), depth);
        Ok(0)
    }

    fn set_all_egress_queue_depths(&mut self, depth_pkts: i32) -> ApiResult<i32> {
        let mut q = self
            .queues
            .lock()
            .map_err(|_| internal("queue lock poisoned"))?;
        q.depth.clear();
        q.default_depth = Some(depth_pkts as u32 as usize);
        Ok(0)
    }

    fn set_egress_queue_rate(&mut self, port_num: i32, rate_pps: i64) -> ApiResult<i32> {
        let port = port_num as u32;
        let mut q = self
            .queues
            .lock()
            .map_err(|_| internal("queue lock poisoned"))?;
        for p in 0..q.nqueues {
            q.rate.insert((port, p), rate_pps as u64);
        }
        Ok(0)
    }

    fn set_egress_priority_queue_rate(
        &mut self,
        port_num: i32,
        priority: i32,
        rate_pps: i64,
    ) -> ApiResult<i32> {
        let mut q = self
            .queues
            .lock()
            .map_err(|_| internal("queue lock poisoned"))?;
        let prio = queue_priority(q.nqueues, priority)?;
        q.rate.insert((port_num as u32, prio), rate_pps as u64);
        Ok(0)
    }

    fn set_all_egress_queue_rates(&mut self, rate_pps: i64) -> ApiResult<i32> {
        let mut q = self
            .queues
            .lock()
            .map_err(|_| internal("queue lock poisoned"))?;
        q.rate.clear();
        q.default_rate = (rate_pps != 0).then_some(rate_pps as u64);
        Ok(0)
    }

    fn get_time_elapsed_us(&mut self) -> ApiResult<i64> {
        Ok(self.clock.now_us() as i64)
    }

    fn get_time_since_epoch_us(&mut self) -> ApiResult<i64> {
        Ok(now_epoch_us() as i64)
    }
}

// ---------------------------------------------------------------------- free helpers

fn swap_error(e: crate::SwapError) -> ApiError<InvalidSwapOperation> {
    match e {
        crate::SwapError::Ongoing => SwapOperationErrorCode::ONGOING_SWAP.into(),
        crate::SwapError::NoneLoaded | crate::SwapError::Load(_) => {
            SwapOperationErrorCode::NO_ONGOING_SWAP.into()
        }
    }
}

fn member_to_bm(prog: &Program, h: u32, call: &ActionCall) -> BmMtActProfMember {
    let (action_name, action_data) = match action_call_entry(prog, call) {
        BmActionEntry::ActionData {
            action_name,
            action_data,
        } => (action_name, action_data),
        _ => (String::new(), vec![]),
    };
    BmMtActProfMember {
        mbr_handle: h as BmMemberHandle,
        action_name,
        action_data,
    }
}

fn group_to_bm(g: u32, members: &[u32]) -> BmMtActProfGroup {
    BmMtActProfGroup {
        grp_handle: g as BmGroupHandle,
        mbr_handles: members.iter().map(|m| *m as BmMemberHandle).collect(),
    }
}

/// Index (into `Externs::counters`) of an indirect counter array. Direct counters are
/// not counter arrays in bmv2: they are read through their table.
fn indirect_counter(
    prog: &Program,
    name: &str,
) -> Result<usize, ApiError<InvalidCounterOperation>> {
    prog.counters
        .iter()
        .position(|c| c.name == name && c.direct_table.is_none())
        .ok_or_else(|| CounterOperationErrorCode::INVALID_COUNTER_NAME.into())
}

fn register_index(prog: &Program, name: &str) -> Result<usize, ApiError<InvalidRegisterOperation>> {
    prog.registers
        .iter()
        .position(|r| r.name == name)
        .ok_or_else(|| RegisterOperationErrorCode::INVALID_REGISTER_NAME.into())
}

/// The low 64 bits of a register cell, as Thrift carries it.
fn low_i64(v: &BigUint) -> i64 {
    v.iter_u64_digits().next().unwrap_or(0) as i64
}

/// The cell value bmv2 stores for an `i64` written to a `bit<width>` register: the
/// two's complement of the value, truncated to the width.
fn register_value(value: i64, width: u32) -> BigUint {
    if value >= 0 || width <= 64 {
        BigUint::from(value as u64)
    } else {
        (BigUint::one() << width) - BigUint::from(value.unsigned_abs())
    }
}

fn vset_index(prog: &Program, name: &str) -> Result<u32, ApiError<InvalidParseVSetOperation>> {
    prog.value_sets
        .iter()
        .position(|v| v.name == name)
        .map(|i| i as u32)
        .ok_or_else(|| ParseVSetOperationErrorCode::INVALID_PARSE_VSET_NAME.into())
}

impl Switch {
    /// Checks a value set value: exactly `ceil(width / 8)` bytes (bmv2 aborts on any
    /// other length), bits above the width cleared.
    fn vset_value(
        &self,
        name: &str,
        value: &[u8],
    ) -> Result<(u32, Vec<u8>), ApiError<InvalidParseVSetOperation>> {
        let prog = &self.engine.prog;
        let vs = vset_index(prog, name)?;
        let width = prog.value_sets[vs as usize].width;
        let nb = width.div_ceil(8) as usize;
        if value.len() != nb {
            return Err(ParseVSetOperationErrorCode::ERROR.into());
        }
        let mut v = vec![0u8; nb];
        fit_bytes(value, width, &mut v);
        Ok((vs, v))
    }

    /// The custom CRC slot of a named calculation of the given algorithm.
    fn crc_slot(&self, name: &str, algo: HashAlgo) -> Result<u32, ApiError<InvalidCrcOperation>> {
        let prog = &self.engine.prog;
        let c = named_calculation(prog, name).ok_or(CrcErrorCode::INVALID_CALCULATION_NAME)?;
        let calc = &prog.calculations[c];
        if calc.algo != algo {
            return Err(CrcErrorCode::WRONG_TYPE_CALCULATION.into());
        }
        calc.custom_slot
            .ok_or_else(|| internal(format!("calculation `{name}` has no custom CRC slot")))
    }
}

/// A calculation of the JSON `calculations` (selector hashes are not named
/// calculations in bmv2).
fn named_calculation(prog: &Program, name: &str) -> Option<usize> {
    let selectors: Vec<u32> = prog
        .action_profiles
        .iter()
        .filter_map(|ap| ap.selector.as_ref().map(|(c, _)| *c))
        .collect();
    prog.calculations
        .iter()
        .enumerate()
        .find(|(i, c)| c.name == name && !selectors.contains(&(*i as u32)))
        .map(|(i, _)| i)
}

/// Sets the rates of one meter as bmv2's `Meter::set_rates` does: exactly `rate_count`
/// rates, information rates non-decreasing (committed first).
fn set_meter_rates(
    cell: &Mutex<MeterCell>,
    rate_count: u32,
    rates: &[BmMeterRateConfig],
    now_us: u64,
) -> ApiResult<(), InvalidMeterOperation> {
    if rates.len() != rate_count as usize {
        return Err(MeterOperationErrorCode::BAD_RATES_LIST.into());
    }
    if rates
        .windows(2)
        .any(|w| w[0].units_per_micros > w[1].units_per_micros)
    {
        return Err(MeterOperationErrorCode::INVALID_INFO_RATE_VALUE.into());
    }
    let mut c = cell.lock().map_err(|_| internal("meter lock poisoned"))?;
    c.set_rates(
        rates
            .iter()
            .map(|r| (r.units_per_micros, r.burst_size))
            .collect(),
        now_us,
    );
    Ok(())
}

/// The configured rates (committed first); empty for an unconfigured meter.
fn get_meter_rates<E>(cell: &Mutex<MeterCell>) -> ApiResult<Vec<BmMeterRateConfig>, E> {
    let c = cell.lock().map_err(|_| internal("meter lock poisoned"))?;
    Ok(c.rates
        .iter()
        .map(|(r, b)| BmMeterRateConfig {
            units_per_micros: *r,
            burst_size: *b,
        })
        .collect())
}

/// The packet priority configured by a per-priority queue call. simple_switch passes
/// the RPC's `priority` to its queueing logic as the internal queue index, and the
/// packet of priority `p` uses internal queue `nqueues - 1 - p`; an index out of range
/// makes bmv2 throw `std::out_of_range`.
fn queue_priority(nqueues: u32, priority: i32) -> ApiResult<u32> {
    match u32::try_from(priority) {
        Ok(p) if p < nqueues => Ok(nqueues - 1 - p),
        _ => Err(internal(format!(
            "priority queue {priority} does not exist ({nqueues} queues per port)"
        ))),
    }
}
