#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The house rules that keep the layout easy to change (docs/LAYOUT.md):

  - the folders depend one way: nic <- swemu, nic <- agent <- ring; a file
    includes only headers of its own folder and of the folders it may use;
  - the communicator dispatches on the algorithm in one place, the registry
    (no "algo ==" in ring/);
  - no C file over 800 lines; no function over 100 lines outside tests and
    programs' main.

  check.py [SOURCE_ROOT]   exit 0 when every rule holds, else 1 with each breach
"""
import os
import re
import sys

top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)
top = os.path.abspath(top)
MAY_USE = {"nic": {"nic"}, "swemu": {"nic", "swemu"}, "agent": {"nic", "agent"}, "ring": {"nic", "agent", "ring"}}
MAX_FILE, MAX_FUNC = 800, 100
breaches = []


def sources(*folders, exts=(".c", ".h")):
    for folder in folders:
        for root, _, files in os.walk(os.path.join(top, folder)):
            for f in sorted(files):
                if f.endswith(exts):
                    yield os.path.join(root, f)


def rel(p):
    return os.path.relpath(p, top)


# which folder each project header lives in
home = {}
for p in sources(*MAY_USE):
    name = os.path.basename(p)
    if name.endswith(".h"):
        if name in home:
            breaches.append(f"{rel(p)}: header name also in {home[name]}/ (includes would be ambiguous)")
        home[name] = rel(p).split(os.sep)[0]

for p in sources(*MAY_USE):
    folder = rel(p).split(os.sep)[0]
    for n, line in enumerate(open(p, encoding="utf-8"), 1):
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if m and os.path.basename(m.group(1)) in home:
            dep = home[os.path.basename(m.group(1))]
            if dep not in MAY_USE[folder]:
                breaches.append(f"{rel(p)}:{n}: {folder}/ includes {dep}/{m.group(1)}; {folder}/ may use "
                                f"{', '.join(sorted(MAY_USE[folder]))}")

for p in sources("ring", exts=(".c",)):
    for n, line in enumerate(open(p, encoding="utf-8"), 1):
        if "algo ==" in line:
            breaches.append(f"{rel(p)}:{n}: dispatch on the algorithm outside the registry (ring/hcl_algo.c)")

for p in sources("nic", "swemu", "agent", "ring", "testbed", "tests"):
    lines = open(p, encoding="utf-8").read().split("\n")
    if len(lines) - 1 > MAX_FILE:
        breaches.append(f"{rel(p)}: {len(lines) - 1} lines, more than {MAX_FILE}")
    if not p.endswith(".c") or rel(p).startswith("tests"):
        continue
    start = None
    for i, line in enumerate(lines):
        if line.startswith("{") and start is None:
            sig = " ".join(lines[max(0, i - 3):i])
            names = re.findall(r"(\w+)\s*\(", sig)
            start, name = i, names[0] if names else "?"
        elif line.startswith("}") and start is not None:
            if i - start + 1 > MAX_FUNC and name != "main":
                breaches.append(f"{rel(p)}:{start}: {name}() is {i - start + 1} lines, more than {MAX_FUNC}")
            start = None

for b in breaches:
    print(b)
print(f"layout: {len(breaches)} breach(es)" if breaches else "layout: every rule holds")
sys.exit(1 if breaches else 0)
