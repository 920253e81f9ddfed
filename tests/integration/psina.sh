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
echo "psina: 4 ranks through swemu's aggregation, fp32 exact, also with 5% loss"
