#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""How loaded the testbed was during one run (a run directory of the trial
runner): the machine's CPU over all cores (the runner's /proc/stat ticks in
DIR/cpu), the busiest swemu lcore (the share of its loop's time in passes
that found work, from the switches' stats around the run, DIR/stats-*.json)
and the busiest rank (its CPU share of one core inside the timed calls, from
DIR/perf.out), the machine's in the timed calls where the program measured
it.  Any of them near 100% means the run measured this machine,
not the network: on many cores the machine's total can stay low while one
lcore carrying every switch is saturated.  An lcore's share counts the
time it worked and the time an idle pass waited for the CPU (preempted or
throttled, sw_loop.c): both are time it could not poll.

  trial_load.py DIR     prints "MACHINE LCORE RANK" in percent (- where
                        unknown), then what the busiest lcore carries"""
import json
import os
import re
import sys


def machine_pct(d):
    """The share of all cores busy during the run, in percent (None if
    unknown): in its timed calls alone where ina-allreduce-perf measured it
    (a run's start-up, rendezvous and warm-up had read 20-30 points more at
    the calibration's low rates), else around the whole run (DIR/cpu)."""
    try:
        m = re.search(r"^# the machine's cpu share \(all cores\) in the timed calls: ([0-9.]+)$",
                      open(os.path.join(d, "perf.out")).read(), re.M)
        if m:
            return 100 * float(m.group(1))
    except OSError:
        pass
    try:
        b0, t0, b1, t1 = map(float, open(os.path.join(d, "cpu")).read().split())
        return 100 * (b1 - b0) / (t1 - t0) if t1 > t0 else None
    except (OSError, ValueError):
        return None


def lcore_pct(d):
    """(percent, "lcore N (sw, sw: ...)") of the busiest swemu lcore that
    carries switches, from the stats around the run; (None, "") if unknown."""
    try:
        before = json.load(open(os.path.join(d, "stats-before.json")))
        after = json.load(open(os.path.join(d, "stats-after.json")))
    except (OSError, ValueError):
        return None, ""
    # one swemu's lcores, or every process's (topo.sh stats merges them in
    # the same order each time): the lcore and its switches name a worker
    def key(w):
        return w.get("lcore"), tuple(w.get("switches", []))
    was = {key(w): w for w in before.get("workers", [])}
    best = (None, "")
    for w in after.get("workers", []):
        b = was.get(key(w))
        if not w.get("switches") or b is None or "busy_ns" not in w or "busy_ns" not in b:
            continue
        run = w["run_ns"] - b["run_ns"]
        if run <= 0:
            continue
        busy = 100 * (w["busy_ns"] - b["busy_ns"]) / run
        stalled = 100 * (w.get("stalled_ns", 0) - b.get("stalled_ns", 0)) / run
        if best[0] is None or busy + stalled > best[0]:
            best = (busy + stalled, "lcore %s (%s: working %.0f%%, waiting for the CPU %.0f%%)" % (
                w["lcore"], ", ".join(w["switches"]), busy, stalled))
    return best


def rank_pct(d):
    """(percent, rank) of the rank with the largest CPU share of one core in
    the timed calls, from ina-allreduce-perf's output; (None, None) if unknown."""
    try:
        text = open(os.path.join(d, "perf.out")).read()
    except OSError:
        return None, None
    m = re.search(r"^# busiest rank's cpu share of a core in the timed calls: ([0-9.]+) \(rank (\d+)\)", text, re.M)
    return (100 * float(m.group(1)), int(m.group(2))) if m else (None, None)


def load_of(d):
    """Every share of the run in d, as a dict (values None where unknown)."""
    lc, lname = lcore_pct(d)
    rk, rank = rank_pct(d)
    return {"machine_pct": machine_pct(d), "lcore_pct": lc, "lcore": lname, "rank_pct": rk, "rank": rank}


def over(load, share_pct):
    """What of the run was above share_pct, in words (empty: nothing)."""
    words = []
    if load.get("machine_pct") is not None and load["machine_pct"] > share_pct:
        words.append("the machine's CPU %.0f%%" % load["machine_pct"])
    if load.get("lcore_pct") is not None and load["lcore_pct"] > share_pct:
        words.append("swemu's %s %.0f%% busy" % (load["lcore"], load["lcore_pct"]))
    if load.get("rank_pct") is not None and load["rank_pct"] > share_pct:
        words.append("rank %d %.0f%% of a core" % (load["rank"], load["rank_pct"]))
    return words


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    if len(sys.argv) != 2:
        sys.exit("usage: trial_load.py DIR")
    load = load_of(sys.argv[1])
    pct = [("-" if load[k] is None else "%.0f" % load[k]) for k in ("machine_pct", "lcore_pct", "rank_pct")]
    print(" ".join(pct), load["lcore"] or "-")


if __name__ == "__main__":
    main()
