"""A small P4Runtime controller for the Mininet example: for every switch of a
topology file it becomes primary, pushes the pipeline and installs the IPv4 routes
of every host along shortest paths.

    controller.py --topology topology.json --p4info PROG.p4info.txtpb --json PROG.json

It uses only the PyPI packages `p4runtime` and `grpcio` (as the p4lang tutorials'
`p4runtime_lib` does) and drives `simple_router` (tests/corpus/simple_router):

    IngressImpl.ipv4_lpm  dst /prefix  -> set_next_hop(next hop address, port)
    IngressImpl.neighbor  next hop     -> set_dst_mac(MAC)
    EgressImpl.smac       egress port  -> set_src_mac(the port's MAC)

The pipeline is sent as the tutorials send it: SetForwardingPipelineConfig
(VERIFY_AND_COMMIT) with the P4Info and the bmv2 JSON wrapped in a
`p4.tmp.P4DeviceConfig` (`--raw-json` sends the JSON bytes alone, as newer
tutorials do). Prints one line per switch and, last, `converged N switches in S s`.
"""

import argparse
import collections
import json
import os
import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

# protobuf >= 4 with the package's generated code needs the Python implementation
os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")

import grpc  # noqa: E402
from google.protobuf import text_format  # noqa: E402
from p4.config.v1 import p4info_pb2  # noqa: E402
from p4.v1 import p4runtime_pb2 as pb  # noqa: E402
from p4.v1 import p4runtime_pb2_grpc  # noqa: E402

ELECTION_ID = (0, 1)


def p4_device_config(device_data):
    """A `p4.tmp.P4DeviceConfig` holding the bmv2 JSON. The message (PI's
    p4config.proto) is not part of the PyPI `p4runtime` package; its one field set
    here is `bytes device_data = 3`, written in protobuf's wire format: key
    (3 << 3 | 2), length as a varint, the bytes."""
    out = bytearray([3 << 3 | 2])
    n = len(device_data)
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            break
    return bytes(out) + device_data


class P4Info:
    """Ids and bit widths by name (a table or action by its full name or alias)."""

    def __init__(self, path):
        self.msg = p4info_pb2.P4Info()
        with open(path) as f:
            text_format.Merge(f.read(), self.msg)
        self.tables = {}
        for t in self.msg.tables:
            fields = {m.name: m for m in t.match_fields}
            for name in (t.preamble.name, t.preamble.alias):
                self.tables[name] = (t.preamble.id, fields)
        self.actions = {}
        for a in self.msg.actions:
            params = {p.name: p for p in a.params}
            for name in (a.preamble.name, a.preamble.alias):
                self.actions[name] = (a.preamble.id, params)


