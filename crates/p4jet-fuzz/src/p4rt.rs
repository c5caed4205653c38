//! P4Runtime messages against p4jet's P4Runtime device: typed, mostly plausible
//! requests generated from a corpus program's P4Info (every entity kind, match kinds,
//! actions, action profiles, direct and indirect resources, the packet replication
//! engine, value sets, digests; ids right or wrong, bytestrings of right and wrong
//! widths and in non-canonical forms, missing fields, batches mixing valid and
//! invalid updates), pipeline configs with mutated P4Info and JSON, PacketOuts and
//! DigestListAcks. Each is encoded with prost, a share of the buffers is damaged,
//! and what still decodes is handed to the [`Device`] in process (under the panic
//! catcher). A slice goes over gRPC, as raw bytes, to a running server with a
//! device of its own (unary RPCs and StreamChannel sessions: arbitration, packet
//! outs, acks), which must then still answer a valid request.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut};
use p4jet_p4rt::proto::p4::config::v1 as cfg;
use p4jet_p4rt::proto::p4::v1 as p4;
use p4jet_p4rt::{CpuChannel, Device, ServeOptions, ServerHandle, SharedRuntime};
use p4jet_switch::Switch;
use prost::Message;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;

use crate::corpus::CorpusProgram;
use crate::harness::{
    Report, Watchdog, Wire, damage, guarded, held_clock, rss_kib, save_crash, server_panic_count,
};

/// The device id the devices run as.
const DEVICE_ID: u64 = 1;
/// The CPU port (p4rt_switch's `CPU_PORT`).
const CPU_PORT: u32 = 255;

/// A corpus program's P4Info in text format, parsed with the schema p4jet-p4rt
/// serves.
pub fn parse_p4info(text: &str) -> Result<cfg::P4Info, String> {
    let pool = prost_reflect::DescriptorPool::decode(p4jet_p4rt::proto::FILE_DESCRIPTOR_SET)
        .map_err(|e| e.to_string())?;
    let desc = pool
        .get_message_by_name("p4.config.v1.P4Info")
        .ok_or("no p4.config.v1.P4Info in the schema")?;
    let m =
        prost_reflect::DynamicMessage::parse_text_format(desc, text).map_err(|e| e.to_string())?;
    cfg::P4Info::decode(m.encode_to_vec().as_slice()).map_err(|e| e.to_string())
}

// ------------------------------------------------------------------ values

fn id_of(p: &Option<cfg::Preamble>) -> u32 {
    p.as_ref().map_or(0, |p| p.id)
}

/// The id from `ids` most of the time; else 0, a random one or a neighbour.
fn pick_id(rng: &mut StdRng, ids: &[u32]) -> u32 {
    if !ids.is_empty() && rng.gen_range(0..10) != 0 {
        return ids[rng.gen_range(0..ids.len())];
    }
    match rng.gen_range(0..3) {
        0 => 0,
        1 => rng.r#gen(),
        _ => ids.first().copied().unwrap_or(0).wrapping_add(1),
    }
}

