//! Serde model of the bmv2 JSON format (format 2.x) exactly as p4c's bmv2 back end writes it.
//!
//! The model is structural only: it knows the shape of every top-level key of the format
//! (bmv2 `docs/JSON_format.md`) and nothing of its meaning. Expressions, primitive
//! parameters and other polymorphic values are kept as [`serde_json::Value`] and are
//! interpreted by `p4jet-ir`, which reports semantic errors with the JSON path of the
//! offending object. Unknown keys are ignored, as bmv2 ignores them.
#![forbid(unsafe_code)]

use serde::Deserialize;
use serde_json::Value;

/// A load error: what went wrong and where in the document.
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    /// The text is not JSON, or a value has the wrong shape for the bmv2 format.
    #[error("invalid bmv2 JSON at `{path}`: {message}")]
    Shape {
        /// JSON path of the offending value (e.g. `pipelines[0].tables[2].key`).
        path: String,
        /// What serde found wrong there.
        message: String,
    },
    /// The format version is one this switch does not read.
    #[error("unsupported bmv2 JSON version {major}.{minor} at `__meta__.version` (need 2.x)")]
    Version {
        /// Major version found.
        major: i64,
        /// Minor version found.
        minor: i64,
    },
}

/// Parses a bmv2 JSON document.
pub fn parse(text: &str) -> Result<Program, JsonError> {
    if !text.trim_start().starts_with('{') {
        return Err(JsonError::Shape {
            path: ".".into(),
            message: "the document must be a JSON object".into(),
        });
    }
    let de = &mut serde_json::Deserializer::from_str(text);
    let program: Program = serde_path_to_error::deserialize(de).map_err(|e| JsonError::Shape {
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })?;
    if let Some(meta) = &program.meta
        && let Some(v) = &meta.version
    {
        let major = v.first().copied().unwrap_or(0);
        let minor = v.get(1).copied().unwrap_or(0);
        if major != 2 {
            return Err(JsonError::Version { major, minor });
        }
    }
    Ok(program)
}

/// The whole document.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct Program {
    /// `header_types`
    pub header_types: Vec<HeaderType>,
    /// `headers`
    pub headers: Vec<Header>,
    /// `header_stacks`
    pub header_stacks: Vec<HeaderStack>,
    /// `header_union_types`
    pub header_union_types: Vec<HeaderUnionType>,
    /// `header_unions`
    pub header_unions: Vec<HeaderUnion>,
    /// `header_union_stacks`
    pub header_union_stacks: Vec<HeaderUnionStack>,
    /// `field_lists`
    pub field_lists: Vec<FieldList>,
    /// `errors`: `[name, value]` pairs.
    pub errors: Vec<(String, i64)>,
    /// `enums` (informational).
    pub enums: Vec<Value>,
    /// `parsers`
    pub parsers: Vec<Parser>,
    /// `parse_vsets`
    pub parse_vsets: Vec<ParseVset>,
    /// `deparsers`
    pub deparsers: Vec<Deparser>,
    /// `meter_arrays`
    pub meter_arrays: Vec<MeterArray>,
    /// `counter_arrays`
    pub counter_arrays: Vec<CounterArray>,
    /// `register_arrays`
    pub register_arrays: Vec<RegisterArray>,
    /// `calculations`
    pub calculations: Vec<Calculation>,
    /// `learn_lists`
    pub learn_lists: Vec<LearnList>,
    /// `actions`
    pub actions: Vec<Action>,
    /// `pipelines`
    pub pipelines: Vec<Pipeline>,
    /// `checksums`
    pub checksums: Vec<Checksum>,
    /// `force_arith` (legacy, ignored).
    pub force_arith: Vec<Value>,
    /// `extern_instances`
    pub extern_instances: Vec<ExternInstance>,
    /// `field_aliases`: `[alias, [header, field]]`.
    pub field_aliases: Vec<(String, (String, String))>,
    /// `config_options`
    pub config_options: Option<Value>,
    /// `program`: source file name.
    pub program: Option<String>,
    /// `__meta__`
    #[serde(rename = "__meta__")]
    pub meta: Option<Meta>,
}

