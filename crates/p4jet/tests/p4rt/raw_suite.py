"""The raw P4Runtime suite: every RPC and every error case, with the PyPI
`p4runtime` package and `grpcio` only (no client library in between).

    raw_suite.py ADDR DEVICE_ID P4INFO.txtpb PROG.json OTHER.json OUT.json [--check] [--pi]

Runs one fixed scenario against the server at ADDR (a switch started with the
program's CPU port 255 and no table entries) and writes one observation per request
to OUT.json: the status code, message and per-update error codes, the entities
read. The differential test runs it against p4jet and PI's simple_switch_grpc and
compares the two files. With --check the answers p4jet must give are asserted too;
the last line says `N passed, N failed`.
"""

import sys
import time

from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4data_pb2

from p4rt_lib import (Client, Info, Recorder, Session, arbitration_obs, b, load_p4info,
                      update)

addr, dev, p4info_path, json_path, other_json, out_path = sys.argv[1:7]
dev = int(dev)
check = "--check" in sys.argv
# PI's simple_switch_grpc dies (SIGSEGV) on a Read after a VERIFY while no pipeline is
# committed: that step is left out against it
pi = "--pi" in sys.argv
rec = Recorder()
c = Client(addr, dev, rec)
p4info = load_p4info(p4info_path)
I = Info(p4info)
prog_json = open(json_path, "rb").read()

passed = 0
failed = 0


def expect(o, code=None, details=None, msg=None, **kv):
    """Asserts an observation (when checking p4jet)."""
    global passed, failed
    if not check:
        return
    problems = []
    if code is not None and o.get("code") != code:
        problems.append(f"code {o.get('code')} != {code}")
    if details is not None and o.get("details") != details:
        problems.append(f"details {o.get('details')} != {details}")
    if msg is not None and msg not in (o.get("message") or ""):
        problems.append(f"message {o.get('message')!r} lacks {msg!r}")
    for k, v in kv.items():
        if o.get(k) != v:
            problems.append(f"{k} {o.get(k)!r} != {v!r}")
    if problems:
        failed += 1
        print(f"FAIL {o['step']}: " + "; ".join(problems), file=sys.stderr)
    else:
        passed += 1


def obs(name, d):
    d = dict(d)
    d["step"] = name
    rec.obs.append(d)
    return d


def te(table, match=(), action=None, params=(), priority=0, **kw):
    t = pb.TableEntry(table_id=I.tid(table), priority=priority, **kw)
    for fid, fm in match:
        f = t.match.add()
        f.field_id = fid
        getattr(f, fm[0]).CopyFrom(fm[1])
    if action is not None:
        t.action.action.action_id = I.aid(action)
        for pid, v in params:
            t.action.action.params.add(param_id=pid, value=v)
    return t


def exact(v):
    return ("exact", pb.FieldMatch.Exact(value=v))


def lpm(v, n):
    return ("lpm", pb.FieldMatch.LPM(value=v, prefix_len=n))


def ternary(v, m):
    return ("ternary", pb.FieldMatch.Ternary(value=v, mask=m))


def rng(lo, hi):
    return ("range", pb.FieldMatch.Range(low=lo, high=hi))


def optional(v):
    return ("optional", pb.FieldMatch.Optional(value=v))


def set_pipeline(name, action, config=True, js=prog_json, cookie=7, election=10, info=p4info):
    req = pb.SetForwardingPipelineConfigRequest(device_id=dev, election_id=pb.Uint128(low=election),
                                                action=action)
    if config:
        req.config.p4info.CopyFrom(info)
        req.config.p4_device_config = js
        req.config.cookie.cookie = cookie
    return c.call(name, lambda: c.stub.SetForwardingPipelineConfig(req))


SMAC, DMAC, ACL, ROUTE = "IngressImpl.smac", "IngressImpl.dmac", "IngressImpl.acl", "IngressImpl.route"
MAC = I.field(DMAC, "hdr.ethernet.dst_addr")
FWD = "IngressImpl.forward"
PORT = I.param(FWD, "port")
SEL = I.obj_id("action_profiles", "IngressImpl.route_selector")
NHOP = "IngressImpl.set_nhop"

# ---------------------------------------------------------------- before a pipeline
r, o = c.call("capabilities", lambda: c.stub.Capabilities(pb.CapabilitiesRequest()))
o["version"] = r.p4runtime_api_version if r else None
expect(o, "OK", version="1.5.0")
_, o = c.call("get config, no pipeline", lambda: c.stub.GetForwardingPipelineConfig(
    pb.GetForwardingPipelineConfigRequest(device_id=dev)))
