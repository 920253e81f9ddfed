#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# PyTorch training through swemu: 4 ranks of a DDP model whose gradient
# buckets go through libhcl's DDP hook (ring/hcl.py), with ring and with
# ps-ina (the ToR aggregates), 2% loss on every port; each rank checks its
# model against a one-process reference after every step and that all ranks
# end with the same parameters (testbed/ddp_train.py --check).  Also the
# binding's own errors.  Skipped without python3-torch.
. "$(dirname "$0")/lib.sh"
$PY -c "import torch" 2>/dev/null || { echo "python3-torch is not installed (testbed/setup.sh --tests)"; exit 77; }
export HCL_LIBRARY=${HCL_LIBRARY:-$top/build/ring/libhcl.so}
sub=10.90.0
topo ittrch 4 --subnet $sub --loss 0.02
for algo in ring ps-ina; do
	before=$(stats_get 'd["switches"]["tor0"]["ina"]["accepted"]')
	out=$("$top/testbed/launch.sh" ittrch -- env GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 \
		$PY "$top/testbed/ddp_train.py" -a $algo -s 6 -w 1 --check 2>&1) || fail "$algo: $out"
	grep -qE "^rank 0: $algo, 4 ranks, .* 6 steps, [0-9]+ hook calls, .* max \|ddp - reference\|" <<<"$out" ||
		fail "$algo: $out"
	accepted=$(($(stats_get 'd["switches"]["tor0"]["ina"]["accepted"]') - before))
	if [ $algo = ps-ina ]; then
		((accepted > 0)) || fail "ps-ina: the switch aggregated nothing"
	else
		((accepted == 0)) || fail "ring: the switch aggregated $accepted packets"
	fi
	echo "torch: $algo: $(grep '^rank 0' <<<"$out"), $accepted contributions aggregated in tor0"
done

# the binding's errors: bad arguments before any rendezvous, a missing
# peer within the deadline, the library's message in the exception
out=$(in_host 0 env RANK=0 WORLD_SIZE=2 MASTER_ADDR=$sub.1 MASTER_PORT=29600 PYTHONPATH="$top/ring" $PY -c '
import array, hcl
for bad in (lambda: hcl.Comm(algo="allgather"), lambda: hcl.Comm(ina_float="fp8")):
    try:
        bad(); print("accepted")
    except ValueError as e:
        print(e)
try:
    hcl.Comm(timeout_ms=300)
except hcl.HclError as e:
    print(e, e.errno)
try:  # the field reaches the library: 3 shards for a world of 2 is refused there
    hcl.Comm(algo="ps", ps_shards=3, timeout_ms=300)
except hcl.HclError as e:
    print(e)
') || fail "binding errors: $out"
grep -q "algorithm 'allgather' is not one of ring" <<<"$out" || fail "bad algorithm: $out"
grep -q "ina_float 'fp8' is not one of" <<<"$out" || fail "bad ina_float: $out"
grep -qE "rendezvous: 1 of 1 ranks did not arrive in time.* -[0-9]+$" <<<"$out" || fail "missing peer: $out"
grep -q "PS shards 3 (cfg.ps_shards, HCL_PS_SHARDS): want 1 to 2" <<<"$out" || fail "ps_shards: $out"
echo "torch: binding errors named (bad algorithm, bad float mode, a missing rank within the deadline, too many PS shards)"
