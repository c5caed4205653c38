//! The runtime model on the switch: batches in each atomicity mode, reconcile, a switch
//! without program, registers of any width, entries found by key, paged reads of a
//! large table, idle timeouts, P4Runtime-style multicast groups and clone sessions,
//! one-shot selector entries, weighted groups and digest acknowledgement timeouts —
//! checked on the state read back and on the packets forwarded.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use p4jet_runtime::bmv2::{Bmv2Code, TableOperationErrorCode as TC};
use p4jet_runtime::*;
use p4jet_switch::{Switch, SwitchConfig};

// ---------------------------------------------------------------- helpers

fn corpus_json(prog: &str) -> String {
    let path = format!(
        "{}/../../tests/corpus/{prog}/{prog}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn bench_json(prog: &str) -> String {
    let path = format!(
        "{}/../../tests/corpus/bench/{prog}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn config(clock: &Arc<AtomicU64>) -> SwitchConfig {
    SwitchConfig {
        manual_clock: Some(clock.clone()),
        batch: 1,
        ..SwitchConfig::default()
    }
}

/// A switch in memory (clock held at 0 µs until the test moves it) and its schema.
struct Env {
    sw: Switch,
    clock: Arc<AtomicU64>,
    s: Arc<Schema>,
}

fn env_json(json: &str) -> Env {
    let clock = Arc::new(AtomicU64::new(0));
    let sw = Switch::new(json, config(&clock)).unwrap();
    let s = Runtime::schema(&sw).unwrap();
    Env { sw, clock, s }
}

fn env(prog: &str) -> Env {
    env_json(&corpus_json(prog))
}

impl Env {
    fn t(&self, name: &str) -> TableId {
        self.s
            .table_by_name(name)
            .unwrap_or_else(|| panic!("{name}"))
    }
    fn a(&self, name: &str) -> ActionId {
        self.s
            .action_by_name(name)
            .unwrap_or_else(|| panic!("{name}"))
    }
    fn call(&self, name: &str, args: Vec<Bytes>) -> ActionCall {
        ActionCall::new(self.a(name), args)
    }
    fn apply(&mut self, u: Update) -> Result<Applied> {
        Runtime::apply(&mut self.sw, u)
    }
    fn write(&mut self, u: Vec<Update>, atomicity: Atomicity) -> BatchResult {
        self.sw.write(u, atomicity)
    }
    fn set_ms(&self, ms: u64) {
        self.clock.store(ms * 1000, Ordering::Relaxed);
    }
    /// Sends a frame in on `port`; the frames out, by port.
    fn send(&mut self, port: u32, frame: &[u8]) -> Vec<(u32, Vec<u8>)> {
        let mut out = vec![];
        self.sw.inject(port, frame);
        self.sw
            .run_until_idle(&mut |p, f| out.push((p, f.to_vec())));
        out
    }
    /// Everything a table holds, as read through the model.
    fn table_state(&mut self, t: TableId) -> (Vec<TableEntry>, Option<EntryAction>) {
        (
            all_entries(&mut self.sw, t).unwrap(),
            self.sw.default_entry(t).unwrap(),
        )
    }
}

fn mac(last: u8) -> Bytes {
    vec![0, 0, 0, 0, 0, last]
}

fn exact(v: Bytes) -> MatchKey {
    MatchKey::new(vec![FieldMatch::Exact(v)])
}

fn port_arg(p: u16) -> Bytes {
    p.to_be_bytes().to_vec()
}

/// Ethernet + IPv4 (valid checksum) + 8 bytes of UDP-or-not payload.
fn ipv4_frame(dst_mac: u8, src_mac: u8, dst_ip: [u8; 4], proto: u8) -> Vec<u8> {
    let mut f = mac(dst_mac);
    f.extend(mac(src_mac));
    f.extend([0x08, 0x00]);
    let mut ip = vec![
        0x45, 0, 0, 28, 0, 1, 0, 0, 64, proto, 0, 0, 10, 0, 0, 1, dst_ip[0], dst_ip[1], dst_ip[2],
        dst_ip[3],
    ];
    let mut sum: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let ck = !(sum as u16);
    ip[10..12].copy_from_slice(&ck.to_be_bytes());
    f.extend(ip);
    f.extend([0x12, 0x34, 0x00, 0x50, 0, 8, 0, 0]);
    f
}

fn l2_frame(dst_mac: u8, src_mac: u8) -> Vec<u8> {
    let mut f = mac(dst_mac);
    f.extend(mac(src_mac));
    f.extend([0x88, 0xb5]);
    f.resize(60, 0);
    f
}

/// A table's entries and default without their handles.
type Unhandled = (
    Vec<(MatchKey, EntryAction, Option<EntryTtl>)>,
    Option<EntryAction>,
);

fn no_handles((entries, default): (Vec<TableEntry>, Option<EntryAction>)) -> Unhandled {
    (
        entries
            .into_iter()
            .map(|e| (e.key, e.action, e.ttl))
            .collect(),
        default,
    )
}

fn ports(out: &[(u32, Vec<u8>)]) -> Vec<u32> {
    out.iter().map(|(p, _)| *p).collect()
}

// ---------------------------------------------------------------- batches

#[test]
fn continue_on_error_gives_each_update_its_own_result() {
    let mut e = env("p4rt_switch");
    let dmac = e.t("IngressImpl.dmac");
    let fwd = |e: &Env, p| EntryAction::Direct(e.call("IngressImpl.forward", vec![port_arg(p)]));
    let add = |e: &Env, m, p| Update::AddEntry {
        table: dmac,
        entry: NewEntry::new(exact(mac(m)), fwd(e, p)),
    };
    let batch = vec![
        add(&e, 1, 1),
        add(&e, 1, 2),
        Update::AddEntry {
            table: dmac,
            entry: NewEntry::new(exact(vec![1, 2]), fwd(&e, 1)),
        },
        Update::DeleteEntry {
            table: dmac,
            entry: EntryRef::Handle(EntryHandle(99)),
        },
        add(&e, 2, 2),
    ];
    let r = e.write(batch, Atomicity::ContinueOnError);
    assert_eq!(r.results.len(), 5);
    assert_eq!(r.results[0], Ok(Applied::Entry(EntryHandle(0))));
    let dup = r.results[1].clone().unwrap_err();
    assert_eq!(dup.kind, ErrorKind::AlreadyExists);
    assert_eq!(dup.bmv2, Some(Bmv2Code::Table(TC::DUPLICATE_ENTRY)));
    let bad = r.results[2].clone().unwrap_err();
    assert_eq!(bad.bmv2, Some(Bmv2Code::Table(TC::BAD_MATCH_KEY)));
    assert_eq!(bad.kind, ErrorKind::InvalidArgument);
    let gone = r.results[3].clone().unwrap_err();
    assert_eq!(gone.kind, ErrorKind::NotFound);
    assert_eq!(gone.bmv2, Some(Bmv2Code::Table(TC::INVALID_HANDLE)));
    assert!(gone.message.contains("IngressImpl.dmac"), "{gone}");
    assert_eq!(r.results[4], Ok(Applied::Entry(EntryHandle(1))));
    assert_eq!(r.first_error().map(|(i, _)| i), Some(1));
    assert_eq!(e.sw.entry_count(dmac).unwrap(), 2);
    assert_eq!(ports(&e.send(0, &l2_frame(2, 9))), vec![2]);
}

/// A snapshot of everything the rollback test touches.
fn snapshot(e: &mut Env) -> String {
    let dmac = e.t("IngressImpl.dmac");
    let acl = e.t("IngressImpl.acl");
    let sel = ProfileId(0);
    let pc = e.s.counter_by_name("IngressImpl.port_counter").unwrap();
    let reg = e.s.register_by_name("IngressImpl.port_packets").unwrap();
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        e.table_state(dmac),
        e.table_state(acl),
        e.sw.members(sel).unwrap(),
        e.sw.groups(sel).unwrap(),
        e.sw.counters(pc, 0, 8).unwrap(),
        e.sw.registers(reg, 0, 8).unwrap(),
        e.sw.pre().unwrap(),
        e.sw.clone_session(100),
        e.sw.value_set(ValueSetId(0)).unwrap(),
    )
}

#[test]
fn rollback_on_error_and_dataplane_atomic_batches_are_all_or_nothing() {
    for atomicity in [Atomicity::RollbackOnError, Atomicity::DataplaneAtomic] {
        let mut e = env("p4rt_switch");
        let dmac = e.t("IngressImpl.dmac");
        let acl = e.t("IngressImpl.acl");
        let sel = ProfileId(0);
        let pc = e.s.counter_by_name("IngressImpl.port_counter").unwrap();
        let reg = e.s.register_by_name("IngressImpl.port_packets").unwrap();
        // the state before: two entries (handles 0 and 1), a member, a counter and a
        // register cell, a clone session
        for (m, p) in [(1, 1), (2, 2)] {
            let a = EntryAction::Direct(e.call("IngressImpl.forward", vec![port_arg(p)]));
            e.apply(Update::AddEntry {
                table: dmac,
                entry: NewEntry::new(exact(mac(m)), a),
            })
            .unwrap();
        }
        let nhop = e.call("IngressImpl.set_nhop", vec![port_arg(1), mac(7)]);
        e.apply(Update::AddMember {
            profile: sel,
            id: None,
            action: nhop.clone(),
        })
        .unwrap();
        e.apply(Update::WriteCounter {
            counter: pc,
            index: 3,
            value: CounterValue {
                bytes: 100,
                packets: 1,
            },
        })
        .unwrap();
        e.apply(Update::WriteRegister {
            register: reg,
            start: 2,
            end: 3,
            value: vec![0, 0, 0, 42],
        })
        .unwrap();
        e.apply(Update::WriteCloneSession {
            mode: WriteMode::Insert,
            session: CloneSession::to_port(100, 3),
        })
        .unwrap();
        let before = snapshot(&mut e);

        // a batch touching every kind of state, failing at its last update
        let acl_key = MatchKey::with_priority(
            vec![
                FieldMatch::Ternary {
                    value: vec![10, 0, 0, 0],
                    mask: vec![255, 0, 0, 0],
                },
                FieldMatch::Range {
                    low: vec![0, 0],
                    high: vec![0xff, 0xff],
                },
                FieldMatch::Ternary {
                    value: vec![17],
                    mask: vec![0xff],
                },
            ],
            10,
        );
        let batch = vec![
            Update::DeleteEntry {
                table: dmac,
                entry: EntryRef::Handle(EntryHandle(0)),
            },
            Update::ModifyEntry {
                table: dmac,
                entry: EntryRef::Key(exact(mac(2))),
                action: EntryAction::Direct(e.call("IngressImpl.flood", vec![])),
            },
            Update::AddEntry {
                table: dmac,
                entry: NewEntry::new(
                    exact(mac(3)),
                    EntryAction::Direct(e.call("IngressImpl.to_cpu", vec![])),
                ),
            },
            Update::SetDefault {
                table: dmac,
                action: EntryAction::Direct(e.call("IngressImpl.to_cpu", vec![])),
            },
            Update::AddEntry {
                table: acl,
                entry: NewEntry::new(
                    acl_key,
                    EntryAction::Direct(e.call("IngressImpl.acl_drop", vec![])),
                ),
            },
            Update::AddMember {
                profile: sel,
                id: Some(MemberId(9)),
                action: nhop.clone(),
            },
            Update::AddGroup {
                profile: sel,
                id: Some(GroupId(4)),
                max_size: 0,
            },
            Update::SetGroupMembers {
                profile: sel,
                group: GroupId(4),
                members: vec![GroupMember::new(MemberId(0)), GroupMember::new(MemberId(9))],
            },
            Update::DeleteMember {
                profile: sel,
                member: MemberId(0),
            },
            Update::WriteCounter {
                counter: pc,
                index: 3,
                value: CounterValue::default(),
            },
            Update::ResetRegister { register: reg },
            Update::AddValueSetMember {
                value_set: ValueSetId(0),
                value: vec![0x12, 0x34],
            },
            Update::WriteMulticastGroup {
                mode: WriteMode::Insert,
                group: 1,
                replicas: vec![Replica {
                    port: 4,
                    instance: 0,
                }],
            },
            Update::DeleteCloneSession { id: 100 },
            // fails: the key exists
            Update::AddEntry {
                table: dmac,
                entry: NewEntry::new(
                    exact(mac(2)),
                    EntryAction::Direct(e.call("IngressImpl.flood", vec![])),
                ),
            },
        ];
        let n = batch.len();
        let r = e.write(batch, atomicity);
        assert_eq!(r.results.len(), n);
        // deleting member 0 failed too (group 4 uses it), but the batch stops at the
        // first failure: the rest are aborted
        let (i, first) = r
            .results
            .iter()
            .enumerate()
            .find_map(|(i, r)| {
                r.as_ref()
                    .err()
                    .filter(|e| e.kind != ErrorKind::Aborted)
                    .map(|e| (i, e))
            })
            .unwrap();
        assert_eq!(i, 8, "{atomicity:?}: {first}");
        assert_eq!(first.bmv2.map(|c| c.name()), Some("MBR_STILL_USED"));
        for (j, res) in r.results.iter().enumerate() {
            if j != i {
                assert_eq!(
                    res.as_ref().unwrap_err().kind,
                    ErrorKind::Aborted,
                    "{atomicity:?} update {j}"
                );
            }
        }
        assert_eq!(snapshot(&mut e), before, "{atomicity:?}");
        // the deleted entry is back with its handle; the next add gets the next one
        assert_eq!(
            e.sw.table_entry(dmac, &EntryRef::Key(exact(mac(1))))
                .unwrap()
                .handle,
            EntryHandle(0)
        );
        let next = e
            .apply(Update::AddEntry {
                table: dmac,
                entry: NewEntry::new(
                    exact(mac(3)),
                    EntryAction::Direct(e.call("IngressImpl.to_cpu", vec![])),
                ),
            })
            .unwrap();
        assert_eq!(next, Applied::Entry(EntryHandle(2)));
        // packets see the state before the batch
        assert_eq!(ports(&e.send(0, &l2_frame(1, 9))), vec![1], "{atomicity:?}");

        // the same batch without its failing updates applies whole
        let r = e.write(
            vec![
                Update::DeleteEntry {
                    table: dmac,
                    entry: EntryRef::Handle(EntryHandle(0)),
                },
                Update::AddMember {
                    profile: sel,
                    id: Some(MemberId(9)),
                    action: nhop.clone(),
                },
                Update::AddGroup {
                    profile: sel,
                    id: Some(GroupId(4)),
                    max_size: 0,
                },
                Update::SetGroupMembers {
                    profile: sel,
                    group: GroupId(4),
                    members: vec![GroupMember::new(MemberId(9))],
                },
            ],
            atomicity,
        );
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(e.sw.entry_count(dmac).unwrap(), 2);
        assert_eq!(e.sw.group(sel, GroupId(4)).unwrap().members.len(), 1);
    }
}

/// Packets never see part of a batch: a forwarding thread sends packets that an ACL
/// entry drops and a route entry sends to port 2, while the control plane adds both
/// entries in one batch and deletes both in the next, many times. A packet on port 2
/// would have seen the route without the ACL entry.
#[test]
fn packets_never_see_part_of_a_dataplane_atomic_batch() {
    let json = corpus_json("p4rt_switch");
    let mut sw = Switch::new(&json, SwitchConfig::default()).unwrap();
    let s = Runtime::schema(&sw).unwrap();
    let route = s.table_by_name("IngressImpl.route").unwrap();
    let acl = s.table_by_name("IngressImpl.acl").unwrap();
    let nhop = ActionCall::new(
        s.action_by_name("IngressImpl.set_nhop").unwrap(),
        vec![port_arg(2), mac(7)],
    );
    let drop = ActionCall::new(s.action_by_name("IngressImpl.acl_drop").unwrap(), vec![]);
    Runtime::apply(
        &mut sw,
        Update::AddMember {
            profile: ProfileId(0),
            id: Some(MemberId(1)),
            action: nhop,
        },
    )
    .unwrap();
    // misses flood to group 1: port 3
    Runtime::apply(
        &mut sw,
        Update::WriteMulticastGroup {
            mode: WriteMode::Insert,
            group: 1,
            replicas: vec![Replica {
                port: 3,
                instance: 0,
            }],
        },
    )
    .unwrap();
    let route_key = MatchKey::new(vec![FieldMatch::Lpm {
        value: vec![10, 9, 0, 0],
        prefix_len: 16,
    }]);
    let acl_key = MatchKey::with_priority(
        vec![
            FieldMatch::Ternary {
                value: vec![10, 9, 0, 0],
                mask: vec![255, 255, 0, 0],
            },
            FieldMatch::Range {
                low: vec![0, 0],
                high: vec![0xff, 0xff],
            },
            FieldMatch::Ternary {
                value: vec![0],
                mask: vec![0],
            },
        ],
        1,
    );
    let mut worker = sw.new_worker();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let fwd = std::thread::spawn(move || {
        let frame = ipv4_frame(0x22, 0x11, [10, 9, 1, 1], 6);
        let mut seen: BTreeMap<u32, u64> = BTreeMap::new();
        let mut sent = 0u64;
        while !st.load(Ordering::Acquire) || sent < 1000 {
            worker.inject(0, &frame);
            let mut out = 0;
            worker.run_until_idle(&mut |p, _| {
                *seen.entry(p).or_default() += 1;
                out += 1;
            });
            if out == 0 {
                *seen.entry(u32::MAX).or_default() += 1;
            }
            sent += 1;
        }
        seen
    });
    for _ in 0..300 {
        let r = sw.write(
            vec![
                Update::AddEntry {
                    table: acl,
                    entry: NewEntry::new(acl_key.clone(), EntryAction::Direct(drop.clone())),
                },
                Update::AddEntry {
                    table: route,
                    entry: NewEntry::new(route_key.clone(), EntryAction::Member(MemberId(1))),
                },
            ],
            Atomicity::DataplaneAtomic,
        );
        assert!(r.is_ok(), "{r:?}");
        let r = sw.write(
            vec![
                Update::DeleteEntry {
                    table: route,
                    entry: EntryRef::Key(route_key.clone()),
                },
                Update::DeleteEntry {
                    table: acl,
                    entry: EntryRef::Key(acl_key.clone()),
                },
            ],
            Atomicity::DataplaneAtomic,
        );
        assert!(r.is_ok(), "{r:?}");
        std::thread::yield_now();
    }
    stop.store(true, Ordering::Release);
    let seen = fwd.join().unwrap();
    assert_eq!(
        seen.get(&2),
        None,
        "a packet saw the route without the ACL: {seen:?}"
    );
    assert!(seen.get(&3).copied().unwrap_or(0) > 0, "{seen:?}");
}

// ---------------------------------------------------------------- reconcile

#[test]
fn reconcile_keeps_the_state_that_fits_the_new_program() {
    let json = corpus_json("p4rt_switch");
    let mut e = env_json(&json);
    let dmac = e.t("IngressImpl.dmac");
    let acl = e.t("IngressImpl.acl");
    let route = e.t("IngressImpl.route");
    let sel = ProfileId(0);
    let reg = e.s.register_by_name("IngressImpl.port_packets").unwrap();
    let pc = e.s.counter_by_name("IngressImpl.port_counter").unwrap();
    for m in 1..=3 {
        let a = EntryAction::Direct(e.call("IngressImpl.forward", vec![port_arg(u16::from(m))]));
        e.apply(Update::AddEntry {
            table: dmac,
            entry: NewEntry::new(exact(mac(m)), a),
        })
        .unwrap();
    }
    e.apply(Update::DeleteEntry {
        table: dmac,
        entry: EntryRef::Handle(EntryHandle(1)),
    })
    .unwrap();
    e.apply(Update::SetDefault {
        table: dmac,
        action: EntryAction::Direct(e.call("IngressImpl.to_cpu", vec![])),
    })
    .unwrap();
    let acl_key = MatchKey::with_priority(
        vec![
            FieldMatch::Ternary {
                value: vec![10, 0, 0, 0],
                mask: vec![255, 0, 0, 0],
            },
            FieldMatch::Range {
                low: vec![0, 1],
                high: vec![0, 2],
            },
            FieldMatch::Ternary {
                value: vec![0],
                mask: vec![0],
            },
        ],
        5,
    );
    e.apply(Update::AddEntry {
        table: acl,
        entry: NewEntry::new(
            acl_key,
            EntryAction::Direct(e.call("IngressImpl.acl_drop", vec![])),
        ),
    })
    .unwrap();
    let nhop = e.call("IngressImpl.set_nhop", vec![port_arg(1), mac(7)]);
    e.apply(Update::AddMember {
        profile: sel,
        id: Some(MemberId(5)),
        action: nhop,
    })
    .unwrap();
    e.apply(Update::AddGroup {
        profile: sel,
        id: Some(GroupId(2)),
        max_size: 8,
    })
    .unwrap();
    e.apply(Update::SetGroupMembers {
        profile: sel,
        group: GroupId(2),
        members: vec![GroupMember {
            member: MemberId(5),
            weight: 3,
            watch_port: Some(1),
        }],
    })
    .unwrap();
    e.apply(Update::AddEntry {
        table: route,
        entry: NewEntry::new(
            MatchKey::new(vec![FieldMatch::Lpm {
                value: vec![10, 1, 0, 0],
                prefix_len: 16,
            }]),
            EntryAction::Group(GroupId(2)),
        ),
    })
    .unwrap();
    for (i, v) in [(1u32, 11u8), (7, 77), (300, 3)] {
        e.apply(Update::WriteRegister {
            register: reg,
            start: i,
            end: i + 1,
            value: vec![v],
        })
        .unwrap();
    }
    e.apply(Update::WriteCounter {
        counter: pc,
        index: 2,
        value: CounterValue {
            bytes: 64,
            packets: 1,
        },
    })
    .unwrap();
    e.apply(Update::WriteMulticastGroup {
        mode: WriteMode::Insert,
        group: 1,
        replicas: vec![Replica {
            port: 3,
            instance: 0,
        }],
    })
    .unwrap();
    e.apply(Update::WriteCloneSession {
        mode: WriteMode::Insert,
        session: CloneSession::to_port(100, 4),
    })
    .unwrap();
    e.apply(Update::AddValueSetMember {
        value_set: ValueSetId(0),
        value: vec![0x12, 0x34],
    })
    .unwrap();
    e.apply(Update::WriteDirectCounter {
        table: acl,
        entry: EntryRef::Handle(EntryHandle(0)),
        value: CounterValue {
            bytes: 5,
            packets: 1,
        },
    })
    .unwrap();
    let smac = e.t("IngressImpl.smac");
    let noaction =
        e.s.table(smac)
            .unwrap()
            .action_named(&e.s, "NoAction")
            .unwrap();
    e.apply(Update::AddEntry {
        table: smac,
        entry: NewEntry::new(
            exact(mac(1)),
            EntryAction::Direct(ActionCall::new(noaction, vec![])),
        ),
    })
    .unwrap();
    let dmac_before = e.table_state(dmac);
    let route_before = e.table_state(route);
    let acl_before = e.table_state(acl);
    let members_before = e.sw.members(sel).unwrap();
    let groups_before = e.sw.groups(sel).unwrap();
    let pre_before = e.sw.pre().unwrap();

    // The new program: smac renamed (its entries do not fit), the register
    // shorter (cells up to the new size kept).
    let renamed = json.replace("\"IngressImpl.smac\"", "\"IngressImpl.smac_v2\"");
    let mut j: serde_json::Value = serde_json::from_str(&renamed).unwrap();
    j["register_arrays"][0]["size"] = 8.into();
    let new_json = j.to_string();
    // A program that does not load changes nothing.
    let err =
        e.sw.set_pipeline(PipelineAction::Reconcile(PipelineConfig::new("{")))
            .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err}");
    assert_eq!(e.table_state(dmac), dmac_before);
    e.sw.set_pipeline(PipelineAction::Reconcile(PipelineConfig::new(new_json)))
        .unwrap();
    let s = Runtime::schema(&e.sw).unwrap();
    e.s = s.clone();
    // the same entries (handles renumbered: P4Runtime addresses entries by key)
    assert_eq!(no_handles(e.table_state(dmac)), no_handles(dmac_before));
    assert_eq!(no_handles(e.table_state(route)), no_handles(route_before));
    assert_eq!(no_handles(e.table_state(acl)), no_handles(acl_before));
    // with their direct counters
    let acl_entry = e.table_state(acl).0[0].handle;
    assert_eq!(
        e.sw.direct_counter(acl, &EntryRef::Handle(acl_entry))
            .unwrap()
            .bytes,
        5
    );
    assert_eq!(e.sw.members(sel).unwrap(), members_before);
    assert_eq!(e.sw.groups(sel).unwrap(), groups_before);
    let smac2 = e.t("IngressImpl.smac_v2");
    assert_eq!(e.sw.entry_count(smac2).unwrap(), 0);
    let reg = s.register_by_name("IngressImpl.port_packets").unwrap();
    let cells = e.sw.registers(reg, 0, 8).unwrap();
    assert_eq!(cells[1], vec![0, 0, 0, 11]);
    assert_eq!(cells[7], vec![0, 0, 0, 77]);
    assert!(e.sw.registers(reg, 300, 301).is_err());
    assert_eq!(
        e.sw.counters(pc, 2, 3).unwrap(),
        vec![CounterValue {
            bytes: 64,
            packets: 1
        }]
    );
    assert_eq!(e.sw.pre().unwrap(), pre_before);
    assert_eq!(
        e.sw.clone_session(100).unwrap(),
        CloneSession::to_port(100, 4)
    );
    assert_eq!(
        e.sw.value_set(ValueSetId(0)).unwrap(),
        vec![vec![0x12, 0x34]]
    );
    // and packets run the new program with the kept entries
    assert_eq!(ports(&e.send(0, &l2_frame(3, 9))), vec![3]);
    assert_eq!(
        ports(&e.send(0, &ipv4_frame(0x22, 0x11, [10, 1, 2, 3], 6))),
        vec![1]
    );

    // Replace: fresh state, but multicast groups and clone sessions stay.
    e.sw.set_pipeline(PipelineAction::Replace(PipelineConfig::new(json)))
        .unwrap();
    assert_eq!(e.sw.entry_count(dmac).unwrap(), 0);
    assert!(e.sw.members(sel).unwrap().is_empty());
    assert_eq!(e.sw.pre().unwrap(), pre_before);
    assert!(e.sw.clone_session(100).is_ok());
}

