//! ClassBench-style ACL rule sets (`p4jet gen acl --profile acl1|fw1|ipc1`)
//! and the traffic to run through them (`--traffic random|locality`).
//!
//! Taylor and Turner's ClassBench (INFOCOM 2005, ToN 2007) describes a rule
//! set by distributions: the protocol mix, per protocol the share of each
//! *port pair class* (each port is a wildcard WC, the high ports HI =
//! 1024:65535, the low ports LO = 0:1023, an arbitrary range AR or an exact
//! port EM), the popular exact ports and arbitrary ranges, the joint
//! distribution of source and destination prefix lengths, and how prefixes
//! nest and cluster. The profiles below carry those statistics for the
//! three seed families the issue names:
//!
//! * `acl1`: from the published `acl1` seed parameters (733 rules of a
//!   router ACL): TCP 87 %, unspecified protocol 8.5 %, ICMP 3 %, UDP 1 %;
//!   source port always WC; destination port EM 58 %, WC 30 %, AR 12 %;
//!   three quarters of the rules name /32 → /32 host pairs; the exact ports
//!   and ranges are the seed's most common ones.
//! * `fw1`, `ipc1`: approximations of the characteristics the ClassBench
//!   papers report for the firewall and IP-chain families (their seed files
//!   were not at hand): firewalls have many wildcard source or destination
//!   addresses (`0/0 → host`, `net → 0/0`) and wildcard or exact ports;
//!   IP chains mix host pairs, subnets and wildcards with more UDP and ICMP.
//!
//! acl_large's `acl` table has no source-port field and matches the
//! destination port ternary: a range is written as the prefixes that cover
//! it, as a controller does for a ternary field (HI: 6 entries, LO: 1, an
//! arbitrary range up to 30), every one with the rule's priority. The
//! source-port classes of a profile therefore do not appear. Rules are
//! numbered in order and their priority is their number (ClassBench's
//! order: the first rule wins).

use std::collections::HashMap;

use rand::Rng;
use rand::rngs::StdRng;

use crate::pkt::{PROTO_ICMP, PROTO_TCP, PROTO_UDP};
use crate::prefix::prefix_mask;

/// A ClassBench rule-set family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum AclProfile {
    Acl1,
    Fw1,
    Ipc1,
}

impl AclProfile {
    pub fn name(self) -> &'static str {
        match self {
            AclProfile::Acl1 => "acl1",
            AclProfile::Fw1 => "fw1",
            AclProfile::Ipc1 => "ipc1",
        }
    }

    fn stats(self) -> &'static Profile {
        match self {
            AclProfile::Acl1 => &ACL1,
            AclProfile::Fw1 => &FW1,
            AclProfile::Ipc1 => &IPC1,
        }
    }
}

/// What the trace of an ACL benchmark looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, clap::ValueEnum)]
pub enum Traffic {
    /// `--flows` flows, each built to match a rule (the default).
    #[default]
    Flows,
    /// Every frame a new header: addresses uniform over the whole IPv4
    /// space, destination port uniform, protocol TCP/UDP/ICMP 70/25/5.
    Random,
    /// ClassBench's trace generator: headers drawn from random rules, each
    /// repeated a Pareto-distributed number of times (a = 1, b = 0.1).
    Locality,
}

impl Traffic {
    pub fn name(self) -> &'static str {
        match self {
            Traffic::Flows => "flows",
            Traffic::Random => "random",
            Traffic::Locality => "locality",
        }
    }
}

/// Destination port class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Port {
    Wc,
    Hi,
    Lo,
    Ar,
    Em,
}

const PORT_CLASSES: [Port; 5] = [Port::Wc, Port::Hi, Port::Lo, Port::Ar, Port::Em];

/// One family's statistics.
struct Profile {
    /// protocol (0: unspecified), weight, weights of the destination port
    /// classes WC, HI, LO, AR, EM for it
    protos: &'static [(u8, f64, [f64; 5])],
    /// (source prefix length, destination prefix length, weight)
    pairs: &'static [(u8, u8, f64)],
    /// exact destination ports and their weights
    em: &'static [(u16, f64)],
    /// arbitrary destination ranges and their weights
    ar: &'static [(u16, u16, f64)],
    /// TCP flag matches (value, mask) and their weights
    flags: &'static [(u8, u8, f64)],
    /// probability that a new prefix is placed inside the network of an
    /// earlier one (rule overlap and address clustering)
    cluster: f64,
}

