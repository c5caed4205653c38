//! Generators: table entries (simple_switch_CLI commands) and frames for a program.
//!
//! Frames come in three kinds: valid by construction (a walk of the program's parse
//! graph that writes each header's bytes, forces select keys to the value of a
//! transition chosen at random, and appends a payload), mutated (corpus STF packets or
//! generated ones with bit flips, byte changes, insertions, deletions, truncation,
//! splices) and random bytes. Fields used as table keys or select keys draw from small
//! per-field value pools shared with the entry generator, so that frames hit entries.

use std::collections::HashMap;

use rand::Rng;
use rand::rngs::StdRng;
use serde_json::Value;

use crate::model::{KeyKind, ProgramInfo, TableInfo};

/// Values shared by entries and frames.
#[derive(Debug, Clone, Default)]
pub struct Pools {
    /// Per (header, field).
    pub fields: HashMap<(String, String), Vec<u128>>,
    /// Per width: every pool value of that width.
    pub widths: HashMap<u32, Vec<u128>>,
}

fn mask(w: u32) -> u128 {
    if w >= 128 {
        u128::MAX
    } else {
        (1u128 << w) - 1
    }
}

fn random_value(rng: &mut StdRng, w: u32) -> u128 {
    let v: u128 = rng.r#gen();
    match rng.gen_range(0..10) {
        0 => 0,
        1 => mask(w),
        2 => rng.gen_range(0..16) & mask(w),
        _ => v & mask(w),
    }
}

impl Pools {
    /// Pools for every table key and parser select field of `info`.
    pub fn new(info: &ProgramInfo, rng: &mut StdRng) -> Pools {
        let mut p = Pools::default();
        let add = |p: &mut Pools, rng: &mut StdRng, h: &str, f: &str, w: u32| {
            if w == 0 || w > 128 {
                return;
            }
            let key = (h.to_string(), f.to_string());
            if p.fields.contains_key(&key) {
                return;
            }
            let n = rng.gen_range(2..=4);
            let vals: Vec<u128> = (0..n).map(|_| random_value(rng, w)).collect();
            p.widths.entry(w).or_default().extend(vals.iter().copied());
            p.fields.insert(key, vals);
        };
        for t in &info.tables {
            for k in &t.keys {
                add(&mut p, rng, &k.target.0, &k.target.1, k.width);
            }
        }
        // constants the program compares fields with, and their neighbours
        for ((h, f), c) in &info.constants {
            let Some(w) = info.width(h, f) else { continue };
            if w == 0 || w > 128 {
                continue;
            }
            let vals = p.fields.entry((h.clone(), f.clone())).or_default();
            // the constant itself twice as likely as its neighbours
            for v in [*c, *c, c.wrapping_add(1), c.wrapping_sub(1)] {
                vals.push(v & mask(w));
            }
        }
        let mut names: Vec<&String> = info.states.keys().collect();
        names.sort();
        for n in names {
            let s = &info.states[n];
            for k in &s.transition_key {
                if k.get("type").and_then(Value::as_str) == Some("field")
                    && let Some(a) = k.get("value").and_then(Value::as_array)
                    && let (Some(h), Some(f)) = (
                        a.first().and_then(Value::as_str),
                        a.get(1).and_then(Value::as_str),
                    )
                    && let Some(w) = info.width(h, f)
                {
                    add(&mut p, rng, h, f, w);
                }
            }
        }
        p
    }

    /// Adds the key values and action parameters of `table_add` commands (the
    /// corpus's own entries) to the pools of their fields.
    pub fn absorb(&mut self, info: &ProgramInfo, commands: &[String]) {
        for c in commands {
            let mut w = c.split_whitespace();
            if w.next() != Some("table_add") {
                continue;
            }
            let (Some(t), Some(a)) = (w.next(), w.next()) else {
                continue;
            };
            let Some(table) = info
                .tables
                .iter()
                .find(|x| x.name == t || x.name.ends_with(&format!(".{t}")))
            else {
                continue;
            };
            let rest: Vec<&str> = w.collect();
            let split = rest.iter().position(|x| *x == "=>").unwrap_or(rest.len());
            for (k, tok) in table.keys.iter().zip(&rest[..split]) {
                for part in tok.split("&&&").take(1).flat_map(|x| x.split("->")) {
                    let v = part.split('/').next().unwrap_or(part);
                    if let Some(v) = parse_cli_value(v) {
                        self.push(&k.target.0, &k.target.1, k.width, v);
                    }
                }
            }
            if let Some(action) = table
                .actions
                .iter()
                .find(|x| x.name == a || x.name.ends_with(&format!(".{a}")))
            {
                for ((w, tg), tok) in action
                    .params
                    .iter()
                    .zip(&action.param_targets)
                    .zip(rest.iter().skip(split + 1))
                {
                    if let (Some((h, f)), Some(v)) = (tg, parse_cli_value(tok)) {
                        self.push(h, f, *w, v);
                    }
                }
            }
        }
    }

