#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Sets up the machine (testbed/setup.sh --tests), builds, and runs the whole test
# suite with meson, then the unit and the datapath/ring namespace tests
# again under ASan + UBSan (tests/sanitize.sh, about two minutes; skipped
# with SWEMU_NO_SANITIZERS=1); ends with one line "tests: N passed, N
# skipped, N failed" (a skipped test, such as a root-only one run by
# another user, is not a pass).
#   testbed/run-tests.sh [meson test args...]
set -uo pipefail
case "${1:-}" in -h|--help) sed -n 3,9p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/testbed/setup.sh" --tests || exit 1
cd "$top"
meson test -C build --print-errorlogs "$@"
rc=$?
if [ -z "${SWEMU_NO_SANITIZERS:-}" ] && (($# == 0)); then
	bash "$top/tests/sanitize.sh" || rc=1
fi
python3 - build/meson-logs/testlog.json <<'PY'
import json, sys
res = [json.loads(l)["result"] for l in open(sys.argv[1]) if l.strip()]
ok = sum(r in ("OK", "EXPECTEDFAIL") for r in res)
skipped = sum(r == "SKIP" for r in res)
print(f"tests: {ok} passed, {skipped} skipped, {len(res) - ok - skipped} failed")
PY
exit $rc
