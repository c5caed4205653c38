"""A Mininet network of P4Runtime switches programmed by a controller, as in the
p4lang tutorials, with p4jet as `simple_switch_grpc`.

    sudo python3 network.py --sw-path /path/to/simple_switch_grpc [--switches 3] [--cli]

Switches s1..sN form a ring (three: a triangle; two: a line); switch sK has host hK
(10.0.K.1/24, gateway 10.0.K.254) on port 1, its ring neighbours on ports 2 and 3.
Every switch starts with `--no-p4`. Once their gRPC ports listen, the topology is
written to `topology.json` in the log directory and the controller
(`controller.py`, run with `--controller-python`, a Python with the PyPI
`p4runtime` and `grpcio` packages) pushes simple_router and the routes. Then every
host pings every other one, the switches are left idle for `--idle-seconds` while
their CPU time and resident memory are read from /proc, and a summary is printed
(and written as JSON with `--summary`). `--cli` opens Mininet's CLI before the
network stops.

Needs root and Mininet (Debian: `apt-get install mininet iputils-ping`); no Open
vSwitch and no Mininet controller are involved.
"""

import argparse
import json
import os
import subprocess
import sys
import time

from mininet.cli import CLI
from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.topo import Topo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from p4runtime_switch import P4Host, P4RuntimeSwitch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "tests", "corpus", "simple_router")
CPU_PORT = 255


def port_mac(k, port):
    return "02:00:00:00:%02x:%02x" % (k, port)


class Ring(Topo):
    """n switches in a ring (a line for two), one host on each."""

    def build(self, n):
        for k in range(1, n + 1):
            self.addSwitch("s%d" % k)
            self.addHost("h%d" % k, ip="10.0.%d.1/24" % k, mac="08:00:00:00:%02x:01" % k)
            self.addLink("h%d" % k, "s%d" % k, port2=1)
        pairs = [(k, k % n + 1) for k in range(1, n + 1)] if n >= 3 else [(1, 2)] if n == 2 else []
        for a, b in pairs:
            # sA's port 3 (next) to sB's port 2 (previous)
            self.addLink("s%d" % a, "s%d" % b, port1=3, port2=2)


def topology(net, n):
    """The topology file the controller reads."""
    switches, hosts = {}, {}
    for k in range(1, n + 1):
        s = net.get("s%d" % k)
        ports = {}
        for port, intf in s.intfs.items():
            link = intf.link
            if link is None:
                continue  # the switch's loopback
            other = link.intf2 if link.intf1 is intf else link.intf1
            entry = {"mac": port_mac(k, port), "peer": other.node.name}
            if isinstance(other.node, P4RuntimeSwitch):
                entry["peer_port"] = other.node.ports[other]
            ports[str(port)] = entry
        switches[s.name] = {"device_id": s.device_id, "grpc_addr": s.grpc_addr,
                            "thrift_port": s.thrift_port, "router_ip": "10.254.0.%d" % k,
                            "ports": ports}
        hosts["h%d" % k] = {"ip": "10.0.%d.1" % k, "prefix": "10.0.%d.0/24" % k,
                            "mac": "08:00:00:00:%02x:01" % k, "switch": s.name, "port": 1}
    return {"switches": switches, "hosts": hosts}


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        cols = f.read().rsplit(")", 1)[1].split()
    return int(cols[11]) + int(cols[12])  # utime, stime


