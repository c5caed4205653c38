//! simple_switch's ordering and metadata rules (after ingress, after egress, the
//! packet replication engine, mirroring, queues, learning), checked frame by frame.
//!
//! `programs/v1model_rules.json` (its P4 source is `programs/v1model_rules.p4`) reads a
//! `ctl` header telling each pipeline what to do (clone, resubmit, multicast, drop,
//! digest, exit, truncate, recirculate, ...) and writes the metadata every ingress and
//! egress pass sees into an `obs` header, so each expectation below is the exact frame
//! simple_switch sends. Expectations follow simple_switch's source
//! (targets/simple_switch/simple_switch.cpp, primitives.cpp; bm_sim's Packet): see
//! docs/v1model.md. Frames are compared per output port, in order, which is what
//! simple_switch guarantees (its egress threads run concurrently across ports).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use p4jet_control::cli::Cli;
use p4jet_switch::{Switch, SwitchConfig};

const RULES: &str = include_str!("programs/v1model_rules.json");

#[derive(Clone, Copy, Default)]
struct Ctl {
    iflags: u16,
    eflags: u16,
    i_session: u16,
    e_session: u16,
    mgid: u16,
    out_port: u16,
    late_port: u16,
    prio: u8,
    resubmits: u8,
    recircs: u8,
    trunc: u8,
    etrunc: u8,
}

#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Ig {
    count: u8,
    instance_type: u8,
    ingress_port: u16,
    packet_length: u32,
    passes: u8,
    kept: u8,
    lost: u8,
}

#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Eg {
    count: u8,
    instance_type: u8,
    ingress_port: u16,
    egress_port: u16,
    egress_spec: u16,
    rid: u16,
    mcast_grp: u16,
    packet_length: u32,
    passes: u8,
    kept: u8,
    lost: u8,
    priority: u8,
}

const CTL_OFF: usize = 14;
const OBS_OFF: usize = CTL_OFF + 20;
const EG_OFF: usize = OBS_OFF + 12;
const PAYLOAD_OFF: usize = EG_OFF + 21;
const FRAME_LEN: usize = PAYLOAD_OFF + 8;

fn frame(src: u8, c: &Ctl) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, src, 0x88, 0xb5];
    for v in [
        c.iflags,
        c.eflags,
        c.i_session,
        c.e_session,
        c.mgid,
        c.out_port,
        c.late_port,
    ] {
        f.extend_from_slice(&v.to_be_bytes());
    }
    f.extend_from_slice(&[c.prio, c.resubmits, c.recircs, c.trunc, 0, c.etrunc]);
    f.resize(PAYLOAD_OFF, 0);
    f.extend_from_slice(&[0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7]);
    assert_eq!(f.len(), FRAME_LEN);
    f
}

