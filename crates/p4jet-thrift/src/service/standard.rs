//! The `standard` service: match tables (direct and indirect), action profiles,
//! direct and indexed counters and meters, registers, parser value sets, learning,
//! configuration swap, device manager and management.

use p4jet_runtime::bmv2::{
    Bmv2Code, CounterOperationErrorCode as CC, CrcErrorCode, DevMgrErrorCode, IdLookupErrorCode,
    LearnOperationErrorCode as LC, MeterOperationErrorCode as MC,
    ParseVSetOperationErrorCode as VC, RegisterOperationErrorCode as RC,
    SwapOperationErrorCode as SC, TableOperationErrorCode as TC, ToeplitzHashErrorCode,
};
use p4jet_runtime::schema::{ObjectKind, TableKind};
use p4jet_runtime::{
    ActionCall, Applied, CounterValue, CrcConfig, DigestId, EntryAction, EntryHandle, EntryRef,
    GroupId, MemberId, MeterConfig, MeterRate, NewEntry, PipelineAction, PipelineConfig, PortInfo,
    RuntimeError, Update, all_entries,
};

use super::{Bmv2, Reply, Rpc, entry_to_bm, exception_reply, key_from_bm, ret, ret_void, table_of};
use crate::codec::{self, Fields, MethodSpec};
use crate::protocol::{TType, Value};
use crate::types::*;

fn tc(code: TC, m: impl Into<String>) -> RuntimeError {
    Bmv2Code::Table(code).error(m)
}

/// `WRONG_TABLE_TYPE` unless the table is direct (`Some(false)`), indirect
/// (`Some(true)`: with or without selector) or has a selector (`None`).
fn check_kind(t: &p4jet_runtime::schema::Table, want: Option<bool>) -> Rpc<()> {
    let ok = matches!(
        (t.kind, want),
        (TableKind::Direct, Some(false))
            | (
                TableKind::Indirect(_) | TableKind::IndirectWs(_),
                Some(true)
            )
            | (TableKind::IndirectWs(_), None)
    );
    if ok {
        Ok(())
    } else {
        Err(tc(
            TC::WRONG_TABLE_TYPE,
            format!("table {} is not of the kind this call needs", t.name),
        ))
    }
}

/// The model's meter rates of Thrift rates.
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

fn bm_rates(c: &MeterConfig) -> Vec<BmMeterRateConfig> {
    c.rates
        .iter()
        .map(|r| BmMeterRateConfig {
            units_per_micros: r.units_per_us,
            burst_size: r.burst,
        })
        .collect()
}

/// The cell value bmv2 stores for an `i64` written to a `bit<width>` register: the
/// two's complement of the value, truncated to the width (big-endian bytes).
pub fn register_bytes(value: i64, width: u32) -> Vec<u8> {
    let nb = width.div_ceil(8) as usize;
    let fill = if value < 0 { 0xff } else { 0 };
    let mut v = vec![fill; nb.max(8)];
    let n = v.len();
    v[n - 8..].copy_from_slice(&value.to_be_bytes());
    p4jet_runtime::schema::fit(&v, width)
}

/// The low 64 bits of a register cell, as Thrift carries it.
pub fn register_i64(cell: &[u8]) -> i64 {
    let mut b = [0u8; 8];
    let n = cell.len().min(8);
    b[8 - n..].copy_from_slice(&cell[cell.len() - n..]);
    i64::from_be_bytes(b)
}

fn index(i: i32, err: Bmv2Code, what: &str) -> Rpc<u32> {
    u32::try_from(i).map_err(|_| err.error(format!("{what}: negative index {i}")))
}

