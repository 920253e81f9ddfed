#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The floors of swemu-bench (-F, testbed/bench/sw_bench_floor.h) are held to what
# the switch is held to: swemu-bench fails unless every floor slot of every
# round completed once with the right sum and no frame was refused or
# unsent (a floor that skips an add or refuses a member's frame fails it).
# The checked floor also alone (-m checked).  No figure is judged here
# (docs/BENCHMARKS.md holds those).
set -eu
out=$("$SWEMU_BENCH" -q -r 1 -z -F -e 64,2048 -n 1,4,32) || {
	printf '%s\n' "$out"
	echo "floors-smoke: swemu-bench reported wrong results or drops" >&2
	exit 1
}
printf '%s\n' "$out"
rows=$(printf '%s\n' "$out" | grep -c ' | ok$' || true)
# each floor row ends in x, swemu's time over the checked floor's
floors=$(printf '%s\n' "$out" | grep -Ec '^ *floor \| l2 .* \| x [0-9]+\.[0-9]{2}$' || true)
[ "$rows" -eq 6 ] && [ "$floors" -eq 6 ] || { echo "floors-smoke: $rows of 6 rows ok, $floors floor rows" >&2; exit 1; }
# the checked floor alone, a fixed count (what bench-ipp.sh counts)
"$SWEMU_BENCH" -q -z -c 2 -m checked -e 64 -n 4 >/dev/null ||
	{ echo "floors-smoke: the checked floor alone (-m checked) failed" >&2; exit 1; }
