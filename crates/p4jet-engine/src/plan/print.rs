//! The plan as text (`p4jet plan PROGRAM.json`): one line per operation, with the
//! program's names next to the offsets, widths and masks the engines use.

use std::fmt::{self, Display, Formatter, Write};

use p4jet_ir::{FieldLoc, Program};

use super::action::{Form, Op};
use super::checksum::{Checksum, CsumOp};
use super::cond::{Cond, CondKind};
use super::control::{CondTest, ControlPlan, Node};
use super::parser::{Next, ParseOp, Select, SelectKey};
use super::table::{ApplyNext, Key, KeyPart};
use super::{Fusion, Plan};
use crate::phv::Window64;

/// A plan with the program it was made from, for printing ([`Plan::display`]).
pub struct PlanDisplay<'a> {
    plan: &'a Plan,
    prog: &'a Program,
}

impl Plan {
    /// The plan as text, with `prog`'s names.
    pub fn display<'a>(&'a self, prog: &'a Program) -> PlanDisplay<'a> {
        PlanDisplay { plan: self, prog }
    }
}

/// Names of things in a program, for the printer.
struct Names<'a>(&'a Program);

impl Names<'_> {
    fn header(&self, h: u32) -> &str {
        self.0.headers.get(h as usize).map_or("?", |h| &h.name)
    }

    fn state(&self, s: Option<u32>) -> &str {
        match s {
            None => "accept",
            Some(s) => self
                .0
                .parser
                .states
                .get(s as usize)
                .map_or("?", |s| &s.name),
        }
    }

    fn node(&self, n: Option<u32>) -> String {
        n.map_or("end".into(), |n| format!("#{n}"))
    }

    fn table(&self, t: u32) -> &str {
        self.0.tables.get(t as usize).map_or("?", |t| &t.name)
    }

    fn action(&self, a: u32) -> &str {
        self.0.actions.get(a as usize).map_or("?", |a| &a.name)
    }

    /// The field at `loc`, by name when one lies exactly there.
    fn field(&self, loc: FieldLoc) -> String {
        let p = self.0;
        match p.fields.iter().position(|f| {
            f.loc.byte == loc.byte && f.loc.bit == loc.bit && f.loc.width == loc.width
        }) {
            Some(f) => format!("{}:{}", p.field_name(f as u32), loc.width),
            None => format!("phv[{}.{}]:{}", loc.byte, loc.bit, loc.width),
        }
    }

    fn window(&self, w: Window64) -> String {
        self.field(w.loc)
    }

    /// The field starting at PHV byte `b` that owns its bytes, else the byte.
    fn byte(&self, b: u32) -> String {
        let p = self.0;
        match p.fields.iter().position(|f| f.loc.byte == b && f.loc.own) {
            Some(f) => p.field_name(f as u32),
            None => format!("phv[{b}]"),
        }
    }
}

fn cond(n: &Names, c: &Cond) -> String {
    let not = if c.negate { "!" } else { "" };
    match c.kind {
        CondKind::Valid(h) => format!("{not}valid({})", n.header(h)),
        CondKind::Range64(r) => {
            let p = n.0;
            let field = p
                .fields
                .iter()
                .position(|f| {
                    f.loc.byte == r.byte && crate::phv::window64(f.loc) == Some((r.shift, r.mask))
                })
                .map_or_else(
                    || format!("(w64 phv[{}] >> {} & {:#x})", r.byte, r.shift, r.mask),
                    |f| p.field_name(f as u32),
                );
            let hi = r.lo.wrapping_add(r.span);
            match (r.span, c.negate) {
                (0, false) => format!("{field} == {:#x}", r.lo),
                (0, true) => format!("{field} != {:#x}", r.lo),
                _ => format!("{not}({field} in {:#x}..={hi:#x})", r.lo),
            }
        }
        CondKind::Cmp { loc, op, k } => format!("{not}({} {op:?} {k:#x})", n.field(loc)),
    }
}

fn tree(n: &Names, t: &super::cond::CondTree) -> String {
    use super::cond::CondTree;
    match t {
        CondTree::Leaf(c) => cond(n, c),
        CondTree::Not(a) => format!("!({})", tree(n, a)),
        CondTree::And(a, b) => format!("({} && {})", tree(n, a), tree(n, b)),
        CondTree::Or(a, b) => format!("({} || {})", tree(n, a), tree(n, b)),
    }
}

