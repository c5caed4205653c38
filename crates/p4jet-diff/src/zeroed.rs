//! A program whose headers start every packet with zero fields.
//!
//! bmv2 recycles packet header vectors: a header the parser does not extract keeps,
//! invalid, the field values some earlier packet left in it, and a program that reads
//! fields of invalid headers (p4c does not forbid it) sees them. p4jet starts every
//! packet from zeros. Which earlier packet bmv2's stale values come from depends on
//! its threads' timing, so no switch can match it frame for frame. To tell such
//! differences from real ones, the harness plays a chunk again with this variant of
//! the program on both switches: a first parser state that sets every field of every
//! non-metadata header to zero (a parser `set` writes a field whatever the header's
//! validity, in bmv2 as in p4jet), then goes on to the real start state. Whatever
//! still differs is not stale state.

use serde_json::{Value, json};

/// Name of the added start state.
pub const ZERO_STATE: &str = "p4jet_diff_zero";

/// The JSON text of `json` with a zeroing start state in front of every parser.
pub fn zeroed_program(json: &str) -> Result<String, String> {
    let mut v: Value = serde_json::from_str(json).map_err(|e| format!("program JSON: {e}"))?;
    let mut widths: std::collections::HashMap<String, Vec<String>> = Default::default();
    for t in v["header_types"].as_array().into_iter().flatten() {
        let Some(name) = t["name"].as_str() else {
            continue;
        };
        let fields = t["fields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f[1].is_u64()) // varbit fields ("*") are left as they are
            .filter_map(|f| f[0].as_str().map(str::to_string))
            .collect();
        widths.insert(name.to_string(), fields);
    }
    let mut ops = vec![];
    for h in v["headers"].as_array().into_iter().flatten() {
        if h["metadata"].as_bool().unwrap_or(false) {
            continue;
        }
        let (Some(name), Some(ty)) = (h["name"].as_str(), h["header_type"].as_str()) else {
            continue;
        };
        for f in widths.get(ty).into_iter().flatten() {
            ops.push(json!({
                "op": "set",
                "parameters": [
                    {"type": "field", "value": [name, f]},
                    {"type": "hexstr", "value": "0x00"}
                ]
            }));
        }
    }
    let parsers = v["parsers"]
        .as_array_mut()
        .ok_or("program JSON: no \"parsers\" array")?;
    for p in parsers {
        let Some(init) = p["init_state"].as_str().map(str::to_string) else {
            return Err("program JSON: a parser without \"init_state\"".into());
        };
        let states = p["parse_states"]
            .as_array_mut()
            .ok_or("program JSON: a parser without \"parse_states\"")?;
        let id = states
            .iter()
            .filter_map(|s| s["id"].as_u64())
            .max()
            .map_or(0, |m| m + 1);
        states.push(json!({
            "name": ZERO_STATE,
            "id": id,
            "parser_ops": ops,
            "transitions": [
                {"type": "default", "value": null, "mask": null, "next_state": init}
            ],
            "transition_key": []
        }));
        p["init_state"] = json!(ZERO_STATE);
    }
    serde_json::to_string_pretty(&v).map_err(|e| format!("program JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parser_starts_by_zeroing_packet_headers_only() {
        let src = r#"{
          "header_types": [
            {"name": "eth_t", "fields": [["dst", 48, false], ["type", 16, false]]},
            {"name": "opt_t", "fields": [["len", 8, false], ["data", "*"]]},
            {"name": "meta_t", "fields": [["x", 8, false]]}
          ],
          "headers": [
            {"name": "eth", "header_type": "eth_t", "metadata": false},
            {"name": "opt", "header_type": "opt_t", "metadata": false},
            {"name": "scalars", "header_type": "meta_t", "metadata": true}
          ],
          "parsers": [{"name": "parser", "init_state": "start", "parse_states": [
            {"name": "start", "id": 0, "parser_ops": [], "transitions": [], "transition_key": []}
          ]}]
        }"#;
        let out: Value = serde_json::from_str(&zeroed_program(src).unwrap()).unwrap();
        let p = &out["parsers"][0];
        assert_eq!(p["init_state"], ZERO_STATE);
        let z = &p["parse_states"][1];
        assert_eq!(z["id"], 1);
        assert_eq!(z["transitions"][0]["next_state"], "start");
        let set: Vec<_> = z["parser_ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["parameters"][0]["value"].clone())
            .collect();
        assert_eq!(
            set,
            vec![
                json!(["eth", "dst"]),
                json!(["eth", "type"]),
                json!(["opt", "len"])
            ]
        );
    }

    #[test]
    fn broken_json_is_an_error() {
        assert!(zeroed_program("{").is_err());
        assert!(zeroed_program("{}").is_err());
    }
}
