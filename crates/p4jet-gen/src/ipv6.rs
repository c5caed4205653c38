//! `ipv6`: ipv6_router. N routes (BGP-like IPv6 prefix lengths), next hops
//! in `next_hop`; UDP frames to addresses covered by the routes.

use rand::Rng;
use rand::rngs::StdRng;

use crate::flows::{ephemeral, frame_len, host_mac};
use crate::ipv4::router_mac;
use crate::pkt::{self, ETH, ETHERTYPE_IPV6, IPV6, Mac, UDP, mac};
use crate::prefix::{Family, IPV6_LENGTHS, RouteSet};
use crate::{Commands, GenOptions, Scenario, Setup, fits};

const ROUTES: &str = "IngressImpl.routes";
const NEXT_HOP: &str = "IngressImpl.next_hop";

struct Flow {
    src: Mac,
    ip_src: u128,
    ip_dst: u128,
    label: u32,
    sport: u16,
    dport: u16,
}

struct Router6 {
    hits: Vec<Flow>,
    misses: Vec<Flow>,
}

impl Scenario for Router6 {
    fn build(&self, flow: usize, miss: bool, size: usize, _seq: u32, _rng: &mut StdRng) -> Vec<u8> {
        let f = if miss {
            &self.misses[flow]
        } else {
            &self.hits[flow]
        };
        let len = frame_len(size, ETH + IPV6 + UDP);
        pkt::ethernet(
            router_mac(crate::TRACE_PORT),
            f.src,
            ETHERTYPE_IPV6,
            &pkt::ipv6_udp(f.ip_src, f.ip_dst, 64, f.label, f.sport, f.dport, len - ETH),
        )
    }
}

pub(crate) fn setup(o: &GenOptions, rng: &mut StdRng) -> Result<Setup, String> {
    fits(ROUTES, o.entries, 1024, "routes")?;
    fits(NEXT_HOP, o.next_hops, 256, "next hops")?;
    let mut cmds = Commands::default();
    // Next hop id h+1 on port h % ports: the port's router MAC -> a neighbor MAC.
    for h in 0..o.next_hops {
        let port = h as u32 % o.ports;
        cmds.add(
            NEXT_HOP,
            "rewrite_macs",
            &(h + 1).to_string(),
            &format!(
                "{} {}",
                pkt::fmt_mac(router_mac(port)),
                pkt::fmt_mac(mac(0x0002_0000 + h as u64))
            ),
        );
    }
    let routes = RouteSet::random(Family::V6, IPV6_LENGTHS, o.entries, rng)?;
    for p in &routes.prefixes {
        let h = rng.gen_range(0..o.next_hops);
        cmds.add(
            ROUTES,
            "route",
            &routes.fmt(*p),
            &format!("{} {}", h + 1, h as u32 % o.ports),
        );
    }
    let flow = |dst: u128, rng: &mut StdRng| Flow {
        src: host_mac(rng),
        ip_src: Family::V6.random_addr(rng),
        ip_dst: dst,
        label: rng.gen_range(0..1 << 20),
        sport: ephemeral(rng),
        dport: [53, 443, 123, 4500][rng.gen_range(0..4)],
    };
    let mut hits = Vec::with_capacity(o.flows);
    for _ in 0..o.flows {
        let p = routes.prefixes[rng.gen_range(0..routes.prefixes.len())];
        let dst = routes.addr_in(p, rng);
        hits.push(flow(dst, rng));
    }
    let mut misses = Vec::new();
    for _ in 0..o.miss_flows() {
        let dst = routes.uncovered(rng)?;
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
            format!("route prefix lengths (in 2000::/3): {}", hist.join(" ")),
            format!(
                "{} next hops spread over ports 0..={}; UDP over IPv6, hop limit 64, valid UDP checksums",
                o.next_hops,
                o.ports - 1
            ),
        ],
        hit_flows: hits.len(),
        miss_flows: misses.len(),
        scenario: Box::new(Router6 { hits, misses }),
    })
}