expect(o, "FAILED_PRECONDITION", msg="No forwarding pipeline config set for this device")
_, o = c.read("read, no pipeline", [pb.Entity(table_entry=pb.TableEntry())])
expect(o, "FAILED_PRECONDITION", msg="No forwarding pipeline config set for this device")
_, o = c.write("write, no stream, no election id", [], election_id=None)
expect(o, "FAILED_PRECONDITION", msg="No forwarding pipeline config set for this device")

# ---------------------------------------------------------------- arbitration
a = Session(c)
a.arbitrate(dev, 10)
o = obs("arbitration: first client", arbitration_obs(a.next(kind="arbitration")))
expect(o, arbitration="OK", election_id=10)
bk = Session(c)
bk.arbitrate(dev, 5)
o = obs("arbitration: lower election id is backup", arbitration_obs(bk.next(kind="arbitration")))
expect(o, arbitration="ALREADY_EXISTS", message="Is backup", election_id=10)
dup = Session(c)
dup.arbitrate(dev, 10)
o = obs("arbitration: duplicate election id", arbitration_obs(dup.next()))
expect(o, arbitration="stream ended", code="INVALID_ARGUMENT")
_, o = c.write("write, no pipeline, primary", [], election_id=10)
expect(o, "FAILED_PRECONDITION", msg="No forwarding pipeline config set for this device")
_, o = c.write("write from the backup", [], election_id=5)
expect(o, "PERMISSION_DENIED")
_, o = c.write("write without election id while a primary exists", [], election_id=None)
expect(o, "PERMISSION_DENIED")
_, o = set_pipeline("set pipeline from the backup", pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT, election=5)
expect(o, "PERMISSION_DENIED")

# ---------------------------------------------------------------- pipeline config
_, o = set_pipeline("set pipeline UNSPECIFIED", pb.SetForwardingPipelineConfigRequest.UNSPECIFIED)
expect(o, "INVALID_ARGUMENT")
_, o = set_pipeline("VERIFY", pb.SetForwardingPipelineConfigRequest.VERIFY)
expect(o, "OK")
_, o = set_pipeline("VERIFY without config", pb.SetForwardingPipelineConfigRequest.VERIFY, config=False)
expect(o, "INVALID_ARGUMENT")
if pi:
    obs("read after VERIFY (still no pipeline)", {"skipped": "crashes PI (SIGSEGV)"})
else:
    _, o = c.read("read after VERIFY (still no pipeline)", [pb.Entity(table_entry=pb.TableEntry())])
    expect(o, "FAILED_PRECONDITION")
if pi:
    # PI commits a JSON that does not match the P4Info (OK) and then refuses the
    # right one ("Error in first phase of device update"): every later step would
    # fail. PI_FINDINGS in p4rt_diff.rs shows it on its own.
    obs("VERIFY_AND_COMMIT, a JSON that does not match the P4Info",
        {"skipped": "PI accepts it and cannot load another program afterwards"})
    obs("VERIFY_AND_COMMIT, bytes that are no JSON", {"skipped": "see above"})
else:
    _, o = set_pipeline("VERIFY_AND_COMMIT, a JSON that does not match the P4Info",
                        pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
                        js=open(other_json, "rb").read())
    expect(o, "INVALID_ARGUMENT")
    _, o = set_pipeline("VERIFY_AND_COMMIT, bytes that are no JSON",
                        pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT, js=b"\xff\x00garbage")
    expect(o, "INVALID_ARGUMENT")