#[allow(missing_docs)]
impl Bmv2<'_> {
    // ---------------------------------------------------------------- tables

    pub fn bm_mt_get_num_entries(&mut self, table_name: &str) -> Rpc<i64> {
        let (_, t) = self.table(table_name)?;
        Ok(self.rt.entry_count(t)? as i64)
    }

    pub fn bm_mt_clear_entries(&mut self, table_name: &str, reset_default_entry: bool) -> Rpc<()> {
        let (_, t) = self.table(table_name)?;
        self.apply(Update::ClearEntries {
            table: t,
            reset_default: reset_default_entry,
        })
        .map(drop)
    }

    pub fn bm_mt_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        action_name: &str,
        action_data: &[Vec<u8>],
        options: BmAddEntryOptions,
    ) -> Rpc<BmEntryHandle> {
        let (s, t) = self.table(table_name)?;
        let ts = table_of(&s, t)?;
        check_kind(ts, Some(false))?;
        let call = Self::table_action(&s, ts, action_name, action_data.to_vec())?;
        let key = key_from_bm(match_key, options.priority.unwrap_or(0));
        self.add(t, key, EntryAction::Direct(call))
    }

    fn add(
        &mut self,
        table: p4jet_runtime::TableId,
        key: p4jet_runtime::MatchKey,
        action: EntryAction,
    ) -> Rpc<BmEntryHandle> {
        match self.apply(Update::AddEntry {
            table,
            entry: NewEntry::new(key, action),
        })? {
            Applied::Entry(h) => Ok(h.0 as BmEntryHandle),
            _ => Err(RuntimeError::internal("no entry handle")),
        }
    }

    pub fn bm_mt_set_default_action(
        &mut self,
        table_name: &str,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> Rpc<()> {
        let (s, t) = self.table(table_name)?;
        let ts = table_of(&s, t)?;
        check_kind(ts, Some(false))?;
        let call = Self::table_action(&s, ts, action_name, action_data.to_vec())?;
        self.apply(Update::SetDefault {
            table: t,
            action: EntryAction::Direct(call),
        })
        .map(drop)
    }

    pub fn bm_mt_reset_default_entry(&mut self, table_name: &str) -> Rpc<()> {
        let (s, t) = self.table(table_name)?;
        check_kind(table_of(&s, t)?, Some(false))?;
        self.apply(Update::ResetDefault { table: t }).map(drop)
    }

    pub fn bm_mt_delete_entry(&mut self, table_name: &str, entry_handle: BmEntryHandle) -> Rpc<()> {
        let (s, t) = self.table(table_name)?;
        check_kind(table_of(&s, t)?, Some(false))?;
        self.apply(Update::DeleteEntry {
            table: t,
            entry: EntryRef::Handle(EntryHandle(entry_handle as u32)),
        })
        .map(drop)
    }

    pub fn bm_mt_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> Rpc<()> {
        let (s, t) = self.table(table_name)?;
        let ts = table_of(&s, t)?;
        check_kind(ts, Some(false))?;
        let call = Self::table_action(&s, ts, action_name, action_data.to_vec())?;
        self.apply(Update::ModifyEntry {
            table: t,
            entry: EntryRef::Handle(EntryHandle(entry_handle as u32)),
            action: EntryAction::Direct(call),
        })
        .map(drop)
    }

    pub fn bm_mt_set_entry_ttl(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        timeout_ms: i32,
    ) -> Rpc<()> {
        let (_, t) = self.table(table_name)?;
        self.apply(Update::SetEntryTimeout {
            table: t,
            entry: EntryRef::Handle(EntryHandle(entry_handle as u32)),
            timeout_ms: u64::from(timeout_ms as u32),
        })
        .map(drop)
    }

    // ------------------------------------------------------- action profiles

    fn profile(
        &self,
        name: &str,
    ) -> Rpc<(
        std::sync::Arc<p4jet_runtime::Schema>,
        p4jet_runtime::ProfileId,
    )> {
        let s = self.schema()?;
        let p = s.profile_by_name(name).ok_or_else(|| {
            tc(
                TC::INVALID_ACTION_PROFILE_NAME,
                format!("no action profile `{name}`"),
            )
        })?;
        Ok((s, p))
    }

    fn profile_call(
        &self,
        profile: &str,
        action_name: &str,
        data: &[Vec<u8>],
    ) -> Rpc<(p4jet_runtime::ProfileId, ActionCall)> {
        let (s, p) = self.profile(profile)?;
        let ps = s
            .profile(p)
            .ok_or_else(|| RuntimeError::internal("no profile"))?;
        let a = ps.action_named(&s, action_name).ok_or_else(|| {
            tc(
                TC::INVALID_ACTION_NAME,
                format!("action profile {profile}: no action `{action_name}`"),
            )
        })?;
        Ok((p, ActionCall::new(a, data.to_vec())))
    }

    pub fn bm_mt_act_prof_add_member(
        &mut self,
        act_prof_name: &str,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> Rpc<BmMemberHandle> {
        let (profile, action) = self.profile_call(act_prof_name, action_name, action_data)?;
        match self.apply(Update::AddMember {
            profile,
            id: None,
            action,
        })? {
            Applied::Member(m) => Ok(m.0 as BmMemberHandle),
            _ => Err(RuntimeError::internal("no member handle")),
        }
    }

    pub fn bm_mt_act_prof_delete_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> Rpc<()> {
        let (_, profile) = self.profile(act_prof_name)?;
        self.apply(Update::DeleteMember {
            profile,
            member: MemberId(mbr_handle as u32),
        })
        .map(drop)
    }

    pub fn bm_mt_act_prof_modify_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> Rpc<()> {
        let (profile, action) = self.profile_call(act_prof_name, action_name, action_data)?;
        self.apply(Update::ModifyMember {
            profile,
            member: MemberId(mbr_handle as u32),
            action,
        })
        .map(drop)
    }

    pub fn bm_mt_act_prof_create_group(&mut self, act_prof_name: &str) -> Rpc<BmGroupHandle> {
        let (_, profile) = self.profile(act_prof_name)?;
        match self.apply(Update::AddGroup {
            profile,
            id: None,
            max_size: 0,
        })? {
            Applied::Group(g) => Ok(g.0 as BmGroupHandle),
            _ => Err(RuntimeError::internal("no group handle")),
        }
    }

    pub fn bm_mt_act_prof_delete_group(
        &mut self,
        act_prof_name: &str,
        grp_handle: BmGroupHandle,
    ) -> Rpc<()> {
        let (_, profile) = self.profile(act_prof_name)?;
        self.apply(Update::DeleteGroup {
            profile,
            group: GroupId(grp_handle as u32),
        })
        .map(drop)
    }

    pub fn bm_mt_act_prof_add_member_to_group(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        grp_handle: BmGroupHandle,
    ) -> Rpc<()> {
        let (_, profile) = self.profile(act_prof_name)?;
        self.apply(Update::AddToGroup {
            profile,
            group: GroupId(grp_handle as u32),
            member: MemberId(mbr_handle as u32),
        })
        .map(drop)
    }

    pub fn bm_mt_act_prof_remove_member_from_group(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        grp_handle: BmGroupHandle,
    ) -> Rpc<()> {
        let (_, profile) = self.profile(act_prof_name)?;
        self.apply(Update::RemoveFromGroup {
            profile,
            group: GroupId(grp_handle as u32),
            member: MemberId(mbr_handle as u32),
        })
        .map(drop)
    }

    fn member_to_bm(s: &p4jet_runtime::Schema, m: &p4jet_runtime::Member) -> BmMtActProfMember {
        BmMtActProfMember {
            mbr_handle: m.id.0 as BmMemberHandle,
            action_name: s.action_name(m.action.action),
            action_data: m.action.args.clone(),
        }
    }

    fn group_to_bm(g: &p4jet_runtime::Group) -> BmMtActProfGroup {
        BmMtActProfGroup {
            grp_handle: g.id.0 as BmGroupHandle,
            mbr_handles: g
                .members
                .iter()
                .map(|m| m.member.0 as BmMemberHandle)
                .collect(),
        }
    }

    pub fn bm_mt_act_prof_get_members(
        &mut self,
        act_prof_name: &str,
    ) -> Rpc<Vec<BmMtActProfMember>> {
        let (s, p) = self.profile(act_prof_name)?;
        Ok(self
            .rt
            .members(p)?
            .iter()
            .map(|m| Self::member_to_bm(&s, m))
            .collect())
    }

    pub fn bm_mt_act_prof_get_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> Rpc<BmMtActProfMember> {
        let (s, p) = self.profile(act_prof_name)?;
        let m = self.rt.member(p, MemberId(mbr_handle as u32))?;
        Ok(Self::member_to_bm(&s, &m))
    }

    pub fn bm_mt_act_prof_get_groups(&mut self, act_prof_name: &str) -> Rpc<Vec<BmMtActProfGroup>> {
        let (_, p) = self.profile(act_prof_name)?;
        Ok(self.rt.groups(p)?.iter().map(Self::group_to_bm).collect())
    }

    pub fn bm_mt_act_prof_get_group(
        &mut self,
        act_prof_name: &str,
        grp_handle: BmGroupHandle,
    ) -> Rpc<BmMtActProfGroup> {
        let (_, p) = self.profile(act_prof_name)?;
        Ok(Self::group_to_bm(
            &self.rt.group(p, GroupId(grp_handle as u32))?,
        ))
    }

    // -------------------------------------------------------- indirect tables

    pub fn bm_mt_indirect_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        mbr_handle: BmMemberHandle,
        options: BmAddEntryOptions,
    ) -> Rpc<BmEntryHandle> {
        let (s, t) = self.table(table_name)?;
        check_kind(table_of(&s, t)?, Some(true))?;
        let key = key_from_bm(match_key, options.priority.unwrap_or(0));
        self.add(t, key, EntryAction::Member(MemberId(mbr_handle as u32)))
    }

    pub fn bm_mt_indirect_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        mbr_handle: BmMemberHandle,
    ) -> Rpc<()> {
        let (s, t) = self.table(table_name)?;
        check_kind(table_of(&s, t)?, Some(true))?;
        self.apply(Update::ModifyEntry {
            table: t,
            entry: EntryRef::Handle(EntryHandle(entry_handle as u32)),
            action: EntryAction::Member(MemberId(mbr_handle as u32)),
        })
        .map(drop)
    }

    pub fn bm_mt_indirect_delete_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> Rpc<()> {
        let (s, t) = self.table(table_name)?;
        check_kind(table_of(&s, t)?, Some(true))?;
        self.apply(Update::DeleteEntry {
            table: t,
            entry: EntryRef::Handle(EntryHandle(entry_handle as u32)),
        })
        .map(drop)
    }

    pub fn bm_mt_indirect_set_entry_ttl(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        timeout_ms: i32,
    ) -> Rpc<()> {
        self.bm_mt_set_entry_ttl(table_name, entry_handle, timeout_ms)
    }

    pub fn bm_mt_indirect_set_default_member(
        &mut self,
        table_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> Rpc<()> {
        let (s, t) = self.table(table_name)?;
        check_kind(table_of(&s, t)?, Some(true))?;
        self.apply(Update::SetDefault {
            table: t,
            action: EntryAction::Member(MemberId(mbr_handle as u32)),
        })
        .map(drop)
    }

    pub fn bm_mt_indirect_reset_default_entry(&mut self, table_name: &str) -> Rpc<()> {
        let (s, t) = self.table(table_name)?;
        check_kind(table_of(&s, t)?, Some(true))?;
        self.apply(Update::ResetDefault { table: t }).map(drop)
    }

    pub fn bm_mt_indirect_ws_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        grp_handle: BmGroupHandle,
        options: BmAddEntryOptions,
    ) -> Rpc<BmEntryHandle> {
        let (s, t) = self.table(table_name)?;
        check_kind(table_of(&s, t)?, None)?;
        let key = key_from_bm(match_key, options.priority.unwrap_or(0));
        self.add(t, key, EntryAction::Group(GroupId(grp_handle as u32)))
    }

    pub fn bm_mt_indirect_ws_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        grp_handle: BmGroupHandle,
    ) -> Rpc<()> {
        let (s, t) = self.table(table_name)?;
        check_kind(table_of(&s, t)?, None)?;
        self.apply(Update::ModifyEntry {
            table: t,
            entry: EntryRef::Handle(EntryHandle(entry_handle as u32)),
            action: EntryAction::Group(GroupId(grp_handle as u32)),
        })
        .map(drop)
    }

    pub fn bm_mt_indirect_ws_set_default_group(
        &mut self,
        table_name: &str,
        grp_handle: BmGroupHandle,
    ) -> Rpc<()> {
        let (s, t) = self.table(table_name)?;
        check_kind(table_of(&s, t)?, None)?;
        self.apply(Update::SetDefault {
            table: t,
            action: EntryAction::Group(GroupId(grp_handle as u32)),
        })
        .map(drop)
    }

    // ------------------------------------------------ direct counters, meters

    pub fn bm_mt_read_counter(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> Rpc<BmCounterValue> {
        let (_, t) = self.table(table_name)?;
        let c = self
            .rt
            .direct_counter(t, &EntryRef::Handle(EntryHandle(entry_handle as u32)))?;
        Ok(BmCounterValue {
            bytes: c.bytes,
            packets: c.packets,
        })
    }

    pub fn bm_mt_reset_counters(&mut self, table_name: &str) -> Rpc<()> {
        let (_, t) = self.table(table_name)?;
        self.apply(Update::ResetDirectCounters { table: t })
            .map(drop)
    }

    pub fn bm_mt_write_counter(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        value: BmCounterValue,
    ) -> Rpc<()> {
        let (_, t) = self.table(table_name)?;
        self.apply(Update::WriteDirectCounter {
            table: t,
            entry: EntryRef::Handle(EntryHandle(entry_handle as u32)),
            value: CounterValue {
                bytes: value.bytes,
                packets: value.packets,
            },
        })
        .map(drop)
    }

    pub fn bm_mt_set_meter_rates(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        rates_: &[BmMeterRateConfig],
    ) -> Rpc<()> {
        let (s, t) = self.table(table_name)?;
        let ts = table_of(&s, t)?;
        if rates_.is_empty() && ts.direct_meter.is_some() {
            // bmv2 wants exactly the meter's rates; any rate problem of a direct
            // meter is a generic ERROR
            return Err(tc(
                TC::ERROR,
                format!("table {table_name}: no meter rates given"),
            ));
        }
        self.apply(Update::SetDirectMeter {
            table: t,
            entry: EntryRef::Handle(EntryHandle(entry_handle as u32)),
            config: rates(rates_),
        })
        .map(drop)
    }

    pub fn bm_mt_get_meter_rates(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> Rpc<Vec<BmMeterRateConfig>> {
        let (_, t) = self.table(table_name)?;
        let c = self
            .rt
            .direct_meter(t, &EntryRef::Handle(EntryHandle(entry_handle as u32)))?;
        Ok(bm_rates(&c))
    }

    // -------------------------------------------------------- reading entries

    pub fn bm_mt_get_entries(&mut self, table_name: &str) -> Rpc<Vec<BmMtEntry>> {
        let (s, t) = self.table(table_name)?;
        Ok(all_entries(self.rt, t)?
            .iter()
            .map(|e| entry_to_bm(&s, e))
            .collect())
    }

    pub fn bm_mt_get_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> Rpc<BmMtEntry> {
        let (s, t) = self.table(table_name)?;
        let e = self
            .rt
            .table_entry(t, &EntryRef::Handle(EntryHandle(entry_handle as u32)))?;
        Ok(entry_to_bm(&s, &e))
    }

    pub fn bm_mt_get_default_entry(&mut self, table_name: &str) -> Rpc<BmActionEntry> {
        let (s, t) = self.table(table_name)?;
        Ok(match self.rt.default_entry(t)? {
            Some(a) => super::action_to_bm(&s, &a),
            None => BmActionEntry::None,
        })
    }

    pub fn bm_mt_get_entry_from_key(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        options: BmAddEntryOptions,
    ) -> Rpc<BmMtEntry> {
        if match_key.is_empty() {
            let action_entry = self.bm_mt_get_default_entry(table_name)?;
            return Ok(BmMtEntry {
                match_key: vec![],
                // (what the wire carries for no priority)
                options: BmAddEntryOptions { priority: Some(-1) },
                entry_handle: 0,
                action_entry,
                life: None,
            });
        }
        let (s, t) = self.table(table_name)?;
        let key = key_from_bm(match_key, options.priority.unwrap_or(0));
        // bmv2 answers BAD_MATCH_KEY both for a malformed key and for a key not found
        let e = self.rt.table_entry(t, &EntryRef::Key(key))?;
        Ok(entry_to_bm(&s, &e))
    }

    // ----------------------------------------------------------------- counters

    fn counter(&self, name: &str) -> Rpc<p4jet_runtime::CounterId> {
        self.schema()?.counter_by_name(name).ok_or_else(|| {
            Bmv2Code::Counter(CC::INVALID_COUNTER_NAME).error(format!("no counter `{name}`"))
        })
    }

    pub fn bm_counter_read(&mut self, counter_name: &str, index_: i32) -> Rpc<BmCounterValue> {
        let c = self.counter(counter_name)?;
        let i = index(index_, Bmv2Code::Counter(CC::INVALID_INDEX), counter_name)?;
        let v = self.rt.counters(c, i, i.saturating_add(1))?;
        let v = v.first().copied().unwrap_or_default();
        Ok(BmCounterValue {
            bytes: v.bytes,
            packets: v.packets,
        })
    }

    pub fn bm_counter_reset_all(&mut self, counter_name: &str) -> Rpc<()> {
        let c = self.counter(counter_name)?;
        self.apply(Update::ResetCounter { counter: c }).map(drop)
    }

    pub fn bm_counter_write(
        &mut self,
        counter_name: &str,
        index_: i32,
        value: BmCounterValue,
    ) -> Rpc<()> {
        let c = self.counter(counter_name)?;
        let i = index(index_, Bmv2Code::Counter(CC::INVALID_INDEX), counter_name)?;
        self.apply(Update::WriteCounter {
            counter: c,
            index: i,
            value: CounterValue {
                bytes: value.bytes,
                packets: value.packets,
            },
        })
        .map(drop)
    }

    // ----------------------------------------------------------------- learning

    fn digest(&self, list_id: BmLearningListId) -> Rpc<DigestId> {
        self.schema()?
            .digest_by_json_id(i64::from(list_id))
            .ok_or_else(|| {
                Bmv2Code::Learn(LC::INVALID_LIST_ID).error(format!("no learn list {list_id}"))
            })
    }

    pub fn bm_learning_ack(
        &mut self,
        list_id: BmLearningListId,
        buffer_id: BmLearningBufferId,
        sample_ids: &[BmLearningSampleId],
    ) -> Rpc<()> {
        let digest = self.digest(list_id)?;
        self.apply(Update::AckDigest {
            digest,
            list_id: buffer_id as u64,
            samples: Some(
                sample_ids
                    .iter()
                    .filter_map(|s| u32::try_from(*s).ok())
                    .collect(),
            ),
        })
        .map(drop)
    }

    pub fn bm_learning_ack_buffer(
        &mut self,
        list_id: BmLearningListId,
        buffer_id: BmLearningBufferId,
    ) -> Rpc<()> {
        let digest = self.digest(list_id)?;
        self.apply(Update::AckDigest {
            digest,
            list_id: buffer_id as u64,
            samples: None,
        })
        .map(drop)
    }

    pub fn bm_learning_set_timeout(
        &mut self,
        list_id: BmLearningListId,
        timeout_ms: i32,
    ) -> Rpc<()> {
        let digest = self.digest(list_id)?;
        let mut config = self.rt.digest_config(digest)?;
        config.max_timeout_ns = u64::from(timeout_ms as u32) * 1_000_000;
        self.apply(Update::ConfigureDigest { digest, config })
            .map(drop)
    }

    pub fn bm_learning_set_buffer_size(
        &mut self,
        list_id: BmLearningListId,
        nb_samples: i32,
    ) -> Rpc<()> {
        let digest = self.digest(list_id)?;
        let mut config = self.rt.digest_config(digest)?;
        config.max_list_size = nb_samples as u32;
        self.apply(Update::ConfigureDigest { digest, config })
            .map(drop)
    }

    // ------------------------------------------------------ configuration swap

    // simple_switch: both need --enable-swap; a second load before the swap is
    // ONGOING_SWAP, a swap without a load NO_ONGOING_SWAP. A JSON that does not load
    // (bmv2 accepts it and breaks later) answers NO_ONGOING_SWAP: nothing was loaded,
    // so no swap is under way, and the switch keeps its state.

    fn swap_enabled(&mut self) -> Rpc<()> {
        if self.rt.info()?.swap_enabled {
            Ok(())
        } else {
            Err(Bmv2Code::Swap(SC::CONFIG_SWAP_DISABLED)
                .error("configuration swap is disabled (simple_switch's --enable-swap)"))
        }
    }

    pub fn bm_load_new_config(&mut self, config_str: &str) -> Rpc<()> {
        self.swap_enabled()?;
        self.rt
            .set_pipeline(PipelineAction::Save(PipelineConfig::new(config_str)))
    }

    pub fn bm_swap_configs(&mut self) -> Rpc<()> {
        self.swap_enabled()?;
        self.rt.set_pipeline(PipelineAction::Commit)
    }

    // ------------------------------------------------------------------ meters

    /// A meter by name and its number of cells and rates.
    fn meter(&self, name: &str) -> Rpc<(p4jet_runtime::MeterId, u32, u32)> {
        let s = self.schema()?;
        let m = s.meter_by_name(name).ok_or_else(|| {
            Bmv2Code::Meter(MC::INVALID_METER_NAME).error(format!("no meter `{name}`"))
        })?;
        let ms = s
            .meter(m)
            .ok_or_else(|| RuntimeError::internal("no meter"))?;
        let cells = match ms.direct_table.and_then(|t| s.table(t)) {
            Some(t) => t.max_size.clamp(1, 0x00ff_ffff),
            None => ms.size,
        };
        Ok((m, cells, ms.rate_count))
    }

    pub fn bm_meter_array_set_rates(
        &mut self,
        meter_array_name: &str,
        rates_: &[BmMeterRateConfig],
    ) -> Rpc<()> {
        let (meter, _, count) = self.meter(meter_array_name)?;
        if rates_.len() != count as usize {
            return Err(Bmv2Code::Meter(MC::BAD_RATES_LIST).error(format!(
                "meter {meter_array_name}: {} rates given, it has {count}",
                rates_.len()
            )));
        }
        self.apply(Update::SetMeter {
            meter,
            index: None,
            config: rates(rates_),
        })
        .map(drop)
    }

    pub fn bm_meter_set_rates(
        &mut self,
        meter_array_name: &str,
        index_: i32,
        rates_: &[BmMeterRateConfig],
    ) -> Rpc<()> {
        let (meter, cells, count) = self.meter(meter_array_name)?;
        let i = index(index_, Bmv2Code::Meter(MC::INVALID_INDEX), meter_array_name)?;
        if i >= cells {
            return Err(Bmv2Code::Meter(MC::INVALID_INDEX).error(format!(
                "meter {meter_array_name}: index {i} past its {cells} cells"
            )));
        }
        if rates_.len() != count as usize {
            return Err(Bmv2Code::Meter(MC::BAD_RATES_LIST).error(format!(
                "meter {meter_array_name}: {} rates given, it has {count}",
                rates_.len()
            )));
        }
        self.apply(Update::SetMeter {
            meter,
            index: Some(i),
            config: rates(rates_),
        })
        .map(drop)
    }

    pub fn bm_meter_get_rates(
        &mut self,
        meter_array_name: &str,
        index_: i32,
    ) -> Rpc<Vec<BmMeterRateConfig>> {
        let (meter, ..) = self.meter(meter_array_name)?;
        let i = index(index_, Bmv2Code::Meter(MC::INVALID_INDEX), meter_array_name)?;
        Ok(bm_rates(&self.rt.meter(meter, i)?))
    }

    // --------------------------------------------------------------- registers

    fn register(&self, name: &str) -> Rpc<(p4jet_runtime::RegisterId, u32, u32)> {
        let s = self.schema()?;
        let r = s.register_by_name(name).ok_or_else(|| {
            Bmv2Code::Register(RC::INVALID_REGISTER_NAME).error(format!("no register `{name}`"))
        })?;
        let rs = s
            .register(r)
            .ok_or_else(|| RuntimeError::internal("no register"))?;
        Ok((r, rs.size, rs.width))
    }

    pub fn bm_register_read(
        &mut self,
        register_array_name: &str,
        index_: i32,
    ) -> Rpc<BmRegisterValue> {
        let (r, ..) = self.register(register_array_name)?;
        let i = index(
            index_,
            Bmv2Code::Register(RC::INVALID_INDEX),
            register_array_name,
        )?;
        let v = self.rt.registers(r, i, i.saturating_add(1))?;
        Ok(v.first().map_or(0, |c| register_i64(c)))
    }

    pub fn bm_register_read_all(&mut self, register_array_name: &str) -> Rpc<Vec<BmRegisterValue>> {
        let (r, size, _) = self.register(register_array_name)?;
        // bmv2 cannot tell an empty array from an unknown name
        if size == 0 {
            return Err(Bmv2Code::Register(RC::INVALID_REGISTER_NAME)
                .error(format!("register {register_array_name} has no cells")));
        }
        Ok(self
            .rt
            .registers(r, 0, size)?
            .iter()
            .map(|c| register_i64(c))
            .collect())
    }

    pub fn bm_register_write(
        &mut self,
        register_array_name: &str,
        index_: i32,
        value: BmRegisterValue,
    ) -> Rpc<()> {
        let (r, _, width) = self.register(register_array_name)?;
        let i = index(
            index_,
            Bmv2Code::Register(RC::INVALID_INDEX),
            register_array_name,
        )?;
        self.apply(Update::WriteRegister {
            register: r,
            start: i,
            end: i.saturating_add(1),
            value: register_bytes(value, width),
        })
        .map(drop)
    }

    pub fn bm_register_write_range(
        &mut self,
        register_array_name: &str,
        start_index: i32,
        end_index: i32,
        value: BmRegisterValue,
    ) -> Rpc<()> {
        let (r, _, width) = self.register(register_array_name)?;
        // bmv2 writes [start, end): `end` is exclusive
        let err = Bmv2Code::Register(RC::INVALID_INDEX);
        let start = index(start_index, err, register_array_name)?;
        let end = index(end_index, err, register_array_name)?;
        self.apply(Update::WriteRegister {
            register: r,
            start,
            end,
            value: register_bytes(value, width),
        })
        .map(drop)
    }

    pub fn bm_register_reset(&mut self, register_array_name: &str) -> Rpc<()> {
        let (r, ..) = self.register(register_array_name)?;
        self.apply(Update::ResetRegister { register: r }).map(drop)
    }

    // -------------------------------------------------------- parser value sets

    fn vset(&self, name: &str) -> Rpc<p4jet_runtime::ValueSetId> {
        self.schema()?.value_set_by_name(name).ok_or_else(|| {
            Bmv2Code::ParseVSet(VC::INVALID_PARSE_VSET_NAME)
                .error(format!("no parser value set `{name}`"))
        })
    }

    pub fn bm_parse_vset_add(&mut self, parse_vset_name: &str, value: &[u8]) -> Rpc<()> {
        let value_set = self.vset(parse_vset_name)?;
        self.apply(Update::AddValueSetMember {
            value_set,
            value: value.to_vec(),
        })
        .map(drop)
    }

    pub fn bm_parse_vset_remove(&mut self, parse_vset_name: &str, value: &[u8]) -> Rpc<()> {
        let value_set = self.vset(parse_vset_name)?;
        self.apply(Update::RemoveValueSetMember {
            value_set,
            value: value.to_vec(),
        })
        .map(drop)
    }

    pub fn bm_parse_vset_get(&mut self, parse_vset_name: &str) -> Rpc<Vec<BmParseVSetValue>> {
        let value_set = self.vset(parse_vset_name)?;
        self.rt.value_set(value_set)
    }

    pub fn bm_parse_vset_clear(&mut self, parse_vset_name: &str) -> Rpc<()> {
        let value_set = self.vset(parse_vset_name)?;
        self.apply(Update::ClearValueSet { value_set }).map(drop)
    }

    // ----------------------------------------------------------- device manager

    pub fn bm_dev_mgr_add_port(
        &mut self,
        iface_name: &str,
        port_num: i32,
        pcap_path: &str,
    ) -> Rpc<()> {
        let port = u32::try_from(port_num).map_err(|_| {
            Bmv2Code::DevMgr(DevMgrErrorCode::ERROR).error(format!("negative port {port_num}"))
        })?;
        self.rt.add_port(PortInfo {
            port,
            iface: iface_name.to_string(),
            pcap: (!pcap_path.is_empty()).then(|| pcap_path.to_string()),
            up: true,
        })
    }

    pub fn bm_dev_mgr_remove_port(&mut self, port_num: i32) -> Rpc<()> {
        let port = u32::try_from(port_num).map_err(|_| {
            Bmv2Code::DevMgr(DevMgrErrorCode::ERROR).error(format!("negative port {port_num}"))
        })?;
        self.rt.remove_port(port)
    }

    pub fn bm_dev_mgr_show_ports(&mut self) -> Rpc<Vec<DevMgrPortInfo>> {
        Ok(self
            .rt
            .ports()?
            .into_iter()
            .map(|p| {
                let mut extra = std::collections::BTreeMap::new();
                if let Some(pcap) = &p.pcap {
                    extra.insert("in_pcap".to_string(), pcap.clone());
                    extra.insert("out_pcap".to_string(), pcap.clone());
                }
                DevMgrPortInfo {
                    port_num: p.port as i32,
                    iface_name: p.iface,
                    is_up: p.up,
                    extra,
                }
            })
            .collect())
    }

    // --------------------------------------------------------------- management

    pub fn bm_mgmt_get_info(&mut self) -> Rpc<BmConfig> {
        let i = self.rt.info()?;
        Ok(BmConfig {
            device_id: i.device_id as i64,
            thrift_port: i32::from(i.thrift_port),
            notifications_socket: i.notifications_socket,
            elogger_socket: i.elogger_socket,
            debugger_socket: i.debugger_socket,
        })
    }

    fn crc(&mut self, calc_name: &str, config: CrcConfig) -> Rpc<()> {
        let calc = self
            .schema()?
            .calculation_by_name(calc_name)
            .ok_or_else(|| {
                Bmv2Code::Crc(CrcErrorCode::INVALID_CALCULATION_NAME)
                    .error(format!("no calculation `{calc_name}`"))
            })?;
        self.rt.set_crc(calc, config)
    }

    pub fn bm_set_crc16_custom_parameters(&mut self, calc_name: &str, c: BmCrc16Config) -> Rpc<()> {
        self.crc(
            calc_name,
            CrcConfig {
                width: 16,
                polynomial: u64::from(c.polynomial),
                initial_remainder: u64::from(c.initial_remainder),
                final_xor_value: u64::from(c.final_xor_value),
                data_reflected: c.data_reflected,
                remainder_reflected: c.remainder_reflected,
            },
        )
    }

    pub fn bm_set_crc32_custom_parameters(&mut self, calc_name: &str, c: BmCrc32Config) -> Rpc<()> {
        self.crc(
            calc_name,
            CrcConfig {
                width: 32,
                polynomial: u64::from(c.polynomial),
                initial_remainder: u64::from(c.initial_remainder),
                final_xor_value: u64::from(c.final_xor_value),
                data_reflected: c.data_reflected,
                remainder_reflected: c.remainder_reflected,
            },
        )
    }

    pub fn bm_set_toeplitz_hash_key(&mut self, calc_name: &str, key: &[u8]) -> Rpc<()> {
        let calc = self
            .schema()?
            .calculation_by_name(calc_name)
            .ok_or_else(|| {
                Bmv2Code::Toeplitz(ToeplitzHashErrorCode::INVALID_CALCULATION_NAME)
                    .error(format!("no calculation `{calc_name}`"))
            })?;
        self.rt.set_toeplitz_key(calc, key.to_vec())
    }

    pub fn bm_reset_state(&mut self) -> Rpc<()> {
        self.rt.reset_state()
    }

    pub fn bm_get_config(&mut self) -> Rpc<String> {
        Ok(self.rt.pipeline()?.json.to_string())
    }

    pub fn bm_get_config_md5(&mut self) -> Rpc<Vec<u8>> {
        Ok(self.rt.pipeline()?.md5.to_vec())
    }

    pub fn bm_get_id_from_name(
        &mut self,
        resource_type: BmResourceType,
        resource_name: &str,
    ) -> Rpc<i32> {
        let s = self.schema()?;
        let kind = match resource_type {
            BmResourceType::MATCH_TABLE => ObjectKind::Table,
            BmResourceType::ACTION_PROFILE => ObjectKind::Profile,
            BmResourceType::COUNTER => ObjectKind::Counter,
            BmResourceType::METER => ObjectKind::Meter,
            BmResourceType::REGISTER => ObjectKind::Register,
            BmResourceType::LEARNING_LIST => ObjectKind::Digest,
        };
        super::json_id(&s, kind, resource_name)
            .map(|id| i32::try_from(id).unwrap_or(i32::MAX))
            .ok_or_else(|| {
                Bmv2Code::IdLookup(IdLookupErrorCode::INVALID_RESOURCE_NAME)
                    .error(format!("no {kind} `{resource_name}`"))
            })
    }

    pub fn bm_serialize_state(&mut self) -> Rpc<String> {
        self.rt.serialize_state()
    }
}

/// `cxt_id` (field 1) must be 0: simple_switch has one context. Any other value is
/// treated as an invalid name for the resource concerned.
macro_rules! cxt {
    ($a:expr, $code:expr) => {
        if $a.i32(1) != 0 {
            return $crate::service::exception_reply($code.code());
        }
    };
}
pub(crate) use cxt;

/// Decodes a match key argument; a key that does not fit the IDL is reported as
/// `BAD_MATCH_KEY` (bmv2 would assert).
macro_rules! key {
    ($a:expr, $id:expr) => {
        match codec::match_key_from($a, $id) {
            Ok(k) => k,
            Err(_) => return exception_reply(TC::BAD_MATCH_KEY.code()),
        }
    };
}

fn options(a: Fields<'_>, id: i16) -> BmAddEntryOptions {
    codec::add_entry_options_from(a.strukt(id))
}

/// Entries as the stock simple_switch_CLI needs them: it compares
/// `options.priority >= 0`, which fails in Python 3 when the priority is unset, so an
/// unset priority is sent as -1 (what bmv2 sends for exact and LPM entries).
fn entry_for_wire(mut e: BmMtEntry) -> Value {
    if e.options.priority.is_none() {
        e.options.priority = Some(-1);
    }
    Value::Struct(codec::mt_entry(&e))
}

fn structs<T>(items: Vec<T>, f: impl Fn(&T) -> crate::protocol::Struct) -> Value {
    codec::struct_list(&items, f)
}

/// The `standard` service on the wire.
#[allow(clippy::too_many_lines)]
pub(crate) fn dispatch(b: &mut Bmv2<'_>, spec: &MethodSpec, a: Fields<'_>) -> Reply {
    use TC as T;
    let table = || a.string(2);
    let s = spec;
    match spec.name {
        // ------------------------------------------------------- tables
        "bm_mt_get_num_entries" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret(s, b.bm_mt_get_num_entries(&table()), Value::I64)
        }
        "bm_mt_clear_entries" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(s, b.bm_mt_clear_entries(&table(), a.bool(3)))
        }
        "bm_mt_add_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            let key = key!(a, 3);
            ret(
                s,
                b.bm_mt_add_entry(
                    &table(),
                    &key,
                    &a.string(4),
                    &a.binary_list(5),
                    options(a, 6),
                ),
                Value::I32,
            )
        }
        "bm_mt_set_default_action" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(
                s,
                b.bm_mt_set_default_action(&table(), &a.string(3), &a.binary_list(4)),
            )
        }
        "bm_mt_reset_default_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(s, b.bm_mt_reset_default_entry(&table()))
        }
        "bm_mt_delete_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(s, b.bm_mt_delete_entry(&table(), a.i32(3)))
        }
        "bm_mt_modify_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(
                s,
                b.bm_mt_modify_entry(&table(), a.i32(3), &a.string(4), &a.binary_list(5)),
            )
        }
        "bm_mt_set_entry_ttl" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(s, b.bm_mt_set_entry_ttl(&table(), a.i32(3), a.i32(4)))
        }
        // ---------------------------------------------- action profiles
        "bm_mt_act_prof_add_member" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret(
                s,
                b.bm_mt_act_prof_add_member(&a.string(2), &a.string(3), &a.binary_list(4)),
                Value::I32,
            )
        }
        "bm_mt_act_prof_delete_member" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret_void(s, b.bm_mt_act_prof_delete_member(&a.string(2), a.i32(3)))
        }
        "bm_mt_act_prof_modify_member" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret_void(
                s,
                b.bm_mt_act_prof_modify_member(
                    &a.string(2),
                    a.i32(3),
                    &a.string(4),
                    &a.binary_list(5),
                ),
            )
        }
        "bm_mt_act_prof_create_group" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret(s, b.bm_mt_act_prof_create_group(&a.string(2)), Value::I32)
        }
        "bm_mt_act_prof_delete_group" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret_void(s, b.bm_mt_act_prof_delete_group(&a.string(2), a.i32(3)))
        }
        "bm_mt_act_prof_add_member_to_group" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret_void(
                s,
                b.bm_mt_act_prof_add_member_to_group(&a.string(2), a.i32(3), a.i32(4)),
            )
        }
        "bm_mt_act_prof_remove_member_from_group" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret_void(
                s,
                b.bm_mt_act_prof_remove_member_from_group(&a.string(2), a.i32(3), a.i32(4)),
            )
        }
        "bm_mt_act_prof_get_members" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret(s, b.bm_mt_act_prof_get_members(&a.string(2)), |m| {
                structs(m, codec::act_prof_member)
            })
        }
        "bm_mt_act_prof_get_member" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret(
                s,
                b.bm_mt_act_prof_get_member(&a.string(2), a.i32(3)),
                |m| Value::Struct(codec::act_prof_member(&m)),
            )
        }
        "bm_mt_act_prof_get_groups" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret(s, b.bm_mt_act_prof_get_groups(&a.string(2)), |g| {
                structs(g, codec::act_prof_group)
            })
        }
        "bm_mt_act_prof_get_group" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret(s, b.bm_mt_act_prof_get_group(&a.string(2), a.i32(3)), |g| {
                Value::Struct(codec::act_prof_group(&g))
            })
        }
        // ---------------------------------------------- indirect tables
        "bm_mt_indirect_add_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            let key = key!(a, 3);
            ret(
                s,
                b.bm_mt_indirect_add_entry(&table(), &key, a.i32(4), options(a, 5)),
                Value::I32,
            )
        }
        "bm_mt_indirect_modify_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(
                s,
                b.bm_mt_indirect_modify_entry(&table(), a.i32(3), a.i32(4)),
            )
        }
        "bm_mt_indirect_delete_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(s, b.bm_mt_indirect_delete_entry(&table(), a.i32(3)))
        }
        "bm_mt_indirect_set_entry_ttl" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(
                s,
                b.bm_mt_indirect_set_entry_ttl(&table(), a.i32(3), a.i32(4)),
            )
        }
        "bm_mt_indirect_set_default_member" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(s, b.bm_mt_indirect_set_default_member(&table(), a.i32(3)))
        }
        "bm_mt_indirect_reset_default_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(s, b.bm_mt_indirect_reset_default_entry(&table()))
        }
        "bm_mt_indirect_ws_add_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            let key = key!(a, 3);
            ret(
                s,
                b.bm_mt_indirect_ws_add_entry(&table(), &key, a.i32(4), options(a, 5)),
                Value::I32,
            )
        }
        "bm_mt_indirect_ws_modify_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(
                s,
                b.bm_mt_indirect_ws_modify_entry(&table(), a.i32(3), a.i32(4)),
            )
        }
        "bm_mt_indirect_ws_set_default_group" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(s, b.bm_mt_indirect_ws_set_default_group(&table(), a.i32(3)))
        }
        // -------------------------------------- direct counters / meters
        "bm_mt_read_counter" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret(s, b.bm_mt_read_counter(&table(), a.i32(3)), |c| {
                Value::Struct(codec::counter_value(c))
            })
        }
        "bm_mt_reset_counters" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(s, b.bm_mt_reset_counters(&table()))
        }
        "bm_mt_write_counter" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            let value = codec::counter_value_from(a.strukt(4));
            ret_void(s, b.bm_mt_write_counter(&table(), a.i32(3), value))
        }
        "bm_mt_set_meter_rates" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            let rates = codec::meter_rates_from(a, 4);
            ret_void(s, b.bm_mt_set_meter_rates(&table(), a.i32(3), &rates))
        }
        "bm_mt_get_meter_rates" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret(s, b.bm_mt_get_meter_rates(&table(), a.i32(3)), |r| {
                codec::meter_rates(&r)
            })
        }
        // ------------------------------------------------ reading entries
        "bm_mt_get_entries" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret(s, b.bm_mt_get_entries(&table()), |entries| {
                Value::list(
                    TType::Struct,
                    entries.into_iter().map(entry_for_wire).collect(),
                )
            })
        }
        "bm_mt_get_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret(s, b.bm_mt_get_entry(&table(), a.i32(3)), entry_for_wire)
        }
        "bm_mt_get_default_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret(s, b.bm_mt_get_default_entry(&table()), |e| {
                Value::Struct(codec::action_entry(&e))
            })
        }
        "bm_mt_get_entry_from_key" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            let key = key!(a, 3);
            ret(
                s,
                b.bm_mt_get_entry_from_key(&table(), &key, options(a, 4)),
                entry_for_wire,
            )
        }
        // ------------------------------------------------------ counters
        "bm_counter_read" => {
            cxt!(a, CC::INVALID_COUNTER_NAME);
            ret(s, b.bm_counter_read(&a.string(2), a.i32(3)), |c| {
                Value::Struct(codec::counter_value(c))
            })
        }
        "bm_counter_reset_all" => {
            cxt!(a, CC::INVALID_COUNTER_NAME);
            ret_void(s, b.bm_counter_reset_all(&a.string(2)))
        }
        "bm_counter_write" => {
            cxt!(a, CC::INVALID_COUNTER_NAME);
            let value = codec::counter_value_from(a.strukt(4));
            ret_void(s, b.bm_counter_write(&a.string(2), a.i32(3), value))
        }
        // ------------------------------------------------------ learning
        "bm_learning_ack" => {
            cxt!(a, LC::INVALID_LIST_ID);
            ret_void(s, b.bm_learning_ack(a.i32(2), a.i64(3), &a.i32_list(4)))
        }
        "bm_learning_ack_buffer" => {
            cxt!(a, LC::INVALID_LIST_ID);
            ret_void(s, b.bm_learning_ack_buffer(a.i32(2), a.i64(3)))
        }
        "bm_learning_set_timeout" => {
            cxt!(a, LC::INVALID_LIST_ID);
            ret_void(s, b.bm_learning_set_timeout(a.i32(2), a.i32(3)))
        }
        "bm_learning_set_buffer_size" => {
            cxt!(a, LC::INVALID_LIST_ID);
            ret_void(s, b.bm_learning_set_buffer_size(a.i32(2), a.i32(3)))
        }
        // ---------------------------------------------------------- swap
        "bm_load_new_config" => {
            let r = b.bm_load_new_config(&a.string(1));
            if let Err(e) = &r {
                tracing::warn!("bm_load_new_config: {e}");
            }
            ret_void(s, r)
        }
        "bm_swap_configs" => ret_void(s, b.bm_swap_configs()),
        // -------------------------------------------------------- meters
        "bm_meter_array_set_rates" => {
            cxt!(a, MC::INVALID_METER_NAME);
            let rates = codec::meter_rates_from(a, 3);
            ret_void(s, b.bm_meter_array_set_rates(&a.string(2), &rates))
        }
        "bm_meter_set_rates" => {
            cxt!(a, MC::INVALID_METER_NAME);
            let rates = codec::meter_rates_from(a, 4);
            ret_void(s, b.bm_meter_set_rates(&a.string(2), a.i32(3), &rates))
        }
        "bm_meter_get_rates" => {
            cxt!(a, MC::INVALID_METER_NAME);
            ret(s, b.bm_meter_get_rates(&a.string(2), a.i32(3)), |r| {
                codec::meter_rates(&r)
            })
        }
        // ----------------------------------------------------- registers
        "bm_register_read" => {
            cxt!(a, RC::INVALID_REGISTER_NAME);
            ret(s, b.bm_register_read(&a.string(2), a.i32(3)), Value::I64)
        }
        "bm_register_read_all" => {
            cxt!(a, RC::INVALID_REGISTER_NAME);
            ret(s, b.bm_register_read_all(&a.string(2)), |v| {
                codec::i64_list(&v)
            })
        }
        "bm_register_write" => {
            cxt!(a, RC::INVALID_REGISTER_NAME);
            ret_void(s, b.bm_register_write(&a.string(2), a.i32(3), a.i64(4)))
        }
        "bm_register_write_range" => {
            cxt!(a, RC::INVALID_REGISTER_NAME);
            ret_void(
                s,
                b.bm_register_write_range(&a.string(2), a.i32(3), a.i32(4), a.i64(5)),
            )
        }
        "bm_register_reset" => {
            cxt!(a, RC::INVALID_REGISTER_NAME);
            ret_void(s, b.bm_register_reset(&a.string(2)))
        }
        // --------------------------------------------- parser value sets
        "bm_parse_vset_add" => {
            cxt!(a, VC::INVALID_PARSE_VSET_NAME);
            ret_void(s, b.bm_parse_vset_add(&a.string(2), &a.binary(3)))
        }
        "bm_parse_vset_remove" => {
            cxt!(a, VC::INVALID_PARSE_VSET_NAME);
            ret_void(s, b.bm_parse_vset_remove(&a.string(2), &a.binary(3)))
        }
        "bm_parse_vset_get" => {
            cxt!(a, VC::INVALID_PARSE_VSET_NAME);
            ret(s, b.bm_parse_vset_get(&a.string(2)), |v| {
                codec::binary_list(&v)
            })
        }
        "bm_parse_vset_clear" => {
            cxt!(a, VC::INVALID_PARSE_VSET_NAME);
            ret_void(s, b.bm_parse_vset_clear(&a.string(2)))
        }
        // ------------------------------------------------ device manager
        "bm_dev_mgr_add_port" => ret_void(
            s,
            b.bm_dev_mgr_add_port(&a.string(1), a.i32(2), &a.string(3)),
        ),
        "bm_dev_mgr_remove_port" => ret_void(s, b.bm_dev_mgr_remove_port(a.i32(1))),
        "bm_dev_mgr_show_ports" => ret(s, b.bm_dev_mgr_show_ports(), |p| {
            structs(p, codec::port_info)
        }),
        // ---------------------------------------------------- management
        "bm_mgmt_get_info" => ret(s, b.bm_mgmt_get_info(), |c| {
            Value::Struct(codec::bm_config(&c))
        }),
        "bm_set_crc16_custom_parameters" => {
            cxt!(a, CrcErrorCode::INVALID_CALCULATION_NAME);
            let cfg = codec::crc16_config_from(a.strukt(3));
            ret_void(s, b.bm_set_crc16_custom_parameters(&a.string(2), cfg))
        }
        "bm_set_crc32_custom_parameters" => {
            cxt!(a, CrcErrorCode::INVALID_CALCULATION_NAME);
            let cfg = codec::crc32_config_from(a.strukt(3));
            ret_void(s, b.bm_set_crc32_custom_parameters(&a.string(2), cfg))
        }
        "bm_set_toeplitz_hash_key" => {
            cxt!(a, ToeplitzHashErrorCode::INVALID_CALCULATION_NAME);
            ret_void(s, b.bm_set_toeplitz_hash_key(&a.string(2), &a.binary(3)))
        }
        "bm_reset_state" => ret_void(s, b.bm_reset_state()),
        "bm_get_config" => ret(s, b.bm_get_config(), |j| Value::string(&j)),
        "bm_get_config_md5" => ret(s, b.bm_get_config_md5(), Value::Binary),
        "bm_get_id_from_name" => {
            cxt!(a, IdLookupErrorCode::INVALID_RESOURCE_NAME);
            let Some(ty) = BmResourceType::from_code(a.i32(2)) else {
                return exception_reply(IdLookupErrorCode::INVALID_RESOURCE_TYPE.code());
            };
            ret(s, b.bm_get_id_from_name(ty, &a.string(3)), Value::I32)
        }
        "bm_serialize_state" => ret(s, b.bm_serialize_state(), |st| Value::string(&st)),
        m => super::unknown(m),
    }
}
