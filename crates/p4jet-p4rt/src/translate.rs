//! P4Runtime messages to and from the runtime model ([`p4jet_runtime`]).
//!
//! Writes: each P4Runtime update becomes one or more model [`Update`]s (an entry
//! insert with inline direct counter data is an `AddEntry` and a
//! `WriteDirectCounter`). Everything the P4Runtime specification requires of a
//! request that the model does not check itself is checked here, with the status
//! code the specification names: ids of the right kind, bytestrings that fit their
//! width, wildcard fields left out, masked-off bits zero, priorities only where the
//! table has them, MODIFY for counters, meters, registers and value sets.
//!
//! Reads: model values back to P4Runtime entities, in canonical bytestrings, with the
//! wildcard fields of an entry left out.

use std::sync::Arc;

use p4jet_runtime::p4info::P4InfoJoin;
use p4jet_runtime::schema::{KeyField, MatchKind};
use p4jet_runtime::{
    ActionCall, ActionId, CloneSession, CloneTarget, CounterValue, DigestConfig, EntryAction,
    EntryRef, FieldMatch, GroupId, GroupMember, MatchKey, MemberId, MeterConfig, NewEntry, Replica,
    Schema, TableEntry as RtEntry, TableId, Update, WeightedAction, WriteMode,
    priority_from_p4runtime, priority_to_p4runtime,
};

use crate::arbitration::code;
use crate::bytestring::{self, canonical, to_width};
use crate::packet_io::PacketIo;
use crate::proto::p4::config::v1 as cfg;
use crate::proto::p4::v1 as p4;
use crate::proto::p4::v1::update::Type as UpdateType;

/// A request the specification (or the program) refuses: a google.rpc.Code and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail {
    /// google.rpc.Code value.
    pub code: i32,
    /// Why.
    pub message: String,
}

impl Fail {
    /// `INVALID_ARGUMENT`.
    pub fn invalid(m: impl Into<String>) -> Fail {
        Fail {
            code: code::INVALID_ARGUMENT,
            message: m.into(),
        }
    }
    /// `NOT_FOUND`.
    pub fn not_found(m: impl Into<String>) -> Fail {
        Fail {
            code: code::NOT_FOUND,
            message: m.into(),
        }
    }
    /// `UNIMPLEMENTED`.
    pub fn unimplemented(m: impl Into<String>) -> Fail {
        Fail {
            code: code::UNIMPLEMENTED,
            message: m.into(),
        }
    }
    /// `OUT_OF_RANGE`.
    pub fn out_of_range(m: impl Into<String>) -> Fail {
        Fail {
            code: code::OUT_OF_RANGE,
            message: m.into(),
        }
    }
}

/// How an action selector is programmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SelectorMode {
    /// Members and groups written by the controller.
    Explicit,
    /// Action sets given with each entry.
    OneShot,
}

/// The google.rpc.Code of a model error.
pub fn error_code(e: &p4jet_runtime::RuntimeError) -> i32 {
    use p4jet_runtime::ErrorKind as K;
    match e.kind {
        K::NotFound => code::NOT_FOUND,
        K::AlreadyExists => code::ALREADY_EXISTS,
        K::InvalidArgument => code::INVALID_ARGUMENT,
        K::OutOfRange => code::OUT_OF_RANGE,
        K::ResourceExhausted => code::RESOURCE_EXHAUSTED,
        K::FailedPrecondition | K::NoPipeline => code::FAILED_PRECONDITION,
        K::PermissionDenied => code::PERMISSION_DENIED,
        K::Aborted => 10,
        K::Unimplemented => code::UNIMPLEMENTED,
        K::Internal => code::INTERNAL,
    }
}

/// A program as P4Runtime sees it: the P4Info, the model's schema and the join.
#[derive(Debug)]
pub struct Program {
    /// The P4Info as the controller sent it.
    pub p4info: cfg::P4Info,
    /// The device config as the controller sent it (returned by
    /// GetForwardingPipelineConfig).
    pub device_config: Vec<u8>,
    /// The bmv2 JSON inside it.
    pub json: String,
    /// The controller's cookie.
    pub cookie: Option<u64>,
    /// The program model.
    pub schema: Arc<Schema>,
    /// P4Info ids ↔ model ids.
    pub join: P4InfoJoin,
    /// Controller headers.
    pub io: PacketIo,
}

fn preamble(p: &Option<cfg::Preamble>) -> (u32, String, String) {
    p.as_ref()
        .map(|p| (p.id, p.name.clone(), p.alias.clone()))
        .unwrap_or_default()
}

/// The P4Info objects the join pairs with the schema.
pub fn p4info_objects(p: &cfg::P4Info) -> Vec<p4jet_runtime::p4info::P4InfoObject> {
    use p4jet_runtime::p4info::{P4InfoField, P4InfoKind as K, P4InfoObject};
    let obj = |kind: K, pre: &Option<cfg::Preamble>| {
        let (id, name, alias) = preamble(pre);
        let mut o = P4InfoObject::new(kind, id, name);
        o.alias = alias;
        o
    };
    let width = |b: i32| b.max(0) as u32;
    let mut v = vec![];
    for t in &p.tables {
        let mut o = obj(K::Table, &t.preamble);
        o.fields = t
            .match_fields
            .iter()
            .map(|m| P4InfoField {
                id: m.id,
                name: m.name.clone(),
                bitwidth: width(m.bitwidth),
            })
            .collect();
        v.push(o);
    }
    for a in &p.actions {
        let mut o = obj(K::Action, &a.preamble);
        o.fields = a
            .params
            .iter()
            .map(|m| P4InfoField {
                id: m.id,
                name: m.name.clone(),
                bitwidth: width(m.bitwidth),
            })
            .collect();
        v.push(o);
    }
    for a in &p.action_profiles {
        v.push(obj(K::ActionProfile, &a.preamble));
    }
    for c in &p.counters {
        let mut o = obj(K::Counter, &c.preamble);
        o.size = c.size.max(0) as u64;
        v.push(o);
    }
    for c in &p.direct_counters {
        v.push(obj(K::DirectCounter, &c.preamble));
    }
    for m in &p.meters {
        let mut o = obj(K::Meter, &m.preamble);
        o.size = m.size.max(0) as u64;
        v.push(o);
    }
    for m in &p.direct_meters {
        v.push(obj(K::DirectMeter, &m.preamble));
    }
    for r in &p.registers {
        let mut o = obj(K::Register, &r.preamble);
        o.size = r.size.max(0) as u64;
        o.bitwidth = register_width(r).unwrap_or(0);
        v.push(o);
    }
    for d in &p.digests {
        v.push(obj(K::Digest, &d.preamble));
    }
    for s in &p.value_sets {
        v.push(obj(K::ValueSet, &s.preamble));
    }
    v
}

