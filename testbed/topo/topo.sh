#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Racks of hosts in network namespaces around swemu ToRs (one process).
#
#   testbed/topo/topo.sh up NAME HOSTS [--subnet 10.A.B] [--no-ina] [--loss P] [--rate R]
#                                 [--buffer B] [--pmd af_packet|af_xdp|bridge] [--mgmt 10.M.N]
#                                 [--lcores LIST] [--rank-cpus LIST] [--cores N]
#                                 [--delay-us US] [--jitter-us US]
#                                 [--burst-loss P_GOOD_BAD,P_BAD_GOOD,LOSS_BAD] [--ecn SHARE]
#                                 [--rack-rates R0,R1,...] [--partitions N]
#                                 [--racks R [--rack-sizes S0,S1,...] [--ina-racks LIST]
#                                  [--uplink-rate R|R0,R1,...] [--uplink-buffer B] [--processes]]
#       --racks splits the hosts evenly over R ToRs tor0.. (--rack-sizes:
#       rack r gets Sr hosts, in host order; they add up to HOSTS): ToR r is
#       SUBNET.(254-r), MAC 02:5e:00:00:00:(fe-r), its rack's hosts are its
#       control-channel sources (a plain ToR's takes link settings only);
#       with R > 1 the ToRs hang off a plain "spine" (SUBNET.246, every
#       host's control channel for its links) by in-memory links (port "up" <-> spine port "tR") emulated
#       at --uplink-rate (one for all, or one per rack) with --uplink-buffer.
#       --processes makes every ToR and the spine its own swemu process (its
#       own config NAME/swemu.SW.cfg, EAL file prefix, stats and log) in a
#       namespace NAME-SW of its own holding its ports, as on its own
#       server; each uplink is a veth pair NAME-uR (ToR port "up") <->
#       NAME-tR (spine port "tR") on the --pmd driver.  "stats" merges
#       their counters.
#       --ina-racks 0,2 makes only
#       those ToRs INA-capable (default: all; --no-ina: none).  --rate and
#       --loss apply to every egress port, links included; --buffer is the
#       tail-drop queue of the host-facing ports (swemu's default otherwise).
#       --delay-us, --jitter-us and --burst-loss (Gilbert-Elliott) apply to
#       every egress port too: a packet between two racks crosses three.
#       --ecn 0.5 makes every port with a rate mark ECN-capable frames CE
#       past that share of its buffer (swemu's 'ecn'; docs/CONGESTION.md).
#       --rack-rates gives each rack's host links their own rate (an older
#       rack), in place of --rate for them.
#       --rate also limits what each host sends (a tbf qdisc on its eth0),
#       as its NIC would: the host link has the rate both ways.
#       Also writes NAME/hosts.cfg, the layout as a host-library host file.
#       --mgmt also gives every host a management interface mgmt0 (10.M.N.(i+1))
#       on a bridge NAME-mg in the root namespace (10.M.N.254): for launchers
#       such as mpirun that talk to their ranks from the root namespace.
#       --lcores 0,1 gives swemu those lcores: its logical switches are
#       spread over them (docs/SWEMU.md, "Lcores"); --rank-cpus 3-15 is
#       where launch.sh runs the ranks.  By default, on 4 cores or more
#       (--cores N: plan for N instead of the machine's count) every switch
#       gets an lcore of its own, up to half the cores, and the ranks the
#       other cores; on fewer, every switch runs on lcore 0 (--processes:
#       the cores in turn) and the ranks anywhere.  With rank CPUs, each
#       host's receive path runs on them too (RPS), not on swemu's lcores.
#       --partitions N (2-4; --pmd af_xdp, not --processes) runs every
#       switch on N lcores, one partition each (docs/SWEMU.md, "One switch
#       on several lcores"): every veth has N queues, swemu's af_xdp port a
#       socket on each, and a BPF program on each host's eth0
#       (steer_udp.bpf.o) sends a datagram to INA port P on queue
#       (P - 48864) mod N, control on queue 0, the rest by flow hash; the
#       in-memory uplinks steer the same way.  The core plan gives the
#       partitions an lcore each, as it would switches.
#       N hosts NAME-h0..: each a namespace with eth0 (MTU 9000, tx checksum
#       offload off) on a veth whose other end, NAME-sI, becomes swemu port hI
#       (net_af_packet); one swemu runs in a namespace NAME-sw holding those
#       ends (two topologies at once cannot collide on af_packet's fanout
#       groups).  --pmd bridge puts a Linux bridge NAME-br in swemu's
#       place (one rack; hosts keep their veth offloads; for comparisons).
#       Host i is SUBNET.(i+1), MAC 02:5e:00:00:00:(i+1); the
#       switch is SUBNET.254.  Writes the swemu config and the EAL arguments
#       to /run/swemu-testbed/NAME/.
#   testbed/topo/topo.sh start NAME [swemu config]   start swemu (background; pid file)
#   testbed/topo/topo.sh stats NAME                  ask swemu to write its JSON stats
#   testbed/topo/topo.sh down NAME                   stop swemu, remove namespaces,
#                                               veths and DPDK runtime files
# Only addresses inside the namespaces it made are used.  "down" is safe to
# run any time (also from a trap after a failure) and removes whatever of
# NAME exists.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
state=/run/swemu-testbed

