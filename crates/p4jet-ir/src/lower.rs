//! Lowering: bmv2 JSON model → [`Program`].

use std::collections::HashMap;

use num_bigint::{BigInt, BigUint, Sign};
use num_traits::{ToPrimitive, Zero};
use serde_json::Value;

use crate::expr::{
    BinOp, Expr, ExprId, ExprPool, FieldRef, HeaderRef, UnOp, UnionRef, Use, field_range,
};
use crate::prim::{Action, Prim};
use crate::*;

type R<T> = Result<T, LoadError>;

fn err<T>(path: &str, msg: impl Into<String>) -> R<T> {
    Err(LoadError::new(path, msg))
}

/// Parses a bmv2 hex string (`0x..`, optionally `-`), as a signed big integer.
pub(crate) fn parse_hexstr(s: &str, path: &str) -> R<BigInt> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let body = body
        .strip_prefix("0x")
        .or_else(|| body.strip_prefix("0X"))
        .unwrap_or(body);
    let v = if body.is_empty() {
        Some(BigInt::zero())
    } else {
        BigInt::parse_bytes(body.as_bytes(), 16)
    };
    match v {
        Some(v) => Ok(if neg { -v } else { v }),
        None => err(path, format!("bad hex string `{s}`")),
    }
}

/// Big-endian bytes of `v` truncated to `width` bits, `ceil(width/8)` bytes long.
pub fn to_bytes(v: &BigInt, width: u32) -> Vec<u8> {
    let nbytes = width.div_ceil(8) as usize;
    let modulus = BigInt::from(1) << (nbytes * 8);
    let mut m = v % &modulus;
    if m.sign() == Sign::Minus {
        m += &modulus;
    }
    let (_, mut b) = m.to_bytes_be();
    if b.len() < nbytes {
        let mut p = vec![0u8; nbytes - b.len()];
        p.extend_from_slice(&b);
        b = p;
    } else if b.len() > nbytes {
        b = b[b.len() - nbytes..].to_vec();
    }
    if !width.is_multiple_of(8)
        && let Some(first) = b.first_mut()
    {
        *first &= (1u16 << (width % 8)) as u8 - 1;
    }
    b
}

struct Ctx<'a> {
    j: &'a p4jet_json::Program,
    p: Program,
    header_idx: HashMap<&'a str, u32>,
    header_json_id: HashMap<i64, u32>,
    stack_idx: HashMap<&'a str, u32>,
    union_idx: HashMap<&'a str, u32>,
    union_json_id: HashMap<i64, u32>,
    union_stack_idx: HashMap<&'a str, u32>,
    action_json_id: HashMap<i64, u32>,
    action_idx: HashMap<&'a str, u32>,
    calc_idx: HashMap<&'a str, u32>,
    counter_idx: HashMap<&'a str, u32>,
    meter_idx: HashMap<&'a str, u32>,
    register_idx: HashMap<&'a str, u32>,
    vset_idx: HashMap<&'a str, u32>,
    table_idx: HashMap<&'a str, u32>,
    /// Action params of the action being lowered (widths).
    params: Vec<u32>,
    /// Lookahead is legal (parser).
    in_parser: bool,
}

/// Lowers a parsed bmv2 JSON program.
pub fn lower(j: &p4jet_json::Program) -> Result<Program, LoadError> {
    let mut c = Ctx {
        j,
        p: Program {
            headers: vec![],
            fields: vec![],
            stacks: vec![],
            unions: vec![],
            union_stacks: vec![],
            phv_bytes: 0,
            metadata_ranges: vec![],
            valid_init: vec![],
            varbit_slots: 0,
            exprs: ExprPool::default(),
            parser: Parser {
                states: vec![],
                init: None,
            },
            deparser: Deparser { order: vec![] },
            actions: vec![],
            tables: vec![],
            action_profiles: vec![],
            ingress: Control {
                name: "ingress".into(),
                nodes: vec![],
                init: None,
            },
            egress: Control {
                name: "egress".into(),
                nodes: vec![],
                init: None,
            },
            calculations: vec![],
            checksums: vec![],
            counters: vec![],
            meters: vec![],
            registers: vec![],
            field_lists: vec![],
            learn_lists: vec![],
            value_sets: vec![],
            errors: vec![],
            error_codes: ErrorCodes::default(),
            std: StdMeta::default(),
            custom_crc_slots: 0,
            max_key_bytes: 0,
            max_parser_key_bytes: 0,
            log_text: LogText::default(),
            reads: vec![],
            writes: vec![],
        },
        header_idx: HashMap::new(),
        header_json_id: HashMap::new(),
        stack_idx: HashMap::new(),
        union_idx: HashMap::new(),
        union_json_id: HashMap::new(),
        union_stack_idx: HashMap::new(),
        action_json_id: HashMap::new(),
        action_idx: HashMap::new(),
        calc_idx: HashMap::new(),
        counter_idx: HashMap::new(),
        meter_idx: HashMap::new(),
        register_idx: HashMap::new(),
        vset_idx: HashMap::new(),
        table_idx: HashMap::new(),
        params: vec![],
        in_parser: false,
    };
    c.headers()?;
    c.errors()?;
    c.names()?;
    c.calculations()?;
    c.externs()?;
    c.actions()?;
    c.parser()?;
    c.controls()?;
    c.checksums()?;
    c.deparser()?;
    c.field_lists()?;
    c.std_meta();
    c.p.reads = reads(&c.p);
    c.p.writes = writes(&c.p);
    Ok(c.p)
}

/// The headers a header reference may name (every element of a stack, the member of
/// every union).
fn header_candidates(p: &Program, h: &HeaderRef) -> Vec<u32> {
    match h {
        HeaderRef::Static(h) => vec![*h],
        HeaderRef::StackIndex { stack, .. } | HeaderRef::StackLast(stack) => {
            p.stacks[*stack as usize].headers.clone()
        }
        HeaderRef::UnionMember { member, .. } => p
            .unions
            .iter()
            .filter_map(|u| u.headers.get(*member as usize).copied())
            .collect(),
    }
}

/// Marks every field of header `h` in `marks`.
fn mark_header(p: &Program, marks: &mut [bool], h: u32) {
    for f in &p.headers[h as usize].fields {
        marks[*f as usize] = true;
    }
}

/// Marks the field `f` refers to (every candidate of a run-time index) in `marks`.
fn mark_field(p: &Program, marks: &mut [bool], f: &FieldRef) {
    match f {
        FieldRef::Static(f) => marks[*f as usize] = true,
        FieldRef::Dyn { header, index } => {
            for h in header_candidates(p, header) {
                if let Some(f) = p.headers[h as usize].fields.get(*index as usize) {
                    marks[*f as usize] = true;
                }
            }
        }
    }
}

/// Which fields the program may read.
fn reads(p: &Program) -> Vec<bool> {
    let mut r = vec![false; p.fields.len()];
    let mark_header = |r: &mut Vec<bool>, h: u32| mark_header(p, r, h);
    let mark = |r: &mut Vec<bool>, f: &FieldRef| mark_field(p, r, f);
    for n in &p.exprs.nodes {
        match &n.expr {
            Expr::Field(f) => mark(&mut r, f),
            Expr::VarbitEq(a, b) => {
                mark(&mut r, a);
                mark(&mut r, b);
            }
            Expr::HeaderEq(a, b) => {
                for h in header_candidates(p, a)
                    .into_iter()
                    .chain(header_candidates(p, b))
                {
                    mark_header(&mut r, h);
                }
            }
            _ => {}
        }
    }
    let mut prims: Vec<&Prim> = p.actions.iter().flat_map(|a| a.body.iter()).collect();
    for st in &p.parser.states {
        for op in &st.ops {
            if let ParserOp::Primitive(pr) = op {
                prims.push(pr);
            }
        }
        for k in &st.key {
            if let KeyElem::Field(f) = k {
                mark(&mut r, f);
            }
        }
    }
    for pr in prims {
        match pr {
            Prim::CopyField { src, .. } => r[*src as usize] = true,
            Prim::AssignVarbit { src, .. } => mark(&mut r, src),
            Prim::AssignHeader { src, .. } => {
                for h in header_candidates(p, src) {
                    mark_header(&mut r, h);
                }
            }
            Prim::AssignUnion { .. } => {
                for u in &p.unions {
                    for h in &u.headers {
                        mark_header(&mut r, *h);
                    }
                }
            }
            Prim::AssignStack { src, .. } => {
                for h in &p.stacks[*src as usize].headers {
                    mark_header(&mut r, *h);
                }
            }
            _ => {}
        }
    }
    for t in &p.tables {
        for k in &t.keys {
            if let KeySource::Field(f) = &k.source {
                mark(&mut r, f);
            }
        }
    }
    for ap in &p.action_profiles {
        if let Some((_, fs)) = &ap.selector {
            for f in fs {
                mark(&mut r, f);
            }
        }
    }
    for c in &p.calculations {
        for i in &c.inputs {
            match i {
                CalcInput::Field(f) => mark(&mut r, f),
                CalcInput::Header(h) => mark_header(&mut r, *h),
                _ => {}
            }
        }
    }
    for c in &p.checksums {
        mark(&mut r, &c.target);
    }
    for l in p.field_lists.iter().chain(&p.learn_lists) {
        for f in &l.fields {
            mark(&mut r, f);
        }
    }
    r
}

