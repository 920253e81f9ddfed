#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Sends hostile packets at a swemu INA endpoint as raw Ethernet frames,
COUNT of each kind (or of the listed kinds only), and prints the kinds sent
as JSON {kind: count}; a kind's name is the counter that must count it.

  hostile.py IFACE SRC_IP SRC_MAC SWITCH_IP SWITCH_MAC JOB COUNT [KIND,...]
"""
import json
import socket
import struct
import sys

iface, src_ip, src_mac, sw_ip, sw_mac, job, count = sys.argv[1:8]
only = sys.argv[8].split(",") if len(sys.argv) > 8 else None
job, count = int(job), int(count)
mac = lambda s: bytes(int(x, 16) for x in s.split(":"))
ip4 = socket.inet_aton


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(payload, bad_ip=False, bad_udp=False, sport=0xBEE0, dport=0xBEE0):
    udp_len = 8 + len(payload)
    pseudo = ip4(src_ip) + ip4(sw_ip) + struct.pack("!BBH", 0, 17, udp_len)
    udp = struct.pack("!HHHH", sport, dport, udp_len, 0) + payload
    c = csum(pseudo + udp) or 0xFFFF
    if bad_udp:
        c ^= 0x5A5A
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0, 0x4000, 64, 17, 0, ip4(src_ip), ip4(sw_ip))
    c = csum(iph) ^ (0x1111 if bad_ip else 0)
    iph = iph[:10] + struct.pack("!H", c) + iph[12:]
    return mac(sw_mac) + mac(src_mac) + b"\x08\x00" + iph + udp


def ina(version=1, typ=1, dtype=1, job=job, contrib=0, slot=0, count=4, payload=None):
    h = struct.pack(">BBBBHHIIIHbB", version, typ, dtype, 0, job, contrib, slot, 1, 0, count, 0, 0)
    return h + (payload if payload is not None else b"\0" * (4 * count))


kinds = {
    "truncated": frame(b"\x01\x01\x01"),
    "bad_version": frame(ina(version=2)),
    "unknown_job": frame(ina(job=999)),
    "not_member": frame(ina()),  # a valid contribution from a non-member
    "slot_out_of_range": frame(ina(slot=100000)),
    "count_exceeds_slot": frame(ina(count=2000)),
    "count_too_large": frame(ina(count=3000, payload=b"\0" * 64)),
    "bad_udp_checksum": frame(ina(), bad_udp=True),
    "bad_ip_checksum": frame(ina(), bad_ip=True),
}
if only:
    unknown = set(only) - set(kinds)
    if unknown:
        sys.exit("hostile.py: no kind %s (kinds: %s)" % (", ".join(sorted(unknown)), ", ".join(kinds)))
    kinds = {k: kinds[k] for k in only}
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
for _ in range(count):
    for f in kinds.values():
        s.send(f)
print(json.dumps({k: count for k in kinds}))
