"""Small helpers for the P4Runtime test scripts: a client over the PyPI `p4runtime`
package and `grpcio`, a StreamChannel session, entities built from P4Info names,
and a record of every answer (status code, message, per-update error codes) so that
two servers (p4jet and PI's simple_switch_grpc) can be compared request by request.
"""

import json
import queue
import sys
import threading

import grpc
from google.protobuf import text_format
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc as pbg


def load_p4info(path):
    p = p4info_pb2.P4Info()
    with open(path) as f:
        text_format.Parse(f.read(), p)
    return p


class Info:
    """Name → id lookups over a P4Info."""

    def __init__(self, p4info):
        self.p = p4info

    def _find(self, objs, name):
        for o in objs:
            if o.preamble.name == name or o.preamble.alias == name:
                return o
        raise KeyError(name)

    def table(self, name):
        return self._find(self.p.tables, name)

    def action(self, name):
        return self._find(self.p.actions, name)

    def tid(self, name):
        return self.table(name).preamble.id

    def aid(self, name):
        return self.action(name).preamble.id

    def field(self, table, name):
        for m in self.table(table).match_fields:
            if m.name == name:
                return m.id
        raise KeyError(name)

    def param(self, action, name):
        for p in self.action(action).params:
            if p.name == name:
                return p.id
        raise KeyError(name)

    def obj_id(self, kind, name):
        return self._find(getattr(self.p, kind), name).preamble.id


def u128(v):
    return pb.Uint128(high=v >> 64, low=v & ((1 << 64) - 1))


def b(v, nbytes):
    return int(v).to_bytes(nbytes, "big")


class Recorder:
    """Keeps one observation per request: what the server answered."""

    def __init__(self):
        self.obs = []

    def status(self, name, err=None, extra=None):
        o = {"step": name}
        if err is None:
            o["code"] = "OK"
        else:
            o["code"] = err.code().name
            o["message"] = err.details()
            md = dict(err.trailing_metadata() or [])
            raw = md.get("grpc-status-details-bin")
            if raw:
                st = status_pb2.Status()
                st.ParseFromString(raw)
                codes = []
                for d in st.details:
                    e = pb.Error()
                    d.Unpack(e)
                    codes.append(code_pb2.Code.Name(e.canonical_code))
                o["details"] = codes
        if extra is not None:
            o.update(extra)
        self.obs.append(o)
        return o

    def dump(self, path):
        with open(path, "w") as f:
            json.dump(self.obs, f, indent=1, sort_keys=True)


class Client:
    def __init__(self, addr, device_id, rec):
        self.addr = addr
        self.device_id = device_id
        self.rec = rec
        self.channel = grpc.insecure_channel(addr)
        self.stub = pbg.P4RuntimeStub(self.channel)

    def call(self, name, fn, extra=None):
        """Runs fn(); records OK or the error; returns (result or None, obs)."""
        try:
            r = fn()
            return r, self.rec.status(name, None, extra)
        except grpc.RpcError as e:
            return None, self.rec.status(name, e, extra)

    def write(self, name, updates, election_id=1, atomicity=0, device_id=None):
        req = pb.WriteRequest(
            device_id=self.device_id if device_id is None else device_id,
            election_id=u128(election_id) if election_id is not None else None,
            updates=updates,
            atomicity=atomicity,
        )
        return self.call(name, lambda: self.stub.Write(req))

    def read(self, name, entities, device_id=None):
        req = pb.ReadRequest(
            device_id=self.device_id if device_id is None else device_id, entities=entities
        )
        out = []

        def go():
            n = 0
            for r in self.stub.Read(req):
                n += 1
                out.extend(r.entities)
            return n

        n, o = self.call(name, go)
        o["count"] = len(out)
        o["responses"] = n
        return out, o


def update(kind, **entity):
    t = {"INSERT": pb.Update.INSERT, "MODIFY": pb.Update.MODIFY, "DELETE": pb.Update.DELETE,
         "UNSPECIFIED": pb.Update.UNSPECIFIED}[kind]
    return pb.Update(type=t, entity=pb.Entity(**entity))


class Session:
    """One StreamChannel: send requests, take responses (with a timeout)."""

    def __init__(self, client):
        self.q = queue.Queue()
        self.responses = queue.Queue()
        self.error = None
        self.call = client.stub.StreamChannel(self._requests())
        self.t = threading.Thread(target=self._reader, daemon=True)
        self.t.start()

    def _requests(self):
        while True:
            m = self.q.get()
            if m is None:
                return
            yield m

    def _reader(self):
        try:
            for r in self.call:
                self.responses.put(r)
        except grpc.RpcError as e:
            self.error = e
            self.responses.put(e)

    def send(self, m):
        self.q.put(m)

    def arbitrate(self, device_id, election_id, role=None):
        a = pb.MasterArbitrationUpdate(device_id=device_id, election_id=u128(election_id))
        if role is not None:
            a.role.name = role
        self.send(pb.StreamMessageRequest(arbitration=a))

    def next(self, timeout=5.0, kind=None):
        """The next response (of `kind`, skipping others); None on timeout; an
        RpcError when the stream ended with an error."""
        import time
        end = time.time() + timeout
        while True:
            left = end - time.time()
            if left <= 0:
                return None
            try:
                r = self.responses.get(timeout=left)
            except queue.Empty:
                return None
            if isinstance(r, grpc.RpcError):
                return r
            if kind is None or r.WhichOneof("update") == kind:
                return r

    def close(self):
        self.q.put(None)
        try:
            self.call.cancel()
        except Exception:
            pass


def arbitration_obs(r):
    if r is None:
        return {"arbitration": "timeout"}
    if isinstance(r, grpc.RpcError):
        return {"arbitration": "stream ended", "code": r.code().name, "message": r.details()}
    a = r.arbitration
    return {
        "arbitration": code_pb2.Code.Name(a.status.code),
        "message": a.status.message,
        "election_id": (a.election_id.high << 64) | a.election_id.low,
    }


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)
