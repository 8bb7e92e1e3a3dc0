"""MeasuredInputs: a trace resolved once for the topology being simulated."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from embsim.engine.measured import MeasuredInputs, device_chip
from embsim.engine.trace_times import trace_layer_times
from embsim.errors import InputError
from embsim.topology import TopologySpec, load_topology
from embsim.trace import load_trace
from embsim.workload import load_model
from embsim.workload.compute import model_times
from embsim.workload.gpu_compute import for_gpu

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / "topologies" / "local-cpu.yaml"
TINY = ROOT / "traces" / "cpu-gloo-tiny-lm.yaml"


def test_on_its_own_topology_everything_measured_is_used():
    trace = load_trace(TINY)
    m = MeasuredInputs.resolve(trace, load_topology(f"{LOCAL}:1x2"))
    assert m.on_own_topology and m.has_layer_times
    assert m.collective_curves() and m.interference() is not None
    model = load_model("tiny-lm")
    kernel_times = lambda mm: model_times(mm, for_gpu(load_topology(f"{LOCAL}:1x2").node.gpu))
    fwd, bwd, _ = trace_layer_times(model, m.trace, kernel_times,
                                    lambda b, s: load_model("tiny-lm", batch=b, seq=s))
    assert set(fwd) == {l.name for l in load_model("tiny-lm").layers} and all(v > 0 for v in bwd.values())
    assert m.compute_source.startswith("measured: ")


def test_elsewhere_only_layer_times_transfer_and_only_to_the_same_chip():
    trace = dataclasses.replace(load_trace(TINY), topology="other-host.yaml")
    m = MeasuredInputs.resolve(trace, load_topology(f"{LOCAL}:1x2"))
    assert not m.on_own_topology and m.collective_curves() is None and m.interference() is None
    with pytest.raises(InputError, match="do not transfer"):
        MeasuredInputs.resolve(load_trace(TINY), load_topology("dgx-h100:1x2"))


def test_a_network_only_trace_has_no_layer_times_and_no_chip_to_check():
    trace = dataclasses.replace(load_trace(TINY), layers={}, optimizer=())
    m = MeasuredInputs.resolve(trace, load_topology("dgx-h100:1x2"))   # no device check
    assert not m.has_layer_times and m.optimizer_rates() is None


def test_chip_names_and_the_topology_name_match_as_written_by_calibrate():
    assert device_chip("NVIDIA H100 80GB HBM3") == device_chip("H100-SXM5-80GB") == "h100"
    assert TopologySpec.parse("local-cpu.yaml").name == TopologySpec.parse("local-cpu").name == "local-cpu"
    assert TopologySpec.parse("dgx-h100:2x8").n_gpus == 16
    assert str(TopologySpec.parse("16x8")) == "dgx-h100:16x8"
