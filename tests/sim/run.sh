#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# swemu-sim on small fabrics: every algorithm's result exact (the
# simulator checks each rank's sum against the inputs, and the INA runs go
# through nic/'s engine), no time under what the links allow (a reference
# no run can beat), near it where nothing but the links binds, exact under
# loss with the loss counted, and a bad argument refused with a message.
#   SIM=build/testbed/sim/swemu-sim tests/sim/run.sh
set -euo pipefail
sim=${SIM:?SIM: the swemu-sim binary}
py=/usr/bin/python3
scratch=$(mktemp -d /tmp/swemu-sim-test.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "not ok: $*" >&2; exit 1; }

# run NAME ARGS...: one JSON line into $scratch/NAME
run() {
	local name=$1
	shift
	"$sim" --racks=2 --hostsPerRack=2 --size=512K --iterations=2 --warmup=1 --computeMs=1 --jitter=none "$@" \
		>"$scratch/$name" 2>"$scratch/$name.err" || fail "$name exited $? ($(cat "$scratch/$name.err"))"
}
# field NAME KEY
field() { "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$scratch/$1" "$2"; }

# 4 hosts at 200M, 512 KiB: the ring's busiest link carries 2(N-1)/N of it
# each way; with both ToRs aggregating, every host link carries the host's
# own slices (all of it) plus, the host being one of 4 PS shards, both
# ToRs' partial sums of its quarter: 1.5x it each way
bound_ring=$("$py" -c 'print(2*3/4 * 512*1024*8 / 200e6 * 1e3)')
bound_ina=$("$py" -c 'print(1.5 * 512*1024*8 / 200e6 * 1e3)')
run ring --algorithm=ring
run ps --algorithm=ps
run ps-ina --algorithm=ps-ina --inaRacks=2
run ps-ina1 --algorithm=ps-ina --inaRacks=1
run aring --algorithm=agent-ring --inaRacks=2
run aring1 --algorithm=agent-ring --inaRacks=1
run hier --algorithm=hier
for r in ring ps ps-ina ps-ina1 aring aring1 hier; do
	[ -z "$(field $r error)" ] || fail "$r: $(field $r error)"
	[ "$(field $r calls)" = 8 ] || fail "$r: $(field $r calls) timed calls, want 4 ranks x 2"
	[ "$(field $r tail_drops)" = 0 ] || fail "$r: $(field $r tail_drops) frames dropped at full queues"
done
"$py" - "$scratch" "$bound_ring" "$bound_ina" <<'PY'
import json, sys
d, ring_b, ina_b = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
t = {n: json.load(open(f"{d}/{n}"))["time_ms"] for n in ("ring", "ps", "ps-ina", "ps-ina1", "aring", "aring1")}
print("# ms per call:", t, "bounds: ring %.1f, ps-ina %.1f" % (ring_b, ina_b))
assert ring_b <= t["ring"] <= 1.6 * ring_b, "ring %.1f ms against its link bound %.1f" % (t["ring"], ring_b)
assert ina_b <= t["ps-ina"] <= 1.6 * ina_b, "ps-ina %.1f ms against its link bound %.1f" % (t["ps-ina"], ina_b)
# every rack aggregating beats none (ps); one of two is no worse than none
# (here the PS shards' host links bind both)
assert t["ps-ina"] < t["ps-ina1"] <= 1.02 * t["ps"], "INA racks 2 / 1 / 0: %.1f, %.1f, %.1f ms" % (t["ps-ina"], t["ps-ina1"], t["ps"])
# agent-ring with every rack aggregating: each host link carries its data
# once each way, nothing else (the ToRs pass chunks along the ring)
assert ina_b / 1.5 <= t["aring"] <= 1.6 * ina_b, "agent-ring %.1f ms against %.1f" % (t["aring"], ina_b / 1.5)
assert t["aring"] < t["aring1"], "agent-ring INA racks 2 / 1: %.1f, %.1f ms" % (t["aring"], t["aring1"])
# the busiest link's transmit time per call: at least the algorithm's link
# bound (its data plus headers and ACKs), at most the call, and a host's
# link for the ring and for agent-ring with every rack aggregating
for n, b in (("ring", ring_b), ("aring", ina_b / 1.5)):
    r = json.load(open(f"{d}/{n}"))
    bl, cycle = r["busiest_link"], r["iteration_ms"]
    assert b <= bl["ms_per_iteration"] <= min(t[n], cycle), "%s: busiest link %s, bound %.1f, call %.1f" % (n, bl, b, t[n])
    assert "host" in bl["link"], "%s: busiest link %s" % (n, bl)
