//! The runtime model over Thrift: [`ThriftClient`] drives a remote switch (bmv2's
//! `simple_switch` or `p4jet run`) as a [`Runtime`].
//!
//! Ids become names with the program model of the switch's JSON (fetched with
//! `bm_get_config`, [`ThriftClient::fetch_schema`], or given with
//! [`ThriftClient::set_schema`]); updates and reads become the RPCs bmv2 has, and
//! its exceptions come back as [`RuntimeError`]s with their codes.
//!
//! What bmv2's Thrift services cannot do is [`ErrorKind::Unimplemented`]: all-or-
//! nothing batches (updates are sent one by one), one-shot selector entries, member
//! and group ids chosen by the caller, group weights, P4Runtime clone sessions with
//! several replicas, listing clone sessions, digest polling and ack timeouts (bmv2
//! sends digests on nanomsg), idle timeout notifications, port counters, reconciling
//! a program. P4Runtime-style multicast groups are made of bmv2 nodes.

use std::sync::Arc;

use p4jet_runtime::bmv2::TableOperationErrorCode as TC;
use p4jet_runtime::schema::{Table, TableKind};
use p4jet_runtime::{
    ActionCall, Applied, Atomicity, BatchResult, Bytes, CalcId, ClockReading, CloneSession,
    CloneTarget, CounterId, CounterValue, CrcConfig, DigestConfig, DigestId, DigestList, DigestLog,
    EntryAction, EntryCursor, EntryHandle, EntryPage, EntryRef, EntryTtl, Group, GroupId,
    GroupMember, IdleTimeout, McGroup, McNode, McNodeHandle, Member, MemberId, MeterConfig,
    MeterId, MeterRate, PipelineAction, PipelineInfo, PortCounters, PortId, PortInfo, PreState,
    ProfileId, QueueSelector, QueueSetting, RegisterId, Runtime, RuntimeError, Schema, SessionId,
    SwitchInfo, TableEntry, TableId, Update, ValueSetId, WriteMode,
};

use crate::client::ThriftClient;
use crate::service::{Rpc, key_from_bm, key_to_bm};
use crate::types::*;

fn unimplemented(what: &str) -> RuntimeError {
    RuntimeError::unimplemented(format!("bmv2's Thrift services cannot {what}"))
}

fn handle(h: EntryHandle) -> BmEntryHandle {
    h.0 as BmEntryHandle
}

fn bm_rates(c: &MeterConfig) -> Vec<BmMeterRateConfig> {
    c.rates
        .iter()
        .map(|r| BmMeterRateConfig {
            units_per_micros: r.units_per_us,
            burst_size: r.burst,
        })
        .collect()
}

fn rates(r: &[BmMeterRateConfig]) -> MeterConfig {
    MeterConfig {
        rates: r
            .iter()
            .map(|x| MeterRate {
                units_per_us: x.units_per_micros,
                burst: x.burst_size,
            })
            .collect(),
    }
}

/// The PRE of `bm_mc_get_entries`' JSON.
pub fn pre_from_json(text: &str) -> Option<PreState> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let list = |x: &serde_json::Value, k: &str| -> Vec<serde_json::Value> {
        x.get(k)
            .and_then(|a| a.as_array())
            .cloned()
            .unwrap_or_default()
    };
    let nums = |x: Option<&serde_json::Value>| -> Vec<u32> {
        x.and_then(|a| a.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_u64())
                    .map(|n| n as u32)
                    .collect()
            })
            .unwrap_or_default()
    };
    let l2 = list(&v, "l2_handles");
    let mut pre = PreState::default();
    for g in list(&v, "mgrps") {
        pre.groups.push(McGroup {
            id: g.get("id")?.as_u64()? as u32,
            nodes: nums(g.get("l1_handles"))
                .into_iter()
                .map(McNodeHandle)
                .collect(),
        });
    }
    for n in list(&v, "l1_handles") {
        let h = n.get("handle")?.as_u64()? as u32;
        let l2h = n.get("l2_handle").and_then(|x| x.as_u64());
        let e = l2
            .iter()
            .find(|e| l2h.is_some() && e.get("handle").and_then(|x| x.as_u64()) == l2h);
        pre.nodes.push(McNode {
            handle: McNodeHandle(h),
            rid: n.get("rid")?.as_u64()? as u32,
            ports: nums(e.and_then(|e| e.get("ports"))),
            lags: nums(e.and_then(|e| e.get("lags"))),
            group: pre
                .groups
                .iter()
                .find(|g| g.nodes.contains(&McNodeHandle(h)))
                .map(|g| g.id),
        });
    }
    for l in list(&v, "lags") {
        pre.lags
            .push((l.get("id")?.as_u64()? as u32, nums(l.get("ports"))));
    }
    Some(pre)
}

impl ThriftClient {
    /// Reads the switch's program (`bm_get_config`) and keeps its model for the
    /// [`Runtime`] operations.
    pub fn fetch_schema(&mut self) -> Rpc<Arc<Schema>> {
        let json = self.bm_get_config()?;
        let s = Schema::shared_from_json(&json)?;
        self.schema = Some(s.clone());
        Ok(s)
    }

