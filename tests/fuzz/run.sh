#!/usr/bin/env bash
# Builds the engine fuzz target with clang (libFuzzer + AddressSanitizer +
# UndefinedBehaviorSanitizer) and runs it for the given number of seconds.
#   tests/fuzz/run.sh [SECONDS] [extra libFuzzer flags...]
# Exit status: 0 when no crash was found, non-zero (libFuzzer's) otherwise;
# crashing inputs are left as crash-* in $FUZZ_OUT (default build-fuzz/).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 2,7p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
seconds=${1:-60}
shift || true
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-$top/build-fuzz}
mkdir -p "$out/corpus"
cp -n "$top"/tests/fuzz/corpus/* "$out/corpus/" 2>/dev/null || true

clang -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$top/nic" "$top"/nic/ina_proto.c "$top"/nic/ina_engine.c "$top"/nic/ina_kernels.c \
	"$top/tests/fuzz/fuzz_engine.c" -o "$out/fuzz_engine"

cd "$out"
# -rss_limit_mb: the target allocates a small engine per input.
exec ./fuzz_engine -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=1024 \
	-max_len=20000 "$@" corpus
