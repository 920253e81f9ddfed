#!/usr/bin/env bash
# The project's main job, from a fresh machine: set up, build, run.
# Until the trial runner exists this is the engine demo: the aggregation
# engine's throughput beside the bare-add ceiling, with a result check.
#   testbed/run-main.sh [ina-engine-bench args...]   (default: --quick)
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 2,5p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/testbed/setup.sh"
(($#)) || set -- --quick
exec "$top/build/tests/bench/ina-engine-bench" "$@"
