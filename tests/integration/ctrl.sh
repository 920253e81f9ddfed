#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Hostile datagrams on swemu's control channel, from a mgmt host: a file
# directive (@include) in any spelling or hiding place is refused before
# the text is parsed, with one answer whatever the path names (no oracle
# for which files exist), counted as ctrl_bad; swemu keeps running and a
# valid command is still applied afterwards.  Two owners on one switch:
# neither removes nor installs over the other's job (ctrl_not_owner); a
# job without an owner any mgmt host may remove; "auto" ids come from the
# switch, and a re-sent auto install gets the same id, not a second job.
# Only commands signed with the switch's key are taken, once each; a
# flood is cut to the source's rate.
. "$(dirname "$0")/lib.sh"
topo itctl 2 --subnet 10.82.0

# --raw: the switch's own checks are under test, not swemu-ctl's
ctl() { in_host 0 "$top/testbed/topo/swemu-ctl" --raw 10.82.0.254 "$1" 2>&1 || true; }

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

job() { echo "job = { id = $1; dtype = \"int32\"; slots = 4; elems = 64; outputs = [\"multicast\"];
  contributors = [\"10.82.0.1:48864\", \"10.82.0.2:48864\"]; };"; }
notown=$(stats_get 'd["switches"]["tor0"]["ctrl_not_owner"]')
[ "$(ctl "op = \"install\"; owner = \"a1\"; $(job 7)")" = ok ] || fail "install of owner a1"
answer=$(ctl 'op = "remove"; owner = "b2"; id = 7;')
[ "$answer" = "error: ctrl: not the owner of this job" ] || fail "owner b2 removed a1's job: $answer"
answer=$(ctl 'op = "remove"; id = 7;')
[ "$answer" = "error: ctrl: not the owner of this job" ] || fail "an ownerless remove took a1's job: $answer"
answer=$(ctl "op = \"install\"; owner = \"b2\"; $(job 7)")
[ "$answer" = "error: ctrl: job id in use by another owner" ] || fail "owner b2 installed over a1's job: $answer"
[ $(( $(stats_get 'd["switches"]["tor0"]["ctrl_not_owner"]') - notown )) = 3 ] || fail "ctrl_not_owner: $(stats)"
[[ "$(ctl 'op = "stats"; id = 7;')" == "ok job=7 "* ]] || fail "stats of a1's job refused to others" # read-only: open
[ "$(ctl 'op = "remove"; owner = "a1"; id = 7;')" = ok ] || fail "owner a1 could not remove its job"
# ownerless (as a config file's): any mgmt source removes it
[ "$(ctl "op = \"install\"; $(job 8)")" = ok ] || fail "ownerless install"
[ "$(ctl 'op = "remove"; owner = "c3"; id = 8;')" = ok ] || fail "an ownerless job is everyone's to remove"
# ids of the switch's choosing; the same install again is the same job
a=$(ctl "op = \"install\"; owner = \"d4\"; $(job '"auto"')")
[[ "$a" =~ ^ok\ job=([0-9]+)$ ]] || fail "auto install: $a"
id=${BASH_REMATCH[1]}
((id >= 32768)) || fail "auto id $id below the switch's range"
[ "$(ctl "op = \"install\"; owner = \"d4\"; $(job '"auto"')")" = "ok job=$id" ] || fail "a re-sent auto install made a second job"
b=$(ctl "op = \"install\"; owner = \"e5\"; $(job '"auto"')")
[ "$b" = "ok job=$((id + 1))" ] || fail "another owner's auto install: $b"
[ "$(ctl "op = \"remove\"; owner = \"d4\"; id = $id;")" = ok ] || fail "remove of auto job"
[ "$(ctl "op = \"remove\"; owner = \"e5\"; id = $((id + 1));")" = ok ] || fail "remove of the other auto job"

# authentication: the topology's switch takes only commands signed with
# its key (ctrl_key_file); unsigned, wrongly signed and replayed ones are
# answered as such and counted ctrl_auth.  The signature is made here by
# Python's own hmac, apart from the C code: the wire format is what
# docs/SWEMU.md says it is.
authd() { stats_get 'sum(p["drops"]["ctrl_auth"] for p in d["switches"]["tor0"]["ports"].values())'; }
auth0=$(authd)
answer=$(SWEMU_CTL_KEY_FILE= ctl 'op = "stats"; id = 1;')
[ "$answer" = "error: ctrl: not authenticated: no AUTH1 line" ] || fail "unsigned command: $answer"
wrong=$LOGDIR/wrong.key
(umask 077 && echo "not-the-switch-key-0123456789" > "$wrong")
answer=$(in_host 0 "$top/testbed/topo/swemu-ctl" --key "$wrong" 10.82.0.254 'op = "stats"; id = 1;' 2>&1) && fail "wrong key: ok?"
[ "$answer" = "error: ctrl: not authenticated: bad signature" ] || fail "wrong key: $answer"
replay=$(in_host 0 $PY - "$SWEMU_CTL_KEY_FILE" <<'P'
import hashlib, hmac, os, socket, struct, sys, time
key = open(sys.argv[1], "rb").read().strip()
cmd = b'op = "install"; owner = "f6"; job = { id = 9; dtype = "int32"; slots = 4; elems = 64; outputs = ["multicast"]; contributors = ["10.82.0.1:48864", "10.82.0.2:48864"]; };'
ts, nonce = int(time.time() * 1000), struct.unpack("<Q", os.urandom(8))[0]
mac = hmac.new(key, b"%d %016x\n" % (ts, nonce) + cmd, hashlib.sha256).hexdigest()
msg = b"AUTH1 %d %016x %s\n" % (ts, nonce, mac.encode()) + cmd
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
out = []
for _ in range(2):  # the second copy is a captured command played back
    s.sendto(msg, ("10.82.0.254", 48863))
    out.append(s.recv(512).decode().strip())
print("|".join(out))
P
)
[ "$replay" = "ok|error: ctrl: not authenticated: replayed" ] || fail "signed, then replayed: $replay"
[ $(( $(authd) - auth0 )) = 3 ] || fail "ctrl_auth counted $(( $(authd) - auth0 )) of 3"
[ "$(ctl 'op = "remove"; owner = "f6"; id = 9;')" = ok ] || fail "remove of the Python-signed job"

# a flood of commands from a mgmt host is cut to its rate (ctrl_rate, not
# answered); the switch answers again once the flood is over
rate0=$(stats_get 'd["switches"]["tor0"]["ports"]["h0"]["drops"]["ctrl_rate"]')
in_host 0 $PY - <<'P'
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(300):
    s.sendto(b'op = "stats"; id = 1;', ("10.82.0.254", 48863))
P
cut=$(( $(stats_get 'd["switches"]["tor0"]["ports"]["h0"]["drops"]["ctrl_rate"]') - rate0 ))
((cut >= 100)) || fail "a flood of 300 commands: $cut cut by the rate limit"
answer=$(in_host 0 "$top/testbed/topo/swemu-ctl" --timeout 5 10.82.0.254 'op = "stats"; id = 1;' 2>&1 || true)
[ "$answer" = "error: ctrl: no job with this id" ] || fail "after the flood: $answer"
echo "ctrl: ${#cmds[@]} file directives refused alike and counted; jobs kept by their owners; auto ids; unsigned, wrongly signed and replayed commands refused; a flood of $cut commands cut; swemu still serves commands"
