#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the project with AddressSanitizer and UndefinedBehaviorSanitizer
# into build-san/ and runs the unit tests and the integration tests that
# exercise swemu's datapath and the host library's ring under them.
#   tests/sanitize.sh [meson test args...]
# A report from any process (swemu, a rank, a unit test) fails the run and
# is printed; processes the tests start write theirs to files, because
# their output is often thrown away when the test passes.  A test whose
# assertions are about timing (test_xfer's local-queue test) skips itself
# here (it passes with a "# ... skipped" line): sanitized code runs 2-3x
# slower.  Ends with one line
# "sanitizers: N tests passed, N skipped, N failed, N reports".
set -uo pipefail
case "${1:-}" in -h|--help) sed -n 3,13p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
san=$top/build-san
cd "$top"
if [ ! -f "$san/build.ninja" ]; then
	# b_lundef=false: the shared library leaves the sanitizer runtime's
	# symbols to the executable
	meson setup "$san" -Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false \
		>/dev/null || exit 1
fi
ninja -C "$san" >/dev/null || { ninja -C "$san" | tail -20; exit 1; }

reports=$(mktemp -d /tmp/swemu-san.XXXXXX)
trap 'rm -rf "$reports"' EXIT
# libxdp keeps its AF_XDP umem descriptor past DPDK's port close: not ours
printf 'leak:xsk_umem__create\n' > "$reports/lsan.supp"
export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:abort_on_error=0"
export LSAN_OPTIONS="suppressions=$reports/lsan.supp"
export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1"
# tests whose assertions are about timing skip themselves at sanitizer speed
export SWEMU_SANITIZED=1

# the unit tests (not the install test: it links an example without the
# sanitizer runtime), and of the namespace tests those of swemu's datapath
# and the ring; the longer ones add little the ring does not cover here
meson test -C "$san" --no-rebuild --print-errorlogs --logbase san-unit --suite unit "$@"
rc=$?
meson test -C "$san" --no-rebuild --print-errorlogs --logbase san-netns \
	netns-config netns-ctrl netns-l2 netns-ina netns-hostile netns-fabric netns-ring netns-pacing "$@" || rc=1
n=0
for f in "$reports"/asan.* "$reports"/ubsan.*; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	echo "--- sanitizer report $(basename "$f")" >&2
	head -n 40 "$f" >&2
done
python3 - "$n" "$san"/meson-logs/san-{unit,netns}.json <<'PY'
import json, os, sys
res = [json.loads(l)["result"] for f in sys.argv[2:] if os.path.exists(f) for l in open(f) if l.strip()]
ok = sum(r in ("OK", "EXPECTEDFAIL") for r in res)
skipped = sum(r == "SKIP" for r in res)
print(f"sanitizers: {ok} tests passed, {skipped} skipped, {len(res) - ok - skipped} failed, {sys.argv[1]} reports")
PY
((rc == 0 && n == 0))