    /// Uses this program model for the [`Runtime`] operations (when the JSON is known
    /// already: `p4jet cli --json`).
    pub fn set_schema(&mut self, schema: Option<Arc<Schema>>) {
        self.schema = schema;
    }

    fn need(&self) -> Rpc<Arc<Schema>> {
        self.schema.clone().ok_or_else(RuntimeError::no_pipeline)
    }

    fn table_ref(&self, t: TableId) -> Rpc<(Arc<Schema>, String, TableKind)> {
        let s = self.need()?;
        let ts = s.table(t).ok_or_else(|| {
            RuntimeError::not_found(format!("no table {}", t.0)).with_bmv2(TC::INVALID_TABLE_NAME)
        })?;
        let (name, kind) = (ts.name.clone(), ts.kind);
        Ok((s, name, kind))
    }

    fn profile_name(&self, p: ProfileId) -> Rpc<String> {
        let s = self.need()?;
        s.profile(p).map(|x| x.name.clone()).ok_or_else(|| {
            RuntimeError::not_found(format!("no action profile {}", p.0))
                .with_bmv2(TC::INVALID_ACTION_PROFILE_NAME)
        })
    }

    /// The handle of an entry named by handle or key.
    fn entry_handle(&mut self, table: &str, e: &EntryRef) -> Rpc<BmEntryHandle> {
        match e {
            EntryRef::Handle(h) => Ok(handle(*h)),
            EntryRef::Key(k) => Ok(self
                .bm_mt_get_entry_from_key(
                    table,
                    &key_to_bm(k),
                    BmAddEntryOptions {
                        priority: Some(k.priority),
                    },
                )?
                .entry_handle),
        }
    }

    fn action_name(s: &Schema, c: &ActionCall) -> String {
        s.action_name(c.action)
    }

    /// The model's view of a Thrift action entry of table `t`.
    fn model_action(s: &Schema, t: &Table, a: &BmActionEntry) -> Option<EntryAction> {
        Some(match a {
            BmActionEntry::None => return None,
            BmActionEntry::ActionData {
                action_name,
                action_data,
            } => EntryAction::Direct(ActionCall::new(
                t.action_named(s, action_name)?,
                action_data.clone(),
            )),
            BmActionEntry::MbrHandle(m) => EntryAction::Member(MemberId(*m as u32)),
            BmActionEntry::GrpHandle(g) => EntryAction::Group(GroupId(*g as u32)),
        })
    }

    fn model_entry(s: &Schema, t: &Table, e: &BmMtEntry) -> Option<TableEntry> {
        let priority = if t.needs_priority() {
            e.options.priority.unwrap_or(0)
        } else {
            p4jet_runtime::NO_PRIORITY
        };
        Some(TableEntry {
            handle: EntryHandle(e.entry_handle as u32),
            key: key_from_bm(&e.match_key, priority),
            action: Self::model_action(s, t, &e.action_entry)?,
            ttl: e.life.map(|l| EntryTtl {
                timeout_ms: u64::from(l.timeout_ms as u32),
                idle_ms: u64::from(l.time_since_hit_ms as u32),
            }),
            is_const: t.const_entries,
        })
    }

