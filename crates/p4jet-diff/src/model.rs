//! What the generators need to know of a program, read from its bmv2 JSON: field
//! widths, tables with their keys and actions, action profiles, counters, registers,
//! the parser graph, and which v1model features make bmv2's output order depend on
//! timing.

use std::collections::HashMap;

use p4jet_json::Program;
use serde_json::Value;

/// A header instance.
#[derive(Debug, Clone)]
pub struct HeaderInfo {
    /// Fields in wire order: name and width in bits (0 for the varbit field).
    pub fields: Vec<(String, u32)>,
    /// Metadata (always valid).
    pub metadata: bool,
    /// Maximum length in bytes of the varbit field's header (varbit headers).
    pub max_length: Option<u32>,
}

impl HeaderInfo {
    /// Fixed length in bits (the varbit field counts 0).
    pub fn fixed_bits(&self) -> u32 {
        self.fields.iter().map(|f| f.1).sum()
    }

    /// Bit offset and width of a field.
    pub fn field(&self, name: &str) -> Option<(u32, u32)> {
        let mut off = 0;
        for (n, w) in &self.fields {
            if n == name {
                return Some((off, *w));
            }
            off += w;
        }
        None
    }
}

/// How a key element matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// exact
    Exact,
    /// lpm
    Lpm,
    /// ternary (and optional)
    Ternary,
    /// range
    Range,
    /// P4_14 `valid` (a header name)
    Valid,
}

/// A key element.
#[derive(Debug, Clone)]
pub struct KeyInfo {
    /// Match kind.
    pub kind: KeyKind,
    /// (header, field); for `valid` keys (header, `$valid$`).
    pub target: (String, String),
    /// Width in bits.
    pub width: u32,
}

/// An action a table may run.
#[derive(Debug, Clone)]
pub struct ActionInfo {
    /// Name.
    pub name: String,
    /// Parameter widths.
    pub params: Vec<u32>,
    /// Fields its parameters are assigned to (per parameter).
    pub param_targets: Vec<Option<(String, String)>>,
}

/// A table the control plane can fill.
#[derive(Debug, Clone)]
pub struct TableInfo {
    /// Name.
    pub name: String,
    /// Keys.
    pub keys: Vec<KeyInfo>,
    /// Actions.
    pub actions: Vec<ActionInfo>,
    /// Needs a priority (ternary, range, optional keys).
    pub needs_priority: bool,
    /// Capacity.
    pub max_size: u32,
    /// Const entries: no run-time adds.
    pub immutable: bool,
    /// Default action may be set.
    pub default_settable: bool,
    /// Action profile (indirect tables), and whether it has a selector.
    pub profile: Option<(String, bool)>,
    /// Direct counter name.
    pub direct_counter: Option<String>,
}

/// A parser state.
pub type StateInfo = p4jet_json::ParseState;

/// Everything the generators use.
#[derive(Debug, Clone)]
pub struct ProgramInfo {
    /// Header instances by name.
    pub headers: HashMap<String, HeaderInfo>,
    /// Header stacks: name -> element instance names.
    pub stacks: HashMap<String, Vec<String>>,
    /// Header union stacks: name -> per element, member instance names.
    pub union_stacks: HashMap<String, Vec<Vec<String>>>,
    /// Header unions: name -> member instance names (with member names).
    pub unions: HashMap<String, Vec<(String, String)>>,
    /// Fillable tables.
    pub tables: Vec<TableInfo>,
    /// Indexed counters: name, size.
    pub counters: Vec<(String, u32)>,
    /// Registers: name, size, width.
    pub registers: Vec<(String, u32, u32)>,
    /// Indexed meters: name, size.
    pub meters: Vec<(String, u32)>,
    /// The parser (states by name, init state).
    pub states: HashMap<String, StateInfo>,
    /// Initial parser state.
    pub init_state: Option<String>,
    /// Uses recirculate, resubmit or E2E clones (bmv2's output order then depends on
    /// timing).
    pub timing_dependent_order: bool,
    /// Uses `assert`/`assume` (bmv2 aborts when one fails).
    pub has_asserts: bool,
    /// Uses random() with lo < hi, or meters, or timestamps: outputs may legitimately
    /// differ.
    pub nondeterministic: Vec<String>,
    /// Constants the program compares fields with (conditions, actions), per field:
    /// frames that take those branches need them.
    pub constants: Vec<((String, String), u128)>,
}

