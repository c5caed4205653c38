//! Load-time planning: what would otherwise be resolved per packet, resolved once when a
//! program loads.
//!
//! A *plan* is the form of a piece of the program chosen at load time: a parser state
//! whose extracts are copies of known lengths to known offsets and whose select compares
//! 128-bit numbers ([`parser`]), the parser's likeliest path as one step, a deparser with
//! fixed lengths, a condition tested without walking its expression tree ([`cond`]), an
//! assignment source flattened to postfix form ([`expr`]), a table key built from byte
//! runs ([`table`]), an action body run as a list of steps without the action
//! interpreter ([`action`]), a checksum summed straight from the PHV ([`checksum`]).
//! Anything without a plan runs through the general code, which reads the lowered
//! program ([`p4jet_ir::Program`]) directly.
//!
//! [`Plan::new`] builds every plan of a program, stage by stage; the stage files of the
//! crate (`parse.rs`, `control.rs`, `table.rs`, `action.rs`, `checksum.rs`,
//! `deparse.rs`) run them.

pub(crate) mod action;
pub(crate) mod checksum;
pub(crate) mod cond;
pub(crate) mod deparser;
pub(crate) mod expr;
pub(crate) mod parser;
pub(crate) mod table;

use p4jet_ir::{Prim, Program};

use crate::hash;

pub use cond::Cond;
pub use expr::FlatExpr;

/// Every plan of one program.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Per table, its key's parts in key order.
    pub(crate) keys: Vec<Vec<table::KeyPart>>,
    /// Per table, when every key part is a byte run of at most 16 bytes (with
    /// 16 PHV bytes readable from its start): (PHV byte, length) of each run,
    /// for `key_from_runs`.
    pub(crate) key_runs: Vec<Option<table::KeyRuns>>,
    /// Per calculation, its inputs resolved at load time (None: resolved per packet).
    pub(crate) calcs: Vec<Option<hash::CalcPlan>>,
    /// Per expression id, the control conditions recognised at load time.
    pub(crate) conds: Vec<Option<Cond>>,
    /// Per expression id, assignment sources flattened at load time.
    pub(crate) exprs: Vec<Option<FlatExpr>>,
    /// Per parser state, its plan.
    pub(crate) states: Vec<parser::State>,
    /// The parser's likeliest path as one step (see [`parser::ParsePath`]).
    pub(crate) path: Option<parser::ParsePath>,
    /// The deparser's plan.
    pub(crate) deparser: deparser::Deparser,
    /// Some checksum is verified in the parser.
    pub(crate) has_verify: bool,
    /// Every checksum of the program in its planned form, when all have one.
    pub(crate) checksums: Option<checksum::Checksums>,
    /// When some checksums have a planned form and others not: the planned ones and
    /// the order in which both kinds run (taken by the general checksum functions, so
    /// that programs whose checksums all have one keep `checksums`'s inlined path).
    pub(crate) mixed_checksums: Option<Box<checksum::Checksums>>,
    /// Per table: Some(next) when every action (and no action) leads to the same next
    /// node (a plain `t.apply()`), so no per-packet action-slot search.
    pub(crate) same_next: Vec<Option<Option<u32>>>,
    /// Per node of the ingress and egress controls, its condition's plan (the walk
    /// reads it by node, not through the expression id).
    pub(crate) node_conds: [Box<[Option<Cond>]>; 2],
    /// Per action and primitive: an `AssignParam` that is a plain byte copy (a field
    /// owning its bytes, a parameter no wider in as many bytes; blobs are masked to the
    /// parameter's width), as (PHV byte, blob offset, bytes).
    pub(crate) param_copies: Vec<Vec<action::ParamCopy>>,
    /// Per action: what a table hit runs without calling the action interpreter.
    pub(crate) actions: Vec<action::Action>,
}

