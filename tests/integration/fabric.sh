#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Three logical switches in one swemu process: two INA ToRs (h0,h1 | h2,h3)
# and a spine, joined by in-memory links with emulated 1 Gbit/s and 20 us.
# Hosts talk across the spine; each rack aggregates in its own ToR at the
# same time, and a rack's aggregation traffic stays off the spine.  All of
# it twice: on one lcore, then on two (tor1 on its own lcore, so its links
# to the spine cross lcores).
. "$(dirname "$0")/lib.sh"
"$top/testbed/topo/topo.sh" up itfab 4 --subnet 10.81.0
TOPO_NAME=itfab
cfg=/run/swemu-testbed/itfab/fabric.cfg
cat > "$cfg" <<'C'
stats_file = "/run/swemu-testbed/itfab/stats.json";
idle_sleep_max_us = 200;
switches = (
  { name = "tor0"; ina = true; mac = "02:5e:00:00:00:f0"; ip = "10.81.0.250";
    slots = 64; max_elems = 1024;
    ports = ( { name = "h0"; dev = "net_af_packet0"; }, { name = "h1"; dev = "net_af_packet1"; },
              { name = "up"; link = "spine.t0"; rate = "1G"; buffer = "512K"; delay_us = 20; } );
    jobs = ( { id = 1; fan_in = 2; dtype = "int32"; slots = 16; elems = 1024; outputs = ["multicast"];
               contributors = ["10.81.0.1:48864", "10.81.0.2:48864"]; },
             # a member in the other rack: its results (shared-payload
             # frames) cross the spine over in-memory links
             { id = 2; fan_in = 2; dtype = "int32"; slots = 16; elems = 1024; outputs = ["multicast"];
               contributors = ["10.81.0.1:48865", "10.81.0.3:48865"]; } ); },
  { name = "tor1"; ina = true; mac = "02:5e:00:00:00:f1"; ip = "10.81.0.251";
    slots = 64; max_elems = 1024;
    ports = ( { name = "h2"; dev = "net_af_packet2"; }, { name = "h3"; dev = "net_af_packet3"; },
              { name = "up"; link = "spine.t1"; rate = "1G"; buffer = "512K"; delay_us = 20; } );
    jobs = ( { id = 1; fan_in = 2; dtype = "int32"; slots = 16; elems = 1024; outputs = ["multicast"];
               contributors = ["10.81.0.3:48864", "10.81.0.4:48864"]; } ); },
  { name = "spine";
    ports = ( { name = "t0"; link = "tor0.up"; rate = "1G"; buffer = "512K"; delay_us = 20; },
              { name = "t1"; link = "tor1.up"; rate = "1G"; buffer = "512K"; delay_us = 20; } ); }
);
C
scenario() {
"$top/testbed/topo/topo.sh" start itfab "$cfg"

in_host 0 ping -c 3 -i 0.2 -W 5 10.81.0.4 >/dev/null || fail "ping h0 -> h3 across the spine"
in_host 3 ping -c 2 -i 0.2 -W 2 -s 8000 -M do 10.81.0.2 >/dev/null || fail "jumbo ping h3 -> h1 across the spine"
spine_before=$(stats_get 'd["switches"]["spine"]["ports"]["t0"]["rx_bytes"]')

rack() { # rack FIRST SWITCH_IP: both workers of one rack
	local pids=()
	for i in 0 1; do
		in_host $(($1 + i)) $PY "$top/tests/integration/ina_client.py" --switch "$2" --bind "10.81.0.$(($1 + i + 1))" \
			--job 1 --index "$i" --fanin 2 --slices 200 --count 1024 --slots 16 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || return 1; done
}
rack 0 10.81.0.250 & r0=$!
rack 2 10.81.0.251 & r1=$!
wait $r0 || fail "rack 0 aggregation"
wait $r1 || fail "rack 1 aggregation"

spine_after=$(stats_get 'd["switches"]["spine"]["ports"]["t0"]["rx_bytes"]')
# 200 slices x 4 KiB x 2 workers = 1.6 MB per rack went to its ToR; the
# spine may see ARP and stray broadcasts, not the gradients
(( spine_after - spine_before < 100000 )) || fail "rack traffic crossed the spine: $((spine_after - spine_before)) bytes"
[ "$(stats_get 'd["switches"]["tor0"]["ina"]["jobs"]["1"]["completions"]')" = 200 ] || fail "tor0 completions"

# across racks: h0 and h2 aggregate in tor0
pids=()
for i in 0 1; do
	in_host $((2 * i)) $PY "$top/tests/integration/ina_client.py" --switch 10.81.0.250 --bind "10.81.0.$((2 * i + 1))" \
		--port 48865 --job 2 --index "$i" --fanin 2 --slices 100 --count 1024 --slots 8 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "cross-rack aggregation"; done
[ "$(stats_get 'd["switches"]["tor0"]["ina"]["jobs"]["2"]["completions"]')" = 100 ] || fail "job 2 completions"
[ "$(stats_get 'd["switches"]["tor1"]["ina"]["jobs"]["1"]["completions"]')" = 200 ] || fail "tor1 completions"
}

scenario
echo "fabric: 3 logical switches in one process; cross-spine ping; two racks aggregate exactly and locally; a cross-rack job exact"

# the same on two lcores: tor1 pinned to lcore 1, tor0 and the spine on 0
if (($(nproc) < 2)); then
	echo "fabric: one CPU here, the two-lcore pass is skipped"
	exit 0
fi
d=/run/swemu-testbed/itfab
pid=$(cat "$d/swemu.pid")
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$pid" 2>/dev/null && fail "swemu did not stop"
sed -i 's/ -l 0 / -l 0,1 /' "$d/eal.args"
grep -q -- ' -l 0,1 ' "$d/eal.args" || fail "could not give swemu two lcores: $(cat "$d/eal.args")"
sed -i 's/{ name = "tor1"; ina = true;/{ name = "tor1"; lcore = 1; ina = true;/' "$cfg"
scenario
[ "$(stats_get '[(w["lcore"], w["switches"]) for w in d["workers"]]')" = "[(0, ['tor0', 'spine']), (1, ['tor1'])]" ] \
	|| fail "switches not on the lcores asked for: $(stats_get 'd["workers"]')"
echo "fabric on two lcores: the same, tor1's links to the spine crossing lcores"
