"""The published compute/communication interference default (arXiv 2507.03114's mean) on
GPU devices, its label, and what overrides it."""

import dataclasses
from pathlib import Path

import pytest

from embsim.engine import interference
from embsim.engine.measured import MeasuredInputs
from embsim.engine.run import SimulationConfig, simulate
from embsim.topology import load_topology
from embsim.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / "topologies" / "local-cpu.yaml"
TINY = ROOT / "traces" / "cpu-gloo-tiny-lm.yaml"
PUBLISHED = {"interference": interference.PUBLISHED_INTERFERENCE, "comm_interference": 0.0}


def bare(topo, arch: int):
    """`topo` with no fabric interference keys and a device of compute capability `arch`."""
    node = topo.node
    topo.node = dataclasses.replace(
        node, gpu=dataclasses.replace(node.gpu, arch=arch),
        fabric=dataclasses.replace(node.fabric, interference=None, comm_interference=None))
    return topo


def test_default_on_gpus_only():
    cfg = SimulationConfig()
    gpu = load_topology("2x8")
    assert gpu.node.gpu.arch > 0 and gpu.node.fabric.interference is None
    assert interference.resolved(cfg, None, gpu) == (PUBLISHED, True)
    cpu = bare(load_topology(f"{LOCAL}:1x2"), 0)
    assert interference.resolved(cfg, None, cpu) == ({"interference": 0.0, "comm_interference": 0.0}, False)


def test_flag_trace_and_topology_override_the_default():
    cfg = SimulationConfig()
    off = dataclasses.replace(cfg, interference=0.0)
    gpu = load_topology("2x8")
    assert interference.resolved(off, None, gpu) == ({"interference": 0.0, "comm_interference": 0.0}, False)
    # the trace's own measurement, on its topology made a GPU one with no fabric keys
    topo = bare(load_topology(f"{LOCAL}:1x2"), 80)
    trace = load_trace(TINY)
    assert interference.resolved(cfg, None, topo) == (PUBLISHED, True)
    factors, published = interference.resolved(cfg, MeasuredInputs.resolve(trace, topo), topo)
    assert not published and factors == pytest.approx(
        {"interference": trace.interference.compute_factor, "comm_interference": trace.interference.comm_factor})
    # a topology's fabric.interference
    fabric = dataclasses.replace(topo.node.fabric, interference=0.05)
    topo.node = dataclasses.replace(topo.node, fabric=fabric)
    assert interference.resolved(cfg, None, topo) == ({"interference": 0.05, "comm_interference": 0.0}, False)


def test_default_slows_the_step_and_says_so():
    kw = dict(topology="2x8", model="bert-base", efficiency_baseline=False)
    on, off = simulate(SimulationConfig(**kw)), simulate(SimulationConfig(**kw, interference=0.0))
    assert on.step_time > off.step_time
    assert "compute slowed 18.9 % while collectives run (arXiv 2507.03114 mean)" in on.compute_source
    assert "2507.03114" not in off.compute_source
    given = simulate(SimulationConfig(**kw, interference=interference.PUBLISHED_INTERFERENCE))
    assert given.step_time == on.step_time and "2507.03114" not in given.compute_source
    cpu = simulate(SimulationConfig(topology=f"{LOCAL}:1x2", model="tiny-lm", batch=16, seq=32,
                                    efficiency_baseline=False))
    assert "2507.03114" not in cpu.compute_source
