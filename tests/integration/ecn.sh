#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ECN on the testbed, end to end: four ranks of ps (the PS on rank 0)
# behind one ToR whose ports run at 200M and mark past 5% of their 256K
# buffer (topo.sh --ecn, swemu's 'ecn').  The three senders' slices queue
# at rank 0's port; the port marks them CE (counted ecn_marks), rank 0's
# PS carries the marks into its results (the INA header's CE flag), and
# every rank's client counts marked answers, which its window follows
# (HCL_INA_CC=1).  Results exact.  The same run without --ecn: no marks.
# Then a trial file's ina_cc = true on the emulator: both halves set up by
# the runner, the marked answers in its results.
. "$(dirname "$0")/lib.sh"
perf=${PERF:-$top/build/ring/ina-allreduce-perf}

marks() { stats_get 'sum(p["ecn_marks"] for p in d["switches"]["tor0"]["ports"].values())'; }

run_ps() { # run_ps [ENV...]: exact at every size; prints the ranks' marked answers
	local out
	out=$(env "$@" "$top/testbed/topo/launch.sh" itecn -- "$perf" --only in --algo ps -b 256K -e 2M -f 2 -n 2 -w 0 --timeout 60000) ||
		fail "ps: $out"
	[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum .* 0$' <<<"$out")" = 4 ] || fail "ps not exact: $out"
	sed -nE 's/^# host of rank [0-9]+: .* ([0-9]+) marked; .*/\1/p' <<<"$out" | awk '{ s += $1 } END { print s + 0 }'
}

for ecn in 0.05 ""; do
	topo itecn 4 --subnet 10.87.0 --rate 200M --buffer 256K ${ecn:+--ecn $ecn}
	[ -z "$ecn" ] || grep -q "ecn = $ecn;" /run/swemu-testbed/itecn/swemu.cfg || fail "topo.sh wrote no 'ecn = $ecn'"
	marked=$(run_ps HCL_INA_CC=1)
	m=$(marks)
	if [ -n "$ecn" ]; then
		((m > 0)) || fail "rank 0's port marked nothing"
		((marked > 0)) || fail "$m frames marked, but no rank counted a marked answer"
		h0=$(stats_get 'd["switches"]["tor0"]["ports"]["h0"]["ecn_marks"]')
		((2 * h0 > m)) || fail "marks not where the slices queue: $h0 of $m at rank 0's port"
		echo "ecn: ps with its windows following the marks: exact; $m frames marked ($h0 at rank 0's port), $marked marked answers"
	else
		((m == 0 && marked == 0)) || fail "without ecn: $m frames marked, $marked marked answers"
		echo "ecn: without it: exact, nothing marked"
	fi
	"$top/testbed/topo/topo.sh" down itecn
done

# the trial runner: the default trial's fabric, ps alone on one PS (seven
# ranks' slices into its port, which marks past 32K), ina_cc = true
cfg=$LOGDIR/trial-cc.cfg
sed -e 's/^  ina_racks = "sweep";/  ina_racks = "all"; ina_cc = true;/' -e 's/^  sweep_order = \[1, 0\];//' \
	-e 's/^  host_buffer = "";/  host_buffer = "64K";/' -e 's/^  ps_shards = 0;/  ps_shards = 1;/' \
	-e 's/^  algorithms = .*/  algorithms = ["ps"];/' -e 's/^  sizes = .*/  sizes = ["4M"];/' \
	-e 's/^  repeats = 3;/  repeats = 1;/' -e 's/^  iterations = 5;/  iterations = 2;/' "$top/configs/trial.cfg" > "$cfg"
"$top/testbed/trial/trial.sh" -c "$cfg" -o "$LOGDIR/trial-cc" > "$LOGDIR/trial-cc.log" 2>&1 ||
	{ tail -20 "$LOGDIR/trial-cc.log"; fail "the trial with ina_cc = true failed"; }
grep -q "^- ps 4M: [1-9]" <(sed -n '/^## Frames the switch queues marked/,/^## /p' "$LOGDIR/trial-cc/report.md") ||
	fail "the report does not list the marks: $(cat "$LOGDIR/trial-cc/report.md")"
$PY - "$LOGDIR/trial-cc/results.json" <<'P' || fail "trial with ina_cc = true: $(cat "$LOGDIR/trial-cc/results.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["trial"]["T_INA_CC"] == "1", r["trial"]
ps = r["results"]["ps"]["4M"]
assert ps["wrong"] == 0 and ps["timing"]["host"]["ina_marked"] > 0 and ps["ecn_marks"] > 0, ps
h0 = ps["links"]["tor0.h0"]["ecn_marks"]  # the PS's port, where every slice queues
assert ps["ecn_marks"] == sum(v["ecn_marks"] for v in ps["links"].values()) and 2 * h0 > ps["ecn_marks"], ps["links"]
print("ecn: a trial with ina_cc = true: ps exact, %d frames marked (%d at the PS's port), %d answers marked" % (
    ps["ecn_marks"], h0, ps["timing"]["host"]["ina_marked"]))
P
