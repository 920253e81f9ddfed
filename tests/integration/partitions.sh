#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A ToR on two lcores in the testbed (topo.sh --partitions 2): af_xdp on
# two-queue veths, a device per partition on each, and the hosts' BPF
# program steering each INA port to its partition's queue; planned for 16
# cores, an lcore per partition and the ranks apart.  ps-ina (its
# slots spread over the 16 INA ports) is exact and aggregated in both
# partitions with nothing missteered, and so is agent-ring with one
# member (plain SwitchML: its workers spread too); the ring between hosts
# is exact through them.  One emulated rate holds for a port whatever partition
# sends: two hosts send to h0 on ports that steer to partitions 0 and 1,
# each at the host rate, and h0's port carries no more than that rate in
# all (a line per partition would carry twice it); the same after an
# "emu" command lowers it, which every partition takes at once.  Two
# racks, every switch in two partitions joined by in-memory links that
# steer by UDP port as the hosts do: agent-ring (the two ToRs forward and
# acknowledge each slot at its port of the other), ps-ina (a software PS
# above the ToRs answers each partial at its port) and the ring exact,
# every ToR partition aggregating, nothing missteered, both spine
# partitions forwarding.  Last, a trial file's tor_partitions: the
# runner's switches in two partitions, every algorithm exact, its report
# counting each link once (the partitions' bytes summed: a ring host
# sends its share through both).
. "$(dirname "$0")/lib.sh"
[ -f "$top/build/testbed/topo/steer_udp.bpf.o" ] ||
	{ echo "partitions: no steering program (clang's BPF target, libbpf-dev): skipped"; exit 77; }
(($(nproc) >= 2)) || { echo "partitions: one CPU, two lcores needed: skipped"; exit 77; }
perf=${PERF:-$top/build/ring/ina-allreduce-perf}
sub=10.94.0
# the core plan for 16 cores: a partition per lcore, the ranks apart; with
# two racks, 3 switches of 2 partitions
TOPO_NAME=itpcp
"$top/testbed/topo/topo.sh" up itpcp 4 --subnet $sub --pmd af_xdp --partitions 2 --cores 16 > /dev/null
grep -q -- "-l 0,1 " /run/swemu-testbed/itpcp/eal.args && [ "$(cat /run/swemu-testbed/itpcp/rank_cpus)" = 2-15 ] ||
	fail "the 16-core plan: $(cat /run/swemu-testbed/itpcp/eal.args /run/swemu-testbed/itpcp/rank_cpus)"
"$top/testbed/topo/topo.sh" down itpcp
"$top/testbed/topo/topo.sh" up itpcp 4 --subnet $sub --pmd af_xdp --racks 2 --partitions 2 --cores 16 > /dev/null
grep -q -- "-l 0,1,2,3,4,5 " /run/swemu-testbed/itpcp/eal.args && [ "$(cat /run/swemu-testbed/itpcp/rank_cpus)" = 6-15 ] ||
	fail "the 16-core plan of two racks: $(cat /run/swemu-testbed/itpcp/eal.args /run/swemu-testbed/itpcp/rank_cpus)"
"$top/testbed/topo/topo.sh" down itpcp
! "$top/testbed/topo/topo.sh" up itpcp 4 --subnet $sub --pmd af_xdp --racks 2 --processes --partitions 2 \
	> "$LOGDIR/procs.log" 2>&1 || fail "--partitions with --processes must be refused"
grep -q "not with --processes" "$LOGDIR/procs.log" || fail "--partitions with --processes: $(cat "$LOGDIR/procs.log")"
! ip netns list | grep -q "^itpcp-" || fail "a refused topology left namespaces: $(ip netns list | grep itpcp)"
topo itpart 4 --subnet $sub --pmd af_xdp --partitions 2 --lcores 0,1 --rate 50M

got=$(stats | $PY -c "import json,sys; print(' '.join('%d:%s' % (w['lcore'], ','.join(w['switches'])) for w in json.load(sys.stdin)['workers']))")
[ "$got" = "0:tor0 1:tor0/1" ] || fail "swemu's lcores run '$got', want '0:tor0 1:tor0/1'"
devs=$(stats_get '" ".join(p["dev"] for s in ("tor0", "tor0/1") for p in d["switches"][s]["ports"].values())')
[ "$devs" = "net_af_xdp0 net_af_xdp1 net_af_xdp2 net_af_xdp3 net_af_xdp0q1 net_af_xdp1q1 net_af_xdp2q1 net_af_xdp3q1" ] ||
	fail "the partitions' devices are '$devs'"