/// Per field: may the program give it a value (a destination of a primitive or a
/// parser `set`, a field of a header that is extracted, assigned, pushed or popped, a
/// meter's result, a checksum target). `mark_to_drop` counts as writing
/// `egress_spec` only: the 0 it writes into `mcast_grp` is the value that field has
/// when nothing else writes it. The match is exhaustive so that a new primitive has
/// to be classified here.
fn writes(p: &Program) -> Vec<bool> {
    let mut w = vec![false; p.fields.len()];
    let headers_of = |h: &HeaderRef| header_candidates(p, h);
    let mark_header = |w: &mut Vec<bool>, h: u32| mark_header(p, w, h);
    let mark = |w: &mut Vec<bool>, f: &FieldRef| mark_field(p, w, f);
    let mut prims: Vec<&Prim> = p.actions.iter().flat_map(|a| a.body.iter()).collect();
    for st in &p.parser.states {
        for op in &st.ops {
            match op {
                ParserOp::Primitive(pr) => prims.push(pr),
                ParserOp::Extract(h) | ParserOp::ExtractVarbit { header: h, .. } => {
                    for h in headers_of(h) {
                        mark_header(&mut w, h);
                    }
                }
                ParserOp::ExtractNext(stack) | ParserOp::ExtractNextVarbit { stack, .. } => {
                    for h in &p.stacks[*stack as usize].headers {
                        mark_header(&mut w, *h);
                    }
                }
                ParserOp::ExtractUnionNext { stack, member } => {
                    for u in &p.union_stacks[*stack as usize].unions {
                        if let Some(h) = p.unions[*u as usize].headers.get(*member as usize) {
                            mark_header(&mut w, *h);
                        }
                    }
                }
                ParserOp::Set { dst, .. } => mark(&mut w, dst),
                ParserOp::Verify { .. } | ParserOp::Advance(_) => {}
            }
        }
    }
    for pr in prims {
        match pr {
            Prim::Assign { dst, .. }
            | Prim::AssignVarbit { dst, .. }
            | Prim::Hash { dst, .. }
            | Prim::Random { dst, .. }
            | Prim::ExecuteMeter { dst, .. }
            | Prim::RegisterRead { dst, .. } => mark(&mut w, dst),
            Prim::AssignConst { dst, .. }
            | Prim::AssignParam { dst, .. }
            | Prim::CopyField { dst, .. } => w[*dst as usize] = true,
            Prim::AssignHeader { dst, .. }
            | Prim::AddHeader(dst)
            | Prim::AddHeaderFast(dst)
            | Prim::RemoveHeader(dst) => {
                for h in headers_of(dst) {
                    mark_header(&mut w, h);
                }
            }
            Prim::AssignUnion { .. } => {
                for u in &p.unions {
                    for h in &u.headers {
                        mark_header(&mut w, *h);
                    }
                }
            }
            Prim::AssignStack { dst: s, .. } | Prim::Push(s, _) | Prim::Pop(s, _) => {
                for h in &p.stacks[*s as usize].headers {
                    mark_header(&mut w, *h);
                }
            }
            Prim::MarkToDrop => {
                if let Some(f) = p.std.egress_spec {
                    w[f as usize] = true;
                }
            }
            Prim::MarkToDropIn {
                egress_spec,
                mcast_grp,
            } => {
                w[*egress_spec as usize] = true;
                if let Some(m) = mcast_grp {
                    w[*m as usize] = true;
                }
            }
            Prim::Exit
            | Prim::Truncate(_)
            | Prim::LogMsg { .. }
            | Prim::Assert { .. }
            | Prim::Count { .. }
            | Prim::RegisterWrite { .. }
            | Prim::Clone { .. }
            | Prim::Resubmit(_)
            | Prim::Recirculate(_)
            | Prim::Digest(_)
            | Prim::Jump(_)
            | Prim::JumpIfZero(..)
            | Prim::Call(_)
            | Prim::Nop => {}
        }
    }
    for m in &p.meters {
        if let Some((_, dst)) = &m.direct {
            mark(&mut w, dst);
        }
    }
    for c in &p.checksums {
        mark(&mut w, &c.target);
    }
    w
}

impl<'a> Ctx<'a> {
    // ---------------------------------------------------------------- headers

    fn headers(&mut self) -> R<()> {
        let j = self.j;
        let mut types: HashMap<&str, &p4jet_json::HeaderType> = HashMap::new();
        for (i, t) in j.header_types.iter().enumerate() {
            if types.insert(&t.name, t).is_some() {
                return err(
                    &format!("header_types[{i}]"),
                    format!("duplicate header type `{}`", t.name),
                );
            }
        }
        let mut offset = 0u32;
        for (i, h) in j.headers.iter().enumerate() {
            let path = format!("headers[{i}]");
            let Some(t) = types.get(h.header_type.as_str()) else {
                return err(
                    &path,
                    format!("header `{}` has unknown type `{}`", h.name, h.header_type),
                );
            };
            let id = self.p.headers.len() as u32;
            if self.header_idx.insert(&h.name, id).is_some() {
                return err(&path, format!("duplicate header name `{}`", h.name));
            }
            self.header_json_id.insert(h.id, id);
            let fixed_bits: u32 = t.fields.iter().filter_map(|f| f.width).sum();
            let varbit_count = t.fields.iter().filter(|f| f.width.is_none()).count();
            if varbit_count > 1 {
                return err(
                    &path,
                    format!("header type `{}` has more than one varbit field", t.name),
                );
            }
            let varbit_bits = if varbit_count == 1 {
                let Some(max) = t.max_length else {
                    return err(
                        &path,
                        format!("varbit header type `{}` lacks max_length", t.name),
                    );
                };
                if max * 8 < fixed_bits {
                    return err(
                        &path,
                        format!(
                            "header type `{}`: max_length smaller than its fixed fields",
                            t.name
                        ),
                    );
                }
                max * 8 - fixed_bits
            } else {
                0
            };
            let total_bits = fixed_bits + varbit_bits;
            if !h.metadata && !total_bits.is_multiple_of(8) {
                return err(
                    &path,
                    format!(
                        "header `{}` is {} bits, not a whole number of bytes",
                        h.name, total_bits
                    ),
                );
            }
            // Packet headers keep their wire layout (extract and emit are copies).
            // Metadata is never on the wire: each field gets its own bytes, right-aligned,
            // so reads and writes are exact-size loads and stores without
            // read-modify-write of bytes shared with a neighbour.
            let mut fields = vec![];
            let mut bit = 0u32;
            let mut varbit = None;
            for (k, f) in t.fields.iter().enumerate() {
                let width = f.width.unwrap_or(varbit_bits);
                if f.width.is_none() {
                    varbit = Some(k);
                }
                let abs = if h.metadata {
                    let slot = width.div_ceil(8) * 8;
                    let a = offset * 8 + bit + (slot - width);
                    bit += slot - width;
                    a
                } else {
                    offset * 8 + bit
                };
                let fid = self.p.fields.len() as u32;
                self.p.fields.push(FieldInfo {
                    name: f.name.clone(),
                    header: id,
                    bit_offset: bit,
                    loc: FieldLoc::new(
                        abs / 8,
                        (abs % 8) as u8,
                        width,
                        f.signed,
                        h.metadata || (abs % 8 == 0 && width % 8 == 0),
                    ),
                    varbit: f.width.is_none(),
                });
                fields.push(fid);
                bit += width;
            }
            let max_bytes = bit.div_ceil(8);
            let varbit_slot = varbit.map(|_| {
                self.p.varbit_slots += 1;
                self.p.varbit_slots - 1
            });
            if h.metadata {
                self.p.metadata_ranges.push((offset, max_bytes));
            }
            self.p.valid_init.push(h.metadata);
            self.p.headers.push(HeaderInfo {
                name: h.name.clone(),
                type_name: h.header_type.clone(),
                metadata: h.metadata,
                offset,
                max_bytes,
                fixed_bits,
                fields,
                varbit,
                varbit_slot,
                stack: None,
                union: None,
            });
            offset += max_bytes;
        }
        self.p.phv_bytes = offset;
        for (i, s) in j.header_stacks.iter().enumerate() {
            let path = format!("header_stacks[{i}]");
            let mut hs = vec![];
            let sid = self.p.stacks.len() as u32;
            for (k, hid) in s.header_ids.iter().enumerate() {
                let Some(h) = self.header_json_id.get(hid) else {
                    return err(
                        &path,
                        format!("stack `{}` names unknown header id {hid}", s.name),
                    );
                };
                self.p.headers[*h as usize].stack = Some((sid, k as u32));
                hs.push(*h);
            }
            self.stack_idx.insert(&s.name, sid);
            self.p.stacks.push(StackInfo {
                name: s.name.clone(),
                headers: hs,
                type_name: s.header_type.clone(),
            });
        }
        for (i, u) in j.header_unions.iter().enumerate() {
            let path = format!("header_unions[{i}]");
            let uid = self.p.unions.len() as u32;
            let mut hs = vec![];
            for (k, hid) in u.header_ids.iter().enumerate() {
                let Some(h) = self.header_json_id.get(hid) else {
                    return err(
                        &path,
                        format!("union `{}` names unknown header id {hid}", u.name),
                    );
                };
                self.p.headers[*h as usize].union = Some((uid, k as u32));
                hs.push(*h);
            }
            self.union_idx.insert(&u.name, uid);
            self.union_json_id.insert(u.id, uid);
            self.p.unions.push(UnionInfo {
                name: u.name.clone(),
                headers: hs,
            });
        }
        for (i, s) in j.header_union_stacks.iter().enumerate() {
            let path = format!("header_union_stacks[{i}]");
            let mut us = vec![];
            for uid in &s.header_union_ids {
                let Some(u) = self.union_json_id.get(uid) else {
                    return err(
                        &path,
                        format!("union stack `{}` names unknown union id {uid}", s.name),
                    );
                };
                us.push(*u);
            }
            self.union_stack_idx
                .insert(&s.name, self.p.union_stacks.len() as u32);
            self.p.union_stacks.push(UnionStackInfo {
                name: s.name.clone(),
                unions: us,
            });
        }
        Ok(())
    }

    fn errors(&mut self) -> R<()> {
        let mut errs: Vec<(String, u32)> = vec![];
        for (i, (n, v)) in self.j.errors.iter().enumerate() {
            let Ok(v) = u32::try_from(*v) else {
                return err(
                    &format!("errors[{i}]"),
                    format!("error `{n}` has a bad value {v}"),
                );
            };
            errs.push((n.clone(), v));
        }
        let core = [
            "NoError",
            "PacketTooShort",
            "NoMatch",
            "StackOutOfBounds",
            "HeaderTooShort",
            "ParserTimeout",
            "ParserInvalidArgument",
        ];
        for name in core {
            if !errs.iter().any(|(n, _)| n == name) {
                let next = errs.iter().map(|(_, v)| *v + 1).max().unwrap_or(0);
                errs.push((name.to_string(), next));
            }
        }
        let code = |n: &str| {
            errs.iter()
                .find(|(x, _)| x == n)
                .map(|(_, v)| *v)
                .unwrap_or(0)
        };
        self.p.error_codes = ErrorCodes {
            no_error: code("NoError"),
            packet_too_short: code("PacketTooShort"),
            no_match: code("NoMatch"),
            stack_out_of_bounds: code("StackOutOfBounds"),
            header_too_short: code("HeaderTooShort"),
            parser_timeout: code("ParserTimeout"),
            parser_invalid_argument: code("ParserInvalidArgument"),
        };
        self.p.errors = errs;
        Ok(())
    }

    /// Name tables that later passes need before the objects are lowered.
    fn names(&mut self) -> R<()> {
        let j = self.j;
        for (i, a) in j.actions.iter().enumerate() {
            if self.action_json_id.insert(a.id, i as u32).is_some() {
                return err(
                    &format!("actions[{i}]"),
                    format!("duplicate action id {}", a.id),
                );
            }
            self.action_idx.entry(&a.name).or_insert(i as u32);
        }
        let mut t = 0u32;
        for (pi, pl) in j.pipelines.iter().enumerate() {
            for (ti, tb) in pl.tables.iter().enumerate() {
                if self.table_idx.insert(&tb.name, t).is_some() {
                    return err(
                        &format!("pipelines[{pi}].tables[{ti}]"),
                        format!("duplicate table name `{}`", tb.name),
                    );
                }
                t += 1;
            }
        }
        for (i, v) in j.parse_vsets.iter().enumerate() {
            self.vset_idx.insert(&v.name, i as u32);
            self.p.value_sets.push(ValueSetInfo {
                name: v.name.clone(),
                json_id: v.id,
                width: v.compressed_bitwidth,
                max_size: v.max_size.unwrap_or(u32::MAX),
            });
        }
        Ok(())
    }

