"""Calibrate's measured kernel table drives the kernel model on the device it measured."""

import pytest
import yaml

from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.trace import load_trace
from embsim.trace.compute import ComputeMeasurement, GemmPoint, LstmStep
from embsim.trace.io import dump_trace
from embsim.workload.gemm_table import GemmTable


def points(rate_of):
    return [GemmPoint("fp32", m, n, k, 2.0 * m * n * k / rate_of(m, n, k))
            for m in (16, 256) for n in (256, 1024) for k in (256, 1024)]


def test_table_reproduces_measured_points_and_interpolates_in_log_space():
    t = GemmTable.from_points(points(lambda m, n, k: 1e9 * m))      # rate grows with m
    assert t.rate("fp32", 16, 256, 256) == pytest.approx(16e9)
    assert t.rate("fp32", 256, 1024, 1024) == pytest.approx(256e9)
    assert t.rate("fp32", 64, 256, 256) == pytest.approx(64e9)       # geometric midpoint
    assert t.rate("fp32", 4096, 256, 256) == pytest.approx(256e9)    # clamped at the edge
    assert t.rate("bf16", 16, 256, 256) == pytest.approx(16e9)       # unmeasured dtype: fp32's
    assert t.rate("fp32", 8, 256, 256, batch=2) == pytest.approx(16e9)


MEASURED = ComputeMeasurement(gemm=tuple(points(lambda m, n, k: 2e9)), stream_gbps=5.0,
                              gather_gbps=2.0, launch_s=10e-6, lstm=LstmStep(32, 256, 1.0, 2.0, 8))


@pytest.fixture
def trace_with_compute(tmp_path):
    from dataclasses import replace
    base = load_trace("traces/cpu-gloo-tiny-lm.yaml")
    path = tmp_path / "t.yaml"
    path.write_text(dump_trace(replace(base, compute=MEASURED)))
    return path


def test_trace_round_trip_keeps_the_compute_table(trace_with_compute):
    t = load_trace(trace_with_compute)
    assert t.compute.stream_gbps == 5.0 and t.compute.lstm.hidden == 256
    assert [g.m for g in t.compute.gemm] == [g.m for g in MEASURED.gemm]


def test_bad_compute_section_is_one_line(trace_with_compute, tmp_path):
    data = yaml.safe_load(trace_with_compute.read_text())
    data["compute"]["gemm"][0]["dtype"] = "int4"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match=r"compute.gemm.0.dtype"):
        load_trace(bad)


def test_other_model_on_the_traced_device_uses_the_measured_table(trace_with_compute):
    t = load_trace(trace_with_compute)
    cfg = SimulationConfig(topology="local-cpu:1x2",
                           model="bert-base", batch=2, seq=16, trace=str(trace_with_compute),
                           iterations=2, efficiency_baseline=False)
    r = simulate(cfg)
    assert "kernel model" in r.compute_source and "measured: " in r.compute_source
    # twice the GEMM rate: the GEMM-bound model gets faster
    from dataclasses import replace
    fast = replace(MEASURED, gemm=tuple(points(lambda m, n, k: 4e9)))
    path2 = trace_with_compute.with_name("t2.yaml")
    path2.write_text(dump_trace(replace(t, compute=fast)))
    r2 = simulate(replace(cfg, trace=str(path2)))
    assert r2.compute < 0.8 * r.compute


def test_the_traced_model_keeps_its_measured_layers(trace_with_compute):
    t = load_trace(trace_with_compute)
    r = simulate(SimulationConfig(topology="local-cpu:1x2", model="tiny-lm", batch=t.batches[-1],
                                  seq=t.seq, trace=str(trace_with_compute), iterations=2,
                                  efficiency_baseline=False))
    assert r.compute_source.startswith("measured: ")


def test_measured_lstm_step_sets_the_recurrent_overhead():
    from embsim.topology import load_topology
    from embsim.workload.gpu_compute import from_measurement
    gpu = load_topology("local-cpu").node.gpu
    slow = from_measurement(gpu, MEASURED, "t.yaml")
    from dataclasses import replace
    fast = from_measurement(gpu, replace(MEASURED, lstm=LstmStep(32, 256, 1e-6, 1e-6, 8)), "t.yaml")
    assert slow.recurrent_step_s > 2.0      # 3 s per step measured, far above GEMM + gates
    assert fast.recurrent_step_s == 0.0
    assert "LSTM step" not in slow.label and "measured: t.yaml" in slow.label
