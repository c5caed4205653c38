//! The per-packet log in simple_switch's words (`--log-console`, `--log-file`): the
//! messages of table applies, actions, conditions, pipelines and the deparser. Only
//! called when tracing, and out of line: the packet paths test `cfg.trace` and nothing
//! else.

use p4jet_ir::{ActionCall, KeySource, MatchKind};
use p4jet_tables::{EntryHandle, FieldMatch};

use crate::eval::{EvalCtx, eval_bool, resolve_field};
use crate::packet::{level, trace_line};
use crate::parse::hex;
use crate::state::{ControlState, EntryAction};
use crate::{Engine, PacketCtx};

/// Action data as simple_switch logs it: each parameter in hex without leading zeros,
/// followed by a comma.
pub(crate) fn action_data(p: &p4jet_ir::Program, call: &ActionCall) -> String {
    let Some(a) = p.actions.get(call.action as usize) else {
        return String::new();
    };
    let mut out = String::new();
    for (i, off) in a.param_offsets.iter().enumerate() {
        let n = a.param_bytes(i);
        let Some(b) = call.data.get(*off as usize..*off as usize + n) else {
            break;
        };
        let h = hex(b);
        let t = h.trim_start_matches('0');
        out.push_str(if t.is_empty() { "0" } else { t });
        out.push(',');
    }
    out
}

/// `NAME - DATA` of an action call (simple_switch's action entry).
pub(crate) fn action_entry(p: &p4jet_ir::Program, call: &ActionCall) -> String {
    let name = p
        .actions
        .get(call.action as usize)
        .map_or("?", |a| a.name.as_str());
    format!("{name} - {}", action_data(p, call))
}

/// A key element's name padded as simple_switch pads it (20 columns at least).
fn key_name(name: &str) -> String {
    format!("* {name:<20}: ")
}

impl Engine {
    /// `Pipeline 'NAME': start` (or `end`).
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_pipeline(&self, ctx: &mut PacketCtx, name: &str, what: &str) {
        trace_line(ctx, level::DEBUG, || format!("Pipeline '{name}': {what}"));
    }

    /// A condition's line: `FILE(LINE) Condition "TEXT" (NODE) is true`.
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_cond(&self, ctx: &mut PacketCtx, node: &str, b: bool) {
        let p = &*self.prog;
        let text = p
            .log_text
            .conds
            .get(node)
            .cloned()
            .unwrap_or_else(|| format!("Condition \"{node}\""));
        trace_line(ctx, level::TRACE, || format!("{text} ({node}) is {b}"));
    }

