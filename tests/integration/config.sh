#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Bad input to swemu: a bad config file, a config naming a device or an
# lcore that does not exist all end with exit status 2 and "file:line: what", and
# leave no DPDK runtime directory, no hugepage file and no process behind.
. "$(dirname "$0")/lib.sh"
exe=${SWEMU:-$top/build/swemu/swemu}
tmp=$LOGDIR
trap 'rm -rf "$tmp"; rm -rf /var/run/dpdk/swemu-itcfg' EXIT

eal="--no-huge -m 256 --file-prefix swemu-itcfg --no-pci -l 0"

expect_2() { # expect_2 CONFIG PATTERN [extra EAL]
	local cfg=$1 pat=$2 rc=0 out
	out=$("$exe" $eal ${3:-} -- -c "$cfg" 2>&1) || rc=$?
	[ "$rc" = 2 ] || fail "$cfg: exit $rc, want 2: $out"
	grep -qE "$pat" <<<"$out" || fail "$cfg: no '$pat' in: $out"
	[ ! -e /var/run/dpdk/swemu-itcfg ] || [ -z "$(ls -A /var/run/dpdk/swemu-itcfg 2>/dev/null)" ] \
		|| fail "$cfg: left /var/run/dpdk/swemu-itcfg: $(ls /var/run/dpdk/swemu-itcfg)"
	rm -rf /var/run/dpdk/swemu-itcfg
}

cat > "$tmp/typo.cfg" <<'C'
switches = (
  { name = "tor0";
    ports = ( { name = "p0"; dev = "net_null0"; rate = "10 parsecs"; } ); }
);
C
expect_2 "$tmp/typo.cfg" "^$tmp/typo.cfg:3: 'rate' must be a rate"

cat > "$tmp/nodev.cfg" <<'C'
switches = (
  { name = "tor0";
    ports = ( { name = "p0"; dev = "net_null0"; },
              { name = "p1"; dev = "net_null7"; } ); }
);
C
# net_null0 exists, net_null7 does not: the switch must not half-start
expect_2 "$tmp/nodev.cfg" "^$tmp/nodev.cfg:4: port 'p1': no DPDK device 'net_null7'" "--vdev net_null0"

cat > "$tmp/lcore.cfg" <<'C'
switches = (
  { name = "tor0"; ports = ( { name = "p0"; dev = "net_null0"; } ); },
  { name = "tor1"; lcore = 1;
    ports = ( { name = "p0"; dev = "net_null1"; } ); }
);
C
# EAL was given lcore 0 only
expect_2 "$tmp/lcore.cfg" "^$tmp/lcore.cfg:3: switch 'tor1': lcore 1 is not one of EAL's" "--vdev net_null0 --vdev net_null1"

expect_2 "$tmp/missing.cfg" "^$tmp/missing.cfg:0: cannot read the file"
rc=0; "$exe" --bogus >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "unknown option: exit $rc"
"$exe" --help | grep -q "usage: swemu" || fail "--help"
"$exe" --version | grep -q "^swemu [0-9]" || fail "--version"

