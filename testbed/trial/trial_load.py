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
throttled, sw_loop.c): both are time it could not poll.  On a virtual
machine, the share of the CPU its hypervisor gave to something else
(/proc/stat's steal; busy in the machine's share too) is read on its own:
time in which the switches' and the ranks' clocks ran on while none of
them could act, so that the run measured the neighbours as much as the
network.

  trial_load.py DIR     prints "MACHINE LCORE RANK STEAL" in percent (-
                        where unknown), then what the busiest lcore carries"""
import json
import os
import re
import sys

# Over this share of the machine's CPU stolen by the hypervisor, a run's
# times are flagged (trial_report.py): see steal_pct.
STEAL_LIMIT_PCT = 5.0


def runner_ticks(d):
    """(busy, all, stolen) CPU ticks the runner counted around the run
    (DIR/cpu: each of the three before, then after; an older run's has no
    stolen ones: None there), or None if unknown."""
    try:
        v = [float(x) for x in open(os.path.join(d, "cpu")).read().split()]
    except (OSError, ValueError):
        return None
    if len(v) == 4:
        return v[2] - v[0], v[3] - v[1], None
    if len(v) == 6:
        return v[3] - v[0], v[4] - v[1], v[5] - v[2]
    return None


def perf_share(d, what):
    """A share ina-allreduce-perf measured over its timed calls, in
    percent: its line "# WHAT in the timed calls: X"."""
    try:
        m = re.search(r"^# %s in the timed calls: ([0-9.]+)$" % re.escape(what),
                      open(os.path.join(d, "perf.out")).read(), re.M)
    except OSError:
        return None
    return 100 * float(m.group(1)) if m else None


def machine_pct(d):
    """The share of all cores busy during the run, in percent (None if
    unknown): in its timed calls alone where ina-allreduce-perf measured it
    (a run's start-up, rendezvous and warm-up had read 20-30 points more at
    the calibration's low rates), else around the whole run (DIR/cpu)."""
    pct = perf_share(d, "the machine's cpu share (all cores)")
    if pct is not None:
        return pct
    t = runner_ticks(d)
    return 100 * t[0] / t[1] if t and t[1] > 0 else None


def steal_pct(d):
    """The share of all cores the hypervisor took (steal), in percent, over
    the same span as machine_pct; None if unknown (not a virtual machine
    reads 0)."""
    pct = perf_share(d, "the hypervisor's share of the cpu (steal, all cores)")
    if pct is not None:
        return pct
    t = runner_ticks(d)
    return 100 * t[2] / t[1] if t and t[2] is not None and t[1] > 0 else None


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
    return {"machine_pct": machine_pct(d), "lcore_pct": lc, "lcore": lname, "rank_pct": rk, "rank": rank,
            "steal_pct": steal_pct(d)}


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
    pct = [("-" if load[k] is None else "%.0f" % load[k]) for k in ("machine_pct", "lcore_pct", "rank_pct",
                                                                     "steal_pct")]
    print(" ".join(pct), load["lcore"] or "-")


if __name__ == "__main__":
    main()