_, o = set_pipeline("VERIFY_AND_COMMIT", pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
expect(o, "OK")
for rt, name in [(0, "ALL"), (1, "COOKIE_ONLY"), (2, "P4INFO_AND_COOKIE"), (3, "DEVICE_CONFIG_AND_COOKIE")]:
    r, o = c.call(f"get config {name}", lambda: c.stub.GetForwardingPipelineConfig(
        pb.GetForwardingPipelineConfigRequest(device_id=dev, response_type=rt)))
    if r is not None:
        o["cookie"] = r.config.cookie.cookie if r.config.HasField("cookie") else None
        o["has_p4info"] = r.config.HasField("p4info")
        o["device_config_len"] = len(r.config.p4_device_config)
    expect(o, "OK", cookie=7, has_p4info=rt in (0, 2),
           device_config_len=len(prog_json) if rt in (0, 3) else 0)

# ---------------------------------------------------------------- table entries
fwd = lambda mac, port: te(DMAC, [(MAC, exact(b(mac, 6)))], FWD, [(PORT, b(port, 2))])
_, o = c.write("insert exact entries", [update("INSERT", table_entry=fwd(0x10 + i, i)) for i in range(4)], 10)
expect(o, "OK")
_, o = c.write("insert a duplicate, continue on error",
               [update("INSERT", table_entry=fwd(0x20, 1)), update("INSERT", table_entry=fwd(0x10, 1))], 10)
expect(o, "UNKNOWN", details=["OK", "ALREADY_EXISTS"])
_, o = c.write("modify an entry", [update("MODIFY", table_entry=fwd(0x10, 3))], 10)
expect(o, "OK")
_, o = c.write("modify a missing entry", [update("MODIFY", table_entry=fwd(0x99, 3))], 10)
expect(o, "UNKNOWN", details=["NOT_FOUND"])
_, o = c.write("delete a missing entry", [update("DELETE", table_entry=fwd(0x98, 0))], 10)
expect(o, "UNKNOWN", details=["NOT_FOUND"])
wide = te(DMAC, [(MAC, exact(b(1 << 48, 7)))], FWD, [(PORT, b(1, 2))])
_, o = c.write("exact value wider than the field", [update("INSERT", table_entry=wide)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])
padded = te(DMAC, [(MAC, exact(b(0x21, 8)))], FWD, [(PORT, b(1, 3))])
_, o = c.write("values with leading zero bytes", [update("INSERT", table_entry=padded)], 10)
expect(o, "OK")
wide_p = te(DMAC, [(MAC, exact(b(0x77, 6)))], FWD, [(PORT, b(512, 2))])
_, o = c.write("action parameter wider than 9 bits", [update("INSERT", table_entry=wide_p)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])
bad_t = pb.TableEntry(table_id=12345)
_, o = c.write("unknown table id", [update("INSERT", table_entry=bad_t)], 10)
expect(o, "UNKNOWN", details=["NOT_FOUND"])
bad_a = te(DMAC, [(MAC, exact(b(0x78, 6)))])
bad_a.action.action.action_id = I.aid("IngressImpl.set_nhop")
_, o = c.write("action not of the table", [update("INSERT", table_entry=bad_a)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])
miss = te(DMAC, [], FWD, [(PORT, b(1, 2))])
_, o = c.write("exact field left out", [update("INSERT", table_entry=miss)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])
_, o = c.write("update type UNSPECIFIED", [update("UNSPECIFIED", table_entry=fwd(0x30, 1))], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])

# acl: ternary, range, optional, priorities
AD = I.field(ACL, "hdr.ipv4.dst_addr")
AP = I.field(ACL, "meta.l4_dst_port")
AO = I.field(ACL, "hdr.ipv4.protocol")
acl1 = te(ACL, [(AD, ternary(b(0x0a420000, 4), b(0xffff0000, 4)))], "IngressImpl.acl_drop", priority=50)
acl2 = te(ACL, [(AP, rng(b(53, 2), b(53, 2))), (AO, optional(b(17, 1)))], "IngressImpl.acl_to_cpu", priority=20)
_, o = c.write("insert ternary/range/optional entries", [update("INSERT", table_entry=acl1),
                                                         update("INSERT", table_entry=acl2)], 10)
expect(o, "OK")
noprio = te(ACL, [(AD, ternary(b(0x0a000000, 4), b(0xff000000, 4)))], "IngressImpl.acl_drop")
_, o = c.write("ternary entry without priority", [update("INSERT", table_entry=noprio)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])
dc = te(ACL, [(AD, ternary(b(0, 4), b(0, 4)))], "IngressImpl.acl_drop", priority=5)
_, o = c.write("ternary field with mask 0 (must be left out)", [update("INSERT", table_entry=dc)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])
unmasked = te(ACL, [(AD, ternary(b(0x0a0000ff, 4), b(0xff000000, 4)))], "IngressImpl.acl_drop", priority=6)
_, o = c.write("ternary value bits outside the mask", [update("INSERT", table_entry=unmasked)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])
prio_exact = fwd(0x31, 1)
prio_exact.priority = 5
_, o = c.write("priority on an exact table", [update("INSERT", table_entry=prio_exact)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])

# default entry
dflt = te(DMAC, [], "IngressImpl.to_cpu")
dflt.is_default_action = True
_, o = c.write("modify the default entry", [update("MODIFY", table_entry=dflt)], 10)
expect(o, "OK")
_, o = c.write("insert a default entry", [update("INSERT", table_entry=dflt)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])

# action profile: members, groups, indirect entries, one-shot
def member(mid, port, mac):
    m = pb.ActionProfileMember(action_profile_id=SEL, member_id=mid)
    m.action.action_id = I.aid(NHOP)
    m.action.params.add(param_id=I.param(NHOP, "port"), value=b(port, 2))
    m.action.params.add(param_id=I.param(NHOP, "dst_mac"), value=b(mac, 6))
    return m


_, o = c.write("insert members", [update("INSERT", action_profile_member=member(i, i, 0xd00 + i)) for i in range(1, 4)], 10)
expect(o, "OK")
_, o = c.write("insert a duplicate member", [update("INSERT", action_profile_member=member(1, 1, 1))], 10)
expect(o, "UNKNOWN", details=["ALREADY_EXISTS"])
g = pb.ActionProfileGroup(action_profile_id=SEL, group_id=7)
for i in range(1, 4):
    g.members.add(member_id=i, weight=1)