// ---------------------------------------------------------------- no program

#[test]
fn a_switch_without_program_drops_and_answers_no_pipeline() {
    let clock = Arc::new(AtomicU64::new(0));
    let mut sw = Switch::without_program(config(&clock)).unwrap();
    assert!(!sw.has_program());
    assert!(Runtime::schema(&sw).is_none());
    let no = |r: Result<()>| {
        let e = r.unwrap_err();
        assert_eq!(e.kind, ErrorKind::NoPipeline, "{e}");
        assert_eq!(e.message, NO_PIPELINE_MESSAGE);
    };
    no(sw.pipeline().map(drop));
    no(sw.entry_count(TableId(0)).map(drop));
    no(sw
        .table_entries(TableId(0), EntryCursor::START, 10)
        .map(drop));
    no(sw.registers(RegisterId(0), 0, 1).map(drop));
    no(sw.members(ProfileId(0)).map(drop));
    no(sw.digest_config(DigestId(0)).map(drop));
    no(sw.poll_idle_timeouts().map(drop));
    no(Runtime::apply(
        &mut sw,
        Update::ResetCounter {
            counter: CounterId(0),
        },
    )
    .map(drop));
    no(Runtime::apply(&mut sw, Update::McGroupCreate { group: 1 }).map(drop));
    let r = sw.write(
        vec![
            Update::ResetCounter {
                counter: CounterId(0),
            };
            3
        ],
        Atomicity::ContinueOnError,
    );
    assert_eq!(r.results.len(), 3);
    for res in r.results {
        no(res.map(drop));
    }
    // nothing saved to commit
    let err = sw.set_pipeline(PipelineAction::Commit).unwrap_err();
    assert_eq!(err.kind, ErrorKind::FailedPrecondition, "{err}");
    // the switch itself still answers
    assert!(sw.info().is_ok());
    assert!(sw.clock().is_ok());
    // every packet is dropped, and counted
    for _ in 0..5 {
        let mut out = 0;
        sw.inject(2, &l2_frame(1, 2));
        sw.run_until_idle(&mut |_, _| out += 1);
        assert_eq!(out, 0);
    }
    let c = sw.port_counters(2).unwrap();
    assert_eq!((c.rx_packets, c.tx_packets), (5, 0));
    assert_eq!(c.drops, 5);
    // what the port's devices count, published by the binary that runs the ports
    assert_eq!((c.rx_missed, c.rx_errors, c.tx_errors), (0, 0, 0));
    sw.rt.device_counters.insert(
        2,
        p4jet_switch::runtime::DeviceCounters {
            rx_missed: 7,
            rx_errors: 1,
            tx_errors: 2,
        },
    );
    let c = sw.port_counters(2).unwrap();
    assert_eq!((c.rx_missed, c.rx_errors, c.tx_errors), (7, 1, 2));
    assert_eq!((c.rx_packets, c.drops), (5, 5));

    // a program set: it runs
    let json = corpus_json("basic_l2");
    sw.set_pipeline(PipelineAction::Replace(PipelineConfig::new(json)))
        .unwrap();
    assert!(sw.has_program());
    let s = Runtime::schema(&sw).unwrap();
    let dmac = s.table_by_name("IngressImpl.dmac").unwrap();
    let fwd = s.action_by_name("IngressImpl.forward").unwrap();
    Runtime::apply(
        &mut sw,
        Update::add_direct(dmac, exact(mac(1)), ActionCall::new(fwd, vec![port_arg(3)])),
    )
    .unwrap();
    let mut out = vec![];
    sw.inject(2, &l2_frame(1, 2));
    sw.run_until_idle(&mut |p, _| out.push(p));
    assert_eq!(out, vec![3]);
}