/// The cell width of a `bit<W>` (or `int<W>`) register.
fn register_width(r: &cfg::Register) -> Option<u32> {
    use cfg::p4_bitstring_like_type_spec::TypeSpec as B;
    use cfg::p4_data_type_spec::TypeSpec as D;
    match r.type_spec.as_ref()?.type_spec.as_ref()? {
        D::Bitstring(b) => match b.type_spec.as_ref()? {
            B::Bit(b) => Some(b.bitwidth.max(0) as u32),
            B::Int(i) => Some(i.bitwidth.max(0) as u32),
            B::Varbit(_) => None,
        },
        _ => None,
    }
}

impl Program {
    /// Builds the program from a P4Info and the bmv2 JSON; fails when they do not
    /// match.
    pub fn new(
        p4info: cfg::P4Info,
        device_config: Vec<u8>,
        json: String,
        cookie: Option<u64>,
    ) -> Result<Program, Fail> {
        let schema = Schema::shared_from_json(&json)
            .map_err(|e| Fail::invalid(format!("the bmv2 JSON does not load: {e}")))?;
        let join = p4jet_runtime::p4info::join(&schema, &p4info_objects(&p4info))
            .map_err(|e| Fail::invalid(format!("the bmv2 JSON does not match the P4Info: {e}")))?;
        let io = PacketIo::from_p4info(&p4info).map_err(Fail::invalid)?;
        Ok(Program {
            p4info,
            device_config,
            json,
            cookie,
            schema,
            join,
            io,
        })
    }

    fn p4table(&self, id: u32) -> Option<&cfg::Table> {
        self.p4info
            .tables
            .iter()
            .find(|t| t.preamble.as_ref().is_some_and(|p| p.id == id))
    }

    fn p4action(&self, id: u32) -> Option<&cfg::Action> {
        self.p4info
            .actions
            .iter()
            .find(|t| t.preamble.as_ref().is_some_and(|p| p.id == id))
    }

    /// The model table of a P4Info table id.
    pub fn table(
        &self,
        id: u32,
    ) -> Result<(TableId, &cfg::Table, &p4jet_runtime::schema::Table), Fail> {
        let p = self
            .p4table(id)
            .ok_or_else(|| Fail::not_found(format!("Unknown table id {id}")))?;
        let t = self
            .join
            .table(id)
            .ok_or_else(|| Fail::not_found(format!("Table id {id} is not in the program")))?;
        let st = self
            .schema
            .table(t)
            .ok_or_else(|| Fail::not_found(format!("Table id {id} is not in the program")))?;
        Ok((t, p, st))
    }

    fn table_name(&self, t: TableId) -> String {
        self.schema
            .table(t)
            .map(|t| t.name.clone())
            .unwrap_or_default()
    }

    // ---------------------------------------------------------------- keys

