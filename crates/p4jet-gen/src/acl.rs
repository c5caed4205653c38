//! `acl`: acl_firewall / acl_large. N ternary rules in `acl` (permit and
//! deny, unique priorities), UDP reflection source ranges in
//! `src_port_filter`, the port pairing in `port_map`; frames that hit
//! permit rules.
//!
//! Deny rules only match traffic the hit flows never send (sources in
//! 198.18.0.0/15, destination ports in [`BLOCKED`]) and hit flows use
//! ephemeral source ports, so a frame built from a permit rule is permitted
//! whichever rule wins.

use std::collections::HashSet;

use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use crate::classbench::{self, Header, Traffic, Verdicts};
use crate::flows::{
    TCP_SERVICES, UDP_SERVICES, ephemeral, frame_len, host_mac, in_prefix, internet_v4,
};
use crate::pkt::{self, ETH, ETHERTYPE_IPV4, IPV4, Ip4, L4, Mac, PROTO_ICMP, PROTO_TCP, PROTO_UDP};
use crate::prefix::prefix_mask;
use crate::{Commands, GenOptions, Scenario, Setup, Variant, fits};

const ACL: &str = "IngressImpl.acl";
const SRC_FILTER: &str = "IngressImpl.src_port_filter";
const PORT_MAP: &str = "IngressImpl.port_map";

/// Destination ports that only deny rules name.
pub const BLOCKED: &[u16] = &[23, 135, 137, 138, 139, 445, 1433, 3389];
/// Sources that only deny rules name (RFC 2544 benchmarking range).
const DENIED_NET: (u32, u8) = (0xc612_0000, 15);
/// Well-known service ports (class 1) that frames may use.
const WELL_KNOWN: &[u16] = &[22, 25, 53, 80, 110, 123, 143, 443, 993, 995];

/// What the `acl` table matches on, as the program computes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    src: u32,
    dst: u32,
    proto: u8,
    dport: u16,
    class: u8,
    flags: u8,
}

