"""PTF tests of tests/corpus/simple_router running in `p4jet run`.

Program (tests/corpus/simple_router, /work/shared/p4/simple_router/simple_router.p4):
  ingress drops non-IPv4, a bad IPv4 header checksum (verify_checksum over the 20
  fixed header bytes, csum16), ihl != 5 and ttl <= 1; otherwise ipv4_lpm gives the
  next hop and port and decrements the TTL, neighbor (exact on the next hop) sets
  the destination MAC; a miss in either drops. Egress sets the source MAC of the
  egress port (smac, miss drops); the IPv4 checksum is recomputed. The destination
  MAC of arriving frames is never looked at.
Entries: simple_router.commands of the corpus, then ptf/simple_router.commands
(11/8 -> next hop without a neighbor, 12/8 -> port 5 without a source MAC).
"""

import ptf.testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4jet_ptf import PORTS, P4jetTest, csum16

HOST_MAC = "00:00:00:00:00:99"

# destination address -> (egress port, next-hop MAC), from simple_router.commands
ROUTES = [
    ("10.1.1.7", 0, "00:00:00:00:01:04"),  # 10.1.1.7/32 -> 192.168.0.4 port 0
    ("10.1.1.8", 3, "00:00:00:00:01:03"),  # 10.1.1.0/24 -> 192.168.0.3 port 3
    ("10.1.200.1", 2, "00:00:00:00:01:02"),  # 10.1.0.0/16 -> 192.168.0.2 port 2
    ("10.200.0.1", 1, "00:00:00:00:01:01"),  # 10.0.0.0/8 -> 192.168.0.1 port 1
    ("192.0.2.77", 1, "00:00:00:00:01:01"),  # 0.0.0.0/0 -> 192.168.0.1 port 1
]


def router_mac(port):
    """EgressImpl.smac: the router's MAC on `port`."""
    return "00:aa:00:00:00:%02x" % port


def routed(pkt, out, nh_mac):
    """What the program makes of IPv4 `pkt` routed to `out`: next-hop destination
    MAC, the port's source MAC, TTL - 1, the header checksum recomputed (by scapy,
    independently of the switch); everything after the IPv4 header unchanged."""
    exp = Ether(bytes(pkt))
    exp[Ether].dst = nh_mac
    exp[Ether].src = router_mac(out)
    exp[IP].ttl -= 1
    del exp[IP].chksum
    return Ether(bytes(exp))


def check_ipv4_checksum(test, frame):
    """The header checksum of a received frame is right (checked by hand)."""
    hdr = bytearray(frame[14:34])
    got = (hdr[10] << 8) | hdr[11]
    hdr[10:12] = b"\x00\x00"
    test.assertEqual(got, csum16(bytes(hdr)), "IPv4 header checksum of %s" % frame.hex())


def tcp_to(dst, ttl=64, inp=0, **kw):
    return tu.simple_tcp_packet(
        eth_dst=router_mac(inp), eth_src=HOST_MAC, ip_src="198.51.100.10", ip_dst=dst, ip_ttl=ttl, **kw
    )


def sentinel(inp):
    """A packet the program forwards, and what leaves: 10.200.0.1 -> port 1."""
    pkt = tcp_to("10.200.0.1", inp=inp, tcp_sport=4242)
    return pkt, routed(pkt, 1, "00:00:00:00:01:01"), 1


class LpmRoutes(P4jetTest):
    """Longest prefix wins (/32, /24, /16, /8, default route) from every ingress
    port, the egress port included (no hairpin filter); MACs rewritten, TTL - 1, a
    correct new checksum, TCP header and payload untouched."""

    def runTest(self):
        for inp in PORTS:
            for dst, out, nh in ROUTES:
                pkt = tcp_to(dst, inp=inp, tcp_sport=3000 + inp, tcp_dport=80)
                exp = routed(pkt, out, nh)
                self.assertEqual(exp[IP].ttl, 63)
                self.send(inp, pkt)
                tu.verify_packet(self, exp, out)
                tu.verify_no_other_packets(self)
        # once more strictly, looking at the bytes that came out
        pkt = tcp_to("10.1.1.9", inp=2)
        self.send(2, pkt)
        got = self.expect_next(routed(pkt, 3, "00:00:00:00:01:03"), 3, "10.1.1.9")
        check_ipv4_checksum(self, got)
        self.assertEqual(got[34:], bytes(pkt)[34:], "bytes after the IPv4 header changed")


