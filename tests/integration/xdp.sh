#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The testbed on af_xdp ports (topo.sh --pmd af_xdp): six hosts, more than
# the three that fit before the shared receive pool was sized per af_xdp
# port.  Ping between the outer ports, an exact fan-in 6 aggregation (512
# elements: the frame must fit veth's XDP MTU), and counters that agree;
# the host library refuses INA packets larger than the MTU.
. "$(dirname "$0")/lib.sh"
n=6
topo itxdp $n --subnet 10.86.0 --pmd af_xdp

devs=$(stats_get '" ".join(sorted(p["dev"] for p in d["switches"]["tor0"]["ports"].values()))')
for ((i = 0; i < n; i++)); do
	[[ " $devs " == *" net_af_xdp$i "* ]] || fail "port $i is not an af_xdp device: $devs"
done

in_host 0 ping -c 2 -i 0.2 -W 2 10.86.0.$n >/dev/null || fail "ping h0 -> h$((n - 1))"
in_host $((n - 1)) ping -c 2 -i 0.2 -W 2 -s 2900 -M do 10.86.0.4 >/dev/null || fail "2900-byte ping h$((n - 1)) -> h3"

install_job 1 $n int32 10.86.0 >/dev/null || fail "install job 1"
run_workers 1 $n 10.86.0 --slices 200 --count 512 --slots 16 || fail "int32 aggregation on af_xdp"
contrib=$(stats_get 'd["switches"]["tor0"]["ina"]["jobs"]["1"]["contributions"]')
done_=$(stats_get 'd["switches"]["tor0"]["ina"]["jobs"]["1"]["completions"]')
[ "$contrib" = $((200 * n)) ] || fail "job 1: $contrib contributions, want $((200 * n))"
[ "$done_" = 200 ] || fail "job 1: $done_ completions, want 200"
# every host's port carried its share: 200 contributions in, 200 results out
low=$(stats_get 'min(min(p["rx_packets"], p["tx_packets"]) for p in d["switches"]["tor0"]["ports"].values())')
((low >= 200)) || fail "a port carried fewer than 200 frames each way ($low)"
# the host library refuses INA packets the 3000-byte MTU would fragment
# (the switch could not aggregate them: every call timed out), naming the
# count that fits, and runs with that count
perf=${PERF:-$top/build/ring/ina-allreduce-perf}
t0=$SECONDS
if out=$(HCL_INA_ELEMS=1024 "$top/testbed/topo/launch.sh" itxdp -- "$perf" --only in --algo ps-ina -b 64K -e 64K -n 1 -w 0 --timeout 20000 2>&1); then
	fail "ps-ina with 4 KiB packets over MTU 3000 did not fail: $out"
fi
grep -q "more than the MTU 3000 towards 10.86.0.254:48864; set HCL_INA_ELEMS (cfg.ina_elems) to 737 or fewer" <<<"$out" ||
	fail "no MTU error: $out"
((SECONDS - t0 < 15)) || fail "the MTU error took $((SECONDS - t0)) s"
out=$(HCL_INA_ELEMS=737 "$top/testbed/topo/launch.sh" itxdp -- "$perf" --only in --algo ps-ina -b 64K -e 64K -n 1 -w 0 --timeout 20000 2>&1) ||
	fail "ps-ina with 737 elements: $out"
grep -qE "^ +65536 +16384 +float +sum .* 0$" <<<"$out" || fail "ps-ina with 737 elements: $out"
echo "xdp: $n af_xdp ports, ping and 2900-byte ping through, fan-in $n int32 exact ($contrib contributions), INA packets held to the MTU"
