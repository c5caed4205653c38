//! Helpers shared by the use cases: addresses, ports, transport headers.

use rand::Rng;
use rand::rngs::StdRng;

use crate::pkt::{L4, Mac, mac};
use crate::prefix::Family;

/// Well-known TCP service ports that flows go to.
pub const TCP_SERVICES: &[u16] = &[80, 443, 443, 443, 22, 25, 993, 8080, 8443, 3306, 5432, 6379];
/// Well-known UDP service ports.
pub const UDP_SERVICES: &[u16] = &[53, 53, 123, 443, 500, 4500, 5060, 3478];

/// A source port from the Linux ephemeral range 32768..=60999.
pub fn ephemeral(rng: &mut StdRng) -> u16 {
    rng.gen_range(32768..=60999)
}

/// A random unicast, globally administered MAC address.
pub fn host_mac(rng: &mut StdRng) -> Mac {
    let v = rng.r#gen::<u64>() & 0xfcff_ffff_ffff;
    mac(v | 1) // never all zeros
}

/// A random unicast IPv4 address outside 10/8, 127/8 and the ranges in `avoid`
/// (address, prefix length).
pub fn internet_v4(rng: &mut StdRng, avoid: &[(u32, u8)]) -> u32 {
    loop {
        let a = Family::V4.random_addr(rng) as u32;
        if !avoid.iter().any(|&(p, l)| in_prefix(a, p, l)) {
            return a;
        }
    }
}

/// Whether `a` lies in `p/len`.
pub fn in_prefix(a: u32, p: u32, len: u8) -> bool {
    let m = crate::prefix::prefix_mask(32, len) as u32;
    a & m == p & m
}

/// TCP (70 %) or UDP (30 %) from an ephemeral port to a service port.
pub fn client_l4(rng: &mut StdRng) -> L4 {
    let sport = ephemeral(rng);
    if rng.gen_bool(0.7) {
        let dport = TCP_SERVICES[rng.gen_range(0..TCP_SERVICES.len())];
        L4::Tcp {
            sport,
            dport,
            flags: if rng.gen_bool(0.8) { 0x10 } else { 0x18 },
        }
    } else {
        let dport = UDP_SERVICES[rng.gen_range(0..UDP_SERVICES.len())];
        L4::Udp { sport, dport }
    }
}

/// The frame size to build: what was asked, or the headers' size if larger.
pub fn frame_len(size: usize, headers: usize) -> usize {
    size.max(headers)
}
