#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job, fast: the default trial (configs/trial.cfg) with --fast
# through testbed/trial/trial.sh.  The report must name every algorithm with a
# result and no wrong element, its byte counts must agree with swemu's
# counters and with what each algorithm must move, plots must exist; and a
# broken trial file must fail with file:line before anything is built,
# leaving no namespace, veth or swemu behind; two trials run at once.
# The default trial sweeps
# the deployment (0, 1, 2 INA racks): its curve, costs and plot.
. "$(dirname "$0")/lib.sh"
out=$LOGDIR
trap 'rc=$?; rm -rf "$out"; exit $rc' EXIT
"$top/testbed/trial/trial.sh" --fast -o "$out/r" > "$out/log" 2>&1 || { tail -20 "$out/log"; fail "the default trial failed"; }
# --fast: two repeats, the second in the reverse order; then the sweep's
# 8 runs of ps-ina and agent-ring with no INA rack and with rack 1
grep -q '^\[5/18\] agent-ring .*repeat 1/2' "$out/log" && grep -q '^\[10/18\] ring .*repeat 2/2' "$out/log" &&
	grep -q '^\[18/18\] .*repeat 2/2' "$out/log" || fail "no progress lines: $(grep '^\[' "$out/log")"
[ "$(cat "$out/r/sweep/k0/ina_racks")" = none ] && [ "$(cat "$out/r/sweep/k1/ina_racks")" = 1 ] ||
	fail "sweep: deployments $(cat "$out"/r/sweep/k*/ina_racks)"
$PY - "$out/r" <<'P'
import json, sys, os
d = sys.argv[1]
res = json.load(open(d + "/results.json"))
world = res["world"]
algos = res["trial"]["T_ALGOS"].split()
assert algos == ["ring", "hier", "ps", "ps-ina", "agent-ring"], algos
md = open(d + "/report.md").read()
for a in algos:
    r = res["results"][a]["256K"]
    assert r.get("rc") == 0 and "time_us" in r, "%s: %s" % (a, r.get("error"))
    assert r["wrong"] == 0, "%s: %d wrong elements" % (a, r["wrong"])
    assert "| %s | 256K |" % a in md, "%s missing from report.md" % a
    nb, calls = r["bytes"], 1 + 3 + 2
    # a ring all-reduce sends 2(N-1)/N of the message from every host, every call
    host_tx = [v["rx_bytes"] for k, v in r["links"].items() if ".h" in k]
    assert len(host_tx) == world, r["links"].keys()
    if a == "ring":
        need = 2 * (world - 1) / world * nb * (calls - 1)
        assert min(host_tx) >= need, "ring: a host sent %d bytes, the algorithm needs %d" % (min(host_tx), need)
    # swemu's counters: what the hosts sent came in on the ToRs' host ports
    assert sum(host_tx) >= nb * (calls - 1), "%s: hosts sent only %d bytes" % (a, sum(host_tx))
    # the timing traces of every rank are there and agree with perf's time
    tm = r["timing"]
    assert tm["ranks"] == world and tm["iterations"] == 3, tm
    assert 0.3 < tm["mean_us"] / r["time_us"] < 3, "%s: trace %.0f us vs perf %.0f us" % (a, tm["mean_us"], r["time_us"])
    assert abs(sum(tm["shares"].values()) - 1) < 1e-6
    # with 10 ms of compute per iteration the all-reduce's time excludes it
    comp = r["iteration_us"] - r["time_us"]
    assert 6000 < comp < 14000, "%s: iteration %.0f us, call %.0f us" % (a, r["iteration_us"], r["time_us"])
# the answer: the best INA algorithm against the best one without INA
import re
m = re.search(r"^- 256K: with INA, (ps-ina|agent-ring) takes ([0-9.]+) ms per all-reduce; without, (ring|hier|ps) "
              r"takes ([0-9.]+) ms: (\*\*([0-9.]+)× (faster|slower) with INA\*\* \(speed-up |\*\*no difference "
              r"measured\*\*: [0-9.]+× \()95% CI [0-9.]+–[0-9.]+ over 2 repeats\)", md, re.M)
