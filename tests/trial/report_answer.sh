#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The trial report's answer, from made-up run directories (no network
# needed).  It credits INA only where it happened: a ps-ina run whose job
# was lost mid-run (its calls finished on the software ring) or whose
# switches accepted nothing is named and left out; a rack its agent sent
# to the software PS at setup is named.  With repeats, the speed-up comes
# with its 95% confidence interval, "no difference measured" when that
# includes 1, and the run-to-run spread is measured, not a fixed sentence.
# A sweep of deployments gives the curve of speed-up against racks
# upgraded and, with prices, each deployment's cost.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/swemu-report.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# run DIR ALGO TIME_US ACCEPTED [RANK_LOG_LINE] [PERF_EXTRA_LINE]
run() {
	local d=$1/${RUNS:-runs}/$2-256K${REP:-}
	mkdir -p "$d"
	echo 0 > "$d/rc"
	printf '# ina-allreduce-perf\n %s %s float sum -1 N/A N/A N/A N/A %s 0.2 0.3 0\n%s\n' 262144 65536 "$3" "${6:-}" > "$d/perf.out"
	printf '{"switches": {"tor1": {"ports": {"h2": {"rx_bytes": 0, "tx_bytes": 0, "rx_packets": 0, "tx_packets": 0, "drops": {}}}, "ina": {"accepted": %s, "drops": {}}}}}\n' 0 > "$d/stats-before.json"
	printf '{"switches": {"tor1": {"ports": {"h2": {"rx_bytes": 1000, "tx_bytes": 1000, "rx_packets": 1, "tx_packets": 1, "drops": {}}}, "ina": {"accepted": %s, "drops": {}}}}}\n' "$4" > "$d/stats-after.json"
	[ -z "${5:-}" ] || echo "$5" > "$d/rank-2.log"
}

trial() { # DIR ALGOS [REPEATS]
	mkdir -p "$1"
	cat > "$1/trial.env" <<ENV
T_REPEATS=${3:-1}
T_NAME='t'
T_ALGOS='$2'
T_SIZES='256K'
T_WARMUP=1
T_ITERATIONS=3
T_RACKS=2
T_HOSTS=2
T_HOST_BPS=200000000
T_UPLINK_BPS=200000000
T_SIZE_BYTES='262144'
T_COMPUTE_MS=0
T_INA_RACKS=1
T_HOST_RATE=200M
T_UPLINK_RATE=200M
T_UPLINK_BUFFER=
T_HOST_BUFFER=
T_LOSS=0
T_DTYPE=float
T_JITTER=
T_STRAGGLER=
T_PACE=0
T_SEED=1
T_PMD=af_packet
T_SWEEP=${SWEEP:-0}
T_SWEEP_ORDER='1 0'
ENV
	[ -z "${COSTS:-}" ] || printf '%s\n' $COSTS >> "$1/trial.env"
}

report() { /usr/bin/python3 "$top/testbed/trial/trial_report.py" "$1" >/dev/null && cat "$1/report.md"; }

# A: ps-ina lost its job mid-run (rank 0's count, rank 2's line); agent-ring aggregated
trial "$tmp/a" "ring ps-ina agent-ring"
run "$tmp/a" ring 2000 0
run "$tmp/a" ps-ina 1000 100 "hcl: rank 2: ps-ina: switch 10.93.0.253:48864 no longer has job 5 (it answered NACK; 3 of 32 slices done); this call and the later ones run on the software ring" "# INA lost mid-job at rank 0: 4 calls finished on the software ring"
run "$tmp/a" agent-ring 1500 50
md=$(report "$tmp/a")
grep -q "^- 256K: ps-ina is not credited with INA: its switch job was lost mid-run" <<<"$md" || fail "A: lost job not named: $md"
grep -q "^- 256K: with INA, agent-ring takes 1.50 ms per all-reduce; without, ring takes 2.00 ms: \*\*1.33× faster with INA\*\*" <<<"$md" ||
	fail "A: the answer should be agent-ring's: $md"

# B: ps-ina aggregated, but rack 1's agent sent it to the software PS at setup
trial "$tmp/b" "ring ps-ina"
run "$tmp/b" ring 2000 0
run "$tmp/b" ps-ina 1000 100 "hcl: rack 1: ps-ina: installing job 7: switch 10.93.0.253: error: ctrl: not enough free slots; the rack uses the software PS on rank 0"
md=$(report "$tmp/b")
grep -q "^- 256K: in the ps-ina run, rack 1 sent to the software PS at setup" <<<"$md" || fail "B: soft rack not named: $md"
grep -q "^- 256K: with INA, ps-ina takes 1.00 ms" <<<"$md" || fail "B: ps-ina should be the answer: $md"

