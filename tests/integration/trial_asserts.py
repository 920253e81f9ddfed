# SPDX-License-Identifier: BSD-3-Clause
"""What the integration tests that run a trial assert of its results.json."""


def every_algorithm_exact(res, size, aggregating=("tor0", "tor1")):
    """Every algorithm of the trial ended with rc 0 and no wrong element at
    size; ps-ina and agent-ring were credited with INA and every ToR in
    `aggregating` accepted their contributions."""
    for a in ("ring", "hier", "ps", "ps-ina", "agent-ring"):
        r = res["results"][a][size]
        assert r.get("rc") == 0 and r.get("wrong") == 0, "%s: %s" % (a, r.get("error"))
        if a in ("ps-ina", "agent-ring"):
            assert r["ina_check"]["credited"], (a, r["ina_check"])
            acc = {k.split()[0]: v for k, v in r["ina"].items() if k.endswith(" accepted")}
            assert all(acc.get(t, 0) > 0 for t in aggregating), (a, r["ina"])