// ---------------------------------------------------------------- registers

#[test]
fn registers_of_any_width() {
    // p4rt_switch with two more registers: 200 bits and 1 bit wide
    let mut j: serde_json::Value = serde_json::from_str(&corpus_json("p4rt_switch")).unwrap();
    let regs = j["register_arrays"].as_array_mut().unwrap();
    for (id, name, width) in [(1, "wide", 200), (2, "bit", 1)] {
        regs.push(serde_json::json!({"name": name, "id": id, "size": 4, "bitwidth": width}));
    }
    let mut e = env_json(&j.to_string());
    let wide = e.s.register_by_name("wide").unwrap();
    let bit = e.s.register_by_name("bit").unwrap();
    assert_eq!(e.s.register(wide).unwrap().width, 200);
    // 25 bytes: kept whole
    let v: Bytes = (1..=25).collect();
    e.apply(Update::WriteRegister {
        register: wide,
        start: 1,
        end: 2,
        value: v.clone(),
    })
    .unwrap();
    let cells = e.sw.registers(wide, 0, 4).unwrap();
    assert_eq!(cells[1], v);
    assert_eq!(cells[0], vec![0; 25]);
    // longer: truncated to the low 200 bits; shorter: zero-extended
    let mut long = vec![0xff; 3];
    long.extend(&v);
    e.apply(Update::WriteRegister {
        register: wide,
        start: 2,
        end: 4,
        value: long,
    })
    .unwrap();
    e.apply(Update::WriteRegister {
        register: wide,
        start: 0,
        end: 1,
        value: vec![0xab],
    })
    .unwrap();
    let cells = e.sw.registers(wide, 0, 4).unwrap();
    assert_eq!(cells[2], v);
    assert_eq!(cells[3], v);
    let mut small = vec![0; 24];
    small.push(0xab);
    assert_eq!(cells[0], small);
    // 1 bit
    e.apply(Update::WriteRegister {
        register: bit,
        start: 0,
        end: 4,
        value: vec![0xff],
    })
    .unwrap();
    assert_eq!(e.sw.registers(bit, 0, 4).unwrap(), vec![vec![1]; 4]);
    // out of range
    let err = e
        .apply(Update::WriteRegister {
            register: wide,
            start: 3,
            end: 5,
            value: vec![1],
        })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::OutOfRange, "{err}");
    assert!(e.sw.registers(wide, 4, 5).is_err());
    e.apply(Update::ResetRegister { register: wide }).unwrap();
    assert_eq!(e.sw.registers(wide, 0, 4).unwrap(), vec![vec![0; 25]; 4]);
}

