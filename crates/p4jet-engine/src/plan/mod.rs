//! The executable plan: a program lowered once more, into the operations the engines
//! run.
//!
//! Between the lowered program ([`p4jet_ir::Program`]) and execution sits one printable
//! program of operations per stage: parser states as extracts, field copies and selects
//! ([`parser`]), checksums ([`checksum`]), control nodes ([`control`]) and table applies
//! with their key building and successors ([`table`]), action bodies ([`action`]) and
//! the deparser ([`deparser`]). [`Plan::reference`] is the plain reading of the program:
//! every operation runs through the general code, which reads the lowered program
//! directly (the oracle). [`Plan::fused`] runs passes over it that replace what can be
//! decided once per program with fused operations: the parser's likeliest path as one
//! extract of N headers, fixed extracts as copies of known lengths to known offsets,
//! selects on 128-bit numbers, conditions tested without walking their expression
//! ([`cond`]), table keys as byte runs, action bodies as steps (parameter copies,
//! constants, field operation chains, flattened expressions: [`expr`]), internet
//! checksums summed from PHV byte runs, the deparser's valid headers as one copy.
//!
//! The interpreter (the stage files of this crate: `parse.rs`, `control.rs`,
//! `table.rs`, `action.rs`, `checksum.rs`, `deparse.rs`) runs either plan; `p4jet-jit`
//! compiles the fused one to native code. `p4jet plan PROGRAM.json` prints it
//! ([`std::fmt::Display`], `print.rs`).

pub mod action;
pub mod checksum;
pub mod cond;
pub mod control;
pub mod deparser;
pub mod expr;
pub mod parser;
mod print;
pub mod table;

use p4jet_ir::Program;

use crate::hash;

pub use cond::Cond;
pub use expr::FlatExpr;

/// Which plan: the plain reading of the program, or the fused one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fusion {
    /// No fusion: every operation by the general code ([`Plan::reference`]).
    None,
    /// Every pass ([`Plan::fused`]).
    All,
}

/// A program's executable plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Which passes made it.
    pub fusion: Fusion,
    /// Per calculation (hash or checksum), its inputs resolved at load time as PHV bit
    /// runs (None: resolved per packet).
    pub calcs: Vec<Option<hash::CalcPlan>>,
    /// The parser.
    pub parser: parser::ParserPlan,
    /// Checksums verified after parsing and updated before deparsing.
    pub checksums: checksum::ChecksumPlan,
    /// The ingress control.
    pub ingress: control::ControlPlan,
    /// The egress control.
    pub egress: control::ControlPlan,
    /// Per table.
    pub tables: Vec<table::TablePlan>,
    /// Per action.
    pub actions: Vec<action::ActionPlan>,
    /// The deparser.
    pub deparser: deparser::Deparser,
}

impl Plan {
    /// The plan of `prog` with the given fusion.
    pub fn new(prog: &Program, fusion: Fusion) -> Plan {
        match fusion {
            Fusion::None => Plan::reference(prog),
            Fusion::All => Plan::fused(prog),
        }
    }

    /// The plain reading of `prog`: every parser operation and select, condition, key
    /// part, action primitive, checksum and emit by the general code.
    pub fn reference(prog: &Program) -> Plan {
        Plan {
            fusion: Fusion::None,
            calcs: vec![None; prog.calculations.len()],
            parser: parser::ParserPlan::reference(prog),
            checksums: checksum::ChecksumPlan::new(prog, &[], false),
            ingress: control::ControlPlan::new(prog, &prog.ingress, false),
            egress: control::ControlPlan::new(prog, &prog.egress, false),
            tables: table::tables(prog, false),
            actions: action::actions(prog, false),
            deparser: deparser::Deparser::new(prog, true),
        }
    }

    /// The reference plan of `prog` after every pass.
    pub fn fused(prog: &Program) -> Plan {
        let mut plan = Plan::reference(prog);
        plan.fusion = Fusion::All;
        plan.plan_calculations(prog);
        plan.parser.plan_states(prog);
        plan.parser.fuse_path();
        plan.parser.fuse_extracts();
        plan.plan_conditions(prog);
        plan.tables = table::tables(prog, true);
        plan.actions = action::actions(prog, true);
        plan.checksums = checksum::ChecksumPlan::new(prog, &plan.calcs, true);
        plan.deparser = deparser::Deparser::new(prog, false);
        plan
    }

    /// Pass: hash and checksum inputs of static fields as runs of adjacent PHV bits
    /// (the IPv4 header is two runs), internet checksums over whole 16-bit words as
    /// byte pieces.
    fn plan_calculations(&mut self, prog: &Program) {
        self.calcs = prog
            .calculations
            .iter()
            .map(|c| hash::plan(prog, c))
            .collect();
    }

