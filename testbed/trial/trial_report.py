#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turns a trial directory (testbed/trial/trial.sh) into results.json, report.md
and PNG plots, and prints the summary table.

    trial_report.py REPORT_DIR

Reads trial.env, machine.txt and runs/ALGO-SIZE/{rc,perf.out,rank-*.log,
stats-before.json,stats-after.json,cpu,trace/rank*.jsonl} (and, for a sweep
of deployments, sweep/kK/ALGO-SIZE the same way); a simulated trial
(engine = "sim") has runs/ALGO-SIZE/{rc,sim.json,sim.err} instead.  A time-dilated trial
(T_DILATION = k) ran its times k times longer: every time is divided by k
here, so the report speaks the real cluster's units.  Only the Python
standard library and gnuplot (for the plots; skipped with a note when it
is missing)."""
import collections
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trial_load  # noqa: E402 (beside this file)
import trial_steps  # noqa: E402


def env(path):
    e = {}
    for line in open(path):
        k, _, v = line.strip().partition("=")
        e[k] = v.strip("'")
    return e


def perf_line(text, nbytes):
    """ina-allreduce-perf's line for nbytes, nccl-tests' columns: size count
    type redop root, then out-of-place and in-place time algbw busbw #wrong
    (N/A where not run): the in-place time, the wrong elements of both."""
    for line in text.splitlines():
        f = line.split()
        if len(f) == 13 and not line.startswith("#") and f[0] == str(nbytes):
            # bandwidths again from the time: the table rounds them to 1 MB/s
            t = f[9] if f[9] != "N/A" else f[5]
            return {"time_us": float(t), "wrong": sum(int(w) for w in (f[8], f[12]) if w != "N/A")}
    return None


def real_units(x, k):
    """A trace record with its times (the *_us fields) divided by the
    dilation factor k."""
    return {f: v / k if f.endswith("_us") and isinstance(v, (int, float)) else v for f, v in x.items()}


def traces(d, nbytes, warmup, iters, k=1.0):
    """Per timed iteration: the job's time (mean over ranks) and, summed
    over ranks, the compute / delay / wait / comm parts."""
    ranks = {}
    for f in sorted(glob.glob(os.path.join(d, "rank*.jsonl"))):
        lines = [real_units(json.loads(x), k) for x in open(f) if x.strip()]
        if not lines:
            continue
        marked = any("iter" in x for x in lines) and sum("iter" in x for x in lines) <= iters + warmup + 1
        if marked:  # iterations marked by the program: the timed ones (a step's replay marks its warm-ups too)
            it = [x for x in lines if "iter" in x][-iters:]  # the warm-up calls come first
        else:  # every call an iteration: the timed calls of this size
            it = [x for x in lines if "call" in x and x["bytes"] == nbytes][warmup:warmup + iters]
            it = [dict(x, time_us=x["compute_us"] + x["delay_us"] + x["wait_us"] + x["comm_us"]) for x in it]
        calls = [x for x in lines if "call" in x]
        host = next((x["host"] for x in lines if "host" in x), {})
        ranks[lines[0]["rank"]] = {"iters": it, "calls": calls, "host": host}
    if not ranks:
        return None
    n = min(len(r["iters"]) for r in ranks.values())
    times = [statistics.mean(r["iters"][i]["time_us"] for r in ranks.values()) for i in range(n)]
    # the all-reduce's own time: the iteration without its compute
    calls_us = [x["time_us"] - x["compute_us"] for r in ranks.values() for x in r["iters"][:n]]
    parts = {k: sum(x[k] for r in ranks.values() for x in r["iters"][:n]) for k in
             ("compute_us", "delay_us", "wait_us", "comm_us")}
    tot = sum(parts.values()) or 1
    spreads = [x["spread_us"] for r in ranks.values() for x in r["calls"] if x.get("complete") and "spread_us" in x
               and x["bytes"] == nbytes]
    out = {"ranks": len(ranks), "iterations": n, "iter_times_us": times,
           "shares": {k[:-3]: v / tot for k, v in parts.items()},
           "paced_calls": sum(x["paced"] for r in ranks.values() for x in r["calls"]),
           "incomplete_calls": sum(not x["complete"] for r in ranks.values() for x in r["calls"]),
           "spread_mean_us": statistics.mean(spreads) if spreads else 0,
           "call_mean_us": statistics.mean(calls_us) if calls_us else 0,
           # the hosts' side: what software aggregators refused, what the clients re-sent
           "host": {k: sum(r["host"].get(k, 0) for r in ranks.values())
                    for k in ("agg_dropped", "agg_accepted", "ina_sent", "ina_resent", "ina_stale", "ina_marked",
                              "xfer_resent", "xfer_timeouts")}}
    # ... and the aggregators' refusals by reason (swemu's drop names)
    out["host"]["agg_drops"] = dict(sum((collections.Counter(r["host"].get("agg_drops", {})) for r in ranks.values()),
                                        collections.Counter()))
    out.update(distribution(times))
    return out


# INA slices re-sent past this share of those sent: queues overflowed
CC_HINT_RESENT = 0.1


def cc_hint(t, results, algos, sizes):
    """Where an INA algorithm re-sent more than CC_HINT_RESENT of its
    slices with ina_cc off, a line saying so and what may help: following
    the queues' marks paid where a PS's shallow buffer overflowed every
    round (docs/CONGESTION.md), and gained nothing elsewhere measured."""
    if t.get("T_INA_CC", "0") == "1" or float(t.get("T_LOSS", "0")) > 0 or t.get("T_BURST_LOSS"):
        return []  # on, or the re-sends are the links' losses
    lines = []
    for a in algos:
        for s in sizes:
            h = results[a][s].get("timing", {}).get("host") or {}
            if h.get("ina_sent") and h.get("ina_resent", 0) > CC_HINT_RESENT * h["ina_sent"]:
                lines.append("- %s %s: %d INA re-sends for %d slices sent (%.0f%%): its queues overflowed.  "
                             "`ina_cc = true` makes the windows follow the queues' ECN marks, which cut such a run "
                             "by a quarter to a third with one PS behind 64K buffers (docs/CONGESTION.md)." % (
                                 a, s, h["ina_resent"], h["ina_sent"], 100 * h["ina_resent"] / h["ina_sent"]))
    return ["", "## INA re-sends", ""] + lines if lines else []


def distribution(times):
    """Mean, p50, p99 and CV of iteration times (nothing for none)."""
    if not times:
        return {}
    d = trial_steps.mean_p50_p99(times)
    return dict(d, cv=statistics.pstdev(times) / d["mean_us"] if d["mean_us"] else 0)


SIM_DROPS = (("tail_drops", "fabric: a queue was full"), ("loss_drops", "fabric: random loss"),
             ("other_drops", "fabric: no route or port"))


def run_rc(d):
    """A run's exit status from its rc file (-1 when it has none)."""
    f = os.path.join(d, "rc")
    return int(open(f).read()) if os.path.exists(f) else -1


