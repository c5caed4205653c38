#!/usr/bin/env bash
# pcap-file ports (`p4jet run --use-files`) against the in-memory `p4jet bench` of the
# same program and trace, in alternating rounds: basic_l2 with `p4jet gen l2` tables
# (1000 MACs to ports 0..3) and a trace of PACKETS 64-byte frames, all read from
# p0_in.pcap; the outputs are written to p0..p3_out.pcap. Prints per round the bench
# rate, the file-mode rate (packets / forwarding time, the `forwarded for` line of
# `p4jet run`), the whole process's wall time and CPU time, and the ratios; then the
# medians. The CPU ratio (bench CPU ns per packet / file-mode CPU ns per packet, the
# start-up of an empty run taken off) is the one to trust on a busy machine.
#
# Needs `perf` (perf stat counts the CPU time of each run).
# Environment: P4JET (default target/release/p4jet), PACKETS (1000000), ROUNDS (3),
# SECS per bench (2), DIR (a temporary directory; files on a tmpfs or disk as you want).
set -euo pipefail
cd "$(dirname "$0")/.."
P4JET=$(realpath "${P4JET:-target/release/p4jet}")
PACKETS=${PACKETS:-1000000}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-2}
PROG=$(realpath tests/corpus/basic_l2/basic_l2.json)
tmp=${DIR:-$(mktemp -d)}
[ -n "${DIR:-}" ] || trap 'rm -rf "$tmp"' EXIT
"$P4JET" gen l2 --packets "$PACKETS" --out "$tmp/gen" >/dev/null
mkdir -p "$tmp/run" "$tmp/empty"
ln -sf "$tmp/gen/trace.pcap" "$tmp/run/p0_in.pcap"
for p in 0 1 2 3; do
  head -c 24 "$tmp/gen/trace.pcap" >"$tmp/empty/p${p}_in.pcap"
  [ "$p" = 0 ] || cp "$tmp/empty/p${p}_in.pcap" "$tmp/run/p${p}_in.pcap"
done

# run DIR -> "forwarding_s wall_s cpu_s"
run() {
  (
    cd "$1"
    t0=$(date +%s.%N)
    perf stat -x, -e task-clock -o stat.txt "$P4JET" run "$PROG" --use-files 0 \
      -i 0@p0 -i 1@p1 -i 2@p2 -i 3@p3 --thrift-port 0 \
      --commands "$tmp/gen/commands.txt" --exit-when-done >out.txt 2>err.txt
    wall=$(echo "$(date +%s.%N) - $t0" | bc -l)
    grep -q "received $([ "$1" = "$tmp/run" ] && echo "$PACKETS" || echo 0) + copies 0 = sent" err.txt ||
      { echo "run in $1 did not balance:" >&2; tail -5 err.txt >&2; exit 1; }
    fwd=$(sed -n 's/^p4jet: forwarded for \([0-9.]*\) s.*/\1/p' err.txt)
    cpu_ms=$(awk -F, '/task-clock/ {print $1}' stat.txt)
    echo "$fwd $wall $(echo "$cpu_ms / 1000" | bc -l)"
  )
}

printf '%-6s %12s %14s %12s %12s %10s %10s %10s\n' round "bench Mpps" "bench cpu ns" \
  "files Mpps" "files cpu ns" "wall s" "ratio" "cpu ratio"
ratios=() cratios=()
for r in $(seq "$ROUNDS"); do
  b=$("$P4JET" bench "$PROG" --commands "$tmp/gen/commands.txt" --trace "$tmp/gen/trace.pcap" \
    --seconds "$SECS" --json 2>/dev/null)
  bpps=$(echo "$b" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pps"])')
  bcpu=$(echo "$b" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cpu_ns_per_packet"])')
  read -r _ _ cpu0 <<<"$(run "$tmp/empty")"
  read -r fwd wall cpu <<<"$(run "$tmp/run")"
  fpps=$(echo "$PACKETS / $fwd" | bc -l)
  fcpu=$(echo "($cpu - $cpu0) * 1000000000 / $PACKETS" | bc -l)
  ratio=$(echo "$fpps / $bpps" | bc -l)
  cratio=$(echo "$bcpu / $fcpu" | bc -l)
  ratios+=("$ratio") cratios+=("$cratio")
  printf '%-6s %12.2f %14.1f %12.2f %12.1f %10.3f %10.2f %10.2f\n' "$r" \
    "$(echo "$bpps / 1000000" | bc -l)" "$bcpu" "$(echo "$fpps / 1000000" | bc -l)" "$fcpu" \
    "$wall" "$ratio" "$cratio"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf 'median ratio (files / bench, packets per second): %.2f\n' "$(median "${ratios[@]}")"
printf 'median CPU ratio (bench CPU ns / files CPU ns per packet): %.2f\n' "$(median "${cratios[@]}")"
