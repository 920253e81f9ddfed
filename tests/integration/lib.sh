# SPDX-License-Identifier: BSD-3-Clause
# Shared by the integration tests: a topology per test, torn down on any
# exit.  Needs root (namespaces); exits 77 (meson: skipped) otherwise.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "integration tests need root"; exit 77; }

TOPO_NAME=""
# the test's logs and scratch files: its own directory, never a fixed name
# another run (or another user) could own
LOGDIR=$(mktemp -d /tmp/swemu-it.XXXXXX)
cleanup() {
	local rc=$?
	rm -rf "$LOGDIR"
	if [ -n "$TOPO_NAME" ]; then
		if ((rc != 0)) && [ -f "/run/swemu-testbed/$TOPO_NAME/swemu.log" ]; then
			echo "--- swemu log" >&2
			tail -n 20 "/run/swemu-testbed/$TOPO_NAME/swemu.log" >&2
			echo "--- swemu counters (non-zero drops)" >&2
			stats_summary >&2 || true
		fi
		"$top/testbed/topo/topo.sh" down "$TOPO_NAME"
	fi
	exit $rc
}
trap cleanup EXIT INT TERM

# topo NAME HOSTS [topo.sh up options]: up and start
topo() {
	TOPO_NAME=$1
	"$top/testbed/topo/topo.sh" up "$@"
	"$top/testbed/topo/topo.sh" start "$1"
	use_key
}

# Commands the tests and their ranks send are signed with the topology's
# key (topo.sh up writes one), when it has one.
use_key() {
	local k=/run/swemu-testbed/$TOPO_NAME/ctrl.key
	if [ -f "$k" ]; then export SWEMU_CTL_KEY_FILE=$k HCL_INA_KEY_FILE=$k; fi
}

in_host() { local i=$1; shift; ip netns exec "$TOPO_NAME-h$i" "$@"; }

stats() { "$top/testbed/topo/topo.sh" stats "$TOPO_NAME"; }

# Per port: packets in and out and every non-zero drop, the device's own
# losses included; per engine: its non-zero drops.  For a failed test's log.
stats_summary() {
	local prog
	prog=$(
		cat <<'PY'
import json, sys
nz = lambda d: " ".join("%s=%s" % kv for kv in sorted(d.items()) if kv[1])
for name, sw in json.load(sys.stdin)["switches"].items():
    for pn, p in sw["ports"].items():
        print(name, pn, "rx", p["rx_packets"], "tx", p["tx_packets"], nz(p["drops"]), nz(p.get("device", {})))
    if "ina" in sw:
        print(name, "ina drops:", nz(sw["ina"]["drops"]))
    if sw.get("fdb_moves"):
        print(name, "fdb moves", sw["fdb_moves"], "damped", sw["fdb_moves_damped"], "latest", sw.get("fdb_last_move"))
PY
	)
	stats | $PY -c "$prog"
}

# jq-less JSON access: stats_get 'd["switches"]["tor0"]["arp_replies"]'
stats_get() { stats | $PY -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

fail() { echo "FAIL: $*" >&2; exit 1; }

# switch_rx_bytes SWITCH: bytes received on all of its ports so far
switch_rx_bytes() { stats_get "sum(p['rx_bytes'] for p in d['switches']['$1']['ports'].values())"; }

# A job of all HOSTS members through tor0 at SUBNET.254, via the control channel.
install_job() {
	local id=$1 fanin=$2 dtype=$3 subnet=$4 extra=${5:-}
	local members=""
	for ((i = 0; i < fanin; i++)); do members+="\"$subnet.$((i + 1)):48864\", "; done
	use_key
	in_host 0 "$top/testbed/topo/swemu-ctl" "$subnet.254" \
		"op = \"install\"; job = { id = $id; fan_in = $fanin; dtype = \"$dtype\"; slots = 16; elems = 1024; outputs = [\"multicast\"]; contributors = [ ${members%, } ]; $extra };"
}

# pair_job ID SUBNET A B: a job of hosts A and B (members 0 and 1) through
# tor0 at SUBNET.254, installed from A: 200 slices exact, and no result
# flooded by tor0 (one sent into the wrong VLAN, or untagged on a trunk,
# would be flooded there and reach its host only by a retransmission)
pair_job() {
	local id=$1 subnet=$2 a=$3 b=$4 flooded k=0 pids=()
	flooded=$(stats_get 'd["switches"]["tor0"]["flooded"]')
	use_key
	in_host "$a" "$top/testbed/topo/swemu-ctl" "$subnet.254" \
		"op = \"install\"; job = { id = $id; fan_in = 2; dtype = \"int32\"; slots = 16; elems = 1024; outputs = [\"multicast\"]; contributors = [ \"$subnet.$((a + 1)):48864\", \"$subnet.$((b + 1)):48864\" ]; };" \
		>/dev/null || fail "install job $id"
	for h in "$a" "$b"; do
		in_host "$h" $PY "$top/tests/integration/ina_client.py" --switch "$subnet.254" --bind "$subnet.$((h + 1))" \
			--job "$id" --index $k --fanin 2 --slices 200 --count 1024 --slots 16 &
		pids+=($!)
		k=$((k + 1))
	done
	for p in "${pids[@]}"; do wait "$p" || fail "job $id of h$a and h$b"; done
	[ "$(stats_get "d['switches']['tor0']['ina']['jobs']['$id']['completions']")" = 200 ] ||
		fail "job $id completions: $(stats)"
	flooded=$(($(stats_get 'd["switches"]["tor0"]["flooded"]') - flooded))
	((flooded < 10)) || fail "$flooded frames flooded by tor0 during job $id"
}

# run_workers ID FANIN SUBNET [client args]: every member runs the client; all must pass
run_workers() {
	local id=$1 fanin=$2 subnet=$3
	shift 3
	local pids=()
	for ((i = 0; i < fanin; i++)); do
		in_host "$i" $PY "$top/tests/integration/ina_client.py" --switch "$subnet.254" --bind "$subnet.$((i + 1))" \
			--job "$id" --index "$i" --fanin "$fanin" "$@" &
		pids+=($!)
	done
	local rc=0
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	return $rc
}

# kill_rank_expect LOGPREFIX SECONDS REGEX: kills rank 2 (pids[2]), then every
# other rank of pids[] must fail within SECONDS with REGEX in LOGPREFIX-i.log.
kill_rank_expect() {
	local logs=$1 limit=$2 re=$3 start i el
	kill -KILL "${pids[2]}"
	start=$(date +%s.%N)
	for i in "${!pids[@]}"; do
		((i == 2)) && continue
		if wait "${pids[$i]}"; then fail "rank $i finished without rank 2"; fi
		grep -qE "$re" "$logs-$i.log" || fail "rank $i: $(cat "$logs-$i.log")"
	done
	wait "${pids[2]}" 2>/dev/null || true
	el=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	echo "kill_rank_expect: every rank failed within $el s"
	awk -v e="$el" -v l="$limit" 'BEGIN { exit !(e <= l) }' ||
		fail "errors took $el s, more than $limit: $(for i in "${!pids[@]}"; do echo -n "[$i] $(tail -n 1 "$logs-$i.log") "; done)"
}