def add_bandwidths(r, nb, world):
    """algbw and busbw (nccl-tests' definitions) from r's time per call."""
    r["algbw_gbs"] = nb / r["time_us"] / 1e3
    r["busbw_gbs"] = r["algbw_gbs"] * 2 * (world - 1) / world


def load_sim_run(d, nb, world, compute_ms):
    """One simulated run (engine = "sim": swemu-sim's JSON) with the fields
    of a testbed run, less what the simulator does not count: bytes per
    link, the machine's CPU, the hosts' re-sends.  It checks every rank's
    sum itself: a wrong element is an error, not a count."""
    r = {"bytes": nb, "rc": run_rc(d), "cpu_pct": None}
    try:
        j = json.load(open(os.path.join(d, "sim.json")))
    except (OSError, ValueError):
        j = {}
    if r["rc"] != 0 or j.get("error") or "time_ms" not in j:
        err = open(os.path.join(d, "sim.err")).read().strip() if os.path.exists(os.path.join(d, "sim.err")) else ""
        r["error"] = (j.get("error") or (err.splitlines() or ["no output"])[-1])[:200]
        return r
    r.update(time_us=j["time_ms"] * 1e3, wrong=0)
    if j.get("workload"):  # training steps: a step stands for a call
        steps = [x * 1e3 for x in j["iteration_times_ms"]]
        r.update(time_us=statistics.mean(steps), steps_us=steps, steps=trial_steps.distribution(steps),
                 compute_us=j["workload"]["compute_ms"] * 1e3)
        r["exposed_us"] = r["time_us"] - r["compute_us"]
    elif compute_ms > 0:
        r["iteration_us"] = j["iteration_ms"] * 1e3
    r["emulated_time_us"] = r["time_us"]
    add_bandwidths(r, nb, world)
    times = [x * 1e3 for x in j["iteration_times_ms"]]
    tot = sum(j["parts_ms"].values()) or 1
    r["timing"] = dict(ranks=j["hosts"], iterations=len(times), iter_times_us=times, paced_calls=j["paced_calls"],
                       shares={k: v / tot for k, v in j["parts_ms"].items()}, incomplete_calls=0,
                       spread_mean_us=j["spread_mean_ms"] * 1e3, call_mean_us=r["time_us"], **distribution(times))
    drops = {why: j[k] for k, why in SIM_DROPS if j.get(k)}
    drops.update({"aggregators: %s" % k: v for k, v in j.get("engine_drops", {}).items()})
    r.update(drops=drops, links={}, ina={}, ecn_marks=j.get("ecn_marks", 0))
    return r


def counters(before, after):
    """Per link (switch.port): bytes each way and ECN marks; drops by reason; INA engine.
    A partitioned switch's partitions ("tor0/1") count as the switch: one link."""
    links, drops, ina = {}, {}, {}

    def add(d, key, n):
        if n:
            d[key] = d.get(key, 0) + n
    for part, s in after["switches"].items():
        b = before["switches"].get(part, {"ports": {}})
        sw = part.split("/")[0]
        for p, v in s["ports"].items():
            o = b["ports"].get(p, {})
            link = links.setdefault("%s.%s" % (sw, p), dict.fromkeys(
                ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "ecn_marks"), 0))
            for k in link:
                link[k] += v.get(k, 0) - o.get(k, 0)
            for r, c in v.get("drops", {}).items():
                add(drops, "%s.%s %s" % (sw, p, r), c - o.get("drops", {}).get(r, 0))
        if "ina" in s:
            bi = b.get("ina", {})
            for k, v in s["ina"].items():
                if isinstance(v, int):
                    add(ina, "%s %s" % (sw, k), v - bi.get(k, 0))
                elif isinstance(v, dict) and k == "drops":
                    for r, c in v.items():
                        add(drops, "%s ina %s" % (sw, r), c - bi.get("drops", {}).get(r, 0))
    return links, drops, ina


# with per-link counters (a testbed run; the simulator has none)
LINKS_PLOT = """set output '{pd}/links.png'
set title 'link utilisation per algorithm, {big} (share of the emulated rate, whole run)'
set ylabel 'busiest direction (%)'
set xlabel ''
set xtics rotate by -45
plot for [i=2:{c}] '{pd}/links.dat' using i:xtic(1) title columnheader(i)
"""


def plots(out, results, algos, sizes, link_names):
    if not shutil.which("gnuplot"):
        return "gnuplot is not installed: no plots (apt-get install gnuplot-nox)"
    pd = os.path.join(out, "plots")
    os.makedirs(pd, exist_ok=True)
    with open(os.path.join(pd, "busbw.dat"), "w") as f:
        f.write("size " + " ".join(algos) + "\n")
        for s in sizes:
            row = [results[a][s]["busbw_gbs"] * 1e3 if results[a].get(s, {}).get("busbw_gbs") else "NaN" for a in algos]
            f.write("%s %s\n" % (s, " ".join(str(x) for x in row)))
    big = sizes[-1]
    with open(os.path.join(pd, "itertime.dat"), "w") as f:
        cols = [sorted(results[a].get(big, {}).get("timing", {}).get("iter_times_us", [])) for a in algos]
        n = max((len(c) for c in cols), default=0)
        for i in range(n):
            f.write(" ".join("%g %g" % (c[i] / 1e3, (i + 1) / len(c)) if i < len(c) else "NaN NaN" for c in cols) + "\n")
    with open(os.path.join(pd, "links.dat"), "w") as f:
        f.write("link " + " ".join(algos) + "\n")
        for l in link_names:
            f.write("%s %s\n" % (l, " ".join("%g" % (results[a].get(big, {}).get("links", {}).get(l, {}).get(
                "utilisation", 0) * 100) for a in algos)))
    n = len(algos)
    gp = """set terminal pngcairo size 900,500 noenhanced
set key outside right
set grid ytics
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
# bars from zero: a cut axis makes a 2x difference look like 5x
set yrange [0:*]
set output '{pd}/throughput.png'
set title 'all-reduce bus bandwidth per algorithm'
set ylabel 'busbw (MB/s)'
set xlabel 'message size'
plot for [i=2:{c}] '{pd}/busbw.dat' using i:xtic(1) title columnheader(i)
{links}set output '{pd}/itertime.png'
set style data lines
set xtics norotate
set title 'iteration time distribution, {big}'
set xlabel 'iteration time (ms)'
set ylabel 'fraction of iterations'
set yrange [0:1]
plot for [i=1:{n}] '{pd}/itertime.dat' using (column(2*i-1)):(column(2*i)) with steps title word('{names}', i)
""".format(pd=pd, c=n + 1, n=n, big=big, names=" ".join(algos), links=LINKS_PLOT.format(pd=pd, c=n + 1, big=big)
           if link_names else "")
    with open(os.path.join(pd, "plots.gp"), "w") as f:
        f.write(gp)
    r = subprocess.run(["gnuplot", os.path.join(pd, "plots.gp")], capture_output=True, text=True)
    return None if r.returncode == 0 else "gnuplot failed: " + r.stderr.strip()[:300]


