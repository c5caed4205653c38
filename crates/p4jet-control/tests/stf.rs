//! STF parsing and translation: the whole corpus, hand-checked translations
//! against what bmv2stf.py produces, extensions, errors, and the frame
//! comparison.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{corpus_dir, corpus_json, corpus_programs, switch_for};
use p4jet_control::cli::Cli;
use p4jet_control::stf::*;
use p4jet_runtime::Schema as Program;

fn program(name: &str) -> Program {
    Program::from_json(&corpus_json(name)).expect("corpus JSON")
}

fn stf_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "stf"));
    v.sort();
    v
}

fn translate(program_name: &str, text: &str) -> Vec<StfKind> {
    parse_stf(text, &program(program_name), &StfOptions::default())
        .unwrap_or_else(|e| panic!("{e:?}"))
        .into_iter()
        .map(|s| s.kind)
        .collect()
}

fn one_command(program_name: &str, line: &str) -> String {
    match translate(program_name, line).as_slice() {
        [StfKind::Cli { command, .. }] => command.clone(),
        other => panic!("{line}: {other:?}"),
    }
}

/// The command split into words (bmv2stf.py's spacing differs: it writes
/// `=> ` + args + ` ` + priority; the CLI splits on whitespace anyway).
fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn stf_error(program_name: &str, text: &str, options: StfOptions) -> String {
    let errors = parse_stf(text, &program(program_name), &options).expect_err(text);
    assert_eq!(errors.len(), 1, "{errors:?}");
    errors[0].to_string()
}

#[test]
fn every_corpus_stf_parses_and_its_commands_run() {
    let mut files = 0;
    let mut statements = 0;
    for name in corpus_programs() {
        let json = corpus_json(&name);
        let prog = Program::from_json(&json).unwrap();
        let tests = corpus_dir().join(&name).join("tests");
        let plain = stf_files(&tests);
        let ext = stf_files(&tests.join("ext"));
        for (path, extensions) in plain
            .iter()
            .map(|p| (p, false))
            .chain(ext.iter().map(|p| (p, true)))
        {
            let text = std::fs::read_to_string(path).unwrap();
            // Plain tests are what p4c's bmv2 driver accepts.
            let parsed = parse_stf(&text, &prog, &StfOptions { extensions })
                .unwrap_or_else(|e| panic!("{}: {:?}", path.display(), e));
            assert_eq!(
                parse_stf(&text, &prog, &StfOptions::default()).unwrap(),
                parsed
            );
            // Every translated command is valid for the CLI.
            let mut cli = Cli::new(&json).unwrap();
            let mut api = switch_for(&json);
            let mut expects = 0;
            for s in &parsed {
                let cmd = match &s.kind {
                    StfKind::Cli { command, .. } => Some(command.clone()),
                    StfKind::CheckCounter(c) => c.read_command.clone(),
                    StfKind::Expect { .. } => {
                        expects += 1;
                        None
                    }
                    _ => None,
                };
                if let Some(Err(e)) = cmd.as_ref().map(|c| cli.execute(&mut api, c)) {
                    panic!("{}:{}: {cmd:?}: {}", path.display(), s.line, e.printed());
                }
            }
            let text_expects = text
                .lines()
                .filter(|l| l.trim_start().starts_with("expect "))
                .count();
            assert_eq!(expects, text_expects, "{}", path.display());
            files += 1;
            statements += parsed.len();
        }
    }
    assert_eq!(files, 106, "the corpus has 106 STF tests");
    assert!(statements > 1000);
}