class Ttl(P4jetTest):
    """TTL 0 and 1 are dropped (ttl <= 1); 2 leaves with 1, 64 with 63, 255 with 254."""

    def runTest(self):
        s, s_exp, s_port = sentinel(0)
        dropped = [tcp_to("10.1.1.8", ttl=0), tcp_to("10.1.1.8", ttl=1), tcp_to("10.200.0.1", ttl=1)]
        self.expect_dropped(0, dropped, s, s_exp, s_port, "TTL 0 and 1")
        for ttl in [2, 3, 64, 128, 255]:
            pkt = tcp_to("10.1.200.1", ttl=ttl, inp=3)
            exp = routed(pkt, 2, "00:00:00:00:01:02")
            self.assertEqual(exp[IP].ttl, ttl - 1)
            self.send(3, pkt)
            got = self.expect_next(exp, 2, "TTL %d" % ttl)
            self.assertEqual(got[22], ttl - 1)
            check_ipv4_checksum(self, got)


class HeaderChecksum(P4jetTest):
    """verify_checksum: a wrong IPv4 header checksum (also 0, also off by one) sets
    checksum_error and the packet is dropped; the right one is routed with the
    checksum recomputed. The UDP checksum is not the program's business: a wrong
    one passes unchanged. Frames taken from the corpus STF test checksum.stf."""

    def runTest(self):
        good = tcp_to("10.1.1.8", inp=1)
        right = Ether(bytes(good))[IP].chksum
        dropped = []
        for c in [0x1234, 0x0000, (right + 1) & 0xFFFF, right ^ 0xFFFF]:
            bad = tcp_to("10.1.1.8", inp=1)
            bad[IP].chksum = c
            dropped.append(Ether(bytes(bad)))
        s, s_exp, s_port = sentinel(1)
        self.expect_dropped(1, dropped, s, s_exp, s_port, "bad IPv4 checksums")

        self.send(1, good)
        got = self.expect_next(routed(good, 3, "00:00:00:00:01:03"), 3, "good checksum")
        check_ipv4_checksum(self, got)

        udp = tu.simple_udp_packet(eth_dst=router_mac(0), eth_src=HOST_MAC, ip_dst="10.1.200.1")
        udp[UDP].chksum = 0xBEEF
        udp = Ether(bytes(udp))
        self.send(0, udp)
        got = self.expect_next(routed(udp, 2, "00:00:00:00:01:02"), 2, "wrong UDP checksum")
        self.assertEqual(got[40:42], b"\xbe\xef")

        # checksum.stf, byte for byte
        stf = [
            (
                "00AA000000000000000000990800 450000260007400040116DBDC00002010A010101 1388003500120AF1 00010203040506070809",
                "00000000010300AA000000030800 45000026000740003F116EBDC00002010A010101 1388003500120AF1 00010203040506070809",
            ),
            (
                "00AA000000020000000000990800 45B8008CBEEF000080064542C633644D0A010101 01BBC73800000001000000005018FFFF15240000"
                + "".join("%02X" % i for i in range(0x64)),
                "00000000010300AA000000030800 45B8008CBEEF00007F064642C633644D0A010101 01BBC73800000001000000005018FFFF15240000"
                + "".join("%02X" % i for i in range(0x64)),
            ),
        ]
        for inp, (i, o) in enumerate(stf):
            pkt = bytes.fromhex(i.replace(" ", ""))
            exp = bytes.fromhex(o.replace(" ", ""))
            self.send(inp, pkt)
            self.expect_next(exp, 3, "checksum.stf packet %d" % inp)