INA_ALGOS = ("ps-ina", "agent-ring")
BASELINES = ("ring", "hier", "ps")


def ina_check(d, text, ina):
    """Whether a run of an INA algorithm really aggregated in the switches:
    they accepted contributions, and no rank lost its aggregator and
    finished on the software ring.  Also the racks whose agent sent them to
    the software PS at setup (no room in their ToR)."""
    logs = [text] + [open(f, errors="replace").read() for f in sorted(glob.glob(os.path.join(d, "rank-*.log")))]
    accepted = sum(v for k, v in ina.items() if k.endswith(" accepted"))
    lost = [l for t in logs for l in t.splitlines() if "run on the software ring" in l]
    soft = sorted({m.group(1) for t in logs for m in re.finditer(r"^hcl: (rack \d+): .*the rack uses the software PS",
                                                                 t, re.M)})
    why = None
    if lost:
        why = "its switch job was lost mid-run and the calls finished on the software ring (%s)" % lost[0].strip()[:160]
    elif accepted <= 0:
        why = "the switches accepted no contribution during the run"
    return {"credited": why is None, "why": why, "accepted": accepted, "soft_racks": soft}


def per_what(t):
    """What a time of the trial is: a training step's, or an all-reduce's."""
    return "per training step" if t.get("T_WORKLOAD") else "per all-reduce"


def ms(us):
    """A time in µs as milliseconds with three figures at least: a
    time-dilated trial reports a fast cluster's sub-millisecond calls."""
    v = us / 1e3
    return "%.1f" % v if v >= 10 else "%.2f" % v if v >= 1 else "%.3f" % v


def mean_ci(xs):
    """Mean and the half-width of its 95% confidence interval (None with
    fewer than two values)."""
    m = statistics.mean(xs)
    if len(xs) < 2:
        return m, None
    return m, trial_steps.t975(len(xs)) * statistics.stdev(xs) / len(xs) ** 0.5


def ratio_words(tb, tw, pairs):
    """The speed-up of the INA algorithm (time tw) over the baseline (tb),
    with its confidence interval over the repeats' paired ratios."""
    m, h = mean_ci([b / w for b, w in pairs]) if pairs else (tb / tw, None)
    if h is None:
        return "**%.2f× %s** (one run: no confidence interval; set repeats ≥ 2)" % (
            m if m >= 1 else 1 / m, "faster with INA" if m >= 1 else "slower with INA")
    ci = "95%% CI %.2f–%.2f over %d repeats" % (max(m - h, 0), m + h, len(pairs))  # a ratio is not negative
    if m - h <= 1 <= m + h:
        return "**no difference measured**: %.2f× (%s)" % (m, ci)
    return "**%.2f× %s** (%s)" % (m if m >= 1 else 1 / m, "faster with INA" if m >= 1 else "slower with INA",
                                  "speed-up " + ci)


def answer(t, results, algos, sizes):
    """The trial's question, per size: the best algorithm that uses the INA
    racks against the best one that does not (the call, and the iteration
    with its compute), from runs that ended with every result right."""
    if t["T_INA_RACKS"] == "none":
        return ["No rack is INA-capable in this trial: set ina_racks to see what INA would change."]
    lines = []
    for s in sizes:
        ok = {a: results[a][s] for a in algos if results[a][s].get("time_us") and results[a][s].get("wrong") == 0}
        for a in [a for a in ok if a in INA_ALGOS and not ok[a].get("ina_check", {}).get("credited", True)]:
            lines.append("- %s: %s is not credited with INA: %s." % (s, a, ok.pop(a)["ina_check"]["why"]))
        for a in [a for a in ok if ok[a].get("ina_check", {}).get("soft_racks")]:
            lines.append("- %s: in the %s run, %s sent to the software PS at setup (no room in the ToR): "
                         "those racks did not aggregate in their switch." % (
                             s, a, ", ".join(ok[a]["ina_check"]["soft_racks"])))
        ina = [a for a in ok if a in INA_ALGOS]
        base = [a for a in ok if a in BASELINES]
        if not ina or not base:
            lines.append("- %s: no answer: it needs a run of %s that ended with every result right." % (
                s, "ps-ina or agent-ring" if not ina else "ring, hier or ps"))
            continue
        # the mean over the repeats that count; the ratio paired by repeat
        mean = {a: statistics.mean([x for x in ok[a].get("repeats", [ok[a]["time_us"]]) if x]) for a in ok}
        w = min(ina, key=lambda a: mean[a])
        b = min(base, key=lambda a: mean[a])
        tw, tb = mean[w], mean[b]
        pairs = [(x, y) for x, y in zip(ok[b].get("repeats", []), ok[w].get("repeats", [])) if x and y]
        line = "- %s: with INA, %s takes %s ms %s; without, %s takes %s ms: %s" % (
            s, w, ms(tw), per_what(t), b, ms(tb), ratio_words(tb, tw, pairs))
        if ok[w].get("steps") and ok[b].get("steps"):
            line += "; of that, communication the backward did not hide: %s → %s ms" % (
                ms(ok[b]["exposed_us"]), ms(ok[w]["exposed_us"]))
        iw, ib = ok[w].get("timing", {}).get("mean_us"), ok[b].get("timing", {}).get("mean_us")
        if iw and ib and float(t["T_COMPUTE_MS"]) > 0:
            line += "; an iteration with %s ms of compute: %s → %s ms (%.2f×)" % (
                t["T_COMPUTE_MS"], ms(ib), ms(iw), ib / iw)
        lines.append(line + ".")
    lines += [""] + noise_words(results, algos, sizes)
    return lines


