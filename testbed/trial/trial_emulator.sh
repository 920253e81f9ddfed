# SPDX-License-Identifier: BSD-3-Clause
# testbed/trial/trial.sh's engine "emulator" (sourced): the racks in network
# namespaces around swemu ToRs and a spine (topo.sh), ina-allreduce-perf
# on the hosts, the switches' counters read around each run.
perf=${PERF:-$top/build/ring/ina-allreduce-perf}
engine_check() {
	[ -x "$perf" ] || { echo "trial: build first (testbed/setup.sh)" >&2; exit 2; }
	[ "$(id -u)" = 0 ] || { echo "trial: needs root (network namespaces)" >&2; exit 2; }
}
# the machine's CPU ticks of all cores, for the shares a run used: busy
# (steal included), all, stolen (the time a hypervisor gave this virtual
# machine's cores to something else)
cpu_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $9; exit }' /proc/stat; }
# the testbed's settings: the emulated (dilated) rates and delays
topo_opts() {
	opts=(--subnet 10.93.$slot --racks $T_RACKS --rack-sizes "$T_RACK_SIZES" --rate "$T_EMU_HOST_RATE")
	opts+=(--uplink-rate "$T_EMU_UPLINK_RATE")
	opts+=(--pmd "$T_PMD")
	# topo.sh spreads the switches over the cores it can spare (a process
	# or an lcore each) and pins the ranks apart from them
	[ "${T_PROCESSES:-0}" = 1 ] && opts+=(--processes)
	# the one ToR on that many lcores (af_xdp, the hosts steering)
	[ "${T_TOR_PARTITIONS:-1}" = 1 ] || opts+=(--partitions "$T_TOR_PARTITIONS")
	[ -n "$T_UPLINK_BUFFER" ] && opts+=(--uplink-buffer "$T_UPLINK_BUFFER")
	[ -n "$T_HOST_BUFFER" ] && opts+=(--buffer "$T_HOST_BUFFER")
	[ "$T_LOSS" != 0 ] && opts+=(--loss "$T_LOSS")
	[ "$T_EMU_DELAY_US" != 0 ] && opts+=(--delay-us "$T_EMU_DELAY_US")
	[ "$T_EMU_JITTER_US" != 0 ] && opts+=(--jitter-us "$T_EMU_JITTER_US")
	[ -n "${T_BURST_LOSS:-}" ] && opts+=(--burst-loss "$T_BURST_LOSS")
	[ -n "$T_EMU_RACK_RATES" ] && opts+=(--rack-rates "$T_EMU_RACK_RATES")
	# the simulator's default share (--ecn): the same marks in both worlds
	[ "${T_INA_CC:-0}" = 1 ] && opts+=(--ecn 0.5)
	return 0
}
# the racks, with INA-capable ToRs at racks $1 ("0,2", "none"); with a
# directory $2, the switches and ports of T_CAPTURE write pcapng files there
racks_up() {
	"$top/testbed/topo/topo.sh" down $name >/dev/null 2>&1 || true # a crashed run's leftovers, or the last deployment
	"$top/testbed/topo/topo.sh" up $name $n "${opts[@]}" --ina-racks "$1" >> "$out/topo.log"
	[ -z "$T_CAPTURE" ] || [ -z "${2:-}" ] || capture_into "$2"
	"$top/testbed/topo/topo.sh" start $name >> "$out/topo.log"
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
	local what=(-b "$size" -e "$size")
	# a workload's steps, at the trial's time dilation (its size names the model)
	[ -z "${T_WORKLOAD:-}" ] || [ "$size" != "$T_WORKLOAD_NAME" ] ||
		what=(--workload "$T_WORKLOAD" --time-scale "$T_DILATION")
	run_waited env "${wire[@]}" HCL_PS_SHARDS="$(ps_shards_of "$algo")" HCL_TIMER_SCALE="$T_DILATION" "$top/testbed/topo/launch.sh" $name -- "$perf" --only in --algo "$algo" -d "$T_DTYPE" "${what[@]}" \
		--timeout "$T_TIMEOUT_MS" --trace "$d/trace" "$@" > "$d/perf.out" 2>&1 || rc=$?
	echo "$cpu0 $(cpu_ticks)" > "$d/cpu"
	echo $rc > "$d/rc"
	return 0
}

