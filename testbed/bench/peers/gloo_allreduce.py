#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Gloo all-reduce bandwidth in the form of nccl-tests, as ina-allreduce-perf
prints it, so the two tables compare line by line.

Launched like a training job (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT;
GLOO_SOCKET_IFNAME for the data interface), e.g. by testbed/topo/launch.sh.
"""
import argparse
import math
import resource
import sys
import time

import torch
import torch.distributed as dist


def cpu_seconds():
    """User + system time of this rank so far, every thread."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-b", type=int, default=1 << 20, help="smallest message, bytes")
    ap.add_argument("-e", type=int, default=64 << 20, help="largest message, bytes")
    ap.add_argument("-f", type=float, default=2)
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("-w", type=int, default=5)
    a = ap.parse_args()
    dist.init_process_group("gloo", init_method="env://")
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"# gloo all-reduce (torch {torch.__version__}): {n} ranks, {a.n} iterations, {a.w} warm-up")
        print("#%11s %12s %8s %6s %10s %8s %8s %7s" % ("size", "count", "type", "redop", "time", "algbw",
                                                     "busbw", "#wrong"))
    nbytes, total, cpu_timed = a.b, 0.0, 0.0
    lines = 0
    while True:
        count = nbytes // 4
        t = torch.zeros(count, dtype=torch.float32)
        for _ in range(a.w):
            dist.all_reduce(t)
        dist.barrier()
        cpu0 = cpu_seconds()
        t0 = time.monotonic()
        for _ in range(a.n):
            dist.all_reduce(t)
        us = (time.monotonic() - t0) / a.n * 1e6
        cpu_timed += cpu_seconds() - cpu0
        t.fill_(rank + 1)
        dist.all_reduce(t)
        wrong = torch.tensor([int((t != n * (n + 1) / 2).sum())], dtype=torch.int32)
        dist.all_reduce(wrong)
        algbw = count * 4 / us / 1e3
        busbw = algbw * 2 * (n - 1) / n
        total += busbw
        lines += 1
        if rank == 0:
            print(" %11d %12d %8s %6s %10.1f %8.3f %8.3f %7d" % (count * 4, count, "float", "sum", us, algbw,
                                                               busbw, int(wrong[0])), flush=True)
        if nbytes >= a.e:
            break
        nbytes = min(a.e, int(math.ceil(nbytes * a.f)))
    cpu = torch.tensor([cpu_timed], dtype=torch.float64)
    dist.all_reduce(cpu)
    if rank == 0:
        print("# Avg bus bandwidth    : %.3f" % (total / lines))
        print("# cpu seconds of all ranks in the timed calls: %.3f" % float(cpu[0]))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