    fn write_one(&mut self, u: Update) -> Rpc<Applied> {
        let done = |r: Rpc<()>| r.map(|()| Applied::Done);
        match u {
            Update::AddEntry { table, entry } => {
                let (s, name, _) = self.table_ref(table)?;
                let key = key_to_bm(&entry.key);
                let opts = BmAddEntryOptions {
                    priority: Some(entry.key.priority),
                };
                let h = match &entry.action {
                    EntryAction::Direct(c) => {
                        self.bm_mt_add_entry(&name, &key, &Self::action_name(&s, c), &c.args, opts)?
                    }
                    EntryAction::Member(m) => {
                        self.bm_mt_indirect_add_entry(&name, &key, m.0 as i32, opts)?
                    }
                    EntryAction::Group(g) => {
                        self.bm_mt_indirect_ws_add_entry(&name, &key, g.0 as i32, opts)?
                    }
                    EntryAction::OneShot(_) => {
                        return Err(unimplemented("program one-shot selector entries"));
                    }
                };
                if let Some(ms) = entry.timeout_ms.filter(|ms| *ms > 0) {
                    self.bm_mt_set_entry_ttl(&name, h, i32::try_from(ms).unwrap_or(i32::MAX))?;
                }
                Ok(Applied::Entry(EntryHandle(h as u32)))
            }
            Update::ModifyEntry {
                table,
                entry,
                action,
            } => {
                let (s, name, _) = self.table_ref(table)?;
                let h = self.entry_handle(&name, &entry)?;
                done(match &action {
                    EntryAction::Direct(c) => {
                        self.bm_mt_modify_entry(&name, h, &Self::action_name(&s, c), &c.args)
                    }
                    EntryAction::Member(m) => {
                        self.bm_mt_indirect_modify_entry(&name, h, m.0 as i32)
                    }
                    EntryAction::Group(g) => {
                        self.bm_mt_indirect_ws_modify_entry(&name, h, g.0 as i32)
                    }
                    EntryAction::OneShot(_) => {
                        return Err(unimplemented("program one-shot selector entries"));
                    }
                })
            }
            Update::DeleteEntry { table, entry } => {
                let (_, name, kind) = self.table_ref(table)?;
                let h = self.entry_handle(&name, &entry)?;
                done(match kind {
                    TableKind::Direct => self.bm_mt_delete_entry(&name, h),
                    _ => self.bm_mt_indirect_delete_entry(&name, h),
                })
            }
            Update::ClearEntries {
                table,
                reset_default,
            } => {
                let (_, name, _) = self.table_ref(table)?;
                done(self.bm_mt_clear_entries(&name, reset_default))
            }
            Update::SetDefault { table, action } => {
                let (s, name, _) = self.table_ref(table)?;
                done(match &action {
                    EntryAction::Direct(c) => {
                        self.bm_mt_set_default_action(&name, &Self::action_name(&s, c), &c.args)
                    }
                    EntryAction::Member(m) => {
                        self.bm_mt_indirect_set_default_member(&name, m.0 as i32)
                    }
                    EntryAction::Group(g) => {
                        self.bm_mt_indirect_ws_set_default_group(&name, g.0 as i32)
                    }
                    EntryAction::OneShot(_) => {
                        return Err(unimplemented("program one-shot selector entries"));
                    }
                })
            }
            Update::ResetDefault { table } => {
                let (_, name, kind) = self.table_ref(table)?;
                done(match kind {
                    TableKind::Direct => self.bm_mt_reset_default_entry(&name),
                    _ => self.bm_mt_indirect_reset_default_entry(&name),
                })
            }
            Update::SetEntryTimeout {
                table,
                entry,
                timeout_ms,
            } => {
                let (_, name, _) = self.table_ref(table)?;
                let h = self.entry_handle(&name, &entry)?;
                done(self.bm_mt_set_entry_ttl(&name, h, timeout_ms as i32))
            }
            Update::ReserveEntries { .. } => Ok(Applied::Done),
            Update::WriteDirectCounter {
                table,
                entry,
                value,
            } => {
                let (_, name, _) = self.table_ref(table)?;
                let h = self.entry_handle(&name, &entry)?;
                done(self.bm_mt_write_counter(
                    &name,
                    h,
                    BmCounterValue {
                        bytes: value.bytes,
                        packets: value.packets,
                    },
                ))
            }
            Update::ResetDirectCounters { table } => {
                let (_, name, _) = self.table_ref(table)?;
                done(self.bm_mt_reset_counters(&name))
            }
            Update::SetDirectMeter {
                table,
                entry,
                config,
            } => {
                let (_, name, _) = self.table_ref(table)?;
                let h = self.entry_handle(&name, &entry)?;
                done(self.bm_mt_set_meter_rates(&name, h, &bm_rates(&config)))
            }
            Update::AddMember {
                profile,
                id,
                action,
            } => {
                if id.is_some() {
                    return Err(unimplemented("create a member with a chosen id"));
                }
                let p = self.profile_name(profile)?;
                let s = self.need()?;
                let m = self.bm_mt_act_prof_add_member(
                    &p,
                    &Self::action_name(&s, &action),
                    &action.args,
                )?;
                Ok(Applied::Member(MemberId(m as u32)))
            }
            Update::ModifyMember {
                profile,
                member,
                action,
            } => {
                let p = self.profile_name(profile)?;
                let s = self.need()?;
                done(self.bm_mt_act_prof_modify_member(
                    &p,
                    member.0 as i32,
                    &Self::action_name(&s, &action),
                    &action.args,
                ))
            }
            Update::DeleteMember { profile, member } => {
                let p = self.profile_name(profile)?;
                done(self.bm_mt_act_prof_delete_member(&p, member.0 as i32))
            }
            Update::AddGroup { profile, id, .. } => {
                if id.is_some() {
                    return Err(unimplemented("create a group with a chosen id"));
                }
                let p = self.profile_name(profile)?;
                let g = self.bm_mt_act_prof_create_group(&p)?;
                Ok(Applied::Group(GroupId(g as u32)))
            }
            Update::DeleteGroup { profile, group } => {
                let p = self.profile_name(profile)?;
                done(self.bm_mt_act_prof_delete_group(&p, group.0 as i32))
            }
            Update::AddToGroup {
                profile,
                group,
                member,
            } => {
                let p = self.profile_name(profile)?;
                done(self.bm_mt_act_prof_add_member_to_group(&p, member.0 as i32, group.0 as i32))
            }
            Update::RemoveFromGroup {
                profile,
                group,
                member,
            } => {
                let p = self.profile_name(profile)?;
                done(self.bm_mt_act_prof_remove_member_from_group(
                    &p,
                    member.0 as i32,
                    group.0 as i32,
                ))
            }
            Update::SetGroupMembers {
                profile,
                group,
                members,
            } => {
                if members.iter().any(|m| m.weight != 1) {
                    return Err(unimplemented("give group members weights"));
                }
                let p = self.profile_name(profile)?;
                let now = self
                    .bm_mt_act_prof_get_group(&p, group.0 as i32)?
                    .mbr_handles;
                for m in &now {
                    if !members.iter().any(|x| x.member.0 as i32 == *m) {
                        self.bm_mt_act_prof_remove_member_from_group(&p, *m, group.0 as i32)?;
                    }
                }
                for m in &members {
                    if !now.contains(&(m.member.0 as i32)) {
                        self.bm_mt_act_prof_add_member_to_group(
                            &p,
                            m.member.0 as i32,
                            group.0 as i32,
                        )?;
                    }
                }
                Ok(Applied::Done)
            }
            Update::WriteCounter {
                counter,
                index,
                value,
            } => {
                let name = self.counter_name(counter)?;
                done(self.bm_counter_write(
                    &name,
                    index as i32,
                    BmCounterValue {
                        bytes: value.bytes,
                        packets: value.packets,
                    },
                ))
            }
            Update::ResetCounter { counter } => {
                let name = self.counter_name(counter)?;
                done(self.bm_counter_reset_all(&name))
            }
            Update::SetMeter {
                meter,
                index,
                config,
            } => {
                let name = self.meter_name(meter)?;
                done(match index {
                    Some(i) => self.bm_meter_set_rates(&name, i as i32, &bm_rates(&config)),
                    None => self.bm_meter_array_set_rates(&name, &bm_rates(&config)),
                })
            }
            Update::WriteRegister {
                register,
                start,
                end,
                value,
            } => {
                let name = self.register_name(register)?;
                let v = crate::service::standard::register_i64(&value);
                done(if end == start.saturating_add(1) {
                    self.bm_register_write(&name, start as i32, v)
                } else {
                    self.bm_register_write_range(&name, start as i32, end as i32, v)
                })
            }
            Update::ResetRegister { register } => {
                let name = self.register_name(register)?;
                done(self.bm_register_reset(&name))
            }
            Update::AddValueSetMember { value_set, value } => {
                let name = self.vset_name(value_set)?;
                done(self.bm_parse_vset_add(&name, &value))
            }
            Update::RemoveValueSetMember { value_set, value } => {
                let name = self.vset_name(value_set)?;
                done(self.bm_parse_vset_remove(&name, &value))
            }
            Update::ClearValueSet { value_set } => {
                let name = self.vset_name(value_set)?;
                done(self.bm_parse_vset_clear(&name))
            }
            Update::ConfigureDigest { digest, config } => {
                if config.ack_timeout_ns != 0 {
                    return Err(unimplemented("set a digest ack timeout"));
                }
                let id = self.digest_list(digest)?;
                self.bm_learning_set_timeout(
                    id,
                    i32::try_from(config.max_timeout_ns / 1_000_000).unwrap_or(i32::MAX),
                )?;
                self.bm_learning_set_buffer_size(id, config.max_list_size as i32)?;
                self.digest_configs.insert(digest, config);
                Ok(Applied::Done)
            }
            Update::AckDigest {
                digest,
                list_id,
                samples,
            } => {
                let id = self.digest_list(digest)?;
                done(match samples {
                    Some(s) => {
                        let s: Vec<i32> = s.iter().map(|x| *x as i32).collect();
                        self.bm_learning_ack(id, list_id as i64, &s)
                    }
                    None => self.bm_learning_ack_buffer(id, list_id as i64),
                })
            }
            Update::McGroupCreate { group } => {
                self.bm_mc_mgrp_create(group as i32)?;
                Ok(Applied::Done)
            }
            Update::McGroupDestroy { group } => done(self.bm_mc_mgrp_destroy(group as i32)),
            Update::McNodeCreate { rid, ports, lags } => {
                let h = self.bm_mc_node_create(
                    rid as i32,
                    &ports_to_port_map(&ports),
                    &ports_to_port_map(&lags),
                )?;
                Ok(Applied::McNode(McNodeHandle(h as u32)))
            }
            Update::McNodeUpdate { node, ports, lags } => done(self.bm_mc_node_update(
                node.0 as i32,
                &ports_to_port_map(&ports),
                &ports_to_port_map(&lags),
            )),
            Update::McNodeAssociate { group, node } => {
                done(self.bm_mc_node_associate(group as i32, node.0 as i32))
            }
            Update::McNodeDissociate { group, node } => {
                done(self.bm_mc_node_dissociate(group as i32, node.0 as i32))
            }
            Update::McNodeDestroy { node } => done(self.bm_mc_node_destroy(node.0 as i32)),
            Update::McSetLag { lag, ports } => {
                done(self.bm_mc_set_lag_membership(lag as i16, &ports_to_port_map(&ports)))
            }
            Update::WriteMulticastGroup {
                mode,
                group,
                replicas,
            } => {
                let pre = self.read_pre()?;
                let exists = pre.groups.iter().any(|g| g.id == group);
                match mode {
                    WriteMode::Insert if exists => {
                        return Err(RuntimeError::already_exists(format!(
                            "multicast group {group} exists"
                        )));
                    }
                    WriteMode::Modify if !exists => {
                        return Err(RuntimeError::not_found(format!(
                            "no multicast group {group}"
                        )));
                    }
                    _ => {}
                }
                self.drop_group_nodes(&pre, group)?;
                if !exists {
                    self.bm_mc_mgrp_create(group as i32)?;
                }
                let mut by_rid: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
                for r in replicas {
                    by_rid.entry(r.instance).or_default().push(r.port);
                }
                for (rid, ports) in by_rid {
                    let n = self.bm_mc_node_create(rid as i32, &ports_to_port_map(&ports), "")?;
                    self.bm_mc_node_associate(group as i32, n)?;
                }
                Ok(Applied::Done)
            }
            Update::DeleteMulticastGroup { group } => {
                let pre = self.read_pre()?;
                if !pre.groups.iter().any(|g| g.id == group) {
                    return Err(RuntimeError::not_found(format!(
                        "no multicast group {group}"
                    )));
                }
                self.drop_group_nodes(&pre, group)?;
                done(self.bm_mc_mgrp_destroy(group as i32))
            }
            Update::WriteCloneSession { mode, session } => {
                let exists = self.mirroring_session_get(session.id as i32).is_ok();
                match mode {
                    WriteMode::Insert if exists => {
                        return Err(RuntimeError::already_exists(format!(
                            "clone session {} exists",
                            session.id
                        )));
                    }
                    WriteMode::Modify if !exists => {
                        return Err(RuntimeError::not_found(format!(
                            "no clone session {}",
                            session.id
                        )));
                    }
                    _ => {}
                }
                if session.packet_length_bytes != 0 {
                    return Err(unimplemented("truncate the copies of a clone session"));
                }
                let config = match &session.target {
                    CloneTarget::Bmv2 { port, mgid } => MirroringSessionConfig {
                        port: port.map(|p| p as i32),
                        mgid: mgid.map(|g| g as i32),
                    },
                    CloneTarget::Replicas(r) => match r.as_slice() {
                        [one] if one.instance == 0 => MirroringSessionConfig {
                            port: Some(one.port as i32),
                            mgid: None,
                        },
                        _ => {
                            return Err(unimplemented("make clone sessions of several replicas"));
                        }
                    },
                };
                done(self.mirroring_session_add(session.id as i32, config))
            }
            Update::DeleteCloneSession { id } => done(self.mirroring_session_delete(id as i32)),
        }
    }