_, o = c.write("insert a group", [update("INSERT", action_profile_group=g)], 10)
expect(o, "OK")
RD = I.field(ROUTE, "hdr.ipv4.dst_addr")
r1 = te(ROUTE, [(RD, lpm(b(0x0a000000, 4), 8))])
r1.action.action_profile_group_id = 7
r2 = te(ROUTE, [(RD, lpm(b(0x0a020000, 4), 16))])
r2.action.action_profile_member_id = 3
_, o = c.write("indirect entries (group, member)", [update("INSERT", table_entry=r1), update("INSERT", table_entry=r2)], 10)
expect(o, "OK")
lpm_bad = te(ROUTE, [(RD, lpm(b(0x0a0000ff, 4), 8))])
lpm_bad.action.action_profile_member_id = 1
_, o = c.write("lpm value bits past the prefix", [update("INSERT", table_entry=lpm_bad)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])
_, o = c.write("delete a member a group uses", [update("DELETE", action_profile_member=member(1, 1, 1))], 10)
expect(o, "UNKNOWN")
oneshot = te(ROUTE, [(RD, lpm(b(0xc0a80000, 4), 16))])
for i, w in [(1, 1), (2, 2)]:
    apa = oneshot.action.action_profile_action_set.action_profile_actions.add(weight=w)
    apa.action.action_id = I.aid(NHOP)
    apa.action.params.add(param_id=I.param(NHOP, "port"), value=b(i, 2))
    apa.action.params.add(param_id=I.param(NHOP, "dst_mac"), value=b(0xe00 + i, 6))
_, o = c.write("one-shot entry while members and groups are used", [update("INSERT", table_entry=oneshot)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])

# ---------------------------------------------------------------- atomicity
good = fwd(0x40, 1)
bad = te(DMAC, [(MAC, exact(b(1 << 48, 7)))], FWD, [(PORT, b(1, 2))])
_, o = c.write("ROLLBACK_ON_ERROR with a bad update", [update("INSERT", table_entry=good), update("INSERT", table_entry=bad)],
               10, atomicity=1)
expect(o, "UNKNOWN", details=["ABORTED", "INVALID_ARGUMENT"])
_, o = c.read("the rolled-back entry is absent", [pb.Entity(table_entry=fwd(0x40, 1))])
expect(o, "OK", count=0)
_, o = c.write("ROLLBACK_ON_ERROR with a duplicate", [update("INSERT", table_entry=fwd(0x41, 1)),
                                                      update("INSERT", table_entry=fwd(0x10, 1))], 10, atomicity=1)
expect(o, "UNKNOWN")
_, o = c.read("rolled back after the model refused", [pb.Entity(table_entry=fwd(0x41, 1))])
expect(o, "OK", count=0)
_, o = c.write("DATAPLANE_ATOMIC batch", [update("INSERT", table_entry=fwd(0x50 + i, i)) for i in range(4)], 10, atomicity=2)
expect(o, "OK")

# ---------------------------------------------------------------- reads and wildcards
ents, o = c.read("read dmac", [pb.Entity(table_entry=pb.TableEntry(table_id=I.tid(DMAC)))])
o["entries"] = sorted(e.table_entry.match[0].exact.value.hex() + ":" +
                      e.table_entry.action.action.params[0].value.hex() for e in ents)
expect(o, "OK", count=10)
ents, o = c.read("read every table (table_id 0)", [pb.Entity(table_entry=pb.TableEntry())])
expect(o, "OK", count=10 + 2 + 2)
ents, o = c.read("read one entry by key", [pb.Entity(table_entry=fwd(0x10, 0))])
o["port"] = ents[0].table_entry.action.action.params[0].value.hex() if ents else None
expect(o, "OK", count=1, port="03")
ents, o = c.read("read acl", [pb.Entity(table_entry=pb.TableEntry(table_id=I.tid(ACL)))])
o["priorities"] = sorted(e.table_entry.priority for e in ents)
o["fields"] = sorted(len(e.table_entry.match) for e in ents)
expect(o, "OK", count=2, priorities=[20, 50], fields=[1, 2])
dread = pb.TableEntry(table_id=I.tid(DMAC), is_default_action=True)
ents, o = c.read("read the default entry", [pb.Entity(table_entry=dread)])
o["action"] = ents[0].table_entry.action.action.action_id if ents else None
expect(o, "OK", count=1, action=I.aid("IngressImpl.to_cpu"))
ents, o = c.read("read members", [pb.Entity(action_profile_member=pb.ActionProfileMember(action_profile_id=SEL))])
expect(o, "OK", count=3)
ents, o = c.read("read groups", [pb.Entity(action_profile_group=pb.ActionProfileGroup(action_profile_id=SEL))])
o["members"] = [len(e.action_profile_group.members) for e in ents]
expect(o, "OK", count=1, members=[3])