/// `__meta__`
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct Meta {
    /// `[major, minor]`
    pub version: Option<Vec<i64>>,
    /// Compiler identification.
    pub compiler: Option<String>,
}

/// One field of a header type: `[name, width or "*", signed?, saturating?]`.
#[derive(Debug, Clone)]
pub struct FieldDecl {
    /// Field name.
    pub name: String,
    /// Width in bits; `None` for the varbit field (`"*"`).
    pub width: Option<u32>,
    /// Signed (`int<W>`).
    pub signed: bool,
    /// Saturating arithmetic (legacy; ignored by bmv2 simple_switch).
    pub saturating: bool,
}

impl<'de> Deserialize<'de> for FieldDecl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v: Vec<Value> = Vec::deserialize(d)?;
        let name = v
            .first()
            .and_then(Value::as_str)
            .ok_or_else(|| D::Error::custom("field declaration needs a name string first"))?
            .to_string();
        let width = match v.get(1) {
            Some(Value::Number(n)) => Some(
                n.as_u64()
                    .and_then(|w| u32::try_from(w).ok())
                    .filter(|w| *w > 0)
                    .ok_or_else(|| D::Error::custom(format!("field `{name}`: bad width {n}")))?,
            ),
            Some(Value::String(s)) if s == "*" => None,
            _ => {
                return Err(D::Error::custom(format!(
                    "field `{name}`: width must be a number or \"*\""
                )));
            }
        };
        let signed = v.get(2).and_then(Value::as_bool).unwrap_or(false);
        let saturating = v.get(3).and_then(Value::as_bool).unwrap_or(false);
        Ok(FieldDecl {
            name,
            width,
            signed,
            saturating,
        })
    }
}

/// `header_types[]`
#[derive(Debug, Clone, Deserialize)]
pub struct HeaderType {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Fields in wire order.
    pub fields: Vec<FieldDecl>,
    /// Maximum length in bytes (varbit headers).
    #[serde(default)]
    pub max_length: Option<u32>,
    /// Length expression (legacy P4_14 varbit headers).
    #[serde(default)]
    pub length_exp: Option<Value>,
}

/// `headers[]`
#[derive(Debug, Clone, Deserialize)]
pub struct Header {
    /// Instance name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Header type name.
    pub header_type: String,
    /// Metadata (always valid) or packet header.
    #[serde(default)]
    pub metadata: bool,
    /// Omitted from P4Info.
    #[serde(default)]
    pub pi_omit: bool,
}

/// `header_stacks[]`
#[derive(Debug, Clone, Deserialize)]
pub struct HeaderStack {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Element header type.
    pub header_type: String,
    /// Element header instance ids in index order.
    pub header_ids: Vec<i64>,
    /// Number of elements (informational).
    #[serde(default)]
    pub size: Option<u32>,
}

/// `header_union_types[]`
#[derive(Debug, Clone, Deserialize)]
pub struct HeaderUnionType {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// `[member name, header type]`
    pub headers: Vec<(String, String)>,
}

/// `header_unions[]`
#[derive(Debug, Clone, Deserialize)]
pub struct HeaderUnion {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Union type name.
    pub union_type: String,
    /// Member header instance ids, in member order.
    pub header_ids: Vec<i64>,
}

/// `header_union_stacks[]`
#[derive(Debug, Clone, Deserialize)]
pub struct HeaderUnionStack {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Union type name.
    pub union_type: String,
    /// Union instance ids in index order.
    pub header_union_ids: Vec<i64>,
}

/// `field_lists[]`
#[derive(Debug, Clone, Deserialize)]
pub struct FieldList {
    /// Id (1-based for p4c's `@field_list`).
    pub id: i64,
    /// Name.
    pub name: String,
    /// `{type: "field"|"hexstr", value}` elements.
    #[serde(default)]
    pub elements: Vec<Value>,
}

