#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Hostile packets at the switch (truncated, wrong version, unknown job,
# non-member source, slot out of range, oversize counts, bad UDP and IP
# checksums): each is dropped under its own counter, exactly as many as were
# sent, while an aggregation and a ping run through the same switch.
. "$(dirname "$0")/lib.sh"
topo itbad 4 --subnet 10.80.0
install_job 1 3 int32 10.80.0 >/dev/null || fail "install job"
before=$(stats)

# the path is resolved (ARP, the switch's FDB) before the blast, so that a
# lost ping is forwarding disturbed by it
in_host 3 ping -c 1 -W 2 10.80.0.1 >/dev/null || fail "no ping before the hostile traffic"
run_workers 1 3 10.80.0 --slices 400 --count 1024 --slots 8 > $LOGDIR/bad-workers.log 2>&1 &
workers=$!
in_host 3 ping -c 50 -i 0.02 -W 2 10.80.0.1 > $LOGDIR/bad-ping.log 2>&1 &
pinger=$!
sent=$(in_host 3 $PY "$top/tests/integration/hostile.py" eth0 10.80.0.4 02:5e:00:00:00:04 10.80.0.254 02:5e:00:00:00:fe 1 25)
wait $workers || { cat $LOGDIR/bad-workers.log; fail "aggregation beside hostile traffic"; }
wait $pinger || { cat $LOGDIR/bad-ping.log; fail "ping beside hostile traffic"; }
if ! grep -q " 0% packet loss" $LOGDIR/bad-ping.log; then
	for h in 0 3; do
		echo "--- host $h" >&2
		in_host $h ip -s link show eth0 >&2
		in_host $h ip neigh >&2
	done
	fail "ping lost packets: $(tail -2 $LOGDIR/bad-ping.log)"
fi

after=$(stats)
$PY - "$sent" "$before" "$after" <<'PY' || fail "drop counters"
import json, sys
sent, before, after = (json.loads(a) for a in sys.argv[1:4])
def counters(d):
    sw = d["switches"]["tor0"]
    c = dict(sw["ina"]["drops"])
    for p in sw["ports"].values():
        for k, v in p["drops"].items():
            c[k] = c.get(k, 0) + v
    return c
b, a = counters(before), counters(after)
bad = []
for kind, n in sent.items():
    got = a.get(kind, 0) - b.get(kind, 0)
    print(f"  {kind:20s} sent {n:3d}  counted {got:3d}")
    if got != n:
        bad.append(kind)
sys.exit(1 if bad else 0)
PY
echo "hostile: every kind dropped under its own counter; aggregation exact and ping clean meanwhile"