# ---------------------------------------------------------------- counters, meters, registers
CNT = I.obj_id("counters", "IngressImpl.port_counter")
ce = pb.CounterEntry(counter_id=CNT, index=pb.Index(index=3))
ce.data.packet_count = 5
ce.data.byte_count = 500
_, o = c.write("write a counter cell", [update("MODIFY", counter_entry=ce)], 10)
expect(o, "OK")
_, o = c.write("insert a counter cell", [update("INSERT", counter_entry=ce)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])
ents, o = c.read("read a counter cell", [pb.Entity(counter_entry=pb.CounterEntry(counter_id=CNT, index=pb.Index(index=3)))])
o["data"] = [ents[0].counter_entry.data.packet_count, ents[0].counter_entry.data.byte_count] if ents else None
expect(o, "OK", count=1, data=[5, 500])
ents, o = c.read("read a whole counter", [pb.Entity(counter_entry=pb.CounterEntry(counter_id=CNT))])
expect(o, "OK", count=512)
ents, o = c.read("read every counter (counter_id 0)", [pb.Entity(counter_entry=pb.CounterEntry())])
expect(o, "OK", count=512)
ents, o = c.read("counter index out of range", [pb.Entity(counter_entry=pb.CounterEntry(counter_id=CNT, index=pb.Index(index=9999)))])
expect(o, "OUT_OF_RANGE")
ents, o = c.read("read direct counters of every table", [pb.Entity(direct_counter_entry=pb.DirectCounterEntry(table_entry=pb.TableEntry()))])
expect(o, "OK", count=2)
dce = pb.DirectCounterEntry(table_entry=acl1)
dce.data.packet_count = 9
_, o = c.write("write a direct counter", [update("MODIFY", direct_counter_entry=dce)], 10)
expect(o, "OK")
ents, o = c.read("read a direct counter", [pb.Entity(direct_counter_entry=pb.DirectCounterEntry(table_entry=acl1))])
o["packets"] = ents[0].direct_counter_entry.data.packet_count if ents else None
expect(o, "OK", count=1, packets=9)
MTR = I.obj_id("meters", "IngressImpl.port_meter")
me = pb.MeterEntry(meter_id=MTR, index=pb.Index(index=3))
me.config.cir, me.config.cburst, me.config.pir, me.config.pburst = 1000, 100, 2000, 200
_, o = c.write("write a meter cell", [update("MODIFY", meter_entry=me)], 10)
expect(o, "OK")
ents, o = c.read("read a meter cell", [pb.Entity(meter_entry=pb.MeterEntry(meter_id=MTR, index=pb.Index(index=3)))])
o["config"] = [ents[0].meter_entry.config.cir, ents[0].meter_entry.config.cburst,
               ents[0].meter_entry.config.pir, ents[0].meter_entry.config.pburst] if ents else None
expect(o, "OK", count=1, config=[1000, 100, 2000, 200])
REG = I.obj_id("registers", "IngressImpl.port_packets")
re_ = pb.RegisterEntry(register_id=REG, index=pb.Index(index=2))
re_.data.bitstring = b(0xdeadbeef, 4)
_, o = c.write("write a register cell", [update("MODIFY", register_entry=re_)], 10)
expect(o, "OK")
ents, o = c.read("read a register cell", [pb.Entity(register_entry=pb.RegisterEntry(register_id=REG, index=pb.Index(index=2)))])
o["value"] = ents[0].register_entry.data.bitstring.hex() if ents else None
expect(o, "OK", count=1, value="deadbeef")
re_.data.bitstring = b(1 << 32, 5)
_, o = c.write("register value wider than 32 bits", [update("MODIFY", register_entry=re_)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])
ents, o = c.read("read a whole register", [pb.Entity(register_entry=pb.RegisterEntry(register_id=REG))])
expect(o, "OK", count=512)

# ---------------------------------------------------------------- controller metadata
def meta_of(name, key):
    ents, o = c.read(name, [pb.Entity(table_entry=key)])
    o["metadata"] = ents[0].table_entry.metadata.hex() if ents else None
    return o


cookie = fwd(0x70, 1)
cookie.metadata = b"cookie-1"
_, o = c.write("insert an entry with metadata", [update("INSERT", table_entry=cookie)], 10)
expect(o, "OK")
expect(meta_of("its metadata read back", fwd(0x70, 1)), "OK", metadata=b"cookie-1".hex())
cookie.metadata = b"cookie-2"
_, o = c.write("modify its metadata", [update("MODIFY", table_entry=cookie)], 10)
expect(o, "OK")
expect(meta_of("the new metadata read back", fwd(0x70, 1)), "OK", metadata=b"cookie-2".hex())
_, o = c.write("modify it without metadata", [update("MODIFY", table_entry=fwd(0x70, 2))], 10)
expect(o, "OK")
expect(meta_of("no metadata after that", fwd(0x70, 1)), "OK", metadata="")
cookie.metadata = b"cookie-3"
_, o = c.write("delete it, insert it again with metadata, delete, insert without",
               [update("MODIFY", table_entry=cookie), update("DELETE", table_entry=fwd(0x70, 1)),
                update("INSERT", table_entry=cookie), update("DELETE", table_entry=fwd(0x70, 1)),
                update("INSERT", table_entry=fwd(0x70, 1))], 10)