# dilation = "auto": the highest emulated host rate of a ladder (50M, 100M,
# ... doubling, up to the real rate) at which ring, and ps-ina where racks
# are INA-capable, each at the largest size and back to back, keep the
# machine's CPU, every swemu lcore's loop and every rank's CPU (of one
# core) under cpu_share (trial_load.py); k = the real rate / that rate.
# The machine's total alone misses a saturated core on a many-core server.
calibrate() {
	local real rate k="" best="" algo ok v big=${T_SIZES##* } cal=$out/calibration load
	# a workload: its largest bucket, the longest call of a step
	[ -z "${T_WORKLOAD:-}" ] || big=$T_WORKLOAD_MAX_BYTES
	real=$("$checker" --rate "$T_HOST_RATE")
	local calgos=(ring)
	[[ " $T_ALGOS " == *" ps-ina "* && $T_INA_RACKS != none ]] && calgos+=(ps-ina)
	echo "# calibration: emulated host rate, k, algorithm, busy % of: the machine ($(nproc) cores)," \
		"the busiest swemu lcore, the busiest rank (of a core); the hypervisor's steal (all cores); that lcore" \
		> "$out/calibration.txt"
	for rate in 50000000 100000000 200000000 400000000 800000000 1600000000 3200000000; do
		((rate <= real)) || break
		k=$(awk -v r="$real" -v e="$rate" 'BEGIN { printf "%.6g", r / e }')
		v=$("$checker" --dilation "$k" "$cfgfile") || exit 2
		eval "$v"
		topo_opts
		racks_up "$T_INA_RACKS"
		ok=1
		# about two seconds of calls at the ring's link bound (2 x size x 8 /
		# rate each): a run of a few calls gave CPU shares off by 30 points
		# of a size the ring moves in about half a second: the share
		# follows the rate, and a workload's 30 MB bucket at 50M took
		# 9 s a call, three minutes of calibration in all
		local iters cal_b
		cal_b=$(awk -v b="$("$checker" --size "$big")" -v r="$rate" \
			'BEGIN { c = int(r / 32 / 4096) * 4096; c = c < 65536 ? 65536 : c; print (b < c ? b : c) }')
		iters=$(awk -v b="$cal_b" -v r="$rate" \
			'BEGIN { n = int(2 * r / (16 * b)) + 1; n = n < 3 ? 3 : n; n = n > 200 ? 200 : n; print n }')
		for algo in "${calgos[@]}"; do
			local d=$cal/$k-$algo
			mkdir -p "$d"
			"$top/testbed/topo/topo.sh" stats $name > "$d/stats-before.json"
			perf_run "$d" "$algo" "$cal_b" -n "$iters" -w 1
			[ "$(cat "$d/rc")" = 0 ] || { echo "trial: calibration run $algo at $rate bit/s failed:" \
				"$(tail -1 "$d/perf.out")" >&2; exit 1; }
			"$top/testbed/topo/topo.sh" stats $name > "$d/stats-after.json"
			load=$(/usr/bin/python3 "$top/testbed/trial/trial_load.py" "$d")
			echo "$rate $k $algo $load" >> "$out/calibration.txt"
			set -- $load
			printf 'calibration: host links %s (k = %s): %s busy: machine %s%%, swemu %s %s%%, busiest rank %s%%%s\n' \
				"$T_EMU_HOST_RATE" "$k" "$algo" "$1" "${*:5}" "$2" "$3" \
				"$([ "$4" = - ] || [ "$4" = 0 ] || echo ", stolen by the hypervisor $4%")"
			awk -v m="$1" -v l="$2" -v r="$3" -v c="$T_CPU_SHARE" \
				'BEGIN { c *= 100; exit !(m + 0 > c || l + 0 > c || r + 0 > c) }' && ok=0
		done
		((ok)) || break
		best=$k
	done
	# even the slowest rung was over: run there, and the report says so;
	# a cluster slower than the first rung runs as it is
	dil_k=${best:-${k:-1}}
}

# A testbed slot, the racks up with the trial's main deployment (after
# calibrating dilation = "auto"), and the ranks' settings.
engine_up() {
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
		"$top/testbed/topo/topo.sh" down $name >/dev/null 2>&1 || true
		rm -rf "${slots:?}/$slot"
		exit $rc
	}
	trap cleanup EXIT
	printf 'T_TOPOLOGY=%s\n' $name >> "$out/trial.env"
	# float jobs of ps, ps-ina, agent-ring, and their packets: T_INA_ELEMS elements
	# (the ToRs take up to 2048), T_INA_SLOTS of them in flight per worker and job
	case "${T_INA_WIRE:-fp32}" in
	fp32) wire=(HCL_INA_FP32=native) ;;
	bfp) wire=(HCL_INA_FP32=bfp) ;;
	bf16) wire=(HCL_INA_FP32=bf16) ;;
	esac
	wire+=(HCL_INA_ELEMS="${T_INA_ELEMS:-2048}" HCL_INA_SLOTS="${T_INA_SLOTS:-8}")
	wire+=(HCL_RING_CHANNELS="$ring_channels")
	[ "${T_INA_CC:-0}" = 1 ] && wire+=(HCL_INA_CC=1)
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
	# a workload's profile is the compute (the noise scales it); else compute_ms
	[ -n "${T_WORKLOAD:-}" ] || { [ "$T_EMU_COMPUTE_MS" = 0 ] && [ -z "$T_EMU_JITTER" ] && [ -z "$T_STRAGGLER" ]; } ||
		noise+=(--compute "$T_EMU_COMPUTE_MS")
	[ -n "$T_EMU_JITTER" ] && noise+=(--jitter "$T_EMU_JITTER")
	[ -n "$T_STRAGGLER" ] && noise+=(--straggler "$T_STRAGGLER")
	((T_PACE)) && noise+=(-P)
	return 0
}
# the racks again, with INA-capable ToRs at racks $1, captures into $2
deploy() { racks_up "$@"; }
# One run into directory $1: algorithm $2, size $3 (repeat $4: the
# emulator's noise is the same every repeat; the machine's is not)
one_run() {
	local d=$1 rc
	"$top/testbed/topo/topo.sh" stats $name > "$d/stats-before.json"
	perf_run "$d" "$2" "$3" -n "$T_ITERATIONS" -w "$T_WARMUP" "${noise[@]}"
	rc=$(cat "$d/rc")
	# what the other ranks said (an agent's fall-back to the software PS,
	# INA lost mid-run): the report credits INA only where it happened
	cp /run/swemu-testbed/$name/rank-*.log "$d/" 2>/dev/null || true
	((rc == 0)) || echo "  failed: $(grep -m1 -E 'rank|error' "$d/perf.out" || tail -1 "$d/perf.out")"
	"$top/testbed/topo/topo.sh" stats $name > "$d/stats-after.json"
}
engine_down() { "$top/testbed/topo/topo.sh" down $name >/dev/null; }
engine_versions() {
	echo "swemu: $("$top/build/swemu/swemu" --version 2>/dev/null | head -1 || echo unknown)"
	echo "dpdk: $(pkg-config --modversion libdpdk 2>/dev/null || echo unknown)"
}