#[test]
fn translations_match_bmv2stf() {
    // Ternary: '*' digits give mask 0; unlisted keys are 0&&&0; priority 10000 - P.
    assert_eq!(
        words(&one_command(
            "acl_firewall",
            "add acl 100 hdr.ipv4.src_addr:0x0A42**** deny()"
        )),
        words(
            "table_add IngressImpl.acl IngressImpl.deny 0x0A420000&&&0xFFFF0000 0&&&0 0&&&0 0&&&0 0&&&0 0&&&0 =>  9900"
        )
    );
    assert_eq!(
        words(&one_command(
            "acl_firewall",
            "add acl 20 hdr.ipv4.dst_addr:0xC0A801** hdr.ipv4.protocol:0x06 meta.tcp_flags:0b***0**1* deny()"
        )),
        words(
            "table_add IngressImpl.acl IngressImpl.deny 0&&&0 0xC0A80100&&&0xFFFFFF00 0x06&&&0xFF 0&&&0 0&&&0 0b00000010&&&0b00010010 =>  9980"
        )
    );
    // Exact keys and arguments are passed as written.
    assert_eq!(
        one_command(
            "acl_firewall",
            "add port_map std_meta.ingress_port:0 forward(port:1)"
        ),
        "table_add IngressImpl.port_map IngressImpl.forward 0 => 1"
    );
    assert_eq!(
        one_command(
            "bng",
            "add dnat hdr.ipv4.dst_addr:0xcb007101 hdr.tcp.dst_port:20001 destination_nat(private_addr:0x6440000b, private_port:5000, subscriber_id:2)"
        ),
        "table_add IngressImpl.dnat IngressImpl.destination_nat 0xcb007101 20001 => 0x6440000b 5000 2"
    );
    // Arguments in the action's order whatever the order in the file.
    assert_eq!(
        one_command(
            "bng",
            "add dnat hdr.tcp.dst_port:20001 hdr.ipv4.dst_addr:0xcb007101 destination_nat(subscriber_id:2, private_port:5000, private_addr:0x6440000b)"
        ),
        "table_add IngressImpl.dnat IngressImpl.destination_nat 0xcb007101 20001 => 0x6440000b 5000 2"
    );
    // LPM: 4 bits per hex digit, 1 per binary digit, '*' not counted.
    assert_eq!(
        one_command(
            "simple_router",
            "add ipv4_lpm hdr.ipv4.dst_addr:0x0A01**** set_next_hop(next_hop:0xc0a80002, port:2)"
        ),
        "table_add IngressImpl.ipv4_lpm IngressImpl.set_next_hop 0x0A010000/16 => 0xc0a80002 2"
    );
    assert_eq!(
        one_command(
            "simple_router",
            "add ipv4_lpm hdr.ipv4.dst_addr:0x******** set_next_hop(next_hop:0xc0a80002, port:2)"
        ),
        "table_add IngressImpl.ipv4_lpm IngressImpl.set_next_hop 0x00000000/0 => 0xc0a80002 2"
    );
    assert_eq!(
        one_command(
            "simple_router",
            "add ipv4_lpm hdr.ipv4.dst_addr:0b101011000001******************** set_next_hop(next_hop:0xc0a80001, port:1)"
        ),
        "table_add IngressImpl.ipv4_lpm IngressImpl.set_next_hop 0b10101100000100000000000000000000/12 => 0xc0a80001 1"
    );
    let v6 = one_command(
        "ipv6_router",
        "add routes hdr.ipv6.dst_addr:0b001000000000000100001101101110001*********************************************************************************************** route(next_hop_id:3, port:3)",
    );
    assert!(v6.starts_with(
        "table_add IngressImpl.routes IngressImpl.route 0b001000000000000100001101101110001000"
    ));
    assert!(v6.ends_with("/33 => 3 3"), "{v6}");
    // Header stack index: hdr.mpls$0.label is hdr.mpls[0].label.
    assert_eq!(
        one_command(
            "mpls_stack",
            "add mpls_fib hdr.mpls$0.label:100 swap(label:200, port:1)"
        ),
        "table_add IngressImpl.mpls_fib IngressImpl.swap 100 => 200 1"
    );
    // Key names may be dotted suffixes; table and action names too.
    assert_eq!(
        one_command(
            "simple_router",
            "add IngressImpl.neighbor next_hop:0xc0a80001 IngressImpl.set_dst_mac(dst_mac:0x000000000101)"
        ),
        "table_add IngressImpl.neighbor IngressImpl.set_dst_mac 0xc0a80001 => 0x000000000101"
    );
    // A priority given for a non-ternary table is ignored, like bmv2stf.py.
    assert_eq!(
        one_command(
            "basic_l2",
            "add dmac 5 hdr.ethernet.dst_addr:0x000000000010 forward(port:0)"
        ),
        "table_add IngressImpl.dmac IngressImpl.forward 0x000000000010 => 0"
    );
    // setdefault (bmv2stf.py keeps the names as written; the CLI resolves them the same way).
    assert_eq!(
        one_command(
            "vxlan_gateway",
            "setdefault vtep_config set_local_vtep(vtep_addr:0x0aff0001, gateway_mac:0x00ee00000001)"
        ),
        "table_set_default IngressImpl.vtep_config IngressImpl.set_local_vtep 0x0aff0001 0x00ee00000001"
    );
    assert_eq!(
        one_command("control_flow", "setdefault classify stop()"),
        "table_set_default IngressImpl.classify IngressImpl.stop"
    );
    // Pass-through lines.
    assert_eq!(
        one_command("multicast", "mc_node_create 0 0 1 2 3"),
        "mc_node_create 0 0 1 2 3"
    );
    assert_eq!(
        one_command(
            "stateful",
            "meter_set_rates IngressImpl.flow_meter 3 0.000000001:1   0.000000001:2"
        ),
        "meter_set_rates IngressImpl.flow_meter 3 0.000000001:1 0.000000001:2"
    );
    assert_eq!(
        one_command("mirror_clone", "MIRRORING_ADD 1 3"),
        "mirroring_add 1 3"
    );
    // Entry names.
    assert_eq!(
        translate(
            "basic_l2",
            "add dmac hdr.ethernet.dst_addr:0x10 forward(port:0) = A"
        ),
        vec![StfKind::Cli {
            command: "table_add IngressImpl.dmac IngressImpl.forward 0x10 => 0".into(),
            entry_name: Some("A".into())
        }]
    );
}

