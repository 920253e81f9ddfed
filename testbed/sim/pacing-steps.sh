#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Pacing on replayed training steps (docs/PACING.md, "On training steps"):
# ResNet-50's DDP buckets on 4 racks x 4 hosts at 25G (2:1 uplinks, 256K
# buffers), compute noise normal:5, rank 3 computing twice as long; ring
# and ps-ina, paced and not, alone and beside another job (6.25 Gbit/s from
# each host to its peer in the next rack: half of every uplink).  Two runs
# at a time; about 6 minutes on two cores.  Prints ms per step, CV and the
# calls paced.  STRAGGLER=F (2), RACKS=R and HOSTS=H (4, 4) change the
# straggler's factor and the fabric.
#   testbed/sim/pacing-steps.sh [OUTDIR]    (default /tmp/pacing-steps)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
sim=${SIM:-$top/build/testbed/sim/swemu-sim}
out=${1:-/tmp/pacing-steps}
[ "${1:-}" != --help ] || { sed -n '3,12p' "$0"; exit 0; }
[ -x "$sim" ] || { echo "pacing-steps: no $sim (build first)" >&2; exit 1; }
mkdir -p "$out"
one() { # NAME ARGS...
	local n=$1
	shift
	"$sim" --racks="${RACKS:-4}" --hostsPerRack="${HOSTS:-4}" --hostRate=25G --uplinkBuffer=256K \
		--workload="$top/configs/workloads/resnet50.cfg" --jitter=normal:5 --straggler=3:"${STRAGGLER:-2}" \
		--iterations=8 --warmup=2 --ringChannels=2 --inaRacks="${RACKS:-4}" "$@" >"$out/$n.json" 2>"$out/$n.err"
}
for a in ring ps-ina; do
	for bg in 0 6250M; do
		bgarg=()
		[ "$bg" = 0 ] || bgarg=(--background="$bg")
		one "$a-bg$bg-plain" --algorithm="$a" "${bgarg[@]}" &
		one "$a-bg$bg-paced" --algorithm="$a" --pace=true "${bgarg[@]}" &
		wait
	done
done
/usr/bin/python3 - "$out" <<'PY'
import glob, json, os, sys
print("%-26s %10s %8s %8s" % ("run", "ms/step", "CV", "paced"))
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    j = json.load(open(f))
    name = os.path.basename(f)[:-5]
    if j.get("error"):
        print("%-26s failed: %s" % (name, j["error"]))
    else:
        print("%-26s %10.1f %8.3f %8d" % (name, j["iteration_ms"], j["iteration_cv"], j["paced_calls"]))
PY