fn test(n: &Names, t: &CondTest) -> String {
    match t {
        CondTest::Planned(c) => cond(n, c),
        CondTest::Tree(t) => tree(n, t),
        CondTest::General(e) => format!("general expr #{e}"),
    }
}

fn select(n: &Names, s: &Select) -> String {
    let mut out = String::new();
    match &s.word {
        Some(w) => {
            let _ = write!(
                out,
                "select64 (w64 phv[{}] >> {} & {:#x})",
                w.byte, w.shift, w.mask
            );
            for &(v, m, next) in &w.trans {
                if m == 0 {
                    let _ = write!(out, "; default -> {}", n.state(next));
                } else {
                    let _ = write!(out, "; {v:#x}/{m:#x} -> {}", n.state(next));
                }
            }
        }
        None => {
            out.push_str("select128 (");
            for (i, k) in s.key.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                match *k {
                    SelectKey::Field { loc, .. } => out.push_str(&n.field(loc)),
                    SelectKey::Ahead { offset, width, .. } => {
                        let _ = write!(out, "lookahead({offset}, {width})");
                    }
                }
            }
            out.push(')');
            for &(v, m, next) in &s.trans {
                if m == 0 {
                    let _ = write!(out, "; default -> {}", n.state(next));
                } else {
                    let _ = write!(out, "; {v:#x}/{m:#x} -> {}", n.state(next));
                }
            }
        }
    }
    out
}

fn checksum(n: &Names, prog: &Program, op: &CsumOp) -> String {
    match op {
        CsumOp::Planned(c) => planned_checksum(n, c),
        CsumOp::General { index, cond } => {
            let name = prog.checksums.get(*index as usize).map_or("?", |c| &c.name);
            match cond {
                Some(c) => format!("general checksum {name} if {}", test(n, c)),
                None => format!("general checksum {name}"),
            }
        }
    }
}

fn planned_checksum(n: &Names, c: &Checksum) -> String {
    let mut out = format!("csum16 -> {} over", n.window(c.target));
    for p in c.pieces.iter() {
        let _ = write!(
            out,
            " phv[{}..+{}]",
            p.byte,
            (64 - p.mask.trailing_zeros()) / 8
        );
    }
    if c.quad.is_some() {
        out.push_str(" (one window)");
    }
    if c.only_valid {
        let _ = write!(out, " if valid({})", n.header(c.header));
    }
    if let Some(fc) = &c.cond {
        let _ = write!(out, " if {}", cond(n, fc));
    }
    out
}

fn control(
    f: &mut Formatter<'_>,
    n: &Names,
    plan: &Plan,
    name: &str,
    c: &ControlPlan,
) -> fmt::Result {
    match c.init {
        None => return writeln!(f, "{name}: empty"),
        Some(i) => writeln!(f, "{name} (start #{i}):")?,
    }
    for (i, node) in c.nodes.iter().enumerate() {
        match node {
            Node::Cond {
                test: t,
                t: yes,
                f: no,
            } => writeln!(
                f,
                "  #{i}: if {} -> {} else {}",
                test(n, t),
                n.node(*yes),
                n.node(*no)
            )?,
            Node::Call { action, next } => {
                writeln!(f, "  #{i}: call {} -> {}", n.action(*action), n.node(*next))?
            }
            Node::Apply { table } => {
                let next = match plan.tables.get(*table as usize).map(|t| &t.next) {
                    Some(ApplyNext::Same(x)) => format!("-> {}", n.node(*x)),
                    Some(ApplyNext::HitMiss { hit, miss }) => {
                        format!("hit -> {}, miss -> {}", n.node(*hit), n.node(*miss))
                    }
                    Some(ApplyNext::ByAction { slots, default }) => {
                        let acts = &n.0.tables[*table as usize].actions;
                        let mut s = String::from("by action:");
                        for (a, x) in acts.iter().zip(slots) {
                            let _ = write!(s, " {} -> {},", n.action(*a), n.node(*x));
                        }
                        let _ = write!(s, " none -> {}", n.node(*default));
                        s
                    }
                    None => "?".into(),
                };
                writeln!(f, "  #{i}: apply {} {next}", n.table(*table))?
            }
        }
    }
    Ok(())
}

