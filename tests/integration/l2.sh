#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Ordinary traffic through swemu: ARP, ping (also jumbo), a TCP transfer
# whose bytes are checked end to end, and counters that agree with it;
# the emulated delay of topo.sh --delay-us in a ping's round trip; swemu
# in a namespace of its own with its ports.
. "$(dirname "$0")/lib.sh"
topo itl2 3 --subnet 10.78.0
# swemu and its ports are in a namespace of their own (topo.sh): in the
# root namespace two topologies' swemus could collide on af_packet's
# fanout groups (pid ^ ifindex) and one of them lose its ports
pid=$(cat /run/swemu-testbed/itl2/swemu.pid)
[ "$(ip netns identify "$pid")" = itl2-sw ] || fail "swemu runs in namespace '$(ip netns identify "$pid")', not itl2-sw"
! ip link show itl2-s0 >/dev/null 2>&1 || fail "swemu's port itl2-s0 is in the root namespace"

in_host 0 ping -c 3 -i 0.2 -W 2 10.78.0.2 >/dev/null || fail "ping h0 -> h1"
in_host 2 ping -c 2 -i 0.2 -W 2 -s 8000 -M do 10.78.0.1 >/dev/null || fail "jumbo ping h2 -> h0"

# 32 MiB over TCP, sha256 on both sides
in_host 1 $PY - > "$LOGDIR/l2-rx" <<'PY' &
import hashlib, socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.78.0.2", 5001)); s.listen(1); s.settimeout(30)
c, _ = s.accept(); c.settimeout(30); h = hashlib.sha256(); n = 0
while True:
    b = c.recv(1 << 16)
    if not b: break
    h.update(b); n += len(b)
print(f"{n} {h.hexdigest()}")
PY
srv=$!
# connect retries until the server listens (no fixed sleep)
want=$(in_host 0 $PY - <<'PY'
import hashlib, socket, time
data = hashlib.sha256(b"seed").digest() * (32 * 1024 * 1024 // 32)
for _ in range(100):
    try:
        c = socket.create_connection(("10.78.0.2", 5001), timeout=5); break
    except OSError:
        time.sleep(0.05)
c.sendall(data); c.close()
print(f"{len(data)} {hashlib.sha256(data).hexdigest()}")
PY
)
wait $srv || fail "TCP receiver"
got=$(cat "$LOGDIR/l2-rx")
[ "$got" = "$want" ] || fail "TCP transfer: got '$got', want '$want'"

# counters: the bytes went h0 -> h1 through the switch, nothing dropped (a
# tx_full is the kernel pushing back on a loaded machine; TCP recovers it;
# before_start, the hosts' chatter as swemu started)
stats_get '
(lambda p: (p["h0"]["rx_bytes"] > 32*1024*1024 and p["h1"]["tx_bytes"] > 32*1024*1024
            and all(n == 0 for v in p.values() for k, n in v["drops"].items() if k not in ("tx_full", "before_start")))
           or sys.exit(1))(d["switches"]["tor0"]["ports"])' >/dev/null \
	|| fail "port counters do not show the transfer, or show drops: $(stats)"
[ "$(stats_get 'd["switches"]["tor0"]["fdb_entries"]')" -ge 3 ] || fail "fdb did not learn 3 hosts"
# the same counters through DPDK telemetry
tel=$(echo "/swemu/port,tor0.h0" | dpdk-telemetry.py -f "swemu-$TOPO_NAME" 2>/dev/null | grep '"/swemu/port"') \
	|| fail "no telemetry answer"
$PY -c "import json,sys; d=json.loads(sys.argv[1])['/swemu/port']; sys.exit(0 if d['rx_bytes'] > 32*1024*1024 else 1)" "$tel" \
	|| fail "telemetry port counters: $tel"
# SIGTERM: exit 0, final stats on stdout, EAL runtime directory removed
d=/run/swemu-testbed/$TOPO_NAME
pid=$(cat "$d/swemu.pid")
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$pid" 2>/dev/null && fail "swemu did not stop on SIGTERM"
grep -q '"switches"' "$d/swemu.log" || fail "no final stats on stdout"
[ ! -e "/var/run/dpdk/swemu-$TOPO_NAME" ] || fail "runtime directory left: $(ls /var/run/dpdk/swemu-$TOPO_NAME)"
# the emulator's delay on every egress port, as topo.sh (and a trial file)
# sets it: h0 -> h1 -> h0 crosses the ToR's port toward h1 and the one
# back toward h0, 5 ms each; bursty loss that never starts loses nothing.
# Two plain racks: h0, h1 behind tor0, h2, h3 behind tor1, a spine above
"$top/testbed/topo/topo.sh" down itl2
topo itl2 4 --subnet 10.78.0 --racks 2 --no-ina --delay-us 5000 --jitter-us 1000 --burst-loss 0,1,1
grep -q 'delay_us = 5000; jitter_us = 1000; burst_loss = { p_good_bad = 0; p_bad_good = 1; loss_bad = 1; };' \
	/run/swemu-testbed/itl2/swemu.cfg || fail "delay not in the switch config: $(grep h0 /run/swemu-testbed/itl2/swemu.cfg)"
# the first ping resolves h1's address and teaches the switches both hosts:
# the round trips measured next are the emulated links' alone
in_host 0 ping -c 1 -W 3 10.78.0.2 >/dev/null || fail "ping h0 -> h1 with delay"
rtt=$(in_host 0 ping -c 5 -i 0.2 -W 2 10.78.0.2 | awk -F'[/ ]' '/^rtt/ {print $7 " " $9}') || fail "ping with delay"
read -r rmin rmax <<<"$rtt"
$PY -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if 10 <= a and b < 10 + 2 + 20 else 1)" $rmin $rmax ||
	fail "ping across two ports of 5 ms (+0..1 ms): rtt min $rmin, max $rmax ms"
