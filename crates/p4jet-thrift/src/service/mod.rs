//! bmv2's Thrift services as an adapter over the runtime model.
//!
//! [`Bmv2`] wraps any [`Runtime`] and offers one method per RPC, named like the RPC,
//! with the IDL's argument and result types ([`crate::types`]): it turns names into
//! ids (`INVALID_TABLE_NAME` and the like for unknown ones, checked in bmv2's order),
//! IDL structs into typed [`Update`]s and reads, and reads back into IDL structs.
//! Errors are [`RuntimeError`]s carrying simple_switch's exception code; the wire
//! layer ([`dispatch`]) sends the code as the RPC's declared exception, anything
//! else as a `TApplicationException`, as bmv2 does for the C++ exceptions it throws.
//!
//! One file per service: [`standard`] (tables, action profiles, counters, meters,
//! registers, value sets, learning, configuration, device manager), [`simple_pre_lag`]
//! (the packet replication engine; `simple_pre` is the same without LAGs) and
//! [`simple_switch`] (mirroring sessions, egress queues, clock), plus [`p4jet`]
//! (p4jet's own extensions).

pub mod p4jet;
pub mod simple_pre_lag;
pub mod simple_switch;
pub mod standard;

use std::sync::Arc;

use p4jet_runtime::bmv2::{Bmv2Code, TableOperationErrorCode as TC};
use p4jet_runtime::schema::{ObjectKind, Table};
use p4jet_runtime::{
    ActionCall, EntryAction, FieldMatch, MatchKey, Runtime, RuntimeError, Schema, TableEntry,
    TableId, Update,
};

use crate::codec::{Fields, MethodSpec, Service};
use crate::protocol::{ApplicationException, Struct, Value, app_error};
use crate::types::*;

/// The bmv2 services over a runtime.
pub struct Bmv2<'a> {
    rt: &'a mut dyn Runtime,
}

/// Result of an RPC.
pub type Rpc<T> = Result<T, RuntimeError>;

