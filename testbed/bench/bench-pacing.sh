#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Pacing (issue 6) side by side: the same injected noise with pacing off and
# on, and a balanced run for the layer's overhead.
#   testbed/bench/bench-pacing.sh [--racks R] [--hosts H] [--rate RATE] [--uplink RATE] [--uplink-buffer B]
#                           [--size BYTES] [--compute MS] [--straggler R:F] [--jitter SPEC]
#                           [--iters N] [--warmup W] [--reps K] [--seed S] [--algo ALGO] [--noisy-only]
#                           [--workload FILE [--time-scale K]] [--background RATE]
# R racks of H hosts behind ToRs in one swemu, host links at --rate, ToR
# uplinks at --uplink with a --uplink-buffer tail-drop queue (contention).
# Every rank runs ina-allreduce-perf as a training loop: --compute ms of
# simulated compute (+ --jitter, --straggler), then an all-reduce of --size.
# Runs, K rounds: balanced with the plain library and with pacing on (the
# layer's overhead), noisy with the plain library and with pacing on (same
# --seed: the same noise); the order of each pair alternates between rounds.
# Prints iteration time mean/p99/CV and iterations/s per run (paced runs:
# the calls paced over all ranks and the layer's own share of the time),
# then per round and on average the ratios pacing/plain.  --workload
# replays a profile's training steps instead (configs/workloads/; times x
# --time-scale, a trial's dilation).  --background RATE: another job
# besides, each host of the first rack sending UDP (iperf3) at RATE to its
# peer in the last rack across the uplinks, for the whole run.  Needs root.
set -euo pipefail
case "${1:-}" in -h|--help) awk 'NR > 2 && !/^#/ {exit} NR > 2' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
racks=2 hosts=4 rate=200M uplink=200M ubuf=64K size=1M compute=100 straggler=3:1.5 jitter=normal:10
iters=40 warmup=3 reps=4 seed=7 algo=ring pairs="balanced noisy" workload="" tscale=1 background=""
while (($#)); do
	case $1 in
	--racks) racks=$2;; --hosts) hosts=$2;; --rate) rate=$2;; --uplink) uplink=$2;; --uplink-buffer) ubuf=$2;;
	--size) size=$2;; --compute) compute=$2;; --straggler) straggler=$2;; --jitter) jitter=$2;;
	--iters) iters=$2;; --warmup) warmup=$2;; --reps) reps=$2;; --seed) seed=$2;; --algo) algo=$2;;
	--workload) workload=$2;; --time-scale) tscale=$2;; --background) background=$2;;
	--noisy-only) pairs=noisy; shift; continue;;
	*) echo "bench-pacing: unknown option $1" >&2; exit 2;;
	esac
	shift 2
done
top=$(cd "$(dirname "$0")/../.." && pwd)
name=bpc subnet=10.91.0
[ -z "$workload" ] || [ -f "$workload" ] || { echo "bench-pacing: no workload file $workload" >&2; exit 2; }
if [ -n "$background" ]; then
	command -v iperf3 >/dev/null || { echo "bench-pacing: --background needs iperf3" >&2; exit 2; }
	((racks >= 2)) || { echo "bench-pacing: --background needs two racks or more" >&2; exit 2; }
fi
bg_pids=()
cleanup() {
	((${#bg_pids[@]})) && kill "${bg_pids[@]}" 2>/dev/null
	"$top/testbed/topo/topo.sh" down $name >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$top/testbed/topo/topo.sh" up $name $((racks * hosts)) --subnet $subnet --racks $racks --rate $rate \
	--uplink-rate $uplink --uplink-buffer $ubuf >/dev/null
"$top/testbed/topo/topo.sh" start $name >/dev/null
# The other job: host i of the first rack to host i of the last, each
# client started once its server listens (ss, with a deadline).
start_background() {
	for ((i = 0; i < hosts; i++)); do
		local peer=$(((racks - 1) * hosts + i)) port=$((5301 + i)) t
		ip netns exec $name-h$peer iperf3 -s -p $port >/dev/null 2>&1 &
		bg_pids+=($!)
		for ((t = 0; t < 100; t++)); do
			ip netns exec $name-h$peer ss -ltnH "sport = :$port" | grep -q . && break
			sleep 0.05 # polling the server's socket, with a deadline (5 s)
		done
		((t < 100)) || { echo "bench-pacing: iperf3 server in $name-h$peer did not listen" >&2; exit 1; }
		ip netns exec $name-h$i iperf3 -c $subnet.$((peer + 1)) -p $port -u -b "$background" -l 1400 -t 86400 \
			>/dev/null 2>&1 &
		bg_pids+=($!)
	done
}
[ -z "$background" ] || start_background
what=(-b $size -e $size --compute $compute)
[ -z "$workload" ] || what=(--workload "$workload" --time-scale "$tscale")
trace=/run/swemu-testbed/$name/trace
declare -A sum_cv sum_tp
run() { # label, extra perf args...: plain runs without the layer, paced ones traced
	local label=$1; shift
	local out tr=()
	rm -rf "$trace"
	[[ $label == *pace ]] && tr=(--trace "$trace")
	out=$("$top/testbed/topo/launch.sh" $name -- "$top/build/ring/ina-allreduce-perf" --only in --algo $algo "${what[@]}" \
		-n $iters -w $warmup --seed $seed "${tr[@]}" "$@" 2>&1) || {
		echo "  $label: failed:"; grep -A 3 -m 2 -e "failed" <<<"$out" | sed 's/^/    /'; return 1; }
	local extra=""
	if ((${#tr[@]})); then
		extra="  paced calls $(cat "$trace"/rank*.jsonl | grep -c '"paced":true' || true) (all ranks), layer's own cost $(grep -o "own cost [0-9.]*%" <<<"$out" | cut -d' ' -f3) (rank 0)"
	fi
	# mean, p99 (us), cv, iterations/s: of the iterations, or of the steps
	local line mean p99
	if [ -n "$workload" ]; then
		line=$(awk '/^# steps:/ {print $4, $9, $11, 1e6 / $4}' <<<"$out")
	else
		line=$(awk '/^# iterations/ {print $6, $11, $13, $14}' <<<"$out")
	fi
	[ -n "$line" ] || { echo "  $label: no summary line: $(tail -1 <<<"$out")"; return 1; }
	read -r mean p99 last_cv last_tp <<<"$line"
	awk -v l="$label" -v x="$extra" -v m="$mean" -v p="$p99" -v c="$last_cv" -v t="$last_tp" \
		'BEGIN {printf "  %-14s mean %8.1f ms  p99 %8.1f ms  cv %.3f  %6.3f it/s%s\n", l, m/1e3, p/1e3, c, t, x}'
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
printf "# %s, %d racks x %d hosts, host links %s, uplinks %s (buffer %s), %s, noise: straggler %s, jitter %s, seed %s, other job %s\n" \
	$algo $racks $hosts $rate $uplink $ubuf "${workload:-$size, compute $compute ms}${workload:+ x $tscale}" $straggler $jitter $seed "${background:-none}"
for k in $(seq $reps); do
	[[ $pairs == *balanced* ]] && pair balanced
	pair noisy --straggler $straggler --jitter $jitter
done
for l in $pairs; do
	awk -v l=$l -v a="${sum_cv[$l]}" -v b="${sum_tp[$l]}" -v n=$reps \
		'BEGIN {printf "# %s, mean of %d rounds: cv plain/paced %.2f (goal >= 2 when noisy), throughput paced/plain %.3f (goal >= 1.10 noisy, >= 0.98 balanced)\n", l, n, a / n, b / n}'
done
