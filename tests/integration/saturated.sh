#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# dilation = "auto" must see a switch that cannot keep up, whatever the
# machine's core count: swemu (every switch on its one lcore) runs under a
# CPU quota of 2% of a core, so its lcore is saturated at every rung while
# the machine as a whole stays mostly idle, as one lcore carrying three
# switches was on a 16-core server.  The calibration must stop at the first
# rung because of swemu's lcore (not the machine's total, which stays under
# the share), so k is the largest of the ladder, and the report must flag
# the runs naming that lcore, and point at partitions (the machine had CPU
# to spare).  Before swemu counted its lcores' time, this
# trial ran at k = 1 and the report flagged nothing.  (5% of a core was
# enough until swemu stopped waking once per packet at these rates: then
# its lcore read 63% at the first rung, under the share, and the climb went
# on; at 2% it reads 93-96%.)
. "$(dirname "$0")/lib.sh"
exe=${SWEMU:-$top/build/swemu/swemu}

. "$top/testbed/topo/cpu-quota.sh"
# on any exit: the group and what is left in it (a swemu the trial did not
# stop), then lib.sh's cleanup.  The mount is not under LOGDIR: lib.sh
# removes that with rm -rf, which must never reach a cgroup file system.
release_cg() {
	local rc=$?
	set +e
	quota_release
	(exit $rc)
	cleanup
}
trap release_cg EXIT INT TERM
# unthrottled at start-up (at 2% it outlasts topo.sh's 10 s wait), 2% of
# a core from the moment it says it is running
quota_init /run/swemu-cg.$$ "$exe" 0.02 || fail "no cpu cgroup for swemu's quota"

cat > "$LOGDIR/sat.cfg" <<'EOF'
trial = {
  name = "saturated";
  racks = 2; hosts_per_rack = 2; ina_racks = "all";
  host_rate = "800M"; oversubscription = 2.0; uplink_buffer = "256K";
  algorithms = ["ring", "ps-ina"]; sizes = ["256K"];
  iterations = 3; warmup = 1; repeats = 1;
  dilation = "auto"; cpu_share = 0.8;
};
EOF
SWEMU=$QUOTA_WRAP "$top/testbed/trial/trial.sh" -c "$LOGDIR/sat.cfg" -o "$LOGDIR/r" > "$LOGDIR/log" 2>&1 ||
	{ tail -20 "$LOGDIR/log"; fail "the trial with a throttled switch failed"; }
(($(quota_throttled) > 0)) ||
	fail "swemu was never throttled: the quota did not hold it"
$PY - "$LOGDIR/r" <<'P'
import json, sys
d = sys.argv[1]
rows = [l.split() for l in open(d + "/calibration.txt") if not l.startswith("#")]
assert rows, "no calibration rows"
# rate k algorithm machine% lcore% rank% and the lcore's words
first = [r for r in rows if r[0] == rows[0][0]]
assert len(rows) == len(first), ("the climb went past the first rung", rows)
assert any(r[4] != "-" and float(r[4]) > 80 for r in first), ("swemu's lcore was not seen saturated", first)
assert all(float(r[3]) <= 80 for r in first), ("the machine's total decided, not the lcore", first)
res = json.load(open(d + "/results.json"))
assert res["trial"]["T_DILATION"] == rows[0][1] == "16", (res["trial"]["T_DILATION"], rows)
for a in ("ring", "ps-ina"):
    assert res["results"][a]["256K"]["wrong"] == 0, a
md = open(d + "/report.md").read()
assert "**Above the 80% share**" in md and "swemu's lcore 0 (tor0, tor1, spine" in md, md
# the machine had CPU to spare: the report points at more lcores per switch
assert "swemu's lcore, not the machine, was the bound" in md and "tor_partitions = 2" in md, md
print("saturated: calibration stopped at k = %s on swemu's lcore %s%% (machine %s%%); the report flags it" % (
    rows[0][1], max(r[4] for r in first), max(r[3] for r in first)))
P
echo "saturated: a switch short of CPU is seen, whatever the machine's total"
