#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Access VLANs: h0, h1 in VLAN 1 and h2, h3 in VLAN 2 on one swemu.  Hosts
# reach each other within a VLAN and not across (not even a flooded ARP
# request crosses); the switch's INA endpoint serves both VLANs, so a job of
# h0 and h2 aggregates exactly.
. "$(dirname "$0")/lib.sh"
subnet=10.83.0
TOPO_NAME=itvl
"$top/testbed/topo/topo.sh" up itvl 4 --subnet $subnet
d=/run/swemu-testbed/itvl
sed -E 's/(\{ name = "h[23]"; dev = "[^"]*";)/\1 vlan = 2;/' "$d/swemu.cfg" > "$d/vlan.cfg"
[ "$(grep -c 'vlan = 2;' "$d/vlan.cfg")" = 2 ] || fail "could not put h2, h3 in VLAN 2: $(cat "$d/vlan.cfg")"
"$top/testbed/topo/topo.sh" start itvl "$d/vlan.cfg"
[ "$(stats_get 'd["switches"]["tor0"]["ports"]["h3"]["vlan"]')" = 2 ] || fail "h3 is not in VLAN 2: $(stats)"

in_host 0 ping -c 2 -i 0.2 -W 2 $subnet.2 >/dev/null || fail "ping h0 -> h1 (VLAN 1)"
in_host 2 ping -c 2 -i 0.2 -W 2 $subnet.4 >/dev/null || fail "ping h2 -> h3 (VLAN 2)"
if in_host 0 ping -c 2 -i 0.2 -W 1 $subnet.3 >/dev/null 2>&1; then fail "h0 reached h2 across VLANs"; fi
# h2 would have learned h0 from its ARP request had the flood reached it
[ -z "$(in_host 2 ip neigh show $subnet.1)" ] || fail "h0's ARP request reached h2: $(in_host 2 ip neigh show)"
[ -z "$(in_host 3 ip neigh show $subnet.1)" ] || fail "h0's ARP request reached h3: $(in_host 3 ip neigh show)"

# one job, one member per VLAN: results go back into each member's VLAN
pair_job 5 $subnet 0 2
echo "vlan: ping within VLANs, none across (no ARP flood crossed), INA job of h0 (VLAN 1) and h2 (VLAN 2) exact"