    fn push(&mut self, h: &str, f: &str, w: u32, v: u128) {
        if w == 0 || w > 128 {
            return;
        }
        let v = v & mask(w);
        let vals = self
            .fields
            .entry((h.to_string(), f.to_string()))
            .or_default();
        if !vals.contains(&v) {
            vals.push(v);
            self.widths.entry(w).or_default().push(v);
        }
    }

    /// A value for a field of width `w`: from its pool, from the width's pool, or
    /// random.
    pub fn pick(&self, rng: &mut StdRng, h: &str, f: &str, w: u32) -> u128 {
        let r = rng.gen_range(0..10);
        if r < 7
            && let Some(v) = self.fields.get(&(h.to_string(), f.to_string()))
            && !v.is_empty()
        {
            return v[rng.gen_range(0..v.len())] & mask(w);
        }
        if r < 8
            && let Some(v) = self.widths.get(&w)
            && !v.is_empty()
        {
            return v[rng.gen_range(0..v.len())] & mask(w);
        }
        random_value(rng, w)
    }
}

/// A value as simple_switch_CLI reads it: decimal, 0x/0b/0o, a MAC address, a
/// dotted IPv4 or an IPv6 address.
pub fn parse_cli_value(s: &str) -> Option<u128> {
    let l = s.to_ascii_lowercase();
    if let Some(h) = l.strip_prefix("0x") {
        return u128::from_str_radix(h, 16).ok();
    }
    if let Some(b) = l.strip_prefix("0b") {
        return u128::from_str_radix(b, 2).ok();
    }
    if let Ok(v) = l.parse::<u128>() {
        return Some(v);
    }
    if let Ok(a) = l.parse::<std::net::Ipv4Addr>() {
        return Some(u128::from(u32::from(a)));
    }
    if let Ok(a) = l.parse::<std::net::Ipv6Addr>() {
        return Some(u128::from(a));
    }
    let parts: Vec<&str> = l.split(':').collect();
    if parts.len() == 6 {
        let mut v = 0u128;
        for p in parts {
            v = (v << 8) | u128::from(u8::from_str_radix(p, 16).ok()?);
        }
        return Some(v);
    }
    None
}

fn hexv(v: u128) -> String {
    format!("0x{v:x}")
}

/// Settings of the entry generator.
#[derive(Debug, Clone, Copy)]
pub struct EntryOptions {
    /// Largest number of entries per table.
    pub max_entries: u32,
    /// Ports frames may be sent to (0..ports).
    pub ports: u32,
}

impl Default for EntryOptions {
    fn default() -> Self {
        EntryOptions {
            max_entries: 24,
            ports: 8,
        }
    }
}

/// A parameter value for an action parameter of width `w` assigned to `target`.
fn param_value(
    rng: &mut StdRng,
    pools: &Pools,
    w: u32,
    target: Option<&(String, String)>,
    opts: &EntryOptions,
) -> u128 {
    let f = target.map(|t| t.1.as_str()).unwrap_or("");
    if w == 9 || f.ends_with("egress_spec") || f.ends_with("port") {
        return match rng.gen_range(0..10) {
            0 => 511 & mask(w),
            1 => random_value(rng, w),
            _ => rng.gen_range(0..opts.ports as u128) & mask(w),
        };
    }
    if f.contains("mcast_grp") || f.contains("grp") || f.contains("group") {
        return rng.gen_range(0..6u128) & mask(w);
    }
    if f.contains("session") || f.contains("mirror") {
        return rng.gen_range(0..10u128) & mask(w);
    }
    match target {
        Some((h, f)) => pools.pick(rng, h, f, w),
        None => {
            if rng.gen_bool(0.3) {
                rng.gen_range(0..8u128) & mask(w)
            } else {
                random_value(rng, w)
            }
        }
    }
}

fn key_text(rng: &mut StdRng, pools: &Pools, t: &TableInfo) -> String {
    let mut parts = vec![];
    for k in &t.keys {
        let w = k.width.max(1);
        let (h, f) = (&k.target.0, &k.target.1);
        let v = if k.kind == KeyKind::Valid || f == "$valid$" {
            rng.gen_range(0..2u128)
        } else if w > 128 {
            0
        } else {
            pools.pick(rng, h, f, w)
        };
        let s = match k.kind {
            KeyKind::Exact | KeyKind::Valid => hexv(v),
            KeyKind::Lpm => {
                let len = match rng.gen_range(0..4) {
                    0 => w,
                    1 => 0,
                    _ => rng.gen_range(0..=w),
                };
                let m = if len == 0 {
                    0
                } else {
                    mask(w) & !mask(w - len)
                };
                let v = if rng.gen_bool(0.8) { v & m } else { v };
                format!("{}/{len}", hexv(v))
            }
            KeyKind::Ternary => {
                let m = match rng.gen_range(0..8) {
                    0..=2 => mask(w),
                    3 => 0,
                    4 | 5 => {
                        let len = rng.gen_range(0..=w);
                        if len == 0 {
                            0
                        } else {
                            mask(w) & !mask(w - len)
                        }
                    }
                    _ => random_value(rng, w),
                };
                let v = if rng.gen_bool(0.8) { v & m } else { v };
                format!("{}&&&{}", hexv(v), hexv(m))
            }
            KeyKind::Range => {
                let other = pools.pick(rng, h, f, w);
                let (lo, hi) = match rng.gen_range(0..5) {
                    0 => (0, mask(w)),
                    1 => (v, v),
                    _ => (v.min(other), v.max(other)),
                };
                format!("{}->{}", hexv(lo), hexv(hi))
            }
        };
        parts.push(s);
    }
    parts.join(" ")
}