    fn drop_group_nodes(&mut self, pre: &PreState, group: u32) -> Rpc<()> {
        if let Some(g) = pre.groups.iter().find(|g| g.id == group) {
            for n in &g.nodes {
                self.bm_mc_node_dissociate(group as i32, n.0 as i32)?;
                self.bm_mc_node_destroy(n.0 as i32)?;
            }
        }
        Ok(())
    }

    fn read_pre(&mut self) -> Rpc<PreState> {
        let text = self.bm_mc_get_entries()?;
        pre_from_json(&text).ok_or_else(|| {
            RuntimeError::internal("bm_mc_get_entries: the switch answered unreadable JSON")
        })
    }

    fn counter_name(&self, c: CounterId) -> Rpc<String> {
        self.need()?
            .counter(c)
            .map(|x| x.name.clone())
            .ok_or_else(|| RuntimeError::not_found(format!("no counter {}", c.0)))
    }

    fn meter_name(&self, m: MeterId) -> Rpc<String> {
        self.need()?
            .meter(m)
            .map(|x| x.name.clone())
            .ok_or_else(|| RuntimeError::not_found(format!("no meter {}", m.0)))
    }

    fn register_name(&self, r: RegisterId) -> Rpc<String> {
        self.need()?
            .register(r)
            .map(|x| x.name.clone())
            .ok_or_else(|| RuntimeError::not_found(format!("no register {}", r.0)))
    }

