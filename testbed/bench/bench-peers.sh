#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Our ring all-reduce beside Gloo (torch.distributed) and Open MPI (TCP), on
# the same hosts in namespaces, in one run: through swemu as a plain switch
# (-m swemu, default), or through a Linux bridge in its place (-m bridge:
# nothing caps the libraries but themselves).  mpirun talks to its ranks
# over a management bridge; all data goes over eth0.
#   testbed/bench/bench-peers.sh [-m swemu|bridge] [-p RANKS] [-b MIN] [-e MAX] [-n ITERS] [-r ROUNDS]
# (root; installs the peers).  Runs the three ROUNDS times (default 3), the
# order rotating each round so that none always goes first; prints every
# nccl-tests-style table and, per size, each library's median busbw over the
# rounds and ours / the best peer; then each library's CPU seconds (user +
# system of all ranks, in the timed calls) per GB all-reduced, median over
# the rounds.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 3,14p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
top=$(cd "$(dirname "$0")/../.." && pwd)
min=1M max=64M iters=10 rounds=3 mode=swemu ranks=4
while getopts "m:p:b:e:n:r:" o; do
	case $o in
	m) mode=$OPTARG;; p) ranks=$OPTARG;; b) min=$OPTARG;; e) max=$OPTARG;; n) iters=$OPTARG;; r) rounds=$OPTARG;;
	*) exit 2;;
	esac
done
[[ "$mode" =~ ^(swemu|bridge)$ ]] || { echo "bench-peers: -m swemu or -m bridge" >&2; exit 2; }
[[ "$ranks" =~ ^[0-9]+$ ]] && ((ranks >= 2 && ranks <= 16)) || { echo "bench-peers: -p 2..16" >&2; exit 2; }
"$top/testbed/setup.sh" --peers
name=bp
trap '"$top/testbed/topo/topo.sh" down $name' EXIT
mkdir -p "$top/build/peers"
mpicc -O2 -o "$top/build/peers/mpi_allreduce" "$top/testbed/bench/peers/mpi_allreduce.c"
pmd=af_packet
[ "$mode" = bridge ] && pmd=bridge
"$top/testbed/topo/topo.sh" up $name $ranks --subnet 10.88.0 --no-ina --mgmt 10.98.0 --pmd $pmd >/dev/null
"$top/testbed/topo/topo.sh" start $name
# in place, as the peers' all-reduces are
run_ours() { "$top/testbed/topo/launch.sh" $name -- "$top/build/ring/ina-allreduce-perf" --only in -b $min -e $max -n $iters -w 3; }
run_gloo() {
	"$top/testbed/topo/launch.sh" $name --port 29501 -- env GLOO_SOCKET_IFNAME=eth0 \
		/usr/bin/python3 "$top/testbed/bench/peers/gloo_allreduce.py" -b "$(bytes $min)" -e "$(bytes $max)" -n $iters -w 3
}
wrap=$(mktemp)
tables=$(mktemp -d)
trap '"$top/testbed/topo/topo.sh" down $name; rm -rf "$wrap" "$tables"' EXIT
printf '#!/bin/sh\nexec ip netns exec %s-h$OMPI_COMM_WORLD_RANK "$@"\n' $name > "$wrap"
chmod +x "$wrap"
bytes() { "$top/build/testbed/trial/swemu-trial-cfg" --size "$1"; }
run_mpi() {
	# PMIx binds by this variable in mpirun itself, and the ranks need it too
	PMIX_MCA_ptl_tcp_if_include=$name-mg mpirun --allow-run-as-root --oversubscribe -np $ranks \
		--mca oob_tcp_if_include $name-mg --mca btl self,tcp --mca btl_tcp_if_include eth0 \
		-x PMIX_MCA_ptl_tcp_if_include "$wrap" "$top/build/peers/mpi_allreduce" "$(bytes $min)" "$(bytes $max)" $iters 3
}
libs=(ours gloo mpi)
for ((r = 0; r < rounds; r++)); do
	for ((i = 0; i < 3; i++)); do
		lib=${libs[(i + r) % 3]}
		echo "# round $((r + 1)): $lib"
		run_$lib | tee "$tables/$lib.$r"
	done
done
echo "# $mode, $ranks ranks"
echo "# size        ours_busbw  gloo_busbw   mpi_busbw  ours/best_peer   (medians of $rounds rounds)"
/usr/bin/python3 - "$tables" $rounds $iters <<'PY'
import statistics, sys
d, rounds, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def busbw(f):
    """ours: nccl-tests' 13 columns, in-place busbw; the peers': 8 columns"""
    return float(f[11] if len(f) == 13 else f[6])
def table(f):
    return {int(l.split()[0]): busbw(l.split()) for l in open(f) if l.strip() and not l.startswith("#")}
def cpu_per_gb(f):
    """CPU seconds of all ranks in the timed calls / GB they all-reduced."""
    sizes = table(f)
    cpu = [float(l.split(":")[1]) for l in open(f) if l.startswith("# cpu seconds")]
    return cpu[0] / (sum(sizes) * iters / 1e9) if cpu and sizes else float("nan")
med, cpu = {}, {}
for lib in ("ours", "gloo", "mpi"):
    runs = [table("%s/%s.%d" % (d, lib, r)) for r in range(rounds)]
    med[lib] = {s: statistics.median(t[s] for t in runs if s in t) for s in runs[0]}
    cpu[lib] = statistics.median(cpu_per_gb("%s/%s.%d" % (d, lib, r)) for r in range(rounds))
o, g, m = med["ours"], med["gloo"], med["mpi"]
for s in sorted(o):
    best = max(g.get(s, 0), m.get(s, 0))
    print("  %-11d %10.3f  %10.3f  %10.3f  %14.2f" % (s, o[s], g.get(s, 0), m.get(s, 0), o[s] / best if best else 0))
print("# cpu s/GB   %10.2f  %10.2f  %10.2f  %14.2f   (ours / gloo)" % (cpu["ours"], cpu["gloo"], cpu["mpi"],
                                                                    cpu["ours"] / cpu["gloo"]))
PY
