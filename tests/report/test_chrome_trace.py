"""Chrome traces: one lane per overlapping transfer of a channel, so slices nest."""

from collections import defaultdict

from embsim.engine.run import SimulationConfig, simulate
from embsim.report.chrome_trace import chrome_trace


def _improper(doc) -> int:
    """Slices that start inside another slice of their thread and end after it."""
    spans = defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            spans[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    bad = 0
    for v in spans.values():
        v.sort()
        for (a, b), (c, d) in zip(v, v[1:]):
            bad += c < b - 1e-6 and d > b + 1e-6
    return bad


def test_parameter_server_transfers_beside_the_stream_get_lanes():
    r = simulate(SimulationConfig(topology="2x8", model="lstm-lm1b", strategy="ps", scheduler="embrace-2d",
                                  iterations=3, efficiency_baseline=False))
    doc = chrome_trace(r.run, 16, 8)
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "comm: nccl (2)" in names          # pushes and pulls overlap the collectives here
    assert _improper(doc) == 0
    # every transfer is drawn once per GPU
    assert sum(e["ph"] == "X" and e["tid"] > 0 for e in doc["traceEvents"]) == 16 * len(r.run.comm)
