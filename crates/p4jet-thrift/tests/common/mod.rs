//! A deterministic, recording, lightly stateful mock of the runtime API.
//!
//! Every call is recorded as `name(args)` (Debug of the argument tuple).
//! State is just enough for the stock CLI to behave (entries per table,
//! multicast groups and nodes, mirroring sessions, counters, registers,
//! meters, parser value sets). Failures can be injected per method: a
//! declared exception with a given code, an internal error, or a panic.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use p4jet_control::api::*;

/// What an injected failure does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fail {
    /// Return the declared exception with this code (the enum's last code if
    /// this one does not exist for that exception).
    Code(i32),
    /// Return `ApiError::Internal`.
    Internal,
    /// Panic inside the handler.
    Panic,
}

#[derive(Default, Clone)]
pub struct MockApi {
    pub calls: Vec<String>,
    pub fails: HashMap<String, Fail>,
    pub fail_all: Option<Fail>,

    pub config: String,
    pub next_handle: i32,
    pub entries: BTreeMap<String, Vec<BmMtEntry>>,
    pub defaults: BTreeMap<String, BmActionEntry>,
    pub members: BTreeMap<i32, BmMtActProfMember>,
    pub groups: BTreeMap<i32, Vec<i32>>,
    pub counters: BTreeMap<(String, i32), BmCounterValue>,
    pub registers: BTreeMap<(String, i32), i64>,
    pub meters: BTreeMap<(String, i32), Vec<BmMeterRateConfig>>,
    pub pvs: BTreeMap<String, Vec<Vec<u8>>>,
    pub mgrps: BTreeMap<i32, Vec<i32>>,
    pub nodes: BTreeMap<i32, (i32, String, String)>,
    pub lags: BTreeMap<i16, String>,
    pub mirrors: BTreeMap<i32, MirroringSessionConfig>,
    pub ports: Vec<DevMgrPortInfo>,
}

impl MockApi {
    pub fn new() -> Self {
        let mut extra = std::collections::BTreeMap::new();
        extra.insert("Pcap file".to_string(), "/tmp/x.pcap".to_string());
        extra.insert("speed".to_string(), "10G".to_string());
        MockApi {
            config: "{}".to_string(),
            ports: vec![
                DevMgrPortInfo {
                    port_num: 1,
                    iface_name: "veth1".into(),
                    is_up: true,
                    extra,
                },
                DevMgrPortInfo {
                    port_num: 2,
                    iface_name: "veth3".into(),
                    is_up: false,
                    extra: Default::default(),
                },
            ],
            ..Default::default()
        }
    }

    pub fn with_config(config: String) -> Self {
        MockApi {
            config,
            ..MockApi::new()
        }
    }

    pub fn fail(&mut self, method: &str, f: Fail) {
        self.fails.insert(method.to_string(), f);
    }

    pub fn take(&mut self) -> Vec<String> {
        std::mem::take(&mut self.calls)
    }

    fn failure(&self, name: &str) -> Option<Fail> {
        self.fails.get(name).copied().or(self.fail_all)
    }

    fn handle(&mut self) -> i32 {
        let h = self.next_handle;
        self.next_handle += 1;
        h
    }

    fn find_entry(&self, table: &str, handle: i32) -> Option<&BmMtEntry> {
        self.entries
            .get(table)?
            .iter()
            .find(|e| e.entry_handle == handle)
    }

    fn add(
        &mut self,
        table: &str,
        key: &[BmMatchParam],
        action: BmActionEntry,
        options: BmAddEntryOptions,
    ) -> ApiResult<i32, InvalidTableOperation> {
        // bmv2 reports priority -1 for tables without ternary/range keys.
        let prioritised = key
            .iter()
            .any(|k| matches!(k, BmMatchParam::Ternary { .. } | BmMatchParam::Range { .. }));
        let options = if prioritised {
            options
        } else {
            BmAddEntryOptions { priority: Some(-1) }
        };
        let list = self.entries.entry(table.to_string()).or_default();
        if list
            .iter()
            .any(|e| e.match_key == key && e.options == options)
        {
            return Err(TableOperationErrorCode::DUPLICATE_ENTRY.into());
        }
        let h = self.next_handle;
        self.next_handle += 1;
        self.entries
            .entry(table.to_string())
            .or_default()
            .push(BmMtEntry {
                match_key: key.to_vec(),
                options,
                entry_handle: h,
                action_entry: action,
                life: None,
            });
        Ok(h)
    }

    fn sample_entry(handle: i32) -> BmMtEntry {
        BmMtEntry {
            match_key: vec![
                BmMatchParam::Exact { key: vec![1, 2] },
                BmMatchParam::Lpm {
                    key: vec![10, 0, 0, 0],
                    prefix_length: 8,
                },
                BmMatchParam::Ternary {
                    key: vec![0xab],
                    mask: vec![0xf0],
                },
                BmMatchParam::Valid { key: true },
                BmMatchParam::Range {
                    start: vec![0, 1],
                    end: vec![0xff, 0xff],
                },
            ],
            options: BmAddEntryOptions { priority: Some(7) },
            entry_handle: handle,
            action_entry: BmActionEntry::ActionData {
                action_name: "act".into(),
                action_data: vec![vec![], vec![0], vec![1, 2, 3]],
            },
            life: Some(BmMtEntryLife {
                timeout_ms: 1000,
                time_since_hit_ms: 5,
            }),
        }
    }