static ACL1: Profile = Profile {
    protos: &[
        (0, 0.0846, [1.0, 0.0, 0.0, 0.0, 0.0]),
        (PROTO_ICMP, 0.0314, [1.0, 0.0, 0.0, 0.0, 0.0]),
        (PROTO_TCP, 0.8731, [0.2156, 0.0, 0.0, 0.1312, 0.6531]),
        (PROTO_UDP, 0.0109, [0.0, 0.0, 0.0, 0.125, 0.875]),
    ],
    // the seed's per-class prefix-pair tables, weighted by the class shares
    pairs: &[
        (32, 32, 0.7505),
        (32, 22, 0.0492),
        (23, 32, 0.0474),
        (32, 24, 0.0340),
        (31, 32, 0.0271),
        (23, 16, 0.0164),
        (30, 22, 0.0136),
        (32, 31, 0.0108),
        (32, 30, 0.0070),
        (31, 22, 0.0068),
        (30, 32, 0.0055),
        (23, 31, 0.0041),
        (23, 0, 0.0040),
        (23, 8, 0.0040),
        (23, 28, 0.0027),
        (31, 24, 0.0013),
        (23, 15, 0.0014),
        (23, 24, 0.0014),
        (23, 25, 0.0014),
        (23, 26, 0.0014),
        (0, 0, 0.0014),
        (0, 8, 0.0014),
        (8, 0, 0.0014),
        (0, 13, 0.0014),
    ],
    em: &[
        (1521, 0.188),
        (1526, 0.054),
        (1221, 0.042),
        (1433, 0.035),
        (1525, 0.028),
        (135, 0.028),
        (14753, 0.028),
        (1712, 0.024),
        (1711, 0.024),
        (1704, 0.024),
        (1708, 0.024),
        (5555, 0.021),
        (1705, 0.021),
        (6000, 0.021),
        (20, 0.021),
        (21, 0.021),
        (1724, 0.021),
        (1717, 0.021),
        (1707, 0.019),
        (1733, 0.019),
        (1706, 0.019),
        (5540, 0.019),
        (5541, 0.019),
        (1734, 0.016),
        (1489, 0.014),
        (1490, 0.014),
        (5632, 0.014),
        (5631, 0.014),
        (6789, 0.012),
        (2121, 0.009),
        (443, 0.005),
        (80, 0.005),
    ],
    ar: &[
        (1600, 1649, 0.082),
        (1300, 1349, 0.071),
        (1300, 1350, 0.071),
        (7500, 7599, 0.047),
        (2200, 2210, 0.047),
        (1025, 65535, 0.035),
        (1700, 1750, 0.035),
        (5001, 65535, 0.035),
        (32200, 32207, 0.035),
        (8000, 8100, 0.035),
        (61700, 61709, 0.024),
        (61500, 61509, 0.024),
        (61600, 61609, 0.024),
        (61900, 61909, 0.024),
        (62000, 62009, 0.024),
        (61100, 61119, 0.024),
        (1700, 1720, 0.024),
        (20000, 20010, 0.024),
        (1300, 1399, 0.012),
    ],
    flags: &[(0, 0, 0.8125), (0x00, 0x02, 0.094), (0x10, 0x10, 0.094)],
    cluster: 0.6,
};

static FW1: Profile = Profile {
    protos: &[
        (0, 0.08, [1.0, 0.0, 0.0, 0.0, 0.0]),
        (PROTO_ICMP, 0.02, [1.0, 0.0, 0.0, 0.0, 0.0]),
        (PROTO_TCP, 0.70, [0.38, 0.06, 0.01, 0.06, 0.49]),
        (PROTO_UDP, 0.20, [0.40, 0.04, 0.01, 0.05, 0.50]),
    ],
    pairs: &[
        (0, 32, 0.22),
        (32, 32, 0.16),
        (32, 0, 0.13),
        (24, 32, 0.10),
        (0, 24, 0.08),
        (32, 24, 0.05),
        (24, 0, 0.05),
        (0, 0, 0.03),
        (16, 32, 0.04),
        (0, 16, 0.04),
        (32, 16, 0.03),
        (16, 0, 0.02),
        (24, 24, 0.03),
        (8, 32, 0.02),
    ],
    em: &[
        (80, 0.20),
        (443, 0.14),
        (53, 0.08),
        (25, 0.06),
        (22, 0.06),
        (21, 0.04),
        (23, 0.03),
        (110, 0.03),
        (123, 0.03),
        (161, 0.03),
        (389, 0.03),
        (445, 0.03),
        (1433, 0.03),
        (3389, 0.03),
        (8080, 0.04),
        (135, 0.03),
        (137, 0.02),
        (139, 0.02),
        (5060, 0.02),
        (993, 0.02),
    ],
    ar: &[
        (6000, 6063, 0.2),
        (137, 139, 0.2),
        (5000, 5100, 0.15),
        (1024, 5000, 0.15),
        (8000, 8999, 0.15),
        (33434, 33534, 0.15),
    ],
    flags: &[(0, 0, 0.9), (0x10, 0x10, 0.1)],
    cluster: 0.5,
};