assert "## The answer" in md and m, "no answer in report.md: %s" % md[md.find("## The answer"):][:600]
assert "Run-to-run spread measured here" in md
# the times of the answer: means over both repeats
avg = lambda a: sum(res["results"][a]["256K"]["repeats"]) / 2
best = lambda names: min(avg(a) for a in names) / 1e3
assert abs(float(m.group(2)) - best(["ps-ina", "agent-ring"])) < 0.1, m.group(0)
assert abs(float(m.group(4)) - best(["ring", "hier", "ps"])) < 0.1, m.group(0)
# INA did its part: both ToRs (INA-capable in the main runs) aggregated for ps-ina and agent-ring
for a in ("ps-ina", "agent-ring"):
    ina = res["results"][a]["256K"]["ina"]
    for tor in ("tor0", "tor1"):
        assert any(k.startswith(tor + " ") and v > 0 for k, v in ina.items()), "%s: %s counted no INA work: %s" % (a, tor, ina)
# the sweep: with rack 1 upgraded only tor1 aggregated, with none neither;
# the curve has a point for 0, 1 and 2 racks with its hardware cost
def accepted(run, tor):
    a, b = (json.load(open(os.path.join(run, f)))["switches"][tor] for f in ("stats-after.json", "stats-before.json"))
    return a.get("ina", {}).get("accepted", 0) - b.get("ina", {}).get("accepted", 0)
for a in ("ps-ina", "agent-ring"):
    k1, k0 = d + "/sweep/k1/%s-256K" % a, d + "/sweep/k0/%s-256K" % a
    assert accepted(k1, "tor1") > 0 and accepted(k1, "tor0") == 0, "%s k1: %d %d" % (a, accepted(k1, "tor1"), accepted(k1, "tor0"))
    assert accepted(k0, "tor1") == 0 and accepted(k0, "tor0") == 0, a
    pts = res["sweep"]["256K"][a]
    assert [p["racks"] for p in pts] == [0, 1, 2] and all("error" not in p and p["speedup"] > 0 for p in pts), pts
    assert [p["ina_racks"] for p in pts] == [[], ["1"], ["1", "0"]], pts
    assert pts[0]["cost"] == 8 * 25000 + 2 * 12000 and pts[2]["cost"] == 8 * 25000 + 2 * 30000, pts
assert "## Deployment curve" in md and "- 256K: upgrading 1 of 2 racks gives " in md, md[md.find("## Deploy"):][:800]
# the hosts' side, from every rank's trace: INA clients sent only for the
# algorithms that have them, and the software PS took ps's slices
assert "## The hosts' side" in md
for a in algos:
    h = res["results"][a]["256K"]["timing"]["host"]
    assert (h["ina_sent"] > 0) == (a in ("ps", "ps-ina", "agent-ring")), "%s: %s" % (a, h)
assert res["results"]["ps"]["256K"]["timing"]["host"]["agg_accepted"] > 0
# ps is a baseline: no switch aggregates for it
assert not any(v > 0 and k.endswith(" accepted") for k, v in res["results"]["ps"]["256K"]["ina"].items()), "ps used INA"
for p in ("throughput", "itertime", "links", "sweep"):
    f = "%s/plots/%s.png" % (d, p)
    assert os.path.getsize(f) > 1000 and open(f, "rb").read(4) == b"\x89PNG", f
for f in ("trial.cfg", "machine.txt"):
    assert os.path.getsize(d + "/" + f) > 0, f