    fn vset_name(&self, v: ValueSetId) -> Rpc<String> {
        self.need()?
            .value_set(v)
            .map(|x| x.name.clone())
            .ok_or_else(|| RuntimeError::not_found(format!("no value set {}", v.0)))
    }

    fn digest_list(&self, d: DigestId) -> Rpc<i32> {
        self.need()?
            .digest(d)
            .map(|x| x.json_id as i32)
            .ok_or_else(|| RuntimeError::not_found(format!("no digest {}", d.0)))
    }

    fn calc_name(&self, c: CalcId) -> Rpc<String> {
        self.need()?
            .calculation(c)
            .map(|x| x.name.clone())
            .ok_or_else(|| RuntimeError::not_found(format!("no calculation {}", c.0)))
    }
}

impl Runtime for ThriftClient {
    fn schema(&self) -> Option<Arc<Schema>> {
        self.schema.clone()
    }

    fn pipeline(&mut self) -> Rpc<PipelineInfo> {
        let json = self.bm_get_config()?;
        let md5v = self.bm_get_config_md5()?;
        let mut md5 = [0u8; 16];
        if md5v.len() == 16 {
            md5.copy_from_slice(&md5v);
        }
        Ok(PipelineInfo {
            json: Arc::from(json.as_str()),
            md5,
            cookie: None,
            commit_pending: false,
        })
    }