    /// Pass: conditions of the shapes p4c emits tested through their plans.
    fn plan_conditions(&mut self, prog: &Program) {
        self.ingress = control::ControlPlan::new(prog, &prog.ingress, true);
        self.egress = control::ControlPlan::new(prog, &prog.egress, true);
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
        let path = e
            .plan
            .parser
            .path
            .clone()
            .expect("simple_router has a parse path");
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
        let path = e
            .plan
            .parser
            .path
            .clone()
            .expect("acl_firewall has a parse path");
        let tcp = e
            .prog
            .parser
            .states
            .iter()
            .position(|s| s.name == "parse_tcp");
        assert_eq!(path.states(), 2);
        assert_eq!(path.next.map(|s| s as usize), tcp);
        // basic_l2: one state, nothing to gain
        assert!(corpus_engine("basic_l2").plan.parser.path.is_none());
        // the general parser has none
        let json = std::fs::read_to_string(format!(
            "{}/../../tests/corpus/simple_router/simple_router.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let g = load(
            &json,
            EngineConfig {
                engine: crate::EngineKind::Reference,
                ..EngineConfig::default()
            },
        )
        .unwrap();
        assert!(g.plan.parser.path.is_none());
    }

    /// vxlan_gateway's start state copies a 304-bit lookahead into a temporary and
    /// slices it with `(tmp >> k) & mask` into a dozen fields: planned, that is one
    /// packet copy, a read of each slice's bits (no big-integer evaluation; the two
    /// wide slices byte copies) and the `add_header`, nothing by the general code. (The planned-vs-general parser test
    /// checks the values, on whole and truncated frames.)
    #[test]
    fn wide_lookahead_and_its_slices_are_planned() {
        let e = corpus_engine("vxlan_gateway");
        let start = e.prog.parser.init.unwrap() as usize;
        let ops = &e.plan.parser.states[start].ops;
        let count = |f: fn(&super::parser::ParseOp) -> bool| ops.iter().filter(|o| f(o)).count();
        assert_eq!(
            count(|o| matches!(o, super::parser::ParseOp::SetAhead { n: 38, .. })),
            1
        );
        assert_eq!(
            count(|o| matches!(o, super::parser::ParseOp::General(_))),
            0
        );
        assert_eq!(
            count(|o| matches!(o, super::parser::ParseOp::AddHeader { .. })),
            1
        );
        assert!(
            count(|o| matches!(o, super::parser::ParseOp::CopyBytes { n: 12 | 10, .. })) >= 2,
            "{ops:?}"
        );
        assert!(
            count(|o| {
                matches!(
                    o,
                    super::parser::ParseOp::Copy64 { .. }
                        | super::parser::ParseOp::CopyBytes { .. }
                )
            }) >= 10,
            "{ops:?}"
        );
        assert_eq!(ops.len(), 14);
    }

    /// A program whose checksums are only partly planned (bng: IPv4 header checksums, and
    /// TCP checksums over a pseudo-header with a constant and metadata) keeps the plans
    /// for those that have one and runs the others by the general code, updates in
    /// program order; a program whose checksums all have plans runs them inline.
    #[test]
    fn partly_planned_checksums_keep_their_plans() {
        use super::checksum::CsumOp;
        let planned = |ops: &[CsumOp]| {
            ops.iter()
                .filter(|o| matches!(o, CsumOp::Planned(_)))
                .count()
        };
        let e = corpus_engine("bng");
        let ck = &e.plan.checksums;
        // bng verifies only IPv4 header checksums: all planned
        assert!(!ck.verify.is_empty() && ck.verify_planned, "{ck:?}");
        assert!(!ck.update_planned);
        let n = ck.update.len();
        assert!(planned(&ck.update) > 0 && planned(&ck.update) < n);
        let updates = e.prog.checksums.iter().filter(|c| c.update).count();
        assert_eq!(n, updates);
        // in program order: the general ones' indexes increase
        let general: Vec<u32> = ck
            .update
            .iter()
            .filter_map(|o| match o {
                CsumOp::General { index, .. } => Some(*index),
                CsumOp::Planned(_) => None,
            })
            .collect();
        assert!(general.windows(2).all(|w| w[0] < w[1]));
        // the general ones (pseudo header, TCP header, payload) are whole bytes: summed
        // in place
        for i in general {
            let calc = e.prog.checksums[i as usize].calc as usize;
            assert!(e.plan.calcs[calc].as_ref().is_some_and(|c| c.csum_bytes));
        }
        // udp_tcp_checksum verifies IPv4 (planned), TCP and UDP (general)
        let e = corpus_engine("udp_tcp_checksum");
        let ck = &e.plan.checksums;
        assert_eq!((planned(&ck.verify), ck.verify.len()), (1, 3), "{ck:?}");
        let e = corpus_engine("simple_router");
        assert!(e.plan.checksums.verify_planned && e.plan.checksums.update_planned);
    }
}
