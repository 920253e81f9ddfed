#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ps-ina through the real switch, launched like a training job: each INA
# rack's lowest rank installs the rack's jobs in its ToR over the control
# channel and removes them at the end; racks without INA (and, with more
# than one rack, the ToRs' partial sums) go to the software PS on rank 0.
# Results checked by ina-allreduce-perf (#wrong = 0), with 5% loss on every
# port and link; with two racks also bf16 and fp32 over bf16 jobs
# (HCL_INA_FP32=bf16: 2-byte elements on the wire, the ToRs' partials
# rounded to bf16 before the PS adds them), and with the PS in 8 shards.
. "$(dirname "$0")/lib.sh"
perf=${PERF:-$top/build/ring/ina-allreduce-perf}
sub=10.85.0

run() { # run ARGS: every size exact, the avg line present
	local out
	out=$("$top/testbed/topo/launch.sh" itpsi ${LAUNCH_OPTS:-} -- "$perf" --only in --algo ps-ina "$@") || { echo "$out" >&2; return 1; }
	echo "$out"
	[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +(float|int32|bfloat16) +sum .* 0$' <<<"$out")" -ge 2 ] || return 1
	grep -q "^# Avg bus bandwidth" <<<"$out"
}
to_rank0() { stats_get 'd["switches"]["tor0"]["ports"]["h0"]["tx_bytes"]'; } # bytes swemu sent rank 0's host
up_tx() { stats_get "d['switches']['$1']['ports']['up']['tx_bytes']"; } # bytes a ToR sent the spine
jobs_left() { stats_get "sum(len(s['ina']['jobs']) for s in d['switches'].values() if 'ina' in s)"; }

for loss in "" 0.05; do
	topo itpsi 4 --subnet $sub ${loss:+--loss $loss}
	run -b 64K -e 4M -f 8 -n 3 -w 1 || fail "ps-ina fp32 ${loss:+with $loss loss}"
	run -b 4K -e 256K -f 8 -n 2 -w 0 -d int32 || fail "ps-ina int32 ${loss:+with $loss loss}"
	accepted=$(stats_get 'd["switches"]["tor0"]["ina"]["accepted"]')
	((accepted > 0)) || fail "the switch aggregated nothing"
	# the library's hosts send UDP checksum 0: most of their frames repeat
	# their member's checked headers (swemu's one-compare check)
	repeats=$(stats_get 'd["switches"]["tor0"]["ina"]["repeated_headers"]')
	((2 * repeats > accepted)) || fail "$repeats of $accepted accepted frames had their member's headers checked once"
	echo "psina: ${loss:-no} loss: $repeats of $accepted accepted frames with their member's headers"
	[ "$(jobs_left)" = 0 ] || fail "the agent left jobs in the switch"
	"$top/testbed/topo/topo.sh" down itpsi
done

# two racks of four: rack 1 behind an INA ToR, rack 0 falls back to the
# software PS; then both racks INA (the PS adds the two ToRs' partials)
for inaracks in 1 all; do
	topo itpsi 8 --subnet $sub --racks 2 --ina-racks $inaracks --loss 0.05
	# the int32 run takes its layout from the host file topo.sh wrote
	LAUNCH_OPTS=--hostfile run -b 16K -e 1M -f 8 -n 2 -w 0 -d int32 --timeout 60000 ||
		fail "ps-ina, 2 racks, INA racks $inaracks, int32 (host file)"
	b0=$(switch_rx_bytes tor1)
	run -b 16K -e 1M -f 8 -n 2 -w 0 --timeout 60000 || fail "ps-ina, 2 racks, INA racks $inaracks, fp32"
	b1=$(switch_rx_bytes tor1)
	HCL_INA_FP32=bf16 run -b 16K -e 1M -f 8 -n 2 -w 0 --timeout 60000 ||
		fail "ps-ina, 2 racks, INA racks $inaracks, fp32 over bf16 jobs"
	b2=$(switch_rx_bytes tor1)
	# the same calls in 2-byte elements: about half the bytes into the ToR
	((4 * (b2 - b1) < 3 * (b1 - b0))) || fail "fp32 over bf16 jobs: $((b2 - b1)) bytes vs $((b1 - b0)) in fp32"
	echo "psina: INA racks $inaracks: bytes into tor1, fp32 over bf16 jobs / fp32 jobs = $((b2 - b1)) / $((b1 - b0))"
	HCL_INA_FP32=bf16 run -b 16K -e 1M -f 8 -n 2 -w 0 --timeout 60000 -d bf16 ||
		fail "ps-ina, 2 racks, INA racks $inaracks, bf16 over bf16 jobs"
	# the PS in 8 shards, one per host: exact, and rank 0's host no longer
	# takes every contribution (with one PS it gets all of each slice's;
	# plain rack 0 straight to the PS, whose shards are what this weighs)
	export HCL_PS_RACK_AGG=never
	t0=$(to_rank0)
	run -b 512K -e 1M -f 2 -n 2 -w 0 --timeout 60000 || fail "ps-ina, 2 racks, INA racks $inaracks, one PS (reference)"
	t1=$(to_rank0)
	HCL_PS_SHARDS=8 run -b 16K -e 1M -f 8 -n 2 -w 0 --timeout 60000 -d int32 ||
		fail "ps-ina, 2 racks, INA racks $inaracks, 8 PS shards, int32"
	t2=$(to_rank0)
	HCL_PS_SHARDS=8 run -b 512K -e 1M -f 2 -n 2 -w 0 --timeout 60000 || fail "ps-ina, 2 racks, INA racks $inaracks, 8 PS shards"
	t3=$(to_rank0)
	unset HCL_PS_RACK_AGG
	((2 * (t3 - t2) < t1 - t0)) || fail "8 PS shards: $((t3 - t2)) bytes to rank 0's host vs $((t1 - t0)) with one PS"
	echo "psina: INA racks $inaracks: bytes to rank 0's host for 512 KiB + 1 MiB calls, 8 PS shards / one PS = $((t3 - t2)) / $((t1 - t0))"
	(($(stats_get 'd["switches"]["tor1"]["ina"]["accepted"]') > 0)) || fail "tor1 aggregated nothing"
	if [ $inaracks = 1 ]; then
		[ "$(stats_get '"ina" in d["switches"]["tor0"]')" = False ] || fail "tor0 should be a plain switch"
		# plain rack 0 sums on its hosts (a rack aggregator per shard,
		# HCL_PS_RACK_AGG=always) and sends one partial up, not its four
		# ranks' slices: up go half the shards' contributions (their PS
		# is in rack 1) and the other half's results to tor1, 2.5 S flat,
		# S with them.  With two racks the default (auto) stays flat.
		export HCL_PS_SHARDS=8
		u0=$(up_tx tor0)
		HCL_PS_RACK_AGG=always run -b 512K -e 1M -f 2 -n 2 -w 0 --timeout 60000 ||
			fail "ps-ina, plain rack 0 aggregated on a host"
		u1=$(up_tx tor0)
		run -b 512K -e 1M -f 2 -n 2 -w 0 --timeout 60000 -d int32 ||
			fail "ps-ina, plain rack 0 straight to the PS (the default with two racks), int32"
		u2=$(up_tx tor0)
		unset HCL_PS_SHARDS
		((2 * (u1 - u0) < u2 - u1)) || fail "rack aggregator: $((u1 - u0)) bytes up from rack 0, $((u2 - u1)) without"
		echo "psina: bytes up from plain rack 0 for 512 KiB + 1 MiB calls, rack aggregator / none = $((u1 - u0)) / $((u2 - u1))"
	else
		(($(stats_get 'd["switches"]["tor0"]["ina"]["accepted"]') > 0)) || fail "tor0 aggregated nothing"
	fi
	[ "$(jobs_left)" = 0 ] || fail "the agents left jobs in the switches"
	"$top/testbed/topo/topo.sh" down itpsi
done

# ATP's fallback: tor1 has no room (a job of 2040 of its 2048 slots is in
# the way), so rack 1 goes to the software PS; rack 0's ToR job is planned
# again to feed that PS.  Results exact; tor1 aggregates nothing; the
# agent says so; only the blocker stays installed.
topo itpsi 8 --subnet $sub --racks 2 --ina-racks all
in_host 4 "$top/testbed/topo/swemu-ctl" $sub.253 "op = \"install\"; job = { id = 999; fan_in = 1; dtype = \"int32\";
  slots = 2040; elems = 8; outputs = [\"multicast\"]; contributors = [\"$sub.5:48864\"]; };" >/dev/null ||
	fail "blocker job on tor1"
run -b 16K -e 1M -f 8 -n 2 -w 0 --timeout 60000 || fail "ps-ina with tor1 full"
grep -q "rack 1: .*not enough free slots.*software PS" "/run/swemu-testbed/$TOPO_NAME/rank-4.log" ||
	fail "rack 1's agent did not report the fallback: $(cat "/run/swemu-testbed/$TOPO_NAME/rank-4.log")"
[ "$(stats_get 'd["switches"]["tor1"]["ina"]["accepted"]')" = 0 ] || fail "tor1 aggregated although it was full"
(($(stats_get 'd["switches"]["tor0"]["ina"]["accepted"]') > 0)) || fail "tor0 aggregated nothing"
[ "$(jobs_left)" = 1 ] || fail "jobs left besides the blocker: $(jobs_left)"
"$top/testbed/topo/topo.sh" down itpsi

# a member dies mid-run: the others fail within the deadline, naming the
# switch that stopped answering (it cannot complete their slices), and the
# agent still removes the rack's jobs
topo itpsi 4 --subnet $sub
pids=()
for i in 0 1 2 3; do
	ip netns exec "$TOPO_NAME-h$i" env RANK=$i WORLD_SIZE=4 MASTER_ADDR=$sub.1 MASTER_PORT=29500 \
		HCL_DATA_ADDR=$sub.$((i + 1)) HCL_INA_SWITCH=$sub.254 \
		"$perf" --only in --algo ps-ina -b 4M -e 4M -n 200 -w 0 --timeout 4000 > $LOGDIR/psi-$i.log 2>&1 &
	pids+=($!)
done
# mid-run = the job has completed slices (any moment after that will do)
for _ in $(seq 200); do
	(($(stats_get 'd["switches"]["tor0"]["ina"]["accepted"]') > 0)) && break
	sleep 0.05
done
kill_rank_expect $LOGDIR/psi 15 "switch $sub\.254:48864 did not answer in time"
[ "$(jobs_left)" = 0 ] || fail "the job stayed installed after a member died"
echo "psina: 4 ranks through swemu, exact, also with 5% loss; 2 racks with one or both INA (software-PS fallback), exact with 5% loss; a dead member stops the others within the deadline and the job is removed"
