#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# dilation = "auto" must see a switch that cannot keep up, whatever the
# machine's core count: swemu (every switch on its one lcore) runs under a
# CPU quota of 2% of a core, so its lcore is saturated at every rung while
# the machine as a whole stays mostly idle, as one lcore carrying three
# switches was on a 16-core server.  The calibration must stop at the first
# rung because of swemu's lcore (not the machine's total, which stays under
# the share), so k is the largest of the ladder, and the report must flag
# the runs naming that lcore.  Before swemu counted its lcores' time, this
# trial ran at k = 1 and the report flagged nothing.  (5% of a core was
# enough until swemu stopped waking once per packet at these rates: then
# its lcore read 63% at the first rung, under the share, and the climb went
# on; at 2% it reads 93-96%.)
. "$(dirname "$0")/lib.sh"
exe=${SWEMU:-$top/build/swemu/swemu}

# a cpu cgroup outside /sys: "ip netns exec" remounts /sys in the namespace
# where swemu starts, so the wrapper reaches the group through this mount
# (not under LOGDIR: lib.sh removes that with rm -rf, which must never reach
# a cgroup file system; a v1 mount shows the whole cpu hierarchy)
cg=/run/swemu-cg.$$
grp=$cg/swemu-quota.$$ # the whole v1 hierarchy shows: a name of its own
procs=$grp/cgroup.procs
# on any exit: what is left in the group (a swemu the trial did not stop),
# the group, the mount, then lib.sh's cleanup
release_cg() {
	local rc=$?
	set +e
	if mountpoint -q "$cg"; then
		for _ in $(seq 50); do
			[ -s "$procs" ] || break
			xargs -r kill < "$procs" 2>/dev/null
			sleep 0.1
		done
		rmdir "$grp" 2>/dev/null
		umount "$cg" 2>/dev/null || umount -l "$cg"
	fi
	rmdir "$cg" 2>/dev/null
	(exit $rc)
	cleanup
}
trap release_cg EXIT INT TERM
mkdir -p "$cg"
if mount -t cgroup -o cpu none "$cg" 2>/dev/null; then
	mkdir "$grp"
	echo 100000 > "$grp/cpu.cfs_period_us"
	quota_file=$grp/cpu.cfs_quota_us free=-1 held=2000
elif mount -t cgroup2 none "$cg" 2>/dev/null; then
	echo +cpu > "$cg/cgroup.subtree_control" 2>/dev/null || true
	mkdir "$grp"
	quota_file=$grp/cpu.max free="max 100000" held="2000 100000"
	[ -f "$quota_file" ] || fail "cgroup v2 without the cpu controller"
else
	fail "no cpu cgroup can be mounted (v1 or v2)"
fi
# swemu joins the group unthrottled (at 2% its start-up, which touches
# every mbuf, outlasts topo.sh's 10 s wait); the quota holds from the moment
# it says it is running (its log is its standard output)
cat > "$LOGDIR/swemu-quota" <<EOF
#!/bin/bash
echo "$free" > $quota_file && echo \$\$ > $procs || exit 1
me=\$\$
( for _ in \$(seq 300); do
	grep -q "running from" /proc/\$me/fd/1 2>/dev/null && { echo "$held" > $quota_file; exit 0; }
	kill -0 \$me 2>/dev/null || exit 0
	sleep 0.05
  done ) &
exec $exe "\$@"
EOF
chmod +x "$LOGDIR/swemu-quota"

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
SWEMU=$LOGDIR/swemu-quota "$top/testbed/trial/trial.sh" -c "$LOGDIR/sat.cfg" -o "$LOGDIR/r" > "$LOGDIR/log" 2>&1 ||
	{ tail -20 "$LOGDIR/log"; fail "the trial with a throttled switch failed"; }
grep -q "^nr_throttled [1-9]" "$grp/cpu.stat" ||
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
print("saturated: calibration stopped at k = %s on swemu's lcore %s%% (machine %s%%); the report flags it" % (
    rows[0][1], max(r[4] for r in first), max(r[3] for r in first)))
P
echo "saturated: a switch short of CPU is seen, whatever the machine's total"
