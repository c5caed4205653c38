//! `bng`: bng. N subscribers behind access points (GRE tunnels), one NAT
//! binding per flow; upstream frames (GRE from the access point) and
//! downstream frames (from Internet servers to the public binding).

use rand::Rng;
use rand::rngs::StdRng;

use crate::flows::{frame_len, internet_v4};
use crate::pkt::{self, ETH, ETHERTYPE_IPV4, GRE, IPV4, Ip4, L4, Mac, PROTO_GRE, TCP, mac};
use crate::{Commands, GenOptions, Scenario, Setup, fits};

const SUBSCRIBER: &str = "IngressImpl.subscriber";
const SNAT: &str = "IngressImpl.snat";
const DNAT: &str = "IngressImpl.dnat";
const GRE_TUNNEL: &str = "IngressImpl.gre_tunnel";
const ROUTES: &str = "IngressImpl.routes";

/// The BNG's tunnel address.
const BNG_ADDR: u32 = 0xc000_0201; // 192.0.2.1
/// MAC of the BNG (destination of the trace frames).
const BNG_MAC: u64 = 0x00bb_0000_0000;
/// Subscribers per access point.
const PER_AP: usize = 16;
/// Access points per /24 route.
const AP_PER_NET: usize = 254;
/// Public NAT addresses 203.0.113.1..=64.
const PUBLIC_ADDRS: u32 = 64;

fn ap_addr(a: usize) -> u32 {
    0xac10_0000 + (((a / AP_PER_NET) as u32) << 8) + (a % AP_PER_NET) as u32 + 1 // 172.16.x.y
}

struct Binding {
    subscriber: usize,
    private_port: u16,
    public_addr: u32,
    public_port: u16,
    server: u32,
    server_port: u16,
}

struct Bng {
    /// (access point address, private address) per subscriber.
    subs: Vec<(u32, u32)>,
    hits: Vec<Binding>,
    misses: Vec<Binding>,
    reverse: f64,
}

impl Scenario for Bng {
    fn build(&self, flow: usize, miss: bool, size: usize, seq: u32, rng: &mut StdRng) -> Vec<u8> {
        let b = if miss {
            &self.misses[flow]
        } else {
            &self.hits[flow]
        };
        let (ap, private) = self.subs[b.subscriber];
        let bng = mac(BNG_MAC);
        if rng.gen_bool(self.reverse) {
            // downstream: server -> public binding (a miss: a port not bound)
            let dport = if miss {
                b.public_port.wrapping_add(40000) | 0x8000
            } else {
                b.public_port
            };
            let l4 = L4::Tcp {
                sport: b.server_port,
                dport,
                flags: 0x18,
            };
            let len = frame_len(size, ETH + IPV4 + TCP);
            let ip = Ip4 {
                src: b.server,
                dst: b.public_addr,
                ttl: 64,
                id: seq as u16,
            };
            pkt::ethernet(
                bng,
                mac(0x0000_0000_0c00),
                ETHERTYPE_IPV4,
                &pkt::ipv4_l4(&ip, &l4, len - ETH, seq),
            )
        } else {
            // upstream: subscriber -> server inside GRE from its access point
            // (a miss: a source address the subscriber does not have)
            let src = if miss { private | 0x003f_0000 } else { private };
            let l4 = L4::Tcp {
                sport: b.private_port,
                dport: b.server_port,
                flags: 0x18,
            };
            let len = frame_len(size, ETH + IPV4 + GRE + IPV4 + TCP);
            let inner = Ip4 {
                src,
                dst: b.server,
                ttl: 64,
                id: seq as u16,
            };
            let outer = Ip4 {
                src: ap,
                dst: BNG_ADDR,
                ttl: 64,
                id: seq as u16,
            };
            let payload = pkt::gre_ipv4(&pkt::ipv4_l4(&inner, &l4, len - (ETH + IPV4 + GRE), seq));
            pkt::ethernet(
                bng,
                ap_mac(ap),
                ETHERTYPE_IPV4,
                &pkt::ipv4(&outer, PROTO_GRE, &payload),
            )
        }
    }
}

fn ap_mac(ap: u32) -> Mac {
    mac(0x0000_ac00_0000 | u64::from(ap & 0xffff))
}

