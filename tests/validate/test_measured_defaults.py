"""What validate and simulate take from measurements: fabric.interference, the trace's own
interference, its rank skew, and the untied model its steps ran."""

import dataclasses
from pathlib import Path

import pytest

from embsim.engine.run import SimulationConfig, resolved_interference, simulate
from embsim.errors import InputError
from embsim.topology import load_topology
from embsim.topology.parse import parse_node_type
from embsim.trace import InterferenceMeasurement, RankSkew, load_trace
from embsim.validate.steps import slowest_rank, step_errors

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / "topologies" / "local-cpu.yaml"
TINY = ROOT / "traces" / "cpu-gloo-tiny-lm.yaml"


def host_yaml(extra: str = "") -> str:
    return ("name: h\ngpu: {model: cpu, arch: 0, count: 2, bf16_tflops: 0.1, hbm_gb: 4, hbm_gbps: 10}\n"
            f"fabric: {{kind: host, host_gbps: 2, host_latency_us: 50{extra}}}\nnics: {{count: 0}}\n")


def test_fabric_interference_key_is_optional_and_checked():
    assert parse_node_type(host_yaml()).fabric.interference is None
    assert parse_node_type(host_yaml(", interference: 1.5")).fabric.interference == 1.5
    with pytest.raises(InputError, match="interference"):
        parse_node_type(host_yaml(", interference: -1"))


def test_interference_precedence():
    topo = load_topology(f"{LOCAL}:1x2")
    trace = load_trace(TINY)
    assert trace.interference is not None and topo.node.fabric.interference is not None
    cfg = SimulationConfig()
    assert resolved_interference(cfg, trace, topo) == pytest.approx(trace.interference.factor)
    assert resolved_interference(cfg, None, topo) == topo.node.fabric.interference
    assert resolved_interference(dataclasses.replace(cfg, interference=0.25), trace, topo) == 0.25
    other = dataclasses.replace(trace, topology="pcie-rtx3090.yaml")   # not this machine's trace
    assert resolved_interference(cfg, other, topo) == topo.node.fabric.interference
    bare = dataclasses.replace(topo.node.fabric, interference=None)
    topo.node = dataclasses.replace(topo.node, fabric=bare)
    assert resolved_interference(cfg, None, topo) == 0.0


def test_interference_slows_an_overlapped_step():
    base = dict(topology=f"{LOCAL}:1x2", model="tiny-lm", batch=16, seq=32, strategy="allreduce",
                trace=str(TINY), untie_outputs=True, efficiency_baseline=False)
    none = simulate(SimulationConfig(**base, interference=0.0)).step_time
    some = simulate(SimulationConfig(**base, interference=5.0)).step_time
    assert some > none


def test_rank_skew_becomes_one_slow_rank():
    trace = load_trace(TINY)
    assert slowest_rank(trace, 1) is None
    skewed = dataclasses.replace(trace, rank_skew=RankSkew(16, 0.02, 0.025, 5))
    assert slowest_rank(skewed, 2) == "gpu:1:1.25"
    assert slowest_rank(dataclasses.replace(trace, rank_skew=None), 2) is None


def test_shipped_steps_are_simulated_untied():
    trace = load_trace(TINY)
    assert all(s.untied_outputs for s in trace.steps.values())
    rows = {e.strategy: e for e in step_errors(TINY)}
    # untied, the table's gradient is sparse: the strategies no longer simulate alike
    assert len({round(e.simulated_s, 9) for e in rows.values()}) == 3
    assert all(e.problem is None for e in rows.values())
