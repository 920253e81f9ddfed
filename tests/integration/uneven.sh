#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Racks of different sizes: a trial of two racks, of three hosts and two
# (hosts_per_rack = [3, 2], uplinks 2:1 from each rack's own hosts), every
# algorithm at 256 KiB through testbed/trial/trial.sh.  The testbed must be laid
# out so (host file, swemu's ports and uplink rates), every algorithm must
# end with every element right, and both INA ToRs must have aggregated
# ps-ina's and agent-ring's contributions (each with its rack's fan-in).
# The trial also captures tor1 whole, tor0's uplink and the spine's port to
# rack 1 (capture = [...]):
# the files hold those ports alone, cut at 128 bytes, and the report links
# them.
. "$(dirname "$0")/lib.sh"
command -v tshark >/dev/null || { echo "uneven: needs tshark (testbed/setup.sh --tests installs it)"; exit 77; }
out=$LOGDIR
cat > "$out/uneven.cfg" <<'T'
trial = {
  name = "uneven";
  racks = 2; hosts_per_rack = [3, 2]; ina_racks = "all";
  host_rate = "200M"; oversubscription = 2.0;
  compute_ms = 0; jitter = "";
  sizes = ["256K"]; iterations = 3; warmup = 1; repeats = 1;
  capture = ["tor1", "tor0.up", "spine.t1"];
};
T
"$top/testbed/trial/trial.sh" -c "$out/uneven.cfg" -o "$out/r" > "$out/log" 2>&1 || { tail -20 "$out/log"; fail "the trial failed"; }
$PY - "$out/r" "$top/tests/integration" <<'P'
import json, re, sys
sys.path.insert(0, sys.argv[2])
from trial_asserts import every_algorithm_exact
d = sys.argv[1]
res = json.load(open(d + "/results.json"))
t = res["trial"]
assert res["world"] == 5 and t["T_RACK_SIZES"] == "3,2" and t["T_UPLINK_RATE"] == "300M,200M", t
cfg = open(d + "/swemu.cfg").read()
# tor0 holds h0..h2, tor1 h3..h4; each uplink at its rack's rate
tors = {m.group(1): m.group(2) for m in re.finditer(r'name = "(tor\d)";(.*?)\); \}', cfg, re.S)}
assert re.findall(r'name = "(h\d)"', tors["tor0"]) == ["h0", "h1", "h2"], tors["tor0"]
assert re.findall(r'name = "(h\d)"', tors["tor1"]) == ["h3", "h4"], tors["tor1"]
assert re.search(r'name = "up";[^}]*rate = "300M"', tors["tor0"]) and re.search(r'name = "up";[^}]*rate = "200M"', tors["tor1"]), cfg
assert re.search(r'name = "t1";[^}]*rate = "200M"', cfg), cfg
every_algorithm_exact(res, "256K")
md = open(d + "/report.md").read()
assert md.count("2 racks (3 + 2 hosts) (INA racks: 0,1)") == 1 and "uplinks 300M, 200M" in md, md[:400]
# capture = [...]: tor1 whole, tor0 its uplink only, the spine its port t1; the report links them
assert "[capture/main/tor0.pcapng](capture/main/tor0.pcapng)" in md and "capture/main/tor1.pcapng" in md, md
import subprocess
for sw, want in (("tor0", {"tor0.up"}), ("tor1", {"tor1.h3", "tor1.h4", "tor1.up"}), ("spine", {"spine.t1"})):
    out = subprocess.run(["tshark", "-r", "%s/capture/main/%s.pcapng" % (d, sw), "-T", "fields", "-e",
                          "frame.interface_name", "-e", "frame.cap_len"], capture_output=True, text=True, check=True)
    rows = [l.split("\t") for l in out.stdout.splitlines()]
    assert rows and {r[0] for r in rows} == want, (sw, {r[0] for r in rows})
    assert max(int(r[1]) for r in rows) <= 128, sw  # the trial's snaplen
print("uneven: " + ", ".join("%s %.1f ms" % (a, res["results"][a]["256K"]["time_us"] / 1e3) for a in res["results"]))
P
echo "uneven racks: 3 + 2 hosts laid out, every algorithm exact, both ToRs aggregated"