    fn set_pipeline(&mut self, action: PipelineAction) -> Rpc<()> {
        match action {
            PipelineAction::Verify(c) => Schema::from_json(&c.json).map(drop),
            PipelineAction::Save(c) => {
                self.bm_load_new_config(&c.json)?;
                self.schema = Some(Schema::shared_from_json(&c.json)?);
                Ok(())
            }
            PipelineAction::Commit => self.bm_swap_configs(),
            PipelineAction::Replace(c) => {
                self.bm_load_new_config(&c.json)?;
                self.bm_swap_configs()?;
                self.schema = Some(Schema::shared_from_json(&c.json)?);
                Ok(())
            }
            PipelineAction::Reconcile(_) => Err(unimplemented("reconcile a program")),
        }
    }

    fn write(&mut self, updates: Vec<Update>, atomicity: Atomicity) -> BatchResult {
        if atomicity.all_or_nothing() {
            let e = unimplemented("apply an all-or-nothing batch (updates go one by one)");
            return BatchResult::all_failed(updates.len(), &e);
        }
        let results = updates.into_iter().map(|u| self.write_one(u)).collect();
        BatchResult { results }
    }

    fn entry_count(&mut self, table: TableId) -> Rpc<usize> {
        let (_, name, _) = self.table_ref(table)?;
        Ok(self.bm_mt_get_num_entries(&name)?.max(0) as usize)
    }

    fn table_entries(&mut self, table: TableId, from: EntryCursor, limit: usize) -> Rpc<EntryPage> {
        let (s, name, _) = self.table_ref(table)?;
        let ts = s
            .table(table)
            .ok_or_else(|| RuntimeError::internal("no table"))?;
        let all = self.bm_mt_get_entries(&name)?;
        let mut page = EntryPage::default();
        for e in all
            .iter()
            .filter(|e| (e.entry_handle as u32 & 0x00ff_ffff) >= from.0)
        {
            if page.entries.len() == limit.max(1) {
                page.next = Some(EntryCursor(e.entry_handle as u32 & 0x00ff_ffff));
                break;
            }
            if let Some(me) = Self::model_entry(&s, ts, e) {
                page.entries.push(me);
            }
        }
        Ok(page)
    }

    fn table_entry(&mut self, table: TableId, entry: &EntryRef) -> Rpc<TableEntry> {
        let (s, name, _) = self.table_ref(table)?;
        let ts = s
            .table(table)
            .ok_or_else(|| RuntimeError::internal("no table"))?;
        let e = match entry {
            EntryRef::Handle(h) => self.bm_mt_get_entry(&name, handle(*h))?,
            EntryRef::Key(k) => self.bm_mt_get_entry_from_key(
                &name,
                &key_to_bm(k),
                BmAddEntryOptions {
                    priority: Some(k.priority),
                },
            )?,
        };
        Self::model_entry(&s, ts, &e).ok_or_else(|| {
            RuntimeError::internal("the switch reported an action the program lacks")
        })
    }

    fn default_entry(&mut self, table: TableId) -> Rpc<Option<EntryAction>> {
        let (s, name, _) = self.table_ref(table)?;
        let ts = s
            .table(table)
            .ok_or_else(|| RuntimeError::internal("no table"))?;
        let a = self.bm_mt_get_default_entry(&name)?;
        Ok(Self::model_action(&s, ts, &a))
    }

    fn direct_counter(&mut self, table: TableId, entry: &EntryRef) -> Rpc<CounterValue> {
        let (_, name, _) = self.table_ref(table)?;
        let h = self.entry_handle(&name, entry)?;
        let c = self.bm_mt_read_counter(&name, h)?;
        Ok(CounterValue {
            bytes: c.bytes,
            packets: c.packets,
        })
    }

    fn direct_meter(&mut self, table: TableId, entry: &EntryRef) -> Rpc<MeterConfig> {
        let (_, name, _) = self.table_ref(table)?;
        let h = self.entry_handle(&name, entry)?;
        Ok(rates(&self.bm_mt_get_meter_rates(&name, h)?))
    }

