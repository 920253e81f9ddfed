#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Starts one rank per host of a testbed topology and waits for all of them.
#   testbed/topo/launch.sh NAME [--ranks N] [--port P] [--rack-size S] [--hostfile] -- COMMAND [ARGS...]
# Rank i runs COMMAND in namespace NAME-hi with RANK=i, WORLD_SIZE=N,
# MASTER_ADDR/HCL_DATA_ADDR set from the topology (host 0 is the master),
# MASTER_PORT=P (default 29500), HCL_RACK=host i's rack in the topology
# (--rack-size S: i/S instead) and, when the rack's ToR aggregates, HCL_INA_SWITCH=its
# address, and HCL_INA_KEY_FILE=the topology's control key.  Rank 0 writes to this terminal; rank i's output goes to
# /run/swemu-testbed/NAME/rank-i.log.  Ranks run on the CPUs topo.sh set
# apart for them (NAME/rank_cpus), if it did.  Exit status 0 when every rank
# succeeded; otherwise the failing ranks' last lines are shown.  With
# --hostfile a rank gets only RANK and HCL_HOSTFILE=NAME/hosts.cfg.
set -euo pipefail
case "${1:-}" in -h|--help|"") awk 'NR > 2 && !/^#/ {exit} NR > 2' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
name=$1
shift
d=/run/swemu-testbed/$name
[ -f "$d/subnet" ] || { echo "launch: no topology $name (testbed/topo/topo.sh up)" >&2; exit 2; }
subnet=$(cat "$d/subnet")
n=$(cat "$d/hosts")
port=29500
hostfile=""
racksize=""
# host i's rack, as topo.sh laid them out (racks may differ in size)
read -ra host_rack < "$d/host_racks" 2>/dev/null || host_rack=()
while (($#)) && [ "$1" != -- ]; do
	case $1 in
	--ranks) n=$2; shift 2;;
	--port) port=$2; shift 2;;
	--rack-size) racksize=$2; shift 2;;
	--hostfile) hostfile=$d/hosts.cfg; shift;;
	*) echo "launch: unknown option $1" >&2; exit 2;;
	esac
done
[ "${1:-}" = -- ] || { echo "launch: COMMAND after --" >&2; exit 2; }
shift
# the cores topo.sh set apart for the ranks (away from the switches' lcores)
pin=()
[ ! -f "$d/rank_cpus" ] || pin=(taskset -c "$(cat "$d/rank_cpus")")
pids=()
# the ranks run in the background, where a non-interactive shell ignores
# SIGINT for them: stopping the launcher stops them too
trap '((${#pids[@]})) && kill -TERM "${pids[@]}" 2>/dev/null; exit 130' INT TERM
for ((i = 0; i < n; i++)); do
	if [ -n "$racksize" ]; then r=$((racksize > 0 ? i / racksize : 0)); else r=${host_rack[i]:-0}; fi
	env=(RANK=$i WORLD_SIZE=$n MASTER_ADDR=$subnet.1 MASTER_PORT=$port HCL_DATA_ADDR=$subnet.$((i + 1)) HCL_RACK=$r)
	if [ "$(cat "$d/rack$r.ina" 2>/dev/null)" = true ]; then env+=(HCL_INA_SWITCH=$subnet.$((254 - r))); fi
	[ -z "$hostfile" ] || env=(RANK=$i HCL_HOSTFILE=$hostfile)
	# the switch's key signs the ranks' commands to it (a secret: not in hosts.cfg)
	[ ! -f "$d/ctrl.key" ] || env+=(HCL_INA_KEY_FILE=$d/ctrl.key)
	if ((i == 0)); then
		ip netns exec "$name-h$i" "${pin[@]}" env "${env[@]}" "$@" &
	else
		ip netns exec "$name-h$i" "${pin[@]}" env "${env[@]}" "$@" > "$d/rank-$i.log" 2>&1 &
	fi
	pids+=($!)
done
rc=0
for ((i = 0; i < n; i++)); do
	if ! wait "${pids[$i]}"; then
		rc=1
		((i == 0)) || { echo "--- rank $i failed:" >&2; tail -n 5 "$d/rank-$i.log" >&2; }
	fi
done
exit $rc