# C: the switches accepted nothing: no INA answer at all
trial "$tmp/c" "ring ps-ina"
run "$tmp/c" ring 2000 0
run "$tmp/c" ps-ina 1000 0
md=$(report "$tmp/c")
grep -q "^- 256K: ps-ina is not credited with INA: the switches accepted no contribution during the run" <<<"$md" ||
	fail "C: nothing accepted, not named: $md"
grep -q "^- 256K: no answer: it needs a run of ps-ina or agent-ring" <<<"$md" || fail "C: an answer without INA: $md"
grep -q "one run: no confidence interval" <<<"$(cat "$tmp/b/report.md")" || fail "B: one run without its caveat"

# D: three repeats, the same 2x each time: a tight interval, not 1
trial "$tmp/d" "ring ps-ina" 3
for k in 1 2 3; do
	t=$((1900 + 100 * k))
	REP=$( ((k > 1)) && echo "@$k") run "$tmp/d" ring $t 0
	REP=$( ((k > 1)) && echo "@$k") run "$tmp/d" ps-ina $((t / 2)) 100
done
md=$(report "$tmp/d")
grep -q "^- 256K: with INA, ps-ina takes 1.05 ms per all-reduce; without, ring takes 2.10 ms: \*\*2.00× faster with INA\*\* (speed-up 95% CI 2.00–2.00 over 3 repeats)" <<<"$md" ||
	fail "D: want 2.00x with its interval: $md"
grep -q "^Run-to-run spread measured here: .*±4.8% at most" <<<"$md" || fail "D: spread not measured: $md"

# E: ratios 1.05, 0.75, 1.19 over three repeats: no difference measured
trial "$tmp/e" "ring ps-ina" 3
run "$tmp/e" ring 2000 0
run "$tmp/e" ps-ina 1900 100
REP=@2 run "$tmp/e" ring 1500 0
REP=@2 run "$tmp/e" ps-ina 2000 100
REP=@3 run "$tmp/e" ring 2500 0
REP=@3 run "$tmp/e" ps-ina 2100 100
md=$(report "$tmp/e")
grep -q "^- 256K: .*: \*\*no difference measured\*\*: 1.00× (95% CI .* over 3 repeats)" <<<"$md" ||
	fail "E: want no difference: $md"
# F: a sweep of deployments with costs: no INA rack, rack 1, both
SWEEP=1 COSTS="T_COST_INA_TOR=30000 T_COST_PLAIN_TOR=12000 T_COST_HOST=25000 T_COST_INA_POWER=0" \
	trial "$tmp/f" "ring ps-ina"
run "$tmp/f" ring 2000 0
run "$tmp/f" ps-ina 1000 100
RUNS=sweep/k0 run "$tmp/f" ps-ina 2200 0 # the software PS alone: nothing to credit
RUNS=sweep/k1 run "$tmp/f" ps-ina 1600 100
md=$(report "$tmp/f")
grep -q "^## Deployment curve" <<<"$md" || fail "F: no deployment curve: $md"
grep -q "^| 0 | none | 0.91× (one run), 2.20 ms | 124000 (+0.0%) |" <<<"$md" || fail "F: no-INA row: $md"
grep -q "^| 1 | 1 | 1.25× (one run), 1.60 ms | 142000 (+14.5%) |" <<<"$md" || fail "F: one-rack row: $md"
grep -q "^| 2 | 1,0 | 2.00× (one run), 1.00 ms | 160000 (+29.0%) |" <<<"$md" || fail "F: full row: $md"
grep -q "^- 256K: upgrading 1 of 2 racks gives 1.25× per all-reduce (ps-ina, against ring) for 14.5% more hardware cost: 1.092× per unit of cost." <<<"$md" ||
	fail "F: no cost sentence: $md"
# a rack upgraded whose switch accepted nothing is not a point of the curve
RUNS=sweep/k1 run "$tmp/f" ps-ina 1600 0
grep -q "^| 1 | 1 | – | 142000" <<<"$(report "$tmp/f")" || fail "F: an uncredited deployment was drawn"

# G: the hosts' side: two ranks' traces, the software aggregators'
# refusals summed over ranks and given by reason, the most first
ps_traces() { # DIR HOST0 HOST1: two ranks' traces of ps at 256K, each with its host counters (JSON)
	local d=$1/runs/ps-256K/trace r c host
	mkdir -p "$d"
	for r in 0 1; do
		for c in 1 2 3 4; do
			echo "{\"rank\": $r, \"call\": $c, \"bytes\": 262144, \"compute_us\": 0, \"delay_us\": 0, \"wait_us\": 0, \"comm_us\": 1500, \"complete\": true, \"paced\": 0}"
		done > "$d/rank$r.jsonl"
		host=$2
		((r == 0)) || host=$3
		echo "{\"rank\": $r, \"host\": $host}" >> "$d/rank$r.jsonl"
	done
}
trial "$tmp/g" "ring ps"
run "$tmp/g" ring 2000 0
run "$tmp/g" ps 1500 0
ps_traces "$tmp/g" '{"agg_dropped": 2, "ina_resent": 7, "agg_drops": {"duplicate": 1, "stale": 1}}' \
	'{"agg_dropped": 3, "ina_resent": 7, "agg_drops": {"duplicate": 2, "stale": 1}}'