pub(crate) fn setup(o: &GenOptions, rng: &mut StdRng) -> Result<Setup, String> {
    let n = o.entries;
    fits(SUBSCRIBER, n, 4096, "subscribers")?;
    fits(SNAT, o.flows, 16384, "NAT bindings (--flows)")?;
    let aps = n.div_ceil(PER_AP);
    let nets = aps.div_ceil(AP_PER_NET);
    let mut cmds = Commands::default();
    // Subscriber i (id i+1): private address 100.64.0.0 + i + 1 behind access point i / PER_AP.
    let subs: Vec<(u32, u32)> = (0..n)
        .map(|i| (ap_addr(i / PER_AP), 0x6440_0001 + i as u32))
        .collect();
    for (i, (ap, private)) in subs.iter().enumerate() {
        cmds.add(
            SUBSCRIBER,
            "set_subscriber",
            &format!("{} {}", pkt::fmt_ip4(*ap), pkt::fmt_ip4(*private)),
            &(i + 1).to_string(),
        );
    }
    for (i, (ap, _)) in subs.iter().enumerate() {
        cmds.add(
            GRE_TUNNEL,
            "gre_encap",
            &(i + 1).to_string(),
            &format!("{} {}", pkt::fmt_ip4(BNG_ADDR), pkt::fmt_ip4(*ap)),
        );
    }
    // Access networks 172.16.x.0/24 on ports 1.., the Internet on port 0.
    for x in 0..nets {
        let port = if o.ports > 1 {
            1 + x as u32 % (o.ports - 1)
        } else {
            0
        };
        cmds.add(
            ROUTES,
            "set_next_hop",
            &format!("172.16.{x}.0/24"),
            &format!(
                "{} {} {port}",
                pkt::fmt_mac(mac(BNG_MAC + u64::from(port))),
                pkt::fmt_mac(mac(0x0000_0000_0d00 + x as u64))
            ),
        );
    }
    cmds.add(
        ROUTES,
        "set_next_hop",
        "0.0.0.0/0",
        &format!(
            "{} {} 0",
            pkt::fmt_mac(mac(BNG_MAC)),
            pkt::fmt_mac(mac(0x0000_0000_0c00))
        ),
    );
    // One binding per flow: subscriber s, private port 32768 + (its k-th binding).
    let mut per_sub = vec![0u16; n];
    let avoid = [
        (0x6440_0000, 10),
        (0xac10_0000, 12),
        (0xc000_0200, 24),
        (0xcb00_7100, 24),
    ];
    let mut hits = Vec::with_capacity(o.flows);
    for f in 0..o.flows {
        let s = rng.gen_range(0..n);
        let private_port = 32768 + per_sub[s];
        per_sub[s] += 1;
        hits.push(Binding {
            subscriber: s,
            private_port,
            public_addr: 0xcb00_7101 + f as u32 % PUBLIC_ADDRS, // 203.0.113.1..
            public_port: 1024 + (f as u32 / PUBLIC_ADDRS) as u16,
            server: internet_v4(rng, &avoid),
            server_port: [80, 443, 443, 8080][rng.gen_range(0..4)],
        });
    }
    for b in &hits {
        let (_, private) = subs[b.subscriber];
        cmds.add(
            SNAT,
            "source_nat",
            &format!("{} {}", pkt::fmt_ip4(private), b.private_port),
            &format!("{} {}", pkt::fmt_ip4(b.public_addr), b.public_port),
        );
    }
    for b in &hits {
        let (_, private) = subs[b.subscriber];
        cmds.add(
            DNAT,
            "destination_nat",
            &format!("{} {}", pkt::fmt_ip4(b.public_addr), b.public_port),
            &format!(
                "{} {} {}",
                pkt::fmt_ip4(private),
                b.private_port,
                b.subscriber + 1
            ),
        );
    }
    let misses: Vec<Binding> = (0..o.miss_flows())
        .map(|_| Binding {
            subscriber: rng.gen_range(0..n),
            private_port: 32768,
            public_addr: 0xcb00_7101,
            public_port: 1024,
            server: internet_v4(rng, &avoid),
            server_port: 443,
        })
        .collect();
    Ok(Setup {
        cmds,
        notes: vec![
            format!(
                "{n} subscribers (100.64.0.1..) behind {aps} access points (172.16.x.y, {PER_AP} each) in {nets} routed /24s; {} NAT bindings (one per flow) on 203.0.113.1..{}",
                o.flows, PUBLIC_ADDRS
            ),
            format!(
                "{:.0}% of frames downstream (server -> public binding, GRE-encapsulated by the program), the others upstream (GRE from the access point, at least 78 bytes); TCP with valid checksums; misses: spoofed subscriber source or unbound public port",
                o.reverse_ratio * 100.0
            ),
        ],
        hit_flows: hits.len(),
        miss_flows: misses.len(),
        scenario: Box::new(Bng {
            subs,
            hits,
            misses,
            reverse: o.reverse_ratio,
        }),
    })
}
