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
echo "config: bad file, missing device, absent lcore and missing file exit 2 with file:line; SIGTERM during start exits 0; nothing left behind"
