//! Table entries, default entries, idle timeouts, direct counters and meters.

use p4jet_engine::Op;
use p4jet_engine::state::{
    EntryAction as EngineAction, EntryLoc, EntryValue, OneShot, handle_index,
};
use p4jet_ir::{KeySource, MatchKind, Program, TableInfo, TableKind};
use p4jet_runtime::bmv2::TableOperationErrorCode as TC;
use p4jet_runtime::{
    Applied, CounterValue, EntryAction, EntryCursor, EntryHandle, EntryPage, EntryRef, EntryTtl,
    FieldMatch, IdleTimeout, MatchKey, MeterConfig, NO_PRIORITY, NewEntry, RuntimeError,
    TableEntry, TableId, Update,
};
use p4jet_tables as tables;

use super::externs::Later;
use super::{BatchCtx, Done, Prepared, engine_call, model_action};
use crate::Switch;

/// Ternary, range and optional tables store priorities (bmv2's `TernaryMatchKey`).
pub(crate) fn is_masked_table(ti: &TableInfo) -> bool {
    ti.keys.iter().any(|k| {
        matches!(
            k.kind,
            MatchKind::Ternary | MatchKind::Range | MatchKind::Optional
        )
    })
}

/// The tables crate's key for a model key: kinds must be the table's
/// (`BAD_MATCH_KEY` otherwise); byte lengths, prefix lengths and range bounds are
/// checked by the tables crate, which also clears the bits above the field width. The
/// static key mask (`f & CONST` keys) is applied to the value, as bmv2 does.
pub(crate) fn build_match_key(
    what: &str,
    ti: &TableInfo,
    key: MatchKey,
) -> Result<tables::MatchKey, RuntimeError> {
    let bad =
        |m: String| RuntimeError::invalid(format!("{what}: {m}")).with_bmv2(TC::BAD_MATCH_KEY);
    if key.fields.len() != ti.keys.len() {
        return Err(bad(format!(
            "the key has {} fields, the table {}",
            key.fields.len(),
            ti.keys.len()
        )));
    }
    let masked = is_masked_table(ti);
    let mut fields = Vec::with_capacity(key.fields.len());
    for (i, (k, f)) in ti.keys.iter().zip(key.fields).enumerate() {
        let is_valid_field = matches!(k.source, KeySource::Valid(_));
        let mut fm = match (k.kind, f) {
            (MatchKind::Valid, FieldMatch::Valid(b)) => tables::FieldMatch::Valid(b),
            (MatchKind::Valid, FieldMatch::Exact(v)) => {
                tables::FieldMatch::Valid(v.iter().any(|b| *b != 0))
            }
            (MatchKind::Exact, FieldMatch::Exact(v)) => tables::FieldMatch::Exact(v),
            // `$valid$` keys are exact matches on a 1-bit field; the VALID form too
            (MatchKind::Exact, FieldMatch::Valid(b)) if is_valid_field => {
                tables::FieldMatch::Exact(vec![u8::from(b)])
            }
            (MatchKind::Lpm, FieldMatch::Lpm { value, prefix_len }) => {
                tables::FieldMatch::Lpm { value, prefix_len }
            }
            (MatchKind::Ternary | MatchKind::Optional, FieldMatch::Ternary { value, mask }) => {
                tables::FieldMatch::Ternary { value, mask }
            }
            // an optional field given its value alone
            (MatchKind::Optional, FieldMatch::Exact(value)) => tables::FieldMatch::Ternary {
                value,
                mask: p4jet_runtime::schema::ones(k.width),
            },
            (MatchKind::Range, FieldMatch::Range { low, high }) => {
                tables::FieldMatch::Range { low, high }
            }
            (kind, f) => {
                return Err(bad(format!(
                    "field {i} ({}) is a {kind:?} match, not {}",
                    k.name,
                    field_kind_name(&f)
                )));
            }
        };
        if let Some(m) = &k.mask {
            let nb = k.width.div_ceil(8) as usize;
            let mask = p4jet_runtime::schema::fit(&m.to_bytes_be(), k.width);
            let apply = |v: &mut Vec<u8>| {
                if v.len() == nb {
                    for (a, b) in v.iter_mut().zip(&mask) {
                        *a &= b;
                    }
                }
            };
            match &mut fm {
                tables::FieldMatch::Exact(v) => apply(v),
                tables::FieldMatch::Lpm { value, .. } => apply(value),
                tables::FieldMatch::Ternary { value, .. } => apply(value),
                // bmv2 masks the stored key bytes, which hold the range's start
                tables::FieldMatch::Range { low, .. } => apply(low),
                tables::FieldMatch::Valid(_) => {}
            }
        }
        fields.push(fm);
    }
    Ok(tables::MatchKey {
        fields,
        priority: if masked { key.priority } else { -1 },
    })
}