print("trial: 5 algorithms, report, results.json and plots consistent with swemu's counters; the sweep's deployments and curve")
P
# a broken trial file: file:line, exit 2, nothing built or left behind
printf 'trial = {\n  racks = 2;\n  sizes = ["4M", "lots"];\n};\n' > "$out/bad.cfg"
rc=0
err=$("$top/testbed/trial/trial.sh" -c "$out/bad.cfg" -o "$out/bad" 2>&1) || rc=$?
[ $rc = 2 ] || fail "bad trial file: exit $rc, want 2: $err"
grep -q "^$out/bad.cfg:3: size lots" <<<"$err" || fail "bad trial file: no file:line: $err"
[ ! -e "$out/bad" ] || fail "bad trial file: a report directory was made"
! ip netns list | grep -q '^trial[0-9]-' || fail "namespaces left behind: $(ip netns list)"
! ip link show | grep -q 'trial[0-9]-s' || fail "veths left behind"
! pgrep -f 'swemu-trial[0-9]' >/dev/null || fail "swemu left running"
! ls -d /run/swemu-testbed/trial[0-9] /run/swemu-testbed/.trial-slots/[0-9] 2>/dev/null || fail "testbed state left behind"
echo "trial: a broken trial file fails with file:line and leaves nothing behind"
# two trials at once: each its own testbed slot (topology name, subnet),
# both reports right; a slot whose owner died is taken over; their racks'
# host links at different rates
mkdir -p /run/swemu-testbed/.trial-slots/0 && echo 999999 > /run/swemu-testbed/.trial-slots/0/pid
printf 'trial = {\n  racks = 2;\n  hosts_per_rack = 1;\n  algorithms = ["ring", "ps-ina"];\n  sizes = ["64K"];\n  iterations = 3;\n  repeats = 1;\n  compute_ms = 0.0;\n  jitter = "";\n  rack_host_rates = ["200M", "100M"];\n};\n' > "$out/two.cfg"
"$top/testbed/trial/trial.sh" -c "$out/two.cfg" -o "$out/two-a" > "$out/two-a.log" 2>&1 &
pa=$!
"$top/testbed/trial/trial.sh" -c "$out/two.cfg" -o "$out/two-b" > "$out/two-b.log" 2>&1 || fail "second of two trials: $(tail -5 "$out/two-b.log")"
wait $pa || fail "first of two trials: $(tail -5 "$out/two-a.log")"
ta=$(sed -n 's/^T_TOPOLOGY=//p' "$out/two-a/trial.env") tb=$(sed -n 's/^T_TOPOLOGY=//p' "$out/two-b/trial.env")
[ -n "$ta" ] && [ -n "$tb" ] && [ "$ta" != "$tb" ] || fail "two trials, topologies '$ta' and '$tb'"
[[ "$ta $tb" == *trial0* ]] || fail "the dead owner's slot 0 was not taken over: $ta $tb"
# rack 1, an older rack: its host link at 100M both ways, rack 0's at 200M
grep -q '{ name = "h1"; dev = "net_af_packet1"; rate = "100M"; }' "$out/two-a/swemu.cfg" &&
	grep -q '{ name = "h0"; dev = "net_af_packet0"; rate = "200M"; }' "$out/two-a/swemu.cfg" ||
	fail "per-rack rates not in the switch: $(grep 'name = "h' "$out/two-a/swemu.cfg")"
grep -q 'host links per rack 200M, 100M' "$out/two-a/report.md" || fail "per-rack rates not in the report"

for r in two-a two-b; do
	grep -q '^| ps-ina | 64K | [0-9.]* | [0-9.]* |.* | 0 |$' "$out/$r/report.md" || fail "$r: no ps-ina result: $(grep '^| ps-ina' "$out/$r/report.md")"
done
! ls -d /run/swemu-testbed/trial[0-9] /run/swemu-testbed/.trial-slots/[0-9] 2>/dev/null || fail "two trials: state left behind"
echo "trial: two at once in slots $ta and $tb, both reports right, nothing left behind"
# stopped in the middle of a long run (SIGTERM, as a batch system stops a
# job): out within seconds, not when the run's 200 calls end (about 70 s;
# bash runs a trap only after its foreground command), nothing left behind
printf 'trial = {\n  algorithms = ["ring"];\n  sizes = ["4M"];\n  iterations = 200;\n  compute_ms = 0.0;\n};\n' > "$out/long.cfg"
"$top/testbed/trial/trial.sh" -c "$out/long.cfg" -o "$out/stopped" > "$out/stopped.log" 2>&1 &
pid=$!
for ((i = 0; i < 300; i++)); do # until its ranks run (30 s at most)
	pgrep -f 'ina-allreduce-perf --only in --algo ring' >/dev/null && break
	kill -0 $pid 2>/dev/null || fail "the trial to stop ended early: $(tail -3 "$out/stopped.log")"
	sleep 0.1
done
pgrep -f 'ina-allreduce-perf --only in --algo ring' >/dev/null || fail "the trial to stop did not start its run"
t0=$SECONDS
kill -TERM $pid
rc=0
wait $pid || rc=$?
[ $rc = 130 ] || fail "stopped trial: exit $rc, want 130"
((SECONDS - t0 <= 10)) || fail "stopped trial took $((SECONDS - t0)) s to stop"
! ip netns list | grep -q '^trial[0-9]-' || fail "stopped trial: namespaces left behind: $(ip netns list)"
! ip link show | grep -q 'trial[0-9]-s' || fail "stopped trial: veths left behind"
! pgrep -f 'swemu-trial[0-9]|ina-allreduce-perf' >/dev/null || fail "stopped trial: processes left running"
! ls -d /run/swemu-testbed/trial[0-9] /run/swemu-testbed/.trial-slots/[0-9] 2>/dev/null ||
	fail "stopped trial: testbed state left behind"
echo "trial: stopped by SIGTERM during a run, out in $((SECONDS - t0)) s with nothing left behind"
