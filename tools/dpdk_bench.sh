#!/usr/bin/env bash
# p4jet on DPDK net_null vdevs against dpdk-testpmd in io forwarding mode, one
# forwarding core each, in alternating rounds: testpmd, p4jet with the null program,
# p4jet with basic_l2 (64-byte frames, all to port 0). Prints Mpps per run, the medians
# and the ratios to testpmd.
#
# Needs root, Debian's `dpdk-dev` package (dpdk-testpmd) and p4jet built with the DPDK
# ports: cargo build --release -p p4jet --features dpdk
# Environment: P4JET (default target/release/p4jet), SECS per run (5), ROUNDS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
P4JET=${P4JET:-target/release/p4jet}
SECS=${SECS:-5}
ROUNDS=${ROUNDS:-3}
EAL="--no-huge --no-shconf --no-telemetry -m 512 --no-pci --log-level=notice"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the null program of `p4jet bench` (parses nothing, everything to port 0)
sed -n '/NULL_PROGRAM: &str = r#"/,/^}"#;/p' crates/p4jet/src/bench.rs |
  sed '1s/.*r#"//; $s/"#;//' >"$tmp/null.json"
# net_null's frames are all zeros: basic_l2 forwards destination 00:..:00 to port 0
echo 'table_add IngressImpl.dmac forward 00:00:00:00:00:00 => 0' >"$tmp/l2.commands"

testpmd() {
  # main lcore + one forwarding lcore; Rx-pps printed every second
  timeout -s INT $((SECS + 3)) dpdk-testpmd -l 0,1 $EAL --vdev net_null0 -- \
    --forward-mode=io --port-topology=loop --nb-cores=1 --stats-period=1 --total-num-mbufs=8192 \
    >"$tmp/testpmd.out" 2>&1 || true
  # the per-second Tx rates after the first second, averaged
  grep -o 'Tx-pps: *[0-9]*' "$tmp/testpmd.out" | awk '{print $2}' | tail -n +2 |
    awk '{s+=$1; n++} END {if (n) printf "%.3f\n", s/n/1e6; else print "0"}'
}

p4jet() { # PROGRAM [ARGS...]
  local prog=$1
  shift
  "$P4JET" run "$prog" "$@" -i 0@dpdk:net_null0 --duration "$SECS" \
    --thrift-port $((20000 + RANDOM % 20000)) \
    --notifications-addr "ipc://$tmp/notify.ipc" >"$tmp/p4jet.out" 2>"$tmp/p4jet.err" || {
    cat "$tmp/p4jet.err" >&2
    echo 0
    return
  }
  # frames sent on port 0 during --duration
  sed -n 's/.*port 0@net_null0 (dpdk.*tx \([0-9]*\) (.*/\1/p' "$tmp/p4jet.err" |
    awk -v s="$SECS" '{t+=$1} END {printf "%.3f\n", t/s/1e6}'
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

: >"$tmp/tp"
: >"$tmp/null"
: >"$tmp/l2"
echo "round  testpmd  p4jet-null  p4jet-basic_l2   (Mpps, load average)"
for r in $(seq 1 "$ROUNDS"); do
  a=$(testpmd)
  b=$(p4jet "$tmp/null.json")
  c=$(p4jet tests/corpus/basic_l2/basic_l2.json --commands "$tmp/l2.commands")
  echo "$a" >>"$tmp/tp"
  echo "$b" >>"$tmp/null"
  echo "$c" >>"$tmp/l2"
  printf "%5d %8s %11s %15s   (%s)\n" "$r" "$a" "$b" "$c" "$(cut -d' ' -f1 /proc/loadavg)"
done
tp=$(median <"$tmp/tp")
nu=$(median <"$tmp/null")
l2=$(median <"$tmp/l2")
echo "median $tp $nu $l2"
awk -v t="$tp" -v n="$nu" -v l="$l2" 'BEGIN {
  printf "p4jet null / testpmd: %.2fx   p4jet basic_l2 / testpmd: %.2fx\n", n/t, l/t }'