expect(o, "OK")
expect(meta_of("a deleted entry's metadata is not the new one's", fwd(0x70, 1)), "OK", metadata="")
_, o = c.write("remove it", [update("DELETE", table_entry=fwd(0x70, 1))], 10)
expect(o, "OK")

# ---------------------------------------------------------------- PRE, value sets, digests
mg = pb.MulticastGroupEntry(multicast_group_id=1)
for p in (0, 1, 2, 3, 255):
    mg.replicas.add(egress_port=p, instance=0)
_, o = c.write("insert a multicast group", [update("INSERT", packet_replication_engine_entry=pb.PacketReplicationEngineEntry(multicast_group_entry=mg))], 10)
expect(o, "OK")
_, o = c.write("insert it again", [update("INSERT", packet_replication_engine_entry=pb.PacketReplicationEngineEntry(multicast_group_entry=mg))], 10)
expect(o, "UNKNOWN", details=["ALREADY_EXISTS"])
ents, o = c.read("read multicast groups", [pb.Entity(packet_replication_engine_entry=pb.PacketReplicationEngineEntry(multicast_group_entry=pb.MulticastGroupEntry()))])
o["replicas"] = sorted(len(e.packet_replication_engine_entry.multicast_group_entry.replicas) for e in ents)
expect(o, "OK", count=1, replicas=[5])
mg.metadata = b"flood"
_, o = c.write("modify the group with metadata", [update("MODIFY", packet_replication_engine_entry=pb.PacketReplicationEngineEntry(multicast_group_entry=mg))], 10)
expect(o, "OK")
ents, o = c.read("the group's metadata read back", [pb.Entity(packet_replication_engine_entry=pb.PacketReplicationEngineEntry(multicast_group_entry=pb.MulticastGroupEntry(multicast_group_id=1)))])
o["metadata"] = [e.packet_replication_engine_entry.multicast_group_entry.metadata.hex() for e in ents]
expect(o, "OK", count=1, metadata=[b"flood".hex()])
cs = pb.CloneSessionEntry(session_id=100)
cs.replicas.add(egress_port=255, instance=0)
_, o = c.write("insert a clone session", [update("INSERT", packet_replication_engine_entry=pb.PacketReplicationEngineEntry(clone_session_entry=cs))], 10)
expect(o, "OK")
ents, o = c.read("read clone sessions", [pb.Entity(packet_replication_engine_entry=pb.PacketReplicationEngineEntry(clone_session_entry=pb.CloneSessionEntry()))])
expect(o, "OK", count=1)
VS = I.obj_id("value_sets", "ParserImpl.punt_ports")
vse = pb.ValueSetEntry(value_set_id=VS)
for port in (0x43, 0xec8):
    m = vse.members.add()
    fm = m.match.add(field_id=1)
    fm.exact.value = b(port, 2)
_, o = c.write("write a value set", [update("MODIFY", value_set_entry=vse)], 10)
expect(o, "OK")
ents, o = c.read("read value sets", [pb.Entity(value_set_entry=pb.ValueSetEntry())])
o["members"] = [len(e.value_set_entry.members) for e in ents]
expect(o, "OK", count=1, members=[2])
DG = I.obj_id("digests", "learn_t")
de = pb.DigestEntry(digest_id=DG)
de.config.max_timeout_ns = 1000000
de.config.max_list_size = 1
de.config.ack_timeout_ns = 1000000000
_, o = c.write("configure a digest", [update("INSERT", digest_entry=de)], 10)
expect(o, "OK")
ents, o = c.read("read digest configs", [pb.Entity(digest_entry=pb.DigestEntry())])
expect(o, "OK", count=1)