/// `parsers[]`
#[derive(Debug, Clone, Deserialize)]
pub struct Parser {
    /// Name (`parser` for simple_switch).
    pub name: String,
    /// Id.
    pub id: i64,
    /// Initial state name.
    pub init_state: String,
    /// States.
    pub parse_states: Vec<ParseState>,
}

/// A parser state.
#[derive(Debug, Clone, Deserialize)]
pub struct ParseState {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Operations in order.
    #[serde(default)]
    pub parser_ops: Vec<ParserOp>,
    /// Select key elements.
    #[serde(default)]
    pub transition_key: Vec<Value>,
    /// Transitions tried in order.
    #[serde(default)]
    pub transitions: Vec<Transition>,
}

/// One parser operation.
#[derive(Debug, Clone, Deserialize)]
pub struct ParserOp {
    /// `extract`, `extract_VL`, `set`, `verify`, `shift`, `advance`, `primitive`.
    pub op: String,
    /// Operands.
    #[serde(default)]
    pub parameters: Vec<Value>,
}

/// One transition.
#[derive(Debug, Clone, Deserialize)]
pub struct Transition {
    /// `hexstr`, `default`, `parse_vset` (missing in legacy JSON).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Value (hex string, vset name, `"default"` in legacy form, or null).
    #[serde(default)]
    pub value: Value,
    /// Mask (hex string or null).
    #[serde(default)]
    pub mask: Value,
    /// Next state name; null = accept.
    #[serde(default)]
    pub next_state: Option<String>,
}

/// `parse_vsets[]`
#[derive(Debug, Clone, Deserialize)]
pub struct ParseVset {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Width of values in bits.
    pub compressed_bitwidth: u32,
    /// Maximum number of values.
    #[serde(default)]
    pub max_size: Option<u32>,
}

/// `deparsers[]`
#[derive(Debug, Clone, Deserialize)]
pub struct Deparser {
    /// Name (`deparser`).
    pub name: String,
    /// Id.
    pub id: i64,
    /// Header instance names in emit order.
    pub order: Vec<String>,
    /// Primitives run by the deparser (rare).
    #[serde(default)]
    pub primitives: Vec<Value>,
}

/// `meter_arrays[]`
#[derive(Debug, Clone, Deserialize)]
pub struct MeterArray {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// `bytes` or `packets`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Number of rates (2 for trTCM).
    #[serde(default = "two")]
    pub rate_count: u32,
    /// Number of cells.
    #[serde(default)]
    pub size: u32,
    /// Attached to a table.
    #[serde(default)]
    pub is_direct: bool,
    /// Table name when direct.
    #[serde(default)]
    pub binding: Option<String>,
    /// `[header, field]` receiving the color when direct.
    #[serde(default)]
    pub result_target: Option<(String, String)>,
}

fn two() -> u32 {
    2
}

/// `counter_arrays[]`
#[derive(Debug, Clone, Deserialize)]
pub struct CounterArray {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Number of cells.
    #[serde(default)]
    pub size: u32,
    /// Attached to a table.
    #[serde(default)]
    pub is_direct: bool,
    /// Table name when direct.
    #[serde(default)]
    pub binding: Option<String>,
}

/// `register_arrays[]`
#[derive(Debug, Clone, Deserialize)]
pub struct RegisterArray {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Number of cells.
    pub size: u32,
    /// Cell width in bits.
    pub bitwidth: u32,
}

/// `calculations[]`
#[derive(Debug, Clone, Deserialize)]
pub struct Calculation {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Algorithm name (`crc16`, `csum16`, ...).
    pub algo: String,
    /// Inputs: `{type: field|hexstr|header|payload, value, bitwidth?}`.
    #[serde(default)]
    pub input: Vec<Value>,
}

/// `learn_lists[]`
#[derive(Debug, Clone, Deserialize)]
pub struct LearnList {
    /// Id (1-based).
    pub id: i64,
    /// Name.
    pub name: String,
    /// `{type: "field", value: [h, f]}` elements.
    #[serde(default)]
    pub elements: Vec<Value>,
}