PY

# three racks, one INA: the plain racks' hosts sum at a software rack
# aggregator each (agent/psina_plan.h) and send one partial up, so the
# uplinks no longer bind (flat, every host's slices cross them)
run ragg --algorithm=ps-ina --racks=3 --inaRacks=1
run ragg-flat --algorithm=ps-ina --racks=3 --inaRacks=1 --psRackAgg=never
for r in ragg ragg-flat; do
	[ -z "$(field $r error)" ] && [ "$(field $r tail_drops)" = 0 ] || fail "$r: $(field $r error), $(field $r tail_drops) tail drops"
done
"$py" - "$scratch" <<'PY' || fail "rack aggregators"
import json, sys
a, f = (json.load(open(f"{sys.argv[1]}/{n}")) for n in ("ragg", "ragg-flat"))
print("# ps-ina, 3 racks of 2, one INA: %.1f ms with rack aggregators (busiest %s), %.1f flat (%s)"
      % (a["time_ms"], a["busiest_link"]["link"], f["time_ms"], f["busiest_link"]["link"]))
assert "spine" in f["busiest_link"]["link"] and "spine" not in a["busiest_link"]["link"]
assert a["time_ms"] < 0.95 * f["time_ms"]
PY

# a PS shard per host, past the old limits (16 shards, 64 jobs a ToR):
# 16 INA racks of 5.  A shard host's link carries its own slices and each
# ToR's partial of its shard, S (1 + 16/K) each way: 3 S with 8 shards,
# 1.2 S with 80 (each ToR holding 80 jobs)
run shards8 --algorithm=ps-ina --racks=16 --hostsPerRack=5 --inaRacks=16 --psShards=8
run shards80 --algorithm=ps-ina --racks=16 --hostsPerRack=5 --inaRacks=16 --psShards=80
for r in shards8 shards80; do
	[ -z "$(field $r error)" ] && [ "$(field $r tail_drops)" = 0 ] || fail "$r: $(field $r error), $(field $r tail_drops) tail drops"
done
"$py" - "$scratch" <<'PY' || fail "PS shards"
import json, sys
a, b = (json.load(open(f"{sys.argv[1]}/{n}")) for n in ("shards8", "shards80"))
s = 512 * 1024 / 1e6
print("# ps-ina, 16 INA racks of 5: 8 shards %.1f ms (busiest %s), 80 shards %.1f ms (%s)"
      % (a["time_ms"], a["busiest_link"], b["time_ms"], b["busiest_link"]))
assert a["busiest_link"]["mb_per_iteration"] >= 3 * s
assert 1.2 * s <= b["busiest_link"]["mb_per_iteration"] <= 1.6 * s
assert b["time_ms"] < 0.6 * a["time_ms"]
PY

# one INA ToR for 4 hosts, the seed's jitter starting one rank's second
# call early: the re-sends of its slices waiting for the others queued
# at its own link, each went again two round trips later, and its host
# sent 119 MB a call for 1 MiB (4.3 and 9.9 s where 45 ms do).  With
# the wait doubling for each re-send in a row (ring/hcl_ina_win.c): a
# call within 5x the host link's time for 1 MiB, its data under 3x
run early --algorithm=ps-ina --racks=1 --hostsPerRack=4 --inaRacks=1 --size=1M --computeMs=2 --jitter=normal:2 --seed=1
[ -z "$(field early error)" ] || fail "early rank: $(field early error)"
"$py" - "$scratch" <<'PY' || fail "early rank's re-sends"
import json, sys
r = json.load(open(f"{sys.argv[1]}/early"))
bound = 2**20 * 8 / 200e6 * 1e3
print("# ps-ina, one INA ToR, a rank early: calls %s ms (bound %.1f), busiest %s" % (r["iteration_times_ms"], bound, r["busiest_link"]))
assert max(r["iteration_times_ms"]) < 5 * bound
assert r["busiest_link"]["mb_per_iteration"] < 3 * 2**20 / 1e6
PY