static IPC1: Profile = Profile {
    protos: &[
        (0, 0.14, [1.0, 0.0, 0.0, 0.0, 0.0]),
        (PROTO_ICMP, 0.10, [1.0, 0.0, 0.0, 0.0, 0.0]),
        (PROTO_TCP, 0.55, [0.30, 0.05, 0.05, 0.06, 0.54]),
        (PROTO_UDP, 0.21, [0.30, 0.05, 0.05, 0.05, 0.55]),
    ],
    pairs: &[
        (32, 32, 0.30),
        (24, 32, 0.10),
        (32, 24, 0.10),
        (0, 32, 0.09),
        (32, 0, 0.09),
        (24, 24, 0.06),
        (16, 32, 0.05),
        (16, 16, 0.04),
        (0, 0, 0.03),
        (8, 32, 0.04),
        (32, 8, 0.04),
        (0, 24, 0.03),
        (24, 0, 0.03),
    ],
    em: &[
        (80, 0.18),
        (53, 0.12),
        (443, 0.10),
        (25, 0.06),
        (22, 0.06),
        (123, 0.06),
        (161, 0.05),
        (162, 0.04),
        (514, 0.04),
        (21, 0.04),
        (110, 0.04),
        (143, 0.04),
        (2049, 0.04),
        (111, 0.04),
        (8080, 0.05),
        (3306, 0.04),
    ],
    ar: &[
        (6000, 6063, 0.25),
        (33434, 33534, 0.25),
        (1024, 4999, 0.25),
        (5900, 5999, 0.25),
    ],
    flags: &[(0, 0, 0.85), (0x10, 0x10, 0.1), (0x00, 0x02, 0.05)],
    cluster: 0.5,
};

fn pick<T: Copy>(rng: &mut StdRng, items: &[T], weight: impl Fn(&T) -> f64) -> T {
    let total: f64 = items.iter().map(&weight).sum();
    let mut x = rng.r#gen::<f64>() * total;
    for it in items {
        x -= weight(it);
        if x < 0.0 {
            return *it;
        }
    }
    items[items.len() - 1]
}

/// A ClassBench rule as acl_large can express it (before the destination
/// port range becomes ternary entries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CbRule {
    pub src: (u32, u8),
    pub dst: (u32, u8),
    /// `None`: any protocol
    pub proto: Option<u8>,
    /// inclusive destination port range
    pub dport: (u16, u16),
    /// TCP flags (value, mask)
    pub flags: (u8, u8),
}

impl CbRule {
    /// The destination port range as (value, mask) prefixes covering it.
    pub fn dport_prefixes(&self) -> Vec<(u16, u16)> {
        range_prefixes(self.dport.0, self.dport.1)
    }
}

/// The fewest aligned power-of-two blocks covering `[lo, hi]`, as
/// (value, mask) over 16 bits.
pub(crate) fn range_prefixes(lo: u16, hi: u16) -> Vec<(u16, u16)> {
    let mut out = Vec::new();
    let (mut lo, hi) = (u32::from(lo), u32::from(hi));
    while lo <= hi {
        // the largest block starting at lo that stays within hi
        let mut size = if lo == 0 {
            1 << 16
        } else {
            lo & lo.wrapping_neg()
        };
        while lo + size - 1 > hi {
            size >>= 1;
        }
        let mask = !(size - 1) & 0xffff;
        out.push((lo as u16, mask as u16));
        lo += size;
    }
    out
}

/// Draws prefixes of given lengths, clustered: a new prefix often shares
/// the leading bits of an earlier one (ClassBench's nesting and skew make
/// real rule sets overlap this way).
struct Addresses {
    seen: Vec<u32>,
    cluster: f64,
}

