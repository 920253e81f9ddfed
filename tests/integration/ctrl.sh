#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Hostile datagrams on swemu's control channel, from a mgmt host: a file
# directive (@include) in any spelling or hiding place is refused before
# the text is parsed, with one answer whatever the path names (no oracle
# for which files exist), counted as ctrl_bad; swemu keeps running and a
# valid command is still applied afterwards.
. "$(dirname "$0")/lib.sh"
topo itctl 2 --subnet 10.82.0

# --raw: the switch's own checks are under test, not swemu-ctl's
ctl() { in_host 0 "$top/testbed/swemu-ctl" --raw 10.82.0.254 "$1" 2>&1 || true; }

cmds=(
	'@include "/"'
	'@include "/etc/passwd"'
	'@include "/nonexistent/x.cfg"'
	'@INCLUDE "/"'
	$'op = "stats"; id = 1;\n  @include "/"'
	$'# a comment\n@include "/etc/hostname"'
	$'op = "stats"; /* "x */ id = 1;\n@include "/"'
)
first=""
bad_before=$(stats_get 'sum(p["drops"]["ctrl_bad"] for p in d["switches"]["tor0"]["ports"].values())')
for c in "${cmds[@]}"; do
	answer=$(ctl "$c")
	case $answer in
	"error: "*) ;;
	*) fail "command ${c@Q}: answer '$answer', want an error";;
	esac
	kill -0 "$(cat /run/swemu-testbed/itctl/swemu.pid)" 2>/dev/null || fail "swemu died on ${c@Q}"
	# the same refusal for a path that exists and one that does not
	[[ "$c" == '@include "'* ]] && { [ -z "$first" ] && first=$answer; [ "$answer" = "$first" ] ||
		fail "answers differ by path: '$first' against '$answer'"; }
done
bad=$(( $(stats_get 'sum(p["drops"]["ctrl_bad"] for p in d["switches"]["tor0"]["ports"].values())') - bad_before ))
((bad == ${#cmds[@]})) || fail "ctrl_bad counted $bad of ${#cmds[@]} refused commands"

# an address with @mac inside a string is not a directive: the install works
answer=$(ctl 'op = "install"; job = { id = 5; dtype = "int32"; slots = 4; elems = 64; outputs = ["multicast"];
  contributors = ["10.82.0.1:48864@02:5e:00:00:00:01", "10.82.0.2:48864"]; };')
[ "$answer" = ok ] || fail "install after the hostile commands: $answer"
[ "$(ctl 'op = "remove"; id = 5;')" = ok ] || fail "remove"
echo "ctrl: ${#cmds[@]} file directives refused alike and counted; swemu still serves commands"
