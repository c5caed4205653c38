//! What the control plane needs to know about a P4 program, read from the
//! bmv2 JSON the way `simple_switch_CLI` (runtime_CLI.py) reads it: tables
//! with their key fields and widths, actions with their parameter widths,
//! action profiles, counter / meter / register arrays, parser value sets,
//! custom CRC calculations and learn lists, plus the suffix lookup that lets
//! users name any object by a unique dotted suffix of its name.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use serde_json::Value;

/// Error while reading the JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramError(pub String);

impl fmt::Display for ProgramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid bmv2 JSON: {}", self.0)
    }
}

impl std::error::Error for ProgramError {}

fn err<T>(msg: impl Into<String>) -> Result<T, ProgramError> {
    Err(ProgramError(msg.into()))
}

/// Match kind of a key field, or of a whole table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchKind {
    /// `exact`
    Exact,
    /// `lpm`
    Lpm,
    /// `ternary` (also `optional`, which p4c emits as ternary)
    Ternary,
    /// `valid` (legacy P4_14 key on a header's validity)
    Valid,
    /// `range`
    Range,
}

impl MatchKind {
    /// Parses the JSON spelling.
    pub fn from_json(s: &str) -> Option<MatchKind> {
        Some(match s {
            "exact" => MatchKind::Exact,
            "lpm" => MatchKind::Lpm,
            "ternary" | "optional" => MatchKind::Ternary,
            "valid" => MatchKind::Valid,
            "range" => MatchKind::Range,
            _ => return None,
        })
    }

    /// The lower-case name simple_switch_CLI prints.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Lpm => "lpm",
            MatchKind::Ternary => "ternary",
            MatchKind::Valid => "valid",
            MatchKind::Range => "range",
        }
    }

    /// Whether entries of a table of this kind need a priority.
    pub fn needs_priority(self) -> bool {
        matches!(self, MatchKind::Ternary | MatchKind::Range)
    }
}

/// Implementation of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableType {
    /// Direct actions.
    Simple,
    /// Action profile.
    Indirect,
    /// Action selector.
    IndirectWs,
}

/// One field of a table key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyField {
    /// Name as simple_switch_CLI shows it: `hdr.field` (JSON target joined
    /// with dots) or `hdr_valid` for validity keys.
    pub cli_name: String,
    /// Name as p4c's STF driver matches it: the key's `name` in the JSON
    /// (the P4 expression, e.g. `hdr.ethernet.dst_addr`), else the target.
    pub stf_name: String,
    /// Match kind.
    pub match_kind: MatchKind,
    /// Width in bits (1 for validity keys).
    pub bitwidth: u32,
}

/// A match table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Fully qualified name.
    pub name: String,
    /// JSON id.
    pub id: i64,
    /// Table match type (`range` > `ternary` > `lpm` > `exact`).
    pub match_kind: MatchKind,
    /// Implementation.
    pub table_type: TableType,
    /// Whether entries can age.
    pub support_timeout: bool,
    /// Actions, fully qualified, in JSON order.
    pub actions: Vec<String>,
    /// Key fields in order.
    pub key: Vec<KeyField>,
    /// Action profile or selector of indirect tables.
    pub action_prof: Option<String>,
    /// Direct counter bound to this table, if any.
    pub direct_counter: Option<String>,
    /// Direct meter bound to this table, if any.
    pub direct_meter: Option<String>,
}

impl Table {
    /// Whether `action` (fully qualified) is one of the table's actions.
    pub fn has_action(&self, action: &str) -> bool {
        self.actions.iter().any(|a| a == action)
    }
}

/// An action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// Fully qualified name.
    pub name: String,
    /// JSON id.
    pub id: i64,
    /// Parameters: name and width in bits.
    pub params: Vec<(String, u32)>,
}

