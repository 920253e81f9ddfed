#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The PoC trial: a trial file in, a side-by-side report out.
#   testbed/trial/trial.sh [-c TRIAL_FILE] [-o REPORT_DIR] [--fast]
# Reads the trial file (default configs/trial.cfg; every setting is shown
# there), builds the racks in network namespaces around swemu ToRs and a
# spine, runs ina-allreduce-perf for every algorithm and message size
# (timing traces on, swemu counters read around each run), tears it all
# down whatever happens, and writes REPORT_DIR (default
# trial-results/NAME-DATE): report.md, results.json, PNG plots, the raw
# outputs.  Prints the summary table at the end.  --fast: one 256K size,
# 3 iterations (the test suite's variant).  Needs root.
# With ina_racks = "sweep" every algorithm runs with every rack INA-capable,
# then the INA algorithms again with 0, 1, ... racks upgraded in
# sweep_order (sweep/kK/ALGO-SIZE): the report's deployment curve.
# With dilation = K the file describes the real cluster and the testbed
# runs its rates / K, its delays and compute x K; "auto" picks K first
# (calibration.txt): the report gives every time in the real units.
# With engine = "sim" the same trial runs in ns-3 (swemu-sim, docs/SCALE.md):
# no root, no namespaces, any size up to 1024 hosts; each repeat its own seed.
set -euo pipefail
case "${1:-}" in -h|--help) awk 'NR > 2 && !/^#/ {exit} NR > 2' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
top=$(cd "$(dirname "$0")/../.." && pwd)
cfgfile=$top/configs/trial.cfg out="" fast=0
while (($#)); do
	case $1 in
	-c) cfgfile=$2; shift 2;;
	-o) out=$2; shift 2;;
	--fast) fast=1; shift;;
	*) echo "trial: unknown option $1 (see --help)" >&2; exit 2;;
	esac
done
checker=${TRIAL_CFG:-$top/build/testbed/trial/swemu-trial-cfg}
# workload = "NAME": a profile of configs/workloads/
export SWEMU_WORKLOADS=${SWEMU_WORKLOADS:-$top/configs/workloads}
[ -x "$checker" ] || { echo "trial: build first (testbed/setup.sh)" >&2; exit 2; }
# the file is checked completely before anything is built
vars=$("$checker" "$cfgfile") || exit 2
eval "$vars"
# the engine: trial_emulator.sh or trial_sim.sh define engine_check,
# engine_up, deploy, one_run, engine_down and engine_versions
. "$top/testbed/trial/trial_$T_ENGINE.sh"
engine_check
if ((fast)); then
	[ -n "${T_WORKLOAD:-}" ] || T_SIZES=256K # a workload's steps are its own sizes
	T_ITERATIONS=3 T_WARMUP=1 T_REPEATS=2
