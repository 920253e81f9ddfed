#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# One switch in two partitions under load on two lcores at once
# (swemu-bench -w 2 -1): the generator steers each slot's UDP port to its
# partition's queue on shared ring devices, and swemu-bench fails unless
# every slot of every round completed exactly once with no drop.  No
# figure is judged here (docs/BENCHMARKS.md holds those).  Needs two CPUs.
set -eu
if [ "$(nproc)" -lt 2 ]; then
	echo "partitions-smoke: one CPU, two lcores needed: skipped"
	exit 77
fi
out=$("$SWEMU_BENCH" -q -r 1 -w 2 -1 -m ina -e 64,2048 -n 4,32) || {
	printf '%s\n' "$out"
	echo "partitions-smoke: swemu-bench reported wrong results or drops" >&2
	exit 1
}
printf '%s\n' "$out"
rows=$(printf '%s\n' "$out" | grep -c ' | ok$' || true)
[ "$rows" -eq 4 ] || { echo "partitions-smoke: $rows of 4 rows ok" >&2; exit 1; }
