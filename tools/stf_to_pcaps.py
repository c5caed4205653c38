#!/usr/bin/env python3
"""Turn the `packet` lines of an STF test into per-port pcap files for `--use-files`.

usage: stf_to_pcaps.py TEST.stf OUTDIR [PREFIX]
writes OUTDIR/<PREFIX><port>_in.pcap (default prefix "p"), one frame per `packet` line,
timestamps increasing in file order so that p4jet (which merges inputs by timestamp)
processes them in the STF's order. Standard library only.
"""
import struct
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    stf, outdir = sys.argv[1], sys.argv[2]
    prefix = sys.argv[3] if len(sys.argv) > 3 else "p"
    ports = {}
    t = 0
    for line in open(stf):
        line = line.split("#", 1)[0].strip()
        if not line.startswith("packet "):
            continue
        _, port, *hexdata = line.split()
        data = bytes.fromhex("".join(hexdata))
        t += 1
        ports.setdefault(int(port), []).append((t, data))
    for port, frames in sorted(ports.items()):
        with open(f"{outdir}/{prefix}{port}_in.pcap", "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            for ts, data in frames:
                f.write(struct.pack("<IIII", ts, 0, len(data), len(data)))
                f.write(data)
        print(f"{outdir}/{prefix}{port}_in.pcap: {len(frames)} frames")


if __name__ == "__main__":
    main()
