#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The PoC trial: a trial file in, a side-by-side report out.
#   testbed/trial.sh [-c TRIAL_FILE] [-o REPORT_DIR] [--fast]
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
set -euo pipefail
case "${1:-}" in -h|--help) awk 'NR > 2 && !/^#/ {exit} NR > 2' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
cfgfile=$top/configs/trial.cfg out="" fast=0
while (($#)); do
	case $1 in
	-c) cfgfile=$2; shift 2;;
	-o) out=$2; shift 2;;
	--fast) fast=1; shift;;
	*) echo "trial: unknown option $1 (see --help)" >&2; exit 2;;
	esac
done
checker=${TRIAL_CFG:-$top/build/testbed/swemu-trial-cfg}
perf=${PERF:-$top/build/ring/ina-allreduce-perf}
[ -x "$checker" ] && [ -x "$perf" ] || { echo "trial: build first (testbed/setup.sh)" >&2; exit 2; }
# the file is checked completely before anything is built
vars=$("$checker" "$cfgfile") || exit 2
eval "$vars"
[ "$(id -u)" = 0 ] || { echo "trial: needs root (network namespaces)" >&2; exit 2; }
if ((fast)); then T_SIZES=256K T_ITERATIONS=3 T_WARMUP=1 T_REPEATS=2; fi
out=${out:-$top/trial-results/$T_NAME-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/runs"
cp "$cfgfile" "$out/trial.cfg"
printf '%s\n' "$vars" > "$out/trial.env"
((fast)) && printf 'T_SIZES=%s\nT_ITERATIONS=%s\nT_WARMUP=%s\nT_REPEATS=%s\n' "$T_SIZES" $T_ITERATIONS $T_WARMUP \
	$T_REPEATS >> "$out/trial.env"
# the numbers behind the units, read by the one parser, for the report
size_bytes=""
for s in $T_SIZES; do size_bytes+="$("$checker" --size "$s") "; done
up_bps="" # one uplink rate, or one per rack (racks of different sizes)
for r in ${T_UPLINK_RATE//,/ }; do up_bps+="$("$checker" --rate "$r") "; done
printf "T_SIZE_BYTES='%s'\nT_HOST_BPS=%s\nT_UPLINK_BPS='%s'\n" "${size_bytes% }" "$("$checker" --rate "$T_HOST_RATE")" \
	"${up_bps% }" >> "$out/trial.env"
rack_bps=""
for r in ${T_RACK_RATES//,/ }; do rack_bps+="$("$checker" --rate "$r") "; done
printf "T_RACK_BPS='%s'\n" "${rack_bps% }" >> "$out/trial.env"
# the machine's CPU, busy and total ticks of all cores, for the share a run used
cpu_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit }' /proc/stat; }

# a testbed slot of its own: trials running at the same time get their own
# topology name (namespaces, veths, swemu's EAL prefix) and subnet.  A slot
# is a directory holding its owner's pid; one whose owner died is taken over.
slots=/run/swemu-testbed/.trial-slots
mkdir -p "$slots"
slot=""
for ((i = 0; i < 10; i++)); do
	if mkdir "$slots/$i" 2>/dev/null; then
		slot=$i
	# an empty pid is a slot being taken this instant (mkdir, then the
	# write): not a dead owner's, or two trials would share it
	elif owner=$(cat "$slots/$i/pid" 2>/dev/null) && [ -n "$owner" ] && ! kill -0 "$owner" 2>/dev/null &&
		mv "$slots/$i" "$slots/$i.stale.$$" 2>/dev/null; then # one taker: mv is atomic
		rm -rf "$slots/$i.stale.$$"
		mkdir "$slots/$i" 2>/dev/null && slot=$i
	fi
	[ -z "$slot" ] || break
done
[ -n "$slot" ] || { echo "trial: ten trials run on this machine already ($slots)" >&2; exit 2; }
echo $$ > "$slots/$slot/pid"
name=trial$slot
n=$T_WORLD
cleanup() {
	local rc=$?
	"$top/testbed/topo.sh" down $name >/dev/null 2>&1 || true
	rm -rf "${slots:?}/$slot"
	exit $rc
}
trap cleanup EXIT
printf 'T_TOPOLOGY=%s\n' $name >> "$out/trial.env"
# bash runs a trap only when its foreground command ends, and a run may take
# up to its deadline: runs go in the background (perf_run)
run_pid=""
trap '[ -z "$run_pid" ] || kill -TERM "$run_pid" 2>/dev/null; exit 130' INT TERM
# the testbed's settings: the emulated (dilated) rates and delays
topo_opts() {
	opts=(--subnet 10.93.$slot --racks $T_RACKS --rack-sizes "$T_RACK_SIZES" --rate "$T_EMU_HOST_RATE")
	opts+=(--uplink-rate "$T_EMU_UPLINK_RATE")
	opts+=(--pmd "$T_PMD")
	# a process per switch: spread over the machine's cores, as one swemu
	# spreads nothing (its one loop serves every switch)
	[ "${T_PROCESSES:-0}" = 1 ] && opts+=(--processes --lcores "$(seq -s, 0 $(($(nproc) - 1)))")
	[ -n "$T_UPLINK_BUFFER" ] && opts+=(--uplink-buffer "$T_UPLINK_BUFFER")
	[ -n "$T_HOST_BUFFER" ] && opts+=(--buffer "$T_HOST_BUFFER")
	[ "$T_LOSS" != 0 ] && opts+=(--loss "$T_LOSS")
	[ "$T_EMU_DELAY_US" != 0 ] && opts+=(--delay-us "$T_EMU_DELAY_US")
	[ "$T_EMU_JITTER_US" != 0 ] && opts+=(--jitter-us "$T_EMU_JITTER_US")
	[ -n "${T_BURST_LOSS:-}" ] && opts+=(--burst-loss "$T_BURST_LOSS")
	[ -n "$T_EMU_RACK_RATES" ] && opts+=(--rack-rates "$T_EMU_RACK_RATES")
	return 0
}
# the racks, with INA-capable ToRs at racks $1 ("0,2", "none"); with a
# directory $2, the switches and ports of T_CAPTURE write pcapng files there
racks_up() {
	"$top/testbed/topo.sh" down $name >/dev/null 2>&1 || true # a crashed run's leftovers, or the last deployment
	"$top/testbed/topo.sh" up $name $n "${opts[@]}" --ina-racks "$1" >> "$out/topo.log"
	[ -z "$T_CAPTURE" ] || [ -z "${2:-}" ] || capture_into "$2"
	"$top/testbed/topo.sh" start $name >> "$out/topo.log"
}
# a capture group in each named switch's block of the generated config
capture_into() {
	mkdir -p "$1"
	/usr/bin/python3 - "/run/swemu-testbed/$name" "$1" "$T_CAPTURE" "$T_CAPTURE_SNAPLEN" <<'PY'
import os, sys
top, d, targets, snap = sys.argv[1:5]
want = {}
for t in targets.split():
    sw, _, port = t.partition(".")
    ports = want.setdefault(sw, set())
    if not port or "*" in ports:
        ports.clear()
        ports.add("*")  # the whole switch
    else:
        ports.add(port)
for sw, ports in want.items():
    # one swemu's config, or the switch's own (a process per switch)
    path = os.path.join(top, "swemu.%s.cfg" % sw)
    path = path if os.path.exists(path) else os.path.join(top, "swemu.cfg")
    cfg = open(path).read()
    at = cfg.index('{ name = "%s";' % sw)
    at = cfg.index("ports = (", at)  # the switch's own port list: the spine's shares a line
    pl = "" if "*" in ports else " ports = [%s];" % ", ".join('"%s"' % p for p in sorted(ports))
    cfg = cfg[:at] + 'capture = { file = "%s/%s.pcapng"; snaplen = %s; max_bytes = "256M";%s };\n    ' % (
        d, sw, snap, pl) + cfg[at:]
    open(path, "w").write(cfg)
PY
}
# float jobs of ps, ps-ina, agent-ring, and their packets: T_INA_ELEMS elements
# (the ToRs take up to 2048), T_INA_SLOTS of them in flight per worker and job
case "${T_INA_WIRE:-fp32}" in
fp32) wire=(HCL_INA_FP32=native) ;;
bfp) wire=(HCL_INA_FP32=bfp) ;;
bf16) wire=(HCL_INA_FP32=bf16) ;;
esac
wire+=(HCL_INA_ELEMS="${T_INA_ELEMS:-2048}" HCL_INA_SLOTS="${T_INA_SLOTS:-8}" HCL_PS_SHARDS="${T_PS_SHARDS:-1}")
# the links are emulated (shaped): there the ring is as fast as Gloo's only
# with two channels (docs/HOSTLIB.md, "Ring channels"); the caller's
# HCL_RING_CHANNELS wins
wire+=(HCL_RING_CHANNELS="${HCL_RING_CHANNELS:-2}")
printf 'T_RING_CHANNELS=%s\n' "${HCL_RING_CHANNELS:-2}" >> "$out/trial.env"
# One run of ina-allreduce-perf into directory $1 (algorithm $2, size $3,
# then its options); the machine's CPU ticks around it in $1/cpu.  In the
# background and waited for, so a signal stops it at once (topo.sh down then
# kills what is left of it).
perf_run() {
	local d=$1 algo=$2 size=$3 rc=0
	shift 3
	mkdir -p "$d/trace"
	local cpu0
	cpu0=$(cpu_ticks)
	# the library's re-send timer floors stretch with the dilated round trips
	env "${wire[@]}" HCL_TIMER_SCALE="$T_DILATION" "$top/testbed/launch.sh" $name -- "$perf" --only in --algo "$algo" -d "$T_DTYPE" -b "$size" -e "$size" \
		--timeout "$T_TIMEOUT_MS" --trace "$d/trace" "$@" > "$d/perf.out" 2>&1 &
	run_pid=$!
	wait $run_pid || rc=$?
	run_pid=""
	echo "$cpu0 $(cpu_ticks)" > "$d/cpu"
	echo $rc > "$d/rc"
	return 0
}
# the share of the machine's CPU a run used (its directory $1), in percent
cpu_pct() { awk '{ t = $4 - $2; x = t > 0 ? 100 * ($3 - $1) / t : 0; printf "%.0f", x }' "$1/cpu"; }

