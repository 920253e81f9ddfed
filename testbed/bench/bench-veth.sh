#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What swemu carries on the veth testbed, and how exact its emulated rate is.
#   testbed/bench/bench-veth.sh [SECONDS] [ROUNDS]   (default 4 s per figure, 3 rounds; root)
# 1. Two hosts in namespaces through swemu (plain forwarding) on af_packet
#    and on af_xdp, and through a Linux bridge for reference, the paths
#    taking turns ROUNDS times: iperf3 UDP with 4 flows (largest datagram
#    the MTU allows, unlimited rate, socket buffers as large as the host
#    library's up to net.core.rmem_max) and TCP; then the median of
#    swemu/bridge per round (issue 19's goal 5: UDP >= 0.7).
# 2. Rate accuracy: the egress port toward h1 limited to 100M, 500M, 1G and
#    2G over the control channel; iperf3 UDP offered at 1.5x; the receiver's
#    goodput against the configured rate less the header share.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 3,13p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
secs=${1:-4}
rounds=${2:-3}
top=$(cd "$(dirname "$0")/../.." && pwd)
name=bv
scratch=$(mktemp -d /tmp/swemu-bv.XXXXXX)
trap '"$top/testbed/topo/topo.sh" down $name; rm -rf "$scratch"' EXIT
# The host library forces 8 MiB socket buffers; iperf3 asks without
# force, so the kernel caps it at rmem_max.  With the default 208 KiB a
# burst of 32 jumbo frames from swemu's port overflows the receiver's
# socket: that measured the receiving socket, not the switch.
sockbuf=$(( $(sysctl -n net.core.rmem_max) < 8388608 ? $(sysctl -n net.core.rmem_max) : 8388608 ))
flows=4

iperf_udp() { # LEN RATE -> "Gbit/s pps lost%"
	ip netns exec $name-h1 iperf3 -s -1 -B 10.77.0.2 -p 5201 >/dev/null 2>&1 &
	local srv=$!
	for _ in $(seq 50); do ip netns exec $name-h1 ss -ltn | grep -q :5201 && break; sleep 0.05; done
	ip netns exec $name-h0 iperf3 -c 10.77.0.2 -u -b "$2" -l "$1" ${3:+-P $3 -w $sockbuf} -t "$secs" -J > "$scratch/iperf.json" || true
	wait $srv || true
	/usr/bin/python3 -c "
import json; d=json.load(open('$scratch/iperf.json'))['end']['sum_received']
print('%.3f %.0f %.1f' % (d['bits_per_second']/1e9, d['bits_per_second']/8/$1, d['lost_percent']))"
}
iperf_tcp() {
	ip netns exec $name-h1 iperf3 -s -1 -B 10.77.0.2 -p 5201 >/dev/null 2>&1 &
	local srv=$!
	for _ in $(seq 50); do ip netns exec $name-h1 ss -ltn | grep -q :5201 && break; sleep 0.05; done
	ip netns exec $name-h0 iperf3 -c 10.77.0.2 -P $flows -t "$secs" -J > "$scratch/iperf.json" || true
	wait $srv || true
	/usr/bin/python3 -c "import json; print('%.3f' % (json.load(open('$scratch/iperf.json'))['end']['sum_received']['bits_per_second']/1e9))"
}

echo "# swemu on the veth testbed, $secs s per figure, $rounds rounds, $(date -u +%F)"
echo "# UDP: $flows flows, socket buffers $sockbuf B; TCP: $flows flows"
echo "# round path         udp_len  udp_Gbps  udp_pps  udp_lost%  tcp_Gbps"
for ((round = 1; round <= rounds; round++)); do
	for pmd in af_packet af_xdp bridge; do
		"$top/testbed/topo/topo.sh" up $name 2 --no-ina --pmd "${pmd/bridge/af_packet}" >/dev/null
		if [ $pmd = bridge ]; then
			# the switch's ends of the veths are in its namespace (topo.sh)
			sw=$(cat /run/swemu-testbed/$name/netns)
			ip -n "$sw" link add bvbr type bridge
			for i in 0 1; do ip -n "$sw" link set $name-s$i master bvbr; done
			ip -n "$sw" link set bvbr up mtu 9000
			len=8000
		else
			"$top/testbed/topo/topo.sh" start $name
			len=$([ $pmd = af_xdp ] && echo 2900 || echo 8000)
		fi
		ip netns exec $name-h0 ping -c 1 -W 2 10.77.0.2 >/dev/null
		read -r g p l <<<"$(iperf_udp $len 0 $flows)"
		t=$(iperf_tcp)
		printf "  %5d %-12s %7d  %8s  %7s  %9s  %8s\n" "$round" "$pmd" "$len" "$g" "$p" "$l" "$t" | tee -a "$scratch/rows"
		"$top/testbed/topo/topo.sh" down $name # the bridge goes with the namespace
	done
done
# per round, each swemu path over the bridge; the median of the rounds
/usr/bin/python3 - "$scratch/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
fig = {(r[0], r[1]): (float(r[3]), float(r[6])) for r in rows}
rounds = sorted({r[0] for r in rows})
for path in ("af_packet", "af_xdp"):
    u = sorted(fig[k, path][0] / fig[k, "bridge"][0] for k in rounds)
    t = sorted(fig[k, path][1] / fig[k, "bridge"][1] for k in rounds)
    print("# %-9s / bridge, median of %d rounds: udp %.2f (%.2f-%.2f)  tcp %.2f (%.2f-%.2f)"
          % (path, len(rounds), statistics.median(u), u[0], u[-1], statistics.median(t), t[0], t[-1]))
PY

echo "# emulated rate on the port toward h1 (af_packet), UDP 8000 B offered at 1.5x"
echo "# rate       offered   goodput_Gbps  expected_Gbps  measured/expected"
"$top/testbed/topo/topo.sh" up $name 2 >/dev/null
"$top/testbed/topo/topo.sh" start $name
ip netns exec $name-h0 ping -c 1 -W 2 10.77.0.2 >/dev/null
for rate in 100M 500M 1G 2G; do
	ip netns exec $name-h0 "$top/testbed/topo/swemu-ctl" --key "/run/swemu-testbed/$name/ctrl.key" 10.77.0.254 "op = \"emu\"; port = \"h1\"; rate = \"$rate\"; buffer = \"1M\";" >/dev/null
	bps=$("$top/build/testbed/trial/swemu-trial-cfg" --rate "$rate")
	offer=$((bps * 3 / 2))
	read -r g _ _ <<<"$(iperf_udp 8000 $offer)"
	# the emulator meters Ethernet frames: 8000 B of UDP payload is an 8042 B frame
	/usr/bin/python3 -c "
exp = $bps * 8000 / 8042 / 1e9
print('  %-8s  %7.2fG  %12.3f  %13.3f  %17.3f' % ('$rate', $offer/1e9, $g, exp, $g/exp))"
done