impl Addresses {
    fn draw(&mut self, rng: &mut StdRng, len: u8) -> u32 {
        if len == 0 {
            return 0;
        }
        let a = if !self.seen.is_empty() && rng.gen_bool(self.cluster) {
            let base = self.seen[rng.gen_range(0..self.seen.len())];
            // keep 8..=24 leading bits of an earlier address
            let keep = rng.gen_range(8..=24u8);
            let m = prefix_mask(32, keep) as u32;
            (base & m) | (rng.r#gen::<u32>() & !m)
        } else {
            rng.r#gen::<u32>()
        };
        self.seen.push(a);
        a & prefix_mask(32, len) as u32
    }
}

/// Draws `n` rules of a profile. Rules may repeat another rule's match (a
/// real ACL has shadowed rules too); each gets its own priority.
pub(crate) fn rules(profile: AclProfile) -> impl FnMut(&mut StdRng) -> CbRule {
    let p = profile.stats();
    let mut src = Addresses {
        seen: Vec::new(),
        cluster: p.cluster,
    };
    let mut dst = Addresses {
        seen: Vec::new(),
        cluster: p.cluster,
    };
    move |rng: &mut StdRng| {
        let (proto, _, classes) = pick(rng, p.protos, |x| x.1);
        let (sl, dl, _) = pick(rng, p.pairs, |x| x.2);
        let class = {
            let i = pick(rng, &[0usize, 1, 2, 3, 4], |i| classes[*i]);
            PORT_CLASSES[i]
        };
        let dport = match class {
            Port::Wc => (0, 0xffff),
            Port::Hi => (1024, 0xffff),
            Port::Lo => (0, 1023),
            Port::Ar => {
                let (lo, hi, _) = pick(rng, p.ar, |x| x.2);
                (lo, hi)
            }
            Port::Em => {
                let (v, _) = pick(rng, p.em, |x| x.1);
                (v, v)
            }
        };
        let flags = if proto == PROTO_TCP {
            let (v, m, _) = pick(rng, p.flags, |x| x.2);
            (v, m)
        } else {
            (0, 0)
        };
        CbRule {
            src: (src.draw(rng, sl), sl),
            dst: (dst.draw(rng, dl), dl),
            proto: (proto != 0).then_some(proto),
            dport,
            flags,
        }
    }
}

/// One ternary entry of acl_large's `acl` (all fields (value, mask)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Entry {
    pub src: (u32, u32),
    pub dst: (u32, u32),
    pub proto: (u8, u8),
    pub dport: (u16, u16),
    pub flags: (u8, u8),
}

/// What the `acl` table sees of a packet (port class is not matched by
/// the profiles' rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Header {
    pub src: u32,
    pub dst: u32,
    pub proto: u8,
    pub dport: u16,
    pub flags: u8,
}

impl Entry {
    fn mask(&self) -> Masks {
        (
            self.src.1,
            self.dst.1,
            self.proto.1,
            self.dport.1,
            self.flags.1,
        )
    }
}

/// Entries expanded from `r`.
pub(crate) fn entries(r: &CbRule) -> Vec<Entry> {
    let pm = |l: u8| prefix_mask(32, l) as u32;
    r.dport_prefixes()
        .into_iter()
        .map(|dport| Entry {
            src: (r.src.0, pm(r.src.1)),
            dst: (r.dst.0, pm(r.dst.1)),
            proto: r.proto.map_or((0, 0), |p| (p, 0xff)),
            dport,
            flags: r.flags,
        })
        .collect()
}