fn field_kind_name(f: &FieldMatch) -> &'static str {
    match f {
        FieldMatch::Exact(_) => "exact",
        FieldMatch::Lpm { .. } => "lpm",
        FieldMatch::Ternary { .. } => "ternary",
        FieldMatch::Range { .. } => "range",
        FieldMatch::Valid(_) => "valid",
    }
}

/// The model's view of a stored key.
pub(crate) fn model_key(ti: &TableInfo, key: &tables::MatchKey) -> MatchKey {
    let fields = key
        .fields
        .iter()
        .map(|f| match f {
            tables::FieldMatch::Exact(v) => FieldMatch::Exact(v.clone()),
            tables::FieldMatch::Valid(b) => FieldMatch::Valid(*b),
            tables::FieldMatch::Lpm { value, prefix_len } => FieldMatch::Lpm {
                value: value.clone(),
                prefix_len: *prefix_len,
            },
            tables::FieldMatch::Ternary { value, mask } => FieldMatch::Ternary {
                value: value.clone(),
                mask: mask.clone(),
            },
            tables::FieldMatch::Range { low, high } => FieldMatch::Range {
                low: low.clone(),
                high: high.clone(),
            },
        })
        .collect();
    MatchKey {
        fields,
        priority: if is_masked_table(ti) {
            key.priority
        } else {
            NO_PRIORITY
        },
    }
}

fn wrong_type(what: &str, m: &str) -> RuntimeError {
    RuntimeError::invalid(format!("{what}: {m}")).with_bmv2(TC::WRONG_TABLE_TYPE)
}

impl Switch {
    /// The table and its IR description.
    fn ti(&self, t: TableId) -> Result<(u32, &TableInfo), RuntimeError> {
        let t = self.table_index(t)?;
        Ok((t, &self.engine.prog.tables[t as usize]))
    }

    /// Where the control state finds `entry`: a handle exactly (`exact`) or its slot
    /// (bmv2's direct counters, meters and ageing ignore the handle's version), or a
    /// key.
    fn entry_loc(
        &self,
        what: &str,
        ti: &TableInfo,
        entry: EntryRef,
        exact: bool,
    ) -> Result<EntryLoc, RuntimeError> {
        Ok(match entry {
            EntryRef::Handle(h) if exact => EntryLoc::Handle(h.0),
            EntryRef::Handle(h) => EntryLoc::Slot(h.0),
            EntryRef::Key(k) => EntryLoc::Key(p4jet_engine::state::fix_valid_keys(
                &ti.keys,
                build_match_key(what, ti, k)?,
            )),
        })
    }

    /// The engine's form of what an entry (`entry`) or a default does on `ti`,
    /// checked against the table's kind and actions.
    fn engine_action(
        &self,
        prog: &Program,
        what: &str,
        ti: &TableInfo,
        a: EntryAction,
        entry: bool,
    ) -> Result<EngineAction, RuntimeError> {
        match a {
            EntryAction::Direct(call) => {
                if ti.kind != TableKind::Simple {
                    return Err(wrong_type(
                        what,
                        "an indirect table takes members or groups",
                    ));
                }
                if !ti.actions.contains(&call.action.0) {
                    return Err(RuntimeError::invalid(format!(
                        "{what}: {} is not one of its actions",
                        prog.actions
                            .get(call.action.0 as usize)
                            .map_or_else(|| call.action.to_string(), |a| a.name.clone())
                    ))
                    .with_bmv2(TC::INVALID_ACTION_NAME));
                }
                if entry && ti.const_entries.is_some() {
                    return Err(immutable(what));
                }
                Ok(EngineAction::Direct(engine_call(
                    prog,
                    what,
                    &ti.actions,
                    call,
                )?))
            }
            EntryAction::Member(m) => {
                if ti.kind == TableKind::Simple {
                    return Err(wrong_type(what, "a direct table takes actions"));
                }
                Ok(EngineAction::Member(m.0))
            }
            EntryAction::Group(g) => {
                if ti.kind != TableKind::IndirectWs {
                    return Err(wrong_type(what, "only tables with a selector take groups"));
                }
                Ok(EngineAction::Group(g.0))
            }
            EntryAction::OneShot(actions) => {
                if ti.kind != TableKind::IndirectWs {
                    return Err(wrong_type(
                        what,
                        "only tables with a selector take one-shot action sets",
                    ));
                }
                if actions.is_empty() {
                    return Err(RuntimeError::invalid(format!(
                        "{what}: an empty one-shot action set"
                    ))
                    .with_bmv2(TC::EMPTY_GRP));
                }
                let mut out = Vec::with_capacity(actions.len());
                for wa in actions {
                    if wa.weight == 0 {
                        return Err(RuntimeError::invalid(format!(
                            "{what}: a one-shot action of weight 0"
                        )));
                    }
                    let call = engine_call(prog, what, &ti.actions, wa.action)?;
                    out.push((call, wa.weight, wa.watch_port));
                }
                Ok(EngineAction::OneShot(Box::new(OneShot::new(out))))
            }
        }
    }

