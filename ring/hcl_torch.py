# SPDX-License-Identifier: BSD-3-Clause
"""A torch.distributed backend over libhcl: import this module and

    import hcl_torch                       # registers the backend "hcl"
    dist.init_process_group("hcl")         # instead of "gloo"; DDP works as it is

and an existing training script runs its collectives through the host
library, with the algorithm named by HCL_ALGO (ring, hier, ps, ps-ina,
agent-ring; default ring) and every other HCL_* setting as for a C program
(docs/PYTHON.md).  The library's own rendezvous uses MASTER_ADDR and
HCL_MASTER_PORT, default MASTER_PORT + 1 (torch's store takes MASTER_PORT).

Collectives: all_reduce (sum, avg) of float32, bfloat16, int32 and float16
tensors (float16 summed in binary32 and rounded once, as bfloat16 is),
broadcast and all_gather of any type, barrier; the rest raise
NotImplementedError by name.  Tensors on the CPU or on a GPU: a GPU
tensor is staged through pinned host memory, copied on the device's
current stream (so after the kernels that wrote it) and copied back the
same way (so before the kernels that read the result), and the call
returns with the result in place, as Gloo's does; a GPU training script
runs unchanged.

It is a Python process group (torch's ProcessGroup subclassed, as
torch/testing's Python process groups are), not a C++ extension: the data
path is libhcl through ring/hcl.py either way, so a build against
libtorch's C++ ABI would add a compiler and a version lock for no speed
(docs/PYTHON.md, "A torch.distributed backend").
"""
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

try:  # a Python process group's Work: torch 1.13 has it (Ubuntu 22.04's 1.8 not)
    from torch._C._distributed_c10d import _create_work_from_future
except ImportError as e:
    raise ImportError(
        "hcl_torch: torch %s lacks _create_work_from_future, which a Python "
        "process group needs (torch 1.13 has it); the DDP hook hcl.ddp_comm_hook "
        "works with this torch" % torch.__version__
    ) from e

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hcl  # noqa: E402

_NATIVE = (torch.float32, torch.bfloat16, torch.int32)


def _done(result):
    fut = torch.futures.Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


def _host(t):
    """t itself on the CPU; a tensor on a device (a GPU) copied into
    pinned host memory.  The copy is queued on the device's current stream,
    after the kernels that made t, and waited for: libhcl reads host
    memory only."""
    if t.device.type == "cpu":
        return t
    h = torch.empty(t.shape, dtype=t.dtype, pin_memory=t.device.type == "cuda")
    h.copy_(t)
    return h


def _back(t, h):
    """The result h into t where t lives on a device: on the current
    stream, before anything queued after this call reads t."""
    if h is not t:
        t.copy_(h)


def _op(opts):
    op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
    for name in ("SUM", "AVG"):
        if op == getattr(dist.ReduceOp, name):
            return name.lower()
    name = next((n for n in ("MAX", "MIN", "PRODUCT", "BAND", "BOR", "BXOR", "PREMUL_SUM")
                 if hasattr(dist.ReduceOp, n) and op == getattr(dist.ReduceOp, n)), str(op))
    raise NotImplementedError(f"hcl: all_reduce with {name}: only SUM and AVG are supported")


def _bytes_of(t):
    """t's bytes, padded to whole 4-byte words (a copy)."""
    raw = t.detach().contiguous().view(-1).view(torch.uint8)
    buf = torch.zeros((raw.numel() + 3) // 4 * 4, dtype=torch.uint8)
    buf[:raw.numel()] = raw
    return buf, raw.numel()


class ProcessGroupHcl(dist.ProcessGroup):
    """One communicator of libhcl as a torch process group."""

    def __init__(self, rank, size, timeout):
        super().__init__(rank, size)
        port = os.environ.get("HCL_MASTER_PORT") or int(os.environ.get("MASTER_PORT", "29500")) + 1
        self.comm = hcl.Comm(algo=os.environ.get("HCL_ALGO", "ring"), rank=rank, world=size,
                             master_port=int(port), timeout_ms=int(timeout.total_seconds() * 1000))

    def getBackendName(self):
        return "hcl"

    def allreduce(self, tensors, opts=None):
        op = _op(opts)
        for t in tensors:
            if t.dtype not in _NATIVE + (torch.float16,):
                raise NotImplementedError(f"hcl: all_reduce of {t.dtype}: float32, bfloat16, float16 and int32 "
                                          "are supported")
            h = _host(t)
            if h.dtype in _NATIVE and h.is_contiguous():
                self.comm.allreduce(h, op=op)
            else:
                wide = h.to(torch.float32 if h.dtype == torch.float16 else h.dtype).contiguous()
                self.comm.allreduce(wide, op=op)
                h.copy_(wide)
            _back(t, h)
        return _done(tensors)

    def broadcast(self, tensors, opts):
        # the root's bytes and every other rank's zeros, summed as int32
        # words: exact for any type, -0.0 and NaN included
        for t in tensors:
            buf, n = _bytes_of(_host(t))
            if self.rank() != opts.rootRank:
                buf.zero_()
            self.comm.allreduce(buf.view(torch.int32))
            t.copy_(buf[:n].view(t.dtype).view(t.shape))
        return _done(tensors)

    def allgather(self, output_tensors, input_tensors, opts=None):
        # each rank's bytes in its own stretch, zeros elsewhere, summed
        world, me = self.size(), self.rank()
        for outs, t in zip(output_tensors, input_tensors):
            mine, n = _bytes_of(_host(t))
            w = mine.numel()
            buf = torch.zeros(world * w, dtype=torch.uint8)
            buf[me * w:(me + 1) * w] = mine
            self.comm.allreduce(buf.view(torch.int32))
            for r, o in enumerate(outs):
                o.copy_(buf[r * w:r * w + n].view(o.dtype).view(o.shape))
        return _done(output_tensors)

    def barrier(self, opts=None):
        x = torch.zeros(1, dtype=torch.int32)
        self.comm.allreduce(x)
        return _done([x])

    def _no(self, name):
        raise NotImplementedError(f"hcl: {name} is not implemented (all_reduce, broadcast, all_gather, barrier "
                                  "are); use a gloo group for it")

    def reduce(self, *a, **k): self._no("reduce")  # noqa: E704
    def reduce_scatter(self, *a, **k): self._no("reduce_scatter")  # noqa: E704
    def alltoall(self, *a, **k): self._no("all_to_all")  # noqa: E704
    def gather(self, *a, **k): self._no("gather")  # noqa: E704
    def scatter(self, *a, **k): self._no("scatter")  # noqa: E704
    def send(self, *a, **k): self._no("send")  # noqa: E704
    def recv(self, *a, **k): self._no("recv")  # noqa: E704


def _create(store, rank, size, timeout=timedelta(minutes=30)):
    return ProcessGroupHcl(rank, size, timeout)


if not hasattr(dist.Backend, "HCL"):
    dist.Backend.register_backend("hcl", _create)