# a plain ToR's and the spine's links set at run time over their control
# channels (signed, from their hosts): tor1's port toward h2 and the
# spine's toward tor1 at 30 ms.  h0 -> h2 -> h0 then crosses 5 + 30 + 30
# ms out and 3 x 5 back: at least 80 ms; INA commands are refused there
ans=$(in_host 2 "$top/testbed/topo/swemu-ctl" 10.78.0.253 'op = "emu"; port = "h2"; delay_us = 30000;') ||
	fail "emu on plain tor1: $ans"
ans=$(in_host 0 "$top/testbed/topo/swemu-ctl" 10.78.0.246 'op = "emu"; port = "t1"; delay_us = 30000;') ||
	fail "emu on the spine: $ans"
ans=$(in_host 2 "$top/testbed/topo/swemu-ctl" 10.78.0.253 'op = "remove"; id = 1;') && fail "remove on a plain ToR: ok?"
[[ "$ans" == *"INA is off on this switch"* ]] || fail "remove on a plain ToR answered '$ans'"
rtt=$(in_host 0 ping -c 3 -i 0.2 -W 2 10.78.0.3 | awk -F'[/ ]' '/^rtt/ {print $7}') || fail "ping across the racks"
$PY -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 80 else 1)" "$rtt" || fail "across racks after the changes: rtt $rtt ms"
[ "$(stats_get 'd["switches"]["tor1"]["ctrl_ok"]')" = 1 ] && [ "$(stats_get 'd["switches"]["spine"]["ctrl_ok"]')" = 1 ] &&
	[ "$(stats_get 'd["switches"]["tor1"]["ctrl_refused"]')" = 1 ] || fail "control counters: $(stats)"
echo "l2: ping, jumbo ping, 32 MiB TCP exact; counters agree in JSON and telemetry; SIGTERM clean; delay per port: rtt $rmin-$rmax ms; a plain ToR's and the spine's links set at run time (rtt $rtt ms)"
