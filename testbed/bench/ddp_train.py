# SPDX-License-Identifier: BSD-3-Clause
"""One rank of a data-parallel training run with PyTorch DDP whose gradient
buckets are averaged through libhcl (ring/hcl.py's DDP hook), or through
DDP's own Gloo all-reduce for comparison.  Launch it like any rank, e.g.

    testbed/topo/launch.sh NAME -- env GLOO_SOCKET_IFNAME=eth0 /usr/bin/python3 testbed/bench/ddp_train.py -a ps-ina

(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT as torchrun sets them; Gloo,
which DDP needs to set itself up, takes MASTER_PORT + 1).  The model is an
MLP of 32 inputs, two hidden layers of --width, 4 outputs; each rank trains
on its own seeded batches.

--backend hcl: no hook, but init_process_group("hcl") (ring/hcl_torch.py)
with the algorithm of -a: DDP as an unchanged script would use it.

--device cuda: the model, batches and gradients on GPU rank % (GPUs),
through Gloo's CUDA all-reduce or the "hcl" backend (which stages them
through pinned host memory); the reference stays on the CPU.

--check: after every step the model is compared with a one-process
reference that averages every rank's gradient itself, and at the end every
rank must hold bit-identical parameters; exit status 1 otherwise.
Rank 0 prints one line: steps, hook calls, time and CPU time (all its
threads) per step after --warmup steps, and with --check the largest
difference from the reference.
"""
import argparse
import copy
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ring"))
import hcl  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("-a", "--algo", default="ring", choices=["gloo"] + list(hcl.ALGOS),
                help="gloo: DDP's own all-reduce; else libhcl's algorithm (default ring)")
ap.add_argument("-s", "--steps", type=int, default=10)
ap.add_argument("-w", "--warmup", type=int, default=2, help="steps left out of the time (default 2)")
ap.add_argument("--width", type=int, default=512, help="hidden layer width (default 512: 1.1 MB of gradients)")
ap.add_argument("--bucket-mb", type=float, default=0.02, help="DDP bucket_cap_mb (its first bucket is 1 MiB)")
ap.add_argument("--check", action="store_true", help="compare with the one-process reference")
ap.add_argument("--backend", choices=["gloo", "hcl"], default="gloo",
                help="hcl: init_process_group(\"hcl\") (ring/hcl_torch.py) and DDP as it is, the algorithm "
                     "from -a, no hook; gloo (default): Gloo's group, with the hook unless -a gloo")
ap.add_argument("--timeout-ms", type=int, default=60000)
ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                help="where the model and its gradients live (default cpu)")
args = ap.parse_args()
if args.steps <= args.warmup:
    ap.error("--steps must be more than --warmup")
if args.device == "cuda":
    if not torch.cuda.is_available():
        ap.error("--device cuda: this torch sees no GPU")
    if args.algo != "gloo" and args.backend != "hcl":
        ap.error("--device cuda: the DDP hook takes CPU buckets; use --backend hcl or -a gloo")

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dev = torch.device(f"cuda:{rank % torch.cuda.device_count()}") if args.device == "cuda" else torch.device("cpu")
if args.backend == "hcl":
    if args.algo == "gloo":
        ap.error("--backend hcl needs a libhcl algorithm (-a ring, ps-ina, ...)")
    import hcl_torch  # noqa: F401,E402  registers "hcl"
    os.environ["HCL_ALGO"] = args.algo
    # torch's store on MASTER_PORT, libhcl's rendezvous on MASTER_PORT + 1 (hcl_torch's default)
    dist.init_process_group("hcl", init_method=f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
                            rank=rank, world_size=world, timeout=datetime.timedelta(milliseconds=args.timeout_ms))
else:
    dist.init_process_group("gloo",
                            init_method=f"tcp://{os.environ['MASTER_ADDR']}:{int(os.environ['MASTER_PORT']) + 1}",
                            rank=rank, world_size=world)
torch.manual_seed(0)
w = args.width
model = nn.Sequential(nn.Linear(32, w), nn.Tanh(), nn.Linear(w, w), nn.Tanh(), nn.Linear(w, 4))
reference = copy.deepcopy(model) if args.check else None
model.to(dev)
ddp = DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb,
                              device_ids=[dev.index] if dev.type == "cuda" else None)
comm, calls = None, 0
if args.algo != "gloo" and args.backend == "gloo":
    comm = hcl.Comm(algo=args.algo, timeout_ms=args.timeout_ms)

    def hook(state, bucket):
        global calls
        calls += 1
        return hcl.ddp_comm_hook(state, bucket)

    ddp.register_comm_hook(comm, hook)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
ref_opt = torch.optim.SGD(reference.parameters(), lr=0.05) if reference else None
loss_fn = nn.MSELoss()


def batch(r, step):
    g = torch.Generator().manual_seed(1000 * step + r)
    return torch.randn(16, 32, generator=g), torch.randn(16, 4, generator=g)


worst, timed, cpu, last_loss = 0.0, 0.0, 0.0, 0.0
for step in range(args.steps):
    x, y = (v.to(dev) for v in batch(rank, step))
    t0, c0 = time.perf_counter(), time.process_time()
    opt.zero_grad()
    loss = loss_fn(ddp(x), y)
    loss.backward()
    last_loss = loss.item()
    opt.step()
    if step >= args.warmup:
        timed += time.perf_counter() - t0
        cpu += time.process_time() - c0  # every thread of this rank, the library's included
    if not reference:
        continue
    ref_opt.zero_grad()
    for r in range(world):
        x, y = batch(r, step)
        (loss_fn(reference(x), y) / world).backward()
    ref_opt.step()
    diff = max((p.cpu() - q).abs().max().item() for p, q in zip(model.parameters(), reference.parameters()))
    worst = max(worst, diff)
    # float sums in another order differ by rounding (1e-8 here); a wrong
    # or missing average, or a bucket left out, moves weights by 1e-3 and more
    if diff > 2e-5:
        sys.exit(f"rank {rank}: step {step}: {args.algo} is {diff:.2e} off the reference")

if args.check:
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    every = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(every, flat)
    for r, other in enumerate(every):
        if not torch.equal(other, flat):
            sys.exit(f"rank {rank}: rank {r}'s parameters differ from this rank's")
    if comm and calls <= args.steps:  # DDP makes one bucket in the first step, more after it
        sys.exit(f"rank {rank}: the hook ran {calls} times in {args.steps} steps (more than one bucket expected)")
nparams = sum(p.numel() for p in model.parameters())
if rank == 0:
    line = (f"rank 0: {args.algo}{' (backend hcl)' if args.backend == 'hcl' else ''}, {world} ranks, "
            f"{nparams * 4 / 1e6:.2f} MB of gradients, {args.steps} steps, "
            f"{calls} hook calls, {timed / (args.steps - args.warmup) * 1e3:.1f} ms per step, "
            f"{cpu / (args.steps - args.warmup) * 1e3:.1f} ms of CPU per step")
    print(line + f", last loss {last_loss:.9g}" + (f", max |ddp - reference| = {worst:.1e}" if args.check else ""),
          flush=True)
if comm:
    comm.close()
dist.destroy_process_group()