# the INA racks named (a trial file's list): rack 1 alone, exact, and
# counted as one INA rack
run ps-ina-r1 --algorithm=ps-ina --inaRackList=1
[ -z "$(field ps-ina-r1 error)" ] && [ "$(field ps-ina-r1 ina_racks)" = 1 ] ||
	fail "inaRackList=1: ina_racks $(field ps-ina-r1 ina_racks), error '$(field ps-ina-r1 error)'"

# 2% loss on every switch port: still exact, the loss really happened
run lossy --algorithm=ps-ina --inaRacks=1 --loss=0.02
[ -z "$(field lossy error)" ] || fail "lossy: $(field lossy error)"
[ "$(field lossy loss_drops)" -gt 0 ] || fail "lossy: no frame was lost"
run lossy-ring --algorithm=ring --loss=0.02
[ -z "$(field lossy-ring error)" ] || fail "lossy ring: $(field lossy-ring error)"
run lossy-aring --algorithm=agent-ring --inaRacks=1 --loss=0.02
[ -z "$(field lossy-aring error)" ] || fail "lossy agent-ring: $(field lossy-aring error)"
[ "$(field lossy-aring loss_drops)" -gt 0 ] || fail "lossy agent-ring: no frame was lost"

# pacing: rank 1 computing 3x as long leaves the others early by 40 ms
# every call, over the rule's threshold: after its window of 8 calls they
# are held back; without --pace nobody is
run plain --algorithm=ring --computeMs=20 --straggler=1:3 --iterations=12
run paced --algorithm=ring --computeMs=20 --straggler=1:3 --iterations=12 --pace=true
[ "$(field plain paced_calls)" = 0 ] || fail "unpaced run: $(field plain paced_calls) calls paced"
[ "$(field paced paced_calls)" -gt 0 ] || fail "paced run: no call was paced"

# another job's traffic (each host to its peer in the next rack, 50M
# each) shares the uplinks and host links: the ring slows, still exact
run bg --algorithm=ring --background=50M
[ -z "$(field bg error)" ] || fail "background: $(field bg error)"
"$py" -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); assert b > 1.05 * a, (a, b)' \
	"$(field ring time_ms)" "$(field bg time_ms)" || fail "background traffic did not slow the ring"

# the host CPU model: 2 ms per datagram a host receives.  A ring rank
# takes 6 steps of a 128 KiB chunk, 15 datagrams each, in order: at least
# 90 x 2 ms; at most that plus its 48 ACKs' 2 ms on top of the time
# without the model (the wire and the CPU overlap at most fully)
run cpu --algorithm=ring --hostPacketNs=2000000
[ -z "$(field cpu error)" ] || fail "host CPU model: $(field cpu error)"
"$py" -c 'import sys; t0, t = float(sys.argv[1]), float(sys.argv[2]); assert 180 <= t <= t0 + 276, (t0, t)' \
	"$(field ring time_ms)" "$(field cpu time_ms)" || fail "ring with 2 ms per datagram: $(field cpu time_ms) ms"
run cpu-ina --algorithm=ps-ina --inaRacks=2 --hostPacketNs=2000000
[ -z "$(field cpu-ina error)" ] || fail "host CPU model, ps-ina: $(field cpu-ina error)"
"$py" -c 'import sys; assert float(sys.argv[2]) > 2 * float(sys.argv[1])' "$(field ps-ina time_ms)" \
	"$(field cpu-ina time_ms)" || fail "ps-ina did not pay for its hosts' CPU"

# a workload is paced per step, as the library paces a marked iteration:
# rank 1 computing 4x as long leaves the others early by ~33 ms at the
# step's first bucket (over the rule's threshold, a fifth of a ~130 ms
# step), and only that bucket is held back.  The second follows it in
# order right after the wait for the straggler, never early: a rule fed
# with every bucket would never pace (its window wants every point early)
cat > "$scratch/w.cfg" <<'W'
workload = {
  model = "tiny"; source = "tests/sim/run.sh"; fwd_ms = 10.0; bwd_ms = 20.0;
  buckets = ( { bytes = 131072; ready_ms = 1.0; }, { bytes = 262144; ready_ms = 2.0; } );
};
W
run wplain --algorithm=ring --workload="$scratch/w.cfg" --straggler=1:4 --iterations=12
run wpaced --algorithm=ring --workload="$scratch/w.cfg" --straggler=1:4 --iterations=12 --pace=true
# 13 steps (warm-up included) of 3 early ranks: at most one paced call each
[ "$(field wplain paced_calls)" = 0 ] && [ "$(field wpaced paced_calls)" -gt 0 ] &&
	[ "$(field wpaced paced_calls)" -le 39 ] && [ -z "$(field wpaced error)" ] ||
	fail "workload pacing: $(field wplain paced_calls) / $(field wpaced paced_calls) calls paced, '$(field wpaced error)'"

