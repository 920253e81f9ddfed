#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""One worker of an all-reduce through an INA switch, for integration tests.

SwitchML-style: a window of --slots outstanding slices, slice k in slot
k % slots and set (k // slots) % 2, retransmission on timeout with back-off,
duplicate results ignored.  Every worker derives every worker's data from
(seed, worker, slice, element), so it checks each result against the exact
reference sum.  Exit 0 when all slices came back right, 1 on a wrong result
or the deadline.
"""
import argparse
import select
import socket
import struct
import sys
import time

HDR = struct.Struct(">BBBBHHIIIHbB")
T_DATA, T_RESULT = 1, 2
D_INT32, D_FP32, D_BF16 = 1, 2, 4
F_RETX = 1
SET_BIT = 0x80000000


def value(seed, w, k, e):
    x = (seed * 1000003 + w * 7919 + k * 104729 + e * 31) % 2000001 - 1000000
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--switch", required=True, help="switch INA address a.b.c.d")
    ap.add_argument("--bind", required=True, help="own address a.b.c.d")
    ap.add_argument("--port", type=int, default=0xBEE0)
    ap.add_argument("--job", type=int, required=True)
    ap.add_argument("--index", type=int, required=True)
    ap.add_argument("--fanin", type=int, required=True)
    ap.add_argument("--count", type=int, default=256, help="elements per slice")
    ap.add_argument("--slots", type=int, default=8)
    ap.add_argument("--slices", type=int, default=64)
    ap.add_argument("--dtype", choices=["int32", "fp32", "bf16"], default="int32")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--epoch", type=int, default=1)
    ap.add_argument("--timeout-ms", type=float, default=20)
    ap.add_argument("--deadline-s", type=float, default=60)
    a = ap.parse_args()

    dt = {"int32": D_INT32, "fp32": D_FP32, "bf16": D_BF16}[a.dtype]
    f32 = struct.Struct(">%df" % a.count)

    class Bf16:
        """bf16 on the wire: the high half of each big-endian binary32 (the
        values used are exact in bf16, so nothing is rounded)."""
        def pack(self, *v):
            b = f32.pack(*v)
            return b"".join(b[i:i + 2] for i in range(0, len(b), 4))

        def unpack_from(self, buf, off):
            b = buf[off:off + 2 * a.count]
            return f32.unpack(b"".join(b[i:i + 2] + b"\0\0" for i in range(0, len(b), 2)))

    fmt = {D_INT32: struct.Struct(">%di" % a.count), D_FP32: f32, D_BF16: Bf16()}[dt]

    def elems(w, k):
        v = [value(a.seed, w, k, e) for e in range(a.count)]
        if dt == D_BF16:  # multiples of 1/8 in [-1, 1]: sums of a few stay exact in bf16
            return [(x % 17 - 8) / 8.0 for x in v]
        return v if dt == D_INT32 else [x / 1024.0 for x in v]

    def packet(k, retx):
        slot = (k % a.slots) | (SET_BIT if (k // a.slots) % 2 else 0)
        h = HDR.pack(1, T_DATA, dt, F_RETX if retx else 0, a.job, a.index, slot, a.epoch, k, a.count, 0, 0)
        return h + fmt.pack(*elems(a.index, k))

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((a.bind, a.port))
    dst = (a.switch, a.port)
    outstanding = {}  # slice -> (deadline, timeout)
    done = 0
    retx = 0
    start = time.monotonic()
    for k in range(min(a.slots, a.slices)):
        s.sendto(packet(k, False), dst)
        outstanding[k] = (time.monotonic() + a.timeout_ms / 1e3, a.timeout_ms)
    while done < a.slices:
        now = time.monotonic()
        if now - start > a.deadline_s:
            print(f"worker {a.index}: deadline: {done}/{a.slices} slices done, {retx} retransmissions",
                  file=sys.stderr)
            return 1
        wake = min(d for d, _ in outstanding.values()) if outstanding else now + 0.05
        r, _, _ = select.select([s], [], [], max(0.0, wake - now))
        if r:
            buf, _src = s.recvfrom(65536)
            if len(buf) < HDR.size:
                continue
            (ver, typ, dtype, flags, job, contrib, slot, epoch, seq, count, _e, _r) = HDR.unpack_from(buf)
            if typ != T_RESULT or job != a.job or epoch != a.epoch or seq not in outstanding:
                continue  # a duplicate of a result already taken
            if len(buf) != HDR.size + (2 if dt == D_BF16 else 4) * a.count:
                print(f"worker {a.index}: slice {seq}: {len(buf)}-byte result", file=sys.stderr)
                return 1
            got = list(fmt.unpack_from(buf, HDR.size))
            want = [sum(col) for col in zip(*(elems(w, seq) for w in range(a.fanin)))]
            if dt == D_FP32:
                bad = [i for i in range(a.count) if abs(got[i] - want[i]) > 1e-6 * max(1.0, abs(want[i]))]
            else:
                bad = [i for i in range(a.count) if got[i] != want[i]]
            if bad:
                i = bad[0]
                print(f"worker {a.index}: slice {seq} element {i}: got {got[i]} want {want[i]}", file=sys.stderr)
                return 1
            del outstanding[seq]
            done += 1
            nxt = seq + a.slots  # the same slot's next slice, in the other set
            if nxt < a.slices:
                s.sendto(packet(nxt, False), dst)
                outstanding[nxt] = (time.monotonic() + a.timeout_ms / 1e3, a.timeout_ms)
        now = time.monotonic()
        for k, (d, to) in list(outstanding.items()):
            if d <= now:
                s.sendto(packet(k, True), dst)
                retx += 1
                to = min(to * 2, 500.0)
                outstanding[k] = (now + to / 1e3, to)
    el = time.monotonic() - start
    print(f"worker {a.index}: {a.slices} slices of {a.count} {a.dtype} exact in {el:.2f} s, {retx} retransmissions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
