#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Ring all-reduce over kernel UDP between four hosts in namespaces through
# swemu (plain switch): exact int32 and fp32 results, also with 5% loss on
# every port; a rank killed mid-run makes every other rank fail within the
# deadline with an error naming a peer.
. "$(dirname "$0")/lib.sh"
exe=${RING_RANK:-$top/build/tests/ring_rank}
peers=10.82.0.1:5555,10.82.0.2:5555,10.82.0.3:5555,10.82.0.4:5555

ranks() { # ranks ARGS...: all four, every one must pass
	local pids=() rc=0
	for i in 0 1 2 3; do
		in_host $i "$exe" --rank $i --peers $peers "$@" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	return $rc
}

topo itring 4 --subnet 10.82.0 --no-ina
ranks --count 1000003 --calls 3 || fail "int32 ring"
ranks --count 77777 --calls 2 --dtype fp32 || fail "fp32 ring"
# the benchmark tool through the public API and the launcher
out=$("$top/testbed/topo/launch.sh" itring -- "${PERF:-$top/build/ring/ina-allreduce-perf}" --only in -b 64K -e 1M -f 4 -n 2 -w 1) \
	|| fail "ina-allreduce-perf: $out"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum .* 0$' <<<"$out")" = 3 ] || fail "perf table: $out"
grep -q "^# Avg bus bandwidth" <<<"$out" || fail "no average line: $out"
# the software parameter server (in rank 0) through the same switch
out=$("$top/testbed/topo/launch.sh" itring -- "${PERF:-$top/build/ring/ina-allreduce-perf}" --only in --algo ps -b 64K -e 1M -f 4 -n 2 -w 1) \
	|| fail "ina-allreduce-perf --algo ps: $out"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum .* 0$' <<<"$out")" = 3 ] || fail "ps table: $out"
# hierarchical, two racks of two
out=$("$top/testbed/topo/launch.sh" itring --rack-size 2 -- "${PERF:-$top/build/ring/ina-allreduce-perf}" --only in --algo hier -b 64K -e 1M -f 4 -n 2 -w 1) \
	|| fail "ina-allreduce-perf --algo hier: $out"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum .* 0$' <<<"$out")" = 3 ] || fail "hier table: $out"
"$top/testbed/topo/topo.sh" down itring

topo itring 4 --subnet 10.82.0 --no-ina --loss 0.05
ranks --count 300001 --calls 3 || fail "int32 ring under 5% loss"
# through the public API a 4 MiB call runs as two rings (channels), each on
# its own sockets: exact under the same loss, and with three channels
for ch in 2 3; do
	out=$(HCL_RING_CHANNELS=$ch "$top/testbed/topo/launch.sh" itring -- "${PERF:-$top/build/ring/ina-allreduce-perf}" --only in \
		-d int32 -b 3M -e 4M -f 2 -n 2 -w 0) || fail "$ch ring channels under 5% loss: $out"
	[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +int32 +sum .* 0$' <<<"$out")" = 2 ] || fail "$ch channels table: $out"
done
# left to the library: the four ranks share this machine's CPUs (one boot
# id through every namespace), a channel for each CPU a rank gets, 1 to 4
want=$(($(nproc) / 4)); want=$((want < 1 ? 1 : want > 4 ? 4 : want))
out=$(HCL_DEBUG=1 "$top/testbed/topo/launch.sh" itring -- "${PERF:-$top/build/ring/ina-allreduce-perf}" --only out \
	-d int32 -b 4M -e 4M -n 2 -w 0 2>&1) || fail "auto ring channels under 5% loss: $out"
grep -q "^hcl: ring channels: $want (auto)" <<<"$out" || fail "auto ring channels, want $want: $out"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +int32 +sum .* 0 +N/A +N/A +N/A +N/A$' <<<"$out")" = 1 ] ||
	fail "auto channels, out of place: $out"
lost=$(stats_get 'sum(p["drops"]["emulated_loss"] for p in d["switches"]["tor0"]["ports"].values())')
((lost > 0)) || fail "no emulated loss counted"

# rank 2 dies mid-run: the others return an error naming a peer, before
# the 5 s call deadline (its port closed, the ranks waiting on it hear so
# from its host, and each rank that gives up closes its own in turn).
# ip netns exec execs the rank, so $! is the rank itself.
h2_rx() { stats_get 'd["switches"]["tor0"]["ports"]["h2"]["rx_packets"]'; }
before=$(h2_rx)
pids=()
for i in 0 1 2 3; do
	ip netns exec "$TOPO_NAME-h$i" "$exe" --rank $i --peers $peers --count 4000000 --calls 50 --deadline-s 5 \
		> $LOGDIR/ring-$i.log 2>&1 &
	pids+=($!)
done
# mid-run = rank 2 has spoken to both neighbours (these ranks meet without
# a rendezvous: one that dies before it spoke is, to them, one that has not
# started yet, and theirs is the deadline); past the first call's 2700
# packets of this run it has
spoke=""
for _ in $(seq 600); do
	(($(h2_rx) - before > 4000)) && spoke=1 && break
	sleep 0.05 # polls the counter: no fixed wait
done
[ -n "$spoke" ] || fail "rank 2 did not get through its first call: $(tail -n 2 $LOGDIR/ring-*.log)"
kill_rank_expect $LOGDIR/ring 4 "rank [0-9]+ \(10\.82\.0\.[0-9]+:5555\) (did not|is gone)"
"$top/testbed/topo/topo.sh" down itring

# eight ranks, 5% loss on every port
topo itring 8 --subnet 10.82.0 --no-ina --loss 0.05
peers8=$(for i in $(seq 1 8); do printf "10.82.0.%d:5555," $i; done)
pids=()
for i in $(seq 0 7); do
	ip netns exec "$TOPO_NAME-h$i" "$exe" --rank $i --peers "${peers8%,}" --count 500009 --calls 2 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "8-rank ring under 5% loss"; done
echo "ring: 4 and 8 ranks over UDP through swemu exact (int32, fp32, 5% loss); a killed rank is reported by the others"
