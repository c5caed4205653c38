//! The IDL structs of `standard.thrift`, `simple_pre_lag.thrift` and
//! `simple_switch.thrift` as [`Value`]s: one encoder and one decoder per
//! type, shared by the server and the client, plus the method catalogue
//! ([`METHODS`]).
//!
//! Decoders follow generated Thrift code: a missing field, or a field whose
//! wire type is not the declared one, reads as unset (default value); unknown
//! field ids are ignored. Only enum tags that cannot be mapped fail.

use crate::types::*;

use crate::protocol::{Struct, TType, Value};

/// A value that does not fit the IDL (an enum tag out of range).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(pub String);

impl std::fmt::Display for CodecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CodecError {}

// ---------------------------------------------------------------------------
// Field access with Thrift defaults

/// Typed, defaulting access to the fields of a decoded struct.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a>(pub &'a Struct);

static EMPTY: Struct = Struct { fields: Vec::new() };

impl<'a> Fields<'a> {
    /// Field `id` if present.
    pub fn get(&self, id: i16) -> Option<&'a Value> {
        self.0.get(id)
    }

    /// `bool` field (false if unset).
    pub fn bool(&self, id: i16) -> bool {
        self.opt_bool(id).unwrap_or(false)
    }

    /// `bool` field if set.
    pub fn opt_bool(&self, id: i16) -> Option<bool> {
        self.get(id).and_then(Value::as_bool)
    }

    /// `i16` field (0 if unset).
    pub fn i16(&self, id: i16) -> i16 {
        self.get(id).and_then(Value::as_i16).unwrap_or(0)
    }

    /// `i32` field (0 if unset).
    pub fn i32(&self, id: i16) -> i32 {
        self.opt_i32(id).unwrap_or(0)
    }

    /// `i32` field if set.
    pub fn opt_i32(&self, id: i16) -> Option<i32> {
        self.get(id).and_then(Value::as_i32)
    }

    /// `i64` field (0 if unset).
    pub fn i64(&self, id: i16) -> i64 {
        self.get(id).and_then(Value::as_i64).unwrap_or(0)
    }

    /// `double` field (0.0 if unset).
    pub fn double(&self, id: i16) -> f64 {
        self.get(id).and_then(Value::as_double).unwrap_or(0.0)
    }

    /// `string` field ("" if unset).
    pub fn string(&self, id: i16) -> String {
        self.opt_string(id).unwrap_or_default()
    }

    /// `string` field if set.
    pub fn opt_string(&self, id: i16) -> Option<String> {
        self.get(id).and_then(Value::as_string)
    }

    /// `binary` field (empty if unset).
    pub fn binary(&self, id: i16) -> Vec<u8> {
        self.get(id)
            .and_then(Value::as_bytes)
            .map(<[u8]>::to_vec)
            .unwrap_or_default()
    }

    /// `struct` field if set.
    pub fn opt_struct(&self, id: i16) -> Option<Fields<'a>> {
        self.get(id).and_then(Value::as_struct).map(Fields)
    }

    /// `struct` field (an empty struct if unset).
    pub fn strukt(&self, id: i16) -> Fields<'a> {
        self.opt_struct(id).unwrap_or(Fields(&EMPTY))
    }

    /// Elements of a `list<elem>` field (empty if unset or of another
    /// element type).
    pub fn list(&self, id: i16, elem: TType) -> &'a [Value] {
        self.get(id).and_then(|v| v.as_list_of(elem)).unwrap_or(&[])
    }

    /// `list<binary>` field.
    pub fn binary_list(&self, id: i16) -> Vec<Vec<u8>> {
        self.list(id, TType::String)
            .iter()
            .filter_map(|v| v.as_bytes().map(<[u8]>::to_vec))
            .collect()
    }

    /// `list<i32>` field.
    pub fn i32_list(&self, id: i16) -> Vec<i32> {
        self.list(id, TType::I32)
            .iter()
            .filter_map(Value::as_i32)
            .collect()
    }

    /// `list<i64>` field.
    pub fn i64_list(&self, id: i16) -> Vec<i64> {
        self.list(id, TType::I64)
            .iter()
            .filter_map(Value::as_i64)
            .collect()
    }

    /// `list<struct>` field.
    pub fn struct_list(&self, id: i16) -> impl Iterator<Item = Fields<'a>> + use<'a> {
        self.list(id, TType::Struct)
            .iter()
            .filter_map(|v| v.as_struct().map(Fields))
    }
}

// ---------------------------------------------------------------------------
// Small value builders

/// `string` value.
pub fn string(s: &str) -> Value {
    Value::string(s)
}

/// `binary` value.
pub fn binary(b: &[u8]) -> Value {
    Value::Binary(b.to_vec())
}