    // ---------------------------------------------------------------- references

    fn header_name(&self, name: &str, path: &str) -> R<u32> {
        match self.header_idx.get(name) {
            Some(h) => Ok(*h),
            None => err(path, format!("unknown header `{name}`")),
        }
    }

    fn field_in_header(&self, h: u32, f: &str, path: &str) -> R<u32> {
        let hi = &self.p.headers[h as usize];
        match hi
            .fields
            .iter()
            .copied()
            .find(|x| self.p.fields[*x as usize].name == f)
        {
            Some(x) => Ok(x),
            None => err(path, format!("header `{}` has no field `{f}`", hi.name)),
        }
    }

    fn field_index_in_type(&self, h: u32, f: &str, path: &str) -> R<u32> {
        let hi = &self.p.headers[h as usize];
        match hi
            .fields
            .iter()
            .position(|x| self.p.fields[*x as usize].name == f)
        {
            Some(x) => Ok(x as u32),
            None => err(path, format!("header `{}` has no field `{f}`", hi.name)),
        }
    }

    fn str_pair(v: &Value, path: &str) -> R<(String, String)> {
        match v.as_array().map(|a| a.as_slice()) {
            Some([Value::String(a), Value::String(b)]) => Ok((a.clone(), b.clone())),
            _ => err(path, format!("expected [header, field], got {v}")),
        }
    }

    fn typed(v: &Value, path: &str) -> R<(String, Value)> {
        let Some(t) = v.get("type").and_then(Value::as_str) else {
            return err(path, format!("expected an object with a `type`, got {v}"));
        };
        Ok((
            t.to_string(),
            v.get("value").cloned().unwrap_or(Value::Null),
        ))
    }

    /// Strips `{"type":"expression","value": X}` wrappers.
    fn unwrap_expr(v: &Value) -> &Value {
        let mut v = v;
        while v.get("type").and_then(Value::as_str) == Some("expression") {
            match v.get("value") {
                Some(inner) => v = inner,
                None => break,
            }
        }
        v
    }

    fn lower_href(&mut self, v: &Value, path: &str) -> R<HeaderRef> {
        let v = Self::unwrap_expr(v);
        if let Some(op) = v.get("op").and_then(Value::as_str) {
            let l = v.get("left").cloned().unwrap_or(Value::Null);
            let r = v.get("right").cloned().unwrap_or(Value::Null);
            return match op {
                "dereference_header_stack" | "dereference_stack" => {
                    let stack = self.stack_ref(&l, path)?;
                    let index = self.lower_expr(&r, &format!("{path}.right"))?;
                    self.p.exprs.finish_root(index, Use::Exact);
                    Ok(HeaderRef::StackIndex { stack, index })
                }
                "access_union_header" => {
                    let u = self.lower_uref(&l, path)?;
                    let member = self.const_u32(&r, path)?;
                    Ok(HeaderRef::UnionMember {
                        union: Box::new(u),
                        member,
                    })
                }
                "?" => err(path, "conditional header expressions are not supported"),
                _ => err(path, format!("`{op}` does not produce a header")),
            };
        }
        let (t, val) = Self::typed(v, path)?;
        match t.as_str() {
            "header" => {
                let name = val.as_str().unwrap_or_default();
                Ok(HeaderRef::Static(self.header_name(name, path)?))
            }
            "stack_field" | "header_stack" if t == "header_stack" => {
                err(path, "a header stack where a header is expected")
            }
            "stack" => {
                let s = self.stack_ref(v, path)?;
                Ok(HeaderRef::StackLast(s))
            }
            _ => err(path, format!("expected a header, got `{t}`")),
        }
    }

    fn stack_ref(&self, v: &Value, path: &str) -> R<u32> {
        let v = Self::unwrap_expr(v);
        let name = v
            .get("value")
            .and_then(Value::as_str)
            .or_else(|| v.as_str())
            .unwrap_or_default();
        match self.stack_idx.get(name) {
            Some(s) => Ok(*s),
            None => err(path, format!("unknown header stack `{name}`")),
        }
    }

    fn union_stack_ref(&self, name: &str, path: &str) -> R<u32> {
        match self.union_stack_idx.get(name) {
            Some(s) => Ok(*s),
            None => err(path, format!("unknown header union stack `{name}`")),
        }
    }

    /// `v` as a varbit field of a regular header (None for anything else).
    fn varbit_field(&self, v: &Value, path: &str) -> R<Option<FieldRef>> {
        let v = Self::unwrap_expr(v);
        if v.get("type").and_then(Value::as_str) != Some("field") {
            return Ok(None);
        }
        let Some(val) = v.get("value") else {
            return Ok(None);
        };
        let (h, f) = Self::str_pair(val, path)?;
        if f == "$valid$" {
            return Ok(None);
        }
        let hid = self.header_name(&h, path)?;
        let fid = self.field_in_header(hid, &f, path)?;
        Ok(self.p.fields[fid as usize]
            .varbit
            .then_some(FieldRef::Static(fid)))
    }

    /// The index of member `m` in the union type of union stack `sid`'s elements.
    fn union_stack_member(&self, sid: u32, m: &str, path: &str) -> R<u32> {
        let u0 = self.p.union_stacks[sid as usize]
            .unions
            .first()
            .copied()
            .unwrap_or(0);
        let ut = &self
            .j
            .header_unions
            .get(u0 as usize)
            .map(|u| u.union_type.clone())
            .unwrap_or_default();
        let member = self
            .j
            .header_union_types
            .iter()
            .find(|t| &t.name == ut)
            .and_then(|t| t.headers.iter().position(|(n, _)| n == m));
        match member {
            Some(member) => Ok(member as u32),
            None => err(path, format!("union has no member `{m}`")),
        }
    }

    fn lower_uref(&mut self, v: &Value, path: &str) -> R<UnionRef> {
        let v = Self::unwrap_expr(v);
        if let Some(op) = v.get("op").and_then(Value::as_str) {
            if op == "dereference_union_stack" {
                let l = v.get("left").cloned().unwrap_or(Value::Null);
                let r = v.get("right").cloned().unwrap_or(Value::Null);
                let name = l.get("value").and_then(Value::as_str).unwrap_or_default();
                let stack = self.union_stack_ref(name, path)?;
                let index = self.lower_expr(&r, &format!("{path}.right"))?;
                self.p.exprs.finish_root(index, Use::Exact);
                return Ok(UnionRef::StackIndex { stack, index });
            }
            return err(path, format!("`{op}` does not produce a header union"));
        }
        let (t, val) = Self::typed(v, path)?;
        let name = val.as_str().unwrap_or_default();
        match t.as_str() {
            "header_union" => match self.union_idx.get(name) {
                Some(u) => Ok(UnionRef::Static(*u)),
                None => err(path, format!("unknown header union `{name}`")),
            },
            _ => err(path, format!("expected a header union, got `{t}`")),
        }
    }

    fn lower_fref(&mut self, v: &Value, path: &str) -> R<FieldRef> {
        let v = Self::unwrap_expr(v);
        if let Some(op) = v.get("op").and_then(Value::as_str) {
            if op == "access_field" {
                let l = v.get("left").cloned().unwrap_or(Value::Null);
                let r = v.get("right").cloned().unwrap_or(Value::Null);
                let header = self.lower_href(&l, &format!("{path}.left"))?;
                let index = self.const_u32(&r, path)?;
                let any = header.any_header(&self.p);
                if index as usize >= self.p.headers[any as usize].fields.len() {
                    return err(path, format!("access_field: no field number {index}"));
                }
                if let HeaderRef::Static(h) = header {
                    return Ok(FieldRef::Static(
                        self.p.headers[h as usize].fields[index as usize],
                    ));
                }
                return Ok(FieldRef::Dyn { header, index });
            }
            return err(path, format!("`{op}` is not a field"));
        }
        let (t, val) = Self::typed(v, path)?;
        match t.as_str() {
            "field" => {
                let (h, f) = Self::str_pair(&val, path)?;
                let hid = self.header_name(&h, path)?;
                Ok(FieldRef::Static(self.field_in_header(hid, &f, path)?))
            }
            "stack_field" => {
                let (s, f) = Self::str_pair(&val, path)?;
                let Some(sid) = self.stack_idx.get(s.as_str()).copied() else {
                    return err(path, format!("unknown header stack `{s}`"));
                };
                let any = self.p.stacks[sid as usize].headers.first().copied();
                let Some(any) = any else {
                    return err(path, format!("empty header stack `{s}`"));
                };
                let index = self.field_index_in_type(any, &f, path)?;
                Ok(FieldRef::Dyn {
                    header: HeaderRef::StackLast(sid),
                    index,
                })
            }
            "union_stack_field" => {
                let arr = val.as_array().cloned().unwrap_or_default();
                let (Some(us), Some(m), Some(f)) = (
                    arr.first().and_then(Value::as_str),
                    arr.get(1).and_then(Value::as_str),
                    arr.get(2).and_then(Value::as_str),
                ) else {
                    return err(path, "union_stack_field needs [stack, member, field]");
                };
                let sid = self.union_stack_ref(us, path)?;
                let member = self.union_stack_member(sid, m, path)?;
                let header = HeaderRef::UnionMember {
                    union: Box::new(UnionRef::StackLast(sid)),
                    member,
                };
                let any = header.any_header(&self.p);
                let index = self.field_index_in_type(any, f, path)?;
                Ok(FieldRef::Dyn { header, index })
            }
            _ => err(path, format!("expected a field, got `{t}`")),
        }
    }

    fn const_u32(&self, v: &Value, path: &str) -> R<u32> {
        let v = Self::unwrap_expr(v);
        if let Some(n) = v.as_u64() {
            return u32::try_from(n).map_err(|_| LoadError::new(path, "constant too large"));
        }
        let (t, val) = Self::typed(v, path)?;
        match t.as_str() {
            "hexstr" => {
                let b = parse_hexstr(val.as_str().unwrap_or_default(), path)?;
                b.to_u32()
                    .ok_or_else(|| LoadError::new(path, format!("constant {b} out of range")))
            }
            _ => err(path, format!("expected a constant, got `{t}`")),
        }
    }

    fn field_expr(&mut self, f: FieldRef) -> ExprId {
        let (w, s) = (f.width(&self.p), f.signed(&self.p));
        self.p.exprs.push(Expr::Field(f), Some(field_range(w, s)))
    }