/// An action profile or action selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionProf {
    /// Fully qualified name.
    pub name: String,
    /// JSON id.
    pub id: i64,
    /// Action selector (groups allowed).
    pub with_selection: bool,
    /// Union of the actions of the tables using it.
    pub actions: BTreeSet<String>,
    /// Number of tables using it.
    pub ref_cnt: usize,
}

/// Whether a meter counts packets or bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MeterType {
    /// `packets`
    Packets,
    /// `bytes`
    Bytes,
}

/// A meter array (or a direct meter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeterArray {
    /// Fully qualified name.
    pub name: String,
    /// JSON id.
    pub id: i64,
    /// Unit.
    pub meter_type: MeterType,
    /// Number of meters (None for direct meters).
    pub size: Option<u64>,
    /// Table of a direct meter.
    pub binding: Option<String>,
    /// Number of rates (2 for v1model meters).
    pub rate_count: usize,
}

impl MeterArray {
    /// Direct meter (indexed by entry handle of `binding`).
    pub fn is_direct(&self) -> bool {
        self.binding.is_some()
    }
}

/// A counter array (or a direct counter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterArray {
    /// Fully qualified name.
    pub name: String,
    /// JSON id.
    pub id: i64,
    /// Number of counters (None for direct counters).
    pub size: Option<u64>,
    /// Table of a direct counter.
    pub binding: Option<String>,
}

impl CounterArray {
    /// Direct counter (indexed by entry handle of `binding`).
    pub fn is_direct(&self) -> bool {
        self.binding.is_some()
    }
}

/// A register array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterArray {
    /// Fully qualified name.
    pub name: String,
    /// JSON id.
    pub id: i64,
    /// Number of cells.
    pub size: u64,
    /// Cell width in bits.
    pub bitwidth: u32,
}

/// A parser value set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseVSet {
    /// Fully qualified name.
    pub name: String,
    /// JSON id.
    pub id: i64,
    /// `compressed_bitwidth`: width of the values.
    pub bitwidth: u32,
}

/// A learn list (digest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnList {
    /// Name.
    pub name: String,
    /// Id (the list id of digest messages).
    pub id: i64,
    /// Fields in order: `header.field` and width in bits. In a digest sample
    /// each field takes `ceil(width / 8)` bytes.
    pub fields: Vec<(String, u32)>,
}

impl LearnList {
    /// Size in bytes of one sample.
    pub fn sample_len(&self) -> usize {
        self.fields
            .iter()
            .map(|(_, w)| w.div_ceil(8) as usize)
            .sum()
    }
}

/// Kinds of named objects that commands can refer to by suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResType {
    /// Match tables.
    Table,
    /// Action profiles and selectors.
    ActionProf,
    /// Actions.
    Action,
    /// Meter arrays.
    MeterArray,
    /// Counter arrays.
    CounterArray,
    /// Register arrays.
    RegisterArray,
    /// Parser value sets.
    ParseVSet,
}

/// The program description used by the CLI and the STF translator.
#[derive(Debug, Clone, Default)]
pub struct Program {
    /// Tables by name.
    pub tables: BTreeMap<String, Table>,
    /// Actions by name.
    pub actions: BTreeMap<String, Action>,
    /// Action profiles by name.
    pub action_profs: BTreeMap<String, ActionProf>,
    /// Meter arrays by name.
    pub meter_arrays: BTreeMap<String, MeterArray>,
    /// Counter arrays by name.
    pub counter_arrays: BTreeMap<String, CounterArray>,
    /// Register arrays by name.
    pub register_arrays: BTreeMap<String, RegisterArray>,
    /// Parser value sets by name.
    pub parse_vsets: BTreeMap<String, ParseVSet>,
    /// Calculations using `crc16_custom` (16) or `crc32_custom` (32).
    pub custom_crc_calcs: BTreeMap<String, u32>,
    /// Learn lists by name.
    pub learn_lists: BTreeMap<String, LearnList>,
    /// Table names in JSON order (pipeline by pipeline).
    pub table_order: Vec<String>,
    /// Action names by JSON id.
    pub action_ids: BTreeMap<i64, String>,
    /// (kind, unique dotted suffix) -> fully qualified name.
    suffixes: HashMap<(ResType, String), String>,
}

