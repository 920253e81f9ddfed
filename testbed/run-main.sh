#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The project's main job, from a fresh machine: set up, build, and run the
# default PoC trial (configs/trial.cfg) — racks in namespaces around swemu,
# every algorithm side by side, a report with tables and plots.
#   testbed/run-main.sh [testbed/trial/trial.sh args...]   (e.g. -c my-trial.cfg -o DIR)
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 3,7p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/testbed/setup.sh"
exec "$top/testbed/trial/trial.sh" "$@"