/// A big-endian value of `w` bits in ceil(w/8) bytes.
fn fixed(rng: &mut StdRng, w: i32) -> Vec<u8> {
    let w = w.clamp(1, 2048) as usize;
    let n = w.div_ceil(8);
    let mut v: Vec<u8> = (0..n).map(|_| rng.r#gen()).collect();
    if !w.is_multiple_of(8) {
        v[0] &= (1u8 << (w % 8)) - 1;
    }
    if rng.gen_range(0..4) == 0 {
        // small values are common in practice (ports, ids)
        for b in v.iter_mut().take(n.saturating_sub(1)) {
            *b = 0;
        }
    }
    v
}

/// The canonical form: no leading zero bytes (zero is one zero byte).
fn canon(mut v: Vec<u8>) -> Vec<u8> {
    let z = v.iter().take_while(|b| **b == 0).count();
    v.drain(..z.min(v.len().saturating_sub(1)));
    v
}

/// A bytestring for a `w`-bit value: mostly canonical, sometimes padded, too wide,
/// empty or random.
fn shape(rng: &mut StdRng, v: Vec<u8>, w: i32) -> Vec<u8> {
    match rng.gen_range(0..25) {
        0 => vec![],
        1 => (0..rng.gen_range(0..24)).map(|_| rng.r#gen()).collect(),
        2 => {
            // wider than the field
            let n = (w.max(1) as usize).div_ceil(8) + rng.gen_range(0..3);
            vec![0xff; n]
        }
        3 | 4 => {
            // padded to the full width (or beyond) with leading zeros
            let mut p = vec![0u8; rng.gen_range(0..3)];
            p.extend(v);
            p
        }
        _ => canon(v),
    }
}

fn bits(rng: &mut StdRng, w: i32) -> Vec<u8> {
    let v = fixed(rng, w);
    shape(rng, v, w)
}

fn count_i64(rng: &mut StdRng) -> i64 {
    match rng.gen_range(0..6) {
        0 => rng.r#gen(),
        1 => -1,
        2 => i64::MAX,
        _ => rng.gen_range(0..100_000),
    }
}

fn index(rng: &mut StdRng, size: i64, read: bool) -> Option<p4::Index> {
    if read && rng.gen_bool(0.4) {
        return None;
    }
    let index = match rng.gen_range(0..12) {
        0 => -1,
        1 => size,
        2 => rng.r#gen(),
        _ => rng.gen_range(0..size.max(1)),
    };
    Some(p4::Index { index })
}

fn counter_data(rng: &mut StdRng) -> p4::CounterData {
    p4::CounterData {
        byte_count: count_i64(rng),
        packet_count: count_i64(rng),
    }
}

fn meter_config(rng: &mut StdRng) -> p4::MeterConfig {
    let cir = [0, 1, 100, 1_000_000, -1, i64::MAX][rng.gen_range(0..6)];
    let pir = if rng.gen_bool(0.8) {
        cir.saturating_mul(2)
    } else {
        count_i64(rng)
    };
    p4::MeterConfig {
        cir,
        cburst: count_i64(rng),
        pir,
        pburst: count_i64(rng),
        eburst: if rng.gen_bool(0.9) { 0 } else { count_i64(rng) },
    }
}

fn p4data(rng: &mut StdRng, w: i32) -> p4::P4Data {
    use p4::p4_data::Data;
    let data = match rng.gen_range(0..12) {
        0 => None,
        1 => Some(Data::Bool(rng.r#gen())),
        2 => Some(Data::Struct(p4::P4StructLike {
            members: vec![p4::P4Data {
                data: Some(Data::Bitstring(bits(rng, w))),
            }],
        })),
        3 => Some(Data::Varbit(p4::P4Varbit {
            bitstring: bits(rng, w),
            bitwidth: w,
        })),
        4 => Some(Data::Enum("X".into())),
        _ => Some(Data::Bitstring(bits(rng, w))),
    };
    p4::P4Data { data }
}

fn bitwidth_of(t: &Option<cfg::P4DataTypeSpec>) -> i32 {
    use cfg::p4_bitstring_like_type_spec::TypeSpec as B;
    use cfg::p4_data_type_spec::TypeSpec as T;
    match t.as_ref().and_then(|t| t.type_spec.as_ref()) {
        Some(T::Bitstring(b)) => match &b.type_spec {
            Some(B::Bit(x)) => x.bitwidth,
            Some(B::Int(x)) => x.bitwidth,
            Some(B::Varbit(x)) => x.max_bitwidth,
            None => 8,
        },
        _ => 8,
    }
}

// ------------------------------------------------------------------ generator

/// Generates requests from one program's P4Info.
pub struct Gen {
    info: cfg::P4Info,
    json: String,
    json_strings: Vec<String>,
    action_ids: Vec<u32>,
    profile_ids: Vec<u32>,
}

fn match_kind(m: &cfg::MatchField) -> i32 {
    match &m.r#match {
        Some(cfg::match_field::Match::MatchType(t)) => *t,
        _ => cfg::match_field::MatchType::Exact as i32,
    }
}

impl Gen {
    /// A generator for `info`, the program's bmv2 JSON being `json`.
    pub fn new(info: cfg::P4Info, json: String) -> Gen {
        let action_ids = info.actions.iter().map(|a| id_of(&a.preamble)).collect();
        let profile_ids = info
            .action_profiles
            .iter()
            .map(|a| id_of(&a.preamble))
            .collect();
        let mut json_strings = vec![];
        if let Ok(v) = serde_json::from_str::<Value>(&json) {
            crate::json::strings(&v, &mut json_strings);
        }
        Gen {
            info,
            json,
            json_strings,
            action_ids,
            profile_ids,
        }
    }

    fn field_match(&self, rng: &mut StdRng, m: &cfg::MatchField) -> p4::FieldMatch {
        use cfg::match_field::MatchType as K;
        use p4::field_match::FieldMatchType as F;
        use p4::field_match::*;
        let w = m.bitwidth;
        let mut kind = match_kind(m);
        if rng.gen_range(0..15) == 0 {
            kind = rng.gen_range(0..8);
        }
        let t = match K::try_from(kind) {
            Ok(K::Lpm) => {
                let prefix = match rng.gen_range(0..12) {
                    0 => -1,
                    1 => w + 1,
                    2 => 0,
                    _ => rng.gen_range(1..=w.max(1)),
                };
                let mut v = fixed(rng, w);
                if rng.gen_range(0..8) != 0 {
                    // bits past the prefix cleared, as P4Runtime requires
                    let p = prefix.clamp(0, w.max(0)) as usize;
                    let total = v.len() * 8;
                    let skip = total.saturating_sub(w.max(0) as usize);
                    for bit in 0..total {
                        if bit >= skip + p {
                            v[bit / 8] &= !(0x80 >> (bit % 8));
                        }
                    }
                }
                Some(F::Lpm(Lpm {
                    value: shape(rng, v, w),
                    prefix_len: prefix,
                }))
            }
            Ok(K::Ternary) => {
                let mut v = fixed(rng, w);
                let mask = fixed(rng, w);
                if rng.gen_range(0..8) != 0 {
                    for (a, b) in v.iter_mut().zip(&mask) {
                        *a &= *b;
                    }
                }
                Some(F::Ternary(Ternary {
                    value: shape(rng, v, w),
                    mask: shape(rng, mask, w),
                }))
            }
            Ok(K::Range) => {
                let mut lo = fixed(rng, w);
                let mut hi = fixed(rng, w);
                if rng.gen_range(0..8) != 0 && lo > hi {
                    std::mem::swap(&mut lo, &mut hi);
                }
                Some(F::Range(Range {
                    low: shape(rng, lo, w),
                    high: shape(rng, hi, w),
                }))
            }
            Ok(K::Optional) => Some(F::Optional(Optional {
                value: bits(rng, w),
            })),
            Ok(K::Exact) => Some(F::Exact(Exact {
                value: bits(rng, w),
            })),
            _ => match rng.gen_range(0..3) {
                0 => None,
                1 => Some(F::Other(prost_types::Any {
                    type_url: "x".into(),
                    value: bits(rng, 16),
                })),
                _ => Some(F::Exact(Exact {
                    value: bits(rng, w),
                })),
            },
        };
        let field_id = if rng.gen_range(0..30) == 0 {
            rng.gen_range(0..8)
        } else {
            m.id
        };
        p4::FieldMatch {
            field_id,
            field_match_type: t,
        }
    }

    fn matches(&self, rng: &mut StdRng, fields: &[cfg::MatchField]) -> Vec<p4::FieldMatch> {
        use cfg::match_field::MatchType as K;
        let mut out = vec![];
        for m in fields {
            let wild = matches!(
                K::try_from(match_kind(m)),
                Ok(K::Ternary | K::Range | K::Optional | K::Lpm)
            );
            if (wild && rng.gen_range(0..4) == 0) || rng.gen_range(0..40) == 0 {
                continue; // a don't-care (or a missing exact field)
            }
            let fm = self.field_match(rng, m);
            if rng.gen_range(0..40) == 0 {
                out.push(fm.clone()); // twice
            }
            out.push(fm);
        }
        if rng.gen_range(0..30) == 0 && out.len() > 1 {
            let i = rng.gen_range(0..out.len());
            out.swap(0, i);
        }
        out
    }

    fn action(&self, rng: &mut StdRng, allowed: &[u32]) -> p4::Action {
        let action_id = if allowed.is_empty() || rng.gen_range(0..12) == 0 {
            pick_id(rng, &self.action_ids)
        } else {
            allowed[rng.gen_range(0..allowed.len())]
        };
        let mut params = vec![];
        if let Some(a) = self
            .info
            .actions
            .iter()
            .find(|a| id_of(&a.preamble) == action_id)
        {
            for p in &a.params {
                if rng.gen_range(0..30) == 0 {
                    continue;
                }
                let param_id = if rng.gen_range(0..30) == 0 {
                    p.id + 7
                } else {
                    p.id
                };
                params.push(p4::action::Param {
                    param_id,
                    value: bits(rng, p.bitwidth),
                });
            }
        }
        if rng.gen_range(0..30) == 0 {
            params.push(p4::action::Param {
                param_id: rng.gen_range(0..5),
                value: bits(rng, 8),
            });
        }
        p4::Action { action_id, params }
    }

    fn table(&self, rng: &mut StdRng) -> Option<&cfg::Table> {
        if self.info.tables.is_empty() {
            return None;
        }
        Some(&self.info.tables[rng.gen_range(0..self.info.tables.len())])
    }

    fn table_entry(&self, rng: &mut StdRng, read: bool) -> p4::TableEntry {
        use cfg::match_field::MatchType as K;
        let Some(t) = self.table(rng) else {
            return p4::TableEntry {
                table_id: rng.r#gen(),
                ..Default::default()
            };
        };
        let mut e = p4::TableEntry {
            table_id: if rng.gen_range(0..25) == 0 {
                pick_id(rng, &[])
            } else {
                id_of(&t.preamble)
            },
            ..Default::default()
        };
        if read && rng.gen_range(0..3) == 0 {
            if rng.gen_bool(0.5) {
                e.table_id = 0;
            }
            return e;
        }
        let has_priority = t.match_fields.iter().any(|m| {
            matches!(
                K::try_from(match_kind(m)),
                Ok(K::Ternary | K::Range | K::Optional)
            )
        });
        e.is_default_action = rng.gen_range(0..15) == 0;
        if !e.is_default_action || rng.gen_range(0..5) == 0 {
            e.r#match = self.matches(rng, &t.match_fields);
        }
        e.priority = match (has_priority, rng.gen_range(0..15)) {
            (_, 0) => -1,
            (_, 1) => rng.r#gen(),
            (true, _) => rng.gen_range(1..50),
            (false, n) if n < 3 => 1,
            (false, _) => 0,
        };
        if !read || rng.gen_range(0..4) == 0 {
            e.action = Some(self.table_action(rng, t));
        }
        if rng.gen_range(0..6) == 0 {
            e.counter_data = Some(counter_data(rng));
        }
        if rng.gen_range(0..10) == 0 {
            e.meter_config = Some(meter_config(rng));
        }
        if rng.gen_range(0..12) == 0 {
            e.idle_timeout_ns = count_i64(rng);
        }
        if rng.gen_range(0..8) == 0 {
            e.metadata = (0..rng.gen_range(0..12)).map(|_| rng.r#gen()).collect();
        }
        if rng.gen_range(0..20) == 0 {
            #[allow(deprecated)] // controller_metadata: P4Runtime < 1.2 clients
            {
                e.controller_metadata = rng.r#gen();
            }
        }
        if rng.gen_range(0..40) == 0 {
            e.is_const = true;
        }
        e
    }

    fn refs(t: &cfg::Table) -> Vec<u32> {
        t.action_refs.iter().map(|r| r.id).collect()
    }

    fn table_action(&self, rng: &mut StdRng, t: &cfg::Table) -> p4::TableAction {
        use p4::table_action::Type;
        let refs = Self::refs(t);
        let indirect = t.implementation_id != 0;
        let ty = match (indirect, rng.gen_range(0..12)) {
            (_, 0) => None,
            (true, n) if n < 5 => Some(Type::ActionProfileMemberId(rng.gen_range(0..24))),
            (true, n) if n < 8 => Some(Type::ActionProfileGroupId(rng.gen_range(0..12))),
            (true, n) if n < 11 => Some(Type::ActionProfileActionSet(self.action_set(rng, &refs))),
            (false, 1) => Some(Type::ActionProfileMemberId(rng.gen_range(0..4))),
            (false, 2) => Some(Type::ActionProfileActionSet(self.action_set(rng, &refs))),
            _ => Some(Type::Action(self.action(rng, &refs))),
        };
        p4::TableAction { r#type: ty }
    }

    fn action_set(&self, rng: &mut StdRng, refs: &[u32]) -> p4::ActionProfileActionSet {
        let n = rng.gen_range(0..5);
        p4::ActionProfileActionSet {
            action_profile_actions: (0..n)
                .map(|_| p4::ActionProfileAction {
                    action: Some(self.action(rng, refs)),
                    weight: [1, 1, 2, 3, 0, -1][rng.gen_range(0..6)],
                    watch_kind: if rng.gen_range(0..6) == 0 {
                        Some(p4::action_profile_action::WatchKind::WatchPort(bits(
                            rng, 9,
                        )))
                    } else {
                        None
                    },
                })
                .collect(),
            action_selection_mode: rng.gen_range(0..3),
            size_semantics: rng.gen_range(0..3),
            group_action: None,
        }
    }

    fn profile(&self, rng: &mut StdRng) -> (u32, Vec<u32>) {
        if self.info.action_profiles.is_empty() || rng.gen_range(0..20) == 0 {
            return (pick_id(rng, &self.profile_ids), vec![]);
        }
        let p = &self.info.action_profiles[rng.gen_range(0..self.info.action_profiles.len())];
        let refs = self
            .info
            .tables
            .iter()
            .filter(|t| p.table_ids.contains(&id_of(&t.preamble)))
            .flat_map(Self::refs)
            .collect();
        (id_of(&p.preamble), refs)
    }

    fn replicas(&self, rng: &mut StdRng) -> Vec<p4::Replica> {
        (0..rng.gen_range(0..6))
            .map(|_| {
                #[allow(deprecated)] // egress_port: P4Runtime < 1.4 clients
                let port_kind = match rng.gen_range(0..8) {
                    0 => None,
                    1 => Some(p4::replica::PortKind::EgressPort(rng.gen_range(0..600))),
                    _ => Some(p4::replica::PortKind::Port(bits(rng, 9))),
                };
                p4::Replica {
                    instance: if rng.gen_bool(0.8) {
                        rng.gen_range(0..4)
                    } else {
                        rng.r#gen()
                    },
                    backup_replicas: if rng.gen_range(0..10) == 0 {
                        vec![p4::BackupReplica {
                            port: bits(rng, 9),
                            instance: 0,
                        }]
                    } else {
                        vec![]
                    },
                    port_kind,
                }
            })
            .collect()
    }

    fn group_id(rng: &mut StdRng) -> u32 {
        match rng.gen_range(0..15) {
            0 => 0,
            1 => rng.r#gen(),
            _ => rng.gen_range(1..24),
        }
    }

    /// An entity of any kind; `read`: the forms reads take (wildcards).
    pub fn entity(&self, rng: &mut StdRng, read: bool) -> p4::Entity {
        use p4::entity::Entity as E;
        let i = &self.info;
        let e = match rng.gen_range(0..24) {
            0..=7 => Some(E::TableEntry(self.table_entry(rng, read))),
            8 | 9 => {
                let (action_profile_id, refs) = self.profile(rng);
                Some(E::ActionProfileMember(p4::ActionProfileMember {
                    action_profile_id,
                    member_id: rng.gen_range(0..24),
                    action: (!read || rng.gen_bool(0.2)).then(|| self.action(rng, &refs)),
                }))
            }
            10 | 11 => {
                let (action_profile_id, _) = self.profile(rng);
                Some(E::ActionProfileGroup(p4::ActionProfileGroup {
                    action_profile_id,
                    group_id: rng.gen_range(0..12),
                    members: (0..rng.gen_range(0..6))
                        .map(|_| p4::action_profile_group::Member {
                            member_id: rng.gen_range(0..24),
                            weight: [1, 1, 1, 2, 5, 0, -3][rng.gen_range(0..7)],
                            watch_kind: if rng.gen_range(0..8) == 0 {
                                Some(p4::action_profile_group::member::WatchKind::WatchPort(
                                    bits(rng, 9),
                                ))
                            } else {
                                None
                            },
                        })
                        .collect(),
                    max_size: [0, 0, 4, 16, -1][rng.gen_range(0..5)],
                }))
            }
            12 => {
                let (id, size) = if i.counters.is_empty() {
                    (pick_id(rng, &[]), 1)
                } else {
                    let c = &i.counters[rng.gen_range(0..i.counters.len())];
                    (id_of(&c.preamble), c.size)
                };
                Some(E::CounterEntry(p4::CounterEntry {
                    counter_id: if read && rng.gen_range(0..5) == 0 {
                        0
                    } else {
                        id
                    },
                    index: index(rng, size, read),
                    data: (!read || rng.gen_range(0..5) == 0).then(|| counter_data(rng)),
                }))
            }
            13 => {
                let te = self.direct_table_entry(rng, read, true);
                Some(E::DirectCounterEntry(p4::DirectCounterEntry {
                    table_entry: te,
                    data: (!read || rng.gen_range(0..5) == 0).then(|| counter_data(rng)),
                }))
            }
            14 => {
                let (id, size) = if i.meters.is_empty() {
                    (pick_id(rng, &[]), 1)
                } else {
                    let c = &i.meters[rng.gen_range(0..i.meters.len())];
                    (id_of(&c.preamble), c.size)
                };
                Some(E::MeterEntry(p4::MeterEntry {
                    meter_id: if read && rng.gen_range(0..5) == 0 {
                        0
                    } else {
                        id
                    },
                    index: index(rng, size, read),
                    config: (!read || rng.gen_range(0..5) == 0)
                        .then(|| meter_config(rng))
                        .filter(|_| rng.gen_range(0..8) != 0),
                    counter_data: None,
                }))
            }
            15 => {
                let te = self.direct_table_entry(rng, read, false);
                Some(E::DirectMeterEntry(p4::DirectMeterEntry {
                    table_entry: te,
                    config: (!read || rng.gen_range(0..5) == 0).then(|| meter_config(rng)),
                    counter_data: None,
                }))
            }
            16 | 17 => {
                let (id, size, w) = if i.registers.is_empty() {
                    (pick_id(rng, &[]), 1, 8)
                } else {
                    let r = &i.registers[rng.gen_range(0..i.registers.len())];
                    (id_of(&r.preamble), r.size as i64, bitwidth_of(&r.type_spec))
                };
                Some(E::RegisterEntry(p4::RegisterEntry {
                    register_id: if read && rng.gen_range(0..5) == 0 {
                        0
                    } else {
                        id
                    },
                    index: index(rng, size, read),
                    data: (!read).then(|| p4data(rng, w)),
                }))
            }
            18 => {
                let (id, fields) = if i.value_sets.is_empty() {
                    (pick_id(rng, &[]), vec![])
                } else {
                    let v = &i.value_sets[rng.gen_range(0..i.value_sets.len())];
                    (id_of(&v.preamble), v.r#match.clone())
                };
                Some(E::ValueSetEntry(p4::ValueSetEntry {
                    value_set_id: if read && rng.gen_range(0..4) == 0 {
                        0
                    } else {
                        id
                    },
                    members: if read {
                        vec![]
                    } else {
                        (0..rng.gen_range(0..7))
                            .map(|_| p4::ValueSetMember {
                                r#match: self.matches(rng, &fields),
                            })
                            .collect()
                    },
                }))
            }
            19 => {
                let ids: Vec<u32> = i.digests.iter().map(|d| id_of(&d.preamble)).collect();
                Some(E::DigestEntry(p4::DigestEntry {
                    digest_id: if read && rng.gen_range(0..4) == 0 {
                        0
                    } else {
                        pick_id(rng, &ids)
                    },
                    config: (rng.gen_range(0..8) != 0).then(|| p4::digest_entry::Config {
                        max_timeout_ns: [0, 1000, 1_000_000, -1][rng.gen_range(0..4)],
                        max_list_size: [0, 1, 10, 100, -1][rng.gen_range(0..5)],
                        ack_timeout_ns: [0, 1_000_000, 1_000_000_000, -5][rng.gen_range(0..4)],
                    }),
                }))
            }
            20 | 21 => {
                use p4::packet_replication_engine_entry::Type;
                let ty = if rng.gen_bool(0.5) {
                    Some(Type::MulticastGroupEntry(p4::MulticastGroupEntry {
                        multicast_group_id: if read && rng.gen_range(0..3) == 0 {
                            0
                        } else {
                            Self::group_id(rng)
                        },
                        replicas: if read { vec![] } else { self.replicas(rng) },
                        metadata: if rng.gen_range(0..6) == 0 {
                            vec![rng.r#gen(); rng.gen_range(0..8)]
                        } else {
                            vec![]
                        },
                    }))
                } else if rng.gen_range(0..15) == 0 {
                    None
                } else {
                    Some(Type::CloneSessionEntry(p4::CloneSessionEntry {
                        session_id: if read && rng.gen_range(0..3) == 0 {
                            0
                        } else {
                            Self::group_id(rng)
                        },
                        replicas: if read { vec![] } else { self.replicas(rng) },
                        class_of_service: if rng.gen_bool(0.8) { 0 } else { rng.r#gen() },
                        packet_length_bytes: [0, 0, 64, 1500, -1][rng.gen_range(0..5)],
                    }))
                };
                Some(E::PacketReplicationEngineEntry(
                    p4::PacketReplicationEngineEntry { r#type: ty },
                ))
            }
            22 => Some(E::ExternEntry(p4::ExternEntry {
                extern_type_id: rng.gen_range(0..256),
                extern_id: rng.r#gen(),
                entry: None,
            })),
            _ => None,
        };
        p4::Entity { entity: e }
    }

    /// A table entry of a table with a direct counter (`counter`) or meter.
    fn direct_table_entry(
        &self,
        rng: &mut StdRng,
        read: bool,
        counter: bool,
    ) -> Option<p4::TableEntry> {
        let direct: Vec<u32> = if counter {
            self.info
                .direct_counters
                .iter()
                .map(|d| d.direct_table_id)
                .collect()
        } else {
            self.info
                .direct_meters
                .iter()
                .map(|d| d.direct_table_id)
                .collect()
        };
        if rng.gen_range(0..15) == 0 {
            return None;
        }
        for _ in 0..4 {
            let mut e = self.table_entry(rng, read);
            if direct.is_empty() || direct.contains(&e.table_id) || rng.gen_range(0..4) == 0 {
                e.action = None;
                return Some(e);
            }
        }
        Some(p4::TableEntry {
            table_id: if read { 0 } else { direct[0] },
            ..Default::default()
        })
    }

    fn election(rng: &mut StdRng) -> Option<p4::Uint128> {
        match rng.gen_range(0..20) {
            0 => Some(p4::Uint128 { high: 0, low: 1 }),
            1 => Some(p4::Uint128 {
                high: rng.r#gen(),
                low: rng.r#gen(),
            }),
            _ => None,
        }
    }

    fn device_id(rng: &mut StdRng) -> u64 {
        if rng.gen_range(0..50) == 0 {
            rng.r#gen()
        } else {
            DEVICE_ID
        }
    }

    fn role(rng: &mut StdRng) -> String {
        match rng.gen_range(0..40) {
            0 => "sdn".into(),
            1 => "\u{0}x".into(),
            _ => String::new(),
        }
    }

    /// A WriteRequest: one to eight updates mostly, valid and invalid mixed.
    pub fn write(&self, rng: &mut StdRng) -> p4::WriteRequest {
        let n = match rng.gen_range(0..30) {
            0 => 0,
            1 => rng.gen_range(9..40),
            _ => rng.gen_range(1..=8),
        };
        let updates = (0..n)
            .map(|_| p4::Update {
                r#type: match rng.gen_range(0..40) {
                    0 => 0,
                    1 => rng.gen_range(4..9),
                    n if n < 22 => 1, // INSERT
                    n if n < 31 => 2, // MODIFY
                    _ => 3,           // DELETE
                },
                entity: (rng.gen_range(0..40) != 0).then(|| self.entity(rng, false)),
            })
            .collect();
        #[allow(deprecated)] // role_id: P4Runtime 1.0 clients
        p4::WriteRequest {
            device_id: Self::device_id(rng),
            role_id: if rng.gen_range(0..60) == 0 { 3 } else { 0 },
            role: Self::role(rng),
            election_id: Self::election(rng),
            updates,
            atomicity: match rng.gen_range(0..20) {
                0 => 1,
                1 => 2,
                2 => rng.gen_range(3..6),
                _ => 0,
            },
        }
    }

    /// A ReadRequest: wildcards and specific entities.
    pub fn read(&self, rng: &mut StdRng) -> p4::ReadRequest {
        p4::ReadRequest {
            device_id: Self::device_id(rng),
            role: Self::role(rng),
            entities: (0..rng.gen_range(0..4))
                .map(|_| self.entity(rng, true))
                .collect(),
        }
    }

    fn mutate_p4info(&self, rng: &mut StdRng, info: &mut cfg::P4Info) {
        for _ in 0..rng.gen_range(1..=3) {
            match rng.gen_range(0..12) {
                0 if !info.tables.is_empty() => {
                    let i = rng.gen_range(0..info.tables.len());
                    info.tables.remove(i);
                }
                1 if !info.actions.is_empty() => {
                    let i = rng.gen_range(0..info.actions.len());
                    info.actions.remove(i);
                }
                2 if !info.tables.is_empty() => {
                    let i = rng.gen_range(0..info.tables.len());
                    let t = &mut info.tables[i];
                    if let Some(m) = t.match_fields.first_mut() {
                        m.bitwidth =
                            [0, 1, -1, 64, 129, 4096, i32::MAX, i32::MIN][rng.gen_range(0..8)];
                    }
                }
                3 if !info.tables.is_empty() => {
                    let i = rng.gen_range(0..info.tables.len());
                    let t = &mut info.tables[i];
                    if let Some(m) = t.match_fields.last_mut() {
                        m.r#match = match rng.gen_range(0..3) {
                            0 => None,
                            1 => Some(cfg::match_field::Match::OtherMatchType("x".into())),
                            _ => Some(cfg::match_field::Match::MatchType(rng.gen_range(0..9))),
                        };
                    }
                }
                4 if info.tables.len() > 1 => {
                    // two tables with one id
                    let id = id_of(&info.tables[0].preamble);
                    if let Some(p) = info.tables[1].preamble.as_mut() {
                        p.id = id;
                    }
                }
                5 if !info.tables.is_empty() => {
                    let i = rng.gen_range(0..info.tables.len());
                    let t = &mut info.tables[i];
                    t.action_refs.push(cfg::ActionRef {
                        id: rng.r#gen(),
                        ..Default::default()
                    });
                }
                6 if !info.tables.is_empty() => {
                    let i = rng.gen_range(0..info.tables.len());
                    info.tables[i].implementation_id = pick_id(rng, &self.profile_ids);
                    info.tables[i].direct_resource_ids.push(rng.r#gen());
                }
                7 if !info.actions.is_empty() => {
                    let i = rng.gen_range(0..info.actions.len());
                    for p in &mut info.actions[i].params {
                        p.bitwidth = [0, 1, 33, 100_000, -8, i32::MAX][rng.gen_range(0..6)];
                    }
                }
                8 => {
                    let i = rng.gen_range(0..info.tables.len().max(1));
                    if let Some(t) = info.tables.get_mut(i) {
                        match rng.gen_range(0..3) {
                            0 => t.preamble = None,
                            1 => {
                                if let Some(p) = t.preamble.as_mut() {
                                    p.name = "no.such.table".into();
                                }
                            }
                            _ => {
                                if let Some(p) = t.preamble.as_mut() {
                                    p.id = 0;
                                }
                            }
                        }
                    }
                }
                9 => {
                    for c in &mut info.controller_packet_metadata {
                        for m in &mut c.metadata {
                            m.bitwidth = [0, 7, 9, 300, -1, i32::MAX][rng.gen_range(0..6)];
                        }
                    }
                }
                10 if !info.action_profiles.is_empty() => {
                    let p = &mut info.action_profiles[0];
                    p.table_ids = vec![rng.r#gen()];
                    p.with_selector = !p.with_selector;
                }
                _ => {
                    let big = rng.gen_bool(0.5);
                    info.registers
                        .iter_mut()
                        .for_each(|r| r.size = if big { i32::MAX } else { -1 });
                    info.counters
                        .iter_mut()
                        .for_each(|c| c.size = if big { i64::MAX } else { 0 });
                    info.meters.iter_mut().for_each(|c| c.size = -1);
                    info.value_sets
                        .iter_mut()
                        .for_each(|v| v.size = if big { i32::MAX } else { -2 });
                    for t in &mut info.tables {
                        t.size = if big { i64::MAX } else { -1 };
                    }
                }
            }
        }
    }

    /// A SetForwardingPipelineConfigRequest: the program's config (its P4Info and
    /// JSON), mutated mostly.
    pub fn set_pipeline(&self, rng: &mut StdRng) -> p4::SetForwardingPipelineConfigRequest {
        let mut info = self.info.clone();
        if rng.gen_range(0..3) != 0 {
            self.mutate_p4info(rng, &mut info);
        }
        let mut json = self.json.clone().into_bytes();
        match rng.gen_range(0..6) {
            0 | 1 => {
                if let Ok(mut v) = serde_json::from_slice::<Value>(&json) {
                    for _ in 0..rng.gen_range(1..=3) {
                        crate::json::mutate_tree(&mut v, &self.json_strings, rng);
                    }
                    json = v.to_string().into_bytes();
                }
            }
            2 => crate::json::damage_text(&mut json, rng),
            3 => {
                json = p4jet_p4rt::proto::p4::tmp::P4DeviceConfig {
                    device_data: json,
                    ..Default::default()
                }
                .encode_to_vec()
            }
            4 if rng.gen_bool(0.2) => json.clear(),
            _ => {}
        }
        #[allow(deprecated)] // role_id: P4Runtime 1.0 clients
        p4::SetForwardingPipelineConfigRequest {
            device_id: Self::device_id(rng),
            role_id: 0,
            role: Self::role(rng),
            election_id: Self::election(rng),
            action: match rng.gen_range(0..12) {
                0 => 0,
                1 => 2, // VERIFY_AND_SAVE
                2 => 4, // COMMIT
                3 => 5, // RECONCILE_AND_COMMIT
                4 => 3, // VERIFY_AND_COMMIT
                5 => rng.gen_range(6..9),
                _ => 1, // VERIFY
            },
            config: (rng.gen_range(0..15) != 0).then(|| p4::ForwardingPipelineConfig {
                p4info: (rng.gen_range(0..20) != 0).then_some(info),
                p4_device_config: json,
                cookie: rng
                    .gen_bool(0.5)
                    .then(|| p4::forwarding_pipeline_config::Cookie {
                        cookie: rng.r#gen(),
                    }),
            }),
        }
    }

    /// The program's own config, committed.
    pub fn commit(&self) -> p4::SetForwardingPipelineConfigRequest {
        p4::SetForwardingPipelineConfigRequest {
            device_id: DEVICE_ID,
            action: 3, // VERIFY_AND_COMMIT
            config: Some(p4::ForwardingPipelineConfig {
                p4info: Some(self.info.clone()),
                p4_device_config: self.json.clone().into_bytes(),
                cookie: None,
            }),
            ..Default::default()
        }
    }

    /// A PacketOut: a frame with the packet_out header's metadata, right or wrong.
    pub fn packet_out(&self, rng: &mut StdRng, seeds: &[Vec<u8>]) -> p4::PacketOut {
        let fields: Vec<(u32, i32)> = self
            .info
            .controller_packet_metadata
            .iter()
            .find(|c| c.preamble.as_ref().is_some_and(|p| p.name == "packet_out"))
            .map(|c| c.metadata.iter().map(|m| (m.id, m.bitwidth)).collect())
            .unwrap_or_default();
        let mut metadata: Vec<p4::PacketMetadata> = vec![];
        for (id, w) in &fields {
            if rng.gen_range(0..20) == 0 {
                continue;
            }
            metadata.push(p4::PacketMetadata {
                metadata_id: if rng.gen_range(0..30) == 0 {
                    id + 5
                } else {
                    *id
                },
                value: if rng.gen_bool(0.5) {
                    canon(vec![rng.gen_range(0..8)])
                } else {
                    bits(rng, *w)
                },
            });
        }
        if rng.gen_range(0..20) == 0 {
            metadata.push(p4::PacketMetadata {
                metadata_id: rng.gen_range(0..4),
                value: bits(rng, 16),
            });
        }
        let payload = if !seeds.is_empty() && rng.gen_bool(0.7) {
            let mut f = seeds[rng.gen_range(0..seeds.len())].clone();
            if rng.gen_bool(0.3) && !f.is_empty() {
                let i = rng.gen_range(0..f.len());
                f[i] ^= 1 << rng.gen_range(0..8);
            }
            f
        } else {
            (0..rng.gen_range(0..100)).map(|_| rng.r#gen()).collect()
        };
        p4::PacketOut { payload, metadata }
    }

    /// A DigestListAck.
    pub fn digest_ack(&self, rng: &mut StdRng) -> p4::DigestListAck {
        let ids: Vec<u32> = self
            .info
            .digests
            .iter()
            .map(|d| id_of(&d.preamble))
            .collect();
        p4::DigestListAck {
            digest_id: pick_id(rng, &ids),
            list_id: if rng.gen_bool(0.8) {
                rng.gen_range(0..64)
            } else {
                rng.r#gen()
            },
        }
    }
}

// ------------------------------------------------------------------ messages

/// What a case is: its kind (the first byte of a saved case) and its encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A WriteRequest.
    Write,
    /// A ReadRequest.
    Read,
    /// A SetForwardingPipelineConfigRequest.
    SetPipeline,
    /// A GetForwardingPipelineConfigRequest.
    GetPipeline,
    /// A PacketOut.
    PacketOut,
    /// A DigestListAck.
    DigestAck,
}

const KINDS: [Kind; 6] = [
    Kind::Write,
    Kind::Read,
    Kind::SetPipeline,
    Kind::GetPipeline,
    Kind::PacketOut,
    Kind::DigestAck,
];

impl Kind {
    fn byte(self) -> u8 {
        KINDS.iter().position(|k| *k == self).unwrap_or(0) as u8
    }

    fn rpc(self) -> &'static str {
        match self {
            Kind::Write => "/p4.v1.P4Runtime/Write",
            Kind::Read => "/p4.v1.P4Runtime/Read",
            Kind::SetPipeline => "/p4.v1.P4Runtime/SetForwardingPipelineConfig",
            Kind::GetPipeline => "/p4.v1.P4Runtime/GetForwardingPipelineConfig",
            // stream messages
            Kind::PacketOut | Kind::DigestAck => "/p4.v1.P4Runtime/StreamChannel",
        }
    }
}

/// One generated message, encoded (a stream message for PacketOut and DigestAck).
pub fn message(g: &Gen, rng: &mut StdRng, seeds: &[Vec<u8>]) -> (Kind, Vec<u8>) {
    use p4::stream_message_request::Update;
    let k = rng.gen_range(0..1000);
    let stream = |u: Update| p4::StreamMessageRequest { update: Some(u) }.encode_to_vec();
    match k {
        0..=579 => (Kind::Write, g.write(rng).encode_to_vec()),
        580..=779 => (Kind::Read, g.read(rng).encode_to_vec()),
        780..=794 => (Kind::SetPipeline, g.set_pipeline(rng).encode_to_vec()),
        795..=819 => (
            Kind::GetPipeline,
            p4::GetForwardingPipelineConfigRequest {
                device_id: Gen::device_id(rng),
                response_type: rng.gen_range(0..5),
            }
            .encode_to_vec(),
        ),
        820..=929 => (
            Kind::PacketOut,
            stream(Update::Packet(g.packet_out(rng, seeds))),
        ),
        _ => (
            Kind::DigestAck,
            stream(Update::DigestAck(g.digest_ack(rng))),
        ),
    }
}

/// What running cases did, for the report.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Buffers that did not decode.
    pub undecodable: u64,
    /// Requests the device accepted.
    pub accepted: u64,
    /// Requests the device refused with an error.
    pub refused: u64,
    /// Frames through the switch (packet outs, then to the CPU port).
    pub frames: u64,
}

/// The device under test in process, with its switch and CPU port.
pub struct Bench {
    /// The device.
    pub dev: Device,
    switch: Arc<Mutex<Switch>>,
    cpu: Arc<CpuChannel>,
}

impl Bench {
    /// A device over a new switch running `json`, its pipeline set from `g`.
    pub fn new(g: &Gen, json: &str) -> Option<Bench> {
        let switch = Arc::new(Mutex::new(Switch::new(json, held_clock()).ok()?));
        let shared: SharedRuntime = switch.clone();
        let cpu = Arc::new(CpuChannel::new(CPU_PORT, 256).ok()?);
        let dev = Device::new(DEVICE_ID, shared, Some(cpu.clone()));
        dev.set_pipeline(g.commit()).ok()?;
        Some(Bench { dev, switch, cpu })
    }

    /// Frames the device queued for the switch go through it; frames to the CPU port
    /// become PacketIns; digests are polled.
    pub fn pump(&self, tally: &mut Tally) {
        let mut frames = vec![];
        self.cpu.recv(256, &mut |f| frames.push(f.to_vec()));
        if !frames.is_empty() {
            let mut sw = match self.switch.lock() {
                Ok(s) => s,
                Err(p) => p.into_inner(),
            };
            for f in &frames {
                sw.inject(CPU_PORT, f);
            }
            let cpu = &self.cpu;
            sw.run_until_idle(&mut |port, f| {
                if port == CPU_PORT {
                    cpu.send_from_switch(f);
                }
            });
            tally.frames += frames.len() as u64;
        }
        while let Some(f) = self.cpu.take_packet_in() {
            self.dev.packet_in(&f);
        }
        self.dev.poll_notifications();
    }

    /// Decodes `buf` as a `kind` message and hands it to the device.
    pub fn run(&self, kind: Kind, buf: &[u8], tally: &mut Tally) {
        use p4::stream_message_request::Update;
        let ok = match kind {
            Kind::Write => match p4::WriteRequest::decode(buf) {
                Ok(r) => Some(self.dev.write(r).is_ok()),
                Err(_) => None,
            },
            Kind::Read => match p4::ReadRequest::decode(buf) {
                Ok(r) => Some(self.read(r)),
                Err(_) => None,
            },
            Kind::SetPipeline => match p4::SetForwardingPipelineConfigRequest::decode(buf) {
                Ok(r) => Some(self.dev.set_pipeline(r).is_ok()),
                Err(_) => None,
            },
            Kind::GetPipeline => match p4::GetForwardingPipelineConfigRequest::decode(buf) {
                Ok(r) => Some(self.dev.get_pipeline(&r).is_ok()),
                Err(_) => None,
            },
            Kind::PacketOut | Kind::DigestAck => match p4::StreamMessageRequest::decode(buf) {
                Ok(m) => match m.update {
                    Some(Update::Packet(p)) => Some(self.dev.packet_out(&p).is_ok()),
                    Some(Update::DigestAck(a)) => {
                        self.dev.digest_ack(&a);
                        Some(true)
                    }
                    Some(Update::Arbitration(_) | Update::Other(_)) | None => Some(false),
                },
                Err(_) => None,
            },
        };
        match ok {
            None => tally.undecodable += 1,
            Some(true) => tally.accepted += 1,
            Some(false) => tally.refused += 1,
        }
    }

    /// A read, its responses drained by a thread of its own (the device streams
    /// them into a bounded channel); true when it ended without an error.
    fn read(&self, r: p4::ReadRequest) -> bool {
        if self.dev.check_read(&r).is_err() {
            return false;
        }
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<p4::ReadResponse, tonic::Status>>(8);
        std::thread::scope(|s| {
            let drain = s.spawn(move || {
                let mut ok = true;
                while let Some(x) = rx.blocking_recv() {
                    ok &= x.is_ok();
                }
                ok
            });
            self.dev.read(r, &tx);
            drop(tx);
            drain.join().unwrap_or(false)
        })
    }
}

// ------------------------------------------------------------------ gRPC

/// A codec that sends and receives raw bytes: damaged messages reach the server's
/// own decoder.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

/// Its encoder and decoder.
#[derive(Debug, Clone, Copy, Default)]
pub struct Raw;

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        Ok(Some(src.copy_to_bytes(src.remaining()).to_vec()))
    }
}

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

/// A server with a device of its own, and a client connected to it.
pub struct Remote {
    rt: tokio::runtime::Runtime,
    channel: tonic::transport::Channel,
    server: Option<ServerHandle>,
    election: u64,
}

const GRPC_TIMEOUT: Duration = Duration::from_secs(10);

impl Remote {
    /// Spawns a server on 127.0.0.1:0 over a new switch and sets its pipeline (over
    /// gRPC).
    pub fn start(g: &Gen, json: &str) -> Result<Remote, String> {
        let sw = Switch::new(json, held_clock()).map_err(|e| e.to_string())?;
        let shared: SharedRuntime = Arc::new(Mutex::new(sw));
        let cpu = Arc::new(CpuChannel::new(CPU_PORT, 256).map_err(|e| e.to_string())?);
        let dev = Arc::new(Device::new(DEVICE_ID, shared, Some(cpu)));
        let server = p4jet_p4rt::spawn(dev, "127.0.0.1:0", ServeOptions { tls: None })?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let uri = format!("http://{}", server.local_addr());
        let channel = rt.block_on(async {
            tonic::transport::Channel::from_shared(uri)
                .map_err(|e| e.to_string())?
                .connect()
                .await
                .map_err(|e| e.to_string())
        })?;
        let r = Remote {
            rt,
            channel,
            server: Some(server),
            election: 1,
        };
        let mut c = p4::p4_runtime_client::P4RuntimeClient::new(r.channel.clone());
        r.rt.block_on(c.set_forwarding_pipeline_config(g.commit()))
            .map_err(|e| format!("setting the pipeline over gRPC: {e}"))?;
        Ok(r)
    }

    /// Sends `buf` (a `kind` message) as the server would receive it from a client:
    /// unary RPCs as they are; stream messages in a StreamChannel session that first
    /// arbitrates (with a valid update, or a damaged one). Errors are answers too.
    pub fn send(&mut self, kind: Kind, buf: &[u8], rng: &mut StdRng) {
        let mut grpc = tonic::client::Grpc::new(self.channel.clone());
        let path = PathAndQuery::from_static(kind.rpc());
        let buf = buf.to_vec();
        if !matches!(kind, Kind::PacketOut | Kind::DigestAck) {
            let _ = self.rt.block_on(async {
                tokio::time::timeout(GRPC_TIMEOUT, async {
                    grpc.ready().await.map_err(|e| e.to_string())?;
                    if kind == Kind::Read {
                        let r = grpc
                            .server_streaming(tonic::Request::new(buf), path, RawCodec)
                            .await
                            .map_err(|e| e.to_string())?;
                        let mut s = r.into_inner();
                        while let Ok(Some(_)) = s.message().await {}
                    } else {
                        grpc.unary(tonic::Request::new(buf), path, RawCodec)
                            .await
                            .map_err(|e| e.to_string())?;
                    }
                    Ok::<(), String>(())
                })
                .await
            });
            return;
        }
        self.election += 1;
        let arbitrate = p4::StreamMessageRequest {
            update: Some(p4::stream_message_request::Update::Arbitration(
                p4::MasterArbitrationUpdate {
                    device_id: Gen::device_id(rng),
                    role: None,
                    election_id: Some(p4::Uint128 {
                        high: 0,
                        low: self.election,
                    }),
                    status: None,
                },
            )),
        }
        .encode_to_vec();
        let mut msgs = vec![];
        if rng.gen_range(0..10) != 0 {
            msgs.push(arbitrate);
        }
        for _ in 0..rng.gen_range(1..4) {
            msgs.push(buf.clone());
        }
        let _ = self.rt.block_on(async {
            tokio::time::timeout(GRPC_TIMEOUT, async {
                grpc.ready().await.map_err(|e| e.to_string())?;
                let r = grpc
                    .streaming(
                        tonic::Request::new(tokio_stream::iter(msgs)),
                        path,
                        RawCodec,
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                let mut s = r.into_inner();
                // the server answers the arbitration and refuses bad packets; the
                // stream ends once ours has
                while let Ok(Some(_)) = s.message().await {}
                Ok::<(), String>(())
            })
            .await
        });
    }

    /// Whether the server still answers valid requests (Capabilities, and
    /// GetForwardingPipelineConfig with the cookie only).
    pub fn probe(&self) -> Result<(), String> {
        let mut c = p4::p4_runtime_client::P4RuntimeClient::new(self.channel.clone());
        self.rt.block_on(async {
            tokio::time::timeout(GRPC_TIMEOUT, async {
                c.capabilities(p4::CapabilitiesRequest {
                    device_id: DEVICE_ID,
                })
                .await
                .map_err(|e| format!("Capabilities: {e}"))?;
                c.get_forwarding_pipeline_config(p4::GetForwardingPipelineConfigRequest {
                    device_id: DEVICE_ID,
                    response_type: 1, // COOKIE_ONLY
                })
                .await
                .map_err(|e| format!("GetForwardingPipelineConfig: {e}"))?;
                Ok(())
            })
            .await
            .map_err(|_| format!("no answer within {GRPC_TIMEOUT:?}"))?
        })
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop();
        }
    }
}

// ------------------------------------------------------------------ campaign

/// A saved case: the kind's byte, then the message.
fn saved(kind: Kind, buf: &[u8]) -> Vec<u8> {
    let mut v = vec![kind.byte()];
    v.extend_from_slice(buf);
    v
}

/// Replays a saved case against a fresh device of `p`: Err with the panic's
/// message when it panics.
pub fn replay(p: &CorpusProgram, case: &[u8]) -> Result<(), String> {
    let (Some(text), Some((&k, buf))) = (&p.p4info, case.split_first()) else {
        return Ok(());
    };
    let g = Gen::new(parse_p4info(text)?, p.json.clone());
    let bench = Bench::new(&g, &p.json).ok_or("the program does not load")?;
    let kind = KINDS.get(k as usize).copied().unwrap_or(Kind::Write);
    let mut t = Tally::default();
    guarded(|| {
        bench.run(kind, buf, &mut t);
        bench.pump(&mut t);
    })
}

/// Cases a program gets: p4rt_switch (every entity kind) four shares.
fn weight(p: &CorpusProgram) -> u64 {
    if p.name == "p4rt_switch" { 4 } else { 1 }
}

/// Runs `messages` cases over the programs with a P4Info; about one in `grpc_every`
/// also goes over gRPC.
pub fn campaign(
    programs: &[CorpusProgram],
    messages: u64,
    seed: u64,
    crashes: &Path,
    hang_limit: Duration,
) -> Report {
    campaign_with(programs, messages, seed, crashes, hang_limit, 200)
}

/// [`campaign`] with the share of gRPC cases given.
pub fn campaign_with(
    programs: &[CorpusProgram],
    messages: u64,
    seed: u64,
    crashes: &Path,
    hang_limit: Duration,
    grpc_every: u32,
) -> Report {
    let mut rep = Report {
        target: "p4rt".into(),
        unit: "messages",
        ..Report::default()
    };
    let dog = Watchdog::start("p4rt", crashes, hang_limit);
    let start = Instant::now();
    let with_info: Vec<&CorpusProgram> = programs.iter().filter(|p| p.p4info.is_some()).collect();
    let shares: u64 = with_info.iter().map(|p| weight(p)).sum::<u64>().max(1);
    let mut tally = Tally::default();
    let (mut over_grpc, mut damaged) = (0u64, 0u64);
    let mut before = 0u64;
    for (pi, p) in with_info.iter().enumerate() {
        // shares by weight, rounded so that they add up to `messages`
        let after = before + weight(p);
        let per = messages * after / shares - messages * before / shares;
        before = after;
        let mut rng = StdRng::seed_from_u64(seed ^ (pi as u64).wrapping_mul(0x9E37_79B9));
        let g = match p.p4info.as_deref().map(parse_p4info) {
            Some(Ok(info)) => Gen::new(info, p.json.clone()),
            Some(Err(e)) => {
                rep.notes.push(format!("{}: P4Info not read: {e}", p.name));
                continue;
            }
            None => continue,
        };
        let Some(mut bench) = Bench::new(&g, &p.json) else {
            rep.notes.push(format!("{}: pipeline not set", p.name));
            continue;
        };
        let mut remote = if grpc_every > 0 {
            match Remote::start(&g, &p.json) {
                Ok(r) => Some(r),
                Err(e) => {
                    rep.panics
                        .push(format!("{}: the gRPC server did not start: {e}", p.name));
                    None
                }
            }
        } else {
            None
        };
        let mut done = 0u64;
        while done < per {
            let (kind, mut buf) = message(&g, &mut rng, &p.seeds);
            if rng.gen_range(0..10) < 3 {
                damage(&mut buf, &mut rng, Wire::Protobuf);
                damaged += 1;
            }
            let case = saved(kind, &buf);
            dog.case(&case);
            let r = guarded(|| {
                bench.run(kind, &buf, &mut tally);
                if done % 32 == 31 || kind == Kind::PacketOut {
                    bench.pump(&mut tally);
                }
            });
            if let Err(msg) = r {
                let path = save_crash(crashes, "p4rt", rep.panics.len(), &case);
                rep.panics
                    .push(format!("{}: {msg} ({})", p.name, path.display()));
                match Bench::new(&g, &p.json) {
                    Some(b) => bench = b,
                    None => break,
                }
            }
            // now and then the program's own pipeline again: a mutated one may
            // have been committed, and state is reset
            if done % 5000 == 4999 {
                let _ = guarded(|| bench.dev.set_pipeline(g.commit()));
            }
            if let Some(r) = remote.as_mut()
                && rng.gen_range(0..grpc_every) == 0
            {
                over_grpc += 1;
                let before = server_panic_count();
                r.send(kind, &buf, &mut rng);
                let answer = r.probe();
                let after = server_panic_count();
                if after != before || answer.is_err() {
                    let path = save_crash(crashes, "p4rt-grpc", rep.panics.len(), &case);
                    rep.panics.push(format!(
                        "{}: over gRPC: {} ({})",
                        p.name,
                        match &answer {
                            Err(e) => format!("the server stopped answering: {e}"),
                            Ok(()) =>
                                format!("a panic in the server: {}", crate::harness::last_panic()),
                        },
                        path.display()
                    ));
                    if answer.is_err() {
                        remote = Remote::start(&g, &p.json).ok();
                    }
                }
                dog.beat();
            }
            done += 1;
            rep.cases += 1;
            if rep.rss_warm_kib == 0 && rep.cases >= messages / 10 {
                rep.rss_warm_kib = rss_kib();
            }
        }
    }
    rep.rss_end_kib = rss_kib();
    rep.seconds = start.elapsed().as_secs_f64();
    rep.notes.push(format!(
        "{} programs; {} accepted, {} refused with an error, {} undecodable ({} damaged); \
         {} frames sent out; {} over gRPC",
        with_info.len(),
        tally.accepted,
        tally.refused,
        tally.undecodable,
        damaged,
        tally.frames,
        over_grpc
    ));
    rep
}