    /// The model key of a P4Runtime entry's match and priority.
    pub fn key(&self, te: &p4::TableEntry) -> Result<(TableId, MatchKey), Fail> {
        let (t, pt, st) = self.table(te.table_id)?;
        let tname = &st.name;
        let mut fields: Vec<Option<FieldMatch>> = vec![None; st.keys.len()];
        for fm in &te.r#match {
            let pos = self.join.key_field(t, fm.field_id).ok_or_else(|| {
                Fail::invalid(format!(
                    "table {tname}: unknown match field id {}",
                    fm.field_id
                ))
            })?;
            if fields[pos].is_some() {
                return Err(Fail::invalid(format!(
                    "table {tname}: match field id {} given twice",
                    fm.field_id
                )));
            }
            let mf = pt
                .match_fields
                .iter()
                .find(|m| m.id == fm.field_id)
                .ok_or_else(|| {
                    Fail::invalid(format!(
                        "table {tname}: unknown match field id {}",
                        fm.field_id
                    ))
                })?;
            fields[pos] = Some(field_match(tname, mf, &st.keys[pos], fm)?);
        }
        let mut out = Vec::with_capacity(fields.len());
        for (pos, f) in fields.into_iter().enumerate() {
            match f {
                Some(f) => out.push(f),
                None => {
                    let k = &st.keys[pos];
                    let p4kind = self
                        .join
                        .key_field_id(t, pos)
                        .and_then(|id| pt.match_fields.iter().find(|m| m.id == id))
                        .map(match_type);
                    if k.kind == MatchKind::Exact
                        && p4kind != Some(cfg::match_field::MatchType::Optional as i32)
                    {
                        return Err(Fail::invalid(format!(
                            "table {tname}: exact match field {} is missing (only ternary, \
                             lpm, range and optional fields may be left out)",
                            k.name
                        )));
                    }
                    out.push(k.wildcard());
                }
            }
        }
        let priority = if st.needs_priority() {
            if te.priority <= 0 {
                return Err(Fail::invalid(format!(
                    "table {tname} has ternary, range or optional fields: entries need a \
                     priority > 0 (got {})",
                    te.priority
                )));
            }
            priority_from_p4runtime(te.priority)
        } else {
            if te.priority != 0 {
                return Err(Fail::invalid(format!(
                    "table {tname} has no ternary, range or optional field: priority must \
                     be 0 (got {})",
                    te.priority
                )));
            }
            p4jet_runtime::NO_PRIORITY
        };
        Ok((t, MatchKey::with_priority(out, priority)))
    }

    // ---------------------------------------------------------------- actions

    fn action_call(
        &self,
        pa: &p4::Action,
        pick: impl Fn(u32) -> Option<ActionId>,
        whose: &str,
    ) -> Result<ActionCall, Fail> {
        let pact = self
            .p4action(pa.action_id)
            .ok_or_else(|| Fail::not_found(format!("Unknown action id {}", pa.action_id)))?;
        let aname = preamble(&pact.preamble).1;
        let aid = pick(pa.action_id)
            .ok_or_else(|| Fail::invalid(format!("action {aname} is not an action of {whose}")))?;
        let sa = self
            .schema
            .action(aid)
            .ok_or_else(|| Fail::invalid(format!("action {aname} is not in the program")))?;
        let mut args: Vec<Option<Vec<u8>>> = vec![None; sa.params.len()];
        for p in &pa.params {
            let pos = self.join.param(pa.action_id, p.param_id).ok_or_else(|| {
                Fail::invalid(format!(
                    "action {aname}: unknown parameter id {}",
                    p.param_id
                ))
            })?;
            if args[pos].is_some() {
                return Err(Fail::invalid(format!(
                    "action {aname}: parameter id {} given twice",
                    p.param_id
                )));
            }
            let w = sa.params[pos].width;
            args[pos] = Some(to_width(&p.value, w).map_err(|e| {
                Fail::invalid(format!(
                    "action {aname} parameter {}: {e}",
                    sa.params[pos].name
                ))
            })?);
        }
        let mut out = Vec::with_capacity(args.len());
        for (pos, a) in args.into_iter().enumerate() {
            match a {
                Some(a) => out.push(a),
                None => {
                    return Err(Fail::invalid(format!(
                        "action {aname}: parameter {} is missing",
                        sa.params[pos].name
                    )));
                }
            }
        }
        Ok(ActionCall::new(aid, out))
    }

    fn check_scope(&self, pt: &cfg::Table, action_id: u32, default: bool) -> Result<(), Fail> {
        use cfg::action_ref::Scope;
        let Some(r) = pt.action_refs.iter().find(|r| r.id == action_id) else {
            return Ok(()); // the join says whether it is the table's
        };
        let name = preamble(&pt.preamble).1;
        if default && r.scope == Scope::TableOnly as i32 {
            return Err(Fail::invalid(format!(
                "table {name}: this action is @tableonly, it cannot be the default action"
            )));
        }
        if !default && r.scope == Scope::DefaultOnly as i32 {
            return Err(Fail::invalid(format!(
                "table {name}: this action is @defaultonly, it cannot be in an entry"
            )));
        }
        Ok(())
    }

    /// What a P4Runtime table action does, for table `t`.
    #[allow(deprecated)] // `watch`: P4Runtime < 1.4 clients
    pub fn entry_action(
        &self,
        t: TableId,
        pt: &cfg::Table,
        ta: Option<&p4::TableAction>,
        default: bool,
    ) -> Result<EntryAction, Fail> {
        use p4::table_action::Type;
        let st = self
            .schema
            .table(t)
            .ok_or_else(|| Fail::internal_table(t))?;
        let tname = st.name.clone();
        let profile = st.kind.profile();
        let Some(ty) = ta.and_then(|a| a.r#type.as_ref()) else {
            return Err(Fail::invalid(format!(
                "table {tname}: the entry has no action"
            )));
        };
        match ty {
            Type::Action(a) => {
                if profile.is_some() {
                    return Err(Fail::invalid(format!(
                        "table {tname} has an action profile: give a member, a group or an \
                         action set"
                    )));
                }
                self.check_scope(pt, a.action_id, default)?;
                let call = self.action_call(
                    a,
                    |id| self.join.table_action(&self.schema, t, id),
                    &format!("table {tname}"),
                )?;
                Ok(EntryAction::Direct(call))
            }
            Type::ActionProfileMemberId(m) => {
                if profile.is_none() {
                    return Err(Fail::invalid(format!(
                        "table {tname} has no action profile: give an action"
                    )));
                }
                Ok(EntryAction::Member(MemberId(*m)))
            }
            Type::ActionProfileGroupId(g) => {
                let with_selector = profile
                    .and_then(|p| self.schema.profile(p))
                    .is_some_and(|p| p.with_selector);
                if !with_selector {
                    return Err(Fail::invalid(format!(
                        "table {tname} has no action selector: groups are not allowed"
                    )));
                }
                Ok(EntryAction::Group(GroupId(*g)))
            }
            Type::ActionProfileActionSet(set) => {
                let Some(p) =
                    profile.filter(|p| self.schema.profile(*p).is_some_and(|p| p.with_selector))
                else {
                    return Err(Fail::invalid(format!(
                        "table {tname} has no action selector: one-shot action sets are not \
                         allowed"
                    )));
                };
                if set.action_profile_actions.is_empty() {
                    return Err(Fail::invalid(format!(
                        "table {tname}: an empty one-shot action set"
                    )));
                }
                let mut v = vec![];
                for apa in &set.action_profile_actions {
                    let a = apa.action.as_ref().ok_or_else(|| {
                        Fail::invalid(format!("table {tname}: an action set member has no action"))
                    })?;
                    if apa.weight <= 0 {
                        return Err(Fail::invalid(format!(
                            "table {tname}: action set weights must be > 0 (got {})",
                            apa.weight
                        )));
                    }
                    let call = self.action_call(
                        a,
                        |id| self.join.profile_action(&self.schema, p, id),
                        &format!("the action selector of table {tname}"),
                    )?;
                    v.push(WeightedAction {
                        action: call,
                        weight: apa.weight as u32,
                        watch_port: watch_port(apa.watch_kind.as_ref().map(|w| match w {
                            p4::action_profile_action::WatchKind::Watch(x) => WatchRef::Int(*x),
                            p4::action_profile_action::WatchKind::WatchPort(b) => {
                                WatchRef::Bytes(b)
                            }
                        }))?,
                    });
                }
                Ok(EntryAction::OneShot(v))
            }
        }
    }

    // ---------------------------------------------------------------- writes

    /// The model updates of one P4Runtime update.
    pub fn updates(&self, u: &p4::Update) -> Result<Vec<Update>, Fail> {
        use p4::entity::Entity as E;
        let ty = UpdateType::try_from(u.r#type).unwrap_or(UpdateType::Unspecified);
        if ty == UpdateType::Unspecified {
            return Err(Fail::invalid("update type UNSPECIFIED"));
        }
        let Some(ent) = u.entity.as_ref().and_then(|e| e.entity.as_ref()) else {
            return Err(Fail::invalid("update without entity"));
        };
        match ent {
            E::TableEntry(te) => self.table_updates(ty, te),
            E::ActionProfileMember(m) => self.member_updates(ty, m),
            E::ActionProfileGroup(g) => self.group_updates(ty, g),
            E::CounterEntry(c) => self.counter_updates(ty, c),
            E::DirectCounterEntry(c) => {
                modify_only(ty, "direct counter entries")?;
                let te = c
                    .table_entry
                    .as_ref()
                    .ok_or_else(|| Fail::invalid("direct counter entry without table_entry"))?;
                let (t, key) = self.direct_key(te, "counter")?;
                Ok(vec![Update::WriteDirectCounter {
                    table: t,
                    entry: EntryRef::Key(key),
                    value: counter_value(c.data.as_ref()),
                }])
            }
            E::MeterEntry(m) => self.meter_updates(ty, m),
            E::DirectMeterEntry(m) => {
                modify_only(ty, "direct meter entries")?;
                let te = m
                    .table_entry
                    .as_ref()
                    .ok_or_else(|| Fail::invalid("direct meter entry without table_entry"))?;
                let (t, key) = self.direct_key(te, "meter")?;
                Ok(vec![Update::SetDirectMeter {
                    table: t,
                    entry: EntryRef::Key(key),
                    config: meter_config(m.config.as_ref())?,
                }])
            }
            E::RegisterEntry(r) => self.register_updates(ty, r),
            E::ValueSetEntry(v) => self.value_set_updates(ty, v),
            E::DigestEntry(d) => {
                let id = self
                    .join
                    .digest(d.digest_id)
                    .ok_or_else(|| Fail::not_found(format!("Unknown digest id {}", d.digest_id)))?;
                match ty {
                    UpdateType::Insert | UpdateType::Modify => {
                        let c = d.config.unwrap_or_default();
                        if c.max_timeout_ns < 0 || c.ack_timeout_ns < 0 || c.max_list_size < 0 {
                            return Err(Fail::invalid("digest config values must not be negative"));
                        }
                        Ok(vec![Update::ConfigureDigest {
                            digest: id,
                            config: DigestConfig {
                                max_timeout_ns: c.max_timeout_ns as u64,
                                max_list_size: (c.max_list_size as u32).max(1),
                                ack_timeout_ns: c.ack_timeout_ns as u64,
                            },
                        }])
                    }
                    // the device forgets the configuration (no more lists sent)
                    _ => Ok(vec![]),
                }
            }
            E::PacketReplicationEngineEntry(pre) => self.pre_updates(ty, pre),
            E::ExternEntry(_) => Err(Fail::unimplemented(
                "extern entries: v1model has no architecture-specific extern for P4Runtime",
            )),
        }
    }

    fn direct_key(&self, te: &p4::TableEntry, what: &str) -> Result<(TableId, MatchKey), Fail> {
        if te.is_default_action {
            return Err(Fail::unimplemented(format!(
                "the direct {what} of a default entry"
            )));
        }
        let (_, _, st) = self.table(te.table_id)?;
        let has = if what == "counter" {
            st.direct_counter.is_some()
        } else {
            st.direct_meter.is_some()
        };
        if !has {
            return Err(Fail::invalid(format!(
                "table {} has no direct {what}",
                st.name
            )));
        }
        self.key(te)
    }

    fn table_updates(&self, ty: UpdateType, te: &p4::TableEntry) -> Result<Vec<Update>, Fail> {
        let (t, pt, st) = self.table(te.table_id)?;
        let tname = st.name.clone();
        if te.is_default_action {
            if !te.r#match.is_empty() || te.priority != 0 {
                return Err(Fail::invalid(format!(
                    "table {tname}: a default entry has no match fields and no priority"
                )));
            }
            if ty != UpdateType::Modify {
                return Err(Fail::invalid(format!(
                    "table {tname}: the default entry can only be modified (MODIFY)"
                )));
            }
            if pt.const_default_action_id != 0 {
                return Err(Fail {
                    code: code::PERMISSION_DENIED,
                    message: format!("table {tname}: the default action is const"),
                });
            }
            #[allow(deprecated)] // controller_metadata: P4Runtime < 1.2 clients
            if !te.metadata.is_empty() || te.controller_metadata != 0 {
                return Err(Fail::unimplemented(format!(
                    "table {tname}: metadata on the default entry is not kept (only on entries)"
                )));
            }
            if te.action.as_ref().and_then(|a| a.r#type.as_ref()).is_none() {
                return Ok(vec![Update::ResetDefault { table: t }]);
            }
            let action = self.entry_action(t, pt, te.action.as_ref(), true)?;
            return Ok(vec![Update::SetDefault { table: t, action }]);
        }
        if pt.is_const_table {
            return Err(Fail {
                code: code::PERMISSION_DENIED,
                message: format!("table {tname} has const entries: it cannot be written"),
            });
        }
        let (_, key) = self.key(te)?;
        if te.idle_timeout_ns < 0 {
            return Err(Fail::invalid("idle_timeout_ns must not be negative"));
        }
        if te.idle_timeout_ns > 0 && !st.support_timeout {
            return Err(Fail::invalid(format!(
                "table {tname} does not support idle timeouts (idle_timeout_ns must be 0)"
            )));
        }
        if te.counter_data.is_some() && st.direct_counter.is_none() {
            return Err(Fail::invalid(format!(
                "table {tname} has no direct counter"
            )));
        }
        if (te.meter_config.is_some() || te.meter_counter_data.is_some())
            && st.direct_meter.is_none()
        {
            return Err(Fail::invalid(format!("table {tname} has no direct meter")));
        }
        let timeout_ms = ns_to_ms(te.idle_timeout_ns);
        let mut v = vec![];
        match ty {
            UpdateType::Insert => {
                let action = self.entry_action(t, pt, te.action.as_ref(), false)?;
                v.push(Update::AddEntry {
                    table: t,
                    entry: NewEntry {
                        key: key.clone(),
                        action,
                        timeout_ms: st.support_timeout.then_some(timeout_ms),
                    },
                });
                if let Some(c) = &te.counter_data {
                    v.push(Update::WriteDirectCounter {
                        table: t,
                        entry: EntryRef::Key(key.clone()),
                        value: counter_value(Some(c)),
                    });
                }
                if let Some(m) = &te.meter_config {
                    v.push(Update::SetDirectMeter {
                        table: t,
                        entry: EntryRef::Key(key),
                        config: meter_config(Some(m))?,
                    });
                }
            }
            UpdateType::Modify => {
                let action = self.entry_action(t, pt, te.action.as_ref(), false)?;
                v.push(Update::ModifyEntry {
                    table: t,
                    entry: EntryRef::Key(key.clone()),
                    action,
                });
                if st.support_timeout {
                    v.push(Update::SetEntryTimeout {
                        table: t,
                        entry: EntryRef::Key(key.clone()),
                        timeout_ms,
                    });
                }
                if let Some(c) = &te.counter_data {
                    v.push(Update::WriteDirectCounter {
                        table: t,
                        entry: EntryRef::Key(key.clone()),
                        value: counter_value(Some(c)),
                    });
                }
                // an unset meter_config resets the meter (specification)
                if st.direct_meter.is_some() {
                    v.push(Update::SetDirectMeter {
                        table: t,
                        entry: EntryRef::Key(key),
                        config: meter_config(te.meter_config.as_ref())?,
                    });
                }
            }
            _ => v.push(Update::DeleteEntry {
                table: t,
                entry: EntryRef::Key(key),
            }),
        }
        Ok(v)
    }

    fn profile(
        &self,
        id: u32,
    ) -> Result<
        (
            p4jet_runtime::ProfileId,
            &p4jet_runtime::schema::ActionProfile,
        ),
        Fail,
    > {
        let p = self
            .join
            .profile(id)
            .ok_or_else(|| Fail::not_found(format!("Unknown action profile id {id}")))?;
        let sp = self
            .schema
            .profile(p)
            .ok_or_else(|| Fail::not_found(format!("Unknown action profile id {id}")))?;
        Ok((p, sp))
    }

    fn member_updates(
        &self,
        ty: UpdateType,
        m: &p4::ActionProfileMember,
    ) -> Result<Vec<Update>, Fail> {
        let (p, sp) = self.profile(m.action_profile_id)?;
        let member = MemberId(m.member_id);
        let action = |m: &p4::ActionProfileMember| {
            let a = m
                .action
                .as_ref()
                .ok_or_else(|| Fail::invalid(format!("member {} has no action", m.member_id)))?;
            self.action_call(
                a,
                |id| self.join.profile_action(&self.schema, p, id),
                &format!("action profile {}", sp.name),
            )
        };
        Ok(vec![match ty {
            UpdateType::Insert => Update::AddMember {
                profile: p,
                id: Some(member),
                action: action(m)?,
            },
            UpdateType::Modify => Update::ModifyMember {
                profile: p,
                member,
                action: action(m)?,
            },
            _ => Update::DeleteMember { profile: p, member },
        }])
    }

    #[allow(deprecated)] // `watch`: P4Runtime < 1.4 clients
    fn group_updates(
        &self,
        ty: UpdateType,
        g: &p4::ActionProfileGroup,
    ) -> Result<Vec<Update>, Fail> {
        let (p, sp) = self.profile(g.action_profile_id)?;
        if !sp.with_selector {
            return Err(Fail::invalid(format!(
                "action profile {} has no selector: it has no groups",
                sp.name
            )));
        }
        let group = GroupId(g.group_id);
        let members = || -> Result<Vec<GroupMember>, Fail> {
            let mut v: Vec<GroupMember> = vec![];
            for m in &g.members {
                if m.weight <= 0 {
                    return Err(Fail::invalid(format!(
                        "group {}: member {} has weight {} (must be > 0)",
                        g.group_id, m.member_id, m.weight
                    )));
                }
                if v.iter().any(|x| x.member.0 == m.member_id) {
                    return Err(Fail::invalid(format!(
                        "group {}: member {} given twice",
                        g.group_id, m.member_id
                    )));
                }
                v.push(GroupMember {
                    member: MemberId(m.member_id),
                    weight: m.weight as u32,
                    watch_port: watch_port(m.watch_kind.as_ref().map(|w| match w {
                        p4::action_profile_group::member::WatchKind::Watch(x) => WatchRef::Int(*x),
                        p4::action_profile_group::member::WatchKind::WatchPort(b) => {
                            WatchRef::Bytes(b)
                        }
                    }))?,
                });
            }
            Ok(v)
        };
        if g.max_size < 0 {
            return Err(Fail::invalid("max_size must not be negative"));
        }
        Ok(match ty {
            UpdateType::Insert => vec![
                Update::AddGroup {
                    profile: p,
                    id: Some(group),
                    max_size: g.max_size as u32,
                },
                Update::SetGroupMembers {
                    profile: p,
                    group,
                    members: members()?,
                },
            ],
            UpdateType::Modify => vec![Update::SetGroupMembers {
                profile: p,
                group,
                members: members()?,
            }],
            _ => vec![Update::DeleteGroup { profile: p, group }],
        })
    }

    fn counter_updates(&self, ty: UpdateType, c: &p4::CounterEntry) -> Result<Vec<Update>, Fail> {
        modify_only(ty, "counter entries")?;
        let id = self
            .join
            .counter(c.counter_id)
            .ok_or_else(|| Fail::not_found(format!("Unknown counter id {}", c.counter_id)))?;
        let size = self.schema.counter(id).map_or(0, |c| c.size);
        let value = counter_value(c.data.as_ref());
        Ok(match &c.index {
            Some(i) => vec![Update::WriteCounter {
                counter: id,
                index: index(i.index, size)?,
                value,
            }],
            None => (0..size)
                .map(|index| Update::WriteCounter {
                    counter: id,
                    index,
                    value,
                })
                .collect(),
        })
    }

    fn meter_updates(&self, ty: UpdateType, m: &p4::MeterEntry) -> Result<Vec<Update>, Fail> {
        modify_only(ty, "meter entries")?;
        let id = self
            .join
            .meter(m.meter_id)
            .ok_or_else(|| Fail::not_found(format!("Unknown meter id {}", m.meter_id)))?;
        let size = self.schema.meter(id).map_or(0, |c| c.size);
        let index = m.index.as_ref().map(|i| index(i.index, size)).transpose()?;
        Ok(vec![Update::SetMeter {
            meter: id,
            index,
            config: meter_config(m.config.as_ref())?,
        }])
    }

    fn register_updates(&self, ty: UpdateType, r: &p4::RegisterEntry) -> Result<Vec<Update>, Fail> {
        modify_only(ty, "register entries")?;
        let id = self
            .join
            .register(r.register_id)
            .ok_or_else(|| Fail::not_found(format!("Unknown register id {}", r.register_id)))?;
        let reg = self
            .schema
            .register(id)
            .ok_or_else(|| Fail::not_found(format!("Unknown register id {}", r.register_id)))?;
        let data = r
            .data
            .as_ref()
            .and_then(|d| d.data.as_ref())
            .ok_or_else(|| Fail::invalid(format!("register {}: no data", reg.name)))?;
        let p4::p4_data::Data::Bitstring(b) = data else {
            return Err(Fail::invalid(format!(
                "register {}: the value must be a bitstring (bit<{}>)",
                reg.name, reg.width
            )));
        };
        let value = to_width(b, reg.width)
            .map_err(|e| Fail::invalid(format!("register {}: {e}", reg.name)))?;
        let (start, end) = match &r.index {
            Some(i) => {
                let s = index(i.index, reg.size)?;
                (s, s + 1)
            }
            None => (0, reg.size),
        };
        Ok(vec![Update::WriteRegister {
            register: id,
            start,
            end,
            value,
        }])
    }

    fn value_set_updates(
        &self,
        ty: UpdateType,
        v: &p4::ValueSetEntry,
    ) -> Result<Vec<Update>, Fail> {
        modify_only(ty, "value set entries")?;
        let id = self
            .join
            .value_set(v.value_set_id)
            .ok_or_else(|| Fail::not_found(format!("Unknown value set id {}", v.value_set_id)))?;
        let pvs = self
            .p4info
            .value_sets
            .iter()
            .find(|s| s.preamble.as_ref().is_some_and(|p| p.id == v.value_set_id))
            .ok_or_else(|| Fail::not_found(format!("Unknown value set id {}", v.value_set_id)))?;
        let sv = self
            .schema
            .value_set(id)
            .ok_or_else(|| Fail::not_found(format!("Unknown value set id {}", v.value_set_id)))?;
        if pvs.size > 0 && v.members.len() > pvs.size as usize {
            return Err(Fail {
                code: code::RESOURCE_EXHAUSTED,
                message: format!(
                    "value set {}: {} members, it holds {}",
                    sv.name,
                    v.members.len(),
                    pvs.size
                ),
            });
        }
        let mut ups = vec![Update::ClearValueSet { value_set: id }];
        for m in &v.members {
            let mut bits = BitPack::default();
            for f in &pvs.r#match {
                let fm = m
                    .r#match
                    .iter()
                    .find(|x| x.field_id == f.id)
                    .ok_or_else(|| {
                        Fail::invalid(format!("value set {}: field {} is missing", sv.name, f.id))
                    })?;
                let value = match &fm.field_match_type {
                    Some(p4::field_match::FieldMatchType::Exact(e)) => &e.value,
                    _ => {
                        return Err(Fail::unimplemented(format!(
                            "value set {}: only exact matches (bmv2 value sets hold values)",
                            sv.name
                        )));
                    }
                };
                let w = f.bitwidth.max(0) as u32;
                let b = to_width(value, w)
                    .map_err(|e| Fail::invalid(format!("value set {}: {e}", sv.name)))?;
                bits.push(&b, w);
            }
            if m.r#match.len() != pvs.r#match.len() {
                return Err(Fail::invalid(format!(
                    "value set {}: {} matches, the set has {} fields",
                    sv.name,
                    m.r#match.len(),
                    pvs.r#match.len()
                )));
            }
            let value = bits.finish_right_aligned(sv.width);
            ups.push(Update::AddValueSetMember {
                value_set: id,
                value,
            });
        }
        Ok(ups)
    }

    fn pre_updates(
        &self,
        ty: UpdateType,
        pre: &p4::PacketReplicationEngineEntry,
    ) -> Result<Vec<Update>, Fail> {
        use p4::packet_replication_engine_entry::Type as T;
        let mode = match ty {
            UpdateType::Insert => WriteMode::Insert,
            _ => WriteMode::Modify,
        };
        match pre.r#type.as_ref() {
            Some(T::MulticastGroupEntry(g)) => {
                if g.multicast_group_id == 0 {
                    return Err(Fail::invalid("multicast group id 0 is not a group"));
                }
                if ty == UpdateType::Delete {
                    return Ok(vec![Update::DeleteMulticastGroup {
                        group: g.multicast_group_id,
                    }]);
                }
                let replicas = replicas(&g.replicas)?;
                let mut seen = replicas.clone();
                seen.sort();
                if seen.windows(2).any(|w| w[0] == w[1]) {
                    return Err(Fail::invalid(format!(
                        "multicast group {}: a (port, instance) pair is given twice",
                        g.multicast_group_id
                    )));
                }
                Ok(vec![Update::WriteMulticastGroup {
                    mode,
                    group: g.multicast_group_id,
                    replicas,
                }])
            }
            Some(T::CloneSessionEntry(c)) => {
                if ty == UpdateType::Delete {
                    return Ok(vec![Update::DeleteCloneSession { id: c.session_id }]);
                }
                if c.packet_length_bytes < 0 {
                    return Err(Fail::invalid("packet_length_bytes must not be negative"));
                }
                Ok(vec![Update::WriteCloneSession {
                    mode,
                    session: CloneSession {
                        id: c.session_id,
                        target: CloneTarget::Replicas(replicas(&c.replicas)?),
                        class_of_service: c.class_of_service,
                        packet_length_bytes: c.packet_length_bytes as u32,
                    },
                }])
            }
            None => Err(Fail::invalid(
                "packet replication engine entry without multicast group or clone session",
            )),
        }
    }

    /// How an update programs an action selector: with members and groups, or
    /// one-shot (the specification forbids mixing the two on one selector).
    pub fn selector_use(&self, u: &p4::Update) -> Option<(p4jet_runtime::ProfileId, SelectorMode)> {
        use p4::entity::Entity as E;
        use p4::table_action::Type;
        if u.r#type == UpdateType::Delete as i32 {
            return None;
        }
        let sel = |p: p4jet_runtime::ProfileId| {
            self.schema
                .profile(p)
                .is_some_and(|x| x.with_selector)
                .then_some(p)
        };
        match u.entity.as_ref()?.entity.as_ref()? {
            E::ActionProfileMember(m) => Some((
                sel(self.join.profile(m.action_profile_id)?)?,
                SelectorMode::Explicit,
            )),
            E::ActionProfileGroup(g) => Some((
                sel(self.join.profile(g.action_profile_id)?)?,
                SelectorMode::Explicit,
            )),
            E::TableEntry(te) => {
                let t = self.join.table(te.table_id)?;
                let p = sel(self.schema.table(t)?.kind.profile()?)?;
                match te.action.as_ref()?.r#type.as_ref()? {
                    Type::ActionProfileActionSet(_) => Some((p, SelectorMode::OneShot)),
                    Type::ActionProfileMemberId(_) | Type::ActionProfileGroupId(_) => {
                        Some((p, SelectorMode::Explicit))
                    }
                    Type::Action(_) => None,
                }
            }
            _ => None,
        }
    }

    // ---------------------------------------------------------------- reads

    /// A model entry as a P4Runtime table entry (`with_counter`: add its direct
    /// counter as given; `idle`: the time since its last hit).
    pub fn entry_to_p4(&self, t: TableId, e: &RtEntry) -> p4::TableEntry {
        let st = self.schema.table(t);
        let table_id = self.join.table_p4info_id(t).unwrap_or(0);
        let pt = self.p4table(table_id);
        let mut matches = vec![];
        if let Some(st) = st {
            for (pos, (k, f)) in st.keys.iter().zip(&e.key.fields).enumerate() {
                let field_id = self.join.key_field_id(t, pos).unwrap_or(pos as u32 + 1);
                let p4kind = pt
                    .and_then(|pt| pt.match_fields.iter().find(|m| m.id == field_id))
                    .map(match_type);
                if let Some(fmt) = field_to_p4(k, f, p4kind) {
                    matches.push(p4::FieldMatch {
                        field_id,
                        field_match_type: Some(fmt),
                    });
                }
            }
        }
        let priority = if st.is_some_and(|s| s.needs_priority()) {
            priority_to_p4runtime(e.key.priority)
        } else {
            0
        };
        p4::TableEntry {
            table_id,
            r#match: matches,
            action: Some(self.action_to_p4(&e.action)),
            priority,
            idle_timeout_ns: e
                .ttl
                .map_or(0, |t| (t.timeout_ms as i64).saturating_mul(1_000_000)),
            is_const: e.is_const,
            ..Default::default()
        }
    }

    /// A model action as a P4Runtime table action.
    pub fn action_to_p4(&self, a: &EntryAction) -> p4::TableAction {
        use p4::table_action::Type;
        p4::TableAction {
            r#type: Some(match a {
                EntryAction::Direct(c) => Type::Action(self.call_to_p4(c)),
                EntryAction::Member(m) => Type::ActionProfileMemberId(m.0),
                EntryAction::Group(g) => Type::ActionProfileGroupId(g.0),
                EntryAction::OneShot(v) => {
                    Type::ActionProfileActionSet(p4::ActionProfileActionSet {
                        action_profile_actions: v
                            .iter()
                            .map(|w| p4::ActionProfileAction {
                                action: Some(self.call_to_p4(&w.action)),
                                weight: w.weight as i32,
                                watch_kind: w.watch_port.map(|p| {
                                    p4::action_profile_action::WatchKind::WatchPort(
                                        bytestring::from_u128(u128::from(p)),
                                    )
                                }),
                            })
                            .collect(),
                        ..Default::default()
                    })
                }
            }),
        }
    }

    /// A model action call as a P4Runtime action.
    pub fn call_to_p4(&self, c: &ActionCall) -> p4::Action {
        let action_id = self.join.action_p4info_id(c.action).unwrap_or(0);
        p4::Action {
            action_id,
            params: c
                .args
                .iter()
                .enumerate()
                .map(|(pos, v)| p4::action::Param {
                    param_id: self.join.param_id(action_id, pos).unwrap_or(pos as u32 + 1),
                    value: canonical(v),
                })
                .collect(),
        }
    }

    /// The P4Runtime name of a table (for messages).
    pub fn name_of_table(&self, t: TableId) -> String {
        self.table_name(t)
    }
}