fn action_op(n: &Names, a: &p4jet_ir::Action, pc: usize, op: &Op) -> String {
    match op {
        Op::Copy((dst, src, len)) => {
            format!(
                "copy param bytes [{src}..{}] -> {}",
                src + len,
                n.byte(*dst)
            )
        }
        Op::Const(loc, v) => format!("{} = {v:#x}", n.field(*loc)),
        Op::CopyField { dst, src } => format!("{} = {}", n.field(*dst), n.field(*src)),
        Op::Expr(loc, fe) => format!("{} = flat {fe:?}", n.field(*loc)),
        Op::FieldOps {
            dst,
            src,
            ops,
            n: k,
        } => {
            let mut s = format!("{} = {}", n.window(*dst), n.window(*src));
            for (o, c) in &ops[..*k as usize] {
                let _ = write!(s, " {o:?} {c:#x}");
            }
            s
        }
        Op::FieldAdd { dst, src, k } => {
            format!("{} = {} + {k:#x}", n.window(*dst), n.window(*src))
        }
        Op::MarkToDrop => "mark_to_drop".into(),
        Op::AddHeader { h, off, len } => {
            format!("add_header {} ({len} bytes at phv[{off}])", n.header(*h))
        }
        Op::RemoveHeader { h, len } => format!("remove_header {} ({len} bytes)", n.header(*h)),
        Op::Prim => match a.body.get(pc) {
            Some(p) => format!("primitive {p:?}"),
            None => "primitive ?".into(),
        },
    }
}