impl<'a> Bmv2<'a> {
    /// The services over `rt`.
    pub fn new(rt: &'a mut dyn Runtime) -> Bmv2<'a> {
        Bmv2 { rt }
    }

    /// The runtime.
    pub fn runtime(&mut self) -> &mut dyn Runtime {
        self.rt
    }

    fn schema(&self) -> Rpc<Arc<Schema>> {
        self.rt.schema().ok_or_else(RuntimeError::no_pipeline)
    }

    /// The table named `name` (full name), or `INVALID_TABLE_NAME`.
    fn table(&self, name: &str) -> Rpc<(Arc<Schema>, TableId)> {
        let s = self.schema()?;
        let t = s.table_by_name(name).ok_or_else(|| {
            Bmv2Code::Table(TC::INVALID_TABLE_NAME).error(format!("no table `{name}`"))
        })?;
        Ok((s, t))
    }

    /// The action of a table by name, or `INVALID_ACTION_NAME`.
    fn table_action(s: &Schema, t: &Table, name: &str, data: Vec<Vec<u8>>) -> Rpc<ActionCall> {
        let a = t.action_named(s, name).ok_or_else(|| {
            Bmv2Code::Table(TC::INVALID_ACTION_NAME)
                .error(format!("table {}: no action `{name}`", t.name))
        })?;
        Ok(ActionCall::new(a, data))
    }

    /// Applies one update.
    fn apply(&mut self, u: Update) -> Rpc<p4jet_runtime::Applied> {
        self.rt.apply(u)
    }
}

/// A table of the schema by id (ids come from the schema: always there).
fn table_of(s: &Schema, t: TableId) -> Rpc<&Table> {
    s.table(t)
        .ok_or_else(|| RuntimeError::internal(format!("no table {}", t.0)))
}

/// The model's match of a Thrift key (`BAD_MATCH_KEY` shapes are left to the
/// runtime, which knows the fields).
pub fn key_from_bm(params: &[BmMatchParam], priority: i32) -> MatchKey {
    MatchKey::with_priority(
        params
            .iter()
            .map(|p| match p {
                BmMatchParam::Exact { key } => FieldMatch::Exact(key.clone()),
                BmMatchParam::Lpm { key, prefix_length } => FieldMatch::Lpm {
                    value: key.clone(),
                    prefix_len: u32::try_from(*prefix_length).unwrap_or(u32::MAX),
                },
                BmMatchParam::Ternary { key, mask } => FieldMatch::Ternary {
                    value: key.clone(),
                    mask: mask.clone(),
                },
                BmMatchParam::Valid { key } => FieldMatch::Valid(*key),
                BmMatchParam::Range { start, end } => FieldMatch::Range {
                    low: start.clone(),
                    high: end.clone(),
                },
            })
            .collect(),
        priority,
    )
}

/// [`key_from_bm`] taking the parameters (their bytes move, nothing is copied).
pub fn key_from_bm_owned(params: Vec<BmMatchParam>, priority: i32) -> MatchKey {
    MatchKey::with_priority(
        params
            .into_iter()
            .map(|p| match p {
                BmMatchParam::Exact { key } => FieldMatch::Exact(key),
                BmMatchParam::Lpm { key, prefix_length } => FieldMatch::Lpm {
                    value: key,
                    prefix_len: u32::try_from(prefix_length).unwrap_or(u32::MAX),
                },
                BmMatchParam::Ternary { key, mask } => FieldMatch::Ternary { value: key, mask },
                BmMatchParam::Valid { key } => FieldMatch::Valid(key),
                BmMatchParam::Range { start, end } => FieldMatch::Range {
                    low: start,
                    high: end,
                },
            })
            .collect(),
        priority,
    )
}

/// The Thrift form of a model key.
pub fn key_to_bm(key: &MatchKey) -> Vec<BmMatchParam> {
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

/// The Thrift form of what an entry does (a one-shot action set, which bmv2 does not
/// have, shows as no action).
pub fn action_to_bm(s: &Schema, a: &EntryAction) -> BmActionEntry {
    match a {
        EntryAction::Direct(c) => BmActionEntry::ActionData {
            action_name: s.action_name(c.action),
            action_data: c.args.clone(),
        },
        EntryAction::Member(m) => BmActionEntry::MbrHandle(m.0 as i32),
        EntryAction::Group(g) => BmActionEntry::GrpHandle(g.0 as i32),
        EntryAction::OneShot(_) => BmActionEntry::None,
    }
}

/// The Thrift form of an entry: bmv2 reports the stored priority of ternary and range
/// entries, -1 for the others.
pub fn entry_to_bm(s: &Schema, e: &TableEntry) -> BmMtEntry {
    BmMtEntry {
        match_key: key_to_bm(&e.key),
        options: BmAddEntryOptions {
            priority: Some(e.key.priority),
        },
        entry_handle: e.handle.0 as BmEntryHandle,
        action_entry: action_to_bm(s, &e.action),
        life: e.ttl.map(|t| BmMtEntryLife {
            timeout_ms: t.timeout_ms as i32,
            time_since_hit_ms: t.idle_ms as i32,
        }),
    }
}

// ------------------------------------------------------------------------ wire

/// The IDL name of the exception carrying a bmv2 code.
pub fn exception_name(c: Bmv2Code) -> &'static str {
    match c {
        Bmv2Code::Table(_) => "InvalidTableOperation",
        Bmv2Code::Counter(_) => "InvalidCounterOperation",
        Bmv2Code::Swap(_) => "InvalidSwapOperation",
        Bmv2Code::Meter(_) => "InvalidMeterOperation",
        Bmv2Code::Register(_) => "InvalidRegisterOperation",
        Bmv2Code::ParseVSet(_) => "InvalidParseVSetOperation",
        Bmv2Code::Learn(_) => "InvalidLearnOperation",
        Bmv2Code::DevMgr(_) => "InvalidDevMgrOperation",
        Bmv2Code::Crc(_) => "InvalidCrcOperation",
        Bmv2Code::Toeplitz(_) => "InvalidToeplitzHashOperation",
        Bmv2Code::IdLookup(_) => "InvalidIdLookup",
        Bmv2Code::Mc(_) => "InvalidMcOperation",
        Bmv2Code::Mirroring(_) => "InvalidMirroringOperation",
    }
}

/// The bmv2 code of a wire exception `exception` with `code`.
pub fn code_of(exception: &str, code: i32) -> Option<Bmv2Code> {
    use p4jet_runtime::bmv2::*;
    Some(match exception {
        "InvalidTableOperation" => Bmv2Code::Table(TableOperationErrorCode::from_code(code)?),
        "InvalidCounterOperation" => Bmv2Code::Counter(CounterOperationErrorCode::from_code(code)?),
        "InvalidSwapOperation" => Bmv2Code::Swap(SwapOperationErrorCode::from_code(code)?),
        "InvalidMeterOperation" => Bmv2Code::Meter(MeterOperationErrorCode::from_code(code)?),
        "InvalidRegisterOperation" => {
            Bmv2Code::Register(RegisterOperationErrorCode::from_code(code)?)
        }
        "InvalidParseVSetOperation" => {
            Bmv2Code::ParseVSet(ParseVSetOperationErrorCode::from_code(code)?)
        }
        "InvalidLearnOperation" => Bmv2Code::Learn(LearnOperationErrorCode::from_code(code)?),
        "InvalidDevMgrOperation" => Bmv2Code::DevMgr(DevMgrErrorCode::from_code(code)?),
        "InvalidCrcOperation" => Bmv2Code::Crc(CrcErrorCode::from_code(code)?),
        "InvalidToeplitzHashOperation" => {
            Bmv2Code::Toeplitz(ToeplitzHashErrorCode::from_code(code)?)
        }
        "InvalidIdLookup" => Bmv2Code::IdLookup(IdLookupErrorCode::from_code(code)?),
        "InvalidMcOperation" => Bmv2Code::Mc(McOperationErrorCode::from_code(code)?),
        "InvalidMirroringOperation" => {
            Bmv2Code::Mirroring(MirroringOperationErrorCode::from_code(code)?)
        }
        _ => return None,
    })
}

/// A reply: a result struct, or an application exception.
pub type Reply = Result<Struct, ApplicationException>;

/// The result struct of an RPC that failed with `e`: its declared exception (field 1)
/// when `e` carries a code of that exception, else a `TApplicationException`.
pub(crate) fn error_reply(spec: &MethodSpec, e: RuntimeError) -> Reply {
    match e.bmv2 {
        Some(code) if spec.exception == Some(exception_name(code)) => Ok(Struct::new().with(
            1,
            Value::Struct(crate::codec::exception_struct(code.code())),
        )),
        _ => Err(ApplicationException::new(
            app_error::INTERNAL_ERROR,
            e.message,
        )),
    }
}

/// A result struct: success as field 0, the declared exception as field 1.
pub(crate) fn ret<T>(spec: &MethodSpec, r: Rpc<T>, f: impl FnOnce(T) -> Value) -> Reply {
    match r {
        Ok(v) => Ok(Struct::new().with(0, f(v))),
        Err(e) => error_reply(spec, e),
    }
}

/// The result struct of a `void` RPC.
pub(crate) fn ret_void(spec: &MethodSpec, r: Rpc<()>) -> Reply {
    match r {
        Ok(()) => Ok(Struct::new()),
        Err(e) => error_reply(spec, e),
    }
}

/// The reply to a call with a declared exception code (e.g. a bad `cxt_id`).
pub(crate) fn exception_reply(code: i32) -> Reply {
    Ok(Struct::new().with(1, Value::Struct(crate::codec::exception_struct(code))))
}

/// `Invalid method name` for a method the service does not have.
pub(crate) fn unknown(method: &str) -> Reply {
    Err(ApplicationException::new(
        app_error::UNKNOWN_METHOD,
        format!("Invalid method name: '{method}'"),
    ))
}

/// Runs one decoded call on `rt` and builds its result struct.
pub fn dispatch(rt: &mut dyn Runtime, spec: &MethodSpec, args: &Struct) -> Reply {
    let a = Fields(args);
    let mut b = Bmv2::new(rt);
    match spec.service {
        Service::Standard => standard::dispatch(&mut b, spec, a),
        Service::SimplePreLag => simple_pre_lag::dispatch(&mut b, spec, a, true),
        Service::SimplePre => simple_pre_lag::dispatch(&mut b, spec, a, false),
        Service::SimpleSwitch => simple_switch::dispatch(&mut b, spec, a),
        Service::P4jet => p4jet::dispatch(&mut b, spec, a),
    }
}

/// A name of the schema by kind and exact name (for `bm_get_id_from_name`).
pub(crate) fn json_id(s: &Schema, kind: ObjectKind, name: &str) -> Option<i64> {
    let i = s.index_of(kind, name)? as usize;
    match kind {
        ObjectKind::Table => s.tables.get(i).map(|t| t.json_id),
        ObjectKind::Profile => s.profiles.get(i).map(|p| p.json_id),
        ObjectKind::Counter => s
            .counters
            .get(i)
            .filter(|c| c.direct_table.is_none())
            .map(|c| c.json_id),
        ObjectKind::Meter => s.meters.get(i).map(|m| m.json_id),
        ObjectKind::Register => s.registers.get(i).map(|r| r.json_id),
        ObjectKind::Digest => s.digests.get(i).map(|d| d.json_id),
        _ => None,
    }
}
