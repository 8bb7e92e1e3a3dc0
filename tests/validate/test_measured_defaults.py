"""What validate and simulate take from measurements: fabric.interference, the trace's own
interference, its rank skew, and the untied model its steps ran."""

import dataclasses
from pathlib import Path

import pytest

from embsim.engine.measured import MeasuredInputs
from embsim.engine.interference import resolved
from embsim.engine.run import SimulationConfig, simulate


def resolved_interference(cfg, measured, topo) -> dict:
    return resolved(cfg, measured, topo)[0]
from embsim.errors import InputError
from embsim.topology import load_topology
from embsim.topology.parse import parse_node_type
from embsim.trace import RankSkew, load_trace
from embsim.validate.steps import step_errors

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / "topologies" / "local-cpu.yaml"
TINY = ROOT / "traces" / "cpu-gloo-tiny-lm.yaml"


def host_yaml(extra: str = "") -> str:
    return ("name: h\ngpu: {model: cpu, arch: 0, count: 2, bf16_tflops: 0.1, hbm_gb: 4, hbm_gbps: 10}\n"
            f"fabric: {{kind: host, host_gbps: 2, host_latency_us: 50{extra}}}\nnics: {{count: 0}}\n")


def test_fabric_interference_keys_are_optional_and_checked():
    assert parse_node_type(host_yaml()).fabric.interference is None
    assert parse_node_type(host_yaml()).fabric.comm_interference is None
    both = parse_node_type(host_yaml(", interference: 1.5, comm_interference: 0.5")).fabric
    assert (both.interference, both.comm_interference) == (1.5, 0.5)
    for key in ("interference", "comm_interference"):
        with pytest.raises(InputError, match=key):
            parse_node_type(host_yaml(f", {key}: -1"))


def test_interference_precedence():
    topo = load_topology(f"{LOCAL}:1x2")
    trace = load_trace(TINY)
    f = trace.interference
    assert f is not None and topo.node.fabric.interference is not None
    cfg = SimulationConfig()
    fabric = {"interference": topo.node.fabric.interference,
              "comm_interference": topo.node.fabric.comm_interference}
    assert resolved_interference(cfg, MeasuredInputs.resolve(trace, topo), topo) == pytest.approx(
        {"interference": f.compute_factor, "comm_interference": f.comm_factor})
    assert resolved_interference(cfg, None, topo) == fabric
    given = dataclasses.replace(cfg, interference=0.25, comm_interference=0.5)
    assert resolved_interference(given, MeasuredInputs.resolve(trace, topo), topo) == {"interference": 0.25, "comm_interference": 0.5}
    other = dataclasses.replace(trace, topology="pcie-rtx3090.yaml")   # not this machine's trace
    assert resolved_interference(cfg, MeasuredInputs.resolve(other, topo), topo) == fabric
    bare = dataclasses.replace(topo.node.fabric, interference=None, comm_interference=None)
    topo.node = dataclasses.replace(topo.node, fabric=bare)
    assert resolved_interference(cfg, None, topo) == {"interference": 0.0, "comm_interference": 0.0}


def test_two_sided_interference_reproduces_the_measurement():
    """Replaying the calibration experiment (a layer and an all_reduce started together)
    with the derived factors gives back the measured overlapped durations."""
    f = load_trace(TINY).interference
    a, b = 1 / (1 + f.compute_factor), 1 / (1 + f.comm_factor)
    t_c = f.comm_s / b                       # the collective, slowed while compute runs
    assert t_c == pytest.approx(f.comm_overlapped_s, rel=1e-9)
    both = t_c + (f.alone_s - a * t_c)       # compute slowed until the collective ends
    assert both == pytest.approx(f.both_s, rel=1e-9)


def test_interference_slows_an_overlapped_step():
    base = dict(topology=f"{LOCAL}:1x2", model="tiny-lm", batch=16, seq=32, strategy="allreduce",
                trace=str(TINY), untie_outputs=True, efficiency_baseline=False)
    none = simulate(SimulationConfig(**base, interference=0.0)).step_time
    some = simulate(SimulationConfig(**base, interference=5.0)).step_time
    assert some > none


def test_rank_skew_becomes_one_slow_rank():
    trace = load_trace(TINY)
    assert MeasuredInputs(trace, True).slowest_rank(1) is None
    skewed = dataclasses.replace(trace, rank_skew=RankSkew(16, 0.02, 0.025, 5))
    assert MeasuredInputs(skewed, True).slowest_rank(2) == "gpu:1:1.25"
    assert MeasuredInputs(dataclasses.replace(trace, rank_skew=None), True).slowest_rank(2) is None


def test_shipped_steps_are_simulated_untied():
    trace = load_trace(TINY)
    assert all(s.untied_outputs for s in trace.steps.values())
    rows = {e.strategy: e for e in step_errors(TINY)}
    # untied, the table's gradient is sparse: the strategies no longer simulate alike
    assert len({round(e.simulated_s, 9) for e in rows.values()}) == 3
    assert all(e.problem is None for e in rows.values())