impl Fail {
    fn internal_table(t: TableId) -> Fail {
        Fail {
            code: code::INTERNAL,
            message: format!("{t} is not in the schema"),
        }
    }
}

/// A key field match as P4Runtime writes it; None for a wildcard (left out).
fn field_to_p4(
    k: &KeyField,
    f: &FieldMatch,
    p4kind: Option<i32>,
) -> Option<p4::field_match::FieldMatchType> {
    use p4::field_match::{Exact, FieldMatchType as F, Lpm, Optional, Range, Ternary};
    let optional = p4kind == Some(cfg::match_field::MatchType::Optional as i32);
    match f {
        FieldMatch::Exact(v) => Some(F::Exact(Exact {
            value: canonical(v),
        })),
        FieldMatch::Valid(b) => Some(F::Exact(Exact {
            value: vec![u8::from(*b)],
        })),
        FieldMatch::Lpm { value, prefix_len } => (*prefix_len > 0).then(|| {
            F::Lpm(Lpm {
                value: canonical(value),
                prefix_len: *prefix_len as i32,
            })
        }),
        FieldMatch::Ternary { value, mask } => {
            if mask.iter().all(|b| *b == 0) {
                None
            } else if optional {
                Some(F::Optional(Optional {
                    value: canonical(value),
                }))
            } else {
                Some(F::Ternary(Ternary {
                    value: canonical(value),
                    mask: canonical(mask),
                }))
            }
        }
        FieldMatch::Range { low, high } => {
            let full_low = low.iter().all(|b| *b == 0);
            let full_high = *high == p4jet_runtime::schema::ones(k.width);
            (!(full_low && full_high)).then(|| {
                F::Range(Range {
                    low: canonical(low),
                    high: canonical(high),
                })
            })
        }
    }
}

