#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Packet capture and the Wireshark dissector: one INA rack of four hosts
# with tor0 capturing every port to a pcapng file, a ps-ina run (exact
# results), one malformed INA packet (version 2) and a control command.
# tshark with testbed/capture/ina.lua must then find every port as an
# interface "tor0.hI" with directions; every frame to or from the
# switch's INA port decoded as INA; the INA frames that reached the switch
# equal to what its engine counted (rx_packets, the malformed one among
# them and in bad_version), the results it sent equal to emits_sent; the
# malformed packet shown with its reason; the control command by name.
# A second capture bounded to 1500 packets of 128 bytes must hold 1500, count
# the rest, and its cut INA frames must decode without a false reason.  A
# third, configured paused, must write nothing until a signed control
# command starts it and nothing more once telemetry stops it; a command
# naming a file is refused.
. "$(dirname "$0")/lib.sh"
command -v tshark >/dev/null || { echo "capture: needs tshark (testbed/setup.sh --tests installs it)"; exit 77; }
perf=${PERF:-$top/build/ring/ina-allreduce-perf}
# Wireshark 4.2 and later (Ubuntu 24.04's) run no Lua script given by -X
# as root: as root, tshark reads the files as nobody (LOGDIR opened to it,
# the dissector copied there)
chmod 755 "$LOGDIR"
lua=$LOGDIR/ina.lua
cp "$top/testbed/capture/ina.lua" "$lua"
tshark() {
	if [ "$(id -u)" = 0 ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent tshark "$@"
	else
		command tshark "$@"
	fi
}
TOPO_NAME=itcap
d=/run/swemu-testbed/$TOPO_NAME
# up with tor0 capturing: the capture group goes into the generated config
capture_up() { # FILE [MAX_PACKETS SNAPLEN] [EXTRA SETTINGS]
	"$top/testbed/topo/topo.sh" up $TOPO_NAME 4 --subnet 10.85.0 >/dev/null
	sed -i "s|^    ports = (|    capture = { file = \"$1\";${2:+ max_packets = $2; snaplen = $3;} ${4:-}};\n    ports = (|" "$d/swemu.cfg"
	grep -q "capture = { file" "$d/swemu.cfg" || fail "no capture group in $(cat "$d/swemu.cfg")"
	"$top/testbed/topo/topo.sh" start $TOPO_NAME
	use_key
}
# stops swemu so that it writes its last counters and closes the file
stop_swemu() {
	local pid
	pid=$(cat "$d/swemu.pid")
	kill -TERM "$pid"
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
	fail "swemu did not stop"
}

capture_up "$LOGDIR/tor0.pcapng"
out=$("$top/testbed/topo/launch.sh" $TOPO_NAME -- "$perf" --only in --algo ps-ina -b 64K -e 256K -f 4 -n 2 -w 1) ||
	fail "ps-ina under capture: $out"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum .* 0$' <<<"$out")" = 2 ] || fail "ps-ina results: $out"
# a malformed INA packet: version 2, otherwise a plausible DATA header
ip netns exec $TOPO_NAME-h1 $PY -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(bytes([2, 1, 2, 0, 0, 1, 0, 0] + [0] * 16) + bytes(4), ('10.85.0.254', 48864))"
# ... which the switch must have counted before it stops
for _ in $(seq 100); do
	[ "$(stats_get "d['switches']['tor0']['ina']['drops'].get('bad_version', 0)")" = 1 ] && break
	sleep 0.05
done
stop_swemu
cp "$d/stats.json" "$LOGDIR/stats.json"
"$top/testbed/topo/topo.sh" down $TOPO_NAME
TOPO_NAME=""
tshark -X lua_script:"$lua" -r "$LOGDIR/tor0.pcapng" -T fields -E separator=/t -e frame.interface_name \
	-e frame.packet_flags_direction -e ip.src -e ip.dst -e udp.srcport -e udp.dstport -e ina.type \
	-e _ws.expert.message -e ina_ctrl.op -e ina.slot > "$LOGDIR/frames.tsv" 2>"$LOGDIR/tshark.err" ||
	fail "tshark: $(cat "$LOGDIR/tshark.err")"
$PY - "$LOGDIR/frames.tsv" "$LOGDIR/stats.json" <<'P'
import collections, json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
st = json.load(open(sys.argv[2]))["switches"]["tor0"]
sw = "10.85.0.254"
ifaces = {r[0] for r in rows}
assert ifaces == {"tor0.h0", "tor0.h1", "tor0.h2", "tor0.h3"}, ifaces
assert {r[1] for r in rows} <= {"0x00000001", "0x00000002"}, "directions: %s" % {r[1] for r in rows}
# every port's frames, both ways, against swemu's port counters
for i in range(4):
    p = st["ports"]["h%d" % i]
    rx = sum(r[0] == "tor0.h%d" % i and r[1] == "0x00000001" for r in rows)
    tx = sum(r[0] == "tor0.h%d" % i and r[1] == "0x00000002" for r in rows)
    assert (rx, tx) == (p["rx_packets"], p["tx_packets"]), ("h%d" % i, rx, tx, p["rx_packets"], p["tx_packets"])
ina_port = lambda p: p.isdigit() and 48864 <= int(p) <= 48879
to_sw = [r for r in rows if r[1] == "0x00000001" and r[3] == sw and ina_port(r[5])]
from_sw = [r for r in rows if r[1] == "0x00000002" and r[2] == sw and ina_port(r[4])]
assert all(r[6] for r in to_sw + from_sw), "a frame to or from the switch's INA ports did not decode"
# the hosts spread a job's slots over the 16 ports: slot s to 48864 + s mod 16
data = [r for r in to_sw if r[6] == "1" and r[9]]
wrong = [r for r in data if int(r[5]) != 48864 + (int(r[9], 16) & 0x7FFFFFFF) % 16]
assert not wrong and len({r[5] for r in data}) > 1, ("slot ports", wrong[:3], {r[5] for r in data})
ina = st["ina"]
bad = [r for r in to_sw if r[7].startswith("bad_version")]
assert len(bad) == 1 and ina["drops"].get("bad_version") == 1, (bad, ina["drops"])
assert len(to_sw) == ina["rx_packets"], (len(to_sw), ina["rx_packets"])  # the malformed one included
types = collections.Counter(r[6] for r in from_sw)
# results, HAVE for a re-send that found its slot still waiting, MISS for a
# slice whose successor came first (jobs with the "miss" output)
assert sum(types.values()) == ina["emits_sent"] and set(types) <= {"2", "7", "8"}, (types, ina["emits_sent"])
ops = collections.Counter(r[8] for r in rows if r[8])
assert ops["install"] >= 1 and ops["remove"] >= 1, ops
print("capture: %d frames on 4 ports; %d INA frames to the switch (one malformed, named) on %d ports, "
      "%d results from it; control: %s" % (len(rows), len(to_sw), len({r[5] for r in data}), types["2"], dict(ops)))
P

# a bounded capture: the first 1500 frames, the rest counted
TOPO_NAME=itcap
capture_up "$LOGDIR/bounded.pcapng" 1500 128
"$top/testbed/topo/launch.sh" $TOPO_NAME -- "$perf" --only in --algo ps-ina -b 256K -e 256K -n 8 -w 1 >/dev/null ||
	fail "ps-ina under a bounded capture"
stop_swemu
left=$($PY -c "import json; print(json.load(open('$d/stats.json'))['switches']['tor0']['capture_left_out'])")
n=$(tshark -r "$LOGDIR/bounded.pcapng" 2>/dev/null | wc -l)
[ "$n" = 1500 ] && ((left > 0)) || fail "bounded capture: $n frames in the file, $left left out"
# frames cut at 128 bytes: INA headers decoded, nothing called malformed
cut=$(tshark -X lua_script:"$lua" -r "$LOGDIR/bounded.pcapng" -Y "ina && frame.cap_len < frame.len" 2>/dev/null | wc -l)
bad=$(tshark -X lua_script:"$lua" -r "$LOGDIR/bounded.pcapng" -Y "ina && _ws.expert" 2>/dev/null | wc -l)
((cut > 0)) && [ "$bad" = 0 ] || fail "snaplen 128: $cut INA frames cut, $bad called malformed"
"$top/testbed/topo/topo.sh" down $TOPO_NAME

# started and stopped at run time: configured paused (start = false), a
# signed control command starts it, a telemetry command stops it
capture_up "$LOGDIR/later.pcapng" 100000 128 "start = false; "
packets() { stats_get "d['switches']['tor0']['capture_packets']"; }
one_call() { "$top/testbed/topo/launch.sh" $TOPO_NAME -- "$perf" --only in --algo ring -b 64K -e 64K -n 1 -w 0 >/dev/null ||
	fail "a call while capturing"; }
one_call
[ "$(packets)" = 0 ] || fail "a paused capture wrote $(packets) frames"
ans=$(in_host 0 "$top/testbed/topo/swemu-ctl" 10.85.0.254 'op = "capture"; action = "start";') || fail "capture start: $ans"
grep -q "^ok capture=on" <<<"$ans" || fail "capture start answered: $ans"
one_call
tel=$(echo "/swemu/capture,tor0.stop" | dpdk-telemetry.py -f "swemu-$TOPO_NAME" 2>/dev/null | grep '"/swemu/capture"') ||
	fail "no telemetry answer to capture stop"
grep -q '"running": 0' <<<"$tel" || fail "telemetry stop: $tel"
on=$(packets) # read after the stop: the last call's stragglers are in it
((on > 0)) || fail "a started capture wrote nothing"
one_call
[ "$(packets)" = "$on" ] || fail "a stopped capture went on: $on then $(packets) frames"
# the file's name never comes from the network
ans=$(in_host 0 "$top/testbed/topo/swemu-ctl" 10.85.0.254 'op = "capture"; action = "start"; file = "/tmp/x";' 2>&1) &&
	fail "a capture file from the network was taken: $ans"
echo "capture: pcapng per port and direction, decoded by ina.lua against swemu's counters; bound of 1500 kept ($left left out); paused, started by control command ($on frames), stopped by telemetry"
