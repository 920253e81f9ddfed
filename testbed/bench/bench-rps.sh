#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What steering the hosts' receive path off swemu's lcore (RPS, as topo.sh
# sets it where the ranks have CPUs of their own) is worth where that lcore
# is the bottleneck: swemu under a CPU quota (a share of one core, as one
# lcore carrying every switch was on a 16-core server), each algorithm run
# with the hosts' RPS off and on (to CPU --cpus), taking turns for --rounds.
#   testbed/bench/bench-rps.sh [--quota SHARE] [--rate RATE] [--size BYTES]
#                              [--iters N] [--rounds N] [--cpus LIST]
#                              [--algos "ring ps-ina agent-ring"]
# Prints per algorithm and setting the median call time (ina-allreduce-perf,
# fp32, results checked) and swemu's CPU time per frame its ports received
# (utime + stime over the run: poll loop, idle sleeps and the kernel work
# of its send calls); then on / off.  2 racks x 4 hosts, 2:1 uplinks.
# --quota max: no quota.  Needs root.
set -euo pipefail
usage() { sed -n 3,15p "$0" | sed 's/^# \{0,1\}//'; }
quota=0.15 rate=200M size=4M iters=8 rounds=2 cpus=1 algos="ring ps-ina agent-ring"
while (($#)); do
	case $1 in
	--quota) quota=$2; shift 2;; --rate) rate=$2; shift 2;; --size) size=$2; shift 2;;
	--iters) iters=$2; shift 2;; --rounds) rounds=$2; shift 2;; --cpus) cpus=$2; shift 2;;
	--algos) algos=$2; shift 2;;
	-h | --help) usage; exit 0;;
	*) echo "bench-rps: unknown option $1" >&2; exit 2;;
	esac
done
[[ "$quota" =~ ^(max|0?\.[0-9]+|1(\.0*)?)$ ]] || { echo "bench-rps: --quota takes a share of one core (0.15) or max" >&2; exit 2; }
[[ "$rate" =~ ^[0-9]+M$ ]] || { echo "bench-rps: --rate takes megabits, such as 200M" >&2; exit 2; }
top=$(cd "$(dirname "$0")/../.." && pwd)
perf=$top/build/ring/ina-allreduce-perf
name=brps
scratch=$(mktemp -d /tmp/swemu-brps.XXXXXX)
. "$top/testbed/topo/cpu-quota.sh"
trap '"$top/testbed/topo/topo.sh" down $name >/dev/null 2>&1; quota_release; rm -rf "$scratch"' EXIT
quota_init /run/swemu-brps.$$ "$top/build/swemu/swemu" || exit 1
# topo.sh's own mask for these CPUs (those this machine lacks left out)
mask=$(bash -c '. <(sed -n "/^cpu_mask()/,/^}/p" "$1"); cpu_mask "$2"' _ "$top/testbed/topo/topo.sh" "$cpus")
[ -n "$mask" ] || { echo "bench-rps: none of CPUs $cpus is on this machine" >&2; exit 2; }

SWEMU=$QUOTA_WRAP "$top/testbed/topo/topo.sh" up $name 8 --subnet 10.89.0 --racks 2 --rate $rate \
	--uplink-rate $((${rate%M} * 2))M --uplink-buffer 256K >/dev/null
SWEMU=$QUOTA_WRAP "$top/testbed/topo/topo.sh" start $name >/dev/null
key=/run/swemu-testbed/$name/ctrl.key
[ ! -f "$key" ] || export SWEMU_CTL_KEY_FILE=$key HCL_INA_KEY_FILE=$key
pid=$(xargs < "$QUOTA_GRP/cgroup.procs" | awk '{print $1}')
quota_set "$quota"
tck=$(getconf CLK_TCK)
frames() {
	"$top/testbed/topo/topo.sh" stats $name | /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin)
print(sum(p["rx_packets"] for s in d["switches"].values() for p in s["ports"].values()))'
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
printf "# 2 racks x 4 hosts, links %s, uplinks %sM (2:1), swemu's quota %s of a core, RPS to CPUs %s, %s fp32, %d timed calls, %d rounds\n" \
	$rate $((${rate%M} * 2)) "$quota" "$cpus" $size $iters $rounds
for ((r = 0; r < rounds; r++)); do
	for rps in 0 1; do
		m=0
		((rps == 0)) || m=$mask
		for i in $(seq 0 7); do
			ip netns exec $name-h$i sh -c "echo $m > /sys/class/net/eth0/queues/rx-0/rps_cpus"
		done
		for algo in $algos; do
			f0=$(frames) c0=$(cpu_ticks)
			out=$("$top/testbed/topo/launch.sh" $name -- "$perf" --only in --algo $algo -b $size -e $size \
				-n $iters -w 1 --timeout 120000 2>&1) || { echo "bench-rps: $algo failed: $out" >&2; exit 1; }
			f1=$(frames) c1=$(cpu_ticks)
			read -r us wrong < <(awk '/^ +[0-9]+ +[0-9]+ +float/ {print $10, $13}' <<<"$out")
			[ "$wrong" = 0 ] || { echo "bench-rps: $algo: #wrong $wrong" >&2; exit 1; }
			echo "$algo $rps $us $(((c1 - c0) * 1000000000 / tck / (f1 - f0 > 0 ? f1 - f0 : 1)))" >> "$scratch/runs"
		done
	done
done
echo "# swemu throttled $(quota_throttled) times"
/usr/bin/python3 - "$scratch/runs" $algos <<'P'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print("# %-10s %-4s %12s %16s" % ("algorithm", "RPS", "median us", "swemu ns/frame"))
for a in sys.argv[2:]:
    med = {}
    for rps, what in (("0", "off"), ("1", "on")):
        rs = [r for r in rows if r[0] == a and r[1] == rps]
        med[rps] = statistics.median(float(r[2]) for r in rs)
        print("  %-10s %-4s %12.0f %16.0f" % (a, what, med[rps], statistics.median(float(r[3]) for r in rs)))
    print("  %-10s on / off: %.3f (time; under 1 is faster)" % (a, med["1"] / med["0"]))
P
