#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The agent-ring trial (issue 5): every algorithm side by side on one
# emulated fabric, with 0, 1, half and all racks INA-capable.
#   testbed/bench/bench-agentring.sh [--racks R] [--hosts H] [--rate RATE] [--uplink RATE]
#                              [--size BYTES] [--iters N] [--algos "ring hier ps ps-ina agent-ring"]
# R racks of H hosts in namespaces behind ToRs in one swemu, a spine above;
# host links emulated at --rate, ToR uplinks at --uplink (oversubscribed when
# H x rate > uplink).  For each INA mix and algorithm: ina-allreduce-perf
# (fp32, --size, --iters timed calls after one warm-up, results checked)
# and swemu's per-port byte counters around the run.  Prints one table row
# per run: busbw, the busiest host link and uplink in MB, and the longest
# dependency chain of one chunk in hops.  Needs root.
set -euo pipefail
case "${1:-}" in -h|--help) awk 'NR > 2 && !/^#/ {exit} NR > 2' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
racks=4 hosts=2 rate=100M uplink=100M size=4M iters=3 algos="ring hier ps ps-ina agent-ring"
while (($#)); do
	case $1 in
	--racks) racks=$2; shift 2;; --hosts) hosts=$2; shift 2;; --rate) rate=$2; shift 2;;
	--uplink) uplink=$2; shift 2;; --size) size=$2; shift 2;; --iters) iters=$2; shift 2;;
	--algos) algos=$2; shift 2;;
	*) echo "bench-agentring: unknown option $1" >&2; exit 2;;
	esac
done
top=$(cd "$(dirname "$0")/../.." && pwd)
perf=$top/build/ring/ina-allreduce-perf
name=bag
scratch=$(mktemp -d /tmp/swemu-bag.XXXXXX)
trap '"$top/testbed/topo/topo.sh" down $name; rm -rf "$scratch"' EXIT
n=$((racks * hosts))
half=$(seq -s, 0 $((racks / 2 - 1)))
stats() { "$top/testbed/topo/topo.sh" stats $name; }

# link loads between two stats snapshots: busiest host link, busiest uplink (MB)
loads() {
	/usr/bin/python3 - "$1" "$2" <<'P'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
host = up = 0
for sw, s in b["switches"].items():
    for p, v in s["ports"].items():
        o = a["switches"][sw]["ports"][p]
        mb = max(v["rx_bytes"] - o["rx_bytes"], v["tx_bytes"] - o["tx_bytes"]) / 1e6
        if sw == "spine":
            continue
        if p == "up":
            up = max(up, mb)
        else:
            host = max(host, mb)
print("%.1f %.1f" % (host, up))
P
}

printf "# %d racks x %d hosts, host links %s, uplinks %s, %s fp32, %d timed calls\n" $racks $hosts $rate $uplink $size $iters
printf "# %-9s %-11s %10s %10s %12s %10s %6s\n" "INA racks" algorithm "time(us)" "busbw" "host link MB" "uplink MB" chain
for mix in 0 1 half all; do
	case $mix in 0) ir=none;; 1) ir=0;; half) ir=$half;; all) ir=all;; esac
	"$top/testbed/topo/topo.sh" up $name $n --subnet 10.89.0 --racks $racks --ina-racks $ir --rate $rate --uplink-rate $uplink >/dev/null
	"$top/testbed/topo/topo.sh" start $name >/dev/null
	ninar=$(cat /run/swemu-testbed/$name/rack*.ina | grep -c true || true)
	for algo in $algos; do
		# ps-ina and agent-ring need an INA rack to be what they are; with
		# none they are the software PS and a ring of software members
		stats > "$scratch"/a.json
		out=$("$top/testbed/topo/launch.sh" $name -- "$perf" --only in --algo $algo -b $size -e $size -n $iters -w 1 --timeout 120000 2>&1) || {
			printf "  %-9s %-11s failed: %s\n" "$ninar" $algo "$(grep -m1 -E 'rank|error' <<<"$out")"
			continue
		}
		stats > "$scratch"/b.json
		read -r us busbw wrong < <(awk '/^ +[0-9]+ +[0-9]+ +float/ {print $10, $12, $13}' <<<"$out")
		read -r hostmb upmb < <(loads "$scratch"/a.json "$scratch"/b.json)
		case $algo in
		ring) chain=$((2 * (n - 1)));;
		hier) chain=$((2 * (hosts - 1) + 2 * (racks - 1)));;
		ps) chain=2;;
		ps-ina) chain=$((ninar == racks && racks == 1 ? 2 : 4));;
		agent-ring) m=$((ninar + (racks - ninar) * hosts)); chain=$((2 * (m - 1) + 2));;
		esac
		printf "  %-9s %-11s %10s %10s %12s %10s %6s%s\n" "$ninar" $algo "$us" "$busbw" "$hostmb" "$upmb" $chain \
			"$([ "$wrong" = 0 ] || echo "  #wrong $wrong")"
	done
	"$top/testbed/topo/topo.sh" down $name
done
