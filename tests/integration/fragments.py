#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Sends IPv4 fragments of INA DATA datagrams at a swemu INA endpoint as raw
Ethernet frames, and prints how many frames went.

  fragments.py IFACE SRC_IP SRC_MAC SWITCH_IP SWITCH_MAC JOB KIND [CUT]

KIND: lone  a first, a middle and a last fragment, each of another datagram
            (none of them ever completes one);
      big   a whole datagram of 2370 elements (9496 bytes of UDP: over a
            9000-byte MTU once reassembled) cut into fragments of CUT bytes
            (default 8976);
      small a whole datagram of 1024 elements (within the MTU) in fragments
            of CUT bytes (default 2944)."""
import socket
import struct
import sys

iface, src_ip, src_mac, sw_ip, sw_mac, job, kind = sys.argv[1:8]
job = int(job)
mac = lambda s: bytes(int(x, 16) for x in s.split(":"))  # noqa: E731
ip4 = socket.inet_aton


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def datagram(n_elems):
    """The UDP part of an INA DATA of job JOB, contributor 0, slot 0 (UDP
    checksum 0, as SwitchML hosts send)."""
    h = struct.pack(">BBBBHHIIIHbB", 1, 1, 1, 0, job, 0, 0, 1, 0, n_elems, 0, 0)
    payload = h + b"\0" * (4 * n_elems)
    return struct.pack("!HHHH", 0xBEE0, 0xBEE0, 8 + len(payload), 0) + payload


def fragment(data, ident, offset, more):
    """One IPv4 fragment: data at byte offset (a multiple of 8) of datagram ident."""
    iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(data), ident, (0x2000 if more else 0) | offset // 8, 64, 17,
                      0, ip4(src_ip), ip4(sw_ip))
    iph = iph[:10] + struct.pack("!H", csum(iph)) + iph[12:]
    return mac(sw_mac) + mac(src_mac) + b"\x08\x00" + iph + data


s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
if kind == "lone":
    d = datagram(2048)
    frames = [fragment(d[:1480], 0x1001, 0, True), fragment(d[1480:2960], 0x1002, 1480, True),
              fragment(d[2960:4440], 0x1003, 2960, False)]
elif kind in ("big", "small"):
    d = datagram(2370 if kind == "big" else 1024)
    cut = int(sys.argv[8]) if len(sys.argv) > 8 else 8976 if kind == "big" else 2944
    ident = 0x2001 if kind == "big" else 0x3001
    frames = [fragment(d[o:o + cut], ident, o, o + cut < len(d)) for o in range(0, len(d), cut)]
else:
    sys.exit("fragments.py: KIND is lone, big or small")
for f in frames:
    s.send(f)
print(len(frames))