// ---------------------------------------------------------------- entries by key

#[test]
fn entries_are_found_modified_and_deleted_by_key() {
    let mut e = env("p4rt_switch");
    let acl = e.t("IngressImpl.acl");
    let key = |prio: i32, lo: u8| {
        MatchKey::with_priority(
            vec![
                FieldMatch::Ternary {
                    value: vec![10, 0, 0, 0],
                    mask: vec![255, 0, 0, 0],
                },
                FieldMatch::Range {
                    low: vec![0, lo],
                    high: vec![0, 100],
                },
                FieldMatch::Ternary {
                    value: vec![6],
                    mask: vec![0xff],
                },
            ],
            prio,
        )
    };
    let drop = EntryAction::Direct(e.call("IngressImpl.acl_drop", vec![]));
    let permit = EntryAction::Direct(e.call("IngressImpl.acl_permit", vec![]));
    for (p, lo) in [(1, 1), (2, 1), (1, 2)] {
        e.apply(Update::AddEntry {
            table: acl,
            entry: NewEntry::new(key(p, lo), drop.clone()),
        })
        .unwrap();
    }
    // same fields, other priority: another entry
    let found = e.sw.table_entry(acl, &EntryRef::Key(key(2, 1))).unwrap();
    assert_eq!(found.handle, EntryHandle(1));
    assert_eq!(found.key, key(2, 1));
    let missing =
        e.sw.table_entry(acl, &EntryRef::Key(key(3, 1)))
            .unwrap_err();
    assert_eq!(missing.kind, ErrorKind::NotFound);
    e.apply(Update::ModifyEntry {
        table: acl,
        entry: EntryRef::Key(key(1, 2)),
        action: permit.clone(),
    })
    .unwrap();
    assert_eq!(
        e.sw.table_entry(acl, &EntryRef::Handle(EntryHandle(2)))
            .unwrap()
            .action,
        permit
    );
    e.apply(Update::WriteDirectCounter {
        table: acl,
        entry: EntryRef::Key(key(1, 1)),
        value: CounterValue {
            bytes: 5,
            packets: 1,
        },
    })
    .unwrap();
    assert_eq!(
        e.sw.direct_counter(acl, &EntryRef::Handle(EntryHandle(0)))
            .unwrap()
            .bytes,
        5
    );
    e.apply(Update::DeleteEntry {
        table: acl,
        entry: EntryRef::Key(key(1, 1)),
    })
    .unwrap();
    assert_eq!(e.sw.entry_count(acl).unwrap(), 2);
    let err = e
        .apply(Update::DeleteEntry {
            table: acl,
            entry: EntryRef::Key(key(1, 1)),
        })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    // a key of the wrong shape is an invalid argument
    let err =
        e.sw.table_entry(acl, &EntryRef::Key(exact(vec![1])))
            .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err}");

    // exact and lpm
    let dmac = e.t("IngressImpl.dmac");
    let a = EntryAction::Direct(e.call("IngressImpl.flood", vec![]));
    e.apply(Update::AddEntry {
        table: dmac,
        entry: NewEntry::new(exact(mac(5)), a.clone()),
    })
    .unwrap();
    assert_eq!(
        e.sw.table_entry(dmac, &EntryRef::Key(exact(mac(5))))
            .unwrap()
            .action,
        a
    );
    let route = e.t("IngressImpl.route");
    e.apply(Update::AddMember {
        profile: ProfileId(0),
        id: None,
        action: e.call("IngressImpl.set_nhop", vec![port_arg(1), mac(1)]),
    })
    .unwrap();
    let lpm = |len| {
        MatchKey::new(vec![FieldMatch::Lpm {
            value: vec![10, 1, 0, 0],
            prefix_len: len,
        }])
    };
    for len in [16, 24] {
        e.apply(Update::AddEntry {
            table: route,
            entry: NewEntry::new(lpm(len), EntryAction::Member(MemberId(0))),
        })
        .unwrap();
    }
    assert_eq!(
        e.sw.table_entry(route, &EntryRef::Key(lpm(24)))
            .unwrap()
            .handle,
        EntryHandle(1)
    );
    assert!(e.sw.table_entry(route, &EntryRef::Key(lpm(8))).is_err());
}