    // ---------------------------------------------------------------- expressions

    /// Lowers an expression; the caller must call `finish_root` on the result.
    fn lower_expr(&mut self, v: &Value, path: &str) -> R<ExprId> {
        let v = Self::unwrap_expr(v);
        if v.get("op").is_some() && v.get("type").is_none() {
            return self.lower_op(v, path);
        }
        let (t, val) = Self::typed(v, path)?;
        match t.as_str() {
            "hexstr" => {
                let c = parse_hexstr(val.as_str().unwrap_or_default(), path)?;
                Ok(self.p.exprs.push_derived(Expr::Const(c)))
            }
            "bool" => Ok(self
                .p
                .exprs
                .push_derived(Expr::Bool(val.as_bool().unwrap_or(false)))),
            "field" => {
                let (h, f) = Self::str_pair(&val, path)?;
                let hid = self.header_name(&h, path)?;
                if f == "$valid$" {
                    return Ok(self
                        .p
                        .exprs
                        .push_derived(Expr::Valid(HeaderRef::Static(hid))));
                }
                let fr = FieldRef::Static(self.field_in_header(hid, &f, path)?);
                if self.p.fields[match fr {
                    FieldRef::Static(x) => x as usize,
                    _ => 0,
                }]
                .varbit
                {
                    return err(path, "varbit fields cannot be used in expressions");
                }
                Ok(self.field_expr(fr))
            }
            "stack_field" | "union_stack_field" => {
                let fr = self.lower_fref(v, path)?;
                Ok(self.field_expr(fr))
            }
            "runtime_data" | "local" => {
                let Some(i) = val.as_u64() else {
                    return err(path, "runtime_data needs an index");
                };
                let Some(w) = self.params.get(i as usize).copied() else {
                    return err(path, format!("action has no parameter {i}"));
                };
                Ok(self
                    .p
                    .exprs
                    .push(Expr::Param(i as u32), Some(field_range(w, false))))
            }
            "lookahead" => {
                if !self.in_parser {
                    return err(path, "lookahead outside the parser");
                }
                let arr = val.as_array().cloned().unwrap_or_default();
                let off = arr.first().and_then(Value::as_u64).unwrap_or(0) as u32;
                let Some(w) = arr.get(1).and_then(Value::as_u64) else {
                    return err(path, "lookahead needs [offset, width]");
                };
                Ok(self.p.exprs.push(
                    Expr::Lookahead {
                        offset: off,
                        width: w as u32,
                    },
                    Some(field_range(w as u32, false)),
                ))
            }
            "header" | "stack" => {
                // a header used as a value: only its validity makes sense (legacy)
                err(path, "a header cannot be used as an integer value")
            }
            other => err(
                path,
                format!("unsupported expression operand type `{other}`"),
            ),
        }
    }

    fn lower_op(&mut self, v: &Value, path: &str) -> R<ExprId> {
        let op = v
            .get("op")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let l = v.get("left").cloned().unwrap_or(Value::Null);
        let r = v.get("right").cloned().unwrap_or(Value::Null);
        let lp = format!("{path}.left");
        let rp = format!("{path}.right");
        let bin = |op: &str| -> Option<BinOp> {
            Some(match op {
                "+" => BinOp::Add,
                "-" => BinOp::Sub,
                "*" => BinOp::Mul,
                "/" => BinOp::Div,
                "%" => BinOp::Mod,
                "<<" => BinOp::Shl,
                ">>" => BinOp::Shr,
                "&" => BinOp::And,
                "|" => BinOp::Or,
                "^" => BinOp::Xor,
                "==" => BinOp::Eq,
                "!=" => BinOp::Ne,
                "<" => BinOp::Lt,
                "<=" => BinOp::Le,
                ">" => BinOp::Gt,
                ">=" => BinOp::Ge,
                "and" => BinOp::LAnd,
                "or" => BinOp::LOr,
                _ => return None,
            })
        };
        if (op == "==" || op == "!=") && (self.is_header_value(&l) || self.is_header_value(&r)) {
            let a = self.lower_href(&l, &lp)?;
            let b = self.lower_href(&r, &rp)?;
            let e = self.p.exprs.push_derived(Expr::HeaderEq(a, b));
            if op == "!=" {
                return Ok(self.p.exprs.push_derived(Expr::Un(UnOp::Not, e)));
            }
            return Ok(e);
        }
        if (op == "==" || op == "!=")
            && let (Some(a), Some(b)) = (self.varbit_field(&l, &lp)?, self.varbit_field(&r, &rp)?)
        {
            let e = self.p.exprs.push_derived(Expr::VarbitEq(a, b));
            if op == "!=" {
                return Ok(self.p.exprs.push_derived(Expr::Un(UnOp::Not, e)));
            }
            return Ok(e);
        }
        if let Some(b) = bin(&op) {
            if (op == "-" || op == "+") && l.is_null() {
                let a = self.lower_expr(&r, &rp)?;
                return Ok(if op == "-" {
                    self.p.exprs.push_derived(Expr::Un(UnOp::Neg, a))
                } else {
                    a
                });
            }
            let a = self.lower_expr(&l, &lp)?;
            let c = self.lower_expr(&r, &rp)?;
            return Ok(self.p.exprs.push_derived(Expr::Bin(b, a, c)));
        }
        match op.as_str() {
            "not" | "~" | "d2b" | "b2d" => {
                let a = self.lower_expr(&r, &rp)?;
                let u = match op.as_str() {
                    "not" => UnOp::Not,
                    "~" => UnOp::BitNot,
                    "d2b" => UnOp::D2b,
                    _ => UnOp::B2d,
                };
                Ok(self.p.exprs.push_derived(Expr::Un(u, a)))
            }
            "valid" => {
                let h = self.lower_href(&r, &rp)?;
                Ok(self.p.exprs.push_derived(Expr::Valid(h)))
            }
            "valid_union" => {
                let u = self.lower_uref(&r, &rp)?;
                Ok(self.p.exprs.push_derived(Expr::ValidUnion(u)))
            }
            "?" => {
                let cv = v.get("cond").cloned().unwrap_or(Value::Null);
                let c = self.lower_expr(&cv, &format!("{path}.cond"))?;
                let a = self.lower_expr(&l, &lp)?;
                let b = self.lower_expr(&r, &rp)?;
                Ok(self.p.exprs.push_derived(Expr::Cond(c, a, b)))
            }
            "two_comp_mod" | "sat_cast" | "usat_cast" => {
                let a = self.lower_expr(&l, &lp)?;
                let w = self.const_u32(&r, &rp)?;
                let e = match op.as_str() {
                    "two_comp_mod" => Expr::TwoCompMod(a, w),
                    "sat_cast" => Expr::SatCast(a, w),
                    _ => Expr::UsatCast(a, w),
                };
                Ok(self.p.exprs.push_derived(e))
            }
            "access_field" => {
                let f = self.lower_fref(v, path)?;
                Ok(self.field_expr(f))
            }
            "last_stack_index" | "size_stack" => {
                let s = self.stack_ref(&r, &rp)?;
                Ok(self.p.exprs.push_derived(if op == "size_stack" {
                    Expr::SizeStack(s)
                } else {
                    Expr::LastStackIndex(s)
                }))
            }
            "dereference_header_stack" | "dereference_stack" | "access_union_header" => {
                err(path, format!("`{op}` produces a header, not a value"))
            }
            other => err(path, format!("unsupported expression operator `{other}`")),
        }
    }

    fn is_header_value(&self, v: &Value) -> bool {
        let v = Self::unwrap_expr(v);
        match v.get("type").and_then(Value::as_str) {
            Some("header") => true,
            _ => matches!(
                v.get("op").and_then(Value::as_str),
                Some("dereference_header_stack" | "dereference_stack" | "access_union_header")
            ),
        }
    }

    fn root(&mut self, v: &Value, path: &str, usage: Use) -> R<ExprId> {
        let e = self.lower_expr(v, path)?;
        self.p.exprs.finish_root(e, usage);
        Ok(e)
    }

    // ---------------------------------------------------------------- calculations & externs

    fn calculations(&mut self) -> R<()> {
        let j = self.j;
        for (i, c) in j.calculations.iter().enumerate() {
            let path = format!("calculations[{i}]");
            let Some(algo) = HashAlgo::from_name(&c.algo) else {
                return err(&path, format!("unknown hash algorithm `{}`", c.algo));
            };
            let mut inputs = vec![];
            for (k, inp) in c.input.iter().enumerate() {
                let ip = format!("{path}.input[{k}]");
                let (t, val) = Self::typed(inp, &ip)?;
                inputs.push(match t.as_str() {
                    "field" => {
                        let (h, f) = Self::str_pair(&val, &ip)?;
                        let hid = self.header_name(&h, &ip)?;
                        CalcInput::Field(FieldRef::Static(self.field_in_header(hid, &f, &ip)?))
                    }
                    "hexstr" => {
                        let v = parse_hexstr(val.as_str().unwrap_or_default(), &ip)?;
                        let width = inp
                            .get("bitwidth")
                            .and_then(Value::as_u64)
                            .map(|w| w as u32)
                            .unwrap_or_else(|| {
                                (val.as_str().unwrap_or("0x").trim_start_matches("0x").len() as u32)
                                    * 4
                            });
                        let v = v.to_biguint().unwrap_or_default();
                        CalcInput::Const { value: v, width }
                    }
                    "header" => {
                        CalcInput::Header(self.header_name(val.as_str().unwrap_or_default(), &ip)?)
                    }
                    "payload" => CalcInput::Payload,
                    other => return err(&ip, format!("unsupported calculation input `{other}`")),
                });
            }
            let custom_slot = matches!(
                algo,
                HashAlgo::Crc16Custom
                    | HashAlgo::Crc32Custom
                    | HashAlgo::Crc8Custom
                    | HashAlgo::Crc64Custom
            )
            .then(|| {
                self.p.custom_crc_slots += 1;
                self.p.custom_crc_slots - 1
            });
            self.calc_idx.insert(&c.name, i as u32);
            self.p.calculations.push(Calculation {
                name: c.name.clone(),
                json_id: c.id,
                algo,
                inputs,
                custom_slot,
            });
        }
        Ok(())
    }

