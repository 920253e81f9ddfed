#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A PyTorch DDP training step with its gradients averaged by each of the
# host library's algorithms (ring/hcl.py's DDP hook) and by DDP's own Gloo
# all-reduce, on the default trial's fabric: 2 racks of 4 hosts, rack 1
# behind an INA ToR, 200 Mbit/s host links, 400 Mbit/s uplinks.
#   testbed/bench/bench-ddp.sh [-a "ALGOS"] [-s STEPS] [-r ROUNDS] [--width W]   (root; installs python3-torch)
# Defaults: gloo ring hier ps ps-ina agent-ring, 8 steps (2 more as warm-up),
# 3 rounds with the order rotating; width 1024 (4.35 MB of gradients).
# As in the default trial: the ring's large calls on two channels, the
# software PS of ps-ina in a shard per host (HCL_RING_CHANNELS and
# HCL_PS_SHARDS in the caller's environment win).
# Prints each run's line and, per algorithm, the median time per step over
# the rounds, its speed-up against gloo and ring, and rank 0's CPU time per
# step (all its threads).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 3,15p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
top=$(cd "$(dirname "$0")/../.." && pwd)
algos="gloo ring hier ps ps-ina agent-ring" steps=8 rounds=3 width=1024
while (($#)); do
	case $1 in
	-a) algos=$2; shift 2;;
	-s) steps=$2; shift 2;;
	-r) rounds=$2; shift 2;;
	--width) width=$2; shift 2;;
	*) echo "bench-ddp: unknown option $1 (--help)" >&2; exit 2;;
	esac
done
"$top/testbed/setup.sh" --tests
name=bddp
results=$(mktemp)
trap '"$top/testbed/topo/topo.sh" down $name; rm -f "$results"' EXIT
"$top/testbed/topo/topo.sh" up $name 8 --subnet 10.91.0 --racks 2 --ina-racks 1 --rate 200M --uplink-rate 400M \
	--uplink-buffer 256K >/dev/null
"$top/testbed/topo/topo.sh" start $name
read -ra list <<<"$algos"
n=${#list[@]}
for ((r = 0; r < rounds; r++)); do
	for ((i = 0; i < n; i++)); do
		algo=${list[(i + r) % n]}
		line=$("$top/testbed/topo/launch.sh" $name -- env GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 \
			HCL_RING_CHANNELS="${HCL_RING_CHANNELS:-2}" HCL_PS_SHARDS="${HCL_PS_SHARDS:-8}" /usr/bin/python3 \
			"$top/testbed/bench/ddp_train.py" -a "$algo" -s $((steps + 2)) -w 2 --width "$width" | grep '^rank 0:')
		echo "# round $((r + 1)): $line"
		echo "$algo ${line##*hook calls, }" >> "$results"
	done
done
/usr/bin/python3 - "$results" "$algos" <<'PY'
import statistics, sys
runs, cpus = {}, {}
for l in open(sys.argv[1]):
    f = l.split()  # algo, ms, "ms per step,", cpu ms, "ms of CPU per step"
    runs.setdefault(f[0], []).append(float(f[1]))
    cpus.setdefault(f[0], []).append(float(f[5]))
med = {a: statistics.median(v) for a, v in runs.items()}
print("# algorithm   ms/step (median)  runs                  vs gloo  vs ring   CPU ms/step (rank 0, median)")
for a in sys.argv[2].split():
    vs = lambda b: f"{med[b] / med[a]:6.2f}x" if b in med else "      -"
    print(f"{a:<12} {med[a]:10.1f}        {' '.join(f'{v:.0f}' for v in runs[a]):<20}  {vs('gloo')}  {vs('ring')}"
          f"   {statistics.median(cpus[a]):8.1f}")
PY
