#!/usr/bin/env bash
# One rack in network namespaces around a swemu ToR.
#
#   testbed/topo.sh up NAME HOSTS [--subnet 10.A.B] [--no-ina] [--loss P] [--rate R]
#                                 [--pmd af_packet|af_xdp] [--mgmt 10.M.N]
#       --mgmt also gives every host a management interface mgmt0 (10.M.N.(i+1))
#       on a bridge NAME-mg in the root namespace (10.M.N.254): for launchers
#       such as mpirun that talk to their ranks from the root namespace.
#       N hosts NAME-h0..: each a namespace with eth0 (MTU 9000, tx checksum
#       offload off) on a veth whose other end, NAME-sI, becomes swemu port hI
#       (net_af_packet).  Host i is SUBNET.(i+1), MAC 02:5e:00:00:00:(i+1); the
#       switch is SUBNET.254.  Writes the swemu config and the EAL arguments
#       to /run/swemu-testbed/NAME/.
#   testbed/topo.sh start NAME [swemu config]   start swemu (background; pid file)
#   testbed/topo.sh stats NAME                  ask swemu to write its JSON stats
#   testbed/topo.sh down NAME                   stop swemu, remove namespaces,
#                                               veths and DPDK runtime files
# Only addresses inside the namespaces it made are used.  "down" is safe to
# run any time (also from a trap after a failure) and removes whatever of
# NAME exists.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
state=/run/swemu-testbed

die() { echo "topo: $*" >&2; exit 2; }
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }

check_name() {
	[[ "$1" =~ ^[a-z][a-z0-9]{0,5}$ ]] || die "NAME must be 1-6 lower-case letters/digits (interface names are short)"
}

cmd_down() {
	local name=$1 d=$state/$1
	if [ -f "$d/swemu.pid" ]; then
		local pid
		pid=$(cat "$d/swemu.pid")
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null || true
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$name-h[0-9]+$" || true); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done
	for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^$name-([shgn][0-9]+|mg)$" || true); do
		ip link del "$l" 2>/dev/null || true
	done
	rm -rf "/var/run/dpdk/swemu-$name" "$d"
}

cmd_up() {
	local name=$1 n=$2
	shift 2
	local subnet=10.77.0 ina=true loss="" rate="" pmd=af_packet mgmt=""
	while (($#)); do
		case $1 in
		--subnet) subnet=$2; shift 2;;
		--no-ina) ina=false; shift;;
		--loss) loss=$2; shift 2;;
		--rate) rate=$2; shift 2;;
		--pmd) pmd=$2; shift 2;;
		--mgmt) mgmt=$2; shift 2;;
		*) die "unknown option $1";;
		esac
	done
	[[ "$n" =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 16)) || die "HOSTS must be 1..16"
	[[ "$subnet" =~ ^10\.[0-9]+\.[0-9]+$ ]] || die "--subnet must be 10.A.B"
	[[ "$pmd" =~ ^(af_packet|af_xdp)$ ]] || die "--pmd must be af_packet or af_xdp"
	[ -z "$mgmt" ] || [[ "$mgmt" =~ ^10\.[0-9]+\.[0-9]+$ ]] || die "--mgmt must be 10.M.N"
	cmd_down "$name"
	local d=$state/$name
	mkdir -p "$d"
	local vdevs="" ports=""
	if [ -n "$mgmt" ]; then
		ip link add "$name-mg" type bridge
		ip addr add "$mgmt.254/24" dev "$name-mg"
		ip link set "$name-mg" up
		echo "$mgmt" > "$d/mgmt"
	fi
	for ((i = 0; i < n; i++)); do
		local ns=$name-h$i
		ip netns add "$ns"
		ip link add "$name-h$i" type veth peer name "$name-s$i"
		ip link set "$name-h$i" netns "$ns"
		ip -n "$ns" link set "$name-h$i" name eth0
		ip -n "$ns" link set lo up
		ip -n "$ns" link set eth0 address "02:5e:00:00:00:$(printf %02x $((i + 1)))" mtu 9000 up
		ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev eth0
		# veth leaves UDP/TCP checksums partial; af_packet would carry them so
		ip netns exec "$ns" ethtool -K eth0 tx off >/dev/null
		ip link set "$name-s$i" mtu 9000 up
		if [ -n "$mgmt" ]; then
			ip link add "$name-g$i" type veth peer name "$name-n$i"
			ip link set "$name-n$i" netns "$ns"
			ip -n "$ns" link set "$name-n$i" name mgmt0
			ip -n "$ns" addr add "$mgmt.$((i + 1))/24" dev mgmt0
			ip -n "$ns" link set mgmt0 up
			ip link set "$name-g$i" master "$name-mg" up
		fi
		if [ "$pmd" = af_packet ]; then
			vdevs+=" --vdev net_af_packet$i,iface=$name-s$i,framesz=10240,blocksz=40960"
		else
			# XDP on a veth takes at most a page per frame; measured here,
			# 3028-byte IP packets pass and 3428-byte ones are dropped
			ip link set "$name-s$i" mtu 3000
			ip -n "$ns" link set eth0 mtu 3000
			vdevs+=" --vdev net_af_xdp$i,iface=$name-s$i"
		fi
		local emu=""
		[ -n "$loss" ] && emu+=" loss = $loss;"
		[ -n "$rate" ] && emu+=" rate = \"$rate\";"
		ports+="    { name = \"h$i\"; dev = \"net_${pmd}$i\";$emu },"$'\n'
	done
	cat > "$d/swemu.cfg" <<EOF
