//! Joining a P4Info to the program model, by name.
//!
//! P4Runtime addresses objects by P4Info ids; the switch by [`crate::ids`]. A P4Info
//! and the bmv2 JSON come from the same compilation and name their objects alike:
//!
//! * usually with the same fully qualified name (`IngressImpl.dmac` in both);
//! * a top-level name written `@name(".port_forward")` is `port_forward` in both (the
//!   leading dot is dropped) — the join ignores a leading dot anyway;
//! * some compilers prefix names with the control's instance name on one side and
//!   its type name on the other (`ingress.dmac` / `MyIngress.dmac`), or not at all on
//!   one side: names that agree after their first dotted component, or of which one
//!   is the other without its first component, match;
//! * p4c-generated tables (`tbl_*`) and actions without control-plane names are in the
//!   JSON only;
//! * p4c copies actions per use (two JSON actions `NoAction`): one P4Info action
//!   stands for every JSON action of its name, and a table's P4Info action is the
//!   JSON action of that name in the table's action list;
//! * a digest is named by its struct type in P4Info, which is the learn list's name
//!   in the JSON;
//! * match fields are named by their P4 expression (`hdr.ethernet.dst_addr`), the
//!   JSON key's `name`; action parameters by their name.
//!
//! The front end that parsed the P4Info (the P4Runtime server) lists its objects as
//! [`P4InfoObject`]s; [`join`] pairs each with the schema's object of the same kind
//! and name (exact name first, then the rules above, then the P4Info alias), checks
//! that shapes agree (match fields and parameters by name or position, with equal
//! widths; direct or indexed; counter, meter and register sizes; register widths) and gives the maps both ways
//! ([`P4InfoJoin`]). Any P4Info object without a unique partner, or whose shape
//! differs, makes the join fail with an [`crate::ErrorKind::InvalidArgument`] naming
//! every mismatch: the JSON does not match the P4Info.

use std::collections::HashMap;

use crate::error::RuntimeError;
use crate::ids::{
    ActionId, CounterId, DigestId, MeterId, ProfileId, RegisterId, TableId, ValueSetId,
};
use crate::schema::Schema;

/// Kinds of P4Info objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum P4InfoKind {
    /// `tables`
    Table,
    /// `actions`
    Action,
    /// `action_profiles`
    ActionProfile,
    /// `counters`
    Counter,
    /// `direct_counters`
    DirectCounter,
    /// `meters`
    Meter,
    /// `direct_meters`
    DirectMeter,
    /// `registers`
    Register,
    /// `digests`
    Digest,
    /// `value_sets`
    ValueSet,
}

/// A match field (of a table) or a parameter (of an action) of a P4Info object.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct P4InfoField {
    /// Its P4Info id.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// Its width in bits (0: not checked).
    pub bitwidth: u32,
}

/// A P4Info object as the join needs it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct P4InfoObject {
    /// Kind.
    pub kind: P4InfoKind,
    /// Preamble id.
    pub id: u32,
    /// Preamble name.
    pub name: String,
    /// Preamble alias ("" when none).
    pub alias: String,
    /// Match fields of a table, parameters of an action (else empty).
    pub fields: Vec<P4InfoField>,
    /// Size of a counter, meter or register (0: not checked; table sizes are not
    /// compared: p4c sizes a table of const entries to them in the JSON).
    pub size: u64,
    /// Cell width of a register (0: not checked).
    pub bitwidth: u32,
}

impl P4InfoObject {
    /// An object without fields, size or width to check.
    pub fn new(kind: P4InfoKind, id: u32, name: impl Into<String>) -> P4InfoObject {
        P4InfoObject {
            kind,
            id,
            name: name.into(),
            alias: String::new(),
            fields: vec![],
            size: 0,
            bitwidth: 0,
        }
    }
}

/// The P4Info ↔ schema maps.
#[derive(Debug, Clone, Default)]
pub struct P4InfoJoin {
    tables: HashMap<u32, TableId>,
    table_ids: HashMap<TableId, u32>,
    /// P4Info action id → every JSON action of its name.
    actions: HashMap<u32, Vec<ActionId>>,
    action_ids: HashMap<ActionId, u32>,
    profiles: HashMap<u32, ProfileId>,
    profile_ids: HashMap<ProfileId, u32>,
    counters: HashMap<u32, CounterId>,
    counter_ids: HashMap<CounterId, u32>,
    meters: HashMap<u32, MeterId>,
    meter_ids: HashMap<MeterId, u32>,
    registers: HashMap<u32, RegisterId>,
    register_ids: HashMap<RegisterId, u32>,
    digests: HashMap<u32, DigestId>,
    digest_ids: HashMap<DigestId, u32>,
    value_sets: HashMap<u32, ValueSetId>,
    value_set_ids: HashMap<ValueSetId, u32>,
    /// (table, P4Info match field id) → key field position.
    key_fields: HashMap<(TableId, u32), usize>,
    /// (table, key field position) → P4Info match field id.
    key_field_ids: HashMap<(TableId, usize), u32>,
    /// (P4Info action id, P4Info param id) → parameter position.
    params: HashMap<(u32, u32), usize>,
    /// (P4Info action id, parameter position) → P4Info param id.
    param_ids: HashMap<(u32, usize), u32>,
}

