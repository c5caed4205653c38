//! A recording mock of the runtime API, and corpus helpers.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;

use p4jet_control::api::*;

/// Records every call as `name(args...)` (Debug of the argument tuple),
/// answers with counters for handles and canned values for reads, and fails
/// the RPCs listed in `fails` with the given error code.
#[derive(Default)]
pub struct MockApi {
    pub calls: Vec<String>,
    pub fails: HashMap<&'static str, i32>,
    pub next_entry: i32,
    pub next_member: i32,
    pub next_group: i32,
    pub next_node: i32,
    pub entries: Vec<BmMtEntry>,
    pub default_entry: Option<BmActionEntry>,
    pub members: Vec<BmMtActProfMember>,
    pub groups: Vec<BmMtActProfGroup>,
    pub counter: BmCounterValue,
    pub registers: Vec<i64>,
    pub rates: Vec<BmMeterRateConfig>,
    pub mc_json: String,
    pub config: String,
    pub ports: Vec<DevMgrPortInfo>,
    pub info: BmConfig,
    pub mirror: MirroringSessionConfig,
    pub pvs: Vec<Vec<u8>>,
    pub num_entries: i64,
}

impl MockApi {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn fail(mut self, rpc: &'static str, code: i32) -> Self {
        self.fails.insert(rpc, code);
        self
    }

    pub fn take(&mut self) -> Vec<String> {
        std::mem::take(&mut self.calls)
    }
}

macro_rules! rec {
    ($s:ident, $name:literal, $exc:ident, $code:ident $(, $arg:expr)*) => {{
        $s.calls.push(format!("{}{:?}", $name, ($($arg,)*)));
        if let Some(c) = $s.fails.get($name) {
            return Err(ApiError::Exception($exc::new($code::from_code(*c).expect("valid code"))));
        }
    }};
    ($s:ident, $name:literal; $($arg:expr),*) => {{
        $s.calls.push(format!("{}{:?}", $name, ($($arg,)*)));
        if $s.fails.contains_key($name) {
            return Err(ApiError::Internal(format!("{} failed", $name)));
        }
    }};
}

type T = InvalidTableOperation;
type TC = TableOperationErrorCode;

