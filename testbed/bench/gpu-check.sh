#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The torch backend "hcl" on GPU tensors against Gloo's (docs/PYTHON.md): two
# ranks on this machine (loopback, no swemu), the same seeded DDP training
# (testbed/bench/ddp_train.py --device cuda) through Gloo's CUDA all-reduce
# and through init_process_group("hcl") with the ring; their last losses
# must agree within 1e-6 relative, and each run within 2e-5 of the
# one-process reference after every step.  Needs a torch that sees a GPU
# (PYTHON=its python3; default /usr/bin/python3) and a built
# build/ring/libhcl.so (HCL_LIBRARY; on another machine: ../shared/portable).
#   testbed/bench/gpu-check.sh [--device cpu]   (cpu: the same check here)
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 3,11p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
top=$(cd "$(dirname "$0")/../.." && pwd)
dev=cuda
[ "${1:-}" != --device ] || dev=${2:?--device cpu or cuda}
py=${PYTHON:-/usr/bin/python3}
export HCL_LIBRARY=${HCL_LIBRARY:-$top/build/ring/libhcl.so}
[ -f "$HCL_LIBRARY" ] || { echo "gpu-check: no $HCL_LIBRARY (build first)" >&2; exit 1; }
port=$((29700 + RANDOM % 200))
run() { # NAME PORT ARGS...: two ranks; rank 0's line
	local name=$1 p=$2 pids=() r rc=0
	shift 2
	for r in 0 1; do
		RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$p OMP_NUM_THREADS=1 PYTHONPATH="$top/ring" \
			timeout 300 "$py" "$top/testbed/bench/ddp_train.py" --device "$dev" -s 6 -w 1 --check "$@" \
			>"$tmp/$name.$r" 2>&1 &
		pids+=($!)
	done
	for r in 0 1; do wait "${pids[$r]}" || rc=1; done
	((rc == 0)) || { echo "gpu-check: $name failed:" >&2; cat "$tmp/$name.0" "$tmp/$name.1" >&2; exit 1; }
	grep '^rank 0' "$tmp/$name.0"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gloo=$(run gloo $port -a gloo)
hcl=$(run hcl $((port + 10)) --backend hcl -a ring)
echo "$gloo"
echo "$hcl"
loss() { sed -n 's/.*, last loss \([^,]*\),.*/\1/p' <<<"$1"; }
"$py" -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); d = abs(a - b) / max(abs(b), 1e-30)
print("gpu-check: %s: last loss %.9g against Gloo %.9g, relative difference %.1e" % (sys.argv[3], a, b, d))
sys.exit(d > 1e-6)' "$(loss "$hcl")" "$(loss "$gloo")" "$dev"
