"""`embsim compare`: the matrix, its ranking, JSON and plot."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from embsim.commands.compare import command
from embsim.compare import compare
from embsim.engine.run import SimulationConfig
from embsim.errors import InputError

FIELDS = {"strategy", "scheduler", "step_time_ms", "speedup", "exposed_comm_ms",
          "comm_bytes_per_gpu", "memory_per_gpu_bytes", "fits_in_memory"}


def test_matrix_ranked_with_baseline_and_refusals():
    cfg = SimulationConfig(topology="1x4", model="lstm-lm1b", batch=8, iterations=3)
    res = compare(cfg, ["allreduce", "embrace", "s2reducer"], ["fifo", "embrace-2d"], workers=2)
    ran = [r for r in res.rows if r.refused is None]
    refused = {r.label for r in res.rows if r.refused is not None}
    assert refused == {"allreduce/embrace-2d", "s2reducer/embrace-2d"}
    assert [r.step_time for r in ran] == sorted(r.step_time for r in ran)
    base = next(r for r in ran if r.label == "allreduce/fifo")
    assert base.speedup == pytest.approx(1.0)
    for r in ran:
        assert r.speedup == pytest.approx(base.step_time / r.step_time)
    assert res.rows[-1].refused is not None        # refused listed last


def test_baseline_added_when_not_asked_for():
    cfg = SimulationConfig(topology="1x4", model="tiny-lm", iterations=3)
    res = compare(cfg, ["embrace"], ["priority"], workers=1)
    assert {r.label for r in res.rows} == {"allreduce/fifo", "embrace/priority"}


def test_cli_json_and_plot(tmp_path):
    png = tmp_path / "m.png"
    out = CliRunner().invoke(command, ["--topology", "1x4", "--model", "tiny-lm", "--iterations", "3",
                                       "--strategies", "allreduce,allgather", "--schedulers", "fifo,priority",
                                       "--json", "--plot", str(png)])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)          # "wrote m.png" goes to stderr under --json
    assert f"wrote {png}" in out.stderr
    assert doc["baseline"] == "allreduce/fifo"
    assert len(doc["rows"]) == 4
    assert all(FIELDS <= set(r) for r in doc["rows"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_table_and_bad_names():
    out = CliRunner().invoke(command, ["--topology", "1x4", "--model", "tiny-lm", "--iterations", "3",
                                       "--strategies", "allreduce,s2reducer", "--schedulers", "fifo,embrace-2d"])
    assert out.exit_code == 0, out.output
    assert "refused: s2reducer/embrace-2d" in out.output
    bad = CliRunner().invoke(command, ["--topology", "1x4", "--strategies", "nope"])
    assert bad.exit_code != 0
    assert isinstance(bad.exception, InputError) and "--strategies" in str(bad.exception)