# what crashed ns-3's TCP when ring and hier ran on it (a trial file of
# engine = "sim" at 64 hosts, 25G, 16 MiB, hier): it finishes, exact, on
# the model of the library's own transfer that replaced it (19 s here; a
# quarter of an hour under the sanitizers, whose pass runs the small
# fabrics above and below)
[ -n "${SWEMU_SANITIZED:-}" ] || "$sim" --algorithm=hier --racks=8 --hostsPerRack=8 --inaRackList=0,1,2,3,4,5,6,7 --hostRate=25G --uplinkRate=25G \
	--loss=0 --size=16M --iterations=3 --warmup=1 --computeMs=2 --jitter=normal:0.2 --seed=1 --inaElems=2048 \
	--inaSlots=8 --psShards=16 --ringChannels=2 --limitS=480 >"$scratch/hier64" 2>"$scratch/hier64.err" ||
	fail "hier at 64 hosts exited $? ($(tail -1 "$scratch/hier64.err"))"
[ -n "${SWEMU_SANITIZED:-}" ] || { [ -z "$(field hier64 error)" ] && [ "$(field hier64 calls)" = 192 ]; } ||
	fail "hier at 64 hosts: $(field hier64 calls) calls, error '$(field hier64 error)'"
# a software PS with 64 workers on one shard (8 racks of 8, 1 MiB, 200M):
# every contributor's window reaches the shard's one link at once, and 8
# slots of 8 KiB each (4 MiB into a 512K queue) finished no call in 20 s.
# Held to the plan's in-flight share it must finish near its link bound:
# the shard's host receives 63 others' MiB
if [ -z "${SWEMU_SANITIZED:-}" ]; then
	"$sim" --algorithm=ps --psShards=1 --racks=8 --hostsPerRack=8 --size=1M --uplinkBuffer=256K --limitS=20 \
		--computeMs=10 --jitter=normal:2 --iterations=3 --warmup=1 >"$scratch/ps64" 2>"$scratch/ps64.err" ||
		fail "ps, 64 workers on one shard, exited $? ($(tail -1 "$scratch/ps64.err"))"
	[ -z "$(field ps64 error)" ] || fail "ps, 64 workers on one shard: $(field ps64 error)"
	"$py" -c 'import sys; t, b = float(sys.argv[1]), 63 * 2**20 * 8 / 200e6 * 1e3
print("# ps, 64 workers on one shard: %.0f ms per call, its link bound %.0f: %.2f" % (t, b, b / t))
assert b / t >= 0.7, "%.0f ms against a bound of %.0f" % (t, b)' "$(field ps64 time_ms)" || fail "ps, 64 workers on one shard, too slow"
	# and at 1% loss on every switch port, at half its bound at least:
	# with one slice in flight per worker and nothing to report a loss
	# but its timer, no call finished in 60 s; the PS's idle reports and
	# two smaller slices each make it 0.73x (agent/psina_plan.h), and the
	# wait for a re-send's answer doubling in a row 0.79x (hcl_ina_win.c)
	"$sim" --algorithm=ps --psShards=1 --racks=8 --hostsPerRack=8 --size=1M --uplinkBuffer=256K --limitS=30 \
		--computeMs=10 --jitter=normal:2 --iterations=3 --warmup=1 --loss=0.01 >"$scratch/ps64l" 2>"$scratch/ps64l.err" ||
		fail "ps, 64 workers on one shard, 1% loss, exited $? ($(tail -1 "$scratch/ps64l.err"))"
	[ -z "$(field ps64l error)" ] && [ "$(field ps64l loss_drops)" -gt 0 ] ||
		fail "ps, 64 workers, 1% loss: error '$(field ps64l error)', $(field ps64l loss_drops) lost"
	"$py" -c 'import sys; t, b = float(sys.argv[1]), 63 * 2**20 * 8 / 200e6 * 1e3
