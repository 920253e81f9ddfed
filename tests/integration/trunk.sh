#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# 802.1Q trunks.  1. Between switches: tor0 has h0 in VLAN 10 and h1 in
# VLAN 20, tor1 has h2 in VLAN 10 and h3 in VLAN 20, and one link joins
# them as a trunk carrying both VLANs tagged.  Hosts reach their VLAN
# across the trunk and nothing else; tor0's INA endpoint aggregates a job
# of h0 and h2 exactly, h2's results crossing the trunk tagged.  2. Toward
# a host (af_packet trunk port): this kernel has no VLAN interfaces, so
# raw frames (vlan_probe.py) go tagged into the trunk and are read back
# with their tags.  tests/unit/swemu/test_dp.c covers tags against crafted frames too.
. "$(dirname "$0")/lib.sh"
subnet=10.89.0
TOPO_NAME=ittr
"$top/testbed/topo/topo.sh" up ittr 4 --subnet $subnet
d=/run/swemu-testbed/ittr
cat > "$d/trunk.cfg" <<E
stats_file = "$d/stats.json";
idle_sleep_max_us = 200;
switches = (
  { name = "tor0"; ina = true; mac = "02:5e:00:00:00:fe"; ip = "$subnet.254"; slots = 64; max_elems = 2048;
    mgmt = [ "$subnet.1" ];
    ports = ( { name = "h0"; dev = "net_af_packet0"; vlan = 10; },
              { name = "h1"; dev = "net_af_packet1"; vlan = 20; },
              { name = "up"; link = "tor1.up"; trunk = [ 10, 20 ]; } ); },
  { name = "tor1";
    ports = ( { name = "up"; link = "tor0.up"; trunk = [ 10, 20 ]; },
              { name = "h2"; dev = "net_af_packet2"; vlan = 10; },
              { name = "h3"; dev = "net_af_packet3"; vlan = 20; } ); }
);
E
"$top/testbed/topo/topo.sh" start ittr "$d/trunk.cfg"
[ "$(stats_get 'd["switches"]["tor1"]["ports"]["up"]["trunk"]')" = "[10, 20]" ] || fail "no trunk: $(stats)"

in_host 0 ping -c 2 -i 0.2 -W 2 $subnet.3 >/dev/null || fail "ping h0 -> h2 (VLAN 10 over the trunk)"
in_host 1 ping -c 2 -i 0.2 -W 2 $subnet.4 >/dev/null || fail "ping h1 -> h3 (VLAN 20 over the trunk)"
in_host 2 ping -c 2 -i 0.2 -W 2 -s 8000 -M do $subnet.1 >/dev/null || fail "8000-byte ping h2 -> h0 over the trunk"
if in_host 0 ping -c 2 -i 0.2 -W 1 $subnet.4 >/dev/null 2>&1; then fail "h0 (VLAN 10) reached h3 (VLAN 20)"; fi
if in_host 0 ping -c 2 -i 0.2 -W 1 $subnet.2 >/dev/null 2>&1; then fail "h0 (VLAN 10) reached h1 (VLAN 20)"; fi
# h3 would have learned h0 from its ARP request had the flood crossed VLANs
[ -z "$(in_host 3 ip neigh show $subnet.1)" ] || fail "h0's ARP request reached h3: $(in_host 3 ip neigh show)"
# both VLANs crossed the link, none was dropped there
for p in '["tor0"]["ports"]["up"]' '["tor1"]["ports"]["up"]'; do
	drops=$(stats_get "{k: v for k, v in d['switches']$p['drops'].items() if v}")
	[ "$drops" = "{}" ] || fail "drops on $p: $drops"
done

# INA across the trunk: h2's contributions arrive tagged at tor0 and its
# results leave tagged
pair_job 6 $subnet 0 2
"$top/testbed/topo/topo.sh" down ittr

# 2. h0 in VLAN 10, h1 on a trunk of 10 and 20 (no native), h2 in VLAN 20
"$top/testbed/topo/topo.sh" up ittr 3 --subnet $subnet
sed -E -e 's/(\{ name = "h0"; dev = "[^"]*";)/\1 vlan = 10;/' \
	-e 's/(\{ name = "h1"; dev = "[^"]*";)/\1 trunk = [10, 20];/' \
	-e 's/(\{ name = "h2"; dev = "[^"]*";)/\1 vlan = 20;/' "$d/swemu.cfg" > "$d/trunk.cfg"
[ "$(grep -cE 'vlan = (10|20);|trunk = ' "$d/trunk.cfg")" = 3 ] || fail "could not set the VLANs: $(cat "$d/trunk.cfg")"
"$top/testbed/topo/topo.sh" start ittr "$d/trunk.cfg"
probe=$top/tests/integration/vlan_probe.py
# probe FROM VID TO MARK: what host TO reads of the frame host FROM sends
# with tag VID (0: none) — "vlan N", "untagged", or "none" within 3 s
probe() {
	rm -f "$d/ready"
	in_host "$3" $PY "$probe" recv eth0 "$4" "$d/ready" 3 > "$d/probe.out" &
	local rx=$!
	for _ in $(seq 100); do [ -f "$d/ready" ] && break; sleep 0.02; done
	in_host "$1" $PY "$probe" send eth0 "$2" "$4"
	wait $rx && cat "$d/probe.out" || echo none
}
[ "$(probe 0 0 1 1)" = "vlan 10" ] || fail "h0's frame left the trunk without tag 10"
[ "$(probe 2 0 1 2)" = "vlan 20" ] || fail "h2's frame left the trunk without tag 20"
[ "$(probe 1 10 0 3)" = "untagged" ] || fail "a tag-10 frame from the trunk did not reach h0 untagged"
[ "$(probe 1 20 2 4)" = "untagged" ] || fail "a tag-20 frame from the trunk did not reach h2 untagged"
[ "$(probe 1 20 0 5)" = "none" ] || fail "a tag-20 frame reached h0 (VLAN 10)"
n0=$(stats_get 'd["switches"]["tor0"]["ports"]["h1"]["drops"]["vlan_not_allowed"]')
u0=$(stats_get 'd["switches"]["tor0"]["ports"]["h1"]["drops"]["untagged_on_trunk"]')
[ "$(probe 1 30 0 6)" = "none" ] || fail "a tag-30 frame got through"
[ "$(probe 1 0 0 7)" = "none" ] || fail "an untagged frame got through a trunk without a native VLAN"
(($(stats_get 'd["switches"]["tor0"]["ports"]["h1"]["drops"]["vlan_not_allowed"]') > n0)) || fail "no vlan_not_allowed drop"
(($(stats_get 'd["switches"]["tor0"]["ports"]["h1"]["drops"]["untagged_on_trunk"]') > u0)) || fail "no untagged_on_trunk drop"
echo "trunk: VLANs 10 and 20 across a trunk link, nothing across VLANs, INA job of h0 and h2 (behind the trunk) exact; toward a host: tags on and off per VLAN, VLAN 30 and untagged frames dropped by name"
