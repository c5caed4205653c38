"""Roles as P4Runtime 1.5 defines them, with role configs p4jet reads
(`stratum.P4RoleConfig`, see docs/p4runtime.md), over the PyPI `p4runtime`
package and `grpcio`.

    roles.py ADDR DEVICE_ID P4INFO.txtpb PROG.json

Against p4jet started with --no-p4 and FIFO ports 0..3 (p4rt_switch). The default
role pushes the pipeline; role "l2" (smac, dmac and the learn digest exclusive,
port_counter shared; PacketIns from ingress port 1 only) and role "acl" (the acl
table exclusive, port_counter shared; every PacketIn) each elect their own primary;
role "mon" has a config that names nothing. Then: configs that clash are refused,
writes and reads are scoped, the pipeline may only be pushed by roles allowed to.
The script prints READY; the test then sends two frames (port 1 and port 2, new
source MACs, a destination the l2 role sends to the CPU), and the script checks who
received which PacketIn, DigestList and IdleTimeoutNotification, and that a failover
in one role leaves the other alone. Last line: `N passed, N failed`.
"""

import sys
import time

from google.protobuf import any_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4rt_lib import Client, Info, Recorder, Session, b, load_p4info, u128, update

addr, dev, p4info_path, json_path = sys.argv[1:5]
dev = int(dev)
rec = Recorder()
c = Client(addr, dev, rec)
p4info = load_p4info(p4info_path)
I = Info(p4info)
prog_json = open(json_path, "rb").read()
passed = failed = 0


def check(name, cond, got=None):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: got {got!r}", file=sys.stderr)


# -------------------------------------------------------------- role configs
def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def role_config(exclusive=(), shared=(), packet_in_filter=None, packet_ins=False, push=False,
                type_url="type.googleapis.com/stratum.P4RoleConfig"):
    """A stratum.P4RoleConfig in protobuf's wire format: 1 exclusive_p4_ids and 2
    shared_p4_ids (packed uint32), 3 packet_in_filter {1 metadata_id, 2 value},
    4 receives_packet_ins, 5 can_push_pipeline."""
    v = b""
    if exclusive:
        v += field(1, 2, b"".join(varint(i) for i in exclusive))
    if shared:
        v += field(2, 2, b"".join(varint(i) for i in shared))
    if packet_in_filter is not None:
        mid, val = packet_in_filter
        v += field(3, 2, field(1, 0, varint(mid)) + field(2, 2, val))
    if packet_ins:
        v += field(4, 0, varint(1))
    if push:
        v += field(5, 0, varint(1))
    return any_pb2.Any(type_url=type_url, value=v)


SMAC, DMAC, ACL = "IngressImpl.smac", "IngressImpl.dmac", "IngressImpl.acl"
T_SMAC, T_DMAC, T_ACL = I.tid(SMAC), I.tid(DMAC), I.tid(ACL)
PC = I.obj_id("counters", "IngressImpl.port_counter")
REG = I.obj_id("registers", "IngressImpl.port_packets")
DG = I.obj_id("digests", "learn_t")
PKT_IN = [m for m in p4info.controller_packet_metadata if m.preamble.name == "packet_in"][0]
IN_PORT = [m.id for m in PKT_IN.metadata if m.name == "ingress_port"][0]

L2 = role_config(exclusive=[T_SMAC, T_DMAC, DG], shared=[PC],
                 packet_in_filter=(IN_PORT, b"\x01"), packet_ins=True)
ACLR = role_config(exclusive=[T_ACL], shared=[PC], packet_ins=True)


def join(role, election, config=None):
    """A StreamChannel that arbitrates for `role`; returns (session, first answer)."""
    s = Session(c)
    a = pb.MasterArbitrationUpdate(device_id=dev, election_id=u128(election))
    if role is not None:
        a.role.name = role
        if config is not None:
            a.role.config.CopyFrom(config)
    s.send(pb.StreamMessageRequest(arbitration=a))
    return s, s.next(kind="arbitration")


def arb_code(r):
    if r is None:
        return "timeout"
    if hasattr(r, "code"):
        return "ended " + r.code().name
    return {0: "PRIMARY", 6: "BACKUP"}.get(r.arbitration.status.code, r.arbitration.status.code)