/// `list<binary>` value (`BmActionData`, parser value set values).
pub fn binary_list(items: &[Vec<u8>]) -> Value {
    Value::list(TType::String, items.iter().map(|b| binary(b)).collect())
}

/// `list<i32>` value.
pub fn i32_list(items: &[i32]) -> Value {
    Value::list(TType::I32, items.iter().map(|&i| Value::I32(i)).collect())
}

/// `list<i64>` value.
pub fn i64_list(items: &[i64]) -> Value {
    Value::list(TType::I64, items.iter().map(|&i| Value::I64(i)).collect())
}

/// `list<struct>` value.
pub fn struct_list<T>(items: &[T], f: impl Fn(&T) -> Struct) -> Value {
    Value::list(
        TType::Struct,
        items.iter().map(|t| Value::Struct(f(t))).collect(),
    )
}

// ---------------------------------------------------------------------------
// standard.thrift structs

/// `BmMatchParam`.
pub fn match_param(p: &BmMatchParam) -> Struct {
    let s = Struct::new().with(1, Value::I32(p.param_type().code()));
    match p {
        BmMatchParam::Exact { key } => s.with(2, Value::Struct(Struct::new().with(1, binary(key)))),
        BmMatchParam::Lpm { key, prefix_length } => s.with(
            3,
            Value::Struct(
                Struct::new()
                    .with(1, binary(key))
                    .with(2, Value::I32(*prefix_length)),
            ),
        ),
        BmMatchParam::Ternary { key, mask } => s.with(
            4,
            Value::Struct(Struct::new().with(1, binary(key)).with(2, binary(mask))),
        ),
        BmMatchParam::Valid { key } => {
            s.with(5, Value::Struct(Struct::new().with(1, Value::Bool(*key))))
        }
        BmMatchParam::Range { start, end } => s.with(
            6,
            Value::Struct(Struct::new().with(1, binary(start)).with(2, binary(end))),
        ),
    }
}

/// `BmMatchParam` from the wire. The `type` tag selects the sub-struct; a
/// missing sub-struct reads as all defaults (as in bmv2's C++ server).
pub fn match_param_from(f: Fields<'_>) -> Result<BmMatchParam, CodecError> {
    let tag = f.i32(1);
    let ty = BmMatchParamType::from_code(tag)
        .ok_or_else(|| CodecError(format!("invalid BmMatchParamType {tag}")))?;
    Ok(match ty {
        BmMatchParamType::EXACT => BmMatchParam::Exact {
            key: f.strukt(2).binary(1),
        },
        BmMatchParamType::LPM => {
            let s = f.strukt(3);
            BmMatchParam::Lpm {
                key: s.binary(1),
                prefix_length: s.i32(2),
            }
        }
        BmMatchParamType::TERNARY => {
            let s = f.strukt(4);
            BmMatchParam::Ternary {
                key: s.binary(1),
                mask: s.binary(2),
            }
        }
        BmMatchParamType::VALID => BmMatchParam::Valid {
            key: f.strukt(5).bool(1),
        },
        BmMatchParamType::RANGE => {
            let s = f.strukt(6);
            BmMatchParam::Range {
                start: s.binary(1),
                end: s.binary(2),
            }
        }
    })
}

/// `BmMatchParams` (`list<BmMatchParam>`).
pub fn match_key(key: &[BmMatchParam]) -> Value {
    struct_list(key, match_param)
}

/// `BmMatchParams` from a list field.
pub fn match_key_from(f: Fields<'_>, id: i16) -> Result<Vec<BmMatchParam>, CodecError> {
    f.struct_list(id).map(match_param_from).collect()
}

/// `BmAddEntryOptions`.
pub fn add_entry_options(o: BmAddEntryOptions) -> Struct {
    Struct::new().with_opt(1, o.priority.map(Value::I32))
}

/// `BmAddEntryOptions` from the wire.
pub fn add_entry_options_from(f: Fields<'_>) -> BmAddEntryOptions {
    BmAddEntryOptions {
        priority: f.opt_i32(1),
    }
}

/// `BmCounterValue` (unsigned counts travel as the same bits in `i64`).
pub fn counter_value(c: BmCounterValue) -> Struct {
    Struct::new()
        .with(1, Value::I64(c.bytes as i64))
        .with(2, Value::I64(c.packets as i64))
}

/// `BmCounterValue` from the wire.
pub fn counter_value_from(f: Fields<'_>) -> BmCounterValue {
    BmCounterValue {
        bytes: f.i64(1) as u64,
        packets: f.i64(2) as u64,
    }
}

/// `BmMeterRateConfig`.
pub fn meter_rate(r: &BmMeterRateConfig) -> Struct {
    Struct::new()
        .with(1, Value::Double(r.units_per_micros))
        .with(2, Value::I32(r.burst_size as i32))
}

