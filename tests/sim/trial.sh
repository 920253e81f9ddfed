#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A trial file with engine = "sim" through testbed/trial/trial.sh: every run is a
# swemu-sim process, and the report is the testbed's.  Checked against the
# simulator's own outputs: each run's time per call is the one its JSON
# gave, each repeat ran with its own seed, the sweep ran the INA racks it
# names, the answer names the fastest INA and non-INA algorithms, and a
# run the simulator fails is reported as failed.  No root needed.
#   SIM=build/testbed/sim/swemu-sim TRIAL_CFG=build/testbed/trial/swemu-trial-cfg tests/sim/trial.sh
set -euo pipefail
: "${SIM:?}" "${TRIAL_CFG:?}"
export SIM TRIAL_CFG
top=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d /tmp/swemu-sim-trial.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
cat > "$scratch/t.cfg" <<'T'
trial = {
  engine = "sim";
  name = "simcheck";
  racks = 2;
  hosts_per_rack = 2;
  ina_racks = "sweep";
  sweep_order = [1, 0];
  uplink_buffer = "256K";
  compute_ms = 2.0;
  jitter = "normal:0.5";
  sizes = ["256K"];
  iterations = 2;
  warmup = 1;
  repeats = 2;
  ina_cc = true;
};
T
"$top/testbed/trial/trial.sh" -c "$scratch/t.cfg" -o "$scratch/out" > "$scratch/log" 2>&1 ||
	{ cat "$scratch/log"; echo "not ok: the simulated trial failed" >&2; exit 1; }
/usr/bin/python3 - "$scratch/out" <<'PY'
import glob, json, os, re, sys
out = sys.argv[1]
res = json.load(open(os.path.join(out, "results.json")))
algos = ["ring", "hier", "ps", "ps-ina", "agent-ring"]
def sim(d):
    return json.load(open(os.path.join(out, d, "sim.json")))
for a in algos:
    r = res["results"][a]["256K"]
    assert "error" not in r and r["wrong"] == 0, (a, r.get("error"))
    times = [sim("runs/%s-256K%s" % (a, s))["time_ms"] * 1e3 for s in ("", "@2")]
    # the report's figures are the simulator's, repeat by repeat
    assert r["repeats"] == times, (a, r["repeats"], times)
    assert abs(r["busbw_gbs"] - 262144 / r["time_us"] / 1e3 * 2 * 3 / 4) < 1e-9
    seeds = [re.search(r"--seed=(\d+)", open(os.path.join(out, "runs", d, "command")).read()).group(1)
             for d in ("%s-256K" % a, "%s-256K@2" % a)]
    assert seeds == ["1", "2"], (a, seeds)
    # ina_cc = true: the INA windows follow the marks
    assert "--inaCc=true" in open(os.path.join(out, "runs", "%s-256K" % a, "command")).read(), a
# the sweep: no INA rack, then rack 1 alone (sweep_order), as the simulator ran them
for k, want in ((0, 0), (1, 1)):
    for a in ("ps-ina", "agent-ring"):
        j = sim("sweep/k%d/%s-256K" % (k, a))
        assert j["ina_racks"] == want, (k, a, j["ina_racks"])
        cmd = open(os.path.join(out, "sweep/k%d/%s-256K/command" % (k, a))).read()
        assert ("--inaRackList=" + ("none" if k == 0 else "1")) in cmd, cmd
pts = res["sweep"]["256K"]["ps-ina"]
assert [p["racks"] for p in pts] == [0, 1, 2], pts
# the answer: the fastest of each side, by the mean over repeats
mean = {a: sum(res["results"][a]["256K"]["repeats"]) / 2 for a in algos}
ina = min(("ps-ina", "agent-ring"), key=mean.get)
base = min(("ring", "hier", "ps"), key=mean.get)
report = open(os.path.join(out, "report.md")).read()
assert "simulated in ns-3" in report
line = next(l for l in report.splitlines() if l.startswith("- 256K: with INA"))
assert ("with INA, %s takes" % ina) in line and ("without, %s takes" % base) in line, line
print("# answer:", line)
PY
# a run the simulator fails: 256 workers' 256 KiB into one PS's 100M
# link need 5.4 s a call, past the 1 s timeout_ms gives it.  Reported as
# failed with the simulator's reason; the ring beside it still measured.
cat > "$scratch/f.cfg" <<'T'
trial = {
  engine = "sim";
  racks = 2;
  hosts_per_rack = 128;
  ina_racks = "none";
  host_rate = "100M";
  algorithms = ["ring", "ps"];
  sizes = ["256K"];
  ps_shards = 1;
  iterations = 1;
  warmup = 0;
  repeats = 1;
  timeout_ms = 1000;
};
T
"$top/testbed/trial/trial.sh" -c "$scratch/f.cfg" -o "$scratch/f" > "$scratch/flog" 2>&1 ||
	{ cat "$scratch/flog"; echo "not ok: a trial with a failing run did not finish" >&2; exit 1; }
/usr/bin/python3 - "$scratch/f" <<'PY'
import json, os, sys
res = json.load(open(os.path.join(sys.argv[1], "results.json")))["results"]
assert res["ring"]["256K"].get("time_us"), res["ring"]["256K"]
err = res["ps"]["256K"].get("error", "")
assert "did not finish in 1 s" in err, res["ps"]["256K"]
assert ("| ps | 256K | failed: " + err[:40]) in open(os.path.join(sys.argv[1], "report.md")).read()
print("# failed as expected:", err)
PY
echo "ok: a simulated trial reports the simulator's figures, seeds, sweep and answer"
