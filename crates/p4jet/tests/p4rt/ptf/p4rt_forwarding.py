"""PTF tests of p4rt_switch programmed over P4Runtime, frames on veth pairs.

The switch runs as `simple_switch_grpc --no-p4` with `-i N@vethN` and CPU port 255;
each test arbitrates, pushes p4rt_switch (VERIFY_AND_COMMIT: fresh state), writes
its entries with the PyPI `p4runtime` package, and checks with PTF/scapy what
leaves on the peers, or arrives as a PacketIn on the stream.

Test parameters: grpc_addr, p4info (text), json.
"""

import itertools

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4.v1 import p4runtime_pb2 as pb
from p4rt_lib import Client, Info, Recorder, Session, b, load_p4info, update

PORTS = [0, 1, 2, 3]


def mac(i):
    return "00:00:00:00:00:%02x" % i


# a fresh election id per test: the previous test's stream may not be gone yet
ELECTION = itertools.count(1)


class P4rtTest(BaseTest):
    def setUp(self):
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        p = tu.test_params_get()
        self.info = Info(load_p4info(p["p4info"]))
        self.c = Client(p["grpc_addr"], 1, Recorder())
        self.eid = next(ELECTION)
        self.s = Session(self.c)
        self.s.arbitrate(1, self.eid)
        r = self.s.next(kind="arbitration")
        assert r is not None and not hasattr(r, "code") and r.arbitration.status.code == 0, r
        req = pb.SetForwardingPipelineConfigRequest(
            device_id=1, election_id=pb.Uint128(low=self.eid),
            action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.config.p4info.CopyFrom(self.info.p)
        req.config.p4_device_config = open(p["json"], "rb").read()
        self.c.stub.SetForwardingPipelineConfig(req)
        I = self.info
        ups = []
        # hosts 0x10.. on ports 0..3, learnt (smac NoAction) and reachable (dmac)
        for port in PORTS:
            ups.append(update("INSERT", table_entry=self.te(
                "IngressImpl.smac", "hdr.ethernet.src_addr", mac(0x10 + port), "NoAction", [])))
            ups.append(update("INSERT", table_entry=self.te(
                "IngressImpl.dmac", "hdr.ethernet.dst_addr", mac(0x10 + port),
                "IngressImpl.forward", [("port", b(port, 2))])))
        ups.append(update("INSERT", table_entry=self.te(
            "IngressImpl.dmac", "hdr.ethernet.dst_addr", mac(0xfe), "IngressImpl.to_cpu", [])))
        _, o = self.c.write("setup", ups, self.eid)
        assert o["code"] == "OK", o
        # multicast groups survive a new pipeline (as with PI): replace it
        mg = pb.MulticastGroupEntry(multicast_group_id=1)
        self.c.write("clear group", [update("DELETE", packet_replication_engine_entry=
                                            pb.PacketReplicationEngineEntry(multicast_group_entry=mg))], self.eid)
        for port in PORTS:
            mg.replicas.add(egress_port=port, instance=0)
        _, o = self.c.write("group", [update("INSERT", packet_replication_engine_entry=
                                             pb.PacketReplicationEngineEntry(multicast_group_entry=mg))], self.eid)
        assert o["code"] == "OK", o

    def tearDown(self):
        self.s.close()
        BaseTest.tearDown(self)

    def te(self, table, field, value, action, params):
        I = self.info
        t = pb.TableEntry(table_id=I.tid(table))
        m = t.match.add(field_id=I.field(table, field))
        m.exact.value = bytes.fromhex(value.replace(":", ""))
        t.action.action.action_id = I.aid(action)
        for name, v in params:
            t.action.action.params.add(param_id=I.param(action, name), value=v)
        return t


class Unicast(P4rtTest):
    """Entries written over P4Runtime forward every pair of ports."""

    def runTest(self):
        for inp in PORTS:
            for out in PORTS:
                if inp == out:
                    continue
                pkt = tu.simple_eth_packet(eth_dst=mac(0x10 + out), eth_src=mac(0x10 + inp),
                                           eth_type=0x88b5, pktlen=64)
                tu.send_packet(self, inp, pkt)
                tu.verify_packet(self, pkt, out)
        tu.verify_no_other_packets(self)


class Flood(P4rtTest):
    """An unknown destination floods through multicast group 1, not back to its port."""

    def runTest(self):
        pkt = tu.simple_eth_packet(eth_dst=mac(0x77), eth_src=mac(0x10), eth_type=0x88b5, pktlen=64)
        tu.send_packet(self, 0, pkt)
        tu.verify_packets(self, pkt, [1, 2, 3])


class PacketInOut(P4rtTest):
    """to_cpu becomes a PacketIn with the ingress port; a PacketOut leaves where its
    packet_out header says."""

    def runTest(self):
        pkt = tu.simple_eth_packet(eth_dst=mac(0xfe), eth_src=mac(0x12), eth_type=0x88b5, pktlen=64)
        tu.send_packet(self, 2, pkt)
        r = self.s.next(timeout=5, kind="packet")
        assert r is not None and not hasattr(r, "code"), "no PacketIn"
        assert r.packet.payload == bytes(pkt), r.packet.payload.hex()
        assert int.from_bytes(r.packet.metadata[0].value, "big") == 2, r.packet
        out = tu.simple_eth_packet(eth_dst=mac(0x55), eth_src=mac(0x01), eth_type=0x88b5, pktlen=64)
        po = pb.PacketOut(payload=bytes(out))
        meta = [m for m in self.info.p.controller_packet_metadata if m.preamble.name == "packet_out"][0]
        po.metadata.add(metadata_id=meta.metadata[0].id, value=b(3, 2))
        self.s.send(pb.StreamMessageRequest(packet=po))
        tu.verify_packet(self, out, 3)
        tu.verify_no_other_packets(self)


class AclDrop(P4rtTest):
    """A ternary acl entry with a priority drops the IPv4 traffic it matches."""

    def runTest(self):
        I = self.info
        t = pb.TableEntry(table_id=I.tid("IngressImpl.acl"), priority=10)
        m = t.match.add(field_id=I.field("IngressImpl.acl", "hdr.ipv4.dst_addr"))
        m.ternary.value = b(0x0a420000, 4)
        m.ternary.mask = b(0xffff0000, 4)
        t.action.action.action_id = I.aid("IngressImpl.acl_drop")
        _, o = self.c.write("acl", [update("INSERT", table_entry=t)], self.eid)
        assert o["code"] == "OK", o
        drop = tu.simple_udp_packet(eth_dst=mac(0x11), eth_src=mac(0x10), ip_dst="10.66.1.1")
        tu.send_packet(self, 0, drop)
        ok = tu.simple_udp_packet(eth_dst=mac(0x11), eth_src=mac(0x10), ip_dst="10.67.1.1")
        tu.send_packet(self, 0, ok)
        tu.verify_packet(self, ok, 1)
        tu.verify_no_other_packets(self)