/// Random control-plane state for a program: multicast groups, mirroring sessions,
/// register cells, entries and default actions (simple_switch_CLI commands).
pub fn entries(
    info: &ProgramInfo,
    pools: &Pools,
    rng: &mut StdRng,
    opts: &EntryOptions,
) -> Vec<String> {
    let mut cmds = vec![];
    // multicast groups 1..=4, each with nodes on random ports
    let mut node = 0;
    for g in 1..=4 {
        cmds.push(format!("mc_mgrp_create {g}"));
        for _ in 0..rng.gen_range(0..=2) {
            let n = rng.gen_range(1..=3);
            let mut ports: Vec<u32> = (0..n).map(|_| rng.gen_range(0..opts.ports)).collect();
            ports.sort_unstable();
            ports.dedup();
            let ports: Vec<String> = ports.iter().map(|p| p.to_string()).collect();
            cmds.push(format!(
                "mc_node_create {} {}",
                rng.gen_range(0..4),
                ports.join(" ")
            ));
            cmds.push(format!("mc_node_associate {g} {node}"));
            node += 1;
        }
    }
    for s in 1..=9 {
        if rng.gen_bool(0.7) {
            cmds.push(format!(
                "mirroring_add {s} {}",
                rng.gen_range(0..opts.ports)
            ));
        }
    }
    for (name, size, width) in &info.registers {
        if *size == 0 {
            continue;
        }
        for _ in 0..rng.gen_range(0..=4) {
            let w = (*width).min(62);
            cmds.push(format!(
                "register_write {name} {} {}",
                rng.gen_range(0..*size),
                random_value(rng, w)
            ));
        }
    }
    // meters with rates so low that no token is added during a run: both buckets
    // start full (their burst sizes), so colours depend on packet counts, not on time
    for (name, size) in &info.meters {
        if *size == 0 || rng.gen_bool(0.3) {
            continue;
        }
        let (b1, b2) = (rng.gen_range(1..=20u32), rng.gen_range(1..=40u32));
        cmds.push(format!(
            "meter_array_set_rates {name} 0.000000001:{} 0.000000001:{}",
            b1.min(b2),
            b1.max(b2)
        ));
        for _ in 0..rng.gen_range(0..3) {
            let (c1, c2) = (rng.gen_range(1..=10u32), rng.gen_range(1..=10u32));
            cmds.push(format!(
                "meter_set_rates {name} {} 0.000000001:{} 0.000000001:{}",
                rng.gen_range(0..*size),
                c1.min(c2),
                c1.max(c2)
            ));
        }
    }
    // action profiles: members (and groups for selectors), shared by their tables
    let mut profiles: HashMap<String, (u32, u32)> = HashMap::new();
    for t in &info.tables {
        let Some((prof, selector)) = &t.profile else {
            continue;
        };
        if profiles.contains_key(prof) || t.actions.is_empty() {
            continue;
        }
        let members = rng.gen_range(1..=5);
        for _ in 0..members {
            let a = &t.actions[rng.gen_range(0..t.actions.len())];
            let params: Vec<String> = a
                .params
                .iter()
                .zip(&a.param_targets)
                .map(|(w, tg)| hexv(param_value(rng, pools, *w, tg.as_ref(), opts)))
                .collect();
            cmds.push(
                format!(
                    "act_prof_create_member {prof} {} {}",
                    a.name,
                    params.join(" ")
                )
                .trim_end()
                .to_string(),
            );
        }
        let mut groups = 0;
        if *selector {
            groups = rng.gen_range(0..=3);
            for g in 0..groups {
                cmds.push(format!("act_prof_create_group {prof}"));
                // never empty: bmv2 refuses an empty group in an entry
                let mut ms: Vec<u32> = (0..rng.gen_range(1..=members))
                    .map(|_| rng.gen_range(0..members))
                    .collect();
                ms.sort_unstable();
                ms.dedup();
                for m in ms {
                    cmds.push(format!("act_prof_add_member_to_group {prof} {m} {g}"));
                }
            }
        }
        profiles.insert(prof.clone(), (members, groups));
    }
    for t in &info.tables {
        if t.immutable && t.profile.is_none() {
            // const entries: only the default action may change
        } else if !t.keys.is_empty() {
            let cap = t.max_size.clamp(1, opts.max_entries);
            let n = rng.gen_range(0..=cap);
            for _ in 0..n {
                let keys = key_text(rng, pools, t);
                let prio = if t.needs_priority {
                    format!(" {}", rng.gen_range(1..=64))
                } else {
                    String::new()
                };
                if let Some((prof, _)) = &t.profile {
                    let (members, groups) = profiles.get(prof).copied().unwrap_or((0, 0));
                    if groups > 0 && rng.gen_bool(0.5) {
                        cmds.push(format!(
                            "table_indirect_add_with_group {} {keys} => {}{prio}",
                            t.name,
                            rng.gen_range(0..groups)
                        ));
                    } else if members > 0 {
                        cmds.push(format!(
                            "table_indirect_add {} {keys} => {}{prio}",
                            t.name,
                            rng.gen_range(0..members)
                        ));
                    }
                } else if !t.actions.is_empty() {
                    let a = &t.actions[rng.gen_range(0..t.actions.len())];
                    let params: Vec<String> = a
                        .params
                        .iter()
                        .zip(&a.param_targets)
                        .map(|(w, tg)| hexv(param_value(rng, pools, *w, tg.as_ref(), opts)))
                        .collect();
                    cmds.push(format!(
                        "table_add {} {} {keys} => {}{prio}",
                        t.name,
                        a.name,
                        params.join(" ")
                    ));
                }
            }
        }
        if t.default_settable && rng.gen_bool(0.5) {
            if let Some((prof, _)) = &t.profile {
                let (members, _) = profiles.get(prof).copied().unwrap_or((0, 0));
                if members > 0 {
                    cmds.push(format!(
                        "table_indirect_set_default {} {}",
                        t.name,
                        rng.gen_range(0..members)
                    ));
                }
            } else if !t.actions.is_empty() {
                let a = &t.actions[rng.gen_range(0..t.actions.len())];
                let params: Vec<String> = a
                    .params
                    .iter()
                    .zip(&a.param_targets)
                    .map(|(w, tg)| hexv(param_value(rng, pools, *w, tg.as_ref(), opts)))
                    .collect();
                cmds.push(
                    format!(
                        "table_set_default {} {} {}",
                        t.name,
                        a.name,
                        params.join(" ")
                    )
                    .trim_end()
                    .to_string(),
                );
            }
        }
    }
    cmds
}

