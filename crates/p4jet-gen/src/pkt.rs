//! Hand-built packet headers with valid checksums.
//!
//! Every builder returns the bytes of one header stack; lengths and
//! checksums are computed from what follows. Payload bytes are zero.

/// Ethernet header length.
pub const ETH: usize = 14;
/// IPv4 header length (no options).
pub const IPV4: usize = 20;
/// IPv6 header length.
pub const IPV6: usize = 40;
/// TCP header length (no options).
pub const TCP: usize = 20;
/// UDP header length.
pub const UDP: usize = 8;
/// ICMP echo header length.
pub const ICMP: usize = 8;
/// GRE header length (RFC 2784, no checksum/key/sequence).
pub const GRE: usize = 4;
/// VXLAN header length.
pub const VXLAN: usize = 8;

/// EtherType IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// IP protocol numbers.
pub const PROTO_ICMP: u8 = 1;
/// TCP.
pub const PROTO_TCP: u8 = 6;
/// UDP.
pub const PROTO_UDP: u8 = 17;
/// GRE.
pub const PROTO_GRE: u8 = 47;
/// VXLAN UDP port (RFC 7348).
pub const VXLAN_PORT: u16 = 4789;

/// A MAC address.
pub type Mac = [u8; 6];

/// Transport header of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4 {
    /// TCP with these ports and flags.
    Tcp { sport: u16, dport: u16, flags: u8 },
    /// UDP with these ports.
    Udp { sport: u16, dport: u16 },
    /// ICMP echo request.
    Icmp,
}

impl L4 {
    /// IP protocol number.
    pub fn proto(&self) -> u8 {
        match self {
            L4::Tcp { .. } => PROTO_TCP,
            L4::Udp { .. } => PROTO_UDP,
            L4::Icmp => PROTO_ICMP,
        }
    }

    /// Header length.
    pub fn header_len(&self) -> usize {
        match self {
            L4::Tcp { .. } => TCP,
            L4::Udp { .. } => UDP,
            L4::Icmp => ICMP,
        }
    }

    /// The header with a zero checksum, then `payload` zero bytes.
    fn segment(&self, payload: usize, seq: u32) -> Vec<u8> {
        let mut s = Vec::with_capacity(self.header_len() + payload);
        match *self {
            L4::Tcp {
                sport,
                dport,
                flags,
            } => {
                s.extend(sport.to_be_bytes());
                s.extend(dport.to_be_bytes());
                s.extend(seq.wrapping_mul(1460).to_be_bytes()); // seq_no
                s.extend(1u32.to_be_bytes()); // ack_no
                s.push(0x50); // data offset 5
                s.push(flags);
                s.extend(0xfaf0u16.to_be_bytes()); // window
                s.extend([0, 0, 0, 0]); // checksum, urgent pointer
            }
            L4::Udp { sport, dport } => {
                s.extend(sport.to_be_bytes());
                s.extend(dport.to_be_bytes());
                s.extend(((UDP + payload) as u16).to_be_bytes());
                s.extend([0, 0]);
            }
            L4::Icmp => {
                s.extend([8, 0, 0, 0]); // echo request, checksum
                s.extend(0x4a45u16.to_be_bytes()); // identifier
                s.extend((seq as u16).to_be_bytes());
            }
        }
        s.resize(self.header_len() + payload, 0);
        s
    }

    fn checksum_offset(&self) -> usize {
        match self {
            L4::Tcp { .. } => 16,
            L4::Udp { .. } => 6,
            L4::Icmp => 2,
        }
    }
}

/// One's complement sum of 16-bit words, not yet folded.
fn sum16(data: &[u8], mut acc: u32) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u32::from(*last) << 8;
    }
    acc
}

/// Folds and complements a one's complement sum (the Internet checksum).
fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// The Internet checksum of `data`.
pub fn checksum(data: &[u8]) -> u16 {
    fold(sum16(data, 0))
}

/// Fields of an IPv4 header that vary.
#[derive(Debug, Clone, Copy)]
pub struct Ip4 {
    /// Source address.
    pub src: u32,
    /// Destination address.
    pub dst: u32,
    /// Time to live.
    pub ttl: u8,
    /// Identification.
    pub id: u16,
}

