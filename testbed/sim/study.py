#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The simulator's studies (docs/SCALE.md), each a set of swemu-sim runs:

  crossval  the default trial's fabric (2 racks x 4 hosts, 200M, 2:1, 256K
            uplink buffers) simulated, beside an emulated trial's
            results.json (--emulated): time per call per algorithm and INA
            deployment, and the ranking
  scale     64, 256 and 1024 hosts (racks of 8, 16, 32; 2:1 uplinks), INA on
            0..100% of the racks: speed-up of agent-ring and ps-ina (sharded
            and single PS) over the best non-INA algorithm (the figure the
            Rina paper draws)
  pacing    64 hosts, 100 ms of compute with normal jitter of 10 ms and a
            straggler of 1.5x (the pacing benchmark's) or 2x: iteration-time
            CV and iterations/s with and without the pacing rule

Writes DIR/<study>.csv, DIR/<study>.md (the tables) and PNG plots (gnuplot).
  testbed/sim/study.py [-o DIR] [--sim BIN] [--emulated results.json]
                       [--hosts 64,256,1024] [--size 1M] [--rate 200M]
                       [--slots 8] [-j 2] [STUDY...]
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

TRIAL = ["--racks=2", "--hostsPerRack=4", "--hostRate=200M", "--oversubscription=2", "--uplinkBuffer=256K",
         "--delayUs=0", "--computeMs=10", "--jitter=normal:2", "--iterations=5", "--warmup=1"]


def run(sim, args):
    """One swemu-sim run: its JSON, or a dict with 'error' set."""
    p = subprocess.run([sim] + args, capture_output=True, text=True)
    try:
        d = json.loads(p.stdout)
    except ValueError:
        d = {"error": (p.stderr.strip() or "no output").splitlines()[-1], "time_ms": None}
    d["args"] = " ".join(args)
    return d


def run_all(sim, arglists, jobs):
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        return list(ex.map(lambda a: run(sim, a), arglists))


def rate_bps(s):
    """A rate as the simulator takes it ("200M", "25G") in bit/s."""
    units = {"K": 1e3, "M": 1e6, "G": 1e9}
    return float(s[:-1]) * units[s[-1].upper()] if s[-1:].upper() in units else float(s)


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def fmt(x, f="%.1f"):
    return f % x if x is not None else "n/a"


def link_note(r):
    """The busiest link's transmit time per iteration (swemu-sim's busiest_link)."""
    b = r.get("busiest_link") or {}
    return "busiest link %s ms" % fmt(b.get("ms_per_iteration"))


def plot(out, name, title, ylabel, xlabel, series, logx=False, ref=None):
    """series: [(label, [(x, y), ...])] as lines; PNG by gnuplot if present."""
    dat = os.path.join(out, name + ".dat")
    with open(dat, "w") as f:
        for label, pts in series:
            f.write('"%s"\n' % label)
            for x, y in pts:
                if y is not None:
                    f.write("%g %g\n" % (x, y))
            f.write("\n\n")
    script = ['set terminal pngcairo size 1100,560', 'set output "%s"' % os.path.join(out, name + ".png"),
              'set title "%s"' % title, 'set xlabel "%s"' % xlabel, 'set ylabel "%s"' % ylabel,
              'set key outside right top', 'set grid', 'set yrange [0:*]', 'set xrange [-5:105]',
              'set linetype 8 lc rgb "#8b4513"', 'set linetype 9 lc rgb "#2f4f4f"']
    if logx:
        script.append("set logscale x 2")
    lines = ['"%s" index %d with linespoints lw 2 pt 7 ps 1.3 title columnheader(1)' % (dat, i)
             for i in range(len(series))]
    if ref:
        lines.append('%g with lines dt 2 lc rgb "gray" title "%s"' % ref)
    script.append("plot " + ", ".join(lines))
    try:
        subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print("study: no plot %s (%s)" % (name, e), file=sys.stderr)


def crossval(a, out):
    cases = [("ring", "ring", []), ("hier", "hier", []), ("ps", "ps", []),
             ("ps-ina, 1 INA rack", "ps-ina", ["--inaRacks=1"]), ("ps-ina, 2 INA racks", "ps-ina", ["--inaRacks=2"]),
             ("agent-ring, no INA rack", "agent-ring", ["--inaRacks=0"]),
             ("agent-ring, 1 INA rack", "agent-ring", ["--inaRacks=1"]),
             ("agent-ring, 2 INA racks", "agent-ring", ["--inaRacks=2"])]
    sizes = ["1M", "4M"]
    seeds = [1, 2, 3]
    args = [TRIAL + ["--algorithm=" + alg, "--size=" + s, "--seed=%d" % seed] + extra
            for _, alg, extra in cases for s in sizes for seed in seeds]
    res = run_all(a.sim, args, a.jobs)
    emu = {}
    if a.emulated:
        d = json.load(open(a.emulated))
        for s in sizes:
            for alg in ("ring", "hier", "ps"):
                reps = d["results"][alg][s].get("repeats") or [d["results"][alg][s]["time_us"]]
                emu[(alg, s)] = mean([r / 1e3 for r in reps])
            for alg in ("ps-ina", "agent-ring"):
                for e in d.get("sweep", {}).get(s, {}).get(alg, []):
                    label = "%s, %s" % (alg, {0: "no INA rack", 1: "1 INA rack", 2: "2 INA racks"}[e["racks"]])
                    emu[(label, s)] = e["time_us"] / 1e3
            # ps-ina's sweep at 0 racks is ps; the table has its own row
    rows, i = [], 0
    for label, alg, _ in cases:
        for s in sizes:
            r = res[i:i + len(seeds)]
            i += len(seeds)
            t = mean([x.get("time_ms") for x in r])
            errs = sorted({x["error"] for x in r if x.get("error")})
            e = emu.get((label, s))
            rows.append({"case": label, "size": s, "sim_ms": t, "emu_ms": e,
                         "sim_over_emu": t / e if t and e else None, "errors": "; ".join(errs)})
    with open(os.path.join(out, "crossval.csv"), "w") as f:
        f.write("case,size,sim_ms,emulated_ms,sim_over_emulated,errors\n")
        for r in rows:
            f.write("%s,%s,%s,%s,%s,%s\n" % (r["case"], r["size"], fmt(r["sim_ms"], "%.2f"), fmt(r["emu_ms"], "%.2f"),
                                             fmt(r["sim_over_emu"], "%.3f"), r["errors"]))
    md = ["| case | size | simulated ms | emulated ms | sim / emu |", "|---|---|---|---|---|"]
    for r in rows:
        md.append("| %s | %s | %s | %s | %s |" % (r["case"], r["size"], fmt(r["sim_ms"]), fmt(r["emu_ms"]),
                                                 fmt(r["sim_over_emu"], "%.2f")))
    for s in sizes:
        for key in ("sim_ms", "emu_ms"):
            order = sorted((r for r in rows if r["size"] == s and r[key]), key=lambda r: r[key])
            md.append("- %s, %s ranking: %s" % (s, "simulated" if key == "sim_ms" else "emulated",
                                                " < ".join(r["case"] for r in order)))
    return md


def scale(a, out):
    hosts = [int(h) for h in a.hosts.split(",")]
    racks_of = {64: 8, 256: 16, 1024: 32}
    md, csv, series = [], ["hosts,racks,ina_racks,algorithm,time_ms,speedup,error"], {}
    for n in hosts:
        R = racks_of.get(n) or int(round(n ** 0.5))
        H = n // R
        # a run that has not finished after 20 s of simulated time (a 1 MiB
        # call takes under 2 s even at 1024 hosts) has collapsed
        base = ["--racks=%d" % R, "--hostsPerRack=%d" % H, "--size=" + a.size, "--hostRate=" + a.rate,
                "--inaSlots=%d" % a.slots, "--uplinkBuffer=256K", "--limitS=20",
                "--computeMs=10", "--jitter=normal:2", "--iterations=3", "--warmup=1"]
        ks = sorted({0, R // 4, R // 2, 3 * R // 4, R})
        cases = [("ring", ["--algorithm=ring"], None), ("hier", ["--algorithm=hier"], None)]
        for k in ks:
            cases.append(("ps-ina (sharded PS)", ["--algorithm=ps-ina", "--inaRacks=%d" % k], k))
            cases.append(("ps-ina (one PS)", ["--algorithm=ps-ina", "--inaRacks=%d" % k, "--psShards=1"], k))
            # agent-ring's window is its slots times its steps (up to 8):
            # 64 slots made 512 slices of 8 KiB per worker, and at 16 MiB,
            # 25G the 256K uplinks dropped 26 170 frames (516 ms a call
            # where 8 slots take 10.6); past 25G as many more as the rate
            # is (at 100G, 16 MiB, 256 hosts 8 slots took 8.63 ms, 32 6.99)
            cases.append(("agent-ring", ["--algorithm=agent-ring", "--inaRacks=%d" % k], k))
        aring_slots = min(a.slots, int(8 * max(1.0, rate_bps(a.rate) / 25e9)))
        aring_base = [x if not x.startswith("--inaSlots") else "--inaSlots=%d" % aring_slots for x in base]
        res = run_all(a.sim, [(aring_base if c[0] == "agent-ring" else base) + c[1] for c in cases], a.jobs)
        t = {(c[0], c[2]): r for c, r in zip(cases, res)}
        # the best algorithm without INA: ring, hier, or the sharded PS with no INA rack (ps)
        plain = [(name, t[key].get("time_ms")) for name, key in
                 (("ring", ("ring", None)), ("hier", ("hier", None)), ("ps", ("ps-ina (sharded PS)", 0)))
                 if t[key].get("time_ms") and not t[key].get("error")]
        best_name, best = min(plain, key=lambda x: x[1]) if plain else ("none", None)
        md.append("")
        md.append("**%d hosts** (%d racks of %d, %s, %s hosts, %d INA slots, agent-ring %d; best without INA: %s, %s ms)" %
                  (n, R, H, a.size, a.rate, a.slots, aring_slots, best_name, fmt(best)))
        md.append("")
        md.append("ring %s ms (%s), hier %s ms (%s); each cell: speed-up, ms per call and the busiest "
                  "link's transmit time per iteration (near the call's time: link-bound)" %
                  (fmt(t[("ring", None)].get("time_ms")), link_note(t[("ring", None)]),
                   fmt(t[("hier", None)].get("time_ms")), link_note(t[("hier", None)])))
        md.append("")
        md.append("| INA racks | " + " | ".join(("ps-ina (sharded PS)", "ps-ina (one PS)", "agent-ring")) + " |")
        md.append("|---|---|---|---|")
        for name in ("ring", "hier"):
            r = t[(name, None)]
            csv.append("%d,%d,,%s,%s,%s,%s" % (n, R, name, fmt(r.get("time_ms"), "%.2f"),
                                                fmt(best / r["time_ms"] if best and r.get("time_ms") else None, "%.3f"),
                                                r.get("error", "")))
        for k in ks:
            cells = []
            for name in ("ps-ina (sharded PS)", "ps-ina (one PS)", "agent-ring"):
                r = t[(name, k)]
                ms = r.get("time_ms") if not r.get("error") else None
                sp = best / ms if best and ms else None
                cells.append("%s× (%s ms; %s)" % (fmt(sp, "%.2f"), fmt(ms), link_note(r)) if ms else
                             "n/a: " + (r.get("error") or "no result")[:90])
                csv.append("%d,%d,%d,%s,%s,%s,%s" % (n, R, k, name, fmt(ms, "%.2f"), fmt(sp, "%.3f"),
                                                     (r.get("error") or "").replace(",", ";")))
                series.setdefault((n, name), []).append((100.0 * k / R, sp))
            md.append("| %d of %d (%d%%) | %s |" % (k, R, 100 * k // R, " | ".join(cells)))
        wall = sum(r.get("wall_s") or 0 for r in res)
        md.append("")
        md.append("(%d runs, %.0f s of simulator time in all)" % (len(res), wall))
    with open(os.path.join(out, "scale.csv"), "w") as f:
        f.write("\n".join(csv) + "\n")
    plot(out, "scale-speedup", "Speed-up over the best algorithm without INA, %s all-reduce" % a.size,
         "speed-up (x)", "racks with an INA ToR (%)",
         [("%s, %d hosts" % (name, n), pts) for (n, name), pts in sorted(series.items())],
         ref=(1, "as fast as the best without INA"))
    return md


def pacing(a, out):
    base = ["--racks=8", "--hostsPerRack=8", "--size=" + a.size, "--uplinkBuffer=256K", "--computeMs=100",
            "--jitter=normal:10", "--iterations=20", "--warmup=2"]
    # the pacing benchmark's 1.5x straggler leaves the others about 50 ms
    # early, under the rule's threshold (0.2 of the period): never paced
    # there; 2x is over it
    cases = [(alg + ", straggler %sx" % f, extra + ["--straggler=3:%s" % f, "--algorithm=" + alg], pace)
             for f in ("1.5", "2") for alg, extra in (("ring", []), ("ps-ina", ["--inaRacks=8"]), ("ps", []),
                                                      ("agent-ring", ["--inaRacks=8"]))
             for pace in (False, True)]
    seeds = [1, 2]
    res = run_all(a.sim, [base + ["--seed=%d" % s] + extra + (["--pace=true"] if pace else [])
                          for _, extra, pace in cases for s in seeds], a.jobs)
    md = ["| algorithm | CV plain → paced | iterations/s plain → paced | calls paced |", "|---|---|---|---|"]
    csv = ["algorithm,paced,iteration_cv,iterations_per_s,error"]
    agg = {}
    for i, (alg, _, pace) in enumerate(cases):
        r = res[i * len(seeds):(i + 1) * len(seeds)]
        cvs = mean([x.get("iteration_cv") for x in r if not x.get("error")])
        its = mean([1e3 / x["iteration_ms"] for x in r if not x.get("error") and x.get("iteration_ms")])
        agg[(alg, pace)] = (cvs, its, sum(x.get("paced_calls", 0) for x in r), sum(x.get("calls", 0) for x in r))
        csv.append("%s,%s,%s,%s,%s" % (alg, pace, fmt(cvs, "%.4f"), fmt(its, "%.3f"),
                                       ";".join(sorted({x["error"] for x in r if x.get("error")}))))
    for alg in dict.fromkeys(c[0] for c in cases):
        (c0, i0, _, _), (c1, i1, p1, n1) = agg[(alg, False)], agg[(alg, True)]
        md.append("| %s | %s → %s | %s → %s (%s) | %d of %d |" % (
            alg, fmt(c0, "%.3f"), fmt(c1, "%.3f"), fmt(i0, "%.2f"), fmt(i1, "%.2f"),
            fmt(i1 / i0 if i0 and i1 else None, "%.3f×"), p1, n1))
    with open(os.path.join(out, "pacing.csv"), "w") as f:
        f.write("\n".join(csv) + "\n")
    return md


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("studies", nargs="*", default=["crossval", "scale", "pacing"])
    ap.add_argument("-o", "--out", default="sim-study")
    ap.add_argument("--sim", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "../../build/testbed/sim/swemu-sim"))
    ap.add_argument("--emulated", help="an emulated trial's results.json (configs/trial.cfg) for crossval")
    ap.add_argument("--hosts", default="64,256,1024")
    ap.add_argument("--size", default="1M")
    ap.add_argument("--rate", default="200M", help="host links (scale), bit/s")
    ap.add_argument("--slots", type=int, default=8, help="INA slices in flight per rank (scale)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    a = ap.parse_args()
    for s in a.studies:
        if s not in ("crossval", "scale", "pacing"):
            ap.error("unknown study %s" % s)
    if not os.access(a.sim, os.X_OK):
        ap.error("no swemu-sim at %s (build with ns-3: testbed/setup.sh --sim)" % a.sim)
    os.makedirs(a.out, exist_ok=True)
    for s in a.studies:
        md = {"crossval": crossval, "scale": scale, "pacing": pacing}[s](a, a.out)
        with open(os.path.join(a.out, s + ".md"), "w") as f:
            f.write("\n".join(md) + "\n")
        print("\n".join(["## " + s] + md), flush=True)


if __name__ == "__main__":
    main()