    fn mc_json(&self) -> String {
        let mgrps: Vec<String> = self
            .mgrps
            .iter()
            .map(|(id, l1)| format!(r#"{{"id": {id}, "l1_handles": {l1:?}}}"#))
            .collect();
        let l1: Vec<String> = self
            .nodes
            .iter()
            .map(|(h, (rid, _, _))| format!(r#"{{"handle": {h}, "rid": {rid}, "l2_handle": {h}}}"#))
            .collect();
        let l2: Vec<String> = self
            .nodes
            .iter()
            .map(|(h, (_, ports, lags))| {
                format!(
                    r#"{{"handle": {h}, "ports": {:?}, "lags": {:?}}}"#,
                    port_map_to_ports(ports).unwrap_or_default(),
                    port_map_to_ports(lags).unwrap_or_default()
                )
            })
            .collect();
        format!(
            r#"{{"mgrps": [{}], "l1_handles": [{}], "l2_handles": [{}], "lags": []}}"#,
            mgrps.join(", "),
            l1.join(", "),
            l2.join(", ")
        )
    }
}

fn call(name: &str, args: &[String]) -> String {
    format!("{name}({})", args.join(", "))
}

/// Records the call and applies an injected failure, for RPCs that declare
/// the exception whose code enum is `$code`.
macro_rules! rec {
    ($s:ident, $name:literal, $code:ident $(, $arg:expr)*) => {{
        $s.calls.push(call($name, &[$(format!("{:?}", $arg)),*]));
        match $s.failure($name) {
            None => {}
            Some(Fail::Code(c)) => {
                let code = $code::from_code(c)
                    .unwrap_or(*$code::ALL.last().expect("non-empty enum"));
                return Err(code.into());
            }
            Some(Fail::Internal) => {
                return Err(ApiError::Internal(format!("mock failure in {}", $name)));
            }
            Some(Fail::Panic) => panic!("mock panic in {}", $name),
        }
    }};
}

/// Same, for RPCs without a declared exception (codes are ignored).
macro_rules! rec_nx {
    ($s:ident, $name:literal $(, $arg:expr)*) => {{
        $s.calls.push(call($name, &[$(format!("{:?}", $arg)),*]));
        match $s.failure($name) {
            None | Some(Fail::Code(_)) => {}
            Some(Fail::Internal) => {
                return Err(ApiError::Internal(format!("mock failure in {}", $name)));
            }
            Some(Fail::Panic) => panic!("mock panic in {}", $name),
        }
    }};
}

type T = TableOperationErrorCode;

impl RuntimeApi for MockApi {
    fn bm_mt_get_num_entries(&mut self, table_name: &str) -> ApiResult<i64, InvalidTableOperation> {
        rec!(self, "bm_mt_get_num_entries", T, table_name);
        Ok(self.entries.get(table_name).map_or(0, Vec::len) as i64)
    }

    fn bm_mt_clear_entries(
        &mut self,
        table_name: &str,
        reset_default_entry: bool,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_clear_entries",
            T,
            table_name,
            reset_default_entry
        );
        self.entries.remove(table_name);
        if reset_default_entry {
            self.defaults.remove(table_name);
        }
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
        rec!(
            self,
            "bm_mt_add_entry",
            T,
            table_name,
            match_key,
            action_name,
            action_data,
            options
        );
        let action = BmActionEntry::ActionData {
            action_name: action_name.to_string(),
            action_data: action_data.to_vec(),
        };
        self.add(table_name, match_key, action, options)
    }

    fn bm_mt_set_default_action(
        &mut self,
        table_name: &str,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_set_default_action",
            T,
            table_name,
            action_name,
            action_data
        );
        self.defaults.insert(
            table_name.to_string(),
            BmActionEntry::ActionData {
                action_name: action_name.to_string(),
                action_data: action_data.to_vec(),
            },
        );
        Ok(())
    }

    fn bm_mt_reset_default_entry(
        &mut self,
        table_name: &str,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(self, "bm_mt_reset_default_entry", T, table_name);
        self.defaults.remove(table_name);
        Ok(())
    }

    fn bm_mt_delete_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(self, "bm_mt_delete_entry", T, table_name, entry_handle);
        let list = self.entries.entry(table_name.to_string()).or_default();
        let before = list.len();
        list.retain(|e| e.entry_handle != entry_handle);
        if list.len() == before {
            return Err(T::INVALID_HANDLE.into());
        }
        Ok(())
    }

    fn bm_mt_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_modify_entry",
            T,
            table_name,
            entry_handle,
            action_name,
            action_data
        );
        let e = self
            .entries
            .get_mut(table_name)
            .and_then(|l| l.iter_mut().find(|e| e.entry_handle == entry_handle))
            .ok_or(ApiError::from(T::INVALID_HANDLE))?;
        e.action_entry = BmActionEntry::ActionData {
            action_name: action_name.to_string(),
            action_data: action_data.to_vec(),
        };
        Ok(())
    }

    fn bm_mt_set_entry_ttl(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        timeout_ms: i32,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_set_entry_ttl",
            T,
            table_name,
            entry_handle,
            timeout_ms
        );
        Ok(())
    }

    fn bm_mt_act_prof_add_member(
        &mut self,
        act_prof_name: &str,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> ApiResult<BmMemberHandle, InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_act_prof_add_member",
            T,
            act_prof_name,
            action_name,
            action_data
        );
        let h = self.handle();
        self.members.insert(
            h,
            BmMtActProfMember {
                mbr_handle: h,
                action_name: action_name.into(),
                action_data: action_data.to_vec(),
            },
        );
        Ok(h)
    }

    fn bm_mt_act_prof_delete_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_act_prof_delete_member",
            T,
            act_prof_name,
            mbr_handle
        );
        self.members
            .remove(&mbr_handle)
            .map(|_| ())
            .ok_or(T::INVALID_MBR_HANDLE.into())
    }

    fn bm_mt_act_prof_modify_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_act_prof_modify_member",
            T,
            act_prof_name,
            mbr_handle,
            action_name,
            action_data
        );
        Ok(())
    }

    fn bm_mt_act_prof_create_group(
        &mut self,
        act_prof_name: &str,
    ) -> ApiResult<BmGroupHandle, InvalidTableOperation> {
        rec!(self, "bm_mt_act_prof_create_group", T, act_prof_name);
        let h = self.handle();
        self.groups.insert(h, Vec::new());
        Ok(h)
    }

    fn bm_mt_act_prof_delete_group(
        &mut self,
        act_prof_name: &str,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_act_prof_delete_group",
            T,
            act_prof_name,
            grp_handle
        );
        Ok(())
    }

    fn bm_mt_act_prof_add_member_to_group(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_act_prof_add_member_to_group",
            T,
            act_prof_name,
            mbr_handle,
            grp_handle
        );
        self.groups.entry(grp_handle).or_default().push(mbr_handle);
        Ok(())
    }

    fn bm_mt_act_prof_remove_member_from_group(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_act_prof_remove_member_from_group",
            T,
            act_prof_name,
            mbr_handle,
            grp_handle
        );
        Ok(())
    }

    fn bm_mt_act_prof_get_members(
        &mut self,
        act_prof_name: &str,
    ) -> ApiResult<Vec<BmMtActProfMember>, InvalidTableOperation> {
        rec!(self, "bm_mt_act_prof_get_members", T, act_prof_name);
        Ok(self.members.values().cloned().collect())
    }

    fn bm_mt_act_prof_get_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> ApiResult<BmMtActProfMember, InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_act_prof_get_member",
            T,
            act_prof_name,
            mbr_handle
        );
        self.members
            .get(&mbr_handle)
            .cloned()
            .ok_or(T::INVALID_MBR_HANDLE.into())
    }

    fn bm_mt_act_prof_get_groups(
        &mut self,
        act_prof_name: &str,
    ) -> ApiResult<Vec<BmMtActProfGroup>, InvalidTableOperation> {
        rec!(self, "bm_mt_act_prof_get_groups", T, act_prof_name);
        Ok(self
            .groups
            .iter()
            .map(|(g, m)| BmMtActProfGroup {
                grp_handle: *g,
                mbr_handles: m.clone(),
            })
            .collect())
    }

    fn bm_mt_act_prof_get_group(
        &mut self,
        act_prof_name: &str,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<BmMtActProfGroup, InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_act_prof_get_group",
            T,
            act_prof_name,
            grp_handle
        );
        self.groups
            .get(&grp_handle)
            .map(|m| BmMtActProfGroup {
                grp_handle,
                mbr_handles: m.clone(),
            })
            .ok_or(T::INVALID_GRP_HANDLE.into())
    }

    fn bm_mt_indirect_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        mbr_handle: BmMemberHandle,
        options: BmAddEntryOptions,
    ) -> ApiResult<BmEntryHandle, InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_indirect_add_entry",
            T,
            table_name,
            match_key,
            mbr_handle,
            options
        );
        self.add(
            table_name,
            match_key,
            BmActionEntry::MbrHandle(mbr_handle),
            options,
        )
    }

    fn bm_mt_indirect_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        mbr_handle: BmMemberHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_indirect_modify_entry",
            T,
            table_name,
            entry_handle,
            mbr_handle
        );
        Ok(())
    }

    fn bm_mt_indirect_delete_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_indirect_delete_entry",
            T,
            table_name,
            entry_handle
        );
        Ok(())
    }

    fn bm_mt_indirect_set_entry_ttl(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        timeout_ms: i32,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_indirect_set_entry_ttl",
            T,
            table_name,
            entry_handle,
            timeout_ms
        );
        Ok(())
    }

    fn bm_mt_indirect_set_default_member(
        &mut self,
        table_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_indirect_set_default_member",
            T,
            table_name,
            mbr_handle
        );
        self.defaults
            .insert(table_name.to_string(), BmActionEntry::MbrHandle(mbr_handle));
        Ok(())
    }

    fn bm_mt_indirect_reset_default_entry(
        &mut self,
        table_name: &str,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(self, "bm_mt_indirect_reset_default_entry", T, table_name);
        self.defaults.remove(table_name);
        Ok(())
    }

    fn bm_mt_indirect_ws_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        grp_handle: BmGroupHandle,
        options: BmAddEntryOptions,
    ) -> ApiResult<BmEntryHandle, InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_indirect_ws_add_entry",
            T,
            table_name,
            match_key,
            grp_handle,
            options
        );
        self.add(
            table_name,
            match_key,
            BmActionEntry::GrpHandle(grp_handle),
            options,
        )
    }

    fn bm_mt_indirect_ws_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_indirect_ws_modify_entry",
            T,
            table_name,
            entry_handle,
            grp_handle
        );
        Ok(())
    }

    fn bm_mt_indirect_ws_set_default_group(
        &mut self,
        table_name: &str,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_indirect_ws_set_default_group",
            T,
            table_name,
            grp_handle
        );
        self.defaults
            .insert(table_name.to_string(), BmActionEntry::GrpHandle(grp_handle));
        Ok(())
    }

    fn bm_mt_read_counter(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<BmCounterValue, InvalidTableOperation> {
        rec!(self, "bm_mt_read_counter", T, table_name, entry_handle);
        Ok(self
            .counters
            .get(&(table_name.to_string(), entry_handle))
            .copied()
            .unwrap_or(BmCounterValue {
                bytes: u64::MAX - 1,
                packets: 1 << 40,
            }))
    }

    fn bm_mt_reset_counters(&mut self, table_name: &str) -> ApiResult<(), InvalidTableOperation> {
        rec!(self, "bm_mt_reset_counters", T, table_name);
        Ok(())
    }

    fn bm_mt_write_counter(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        value: BmCounterValue,
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_write_counter",
            T,
            table_name,
            entry_handle,
            value
        );
        self.counters
            .insert((table_name.to_string(), entry_handle), value);
        Ok(())
    }

    fn bm_mt_set_meter_rates(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        rates: &[BmMeterRateConfig],
    ) -> ApiResult<(), InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_set_meter_rates",
            T,
            table_name,
            entry_handle,
            rates
        );
        self.meters
            .insert((table_name.to_string(), entry_handle), rates.to_vec());
        Ok(())
    }

    fn bm_mt_get_meter_rates(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<Vec<BmMeterRateConfig>, InvalidTableOperation> {
        rec!(self, "bm_mt_get_meter_rates", T, table_name, entry_handle);
        Ok(self
            .meters
            .get(&(table_name.to_string(), entry_handle))
            .cloned()
            .unwrap_or_default())
    }

    fn bm_mt_get_entries(
        &mut self,
        table_name: &str,
    ) -> ApiResult<Vec<BmMtEntry>, InvalidTableOperation> {
        rec!(self, "bm_mt_get_entries", T, table_name);
        Ok(self.entries.get(table_name).cloned().unwrap_or_default())
    }

    fn bm_mt_get_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<BmMtEntry, InvalidTableOperation> {
        rec!(self, "bm_mt_get_entry", T, table_name, entry_handle);
        match self.find_entry(table_name, entry_handle) {
            Some(e) => Ok(e.clone()),
            None if entry_handle >= 1000 => Ok(Self::sample_entry(entry_handle)),
            None => Err(T::INVALID_HANDLE.into()),
        }
    }

    fn bm_mt_get_default_entry(
        &mut self,
        table_name: &str,
    ) -> ApiResult<BmActionEntry, InvalidTableOperation> {
        rec!(self, "bm_mt_get_default_entry", T, table_name);
        Ok(self
            .defaults
            .get(table_name)
            .cloned()
            .unwrap_or(BmActionEntry::None))
    }

    fn bm_mt_get_entry_from_key(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        options: BmAddEntryOptions,
    ) -> ApiResult<BmMtEntry, InvalidTableOperation> {
        rec!(
            self,
            "bm_mt_get_entry_from_key",
            T,
            table_name,
            match_key,
            options
        );
        self.entries
            .get(table_name)
            .and_then(|l| l.iter().find(|e| e.match_key == match_key))
            .cloned()
            .ok_or(T::BAD_MATCH_KEY.into())
    }

    fn bm_counter_read(
        &mut self,
        counter_name: &str,
        index: i32,
    ) -> ApiResult<BmCounterValue, InvalidCounterOperation> {
        rec!(
            self,
            "bm_counter_read",
            CounterOperationErrorCode,
            counter_name,
            index
        );
        if index < 0 {
            return Err(CounterOperationErrorCode::INVALID_INDEX.into());
        }
        Ok(self
            .counters
            .get(&(counter_name.to_string(), index))
            .copied()
            .unwrap_or_default())
    }

    fn bm_counter_reset_all(
        &mut self,
        counter_name: &str,
    ) -> ApiResult<(), InvalidCounterOperation> {
        rec!(
            self,
            "bm_counter_reset_all",
            CounterOperationErrorCode,
            counter_name
        );
        self.counters.retain(|(n, _), _| n != counter_name);
        Ok(())
    }

    fn bm_counter_write(
        &mut self,
        counter_name: &str,
        index: i32,
        value: BmCounterValue,
    ) -> ApiResult<(), InvalidCounterOperation> {
        rec!(
            self,
            "bm_counter_write",
            CounterOperationErrorCode,
            counter_name,
            index,
            value
        );
        self.counters
            .insert((counter_name.to_string(), index), value);
        Ok(())
    }

    fn bm_learning_ack(
        &mut self,
        list_id: BmLearningListId,
        buffer_id: BmLearningBufferId,
        sample_ids: &[BmLearningSampleId],
    ) -> ApiResult<(), InvalidLearnOperation> {
        rec!(
            self,
            "bm_learning_ack",
            LearnOperationErrorCode,
            list_id,
            buffer_id,
            sample_ids
        );
        Ok(())
    }

    fn bm_learning_ack_buffer(
        &mut self,
        list_id: BmLearningListId,
        buffer_id: BmLearningBufferId,
    ) -> ApiResult<(), InvalidLearnOperation> {
        rec!(
            self,
            "bm_learning_ack_buffer",
            LearnOperationErrorCode,
            list_id,
            buffer_id
        );
        Ok(())
    }

    fn bm_learning_set_timeout(
        &mut self,
        list_id: BmLearningListId,
        timeout_ms: i32,
    ) -> ApiResult<(), InvalidLearnOperation> {
        rec!(
            self,
            "bm_learning_set_timeout",
            LearnOperationErrorCode,
            list_id,
            timeout_ms
        );
        Ok(())
    }

    fn bm_learning_set_buffer_size(
        &mut self,
        list_id: BmLearningListId,
        nb_samples: i32,
    ) -> ApiResult<(), InvalidLearnOperation> {
        rec!(
            self,
            "bm_learning_set_buffer_size",
            LearnOperationErrorCode,
            list_id,
            nb_samples
        );
        Ok(())
    }

    fn p4jet_learning_dump(
        &mut self,
        list_name: &str,
        count: i32,
    ) -> ApiResult<String, InvalidLearnOperation> {
        rec!(
            self,
            "p4jet_learning_dump",
            LearnOperationErrorCode,
            list_name,
            count
        );
        Ok(format!("digest {list_name} \u{e9}: {count}\n"))
    }

    fn bm_load_new_config(&mut self, config_str: &str) -> ApiResult<(), InvalidSwapOperation> {
        rec!(
            self,
            "bm_load_new_config",
            SwapOperationErrorCode,
            config_str
        );
        Ok(())
    }

    fn bm_swap_configs(&mut self) -> ApiResult<(), InvalidSwapOperation> {
        rec!(self, "bm_swap_configs", SwapOperationErrorCode);
        Ok(())
    }

    fn bm_meter_array_set_rates(
        &mut self,
        meter_array_name: &str,
        rates: &[BmMeterRateConfig],
    ) -> ApiResult<(), InvalidMeterOperation> {
        rec!(
            self,
            "bm_meter_array_set_rates",
            MeterOperationErrorCode,
            meter_array_name,
            rates
        );
        Ok(())
    }

    fn bm_meter_set_rates(
        &mut self,
        meter_array_name: &str,
        index: i32,
        rates: &[BmMeterRateConfig],
    ) -> ApiResult<(), InvalidMeterOperation> {
        rec!(
            self,
            "bm_meter_set_rates",
            MeterOperationErrorCode,
            meter_array_name,
            index,
            rates
        );
        self.meters
            .insert((meter_array_name.to_string(), index), rates.to_vec());
        Ok(())
    }

    fn bm_meter_get_rates(
        &mut self,
        meter_array_name: &str,
        index: i32,
    ) -> ApiResult<Vec<BmMeterRateConfig>, InvalidMeterOperation> {
        rec!(
            self,
            "bm_meter_get_rates",
            MeterOperationErrorCode,
            meter_array_name,
            index
        );
        Ok(self
            .meters
            .get(&(meter_array_name.to_string(), index))
            .cloned()
            .unwrap_or_default())
    }

    fn bm_register_read(
        &mut self,
        register_array_name: &str,
        index: i32,
    ) -> ApiResult<BmRegisterValue, InvalidRegisterOperation> {
        rec!(
            self,
            "bm_register_read",
            RegisterOperationErrorCode,
            register_array_name,
            index
        );
        if !(0..16).contains(&index) {
            return Err(RegisterOperationErrorCode::INVALID_INDEX.into());
        }
        Ok(self
            .registers
            .get(&(register_array_name.to_string(), index))
            .copied()
            .unwrap_or(0))
    }

    fn bm_register_read_all(
        &mut self,
        register_array_name: &str,
    ) -> ApiResult<Vec<BmRegisterValue>, InvalidRegisterOperation> {
        rec!(
            self,
            "bm_register_read_all",
            RegisterOperationErrorCode,
            register_array_name
        );
        Ok((0..4)
            .map(|i| {
                self.registers
                    .get(&(register_array_name.to_string(), i))
                    .copied()
                    .unwrap_or(i64::from(i) - 2)
            })
            .collect())
    }

    fn bm_register_write(
        &mut self,
        register_array_name: &str,
        index: i32,
        value: BmRegisterValue,
    ) -> ApiResult<(), InvalidRegisterOperation> {
        rec!(
            self,
            "bm_register_write",
            RegisterOperationErrorCode,
            register_array_name,
            index,
            value
        );
        self.registers
            .insert((register_array_name.to_string(), index), value);
        Ok(())
    }

    fn bm_register_write_range(
        &mut self,
        register_array_name: &str,
        start_index: i32,
        end_index: i32,
        value: BmRegisterValue,
    ) -> ApiResult<(), InvalidRegisterOperation> {
        rec!(
            self,
            "bm_register_write_range",
            RegisterOperationErrorCode,
            register_array_name,
            start_index,
            end_index,
            value
        );
        Ok(())
    }

    fn bm_register_reset(
        &mut self,
        register_array_name: &str,
    ) -> ApiResult<(), InvalidRegisterOperation> {
        rec!(
            self,
            "bm_register_reset",
            RegisterOperationErrorCode,
            register_array_name
        );
        self.registers.retain(|(n, _), _| n != register_array_name);
        Ok(())
    }

    fn bm_parse_vset_add(
        &mut self,
        parse_vset_name: &str,
        value: &[u8],
    ) -> ApiResult<(), InvalidParseVSetOperation> {
        rec!(
            self,
            "bm_parse_vset_add",
            ParseVSetOperationErrorCode,
            parse_vset_name,
            value
        );
        self.pvs
            .entry(parse_vset_name.to_string())
            .or_default()
            .push(value.to_vec());
        Ok(())
    }

    fn bm_parse_vset_remove(
        &mut self,
        parse_vset_name: &str,
        value: &[u8],
    ) -> ApiResult<(), InvalidParseVSetOperation> {
        rec!(
            self,
            "bm_parse_vset_remove",
            ParseVSetOperationErrorCode,
            parse_vset_name,
            value
        );
        Ok(())
    }

    fn bm_parse_vset_get(
        &mut self,
        parse_vset_name: &str,
    ) -> ApiResult<Vec<BmParseVSetValue>, InvalidParseVSetOperation> {
        rec!(
            self,
            "bm_parse_vset_get",
            ParseVSetOperationErrorCode,
            parse_vset_name
        );
        Ok(self.pvs.get(parse_vset_name).cloned().unwrap_or_default())
    }

    fn bm_parse_vset_clear(
        &mut self,
        parse_vset_name: &str,
    ) -> ApiResult<(), InvalidParseVSetOperation> {
        rec!(
            self,
            "bm_parse_vset_clear",
            ParseVSetOperationErrorCode,
            parse_vset_name
        );
        self.pvs.remove(parse_vset_name);
        Ok(())
    }

    fn bm_dev_mgr_add_port(
        &mut self,
        iface_name: &str,
        port_num: i32,
        pcap_path: &str,
    ) -> ApiResult<(), InvalidDevMgrOperation> {
        rec!(
            self,
            "bm_dev_mgr_add_port",
            DevMgrErrorCode,
            iface_name,
            port_num,
            pcap_path
        );
        Ok(())
    }

    fn bm_dev_mgr_remove_port(&mut self, port_num: i32) -> ApiResult<(), InvalidDevMgrOperation> {
        rec!(self, "bm_dev_mgr_remove_port", DevMgrErrorCode, port_num);
        Ok(())
    }

    fn bm_dev_mgr_show_ports(&mut self) -> ApiResult<Vec<DevMgrPortInfo>, InvalidDevMgrOperation> {
        rec!(self, "bm_dev_mgr_show_ports", DevMgrErrorCode);
        Ok(self.ports.clone())
    }

    fn bm_mgmt_get_info(&mut self) -> ApiResult<BmConfig> {
        rec_nx!(self, "bm_mgmt_get_info");
        Ok(BmConfig {
            device_id: 1 << 33,
            thrift_port: 9090,
            notifications_socket: Some("ipc:///tmp/bmv2-0-notifications.ipc".into()),
            elogger_socket: None,
            debugger_socket: Some("ipc:///tmp/dbg".into()),
        })
    }

    fn bm_set_crc16_custom_parameters(
        &mut self,
        calc_name: &str,
        crc16_config: BmCrc16Config,
    ) -> ApiResult<(), InvalidCrcOperation> {
        rec!(
            self,
            "bm_set_crc16_custom_parameters",
            CrcErrorCode,
            calc_name,
            crc16_config
        );
        Ok(())
    }

    fn bm_set_crc32_custom_parameters(
        &mut self,
        calc_name: &str,
        crc32_config: BmCrc32Config,
    ) -> ApiResult<(), InvalidCrcOperation> {
        rec!(
            self,
            "bm_set_crc32_custom_parameters",
            CrcErrorCode,
            calc_name,
            crc32_config
        );
        Ok(())
    }

    fn bm_set_toeplitz_hash_key(
        &mut self,
        calc_name: &str,
        key: &[u8],
    ) -> ApiResult<(), InvalidToeplitzHashOperation> {
        rec!(
            self,
            "bm_set_toeplitz_hash_key",
            ToeplitzHashErrorCode,
            calc_name,
            key
        );
        Ok(())
    }

    fn bm_reset_state(&mut self) -> ApiResult<()> {
        rec_nx!(self, "bm_reset_state");
        Ok(())
    }

    fn bm_get_config(&mut self) -> ApiResult<String> {
        rec_nx!(self, "bm_get_config");
        Ok(self.config.clone())
    }

    fn bm_get_config_md5(&mut self) -> ApiResult<Vec<u8>> {
        rec_nx!(self, "bm_get_config_md5");
        Ok((0u8..16).map(|i| i.wrapping_mul(17)).collect())
    }

    fn bm_get_id_from_name(
        &mut self,
        resource_type: BmResourceType,
        resource_name: &str,
    ) -> ApiResult<i32, InvalidIdLookup> {
        rec!(
            self,
            "bm_get_id_from_name",
            IdLookupErrorCode,
            resource_type,
            resource_name
        );
        Ok(resource_type.code() * 100 + resource_name.len() as i32)
    }

    fn bm_serialize_state(&mut self) -> ApiResult<String> {
        rec_nx!(self, "bm_serialize_state");
        Ok("state: \u{e9}t\u{e9}\n".into())
    }

    fn bm_mc_mgrp_create(
        &mut self,
        mgrp: BmMcMgrp,
    ) -> ApiResult<BmMcMgrpHandle, InvalidMcOperation> {
        rec!(self, "bm_mc_mgrp_create", McOperationErrorCode, mgrp);
        if self.mgrps.contains_key(&mgrp) {
            return Err(McOperationErrorCode::INVALID_MGID.into());
        }
        self.mgrps.insert(mgrp, Vec::new());
        Ok(mgrp)
    }

    fn bm_mc_mgrp_destroy(
        &mut self,
        mgrp_handle: BmMcMgrpHandle,
    ) -> ApiResult<(), InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_mgrp_destroy",
            McOperationErrorCode,
            mgrp_handle
        );
        self.mgrps
            .remove(&mgrp_handle)
            .map(|_| ())
            .ok_or(McOperationErrorCode::INVALID_MGRP_HANDLE.into())
    }

    fn bm_mc_node_create(
        &mut self,
        rid: BmMcRid,
        port_map: &str,
        lag_map: &str,
    ) -> ApiResult<BmMcL1Handle, InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_node_create",
            McOperationErrorCode,
            rid,
            port_map,
            lag_map
        );
        let h = self.nodes.len() as i32;
        self.nodes
            .insert(h, (rid, port_map.to_string(), lag_map.to_string()));
        Ok(h)
    }

    fn bm_mc_node_associate(
        &mut self,
        mgrp_handle: BmMcMgrpHandle,
        l1_handle: BmMcL1Handle,
    ) -> ApiResult<(), InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_node_associate",
            McOperationErrorCode,
            mgrp_handle,
            l1_handle
        );
        if !self.nodes.contains_key(&l1_handle) {
            return Err(McOperationErrorCode::INVALID_L1_HANDLE.into());
        }
        self.mgrps
            .get_mut(&mgrp_handle)
            .ok_or(ApiError::from(McOperationErrorCode::INVALID_MGRP_HANDLE))?
            .push(l1_handle);
        Ok(())
    }

    fn bm_mc_node_dissociate(
        &mut self,
        mgrp_handle: BmMcMgrpHandle,
        l1_handle: BmMcL1Handle,
    ) -> ApiResult<(), InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_node_dissociate",
            McOperationErrorCode,
            mgrp_handle,
            l1_handle
        );
        Ok(())
    }

    fn bm_mc_node_destroy(&mut self, l1_handle: BmMcL1Handle) -> ApiResult<(), InvalidMcOperation> {
        rec!(self, "bm_mc_node_destroy", McOperationErrorCode, l1_handle);
        Ok(())
    }

    fn bm_mc_node_update(
        &mut self,
        l1_handle: BmMcL1Handle,
        port_map: &str,
        lag_map: &str,
    ) -> ApiResult<(), InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_node_update",
            McOperationErrorCode,
            l1_handle,
            port_map,
            lag_map
        );
        Ok(())
    }

    fn bm_mc_set_lag_membership(
        &mut self,
        lag_index: BmMcLagIndex,
        port_map: &str,
    ) -> ApiResult<(), InvalidMcOperation> {
        rec!(
            self,
            "bm_mc_set_lag_membership",
            McOperationErrorCode,
            lag_index,
            port_map
        );
        self.lags.insert(lag_index, port_map.to_string());
        Ok(())
    }

    fn bm_mc_get_entries(&mut self) -> ApiResult<String, InvalidMcOperation> {
        rec!(self, "bm_mc_get_entries", McOperationErrorCode);
        Ok(self.mc_json())
    }

    fn mirroring_session_add(
        &mut self,
        mirror_id: i32,
        config: MirroringSessionConfig,
    ) -> ApiResult<(), InvalidMirroringOperation> {
        rec!(
            self,
            "mirroring_session_add",
            MirroringOperationErrorCode,
            mirror_id,
            config
        );
        self.mirrors.insert(mirror_id, config);
        Ok(())
    }

    fn mirroring_session_delete(
        &mut self,
        mirror_id: i32,
    ) -> ApiResult<(), InvalidMirroringOperation> {
        rec!(
            self,
            "mirroring_session_delete",
            MirroringOperationErrorCode,
            mirror_id
        );
        self.mirrors
            .remove(&mirror_id)
            .map(|_| ())
            .ok_or(MirroringOperationErrorCode::SESSION_NOT_FOUND.into())
    }

    fn mirroring_session_get(
        &mut self,
        mirror_id: i32,
    ) -> ApiResult<MirroringSessionConfig, InvalidMirroringOperation> {
        rec!(
            self,
            "mirroring_session_get",
            MirroringOperationErrorCode,
            mirror_id
        );
        self.mirrors
            .get(&mirror_id)
            .copied()
            .ok_or(MirroringOperationErrorCode::SESSION_NOT_FOUND.into())
    }

    fn mirroring_mapping_add(&mut self, mirror_id: i32, egress_port: i32) -> ApiResult<i32> {
        rec_nx!(self, "mirroring_mapping_add", mirror_id, egress_port);
        Ok(0)
    }

    fn mirroring_mapping_delete(&mut self, mirror_id: i32) -> ApiResult<i32> {
        rec_nx!(self, "mirroring_mapping_delete", mirror_id);
        Ok(1)
    }

    fn mirroring_mapping_get_egress_port(&mut self, mirror_id: i32) -> ApiResult<i32> {
        rec_nx!(self, "mirroring_mapping_get_egress_port", mirror_id);
        Ok(-1)
    }

    fn set_egress_queue_depth(&mut self, port_num: i32, depth_pkts: i32) -> ApiResult<i32> {
        rec_nx!(self, "set_egress_queue_depth", port_num, depth_pkts);
        Ok(0)
    }

    fn set_egress_priority_queue_depth(
        &mut self,
        port_num: i32,
        priority: i32,
        depth_pkts: i32,
    ) -> ApiResult<i32> {
        rec_nx!(
            self,
            "set_egress_priority_queue_depth",
            port_num,
            priority,
            depth_pkts
        );
        Ok(0)
    }

    fn set_all_egress_queue_depths(&mut self, depth_pkts: i32) -> ApiResult<i32> {
        rec_nx!(self, "set_all_egress_queue_depths", depth_pkts);
        Ok(0)
    }

    fn set_egress_queue_rate(&mut self, port_num: i32, rate_pps: i64) -> ApiResult<i32> {
        rec_nx!(self, "set_egress_queue_rate", port_num, rate_pps);
        Ok(0)
    }

    fn set_egress_priority_queue_rate(
        &mut self,
        port_num: i32,
        priority: i32,
        rate_pps: i64,
    ) -> ApiResult<i32> {
        rec_nx!(
            self,
            "set_egress_priority_queue_rate",
            port_num,
            priority,
            rate_pps
        );
        Ok(0)
    }

    fn set_all_egress_queue_rates(&mut self, rate_pps: i64) -> ApiResult<i32> {
        rec_nx!(self, "set_all_egress_queue_rates", rate_pps);
        Ok(0)
    }

    fn get_time_elapsed_us(&mut self) -> ApiResult<i64> {
        rec_nx!(self, "get_time_elapsed_us");
        Ok(123_456_789)
    }

    fn get_time_since_epoch_us(&mut self) -> ApiResult<i64> {
        rec_nx!(self, "get_time_since_epoch_us");
        Ok(1_700_000_000_000_000)
    }
}

/// A mock behind the shared handle a server needs, plus the typed handle
/// the test inspects.
pub fn shared(mock: MockApi) -> (Arc<Mutex<MockApi>>, p4jet_thrift::SharedApi) {
    let typed = Arc::new(Mutex::new(mock));
    let api: p4jet_thrift::SharedApi = typed.clone();
    (typed, api)
}

/// Starts a server for `api` on an ephemeral loopback port.
pub fn start(api: p4jet_thrift::SharedApi) -> p4jet_thrift::ServerHandle {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let config = p4jet_thrift::ServerConfig {
        poll_interval: std::time::Duration::from_millis(20),
        stall_timeout: std::time::Duration::from_secs(2),
        ..Default::default()
    };
    p4jet_thrift::ServerHandle::spawn(listener, api, config).unwrap()
}