/// An IPv4 header (checksum filled in) followed by `payload`.
pub fn ipv4(ip: &Ip4, proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(IPV4 + payload.len());
    p.push(0x45);
    p.push(0);
    p.extend(((IPV4 + payload.len()) as u16).to_be_bytes());
    p.extend(ip.id.to_be_bytes());
    p.extend([0x40, 0]); // don't fragment
    p.push(ip.ttl);
    p.push(proto);
    p.extend([0, 0]);
    p.extend(ip.src.to_be_bytes());
    p.extend(ip.dst.to_be_bytes());
    let c = checksum(&p[..IPV4]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(payload);
    p
}

/// An IPv4 packet of `len` bytes carrying `l4` (valid IPv4 and L4
/// checksums); `len` must be at least `IPV4 + l4.header_len()`.
pub fn ipv4_l4(ip: &Ip4, l4: &L4, len: usize, seq: u32) -> Vec<u8> {
    let mut seg = l4.segment(len.saturating_sub(IPV4 + l4.header_len()), seq);
    let sum = match l4 {
        L4::Icmp => sum16(&seg, 0),
        _ => {
            let mut pseudo = Vec::with_capacity(12);
            pseudo.extend(ip.src.to_be_bytes());
            pseudo.extend(ip.dst.to_be_bytes());
            pseudo.extend([0, l4.proto()]);
            pseudo.extend((seg.len() as u16).to_be_bytes());
            sum16(&seg, sum16(&pseudo, 0))
        }
    };
    let mut c = fold(sum);
    if c == 0 && matches!(l4, L4::Udp { .. }) {
        c = 0xffff;
    }
    let off = l4.checksum_offset();
    seg[off..off + 2].copy_from_slice(&c.to_be_bytes());
    ipv4(ip, l4.proto(), &seg)
}

/// An IPv6 packet of `len` bytes carrying UDP (valid UDP checksum).
pub fn ipv6_udp(
    src: u128,
    dst: u128,
    hop_limit: u8,
    flow_label: u32,
    sport: u16,
    dport: u16,
    len: usize,
) -> Vec<u8> {
    let l4 = L4::Udp { sport, dport };
    let mut seg = l4.segment(len.saturating_sub(IPV6 + UDP), 0);
    let mut pseudo = Vec::with_capacity(40);
    pseudo.extend(src.to_be_bytes());
    pseudo.extend(dst.to_be_bytes());
    pseudo.extend((seg.len() as u32).to_be_bytes());
    pseudo.extend([0, 0, 0, PROTO_UDP]);
    let mut c = fold(sum16(&seg, sum16(&pseudo, 0)));
    if c == 0 {
        c = 0xffff;
    }
    seg[6..8].copy_from_slice(&c.to_be_bytes());
    let mut p = Vec::with_capacity(IPV6 + seg.len());
    p.extend((0x6000_0000u32 | (flow_label & 0xf_ffff)).to_be_bytes());
    p.extend((seg.len() as u16).to_be_bytes());
    p.push(PROTO_UDP);
    p.push(hop_limit);
    p.extend(src.to_be_bytes());
    p.extend(dst.to_be_bytes());
    p.extend_from_slice(&seg);
    p
}

/// A UDP header without checksum (0, as VXLAN senders do) followed by `payload`.
pub fn udp_nocsum(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(UDP + payload.len());
    p.extend(sport.to_be_bytes());
    p.extend(dport.to_be_bytes());
    p.extend(((UDP + payload.len()) as u16).to_be_bytes());
    p.extend([0, 0]);
    p.extend_from_slice(payload);
    p
}

/// A VXLAN header (VNI present) followed by `payload`.
pub fn vxlan(vni: u32, payload: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(VXLAN + payload.len());
    p.extend([0x08, 0, 0, 0]);
    p.extend((vni << 8).to_be_bytes());
    p.extend_from_slice(payload);
    p
}

/// A GRE header (IPv4 payload) followed by `payload`.
pub fn gre_ipv4(payload: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(GRE + payload.len());
    p.extend([0, 0]);
    p.extend(ETHERTYPE_IPV4.to_be_bytes());
    p.extend_from_slice(payload);
    p
}

/// An Ethernet frame.
pub fn ethernet(dst: Mac, src: Mac, ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(ETH + payload.len());
    f.extend(dst);
    f.extend(src);
    f.extend(ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// `xx:xx:xx:xx:xx:xx`.
pub fn fmt_mac(m: Mac) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

/// A MAC address from the low 48 bits of `v`.
pub fn mac(v: u64) -> Mac {
    let b = v.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// Dotted IPv4.
pub fn fmt_ip4(a: u32) -> String {
    std::net::Ipv4Addr::from(a).to_string()
}

/// IPv6 text (RFC 5952).
pub fn fmt_ip6(a: u128) -> String {
    std::net::Ipv6Addr::from(a).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_checksum_verifies() {
        let ip = Ip4 {
            src: 0x0a00_0001,
            dst: 0xc0a8_0101,
            ttl: 64,
            id: 7,
        };
        let p = ipv4_l4(
            &ip,
            &L4::Tcp {
                sport: 1,
                dport: 80,
                flags: 0x10,
            },
            60,
            3,
        );
        assert_eq!(p.len(), 60);
        assert_eq!(checksum(&p[..IPV4]), 0);
        let mut pseudo = vec![];
        pseudo.extend(&p[12..20]);
        pseudo.extend([0, 6, 0, 40]);
        assert_eq!(fold(sum16(&p[IPV4..], sum16(&pseudo, 0))), 0);
    }
}
