//! `l2`: basic_l2 / l2_large. N destination MACs in `dmac`, frames to them.

use std::collections::HashSet;

use rand::Rng;
use rand::rngs::StdRng;

use crate::flows::{client_l4, frame_len, host_mac, internet_v4};
use crate::pkt::{self, ETH, ETHERTYPE_IPV4, IPV4, Ip4, L4, Mac};
use crate::{Commands, GenOptions, Scenario, Setup, Variant, fits};

const DMAC: &str = "IngressImpl.dmac";

struct Flow {
    dst: Mac,
    src: Mac,
    ip_src: u32,
    ip_dst: u32,
    l4: L4,
}

struct L2 {
    hits: Vec<Flow>,
    misses: Vec<Flow>,
}

impl Scenario for L2 {
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
            f.dst,
            f.src,
            ETHERTYPE_IPV4,
            &pkt::ipv4_l4(&ip, &f.l4, len - ETH, seq),
        )
    }
}

fn flow(dst: Mac, rng: &mut StdRng) -> Flow {
    Flow {
        dst,
        src: host_mac(rng),
        ip_src: internet_v4(rng, &[]),
        ip_dst: internet_v4(rng, &[]),
        l4: client_l4(rng),
    }
}

pub(crate) fn setup(o: &GenOptions, rng: &mut StdRng) -> Result<Setup, String> {
    let max = match o.variant {
        Variant::Base => 1024,
        Variant::Large => 1 << 20,
    };
    fits(DMAC, o.entries, max, "MAC entries")?;
    let mut cmds = Commands::default();
    let mut seen = HashSet::with_capacity(o.entries);
    let mut macs = Vec::with_capacity(o.entries);
    while macs.len() < o.entries {
        let m = host_mac(rng);
        if seen.insert(m) {
            let port = rng.gen_range(0..o.ports);
            cmds.add(DMAC, "forward", &pkt::fmt_mac(m), &port.to_string());
            macs.push(m);
        }
    }
    let hits = (0..o.flows)
        .map(|_| {
            let dst = macs[rng.gen_range(0..macs.len())];
            flow(dst, rng)
        })
        .collect();
    let misses = (0..o.miss_flows())
        .map(|_| {
            let dst = loop {
                let m = host_mac(rng);
                if !seen.contains(&m) {
                    break m;
                }
            };
            flow(dst, rng)
        })
        .collect::<Vec<_>>();
    Ok(Setup {
        cmds,
        notes: vec![format!(
            "{} distinct unicast destination MACs, each forwarded to a random port of 0..={}; frames carry IPv4 TCP/UDP",
            o.entries,
            o.ports - 1
        )],
        hit_flows: o.flows,
        miss_flows: misses.len(),
        scenario: Box::new(L2 { hits, misses }),
    })
}
