#!/usr/bin/env bash
# Rates of p4jet on a veth pair next to a minimal AF_XDP forwarder, same run.
#
#   netns G: g0 ==veth== a0 --forwarder--> b0 ==veth== s0 :netns S
#                        (a0, b0 in netns F)
#
# A generator (examples/veth_gen: 64-byte UDP frames, 256 flows, AF_PACKET TX
# ring, as fast as it can) runs in G for the whole benchmark. Forwarders run in
# F one at a time, alternating in rounds (the starting forwarder rotates, so
# every forwarder sees early and late conditions):
#   xdp_fwd        examples/xdp_fwd a0 b0 (AF_XDP, native XDP, copy mode)
#   p4jet-afxdp    p4jet run basic_l2 -i 0@a0 -i 1@b0 --port-type af_xdp
#                  (one UMEM shared by both ports: frames leave from their rx chunk)
#   p4jet-afxdp-copy   the same with --xdp-umem per-port (a UMEM per port: each
#                  frame is copied from a0's UMEM and into b0's)
#   p4jet-afpacket p4jet run basic_l2 -i 0@a0 -i 1@b0 --port-type af_packet
# For each run: WARMUP s after the start, then s0's rx counter over SECS s is the
# rate at the sink; g0's tx counter over the same window is the offered rate;
# the 1-minute load average at the end of the window is printed with it (it
# includes the generator and the forwarder: about 2 on an idle machine), and the
# CPU time over the window of the forwarder process, of the generator process,
# and the machine's softirq and steal time, in CPUs (1.00 = one CPU throughout).
# "Mpps per forwarder CPU" (sink rate / forwarder CPU) depends less on how much
# CPU other work left us than the rate itself.
#
# Usage (root, from the workspace root, after building):
#   cargo build --release -p p4jet --bin p4jet
#   cargo build --release -p p4jet-io --example xdp_fwd --example veth_gen
#   tools/veth_bench.sh [--rounds N] [--secs S] [--warmup S] [--workers N] [--only NAME,NAME]
# Binaries: $P4JET, $XDP_FWD, $VETH_GEN, default ${CARGO_TARGET_DIR:-target}/release/...
# Namespaces vbg-PID, vbf-PID, vbs-PID are removed on exit, also on failure or ^C.
set -u

ROUNDS=5
SECS=5
WARMUP=2
WORKERS=1
ONLY="xdp_fwd,p4jet-afxdp,p4jet-afxdp-copy,p4jet-afpacket"
while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --secs) SECS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "veth_bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
REL=${CARGO_TARGET_DIR:-$ROOT/target}/release
P4JET=${P4JET:-$REL/p4jet}
XDP_FWD=${XDP_FWD:-$REL/examples/xdp_fwd}
VETH_GEN=${VETH_GEN:-$REL/examples/veth_gen}
PROG=$ROOT/tests/corpus/basic_l2/basic_l2.json

[ "$(id -u)" = 0 ] || { echo "veth_bench: needs root (network namespaces)" >&2; exit 1; }
for b in "$P4JET" "$XDP_FWD" "$VETH_GEN"; do
    [ -x "$b" ] || { echo "veth_bench: $b missing: build it first (see --help)" >&2; exit 1; }
done

G=vbg-$$ F=vbf-$$ S=vbs-$$
TMP=$(mktemp -d /tmp/veth_bench.XXXXXX)
GEN_PID="" FWD_PID=""

cleanup() {
    # only the processes started here, by pid
    for p in $FWD_PID $GEN_PID; do
        kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    # deleting a namespace deletes the veth ends in it, and so their peers
    for ns in $G $F $S; do ip netns del "$ns" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "veth_bench: $*" >&2; exit 1; }

# --- topology ---------------------------------------------------------------
for ns in $G $F $S; do
    ip netns add "$ns" || die "ip netns add $ns failed"
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ip -n "$ns" link set lo up
done
ip -n "$F" link add a0 type veth peer name g0 netns "$G" || die "veth a0/g0"
ip -n "$F" link add b0 type veth peer name s0 netns "$S" || die "veth b0/s0"
ip -n "$G" link set g0 up && ip -n "$F" link set a0 up &&
    ip -n "$F" link set b0 up && ip -n "$S" link set s0 up || die "link up"

# basic_l2: the generator's destination MAC goes to port 1 (b0)
CMDS=$TMP/veth_bench.commands
echo "table_add IngressImpl.dmac forward 02:00:00:00:00:02 => 1" >"$CMDS"

counter() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"; }
now() { date +%s.%N; }
loadavg() { cut -d' ' -f1 /proc/loadavg; }
# CPU ticks (1/CLK_TCK s) used by process $1 (all threads), user + system
proc_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# machine-wide "softirq steal" ticks
sys_ticks() { awk '$1 == "cpu" { print $8, $9 }' /proc/stat; }
HZ=$(getconf CLK_TCK)

ip netns exec "$G" "$VETH_GEN" g0 >"$TMP/gen.log" 2>&1 &
GEN_PID=$!
sleep 0.5
kill -0 "$GEN_PID" 2>/dev/null || die "generator failed: $(cat "$TMP/gen.log")"

start_forwarder() { # NAME LOG
    case "$1" in
    xdp_fwd) ip netns exec "$F" "$XDP_FWD" a0 b0 >"$2" 2>&1 & ;;
    p4jet-afxdp | p4jet-afxdp-copy | p4jet-afpacket)
        local pt=af_xdp umem=shared
        [ "$1" = p4jet-afpacket ] && pt=af_packet
        [ "$1" = p4jet-afxdp-copy ] && umem=per-port
        ip netns exec "$F" "$P4JET" run "$PROG" --commands "$CMDS" \
            -i 0@a0 -i 1@b0 --port-type "$pt" --xdp-umem "$umem" --workers "$WORKERS" >"$2" 2>&1 &
        ;;
    *) die "unknown forwarder $1" ;;
    esac
    FWD_PID=$!
}