// ------------------------------------------------------------------------ frames

fn get_bits(b: &[u8], off: usize, w: u32) -> u128 {
    let mut v: u128 = 0;
    for i in 0..w as usize {
        let bit = off + i;
        let byte = b.get(bit / 8).copied().unwrap_or(0);
        v = (v << 1) | u128::from((byte >> (7 - bit % 8)) & 1);
    }
    v
}

fn set_bits(b: &mut Vec<u8>, off: usize, w: u32, v: u128) {
    let need = (off + w as usize).div_ceil(8);
    if b.len() < need {
        b.resize(need, 0);
    }
    for i in 0..w as usize {
        let bit = off + i;
        let val = ((v >> (w as usize - 1 - i)) & 1) as u8;
        let m = 1u8 << (7 - bit % 8);
        if val == 1 {
            b[bit / 8] |= m;
        } else {
            b[bit / 8] &= !m;
        }
    }
}

fn parse_hex_bytes(s: &str) -> Option<Vec<u8>> {
    let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    let h = if h.len() % 2 == 1 {
        format!("0{h}")
    } else {
        h.to_string()
    };
    (0..h.len() / 2)
        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).ok())
        .collect()
}

fn hex_u128(s: &str) -> Option<u128> {
    let neg = s.starts_with('-');
    let s = s.trim_start_matches('-');
    let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    let v = u128::from_str_radix(h, 16).ok()?;
    Some(if neg { v.wrapping_neg() } else { v })
}

/// A select key element: its first byte in the key, its width, and the bit position
/// in the frame where it can be forced (packet bits only).
type KeyElem = (usize, u32, Option<usize>);

/// A walk of the parse graph that builds a frame.
struct Walk<'a> {
    info: &'a ProgramInfo,
    pools: &'a Pools,
    pkt: Vec<u8>,
    cur: usize,
    /// Extracted header instances: byte offset and varbit length in bits.
    hdr: HashMap<String, (usize, u32)>,
    meta: HashMap<(String, String), u128>,
    stack_next: HashMap<String, usize>,
    /// Last extracted element of each stack.
    stack_last: HashMap<String, String>,
}

