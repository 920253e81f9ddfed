#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Tagged frames without VLAN interfaces (this kernel has no 8021q): raw
AF_PACKET sends a frame with or without an 802.1Q tag, and receives one,
reading its tag from the packet's auxiliary data (veth takes tags off into
metadata).  For the integration tests of trunk ports.

  vlan_probe.py send IFACE VID MARK      VID 0: untagged; MARK: 1 byte
  vlan_probe.py recv IFACE MARK READY S  prints "vlan N" or "untagged" for
                                         the first frame with MARK; READY is
                                         created once listening; exit 1
                                         after S seconds without one
"""
import os
import select
import socket
import struct
import sys
import time

ETHERTYPE = 0x88B5  # local experimental
SOL_PACKET, PACKET_AUXDATA, TP_STATUS_VLAN_VALID = 263, 8, 1 << 4
AUX = struct.Struct("IIIHHHH")  # struct tpacket_auxdata


def main():
    if len(sys.argv) < 5 or sys.argv[1] not in ("send", "recv"):
        print(__doc__, file=sys.stderr)
        return 2
    iface, mark = sys.argv[2], int(sys.argv[4] if sys.argv[1] == "send" else sys.argv[3])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((iface, 0))
    if sys.argv[1] == "send":
        vid = int(sys.argv[3])
        tag = struct.pack(">HH", 0x8100, vid) if vid else b""
        src = open(f"/sys/class/net/{iface}/address").read().strip()
        frame = b"\xff" * 6 + bytes.fromhex(src.replace(":", "")) + tag + struct.pack(">H", ETHERTYPE)
        s.send(frame + bytes([mark]) * 46)
        return 0
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    open(sys.argv[4], "w").close()
    deadline = time.monotonic() + float(sys.argv[5])
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([s], [], [], left)[0]:
            break
        data, anc, _flags, _addr = s.recvmsg(65536, socket.CMSG_SPACE(AUX.size))
        vlan = None
        if len(data) >= 19 and struct.unpack(">H", data[12:14])[0] == 0x8100:  # tag left in the frame
            vlan = struct.unpack(">H", data[14:16])[0] & 0xFFF
            data = data[:12] + data[16:]
        if len(data) < 15 or struct.unpack(">H", data[12:14])[0] != ETHERTYPE or data[14] != mark:
            continue
        for level, kind, cdata in anc:
            if level == SOL_PACKET and kind == PACKET_AUXDATA and len(cdata) >= AUX.size:
                status, _l, _s, _m, _n, tci, _tpid = AUX.unpack(cdata[:AUX.size])
                if status & TP_STATUS_VLAN_VALID:
                    vlan = tci & 0xFFF
        print(f"vlan {vlan}" if vlan is not None else "untagged")
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
