#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs every Debian 12 package the project needs (idempotent: apt runs
# only when something is missing) and builds the project into build/.
# Elsewhere it takes the same packages where apt has them, the clang runtime
# of the distribution's clang, and skips optional ones apt lacks, naming
# them (Ubuntu 22.04 and 24.04: testbed/ubuntu-test.sh runs the tests there).
#   testbed/setup.sh [--no-build] [--peers] [--tests] [--sim]
# --peers also installs the benchmark peers (Gloo through python3-torch,
# Open MPI): large, and needed only by testbed/bench/bench-peers.sh.
# --tests also installs python3-torch for the PyTorch DDP test, and ns-3.
# --sim installs ns-3 (libns3-dev) for swemu-sim (docs/SCALE.md).
# With CI set in the environment, warnings are errors.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 3,13p "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
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
# the one system this is tested on; elsewhere package names are looked up
debian12=0
if [ -r /etc/os-release ]; then
	. /etc/os-release
	[ "${ID:-}" = debian ] && [ "${VERSION_ID:-}" = 12 ] && debian12=1
fi
((debian12)) || echo "setup: ${PRETTY_NAME:-this system} is not Debian 12, the system this is tested on" >&2
# libFuzzer and the sanitizers' runtime: Debian 12's clang is 14
clang_rt=()
((debian12)) && clang_rt=(libclang-rt-14-dev)
# what the tests and benchmarks can do without (they skip or say so)
optional=" python3-torch openmpi-bin libopenmpi-dev tshark libns3-dev libgsl-dev libsqlite3-dev "

packages=(
	# build
	build-essential pkg-config meson ninja-build
	# libraries: DPDK 22.11, JSON stats, unit tests
	libdpdk-dev dpdk-dev libjansson-dev libcmocka-dev
	# HMAC of control commands (nic/ctl_auth.c)
	libssl-dev
	# libFuzzer and sanitizers
	clang "${clang_rt[@]}"
	# the namespace testbed (libdpdk-dev brings the XDP libraries its
	# af_xdp driver needs: libxdp on Debian 12, libbpf alone on 22.04)
	iproute2 ethtool iputils-ping python3
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
	# files name GSL's and SQLite's libraries too (Ubuntu 24.04's
	# libns3-dev does not bring libsqlite3-dev)
	packages+=(libns3-dev libgsl-dev libsqlite3-dev g++)
fi
# (no grep -q on a pipe: under pipefail the writer's SIGPIPE fails the test)
installed() { [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == *"install ok installed"* ]]; }
# apt can install it (a name apt knows of, as python3-torch on Ubuntu 24.04,
# may still have no version to install)
installable() { [[ $(apt-cache policy "$1" 2>/dev/null) =~ Candidate:\ [^\(] ]]; }
missing=()
for p in "${packages[@]}"; do
	installed "$p" || missing+=("$p")
done
if ((${#missing[@]})) || ! ((debian12)); then
	if [ "$(id -u)" != 0 ]; then
		if ((${#missing[@]})); then
			echo "setup: missing packages (${missing[*]}); run as root to install them" >&2
			exit 1
		fi
	else
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q
	fi
fi
if ! ((debian12)) && [ "$(id -u)" = 0 ]; then
	# the runtime of the clang this distribution calls clang, where it is
	# a package of its own (clang 18's on Ubuntu 24.04; Ubuntu 22.04's
	# clang 14 carries it)
	n=$(apt-cache depends clang 2>/dev/null | sed -n 's/^ *Depends: clang-\([0-9]*\)$/\1/p')
	n=${n%%$'\n'*}
	if [ -n "$n" ] && installable "libclang-rt-$n-dev" && ! installed "libclang-rt-$n-dev"; then
		missing+=("libclang-rt-$n-dev")
	fi
	known=()
	for p in "${missing[@]}"; do
		if installable "$p"; then
			known+=("$p")
		elif [[ $optional == *" $p "* ]]; then
			echo "setup: apt has no $p here: what needs it is skipped" >&2
		else
			echo "setup: apt has no $p here, which the build needs" >&2
			exit 1
		fi
	done
	missing=("${known[@]}")
fi
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
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
