"""A sweep or scale point with a trace runs as `simulate --trace` does (the trace's model
and machine by default, another model refused with simulate's message); resume does not
reuse a result whose files or embsim changed; a second sweep into another sweep's
--out is refused, not mixed in."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from embsim.cli import main
from embsim.engine.config import SimulationConfig
from embsim.engine.trace_defaults import apply_trace_defaults
from embsim.sweep import config_hash, sweep_from_text
from embsim.topology import TopologySpec
from scale_capture import ScaleStopped, captured  # noqa: F401  (fixture)

TRACE = Path(__file__).resolve().parents[2] / "traces" / "cpu-gloo-tiny-lm.yaml"
ZOO_TINY = Path(__file__).resolve().parents[2] / "embsim" / "workload" / "zoo" / "tiny-lm.yaml"
RUN = ["--threads", "--no-progress"]


def test_trace_point_takes_the_traces_model_and_machine_as_simulate_does():
    spec = sweep_from_text(f"base: {{iterations: 2, trace: {TRACE}}}\ngrid: {{strategy: [allreduce]}}\n")
    cfg = spec.points[0].simulation_config()
    simulate_cfg = apply_trace_defaults(SimulationConfig(trace=str(TRACE), iterations=2),
                                        {"trace", "iterations", "strategy"})
    assert cfg == simulate_cfg
    assert cfg.model == "tiny-lm" and "local-cpu" in cfg.topology     # not lstm-lm1b on 16x8


def test_trace_point_of_another_model_is_refused_with_simulates_message(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(f"base: {{model: lstm-lm1b, iterations: 2, trace: {TRACE}}}\n"
                    "grid: {strategy: [allreduce]}\n")
    assert main(["sweep", str(path), "--out", str(tmp_path / "o")] + RUN) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and "point 0" in err, err
    assert f"--model lstm-lm1b: the trace {TRACE} measured tiny-lm, not lstm-lm1b" in err
    assert not (tmp_path / "o").exists()
    # scale too, whatever --topology says
    assert main(["scale", "--model", "lstm-lm1b", "--strategy", "allreduce", "--trace", str(TRACE),
                 "--topology", "local-cpu", "--gpus", "1,2", "--iterations", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "measured tiny-lm, not lstm-lm1b" in err, err


def test_scale_with_a_trace_defaults_to_its_model_and_machine(captured):
    with pytest.raises(ScaleStopped):
        main(["scale", "--strategy", "allreduce", "--trace", str(TRACE), "--gpus", "1,2",
              "--iterations", "2"])
    assert [p.config["model"] for p in captured] == ["tiny-lm", "tiny-lm"]
    assert {TopologySpec.parse(p.config["topology"]).name for p in captured} == {"local-cpu"}


def test_scale_without_model_or_trace_is_one_line(capsys):
    assert main(["scale", "--strategy", "allreduce", "--gpus", "1,2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "embsim: error: scale: --model is required (or give --trace: its model)"


def test_hash_covers_the_bytes_of_the_files_a_point_names(tmp_path):
    trace, model = tmp_path / "t.yaml", tmp_path / "m.yaml"
    shutil.copy(TRACE, trace)
    shutil.copy(ZOO_TINY, model)
    for config, path in (({"trace": str(trace), "model": "tiny-lm", "topology": "local-cpu:1x2"}, trace),
                         ({"model": str(model), "topology": "dgx-h100:1x2"}, model)):
        before = config_hash(config)
        assert config_hash(json.loads(json.dumps(config))) == before        # deterministic
        path.write_text(path.read_text() + "# edited\n")
        assert config_hash(config) != before, path
    # a point that names no file keeps its hash (stored results of such sweeps still resume)
    assert config_hash({"model": "gpt2", "topology": "dgx-h100:1x8"}) == "3ea54af3eb2711f5"


def test_resume_runs_again_when_a_file_or_the_version_changed(tmp_path, capsys, monkeypatch):
    import embsim
    model = tmp_path / "m.yaml"
    shutil.copy(ZOO_TINY, model)
    path, out = tmp_path / "s.yaml", tmp_path / "o"
    path.write_text(f"name: files\nbase: {{model: {model}, iterations: 2, topology: dgx-h100:1x2}}\n"
                    "grid: {strategy: [allreduce]}\n")
    sweep = ["sweep", str(path), "--out", str(out)] + RUN
    assert main(sweep) == 0
    assert main(sweep) == 0
    assert "1 points, 1 already done, 0 run" in capsys.readouterr().out
    model.write_text(model.read_text().replace("vocab: 10000", "vocab: 20000"))
    assert main(sweep) == 0
    assert ("1 points, 0 already done, 1 run (1 again: a file read or embsim changed), "
            "0 failed") in capsys.readouterr().out
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and rows[0]["result"]["step_time_ms"] != rows[1]["result"]["step_time_ms"]
    monkeypatch.setattr(embsim, "__version__", "99.0")        # an upgrade: results are re-run
    assert main(sweep) == 0
    assert "0 already done, 1 run (1 again" in capsys.readouterr().out
    assert main(sweep) == 0
    assert "1 points, 1 already done, 0 run, 0 failed" in capsys.readouterr().out


def test_second_sweep_into_another_sweeps_folder_is_refused(tmp_path, capsys):
    out = tmp_path / "o"
    first, other = tmp_path / "first.yaml", tmp_path / "other.yaml"
    first.write_text("base: {model: tiny-lm, iterations: 2}\ngrid: {topology: [dgx-h100:1x2]}\n")
    other.write_text("name: other\nbase: {model: tiny-lm, iterations: 2}\n"
                     "grid: {topology: [dgx-h100:1x4]}\n")
    assert main(["sweep", str(first), "--out", str(out)] + RUN) == 0
    capsys.readouterr()
    kept = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main(["sweep", str(other), "--out", str(out)] + RUN) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"embsim: error: {out}: holds the results of sweep 'first', not 'other'; "
                   f"not touched (choose another --out)")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == kept            # nothing lost
    assert main(["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "1,2",
                 "--iterations", "2", "--out", str(out)]) == 2
    assert "holds the results of sweep 'first'" in capsys.readouterr().err
    # the first sweep itself resumes there
    assert main(["sweep", str(first), "--out", str(out)] + RUN) == 0
    assert "1 points, 1 already done, 0 run" in capsys.readouterr().out