/// `port_class` of the program (const range entries, first wins).
fn class_of(dport: u16) -> u8 {
    match dport {
        0..=1023 => 1,
        8080..=8089 => 4,
        1024..=49151 => 2,
        _ => 3,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Rule {
    src: (u32, u32),
    dst: (u32, u32),
    proto: (u8, u8),
    dport: (u16, u16),
    class: (u8, u8),
    flags: (u8, u8),
}

impl Rule {
    fn matches(&self, k: &Key) -> bool {
        k.src & self.src.1 == self.src.0
            && k.dst & self.dst.1 == self.dst.0
            && k.proto & self.proto.1 == self.proto.0
            && k.dport & self.dport.1 == self.dport.0
            && k.class & self.class.1 == self.class.0
            && k.flags & self.flags.1 == self.flags.0
    }

    fn keys(&self) -> String {
        let ip = |(v, m): (u32, u32)| {
            if m == 0 {
                "0&&&0".to_string()
            } else {
                format!("{}&&&{}", pkt::fmt_ip4(v), pkt::fmt_ip4(m))
            }
        };
        format!(
            "{} {} {}&&&0x{:x} {}&&&0x{:x} {}&&&0x{:x} 0x{:02x}&&&0x{:02x}",
            ip(self.src),
            ip(self.dst),
            self.proto.0,
            self.proto.1,
            self.dport.0,
            self.dport.1,
            self.class.0,
            self.class.1,
            self.flags.0,
            self.flags.1
        )
    }
}

fn prefix(rng: &mut StdRng, lens: &[(u8, u32)], avoid: &[(u32, u8)]) -> (u32, u32) {
    let total: u32 = lens.iter().map(|l| l.1).sum();
    let mut x = rng.gen_range(0..total);
    let mut len = 32;
    for &(l, w) in lens {
        if x < w {
            len = l;
            break;
        }
        x -= w;
    }
    let m = prefix_mask(32, len) as u32;
    (internet_v4(rng, avoid) & m, m)
}

fn exact16(v: u16) -> (u16, u16) {
    (v, 0xffff)
}

fn permit_rule(rng: &mut StdRng) -> Rule {
    loop {
        let src = if rng.gen_bool(0.4) {
            (0, 0)
        } else {
            prefix(rng, &[(8, 10), (16, 25), (24, 40), (32, 25)], &[DENIED_NET])
        };
        let dst = if rng.gen_bool(0.2) {
            (0, 0)
        } else {
            prefix(rng, &[(16, 15), (24, 45), (32, 40)], &[])
        };
        let proto_pick = rng.gen_range(0..100);
        let proto = match proto_pick {
            0..60 => (PROTO_TCP, 0xff),
            60..85 => (PROTO_UDP, 0xff),
            85..90 => (PROTO_ICMP, 0xff),
            _ => (0, 0),
        };
        let (dport, class) = if proto.0 == PROTO_ICMP {
            ((0, 0), if rng.gen_bool(0.2) { (1, 0xff) } else { (0, 0) })
        } else {
            match rng.gen_range(0..10) {
                0..6 => {
                    let list = if proto.0 == PROTO_UDP {
                        UDP_SERVICES
                    } else {
                        TCP_SERVICES
                    };
                    (exact16(list[rng.gen_range(0..list.len())]), (0, 0))
                }
                6 => loop {
                    let p = rng.gen_range(1024..=49151u16);
                    if !BLOCKED.contains(&p) {
                        break (exact16(p), (0, 0));
                    }
                },
                _ => (
                    (0, 0),
                    if rng.gen_bool(0.4) {
                        (rng.gen_range(1..=4u8), 0xff)
                    } else {
                        (0, 0)
                    },
                ),
            }
        };
        let flags = if proto.0 == PROTO_TCP && rng.gen_bool(0.2) {
            (0x10, 0x10) // established
        } else {
            (0, 0)
        };
        if src.1 == 0 && dst.1 == 0 && dport.1 == 0 {
            continue; // too broad: keep some traffic that matches nothing
        }
        return Rule {
            src,
            dst,
            proto,
            dport,
            class,
            flags,
        };
    }
}

fn deny_rule(rng: &mut StdRng) -> Rule {
    let any = Rule {
        src: (0, 0),
        dst: (0, 0),
        proto: (0, 0),
        dport: (0, 0),
        class: (0, 0),
        flags: (0, 0),
    };
    if rng.gen_bool(0.5) {
        // a source inside the denied network
        let len = rng.gen_range(DENIED_NET.1..=32);
        let m = prefix_mask(32, len) as u32;
        let host = rng.r#gen::<u32>() & !(prefix_mask(32, DENIED_NET.1) as u32);
        let proto = match rng.gen_range(0..3) {
            0 => (PROTO_TCP, 0xff),
            1 => (PROTO_UDP, 0xff),
            _ => (0, 0),
        };
        Rule {
            src: ((DENIED_NET.0 | host) & m, m),
            proto,
            ..any
        }
    } else {
        // a blocked service, everywhere or towards some network
        let dst = if rng.gen_bool(0.5) {
            (0, 0)
        } else {
            prefix(rng, &[(16, 1), (24, 2), (32, 1)], &[])
        };
        let proto = if rng.gen_bool(0.5) {
            PROTO_TCP
        } else {
            PROTO_UDP
        };
        Rule {
            dst,
            proto: (proto, 0xff),
            dport: exact16(BLOCKED[rng.gen_range(0..BLOCKED.len())]),
            ..any
        }
    }
}

/// A frame key that `r` matches and no deny rule does.
fn key_for(r: &Rule, rng: &mut StdRng) -> Key {
    let proto = if r.proto.1 != 0 {
        r.proto.0
    } else if rng.gen_bool(0.7) {
        PROTO_TCP
    } else {
        PROTO_UDP
    };
    let src = loop {
        let a = if r.src.1 == 0 {
            internet_v4(rng, &[DENIED_NET])
        } else {
            r.src.0 | (rng.r#gen::<u32>() & !r.src.1)
        };
        if !in_prefix(a, DENIED_NET.0, DENIED_NET.1) {
            break a;
        }
    };
    let dst = if r.dst.1 == 0 {
        internet_v4(rng, &[])
    } else {
        r.dst.0 | (rng.r#gen::<u32>() & !r.dst.1)
    };
    let dport = if proto == PROTO_ICMP {
        0
    } else if r.dport.1 != 0 {
        r.dport.0
    } else if r.class.1 != 0 {
        loop {
            let p = match r.class.0 {
                1 => WELL_KNOWN[rng.gen_range(0..WELL_KNOWN.len())],
                2 => rng.gen_range(1024..=49151),
                3 => rng.gen_range(49152..=65535),
                _ => rng.gen_range(8080..=8089),
            };
            if class_of(p) == r.class.0 && !BLOCKED.contains(&p) {
                break p;
            }
        }
    } else if proto == PROTO_UDP {
        UDP_SERVICES[rng.gen_range(0..UDP_SERVICES.len())]
    } else {
        TCP_SERVICES[rng.gen_range(0..TCP_SERVICES.len())]
    };
    let flags = if proto != PROTO_TCP {
        0
    } else if r.flags.1 != 0 {
        [0x10, 0x18][rng.gen_range(0..2)]
    } else {
        [0x02, 0x10, 0x18, 0x18][rng.gen_range(0..4)]
    };
    Key {
        src,
        dst,
        proto,
        dport,
        class: class_of(dport),
        flags,
    }
}

struct Flow {
    key: Key,
    sport: u16,
    mac: Mac,
}

struct Acl {
    hits: Vec<Flow>,
    misses: Vec<Flow>,
    /// ClassBench profiles: whether the program forwards each of `hits`
    verdicts: Option<Vec<bool>>,
    /// `hits` holds one header per frame (random and locality traffic)
    per_frame: bool,
}

impl Acl {
    fn flow(&self, flow: usize, miss: bool, seq: u32) -> &Flow {
        if miss {
            &self.misses[flow]
        } else if self.per_frame {
            &self.hits[seq as usize]
        } else {
            &self.hits[flow]
        }
    }
}

impl Scenario for Acl {
    fn verdict(&self, flow: usize, seq: u32) -> Option<bool> {
        let i = if self.per_frame { seq as usize } else { flow };
        self.verdicts.as_ref().and_then(|v| v.get(i).copied())
    }

    fn build(&self, flow: usize, miss: bool, size: usize, seq: u32, _rng: &mut StdRng) -> Vec<u8> {
        let f = self.flow(flow, miss, seq);
        let k = &f.key;
        let l4 = match k.proto {
            PROTO_TCP => L4::Tcp {
                sport: f.sport,
                dport: k.dport,
                flags: k.flags,
            },
            PROTO_UDP => L4::Udp {
                sport: f.sport,
                dport: k.dport,
            },
            _ => L4::Icmp,
        };
        let ip = Ip4 {
            src: k.src,
            dst: k.dst,
            ttl: 64,
            id: seq as u16,
        };
        let len = frame_len(size, ETH + IPV4 + l4.header_len());
        pkt::ethernet(
            pkt::mac(0x00cc_0000_0000),
            f.mac,
            ETHERTYPE_IPV4,
            &pkt::ipv4_l4(&ip, &l4, len - ETH, seq),
        )
    }
}

pub(crate) fn setup(o: &GenOptions, rng: &mut StdRng) -> Result<Setup, String> {
    let max = match o.variant {
        Variant::Base => 1024,
        Variant::Large => 1 << 20,
    };
    fits(ACL, o.entries, max, "ACL rules")?;
    let mut cmds = Commands::default();
    for p in 0..o.ports {
        let peer = if p ^ 1 < o.ports { p ^ 1 } else { p };
        cmds.add(PORT_MAP, "forward", &p.to_string(), &peer.to_string());
    }
    // UDP reflection sources (and TCP source port 0) are denied; the corpus
    // program (not acl_large) can punch holes with allow_source.
    let filters: &[(&str, u8, u16, u16, u16)] = &[
        ("deny_source", PROTO_UDP, 0, 1023, 100),
        ("deny_source", PROTO_UDP, 1900, 1900, 101),
        ("deny_source", PROTO_UDP, 11211, 11211, 102),
        ("deny_source", PROTO_TCP, 0, 0, 103),
        ("allow_source", PROTO_UDP, 53, 53, 10),
        ("allow_source", PROTO_UDP, 123, 123, 11),
    ];
    for &(action, proto, lo, hi, prio) in filters {
        if action == "allow_source" && o.variant == Variant::Large {
            continue;
        }
        cmds.add(
            SRC_FILTER,
            action,
            &format!("{proto} {lo}->{hi}"),
            &prio.to_string(),
        );
    }

    if let Some(p) = o.acl_profile {
        return profile_setup(o, p, cmds, rng);
    }
    if o.traffic != Traffic::Flows {
        return Err("--traffic random|locality needs --profile".into());
    }
    let n = o.entries;
    let n_deny = if n >= 4 { n * 15 / 100 } else { 0 };
    let mut seen = HashSet::with_capacity(n);
    let mut rules: Vec<(Rule, bool)> = Vec::with_capacity(n);
    let mut tries = 0usize;
    while rules.len() < n {
        tries += 1;
        if tries > 100 * n + 10_000 {
            return Err(format!("could not draw {n} distinct ACL rules"));
        }
        let permit = rules.len() >= n_deny;
        let r = if permit {
            permit_rule(rng)
        } else {
            deny_rule(rng)
        };
        if seen.insert(r) {
            rules.push((r, permit));
        }
    }
    rules.shuffle(rng);
    let mut prios: Vec<usize> = (1..=n).collect();
    prios.shuffle(rng);
    for ((r, permit), prio) in rules.iter().zip(&prios) {
        let action = if *permit { "permit" } else { "deny" };
        cmds.add(ACL, action, &r.keys(), &prio.to_string());
    }
    let permits: Vec<Rule> = rules.iter().filter(|r| r.1).map(|r| r.0).collect();

    let mut hits = Vec::with_capacity(o.flows);
    let mut used = HashSet::new();
    for _ in 0..o.flows {
        let i = rng.gen_range(0..permits.len());
        used.insert(i);
        hits.push(Flow {
            key: key_for(&permits[i], rng),
            sport: ephemeral(rng),
            mac: host_mac(rng),
        });
    }
    let mut misses = Vec::new();
    for _ in 0..o.miss_flows() {
        let mut found = None;
        for _ in 0..10_000 {
            let src = if rng.gen_bool(0.5) {
                DENIED_NET.0 | (rng.r#gen::<u32>() & !(prefix_mask(32, DENIED_NET.1) as u32))
            } else {
                internet_v4(rng, &[])
            };
            let (proto, dport) = if rng.gen_bool(0.5) {
                (
                    PROTO_TCP,
                    *[23u16, 445, 3389, 8000, 9000][..]
                        .choose(rng)
                        .unwrap_or(&23),
                )
            } else {
                (PROTO_UDP, rng.gen_range(1024..=65535))
            };
            let flags = if proto == PROTO_TCP { 0x02 } else { 0 };
            let key = Key {
                src,
                dst: internet_v4(rng, &[]),
                proto,
                dport,
                class: class_of(dport),
                flags,
            };
            if !permits.iter().any(|r| r.matches(&key)) {
                found = Some(key);
                break;
            }
        }
        let key = found.ok_or("the permit rules match (almost) everything: cannot make misses")?;
        misses.push(Flow {
            key,
            sport: ephemeral(rng),
            mac: host_mac(rng),
        });
    }
    Ok(Setup {
        cmds,
        notes: vec![
            format!(
                "{} permit and {} deny rules with unique priorities 1..={n}; hit flows use {} of the permit rules",
                n - n_deny,
                n_deny,
                used.len()
            ),
            "ternary keys: source/destination prefixes (/8../32 or any), protocol, destination port or port class (from the program's port_class range table), TCP ACK bit".into(),
            format!(
                "src_port_filter: UDP reflection source ranges denied{}; flows use ephemeral source ports",
                if o.variant == Variant::Base { ", holes for 53 and 123" } else { "" }
            ),
            format!("port_map pairs ports 0<->1, 2<->3, ... of ports 0..={}", o.ports - 1),
        ],
        hit_flows: hits.len(),
        miss_flows: misses.len(),
        scenario: Box::new(Acl {
            hits,
            misses,
            verdicts: None,
            per_frame: false,
        }),
    })
}

/// Whether `src_port_filter` (as filled above) drops the packet.
fn source_denied(variant: Variant, proto: u8, sport: u16) -> bool {
    match proto {
        PROTO_UDP => {
            let allowed = variant == Variant::Base && (sport == 53 || sport == 123);
            !allowed && (sport <= 1023 || sport == 1900 || sport == 11211)
        }
        PROTO_TCP => sport == 0,
        _ => false,
    }
}

/// `--profile`: a ClassBench-style rule set and its traffic.
fn profile_setup(
    o: &GenOptions,
    profile: classbench::AclProfile,
    mut cmds: Commands,
    rng: &mut StdRng,
) -> Result<Setup, String> {
    if o.miss_ratio > 0.0 {
        return Err("--miss-ratio does not apply to --profile rule sets: whether a frame is forwarded is decided by the rules".into());
    }
    let n = o.entries;
    let mut next = classbench::rules(profile);
    let mut rules: Vec<(classbench::CbRule, usize)> = Vec::new();
    let mut total = 0usize;
    let mut tries = 0usize;
    while total < n {
        tries += 1;
        if tries > 100 * n + 10_000 {
            return Err(format!("could not draw {n} ACL entries"));
        }
        let r = next(rng);
        let k = classbench::range_prefixes(r.dport.0, r.dport.1).len();
        if total + k > n {
            continue; // a range that does not fit the last slots: draw another
        }
        total += k;
        rules.push((r, k));
    }
    // first match wins in an ACL: the more specific address pairs first,
    // the broad rules (and catch-alls) last, as administrators write them
    rules.sort_by_key(|(r, _)| std::cmp::Reverse(u32::from(r.src.1) + u32::from(r.dst.1)));
    let expanded = rules.iter().filter(|r| r.1 > 1).count();
    let mut entries: Vec<(classbench::Entry, u32, bool)> = Vec::with_capacity(n);
    for (i, (r, _)) in rules.iter().enumerate() {
        let permit = rng.gen_bool(0.8);
        entries.extend(
            classbench::entries(r)
                .into_iter()
                .map(|e| (e, i as u32 + 1, permit)),
        );
    }
    let rules: Vec<classbench::CbRule> = rules.into_iter().map(|r| r.0).collect();
    for (e, prio, permit) in &entries {
        let r = Rule {
            src: e.src,
            dst: e.dst,
            proto: e.proto,
            dport: e.dport,
            class: (0, 0),
            flags: e.flags,
        };
        let action = if *permit { "permit" } else { "deny" };
        cmds.add(ACL, action, &r.keys(), &prio.to_string());
    }
    let verdicts = Verdicts::new(&entries);
    let flow_of = |h: Header, sport: u16, rng: &mut StdRng| Flow {
        key: Key {
            src: h.src,
            dst: h.dst,
            proto: h.proto,
            dport: h.dport,
            class: if h.proto == PROTO_ICMP {
                0
            } else {
                class_of(h.dport)
            },
            flags: h.flags,
        },
        sport,
        mac: host_mac(rng),
    };
    let mut hits = Vec::new();
    let per_frame = o.traffic != Traffic::Flows;
    match o.traffic {
        Traffic::Flows => {
            for _ in 0..o.flows {
                let r = rules[rng.gen_range(0..rules.len())];
                let h = classbench::header_in(&r, rng);
                let sport = ephemeral(rng);
                hits.push(flow_of(h, sport, rng));
            }
        }
        Traffic::Random => {
            for _ in 0..o.packets {
                let h = classbench::random_header(rng);
                let sport = rng.r#gen();
                hits.push(flow_of(h, sport, rng));
            }
        }
        Traffic::Locality => {
            while hits.len() < o.packets {
                let r = rules[rng.gen_range(0..rules.len())];
                let h = classbench::header_in(&r, rng);
                let sport = ephemeral(rng);
                let f = flow_of(h, sport, rng);
                for _ in 0..classbench::burst(rng).min(o.packets - hits.len()) {
                    hits.push(Flow { ..f });
                }
            }
        }
    }
    let v: Vec<bool> = hits
        .iter()
        .map(|f| {
            let k = &f.key;
            // ICMP: the program's port is 0 and port_class misses (class 0)
            let dport = if k.proto == PROTO_ICMP { 0 } else { k.dport };
            !source_denied(o.variant, k.proto, f.sport)
                && verdicts.permits(&Header {
                    src: k.src,
                    dst: k.dst,
                    proto: k.proto,
                    dport,
                    flags: k.flags,
                })
        })
        .collect();
    let permitted = v.iter().filter(|x| **x).count();
    Ok(Setup {
        cmds,
        notes: vec![
            format!(
                "ClassBench profile {}: {} rules as {} entries ({} rules with a destination port range written as several ternary prefixes), priority = rule number; {} distinct masks",
                profile.name(),
                rules.len(),
                entries.len(),
                expanded,
                verdicts.masks()
            ),
            format!(
                "traffic {}: {} of {} {} permitted by the rules",
                o.traffic.name(),
                permitted,
                hits.len(),
                if per_frame { "frames" } else { "flows" }
            ),
            format!(
                "port_map pairs ports 0<->1, 2<->3, ... of ports 0..={}",
                o.ports - 1
            ),
        ],
        hit_flows: if per_frame { o.packets } else { hits.len() },
        miss_flows: 0,
        scenario: Box::new(Acl {
            hits,
            misses: Vec::new(),
            verdicts: Some(v),
            per_frame,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn frames_of_permit_rules_match_them_and_no_deny_rule() {
        let mut rng = StdRng::seed_from_u64(9);
        let denies: Vec<Rule> = (0..500).map(|_| deny_rule(&mut rng)).collect();
        for _ in 0..2000 {
            let r = permit_rule(&mut rng);
            let k = key_for(&r, &mut rng);
            assert!(r.matches(&k), "{r:?} {k:?}");
            assert!(!denies.iter().any(|d| d.matches(&k)), "{k:?}");
        }
    }
}
