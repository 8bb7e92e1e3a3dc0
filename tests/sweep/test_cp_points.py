"""--context-parallel reaches scale's points and sweep files' configs."""

from __future__ import annotations

import pytest

from embsim.cli import main
from scale_capture import ScaleStopped, captured  # noqa: F401  (fixture)
from embsim.sweep import read_results, run_sweep, sweep_from_text


def test_scale_points_carry_the_context_parallel_size(captured):
    seen = captured
    with pytest.raises(ScaleStopped):
        # a model with transformer blocks: the points are checked as simulate checks them
        # before any runs, and tiny-lm (an LSTM) has none to split
        main(["scale", "--model", "gpt2", "--strategy", "allreduce", "--gpus", "8,16",
              "--context-parallel", "2"])
    assert [p.simulation_config().context_parallel for p in seen] == [2, 2]
    seen.clear()
    with pytest.raises(ScaleStopped):
        main(["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "8"])
    assert "context_parallel" not in seen[0].config


def test_sweep_file_key_runs(tmp_path):
    spec = sweep_from_text("""
name: cp
base: {model: llama2-7b, topology: 'dgx-h100:1x8', batch: 1, seq: 2048, dtype: bf16, iterations: 2,
       efficiency_baseline: false, accumulate: 1, strategy: distopt}
grid:
  context_parallel: [1, 2]
""", "s.yaml")
    assert [p.simulation_config().context_parallel for p in spec.points] == [1, 2]
    run_sweep(spec.points, str(tmp_path), processes=False, workers=1, progress=False)
    rows = read_results(str(tmp_path))
    assert all(rows[p.hash]["status"] == "ok" for p in spec.points)
    sources = [rows[p.hash]["result"]["compute_source"] for p in spec.points]
    assert "context parallel" not in sources[0] and "context parallel 2 (TE p2p ring" in sources[1]
