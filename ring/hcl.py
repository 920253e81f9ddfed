# SPDX-License-Identifier: BSD-3-Clause
"""Python binding of the host collective library (libhcl), for training
scripts: an all-reduce over plain buffers or CPU tensors, and a DDP
communication hook that sends PyTorch's gradient buckets through it.

    import hcl
    comm = hcl.Comm(algo="ps-ina")          # RANK, WORLD_SIZE, MASTER_* as for torchrun
    comm.allreduce(tensor, op="avg")        # in place
    ddp_model.register_comm_hook(comm, hcl.ddp_comm_hook)

Everything not given to Comm() comes from the environment exactly as for a
C program (docs/HOSTLIB.md): HCL_DATA_ADDR, HCL_INA_SWITCH, HCL_RACK, ...
The library is libhcl.so from $HCL_LIBRARY, else the build tree next to
this file, else the system's by its SONAME (libhcl.so.0: never another
vendor's libhcl.so, which a name search could find), and it must export
this project's hcl_comm_cfg_size.  Errors raise HclError with the
library's message; every call has the communicator's deadline.
"""
import concurrent.futures
import ctypes
import os

ALGOS = {"ring": 1, "hier": 2, "ps": 3, "ps-ina": 4, "agent-ring": 5}
OPS = {"sum": 1, "avg": 2}
INA_FLOATS = {"bfp": 1, "native": 2, "bf16": 3}
_INT32, _FP32, _BF16 = 1, 2, 3
_SONAME = "libhcl.so.0"  # ring/meson.build: the project's major version


class HclError(RuntimeError):
    """A failed libhcl call; errno is the library's negative return."""

    def __init__(self, msg, errno=0):
        super().__init__(msg)
        self.errno = errno


class _Cfg(ctypes.Structure):
    # struct hcl_comm_cfg of ring/hcl.h, field for field; checked against
    # hcl_comm_cfg_size() when the library is loaded
    _fields_ = [
        ("rank", ctypes.c_int), ("world", ctypes.c_int),
        ("master_addr", ctypes.c_char_p), ("master_port", ctypes.c_int),
        ("data_addr", ctypes.c_char_p), ("data_port", ctypes.c_uint16),
        ("algo", ctypes.c_int), ("rack", ctypes.c_int), ("timeout_ms", ctypes.c_int64),
        ("ina_switch", ctypes.c_char_p), ("ina_job", ctypes.c_int), ("ina_slots", ctypes.c_int),
        ("ina_elems", ctypes.c_int), ("ina_port", ctypes.c_int), ("ina_bfp", ctypes.c_int),
        ("hostfile", ctypes.c_char_p), ("pace", ctypes.c_int), ("trace_dir", ctypes.c_char_p),
        ("ring_channels", ctypes.c_int), ("ps_shards", ctypes.c_int),
    ]


_lib = None


def _library():
    global _lib
    if _lib is not None:
        return _lib
    path = os.environ.get("HCL_LIBRARY")
    if path and not os.path.exists(path):
        raise HclError(f"HCL_LIBRARY={path}: no such file")
    if not path:
        beside = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "ring", "libhcl.so")
        path = beside if os.path.exists(beside) else _SONAME
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise HclError(f"{path} does not load ({e}): set HCL_LIBRARY, or build (testbed/setup.sh) "
                       "or install libhcl") from None
    try:
        lib.hcl_comm_cfg_size.restype = ctypes.c_size_t
    except AttributeError:
        raise HclError(f"{path} is not this project's libhcl (no hcl_comm_cfg_size): "
                       "set HCL_LIBRARY to swemu's libhcl.so") from None
    if lib.hcl_comm_cfg_size() != ctypes.sizeof(_Cfg):
        raise HclError(f"{path}: struct hcl_comm_cfg is {lib.hcl_comm_cfg_size()} bytes there, "
                       f"{ctypes.sizeof(_Cfg)} here: hcl.py and the library differ in version")
    lib.hcl_comm_create.argtypes = [ctypes.POINTER(_Cfg), ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.c_char_p, ctypes.c_size_t]
    lib.hcl_comm_destroy.argtypes = [ctypes.c_void_p]
    lib.hcl_comm_rank.argtypes = lib.hcl_comm_world.argtypes = [ctypes.c_void_p]
    lib.hcl_comm_error.argtypes = [ctypes.c_void_p]
    lib.hcl_comm_error.restype = ctypes.c_char_p
    # ctypes drops the GIL around these: other Python threads run meanwhile
    lib.hcl_allreduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                  ctypes.c_int, ctypes.c_void_p]
    lib.hcl_iter_begin.argtypes = lib.hcl_iter_end.argtypes = [ctypes.c_void_p]
    _lib = lib
    return lib