/// `actions[]`
#[derive(Debug, Clone, Deserialize)]
pub struct Action {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Parameters.
    #[serde(default)]
    pub runtime_data: Vec<RuntimeData>,
    /// Primitive calls in order.
    #[serde(default)]
    pub primitives: Vec<Primitive>,
}

/// An action parameter.
#[derive(Debug, Clone, Deserialize)]
pub struct RuntimeData {
    /// Name.
    pub name: String,
    /// Width in bits.
    pub bitwidth: u32,
}

/// A primitive call.
#[derive(Debug, Clone, Deserialize)]
pub struct Primitive {
    /// Primitive name.
    pub op: String,
    /// Operands.
    #[serde(default)]
    pub parameters: Vec<Value>,
    /// Source position (logging).
    #[serde(default)]
    pub source_info: Option<SourceInfo>,
}

/// `source_info`
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct SourceInfo {
    /// File.
    pub filename: String,
    /// Line.
    pub line: i64,
    /// Column.
    pub column: i64,
    /// The source text.
    pub source_fragment: String,
}

/// `pipelines[]`
#[derive(Debug, Clone, Deserialize)]
pub struct Pipeline {
    /// `ingress` or `egress`.
    pub name: String,
    /// Id.
    pub id: i64,
    /// First node, null = empty control.
    #[serde(default)]
    pub init_table: Option<String>,
    /// Action profiles and selectors.
    #[serde(default)]
    pub action_profiles: Vec<ActionProfile>,
    /// Tables.
    #[serde(default)]
    pub tables: Vec<Table>,
    /// Conditionals.
    #[serde(default)]
    pub conditionals: Vec<Conditional>,
    /// Action calls.
    #[serde(default)]
    pub action_calls: Vec<ActionCall>,
}

/// An action profile (with `selector` for action selectors).
#[derive(Debug, Clone, Deserialize)]
pub struct ActionProfile {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Maximum members.
    #[serde(default)]
    pub max_size: u32,
    /// Selector.
    #[serde(default)]
    pub selector: Option<Selector>,
}

/// An action selector's hash.
#[derive(Debug, Clone, Deserialize)]
pub struct Selector {
    /// Hash algorithm.
    pub algo: String,
    /// Fields hashed, in key order.
    #[serde(default)]
    pub input: Vec<Value>,
}

/// A match table.
#[derive(Debug, Clone, Deserialize)]
pub struct Table {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Key elements.
    #[serde(default)]
    pub key: Vec<KeyElement>,
    /// Table match type.
    #[serde(default)]
    pub match_type: Option<String>,
    /// `simple`, `indirect`, `indirect_ws`.
    #[serde(rename = "type", default = "simple")]
    pub kind: String,
    /// Capacity.
    #[serde(default)]
    pub max_size: u32,
    /// Direct counters attached.
    #[serde(default)]
    pub with_counters: bool,
    /// Idle timeout support.
    #[serde(default)]
    pub support_timeout: bool,
    /// Direct meter array name.
    #[serde(default)]
    pub direct_meters: Option<String>,
    /// Action ids (parallel to `actions`).
    #[serde(default)]
    pub action_ids: Option<Vec<i64>>,
    /// Action names.
    #[serde(default)]
    pub actions: Vec<String>,
    /// Next node per action name, or `__HIT__`/`__MISS__`.
    #[serde(default)]
    pub next_tables: serde_json::Map<String, Value>,
    /// Next node on a miss without default action.
    #[serde(default)]
    pub base_default_next: Option<String>,
    /// Default entry.
    #[serde(default)]
    pub default_entry: Option<DefaultEntry>,
    /// Const entries.
    #[serde(default)]
    pub entries: Option<Vec<ConstEntry>>,
    /// Action profile name (indirect tables).
    #[serde(default)]
    pub action_profile: Option<String>,
    /// Legacy action profile name.
    #[serde(default)]
    pub act_prof_name: Option<String>,
}

fn simple() -> String {
    "simple".into()
}