    /// bmv2's check of an indirect entry's member or group on the published state,
    /// before the key is looked at (single updates: the state is then exactly what
    /// the update will see).
    fn precheck_target(
        &self,
        ti: &TableInfo,
        a: &EngineAction,
        what: &str,
    ) -> Result<(), RuntimeError> {
        let Some(prof) = ti.action_profile else {
            return Ok(());
        };
        let r = self.read_cs(|cs| {
            let ps = cs.profiles.get(prof as usize)?;
            match a {
                EngineAction::Member(m) if !ps.members.contains_key(m) => {
                    Some(p4jet_engine::state::Refusal::NoMember)
                }
                EngineAction::Group(g) => match ps.groups.get(g) {
                    None => Some(p4jet_engine::state::Refusal::NoGroup),
                    Some(ms) if ms.is_empty() => Some(p4jet_engine::state::Refusal::EmptyGroup),
                    Some(_) => None,
                },
                _ => None,
            }
        })?;
        match r {
            Some(r) => Err(super::refusal_error(what, r)),
            None => Ok(()),
        }
    }

    pub(crate) fn prepare_table(
        &mut self,
        ctx: &mut BatchCtx,
        u: Update,
    ) -> Result<Prepared, RuntimeError> {
        let prog = ctx.prog.clone();
        match u {
            Update::AddEntry { table, entry } => {
                let (t, ti) = self.ti(table)?;
                let what = self.table_what(t);
                let NewEntry {
                    key,
                    action,
                    timeout_ms,
                } = entry;
                if !matches!(action, EntryAction::Direct(_)) && ti.const_entries.is_some() {
                    return Err(immutable(&what));
                }
                let action = self.engine_action(&prog, &what, ti, action, true)?;
                if ctx.single {
                    self.precheck_target(ti, &action, &what)?;
                }
                if timeout_ms.is_some_and(|ms| ms > 0) && !ti.support_timeout {
                    return Err(ageing_disabled(&what));
                }
                let key =
                    p4jet_engine::state::fix_valid_keys(&ti.keys, build_match_key(&what, ti, key)?);
                Ok(Prepared::op(
                    Op::AddEntry {
                        table: t,
                        key,
                        value: EntryValue {
                            action,
                            timeout_ms: timeout_ms.unwrap_or(0),
                        },
                    },
                    Done::EntryAdded {
                        table: t,
                        timed: ti.support_timeout,
                    },
                ))
            }
            Update::ModifyEntry {
                table,
                entry,
                action,
            } => {
                let (t, ti) = self.ti(table)?;
                let what = self.table_what(t);
                let action = self.engine_action(&prog, &what, ti, action, true)?;
                let entry = self.entry_loc(&what, ti, entry, true)?;
                Ok(Prepared::op(
                    Op::ModifyEntry {
                        table: t,
                        entry,
                        action,
                    },
                    Done::Applied(Applied::Done),
                ))
            }
            Update::DeleteEntry { table, entry } => {
                let (t, ti) = self.ti(table)?;
                let what = self.table_what(t);
                if ti.const_entries.is_some() {
                    return Err(immutable(&what));
                }
                let entry = self.entry_loc(&what, ti, entry, true)?;
                Ok(Prepared::op(
                    Op::DeleteEntry { table: t, entry },
                    Done::EntryDeleted { table: t },
                ))
            }
            Update::ClearEntries {
                table,
                reset_default,
            } => {
                let (t, ti) = self.ti(table)?;
                // bmv2 clears any table, const entries included, and resets handle
                // numbering
                let mut ops = vec![Op::ClearEntries(t)];
                if reset_default {
                    ops.push(Op::SetDefault {
                        table: t,
                        action: program_default(ti),
                    });
                }
                Ok(Prepared::ops(ops, Done::TableCleared { table: t }))
            }
            Update::SetDefault { table, action } => {
                let (t, ti) = self.ti(table)?;
                let what = self.table_what(t);
                let direct = match &action {
                    EntryAction::Direct(c) => Some(c.action.0),
                    _ => None,
                };
                // bmv2's order: the table's kind, the action, then const-ness, then data
                if let Some(a) = direct {
                    if ti.kind != TableKind::Simple {
                        return Err(wrong_type(
                            &what,
                            "an indirect table takes members or groups",
                        ));
                    }
                    if !ti.actions.contains(&a) {
                        return Err(RuntimeError::invalid(format!(
                            "{what}: action {a} is not one of its actions"
                        ))
                        .with_bmv2(TC::INVALID_ACTION_NAME));
                    }
                } else if ti.kind == TableKind::Simple {
                    return Err(wrong_type(&what, "a direct table takes actions"));
                }
                if ti.default_entry_const {
                    return Err(RuntimeError::denied(format!(
                        "{what}: the default entry is const"
                    ))
                    .with_bmv2(TC::DEFAULT_ENTRY_IS_CONST));
                }
                if let Some(a) = direct
                    && ti.default_action_const
                    && let Some(d) = &ti.default_entry
                    && d.action != a
                {
                    return Err(RuntimeError::denied(format!(
                        "{what}: the default action is const"
                    ))
                    .with_bmv2(TC::DEFAULT_ACTION_IS_CONST));
                }
                let action = self.engine_action(&prog, &what, ti, action, false)?;
                Ok(Prepared::op(
                    Op::SetDefault {
                        table: t,
                        action: Some(action),
                    },
                    Done::Applied(Applied::Done),
                ))
            }
            Update::ResetDefault { table } => {
                let (t, ti) = self.ti(table)?;
                Ok(Prepared::op(
                    Op::SetDefault {
                        table: t,
                        action: program_default(ti),
                    },
                    Done::Applied(Applied::Done),
                ))
            }
            Update::SetEntryTimeout {
                table,
                entry,
                timeout_ms,
            } => {
                let (t, ti) = self.ti(table)?;
                let what = self.table_what(t);
                if !ti.support_timeout {
                    return Err(ageing_disabled(&what));
                }
                let entry = self.entry_loc(&what, ti, entry, false)?;
                Ok(Prepared::op(
                    Op::SetTimeout {
                        table: t,
                        entry,
                        ms: timeout_ms,
                    },
                    Done::TimeoutSet { table: t },
                ))
            }
            Update::ReserveEntries { table, additional } => {
                let (t, _) = self.ti(table)?;
                Ok(Prepared::op(
                    Op::Reserve {
                        table: t,
                        additional,
                    },
                    Done::Applied(Applied::Done),
                ))
            }
            Update::WriteDirectCounter {
                table,
                entry,
                value,
            } => {
                let (t, ti) = self.ti(table)?;
                let what = self.table_what(t);
                if ti.direct_counter.is_none() {
                    return Err(counters_disabled(&what));
                }
                let entry = self.entry_loc(&what, ti, entry, false)?;
                Ok(Prepared::op(
                    Op::FindEntry { table: t, entry },
                    Done::Later(Later::DirectCounter { table: t, value }),
                ))
            }
            Update::ResetDirectCounters { table } => {
                let (t, ti) = self.ti(table)?;
                if ti.direct_counter.is_none() {
                    return Err(counters_disabled(&self.table_what(t)));
                }
                Ok(Prepared::none(Done::Later(Later::ResetDirectCounters {
                    table: t,
                })))
            }
            Update::SetDirectMeter {
                table,
                entry,
                config,
            } => {
                let (t, ti) = self.ti(table)?;
                let what = self.table_what(t);
                let Some(mi) = ti.direct_meter else {
                    return Err(
                        RuntimeError::invalid(format!("{what}: it has no direct meter"))
                            .with_bmv2(TC::METERS_DISABLED),
                    );
                };
                let rate_count = prog.meters.get(mi as usize).map_or(0, |m| m.rate_count);
                // bmv2 reports any rate problem of a direct meter as a generic ERROR
                super::externs::check_rates(&what, rate_count, &config).map_err(|e| {
                    RuntimeError {
                        bmv2: Some(TC::ERROR.into()),
                        ..e
                    }
                })?;
                let entry = self.entry_loc(&what, ti, entry, false)?;
                Ok(Prepared::op(
                    Op::FindEntry { table: t, entry },
                    Done::Later(Later::DirectMeter { table: t, config }),
                ))
            }
            _ => Err(RuntimeError::internal("not a table update")),
        }
    }

