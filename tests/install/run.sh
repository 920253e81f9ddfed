#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# meson install into a scratch root, then build tests/install/example.c the
# way a user would (pkg-config hcl) and run it as one rank on loopback.
set -euo pipefail
build=$1 src=$(cd "$(dirname "$0")" && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
meson install -C "$build" --destdir "$root" --quiet >/dev/null
pc=$(find "$root" -name hcl.pc -printf '%h\n' | head -1)
[ -n "$pc" ] || { echo "no hcl.pc installed"; exit 1; }
prefix=$(PKG_CONFIG_PATH=$pc pkg-config --variable=prefix hcl)
flags=$(PKG_CONFIG_PATH=$pc PKG_CONFIG_SYSROOT_DIR=$root pkg-config --cflags --libs hcl)
cc -Wall -Werror -o "$root/example" "$src/example.c" $flags
libdir=$(PKG_CONFIG_PATH=$pc pkg-config --variable=libdir hcl)
port=$((20000 + RANDOM % 20000))
LD_LIBRARY_PATH=$root$libdir RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$root/example"
# the Python binding as installed, on the installed library
py=$(find "$root" -name hcl.py -printf '%h\n' | head -1)
[ -n "$py" ] || { echo "no hcl.py installed"; exit 1; }
HCL_LIBRARY=$root$libdir/libhcl.so PYTHONPATH=$py python3 -c "
import array, hcl
with hcl.Comm(rank=0, world=1, master_addr='127.0.0.1', master_port=$port + 1) as c:
    a = array.array('i', [3, -4, 5])
    assert list(c.allreduce(a)) == [3, -4, 5] and c.world == 1
"
# comm_error 'KWARGS' ENV...: what the binding raises making a communicator
# with those extra arguments under that environment (fails before it binds)
comm_error() {
	local kw=$1
	shift
	env "$@" PYTHONPATH=$py python3 -c "
import hcl
try:
    hcl.Comm(rank=0, world=1, master_addr='127.0.0.1', master_port=$port + 2$kw)
except hcl.HclError as e:
    print(e, e.errno)
" 2>&1
}
# a wrong library path and a bad argument are named, not crashes
out=$(comm_error "" HCL_LIBRARY=$root/nonexistent.so)
grep -q "HCL_LIBRARY=$root/nonexistent.so: no such file" <<<"$out" || { echo "missing library: $out"; exit 1; }
out=$(comm_error ", timeout_ms=-1" HCL_LIBRARY=$root$libdir/libhcl.so)
grep -q "timeout -1 ms: want 0 (default) to 86400000 -22" <<<"$out" || { echo "negative timeout: $out"; exit 1; }
# another vendor's libhcl.so (one without our symbols) is refused by name
printf 'int hcl_other_vendor(void) { return 1; }\n' > "$root/other.c"
cc -shared -fPIC -o "$root/libhcl.so" "$root/other.c"
out=$(comm_error "" HCL_LIBRARY=$root/libhcl.so)
grep -q "is not this project's libhcl" <<<"$out" || { echo "foreign libhcl: $out"; exit 1; }
# without HCL_LIBRARY and away from the build tree: the SONAME, found by the loader
out=$(cd "$root" && LD_LIBRARY_PATH=$root$libdir PYTHONPATH=$py python3 -c "
import hcl
with hcl.Comm(rank=0, world=1, master_addr='127.0.0.1', master_port=$port + 4) as c:
    print('world', c.world)
" 2>&1)
grep -q "world 1" <<<"$out" || { echo "by SONAME: $out"; exit 1; }
echo "install: hcl.h + libhcl + hcl.pc + hcl.py installed under $prefix; a program built with pkg-config and a Python script run; a missing library, another vendor's libhcl and a bad timeout named; the library found by its SONAME"