fi
out=${out:-$top/trial-results/$T_NAME-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/runs"
cp "$cfgfile" "$out/trial.cfg"
printf '%s\n' "$vars" > "$out/trial.env"
((fast)) && printf 'T_SIZES=%s\nT_ITERATIONS=%s\nT_WARMUP=%s\nT_REPEATS=%s\n' "$T_SIZES" $T_ITERATIONS $T_WARMUP \
	$T_REPEATS >> "$out/trial.env"
# the numbers behind the units, read by the one parser, for the report
size_bytes=""
if [ -n "${T_WORKLOAD:-}" ]; then
	size_bytes="$T_WORKLOAD_BYTES " # a step's bytes
else
	for s in $T_SIZES; do size_bytes+="$("$checker" --size "$s") "; done
fi
up_bps="" # one uplink rate, or one per rack (racks of different sizes)
for r in ${T_UPLINK_RATE//,/ }; do up_bps+="$("$checker" --rate "$r") "; done
printf "T_SIZE_BYTES='%s'\nT_HOST_BPS=%s\nT_UPLINK_BPS='%s'\n" "${size_bytes% }" "$("$checker" --rate "$T_HOST_RATE")" \
	"${up_bps% }" >> "$out/trial.env"
rack_bps=""
for r in ${T_RACK_RATES//,/ }; do rack_bps+="$("$checker" --rate "$r") "; done
printf "T_RACK_BPS='%s'\n" "${rack_bps% }" >> "$out/trial.env"
# bash runs a trap only when its foreground command ends, and a run may take
# up to its deadline: runs go in the background (run_pid)
run_pid=""
trap '[ -z "$run_pid" ] || kill -TERM "$run_pid" 2>/dev/null; exit 130' INT TERM
# The PS shards of algorithm $1: ps-ina's may be more than ps's
# (swemu-trial-cfg's T_PSINA_SHARDS)
ps_shards_of() {
	if [ "$1" = ps-ina ]; then echo "${T_PSINA_SHARDS:-${T_PS_SHARDS:-1}}"; else echo "${T_PS_SHARDS:-1}"; fi
}
# A run's command in the background, waited for; its exit status (the
# caller's redirections apply to it)
run_waited() {
	local rc=0
	"$@" &
	run_pid=$!
	wait $run_pid || rc=$?
	run_pid=""
	return $rc
}
# the links are emulated (shaped): there the ring is as fast as Gloo's only
# with two channels (docs/TRANSPORT.md, "Ring channels"); the caller's
# HCL_RING_CHANNELS wins
ring_channels=${HCL_RING_CHANNELS:-2}
printf 'T_RING_CHANNELS=%s\n' "$ring_channels" >> "$out/trial.env"
engine_up
read -ra algos <<<"$T_ALGOS"
read -ra sizes <<<"$T_SIZES"
ina_algos=()
for a in "${algos[@]}"; do [[ $a == ps-ina || $a == agent-ring ]] && ina_algos+=("$a"); done
total=$((${#algos[@]} * ${#sizes[@]} * T_REPEATS)) k=0 start=$SECONDS
((T_SWEEP)) && total=$((total + T_RACKS * ${#ina_algos[@]} * ${#sizes[@]} * T_REPEATS))
# a training step's length here, before the first: a dilated model's steps
# last seconds (its forward, then the longer of its backward and of about
# twice its gradients at the emulated host rate, all x k)
if [ -n "${T_WORKLOAD:-}" ] && [ "$T_ENGINE" = emulator ]; then
	emu_bps=$("$checker" --rate "$T_EMU_HOST_RATE")
	awk -v f="$T_WORKLOAD_FWD_MS" -v b="$T_WORKLOAD_BWD_MS" -v k="${T_DILATION/auto/1}" -v by="$T_WORKLOAD_BYTES" \
		-v r="$emu_bps" -v runs=$total -v steps=$((T_WARMUP + T_ITERATIONS)) -v m="$T_WORKLOAD_NAME" 'BEGIN {
		c = 2 * by * 8 / r; s = f * k / 1000 + (b * k / 1000 > c ? b * k / 1000 : c)
		printf "workload %s: a step lasts about %.1f s here (time dilation k = %g); %d runs of %d steps: " \
			"about %.1f minutes\n", m, s, k, runs, steps, runs * steps * s / 60 }'
fi
# every algorithm named after $1 and size T_REPEATS times, the algorithms'
# order reversed every other repeat (a drift of the machine then hits all
# of them alike); repeat 1 in $1/ALGO-SIZE, repeat r in $1/ALGO-SIZE@r
run_set() {
	local base=$1 rep i algo size d
	shift
	local set=("$@") order
	for ((rep = 1; rep <= T_REPEATS; rep++)); do
		order=("${set[@]}")
		((rep % 2)) || for ((i = 0; i < ${#set[@]}; i++)); do order[i]=${set[${#set[@]} - 1 - i]}; done
		for algo in "${order[@]}"; do
			for size in "${sizes[@]}"; do
				k=$((k + 1))
				el=$((SECONDS - start))
				est=$((k > 1 ? el * total / (k - 1) : 0))
				printf '[%d/%d] %-10s %6s  repeat %d/%d  elapsed %ds%s\n' $k $total "$algo" "$size" $rep $T_REPEATS $el \
					"$( ((k > 1 && el > 0)) && echo ", estimated total ${est}s")"
				d=$base/$algo-$size
				((rep == 1)) || d+=@$rep
				mkdir -p "$d"
				one_run "$d" "$algo" "$size" $rep
			done
		done
	done
}
run_set "$out/runs" "${algos[@]}"
# the deployment curve: 0 .. racks-1 INA ToRs in sweep_order (all of them
# is the main runs above), the INA algorithms only
if ((T_SWEEP)) && ((${#ina_algos[@]})); then
	read -ra order <<<"$T_SWEEP_ORDER"
	for ((up = 0; up < T_RACKS; up++)); do
		list=$(IFS=,; echo "${order[*]:0:up}")
		mkdir -p "$out/sweep/k$up"
		echo "${list:-none}" > "$out/sweep/k$up/ina_racks"
		echo "deployment: $up of $T_RACKS racks INA-capable (${list:-none})"
		deploy "${list:-none}" "$out/capture/sweep-k$up"
		run_set "$out/sweep/k$up" "${ina_algos[@]}"
	done
fi
engine_down
{
	echo "git: $(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)"
	engine_versions
	echo "kernel: $(uname -sr)"
	echo "cpu: $(nproc) x $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
	[ ! -f "$out/topo.log" ] || grep -m1 '^cores: ' "$out/topo.log" || true
	echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
	echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
} > "$out/machine.txt"
/usr/bin/python3 "$top/testbed/trial/trial_report.py" "$out"
echo "report: $out/report.md"
