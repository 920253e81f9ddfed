#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Agent-ring (docs/AGENTRING.md) through swemu, launched like a job: 8 ranks
# in two racks of four with 0, 1 and 2 INA ToRs, 5% loss on every port and
# link; int32 and fp32 at 1, 7 and 100003 elements, #wrong = 0 everywhere;
# with one INA rack also bf16 and fp32 over BF16 jobs (HCL_INA_FP32=bf16).
# Then: the agent's link carries no more than a worker's (no relaying),
# one INA rack alone (SwitchML), and a killed member stops everybody within
# the deadline with the jobs removed from the switches.
. "$(dirname "$0")/lib.sh"
perf=${PERF:-$top/build/ring/ina-allreduce-perf}
sub=10.87.0

check() { # check TOPO ARGS: every line exact
	local out
	out=$("$top/testbed/topo/launch.sh" "$TOPO_NAME" -- "$perf" --algo agent-ring -n 1 -w 0 --timeout 60000 "$@") ||
		{ echo "$out" >&2; return 1; }
	[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +(int32|float|bfloat16) +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$' <<<"$out")" -ge 1 ] || { echo "$out" >&2; return 1; }
}
jobs_left() { stats_get "sum(len(s['ina']['jobs']) for s in d['switches'].values() if 'ina' in s)"; }

for inaracks in none 1 all; do
	topo itagr 8 --subnet $sub --racks 2 --ina-racks $inaracks --loss 0.05
	for bytes in 4 28 400012; do
		check -d int32 -b $bytes -e $bytes || fail "agent-ring, INA racks $inaracks, int32, $bytes B"
	done
	b0=$(switch_rx_bytes tor0)
	check -d float -b 400012 -e 400012 || fail "agent-ring, INA racks $inaracks, fp32"
	if [ $inaracks = 1 ]; then # a ToR and software members, both on BF16 jobs
		b1=$(switch_rx_bytes tor0)
		HCL_INA_FP32=bf16 check -d float -b 400012 -e 400012 || fail "agent-ring, INA racks 1, fp32 over BF16 jobs"
		b2=$(switch_rx_bytes tor0)
		# rack 0's software members: the same call in 2-byte elements
		((4 * (b2 - b1) < 3 * (b1 - b0))) || fail "fp32 over BF16 jobs: $((b2 - b1)) bytes into tor0 vs $((b1 - b0))"
		echo "agentring: bytes into tor0, fp32 over BF16 jobs / fp32 jobs = $((b2 - b1)) / $((b1 - b0))"
		HCL_INA_FP32=bf16 check -d bf16 -b 200006 -e 200006 || fail "agent-ring, INA racks 1, bf16 over BF16 jobs"
	fi
	[ "$(jobs_left)" = 0 ] || fail "INA racks $inaracks: jobs left in the switches"
	"$top/testbed/topo/topo.sh" down itagr
done

# the agent (h4) is a worker like the others: its link carries what theirs
# do (the ToR adds and forwards, the agent relays nothing).  Measured on a
# clean path with a 4 MiB tensor, so re-sends after random losses do not
# decide the figure.
topo itagr 8 --subnet $sub --racks 2 --ina-racks 1
HCL_AGENT_REPORT=1 check -d float -b 4M -e 4M || fail "agent-ring, 4 MiB"
# the agent (rank 4) reported its rack's progress from the ToR's counters:
# after the last call every slice the calls needed is complete there
report=$(grep "^agent rack 1:" "/run/swemu-testbed/$TOPO_NAME/rank-4.log" | tail -1)
echo "$report"
[[ "$report" =~ ([0-9]+)\ of\ ([0-9]+)\ slices\ complete ]] && ((BASH_REMATCH[1] == BASH_REMATCH[2] && BASH_REMATCH[2] > 0)) ||
	fail "agent progress report: '$report'"
ratio=$(stats_get 'max(d["switches"]["tor1"]["ports"]["h4"]["rx_bytes"], d["switches"]["tor1"]["ports"]["h4"]["tx_bytes"]) / max(max(p["rx_bytes"], p["tx_bytes"]) for n, p in d["switches"]["tor1"]["ports"].items() if n in ("h5", "h6", "h7"))')
echo "agent link / busiest other link in the INA rack: $ratio"
$PY -c "import sys; sys.exit(0 if $ratio <= 1.1 else 1)" || fail "the agent's link carries $ratio x a worker's"
"$top/testbed/topo/topo.sh" down itagr

topo itagr 4 --subnet $sub
check -d int32 -b 4 -e 400012 -f 100003 || fail "agent-ring, one INA rack"
"$top/testbed/topo/topo.sh" down itagr

# four INA racks of two behind rate-limited links: the ToRs forward to each
# other across the spine (multicast-sized frames, flooded until the spine
# has learnt the ToRs: a flood of a chained frame once crashed swemu)
topo itagr 8 --subnet $sub --racks 4 --rate 200M --loss 0.02
check -d float -b 1M -e 1M || fail "agent-ring, four INA racks"
"$top/testbed/topo/topo.sh" down itagr

# a member dies mid-run (rank 5, a worker of the INA rack)
topo itagr 8 --subnet $sub --racks 2 --ina-racks 1
pids=()
for i in $(seq 0 7); do
	r=$((i / 4))
	sw=""
	((r == 1)) && sw=HCL_INA_SWITCH=$sub.253
	ip netns exec "$TOPO_NAME-h$i" env RANK=$i WORLD_SIZE=8 MASTER_ADDR=$sub.1 MASTER_PORT=29500 \
		HCL_DATA_ADDR=$sub.$((i + 1)) HCL_RACK=$r $sw \
		"$perf" --only in --algo agent-ring -b 4M -e 4M -n 200 -w 0 --timeout 8000 > $LOGDIR/agr-$i.log 2>&1 &
	pids+=($!)
done
for _ in $(seq 300); do
	(($(stats_get 'sum(j["completions"] for j in d["switches"]["tor1"]["ina"]["jobs"].values())') > 0)) && break
	sleep 0.05
done
kill -KILL "${pids[5]}" 2>/dev/null || fail "rank 5 ended before it was killed: $(tail -n 1 $LOGDIR/agr-5.log)"
start=$(date +%s)
for i in 0 1 2 3 4 6 7; do
	if wait "${pids[$i]}"; then fail "rank $i finished without rank 5"; fi
done
wait "${pids[5]}" 2>/dev/null || true
(($(date +%s) - start <= 30)) || fail "errors took longer than the deadline allows"
grep -l "agent-ring: .*waiting for\|did not\|is gone" $LOGDIR/agr-*.log >/dev/null || fail "no rank named what it waited for"
grep -h "agent-ring\|did not\|is gone" $LOGDIR/agr-*.log | head -3
[ "$(jobs_left)" = 0 ] || fail "the job stayed installed after a member died"
echo "agentring: 0, 1, 2 INA racks of 2 (8 ranks) exact with 5% loss (int32, fp32, odd counts); agent link ratio $ratio; one INA rack; four INA racks at 200M; a dead member stops the others, jobs removed"