fn with_obs(f: &[u8], ig: Ig, eg: Eg) -> Vec<u8> {
    let mut o = f.to_vec();
    let mut w = OBS_OFF;
    let mut put = |b: &[u8]| {
        o[w..w + b.len()].copy_from_slice(b);
        w += b.len();
    };
    put(&[ig.count, ig.instance_type]);
    put(&ig.ingress_port.to_be_bytes());
    put(&ig.packet_length.to_be_bytes());
    put(&[ig.passes, ig.kept, ig.lost, 0]);
    put(&[eg.count, eg.instance_type]);
    for v in [
        eg.ingress_port,
        eg.egress_port,
        eg.egress_spec,
        eg.rid,
        eg.mcast_grp,
    ] {
        put(&v.to_be_bytes());
    }
    put(&eg.packet_length.to_be_bytes());
    put(&[eg.passes, eg.kept, eg.lost, eg.priority, 0]);
    o
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn decode(f: &[u8]) -> (Ig, Eg) {
    let o = &f[OBS_OFF..];
    let ig = Ig {
        count: o[0],
        instance_type: o[1],
        ingress_port: be16(&o[2..]),
        packet_length: u32::from_be_bytes([o[4], o[5], o[6], o[7]]),
        passes: o[8],
        kept: o[9],
        lost: o[10],
    };
    let e = &f[EG_OFF..];
    let eg = Eg {
        count: e[0],
        instance_type: e[1],
        ingress_port: be16(&e[2..]),
        egress_port: be16(&e[4..]),
        egress_spec: be16(&e[6..]),
        rid: be16(&e[8..]),
        mcast_grp: be16(&e[10..]),
        packet_length: u32::from_be_bytes([e[12], e[13], e[14], e[15]]),
        passes: e[16],
        kept: e[17],
        lost: e[18],
        priority: e[19],
    };
    (ig, eg)
}

struct Rig {
    sw: Switch,
    cli: Cli,
}

fn rig_with(cfg: SwitchConfig, commands: &[&str]) -> Rig {
    let cfg = SwitchConfig {
        manual_clock: Some(Arc::new(AtomicU64::new(0))),
        ..cfg
    };
    let mut sw = Switch::new(RULES, cfg).unwrap();
    let mut cli = Cli::new(RULES).unwrap();
    for c in commands {
        cli.execute(&mut sw, c)
            .unwrap_or_else(|e| panic!("{c}: {e:?}"));
    }
    Rig { sw, cli }
}

fn rig(commands: &[&str]) -> Rig {
    rig_with(SwitchConfig::default(), commands)
}

impl Rig {
    /// Injects the frames (all before processing starts), runs until idle; the frames
    /// sent, in the order they were sent.
    fn run(&mut self, frames: &[(u32, Vec<u8>)]) -> Vec<(u32, Vec<u8>)> {
        for (p, f) in frames {
            self.sw.inject(*p, f);
        }
        let mut out = vec![];
        self.sw
            .run_until_idle(&mut |p, f| out.push((p, f.to_vec())));
        // every rule keeps the books: received + copies = sent + dropped + queued
        let b = self.sw.balance();
        assert!(b.holds(), "{} ({})", b.equation(), b.drops_text());
        assert_eq!(b.queued, self.sw.worker.pending() as u64);
        out
    }

    fn errors(&self) -> &[String] {
        &self.sw.worker.core.errors
    }
}

// ingress flags (hdr.ctl.iflags)
const I_CLONE: u16 = 0x1;
const I_RESUBMIT: u16 = 0x2;
const I_MCAST: u16 = 0x4;
const I_DROP: u16 = 0x8;
const I_DIGEST_A: u16 = 0x10;
const I_DIGEST_B: u16 = 0x20;
const I_EXIT: u16 = 0x40;
const I_LATE: u16 = 0x80;
const I_TRUNC: u16 = 0x100;
const I_RESUBMIT_PORT: u16 = 0x200;
const I_RECIRC: u16 = 0x400;
const I_EXTRA: u16 = 0x800;
// egress flags (hdr.ctl.eflags)
const E_CLONE: u16 = 0x1;
const E_RECIRC: u16 = 0x2;
const E_DROP: u16 = 0x4;
const E_MCAST: u16 = 0x8;
const E_TRUNC: u16 = 0x10;
const E_SPEC: u16 = 0x20;
const E_EXTRA: u16 = 0x40;

const L: u32 = FRAME_LEN as u32;
/// egress_spec as egress sees it: drop port (511) + 1, in 9 bits.
const SPEC_IN_EGRESS: u16 = 0;

/// What the first ingress pass of a packet received on `port` records.
fn ig0(port: u16) -> Ig {
    Ig {
        count: 1,
        ingress_port: port,
        packet_length: L,
        ..Ig::default()
    }
}

/// What egress records for a unicast packet from `in_port` to `out` after one ingress
/// pass (kept/lost are the values the ingress pass wrote).
fn eg0(in_port: u16, out: u16) -> Eg {
    Eg {
        count: 1,
        ingress_port: in_port,
        egress_port: out,
        egress_spec: SPEC_IN_EGRESS,
        packet_length: L,
        kept: 0xaa,
        lost: 0xbb,
        ..Eg::default()
    }
}

/// An I2E clone (session port `out`) of a packet whose field list held `passes`.
fn eg_i2e(out: u16, passes: u8) -> Eg {
    Eg {
        count: 1,
        instance_type: 1,
        egress_port: out,
        egress_spec: SPEC_IN_EGRESS,
        packet_length: L,
        passes,
        kept: 0xaa,
        ..Eg::default()
    }
}

type Out = Vec<(u32, Vec<u8>)>;

fn by_port(out: &[(u32, Vec<u8>)]) -> BTreeMap<u32, Vec<Vec<u8>>> {
    let mut m: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
    for (p, f) in out {
        m.entry(*p).or_default().push(f.clone());
    }
    m
}

fn show(out: &[(u32, Vec<u8>)]) -> String {
    out.iter()
        .map(|(p, f)| {
            if f.len() >= PAYLOAD_OFF {
                format!("port {p} len {}: {:?}\n", f.len(), decode(f))
            } else {
                format!("port {p} len {}: {:02x?}\n", f.len(), f)
            }
        })
        .collect()
}

/// Frames per port, in order per port (the order simple_switch guarantees: packets
/// meet on one egress queue; across ports its egress threads run concurrently).
#[track_caller]
fn assert_out(out: &[(u32, Vec<u8>)], expected: &[(u32, Vec<u8>)]) {
    assert!(
        by_port(out) == by_port(expected),
        "got:\n{}expected:\n{}",
        show(out),
        show(expected)
    );
}

const MIRROR_AND_GROUP: &[&str] = &[
    "mirroring_add 5 4",
    "mc_mgrp_create 1",
    "mc_node_create 7 3 1",
    "mc_node_associate 1 0",
];

#[test]
fn unicast_sees_normal_metadata() {
    let mut r = rig(&[]);
    let f = frame(
        1,
        &Ctl {
            out_port: 2,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(3, f.clone())]);
    assert_out(&out, &[(2, with_obs(&f, ig0(3), eg0(3, 2)))]);
    assert!(r.errors().is_empty());
}

/// Clone, multicast and resubmit requested in one ingress pass: the I2E clone is made,
/// resubmit wins over multicast, the original is not forwarded; the resubmitted pass
/// (same requests, resubmit no longer wanted) clones again and multicasts.
#[test]
fn clone_multicast_and_resubmit_in_one_pass() {
    let mut r = rig(MIRROR_AND_GROUP);
    let f = frame(
        1,
        &Ctl {
            iflags: I_CLONE | I_MCAST | I_RESUBMIT,
            i_session: 5,
            mgid: 1,
            out_port: 2,
            resubmits: 1,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    // clones are the packet as received (ingress header changes lost), metadata reset
    // but field list 1 (passes, kept): passes was already 1 when the first pass ended
    let clone = with_obs(&f, Ig::default(), eg_i2e(4, 1));
    // the resubmitted pass: instance_type 6, ingress_port 0, passes and kept preserved,
    // lost reset; its copies share its ingress metadata
    let ig = Ig {
        instance_type: 6,
        ingress_port: 0,
        passes: 1,
        kept: 0xaa,
        ..ig0(6)
    };
    let copy = |port: u16| {
        with_obs(
            &f,
            ig,
            Eg {
                instance_type: 5,
                ingress_port: 0,
                rid: 7,
                mcast_grp: 1,
                passes: 1,
                ..eg0(0, port)
            },
        )
    };
    assert_out(
        &out,
        &[(4, clone.clone()), (4, clone), (1, copy(1)), (3, copy(3))],
    );
}

/// The books of a clone, a resubmission and a multicast: two clones (one per pass),
/// the resubmitted packet replicated to two ports (one copy beyond it), nothing
/// dropped, every frame sent.
#[test]
fn clones_multicast_and_resubmission_are_counted() {
    let mut r = rig(MIRROR_AND_GROUP);
    let f = frame(
        1,
        &Ctl {
            iflags: I_CLONE | I_MCAST | I_RESUBMIT,
            i_session: 5,
            mgid: 1,
            out_port: 2,
            resubmits: 1,
            ..Ctl::default()
        },
    );
    let n = 10u64;
    let frames: Vec<(u32, Vec<u8>)> = (0..n).map(|_| (6, f.clone())).collect();
    let out = r.run(&frames);
    assert_eq!(out.len() as u64, 4 * n);
    let b = r.sw.balance();
    assert_eq!(b.received(), n);
    assert_eq!(b.accounts.clone_copies, 2 * n);
    assert_eq!(b.accounts.multicast_copies, n);
    assert_eq!(b.accounts.resubmitted, n);
    assert_eq!(b.sent(), 4 * n);
    assert_eq!(b.dropped(), 0, "{}", b.drops_text());
    assert_eq!(b.ports[6].rx, n);
    assert_eq!(b.ports[4].tx, 2 * n);
    // a group that does not exist replaces the packet by nothing: a counted drop
    let g = frame(
        2,
        &Ctl {
            iflags: I_MCAST,
            mgid: 9,
            out_port: 2,
            ..Ctl::default()
        },
    );
    assert!(r.run(&[(6, g)]).is_empty());
    let b = r.sw.balance();
    assert_eq!(b.drops()[p4jet_switch::DropReason::NoReplicas.index()], 1);
    assert!(b.holds(), "{}", b.equation());
    // and the runtime API's JSON says the same
    let j: serde_json::Value =
        serde_json::from_str(&p4jet_runtime::Runtime::packet_books(&mut r.sw).unwrap()).unwrap();
    assert_eq!(j["total"]["received"], n + 1);
    assert_eq!(j["total"]["balanced"], true);
    assert_eq!(j["total"]["drops"]["no_replicas"], 1);
}

#[test]
fn clone_and_multicast_without_resubmit() {
    let mut r = rig(MIRROR_AND_GROUP);
    let f = frame(
        1,
        &Ctl {
            iflags: I_CLONE | I_MCAST,
            i_session: 5,
            mgid: 1,
            out_port: 2,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    let copy = |port: u16| {
        with_obs(
            &f,
            ig0(6),
            Eg {
                instance_type: 5,
                rid: 7,
                mcast_grp: 1,
                ..eg0(6, port)
            },
        )
    };
    // nothing on out_port 2: the original is discarded once replicated
    assert_out(
        &out,
        &[
            (4, with_obs(&f, Ig::default(), eg_i2e(4, 0))),
            (1, copy(1)),
            (3, copy(3)),
        ],
    );
}

#[test]
fn clone_of_a_dropped_packet_and_drop_over_multicast() {
    let mut r = rig(MIRROR_AND_GROUP);
    let dropped = frame(
        1,
        &Ctl {
            iflags: I_CLONE | I_DROP,
            i_session: 5,
            out_port: 2,
            ..Ctl::default()
        },
    );
    // mark_to_drop also clears mcast_grp: no copies
    let mc_dropped = frame(
        2,
        &Ctl {
            iflags: I_MCAST | I_DROP,
            mgid: 1,
            out_port: 2,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, dropped.clone()), (6, mc_dropped)]);
    assert_out(
        &out,
        &[(4, with_obs(&dropped, Ig::default(), eg_i2e(4, 0)))],
    );
}

#[test]
fn unconfigured_session_makes_no_clone_and_session_ids_are_masked() {
    let mut r = rig(MIRROR_AND_GROUP);
    let unconfigured = frame(
        1,
        &Ctl {
            iflags: I_CLONE,
            i_session: 9,
            out_port: 2,
            ..Ctl::default()
        },
    );
    // the session id is taken modulo 0x8000: 0x8005 is session 5
    let masked = frame(
        2,
        &Ctl {
            iflags: I_CLONE,
            i_session: 0x8005,
            out_port: 2,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, unconfigured.clone()), (6, masked.clone())]);
    assert_out(
        &out,
        &[
            (2, with_obs(&unconfigured, ig0(6), eg0(6, 2))),
            (2, with_obs(&masked, ig0(6), eg0(6, 2))),
            (4, with_obs(&masked, Ig::default(), eg_i2e(4, 0))),
        ],
    );
    // session 0 is a session like any other
    r.cli.execute(&mut r.sw, "mirroring_add 0 3").unwrap();
    let zero = frame(
        3,
        &Ctl {
            iflags: I_CLONE,
            i_session: 0,
            out_port: 2,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, zero.clone())]);
    assert_out(
        &out,
        &[
            (2, with_obs(&zero, ig0(6), eg0(6, 2))),
            (3, with_obs(&zero, Ig::default(), eg_i2e(3, 0))),
        ],
    );
    // a deleted session no longer clones
    r.cli.execute(&mut r.sw, "mirroring_delete 5").unwrap();
    let out = r.run(&[(6, masked.clone())]);
    assert_out(&out, &[(2, with_obs(&masked, ig0(6), eg0(6, 2)))]);
}

/// A mirroring session towards a multicast group: the copies are still clones
/// (instance_type 1 or 2, not 5), with the node's egress_rid, and carry only the field
/// list (mcast_grp reads 0).
#[test]
fn clones_to_a_multicast_session_keep_their_instance_type() {
    let mut r = rig(&[
        "mirroring_add_mc 6 1",
        "mc_mgrp_create 1",
        "mc_node_create 7 3 1",
        "mc_node_associate 1 0",
    ]);
    let i2e = frame(
        1,
        &Ctl {
            iflags: I_CLONE,
            i_session: 6,
            out_port: 2,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, i2e.clone())]);
    let clone = |port: u16| {
        with_obs(
            &i2e,
            Ig::default(),
            Eg {
                rid: 7,
                ..eg_i2e(port, 0)
            },
        )
    };
    assert_out(
        &out,
        &[
            (2, with_obs(&i2e, ig0(6), eg0(6, 2))),
            (1, clone(1)),
            (3, clone(3)),
        ],
    );
    let e2e = frame(
        1,
        &Ctl {
            eflags: E_CLONE,
            e_session: 6,
            out_port: 2,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, e2e.clone())]);
    let original = with_obs(&e2e, ig0(6), eg0(6, 2));
    let clone = |port: u16| {
        with_obs(
            &e2e,
            ig0(6),
            Eg {
                count: 2,
                instance_type: 2,
                egress_port: port,
                egress_spec: SPEC_IN_EGRESS,
                rid: 7,
                packet_length: L,
                kept: 0xaa,
                ..Eg::default()
            },
        )
    };
    assert_out(&out, &[(2, original), (1, clone(1)), (3, clone(3))]);
}