/// `BmMeterRateConfig` from the wire.
pub fn meter_rate_from(f: Fields<'_>) -> BmMeterRateConfig {
    BmMeterRateConfig {
        units_per_micros: f.double(1),
        burst_size: f.i32(2) as u32,
    }
}

/// `list<BmMeterRateConfig>`.
pub fn meter_rates(rates: &[BmMeterRateConfig]) -> Value {
    struct_list(rates, meter_rate)
}

/// `list<BmMeterRateConfig>` from a list field.
pub fn meter_rates_from(f: Fields<'_>, id: i16) -> Vec<BmMeterRateConfig> {
    f.struct_list(id).map(meter_rate_from).collect()
}

/// `BmActionEntry`.
pub fn action_entry(a: &BmActionEntry) -> Struct {
    let s = Struct::new().with(1, Value::I32(a.action_type().code()));
    match a {
        BmActionEntry::None => s,
        BmActionEntry::ActionData {
            action_name,
            action_data,
        } => s
            .with(2, string(action_name))
            .with(3, binary_list(action_data)),
        BmActionEntry::MbrHandle(h) => s.with(4, Value::I32(*h)),
        BmActionEntry::GrpHandle(h) => s.with(5, Value::I32(*h)),
    }
}

/// `BmActionEntry` from the wire.
pub fn action_entry_from(f: Fields<'_>) -> Result<BmActionEntry, CodecError> {
    let tag = f.i32(1);
    let ty = BmActionEntryType::from_code(tag)
        .ok_or_else(|| CodecError(format!("invalid BmActionEntryType {tag}")))?;
    Ok(match ty {
        BmActionEntryType::NONE => BmActionEntry::None,
        BmActionEntryType::ACTION_DATA => BmActionEntry::ActionData {
            action_name: f.string(2),
            action_data: f.binary_list(3),
        },
        BmActionEntryType::MBR_HANDLE => BmActionEntry::MbrHandle(f.i32(4)),
        BmActionEntryType::GRP_HANDLE => BmActionEntry::GrpHandle(f.i32(5)),
    })
}

/// `BmMtEntryLife`.
pub fn entry_life(l: BmMtEntryLife) -> Struct {
    Struct::new()
        .with(1, Value::I32(l.timeout_ms))
        .with(2, Value::I32(l.time_since_hit_ms))
}

/// `BmMtEntryLife` from the wire.
pub fn entry_life_from(f: Fields<'_>) -> BmMtEntryLife {
    BmMtEntryLife {
        timeout_ms: f.i32(1),
        time_since_hit_ms: f.i32(2),
    }
}

/// `BmMtEntry`.
pub fn mt_entry(e: &BmMtEntry) -> Struct {
    Struct::new()
        .with(1, match_key(&e.match_key))
        .with(2, Value::Struct(add_entry_options(e.options)))
        .with(3, Value::I32(e.entry_handle))
        .with(4, Value::Struct(action_entry(&e.action_entry)))
        .with_opt(5, e.life.map(|l| Value::Struct(entry_life(l))))
}

/// `BmMtEntry` from the wire.
pub fn mt_entry_from(f: Fields<'_>) -> Result<BmMtEntry, CodecError> {
    Ok(BmMtEntry {
        match_key: match_key_from(f, 1)?,
        options: add_entry_options_from(f.strukt(2)),
        entry_handle: f.i32(3),
        action_entry: action_entry_from(f.strukt(4))?,
        life: f.opt_struct(5).map(entry_life_from),
    })
}

/// `BmMtActProfMember`.
pub fn act_prof_member(m: &BmMtActProfMember) -> Struct {
    Struct::new()
        .with(1, Value::I32(m.mbr_handle))
        .with(2, string(&m.action_name))
        .with(3, binary_list(&m.action_data))
}

/// `BmMtActProfMember` from the wire.
pub fn act_prof_member_from(f: Fields<'_>) -> BmMtActProfMember {
    BmMtActProfMember {
        mbr_handle: f.i32(1),
        action_name: f.string(2),
        action_data: f.binary_list(3),
    }
}

/// `BmMtActProfGroup`.
pub fn act_prof_group(g: &BmMtActProfGroup) -> Struct {
    Struct::new()
        .with(1, Value::I32(g.grp_handle))
        .with(2, i32_list(&g.mbr_handles))
}

/// `BmMtActProfGroup` from the wire.
pub fn act_prof_group_from(f: Fields<'_>) -> BmMtActProfGroup {
    BmMtActProfGroup {
        grp_handle: f.i32(1),
        mbr_handles: f.i32_list(2),
    }
}