def noise_words(results, algos, sizes):
    """How much the runs themselves varied: every algorithm's time per call
    over its repeats (half the range, against the mean)."""
    spreads = []
    for a in algos:
        for s in sizes:
            xs = [x for x in results[a][s].get("repeats", []) if x]
            if len(xs) >= 2:
                spreads.append(((max(xs) - min(xs)) / 2 / statistics.mean(xs), a, s, len(xs)))
    if not spreads:
        return ["One run of each: how much a rerun would differ is not measured here (set repeats ≥ 2)."]
    hi = max(spreads)
    return ["Run-to-run spread measured here: the times per call of an algorithm varied by ±%.1f%% at most across "
            "its repeats (%s at %s, %d repeats), ±%.1f%% in the median; ratios whose interval includes 1 are "
            "reported as no difference." % (100 * hi[0], hi[1], hi[2], hi[3],
                                             100 * statistics.median(x[0] for x in spreads))]


def run_label(out, d, algos):
    """A run directory (ALGO-SIZE[@REPEAT]) in words: "ring at 4M, repeat
    2", and for a sweep's run, with how many racks were INA."""
    rel = os.path.relpath(d, out).split(os.sep)
    name, rep = (rel[-1].split("@") + ["1"])[:2]
    a = max([x for x in algos if name.startswith(x + "-")] or [name], key=len)
    s = name[len(a) + 1:]
    where = " with %s INA rack%s" % (rel[1][1:], "" if rel[1] == "k1" else "s") if rel[0] == "sweep" else ""
    return "%s at %s%s, repeat %s" % (a, s, where, rep)


def steal_words(out, algos):
    """How much CPU the hypervisor took (steal) in every run of the trial,
    each repeat and sweep point included: where it took much, the
    switches' and the ranks' clocks ran on while none of them could act,
    and the run timed the machine's neighbours as much as the network."""
    runs = sorted(glob.glob(os.path.join(out, "runs", "*")) + glob.glob(os.path.join(out, "sweep", "k*", "*")))
    steals = [(trial_load.steal_pct(d), d) for d in runs if os.path.isdir(d)]
    steals = [(p, d) for p, d in steals if p is not None]
    if not steals or max(steals)[0] < 0.5:
        return []
    hi = max(steals)
    lines = ["The hypervisor took up to %.0f%% of the machine's CPU during a run (%s; steal: this is a virtual "
             "machine sharing its cores), %.1f%% in the median of %d runs." % (
                 hi[0], run_label(out, hi[1], algos), statistics.median(p for p, _ in steals), len(steals))]
    over = sorted(((p, d) for p, d in steals if p > trial_load.STEAL_LIMIT_PCT), reverse=True)
    if over:
        most = "; ".join("%s %.0f%%" % (run_label(out, d, algos), p) for p, d in over[:6])
        lines.append("**Disturbed by the hypervisor** in %d of %d runs (over %.0f%% of the CPU stolen; the most: %s%s): "
                     "while it ran something else, the emulated links' clocks ran on and neither the switches nor "
                     "the ranks could act, so those times measure this machine's neighbours as much as the network. "
                     "Run the trial again, or on a machine whose cores are its own." % (
                         len(over), len(steals), trial_load.STEAL_LIMIT_PCT, most,
                         "; and %d more" % (len(over) - 6) if len(over) > 6 else ""))
    return lines


def load_run(d, a, t, nb, ctx):
    """One run of algorithm a (directory d, nb bytes): its time and #wrong
    from perf.out, the timing traces, the switches' counters and, for an
    INA algorithm, whether INA really happened."""
    warmup, iters, world, host_rate, up_rate, link_names = ctx[:6]
    k = ctx[7] if len(ctx) > 7 else 1.0
    if t.get("T_ENGINE") == "sim":
        return load_sim_run(d, nb, world, float(t["T_COMPUTE_MS"]))
    r = {"bytes": nb, "rc": run_rc(d)}
    text = open(os.path.join(d, "perf.out")).read() if os.path.exists(os.path.join(d, "perf.out")) else ""
    if t.get("T_WORKLOAD"):  # training steps: their times stand for the calls'
        st = trial_steps.parse(text, k) if r["rc"] == 0 else None
        p = {"time_us": statistics.mean(st["steps_us"]) * k, "wrong": st["wrong"]} if st else None
        if st:
            r.update(steps=trial_steps.distribution(st["steps_us"]), steps_us=st["steps_us"],
                     compute_us=st["compute_us"], exposed_us=statistics.mean(st["steps_us"]) - st["compute_us"])
    else:
        p = perf_line(text, nb) if r["rc"] == 0 else None
    tr = traces(os.path.join(d, "trace"), nb, warmup, iters, k) if p else None
    load = trial_load.load_of(d)
    r["cpu_pct"] = load["machine_pct"]
    r["load"] = load
    if p:
        p["time_us"] /= k
        r.update(p)
        # with compute, the program times whole iterations: the
        # all-reduce is the iteration less its compute (traces)
        if float(t["T_COMPUTE_MS"]) > 0 and tr and tr.get("call_mean_us") and not t.get("T_WORKLOAD"):
            r["iteration_us"], r["time_us"] = p["time_us"], tr["call_mean_us"]
        r["emulated_time_us"] = r["time_us"] * k  # the call as the testbed ran it
        add_bandwidths(r, nb, world)
    else:
        r["error"] = (text.strip().splitlines() or ["no output"])[-1][:200]
    if tr:
        r["timing"] = tr
    try:
        before = json.load(open(os.path.join(d, "stats-before.json")))
        after = json.load(open(os.path.join(d, "stats-after.json")))
        links, drops, ina = counters(before, after)
        # calls in the run: warm-up, timed, the check and its #wrong sum
        ncalls = warmup + iters + 2
        per_call_s = p["time_us"] / 1e6 if p else 0
        for l, v in links.items():
            rate = (uplink_rate(l, up_rate) if l.endswith(".up") or l.startswith("spine.")
                    else rack_rate(l, host_rate, ctx))
            busiest = max(v["rx_bytes"], v["tx_bytes"])
            v["bytes_per_call"] = busiest / ncalls
            v["utilisation"] = (busiest * 8 / (per_call_s * ncalls) / rate) if per_call_s and rate else 0
        r.update(links=links, drops=drops, ina=ina, ecn_marks=sum(v["ecn_marks"] for v in links.values()))
        if a in INA_ALGOS:
            r["ina_check"] = ina_check(d, text, ina)
        for l in links:
            if l not in link_names:
                link_names.append(l)
    except (OSError, ValueError, KeyError) as e:
        r["counters_error"] = str(e)
    return r


