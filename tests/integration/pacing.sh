#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The timing and pacing layer through swemu: 8 ranks in two racks (rack 1
# INA), a training loop of ina-allreduce-perf with rank 5 computing four
# times as long as the others.  For ring and ps-ina, the traces of all
# ranks must agree: the same calls, (almost) every point complete, rank 5
# the least early and named as the last rank, the others early by about
# the injected difference and paced after one window, rank 5 never.  hier,
# ps and agent-ring with the layer on: every point measured on every rank.
# A balanced run with pacing on must never pace.
. "$(dirname "$0")/lib.sh"
perf=${PERF:-$top/build/ring/ina-allreduce-perf}
topo itpc 8 --subnet 10.87.0 --racks 2 --ina-racks 1
trace=/run/swemu-testbed/itpc/trace # goes with the topology
mkdir -p "$trace"
check() { # algo, mode (straggler|balanced)
	$PY - "$trace" "$1" "$2" <<'P'
import json, sys, glob, statistics as st
d, algo, mode = sys.argv[1:4]
ranks = {}
for f in sorted(glob.glob(d + "/rank*.jsonl")):
    lines = [json.loads(l) for l in open(f)]
    ranks[lines[0]["rank"]] = lines
assert sorted(ranks) == list(range(8)), "traces of ranks %s" % sorted(ranks)
ncalls = {r: sum("call" in x for x in L) for r, L in ranks.items()}
npaced = []
assert len(set(ncalls.values())) == 1, "calls per rank differ: %s" % ncalls
for r, L in ranks.items():
    assert L[0]["algo"] == algo and abs(L[0]["clock_offset_us"]) <= L[0]["clock_rtt_us"] / 2 + 1, L[0]
    assert "summary" in L[-1], "rank %d: no summary line" % r
    calls = [x for x in L if "call" in x]
    done = [x for x in calls if x["complete"]]
    assert len(done) >= len(calls) - 1, "rank %d: %d of %d points incomplete" % (r, len(calls) - len(done), len(calls))
    if mode == "plain":
        continue
    timed = [x for x in done if x["bytes"] == 65536][3:]
    early = st.median(x["early_us"] for x in timed) / 1e3
    paced = sum(x["paced"] for x in calls)
    if mode == "balanced":
        assert paced == 0, "rank %d paced %d calls in a balanced run" % (r, paced)
    elif r == 5:
        assert early < 10, "rank 5 (the straggler) early by %.1f ms" % early
        assert paced == 0, "the straggler paced %d calls" % paced
        # the ring's own end skew sometimes makes another rank last (see
        # PACING.md): rank 5 must be the one named most, in half the calls
        lasts = [x["last"] for x in timed]
        top = max(set(lasts), key=lasts.count)
        assert top == 5 and lasts.count(5) >= len(lasts) / 2, "last ranks named: %s" % lasts
    else:
        # injected: 4 x 30 ms against 30 ms, the straggler 90 ms later
        assert 45 < early < 130, "rank %d early by %.1f ms (expected about 90)" % (r, early)
        npaced.append(paced)
        assert all(0 < x["delay_us"] <= 20000 for x in calls if x["paced"]), "delay out of bounds"
# On two shared cores a rank is sometimes last for other reasons (it left
# the previous call late, it was descheduled); one such point resets that
# rank's window (docs/PACING.md), so not every rank gets paced in a short
# run.  Some must be, for several calls; the straggler never.
if mode == "straggler":
    assert max(npaced) >= 3, "paced calls per rank: %s" % npaced
print("%s %s: %d calls on every rank, %s" % (algo, mode, ncalls[0], {"balanced": "no pacing",
      "plain": "every point measured", "straggler": "straggler found, others paced"}[mode]))
P
}
for algo in ring ps-ina; do
	rm -f "$trace"/*
	"$top/testbed/topo/launch.sh" itpc -- "$perf" --only in --algo $algo -b 64K -e 64K -n 30 -w 3 --timeout 30000 --compute 30 \
		--straggler 5:4 -P --trace "$trace" >/dev/null || fail "$algo with a straggler"
	check $algo straggler || fail "$algo straggler traces"
done
# the layer works around every algorithm, unchanged
for algo in hier ps agent-ring; do
	rm -f "$trace"/*
	"$top/testbed/topo/launch.sh" itpc -- "$perf" --only in --algo $algo -b 64K -e 64K -n 5 -w 1 --timeout 30000 --compute 5 -P \
		--trace "$trace" >/dev/null || fail "$algo with the layer on"
	check $algo plain || fail "$algo traces"
done
# 60 ms of compute: with 30 ms, the ring's own end skew (some ranks leave
# every call 10-17 ms before the others, PACING.md) is 15-26% of the
# iteration, right at the rule's 20%, and a rank is sometimes paced
rm -f "$trace"/*
"$top/testbed/topo/launch.sh" itpc -- "$perf" --only in --algo ring -b 64K -e 64K -n 20 -w 3 --timeout 30000 --compute 60 -P \
	--trace "$trace" >/dev/null || fail "balanced ring"
check ring balanced || fail "balanced traces"
echo "pacing: traces consistent on 8 ranks (all five algorithms), straggler found (ring, ps-ina) and the others paced, balanced run never paced"
