//! Property test: the engine's expression evaluation (128-bit fast path where the load-time
#![allow(clippy::unwrap_used)]
//! analysis allows it, big integers elsewhere) against an independent big-integer reference
//! interpreter of the JSON expression, on random expressions, widths and values.

use num_bigint::{BigInt, Sign};
use num_traits::{One, Signed, ToPrimitive, Zero};
use p4jet_engine::{EngineConfig, PacketCtx};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Field widths of the test header `h` (f0..f5) and whether each is signed.
const WIDTHS: [(u32, bool); 6] = [
    (8, false),
    (16, true),
    (48, false),
    (64, false),
    (128, false),
    (200, false),
];

fn pow2(n: u32) -> BigInt {
    BigInt::one() << n
}

fn field(i: usize) -> Value {
    json!({"type": "field", "value": ["h", format!("f{i}")]})
}

fn hex(v: &BigInt) -> Value {
    let s = if v.is_negative() {
        format!("-0x{:x}", -v)
    } else {
        format!("0x{v:x}")
    };
    json!({"type": "hexstr", "value": s})
}

fn op(o: &str, l: Value, r: Value) -> Value {
    json!({"type": "expression", "value": {"op": o, "left": l, "right": r}})
}

/// Random integer-valued expression trees in the shapes p4c emits.
fn arb_expr() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        (0usize..WIDTHS.len()).prop_map(field),
        (any::<u64>(), 0u32..140).prop_map(|(v, s)| hex(&(BigInt::from(v) << s))),
        (1u32..130).prop_map(|w| hex(&(pow2(w) - 1))),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (prop_oneof![Just("+"), Just("-"), Just("*"), Just("&"), Just("|"), Just("^")], inner.clone(), inner.clone())
                .prop_map(|(o, a, b)| op(o, a, b)),
            (inner.clone(), 0u32..140).prop_map(|(a, s)| op("<<", a, hex(&BigInt::from(s)))),
            (inner.clone(), 0u32..140).prop_map(|(a, s)| op(">>", a, hex(&BigInt::from(s)))),
            (inner.clone(), (0usize..WIDTHS.len())).prop_map(|(a, f)| op("<<", a, field(f))),
            inner.clone().prop_map(|a| op("~", Value::Null, a)),
            inner.clone().prop_map(|a| op("-", Value::Null, a)),
            (inner.clone(), 1u32..130).prop_map(|(a, w)| op("two_comp_mod", a, hex(&BigInt::from(w)))),
            (inner.clone(), 1u32..130).prop_map(|(a, w)| op("sat_cast", a, hex(&BigInt::from(w)))),
            (inner.clone(), 1u32..130).prop_map(|(a, w)| op("usat_cast", a, hex(&BigInt::from(w)))),
            (inner.clone(), inner.clone(), inner.clone(), prop_oneof![Just("<"), Just("=="), Just(">="), Just("!=")])
                .prop_map(|(a, b, c, o)| json!({"type": "expression", "value": {
                    "op": "?", "left": b, "right": c,
                    "cond": {"type": "expression", "value": {"op": o, "left": a.clone(), "right": a}}}})),
            (inner.clone(), inner.clone(), prop_oneof![Just("<"), Just("<="), Just(">"), Just("=="), Just("!=")])
                .prop_map(|(a, b, o)| op("b2d", Value::Null, op(o, a, b))),
            (inner.clone(), 1u32..130).prop_map(|(a, w)| op("&", a, hex(&(pow2(w) - 1)))),
        ]
    })
}

/// The reference: bmv2's unbounded-integer semantics, straight from the JSON.
fn reference(e: &Value, vals: &[BigInt]) -> BigInt {
    let e = if e.get("type").and_then(Value::as_str) == Some("expression") {
        &e["value"]
    } else {
        e
    };
    let b = |x: bool| if x { BigInt::one() } else { BigInt::zero() };
    if let Some(t) = e.get("type").and_then(Value::as_str) {
        return match t {
            "field" => {
                let name = e["value"][1].as_str().unwrap();
                vals[name[1..].parse::<usize>().unwrap()].clone()
            }
            "hexstr" => {
                let s = e["value"].as_str().unwrap();
                let (neg, s) = s.strip_prefix('-').map(|s| (true, s)).unwrap_or((false, s));
                let v = BigInt::parse_bytes(s.trim_start_matches("0x").as_bytes(), 16).unwrap();
                if neg { -v } else { v }
            }
            "expression" => reference(&e["value"], vals),
            _ => panic!("{t}"),
        };
    }
    let o = e["op"].as_str().unwrap();
    if o == "?" {
        return if reference(&e["cond"], vals).is_zero() {
            reference(&e["right"], vals)
        } else {
            reference(&e["left"], vals)
        };
    }
    let r = reference(&e["right"], vals);
    if e["left"].is_null() {
        return match o {
            "~" => -r - 1,
            "-" => -r,
            "b2d" | "d2b" => r,
            _ => panic!("{o}"),
        };
    }
    let l = reference(&e["left"], vals);
    match o {
        "+" => l + r,
        "-" => l - r,
        "*" => l * r,
        "&" => l & r,
        "|" => l | r,
        "^" => l ^ r,
        "<<" => r
            .to_u32()
            .filter(|s| *s <= 1 << 16)
            .map(|s| l.clone() << s)
            .unwrap_or_default(),
        ">>" => l >> r.to_u32().unwrap_or(4096),
        "<" => b(l < r),
        "<=" => b(l <= r),
        ">" => b(l > r),
        ">=" => b(l >= r),
        "==" => b(l == r),
        "!=" => b(l != r),
        "two_comp_mod" => {
            let w = r.to_u32().unwrap();
            let m = pow2(w);
            let mut x = l % &m;
            if x.sign() == Sign::Minus {
                x += &m;
            }
            if x >= pow2(w - 1) { x - m } else { x }
        }
        "sat_cast" => {
            let w = r.to_u32().unwrap();
            l.clamp(-pow2(w - 1), pow2(w - 1) - 1)
        }
        "usat_cast" => l.clamp(BigInt::zero(), pow2(r.to_u32().unwrap()) - 1),
        _ => panic!("{o}"),
    }
}

