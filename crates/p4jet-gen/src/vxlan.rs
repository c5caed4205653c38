//! `vxlan`: vxlan_gateway. N services, each a VIP (address, protocol,
//! port) behind its own VNI and backend VTEP; frames from Internet clients
//! to the VIPs (encapsulated by the gateway) and VXLAN frames from the
//! backends back to the clients (decapsulated).

use rand::Rng;
use rand::rngs::StdRng;

use crate::flows::{ephemeral, frame_len, host_mac, internet_v4};
use crate::pkt::{
    self, ETH, ETHERTYPE_IPV4, IPV4, Ip4, L4, Mac, PROTO_UDP, UDP, VXLAN, VXLAN_PORT, mac,
};
use crate::{Commands, GenOptions, Scenario, Setup, fits};

const VTEP_CONFIG: &str = "IngressImpl.vtep_config";
const SERVICE_VIP: &str = "IngressImpl.service_vip";
const SERVICE_BACKEND: &str = "IngressImpl.service_backend";
const VNI_DECAP: &str = "IngressImpl.vni_decap";
const ROUTE: &str = "IngressImpl.ipv4_route";
const NEXT_HOP: &str = "IngressImpl.next_hop";
const PORT_MAC: &str = "EgressImpl.port_mac";

/// The gateway's VTEP address and MAC.
const LOCAL_VTEP: u32 = 0x0aff_0001; // 10.255.0.1
const GATEWAY_MAC: u64 = 0x00ee_0000_0001;
/// Services per rack of backends.
const PER_RACK: usize = 64;
/// (protocol, port) of service i % 4 on VIP i / 4.
const SERVICES: [(u8, u16); 4] = [(6, 80), (6, 443), (17, 53), (6, 8080)];

struct Service {
    vip: u32,
    l4: (u8, u16),
    vni: u32,
    vtep: u32,
    server_mac: Mac,
}

struct Flow {
    service: usize,
    client: u32,
    cport: u16,
    client_mac: Mac,
    entropy: u16,
}

struct Gateway {
    services: Vec<Service>,
    hits: Vec<Flow>,
    misses: Vec<Flow>,
    reverse: f64,
}

fn l4(proto: u8, sport: u16, dport: u16) -> L4 {
    if proto == PROTO_UDP {
        L4::Udp { sport, dport }
    } else {
        L4::Tcp {
            sport,
            dport,
            flags: 0x18,
        }
    }
}

impl Scenario for Gateway {
    fn build(&self, flow: usize, miss: bool, size: usize, seq: u32, rng: &mut StdRng) -> Vec<u8> {
        let f = if miss {
            &self.misses[flow]
        } else {
            &self.hits[flow]
        };
        let s = &self.services[f.service];
        let gw = mac(GATEWAY_MAC);
        if rng.gen_bool(self.reverse) {
            // server -> client inside VXLAN from the backend's VTEP (direct server return)
            let vni = if miss {
                0xf0_0000 | (s.vni & 0xffff)
            } else {
                s.vni
            };
            let inner_l4 = l4(s.l4.0, s.l4.1, f.cport);
            let headers = ETH + IPV4 + UDP + VXLAN + ETH + IPV4 + inner_l4.header_len();
            let len = frame_len(size, headers);
            let inner_ip = Ip4 {
                src: s.vip,
                dst: f.client,
                ttl: 64,
                id: seq as u16,
            };
            let inner = pkt::ethernet(
                gw,
                s.server_mac,
                ETHERTYPE_IPV4,
                &pkt::ipv4_l4(
                    &inner_ip,
                    &inner_l4,
                    len - (ETH + IPV4 + UDP + VXLAN + ETH),
                    seq,
                ),
            );
            let outer_ip = Ip4 {
                src: s.vtep,
                dst: LOCAL_VTEP,
                ttl: 64,
                id: seq as u16,
            };
            let udp = pkt::udp_nocsum(
                49152 | (f.entropy & 0x3fff),
                VXLAN_PORT,
                &pkt::vxlan(vni, &inner),
            );
            pkt::ethernet(
                gw,
                mac(0x0000_0000_0b00 | u64::from(s.vtep >> 8 & 0xff)),
                ETHERTYPE_IPV4,
                &pkt::ipv4(&outer_ip, PROTO_UDP, &udp),
            )
        } else {
            // client -> VIP (a miss goes to a port the VIP does not serve)
            let dport = if miss { 9999 } else { s.l4.1 };
            let l4 = l4(s.l4.0, f.cport, dport);
            let len = frame_len(size, ETH + IPV4 + l4.header_len());
            let ip = Ip4 {
                src: f.client,
                dst: s.vip,
                ttl: 64,
                id: seq as u16,
            };
            pkt::ethernet(
                gw,
                f.client_mac,
                ETHERTYPE_IPV4,
                &pkt::ipv4_l4(&ip, &l4, len - ETH, seq),
            )
        }
    }
}