// ---------------------------------------------------------------- paging

#[test]
fn a_large_table_is_read_page_by_page() {
    let mut e = env_json(&bench_json("l2_large"));
    let dmac = e.t("IngressImpl.dmac");
    let fwd = e.a("IngressImpl.forward");
    let n = 200_000u32;
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let batch = chunk
            .iter()
            .map(|&i| {
                let mut m = vec![2, 0];
                m.extend(i.to_be_bytes());
                Update::add_direct(dmac, exact(m), ActionCall::new(fwd, vec![port_arg(1)]))
            })
            .collect();
        assert!(e.write(batch, Atomicity::ContinueOnError).is_ok());
    }
    assert_eq!(e.sw.entry_count(dmac).unwrap(), n as usize);
    // pages of at most `limit`, every entry once, in handle order; entries deleted
    // behind the cursor do not disturb it
    let mut from = EntryCursor::START;
    let mut seen = 0u32;
    let mut last = None;
    let mut pages = 0;
    loop {
        let page = e.sw.table_entries(dmac, from, 4096).unwrap();
        assert!(page.entries.len() <= 4096);
        for en in &page.entries {
            assert!(last < Some(en.handle), "{last:?} then {:?}", en.handle);
            last = Some(en.handle);
        }
        seen += page.entries.len() as u32;
        pages += 1;
        if pages == 3 {
            // delete what was read so far
            let dels = (0..3 * 4096)
                .map(|h| Update::DeleteEntry {
                    table: dmac,
                    entry: EntryRef::Handle(EntryHandle(h)),
                })
                .collect();
            assert!(e.write(dels, Atomicity::ContinueOnError).is_ok());
        }
        match page.next {
            Some(c) => from = c,
            None => break,
        }
    }
    assert_eq!(seen, n);
    assert_eq!(pages, n.div_ceil(4096));
    assert_eq!(e.sw.entry_count(dmac).unwrap(), (n - 3 * 4096) as usize);
}