/// `BmConfig`.
pub fn bm_config(c: &BmConfig) -> Struct {
    Struct::new()
        .with(1, Value::I64(c.device_id))
        .with(2, Value::I32(c.thrift_port))
        .with_opt(3, c.notifications_socket.as_deref().map(string))
        .with_opt(4, c.elogger_socket.as_deref().map(string))
        .with_opt(5, c.debugger_socket.as_deref().map(string))
}

/// `BmConfig` from the wire.
pub fn bm_config_from(f: Fields<'_>) -> BmConfig {
    BmConfig {
        device_id: f.i64(1),
        thrift_port: f.i32(2),
        notifications_socket: f.opt_string(3),
        elogger_socket: f.opt_string(4),
        debugger_socket: f.opt_string(5),
    }
}

/// `DevMgrPortInfo` (`extra` is a `map<string, string>`).
pub fn port_info(p: &DevMgrPortInfo) -> Struct {
    Struct::new()
        .with(1, Value::I32(p.port_num))
        .with(2, string(&p.iface_name))
        .with(3, Value::Bool(p.is_up))
        .with(
            4,
            Value::Map {
                key: TType::String,
                value: TType::String,
                entries: p
                    .extra
                    .iter()
                    .map(|(k, v)| (string(k), string(v)))
                    .collect(),
            },
        )
}

/// `DevMgrPortInfo` from the wire.
pub fn port_info_from(f: Fields<'_>) -> DevMgrPortInfo {
    let mut extra = std::collections::BTreeMap::new();
    if let Some(Value::Map {
        key: TType::String,
        value: TType::String,
        entries,
    }) = f.get(4)
    {
        for (k, v) in entries {
            if let (Some(k), Some(v)) = (k.as_string(), v.as_string()) {
                extra.insert(k, v);
            }
        }
    }
    DevMgrPortInfo {
        port_num: f.i32(1),
        iface_name: f.string(2),
        is_up: f.bool(3),
        extra,
    }
}

/// `BmCrc16Config` (`u16` travels as the same bits in `i16`).
pub fn crc16_config(c: BmCrc16Config) -> Struct {
    Struct::new()
        .with(1, Value::I16(c.polynomial as i16))
        .with(2, Value::I16(c.initial_remainder as i16))
        .with(3, Value::I16(c.final_xor_value as i16))
        .with(4, Value::Bool(c.data_reflected))
        .with(5, Value::Bool(c.remainder_reflected))
}

/// `BmCrc16Config` from the wire.
pub fn crc16_config_from(f: Fields<'_>) -> BmCrc16Config {
    BmCrc16Config {
        polynomial: f.i16(1) as u16,
        initial_remainder: f.i16(2) as u16,
        final_xor_value: f.i16(3) as u16,
        data_reflected: f.bool(4),
        remainder_reflected: f.bool(5),
    }
}

/// `BmCrc32Config` (`u32` travels as the same bits in `i32`).
pub fn crc32_config(c: BmCrc32Config) -> Struct {
    Struct::new()
        .with(1, Value::I32(c.polynomial as i32))
        .with(2, Value::I32(c.initial_remainder as i32))
        .with(3, Value::I32(c.final_xor_value as i32))
        .with(4, Value::Bool(c.data_reflected))
        .with(5, Value::Bool(c.remainder_reflected))
}

/// `BmCrc32Config` from the wire.
pub fn crc32_config_from(f: Fields<'_>) -> BmCrc32Config {
    BmCrc32Config {
        polynomial: f.i32(1) as u32,
        initial_remainder: f.i32(2) as u32,
        final_xor_value: f.i32(3) as u32,
        data_reflected: f.bool(4),
        remainder_reflected: f.bool(5),
    }
}

// ---------------------------------------------------------------------------
// simple_switch.thrift

/// `MirroringSessionConfig` (both fields optional).
pub fn mirroring_config(c: MirroringSessionConfig) -> Struct {
    Struct::new()
        .with_opt(1, c.port.map(Value::I32))
        .with_opt(2, c.mgid.map(Value::I32))
}

/// `MirroringSessionConfig` from the wire.
pub fn mirroring_config_from(f: Fields<'_>) -> MirroringSessionConfig {
    MirroringSessionConfig {
        port: f.opt_i32(1),
        mgid: f.opt_i32(2),
    }
}

// ---------------------------------------------------------------------------
// Exceptions: every declared exception is `{1: <Code> code}` and every
// `throws` clause names it field 1 ("ouch").

/// The wire struct of an exception with this code.
pub fn exception_struct(code: i32) -> Struct {
    Struct::new().with(1, Value::I32(code))
}

// ---------------------------------------------------------------------------
// Method catalogue

