"""Helpers shared by the PTF tests of p4jet (crates/p4jet/tests/ptf).

The tests run against `p4jet run PROGRAM.json --commands PROGRAM.commands` whose
ports 0..3 are veth ends; PTF holds the peer ends (`--interface N@peerN`).
crates/p4jet/tests/ptf_veth.rs builds that topology and runs them; see the
"PTF over veth" section of docs/ports.md to run them by hand.

No class here has a runTest method, so PTF does not collect any of them as a test.
"""

import ptf
import ptf.ptfutils
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from ptf.dataplane import match_exp_pkt

# switch ports the tests use (p4jet -i 0@veth0 ... 3@veth3)
PORTS = [0, 1, 2, 3]


class P4jetTest(BaseTest):
    """Base class: a fresh dataplane queue per test and strict checks."""

    def setUp(self):
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        missing = [p for p in PORTS if (0, p) not in self.dataplane.ports]
        self.assertFalse(missing, "PTF was not given ports %s (--interface)" % missing)
        # anything still queued from an earlier test (there should be nothing)
        self.dataplane.flush()

    def send(self, port, pkt):
        tu.send_packet(self, port, pkt)

    def expect(self, pkt, port):
        """`pkt` comes out of `port` and nothing comes out anywhere else."""
        tu.verify_packet(self, pkt, port)
        tu.verify_no_other_packets(self)

    def expect_next(self, pkt, port, what=""):
        """The next frame the switch sends, on any port, is `pkt` on `port`.

        Stricter than verify_packet, which skips non-matching frames on the port it
        watches: used after frames the program must drop, so that a frame wrongly
        forwarded ahead of `pkt` fails the test instead of being skipped.
        """
        res = tu.dp_poll(
            self, device_number=0, port_number=None, timeout=ptf.ptfutils.default_timeout
        )
        if isinstance(res, self.dataplane.PollFailure):
            self.fail("%s: no frame at all; expected one on port %d.\n%s" % (what, port, res.format()))
        got = bytes(res.packet)
        if res.port != port or not match_exp_pkt(pkt, got):
            self.fail(
                "%s: the next frame out of the switch was on port %d:\n  %s\n"
                "expected on port %d:\n  %s"
                % (what, res.port, got.hex(), port, bytes(pkt).hex())
            )
        tu.verify_no_other_packets(self)
        return got

    def expect_dropped(self, in_port, dropped, sentinel, sentinel_exp, sentinel_port, what=""):
        """Every frame of `dropped`, sent on `in_port`, is dropped.

        After them a `sentinel` that the program forwards is sent on the same port:
        frames of one port go through the switch in order, so when the sentinel's
        output is the first frame seen on any port, none of `dropped` came out (no
        reliance on a timeout alone).
        """
        for pkt in dropped:
            self.send(in_port, pkt)
        self.send(in_port, sentinel)
        return self.expect_next(sentinel_exp, sentinel_port, what)

    def verify_burst(self, sent):
        """`sent`: (ingress port, egress port, expected frame) in the order sent.

        Every expected frame arrives exactly once on its egress port, nothing else
        arrives, and the frames of one ingress port leave each egress port in the
        order they were sent (frames of different ingress ports may interleave)."""
        want = {}
        for seq, (inp, out, exp) in enumerate(sent):
            want.setdefault(out, []).append((bytes(exp), inp, seq))
        for out, frames in sorted(want.items()):
            index = {f: (inp, seq) for f, inp, seq in frames}
            self.assertEqual(len(index), len(frames), "expected frames must be distinct")
            last = {}
            for n in range(len(frames)):
                res = tu.dp_poll(self, device_number=0, port_number=out, timeout=ptf.ptfutils.default_timeout)
                if isinstance(res, self.dataplane.PollFailure):
                    self.fail("port %d: %d of %d frames arrived" % (out, n, len(frames)))
                got = bytes(res.packet)
                if got not in index:
                    self.fail("port %d: unexpected frame %s" % (out, got.hex()))
                inp, seq = index.pop(got)
                self.assertGreater(seq, last.get(inp, -1), "port %d: frames of port %d reordered" % (out, inp))
                last[inp] = seq
        tu.verify_no_other_packets(self)


def csum16(data):
    """The Internet checksum (ones' complement of the ones' complement sum)."""
    if len(data) % 2:
        data = data + b"\x00"
    s = 0
    for i in range(0, len(data), 2):
        s += (data[i] << 8) | data[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF
