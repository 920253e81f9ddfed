#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# INA lost mid-job: runs of many checked int32 calls through the ToRs,
# ps-ina on one rack and agent-ring on two, each losing a ToR job to its
# owner's removal while the run goes on; the switch still forwards but
# aggregates nothing for it, and answers contributions to the job with
# NACK.  Every rank must notice (the switch's NACK, or a peer's word, or
# HCL_INA_LOST_MS of silence), finish that call on the software ring and
# run the later ones there: all exact (#wrong 0), each rank naming the
# loss on stderr, the calls counted, the agents removing what is left.
. "$(dirname "$0")/lib.sh"
perf=${PERF:-$top/build/ring/ina-allreduce-perf}
sub=10.87.0

# "ID OWNER" of a job of switch SW that has aggregated at least N slices
busy_job() {
	stats | $PY -c '
import json, sys
for i, j in json.load(sys.stdin)["switches"][sys.argv[1]]["ina"]["jobs"].items():
    if j["completions"] >= int(sys.argv[2]):
        print(i, j["owner"])
        break' "$1" "$2"
}

# lose_job ALGO SWITCH SLICES: runs ALGO; once a job of SWITCH has
# aggregated SLICES, removes it; checks the run survived it
lose_job() {
	local algo=$1 sw=$2 slices=$3 job="" id owner calls unknown n
	n=$(cat /run/swemu-testbed/itlost/hosts)
	HCL_INA_LOST_MS=1000 "$top/testbed/topo/launch.sh" itlost -- "$perf" --only in --algo "$algo" -b 256K -e 256K -n 1 -w 0 \
		-c 300 -d int32 --timeout 60000 >$LOGDIR/run.log 2>&1 &
	local run=$!
	for _ in $(seq 300); do # 30 s at most
		job=$(busy_job "$sw" "$slices")
		[ -n "$job" ] && break
		kill -0 $run 2>/dev/null || { cat $LOGDIR/run.log; fail "$algo: the run ended before a job aggregated"; }
		sleep 0.1
	done
	[ -n "$job" ] || fail "$algo: no job of $sw aggregated $slices slices in 30 s: $(stats)"
	read -r id owner <<<"$job"
	[ "$(in_host 0 "$top/testbed/topo/swemu-ctl" $sub.254 "op = \"remove\"; owner = \"$owner\"; id = $id;")" = ok ] ||
		fail "$algo: removing job $id (owner $owner) from $sw"
	wait $run || { cat $LOGDIR/run.log; fail "$algo: the run did not survive the loss of job $id"; }
	grep -qE '^ +262144 +65536 +int32 +sum .* 0$' $LOGDIR/run.log ||
		{ cat $LOGDIR/run.log; fail "$algo: wrong results after the fall-back"; }
	grep -q "$algo: .*; this call and the later ones run on the software ring" $LOGDIR/run.log ||
		fail "$algo: rank 0 did not report the loss"
	for ((i = 1; i < n; i++)); do
		grep -q "this call and the later ones run on the software ring" /run/swemu-testbed/itlost/rank-$i.log ||
			fail "$algo: rank $i did not report the loss: $(tail -3 /run/swemu-testbed/itlost/rank-$i.log)"
	done
	# of 602 calls (1 timed, 300 checked with a sum of their errors each,
	# a sum of CPU times) the first went through the switches
	calls=$(sed -n 's/^# INA lost mid-job at rank 0: \([0-9]*\) calls.*/\1/p' $LOGDIR/run.log)
	[ -n "$calls" ] && ((calls >= 1 && calls < 602)) || fail "$algo: calls on the software ring: '$calls'"
	# the contributions after the removal met no job: the loss was seen
	unknown=$(stats_get "d['switches']['$sw']['ina']['drops']['unknown_job']")
	((unknown > 0)) || fail "$algo: no contribution met the removed job"
	(($(stats_get "d['switches']['$sw']['ina']['nacks_sent']") > 0)) || fail "$algo: $sw sent no NACK"
	[ "$(stats_get "sum(len(s['ina']['jobs']) for s in d['switches'].values() if 'ina' in s)")" = 0 ] ||
		fail "$algo: jobs left in the switches: $(stats)"
	grep -m1 "software ring" $LOGDIR/run.log || true
	echo "inalost: $algo: job $id of $sw removed mid-run; the last $calls of 602 calls ran on the software ring, all exact"
}

topo itlost 4 --subnet $sub
lose_job ps-ina tor0 3000
"$top/testbed/topo/topo.sh" down itlost

topo itlost 8 --subnet $sub --racks 2
lose_job agent-ring tor0 1000
