# SPDX-License-Identifier: BSD-3-Clause
# Sourced (bash): swemu under a CPU quota in a cpu cgroup of its own, v1 or
# v2, so that its lcore is the bottleneck on any machine, as one lcore
# carrying every switch was on a 16-core server
# (tests/integration/saturated.sh, testbed/bench/bench-rps.sh).
#   quota_init DIR SWEMU [SHARE]
#       mounts a cpu cgroup at DIR (outside /sys: "ip netns exec" remounts
#       /sys where swemu starts, and the wrapper reaches the group through
#       this mount) and writes the wrapper QUOTA_WRAP, to give topo.sh as
#       SWEMU=: it joins the group unthrottled and runs SWEMU; with SHARE
#       (of one core), the quota holds from the moment swemu says it is
#       running, each time one starts (its start-up touches every mbuf)
#   quota_set SHARE     the group's quota now: a share of one core, or max
#   quota_per_thread SHARE TID...
#                       each thread TID in a group of its own under it with
#                       SHARE of a core (the group's own quota lifted): one
#                       lcore each, as many cores would give them; cgroup
#                       v1 only (returns 1 on v2, which places processes)
#   quota_throttled     how often the group (or its threads' groups) was
#                       throttled
#   quota_release       kills what is left in the group, removes it, unmounts
# Fails (returns 1, saying why) where no cpu cgroup can be mounted.
QUOTA_PERIOD_US=100000

# "max" or a share of one core as the quota file wants it
quota_value() { # SHARE
	local us
	if [ "$1" = max ]; then
		[ "$QUOTA_V" = 1 ] && echo -1 || echo "max $QUOTA_PERIOD_US"
		return
	fi
	us=$(awk -v s="$1" -v p=$QUOTA_PERIOD_US 'BEGIN { printf "%d", s * p }')
	[ "$QUOTA_V" = 1 ] && echo "$us" || echo "$us $QUOTA_PERIOD_US"
}

quota_init() { # DIR SWEMU [SHARE]
	QUOTA_MNT=$1
	QUOTA_GRP=$1/swemu-quota.$$ # a v1 mount shows the whole hierarchy: a name of its own
	mkdir -p "$QUOTA_MNT"
	if mount -t cgroup -o cpu none "$QUOTA_MNT" 2>/dev/null; then
		QUOTA_V=1
		mkdir "$QUOTA_GRP" && echo $QUOTA_PERIOD_US > "$QUOTA_GRP/cpu.cfs_period_us" || return 1
		QUOTA_FILE=$QUOTA_GRP/cpu.cfs_quota_us
	elif mount -t cgroup2 none "$QUOTA_MNT" 2>/dev/null; then
		QUOTA_V=2
		echo +cpu > "$QUOTA_MNT/cgroup.subtree_control" 2>/dev/null || true
		mkdir "$QUOTA_GRP" || return 1
		QUOTA_FILE=$QUOTA_GRP/cpu.max
		[ -f "$QUOTA_FILE" ] || { echo "cpu-quota: cgroup v2 without the cpu controller" >&2; return 1; }
	else
		rmdir "$QUOTA_MNT" 2>/dev/null
		echo "cpu-quota: no cpu cgroup can be mounted (v1 or v2)" >&2
		return 1
	fi
	QUOTA_WRAP=$QUOTA_MNT.swemu
	local free held=""
	free=$(quota_value max)
	[ -z "${3:-}" ] || held=$(quota_value "$3")
	cat > "$QUOTA_WRAP" <<EOF
#!/bin/bash
echo "$free" > $QUOTA_FILE && echo \$\$ > $QUOTA_GRP/cgroup.procs || exit 1
me=\$\$
[ -z "$held" ] || ( for _ in \$(seq 300); do
	grep -q "running from" /proc/\$me/fd/1 2>/dev/null && { echo "$held" > $QUOTA_FILE; exit 0; }
	kill -0 \$me 2>/dev/null || exit 0
	sleep 0.05
  done ) &
exec $2 "\$@"
EOF
	chmod +x "$QUOTA_WRAP"
}

quota_set() { quota_value "$1" > "$QUOTA_FILE"; } # SHARE

quota_per_thread() { # SHARE TID...
	local share=$1 tid i=0
	shift
	[ "$QUOTA_V" = 1 ] || return 1
	quota_set max
	for tid in "$@"; do
		mkdir -p "$QUOTA_GRP/t$i"
		echo $QUOTA_PERIOD_US > "$QUOTA_GRP/t$i/cpu.cfs_period_us"
		quota_value "$share" > "$QUOTA_GRP/t$i/cpu.cfs_quota_us"
		echo "$tid" > "$QUOTA_GRP/t$i/tasks" || return 1
		i=$((i + 1))
	done
}

quota_throttled() { cat "$QUOTA_GRP"/cpu.stat "$QUOTA_GRP"/t[0-9]*/cpu.stat 2>/dev/null | awk '$1 == "nr_throttled" { n += $2 } END { print n + 0 }'; }

quota_release() {
	[ -n "${QUOTA_MNT:-}" ] || return 0
	if mountpoint -q "$QUOTA_MNT"; then
		for _ in $(seq 50); do
			[ -s "$QUOTA_GRP/cgroup.procs" ] || break
			xargs -r kill < "$QUOTA_GRP/cgroup.procs" 2>/dev/null
			sleep 0.1
		done
		local t # quota_per_thread's groups first (no error: this runs in traps under set -e)
		for t in "$QUOTA_GRP"/t[0-9]*; do [ ! -d "$t" ] || rmdir "$t" 2>/dev/null || true; done
		rmdir "$QUOTA_GRP" 2>/dev/null || true
		umount "$QUOTA_MNT" 2>/dev/null || umount -l "$QUOTA_MNT"
	fi
	rmdir "$QUOTA_MNT" 2>/dev/null
	rm -f "${QUOTA_WRAP:-}"
	QUOTA_MNT=""
}