def _bytes_or_none(v):
    return None if v is None else str(v).encode()


def _buffer_of(x):
    """(address, element count, hcl dtype, keep-alive) of a CPU tensor or a
    writable buffer of 4-byte ints or floats."""
    if hasattr(x, "data_ptr") and hasattr(x, "dtype"):  # a torch.Tensor, without importing torch
        name = str(x.dtype)
        dtypes = {"torch.int32": _INT32, "torch.float32": _FP32, "torch.bfloat16": _BF16}
        if name not in dtypes:
            raise TypeError(f"hcl: tensors of {name} are not supported (int32, float32, bfloat16, float16)")
        if x.device.type != "cpu":
            raise ValueError(f"hcl: the tensor is on {x.device}: only host memory is reduced here; copy it "
                             "to the CPU first (tensor.cpu())")
        if not x.is_contiguous():
            raise ValueError("hcl: the tensor must be contiguous")
        return x.data_ptr(), x.numel(), dtypes[name], x
    mv = memoryview(x)
    if not mv.c_contiguous:
        raise ValueError("hcl: the buffer must be contiguous")
    if mv.readonly:
        raise ValueError("hcl: the buffer is read-only (the result is written in place)")
    dtype = {"i": _INT32, "f": _FP32}.get(mv.format.lstrip("@=<"))
    if dtype is None or mv.itemsize != 4:
        raise TypeError(f"hcl: buffers of format '{mv.format}' are not supported (4-byte 'i' or 'f')")
    raw = mv.cast("B")
    if raw.nbytes == 0:
        return 0, 0, dtype, raw
    holder = (ctypes.c_char * raw.nbytes).from_buffer(raw)
    return ctypes.addressof(holder), raw.nbytes // 4, dtype, (raw, holder)