class Drops(P4jetTest):
    """Everything else the program drops: ARP and IPv6 (not IPv4), IPv4 with options
    (ihl 6, with the checksum right over the whole header and with it right over
    the fixed fields the program checks), an IPv4 header cut short by the end of
    the frame, a next hop without a neighbor entry (11/8), an egress port without
    a source MAC (12/8 -> port 5)."""

    def runTest(self):
        arp = tu.simple_arp_packet(eth_src=HOST_MAC, ip_snd="10.0.0.5", ip_tgt="10.0.0.1")
        v6 = tu.simple_tcpv6_packet(eth_dst=router_mac(2), eth_src=HOST_MAC)
        opts_full = bytes.fromhex(
            "00AA000000000000000000990800" "460000280000400040116BC2C00002010A00000101010100"
            "0001000200100000" "0001020304050607"
        )
        fixed = bytearray(opts_full)
        fixed[24:26] = csum16(bytes(fixed[14:24]) + b"\x00\x00" + bytes(fixed[26:34])).to_bytes(2, "big")
        truncated = bytes.fromhex("00AA000000000000000000990800" "4500002600074000")
        no_neighbor = tcp_to("11.2.3.4", inp=2)
        no_smac = tcp_to("12.2.3.4", inp=2)
        s, s_exp, s_port = sentinel(2)
        self.expect_dropped(
            2,
            [arp, v6, opts_full, bytes(fixed), truncated, no_neighbor, no_smac],
            s,
            s_exp,
            s_port,
            "non-IPv4, options, truncated, table misses",
        )
        # the same from port 0 with a broadcast destination MAC
        arp_b = tu.simple_arp_packet(eth_dst="ff:ff:ff:ff:ff:ff", eth_src=HOST_MAC)
        s, s_exp, s_port = sentinel(0)
        self.expect_dropped(0, [arp_b], s, s_exp, s_port, "broadcast ARP")


class DstMacIgnored(P4jetTest):
    """The program routes on the IPv4 destination only: a frame addressed to any
    MAC (another port's router MAC, a host, broadcast) is routed the same way."""

    def runTest(self):
        for dmac in ["00:aa:00:00:00:03", "00:00:00:00:12:34", "ff:ff:ff:ff:ff:ff"]:
            pkt = tcp_to("10.1.1.7", inp=1)
            pkt[Ether].dst = dmac
            pkt = Ether(bytes(pkt))
            self.send(1, pkt)
            self.expect(routed(pkt, 0, "00:00:00:00:01:04"), 0)


class FrameSizes(P4jetTest):
    """Ethernet padding after a short IPv4 packet (padding.stf) and everything up to
    an MTU-sized frame leave unchanged after the IPv4 header."""

    def runTest(self):
        pad_in = bytes.fromhex(
            "00AA000000000000000000990800" "4500001E0009400040116DBBC00002010A010109" "00070007000A32C0" "0001"
            + "EE" * 12
        )
        pad_out = bytes.fromhex(
            "00000000010300AA000000030800" "4500001E000940003F116EBBC00002010A010109" "00070007000A32C0" "0001"
            + "EE" * 12
        )
        self.send(0, pad_in)
        self.expect_next(pad_out, 3, "padding.stf")
        for size in [60, 64, 100, 512, 1514]:
            pkt = tu.simple_udp_packet(
                pktlen=size, eth_dst=router_mac(0), eth_src=HOST_MAC, ip_dst="10.1.1.7", udp_sport=size
            )
            self.assertEqual(len(pkt), size)
            self.send(2, pkt)
            got = self.expect_next(routed(pkt, 0, "00:00:00:00:01:04"), 0, "%d-byte frame" % size)
            self.assertEqual(len(got), size)


class Burst(P4jetTest):
    """200 packets back to back from all ports to all routes: none lost, none
    duplicated, all rewritten, each flow in order."""

    def runTest(self):
        sent = []
        for i in range(200):
            inp = PORTS[i % 4]
            dst, out, nh = ROUTES[(i // 4) % len(ROUTES)]
            pkt = tcp_to(dst, inp=inp, tcp_sport=20000 + i)
            sent.append((inp, out, routed(pkt, out, nh)))
            self.send(inp, pkt)
        self.verify_burst(sent)
