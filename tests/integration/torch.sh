#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# PyTorch training through swemu: 4 ranks of a DDP model whose gradient
# buckets go through libhcl's DDP hook (ring/hcl.py), with ring and with
# ps-ina (the ToR aggregates), 2% loss on every port; each rank checks its
# model against a one-process reference after every step and that all ranks
# end with the same parameters (testbed/bench/ddp_train.py --check).  Then the
# torch.distributed backend "hcl" (ring, ps-ina, agent-ring) against Gloo's
# losses.  Also the binding's own errors.  Skipped without python3-torch.
. "$(dirname "$0")/lib.sh"
$PY -c "import torch" 2>/dev/null || { echo "python3-torch is not installed (testbed/setup.sh --tests)"; exit 77; }
export HCL_LIBRARY=${HCL_LIBRARY:-$top/build/ring/libhcl.so}
sub=10.90.0
topo ittrch 4 --subnet $sub --loss 0.02
for algo in ring ps-ina; do
	before=$(stats_get 'd["switches"]["tor0"]["ina"]["accepted"]')
	out=$("$top/testbed/topo/launch.sh" ittrch -- env GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 \
		$PY "$top/testbed/bench/ddp_train.py" -a $algo -s 6 -w 1 --check 2>&1) || fail "$algo: $out"
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

# the torch.distributed backend (ring/hcl_torch.py), where this torch can
# have a Python process group (not torch 1.8, Ubuntu 22.04's): its parts
# below are skipped with a line that says why
if ! why=$(PYTHONPATH="$top/ring" $PY -c "import hcl_torch" 2>&1); then
	grep -q "lacks _create_work_from_future" <<<"$why" || fail "import hcl_torch: $why"
	echo "# the backend's parts skipped: $(tail -1 <<<"$why")"
	backend=false
else
	backend=true
fi

if $backend; then
	# init_process_group("hcl") and DDP as it is, against Gloo's run of the
	# same seeds: the same last loss (float sums in another order: 1e-6), each
	# run checked against the one-process reference; ps-ina and agent-ring
	# aggregated in the switch
	gloo=$("$top/testbed/topo/launch.sh" ittrch -- env GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 \
		$PY "$top/testbed/bench/ddp_train.py" -a gloo -s 6 -w 1 --check 2>&1) || fail "gloo: $gloo"
	gloo_loss=$(sed -n 's/^rank 0: .*, last loss \([^,]*\),.*/\1/p' <<<"$gloo")
	[ -n "$gloo_loss" ] || fail "gloo: no loss in: $gloo"
	for algo in ring ps-ina agent-ring; do
		before=$(stats_get 'd["switches"]["tor0"]["ina"]["accepted"]')
		out=$("$top/testbed/topo/launch.sh" ittrch -- env OMP_NUM_THREADS=1 PYTHONPATH="$top/ring" \
			$PY "$top/testbed/bench/ddp_train.py" --backend hcl -a $algo -s 6 -w 1 --check 2>&1) || fail "backend hcl, $algo: $out"
		loss=$(sed -n 's/^rank 0: .*, last loss \([^,]*\),.*/\1/p' <<<"$out")
		$PY -c "import sys; a, b = float('$loss'), float('$gloo_loss'); sys.exit(abs(a - b) > 1e-6 * max(1, abs(b)))" ||
			fail "backend hcl, $algo: last loss $loss, Gloo's $gloo_loss"
		accepted=$(($(stats_get 'd["switches"]["tor0"]["ina"]["accepted"]') - before))
		[ $algo = ring ] || ((accepted > 0)) || fail "backend hcl, $algo: the switch aggregated nothing"
		echo "torch: backend hcl, $algo: last loss $loss (Gloo $gloo_loss), $accepted contributions aggregated in tor0"
	done

	# float16 through the backend and the binding's async call (the DDP
	# hook's): widened, summed in binary32, rounded once; int64 broadcast and
	# all_gather bit-exact; MAX refused by name
	out=$("$top/testbed/topo/launch.sh" ittrch -- env OMP_NUM_THREADS=1 PYTHONPATH="$top/ring" $PY -c '
import os, torch, torch.distributed as dist, hcl_torch
r, w = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("hcl", rank=r, world_size=w)
base = torch.tensor([0.1, 1.5, 1000.0, -3.25], dtype=torch.float16)
t = base * (r + 1)
dist.all_reduce(t)
want = sum((base * (k + 1)).float() for k in range(w)).half()  # each input as the rank holds it
assert torch.equal(t, want), (t, want)
# the binding itself, as the DDP hook calls it (async, in place)
u = base * (r + 1)
dist.distributed_c10d._get_default_group().comm.allreduce_async(u).result()
assert torch.equal(u, want), (u, want)
b = torch.arange(4, dtype=torch.int64) * (r + 1) + (1 << 40)
dist.broadcast(b, src=2)
assert torch.equal(b, torch.arange(4, dtype=torch.int64) * 3 + (1 << 40)), b
outs = [torch.empty(2, dtype=torch.int64) for _ in range(w)]
dist.all_gather(outs, torch.tensor([r, -r - (1 << 33)]))
assert [o.tolist() for o in outs] == [[k, -k - (1 << 33)] for k in range(w)], outs
try:
    dist.all_reduce(torch.ones(2), op=dist.ReduceOp.MAX)
    raise SystemExit("MAX accepted")
except NotImplementedError as e:
    assert "MAX" in str(e), e
if r == 0:
    print("fp16 %s, int64 broadcast and all_gather exact, MAX refused" % t.tolist())
dist.destroy_process_group()
	' 2>&1) || fail "float16 / int64 / MAX through the backend: $out"
	echo "torch: $out"

	# the GPU check's launcher and comparison, on CPU tensors (loopback, no
	# swemu): the backend's ring against Gloo, last losses within 1e-6
	out=$(bash "$top/testbed/bench/gpu-check.sh" --device cpu 2>&1) || fail "gpu-check --device cpu: $out"
	echo "torch: $(tail -1 <<<"$out")"
fi

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