    fn members(&mut self, profile: ProfileId) -> Rpc<Vec<Member>> {
        let p = self.profile_name(profile)?;
        let s = self.need()?;
        let ps = s
            .profile(profile)
            .ok_or_else(|| RuntimeError::internal("no profile"))?;
        Ok(self
            .bm_mt_act_prof_get_members(&p)?
            .iter()
            .filter_map(|m| {
                Some(Member {
                    id: MemberId(m.mbr_handle as u32),
                    action: ActionCall::new(
                        ps.action_named(&s, &m.action_name)?,
                        m.action_data.clone(),
                    ),
                })
            })
            .collect())
    }

    fn member(&mut self, profile: ProfileId, member: MemberId) -> Rpc<Member> {
        let p = self.profile_name(profile)?;
        let s = self.need()?;
        let ps = s
            .profile(profile)
            .ok_or_else(|| RuntimeError::internal("no profile"))?;
        let m = self.bm_mt_act_prof_get_member(&p, member.0 as i32)?;
        let a = ps.action_named(&s, &m.action_name).ok_or_else(|| {
            RuntimeError::internal(format!(
                "the switch reported unknown action {}",
                m.action_name
            ))
        })?;
        Ok(Member {
            id: member,
            action: ActionCall::new(a, m.action_data),
        })
    }

    fn groups(&mut self, profile: ProfileId) -> Rpc<Vec<Group>> {
        let p = self.profile_name(profile)?;
        Ok(self
            .bm_mt_act_prof_get_groups(&p)?
            .iter()
            .map(|g| Group {
                id: GroupId(g.grp_handle as u32),
                members: g
                    .mbr_handles
                    .iter()
                    .map(|m| GroupMember::new(MemberId(*m as u32)))
                    .collect(),
                max_size: 0,
            })
            .collect())
    }

    fn group(&mut self, profile: ProfileId, group: GroupId) -> Rpc<Group> {
        let p = self.profile_name(profile)?;
        let g = self.bm_mt_act_prof_get_group(&p, group.0 as i32)?;
        Ok(Group {
            id: group,
            members: g
                .mbr_handles
                .iter()
                .map(|m| GroupMember::new(MemberId(*m as u32)))
                .collect(),
            max_size: 0,
        })
    }

    fn counters(&mut self, counter: CounterId, start: u32, end: u32) -> Rpc<Vec<CounterValue>> {
        let name = self.counter_name(counter)?;
        (start..end)
            .map(|i| {
                self.bm_counter_read(&name, i as i32).map(|c| CounterValue {
                    bytes: c.bytes,
                    packets: c.packets,
                })
            })
            .collect()
    }

    fn meter(&mut self, meter: MeterId, index: u32) -> Rpc<MeterConfig> {
        let name = self.meter_name(meter)?;
        Ok(rates(&self.bm_meter_get_rates(&name, index as i32)?))
    }

    fn registers(&mut self, register: RegisterId, start: u32, end: u32) -> Rpc<Vec<Bytes>> {
        let name = self.register_name(register)?;
        let width = self.need()?.register(register).map_or(64, |r| r.width);
        (start..end)
            .map(|i| {
                self.bm_register_read(&name, i as i32)
                    .map(|v| p4jet_runtime::schema::fit(&v.to_be_bytes(), width))
            })
            .collect()
    }

    fn value_set(&mut self, value_set: ValueSetId) -> Rpc<Vec<Bytes>> {
        let name = self.vset_name(value_set)?;
        self.bm_parse_vset_get(&name)
    }

    fn pre(&mut self) -> Rpc<PreState> {
        self.read_pre()
    }

    fn clone_session(&mut self, id: SessionId) -> Rpc<CloneSession> {
        let c = self.mirroring_session_get(id as i32)?;
        Ok(CloneSession {
            id,
            target: CloneTarget::Bmv2 {
                port: c.port.map(|p| p as u32),
                mgid: c.mgid.map(|g| g as u32),
            },
            class_of_service: 0,
            packet_length_bytes: 0,
        })
    }

    fn clone_sessions(&mut self) -> Rpc<Vec<CloneSession>> {
        Err(unimplemented("list clone sessions"))
    }

    fn digest_config(&mut self, digest: DigestId) -> Rpc<DigestConfig> {
        self.digest_list(digest)?;
        Ok(self
            .digest_configs
            .get(&digest)
            .copied()
            .unwrap_or_default())
    }

    fn poll_digests(&mut self) -> Rpc<Vec<DigestList>> {
        Err(unimplemented(
            "poll digests (bmv2 sends them on its notifications socket)",
        ))
    }

    fn digest_log(&mut self, digest: Option<DigestId>, count: usize) -> Rpc<DigestLog> {
        let s = self.need()?;
        let name = match digest {
            Some(d) => s
                .digest(d)
                .map(|x| x.name.clone())
                .ok_or_else(|| RuntimeError::not_found(format!("no digest {}", d.0)))?,
            None => String::new(),
        };
        let text = self.p4jet_digest_log(&name, i32::try_from(count).unwrap_or(i32::MAX))?;
        crate::service::p4jet::digest_log_from_json(&s, &text)
            .ok_or_else(|| RuntimeError::internal("p4jet_digest_log: unreadable answer"))
    }