    fn externs(&mut self) -> R<()> {
        let j = self.j;
        for (i, c) in j.counter_arrays.iter().enumerate() {
            let path = format!("counter_arrays[{i}]");
            let direct_table = if c.is_direct {
                let b = c.binding.as_deref().unwrap_or_default();
                match self.table_idx.get(b) {
                    Some(t) => Some(*t),
                    None => {
                        return err(
                            &path,
                            format!("direct counter `{}` bound to unknown table `{b}`", c.name),
                        );
                    }
                }
            } else {
                None
            };
            self.counter_idx.insert(&c.name, i as u32);
            self.p.counters.push(CounterInfo {
                name: c.name.clone(),
                json_id: c.id,
                size: c.size,
                direct_table,
            });
        }
        for (i, m) in j.meter_arrays.iter().enumerate() {
            let path = format!("meter_arrays[{i}]");
            let bytes = match m.kind.as_str() {
                "bytes" => true,
                "packets" => false,
                other => return err(&path, format!("unknown meter type `{other}`")),
            };
            let direct = if m.is_direct {
                let b = m.binding.as_deref().unwrap_or_default();
                let Some(t) = self.table_idx.get(b).copied() else {
                    return err(
                        &path,
                        format!("direct meter `{}` bound to unknown table `{b}`", m.name),
                    );
                };
                let Some((h, f)) = &m.result_target else {
                    return err(
                        &path,
                        format!("direct meter `{}` has no result_target", m.name),
                    );
                };
                let hid = self.header_name(h, &path)?;
                Some((t, FieldRef::Static(self.field_in_header(hid, f, &path)?)))
            } else {
                None
            };
            self.meter_idx.insert(&m.name, i as u32);
            self.p.meters.push(MeterInfo {
                name: m.name.clone(),
                json_id: m.id,
                size: m.size,
                bytes,
                rate_count: m.rate_count,
                direct,
            });
        }
        for (i, r) in j.register_arrays.iter().enumerate() {
            self.register_idx.insert(&r.name, i as u32);
            self.p.registers.push(RegisterInfo {
                name: r.name.clone(),
                json_id: r.id,
                size: r.size,
                width: r.bitwidth,
            });
        }
        Ok(())
    }

    // ---------------------------------------------------------------- actions

    fn actions(&mut self) -> R<()> {
        let j = self.j;
        for (i, a) in j.actions.iter().enumerate() {
            let path = format!("actions[{i}]");
            self.params = a.runtime_data.iter().map(|r| r.bitwidth).collect();
            let mut offsets = vec![];
            let mut off = 0u32;
            for r in &a.runtime_data {
                offsets.push(off);
                off += r.bitwidth.div_ceil(8);
            }
            let mut body = vec![];
            self.p.log_text.prims.push(
                a.primitives
                    .iter()
                    .map(|p| match &p.source_info {
                        Some(s) => {
                            format!("{}({}) Primitive {}", s.filename, s.line, s.source_fragment)
                        }
                        None => "Primitive (no source info)".to_string(),
                    })
                    .collect(),
            );
            for (k, p) in a.primitives.iter().enumerate() {
                let pp = format!("{path}.primitives[{k}]");
                body.push(self.lower_prim(&p.op, &p.parameters, &pp, p.source_info.as_ref())?);
            }
            for (k, p) in body.iter().enumerate() {
                if let Prim::Jump(t) | Prim::JumpIfZero(_, t) = p
                    && *t as usize > body.len()
                {
                    return err(
                        &format!("{path}.primitives[{k}]"),
                        format!("jump target {t} out of range"),
                    );
                }
            }
            self.p.actions.push(Action {
                name: a.name.clone(),
                json_id: a.id,
                params: a
                    .runtime_data
                    .iter()
                    .map(|r| (r.name.clone(), r.bitwidth))
                    .collect(),
                param_offsets: offsets,
                data_bytes: off,
                body,
            });
        }
        self.params.clear();
        Ok(())
    }