/// The match kind of a P4Info match field (0 for an architecture-specific kind).
fn match_type(m: &cfg::MatchField) -> i32 {
    match &m.r#match {
        Some(cfg::match_field::Match::MatchType(t)) => *t,
        _ => 0,
    }
}

/// One P4Runtime field match as a model field match, checked as the specification
/// asks.
fn field_match(
    tname: &str,
    mf: &cfg::MatchField,
    k: &KeyField,
    fm: &p4::FieldMatch,
) -> Result<FieldMatch, Fail> {
    use cfg::match_field::MatchType as MT;
    use p4::field_match::FieldMatchType as F;
    let w = k.width;
    let name = &mf.name;
    let bad = |e: String| Fail::invalid(format!("table {tname} field {name}: {e}"));
    let width = |v: &[u8]| to_width(v, w).map_err(bad);
    let kind = MT::try_from(match_type(mf)).unwrap_or(MT::Unspecified);
    let Some(f) = fm.field_match_type.as_ref() else {
        return Err(bad("no match value".into()));
    };
    match (kind, f) {
        (MT::Exact, F::Exact(e)) => Ok(FieldMatch::Exact(width(&e.value)?)),
        (MT::Lpm, F::Lpm(l)) => {
            if l.prefix_len <= 0 {
                return Err(bad(format!(
                    "prefix length {} (a don't-care LPM field must be left out)",
                    l.prefix_len
                )));
            }
            if l.prefix_len as u32 > w {
                return Err(bad(format!(
                    "prefix length {} is longer than the field ({w} bits)",
                    l.prefix_len
                )));
            }
            let v = width(&l.value)?;
            let masked = mask_prefix(&v, w, l.prefix_len as u32);
            if masked != v {
                return Err(bad(
                    "bits past the prefix length must be 0 (the value is not masked)".into(),
                ));
            }
            Ok(FieldMatch::Lpm {
                value: v,
                prefix_len: l.prefix_len as u32,
            })
        }
        (MT::Ternary, F::Ternary(t)) => {
            let v = width(&t.value)?;
            let m = width(&t.mask)?;
            if m.iter().all(|b| *b == 0) {
                return Err(bad(
                    "mask is 0 (a don't-care ternary field must be left out)".into(),
                ));
            }
            if v.iter().zip(&m).any(|(a, b)| a & !b != 0) {
                return Err(bad("value has bits set outside the mask".into()));
            }
            Ok(FieldMatch::Ternary { value: v, mask: m })
        }
        (MT::Range, F::Range(r)) => {
            let lo = width(&r.low)?;
            let hi = width(&r.high)?;
            if lo > hi {
                return Err(bad("low is greater than high".into()));
            }
            if lo.iter().all(|b| *b == 0) && hi == p4jet_runtime::schema::ones(w) {
                return Err(bad(
                    "the range covers every value (a don't-care range field must be left out)"
                        .into(),
                ));
            }
            Ok(FieldMatch::Range { low: lo, high: hi })
        }
        (MT::Optional, F::Optional(o)) => Ok(k.optional(Some(width(&o.value)?))),
        (kind, f) => Err(bad(format!(
            "the field is {}, the match is {}",
            kind.as_str_name(),
            match f {
                F::Exact(_) => "exact",
                F::Ternary(_) => "ternary",
                F::Lpm(_) => "lpm",
                F::Range(_) => "range",
                F::Optional(_) => "optional",
                F::Other(_) => "other",
            }
        ))),
    }
}

