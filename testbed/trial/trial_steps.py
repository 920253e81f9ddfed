#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A training-step trial's runs and report section (workload = "..."):
ina-allreduce-perf --workload prints every timed step (the mean over
ranks) and a check of the largest bucket; here they become the step's
time (mean, p50, p99, 95% interval), its compute and the communication it
did not hide, in the real cluster's units (dilation k divided out)."""
import re
import statistics

T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(n):
    """Student's t at 97.5% for n - 1 degrees of freedom (n >= 2; past 31
    values the table's last, a little wider than the normal's 1.96)."""
    return T975[min(n - 2, len(T975) - 1)]


def parse(text, k):
    """The run's steps from ina-allreduce-perf's output, in real units (µs
    divided by k): {"steps_us", "compute_us", "wrong"}, or None when the
    run printed none (it failed)."""
    steps, compute = [], []
    for m in re.finditer(r"^# step +\d+ +([0-9.]+) +([0-9.]+)$", text, re.M):
        steps.append(float(m.group(1)) / k)
        compute.append(float(m.group(2)) / k)
    w = re.search(r"^# workload check: \d+ calls of \d+ bytes, #wrong (\d+)$", text, re.M)
    if not steps or not w:
        return None
    return {"steps_us": steps, "compute_us": statistics.mean(compute), "wrong": int(w.group(1))}


def mean_p50_p99(times):
    """Mean, p50 and p99 (nearest rank) of some times in µs."""
    s, n = sorted(times), len(times)
    return {"mean_us": statistics.mean(s), "p50_us": s[max(0, -(-n * 50 // 100) - 1)],
            "p99_us": s[max(0, -(-n * 99 // 100) - 1)]}


def distribution(steps):
    """Mean, p50, p99 and the 95% interval's half-width of the mean."""
    n = len(steps)
    return dict(mean_p50_p99(steps), ci_us=t975(n) * statistics.stdev(steps) / n ** 0.5 if n > 1 else None)


def section(t, results, algos, size, ms):
    """The report's table of step times per algorithm: every timed step of
    every repeat that counts (ms formats µs as the report does)."""
    lines = ["## Training steps", "",
             "Workload **%s**: %s buckets, %.1f MB of gradients a step, forward %s ms and backward %s ms (the "
             "profile's times; `%s`).  Each step: the forward, then the backward, during which every bucket is "
             "all-reduced from when it is ready, in order, as DDP does; the step ends with the backward and the last "
             "bucket.  Exposed communication = step − compute: what the backward did not hide.  Means over every "
             "timed step of every repeat, with their 95%% interval." % (
                 t["T_WORKLOAD_NAME"], t["T_WORKLOAD_BUCKETS"], int(t["T_WORKLOAD_BYTES"]) / 1e6,
                 t["T_WORKLOAD_FWD_MS"], t["T_WORKLOAD_BWD_MS"], t["T_WORKLOAD"]), "",
             "| algorithm | step (ms) | 95% CI | p50 | p99 | compute | exposed communication | #wrong |",
             "|---|---|---|---|---|---|---|---|"]
    for a in algos:
        r = results[a].get(size, {})
        st = r.get("steps")
        if not st:
            lines.append("| %s | – | | | | | %s | |" % (a, r.get("error", "no run")[:80]))
            continue
        lines.append("| %s | %s | ±%s | %s | %s | %s | %s (%.0f%%) | %d |" % (
            a, ms(st["mean_us"]), ms(st["ci_us"]) if st["ci_us"] is not None else "–", ms(st["p50_us"]),
            ms(st["p99_us"]), ms(r["compute_us"]), ms(r["exposed_us"]), 100 * r["exposed_us"] / st["mean_us"],
            r.get("wrong", 0)))
    return lines + [""]
