#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Captures a model's training-step profile for the trial runner (workload =
"FILE", docs/TRIAL.md "Training-step workloads"): the forward and backward
times, and the gradient buckets PyTorch DDP hands to the all-reduce, each
with its size and when it was ready during the backward.

DDP runs in one process (world size 1) with a communication hook that only
records, so nothing is sent: on a GPU the times come from CUDA events on
the current stream, on the CPU from the clock.  Median of the timed steps.

  capture_workload.py --model NAME [--batch N] [--steps 4] [--warmup 2] -o FILE.cfg
      NAME: a model of this script (mlp, cnn: small, for a CPU), or any
      torchvision model's name when torchvision is installed (resnet50, ...)

From your own training script:

  import capture_workload
  capture_workload.capture(model, make_batch, loss_fn, "my-model", "out.cfg")

make_batch() returns (inputs, targets) on the model's device; loss_fn(output,
targets) the loss.  The bucket sizes follow DDP's defaults (25 MB cap, 1 MiB
first bucket) unless bucket_cap_mb is given."""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

# the host library's Python side, for what differs between torch versions
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ring"))
import hcl  # noqa: E402


class Clock:
    """Marks on the GPU's current stream (CUDA events) or the CPU's clock."""

    def __init__(self, cuda):
        self.cuda = cuda

    def mark(self):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def ms(self, a, b):
        """Milliseconds from mark a to mark b (after the step's sync)."""
        return a.elapsed_time(b) if self.cuda else (b - a) * 1e3


def _profile_steps(ddp, make_batch, loss_fn, steps, warmup, clock, buckets):
    """Per timed step: forward ms, backward ms, and per bucket (bytes, ready ms)."""
    out = []
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    for k in range(warmup + steps):
        x, y = make_batch()
        opt.zero_grad(set_to_none=True)
        buckets.clear()
        t0 = clock.mark()
        loss = loss_fn(ddp(x), y)
        t1 = clock.mark()
        loss.backward()
        t2 = clock.mark()
        opt.step()
        if clock.cuda:
            torch.cuda.synchronize()
        if k >= warmup:
            out.append((clock.ms(t0, t1), clock.ms(t1, t2), [(b, clock.ms(t1, m)) for b, m in buckets]))
    return out


def capture(model, make_batch, loss_fn, name, path, steps=4, warmup=2, bucket_cap_mb=None, source=""):
    """Measures the model's DDP step and writes its profile to path; returns
    (fwd_ms, bwd_ms, [(bytes, ready_ms)])."""
    cuda = next(model.parameters()).is_cuda
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29531")
        dist.init_process_group("nccl" if cuda else "gloo", rank=0, world_size=1)
    kw = {"bucket_cap_mb": bucket_cap_mb} if bucket_cap_mb else {}
    ddp = nn.parallel.DistributedDataParallel(model, **kw)
    clock, buckets = Clock(cuda), []

    def hook(state, bucket):
        buf, result = hcl.grad_bucket(bucket)
        buckets.append((buf.numel() * buf.element_size(), clock.mark()))
        fut = torch.futures.Future()
        fut.set_result(result(buf))
        return fut

    ddp.register_comm_hook(None, hook)
    runs = _profile_steps(ddp, make_batch, loss_fn, steps, warmup, clock, buckets)
    fwd = statistics.median(r[0] for r in runs)
    bwd = statistics.median(r[1] for r in runs)
    sizes = [b for b, _ in runs[0][2]]
    if any([b for b, _ in r[2]] != sizes for r in runs):
        sys.exit("capture_workload: the buckets changed between steps; capture again with more warm-up steps")
    ready = [min(bwd, statistics.median(r[2][i][1] for r in runs)) for i in range(len(sizes))]
    for i in range(1, len(ready)):  # in DDP's order: a later bucket is never ready before an earlier one
        ready[i] = max(ready[i], ready[i - 1])
    write(path, name, fwd, bwd, list(zip(sizes, ready)), source or "%s, PyTorch %s, %d steps after %d" % (
        torch.cuda.get_device_name() if cuda else "CPU", torch.__version__, steps, warmup))
    return fwd, bwd, list(zip(sizes, ready))


def write(path, name, fwd, bwd, buckets, source):
    """A profile in the trial runner's format (configs/workloads/*.cfg)."""
    lines = ["# written by testbed/capture/capture_workload.py",
             "workload = {",
             "  model = \"%s\";" % name,
             "  source = \"%s\";" % source.replace("\"", "'"),
             "  fwd_ms = %.3f;" % fwd,
             "  bwd_ms = %.3f;" % bwd,
             "  buckets = ("]
    lines += ["    { bytes = %d; ready_ms = %.3f; }%s" % (b, r, "," if i + 1 < len(buckets) else "")
              for i, (b, r) in enumerate(buckets)]
    lines += ["  );", "};", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def builtin(name, batch, device):
    """A model of this script, or torchvision's by name, with a batch maker
    and its loss."""
    ce = nn.CrossEntropyLoss()
    if name == "mlp":  # about 9 M parameters: several buckets, quick on a CPU
        m = nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                          nn.Linear(2048, 1024), nn.ReLU(), nn.Linear(1024, 10))
        shape = (batch, 1024)
    elif name == "cnn":
        m = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(2048, 1024), nn.ReLU(),
                          nn.Linear(1024, 10))
        shape = (batch, 3, 32, 32)
    else:
        try:
            import torchvision
        except ImportError:
            sys.exit("capture_workload: model '%s' needs torchvision (the built-in ones: mlp, cnn)" % name)
        if not hasattr(torchvision.models, name):
            sys.exit("capture_workload: torchvision has no model '%s'" % name)
        m = getattr(torchvision.models, name)()
        shape = (batch, 3, 224, 224)
    m = m.to(device)

    def make_batch():
        return torch.randn(*shape, device=device), torch.randint(0, 10, (batch,), device=device)
    return m, make_batch, ce


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="mlp, cnn, or a torchvision model's name")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=4, help="timed steps (the median is written)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--bucket-cap-mb", type=float, default=None, help="DDP's bucket cap (default its 25)")
    ap.add_argument("--cpu", action="store_true", help="stay on the CPU even with a GPU")
    ap.add_argument("-o", "--output", required=True, help="the profile to write (.cfg)")
    a = ap.parse_args()
    if a.steps < 1 or a.warmup < 0 or a.batch < 1:
        ap.error("--steps >= 1, --warmup >= 0, --batch >= 1")
    device = "cuda" if torch.cuda.is_available() and not a.cpu else "cpu"
    torch.manual_seed(1)
    m, make_batch, loss = builtin(a.model, a.batch, device)
    fwd, bwd, buckets = capture(m, make_batch, loss, a.model, a.output, a.steps, a.warmup, a.bucket_cap_mb)
    print("capture_workload: %s on %s: forward %.3f ms, backward %.3f ms, %d buckets, %d bytes -> %s" % (
        a.model, device, fwd, bwd, len(buckets), sum(b for b, _ in buckets), a.output))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
