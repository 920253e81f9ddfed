#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two tenants on the same ToRs: two racks of four hosts, both ToRs INA;
# tenant A (hosts 0, 1, 4, 5) runs ps-ina and tenant B (hosts 2, 3, 6, 7)
# agent-ring at the same time, each with its own rendezvous and with the
# host library's defaults (job ids picked at random per communicator, jobs
# installed under the communicator's owner token).  Both are exact; A
# ends first and its teardown removes its jobs while B's keep running (B
# is still exact after it); no install or removal was refused for an owner
# (ctrl_not_owner), and nothing is left in the switches.
. "$(dirname "$0")/lib.sh"
perf=${PERF:-$top/build/ring/ina-allreduce-perf}
sub=10.74.0
topo ittn 8 --subnet $sub --racks 2 >/dev/null
jobs_left() { stats_get "sum(len(s['ina']['jobs']) for s in d['switches'].values() if 'ina' in s)"; }

# tenant NAME ALGO CALLS HOSTS...: its ranks in the background (pids in
# NAME_pids), rank i on the i-th host, logs $LOGDIR/tn-NAME-i.log
run_tenant() {
	local name=$1 algo=$2 calls=$3 port=$4
	shift 4
	local hosts=("$@") i=0
	eval "${name}_pids=()"
	for h in "${hosts[@]}"; do
		local rack=$((h / 4))
		in_host "$h" env RANK=$i WORLD_SIZE=${#hosts[@]} MASTER_ADDR=$sub.$((hosts[0] + 1)) MASTER_PORT=$port \
			HCL_DATA_ADDR=$sub.$((h + 1)) HCL_RACK=$rack HCL_INA_SWITCH=$sub.$((254 - rack)) \
			"$perf" --only in --algo "$algo" -d int32 -b 1M -e 1M -n "$calls" -w 0 --timeout 60000 >"$LOGDIR/tn-$name-$i.log" 2>&1 &
		eval "${name}_pids+=($!)"
		i=$((i + 1))
	done
}
exact() { grep -qE '^ +1048576 +262144 +int32 +sum .* 0$' "$LOGDIR/tn-$1-0.log"; }

run_tenant a ps-ina 20 29501 0 1 4 5
run_tenant b agent-ring 150 29502 2 3 6 7
for p in "${a_pids[@]}"; do wait "$p" || fail "tenant A (ps-ina): $(cat $LOGDIR/tn-a-*.log)"; done
exact a || fail "tenant A not exact: $(cat $LOGDIR/tn-a-0.log)"
# A is done and gone (its agents removed its jobs); B must still be running
for p in "${b_pids[@]}"; do
	kill -0 "$p" 2>/dev/null && continue
	wait "$p" || fail "tenant B (agent-ring) failed while A ran: $(cat $LOGDIR/tn-b-*.log)"
	fail "tenant B ended before tenant A's teardown: the test proves nothing"
done
for p in "${b_pids[@]}"; do wait "$p" || fail "tenant B (agent-ring): $(cat $LOGDIR/tn-b-*.log)"; done
exact b || fail "tenant B not exact after A's teardown: $(cat $LOGDIR/tn-b-0.log)"
notown=$(stats_get 'sum(s.get("ctrl_not_owner", 0) for s in d["switches"].values())')
[ "$notown" = 0 ] || fail "$notown commands refused for an owner: the tenants' ids met"
[ "$(jobs_left)" = 0 ] || fail "jobs left in the switches: $(stats)"
echo "tenants: ps-ina and agent-ring side by side on the same ToRs, both exact, A's teardown left B's jobs alone"