// ---------------------------------------------------------------- idle timeouts

#[test]
fn idle_timeouts_are_reported_once_per_expiry() {
    let mut e = env("p4rt_switch");
    let smac = e.t("IngressImpl.smac");
    let noaction =
        e.s.table(smac)
            .unwrap()
            .action_named(&e.s, "NoAction")
            .unwrap();
    let add = |e: &mut Env, m: u8, timeout: Option<u64>| {
        let mut n = NewEntry::new(
            exact(mac(m)),
            EntryAction::Direct(ActionCall::new(noaction, vec![])),
        );
        n.timeout_ms = timeout;
        e.apply(Update::AddEntry {
            table: smac,
            entry: n,
        })
        .unwrap()
    };
    add(&mut e, 1, Some(1000));
    add(&mut e, 2, Some(1000));
    add(&mut e, 3, None);
    e.set_ms(500);
    e.send(4, &l2_frame(9, 1)); // source 1 seen: its idle time restarts
    e.set_ms(1200);
    let r = e.sw.poll_idle_timeouts().unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].table, smac);
    let keys: Vec<_> = r[0].entries.iter().map(|x| x.key.clone()).collect();
    assert_eq!(keys, vec![exact(mac(2))]);
    assert_eq!(
        r[0].entries[0].ttl,
        Some(EntryTtl {
            timeout_ms: 1000,
            idle_ms: 1200
        })
    );
    // reported once; entry 1 expires later
    assert!(e.sw.poll_idle_timeouts().unwrap().is_empty());
    e.set_ms(1600);
    let r = e.sw.poll_idle_timeouts().unwrap();
    assert_eq!(r[0].entries.len(), 1);
    assert_eq!(r[0].entries[0].key, exact(mac(1)));
    // hit again, then idle again: reported again
    e.send(4, &l2_frame(9, 2));
    assert!(e.sw.poll_idle_timeouts().unwrap().is_empty());
    e.set_ms(2700);
    let r = e.sw.poll_idle_timeouts().unwrap();
    let keys: Vec<_> = r[0].entries.iter().map(|x| x.key.clone()).collect();
    assert_eq!(keys, vec![exact(mac(2))]);
    // a new timeout restarts the idle time
    e.apply(Update::SetEntryTimeout {
        table: smac,
        entry: EntryRef::Key(exact(mac(3))),
        timeout_ms: 100,
    })
    .unwrap();
    assert!(e.sw.poll_idle_timeouts().unwrap().is_empty());
    e.set_ms(2800);
    assert_eq!(e.sw.poll_idle_timeouts().unwrap()[0].entries.len(), 1);
    // tables without support_timeout refuse timeouts
    let dmac = e.t("IngressImpl.dmac");
    let a = EntryAction::Direct(e.call("IngressImpl.flood", vec![]));
    let mut n = NewEntry::new(exact(mac(1)), a);
    n.timeout_ms = Some(10);
    let err = e
        .apply(Update::AddEntry {
            table: dmac,
            entry: n,
        })
        .unwrap_err();
    assert_eq!(
        err.bmv2,
        Some(Bmv2Code::Table(TC::AGEING_DISABLED)),
        "{err}"
    );
}