#[test]
fn packets_expects_counters_and_others() {
    let kinds = translate(
        "acl_firewall",
        "packet 0 00000000000B 0800 # a comment\n\
         expect 1 00000000000B 08** $\n\
         expect 2 0a**\n\
         expect 3\n\
         check_counter acl_counter(0) bytes == 104\n\
         check_counter acl_counter(3) packets >= 2\n\
         check_counter IngressImpl.acl_counter($A)\n\
         wait\n\
         no_packet\n\
         remove all\n\
         expect_digest 1 0000000000100000\n",
    );
    assert_eq!(
        kinds[0],
        StfKind::Packet {
            port: 0,
            data: vec![0, 0, 0, 0, 0, 0x0b, 0x08, 0]
        }
    );
    assert_eq!(
        kinds[1],
        StfKind::Expect {
            port: 1,
            frame: Some(ExpectedFrame::parse("00000000000B08**$").unwrap())
        }
    );
    match &kinds[2] {
        StfKind::Expect {
            port: 2,
            frame: Some(f),
        } => {
            assert_eq!(f.nibbles, vec![Some(0), Some(0xa), None, None]);
            assert!(!f.exact_length);
        }
        k => panic!("{k:?}"),
    }
    assert_eq!(
        kinds[3],
        StfKind::Expect {
            port: 3,
            frame: None
        }
    );
    assert_eq!(
        kinds[4],
        StfKind::CheckCounter(CounterCheck {
            counter: "IngressImpl.acl_counter".into(),
            direct_table: Some("IngressImpl.acl".into()),
            index: CounterIndex::Number(0),
            kind: Some(CounterKind::Bytes),
            op: CmpOp::Eq,
            value: 104,
            read_command: Some("counter_read IngressImpl.acl_counter 0".into()),
        })
    );
    match &kinds[5] {
        StfKind::CheckCounter(c) => {
            assert_eq!(
                (c.kind, c.op, c.value),
                (Some(CounterKind::Packets), CmpOp::Ge, 2)
            );
            assert!(c.op.holds(3, 2) && !c.op.holds(1, 2));
        }
        k => panic!("{k:?}"),
    }
    match &kinds[6] {
        StfKind::CheckCounter(c) => {
            assert_eq!(c.index, CounterIndex::Entry("A".into()));
            assert_eq!((c.kind, c.op, c.value), (None, CmpOp::Eq, 0));
            assert_eq!(c.read_command, None);
        }
        k => panic!("{k:?}"),
    }
    assert_eq!(
        kinds[7..10],
        [StfKind::Wait, StfKind::NoPacket, StfKind::RemoveAll]
    );
    assert_eq!(
        kinds[10],
        StfKind::ExpectDigest {
            list_id: 1,
            data: vec![0, 0, 0, 0, 0, 0x10, 0, 0]
        }
    );
    // Line numbers are kept.
    let stmts = parse_stf(
        "\n# x\n\nwait\n",
        &program("basic_l2"),
        &StfOptions::default(),
    )
    .unwrap();
    assert_eq!(
        stmts,
        vec![StfStatement {
            line: 4,
            kind: StfKind::Wait
        }]
    );
}