    /// The lines of a table apply up to the action: the table, the key looked up, hit
    /// (with the entry) or miss, and the action entry.
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_apply(
        &self,
        ctx: &mut PacketCtx,
        t: u32,
        cs: &ControlState,
        hit: Option<(EntryHandle, &EntryAction)>,
        call: Option<&ActionCall>,
    ) {
        let p = &*self.prog;
        let ti = &p.tables[t as usize];
        let ts = &cs.tables[t as usize];
        let profile = ti.action_profile.and_then(|a| cs.profiles.get(a as usize));
        trace_line(ctx, level::TRACE, || {
            format!("Applying table '{}'", ti.name)
        });
        let mut msg = String::from("Looking up key:\n");
        let ec = EvalCtx::of_phv(&ctx.phv);
        for k in &ti.keys {
            let nb = k.width.div_ceil(8) as usize;
            let v = match &k.source {
                KeySource::Field(f) => match resolve_field(p, &ec, f) {
                    Some(fid) => {
                        let v = ctx.phv.read_big(p.fields[fid as usize].loc);
                        let mut b = v.to_bytes_be();
                        if b.len() < nb {
                            let mut z = vec![0u8; nb - b.len()];
                            z.extend_from_slice(&b);
                            b = z;
                        }
                        hex(&b[b.len() - nb..])
                    }
                    None => String::new(),
                },
                KeySource::Valid(h) => {
                    let valid = crate::eval::resolve_header(p, &ec, h)
                        .is_some_and(|h| ctx.phv.valid[h as usize]);
                    format!("{:02x}", u8::from(valid))
                }
            };
            msg.push_str(&key_name(&k.name));
            msg.push_str(&v);
            msg.push('\n');
        }
        trace_line(ctx, level::DEBUG, || msg);
        match hit {
            Some((h, action)) => {
                if let (EntryAction::Group(g), Some(ps), Some(c)) = (action, profile, call)
                    && let Some((m, _)) = ps.members.iter().find(|(_, m)| std::ptr::eq(&m.call, c))
                {
                    trace_line(ctx, level::DEBUG, || {
                        format!("Choosing member {m} from group {g}")
                    });
                }
                trace_line(ctx, level::DEBUG, || {
                    format!("Table '{}': hit with handle {h}", ti.name)
                });
                if let Some((key, _)) = ts.entries.get(h) {
                    let mut d = format!("Dumping entry {h}\nMatch key:\n");
                    for (k, m) in ti.keys.iter().zip(key.fields.iter()) {
                        d.push_str(&key_name(&k.name));
                        let (kind, v) = match m {
                            FieldMatch::Exact(v) => ("EXACT", hex(v)),
                            FieldMatch::Lpm { value, prefix_len } => {
                                ("LPM", format!("{}/{prefix_len}", hex(value)))
                            }
                            FieldMatch::Ternary { value, mask } => {
                                ("TERNARY", format!("{} &&& {}", hex(value), hex(mask)))
                            }
                            FieldMatch::Range { low, high } => {
                                ("RANGE", format!("{} -> {}", hex(low), hex(high)))
                            }
                            FieldMatch::Valid(b) => ("VALID", format!("{:02x}", u8::from(*b))),
                        };
                        let kind = match k.kind {
                            MatchKind::Optional => "OPTIONAL",
                            _ => kind,
                        };
                        d.push_str(&format!("{kind:<10}{v}\n"));
                    }
                    if matches!(
                        ti.match_type,
                        MatchKind::Ternary | MatchKind::Range | MatchKind::Optional
                    ) {
                        d.push_str(&format!("Priority: {}\n", key.priority));
                    }
                    match (action, profile) {
                        (EntryAction::Member(m), _) => {
                            d.push_str(&format!("Index: member({m})\n"));
                            if let Some(c) = call {
                                d.push_str(&format!("Action entry: {}\n", action_entry(p, c)));
                            }
                        }
                        (EntryAction::Group(g), Some(ps)) => {
                            d.push_str(&format!("Index: group({g})\nGroup members:\n"));
                            let mut ms: Vec<u32> = ps.groups.get(g).cloned().unwrap_or_default();
                            ms.dedup();
                            for m in ms {
                                if let Some(mb) = ps.members.get(&m) {
                                    d.push_str(&format!(
                                        "  mbr {m}: {}\n",
                                        action_entry(p, &mb.call)
                                    ));
                                }
                            }
                        }
                        _ => {
                            if let Some(c) = call {
                                d.push_str(&format!("Action entry: {}\n", action_entry(p, c)));
                            }
                        }
                    }
                    trace_line(ctx, level::DEBUG, || d);
                }
            }
            None => {
                trace_line(ctx, level::DEBUG, || format!("Table '{}': miss", ti.name));
            }
        }
        // an indirect table's miss without a default entry runs no action: bmv2 says
        // so as `Action entry is NULL`
        trace_line(ctx, level::DEBUG, || match call {
            Some(c) => format!("Action entry is {}", action_entry(p, c)),
            None => "Action entry is NULL".into(),
        });
    }

    /// `Action NAME`.
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_action(&self, ctx: &mut PacketCtx, action: u32) {
        let p = &*self.prog;
        if let Some(a) = p.actions.get(action as usize) {
            trace_line(ctx, level::TRACE, || format!("Action {}", a.name));
        }
    }

    /// The line of primitive `pc` of `action`, before it runs.
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_primitive(&self, ctx: &mut PacketCtx, action: u32, pc: usize) {
        let p = &*self.prog;
        if let Some(t) = p
            .log_text
            .prims
            .get(action as usize)
            .and_then(|a| a.get(pc))
        {
            trace_line(ctx, level::TRACE, || t.clone());
        }
    }

    /// The deparser's lines: checksums updated, headers emitted.
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_deparse(&self, ctx: &mut PacketCtx) {
        let p = &*self.prog;
        trace_line(ctx, level::DEBUG, || "Deparser 'deparser': start".into());
        for ck in p.checksums.iter().filter(|c| c.update) {
            let ec = EvalCtx::of_phv(&ctx.phv);
            if ck.cond.is_none_or(|c| eval_bool(p, &ec, c)) {
                trace_line(ctx, level::DEBUG, || {
                    format!("Updating checksum '{}'", ck.name)
                });
            } else {
                trace_line(ctx, level::TRACE, || {
                    format!(
                        "Skipping checksum '{}' update because condition not met",
                        ck.name
                    )
                });
            }
        }
        for &h in &p.deparser.order {
            if ctx.phv.valid.get(h as usize).copied().unwrap_or(false) {
                trace_line(ctx, level::DEBUG, || {
                    format!("Deparsing header '{}'", p.headers[h as usize].name)
                });
            }
        }
        trace_line(ctx, level::DEBUG, || "Deparser 'deparser': end".into());
    }
}