impl Plan {
    /// Plans program `prog`; `general_parser`: the parser, the checksums and the
    /// deparser keep their general code (the reference for differential tests).
    pub fn new(prog: &Program, general_parser: bool) -> Plan {
        let keys = table::key_parts(prog);
        let key_runs = table::key_runs(prog, &keys);
        let calcs: Vec<_> = prog
            .calculations
            .iter()
            .map(|c| hash::plan(prog, c))
            .collect();
        let conds = cond::conds(prog);
        let mut exprs = vec![None; prog.exprs.nodes.len()];
        for a in &prog.actions {
            for prim in &a.body {
                if let Prim::Assign { src, .. } = prim
                    && let Some(slot) = exprs.get_mut(*src as usize)
                {
                    *slot = FlatExpr::of(prog, *src);
                }
            }
        }
        let states: Vec<_> = prog
            .parser
            .states
            .iter()
            .map(|st| {
                if general_parser {
                    parser::State::general(st)
                } else {
                    parser::State::new(prog, st)
                }
            })
            .collect();
        let path = if general_parser {
            None
        } else {
            parser::ParsePath::new(&states, prog.parser.init)
        };
        let deparser = deparser::Deparser::new(prog, general_parser);
        let has_verify = prog.checksums.iter().any(|c| c.verify);
        let same_next = table::same_next(prog);
        let node_conds = [
            cond::node_conds(&prog.ingress, &conds),
            cond::node_conds(&prog.egress, &conds),
        ];
        let planned = if general_parser {
            None
        } else {
            checksum::Checksums::new(prog, &calcs, &conds)
        };
        let all_planned = planned
            .as_ref()
            .is_some_and(|c| c.general_verify.is_empty() && c.update_order.is_none());
        let (checksums, mixed_checksums) = match planned {
            Some(c) if all_planned => (Some(c), None),
            c => (None, c.map(Box::new)),
        };
        let param_copies = action::param_copies(prog);
        let actions = action::actions(prog, &param_copies, &exprs);
        Plan {
            keys,
            key_runs,
            calcs,
            conds,
            exprs,
            states,
            path,
            deparser,
            has_verify,
            checksums,
            mixed_checksums,
            same_next,
            node_conds,
            param_copies,
            actions,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Engine, EngineConfig, load};

    fn corpus_engine(name: &str) -> Engine {
        let path = format!(
            "{}/../../tests/corpus/{name}/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let json = std::fs::read_to_string(&path).unwrap();
        load(&json, EngineConfig::default()).unwrap()
    }

    /// The parser's one-step path: which programs get one, and that a packet off the
    /// path (another EtherType or protocol, too short) leaves the PHV untouched for the
    /// state-by-state parse (which the planned-vs-general differential test compares).
    #[test]
    fn parse_path_takes_only_packets_on_it() {
        // simple_router: Ethernet, then IPv4 on EtherType 0x0800, then accept
        let e = corpus_engine("simple_router");
        let path = e.plan.path.clone().expect("simple_router has a parse path");
        assert_eq!((path.states(), path.next), (2, None));
        let mut frame = vec![0u8; 60];
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        frame[14] = 0x45;
        let mut ctx = e.new_ctx(frame.len() + 256);
        ctx.pkt.set(&frame);
        ctx.reset(&e.prog);
        let before = ctx.phv.clone();
        assert_eq!(path.run(ctx.pkt.data(), &mut ctx.phv), Some(34));
        assert_eq!(
            ctx.phv.valid.iter().filter(|v| **v).count(),
            before.valid.iter().filter(|v| **v).count() + 2
        );
        assert!(ctx.phv.data.contains(&0x45));
        for (what, f) in [
            ("IPv6 EtherType", {
                let mut f = frame.clone();
                f[12..14].copy_from_slice(&[0x86, 0xdd]);
                f
            }),
            ("33 bytes", frame[..33].to_vec()),
        ] {
            let mut ctx = e.new_ctx(f.len() + 256);
            ctx.pkt.set(&f);
            ctx.reset(&e.prog);
            assert_eq!(path.run(ctx.pkt.data(), &mut ctx.phv), None, "{what}");
            assert_eq!(ctx.phv.data, before.data, "{what}");
            assert_eq!(ctx.phv.valid, before.valid, "{what}");
        }
        // acl_firewall: Ethernet, IPv4, then TCP's state (extract and sets) by state
        let e = corpus_engine("acl_firewall");
        let path = e.plan.path.clone().expect("acl_firewall has a parse path");
        let tcp = e
            .prog
            .parser
            .states
            .iter()
            .position(|s| s.name == "parse_tcp");
        assert_eq!(path.states(), 2);
        assert_eq!(path.next.map(|s| s as usize), tcp);
        // basic_l2: one state, nothing to gain
        assert!(corpus_engine("basic_l2").plan.path.is_none());
        // the general parser has none
        let json = std::fs::read_to_string(format!(
            "{}/../../tests/corpus/simple_router/simple_router.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let g = load(
            &json,
            EngineConfig {
                general_parser: true,
                ..EngineConfig::default()
            },
        )
        .unwrap();
        assert!(g.plan.path.is_none());
    }

    /// vxlan_gateway's start state copies a 304-bit lookahead into a temporary and
    /// slices it with `(tmp >> k) & mask` into a dozen fields: planned, that is one
    /// packet copy and a read of each slice's bits (no big-integer evaluation), and only
    /// the `add_header` goes to the general code. (The planned-vs-general parser test
    /// checks the values, on whole and truncated frames.)
    #[test]
    fn wide_lookahead_and_its_slices_are_planned() {
        let e = corpus_engine("vxlan_gateway");
        let start = e.prog.parser.init.unwrap() as usize;
        let ops = &e.plan.states[start].ops;
        let count = |f: fn(&super::parser::ParseOp) -> bool| ops.iter().filter(|o| f(o)).count();
        assert_eq!(
            count(|o| matches!(o, super::parser::ParseOp::SetAhead { n: 38, .. })),
            1
        );
        assert_eq!(
            count(|o| matches!(o, super::parser::ParseOp::General(_))),
            1
        );
        assert!(
            count(|o| matches!(o, super::parser::ParseOp::Copy64 { .. })) >= 8,
            "{ops:?}"
        );
        assert_eq!(ops.len(), 14);
    }

    /// A program whose checksums are only partly planned (bng: IPv4 header checksums, and
    /// TCP checksums over a pseudo-header with a constant and metadata) keeps the plans
    /// form for those that have one and runs the others by the general code, updates in
    /// program order; a program whose checksums all have plans keeps the inlined path.
    /// (The planned-vs-general parser and deparser test checks the values.)
    #[test]
    fn partly_planned_checksums_keep_their_plans() {
        let e = corpus_engine("bng");
        assert!(e.plan.checksums.is_none());
        let m = e
            .plan
            .mixed_checksums
            .as_ref()
            .expect("bng's checksums are partly planned");
        // bng verifies only IPv4 header checksums: all planned
        assert!(!m.verify.is_empty() && m.general_verify.is_empty(), "{m:?}");
        let order = m.update_order.as_ref().expect("some update is general");
        assert!(order.iter().any(|o| o.is_ok()) && order.iter().any(|o| o.is_err()));
        let updates = e.prog.checksums.iter().filter(|c| c.update).count();
        assert_eq!(order.len(), updates);
        // in program order: the general ones' indexes increase
        let general: Vec<u32> = order.iter().filter_map(|o| o.err()).collect();
        assert!(general.windows(2).all(|w| w[0] < w[1]));
        // udp_tcp_checksum verifies IPv4 (planned), TCP and UDP (general)
        let e = corpus_engine("udp_tcp_checksum");
        let m = e.plan.mixed_checksums.as_ref().expect("partly planned");
        assert_eq!((m.verify.len(), m.general_verify.len()), (1, 2), "{m:?}");
        let e = corpus_engine("simple_router");
        assert!(e.plan.checksums.is_some() && e.plan.mixed_checksums.is_none());
    }
}
