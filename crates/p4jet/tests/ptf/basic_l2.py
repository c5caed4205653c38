"""PTF tests of tests/corpus/basic_l2 running in `p4jet run`.

Program: exact match on the Ethernet destination address (table IngressImpl.dmac),
hit -> forward(port) with the frame unchanged, miss -> drop (the default action).
Entries (basic_l2.commands): 00:00:00:00:00:10..13 -> ports 0..3.
"""

import ptf.testutils as tu
from scapy.layers.l2 import Ether

from p4jet_ptf import PORTS, P4jetTest


def mac_of(port):
    return "00:00:00:00:00:%02x" % (0x10 + port)


HOST_SRC = "00:00:00:00:99:01"


class ForwardEveryPair(P4jetTest):
    """From every port to every port (the ingress port too: v1model does not filter
    hairpins), the frame leaves unchanged on the port its destination MAC names."""

    def runTest(self):
        for inp in PORTS:
            for out in PORTS:
                pkt = tu.simple_tcp_packet(
                    eth_dst=mac_of(out),
                    eth_src=HOST_SRC,
                    ip_src="192.0.2.%d" % (inp + 1),
                    ip_dst="198.51.100.%d" % (out + 1),
                    tcp_sport=1000 + inp,
                    tcp_dport=2000 + out,
                )
                self.send(inp, pkt)
                self.expect(pkt, out)


class FrameSizes(P4jetTest):
    """Header-only to MTU-sized frames pass byte for byte (no padding added)."""

    def runTest(self):
        header_only = bytes.fromhex("000000000012" "000000009901" "88b5")
        self.send(0, header_only)
        self.expect(header_only, 2)
        for i, size in enumerate([42, 59, 60, 61, 64, 128, 512, 1000, 1500, 1514]):
            out = PORTS[i % len(PORTS)]
            inp = PORTS[(i + 1) % len(PORTS)]
            pkt = tu.simple_udp_packet(pktlen=size, eth_dst=mac_of(out), eth_src=HOST_SRC)
            self.assertEqual(len(pkt), size)
            self.send(inp, pkt)
            tu.verify_packet(self, pkt, out)
            tu.verify_no_other_packets(self)


class AnyEtherTypeForwarded(P4jetTest):
    """The parser reads only Ethernet: ARP, IPv6, VLAN-tagged frames, an IPv4
    header with a wrong checksum and an unknown EtherType are forwarded unchanged."""

    def runTest(self):
        frames = [
            tu.simple_arp_packet(eth_dst=mac_of(1), eth_src=HOST_SRC),
            tu.simple_tcpv6_packet(eth_dst=mac_of(2), eth_src=HOST_SRC),
            tu.simple_tcp_packet(eth_dst=mac_of(3), eth_src=HOST_SRC, dl_vlan_enable=True, vlan_vid=42),
            tu.simple_udp_packet(eth_dst=mac_of(0), eth_src=HOST_SRC, ip_ttl=0),
            tu.simple_eth_packet(pktlen=80, eth_dst=mac_of(1), eth_src=HOST_SRC, eth_type=0x88B5),
        ]
        bad_csum = tu.simple_tcp_packet(eth_dst=mac_of(2), eth_src=HOST_SRC)
        bad_csum["IP"].chksum = 0x1234
        frames.append(Ether(bytes(bad_csum)))
        for pkt in frames:
            out = int(pkt[Ether].dst.split(":")[-1], 16) - 0x10
            self.send(0 if out != 0 else 3, pkt)
            self.expect(pkt, out)


class UnknownMacDropped(P4jetTest):
    """A destination MAC without an entry hits the default action drop(): unknown
    unicast, broadcast, multicast, all-zeros, and a known address with a differing
    high byte. A known source MAC does not help."""

    def runTest(self):
        unknown = [
            "00:00:00:00:00:14",
            "00:00:00:00:00:0f",
            "ff:ff:ff:ff:ff:ff",
            "01:00:5e:00:00:01",
            "33:33:00:00:00:01",
            "00:00:00:00:00:00",
            "10:00:00:00:00:10",
            "00:00:00:00:01:10",
        ]
        for inp in PORTS:
            dropped = [
                tu.simple_udp_packet(eth_dst=d, eth_src=mac_of((inp + 1) % 4), udp_sport=i)
                for i, d in enumerate(unknown)
            ]
            out = (inp + 2) % 4
            sentinel = tu.simple_udp_packet(eth_dst=mac_of(out), eth_src=HOST_SRC, udp_sport=7777)
            self.expect_dropped(inp, dropped, sentinel, sentinel, out, "unknown MACs from port %d" % inp)


class Burst(P4jetTest):
    """200 frames sent back to back, round robin over the ports: none lost, none
    duplicated, unchanged, each flow in order."""

    def runTest(self):
        sent = []
        for i in range(200):
            inp = PORTS[i % 4]
            out = PORTS[(i // 4) % 4]
            pkt = tu.simple_udp_packet(eth_dst=mac_of(out), eth_src=HOST_SRC, udp_sport=10000 + i, pktlen=100)
            sent.append((inp, out, pkt))
            self.send(inp, pkt)
        self.verify_burst(sent)