def write(role, election, updates, atomicity=0):
    req = pb.WriteRequest(device_id=dev, role=role, election_id=u128(election), updates=updates,
                          atomicity=atomicity)
    _, o = c.call("write", lambda: c.stub.Write(req))
    return (o["code"], o.get("details"), o.get("message", ""))


def read(role, entities):
    req = pb.ReadRequest(device_id=dev, role=role, entities=entities)
    out = []
    try:
        for r in c.stub.Read(req):
            out.extend(r.entities)
        return "OK", out
    except Exception as e:  # grpc.RpcError
        return e.code().name, e.details()


def te(table, match, action, params=(), priority=0, **kw):
    t = pb.TableEntry(table_id=I.tid(table), priority=priority, **kw)
    for name, fm in match:
        f = t.match.add(field_id=I.field(table, name))
        getattr(f, fm[0]).CopyFrom(fm[1])
    t.action.action.action_id = I.aid(action)
    for name, v in params:
        t.action.action.params.add(param_id=I.param(action, name), value=v)
    return t


def exact(v):
    return ("exact", pb.FieldMatch.Exact(value=v))


def ternary(v, m):
    return ("ternary", pb.FieldMatch.Ternary(value=v, mask=m))


# -------------------------------------------------------------- arbitration
D, r = join(None, 1)
check("default role primary", arb_code(r) == "PRIMARY", arb_code(r))
req = pb.SetForwardingPipelineConfigRequest(device_id=dev, election_id=u128(1),
                                            action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
req.config.p4info.CopyFrom(p4info)
req.config.p4_device_config = prog_json
_, o = c.call("push", lambda: c.stub.SetForwardingPipelineConfig(req))
check("the default role pushes the pipeline", o["code"] == "OK", o)

L, r = join("l2", 10, L2)
check("l2 primary", arb_code(r) == "PRIMARY", arb_code(r))
Lb, r = join("l2", 5, L2)
check("l2 backup", arb_code(r) == "BACKUP", arb_code(r))
# a lower election id than l2's: every role elects on its own
A, r = join("acl", 3, ACLR)
check("acl primary (own election)", arb_code(r) == "PRIMARY", arb_code(r))
M, r = join("mon", 1, role_config())
check("mon primary (a config naming nothing)", arb_code(r) == "PRIMARY", arb_code(r))

for name, role, cfg in [
        ("another config for l2", "l2", role_config(exclusive=[T_SMAC])),
        ("dmac exclusive to l2, named by another role", "bad", role_config(shared=[T_DMAC])),
        ("port_counter shared by l2 and acl, claimed exclusive", "bad", role_config(exclusive=[PC])),
        ("a config on the default role", "", role_config()),
        ("a config type p4jet cannot read", "bad", role_config(type_url="type.googleapis.com/acme.Roles")),
        ("one id both exclusive and shared", "bad", role_config(exclusive=[REG], shared=[REG])),
]:
    s, r = join(role, 77, cfg)
    check(name + ": refused", arb_code(r) == "ended INVALID_ARGUMENT", arb_code(r))
    s.close()

# -------------------------------------------------------------- writes
CC = b(0xCC, 6)
to_cpu = te(DMAC, [("hdr.ethernet.dst_addr", exact(CC))], "IngressImpl.to_cpu")
idle = te(SMAC, [("hdr.ethernet.src_addr", exact(b(0x99, 6)))], "NoAction",
          idle_timeout_ns=300_000_000)
acl = te(ACL, [("hdr.ipv4.dst_addr", ternary(b(0x0A000000, 4), b(0xFF000000, 4)))],
         "IngressImpl.acl_drop", priority=10)

w = write("l2", 10, [update("INSERT", table_entry=to_cpu)])
check("l2 writes dmac", w[0] == "OK", w)
w = write("l2", 10, [update("INSERT", table_entry=idle), update("INSERT", table_entry=acl)],
          atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
check("l2: acl denied, the batch rolled back", w[1] == ["ABORTED", "PERMISSION_DENIED"], w)
w = write("l2", 10, [update("INSERT", table_entry=idle), update("INSERT", table_entry=acl)])
check("l2: smac applied, acl denied", w[1] == ["OK", "PERMISSION_DENIED"] and "role 'l2'" in w[2], w)
w = write("l2", 5, [update("INSERT", table_entry=acl)])
check("l2 backup: not primary", w[0] == "PERMISSION_DENIED", w)
w = write("acl", 3, [update("INSERT", table_entry=acl)])
check("acl writes acl", w[0] == "OK", w)
w = write("acl", 3, [update("MODIFY", table_entry=to_cpu)])
check("acl: dmac denied", w[1] == ["PERMISSION_DENIED"], w)
dce = pb.DirectCounterEntry(table_entry=acl)
dce.data.packet_count = 4
w = write("acl", 3, [update("MODIFY", direct_counter_entry=dce)])
check("acl writes its table's direct counter", w[0] == "OK", w)
ce = pb.CounterEntry(counter_id=PC, index=pb.Index(index=3))
ce.data.packet_count = 1
for role, eid in [("l2", 10), ("acl", 3)]:
    w = write(role, eid, [update("MODIFY", counter_entry=ce)])
    check(f"{role} writes the shared counter", w[0] == "OK", w)
w = write("mon", 1, [update("MODIFY", counter_entry=ce)])
check("mon: counter denied", w[1] == ["PERMISSION_DENIED"], w)
mg = pb.MulticastGroupEntry(multicast_group_id=1)
for p in range(4):
    mg.replicas.add(egress_port=p, instance=0)
pre = pb.PacketReplicationEngineEntry(multicast_group_entry=mg)
w = write("acl", 3, [update("INSERT", packet_replication_engine_entry=pre)])
check("acl: the packet replication engine denied", w[1] == ["PERMISSION_DENIED"], w)
w = write("", 1, [update("INSERT", packet_replication_engine_entry=pre)])
check("default role writes the flood group", w[0] == "OK", w)
de = pb.DigestEntry(digest_id=DG)
de.config.max_timeout_ns = 0
de.config.max_list_size = 1
de.config.ack_timeout_ns = 1_000_000_000
w = write("acl", 3, [update("INSERT", digest_entry=de)])
check("acl: digest denied", w[1] == ["PERMISSION_DENIED"], w)
w = write("l2", 10, [update("INSERT", digest_entry=de)])
check("l2 configures its digest", w[0] == "OK", w)

# -------------------------------------------------------------- reads
all_tables = [pb.Entity(table_entry=pb.TableEntry())]
st, ents = read("l2", all_tables)
check("l2 reads its tables only", st == "OK" and sorted(e.table_entry.table_id for e in ents)
      == sorted([T_SMAC, T_DMAC]), (st, ents if st != "OK" else len(ents)))
st, ents = read("acl", all_tables)
check("acl reads its table only", st == "OK" and [e.table_entry.table_id for e in ents] == [T_ACL],
      st)
st, ents = read("", all_tables)
check("the default role reads every table", st == "OK" and len(ents) == 3, st)
st, msg = read("l2", [pb.Entity(table_entry=pb.TableEntry(table_id=T_ACL))])
check("l2 reading the acl table: denied", st == "PERMISSION_DENIED", (st, msg))
st, ents = read("acl", [pb.Entity(direct_counter_entry=pb.DirectCounterEntry())])
check("acl reads its direct counters", st == "OK" and len(ents) == 1
      and ents[0].direct_counter_entry.data.packet_count == 4, st)
st, ents = read("l2", [pb.Entity(register_entry=pb.RegisterEntry())])
check("l2 reads no register (wildcard)", st == "OK" and len(ents) == 0, st)
st, ents = read("", [pb.Entity(register_entry=pb.RegisterEntry())])
check("the default role reads the registers", st == "OK" and len(ents) == 512, st)
st, msg = read("acl", [pb.Entity(packet_replication_engine_entry=pb.PacketReplicationEngineEntry(
    multicast_group_entry=pb.MulticastGroupEntry()))])
check("acl reading the packet replication engine: denied", st == "PERMISSION_DENIED", st)
st, ents = read("acl", [pb.Entity(digest_entry=pb.DigestEntry())])
check("acl sees no digest config", st == "OK" and len(ents) == 0, st)
st, ents = read("l2", [pb.Entity(digest_entry=pb.DigestEntry())])
check("l2 sees its digest config", st == "OK" and len(ents) == 1, st)

# -------------------------------------------------------------- the pipeline
verify = pb.SetForwardingPipelineConfigRequest(device_id=dev, role="l2", election_id=u128(10),
                                               action=pb.SetForwardingPipelineConfigRequest.VERIFY)
verify.config.p4info.CopyFrom(p4info)
verify.config.p4_device_config = prog_json
_, o = c.call("push", lambda: c.stub.SetForwardingPipelineConfig(verify))
check("l2 may not push a pipeline", o["code"] == "PERMISSION_DENIED", o)
O, r = join("ops", 1, role_config(push=True))
check("ops primary", arb_code(r) == "PRIMARY", arb_code(r))
verify.role = "ops"
verify.election_id.CopyFrom(u128(1))
_, o = c.call("push", lambda: c.stub.SetForwardingPipelineConfig(verify))
check("ops (can_push_pipeline) may", o["code"] == "OK", o)
O.close()

# -------------------------------------------------------------- notifications
print("READY", flush=True)
sessions = {"default": D, "l2": L, "l2 backup": Lb, "acl": A, "mon": M}
got = {k: {"packet_in_ports": set(), "digests": 0, "idle": 0, "arbitration": 0}
       for k in sessions}
end = time.time() + 4
while time.time() < end:
    for k, s in sessions.items():
        r = s.next(timeout=0.05)
        if r is None or hasattr(r, "code"):
            continue
        kind = r.WhichOneof("update")
        if kind == "packet":
            port = [m.value for m in r.packet.metadata if m.metadata_id == IN_PORT][0]
            got[k]["packet_in_ports"].add(int.from_bytes(port, "big"))
        elif kind == "digest":
            got[k]["digests"] += 1
            s.send(pb.StreamMessageRequest(digest_ack=pb.DigestListAck(
                digest_id=r.digest.digest_id, list_id=r.digest.list_id)))
        elif kind == "idle_timeout_notification":
            got[k]["idle"] += 1
        elif kind == "arbitration":
            got[k]["arbitration"] += 1
print("received:", {k: dict(v, packet_in_ports=sorted(v["packet_in_ports"]))
                    for k, v in got.items()}, flush=True)
check("default: every PacketIn", got["default"]["packet_in_ports"] == {1, 2}, got["default"])
check("l2: PacketIns of port 1 only (its filter)", got["l2"]["packet_in_ports"] == {1}, got["l2"])
check("acl: every PacketIn", got["acl"]["packet_in_ports"] == {1, 2}, got["acl"])
check("mon: no PacketIn", got["mon"]["packet_in_ports"] == set(), got["mon"])
check("backup: nothing", got["l2 backup"] == {"packet_in_ports": set(), "digests": 0, "idle": 0,
                                              "arbitration": 0}, got["l2 backup"])
check("digests to default and l2", got["default"]["digests"] >= 1 and got["l2"]["digests"] >= 1,
      (got["default"], got["l2"]))
check("no digest to acl and mon", got["acl"]["digests"] == 0 and got["mon"]["digests"] == 0,
      (got["acl"], got["mon"]))
check("idle timeouts of smac to default and l2", got["default"]["idle"] >= 1
      and got["l2"]["idle"] >= 1, (got["default"], got["l2"]))
check("no idle timeout to acl and mon", got["acl"]["idle"] == 0 and got["mon"]["idle"] == 0,
      (got["acl"], got["mon"]))

# -------------------------------------------------------------- failover in one role
L.close()
r = Lb.next(timeout=5, kind="arbitration")
check("l2 failover: the backup is primary", arb_code(r) == "PRIMARY", arb_code(r))
r = A.next(timeout=1, kind="arbitration")
check("acl is not told", r is None, r)
w = write("l2", 5, [update("DELETE", table_entry=to_cpu)])
check("the new l2 primary writes with the role's config", w[0] == "OK", w)
w = write("l2", 5, [update("DELETE", table_entry=acl)])
check("and still only within it", w[1] == ["PERMISSION_DENIED"], w)

for s in sessions.values():
    s.close()
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