class Comm:
    """A communicator: rendezvous with the other ranks on creation, then
    all-reduces.  Arguments left None come from the environment."""

    def __init__(self, algo="ring", timeout_ms=0, rank=None, world=None, master_addr=None, master_port=None,
                 data_addr=None, rack=None, ina_switch=None, ina_job=None, ina_slots=None, ina_elems=None,
                 ina_port=None, ina_float=None, hostfile=None, pace=None, trace_dir=None, ring_channels=None,
                 ps_shards=None):
        lib = _library()
        if algo not in ALGOS:
            raise ValueError(f"hcl: algorithm '{algo}' is not one of {', '.join(ALGOS)}")
        if ina_float is not None and ina_float not in INA_FLOATS:
            raise ValueError(f"hcl: ina_float '{ina_float}' is not one of {', '.join(INA_FLOATS)}")
        self._keep = [_bytes_or_none(v) for v in (master_addr, data_addr, ina_switch, hostfile, trace_dir)]
        cfg = _Cfg(rank=-1 if rank is None else rank, world=-1 if world is None else world,
                   master_addr=self._keep[0], master_port=master_port or 0, data_addr=self._keep[1],
                   algo=ALGOS[algo], rack=-1 if rack is None else rack, timeout_ms=timeout_ms,
                   ina_switch=self._keep[2], ina_job=ina_job or 0, ina_slots=ina_slots or 0,
                   ina_elems=ina_elems or 0, ina_port=ina_port or 0,
                   ina_bfp=INA_FLOATS.get(ina_float, 0), hostfile=self._keep[3],
                   pace=0 if pace is None else (1 if pace else -1), trace_dir=self._keep[4],
                   ring_channels=ring_channels or 0, ps_shards=ps_shards or 0)
        err = ctypes.create_string_buffer(256)
        handle = ctypes.c_void_p()
        self._c, self._worker = None, None
        rc = lib.hcl_comm_create(ctypes.byref(cfg), ctypes.byref(handle), err, len(err))
        if rc < 0:
            raise HclError(f"hcl: {err.value.decode(errors='replace')}", rc)
        self._lib, self._c, self.algo = lib, handle, algo

    @property
    def rank(self):
        return self._lib.hcl_comm_rank(self._handle())

    @property
    def world(self):
        return self._lib.hcl_comm_world(self._handle())

    def _handle(self):
        if self._c is None:
            raise HclError("hcl: the communicator is closed")
        return self._c

    def _args(self, buf, op, out):
        if op not in OPS:
            raise ValueError(f"hcl: op '{op}' is not one of {', '.join(OPS)}")
        send, n, dtype, keep_send = _buffer_of(buf)
        recv, keep_recv = send, None
        if out is not None:
            recv, m, odtype, keep_recv = _buffer_of(out)
            if (m, odtype) != (n, dtype):
                raise ValueError("hcl: out must have the element count and type of the input")
        return (send, recv, n, dtype, OPS[op], self._handle()), (keep_send, keep_recv)

    def _run(self, cargs, keep, result):
        rc = self._lib.hcl_allreduce(*cargs)
        del keep  # the buffers were held up to here
        if rc < 0:
            msg = self._lib.hcl_comm_error(cargs[-1])
            raise HclError(f"hcl: all-reduce: {msg.decode(errors='replace') if msg else os.strerror(-rc)}", rc)
        return result

    def _widened(self, buf, op, out):
        """A float16 tensor's call: (arguments, keep, the float32 copy it
        runs on, where the result goes); None for every other buffer."""
        if str(getattr(buf, "dtype", "")) != "torch.float16":
            return None
        if out is not None and out is not buf:
            raise ValueError("hcl: a float16 tensor is reduced in place only (out=None)")
        wide = buf.float()  # summed in binary32 and rounded once, as bfloat16 is
        cargs, keep = self._args(wide, op, None)
        return cargs, keep, wide, buf

    def _run_wide(self, cargs, keep, wide, buf):
        self._run(cargs, keep, wide)
        buf.copy_(wide)
        return buf

    def allreduce(self, buf, op="sum", out=None):
        """buf summed (or averaged) over the ranks, into out (default:
        buf itself).  Tensors of int32, float32, bfloat16 or float16 (in
        place; summed in binary32), or buffers of 4-byte ints or floats.
        Returns the result's object.  After allreduce_async calls it waits
        its turn behind them."""
        w = self._widened(buf, op, out)
        if w is not None:
            if self._worker is not None:
                return self._worker.submit(self._run_wide, *w).result()
            return self._run_wide(*w)
        cargs, keep = self._args(buf, op, out)
        result = buf if out is None else out
        if self._worker is not None:
            return self._worker.submit(self._run, cargs, keep, result).result()
        return self._run(cargs, keep, result)

    def allreduce_async(self, buf, op="sum", out=None):
        """As allreduce, on the communicator's own thread: returns a
        concurrent.futures.Future of the result.  Calls run one at a time
        in the order they were made (every rank must make them in the same
        order); the buffers must not be touched until it is done.  Bad
        arguments raise here, a failed call in the future."""
        w = self._widened(buf, op, out)
        if w is None:
            cargs, keep = self._args(buf, op, out)
        if self._worker is None:
            self._worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="hcl")
        if w is not None:
            return self._worker.submit(self._run_wide, *w)
        return self._worker.submit(self._run, cargs, keep, buf if out is None else out)

    def iter_begin(self):
        self._lib.hcl_iter_begin(self._handle())

    def iter_end(self):
        self._lib.hcl_iter_end(self._handle())

    def close(self):
        """Leaves the communicator (waits for the others to finish with
        the aggregators, up to the deadline); safe to call twice."""
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None
        if self._c is not None:
            self._lib.hcl_comm_destroy(self._c)
            self._c = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_c", None) is not None:
            self.close()


def grad_bucket(bucket):
    """A DDP communication hook's bucket as (its flat gradients, a function
    of a tensor giving what the hook's future must hold): torch with
    bucket.buffer() (1.13, Debian 12's) takes the tensor itself; before
    that (get_tensors() in 1.8, Ubuntu 22.04's; get_tensor() for a while)
    a list of one tensor."""
    if hasattr(bucket, "buffer"):
        return bucket.buffer(), lambda t: t
    grads = bucket.get_tensor() if hasattr(bucket, "get_tensor") else bucket.get_tensors()[0]
    return grads, lambda t: [t]


def ddp_comm_hook(comm, bucket):
    """torch.nn.parallel.DistributedDataParallel communication hook: the
    bucket's gradients averaged over the ranks through libhcl (DDP's own
    hook averages too), on the communicator's thread while the backward
    pass goes on, as DDP's Gloo all-reduce does.
    register_comm_hook(comm, hcl.ddp_comm_hook)."""
    import torch

    grads, result = grad_bucket(bucket)
    done = comm.allreduce_async(grads, op="avg")
    fut = torch.futures.Future()

    def finish(f):
        if f.exception() is not None:
            fut.set_exception(f.exception())
        else:
            fut.set_result(result(grads))

    done.add_done_callback(finish)
    return fut
