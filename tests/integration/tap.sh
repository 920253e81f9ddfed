#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# swemu on net_tap ports: of the devices this machine has, the tap PMD is the
# one that verifies IPv4/UDP checksums on receive (in software, inside the
# driver) and marks each mbuf, so swemu asks it to and uses its verdict
# instead of summing again.  Hosts sit in namespaces on the tap interfaces
# swemu creates (moved there once it runs).  Checks: the ports report the
# offload, ping and an INA job work through them, and frames with a bad UDP
# or IP checksum are dropped under their counters, exactly as many as sent.
# (That the verdict, not a second software pass, decides is shown by
# tests/unit/swemu/test_dp.c.)  The tap PMD caps frames at 1522 bytes: no jumbo here.
. "$(dirname "$0")/lib.sh"
subnet=10.84.0
TOPO_NAME=itap
d=/run/swemu-testbed/itap
"$top/testbed/topo/topo.sh" down itap
mkdir -p "$d"
for i in 0 1; do
	ip netns add itap-h$i
	ip -n itap-h$i link set lo up
done
cat > "$d/swemu.cfg" <<C
stats_file = "$d/stats.json";
idle_sleep_max_us = 200;
switches = (
  { name = "tor0"; ina = true; mac = "02:5e:00:00:00:fe"; ip = "$subnet.254"; slots = 64; max_elems = 1024;
    ports = ( { name = "h0"; dev = "net_tap0"; }, { name = "h1"; dev = "net_tap1"; } );
    jobs = ( { id = 1; fan_in = 2; dtype = "int32"; slots = 16; elems = 256; outputs = ["multicast"];
               contributors = [ "$subnet.1:48864", "$subnet.2:48864" ]; } ); }
);
C
exe=${SWEMU:-$top/build/swemu/swemu}
"$exe" --no-huge -m 512 --file-prefix swemu-itap --no-pci -l 0 \
	--vdev net_tap0,iface=itap-s0 --vdev net_tap1,iface=itap-s1 -- -c "$d/swemu.cfg" > "$d/swemu.log" 2>&1 &
echo $! > "$d/swemu.pid"
for _ in $(seq 100); do
	grep -q "running from" "$d/swemu.log" && break
	kill -0 "$(cat "$d/swemu.pid")" 2>/dev/null || fail "swemu exited: $(cat "$d/swemu.log")"
	sleep 0.1
done
grep -q "running from" "$d/swemu.log" || fail "swemu did not come up in 10 s"
for i in 0 1; do
	ip link set itap-s$i netns itap-h$i
	ip -n itap-h$i link set itap-s$i name eth0
	ip -n itap-h$i link set eth0 address 02:5e:00:00:00:0$((i + 1))
	ip -n itap-h$i addr add $subnet.$((i + 1))/24 dev eth0
	ip -n itap-h$i link set eth0 up
done

[ "$(stats_get '[p["rx_checksum_offload"] for p in d["switches"]["tor0"]["ports"].values()]')" = "[True, True]" ] \
	|| fail "tap ports do not report RX checksum offload: $(stats)"
in_host 0 ping -c 3 -i 0.2 -W 2 $subnet.2 >/dev/null || fail "ping h0 -> h1 over tap ports"

pids=()
for i in 0 1; do
	in_host $i $PY "$top/tests/integration/ina_client.py" --switch $subnet.254 --bind $subnet.$((i + 1)) \
		--job 1 --index $i --fanin 2 --slices 200 --count 256 --slots 16 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "aggregation over tap ports"; done
[ "$(stats_get 'd["switches"]["tor0"]["ina"]["jobs"]["1"]["completions"]')" = 200 ] || fail "completions: $(stats)"

before=$(stats)
sent=$(in_host 0 $PY "$top/tests/integration/hostile.py" eth0 $subnet.1 02:5e:00:00:00:01 $subnet.254 \
	02:5e:00:00:00:fe 1 4 bad_udp_checksum,bad_ip_checksum)
# counted once the switch has read them: poll the counters, with a deadline
check='
import json, sys
sent, b, a = (json.loads(x) for x in sys.argv[1:4])
b, a = (x["switches"]["tor0"]["ports"]["h0"]["drops"] for x in (b, a))
got = {k: a[k] - b.get(k, 0) for k in a if a[k] != b.get(k, 0)}
sys.exit(0 if got == sent else "sent %s, counted %s" % (sent, got))'
for _ in $(seq 50); do
	$PY -c "$check" "$sent" "$before" "$(stats)" 2>/dev/null && break
	sleep 0.1
done
$PY -c "$check" "$sent" "$before" "$(stats)" || fail "checksum drops"
echo "tap: ports verify checksums (offload on), ping and 200 INA slices exact; bad UDP and IP checksums counted as such ($sent)"