    /// What bmv2 does for a new entry besides adding it: its direct counter starts at
    /// zero, it has never been hit, and its ageing clock starts now.
    pub(crate) fn entry_added(&mut self, table: u32, h: u32, timed: bool) {
        let slot = handle_index(h);
        if let Some(Some(cells)) = self.externs.direct_counters.get(table as usize)
            && let Some(c) = cells.get(slot)
        {
            c.write(0, 0);
        }
        if let Some(Some(hits)) = self.externs.entry_hits.get(table as usize)
            && let Some(c) = hits.get(slot)
        {
            c.store(0, std::sync::atomic::Ordering::Relaxed);
        }
        if timed {
            self.record_entry_time(table, h);
        }
    }

    /// The entry's ageing starts now (added, or its timeout set).
    pub(crate) fn record_entry_time(&mut self, table: u32, h: u32) {
        let now = self.clock.now_us() / 1000;
        let slot = h & 0x00ff_ffff;
        self.rt.entry_times_ms.insert((table, slot), now);
        self.rt.idle_reported.remove(&(table, slot));
    }

    /// Milliseconds since the entry in `slot` was last hit (or, never hit since its
    /// ageing started, since then).
    fn idle_ms(&self, table: u32, slot: u32, now_us: u64) -> u64 {
        let start_ms = self
            .rt
            .entry_times_ms
            .get(&(table, slot))
            .copied()
            .unwrap_or(0);
        let hit_ms = self
            .externs
            .entry_hits
            .get(table as usize)
            .and_then(|h| h.as_ref())
            .and_then(|h| h.get(slot as usize))
            .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
            .filter(|v| *v != 0)
            .map_or(0, |v| (v - 1) / 1000);
        (now_us / 1000).saturating_sub(start_ms.max(hit_ms))
    }

