#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the project against the DPDK of another distribution, on this
# machine: Ubuntu's libdpdk-dev and its libraries, fetched from
# archive.ubuntu.com and unpacked under /opt/swemu-compat/DIST (nothing is
# installed), then a build in build-DIST/.  With --run, where those
# libraries load here, the unit tests run on them, and with --integration
# the namespace tests too.
#   testbed/dpdk-compat.sh [--run] [--integration] DIST
#   DIST: jammy (Ubuntu 22.04, DPDK 21.11: its libraries load on Debian 12)
#         noble (Ubuntu 24.04, DPDK 23.11: they need glibc 2.38, so build only)
# Needs root (for /opt and, while tests run, a link to the plugin directory
# the DPDK expects in /usr/lib/x86_64-linux-gnu/dpdk, removed at exit) and
# access to archive.ubuntu.com.  Not part of CI: the network is its input.
set -euo pipefail
usage() { sed -n 3,14p "$0" | sed 's/^# \{0,1\}//'; }
run=0 integration=0 dist=
for a in "$@"; do
	case $a in
	--run) run=1 ;;
	--integration) run=1 integration=1 ;;
	-h | --help) usage; exit 0 ;;
	jammy | noble) dist=$a ;;
	*) usage >&2; exit 2 ;;
	esac
done
[ -n "$dist" ] || { usage >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "dpdk-compat: run as root" >&2; exit 1; }
top=$(cd "$(dirname "$0")/.." && pwd)
mirror=http://archive.ubuntu.com/ubuntu
# EAL refuses plugins under a world-writable directory such as /tmp
root=/opt/swemu-compat/$dist
lib=$root/usr/lib/x86_64-linux-gnu
cache=/var/cache/swemu-compat/$dist
mkdir -p "$cache" "$root"
chmod 755 /opt/swemu-compat "$root"

# Every package of the release and its updates: "name version filename"
index=$cache/index
if [ ! -s "$index" ]; then
	for pocket in "$dist" "$dist-updates" "$dist-security"; do
		for comp in main universe; do
			curl -sfL "$mirror/dists/$pocket/$comp/binary-amd64/Packages.xz" | xz -dc ||
				{ echo "dpdk-compat: cannot read $pocket/$comp from $mirror" >&2; exit 1; }
		done
	done | awk '/^Package:/ { p = $2 } /^Version:/ { v = $2 } /^Filename:/ { print p, v, $2 }' >"$index.part"
	mv "$index.part" "$index"
fi
# Package $1's newest version ($2 = 1) or its file ($2 = 2), as apt
# would install it
newest() {
	local best= file= v f
	while read -r v f; do
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then
			best=$v file=$f
		fi
	done < <(awk -v p="$1" '$1 == p { print $2, $3 }' "$index")
	if [ "$2" = 1 ]; then echo "$best"; else echo "$file"; fi
}
version=$(newest libdpdk-dev 1)
[ -n "$version" ] || { echo "dpdk-compat: $dist has no libdpdk-dev" >&2; exit 1; }

# libdpdk-dev, the DPDK libraries it names, and what their plugins need
# that Debian 12 lacks (jammy's af_xdp driver: libbpf 0.5)
curl -sfL "$mirror/$(newest libdpdk-dev 2)" -o "$cache/libdpdk-dev.deb" ||
	{ echo "dpdk-compat: cannot fetch libdpdk-dev" >&2; exit 1; }
deps=$(dpkg-deb -f "$cache/libdpdk-dev.deb" Depends | tr ',' '\n' | awk '$1 ~ /^librte-/ && $1 !~ /meta/ { print $1 }')
extra=()
[ "$dist" = jammy ] && extra=(libbpf0)
echo "dpdk-compat: $dist's DPDK $version: $(echo "$deps" | wc -l) libraries into $root"
for p in libdpdk-dev $deps "${extra[@]}"; do
	f=$(newest "$p" 2)
	[ -n "$f" ] || { echo "dpdk-compat: $dist has no $p" >&2; exit 1; }
	deb=$cache/$(basename "$f")
	[ -s "$deb" ] || curl -sfL "$mirror/$f" -o "$deb" || { echo "dpdk-compat: cannot fetch $p" >&2; exit 1; }
	dpkg-deb -x "$deb" "$root"
done
sed -i "s|^prefix=.*|prefix=$root/usr|" "$lib"/pkgconfig/libdpdk*.pc

# The build: this system's other libraries, that DPDK's; the DPDK
# libraries' own needs (NIC drivers' verbs and the like) are not checked
# at link time, as they are not here.
build=$top/build-$dist
export PKG_CONFIG_PATH=$lib/pkgconfig
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$top" -Dwerror=true \
		-Dc_link_args="-Wl,--allow-shlib-undefined -Wl,-rpath-link,$lib" >/dev/null
fi
ninja -C "$build" >/dev/null || { echo "dpdk-compat: the build against DPDK $version failed" >&2; exit 1; }
echo "dpdk-compat: built against DPDK $version in $build, no warnings"
((run)) || exit 0

export LD_LIBRARY_PATH=$lib
if ! out=$("$build/swemu/swemu" --help 2>&1 >/dev/null); then
	echo "dpdk-compat: $dist's libraries do not load here: ${out%%$'\n'*}" >&2
	exit 1
fi
# the plugin directory compiled into that EAL, pointed at the unpacked one
# while the tests run
plugins=$(strings "$lib"/librte_eal.so.* | sed -n 's/^DPDK_PLUGIN_PATH=//p' | head -1)
link=
if [ -n "$plugins" ] && [ ! -e "$plugins" ]; then
	ln -s "$root$plugins" "$plugins"
	link=$plugins
fi
trap '[ -z "$link" ] || rm -f "$link"' EXIT
suites=(--suite unit)
((integration)) && suites+=(--suite integration)
meson test -C "$build" --no-rebuild "${suites[@]}" --print-errorlogs |
	grep -E '^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout):'
