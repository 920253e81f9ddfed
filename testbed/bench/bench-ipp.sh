#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Instructions per packet in swemu's datapath, counted by callgrind: a
# figure that does not move with the machine's load, beside swemu-bench's
# times, which do.
#   testbed/bench/bench-ipp.sh [-e ELEMS,...] [-n FANIN,...] [-c ROUNDS] [BUILD_DIR]
#   (defaults 64,256 / 4,32 / 100 rounds of 64 slots; build-ipp/, made for
#   x86-64-v3 if missing)
# Per input frame, inside the switch's poll and flush calls only (the
# generator and the freeing of sent frames are the NIC's part): io (the bare
# rx -> tx loop), l2 (forwarding), ina (aggregation, results included), add
# (the bare add of the same payload, loop included), chk (swemu-bench -F's
# checked floor: the least an INA switch with a switch's checks does); and
# the goals' ratios in instructions: g1 = (l2 + add) / ina, g3 = l2 / io,
# x = ina / chk.
set -euo pipefail
usage() { sed -n 3,15p "$0" | sed 's/^# \{0,1\}//'; }
elems=64,256 fanins=4,32 rounds=100
while getopts "e:n:c:h" o; do
	case $o in
	e) elems=$OPTARG ;;
	n) fanins=$OPTARG ;;
	c) rounds=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case "${1:-}" in --help) usage; exit 0 ;; esac
top=$(cd "$(dirname "$0")/../.." && pwd)
# Its own build for x86-64-v3 (AVX2), not -march=native: valgrind does not
# run AVX-512 code, and one instruction set makes figures of different
# machines comparable.
build=${1:-$top/build-ipp}
command -v valgrind >/dev/null || { apt-get install -y valgrind >/dev/null || { echo "bench-ipp: needs valgrind" >&2; exit 1; }; }
if [[ ! -f $build/build.ninja ]]; then
	meson setup "$build" "$top" -Dnative=false -Dc_args=-march=x86-64-v3 >/dev/null ||
		{ echo "bench-ipp: meson setup of $build failed" >&2; exit 1; }
fi
ninja -C "$build" testbed/bench/swemu-bench >/dev/null || { echo "bench-ipp: building swemu-bench in $build failed" >&2; exit 1; }
bench=$build/testbed/bench/swemu-bench
scratch=$(mktemp -d /tmp/swemu-ipp.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

# Ir inside the named functions (and what they call) over one run of MODE.
count() { # MODE ELEMS FANIN FUNCTION...
	local mode=$1 e=$2 n=$3 out=$scratch/cg.out
	shift 3
	local toggles=()
	for f in "$@"; do toggles+=("--toggle-collect=$f"); done
	valgrind --tool=callgrind --callgrind-out-file="$out" "${toggles[@]}" \
		"$bench" -q -z -c "$rounds" -m "$mode" -e "$e" -n "$n" >"$scratch/log" 2>&1 ||
		{ cat "$scratch/log" >&2; echo "bench-ipp: swemu-bench failed under callgrind" >&2; exit 1; }
	# awk reads to the end: quitting early would fail the pipe (pipefail)
	callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !t { gsub(",", "", $1); t = $1 } END { print t }'
}

echo "# instructions per input frame (callgrind; $rounds rounds of 64 slots, senders' UDP checksums 0)"
printf "# %6s %5s | %7s %7s %7s %7s %7s | %5s %5s %5s\n" elems fanin io l2 ina add chk g1 g3 x
for n in ${fanins//,/ }; do
	for e in ${elems//,/ }; do
		pk=$((rounds * 64 * n))
		io=$(count io "$e" "$n" bare_io)
		l2=$(count l2 "$e" "$n" sw_dp_poll_worker sw_dp_flush_worker)
		ina=$(count ina "$e" "$n" sw_dp_poll_worker sw_dp_flush_worker)
		add=$(count ina "$e" "$n" bare_add_ns)
		chk=$(count checked "$e" "$n" bench_floor_ina)
		awk -v e="$e" -v n="$n" -v pk=$pk -v io="$io" -v l2="$l2" -v ina="$ina" -v add="$add" -v chk="$chk" 'BEGIN {
			io /= pk; l2 /= pk; ina /= pk; add /= pk; chk /= pk
			printf "  %6d %5d | %7.0f %7.0f %7.0f %7.0f %7.0f | %5.2f %5.2f %5.2f\n", e, n, io, l2, ina, add, chk,
				(l2 + add) / ina, l2 / io, ina / chk }'
	done
done