    /// An entry as the model reports it.
    #[allow(clippy::too_many_arguments)]
    fn model_entry(
        &self,
        prog: &Program,
        t: u32,
        ti: &TableInfo,
        h: u32,
        key: &tables::MatchKey,
        v: &EntryValue,
        now_us: u64,
    ) -> TableEntry {
        let ttl = (ti.support_timeout && v.timeout_ms != 0).then(|| EntryTtl {
            timeout_ms: v.timeout_ms,
            idle_ms: self.idle_ms(t, h & 0x00ff_ffff, now_us),
        });
        TableEntry {
            handle: EntryHandle(h),
            key: model_key(ti, key),
            action: model_action(prog, &v.action),
            ttl,
            is_const: ti.const_entries.is_some(),
        }
    }

    pub(crate) fn read_entry_count(&self, table: TableId) -> Result<usize, RuntimeError> {
        self.need_schema()?;
        let (t, _) = self.ti(table)?;
        self.read_cs(|cs| cs.tables[t as usize].entries.len())
    }

    pub(crate) fn read_table_entries(
        &self,
        table: TableId,
        from: EntryCursor,
        limit: usize,
    ) -> Result<EntryPage, RuntimeError> {
        self.need_schema()?;
        let (t, ti) = self.ti(table)?;
        let prog = self.engine.prog.clone();
        let now = self.clock.now_us();
        let limit = limit.max(1);
        self.read_cs(|cs| {
            let mut entries = Vec::new();
            let mut next = None;
            for (h, k, v) in cs.tables[t as usize].entries.iter_from(from.0) {
                if entries.len() == limit {
                    next = Some(EntryCursor(h & 0x00ff_ffff));
                    break;
                }
                entries.push(self.model_entry(&prog, t, ti, h, &k, v, now));
            }
            EntryPage { entries, next }
        })
    }

