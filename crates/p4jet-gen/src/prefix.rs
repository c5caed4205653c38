//! Route sets with a realistic prefix-length distribution.
//!
//! The IPv4 and IPv6 shares are rounded from the per-length breakdowns of the
//! global BGP table published in the CIDR Report / potaroo.net BGP table
//! reports and in APNIC's yearly "BGP in 20xx" reports (2023–2024 tables):
//! see docs/gen.md. Lengths not announced in the global table (IPv4 /25–/32,
//! IPv6 /49–/128) get a small share, as in a provider FIB that also carries
//! customer and internal routes.

use std::collections::HashSet;

use rand::Rng;
use rand::rngs::StdRng;

/// IPv4 prefix lengths and their share in percent.
pub const IPV4_LENGTHS: &[(u8, f64)] = &[
    (8, 0.02),
    (9, 0.02),
    (10, 0.04),
    (11, 0.06),
    (12, 0.08),
    (13, 0.10),
    (14, 0.14),
    (15, 0.14),
    (16, 1.4),
    (17, 0.8),
    (18, 1.2),
    (19, 2.5),
    (20, 4.0),
    (21, 4.5),
    (22, 12.0),
    (23, 10.0),
    (24, 60.0),
    (25, 0.4),
    (26, 0.4),
    (27, 0.4),
    (28, 0.4),
    (29, 0.4),
    (30, 0.5),
    (31, 0.1),
    (32, 0.4),
];

/// IPv6 prefix lengths and their share in percent.
pub const IPV6_LENGTHS: &[(u8, f64)] = &[
    (29, 3.0),
    (30, 0.5),
    (31, 0.3),
    (32, 12.0),
    (33, 0.6),
    (34, 0.6),
    (35, 0.4),
    (36, 4.0),
    (37, 0.3),
    (38, 0.5),
    (39, 0.3),
    (40, 6.0),
    (41, 0.3),
    (42, 0.6),
    (43, 0.3),
    (44, 7.0),
    (45, 0.6),
    (46, 1.2),
    (47, 0.8),
    (48, 44.0),
    (52, 0.8),
    (56, 4.9),
    (60, 0.6),
    (62, 0.4),
    (64, 7.0),
    (128, 3.0),
];

/// Address family of a route set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// 32-bit addresses (unicast 1.0.0.0–223.255.255.255 without 10/8 and 127/8).
    V4,
    /// 128-bit addresses in 2000::/3.
    V6,
}

impl Family {
    /// Address width in bits.
    pub fn bits(self) -> u32 {
        match self {
            Family::V4 => 32,
            Family::V6 => 128,
        }
    }

    /// A random global unicast address.
    pub fn random_addr(self, rng: &mut StdRng) -> u128 {
        match self {
            Family::V4 => loop {
                let a: u32 = rng.r#gen();
                let first = a >> 24;
                if (1..=223).contains(&first) && first != 10 && first != 127 {
                    return u128::from(a);
                }
            },
            Family::V6 => (rng.r#gen::<u128>() >> 3) | (1u128 << 125),
        }
    }
}

/// Mask of the first `len` bits of a `bits`-wide address.
pub fn prefix_mask(bits: u32, len: u8) -> u128 {
    let full = if bits == 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    full & !full.checked_shr(u32::from(len)).unwrap_or(0)
}

/// A prefix: address (host bits zero) and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix {
    /// Network address.
    pub addr: u128,
    /// Prefix length.
    pub len: u8,
}

/// A set of distinct prefixes with a longest-prefix-match coverage test.
#[derive(Debug, Clone)]
pub struct RouteSet {
    /// Address family.
    pub family: Family,
    /// The prefixes in generation order.
    pub prefixes: Vec<Prefix>,
    set: HashSet<Prefix>,
    lengths: Vec<u8>,
}

impl RouteSet {
    /// An empty set.
    pub fn new(family: Family) -> RouteSet {
        RouteSet {
            family,
            prefixes: Vec::new(),
            set: HashSet::new(),
            lengths: Vec::new(),
        }
    }

    /// Adds a prefix; false if it is already there.
    pub fn insert(&mut self, p: Prefix) -> bool {
        if !self.set.insert(p) {
            return false;
        }
        if !self.lengths.contains(&p.len) {
            self.lengths.push(p.len);
        }
        self.prefixes.push(p);
        true
    }

