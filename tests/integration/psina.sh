#!/usr/bin/env bash
# ps-ina through the real switch: four ranks (the host library's INA client,
# launched like a training job) aggregate in swemu; results checked by
# ina-allreduce-perf (#wrong = 0), clean and with 5% loss on every port.
. "$(dirname "$0")/lib.sh"
perf=${PERF:-$top/build/ring/ina-allreduce-perf}
sub=10.85.0

run() {
	local out
	out=$("$top/testbed/launch.sh" itpsi -- env HCL_INA_SWITCH=$sub.254:48864 HCL_INA_JOB=1 \
		"$perf" -a ps-ina "$@") || { echo "$out" >&2; return 1; }
	echo "$out"
	[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +(float|int32) +sum .* 0$' <<<"$out")" -ge 2 ] || return 1
	grep -q "^# Avg bus bandwidth" <<<"$out"
}

for loss in "" 0.05; do
	topo itpsi 4 --subnet $sub ${loss:+--loss $loss}
	for _ in 1 2 3; do install_job 1 4 fp32 $sub >/dev/null && break; done # the answer may be lost
	run -b 64K -e 4M -f 8 -n 3 -w 1 || fail "ps-ina fp32 ${loss:+with $loss loss}"
	completions=$(stats_get 'd["switches"]["tor0"]["ina"]["jobs"]["1"]["completions"]')
	((completions > 0)) || fail "the switch aggregated nothing"
	"$top/testbed/topo.sh" down itpsi
done
# a member dies mid-run: the others fail within the deadline, naming the
# switch that stopped answering (it cannot complete their slices)
topo itpsi 4 --subnet $sub
install_job 1 4 fp32 $sub >/dev/null || fail "install job"
pids=()
for i in 0 1 2 3; do
	ip netns exec "$TOPO_NAME-h$i" env RANK=$i WORLD_SIZE=4 MASTER_ADDR=$sub.1 MASTER_PORT=29500 \
		HCL_DATA_ADDR=$sub.$((i + 1)) HCL_INA_SWITCH=$sub.254:48864 HCL_INA_JOB=1 \
		"$perf" -a ps-ina -b 4M -e 4M -n 200 -w 0 -t 4000 > /tmp/itpsi-$i.log 2>&1 &
	pids+=($!)
done
# mid-run = the job has completed slices (any moment after that will do)
for _ in $(seq 200); do
	(($(stats_get 'd["switches"]["tor0"]["ina"]["jobs"]["1"]["completions"]') > 0)) && break
	sleep 0.05
done
kill_rank_expect /tmp/itpsi 15 "switch $sub\.254:48864 did not answer in time"
echo "psina: 4 ranks through swemu's aggregation, fp32 exact, also with 5% loss; a dead member stops the others within the deadline"