impl Walk<'_> {
    /// Makes sure `n` bytes exist from the cursor (random ones are added).
    fn ensure(&mut self, rng: &mut StdRng, upto: usize) {
        while self.pkt.len() < upto {
            self.pkt.push(rng.r#gen());
        }
    }

    fn field_pos(&self, h: &str, f: &str) -> Option<(usize, u32)> {
        let (off, vlen) = *self.hdr.get(h)?;
        let hi = self.info.headers.get(h)?;
        let mut bit = 0u32;
        for (n, w) in &hi.fields {
            let w = if *w == 0 { vlen } else { *w };
            if n == f {
                return Some((off * 8 + bit as usize, w));
            }
            bit += w;
        }
        None
    }

    fn read_field(&self, h: &str, f: &str) -> Option<u128> {
        if let Some(v) = self.meta.get(&(h.to_string(), f.to_string())) {
            return Some(*v);
        }
        if f == "$valid$" {
            return Some(u128::from(self.hdr.contains_key(h)));
        }
        match self.field_pos(h, f) {
            Some((pos, w)) if w <= 128 => Some(get_bits(&self.pkt, pos, w)),
            Some(_) => None,
            None => Some(0),
        }
    }

    fn eval(&mut self, rng: &mut StdRng, v: &Value) -> Option<u128> {
        let t = v.get("type").and_then(Value::as_str);
        let val = v.get("value");
        match t {
            Some("field") => {
                let a = val?.as_array()?;
                self.read_field(a.first()?.as_str()?, a.get(1)?.as_str()?)
            }
            Some("hexstr") => hex_u128(val?.as_str()?),
            Some("bool") => Some(u128::from(val?.as_bool()?)),
            Some("lookahead") => {
                let a = val?.as_array()?;
                let off = a.first()?.as_u64()? as usize;
                let w = a.get(1)?.as_u64()? as u32;
                if w > 128 {
                    return None;
                }
                let end = (self.cur * 8 + off + w as usize).div_ceil(8);
                self.ensure(rng, end);
                Some(get_bits(&self.pkt, self.cur * 8 + off, w))
            }
            Some("stack_field") => {
                let a = val?.as_array()?;
                let last = self.stack_last.get(a.first()?.as_str()?)?.clone();
                self.read_field(&last, a.get(1)?.as_str()?)
            }
            Some("expression") => {
                let inner = val?;
                if inner.get("op").is_some() {
                    self.eval_op(rng, inner)
                } else {
                    self.eval(rng, inner)
                }
            }
            _ => {
                if v.get("op").is_some() {
                    self.eval_op(rng, v)
                } else {
                    None
                }
            }
        }
    }

    fn eval_op(&mut self, rng: &mut StdRng, e: &Value) -> Option<u128> {
        let op = e.get("op")?.as_str()?;
        let l = e.get("left").filter(|x| !x.is_null());
        let r = e.get("right").filter(|x| !x.is_null());
        let mut ev = |s: &mut Self, x: Option<&Value>| -> Option<u128> {
            match x {
                Some(x) => s.eval(rng, x),
                None => Some(0),
            }
        };
        if op == "?" {
            let c = ev(self, e.get("cond"))?;
            return if c != 0 { ev(self, l) } else { ev(self, r) };
        }
        if op == "valid" {
            let h = r?.get("value")?.as_str()?;
            return Some(u128::from(self.hdr.contains_key(h)));
        }
        let a = ev(self, l)?;
        let b = ev(self, r)?;
        Some(match op {
            "+" => a.wrapping_add(b),
            "-" => a.wrapping_sub(b),
            "*" => a.wrapping_mul(b),
            "<<" => {
                if b >= 128 {
                    0
                } else {
                    a << b
                }
            }
            ">>" => {
                if b >= 128 {
                    0
                } else {
                    a >> b
                }
            }
            "&" => a & b,
            "|" => a | b,
            "^" => a ^ b,
            "~" => !b,
            "==" => u128::from(a == b),
            "!=" => u128::from(a != b),
            "<" => u128::from(a < b),
            ">" => u128::from(a > b),
            "<=" => u128::from(a <= b),
            ">=" => u128::from(a >= b),
            "and" => u128::from(a != 0 && b != 0),
            "or" => u128::from(a != 0 || b != 0),
            "not" => u128::from(b == 0),
            "d2b" => u128::from(b != 0),
            "b2d" => b,
            "two_comp_mod" => a & mask(b.min(128) as u32),
            _ => return None,
        })
    }

    /// Extracts `inst` at the cursor; `vbits` for a varbit header.
    fn extract(&mut self, rng: &mut StdRng, inst: &str, vbits: u32) {
        let Some(hi) = self.info.headers.get(inst) else {
            return;
        };
        let bits = hi.fixed_bits() + vbits;
        let start = self.cur;
        let fresh_from = self.pkt.len();
        let len = (bits as usize).div_ceil(8);
        self.ensure(rng, start + len);
        // fields from the pools, in bytes not decided earlier (by a lookahead)
        let mut bit = start * 8;
        for (name, w) in &hi.fields {
            let w = if *w == 0 { vbits } else { *w };
            if w > 0 && w <= 128 && bit >= fresh_from * 8 && rng.gen_bool(0.6) {
                let v = self.pools.pick(rng, inst, name, w);
                set_bits(&mut self.pkt, bit, w, v);
            }
            bit += w as usize;
        }
        self.hdr.insert(inst.to_string(), (start, vbits));
        self.cur = start + len;
    }

    fn extract_target(&mut self, p: &Value) -> Option<String> {
        let t = p.get("type")?.as_str()?;
        let v = p.get("value")?;
        match t {
            "regular" => Some(v.as_str()?.to_string()),
            "stack" => {
                let s = v.as_str()?;
                let elems = self.info.stacks.get(s)?;
                let n = self.stack_next.entry(s.to_string()).or_insert(0);
                let e = elems.get(*n)?.clone();
                *n += 1;
                self.stack_last.insert(s.to_string(), e.clone());
                Some(e)
            }
            "union_stack" => {
                let a = v.as_array()?;
                let s = a.first()?.as_str()?;
                let member = a.get(1)?.as_str()?;
                let elems = self.info.union_stacks.get(s)?;
                let n = self.stack_next.entry(s.to_string()).or_insert(0);
                let elem = elems.get(*n)?;
                *n += 1;
                elem.iter()
                    .find(|h| h.ends_with(&format!(".{member}")))
                    .cloned()
            }
            _ => None,
        }
    }

    /// The select key as bytes (each element byte-padded) with, per element, where it
    /// can be forced: Some((bit position, width)) for packet bits.
    fn key(&mut self, rng: &mut StdRng, state: &p4jet_json::ParseState) -> (Vec<u8>, Vec<KeyElem>) {
        let mut bytes = vec![];
        let mut elems = vec![];
        for k in &state.transition_key {
            let t = k.get("type").and_then(Value::as_str).unwrap_or("");
            let val = k.get("value");
            let (w, pos) = match t {
                "field" | "stack_field" => {
                    let a = val.and_then(Value::as_array);
                    let (h, f) = match a {
                        Some(a) => (
                            a.first().and_then(Value::as_str).unwrap_or(""),
                            a.get(1).and_then(Value::as_str).unwrap_or(""),
                        ),
                        None => ("", ""),
                    };
                    let h = if t == "stack_field" {
                        self.stack_last.get(h).cloned().unwrap_or_default()
                    } else {
                        h.to_string()
                    };
                    let w = self.info.width(&h, f).unwrap_or(0);
                    let forced = if self.meta.contains_key(&(h.clone(), f.to_string())) {
                        None
                    } else {
                        self.field_pos(&h, f).map(|p| p.0)
                    };
                    (w, forced)
                }
                "lookahead" => {
                    let a = val.and_then(Value::as_array);
                    let off = a
                        .and_then(|a| a.first())
                        .and_then(Value::as_u64)
                        .unwrap_or(0) as usize;
                    let w = a
                        .and_then(|a| a.get(1))
                        .and_then(Value::as_u64)
                        .unwrap_or(0) as u32;
                    (w, Some(self.cur * 8 + off))
                }
                _ => (0, None),
            };
            let v = self.eval(rng, k).unwrap_or(0);
            let nb = (w as usize).div_ceil(8);
            let start = bytes.len();
            bytes.resize(start + nb, 0);
            for i in 0..nb {
                bytes[start + nb - 1 - i] = if i < 16 { (v >> (8 * i)) as u8 } else { 0 };
            }
            elems.push((start, w, pos));
        }
        (bytes, elems)
    }

    fn matches(key: &[u8], tr: &p4jet_json::Transition) -> Option<bool> {
        match tr.kind.as_deref() {
            Some("default") => Some(true),
            Some("hexstr") | None => {
                let v = tr.value.as_str()?;
                if v == "default" {
                    return Some(true);
                }
                let mut val = parse_hex_bytes(v)?;
                let mut m = match tr.mask.as_str() {
                    Some(m) => parse_hex_bytes(m)?,
                    None => vec![0xff; key.len()],
                };
                while val.len() < key.len() {
                    val.insert(0, 0);
                }
                while m.len() < key.len() {
                    m.insert(0, 0);
                }
                let n = key.len();
                let (val, m) = (&val[val.len() - n..], &m[m.len() - n..]);
                Some(key.iter().zip(val).zip(m).all(|((k, v), m)| k & m == v & m))
            }
            _ => Some(false),
        }
    }

    /// Forces the key elements that are packet bits towards transition `tr`.
    fn force(
        &mut self,
        rng: &mut StdRng,
        elems: &[KeyElem],
        key_len: usize,
        tr: &p4jet_json::Transition,
    ) {
        let Some(v) = tr.value.as_str().and_then(parse_hex_bytes) else {
            return;
        };
        let m = tr
            .mask
            .as_str()
            .and_then(parse_hex_bytes)
            .unwrap_or_else(|| vec![0xff; key_len]);
        let pad = |mut x: Vec<u8>| {
            while x.len() < key_len {
                x.insert(0, 0);
            }
            x[x.len() - key_len..].to_vec()
        };
        let (v, m) = (pad(v), pad(m));
        for (start, w, pos) in elems {
            let Some(pos) = pos else { continue };
            if *w == 0 || *w > 128 {
                continue;
            }
            let nb = (*w as usize).div_ceil(8);
            let mut ev: u128 = 0;
            let mut em: u128 = 0;
            for i in 0..nb {
                ev = (ev << 8) | u128::from(v[start + i]);
                em = (em << 8) | u128::from(m[start + i]);
            }
            let (ev, em) = (ev & mask(*w), em & mask(*w));
            self.ensure(rng, (pos + *w as usize).div_ceil(8));
            let old = get_bits(&self.pkt, *pos, *w);
            set_bits(&mut self.pkt, *pos, *w, (old & !em) | (ev & em));
        }
    }

    fn run(&mut self, rng: &mut StdRng) {
        let mut state = self.info.init_state.clone();
        let mut steps = 0;
        while let Some(name) = state {
            steps += 1;
            if steps > 40 {
                break;
            }
            let Some(st) = self.info.states.get(&name).cloned() else {
                break;
            };
            for op in &st.parser_ops {
                let ps = &op.parameters;
                match op.op.as_str() {
                    "extract" => {
                        if let Some(inst) = ps.first().and_then(|p| self.extract_target(p)) {
                            self.extract(rng, &inst, 0);
                        } else {
                            return; // stack full: the parser stops here
                        }
                    }
                    "extract_VL" => {
                        let Some(inst) = ps.first().and_then(|p| self.extract_target(p)) else {
                            return;
                        };
                        let fixed = self
                            .info
                            .headers
                            .get(&inst)
                            .map(|h| h.fixed_bits())
                            .unwrap_or(0);
                        let max = self
                            .info
                            .headers
                            .get(&inst)
                            .and_then(|h| h.max_length)
                            .unwrap_or(0)
                            .saturating_mul(8)
                            .saturating_sub(fixed);
                        let bits = match ps.get(1).and_then(|e| self.eval(rng, e)) {
                            Some(b) if b <= u128::from(max) + 64 => b as u32,
                            _ => rng.gen_range(0..=max / 8) * 8,
                        };
                        self.extract(rng, &inst, bits - bits % 8);
                    }
                    "set" => {
                        let dst = ps
                            .first()
                            .and_then(|d| d.get("value"))
                            .and_then(Value::as_array);
                        if let (Some(d), Some(src)) = (dst, ps.get(1)) {
                            let h = d.first().and_then(Value::as_str).unwrap_or("").to_string();
                            let f = d.get(1).and_then(Value::as_str).unwrap_or("").to_string();
                            if let Some(v) = self.eval(rng, src) {
                                let w = self.info.width(&h, &f).unwrap_or(128);
                                self.meta.insert((h, f), v & mask(w));
                            }
                        }
                    }
                    "advance" => {
                        if let Some(b) = ps.first().and_then(|e| self.eval(rng, e)) {
                            let bytes = (b.min(8 * 256) / 8) as usize;
                            self.ensure(rng, self.cur + bytes);
                            self.cur += bytes;
                        }
                    }
                    "shift" => {
                        if let Some(b) = ps.first().and_then(Value::as_u64) {
                            let bytes = b.min(256) as usize;
                            self.ensure(rng, self.cur + bytes);
                            self.cur += bytes;
                        }
                    }
                    _ => {}
                }
            }
            if st.transitions.is_empty() {
                break;
            }
            if st.transition_key.is_empty() {
                state = st.transitions.first().and_then(|t| t.next_state.clone());
                continue;
            }
            let (key, elems) = self.key(rng, &st);
            let candidates: Vec<&p4jet_json::Transition> = st
                .transitions
                .iter()
                .filter(|t| {
                    matches!(t.kind.as_deref(), Some("hexstr") | None)
                        && t.value.as_str() != Some("default")
                })
                .collect();
            if !candidates.is_empty() && rng.gen_bool(0.85) {
                let tr = candidates[rng.gen_range(0..candidates.len())];
                self.force(rng, &elems, key.len(), tr);
            }
            let (key, _) = self.key(rng, &st);
            state = st
                .transitions
                .iter()
                .find(|t| Self::matches(&key, t) == Some(true))
                .and_then(|t| t.next_state.clone());
        }
    }
}

