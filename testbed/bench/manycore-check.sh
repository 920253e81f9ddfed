#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One prepared run for a machine with cores to spare (docs/BENCHMARKS.md,
# "Trials on a many-core machine"): the default trial's topology (2 racks
# x 4 hosts, every ToR INA, 2:1 uplinks, 4 MiB, ring, ps, ps-ina and
# agent-ring, 2 repeats) at each host rate, once at k = 1 (topo.sh's core
# plan: a switch per lcore, the ranks apart) and once dilated (k = --k,
# default 8), then the INA algorithms' speedups over the ring at both and
# their ratio (the goal: within 10%); last, one rack's ToR on one lcore
# against two partitions (bench-partitions.sh --quota max).  --partitions
# N: both runs on af_xdp, the k = 1 one with every switch in N partitions
# (tor_partitions), for rates where one lcore per switch is the bound.
#   testbed/bench/manycore-check.sh [--rates "200M 800M 1600M"] [--k K]
#                                   [--partitions N] [--out DIR] [--quick]
# --quick: 1 repeat of 1 MiB at 200M, no partitions (a dry run of this
# script on any machine).  Needs root; the trial reports stay in --out
# (default a new /tmp/swemu-manycore.XXXXXX).
set -euo pipefail
usage() { sed -n 3,17p "$0" | sed 's/^# \{0,1\}//'; }
rates="200M 800M 1600M" k=8 out="" quick=0 parts=1
while (($#)); do
	case $1 in
	--rates) rates=$2; shift 2;; --k) k=$2; shift 2;; --out) out=$2; shift 2;;
	--partitions) parts=$2; shift 2;;
	--quick) quick=1; rates=200M; shift;;
	-h | --help) usage; exit 0;;
	*) echo "manycore-check: unknown option $1" >&2; exit 2;;
	esac
done
[[ "$k" =~ ^[1-9][0-9]*$ ]] || { echo "manycore-check: --k takes a whole factor, such as 8" >&2; exit 2; }
[[ "$parts" =~ ^[1-4]$ ]] || { echo "manycore-check: --partitions takes 1..4" >&2; exit 2; }
ports=""
((parts == 1)) || ports='pmd = "af_xdp";'
top=$(cd "$(dirname "$0")/../.." && pwd)
[ -n "$out" ] || out=$(mktemp -d /tmp/swemu-manycore.XXXXXX)
mkdir -p "$out"
size=4M repeats=2
((quick == 0)) || { size=1M; repeats=1; }
echo "# $(nproc) cores; reports in $out"
for rate in $rates; do
	for kk in 1 "$k"; do
		d=$out/$rate-k$kk
		split=""
		((parts == 1 || kk != 1)) || split="tor_partitions = $parts;"
		cat > "$out/$rate-k$kk.cfg" <<C
trial = {
  name = "manycore"; racks = 2; hosts_per_rack = 4; ina_racks = "all";
  host_rate = "$rate"; oversubscription = 2.0; uplink_buffer = "256K";
  algorithms = ["ring", "ps", "ps-ina", "agent-ring"]; sizes = ["$size"];
  iterations = 10; warmup = 2; repeats = $repeats; dilation = $kk; $ports $split
};
C
		"$top/testbed/trial/trial.sh" -c "$out/$rate-k$kk.cfg" -o "$d" > "$d.log" 2>&1 ||
			{ tail -5 "$d.log" >&2; echo "manycore-check: the trial at $rate, k = $kk failed" >&2; exit 1; }
	done
done
/usr/bin/python3 - "$out" "$k" "$size" $rates <<'P'
import json, sys
out, k, size, rates = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
algos = ("ring", "ps", "ps-ina", "agent-ring")
print("# %-6s %-4s %s | %-13s %-13s | %s" % ("rate", "k", " ".join("%10s" % a for a in algos), "ps-ina/ring", "agent/ring",
      "busiest swemu lcore"))
speed = {}
for rate in rates:
    for kk in ("1", k):
        d = "%s/%s-k%s" % (out, rate, kk)
        res = json.load(open(d + "/results.json"))["results"]
        ms = {a: res[a][size]["time_us"] / 1e3 for a in algos}
        sp = (ms["ring"] / ms["ps-ina"], ms["ring"] / ms["agent-ring"])
        speed[rate, kk] = sp
        busy = next((l.strip() for l in open(d + "/report.md") if "busiest lcore" in l), "")
        print("  %-6s %-4s %s | %13.2f %13.2f | %s" % (rate, kk, " ".join("%10.1f" % ms[a] for a in algos), sp[0], sp[1],
              busy[:110]))
print("# k = 1 against k = %s (goal: within 10%%, 0.90-1.10)" % k)
for rate in rates:
    a, b = speed[rate, "1"], speed[rate, k]
    print("  %-6s ps-ina %.3f  agent-ring %.3f" % (rate, a[0] / b[0], a[1] / b[1]))
P
((quick == 1)) || bash "$top/testbed/bench/bench-partitions.sh" --quota max