# SIGTERM while EAL starts (its runtime directory exists, the ports are not
# up): a clean exit 0 through the teardown, nothing left behind
cat > "$tmp/ok.cfg" <<'C'
switches = ( { name = "tor0"; ports = ( { name = "p0"; dev = "net_null0"; } ); } );
C
"$exe" $eal --vdev net_null0 -- -c "$tmp/ok.cfg" > "$tmp/early.log" 2>&1 &
pid=$!
for _ in $(seq 200000); do [ -d /var/run/dpdk/swemu-itcfg ] && break; kill -0 $pid 2>/dev/null || break; done
kill -TERM $pid
rc=0; wait $pid || rc=$?
grep -q "running from" "$tmp/early.log" && echo "  (note: the switch was up before SIGTERM came)"
[ "$rc" = 0 ] || fail "SIGTERM during start: exit $rc, want 0: $(cat "$tmp/early.log")"
[ -z "$(ls -A /var/run/dpdk/swemu-itcfg 2>/dev/null)" ] || fail "SIGTERM during start left $(ls /var/run/dpdk/swemu-itcfg)"
pgrep -f "file-prefix swemu-itcfg" >/dev/null && fail "a swemu process is left"
# A switch in two partitions on devices with too few queues (net_ring has
# 16; queue 20 is asked for), or with a device of a port's list missing:
# exit 2 and the port named; on enough, partition 1 runs on EAL's second
# lcore with the config's job, in the stats file as "tor0/1", on queue 1
# of the port's device or on a device of its own, and SIGTERM ends both
# cleanly.
cat > "$tmp/parts.cfg" <<'C'
stats_file = "STATS";
stats_interval_ms = 100;
switches = (
  { name = "tor0"; ina = true; mac = "02:00:00:00:00:fe"; ip = "10.0.0.254"; partitions = 2;
    slots = 64; max_elems = 256;
    ports = ( { name = "p0"; dev = "DEV0"; steered = true; }, { name = "p1"; dev = "DEV1"; steered = true; } );
    jobs = ( { id = 7; fan_in = 2; dtype = "int32"; slots = 8; elems = 64; outputs = ["multicast"];
               contributors = ["10.0.0.1:48864", "10.0.0.2:48864"]; } ); }
);
C
sed -i "s|STATS|$tmp/parts.json|" "$tmp/parts.cfg"
sed "s/DEV0/net_ring0/; s/DEV1/net_ring1/" "$tmp/parts.cfg" > "$tmp/parts-ring.cfg"
sed 's/partitions = 2;/partitions = 2; partition_queues = [0, 20];/' "$tmp/parts-ring.cfg" > "$tmp/parts-q20.cfg"
expect_2 "$tmp/parts-q20.cfg" "^$tmp/parts-q20.cfg:6: port 'p0' \\(device net_ring0\\): its partitions' queues need 21 queue pairs; it has 16" \
	"--vdev net_ring0 --vdev net_ring1"
sed 's/"DEV0"/[ "net_ring0", "net_ring2" ]/; s/"DEV1"/[ "net_ring1", "net_ring3" ]/' "$tmp/parts.cfg" > "$tmp/parts-devs.cfg"
sed 's/"net_ring3"/"net_ring9"/' "$tmp/parts-devs.cfg" > "$tmp/parts-dev9.cfg"
expect_2 "$tmp/parts-dev9.cfg" "^$tmp/parts-dev9.cfg:6: port 'p1': no DPDK device 'net_ring9'" \
	"--vdev net_ring0 --vdev net_ring1 --vdev net_ring2 --vdev net_ring3"
for cfg in parts-ring parts-devs; do
	[ "$(nproc)" -ge 2 ] || break
	rm -f "$tmp/parts.json"
	"$exe" ${eal/-l 0/-l 0,1} --vdev net_ring0 --vdev net_ring1 --vdev net_ring2 --vdev net_ring3 -- \
		-c "$tmp/$cfg.cfg" > "$tmp/parts.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do [ -s "$tmp/parts.json" ] && break; sleep 0.1; done
	kill -0 $pid 2>/dev/null || fail "partitioned switch did not start: $(cat "$tmp/parts.log")"
	python3 - "$tmp/parts.json" $cfg <<'P' || fail "partitioned switch ($cfg)'s stats: $(cat "$tmp/parts.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert sorted(d["switches"]) == ["tor0", "tor0/1"], d["switches"].keys()
on = {w["lcore"]: w["switches"] for w in d["workers"]}
assert on[0] == ["tor0"] and on[1] == ["tor0/1"], on
for name in ("tor0", "tor0/1"):
    assert "7" in d["switches"][name]["ina"]["jobs"], name
devs = [d["switches"][s]["ports"][p]["dev"] for s in ("tor0", "tor0/1") for p in ("p0", "p1")]
want = {"parts-ring": ["net_ring0", "net_ring1"] * 2, "parts-devs": ["net_ring%d" % i for i in range(4)]}
assert devs == want[sys.argv[2]], devs
P
	kill -TERM $pid
	rc=0; wait $pid || rc=$?
	[ "$rc" = 0 ] || fail "partitioned switch: exit $rc on SIGTERM: $(cat "$tmp/parts.log")"
	[ -z "$(ls -A /var/run/dpdk/swemu-itcfg 2>/dev/null)" ] || fail "partitioned switch left $(ls /var/run/dpdk/swemu-itcfg)"
done
echo "config: bad file, missing device, absent lcore and missing file exit 2 with file:line; SIGTERM during start exits 0; a partitioned switch starts on two lcores and stops clean; nothing left behind"