fn program(expr: &Value, dst: usize) -> String {
    let fields: Vec<Value> = WIDTHS
        .iter()
        .enumerate()
        .map(|(i, (w, s))| json!([format!("f{i}"), w, s]))
        .collect();
    let pad = (8 - WIDTHS.iter().map(|w| w.0).sum::<u32>() % 8) % 8;
    let mut fields = fields;
    if pad > 0 {
        fields.push(json!(["_pad", pad, false]));
    }
    json!({
        "header_types": [{"name": "h_t", "id": 0, "fields": fields}],
        "headers": [{"name": "h", "id": 0, "header_type": "h_t", "metadata": true}],
        "actions": [{"name": "a", "id": 0, "runtime_data": [], "primitives": [
            {"op": "assign", "parameters": [field(dst), expr]}]}],
        "pipelines": [{"name": "ingress", "id": 0, "init_table": null, "tables": [], "conditionals": [], "action_profiles": []}]
    })
    .to_string()
}

fn to_field(v: &BigInt, w: u32, signed: bool) -> BigInt {
    let m = pow2(w);
    let mut x = v % &m;
    if x.sign() == Sign::Minus {
        x += &m;
    }
    if signed && x >= pow2(w - 1) { x - m } else { x }
}

/// Runs `h.f{dst} = expr` on the engine with the fields set from `raw`; returns the
/// engine's result and the BigInt reference's.
fn run_case(expr: &Value, dst: usize, raw: &[(u128, u128)]) -> (BigInt, BigInt) {
    let text = program(expr, dst);
    let engine = p4jet_engine::load(&text, EngineConfig::default()).expect("loads");
    let p = engine.prog.clone();
    let cs = engine.new_control_state().unwrap();
    let ex = engine.new_externs();
    let mut ctx = PacketCtx::new(&p, 64);
    // the field values
    let mut vals = vec![];
    for (i, (w, s)) in WIDTHS.iter().enumerate() {
        let big = (BigInt::from(raw[i].0) << 128) | BigInt::from(raw[i].1);
        let v = to_field(&big, *w, *s);
        let loc = p.fields[p.field_by_name("h", &format!("f{i}")).unwrap() as usize].loc;
        let bits = to_field(&v, *w, false).to_biguint().unwrap();
        ctx.phv.write_big(loc, &bits);
        vals.push(v);
    }
    let mut sc = p4jet_engine::Scratch::default();
    let call = p4jet_ir::ActionCall {
        action: 0,
        data: Default::default(),
    };
    engine.run_action(&cs, &ex, &mut ctx, &call, &mut sc, 0);
    let (w, _) = WIDTHS[dst];
    let want = to_field(&reference(expr, &vals), w, false);
    let loc = p.fields[p.field_by_name("h", &format!("f{dst}")).unwrap() as usize].loc;
    let got = BigInt::from(ctx.phv.read_big(loc));
    (got, want)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]
    #[test]
    fn engine_matches_bigint_reference(
        expr in arb_expr(),
        dst in 0usize..WIDTHS.len(),
        raw in proptest::collection::vec((any::<u128>(), any::<u128>()), WIDTHS.len()),
    ) {
        let (got, want) = run_case(&expr, dst, &raw);
        prop_assert_eq!(got, want, "expr {}", expr);
    }
}

/// A saturating cast to 128 bits clamps at 2^127 - 1 (the 128-bit path once clamped
/// at 2^126 - 1).
#[test]
fn sat_cast_to_128_bits_keeps_the_whole_range() {
    // f4 is the unsigned 128-bit field
    for v in [
        (1u128 << 126) - 1,
        1u128 << 126,
        (1u128 << 126) + 12345,
        (1u128 << 127) - 1,
        1u128 << 127,
        u128::MAX,
    ] {
        let mut raw = vec![(0u128, 0u128); WIDTHS.len()];
        raw[4] = (0, v);
        let e = op("sat_cast", field(4), hex(&BigInt::from(128)));
        let (got, want) = run_case(&e, 4, &raw);
        assert_eq!(got, want, "sat_cast({v}, 128)");
        assert_eq!(got, BigInt::from(v.min((1u128 << 127) - 1)));
    }
}

#[test]
fn typical_p4c_expressions_take_the_128_bit_path() {
    for e in [
        op(
            "&",
            op("+", field(0), hex(&BigInt::from(0xff))),
            hex(&BigInt::from(0xff)),
        ),
        op("&", op("<<", field(2), field(0)), hex(&(pow2(48) - 1))),
        op("b2d", Value::Null, op("<", field(4), hex(&BigInt::from(5)))),
        op(
            "two_comp_mod",
            op("-", field(1), field(0)),
            hex(&BigInt::from(16)),
        ),
    ] {
        let text = program(&e, 3);
        let engine = p4jet_engine::load(&text, EngineConfig::default()).unwrap();
        let wide = engine.prog.exprs.wide.iter().filter(|w| **w).count();
        assert_eq!(wide, 0, "{e}");
    }
}
