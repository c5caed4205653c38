//! The program (load, save, commit, replace, reconcile, none), ports, queues, hash
//! parameters, reset, state dump and switch information.

use std::fmt::Write as _;
use std::sync::Arc;

use md5::{Digest as _, Md5};
use num_bigint::BigUint;
use p4jet_engine::Op;
use p4jet_engine::state::{ControlState, EntryAction as EngineAction, EntryValue};
use p4jet_ir::{Program, TableInfo};
use p4jet_runtime::bmv2::{
    Bmv2Code, CrcErrorCode, DevMgrErrorCode, SwapOperationErrorCode as SC, ToeplitzHashErrorCode,
};
use p4jet_runtime::schema::CalcAlgo;
use p4jet_runtime::{
    Bytes, CalcId, ClockReading, CrcConfig, PipelineAction, PipelineConfig, PipelineInfo,
    PortCounters, PortInfo, QueueSelector, QueueSetting, RuntimeError, SwitchInfo,
};

use super::{PortEntry, PortEvent, crc_params};
use crate::{SwapError, Switch};

/// The program a switch started without one runs: it drops every packet (a v1model
/// program whose ingress is `mark_to_drop`), so that packets are counted and go
/// nowhere until a program is set.
pub const NO_PROGRAM_JSON: &str = include_str!("no_program.json");

fn swap_error(e: SwapError) -> RuntimeError {
    match e {
        SwapError::Ongoing => {
            Bmv2Code::Swap(SC::ONGOING_SWAP).error("a saved program waits for its commit")
        }
        SwapError::NoneLoaded => {
            Bmv2Code::Swap(SC::NO_ONGOING_SWAP).error("no saved program to commit")
        }
        // bmv2 accepts a JSON that does not load and breaks later; p4jet refuses it and
        // keeps its state: nothing was loaded, so no swap is under way
        SwapError::Load(m) => RuntimeError::invalid(format!("the program does not load: {m}"))
            .with_bmv2(SC::NO_ONGOING_SWAP),
    }
}

/// Whether two tables' keys have the same shape (an entry of one is an entry of the
/// other).
fn same_keys(a: &TableInfo, b: &TableInfo) -> bool {
    a.keys.len() == b.keys.len()
        && a.keys.iter().zip(&b.keys).all(|(x, y)| {
            p4jet_engine::state::tables_kind(x.kind) == p4jet_engine::state::tables_kind(y.kind)
                && x.width == y.width
                && x.mask == y.mask
        })
}

/// The action of `new` standing for action `a` of `old`: the same name and parameter
/// widths, among `allowed`.
fn map_action(old: &Program, new: &Program, a: u32, allowed: &[u32]) -> Option<u32> {
    let oa = old.actions.get(a as usize)?;
    allowed.iter().copied().find(|n| {
        new.actions.get(*n as usize).is_some_and(|na| {
            na.name == oa.name
                && na.params.len() == oa.params.len()
                && na.params.iter().zip(&oa.params).all(|(x, y)| x.1 == y.1)
        })
    })
}

fn map_call(
    old: &Program,
    new: &Program,
    c: &p4jet_ir::ActionCall,
    allowed: &[u32],
) -> Option<p4jet_ir::ActionCall> {
    Some(p4jet_ir::ActionCall {
        action: map_action(old, new, c.action, allowed)?,
        data: c.data.clone(),
    })
}

fn map_entry_action(
    old: &Program,
    new: &Program,
    a: &EngineAction,
    allowed: &[u32],
) -> Option<EngineAction> {
    Some(match a {
        EngineAction::Direct(c) => EngineAction::Direct(map_call(old, new, c, allowed)?),
        EngineAction::Member(m) => EngineAction::Member(*m),
        EngineAction::Group(g) => EngineAction::Group(*g),
        EngineAction::OneShot(o) => {
            let mut actions = Vec::with_capacity(o.actions.len());
            for (c, w, watch) in &o.actions {
                actions.push((map_call(old, new, c, allowed)?, *w, *watch));
            }
            EngineAction::OneShot(Box::new(p4jet_engine::state::OneShot::new(actions)))
        }
    })
}

impl Switch {
    /// A switch without a program (simple_switch's `--no-p4`): it runs
    /// [`NO_PROGRAM_JSON`], dropping every packet, and every runtime operation answers
    /// [`p4jet_runtime::ErrorKind::NoPipeline`] until a program is set
    /// ([`PipelineAction::Replace`]).
    pub fn without_program(cfg: crate::SwitchConfig) -> Result<Switch, String> {
        let mut sw = Switch::new(NO_PROGRAM_JSON, cfg)?;
        sw.schema = None;
        Ok(sw)
    }

