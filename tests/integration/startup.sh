#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A switch that starts while its hosts already send learns every MAC on the
# port it is behind.  af_packet sockets take frames from every interface of
# the namespace until the driver binds them, so a host's frames sent while
# swemu's ports open land in other ports' rings too; swemu drops what its
# devices hold before the first poll (`before_start`).  Without that, a MAC
# was learned on another host's port, then moved: a failed first ping.
# Here h1 sends broadcasts from its own MAC all through swemu's start; the
# FDB must never move it, and the flood must reach the other hosts.
. "$(dirname "$0")/lib.sh"
subnet=10.76.0
TOPO_NAME=itst
"$top/testbed/topo/topo.sh" down itst
"$top/testbed/topo/topo.sh" up itst 4 --subnet $subnet --no-ina >/dev/null
mac=02:5e:00:00:00:02 # h1's (topo.sh: host i has ...:i+1)
stop=$LOGDIR/stop
# a broadcast every 200 us until told to stop (at most 60 s): a frame in
# every window swemu's start leaves open
in_host 1 $PY - "$mac" "$stop" <<'PY' &
import os, socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
frame = b"\xff" * 6 + bytes.fromhex(sys.argv[1].replace(":", "")) + b"\x88\xb5" + b"\0" * 60
end = time.time() + 60
while time.time() < end and not os.path.exists(sys.argv[2]):
    for _ in range(50):
        s.send(frame)
        time.sleep(0.0002)
PY
sender=$!
"$top/testbed/topo/topo.sh" start itst
# swemu switches h1's frames by now; a few more seconds of them, then stop
start_rx=$(stats_get "d['switches']['tor0']['ports']['h1']['rx_packets']")
for _ in $(seq 100); do
	(($(stats_get "d['switches']['tor0']['ports']['h1']['rx_packets']") > start_rx + 2000)) && break
	sleep 0.1
done
touch "$stop"
wait "$sender"
sw="d['switches']['tor0']"
summary=$(stats_get "$sw['fdb_moves'], $sw.get('fdb_last_move'), {n: (p['rx_packets'], p['drops'].get('before_start', 0)) for n, p in $sw['ports'].items()}")
[ "$(stats_get "$sw['fdb_moves']")" = 0 ] || fail "h1's MAC moved (moves, latest, per port rx and before_start): $summary"
(($(stats_get "$sw['ports']['h1']['rx_packets']") > start_rx + 2000)) || fail "h1's broadcasts did not go on: $summary"
(($(stats_get "$sw['ports']['h3']['tx_packets']") >= 2000)) || fail "h1's broadcasts were not flooded: $summary"
in_host 0 ping -c 2 -i 0.2 -W 2 $subnet.2 >/dev/null || fail "ping h0 -> h1 after the start"
echo "startup: h1 sending all through swemu's start, its MAC never moved; (moves, latest, per port rx and before_start): $summary"