/// E2E clone: the headers as egress left them, metadata reset but the field list,
/// instance_type 2, ingress_port 0, packet_length of the original.
#[test]
fn e2e_clone_metadata() {
    let mut r = rig(MIRROR_AND_GROUP);
    let f = frame(
        1,
        &Ctl {
            eflags: E_CLONE,
            e_session: 5,
            out_port: 2,
            prio: 0,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    let original = eg0(6, 2);
    // the clone's egress overwrites the observations the original's egress made
    // (eg_count counts both passes)
    let clone = Eg {
        count: 2,
        instance_type: 2,
        egress_port: 4,
        egress_spec: SPEC_IN_EGRESS,
        packet_length: L,
        kept: 0xaa,
        ..Eg::default()
    };
    assert_out(
        &out,
        &[
            (2, with_obs(&f, ig0(6), original)),
            (4, with_obs(&f, ig0(6), clone)),
        ],
    );
}

/// Resubmit: the packet as received goes back to ingress with instance_type 6,
/// ingress_port 0, its original packet_length, metadata reset but the field list; once
/// it is forwarded, egress sees instance_type 0 (simple_switch marks unicast packets
/// NORMAL before enqueueing them).
#[test]
fn resubmit_metadata() {
    let mut r = rig(&[]);
    let f = frame(
        1,
        &Ctl {
            iflags: I_RESUBMIT,
            out_port: 2,
            resubmits: 2,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    let ig = Ig {
        instance_type: 6,
        ingress_port: 0,
        passes: 2,
        kept: 0xaa,
        ..ig0(6)
    };
    let eg = Eg {
        passes: 2,
        ..eg0(0, 2)
    };
    assert_out(&out, &[(2, with_obs(&f, ig, eg))]);

    // a field list naming standard_metadata.ingress_port preserves it; kept is not
    // in that list and reads 0
    let f = frame(
        1,
        &Ctl {
            iflags: I_RESUBMIT_PORT,
            out_port: 2,
            resubmits: 1,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    let ig = Ig {
        instance_type: 6,
        ingress_port: 6,
        passes: 1,
        kept: 0,
        ..ig0(6)
    };
    let eg = Eg {
        passes: 1,
        ..eg0(6, 2)
    };
    assert_out(&out, &[(2, with_obs(&f, ig, eg))]);
}

/// Recirculate: the deparsed packet (egress changes kept, 4 bytes longer here) comes
/// back with instance_type 4, ingress_port 0, packet_length = its new size, metadata
/// reset but the field list (passes; kept is not in it).
#[test]
fn recirculate_metadata_and_new_length() {
    let mut r = rig(&[]);
    let f = frame(
        1,
        &Ctl {
            eflags: E_RECIRC | E_EXTRA,
            out_port: 2,
            recircs: 1,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    let mut exp = f.clone();
    exp[CTL_OFF + 18] = 1; // has_extra
    exp.splice(PAYLOAD_OFF..PAYLOAD_OFF, [0xde, 0xad, 0xbe, 0xef]);
    let ig = Ig {
        count: 2,
        instance_type: 4,
        ingress_port: 0,
        packet_length: L + 4,
        passes: 1,
        kept: 0,
        lost: 0,
    };
    let eg = Eg {
        count: 2,
        packet_length: L + 4,
        passes: 1,
        ..eg0(0, 2)
    };
    assert_out(&out, &[(2, with_obs(&exp, ig, eg))]);
}

/// recirculate() called in ingress takes effect after egress (simple_switch keeps the
/// request with the packet).
#[test]
fn recirculate_requested_in_ingress() {
    let mut r = rig(&[]);
    let f = frame(
        1,
        &Ctl {
            iflags: I_RECIRC,
            out_port: 2,
            recircs: 1,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    let ig = Ig {
        count: 2,
        instance_type: 4,
        ingress_port: 0,
        passes: 1,
        ..ig0(6)
    };
    let eg = Eg {
        count: 2,
        passes: 1,
        ..eg0(0, 2)
    };
    assert_out(&out, &[(2, with_obs(&f, ig, eg))]);
}

/// Multicast: one copy per node and port, nodes in association order, ports ascending
/// within a node, each with its node's egress_rid and instance_type 5; the copies share
/// the ingress metadata (ingress_port, user metadata). An unknown group makes no copy;
/// mcast_grp written in egress changes nothing.
#[test]
fn multicast_copies() {
    let mut r = rig(&[
        "mc_mgrp_create 1",
        "mc_node_create 7 3 1",
        "mc_node_create 2 1",
        "mc_node_associate 1 0",
        "mc_node_associate 1 1",
    ]);
    let f = frame(
        1,
        &Ctl {
            iflags: I_MCAST,
            mgid: 1,
            out_port: 2,
            prio: 0,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    let copy = |port: u16, rid: u16| {
        with_obs(
            &f,
            ig0(6),
            Eg {
                instance_type: 5,
                rid,
                mcast_grp: 1,
                ..eg0(6, port)
            },
        )
    };
    assert_out(&out, &[(1, copy(1, 7)), (1, copy(1, 2)), (3, copy(3, 7))]);
    // p4jet sends the copies in the order they are made
    assert_eq!(
        out,
        vec![(1, copy(1, 7)), (3, copy(3, 7)), (1, copy(1, 2))],
        "{}",
        show(&out)
    );

    let unknown = frame(
        1,
        &Ctl {
            iflags: I_MCAST,
            mgid: 99,
            out_port: 2,
            ..Ctl::default()
        },
    );
    assert_out(&r.run(&[(6, unknown)]), &[]);

    let in_egress = frame(
        1,
        &Ctl {
            eflags: E_MCAST,
            mgid: 1,
            out_port: 2,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, in_egress.clone())]);
    assert_out(&out, &[(2, with_obs(&in_egress, ig0(6), eg0(6, 2)))]);
}

/// In egress only egress_spec == drop port drops (mark_to_drop, or an assignment of the
/// drop port); any other value written to egress_spec changes nothing.
#[test]
fn egress_drop_rules() {
    let mut r = rig(&[]);
    let dropped = frame(
        1,
        &Ctl {
            eflags: E_DROP,
            out_port: 2,
            ..Ctl::default()
        },
    );
    let assigned_drop_port = frame(
        2,
        &Ctl {
            eflags: E_SPEC,
            out_port: 2,
            late_port: 511,
            ..Ctl::default()
        },
    );
    let other_port = frame(
        3,
        &Ctl {
            eflags: E_SPEC,
            out_port: 2,
            late_port: 7,
            ..Ctl::default()
        },
    );
    let out = r.run(&[
        (6, dropped),
        (6, assigned_drop_port),
        (6, other_port.clone()),
    ]);
    assert_out(&out, &[(2, with_obs(&other_port, ig0(6), eg0(6, 2)))]);
}

/// `--drop-port 100`: mark_to_drop uses it, egress sees egress_spec 101, port 511 is a
/// port like any other.
#[test]
fn drop_port_option() {
    let mut r = rig_with(
        SwitchConfig {
            drop_port: 100,
            ..SwitchConfig::default()
        },
        &[],
    );
    let to_511 = frame(
        1,
        &Ctl {
            out_port: 511,
            ..Ctl::default()
        },
    );
    let marked = frame(
        2,
        &Ctl {
            iflags: I_DROP,
            out_port: 2,
            ..Ctl::default()
        },
    );
    let to_100 = frame(
        3,
        &Ctl {
            out_port: 100,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, to_511.clone()), (6, marked), (6, to_100)]);
    let eg = Eg {
        egress_spec: 101,
        ..eg0(6, 511)
    };
    assert_out(&out, &[(511, with_obs(&to_511, ig0(6), eg))]);
}

fn prio_frame(src: u8, prio: u8) -> Vec<u8> {
    frame(
        src,
        &Ctl {
            out_port: 2,
            prio,
            ..Ctl::default()
        },
    )
}

#[test]
fn one_queue_drops_any_nonzero_priority() {
    let mut r = rig(&[]);
    let ok = prio_frame(1, 0);
    let out = r.run(&[
        (6, prio_frame(2, 1)),
        (6, ok.clone()),
        (6, prio_frame(3, 7)),
    ]);
    assert_out(&out, &[(2, with_obs(&ok, ig0(6), eg0(6, 2)))]);
    // reported once, counted per packet
    assert_eq!(r.errors().len(), 1, "{:?}", r.errors());
    let b = r.sw.balance();
    let reason = p4jet_switch::DropReason::PriorityOutOfRange;
    assert_eq!(b.drops()[reason.index()], 2);
    assert!(
        r.errors()[0].contains("priority 1 out of range"),
        "{:?}",
        r.errors()
    );
}

/// `--priority-queues 4`: within one batch the highest priority leaves first, FIFO
/// within a priority; priority 4 is out of range.
#[test]
fn priority_queues_serve_the_highest_priority_first() {
    let mut r = rig_with(
        SwitchConfig {
            priority_queues: 4,
            ..SwitchConfig::default()
        },
        &[],
    );
    let prios = [0u8, 3, 1, 3, 2, 4];
    let frames: Vec<(u32, Vec<u8>)> = prios
        .iter()
        .enumerate()
        .map(|(i, p)| (6, prio_frame(i as u8, *p)))
        .collect();
    let out = r.run(&frames);
    let exp = |i: usize| {
        let eg = Eg {
            priority: prios[i],
            ..eg0(6, 2)
        };
        (2, with_obs(&frames[i].1, ig0(6), eg))
    };
    assert_eq!(
        out,
        vec![exp(1), exp(3), exp(4), exp(2), exp(0)],
        "{}",
        show(&out)
    );
    assert_eq!(r.errors().len(), 1, "{:?}", r.errors());
}

#[test]
fn set_queue_depth_tail_drops() {
    let mut r = rig(&["set_queue_depth 2 2"]);
    let frames: Vec<(u32, Vec<u8>)> = (0..4)
        .map(|i| (6, prio_frame(i, 0)))
        .chain((4..8).map(|i| {
            (
                6,
                frame(
                    i,
                    &Ctl {
                        out_port: 3,
                        ..Ctl::default()
                    },
                ),
            )
        }))
        .collect();
    let out = r.run(&frames);
    let exp: Out = frames
        .iter()
        .enumerate()
        .filter(|(i, _)| *i < 2 || *i >= 4)
        .map(|(i, (_, f))| {
            let port = if i < 4 { 2 } else { 3 };
            (port as u32, with_obs(f, ig0(6), eg0(6, port)))
        })
        .collect();
    assert_out(&out, &exp);
    assert_eq!(r.errors().len(), 1, "{:?}", r.errors());
    assert!(r.errors()[0].contains("full"), "{:?}", r.errors());
    let b = r.sw.balance();
    assert_eq!(b.drops()[p4jet_switch::DropReason::QueueFull.index()], 2);

    // all queues
    let mut r = rig(&["set_queue_depth 1"]);
    let out = r.run(&frames);
    assert_out(
        &out,
        &[
            (2, with_obs(&frames[0].1, ig0(6), eg0(6, 2))),
            (3, with_obs(&frames[4].1, ig0(6), eg0(6, 3))),
        ],
    );
}

#[test]
fn resubmit_and_recirculate_loops_are_cut_and_reported() {
    let mut r = rig(&[]);
    let resubmit_loop = frame(
        1,
        &Ctl {
            iflags: I_RESUBMIT,
            out_port: 2,
            resubmits: 255,
            ..Ctl::default()
        },
    );
    let recirc_loop = frame(
        2,
        &Ctl {
            eflags: E_RECIRC,
            out_port: 2,
            recircs: 255,
            ..Ctl::default()
        },
    );
    let fine = frame(
        3,
        &Ctl {
            out_port: 2,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, resubmit_loop), (6, recirc_loop), (6, fine.clone())]);
    assert_out(&out, &[(2, with_obs(&fine, ig0(6), eg0(6, 2)))]);
    // reported once (the counters say how many followed), counted per packet
    let loops = r
        .errors()
        .iter()
        .filter(|e| e.contains("loop guard"))
        .count();
    assert_eq!(loops, 1, "{:?}", r.errors());
    let b = r.sw.worker.core.balance();
    assert_eq!(b.drops()[p4jet_switch::DropReason::LoopGuard.index()], 2);
    assert!(b.holds(), "{}", b.equation());
    assert_eq!(r.sw.worker.pending(), 0);
}

fn digests(r: &Rig) -> Vec<(u32, Vec<u8>)> {
    let d = r.sw.digests.lock().unwrap();
    d.history
        .iter()
        .map(|m| (m.list_id, m.sample.clone()))
        .collect()
}

/// Learning: a sample is sent once until acknowledged, per list; one digest per
/// packet and pass (the last digest() call of a pass wins); a resubmitted pass learns
/// too (here with ingress_port 0).
#[test]
fn digests_learning_filter_and_lists() {
    let mut r = rig(&[]);
    let a = |src: u8| {
        frame(
            src,
            &Ctl {
                iflags: I_DIGEST_A,
                out_port: 2,
                ..Ctl::default()
            },
        )
    };
    let b = |mgid: u16| {
        frame(
            9,
            &Ctl {
                iflags: I_DIGEST_B,
                mgid,
                out_port: 2,
                ..Ctl::default()
            },
        )
    };
    let mac = |src: u8, port: u16| {
        let mut s = vec![0, 0, 0, 0, 0, src];
        s.extend_from_slice(&port.to_be_bytes());
        (1u32, s)
    };
    let out = r.run(&[
        (3, a(1)),
        (3, a(1)),
        (4, a(1)),
        (3, b(0x0102)),
        (3, b(0x0102)),
        (3, b(0x0103)),
    ]);
    assert_eq!(out.len(), 6);
    assert_eq!(
        digests(&r),
        vec![mac(1, 3), mac(1, 4), (2, vec![1, 2]), (2, vec![1, 3]),]
    );
    // a dropped packet learns too (learning comes before the drop decision)
    let dropped = frame(
        1,
        &Ctl {
            iflags: I_DIGEST_A | I_DROP,
            out_port: 2,
            ..Ctl::default()
        },
    );
    assert!(r.run(&[(5, dropped)]).is_empty());
    assert_eq!(digests(&r)[4..], [mac(1, 5)]);
    // acknowledged: the same samples are sent again
    r.sw.ack_digests();
    r.run(&[(3, a(1)), (3, b(0x0102))]);
    assert_eq!(digests(&r)[5..], [mac(1, 3), (2, vec![1, 2])]);

    // both lists requested in one pass: only the last one is learned
    let mut r = rig(&[]);
    let both = frame(
        5,
        &Ctl {
            iflags: I_DIGEST_A | I_DIGEST_B,
            mgid: 7,
            out_port: 2,
            ..Ctl::default()
        },
    );
    r.run(&[(3, both)]);
    assert_eq!(digests(&r), vec![(2, vec![0, 7])]);

    // resubmit: learning happens before the resubmission, on every pass
    let mut r = rig(&[]);
    let f = frame(
        5,
        &Ctl {
            iflags: I_DIGEST_A | I_RESUBMIT,
            out_port: 2,
            resubmits: 1,
            ..Ctl::default()
        },
    );
    r.run(&[(3, f)]);
    assert_eq!(digests(&r), vec![mac(5, 3), mac(5, 0)]);
}

/// truncate() shortens the frame when it is sent; a packet made from a truncated one
/// (multicast copy, clone, recirculation) is whole.
#[test]
fn truncate_applies_at_transmit() {
    let mut r = rig(MIRROR_AND_GROUP);
    let eg_trunc = frame(
        1,
        &Ctl {
            eflags: E_TRUNC,
            out_port: 2,
            etrunc: 20,
            ..Ctl::default()
        },
    );
    let ig_trunc = frame(
        2,
        &Ctl {
            iflags: I_TRUNC,
            out_port: 2,
            trunc: 30,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, eg_trunc.clone()), (6, ig_trunc.clone())]);
    assert_out(
        &out,
        &[
            (2, with_obs(&eg_trunc, ig0(6), eg0(6, 2))[..20].to_vec()),
            (2, with_obs(&ig_trunc, ig0(6), eg0(6, 2))[..30].to_vec()),
        ],
    );

    // truncated in ingress, then replicated: the copies are whole
    let mc = frame(
        3,
        &Ctl {
            iflags: I_TRUNC | I_MCAST,
            mgid: 1,
            out_port: 2,
            trunc: 30,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, mc.clone())]);
    let copy = |port: u16| {
        with_obs(
            &mc,
            ig0(6),
            Eg {
                instance_type: 5,
                rid: 7,
                mcast_grp: 1,
                ..eg0(6, port)
            },
        )
    };
    assert_out(&out, &[(1, copy(1)), (3, copy(3))]);

    // truncated in egress and cloned E2E: the clone is whole
    let e2e = frame(
        4,
        &Ctl {
            eflags: E_TRUNC | E_CLONE,
            e_session: 5,
            out_port: 2,
            etrunc: 20,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, e2e.clone())]);
    let clone = Eg {
        count: 2,
        instance_type: 2,
        egress_port: 4,
        egress_spec: SPEC_IN_EGRESS,
        packet_length: L,
        kept: 0xaa,
        ..Eg::default()
    };
    assert_out(
        &out,
        &[
            (2, with_obs(&e2e, ig0(6), eg0(6, 2))[..20].to_vec()),
            (4, with_obs(&e2e, ig0(6), clone)[..20].to_vec()),
        ],
    );

    // truncated in egress and recirculated: the recirculated packet is whole (its
    // packet_length is the full size), the final transmission is cut
    let rc = frame(
        5,
        &Ctl {
            eflags: E_TRUNC | E_RECIRC,
            out_port: 2,
            recircs: 1,
            etrunc: 60,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, rc.clone())]);
    let ig = Ig {
        count: 2,
        instance_type: 4,
        ingress_port: 0,
        passes: 1,
        ..ig0(6)
    };
    let eg = Eg {
        count: 2,
        passes: 1,
        ..eg0(0, 2)
    };
    assert_out(&out, &[(2, with_obs(&rc, ig, eg)[..60].to_vec())]);
}

/// exit in ingress ends the control, not the packet: the after-ingress decisions (here
/// unicast to the port set before exit, a clone) and egress still happen.
#[test]
fn exit_in_ingress_still_forwards() {
    let mut r = rig(MIRROR_AND_GROUP);
    let f = frame(
        1,
        &Ctl {
            iflags: I_CLONE | I_EXIT | I_LATE,
            i_session: 5,
            out_port: 2,
            late_port: 3,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    assert_out(
        &out,
        &[
            (2, with_obs(&f, ig0(6), eg0(6, 2))),
            (4, with_obs(&f, Ig::default(), eg_i2e(4, 0))),
        ],
    );
    // without exit the late assignment wins
    let f = frame(
        1,
        &Ctl {
            iflags: I_LATE,
            out_port: 2,
            late_port: 3,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    assert_out(&out, &[(3, with_obs(&f, ig0(6), eg0(6, 3)))]);
}

/// simple_switch keeps the packet length in a packet register that add_header
/// (setValid) and remove_header (setInvalid) adjust; egress reads packet_length from
/// it. Here ingress adds the 4-byte `extra` header: egress sees 79, not 75.
#[test]
fn packet_length_in_egress_counts_headers_added_in_ingress() {
    let mut r = rig(&[]);
    let f = frame(
        1,
        &Ctl {
            iflags: I_EXTRA,
            out_port: 2,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    let mut exp = f.clone();
    exp.splice(PAYLOAD_OFF..PAYLOAD_OFF, [0x0b, 0xad, 0xca, 0xfe]);
    let eg = Eg {
        packet_length: L + 4,
        ..eg0(6, 2)
    };
    assert_out(&out, &[(2, with_obs(&exp, ig0(6), eg))]);
}

/// simple_switch's Packet::truncate keeps the smallest length asked for.
#[test]
fn truncate_twice_keeps_the_smallest_length() {
    let mut r = rig(&[]);
    let f = frame(
        1,
        &Ctl {
            iflags: I_TRUNC,
            eflags: E_TRUNC,
            out_port: 2,
            trunc: 20,
            etrunc: 30,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    assert_out(&out, &[(2, with_obs(&f, ig0(6), eg0(6, 2))[..20].to_vec())]);
}

/// The packet length register travels with the packet: multicast copies take the
/// original's (grown by the header ingress added), an I2E clone the length the pass
/// started with (simple_switch sets it to `ingress_packet_size`).
#[test]
fn packet_length_register_in_multicast_copies_and_clones() {
    let mut r = rig(MIRROR_AND_GROUP);
    let f = frame(
        1,
        &Ctl {
            iflags: I_EXTRA | I_MCAST,
            mgid: 1,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    let mut exp = f.clone();
    exp.splice(PAYLOAD_OFF..PAYLOAD_OFF, [0x0b, 0xad, 0xca, 0xfe]);
    let copy = |port: u16| {
        with_obs(
            &exp,
            ig0(6),
            Eg {
                instance_type: 5,
                rid: 7,
                mcast_grp: 1,
                packet_length: L + 4,
                ..eg0(6, port)
            },
        )
    };
    assert_out(&out, &[(1, copy(1)), (3, copy(3))]);

    let f = frame(
        1,
        &Ctl {
            iflags: I_EXTRA | I_CLONE,
            i_session: 5,
            out_port: 2,
            ..Ctl::default()
        },
    );
    let out = r.run(&[(6, f.clone())]);
    let mut exp = f.clone();
    exp.splice(PAYLOAD_OFF..PAYLOAD_OFF, [0x0b, 0xad, 0xca, 0xfe]);
    let eg = Eg {
        packet_length: L + 4,
        ..eg0(6, 2)
    };
    assert_out(
        &out,
        &[
            (2, with_obs(&exp, ig0(6), eg)),
            (4, with_obs(&f, Ig::default(), eg_i2e(4, 0))),
        ],
    );
}