/// A header that `r` matches (a random point of each of its fields).
pub(crate) fn header_in(r: &CbRule, rng: &mut StdRng) -> Header {
    let inside = |(v, l): (u32, u8), rng: &mut StdRng| {
        let m = prefix_mask(32, l) as u32;
        v | (rng.r#gen::<u32>() & !m)
    };
    let proto = r.proto.unwrap_or_else(|| {
        if rng.gen_bool(0.7) {
            PROTO_TCP
        } else {
            PROTO_UDP
        }
    });
    let dport = if proto == PROTO_ICMP {
        0
    } else {
        rng.gen_range(r.dport.0..=r.dport.1)
    };
    let flags = if proto == PROTO_TCP {
        (rng.r#gen::<u8>() & !r.flags.1) | r.flags.0
    } else {
        0
    };
    Header {
        src: inside(r.src, rng),
        dst: inside(r.dst, rng),
        proto,
        dport,
        flags,
    }
}

/// A header drawn uniformly: any IPv4 addresses, TCP/UDP/ICMP 70/25/5, any
/// destination port, common TCP flag combinations.
pub(crate) fn random_header(rng: &mut StdRng) -> Header {
    let proto = match rng.gen_range(0..100) {
        0..70 => PROTO_TCP,
        70..95 => PROTO_UDP,
        _ => PROTO_ICMP,
    };
    Header {
        src: rng.r#gen(),
        dst: rng.r#gen(),
        proto,
        dport: if proto == PROTO_ICMP { 0 } else { rng.r#gen() },
        flags: if proto == PROTO_TCP {
            [0x02, 0x10, 0x18, 0x11][rng.gen_range(0..4)]
        } else {
            0
        },
    }
}

/// ClassBench's burst length: Pareto with a = 1, b = 0.1, as a count >= 1.
pub(crate) fn burst(rng: &mut StdRng) -> usize {
    let u: f64 = rng.gen_range(1e-9..1.0);
    ((0.1 / u).ceil() as usize).clamp(1, 10_000)
}

/// The entries grouped by mask (a small tuple-space classifier), to decide
/// what the program does with each generated header.
/// Masks of (source, destination, protocol, destination port, flags).
type Masks = (u32, u32, u8, u16, u8);
/// Masked header -> best (priority, permit) among the entries of one mask.
type Group = HashMap<Header, (u32, bool)>;

pub(crate) struct Verdicts {
    groups: Vec<(Masks, Group)>,
}

impl Verdicts {
    /// `entries`: (entry, priority, permit).
    pub fn new(entries: &[(Entry, u32, bool)]) -> Verdicts {
        let mut by: HashMap<Masks, Group> = HashMap::new();
        for (e, prio, permit) in entries {
            let k = Header {
                src: e.src.0,
                dst: e.dst.0,
                proto: e.proto.0,
                dport: e.dport.0,
                flags: e.flags.0,
            };
            let slot = by
                .entry(e.mask())
                .or_default()
                .entry(k)
                .or_insert((*prio, *permit));
            if *prio < slot.0 {
                *slot = (*prio, *permit);
            }
        }
        let mut groups: Vec<_> = by.into_iter().collect();
        groups.sort_by_key(|g| g.0);
        Verdicts { groups }
    }

    /// Whether the best matching entry permits `h` (no match: the table's
    /// default, deny).
    pub fn permits(&self, h: &Header) -> bool {
        let mut best: Option<(u32, bool)> = None;
        for ((ms, md, mp, mport, mf), map) in &self.groups {
            let k = Header {
                src: h.src & ms,
                dst: h.dst & md,
                proto: h.proto & mp,
                dport: h.dport & mport,
                flags: h.flags & mf,
            };
            if let Some(&(p, permit)) = map.get(&k)
                && best.is_none_or(|b| p < b.0)
            {
                best = Some((p, permit));
            }
        }
        best.is_some_and(|b| b.1)
    }

    pub fn masks(&self) -> usize {
        self.groups.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn range_prefixes_cover_exactly() {
        let mut rng = StdRng::seed_from_u64(3);
        let mut cases = vec![
            (0u16, 65535u16),
            (1024, 65535),
            (0, 1023),
            (1600, 1649),
            (5, 5),
        ];
        for _ in 0..200 {
            let a: u16 = rng.r#gen();
            let b: u16 = rng.r#gen();
            cases.push((a.min(b), a.max(b)));
        }
        for (lo, hi) in cases {
            let ps = range_prefixes(lo, hi);
            assert!(ps.len() <= 30, "{lo}..{hi}: {}", ps.len());
            for x in [
                lo,
                hi,
                lo.saturating_sub(1),
                hi.saturating_add(1),
                (lo / 2 + hi / 2),
            ] {
                let inside = (lo..=hi).contains(&x);
                let n = ps.iter().filter(|(v, m)| x & m == *v).count();
                assert_eq!(n, usize::from(inside), "{lo}..{hi} at {x}: {ps:?}");
            }
        }
        assert_eq!(range_prefixes(1024, 65535).len(), 6);
        assert_eq!(range_prefixes(0, 1023).len(), 1);
    }

    #[test]
    fn headers_drawn_from_a_rule_match_its_entries() {
        let mut rng = StdRng::seed_from_u64(4);
        for p in [AclProfile::Acl1, AclProfile::Fw1, AclProfile::Ipc1] {
            let mut next = rules(p);
            for _ in 0..500 {
                let r = next(&mut rng);
                let h = header_in(&r, &mut rng);
                let es = entries(&r);
                let v = Verdicts::new(&es.iter().map(|e| (*e, 1, true)).collect::<Vec<_>>());
                assert!(v.permits(&h), "{r:?} {h:?}");
            }
        }
    }
}