fn get<'a>(v: &'a Value, key: &str, ctx: &str) -> Result<&'a Value, ProgramError> {
    match v.get(key) {
        Some(x) => Ok(x),
        None => err(format!("{ctx}: missing \"{key}\"")),
    }
}

fn get_str<'a>(v: &'a Value, key: &str, ctx: &str) -> Result<&'a str, ProgramError> {
    match get(v, key, ctx)?.as_str() {
        Some(s) => Ok(s),
        None => err(format!("{ctx}: \"{key}\" is not a string")),
    }
}

fn get_i64(v: &Value, key: &str, ctx: &str) -> Result<i64, ProgramError> {
    match get(v, key, ctx)?.as_i64() {
        Some(x) => Ok(x),
        None => err(format!("{ctx}: \"{key}\" is not an integer")),
    }
}

fn get_u64(v: &Value, key: &str, ctx: &str) -> Result<u64, ProgramError> {
    match get(v, key, ctx)?.as_u64() {
        Some(x) => Ok(x),
        None => err(format!("{ctx}: \"{key}\" is not a non-negative integer")),
    }
}

fn get_width(v: &Value, key: &str, ctx: &str) -> Result<u32, ProgramError> {
    let x = get_u64(v, key, ctx)?;
    match u32::try_from(x) {
        Ok(x) => Ok(x),
        Err(_) => err(format!("{ctx}: \"{key}\" is too large")),
    }
}

fn get_array<'a>(v: &'a Value, key: &str) -> Result<&'a [Value], ProgramError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => err(format!("\"{key}\" is not an array")),
    }
}

fn get_bool(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// Width of `header.field`, looked up like runtime_CLI.py does.
fn field_width(json: &Value, header: &str, field: &str) -> Result<u32, ProgramError> {
    let headers = get_array(json, "headers")?;
    let Some(h) = headers
        .iter()
        .find(|h| h.get("name").and_then(Value::as_str) == Some(header))
    else {
        return err(format!("unknown header {header}"));
    };
    let ht = get_str(h, "header_type", header)?;
    let types = get_array(json, "header_types")?;
    let Some(t) = types
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(ht))
    else {
        return err(format!("unknown header type {ht}"));
    };
    for f in get_array(t, "fields")? {
        if f.get(0).and_then(Value::as_str) == Some(field) {
            return match f
                .get(1)
                .and_then(Value::as_u64)
                .and_then(|w| u32::try_from(w).ok())
            {
                Some(w) => Ok(w),
                None => err(format!("field {header}.{field} has no fixed width")),
            };
        }
    }
    err(format!("unknown field {header}.{field}"))
}

