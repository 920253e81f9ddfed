#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# swemu-trial-cfg on broken trial files: each must fail with exit 2 and
# "file:LINE: reason" naming the line of the mistake; the default trial
# must pass.  No root needed.
set -euo pipefail
checker=${TRIAL_CFG:?}
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$checker" "$top/configs/trial.cfg" >/dev/null || { echo "FAIL: the default trial is refused"; exit 1; }
for f in "$top"/configs/trial-*.cfg; do # every shipped trial file (trial-sim-1024's uplinks are 400G)
	(cd "$top" && "$checker" "$f" >/dev/null) || { echo "FAIL: $f is refused"; exit 1; }
done
# ps_shards: past the library's old 16 up to the hosts; 0 gives ps-ina up
# to 4 per rack and ps 16 (trial-sim-1024: 32 racks of 32)
printf 'trial = {\n  racks = 8; hosts_per_rack = 8; engine = "sim";\n  ps_shards = 64;\n};\n' > "$tmp/shards.cfg"
grep -qx 'T_PSINA_SHARDS=64' <<<"$("$checker" "$tmp/shards.cfg")" || { echo "FAIL: ps_shards = 64 of 64 hosts"; exit 1; }
vars=$(cd "$top" && "$checker" configs/trial-sim-1024.cfg)
grep -qx 'T_PS_SHARDS=16' <<<"$vars" && grep -qx 'T_PSINA_SHARDS=128' <<<"$vars" ||
	{ echo "FAIL: trial-sim-1024's default shards: $(grep SHARDS <<<"$vars")"; exit 1; }
