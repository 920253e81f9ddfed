#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs every Debian 12 package the project needs (idempotent: apt runs
# only when something is missing) and builds the project into build/.
#   testbed/setup.sh [--no-build] [--peers] [--tests] [--sim]
# --peers also installs the benchmark peers (Gloo through python3-torch,
# Open MPI): large, and needed only by testbed/bench/bench-peers.sh.
# --tests also installs python3-torch for the PyTorch DDP test, and ns-3.
# --sim installs ns-3 (libns3-dev) for swemu-sim (docs/SCALE.md).
# With CI set in the environment, warnings are errors.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 3,10p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
build=1
for a in "$@"; do
	case $a in
	--no-build) build=0;;
	--peers) peers=1;;
	--tests) tests=1;;
	--sim) sim=1;;
	*) echo "setup: unknown option $a" >&2; exit 2;;
	esac
done
top=$(cd "$(dirname "$0")/.." && pwd)

packages=(
	# build
	build-essential pkg-config meson ninja-build
	# libraries: DPDK 22.11, JSON stats, unit tests
	libdpdk-dev dpdk-dev libjansson-dev libcmocka-dev
	# HMAC of control commands (nic/ctl_auth.c)
	libssl-dev
	# libFuzzer and sanitizers
	clang libclang-rt-14-dev
	# AF_XDP ports and the namespace testbed
	libxdp-dev libbpf-dev iproute2 ethtool iputils-ping python3
	# benchmarks; the trial report's plots
	iperf3 gnuplot-nox
)

if [ -n "${peers:-}" ]; then
	packages+=(python3-torch openmpi-bin libopenmpi-dev)
fi
if [ -n "${tests:-}" ]; then
	# tshark reads swemu's captures with testbed/capture/ina.lua
	packages+=(python3-torch tshark)
fi
if [ -n "${tests:-}" ] || [ -n "${sim:-}" ]; then
	# swemu-sim (testbed/sim/, docs/SCALE.md): ns-3, whose pkg-config
	# files name GSL's libraries too
	packages+=(libns3-dev libgsl-dev g++)
fi
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
	if [ "$(id -u)" != 0 ]; then
		echo "setup: missing packages (${missing[*]}); run as root to install them" >&2
		exit 1
	fi
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

((build)) || exit 0

werror=false
[ -n "${CI:-}" ] && werror=true
cd "$top"
if [ -f build/build.ninja ]; then
	meson configure build -Dwerror=$werror >/dev/null
else
	meson setup build -Dwerror=$werror >/dev/null
fi
ninja -C build
