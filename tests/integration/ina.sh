#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Aggregation of fan-in 4 through the real switch: exact int32 sums, fp32
# sums and bf16 sums (2-byte elements on the wire), then int32 with 5%
# emulated loss on every port; the counters' Prometheus file against the
# JSON.
. "$(dirname "$0")/lib.sh"
topo itina 4 --subnet 10.79.0
install_job 1 4 int32 10.79.0 >/dev/null || fail "install job 1"
install_job 2 4 fp32 10.79.0 >/dev/null || fail "install job 2"
install_job 4 4 bf16 10.79.0 >/dev/null || fail "install job 4"
run_workers 1 4 10.79.0 --slices 300 --count 1024 --slots 16 || fail "int32 aggregation"
run_workers 2 4 10.79.0 --slices 100 --count 1024 --slots 16 --dtype fp32 || fail "fp32 aggregation"
run_workers 4 4 10.79.0 --slices 100 --count 1024 --slots 16 --dtype bf16 || fail "bf16 aggregation"
[ "$(stats_get 'd["switches"]["tor0"]["ina"]["jobs"]["4"]["completions"]')" = 100 ] || fail "job 4 completions"
[ "$(stats_get 'd["switches"]["tor0"]["ina"]["jobs"]["1"]["contributions"]')" = 1200 ] || fail "job 1 contributions"
[ "$(stats_get 'd["switches"]["tor0"]["ina"]["jobs"]["1"]["completions"]')" = 300 ] || fail "job 1 completions"
# the control channel's answers: a refused command (nothing to remove) is
# answered and counted as refused, not as a dropped packet; one that does
# not parse is answered and dropped as ctrl_bad
ans=$(in_host 0 "$top/testbed/topo/swemu-ctl" 10.79.0.254 'op = "remove"; id = 77;') && fail "remove of no job: ok?"
[[ "$ans" == *"no job with this id"* ]] || fail "remove of no job answered '$ans'"
ans=$(in_host 0 "$top/testbed/topo/swemu-ctl" --raw 10.79.0.254 'op = "frobnicate";') && fail "unknown op: ok?"
[[ "$ans" == error:* ]] || fail "unknown op answered '$ans'"
[ "$(stats_get 'd["switches"]["tor0"]["ctrl_refused"]')" = 1 ] || fail "ctrl_refused: $(stats)"
[ "$(stats_get 'd["switches"]["tor0"]["ports"]["h0"]["drops"]["ctrl_bad"]')" = 1 ] || fail "ctrl_bad: $(stats)"
"$top/testbed/topo/topo.sh" down itina

# 5% loss on every egress port of the switch: hosts retransmit, sums stay exact
topo itina 4 --subnet 10.79.0 --loss 0.05
install_job 3 4 int32 10.79.0 >/dev/null || fail "install job 3 under loss" # re-sent until answered
run_workers 3 4 10.79.0 --slices 300 --count 1024 --slots 16 --timeout-ms 10 || fail "int32 aggregation under 5% loss"
lost=$(stats_get 'sum(p["drops"]["emulated_loss"] for p in d["switches"]["tor0"]["ports"].values())')
retx=$(stats_get 'd["switches"]["tor0"]["ina"]["jobs"]["3"]["retransmits"]')
contrib=$(stats_get 'd["switches"]["tor0"]["ina"]["jobs"]["3"]["contributions"]')
((lost > 0)) || fail "no emulated loss counted"
((retx > 0)) || fail "no retransmission answered"
[ "$contrib" = 1200 ] || fail "job 3: $contrib contributions, want exactly 1200"
# the Prometheus file (written just before the JSON) says the same, in
# the text exposition format
stats > "$LOGDIR/stats.json"
prom=$($PY "$top/tests/integration/prom_check.py" /run/swemu-testbed/itina/stats.prom "$LOGDIR/stats.json") ||
	fail "$prom"

# a pid file that outlived its swemu: neither stats nor down signal the
# process that now has that pid
bystander=""
trap 'rc=$?; [ -z "$bystander" ] || kill "$bystander" 2>/dev/null; (exit $rc); cleanup' EXIT
pid=$(cat /run/swemu-testbed/itina/swemu.pid)
kill -TERM "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done # polls: swemu exits within its 1 s grace
sleep 300 &
bystander=$!
echo "$bystander" > /run/swemu-testbed/itina/swemu.pid
ans=$("$top/testbed/topo/topo.sh" stats itina 2>&1) && fail "stats of a stale pid file: ok?"
[[ "$ans" == *"no swemu of topology itina is running"* ]] || fail "stats of a stale pid file said '$ans'"
"$top/testbed/topo/topo.sh" down itina
TOPO_NAME=""
kill -0 "$bystander" || fail "topo.sh down signalled a process that is not its swemu"
echo "ina: fan-in 4 int32, fp32 and bf16 exact; control refusals answered and counted; under 5% loss exact with $lost packets lost, $retx retransmissions answered; $prom"