n=0
# expect LINE PATTERN, then the file on stdin
expect() {
	local line=$1 pat=$2 f=$tmp/t$n.cfg err rc=0
	n=$((n + 1))
	cat > "$f"
	err=$("$checker" "$f" 2>&1 >/dev/null) || rc=$?
	[ $rc = 2 ] || { echo "FAIL: exit $rc (want 2) for: $(cat "$f")"; exit 1; }
	grep -qE "^$f:$line: .*$pat" <<<"$err" || { echo "FAIL: want line $line /$pat/, got: $err"; exit 1; }
}
expect 2 'syntax error' <<'E'
trial = {
  racks = = 2;
  hosts_per_rack = 4;
};
E
expect 3 "unknown setting 'rackz'" <<'E'
trial = {
  racks = 2;
  rackz = 3;
};
E
expect 3 "'repeats' must be 1..20, not 0" <<'E'
trial = {
  racks = 2;
  repeats = 0;
};
E
expect 2 "'racks' must be 1..8, not 9" <<'E'
trial = {
  racks = 9;
};
E
expect 4 'rack 2 does not exist' <<'E'
trial = {
  racks = 2;
  ina_racks = [0,
               2];
};
E
expect 2 'algorithm "ringg"' <<'E'
trial = {
  algorithms = ["ring", "ringg"];
};
E
expect 3 'listed twice' <<'E'
trial = {
  algorithms = ["ring",
                "ring"];
};
E
expect 2 'host_rate = "fast"' <<'E'
trial = {
  host_rate = "fast";
};
E
expect 3 'not both' <<'E'
trial = {
  uplink_rate = "100M";
  oversubscription = 2.0;
};
E
expect 3 'slowest link is 1M' <<'E'
trial = {
  host_rate = "1M";
  oversubscription = 64.0;
  hosts_per_rack = 2;
};
E
expect 2 'size "1G"' <<'E'
trial = {
  sizes = ["1G"];
};
E
expect 3 'ps_shards = 5: at most one per host' <<'E'
trial = {
  racks = 1; hosts_per_rack = 4;
  ps_shards = 5;
};
E
expect 3 'ps_shards' <<'E'
trial = {
  racks = 32; hosts_per_rack = 32; engine = "sim";
  ps_shards = 1025;
};
E
expect 2 'jitter' <<'E'
trial = {
  jitter = "gauss:3";
};
E
expect 3 'straggler' <<'E'
trial = {
  racks = 1; hosts_per_rack = 4;
  straggler = "4:2";
};
E
expect 2 "'pace' must be true or false" <<'E'
trial = {
  pace = 1;
};
E
expect 2 'only letters' <<'E'
trial = {
  name = "x; rm -rf /";
};
E
expect 3 'pmd = "dpdk"' <<'E'
trial = {
  racks = 2;
  pmd = "dpdk";
};
E
expect 3 'ina_wire = "fp16"' <<'E'
trial = {
  dtype = "bf16";
  ina_wire = "fp16";
};
E
expect 2 "'ina_elems' must be 1..2048, not 4096" <<'E'
trial = {
  ina_elems = 4096;
};
E
expect 3 "'ina_slots' must be an integer" <<'E'
trial = {
  ina_elems = 1024;
  ina_slots = "8";
};
E
expect 3 'ina_elems = 1024: af_xdp ports carry 3000-byte frames' <<'E'
trial = {
  pmd = "af_xdp";
  ina_elems = 1024;
};
E
expect 2 'dtype = "fp64"' <<'E'
trial = {
  dtype = "fp64";
};
E
expect 2 'host_buffer = "big"' <<'E'
trial = {
  host_buffer = "big";
};
E
expect 3 'sweep_order needs ina_racks = "sweep"' <<'E'
trial = {
  ina_racks = [1];
  sweep_order = [1, 0];
};
E
expect 4 'sweep_order: rack 1 is listed twice' <<'E'
trial = {
  ina_racks = "sweep";
  sweep_order = [1,
                 1];
};
E
expect 3 'sweep_order: want a list of all 2 racks' <<'E'
trial = {
  ina_racks = "sweep";
  sweep_order = [1];
};
E
expect 3 'want "all", "none", "sweep" or a list' <<'E'
trial = {
  racks = 2;
  ina_racks = "some";
};
E
expect 3 'costs: missing plain_tor' <<'E'
trial = {
  ina_racks = "sweep";
  costs = { ina_tor = 30000;
            host = 20000; };
};
E
expect 4 "unknown setting 'switch'" <<'E'
trial = {
  costs = { ina_tor = 30000; plain_tor = 1;
            host = 20000;
            switch = 5; };
};
E
expect 3 "'host' must be" <<'E'
trial = {
  racks = 2;
  costs = { ina_tor = 30000; plain_tor = 10000; host = -5; };
};
E
expect 3 "'delay_us' must be 0..1000000" <<'E'
trial = {
  racks = 2;
  delay_us = 2000000;
};
E
expect 3 'burst_loss: missing loss_bad' <<'E'
trial = {
  racks = 2;
  burst_loss = { p_good_bad = 0.01; p_bad_good = 0.3; };
};
E
expect 2 'burst_loss: p_bad_good must be > 0' <<'E'
trial = {
  burst_loss = { p_good_bad = 0.01; p_bad_good = 0.0; loss_bad = 0.5; };
};
E
expect 3 'rack_host_rates: want one rate per rack \(2\)' <<'E'
trial = {
  racks = 2;
  rack_host_rates = ["200M"];
};
E
expect 4 'rack_host_rates: entry 1 is not a rate' <<'E'
trial = {
  racks = 2;
  rack_host_rates = ["200M",
                     "fast"];
};
E
expect 3 'dilation = "fast": want a factor >= 1 or "auto"' <<'E'
trial = {
  host_rate = "100G";
  dilation = "fast";
};
E
expect 2 "'dilation' must be" <<'E'
trial = {
  dilation = 0.5;
};
E
expect 4 'cpu_share needs dilation = "auto"' <<'E'
trial = {
  host_rate = "100G";
  dilation = 500;
  cpu_share = 0.5;
};
E
expect 4 "'cpu_share' must be" <<'E'
trial = {
  host_rate = "100G";
  dilation = "auto";
  cpu_share = 1.5;
};
E
expect 3 'at dilation 1000, host_rate 100M would run at 100000 bit/s' <<'E'
trial = {
  host_rate = "100M";
  dilation = 1000;
};
E
expect 2 'at dilation 500, a delay' <<'E'
trial = {
  dilation = 500; host_rate = "100G";
  delay_us = 100000;
};
E
expect 3 'hosts_per_rack: want one host count per rack \(3\)' <<'E'
trial = {
  racks = 3;
  hosts_per_rack = [4, 2];
};
E
expect 4 'hosts_per_rack: entry 1 is not a host count from 1 to 16' <<'E'
trial = {
  racks = 2;
  hosts_per_rack = [4,
                    0];
};
E
expect 3 'racks x hosts_per_rack = 18 hosts: must be from 2 to 16' <<'E'
trial = {
  racks = 2;
  hosts_per_rack = [16, 2];
};
E
expect 4 'capture: "tor1.h0" is not a switch or port of this trial' <<'E'
trial = {
  racks = 2;
  hosts_per_rack = [3, 2];
  capture = ["tor0", "tor1.h0"];
};
E
expect 3 "'processes' must be true or false" <<'E'
trial = {
  racks = 2;
  processes = "yes";
};
E
# tor_partitions: one swemu on af_xdp, no capture, 32 devices at most
expect 3 'tor_partitions = 2: needs one swemu, not processes = true' <<'E'
trial = {
  racks = 2; hosts_per_rack = 2; pmd = "af_xdp"; processes = true;
  tor_partitions = 2;
};
E
expect 3 'tor_partitions = 2: needs pmd = "af_xdp"' <<'E'
trial = {
  racks = 1; hosts_per_rack = 4;
  tor_partitions = 2;
};
E
expect 3 'tor_partitions = 2: a capture needs the ToR on one lcore' <<'E'
trial = {
  racks = 1; hosts_per_rack = 4; pmd = "af_xdp"; capture = ["tor0.h1"];
  tor_partitions = 2;
};
E
expect 3 'tor_partitions = 4: 16 hosts make 64 DPDK devices' <<'E'
trial = {
  racks = 1; hosts_per_rack = 16; pmd = "af_xdp";
  tor_partitions = 4;
};
E
expect 3 "'tor_partitions' must be 1..4" <<'E'
trial = {
  racks = 1; hosts_per_rack = 4; pmd = "af_xdp";
  tor_partitions = 5;
};
E
expect 3 'tor_partitions = 2: the simulator' <<'E'
trial = {
  racks = 1; hosts_per_rack = 4; engine = "sim";
  tor_partitions = 2;
};
E
printf 'trial = { racks = 2; hosts_per_rack = 2; pmd = "af_xdp"; tor_partitions = 3; };\n' > "$tmp/parts.cfg"
grep -qx 'T_TOR_PARTITIONS=3' <<<"$("$checker" "$tmp/parts.cfg")" || { echo "FAIL: tor_partitions = 3 is refused or lost"; exit 1; }
expect 3 'capture_snaplen needs capture' <<'E'
trial = {
  racks = 2;
  capture_snaplen = 256;
};
E
expect 1 'needs a group' <<'E'
racks = 2;
E
# engine = "sim": the simulator's limits, and the settings it does not model
expect 2 'engine = "ns3": want "emulator" or "sim"' <<'E'
trial = {
  engine = "ns3";
};
E
expect 3 "'racks' must be 1..128, not 129" <<'E'
trial = {
  engine = "sim";
  racks = 129;
};
E
expect 4 'racks x hosts_per_rack = 1040 hosts: must be from 2 to 1024 in the simulator' <<'E'
trial = {
  engine = "sim";
  racks = 65;
  hosts_per_rack = 16;
};
E
expect 3 'jitter_us = 20: the simulator .* does not model it' <<'E'
trial = {
  engine = "sim";
  jitter_us = 20;
};
E
expect 3 'dilation: the simulator .* does not model it' <<'E'
trial = {
  engine = "sim";
  dilation = "auto";
};
E
expect 3 'dtype = "bf16": the simulator' <<'E'
trial = {
  engine = "sim";
  dtype = "bf16";
};
E
expect 3 "'ina_cc' must be true or false" <<'E'
trial = {
  engine = "sim";
  ina_cc = 1;
};
E
expect 3 'burst_loss: the simulator' <<'E'
trial = {
  engine = "sim";
  burst_loss = { p_good_bad = 0.01; p_bad_good = 0.3; loss_bad = 0.5; };
};
E
# training-step workloads: a profile that is not there, settings the
# profile replaces, a profile's own mistake (its file and line after the
# trial file's); every shipped profile is taken
export SWEMU_WORKLOADS=$top/configs/workloads
expect 2 'workload = "nope": .*/configs/workloads/nope.cfg:0: cannot read the file' <<'E'
trial = {
  workload = "nope";
};
E
expect 3 "compute_ms and workload: .*remove compute_ms" <<'E'
trial = {
  workload = "resnet50";
  compute_ms = 5;
};
E
expect 3 "sizes and workload" <<'E'
trial = {
  workload = "bert-base";
  sizes = ["1M"];
};
E
expect 4 'dtype = "bf16" and workload: .*fp32' <<'E'
trial = {
  workload = "resnet50";
  racks = 2;
  dtype = "bf16";
};
E
expect 2 'workload = "a b": a name or a path' <<'E'
trial = {
  workload = "a b";
};
E
printf 'workload = { model = "x"; fwd_ms = 1; bwd_ms = 2;\n  buckets = ( { bytes = 6; ready_ms = 1; } ); };\n' > "$tmp/bad-profile.cfg"
expect 2 "workload = \"bad-profile.cfg\": $tmp/bad-profile.cfg:2: bytes = 6: fp32 gradients, a multiple of 4" <<'E'
trial = {
  workload = "bad-profile.cfg";
};
E
for w in "$top"/configs/workloads/*.cfg; do
	name=$(basename "$w" .cfg)
	printf 'trial = { workload = "%s"; };\n' "$name" > "$tmp/w.cfg"
	vars=$("$checker" "$tmp/w.cfg") || { echo "FAIL: workload $name refused"; exit 1; }
	grep -qx "T_WORKLOAD_NAME=$name" <<<"$vars" && grep -qx "T_SIZES='$name'" <<<"$vars" ||
		{ echo "FAIL: workload $name reads as: $(grep WORKLOAD <<<"$vars")"; exit 1; }
done
# ... and what only it takes: 1024 hosts in 32 racks, every rack INA, the
# default trial's settings otherwise (pmd, dilation = 1 and processes =
# false are the testbed's defaults and pass)
big=$tmp/big.cfg
sed -e 's/^  engine = "emulator";/  engine = "sim";/' -e 's/^  racks = 2;/  racks = 32;/' -e 's/^  hosts_per_rack = 4;/  hosts_per_rack = 32;/' \
	-e 's/^  sweep_order = \[1, 0\];//' "$top/configs/trial.cfg" > "$big"
sed -i 's/^  ina_slots = 8;/  ina_slots = 8; ina_cc = true;/' "$big"
vars=$("$checker" "$big") || { echo "FAIL: a 1024-host simulated trial is refused"; exit 1; }
grep -qx 'T_INA_CC=1' <<<"$vars" || { echo "FAIL: ina_cc = true reads as: $(grep T_INA_CC <<<"$vars")"; exit 1; }
grep -qx 'T_ENGINE=sim' <<<"$vars" && grep -qx 'T_WORLD=1024' <<<"$vars" &&
	grep -qx "T_INA_RACKS=$(seq -s, 0 31)" <<<"$vars" ||
	{ echo "FAIL: the 1024-host trial reads as: $(grep -E 'T_(ENGINE|WORLD|INA_RACKS)=' <<<"$vars")"; exit 1; }
echo "trial files: the default passes; $n broken files each name their line"