    /// Whether a program is set.
    pub fn has_program(&self) -> bool {
        self.schema.is_some()
    }

    pub(crate) fn pipeline_info(&self) -> Result<PipelineInfo, RuntimeError> {
        self.need_schema()?;
        let mut md5 = [0u8; 16];
        md5.copy_from_slice(&Md5::digest(self.json.as_bytes()));
        Ok(PipelineInfo {
            json: Arc::from(self.json.as_str()),
            md5,
            cookie: self.cookie,
            commit_pending: self.swap_pending(),
        })
    }

    pub(crate) fn set_pipeline_action(
        &mut self,
        action: PipelineAction,
    ) -> Result<(), RuntimeError> {
        match action {
            PipelineAction::Verify(c) => p4jet_engine::load(&c.json, Default::default())
                .map(|_| ())
                .map_err(|e| RuntimeError::invalid(format!("the program does not load: {e}"))),
            PipelineAction::Save(c) => {
                self.load_new_config(&c.json).map_err(swap_error)?;
                self.cookie = c.cookie;
                Ok(())
            }
            PipelineAction::Commit => self.swap_configs().map_err(swap_error),
            PipelineAction::Replace(c) => self.replace_program(c, false),
            PipelineAction::Reconcile(c) => self.replace_program(c, true),
        }
    }

    /// Loads a program and makes the data plane run it now; with `reconcile`, the
    /// state that fits it is carried over (see [`PipelineAction::Reconcile`]).
    fn replace_program(&mut self, c: PipelineConfig, reconcile: bool) -> Result<(), RuntimeError> {
        // what to carry: read before the new program takes the runtime's place
        let carried = if reconcile && self.has_program() {
            Some(Carried {
                prog: self.engine.prog.clone(),
                cs: self.read_cs(Clone::clone)?,
                externs: self.externs.clone(),
                learn: self.rt.learn.clone(),
                group_meta: self.rt.group_meta.clone(),
            })
        } else {
            None
        };
        self.install(&c.json).map_err(swap_error)?;
        self.cookie = c.cookie;
        if let Some(carried) = carried {
            self.reconcile_from(carried);
        }
        self.swap_configs().map_err(swap_error)
    }