print("# ps, 64 workers on one shard, 1%% loss: %.0f ms per call, its link bound %.0f: %.2f" % (t, b, b / t))
assert b / t >= 0.5, "%.0f ms against a bound of %.0f" % (t, b)' "$(field ps64l time_ms)" ||
		fail "ps, 64 workers on one shard, 1% loss, too slow"
fi
# 136 workers over 16 shards (17 racks of 8, 256 KiB): two slices each
# of 1 KiB or more do not fit the in-flight share, and one of the full
# 8 KiB put 136 x 8 KiB into each shard's 512K queue (0.32x the bound,
# 4488 frames dropped; at 256 workers no call finished).  One slice each,
# small enough that all fit (agent/psina_plan.h): 0.69x.  The bound: a
# shard's host receives 135 others' sixteenth.
if [ -z "${SWEMU_SANITIZED:-}" ]; then
	"$sim" --algorithm=ps --racks=17 --hostsPerRack=8 --size=256K --uplinkBuffer=256K --limitS=20 \
		--computeMs=10 --jitter=normal:2 --iterations=2 --warmup=1 >"$scratch/ps136" 2>"$scratch/ps136.err" ||
		fail "ps, 136 workers on 16 shards, exited $? ($(tail -1 "$scratch/ps136.err"))"
	[ -z "$(field ps136 error)" ] || fail "ps, 136 workers on 16 shards: $(field ps136 error)"
	"$py" -c 'import sys; t, b = float(sys.argv[1]), 135 * 2**18 / 16 * 8 / 200e6 * 1e3
print("# ps, 136 workers on 16 shards: %.0f ms per call, its link bound %.0f: %.2f" % (t, b, b / t))
assert b / t >= 0.5, "%.0f ms against a bound of %.0f" % (t, b)' "$(field ps136 time_ms)" ||
		fail "ps, 136 workers on 16 shards, too slow"