/// `v` (of `w` bits, padded to bytes) with the bits past the first `plen` cleared.
fn mask_prefix(v: &[u8], w: u32, plen: u32) -> Vec<u8> {
    let pad = v.len() as u32 * 8 - w;
    let keep = pad + plen;
    v.iter()
        .enumerate()
        .map(|(i, b)| {
            let start = i as u32 * 8;
            if start + 8 <= keep {
                *b
            } else if start >= keep {
                0
            } else {
                b & !(0xffu8 >> (keep - start))
            }
        })
        .collect()
}

fn modify_only(ty: UpdateType, what: &str) -> Result<(), Fail> {
    if ty != UpdateType::Modify {
        return Err(Fail::invalid(format!(
            "{what} can only be modified (MODIFY), not {}",
            ty.as_str_name()
        )));
    }
    Ok(())
}

fn index(i: i64, size: u32) -> Result<u32, Fail> {
    if i < 0 || i >= i64::from(size) {
        return Err(Fail::out_of_range(format!(
            "index {i} is out of range (size {size})"
        )));
    }
    Ok(i as u32)
}

fn ns_to_ms(ns: i64) -> u64 {
    (ns.max(0) as u64).div_ceil(1_000_000)
}

/// A counter value from P4Runtime's (negative counts are taken as 0).
pub fn counter_value(d: Option<&p4::CounterData>) -> CounterValue {
    let d = d.cloned().unwrap_or_default();
    CounterValue {
        bytes: d.byte_count.max(0) as u64,
        packets: d.packet_count.max(0) as u64,
    }
}