    /// The handle of an entry, checked: by handle exactly (`INVALID_HANDLE`,
    /// `EXPIRED_HANDLE`) or its slot, or by key (`BAD_MATCH_KEY`, as bmv2's
    /// `get_entry_from_key`).
    fn find_entry(
        &self,
        what: &str,
        t: u32,
        ti: &TableInfo,
        entry: &EntryRef,
        exact: bool,
    ) -> Result<u32, RuntimeError> {
        let loc = self.entry_loc(what, ti, entry.clone(), exact)?;
        let r = self.read_cs(|cs| {
            let entries = &cs.tables[t as usize].entries;
            match &loc {
                EntryLoc::Handle(h) => match entries.get(*h) {
                    Some(_) => Ok(*h),
                    None => Err(p4jet_engine::OpResult::Table(
                        if p4jet_engine::state::live_slot(entries, *h).is_some() {
                            tables::TableError::ExpiredHandle
                        } else {
                            tables::TableError::InvalidHandle
                        },
                    )),
                },
                EntryLoc::Slot(h) => p4jet_engine::state::live_slot(entries, *h).ok_or(
                    p4jet_engine::OpResult::Table(tables::TableError::InvalidHandle),
                ),
                EntryLoc::Key(k) => entries.find(k).ok_or(p4jet_engine::OpResult::Refused(
                    p4jet_engine::state::Refusal::NoEntry,
                )),
            }
        })?;
        r.map_err(|e| super::op_error(what, &e))
    }

    pub(crate) fn read_table_entry(
        &self,
        table: TableId,
        entry: &EntryRef,
    ) -> Result<TableEntry, RuntimeError> {
        self.need_schema()?;
        let (t, ti) = self.ti(table)?;
        let what = self.table_what(t);
        let h = self.find_entry(&what, t, ti, entry, true)?;
        let prog = self.engine.prog.clone();
        let now = self.clock.now_us();
        self.read_cs(|cs| {
            cs.tables[t as usize]
                .entries
                .get(h)
                .map(|(k, v)| self.model_entry(&prog, t, ti, h, &k, v, now))
        })?
        .ok_or_else(|| {
            RuntimeError::not_found(format!("{what}: no such entry")).with_bmv2(TC::INVALID_HANDLE)
        })
    }

    pub(crate) fn read_default_entry(
        &self,
        table: TableId,
    ) -> Result<Option<EntryAction>, RuntimeError> {
        self.need_schema()?;
        let (t, ti) = self.ti(table)?;
        let prog = self.engine.prog.clone();
        self.read_cs(|cs| match (&cs.tables[t as usize].default, ti.kind) {
            (None, _) => None,
            // an indirect table without default member or group has no default entry
            // in bmv2, whatever the program says
            (Some(EngineAction::Direct(_)), TableKind::Indirect | TableKind::IndirectWs) => None,
            (Some(a), _) => Some(model_action(&prog, a)),
        })
    }

    pub(crate) fn read_direct_counter(
        &self,
        table: TableId,
        entry: &EntryRef,
    ) -> Result<CounterValue, RuntimeError> {
        self.need_schema()?;
        let (t, ti) = self.ti(table)?;
        let what = self.table_what(t);
        if ti.direct_counter.is_none() {
            return Err(counters_disabled(&what));
        }
        let h = self.find_entry(&what, t, ti, entry, false)?;
        let (bytes, packets) = self
            .externs
            .direct_counters
            .get(t as usize)
            .and_then(|c| c.as_ref())
            .and_then(|c| c.get(handle_index(h)))
            .map(|c| c.read())
            .unwrap_or((0, 0));
        Ok(CounterValue { bytes, packets })
    }

    pub(crate) fn read_direct_meter(
        &self,
        table: TableId,
        entry: &EntryRef,
    ) -> Result<MeterConfig, RuntimeError> {
        self.need_schema()?;
        let (t, ti) = self.ti(table)?;
        let what = self.table_what(t);
        if ti.direct_meter.is_none() {
            return Err(
                RuntimeError::invalid(format!("{what}: it has no direct meter"))
                    .with_bmv2(TC::METERS_DISABLED),
            );
        }
        let h = self.find_entry(&what, t, ti, entry, false)?;
        let cell = self
            .externs
            .direct_meters
            .get(t as usize)
            .and_then(|c| c.as_ref())
            .and_then(|c| c.get(handle_index(h)))
            .ok_or_else(|| RuntimeError::internal(format!("{what}: direct meter cell missing")))?;
        super::externs::meter_config(&what, cell)
    }

