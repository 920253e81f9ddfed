#!/usr/bin/env bash
# Pacing (issue 6) side by side: the same injected noise with pacing off and
# on, and a balanced run for the layer's overhead.
#   testbed/bench-pacing.sh [--racks R] [--hosts H] [--rate RATE] [--uplink RATE] [--uplink-buffer B]
#                           [--size BYTES] [--compute MS] [--straggler R:F] [--jitter SPEC]
#                           [--iters N] [--reps K] [--seed S] [--algo ALGO]
# R racks of H hosts behind ToRs in one swemu, host links at --rate, ToR
# uplinks at --uplink with a --uplink-buffer tail-drop queue (contention).
# Every rank runs ina-allreduce-perf as a training loop: --compute ms of
# simulated compute (+ --jitter, --straggler), then an all-reduce of --size.
# Runs, interleaved K times: balanced without the layer, balanced with
# pacing, noisy without, noisy with pacing (same --seed: the same noise).
# Prints iteration time mean/p99/CV and iterations/s per run, then the
# ratios.  Needs root.
set -euo pipefail
case "${1:-}" in -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
racks=2 hosts=4 rate=200M uplink=200M ubuf=64K size=1M compute=100 straggler=3:1.5 jitter=normal:10
iters=40 reps=2 seed=7 algo=ring
while (($#)); do
	case $1 in
	--racks) racks=$2;; --hosts) hosts=$2;; --rate) rate=$2;; --uplink) uplink=$2;; --uplink-buffer) ubuf=$2;;
	--size) size=$2;; --compute) compute=$2;; --straggler) straggler=$2;; --jitter) jitter=$2;;
	--iters) iters=$2;; --reps) reps=$2;; --seed) seed=$2;; --algo) algo=$2;;
	*) echo "bench-pacing: unknown option $1" >&2; exit 2;;
	esac
	shift 2
done
top=$(cd "$(dirname "$0")/.." && pwd)
name=bpc
trap '"$top/testbed/topo.sh" down $name >/dev/null 2>&1 || true' EXIT
"$top/testbed/topo.sh" up $name $((racks * hosts)) --subnet 10.91.0 --racks $racks --rate $rate \
	--uplink-rate $uplink --uplink-buffer $ubuf >/dev/null
"$top/testbed/topo.sh" start $name >/dev/null
run() { # label, extra perf args...
	local label=$1; shift
	local out
	out=$("$top/testbed/launch.sh" $name -- "$top/build/ring/ina-allreduce-perf" -a $algo -b $size -e $size \
		-n $iters -w 3 --compute $compute --seed $seed "$@" 2>&1) || { echo "  $label: failed: $(tail -1 <<<"$out")"; return; }
	awk -v l="$label" '/^# iterations/ {printf "  %-16s mean %9.1f ms  p99 %9.1f ms  cv %.3f  %6.3f it/s\n", l, $6/1e3, $11/1e3, $13, $14}' <<<"$out"
	grep -o 'paced [0-9]* of [0-9]* calls' <<<"$out" | sed "s/^/  $label rank 0: /" || true
}
printf "# %s, %d racks x %d hosts, host links %s, uplinks %s (buffer %s), %s, compute %s ms, noise: straggler %s, jitter %s, seed %s\n" \
	$algo $racks $hosts $rate $uplink $ubuf $size $compute $straggler $jitter $seed
for k in $(seq $reps); do
	run balanced
	run balanced+pace -P
	run noisy --straggler $straggler --jitter $jitter
	run noisy+pace --straggler $straggler --jitter $jitter -P
done