/// A frame valid by construction for the program's parser.
pub fn valid_frame(info: &ProgramInfo, pools: &Pools, rng: &mut StdRng) -> Vec<u8> {
    let mut w = Walk {
        info,
        pools,
        pkt: vec![],
        cur: 0,
        hdr: HashMap::new(),
        meta: HashMap::new(),
        stack_next: HashMap::new(),
        stack_last: HashMap::new(),
    };
    w.run(rng);
    let mut pkt = w.pkt;
    let payload = match rng.gen_range(0..10) {
        0..=2 => 0,
        3..=7 => rng.gen_range(1..48),
        8 => rng.gen_range(48..600),
        _ => rng.gen_range(600..1500),
    };
    for _ in 0..payload {
        pkt.push(rng.r#gen());
    }
    if rng.gen_bool(0.05) && !pkt.is_empty() {
        let n = rng.gen_range(0..pkt.len());
        pkt.truncate(n);
    }
    pkt
}

/// `frame` with 1 to 4 random mutations (`others` supplies splice material).
pub fn mutate(frame: &[u8], others: &[Vec<u8>], rng: &mut StdRng) -> Vec<u8> {
    let mut f = frame.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        let len = f.len();
        match rng.gen_range(0..9) {
            0 if len > 0 => {
                let i = rng.gen_range(0..len * 8);
                f[i / 8] ^= 1 << (i % 8);
            }
            1 if len > 0 => {
                let i = rng.gen_range(0..len);
                f[i] = rng.r#gen();
            }
            2 if len > 0 => {
                let i = rng.gen_range(0..len);
                f[i] = [0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe][rng.gen_range(0..6)];
            }
            3 => {
                let i = rng.gen_range(0..=len);
                let n = rng.gen_range(1..16);
                for _ in 0..n {
                    f.insert(i, rng.r#gen());
                }
            }
            4 if len > 0 => {
                let i = rng.gen_range(0..len);
                let n = rng.gen_range(1..=(len - i).min(16));
                f.drain(i..i + n);
            }
            5 if len > 0 => f.truncate(rng.gen_range(0..len)),
            6 if len > 1 => {
                let i = rng.gen_range(0..len);
                let j = rng.gen_range(i..len);
                let chunk = f[i..j].to_vec();
                let at = rng.gen_range(0..=f.len());
                f.splice(at..at, chunk);
            }
            7 if !others.is_empty() => {
                let o = &others[rng.gen_range(0..others.len())];
                let cut = rng.gen_range(0..=f.len());
                let ocut = rng.gen_range(0..=o.len());
                f.truncate(cut);
                f.extend_from_slice(&o[ocut..]);
            }
            _ => {
                let n = rng.gen_range(1..64);
                f.extend((0..n).map(|_| rng.r#gen::<u8>()));
            }
        }
    }
    f.truncate(9000);
    f
}

/// Random bytes.
pub fn random_frame(rng: &mut StdRng) -> Vec<u8> {
    let n = match rng.gen_range(0..10) {
        0 => rng.gen_range(0..14),
        1..=6 => rng.gen_range(14..128),
        _ => rng.gen_range(128..1600),
    };
    (0..n).map(|_| rng.r#gen()).collect()
}

/// The kinds of frames in a mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// Valid by construction.
    Valid,
    /// A corpus (seed) frame mutated.
    MutatedSeed,
    /// A valid frame mutated.
    MutatedValid,
    /// Random bytes.
    Random,
}

/// One frame of the usual mix: 55 % valid, 20 % mutated seeds, 15 % mutated valid
/// frames, 10 % random bytes.
pub fn frame(
    info: &ProgramInfo,
    pools: &Pools,
    seeds: &[Vec<u8>],
    rng: &mut StdRng,
) -> (FrameKind, Vec<u8>) {
    let r = rng.gen_range(0..100);
    if r < 55 {
        (FrameKind::Valid, valid_frame(info, pools, rng))
    } else if r < 75 && !seeds.is_empty() {
        let s = &seeds[rng.gen_range(0..seeds.len())];
        (FrameKind::MutatedSeed, mutate(s, seeds, rng))
    } else if r < 90 {
        let v = valid_frame(info, pools, rng);
        (FrameKind::MutatedValid, mutate(&v, seeds, rng))
    } else {
        (FrameKind::Random, random_frame(rng))
    }
}

/// Every `packet` frame of the STF files under `dir` (recursively).
pub fn stf_seeds(dir: &std::path::Path) -> Vec<Vec<u8>> {
    let mut out = vec![];
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(stf_seeds(&p));
        } else if p.extension().is_some_and(|e| e == "stf")
            && let Ok(text) = std::fs::read_to_string(&p)
        {
            for line in text.lines() {
                let l = line.split('#').next().unwrap_or("").trim();
                let mut w = l.split_whitespace();
                if w.next() != Some("packet") {
                    continue;
                }
                let _port = w.next();
                let hex: String = w.collect();
                if let Some(b) = parse_hex_bytes(&format!("0x{hex}")) {
                    out.push(b);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn bits_round_trip() {
        let mut b = vec![0u8; 4];
        set_bits(&mut b, 3, 9, 0x1ab);
        assert_eq!(get_bits(&b, 3, 9), 0x1ab);
        assert_eq!(get_bits(&b, 0, 3), 0);
        set_bits(&mut b, 30, 4, 0xf);
        assert_eq!(b.len(), 5);
        assert_eq!(get_bits(&b, 30, 4), 0xf);
    }

    #[test]
    fn valid_frames_follow_the_parser() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
        let text = std::fs::read_to_string(dir.join("simple_router/simple_router.json")).unwrap();
        let p = p4jet_json::parse(&text).unwrap();
        let info = ProgramInfo::new(&p);
        let mut rng = StdRng::seed_from_u64(1);
        let pools = Pools::new(&info, &mut rng);
        let mut ipv4 = 0;
        for _ in 0..200 {
            let f = valid_frame(&info, &pools, &mut rng);
            if f.len() >= 34 && f[12] == 0x08 && f[13] == 0x00 {
                ipv4 += 1;
            }
        }
        // the parser's only select is the EtherType: most walks take the IPv4 branch
        assert!(ipv4 > 100, "{ipv4} of 200 frames are IPv4");
    }
}