def dilation_words(t, results, algos, sizes):
    """What time dilation did (k, the emulated rates), and where this run
    came near what does not scale with it: the machine's CPU, per-packet
    costs, fixed delays and timer floors."""
    k = dilation(t)
    cpus = [(results[a][s]["cpu_pct"], a, s) for a in algos for s in sizes if results[a][s].get("cpu_pct") is not None]
    share = 100 * float(t.get("T_CPU_SHARE", "0.8"))
    lines = []
    if k != 1:
        lines.append("Time-dilated by **k = %g**: the testbed ran host links at %s%s (uplinks %s), delays and "
                     "compute %g× as long; every time and bandwidth in this report is the real cluster's (measured "
                     "time ÷ k)%s." % (
                         k, t["T_EMU_HOST_RATE"], " (per rack %s)" % t["T_EMU_RACK_RATES"].replace(",", ", ")
                         if t.get("T_EMU_RACK_RATES") else "", t["T_EMU_UPLINK_RATE"], k,
                         "; k from calibration.txt, the highest rate at which ring%s kept this machine's CPU, "
                         "swemu's busiest lcore and the busiest rank under %.0f%%" % (
                             " and ps-ina" if "ps-ina" in algos else "", share)
                         if t.get("T_CALIBRATED") else ""))
    if cpus:
        hi = max(cpus)
        lines.append("The machine's CPU (all cores) was busy %.0f%% at most during a run (%s at %s), %.0f%% in the "
                     "median." % (hi[0], hi[1], hi[2], statistics.median(c[0] for c in cpus)))
    lcores = [(results[a][s]["load"]["lcore_pct"], a, s, results[a][s]["load"]["lcore"]) for a in algos for s in sizes
              if (results[a][s].get("load") or {}).get("lcore_pct") is not None]
    if lcores:
        hi = max(lcores)
        lines.append("swemu's busiest lcore was busy %.0f%% of the time at most (%s, in %s at %s)." % (
            hi[0], hi[3], hi[1], hi[2]))
    ranks = [(results[a][s]["load"]["rank_pct"], a, s, results[a][s]["load"]["rank"]) for a in algos for s in sizes
             if (results[a][s].get("load") or {}).get("rank_pct") is not None]
    if ranks:
        hi = max(ranks)
        lines.append("The busiest rank used %.0f%% of a core in its calls at most (rank %d, in %s at %s)." % (
            hi[0], hi[3], hi[1], hi[2]))
    flagged = [(a, s, trial_load.over(results[a][s]["load"], share)) for a in algos for s in sizes
               if results[a][s].get("load")]
    flagged = [f for f in flagged if f[2]]
    if flagged:
        lines.append("**Above the %.0f%% share** (`cpu_share`), so these runs may measure this machine's CPU rather "
                     "than the network (use a larger dilation factor or slower links): %s." % (share, "; ".join(
                         "%s at %s (%s)" % (a, s, ", ".join(w)) for a, s, w in flagged)))
        # a switch's lcore the bound while the machine had CPU to spare:
        # more lcores per switch, not only a larger k, is the way out
        loads = [results[a][s]["load"] for a, s, _ in flagged]
        lcore_bound = any((l.get("lcore_pct") or 0) > share and (l.get("machine_pct") or 0) <= share for l in loads)
        if lcore_bound and t.get("T_TOR_PARTITIONS", "1") == "1":
            lines.append("swemu's lcore, not the machine, was the bound: where cores are spare, `pmd = \"af_xdp\"; "
                         "tor_partitions = 2` runs every switch on two lcores (one swemu; docs/TRIAL.md).")
    emu_bps = float(t.get("T_EMU_HOST_BPS") or t["T_HOST_BPS"])
    if emu_bps and 9000 * 8 / emu_bps < 50e-6:
        lines.append("**Near a limit**: at %s a jumbo frame lasts %.0f µs on the emulated link, close to what a "
                     "packet costs the hosts' and switch's CPU; per-packet costs do not scale with k." % (
                         t.get("T_EMU_HOST_RATE", t["T_HOST_RATE"]), 9000 * 8 / emu_bps * 1e6))
    short = [(results[a][s]["emulated_time_us"], a, s) for a in algos for s in sizes
             if results[a][s].get("emulated_time_us")]
    if short and min(short)[0] < 20000:
        m = min(short)
        lines.append("**Near a limit**: %s at %s took %.1f ms per call on the testbed; delays that do not scale "
                     "(process wake-ups, swemu's idle back-off of up to 0.2 ms per hop, the INA re-send timer's "
                     "5 ms floor) are a visible part of calls that short." % (m[1], m[2], m[0] / 1e3))
    return lines


def captures_words(out, t):
    """The capture files of the trial's switches (capture = [...]), one per
    switch and deployment, with how to read them."""
    files = sorted(glob.glob(os.path.join(out, "capture", "*", "*.pcapng")))
    if not files:
        return []
    lines = ["", "## Packet captures", "",
             "What %s wrote (snaplen %s bytes): one pcapng file per switch and deployment (`main`: the main runs; "
             "`sweep-kK`: K racks upgraded), every run of that deployment in it, one interface per port. Read them "
             "with `tshark -X lua_script:testbed/capture/ina.lua -r FILE` or Wireshark with that script "
             "(docs/SWEMU.md, \"Packet capture and Wireshark\")." % (
                 ", ".join(t.get("T_CAPTURE", "").split()), t.get("T_CAPTURE_SNAPLEN", "128")), ""]
    for f in files:
        rel = os.path.relpath(f, out)
        lines.append("- [%s](%s): %.1f MB" % (rel, rel, os.path.getsize(f) / 1e6))
    return lines


def dilation(t):
    v = t.get("T_DILATION", "1")
    return float(v) if v not in ("", "auto") else 1.0


def ps_shards_words(t):
    """The PS shards: one count, or ps's and ps-ina's where the default gave
    ps-ina more (one per rack's partial: agent/psina_plan.h)."""
    ps, psina = t.get("T_PS_SHARDS", "1"), t.get("T_PSINA_SHARDS")
    return ps if not psina or psina == ps else "%s (ps), %s (ps-ina)" % (ps, psina)


def link_extras(t):
    """Per-rack host rates, and the emulated delay, jitter and bursty loss of
    every port, as words."""
    w = ", host links per rack %s" % t["T_RACK_RATES"].replace(",", ", ") if t.get("T_RACK_RATES") else ""
    if t.get("T_DELAY_US", "0") != "0":
        w += ", delay %s us per port" % t["T_DELAY_US"]
    if t.get("T_JITTER_US", "0") != "0":
        w += " (+0..%s us jitter)" % t["T_JITTER_US"]
    if t.get("T_BURST_LOSS"):
        w += ", bursty loss (Gilbert-Elliott p_good_bad, p_bad_good, loss_bad: %s)" % t["T_BURST_LOSS"].replace(",", ", ")
    return w