// ------------------------------------------- multicast groups and clone sessions

#[test]
fn p4runtime_multicast_groups() {
    let mut e = env("p4rt_switch");
    let r = |port, instance| Replica { port, instance };
    e.apply(Update::WriteMulticastGroup {
        mode: WriteMode::Insert,
        group: 1,
        replicas: vec![r(1, 0), r(2, 0), r(2, 1)],
    })
    .unwrap();
    assert_eq!(
        e.sw.pre().unwrap().replicas(1),
        Some(vec![r(1, 0), r(2, 0), r(2, 1)])
    );
    let err = e
        .apply(Update::WriteMulticastGroup {
            mode: WriteMode::Insert,
            group: 1,
            replicas: vec![],
        })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::AlreadyExists);
    let err = e
        .apply(Update::WriteMulticastGroup {
            mode: WriteMode::Modify,
            group: 2,
            replicas: vec![],
        })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    // flooding (dmac misses) copies to every replica but the ingress port
    let mut out = ports(&e.send(5, &l2_frame(9, 1)));
    out.sort_unstable();
    assert_eq!(out, vec![1, 2, 2]);
    e.apply(Update::WriteMulticastGroup {
        mode: WriteMode::Modify,
        group: 1,
        replicas: vec![r(3, 7)],
    })
    .unwrap();
    assert_eq!(ports(&e.send(5, &l2_frame(9, 1))), vec![3]);
    assert_eq!(e.sw.pre().unwrap().nodes.len(), 1);
    e.apply(Update::DeleteMulticastGroup { group: 1 }).unwrap();
    assert_eq!(e.sw.pre().unwrap(), PreState::default());
    assert!(e.send(5, &l2_frame(9, 1)).is_empty());
    let err = e
        .apply(Update::DeleteMulticastGroup { group: 1 })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
}

#[test]
fn p4runtime_clone_sessions_with_replicas_and_truncation() {
    let mut e = env("p4rt_switch");
    let acl = e.t("IngressImpl.acl");
    let dmac = e.t("IngressImpl.dmac");
    let fwd = EntryAction::Direct(e.call("IngressImpl.forward", vec![port_arg(1)]));
    e.apply(Update::AddEntry {
        table: dmac,
        entry: NewEntry::new(exact(mac(0x22)), fwd),
    })
    .unwrap();
    let any = MatchKey::with_priority(
        vec![
            FieldMatch::Ternary {
                value: vec![0; 4],
                mask: vec![0; 4],
            },
            FieldMatch::Range {
                low: vec![0, 0],
                high: vec![0xff, 0xff],
            },
            FieldMatch::Ternary {
                value: vec![0],
                mask: vec![0],
            },
        ],
        1,
    );
    e.apply(Update::AddEntry {
        table: acl,
        entry: NewEntry::new(
            any,
            EntryAction::Direct(e.call("IngressImpl.acl_clone", vec![])),
        ),
    })
    .unwrap();
    let session = CloneSession {
        id: 100,
        target: CloneTarget::Replicas(vec![
            Replica {
                port: 3,
                instance: 0,
            },
            Replica {
                port: 4,
                instance: 1,
            },
        ]),
        class_of_service: 2,
        packet_length_bytes: 20,
    };
    e.apply(Update::WriteCloneSession {
        mode: WriteMode::Insert,
        session: session.clone(),
    })
    .unwrap();
    assert_eq!(e.sw.clone_session(100).unwrap(), session);
    assert_eq!(e.sw.clone_sessions().unwrap(), vec![session.clone()]);
    let err = e
        .apply(Update::WriteCloneSession {
            mode: WriteMode::Insert,
            session: session.clone(),
        })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::AlreadyExists);
    let frame = ipv4_frame(0x22, 0x11, [10, 9, 1, 1], 6);
    let mut out = e.send(0, &frame);
    out.sort();
    // the original to port 1, whole; a copy to each replica, cut to 20 bytes
    assert_eq!(ports(&out), vec![1, 3, 4]);
    assert_eq!(out[0].1.len(), frame.len());
    assert_eq!(out[1].1, frame[..20].to_vec());
    assert_eq!(out[2].1, frame[..20].to_vec());
    // modified: one replica, whole packets
    let whole = CloneSession {
        target: CloneTarget::Replicas(vec![Replica {
            port: 5,
            instance: 0,
        }]),
        packet_length_bytes: 0,
        ..session
    };
    e.apply(Update::WriteCloneSession {
        mode: WriteMode::Modify,
        session: whole,
    })
    .unwrap();
    let mut out = e.send(0, &frame);
    out.sort();
    assert_eq!(ports(&out), vec![1, 5]);
    assert_eq!(out[1].1, frame);
    e.apply(Update::DeleteCloneSession { id: 100 }).unwrap();
    assert_eq!(ports(&e.send(0, &frame)), vec![1]);
    let err = e
        .apply(Update::WriteCloneSession {
            mode: WriteMode::Modify,
            session: CloneSession::to_port(100, 1),
        })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
}