macro_rules! lookups {
    ($($fwd:ident, $rev:ident, $fwd_fn:ident, $rev_fn:ident, $id:ty);+ $(;)?) => {
        $(
            #[doc = concat!("The schema's object of a P4Info id (`", stringify!($fwd), "`).")]
            pub fn $fwd_fn(&self, p4info_id: u32) -> Option<$id> {
                self.$fwd.get(&p4info_id).copied()
            }

            #[doc = concat!("The P4Info id of a schema object (`", stringify!($fwd), "`).")]
            pub fn $rev_fn(&self, id: $id) -> Option<u32> {
                self.$rev.get(&id).copied()
            }
        )+
    };
}

impl P4InfoJoin {
    lookups!(
        tables, table_ids, table, table_p4info_id, TableId;
        profiles, profile_ids, profile, profile_p4info_id, ProfileId;
        counters, counter_ids, counter, counter_p4info_id, CounterId;
        meters, meter_ids, meter, meter_p4info_id, MeterId;
        registers, register_ids, register, register_p4info_id, RegisterId;
        digests, digest_ids, digest, digest_p4info_id, DigestId;
        value_sets, value_set_ids, value_set, value_set_p4info_id, ValueSetId;
    );

    /// Every JSON action a P4Info action stands for.
    pub fn actions(&self, p4info_id: u32) -> &[ActionId] {
        self.actions.get(&p4info_id).map_or(&[], Vec::as_slice)
    }

    /// The P4Info id of a JSON action.
    pub fn action_p4info_id(&self, id: ActionId) -> Option<u32> {
        self.action_ids.get(&id).copied()
    }

    /// The action of `table` that P4Info action `p4info_id` stands for (None: not an
    /// action of the table).
    pub fn table_action(
        &self,
        schema: &Schema,
        table: TableId,
        p4info_id: u32,
    ) -> Option<ActionId> {
        let t = schema.table(table)?;
        self.actions(p4info_id)
            .iter()
            .copied()
            .find(|a| t.actions.contains(a))
    }

    /// The action of a profile's tables that P4Info action `p4info_id` stands for.
    pub fn profile_action(
        &self,
        schema: &Schema,
        profile: ProfileId,
        p4info_id: u32,
    ) -> Option<ActionId> {
        let p = schema.profile(profile)?;
        self.actions(p4info_id)
            .iter()
            .copied()
            .find(|a| p.actions.contains(a))
    }

    /// The key position of a P4Info match field of a table.
    pub fn key_field(&self, table: TableId, field_id: u32) -> Option<usize> {
        self.key_fields.get(&(table, field_id)).copied()
    }

    /// The P4Info match field id of a key position.
    pub fn key_field_id(&self, table: TableId, position: usize) -> Option<u32> {
        self.key_field_ids.get(&(table, position)).copied()
    }

    /// The position of a parameter of a P4Info action.
    pub fn param(&self, action_p4info_id: u32, param_id: u32) -> Option<usize> {
        self.params.get(&(action_p4info_id, param_id)).copied()
    }

    /// The P4Info id of a parameter position of a P4Info action.
    pub fn param_id(&self, action_p4info_id: u32, position: usize) -> Option<u32> {
        self.param_ids.get(&(action_p4info_id, position)).copied()
    }
}

/// How well a JSON name matches a P4Info name (0: not at all).
fn name_score(json: &str, p4info: &str, alias: &str) -> u8 {
    let j = json.strip_prefix('.').unwrap_or(json);
    let p = p4info.strip_prefix('.').unwrap_or(p4info);
    if j == p {
        return 3;
    }
    let rest = |s: &str| s.split_once('.').map(|(_, r)| r.to_string());
    match (rest(j), rest(p)) {
        (Some(a), Some(b)) if a == b => return 2,
        (Some(a), _) if a == p => return 2,
        (_, Some(b)) if b == j => return 2,
        _ => {}
    }
    let last = |s: &str| s.rsplit('.').next().unwrap_or(s).to_string();
    if !alias.is_empty() && (alias == j || alias == last(j)) {
        return 1;
    }
    0
}

