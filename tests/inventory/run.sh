#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# swemu-inventory: the sample inventory (configs/inventory.cfg) becomes a
# swemu config per switch server that swemu itself accepts (swemu --check)
# and a host file the host library reads as the cabling says (rank, rack,
# INA switch, master); broken inventories fail with exit 2, their file and
# line, and write nothing.  No root needed.
set -euo pipefail
inv=${INVENTORY:?} swemu=${SWEMU:?} dump=${HOSTFILE_DUMP:?}
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$inv" "$top/configs/inventory.cfg" "$tmp/out" > "$tmp/log" || fail "the sample is refused: $(cat "$tmp/log")"
grep -q "3 switch server(s), 4 host(s) in 2 rack(s)" "$tmp/log" || fail "summary: $(cat "$tmp/log")"
for sw in tor0 tor1 spine; do
	"$swemu" --check "$tmp/out/$sw.cfg" > "$tmp/check" 2>&1 || fail "swemu refuses $sw.cfg: $(cat "$tmp/check")"
done
grep -q "switch spine (2 ports, plain)" "$tmp/check" || fail "spine: $(cat "$tmp/check")"
"$swemu" --check "$tmp/out/tor1.cfg" | grep -q "switch tor1 (3 ports, INA)" || fail "tor1 is not an INA switch"
grep -q -- "-a 0000:3b:02.0 -a 0000:3b:02.1 -a 0000:3b:00.1" "$tmp/out/tor0.eal" || fail "tor0's EAL ports: $(cat "$tmp/out/tor0.eal")"
grep -q 'mac = "b8:ce:f6:10:00:03"; port = "h2"' "$tmp/out/tor1.cfg" || fail "tor1 does not pin gpu03 to h2"
"$dump" "$tmp/out/hosts.cfg" > "$tmp/ranks" || fail "the host library refuses hosts.cfg: $(cat "$tmp/ranks")"
diff -u - "$tmp/ranks" <<'W' || fail "the host file says another cabling"
rank 0 of 4: 10.0.0.1 rack 0 ina 10.0.0.254 master 10.0.0.1:29500
rank 1 of 4: 10.0.0.2 rack 0 ina 10.0.0.254 master 10.0.0.1:29500
rank 2 of 4: 10.0.0.3 rack 1 ina 10.0.0.253 master 10.0.0.1:29500
rank 3 of 4: 10.0.0.4 rack 1 ina 10.0.0.253 master 10.0.0.1:29500
W

n=0
# expect LINE PATTERN, then an inventory on stdin: exit 2, that line, no output
expect() {
	local line=$1 pat=$2 f=$tmp/i$n.cfg err rc=0
	n=$((n + 1))
	cat > "$f"
	err=$("$inv" "$f" "$tmp/bad$n" 2>&1 >/dev/null) || rc=$?
	[ $rc = 2 ] || fail "exit $rc (want 2) for: $(cat "$f")"
	grep -qE "^$f:$line: .*$pat" <<<"$err" || fail "want line $line /$pat/, got: $err"
	[ ! -e "$tmp/bad$n" ] || fail "a refused inventory wrote $tmp/bad$n"
}
sw='{ name = "tor0"; ip = "10.0.0.254"; mac = "02:00:00:00:00:fe"; ina = true; ports = ( { name = "h0"; pci = "0000:3b:02.0"; }, { name = "h1"; pci = "0000:3b:02.1"; } ); }'
expect 4 "no switch 'tor9'" <<E
inventory = {
  switches = ( $sw );
  hosts = (
    { name = "a"; ip = "10.0.0.1"; mac = "02:00:00:00:00:01"; switch = "tor9"; port = "h0"; }
  );
};
E
expect 4 "port tor0.h0 is taken already \(line 3\)" <<E
inventory = {
  switches = ( $sw );
  hosts = ( { name = "a"; ip = "10.0.0.1"; mac = "02:00:00:00:00:01"; switch = "tor0"; port = "h0"; },
    { name = "b"; ip = "10.0.0.2"; mac = "02:00:00:00:00:02"; switch = "tor0"; port = "h0"; }
  );
};
E
expect 4 "host b has the address of host a" <<E
inventory = {
  switches = ( $sw );
  hosts = ( { name = "a"; ip = "10.0.0.1"; mac = "02:00:00:00:00:01"; switch = "tor0"; port = "h0"; },
    { name = "b"; ip = "10.0.0.1"; mac = "02:00:00:00:00:02"; switch = "tor0"; port = "h1"; }
  );
};
E
expect 4 "'02:00:00:00:01' is not a MAC address" <<E
inventory = {
  switches = ( $sw );
  hosts = ( { name = "a"; ip = "10.0.0.1";
    mac = "02:00:00:00:01"; switch = "tor0"; port = "h0"; } );
};
E
expect 3 "switch 'tor0' has no port 'h7'" <<E
inventory = {
  switches = ( $sw );
  hosts = ( { name = "a"; ip = "10.0.0.1"; mac = "02:00:00:00:00:01"; switch = "tor0"; port = "h7"; } );
};
E
expect 3 "unknown setting 'cables'|'cables'" <<E
inventory = {
  switches = ( $sw );
  cables = ( );
};
E
expect 2 "aggregates \(ina = true\) but no host is cabled to it" <<E
inventory = {
  switches = ( $sw,
    { name = "tor1"; ip = "10.0.0.253"; mac = "02:00:00:00:00:fd";
      ports = ( { name = "h0"; pci = "0000:3b:02.0"; } ); } );
  hosts = ( { name = "a"; ip = "10.0.0.1"; mac = "02:00:00:00:00:01"; switch = "tor1"; port = "h0"; } );
};
E
expect 5 "'tor0-up' is not SWITCH.PORT" <<E
inventory = {
  switches = ( $sw );
  hosts = ( { name = "a"; ip = "10.0.0.1"; mac = "02:00:00:00:00:01"; switch = "tor0"; port = "h0"; } );
  links = (
    { from = "tor0-up"; to = "tor0.h1"; } );
};
E
echo "inventory: the sample's 3 switch configs pass swemu --check, its host file reads as cabled; $n broken inventories each name their line"