die() { echo "topo: $*" >&2; exit 2; }

# A rate as swemu reads it ("200M", "1.5G", "10Gb") in bit/s, or "" if it is
# not one: swemu's own parser, through the trial checker.
rate_bps() { "${TRIAL_CFG:-$top/build/testbed/trial/swemu-trial-cfg}" --rate "$1" 2>/dev/null || true; }
usage() { awk 'NR > 2 && !/^#/ {exit} NR > 2' "$0" | sed 's/^# \{0,1\}//'; }

check_name() {
	[[ "$1" =~ ^[a-z][a-z0-9]{0,5}$ ]] || die "NAME must be 1-6 lower-case letters/digits (interface names are short)"
}

# The pid in NAME's pid file if that process is still the swemu this
# topology started (its command line carries the topology's file prefix),
# else nothing: a pid file outlives its process, and the pid may since
# belong to something else, which must not be signalled.
# With a switch SW, the same for that switch's own process (--processes).
swemu_pid() {
	local name=$1 sw=${2:-} pid
	pid=$(cat "$state/$name/swemu${sw:+.$sw}.pid" 2>/dev/null) || return 0
	[[ "$pid" =~ ^[0-9]+$ ]] || return 0
	tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline" | grep -q -- "--file-prefix swemu-$name${sw:+-$sw} " && echo "$pid"
	return 0
}

# The switches that run as processes of their own, or nothing (one swemu).
switch_procs() { cat "$state/$1/switches" 2>/dev/null || true; }

stop_swemu() { # NAME [SW]
	local pid
	pid=$(swemu_pid "$@")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 50); do [ -n "$(swemu_pid "$@")" ] || break; sleep 0.1; done
	[ -z "$(swemu_pid "$@")" ] || kill -KILL "$pid" 2>/dev/null || true
}

cmd_down() {
	local name=$1 d=$state/$1 sw
	stop_swemu "$name"
	for sw in $(switch_procs "$name"); do stop_swemu "$name" "$sw"; done
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$name-(h[0-9]+|tor[0-9]+|spine|sw)$" || true); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done
	for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^$name-([shgnut][0-9]+|mg|br)$" || true); do
		ip link del "$l" 2>/dev/null || true
	done
	# names have no dash: swemu-NAME-* are this topology's switch processes
	rm -rf "/var/run/dpdk/swemu-$name" "/var/run/dpdk/swemu-$name-"* "$d"
}

# A namespace for swemu's ports.  Its kernel must stay silent on them: it
# would send IPv6 (MLD reports, DAD, router solicitations) from each port
# for seconds after it comes up, and af_packet hands swemu those frames as
# if a host had sent them; swemu then learns the namespace's own MACs on
# host ports and floods the chatter into the fabric.  No IPv4 address is
# ever given there, so IPv6 is all there is to turn off.
switch_ns_add() { # NS
	ip netns add "$1"
	ip netns exec "$1" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.all.disable_ipv6=1
	ip -n "$1" link set lo up
}

# ip link set IFACE ARGS..., in namespace NS unless it is empty.
link_set() { # NS IFACE ARGS...
	local ns=$1
	shift
	if [ -n "$ns" ]; then ip -n "$ns" link set "$@"; else ip link set "$@"; fi
}

# A swemu config of switch blocks BLOCKS in dir D: swemu.cfg (SW empty),
# or swemu.SW.cfg with its own stats files for switch SW's own process.
write_cfg() { # D SW BLOCKS WHAT
	local d=$1 sw=$2 nl=$'\n'
	cat > "$d/swemu${sw:+.$sw}.cfg" <<EOF
# written by testbed/topo/topo.sh up ${d##*/} $4
stats_file = "$d/stats${sw:+.$sw}.json";
stats_prom_file = "$d/stats${sw:+.$sw}.prom";
idle_sleep_max_us = 200;
mbufs = 8191;
switches = (
${3%,$nl}
);
EOF
}

