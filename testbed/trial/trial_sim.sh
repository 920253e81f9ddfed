# SPDX-License-Identifier: BSD-3-Clause
# testbed/trial/trial.sh's engine "sim" (sourced): every run is one swemu-sim
# process (ns-3: the trial's fabric, nic/'s engine in the switches, the
# host library's plans on the hosts; docs/SCALE.md) writing one JSON
# object, which the report reads in place of ina-allreduce-perf's output
# and the switches' counters.  No root, nothing to tear down.
sim=${SIM:-$top/build/testbed/sim/swemu-sim}
engine_check() {
	[ -x "$sim" ] || { echo "trial: engine = \"sim\" needs swemu-sim, built when ns-3 is installed" \
		"(testbed/setup.sh --sim)" >&2; exit 2; }
}
engine_up() {
	sim_ina=$T_INA_RACKS
	echo "trial $T_NAME (simulated): $T_RACKS racks x $T_HOSTS hosts (INA racks: $T_INA_RACKS$( ((T_SWEEP)) &&
		echo ", then a sweep in the order $T_SWEEP_ORDER")), links $T_HOST_RATE, uplinks $T_UPLINK_RATE"
}
deploy() { sim_ina=$1; }
# One run into directory $1: algorithm $2, size $3, repeat $4.  Each repeat
# draws its compute noise and loss from its own seed: the simulator is
# deterministic, so the same seed would only repeat the same figure.
one_run() {
	local d=$1 algo=$2 size=$3 rep=$4 rc=0
	local args=(--algorithm="$algo" --racks="$T_RACKS" --hostsPerRack="$T_HOSTS" --inaRackList="$sim_ina"
		--hostRate="$T_HOST_RATE" --uplinkRate="$T_UPLINK_RATE" --loss="$T_LOSS"
		--iterations="$T_ITERATIONS" --warmup="$T_WARMUP" --jitter="${T_JITTER:-none}"
		--seed=$((T_SEED + rep - 1)) --inaElems="$T_INA_ELEMS" --inaSlots="$T_INA_SLOTS"
		--ringChannels="$ring_channels"
		--psShards="$(ps_shards_of "$algo")"
		--limitS=$(((T_WARMUP + T_ITERATIONS) * T_TIMEOUT_MS / 1000)))
	# a workload's steps (its size names the model), or calls of one size after compute
	if [ -n "${T_WORKLOAD:-}" ] && [ "$size" = "$T_WORKLOAD_NAME" ]; then
		args+=(--workload="$T_WORKLOAD")
	else
		args+=(--size="$size" --computeMs="$T_COMPUTE_MS")
	fi
	[ -n "$T_STRAGGLER" ] && args+=(--straggler="$T_STRAGGLER")
	[ -n "$T_HOST_BUFFER" ] && args+=(--hostBuffer="$T_HOST_BUFFER")
	[ -n "$T_UPLINK_BUFFER" ] && args+=(--uplinkBuffer="$T_UPLINK_BUFFER")
	# 0: the simulator's 1 us per link, what a real link and switch take at least
	[ "$T_DELAY_US" != 0 ] && args+=(--delayUs="$T_DELAY_US")
	((T_PACE)) && args+=(--pace=true)
	((${T_INA_CC:-0})) && args+=(--inaCc=true)
	printf '%q ' "$sim" "${args[@]}" > "$d/command"
	run_waited "$sim" "${args[@]}" > "$d/sim.json" 2> "$d/sim.err" || rc=$?
	echo $rc > "$d/rc"
	((rc == 0)) || echo "  failed: $(tail -1 "$d/sim.err" 2>/dev/null)$(sed -n 's/.*"error": "\(.*\)"}$/\1/p' "$d/sim.json")"
	return 0
}
engine_down() { :; }
engine_versions() {
	echo "engine: swemu-sim, ns-3 $(pkg-config --modversion ns3-core 2>/dev/null || echo unknown)"
}