# dilation = "auto": the highest emulated host rate of a ladder (50M, 100M,
# ... doubling, up to the real rate) at which ring, and ps-ina where racks
# are INA-capable, each at the largest size and back to back, keep the
# machine's CPU under cpu_share; k = the real rate / that rate
calibrate() {
	local real rate k="" best="" algo share ok v big=${T_SIZES##* } cal=$out/calibration
	real=$("$checker" --rate "$T_HOST_RATE")
	local calgos=(ring)
	[[ " $T_ALGOS " == *" ps-ina "* && $T_INA_RACKS != none ]] && calgos+=(ps-ina)
	echo "# calibration: emulated host rate, k, algorithm, CPU busy (% of $(nproc) cores)" \
		> "$out/calibration.txt"
	for rate in 50000000 100000000 200000000 400000000 800000000 1600000000; do
		((rate <= real)) || break
		k=$(awk -v r="$real" -v e="$rate" 'BEGIN { printf "%.6g", r / e }')
		v=$("$checker" --dilation "$k" "$cfgfile") || exit 2
		eval "$v"
		topo_opts
		racks_up "$T_INA_RACKS"
		ok=1
		# about two seconds of calls at the ring's link bound (2 x size x 8 /
		# rate each): a run of a few calls gave CPU shares off by 30 points
		local iters
		iters=$(awk -v b="$("$checker" --size "$big")" -v r="$rate" \
			'BEGIN { n = int(2 * r / (16 * b)) + 1; n = n < 3 ? 3 : n; n = n > 200 ? 200 : n; print n }')
		for algo in "${calgos[@]}"; do
			perf_run "$cal/$k-$algo" "$algo" "$big" -n "$iters" -w 1
			[ "$(cat "$cal/$k-$algo/rc")" = 0 ] || { echo "trial: calibration run $algo at $rate bit/s failed:" \
				"$(tail -1 "$cal/$k-$algo/perf.out")" >&2; exit 1; }
			share=$(cpu_pct "$cal/$k-$algo")
			echo "$rate $k $algo $share" >> "$out/calibration.txt"
			printf 'calibration: host links %s (k = %s): %s used %s%% of the CPU\n' "$T_EMU_HOST_RATE" "$k" "$algo" \
				"$share"
			awk -v s="$share" -v c="$T_CPU_SHARE" 'BEGIN { exit !(s > 100 * c) }' && ok=0
		done
		((ok)) || break
		best=$k
	done
	# even the slowest rung was over: run there, and the report says so;
	# a cluster slower than the first rung runs as it is
	dil_k=${best:-${k:-1}}
}

if [ "$T_DILATION" = auto ]; then
	calibrate
	vars=$("$checker" --dilation "$dil_k" "$cfgfile") || exit 2
	eval "$vars"
	printf '%s\n' "$vars" | grep -E '^T_(DILATION|EMU_)' >> "$out/trial.env"
	echo T_CALIBRATED=1 >> "$out/trial.env"
	echo "time dilation: k = $dil_k (host links $T_EMU_HOST_RATE stand for $T_HOST_RATE)"
fi
topo_opts
# the emulated host rate in bit/s, read by the one parser, for the report's limits
printf 'T_EMU_HOST_BPS=%s\n' "$("$checker" --rate "$T_EMU_HOST_RATE")" >> "$out/trial.env"
echo "trial $T_NAME: $T_RACKS racks x $T_HOSTS hosts (INA racks: $T_INA_RACKS$( ((T_SWEEP)) && echo ", then a sweep in the order $T_SWEEP_ORDER")), links $T_EMU_HOST_RATE, uplinks $T_EMU_UPLINK_RATE, $T_PMD ports$( [ "${T_PROCESSES:-0}" = 1 ] && echo ", a swemu process per switch")$([ "$T_DILATION" = 1 ] || echo ", time-dilated by $T_DILATION")"
racks_up "$T_INA_RACKS" "$out/capture/main"
cp /run/swemu-testbed/$name/swemu*.cfg "$out/" 2>/dev/null || true

noise=(--seed "$T_SEED")
if [ "$T_EMU_COMPUTE_MS" != 0 ] || [ -n "$T_EMU_JITTER" ] || [ -n "$T_STRAGGLER" ]; then
	noise+=(--compute "$T_EMU_COMPUTE_MS")
	[ -n "$T_EMU_JITTER" ] && noise+=(--jitter "$T_EMU_JITTER")
	[ -n "$T_STRAGGLER" ] && noise+=(--straggler "$T_STRAGGLER")
fi
((T_PACE)) && noise+=(-P)
read -ra algos <<<"$T_ALGOS"
read -ra sizes <<<"$T_SIZES"
ina_algos=()
for a in "${algos[@]}"; do [[ $a == ps-ina || $a == agent-ring ]] && ina_algos+=("$a"); done
total=$((${#algos[@]} * ${#sizes[@]} * T_REPEATS)) k=0 start=$SECONDS
((T_SWEEP)) && total=$((total + T_RACKS * ${#ina_algos[@]} * ${#sizes[@]} * T_REPEATS))
# every algorithm named after $1 and size T_REPEATS times, the algorithms'
# order reversed every other repeat (a drift of the machine then hits all
# of them alike); repeat 1 in $1/ALGO-SIZE, repeat r in $1/ALGO-SIZE@r
run_set() {
	local base=$1 rep i algo size d rc
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
				"$top/testbed/topo.sh" stats $name > "$d/stats-before.json"
				perf_run "$d" "$algo" "$size" -n "$T_ITERATIONS" -w "$T_WARMUP" "${noise[@]}"
				rc=$(cat "$d/rc")
				# what the other ranks said (an agent's fall-back to the software PS,
				# INA lost mid-run): the report credits INA only where it happened
				cp /run/swemu-testbed/$name/rank-*.log "$d/" 2>/dev/null || true
				((rc == 0)) || echo "  failed: $(grep -m1 -E 'rank|error' "$d/perf.out" || tail -1 "$d/perf.out")"
				"$top/testbed/topo.sh" stats $name > "$d/stats-after.json"
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
		racks_up "${list:-none}" "$out/capture/sweep-k$up"
		run_set "$out/sweep/k$up" "${ina_algos[@]}"
	done
fi
"$top/testbed/topo.sh" down $name >/dev/null
{
	echo "git: $(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "swemu: $("$top/build/swemu/swemu" --version 2>/dev/null | head -1 || echo unknown)"
	echo "dpdk: $(pkg-config --modversion libdpdk 2>/dev/null || echo unknown)"
	echo "kernel: $(uname -sr)"
	echo "cpu: $(nproc) x $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
	echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
	echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
} > "$out/machine.txt"
/usr/bin/python3 "$top/testbed/trial_report.py" "$out"
echo "report: $out/report.md"
