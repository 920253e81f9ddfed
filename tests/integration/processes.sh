#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One swemu process per switch (processes = true): a trial of two racks of
# two hosts, each ToR and the spine its own swemu with its own config, EAL
# file prefix and stats, the uplinks veth pairs between them.  Every
# algorithm must end exact, both INA ToRs must have aggregated ps-ina's and
# agent-ring's contributions (counters merged from the three processes,
# each in a namespace of its own),
# a capture of the spine (its own process) must hold frames, and nothing
# may be left behind: processes, veths, DPDK runtime directories.
. "$(dirname "$0")/lib.sh"
out=$LOGDIR
cat > "$out/processes.cfg" <<'T'
trial = {
  name = "processes";
  racks = 2; hosts_per_rack = 2; ina_racks = "all";
  processes = true;
  host_rate = "200M"; oversubscription = 2.0;
  compute_ms = 0; jitter = "";
  sizes = ["256K"]; iterations = 3; warmup = 1; repeats = 1;
  capture = ["spine.t1"];
};
T
"$top/testbed/trial/trial.sh" -c "$out/processes.cfg" -o "$out/r" > "$out/log" 2>&1 || {
	tail -20 "$out/log"
	fail "the trial failed"
}
$PY - "$out/r" "$top/tests/integration" <<'P'
import json, os, re, sys
sys.path.insert(0, sys.argv[2])
from trial_asserts import every_algorithm_exact
d = sys.argv[1]
res = json.load(open(d + "/results.json"))
assert res["trial"]["T_PROCESSES"] == "1", res["trial"]
# a config per switch: the uplinks are devices on veths, not in-memory links
for sw in ("tor0", "tor1", "spine"):
    cfg = open("%s/swemu.%s.cfg" % (d, sw)).read()
    assert cfg.count("{ name = ") >= 2 and 'name = "%s"' % sw and "link = " not in cfg, cfg
    assert 'stats_file = "' in cfg and ("stats.%s.json" % sw) in cfg, cfg
assert re.search(r'name = "up"; dev = "net_af_packetu0"', open(d + "/swemu.tor0.cfg").read())
assert re.search(r'name = "t1"; dev = "net_af_packett1"', open(d + "/swemu.spine.cfg").read())
every_algorithm_exact(res, "256K")
md = open(d + "/report.md").read()
assert "af_packet ports, a swemu process per switch" in md, md[:600]
print("processes: " + ", ".join("%s %.1f ms" % (a, res["results"][a]["256K"]["time_us"] / 1e3) for a in res["results"]))
P
command -v tshark >/dev/null && {
	n=$(tshark -r "$out/r/capture/main/spine.pcapng" 2>/dev/null | wc -l)
	((n > 0)) || fail "the spine's process captured nothing"
}
! pgrep -f -- '--file-prefix swemu-trial[0-9]' >/dev/null || fail "swemu processes left running: $(pgrep -af swemu-trial)"
! ip -o link show | grep -qE 'trial[0-9]-[sut][0-9]' || fail "veths left behind: $(ip -o link show | grep trial)"
! ip netns list | grep -qE '^trial[0-9]-(h[0-9]+|tor[0-9]+|spine)' || fail "namespaces left behind: $(ip netns list)"
! ls -d /var/run/dpdk/swemu-trial* 2>/dev/null || fail "DPDK runtime directories left behind"
echo "processes: a swemu per switch, every algorithm exact, both ToRs aggregated, nothing left behind"
