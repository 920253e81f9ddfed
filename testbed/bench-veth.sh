#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What swemu carries on the veth testbed, and how exact its emulated rate is.
#   testbed/bench-veth.sh [SECONDS]     (default 4 per figure; needs root)
# 1. Two hosts in namespaces through swemu (plain forwarding) on af_packet
#    and on af_xdp, and through a Linux bridge for reference: iperf3 UDP
#    (largest datagram the MTU allows, unlimited rate) and TCP.
# 2. Rate accuracy: the egress port toward h1 limited to 100M, 500M, 1G and
#    2G over the control channel; iperf3 UDP offered at 1.5x; the receiver's
#    goodput against the configured rate less the header share.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 3,11p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
secs=${1:-4}
top=$(cd "$(dirname "$0")/.." && pwd)
name=bv
scratch=$(mktemp -d /tmp/swemu-bv.XXXXXX)
trap '"$top/testbed/topo.sh" down $name; ip link del bvbr 2>/dev/null || true; rm -rf "$scratch"' EXIT

iperf_udp() { # LEN RATE -> "Gbit/s pps lost%"
	ip netns exec $name-h1 iperf3 -s -1 -B 10.77.0.2 -p 5201 >/dev/null 2>&1 &
	local srv=$!
	for _ in $(seq 50); do ip netns exec $name-h1 ss -ltn | grep -q :5201 && break; sleep 0.05; done
	ip netns exec $name-h0 iperf3 -c 10.77.0.2 -u -b "$2" -l "$1" -t "$secs" -J > "$scratch/iperf.json" || true
	wait $srv || true
	/usr/bin/python3 -c "
import json; d=json.load(open('$scratch/iperf.json'))['end']['sum_received']
print('%.3f %.0f %.1f' % (d['bits_per_second']/1e9, d['bits_per_second']/8/$1, d['lost_percent']))"
}
iperf_tcp() {
	ip netns exec $name-h1 iperf3 -s -1 -B 10.77.0.2 -p 5201 >/dev/null 2>&1 &
	local srv=$!
	for _ in $(seq 50); do ip netns exec $name-h1 ss -ltn | grep -q :5201 && break; sleep 0.05; done
	ip netns exec $name-h0 iperf3 -c 10.77.0.2 -t "$secs" -J > "$scratch/iperf.json" || true
	wait $srv || true
	/usr/bin/python3 -c "import json; print('%.3f' % (json.load(open('$scratch/iperf.json'))['end']['sum_received']['bits_per_second']/1e9))"
}

echo "# swemu on the veth testbed, $secs s per figure, $(date -u +%F)"
echo "# path         udp_len  udp_Gbps  udp_pps  udp_lost%  tcp_Gbps"
for pmd in af_packet af_xdp bridge; do
	"$top/testbed/topo.sh" up $name 2 --no-ina --pmd "${pmd/bridge/af_packet}" >/dev/null
	if [ $pmd = bridge ]; then
		ip link add bvbr type bridge
		for i in 0 1; do ip link set $name-s$i master bvbr; done
		ip link set bvbr up mtu 9000
		len=8000
	else
		"$top/testbed/topo.sh" start $name
		len=$([ $pmd = af_xdp ] && echo 2900 || echo 8000)
	fi
	ip netns exec $name-h0 ping -c 1 -W 2 10.77.0.2 >/dev/null
	read -r g p l <<<"$(iperf_udp $len 0)"
	t=$(iperf_tcp)
	printf "  %-12s %7d  %8s  %7s  %9s  %8s\n" "$pmd" "$len" "$g" "$p" "$l" "$t"
	ip link del bvbr 2>/dev/null || true
	"$top/testbed/topo.sh" down $name
done

echo "# emulated rate on the port toward h1 (af_packet), UDP 8000 B offered at 1.5x"
echo "# rate       offered   goodput_Gbps  expected_Gbps  measured/expected"
"$top/testbed/topo.sh" up $name 2 >/dev/null
"$top/testbed/topo.sh" start $name
ip netns exec $name-h0 ping -c 1 -W 2 10.77.0.2 >/dev/null
for rate in 100M 500M 1G 2G; do
	ip netns exec $name-h0 "$top/testbed/swemu-ctl" --key "/run/swemu-testbed/$name/ctrl.key" 10.77.0.254 "op = \"emu\"; port = \"h1\"; rate = \"$rate\"; buffer = \"1M\";" >/dev/null
	bps=$("$top/build/testbed/swemu-trial-cfg" --rate "$rate")
	offer=$((bps * 3 / 2))
	read -r g _ _ <<<"$(iperf_udp 8000 $offer)"
	# the emulator meters Ethernet frames: 8000 B of UDP payload is an 8042 B frame
	/usr/bin/python3 -c "
exp = $bps * 8000 / 8042 / 1e9
print('  %-8s  %7.2fG  %12.3f  %13.3f  %17.3f' % ('$rate', $offer/1e9, $g, exp, $g/exp))"
done