grep -q "^| ps | 256K | 5 (duplicate 3, stale 2) | 14 | 0 | 0 | 0 |" <<<"$(report "$tmp/g")" ||
	fail "G: the aggregators' refusals by reason: $(report "$tmp/g" | grep -A4 "hosts' side")"
# H: INA re-sends past a tenth of the slices sent, ina_cc off and no
# loss configured: the report names the run and the remedy; not at a
# tenth or below, not with ina_cc on, not with loss configured
hosts() { ps_traces "$1" "{\"ina_sent\": $2, \"ina_resent\": $3}" "{\"ina_sent\": $2, \"ina_resent\": $3}"; } # DIR SENT RESENT
trial "$tmp/h" "ring ps"
run "$tmp/h" ring 2000 0
run "$tmp/h" ps 1500 0
hosts "$tmp/h" 100 11
grep -q "^- ps 256K: 22 INA re-sends for 200 slices sent (11%): its queues overflowed.  \`ina_cc = true\`" <<<"$(report "$tmp/h")" ||
	fail "H: no hint at 11% re-sent: $(report "$tmp/h" | grep -A3 "re-sends")"
hosts "$tmp/h" 100 10
! grep -q "INA re-sends for" <<<"$(report "$tmp/h")" || fail "H: a hint at 10% re-sent"
hosts "$tmp/h" 100 50
echo "T_INA_CC=1" >> "$tmp/h/trial.env"
! grep -q "INA re-sends for" <<<"$(report "$tmp/h")" || fail "H: a hint with ina_cc on"
printf 'T_INA_CC=0\nT_LOSS=0.01\n' >> "$tmp/h/trial.env" # the re-sends are the links' losses
! grep -q "INA re-sends for" <<<"$(report "$tmp/h")" || fail "H: a hint with loss configured"
# I: the hypervisor took CPU (steal): the most and the median said, every
# run over the limit named (perf's own share, else the runner's ticks
# around the run: busy, all, stolen before, then after), repeats and the
# sweep included; 5% is not over it, and no steal at all says nothing
steal() { echo "# the hypervisor's share of the cpu (steal, all cores) in the timed calls: $1"; }
SWEEP=1 trial "$tmp/i" "ring ps-ina" 2
run "$tmp/i" ring 2000 0 "" "$(steal 0.020)"
REP=@2 run "$tmp/i" ring 2000 0 "" "$(steal 0.050)"
run "$tmp/i" ps-ina 1000 100 "" "$(steal 0.010)"
REP=@2 run "$tmp/i" ps-ina 1000 100
echo "100 1000 10 400 2000 260" > "$tmp/i/runs/ps-ina-256K@2/cpu" # 250 of 1000 ticks stolen
RUNS=sweep/k0 run "$tmp/i" ps-ina 2200 0 "" "$(steal 0.120)"
RUNS=sweep/k0 REP=@2 run "$tmp/i" ps-ina 2200 0 "" "$(steal 0.000)"
RUNS=sweep/k1 run "$tmp/i" ps-ina 1600 100 "" "$(steal 0.000)"
RUNS=sweep/k1 REP=@2 run "$tmp/i" ps-ina 1600 100 "" "$(steal 0.030)"
md=$(report "$tmp/i")
grep -q "^The hypervisor took up to 25% of the machine's CPU during a run (ps-ina at 256K, repeat 2; steal: .*), 2.5% in the median of 8 runs\.$" <<<"$md" ||
	fail "I: the most and the median stolen: $(grep -i hypervisor <<<"$md")"
grep -q "^\*\*Disturbed by the hypervisor\*\* in 2 of 8 runs (over 5% of the CPU stolen; the most: ps-ina at 256K, repeat 2 25%; ps-ina at 256K with 0 INA racks, repeat 1 12%)" <<<"$md" ||
	fail "I: the disturbed runs: $(grep -i disturbed <<<"$md")"
md=$(report "$tmp/d") # no steal line in perf.out nor cpu file: nothing said
! grep -qi "hypervisor" <<<"$md" || fail "D: steal said where none was measured"
echo "report_answer: a lost job, an empty switch and a rack on the software PS named; INA credited only where it ran; intervals and spread from the repeats; a sweep's curve and costs; the aggregators' refusals by reason; a hint where INA re-sent much with ina_cc off; the hypervisor's steal measured and the runs it disturbed named"