// ---------------------------------------------------- selectors: one-shot, weights

#[test]
fn one_shot_entries_and_weighted_groups() {
    let mut e = env("p4rt_switch");
    let route = e.t("IngressImpl.route");
    let sel = ProfileId(0);
    let nhop = |e: &Env, p: u16| e.call("IngressImpl.set_nhop", vec![port_arg(p), mac(7)]);
    let key = |b: u8| {
        MatchKey::new(vec![FieldMatch::Lpm {
            value: vec![10, b, 0, 0],
            prefix_len: 16,
        }])
    };
    // one-shot: a group made for the entry, read back as the entry's action
    let oneshot = EntryAction::OneShot(vec![
        WeightedAction {
            action: nhop(&e, 1),
            weight: 1,
            watch_port: None,
        },
        WeightedAction {
            action: nhop(&e, 2),
            weight: 3,
            watch_port: Some(2),
        },
    ]);
    e.apply(Update::AddEntry {
        table: route,
        entry: NewEntry::new(key(1), oneshot.clone()),
    })
    .unwrap();
    assert_eq!(
        e.sw.table_entry(route, &EntryRef::Key(key(1)))
            .unwrap()
            .action,
        oneshot
    );
    // flows spread over both next hops
    let mut seen = BTreeMap::new();
    for i in 0..64u8 {
        let mut f = ipv4_frame(0x22, 0x11, [10, 1, 0, 1], 17);
        f[26] = i; // source address: another flow
        let ck = {
            let ip = &mut f[14..34];
            ip[10] = 0;
            ip[11] = 0;
            let mut sum: u32 = ip
                .chunks(2)
                .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
                .sum();
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            !(sum as u16)
        };
        f[24..26].copy_from_slice(&ck.to_be_bytes());
        for p in ports(&e.send(0, &f)) {
            *seen.entry(p).or_insert(0) += 1;
        }
    }
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        vec![1, 2],
        "{seen:?}"
    );
    assert!(seen[&2] > seen[&1], "weights 1:3 → {seen:?}");

    // a P4Runtime-style group: chosen ids, weights and watch ports, read back as set
    for (id, p) in [(10, 1), (11, 2)] {
        e.apply(Update::AddMember {
            profile: sel,
            id: Some(MemberId(id)),
            action: nhop(&e, p),
        })
        .unwrap();
    }
    let err = e
        .apply(Update::AddMember {
            profile: sel,
            id: Some(MemberId(10)),
            action: nhop(&e, 1),
        })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::AlreadyExists);
    e.apply(Update::AddGroup {
        profile: sel,
        id: Some(GroupId(7)),
        max_size: 4,
    })
    .unwrap();
    let members = vec![
        GroupMember {
            member: MemberId(11),
            weight: 2,
            watch_port: Some(2),
        },
        GroupMember {
            member: MemberId(10),
            weight: 2,
            watch_port: None,
        },
    ];
    e.apply(Update::SetGroupMembers {
        profile: sel,
        group: GroupId(7),
        members: members.clone(),
    })
    .unwrap();
    let g = e.sw.group(sel, GroupId(7)).unwrap();
    assert_eq!(g.max_size, 4);
    let mut sorted = members.clone();
    sorted.sort_by_key(|m| m.member);
    assert_eq!(g.members, sorted);
    // over the group's size, weights counted
    let mut heavy = members;
    heavy[0].weight = 3;
    let err = e
        .apply(Update::SetGroupMembers {
            profile: sel,
            group: GroupId(7),
            members: heavy,
        })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::ResourceExhausted, "{err}");
    e.apply(Update::AddEntry {
        table: route,
        entry: NewEntry::new(key(2), EntryAction::Group(GroupId(7))),
    })
    .unwrap();
    let out = ports(&e.send(0, &ipv4_frame(0x22, 0x11, [10, 2, 0, 1], 6)));
    assert!(out == vec![1] || out == vec![2], "{out:?}");
}

// ---------------------------------------------------------------- digests

#[test]
fn digest_lists_acknowledgements_and_ack_timeouts() {
    let mut e = env("p4rt_switch");
    let d = e.s.digest_by_name("learn_t").unwrap();
    let ms = 1_000_000;
    e.apply(Update::ConfigureDigest {
        digest: d,
        config: DigestConfig {
            max_timeout_ns: 0,
            max_list_size: 1,
            ack_timeout_ns: 500 * ms,
        },
    })
    .unwrap();
    assert_eq!(e.sw.digest_config(d).unwrap().ack_timeout_ns, 500 * ms);
    // smac misses learn: one list per sample (max list size 1)
    e.send(4, &l2_frame(9, 1));
    e.send(4, &l2_frame(9, 2));
    let lists = e.sw.poll_digests().unwrap();
    assert_eq!(lists.len(), 2, "{lists:?}");
    assert_eq!(lists[0].digest, d);
    assert_eq!(lists[0].samples.len(), 1);
    // not acknowledged: the same sample is filtered...
    e.send(4, &l2_frame(9, 1));
    assert!(e.sw.poll_digests().unwrap().is_empty());
    // ...acknowledged: learnt again at once
    e.apply(Update::AckDigest {
        digest: d,
        list_id: lists[1].list_id,
        samples: None,
    })
    .unwrap();
    e.send(4, &l2_frame(9, 2));
    assert_eq!(e.sw.poll_digests().unwrap().len(), 1);
    // ...or learnt again once the ack timeout passed (the switch looks at ack
    // timeouts when it polls for lists, a few times a second in `p4jet run`)
    e.set_ms(400);
    assert!(e.sw.poll_digests().unwrap().is_empty());
    e.send(4, &l2_frame(9, 1));
    assert!(e.sw.poll_digests().unwrap().is_empty());
    e.set_ms(600);
    assert!(e.sw.poll_digests().unwrap().is_empty());
    e.send(4, &l2_frame(9, 1));
    let again = e.sw.poll_digests().unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].samples, lists[0].samples);
}
