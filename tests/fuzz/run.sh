#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the fuzz targets with clang (libFuzzer + AddressSanitizer +
# UndefinedBehaviorSanitizer) and runs them for the given number of seconds:
# half to the engine, a quarter each to swemu's frame parser and its
# control-message parser.  FUZZ_TARGETS="ctrl" (any of engine, frame, ctrl)
# runs only those, sharing the time evenly.
#   tests/fuzz/run.sh [SECONDS] [extra libFuzzer flags...]
# Exit status: 0 when no crash was found, non-zero (libFuzzer's) otherwise;
# crashing inputs are left as crash-* in $FUZZ_OUT (default build-fuzz/).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 3,8p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
seconds=${1:-60}
shift || true
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-$top/build-fuzz}
targets=(${FUZZ_TARGETS:-engine frame ctrl})
for t in "${targets[@]}"; do
	case $t in engine|frame|ctrl) ;; *) echo "fuzz: unknown target $t (engine, frame, ctrl)" >&2; exit 2;; esac
done
mkdir -p "$out/corpus" "$out/corpus-frame" "$out/corpus-ctrl"
for c in corpus corpus-frame corpus-ctrl; do cp -n "$top/tests/fuzz/$c"/* "$out/$c/" 2>/dev/null || true; done

flags=(-g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
build() {
	case $1 in
	engine) clang "${flags[@]}" -I"$top/nic" "$top"/nic/ina_proto.c "$top"/nic/ina_engine.c "$top"/nic/ina_engine_fast.c "$top"/nic/ina_engine_idle.c "$top"/nic/ina_jobs.c "$top"/nic/ina_kernels.c \
		"$top/tests/fuzz/fuzz_engine.c" -o "$out/fuzz_engine";;
	frame) clang "${flags[@]}" -I"$top/swemu/datapath" "$top"/swemu/datapath/sw_frame.c "$top/tests/fuzz/fuzz_frame.c" -o "$out/fuzz_frame";;
	ctrl) clang "${flags[@]}" -I"$top/nic" "$top"/nic/{ctl_msg,conf,conf_read,parse,ina_proto,ina_engine,ina_engine_idle,ina_jobs,ina_kernels}.c \
		"$top/tests/fuzz/fuzz_ctrl.c" -o "$out/fuzz_ctrl" -lm -ldl;;
	esac
}
# -rss_limit_mb: the engine target allocates a small engine per input.
# -error_exitcode=1: libFuzzer's default, 77, is what meson reads as a skip.
run() {
	case $1 in
	engine) ./fuzz_engine -max_total_time="$2" -print_final_stats=1 -error_exitcode=1 -rss_limit_mb=1024 -max_len=20000 "${@:3}" corpus;;
	frame) ./fuzz_frame -max_total_time="$2" -print_final_stats=1 -error_exitcode=1 -max_len=10000 "${@:3}" corpus-frame;;
	ctrl) ./fuzz_ctrl -max_total_time="$2" -print_final_stats=1 -error_exitcode=1 -max_len=4096 -dict="$top/tests/fuzz/ctrl.dict" \
		"${@:3}" corpus-ctrl;;
	esac
}
for t in "${targets[@]}"; do build "$t"; done
cd "$out"
# shares: the engine (the most code) counts twice when it runs with others
weight() { [ "$1" = engine ] && ((${#targets[@]} > 1)) && echo 2 || echo 1; }
total=0
for t in "${targets[@]}"; do total=$((total + $(weight "$t"))); done
for t in "${targets[@]}"; do
	s=$((seconds * $(weight "$t") / total))
	((s > 0)) || s=1
	run "$t" "$s" "$@"
done