impl Display for PlanDisplay<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let (plan, prog) = (self.plan, self.prog);
        let n = Names(prog);
        let what = match plan.fusion {
            Fusion::None => "reference (no fusion)",
            Fusion::All => "fused",
        };
        writeln!(
            f,
            "plan: {what}; PHV {} bytes, {} headers",
            prog.phv_bytes,
            prog.headers.len()
        )?;
        // parser
        writeln!(f, "\nparser (start {}):", n.state(plan.parser.init))?;
        if let Some(path) = &plan.parser.path {
            let names: Vec<&str> = path.headers.iter().map(|h| n.header(*h)).collect();
            write!(
                f,
                "  path: extract-{} {} ({} bytes -> phv[{}..{}])",
                names.len(),
                names.join("+"),
                path.len,
                path.phv_off,
                path.phv_off + path.len
            )?;
            for &(at, shift, mask, v) in path.checks.iter() {
                write!(f, " if (w64 pkt[{at}] >> {shift} & {mask:#x}) == {v:#x}")?;
            }
            writeln!(f, " -> {}", n.state(path.next))?;
        }
        for (si, st) in plan.parser.states.iter().enumerate() {
            let ir = &prog.parser.states[si];
            writeln!(f, "  state {}:", ir.name)?;
            for op in &st.ops {
                let line = match op {
                    ParseOp::Extract { h, off, len, union } => format!(
                        "extract {} ({len} bytes -> phv[{off}..{}]){}",
                        n.header(*h),
                        off + len,
                        if *union { " in a union" } else { "" }
                    ),
                    ParseOp::ExtractN { h, n: k, off, len } => {
                        let names: Vec<&str> = (*h..h + k).map(|h| n.header(h)).collect();
                        format!(
                            "extract-{k} {} ({len} bytes -> phv[{off}..{}])",
                            names.join("+"),
                            off + len
                        )
                    }
                    ParseOp::Copy { dst, src } => format!("{} = {}", n.field(*dst), n.field(*src)),
                    ParseOp::Copy64 { dst, src, .. } => {
                        format!("{} = {} (w64)", n.window(*dst), n.field(*src))
                    }
                    ParseOp::CopyBytes { dst, src, n: len } => {
                        format!("{} = {} ({len} bytes)", n.byte(*dst), n.byte(*src))
                    }
                    ParseOp::SetAhead {
                        dst, at, n: len, ..
                    } => {
                        format!("{} = lookahead bytes [{at}..{}]", n.byte(*dst), at + len)
                    }
                    ParseOp::AddHeader { h, off, len, .. } => {
                        format!("add_header {} ({len} bytes at phv[{off}])", n.header(*h))
                    }
                    ParseOp::General(i) => match ir.ops.get(*i as usize) {
                        Some(o) => format!("general {o:?}"),
                        None => "general ?".into(),
                    },
                };
                writeln!(f, "    {line}")?;
            }
            let next = match &st.next {
                Next::Goto(s) => format!("goto {}", n.state(*s)),
                Next::Select(s) => select(&n, s),
                Next::General => "general select".into(),
            };
            writeln!(f, "    {next}")?;
        }
        // checksums
        let ck = &plan.checksums;
        if !ck.verify.is_empty() {
            writeln!(
                f,
                "\nverify{}:",
                if ck.verify_planned { " (inline)" } else { "" }
            )?;
            for op in &ck.verify {
                writeln!(f, "  {}", checksum(&n, prog, op))?;
            }
        }
        // controls
        writeln!(f)?;
        control(f, &n, plan, "ingress", &plan.ingress)?;
        writeln!(f)?;
        control(f, &n, plan, "egress", &plan.egress)?;
        // tables
        if !plan.tables.is_empty() {
            writeln!(f, "\ntables:")?;
        }
        for (ti, t) in plan.tables.iter().enumerate() {
            let key = match &t.key {
                Key::Empty => "no key".to_string(),
                Key::Runs(runs) => {
                    let r: Vec<String> = runs
                        .iter()
                        .map(|(b, len)| format!("phv[{b}..{}]", b + len))
                        .collect();
                    format!("key runs {}", r.join(" "))
                }
                Key::Parts(parts) => {
                    let r: Vec<String> = parts
                        .iter()
                        .map(|p| match p {
                            KeyPart::Bytes { byte, n: len } => {
                                format!("phv[{byte}..{}]", byte + len)
                            }
                            KeyPart::Field { loc, mask, .. } => match mask {
                                Some(m) => format!("{} & {m:#x}", n.field(*loc)),
                                None => n.field(*loc),
                            },
                            KeyPart::Wide { loc, .. } => format!("{} (wide)", n.field(*loc)),
                            KeyPart::Valid(h) => format!("valid({})", n.header(*h)),
                        })
                        .collect();
                    format!("key {}", r.join(", "))
                }
            };
            let direct = if t.direct {
                ", direct counter/meter"
            } else {
                ""
            };
            writeln!(f, "  {}: {key}{direct}", n.table(ti as u32))?;
        }
        // actions
        if !plan.actions.is_empty() {
            writeln!(f, "\nactions:")?;
        }
        for (ai, a) in plan.actions.iter().enumerate() {
            let ir = &prog.actions[ai];
            let form = match a.form {
                Form::Empty => "empty".to_string(),
                Form::Copy(_) => "one copy".to_string(),
                Form::Steps { need } => format!("steps (data >= {need} bytes)"),
                Form::General => "interpreted".to_string(),
            };
            writeln!(f, "  {} [{form}]:", ir.name)?;
            for (pc, op) in a.ops.iter().enumerate() {
                writeln!(f, "    {}", action_op(&n, ir, pc, op))?;
            }
        }
        // deparser
        writeln!(f, "\ndeparser:")?;
        if !ck.update.is_empty() {
            writeln!(
                f,
                "  update{}:",
                if ck.update_planned { " (inline)" } else { "" }
            )?;
            for op in &ck.update {
                writeln!(f, "    {}", checksum(&n, prog, op))?;
            }
        }
        let d = &plan.deparser;
        for r in &d.runs {
            let names: Vec<&str> = d.headers[..r.k as usize]
                .iter()
                .map(|(h, ..)| n.header(*h))
                .collect();
            writeln!(
                f,
                "  emit-{} {} (phv[{}..{}], one copy) when {} valid, else:",
                r.k,
                names.join("+"),
                r.off,
                r.off + r.len,
                if r.is_all(d) {
                    "all are"
                } else {
                    "exactly these are"
                }
            )?;
        }
        for &(h, off, len) in &d.headers {
            match len {
                Some(len) => writeln!(
                    f,
                    "  emit {} (phv[{off}..{}]) if valid",
                    n.header(h),
                    off + len
                )?,
                None => writeln!(
                    f,
                    "  emit {} (phv[{off}..], varbit or general) if valid",
                    n.header(h)
                )?,
            }
        }
        Ok(())
    }
}
