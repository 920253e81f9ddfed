#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Pacing (issue 6) side by side: the same injected noise with pacing off and
# on, and a balanced run for the layer's overhead.
#   testbed/bench/bench-pacing.sh [--racks R] [--hosts H] [--rate RATE] [--uplink RATE] [--uplink-buffer B]
#                           [--size BYTES] [--compute MS] [--straggler R:F] [--jitter SPEC]
#                           [--iters N] [--reps K] [--seed S] [--algo ALGO] [--noisy-only]
# R racks of H hosts behind ToRs in one swemu, host links at --rate, ToR
# uplinks at --uplink with a --uplink-buffer tail-drop queue (contention).
# Every rank runs ina-allreduce-perf as a training loop: --compute ms of
# simulated compute (+ --jitter, --straggler), then an all-reduce of --size.
# Runs, K rounds: balanced with the plain library and with pacing on (the
# layer's overhead), noisy with the plain library and with pacing on (same
# --seed: the same noise); the order of each pair alternates between rounds.
# Prints iteration time mean/p99/CV and iterations/s per run (paced runs:
# the calls paced over all ranks and the layer's own share of the time),
# then per round and on average the ratios pacing/plain.  Needs root.
set -euo pipefail
case "${1:-}" in -h|--help) awk 'NR > 2 && !/^#/ {exit} NR > 2' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
racks=2 hosts=4 rate=200M uplink=200M ubuf=64K size=1M compute=100 straggler=3:1.5 jitter=normal:10
iters=40 reps=4 seed=7 algo=ring pairs="balanced noisy"
while (($#)); do
	case $1 in
	--racks) racks=$2;; --hosts) hosts=$2;; --rate) rate=$2;; --uplink) uplink=$2;; --uplink-buffer) ubuf=$2;;
	--size) size=$2;; --compute) compute=$2;; --straggler) straggler=$2;; --jitter) jitter=$2;;
	--iters) iters=$2;; --reps) reps=$2;; --seed) seed=$2;; --algo) algo=$2;;
	--noisy-only) pairs=noisy; shift; continue;;
	*) echo "bench-pacing: unknown option $1" >&2; exit 2;;
	esac
	shift 2
done
top=$(cd "$(dirname "$0")/../.." && pwd)
name=bpc
trap '"$top/testbed/topo/topo.sh" down $name >/dev/null 2>&1 || true' EXIT
"$top/testbed/topo/topo.sh" up $name $((racks * hosts)) --subnet 10.91.0 --racks $racks --rate $rate \
	--uplink-rate $uplink --uplink-buffer $ubuf >/dev/null
"$top/testbed/topo/topo.sh" start $name >/dev/null
trace=/run/swemu-testbed/$name/trace
declare -A sum_cv sum_tp
run() { # label, extra perf args...: plain runs without the layer, paced ones traced
	local label=$1; shift
	local out tr=()
	rm -rf "$trace"
	[[ $label == *pace ]] && tr=(--trace "$trace")
	out=$("$top/testbed/topo/launch.sh" $name -- "$top/build/ring/ina-allreduce-perf" --only in --algo $algo -b $size -e $size \
		-n $iters -w 3 --compute $compute --seed $seed "${tr[@]}" "$@" 2>&1) || {
		echo "  $label: failed: $(tail -1 <<<"$out")"; return 1; }
	local extra=""
	if ((${#tr[@]})); then
		extra="  paced calls $(cat "$trace"/rank*.jsonl | grep -c '"paced":true' || true) (all ranks), layer's own cost $(grep -o "own cost [0-9.]*%" <<<"$out" | cut -d' ' -f3) (rank 0)"
	fi
	read -r last_cv last_tp < <(awk '/^# iterations/ {print $13, $14}' <<<"$out")
	awk -v l="$label" -v x="$extra" '/^# iterations/ {printf "  %-14s mean %8.1f ms  p99 %8.1f ms  cv %.3f  %6.3f it/s%s\n", l, $6/1e3, $11/1e3, $13, $14, x}' <<<"$out"
}
pair() { # label, noise args...: plain and paced, order by round
	local label=$1; shift
	local pcv ptp ncv ntp
	if ((k % 2)); then
		run "$label" "$@" && ncv=$last_cv ntp=$last_tp
		run "$label+pace" "$@" -P && pcv=$last_cv ptp=$last_tp
	else
		run "$label+pace" "$@" -P && pcv=$last_cv ptp=$last_tp
		run "$label" "$@" && ncv=$last_cv ntp=$last_tp
	fi
	local r
	r=$(awk -v a="$ncv" -v b="$pcv" -v c="$ntp" -v d="$ptp" 'BEGIN {printf "%.3f %.3f", a / b, d / c}')
	echo "    round $k $label: cv plain/paced ${r% *}, throughput paced/plain ${r#* }"
	sum_cv[$label]=$(awk -v s="${sum_cv[$label]:-0}" -v x="${r% *}" 'BEGIN {print s + x}')
	sum_tp[$label]=$(awk -v s="${sum_tp[$label]:-0}" -v x="${r#* }" 'BEGIN {print s + x}')
}
printf "# %s, %d racks x %d hosts, host links %s, uplinks %s (buffer %s), %s, compute %s ms, noise: straggler %s, jitter %s, seed %s\n" \
	$algo $racks $hosts $rate $uplink $ubuf $size $compute $straggler $jitter $seed
for k in $(seq $reps); do
	[[ $pairs == *balanced* ]] && pair balanced
	pair noisy --straggler $straggler --jitter $jitter
done
for l in $pairs; do
	awk -v l=$l -v a="${sum_cv[$l]}" -v b="${sum_tp[$l]}" -v n=$reps \
		'BEGIN {printf "# %s, mean of %d rounds: cv plain/paced %.2f (goal >= 2 when noisy), throughput paced/plain %.3f (goal >= 1.10 noisy, >= 0.98 balanced)\n", l, n, a / n, b / n}'
done