/// Collects `field OP constant` comparisons of an expression tree.
fn comparisons(v: &Value, out: &mut Vec<((String, String), u128)>) {
    match v {
        Value::Object(o) => {
            if let (Some(op), Some(l), Some(r)) = (
                o.get("op").and_then(Value::as_str),
                o.get("left"),
                o.get("right"),
            ) && matches!(op, "==" | "!=" | "<" | ">" | "<=" | ">=")
            {
                let field = |x: &Value| -> Option<(String, String)> {
                    let x = if x.get("type").and_then(Value::as_str) == Some("expression") {
                        x.get("value")?
                    } else {
                        x
                    };
                    if x.get("type")?.as_str()? != "field" {
                        return None;
                    }
                    let a = x.get("value")?.as_array()?;
                    Some((
                        a.first()?.as_str()?.to_string(),
                        a.get(1)?.as_str()?.to_string(),
                    ))
                };
                let constant = |x: &Value| -> Option<u128> {
                    if x.get("type")?.as_str()? != "hexstr" {
                        return None;
                    }
                    let h = x.get("value")?.as_str()?;
                    u128::from_str_radix(h.strip_prefix("0x")?, 16).ok()
                };
                if let (Some(f), Some(c)) = (field(l), constant(r)) {
                    out.push((f, c));
                } else if let (Some(c), Some(f)) = (constant(l), field(r)) {
                    out.push((f, c));
                }
            }
            o.values().for_each(|x| comparisons(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| comparisons(x, out)),
        _ => {}
    }
}

impl ProgramInfo {
    /// Reads the program.
    pub fn new(p: &Program) -> ProgramInfo {
        let mut types: HashMap<&str, &p4jet_json::HeaderType> = HashMap::new();
        for t in &p.header_types {
            types.insert(&t.name, t);
        }
        let mut headers = HashMap::new();
        let mut by_id: HashMap<i64, String> = HashMap::new();
        for h in &p.headers {
            let Some(t) = types.get(h.header_type.as_str()) else {
                continue;
            };
            let fields = t
                .fields
                .iter()
                .map(|f| (f.name.clone(), f.width.unwrap_or(0)))
                .collect();
            headers.insert(
                h.name.clone(),
                HeaderInfo {
                    fields,
                    metadata: h.metadata,
                    max_length: t.max_length,
                },
            );
            by_id.insert(h.id, h.name.clone());
        }
        let mut stacks = HashMap::new();
        for s in &p.header_stacks {
            stacks.insert(
                s.name.clone(),
                s.header_ids
                    .iter()
                    .filter_map(|i| by_id.get(i).cloned())
                    .collect(),
            );
        }
        let mut unions = HashMap::new();
        let mut union_by_id: HashMap<i64, Vec<(String, String)>> = HashMap::new();
        let utypes: HashMap<&str, &p4jet_json::HeaderUnionType> = p
            .header_union_types
            .iter()
            .map(|t| (t.name.as_str(), t))
            .collect();
        for u in &p.header_unions {
            let members: Vec<(String, String)> = match utypes.get(u.union_type.as_str()) {
                Some(t) => t
                    .headers
                    .iter()
                    .zip(&u.header_ids)
                    .filter_map(|((m, _), id)| by_id.get(id).map(|h| (m.clone(), h.clone())))
                    .collect(),
                None => vec![],
            };
            union_by_id.insert(u.id, members.clone());
            unions.insert(u.name.clone(), members);
        }
        let mut union_stacks = HashMap::new();
        for s in &p.header_union_stacks {
            union_stacks.insert(
                s.name.clone(),
                s.header_union_ids
                    .iter()
                    .map(|i| {
                        union_by_id
                            .get(i)
                            .map(|m| m.iter().map(|(_, h)| h.clone()).collect())
                            .unwrap_or_default()
                    })
                    .collect(),
            );
        }
        let width_of = |target: &Value| -> Option<((String, String), u32)> {
            let a = target.as_array()?;
            let h = a.first()?.as_str()?;
            let f = a.get(1)?.as_str()?;
            if f == "$valid$" {
                return Some(((h.to_string(), f.to_string()), 1));
            }
            let hi = headers.get(h)?;
            let (_, w) = hi.field(f)?;
            Some(((h.to_string(), f.to_string()), w))
        };
        let actions_by_id: HashMap<i64, &p4jet_json::Action> =
            p.actions.iter().map(|a| (a.id, a)).collect();
        let actions_by_name: HashMap<&str, &p4jet_json::Action> =
            p.actions.iter().map(|a| (a.name.as_str(), a)).collect();
        let action_info = |a: &p4jet_json::Action| {
            let mut param_targets = vec![None; a.runtime_data.len()];
            for prim in &a.primitives {
                if prim.op != "assign" {
                    continue;
                }
                let (Some(dst), Some(src)) = (prim.parameters.first(), prim.parameters.get(1))
                else {
                    continue;
                };
                if src.get("type").and_then(Value::as_str) == Some("runtime_data")
                    && let Some(i) = src.get("value").and_then(Value::as_u64)
                    && let Some(slot) = param_targets.get_mut(i as usize)
                    && let Some((name, _)) = dst.get("value").and_then(&width_of)
                {
                    *slot = Some(name);
                }
            }
            ActionInfo {
                name: a.name.clone(),
                params: a.runtime_data.iter().map(|r| r.bitwidth).collect(),
                param_targets,
            }
        };
        let mut direct_counters: HashMap<String, String> = HashMap::new();
        let mut counters = vec![];
        for c in &p.counter_arrays {
            if c.is_direct {
                if let Some(b) = &c.binding {
                    direct_counters.insert(b.clone(), c.name.clone());
                }
            } else {
                counters.push((c.name.clone(), c.size));
            }
        }
        let mut tables = vec![];
        let mut timing_dependent_order = false;
        let mut has_asserts = false;
        let mut nondeterministic = vec![];
        for a in &p.actions {
            for prim in &a.primitives {
                match prim.op.as_str() {
                    "recirculate" | "resubmit" | "clone_egress_pkt_to_egress" => {
                        timing_dependent_order = true
                    }
                    "assert" | "assume" => has_asserts = true,
                    "execute_meter" => nondeterministic.push("meters".to_string()),
                    _ => {}
                }
            }
        }
        for pl in &p.pipelines {
            let profiles: HashMap<&str, bool> = pl
                .action_profiles
                .iter()
                .map(|ap| (ap.name.as_str(), ap.selector.is_some()))
                .collect();
            for t in &pl.tables {
                let mut keys = vec![];
                let mut ok = true;
                for k in &t.key {
                    let kind = match k.match_type.as_str() {
                        "exact" => KeyKind::Exact,
                        "lpm" => KeyKind::Lpm,
                        "ternary" | "optional" => KeyKind::Ternary,
                        "range" => KeyKind::Range,
                        "valid" => KeyKind::Valid,
                        _ => {
                            ok = false;
                            KeyKind::Exact
                        }
                    };
                    if kind == KeyKind::Valid {
                        keys.push(KeyInfo {
                            kind,
                            target: (
                                k.target.as_str().unwrap_or_default().to_string(),
                                "$valid$".to_string(),
                            ),
                            width: 1,
                        });
                        continue;
                    }
                    match width_of(&k.target) {
                        Some((target, width)) => keys.push(KeyInfo {
                            kind,
                            target,
                            width,
                        }),
                        None => ok = false,
                    }
                }
                if !ok {
                    continue;
                }
                let ids: Vec<Option<&&p4jet_json::Action>> = match &t.action_ids {
                    Some(ids) => ids.iter().map(|i| actions_by_id.get(i)).collect(),
                    None => t
                        .actions
                        .iter()
                        .map(|n| actions_by_name.get(n.as_str()))
                        .collect(),
                };
                let actions: Vec<ActionInfo> =
                    ids.into_iter().flatten().map(|a| action_info(a)).collect();
                let profile_name = t.action_profile.clone().or(t.act_prof_name.clone());
                let profile = profile_name.map(|n| {
                    let sel = profiles.get(n.as_str()).copied().unwrap_or(false);
                    (n, sel)
                });
                let needs_priority = keys
                    .iter()
                    .any(|k| matches!(k.kind, KeyKind::Ternary | KeyKind::Range));
                let default_settable = t
                    .default_entry
                    .as_ref()
                    .is_none_or(|d| !d.action_const && !d.action_entry_const);
                tables.push(TableInfo {
                    name: t.name.clone(),
                    keys,
                    actions,
                    needs_priority,
                    max_size: t.max_size,
                    immutable: t.entries.is_some(),
                    default_settable,
                    profile,
                    direct_counter: direct_counters.get(&t.name).cloned(),
                });
            }
        }
        let registers = p
            .register_arrays
            .iter()
            .map(|r| (r.name.clone(), r.size, r.bitwidth))
            .collect();
        let parser = p
            .parsers
            .iter()
            .find(|x| x.name == "parser")
            .or(p.parsers.first());
        let mut states = HashMap::new();
        let mut init_state = None;
        if let Some(pa) = parser {
            for s in &pa.parse_states {
                states.insert(s.name.clone(), s.clone());
            }
            init_state = Some(pa.init_state.clone());
        }
        let mut constants = vec![];
        for pl in &p.pipelines {
            for c in &pl.conditionals {
                comparisons(&c.expression, &mut constants);
            }
        }
        for a in &p.actions {
            for prim in &a.primitives {
                prim.parameters
                    .iter()
                    .for_each(|x| comparisons(x, &mut constants));
            }
        }
        constants.sort();
        constants.dedup();
        let meters = p
            .meter_arrays
            .iter()
            .filter(|m| !m.is_direct)
            .map(|m| (m.name.clone(), m.size))
            .collect();
        ProgramInfo {
            meters,
            constants,
            headers,
            stacks,
            union_stacks,
            unions,
            tables,
            counters,
            registers,
            states,
            init_state,
            timing_dependent_order,
            has_asserts,
            nondeterministic,
        }
    }

    /// Width of a field (None when unknown).
    pub fn width(&self, h: &str, f: &str) -> Option<u32> {
        if f == "$valid$" {
            return Some(1);
        }
        self.headers.get(h)?.field(f).map(|x| x.1)
    }
}
