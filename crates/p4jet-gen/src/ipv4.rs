//! `ipv4`: simple_router / router_large. N routes with a BGP-like prefix
//! length distribution, next hops in `neighbor`, a source MAC per port in
//! `smac`; frames to addresses covered by the routes.

use rand::Rng;
use rand::rngs::StdRng;

use crate::flows::{client_l4, frame_len, host_mac, internet_v4};
use crate::pkt::{self, ETH, ETHERTYPE_IPV4, IPV4, Ip4, L4, Mac, mac};
use crate::prefix::{Family, IPV4_LENGTHS, RouteSet};
use crate::{Commands, GenOptions, Scenario, Setup, Variant, fits};

const LPM: &str = "IngressImpl.ipv4_lpm";
const NEIGHBOR: &str = "IngressImpl.neighbor";
const SMAC: &str = "EgressImpl.smac";

/// MAC of router port `p` (smac entries; destination of the trace frames).
pub(crate) fn router_mac(p: u32) -> Mac {
    mac(0x00aa_0000_0000 | u64::from(p))
}

struct Flow {
    src: Mac,
    ip_src: u32,
    ip_dst: u32,
    l4: L4,
}

struct Router {
    hits: Vec<Flow>,
    misses: Vec<Flow>,
}

impl Scenario for Router {
    fn build(&self, flow: usize, miss: bool, size: usize, seq: u32, _rng: &mut StdRng) -> Vec<u8> {
        let f = if miss {
            &self.misses[flow]
        } else {
            &self.hits[flow]
        };
        let ip = Ip4 {
            src: f.ip_src,
            dst: f.ip_dst,
            ttl: 64,
            id: seq as u16,
        };
        let len = frame_len(size, ETH + IPV4 + f.l4.header_len());
        pkt::ethernet(
            router_mac(crate::TRACE_PORT),
            f.src,
            ETHERTYPE_IPV4,
            &pkt::ipv4_l4(&ip, &f.l4, len - ETH, seq),
        )
    }
}

pub(crate) fn setup(o: &GenOptions, rng: &mut StdRng) -> Result<Setup, String> {
    let (lpm_max, nb_max) = match o.variant {
        Variant::Base => (1024, 256),
        Variant::Large => (1 << 20, 4096),
    };
    fits(LPM, o.entries, lpm_max, "routes")?;
    fits(NEIGHBOR, o.next_hops, nb_max, "next hops")?;
    let mut cmds = Commands::default();
    for p in 0..o.ports {
        cmds.add(
            SMAC,
            "set_src_mac",
            &p.to_string(),
            &pkt::fmt_mac(router_mac(p)),
        );
    }
    // Next hop h: 172.16.0.0 + 1 + h on port h % ports.
    let nh_addr = |h: usize| 0xac10_0001u32 + h as u32;
    for h in 0..o.next_hops {
        cmds.add(
            NEIGHBOR,
            "set_dst_mac",
            &pkt::fmt_ip4(nh_addr(h)),
            &pkt::fmt_mac(mac(0x0001_0000 + h as u64)),
        );
    }
    let routes = RouteSet::random(Family::V4, IPV4_LENGTHS, o.entries, rng)?;
    for p in &routes.prefixes {
        let h = rng.gen_range(0..o.next_hops);
        let port = h as u32 % o.ports;
        cmds.add(
            LPM,
            "set_next_hop",
            &routes.fmt(*p),
            &format!("{} {port}", pkt::fmt_ip4(nh_addr(h))),
        );
    }
    let flow = |dst: u32, rng: &mut StdRng| Flow {
        src: host_mac(rng),
        ip_src: internet_v4(rng, &[]),
        ip_dst: dst,
        l4: client_l4(rng),
    };
    let mut hits = Vec::with_capacity(o.flows);
    for _ in 0..o.flows {
        let p = routes.prefixes[rng.gen_range(0..routes.prefixes.len())];
        let dst = routes.addr_in(p, rng) as u32;
        hits.push(flow(dst, rng));
    }
    let mut misses = Vec::new();
    for _ in 0..o.miss_flows() {
        let dst = routes.uncovered(rng)? as u32;
        misses.push(flow(dst, rng));
    }
    let hist: Vec<String> = routes
        .histogram()
        .iter()
        .map(|(l, n)| format!("/{l}:{n}"))
        .collect();
    Ok(Setup {
        cmds,
        notes: vec![
            format!("route prefix lengths: {}", hist.join(" ")),
            format!(
                "{} next hops (172.16.0.1..) spread over ports 0..={}; TTL 64, valid IPv4 checksums",
                o.next_hops,
                o.ports - 1
            ),
        ],
        hit_flows: hits.len(),
        miss_flows: misses.len(),
        scenario: Box::new(Router { hits, misses }),
    })
}
