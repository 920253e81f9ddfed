#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# IPv4 fragments at the switch's INA endpoint, on both port types:
#  - af_xdp sees frames as the wire carries them: three lone fragments, the
#    four fragments of an over-MTU datagram and the two of one within the
#    MTU are each counted ip_fragment, and none reaches the engine;
#  - on af_packet the kernel reassembles first (DPDK's PMD joins its fanout
#    group with the defrag flag; docs/SWEMU.md, "Fragments"): the lone
#    fragments never reach swemu and are counted in its namespace's
#    reassembly failures (the stats' kernel_ip_reassembly), the over-MTU
#    datagram arrives whole and is dropped over_mtu before the engine, and
#    the one within the MTU reaches the engine as the one datagram it is.
. "$(dirname "$0")/lib.sh"
frag_py=$top/tests/integration/fragments.py

# waits (5 s at most) until the python condition on the counters' change
# since $before holds; fails with the change otherwise
expect() { # WHAT CONDITION
	local what=$1 cond=$2
	for _ in $(seq 50); do
		if stats | $PY -c "
import json, sys
b, a = json.loads(sys.argv[1]), json.load(sys.stdin)
def c(d):
    t = d['switches']['tor0']
    p = t['ports']['h0']['drops']
    return {'frag': p.get('ip_fragment', 0), 'over_mtu': p.get('over_mtu', 0), 'ina': t['ina']['rx_packets'],
            'accepted': t['ina']['accepted'], 'kfail': d.get('kernel_ip_reassembly', {}).get('failed', 0),
            'kok': d.get('kernel_ip_reassembly', {}).get('reassembled', 0)}
x, y = c(b), c(a)
d = {k: y[k] - x[k] for k in x}
sys.exit(0 if eval(sys.argv[2], {}, d) else 1)
" "$before" "$cond"; then
			echo "fragments ($pmd): $what"
			return 0
		fi
		sleep 0.1
	done
	fail "$pmd, $what: the counters moved $(stats | $PY -c "import json,sys; d=json.load(sys.stdin); t=d['switches']['tor0']; print({k: v for k, v in t['ports']['h0']['drops'].items() if v}, 'ina rx', t['ina']['rx_packets'], d.get('kernel_ip_reassembly'))")"
}

send() { # KIND [CUT]
	in_host 0 $PY "$frag_py" eth0 10.77.0.1 02:5e:00:00:00:01 10.77.0.254 02:5e:00:00:00:fe 7 "$@" > /dev/null
}

for pmd in af_xdp af_packet; do
	topo itfr 2 --pmd $pmd
	in_host 0 "$top/testbed/topo/swemu-ctl" 10.77.0.254 'op = "install"; job = { id = 7; dtype = "int32"; slots = 16; elems = 2048;
		outputs = ["multicast"]; contributors = ["10.77.0.1:48864", "10.77.0.2:48864"]; };' > /dev/null
	# the kernel's reassembly gives up on a lone fragment after 1 s, not 30
	ip netns exec "$(cat /run/swemu-testbed/itfr/netns)" sysctl -qw net.ipv4.ipfrag_time=1
	before=$(stats)
	if [ $pmd = af_xdp ]; then
		send lone
		expect "three lone fragments: ip_fragment" "frag == 3 and ina == 0"
		before=$(stats)
		send big 2944
		expect "an over-MTU datagram's four fragments: ip_fragment" "frag == 4 and ina == 0 and over_mtu == 0"
		before=$(stats)
		send small 2944
		expect "a datagram within the MTU in two fragments: ip_fragment" "frag == 2 and ina == 0"
	else
		send lone
		expect "three lone fragments: the kernel's reassembly failures" "kfail == 3 and frag == 0 and ina == 0"
		before=$(stats)
		send big
		expect "an over-MTU datagram, reassembled by the kernel: over_mtu" "over_mtu == 1 and ina == 0 and kok == 1"
		before=$(stats)
		send small 2944
		expect "a datagram within the MTU, reassembled: one contribution" "ina == 1 and accepted == 1 and frag == 0"
	fi
	"$top/testbed/topo/topo.sh" down itfr
	TOPO_NAME=""
done
echo "fragments: counted on both port types, none aggregated in pieces, no over-MTU datagram in the engine"
