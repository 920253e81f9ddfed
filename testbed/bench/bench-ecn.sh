#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The INA windows with and without the queues' ECN marks, on the testbed:
# one emulated fabric whose rated ports mark past --ecn of their buffer,
# each algorithm run with HCL_INA_CC=0 (marks counted, ignored) and
# HCL_INA_CC=1 (the windows follow them), taking turns for --rounds.
#   testbed/bench/bench-ecn.sh [--racks R] [--hosts H] [--rate RATE] [--uplink RATE]
#                              [--buffer B] [--ecn SHARE] [--ina-racks LIST] [--size BYTES]
#                              [--iters N] [--rounds N] [--algos "ps ps-ina agent-ring"]
# Prints per algorithm and setting the median call time (ina-allreduce-perf,
# fp32, results checked), the frames the switches marked and dropped at
# full queues, and the answers the ranks saw marked; then followed / ignored.
# Needs root.
set -euo pipefail
case "${1:-}" in -h|--help) awk 'NR > 2 && !/^#/ {exit} NR > 2' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
racks=2 hosts=4 rate=200M uplink=200M buffer=256K ecn=0.5 inaracks=all size=4M iters=3 rounds=3
algos="ps ps-ina agent-ring"
while (($#)); do
	case $1 in
	--racks) racks=$2; shift 2;; --hosts) hosts=$2; shift 2;; --rate) rate=$2; shift 2;;
	--uplink) uplink=$2; shift 2;; --buffer) buffer=$2; shift 2;; --ecn) ecn=$2; shift 2;;
	--ina-racks) inaracks=$2; shift 2;; --size) size=$2; shift 2;; --iters) iters=$2; shift 2;;
	--rounds) rounds=$2; shift 2;; --algos) algos=$2; shift 2;;
	*) echo "bench-ecn: unknown option $1" >&2; exit 2;;
	esac
done
top=$(cd "$(dirname "$0")/../.." && pwd)
perf=$top/build/ring/ina-allreduce-perf
name=becn
scratch=$(mktemp -d /tmp/swemu-becn.XXXXXX)
trap '"$top/testbed/topo/topo.sh" down $name >/dev/null 2>&1; rm -rf "$scratch"' EXIT
n=$((racks * hosts))
# marked and tail-dropped frames over every port of every switch
counts() {
	"$top/testbed/topo/topo.sh" stats $name | /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin)
ps = [p for s in d["switches"].values() for p in s["ports"].values()]
print(sum(p["ecn_marks"] for p in ps), sum(p["drops"].get("buffer_overflow", 0) for p in ps))'
}

"$top/testbed/topo/topo.sh" up $name $n --subnet 10.90.0 --racks $racks --ina-racks $inaracks --rate $rate \
	--uplink-rate $uplink --buffer $buffer --uplink-buffer $buffer --ecn $ecn >/dev/null
"$top/testbed/topo/topo.sh" start $name >/dev/null
printf "# %d racks x %d hosts (INA racks %s), links %s, uplinks %s, buffers %s marking past %s, %s fp32, %d timed calls, %d rounds\n" \
	$racks $hosts "$inaracks" $rate $uplink $buffer $ecn $size $iters $rounds
for ((r = 0; r < rounds; r++)); do
	for algo in $algos; do
		for cc in 0 1; do
			read -r m0 d0 < <(counts)
			out=$(env HCL_INA_CC=$cc "$top/testbed/topo/launch.sh" $name -- "$perf" --only in --algo $algo -b $size -e $size \
				-n $iters -w 1 --timeout 120000 2>&1) || { echo "bench-ecn: $algo failed: $out" >&2; exit 1; }
			read -r m1 d1 < <(counts)
			read -r us wrong < <(awk '/^ +[0-9]+ +[0-9]+ +float/ {print $10, $13}' <<<"$out")
			[ "$wrong" = 0 ] || { echo "bench-ecn: $algo: #wrong $wrong" >&2; exit 1; }
			marked=$(sed -nE 's/^# host of rank [0-9]+: .* ([0-9]+) marked; .*/\1/p' <<<"$out" | awk '{ s += $1 } END { print s + 0 }')
			echo "$algo $cc $us $((m1 - m0)) $((d1 - d0)) $marked" >> "$scratch/runs"
		done
	done
done
/usr/bin/python3 - "$scratch/runs" $algos <<'P'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print("# %-10s %-9s %12s %12s %12s %14s" % ("algorithm", "marks", "median us", "frames marked", "tail drops", "answers marked"))
for a in sys.argv[2:]:
    med = {}
    for cc, what in (("0", "ignored"), ("1", "followed")):
        rs = [r for r in rows if r[0] == a and r[1] == cc]
        med[cc] = statistics.median(float(r[2]) for r in rs)
        print("  %-10s %-9s %12.0f %12d %12d %14d" % (a, what, med[cc], sum(int(r[3]) for r in rs) // len(rs),
              sum(int(r[4]) for r in rs) // len(rs), sum(int(r[5]) for r in rs) // len(rs)))
    print("  %-10s followed / ignored: %.3f (time; under 1 is faster)" % (a, med["1"] / med["0"]))
P
