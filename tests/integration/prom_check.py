#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks swemu's Prometheus file against the text exposition format and
against the JSON stats written right after it (swemu writes the Prometheus
file first): every port counter and drop, every engine and job counter.
  prom_check.py STATS.prom STATS.json      exit 0 and a summary, or 1 and why"""
import json
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"'
SAMPLE = re.compile(r"^(%s)\{(%s(?:,%s)*)\} ([0-9]+(?:\.[0-9]+)?)$" % (NAME, LABEL, LABEL))


def fail(why):
    print("prom_check: " + why)
    sys.exit(1)


def parse(text):
    """{(name, frozenset(labels)): value}, after checking the format."""
    series, seen_families, family, typed = {}, set(), None, None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            name = line.split(" ")[2]
            if not re.fullmatch(NAME, name) or name in seen_families:
                fail("line %d: family %s bad or repeated" % (n, name))
            seen_families.add(name)
            family, typed = name, None
            continue
        if line.startswith("# TYPE "):
            parts = line.split(" ")
            if len(parts) != 4 or parts[2] != family or parts[3] not in ("counter", "gauge"):
                fail("line %d: TYPE does not follow its HELP: %s" % (n, line))
            typed = parts[3]
            if typed == "counter" and not family.endswith("_total"):
                fail("line %d: counter %s does not end in _total" % (n, family))
            continue
        m = SAMPLE.match(line)
        if not m:
            fail("line %d is not a sample: %r" % (n, line))
        if m.group(1) != family or typed is None:
            fail("line %d: sample of %s outside its family" % (n, m.group(1)))
        labels = frozenset(re.findall(LABEL, m.group(2)))
        key = (m.group(1), labels)
        if key in series:
            fail("line %d: series repeated" % n)
        v = m.group(m.lastindex)
        series[key] = float(v) if "." in v else int(v)
    return series


def get(series, name, **labels):
    key = (name, frozenset(labels.items()))
    if key not in series:
        fail("no series %s%s" % (name, labels))
    return series[key]


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    series = parse(open(sys.argv[1]).read())
    stats = json.load(open(sys.argv[2]))
    compared = 0
    for sw, s in stats["switches"].items():
        for port, p in s["ports"].items():
            # written a moment before the JSON: a port may have moved on
            pairs = [("swemu_port_%s_total" % k, {}, p[k]) for k in ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "ecn_marks")]
            pairs += [("swemu_port_drops_total", {"reason": r}, v) for r, v in p["drops"].items() if r != "ok"]
            for name, extra, want in pairs:
                got = get(series, name, switch=sw, port=port, **extra)
                if not (got <= want <= got + (20000 if name.endswith("bytes_total") else 20)):
                    fail("%s{%s,%s,%s} = %d, the JSON says %d" % (name, sw, port, extra, got, want))
                compared += 1
        ina = s.get("ina")
        if not ina:
            continue
        pairs = [("swemu_ina_rx_packets_total", {}, ina["rx_packets"]), ("swemu_ina_accepted_total", {}, ina["accepted"]),
                 ("swemu_ina_emits_sent_total", {}, ina["emits_sent"]),
                 ("swemu_ina_nacks_sent_total", {}, ina["nacks_sent"]),
                 ("swemu_ina_repeated_headers_total", {}, ina["repeated_headers"])]
        pairs += [("swemu_ina_drops_total", {"reason": r}, v) for r, v in ina["drops"].items() if r != "ok"]
        for job, j in ina["jobs"].items():
            for k in ("rx_packets", "contributions", "completions", "retransmits", "misses", "emits", "overflows", "reclaimed"):
                pairs.append(("swemu_ina_job_%s_total" % k, {"job": job}, j[k]))
            pairs.append(("swemu_ina_job_slots_busy", {"job": job}, j["slots_busy"]))
            pairs += [("swemu_ina_job_drops_total", {"job": job, "reason": r}, v)
                      for r, v in j["drops"].items() if r != "ok"]
        for name, extra, want in pairs:
            got = get(series, name, switch=sw, **extra)
            if got != want:
                fail("%s{%s,%s} = %d, the JSON says %d" % (name, sw, extra, got, want))
            compared += 1
    print("prom_check: %d series, %d compared with the JSON" % (len(series), compared))


main()