    /// Entries whose idle timeout expired since they were last reported.
    pub(crate) fn collect_idle_timeouts(&mut self) -> Result<Vec<IdleTimeout>, RuntimeError> {
        self.need_schema()?;
        let prog = self.engine.prog.clone();
        let now = self.clock.now_us();
        let mut out = Vec::new();
        for (t, ti) in prog.tables.iter().enumerate() {
            if !ti.support_timeout {
                continue;
            }
            let t = t as u32;
            let expired: Vec<(TableEntry, u64)> = self.read_cs(|cs| {
                cs.tables[t as usize]
                    .entries
                    .iter()
                    .filter(|(_, _, v)| v.timeout_ms > 0)
                    .filter_map(|(h, k, v)| {
                        let slot = h & 0x00ff_ffff;
                        if self.idle_ms(t, slot, now) < v.timeout_ms {
                            return None;
                        }
                        let hit = self.last_hit(t, slot);
                        // reported already, and not hit since
                        if self.rt.idle_reported.get(&(t, slot)) == Some(&hit) {
                            return None;
                        }
                        Some((self.model_entry(&prog, t, ti, h, &k, v, now), hit))
                    })
                    .collect()
            })?;
            if expired.is_empty() {
                continue;
            }
            let mut entries = Vec::with_capacity(expired.len());
            for (e, hit) in expired {
                self.rt.idle_reported.insert((t, e.handle.slot()), hit);
                entries.push(e);
            }
            out.push(IdleTimeout {
                table: TableId(t),
                entries,
            });
        }
        Ok(out)
    }

    /// One sweep of bmv2's ageing monitor (simple_switch runs one a second): per table
    /// with `support_timeout`, the handles of entries idle at least their timeout,
    /// leaving out those the previous sweep reported — so an entry that stays idle is
    /// reported every other sweep, as bmv2 does. Each result is one `AGE|` notification:
    /// (buffer id, the table's JSON id, handles).
    pub fn ageing_sweep(&mut self) -> Vec<(u64, i64, Vec<u32>)> {
        let prog = self.engine.prog.clone();
        let now = self.clock.now_us();
        let mut out = Vec::new();
        for (t, ti) in prog.tables.iter().enumerate() {
            if !ti.support_timeout {
                continue;
            }
            let t = t as u32;
            let aged: Vec<u32> = self
                .read_cs(|cs| {
                    cs.tables[t as usize]
                        .entries
                        .iter()
                        .filter(|(h, _, v)| {
                            v.timeout_ms > 0
                                && self.idle_ms(t, h & 0x00ff_ffff, now) >= v.timeout_ms
                        })
                        .map(|(h, _, _)| h)
                        .collect()
                })
                .unwrap_or_default();
            let prev = self.rt.ageing_prev.entry(t).or_default();
            let fresh: Vec<u32> = aged.into_iter().filter(|h| !prev.contains(h)).collect();
            *prev = fresh.iter().copied().collect();
            if fresh.is_empty() {
                continue;
            }
            let id = self.rt.ageing_buffer_id;
            self.rt.ageing_buffer_id += 1;
            out.push((id, ti.json_id, fresh));
        }
        out
    }

    /// The raw last-hit value of a slot (0: never hit).
    fn last_hit(&self, t: u32, slot: u32) -> u64 {
        self.externs
            .entry_hits
            .get(t as usize)
            .and_then(|h| h.as_ref())
            .and_then(|h| h.get(slot as usize))
            .map_or(0, |c| c.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// The program's default entry of a table (none for an indirect table).
fn program_default(ti: &TableInfo) -> Option<EngineAction> {
    match ti.kind {
        TableKind::Simple => ti.default_entry.clone().map(EngineAction::Direct),
        TableKind::Indirect | TableKind::IndirectWs => None,
    }
}

fn immutable(what: &str) -> RuntimeError {
    RuntimeError::denied(format!("{what}: its entries are const"))
        .with_bmv2(TC::IMMUTABLE_TABLE_ENTRIES)
}

fn ageing_disabled(what: &str) -> RuntimeError {
    RuntimeError::invalid(format!("{what}: it does not support idle timeouts"))
        .with_bmv2(TC::AGEING_DISABLED)
}

fn counters_disabled(what: &str) -> RuntimeError {
    RuntimeError::invalid(format!("{what}: it has no direct counter"))
        .with_bmv2(TC::COUNTERS_DISABLED)
}