def deployment_cost(t, k):
    """The hardware of the trial's racks with k INA-capable ToRs (None
    without a costs group)."""
    if "T_COST_INA_TOR" not in t:
        return None
    racks = int(t["T_RACKS"])
    return (world_of(t) * float(t["T_COST_HOST"]) + k * (float(t["T_COST_INA_TOR"]) + float(t["T_COST_INA_POWER"]))
            + (racks - k) * float(t["T_COST_PLAIN_TOR"]))


def sweep(out, t, results, algos, sizes, ctx):
    """The deployment curve: per size and INA algorithm, the speed-up over
    the best algorithm without INA (main runs) with 0, 1, ... racks
    upgraded in sweep_order (sweep/kK/; all racks: the main runs), with its
    95% interval over the repeats' paired ratios.  With no INA rack the
    INA algorithms run on the software PS or ring and are not expected to
    aggregate; from one rack on they must (as in the answer)."""
    racks, repeats = int(t["T_RACKS"]), int(t.get("T_REPEATS", "1"))
    order = t["T_SWEEP_ORDER"].split()
    ina = [a for a in algos if a in INA_ALGOS]
    curve = {}
    for s in sizes:
        nb = results[algos[0]][s]["bytes"]
        base = [a for a in algos if a in BASELINES and any(results[a][s]["repeats"])]
        if not base or not ina:
            continue
        b = min(base, key=lambda a: statistics.mean(x for x in results[a][s]["repeats"] if x))
        for a in ina:
            pts = []
            for k in range(racks + 1):
                if k == racks:
                    times = results[a][s]["repeats"]
                else:
                    d = os.path.join(out, "sweep", "k%d" % k)
                    times = []
                    for r in range(1, repeats + 1):
                        run = load_run(os.path.join(d, "%s-%s%s" % (a, s, "@%d" % r if r > 1 else "")), a, t, nb, ctx)
                        if k == 0:  # nothing to credit: no switch aggregates
                            run.pop("ina_check", None)
                        times.append(run_time(run))
                pairs = [(x, y) for x, y in zip(results[b][s]["repeats"], times) if x and y]
                if not pairs:
                    pts.append({"racks": k, "error": "no run ended with every result right"})
                    continue
                m, h = mean_ci([x / y for x, y in pairs])
                pts.append({"racks": k, "ina_racks": order[:k], "time_us": statistics.mean(y for _, y in pairs),
                            "speedup": m, "ci": h, "cost": deployment_cost(t, k), "baseline": b})
            curve.setdefault(s, {})[a] = pts
    return curve


def sweep_words(t, curve):
    """The deployment curve as report lines: a table per size and, with
    costs, the sentence per deployment."""
    racks = int(t["T_RACKS"])
    lines = ["## Deployment curve", "",
             "The INA algorithms with 0 to %d of %d racks upgraded, in the order %s (0: no INA ToR, the software "
             "aggregators alone; %d: the main runs above), against the best algorithm without INA; "
             "95%% intervals over the repeats." % (racks, racks, ", ".join(t["T_SWEEP_ORDER"].split()), racks), ""]
    cost0 = deployment_cost(t, 0)
    for s, per in curve.items():
        lines += ["| %s: racks upgraded | INA racks | %s |%s" % (s, " | ".join(per), " hardware cost |" if cost0 else ""),
                  "|---|---|%s%s" % ("---|" * len(per), "---|" if cost0 else "")]
        for k in range(racks + 1):
            cells = []
            for a in per:
                p = per[a][k]
                cells.append("–" if "error" in p else "%.2f× (%s), %s ms" % (
                    p["speedup"], "%.2f–%.2f" % (max(p["speedup"] - p["ci"], 0), p["speedup"] + p["ci"])
                    if p["ci"] is not None else "one run", ms(p["time_us"])))
            racks_named = ",".join(t["T_SWEEP_ORDER"].split()[:k]) or "none"
            cost = deployment_cost(t, k)
            lines.append("| %d | %s | %s |%s" % (k, racks_named, " | ".join(cells),
                                                 " %.0f (+%.1f%%) |" % (cost, 100 * (cost / cost0 - 1)) if cost0 else ""))
        lines.append("")
        if cost0:
            for k in range(1, racks + 1):
                ok = [(p[k]["speedup"], a) for a, p in per.items() if "error" not in p[k]]
                if not ok:
                    continue
                sp, a = max(ok)
                cost = deployment_cost(t, k)
                lines.append("- %s: upgrading %d of %d racks gives %.2f× %s (%s, against %s) for %.1f%% "
                             "more hardware cost: %.3f× per unit of cost." % (
                                 s, k, racks, sp, per_what(t), a, per[a][k]["baseline"], 100 * (cost / cost0 - 1),
                                 sp / (cost / cost0)))
            lines.append("")
    return lines


def sweep_plot(out, curve, racks):
    """speed-up against racks upgraded, per INA algorithm and size."""
    if not curve or not shutil.which("gnuplot"):
        return None
    pd = os.path.join(out, "plots")
    os.makedirs(pd, exist_ok=True)
    series = [(s, a) for s in curve for a in curve[s]]
    with open(os.path.join(pd, "sweep.dat"), "w") as f:
        for s, a in series:
            f.write("# %s %s\n" % (a, s))
            for p in curve[s][a]:
                if "error" not in p:
                    f.write("%d %g %g\n" % (p["racks"], p["speedup"], p["ci"] or 0))
            f.write("\n\n")
    gp = """set terminal pngcairo size 900,500 noenhanced
set output '{pd}/sweep.png'
set title 'speed-up against racks upgraded (1 = the best algorithm without INA)'
set xlabel 'racks with an INA ToR'
set ylabel 'speed-up'
set xtics 1
set xrange [-0.3:{r}.3]
set yrange [0:*]
set grid ytics
set key outside right
plot 1 title 'best without INA' dt 2 lc rgb 'gray', for [i=0:{n}] '{pd}/sweep.dat' index i using 1:2:3 with yerrorlines title word('{names}', i+1)
""".format(pd=pd, r=racks, n=len(series) - 1, names=" ".join("%s@%s" % (a, s) for s, a in series))
    with open(os.path.join(pd, "sweep.gp"), "w") as f:
        f.write(gp)
    r = subprocess.run(["gnuplot", os.path.join(pd, "sweep.gp")], capture_output=True, text=True)
    return None if r.returncode == 0 else "gnuplot failed on the sweep: " + r.stderr.strip()[:300]


