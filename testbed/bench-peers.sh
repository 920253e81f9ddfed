#!/usr/bin/env bash
# Our ring all-reduce beside Gloo (torch.distributed), on the same four
# hosts in namespaces through the same swemu (plain switch), one run.
#   testbed/bench-peers.sh [-b MIN] [-e MAX] [-n ITERS]    (root; installs the peers)
# Prints both nccl-tests-style tables and, per size, ours / Gloo bus bandwidth.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 2,6p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
min=1M max=64M iters=10
while getopts "b:e:n:" o; do
	case $o in b) min=$OPTARG;; e) max=$OPTARG;; n) iters=$OPTARG;; *) exit 2;; esac
done
"$top/testbed/setup.sh" --peers
name=bp
trap '"$top/testbed/topo.sh" down $name' EXIT
"$top/testbed/topo.sh" up $name 4 --subnet 10.88.0 --no-ina >/dev/null
"$top/testbed/topo.sh" start $name
ours=$("$top/testbed/launch.sh" $name -- "$top/build/ring/ina-allreduce-perf" -b $min -e $max -n $iters -w 3)
gloo=$("$top/testbed/launch.sh" $name --port 29501 -- env GLOO_SOCKET_IFNAME=eth0 \
	/usr/bin/python3 "$top/testbed/peers/gloo_allreduce.py" -b $min -e $max -n $iters -w 3)
echo "$ours"
echo "$gloo"
echo "# size        ours_busbw  gloo_busbw  ours/gloo"
/usr/bin/python3 - "$ours" "$gloo" <<'PY'
import sys
def table(t):
    return {int(l.split()[0]): float(l.split()[6]) for l in t.splitlines() if l.strip() and not l.startswith("#")}
o, g = table(sys.argv[1]), table(sys.argv[2])
for s in sorted(o):
    if s in g:
        print("  %-11d %10.3f  %10.3f  %9.2f" % (s, o[s], g[s], o[s] / g[s] if g[s] else float("inf")))
PY