/// A counter value as P4Runtime's.
pub fn counter_to_p4(c: &CounterValue) -> p4::CounterData {
    p4::CounterData {
        byte_count: c.bytes.min(i64::MAX as u64) as i64,
        packet_count: c.packets.min(i64::MAX as u64) as i64,
    }
}

/// A meter configuration from P4Runtime's (unset: unconfigured, every packet green).
pub fn meter_config(c: Option<&p4::MeterConfig>) -> Result<MeterConfig, Fail> {
    let Some(c) = c else {
        return Ok(MeterConfig::default());
    };
    if c.cir < 0 || c.cburst < 0 || c.pir < 0 || c.pburst < 0 {
        return Err(Fail::invalid("meter rates and bursts must not be negative"));
    }
    if c.eburst != 0 {
        return Err(Fail::unimplemented(
            "eburst: v1model meters are two-rate three-colour meters (RFC 2698)",
        ));
    }
    if c.pir < c.cir {
        return Err(Fail::invalid(format!(
            "meter: the peak rate ({}) must not be lower than the committed rate ({})",
            c.pir, c.cir
        )));
    }
    Ok(MeterConfig::tr_tcm(
        c.cir as u64,
        c.cburst as u64,
        c.pir as u64,
        c.pburst as u64,
    ))
}