# The cores the testbed uses, unless given (--lcores, --rank-cpus).  With C
# cores (--cores, default the machine's) of at least 4: a switch per lcore
# on cores 0..L-1, L = min(switches, C/2), and the hosts' ranks on the rest,
# so that no rank preempts a switch's poll loop (one lcore carrying every
# switch saturated on a 16-core server while the machine looked idle).  On
# fewer cores the hosts need them: every switch on lcore 0 (processes: the
# cores in turn), the ranks anywhere.
core_plan() { # SWITCHES (uses cmd_up's lcores, rankcpus, cores, procs, pmd)
	local nsw=$1 c=${cores:-$(nproc)} l
	[ -z "$lcores" ] || return 0
	if [ "$pmd" = bridge ]; then # no switch to keep the ranks from
		lcores=0
		return 0
	fi
	if ((c >= 4)); then
		l=$((nsw < c / 2 ? nsw : c / 2))
		lcores=$(seq -s, 0 $((l - 1)))
		[ -n "$rankcpus" ] || rankcpus=$l-$((c - 1))
	elif [ "$procs" = true ]; then
		lcores=$(seq -s, 0 $((c - 1)))
	else
		lcores=0
	fi
}

# A CPU list (3-15, 1,3) as a sysfs cpumask: hex words of 32 CPUs, the
# highest first, comma-separated; CPUs this machine lacks left out (a plan
# for more cores than it has, --cores); "" when none is left.
cpu_mask() { # LIST
	local -a word=()
	local part c hi=-1 have out="" i
	local -a parts
	have=$(getconf _NPROCESSORS_CONF)
	IFS=, read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		for ((c = 10#${part%-*}; c <= 10#${part#*-} && c < have; c++)); do
			word[c / 32]=$((${word[c / 32]:-0} | 1 << (c % 32)))
			((c / 32 <= hi)) || hi=$((c / 32))
		done
	done
	for ((i = hi; i >= 0; i--)); do out+=${out:+,}$(printf '%08x' "${word[i]:-0}"); done
	echo "$out"
}

cmd_up() {
	local name=$1 n=$2
	shift 2
	local subnet=10.77.0 ina=true loss="" rate="" pmd=af_packet mgmt="" racks=1 inaracks=all
	local uprate="" upbuf="" buf="" lcores="" delay="" jitter="" geloss="" rackrates="" racksizes="" procs=false
	local cores="" rankcpus="" ecn="" nparts=1

	while (($#)); do
		case $1 in
		--subnet) subnet=$2; shift 2;;
		--no-ina) ina=false; shift;;
		--racks) racks=$2; shift 2;;
		--ina-racks) inaracks=$2; shift 2;;
		--uplink-rate) uprate=$2; shift 2;;
		--uplink-buffer) upbuf=$2; shift 2;;
		--buffer) buf=$2; shift 2;;
		--ecn) ecn=$2; shift 2;;
		--loss) loss=$2; shift 2;;
		--rate) rate=$2; shift 2;;
		--pmd) pmd=$2; shift 2;;
		--mgmt) mgmt=$2; shift 2;;
		--lcores) lcores=$2; shift 2;;
		--cores) cores=$2; shift 2;;
		--rank-cpus) rankcpus=$2; shift 2;;
		--delay-us) delay=$2; shift 2;;
		--jitter-us) jitter=$2; shift 2;;
		--burst-loss) geloss=$2; shift 2;;
		--rack-rates) rackrates=$2; shift 2;;
		--rack-sizes) racksizes=$2; shift 2;;
		--processes) procs=true; shift;;
		--partitions) nparts=$2; shift 2;;
		*) die "unknown option $1";;
		esac
	done
	[[ "$n" =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 16)) || die "HOSTS must be 1..16"
	[[ "$subnet" =~ ^10\.[0-9]+\.[0-9]+$ ]] || die "--subnet must be 10.A.B"
	[[ "$pmd" =~ ^(af_packet|af_xdp|bridge)$ ]] || die "--pmd must be af_packet, af_xdp or bridge"
	[ -z "$mgmt" ] || [[ "$mgmt" =~ ^10\.[0-9]+\.[0-9]+$ ]] || die "--mgmt must be 10.M.N"
	[ -z "$lcores" ] || [[ "$lcores" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--lcores must be a list of lcore ids like 0,1"
	[ -z "$cores" ] || [[ "$cores" =~ ^[1-9][0-9]*$ ]] || die "--cores must be a count of cores"
	[ -z "$rankcpus" ] || [[ "$rankcpus" =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] ||
		die "--rank-cpus must be a CPU list like 3-15 or 1,3"
	[ -z "$delay$jitter" ] || [[ "$delay$jitter" =~ ^[0-9]+$ ]] || die "--delay-us and --jitter-us take microseconds"
	local prob='(0(\.[0-9]+)?|1(\.0*)?)'
	[ -z "$geloss" ] || [[ "$geloss" =~ ^$prob,$prob,$prob$ ]] ||
		die "--burst-loss must be P_GOOD_BAD,P_BAD_GOOD,LOSS_BAD, probabilities such as 0.01,0.3,0.5"
	local host_bps=""
	if [ -n "$rate" ]; then
		host_bps=$(rate_bps "$rate")
		[ -n "$host_bps" ] || die "--rate must be a rate such as 200M or 10G"
	fi
	[[ "$racks" =~ ^[1-8]$ ]] || die "--racks must be 1..8"
	[ "$procs" = false ] || [ "$pmd" != bridge ] || die "--processes runs swemu switches: not with --pmd bridge"
	local steer_obj=""
	if [ "$nparts" != 1 ]; then
		[[ "$nparts" =~ ^[2-4]$ ]] || die "--partitions must be 2..4"
		# af_packet's fanout hashes whole flows; veth queues under af_xdp
		# are what a host-side program can choose
		[ "$pmd" = af_xdp ] || die "--partitions needs --pmd af_xdp (af_packet cannot be steered by UDP port)"
		# a process per switch links them by veth, and a spine's af_xdp
		# transmit bypasses the egress hook that steers
		[ "$procs" = false ] || die "--partitions needs one swemu: not with --processes (a veth uplink cannot be steered)"
		# a device per host and partition; distributions build DPDK with
		# RTE_MAX_ETHPORTS 32
		((n * nparts <= 32)) || die "--partitions $nparts with $n hosts makes $((n * nparts)) DPDK devices; DPDK takes 32"
		steer_obj=${STEER_BPF:-$top/build/testbed/topo/steer_udp.bpf.o}
		[ -f "$steer_obj" ] || die "no $steer_obj (built with clang's BPF target: testbed/setup.sh)"
	fi
	# rack r: hosts rfirst[r] .. rfirst[r] + rsize[r] - 1; host i in rack rack_of[i]
	local -a rsize rfirst rack_of uprates rack_vdevs hdev
	if [ -n "$racksizes" ]; then
		[[ "$racksizes" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--rack-sizes must be a list of host counts like 4,2,3"
		IFS=, read -ra rsize <<<"$racksizes"
		((${#rsize[@]} == racks)) || die "--rack-sizes must give one size per rack ($racks)"
	else
		((n % racks == 0)) || die "--racks must divide HOSTS (or give --rack-sizes)"
		for ((r = 0; r < racks; r++)); do rsize[r]=$((n / racks)); done
	fi
	local at=0
	for ((r = 0; r < racks; r++)); do
		((rsize[r] >= 1)) || die "--rack-sizes: rack $r has no host"
		rfirst[r]=$at
		for ((i = at; i < at + rsize[r]; i++)); do rack_of[i]=$r; done
		at=$((at + rsize[r]))
	done
	((at == n)) || die "--rack-sizes add up to $at hosts, not $n"
	IFS=, read -ra uprates <<<"$uprate"
	((${#uprates[@]} <= 1 || ${#uprates[@]} == racks)) || die "--uplink-rate must give one rate, or one per rack ($racks)"
	[[ "$inaracks" =~ ^(all|none|[0-7](,[0-7])*)$ ]] || die "--ina-racks must be a list like 0,2 (or all, none)"
	[ "$ina" = true ] || inaracks=none
	local r
	local -a rack_ina rack_rate rack_bps
	if [ -n "$rackrates" ]; then
		IFS=, read -ra rack_rate <<<"$rackrates"
		((${#rack_rate[@]} == racks)) || die "--rack-rates must give one rate per rack ($racks)"
		for ((r = 0; r < racks; r++)); do
			rack_bps[r]=$(rate_bps "${rack_rate[r]}")
			[ -n "${rack_bps[r]}" ] || die "--rack-rates: '${rack_rate[r]}' is not a rate such as 200M or 10G"
		done
	fi
	core_plan $(((racks > 1 ? racks + 1 : 1) * nparts))
	# A host's receive path (IP, UDP, its socket, waking its rank) runs on
	# the CPU that hands it the frame: for every frame a switch sends, the
	# switch's lcore, inside its send call.  RPS moves it to the ranks'
	# CPUs: with that lcore the bottleneck, calls ran 8-18% faster
	# (testbed/bench/bench-rps.sh; docs/TRIAL.md, "Switches").  Where the
	# ranks run anywhere (2 cores) it cost 1-3%, so it is set only with
	# the ranks' own CPUs.
	local rps=""
	[ -z "$rankcpus" ] || [ "$pmd" = bridge ] || rps=$(cpu_mask "$rankcpus")
	for ((r = 0; r < racks; r++)); do
		case $inaracks in
		all) rack_ina[r]=true;;
		none) rack_ina[r]=false;;
		*) if [[ ",$inaracks," == *",$r,"* ]]; then rack_ina[r]=true; else rack_ina[r]=false; fi;;
		esac
	done
	if [[ "$inaracks" =~ ^[0-7] ]]; then
		for r in ${inaracks//,/ }; do ((r < racks)) || die "--ina-racks: no rack $r (racks 0..$((racks - 1)))"; done
	fi
	cmd_down "$name"
	local d=$state/$name
	mkdir -p "$d"
	local vdevs="" ports=""
	if [ "$pmd" = bridge ]; then
		((racks == 1)) || die "--pmd bridge makes one rack (a Linux bridge)"
		ip link add "$name-br" type bridge
		ip link set "$name-br" mtu 9000 up
		echo bridge > "$d/bridge"
	fi
	if [ -n "$mgmt" ]; then
		ip link add "$name-mg" type bridge
		ip addr add "$mgmt.254/24" dev "$name-mg"
		ip link set "$name-mg" up
		echo "$mgmt" > "$d/mgmt"
	fi
	# a process per switch: each in a namespace of its own with its ports,
	# as on its own server (af_packet's fanout groups are per namespace:
	# two processes' groups would otherwise collide, pid ^ ifindex)
	local -a swns
	local one_ns="" # one swemu: its namespace NAME-sw
	if ((racks > 1)) && [ "$procs" = true ]; then
		for ((r = 0; r < racks; r++)); do swns[r]=$name-tor$r; done
		for sns in "${swns[@]}" "$name-spine"; do switch_ns_add "$sns"; done
	elif [ "$pmd" != bridge ]; then
		# one swemu in a namespace of its own too: two topologies' swemus
		# started at once in the root namespace collided there (af_packet
		# names its fanout group pid ^ ifindex; the second's ports failed)
		one_ns=$name-sw
		switch_ns_add "$one_ns"
		echo "$one_ns" > "$d/netns"
	fi
	for ((i = 0; i < n; i++)); do
		local ns=$name-h$i sns=${swns[rack_of[i]]:-$one_ns}
		ip netns add "$ns"
		# a queue per partition: the host side's transmit queue k is the
		# switch side's receive queue k
		local q="numtxqueues $nparts numrxqueues $nparts"
		# shellcheck disable=SC2086
		ip link add "$name-h$i" $q type veth peer name "$name-s$i" $q
		ip link set "$name-h$i" netns "$ns"
		ip -n "$ns" link set "$name-h$i" name eth0
		ip -n "$ns" link set lo up
		ip -n "$ns" link set eth0 address "02:5e:00:00:00:$(printf %02x $((i + 1)))" mtu 9000 up
		ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev eth0
		# veth leaves UDP/TCP checksums partial; af_packet would carry them
		# so (a Linux bridge keeps the offloads a real host has)
		[ "$pmd" = bridge ] || ip netns exec "$ns" ethtool -K eth0 tx off >/dev/null
		local hbps=${rack_bps[rack_of[i]]:-$host_bps}
		if [ -n "$hbps" ] && ((hbps > 0)); then
			# the host's side of its link: a NIC sends no faster than
			# the link, so a burst waits here (the socket feels it) and
			# does not all land in the ToR's queue at once.  The bucket
			# holds two jumbo frames (one goes while the next one's
			# tokens come) or 100 us of data where that is more: a
			# 64 KiB bucket let seven hosts' bursts meet at a PS's
			# port: 5-6x the frames marked that the simulator's paced
			# hosts gave (docs/CONGESTION.md)
			local burst=$((hbps / 80000 > 18432 ? hbps / 80000 : 18432))
			ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "${hbps}bit" burst "$burst" limit $((8 << 20))
		fi
		# without it (a kernel with no RPS, a read-only /sys) the run
		# goes on, its switches' lcores the busier (the trial reads them)
		[ -z "$rps" ] || ip netns exec "$ns" sh -c "for q in /sys/class/net/eth0/queues/rx-*; do echo $rps > \$q/rps_cpus; done" ||
			echo "topo: warning: $ns's receive path stays on swemu's lcores (RPS to CPUs $rankcpus failed)" >&2
		[ -z "$sns" ] || ip link set "$name-s$i" netns "$sns"
		link_set "$sns" "$name-s$i" mtu 9000 up
		if [ -n "$mgmt" ]; then
			ip link add "$name-g$i" type veth peer name "$name-n$i"
			ip link set "$name-n$i" netns "$ns"
			ip -n "$ns" link set "$name-n$i" name mgmt0
			ip -n "$ns" addr add "$mgmt.$((i + 1))/24" dev mgmt0
			ip -n "$ns" link set mgmt0 up
			ip link set "$name-g$i" master "$name-mg" up
		fi
		if [ "$pmd" = bridge ]; then
			ip link set "$name-s$i" master "$name-br"
		elif [ "$pmd" = af_packet ]; then
			rack_vdevs[rack_of[i]]+=" --vdev net_af_packet$i,iface=$name-s$i,framesz=10240,blocksz=40960"
		else
			# XDP on a veth takes at most a page per frame; measured here,
			# 3028-byte IP packets pass and 3428-byte ones are dropped
			link_set "$sns" "$name-s$i" mtu 3000
			ip -n "$ns" link set eth0 mtu 3000
			rack_vdevs[rack_of[i]]+=" --vdev net_af_xdp$i,iface=$name-s$i"
			if [ -n "$steer_obj" ]; then
				# a device per partition, each on its own queue: DPDK's
				# af_xdp reads a veth's queues as one
				local k devs="\"net_af_xdp$i\""
				for ((k = 1; k < nparts; k++)); do
					rack_vdevs[rack_of[i]]+=" --vdev net_af_xdp${i}q$k,iface=$name-s$i,start_queue=$k"
					devs+=", \"net_af_xdp${i}q$k\""
				done
				hdev[i]="[ $devs ]"
				# the transmit queue is the flow hash's: the program
				# sets the hash that picks the partition's queue
				ip netns exec "$ns" tc qdisc add dev eth0 clsact
				ip netns exec "$ns" tc filter add dev eth0 egress bpf da obj "$steer_obj" sec "steer$nparts" ||
					die "could not load $steer_obj into $ns's eth0"
			fi
		fi
	done
	for ((r = 0; r < racks; r++)); do vdevs+=${rack_vdevs[r]:-}; done
	local emu="" emu_up_buf sws="" spine="" allmg="" spine_vdevs=""
	local -a tor_blk
	[ -n "$loss" ] && emu+=" loss = $loss;"
	[ -n "$delay" ] && emu+=" delay_us = $delay;"
	[ -n "$jitter" ] && emu+=" jitter_us = $jitter;"
	if [ -n "$geloss" ]; then
		local b
		IFS=, read -ra b <<<"$geloss"
		emu+=" burst_loss = { p_good_bad = ${b[0]}; p_bad_good = ${b[1]}; loss_bad = ${b[2]}; };"
	fi
	[ -n "$upbuf" ] && emu_up_buf=" buffer = \"$upbuf\";" || emu_up_buf=""
	local emu_h_buf="" # the host-facing ports' alone: --uplink-buffer is the uplinks'
	[ -n "$buf" ] && emu_h_buf=" buffer = \"$buf\";"
	local nl=$'\n'
	for ((r = 0; r < racks; r++)); do
		local ports="" mg="" hemu=$emu$emu_h_buf rr=${rack_rate[r]:-$rate} upemu=$emu ur=${uprates[r]:-${uprates[0]:-$rate}}
		# a queue marks only where a rate makes one
		[ -z "$rr" ] || hemu+=" rate = \"$rr\";${ecn:+ ecn = $ecn;}"
		[ -z "$ur" ] || upemu+=" rate = \"$ur\";${ecn:+ ecn = $ecn;}"
		upemu+=$emu_up_buf
		for ((i = rfirst[r]; i < rfirst[r] + rsize[r]; i++)); do
			ports+="      { name = \"h$i\"; dev = ${hdev[i]:-\"net_${pmd}$i\"};${steer_obj:+ steered = true;}$hemu },$nl"
			mg+="\"$subnet.$((i + 1))\", "
		done
		if ((racks > 1)) && [ "$procs" = true ]; then # a veth pair per uplink
			ip link add "$name-u$r" type veth peer name "$name-t$r"
			local lmtu=9000 e
			[ "$pmd" = af_xdp ] && lmtu=3000
			ip link set "$name-u$r" netns "${swns[r]}"
			ip link set "$name-t$r" netns "$name-spine"
			link_set "${swns[r]}" "$name-u$r" mtu $lmtu up
			link_set "$name-spine" "$name-t$r" mtu $lmtu up
			local ld=" --vdev net_${pmd}u$r,iface=$name-u$r" sd=" --vdev net_${pmd}t$r,iface=$name-t$r"
			if [ "$pmd" = af_packet ]; then
				ld+=",framesz=10240,blocksz=40960"
				sd+=",framesz=10240,blocksz=40960"
			fi
			rack_vdevs[r]+=$ld
			spine_vdevs+=$sd
			ports+="      { name = \"up\"; dev = \"net_${pmd}u$r\";$upemu },$nl"
			spine+="      { name = \"t$r\"; dev = \"net_${pmd}t$r\";$upemu },$nl"
		elif ((racks > 1)); then
			ports+="      { name = \"up\"; link = \"spine.t$r\";$upemu },$nl"
			spine+="      { name = \"t$r\"; link = \"tor$r.up\";$upemu },$nl"
		fi
		local blk="  { name = \"tor$r\"; ina = ${rack_ina[r]}; mac = \"02:5e:00:00:00:$(printf %02x $((254 - r)))\";"
		blk+=" ip = \"$subnet.$((254 - r))\";$nl"
		# every ToR takes signed commands from its rack's hosts: a plain
		# one its links' settings only
		[ "${rack_ina[r]}" = true ] && blk+="    slots = 2048; max_elems = 2048;$nl"
		# a plain ToR too: a trial's deployment without INA keeps its lcores
		[ "$nparts" = 1 ] || blk+="    partitions = $nparts;$nl"
		blk+="    mgmt = [ ${mg%, } ]; ctrl_key_file = \"$d/ctrl.key\";$nl"
		allmg+=$mg
		blk+="    ports = ($nl${ports%,$nl}$nl    ); },$nl"
		sws+=$blk
		tor_blk[r]=$blk
		echo "${rack_ina[r]}" > "$d/rack$r.ina"
	done
	# the spine, SUBNET.246 (after the ToRs' .254 down to .247), takes
	# signed link settings from every host (at most 16: mgmt's limit)
	# partitioned as the ToRs are: its links steer into theirs by UDP port
	local spine_parts=""
	[ "$nparts" = 1 ] || spine_parts=" partitions = $nparts;"
	local spine_blk="  { name = \"spine\"; mac = \"02:5e:00:00:00:f6\"; ip = \"$subnet.246\"; mgmt = [ ${allmg%, } ];$spine_parts
    ctrl_key_file = \"$d/ctrl.key\"; ports = ($nl${spine%,$nl}$nl    ); },$nl"
	((racks == 1)) || sws+=$spine_blk
	# the control channel's key: commands are signed with it (HMAC), so a
	# host that only spoofs a mgmt address is refused; root's alone
	(umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' > "$d/ctrl.key")
	# an af_xdp port's receive pool (fill ring + descriptors, ~4 KiB mbufs)
	# adds about 16 MiB to swemu's memory
	local mem=512
	[ "$pmd" = af_xdp ] && mem=$((512 + 16 * n * nparts))
	if ((racks > 1)) && [ "$procs" = true ]; then
		# the processes take the --lcores in turn: pollers sharing one
		# core wait for each other's time slices
		local -a lc
		IFS=, read -ra lc <<<"$lcores"
		for ((r = 0; r < racks; r++)); do
			write_cfg "$d" "tor$r" "${tor_blk[r]}" "$n, rack $r of $racks"
			echo "--no-huge -m $mem --file-prefix swemu-$name-tor$r --no-pci -l ${lc[r % ${#lc[@]}]}${rack_vdevs[r]:-}" > "$d/eal.tor$r.args"
			echo "tor$r" >> "$d/switches"
		done
		write_cfg "$d" spine "$spine_blk" "$n, the spine of $racks racks"
		echo "--no-huge -m 512 --file-prefix swemu-$name-spine --no-pci -l ${lc[racks % ${#lc[@]}]}$spine_vdevs" > "$d/eal.spine.args"
		echo spine >> "$d/switches"
	else
		write_cfg "$d" "" "$sws" "$n, $racks rack(s)"
		echo "--no-huge -m $mem --file-prefix swemu-$name --no-pci -l $lcores$vdevs" > "$d/eal.args"
	fi
	echo "$subnet" > "$d/subnet"
	[ -z "$rankcpus" ] || echo "$rankcpus" > "$d/rank_cpus" # launch.sh pins the ranks there
	# where everything runs (a trial's machine notes take it from its topo.log)
	local where="CPUs $rankcpus"
	[ -n "$rankcpus" ] || where="any CPU"
	[ -z "$rps" ] || where+=", as are the hosts' receive paths (RPS)"
	echo "cores: switches on lcores $lcores, ranks on $where"
	echo "$n" > "$d/hosts"
	echo "${rack_of[*]}" > "$d/host_racks"
	# the same layout as a host file for the host library (HCL_HOSTFILE)
	{
		echo "# written by testbed/topo/topo.sh up $name: rank i is host i"
		echo "ranks = ("
		for ((i = 0; i < n; i++)); do
			r=${rack_of[i]}
			local sw=""
			[ "${rack_ina[r]}" = true ] && sw=" ina_switch = \"$subnet.$((254 - r))\";"
			echo "  { addr = \"$subnet.$((i + 1))\"; rack = $r;$sw }$( ((i + 1 < n)) && echo ,)"
		done
		echo ");"
	} > "$d/hosts.cfg"
	await_links "$name"
}

# A veth set up passes traffic only once the kernel's link watcher has run
# for it, up to a second later: until then its qdisc is noop and drops all
# it is given, so a host's first ARP request could vanish and the host ask
# again a second later.  Waits (5 s at most) until every veth of the
# topology is UP with a real qdisc.
await_links() { # NAME
	local name=$1 ns pending
	for _ in $(seq 100); do
		pending=""
		for ns in "" $(ip netns list | awk -v p="$name-" 'index($1, p) == 1 {print $1}'); do
			pending+=$(ip ${ns:+-n "$ns"} -o link show type veth up |
				awk -v p="$name-" -v ns="$ns" '{ n = $2; sub(/@.*/, "", n); sub(/:$/, "", n) }
					(ns != "" || index(n, p) == 1) && (/qdisc noop/ || !/state UP/) { printf " %s%s", ns ? ns "/" : "", n }')
		done
		[ -z "$pending" ] && return 0
		sleep 0.05
	done
	die "links of $name still down after 5 s:$pending"
}

# One swemu: with SW, switch SW's own process (its config, EAL args, pid,
# log); in the background, recorded in its pid file.
launch_swemu() { # NAME CONFIG [SW]
	local d=$state/$1 sw=${3:-}
	local exe=${SWEMU:-$top/build/swemu/swemu}
	[ -x "$exe" ] || die "no $exe: build first (testbed/setup.sh)"
	local run=()
	[ -z "$sw" ] || run=(ip netns exec "$1-$sw") # its own namespace, with its ports
	[ -n "$sw" ] || [ ! -f "$d/netns" ] || run=(ip netns exec "$(cat "$d/netns")")
	# shellcheck disable=SC2046
	"${run[@]}" "$exe" $(cat "$d/eal${sw:+.$sw}.args") -- -c "$2" > "$d/swemu${sw:+.$sw}.log" 2>&1 &
	echo $! > "$d/swemu${sw:+.$sw}.pid"
}

# Ready when it says so (or dead): no fixed sleep.
await_swemu() { # NAME [SW]
	local d=$state/$1 sw=${2:-}
	local log=$d/swemu${sw:+.$sw}.log pid
	pid=$(cat "$d/swemu${sw:+.$sw}.pid")
	for _ in $(seq 100); do
		grep -q "running from" "$log" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "swemu${sw:+ ($sw)} exited"; }
		sleep 0.1
	done
	die "swemu${sw:+ ($sw)} did not come up in 10 s (log: $log)"
}

cmd_start() {
	local name=$1 d=$state/$1 cfg=${2:-$state/$1/swemu.cfg} sw
	[ -f "$d/eal.args" ] || [ -f "$d/switches" ] || die "no topology $name (topo.sh up first)"
	[ -f "$d/bridge" ] && return 0 # a Linux bridge switches already
	local procs
	procs=$(switch_procs "$name")
	if [ -n "$procs" ]; then
		[ -z "${2:-}" ] || die "topology $name runs a process per switch: its configs are $d/swemu.SW.cfg"
		for sw in $procs; do launch_swemu "$name" "$d/swemu.$sw.cfg" "$sw"; done
		for sw in $procs; do await_swemu "$name" "$sw"; done
		return 0
	fi
	launch_swemu "$name" "$cfg"
	await_swemu "$name"
}

# Asks one swemu to write its stats file F; waits for it.
stats_of() { # NAME F [SW]
	local pid
	pid=$(swemu_pid "$1" "${3:-}")
	[ -n "$pid" ] || die "no swemu${3:+ ($3)} of topology $1 is running"
	rm -f "$2"
	kill -USR1 "$pid"
	for _ in $(seq 50); do [ -f "$2" ] && return 0; sleep 0.05; done
	die "swemu${3:+ ($3)} wrote no stats (pid $pid)"
}

cmd_stats() {
	local d=$state/$1 sw procs
	procs=$(switch_procs "$1")
	if [ -z "$procs" ]; then
		stats_of "$1" "$d/stats.json"
		cat "$d/stats.json"
		return 0
	fi
	local files=()
	for sw in $procs; do
		stats_of "$1" "$d/stats.$sw.json" "$sw"
		files+=("$d/stats.$sw.json")
	done
	# one document as a single swemu writes it: every switch under
	# "switches", every process's lcores under "workers"
	/usr/bin/python3 - "$d/stats.json" "${files[@]}" <<'PY'
import json, sys
out = None
for f in sys.argv[2:]:
    s = json.load(open(f))
    if out is None:
        out = s
        continue
    out["switches"].update(s["switches"])
    for k, v in s.items():
        if isinstance(v, list) and isinstance(out.get(k), list):
            out[k] += v
        elif k != "switches" and isinstance(v, dict) and isinstance(out.get(k), dict):
            for kk, vv in v.items():  # a process's namespace counters: summed
                out[k][kk] = out[k].get(kk, 0) + vv
open(sys.argv[1] + ".tmp", "w").write(json.dumps(out, indent=1))
PY
	mv "$d/stats.json.tmp" "$d/stats.json"
	cat "$d/stats.json"
}

case "${1:-}" in
up) (($# >= 3)) || { usage; exit 2; }; check_name "$2"; cmd_up "${@:2}";;
start) (($# >= 2)) || { usage; exit 2; }; check_name "$2"; cmd_start "${@:2}";;
stats) (($# == 2)) || { usage; exit 2; }; check_name "$2"; cmd_stats "$2";;
down) (($# == 2)) || { usage; exit 2; }; check_name "$2"; cmd_down "$2";;
-h|--help) usage;;
*) usage >&2; exit 2;;
esac