# ---------------------------------------------------------------- idle timeout
SM = I.field(SMAC, "hdr.ethernet.src_addr")
idle = te(SMAC, [(SM, exact(b(0x99, 6)))], "NoAction", idle_timeout_ns=200_000_000)
_, o = c.write("insert an entry with an idle timeout", [update("INSERT", table_entry=idle)], 10)
expect(o, "OK")
q = pb.TableEntry(table_id=I.tid(SMAC))
q.time_since_last_hit.elapsed_ns = 0
ents, o = c.read("read it with time_since_last_hit", [pb.Entity(table_entry=q)])
o["timeout_ns"] = [e.table_entry.idle_timeout_ns for e in ents]
o["has_elapsed"] = [e.table_entry.HasField("time_since_last_hit") for e in ents]
expect(o, "OK", count=1, timeout_ns=[200_000_000], has_elapsed=[True])
r = a.next(timeout=10, kind="idle_timeout_notification")
got = None if r is None or hasattr(r, "code") else r.idle_timeout_notification
o = obs("idle timeout notification", {
    "entries": None if got is None else [e.match[0].exact.value.hex() for e in got.table_entry]})
expect(o, entries=["99"])
no_to = te(DMAC, [(MAC, exact(b(0x98, 6)))], FWD, [(PORT, b(1, 2))], idle_timeout_ns=1000)
_, o = c.write("idle timeout on a table without support_timeout", [update("INSERT", table_entry=no_to)], 10)
expect(o, "UNKNOWN", details=["INVALID_ARGUMENT"])

# ---------------------------------------------------------------- packet I/O
# a packet_out to port 255 comes back as a packet_in (ingress_port 0, p4rt_switch README)
PO = [m for m in p4info.controller_packet_metadata if m.preamble.name == "packet_out"][0]
frame = bytes.fromhex("0000000000fe00000000000a88b5") + bytes(46)
po = pb.PacketOut(payload=frame)
po.metadata.add(metadata_id=PO.metadata[0].id, value=b(255, 2))
a.send(pb.StreamMessageRequest(packet=po))
r = a.next(timeout=5, kind="packet")
o = obs("packet-out to the CPU port comes back as a packet-in",
        {"payload": r.packet.payload.hex() if r is not None and not hasattr(r, "code") else None,
         "ingress_port": int.from_bytes(r.packet.metadata[0].value, "big") if r is not None and not hasattr(r, "code") else None})
expect(o, payload=frame.hex(), ingress_port=0)
bad_po = pb.PacketOut(payload=frame)
bad_po.metadata.add(metadata_id=99, value=b(1, 1))
a.send(pb.StreamMessageRequest(packet=bad_po))
r = a.next(timeout=2, kind="error")
o = obs("packet-out with an unknown metadata id", {"error": pb.StreamMessageResponse.DESCRIPTOR and (
    None if r is None or hasattr(r, "code") else r.error.canonical_code)})
expect(o, error=3)
bk.send(pb.StreamMessageRequest(packet=po))
r = bk.next(timeout=2, kind="error")
o = obs("packet-out from the backup", {"error": None if r is None or hasattr(r, "code") else r.error.canonical_code})
expect(o, error=7)
# a jumbo packet-out (1 MB) comes back whole
big = pb.PacketOut(payload=frame + bytes(1_000_000))
big.metadata.extend(po.metadata)
a.send(pb.StreamMessageRequest(packet=big))
r = a.next(timeout=5, kind="packet")
o = obs("a 1 MB packet-out comes back as a packet-in",
        {"length": None if r is None or hasattr(r, "code") else len(r.packet.payload)})
expect(o, length=len(frame) + 1_000_000)
# a flood: the switch stays up and answers
for _ in range(20000):
    a.send(pb.StreamMessageRequest(packet=pb.PacketOut(payload=frame[:20])))
time.sleep(0.5)
r, o = c.call("capabilities after a packet-out flood", lambda: c.stub.Capabilities(pb.CapabilitiesRequest()))
expect(o, "OK")
ents, o = c.read("state intact after the flood", [pb.Entity(table_entry=pb.TableEntry(table_id=I.tid(DMAC)))])
expect(o, "OK", count=10)

# ---------------------------------------------------------------- malformed protobuf
for name, method, body in [("malformed Write", "/p4.v1.P4Runtime/Write", b"\xff\xff\xff\xff"),
                           ("truncated Write", "/p4.v1.P4Runtime/Write", b"\x22\x80"),
                           ("malformed SetForwardingPipelineConfig",
                            "/p4.v1.P4Runtime/SetForwardingPipelineConfig", b"\x2a\x05\x0a")]:
    raw = c.channel.unary_unary(method)
    _, o = c.call(name, lambda: raw(body))
    if check and o["code"] not in ("INTERNAL", "INVALID_ARGUMENT"):
        failed += 1
        print(f"FAIL {name}: {o}", file=sys.stderr)
    elif check:
        passed += 1
rd = c.channel.unary_stream("/p4.v1.P4Runtime/Read")
_, o = c.call("malformed Read", lambda: list(rd(b"\x12\x05\xff")))
expect(o, "INTERNAL")
st = c.channel.stream_stream("/p4.v1.P4Runtime/StreamChannel")
_, o = c.call("malformed StreamChannel message", lambda: list(st(iter([b"\xff\xff\xff"]))))
expect(o, "INTERNAL")
_, o = c.write("the primary still writes after a malformed stream", [], 10)
expect(o, "OK")
ents, o = c.read("state intact after malformed requests", [pb.Entity(table_entry=pb.TableEntry(table_id=I.tid(DMAC)))])
expect(o, "OK", count=10)