    /// Puts the state of the previous program that fits the new one in place.
    fn reconcile_from(&mut self, old: Carried) {
        let new = self.engine.prog.clone();
        let o = &*old.prog;
        let mut groups: Vec<Vec<Op>> = Vec::new();
        // value sets
        for (vi, vs) in new.value_sets.iter().enumerate() {
            if let Some(ovi) = o
                .value_sets
                .iter()
                .position(|x| x.name == vs.name && x.width == vs.width)
            {
                for value in old.cs.value_sets.get(ovi).cloned().unwrap_or_default() {
                    groups.push(vec![Op::VsetAdd {
                        vset: vi as u32,
                        value,
                    }]);
                }
            }
        }
        // custom CRC parameters
        for c in &new.calculations {
            if let (Some(slot), Some(oc)) = (
                c.custom_slot,
                o.calculations
                    .iter()
                    .find(|x| x.name == c.name && x.algo == c.algo),
            ) && let Some(Some(params)) = oc.custom_slot.and_then(|s| old.cs.crc.get(s as usize))
            {
                groups.push(vec![Op::SetCrc {
                    slot,
                    params: *params,
                }]);
            }
        }
        // members and groups of profiles of the same name
        let mut profile_map: Vec<Option<usize>> = vec![None; new.action_profiles.len()];
        for (pi, ap) in new.action_profiles.iter().enumerate() {
            let Some(opi) = o.action_profiles.iter().position(|x| x.name == ap.name) else {
                continue;
            };
            profile_map[pi] = Some(opi);
            let allowed: Vec<u32> = ap
                .tables
                .iter()
                .filter_map(|t| new.tables.get(*t as usize))
                .flat_map(|t| t.actions.iter().copied())
                .collect();
            let Some(ops) = old.cs.profiles.get(opi) else {
                continue;
            };
            for (id, m) in &ops.members {
                if let Some(call) = map_call(o, &new, &m.call, &allowed) {
                    groups.push(vec![Op::AddMember {
                        profile: pi as u32,
                        id: Some(*id),
                        call,
                    }]);
                }
            }
            for (g, list) in &ops.groups {
                groups.push(vec![
                    Op::AddGroup {
                        profile: pi as u32,
                        id: Some(*g),
                    },
                    Op::SetGroupMembers {
                        profile: pi as u32,
                        group: *g,
                        members: list.clone(),
                    },
                ]);
                if let Some(meta) = old.group_meta.get(&(opi as u32, *g)) {
                    self.rt.group_meta.insert((pi as u32, *g), meta.clone());
                }
            }
        }
        // entries and defaults of tables of the same name and key shape
        let mut moved: Vec<(u32, u32, u32)> = Vec::new(); // (new table, old table, old handle)
        let mut entry_groups = Vec::new();
        for (ti, t) in new.tables.iter().enumerate() {
            let Some(oti) = o.tables.iter().position(|x| x.name == t.name) else {
                continue;
            };
            let ot = &o.tables[oti];
            let same_profile = match (t.action_profile, ot.action_profile) {
                (None, None) => true,
                (Some(p), Some(op)) => profile_map[p as usize] == Some(op as usize),
                _ => false,
            };
            if !same_keys(t, ot) || t.kind != ot.kind || !same_profile {
                continue;
            }
            let Some(ots) = old.cs.tables.get(oti) else {
                continue;
            };
            if t.const_entries.is_none() && ot.const_entries.is_none() {
                for (h, k, v) in ots.entries.iter() {
                    if let Some(action) = map_entry_action(o, &new, &v.action, &t.actions) {
                        entry_groups.push(vec![Op::AddEntry {
                            table: ti as u32,
                            key: k.into_owned(),
                            value: EntryValue {
                                action,
                                timeout_ms: v.timeout_ms,
                            },
                        }]);
                        moved.push((ti as u32, oti as u32, h));
                    }
                }
            }
            let old_default = ots.default.as_ref();
            let program_default = ot.default_entry.clone().map(EngineAction::Direct);
            if old_default != program_default.as_ref()
                && !t.default_entry_const
                && let Some(a) = old_default.and_then(|a| map_entry_action(o, &new, a, &t.actions))
            {
                groups.push(vec![Op::SetDefault {
                    table: ti as u32,
                    action: Some(a),
                }]);
            }
        }
        groups.extend(entry_groups);
        let mut ends = Vec::with_capacity(groups.len());
        let mut ops = Vec::with_capacity(groups.len());
        for g in groups {
            ops.extend(g);
            ends.push(ops.len() as u32);
        }
        self.apply(Op::Batch {
            ops,
            ends,
            atomic: false,
        });
        let results = self.read_cs(|cs| cs.results.clone()).unwrap_or_default();
        let failed = results.iter().filter(|r| !r.is_ok()).count();
        if failed > 0 {
            tracing::warn!("reconcile: {failed} pieces of state did not fit the new program");
        }
        // moved entries (the last groups, one op each): their direct counters and
        // meters, and their ageing from now
        let first = results.len().saturating_sub(moved.len());
        for ((t, ot, oh), r) in moved.into_iter().zip(results.get(first..).unwrap_or(&[])) {
            if let p4jet_engine::OpResult::Handle(h) = r {
                let (os, ns) = (oh as usize & 0x00ff_ffff, *h as usize & 0x00ff_ffff);
                if let (Some(Some(oc)), Some(Some(nc))) = (
                    old.externs.direct_counters.get(ot as usize),
                    self.externs.direct_counters.get(t as usize),
                ) && let (Some(a), Some(b)) = (oc.get(os), nc.get(ns))
                {
                    let (bytes, packets) = a.read();
                    b.write(bytes, packets);
                }
                if let (Some(Some(om)), Some(Some(nm))) = (
                    old.externs.direct_meters.get(ot as usize),
                    self.externs.direct_meters.get(t as usize),
                ) && let (Some(a), Some(b)) = (om.get(os), nm.get(ns))
                    && let (Ok(a), Ok(mut b)) = (a.lock(), b.lock())
                {
                    *b = a.clone();
                }
                if new.tables[t as usize].support_timeout {
                    self.record_entry_time(t, *h);
                }
            }
        }
        // counters, registers and meters of the same name and shape
        for (ci, c) in new.counters.iter().enumerate() {
            if c.direct_table.is_some() {
                continue;
            }
            if let Some(oci) = o
                .counters
                .iter()
                .position(|x| x.name == c.name && x.direct_table.is_none())
                && let (Some(a), Some(b)) =
                    (old.externs.counters.get(oci), self.externs.counters.get(ci))
            {
                for (x, y) in a.iter().zip(b.iter()) {
                    let (bytes, packets) = x.read();
                    y.write(bytes, packets);
                }
            }
        }
        for (ri, r) in new.registers.iter().enumerate() {
            if let Some(ori) = o
                .registers
                .iter()
                .position(|x| x.name == r.name && x.width == r.width)
                && let (Some(a), Some(b)) = (
                    old.externs.registers.get(ori),
                    self.externs.registers.get(ri),
                )
            {
                for i in 0..a.len().min(b.len()) {
                    if let Some(v) = a.read(i) {
                        b.write(i, &v);
                    }
                }
            }
        }
        for (mi, m) in new.meters.iter().enumerate() {
            if m.direct.is_some() {
                continue;
            }
            if let Some(omi) = o.meters.iter().position(|x| {
                x.name == m.name
                    && x.direct.is_none()
                    && x.rate_count == m.rate_count
                    && x.bytes == m.bytes
            }) && let (Some(a), Some(b)) =
                (old.externs.meters.get(omi), self.externs.meters.get(mi))
            {
                for (x, y) in a.iter().zip(b.iter()) {
                    if let (Ok(x), Ok(mut y)) = (x.lock(), y.lock()) {
                        *y = x.clone();
                    }
                }
            }
        }
        // digest configuration of lists of the same name
        for l in &new.learn_lists {
            if let Some(ol) = o.learn_lists.iter().find(|x| x.name == l.name)
                && let Some(st) = old.learn.get(&ol.id)
            {
                let mut st = st.clone();
                st.unacked.clear();
                st.waiting_since = None;
                self.rt.learn.insert(l.id, st);
            }
        }
    }