/// A key element.
#[derive(Debug, Clone, Deserialize)]
pub struct KeyElement {
    /// `exact`, `lpm`, `ternary`, `range`, `valid`, `optional`.
    pub match_type: String,
    /// `[header, field]`, or a header name for `valid`.
    pub target: Value,
    /// Static mask (hex string) or null.
    #[serde(default)]
    pub mask: Option<String>,
    /// Name shown to the control plane.
    #[serde(default)]
    pub name: Option<String>,
}

/// `default_entry`
#[derive(Debug, Clone, Deserialize)]
pub struct DefaultEntry {
    /// Action id.
    pub action_id: i64,
    /// The action may not be changed.
    #[serde(default)]
    pub action_const: bool,
    /// Hex strings, one per parameter.
    #[serde(default)]
    pub action_data: Vec<String>,
    /// The whole entry may not be changed.
    #[serde(default)]
    pub action_entry_const: bool,
}

/// A `const entries` element.
#[derive(Debug, Clone, Deserialize)]
pub struct ConstEntry {
    /// Per key element.
    pub match_key: Vec<ConstMatch>,
    /// Action.
    pub action_entry: ConstAction,
    /// Priority (smaller wins).
    #[serde(default)]
    pub priority: Option<i64>,
}

/// A const entry key element.
#[derive(Debug, Clone, Deserialize)]
pub struct ConstMatch {
    /// Match kind.
    pub match_type: String,
    /// Value (exact, lpm, ternary).
    #[serde(default)]
    pub key: Option<String>,
    /// Mask (ternary).
    #[serde(default)]
    pub mask: Option<String>,
    /// Prefix length (lpm).
    #[serde(default)]
    pub prefix_length: Option<u32>,
    /// Range start.
    #[serde(default)]
    pub start: Option<String>,
    /// Range end.
    #[serde(default)]
    pub end: Option<String>,
}

/// A const entry's action.
#[derive(Debug, Clone, Deserialize)]
pub struct ConstAction {
    /// Action id.
    pub action_id: i64,
    /// Parameters as hex strings.
    #[serde(default)]
    pub action_data: Vec<String>,
}

/// A conditional node.
#[derive(Debug, Clone, Deserialize)]
pub struct Conditional {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Boolean expression.
    pub expression: Value,
    /// Next node when true.
    #[serde(default)]
    pub true_next: Option<String>,
    /// Next node when false.
    #[serde(default)]
    pub false_next: Option<String>,
    /// Source position (logging).
    #[serde(default)]
    pub source_info: Option<SourceInfo>,
}

/// An action call node.
#[derive(Debug, Clone, Deserialize)]
pub struct ActionCall {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Action to run.
    pub action_id: i64,
    /// Next node.
    #[serde(default)]
    pub next_node: Option<String>,
}

/// `checksums[]`
#[derive(Debug, Clone, Deserialize)]
pub struct Checksum {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// `[header, field]` holding the checksum.
    pub target: (String, String),
    /// `generic` or legacy `ipv4`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Calculation name.
    pub calculation: String,
    /// Verified at the end of parsing.
    #[serde(default = "yes")]
    pub verify: bool,
    /// Updated at the start of deparsing.
    #[serde(default = "yes")]
    pub update: bool,
    /// Condition (null = always).
    #[serde(default)]
    pub if_cond: Option<Value>,
}

fn yes() -> bool {
    true
}

/// `extern_instances[]`
#[derive(Debug, Clone, Deserialize)]
pub struct ExternInstance {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Extern type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Attributes.
    #[serde(default)]
    pub attribute_values: Vec<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_error_names_path() {
        let err = parse(r#"{"header_types":[{"name":"h","id":0,"fields":[["f","x"]]}]}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("header_types[0]"), "{err}");
    }

    #[test]
    fn version_checked() {
        let err = parse(r#"{"__meta__":{"version":[3,0]}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("3.0"), "{err}");
        assert!(parse(r#"{"__meta__":{"version":[2,23]}}"#).is_ok());
    }

    #[test]
    fn not_json() {
        assert!(parse("{").is_err());
        assert!(parse("[]").is_err());
    }
}
