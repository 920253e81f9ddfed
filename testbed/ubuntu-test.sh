#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs the README's test command on Ubuntu's own userland, on this machine:
# an Ubuntu root (debootstrap from archive.ubuntu.com, signatures checked
# against Ubuntu's archive key) under /srv/swemu-ubuntu/DIST, a clean clone
# of this repository's HEAD in it, then testbed/run-tests.sh there in a
# chroot: setup.sh installs Ubuntu's packages (its DPDK, meson, clang,
# python3-torch, ns-3) and every test runs on them, against this kernel.
#   testbed/ubuntu-test.sh [--keep] DIST [run-tests.sh args...]
#   DIST: jammy (Ubuntu 22.04, DPDK 21.11) or noble (Ubuntu 24.04, DPDK 23.11)
# --keep leaves the root for the next run (it is reused; about 3 GB);
# otherwise it is removed at the end.  Mounts, processes and namespaces made
# in the chroot are always removed.  Needs root and access to
# archive.ubuntu.com; not part of CI, as the network is its input.
set -euo pipefail
usage() { sed -n 3,14p "$0" | sed 's/^# \{0,1\}//'; }
keep=0
while (($#)); do
	case $1 in
	--keep) keep=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) break ;;
	esac
done
dist=${1:-}
case $dist in jammy | noble) shift ;; *) usage >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "ubuntu-test: run as root" >&2; exit 1; }
top=$(cd "$(dirname "$0")/.." && pwd)
mirror=http://archive.ubuntu.com/ubuntu
root=/srv/swemu-ubuntu/$dist
keys=/var/cache/swemu-ubuntu
# Ubuntu Archive Automatic Signing Key (2018), which signs both releases
archive_key=F6ECB3762474EDA9D21B7022871920D1991BC93C

# Ubuntu's keyring package, trusted only if it holds the pinned key
keyring=$keys/usr/share/keyrings/ubuntu-archive-keyring.gpg
for tool in debootstrap curl gpg xz; do
	command -v $tool >/dev/null || { apt-get install -y -q debootstrap curl gnupg xz-utils; break; }
done
if [ ! -s "$keyring" ]; then
	mkdir -p "$keys"
	deb=$(curl -sfL "$mirror/dists/noble/main/binary-amd64/Packages.xz" | xz -dc |
		awk '/^Package: ubuntu-keyring$/ { f = 1 } f && /^Filename:/ { print $2; f = 0 }' | tail -1)
	[ -n "$deb" ] || { echo "ubuntu-test: cannot read noble's package list from $mirror" >&2; exit 1; }
	curl -sfL "$mirror/$deb" -o "$keys/keyring.deb"
	dpkg-deb -x "$keys/keyring.deb" "$keys"
fi
if ! gpg --show-keys --with-colons "$keyring" 2>/dev/null | grep -q "^fpr:*$archive_key:"; then
	echo "ubuntu-test: $keyring lacks Ubuntu's archive key $archive_key" >&2
	rm -rf "$keys"
	exit 1
fi

if [ ! -x "$root/usr/bin/apt-get" ]; then
	rm -rf "$root"
	mkdir -p "$root"
	# Debian 12's debootstrap predates noble; every Ubuntu release uses
	# the same script
	debootstrap --variant=minbase --keyring="$keyring" "$dist" "$root" "$mirror" \
		/usr/share/debootstrap/scripts/gutsy
	{
		echo "deb $mirror $dist main universe"
		echo "deb $mirror $dist-updates main universe"
		echo "deb $mirror $dist-security main universe"
	} >"$root/etc/apt/sources.list"
fi
cp --remove-destination /etc/resolv.conf "$root/etc/resolv.conf"

mounted=()
cleanup() {
	local pid
	# whatever still runs in the root (a swemu a failed test left)
	for pid in $(ls /proc | grep -E '^[0-9]+$'); do
		[ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$root" ] && kill -KILL "$pid" 2>/dev/null
	done
	for ns in $(ls "$root/run/netns" 2>/dev/null); do
		chroot "$root" ip netns del "$ns" 2>/dev/null || true
	done
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -R -l "${mounted[i]}" 2>/dev/null || true
	done
	# never through a mount left behind (the host's /dev is bound in)
	if grep -q " $root[/ ]" /proc/mounts; then
		echo "ubuntu-test: mounts under $root remain; not removing it" >&2
		return
	fi
	rm -rf --one-file-system "$root/root/swemu"
	((keep)) || rm -rf --one-file-system "$root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mnt() { # TYPE-or-bind SOURCE DIR
	mkdir -p "$root/$3"
	if [ "$1" = bind ]; then mount --rbind "$2" "$root/$3"; else mount -t "$1" "$2" "$root/$3"; fi
	mounted+=("$root/$3")
}
# the root a mount point of its own: ip netns exec makes / a slave mount
mount --bind "$root" "$root"
mounted+=("$root")
mnt proc proc proc
mnt bind /sys sys
mnt bind /dev dev
# a run's namespaces, DPDK runtime files and pid files go with this mount
mnt tmpfs tmpfs run

rm -rf "$root/root/swemu"
git -C "$top" rev-parse HEAD >/dev/null
git clone -q "file://$top" "$root/root/swemu" # a snapshot: no hard links into objects a gc may move
echo "ubuntu-test: $(. "$root/etc/os-release"; echo "$PRETTY_NAME"), HEAD $(git -C "$top" rev-parse --short HEAD)"
rc=0
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	LANG=C.UTF-8 CI=true bash -c 'cd /root/swemu && bash testbed/run-tests.sh "$@"' run-tests "$@" || rc=$?
echo "ubuntu-test: $dist: run-tests.sh exited $rc"
exit $rc