fi
# ECN: another job's 50M per host fills the 256K uplinks past half; the
# queues mark, the PS echoes the marks in its results (INA_F_CE), and
# windows that follow them (--inaCc) overflow the queues less; exact
for m in "nomark --ecn=0" "mark" "cc --inaCc=true"; do
	"$sim" --algorithm=ps --uplinkBuffer=256K --iterations=5 --background=50M ${m#* } >"$scratch/bg-${m%% *}" \
		2>"$scratch/bg.err" || fail "ps beside another job (${m%% *}) exited $? ($(tail -1 "$scratch/bg.err"))"
	[ -z "$(field "bg-${m%% *}" error)" ] || fail "ps beside another job (${m%% *}): $(field "bg-${m%% *}" error)"
done
[ "$(field bg-nomark ecn_marks)" = 0 ] && [ "$(field bg-mark ecn_marks)" -gt 0 ] ||
	fail "ECN marks: $(field bg-nomark ecn_marks) with --ecn=0, $(field bg-mark ecn_marks) by default"
[ "$(field bg-cc tail_drops)" -lt "$(field bg-mark tail_drops)" ] ||
	fail "--inaCc: $(field bg-cc tail_drops) tail drops, $(field bg-mark tail_drops) without"
# the library's transfer is not ECN-capable (only its INA sockets are):
# queues marking past 1% of their buffer mark nothing of the ring's and
# hier's packets, and ps's slices
for a in ring hier ps; do
	run "ect-$a" --algorithm=$a --ecn=0.01 --uplinkBuffer=256K
	[ -z "$(field "ect-$a" error)" ] || fail "$a with --ecn=0.01: $(field "ect-$a" error)"
done
[ "$(field ect-ring ecn_marks)" = 0 ] && [ "$(field ect-hier ecn_marks)" = 0 ] && [ "$(field ect-ps ecn_marks)" -gt 0 ] ||
	fail "ECN-capable: ring $(field ect-ring ecn_marks), hier $(field ect-hier ecn_marks), ps $(field ect-ps ecn_marks) marked"
# agent-ring's window follows them too (hcl_aring_fill): beside 80M per
# host its chain's forwards overflow the uplinks less; exact
for m in "mark --inaCc=false" "cc --inaCc=true"; do
	"$sim" --algorithm=agent-ring --inaRacks=2 --uplinkBuffer=256K --iterations=5 --background=80M ${m#* } \
		>"$scratch/abg-${m%% *}" 2>"$scratch/bg.err" || fail "agent-ring beside another job exited $?"
	[ -z "$(field "abg-${m%% *}" error)" ] || fail "agent-ring beside another job: $(field "abg-${m%% *}" error)"
done
[ "$(field abg-cc tail_drops)" -lt "$(field abg-mark tail_drops)" ] ||
	fail "agent-ring --inaCc: $(field abg-cc tail_drops) tail drops, $(field abg-mark tail_drops) without"
run lossy-hier --algorithm=hier --loss=0.02
[ -z "$(field lossy-hier error)" ] && [ "$(field lossy-hier loss_drops)" -gt 0 ] ||
	fail "lossy hier: error '$(field lossy-hier error)', $(field lossy-hier loss_drops) lost"

# racks of different sizes (3, 2 and 3 hosts; each uplink 2:1 of its own
# rack): every algorithm exact, nothing dropped, and hier, which moves
# parts of K = 3 shards in the racks and runs a ring per shard across
# them (hcl_hier.c), at or above the flat ring's link bound; a list of
# equal sizes is the count itself, to the nanosecond
urun() { "$sim" --racks=3 --hostsPerRack=3,2,3 --size=256K --iterations=2 --warmup=1 --computeMs=1 --jitter=none \
	--inaRacks=3 "$@"; }
for a in ring hier ps ps-ina agent-ring; do
	urun --algorithm=$a >"$scratch/u-$a" 2>"$scratch/u-$a.err" || fail "uneven $a exited $? ($(cat "$scratch/u-$a.err"))"
	[ -z "$(field u-$a error)" ] && [ "$(field u-$a calls)" = 16 ] && [ "$(field u-$a tail_drops)" = 0 ] ||
		fail "uneven $a: $(field u-$a calls) calls, $(field u-$a tail_drops) dropped, error '$(field u-$a error)'"
done
"$py" - "$scratch" <<'PY'
import json, sys
t = {a: json.load(open("%s/u-%s" % (sys.argv[1], a)))["time_ms"] for a in ("ring", "hier")}
bound = 2 * 7 / 8 * 256 * 1024 * 8 / 200e6 * 1e3
assert t["ring"] >= bound and t["hier"] >= bound, (t, bound)
print("# uneven racks 3, 2, 3: ms per call", t, "ring's bound %.2f" % bound)
PY
run even-list --algorithm=hier --hostsPerRack=2,2
run even-count --algorithm=hier --hostsPerRack=2
[ "$(field even-list time_ms)" = "$(field even-count time_ms)" ] ||
	fail "hostsPerRack=2,2 took $(field even-list time_ms) ms, =2 $(field even-count time_ms)"

# bad arguments: exit 2 and a message naming the setting
bad() { # EXPECTED-TEXT ARGS...
	local want=$1 rc=0
	shift
	"$sim" "$@" >"$scratch/bad.out" 2>"$scratch/bad.err" || rc=$?
	[ $rc = 2 ] || fail "'$*' exited $rc, want 2"
	grep -q "$want" "$scratch/bad.err" || fail "'$*' said '$(cat "$scratch/bad.err")', want '$want'"
}
bad "algorithm 'nope'" --algorithm=nope
bad "inaRacks is more than racks" --algorithm=ps-ina --racks=2 --inaRacks=3
bad "inaRackList: '2' is not a rack" --algorithm=ps-ina --racks=2 --inaRackList=0,2
bad "inaRackList: '0' is not a rack" --algorithm=ps-ina --racks=2 --inaRackList=0,0
bad "not both" --algorithm=ps-ina --inaRacks=1 --inaRackList=0
bad "hostRate: '20X'" --hostRate=20X
bad "loss must be" --loss=0.9
bad "hostPacketNs must be 0 or more" --hostPacketNs=-1
bad "ecn must be in 0..1" --ecn=1.5
bad "jitter:" --jitter=uniform:3
bad "hostsPerRack lists 3 racks, racks is 2" --racks=2 --hostsPerRack=3,2,3
bad "hostsPerRack: '3,0' is not" --racks=2 --hostsPerRack=3,0
bad "uplinkRate lists 2 rates, racks is 3" --racks=3 --hostsPerRack=3,2,3 --uplinkRate=100M,200M
bad "psRackAgg: auto, always or never, not sometimes" --algorithm=ps-ina --psRackAgg=sometimes
echo "ok: swemu-sim exact and within its link bounds; bad arguments refused"
