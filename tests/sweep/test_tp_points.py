"""--tensor-parallel / --sequence-parallel reach scale's points and sweep files' configs."""

from __future__ import annotations

import pytest

from embsim.cli import main
from scale_capture import ScaleStopped, captured  # noqa: F401  (fixture)
from embsim.report.summary import workload_text
from embsim.sweep import run_sweep, read_results, sweep_from_text


def test_scale_points_carry_the_split(captured):
    seen = captured
    with pytest.raises(ScaleStopped):
        # a model with transformer blocks: the points are checked as simulate checks them
        # before any runs, and tiny-lm (an LSTM) has none to split
        main(["scale", "--model", "gpt2", "--strategy", "allreduce", "--gpus", "8,16",
              "--tensor-parallel", "4", "--no-sequence-parallel"])
    assert [(p.simulation_config().tensor_parallel, p.simulation_config().sequence_parallel)
            for p in seen] == [(4, False), (4, False)]
    seen.clear()
    with pytest.raises(ScaleStopped):
        main(["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "8"])
    assert "tensor_parallel" not in seen[0].config


def test_sweep_file_key_runs(tmp_path):
    spec = sweep_from_text("""
name: tp
base: {model: gpt2, topology: 'dgx-h100:1x8', batch: 2, seq: 256, iterations: 2, efficiency_baseline: false}
grid:
  tensor_parallel: [1, 2]
""", "s.yaml")
    assert [p.simulation_config().tensor_parallel for p in spec.points] == [1, 2]
    run_sweep(spec.points, str(tmp_path), processes=False, workers=1, progress=False)
    rows = read_results(str(tmp_path))
    assert all(rows[p.hash]["status"] == "ok" for p in spec.points)
    sources = [rows[p.hash]["result"]["compute_source"] for p in spec.points]
    assert "tensor parallel" not in sources[0] and "tensor parallel 2 (sequence parallel)" in sources[1]


def test_workload_line_says_per_tp_group():
    w = {"batch": 2, "seq": 8, "dtype": "bf16", "tensor_parallel": 4, "sequence_parallel": False}
    assert workload_text(w).startswith("batch 2 x seq 8 per tensor-parallel group of 4 GPUs (tensor parallel 4)")
    assert workload_text({"batch": 2, "seq": 8, "dtype": "bf16"}).startswith("batch 2 x seq 8 per GPU")
