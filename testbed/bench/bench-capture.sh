#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What packet capture costs swemu: two hosts in namespaces through swemu on
# af_packet, iperf3 UDP with 4 flows (8000-byte datagrams, unlimited rate,
# 4 MiB socket buffers) and TCP, without capture, capturing both ports both
# ways whole frames, and with snaplen 128; the three take turns ROUNDS
# times.  The capture file goes to /tmp (deleted after each run).
#   testbed/bench/bench-capture.sh [SECONDS] [ROUNDS]   (default 4, 3; root)
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 3,9p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
secs=${1:-4}
rounds=${2:-3}
top=$(cd "$(dirname "$0")/../.." && pwd)
name=bcap
d=/run/swemu-testbed/$name
scratch=$(mktemp -d /tmp/swemu-bcap.XXXXXX)
trap '"$top/testbed/topo/topo.sh" down $name; rm -rf "$scratch"' EXIT
sockbuf=$(( $(sysctl -n net.core.rmem_max) < 4194304 ? $(sysctl -n net.core.rmem_max) : 4194304 ))
iperf() { # extra client options -> Gbit/s received
	ip netns exec $name-h1 iperf3 -s -1 -B 10.77.0.2 -p 5201 >/dev/null 2>&1 &
	local srv=$!
	for _ in $(seq 50); do ip netns exec $name-h1 ss -ltn | grep -q :5201 && break; sleep 0.05; done
	ip netns exec $name-h0 iperf3 -c 10.77.0.2 -P 4 -t "$secs" -J "$@" > "$scratch/iperf.json" || true
	wait $srv || true
	/usr/bin/python3 -c "import json; print('%.3f' % (json.load(open('$scratch/iperf.json'))['end']['sum_received']['bits_per_second'] / 1e9))"
}
echo "# capture cost, $secs s per figure, $rounds rounds, $(date -u +%F)"
echo "# round mode        udp_Gbps  tcp_Gbps  captured_frames"
for ((r = 1; r <= rounds; r++)); do
	for mode in none full snap128; do
		"$top/testbed/topo/topo.sh" up $name 2 --no-ina >/dev/null
		case $mode in
		full) sed -i "s|^    ports = (|    capture = { file = \"$scratch/c.pcapng\"; };\n    ports = (|" "$d/swemu.cfg" ;;
		snap128) sed -i "s|^    ports = (|    capture = { file = \"$scratch/c.pcapng\"; snaplen = 128; };\n    ports = (|" "$d/swemu.cfg" ;;
		esac
		"$top/testbed/topo/topo.sh" start $name
		ip netns exec $name-h0 ping -c 1 -W 2 10.77.0.2 >/dev/null
		u=$(iperf -u -b 0 -l 8000 -w "$sockbuf")
		t=$(iperf)
		c=$("$top/testbed/topo/topo.sh" stats $name | /usr/bin/python3 -c "import json, sys; print(json.load(sys.stdin)['switches']['tor0']['capture_packets'])")
		printf "  %5d %-10s %9s %9s %16s\n" "$r" "$mode" "$u" "$t" "$c" | tee -a "$scratch/rows"
		"$top/testbed/topo/topo.sh" down $name
		rm -f "$scratch/c.pcapng"
	done
done
/usr/bin/python3 - "$scratch/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
fig = {(r[0], r[1]): (float(r[2]), float(r[3])) for r in rows}
rounds = sorted({r[0] for r in rows})
for mode in ("full", "snap128"):
    u = [fig[k, mode][0] / fig[k, "none"][0] for k in rounds]
    t = [fig[k, mode][1] / fig[k, "none"][1] for k in rounds]
    print("# %-8s / none, median of %d rounds: udp %.2f  tcp %.2f" % (mode, len(rounds), statistics.median(u), statistics.median(t)))
PY