/// The service a method belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    /// `standard` (`bm_runtime.standard.Standard`).
    Standard,
    /// `simple_pre_lag` (`bm_runtime.simple_pre_lag.SimplePreLAG`).
    SimplePreLag,
    /// `simple_pre` (`bm_runtime.simple_pre.SimplePre`; the LAG-less PRE).
    SimplePre,
    /// `simple_switch` (`sswitch_runtime.SimpleSwitch`).
    SimpleSwitch,
    /// `p4jet`: p4jet's own extensions (not in bmv2; stock clients never call it).
    P4jet,
}

impl Service {
    /// All services, in the order used to resolve an un-prefixed name.
    pub const ALL: [Service; 5] = [
        Service::Standard,
        Service::SimplePreLag,
        Service::SimpleSwitch,
        Service::SimplePre,
        Service::P4jet,
    ];

    /// The multiplexing name (`standard:bm_mt_add_entry`).
    pub fn name(self) -> &'static str {
        match self {
            Service::Standard => "standard",
            Service::SimplePreLag => "simple_pre_lag",
            Service::SimplePre => "simple_pre",
            Service::SimpleSwitch => "simple_switch",
            Service::P4jet => "p4jet",
        }
    }

    /// The service with this multiplexing name.
    pub fn from_name(name: &str) -> Option<Service> {
        Service::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// One RPC: its arguments `(id, name, wire type)`, result type (`None` for
/// `void`) and declared exception (`None` if it declares none).
#[derive(Debug, Clone, Copy)]
pub struct MethodSpec {
    /// Service.
    pub service: Service,
    /// RPC name.
    pub name: &'static str,
    /// Arguments as `(field id, name, type)`.
    pub args: &'static [(i16, &'static str, TType)],
    /// Result type, `None` for `void`.
    pub result: Option<TType>,
    /// The exception declared as field 1 of the result, if any.
    pub exception: Option<&'static str>,
}

macro_rules! methods {
    ($($svc:ident $name:ident ( $($id:literal $arg:ident : $ty:ident),* ) -> $res:tt $(throws $exc:ident)? ;)*) => {
        /// Every RPC of the three services (and of `simple_pre`), from the
        /// IDL: what the server serves and the client can call.
        pub const METHODS: &[MethodSpec] = &[
            $(MethodSpec {
                service: Service::$svc,
                name: stringify!($name),
                args: &[$(($id, stringify!($arg), TType::$ty)),*],
                result: methods!(@res $res),
                exception: methods!(@exc $($exc)?),
            },)*
        ];
    };
    (@res void) => { None };
    (@res $t:ident) => { Some(TType::$t) };
    (@exc) => { None };
    (@exc $e:ident) => { Some(stringify!($e)) };
}