/// A meter configuration as P4Runtime's (None when not configured).
pub fn meter_to_p4(c: &MeterConfig) -> Option<p4::MeterConfig> {
    let (cir, cburst, pir, pburst) = c.as_tr_tcm()?;
    let i = |v: u64| v.min(i64::MAX as u64) as i64;
    Some(p4::MeterConfig {
        cir: i(cir),
        cburst: i(cburst),
        pir: i(pir),
        pburst: i(pburst),
        eburst: 0,
    })
}

enum WatchRef<'a> {
    Int(i32),
    Bytes(&'a [u8]),
}

fn watch_port(w: Option<WatchRef<'_>>) -> Result<Option<u32>, Fail> {
    match w {
        None => Ok(None),
        Some(WatchRef::Int(i)) => Ok(Some(i.max(0) as u32)),
        Some(WatchRef::Bytes(b)) => port_of(b).map(Some),
    }
}

fn port_of(b: &[u8]) -> Result<u32, Fail> {
    bytestring::to_u128(b)
        .and_then(|v| u32::try_from(v).ok())
        .filter(|_| !b.is_empty())
        .ok_or_else(|| Fail::invalid(format!("bad port 0x{}", bytestring::hex(b))))
}

/// P4Runtime replicas as the model's.
fn replicas(r: &[p4::Replica]) -> Result<Vec<Replica>, Fail> {
    r.iter()
        .map(|r| {
            #[allow(deprecated)] // egress_port: P4Runtime < 1.4 clients
            let port = match &r.port_kind {
                Some(p4::replica::PortKind::Port(b)) => port_of(b)?,
                Some(p4::replica::PortKind::EgressPort(p)) => *p,
                None => return Err(Fail::invalid("a replica without port")),
            };
            if !r.backup_replicas.is_empty() {
                return Err(Fail::unimplemented(
                    "backup replicas (p4jet has no port-down events)",
                ));
            }
            Ok(Replica {
                port,
                instance: r.instance,
            })
        })
        .collect()
}

/// Model replicas as P4Runtime's.
pub fn replicas_to_p4(r: &[Replica]) -> Vec<p4::Replica> {
    r.iter()
        .map(|r| p4::Replica {
            port_kind: Some(p4::replica::PortKind::Port(bytestring::from_u128(
                u128::from(r.port),
            ))),
            instance: r.instance,
            backup_replicas: vec![],
        })
        .collect()
}

/// Bit fields packed MSB first.
#[derive(Default)]
struct BitPack {
    bits: Vec<bool>,
}

impl BitPack {
    fn push(&mut self, value: &[u8], width: u32) {
        let total = value.len() * 8;
        for i in 0..width as usize {
            let src = total - width as usize + i;
            self.bits.push((value[src / 8] >> (7 - src % 8)) & 1 == 1);
        }
    }

    /// The bits as a value of `width` bits (right-aligned in `ceil(width / 8)` bytes).
    fn finish_right_aligned(&self, width: u32) -> Vec<u8> {
        let n = bytestring::width_bytes(width);
        let mut out = vec![0u8; n];
        let pad = n * 8 - self.bits.len().min(n * 8);
        for (i, b) in self.bits.iter().enumerate().take(n * 8) {
            if *b {
                let dst = pad + i;
                out[dst / 8] |= 1 << (7 - dst % 8);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_masking() {
        assert_eq!(mask_prefix(&[10, 1, 2, 3], 32, 8), vec![10, 0, 0, 0]);
        assert_eq!(mask_prefix(&[10, 0xff, 0, 0], 32, 12), vec![10, 0xf0, 0, 0]);
        assert_eq!(mask_prefix(&[0x01, 0xff], 9, 1), vec![0x01, 0x00]);
        assert_eq!(mask_prefix(&[0x01, 0xff], 9, 9), vec![0x01, 0xff]);
    }
}