# written by testbed/topo.sh up $name $n
stats_file = "$d/stats.json";
idle_sleep_max_us = 200;
mbufs = 8191;
switches = (
  { name = "tor0"; ina = $ina; mac = "02:5e:00:00:00:fe"; ip = "$subnet.254";
    $([ $ina = true ] && echo "slots = 256; max_elems = 2048; mgmt = [ \"$subnet.1\" ];")
    ports = (
${ports%,$'\n'}
    );
  }
);
EOF
	echo "--no-huge -m 512 --file-prefix swemu-$name --no-pci -l 0$vdevs" > "$d/eal.args"
	echo "$subnet" > "$d/subnet"
	echo "$n" > "$d/hosts"
}

cmd_start() {
	local name=$1 d=$state/$1 cfg=${2:-$state/$1/swemu.cfg}
	[ -f "$d/eal.args" ] || die "no topology $name (topo.sh up first)"
	local exe=${SWEMU:-$top/build/swemu/swemu}
	[ -x "$exe" ] || die "no $exe: build first (testbed/setup.sh)"
	# shellcheck disable=SC2046
	"$exe" $(cat "$d/eal.args") -- -c "$cfg" > "$d/swemu.log" 2>&1 &
	echo $! > "$d/swemu.pid"
	# ready when it says so (or dead): no fixed sleep
	for _ in $(seq 100); do
		grep -q "running from" "$d/swemu.log" 2>/dev/null && return 0
		kill -0 "$(cat "$d/swemu.pid")" 2>/dev/null || { cat "$d/swemu.log" >&2; die "swemu exited"; }
		sleep 0.1
	done
	die "swemu did not come up in 10 s (log: $d/swemu.log)"
}

cmd_stats() {
	local d=$state/$1 pid
	pid=$(cat "$d/swemu.pid")
	local before=0
	[ -f "$d/stats.json" ] && before=$(stat -c %Y.%N "$d/stats.json" 2>/dev/null || echo 0)
	rm -f "$d/stats.json"
	kill -USR1 "$pid"
	for _ in $(seq 50); do [ -f "$d/stats.json" ] && { cat "$d/stats.json"; return 0; }; sleep 0.05; done
	die "swemu wrote no stats (pid $pid, before $before)"
}

case "${1:-}" in
up) (($# >= 3)) || { usage; exit 2; }; check_name "$2"; cmd_up "${@:2}";;
start) (($# >= 2)) || { usage; exit 2; }; check_name "$2"; cmd_start "${@:2}";;
stats) (($# == 2)) || { usage; exit 2; }; check_name "$2"; cmd_stats "$2";;
down) (($# == 2)) || { usage; exit 2; }; check_name "$2"; cmd_down "$2";;
-h|--help) usage;;
*) usage >&2; exit 2;;
esac