    fn poll_idle_timeouts(&mut self) -> Rpc<Vec<IdleTimeout>> {
        Err(unimplemented("notify idle timeouts"))
    }

    fn info(&mut self) -> Rpc<SwitchInfo> {
        let c = self.bm_mgmt_get_info()?;
        Ok(SwitchInfo {
            device_id: c.device_id as u64,
            thrift_port: c.thrift_port as u16,
            notifications_socket: c.notifications_socket,
            elogger_socket: c.elogger_socket,
            debugger_socket: c.debugger_socket,
            ..SwitchInfo::default()
        })
    }

    fn clock(&mut self) -> Rpc<ClockReading> {
        Ok(ClockReading {
            elapsed_us: self.get_time_elapsed_us()? as u64,
            since_epoch_us: self.get_time_since_epoch_us()? as u64,
        })
    }

    fn ports(&mut self) -> Rpc<Vec<PortInfo>> {
        Ok(self
            .bm_dev_mgr_show_ports()?
            .into_iter()
            .map(|p| PortInfo {
                port: p.port_num as u32,
                pcap: p.extra.get("in_pcap").cloned(),
                iface: p.iface_name,
                up: p.is_up,
            })
            .collect())
    }

    fn port_counters(&mut self, _port: PortId) -> Rpc<PortCounters> {
        Err(unimplemented("read port counters"))
    }

    fn packet_books(&mut self) -> Rpc<String> {
        self.p4jet_packet_books()
    }

    fn workers(&mut self) -> Rpc<p4jet_runtime::Workers> {
        let t = self.p4jet_workers()?;
        crate::service::p4jet::workers_from_json(&t).ok_or_else(|| {
            p4jet_runtime::RuntimeError::internal(format!("p4jet_workers: bad reply `{t}`"))
        })
    }

    fn set_workers(&mut self, count: u32) -> Rpc<()> {
        let n = i32::try_from(count)
            .map_err(|_| p4jet_runtime::RuntimeError::out_of_range(format!("{count} workers")))?;
        self.p4jet_set_workers(n)
    }

    fn add_port(&mut self, port: PortInfo) -> Rpc<()> {
        self.bm_dev_mgr_add_port(
            &port.iface,
            port.port as i32,
            port.pcap.as_deref().unwrap_or(""),
        )
    }

    fn remove_port(&mut self, port: PortId) -> Rpc<()> {
        self.bm_dev_mgr_remove_port(port as i32)
    }

    fn set_queue(&mut self, which: QueueSelector, setting: QueueSetting) -> Rpc<()> {
        match (which, setting) {
            (QueueSelector::All, QueueSetting::Depth(d)) => {
                self.set_all_egress_queue_depths(d as i32)
            }
            (QueueSelector::All, QueueSetting::Rate(r)) => {
                self.set_all_egress_queue_rates(r as i64)
            }
            (QueueSelector::Port(p), QueueSetting::Depth(d)) => {
                self.set_egress_queue_depth(p as i32, d as i32)
            }
            (QueueSelector::Port(p), QueueSetting::Rate(r)) => {
                self.set_egress_queue_rate(p as i32, r as i64)
            }
            (QueueSelector::Priority(p, q), QueueSetting::Depth(d)) => {
                self.set_egress_priority_queue_depth(p as i32, q as i32, d as i32)
            }
            (QueueSelector::Priority(p, q), QueueSetting::Rate(r)) => {
                self.set_egress_priority_queue_rate(p as i32, q as i32, r as i64)
            }
        }
        .map(drop)
    }

    fn set_crc(&mut self, calc: CalcId, config: CrcConfig) -> Rpc<()> {
        let name = self.calc_name(calc)?;
        match config.width {
            16 => self.bm_set_crc16_custom_parameters(
                &name,
                BmCrc16Config {
                    polynomial: config.polynomial as u16,
                    initial_remainder: config.initial_remainder as u16,
                    final_xor_value: config.final_xor_value as u16,
                    data_reflected: config.data_reflected,
                    remainder_reflected: config.remainder_reflected,
                },
            ),
            32 => self.bm_set_crc32_custom_parameters(
                &name,
                BmCrc32Config {
                    polynomial: config.polynomial as u32,
                    initial_remainder: config.initial_remainder as u32,
                    final_xor_value: config.final_xor_value as u32,
                    data_reflected: config.data_reflected,
                    remainder_reflected: config.remainder_reflected,
                },
            ),
            w => Err(RuntimeError::invalid(format!("CRC width {w}: 16 or 32"))),
        }
    }

    fn set_toeplitz_key(&mut self, calc: CalcId, key: Bytes) -> Rpc<()> {
        let name = self.calc_name(calc)?;
        self.bm_set_toeplitz_hash_key(&name, &key)
    }

    fn reset_state(&mut self) -> Rpc<()> {
        self.bm_reset_state()
    }

    fn serialize_state(&mut self) -> Rpc<String> {
        self.bm_serialize_state()
    }
}
