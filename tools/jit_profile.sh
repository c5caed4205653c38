#!/usr/bin/env bash
# Instructions per packet inside the generated code, per function and per machine
# instruction: callgrind over `p4jet bench`'s replay loop (as tools/instructions.sh),
# with the JIT's machine code written out (P4JET_JIT_CODE_DIR) and disassembled.
#
#   tools/jit_profile.sh [--bin PATH] [--threshold N] PROGRAM.json [bench options...]
#
# e.g. tools/jit_profile.sh tests/corpus/bench/router_large.json \
#          --commands R/commands.txt --trace R/trace.pcap
#
# Prints each generated function's instructions per packet, then its disassembly with
# the instructions executed per packet in front of every instruction run at least N
# times per packet (default 0.3). Calls to helpers show unrelocated targets.
# Needs valgrind, objdump (binutils) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=target/release/p4jet
threshold=0.3
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin=$2; shift 2 ;;
        --threshold) threshold=$2; shift 2 ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--bin PATH] [--threshold N] PROGRAM.json [bench options...]" >&2; exit 2; }
for t in valgrind objdump python3; do
    command -v "$t" >/dev/null || { echo "$t is needed" >&2; exit 2; }
done
[ -x "$bin" ] || { echo "$bin: not built (cargo build --release -p p4jet)" >&2; exit 2; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir "$out/code"
P4JET_JIT_CODE_DIR="$out/code" valgrind --tool=callgrind --dump-instr=yes \
    --callgrind-out-file="$out/cg.out" --toggle-collect='p4jet::bench::replay' \
    "$bin" bench "$@" --engine jit --seconds 1 --profile-only --json >"$out/out.json" 2>"$out/vg.err" || {
    tail -20 "$out/vg.err" >&2
    exit 1
}

case "$(uname -m)" in
    x86_64) march=i386:x86-64 ;;
    aarch64) march=aarch64 ;;
    *) echo "objdump: no machine name for $(uname -m)" >&2; exit 2 ;;
esac
python3 - "$out/cg.out" "$out/out.json" "$out/code" "$threshold" "$march" <<'PY'
import collections, json, os, re, subprocess, sys

cg, js, code, th, march = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
packets = json.load(open(js))["packets"]
if not packets:
    sys.exit("no packets were forwarded")
funcs = []
for f in sorted(os.listdir(code)):
    m = re.match(r"(.*)-([0-9a-f]+)\.bin$", f)
    if m:
        base = int(m.group(2), 16)
        funcs.append((m.group(1), base, base + os.path.getsize(os.path.join(code, f)), f))
counts = collections.Counter()
last, after_call = 0, False
for line in open(cg):
    if line.startswith("calls="):
        after_call = True
        continue
    if not line or line[0] not in "0123456789+-*":
        continue
    p = line.split()
    a = p[0]
    if a.startswith("0x"):
        addr = int(a, 16)
    elif a[0] in "+-":
        addr = last + int(a)
    elif a == "*":
        addr = last
    else:
        addr = int(a)
    last = addr
    if after_call:
        # (the cost of the call made from this instruction, not its own)
        after_call = False
        continue
    if len(p) >= 3:
        counts[addr] += int(p[2])
total = 0
for name, lo, hi, f in funcs:
    n = sum(c for a, c in counts.items() if lo <= a < hi)
    if n == 0:
        continue
    total += n
    print(f"== {name} at {lo:#x}: {n / packets:.1f} instructions per packet")
    asm = subprocess.run(
        ["objdump", "-D", "-b", "binary", f"-m{march}", "--no-show-raw-insn",
         f"--adjust-vma={lo}", os.path.join(code, f)],
        capture_output=True, text=True, check=True).stdout
    for l in asm.splitlines():
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)", l)
        if not m:
            continue
        k = counts.get(int(m.group(1), 16), 0) / packets
        mark = f"{k:7.2f}" if k >= th else " " * 7
        print(f"{mark}  {m.group(1)}  {m.group(2)}")
print(f"== generated code in all: {total / packets:.1f} instructions per packet ({packets} packets)")
PY