    /// `n` distinct random prefixes whose lengths follow `dist` (length,
    /// weight); a length whose space is used up is sampled again.
    pub fn random(
        family: Family,
        dist: &[(u8, f64)],
        n: usize,
        rng: &mut StdRng,
    ) -> Result<RouteSet, String> {
        let total: f64 = dist.iter().map(|d| d.1).sum();
        let bits = family.bits();
        let mut rs = RouteSet::new(family);
        let mut attempts = 0usize;
        let limit = 64 * n + 1000;
        while rs.prefixes.len() < n {
            attempts += 1;
            if attempts > limit {
                return Err(format!(
                    "could not draw {n} distinct prefixes (got {})",
                    rs.prefixes.len()
                ));
            }
            let mut x = rng.r#gen::<f64>() * total;
            let mut len = dist[dist.len() - 1].0;
            for &(l, w) in dist {
                if x < w {
                    len = l;
                    break;
                }
                x -= w;
            }
            let addr = family.random_addr(rng) & prefix_mask(bits, len);
            rs.insert(Prefix { addr, len });
        }
        Ok(rs)
    }

    /// Whether some prefix covers `addr`.
    pub fn covers(&self, addr: u128) -> bool {
        let bits = self.family.bits();
        self.lengths.iter().any(|&len| {
            self.set.contains(&Prefix {
                addr: addr & prefix_mask(bits, len),
                len,
            })
        })
    }

    /// A random address inside `p`.
    pub fn addr_in(&self, p: Prefix, rng: &mut StdRng) -> u128 {
        let mask = prefix_mask(self.family.bits(), p.len);
        let host =
            rng.r#gen::<u128>() & !mask & prefix_mask(self.family.bits(), self.family.bits() as u8);
        p.addr | host
    }

    /// A random unicast address that no prefix covers.
    pub fn uncovered(&self, rng: &mut StdRng) -> Result<u128, String> {
        for _ in 0..100_000 {
            let a = self.family.random_addr(rng);
            if !self.covers(a) {
                return Ok(a);
            }
        }
        Err("the routes cover (almost) the whole address space: cannot make misses".into())
    }

    /// Number of prefixes per length, ascending by length.
    pub fn histogram(&self) -> Vec<(u8, usize)> {
        let mut h = std::collections::BTreeMap::new();
        for p in &self.prefixes {
            *h.entry(p.len).or_insert(0usize) += 1;
        }
        h.into_iter().collect()
    }

    /// `addr/len` as simple_switch_CLI reads it.
    pub fn fmt(&self, p: Prefix) -> String {
        match self.family {
            Family::V4 => format!("{}/{}", crate::pkt::fmt_ip4(p.addr as u32), p.len),
            Family::V6 => format!("{}/{}", crate::pkt::fmt_ip6(p.addr), p.len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn masks() {
        assert_eq!(prefix_mask(32, 24), 0xffff_ff00);
        assert_eq!(prefix_mask(32, 32), 0xffff_ffff);
        assert_eq!(prefix_mask(32, 0), 0);
        assert_eq!(prefix_mask(128, 128), u128::MAX);
        assert_eq!(prefix_mask(128, 1), 1u128 << 127);
    }

    #[test]
    fn distinct_and_covering() {
        let mut rng = StdRng::seed_from_u64(3);
        let rs = RouteSet::random(Family::V4, IPV4_LENGTHS, 5000, &mut rng).unwrap();
        assert_eq!(rs.prefixes.len(), 5000);
        let slash24 = rs.prefixes.iter().filter(|p| p.len == 24).count();
        assert!((2700..3300).contains(&slash24), "{slash24}");
        for p in rs.prefixes.iter().take(200) {
            let a = rs.addr_in(*p, &mut rng);
            assert!(rs.covers(a));
            assert_eq!(a & prefix_mask(32, p.len), p.addr);
        }
        let miss = rs.uncovered(&mut rng).unwrap();
        assert!(!rs.covers(miss));
        let rs6 = RouteSet::random(Family::V6, IPV6_LENGTHS, 2000, &mut rng).unwrap();
        for p in rs6.prefixes.iter().take(200) {
            assert_eq!(p.addr >> 125, 1);
            assert!(rs6.covers(rs6.addr_in(*p, &mut rng)));
        }
    }
}
