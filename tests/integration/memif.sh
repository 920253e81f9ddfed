#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# net_memif ports: two swemu processes, each a switch with one host (a
# namespace on af_packet), joined by a memif link (a is the server, b the
# client; 10 KiB buffers, so a jumbo frame is one descriptor).  Ping and
# jumbo ping across; an INA job of switch a whose second member sits behind
# b, so contributions and results cross the memif link, exact; b's memif
# port counts the results it carried.  Everything is removed on any exit.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "integration tests need root"; exit 77; }
exe=${SWEMU:-$top/build/swemu/swemu}
sub=10.88.0
dir=$(mktemp -d /tmp/itmemif.XXXXXX)

cleanup() {
	local rc=$?
	for s in a b; do
		[ -f "$dir/$s.pid" ] && kill "$(cat "$dir/$s.pid")" 2>/dev/null && wait "$(cat "$dir/$s.pid")" 2>/dev/null
		((rc == 0)) || { echo "--- swemu $s" >&2; tail -n 15 "$dir/$s.log" >&2 2>/dev/null || true; }
		rm -rf "/var/run/dpdk/itmemif-$s"
	done
	for i in 0 1; do
		ip netns del "itmemif-h$i" 2>/dev/null || true
		ip link del "itmemif-s$i" 2>/dev/null || true
	done
	rm -rf "$dir"
	exit $rc
}
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }

for i in 0 1; do
	ns=itmemif-h$i
	ip netns add $ns
	ip link add itmemif-s$i type veth peer name itmemif-e$i
	ip link set itmemif-e$i netns $ns
	ip -n $ns link set itmemif-e$i name eth0
	ip -n $ns addr add $sub.$((i + 1))/24 dev eth0
	ip -n $ns link set eth0 mtu 9000 up
	ip -n $ns link set lo up
	ip netns exec $ns ethtool -K eth0 tx off >/dev/null
	ip link set itmemif-s$i mtu 9000 up
done
cat > "$dir/a.cfg" <<E
stats_file = "$dir/a.json";
switches = ( { name = "a"; ina = true; mac = "02:5e:00:00:00:fe"; ip = "$sub.254"; slots = 64; max_elems = 2048;
  mgmt = [ "$sub.1" ];
  jobs = ( { id = 1; fan_in = 2; dtype = "int32"; slots = 16; elems = 1024; outputs = [ "multicast" ];
             contributors = [ "$sub.1:48864", "$sub.2:48864" ]; } );
  ports = ( { name = "h0"; dev = "net_af_packet0"; }, { name = "m"; dev = "net_memif0"; } ); } );
E
cat > "$dir/b.cfg" <<E
stats_file = "$dir/b.json";
switches = ( { name = "b"; ports = ( { name = "m"; dev = "net_memif0"; }, { name = "h1"; dev = "net_af_packet0"; } ); } );
E
start() { # start NAME LCORE MEMIF-ROLE HOST: ready when it says so, no fixed sleep
	local s=$1
	"$exe" --no-huge -m 256 --file-prefix itmemif-$s --no-pci -l "$2" \
		--vdev "net_memif0,role=$3,socket=$dir/memif.sock,bsize=10240" \
		--vdev "net_af_packet0,iface=itmemif-s$4,framesz=10240,blocksz=40960" -- -c "$dir/$s.cfg" > "$dir/$s.log" 2>&1 &
	echo $! > "$dir/$s.pid"
	for _ in $(seq 100); do
		grep -q "running from" "$dir/$s.log" && return 0
		kill -0 "$(cat "$dir/$s.pid")" 2>/dev/null || fail "swemu $s exited"
		sleep 0.1
	done
	fail "swemu $s did not come up in 10 s"
}
start a 0 server 0
start b "$(($(nproc) > 1 ? 1 : 0))" client 1

stats() { # stats SWITCH EXPR
	local f=$dir/$1.json
	rm -f "$f"
	kill -USR1 "$(cat "$dir/$1.pid")"
	for _ in $(seq 50); do [ -s "$f" ] && break; sleep 0.05; done
	$PY -c "import json,sys; d=json.load(open('$f')); print($2)"
}

# the memif link comes up when the client has connected: ping waits for it
in0() { ip netns exec itmemif-h0 "$@"; }
in0 ping -c 1 -w 15 $sub.2 >/dev/null || fail "ping h0 -> h1 across memif"
in0 ping -c 2 -i 0.2 -W 2 -s 8000 -M do $sub.2 >/dev/null || fail "8000-byte ping across memif"

pids=()
for i in 0 1; do
	ip netns exec itmemif-h$i $PY "$top/tests/integration/ina_client.py" --switch $sub.254 --bind $sub.$((i + 1)) \
		--job 1 --index $i --fanin 2 --slices 200 --count 1024 --slots 16 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "INA job across memif"; done

[ "$(stats a 'd["switches"]["a"]["ina"]["jobs"]["1"]["completions"]')" = 200 ] || fail "job 1: not 200 completions"
# every result for h1 crossed the link: b received at least 200 frames on m
((($(stats b 'd["switches"]["b"]["ports"]["m"]["rx_packets"]') >= 200))) || fail "b's memif port carried too little"
# drops on the link are counted by reason (tx_full when b, starved of CPU,
# lets the ring fill; not_udp for the ICMP errors of a host whose client
# has finished); the clients' re-sends make up for them
drops=$(stats a '{k: v for k, v in d["switches"]["a"]["ports"]["m"]["drops"].items() if v}')
echo "memif: two swemu processes over net_memif: ping, 8000-byte ping, fan-in 2 int32 job across the link exact (a's memif port drops: $drops)"