def status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def ping_all(hosts):
    """Every host pings every other one once; returns (sent, lost, [failed pairs])."""
    sent, failed = 0, []
    for src in hosts:
        for dst in hosts:
            if src is dst:
                continue
            sent += 1
            out = src.cmd("ping -c1 -W2 %s" % dst.IP())
            if " 0% packet loss" not in out:
                failed.append("%s->%s" % (src.name, dst.name))
    return sent, len(failed), failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--switches", type=int, default=3)
    ap.add_argument("--sw-path", default="simple_switch_grpc",
                    help="the switch binary (p4jet as simple_switch_grpc)")
    ap.add_argument("--controller-python", default=sys.executable,
                    help="Python with the PyPI p4runtime and grpcio packages")
    ap.add_argument("--p4info", default=os.path.join(CORPUS, "simple_router.p4info.txtpb"))
    ap.add_argument("--json", default=os.path.join(CORPUS, "simple_router.json"))
    ap.add_argument("--log-dir", default="/tmp/p4jet-mininet")
    ap.add_argument("--idle-seconds", type=float, default=10.0)
    ap.add_argument("--summary", help="write the summary as JSON to this file")
    ap.add_argument("--cli", action="store_true", help="open Mininet's CLI at the end")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    if not 1 <= a.switches <= 250:
        ap.error("--switches: 1 to 250")
    setLogLevel("info" if a.verbose else "warning")
    os.makedirs(a.log_dir, exist_ok=True)

    summary = {"switches": a.switches}
    net = Mininet(topo=Ring(a.switches), host=P4Host, controller=None, autoSetMacs=False,
                  switch=lambda name, **kw: P4RuntimeSwitch(
                      name, sw_path=a.sw_path, cpu_port=CPU_PORT, log_dir=a.log_dir, **kw))
    ok = False
    try:
        t0 = time.monotonic()
        net.start()
        switches = [net.get("s%d" % k) for k in range(1, a.switches + 1)]
        for s in switches:
            if not s.wait_started():
                with open(s.log_file) as f:
                    log = f.read()
                raise RuntimeError("%s did not start; its log:\n%s" % (s.name, log))
        summary["switches_up_s"] = time.monotonic() - t0
        print("%d switches listening after %.2f s" % (a.switches, summary["switches_up_s"]))
        print("command line of s1: %s" % switches[0].command_line())

        for k in range(1, a.switches + 1):
            h = net.get("h%d" % k)
            # as the tutorials' topology files: a default route and a static ARP
            # entry for the gateway (the P4 program does not answer ARP)
            h.cmd("ip route add default via 10.0.%d.254 dev %s" % (k, h.defaultIntf().name))
            h.cmd("ip neigh replace 10.0.%d.254 lladdr %s dev %s"
                  % (k, port_mac(k, 1), h.defaultIntf().name))
        topo_file = os.path.join(a.log_dir, "topology.json")
        with open(topo_file, "w") as f:
            json.dump(topology(net, a.switches), f, indent=1)

        t1 = time.monotonic()
        ctl = subprocess.run([a.controller_python, os.path.join(HERE, "controller.py"),
                              "--topology", topo_file, "--p4info", a.p4info, "--json", a.json],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(ctl.stdout, end="")
        summary["controller_s"] = time.monotonic() - t1
        if ctl.returncode != 0:
            raise RuntimeError("the controller failed")

        t2 = time.monotonic()
        sent, lost, failed = ping_all(net.hosts)
        summary["ping_s"] = time.monotonic() - t2
        summary["pings"], summary["pings_lost"] = sent, lost
        summary["converged_s"] = time.monotonic() - t0
        print("pings: %d sent, %d lost%s in %.2f s" % (sent, lost, (": " + " ".join(failed[:20])) if failed else "",
                                                        summary["ping_s"]))
        print("converged (started, programmed, every host pings every host) in %.2f s"
              % summary["converged_s"])

        dead = [s.name for s in switches if not s.alive()]
        if dead:
            raise RuntimeError("switches died: %s" % " ".join(dead))
        # idle: nothing sent for a moment, then CPU time over --idle-seconds
        time.sleep(1)
        hz = os.sysconf("SC_CLK_TCK")
        before = {s.name: cpu_ticks(s.sw_pid) for s in switches}
        time.sleep(a.idle_seconds)
        idle = []
        for s in switches:
            cpu = (cpu_ticks(s.sw_pid) - before[s.name]) / hz / a.idle_seconds * 100
            idle.append({"switch": s.name, "pid": s.sw_pid, "cpu_pct": round(cpu, 2),
                         "rss_kb": status(s.sw_pid, "VmRSS"), "threads": status(s.sw_pid, "Threads")})
        summary["idle"] = idle
        cpus = [i["cpu_pct"] for i in idle]
        rss = [i["rss_kb"] / 1024 for i in idle]
        summary["idle_cpu_pct_mean"] = sum(cpus) / len(cpus)
        summary["idle_cpu_pct_max"] = max(cpus)
        summary["idle_rss_mb_mean"] = sum(rss) / len(rss)
        summary["idle_rss_mb_max"] = max(rss)
        print("idle over %.0f s, per switch: CPU mean %.2f %% max %.2f %% of a core, "
              "RSS mean %.1f MB max %.1f MB, %d threads"
              % (a.idle_seconds, summary["idle_cpu_pct_mean"], summary["idle_cpu_pct_max"],
                 summary["idle_rss_mb_mean"], summary["idle_rss_mb_max"], idle[0]["threads"]))
        ok = lost == 0
        if a.cli:
            CLI(net)
    finally:
        summary["ok"] = ok
        if a.summary:
            with open(a.summary, "w") as f:
                json.dump(summary, f, indent=1)
        net.stop()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