#[test]
fn extensions_beyond_bmv2stf() {
    // Decimal lpm value: full-length prefix; explicit /len.
    assert_eq!(
        one_command(
            "simple_router",
            "add ipv4_lpm hdr.ipv4.dst_addr:167772160 set_next_hop(next_hop:1, port:1)"
        ),
        "table_add IngressImpl.ipv4_lpm IngressImpl.set_next_hop 167772160/32 => 1 1"
    );
    assert_eq!(
        one_command(
            "simple_router",
            "add ipv4_lpm hdr.ipv4.dst_addr:0x0A000000/8 set_next_hop(next_hop:1, port:1)"
        ),
        "table_add IngressImpl.ipv4_lpm IngressImpl.set_next_hop 0x0A000000/8 => 1 1"
    );
    // Decimal ternary value: exact match; /len: prefix mask.
    assert_eq!(
        words(&one_command(
            "acl_firewall",
            "add acl 1 hdr.ipv4.protocol:17 meta.l4_dst_port:0x1000/4 permit()"
        )),
        words(
            "table_add IngressImpl.acl IngressImpl.permit 0&&&0 0&&&0 17&&&0xff 0x1000&&&0xf000 0&&&0 0&&&0 => 9999"
        )
    );
    // Range keys and range-table priorities.
    assert_eq!(
        one_command(
            "acl_firewall",
            "add src_port_filter 10 hdr.ipv4.protocol:17 meta.l4_src_port:53 allow_source()"
        ),
        "table_add IngressImpl.src_port_filter IngressImpl.allow_source 17 53->53 => 9990"
    );
    assert_eq!(
        one_command(
            "acl_firewall",
            "add src_port_filter 20 hdr.ipv4.protocol:17 meta.l4_src_port:0x0*** deny_source()"
        ),
        "table_add IngressImpl.src_port_filter IngressImpl.deny_source 17 0x0000->0x0FFF => 9980"
    );
    assert_eq!(
        one_command(
            "acl_firewall",
            "add src_port_filter 20 hdr.ipv4.protocol:17 meta.l4_src_port:1024/6 deny_source()"
        ),
        "table_add IngressImpl.src_port_filter IngressImpl.deny_source 17 0x0400->0x07ff => 9980"
    );
    assert_eq!(
        one_command(
            "acl_firewall",
            "add port_class 1 meta.l4_dst_port:80 set_port_class(port_class:3)"
        ),
        "table_add IngressImpl.port_class IngressImpl.set_port_class 80->80 => 3 9999"
    );
    assert_eq!(
        one_command(
            "acl_firewall",
            "add src_port_filter 20 hdr.ipv4.protocol:6 deny_source()"
        ),
        "table_add IngressImpl.src_port_filter IngressImpl.deny_source 6 0->0xffff => 9980"
    );
    // Raw CLI lines only with extensions.
    let line = "table_add IngressImpl.src_port_filter deny_source 17 0->1023 => 20";
    assert_eq!(one_command("acl_firewall", line), line);
    assert_eq!(
        stf_error("acl_firewall", line, StfOptions { extensions: false }),
        "line 1: unknown statement 'table_add'"
    );
    assert_eq!(
        stf_error(
            "l2_learning",
            "expect_digest 1 00",
            StfOptions { extensions: false }
        ),
        "line 1: unknown statement 'expect_digest'"
    );
    assert_eq!(
        stf_error("basic_l2", "shell ls", StfOptions::default()),
        "line 1: unknown statement 'shell'"
    );
}