methods! {
    Standard bm_mt_get_num_entries(1 cxt_id: I32, 2 table_name: String) -> I64 throws InvalidTableOperation;
    Standard bm_mt_clear_entries(1 cxt_id: I32, 2 table_name: String, 3 reset_default_entry: Bool) -> void throws InvalidTableOperation;
    Standard bm_mt_add_entry(1 cxt_id: I32, 2 table_name: String, 3 match_key: List, 4 action_name: String, 5 action_data: List, 6 options: Struct) -> I32 throws InvalidTableOperation;
    Standard bm_mt_set_default_action(1 cxt_id: I32, 2 table_name: String, 3 action_name: String, 4 action_data: List) -> void throws InvalidTableOperation;
    Standard bm_mt_reset_default_entry(1 cxt_id: I32, 2 table_name: String) -> void throws InvalidTableOperation;
    Standard bm_mt_delete_entry(1 cxt_id: I32, 2 table_name: String, 3 entry_handle: I32) -> void throws InvalidTableOperation;
    Standard bm_mt_modify_entry(1 cxt_id: I32, 2 table_name: String, 3 entry_handle: I32, 4 action_name: String, 5 action_data: List) -> void throws InvalidTableOperation;
    Standard bm_mt_set_entry_ttl(1 cxt_id: I32, 2 table_name: String, 3 entry_handle: I32, 4 timeout_ms: I32) -> void throws InvalidTableOperation;
    Standard bm_mt_act_prof_add_member(1 cxt_id: I32, 2 act_prof_name: String, 3 action_name: String, 4 action_data: List) -> I32 throws InvalidTableOperation;
    Standard bm_mt_act_prof_delete_member(1 cxt_id: I32, 2 act_prof_name: String, 3 mbr_handle: I32) -> void throws InvalidTableOperation;
    Standard bm_mt_act_prof_modify_member(1 cxt_id: I32, 2 act_prof_name: String, 3 mbr_handle: I32, 4 action_name: String, 5 action_data: List) -> void throws InvalidTableOperation;
    Standard bm_mt_act_prof_create_group(1 cxt_id: I32, 2 act_prof_name: String) -> I32 throws InvalidTableOperation;
    Standard bm_mt_act_prof_delete_group(1 cxt_id: I32, 2 act_prof_name: String, 3 grp_handle: I32) -> void throws InvalidTableOperation;
    Standard bm_mt_act_prof_add_member_to_group(1 cxt_id: I32, 2 act_prof_name: String, 3 mbr_handle: I32, 4 grp_handle: I32) -> void throws InvalidTableOperation;
    Standard bm_mt_act_prof_remove_member_from_group(1 cxt_id: I32, 2 act_prof_name: String, 3 mbr_handle: I32, 4 grp_handle: I32) -> void throws InvalidTableOperation;
    Standard bm_mt_act_prof_get_members(1 cxt_id: I32, 2 act_prof_name: String) -> List throws InvalidTableOperation;
    Standard bm_mt_act_prof_get_member(1 cxt_id: I32, 2 act_prof_name: String, 3 mbr_handle: I32) -> Struct throws InvalidTableOperation;
    Standard bm_mt_act_prof_get_groups(1 cxt_id: I32, 2 act_prof_name: String) -> List throws InvalidTableOperation;
    Standard bm_mt_act_prof_get_group(1 cxt_id: I32, 2 act_prof_name: String, 3 grp_handle: I32) -> Struct throws InvalidTableOperation;
    Standard bm_mt_indirect_add_entry(1 cxt_id: I32, 2 table_name: String, 3 match_key: List, 4 mbr_handle: I32, 5 options: Struct) -> I32 throws InvalidTableOperation;
    Standard bm_mt_indirect_modify_entry(1 cxt_id: I32, 2 table_name: String, 3 entry_handle: I32, 4 mbr_handle: I32) -> void throws InvalidTableOperation;
    Standard bm_mt_indirect_delete_entry(1 cxt_id: I32, 2 table_name: String, 3 entry_handle: I32) -> void throws InvalidTableOperation;
    Standard bm_mt_indirect_set_entry_ttl(1 cxt_id: I32, 2 table_name: String, 3 entry_handle: I32, 4 timeout_ms: I32) -> void throws InvalidTableOperation;
    Standard bm_mt_indirect_set_default_member(1 cxt_id: I32, 2 table_name: String, 3 mbr_handle: I32) -> void throws InvalidTableOperation;
    Standard bm_mt_indirect_reset_default_entry(1 cxt_id: I32, 2 table_name: String) -> void throws InvalidTableOperation;
    Standard bm_mt_indirect_ws_add_entry(1 cxt_id: I32, 2 table_name: String, 3 match_key: List, 4 grp_handle: I32, 5 options: Struct) -> I32 throws InvalidTableOperation;
    Standard bm_mt_indirect_ws_modify_entry(1 cxt_id: I32, 2 table_name: String, 3 entry_handle: I32, 4 grp_handle: I32) -> void throws InvalidTableOperation;
    Standard bm_mt_indirect_ws_set_default_group(1 cxt_id: I32, 2 table_name: String, 3 grp_handle: I32) -> void throws InvalidTableOperation;
    Standard bm_mt_read_counter(1 cxt_id: I32, 2 table_name: String, 3 entry_handle: I32) -> Struct throws InvalidTableOperation;
    Standard bm_mt_reset_counters(1 cxt_id: I32, 2 table_name: String) -> void throws InvalidTableOperation;
    Standard bm_mt_write_counter(1 cxt_id: I32, 2 table_name: String, 3 entry_handle: I32, 4 value: Struct) -> void throws InvalidTableOperation;
    Standard bm_mt_set_meter_rates(1 cxt_id: I32, 2 table_name: String, 3 entry_handle: I32, 4 rates: List) -> void throws InvalidTableOperation;
    Standard bm_mt_get_meter_rates(1 cxt_id: I32, 2 table_name: String, 3 entry_handle: I32) -> List throws InvalidTableOperation;
    Standard bm_mt_get_entries(1 cxt_id: I32, 2 table_name: String) -> List throws InvalidTableOperation;
    Standard bm_mt_get_entry(1 cxt_id: I32, 2 table_name: String, 3 entry_handle: I32) -> Struct throws InvalidTableOperation;
    Standard bm_mt_get_default_entry(1 cxt_id: I32, 2 table_name: String) -> Struct throws InvalidTableOperation;
    Standard bm_mt_get_entry_from_key(1 cxt_id: I32, 2 table_name: String, 3 match_key: List, 4 options: Struct) -> Struct throws InvalidTableOperation;
    Standard bm_counter_read(1 cxt_id: I32, 2 counter_name: String, 3 index: I32) -> Struct throws InvalidCounterOperation;
    Standard bm_counter_reset_all(1 cxt_id: I32, 2 counter_name: String) -> void throws InvalidCounterOperation;
    Standard bm_counter_write(1 cxt_id: I32, 2 counter_name: String, 3 index: I32, 4 value: Struct) -> void throws InvalidCounterOperation;
    Standard bm_learning_ack(1 cxt_id: I32, 2 list_id: I32, 3 buffer_id: I64, 4 sample_ids: List) -> void throws InvalidLearnOperation;
    Standard bm_learning_ack_buffer(1 cxt_id: I32, 2 list_id: I32, 3 buffer_id: I64) -> void throws InvalidLearnOperation;
    Standard bm_learning_set_timeout(1 cxt_id: I32, 2 list_id: I32, 3 timeout_ms: I32) -> void throws InvalidLearnOperation;
    Standard bm_learning_set_buffer_size(1 cxt_id: I32, 2 list_id: I32, 3 nb_samples: I32) -> void throws InvalidLearnOperation;
    Standard bm_load_new_config(1 config_str: String) -> void throws InvalidSwapOperation;
    Standard bm_swap_configs() -> void throws InvalidSwapOperation;
    Standard bm_meter_array_set_rates(1 cxt_id: I32, 2 meter_array_name: String, 3 rates: List) -> void throws InvalidMeterOperation;
    Standard bm_meter_set_rates(1 cxt_id: I32, 2 meter_array_name: String, 3 index: I32, 4 rates: List) -> void throws InvalidMeterOperation;
    Standard bm_meter_get_rates(1 cxt_id: I32, 2 meter_array_name: String, 3 index: I32) -> List throws InvalidMeterOperation;
    Standard bm_register_read(1 cxt_id: I32, 2 register_array_name: String, 3 idx: I32) -> I64 throws InvalidRegisterOperation;
    Standard bm_register_read_all(1 cxt_id: I32, 2 register_array_name: String) -> List throws InvalidRegisterOperation;
    Standard bm_register_write(1 cxt_id: I32, 2 register_array_name: String, 3 index: I32, 4 value: I64) -> void throws InvalidRegisterOperation;
    Standard bm_register_write_range(1 cxt_id: I32, 2 register_array_name: String, 3 start_index: I32, 4 end_index: I32, 5 value: I64) -> void throws InvalidRegisterOperation;
    Standard bm_register_reset(1 cxt_id: I32, 2 register_array_name: String) -> void throws InvalidRegisterOperation;
    Standard bm_parse_vset_add(1 cxt_id: I32, 2 parse_vset_name: String, 3 value: String) -> void throws InvalidParseVSetOperation;
    Standard bm_parse_vset_remove(1 cxt_id: I32, 2 parse_vset_name: String, 3 value: String) -> void throws InvalidParseVSetOperation;
    Standard bm_parse_vset_get(1 cxt_id: I32, 2 parse_vset_name: String) -> List throws InvalidParseVSetOperation;
    Standard bm_parse_vset_clear(1 cxt_id: I32, 2 parse_vset_name: String) -> void throws InvalidParseVSetOperation;
    Standard bm_dev_mgr_add_port(1 iface_name: String, 2 port_num: I32, 3 pcap_path: String) -> void throws InvalidDevMgrOperation;
    Standard bm_dev_mgr_remove_port(1 port_num: I32) -> void throws InvalidDevMgrOperation;
    Standard bm_dev_mgr_show_ports() -> List throws InvalidDevMgrOperation;
    Standard bm_mgmt_get_info() -> Struct;
    Standard bm_set_crc16_custom_parameters(1 cxt_id: I32, 2 calc_name: String, 3 crc16_config: Struct) -> void throws InvalidCrcOperation;
    Standard bm_set_crc32_custom_parameters(1 cxt_id: I32, 2 calc_name: String, 3 crc32_config: Struct) -> void throws InvalidCrcOperation;
    Standard bm_set_toeplitz_hash_key(1 cxt_id: I32, 2 calc_name: String, 3 key: String) -> void throws InvalidToeplitzHashOperation;
    Standard bm_reset_state() -> void;
    Standard bm_get_config() -> String;
    Standard bm_get_config_md5() -> String;
    Standard bm_get_id_from_name(1 cxt_id: I32, 2 resource_type: I32, 3 resource_name: String) -> I32 throws InvalidIdLookup;
    Standard bm_serialize_state() -> String;

    P4jet p4jet_learning_dump(1 cxt_id: I32, 2 list_name: String, 3 count: I32) -> String throws InvalidLearnOperation;
    P4jet p4jet_digest_log(1 cxt_id: I32, 2 list_name: String, 3 count: I32) -> String throws InvalidLearnOperation;
    P4jet p4jet_packet_books() -> String;
    P4jet p4jet_workers() -> String throws InvalidDevMgrOperation;
    P4jet p4jet_set_workers(1 count: I32) -> void throws InvalidDevMgrOperation;

    SimplePreLag bm_mc_mgrp_create(1 cxt_id: I32, 2 mgrp: I32) -> I32 throws InvalidMcOperation;
    SimplePreLag bm_mc_mgrp_destroy(1 cxt_id: I32, 2 mgrp_handle: I32) -> void throws InvalidMcOperation;
    SimplePreLag bm_mc_node_create(1 cxt_id: I32, 2 rid: I32, 3 port_map: String, 4 lag_map: String) -> I32 throws InvalidMcOperation;
    SimplePreLag bm_mc_node_associate(1 cxt_id: I32, 2 mgrp_handle: I32, 3 l1_handle: I32) -> void throws InvalidMcOperation;
    SimplePreLag bm_mc_node_dissociate(1 cxt_id: I32, 2 mgrp_handle: I32, 3 l1_handle: I32) -> void throws InvalidMcOperation;
    SimplePreLag bm_mc_node_destroy(1 cxt_id: I32, 2 l1_handle: I32) -> void throws InvalidMcOperation;
    SimplePreLag bm_mc_node_update(1 cxt_id: I32, 2 l1_handle: I32, 3 port_map: String, 4 lag_map: String) -> void throws InvalidMcOperation;
    SimplePreLag bm_mc_set_lag_membership(1 cxt_id: I32, 2 lag_index: I16, 3 port_map: String) -> void throws InvalidMcOperation;
    SimplePreLag bm_mc_get_entries(1 cxt_id: I32) -> String throws InvalidMcOperation;

    SimplePre bm_mc_mgrp_create(1 cxt_id: I32, 2 mgrp: I32) -> I32 throws InvalidMcOperation;
    SimplePre bm_mc_mgrp_destroy(1 cxt_id: I32, 2 mgrp_handle: I32) -> void throws InvalidMcOperation;
    SimplePre bm_mc_node_create(1 cxt_id: I32, 2 rid: I32, 3 port_map: String) -> I32 throws InvalidMcOperation;
    SimplePre bm_mc_node_associate(1 cxt_id: I32, 2 mgrp_handle: I32, 3 l1_handle: I32) -> void throws InvalidMcOperation;
    SimplePre bm_mc_node_dissociate(1 cxt_id: I32, 2 mgrp_handle: I32, 3 l1_handle: I32) -> void throws InvalidMcOperation;
    SimplePre bm_mc_node_destroy(1 cxt_id: I32, 2 l1_handle: I32) -> void throws InvalidMcOperation;
    SimplePre bm_mc_node_update(1 cxt_id: I32, 2 l1_handle: I32, 3 port_map: String) -> void throws InvalidMcOperation;
    SimplePre bm_mc_get_entries(1 cxt_id: I32) -> String throws InvalidMcOperation;

    SimpleSwitch mirroring_mapping_add(1 mirror_id: I32, 2 egress_port: I32) -> I32;
    SimpleSwitch mirroring_mapping_delete(1 mirror_id: I32) -> I32;
    SimpleSwitch mirroring_mapping_get_egress_port(1 mirror_id: I32) -> I32;
    SimpleSwitch mirroring_session_add(1 mirror_id: I32, 2 config: Struct) -> void throws InvalidMirroringOperation;
    SimpleSwitch mirroring_session_delete(1 mirror_id: I32) -> void throws InvalidMirroringOperation;
    SimpleSwitch mirroring_session_get(1 mirror_id: I32) -> Struct throws InvalidMirroringOperation;
    SimpleSwitch set_egress_priority_queue_depth(1 port_num: I32, 2 priority: I32, 3 depth_pkts: I32) -> I32;
    SimpleSwitch set_egress_queue_depth(1 port_num: I32, 2 depth_pkts: I32) -> I32;
    SimpleSwitch set_all_egress_queue_depths(1 depth_pkts: I32) -> I32;
    SimpleSwitch set_egress_priority_queue_rate(1 port_num: I32, 2 priority: I32, 3 rate_pps: I64) -> I32;
    SimpleSwitch set_egress_queue_rate(1 port_num: I32, 2 rate_pps: I64) -> I32;
    SimpleSwitch set_all_egress_queue_rates(1 rate_pps: I64) -> I32;
    SimpleSwitch get_time_elapsed_us() -> I64;
    SimpleSwitch get_time_since_epoch_us() -> I64;
}

/// The catalogue entry of `service:name`.
pub fn method_spec(service: Service, name: &str) -> Option<&'static MethodSpec> {
    METHODS
        .iter()
        .find(|m| m.service == service && m.name == name)
}
