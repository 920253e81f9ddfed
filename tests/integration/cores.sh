#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The testbed uses the cores it has (topo.sh's core plan): planned for 16
# cores, two racks and a spine get an lcore each (one swemu, or a process
# each) and the ranks the other 13 cores; on 2 cores everything stays on
# lcore 0 with the ranks unpinned.  Then, on this machine, the plan's
# mechanism end to end: switches on two lcores (swemu's stats say which
# lcore runs which switch) and ranks pinned by launch.sh to the CPU set
# apart for them, running ps-ina through both lcores with exact results,
# the hosts' receive path steered to that CPU set (RPS) and off swemu's.
. "$(dirname "$0")/lib.sh"
d=/run/swemu-testbed
rps_of() { ip netns exec "$1" cat /sys/class/net/eth0/queues/rx-0/rps_cpus | tr -d ',' | sed 's/^0*\(.\)/\1/'; }
plan() { # NAME EXPECTED-EAL-LCORES EXPECTED-RANK-CPUS topo.sh-options...
	local name=$1 want_l=$2 want_r=$3 got
	shift 3
	TOPO_NAME=$name
	"$top/testbed/topo/topo.sh" up "$name" 4 --racks 2 "$@" > /dev/null
	got=$(cat "$d/$name"/eal*.args | grep -o -- '-l [0-9,]*' | awk '{print $2}' | tr '\n' ' ')
	[ "$got" = "$want_l" ] || fail "$*: lcores '$got', want '$want_l'"
	got=$(cat "$d/$name/rank_cpus" 2>/dev/null || true)
	[ "$got" = "$want_r" ] || fail "$*: rank CPUs '$got', want '$want_r'"
	# no rank CPUs, no RPS (a plan for 16 cores keeps only the CPUs this
	# machine has: the mechanism below checks the mask)
	[ -n "$want_r" ] || [ "$(rps_of "$name-h0")" = 0 ] || fail "$*: RPS $(rps_of "$name-h0") without rank CPUs"
	"$top/testbed/topo/topo.sh" down "$name"
	TOPO_NAME=""
}
plan cp16 "0,1,2 " 3-15 --cores 16
# a process each: the spine's file sorts first (eal.spine, eal.tor0, eal.tor1)
plan cq16 "2 0 1 " 3-15 --cores 16 --processes
plan cp4 "0,1 " 2-3 --cores 4
plan cp2 "0 " "" --cores 2
plan cq2 "0 0 1 " "" --cores 2 --processes
echo "cores: the plans for 16, 4 and 2 cores as documented"

# the mechanism on this machine: tor0 and the spine on lcore 0, tor1 on
# lcore 1 (switches dealt over EAL's lcores in config order), ranks on CPU 1
topo cores 4 --racks 2 --rate 1G --lcores 0,1 --rank-cpus 1
got=$(stats | $PY -c "import json,sys; print(' '.join('%d:%s' % (w['lcore'], ','.join(w['switches'])) for w in json.load(sys.stdin)['workers']))")
[ "$got" = "0:tor0,spine 1:tor1" ] || fail "swemu's lcores run '$got', want '0:tor0,spine 1:tor1'"
out=$("$top/testbed/topo/launch.sh" cores -- sh -c 'grep Cpus_allowed_list /proc/self/status')
[[ "$out" == *"Cpus_allowed_list:"*"1" ]] || fail "rank 0 runs on '$out', want CPU 1"
for i in 1 2 3; do
	grep -q "Cpus_allowed_list:.*1$" "$d/cores/rank-$i.log" || fail "rank $i: $(cat "$d/cores/rank-$i.log")"
done
for i in 0 1 2 3; do
	[ "$(rps_of "cores-h$i")" = 2 ] || fail "host $i's receive path on CPUs $(rps_of "cores-h$i"), want 2 (CPU 1)"
done
before=$(stats)
out=$("$top/testbed/topo/launch.sh" cores -- "${PERF:-$top/build/ring/ina-allreduce-perf}" --algo ps-ina -b 256K -e 256K -n 3 -w 1 -c 1)
grep -qE "^ +262144 .* 0 *$" <<<"$out" || fail "ps-ina through two lcores: $out"
$PY - "$before" "$(stats)" <<'P'
import json, sys
b, a = (json.loads(x) for x in sys.argv[1:3])
for w0, w1 in zip(b["workers"], a["workers"]):
    # both lcores' loops ran and were counted (busy_ns, run_ns: trial_load.py)
    assert w1["run_ns"] > w0["run_ns"] and w1["busy_ns"] > w0["busy_ns"], (w0, w1)
acc = {s: a["switches"][s]["ina"]["accepted"] - b["switches"][s]["ina"]["accepted"] for s in ("tor0", "tor1")}
assert all(v > 0 for v in acc.values()), acc
print("cores: ps-ina aggregated in tor0 (lcore 0) and tor1 (lcore 1): %s" % acc)
P
echo "cores: switches spread over lcores, ranks pinned apart"