#[test]
fn stf_errors() {
    let e = |p, t| stf_error(p, t, StfOptions::default());
    assert_eq!(e("basic_l2", "add nope x:1 a()"), "line 1: no table nope");
    assert_eq!(
        e(
            "basic_l2",
            "add dmac hdr.ethernet.src_addr:1 forward(port:1)"
        ),
        "line 1: unexpected key field hdr.ethernet.src_addr for table IngressImpl.dmac"
    );
    assert_eq!(
        e("basic_l2", "add dmac hdr.ethernet.dst_addr:1 forward()"),
        "line 1: missing action arg port for IngressImpl.forward"
    );
    assert_eq!(
        e(
            "basic_l2",
            "add dmac hdr.ethernet.dst_addr:1 forward(port:1, x:2)"
        ),
        "line 1: unexpected action arg x for IngressImpl.forward"
    );
    assert_eq!(
        e("basic_l2", "add dmac hdr.ethernet.dst_addr:1 nope()"),
        "line 1: no action nope in table IngressImpl.dmac"
    );
    assert_eq!(
        e(
            "basic_l2",
            "add dmac hdr.ethernet.dst_addr:0x1* forward(port:1)"
        ),
        "line 1: hdr.ethernet.dst_addr: '0x1*' is not a value for an exact key"
    );
    assert_eq!(
        e("acl_firewall", "add acl hdr.ipv4.protocol:0x11 permit()"),
        "line 1: table IngressImpl.acl has ternary keys: a priority is required"
    );
    assert_eq!(
        e(
            "basic_l2",
            "add dmac hdr.ethernet.dst_addr:1 forward(port:1"
        ),
        "line 1: expected ')' at end of line"
    );
    assert_eq!(
        e("basic_l2", "packet 0 0A0"),
        "line 1: packet data has an odd number of hex digits"
    );
    assert_eq!(e("basic_l2", "packet x 0A"), "line 1: invalid port 'x'");
    assert_eq!(
        e("basic_l2", "expect 1 0A$0"),
        "line 1: '$' must end the expected data"
    );
    assert_eq!(
        e("basic_l2", "frobnicate 1"),
        "line 1: unknown statement 'frobnicate'"
    );
    assert_eq!(
        e("stateful", "check_counter nope(1) packets == 1"),
        "line 1: no counter nope"
    );
    assert_eq!(
        e("stateful", "check_counter port_counter(1) apples == 1"),
        "line 1: expected packets or bytes, found 'apples'"
    );
    // All bad lines are reported.
    let errors = parse_stf(
        "wait\nfoo\nbar\n",
        &program("basic_l2"),
        &StfOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        errors.iter().map(|e| e.line).collect::<Vec<_>>(),
        vec![2, 3]
    );
}

fn frames(list: &[(u32, &[&str])]) -> BTreeMap<u32, Vec<Vec<u8>>> {
    list.iter()
        .map(|(p, fs)| {
            let v = fs
                .iter()
                .map(|h| {
                    (0..h.len())
                        .step_by(2)
                        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("hex"))
                        .collect()
                })
                .collect();
            (*p, v)
        })
        .collect()
}

fn expectations(text: &str) -> Expectations {
    let stmts = parse_stf(text, &program("basic_l2"), &StfOptions::default()).expect("valid STF");
    Expectations::from_statements(&stmts)
}

