#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The house rules that keep the layout easy to change (docs/LAYOUT.md):

  - the folders depend one way: nic <- swemu, nic <- agent <- ring; a file
    includes only headers of its own folder and of the folders it may use;
  - the communicator dispatches on the algorithm in one place, the registry
    (no "algo ==" in ring/);
  - no C file over 800 lines; no function over 100 lines outside tests and
    programs' main;
  - no circle of calls between files: if a.c calls a function of b.c, no
    chain of calls leads from b.c back to a.c (a module does not call back
    into the one that calls it);
  - no benchmark code in the product's folders (benchmarks live in
    testbed/bench/).

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

def strip_c(text):
    """The text without comments, strings and character constants (kept
    the same length on each line, so that line numbers hold)."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', '""', text)


# which file defines each function that others may call (not static), and
# what each file calls
defines, calls = {}, {}
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined", "__attribute__", "_Static_assert",
            "__builtin_expect", "typeof", "__typeof__", "alignof", "_Alignof", "offsetof"}
for p in sources("nic", "swemu", "agent", "ring", exts=(".c",)):
    text = strip_c(open(p, encoding="utf-8").read())
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("{"):
            sig = " ".join(lines[max(0, i - 4):i])
            sig = sig[sig.rfind(";") + 1:] if ";" in sig else sig
            sig = sig[sig.rfind("}") + 1:] if "}" in sig else sig
            names = re.findall(r"(\w+)\s*\(", sig)
            if names and not re.search(r"\bstatic\b", sig):
                defines.setdefault(names[0], rel(p))
    calls[rel(p)] = {m for m in re.findall(r"\b([A-Za-z_]\w*)\s*\(", text) if m not in KEYWORDS}

edges = {}
for f, called in calls.items():
    for name in called:
        g = defines.get(name)
        if g and g != f:
            edges.setdefault(f, {}).setdefault(g, set()).add(name)


def circles(nodes, edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


for comp in circles(calls, edges):
    how = "; ".join(f"{a} -> {b} ({', '.join(sorted(edges[a][b]))})" for a in comp for b in sorted(edges.get(a, {}))
                    if b in comp)
    breaches.append(f"a circle of calls between {', '.join(comp)}: {how}")

for p in sources("nic", "swemu", "agent", "ring"):
    if "bench" in os.path.basename(p):
        breaches.append(f"{rel(p)}: benchmark code in the product's folders (it belongs in testbed/bench/)")
for p in sources("nic", "swemu", "agent", "ring", exts=("meson.build",)):
    for n, line in enumerate(open(p, encoding="utf-8"), 1):
        if re.search(r"executable\(\s*'[^']*bench", line):
            breaches.append(f"{rel(p)}:{n}: a benchmark built in the product's folders (it belongs in testbed/bench/)")

for b in breaches:
    print(b)
print(f"layout: {len(breaches)} breach(es)" if breaches else "layout: every rule holds")
sys.exit(1 if breaches else 0)