accepted() { stats_get '" ".join(str(d["switches"][s]["ina"]["accepted"]) for s in ("tor0", "tor0/1"))'; }
missteered() { stats_get 'sum(p["drops"].get("missteered", 0) for s in d["switches"].values() for p in s["ports"].values())'; }
# 512 elements: a frame within the 3000-byte MTU af_xdp on veth allows
out=$(HCL_INA_ELEMS=512 "$top/testbed/topo/launch.sh" itpart -- "$perf" --only in --algo ps-ina -b 64K -e 1M -f 4 -n 2 -w 0 \
	--timeout 30000) || fail "ps-ina through two partitions: $out"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum .* 0$' <<<"$out")" = 3 ] || fail "ps-ina through two partitions: $out"
acc=$(accepted)
read -r a0 a1 <<<"$acc"
((a0 > 0 && a1 > 0)) || fail "each partition must aggregate its ports' slots: accepted $acc"
mis=$(missteered)
[ "$mis" = 0 ] || fail "$mis frames reached a partition that does not own their port"
echo "partitions: ps-ina exact, accepted $a0 in tor0 and $a1 in tor0/1, nothing missteered"
# agent-ring with one member is plain SwitchML: its workers spread too
out=$(HCL_INA_ELEMS=512 "$top/testbed/topo/launch.sh" itpart -- "$perf" --only in --algo agent-ring -b 64K -e 1M -f 4 -n 2 \
	-w 0 --timeout 30000) || fail "agent-ring through two partitions: $out"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum .* 0$' <<<"$out")" = 3 ] || fail "agent-ring through two partitions: $out"
acc=$(accepted)
read -r b0 b1 <<<"$acc"
((b0 > a0 && b1 > a1)) || fail "agent-ring's slots must reach both partitions: accepted $a0 $a1 before, $acc after"
mis=$(missteered)
[ "$mis" = 0 ] || fail "agent-ring: $mis frames reached a partition that does not own their port"
echo "partitions: agent-ring (one member) exact, accepted $((b0 - a0)) in tor0 and $((b1 - a1)) in tor0/1"
out=$("$top/testbed/topo/launch.sh" itpart -- "$perf" --only in --algo ring -b 64K -e 1M -f 4 -n 2 -w 0 --timeout 30000) ||
	fail "ring through two partitions: $out"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum .* 0$' <<<"$out")" = 3 ] || fail "ring through two partitions: $out"

# h1 -> h0:48864 steers to partition 0, h2 -> h0:48865 to partition 1;
# each host's own link sends at most the rate (topo.sh's tbf)
blast() { # HOST PORT SECONDS
	in_host "$1" $PY -c "
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end, b = time.monotonic() + $3, b'x' * 1400
while time.monotonic() < end:
    try: s.sendto(b, ('$sub.1', $2))
    except OSError: time.sleep(0.0005)  # the host's queue is full
"
}
tx_h0() { stats_get '" ".join(str(d["switches"][s]["ports"]["h0"]["tx_bytes"]) for s in ("tor0", "tor0/1"))'; }
# bits a second h0's port sent over 2 s while both hosts send: echoes
# "total partition0 partition1"
measure() {
	local p1 p2 b e t0 t1
	blast 1 48864 3.5 & p1=$!
	blast 2 48865 3.5 & p2=$!
	sleep 0.7 # past the first second's start-up; the window is what counts
	t0=$(date +%s.%N); b=$(tx_h0)
	sleep 2
	t1=$(date +%s.%N); e=$(tx_h0)
	wait $p1 $p2
	$PY -c "
b, e = [int(x) for x in '$b'.split()], [int(x) for x in '$e'.split()]
t = $t1 - $t0
print(round(8 * (sum(e) - sum(b)) / t), round(8 * (e[0] - b[0]) / t), round(8 * (e[1] - b[1]) / t))"
}
check_rate() { # RATE_BPS WHAT
	local r
	read -r -a r <<<"$(measure)"
	echo "partitions: $2: h0's port sent ${r[0]} bit/s (partition 0 ${r[1]}, partition 1 ${r[2]}) at a rate of $1"
	((r[1] > 0 && r[2] > 0)) || fail "$2: both partitions must send to h0: ${r[*]}"
	# 1.2x: room for the clock read around the window; a line per
	# partition would carry up to 2x
	((r[0] * 10 <= $1 * 12)) || fail "$2: h0's port sent ${r[0]} bit/s, more than its rate $1"
}
check_rate 50000000 "--rate 50M"
ans=$(in_host 3 "$top/testbed/topo/swemu-ctl" $sub.254 'op = "emu"; port = "h0"; rate = "20M";') ||
	fail "emu on a partitioned switch: $ans"
