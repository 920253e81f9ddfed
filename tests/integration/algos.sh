#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every algorithm of the host library through swemu, launched like a job:
# 8 ranks in two racks of four (rack 1 behind an INA ToR, rack 0 behind a
# plain one), 5% loss on every port and link; int32 and fp32 at counts
# divisible by nothing useful (1, 7, 100003), bf16 at 100003, checked by
# ina-allreduce-perf out of place and in place (#wrong = 0 in both groups).
. "$(dirname "$0")/lib.sh"
perf=${PERF:-$top/build/ring/ina-allreduce-perf}
topo italg 8 --subnet 10.86.0 --racks 2 --ina-racks 1 --loss 0.05
for algo in ring hier ps ps-ina; do
	for dt in int32 float; do
		for bytes in 4 28 400012; do
			out=$("$top/testbed/topo/launch.sh" italg -- "$perf" --algo $algo -d $dt -b $bytes -e $bytes -n 1 -w 0 --timeout 60000) ||
				fail "$algo $dt $bytes B: $out"
			grep -qE "^ +$bytes +$((bytes / 4)) +$dt +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$" <<<"$out" || fail "$algo $dt $bytes B: $out"
		done
	done
	out=$("$top/testbed/topo/launch.sh" italg -- "$perf" --algo $algo -d bf16 -b 200006 -e 200006 -n 1 -w 0 --timeout 60000) ||
		fail "$algo bf16: $out"
	grep -qE "^ +200006 +100003 +bfloat16 +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$" <<<"$out" || fail "$algo bf16: $out"
done
lost=$(stats_get 'sum(p["drops"]["emulated_loss"] for s in d["switches"].values() for p in s["ports"].values())')
((lost > 0)) || fail "no emulated loss counted"
echo "algos: ring, hier, ps, ps-ina with 8 ranks in 2 racks (one INA), int32 and fp32, 1/7/100003 elements, bf16, 5% loss: exact ($lost frames lost on the way)"
# stopping the launcher stops its ranks (they ignore SIGINT in the background)
ranks="^$perf --only in --algo ring -b 4M -e 4M -n 500 " # the ranks' command lines, not the launcher's
"$top/testbed/topo/launch.sh" italg -- "$perf" --only in --algo ring -b 4M -e 4M -n 500 -w 0 --timeout 60000 > /dev/null 2>&1 &
lpid=$!
for ((i = 0; i < 300; i++)); do # until all 8 ranks run (30 s at most)
	[ "$(pgrep -fc "$ranks")" = 8 ] && break
	sleep 0.1
done
[ "$(pgrep -fc "$ranks")" = 8 ] || fail "the ranks to stop did not start ($(pgrep -fc "$ranks") of 8)"
kill -TERM $lpid
rc=0
wait $lpid || rc=$?
[ $rc = 130 ] || fail "stopped launcher: exit $rc, want 130"
for ((i = 0; i < 50; i++)); do # they go within 5 s
	pgrep -f "$ranks" >/dev/null || break
	sleep 0.1
done
! pgrep -f "$ranks" >/dev/null || fail "ranks left running after the launcher stopped"
echo "algos: a stopped launcher takes its 8 ranks with it"