impl Program {
    /// Reads a bmv2 JSON document.
    pub fn from_json_str(text: &str) -> Result<Program, ProgramError> {
        let json: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => return err(format!("not JSON: {e}")),
        };
        Program::from_json(&json)
    }

    /// Reads a parsed bmv2 JSON document.
    pub fn from_json(json: &Value) -> Result<Program, ProgramError> {
        let mut p = Program::default();
        for a in get_array(json, "actions")? {
            let name = get_str(a, "name", "action")?.to_string();
            let id = get_i64(a, "id", &name)?;
            let mut params = Vec::new();
            for rd in get_array(a, "runtime_data")? {
                params.push((
                    get_str(rd, "name", &name)?.to_string(),
                    get_width(rd, "bitwidth", &name)?,
                ));
            }
            p.action_ids.insert(id, name.clone());
            p.actions.insert(name.clone(), Action { name, id, params });
        }

        for pipe in get_array(json, "pipelines")? {
            for ap in get_array(pipe, "action_profiles")? {
                let name = get_str(ap, "name", "action profile")?.to_string();
                let id = get_i64(ap, "id", &name)?;
                let with_selection = ap.get("selector").is_some_and(|s| !s.is_null());
                p.action_profs.insert(
                    name.clone(),
                    ActionProf {
                        name,
                        id,
                        with_selection,
                        actions: BTreeSet::new(),
                        ref_cnt: 0,
                    },
                );
            }
            for t in get_array(pipe, "tables")? {
                let table = p.read_table(json, t)?;
                p.table_order.push(table.name.clone());
                p.tables.insert(table.name.clone(), table);
            }
        }

        for m in get_array(json, "meter_arrays")? {
            let name = get_str(m, "name", "meter array")?.to_string();
            let id = get_i64(m, "id", &name)?;
            let meter_type = match get_str(m, "type", &name)? {
                "packets" => MeterType::Packets,
                "bytes" => MeterType::Bytes,
                other => return err(format!("{name}: unknown meter type {other}")),
            };
            let is_direct = get_bool(m, "is_direct");
            let binding = if is_direct {
                Some(get_str(m, "binding", &name)?.to_string())
            } else {
                None
            };
            let size = if is_direct {
                None
            } else {
                Some(get_u64(m, "size", &name)?)
            };
            let rate_count = usize::try_from(get_u64(m, "rate_count", &name)?)
                .map_err(|_| ProgramError(format!("{name}: bad rate_count")))?;
            if let Some(t) = binding.as_ref().and_then(|b| p.tables.get_mut(b)) {
                t.direct_meter = Some(name.clone());
            }
            p.meter_arrays.insert(
                name.clone(),
                MeterArray {
                    name,
                    id,
                    meter_type,
                    size,
                    binding,
                    rate_count,
                },
            );
        }

        for c in get_array(json, "counter_arrays")? {
            let name = get_str(c, "name", "counter array")?.to_string();
            let id = get_i64(c, "id", &name)?;
            let is_direct = get_bool(c, "is_direct");
            let binding = if is_direct {
                Some(get_str(c, "binding", &name)?.to_string())
            } else {
                None
            };
            let size = if is_direct {
                None
            } else {
                Some(get_u64(c, "size", &name)?)
            };
            if let Some(t) = binding.as_ref().and_then(|b| p.tables.get_mut(b)) {
                t.direct_counter = Some(name.clone());
            }
            p.counter_arrays.insert(
                name.clone(),
                CounterArray {
                    name,
                    id,
                    size,
                    binding,
                },
            );
        }

        for r in get_array(json, "register_arrays")? {
            let name = get_str(r, "name", "register array")?.to_string();
            let id = get_i64(r, "id", &name)?;
            let size = get_u64(r, "size", &name)?;
            let bitwidth = get_width(r, "bitwidth", &name)?;
            p.register_arrays.insert(
                name.clone(),
                RegisterArray {
                    name,
                    id,
                    size,
                    bitwidth,
                },
            );
        }

        for c in get_array(json, "calculations")? {
            let name = get_str(c, "name", "calculation")?;
            match c.get("algo").and_then(Value::as_str) {
                Some("crc16_custom") => {
                    p.custom_crc_calcs.insert(name.to_string(), 16);
                }
                Some("crc32_custom") => {
                    p.custom_crc_calcs.insert(name.to_string(), 32);
                }
                _ => {}
            }
        }

        for v in get_array(json, "parse_vsets")? {
            let name = get_str(v, "name", "parse_vset")?.to_string();
            let id = get_i64(v, "id", &name)?;
            let bitwidth = get_width(v, "compressed_bitwidth", &name)?;
            p.parse_vsets
                .insert(name.clone(), ParseVSet { name, id, bitwidth });
        }

        for l in get_array(json, "learn_lists")? {
            let name = get_str(l, "name", "learn list")?.to_string();
            let id = get_i64(l, "id", &name)?;
            let mut fields = Vec::new();
            for e in get_array(l, "elements")? {
                let target = get(e, "value", &name)?;
                let (Some(h), Some(f)) = (
                    target.get(0).and_then(Value::as_str),
                    target.get(1).and_then(Value::as_str),
                ) else {
                    return err(format!("{name}: learn list element is not a field"));
                };
                fields.push((format!("{h}.{f}"), field_width(json, h, f)?));
            }
            p.learn_lists
                .insert(name.clone(), LearnList { name, id, fields });
        }

        p.build_suffixes();
        Ok(p)
    }

    fn read_table(&mut self, json: &Value, t: &Value) -> Result<Table, ProgramError> {
        let name = get_str(t, "name", "table")?.to_string();
        let id = get_i64(t, "id", &name)?;
        let mk = get_str(t, "match_type", &name)?;
        let Some(match_kind) = MatchKind::from_json(mk) else {
            return err(format!("{name}: unknown match type {mk}"));
        };
        let table_type = match get_str(t, "type", &name)? {
            "simple" => TableType::Simple,
            "indirect" => TableType::Indirect,
            "indirect_ws" => TableType::IndirectWs,
            other => return err(format!("{name}: unknown table type {other}")),
        };
        let support_timeout = get_bool(t, "support_timeout");
        let mut actions = Vec::new();
        for a in get_array(t, "actions")? {
            let Some(a) = a.as_str() else {
                return err(format!("{name}: action name is not a string"));
            };
            if !self.actions.contains_key(a) {
                return err(format!("{name}: unknown action {a}"));
            }
            actions.push(a.to_string());
        }

        let mut action_prof = None;
        if table_type != TableType::Simple {
            let ap_name = if let Some(ap) = t.get("action_profile").and_then(Value::as_str) {
                ap.to_string()
            } else if let Some(ap) = t.get("act_prof_name").and_then(Value::as_str) {
                // Legacy JSON: the profile is declared by the table itself.
                let ap = ap.to_string();
                self.action_profs
                    .entry(ap.clone())
                    .or_insert_with(|| ActionProf {
                        name: ap.clone(),
                        id,
                        with_selection: t.get("selector").is_some_and(|s| !s.is_null()),
                        actions: BTreeSet::new(),
                        ref_cnt: 0,
                    });
                ap
            } else {
                return err(format!("{name}: indirect table without action profile"));
            };
            let Some(ap) = self.action_profs.get_mut(&ap_name) else {
                return err(format!("{name}: unknown action profile {ap_name}"));
            };
            ap.actions.extend(actions.iter().cloned());
            ap.ref_cnt += 1;
            action_prof = Some(ap_name);
        }

        let mut key = Vec::new();
        for k in get_array(t, "key")? {
            let kmt = get_str(k, "match_type", &name)?;
            let Some(match_kind) = MatchKind::from_json(kmt) else {
                return err(format!("{name}: unknown key match type {kmt}"));
            };
            let target = get(k, "target", &name)?;
            let (cli_name, bitwidth, target_str) = if match_kind == MatchKind::Valid {
                let Some(h) = target.as_str() else {
                    return err(format!("{name}: valid key target is not a header name"));
                };
                (format!("{h}_valid"), 1, h.to_string())
            } else {
                let (Some(h), Some(f)) = (
                    target.get(0).and_then(Value::as_str),
                    target.get(1).and_then(Value::as_str),
                ) else {
                    return err(format!("{name}: key target is not [header, field]"));
                };
                if f == "$valid$" {
                    (format!("{h}_valid"), 1, format!("{h}.{f}"))
                } else {
                    (
                        format!("{h}.{f}"),
                        field_width(json, h, f)?,
                        format!("{h}.{f}"),
                    )
                }
            };
            let stf_name = match k.get("name").and_then(Value::as_str) {
                Some(n) => n.to_string(),
                None => target_str,
            };
            key.push(KeyField {
                cli_name,
                stf_name,
                match_kind,
                bitwidth,
            });
        }

        Ok(Table {
            name,
            id,
            match_kind,
            table_type,
            support_timeout,
            actions,
            key,
            action_prof,
            direct_counter: None,
            direct_meter: None,
        })
    }

    fn build_suffixes(&mut self) {
        let mut all: Vec<(ResType, &String)> = Vec::new();
        all.extend(self.tables.keys().map(|n| (ResType::Table, n)));
        all.extend(self.action_profs.keys().map(|n| (ResType::ActionProf, n)));
        all.extend(self.actions.keys().map(|n| (ResType::Action, n)));
        all.extend(self.meter_arrays.keys().map(|n| (ResType::MeterArray, n)));
        all.extend(
            self.counter_arrays
                .keys()
                .map(|n| (ResType::CounterArray, n)),
        );
        all.extend(
            self.register_arrays
                .keys()
                .map(|n| (ResType::RegisterArray, n)),
        );
        all.extend(self.parse_vsets.keys().map(|n| (ResType::ParseVSet, n)));
        let mut count: HashMap<(ResType, String), (usize, String)> = HashMap::new();
        for (kind, name) in all {
            // Every dotted suffix, the full name included; a suffix claimed by
            // two objects of the same kind names neither (as in the CLI, even
            // when it is one object's full name).
            let parts: Vec<&str> = name.split('.').collect();
            for start in (0..parts.len()).rev() {
                let suffix = parts[start..].join(".");
                let e = count.entry((kind, suffix)).or_insert((0, name.clone()));
                e.0 += 1;
            }
        }
        self.suffixes = count
            .into_iter()
            .filter(|(_, (n, _))| *n == 1)
            .map(|(k, (_, name))| (k, name))
            .collect();
    }

    /// Resolves a user-given name (any unique dotted suffix) to the fully
    /// qualified name, like simple_switch_CLI.
    pub fn resolve(&self, kind: ResType, name: &str) -> Option<&str> {
        self.suffixes
            .get(&(kind, name.to_string()))
            .map(String::as_str)
    }

    /// The table named by `name` (unique dotted suffix).
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.resolve(ResType::Table, name)
            .and_then(|n| self.tables.get(n))
    }

    /// The action named by `name` (unique dotted suffix among all actions).
    pub fn action(&self, name: &str) -> Option<&Action> {
        self.resolve(ResType::Action, name)
            .and_then(|n| self.actions.get(n))
    }

    /// The action profile named by `name`.
    pub fn action_prof(&self, name: &str) -> Option<&ActionProf> {
        self.resolve(ResType::ActionProf, name)
            .and_then(|n| self.action_profs.get(n))
    }

    /// The counter array named by `name`.
    pub fn counter_array(&self, name: &str) -> Option<&CounterArray> {
        self.resolve(ResType::CounterArray, name)
            .and_then(|n| self.counter_arrays.get(n))
    }

    /// The meter array named by `name`.
    pub fn meter_array(&self, name: &str) -> Option<&MeterArray> {
        self.resolve(ResType::MeterArray, name)
            .and_then(|n| self.meter_arrays.get(n))
    }

    /// The register array named by `name`.
    pub fn register_array(&self, name: &str) -> Option<&RegisterArray> {
        self.resolve(ResType::RegisterArray, name)
            .and_then(|n| self.register_arrays.get(n))
    }

    /// The parser value set named by `name`.
    pub fn parse_vset(&self, name: &str) -> Option<&ParseVSet> {
        self.resolve(ResType::ParseVSet, name)
            .and_then(|n| self.parse_vsets.get(n))
    }

    /// The learn list with this id.
    pub fn learn_list_by_id(&self, id: i64) -> Option<&LearnList> {
        self.learn_lists.values().find(|l| l.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: &str = r#"{
      "header_types": [
        {"name": "ethernet_t", "id": 0, "fields": [["dst", 48, false], ["src", 48, false], ["type", 16, false]]},
        {"name": "standard_metadata", "id": 1, "fields": [["ingress_port", 9, false], ["_padding", 7, false]]}
      ],
      "headers": [
        {"name": "ethernet", "id": 0, "header_type": "ethernet_t", "metadata": false},
        {"name": "standard_metadata", "id": 1, "header_type": "standard_metadata", "metadata": true}
      ],
      "actions": [
        {"name": "NoAction", "id": 0, "runtime_data": [], "primitives": []},
        {"name": "I.fwd", "id": 1, "runtime_data": [{"name": "port", "bitwidth": 9}], "primitives": []},
        {"name": "E.fwd", "id": 2, "runtime_data": [], "primitives": []},
        {"name": "drop", "id": 3, "runtime_data": [], "primitives": []},
        {"name": "I.drop", "id": 4, "runtime_data": [], "primitives": []}
      ],
      "pipelines": [
        {"name": "ingress", "id": 0, "init_table": "I.t", "action_profiles": [], "conditionals": [],
         "tables": [
          {"name": "I.t", "id": 0, "key": [
              {"match_type": "exact", "name": "hdr.ethernet.dst", "target": ["ethernet", "dst"], "mask": null},
              {"match_type": "ternary", "name": "hdr.ethernet.$valid$", "target": ["ethernet", "$valid$"], "mask": null}],
           "match_type": "ternary", "type": "simple", "max_size": 16, "with_counters": false,
           "support_timeout": false, "direct_meters": null, "action_ids": [1, 0], "actions": ["I.fwd", "NoAction"],
           "next_tables": {}, "default_entry": {"action_id": 0, "action_const": false, "action_data": [], "action_entry_const": false}}
        ]},
        {"name": "egress", "id": 1, "init_table": "E.t", "action_profiles": [], "conditionals": [],
         "tables": [
          {"name": "E.t", "id": 1, "key": [{"match_type": "exact", "target": ["standard_metadata", "ingress_port"], "mask": null}],
           "match_type": "exact", "type": "simple", "max_size": 16, "with_counters": false,
           "support_timeout": false, "direct_meters": null, "action_ids": [2], "actions": ["E.fwd"],
           "next_tables": {}}
        ]}
      ]
    }"#;

    #[test]
    fn reads_tables_and_suffixes() {
        let p = Program::from_json_str(JSON).unwrap();
        let t = p.table("I.t").unwrap();
        assert_eq!(t.match_kind, MatchKind::Ternary);
        assert_eq!(t.key[0].cli_name, "ethernet.dst");
        assert_eq!(t.key[0].stf_name, "hdr.ethernet.dst");
        assert_eq!(t.key[0].bitwidth, 48);
        assert_eq!(t.key[1].cli_name, "ethernet_valid");
        assert_eq!(t.key[1].bitwidth, 1);
        assert_eq!(p.table("E.t").unwrap().key[0].bitwidth, 9);
        assert_eq!(
            p.table("E.t").unwrap().key[0].stf_name,
            "standard_metadata.ingress_port"
        );
        // "t" is ambiguous between I.t and E.t.
        assert!(p.table("t").is_none());
        assert!(p.action("fwd").is_none());
        assert_eq!(
            p.action("I.fwd").unwrap().params,
            vec![("port".to_string(), 9)]
        );
        // "drop" is the full name of one action and a suffix of another:
        // like simple_switch_CLI, neither can be named "drop".
        assert!(p.action("drop").is_none());
        assert!(p.action("I.drop").is_some());
        assert!(p.action("NoAction").is_some());
    }

    #[test]
    fn rejects_bad_json() {
        assert!(Program::from_json_str("{").is_err());
        assert!(Program::from_json_str(r#"{"actions": [{"name": 3}]}"#).is_err());
        assert!(Program::from_json_str("{}").is_ok());
    }
}
