"""A finsy controller that learns MAC addresses from digests (p4rt_switch).

    finsy_learning.py ADDR DEVICE_ID P4INFO.txtpb PROG.json MAC[,MAC...]

finsy connects, arbitrates, pushes the pipeline (p4force), floods through
multicast group 1, and configures the `learn_t` digest. Each digest sample
(src_addr, ingress_port) becomes an smac entry (NoAction: learnt) and a dmac entry
(forward to the port); the list is acknowledged. Prints `READY` once the switch is
programmed and `LEARNT <mac> <port>` per learnt address; exits 0 once every MAC
given is learnt and the dmac entries read back (1 after 120 s).
"""

import asyncio
import os
import sys
from pathlib import Path

import finsy as fy

addr, dev, p4info, prog, expected = sys.argv[1:6]
expected = {int(m.replace(":", ""), 16) for m in expected.split(",")}
learnt = {}
done = asyncio.Event()


def fmt(mac):
    return ":".join(f"{b:02x}" for b in mac.to_bytes(6, "big"))


async def ready(sw: fy.Switch):
    group = fy.P4MulticastGroupEntry(1, replicas=[(p, 0) for p in range(4)])
    await sw.write([+group])
    await sw.write([+fy.P4DigestEntry("learn_t", max_list_size=1, max_timeout_ns=0,
                                      ack_timeout_ns=1_000_000_000)])
    print("READY", flush=True)
    async for msg in sw.read_digests("learn_t"):
        for sample in msg:
            mac, port = sample["src_addr"], sample["ingress_port"]
            if mac in learnt:
                continue
            learnt[mac] = port
            await sw.write([
                +fy.P4TableEntry("smac", match=fy.P4TableMatch(src_addr=mac),
                                 action=fy.P4TableAction("NoAction")),
                +fy.P4TableEntry("dmac", match=fy.P4TableMatch(dst_addr=mac),
                                 action=fy.P4TableAction("forward", port=port)),
            ])
            print("LEARNT", fmt(mac), port, flush=True)
        await sw.write([msg.ack()])
        if expected <= set(learnt):
            # the entries are read back as written
            entries = [e async for e in sw.read(fy.P4TableEntry("dmac"))]
            print("DMAC", len(entries), flush=True)
            done.set()


async def main():
    opts = fy.SwitchOptions(p4info=Path(p4info), p4blob=Path(prog), p4force=True,
                            device_id=int(dev), ready_handler=ready)
    sw = fy.Switch("sw1", addr, opts)
    task = asyncio.create_task(fy.Controller([sw]).run())
    try:
        await asyncio.wait_for(done.wait(), timeout=float(os.environ.get("P4JET_FINSY_TIMEOUT", "120")))
    except asyncio.TimeoutError:
        print("TIMEOUT: learnt", [fmt(m) for m in learnt], file=sys.stderr, flush=True)
        os._exit(1)
    task.cancel()
    # finsy's controller keeps its streams: leave at once
    os._exit(0)


asyncio.run(main())