def bits(value, width):
    """`value` (an int, a dotted IPv4 address or a colon-separated MAC) as the
    big-endian bytes of a `width`-bit field."""
    if isinstance(value, str):
        if "." in value:
            value = int.from_bytes(bytes(int(x) for x in value.split(".")), "big")
        else:
            value = int(value.replace(":", ""), 16)
    return value.to_bytes((width + 7) // 8, "big")


def table_entry(info, table, match, action, params):
    """An INSERT of `table`: `match` maps key names to a value (exact) or a
    (value, prefix length) pair (lpm)."""
    tid, fields = info.tables[table]
    aid, aparams = info.actions[action]
    e = pb.TableEntry(table_id=tid)
    for name, v in match.items():
        f = fields[name]
        m = e.match.add(field_id=f.id)
        if isinstance(v, tuple):
            m.lpm.value, m.lpm.prefix_len = bits(v[0], f.bitwidth), v[1]
        else:
            m.exact.value = bits(v, f.bitwidth)
    e.action.action.action_id = aid
    for name, v in params.items():
        p = aparams[name]
        e.action.action.params.add(param_id=p.id, value=bits(v, p.bitwidth))
    u = pb.Update(type=pb.Update.INSERT)
    u.entity.table_entry.CopyFrom(e)
    return u


def next_hops(topo, sw):
    """For every switch, the port of `sw` on a shortest path to it (BFS over the
    switch links, lowest port first)."""
    first = {sw: None}
    todo = collections.deque([sw])
    while todo:
        s = todo.popleft()
        for port in sorted(topo["switches"][s]["ports"], key=int):
            peer = topo["switches"][s]["ports"][port]
            if peer["peer"] in topo["switches"] and peer["peer"] not in first:
                first[peer["peer"]] = first[s] if first[s] is not None else int(port)
                todo.append(peer["peer"])
    return first


def updates_for(topo, info, sw):
    """The table entries of switch `sw`."""
    me = topo["switches"][sw]
    hop = next_hops(topo, sw)
    ups, neighbors = [], {}
    for h in topo["hosts"].values():
        if h["switch"] == sw:
            nh, port, mac = h["ip"], h["port"], h["mac"]
        else:
            if h["switch"] not in hop:
                continue  # unreachable
            port = hop[h["switch"]]
            link = me["ports"][str(port)]
            peer = topo["switches"][link["peer"]]
            nh, mac = peer["router_ip"], peer["ports"][str(link["peer_port"])]["mac"]
        net, plen = h["prefix"].split("/")
        ups.append(table_entry(info, "IngressImpl.ipv4_lpm", {"hdr.ipv4.dst_addr": (net, int(plen))},
                               "IngressImpl.set_next_hop", {"next_hop": nh, "port": port}))
        neighbors[nh] = mac
    for nh, mac in sorted(neighbors.items()):
        ups.append(table_entry(info, "IngressImpl.neighbor", {"meta.next_hop": nh},
                               "IngressImpl.set_dst_mac", {"dst_mac": mac}))
    for port, p in sorted(me["ports"].items(), key=lambda kv: int(kv[0])):
        ups.append(table_entry(info, "EgressImpl.smac", {"std_meta.egress_port": int(port)},
                               "EgressImpl.set_src_mac", {"src_mac": p["mac"]}))
    return ups


class Connection:
    """One switch: a StreamChannel held open for arbitration, unary RPCs beside it."""

    def __init__(self, addr, device_id):
        self.addr, self.device_id = addr, device_id
        self.channel = grpc.insecure_channel(addr)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.out = queue.Queue()
        self.stream = self.stub.StreamChannel(iter(self.out.get, None))

    def become_primary(self):
        req = pb.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = ELECTION_ID
        self.out.put(req)
        for msg in self.stream:
            if msg.HasField("arbitration"):
                if msg.arbitration.status.code != grpc.StatusCode.OK.value[0]:
                    raise RuntimeError("%s: not primary: %s" % (self.addr, msg.arbitration.status))
                return

    def election_id(self, msg):
        msg.election_id.high, msg.election_id.low = ELECTION_ID

    def set_pipeline(self, p4info, device_config):
        req = pb.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        self.election_id(req)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = 1
        self.stub.SetForwardingPipelineConfig(req)

    def write(self, updates):
        req = pb.WriteRequest(device_id=self.device_id)
        self.election_id(req)
        req.updates.extend(updates)
        self.stub.Write(req)

    def close(self):
        self.out.put(None)
        self.stream.cancel()
        self.channel.close()


def program(topo, info, device_config, sw):
    s = topo["switches"][sw]
    t0 = time.monotonic()
    c = Connection(s["grpc_addr"], s["device_id"])
    try:
        c.become_primary()
        c.set_pipeline(info.msg, device_config)
        ups = updates_for(topo, info, sw)
        c.write(ups)
    finally:
        c.close()
    return sw, len(ups), time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", required=True)
    ap.add_argument("--p4info", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--raw-json", action="store_true",
                    help="send the bmv2 JSON bytes as they are, not in a P4DeviceConfig")
    ap.add_argument("--jobs", type=int, default=4, help="switches programmed at once")
    a = ap.parse_args()
    with open(a.topology) as f:
        topo = json.load(f)
    info = P4Info(a.p4info)
    with open(a.json, "rb") as f:
        data = f.read()
    device_config = data if a.raw_json else p4_device_config(data)
    t0 = time.monotonic()
    failed = []
    lock = threading.Lock()

    def one(sw):
        try:
            name, n, dt = program(topo, info, device_config, sw)
            with lock:
                print("%s: pipeline and %d entries in %.3f s" % (name, n, dt), flush=True)
        except grpc.RpcError as e:
            with lock:
                print("%s: %s %s" % (sw, e.code(), e.details()), flush=True)
                failed.append(sw)
        except Exception as e:  # noqa: BLE001: report every switch
            with lock:
                print("%s: %s" % (sw, e), flush=True)
                failed.append(sw)

    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        list(pool.map(one, sorted(topo["switches"], key=lambda s: topo["switches"][s]["device_id"])))
    if failed:
        print("failed: %s" % " ".join(failed))
        sys.exit(1)
    print("converged %d switches in %.3f s" % (len(topo["switches"]), time.monotonic() - t0))


if __name__ == "__main__":
    main()
