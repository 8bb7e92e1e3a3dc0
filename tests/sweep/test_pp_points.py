"""--pipeline-parallel reaches scale's points and sweep files' configs."""

from __future__ import annotations

import pytest

from embsim.cli import main
from scale_capture import ScaleStopped, captured  # noqa: F401  (fixture)
from embsim.report.summary import workload_text
from embsim.sweep import read_results, run_sweep, sweep_from_text


def test_scale_points_carry_the_stages(captured):
    seen = captured
    with pytest.raises(ScaleStopped):
        # a model with transformer blocks: the points are checked as simulate checks them
        # before any runs, and tiny-lm (an LSTM) has none to split
        main(["scale", "--model", "gpt2", "--strategy", "allreduce", "--gpus", "8,16",
              "--pipeline-parallel", "2"])
    assert [p.simulation_config().pipeline_parallel for p in seen] == [2, 2]
    seen.clear()
    with pytest.raises(ScaleStopped):
        main(["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "8"])
    assert "pipeline_parallel" not in seen[0].config


def test_sweep_file_key_runs(tmp_path):
    spec = sweep_from_text("""
name: pp
base: {model: gpt2, topology: 'dgx-h100:1x8', batch: 2, seq: 256, iterations: 2, efficiency_baseline: false,
       accumulate: 4}
grid:
  pipeline_parallel: [1, 2]
""", "s.yaml")
    assert [p.simulation_config().pipeline_parallel for p in spec.points] == [1, 2]
    run_sweep(spec.points, str(tmp_path), processes=False, workers=1, progress=False)
    rows = read_results(str(tmp_path))
    assert all(rows[p.hash]["status"] == "ok" for p in spec.points)
    sources = [rows[p.hash]["result"]["compute_source"] for p in spec.points]
    assert "pipeline parallel" not in sources[0]
    assert "pipeline parallel 2 (1F1B, 4 micro-batches)" in sources[1]


def test_workload_line_says_pipeline():
    w = {"batch": 2, "seq": 8, "dtype": "bf16", "pipeline_parallel": 4}
    assert workload_text(w).startswith("batch 2 x seq 8 per GPU, pipeline parallel 4 (1F1B)")


def test_virtual_pipeline_reaches_scale_points_sweep_files_and_the_workload_line(captured):
    seen = captured
    with pytest.raises(ScaleStopped):
        main(["scale", "--model", "gpt2", "--strategy", "allreduce", "--gpus", "8,16",
              "--pipeline-parallel", "2", "--virtual-pipeline", "2", "--accumulate", "2",
              "--p2p-send-wait", "deferred"])
    assert [p.simulation_config().virtual_pipeline for p in seen] == [2, 2]
    assert [p.simulation_config().p2p_send_wait for p in seen] == ["deferred", "deferred"]
    seen.clear()
    with pytest.raises(ScaleStopped):
        main(["scale", "--model", "gpt2", "--strategy", "allreduce", "--gpus", "8",
              "--pipeline-parallel", "2", "--accumulate", "2"])
    assert "virtual_pipeline" not in seen[0].config and "p2p_send_wait" not in seen[0].config
    spec = sweep_from_text("""
name: vp
base: {model: gpt2, topology: 'dgx-h100:1x8', pipeline_parallel: 2}
grid:
  virtual_pipeline: [1, 2]
""", "s.yaml")
    assert [p.simulation_config().virtual_pipeline for p in spec.points] == [1, 2]
    w = {"batch": 2, "seq": 8, "dtype": "bf16", "pipeline_parallel": 4, "virtual_pipeline": 5}
    assert workload_text(w).startswith(
        "batch 2 x seq 8 per GPU, pipeline parallel 4 x 5 virtual (interleaved 1F1B)")


def test_p2p_overlap_reaches_scale_points_sweep_files_and_the_workload_line(captured):
    seen = captured
    with pytest.raises(ScaleStopped):
        main(["scale", "--model", "gpt2", "--strategy", "allreduce", "--gpus", "8,16",
              "--pipeline-parallel", "2", "--virtual-pipeline", "2", "--accumulate", "2",
              "--no-p2p-overlap"])
    assert [p.simulation_config().p2p_overlap for p in seen] == [False, False]
    seen.clear()
    with pytest.raises(ScaleStopped):
        main(["scale", "--model", "gpt2", "--strategy", "allreduce", "--gpus", "8",
              "--pipeline-parallel", "2", "--virtual-pipeline", "2", "--accumulate", "2"])
    # left out at its default: the point's hash is the one it had before the key existed
    assert "p2p_overlap" not in seen[0].config
    spec = sweep_from_text("""
name: vp
base: {model: gpt2, topology: 'dgx-h100:1x8', pipeline_parallel: 2, virtual_pipeline: 2}
grid:
  p2p_overlap: [true, false]
""", "s.yaml")
    assert [p.simulation_config().p2p_overlap for p in spec.points] == [True, False]
    w = {"batch": 2, "seq": 8, "dtype": "bf16", "pipeline_parallel": 4, "virtual_pipeline": 5,
         "p2p_overlap": False}
    assert "pipeline parallel 4 x 5 virtual (interleaved 1F1B, blocking p2p)" in workload_text(w)