/// Pairs P4Info objects with schema objects by name and checks their shapes.
pub fn join(schema: &Schema, objects: &[P4InfoObject]) -> Result<P4InfoJoin, RuntimeError> {
    let mut j = P4InfoJoin::default();
    let mut problems: Vec<String> = Vec::new();

    // candidates per kind: (index, name) of the schema objects
    let candidates = |kind: P4InfoKind| -> Vec<(u32, &str)> {
        match kind {
            P4InfoKind::Table => schema
                .tables
                .iter()
                .map(|t| (t.id.0, t.name.as_str()))
                .collect(),
            P4InfoKind::Action => {
                // one candidate per distinct name (the first action of the name)
                let mut seen = Vec::new();
                for a in &schema.actions {
                    if !seen.iter().any(|(_, n)| *n == a.name.as_str()) {
                        seen.push((a.id.0, a.name.as_str()));
                    }
                }
                seen
            }
            P4InfoKind::ActionProfile => schema
                .profiles
                .iter()
                .map(|p| (p.id.0, p.name.as_str()))
                .collect(),
            P4InfoKind::Counter | P4InfoKind::DirectCounter => schema
                .counters
                .iter()
                .filter(|c| c.direct_table.is_some() == (kind == P4InfoKind::DirectCounter))
                .map(|c| (c.id.0, c.name.as_str()))
                .collect(),
            P4InfoKind::Meter | P4InfoKind::DirectMeter => schema
                .meters
                .iter()
                .filter(|m| m.direct_table.is_some() == (kind == P4InfoKind::DirectMeter))
                .map(|m| (m.id.0, m.name.as_str()))
                .collect(),
            P4InfoKind::Register => schema
                .registers
                .iter()
                .map(|r| (r.id.0, r.name.as_str()))
                .collect(),
            P4InfoKind::Digest => schema
                .digests
                .iter()
                .map(|d| (d.id.0, d.name.as_str()))
                .collect(),
            P4InfoKind::ValueSet => schema
                .value_sets
                .iter()
                .map(|v| (v.id.0, v.name.as_str()))
                .collect(),
        }
    };

    let mut used: HashMap<(P4InfoKind, u32), String> = HashMap::new();
    for o in objects {
        let cands = candidates(o.kind);
        let best = cands
            .iter()
            .map(|(i, n)| (name_score(n, &o.name, &o.alias), *i, *n))
            .filter(|(s, _, _)| *s > 0)
            .max_by_key(|(s, _, _)| *s);
        let Some((score, idx, json_name)) = best else {
            problems.push(format!(
                "{:?} `{}` (id {}) is not in the JSON",
                o.kind, o.name, o.id
            ));
            continue;
        };
        let ties = cands
            .iter()
            .filter(|(_, n)| name_score(n, &o.name, &o.alias) == score)
            .count();
        if ties > 1 {
            problems.push(format!(
                "{:?} `{}` (id {}) matches {ties} objects of the JSON",
                o.kind, o.name, o.id
            ));
            continue;
        }
        let kind_key = match o.kind {
            P4InfoKind::DirectCounter => P4InfoKind::Counter,
            P4InfoKind::DirectMeter => P4InfoKind::Meter,
            k => k,
        };
        if let Some(other) = used.insert((kind_key, idx), o.name.clone()) {
            problems.push(format!(
                "{:?} `{}` and `{other}` both match `{json_name}` of the JSON",
                o.kind, o.name
            ));
            continue;
        }
        match o.kind {
            P4InfoKind::Table => {
                let t = TableId(idx);
                j.tables.insert(o.id, t);
                j.table_ids.insert(t, o.id);
                // table sizes may differ: p4c sizes a table of const entries to
                // them in the JSON
                if let Some(ts) = schema.table(t) {
                    for (pos, f) in o.fields.iter().enumerate() {
                        let k = ts
                            .keys
                            .iter()
                            .position(|k| k.name == f.name)
                            .or_else(|| (pos < ts.keys.len()).then_some(pos));
                        match k {
                            Some(k) => {
                                let w = ts.keys[k].width;
                                if f.bitwidth != 0 && f.bitwidth != w {
                                    problems.push(format!(
                                        "table `{}` match field `{}`: {} bits in the P4Info, \
                                         {w} in the JSON",
                                        o.name, f.name, f.bitwidth
                                    ));
                                }
                                j.key_fields.insert((t, f.id), k);
                                j.key_field_ids.insert((t, k), f.id);
                            }
                            None => problems.push(format!(
                                "table `{}` match field `{}` is not in the JSON",
                                o.name, f.name
                            )),
                        }
                    }
                    if o.fields.len() != ts.keys.len() && !o.fields.is_empty() {
                        problems.push(format!(
                            "table `{}`: {} match fields in the P4Info, {} in the JSON",
                            o.name,
                            o.fields.len(),
                            ts.keys.len()
                        ));
                    }
                }
            }
            P4InfoKind::Action => {
                let all: Vec<ActionId> = schema
                    .actions
                    .iter()
                    .filter(|a| a.name == json_name)
                    .map(|a| a.id)
                    .collect();
                if let Some(a) = all.first().and_then(|a| schema.action(*a)) {
                    if o.fields.len() != a.params.len() {
                        problems.push(format!(
                            "action `{}`: {} parameters in the P4Info, {} in the JSON",
                            o.name,
                            o.fields.len(),
                            a.params.len()
                        ));
                    }
                    for (pos, f) in o.fields.iter().enumerate() {
                        let p = a
                            .params
                            .iter()
                            .position(|p| p.name == f.name)
                            .or_else(|| (pos < a.params.len()).then_some(pos));
                        match p {
                            Some(p) => {
                                let w = a.params[p].width;
                                if f.bitwidth != 0 && f.bitwidth != w {
                                    problems.push(format!(
                                        "action `{}` parameter `{}`: {} bits in the P4Info, \
                                         {w} in the JSON",
                                        o.name, f.name, f.bitwidth
                                    ));
                                }
                                j.params.insert((o.id, f.id), p);
                                j.param_ids.insert((o.id, p), f.id);
                            }
                            None => problems.push(format!(
                                "action `{}` parameter `{}` is not in the JSON",
                                o.name, f.name
                            )),
                        }
                    }
                }
                for a in &all {
                    j.action_ids.insert(*a, o.id);
                }
                j.actions.insert(o.id, all);
            }
            P4InfoKind::ActionProfile => {
                let p = ProfileId(idx);
                j.profiles.insert(o.id, p);
                j.profile_ids.insert(p, o.id);
            }
            P4InfoKind::Counter | P4InfoKind::DirectCounter => {
                let c = CounterId(idx);
                if let Some(cs) = schema.counter(c)
                    && o.kind == P4InfoKind::Counter
                    && o.size != 0
                    && o.size != u64::from(cs.size)
                {
                    problems.push(format!(
                        "counter `{}`: size {} in the P4Info, {} in the JSON",
                        o.name, o.size, cs.size
                    ));
                }
                j.counters.insert(o.id, c);
                j.counter_ids.insert(c, o.id);
            }
            P4InfoKind::Meter | P4InfoKind::DirectMeter => {
                let m = MeterId(idx);
                if let Some(ms) = schema.meter(m)
                    && o.kind == P4InfoKind::Meter
                    && o.size != 0
                    && o.size != u64::from(ms.size)
                {
                    problems.push(format!(
                        "meter `{}`: size {} in the P4Info, {} in the JSON",
                        o.name, o.size, ms.size
                    ));
                }
                j.meters.insert(o.id, m);
                j.meter_ids.insert(m, o.id);
            }
            P4InfoKind::Register => {
                let r = RegisterId(idx);
                if let Some(rs) = schema.register(r) {
                    if o.size != 0 && o.size != u64::from(rs.size) {
                        problems.push(format!(
                            "register `{}`: size {} in the P4Info, {} in the JSON",
                            o.name, o.size, rs.size
                        ));
                    }
                    if o.bitwidth != 0 && o.bitwidth != rs.width {
                        problems.push(format!(
                            "register `{}`: {} bits in the P4Info, {} in the JSON",
                            o.name, o.bitwidth, rs.width
                        ));
                    }
                }
                j.registers.insert(o.id, r);
                j.register_ids.insert(r, o.id);
            }
            P4InfoKind::Digest => {
                let d = DigestId(idx);
                j.digests.insert(o.id, d);
                j.digest_ids.insert(d, o.id);
            }
            P4InfoKind::ValueSet => {
                let v = ValueSetId(idx);
                if let Some(vs) = schema.value_set(v)
                    && o.bitwidth != 0
                    && o.bitwidth != vs.width
                {
                    problems.push(format!(
                        "value set `{}`: {} bits in the P4Info, {} in the JSON",
                        o.name, o.bitwidth, vs.width
                    ));
                }
                j.value_sets.insert(o.id, v);
                j.value_set_ids.insert(v, o.id);
            }
        }
    }
    if problems.is_empty() {
        Ok(j)
    } else {
        Err(RuntimeError::invalid(format!(
            "the P4Info does not match the JSON: {}",
            problems.join("; ")
        )))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn scores() {
        assert_eq!(name_score("IngressImpl.dmac", "IngressImpl.dmac", ""), 3);
        assert_eq!(name_score("port_forward", ".port_forward", ""), 3);
        assert_eq!(name_score("ingress.dmac", "MyIngress.dmac", ""), 2);
        assert_eq!(name_score("dmac", "MyIngress.dmac", ""), 2);
        assert_eq!(name_score("MyIngress.dmac", "dmac", ""), 2);
        assert_eq!(name_score("x.y.z", "a.b", "z"), 1);
        assert_eq!(
            name_score("IngressImpl.smac", "IngressImpl.dmac", "dmac"),
            0
        );
    }
}
