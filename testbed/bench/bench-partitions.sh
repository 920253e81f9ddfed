#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What a ToR on two lcores (topo.sh --partitions 2: af_xdp, the hosts'
# BPF steering) is worth where one lcore is the bottleneck.  On a machine
# without cores to spare, each swemu lcore runs under a CPU quota of SHARE
# of a core (a cpu cgroup per thread, v1; on v2 the process's, SHARE per
# lcore in all), so that its lcores and not the hosts bound the calls, as
# one lcore did on a 16-core server; --quota max on a machine with cores
# to spare (4 or more: the ranks then get CPUs 2.. of their own).  One
# rack of 4 hosts on af_xdp, the forms taking turns for --rounds:
#   one   the ToR on one lcore
#   parts the ToR in two partitions on two lcores
#   testbed/bench/bench-partitions.sh [--quota SHARE|max] [--rate RATE]
#                                     [--size BYTES] [--iters N] [--rounds N]
#                                     [--algos "ps-ina ring"]
# Prints per algorithm and form the median call time (ina-allreduce-perf,
# fp32, 512-element INA packets for af_xdp's MTU, results checked), then
# parts / one, and the swemu lcores' busy time in the last round (how the
# partitions shared the work: ring's flows fall to queues by their hash).
# Needs root and 2 CPUs.
set -euo pipefail
usage() { sed -n 3,20p "$0" | sed 's/^# \{0,1\}//'; }
quota=0.25 rate=1G size=4M iters=8 rounds=3 algos="ps-ina ring"
while (($#)); do
	case $1 in
	--quota) quota=$2; shift 2;; --rate) rate=$2; shift 2;; --size) size=$2; shift 2;;
	--iters) iters=$2; shift 2;; --rounds) rounds=$2; shift 2;; --algos) algos=$2; shift 2;;
	-h | --help) usage; exit 0;;
	*) echo "bench-partitions: unknown option $1" >&2; exit 2;;
	esac
done
[[ "$quota" =~ ^(0?\.[0-9]+|max)$ ]] || { echo "bench-partitions: --quota takes a share of one core under 1 (0.25) or max" >&2; exit 2; }
(($(nproc) >= 2)) || { echo "bench-partitions: two CPUs needed" >&2; exit 2; }
top=$(cd "$(dirname "$0")/../.." && pwd)
perf=$top/build/ring/ina-allreduce-perf
name=bpart
scratch=$(mktemp -d /tmp/swemu-bpart.XXXXXX)
. "$top/testbed/topo/cpu-quota.sh"
trap '"$top/testbed/topo/topo.sh" down $name >/dev/null 2>&1; quota_release; rm -rf "$scratch"' EXIT
quota_init /run/swemu-bpart.$$ "$top/build/swemu/swemu" || exit 1
ranks=()
(($(nproc) < 4)) || ranks=(--rank-cpus 2-$(($(nproc) - 1)))
up() { # FORM
	local opts=(--lcores 0) share=$quota
	[ "$1" = one ] || { opts=(--partitions 2 --lcores 0,1); [ "$quota" = max ] || share=$(awk -v q="$quota" 'BEGIN { print 2 * q }'); }
	opts+=("${ranks[@]}")
	SWEMU=$QUOTA_WRAP "$top/testbed/topo/topo.sh" up $name 4 --subnet 10.96.0 --pmd af_xdp --rate "$rate" "${opts[@]}" >/dev/null
	SWEMU=$QUOTA_WRAP "$top/testbed/topo/topo.sh" start $name >/dev/null
	[ "$quota" != max ] || return 0
	# the lcores' threads: EAL's main (lcore 0) and its workers
	local pid tids
	pid=$(cat /run/swemu-testbed/$name/swemu.pid)
	tids=$(grep -lE '^(swemu|rte-worker-[0-9]+)$' /proc/"$pid"/task/*/comm | awk -F/ '{print $5}')
	quota_per_thread "$quota" $tids || quota_set "$share"
}
busy() { # each swemu lcore's busy ns so far
	"$top/testbed/topo/topo.sh" stats $name |
		/usr/bin/python3 -c 'import json, sys; print(" ".join(str(w["busy_ns"]) for w in json.load(sys.stdin)["workers"]))'
}
printf "# 1 rack x 4 hosts on af_xdp, links %s, swemu's quota %s of a core per lcore, %s fp32, %d timed calls, %d rounds\n" \
	"$rate" "$quota" "$size" "$iters" "$rounds"
for ((r = 0; r < rounds; r++)); do
	for form in one parts; do
		up $form
		b0=$(busy)
		key=/run/swemu-testbed/$name/ctrl.key
		[ ! -f "$key" ] || export SWEMU_CTL_KEY_FILE=$key HCL_INA_KEY_FILE=$key
		for algo in $algos; do
			out=$(HCL_INA_ELEMS=512 "$top/testbed/topo/launch.sh" $name -- "$perf" --only in --algo "$algo" -b "$size" \
				-e "$size" -n "$iters" -w 1 --timeout 120000 2>&1) ||
				{ echo "bench-partitions: $algo ($form) failed: $out" >&2; exit 1; }
			read -r us wrong < <(awk '/^ +[0-9]+ +[0-9]+ +float/ {print $10, $13}' <<<"$out")
			[ "$wrong" = 0 ] || { echo "bench-partitions: $algo ($form): #wrong $wrong" >&2; exit 1; }
			echo "$algo $form $us" >> "$scratch/runs"
			b1=$(busy)
			((r + 1 < rounds)) || echo "# $algo, $form: swemu's lcores busy (ms): $(/usr/bin/python3 -c 'import sys; print(" ".join(str((int(b) - int(a)) // 1000000) for a, b in zip(sys.argv[1].split(), sys.argv[2].split())))' "$b0" "$b1")"
			b0=$b1
		done
		"$top/testbed/topo/topo.sh" down $name >/dev/null
	done
done
echo "# swemu throttled $(quota_throttled) times"
/usr/bin/python3 - "$scratch/runs" $algos <<'P'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print("# %-10s %-6s %12s" % ("algorithm", "form", "median us"))
for a in sys.argv[2:]:
    med = {}
    for form in ("one", "parts"):
        med[form] = statistics.median(float(r[2]) for r in rows if r[0] == a and r[1] == form)
        print("  %-10s %-6s %12.0f" % (a, form, med[form]))
    print("  %-10s parts / one: %.3f (time; under 1 is faster)" % (a, med["parts"] / med["one"]))
P