[ "$ans" = ok ] || fail "emu on a partitioned switch answered '$ans'"
check_rate 20000000 "after 'emu' set 20M"
echo "partitions: one rate per port across both partitions"

"$top/testbed/topo/topo.sh" down itpart

topo itpr2 4 --subnet $sub --pmd af_xdp --racks 2 --partitions 2 --lcores 0,1
got=$(stats | $PY -c "import json,sys; print(' '.join('%d:%s' % (w['lcore'], ','.join(w['switches'])) for w in json.load(sys.stdin)['workers']))")
[ "$got" = "0:tor0,tor1,spine 1:tor0/1,tor1/1,spine/1" ] || fail "two racks: swemu's lcores run '$got'"
TORS='("tor0", "tor0/1", "tor1", "tor1/1")'
for algo in agent-ring ps-ina ring; do
	before=$(stats_get "' '.join(str(d['switches'][s]['ina']['accepted']) for s in $TORS)")
	out=$(HCL_INA_ELEMS=512 "$top/testbed/topo/launch.sh" itpr2 -- "$perf" --only in --algo $algo -b 64K -e 1M -f 4 -n 2 \
		-w 0 --timeout 30000) || fail "$algo through two partitioned racks: $out"
	[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum .* 0$' <<<"$out")" = 3 ] || fail "$algo through two partitioned racks: $out"
	after=$(stats_get "' '.join(str(d['switches'][s]['ina']['accepted']) for s in $TORS)")
	mis=$(missteered)
	[ "$mis" = 0 ] || fail "$algo: $mis frames reached a partition that does not own their port"
	echo "partitions: two racks, $algo exact; accepted in tor0, tor0/1, tor1, tor1/1: $before -> $after"
	[ $algo = ring ] && break
	$PY -c "
b, a = [int(x) for x in '$before'.split()], [int(x) for x in '$after'.split()]
assert all(y > x for x, y in zip(b, a)), 'every ToR partition must aggregate'" || fail "$algo: not every ToR partition aggregated"
done
spine=$(stats_get '" ".join(str(sum(p["tx_packets"] for p in d["switches"][s]["ports"].values())) for s in ("spine", "spine/1"))')
read -r s0 s1 <<<"$spine"
((s0 > 0 && s1 > 0)) || fail "both spine partitions must forward: sent $spine"
"$top/testbed/topo/topo.sh" down itpr2
TOPO_NAME=""
cat > "$LOGDIR/t.cfg" <<'C'
trial = {
  name = "parts"; racks = 2; hosts_per_rack = 2; pmd = "af_xdp"; tor_partitions = 2;
  host_rate = "400M"; algorithms = ["ring", "ps-ina", "agent-ring"]; sizes = ["256K"];
  iterations = 3; warmup = 1; repeats = 1; compute_ms = 0; jitter = "";
};
C
"$top/testbed/trial/trial.sh" -c "$LOGDIR/t.cfg" -o "$LOGDIR/trial" > "$LOGDIR/trial.log" 2>&1 ||
	fail "a trial with tor_partitions = 2: $(tail -5 "$LOGDIR/trial.log")"
[ "$(grep -c "partitions = 2;" "$LOGDIR/trial/swemu.cfg")" = 3 ] ||
	fail "the trial's switches are not partitioned: $(cat "$LOGDIR/trial/swemu.cfg")"
$PY - "$LOGDIR/trial" <<'P' || fail "the trial's report"
import json, sys
d = sys.argv[1]
res = json.load(open(d + "/results.json"))
md = open(d + "/report.md").read()
for a in ("ring", "ps-ina", "agent-ring"):
    r = res["results"][a]["256K"]
    assert r.get("rc") == 0 and r["wrong"] == 0, (a, r.get("error"), r.get("wrong"))
    want = ["spine.t0", "spine.t1", "tor0.h0", "tor0.h1", "tor0.up", "tor1.h2", "tor1.h3", "tor1.up"]
    assert sorted(r["links"]) == want, r["links"].keys()
    if a == "ring":  # every call a host sends 3/4 of the message, through either partition
        assert min(v["rx_bytes"] for k, v in r["links"].items() if ".h" in k) >= 1.5 * 262144 * 5, r["links"]
assert not any(p in md for p in ("tor0/1.", "tor1/1.", "spine/1.")), "a partition's link in the report"
P
echo "partitions: a trial of two racks with tor_partitions = 2 ran every algorithm exact, its links counted once"
