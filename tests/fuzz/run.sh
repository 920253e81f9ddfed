#!/usr/bin/env bash
# Builds the fuzz targets with clang (libFuzzer + AddressSanitizer +
# UndefinedBehaviorSanitizer) and runs them for the given number of seconds:
# two thirds to the engine, one third to swemu's frame parser.
#   tests/fuzz/run.sh [SECONDS] [extra libFuzzer flags...]
# Exit status: 0 when no crash was found, non-zero (libFuzzer's) otherwise;
# crashing inputs are left as crash-* in $FUZZ_OUT (default build-fuzz/).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 2,7p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
seconds=${1:-60}
shift || true
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-$top/build-fuzz}
mkdir -p "$out/corpus" "$out/corpus-frame"
cp -n "$top"/tests/fuzz/corpus/* "$out/corpus/" 2>/dev/null || true
cp -n "$top"/tests/fuzz/corpus-frame/* "$out/corpus-frame/" 2>/dev/null || true

flags=(-g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
clang "${flags[@]}" -I"$top/nic" "$top"/nic/ina_proto.c "$top"/nic/ina_engine.c "$top"/nic/ina_kernels.c \
	"$top/tests/fuzz/fuzz_engine.c" -o "$out/fuzz_engine"
clang "${flags[@]}" -I"$top/swemu" "$top"/swemu/sw_frame.c "$top/tests/fuzz/fuzz_frame.c" -o "$out/fuzz_frame"

cd "$out"
engine_s=$((seconds * 2 / 3)); frame_s=$((seconds - engine_s))
((engine_s > 0)) || engine_s=1
((frame_s > 0)) || frame_s=1
# -rss_limit_mb: the engine target allocates a small engine per input.
./fuzz_engine -max_total_time="$engine_s" -print_final_stats=1 -rss_limit_mb=1024 \
	-max_len=20000 "$@" corpus
exec ./fuzz_frame -max_total_time="$frame_s" -print_final_stats=1 -max_len=10000 "$@" corpus-frame
