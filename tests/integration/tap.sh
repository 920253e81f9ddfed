#!/usr/bin/env bash
# swemu on net_tap ports: of the devices this machine has, the tap PMD is the
# one that verifies IPv4/UDP checksums on receive (in software, inside the
# driver) and marks each mbuf, so swemu asks it to and uses its verdict
# instead of summing again.  Hosts sit in namespaces on the tap interfaces
# swemu creates (moved there once it runs).  Checks: the ports report the
# offload, ping and an INA job work through them, and frames with a bad UDP
# or IP checksum are dropped under their counters, exactly as many as sent.
# (That the verdict, not a second software pass, decides is shown by
# tests/dp/test_dp.c.)  The tap PMD caps frames at 1522 bytes: no jumbo here.
. "$(dirname "$0")/lib.sh"
subnet=10.84.0
TOPO_NAME=itap
d=/run/swemu-testbed/itap
"$top/testbed/topo.sh" down itap
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
in_host 0 $PY - $subnet <<'PY'
import socket, struct, sys
net = sys.argv[1]
def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF
src, dst = socket.inet_aton(net + ".1"), socket.inet_aton(net + ".254")
# a DATA header of job 1, contributor 0, slot 3, 4 elements
payload = bytes([1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 9, 0, 4, 0, 0]) + bytes(16)
def frame(bad_ip, bad_udp):
    ulen = 8 + len(payload)
    udp = struct.pack("!HHHH", 0xBEE0, 0xBEE0, ulen, 0) + payload
    c = csum(src + dst + struct.pack("!BBH", 0, 17, ulen) + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", c ^ (0x0100 if bad_udp else 0)) + udp[8:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0, 0x4000, 64, 17, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip) ^ (1 if bad_ip else 0)) + ip[12:]
    return bytes([2, 0x5E, 0, 0, 0, 0xFE, 2, 0x5E, 0, 0, 0, 1]) + b"\x08\x00" + ip + udp
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
for _ in range(5):
    s.send(frame(False, True))
for _ in range(3):
    s.send(frame(True, False))
PY
# counted once the switch has read them: poll the counters, with a deadline
for _ in $(seq 50); do
	after=$(stats)
	$PY - "$before" "$after" <<'PY' && break
import json, sys
b, a = (json.loads(x)["switches"]["tor0"]["ports"]["h0"]["drops"] for x in sys.argv[1:3])
sys.exit(0 if (a["bad_udp_checksum"] - b["bad_udp_checksum"], a["bad_ip_checksum"] - b["bad_ip_checksum"]) == (5, 3) else 1)
PY
	sleep 0.1
done
$PY - "$before" "$after" <<'PY' || fail "checksum drops: $(stats)"
import json, sys
b, a = (json.loads(x)["switches"]["tor0"]["ports"]["h0"]["drops"] for x in sys.argv[1:3])
got = {k: a[k] - b.get(k, 0) for k in a if a[k] != b.get(k, 0)}
sys.exit(0 if got == {"bad_udp_checksum": 5, "bad_ip_checksum": 3} else "drops: %s" % got)
PY
echo "tap: ports verify checksums (offload on), ping and 200 INA slices exact; 5 bad UDP and 3 bad IP checksums counted as such"
