"""A trace is the starting point: its model, machine, batch and seq are the defaults."""

import json
from pathlib import Path

import pytest

from embsim.cli import main
from embsim.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
TRACES = sorted((ROOT / "traces").glob("*.yaml"))


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_every_shipped_trace_runs_alone(trace, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)                   # not found through the working directory
    assert main(["simulate", "--trace", str(trace), "--iterations", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    t = load_trace(trace)
    assert out["model"] == t.model and out["topology"]["gpus"] == t.provenance.world
    assert out["compute_source"].startswith("measured: ") and "extrapolated" not in out["compute_source"]


def test_beyond_the_measured_range_is_said(capsys):
    trace = ROOT / "traces" / "cpu-gloo-bert-base.yaml"
    assert main(["simulate", "--trace", str(trace), "--batch", "32", "--seq", "128",
                 "--iterations", "2", "--json"]) == 0
    source = json.loads(capsys.readouterr().out)["compute_source"]
    assert "extrapolated: batch 32 x seq 128 is beyond the measured batch 1-2 x seq 32" in source


def test_scaling_follows_the_kernel_model_not_a_line():
    """Beyond the range the measured time is multiplied by the kernel model's own ratio."""
    from embsim.engine.trace_times import trace_layer_times
    from embsim.topology import load_topology
    from embsim.workload import load_model
    from embsim.workload.compute import model_times
    from embsim.workload.gpu_compute import for_gpu
    trace = load_trace(ROOT / "traces" / "cpu-gloo-tiny-lm.yaml")
    kgpu = for_gpu(load_topology("local-cpu").node.gpu)

    def kernel(m):
        return model_times(m, kgpu)

    def at_shape(batch, seq):
        return load_model("tiny-lm", batch=batch, seq=seq)
    big = at_shape(64, trace.seq)
    fwd, _, note = trace_layer_times(big, trace, kernel, at_shape)
    layer = "decoder"
    measured = trace.interp(layer, 16)[0]
    ratio = kernel(big)[layer].fwd_s / kernel(at_shape(16, trace.seq))[layer].fwd_s
    assert fwd[layer] == pytest.approx(measured * ratio) and "extrapolated" in note
    assert ratio > 1.5                        # 4x the batch: the kernel model scales it
    inside, _, none = trace_layer_times(at_shape(12, trace.seq), trace, kernel, at_shape)
    assert none is None and inside[layer] == pytest.approx(trace.interp(layer, 12)[0])


def test_a_model_the_trace_did_not_measure_is_refused(capsys):
    trace = ROOT / "traces" / "cpu-gloo-bert-base.yaml"
    assert main(["simulate", "--trace", str(trace), "--model", "tiny-lm"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "measured bert-base, not tiny-lm" in err


def test_flags_still_override_the_trace(capsys):
    trace = ROOT / "traces" / "cpu-gloo-tiny-lm.yaml"
    assert main(["simulate", "--trace", str(trace), "--topology", "local-cpu:1x1",
                 "--iterations", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["topology"]["gpus"] == 1


def test_simulate_trace_runs_what_validate_trace_scores(capsys):
    """`simulate --trace T` alone unties the outputs the layers were timed with and slows one
    rank by the measured skew, as `validate --trace` does: it printed 35.5 ms against
    validate's 50.6 (measured 48.0) before (a stranger's probe, 2026-12-05)."""
    trace = str(TRACES[0].parent / "cpu-gloo-tiny-lm.yaml")
    assert main(["validate", "--trace", trace, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    scored = next(r for r in rows if r["strategy"] == "allreduce")
    assert main(["simulate", "--trace", trace, "--strategy", "allreduce", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["step_time_ms"] == pytest.approx(scored["simulated_ms"], rel=1e-9)
    assert "the trace's measured rank skew" in out["compute_source"]
    # a straggler of the run's own replaces the measured one
    assert main(["simulate", "--trace", trace, "--straggler", "gpu:0:1.0", "--json"]) == 0
    assert "measured rank skew" not in json.loads(capsys.readouterr().out)["compute_source"]