pub(crate) fn setup(o: &GenOptions, rng: &mut StdRng) -> Result<Setup, String> {
    let n = o.entries;
    fits(SERVICE_VIP, n, 1024, "services")?;
    let racks = n.div_ceil(PER_RACK);
    let mut cmds = Commands::default();
    cmds.set_default(
        VTEP_CONFIG,
        "set_local_vtep",
        &format!(
            "{} {}",
            pkt::fmt_ip4(LOCAL_VTEP),
            pkt::fmt_mac(mac(GATEWAY_MAC))
        ),
    );
    let services: Vec<Service> = (0..n)
        .map(|i| Service {
            vip: 0xc633_6400 + (i / 4) as u32, // 198.51.100.0/24
            l4: SERVICES[i % 4],
            vni: 0x01_0000 + i as u32,
            vtep: 0x0a00_0001 + (((i / PER_RACK) as u32) << 8) + (i % PER_RACK) as u32, // 10.0.rack.x
            server_mac: mac(0x0000_0a00_0000 + i as u64),
        })
        .collect();
    for (i, s) in services.iter().enumerate() {
        cmds.add(
            SERVICE_VIP,
            "set_service",
            &format!("{} {} {}", pkt::fmt_ip4(s.vip), s.l4.0, s.l4.1),
            &(i + 1).to_string(),
        );
    }
    for (i, s) in services.iter().enumerate() {
        cmds.add(
            SERVICE_BACKEND,
            "encap",
            &(i + 1).to_string(),
            &format!(
                "0x{:06x} {} {}",
                s.vni,
                pkt::fmt_ip4(s.vtep),
                pkt::fmt_mac(s.server_mac)
            ),
        );
    }
    for s in &services {
        cmds.add(VNI_DECAP, "decap", &format!("0x{:06x}", s.vni), "");
    }
    // Rack r: 10.0.r.0/24 -> next hop r+1 (a top-of-rack switch on ports
    // 1..); everything else -> the uplink on port 0.
    let uplink = racks + 1;
    for r in 0..racks {
        cmds.add(
            ROUTE,
            "set_next_hop",
            &format!("10.0.{r}.0/24"),
            &(r + 1).to_string(),
        );
    }
    cmds.add(ROUTE, "set_next_hop", "0.0.0.0/0", &uplink.to_string());
    for r in 0..racks {
        let port = if o.ports > 1 {
            1 + r as u32 % (o.ports - 1)
        } else {
            0
        };
        cmds.add(
            NEXT_HOP,
            "forward",
            &(r + 1).to_string(),
            &format!("{} {port}", pkt::fmt_mac(mac(0x0000_0000_0b00 | r as u64))),
        );
    }
    cmds.add(
        NEXT_HOP,
        "forward",
        &uplink.to_string(),
        &format!("{} 0", pkt::fmt_mac(mac(0x0000_0000_0bff))),
    );
    for p in 0..o.ports {
        cmds.add(
            PORT_MAC,
            "set_src_mac",
            &p.to_string(),
            &pkt::fmt_mac(mac(0x00ee_0000_0010 + u64::from(p))),
        );
    }
    let avoid = [(0xc633_6400, 24), (0x0a00_0000, 8)];
    let flow = |rng: &mut StdRng| Flow {
        service: rng.gen_range(0..n),
        client: internet_v4(rng, &avoid),
        cport: ephemeral(rng),
        client_mac: host_mac(rng),
        entropy: rng.r#gen(),
    };
    let hits: Vec<Flow> = (0..o.flows).map(|_| flow(rng)).collect();
    let misses: Vec<Flow> = (0..o.miss_flows()).map(|_| flow(rng)).collect();
    Ok(Setup {
        cmds,
        notes: vec![
            format!(
                "{n} services: VIPs 198.51.100.x (tcp/80, tcp/443, udp/53, tcp/8080), VNIs 0x010000.., backend VTEPs 10.0.rack.x in {racks} racks ({PER_RACK} per rack)"
            ),
            format!(
                "{:.0}% of frames are VXLAN from a backend (decapsulated; at least 92..104 bytes), the others go from Internet clients to a VIP (encapsulated); misses: unknown VNI or a port the VIP does not serve",
                o.reverse_ratio * 100.0
            ),
        ],
        hit_flows: hits.len(),
        miss_flows: misses.len(),
        scenario: Box::new(Gateway {
            services,
            hits,
            misses,
            reverse: o.reverse_ratio,
        }),
    })
}