    pub(crate) fn switch_info(&self) -> SwitchInfo {
        let q = self.queues.lock().map(|q| q.nqueues).unwrap_or(1);
        SwitchInfo {
            device_id: self.rt.device_id,
            thrift_port: self.rt.thrift_port,
            notifications_socket: self.rt.notifications_socket.clone(),
            elogger_socket: self.rt.elogger_socket.clone(),
            debugger_socket: self.rt.debugger_socket.clone(),
            swap_enabled: self.cfg.enable_swap,
            drop_port: self.cfg.drop_port,
            cpu_port: self.rt.cpu_port,
            priority_queues: q,
        }
    }

    pub(crate) fn clock_reading(&self) -> ClockReading {
        ClockReading {
            elapsed_us: self.clock.now_us(),
            since_epoch_us: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_micros() as u64)
                .unwrap_or(0),
        }
    }

    pub(crate) fn port_list(&self) -> Vec<PortInfo> {
        self.rt
            .ports
            .iter()
            .map(|(p, e)| PortInfo {
                port: *p,
                iface: e.iface.clone(),
                pcap: e.pcap.clone(),
                up: true,
            })
            .collect()
    }

    pub(crate) fn read_port_counters(&self, port: u32) -> PortCounters {
        let c = self
            .balance()
            .ports
            .get(port as usize)
            .copied()
            .unwrap_or_default();
        let d = self
            .rt
            .device_counters
            .get(&port)
            .copied()
            .unwrap_or_default();
        PortCounters {
            rx_packets: c.rx,
            tx_packets: c.tx,
            drops: c.dropped(),
            rx_missed: d.rx_missed,
            rx_errors: d.rx_errors,
            tx_errors: d.tx_errors,
            ..PortCounters::default()
        }
    }

    pub(crate) fn add_port_entry(&mut self, p: PortInfo) -> Result<(), RuntimeError> {
        if self.rt.ports.contains_key(&p.port) || p.iface.is_empty() {
            return Err(Bmv2Code::DevMgr(DevMgrErrorCode::ERROR).error(format!(
                "port {}: {}",
                p.port,
                if p.iface.is_empty() {
                    "no interface name"
                } else {
                    "the port exists"
                }
            )));
        }
        self.rt.ports.insert(
            p.port,
            PortEntry {
                iface: p.iface.clone(),
                pcap: p.pcap.clone(),
            },
        );
        self.rt.port_events.push(PortEvent::Add {
            port: p.port,
            iface: p.iface,
            pcap: p.pcap,
        });
        Ok(())
    }

    pub(crate) fn remove_port_entry(&mut self, port: u32) -> Result<(), RuntimeError> {
        if self.rt.ports.remove(&port).is_none() {
            return Err(Bmv2Code::DevMgr(DevMgrErrorCode::ERROR).error(format!("no port {port}")));
        }
        self.rt.port_events.push(PortEvent::Remove { port });
        Ok(())
    }

    pub(crate) fn configure_queue(
        &mut self,
        which: QueueSelector,
        setting: QueueSetting,
    ) -> Result<(), RuntimeError> {
        let mut q = self
            .queues
            .lock()
            .map_err(|_| RuntimeError::internal("queue lock poisoned"))?;
        // simple_switch passes a per-priority RPC's `priority` to its queueing logic as
        // the internal queue index, and the packet of priority `p` uses internal queue
        // `nqueues - 1 - p`
        let prio = |p: u32| -> Result<u32, RuntimeError> {
            if p < q.nqueues {
                Ok(q.nqueues - 1 - p)
            } else {
                Err(RuntimeError::out_of_range(format!(
                    "priority queue {p} does not exist ({} queues per port)",
                    q.nqueues
                )))
            }
        };
        match (which, setting) {
            (QueueSelector::All, QueueSetting::Depth(d)) => {
                q.depth.clear();
                q.default_depth = Some(d as usize);
            }
            (QueueSelector::All, QueueSetting::Rate(r)) => {
                q.rate.clear();
                q.default_rate = (r != 0).then_some(r);
            }
            (QueueSelector::Port(port), s) => {
                for p in 0..q.nqueues {
                    match s {
                        QueueSetting::Depth(d) => {
                            q.depth.insert((port, p), d as usize);
                        }
                        QueueSetting::Rate(r) => {
                            q.rate.insert((port, p), r);
                        }
                    }
                }
            }
            (QueueSelector::Priority(port, p), s) => {
                let p = prio(p)?;
                match s {
                    QueueSetting::Depth(d) => {
                        q.depth.insert((port, p), d as usize);
                    }
                    QueueSetting::Rate(r) => {
                        q.rate.insert((port, p), r);
                    }
                }
            }
        }
        Ok(())
    }

    /// A named calculation's index in the program and its algorithm.
    fn calc(&self, c: CalcId) -> Result<(usize, CalcAlgo), RuntimeError> {
        let schema = self.need_schema()?;
        let calc = schema.calculation(c).ok_or_else(|| {
            Bmv2Code::Crc(CrcErrorCode::INVALID_CALCULATION_NAME)
                .error(format!("no calculation {}", c.0))
        })?;
        Ok((c.index(), calc.algo))
    }

    pub(crate) fn set_crc_config(
        &mut self,
        c: CalcId,
        config: CrcConfig,
    ) -> Result<(), RuntimeError> {
        let (i, algo) = self.calc(c)?;
        let want = match config.width {
            16 => CalcAlgo::Crc16Custom,
            32 => CalcAlgo::Crc32Custom,
            w => {
                return Err(Bmv2Code::Crc(CrcErrorCode::INVALID_CONFIG)
                    .error(format!("CRC width {w}: 16 or 32")));
            }
        };
        let name = self.engine.prog.calculations[i].name.clone();
        if algo != want {
            return Err(
                Bmv2Code::Crc(CrcErrorCode::WRONG_TYPE_CALCULATION).error(format!(
                    "calculation {name} is not a crc{}_custom",
                    config.width
                )),
            );
        }
        let slot = self.engine.prog.calculations[i]
            .custom_slot
            .ok_or_else(|| {
                RuntimeError::internal(format!("calculation {name} has no custom CRC slot"))
            })?;
        self.apply_op(
            &format!("calculation {name}"),
            Op::SetCrc {
                slot,
                params: crc_params(&config),
            },
        )?;
        Ok(())
    }

    pub(crate) fn set_toeplitz(&mut self, c: CalcId, key: Bytes) -> Result<(), RuntimeError> {
        let (i, algo) = self.calc(c).map_err(|e| RuntimeError {
            bmv2: e
                .bmv2
                .map(|_| Bmv2Code::Toeplitz(ToeplitzHashErrorCode::INVALID_CALCULATION_NAME)),
            ..e
        })?;
        let name = self.engine.prog.calculations[i].name.clone();
        if algo != CalcAlgo::Toeplitz {
            return Err(
                Bmv2Code::Toeplitz(ToeplitzHashErrorCode::WRONG_TYPE_CALCULATION)
                    .error(format!("calculation {name} is not a toeplitz hash")),
            );
        }
        if key.len() < 4 || !key.len().is_multiple_of(4) {
            return Err(
                Bmv2Code::Toeplitz(ToeplitzHashErrorCode::INVALID_KEY).error(format!(
                    "calculation {name}: a key of {} bytes (a multiple of 4 is needed)",
                    key.len()
                )),
            );
        }
        tracing::warn!(
            "toeplitz key stored for `{name}`, but the engine does not compute Toeplitz \
             hashes yet (it uses CRC-32 for them)"
        );
        self.rt.toeplitz_keys.insert(i as u32, key);
        Ok(())
    }

    /// bmv2's `bm_reset_state`: tables, profiles, counters, meters, registers, learning
    /// and the PRE are reset; mirroring sessions, value sets and CRC parameters stay.
    pub(crate) fn reset_runtime_state(&mut self) -> Result<(), RuntimeError> {
        self.need_schema()?;
        let (mirror, vsets, crc) =
            self.read_cs(|cs| (cs.mirror.clone(), cs.value_sets.clone(), cs.crc.clone()))?;
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
        self.rt.idle_reported.clear();
        self.rt.ageing_prev.clear();
        self.rt.ageing_buffer_id = 0;
        self.rt.group_meta.clear();
        Ok(())
    }

    /// A readable dump of the run-time state (`bm_serialize_state`).
    pub(crate) fn dump_state(&self) -> Result<String, RuntimeError> {
        self.need_schema()?;
        let prog = self.engine.prog.clone();
        let cs: ControlState = self.read_cs(Clone::clone)?;
        let hex = |b: &[u8]| {
            b.iter().fold(String::from("0x"), |mut s, x| {
                let _ = write!(s, "{x:02x}");
                s
            })
        };
        let mut out =
            String::from("# p4jet run-time state (text dump; not bmv2's serialization format)\n");
        for (ti, t) in prog.tables.iter().enumerate() {
            let ts = &cs.tables[ti];
            let _ = writeln!(out, "table {} ({} entries)", t.name, ts.entries.len());
            for (h, k, v) in ts.entries.iter() {
                let key = super::tables::model_key(t, &k);
                let _ = writeln!(
                    out,
                    "  entry {h} key {:?} priority {} action {:?}",
                    key.fields,
                    key.priority,
                    super::model_action(&prog, &v.action)
                );
            }
            let _ = writeln!(
                out,
                "  default {:?}",
                ts.default.as_ref().map(|a| super::model_action(&prog, a))
            );
        }
        for (pi, ap) in prog.action_profiles.iter().enumerate() {
            let _ = writeln!(out, "action_profile {}", ap.name);
            if let Some(ps) = cs.profiles.get(pi) {
                for (h, m) in &ps.members {
                    let call = super::unpack_call(&prog, &m.call);
                    let data: Vec<String> = call.args.iter().map(|d| hex(d)).collect();
                    let _ = writeln!(
                        out,
                        "  member {h} {}({})",
                        prog.actions
                            .get(m.call.action as usize)
                            .map_or("?", |a| a.name.as_str()),
                        data.join(", ")
                    );
                }
                for (g, ms) in &ps.groups {
                    let _ = writeln!(out, "  group {g} {ms:?}");
                }
            }
        }
        for (vi, vs) in prog.value_sets.iter().enumerate() {
            let values: Vec<String> = cs
                .value_sets
                .get(vi)
                .map(|v| v.iter().map(|x| hex(x)).collect())
                .unwrap_or_default();
            let _ = writeln!(out, "parse_vset {} [{}]", vs.name, values.join(", "));
        }
        for c in &prog.calculations {
            if let Some(Some(p)) = c.custom_slot.and_then(|s| cs.crc.get(s as usize)) {
                let _ = writeln!(out, "crc {} {p:?}", c.name);
            }
        }
        for (id, s) in &cs.mirror {
            let _ = writeln!(
                out,
                "mirroring_session {id} port {:?} mgid {:?}{}",
                s.port,
                s.mgid,
                match &s.replicas {
                    Some(r) => format!(" replicas {r:?}"),
                    None => String::new(),
                }
            );
        }
        let pre = super::pre::model_pre(&cs.pre);
        let _ = writeln!(out, "pre {pre:?}");
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

/// What reconciliation reads of the previous program.
struct Carried {
    prog: Arc<Program>,
    cs: ControlState,
    externs: Arc<p4jet_engine::Externs>,
    learn: std::collections::BTreeMap<u32, super::learning::LearnListState>,
    group_meta: std::collections::HashMap<(u32, u32), super::profiles::GroupMeta>,
}