SIM_WORDS = ["Simulated (engine = \"sim\", docs/SCALE.md): the trial's fabric in ns-3, nic/'s engine in the "
             "switches, the host library's plans and windows on the hosts. Times are simulated, so this machine's CPU "
             "is not in them, nor is the hosts' own CPU cost; each repeat draws its noise and loss from its own seed "
             "(the trial's seed + repeat - 1)."]


def world_of(t):
    """The hosts of the trial: racks may differ in size (T_WORLD)."""
    return int(t.get("T_WORLD") or int(t["T_RACKS"]) * int(t["T_HOSTS"]))


def uplink_rate(link, up_rates):
    """The rate of rack R's uplink ("torR.up", "spine.tR"): its own when
    racks differ in size, else the one rate."""
    m = re.match(r"tor(\d+)\.up$|spine\.t(\d+)$", link)
    r = int(m.group(1) or m.group(2)) if m else 0
    return up_rates[r] if r < len(up_rates) else up_rates[0]


def rack_rate(link, host_rate, ctx):
    """The rate of a host link "torR.hI": its rack's, if racks have their own."""
    m = re.match(r"tor(\d+)\.", link)
    rack_bps = ctx[6] if len(ctx) > 6 else []
    return rack_bps[int(m.group(1))] if m and int(m.group(1)) < len(rack_bps) else host_rate