impl RuntimeApi for MockApi {
    fn bm_mt_get_num_entries(&mut self, t: &str) -> ApiResult<i64, T> {
        rec!(self, "bm_mt_get_num_entries", T, TC, t);
        Ok(self.num_entries)
    }
    fn bm_mt_clear_entries(&mut self, t: &str, r: bool) -> ApiResult<(), T> {
        rec!(self, "bm_mt_clear_entries", T, TC, t, r);
        Ok(())
    }
    fn bm_mt_add_entry(
        &mut self,
        t: &str,
        k: &[BmMatchParam],
        a: &str,
        d: &[Vec<u8>],
        o: BmAddEntryOptions,
    ) -> ApiResult<BmEntryHandle, T> {
        rec!(self, "bm_mt_add_entry", T, TC, t, k, a, d, o);
        self.next_entry += 1;
        Ok(self.next_entry - 1)
    }
    fn bm_mt_set_default_action(&mut self, t: &str, a: &str, d: &[Vec<u8>]) -> ApiResult<(), T> {
        rec!(self, "bm_mt_set_default_action", T, TC, t, a, d);
        Ok(())
    }
    fn bm_mt_reset_default_entry(&mut self, t: &str) -> ApiResult<(), T> {
        rec!(self, "bm_mt_reset_default_entry", T, TC, t);
        Ok(())
    }
    fn bm_mt_delete_entry(&mut self, t: &str, h: BmEntryHandle) -> ApiResult<(), T> {
        rec!(self, "bm_mt_delete_entry", T, TC, t, h);
        Ok(())
    }
    fn bm_mt_modify_entry(
        &mut self,
        t: &str,
        h: BmEntryHandle,
        a: &str,
        d: &[Vec<u8>],
    ) -> ApiResult<(), T> {
        rec!(self, "bm_mt_modify_entry", T, TC, t, h, a, d);
        Ok(())
    }
    fn bm_mt_set_entry_ttl(&mut self, t: &str, h: BmEntryHandle, ms: i32) -> ApiResult<(), T> {
        rec!(self, "bm_mt_set_entry_ttl", T, TC, t, h, ms);
        Ok(())
    }
    fn bm_mt_act_prof_add_member(
        &mut self,
        ap: &str,
        a: &str,
        d: &[Vec<u8>],
    ) -> ApiResult<BmMemberHandle, T> {
        rec!(self, "bm_mt_act_prof_add_member", T, TC, ap, a, d);
        self.next_member += 1;
        Ok(self.next_member - 1)
    }
    fn bm_mt_act_prof_delete_member(&mut self, ap: &str, m: BmMemberHandle) -> ApiResult<(), T> {
        rec!(self, "bm_mt_act_prof_delete_member", T, TC, ap, m);
        Ok(())
    }
    fn bm_mt_act_prof_modify_member(
        &mut self,
        ap: &str,
        m: BmMemberHandle,
        a: &str,
        d: &[Vec<u8>],
    ) -> ApiResult<(), T> {
        rec!(self, "bm_mt_act_prof_modify_member", T, TC, ap, m, a, d);
        Ok(())
    }
    fn bm_mt_act_prof_create_group(&mut self, ap: &str) -> ApiResult<BmGroupHandle, T> {
        rec!(self, "bm_mt_act_prof_create_group", T, TC, ap);
        self.next_group += 1;
        Ok(self.next_group - 1)
    }
    fn bm_mt_act_prof_delete_group(&mut self, ap: &str, g: BmGroupHandle) -> ApiResult<(), T> {
        rec!(self, "bm_mt_act_prof_delete_group", T, TC, ap, g);
        Ok(())
    }
    fn bm_mt_act_prof_add_member_to_group(
        &mut self,
        ap: &str,
        m: BmMemberHandle,
        g: BmGroupHandle,
    ) -> ApiResult<(), T> {
        rec!(self, "bm_mt_act_prof_add_member_to_group", T, TC, ap, m, g);
        Ok(())
    }
    fn bm_mt_act_prof_remove_member_from_group(
        &mut self,
        ap: &str,
        m: BmMemberHandle,
        g: BmGroupHandle,
    ) -> ApiResult<(), T> {
        rec!(
            self,
            "bm_mt_act_prof_remove_member_from_group",
            T,
            TC,
            ap,
            m,
            g
        );
        Ok(())
    }
    fn bm_mt_act_prof_get_members(&mut self, ap: &str) -> ApiResult<Vec<BmMtActProfMember>, T> {
        rec!(self, "bm_mt_act_prof_get_members", T, TC, ap);
        Ok(self.members.clone())
    }
    fn bm_mt_act_prof_get_member(
        &mut self,
        ap: &str,
        m: BmMemberHandle,
    ) -> ApiResult<BmMtActProfMember, T> {
        rec!(self, "bm_mt_act_prof_get_member", T, TC, ap, m);
        self.members
            .iter()
            .find(|x| x.mbr_handle == m)
            .cloned()
            .ok_or(TC::INVALID_MBR_HANDLE.into())
    }
    fn bm_mt_act_prof_get_groups(&mut self, ap: &str) -> ApiResult<Vec<BmMtActProfGroup>, T> {
        rec!(self, "bm_mt_act_prof_get_groups", T, TC, ap);
        Ok(self.groups.clone())
    }
    fn bm_mt_act_prof_get_group(
        &mut self,
        ap: &str,
        g: BmGroupHandle,
    ) -> ApiResult<BmMtActProfGroup, T> {
        rec!(self, "bm_mt_act_prof_get_group", T, TC, ap, g);
        self.groups
            .iter()
            .find(|x| x.grp_handle == g)
            .cloned()
            .ok_or(TC::INVALID_GRP_HANDLE.into())
    }
    fn bm_mt_indirect_add_entry(
        &mut self,
        t: &str,
        k: &[BmMatchParam],
        m: BmMemberHandle,
        o: BmAddEntryOptions,
    ) -> ApiResult<BmEntryHandle, T> {
        rec!(self, "bm_mt_indirect_add_entry", T, TC, t, k, m, o);
        self.next_entry += 1;
        Ok(self.next_entry - 1)
    }
    fn bm_mt_indirect_modify_entry(
        &mut self,
        t: &str,
        h: BmEntryHandle,
        m: BmMemberHandle,
    ) -> ApiResult<(), T> {
        rec!(self, "bm_mt_indirect_modify_entry", T, TC, t, h, m);
        Ok(())
    }
    fn bm_mt_indirect_delete_entry(&mut self, t: &str, h: BmEntryHandle) -> ApiResult<(), T> {
        rec!(self, "bm_mt_indirect_delete_entry", T, TC, t, h);
        Ok(())
    }
    fn bm_mt_indirect_set_entry_ttl(
        &mut self,
        t: &str,
        h: BmEntryHandle,
        ms: i32,
    ) -> ApiResult<(), T> {
        rec!(self, "bm_mt_indirect_set_entry_ttl", T, TC, t, h, ms);
        Ok(())
    }
    fn bm_mt_indirect_set_default_member(
        &mut self,
        t: &str,
        m: BmMemberHandle,
    ) -> ApiResult<(), T> {
        rec!(self, "bm_mt_indirect_set_default_member", T, TC, t, m);
        Ok(())
    }
    fn bm_mt_indirect_reset_default_entry(&mut self, t: &str) -> ApiResult<(), T> {
        rec!(self, "bm_mt_indirect_reset_default_entry", T, TC, t);
        Ok(())
    }
    fn bm_mt_indirect_ws_add_entry(
        &mut self,
        t: &str,
        k: &[BmMatchParam],
        g: BmGroupHandle,
        o: BmAddEntryOptions,
    ) -> ApiResult<BmEntryHandle, T> {
        rec!(self, "bm_mt_indirect_ws_add_entry", T, TC, t, k, g, o);
        self.next_entry += 1;
        Ok(self.next_entry - 1)
    }
    fn bm_mt_indirect_ws_modify_entry(
        &mut self,
        t: &str,
        h: BmEntryHandle,
        g: BmGroupHandle,
    ) -> ApiResult<(), T> {
        rec!(self, "bm_mt_indirect_ws_modify_entry", T, TC, t, h, g);
        Ok(())
    }
    fn bm_mt_indirect_ws_set_default_group(
        &mut self,
        t: &str,
        g: BmGroupHandle,
    ) -> ApiResult<(), T> {
        rec!(self, "bm_mt_indirect_ws_set_default_group", T, TC, t, g);
        Ok(())
    }
    fn bm_mt_read_counter(&mut self, t: &str, h: BmEntryHandle) -> ApiResult<BmCounterValue, T> {
        rec!(self, "bm_mt_read_counter", T, TC, t, h);
        Ok(self.counter)
    }
    fn bm_mt_reset_counters(&mut self, t: &str) -> ApiResult<(), T> {
        rec!(self, "bm_mt_reset_counters", T, TC, t);
        Ok(())
    }
    fn bm_mt_write_counter(
        &mut self,
        t: &str,
        h: BmEntryHandle,
        v: BmCounterValue,
    ) -> ApiResult<(), T> {
        rec!(self, "bm_mt_write_counter", T, TC, t, h, v);
        Ok(())
    }
    fn bm_mt_set_meter_rates(
        &mut self,
        t: &str,
        h: BmEntryHandle,
        r: &[BmMeterRateConfig],
    ) -> ApiResult<(), T> {
        rec!(self, "bm_mt_set_meter_rates", T, TC, t, h, r);
        Ok(())
    }
    fn bm_mt_get_meter_rates(
        &mut self,
        t: &str,
        h: BmEntryHandle,
    ) -> ApiResult<Vec<BmMeterRateConfig>, T> {
        rec!(self, "bm_mt_get_meter_rates", T, TC, t, h);
        Ok(self.rates.clone())
    }
    fn bm_mt_get_entries(&mut self, t: &str) -> ApiResult<Vec<BmMtEntry>, T> {
        rec!(self, "bm_mt_get_entries", T, TC, t);
        Ok(self.entries.clone())
    }
    fn bm_mt_get_entry(&mut self, t: &str, h: BmEntryHandle) -> ApiResult<BmMtEntry, T> {
        rec!(self, "bm_mt_get_entry", T, TC, t, h);
        self.entries
            .iter()
            .find(|e| e.entry_handle == h)
            .cloned()
            .ok_or(TC::INVALID_HANDLE.into())
    }
    fn bm_mt_get_default_entry(&mut self, t: &str) -> ApiResult<BmActionEntry, T> {
        rec!(self, "bm_mt_get_default_entry", T, TC, t);
        Ok(self.default_entry.clone().unwrap_or(BmActionEntry::None))
    }
    fn bm_mt_get_entry_from_key(
        &mut self,
        t: &str,
        k: &[BmMatchParam],
        o: BmAddEntryOptions,
    ) -> ApiResult<BmMtEntry, T> {
        rec!(self, "bm_mt_get_entry_from_key", T, TC, t, k, o);
        self.entries
            .iter()
            .find(|e| e.match_key == k)
            .cloned()
            .ok_or(TC::BAD_MATCH_KEY.into())
    }
    fn bm_counter_read(
        &mut self,
        c: &str,
        i: i32,
    ) -> ApiResult<BmCounterValue, InvalidCounterOperation> {
        rec!(
            self,
            "bm_counter_read",
            InvalidCounterOperation,
            CounterOperationErrorCode,
            c,
            i
        );
        Ok(self.counter)
    }
    fn bm_counter_reset_all(&mut self, c: &str) -> ApiResult<(), InvalidCounterOperation> {
        rec!(
            self,
            "bm_counter_reset_all",
            InvalidCounterOperation,
            CounterOperationErrorCode,
            c
        );
        Ok(())
    }
    fn bm_counter_write(
        &mut self,
        c: &str,
        i: i32,
        v: BmCounterValue,
    ) -> ApiResult<(), InvalidCounterOperation> {
        rec!(
            self,
            "bm_counter_write",
            InvalidCounterOperation,
            CounterOperationErrorCode,
            c,
            i,
            v
        );
        Ok(())
    }
    fn bm_learning_ack(
        &mut self,
        l: BmLearningListId,
        b: BmLearningBufferId,
        s: &[BmLearningSampleId],
    ) -> ApiResult<(), InvalidLearnOperation> {
        rec!(
            self,
            "bm_learning_ack",
            InvalidLearnOperation,
            LearnOperationErrorCode,
            l,
            b,
            s
        );
        Ok(())
    }
    fn bm_learning_ack_buffer(
        &mut self,
        l: BmLearningListId,
        b: BmLearningBufferId,
    ) -> ApiResult<(), InvalidLearnOperation> {
        rec!(
            self,
            "bm_learning_ack_buffer",
            InvalidLearnOperation,
            LearnOperationErrorCode,
            l,
            b
        );
        Ok(())
    }
    fn bm_learning_set_timeout(
        &mut self,
        l: BmLearningListId,
        ms: i32,
    ) -> ApiResult<(), InvalidLearnOperation> {
        rec!(
            self,
            "bm_learning_set_timeout",
            InvalidLearnOperation,
            LearnOperationErrorCode,
            l,
            ms
        );
        Ok(())
    }
    fn bm_learning_set_buffer_size(
        &mut self,
        l: BmLearningListId,
        n: i32,
    ) -> ApiResult<(), InvalidLearnOperation> {
        rec!(
            self,
            "bm_learning_set_buffer_size",
            InvalidLearnOperation,
            LearnOperationErrorCode,
            l,
            n
        );
        Ok(())
    }
    fn bm_load_new_config(&mut self, c: &str) -> ApiResult<(), InvalidSwapOperation> {
        rec!(
            self,
            "bm_load_new_config",
            InvalidSwapOperation,
            SwapOperationErrorCode,
            c.len()
        );
        Ok(())
    }
    fn bm_swap_configs(&mut self) -> ApiResult<(), InvalidSwapOperation> {
        rec!(
            self,
            "bm_swap_configs",
            InvalidSwapOperation,
            SwapOperationErrorCode
        );
        Ok(())
    }
    fn bm_meter_array_set_rates(
        &mut self,
        m: &str,
        r: &[BmMeterRateConfig],
    ) -> ApiResult<(), InvalidMeterOperation> {
        rec!(
            self,
            "bm_meter_array_set_rates",
            InvalidMeterOperation,
            MeterOperationErrorCode,
            m,
            r
        );
        Ok(())
    }
    fn bm_meter_set_rates(
        &mut self,
        m: &str,
        i: i32,
        r: &[BmMeterRateConfig],
    ) -> ApiResult<(), InvalidMeterOperation> {
        rec!(
            self,
            "bm_meter_set_rates",
            InvalidMeterOperation,
            MeterOperationErrorCode,
            m,
            i,
            r
        );
        Ok(())
    }
    fn bm_meter_get_rates(
        &mut self,
        m: &str,
        i: i32,
    ) -> ApiResult<Vec<BmMeterRateConfig>, InvalidMeterOperation> {
        rec!(
            self,
            "bm_meter_get_rates",
            InvalidMeterOperation,
            MeterOperationErrorCode,
            m,
            i
        );
        Ok(self.rates.clone())
    }
    fn bm_register_read(
        &mut self,
        r: &str,
        i: i32,
    ) -> ApiResult<BmRegisterValue, InvalidRegisterOperation> {
        rec!(
            self,
            "bm_register_read",
            InvalidRegisterOperation,
            RegisterOperationErrorCode,
            r,
            i
        );
        Ok(self.registers.get(i as usize).copied().unwrap_or(0))
    }
    fn bm_register_read_all(
        &mut self,
        r: &str,
    ) -> ApiResult<Vec<BmRegisterValue>, InvalidRegisterOperation> {
        rec!(
            self,
            "bm_register_read_all",
            InvalidRegisterOperation,
            RegisterOperationErrorCode,
            r
        );
        Ok(self.registers.clone())
    }
    fn bm_register_write(
        &mut self,
        r: &str,
        i: i32,
        v: BmRegisterValue,
    ) -> ApiResult<(), InvalidRegisterOperation> {
        rec!(
            self,
            "bm_register_write",
            InvalidRegisterOperation,
            RegisterOperationErrorCode,
            r,
            i,
            v
        );
        Ok(())
    }
    fn bm_register_write_range(
        &mut self,
        r: &str,
        s: i32,
        e: i32,
        v: BmRegisterValue,
    ) -> ApiResult<(), InvalidRegisterOperation> {
        rec!(
            self,
            "bm_register_write_range",
            InvalidRegisterOperation,
            RegisterOperationErrorCode,
            r,
            s,
            e,
            v
        );
        Ok(())
    }
    fn bm_register_reset(&mut self, r: &str) -> ApiResult<(), InvalidRegisterOperation> {
        rec!(
            self,
            "bm_register_reset",
            InvalidRegisterOperation,
            RegisterOperationErrorCode,
            r
        );
        Ok(())
    }
    fn bm_parse_vset_add(&mut self, p: &str, v: &[u8]) -> ApiResult<(), InvalidParseVSetOperation> {
        rec!(
            self,
            "bm_parse_vset_add",
            InvalidParseVSetOperation,
            ParseVSetOperationErrorCode,
            p,
            v
        );
        Ok(())
    }
    fn bm_parse_vset_remove(
        &mut self,
        p: &str,
        v: &[u8],
    ) -> ApiResult<(), InvalidParseVSetOperation> {
        rec!(
            self,
            "bm_parse_vset_remove",
            InvalidParseVSetOperation,
            ParseVSetOperationErrorCode,
            p,
            v
        );
        Ok(())
    }
    fn bm_parse_vset_get(
        &mut self,
        p: &str,
    ) -> ApiResult<Vec<BmParseVSetValue>, InvalidParseVSetOperation> {
        rec!(
            self,
            "bm_parse_vset_get",
            InvalidParseVSetOperation,
            ParseVSetOperationErrorCode,
            p
        );
        Ok(self.pvs.clone())
    }
    fn bm_parse_vset_clear(&mut self, p: &str) -> ApiResult<(), InvalidParseVSetOperation> {
        rec!(
            self,
            "bm_parse_vset_clear",
            InvalidParseVSetOperation,
            ParseVSetOperationErrorCode,
            p
        );
        Ok(())
    }
    fn bm_dev_mgr_add_port(
        &mut self,
        i: &str,
        p: i32,
        pcap: &str,
    ) -> ApiResult<(), InvalidDevMgrOperation> {
        rec!(
            self,
            "bm_dev_mgr_add_port",
            InvalidDevMgrOperation,
            DevMgrErrorCode,
            i,
            p,
            pcap
        );
        Ok(())
    }
    fn bm_dev_mgr_remove_port(&mut self, p: i32) -> ApiResult<(), InvalidDevMgrOperation> {
        rec!(
            self,
            "bm_dev_mgr_remove_port",
            InvalidDevMgrOperation,
            DevMgrErrorCode,
            p
        );
        Ok(())
    }
    fn bm_dev_mgr_show_ports(&mut self) -> ApiResult<Vec<DevMgrPortInfo>, InvalidDevMgrOperation> {
        rec!(
            self,
            "bm_dev_mgr_show_ports",
            InvalidDevMgrOperation,
            DevMgrErrorCode
        );
        Ok(self.ports.clone())
    }
    fn bm_mgmt_get_info(&mut self) -> ApiResult<BmConfig> {
        rec!(self, "bm_mgmt_get_info";);
        Ok(self.info.clone())
    }
    fn bm_set_crc16_custom_parameters(
        &mut self,
        c: &str,
        cfg: BmCrc16Config,
    ) -> ApiResult<(), InvalidCrcOperation> {
        rec!(
            self,
            "bm_set_crc16_custom_parameters",
            InvalidCrcOperation,
            CrcErrorCode,
            c,
            cfg
        );
        Ok(())
    }
    fn bm_set_crc32_custom_parameters(
        &mut self,
        c: &str,
        cfg: BmCrc32Config,
    ) -> ApiResult<(), InvalidCrcOperation> {
        rec!(
            self,
            "bm_set_crc32_custom_parameters",
            InvalidCrcOperation,
            CrcErrorCode,
            c,
            cfg
        );
        Ok(())
    }
    fn bm_set_toeplitz_hash_key(
        &mut self,
        c: &str,
        k: &[u8],
    ) -> ApiResult<(), InvalidToeplitzHashOperation> {
        rec!(
            self,
            "bm_set_toeplitz_hash_key",
            InvalidToeplitzHashOperation,
            ToeplitzHashErrorCode,
            c,
            k
        );
        Ok(())
    }
    fn bm_reset_state(&mut self) -> ApiResult<()> {
        rec!(self, "bm_reset_state";);
        Ok(())
    }
    fn bm_get_config(&mut self) -> ApiResult<String> {
        rec!(self, "bm_get_config";);
        Ok(self.config.clone())
    }
    fn bm_get_config_md5(&mut self) -> ApiResult<Vec<u8>> {
        rec!(self, "bm_get_config_md5";);
        Ok(vec![0; 16])
    }
    fn bm_get_id_from_name(
        &mut self,
        t: BmResourceType,
        n: &str,
    ) -> ApiResult<i32, InvalidIdLookup> {
        rec!(
            self,
            "bm_get_id_from_name",
            InvalidIdLookup,
            IdLookupErrorCode,
            t,
            n
        );
        Ok(0)
    }
    fn bm_serialize_state(&mut self) -> ApiResult<String> {
        rec!(self, "bm_serialize_state";);
        Ok(String::new())
    }
    fn bm_mc_mgrp_create(&mut self, g: BmMcMgrp) -> ApiResult<BmMcMgrpHandle, InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_mgrp_create",
            InvalidMcOperation,
            McOperationErrorCode,
            g
        );
        Ok(g)
    }
    fn bm_mc_mgrp_destroy(&mut self, g: BmMcMgrpHandle) -> ApiResult<(), InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_mgrp_destroy",
            InvalidMcOperation,
            McOperationErrorCode,
            g
        );
        Ok(())
    }
    fn bm_mc_node_create(
        &mut self,
        rid: BmMcRid,
        p: &str,
        l: &str,
    ) -> ApiResult<BmMcL1Handle, InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_node_create",
            InvalidMcOperation,
            McOperationErrorCode,
            rid,
            p,
            l
        );
        self.next_node += 1;
        Ok(self.next_node - 1)
    }
    fn bm_mc_node_associate(
        &mut self,
        g: BmMcMgrpHandle,
        n: BmMcL1Handle,
    ) -> ApiResult<(), InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_node_associate",
            InvalidMcOperation,
            McOperationErrorCode,
            g,
            n
        );
        Ok(())
    }
    fn bm_mc_node_dissociate(
        &mut self,
        g: BmMcMgrpHandle,
        n: BmMcL1Handle,
    ) -> ApiResult<(), InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_node_dissociate",
            InvalidMcOperation,
            McOperationErrorCode,
            g,
            n
        );
        Ok(())
    }
    fn bm_mc_node_destroy(&mut self, n: BmMcL1Handle) -> ApiResult<(), InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_node_destroy",
            InvalidMcOperation,
            McOperationErrorCode,
            n
        );
        Ok(())
    }
    fn bm_mc_node_update(
        &mut self,
        n: BmMcL1Handle,
        p: &str,
        l: &str,
    ) -> ApiResult<(), InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_node_update",
            InvalidMcOperation,
            McOperationErrorCode,
            n,
            p,
            l
        );
        Ok(())
    }
    fn bm_mc_set_lag_membership(
        &mut self,
        l: BmMcLagIndex,
        p: &str,
    ) -> ApiResult<(), InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_set_lag_membership",
            InvalidMcOperation,
            McOperationErrorCode,
            l,
            p
        );
        Ok(())
    }
    fn bm_mc_get_entries(&mut self) -> ApiResult<String, InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_get_entries",
            InvalidMcOperation,
            McOperationErrorCode
        );
        Ok(self.mc_json.clone())
    }
    fn mirroring_session_add(
        &mut self,
        id: i32,
        c: MirroringSessionConfig,
    ) -> ApiResult<(), InvalidMirroringOperation> {
        rec!(
            self,
            "mirroring_session_add",
            InvalidMirroringOperation,
            MirroringOperationErrorCode,
            id,
            c
        );
        Ok(())
    }
    fn mirroring_session_delete(&mut self, id: i32) -> ApiResult<(), InvalidMirroringOperation> {
        rec!(
            self,
            "mirroring_session_delete",
            InvalidMirroringOperation,
            MirroringOperationErrorCode,
            id
        );
        Ok(())
    }
    fn mirroring_session_get(
        &mut self,
        id: i32,
    ) -> ApiResult<MirroringSessionConfig, InvalidMirroringOperation> {
        rec!(
            self,
            "mirroring_session_get",
            InvalidMirroringOperation,
            MirroringOperationErrorCode,
            id
        );
        Ok(self.mirror)
    }
    fn set_egress_queue_depth(&mut self, p: i32, d: i32) -> ApiResult<i32> {
        rec!(self, "set_egress_queue_depth"; p, d);
        Ok(0)
    }
    fn set_egress_priority_queue_depth(&mut self, p: i32, q: i32, d: i32) -> ApiResult<i32> {
        rec!(self, "set_egress_priority_queue_depth"; p, q, d);
        Ok(0)
    }
    fn set_all_egress_queue_depths(&mut self, d: i32) -> ApiResult<i32> {
        rec!(self, "set_all_egress_queue_depths"; d);
        Ok(0)
    }
    fn set_egress_queue_rate(&mut self, p: i32, r: i64) -> ApiResult<i32> {
        rec!(self, "set_egress_queue_rate"; p, r);
        Ok(0)
    }
    fn set_egress_priority_queue_rate(&mut self, p: i32, q: i32, r: i64) -> ApiResult<i32> {
        rec!(self, "set_egress_priority_queue_rate"; p, q, r);
        Ok(0)
    }
    fn set_all_egress_queue_rates(&mut self, r: i64) -> ApiResult<i32> {
        rec!(self, "set_all_egress_queue_rates"; r);
        Ok(0)
    }
    fn get_time_elapsed_us(&mut self) -> ApiResult<i64> {
        rec!(self, "get_time_elapsed_us";);
        Ok(1234)
    }
    fn get_time_since_epoch_us(&mut self) -> ApiResult<i64> {
        rec!(self, "get_time_since_epoch_us";);
        Ok(5678)
    }
}

/// The copy of the corpus inside the workspace.
pub fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

/// Program names of the corpus (directories holding NAME/NAME.json).
pub fn corpus_programs() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(corpus_dir())
        .expect("tests/corpus exists")
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.path()
                .join(format!("{}.json", e.file_name().to_string_lossy()))
                .is_file()
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The JSON text of a corpus program.
pub fn corpus_json(program: &str) -> String {
    std::fs::read_to_string(corpus_dir().join(program).join(format!("{program}.json")))
        .expect("json")
}
