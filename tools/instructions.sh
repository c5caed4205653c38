#!/usr/bin/env bash
# Instructions per packet per engine: callgrind over `p4jet bench`'s replay loop
# (docs/performance.md, "Method"), for the null program and the benchmark programs.
#
#   tools/instructions.sh [--bin PATH] [--engines "reference interp jit"] [--programs "null basic_l2 ..."]
#
# Traces and table commands come from `p4jet gen` (cached in $P4JET_INSTR_DIR, by default
# target/instructions). Prints one line per program and engine:
#   program  engine  instructions/packet  (instructions / packets)
# Needs valgrind (callgrind_annotate).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=target/release/p4jet
engines="reference interp jit"
programs="null basic_l2 router_large acl_large vxlan_gateway bng"
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin=$2; shift 2 ;;
        --engines) engines=$2; shift 2 ;;
        --programs) programs=$2; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
command -v valgrind >/dev/null || { echo "valgrind is needed" >&2; exit 2; }
[ -x "$bin" ] || { echo "$bin: not built (cargo build --release -p p4jet)" >&2; exit 2; }
work=${P4JET_INSTR_DIR:-target/instructions}
mkdir -p "$work"

# program -> (json, gen use case, gen options)
spec() {
    case "$1" in
        null) echo "null l2 --entries 1000" ;;
        basic_l2) echo "tests/corpus/basic_l2/basic_l2.json l2 --entries 1000" ;;
        l2_large) echo "tests/corpus/bench/l2_large.json l2 --entries 1000000 --program-variant large" ;;
        router_large) echo "tests/corpus/bench/router_large.json ipv4 --entries 100000 --program-variant large" ;;
        acl_large) echo "tests/corpus/bench/acl_large.json acl --entries 10000 --program-variant large" ;;
        vxlan_gateway) echo "tests/corpus/vxlan_gateway/vxlan_gateway.json vxlan --entries 1000" ;;
        bng) echo "tests/corpus/bng/bng.json bng --entries 1000" ;;
        ipv6_router) echo "tests/corpus/ipv6_router/ipv6_router.json ipv6 --entries 1000" ;;
        *) echo "unknown program $1" >&2; exit 2 ;;
    esac
}

printf '%-14s %-10s %12s   %s\n' program engine instr/packet "(instructions / packets)"
for p in $programs; do
    read -r json usecase genopts <<<"$(spec "$p")"
    d="$work/$usecase$(echo "$genopts" | tr -d ' -')"
    if [ ! -f "$d/trace.pcap" ]; then
        # shellcheck disable=SC2086
        "$bin" gen "$usecase" $genopts --packets 100000 --out "$d" >/dev/null
    fi
    cmds=(--commands "$d/commands.txt")
    [ "$p" = null ] && cmds=()
    for e in $engines; do
        out=$(mktemp -d)
        valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" \
            --toggle-collect='p4jet::bench::replay' \
            "$bin" bench "$json" "${cmds[@]}" --trace "$d/trace.pcap" --engine "$e" \
            --seconds 1 --profile-only --json >"$out/out.json" 2>"$out/vg.err"
        total=$(callgrind_annotate "$out/cg.out" 2>/dev/null |
            awk '/PROGRAM TOTALS/ && !x { gsub(",", "", $1); print $1; x = 1 }')
        packets=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['packets'])" "$out/out.json")
        python3 -c "import sys; t, n = int(sys.argv[3]), int(sys.argv[4]); print('%-14s %-10s %12.0f   (%d / %d)' % (sys.argv[1], sys.argv[2], t / n, t, n))" \
            "$p" "$e" "$total" "$packets"
        rm -rf "$out"
    done
done