    fn param<'v>(ps: &'v [Value], i: usize, op: &str, path: &str) -> R<&'v Value> {
        ps.get(i).ok_or_else(|| {
            LoadError::new(path, format!("`{op}` needs at least {} parameters", i + 1))
        })
    }

    fn dst_width(&self, f: &FieldRef) -> u32 {
        f.width(&self.p)
    }

    fn lower_prim(
        &mut self,
        op: &str,
        ps: &[Value],
        path: &str,
        src: Option<&p4jet_json::SourceInfo>,
    ) -> R<Prim> {
        let p = |i: usize| Self::param(ps, i, op, path);
        Ok(match op {
            "assign" | "modify_field" => {
                let dst = self.lower_fref(p(0)?, &format!("{path}.parameters[0]"))?;
                if let FieldRef::Static(f) = dst
                    && self.p.fields[f as usize].varbit
                {
                    let s = self.lower_fref(p(1)?, &format!("{path}.parameters[1]"))?;
                    return Ok(Prim::AssignVarbit { dst, src: s });
                }
                let w = self.dst_width(&dst);
                let sv = Self::unwrap_expr(p(1)?).clone();
                if let FieldRef::Static(d) = dst
                    && w <= 128
                {
                    match sv.get("type").and_then(Value::as_str) {
                        Some("hexstr") => {
                            let c = parse_hexstr(
                                sv.get("value").and_then(Value::as_str).unwrap_or_default(),
                                path,
                            )?;
                            let bits = crate::expr::to_bits(&c) & mask128(w);
                            return Ok(Prim::AssignConst {
                                dst: d,
                                value: bits,
                            });
                        }
                        Some("runtime_data") => {
                            let i = sv.get("value").and_then(Value::as_u64).unwrap_or(u64::MAX)
                                as usize;
                            if i < self.params.len() && self.params[i] <= 128 {
                                return Ok(Prim::AssignParam {
                                    dst: d,
                                    param: i as u32,
                                });
                            }
                        }
                        Some("field") => {
                            if let Ok((h, f)) =
                                Self::str_pair(sv.get("value").unwrap_or(&Value::Null), path)
                                && f != "$valid$"
                            {
                                let hid = self.header_name(&h, path)?;
                                let sf = self.field_in_header(hid, &f, path)?;
                                let sfi = &self.p.fields[sf as usize];
                                if !sfi.varbit && sfi.loc.width <= 128 {
                                    return Ok(Prim::CopyField { dst: d, src: sf });
                                }
                            }
                        }
                        _ => {}
                    }
                }
                let s = self.root(&sv, &format!("{path}.parameters[1]"), Use::Store(w))?;
                Prim::Assign { dst, src: s }
            }
            "assign_VL" => {
                let dst = self.lower_fref(p(0)?, path)?;
                let s = self.lower_fref(p(1)?, path)?;
                Prim::AssignVarbit { dst, src: s }
            }
            "assign_header" | "copy_header" => {
                let d = self.lower_href(p(0)?, &format!("{path}.parameters[0]"))?;
                let s = self.lower_href(p(1)?, &format!("{path}.parameters[1]"))?;
                Prim::AssignHeader { dst: d, src: s }
            }
            "assign_union" => {
                let d = self.lower_uref(p(0)?, path)?;
                let s = self.lower_uref(p(1)?, path)?;
                Prim::AssignUnion { dst: d, src: s }
            }
            "assign_header_stack" => {
                let d = self.stack_ref(p(0)?, path)?;
                let s = self.stack_ref(p(1)?, path)?;
                Prim::AssignStack { dst: d, src: s }
            }
            "add_header" => Prim::AddHeader(self.lower_href(p(0)?, path)?),
            "add_header_fast" => Prim::AddHeaderFast(self.lower_href(p(0)?, path)?),
            "remove_header" => Prim::RemoveHeader(self.lower_href(p(0)?, path)?),
            "push" | "pop" => {
                let s = self.stack_ref(p(0)?, path)?;
                let n = self.root(p(1)?, path, Use::Exact)?;
                if op == "push" {
                    Prim::Push(s, n)
                } else {
                    Prim::Pop(s, n)
                }
            }
            "mark_to_drop" | "drop" => self.mark_to_drop(ps, path)?,
            "exit" => Prim::Exit,
            "no_op" => Prim::Nop,
            "truncate" => Prim::Truncate(self.root(p(0)?, path, Use::Exact)?),
            "log_msg" => {
                let fmt = Self::unwrap_expr(p(0)?)
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let mut args = vec![];
                if let Some(pv) = ps.get(1) {
                    let items = pv
                        .get("value")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    for (k, it) in items.iter().enumerate() {
                        args.push(self.root(
                            it,
                            &format!("{path}.parameters[1][{k}]"),
                            Use::Exact,
                        )?);
                    }
                }
                Prim::LogMsg { fmt, args }
            }
            "assert" | "assume" => {
                let cond = self.root(p(0)?, path, Use::Exact)?;
                Prim::Assert {
                    cond,
                    assume: op == "assume",
                    source: src.map(|s| s.source_fragment.clone()).unwrap_or_default(),
                }
            }
            "modify_field_with_hash_based_offset" => {
                let dst = self.lower_fref(p(0)?, path)?;
                let base = self.root(p(1)?, path, Use::Exact)?;
                let cname = p(2)?
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let Some(calc) = self.calc_idx.get(cname).copied() else {
                    return err(path, format!("unknown calculation `{cname}`"));
                };
                let max = self.root(p(3)?, path, Use::Exact)?;
                Prim::Hash {
                    dst,
                    base,
                    calc,
                    max,
                }
            }
            "modify_field_rng_uniform" => {
                let dst = self.lower_fref(p(0)?, path)?;
                let lo = self.root(p(1)?, path, Use::Exact)?;
                let hi = self.root(p(2)?, path, Use::Exact)?;
                Prim::Random { dst, lo, hi }
            }
            "count" => {
                let n = p(0)?
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let Some(counter) = self.counter_idx.get(n).copied() else {
                    return err(path, format!("unknown counter array `{n}`"));
                };
                Prim::Count {
                    counter,
                    index: self.root(p(1)?, path, Use::Exact)?,
                }
            }
            "execute_meter" => {
                let n = p(0)?
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let Some(meter) = self.meter_idx.get(n).copied() else {
                    return err(path, format!("unknown meter array `{n}`"));
                };
                let index = self.root(p(1)?, path, Use::Exact)?;
                let dst = self.lower_fref(p(2)?, path)?;
                Prim::ExecuteMeter { meter, index, dst }
            }
            "register_read" => {
                let dst = self.lower_fref(p(0)?, path)?;
                let n = p(1)?
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let Some(register) = self.register_idx.get(n).copied() else {
                    return err(path, format!("unknown register array `{n}`"));
                };
                Prim::RegisterRead {
                    dst,
                    register,
                    index: self.root(p(2)?, path, Use::Exact)?,
                }
            }
            "register_write" => {
                let n = p(0)?
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let Some(register) = self.register_idx.get(n).copied() else {
                    return err(path, format!("unknown register array `{n}`"));
                };
                let w = self.p.registers[register as usize].width;
                let index = self.root(p(1)?, path, Use::Exact)?;
                let value = self.root(p(2)?, path, Use::Store(w))?;
                Prim::RegisterWrite {
                    register,
                    index,
                    value,
                }
            }
            "clone_ingress_pkt_to_egress" | "clone_egress_pkt_to_egress" => {
                let session = self.root(p(0)?, path, Use::Exact)?;
                let field_list = match ps.get(1) {
                    Some(v) => self.const_u32(v, path)?,
                    None => 0,
                };
                Prim::Clone {
                    e2e: op == "clone_egress_pkt_to_egress",
                    session,
                    field_list,
                }
            }
            "resubmit" | "recirculate" => {
                let fl = match ps.first() {
                    Some(v) => self.const_u32(v, path)?,
                    None => 0,
                };
                if op == "resubmit" {
                    Prim::Resubmit(fl)
                } else {
                    Prim::Recirculate(fl)
                }
            }
            "generate_digest" => {
                let id = self.const_u32(p(1)?, path)?;
                Prim::Digest(id)
            }
            "_jump" => Prim::Jump(self.const_u32(p(0)?, path)?),
            "_jump_if_zero" => {
                let c = self.root(p(0)?, path, Use::Exact)?;
                Prim::JumpIfZero(c, self.const_u32(p(1)?, path)?)
            }
            other => return err(path, format!("unsupported primitive `{other}`")),
        })
    }

    // ---------------------------------------------------------------- parser

    fn parser(&mut self) -> R<()> {
        let j = self.j;
        let Some((pi, parser)) = j
            .parsers
            .iter()
            .enumerate()
            .find(|(_, p)| p.name == "parser")
        else {
            if j.parsers.is_empty() {
                return Ok(());
            }
            return err("parsers", "simple_switch needs a parser named `parser`");
        };
        self.in_parser = true;
        let names: HashMap<&str, u32> = parser
            .parse_states
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.as_str(), i as u32))
            .collect();
        let state_ref = |n: &Option<String>, path: &str| -> R<Option<u32>> {
            match n {
                None => Ok(None),
                Some(n) => match names.get(n.as_str()) {
                    Some(i) => Ok(Some(*i)),
                    None => err(path, format!("unknown parser state `{n}`")),
                },
            }
        };
        for (si, s) in parser.parse_states.iter().enumerate() {
            let path = format!("parsers[{pi}].parse_states[{si}]");
            let mut ops = vec![];
            for (oi, o) in s.parser_ops.iter().enumerate() {
                let op_path = format!("{path}.parser_ops[{oi}]");
                ops.push(self.lower_parser_op(o, &op_path)?);
                if o.op == "primitive"
                    && let Some(inner) = o.parameters.first()
                {
                    let name = inner.get("op").and_then(Value::as_str).unwrap_or_default();
                    let src = inner.get("source_info");
                    let text = match (
                        src.and_then(|s| s.get("filename")).and_then(Value::as_str),
                        src.and_then(|s| s.get("line")).and_then(Value::as_i64),
                        src.and_then(|s| s.get("source_fragment"))
                            .and_then(Value::as_str),
                    ) {
                        (Some(f), Some(l), Some(frag)) => format!("{f}({l}) Primitive {frag}"),
                        _ => "Primitive (no source info)".to_string(),
                    };
                    self.p
                        .log_text
                        .parser_prims
                        .insert((si as u32, oi as u32), (name.to_string(), text));
                }
            }
            let mut key = vec![];
            let mut key_bytes = 0;
            for (ki, k) in s.transition_key.iter().enumerate() {
                let kp = format!("{path}.transition_key[{ki}]");
                let (t, val) = Self::typed(k, &kp)?;
                let e = if t == "lookahead" {
                    let arr = val.as_array().cloned().unwrap_or_default();
                    let offset = arr.first().and_then(Value::as_u64).unwrap_or(0) as u32;
                    let width = arr.get(1).and_then(Value::as_u64).unwrap_or(0) as u32;
                    KeyElem::Lookahead { offset, width }
                } else {
                    KeyElem::Field(self.lower_fref(k, &kp)?)
                };
                key_bytes += e.width(&self.p).div_ceil(8);
                key.push(e);
            }
            self.p.max_parser_key_bytes = self.p.max_parser_key_bytes.max(key_bytes);
            let mut transitions = vec![];
            for (ti, t) in s.transitions.iter().enumerate() {
                let tp = format!("{path}.transitions[{ti}]");
                let next = state_ref(&t.next_state, &tp)?;
                let kind_s = t.kind.clone().unwrap_or_else(|| {
                    if t.value.as_str() == Some("default") {
                        "default".into()
                    } else {
                        "hexstr".into()
                    }
                });
                let mask_bytes = |m: &Value| -> R<Vec<u8>> {
                    match m.as_str() {
                        Some(ms) => Ok(to_bytes(&parse_hexstr(ms, &tp)?, key_bytes * 8)),
                        None => Ok(vec![0xff; key_bytes as usize]),
                    }
                };
                let kind = match kind_s.as_str() {
                    "default" => TransitionKind::Default,
                    "hexstr" => {
                        let v = parse_hexstr(t.value.as_str().unwrap_or_default(), &tp)?;
                        let mask = mask_bytes(&t.mask)?;
                        let mut value = to_bytes(&v, key_bytes * 8);
                        for (a, b) in value.iter_mut().zip(&mask) {
                            *a &= *b;
                        }
                        TransitionKind::Value { value, mask }
                    }
                    "parse_vset" => {
                        let n = t.value.as_str().unwrap_or_default();
                        let Some(vset) = self.vset_idx.get(n).copied() else {
                            return err(&tp, format!("unknown parser value set `{n}`"));
                        };
                        TransitionKind::ValueSet {
                            vset,
                            mask: mask_bytes(&t.mask)?,
                        }
                    }
                    other => return err(&tp, format!("unsupported transition type `{other}`")),
                };
                transitions.push(Transition { kind, next });
            }
            self.p.parser.states.push(ParseState {
                name: s.name.clone(),
                ops,
                key,
                key_bytes,
                transitions,
            });
        }
        self.p.parser.init = state_ref(
            &Some(parser.init_state.clone()),
            &format!("parsers[{pi}].init_state"),
        )?;
        self.in_parser = false;
        Ok(())
    }

    fn lower_parser_op(&mut self, o: &p4jet_json::ParserOp, path: &str) -> R<ParserOp> {
        let ps = &o.parameters;
        let p = |i: usize| Self::param(ps, i, &o.op, path);
        Ok(match o.op.as_str() {
            "extract" => {
                let (t, val) = Self::typed(p(0)?, path)?;
                match t.as_str() {
                    "regular" => {
                        let h = self.header_name(val.as_str().unwrap_or_default(), path)?;
                        if self.p.headers[h as usize].varbit.is_some() {
                            return err(path, "extract of a varbit header without a length");
                        }
                        ParserOp::Extract(HeaderRef::Static(h))
                    }
                    "stack" => {
                        let s = self.stack_ref(p(0)?, path)?;
                        ParserOp::ExtractNext(s)
                    }
                    "union_stack" => {
                        let arr = val.as_array().cloned().unwrap_or_default();
                        let (Some(us), Some(m)) = (
                            arr.first().and_then(Value::as_str),
                            arr.get(1).and_then(Value::as_str),
                        ) else {
                            return err(path, "a union_stack extract needs [stack, member]");
                        };
                        let stack = self.union_stack_ref(us, path)?;
                        let member = self.union_stack_member(stack, m, path)?;
                        ParserOp::ExtractUnionNext { stack, member }
                    }
                    other => return err(path, format!("unsupported extract target `{other}`")),
                }
            }
            "extract_VL" => {
                let (t, val) = Self::typed(p(0)?, path)?;
                match t.as_str() {
                    "regular" => {
                        let h = self.header_name(val.as_str().unwrap_or_default(), path)?;
                        let bits = self.root(p(1)?, path, Use::Exact)?;
                        ParserOp::ExtractVarbit {
                            header: HeaderRef::Static(h),
                            bits,
                        }
                    }
                    "stack" => {
                        let stack = self.stack_ref(p(0)?, path)?;
                        let bits = self.root(p(1)?, path, Use::Exact)?;
                        ParserOp::ExtractNextVarbit { stack, bits }
                    }
                    other => {
                        return err(path, format!("unsupported extract_VL target `{other}`"));
                    }
                }
            }
            "set" => {
                let dst = self.lower_fref(p(0)?, path)?;
                let w = dst.width(&self.p);
                let src = self.root(p(1)?, path, Use::Store(w))?;
                ParserOp::Set { dst, src }
            }
            "verify" => {
                let cond = self.root(p(0)?, path, Use::Exact)?;
                let error = self.root(p(1)?, path, Use::Exact)?;
                ParserOp::Verify { cond, error }
            }
            "shift" => {
                let bytes = self.const_u32(p(0)?, path)?;
                let c = self
                    .p
                    .exprs
                    .push_derived(Expr::Const(BigInt::from(bytes) * 8));
                self.p.exprs.finish_root(c, Use::Exact);
                ParserOp::Advance(c)
            }
            "advance" => ParserOp::Advance(self.root(p(0)?, path, Use::Exact)?),
            "primitive" => {
                let inner = p(0)?;
                let op = inner
                    .get("op")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let params = inner
                    .get("parameters")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                ParserOp::Primitive(self.lower_prim(&op, &params, path, None)?)
            }
            other => return err(path, format!("unsupported parser operation `{other}`")),
        })
    }

    // ---------------------------------------------------------------- controls

    /// The control blocks (the JSON's `pipelines`: bmv2 calls a control block a
    /// pipeline), their tables and action profiles.
    fn controls(&mut self) -> R<()> {
        let j = self.j;
        // action profiles first (tables refer to them)
        let mut prof_idx: HashMap<&str, u32> = HashMap::new();
        for (pi, pl) in j.pipelines.iter().enumerate() {
            for (ai, ap) in pl.action_profiles.iter().enumerate() {
                let path = format!("pipelines[{pi}].action_profiles[{ai}]");
                let selector = match &ap.selector {
                    None => None,
                    Some(s) => {
                        let Some(algo) = HashAlgo::from_name(&s.algo) else {
                            return err(&path, format!("unknown selector algorithm `{}`", s.algo));
                        };
                        let mut calc_inputs = vec![];
                        let mut frefs = vec![];
                        for (k, f) in s.input.iter().enumerate() {
                            let fr = self.lower_fref(f, &format!("{path}.selector.input[{k}]"))?;
                            calc_inputs.push(CalcInput::Field(fr.clone()));
                            frefs.push(fr);
                        }
                        let custom_slot =
                            matches!(algo, HashAlgo::Crc16Custom | HashAlgo::Crc32Custom).then(
                                || {
                                    self.p.custom_crc_slots += 1;
                                    self.p.custom_crc_slots - 1
                                },
                            );
                        let cid = self.p.calculations.len() as u32;
                        self.p.calculations.push(Calculation {
                            name: format!("{}$selector", ap.name),
                            json_id: -1,
                            algo,
                            inputs: calc_inputs,
                            custom_slot,
                        });
                        Some((cid, frefs))
                    }
                };
                prof_idx.insert(&ap.name, self.p.action_profiles.len() as u32);
                self.p.action_profiles.push(ActionProfileInfo {
                    name: ap.name.clone(),
                    json_id: ap.id,
                    max_size: ap.max_size,
                    selector,
                    tables: vec![],
                });
            }
        }
        for (pi, pl) in j.pipelines.iter().enumerate() {
            let control = self.control(pi, pl, &prof_idx)?;
            match pl.name.as_str() {
                "ingress" => self.p.ingress = control,
                "egress" => self.p.egress = control,
                _ => {}
            }
        }
        if !j.pipelines.iter().any(|p| p.name == "ingress") && !j.pipelines.is_empty() {
            return err(
                "pipelines",
                "simple_switch needs a pipeline named `ingress`",
            );
        }
        // direct counters and meters
        for (ci, c) in self.p.counters.iter().enumerate() {
            if let Some(t) = c.direct_table {
                self.p.tables[t as usize].direct_counter = Some(ci as u32);
            }
        }
        for (mi, m) in self.p.meters.iter().enumerate() {
            if let Some((t, _)) = &m.direct {
                self.p.tables[*t as usize].direct_meter = Some(mi as u32);
            }
        }
        Ok(())
    }

    fn control(
        &mut self,
        pi: usize,
        pl: &'a p4jet_json::Pipeline,
        prof_idx: &HashMap<&str, u32>,
    ) -> R<Control> {
        let ppath = format!("pipelines[{pi}]");
        // node names → (kind, index in its json array)
        #[derive(Clone, Copy)]
        enum K {
            T(usize),
            C(usize),
            A(usize),
        }
        let mut by_name: HashMap<&str, K> = HashMap::new();
        for (i, t) in pl.tables.iter().enumerate() {
            by_name.insert(&t.name, K::T(i));
        }
        for (i, c) in pl.conditionals.iter().enumerate() {
            if by_name.insert(&c.name, K::C(i)).is_some() {
                return err(
                    &format!("{ppath}.conditionals[{i}]"),
                    format!("duplicate node name `{}`", c.name),
                );
            }
        }
        for (i, a) in pl.action_calls.iter().enumerate() {
            if by_name.insert(&a.name, K::A(i)).is_some() {
                return err(
                    &format!("{ppath}.action_calls[{i}]"),
                    format!("duplicate node name `{}`", a.name),
                );
            }
        }
        let succ = |k: K| -> Vec<Option<String>> {
            match k {
                K::T(i) => {
                    let t = &pl.tables[i];
                    let mut v: Vec<Option<String>> = t
                        .next_tables
                        .values()
                        .map(|x| x.as_str().map(str::to_string))
                        .collect();
                    v.push(t.base_default_next.clone());
                    v
                }
                K::C(i) => vec![
                    pl.conditionals[i].true_next.clone(),
                    pl.conditionals[i].false_next.clone(),
                ],
                K::A(i) => vec![pl.action_calls[i].next_node.clone()],
            }
        };
        // topological order by DFS post-order from init
        let mut order: Vec<&str> = vec![];
        let mut state: HashMap<&str, u8> = HashMap::new(); // 1 = on stack, 2 = done
        fn visit<'n>(
            n: &'n str,
            by_name: &HashMap<&'n str, K>,
            succ: &dyn Fn(K) -> Vec<Option<String>>,
            state: &mut HashMap<&'n str, u8>,
            order: &mut Vec<&'n str>,
            path: &str,
        ) -> R<()> {
            match state.get(n) {
                Some(2) => return Ok(()),
                Some(_) => return err(path, format!("control flow has a cycle through `{n}`")),
                None => {}
            }
            let Some((key, k)) = by_name.get_key_value(n) else {
                return err(path, format!("unknown control node `{n}`"));
            };
            state.insert(key, 1);
            for s in succ(*k).into_iter().flatten() {
                let Some((sk, _)) = by_name.get_key_value(s.as_str()) else {
                    return err(path, format!("node `{n}` continues to unknown node `{s}`"));
                };
                visit(sk, by_name, succ, state, order, path)?;
            }
            state.insert(key, 2);
            order.push(key);
            Ok(())
        }
        if let Some(init) = &pl.init_table {
            let Some((ik, _)) = by_name.get_key_value(init.as_str()) else {
                return err(
                    &format!("{ppath}.init_table"),
                    format!("unknown node `{init}`"),
                );
            };
            visit(ik, &by_name, &succ, &mut state, &mut order, &ppath)?;
        }
        order.reverse();
        let node_index: HashMap<&str, u32> = order
            .iter()
            .enumerate()
            .map(|(i, n)| (*n, i as u32))
            .collect();
        let nref = |n: &Option<String>| -> Option<u32> {
            n.as_ref().and_then(|n| node_index.get(n.as_str()).copied())
        };

        // lower every table of the pipeline (reachable or not)
        for (ti, t) in pl.tables.iter().enumerate() {
            let path = format!("{ppath}.tables[{ti}]");
            let info = self.table(pi as u32, t, &path, prof_idx, &nref)?;
            let tid = self.p.tables.len() as u32;
            if let Some(ap) = info.action_profile {
                self.p.action_profiles[ap as usize].tables.push(tid);
            }
            self.p.max_key_bytes = self.p.max_key_bytes.max(info.key_bytes);
            self.p.tables.push(info);
        }
        let mut nodes = vec![];
        for n in &order {
            let node = match by_name.get(n).copied() {
                Some(K::T(_)) => ControlNode::Table(self.table_idx.get(n).copied().unwrap_or(0)),
                Some(K::C(i)) => {
                    let c = &pl.conditionals[i];
                    let expr = self.root(
                        &c.expression,
                        &format!("{ppath}.conditionals[{i}].expression"),
                        Use::Exact,
                    )?;
                    let text = match &c.source_info {
                        Some(s) => format!(
                            "{}({}) Condition \"{}\"",
                            s.filename, s.line, s.source_fragment
                        ),
                        None => format!("Condition \"{}\"", c.name),
                    };
                    self.p.log_text.conds.insert(c.name.clone(), text);
                    ControlNode::Cond {
                        name: c.name.clone(),
                        expr,
                        t: nref(&c.true_next),
                        f: nref(&c.false_next),
                    }
                }
                Some(K::A(i)) => {
                    let a = &pl.action_calls[i];
                    let Some(action) = self.action_json_id.get(&a.action_id).copied() else {
                        return err(
                            &format!("{ppath}.action_calls[{i}]"),
                            format!("unknown action id {}", a.action_id),
                        );
                    };
                    ControlNode::Call {
                        name: a.name.clone(),
                        action,
                        next: nref(&a.next_node),
                    }
                }
                None => continue,
            };
            nodes.push(node);
        }
        Ok(Control {
            name: pl.name.clone(),
            init: if nodes.is_empty() { None } else { Some(0) },
            nodes,
        })
    }

    fn action_blob(&self, action: u32, data: &[String], path: &str) -> R<Box<[u8]>> {
        let a = &self.p.actions[action as usize];
        if data.len() != a.params.len() {
            return err(
                path,
                format!(
                    "action `{}` takes {} parameters, {} given",
                    a.name,
                    a.params.len(),
                    data.len()
                ),
            );
        }
        let mut blob = Vec::with_capacity(a.data_bytes as usize);
        for (d, (_, w)) in data.iter().zip(&a.params) {
            // masked to the parameter's width, as the runtime API packs its data
            // (the engine copies whole parameter bytes into fields that own theirs)
            let mut b = to_bytes(&parse_hexstr(d, path)?, *w);
            if !w.is_multiple_of(8)
                && let Some(top) = b.first_mut()
            {
                *top &= (1u8 << (w % 8)) - 1;
            }
            blob.extend(b);
        }
        Ok(blob.into_boxed_slice())
    }

    fn table(
        &mut self,
        control: u32,
        t: &p4jet_json::Table,
        path: &str,
        prof_idx: &HashMap<&str, u32>,
        nref: &dyn Fn(&Option<String>) -> Option<u32>,
    ) -> R<TableInfo> {
        let mut keys = vec![];
        let mut key_bytes = 0;
        for (ki, k) in t.key.iter().enumerate() {
            let kp = format!("{path}.key[{ki}]");
            let kind = match k.match_type.as_str() {
                "exact" => MatchKind::Exact,
                "lpm" => MatchKind::Lpm,
                "ternary" => MatchKind::Ternary,
                "range" => MatchKind::Range,
                "valid" => MatchKind::Valid,
                "optional" => MatchKind::Optional,
                other => return err(&kp, format!("unsupported match kind `{other}`")),
            };
            let (source, width, name) = if kind == MatchKind::Valid {
                let hn = k.target.as_str().unwrap_or_default();
                let h = self.header_name(hn, &kp)?;
                (
                    KeySource::Valid(HeaderRef::Static(h)),
                    1,
                    format!("{hn}.$valid$"),
                )
            } else {
                let (h, f) = Self::str_pair(&k.target, &kp)?;
                let hid = self.header_name(&h, &kp)?;
                if f == "$valid$" {
                    (
                        KeySource::Valid(HeaderRef::Static(hid)),
                        1,
                        format!("{h}.$valid$"),
                    )
                } else {
                    let fid = self.field_in_header(hid, &f, &kp)?;
                    let w = self.p.fields[fid as usize].loc.width;
                    (
                        KeySource::Field(FieldRef::Static(fid)),
                        w,
                        format!("{h}.{f}"),
                    )
                }
            };
            let mask = match &k.mask {
                Some(m) => {
                    let v = parse_hexstr(m, &kp)?;
                    Some(BigUint::from_bytes_be(&to_bytes(&v, width)))
                }
                None => None,
            };
            key_bytes += width.div_ceil(8);
            keys.push(TableKey {
                kind,
                source,
                width,
                mask,
                name: k.name.clone().unwrap_or(name),
            });
        }
        let actions: Vec<u32> = match &t.action_ids {
            Some(ids) => ids
                .iter()
                .map(|id| {
                    self.action_json_id
                        .get(id)
                        .copied()
                        .ok_or_else(|| LoadError::new(path, format!("unknown action id {id}")))
                })
                .collect::<R<_>>()?,
            None => t
                .actions
                .iter()
                .map(|n| {
                    self.action_idx
                        .get(n.as_str())
                        .copied()
                        .ok_or_else(|| LoadError::new(path, format!("unknown action `{n}`")))
                })
                .collect::<R<_>>()?,
        };
        let next =
            if t.next_tables.contains_key("__HIT__") || t.next_tables.contains_key("__MISS__") {
                let g = |k: &str| {
                    t.next_tables
                        .get(k)
                        .and_then(Value::as_str)
                        .map(str::to_string)
                };
                TableNext::HitMiss {
                    hit: nref(&g("__HIT__")),
                    miss: nref(&g("__MISS__")),
                }
            } else {
                let mut v = vec![];
                for a in &actions {
                    let an = &self.p.actions[*a as usize].name;
                    let n = t
                        .next_tables
                        .get(an)
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    v.push(nref(&n));
                }
                TableNext::ByAction(v)
            };
        let kind = match t.kind.as_str() {
            "simple" => TableKind::Simple,
            "indirect" => TableKind::Indirect,
            "indirect_ws" => TableKind::IndirectWs,
            other => return err(path, format!("unsupported table type `{other}`")),
        };
        let action_profile = if kind == TableKind::Simple {
            None
        } else {
            let n = t
                .action_profile
                .as_deref()
                .or(t.act_prof_name.as_deref())
                .unwrap_or_default();
            match prof_idx.get(n) {
                Some(x) => Some(*x),
                None => {
                    return err(
                        path,
                        format!(
                            "indirect table `{}` names unknown action profile `{n}`",
                            t.name
                        ),
                    );
                }
            }
        };
        let (default_entry, dconst, deconst) = match &t.default_entry {
            Some(d) => {
                let Some(a) = self.action_json_id.get(&d.action_id).copied() else {
                    return err(
                        &format!("{path}.default_entry"),
                        format!("unknown action id {}", d.action_id),
                    );
                };
                let blob = self.action_blob(a, &d.action_data, &format!("{path}.default_entry"))?;
                (
                    Some(ActionCall {
                        action: a,
                        data: blob.into(),
                    }),
                    d.action_const,
                    d.action_entry_const,
                )
            }
            None => (None, false, false),
        };
        let const_entries = match &t.entries {
            None => None,
            Some(es) => {
                let mut out = vec![];
                for (ei, e) in es.iter().enumerate() {
                    let ep = format!("{path}.entries[{ei}]");
                    if e.match_key.len() != keys.len() {
                        return err(&ep, "const entry has the wrong number of key elements");
                    }
                    let mut ck = vec![];
                    for (m, k) in e.match_key.iter().zip(&keys) {
                        let hex = |s: &Option<String>| -> R<Vec<u8>> {
                            let s = s.as_deref().unwrap_or("0x0");
                            Ok(to_bytes(&parse_hexstr(s, &ep)?, k.width))
                        };
                        ck.push(match m.match_type.as_str() {
                            "exact" | "valid" => ConstKey::Exact(hex(&m.key)?),
                            "lpm" => {
                                ConstKey::Lpm(hex(&m.key)?, m.prefix_length.unwrap_or(k.width))
                            }
                            "ternary" | "optional" => {
                                ConstKey::Ternary(hex(&m.key)?, hex(&m.mask)?)
                            }
                            "range" => ConstKey::Range(hex(&m.start)?, hex(&m.end)?),
                            other => {
                                return err(
                                    &ep,
                                    format!("unsupported const entry match type `{other}`"),
                                );
                            }
                        });
                    }
                    let Some(a) = self.action_json_id.get(&e.action_entry.action_id).copied()
                    else {
                        return err(
                            &ep,
                            format!("unknown action id {}", e.action_entry.action_id),
                        );
                    };
                    let blob = self.action_blob(a, &e.action_entry.action_data, &ep)?;
                    let priority = e.priority.unwrap_or(ei as i64 + 1);
                    out.push(ConstEntryInfo {
                        keys: ck,
                        action: ActionCall {
                            action: a,
                            data: blob.into(),
                        },
                        priority: i32::try_from(priority).unwrap_or(i32::MAX),
                    });
                }
                Some(out)
            }
        };
        let match_type = match t.match_type.as_deref() {
            Some("lpm") => MatchKind::Lpm,
            Some("ternary") => MatchKind::Ternary,
            Some("range") => MatchKind::Range,
            Some("optional") => MatchKind::Optional,
            Some("valid") => MatchKind::Valid,
            _ => MatchKind::Exact,
        };
        Ok(TableInfo {
            name: t.name.clone(),
            json_id: t.id,
            match_type,
            control,
            keys,
            key_bytes,
            kind,
            action_profile,
            max_size: t.max_size,
            actions,
            next,
            base_default_next: nref(&t.base_default_next),
            default_entry,
            default_action_const: dconst,
            default_entry_const: deconst,
            const_entries,
            direct_counter: None,
            direct_meter: None,
            support_timeout: t.support_timeout,
            with_counters: t.with_counters,
        })
    }

    // ---------------------------------------------------------------- the rest

    fn checksums(&mut self) -> R<()> {
        let j = self.j;
        for (i, c) in j.checksums.iter().enumerate() {
            let path = format!("checksums[{i}]");
            let hid = self.header_name(&c.target.0, &path)?;
            let target = FieldRef::Static(self.field_in_header(hid, &c.target.1, &path)?);
            let Some(calc) = self.calc_idx.get(c.calculation.as_str()).copied() else {
                return err(&path, format!("unknown calculation `{}`", c.calculation));
            };
            let cond = match &c.if_cond {
                None | Some(Value::Null) => None,
                Some(v) => Some(self.root(v, &format!("{path}.if_cond"), Use::Exact)?),
            };
            self.p.checksums.push(ChecksumInfo {
                name: c.name.clone(),
                target,
                calc,
                verify: c.verify,
                update: c.update,
                cond,
            });
        }
        Ok(())
    }

    fn deparser(&mut self) -> R<()> {
        let j = self.j;
        let Some((di, d)) = j
            .deparsers
            .iter()
            .enumerate()
            .find(|(_, d)| d.name == "deparser")
        else {
            if j.deparsers.is_empty() {
                return Ok(());
            }
            return err(
                "deparsers",
                "simple_switch needs a deparser named `deparser`",
            );
        };
        if !d.primitives.is_empty() {
            return err(
                &format!("deparsers[{di}].primitives"),
                "deparser primitives are not supported",
            );
        }
        for (k, n) in d.order.iter().enumerate() {
            let path = format!("deparsers[{di}].order[{k}]");
            // a union or stack name expands to its members
            if let Some(h) = self.header_idx.get(n.as_str()) {
                self.p.deparser.order.push(*h);
            } else if let Some(s) = self.stack_idx.get(n.as_str()) {
                let hs = self.p.stacks[*s as usize].headers.clone();
                self.p.deparser.order.extend(hs);
            } else if let Some(u) = self.union_idx.get(n.as_str()) {
                let hs = self.p.unions[*u as usize].headers.clone();
                self.p.deparser.order.extend(hs);
            } else {
                return err(&path, format!("unknown header `{n}`"));
            }
        }
        Ok(())
    }

    fn field_lists(&mut self) -> R<()> {
        let j = self.j;
        for (i, fl) in j.field_lists.iter().enumerate() {
            let path = format!("field_lists[{i}]");
            let fields = self.list_fields(&fl.elements, &path)?;
            self.p.field_lists.push(FieldListInfo {
                id: fl.id as u32,
                name: fl.name.clone(),
                fields,
            });
        }
        for (i, ll) in j.learn_lists.iter().enumerate() {
            let path = format!("learn_lists[{i}]");
            let fields = self.list_fields(&ll.elements, &path)?;
            self.p.learn_lists.push(FieldListInfo {
                id: ll.id as u32,
                name: ll.name.clone(),
                fields,
            });
        }
        Ok(())
    }

    fn list_fields(&mut self, elems: &[Value], path: &str) -> R<Vec<FieldRef>> {
        let mut out = vec![];
        for (k, e) in elems.iter().enumerate() {
            let ep = format!("{path}.elements[{k}]");
            match e.get("type").and_then(Value::as_str) {
                Some("field") => out.push(self.lower_fref(e, &ep)?),
                Some(other) => {
                    return err(&ep, format!("unsupported field list element `{other}`"));
                }
                None => return err(&ep, "field list element without a type"),
            }
        }
        Ok(out)
    }

    /// `mark_to_drop(h)`: on `standard_metadata` (or without a parameter, P4-14's
    /// `drop()`) the architecture's drop; on another header (p4c's copy of the standard
    /// metadata) its own `egress_spec` and `mcast_grp`, as bmv2 does.
    fn mark_to_drop(&self, ps: &[Value], path: &str) -> R<Prim> {
        let Some(v) = ps.first() else {
            return Ok(Prim::MarkToDrop);
        };
        let name = Self::unwrap_expr(v).get("value").and_then(Value::as_str);
        let h = match name {
            Some(n) if v.get("type").and_then(Value::as_str) == Some("header") => {
                self.header_name(n, path)?
            }
            _ => return Ok(Prim::MarkToDrop),
        };
        if Some(&h) == self.header_idx.get("standard_metadata") {
            return Ok(Prim::MarkToDrop);
        }
        Ok(Prim::MarkToDropIn {
            egress_spec: self.field_in_header(h, "egress_spec", path)?,
            mcast_grp: self.field_in_header(h, "mcast_grp", path).ok(),
        })
    }

    fn std_meta(&mut self) {
        let f = |s: &Self, name: &str| -> Option<u32> {
            let h = s.header_idx.get("standard_metadata").copied()?;
            if let Some(x) = s.p.headers[h as usize]
                .fields
                .iter()
                .copied()
                .find(|x| s.p.fields[*x as usize].name == name)
            {
                return Some(x);
            }
            // aliases: intrinsic_metadata.* / queueing_metadata.*
            for (alias, (ah, af)) in &s.j.field_aliases {
                if alias.rsplit('.').next() == Some(name)
                    && let Some(hh) = s.header_idx.get(ah.as_str())
                    && let Some(x) = s.p.headers[*hh as usize]
                        .fields
                        .iter()
                        .copied()
                        .find(|x| s.p.fields[*x as usize].name == *af)
                {
                    return Some(x);
                }
            }
            None
        };
        self.p.std = StdMeta {
            ingress_port: f(self, "ingress_port"),
            egress_spec: f(self, "egress_spec"),
            egress_port: f(self, "egress_port"),
            instance_type: f(self, "instance_type"),
            packet_length: f(self, "packet_length"),
            enq_timestamp: f(self, "enq_timestamp"),
            enq_qdepth: f(self, "enq_qdepth"),
            deq_timedelta: f(self, "deq_timedelta"),
            deq_qdepth: f(self, "deq_qdepth"),
            ingress_global_timestamp: f(self, "ingress_global_timestamp"),
            egress_global_timestamp: f(self, "egress_global_timestamp"),
            mcast_grp: f(self, "mcast_grp"),
            egress_rid: f(self, "egress_rid"),
            checksum_error: f(self, "checksum_error"),
            parser_error: f(self, "parser_error"),
            priority: f(self, "priority"),
            qid: f(self, "qid"),
            header: self.header_idx.get("standard_metadata").copied(),
        };
    }
}

fn mask128(w: u32) -> u128 {
    if w >= 128 {
        u128::MAX
    } else {
        (1u128 << w) - 1
    }
}