IFS=, read -r -a NAMES <<<"$ONLY"
N=${#NAMES[@]}
RESULTS=$TMP/results
: >"$RESULTS"
echo "veth_bench: $ROUNDS rounds x ${NAMES[*]}, ${SECS} s per run after ${WARMUP} s warm-up, $(nproc) CPUs, kernel $(uname -r)"
# CPU columns in CPUs (1.00 = one CPU busy for the whole window): the forwarder
# process, the generator process, softirq time and steal time of the whole machine
printf '%-5s %-17s %8s %8s %6s %6s %6s %6s %6s  %s\n' round forwarder offered sink load fwdCPU genCPU sirq steal "forwarder's own counters"
printf '%-5s %-17s %8s %8s %6s %6s %6s %6s %6s\n' "" "" Mpps Mpps "" CPUs CPUs CPUs CPUs
for r in $(seq 1 "$ROUNDS"); do
    for k in $(seq 0 $((N - 1))); do
        name=${NAMES[$(((k + r - 1) % N))]}
        log=$TMP/$name.$r.log
        start_forwarder "$name" "$log"
        sleep "$WARMUP"
        if ! kill -0 "$FWD_PID" 2>/dev/null; then
            wait "$FWD_PID" 2>/dev/null; FWD_PID=""
            die "$name exited early: $(cat "$log")"
        fi
        t0=$(now); s0=$(counter "$S" s0 rx_packets); g0=$(counter "$G" g0 tx_packets)
        f0=$(proc_ticks "$FWD_PID"); q0=$(proc_ticks "$GEN_PID"); read -r si0 st0 < <(sys_ticks)
        sleep "$SECS"
        t1=$(now); s1=$(counter "$S" s0 rx_packets); g1=$(counter "$G" g0 tx_packets)
        f1=$(proc_ticks "$FWD_PID"); q1=$(proc_ticks "$GEN_PID"); read -r si1 st1 < <(sys_ticks)
        read -r fcpu gcpu sirq steal < <(awk -v dt="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
            -v hz="$HZ" -v f="$((f1 - f0))" -v q="$((q1 - q0))" -v si="$((si1 - si0))" -v st="$((st1 - st0))" \
            'BEGIN { d = dt * hz; printf "%.2f %.2f %.2f %.2f\n", f / d, q / d, si / d, st / d }')
        load=$(loadavg)
        kill -TERM "$FWD_PID"; wait "$FWD_PID" 2>/dev/null; FWD_PID=""
        read -r sink offered < <(awk -v t0="$t0" -v t1="$t1" -v s0="$s0" -v s1="$s1" \
            -v g0="$g0" -v g1="$g1" 'BEGIN { dt = t1 - t0;
                printf "%.3f %.3f\n", (s1 - s0) / dt / 1e6, (g1 - g0) / dt / 1e6 }')
        case "$name" in
        # p4jet prints "port rx tx drop" lines at exit (whole run, warm-up included)
        p4jet-*) own=$(awk '$1 == 0 { printf "port0 rx %s ", $2 } $1 == 1 { printf "port1 tx %s", $3 }' "$log") ;;
        *) own=$(grep -- '->' "$log" | tail -n 1) ;;
        esac
        printf '%-5s %-17s %8s %8s %6s %6s %6s %6s %6s  %s\n' "$r" "$name" "$offered" "$sink" "$load" \
            "$fcpu" "$gcpu" "$sirq" "$steal" "$own"
        echo "$name $sink $load $offered $fcpu $sirq" >>"$RESULTS"
        sleep 0.5 # let the kernel release the AF_XDP queues
    done
done

echo
echo "| forwarder | rate at the sink, 64 B frames (per round) | median | offered (median) | forwarder CPU (median) | sink Mpps per forwarder CPU (median) | softirq CPU (median) | load average (1 min) |"
echo "|---|---|---|---|---|---|---|---|"
for name in "${NAMES[@]}"; do
    awk -v n="$name" '$1 == n' "$RESULTS" | awk -v name="$name" '
        { rate[NR] = $2; load[NR] = $3; off[NR] = $4; fc[NR] = $5; si[NR] = $6; eff[NR] = $5 > 0 ? $2 / $5 : 0 }
        function median(a, cnt,   s, i, j, t) {
            for (i = 1; i <= cnt; i++) s[i] = a[i]
            for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++)
                if (s[j] + 0 < s[i] + 0) { t = s[i]; s[i] = s[j]; s[j] = t }
            return cnt % 2 ? s[(cnt + 1) / 2] : (s[cnt / 2] + s[cnt / 2 + 1]) / 2
        }
        END {
            rates = ""; lmin = load[1]; lmax = load[1]
            for (i = 1; i <= NR; i++) {
                rates = rates (i > 1 ? ", " : "") rate[i]
                if (load[i] + 0 < lmin + 0) lmin = load[i]
                if (load[i] + 0 > lmax + 0) lmax = load[i]
            }
            printf "| %s | %s Mpps | %.3f Mpps | %.3f Mpps | %.2f | %.2f | %.2f | %s – %s |\n",
                name, rates, median(rate, NR), median(off, NR), median(fc, NR), median(eff, NR),
                median(si, NR), lmin, lmax
        }'
done
