"""Mininet nodes for P4Runtime switches, started the way the p4lang tutorials start
bmv2's `simple_switch_grpc`; point `sw_path` at p4jet (a symlink named
`simple_switch_grpc`, or `p4jet` itself followed by `run`) to run p4jet instead.

The command line is the tutorials' one, flag for flag:

    simple_switch_grpc -i 1@s1-eth1 -i 2@s1-eth2 ... --nanolog ipc:///tmp/bm-0-log.ipc \
        --device-id 0 --no-p4 --thrift-port 9090 \
        -- --grpc-server-addr 0.0.0.0:50051 --cpu-port 255

and a switch counts as started once its gRPC port listens (the tutorials read the
kernel's socket table for that, so does this module).
"""

import os
import signal
import tempfile
import time

from mininet.log import error, info
from mininet.moduledeps import pathCheck
from mininet.node import Host, Switch

START_TIMEOUT_S = 20


def listening_on(port):
    """Whether a TCP socket of this network namespace listens on `port` (IPv4 or
    IPv6), from /proc/net/tcp{,6}: the same check as the tutorials' netstat helper,
    without opening a connection."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    local, state = cols[1], cols[3]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            continue
    return False


class P4Host(Host):
    """A host whose interface does its own checksums (as the tutorials' P4Host):
    with veth offloads on, a TCP or UDP frame leaves with a partial checksum that a
    software switch forwards as it is. ICMP (ping) is unaffected."""

    def config(self, **params):
        r = super().config(**params)
        intf = self.defaultIntf()
        for off in ("rx", "tx", "sg"):
            self.cmd("ethtool --offload %s %s off 2>/dev/null" % (intf.name, off))
        self.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
        return r


class P4RuntimeSwitch(Switch):
    """A P4Runtime switch process (`simple_switch_grpc` or p4jet) on the node's
    interfaces. Without `json_path` it starts with `--no-p4` and waits for a
    controller's SetForwardingPipelineConfig."""

    next_grpc_port = 50051
    next_thrift_port = 9090
    next_device_id = 0

    def __init__(self, name, sw_path="simple_switch_grpc", json_path=None,
                 grpc_port=None, thrift_port=None, device_id=None, cpu_port=None,
                 log_dir="/tmp", extra_args=(), **kwargs):
        Switch.__init__(self, name, **kwargs)
        self.sw_path = sw_path
        pathCheck(sw_path.split()[0])
        self.json_path = json_path
        if grpc_port is None:
            grpc_port = P4RuntimeSwitch.next_grpc_port
            P4RuntimeSwitch.next_grpc_port += 1
        if thrift_port is None:
            thrift_port = P4RuntimeSwitch.next_thrift_port
            P4RuntimeSwitch.next_thrift_port += 1
        if device_id is None:
            device_id = P4RuntimeSwitch.next_device_id
            P4RuntimeSwitch.next_device_id += 1
        self.grpc_port = grpc_port
        self.thrift_port = thrift_port
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.log_file = os.path.join(log_dir, "p4s.%s.log" % name)
        self.extra_args = list(extra_args)
        self.sw_pid = None

    @property
    def grpc_addr(self):
        return "127.0.0.1:%d" % self.grpc_port

    def command_line(self):
        args = [self.sw_path]
        for port, intf in sorted(self.intfs.items()):
            if not intf.IP():
                args += ["-i", "%d@%s" % (port, intf.name)]
        args += ["--nanolog", "ipc:///tmp/bm-%d-log.ipc" % self.device_id]
        args += ["--device-id", str(self.device_id)]
        args.append(self.json_path if self.json_path else "--no-p4")
        args += ["--thrift-port", str(self.thrift_port)]
        args += self.extra_args
        args += ["--", "--grpc-server-addr", "0.0.0.0:%d" % self.grpc_port]
        if self.cpu_port is not None:
            args += ["--cpu-port", str(self.cpu_port)]
        return " ".join(args)

    def start(self, controllers):
        if listening_on(self.grpc_port):
            error("%s: port %d is taken by another process\n" % (self.name, self.grpc_port))
            raise RuntimeError("gRPC port %d in use" % self.grpc_port)
        cmd = self.command_line()
        info("%s: %s\n" % (self.name, cmd))
        with tempfile.NamedTemporaryFile() as f:
            self.cmd("%s > %s 2>&1 & echo $! >> %s" % (cmd, self.log_file, f.name))
            self.sw_pid = int(f.read())

    def wait_started(self, timeout_s=START_TIMEOUT_S):
        """Waits until the gRPC port listens; False if the process died or the time
        ran out."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            if listening_on(self.grpc_port):
                return True
            time.sleep(0.02)
        return False

    def alive(self):
        """Whether the process runs (a zombie does not)."""
        if self.sw_pid is None:
            return False
        try:
            with open("/proc/%d/stat" % self.sw_pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def stop(self, deleteIntfs=True):
        if self.sw_pid is not None:
            try:
                os.kill(self.sw_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + 10
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.02)
            if self.alive():
                os.kill(self.sw_pid, signal.SIGKILL)
            self.cmd("wait")
            self.sw_pid = None
        super().stop(deleteIntfs)
