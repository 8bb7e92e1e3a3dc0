"""The real captures in traces/ load, say what they are, and point at a real topology."""

from pathlib import Path

import pytest

from embsim.topology.parse import load_node_type
from embsim.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
TRACES = sorted((ROOT / "traces").glob("*.yaml"))


def test_there_are_cpu_captures():
    models = {load_trace(p).model for p in TRACES if load_trace(p).device == "cpu"}
    assert "tiny-lm" in models and len(models) >= 2


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_shipped_trace(path):
    t = load_trace(path)
    assert t.provenance.label in ("CPU", "GPU") and t.provenance.command.startswith("embsim calibrate")
    assert len(t.batches) >= 2 and t.provenance.loadavg
    assert set(t.steps) == {"allreduce", "allgather", "embrace"}
    assert all(p.fwd_s > 0 for lt in t.layers.values() for p in lt.points)
    if t.device == "cpu":
        node = load_node_type(ROOT / "topologies" / t.topology)
        assert node.fabric.kind == "host" and node.gpu.count == t.provenance.world