# ---------------------------------------------------------------- failover and device ids
a.close()
r = bk.next(timeout=5, kind="arbitration")
o = obs("failover: the backup becomes primary", arbitration_obs(r))
expect(o, arbitration="OK", election_id=5)
_, o = c.write("the new primary writes", [update("DELETE", table_entry=fwd(0x50, 0))], 5)
expect(o, "OK")
_, o = c.write("write to another device id", [], 5, device_id=dev + 7)
expect(o, "NOT_FOUND")
wrong = Session(c)
wrong.arbitrate(dev + 7, 1)
o = obs("arbitration for another device id", arbitration_obs(wrong.next()))
expect(o, arbitration="stream ended", code="NOT_FOUND")
# ---------------------------------------------------------------- reconcile
kept = fwd(0x10, 3)
kept.metadata = b"kept"
_, o = c.write("metadata before the reconcile", [update("MODIFY", table_entry=kept)], 5)
expect(o, "OK")
_, o = set_pipeline("RECONCILE_AND_COMMIT with the same program",
                    pb.SetForwardingPipelineConfigRequest.RECONCILE_AND_COMMIT, election=5, cookie=8)
expect(o, "OK")
ents, o = c.read("entries kept by the reconcile", [pb.Entity(table_entry=pb.TableEntry(table_id=I.tid(DMAC)))])
expect(o, "OK", count=9)
expect(meta_of("metadata kept by the reconcile", fwd(0x10, 0)), "OK", metadata=b"kept".hex())
r, o = c.call("cookie after the reconcile", lambda: c.stub.GetForwardingPipelineConfig(
    pb.GetForwardingPipelineConfigRequest(device_id=dev, response_type=1)))
o["cookie"] = r.config.cookie.cookie if r is not None else None
expect(o, "OK", cookie=8)

# ---------------------------------------------------------------- roles
rs = Session(c)
rs.arbitrate(dev, 1, role="ops")
o = obs("arbitration of another role", arbitration_obs(rs.next(kind="arbitration")))
expect(o, arbitration="OK", election_id=1)
req = pb.WriteRequest(device_id=dev, role="ops", election_id=pb.Uint128(low=1),
                      updates=[update("INSERT", table_entry=fwd(0x60, 2))])
_, o = c.call("write as the primary of another role", lambda: c.stub.Write(req))
expect(o, "OK")
req = pb.WriteRequest(device_id=dev, role="ops", election_id=pb.Uint128(low=5),
                      updates=[update("INSERT", table_entry=fwd(0x61, 2))])
_, o = c.call("write to a role with another role's election id", lambda: c.stub.Write(req))
expect(o, "PERMISSION_DENIED")
rs.close()

# ---------------------------------------------------------------- const tables
cf_info = load_p4info(json_path.replace("p4rt_switch/p4rt_switch.json", "control_flow/control_flow.p4info.txtpb"))
cf_json = open(json_path.replace("p4rt_switch/p4rt_switch.json", "control_flow/control_flow.json"), "rb").read()
_, o = set_pipeline("VERIFY_AND_COMMIT control_flow (a const table)",
                    pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT, js=cf_json, election=5, info=cf_info)
expect(o, "OK")
CI = Info(cf_info)
ents, o = c.read("read the const table", [pb.Entity(table_entry=pb.TableEntry(table_id=CI.tid("IngressImpl.const_tbl")))])
o["const"] = sorted(set(e.table_entry.is_const for e in ents)) if hasattr(pb.TableEntry(), "is_const") else None
expect(o, "OK")
ct = pb.TableEntry(table_id=CI.tid("IngressImpl.const_tbl"), priority=1)
m = ct.match.add(field_id=1)
m.exact.value = b(9, 1)
ct.action.action.action_id = CI.aid("IngressImpl.set_mark")
ct.action.action.params.add(param_id=1, value=b(1, 1))
_, o = c.write("insert into a const table", [update("INSERT", table_entry=ct)], 5)
expect(o, "UNKNOWN", details=["PERMISSION_DENIED"])
cd = pb.TableEntry(table_id=CI.tid("IngressImpl.const_tbl"), is_default_action=True)
cd.action.action.action_id = CI.aid("IngressImpl.set_mark")
cd.action.action.params.add(param_id=1, value=b(1, 1))
_, o = c.write("modify a const default action", [update("MODIFY", table_entry=cd)], 5)
expect(o, "UNKNOWN", details=["PERMISSION_DENIED"])

bk.close()
dup.close()
wrong.close()

rec.dump(out_path)
if check:
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