def run_time(r):
    """A run's time per call, or None when it does not count (failed, a
    wrong element, INA not credited)."""
    ok = r.get("time_us") and r.get("wrong") == 0 and r.get("ina_check", {}).get("credited", True)
    return r["time_us"] if ok else None


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    out = sys.argv[1]
    t = env(os.path.join(out, "trial.env"))
    algos, sizes = t["T_ALGOS"].split(), t["T_SIZES"].split()
    warmup, iters = int(t["T_WARMUP"]), int(t["T_ITERATIONS"])
    world = world_of(t)
    # the runner wrote the numbers behind the units (swemu-trial-cfg --size, --rate)
    host_rate, up_rate = float(t["T_HOST_BPS"]), [float(x) for x in t["T_UPLINK_BPS"].split()]
    size_bytes = dict(zip(sizes, map(int, t["T_SIZE_BYTES"].split())))
    results, link_names = {}, []
    ctx = (warmup, iters, world, host_rate, up_rate, link_names, [float(x) for x in t.get("T_RACK_BPS", "").split()],
           dilation(t))
    repeats = int(t.get("T_REPEATS", "1"))
    for a in algos:
        results[a] = {}
        for s in sizes:
            nb = size_bytes[s] // 4 * 4
            r = load_run(os.path.join(out, "runs", "%s-%s" % (a, s)), a, t, nb, ctx)
            # the other repeats: their times (and whether they count) only
            others = [load_run(os.path.join(out, "runs", "%s-%s@%d" % (a, s, k)), a, t, nb, ctx)
                      for k in range(2, repeats + 1)]
            r["repeats"] = [run_time(x) for x in [r] + others]
            if r.get("steps"):  # a workload's steps: every repeat's that counts
                counted = [x for x in [r] + others if run_time(x)]
                steps = [v for x in counted for v in x["steps_us"]]
                r["compute_us"] = statistics.mean(x["compute_us"] for x in counted)
                r["steps"] = trial_steps.distribution(steps)
                r["exposed_us"] = r["steps"]["mean_us"] - r["compute_us"]
            results[a][s] = r
    for a in algos:
        for s in sizes:
            r = results[a][s]
            for ref in ("ring", "ps-ina"):
                rr = results.get(ref, {}).get(s, {})
                if r.get("time_us") and rr.get("time_us"):  # same size: the ratio of bandwidths
                    r["speedup_vs_" + ref.replace("-", "_")] = rr["time_us"] / r["time_us"]
    machine = open(os.path.join(out, "machine.txt")).read() if os.path.exists(os.path.join(out, "machine.txt")) else ""
    note = plots(out, results, algos, sizes, link_names)
    curve = sweep(out, t, results, algos, sizes, ctx) if t.get("T_SWEEP") == "1" else {}
    sweep_note = sweep_plot(out, curve, int(t["T_RACKS"]))
    json.dump({"trial": t, "world": world, "machine": machine.splitlines(), "results": results, "sweep": curve}, open(
        os.path.join(out, "results.json"), "w"), indent=1)

    sim = t.get("T_ENGINE") == "sim"
    stolen = [] if sim else steal_words(out, algos)

    def fmt(v, f="%.3f"):
        return f % v if isinstance(v, (int, float)) else "–"

    md = ["# Trial %s" % t["T_NAME"], "",
          "%d racks %s (INA racks: %s), %s%s, host links %s%s, uplinks %s%s, loss %s; %s (INA float jobs: %s; INA packets of %s elements, %s in flight per worker; PS shards %s; ring channels %s), %d iterations after %d "
          "warm-up; compute %s%s%s; pacing %s; seed %s." % (
              int(t["T_RACKS"]), "(%s hosts)" % " + ".join(t["T_HOSTS"].split(",")) if "," in t["T_HOSTS"]
              else "× %s hosts" % t["T_HOSTS"], t["T_INA_RACKS"], "simulated in ns-3" if sim else t.get("T_PMD", "af_packet") + " ports",
              ", a swemu process per switch" if t.get("T_PROCESSES") == "1" else "", t["T_HOST_RATE"],
              " (buffer %s)" % t["T_HOST_BUFFER"] if t.get("T_HOST_BUFFER") else "", t["T_UPLINK_RATE"].replace(",", ", "),
              " (buffer %s)" % t["T_UPLINK_BUFFER"] if t["T_UPLINK_BUFFER"] else "", t["T_LOSS"] + link_extras(t), t["T_DTYPE"], t.get("T_INA_WIRE", "fp32"),
              t.get("T_INA_ELEMS", "1024"), t.get("T_INA_SLOTS", "16"), ps_shards_words(t), t.get("T_RING_CHANNELS", "1"),
              iters, warmup, "the workload's (%s)" % t["T_WORKLOAD_NAME"] if t.get("T_WORKLOAD") else t["T_COMPUTE_MS"] + " ms",
              ", jitter " + t["T_JITTER"] if t["T_JITTER"] else "",
              ", straggler " + t["T_STRAGGLER"] if t["T_STRAGGLER"] else "", "on" if t["T_PACE"] == "1" else "off",
              t["T_SEED"]), "",
          "## The answer", ""] + answer(t, results, algos, sizes) + stolen + [""] + (
              trial_steps.section(t, results, algos, sizes[0], ms) if t.get("T_WORKLOAD") else []) + (
              SIM_WORDS if sim else dilation_words(t, results, algos, sizes)) + [""] + (
              sweep_words(t, curve) if curve else []) + [
          "## Bus bandwidth and speed-up", "",
          "| algorithm | size | time/call (ms) | busbw (GB/s) | vs ring | vs ps-ina | #wrong |",
          "|---|---|---|---|---|---|---|"]
    table = []
    for a in algos:
        for s in sizes:
            r = results[a][s]
            if "error" in r:
                md.append("| %s | %s | failed: %s | | | | |" % (a, s, r["error"].replace("|", "/")))
                table.append("%-11s %6s  failed: %s" % (a, s, r["error"][:60]))
                continue
            md.append("| %s | %s | %s | %.4f | %s | %s | %d |" % (
                a, s, ms(r["time_us"]), r["busbw_gbs"], fmt(r.get("speedup_vs_ring"), "%.2f×"),
                fmt(r.get("speedup_vs_ps_ina"), "%.2f×"), r["wrong"]))
            tm = r.get("timing", {})
            table.append("%-11s %6s %10s %10.4f %8s %9s %7s %8s" % (
                a, s, ms(r["time_us"]), r["busbw_gbs"], fmt(r.get("speedup_vs_ring"), "%.2fx"),
                fmt(r.get("speedup_vs_ps_ina"), "%.2fx"), fmt(tm.get("cv")), r["wrong"]))
    it = [] if t.get("T_WORKLOAD") else [  # a workload's steps have their own section
        "", "## Iteration time", "",
        "Per timed iteration, the mean over ranks; shares of the ranks' time from the timing traces "
        "(docs/PACING.md).", "",
        "| algorithm | size | mean (ms) | p50 | p99 | CV | compute | waiting | comm | delay | spread (ms) | paced calls |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    md += it
    for a in algos if it else []:
        for s in sizes:
            tm = results[a][s].get("timing")
            if not tm or "mean_us" not in tm:
                continue
            sh = tm["shares"]
            md.append("| %s | %s | %s | %s | %s | %.3f | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %s | %d |" % (
                a, s, ms(tm["mean_us"]), ms(tm["p50_us"]), ms(tm["p99_us"]), tm["cv"], 100 * sh["compute"],
                100 * sh["wait"], 100 * sh["comm"], 100 * sh["delay"], ms(tm["spread_mean_us"]), tm["paced_calls"]))
    big = sizes[-1]
    md += ["", "## Links at %s" % big, ""]
    if sim:
        md.append("The simulator counts drops by reason, not bytes per link.")
    md += [
           "Bytes per call in the busier direction (whole run, warm-up and check included, divided by the calls); "
           "utilisation against the emulated rate over the measured time per call.", "",
           "| link | " + " | ".join(algos) + " |", "|---|" + "---|" * len(algos)] if link_names else []
    for l in link_names:
        md.append("| %s | %s |" % (l, " | ".join(
            "%.2f MB, %.0f%%" % (results[a][big]["links"][l]["bytes_per_call"] / 1e6,
                                 100 * results[a][big]["links"][l]["utilisation"])
            if l in results[a][big].get("links", {}) else "–" for a in algos)))
    md += ["", "## Drops by reason (whole run)", ""]
    any_drop = False
    for a in algos:
        for s in sizes:
            for k, v in sorted(results[a][s].get("drops", {}).items()):
                md.append("- %s %s: %s %d" % (a, s, k, v))
                any_drop = True
    if not any_drop:
        md.append("None counted by any switch.")
    marks = ["- %s %s: %d" % (a, s, results[a][s]["ecn_marks"]) for a in algos for s in sizes
             if results[a][s].get("ecn_marks")]
    if marks:  # the queues' congestion signal (ina_cc: the INA windows follow it)
        md += ["", "## Frames the switch queues marked (ECN CE; whole run)", ""] + marks
    md += ["", "## The hosts' side (whole run, all ranks)", ""] + (["Not counted by the simulator."] if sim else [
           "Refused by the ranks' software aggregators (PS shards, ring members), INA slices re-sent on time-out, "
           "answers that matched nothing in flight, answers a switch queue marked (ECN, `ina_cc`), and the reliable "
           "transfer's re-sent packets and time-outs.", "",
           "| algorithm | size | aggregators refused | INA re-sent | INA stale | INA marked | transfer re-sent "
           "| transfer time-outs |",
           "|---|---|---|---|---|---|---|---|"])
    for a in algos:
        for s in sizes:
            h = results[a][s].get("timing", {}).get("host")
            if h:
                why = ", ".join("%s %d" % kv for kv in sorted(h.get("agg_drops", {}).items(), key=lambda kv: -kv[1]))
                md.append("| %s | %s | %d%s | %d | %d | %d | %d | %d |" % (
                    a, s, h["agg_dropped"], " (%s)" % why if why else "", h["ina_resent"], h["ina_stale"],
                    h.get("ina_marked", 0), h["xfer_resent"], h["xfer_timeouts"]))
    md += cc_hint(t, results, algos, sizes)
    md += captures_words(out, t)
    md += ["", "## Plots", ""]
    if note:
        md.append(note)
    else:
        md += ["![throughput](plots/throughput.png)", "", "![iteration time](plots/itertime.png)"]
        md += ["", "![links](plots/links.png)"] if link_names else []
    if curve:
        md += ["", sweep_note or "![deployment curve](plots/sweep.png)"]
    md += ["", "## Machine and versions", "", "```", machine.strip(), "```", "",
           "Trial file: [trial.cfg](trial.cfg); raw outputs in runs/."]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("%-11s %6s %10s %10s %8s %9s %7s %8s" % ("algorithm", "size", "ms/call", "busbw", "vs ring", "vs ps-ina",
                                                  "iter CV", "#wrong"))
    print("\n".join(table))
    print("\n".join(l.replace("**", "") for l in answer(t, results, algos, sizes) if l.startswith("- ")))
    if len(stolen) > 1:  # runs the hypervisor disturbed: as plain on the console as in the report
        print(stolen[1].replace("**", ""))
    if curve:
        print("\n".join(l for l in sweep_words(t, curve) if l.startswith("|") or l.startswith("- ")))


if __name__ == "__main__":
    main()