#[test]
fn frame_comparison() {
    let exp = expectations(
        "packet 0 AABBCCDD\n\
         expect 1 AABB**DD\n\
         expect 1 AABB $\n\
         expect 2\n",
    );
    let strict = CompareOptions { strict_ports: true };
    let lax = CompareOptions::default();
    // Wildcards; longer frames match without '$'; any number on port 2.
    let ok = frames(&[(1, &["AABB00DDEE", "AABB"]), (2, &["00", "11", "22"])]);
    assert!(compare(&exp, &ok, strict).passed());
    assert!(compare(&exp, &frames(&[(1, &["aabb00dd", "aabb"])]), lax).passed());

    // '$': exact length.
    let r = compare(&exp, &frames(&[(1, &["AABB00DD", "AABBCC"])]), lax);
    assert_eq!(r.problems.len(), 1);
    assert!(matches!(
        &r.problems[0],
        Problem::Differs {
            port: 1,
            index: 1,
            diff: FrameDiff::TooLong {
                got_len: 3,
                expected_nibbles: 4
            },
            ..
        }
    ));
    // Too short.
    let r = compare(&exp, &frames(&[(1, &["AABB00", "AABB"])]), lax);
    assert!(matches!(
        &r.problems[0],
        Problem::Differs {
            diff: FrameDiff::TooShort { got_len: 3, .. },
            ..
        }
    ));
    // Differing bytes with offsets.
    let r = compare(&exp, &frames(&[(1, &["AAB000DE", "AABB"])]), lax);
    match &r.problems[..] {
        [
            Problem::Differs {
                port: 1,
                index: 0,
                diff: FrameDiff::Bytes(b),
                ..
            },
        ] => {
            assert_eq!(
                b,
                &vec![(1, "BB".to_string(), 0xb0), (3, "DD".to_string(), 0xde)]
            );
        }
        p => panic!("{p:?}"),
    }
    let text = r.to_string();
    assert!(text.contains("port 1: frame 0 differs: 2 byte(s) differ: [1] expected BB got B0; [3] expected DD got DE;"), "{text}");
    assert!(
        text.contains("expected: AABB**DD\n  received: AAB000DE"),
        "{text}"
    );
    // Missing and extra frames.
    let r = compare(&exp, &frames(&[(1, &["AABB00DD"])]), lax);
    assert!(matches!(
        &r.problems[..],
        [Problem::Missing {
            port: 1,
            index: 1,
            ..
        }]
    ));
    assert!(
        r.to_string()
            .starts_with("port 1: frame 1 missing\n  expected: AABB$")
    );
    let r = compare(&exp, &frames(&[(1, &["AABB00DD", "AABB", "CC"])]), lax);
    assert!(matches!(
        &r.problems[..],
        [Problem::Extra {
            port: 1,
            index: 2,
            unnamed_port: false,
            ..
        }]
    ));
    // A port named only by a packet line must stay silent.
    let r = compare(
        &exp,
        &frames(&[(0, &["AA"]), (1, &["AABB00DD", "AABB"])]),
        lax,
    );
    assert!(matches!(
        &r.problems[..],
        [Problem::Extra {
            port: 0,
            index: 0,
            unnamed_port: false,
            ..
        }]
    ));
    // Ports never named: only with strict_ports.
    let out = frames(&[(1, &["AABB00DD", "AABB"]), (5, &["01"])]);
    assert!(compare(&exp, &out, lax).passed());
    let r = compare(&exp, &out, strict);
    assert!(matches!(
        &r.problems[..],
        [Problem::Extra {
            port: 5,
            unnamed_port: true,
            ..
        }]
    ));
    assert!(r.to_string().contains("(port not named by the test)"));
    // Nothing sent at all.
    let r = compare(&exp, &BTreeMap::new(), strict);
    assert_eq!(r.problems.len(), 2);
    assert!(compare(&Expectations::default(), &BTreeMap::new(), strict).passed());
    // Odd number of expected nibbles.
    let exp = expectations("expect 1 ABC\n");
    assert!(compare(&exp, &frames(&[(1, &["ABCD"])]), lax).passed());
    assert!(!compare(&exp, &frames(&[(1, &["ABDD"])]), lax).passed());
}

#[test]
fn digest_comparison() {
    let exp = expectations("expect_digest 1 0011\nexpect_digest 1 0022\n");
    assert_eq!(exp.digests, vec![(1, vec![0, 0x11]), (1, vec![0, 0x22])]);
    assert!(compare_digests(&exp.digests, &exp.digests).is_empty());
    let got = vec![(1, vec![0, 0x11])];
    let problems = compare_digests(&exp.digests, &got);
    assert_eq!(
        problems,
        vec![DigestProblem {
            index: 1,
            expected: Some((1, vec![0, 0x22])),
            actual: None
        }]
    );
    let report = CompareReport {
        problems: vec![],
        digest_problems: problems,
    };
    assert_eq!(
        report.to_string(),
        "digest 1: expected list 1 0022, received nothing"
    );
}
